"""Consumer groups with real clients: balanced assignment, takeover on leave, offsets across restarts."""
import threading
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from clients import cfk_create_topic, cfk_produce
from conftest import unique, wait_until


class Member:
    """A confluent-kafka group member polled by its own thread."""

    def __init__(self, bootstrap, group, topic, strategy):
        self.c = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "partition.assignment.strategy": strategy, "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500, "enable.auto.commit": False,
        })
        self.c.subscribe([topic])
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.assigned = set()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop.is_set():
            self.c.poll(0.1)
            with self.lock:
                self.assigned = {(tp.topic, tp.partition) for tp in self.c.assignment()}

    def partitions(self):
        with self.lock:
            return set(self.assigned)

    def close(self):
        self.stop.set()
        self.t.join(10)
        self.c.close()


def balanced(members, total, per_member):
    parts = [m.partitions() for m in members]
    union = set().union(*parts)
    return len(union) == total and sum(len(p) for p in parts) == total and all(len(p) == per_member for p in parts)


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_three_members_share_six_partitions_and_take_over_on_leave(broker, strategy):
    topic = unique(f"grp-{strategy}")
    cfk_create_topic(broker.bootstrap, topic, partitions=6)
    group = unique("g")
    members = [Member(broker.bootstrap, group, topic, strategy) for _ in range(3)]
    try:
        wait_until(lambda: balanced(members, 6, 2), timeout=90, what="each of 3 members owning 2 partitions")
        leaving = members.pop()
        leaving.close()
        wait_until(lambda: balanced(members, 6, 3), timeout=90, what="2 remaining members owning 3 partitions each")
    finally:
        for m in members:
            m.close()


@pytest.mark.durability
def test_committed_offsets_survive_a_broker_restart(broker):
    topic = unique("commit")
    cfk_create_topic(broker.bootstrap, topic, partitions=2)
    cfk_produce(broker.bootstrap, topic, [{"value": f"v{i}".encode(), "partition": i % 2} for i in range(20)])
    group = unique("g-commit")
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.commit(offsets=[TopicPartition(topic, 0, 7), TopicPartition(topic, 1, 4)], asynchronous=False)
    c.close()
    assert broker.stop() == 0
    broker.start()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        got = wait_until(lambda: c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10),
                         timeout=60, what="committed offsets")
        assert sorted((tp.partition, tp.offset) for tp in got) == [(0, 7), (1, 4)]
    finally:
        c.close()


def test_group_consumer_reads_everything_once_across_members(broker):
    topic = unique("grp-read")
    cfk_create_topic(broker.bootstrap, topic, partitions=4)
    msgs = [{"value": f"m{i}".encode(), "partition": i % 4} for i in range(400)]
    cfk_produce(broker.bootstrap, topic, msgs)
    group = unique("g-read")
    seen = []
    lock = threading.Lock()
    stop = threading.Event()

    def member():
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": True, "auto.commit.interval.ms": 200})
        c.subscribe([topic])
        while not stop.is_set():
            m = c.poll(0.1)
            if m is not None and not m.error():
                with lock:
                    seen.append(m.value())
        c.close()

    ts = [threading.Thread(target=member, daemon=True) for _ in range(2)]
    for t in ts:
        t.start()
    try:
        wait_until(lambda: len(seen) >= 400, timeout=90, what="400 messages read by the group")
    finally:
        stop.set()
        for t in ts:
            t.join(15)
    assert sorted(seen) == sorted(m["value"] for m in msgs)
