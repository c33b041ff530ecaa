"""Transactions, read_committed, a consumer group and consume-transform-produce on 3 nodes, with kill -9
of the transaction coordinator and then of the group coordinator (one partition each for
__transaction_state and __consumer_offsets, so each coordinator is that partition's leader)."""
import pytest

from cluster import wait_until
from conftest import unique
from history import COMMITTED, READ_COMMITTED, READ_UNCOMMITTED, History, check, record_result
from workloads import PRODUCER_BASE, ConsumeTransformProduce, GroupConsumer, IdempotentProducer, TransactionalProducer, \
    ctp_exactly_once, read_back

pytestmark = pytest.mark.cluster

PROPS = {"min.insync.replicas": 2, "offsets.topic.replication.factor": 3, "offsets.topic.num.partitions": 1,
         "transaction.state.log.replication.factor": 3, "transaction.state.log.min.isr": 2,
         "transaction.state.log.num.partitions": 1}


def coordinator(c, internal_topic):
    md = c.metadata(topic=internal_topic)
    t = md.topics.get(internal_topic)
    assert t is not None and t.error is None and 0 in t.partitions, f"{internal_topic}: {t and t.error}"
    return t.partitions[0].leader


def test_transactions_groups_and_ctp_survive_kill9_of_their_coordinators(cluster_factory):
    run_txn_groups_and_ctp_through_coordinator_kills(cluster_factory(3, extra_props=PROPS),
                                                     "kill -9 txn coordinator, then group coordinator")


