"""Preferred leaders come back (auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds
lowered by the harness): after the preferred leader of a partition is killed and restarted, the
controller moves leadership back to it once it is in the ISR again."""
import pytest

from cluster import wait_until
from conftest import unique

pytestmark = pytest.mark.cluster


def test_preferred_leader_returns_after_a_restart(cluster_factory):
    c = cluster_factory(3)
    topic = unique("prefer")
    c.create_topic(topic, 3, rf=3)
    c.wait_topic_ready(topic, 3, rf=3)
    p0 = c.partitions(topic)[0]
    preferred = p0.replicas[0]
    assert p0.leader == preferred
    c.nodes[preferred].kill9()
    other = next(i for i in c.nodes if i != preferred)
    wait_until(lambda: c.leader_of(topic, 0, node=other) not in (preferred, -1), timeout=60,
               what="a new leader while the preferred one is down")
    c.nodes[preferred].start()
    c.wait_topic_ready(topic, 3, rf=3, timeout=60)
    wait_until(lambda: all(p.leader == p.replicas[0] for p in c.partitions(topic, node=other).values()),
               timeout=60, what="every partition led by its preferred replica again")
