"""Transactions with real clients: the design notes' scenario, abort, fencing, timeout, and exactly-once
consume-transform-produce across a crash of the app."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from clients import cfk_consume, cfk_create_topic, cfk_produce, cfk_watermarks
from conftest import unique, wait_until

HERE = Path(__file__).resolve().parent


def txn_producer(bootstrap, txid, **extra):
    conf = {"bootstrap.servers": bootstrap, "transactional.id": txid, "linger.ms": 1}
    conf.update(extra)
    p = Producer(conf)
    p.init_transactions(30)
    return p


def send_values(p, topic, values):
    for v in values:
        p.produce(topic, value=str(v).encode(), partition=0)
    assert p.flush(30) == 0


def read_values(bootstrap, topic, count, isolation):
    got = cfk_consume(bootstrap, topic, count, conf={"isolation.level": isolation})
    return [(m["offset"], int(m["value"])) for m in got]


def test_design_notes_scenario_read_committed_waits_for_commit(broker):
    topic = "test"
    cfk_create_topic(broker.bootstrap, topic, partitions=1)
    tx = txn_producer(broker.bootstrap, "1")
    tx.begin_transaction()
    send_values(tx, topic, range(121, 130))
    cfk_produce(broker.bootstrap, topic, [{"value": b"-2", "partition": 0}], {"acks": "all"})
    send_values(tx, topic, range(131, 160))

    # Nothing is stable after the transaction's first offset (0) until the commit ...
    assert cfk_watermarks(broker.bootstrap, topic, isolation="read_committed") == (0, 0)
    # ... while read_uncommitted sees -2 at once, at offset 9.
    unc = read_values(broker.bootstrap, topic, 39, "read_uncommitted")
    assert (9, -2) in unc

    tx.commit_transaction(30)
    wait_until(lambda: cfk_watermarks(broker.bootstrap, topic, isolation="read_committed")[1] == 40,
               what="LSO past the commit marker")
    got = read_values(broker.bootstrap, topic, 39, "read_committed")
    assert [v for _, v in got] == list(range(121, 130)) + [-2] + list(range(131, 160))
    assert [o for o, _ in got] == sorted(o for o, _ in got)


def test_aborted_transaction_is_invisible_to_read_committed(broker):
    topic = unique("abort")
    cfk_create_topic(broker.bootstrap, topic, partitions=1)
    tx = txn_producer(broker.bootstrap, unique("tx-abort"))
    tx.begin_transaction()
    send_values(tx, topic, range(0, 10))
    tx.abort_transaction(30)
    tx.begin_transaction()
    send_values(tx, topic, range(100, 105))
    tx.commit_transaction(30)
    got = read_values(broker.bootstrap, topic, 5, "read_committed")
    assert [v for _, v in got] == list(range(100, 105))
    unc = read_values(broker.bootstrap, topic, 15, "read_uncommitted")
    assert [v for _, v in unc] == list(range(0, 10)) + list(range(100, 105))


def test_second_producer_with_the_same_id_fences_the_first(broker):
    topic = unique("fence")
    cfk_create_topic(broker.bootstrap, topic, partitions=1)
    txid = unique("tx-fence")
    a = txn_producer(broker.bootstrap, txid)
    a.begin_transaction()
    send_values(a, topic, [1, 2, 3])
    b = txn_producer(broker.bootstrap, txid)  # bumps the epoch, aborts a's open transaction
    b.begin_transaction()
    send_values(b, topic, [7])
    b.commit_transaction(30)
    with pytest.raises(KafkaException) as exc:
        a.produce(topic, value=b"4", partition=0)
        a.flush(10)
        a.commit_transaction(10)
    assert exc.value.args[0].fatal() or "fenced" in str(exc.value).lower() or "epoch" in str(exc.value).lower()
    got = read_values(broker.bootstrap, topic, 1, "read_committed")
    assert [v for _, v in got] == [7]


def test_coordinator_aborts_a_transaction_past_its_timeout(broker_factory):
    b = broker_factory({"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"})
    topic = unique("txn-timeout")
    cfk_create_topic(b.bootstrap, topic, partitions=1)
    tx = txn_producer(b.bootstrap, unique("tx-timeout"), **{"transaction.timeout.ms": 1000})
    tx.begin_transaction()
    send_values(tx, topic, [1, 2, 3])
    # The coordinator aborts it: the abort marker makes the LSO reach the log end.
    wait_until(lambda: cfk_watermarks(b.bootstrap, topic, isolation="read_committed")[1] == 4, timeout=30,
               what="the timed-out transaction to be aborted by the coordinator")
    with pytest.raises(KafkaException):
        tx.commit_transaction(10)
    unc = read_values(b.bootstrap, topic, 3, "read_uncommitted")
    assert [v for _, v in unc] == [1, 2, 3]


def test_consume_transform_produce_is_exactly_once_across_an_app_crash(broker):
    src, dst = unique("eos-in"), unique("eos-out")
    cfk_create_topic(broker.bootstrap, src, partitions=1)
    cfk_create_topic(broker.bootstrap, dst, partitions=1)
    n = 300
    cfk_produce(broker.bootstrap, src, [{"value": str(i).encode(), "partition": 0} for i in range(n)])
    group, txid = unique("eos-group"), unique("eos-app")
    app = [sys.executable, str(HERE / "eos_app.py"), broker.bootstrap, src, dst, group, txid]
    # First run: crash (SIGKILL) the app after it has committed some transactions.
    first = subprocess.Popen(app + ["--crash-after", "120"], stdout=subprocess.PIPE, text=True)
    first.wait(timeout=120)
    assert first.returncode == 17, f"app did not reach its crash point: {first.returncode}"
    # Second run: finishes the work.
    second = subprocess.run(app + ["--until", str(n)], capture_output=True, text=True, timeout=180)
    assert second.returncode == 0, second.stdout + second.stderr
    got = cfk_consume(broker.bootstrap, dst, n, conf={"isolation.level": "read_committed"}, timeout=60)
    values = sorted(int(m["value"]) for m in got)
    assert values == [2 * i for i in range(n)], "a record was lost or duplicated across the crash"
    assert cfk_watermarks(broker.bootstrap, dst, isolation="read_committed")[1] >= n


def test_a_fenced_ctp_session_ends_without_leaking_the_history_lock(broker):
    """The e2e consume-transform-produce workload's session end (workloads.end_session) after its
    producer was fenced in send_offsets_to_transaction: confluent-kafka's flush() of that fatal
    producer runs the delivery callbacks with the fatal error still pending, so History's lock was
    taken inside a callback and never released, and every workload sharing the History hung (the
    coordinator-kill tests' "both workloads stalled" flake). The lock must stay free."""
    from history import History
    from workloads import _returns_within, end_session

    topic = unique("fenced-ctp")
    cfk_create_topic(broker.bootstrap, topic, partitions=1)
    h = History()
    conf = {"bootstrap.servers": broker.bootstrap, "transactional.id": unique("tid"), "linger.ms": 5,
            "transaction.timeout.ms": 10000}
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique("g")})
    p = Producer(conf)
    p.init_transactions(30)
    p.begin_transaction()

    def produce(prefix, n=200):
        for i in range(n):
            v = f"{prefix}{i}".encode()
            h.send(topic, v, "ctp")
            p.produce(topic, value=v, partition=0, on_delivery=h.on_delivery)

    produce("a")
    assert p.flush(30) == 0
    produce("b")
    Producer(conf).init_transactions(30)  # a newer instance fences p
    produce("c")
    fatal, errors = False, []
    try:
        _returns_within(lambda: p.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 5)], c.consumer_group_metadata(), 30), 25)
        p.commit_transaction(30)
    except KafkaException as e:
        fatal = e.args[0].fatal()
    assert fatal, "the fenced producer should have failed fatally"
    # On threads: with the lock leaked, the session end itself hangs in a delivery callback.
    ended = _returns_within(lambda: end_session(c, p, fatal, errors), 30)
    noted = _returns_within(lambda: h.note("after the session"), 10)
    assert ended and noted, f"History's lock was left held (session ended {ended}; errors {errors})"
