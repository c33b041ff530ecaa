"""Disk faults: a node's log dir on a small tmpfs filled to ENOSPC, or on an ext4 loop device that turns
read-only under the running broker (an ext4 error with errors=remount-ro: a live `mount -o remount,ro`
is refused while files are open for writing). The node must answer errors, never corrupt a segment, and
recover when space returns or on restart; the cluster keeps every acknowledged record. The tests mount
and unmount themselves (we run as root) and skip only when mounting is impossible, saying why. The
single-node tests run against today's broker; the cluster ones are marked `cluster`."""
import os

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer

from cluster import DiskMount, wait_until
from conftest import unique
from history import READ_UNCOMMITTED, History, check, read_batches, record_result
from test_cluster_faults import MIN_ISR, Scenario
from workloads import IdempotentProducer, read_back

KIND = {"enospc": "tmpfs", "read-only": "ext4"}
WHY_NOT = {k: DiskMount.unavailable(v) for k, v in KIND.items()}


def skip_unless_mountable(fault):
    if WHY_NOT[fault] is not None:
        pytest.skip(f"cannot mount a {KIND[fault]} for {fault}: {WHY_NOT[fault]}")


def produce_until_error(bootstrap, topic, h, limit=200_000, value_size=1000):
    """Produces acks=all until a delivery fails (disk full / read-only) or `limit` records; returns the error."""
    err = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "message.timeout.ms": 10000,
                  "enable.idempotence": True})
    pad = b"x" * value_size

    def cb(e, m):
        if e is None:
            h.ack(m.value(), m.partition(), m.offset())
        else:
            h.fail(m.value(), str(e))
            err.append(e)

    i = 0
    while not err and i < limit:
        v = b"%d|" % i + pad
        h.send(topic, v, "disk")
        while True:
            try:
                p.produce(topic, v, on_delivery=cb, partition=0)
                break
            except BufferError:
                p.poll(0.05)
        i += 1
        if i % 500 == 0:
            p.flush(30)
    p.flush(30)
    return err[0] if err else None


def first_error_without_retries(bootstrap, topic, h, attempts=20, value_size=1000):
    """Produces one record at a time with no client retry (acks=all, not idempotent) until one fails;
    the KafkaError of that failure, or None if every record was acknowledged. Without retries the
    client reports the broker's own error code, not a timeout after retrying it."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "retries": 0, "enable.idempotence": False,
                  "linger.ms": 0, "message.timeout.ms": 15000})
    pad = b"x" * value_size
    for i in range(attempts):
        v = b"no-retry-%d|" % i + pad
        h.send(topic, v, "no-retry")
        got = []

        def cb(e, m, v=v):
            if e is None:
                h.ack(v, m.partition(), m.offset())
            else:
                h.fail(v, str(e))
            got.append(e)

        p.produce(topic, v, on_delivery=cb, partition=0)
        p.flush(30)
        assert got, "no delivery report within 30 s"
        if got[0] is not None:
            return got[0]
    return None


def no_torn_segments(data_dir):
    notes = []
    for d in data_dir.iterdir():
        if d.is_dir() and any(d.glob("*.log")):
            notes += read_batches(d)[1]
    return notes


@pytest.mark.parametrize("fault", ["enospc", "read-only"])
def test_single_node_disk_fault_answers_errors_and_recovers(cluster_factory, fault):
    skip_unless_mountable(fault)
    c = cluster_factory(1, single=True, timeouts={}, start=False)
    nd = c.node(1)
    nd.mount = DiskMount(nd.data_dir, size_mb=24, kind=KIND[fault]).mount()
    c.start()
    topic = unique("disk")
    c.create_topic(topic, rf=1)
    h = History()
    w = IdempotentProducer(c.bootstrap, topic, h, name="before", count=500)
    w.start()
    w.finish(60)
    assert not w.errors
    if fault == "enospc":
        err = produce_until_error(c.bootstrap, topic, h)
    else:
        # What the broker acknowledged but the kernel had not written back is lost with the disk (as on a
        # power cut: acks=all promises replication, not fsync); sync first so the check is the broker's.
        os.sync()
        nd.mount.make_read_only()
        err = produce_until_error(c.bootstrap, topic, h, limit=50)
    assert err is not None, "the broker acknowledged every record on a full / read-only disk"
    # Kafka's answer to a produce to a partition whose log dir failed: KAFKA_STORAGE_ERROR (56), by its
    # code (the idempotent producer above retries it until message.timeout.ms, so its error is a timeout).
    refused = first_error_without_retries(c.bootstrap, topic, h)
    assert refused is not None, f"the broker acknowledged records on a {fault} disk"
    assert refused.code() == KafkaError.KAFKA_STORAGE_ERROR, f"{fault}: {refused.code()} {refused}"
    assert nd.running, f"the broker died on {fault}; log:\n{nd.log(4000)}"
    # space / writability returns: restart recovers the log
    nd.kill9()
    if fault == "enospc":
        nd.mount.resize(256)
    else:
        nd.mount.restore()
    nd.start()
    w2 = IdempotentProducer(c.bootstrap, topic, h, name="after", count=200)
    w2.start()
    w2.finish(60)
    assert not w2.errors, w2.errors
    read_back(c.bootstrap, topic, [0], h, READ_UNCOMMITTED)
    r = check(h, topics={topic})
    record_result(f"single node, {fault}", "idempotent acks=all", r, error=str(err))
    assert r.ok, r.summary()
    nd.stop()
    assert not no_torn_segments(nd.data_dir), "segments torn after a clean stop"


@pytest.mark.cluster
@pytest.mark.parametrize("fault", ["enospc", "read-only"])
def test_cluster_follower_or_leader_disk_fault_loses_nothing(cluster_factory, fault):
    skip_unless_mountable(fault)

    def factory(n, **kw):
        c = cluster_factory(n, start=False, **kw)
        nd = c.node(3)
        nd.mount = DiskMount(nd.data_dir, size_mb=64, kind=KIND[fault]).mount()
        return c.start()

    s = Scenario(factory)
    s.start_load()
    nd = s.c.node(3)
    if fault == "enospc":
        nd.mount.fill()
    else:
        nd.mount.make_read_only()
    s.progress(500, what=f"node 3's disk {fault}")
    if nd.running:
        nd.kill9()
    if fault == "enospc":
        nd.mount.unfill()
    else:
        nd.mount.restore()
    nd.start(wait=False)
    r, _ = s.finish(f"node 3 disk {fault}")
    assert not no_torn_segments(nd.data_dir)
