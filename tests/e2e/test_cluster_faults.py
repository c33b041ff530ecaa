"""Faults against 3 nodes under an idempotent acks=all producer (min.insync.replicas=2), the short
deterministic selection for CI: kill -9 of a partition leader, of a follower, of the active controller
(with and without load), SIGTERM of a leader, a rolling restart with SIGTERM, two nodes killed one after
another, SIGSTOP of a leader past the session timeout, one-way and two-way partitions of a leader.
Each ends the same way (Scenario.finish): load stopped, full ISRs again, everything read back, SIGTERM
all, and the checker over the history and the replicas' segment files."""
import time

import pytest

from cluster import wait_until
from conftest import unique
from history import READ_UNCOMMITTED, History, check, record_result
from workloads import IdempotentProducer, read_back

pytestmark = pytest.mark.cluster

MIN_ISR = {"min.insync.replicas": 2, "offsets.topic.replication.factor": 3,
           "transaction.state.log.replication.factor": 3, "transaction.state.log.min.isr": 2}


class Scenario:
    def __init__(self, cluster_factory, partitions=3, faults=False, rate=400, extra_props=None):
        self.c = cluster_factory(3, faults=faults, extra_props={**MIN_ISR, **(extra_props or {})})
        self.topic = unique("fault")
        self.partitions = partitions
        self.c.create_topic(self.topic, partitions, rf=3, config={"min.insync.replicas": "2"})
        self.c.wait_topic_ready(self.topic, partitions, rf=3)
        self.h = History()
        self.w = IdempotentProducer(self.c.bootstrap, self.topic, self.h, rate=rate)
        self.session_s = int(self.c.timeouts["broker.session.timeout.ms"]) / 1000

    def start_load(self, acks=300):
        self.w.start()
        self.progress(acks, what="initial load")

    def progress(self, more=200, timeout=45.0, what="progress"):
        n0 = self.h.n_acked
        wait_until(lambda: self.h.n_acked >= n0 + more, timeout=timeout, interval=0.05,
                   what=f"{more} more acks ({what}; {n0} before)")

    def leader(self, partition=0, node=None):
        return self.c.leader_of(self.topic, partition, node=node)

    def new_leader(self, old, partition=0, timeout=30.0):
        """Bounded wait until the nodes other than `old` name another live leader."""
        others = [i for i in self.c.nodes if i != old]

        def elected():
            ls = {self.c.leader_of(self.topic, partition, node=i) for i in others}
            return len(ls) == 1 and ls.pop() not in (old, -1)

        wait_until(elected, timeout=timeout, interval=0.1, what=f"a new leader of partition {partition} (was {old})")
        return self.leader(partition, node=others[0])

    def finish(self, fault, strict_ends=True, exits_checked=True):
        self.c.net.heal()
        for nd in self.c.nodes.values():
            if nd.paused:
                nd.resume()
            if not nd.running:
                nd.start(wait=False)
        self.c.wait_ready(90)
        self.w.stop(120)
        # every node's own view, not any one's: the read-back's end offsets come from the leader its
        # Metadata names, and a node back from SIGSTOP names itself for a while (its HW frozen)
        self.c.wait_topic_settled(self.topic, self.partitions, rf=3, timeout=60)
        read_back(self.c.bootstrap, self.topic, list(range(self.partitions)), self.h, READ_UNCOMMITTED, timeout=90)
        self.c.wait_replicas_converge({self.topic})
        codes = self.c.stop_all()
        r = check(self.h, replica_dirs=self.c.data_dirs(), strict_ends=strict_ends, topics={self.topic})
        record_result(fault, "idempotent acks=all", r, producer_errors=len(self.w.errors))
        assert r.ok, r.summary()
        assert r.counts["acked"] > 0 and r.counts["partitions_compared"] == self.partitions
        # A clean stop of every node is part of the promise (a crash on SIGTERM, as bug 1's SIGBUS, fails).
        assert not exits_checked or all(code == 0 for code in codes.values()), f"exit codes on SIGTERM at the end: {codes}"
        return r, codes


def test_kill9_of_a_partition_leader_during_idempotent_produce(cluster_factory):
    s = Scenario(cluster_factory)
    s.start_load()
    old = s.leader(0)
    s.c.node(old).kill9()
    new = s.new_leader(old)
    assert new != old
    s.progress(300, what=f"after kill -9 of leader {old}")
    s.c.node(old).start(wait=False)
    s.finish("kill -9 partition leader")


def test_kill9_of_a_follower_during_idempotent_produce(cluster_factory):
    # One partition, so the victim leads nothing of the topic: only its follower role is cut.
    s = Scenario(cluster_factory, partitions=1)
    s.start_load()
    leader = s.leader(0)
    follower = next(i for i in s.c.nodes if i != leader)
    s.c.node(follower).kill9()
    s.progress(300, what=f"after kill -9 of follower {follower} (min.insync.replicas=2 of the 2 left)")
    assert s.leader(0, node=leader) == leader
    s.c.node(follower).start(wait=False)
    s.finish("kill -9 of a follower")


