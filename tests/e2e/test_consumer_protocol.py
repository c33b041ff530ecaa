"""The consumer group protocol (KIP-848) with librdkafka consumers (`group.protocol=consumer`): the
broker computes the assignment, members converge by ConsumerGroupHeartbeat."""
import threading

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka import ConsumerGroupState, ConsumerGroupType
from confluent_kafka.admin import AdminClient

from clients import cfk_create_topic, cfk_produce
from conftest import unique, wait_until

# Shorter heartbeats than Kafka's 5 s default keep the test quick.
FAST = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
}


@pytest.fixture
def kip848_broker(broker_factory):
    return broker_factory(FAST)


class Member:
    """A consumer of the new protocol polled by its own thread; records what it consumed."""

    def __init__(self, bootstrap, group, topics, commit=False, extra=None):
        self.c = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
            "auto.offset.reset": "earliest", "enable.auto.commit": False, **(extra or {}),
        })
        self.c.subscribe(topics)
        self.commit = commit
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.assigned = set()
        self.consumed = []
        self.errors = []
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop.is_set():
            m = self.c.poll(0.1)
            if m is not None:
                if m.error():
                    self.errors.append(m.error())
                else:
                    with self.lock:
                        self.consumed.append((m.topic(), m.partition(), m.offset()))
                    if self.commit:
                        self.c.commit(message=m, asynchronous=False)
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


def test_three_members_get_two_of_six_partitions_and_take_over_without_duplicates(kip848_broker):
    b = kip848_broker
    topic = unique("kip848")
    cfk_create_topic(b.bootstrap, topic, partitions=6)
    cfk_produce(b.bootstrap, topic, [{"value": f"a{i}".encode(), "partition": i % 6} for i in range(60)])
    group = unique("g848")
    members = [Member(b.bootstrap, group, [topic], commit=True) for _ in range(3)]
    try:
        wait_until(lambda: balanced(members, 6, 2), timeout=90, what="each of 3 members owning 2 partitions")
        wait_until(lambda: sum(len(m.consumed) for m in members) >= 60, timeout=60, what="60 records consumed")
        leaving = members.pop()
        leaving.close()
        wait_until(lambda: balanced(members, 6, 3), timeout=90, what="2 remaining members owning 3 partitions each")
        cfk_produce(b.bootstrap, topic, [{"value": f"b{i}".encode(), "partition": i % 6} for i in range(60)])
        wait_until(lambda: sum(len(m.consumed) for m in members) + len(leaving.consumed) >= 120, timeout=60,
                   what="120 records consumed")
        everything = [r for m in members + [leaving] for r in m.consumed]
        assert len(everything) == len(set(everything)), "a record was consumed twice"
        assert all(not m.errors for m in members), [m.errors for m in members]
        # The group is a consumer group: ConsumerGroupDescribe sees it, ListGroups types it.
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        listed = admin.list_consumer_groups().result(timeout=30)
        mine = [g for g in listed.valid if g.group_id == group]
        assert mine, listed.valid
        desc = admin.describe_consumer_groups([group])[group].result(timeout=30)
        assert len(desc.members) == 2
        assert sorted(len(m.assignment.topic_partitions) for m in desc.members) == [3, 3]
    finally:
        for m in members:
            m.close()
    committed = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group})
    try:
        got = committed.committed([TopicPartition(topic, p) for p in range(6)], timeout=20)
        assert sorted(tp.offset for tp in got) == [20] * 6
    finally:
        committed.close()


def test_a_regex_subscription_picks_up_a_topic_created_later(kip848_broker):
    b = kip848_broker
    prefix = unique("rx").replace("-", "_")
    cfk_create_topic(b.bootstrap, f"{prefix}_a", partitions=2)
    m = Member(b.bootstrap, unique("g-rx"), [f"^{prefix}_.*"])
    try:
        wait_until(lambda: m.partitions() == {(f"{prefix}_a", 0), (f"{prefix}_a", 1)}, timeout=60,
                   what="the first topic assigned")
        cfk_create_topic(b.bootstrap, f"{prefix}_b", partitions=1)
        wait_until(lambda: (f"{prefix}_b", 0) in m.partitions(), timeout=60, what="the new topic assigned")
        cfk_produce(b.bootstrap, f"{prefix}_b", [{"value": b"late", "partition": 0}])
        wait_until(lambda: any(t == f"{prefix}_b" for t, _, _ in m.consumed), timeout=60,
                   what="a record of the new topic consumed")
    finally:
        m.close()


def test_describe_consumer_groups_describes_a_consumer_group_field_by_field(kip848_broker):
    b = kip848_broker
    topic = unique("kip848-desc")
    cfk_create_topic(b.bootstrap, topic, partitions=4)
    group = unique("g848-desc")
    m = Member(b.bootstrap, group, [topic],
               extra={"client.id": "desc-client", "group.instance.id": "desc-instance"})
    try:
        wait_until(lambda: len(m.partitions()) == 4, timeout=60, what="the member owning all 4 partitions")
        admin = AdminClient({"bootstrap.servers": b.bootstrap})

        def stable():
            d = admin.describe_consumer_groups([group])[group].result(timeout=30)
            return d if d.state == ConsumerGroupState.STABLE else None
        desc = wait_until(stable, timeout=30, what="the group described Stable")
        assert desc.group_id == group
        assert desc.type == ConsumerGroupType.CONSUMER
        assert not desc.is_simple_consumer_group
        assert desc.partition_assignor == "uniform"
        assert desc.coordinator is not None and desc.coordinator.port > 0
        [member] = desc.members
        assert member.member_id
        assert member.client_id == "desc-client"
        assert member.group_instance_id == "desc-instance"
        assert member.host
        owned = sorted((tp.topic, tp.partition) for tp in member.assignment.topic_partitions)
        assert owned == [(topic, p) for p in range(4)]
        target = sorted((tp.topic, tp.partition) for tp in member.target_assignment.topic_partitions)
        assert target == owned
    finally:
        m.close()
