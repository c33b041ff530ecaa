"""Security between cluster nodes: 3 nodes whose inter-broker listener (INTERNAL) is SSL with client certificates
required, or SASL_SSL with PLAIN, or SASL_PLAINTEXT with SCRAM-SHA-512; clients stay on a PLAINTEXT listener.
The CONTROLLER listener is PLAINTEXT, SSL with client certificates required (the quorum and the controller
requests over TLS), or SASL_SSL with PLAIN (every connection to it logs in first).

A produce with acks=all and min.insync.replicas=3 succeeds only once both followers fetched it, so it proves
replication over the secured listener; the ISR still holds all three replicas after replica.lag.time.max.ms
(3 s here), and the records are read back. Negative: with a wrong inter-broker password or a certificate of
another CA, that node's replicas leave the ISR and never come back, and the node logs why; with a controller
certificate of another CA, or a wrong controller password, the node never registers."""
import datetime
import ipaddress
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from clients import cfk_consume, cfk_produce
from conftest import free_port, unique, wait_until

pytestmark = pytest.mark.cluster

PEER_FAILED = "authentication to a cluster peer failed"


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "josef"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _issue(subject, key, issuer, issuer_key, ca=False, san=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if san:
        b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def _pem(key, cert):
    return (key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()).decode()
            + cert.public_bytes(serialization.Encoding.PEM).decode())


class Ca:
    def __init__(self, name):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = _name(name)
        self.cert = _issue(self.name, self.key, self.name, self.key, ca=True)

    def pem(self):
        return self.cert.public_bytes(serialization.Encoding.PEM).decode()

    def node_keystore(self, cn):
        """Key + chain for localhost / 127.0.0.1, as ssl.keystore.location takes it."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _issue(_name(cn), key, self.name, self.key,
                      san=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
        return _pem(key, cert)


def secured_cluster(cluster_factory, tmp_path, protocol, per_node):
    """A 3-node cluster with an INTERNAL listener of `protocol` as the inter-broker listener; `per_node(i)`
    gives node i's extra settings. Not started."""
    c = cluster_factory(3, start=False, extra_props={"min.insync.replicas": 3})
    for i, nd in c.nodes.items():
        internal = free_port()
        nd.internal_port = internal
        props = {
            "listeners": f"PLAINTEXT://127.0.0.1:{nd.client_port},INTERNAL://127.0.0.1:{internal},"
                         f"CONTROLLER://127.0.0.1:{nd.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{nd.client_port},INTERNAL://127.0.0.1:{internal}",
            "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,INTERNAL:{protocol},CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
        }
        props.update(per_node(i))
        c.node_props[i] = {k: str(v) for k, v in props.items()}
    return c


def tls_props(tmp_path, ca, i, keystore=None, client_auth="required"):
    ks = tmp_path / f"node{i}-keystore.pem"
    ks.write_text(keystore or ca.node_keystore(f"broker-{i}"))
    ts = tmp_path / f"node{i}-truststore.pem"
    ts.write_text(ca.pem())
    return {
        "listener.name.internal.ssl.keystore.type": "PEM",
        "listener.name.internal.ssl.keystore.location": ks,
        "listener.name.internal.ssl.truststore.type": "PEM",
        "listener.name.internal.ssl.truststore.location": ts,
        "listener.name.internal.ssl.client.auth": client_auth,
    }


def plain_props(password):
    return {
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required '
            f'username="broker" password="{password}" user_broker="broker-secret";',
    }


