"""Client quotas with real clients (issue 21): a producer and a consumer held to a 1 MiB/s byte-rate
quota set through AdminClient-style AlterClientQuotas, seeing throttle_time_ms in their statistics,
while an unthrottled client in the same run is not slowed.

The installed confluent-kafka (2.16) and kafka-python have no AlterClientQuotas call, so the quota is
set with a raw AlterClientQuotas v0 request (and read back with DescribeClientQuotas v0).

The broker runs with `quota.window.num=2` (windows of 1 s). With Kafka's default of 11, Kafka's
`Rate` spreads a new client's first burst over ten windows, so the client may send quota x 10 s at
once, and when the samples holding that burst expire together the throttle swings the other way:
the long-run average is the quota, but any 20 s span is off by up to 40% (josef-quota's
`obedient_producer_for_twenty_seconds` shows the same bound). Two windows keep the credit at one
window's worth, so 20 s are measured honestly within 10%: each client runs one window span first,
then bytes acknowledged (producer) or consumed (consumer) are counted over the next 20 s of wall
time.
"""
import json
import socket
import struct
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from clients import cfk_create_topic
from conftest import unique, wait_until

QUOTA = 1048576  # bytes per second


def within_quota(rate):
    """The quota is a ceiling: at most 10% over it (one window's sampling error). Below it a loaded
    machine can fall short on its own (a rehearsal of CI saw 0.89 x QUOTA once), so the floor only catches a broker
    that throttles far more than the quota asks."""
    return 0.75 * QUOTA <= rate <= 1.1 * QUOTA


WARMUP_S = 2.0
BROKER = {"quota.window.num": "2"}
MEASURE_S = 20.0
VALUE = b"q" * 10_000


def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _nullable(s) -> bytes:
    return struct.pack(">h", -1) if s is None else _str(s)


def _call(bootstrap: str, api_key: int, version: int, body: bytes) -> bytes:
    host, port = bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        header = struct.pack(">hhi", api_key, version, 1) + _str("quota-admin")
        payload = header + body
        s.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", _recv(s, 4))[0]
        resp = _recv(s, size)
    assert struct.unpack(">i", resp[:4])[0] == 1
    return resp[4:]


def _recv(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        assert chunk, "broker closed the connection"
        buf += chunk
    return buf


class _Reader:
    def __init__(self, b: bytes):
        self.b, self.i = b, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.i)
        self.i += struct.calcsize(fmt)
        return v[0]

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        s = self.b[self.i:self.i + n].decode()
        self.i += n
        return s


def alter_client_quota(bootstrap, entity: dict, key: str, value: float) -> int:
    """AlterClientQuotas v0 with one entry; returns its error code."""
    body = struct.pack(">i", 1)  # entries
    body += struct.pack(">i", len(entity))
    for t, n in entity.items():
        body += _str(t) + _nullable(n)
    body += struct.pack(">i", 1) + _str(key) + struct.pack(">d?", value, False)
    body += struct.pack(">?", False)  # validate_only
    r = _Reader(_call(bootstrap, 49, 0, body))
    r.take(">i")  # throttle_time_ms
    assert r.take(">i") == 1
    return r.take(">h")


def describe_client_quotas(bootstrap, entity_type: str, name: str) -> dict:
    """DescribeClientQuotas v0 with one EXACT component: key -> value of the matching entity."""
    body = struct.pack(">i", 1) + _str(entity_type) + struct.pack(">b", 0) + _nullable(name)
    body += struct.pack(">?", True)  # strict
    r = _Reader(_call(bootstrap, 48, 0, body))
    r.take(">i")
    assert r.take(">h") == 0
    r.string()
    out = {}
    for _ in range(r.take(">i")):
        for _ in range(r.take(">i")):
            r.string(), r.string()
        for _ in range(r.take(">i")):
            k = r.string()
            out[k] = r.take(">d")
    return out


class ThrottleStats:
    """The largest broker throttle time librdkafka reported in its statistics."""

    def __init__(self):
        self.max_ms = 0

    def __call__(self, stats_json):
        stats = json.loads(stats_json)
        for b in stats.get("brokers", {}).values():
            self.max_ms = max(self.max_ms, b.get("throttle", {}).get("max", 0))


def run_producer(bootstrap, topic, client_id, result):
    stats = ThrottleStats()
    # Small batches (one 10 kB record each): with batches of 256 kB the throttled rate settled 10-15%
    # under the quota, with 16 kB within 5% of it; a throttle costs about one request's worth.
    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "acks": "all", "linger.ms": 5,
                  "batch.size": 16384, "statistics.interval.ms": 1000, "stats_cb": stats, "queue.buffering.max.kbytes": 4096})
    acked = [0]
    measuring = [False]

    def on_delivery(err, msg):
        if err is None and measuring[0]:
            acked[0] += len(msg.value())

    start = time.monotonic()
    measure_start = start + WARMUP_S
    end = measure_start + MEASURE_S
    while True:
        now = time.monotonic()
        if now >= end:
            break
        if not measuring[0] and now >= measure_start:
            measuring[0] = True
        try:
            p.produce(topic, VALUE, on_delivery=on_delivery)
        except BufferError:
            p.poll(0.05)
        p.poll(0)
    measuring_until = time.monotonic()
    # What is acknowledged after the end of the measurement does not count.
    measuring[0] = False
    p.flush(60)
    result[client_id] = {"rate": acked[0] / (measuring_until - measure_start), "throttle_max": stats.max_ms}


