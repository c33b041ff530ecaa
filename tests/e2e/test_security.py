"""TLS and SASL listeners with real clients: produce and consume over SSL, SASL_SSL with SCRAM-SHA-512
(credentials created through the AdminClient), SASL_PLAINTEXT with PLAIN, mTLS with a client-certificate
principal, with librdkafka, kafka-python, kcat and kafkajs; a wrong password fails with an authentication error while others are served; bad TLS handshakes
(garbage, a client hello cut short, a slowloris handshake) do not stall other connections.

Certificates are made at test time with Python's `cryptography` package (no openssl CLI)."""
import datetime
import ipaddress
import socket
import time

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from clients import cfk_consume, cfk_create_topic, cfk_produce, kcat, kjs_consume, kjs_produce
from conftest import free_port, unique

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


def _name(cn, org="josef"):
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, org), x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _pem_cert(cert):
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _issue(subject, key, issuer, issuer_key, ca=False, san=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if san:
        b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, a server certificate for localhost/127.0.0.1 (key and chain in one PEM file, as
    ssl.keystore.location takes it) and a client certificate CN=Alice-Cert,O=josef."""
    d = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("josef test CA")
    ca = _issue(ca_name, ca_key, ca_name, ca_key, ca=True)
    srv_key = ec.generate_private_key(ec.SECP256R1())
    srv = _issue(_name("localhost"), srv_key, ca_name, ca_key,
                 san=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cli_key = ec.generate_private_key(ec.SECP256R1())
    cli = _issue(_name("Alice-Cert"), cli_key, ca_name, ca_key)
    files = {
        "ca": _pem_cert(ca),
        "server": _pem_key(srv_key) + _pem_cert(srv),
        "client_cert": _pem_cert(cli),
        "client_key": _pem_key(cli_key),
    }
    paths = {}
    for k, v in files.items():
        p = d / f"{k}.pem"
        p.write_text(v)
        paths[k] = str(p)
    paths["ca_text"] = files["ca"]
    return paths


@pytest.fixture
def secure_broker(broker_factory, pki):
    """PLAINTEXT (the harness's port, for admin), SSL (mTLS required), SASL_SSL (SCRAM-SHA-512, PLAIN),
    SASL_PLAINTEXT (PLAIN)."""
    plain, ssl, sasl_ssl, sasl_plain = free_port(), free_port(), free_port(), free_port()
    listeners = (f"PLAINTEXT://127.0.0.1:{{p}},SSL://127.0.0.1:{ssl},SASL_SSL://127.0.0.1:{sasl_ssl},"
                 f"SASL_PLAINTEXT://127.0.0.1:{sasl_plain}")
    b = broker_factory(start=False)
    extra = {
        "listeners": listeners.format(p=b.port),
        "advertised.listeners": listeners.format(p=b.port),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": pki["server"],
        "listener.name.ssl.ssl.client.auth": "required",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": pki["ca"],
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/L,DEFAULT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
    }
    b.extra.update(extra)
    b.start()
    b.ports = {"SSL": ssl, "SASL_SSL": sasl_ssl, "SASL_PLAINTEXT": sasl_plain}
    yield b
    if b.proc and b.proc.poll() is not None:
        print(b.log())


def _roundtrip(b, bootstrap, conf, n=20):
    topic = unique("sec")
    cfk_create_topic(b.bootstrap, topic)
    msgs = [{"key": f"k{i}".encode(), "value": f"v{i}".encode() * 30, "partition": 0} for i in range(n)]
    cfk_produce(bootstrap, topic, msgs, conf=conf)
    got = cfk_consume(bootstrap, topic, n, conf=conf)
    assert [m["value"] for m in got] == [m["value"] for m in msgs]


def ssl_conf(pki, with_cert=True):
    c = {"security.protocol": "SSL", "ssl.ca.location": pki["ca"]}
    if with_cert:
        c.update({"ssl.certificate.location": pki["client_cert"], "ssl.key.location": pki["client_key"]})
    return c


def test_produce_consume_over_mtls_with_a_certificate_principal(secure_broker, pki):
    b = secure_broker
    _roundtrip(b, f"127.0.0.1:{b.ports['SSL']}", ssl_conf(pki))


def test_ssl_client_without_a_certificate_is_refused_when_required(secure_broker, pki):
    b = secure_broker
    errors = []
    admin = AdminClient({**ssl_conf(pki, with_cert=False), "bootstrap.servers": f"127.0.0.1:{b.ports['SSL']}",
                         "error_cb": errors.append})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        admin.poll(0.2)
    assert errors, "librdkafka reported no error"


def test_sasl_ssl_scram_sha_512_with_credentials_created_through_the_admin_client(secure_broker, pki):
    b = secure_broker
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    futs = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"carol-secret")])
    for f in futs.values():
        f.result(timeout=30)
    desc = admin.describe_user_scram_credentials(["carol"])
    info = desc["carol"].result(timeout=30)
    assert [(i.mechanism, i.iterations) for i in info.scram_credential_infos] == [(ScramMechanism.SCRAM_SHA_512, 4096)]
    conf = {"security.protocol": "SASL_SSL", "ssl.ca.location": pki["ca"], "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "carol", "sasl.password": "carol-secret"}
    _roundtrip(b, f"127.0.0.1:{b.ports['SASL_SSL']}", conf)


def test_sasl_plaintext_plain_with_confluent_kafka_and_kafka_python(secure_broker):
    b = secure_broker
    bootstrap = f"127.0.0.1:{b.ports['SASL_PLAINTEXT']}"
    conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "alice", "sasl.password": "alice-secret"}
    _roundtrip(b, bootstrap, conf)

    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    topic = unique("kp-sasl")
    cfk_create_topic(b.bootstrap, topic)
    kw = dict(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
              sasl_plain_username="alice", sasl_plain_password="alice-secret")
    p = KafkaProducer(**kw)
    for i in range(5):
        p.send(topic, value=f"kp{i}".encode(), partition=0).get(timeout=30)
    p.close()
    c = KafkaConsumer(**kw, consumer_timeout_ms=15000, auto_offset_reset="earliest")
    c.assign([TopicPartition(topic, 0)])
    c.seek_to_beginning()
    got = [m.value for _, m in zip(range(5), c)]
    c.close()
    assert got == [f"kp{i}".encode() for i in range(5)]


def test_a_wrong_password_fails_with_an_authentication_error_while_others_are_served(secure_broker):
    b = secure_broker
    bootstrap = f"127.0.0.1:{b.ports['SASL_PLAINTEXT']}"
    good = AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"})
    assert good.list_topics(timeout=15) is not None
    errors = []
    bad = AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                       "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "wrong",
                       "error_cb": errors.append})
    with pytest.raises(KafkaException):
        bad.list_topics(timeout=5)
    deadline = time.monotonic() + 10
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) and time.monotonic() < deadline:
        bad.poll(0.2)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    assert any("Invalid username or password" in e.str() for e in errors), errors
    # The good client still works.
    assert good.list_topics(timeout=15) is not None


def test_bad_tls_handshakes_do_not_stall_other_connections(secure_broker, pki):
    b = secure_broker
    port = b.ports["SASL_SSL"]
    garbage = socket.create_connection(("127.0.0.1", port))
    garbage.sendall(b"\x42" * 200)
    cut = socket.create_connection(("127.0.0.1", port))
    # A TLS record header announcing 512 bytes of ClientHello, then only a few of them.
    cut.sendall(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01]))
    slow = socket.create_connection(("127.0.0.1", port))
    slow.sendall(bytes([0x16]))
    conf = {"security.protocol": "SASL_SSL", "ssl.ca.location": pki["ca"], "sasl.mechanism": "PLAIN",
            "sasl.username": "alice", "sasl.password": "alice-secret"}
    t0 = time.monotonic()
    for byte in [0x03, 0x01]:  # the slowloris client dribbles while the good one works
        slow.sendall(bytes([byte]))
    _roundtrip(b, f"127.0.0.1:{port}", conf, n=5)
    assert time.monotonic() - t0 < 20
    # The garbage connection was closed by the broker.
    garbage.settimeout(10)
    try:
        while garbage.recv(256):
            pass
    except ConnectionResetError:
        pass
    for s in (garbage, cut, slow):
        s.close()


def _scram_user(b, name, password):
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    futs = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        name, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password.encode())])
    for f in futs.values():
        f.result(timeout=30)


def test_kcat_over_mtls_and_over_sasl_ssl_scram(secure_broker, pki):
    b = secure_broker
    topic = unique("kcat-sec")
    cfk_create_topic(b.bootstrap, topic)
    mtls = ["-b", f"127.0.0.1:{b.ports['SSL']}", "-X", "security.protocol=SSL", "-X", f"ssl.ca.location={pki['ca']}",
            "-X", f"ssl.certificate.location={pki['client_cert']}", "-X", f"ssl.key.location={pki['client_key']}"]
    kcat([*mtls, "-P", "-t", topic, "-p", "0"], input_bytes=b"m1\nm2\nm3\n")
    _scram_user(b, "dave", "dave-secret")
    scram = ["-b", f"127.0.0.1:{b.ports['SASL_SSL']}", "-X", "security.protocol=SASL_SSL",
             "-X", f"ssl.ca.location={pki['ca']}", "-X", "sasl.mechanisms=SCRAM-SHA-512",
             "-X", "sasl.username=dave", "-X", "sasl.password=dave-secret"]
    kcat([*scram, "-P", "-t", topic, "-p", "0"], input_bytes=b"s1\ns2\n")
    # Each listener reads what the other wrote: one log behind every listener.
    for conf in (mtls, scram):
        out = kcat([*conf, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-c", "5", "-e", "-q"])
        assert out.split() == [b"m1", b"m2", b"m3", b"s1", b"s2"]
    # A wrong password is refused (kcat exits non-zero), the listener keeps serving.
    bad = [a if a != "sasl.password=dave-secret" else "sasl.password=wrong" for a in scram]
    import subprocess
    proc = subprocess.run(["kcat", *bad, "-L", "-m", "5"], capture_output=True, timeout=60)
    assert proc.returncode != 0, proc.stdout
    assert b"Authentication failed" in proc.stderr or b"Invalid username or password" in proc.stderr, proc.stderr
    assert kcat([*scram, "-L", "-t", topic]).count(b"partition 0") == 1


def test_kafkajs_over_sasl_plaintext_plain_and_sasl_ssl_scram(secure_broker, pki):
    b = secure_broker
    topic = unique("kjs-sec")
    cfk_create_topic(b.bootstrap, topic)
    plain = {"sasl": {"mechanism": "plain", "username": "alice", "password": "alice-secret"}}
    msgs = [{"key": f"k{i}".encode(), "value": f"plain{i}".encode(), "partition": 0} for i in range(5)]
    kjs_produce(f"127.0.0.1:{b.ports['SASL_PLAINTEXT']}", topic, msgs, security=plain)
    _scram_user(b, "erin", "erin-secret")
    scram = {"ssl": {"ca": pki["ca"]},
             "sasl": {"mechanism": "scram-sha-512", "username": "erin", "password": "erin-secret"}}
    more = [{"key": f"k{i}".encode(), "value": f"scram{i}".encode(), "partition": 0} for i in range(5)]
    kjs_produce(f"127.0.0.1:{b.ports['SASL_SSL']}", topic, more, security=scram)
    got = kjs_consume(f"127.0.0.1:{b.ports['SASL_SSL']}", topic, 10, unique("kjs-sec-g"), security=scram)
    assert [m["value"] for m in got] == [m["value"] for m in msgs + more]