def replicate_and_read_back(c, topic, n=50):
    """RF 3, acks=all with min.insync.replicas=3: delivered only once both followers have the records."""
    c.create_topic(topic, partitions=3, rf=3)
    c.wait_topic_ready(topic, 3, rf=3)
    msgs = [{"key": f"k{i}".encode(), "value": f"v{i}".encode(), "partition": i % 3} for i in range(n)]
    cfk_produce(c.bootstrap, topic, msgs, conf={"acks": "all", "message.timeout.ms": 20000})
    # Past replica.lag.time.max.ms (3 s): followers that did not really fetch would have been dropped.
    deadline = time.monotonic() + 4.5
    while time.monotonic() < deadline:
        for p in c.partitions(topic).values():
            assert sorted(p.isrs) == [1, 2, 3], f"partition {p.id}: ISR {p.isrs}"
        time.sleep(0.5)
    got = cfk_consume(c.bootstrap, topic, n, partitions=[0, 1, 2], timeout=30)
    assert sorted(m["value"] for m in got) == sorted(m["value"] for m in msgs)
    for nd in c.nodes.values():
        assert PEER_FAILED not in nd.log(10**7), f"node {nd.id} failed to authenticate to a peer"


def test_ssl_inter_broker_listener_with_required_client_certificates(cluster_factory, tmp_path):
    ca = Ca("josef inter-broker CA")
    c = secured_cluster(cluster_factory, tmp_path, "SSL", lambda i: tls_props(tmp_path, ca, i))
    c.start()
    replicate_and_read_back(c, unique("ib-ssl"))


def test_sasl_ssl_plain_inter_broker_listener(cluster_factory, tmp_path):
    ca = Ca("josef inter-broker CA")
    c = secured_cluster(cluster_factory, tmp_path, "SASL_SSL",
                        lambda i: {**tls_props(tmp_path, ca, i, client_auth="none"), **plain_props("broker-secret")})
    c.start()
    replicate_and_read_back(c, unique("ib-sasl-ssl"))


def test_sasl_plaintext_scram_inter_broker_listener(cluster_factory, tmp_path):
    """SCRAM credentials live in the metadata log: created through the (PLAINTEXT) client listener after the
    start, as `kafka-storage format --add-scram` would have before it; the fetchers' retries then log in."""
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    c = secured_cluster(cluster_factory, tmp_path, "SASL_PLAINTEXT", lambda i: {
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.internal.scram-sha-512.sasl.jaas.config":
            'org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="broker" password="broker-scram-secret";',
    })
    c.start()
    admin = c.admin()
    fs = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "broker", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"broker-scram-secret")])
    for f in fs.values():
        f.result(timeout=30)
    topic = unique("ib-scram")
    c.create_topic(topic, partitions=3, rf=3)
    c.wait_topic_ready(topic, 3, rf=3)
    msgs = [{"value": f"v{i}".encode(), "partition": i % 3} for i in range(30)]
    cfk_produce(c.bootstrap, topic, msgs, conf={"acks": "all", "message.timeout.ms": 20000})
    got = cfk_consume(c.bootstrap, topic, 30, partitions=[0, 1, 2], timeout=30)
    assert sorted(m["value"] for m in got) == sorted(m["value"] for m in msgs)
    for p in c.partitions(topic).values():
        assert sorted(p.isrs) == [1, 2, 3], f"partition {p.id}: ISR {p.isrs}"


def _stays_out_of_isr(c, topic, bad):
    """Node `bad`'s replicas leave the ISR (replica.lag.time.max.ms) and stay out; the others serve acks=all
    produces with min.insync.replicas=2."""
    from confluent_kafka.admin import NewTopic

    # Node `bad` is never a preferred leader: as a leader its followers could not fetch either.
    admin = c.admin()
    fs = admin.create_topics([NewTopic(topic, num_partitions=3, replica_assignment=[[1, 2, bad], [2, 1, bad], [1, bad, 2]],
                                       config={"min.insync.replicas": "2"})])
    for f in fs.values():
        f.result(timeout=30)
    c.wait_topic_ready(topic, 3, full_isr=False)

    def dropped():
        ps = c.partitions(topic)
        return all(bad not in p.isrs and len(p.isrs) == 2 for p in ps.values())

    wait_until(dropped, timeout=30, interval=0.3, what=f"node {bad} out of every ISR")
    msgs = [{"value": f"v{i}".encode(), "partition": i % 3} for i in range(30)]
    cfk_produce(c.bootstrap, topic, msgs, conf={"acks": "all", "message.timeout.ms": 20000})
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        assert dropped(), c.partitions(topic)
        time.sleep(0.5)
    for nd in c.nodes.values():
        assert nd.running, f"node {nd.id} exited"
        assert "panicked" not in nd.log(10**7), f"node {nd.id} panicked"


