#!/usr/bin/env python3
"""How one broker's cost grows with its partition count (issue #22), printed as curves.

For each count N (default 1, 10, 100, 1000, 10000) a fresh broker with its own data dir and a free
port is started, and the script measures:

- create: CreateTopics of N partitions (topics of up to --per-topic partitions each) until every
  topic is answered, wall time and broker CPU (utime + stime from /proc/PID/stat);
- idle: RSS, open file descriptors and memory mappings of the broker with the N partitions idle;
- metadata: a Metadata request for all topics, wall time (best of 3);
- restart (clean): SIGTERM, start again, time until Metadata lists all N partitions;
- restart (kill -9): the same after SIGKILL, which makes the broker recover its logs;
- shutdown: how long the SIGTERM before the clean restart takes until the process exits.

    python3 benches/scale.py --broker-bin target/release/josef-broker [--counts 1,10,100,1000]
        [--per-topic 100] [--out benches/results/scale] [--broker-opt KEY=VALUE ...]

Prints a table and writes `<out>.csv` and one SVG plot per metric (`<out>-<metric>.svg`, log-log).
Needs confluent-kafka (the e2e venv has it: `.venv/bin/python benches/scale.py ...`). Numbers are
from one noisy shared machine: compare curves in one run, not across runs.
"""

import argparse
import csv
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

from confluent_kafka.admin import AdminClient, NewTopic

CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of the whole line; 12 and 13 after the command name.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def mappings(pid):
    """Memory mappings of the process (Linux allows vm.max_map_count, 65,530 by default)."""
    with open(f"/proc/{pid}/maps") as f:
        return sum(1 for _ in f)


class Broker:
    def __init__(self, binary, data_dir, port, opts=()):
        self.binary, self.data_dir, self.port, self.opts = binary, data_dir, port, list(opts)
        self.proc = None

    def start(self):
        log = open(os.path.join(self.data_dir, "..", "broker.log"), "ab")
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--listeners", f"PLAINTEXT://127.0.0.1:{self.port}",
                "--log-dirs", self.data_dir,
                "-o", "auto.create.topics.enable=false",
                # The bench measures partitions, not the internal topics' creation.
                "-o", "offsets.topic.num.partitions=1",
                "-o", "transaction.state.log.num.partitions=1",
            ] + [a for o in self.opts for a in ("-o", o)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        return time.monotonic()

    def stop(self, sig):
        """Seconds until the process exited."""
        t = time.monotonic()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return time.monotonic() - t

    def admin(self):
        return AdminClient({"bootstrap.servers": f"127.0.0.1:{self.port}", "socket.timeout.ms": 300000, "log_level": 0})


def partitions_listed(admin, timeout):
    md = admin.list_topics(timeout=timeout)
    return sum(len(t.partitions) for name, t in md.topics.items() if name.startswith("scale-"))


def wait_serving(broker, expected, limit_s):
    """Seconds from now until Metadata lists `expected` partitions (bounded by `limit_s`)."""
    start = time.monotonic()
    # librdkafka backs off exponentially after refused connections, which would add seconds that
    # are the client's, not the broker's: wait for the listener with plain connects first.
    while time.monotonic() - start < limit_s:
        if broker.proc.poll() is not None:
            raise RuntimeError(f"broker exited with {broker.proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", broker.port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.01)
    admin = broker.admin()
    while time.monotonic() - start < limit_s:
        if broker.proc.poll() is not None:
            raise RuntimeError(f"broker exited with {broker.proc.returncode}")
        try:
            if partitions_listed(admin, timeout=5) >= expected:
                return time.monotonic() - start
        except Exception:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"not serving {expected} partitions after {limit_s} s")


def measure(binary, n, per_topic, limit_s, opts=()):
    root = tempfile.mkdtemp(prefix=f"josef-scale-{n}-")
    data = os.path.join(root, "data")
    os.makedirs(data)
    broker = Broker(binary, data, free_port(), opts)
    try:
        started = broker.start()
        wait_serving(broker, 0, limit_s)
        row = {"partitions": n, "start_s": time.monotonic() - started}
        admin = broker.admin()
        topics, left, i = [], n, 0
        while left > 0:
            p = min(per_topic, left)
            topics.append(NewTopic(f"scale-{i:05d}", num_partitions=p, replication_factor=1))
            left, i = left - p, i + 1
        cpu0, t0 = cpu_seconds(broker.proc.pid), time.monotonic()
        for batch in range(0, len(topics), 100):
            futures = admin.create_topics(topics[batch:batch + 100], operation_timeout=limit_s)
            for f in futures.values():
                f.result()
        wait_serving(broker, n, limit_s)
        row["create_s"] = time.monotonic() - t0
        row["create_cpu_s"] = cpu_seconds(broker.proc.pid) - cpu0
        row["idle_rss_mib"] = rss_mib(broker.proc.pid)
        row["idle_fds"] = open_fds(broker.proc.pid)
        row["idle_maps"] = mappings(broker.proc.pid)
        best = math.inf
        for _ in range(3):
            t = time.monotonic()
            assert partitions_listed(admin, timeout=limit_s) == n
            best = min(best, time.monotonic() - t)
        row["metadata_s"] = best
        row["shutdown_s"] = broker.stop(signal.SIGTERM)
        broker.start()
        row["restart_clean_s"] = wait_serving(broker, n, limit_s)
        broker.stop(signal.SIGKILL)
        broker.start()
        row["restart_kill9_s"] = wait_serving(broker, n, limit_s)
        row["restart_kill9_cpu_s"] = cpu_seconds(broker.proc.pid)
        row["restart_rss_mib"] = rss_mib(broker.proc.pid)
        broker.stop(signal.SIGTERM)
    finally:
        # A failed count must not leave its broker running nor its data behind.
        if broker.proc is not None and broker.proc.poll() is None:
            broker.proc.kill()
            broker.proc.wait()
        subprocess.run(["rm", "-rf", root], check=False)
    return row


