"""Group coordinators on 3 nodes (issue 17, coordinator placement and exclusivity): FindCoordinator names
the leader of the group's __consumer_offsets partition on every broker (v1 and batched v4, raw requests),
two consumers of one group bootstrapped at different brokers meet at that coordinator and split a
4-partition topic, and after kill -9 of the coordinator's node the group re-forms on the new leader of the
partition with its committed offsets (a fresh member resumes at them, none goes back).

The internal topic uses the cluster default replication factor (3, config.rs) with 6 partitions."""
import socket
import struct

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from cluster import wait_until
from conftest import unique

pytestmark = pytest.mark.cluster

OFFSETS_PARTS = 6
PROPS = {"offsets.topic.num.partitions": OFFSETS_PARTS}
TOPIC_PARTS = 4
PER_PARTITION = 60
CONSUMER = {"enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500, "socket.timeout.ms": 5000, "topic.metadata.refresh.interval.ms": 1000,
            "metadata.max.age.ms": 2000, "reconnect.backoff.max.ms": 500, "retry.backoff.max.ms": 500,
            "partition.assignment.strategy": "range"}


# ---------------------------------------------------------------- Kafka's group placement, in Python

def java_string_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units), as a signed 32-bit int."""
    h, data = 0, s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def group_partition(group: str, parts: int) -> int:
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % parts


# ---------------------------------------------------------------- raw FindCoordinator

def _recv_exactly(s, n):
    buf = b""
    while len(buf) < n:
        d = s.recv(n - len(buf))
        if not d:
            raise ConnectionError("connection closed")
        buf += d
    return buf


def _roundtrip(port, body: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", _recv_exactly(s, 4))
        return _recv_exactly(s, size)


def _uvarint(b: bytes, i: int):
    v = shift = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << shift
        if not x & 0x80:
            return v, i
        shift += 7


def find_coordinator_v1(port, key: str, key_type=0):
    """(error_code, node_id, host, port) from FindCoordinator v1 (header v1)."""
    cid, k = b"josef-test", key.encode()
    body = struct.pack(">hhih", 10, 1, 11, len(cid)) + cid + struct.pack(">h", len(k)) + k + struct.pack(">b", key_type)
    r = _roundtrip(port, body)
    corr, _throttle, err = struct.unpack_from(">iih", r)
    assert corr == 11
    i = 10
    (mlen,) = struct.unpack_from(">h", r, i)
    i += 2 + max(mlen, 0)
    node, hlen = struct.unpack_from(">ih", r, i)
    i += 6
    host = r[i:i + hlen].decode()
    (p,) = struct.unpack_from(">i", r, i + hlen)
    return err, node, host, p


def heartbeat_v0(port, group: str) -> int:
    """The error code of a Heartbeat v0 for an unknown member: NOT_COORDINATOR (16) from a broker that does
    not serve the group's shard, another error (UNKNOWN_MEMBER_ID) from its coordinator."""
    cid, g, m = b"josef-test", group.encode(), b"nobody"
    body = struct.pack(">hhih", 12, 0, 13, len(cid)) + cid + struct.pack(">h", len(g)) + g + struct.pack(">i", 1)
    body += struct.pack(">h", len(m)) + m
    r = _roundtrip(port, body)
    corr, err = struct.unpack_from(">ih", r)
    assert corr == 13
    return err


NOT_COORDINATOR = 16


def only_coordinator_serves(c, group, coord, nodes):
    """Exactly `coord` serves the group's shard: the others answer NOT_COORDINATOR."""
    errs = {n: heartbeat_v0(c.node(n).client_port, group) for n in nodes}
    return all((e != NOT_COORDINATOR) == (n == coord) for n, e in errs.items()) and errs


