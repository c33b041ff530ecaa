"""A history of what clients did against a cluster, and a checker of what Kafka promises about it.

The workloads record every send (a unique value per record, its producer, its send order, its transaction)
and what became of it (acknowledged at (partition, offset), failed, or never answered), every transaction's
outcome as the client saw it, every offset commit that succeeded, and, at the end, everything read back
(read_uncommitted and/or read_committed, per partition in offset order). `check()` reports:

- lost: an acknowledged record (or a record of a committed transaction) absent from the read-back
- moved: an acknowledged record found at another (partition, offset) than its ack said
- duplicate: one value present more than once in a read-back
- client_epoch_resend: a duplicate whose later copy the same producer id wrote under a higher producer
  epoch (read from the replicas' batch headers). The broker deduplicates within an epoch only, as
  Kafka does; librdkafka after a leader move can bump its epoch and renumber a batch the broker had
  already stored (librdkafka issue #4953, docs/reliability.md bug 14). Reported and counted, but a
  client's doing, so it does not fail the check; any other duplicate does.
- reordered: one producer's records to one partition not in send order in the log, or a read-back whose
  offsets do not increase
- aborted_seen: a record of an aborted transaction seen by read_committed
- undecided_seen: a record of a transaction that was never committed (no commit attempted) seen by
  read_committed
- partial_txn: a transaction whose outcome the client does not know, seen in part by read_committed
- offset_regress: a group's committed offset of a partition lower than one committed before it
- divergent_replicas: two replicas' logs that differ in a batch both have (`compare_replicas`, given the
  nodes' data dirs once the cluster is quiescent); with strict ends, also unequal log end offsets

Values are bytes; keys of the maps below are (topic, partition).
"""
from __future__ import annotations

import json
import os
import struct
import threading
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

COMMITTED, ABORTED, UNKNOWN, OPEN = "committed", "aborted", "unknown", "open"
READ_UNCOMMITTED, READ_COMMITTED = "read_uncommitted", "read_committed"
KINDS = ("lost", "moved", "duplicate", "reordered", "aborted_seen", "undecided_seen", "partial_txn",
         "offset_regress", "divergent_replicas", "replica_ends", "client_epoch_resend")
# Reported, but not a failure of the broker (see the module docstring).
CLIENT_KINDS = ("client_epoch_resend",)


@dataclass
class Send:
    topic: str
    value: bytes
    producer: str
    seq: int
    txn: str | None = None
    ack: tuple | None = None  # (partition, offset)
    error: str | None = None


class History:
    """Thread-safe record of a run. Workloads call send/ack/fail, begin_txn/end_txn, committed, read."""

    def __init__(self):
        self._lock = threading.Lock()
        self.sends: list[Send] = []
        self._by_value: dict[bytes, Send] = {}
        self._seq = defaultdict(int)
        self.txns: dict[str, str] = {}
        self.txn_sends: dict[str, list[bytes]] = defaultdict(list)
        self.commits: list[tuple] = []  # (group, topic, partition, offset)
        self.reads: dict[str, dict[tuple, list[tuple]]] = {READ_UNCOMMITTED: defaultdict(list),
                                                           READ_COMMITTED: defaultdict(list)}
        self.events: list[tuple] = []  # (monotonic time, text): faults and notes, for the report
        self.n_acked = 0

    # ---- producing
    def send(self, topic, value: bytes, producer="p0", txn=None) -> Send:
        with self._lock:
            if value in self._by_value:
                raise ValueError(f"value {value!r} sent twice: workloads must send unique values")
            s = Send(topic, value, producer, self._seq[producer], txn)
            self._seq[producer] += 1
            self.sends.append(s)
            self._by_value[value] = s
            if txn is not None:
                self.txn_sends[txn].append(value)
            return s

    def ack(self, value: bytes, partition: int, offset: int):
        with self._lock:
            s = self._by_value[value]
            if s.ack is None:
                self.n_acked += 1
            s.ack = (partition, offset)

    def fail(self, value: bytes, error: str):
        with self._lock:
            self._by_value[value].error = str(error)

    def on_delivery(self, err, msg):
        """A confluent-kafka delivery callback recording into this history."""
        if err is None:
            self.ack(msg.value(), msg.partition(), msg.offset())
        else:
            self.fail(msg.value(), str(err))

    # ---- transactions
    def begin_txn(self, txn: str):
        with self._lock:
            self.txns[txn] = OPEN

    def end_txn(self, txn: str, outcome: str):
        assert outcome in (COMMITTED, ABORTED, UNKNOWN, OPEN)
        with self._lock:
            self.txns[txn] = outcome

    # ---- groups
    def committed(self, group, topic, partition, offset):
        with self._lock:
            self.commits.append((group, topic, partition, offset))

    # ---- reading back
    def read(self, level, topic, partition, offset, value):
        with self._lock:
            self.reads[level][(topic, partition)].append((offset, value))

    def note(self, text):
        import time

        with self._lock:
            self.events.append((time.monotonic(), text))

    # ---- persistence (soak runs keep their history)
    def dump(self, path):
        with self._lock:
            d = {
                "sends": [{**asdict(s), "value": s.value.hex()} for s in self.sends],
                "txns": self.txns,
                "commits": self.commits,
                "reads": {lvl: [[t, p, [[o, v.hex()] for o, v in recs]] for (t, p), recs in m.items()]
                          for lvl, m in self.reads.items()},
                "events": self.events,
            }
        Path(path).write_text(json.dumps(d))

    @classmethod
    def load(cls, path) -> "History":
        d = json.loads(Path(path).read_text())
        h = cls()
        for s in d["sends"]:
            snd = h.send(s["topic"], bytes.fromhex(s["value"]), s["producer"], s["txn"])
            snd.ack = tuple(s["ack"]) if s["ack"] else None
            snd.error = s["error"]
        h.txns = dict(d["txns"])
        h.commits = [tuple(c) for c in d["commits"]]
        for lvl, parts in d["reads"].items():
            for t, p, recs in parts:
                h.reads[lvl][(t, p)] = [(o, bytes.fromhex(v)) for o, v in recs]
        h.events = [tuple(e) for e in d["events"]]
        return h


