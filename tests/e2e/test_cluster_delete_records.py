"""DeleteRecords on a 3-node RF=3 topic: the leader moves its log start offset, every follower takes
it from its next fetch and reports it in the one after, and only then is the request answered
(Kafka's DelayedDeleteRecords: the low watermark, the lowest log start over the replicas on live
brokers, reached the offset), so each replica's log start is already there when the answer comes
(read with ListOffsets EARLIEST as a debugging tool, replica id -2, which any replica answers). A
follower on a live broker that does not fetch holds the answer until the request's timeout
(REQUEST_TIMED_OUT), and stops counting once its broker is fenced. A DeleteRecords sent straight to
a follower is refused with NOT_LEADER_OR_FOLLOWER and moves nothing. A follower that was down while
the leader deleted past its log end gets OFFSET_OUT_OF_RANGE and restarts its log at the leader's
log start."""
import socket
import struct

import pytest
from confluent_kafka import TopicPartition as CfkTopicPartition

from clients import cfk_produce
from conftest import unique, wait_until

pytestmark = pytest.mark.cluster

NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
DEBUGGING_REPLICA_ID = -2
EARLIEST = -2
LATEST = -1


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _request(port: int, api_key: int, version: int, body: bytes) -> bytes:
    """One request (header v1) on a fresh connection; the response body after the correlation id."""
    header = struct.pack(">hhi", api_key, version, 7) + _string("e2e-delete-records")
    payload = header + body
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.settimeout(10)
        s.sendall(struct.pack(">i", len(payload)) + payload)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            assert chunk, "connection closed before the answer"
            buf += chunk
    (corr,) = struct.unpack(">i", buf[4:8])
    assert corr == 7
    return buf[8:]


def log_start_on(port: int, topic: str, partition: int = 0, timestamp: int = EARLIEST) -> tuple[int, int]:
    """(error code, offset) of ListOffsets v1 EARLIEST (or LATEST: the LEO), replica id -2, sent to one
    node."""
    body = struct.pack(">i", DEBUGGING_REPLICA_ID) + struct.pack(">i", 1) + _string(topic)
    body += struct.pack(">i", 1) + struct.pack(">iq", partition, timestamp)
    r = _request(port, 2, 1, body)
    # topics[1]: name, partitions[1]: partition i32, error i16, timestamp i64, offset i64
    pos = 4
    (n,) = struct.unpack(">h", r[pos:pos + 2])
    pos += 2 + n + 4
    p, err, _ts, offset = struct.unpack(">ihqq", r[pos:pos + 22])
    assert p == partition
    return err, offset


def delete_records_on(port: int, topic: str, offset: int, partition: int = 0,
                      timeout_ms: int = 5_000) -> tuple[int, int]:
    """(error code, low watermark) of DeleteRecords v0 sent to one node (answered within timeout_ms, well
    inside the socket's 10 s)."""
    body = struct.pack(">i", 1) + _string(topic) + struct.pack(">i", 1) + struct.pack(">iq", partition, offset)
    body += struct.pack(">i", timeout_ms)
    r = _request(port, 21, 0, body)
    # throttle i32, topics[1]: name, partitions[1]: partition i32, low watermark i64, error i16
    pos = 4 + 4
    (n,) = struct.unpack(">h", r[pos:pos + 2])
    pos += 2 + n + 4
    p, low, err = struct.unpack(">iqh", r[pos:pos + 14])
    assert p == partition
    return err, low


def test_delete_records_moves_every_replicas_log_start_and_a_follower_refuses_it(cluster_factory):
    c = cluster_factory(3)
    topic = unique("delrec")
    c.create_topic(topic, partitions=1, rf=3)
    c.wait_topic_ready(topic, 1, rf=3)
    cfk_produce(c.bootstrap, topic, [{"value": f"v{i}".encode()} for i in range(100)], conf={"acks": "all"})
    leader = c.leader_of(topic)
    followers = [i for i in c.nodes if i != leader]
    port = {i: c.nodes[i].client_port for i in c.nodes}

    # Straight to a follower: refused, and no replica's log start moves.
    err, _ = delete_records_on(port[followers[0]], topic, 40)
    assert err == NOT_LEADER_OR_FOLLOWER, f"DeleteRecords on follower {followers[0]} answered {err}"
    assert {i: log_start_on(port[i], topic) for i in c.nodes} == {i: (0, 0) for i in c.nodes}

    # Through the AdminClient (to the leader): every replica's log start reaches 40.
    admin = c.admin()
    fs = admin.delete_records([CfkTopicPartition(topic, 0, 40)], operation_timeout=30)
    deleted = next(iter(fs.values())).result(timeout=30)
    assert deleted.low_watermark == 40, deleted

    # The answer waited for the followers' log starts: no replica is behind it.
    seen = {i: log_start_on(port[i], topic) for i in c.nodes}
    assert seen == {i: (0, 40) for i in c.nodes}, f"(error, log start) per node after the answer: {seen}"


