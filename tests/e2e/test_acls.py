"""ACLs through confluent-kafka's AdminClient (create_acls / describe_acls / delete_acls) and what a
client is then refused.

Without SASL every client is User:ANONYMOUS from 127.0.0.1, so denial is shown with ACLs that DENY
that principal (or host), or with ACLs for another user and `allow.everyone.if.no.acl.found` off.
The cluster test asks each broker directly (a raw Metadata v1 request) so it proves the ACL reached
every broker's image, not only the one the AdminClient talked to.
"""
import socket
import struct

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)

from conftest import unique, wait_until

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
ME = "User:ANONYMOUS"


def admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})


def create_topic(a, topic):
    for f in a.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)]).values():
        f.result(timeout=30)


def create_acls(a, bindings):
    for f in a.create_acls(bindings).values():
        f.result(timeout=30)


def topic_acl(topic, op, permission, principal=ME, host="*", pattern=ResourcePatternType.LITERAL):
    return AclBinding(ResourceType.TOPIC, topic, pattern, principal, host, op, permission)


def everything_of(topic):
    return AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                            AclPermissionType.ANY)


def produce(bootstrap, topic, n=3):
    p = Producer({"bootstrap.servers": bootstrap})
    errors = []
    for i in range(n):
        p.produce(topic, value=f"v{i}".encode(), on_delivery=lambda e, m: errors.append(e) if e else None)
    assert p.flush(30) == 0
    assert not errors, errors