def test_kill9_of_the_active_controller_during_idempotent_produce(cluster_factory):
    s = Scenario(cluster_factory)
    s.start_load()
    old = s.c.active_controller()
    s.c.node(old).kill9()

    def claimed():
        """A live node whose log's last word is that it became the active controller."""
        for i, nd in s.c.nodes.items():
            log = nd.current_log() if i != old and nd.running else ""
            if log.rfind(s.c.ACTIVE) > log.rfind(s.c.NOT_ACTIVE):
                return i
        return None

    new = wait_until(claimed, timeout=30, what=f"a new active controller after kill -9 of {old}")
    assert new != old
    s.progress(300, what=f"after kill -9 of controller {old}")
    s.c.node(old).start(wait=False)
    s.finish("kill -9 of the active controller")


def test_rolling_restart_with_sigterm(cluster_factory):
    s = Scenario(cluster_factory)
    s.start_load()
    for i in list(s.c.nodes):
        code = s.c.node(i).stop(timeout=60)
        assert code == 0, f"node {i} exited {code} on SIGTERM; log:\n{s.c.node(i).log(4000)}"
        s.c.node(i).start()
        s.c.wait_ready(60)
        s.c.wait_topic_ready(s.topic, s.partitions, rf=3, timeout=60)
        s.progress(150, what=f"after the restart of node {i}")
    s.finish("rolling restart (SIGTERM)")


def test_two_nodes_crash_one_after_another(cluster_factory):
    s = Scenario(cluster_factory)
    s.start_load()
    a = s.leader(0)
    s.c.node(a).kill9()
    b = s.new_leader(a)
    s.progress(150, what=f"after kill -9 of {a}")
    # With one replica left, min.insync.replicas=2 refuses acks=all writes: nothing may be acked now
    # that the survivor alone holds, and nothing acked before may be lost.
    s.c.node(b).kill9()
    s.c.node(a).start(wait=False)
    s.c.node(b).start(wait=False)
    s.c.wait_ready(90)
    s.progress(300, timeout=90, what=f"after kill -9 of {a} then {b}, both restarted")
    s.finish("two nodes kill -9, one after another")


def test_kill9_of_the_active_controller_then_a_topic_is_created_within_15s(cluster_factory):
    c = cluster_factory(3, extra_props=MIN_ISR)
    old = c.active_controller()
    c.node(old).kill9()
    t0 = time.monotonic()
    topic = unique("after-controller")
    errors = []

    def created():
        try:
            c.create_topic(topic, partitions=3, rf=2, timeout=max(1.0, 15 - (time.monotonic() - t0)))
            return True
        except Exception as e:  # noqa: BLE001 - NOT_CONTROLLER / timeouts until a new controller is active
            errors.append(e)
            if "TOPIC_ALREADY_EXISTS" in str(e):  # an earlier attempt got through after its timeout
                return True
            raise

    wait_until(created, timeout=15, interval=0.2, what=f"a topic created after kill -9 of controller {old}")
    took = time.monotonic() - t0
    assert took < 15, f"topic creation took {took:.1f}s after kill -9 of controller {old}: {errors[-1:]!r}"
    c.wait_topic_ready(topic, 3, rf=2, timeout=15)
    new = wait_until(lambda: c.active_controller(), timeout=15, what="an active controller")
    assert new != old and new in c.nodes, f"controller {new} after killing {old}"
    c.node(old).start()
    c.wait_ready(60)
    assert c.active_controller() == new, "the restarted node took the controller back with no reason"