def run_txn_groups_and_ctp_through_coordinator_kills(c, fault):
    """Transactions, a read_committed group and consume-transform-produce on `c` while the transaction
    coordinator and then the group coordinator are killed -9; the checker and the ctp exactly-once check
    over everything read back."""
    txt, src, dst = unique("txn"), unique("ctp-in"), unique("ctp-out")
    for t in (txt, src, dst):
        c.create_topic(t, partitions=3, rf=3, config={"min.insync.replicas": "2"})
        c.wait_topic_ready(t, 3, rf=3)
    h = History()
    bs = c.bootstrap
    feed = IdempotentProducer(bs, src, h, name="feed", rate=200)
    txp = TransactionalProducer(bs, txt, h, name="txp", seed=18)
    grp = GroupConsumer(bs, txt, unique("grp"), h, conf={"isolation.level": "read_committed"})
    # A transaction per 10 inputs (~3/s on a loaded 2-core machine) is slower than the feed's 200/s: the
    # backlog then outlives any bounded catch-up wait. 200 inputs per transaction keep ahead of the feed.
    ctp = ConsumeTransformProduce(bs, src, dst, unique("ctp-group"), h, batch=200)
    ws = [feed, txp, grp, ctp]
    for w in ws:
        w.start()

    def txns_grow(n):
        t0, c0 = txp.txns, ctp.txns
        try:
            wait_until(lambda: txp.txns >= t0 + n and ctp.txns >= c0 + n, timeout=60, interval=0.1,
                       what=f"{n} more transactions of txp ({t0}) and ctp ({c0})")
        except AssertionError as e:
            diag = c.dump_stacks(str(e))
            raise AssertionError(f"{e}; now txp {txp.txns}, ctp {ctp.txns}; stacks and metadata in {diag}; ctp client hangs {ctp.client_hangs}; ctp thread alive {ctp.is_alive()}; errors: "
                                 + "; ".join(f"{w.name}: {w.errors[-3:]}" for w in ws if w.errors)) from None

    txns_grow(5)
    for internal in ("__transaction_state", "__consumer_offsets"):
        victim = coordinator(c, internal)
        c.node(victim).kill9()
        wait_until(lambda: coordinator(c, internal) not in (victim, -1), timeout=30, interval=0.2,
                   what=f"a new leader of {internal}-0 after kill -9 of {victim}")
        txns_grow(5)
        c.node(victim).start()
        c.wait_ready(60)
    feed.stop(120)

    def ctp_caught_up():  # every acked input is in some committed ctp transaction
        done = {s.value.rsplit(b"|", 1)[0] for s in h.sends if s.topic == dst and h.txns.get(s.txn) == COMMITTED}
        return all(s.value in done for s in h.sends if s.topic == src and s.ack)

    def ctp_missing():  # acked inputs in no committed ctp transaction, per partition: (count, lowest, highest offset)
        done = {s.value.rsplit(b"|", 1)[0] for s in h.sends if s.topic == dst and h.txns.get(s.txn) == COMMITTED}
        by_p = {}
        for s in h.sends:
            if s.topic == src and s.ack and s.value not in done:
                by_p.setdefault(s.ack[0], []).append(s.ack[1])
        return {p: (len(o), min(o), max(o)) for p, o in sorted(by_p.items())}

    def src_offsets():  # per input partition: (HW, LSO, ctp group's committed offset), to tell a stuck LSO from a stuck consumer
        from confluent_kafka import Consumer, TopicPartition
        out = {}
        for iso in ("read_uncommitted", "read_committed"):
            q = Consumer({"bootstrap.servers": bs, "group.id": ctp.group, "isolation.level": iso})
            try:
                for p in range(3):
                    try:
                        out.setdefault(p, []).append(q.get_watermark_offsets(TopicPartition(src, p), timeout=10)[1])
                    except Exception as e:  # noqa: BLE001 - a diagnostic only
                        out.setdefault(p, []).append(repr(e))
                if iso == "read_committed":
                    for tp in q.committed([TopicPartition(src, p) for p in range(3)], timeout=10):
                        out[tp.partition].append(tp.offset)
            finally:
                q.close()
        return out

    try:
        wait_until(ctp_caught_up, timeout=90, interval=0.2, what="consume-transform-produce caught up with its input")
    except AssertionError as e:
        raise AssertionError(f"{e}; missing per input partition {ctp_missing()}; (HW, LSO, committed) {src_offsets()}; "
                             f"txp {txp.txns}, ctp {ctp.txns} transactions in {ctp.sessions} sessions, ctp consume errors {list(ctp.consume_errors)}; errors: "
                             + "; ".join(f"{w.name}: {w.errors[-3:]}" for w in ws if w.errors)) from None
    for w in ws:
        w.stop(120)
    for t in (txt, src, dst):
        c.wait_topic_ready(t, 3, rf=3, timeout=60)
        read_back(bs, t, [0, 1, 2], h, READ_UNCOMMITTED, timeout=90)
    for t in (txt, dst):
        read_back(bs, t, [0, 1, 2], h, READ_COMMITTED, timeout=90)
    c.wait_replicas_converge({txt, src, dst})
    c.stop_all()
    r = check(h, replica_dirs=c.data_dirs(), strict_ends=True, topics={txt, src, dst})
    record_result(fault, "txn + read_committed + group + ctp", r,
                  workload_errors=sum(len(w.errors) for w in ws))
    assert r.ok, r.summary()
    eo = ctp_exactly_once(h, [s.value for s in h.sends if s.topic == src and s.ack], dst)
    assert not eo["missing"], f"consume-transform-produce lost {len(eo['missing'])}: {eo['missing'][:5]}"
    assert not eo["duplicated"], f"consume-transform-produce duplicated {len(eo['duplicated'])}: {eo['duplicated'][:5]}"
    assert r.counts["commits"] > 0 and r.counts["txns"] > 10


SPAN_PROPS = {**PROPS, "offsets.topic.num.partitions": 1}


def _leaders(c, topic, n):
    return {p: c.leader_of(topic, p) for p in range(n)}


