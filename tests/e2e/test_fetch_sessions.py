"""Incremental fetch sessions (KIP-227): kafka-python 3.x uses them; librdkafka and kafkajs send
sessionless fetches and must keep working on the same topic."""
import time

from clients import cfk_consume, cfk_create_topic, cfk_produce, kjs_consume
from conftest import unique


def _messages(start, n, partitions):
    return [{"key": f"k{i}".encode(), "value": f"value-{i}".encode() * 3, "partition": i % partitions}
            for i in range(start, start + n)]


def _poll_until(consumer, out, count, timeout=60):
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        for recs in consumer.poll(timeout_ms=200).values():
            for r in recs:
                out.append((r.partition, r.offset, r.key, r.value))
    assert len(out) >= count, f"got {len(out)} of {count} messages"


def test_kafka_python_consumes_everything_through_an_incremental_fetch_session(broker):
    from kafka import KafkaConsumer, TopicPartition as KTP

    topic = unique("sessions")
    partitions = 4
    cfk_create_topic(broker.bootstrap, topic, partitions=partitions)
    first = _messages(0, 200, partitions)
    cfk_produce(broker.bootstrap, topic, first)

    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                      auto_offset_reset="earliest", consumer_timeout_ms=60_000)
    try:
        tps = [KTP(topic, p) for p in range(partitions)]
        c.assign(tps)
        for tp in tps:
            c.seek(tp, 0)
        got = []
        _poll_until(c, got, 200)
        # More data while the consumer sits in its session: incremental fetches must carry it.
        second = _messages(200, 200, partitions)
        cfk_produce(broker.bootstrap, topic, second)
        _poll_until(c, got, 400)

        # The consumer really used an incremental session: the broker gave it a session id and
        # it advanced the epoch past the first incremental fetch.
        handlers = c._fetcher._session_handlers
        assert handlers, "kafka-python built no fetch session handler"
        metas = [h.next_metadata for h in handlers.values()]
        assert any(m.session_id != 0 and m.epoch > 1 for m in metas), metas
    finally:
        c.close()

    # Every record exactly once, in offset order per partition, with its value.
    assert len(got) == 400, len(got)
    expected = {}
    for i, m in enumerate(first + second):
        expected.setdefault(m["partition"], []).append((m["key"], m["value"]))
    for p in range(partitions):
        mine = sorted((o, k, v) for (pp, o, k, v) in got if pp == p)
        assert [o for o, _, _ in mine] == list(range(len(expected[p]))), f"partition {p} offsets"
        assert [(k, v) for _, k, v in mine] == expected[p], f"partition {p} data"

    # Sessionless clients on the same topic.
    assert len(cfk_consume(broker.bootstrap, topic, 400, partitions=list(range(partitions)))) == 400
    assert len(kjs_consume(broker.bootstrap, topic, 400, group=unique("kjs"))) == 400