def test_sigterm_of_a_leader_moves_its_leaderships_and_exits_0(cluster_factory):
    # A session timeout far longer than the wait below: leaderships that move within it were moved
    # by the controlled shutdown, not by the controller fencing a broker that went silent.
    session_ms = 60000
    s = Scenario(cluster_factory, partitions=6, extra_props={"broker.session.timeout.ms": session_ms})
    s.start_load()
    victim = s.leader(0)
    led = [p for p, pm in s.c.partitions(s.topic).items() if pm.leader == victim]
    # One clean-shutdown marker per log dir, as Kafka keeps it, written once every log is closed.
    dirs = sorted(s.c.node(victim).data_dir.glob(f"{s.topic}-*"))
    marker = s.c.node(victim).data_dir / ".kafka_cleanshutdown"
    assert len(dirs) == 6 and not marker.exists(), dirs
    t0 = time.monotonic()
    code = s.c.node(victim).stop(timeout=60)
    assert code == 0, f"node {victim} exited {code} on SIGTERM; log:\n{s.c.node(victim).log(4000)}"
    log = s.c.node(victim).log(200000)
    assert "controlled shutdown did not complete" not in log, f"node {victim}'s log:\n{log[-4000:]}"
    # The next start needs no log recovery: the clean-shutdown markers are on disk.
    assert marker.exists(), f"node {victim} wrote no .kafka_cleanshutdown in its log dir on SIGTERM"
    other = next(i for i in s.c.nodes if i != victim)
    moved = wait_until(lambda: all(pm.leader not in (victim, -1) for pm in s.c.partitions(s.topic, node=other).values()),
                       timeout=10, what=f"partitions {led} led elsewhere after node {victim}'s SIGTERM")
    assert moved
    took = time.monotonic() - t0
    assert took < session_ms / 1000 / 2, f"leaderships moved only after {took:.1f}s: by fencing, not by controlled shutdown"
    s.progress(300, what=f"after SIGTERM of {victim}")
    s.c.node(victim).start()
    # Not the exit codes at the end: all three stopped at once each wait out a controlled-shutdown
    # attempt of one (60 s) session timeout for a controller that is stopping too, past stop_all's
    # 30 s; this test's own SIGTERM exit is checked above.
    s.finish("SIGTERM of a leader", exits_checked=False)


@pytest.mark.parametrize("of_controller", [False, True], ids=["leader", "leader-and-controller"])
def test_sigstop_of_a_leader_longer_than_the_session_timeout_then_sigcont(cluster_factory, of_controller):
    s = Scenario(cluster_factory)
    s.start_load()
    p, old = 0, s.leader(0)
    if of_controller:
        # The case a clean-clone run lost acked records in: the paused leader is also the active
        # controller, so the quorum elects another one meanwhile and may give the term back to it.
        old = s.c.active_controller()
        p = next((i for i in range(s.partitions) if s.leader(i) == old), None)
        if p is None:
            pytest.skip(f"the active controller {old} leads no partition of {s.topic}")
    s.c.node(old).pause()
    t0 = time.monotonic()
    s.new_leader(old, partition=p)
    s.progress(300, what=f"with leader {old} paused")
    wait_until(lambda: time.monotonic() - t0 > 2 * s.session_s, timeout=30, what="paused past 2x the session timeout")
    s.c.node(old).resume()
    # the deposed leader must rejoin as a follower (truncating what it could not commit)
    s.c.wait_topic_ready(s.topic, s.partitions, rf=3, timeout=60)
    other = next(i for i in s.c.nodes if i != old)  # (the leader may be back on `old` by preferred election)
    wait_until(lambda: s.leader(p, node=old) == s.leader(p, node=other), timeout=30,
               what=f"resumed node {old} agreeing with node {other} on the leader")
    s.progress(200, what="after SIGCONT")
    s.finish("SIGSTOP leader > session timeout, SIGCONT")


def test_read_back_through_a_deposed_leader_resumed_from_sigstop_sees_every_ack(cluster_factory):
    # What failed the SIGSTOP test above with "lost 712" (ninth session): every acked record was in
    # every replica, but the read-back ran while the resumed node still served its view from before
    # the election (the metadata quorum had no leader for ~2 s: the resumed voter's election deposed
    # it), so the reader was sent to that deposed leader and took its frozen HW as the end.
    s = Scenario(cluster_factory)
    s.start_load()
    old = s.leader(0)
    s.c.node(old).pause()
    t0 = time.monotonic()
    s.new_leader(old)
    s.progress(300, what=f"with leader {old} paused")
    wait_until(lambda: time.monotonic() - t0 > 2 * s.session_s, timeout=30, what="paused past 2x the session timeout")
    s.c.node(old).resume()
    s.w.stop(120)  # the load ends inside the resumed node's stale window
    s.c.wait_topic_settled(s.topic, s.partitions, rf=3, timeout=60)
    read_back(s.c.nodes[old].bootstrap, s.topic, list(range(s.partitions)), s.h, READ_UNCOMMITTED, timeout=90)
    r = check(s.h, topics={s.topic})
    assert r.ok, r.summary()
    assert r.counts["acked"] > 0


@pytest.mark.parametrize("one_way", [True, False], ids=["one-way", "two-way"])
def test_partition_of_a_leader_from_the_other_nodes(cluster_factory, one_way):
    s = Scenario(cluster_factory, faults=True)
    s.start_load()
    old = s.leader(0)
    others = [i for i in s.c.nodes if i != old]
    s.c.net.isolate(old, others, one_way=one_way)  # one-way: old's bytes to the others are dropped
    s.new_leader(old)
    s.progress(300, what=f"leader {old} partitioned ({'one' if one_way else 'two'}-way)")
    s.c.net.heal()
    s.finish(f"{'one' if one_way else 'two'}-way partition of a leader")
