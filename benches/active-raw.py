#!/usr/bin/env python3
"""Broker CPU per Produce request against the number of partitions the requests go to, with the
client taken out (issue #22): raw Produce v3 requests over one socket, one at a time, each one
batch of R records of 100 B to the next partition round-robin over P partitions. Every point gets
a fresh broker (its own data dir and port); before measuring, every partition is written until
it holds 8 KiB and three batches, so that its segment's files and index files exist (their creation is a one-time
cost per partition; the bench measures the steady state).

    python3 benches/active-raw.py BROKER_BIN [--partitions 1,10000] [--records-per-batch 1,10,200]
        [--requests 40000] [--rounds 3] [--out benches/results/scale-active-raw]

Prints, per (R, P), the broker's CPU (its process CPU clock, ns) per request and per record,
pooled over the rounds, and the ratio to P = 1 at the same R. A librdkafka producer cannot give
this comparison: it sends one partition per Produce request and sends a partition's batch once
linger.ms or batch.num.messages is reached, so both its batch size and its request rate change with
the partition count (see docs/performance.md, "Active partitions at equal batches")."""
import argparse
import csv
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scale  # noqa: E402


def measure(binary, partitions, records, requests, rounds, limit_s):
    root = tempfile.mkdtemp(prefix=f"josef-active-raw-{partitions}-")
    data = os.path.join(root, "data")
    os.makedirs(data)
    broker = scale.Broker(binary, data, scale.free_port(), ())
    try:
        broker.start()
        scale.wait_serving(broker, 0, limit_s)
        admin = broker.admin()
        new = scale.scale_topics(partitions, 100)
        tps = [(t.topic, k) for t in new for k in range(t.num_partitions)]
        for b in range(0, len(new), 100):
            for f in admin.create_topics(new[b:b + 100], operation_timeout=limit_s).values():
                f.result()
        scale.wait_serving(broker, partitions, limit_s)
        batch = scale.record_batch(records)
        frames = [scale.produce_request_partitions(t.encode(), 0, [p], batch) for t, p in tps]
        sock = socket.create_connection(("127.0.0.1", broker.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def send(n, start):
            for i in range(start, start + n):
                sock.sendall(frames[i % partitions])
                resp = scale.recv_response(sock)
                if scale.produce_error(resp, tps[i % partitions][0].encode()) != 0:
                    raise RuntimeError(f"produce failed: {resp.hex()}")
            return start + n

        # A partition's index files are created by its first index entry, which the first append
        # after `index.interval.bytes` (4 KiB) adds: at least 8 KiB and three batches each.
        warmup = partitions * max(3, -(-8192 // len(batch)))
        at = send(warmup, 0)
        pid = broker.proc.pid
        c0, t0 = scale.cpu_seconds(pid), time.monotonic()
        for _ in range(rounds):
            at = send(requests, at)
        cpu, wall = scale.cpu_seconds(pid) - c0, time.monotonic() - t0
        sock.close()
        n = requests * rounds
        row = {"records_per_batch": records, "partitions": partitions, "requests": n,
               "us_per_request": cpu * 1e6 / n, "us_per_record": cpu * 1e6 / n / records,
               "requests_per_s": n / wall, "warmup_requests": warmup}
        broker.stop(signal.SIGTERM)
        return row
    finally:
        if broker.proc is not None and broker.proc.poll() is None:
            broker.proc.kill()
            broker.proc.wait()
        subprocess.run(["rm", "-rf", root], check=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("broker_bin")
    ap.add_argument("--partitions", default="1,10000")
    ap.add_argument("--records-per-batch", default="1,10,200")
    ap.add_argument("--requests", type=int, default=40000, help="requests per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit-s", type=float, default=600)
    ap.add_argument("--out", default="benches/results/scale-active-raw")
    args = ap.parse_args()
    binary = os.path.abspath(args.broker_bin)
    cols = ["records_per_batch", "partitions", "requests", "us_per_request", "us_per_record",
            "ratio_to_1", "requests_per_s", "warmup_requests"]
    print(" ".join(f"{c:>17}" for c in cols), flush=True)
    rows = []
    for r in [int(x) for x in args.records_per_batch.split(",")]:
        base = None
        for p in [int(x) for x in args.partitions.split(",")]:
            row = measure(binary, p, r, args.requests, args.rounds, args.limit_s)
            if p == 1:
                base = row["us_per_record"]
            row["ratio_to_1"] = row["us_per_record"] / base if base else float("nan")
            rows.append(row)
            print(" ".join(f"{row[c]:>17.3f}" if isinstance(row[c], float) else f"{row[c]:>17}" for c in cols),
                  flush=True)
            with open(args.out + ".csv", "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=cols)
                w.writeheader()
                w.writerows(rows)
    plot(rows, args.out)
    print(f"wrote {args.out}.csv and {args.out}-r*.svg")


def plot(rows, out):
    """One log-log SVG per batch size: broker CPU per record against the partition count."""
    for r in sorted({row["records_per_batch"] for row in rows}):
        scale.svg_plot([row for row in rows if row["records_per_batch"] == r], "us_per_record",
                       f"broker CPU per record, {r} record(s) per request (us)", f"{out}-r{r}.svg")


if __name__ == "__main__":
    main()
