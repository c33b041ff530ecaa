"""kill -9 of the broker mid-load, restart: every acknowledged record is readable at its offset."""
import threading
import time

import pytest
from confluent_kafka import Producer

from clients import cfk_consume, cfk_create_topic
from conftest import unique, wait_until

# Both tests restart the broker on its data dir.
pytestmark = pytest.mark.durability


def test_kill9_mid_load_loses_no_acknowledged_record(broker):
    topic = unique("crash")
    cfk_create_topic(broker.bootstrap, topic, partitions=2)
    acked = {}  # (partition, offset) -> value
    lock = threading.Lock()
    stop = threading.Event()

    def on_delivery(err, msg):
        if err is None:
            with lock:
                acked[(msg.partition(), msg.offset())] = msg.value()

    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 2,
                  "message.timeout.ms": 5000, "retries": 0})

    def load():
        i = 0
        while not stop.is_set():
            try:
                p.produce(topic, value=f"value-{i}".encode(), key=str(i % 7).encode(), on_delivery=on_delivery)
                i += 1
            except BufferError:
                pass
            p.poll(0)

    t = threading.Thread(target=load, daemon=True)
    t.start()
    wait_until(lambda: len(acked) >= 3000, timeout=60, what="3000 acknowledged records")
    broker.kill9()
    stop.set()
    t.join(10)
    p.flush(10)  # in-flight sends fail against the dead broker; their callbacks say so

    broker.start()  # same data dir, same port: recovery runs
    with lock:
        snapshot = dict(acked)
    for part in (0, 1):
        want = {off: v for (pp, off), v in snapshot.items() if pp == part}
        if not want:
            continue
        top = max(want)
        got = cfk_consume(broker.bootstrap, topic, top + 1, partitions=[part])
        by_offset = {m["offset"]: m["value"] for m in got}
        missing = [o for o in want if by_offset.get(o) != want[o]]
        assert not missing, f"partition {part}: {len(missing)} acknowledged records lost or changed, e.g. {missing[:5]}"


def test_sigterm_is_a_clean_shutdown_and_data_survives(broker):
    topic = unique("clean")
    cfk_create_topic(broker.bootstrap, topic)
    from clients import cfk_produce

    msgs = [{"value": f"v{i}".encode(), "partition": 0} for i in range(100)]
    cfk_produce(broker.bootstrap, topic, msgs, {"acks": "all"})
    code = broker.stop()
    assert code == 0, f"broker exited {code} on SIGTERM"
    broker.start()
    got = cfk_consume(broker.bootstrap, topic, 100)
    assert [m["value"] for m in got] == [m["value"] for m in msgs]
