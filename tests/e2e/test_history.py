"""Unit tests of the history checker (no broker): synthetic histories, one per anomaly, each must be
flagged, and a clean one must not."""
import struct

from history import ABORTED, COMMITTED, OPEN, READ_COMMITTED, READ_UNCOMMITTED, UNKNOWN, History, check, \
    compare_replicas, read_batches

T = "t"


def clean_history():
    """p0 sends 6 records to partitions 0/1, all acked and read back where acked."""
    h = History()
    offs = {0: 0, 1: 0}
    for i in range(6):
        v = b"v%d" % i
        h.send(T, v, "p0")
        p = i % 2
        h.ack(v, p, offs[p])
        offs[p] += 1
    for s in h.sends:
        h.read(READ_UNCOMMITTED, T, s.ack[0], s.ack[1], s.value)
    return h


def kinds(report):
    return {k for k, v in report.anomalies.items() if v}


def test_clean_history_has_no_anomaly():
    r = check(clean_history())
    assert r.ok, r.summary()
    assert r.counts["acked"] == 6 and r.counts["lost"] == 0


def test_lost_acked_record():
    h = clean_history()
    h.reads[READ_UNCOMMITTED][(T, 1)].pop()  # last record of partition 1 gone
    r = check(h)
    assert kinds(r) == {"lost"}, r.summary()
    assert r.counts["lost"] == 1


def test_unacked_record_may_be_missing_or_present():
    h = clean_history()
    h.send(T, b"never-acked", "p0")
    h.send(T, b"failed", "p0")
    h.fail(b"failed", "timed out")
    h.read(READ_UNCOMMITTED, T, 0, 3, b"failed")  # written although the client saw an error: allowed
    assert check(h).ok


def test_duplicate():
    h = clean_history()
    h.read(READ_UNCOMMITTED, T, 0, 3, b"v0")  # written twice (a retry that was not deduplicated)
    r = check(h)
    assert "duplicate" in kinds(r), r.summary()
    assert r.counts["duplicated"] == 1


def test_acked_at_another_offset():
    h = clean_history()
    recs = h.reads[READ_UNCOMMITTED][(T, 0)]
    h.reads[READ_UNCOMMITTED][(T, 0)] = [(o + 10, v) for o, v in recs]  # offsets rewritten after the ack
    assert "moved" in kinds(check(h))


def test_ack_without_an_offset_matches_any_offset_of_its_partition():
    """librdkafka acknowledges a batch whose own answer was lost, once a later batch succeeded, with no
    offset (the soak-13 "moved" record): that is not a move, unless it is read in another partition."""
    h = clean_history()
    h.ack(b"v0", 0, None)
    assert check(h).ok, check(h).summary()
    h.ack(b"v0", 1, None)
    assert "moved" in kinds(check(h))


def test_reordering_within_a_partition():
    h = clean_history()
    recs = h.reads[READ_UNCOMMITTED][(T, 0)]  # v0@0, v2@1, v4@2 -> v2@0, v0@1, v4@2
    h.reads[READ_UNCOMMITTED][(T, 0)] = [(0, recs[1][1]), (1, recs[0][1]), (2, recs[2][1])]
    r = check(h)
    assert "reordered" in kinds(r), r.summary()


def test_read_offsets_going_back():
    h = clean_history()
    h.reads[READ_UNCOMMITTED][(T, 1)].reverse()
    assert "reordered" in kinds(check(h))


def txn_history():
    h = History()
    off = 0
    for n, outcome in enumerate((COMMITTED, ABORTED, COMMITTED)):
        txn = f"tx{n}"
        h.begin_txn(txn)
        for i in range(3):
            v = b"%s-%d" % (txn.encode(), i)
            h.send(T, v, "tp", txn=txn)
            h.ack(v, 0, off)
            h.read(READ_UNCOMMITTED, T, 0, off, v)
            if outcome == COMMITTED:
                h.read(READ_COMMITTED, T, 0, off, v)
            off += 1
        off += 1  # the control batch (commit/abort marker) takes an offset
        h.end_txn(txn, outcome)
    return h


