"""Workloads with confluent-kafka (librdkafka) that record into a history.History, and the read-back.

- IdempotentProducer: enable.idempotence, acks=all, a unique value per record, every ack recorded
- TransactionalProducer: transactions committed or aborted (alternating by a seeded RNG), outcomes recorded
- GroupConsumer: a consumer group member committing offsets synchronously, every commit recorded
- ConsumeTransformProduce: read_committed input -> transactional output with send_offsets_to_transaction
- read_back(): everything in a topic, read_uncommitted or read_committed, up to the end, into the history

Every workload is a thread with a stop event; every loop and wait is bounded.
"""
from __future__ import annotations

import collections
import random
import sys
import threading
import time
import traceback

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from history import ABORTED, COMMITTED, READ_COMMITTED, READ_UNCOMMITTED, UNKNOWN, History

PRODUCER_BASE = {"linger.ms": 5, "socket.timeout.ms": 5000, "reconnect.backoff.max.ms": 500,
                 "retry.backoff.max.ms": 500, "metadata.max.age.ms": 2000, "topic.metadata.refresh.interval.ms": 1000}


class Workload(threading.Thread):
    def __init__(self, name):
        super().__init__(daemon=True, name=name)
        self.stop_event = threading.Event()
        self.errors: list[str] = []
        self.died = False

    def stop(self, timeout=60.0):
        """Stops now (what was sent is flushed) and waits for the thread. A thread that had already
        ended by itself (a fatal client error, e.g. OUT_OF_ORDER_SEQUENCE_NUMBER) is recorded in
        `died`: a run whose workload died has not exercised what it claims, whatever the checker says."""
        if self.ident is not None and not self.is_alive() and not self.stop_event.is_set():
            self.died = True
        self.stop_event.set()
        self.join(timeout)
        if self.is_alive():
            raise AssertionError(f"workload {self.name} did not stop within {timeout}s; its thread is at:\n"
                                 + self.stack())

    def stack(self) -> str:
        """Where the thread is now (its Python frames; a client call it hangs in is the last one)."""
        frame = sys._current_frames().get(self.ident)
        return "".join(traceback.format_stack(frame)) if frame is not None else "(not running)\n"

    def finish(self, timeout=120.0):
        """Waits for a bounded workload (count=...) to end by itself."""
        self.join(timeout)
        if self.is_alive():
            self.stop(30)
            raise AssertionError(f"workload {self.name} not finished within {timeout}s")


class IdempotentProducer(Workload):
    """Produces `topic` values `<name>-<i>` (keys spread over partitions) until stopped or `count` sent."""

    def __init__(self, bootstrap, topic, history: History, name="idem", count=None, rate=None,
                 partitions=None, conf=None, client_debug=None):
        super().__init__(name)
        self.bootstrap, self.topic, self.h, self.count, self.rate = bootstrap, topic, history, count, rate
        self.partitions = partitions
        self.conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                     "message.timeout.ms": 60000, **PRODUCER_BASE, **(conf or {})}
        if client_debug:
            self.conf["debug"] = client_debug  # librdkafka's lines of those contexts, to stderr
        self.sent = 0

    def run(self):
        p = Producer(self.conf)
        i = 0
        t0 = time.monotonic()
        try:
            while not self.stop_event.is_set() and (self.count is None or i < self.count):
                if self.rate and i > self.rate * (time.monotonic() - t0):
                    p.poll(0.01)
                    continue
                v = f"{self.name}-{i}".encode()
                self.h.send(self.topic, v, self.name)
                kw = {"key": str(i % 64).encode(), "on_delivery": self.h.on_delivery}
                if self.partitions:
                    kw["partition"] = self.partitions[i % len(self.partitions)]
                while True:
                    try:
                        p.produce(self.topic, value=v, **kw)
                        break
                    except BufferError:
                        p.poll(0.05)
                i += 1
                self.sent = i
                p.poll(0)
        except KafkaException as e:
            self.errors.append(repr(e))
        finally:
            left = p.flush(90)  # every record gets its delivery report (ack or error) or is counted here
            if left:
                self.errors.append(f"{left} records without a delivery report after flush")


