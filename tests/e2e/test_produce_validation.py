"""Record validation on produce (Kafka's LogValidator rules, in josef_records::validate), as real
clients observe it: the refused send fails with Kafka's error, nothing of it is stored, and the
next valid send goes on from the same offset."""
import time

import pytest
from confluent_kafka import KafkaError, Producer

from clients import cfk_consume, cfk_create_topic


def cfk_send_one(bootstrap, topic, key, value, timestamp=None):
    """Sends one record with librdkafka (one request); returns (error or None, offset or None)."""
    got = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "message.timeout.ms": 20000})

    def cb(err, msg):
        got.append((err, None if err else msg.offset()))

    kw = dict(key=key, value=value, on_delivery=cb)
    if timestamp is not None:
        kw["timestamp"] = timestamp
    p.produce(topic, **kw)
    assert p.flush(30) == 0
    return got[0]


def kp_send_one(bootstrap, topic, key, value, timestamp_ms=None):
    """Sends one record with kafka-python; returns the exception class name or the offset."""
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=0)
    try:
        meta = p.send(topic, key=key, value=value, timestamp_ms=timestamp_ms).get(timeout=30)
        return meta.offset
    except Exception as e:  # noqa: BLE001 - the test compares the error type
        return type(e).__name__
    finally:
        p.close(timeout=10)


def now_ms():
    return int(time.time() * 1000)


def test_a_record_without_key_on_a_compacted_topic_is_refused_as_invalid_record(broker):
    cfk_create_topic(broker.bootstrap, "compacted", config={"cleanup.policy": "compact"})
    err, _ = cfk_send_one(broker.bootstrap, "compacted", None, b"no key")
    assert err is not None and err.code() == KafkaError.INVALID_RECORD, err
    assert kp_send_one(broker.bootstrap, "compacted", None, b"no key either") == "InvalidRecordError"
    # A keyed record (and a keyed tombstone) is accepted, at offset 0: nothing refused was stored.
    err, offset = cfk_send_one(broker.bootstrap, "compacted", b"k", b"v")
    assert (err, offset) == (None, 0)
    assert kp_send_one(broker.bootstrap, "compacted", b"k", None) == 1
    got = cfk_consume(broker.bootstrap, "compacted", 2)
    assert [(m["offset"], m["key"], m["value"]) for m in got] == [(0, b"k", b"v"), (1, b"k", None)]


@pytest.mark.parametrize("delta_ms", [3_600_000, -7_200_000], ids=["future", "past"])
def test_timestamps_outside_the_topic_bounds_are_refused_as_invalid_timestamp(broker, delta_ms):
    cfk_create_topic(
        broker.bootstrap,
        "bounded",
        config={"message.timestamp.after.max.ms": "60000", "message.timestamp.before.max.ms": "3600000"},
    )
    err, _ = cfk_send_one(broker.bootstrap, "bounded", b"k", b"v", timestamp=now_ms() + delta_ms)
    assert err is not None and err.code() == KafkaError.INVALID_TIMESTAMP, err
    assert kp_send_one(broker.bootstrap, "bounded", b"k", b"v", timestamp_ms=now_ms() + delta_ms) == \
        "InvalidTimestampError"
    # In bounds: accepted at offset 0, with the producer's timestamp kept (CreateTime).
    ts = now_ms() - 1000
    err, offset = cfk_send_one(broker.bootstrap, "bounded", b"k", b"ok", timestamp=ts)
    assert (err, offset) == (None, 0)
    got = cfk_consume(broker.bootstrap, "bounded", 1)
    assert got[0]["value"] == b"ok" and got[0]["timestamp"] == ts


@pytest.mark.parametrize("api_version", [(0, 9), (0, 10, 1)], ids=["produce-v1-magic0", "produce-v2-magic1"])
def test_an_old_producer_writing_legacy_message_sets_is_read_back_by_a_current_consumer(broker, api_version):
    """kafka-python pinned to an old broker version sends Produce v1/v2 with magic 0/1 message sets;
    the broker up-converts them to v2 batches that librdkafka reads back."""
    from kafka import KafkaProducer

    cfk_create_topic(broker.bootstrap, "legacy")
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=api_version, acks="all",
                      compression_type="gzip")
    metas = [p.send("legacy", key=b"k%d" % i, value=b"v%d" % i, partition=0).get(timeout=30) for i in range(3)]
    p.close(timeout=10)
    assert [m.offset for m in metas] == [0, 1, 2]
    got = cfk_consume(broker.bootstrap, "legacy", 3)
    assert [(m["offset"], m["key"], m["value"]) for m in got] == [(i, b"k%d" % i, b"v%d" % i) for i in range(3)]
