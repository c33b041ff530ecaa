"""Online migration of a group from the classic protocol to the consumer protocol (KIP-848,
`group.consumer.migration.policy`, Kafka 4's default `bidirectional`): librdkafka consumers of a
classic group are restarted one by one with `group.protocol=consumer`. The first one turns the
classic group into a consumer group that keeps the remaining classic members (they rejoin through
JoinGroup/SyncGroup when their heartbeat says REBALANCE_IN_PROGRESS); the group keeps its offsets
throughout and ends as a consumer group."""
import threading

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from clients import cfk_create_topic, cfk_produce
from conftest import unique, wait_until

PARTITIONS = 6
BATCH = 60

BROKER = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
}


class Member:
    """A consumer polled by its own thread that commits each record synchronously; remembers the
    records whose commit failed (only those may legitimately be consumed again)."""

    def __init__(self, bootstrap, group, topic, protocol, strategy="range", extra=None):
        conf = {
            "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
            "auto.offset.reset": "earliest", "enable.auto.commit": False, **(extra or {}),
        }
        if protocol == "classic":
            conf.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
                         "partition.assignment.strategy": strategy})
        self.protocol = protocol
        self.c = Consumer(conf)
        self.c.subscribe([topic])
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.assigned = set()
        self.consumed = []
        self.uncommitted = set()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop.is_set():
            m = self.c.poll(0.1)
            if m is not None and not m.error():
                rec = (m.partition(), m.offset())
                with self.lock:
                    self.consumed.append(rec)
                try:
                    self.c.commit(message=m, asynchronous=False)
                except KafkaException:
                    with self.lock:
                        self.uncommitted.add(rec)
            with self.lock:
                self.assigned = {tp.partition for tp in self.c.assignment()}

    def partitions(self):
        with self.lock:
            return set(self.assigned)

    def close(self):
        self.stop.set()
        self.t.join(20)
        self.c.close()


def group_type(admin, group):
    listed = admin.list_consumer_groups().result(timeout=30)
    mine = [g for g in listed.valid if g.group_id == group]
    return str(mine[0].type).rsplit(".", 1)[-1].upper() if mine else None


# Eager members give everything up when they rejoin; cooperative ones report what they own and
# revoke only what the consumer group's target takes away (told by their SyncGroup answer).
def shares_evenly(members, n):
    """Whether `members` own every partition between them, `n` each."""
    parts = [m.partitions() for m in members]
    return set().union(*parts) == set(range(PARTITIONS)) and all(len(p) == n for p in parts)


def assert_each_record_consumed_once(members, per_partition):
    """Every record of the topic was consumed, and none twice after its committed position: a
    record seen twice had its commit fail."""
    everything = [r for m in members for r in m.consumed]
    assert set(everything) == {(p, o) for p in range(PARTITIONS) for o in range(per_partition)}
    failed_commits = set().union(*(m.uncommitted for m in members))
    seen = set()
    for r in everything:
        assert r not in seen or r in failed_commits, f"record {r} consumed again after it was committed"
        seen.add(r)


def produce_second_batch_and_wait(b, topic, members):
    """Produces the second batch ("b0", "b1", ...) over every partition and waits (bounded) until
    `members` together consumed both batches."""
    cfk_produce(b.bootstrap, topic, [{"value": f"b{i}".encode(), "partition": i % PARTITIONS}
                                     for i in range(BATCH)])
    wait_until(lambda: len({r for m in members for r in m.consumed}) == 2 * BATCH, timeout=60,
               what="both batches consumed")


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_a_classic_group_migrates_member_by_member_to_the_consumer_protocol_keeping_its_offsets(broker_factory,
                                                                                                  strategy):
    b = broker_factory(BROKER)
    topic = unique("mig")
    group = unique("g-mig")
    cfk_create_topic(b.bootstrap, topic, partitions=PARTITIONS)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    produced = 0

    def produce():
        nonlocal produced
        cfk_produce(b.bootstrap, topic, [{"value": f"r{produced + i}".encode(), "partition": (produced + i) % PARTITIONS}
                                         for i in range(BATCH)])
        produced += BATCH

    members = []
    retired = []

    def everyone():
        return members + retired

    def distinct_consumed():
        return {r for m in everyone() for r in m.consumed}

    def balanced():
        # Every live member owns its share: the classic members were moved by the consumer
        # group's assignment too (they rejoined when their heartbeat told them to).
        parts = [m.partitions() for m in members]
        share = PARTITIONS // len(members)
        return set().union(*parts) == set(range(PARTITIONS)) and all(len(p) == share for p in parts)

    try:
        produce()
        members.extend(Member(b.bootstrap, group, topic, "classic", strategy) for _ in range(3))
        wait_until(balanced, timeout=90, what="the classic group owning every partition")
        wait_until(lambda: len(distinct_consumed()) == produced, timeout=60, what="the first batch consumed")
        assert group_type(admin, group) == "CLASSIC"

        for step in range(3):
            leaving = members.pop(0)
            assert leaving.protocol == "classic"
            leaving.close()
            retired.append(leaving)
            # The group settles (3 partitions each) before the next member comes, so the
            # classic members must learn of each change from their heartbeats.
            wait_until(balanced, timeout=120, what=f"three partitions per member before step {step + 1}")
            members.append(Member(b.bootstrap, group, topic, "consumer"))
            wait_until(lambda: members[-1].partitions(), timeout=120,
                       what=f"the consumer-protocol member of step {step + 1} assigned")
            produce()
            wait_until(lambda: len(distinct_consumed()) == produced, timeout=120,
                       what=f"{produced} records consumed after step {step + 1}")
            wait_until(balanced, timeout=120, what=f"two partitions per member after step {step + 1}")
            # From the first consumer-protocol member on, the group is a consumer group.
            wait_until(lambda: group_type(admin, group) == "CONSUMER", timeout=30, what="a consumer group")

        assert all(m.protocol == "consumer" for m in members)
        desc = admin.describe_consumer_groups([group])[group].result(timeout=30)
        assert len(desc.members) == 3
        assert sum(len(m.assignment.topic_partitions) for m in desc.members) == PARTITIONS
    finally:
        for m in members:
            m.close()

    # None skipped, none consumed twice after it was committed.
    per_partition = BATCH * 4 // PARTITIONS
    assert_each_record_consumed_once(everyone(), per_partition)
    committed = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group})
    try:
        got = committed.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=20)
        assert sorted(tp.offset for tp in got) == [per_partition] * PARTITIONS
    finally:
        committed.close()