def find_coordinators_v4(port, keys, key_type=0):
    """{key: (error_code, node_id, host, port)} from one batched FindCoordinator v4 (header v2, flexible)."""
    cid = b"josef-test"
    body = struct.pack(">hhih", 10, 4, 12, len(cid)) + cid + b"\x00" + struct.pack(">b", key_type)
    body += bytes([len(keys) + 1]) + b"".join(bytes([len(k.encode()) + 1]) + k.encode() for k in keys) + b"\x00"
    r = _roundtrip(port, body)
    (corr,) = struct.unpack_from(">i", r)
    assert corr == 12
    _tags, i = _uvarint(r, 4)
    i += 4  # throttle
    n, i = _uvarint(r, i)
    out = {}
    for _ in range(n - 1):
        klen, i = _uvarint(r, i)
        key = r[i:i + klen - 1].decode()
        i += klen - 1
        (node,) = struct.unpack_from(">i", r, i)
        hlen, i = _uvarint(r, i + 4)
        host = r[i:i + hlen - 1].decode()
        i += hlen - 1
        p, err = struct.unpack_from(">ih", r, i)
        i += 6
        mlen, i = _uvarint(r, i)
        i += max(mlen - 1, 0)
        _tags, i = _uvarint(r, i)
        out[key] = (err, node, host, p)
    return out


# ---------------------------------------------------------------- helpers

def offsets_leader(c, part, node=None):
    ps = c.partitions("__consumer_offsets", node=node)
    return ps[part].leader


def coordinator_everywhere(c, group, nodes):
    """The coordinator every given node names (v1 and v4), once they all agree on a live one; else None."""
    seen = set()
    for n in nodes:
        err, node, _host, port = find_coordinator_v1(c.node(n).client_port, group)
        if err != 0:
            return None
        seen.add((node, port))
        v4 = find_coordinators_v4(c.node(n).client_port, [group])[group]
        if v4[0] != 0:
            return None
        seen.add((v4[1], v4[3]))
    if len(seen) != 1:
        return None
    node, port = seen.pop()
    assert port == c.node(node).advertised_port, f"coordinator {node} named at port {port}"
    return node


def poll_all(consumers, seen, commit=True, rounds=1):
    """One round of polls of every consumer: records (partition, offset) per consumer, commits synchronously."""
    for _ in range(rounds):
        for name, cons in consumers.items():
            msgs = cons.consume(num_messages=50, timeout=0.2)
            got = False
            for m in msgs:
                if m.error():
                    continue
                seen.setdefault(name, []).append((m.partition(), m.offset()))
                got = True
            if commit and got:
                try:
                    cons.commit(asynchronous=False)
                except KafkaException as e:
                    if e.args[0].code() not in (KafkaError._NO_OFFSET,):
                        seen.setdefault("commit_errors", []).append(repr(e))


def progress(consumers, seen, topic):
    """Per partition: records consumed, and the (low, high) watermarks each member sees (for failures)."""
    got = {}
    for name, xs in seen.items():
        if name != "commit_errors":
            for p, o in xs:
                got.setdefault(p, set()).add(o)
    marks = {}
    for name, cons in consumers.items():
        for p in range(TOPIC_PARTS):
            try:
                marks[(name, p)] = cons.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
            except KafkaException as e:
                marks[(name, p)] = repr(e)
    return (f"consumed per partition {({p: len(v) for p, v in sorted(got.items())})}, assignments "
            f"{assignments(consumers)}, watermarks {marks}, commit errors {seen.get('commit_errors', [])[:3]}")


def assignments(consumers):
    return {name: {tp.partition for tp in c.assignment()} for name, c in consumers.items()}


def split_between(consumers):
    a = assignments(consumers)
    sets = list(a.values())
    if any(not s for s in sets):
        return False
    union = set().union(*sets)
    return union == set(range(TOPIC_PARTS)) and sum(len(s) for s in sets) == TOPIC_PARTS


