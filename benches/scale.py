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
- shutdown: how long the SIGTERM before the clean restart takes until the process exits;
- data_entries: entries in the log dir after CreateTopics (partition directories and the broker's
  files); with `--one-record-each`, one record is then produced to every partition (fill_s), so
  the idle and restart figures are of logs holding data.

    python3 benches/scale.py --broker-bin target/release/josef-broker [--counts 1,10,100,1000]
        [--per-topic 100] [--out benches/results/scale] [--broker-opt KEY=VALUE ...]

Two more curves, each with a fresh broker per count:

- `--curve connections --counts 1,100,1000,10000`: that many plain TCP connections held open idle
  (broker RSS per connection, descriptors, idle CPU), then each sends ApiVersions, Metadata and one
  Produce (all answered?), and the p50/p99 of single produces on a separate connection before and
  while they are open. The client needs a descriptor per connection too (`ulimit -n`).
- `--curve active --counts 1,100,1000,10000 [--records 200000] [--rounds 2] [--producer-config K=V]`:
  records of 100 B produced with librdkafka spread round-robin over all N partitions (round 1
  includes each partition's first write; later rounds are pooled, and the last is also reported
  alone), then consumed from the start of every partition; broker CPU per record, and records per
  batch and per Produce request (librdkafka sends one partition per request, so its settings decide
  the broker's unit of work: `--producer-config linger.ms=5000 --producer-config
  batch.num.messages=200 --producer-config queue.buffering.max.messages=5000000` gives every count
  the same batches). `benches/active-raw.py` measures the broker alone with raw requests.

- `--curve sessions [--counts 1,10,100,1000] [--changed 0,1,10] [--compare-bin OLD-BROKER]`: incremental
  fetch sessions (KIP-227) through a raw Fetch v12 client (librdkafka has none), on one broker with
  10 × 100 partitions: per point 20 sessions over the first `size` partitions (a full fetch, epoch 0,
  then epochs 1, 2, ... listing only the partitions whose offset moved), per round one record
  produced to each of `changed` of them, then one fetch per session (max_wait_ms 0, so none parks);
  broker CPU per incremental fetch and partitions per response. A last point opens
  `--big-sessions` (1,000) sessions of all 1,000 partitions (how many got a session id:
  `max.incremental.fetch.session.cache.slots`) with one changed partition per round. Four
  connections carry all sessions (a session belongs to whoever sends its id). With
  `--compare-bin` a second broker runs every point too, alternated (columns `_b1`).

Prints a table and writes `<out>.csv` and one SVG plot per metric (`<out>-<metric>.svg`, log-log).
Needs confluent-kafka (the e2e venv has it: `.venv/bin/python benches/scale.py ...`). Numbers are
from one noisy shared machine: compare curves in one run, not across runs.
"""

import argparse
import csv
import math
import os
import re
import resource
import signal
import socket
import struct
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
    """CPU time of a live process in seconds: its CPU-time clock (ns; threads that ended count),
    else /proc in clock ticks (10 ms, too coarse for runs of a fraction of a second)."""
    try:
        # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED), as clock_getcpuclockid(3) builds it.
        return time.clock_gettime(((~pid) << 3) | 2)
    except OSError:
        pass
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


def scale_topics(n, per_topic, rf=1):
    """The topics holding `n` partitions, `per_topic` each (the last one the rest), named
    scale-00000, scale-00001, ... with replication factor `rf`."""
    topics, left, i = [], n, 0
    while left > 0:
        p = min(per_topic, left)
        topics.append(NewTopic(f"scale-{i:05d}", num_partitions=p, replication_factor=rf))
        left, i = left - p, i + 1
    return topics


def fill_one_record_each(broker, topics, limit_s):
    """Produces one 100 B record to every partition of `topics` (acks=all); seconds taken."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{broker.port}", "log_level": 0,
                         "linger.ms": 50, "queue.buffering.max.messages": 2_000_000})
    failed = []
    t = time.monotonic()
    for topic in topics:
        for p in range(topic.num_partitions):
            producer.produce(topic.topic, b"x" * 100, partition=p,
                             on_delivery=lambda err, _m: err and failed.append(err))
        producer.poll(0)
    if producer.flush(limit_s) or failed:
        raise RuntimeError(f"one record each: {len(failed)} failed, {len(producer)} unsent")
    return time.monotonic() - t


def fill_one_record_each_raw(broker, topics, limit_s):
    """`fill_one_record_each` through raw Produce v3 requests (acks=-1), one request per topic
    with one 100 B record for each of its partitions, one at a time on one connection: librdkafka
    spends CPU per known partition on every poll, so filling 100,000 partitions with it took the
    client, not the broker, about 40 minutes. Seconds taken."""
    t = time.monotonic()
    with socket.create_connection(("127.0.0.1", broker.port), timeout=limit_s) as s:
        for corr, topic in enumerate(topics):
            name = topic.topic.encode()
            s.sendall(produce_request_partitions(name, corr, range(topic.num_partitions)))
            errors = produce_errors(recv_response(s), name)
            if len(errors) != topic.num_partitions or any(errors):
                raise RuntimeError(f"one record each: {topic.topic}: errors {set(errors)}")
    return time.monotonic() - t


def measure(binary, n, per_topic, limit_s, opts=(), one_record_each=False):
    root = tempfile.mkdtemp(prefix=f"josef-scale-{n}-")
    data = os.path.join(root, "data")
    os.makedirs(data)
    broker = Broker(binary, data, free_port(), opts)
    try:
        started = broker.start()
        wait_serving(broker, 0, limit_s)
        row = {"partitions": n, "start_s": time.monotonic() - started}
        admin = broker.admin()
        topics = scale_topics(n, per_topic)
        cpu0, t0 = cpu_seconds(broker.proc.pid), time.monotonic()
        for batch in range(0, len(topics), 100):
            futures = admin.create_topics(topics[batch:batch + 100], operation_timeout=limit_s)
            for f in futures.values():
                f.result()
        wait_serving(broker, n, limit_s)
        row["create_s"] = time.monotonic() - t0
        row["create_cpu_s"] = cpu_seconds(broker.proc.pid) - cpu0
        # Entries in the log dir: partition directories and the broker's own files.
        row["data_entries"] = len(os.listdir(data))
        if one_record_each == "raw":
            row["fill_s"] = fill_one_record_each_raw(broker, topics, limit_s)
        elif one_record_each:
            row["fill_s"] = fill_one_record_each(broker, topics, limit_s)
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


# Raw Kafka requests for the connection curve: a Python client holding 10,000 librdkafka instances
# would measure the client, so each connection is a plain socket, with raw-produce.py's encoding.
def _load_raw_produce():
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "raw-produce.py")
    spec = importlib.util.spec_from_file_location("raw_produce", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_raw = _load_raw_produce()
_frame, _s16, _varint, _crc32c = _raw.frame, _raw.s16, _raw.varint, _raw.crc32c
_uvarint = _raw.uvarint


def record_batch(records=1):
    """A v2 record batch (base offset 0; the broker assigns offsets) of `records` 100-byte records."""
    value = b"x" * 100
    recs = b""
    for i in range(records):
        rec = b"\x00" + _varint(0) + _varint(i) + _varint(-1) + _varint(len(value)) + value + _varint(0)
        recs += _varint(len(rec)) + rec
    ts = int(time.time() * 1000)
    after_crc = struct.pack(">hiqqqhii", 0, records - 1, ts, ts, -1, -1, -1, records) + recs
    body = struct.pack(">ib", -1, 2) + struct.pack(">I", _crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(body)) + body


def produce_request(topic, corr, partition=0):
    """Produce v3, acks=-1, one 100-byte record to `partition` of `topic`."""
    return produce_request_partitions(topic, corr, [partition])


def produce_request_partitions(topic, corr, partitions, batch=None):
    """Produce v3, acks=-1, `batch` (default: one 100-byte record) to each of `partitions` of
    `topic`."""
    parts = list(partitions)
    batch = record_batch() if batch is None else batch
    req = (struct.pack(">hhi", -1, -1, 30000) + struct.pack(">i", 1) + _s16(topic)
           + struct.pack(">i", len(parts))
           + b"".join(struct.pack(">ii", p, len(batch)) + batch for p in parts))
    return _frame(0, 3, corr, req)


def produce_errors(resp, topic):
    """The error codes of every partition of the one topic of a Produce v3 response."""
    at = 4 + 4 + 2 + len(topic)
    (n,) = struct.unpack(">i", resp[at:at + 4])
    at += 4
    errors = []
    for _ in range(n):
        errors.append(struct.unpack(">h", resp[at + 4:at + 6])[0])
        at += 4 + 2 + 8 + 8
    return errors


def produce_error(resp, topic):
    """The error code of the one partition of a Produce v3 response (after the correlation id)."""
    at = 4 + 4 + 2 + len(topic) + 4 + 4
    return struct.unpack(">h", resp[at:at + 2])[0]


def recv_response(sock):
    def exact(k):
        d = b""
        while len(d) < k:
            chunk = sock.recv(k - len(d))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            d += chunk
        return d
    return exact(struct.unpack(">i", exact(4))[0])


def produce_latencies(port, topic, n):
    """p50 and p99 (ms) of `n` single-record produces, one at a time, on a connection of their own."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        lat = []
        for i in range(n):
            req = produce_request(topic, i)
            t = time.perf_counter()
            s.sendall(req)
            err = produce_error(recv_response(s), topic)
            lat.append((time.perf_counter() - t) * 1000)
            if err != 0:
                raise RuntimeError(f"produce error {err}")
    lat.sort()
    return lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]


def idle_cpu_pct(pid, seconds):
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return 100 * (cpu_seconds(pid) - c0) / (time.monotonic() - t0)


def measure_connections(binary, c, limit_s, opts=(), probes=500, idle_s=5):
    """The connection curve: `c` plain TCP connections held open idle, then each sends ApiVersions,
    Metadata and one Produce (pipelined) and stays open; the broker's RSS, descriptors and idle CPU
    at each stage, and the p50/p99 of single produces on a separate connection before and while
    the connections are open."""
    root = tempfile.mkdtemp(prefix=f"josef-scale-conn-{c}-")
    data = os.path.join(root, "data")
    os.makedirs(data)
    broker = Broker(binary, data, free_port(), opts)
    socks = []
    topic = b"scale-conn"
    try:
        broker.start()
        wait_serving(broker, 0, limit_s)
        admin = broker.admin()
        for f in admin.create_topics([NewTopic(topic.decode(), num_partitions=1, replication_factor=1)]).values():
            f.result()
        wait_serving(broker, 1, limit_s)
        del admin  # its connections would count as the curve's
        time.sleep(1)
        pid = broker.proc.pid
        row = {"connections": c}
        row["p50_before_ms"], row["p99_before_ms"] = produce_latencies(broker.port, topic, probes)
        base_rss, base_fds = rss_mib(pid), open_fds(pid)
        row["base_rss_mib"] = base_rss
        t0 = time.monotonic()
        for _ in range(c):
            s = socket.create_connection(("127.0.0.1", broker.port), timeout=limit_s)
            socks.append(s)
        row["connect_s"] = time.monotonic() - t0
        # Connected is not accepted: wait until the broker holds a descriptor for each.
        while open_fds(pid) < base_fds + c and time.monotonic() - t0 < limit_s:
            time.sleep(0.1)
        time.sleep(1)
        row["idle_fds"] = open_fds(pid)
        row["idle_rss_mib"] = rss_mib(pid)
        row["idle_kib_per_conn"] = (row["idle_rss_mib"] - base_rss) * 1024 / c
        row["idle_cpu_pct"] = idle_cpu_pct(pid, idle_s)
        md = struct.pack(">i", 1) + _s16(topic) + b"\x00"
        t0 = time.monotonic()
        for i, s in enumerate(socks):
            s.sendall(_frame(18, 0, 1, b"") + _frame(3, 4, 2, md) + produce_request(topic, 3))
        answered = 0
        for s in socks:
            recv_response(s)
            recv_response(s)
            if produce_error(recv_response(s), topic) == 0:
                answered += 1
        row["requests_s"] = time.monotonic() - t0
        row["answered"] = answered
        time.sleep(1)
        row["used_rss_mib"] = rss_mib(pid)
        row["used_kib_per_conn"] = (row["used_rss_mib"] - base_rss) * 1024 / c
        row["used_idle_cpu_pct"] = idle_cpu_pct(pid, idle_s)
        row["p50_during_ms"], row["p99_during_ms"] = produce_latencies(broker.port, topic, probes)
        for s in socks:
            s.close()
        socks = []
        broker.stop(signal.SIGTERM)
    finally:
        for s in socks:
            s.close()
        if broker.proc is not None and broker.proc.poll() is None:
            broker.proc.kill()
            broker.proc.wait()
        subprocess.run(["rm", "-rf", root], check=False)
    return row


def _produce_requests(metrics_port):
    """Produce requests the broker has answered, from its `/metrics`."""
    import urllib.request
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=30).read().decode()
    return sum(float(line.rsplit(None, 1)[1]) for line in text.splitlines()
               if line.startswith("kafka_network_requestmetrics_requests_total") and 'request="Produce"' in line)


# Topic-level batch statistics of librdkafka's stats JSON (a window per stats interval). A regex,
# not json.loads: at 10,000 partitions the JSON is megabytes a second, and parsing it would slow
# the producing loop that shares the interpreter.
_BATCHCNT = re.compile(rb'"batchcnt":\s*\{[^}]*?"sum":\s*(\d+)[^}]*?"cnt":\s*(\d+)')


def measure_active(binary, n, per_topic, limit_s, opts=(), records=200_000, rounds=2, producer_conf=None):
    """The active-partition curve: `records` records of 100 B produced with librdkafka (its
    defaults unless `producer_conf` sets some, acks=all) spread round-robin over all `n`
    partitions, `rounds` times, then consumed from the start of every partition by one consumer;
    broker CPU per record for each. Round 1 includes each partition's first write (its files);
    rounds 2 and later are the steady state, pooled into the `produce2_*` columns (a partition's
    index files are created once its log passes `index.interval.bytes`, in whichever round that
    is; `produce_last_*` is the last round alone). The client
    decides how records are batched: records per batch (librdkafka's statistics) and per Produce
    request (the broker's request count) of the steady rounds are in the row."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    root = tempfile.mkdtemp(prefix=f"josef-scale-active-{n}-")
    data = os.path.join(root, "data")
    os.makedirs(data)
    metrics_port = free_port()
    broker = Broker(binary, data, free_port(), list(opts) + [f"prometheus.listener=127.0.0.1:{metrics_port}"])
    try:
        broker.start()
        wait_serving(broker, 0, limit_s)
        admin = broker.admin()
        new = scale_topics(n, per_topic)
        tps = [(t.topic, k) for t in new for k in range(t.num_partitions)]
        for batch in range(0, len(new), 100):
            for f in admin.create_topics(new[batch:batch + 100], operation_timeout=limit_s).values():
                f.result()
        wait_serving(broker, n, limit_s)
        pid = broker.proc.pid
        row = {"partitions": n, "records": records, "rounds": rounds}
        bootstrap = f"127.0.0.1:{broker.port}"
        batches = [0, 0]  # records, batches (librdkafka's windows, summed)

        def on_stats(js):
            for m in _BATCHCNT.finditer(js.encode() if isinstance(js, str) else js):
                batches[0] += int(m.group(1))
                batches[1] += int(m.group(2))

        conf = {"bootstrap.servers": bootstrap, "log_level": 0, "statistics.interval.ms": 1000,
                "stats_cb": on_stats}
        conf.update(producer_conf or {})
        producer = Producer(conf)
        value = b"x" * 100
        steady = {"s": 0.0, "cpu": 0.0, "requests": 0.0, "recs": 0, "batches": 0}
        for r in range(1, rounds + 1):
            # The statistics window that ends after flush() is counted with this round.
            producer.poll(0)
            b0 = list(batches)
            q0 = _produce_requests(metrics_port)
            c0, t0 = cpu_seconds(pid), time.monotonic()
            for k in range(records):
                t, p = tps[k % n]
                while True:
                    try:
                        producer.produce(t, value, partition=p)
                        break
                    except BufferError:
                        producer.poll(0.01)
            if producer.flush(limit_s) != 0:
                raise RuntimeError("produce did not finish")
            wall, cpu = time.monotonic() - t0, cpu_seconds(pid) - c0
            requests = _produce_requests(metrics_port) - q0
            producer.poll(1.2)  # the last statistics window of the round
            row["produce_last_s"], row["produce_last_us_per_rec"] = wall, cpu * 1e6 / records
            if r == 1:
                row["produce1_s"] = wall
                row["produce1_us_per_rec"] = cpu * 1e6 / records
            else:
                steady["s"] += wall
                steady["cpu"] += cpu
                steady["requests"] += requests
                steady["recs"] += batches[0] - b0[0]
                steady["batches"] += batches[1] - b0[1]
        if rounds > 1:
            row["produce2_s"] = steady["s"] / (rounds - 1)
            row["produce2_us_per_rec"] = steady["cpu"] * 1e6 / (records * (rounds - 1))
            row["recs_per_request"] = records * (rounds - 1) / max(steady["requests"], 1)
            row["recs_per_batch"] = steady["recs"] / max(steady["batches"], 1)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "scale-active",
                             "enable.auto.commit": False, "log_level": 0})
        consumer.assign([TopicPartition(t, p, 0) for t, p in tps])
        total, got = records * rounds, 0
        c0, t0 = cpu_seconds(pid), time.monotonic()
        while got < total and time.monotonic() - t0 < limit_s:
            for m in consumer.consume(10000, timeout=1):
                if m.error() is None:
                    got += 1
        row["consume_s"] = time.monotonic() - t0
        row["consume_us_per_rec"] = (cpu_seconds(pid) - c0) * 1e6 / max(got, 1)
        row["consumed"] = got
        consumer.close()
        row["rss_mib"] = rss_mib(pid)
        row["fds"] = open_fds(pid)
        broker.stop(signal.SIGTERM)
    finally:
        if broker.proc is not None and broker.proc.poll() is None:
            broker.proc.kill()
            broker.proc.wait()
        subprocess.run(["rm", "-rf", root], check=False)
    return row


# Fetch sessions (KIP-227) need a raw client: librdkafka does not implement them. Fetch v12 is the
# first version with flexible encoding and still names topics (v13 uses topic ids).
def _read_uvarint(buf, pos):
    v = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, pos
        shift += 7


def _skip_tags(buf, pos):
    n, pos = _read_uvarint(buf, pos)
    for _ in range(n):
        _, pos = _read_uvarint(buf, pos)
        size, pos = _read_uvarint(buf, pos)
        pos += size
    return pos


def _cstr(b):
    return _uvarint(len(b) + 1) + b


def fetch_request(corr, session_id, epoch, topics, max_wait_ms=0):
    """Fetch v12 (request header v2). `topics`: [(topic, [(partition, fetch_offset)])] — for an
    incremental fetch only the partitions whose fetch offset changed."""
    body = struct.pack(">iiiibii", -1, max_wait_ms, 1, 50 << 20, 0, session_id, epoch)
    body += _uvarint(len(topics) + 1)
    for topic, parts in topics:
        body += _cstr(topic) + _uvarint(len(parts) + 1)
        for p, offset in parts:
            body += struct.pack(">iiqiqi", p, -1, offset, -1, -1, 1 << 20) + b"\x00"
        body += b"\x00"
    body += _uvarint(1) + _cstr(b"") + b"\x00"  # no forgotten topics, rack "", no tags
    msg = struct.pack(">hhi", 1, 12, corr) + _s16(b"raw") + b"\x00" + body
    return struct.pack(">i", len(msg)) + msg


def parse_fetch(resp):
    """(error_code, session_id, [(topic, partition, error_code, high_watermark, record bytes)])
    of a Fetch v12 response (after the frame's size)."""
    pos = _skip_tags(resp, 4)
    _, err, sid = struct.unpack_from(">ihi", resp, pos)
    pos += 10
    out = []
    nt, pos = _read_uvarint(resp, pos)
    for _ in range(max(nt - 1, 0)):
        ln, pos = _read_uvarint(resp, pos)
        topic = bytes(resp[pos:pos + ln - 1])
        pos += ln - 1
        np_, pos = _read_uvarint(resp, pos)
        for _ in range(max(np_ - 1, 0)):
            idx, perr, hw = struct.unpack_from(">ihq", resp, pos)
            pos += 30
            na, pos = _read_uvarint(resp, pos)
            for _ in range(max(na - 1, 0)):
                pos = _skip_tags(resp, pos + 16)
            pos += 4
            rl, pos = _read_uvarint(resp, pos)
            nrec = max(rl - 1, 0)
            pos = _skip_tags(resp, pos + nrec)
            out.append((topic, idx, perr, hw, nrec))
        pos = _skip_tags(resp, pos)
    return err, sid, out


class Session:
    """A consumer's fetch session: its partitions with the fetch offsets it believes in."""

    def __init__(self, sock, parts, offsets):
        self.sock, self.id, self.epoch = sock, 0, 0
        self.offsets = {tp: offsets[tp] for tp in parts}
        self.changed = set(parts)  # listed in the next request (all of them: full fetch)

    def request(self, corr):
        by_topic = {}
        for t, p in sorted(self.changed):
            by_topic.setdefault(t, []).append((p, self.offsets[(t, p)]))
        self.changed = set()
        return fetch_request(corr, self.id, self.epoch, list(by_topic.items()))

    def answer(self, resp):
        err, sid, parts = parse_fetch(resp)
        if err != 0:
            raise RuntimeError(f"fetch session error {err}")
        if self.epoch == 0:
            self.id = sid
        self.epoch = self.epoch + 1 if self.id else 0
        for t, p, perr, hw, nrec in parts:
            if perr != 0:
                raise RuntimeError(f"partition error {perr} on {t}-{p}")
            if nrec and self.offsets[(t, p)] != hw:
                self.offsets[(t, p)] = hw
                self.changed.add((t, p))
        return len(parts)


def produce_to(sock, tp, corr):
    """One 100 B record to a partition (Produce v3, acks=-1), answered."""
    topic, p = tp
    req = produce_request(topic, corr, p)
    sock.sendall(req)
    if produce_error(recv_response(sock), topic) != 0:
        raise RuntimeError(f"produce to {topic}-{p} failed")


def fetch_round(sessions, pid):
    """One fetch per session, pipelined per socket; (broker CPU s, partitions in the responses)."""
    c0 = cpu_seconds(pid)
    by_sock = {}
    for s in sessions:
        by_sock.setdefault(s.sock, []).append(s)
    parts = 0
    # A window of 4 requests per socket: a full fetch of 1,000 partitions is ~30 KB and its answer
    # ~40 KB, so sending all before reading could fill both socket buffers and stall.
    for start in range(0, max(len(ss) for ss in by_sock.values()), 4):
        for sock, ss in by_sock.items():
            sock.sendall(b"".join(s.request(i) for i, s in enumerate(ss[start:start + 4])))
        for sock, ss in by_sock.items():
            for s in ss[start:start + 4]:
                parts += s.answer(recv_response(sock))
    return cpu_seconds(pid) - c0, parts


class SessionBroker:
    """A broker with `topics` × `per_topic` empty partitions and `conns` raw connections."""

    def __init__(self, binary, topics, per_topic, limit_s, opts, conns=4):
        self.root = tempfile.mkdtemp(prefix="josef-scale-sessions-")
        data = os.path.join(self.root, "data")
        os.makedirs(data)
        self.broker = Broker(binary, data, free_port(), opts)
        self.broker.start()
        wait_serving(self.broker, 0, limit_s)
        admin = self.broker.admin()
        names = [f"scale-{i:05d}" for i in range(topics)]
        for f in admin.create_topics([NewTopic(n, num_partitions=per_topic, replication_factor=1)
                                      for n in names], operation_timeout=limit_s).values():
            f.result()
        wait_serving(self.broker, topics * per_topic, limit_s)
        del admin
        self.tps = [(n.encode(), p) for n in names for p in range(per_topic)]
        self.offsets = {tp: 0 for tp in self.tps}
        self.socks = [socket.create_connection(("127.0.0.1", self.broker.port), timeout=limit_s)
                      for _ in range(conns)]
        for s in self.socks:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pid = self.broker.proc.pid

    def point(self, size, changed, n_sessions, rounds):
        """`n_sessions` sessions over the first `size` partitions; per round one record to each of
        `changed` of them, then one incremental fetch per session. Broker CPU per fetch."""
        parts = self.tps[:size]
        sessions = [Session(self.socks[i % len(self.socks)], parts, self.offsets) for i in range(n_sessions)]
        fetch_round(sessions, self.pid)  # the full fetches: create the sessions
        kept = sum(1 for s in sessions if s.id != 0)
        hot = [parts[i * size // changed] for i in range(changed)] if changed else []
        cpu = 0.0
        seen = 0
        t0 = time.monotonic()
        for r in range(rounds + 1):
            for tp in hot:
                produce_to(self.socks[0], tp, r)
                self.offsets[tp] += 1
            c, n = fetch_round(sessions, self.pid)
            if r > 0:  # round 0 also answers the partitions listed after the full fetch
                cpu += c
                seen += n
        row = {"session_size": size, "changed": changed, "sessions": n_sessions, "sessions_kept": kept,
               "fetches": n_sessions * rounds, "us_per_fetch": cpu * 1e6 / (n_sessions * rounds),
               "parts_per_response": seen / (n_sessions * rounds), "wall_s": time.monotonic() - t0,
               "rss_mib": rss_mib(self.pid)}
        for s in sessions:  # epoch -1 closes the session
            s.sock.sendall(fetch_request(0, s.id, -1, []))
            recv_response(s.sock)
        return row

    def close(self):
        for s in self.socks:
            s.close()
        if self.broker.proc is not None and self.broker.proc.poll() is None:
            self.broker.stop(signal.SIGTERM)
        subprocess.run(["rm", "-rf", self.root], check=False)


def measure_sessions(binaries, sizes, changes, limit_s, opts=(), fetches=2000, big_sessions=1000,
                     big_rounds=3):
    """The fetch-session curve: broker CPU per incremental fetch (max_wait_ms 0) against the
    session size and the number of partitions changed between two fetches, on one broker with
    10 × 100 partitions; then `big_sessions` sessions of all 1,000 partitions with one changed
    partition per round. With several binaries (before/after) every point runs on each broker in
    turn, in the same run."""
    brokers = [SessionBroker(b, 10, 100, limit_s, opts) for b in binaries]
    rows = []
    try:
        points = [(s, c, 20, max(1, fetches // 20)) for s in sizes for c in changes if c <= s]
        if big_sessions:
            points.append((1000, 1, big_sessions, big_rounds))
        for size, changed, n, rounds in points:
            row = None
            for i, b in enumerate(brokers):
                r = b.point(size, changed, n, rounds)
                if row is None:
                    row = r
                else:
                    row.update({f"{k}_b{i}": v for k, v in r.items()
                                if k in ("us_per_fetch", "sessions_kept", "parts_per_response")})
            rows.append(row)
            yield row
    finally:
        for b in brokers:
            b.close()


CONN_METRICS = [
    ("idle_kib_per_conn", "broker RSS per idle connection (KiB)"),
    ("used_kib_per_conn", "broker RSS per connection after one request each (KiB)"),
    ("idle_rss_mib", "broker RSS, connections idle (MiB)"),
    ("idle_cpu_pct", "broker CPU with the connections idle (% of a core)"),
    ("p99_during_ms", "p99 of a single produce on another connection (ms)"),
    ("requests_s", "ApiVersions + Metadata + Produce on every connection (s)"),
]

ACTIVE_METRICS = [
    ("produce1_us_per_rec", "broker CPU per record produced, first round (us)"),
    ("produce2_us_per_rec", "broker CPU per record produced, rounds 2 and later (us)"),
    ("produce_last_us_per_rec", "broker CPU per record produced, last round (us)"),
    ("consume_us_per_rec", "broker CPU per record consumed (us)"),
    ("produce2_s", "produce wall time per round, rounds 2 and later (s)"),
]

SESSION_METRICS = [
    ("us_per_fetch", "broker CPU per incremental fetch (us)"),
    ("us_per_fetch_b1", "broker CPU per incremental fetch, --compare-bin (us)"),
]

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


def svg_plot(rows, key, title, path, x="partitions"):
    """A log-log line plot of `key` against `x` (the partition or connection count), as a small
    standalone SVG."""
    pts = [(r[x], r[key]) for r in rows if isinstance(r.get(key), (int, float)) and r[key] > 0]
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
    parts.append(f'<text x="{w / 2}" y="{h - 12}" text-anchor="middle">{x} (log scale)</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker-bin", default="target/release/josef-broker")
    ap.add_argument("--curve", choices=["partitions", "connections", "active", "sessions"], default="partitions",
                    help="partitions: create/restart cost against the partition count (default); "
                    "connections: cost against the connection count; active: produce/consume CPU per "
                    "record against the number of partitions the records are spread over")
    ap.add_argument("--counts", default="1,10,100,1000,10000")
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--records", type=int, default=200_000, help="records per produce round (--curve active)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="produce rounds (--curve active); rounds 2 and later are pooled as the steady state")
    ap.add_argument("--producer-config", action="append", default=[], metavar="KEY=VALUE",
                    help="a librdkafka property of the producer (--curve active; repeatable), e.g. "
                    "linger.ms=5000 and batch.num.messages=200 for equal batches at every partition count")
    ap.add_argument("--limit-s", type=float, default=600, help="bound on every wait")
    ap.add_argument("--out", default=None, help="default benches/results/scale, -conn or -active by curve")
    ap.add_argument("--changed", default="0,1,10", help="partitions changed per fetch (--curve sessions)")
    ap.add_argument("--fetches", type=int, default=2000, help="incremental fetches per point (--curve sessions)")
    ap.add_argument("--big-sessions", type=int, default=1000,
                    help="sessions of all 1,000 partitions in the last point (--curve sessions; 0: none)")
    ap.add_argument("--compare-bin", default=None,
                    help="a second broker binary (e.g. before a fix): --curve sessions runs every point "
                    "on both, alternated in the same run; its columns end in _b1")
    ap.add_argument("--one-record-each", nargs="?", const=True, default=False, choices=[True, "raw"],
                    help="--curve partitions: after CreateTopics, produce one record to every partition, "
                    "so that the idle and restart figures are of logs holding data (with librdkafka; "
                    "`--one-record-each raw`: raw Produce requests, one per topic, for 100,000 partitions)")
    ap.add_argument("--broker-opt", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker setting for every start (repeatable)")
    args = ap.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    binary = os.path.abspath(args.broker_bin)
    if args.curve == "partitions":
        x, metrics = "partitions", METRICS
        cols = ["partitions", "start_s"] + [k for k, _ in METRICS] + ["restart_rss_mib", "data_entries"]
        if args.one_record_each:
            cols.append("fill_s")
        out = args.out or "benches/results/scale"

        def run(n):
            return measure(binary, n, args.per_topic, args.limit_s, args.broker_opt, args.one_record_each)
    elif args.curve == "connections":
        x, metrics = "connections", CONN_METRICS
        cols = ["connections", "connect_s", "base_rss_mib", "idle_fds", "idle_rss_mib", "idle_kib_per_conn",
                "idle_cpu_pct", "requests_s", "answered", "used_rss_mib", "used_kib_per_conn",
                "used_idle_cpu_pct", "p50_before_ms", "p99_before_ms", "p50_during_ms", "p99_during_ms"]
        out = args.out or "benches/results/scale-conn"

        def run(n):
            return measure_connections(binary, n, args.limit_s, args.broker_opt)
    elif args.curve == "sessions":
        x, metrics = "session_size", SESSION_METRICS
        cols = ["session_size", "changed", "sessions", "sessions_kept", "fetches", "us_per_fetch",
                "parts_per_response", "wall_s", "rss_mib"]
        if args.compare_bin:
            cols += ["us_per_fetch_b1", "parts_per_response_b1", "sessions_kept_b1"]
        out = args.out or "benches/results/scale-sessions"
        binaries = [binary] + ([os.path.abspath(args.compare_bin)] if args.compare_bin else [])
        points = measure_sessions(binaries, counts, [int(c) for c in args.changed.split(",")],
                                  args.limit_s, args.broker_opt, args.fetches, args.big_sessions)

        def run(n):
            return next(points)
        counts = range(len(counts) * 3 + 1)
    else:
        x, metrics = "partitions", ACTIVE_METRICS
        cols = ["partitions", "records", "rounds", "produce1_s", "produce1_us_per_rec", "produce2_s",
                "produce2_us_per_rec", "produce_last_s", "produce_last_us_per_rec", "recs_per_batch", "recs_per_request", "consume_s", "consume_us_per_rec",
                "consumed", "rss_mib", "fds"]
        out = args.out or "benches/results/scale-active"

        def run(n):
            return measure_active(binary, n, args.per_topic, args.limit_s, args.broker_opt, args.records,
                                  args.rounds, dict(kv.split("=", 1) for kv in args.producer_config))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    print(f"# curve {args.curve}, RLIMIT_NOFILE {soft}/{hard} (the broker inherits it), "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    print(" ".join(f"{c:>16}" for c in cols), flush=True)
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    for n in counts:
        try:
            row = run(n)
        except StopIteration:
            break
        except Exception as e:
            print(f"{n} {x} failed: {e}", file=sys.stderr, flush=True)
            break
        rows.append(row)
        print(" ".join(f"{row[c]:>16.3f}" if isinstance(row[c], float) else f"{row[c]:>16}" for c in cols)
              + f"   (load average {os.getloadavg()[0]:.2f})", flush=True)
        # Written after every count: a long last count that fails or is stopped keeps the others.
        with open(out + ".csv", "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=cols)
            wr.writeheader()
            wr.writerows(rows)
        if args.curve == "sessions":
            # One plot per number of changed partitions (x: session size), before and after.
            for c in sorted({r["changed"] for r in rows}):
                sub = [r for r in rows if r["changed"] == c and r["sessions"] <= 20]
                for key, title in metrics:
                    svg_plot(sub, key, f"{title}, {c} changed", f"{out}-{key}-changed{c}.svg", x)
        else:
            for key, title in metrics:
                svg_plot(rows, key, title, f"{out}-{key}.svg", x)
    print(f"wrote {out}.csv and {out}-*.svg", file=sys.stderr)


if __name__ == "__main__":
    main()
