#!/usr/bin/env python3
"""How a 3-node cluster's cost grows with its partition count (issue #22, "the same curves in a 3-node
cluster"): leader count, ISR maintenance and replica fetchers.

For each count N (partitions in the cluster, replication factor 3, so every node holds N replicas) a
fresh cluster of three combined broker+controller nodes is started with the test bed's code
(tests/e2e/cluster.py, the cluster contract of docs/cluster.md) and Kafka's default timeouts
(`replica.lag.time.max.ms` 30 s, `broker.session.timeout.ms` 9 s; `--fast` for the tests' lowered
ones), and the script measures:

- create: CreateTopics of N partitions (topics of up to --per-topic partitions each) until one
  node's Metadata shows every partition with a leader and all three replicas in its ISR; wall time
  and the CPU of the three nodes together;
- leaders: the leader count per node (the controller's placement), and the spread max/min;
- idle: over --idle-s seconds with nothing produced, CPU of each node (replica fetchers parked on
  their leaders, ISR checks, heartbeats), RSS and open descriptors per node, and how many
  partitions lost a replica from their ISR meanwhile (ISR maintenance that must not flap);
- produce: --records records of 100 B with librdkafka (acks=all) spread round-robin over all N
  partitions, then the wait until every follower caught up (every ISR full): CPU of the three nodes
  per record, replication included;
- rejoin: one follower node (not the active controller) stopped with SIGTERM and started again:
  seconds until every partition's ISR holds all three replicas again, and the leaders moved back.

    .venv/bin/python benches/scale_cluster.py --broker-bin target/release/josef-broker \\
        --counts 100,1000,10000,30000 [--per-topic 100] [--records 100000] [--out PATH]

Prints a table and writes `<out>.csv` and one SVG plot per metric (default benches/results/
scale-cluster). Every node is stopped by PID and its directory removed at the end of its count
(`--keep`: left in place, for the node logs).
Numbers are from one noisy shared machine: compare curves in one run, not across runs.
"""

import argparse
import csv
import os
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "benches"))

from confluent_kafka import Producer  # noqa: E402

from cluster import Cluster  # noqa: E402
from scale import cpu_seconds, open_fds, rss_mib, scale_topics, svg_plot  # noqa: E402


def partition_states(c, node_id, limit_s):
    """{(topic, partition): (leader, isr count)} of the scale topics in one node's Metadata."""
    md = c.metadata(node_id, timeout=limit_s)
    return {(name, p.id): (p.leader, len(p.isrs))
            for name, t in md.topics.items() if name.startswith("scale-")
            for p in t.partitions.values()}


def wait_full(c, node_id, n, limit_s, what):
    """Seconds until `node_id`'s Metadata shows n partitions, each led and with a full ISR."""
    start = time.monotonic()
    last = {}
    while time.monotonic() - start < limit_s:
        try:
            last = partition_states(c, node_id, 30)
            if len(last) >= n and all(leader >= 0 and isr == 3 for leader, isr in last.values()):
                return time.monotonic() - start, last
        except Exception:  # noqa: BLE001 - a node busy with the create answers late; try again
            pass
        time.sleep(0.2)
    short = sum(1 for leader, isr in last.values() if leader < 0 or isr < 3)
    raise RuntimeError(f"{what}: not every partition led with a full ISR after {limit_s} s "
                       f"({len(last)} listed, {short} short)")


def cluster_cpu(c):
    return sum(cpu_seconds(nd.pid) for nd in c.nodes.values())