def test_a_wrong_inter_broker_password_keeps_the_node_out_of_the_isr(cluster_factory, tmp_path):
    c = secured_cluster(cluster_factory, tmp_path, "SASL_PLAINTEXT",
                        lambda i: plain_props("wrong-secret" if i == 3 else "broker-secret"))
    c.start()
    _stays_out_of_isr(c, unique("ib-badpw"), bad=3)
    lines = c.grep_logs(PEER_FAILED)
    assert any("Authentication failed" in ln for ln in lines[3]), lines
    assert not lines[1] and not lines[2], lines


def test_a_certificate_of_another_ca_keeps_the_node_out_of_the_isr(cluster_factory, tmp_path):
    ca, rogue = Ca("josef inter-broker CA"), Ca("some other CA")
    c = secured_cluster(cluster_factory, tmp_path, "SSL", lambda i: tls_props(
        tmp_path, ca, i, keystore=rogue.node_keystore("broker-3") if i == 3 else None))
    c.start()
    _stays_out_of_isr(c, unique("ib-badcert"), bad=3)
    # The leaders refuse node 3's certificate; node 3 learns it on its first request after the handshake.
    refused = c.grep_logs("TLS connection refused")
    assert refused[1] and refused[2], refused
    assert c.grep_logs(PEER_FAILED)[3], c.grep_logs(PEER_FAILED)


def controller_tls_props(tmp_path, ca, i, keystore=None):
    ks = tmp_path / f"node{i}-controller-keystore.pem"
    ks.write_text(keystore or ca.node_keystore(f"controller-{i}"))
    ts = tmp_path / f"node{i}-controller-truststore.pem"
    ts.write_text(ca.pem())
    return {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:SSL",
        "listener.name.controller.ssl.keystore.type": "PEM",
        "listener.name.controller.ssl.keystore.location": ks,
        "listener.name.controller.ssl.truststore.type": "PEM",
        "listener.name.controller.ssl.truststore.location": ts,
        "listener.name.controller.ssl.client.auth": "required",
    }


def test_ssl_controller_listener_carries_the_quorum_and_the_controller_requests(cluster_factory, tmp_path):
    """CONTROLLER:SSL with client certificates required: the Raft quorum, registration, heartbeats,
    AlterPartition and forwarded CreateTopics all go over TLS, beside an SSL inter-broker listener."""
    ca = Ca("josef cluster CA")
    c = secured_cluster(cluster_factory, tmp_path, "SSL",
                        lambda i: {**tls_props(tmp_path, ca, i), **controller_tls_props(tmp_path, ca, i)})
    c.start()
    replicate_and_read_back(c, unique("ctl-ssl"))
    assert c.active_controller() in c.nodes


def test_a_controller_certificate_of_another_ca_keeps_the_node_out_of_the_quorum(cluster_factory, tmp_path):
    """Node 3's controller certificate is from another CA: nodes 1 and 2 form the quorum and serve, node 3
    never registers (it cannot reach a controller) and logs why; nobody panics."""
    ca, rogue = Ca("josef cluster CA"), Ca("some other CA")
    c = secured_cluster(cluster_factory, tmp_path, "SSL", lambda i: {
        **tls_props(tmp_path, ca, i),
        **controller_tls_props(tmp_path, ca, i, keystore=rogue.node_keystore("controller-3") if i == 3 else None)})
    for i in (1, 2, 3):
        c.nodes[i].launch()
    wait_until(lambda: c.brokers_seen(1) >= {1, 2}, timeout=60, interval=0.3, what="nodes 1 and 2 registered")
    wait_until(lambda: c.grep_logs(PEER_FAILED)[3] or c.grep_logs("TLS connection to the controller listener refused")[1],
               timeout=30, interval=0.3, what="the refused certificate logged")
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert 3 not in c.brokers_seen(1), "node 3 registered"
        time.sleep(0.5)
    for nd in c.nodes.values():
        assert nd.running, f"node {nd.id} exited"
        assert "panicked" not in nd.log(10**7), f"node {nd.id} panicked"


