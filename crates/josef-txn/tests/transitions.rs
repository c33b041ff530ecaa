//! One test per legal transition of the state table (Kafka's `TransactionMetadata`), plus the
//! request rules that cause it.

mod common;
use common::*;
use josef_txn::*;

#[test]
fn new_id_init_producer_id_enters_empty_with_epoch_0() {
    let mut h = H::new();
    let r = h.init("t");
    assert_eq!((r.error, r.producer_id, r.producer_epoch), (None, 1000, 0));
    let m = h.meta("t");
    assert_eq!(m.state, TxnState::Empty);
    assert_eq!(m.txn_start_timestamp, -1);
    assert_eq!(m.txn_timeout_ms, TIMEOUT);
    assert_eq!(h.log_len(), 1);
}

#[test]
fn empty_to_empty_init_producer_id_bumps_epoch() {
    let mut h = H::new();
    h.init("t");
    let r = h.init("t");
    assert_eq!((r.producer_id, r.producer_epoch), (1000, 1));
    assert_eq!(h.state("t"), TxnState::Empty);
    assert_eq!(h.meta("t").last_producer_epoch, -1);
}

#[test]
fn empty_to_ongoing_add_partitions_sets_start_time() {
    let mut h = H::new();
    let r = h.init("t");
    h.now += 10;
    assert_eq!(h.add("t", r.producer_id, 0, &[("a", 0)]), None);
    let m = h.meta("t");
    assert_eq!(m.state, TxnState::Ongoing);
    assert_eq!(m.txn_start_timestamp, h.now);
    assert_eq!(m.partitions, tps(&[("a", 0)]));
}

#[test]
fn ongoing_to_ongoing_add_partitions_keeps_start_time_and_unions() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    let start = h.meta("t").txn_start_timestamp;
    h.now += 100;
    assert_eq!(h.add("t", pid, e, &[("b", 1)]), None);
    let m = h.meta("t");
    assert_eq!(m.txn_start_timestamp, start);
    assert_eq!(m.txn_last_update_timestamp, h.now);
    assert_eq!(m.partitions, tps(&[("a", 0), ("b", 1)]));
}

#[test]
fn ongoing_with_all_partitions_present_answers_none_without_write() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0), ("b", 0)]);
    let before = h.log_len();
    assert_eq!(h.add("t", pid, e, &[("a", 0)]), None);
    assert_eq!(h.log_len(), before);
}

#[test]
fn ongoing_to_prepare_commit_on_end_txn_commit() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    assert_eq!(h.end("t", pid, e, true), None);
    assert_eq!(h.state("t"), TxnState::PrepareCommit);
    assert_eq!(h.markers.len(), 1);
    let m = &h.markers[0];
    assert_eq!(m.result, TransactionResult::Commit);
    assert_eq!(
        (m.producer_id, m.producer_epoch, m.coordinator_epoch),
        (pid, e, 5)
    );
    assert_eq!(m.partitions, tps(&[("a", 0)]));
}

#[test]
fn ongoing_to_prepare_abort_on_end_txn_abort() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    assert_eq!(h.end("t", pid, e, false), None);
    assert_eq!(h.state("t"), TxnState::PrepareAbort);
    assert_eq!(h.markers[0].result, TransactionResult::Abort);
}

#[test]
fn prepare_commit_to_complete_commit_when_markers_complete() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, true);
    assert_eq!(h.complete_markers(), 1);
    let m = h.meta("t");
    assert_eq!(m.state, TxnState::CompleteCommit);
    assert!(m.partitions.is_empty());
}

#[test]
fn prepare_abort_to_complete_abort_when_markers_complete() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, false);
    assert_eq!(h.complete_markers(), 1);
    assert_eq!(h.state("t"), TxnState::CompleteAbort);
}

#[test]
fn complete_commit_to_ongoing_resets_start_time() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, true);
    h.complete_markers();
    h.now += 500;
    assert_eq!(h.add("t", pid, e, &[("b", 0)]), None);
    let m = h.meta("t");
    assert_eq!(m.state, TxnState::Ongoing);
    assert_eq!(m.txn_start_timestamp, h.now);
    assert_eq!(m.partitions, tps(&[("b", 0)]));
}