@dataclass
class Report:
    counts: dict = field(default_factory=dict)
    anomalies: dict = field(default_factory=lambda: defaultdict(list))
    info: list = field(default_factory=list)

    def add(self, kind, detail):
        assert kind in KINDS, kind
        self.anomalies[kind].append(detail)

    @property
    def ok(self) -> bool:
        return not any(v for k, v in self.anomalies.items() if k not in CLIENT_KINDS)

    def summary(self, examples=5) -> str:
        lines = ["counts: " + ", ".join(f"{k}={v}" for k, v in self.counts.items())]
        for k in KINDS:
            v = self.anomalies.get(k)
            if v:
                lines.append(f"{k}: {len(v)}, e.g. {v[:examples]}")
        lines += [f"info: {i}" for i in self.info[:examples]]
        return "\n".join(lines)

    def __str__(self):
        return self.summary()


def ack_matches(topic, ack, locs) -> bool:
    """Whether a record read at `locs` is where its ack said. An ack without an offset is librdkafka's
    implicit ack (rdkafka_request.c, rd_kafka_handle_idempotent_Produce_success: a later batch of the
    same idempotent producer succeeded while this one's answer was lost, so this one is known to be
    in the log, at an offset the client never learned): any read in the acked partition matches it."""
    partition, offset = ack
    if offset is None or offset < 0:
        return any(t == topic and p == partition for t, p, _ in locs)
    return (topic, partition, offset) in locs