def consume_outcome(bootstrap, topic, timeout=20.0):
    """The first message or the first error code a consumer assigned to partition 0 gets."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("g"), "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])

        def first():
            m = c.poll(0.5)
            if m is None:
                return None
            return ("error", m.error().code()) if m.error() else ("message", m.value())
        return wait_until(first, timeout=timeout, what=f"a message or an error from {topic}")
    finally:
        c.close()


def test_admin_acls_hide_and_refuse_a_topic_then_delete_restores_it(broker_factory):
    # Everything is allowed where no ACL exists; the ACLs below take the topic away from us.
    b = broker_factory({**AUTHORIZER, "allow.everyone.if.no.acl.found": "true"})
    a = admin(b.bootstrap)
    readable, hidden = unique("acl-read"), unique("acl-hidden")
    for t in (readable, hidden):
        create_topic(a, t)
        produce(b.bootstrap, t)
    assert consume_outcome(b.bootstrap, readable)[0] == "message"
    create_acls(a, [
        # Describable (so it stays in Metadata), but READ is denied from this host.
        topic_acl(readable, AclOperation.DESCRIBE, AclPermissionType.ALLOW),
        topic_acl(readable, AclOperation.READ, AclPermissionType.DENY, host="127.0.0.1"),
        topic_acl(hidden, AclOperation.ALL, AclPermissionType.DENY),
    ])
    described = a.describe_acls(everything_of(readable)).result(timeout=30)
    assert {(x.operation, x.permission_type, x.host) for x in described} == {
        (AclOperation.DESCRIBE, AclPermissionType.ALLOW, "*"),
        (AclOperation.READ, AclPermissionType.DENY, "127.0.0.1")}
    assert consume_outcome(b.bootstrap, readable) == ("error", KafkaError.TOPIC_AUTHORIZATION_FAILED)
    topics = admin(b.bootstrap).list_topics(timeout=10).topics
    assert readable in topics and hidden not in topics
    p = Producer({"bootstrap.servers": b.bootstrap, "message.timeout.ms": 5000})
    errors = []
    p.produce(hidden, b"x", on_delivery=lambda e, m: errors.append(e))
    p.flush(15)
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    deleted = a.delete_acls([everything_of(readable), everything_of(hidden)])
    assert sum(len(f.result(timeout=30)) for f in deleted.values()) == 3
    assert a.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                            AclOperation.ANY, AclPermissionType.ANY)).result(timeout=30) == []
    assert consume_outcome(b.bootstrap, readable)[0] == "message"
    assert hidden in admin(b.bootstrap).list_topics(timeout=10).topics


def test_a_super_user_passes_every_deny_and_acls_survive_a_restart(broker_factory):
    b = broker_factory({**AUTHORIZER, "super.users": ME})
    a = admin(b.bootstrap)
    t = unique("acl-super")
    create_topic(a, t)
    produce(b.bootstrap, t)
    create_acls(a, [topic_acl(t, AclOperation.ALL, AclPermissionType.DENY)])
    assert consume_outcome(b.bootstrap, t)[0] == "message"
    b.restart()
    after = admin(b.bootstrap)  # kept alive until the future resolves
    assert len(after.describe_acls(everything_of(t)).result(timeout=30)) == 1


def test_without_acls_for_us_everything_is_refused(broker_factory):
    # allow.everyone.if.no.acl.found is false by default; the only ACLs name another user.
    b = broker_factory({**AUTHORIZER, "super.users": "User:admin"})
    a = admin(b.bootstrap)
    # (librdkafka drops DescribeAcls' top-level error code, so the ACL API checked is CreateAcls.)
    with pytest.raises(KafkaException) as e:
        create_acls(a, [topic_acl("t", AclOperation.READ, AclPermissionType.ALLOW)])
    assert e.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    t = unique("acl-nope")
    with pytest.raises(KafkaException) as e:
        create_topic(a, t)
    assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert t not in a.list_topics(timeout=10).topics


def test_no_authorizer_means_security_disabled(broker_factory):
    b = broker_factory()
    a = admin(b.bootstrap)
    with pytest.raises(KafkaException) as e:
        create_acls(a, [topic_acl("t", AclOperation.READ, AclPermissionType.ALLOW)])
    assert e.value.args[0].code() == KafkaError.SECURITY_DISABLED


# ---------------------------------------------------------------- 3-node cluster


def raw_metadata_topics(port):
    """{topic: error code} from a Metadata v1 request (all topics) sent to exactly this broker."""
    client_id = b"acl-test"
    body = struct.pack(">hhih", 3, 1, 7, len(client_id)) + client_id + struct.pack(">i", -1)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", recv_exact(s, 4))[0]
        buf = recv_exact(s, size)
    pos = 4  # correlation id

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, buf, pos)
        pos += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string():
        nonlocal pos
        n = take(">h")
        if n < 0:
            return None
        v = buf[pos:pos + n].decode()
        pos += n
        return v

    for _ in range(take(">i")):  # brokers: node id, host, port, rack
        take(">i"), string(), take(">i"), string()
    take(">i")  # controller id
    topics = {}
    for _ in range(take(">i")):
        err, name, _internal = take(">h"), string(), take(">?")
        for _ in range(take(">i")):
            take(">hii")
            take(">" + "i" * take(">i"))  # replicas
            take(">" + "i" * take(">i"))  # isr
        topics[name] = err
    return topics


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


@pytest.mark.cluster
def test_an_acl_created_through_one_broker_applies_on_every_broker(cluster_factory):
    c = cluster_factory(3, extra_props={**AUTHORIZER, "allow.everyone.if.no.acl.found": "true"})
    t = unique("acl-cluster")
    c.create_topic(t, 1, rf=3)
    c.wait_topic_ready(t, 1, rf=3)
    for node in c.nodes.values():
        wait_until(lambda: t in raw_metadata_topics(node.client_port), timeout=15, what=f"{t} on {node}")
    first = c.admin(node=1)
    create_acls(first, [topic_acl(t, AclOperation.ALL, AclPermissionType.DENY)])
    for node in c.nodes.values():
        wait_until(lambda: t not in raw_metadata_topics(node.client_port), timeout=15,
                   what=f"{t} hidden by node {node}")
        node_admin = c.admin(node=node.id)  # kept alive until the future resolves
        described = node_admin.describe_acls(everything_of(t)).result(timeout=30)
        assert [(x.operation, x.permission_type) for x in described] == [(AclOperation.ALL,
                                                                           AclPermissionType.DENY)]
    # Deleted through another broker: visible again everywhere.
    third = c.admin(node=3)
    deleted = third.delete_acls([everything_of(t)])
    assert sum(len(f.result(timeout=30)) for f in deleted.values()) == 1
    for node in c.nodes.values():
        wait_until(lambda: t in raw_metadata_topics(node.client_port), timeout=15,
                   what=f"{t} visible again on {node}")
