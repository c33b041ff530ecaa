"""Racks reach the consumer protocol's server-side assignor on a cluster (issue 19, KIP-848): each node has
its own `broker.rack`, a 6-partition topic has one replica per partition placed so that every rack holds two,
and three `group.protocol=consumer` members with `client.rack` r1, r2, r3 each end up with the two partitions
of their own rack. `uniform` prefers an in-rack member only where that costs neither balance nor stickiness;
here a rack-aligned assignment is both balanced and reachable from any join order, so it is what must come
out. Without the racks in the coordinator's topic image the result is balanced but not rack-aligned."""
import pytest
from confluent_kafka import ConsumerGroupState
from confluent_kafka.admin import NewTopic

from cluster import wait_until
from conftest import unique
from test_consumer_protocol import FAST, Member, balanced

pytestmark = pytest.mark.cluster

RACKS = {1: "r1", 2: "r2", 3: "r3"}
PARTITIONS = 6


def node_of(partition: int) -> int:
    # Interleaved (p0 r1, p1 r2, p2 r3, p3 r1, ...), so no contiguous block a rack-blind assignor tends
    # to hand out is one rack's pair.
    return partition % 3 + 1


def test_each_consumer_gets_the_partitions_whose_replica_is_in_its_rack(cluster_factory):
    c = cluster_factory(3, extra_props=FAST, node_props={i: {"broker.rack": r} for i, r in RACKS.items()})
    topic = unique("racks")
    admin = c.admin()
    fs = admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replica_assignment=[[node_of(p)] for p in range(PARTITIONS)])],
                             operation_timeout=30)
    for f in fs.values():
        f.result(timeout=30)
    parts = c.wait_topic_ready(topic, PARTITIONS, rf=1)
    assert {p: list(m.replicas) for p, m in parts.items()} == {p: [node_of(p)] for p in range(PARTITIONS)}
    # DescribeCluster carries the racks the nodes registered with.
    nodes = admin.describe_cluster().result(timeout=30).nodes
    assert {n.id: n.rack for n in nodes} == RACKS

    group = unique("g-racks")
    members = {
        rack: Member(c.bootstrap, group, [topic], extra={
            "client.rack": rack, "client.id": rack, "group.remote.assignor": "uniform",
            "topic.metadata.refresh.interval.ms": 1000, "socket.timeout.ms": 5000,
        })
        for rack in RACKS.values()
    }
    try:
        wait_until(lambda: balanced(list(members.values()), PARTITIONS, 2), timeout=60,
                   what="each of 3 members owning 2 partitions")

        def stable():
            d = admin.describe_consumer_groups([group])[group].result(timeout=10)
            if d.state != ConsumerGroupState.STABLE or len(d.members) != 3:
                return None
            owned = {m.client_id: sorted(tp.partition for tp in m.assignment.topic_partitions) for m in d.members}
            target = {m.client_id: sorted(tp.partition for tp in m.target_assignment.topic_partitions)
                      for m in d.members}
            return owned if owned == target else None

        described = wait_until(stable, timeout=30, interval=0.2, what="the group Stable, every member at its target")
        want = {rack: sorted(p for p in range(PARTITIONS) if RACKS[node_of(p)] == rack) for rack in RACKS.values()}
        assert described == want
        assert {rack: sorted(p for _, p in m.partitions()) for rack, m in members.items()} == want
        assert all(not m.errors for m in members.values()), {r: m.errors for r, m in members.items()}
    finally:
        for m in members.values():
            m.close()
