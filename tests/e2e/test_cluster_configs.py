"""Configs kept in the metadata log: a topic config and a broker config altered through one broker
(IncrementalAlterConfigs, forwarded to the controller) are seen through every broker."""
import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from cluster import wait_until
from conftest import unique

pytestmark = pytest.mark.cluster


def describe(bootstrap, resource):
    a = AdminClient({"bootstrap.servers": bootstrap})
    return next(iter(a.describe_configs([resource]).values())).result()


def test_topic_and_broker_configs_are_seen_by_every_broker(cluster_factory):
    c = cluster_factory(3)
    topic = unique("cfg")
    c.create_topic(topic, 1, rf=3)
    c.wait_topic_ready(topic, 1, rf=3)
    a = c.admin()
    t = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    b = ConfigResource(ResourceType.BROKER, "2", incremental_configs=[
        ConfigEntry("log.retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
    for f in a.incremental_alter_configs([t, b]).values():
        f.result()
    for node in c.nodes.values():
        wait_until(lambda: describe(node.bootstrap, ConfigResource(ResourceType.TOPIC, topic))["retention.ms"].value
                   == "3600000", timeout=15, what=f"the topic config on node {node}")
    e = describe(c.bootstrap, ConfigResource(ResourceType.BROKER, "2"))["log.retention.ms"]
    assert e.value == "7200000"