def committed(c, group, topic, node=None):
    cons = Consumer({"bootstrap.servers": c.running_bootstrap() if node is None else c.node(node).bootstrap,
                     "group.id": group, **CONSUMER})
    try:
        got = cons.committed([TopicPartition(topic, p) for p in range(TOPIC_PARTS)], timeout=10)
        return {tp.partition: tp.offset for tp in got}
    finally:
        cons.close()


def produce(c, topic, start, count):
    p = Producer({"bootstrap.servers": c.running_bootstrap(), "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5, "message.timeout.ms": 60000, "metadata.max.age.ms": 2000})
    errors = []
    for i in range(start, start + count):
        for part in range(TOPIC_PARTS):
            p.produce(topic, value=f"{part}-{i}".encode(), partition=part,
                      on_delivery=lambda err, _m: err and errors.append(err))
        p.poll(0)
    assert p.flush(60) == 0, "produce did not complete"
    assert not errors, errors[:3]


# ---------------------------------------------------------------- the test

def test_one_group_coordinator_across_brokers_and_after_kill9_of_it(cluster_factory):
    c = cluster_factory(3, extra_props=PROPS)
    topic, group = unique("coord-topic"), unique("coord-group")
    c.create_topic(topic, partitions=TOPIC_PARTS, rf=3)
    c.wait_topic_ready(topic, TOPIC_PARTS, rf=3)
    produce(c, topic, 0, PER_PARTITION)

    # FindCoordinator creates __consumer_offsets through the controller with RF 3 (the cluster default).
    coord = wait_until(lambda: coordinator_everywhere(c, group, [1, 2, 3]), timeout=60, interval=0.3,
                       what="every broker naming the same live coordinator")
    part = group_partition(group, OFFSETS_PARTS)
    ps = c.partitions("__consumer_offsets")
    assert len(ps) == OFFSETS_PARTS
    assert all(len(p.replicas) == 3 for p in ps.values()), {i: p.replicas for i, p in ps.items()}
    assert coord == ps[part].leader, f"coordinator {coord}, leader of __consumer_offsets-{part}: {ps[part].leader}"
    # Batched: several groups at once, each at the leader of its own partition.
    groups = [f"{group}-{i}" for i in range(8)]
    batched = find_coordinators_v4(c.node(1).client_port, groups)
    for g in groups:
        assert batched[g][0] == 0, (g, batched[g])
        assert batched[g][1] == ps[group_partition(g, OFFSETS_PARTS)].leader, (g, batched[g])

    # Two members bootstrapped at two different brokers (neither of them necessarily the coordinator).
    boot = [n for n in (1, 2, 3) if n != coord] + [coord]
    consumers = {f"m{n}": Consumer({"bootstrap.servers": c.node(n).bootstrap, "group.id": group,
                                    "client.id": f"m{n}", **CONSUMER}) for n in boot[:2]}
    try:
        for cons in consumers.values():
            cons.subscribe([topic])
        seen = {}

        def split():
            poll_all(consumers, seen)
            return split_between(consumers)

        wait_until(split, timeout=60, interval=0.01, what="the two members splitting the 4 partitions")
        a = assignments(consumers)
        assert not (a[f"m{boot[0]}"] & a[f"m{boot[1]}"]), a

        def consumed_all():
            poll_all(consumers, seen)
            got = {(p, o) for name, xs in seen.items() if name != "commit_errors" for p, o in xs}
            return len(got) >= TOPIC_PARTS * PER_PARTITION

        try:
            wait_until(consumed_all, timeout=60, interval=0.01, what="the first records consumed and committed")
        except AssertionError as e:
            raise AssertionError(f"{e}; {progress(consumers, seen, topic)}") from None
        # Exclusivity: the two other brokers do not serve the group (they follow its partition).
        assert only_coordinator_serves(c, group, coord, [1, 2, 3])
        assert not seen.get("commit_errors"), seen["commit_errors"][:3]
        before = committed(c, group, topic)
        assert before == {p: PER_PARTITION for p in range(TOPIC_PARTS)}, before
        # The commits are on every replica of the partition before the kill (acks wait for the HW is the
        # next part of issue 17; here only placement and exclusivity are tested).
        c.wait_replicas_converge({"__consumer_offsets"}, timeout=30)

        # kill -9 of the coordinator's node: the partition gets a new leader, which becomes the coordinator.
        c.node(coord).kill9()
        alive = [n for n in (1, 2, 3) if n != coord]
        new_leader = wait_until(lambda: (lambda l: l if l not in (coord, -1) else None)(
            offsets_leader(c, part, node=alive[0])), timeout=30, interval=0.2,
            what=f"a new leader of __consumer_offsets-{part} after kill -9 of {coord}")
        new_coord = wait_until(lambda: coordinator_everywhere(c, group, alive), timeout=30, interval=0.2,
                               what="the surviving brokers naming the new coordinator")
        assert new_coord == new_leader
        wait_until(lambda: only_coordinator_serves(c, group, new_coord, alive), timeout=30, interval=0.2,
                   what=f"only {new_coord} serving the group")

        # The new coordinator loaded the group's offsets from the replicated partition.
        assert committed(c, group, topic) == before

        # The group re-forms at the new coordinator and goes on consuming new records, committing.
        produce(c, topic, PER_PARTITION, PER_PARTITION)
        mark = {name: len(xs) for name, xs in seen.items()}

        def reformed_and_consuming():
            poll_all(consumers, seen)
            if not split_between(consumers):
                return False
            got = {(p, o) for name, xs in seen.items() if name != "commit_errors" for p, o in xs}
            return len(got) >= 2 * TOPIC_PARTS * PER_PARTITION

        wait_until(reformed_and_consuming, timeout=90, interval=0.01,
                   what="the group re-formed on the new coordinator and consuming the new records")
        # Nothing after the failover went back before the commits made before it (a member taking over a
        # partition starts at its committed offset, one keeping it goes on from its position).
        for name, xs in seen.items():
            if name == "commit_errors":
                continue
            back = [(p, o) for p, o in xs[mark.get(name, 0):] if o < before[p]]
            assert not back, f"{name} went back before the commits: {back[:5]}"
        after = wait_until(lambda: (lambda x: x if all(x[p] >= 2 * PER_PARTITION for p in x) else None)(
            committed(c, group, topic)), timeout=30, interval=0.3, what="the new commits")
        assert all(after[p] >= before[p] for p in before), (before, after)
    finally:
        for cons in consumers.values():
            try:
                cons.close()
            except Exception:  # noqa: BLE001
                pass

    # A fresh member (the others gone) resumes exactly at the committed offsets: none goes back.
    fresh = Consumer({"bootstrap.servers": c.running_bootstrap(), "group.id": group, **CONSUMER})
    try:
        fresh.subscribe([topic])
        produce(c, topic, 2 * PER_PARTITION, 1)
        first = {}

        def resumed():
            for m in fresh.consume(num_messages=50, timeout=0.2):
                if not m.error():
                    first.setdefault(m.partition(), m.offset())
            return len(first) == TOPIC_PARTS

        wait_until(resumed, timeout=60, interval=0.01, what="a fresh member reading every partition")
        assert first == {p: after[p] for p in range(TOPIC_PARTS)}, (first, after)
    finally:
        fresh.close()

    # The old coordinator comes back as a follower of the partition: it is not the coordinator any more
    # (unless the preferred-leader rebalance moved the partition back to it, then it leads in a new epoch).
    c.node(coord).start()
    c.wait_ready(60)

    def one_coordinator():
        now = coordinator_everywhere(c, group, [1, 2, 3])
        return now is not None and now == offsets_leader(c, part) and only_coordinator_serves(c, group, now, [1, 2, 3])

    wait_until(one_coordinator, timeout=60, interval=0.3,
               what="all three brokers naming the partition's leader, and only it serving the group")