class TransactionalProducer(Workload):
    """Transactions of `per_txn` records; each committed or aborted at random (seeded)."""

    def __init__(self, bootstrap, topic, history: History, name="txn", seed=0, per_txn=5, abort_ratio=0.3,
                 max_txns=None, conf=None, client_debug=None):
        super().__init__(name)
        self.topic, self.h, self.per_txn, self.abort_ratio, self.max_txns = topic, history, per_txn, abort_ratio, max_txns
        self.rng = random.Random(seed)
        self.conf = {"bootstrap.servers": bootstrap, "transactional.id": f"{name}-tid", "acks": "all",
                     "transaction.timeout.ms": 10000, "message.timeout.ms": 10000, **PRODUCER_BASE, **(conf or {})}
        if client_debug:
            self.conf["debug"] = client_debug  # librdkafka's lines of those contexts, to stderr
        self.txns = 0

    def _new_producer(self):
        p = Producer(self.conf)
        p.init_transactions(30)
        return p

    def run(self):
        try:
            p = self._new_producer()
        except KafkaException as e:
            self.errors.append(f"init_transactions: {e!r}")
            return
        n = 0
        while not self.stop_event.is_set() and (self.max_txns is None or n < self.max_txns):
            txn = f"{self.name}:{n}"
            n += 1
            self.h.begin_txn(txn)
            try:
                p.begin_transaction()
                for k in range(self.per_txn):
                    v = f"{txn}:{k}".encode()
                    self.h.send(self.topic, v, self.name, txn=txn)
                    p.produce(self.topic, value=v, key=str(k).encode(), on_delivery=self.h.on_delivery)
                    p.poll(0)
                if self.rng.random() < self.abort_ratio:
                    p.abort_transaction(30)
                    self.h.end_txn(txn, ABORTED)
                else:
                    p.commit_transaction(30)
                    self.h.end_txn(txn, COMMITTED)
                self.txns += 1
            except KafkaException as e:
                err = e.args[0]
                if err.txn_requires_abort():
                    try:
                        p.abort_transaction(30)
                        self.h.end_txn(txn, ABORTED)
                        continue
                    except KafkaException as e2:
                        self.errors.append(f"{txn} abort: {e2!r}")
                # Whether the commit happened is not known to this client: the checker wants all or none.
                self.h.end_txn(txn, UNKNOWN)
                self.errors.append(f"{txn}: {e!r}")
                try:
                    p = self._new_producer()  # fences the old one, resolves its transaction
                except KafkaException as e3:
                    self.errors.append(f"init_transactions: {e3!r}")
                    return


class GroupConsumer(Workload):
    """A group member reading `topic`, committing every `every` records and waiting for the answer;
    records commits. The wait polls (asynchronous commit, answer through `on_commit`) instead of
    librdkafka's synchronous commit: a synchronous commit blocks the application thread, and when
    the session times out meanwhile (a coordinator away for longer than `session.timeout.ms`)
    librdkafka waits for the application to serve the rebalance from poll() and never finishes the
    commit (docs/reliability.md, bugs 17 and 20). With `client_debug` (e.g. "cgrp"), librdkafka writes its debug lines of those contexts to stderr from
    its own threads (not through a Python logger, whose lines are only served by poll() and so stop
    exactly when the application is blocked in a client call): what a hang inside the client is
    diagnosed from."""

    def __init__(self, bootstrap, topic, group, history: History, name="group", every=20, conf=None,
                 client_debug=None):
        super().__init__(name)
        self.topic, self.group, self.h, self.every = topic, group, history, every
        self.conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 6000, "socket.timeout.ms": 5000,
                     **(conf or {})}
        self.consumed = 0
        if client_debug:
            self.conf["debug"] = client_debug

    def run(self):
        self.answers = 0
        c = Consumer({**self.conf, "on_commit": self._on_commit})
        c.subscribe([self.topic])
        since = 0
        try:
            while not self.stop_event.is_set():
                m = c.poll(0.2)
                if m is None or m.error():
                    continue
                self.consumed += 1
                since += 1
                if since >= self.every:
                    since = 0
                    self._commit(c)
            self._commit(c)
        finally:
            c.close()

    def _on_commit(self, err, partitions):
        self.answers += 1
        if err is not None:
            if err.code() != KafkaError._NO_OFFSET:
                self.errors.append(f"commit: {KafkaException(err)!r}")
            return
        for tp in partitions or []:
            if tp.error is None and tp.offset >= 0:
                self.h.committed(self.group, tp.topic, tp.partition, tp.offset)

    def _commit(self, c, limit_s=60.0):
        """Commits the positions and serves the consumer (rebalances included) until the answer
        came, at most `limit_s`; records polled meanwhile count as consumed, to be committed next."""
        before = self.answers
        try:
            c.commit(asynchronous=True)
        except KafkaException as e:
            if e.args[0].code() != KafkaError._NO_OFFSET:
                self.errors.append(f"commit: {e!r}")
            return
        deadline = time.monotonic() + limit_s
        while self.answers == before and time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and not m.error():
                self.consumed += 1
        if self.answers == before:
            self.errors.append(f"commit: no answer within {limit_s}s")