#[test]
fn complete_abort_to_ongoing_on_add_partitions() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, false);
    h.complete_markers();
    assert_eq!(h.add("t", pid, e, &[("a", 0)]), None);
    assert_eq!(h.state("t"), TxnState::Ongoing);
}

#[test]
fn complete_commit_to_empty_on_init_producer_id_bumps_epoch() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, true);
    h.complete_markers();
    let r = h.init("t");
    assert_eq!((r.producer_id, r.producer_epoch), (pid, e + 1));
    assert_eq!(h.state("t"), TxnState::Empty);
}

#[test]
fn complete_abort_to_empty_on_init_producer_id() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, false);
    h.complete_markers();
    let r = h.init("t");
    assert_eq!((r.error, r.producer_epoch), (None, e + 1));
    assert_eq!(h.state("t"), TxnState::Empty);
}

#[test]
fn ongoing_to_prepare_epoch_fence_to_prepare_abort_on_init_producer_id() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    let r = h.init("t");
    // The fenced epoch is never returned: the client must retry.
    assert_eq!(r.error, Some(TxnError::ConcurrentTransactions));
    let m = h.meta("t");
    assert_eq!(m.state, TxnState::PrepareAbort);
    assert_eq!(m.producer_epoch, e + 1);
    assert_eq!(m.last_producer_epoch, -1);
    assert_eq!(h.markers.len(), 1);
    assert_eq!(h.markers[0].producer_epoch, e + 1);
    assert_eq!(h.markers[0].result, TransactionResult::Abort);
    // Retry while markers are pending: CONCURRENT_TRANSACTIONS.
    assert_eq!(h.init("t").error, Some(TxnError::ConcurrentTransactions));
    h.complete_markers();
    // Retry after: the epoch is bumped a second time.
    let r = h.init("t");
    assert_eq!(
        (r.error, r.producer_id, r.producer_epoch),
        (None, pid, e + 2)
    );
    // The old producer is fenced.
    assert_eq!(
        h.add("t", pid, e, &[("a", 0)]),
        Some(TxnError::ProducerFenced)
    );
}

#[test]
fn expirable_states_to_dead_writes_tombstone() {
    let mut h = H::new();
    h.init("idle");
    let (pid, e) = h.ongoing("busy", &[("a", 0)]);
    let _ = (pid, e);
    h.now += TxnConfig::default().transactional_id_expiration_ms;
    // "busy" times out first (aborted, not expired); "idle" expires.
    let t = h.tick();
    assert_eq!(t.expired, vec!["idle".to_string()]);
    assert!(h.d.shard().get("idle").is_none());
    let last = h.d.writer().entries().iter().rev().find_map(|e| match e {
        josef_coordinator::LogEntry::Record(r) if r.record.transactional_id == "idle" => {
            Some(r.record.clone())
        }
        _ => None,
    });
    assert_eq!(last.unwrap().value, None);
}

#[test]
fn complete_states_expire_after_idle_period() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, true);
    h.complete_markers();
    h.now += TxnConfig::default().transactional_id_expiration_ms - 1;
    assert!(h.tick().expired.is_empty());
    h.now += 1;
    assert_eq!(h.tick().expired, vec!["t".to_string()]);
    // An expired id starts over with a new producer id.
    let r = h.init("t");
    assert_ne!(r.producer_id, pid);
    assert_eq!(r.producer_epoch, 0);
}

#[test]
fn ongoing_never_expires() {
    let mut h = H::with_config(TxnConfig {
        transactional_id_expiration_ms: 10,
        ..TxnConfig::default()
    });
    h.ongoing("t", &[("a", 0)]);
    h.now += 20;
    assert!(h
        .d
        .shard()
        .expire_transactional_ids(h.now)
        .records
        .is_empty());
}

