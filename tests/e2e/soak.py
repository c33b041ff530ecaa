"""The long run: a seeded random schedule of faults against a cluster under the workloads, checked at the
end. `scripts/cluster.py soak --seed S --duration D [--nodes 3] [--dir DIR]`.

Faults (chosen by random.Random(seed); each held a few seconds, then healed, then the cluster must be
ready again within a bound): kill -9 of a partition leader, of a follower, of the active controller;
SIGSTOP of a leader for longer than broker.session.timeout.ms, then SIGCONT; one-way and two-way
partitions of a leader from the other nodes; delayed links; a rolling restart with SIGTERM; two nodes
crashing one after the other. Workloads: idempotent acks=all producer, transactional producer
(commit/abort), a consumer group with commits. At the end: heal, every node up, quiescent (full ISRs),
read back read_uncommitted and read_committed, SIGTERM all, compare the replicas' segment files.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import threading
import time
from pathlib import Path

from cluster import Cluster, wait_until
from history import READ_COMMITTED, READ_UNCOMMITTED, History, check, record_result
from workloads import GroupConsumer, IdempotentProducer, TransactionalProducer, read_back

FAULTS = ("kill9_leader", "kill9_follower", "kill9_controller", "sigstop_leader", "partition_leader_one_way",
          "partition_leader_two_way", "delay_links", "rolling_sigterm", "two_crashes")


def native_stacks(path: Path, log):
    """Every native thread's stack of this process (librdkafka's threads included) into `path`, with
    gdb when it is installed: a client hung inside librdkafka shows there what its Python frame cannot."""
    gdb = shutil.which("gdb")
    if gdb is None:
        log("gdb not installed: no native stacks of the hung client")
        return
    try:
        out = subprocess.run([gdb, "-p", str(os.getpid()), "-batch", "-nx", "-ex", "thread apply all bt"],
                             capture_output=True, text=True, timeout=120)
        path.write_text(out.stdout + out.stderr)
        log(f"native stacks of the hung client: {path}")
    except (OSError, subprocess.SubprocessError) as e:
        log(f"no native stacks: {e!r}")


def leader_and_followers(c: Cluster, topic, partition=0):
    ps = c.partitions(topic)
    p = ps[partition]
    return p.leader, [r for r in p.replicas if r != p.leader]


def apply_fault(c: Cluster, kind, rng: random.Random, topic, hold, log, bad_exits=None):
    session_s = int(c.timeouts.get("broker.session.timeout.ms", "9000")) / 1000
    pause = threading.Event()  # never set: Event.wait(hold) is the fault's duration, not a wait for a state
    part = rng.randrange(len(c.partitions(topic)))
    leader, followers = leader_and_followers(c, topic, part)
    others = [i for i in c.nodes if i != leader]
    log(f"fault {kind} (partition {part}, leader {leader}), hold {hold:.1f}s")
    if kind == "kill9_leader":
        c.node(leader).kill9()
        pause.wait(hold)
        c.node(leader).start()
    elif kind == "kill9_follower":
        f = rng.choice(followers or others)
        c.node(f).kill9()
        pause.wait(hold)
        c.node(f).start()
    elif kind == "kill9_controller":
        ctl = c.active_controller()
        c.node(ctl).kill9()
        pause.wait(hold)
        c.node(ctl).start()
    elif kind == "sigstop_leader":
        c.node(leader).pause()
        pause.wait(max(hold, session_s * 1.5))
        c.node(leader).resume()
    elif kind == "partition_leader_one_way":
        c.net.isolate(leader, others, one_way=True)
        pause.wait(hold)
        c.net.heal()
    elif kind == "partition_leader_two_way":
        c.net.isolate(leader, others)
        pause.wait(hold)
        c.net.heal()
    elif kind == "delay_links":
        for i in c.nodes:
            for j in c.nodes:
                if i != j:
                    c.net.delay(i, j, rng.uniform(0.05, 0.3), one_way=True)
        pause.wait(hold)
        c.net.heal()
    elif kind == "rolling_sigterm":
        for i in list(c.nodes):
            code = c.node(i).stop()
            if code != 0:
                log(f"node {i} exited {code} on SIGTERM")
                if bad_exits is not None:
                    bad_exits.append((i, code))
            c.node(i).start()
            c.wait_ready(60)
    elif kind == "two_crashes":
        a, b = rng.sample(list(c.nodes), 2)
        c.node(a).kill9()
        pause.wait(hold / 2)
        c.node(b).kill9()
        pause.wait(hold / 2)
        c.node(a).start(wait=False)
        c.node(b).start(wait=False)
    else:
        raise ValueError(kind)


def soak(seed: int, duration: float, nodes: int, base_dir, out=None, log=print) -> dict:
    rng = random.Random(seed)
    c = Cluster(nodes, base_dir, faults=True, extra_props={"min.insync.replicas": min(2, nodes)})
    h = History()
    counts = {k: 0 for k in FAULTS}
    workloads = []
    unrecovered, bad_exits, hung = [], [], []  # each fails the run, whatever the checker says
    try:
        c.start(timeout=120)
        topic, ttopic = f"soak-{seed}", f"soak-txn-{seed}"
        c.create_topic(topic, partitions=6, rf=nodes, config={"min.insync.replicas": str(min(2, nodes))})
        c.create_topic(ttopic, partitions=3, rf=nodes, config={"min.insync.replicas": str(min(2, nodes))})
        c.wait_topic_ready(topic, 6, nodes)
        c.wait_topic_ready(ttopic, 3, nodes)
        bs = c.bootstrap
        workloads = [IdempotentProducer(bs, topic, h, name=f"idem{seed}", rate=300, client_debug="eos"),
                     TransactionalProducer(bs, ttopic, h, name=f"txn{seed}", seed=seed, client_debug="eos"),
                     GroupConsumer(bs, topic, f"soak-group-{seed}", h, client_debug="cgrp")]
        for w in workloads:
            w.start()
        end = time.monotonic() + duration
        while time.monotonic() < end:
            kind = rng.choice(FAULTS)
            try:
                apply_fault(c, kind, rng, topic, rng.uniform(2, 8), log, bad_exits)
                counts[kind] += 1
                c.wait_ready(90)
                c.wait_topic_ready(topic, 6, nodes, timeout=90)
            except Exception as e:  # noqa: BLE001 - the run goes on; the failure is part of the result
                log(f"fault {kind}: the cluster did not recover: {e!r}")
                h.note(f"{kind}: no recovery: {e!r}")
                unrecovered.append(f"{kind}: {e!r}")
                c.net.heal()
                for nd in c.nodes.values():
                    if nd.paused:
                        nd.resume()
                    if not nd.running:
                        nd.start(wait=False)
                c.wait_ready(120)
        # A workload that does not stop is hung inside its client (a librdkafka call that does not
        # return): the run fails, but the history is still read back and checked (the group
        # consumer's librdkafka cgrp debug lines are in the run's stderr).
        for w in workloads:
            try:
                w.stop(120)
            except AssertionError as e:
                log(f"{e}")
                hung.append(w.name)
                native_stacks(Path(c.base_dir) / f"hung-{w.name}-stacks.txt", log)
        died = [w.name for w in workloads if w.died]
        for w in workloads:
            if w.died:
                log(f"workload {w.name} ended by itself before the run's end: {w.errors[:3]}")
        c.net.heal()
        c.wait_topic_ready(topic, 6, nodes, timeout=120)
        c.wait_topic_ready(ttopic, 3, nodes, timeout=120)
        read_back(bs, topic, list(range(6)), h, READ_UNCOMMITTED, timeout=120)
        read_back(bs, ttopic, list(range(3)), h, READ_UNCOMMITTED, timeout=120)
        read_back(bs, ttopic, list(range(3)), h, READ_COMMITTED, timeout=120)
        c.wait_replicas_converge({topic, ttopic}, timeout=60)
        exit_codes = c.stop_all()
        report = check(h, replica_dirs=c.data_dirs(), strict_ends=True, topics={topic, ttopic})
        result = {"seed": seed, "duration": duration, "nodes": nodes, "faults": counts, "counts": report.counts,
                  "anomalies": {k: len(v) for k, v in report.anomalies.items() if v},
                  "workload_errors": {w.name: w.errors[:10] for w in workloads if w.errors},
                  "exit_codes_at_end": exit_codes, "unrecovered_faults": unrecovered,
                  "nonzero_sigterm_exits": bad_exits, "hung_workloads": hung, "died_workloads": died,
                  "ok": report.ok and not unrecovered and not bad_exits and not hung and not died
                  and all(code == 0 for code in exit_codes.values())}
        log(report.summary())
        record_result(f"soak seed {seed}, {duration:.0f}s: " + ", ".join(f"{k} x{v}" for k, v in counts.items() if v),
                      "idempotent + txn + group", report)
        if out:
            Path(out).write_text(json.dumps(result, indent=1))
            h.dump(Path(out).with_suffix(".history.json"))
        return result
    finally:
        for w in workloads:
            w.stop_event.set()
        c.close()