def test_clean_transactions():
    r = check(txn_history())
    assert r.ok, r.summary()
    assert r.counts["txns"] == 3


def test_aborted_record_seen_by_read_committed():
    h = txn_history()
    h.read(READ_COMMITTED, T, 0, 4, b"tx1-0")
    h.reads[READ_COMMITTED][(T, 0)].sort()
    r = check(h)
    assert kinds(r) == {"aborted_seen"}, r.summary()
    assert r.counts["aborted_seen"] == 1


def test_undecided_record_seen_by_read_committed():
    h = txn_history()
    h.begin_txn("tx9")
    h.send(T, b"tx9-0", "tp", txn="tx9")
    h.ack(b"tx9-0", 0, 100)
    h.read(READ_UNCOMMITTED, T, 0, 100, b"tx9-0")
    h.read(READ_COMMITTED, T, 0, 100, b"tx9-0")
    assert h.txns["tx9"] == OPEN
    r = check(h)
    assert kinds(r) == {"undecided_seen"}, r.summary()


def test_committed_transaction_missing_from_read_committed_is_lost():
    h = txn_history()
    h.reads[READ_COMMITTED][(T, 0)] = [x for x in h.reads[READ_COMMITTED][(T, 0)] if x[1] != b"tx2-1"]
    r = check(h)
    assert kinds(r) == {"lost"}, r.summary()


def test_unknown_outcome_must_be_all_or_nothing():
    h = txn_history()
    h.end_txn("tx2", UNKNOWN)
    assert check(h).ok  # all of it visible: fine
    h.reads[READ_COMMITTED][(T, 0)] = [x for x in h.reads[READ_COMMITTED][(T, 0)] if x[1] != b"tx2-1"]
    assert kinds(check(h)) == {"partial_txn"}
    h.reads[READ_COMMITTED][(T, 0)] = [x for x in h.reads[READ_COMMITTED][(T, 0)] if not x[1].startswith(b"tx2")]
    assert check(h).ok  # none of it visible: fine too


def test_committed_offsets_going_back():
    h = clean_history()
    for o in (1, 3, 3, 5):
        h.committed("g", T, 0, o)
    h.committed("g", T, 1, 2)
    assert check(h).ok
    h.committed("g", T, 0, 4)
    r = check(h)
    assert kinds(r) == {"offset_regress"}, r.summary()


def test_dump_and_load_round_trip(tmp_path):
    h = txn_history()
    h.committed("g", T, 0, 3)
    h.read(READ_COMMITTED, T, 0, 4, b"tx1-0")
    h.dump(tmp_path / "h.json")
    h2 = History.load(tmp_path / "h.json")
    assert check(h2).summary() == check(h).summary()


# ---------------------------------------------------------------- replica logs


def batch(base, count, payload=b"", epoch=0, producer=(-1, -1, -1)):
    """A record batch with a Kafka v2 header (61 bytes) and a body; CRC is not checked by the comparison.
    `producer` is (producer id, producer epoch, base sequence)."""
    body = payload or bytes(8)
    after_length = struct.pack(">ibIhiqqqhii", epoch, 2, 0, 0, count - 1, 0, 0, *producer, count) + body
    return struct.pack(">qi", base, len(after_length)) + after_length


def write_log(d, batches, seg=0):
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{seg:020d}.log").write_bytes(b"".join(batches))


def test_batches_are_parsed_across_segments_and_torn_tails_noted(tmp_path):
    p = tmp_path / "n1" / "t-0"
    write_log(p, [batch(0, 2), batch(2, 3)], seg=0)
    write_log(p, [batch(5, 1), batch(6, 2)[:30]], seg=5)
    got, notes = read_batches(p)
    assert [(b, l) for b, l, _ in got] == [(0, 1), (2, 4), (5, 5)]
    assert notes and "torn" in notes[0]