def check(h: History, replica_dirs: dict | None = None, strict_ends=False, topics=None) -> Report:
    """Check a history; `replica_dirs` {node: data dir} adds the replica comparison (cluster quiescent)."""
    r = Report()
    sends = [s for s in h.sends if topics is None or s.topic in topics]
    txn_of = {s.value: s.txn for s in sends}

    def index(level):
        """value -> [(topic, partition, offset)] in one read level; also flags non-increasing offsets."""
        where = defaultdict(list)
        for (t, p), recs in h.reads[level].items():
            if topics is not None and t not in topics:
                continue
            last = None
            for o, v in recs:
                if last is not None and o <= last:
                    r.add("reordered", f"{level} read of {t}-{p}: offset {o} after {last}")
                last = o
                where[v].append((t, p, o))
        return where

    have = {lvl: bool(h.reads[lvl]) for lvl in (READ_UNCOMMITTED, READ_COMMITTED)}
    idx = {lvl: index(lvl) for lvl in (READ_UNCOMMITTED, READ_COMMITTED) if have[lvl]}

    # duplicates: an idempotent producer never writes a value twice (values are unique per send)
    producers = batch_producers(replica_dirs, topics) if replica_dirs else {}
    for lvl, where in idx.items():
        for v, locs in where.items():
            if len(locs) > 1:
                kind = "client_epoch_resend" if resent_under_new_epoch(locs, producers) else "duplicate"
                r.add(kind, f"{lvl}: {v!r} at {locs}")

    # lost / moved: what was acknowledged (non-transactional) or committed (transactional) must be read
    acked = [s for s in sends if s.ack is not None]
    r.counts["sent"] = len(sends)
    r.counts["acked"] = len(acked)
    r.counts["failed"] = sum(1 for s in sends if s.error is not None)
    lost = moved = 0
    for s in sends:
        outcome = h.txns.get(s.txn) if s.txn else None
        if s.txn is None:
            must = s.ack is not None
            lvl = READ_UNCOMMITTED if have[READ_UNCOMMITTED] else READ_COMMITTED
        else:
            must = outcome == COMMITTED
            lvl = READ_COMMITTED if have[READ_COMMITTED] else READ_UNCOMMITTED
        if not must or lvl not in idx:
            continue
        locs = idx[lvl].get(s.value)
        if not locs:
            lost += 1
            r.add("lost", f"{s.value!r} ({s.producer}#{s.seq}, txn {s.txn}, ack {s.ack}) not in {lvl} read")
            continue
        if s.ack is not None and not ack_matches(s.topic, s.ack, locs):
            moved += 1
            r.add("moved", f"{s.value!r} acked at {s.topic}-{s.ack[0]}@{s.ack[1]} but read at {locs}")
    r.counts["lost"] = lost
    r.counts["moved"] = moved

    # reordering: one producer's records to one partition keep their send order in the log
    any_idx = idx.get(READ_UNCOMMITTED) or idx.get(READ_COMMITTED) or {}
    per = defaultdict(list)  # (producer, topic, partition) -> [(seq, offset)]
    for s in sends:
        locs = any_idx.get(s.value)
        if locs:
            t, p, o = locs[0]
            per[(s.producer, t, p)].append((s.seq, o))
    for (prod, t, p), pairs in per.items():
        pairs.sort()
        for (s1, o1), (s2, o2) in zip(pairs, pairs[1:]):
            if o2 <= o1:
                r.add("reordered", f"{prod} to {t}-{p}: send #{s2} at offset {o2} not after send #{s1} at {o1}")
                break

    # transactions as read_committed sees them
    aborted_seen = undecided_seen = 0
    if READ_COMMITTED in idx:
        seen = idx[READ_COMMITTED]
        for txn, values in h.txn_sends.items():
            outcome = h.txns.get(txn, OPEN)
            vis = [v for v in values if v in seen and (topics is None or h._by_value[v].topic in topics)]
            if not vis:
                continue
            if outcome == ABORTED:
                aborted_seen += len(vis)
                r.add("aborted_seen", f"txn {txn} aborted, {len(vis)} of its records read, e.g. {vis[0]!r}")
            elif outcome == OPEN:
                undecided_seen += len(vis)
                r.add("undecided_seen", f"txn {txn} never committed, {len(vis)} of its records read, e.g. {vis[0]!r}")
            elif outcome == UNKNOWN and len(vis) != len(values):
                r.add("partial_txn", f"txn {txn} (outcome unknown): {len(vis)} of {len(values)} records read")
    r.counts["aborted_seen"] = aborted_seen
    r.counts["undecided_seen"] = undecided_seen
    r.counts["duplicated"] = len(r.anomalies.get("duplicate", []))
    r.counts["client_epoch_resends"] = len(r.anomalies.get("client_epoch_resend", []))
    r.counts["txns"] = len(h.txns)

    # committed offsets never go back
    last = {}
    for g, t, p, o in h.commits:
        if topics is not None and t not in topics:
            continue
        k = (g, t, p)
        if k in last and o < last[k]:
            r.add("offset_regress", f"group {g} {t}-{p}: committed {o} after {last[k]}")
        last[k] = max(o, last.get(k, o))
    r.counts["commits"] = len(h.commits)

    if replica_dirs:
        compare_replicas(replica_dirs, r, strict_ends=strict_ends, topics=topics)
    return r


# ------------------------------------------------------------------------------------ replica logs

