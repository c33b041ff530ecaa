//! Transactions V2 (KIP-890 part 2): the epoch is bumped on every EndTxn.

mod common;
use common::*;
use josef_txn::*;

const V2: TransactionVersion = TransactionVersion::V2;

#[test]
fn tv2_end_txn_bumps_epoch_and_returns_it() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    let r = h.end_tv("t", pid, e, true, V2);
    assert_eq!(
        (r.error, r.producer_id, r.producer_epoch),
        (None, pid, e + 1)
    );
    let m = h.meta("t");
    assert_eq!(
        (m.state, m.producer_epoch, m.last_producer_epoch),
        (TxnState::PrepareCommit, e + 1, e)
    );
    assert_eq!(h.markers[0].producer_epoch, e + 1);
    h.complete_markers();
    assert_eq!(h.state("t"), TxnState::CompleteCommit);
    // The next transaction uses the bumped epoch.
    assert_eq!(h.add("t", pid, e + 1, &[("a", 0)]), None);
}

#[test]
fn tv2_retry_is_recognised_by_epoch_minus_one() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end_tv("t", pid, e, true, V2);
    // Retry while preparing: CONCURRENT_TRANSACTIONS.
    assert_eq!(
        h.end_tv("t", pid, e, true, V2).error,
        Some(TxnError::ConcurrentTransactions)
    );
    h.complete_markers();
    // Retry after completion: NONE with the current id/epoch.
    let r = h.end_tv("t", pid, e, true, V2);
    assert_eq!(
        (r.error, r.producer_id, r.producer_epoch),
        (None, pid, e + 1)
    );
    // A retry of the other result is INVALID_TXN_STATE.
    assert_eq!(
        h.end_tv("t", pid, e, false, V2).error,
        Some(TxnError::InvalidTxnState)
    );
}

#[test]
fn tv2_abort_without_partitions_is_allowed_in_empty() {
    let mut h = H::new();
    let r = h.init("t");
    let end = h.end_tv("t", r.producer_id, 0, false, V2);
    assert_eq!((end.error, end.producer_epoch), (None, 1));
    assert_eq!(h.state("t"), TxnState::PrepareAbort);
    assert!(h.markers[0].partitions.is_empty());
    h.complete_markers();
    assert_eq!(h.state("t"), TxnState::CompleteAbort);
    // Commit in Empty stays INVALID_TXN_STATE.
    let r = h.init("u");
    assert_eq!(
        h.end_tv("u", r.producer_id, 0, true, V2).error,
        Some(TxnError::InvalidTxnState)
    );
}

#[test]
fn tv2_stale_epoch_is_producer_fenced() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    assert_eq!(
        h.end_tv("t", pid, e + 3, true, V2).error,
        Some(TxnError::ProducerFenced)
    );
}

#[test]
fn tv2_epoch_overflow_moves_to_next_producer_id() {
    let mut h = H::new();
    let r = h.init("t");
    let pid = r.producer_id;
    // Bring the epoch to exhaustion with InitProducerId bumps.
    let mut epoch = r.producer_epoch;
    while epoch < i16::MAX - 1 {
        epoch = h.init("t").producer_epoch;
    }
    assert_eq!(epoch, i16::MAX - 1);
    assert_eq!(h.add("t", pid, epoch, &[("a", 0)]), None);
    let end = h.end_tv("t", pid, epoch, true, V2);
    assert_eq!(end.error, None);
    let next = end.producer_id;
    assert_ne!(next, pid);
    assert_eq!(end.producer_epoch, 0);
    let m = h.meta("t");
    assert_eq!(
        (m.producer_id, m.producer_epoch, m.next_producer_id),
        (pid, i16::MAX, next)
    );
    h.complete_markers();
    let m = h.meta("t");
    assert_eq!(
        (m.producer_id, m.producer_epoch, m.prev_producer_id),
        (next, 0, pid)
    );
    // A retry with the old id and exhausted epoch is recognised.
    let retry = h.end_tv("t", pid, i16::MAX - 1, true, V2);
    assert_eq!(
        (retry.error, retry.producer_id, retry.producer_epoch),
        (None, next, 0)
    );
}

#[test]
fn tv2_server_timeout_abort_bumps_epoch_twice() {
    let mut h = H::with_config(TxnConfig {
        transaction_version: V2,
        ..TxnConfig::default()
    });
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.now += TIMEOUT as i64 + 1;
    assert_eq!(h.tick().aborted.len(), 1);
    let m = h.meta("t");
    assert_eq!((m.state, m.producer_epoch), (TxnState::PrepareAbort, e + 2));
    assert_eq!(
        h.end_tv("t", pid, e, true, V2).error,
        Some(TxnError::ProducerFenced)
    );
}
