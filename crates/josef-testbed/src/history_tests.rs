//! One synthetic history per anomaly class: each is found, and a clean history reports none.

use super::*;

use josef_records::RecordBatchBuilder;

const T: &str = "t";

/// Three records of producer "p" acked at 0, 1, 2 of partition 0 and read back there.
fn clean() -> History {
    let mut h = History::new();
    for (i, v) in ["a", "b", "c"].iter().enumerate() {
        h.send(T, v.as_bytes(), "p", None).unwrap();
        h.ack(v.as_bytes(), 0, Some(i as i64)).unwrap();
    }
    h
}

fn read_back(h: &mut History, level: Isolation, values: &[(i64, &str)]) {
    for (o, v) in values {
        h.read(level, T, 0, *o, v.as_bytes());
    }
}

fn only(r: &Report, kind: Anomaly) {
    assert_eq!(r.count(kind), 1, "{kind:?} not reported once:\n{r}");
    assert_eq!(
        r.anomalies.values().map(Vec::len).sum::<usize>(),
        1,
        "other anomalies than {kind:?}:\n{r}"
    );
}

#[test]
fn a_clean_history_has_no_anomaly() {
    let mut h = clean();
    read_back(
        &mut h,
        Isolation::ReadUncommitted,
        &[(0, "a"), (1, "b"), (2, "c")],
    );
    h.committed("g", T, 0, 1);
    h.committed("g", T, 0, 3);
    let r = check(&h);
    assert!(r.ok(), "{r}");
    assert_eq!((r.counts["acked"], r.counts["lost"]), (3, 0));
}

#[test]
fn an_acked_record_not_read_back_is_lost() {
    let mut h = clean();
    read_back(&mut h, Isolation::ReadUncommitted, &[(0, "a"), (2, "c")]);
    let r = check(&h);
    only(&r, Anomaly::Lost);
    assert_eq!(r.counts["lost"], 1);
}

#[test]
fn a_failed_record_may_be_absent() {
    let mut h = clean();
    h.send(T, b"d", "p", None).unwrap();
    h.fail(b"d", "REQUEST_TIMED_OUT").unwrap();
    read_back(
        &mut h,
        Isolation::ReadUncommitted,
        &[(0, "a"), (1, "b"), (2, "c")],
    );
    assert!(check(&h).ok());
}

#[test]
fn an_acked_record_read_at_another_offset_moved() {
    let mut h = clean();
    read_back(
        &mut h,
        Isolation::ReadUncommitted,
        &[(0, "a"), (1, "b"), (5, "c")],
    );
    only(&check(&h), Anomaly::Moved);
}

#[test]
fn a_value_read_twice_is_a_duplicate() {
    let mut h = clean();
    read_back(
        &mut h,
        Isolation::ReadUncommitted,
        &[(0, "a"), (1, "b"), (2, "c"), (3, "c")],
    );
    only(&check(&h), Anomaly::Duplicate);
}

#[test]
fn a_producers_records_out_of_send_order_are_reordered() {
    let mut h = History::new();
    for v in ["a", "b"] {
        h.send(T, v.as_bytes(), "p", None).unwrap();
    }
    // Sent a then b, in the log b then a (neither ack names an offset).
    h.ack(b"a", 0, None).unwrap();
    h.ack(b"b", 0, None).unwrap();
    read_back(&mut h, Isolation::ReadUncommitted, &[(0, "b"), (1, "a")]);
    only(&check(&h), Anomaly::Reordered);
}

#[test]
fn a_read_back_whose_offsets_go_back_is_reordered() {
    let mut h = History::new();
    read_back(&mut h, Isolation::ReadUncommitted, &[(0, "x"), (0, "y")]);
    only(&check(&h), Anomaly::Reordered);
}

/// Transaction "t1" of two records, its outcome `outcome` (None: never ended), read_committed
/// seeing `seen` of them.
fn txn(outcome: Option<TxnOutcome>, seen: &[&str]) -> Report {
    let mut h = History::new();
    for v in ["x", "y"] {
        h.send(T, v.as_bytes(), "tp", Some("t1")).unwrap();
    }
    if let Some(o) = outcome {
        h.end_txn("t1", o);
    }
    let reads: Vec<(i64, &str)> = seen
        .iter()
        .enumerate()
        .map(|(i, v)| (i as i64, *v))
        .collect();
    read_back(&mut h, Isolation::ReadCommitted, &reads);
    check(&h)
}