class ConsumeTransformProduce(Workload):
    """read_committed `src` -> transactional `dst` ("<value>|<attempt>"), offsets sent to the transaction."""

    def __init__(self, bootstrap, src, dst, group, history: History, name="ctp", batch=10):
        super().__init__(name)
        self.bootstrap, self.src, self.dst, self.group, self.h, self.batch = bootstrap, src, dst, group, history, batch
        self.attempt = 0
        self.txns = 0
        self.consume_errors = collections.deque(maxlen=5)  # the last errors consume() returned (they are retried)
        self.sessions = 0
        self.client_hangs = []  # librdkafka calls that outlived their timeout (their producer was left behind)

    MAX_SESSIONS = 20

    def run(self):
        """Sessions of (consumer, transactional producer); an error that is not abortable ends the session
        (the transaction's outcome is unknown to us) and the next one starts from the group's committed
        offsets, its init_transactions fencing the previous producer and resolving its transaction."""
        n = 0
        for _session in range(self.MAX_SESSIONS):
            if self.stop_event.is_set():
                return
            self.sessions += 1
            c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "enable.auto.commit": False,
                          "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                          "session.timeout.ms": 6000})
            p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": f"{self.name}-tid",
                          "transaction.timeout.ms": 10000, **PRODUCER_BASE})
            fatal = False  # the producer hit a fatal error: it has nothing left to flush
            try:
                p.init_transactions(30)
                c.subscribe([self.src])
                while not self.stop_event.is_set():
                    got = c.consume(self.batch, 0.5)
                    self.consume_errors.extend(f"{time.strftime('%H:%M:%S')} {m.error()}" for m in got if m.error())
                    msgs = [m for m in got if not m.error()]
                    if not msgs:
                        continue
                    txn = f"{self.name}:{n}"
                    n += 1
                    self.attempt += 1
                    self.h.begin_txn(txn)
                    try:
                        p.begin_transaction()
                        for m in msgs:
                            v = m.value() + b"|%d" % self.attempt
                            self.h.send(self.dst, v, self.name, txn=txn)
                            p.produce(self.dst, value=v, on_delivery=self.h.on_delivery)
                        positions, group = c.position(c.assignment()), c.consumer_group_metadata()
                        # The call's own timeout is capped at transaction.timeout.ms.
                        if not _returns_within(lambda: p.send_offsets_to_transaction(positions, group, 30), 25):
                            # librdkafka (confluentinc/librdkafka#5456, #5511) can wait forever, past
                            # its timeout, for a cached group coordinator that was killed and left the
                            # metadata. The producer is left behind; the next session's
                            # init_transactions fences it and aborts its transaction.
                            self.client_hangs.append(f"{time.strftime('%H:%M:%S')} {txn}: "
                                                     "send_offsets_to_transaction stuck")
                            self.h.end_txn(txn, UNKNOWN)
                            p = None
                            break
                        p.commit_transaction(30)
                        self.h.end_txn(txn, COMMITTED)
                        self.txns += 1
                    except KafkaException as e:
                        self.errors.append(f"{txn}: {e!r}")
                        if e.args[0].txn_requires_abort():
                            p.abort_transaction(30)
                            self.h.end_txn(txn, ABORTED)
                            rewind(c)
                        else:
                            fatal = e.args[0].fatal()
                            self.h.end_txn(txn, UNKNOWN)
                            break
            except KafkaException as e:
                fatal = fatal or e.args[0].fatal()
                self.errors.append(repr(e))
            finally:
                end_session(c, p, fatal, self.errors)