def test_delete_records_waits_for_a_silent_live_follower_until_timeout_or_its_fencing(cluster_factory):
    c = cluster_factory(3)
    topic = unique("delrec-wait")
    c.create_topic(topic, partitions=1, rf=3)
    c.wait_topic_ready(topic, 1, rf=3)
    cfk_produce(c.bootstrap, topic, [{"value": f"w{i}".encode()} for i in range(100)], conf={"acks": "all"})
    leader = c.leader_of(topic)
    controller = c.active_controller()
    silent = next(i for i in c.nodes if i not in (leader, controller))
    port = {i: c.nodes[i].client_port for i in c.nodes}
    c.nodes[silent].pause()
    try:
        # Its broker stays registered and unfenced for broker.session.timeout.ms (2 s): it still
        # counts, has not reported the new log start, and the request times out.
        assert delete_records_on(port[leader], topic, 40, timeout_ms=300) == (REQUEST_TIMED_OUT, 0)
        # Once it is fenced it no longer counts: the live follower's report completes the request.
        seen = {}

        def completed():
            seen["v"] = delete_records_on(port[leader], topic, 40, timeout_ms=3_000)
            return seen["v"] == (0, 40)

        try:
            wait_until(completed, timeout=30, interval=0.2, what="DeleteRecords complete without the fenced follower")
        except AssertionError as e:
            raise AssertionError(f"{e}; last (error, low watermark): {seen}") from None
    finally:
        c.nodes[silent].resume()
    wait_until(lambda: log_start_on(port[silent], topic) == (0, 40), timeout=30, interval=0.2,
               what=f"node {silent} takes the log start 40 once it runs again")


def test_a_follower_behind_the_leaders_log_start_restarts_there(cluster_factory):
    c = cluster_factory(3, extra_props={"replica.lag.time.max.ms": 2000})
    topic = unique("delrec-oor")
    c.create_topic(topic, partitions=1, rf=3)
    c.wait_topic_ready(topic, 1, rf=3)
    cfk_produce(c.bootstrap, topic, [{"value": f"a{i}".encode()} for i in range(50)], conf={"acks": "all"})
    leader = c.leader_of(topic)
    down = next(i for i in c.nodes if i != leader)
    port = {i: c.nodes[i].client_port for i in c.nodes}
    wait_until(lambda: log_start_on(port[down], topic, timestamp=LATEST) == (0, 50), timeout=30,
               what=f"node {down} has the first 50 records")
    c.nodes[down].stop()
    # The ISR drops the stopped follower, so acks=1 records reach the HW without it.
    bs = ",".join(c.nodes[i].bootstrap for i in c.nodes if i != down)
    cfk_produce(bs, topic, [{"value": f"b{i}".encode()} for i in range(50)], conf={"acks": "1"})

    def deleted():
        err, low = delete_records_on(port[leader], topic, 80)
        return err == 0 and low == 80

    wait_until(deleted, timeout=30, interval=0.5, what="DeleteRecords to 80 on the leader (HW past 80)")
    c.nodes[down].start()
    seen = {}

    def restarted():
        seen["v"] = (log_start_on(port[down], topic), log_start_on(port[down], topic, timestamp=LATEST))
        return seen["v"] == ((0, 80), (0, 100))

    try:
        wait_until(restarted, timeout=60, interval=0.3, what=f"node {down} restarting its log at 80")
    except AssertionError as e:
        raise AssertionError(f"{e}; ((err, log start), (err, LEO)) on node {down}: {seen}") from None