def test_a_consumer_group_left_with_classic_members_only_goes_back_to_the_classic_protocol(broker_factory):
    b = broker_factory(BROKER)
    topic = unique("down")
    group = unique("g-down")
    cfk_create_topic(b.bootstrap, topic, partitions=PARTITIONS)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    cfk_produce(b.bootstrap, topic, [{"value": f"a{i}".encode(), "partition": i % PARTITIONS} for i in range(BATCH)])
    classic = [Member(b.bootstrap, group, topic, "classic") for _ in range(2)]
    members = list(classic)
    retired = []

    try:
        wait_until(lambda: shares_evenly(classic, 3), timeout=90, what="two classic members owning 3 partitions each")
        newcomer = Member(b.bootstrap, group, topic, "consumer")
        members.append(newcomer)
        wait_until(lambda: shares_evenly(members, 2), timeout=120, what="2 partitions each once upgraded")
        assert group_type(admin, group) == "CONSUMER"
        # The only consumer-protocol member leaves: the group becomes a classic group again and
        # its members rebalance through JoinGroup/SyncGroup with the leader's assignment.
        members.remove(newcomer)
        newcomer.close()
        retired.append(newcomer)
        wait_until(lambda: group_type(admin, group) == "CLASSIC", timeout=60, what="a classic group again")
        wait_until(lambda: shares_evenly(classic, 3), timeout=120, what="the classic members owning 3 partitions each")
        produce_second_batch_and_wait(b, topic, members + retired)
    finally:
        for m in members:
            m.close()
    assert_each_record_consumed_once(members + retired, 2 * BATCH // PARTITIONS)


def test_a_static_classic_member_replacing_the_last_consumer_member_goes_back_to_classic(broker_factory):
    """Kafka's `validateOnlineDowngradeWithReplacedMemberId`: the one consumer-protocol member is
    static; its instance restarts as a classic consumer and takes its place, which leaves only
    classic members, so the group becomes a classic group again."""
    b = broker_factory(BROKER)
    topic = unique("down-static")
    group = unique("g-down-static")
    cfk_create_topic(b.bootstrap, topic, partitions=PARTITIONS)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    cfk_produce(b.bootstrap, topic, [{"value": f"a{i}".encode(), "partition": i % PARTITIONS} for i in range(BATCH)])
    static = {"group.instance.id": "instance-1"}
    classic = [Member(b.bootstrap, group, topic, "classic") for _ in range(2)]
    members = list(classic)
    retired = []

    try:
        wait_until(lambda: shares_evenly(classic, 3), timeout=90, what="two classic members owning 3 partitions each")
        newcomer = Member(b.bootstrap, group, topic, "consumer", extra=static)
        members.append(newcomer)
        wait_until(lambda: shares_evenly(members, 2), timeout=120, what="2 partitions each once upgraded")
        assert group_type(admin, group) == "CONSUMER"
        # The static instance restarts with the classic protocol.
        members.remove(newcomer)
        newcomer.close()
        retired.append(newcomer)
        restarted = Member(b.bootstrap, group, topic, "classic", extra=static)
        members.append(restarted)
        wait_until(lambda: group_type(admin, group) == "CLASSIC", timeout=60, what="a classic group again")
        wait_until(lambda: shares_evenly(members, 2), timeout=120, what="the three classic members owning 2 each")
        produce_second_batch_and_wait(b, topic, members + retired)
    finally:
        for m in members:
            m.close()
    assert_each_record_consumed_once(members + retired, 2 * BATCH // PARTITIONS)
