"""3 nodes started per the cluster contract: every node sees 3 brokers (kcat -L and AdminClient), one
controller; RF=3 topics get 3 replicas with leaders spread; records go through and are replicated."""
import json
import subprocess
from collections import Counter

import pytest

from conftest import unique
from history import READ_UNCOMMITTED, History, check, record_result
from workloads import IdempotentProducer, read_back

pytestmark = pytest.mark.cluster


def kcat_metadata(bootstrap):
    r = subprocess.run(["kcat", "-L", "-J", "-b", bootstrap, "-m", "10"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_three_nodes_start_and_every_node_sees_three_brokers(cluster_factory):
    c = cluster_factory(3)
    controllers = set()
    for i, nd in c.nodes.items():
        md = c.metadata(i)
        assert set(md.brokers) == {1, 2, 3}, f"node {i} lists brokers {sorted(md.brokers)}"
        for b in md.brokers.values():
            assert b.host == "127.0.0.1" and b.port == c.nodes[b.id].client_port
        controllers.add(md.controller_id)
        k = kcat_metadata(nd.bootstrap)
        assert sorted(b["id"] for b in k["brokers"]) == [1, 2, 3], k["brokers"]
    # Metadata's controller id is any live broker (Kafka: a random one, clients cannot reach KRaft
    # controllers; Josef: the lowest id, stable); the active controller is the Raft leader's node.
    assert len(controllers) == 1 and controllers <= {1, 2, 3}, f"controller ids seen: {controllers}"
    assert c.active_controller() in c.nodes
    # The fault tests ask a node for its own view (a node back from SIGSTOP serves a stale one), but
    # librdkafka answers list_topics from any broker it is connected to: metadata(node) insists.
    # (-1: the bootstrap connection, i.e. that node's address.)
    answered = {i: {c.metadata(i).orig_broker_id for _ in range(20)} for i in c.nodes}
    assert all(ids <= {i, -1} for i, ids in answered.items()), f"answered by: {answered}"


def test_rf3_topic_has_three_replicas_and_leaders_spread(cluster_factory):
    c = cluster_factory(3)
    topic = unique("rf3")
    c.create_topic(topic, partitions=6, rf=3)
    ps = c.wait_topic_ready(topic, 6, rf=3)
    for p in ps.values():
        assert sorted(p.replicas) == [1, 2, 3] and sorted(p.isrs) == [1, 2, 3], p
        assert p.leader in p.isrs
    leaders = Counter(p.leader for p in ps.values())
    assert set(leaders) == {1, 2, 3} and max(leaders.values()) == 2, f"leaders per broker: {dict(leaders)}"
    # every node gives the same answer; kcat agrees
    for i in c.nodes:
        assert {n: p.leader for n, p in c.partitions(topic, node=i).items()} == {n: p.leader for n, p in ps.items()}
    k = kcat_metadata(c.bootstrap)
    kt = next(t for t in k["topics"] if t["topic"] == topic)
    assert sorted(p["leader"] for p in kt["partitions"]) == sorted(p.leader for p in ps.values())
    with pytest.raises(Exception, match="(?i)replication"):
        c.create_topic(unique("rf4"), partitions=1, rf=4)


def test_records_are_replicated_to_every_replica(cluster_factory):
    c = cluster_factory(3, extra_props={"min.insync.replicas": 2})
    topic = unique("repl")
    c.create_topic(topic, partitions=3, rf=3)
    c.wait_topic_ready(topic, 3, rf=3)
    h = History()
    w = IdempotentProducer(c.bootstrap, topic, h, count=3000)
    w.start()
    w.finish(120)
    assert not w.errors, w.errors
    read_back(c.bootstrap, topic, [0, 1, 2], h, READ_UNCOMMITTED)
    c.wait_topic_ready(topic, 3, rf=3)
    c.wait_replicas_converge({topic})
    codes = c.stop_all()
    assert set(codes.values()) == {0}, f"exit codes on SIGTERM: {codes}"
    r = check(h, replica_dirs=c.data_dirs(), strict_ends=True, topics={topic})
    record_result("none", "idempotent acks=all", r)
    assert r.ok, r.summary()
    assert r.counts["acked"] == 3000 and r.counts["partitions_compared"] == 3