def _read_committed_reaches_end(bootstrap, topic, partitions, timeout=60):
    """A read_committed consumer reaches the high watermark on every partition: no transaction is
    left open (the LSO does not stick). Returns {partition: (position, high watermark)}."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    import time
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("lso"), "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": "read_committed",
                  "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        c.assign([TopicPartition(topic, p, 0) for p in partitions])
        deadline = time.monotonic() + timeout
        pos = {}
        while time.monotonic() < deadline:
            m = c.poll(0.3)
            if m is not None and m.error() and m.error().code() == KafkaError._PARTITION_EOF:
                pos[m.partition()] = m.offset()
            done = all(pos.get(p, -1) >= ends[p] for p in partitions)
            if done:
                break
            if m is None:  # a marker written late moves the LSO: look again
                for tp in c.position([TopicPartition(topic, p) for p in partitions]):
                    if tp.offset >= 0:
                        pos[tp.partition] = max(pos.get(tp.partition, -1), tp.offset)
        return {p: (pos.get(p, -1), ends[p]) for p in partitions}
    finally:
        c.close()


def test_a_transaction_across_leaders_commits_aborts_and_survives_kill9_of_its_coordinator(cluster_factory):
    """Every transaction writes to three partitions led by different brokers (markers go over
    WriteTxnMarkers to each leader); read_committed sees exactly the committed records. Then the
    transaction coordinator is killed -9 with a transaction open on all three partitions: a new
    producer with the same transactional.id goes on, the open transaction is aborted on every
    leader, nothing of it is ever visible, and the LSO reaches the end everywhere."""
    from confluent_kafka import Producer
    from history import ABORTED
    c = cluster_factory(3, extra_props=SPAN_PROPS)
    t = unique("span")
    c.create_topic(t, partitions=3, rf=3, config={"min.insync.replicas": "2"})
    c.wait_topic_ready(t, 3, rf=3)
    leaders = _leaders(c, t, 3)
    assert len(set(leaders.values())) >= 2, f"leaders {leaders}: the transaction must span brokers"
    h = History()
    bs = c.bootstrap
    txp = TransactionalProducer(bs, t, h, name="span", seed=7, per_txn=6, abort_ratio=0.4, max_txns=24)
    txp.start()
    txp.finish(180)
    assert not txp.errors, txp.errors
    assert txp.txns == 24

    # kill -9 of the transaction coordinator in the middle of a transaction on all partitions.
    tid = "span-tid"
    conf = {"bootstrap.servers": bs, "transactional.id": tid, "acks": "all", "transaction.timeout.ms": 60000,
            "message.timeout.ms": 30000, **PRODUCER_BASE}
    doomed = Producer(conf)
    doomed.init_transactions(30)
    doomed.begin_transaction()
    h.begin_txn("doomed")
    for p in range(3):
        for k in range(4):
            v = f"doomed:{p}:{k}".encode()
            h.send(t, v, "doomed", txn="doomed")
            doomed.produce(t, value=v, partition=p, on_delivery=h.on_delivery)
    assert doomed.flush(30) == 0
    victim = coordinator(c, "__transaction_state")
    c.node(victim).kill9()
    wait_until(lambda: coordinator(c, "__transaction_state") not in (victim, -1), timeout=30, interval=0.2,
               what=f"a new transaction coordinator after kill -9 of {victim}")
    # The same transactional.id again: fences the old producer and aborts its open transaction.
    after = Producer(conf)
    after.init_transactions(60)
    h.end_txn("doomed", ABORTED)
    after.begin_transaction()
    h.begin_txn("after")
    for p in range(3):
        v = f"after:{p}".encode()
        h.send(t, v, "after", txn="after")
        after.produce(t, value=v, partition=p, on_delivery=h.on_delivery)
    after.commit_transaction(60)
    h.end_txn("after", COMMITTED)
    c.node(victim).start()
    c.wait_ready(60)
    c.wait_topic_ready(t, 3, rf=3, timeout=60)

    ends = _read_committed_reaches_end(bs, t, [0, 1, 2])
    assert all(pos >= hw for pos, hw in ends.values()), f"read_committed stuck below the HW: {ends}"
    read_back(bs, t, [0, 1, 2], h, READ_UNCOMMITTED, timeout=60)
    read_back(bs, t, [0, 1, 2], h, READ_COMMITTED, timeout=60)
    committed_seen = {v for (tt, _), recs in h.reads[READ_COMMITTED].items() if tt == t for _, v in recs}
    assert not any(v.startswith(b"doomed:") for v in committed_seen), "an aborted record is visible"
    assert {f"after:{p}".encode() for p in range(3)} <= committed_seen
    c.wait_replicas_converge({t})
    c.stop_all()
    r = check(h, replica_dirs=c.data_dirs(), strict_ends=True, topics={t})
    record_result("kill -9 txn coordinator mid-transaction", "txn across 3 leaders + read_committed", r)
    assert r.ok, r.summary()
    assert r.counts["txns"] >= 26