def end_session(c: Consumer, p: Producer | None, fatal: bool, errors: list):
    """Ends a consume-transform-produce session: closes the consumer and flushes the producer unless
    it is gone (left to a stuck call) or hit a fatal error. A fatal producer (e.g. _FENCED after the
    coordinator aborted its transaction at the timeout with a bumped epoch) delivers nothing more,
    and confluent-kafka 2.16's flush() of it runs the delivery callbacks with the fatal error still
    set as the pending Python exception: the first call inside the callback fails with SystemError
    after it ran, so History's `with self._lock` acquired the lock and never released it, and every
    workload thread then waited on it forever (seen as txp, ctp and the feed all stalling at once
    after ctp's _FENCED; the nodes were idle). The records it never delivered stay unacknowledged
    in the history, which is what they are."""
    ends = [c.close] + ([lambda: p.flush(10)] if p is not None and not fatal else [])
    for end in ends:
        try:
            end()
        except KafkaException as e:
            errors.append(f"session end: {e!r}")


def _returns_within(call, timeout: float) -> bool:
    """Runs `call` on a daemon thread: whether it returned (or raised, re-raised here) within
    `timeout` seconds. A call still running is left to its thread."""
    out = {}

    def run():
        try:
            call()
        except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
            out["error"] = e
        out["done"] = True

    t = threading.Thread(target=run, daemon=True, name="bounded-call")
    t.start()
    t.join(timeout)
    if "error" in out:
        raise out["error"]
    return "done" in out


def rewind(c: Consumer):
    """After an abort, go back to the group's committed offsets."""
    tps = c.committed(c.assignment(), timeout=10)
    for tp in tps:
        c.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))


def ctp_exactly_once(h: History, src_values: list[bytes], dst_topic: str) -> dict:
    """Each input value transformed exactly once in the read_committed output: {missing, duplicated}."""
    seen = {}
    for (t, _p), recs in h.reads[READ_COMMITTED].items():
        if t != dst_topic:
            continue
        for _o, v in recs:
            base = v.rsplit(b"|", 1)[0]
            seen[base] = seen.get(base, 0) + 1
    return {"missing": [v for v in src_values if v not in seen],
            "duplicated": [v for v, k in seen.items() if k > 1]}


def _high_watermark(c, topic, p, timeout):
    """The partition's high watermark, retried while leadership is moving (a client whose metadata
    is older than a leader change gets NOT_LEADER_OR_FOLLOWER, as from Kafka, and only the
    consumer's own fetches refresh it; watermark queries report it to the caller), or while a new
    leader's high watermark has not reached the start of its epoch (OFFSET_NOT_AVAILABLE, retriable
    in Kafka's clients too: the followers' next fetches move it)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if time.monotonic() > deadline or not (err and err.retriable() or err and err.code() in (
                    KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                    KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT, KafkaError.OFFSET_NOT_AVAILABLE)):
                raise
            time.sleep(0.2)


def read_back(bootstrap, topic, partitions, history: History, level=READ_UNCOMMITTED, timeout=60.0,
              want_end=None) -> dict:
    """Reads every partition from the beginning to its end (high watermark, or the last stable offset for
    read_committed, as ListOffsets gives them at the start) into history.read; returns {partition: records
    read}."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"readback-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "enable.partition.eof": True, "isolation.level": level,
                  "auto.offset.reset": "earliest", "socket.timeout.ms": 5000, "fetch.wait.max.ms": 100})
    try:
        ends = {}
        for p in partitions:
            ends[p] = _high_watermark(c, topic, p, timeout)
        c.assign([TopicPartition(topic, p, 0) for p in partitions])
        done = {p for p in partitions if ends[p] == 0}
        counts = {p: 0 for p in partitions}
        deadline = time.monotonic() + timeout
        last_off = {}
        while len(done) < len(partitions):
            if time.monotonic() > deadline:
                raise AssertionError(f"read-back of {topic} ({level}) not finished after {timeout}s: "
                                     f"partitions done {sorted(done)}, ends {ends}, at {last_off}")
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                # An end below the one the leader gave is not the end: a leader elected moments ago
                # serves from a HW (and LSO) that lags until its followers fetch, as in Kafka, and
                # its fetches say end of partition early. (Its ListOffsets answers OFFSET_NOT_AVAILABLE
                # meanwhile, which _high_watermark retries, so `ends` is not stale.)
                if m.error().code() == KafkaError._PARTITION_EOF and m.offset() >= ends[m.partition()]:
                    done.add(m.partition())
                continue
            history.read(level, topic, m.partition(), m.offset(), m.value())
            counts[m.partition()] += 1
            last_off[m.partition()] = m.offset()
            if m.offset() + 1 >= ends[m.partition()]:
                done.add(m.partition())
        return counts
    finally:
        c.close()