def side_by_side(run, bootstrap, topic, kind, *extra):
    """Runs `run` at once for the clients throttled-<kind> and free-<kind>; returns their results."""
    result = {}
    threads = [threading.Thread(target=run, args=(bootstrap, topic, cid, result, *extra))
               for cid in (f"throttled-{kind}", f"free-{kind}")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    throttled, free = result[f"throttled-{kind}"], result[f"free-{kind}"]
    print(f"throttled {throttled}, free {free}")
    return throttled, free


def test_producer_byte_rate_holds_a_producer_to_its_quota(broker_factory):
    broker = broker_factory(BROKER)
    topic = unique("quota-produce")
    cfk_create_topic(broker.bootstrap, topic, partitions=1)
    assert alter_client_quota(broker.bootstrap, {"client-id": "throttled-producer"}, "producer_byte_rate", QUOTA) == 0
    assert describe_client_quotas(broker.bootstrap, "client-id", "throttled-producer") == {
        "producer_byte_rate": float(QUOTA)}
    throttled, free = side_by_side(run_producer, broker.bootstrap, topic, "producer")
    assert within_quota(throttled["rate"]), throttled
    assert throttled["throttle_max"] > 0, throttled
    assert free["throttle_max"] == 0, free
    assert free["rate"] > 3 * QUOTA, free


def run_consumer(bootstrap, topic, client_id, result, total_bytes):
    stats = ThrottleStats()
    c = Consumer({"bootstrap.servers": bootstrap, "client.id": client_id, "group.id": client_id,
                  "enable.auto.commit": False, "statistics.interval.ms": 1000, "stats_cb": stats,
                  # Fetches of 20 KiB (not 1 MiB, a whole window's quota): a throttled fetch is
                  # answered empty, so its size is what a throttle costs.
                  "max.partition.fetch.bytes": 20480})
    c.assign([TopicPartition(topic, 0, 0)])
    consumed = 0
    measured = 0
    start = time.monotonic()
    measure_start = start + WARMUP_S
    end = measure_start + MEASURE_S
    while time.monotonic() < end and consumed < total_bytes:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        consumed += len(m.value())
        if time.monotonic() >= measure_start:
            measured += len(m.value())
    elapsed = time.monotonic() - start
    c.close()
    result[client_id] = {"rate": measured / MEASURE_S, "consumed": consumed, "elapsed": elapsed,
                         "throttle_max": stats.max_ms}


def test_consumer_byte_rate_holds_a_consumer_to_its_quota(broker_factory):
    broker = broker_factory(BROKER)
    topic = unique("quota-fetch")
    cfk_create_topic(broker.bootstrap, topic, partitions=1)
    # Enough for the throttled consumer's whole run at the quota and more.
    count = int((WARMUP_S + MEASURE_S + 8) * QUOTA / len(VALUE))
    # Batches of at most 20 KiB: a fetch returns at least one whole batch.
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 20480})
    for _ in range(count):
        while True:
            try:
                p.produce(topic, VALUE)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(120) == 0
    del p
    total = count * len(VALUE)
    assert alter_client_quota(broker.bootstrap, {"client-id": "throttled-consumer"}, "consumer_byte_rate", QUOTA) == 0
    throttled, free = side_by_side(run_consumer, broker.bootstrap, topic, "consumer", total)
    assert within_quota(throttled["rate"]), throttled
    assert throttled["throttle_max"] > 0, throttled
    # The unthrottled consumer reads everything, far faster than the quota allows.
    assert free["consumed"] == total, free
    assert free["throttle_max"] == 0, free
    assert total / free["elapsed"] > 3 * QUOTA, free


@pytest.mark.cluster
def test_a_quota_set_through_one_node_is_enforced_by_the_leader_on_another(cluster_factory):
    """On a cluster AlterClientQuotas is forwarded to the active controller; the ClientQuotaRecord
    reaches every broker's image, so every node describes it and the partition leader enforces it."""
    c = cluster_factory(3)
    topic = unique("quota-cluster")
    c.create_topic(topic, 1, rf=3)
    c.wait_topic_ready(topic, 1, rf=3)
    leader = c.leader_of(topic)
    other = next(n for i, n in c.nodes.items() if i != leader)
    assert alter_client_quota(other.bootstrap, {"client-id": "cluster-slow"}, "producer_byte_rate", 100_000) == 0
    for node in c.nodes.values():
        wait_until(lambda: describe_client_quotas(node.bootstrap, "client-id", "cluster-slow")
                   == {"producer_byte_rate": 100_000.0}, timeout=15, what=f"the quota on node {node}")
    stats = ThrottleStats()
    p = Producer({"bootstrap.servers": c.bootstrap, "client.id": "cluster-slow", "acks": "all",
                  "batch.size": 65536, "statistics.interval.ms": 500, "stats_cb": stats})
    # 2 MB: twice the credit of ten windows at 100 kB/s.
    for _ in range(200):
        while True:
            try:
                p.produce(topic, VALUE)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    def throttled():
        p.poll(0.2)  # serves the statistics callback
        return stats.max_ms > 0

    wait_until(throttled, timeout=30, what="a throttle in the stats")
    assert p.flush(60) == 0