CONTROLLER_REFUSED = "SASL authentication on the controller listener failed"


def controller_sasl_ssl_props(tmp_path, ca, i, password="controller-secret"):
    """CONTROLLER:SASL_SSL: TLS with the cluster CA (no client certificates), then PLAIN with
    sasl.mechanism.controller.protocol; the JAAS entry's user_controller is the login the node's own controller
    listener accepts (the same password: a node configured with a wrong one refuses the others too)."""
    props = controller_tls_props(tmp_path, ca, i)
    del props["listener.name.controller.ssl.client.auth"]
    props.update({
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:SASL_SSL",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required '
            f'username="controller" password="{password}" user_controller="{password}";',
    })
    return props


def test_sasl_ssl_controller_listener_carries_the_quorum_and_the_controller_requests(cluster_factory, tmp_path):
    """CONTROLLER:SASL_SSL with PLAIN: the Raft quorum, registration, heartbeats, AlterPartition and forwarded
    CreateTopics all log in over TLS before anything else (the listener serves nothing else), beside an SSL
    inter-broker listener."""
    ca = Ca("josef cluster CA")
    c = secured_cluster(cluster_factory, tmp_path, "SSL",
                        lambda i: {**tls_props(tmp_path, ca, i), **controller_sasl_ssl_props(tmp_path, ca, i)})
    c.start()
    replicate_and_read_back(c, unique("ctl-sasl-ssl"))
    assert c.active_controller() in c.nodes
    refused = c.grep_logs(CONTROLLER_REFUSED)
    assert not any(refused.values()), refused


def test_a_wrong_controller_password_keeps_the_node_from_registering(cluster_factory, tmp_path):
    """Node 3's controller password is wrong (its login and the login its own listener accepts): nodes 1 and 2
    form the quorum and serve, node 3 never registers, it logs why and the controllers log the refusal; nobody
    panics. (A voter that others reach but that reaches no one keeps campaigning at ever higher terms and
    disrupts the elections of the others: the quorum has no pre-vote, so the test keeps node 3 unreachable both
    ways, as the certificate test does.)"""
    ca = Ca("josef cluster CA")
    c = secured_cluster(cluster_factory, tmp_path, "SSL", lambda i: {
        **tls_props(tmp_path, ca, i),
        **controller_sasl_ssl_props(tmp_path, ca, i, password="wrong-secret" if i == 3 else "controller-secret")})
    for i in (1, 2, 3):
        c.nodes[i].launch()
    wait_until(lambda: c.brokers_seen(1) >= {1, 2}, timeout=60, interval=0.3, what="nodes 1 and 2 registered")
    wait_until(lambda: c.grep_logs(PEER_FAILED)[3] and (c.grep_logs(CONTROLLER_REFUSED)[1]
                                                      or c.grep_logs(CONTROLLER_REFUSED)[2]),
               timeout=30, interval=0.3, what="the refused login logged on both sides")
    assert any("Invalid username or password" in ln for ln in c.grep_logs(PEER_FAILED)[3])
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert 3 not in c.brokers_seen(1), "node 3 registered"
        time.sleep(0.5)
    # Nodes 1 and 2 fail only where node 3 refuses them.
    to_node3 = f'peer="127.0.0.1:{c.nodes[3].controller_port}"'
    peer_failed = c.grep_logs(PEER_FAILED)
    assert all(to_node3 in ln for i in (1, 2) for ln in peer_failed[i]), peer_failed
    for nd in c.nodes.values():
        assert nd.running, f"node {nd.id} exited"
        assert "panicked" not in nd.log(10**7), f"node {nd.id} panicked"