#[test]
fn timed_out_ongoing_is_fenced_and_aborted() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    let start = h.meta("t").txn_start_timestamp;
    // Not yet: the rule is start + timeout < now (strict).
    h.now = start + TIMEOUT as i64;
    assert!(h.tick().aborted.is_empty());
    h.now += 1;
    assert_eq!(h.tick().aborted, vec!["t".to_string()]);
    let m = h.meta("t");
    assert_eq!((m.state, m.producer_epoch), (TxnState::PrepareAbort, e + 1));
    assert_eq!(h.markers.last().unwrap().producer_epoch, e + 1);
    // The stale producer can neither commit nor add partitions.
    assert_eq!(h.end("t", pid, e, true), Some(TxnError::ProducerFenced));
    h.complete_markers();
    assert_eq!(h.state("t"), TxnState::CompleteAbort);
    assert_eq!(h.end("t", pid, e, true), Some(TxnError::ProducerFenced));
    assert_eq!(
        h.add("t", pid, e, &[("a", 0)]),
        Some(TxnError::ProducerFenced)
    );
}

#[test]
fn add_offsets_to_txn_adds_the_groups_consumer_offsets_partition() {
    let mut h = H::new();
    let r = h.init("t");
    assert_eq!(h.add_offsets("t", r.producer_id, 0, "my-group"), None);
    let expected = TopicPartition::new("__consumer_offsets", partition_for("my-group", 50));
    let m = h.meta("t");
    assert_eq!(m.state, TxnState::Ongoing);
    assert!(m.partitions.contains(&expected));
    h.end("t", r.producer_id, 0, true);
    assert!(h.markers[0].partitions.contains(&expected));
}

#[test]
fn end_txn_retry_after_complete_commit_answers_none_without_write() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, true);
    h.complete_markers();
    let before = h.log_len();
    assert_eq!(h.end("t", pid, e, true), None);
    assert_eq!(h.log_len(), before);
    assert!(h.markers.is_empty());
}

#[test]
fn end_txn_retry_after_complete_abort_answers_none() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, false);
    h.complete_markers();
    assert_eq!(h.end("t", pid, e, false), None);
}

#[test]
fn init_exhausted_epoch_rotates_to_new_producer_id() {
    let mut h = H::new();
    let r = h.init("t");
    // Walk the epoch up to exhaustion (Short.MAX - 1).
    let mut epoch = r.producer_epoch;
    while !is_epoch_exhausted(epoch) {
        epoch = h.init("t").producer_epoch;
    }
    assert_eq!(epoch, i16::MAX - 1);
    let r2 = h.init("t");
    assert_ne!(r2.producer_id, r.producer_id);
    assert_eq!(r2.producer_epoch, 0);
    let m = h.meta("t");
    assert_eq!(m.prev_producer_id, r.producer_id);
}

#[test]
fn init_retry_with_last_epoch_returns_current_epoch_without_bump() {
    let mut h = H::new();
    let r0 = h.init("t");
    // Client at epoch 0 re-inits with its pid/epoch (KIP-360): bump to 1, last = 0.
    let r1 = h.init_with("t", r0.producer_id, 0);
    assert_eq!(r1.producer_epoch, 1);
    assert_eq!(h.meta("t").last_producer_epoch, 0);
    // The response was lost; the client retries with epoch 0 again: same answer, no bump.
    let r2 = h.init_with("t", r0.producer_id, 0);
    assert_eq!((r2.error, r2.producer_epoch), (None, 1));
}

#[test]
fn init_previous_producer_id_with_exhausted_epoch_is_accepted() {
    let mut h = H::new();
    let r = h.init("t");
    let mut epoch = r.producer_epoch;
    while !is_epoch_exhausted(epoch) {
        epoch = h.init_with("t", r.producer_id, epoch).producer_epoch;
    }
    // Rotation with the client's pid/epoch records the last epoch.
    let rotated = h.init_with("t", r.producer_id, epoch);
    assert_ne!(rotated.producer_id, r.producer_id);
    // The rotation answer was lost: the client retries with the old pid and exhausted epoch.
    let retry = h.init_with("t", r.producer_id, epoch);
    assert_eq!(retry.error, None);
    assert_eq!(
        (retry.producer_id, retry.producer_epoch),
        (rotated.producer_id, 0)
    );
}

#[test]
fn null_transactional_id_gets_fresh_producer_id_without_write() {
    let mut h = H::new();
    let r = h.init_req(InitProducerIdRequest {
        transactional_id: None,
        transaction_timeout_ms: 0,
        producer_id: -1,
        producer_epoch: -1,
    });
    assert_eq!((r.error, r.producer_id, r.producer_epoch), (None, 1000, 0));
    assert_eq!(h.log_len(), 0);
    let r = h.init_req(InitProducerIdRequest {
        transactional_id: None,
        transaction_timeout_ms: 0,
        producer_id: -1,
        producer_epoch: -1,
    });
    assert_eq!(r.producer_id, 1001);
}

