"""Bad input on raw sockets gets a protocol error or a closed connection, and the broker keeps serving."""
import socket
import struct
import threading

from clients import cfk_consume, cfk_create_topic, cfk_produce
from conftest import unique


def frame(api_key, version, correlation_id, body=b"", client_id=b"raw"):
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    if version >= 3 and api_key == 18:  # ApiVersions v3+ uses header v2: empty tagged-field section
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def connect(broker):
    s = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    s.settimeout(10)
    return s


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_response(s):
    head = recv_exact(s, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">i", head)
    return recv_exact(s, n)


def closed_by_broker(s):
    """True when the broker closed the connection (EOF or reset) without answering."""
    try:
        data = s.recv(1)
        return data == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def api_versions_ok(broker):
    s = connect(broker)
    try:
        s.sendall(frame(18, 0, 42))
        resp = read_response(s)
        assert resp is not None
        corr, err = struct.unpack(">ih", resp[:6])
        return corr == 42 and err == 0
    finally:
        s.close()


def test_api_versions_v0_answers_with_the_supported_ranges(broker):
    assert api_versions_ok(broker)


def test_unknown_api_versions_version_gets_v0_unsupported_version(broker):
    s = connect(broker)
    s.sendall(frame(18, 999, 7))
    resp = read_response(s)
    assert resp is not None, "broker must answer ApiVersions of an unknown version"
    corr, err = struct.unpack(">ih", resp[:6])
    assert corr == 7 and err == 35  # UNSUPPORTED_VERSION, in a v0 response
    (n,) = struct.unpack(">i", resp[6:10])
    keys = [struct.unpack(">hhh", resp[10 + 6 * i:16 + 6 * i]) for i in range(n)]
    assert any(k[0] == 18 for k in keys)
    s.close()


def test_garbage_closes_the_connection(broker):
    s = connect(broker)
    s.sendall(b"\x00\x00\x00\x10" + b"\xff" * 16)
    assert closed_by_broker(s)
    assert api_versions_ok(broker)


def test_two_gib_length_prefix_closes_without_allocating(broker):
    s = connect(broker)
    s.sendall(struct.pack(">i", 0x7FFFFFFF) + b"\x00\x12\x00\x00")
    assert closed_by_broker(s)
    s = connect(broker)
    s.sendall(struct.pack(">i", -5))
    assert closed_by_broker(s)
    assert api_versions_ok(broker)


def test_unknown_api_key_closes_the_connection(broker):
    s = connect(broker)
    s.sendall(frame(9999, 0, 1))
    assert closed_by_broker(s)
    assert api_versions_ok(broker)


def test_unsupported_version_closes_the_connection(broker):
    s = connect(broker)
    s.sendall(frame(3, 99, 1))  # Metadata v99
    assert closed_by_broker(s)
    assert api_versions_ok(broker)


def test_truncated_body_closes_the_connection(broker):
    s = connect(broker)
    # Metadata v1 whose topic array claims 5 topics but the frame ends after the count.
    body = struct.pack(">i", 5)
    s.sendall(frame(3, 1, 3, body))
    assert closed_by_broker(s)
    # A frame whose length promises more than is ever sent: the peer gives up and closes.
    s = connect(broker)
    s.sendall(struct.pack(">i", 100) + b"\x00\x03")
    s.shutdown(socket.SHUT_WR)
    assert closed_by_broker(s)
    assert api_versions_ok(broker)


def test_byte_at_a_time_sender_is_answered(broker):
    s = connect(broker)
    for b in frame(18, 0, 9):
        s.sendall(bytes([b]))
    resp = read_response(s)
    assert resp is not None and struct.unpack(">ih", resp[:6]) == (9, 0)
    s.close()


def test_normal_client_keeps_working_during_abuse(broker):
    topic = unique("abuse")
    cfk_create_topic(broker.bootstrap, topic)
    stop = threading.Event()

    def abuse():
        payloads = [b"\x00\x00\x00\x10" + b"\xff" * 16, struct.pack(">i", 0x7FFFFFFF), frame(9999, 0, 1),
                    frame(3, 99, 1), struct.pack(">i", 8) + b"\x00\x03"]
        i = 0
        while not stop.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", broker.port), timeout=2)
                s.sendall(payloads[i % len(payloads)])
                s.close()
            except OSError:
                pass
            i += 1

    t = threading.Thread(target=abuse, daemon=True)
    t.start()
    try:
        msgs = [{"key": f"k{i}".encode(), "value": f"v{i}".encode(), "partition": 0} for i in range(200)]
        cfk_produce(broker.bootstrap, topic, msgs, {"acks": "all"})
        got = cfk_consume(broker.bootstrap, topic, 200)
        assert [m["value"] for m in got] == [m["value"] for m in msgs]
    finally:
        stop.set()
        t.join(5)