def test_identical_replicas_and_a_lagging_follower(tmp_path):
    for n in (1, 2, 3):
        bs = [batch(0, 2, b"a"), batch(2, 2, b"b")] + ([batch(4, 1, b"c")] if n != 3 else [])
        write_log(tmp_path / f"n{n}" / "t-0", bs)
    dirs = {n: tmp_path / f"n{n}" for n in (1, 2, 3)}
    r = compare_replicas(dirs)
    assert r.ok, r.summary()
    assert r.counts["partitions_compared"] == 1
    assert any("log end offset" in i for i in r.info)
    assert {k for k, v in compare_replicas(dirs, strict_ends=True).anomalies.items() if v} == {"replica_ends"}


def test_divergent_replicas_flagged(tmp_path):
    write_log(tmp_path / "n1" / "t-0", [batch(0, 2, b"a"), batch(2, 2, b"b")])
    write_log(tmp_path / "n2" / "t-0", [batch(0, 2, b"a"), batch(2, 2, b"X")])  # same offsets, other data
    write_log(tmp_path / "n1" / "t-1", [batch(0, 2, b"a"), batch(2, 2, b"b")])
    write_log(tmp_path / "n2" / "t-1", [batch(0, 1, b"a"), batch(1, 3, b"b")])  # other boundaries
    write_log(tmp_path / "n1" / "t-2", [batch(0, 2, b"a")])
    write_log(tmp_path / "n2" / "t-2", [batch(0, 2, b"a", epoch=1)])  # same records, other leader epoch
    r = compare_replicas({1: tmp_path / "n1", 2: tmp_path / "n2"})
    div = r.anomalies["divergent_replicas"]
    assert len(div) == 3, r.summary()
    assert any("t-0" in d for d in div) and any("t-1" in d and "boundaries" in d for d in div)


def test_check_with_replica_dirs_and_metadata_log_skipped(tmp_path):
    write_log(tmp_path / "n1" / "__cluster_metadata-0", [batch(0, 1, b"m1")])
    write_log(tmp_path / "n2" / "__cluster_metadata-0", [batch(0, 1, b"m2")])
    r = check(clean_history(), replica_dirs={1: tmp_path / "n1", 2: tmp_path / "n2"})
    assert r.ok, r.summary()


def test_a_duplicate_resent_under_a_new_producer_epoch_is_the_clients_and_reported_apart(tmp_path):
    # librdkafka #4953: offsets 0-1 stored under epoch 0, then the same records again at 2-3 under epoch 1
    # from sequence 0.
    for n in (1, 2):
        write_log(tmp_path / f"n{n}" / "t-0", [batch(0, 2, producer=(7, 0, 0)), batch(2, 2, producer=(7, 1, 0))])
    h = History()
    for i, v in enumerate((b"a", b"b")):
        h.send(T, v, "p0")
        h.ack(v, 0, i)
    for o, v in enumerate((b"a", b"b", b"a", b"b")):
        h.read(READ_UNCOMMITTED, T, 0, o, v)
    r = check(h, replica_dirs={1: tmp_path / "n1", 2: tmp_path / "n2"})
    assert r.ok, r.summary()
    assert kinds(r) == {"client_epoch_resend"} and r.counts["client_epoch_resends"] == 2
    assert r.counts["duplicated"] == 0


def test_a_duplicate_under_the_same_epoch_or_another_producer_is_a_duplicate(tmp_path):
    write_log(tmp_path / "n1" / "t-0", [batch(0, 1, producer=(7, 0, 0)), batch(1, 1, producer=(7, 0, 0))])
    write_log(tmp_path / "n1" / "t-1", [batch(0, 1, producer=(7, 0, 0)), batch(1, 1, producer=(8, 1, 0))])
    h = History()
    for p, v in ((0, b"a"), (1, b"b")):
        h.send(T, v, "p0")
        h.ack(v, p, 0)
        h.read(READ_UNCOMMITTED, T, p, 0, v)
        h.read(READ_UNCOMMITTED, T, p, 1, v)
    r = check(h, replica_dirs={1: tmp_path / "n1"})
    assert not r.ok and kinds(r) == {"duplicate"} and r.counts["duplicated"] == 2, r.summary()
