"""The admin APIs a cluster serves on any broker (issue 15, "APIs served across the cluster"), through real
clients against one shared 3-node cluster: DescribeCluster, DescribeQuorum, CreatePartitions, DeleteTopics,
ElectLeaders, Alter/ListPartitionReassignments, the finalized features in ApiVersions with UpdateFeatures,
and InitProducerId. Topic and broker configs are in test_cluster_configs.py.

confluent-kafka where it has the API (it sends controller-bound requests to the Metadata controller id,
which Josef answers with the lowest live id); kafka-python where it lacks one, or where the request must
go through a chosen broker (`Through(c, node)`), e.g. one that is not the active controller and must forward.

Auto leader rebalance is off on this cluster so that a leader moved away stays away until ElectLeaders;
auto topic creation is off so that a deleted topic stays deleted when a producer asks for it."""
import time

import pytest
from confluent_kafka import ElectionType, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import NewPartitions
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition
from kafka import errors as kp_errors
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeQuorumRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from cluster import wait_until
from clients import cfk_consume, cfk_produce
from conftest import unique

pytestmark = pytest.mark.cluster

IDS = {1, 2, 3}


@pytest.fixture(scope="module")
def c(module_cluster_factory):
    return module_cluster_factory(3, extra_props={"auto.leader.rebalance.enable": "false",
                                                  "auto.create.topics.enable": "false"})


class Through:
    """A kafka-python admin client whose every request, controller-bound or not, goes to one broker."""

    def __init__(self, c, node):
        self.node = node
        self.admin = KafkaAdminClient(bootstrap_servers=c.nodes[node].bootstrap, request_timeout_ms=30000)
        self.admin._controller_id = node  # its "controller" requests go to this broker, which must forward

    def send(self, request):
        async def go():
            return await self.admin._manager.send(request, node_id=self.node)

        return self.admin._manager.run(go)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        rerouted = self.admin._controller_id
        self.admin.close()
        # kafka-python retries a NOT_CONTROLLER answer on the Metadata controller: that would hide a
        # broker that failed to forward.
        assert exc[0] is not None or rerouted == self.node, f"request rerouted from node {self.node} to {rerouted}"


def not_active(c) -> int:
    """A broker that is neither the active controller nor the Metadata controller id, so an admin request
    sent to it is forwarded."""
    active, md = c.active_controller(), c.controller_id()
    return next(i for i in sorted(c.nodes, reverse=True) if i not in (active, md))


def wait_ready_everywhere(c, topic, partitions, rf):
    """Every broker's Metadata has the topic with leaders (each follows the metadata log at its pace)."""
    return [c.wait_topic_ready(topic, partitions, rf=rf, node=i) for i in sorted(c.nodes)][0]


def rf3_topic(c, name, partitions):
    topic = unique(name)
    c.create_topic(topic, partitions, rf=3)
    wait_ready_everywhere(c, topic, partitions, 3)
    return topic


def test_describe_cluster_lists_three_brokers_and_a_live_controller(c):
    # The DescribeCluster API itself (confluent-kafka's describe_cluster sends a Metadata request).
    cluster_ids = set()
    for i in c.nodes:
        with Through(c, i) as t:
            d = t.send(DescribeClusterRequest(include_cluster_authorized_operations=False))
        assert d.error_code == 0, f"node {i}: {d}"
        assert {b.broker_id for b in d.brokers} == IDS, f"node {i}: {d.brokers}"
        for b in d.brokers:
            assert (b.host, b.port) == ("127.0.0.1", c.nodes[b.broker_id].client_port), b
        # Kafka's broker answers a live broker as the controller (clients cannot reach KRaft controllers);
        # Josef the one its Metadata names. The active controller is DescribeQuorum's leader (below).
        assert d.controller_id in IDS and d.controller_id == c.controller_id(i), f"node {i}: {d.controller_id}"
        cluster_ids.add(d.cluster_id)
    assert len(cluster_ids) == 1 and None not in cluster_ids and "" not in cluster_ids, cluster_ids


def test_describe_quorum_through_every_client_listener_names_the_active_controller(c):
    # Kafka's DescribeQuorum has listeners ["broker", "controller"]: a broker forwards it to the active
    # controller (kafka-metadata-quorum.sh --bootstrap-server).
    active = c.active_controller()
    Topic = DescribeQuorumRequest.TopicData
    req = DescribeQuorumRequest(topics=[Topic(topic_name="__cluster_metadata",
                                              partitions=[Topic.PartitionData(partition_index=0)])])
    for i in c.nodes:
        with Through(c, i) as t:  # kafka-python's describe_metadata_quorum picks any broker
            r = t.send(req)
        assert r.error_code == 0, f"node {i}: {r}"
        (tr,) = r.topics
        (p,) = tr.partitions
        assert tr.topic_name == "__cluster_metadata" and p.partition_index == 0 and p.error_code == 0, r
        assert p.leader_id == active, f"through node {i}: leader {p.leader_id}, active controller {active}"
        assert p.leader_epoch >= 1 and p.high_watermark > 0, p
        assert {v.replica_id for v in p.current_voters} == IDS, p.current_voters
        assert all(v.log_end_offset >= 0 for v in p.current_voters), p.current_voters