#[test]
fn verify_only_reports_membership_without_write() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    let before = h.log_len();
    let r = h.verify("t", pid, e, &[("a", 0), ("b", 0)]);
    assert_eq!(
        r.partitions,
        vec![
            (tp("a", 0), None),
            (tp("b", 0), Some(TxnError::TransactionAbortable))
        ]
    );
    assert_eq!(h.log_len(), before);
    assert_eq!(h.state("t"), TxnState::Ongoing);
    assert!(!h.meta("t").partitions.contains(&tp("b", 0)));
}

#[test]
fn load_rebuilds_state_and_reemits_prepare_markers() {
    let mut h = H::new();
    let (p1, e1) = h.ongoing("committing", &[("a", 0), ("b", 1)]);
    h.end("committing", p1, e1, true);
    h.markers.clear(); // the coordinator dies before sending them
    h.ongoing("open", &[("c", 0)]);
    let (p3, e3) = h.ongoing("done", &[("a", 1)]);
    h.end("done", p3, e3, false);
    h.complete_markers();
    let before: Vec<_> =
        h.d.shard()
            .transactions()
            .values()
            .map(|m| {
                (
                    m.transactional_id.clone(),
                    m.state,
                    m.producer_id,
                    m.producer_epoch,
                    m.partitions.clone(),
                )
            })
            .collect();
    let markers = h.restart();
    let after: Vec<_> =
        h.d.shard()
            .transactions()
            .values()
            .map(|m| {
                (
                    m.transactional_id.clone(),
                    m.state,
                    m.producer_id,
                    m.producer_epoch,
                    m.partitions.clone(),
                )
            })
            .collect();
    assert_eq!(before, after);
    assert_eq!(markers.len(), 1);
    assert_eq!(markers[0].transactional_id, "committing");
    assert_eq!(markers[0].result, TransactionResult::Commit);
    assert_eq!(markers[0].partitions, tps(&[("a", 0), ("b", 1)]));
    assert_eq!(markers[0].coordinator_epoch, 6);
    assert_eq!(h.complete_markers(), 1);
    assert_eq!(h.state("committing"), TxnState::CompleteCommit);
}

#[test]
fn stale_marker_completion_is_ignored() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, true);
    let mut stale = h.markers[0].clone();
    stale.coordinator_epoch -= 1;
    let r = h.d.shard().markers_completed(&stale, h.now);
    assert!(r.records.is_empty());
    let mut wrong = h.markers[0].clone();
    wrong.result = TransactionResult::Abort;
    assert!(h
        .d
        .shard()
        .markers_completed(&wrong, h.now)
        .records
        .is_empty());
    assert_eq!(h.complete_markers(), 1);
    // A duplicate completion writes nothing.
    let dup = TxnMarkerRequest {
        coordinator_epoch: 5,
        ..stale
    };
    assert!(h
        .d
        .shard()
        .markers_completed(&dup, h.now)
        .records
        .is_empty());
}

#[test]
fn every_written_record_is_a_legal_transition() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, true);
    h.complete_markers();
    h.init("t");
    let r = h.init("u");
    h.add("u", r.producer_id, r.producer_epoch, &[("x", 1)]);
    h.init("u");
    h.complete_markers();
    h.now += 10 * TIMEOUT as i64;
    h.tick();
    check_log_transitions(&h);
}

/// Walks the log: each id's consecutive states follow the table.
pub fn check_log_transitions(h: &H) {
    let mut last: std::collections::BTreeMap<String, TxnState> = Default::default();
    for e in h.d.writer().entries() {
        if let josef_coordinator::LogEntry::Record(r) = e {
            let id = &r.record.transactional_id;
            match &r.record.value {
                Some(v) => {
                    if let Some(prev) = last.get(id) {
                        assert!(
                            prev.can_transition_to(v.state, v.client_transaction_version),
                            "{id}: {prev:?} -> {:?}",
                            v.state
                        );
                    }
                    last.insert(id.clone(), v.state);
                }
                None => {
                    last.remove(id);
                }
            }
        }
    }
}
