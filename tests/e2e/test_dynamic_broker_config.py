"""Dynamic broker configs (KIP-226) with confluent-kafka's AdminClient on a running single node:
this broker's `message.max.bytes` set through IncrementalAlterConfigs on the BROKER resource makes
the next produce of a bigger record fail with MSG_SIZE_TOO_LARGE, without a restart, while a topic
with its own `max.message.bytes` keeps it; deleting it restores the old limit; a setting Kafka
cannot change at runtime (`log.dirs`) is refused with INVALID_REQUEST. (confluent-kafka refuses a
BROKER resource with the empty name, the cluster default, on its side: the Rust tests cover that
one.)"""
import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   ResourceType)

from clients import cfk_create_topic
from conftest import unique

BIG = b"x" * 50_000


def produce_error(bootstrap, topic, value):
    """The delivery error of one record (None when it was written)."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "retries": 0, "enable.idempotence": False})
    out = []
    p.produce(topic, value=value, on_delivery=lambda err, msg: out.append(err))
    p.flush(30)
    assert out, "no delivery report"
    return out[0]


def alter_broker(admin, name, key, op, value=None):
    r = ConfigResource(ResourceType.BROKER, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=op)])
    for f in admin.incremental_alter_configs([r]).values():
        f.result(timeout=30)


def test_message_max_bytes_lowered_at_runtime(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    plain, own = unique("dyn-plain"), unique("dyn-own")
    cfk_create_topic(broker.bootstrap, plain)
    cfk_create_topic(broker.bootstrap, own, config={"max.message.bytes": "200000"})
    pid = broker.proc.pid
    assert produce_error(broker.bootstrap, plain, BIG) is None

    alter_broker(admin, "1", "message.max.bytes", AlterConfigOpType.SET, "10000")
    err = produce_error(broker.bootstrap, plain, BIG)
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE, err
    assert produce_error(broker.bootstrap, own, BIG) is None
    assert broker.proc.pid == pid and broker.proc.poll() is None, "the broker restarted"

    described = next(iter(admin.describe_configs([ConfigResource(ResourceType.TOPIC, plain)]).values())).result()
    e = described["max.message.bytes"]
    assert (e.value, e.source) == ("10000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)

    alter_broker(admin, "1", "message.max.bytes", AlterConfigOpType.DELETE)
    assert produce_error(broker.bootstrap, plain, BIG) is None


def test_a_static_only_setting_is_refused(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    with pytest.raises(KafkaException) as e:
        alter_broker(admin, "1", "log.dirs", AlterConfigOpType.SET, "/elsewhere")
    assert e.value.args[0].code() == KafkaError.INVALID_REQUEST
    assert "Cannot update these configs dynamically" in e.value.args[0].str()


@pytest.mark.cluster
def test_every_broker_applies_its_own_value_from_the_metadata_log(cluster_factory):
    """On a cluster the change goes through the controller and comes back in the metadata image:
    with each broker's `message.max.bytes` lowered, a big record fails wherever its leader is."""
    from cluster import wait_until

    c = cluster_factory(3)
    topic = unique("dyn-cluster")
    c.create_topic(topic, 1, rf=3)
    c.wait_topic_ready(topic, 1, rf=3)
    assert produce_error(c.bootstrap, topic, BIG) is None
    admin = c.admin()
    for node in c.nodes:
        alter_broker(admin, str(node), "message.max.bytes", AlterConfigOpType.SET, "10000")

    def refused():
        err = produce_error(c.bootstrap, topic, BIG)
        return err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE

    wait_until(refused, timeout=15, what="the lowered limit on the leader")


def test_the_root_log_level_changes_through_the_broker_logger_resource(broker):
    """KIP-412 with kafka-python (confluent-kafka has no BROKER_LOGGER resource): root at DEBUG makes
    the broker log a new connection's DEBUG line, without a restart."""
    import socket

    from kafka.admin import ConfigResource as KpResource, ConfigResourceType, KafkaAdminClient
    from conftest import wait_until

    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        def debug_lines():
            return sum(1 for line in broker.log().splitlines() if " DEBUG " in line)

        host, port = broker.bootstrap.split(":")
        socket.create_connection((host, int(port))).close()
        assert debug_lines() == 0
        assert a.alter_configs([KpResource(ConfigResourceType.BROKER_LOGGER, "1",
                                           configs={"root": "DEBUG"})])["broker_logger"]["1"] == "OK"
        described = a.describe_configs([KpResource(ConfigResourceType.BROKER_LOGGER, "1")])
        assert described["broker_logger"]["1"]["root"]["value"] == "DEBUG"
        socket.create_connection((host, int(port))).close()
        wait_until(lambda: debug_lines() > 0, timeout=10, what="a DEBUG line in the broker log")
    finally:
        a.close()