def read_batches(partition_dir: Path):
    """[(base_offset, last_offset, bytes)] of every record batch in a partition dir's .log segments, in
    offset order; stops a segment at a torn tail or zero padding. Also returns the notes about such tails."""
    out, notes = [], []
    for seg in sorted(Path(partition_dir).glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while pos + 12 <= len(data):
            base, length = struct.unpack_from(">qi", data, pos)
            if length <= 0:
                if any(data[pos:]):
                    notes.append(f"{seg}: bad batch length {length} at byte {pos}")
                break
            end = pos + 12 + length
            if end > len(data) or length < 49:
                notes.append(f"{seg}: torn batch at byte {pos} ({len(data) - pos} of {12 + length} bytes)")
                break
            last_delta = struct.unpack_from(">i", data, pos + 23)[0]
            out.append((base, base + last_delta, bytes(data[pos:end])))
            pos = end
    return out, notes


def batch_producers(replica_dirs: dict, topics=None) -> dict:
    """{(topic, partition): [(base_offset, last_offset, producer_id, producer_epoch)]} from the batch
    headers of the first replica holding each partition (replicas are compared separately)."""
    out = {}
    for d in replica_dirs.values():
        for name, path in partition_dirs(Path(d)).items():
            t, p = name.rsplit("-", 1)
            key = (t, int(p))
            if key in out or (topics is not None and t not in topics):
                continue
            batches, _ = read_batches(path)
            out[key] = [(b, last, *struct.unpack_from(">qh", raw, 43)) for b, last, raw in batches]
    return out


def resent_under_new_epoch(locs, producers: dict) -> bool:
    """Whether every later copy of a value sits in a batch of the first copy's producer id under a higher
    producer epoch, in the same partition (librdkafka #4953: the client renumbered a stored batch)."""
    def header(t, p, o):
        for base, last, pid, epoch in producers.get((t, p), ()):
            if base <= o <= last:
                return pid, epoch
        return None

    first = sorted(locs, key=lambda x: x[2])
    h0 = header(*first[0])
    if h0 is None or h0[0] < 0 or len({(t, p) for t, p, _ in first}) != 1:
        return False
    for loc in first[1:]:
        h = header(*loc)
        if h is None or h[0] != h0[0] or h[1] <= h0[1]:
            return False
    return True


def partition_dirs(data_dir: Path) -> dict:
    """{partition dir name: path} of one node's data dir, without the metadata log and internal topics
    the caller may skip by name."""
    res = {}
    for d in Path(data_dir).iterdir() if Path(data_dir).is_dir() else []:
        if d.is_dir() and "-" in d.name and d.name.rsplit("-", 1)[1].isdigit() and any(d.glob("*.log")):
            if d.name.startswith("__cluster_metadata"):
                continue
            res[d.name] = d
    return res


def compare_replicas(replica_dirs: dict, report: Report | None = None, strict_ends=False, topics=None) -> Report:
    """Compare each partition's replicas across nodes: every batch two replicas both have (same base offset,
    below both log ends) must be byte-identical, with the same batch boundaries. Unequal log end offsets are
    noted (an anomaly with strict_ends, for a quiescent cluster whose replicas are all in sync)."""
    r = report or Report()
    per_node = {n: partition_dirs(Path(d)) for n, d in replica_dirs.items()}
    names = set().union(*[set(m) for m in per_node.values()]) if per_node else set()
    compared = 0
    for name in sorted(names):
        if topics is not None and name.rsplit("-", 1)[0] not in topics:
            continue
        logs = {}
        for n, m in per_node.items():
            if name in m:
                batches, notes = read_batches(m[name])
                logs[n] = batches
                r.info.extend(notes)
        if len(logs) < 2:
            continue
        compared += 1
        nodes = sorted(logs, key=str)
        ref = nodes[0]
        for other in nodes[1:]:
            a, b = logs[ref], logs[other]
            end_a = a[-1][1] + 1 if a else 0
            end_b = b[-1][1] + 1 if b else 0
            common = min(end_a, end_b)
            ba = {x[0]: x for x in a if x[1] < common}
            bb = {x[0]: x for x in b if x[1] < common}
            if set(ba) != set(bb):
                only = sorted(set(ba) ^ set(bb))[:3]
                r.add("divergent_replicas", f"{name}: nodes {ref} and {other} have different batch boundaries "
                                            f"below offset {common}, e.g. base offsets {only}")
            else:
                for off in sorted(ba):
                    if ba[off][2] != bb[off][2]:
                        r.add("divergent_replicas", f"{name}: nodes {ref} and {other} differ in the batch at "
                                                    f"offset {off}")
                        break
            if end_a != end_b:
                msg = f"{name}: log end offset {end_a} on node {ref}, {end_b} on node {other}"
                if strict_ends:
                    r.add("replica_ends", msg)
                else:
                    r.info.append(msg)
    r.counts["partitions_compared"] = compared
    return r


def record_result(fault: str, workload: str, report: Report, **extra):
    """Appends one row (fault, workload, counts, anomalies) to $JOSEF_RELIABILITY_OUT (JSON lines), the
    source of the table in docs/reliability.md. Does nothing without that variable."""
    out = os.environ.get("JOSEF_RELIABILITY_OUT")
    if not out:
        return
    row = {"fault": fault, "workload": workload, "counts": report.counts,
           "anomalies": {k: len(v) for k, v in report.anomalies.items() if v}, **extra}
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")