METRICS = [
    ("create_s", "CreateTopics wall time (s)"),
    ("create_cpu_s", "broker CPU for CreateTopics (s)"),
    ("idle_rss_mib", "idle RSS (MiB)"),
    ("idle_fds", "open files, idle"),
    ("idle_maps", "memory mappings, idle"),
    ("metadata_s", "Metadata for all topics (s)"),
    ("restart_clean_s", "serving again after SIGTERM (s)"),
    ("restart_kill9_s", "serving again after kill -9 (s)"),
    ("restart_kill9_cpu_s", "broker CPU until serving after kill -9 (s)"),
    ("shutdown_s", "SIGTERM until the broker exited (s)"),
]


def svg_plot(rows, key, title, path):
    """A log-log line plot of `key` against the partition count, as a small standalone SVG."""
    pts = [(r["partitions"], r[key]) for r in rows if r[key] > 0]
    if len(pts) < 2:
        return
    w, h, m = 480, 300, 50
    lx = [math.log10(x) for x, _ in pts]
    ly = [math.log10(y) for _, y in pts]
    x0, x1 = min(lx), max(lx)
    y0, y1 = math.floor(min(ly)), math.ceil(max(ly))
    if y1 == y0:
        y1 += 1

    def sx(v):
        return m + (v - x0) / (x1 - x0 or 1) * (w - 2 * m)

    def sy(v):
        return h - m - (v - y0) / (y1 - y0) * (h - 2 * m)

    line = " ".join(f"{sx(a):.1f},{sy(b):.1f}" for a, b in zip(lx, ly))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
        f'<text x="{w / 2}" y="18" text-anchor="middle" font-size="13">{title}</text>',
        f'<line x1="{m}" y1="{h - m}" x2="{w - m}" y2="{h - m}" stroke="black"/>',
        f'<line x1="{m}" y1="{m}" x2="{m}" y2="{h - m}" stroke="black"/>',
        f'<polyline points="{line}" fill="none" stroke="#1f77b4" stroke-width="2"/>',
    ]
    for (x, y), a, b in zip(pts, lx, ly):
        parts.append(f'<circle cx="{sx(a):.1f}" cy="{sy(b):.1f}" r="3" fill="#1f77b4"/>')
        parts.append(f'<text x="{sx(a):.1f}" y="{h - m + 15}" text-anchor="middle">{x}</text>')
        parts.append(f'<text x="{sx(a) + 4:.1f}" y="{sy(b) - 6:.1f}">{y:.3g}</text>')
    for e in range(y0, y1 + 1):
        parts.append(f'<text x="{m - 6}" y="{sy(e) + 4:.1f}" text-anchor="end">1e{e}</text>')
    parts.append(f'<text x="{w / 2}" y="{h - 12}" text-anchor="middle">partitions (log scale)</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker-bin", default="target/release/josef-broker")
    ap.add_argument("--counts", default="1,10,100,1000,10000")
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--limit-s", type=float, default=600, help="bound on every wait")
    ap.add_argument("--out", default="benches/results/scale")
    ap.add_argument("--broker-opt", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker setting for every start (repeatable)")
    args = ap.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    rows = []
    cols = ["partitions", "start_s"] + [k for k, _ in METRICS] + ["restart_rss_mib"]
    print(" ".join(f"{c:>16}" for c in cols), flush=True)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    for n in counts:
        try:
            row = measure(os.path.abspath(args.broker_bin), n, args.per_topic, args.limit_s, args.broker_opt)
        except Exception as e:
            print(f"{n} partitions failed: {e}", file=sys.stderr, flush=True)
            break
        rows.append(row)
        print(" ".join(f"{row[c]:>16.3f}" if isinstance(row[c], float) else f"{row[c]:>16}" for c in cols), flush=True)
        # Written after every count: a long last count that fails or is stopped keeps the others.
        with open(args.out + ".csv", "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=cols)
            wr.writeheader()
            wr.writerows(rows)
        for key, title in METRICS:
            svg_plot(rows, key, title, f"{args.out}-{key}.svg")
    print(f"wrote {args.out}.csv and {args.out}-*.svg", file=sys.stderr)


if __name__ == "__main__":
    main()
