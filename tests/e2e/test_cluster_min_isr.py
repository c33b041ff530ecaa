"""min.insync.replicas on 3 nodes: with one replica down, a topic whose min.insync.replicas is 3
refuses acks=all with NOT_ENOUGH_REPLICAS (nothing written) and accepts acks=1; when the replica
is back in the ISR, acks=all succeeds again."""
import pytest
from confluent_kafka import KafkaError, Producer

from cluster import wait_until
from conftest import unique

pytestmark = pytest.mark.cluster


def produce_one(bootstrap, topic, acks):
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "message.timeout.ms": 5000, "retries": 0})
    results = []
    p.produce(topic, value=b"x", on_delivery=lambda err, msg: results.append(err))
    p.flush(15)
    assert len(results) == 1, "no delivery report"
    return results[0]


def test_min_insync_replicas_3_with_a_node_down(cluster_factory):
    c = cluster_factory(3)
    topic = unique("minisr")
    c.create_topic(topic, 1, rf=3, config={"min.insync.replicas": "3"})
    c.wait_topic_ready(topic, 1, rf=3)
    assert produce_one(c.bootstrap, topic, "all") is None
    leader = c.leader_of(topic, 0)
    follower = next(i for i in c.nodes if i != leader)
    c.nodes[follower].kill9()
    wait_until(lambda: follower not in c.partitions(topic, node=leader)[0].isrs, timeout=60,
               what="the ISR to shrink")
    err = produce_one(c.bootstrap, topic, "all")
    assert err is not None and err.code() == KafkaError.NOT_ENOUGH_REPLICAS, err
    assert produce_one(c.bootstrap, topic, "1") is None
    c.nodes[follower].start()
    c.wait_topic_ready(topic, 1, rf=3, timeout=60)
    assert produce_one(c.bootstrap, topic, "all") is None