def test_create_partitions_from_3_to_6_on_every_broker(c):
    topic = rf3_topic(c, "grow", 3)
    a = c.admin()
    fs = a.create_partitions([NewPartitions(topic, 6)], operation_timeout=30)
    for f in fs.values():
        f.result(timeout=30)
    ps = wait_ready_everywhere(c, topic, 6, 3)
    for i in c.nodes:
        for n, p in c.partitions(topic, node=i).items():
            assert p.leader in IDS and sorted(p.replicas) == [1, 2, 3], f"node {i}, partition {n}: {p}"
    # Kafka's striped placement: the new partitions' leaders go round the brokers.
    assert {ps[n].leader for n in (3, 4, 5)} == IDS, {n: p.leader for n, p in ps.items()}
    new = [{"value": f"p5-{n}".encode(), "partition": 5} for n in range(10)]
    placed = cfk_produce(c.bootstrap, topic, new, conf={"acks": "all"})
    assert {p for p, _ in placed} == {5} and [o for _, o in placed] == list(range(10)), placed
    got = cfk_consume(c.bootstrap, topic, 10, partitions=[5], timeout=30)
    assert [m["value"] for m in got] == [m["value"] for m in new]


def produce_errors(bootstrap, topic, partition=0, timeout=20):
    """Produces one record; returns the delivery error codes (librdkafka's: it fails a record with
    _UNKNOWN_TOPIC once Metadata has said UNKNOWN_TOPIC_OR_PARTITION for the propagation time)."""
    errs = []
    p = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 15000, "allow.auto.create.topics": False,
                  "topic.metadata.propagation.max.ms": 1000})
    p.produce(topic, b"after-delete", partition=partition, on_delivery=lambda e, m: errs.append(e))
    p.flush(timeout)
    return [e.code() if e is not None else None for e in errs]


def produce_to(c, node, topic, partition=0) -> int:
    """One Produce request (acks=all) sent to `node` whatever the Metadata says; its partition error code."""
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 16)
    b.append(timestamp=int(time.time() * 1000), key=None, value=b"raw")
    b.close()
    Topic = ProduceRequest.TopicProduceData
    req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, max_version=9, topic_data=[
        Topic(name=topic, partition_data=[Topic.PartitionProduceData(index=partition, records=b.buffer())])])
    with Through(c, node) as t:
        r = t.send(req)
    (tr,) = r.responses
    (pr,) = tr.partition_responses
    return pr.error_code


def test_delete_topics_through_a_non_controller_broker(c):
    topic = rf3_topic(c, "gone", 3)
    cfk_produce(c.bootstrap, topic, [{"value": b"before", "partition": 0}])
    leader = c.leader_of(topic)
    assert produce_to(c, leader, topic) == 0
    via = not_active(c)
    with Through(c, via) as t:
        t.admin.delete_topics([topic], timeout_ms=30000)
    for i in c.nodes:
        wait_until(lambda: topic not in c.metadata(i).topics, timeout=15,
                   what=f"topic {topic} gone from node {i}'s Metadata")
        t = c.metadata(i, topic).topics.get(topic)
        assert t is not None and t.error is not None and t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART, t
    for i in c.nodes:  # the former leader too: its replica is gone
        assert produce_to(c, i, topic) == kp_errors.UnknownTopicOrPartitionError.errno, f"node {i}"
    codes = produce_errors(c.bootstrap, topic)
    assert codes and codes[0] in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC), codes
    assert topic not in c.metadata().topics, "the produce re-created the deleted topic"


def test_elect_preferred_leader_brings_the_first_replica_back(c):
    topic = rf3_topic(c, "elect", 1)
    preferred = c.partitions(topic)[0].replicas[0]
    assert c.leader_of(topic) == preferred
    others = sorted(IDS - {preferred})
    assert c.nodes[preferred].stop() == 0  # controlled shutdown moves the leadership away
    wait_until(lambda: c.leader_of(topic, node=others[0]) in others, timeout=30, what="a leader other than the preferred")
    c.nodes[preferred].start()
    c.wait_ready()
    wait_ready_everywhere(c, topic, 1, 3)
    assert c.leader_of(topic) != preferred, "the preferred replica came back as leader without ElectLeaders"
    tp = TopicPartition(topic, 0)
    a = c.admin(others[1])
    res = a.elect_leaders(ElectionType.PREFERRED, [tp]).result(timeout=30)
    assert list(res) == [tp] and res[tp] is None, res
    for i in c.nodes:
        wait_until(lambda: c.leader_of(topic, node=i) == preferred, timeout=15,
                   what=f"node {i}: the preferred replica {preferred} leads again")
    res = a.elect_leaders(ElectionType.PREFERRED, [tp]).result(timeout=30)
    assert res[tp] is not None and res[tp].code() == KafkaError.ELECTION_NOT_NEEDED, res