#[test]
fn an_aborted_transaction_seen_by_read_committed() {
    only(
        &txn(Some(TxnOutcome::Aborted), &["x"]),
        Anomaly::AbortedSeen,
    );
    assert!(txn(Some(TxnOutcome::Aborted), &[]).ok());
}

#[test]
fn an_undecided_transaction_seen_by_read_committed() {
    only(&txn(None, &["x", "y"]), Anomaly::UndecidedSeen);
    assert!(txn(None, &[]).ok());
}

#[test]
fn a_transaction_of_unknown_outcome_seen_in_part() {
    only(&txn(Some(TxnOutcome::Unknown), &["x"]), Anomaly::PartialTxn);
    assert!(txn(Some(TxnOutcome::Unknown), &["x", "y"]).ok());
    assert!(txn(Some(TxnOutcome::Unknown), &[]).ok());
}

#[test]
fn a_committed_transaction_not_read_is_lost() {
    only(&txn(Some(TxnOutcome::Committed), &["x"]), Anomaly::Lost);
    assert!(txn(Some(TxnOutcome::Committed), &["x", "y"]).ok());
}

#[test]
fn a_committed_offset_going_back_regresses() {
    let mut h = History::new();
    h.committed("g", T, 0, 10);
    h.committed("g", T, 1, 3);
    h.committed("g", T, 0, 4);
    only(&check(&h), Anomaly::OffsetRegress);
}

fn batch(base: i64, values: &[&str]) -> ReplicaBatch {
    let mut b = RecordBatchBuilder::new();
    for v in values {
        b = b.record(0, None, Some(v.as_bytes()));
    }
    let built = b.base_offset(base).build_bytes().unwrap();
    let h = josef_records::BatchHeader::parse(&built).unwrap();
    ReplicaBatch {
        base_offset: base,
        last_offset: h.last_offset(),
        bytes: built,
    }
}

fn compared(a: Vec<ReplicaBatch>, b: Vec<ReplicaBatch>, strict: bool) -> Report {
    let mut r = Report::default();
    compare_replicas("t-0", &BTreeMap::from([(1, a), (2, b)]), strict, &mut r);
    r
}

#[test]
fn replicas_that_differ_in_a_common_batch_diverge() {
    let same = compared(
        vec![batch(0, &["a", "b"]), batch(2, &["c"])],
        vec![batch(0, &["a", "b"]), batch(2, &["c"])],
        true,
    );
    assert!(same.ok(), "{same}");
    let r = compared(
        vec![batch(0, &["a", "b"]), batch(2, &["c"])],
        vec![batch(0, &["a", "b"]), batch(2, &["z"])],
        true,
    );
    only(&r, Anomaly::DivergentReplicas);
    // Other boundaries below the common end: a diverged history too.
    let r = compared(
        vec![batch(0, &["a", "b"]), batch(2, &["c"])],
        vec![batch(0, &["a"]), batch(1, &["b"]), batch(2, &["c"])],
        true,
    );
    only(&r, Anomaly::DivergentReplicas);
}

#[test]
fn replicas_ending_apart_are_an_anomaly_only_when_strict() {
    let short = || vec![batch(0, &["a", "b"])];
    let long = || vec![batch(0, &["a", "b"]), batch(2, &["c"])];
    only(&compared(short(), long(), true), Anomaly::ReplicaEnds);
    assert!(compared(short(), long(), false).ok());
}

#[test]
fn a_replica_is_read_from_its_segment_files_up_to_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let (b0, b2) = (batch(0, &["a", "b"]), batch(2, &["c"]));
    let mut first = b0.bytes.to_vec();
    first.extend_from_slice(&b2.bytes);
    std::fs::write(dir.path().join(format!("{:020}.log", 0)), &first).unwrap();
    let b3 = batch(3, &["d"]);
    let torn = &b3.bytes[..b3.bytes.len() - 1];
    std::fs::write(dir.path().join(format!("{:020}.log", 3)), torn).unwrap();
    assert_eq!(read_replica(dir.path()).unwrap(), vec![b0, b2]);
}

#[test]
fn a_value_sent_twice_is_refused() {
    let mut h = History::new();
    h.send(T, b"a", "p", None).unwrap();
    assert_eq!(
        h.send(T, b"a", "q", None),
        Err(HistoryError::DuplicateSend("a".into()))
    );
    assert_eq!(
        h.ack(b"zz", 0, Some(0)),
        Err(HistoryError::UnknownValue("zz".into()))
    );
}
