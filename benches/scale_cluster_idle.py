#!/usr/bin/env python3
"""Idle CPU of a 3-node cluster holding N partitions (issue #22), from the nodes' CPU clocks.

Starts a cluster with `scale_cluster.py`'s settings (Kafka's default timeouts, internal topics of one
partition), creates N partitions of replication factor 3 in topics of 100, waits until every ISR is
full, lets it settle, then reads each node's process CPU clock (nanoseconds, `clock_gettime` on
the clock of another process) over a span and prints the CPU per node in % of a core. Compare
builds by running them one after another on a quiet machine:

    ulimit -n 20000
    for b in before after; do .venv/bin/python benches/scale_cluster_idle.py /tmp/$b 30000; done
"""
import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benches"))
os.chdir(REPO)

import scale_cluster as sc  # noqa: E402


def cpu_clock_s(pid):
    # CLOCK_PROCESS_CPUTIME of another process: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED).
    return time.clock_gettime(((~pid) << 3) | 2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("partitions", type=int)
    ap.add_argument("--settle-s", type=float, default=20.0)
    ap.add_argument("--span-s", type=float, default=40.0)
    ap.add_argument("--limit-s", type=float, default=900.0)
    ap.add_argument("--perf", default=None, metavar="OUT",
                    help="also `perf record -g` node 1 during the span into OUT (it adds CPU of its own)")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix=f"josef-idle-{args.partitions}-")
    props = {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
             "auto.create.topics.enable": "false"}
    c = sc.Cluster(3, root, extra_props=props, timeouts={}, binary=args.binary)
    try:
        c.start(timeout=args.limit_s)
        admin = c.admin()
        topics = sc.scale_topics(args.partitions, 100, rf=3)
        t0 = time.monotonic()
        for b in range(0, len(topics), 50):
            for f in admin.create_topics(topics[b:b + 50], operation_timeout=args.limit_s,
                                         request_timeout=args.limit_s).values():
                f.result()
        sc.wait_full(c, 1, args.partitions, args.limit_s, "create")
        create_s = time.monotonic() - t0
        pids = [nd.pid for nd in c.nodes.values()]
        time.sleep(args.settle_s)
        perf = None
        if args.perf:
            import signal
            import subprocess
            perf = subprocess.Popen(["perf", "record", "-F", "499", "-g", "-p", str(pids[0]), "-o", args.perf],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        c0, t = [cpu_clock_s(p) for p in pids], time.monotonic()
        time.sleep(args.span_s)
        c1, span = [cpu_clock_s(p) for p in pids], time.monotonic() - t
        if perf is not None:
            perf.send_signal(signal.SIGINT)
            perf.wait(30)
        idle = "/".join(f"{100 * (b - a) / span:.2f}" for a, b in zip(c0, c1))
        print(f"RESULT bin={args.binary} partitions={args.partitions} create_s={create_s:.1f} "
              f"idle_cpu_pct={idle}", flush=True)
    finally:
        c.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