def test_reassignment_moves_a_partition_and_its_data(c):
    topic = unique("move")
    c.create_topic(topic, 1, rf=1)
    wait_ready_everywhere(c, topic, 1, 1)
    old = c.partitions(topic)[0].replicas
    assert len(old) == 1
    (source,) = old
    active = c.active_controller()
    # The target is paused while the reassignment starts, so it cannot catch up and List must show it in
    # progress: not the quorum leader, nor the broker the requests go through.
    target = min(IDS - {source}, key=lambda i: i == active)
    via = min(IDS - {target}, key=lambda i: i == active)
    records = [{"value": f"r{n}".encode() * 50, "partition": 0} for n in range(500)]
    cfk_produce(c.bootstrap, topic, records, conf={"acks": "all"})
    tp = KpTopicPartition(topic, 0)
    with Through(c, via) as t:
        a = t.admin
        assert a.alter_partition_reassignments({tp: [99]}) == {tp: kp_errors.InvalidReplicationAssignmentError}
        c.nodes[target].pause()
        try:
            assert a.alter_partition_reassignments({tp: [target]}) == {tp: None}
            listed = a.list_partition_reassignments()
        finally:
            c.nodes[target].resume()
        assert sorted(listed[tp]["replicas"]) == sorted([source, target]), listed
        assert listed[tp]["adding_replicas"] == [target] and listed[tp]["removing_replicas"] == [source], listed
        wait_until(lambda: tp not in a.list_partition_reassignments(), timeout=60,
                   what="the reassignment to finish (ListPartitionReassignments empty)")
        assert a.alter_partition_reassignments({tp: None}) == {tp: kp_errors.NoReassignmentInProgressError}
    c.wait_ready()
    for i in c.nodes:
        wait_until(lambda: c.partitions(topic, node=i)[0].replicas == [target], timeout=15,
                   what=f"node {i}: replicas [{target}]")
    assert c.nodes[source].stop() == 0
    try:
        up = ",".join(c.nodes[i].bootstrap for i in IDS - {source})
        wait_until(lambda: c.leader_of(topic, node=target) == target, timeout=15, what=f"{target} leads")
        got = cfk_consume(up, topic, len(records), partitions=[0], timeout=60)
        assert [m["value"] for m in got] == [r["value"] for r in records]
    finally:
        c.nodes[source].start()
        c.wait_ready()


def api_versions(c, node):
    with Through(c, node) as t:
        return t.send(ApiVersionsRequest(client_software_name="josef-e2e", client_software_version="1",
                                         min_version=3))


def finalized(r) -> dict:
    return {f.name: (f.min_version_level, f.max_version_level) for f in r.finalized_features}


def wait_finalized_everywhere(c, level):
    for i in c.nodes:
        wait_until(lambda: finalized(api_versions(c, i)).get("metadata.version") == (level, level), timeout=15,
                   what=f"node {i}: finalized metadata.version {level}")


def test_api_versions_carries_finalized_features_and_update_features_changes_them_everywhere(c):
    seen = {}
    for i in c.nodes:
        r = api_versions(c, i)
        assert r.error_code == 0
        supported = {f.name: (f.min_version, f.max_version) for f in r.supported_features}
        fin = finalized(r)
        assert "metadata.version" in fin, f"node {i}: finalized {fin}"
        lo, hi = supported["metadata.version"]
        level = fin["metadata.version"][1]
        assert lo <= level <= hi and fin["metadata.version"][0] == level, (supported, fin)
        assert r.finalized_features_epoch >= 0
        seen[i] = fin
    assert len({tuple(sorted(f.items())) for f in seen.values()}) == 1, seen
    level = seen[1]["metadata.version"][1]
    assert level == 21, "the levels below assume metadata.version 3.9-IV0"
    via = not_active(c)
    with Through(c, via) as t:
        a = t.admin
        assert a.update_features({"metadata.version": level}) == {"metadata.version": "OK"}
        with pytest.raises(kp_errors.InvalidUpdateVersionError):
            a.update_features({"metadata.version": level + 1})
        with pytest.raises(kp_errors.InvalidUpdateVersionError):
            a.update_features({"metadata.version": level - 1})  # a downgrade asked as an upgrade
        # Kafka's safe downgrade: no level in 18..=21 changed the metadata records; 17 did.
        assert a.update_features({"metadata.version": ("SAFE_DOWNGRADE", 20)}) == {"metadata.version": "OK"}
        wait_finalized_everywhere(c, 20)
        with pytest.raises(kp_errors.InvalidUpdateVersionError):
            a.update_features({"metadata.version": ("SAFE_DOWNGRADE", 16)})
        assert a.update_features({"metadata.version": level}) == {"metadata.version": "OK"}
    wait_finalized_everywhere(c, level)


def test_init_producer_id_on_every_broker_gives_distinct_ids(c):
    ids = []
    for i in sorted(c.nodes):
        with Through(c, i) as t:
            for _ in range(2):
                r = t.send(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000))
                assert r.error_code == 0 and r.producer_id >= 0 and r.producer_epoch == 0, f"node {i}: {r}"
                ids.append(r.producer_id)
    assert len(set(ids)) == len(ids), f"producer ids from nodes 1..3 (two each): {ids}"
