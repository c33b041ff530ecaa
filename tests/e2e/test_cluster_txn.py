"""Transactions, read_committed, a consumer group and consume-transform-produce on 3 nodes, with kill -9
of the transaction coordinator and then of the group coordinator (one partition each for
__transaction_state and __consumer_offsets, so each coordinator is that partition's leader)."""
import pytest

from cluster import wait_until
from conftest import unique
from history import COMMITTED, READ_COMMITTED, READ_UNCOMMITTED, History, check, record_result
from workloads import ConsumeTransformProduce, GroupConsumer, IdempotentProducer, TransactionalProducer, \
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
    c = cluster_factory(3, extra_props=PROPS)
    txt, src, dst = unique("txn"), unique("ctp-in"), unique("ctp-out")
    for t in (txt, src, dst):
        c.create_topic(t, partitions=3, rf=3, config={"min.insync.replicas": "2"})
        c.wait_topic_ready(t, 3, rf=3)
    h = History()
    bs = c.bootstrap
    feed = IdempotentProducer(bs, src, h, name="feed", rate=200)
    txp = TransactionalProducer(bs, txt, h, name="txp", seed=18)
    grp = GroupConsumer(bs, txt, unique("grp"), h, conf={"isolation.level": "read_committed"})
    ctp = ConsumeTransformProduce(bs, src, dst, unique("ctp-group"), h)
    ws = [feed, txp, grp, ctp]
    for w in ws:
        w.start()

    def txns_grow(n):
        t0, c0 = txp.txns, ctp.txns
        try:
            wait_until(lambda: txp.txns >= t0 + n and ctp.txns >= c0 + n, timeout=60, interval=0.1,
                       what=f"{n} more transactions of txp ({t0}) and ctp ({c0})")
        except AssertionError as e:
            raise AssertionError(f"{e}; now txp {txp.txns}, ctp {ctp.txns}; errors: "
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

    wait_until(ctp_caught_up, timeout=90, interval=0.2, what="consume-transform-produce caught up with its input")
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
    record_result("kill -9 txn coordinator, then group coordinator", "txn + read_committed + group + ctp", r,
                  workload_errors=sum(len(w.errors) for w in ws))
    assert r.ok, r.summary()
    eo = ctp_exactly_once(h, [s.value for s in h.sends if s.topic == src and s.ack], dst)
    assert not eo["missing"], f"consume-transform-produce lost {len(eo['missing'])}: {eo['missing'][:5]}"
    assert not eo["duplicated"], f"consume-transform-produce duplicated {len(eo['duplicated'])}: {eo['duplicated'][:5]}"
    assert r.counts["commits"] > 0 and r.counts["txns"] > 10