def measure(binary, n, per_topic, limit_s, idle_s, records, fast, keep=False, rejoin=True):
    root = tempfile.mkdtemp(prefix=f"josef-scale-cluster-{n}-")
    # The internal topics are not what is measured; the rest are Kafka's defaults unless --fast.
    props = {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
             "auto.create.topics.enable": "false"}
    c = Cluster(3, root, extra_props=props, timeouts=None if fast else {}, binary=binary)
    row = {"partitions": n}
    try:
        t = time.monotonic()
        c.start(timeout=limit_s)
        row["start_s"] = time.monotonic() - t
        admin = c.admin()
        topics = scale_topics(n, per_topic, rf=3)
        cpu0, t0 = cluster_cpu(c), time.monotonic()
        for batch in range(0, len(topics), 50):
            futures = admin.create_topics(topics[batch:batch + 50], operation_timeout=limit_s,
                                          request_timeout=limit_s)
            for f in futures.values():
                f.result()
        _, states = wait_full(c, 1, n, limit_s, "create")
        row["create_s"] = time.monotonic() - t0
        row["create_cpu_s"] = cluster_cpu(c) - cpu0
        leaders = [sum(1 for leader, _ in states.values() if leader == i) for i in (1, 2, 3)]
        row["leaders"] = "/".join(str(x) for x in leaders)
        row["leader_spread"] = max(leaders) / max(1, min(leaders))

        # Idle: the replica fetchers park on their leaders; nothing should leave an ISR.
        cpu_idle0 = {i: cpu_seconds(nd.pid) for i, nd in c.nodes.items()}
        t = time.monotonic()
        shrunk = set()
        while time.monotonic() - t < idle_s:
            time.sleep(min(5.0, idle_s))
            for key, (_, isr) in partition_states(c, 1, limit_s).items():
                if isr < 3:
                    shrunk.add(key)
        span = time.monotonic() - t
        if keep:  # to find the idle window in the node logs
            print(f"# {n}: idle window ended {time.strftime('%H:%M:%S', time.gmtime())} UTC after {span:.1f} s, "
                  f"{len(shrunk)} partitions shrunk", file=sys.stderr, flush=True)
        idle = [100.0 * (cpu_seconds(nd.pid) - cpu_idle0[i]) / span for i, nd in c.nodes.items()]
        row["idle_cpu_pct_max"] = max(idle)
        row["idle_cpu_pct"] = "/".join(f"{x:.1f}" for x in idle)
        row["idle_isr_shrunk"] = len(shrunk)
        rss = [rss_mib(nd.pid) for nd in c.nodes.values()]
        row["rss_mib_max"] = max(rss)
        row["fds_max"] = max(open_fds(nd.pid) for nd in c.nodes.values())

        # Produce, acks=all, spread over every partition; replication included in the CPU.
        if records:
            names = [tp.topic for tp in topics]
            sizes = [tp.num_partitions for tp in topics]
            prod = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 5,
                             "queue.buffering.max.messages": 1_000_000, "log_level": 0})
            value = b"x" * 100
            cpu0, t0 = cluster_cpu(c), time.monotonic()
            k = 0
            for r in range(records):
                ti = k % len(names)
                prod.produce(names[ti], value, partition=(k // len(names)) % sizes[ti])
                k += 1
                if r % 10_000 == 0:
                    prod.poll(0)
            left = prod.flush(limit_s)
            del prod  # its threads would go on reconnecting to the nodes stopped below
            if left:
                raise RuntimeError(f"{left} records not acknowledged after {limit_s} s")
            wait_full(c, 1, n, limit_s, "produce")
            row["produce_s"] = time.monotonic() - t0
            row["produce_us_per_rec"] = 1e6 * (cluster_cpu(c) - cpu0) / records

        # Rejoin: a follower node (not the active controller) restarted; its ISRs must fill again.
        if not rejoin:
            return row
        ctrl = c.active_controller()
        victim = next(i for i in (3, 2, 1) if i != ctrl)
        probe = next(i for i in (1, 2, 3) if i != victim)
        c.node(victim).stop(timeout=limit_s)
        t = time.monotonic()
        c.node(victim).start(timeout=limit_s)
        wait_full(c, probe, n, limit_s, "rejoin")
        row["rejoin_s"] = time.monotonic() - t
        for nd in c.nodes.values():
            nd.stop(timeout=limit_s)
    finally:
        c.close()
        if keep:
            print(f"# kept {root} (node logs: {root}/node*/node.log)", file=sys.stderr, flush=True)
        else:
            os.system(f"rm -rf '{root}'")
    return row


METRICS = [
    ("create_s", "CreateTopics until every ISR is full, RF 3 (s)"),
    ("create_cpu_s", "CPU of the 3 nodes for the create (s)"),
    ("idle_cpu_pct_max", "idle CPU of the busiest node (% of a core)"),
    ("rss_mib_max", "RSS of the largest node, idle (MiB)"),
    ("produce_us_per_rec", "CPU of the 3 nodes per record, acks=all (µs)"),
    ("rejoin_s", "a restarted follower back in every ISR (s)"),
]

COLS = ["partitions", "start_s", "create_s", "create_cpu_s", "leaders", "leader_spread", "idle_cpu_pct",
        "idle_cpu_pct_max", "idle_isr_shrunk", "rss_mib_max", "fds_max", "produce_s", "produce_us_per_rec",
        "rejoin_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker-bin", default="target/release/josef-broker")
    ap.add_argument("--counts", default="100,1000,10000,30000")
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--records", type=int, default=100_000, help="records of the produce step (0: skip it)")
    ap.add_argument("--idle-s", type=float, default=20.0)
    ap.add_argument("--limit-s", type=float, default=900, help="bound on every wait")
    ap.add_argument("--fast", action="store_true", help="the tests' lowered timeouts instead of Kafka's")
    ap.add_argument("--out", default="benches/results/scale-cluster")
    ap.add_argument("--no-rejoin", action="store_true", help="skip the rejoin step")
    ap.add_argument("--keep", action="store_true", help="keep each count's node directories (logs, data)")
    args = ap.parse_args()
    binary = os.path.abspath(args.broker_bin)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    print(f"# 3-node cluster, RLIMIT_NOFILE {soft}/{hard} (the nodes inherit it), "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    print(" ".join(f"{c:>14}" for c in COLS), flush=True)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    rows = []
    for n in (int(x) for x in args.counts.split(",")):
        try:
            row = measure(binary, n, args.per_topic, args.limit_s, args.idle_s, args.records, args.fast,
                          args.keep, not args.no_rejoin)
        except Exception as e:  # noqa: BLE001 - the counts before stay written
            print(f"{n} partitions failed: {e}", file=sys.stderr, flush=True)
            break
        rows.append(row)
        print(" ".join(f"{row.get(k, ''):>14.3f}" if isinstance(row.get(k), float) else f"{row.get(k, ''):>14}"
                       for k in COLS) + f"   (load average {os.getloadavg()[0]:.2f})", flush=True)
        with open(args.out + ".csv", "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=COLS)
            wr.writeheader()
            wr.writerows(rows)
        for key, title in METRICS:
            svg_plot(rows, key, title, f"{args.out}-{key}.svg")
    print(f"wrote {args.out}.csv and {args.out}-*.svg", file=sys.stderr)


if __name__ == "__main__":
    main()
