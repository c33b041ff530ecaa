//! One test per error code and the rule that produces it.

mod common;
use common::*;
use josef_txn::*;

fn init_req(id: Option<&str>, timeout: i32, pid: i64, epoch: i16) -> InitProducerIdRequest {
    InitProducerIdRequest {
        transactional_id: id.map(str::to_string),
        transaction_timeout_ms: timeout,
        producer_id: pid,
        producer_epoch: epoch,
    }
}

// ----- InitProducerId -------------------------------------------------------------------------

#[test]
fn init_empty_transactional_id_is_invalid_request() {
    let mut h = H::new();
    assert_eq!(
        h.init_req(init_req(Some(""), TIMEOUT, -1, -1)).error,
        Some(TxnError::InvalidRequest)
    );
}

#[test]
fn init_producer_id_without_epoch_is_invalid_request() {
    let mut h = H::new();
    assert_eq!(
        h.init_req(init_req(Some("t"), TIMEOUT, 5, -1)).error,
        Some(TxnError::InvalidRequest)
    );
    assert_eq!(
        h.init_req(init_req(Some("t"), TIMEOUT, -1, 3)).error,
        Some(TxnError::InvalidRequest)
    );
}

#[test]
fn init_timeout_above_max_or_not_positive_is_invalid_transaction_timeout() {
    let mut h = H::new();
    let max = TxnConfig::default().transaction_max_timeout_ms;
    assert_eq!(
        h.init_req(init_req(Some("t"), max + 1, -1, -1)).error,
        Some(TxnError::InvalidTransactionTimeout)
    );
    assert_eq!(
        h.init_req(init_req(Some("t"), 0, -1, -1)).error,
        Some(TxnError::InvalidTransactionTimeout)
    );
    assert_eq!(
        h.init_req(init_req(Some("t"), -5, -1, -1)).error,
        Some(TxnError::InvalidTransactionTimeout)
    );
    assert_eq!(h.init_req(init_req(Some("t"), max, -1, -1)).error, None);
    assert_eq!(h.log_len(), 1);
}

#[test]
fn init_in_prepare_commit_is_concurrent_transactions() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, true);
    assert_eq!(h.init("t").error, Some(TxnError::ConcurrentTransactions));
}

#[test]
fn init_in_prepare_abort_is_concurrent_transactions() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, false);
    assert_eq!(h.init("t").error, Some(TxnError::ConcurrentTransactions));
}

#[test]
fn init_with_unknown_producer_id_is_producer_fenced() {
    let mut h = H::new();
    let r = h.init("t");
    assert_eq!(
        h.init_with("t", r.producer_id + 77, 0).error,
        Some(TxnError::ProducerFenced)
    );
}

#[test]
fn init_with_stale_epoch_is_producer_fenced() {
    let mut h = H::new();
    let r = h.init("t");
    h.init("t"); // epoch 1, last -1
    h.init("t"); // epoch 2, last -1
    assert_eq!(
        h.init_with("t", r.producer_id, 0).error,
        Some(TxnError::ProducerFenced)
    );
}

#[test]
fn init_new_id_with_client_producer_id_is_accepted() {
    // Metadata just created has epoch -1, so any client pid/epoch is accepted (UNKNOWN_PRODUCER_ID recovery).
    let mut h = H::new();
    let r = h.init_with("fresh", 42, 3);
    assert_eq!((r.error, r.producer_id, r.producer_epoch), (None, 1000, 0));
}

struct Failing;
impl ProducerIdGenerator for Failing {
    fn generate_producer_id(&mut self) -> Result<i64, TxnError> {
        Err(TxnError::CoordinatorLoadInProgress)
    }
}

#[test]
fn init_producer_id_generator_error_is_answered() {
    let shard = TxnShard::new(TxnConfig::default(), 0);
    let r = shard.init_producer_id(&init_req(Some("t"), TIMEOUT, -1, -1), 0, &mut Failing);
    assert_eq!(
        r.response.response.error,
        Some(TxnError::CoordinatorLoadInProgress)
    );
    assert!(r.records.is_empty());
    let r = shard.init_producer_id(&init_req(None, TIMEOUT, -1, -1), 0, &mut Failing);
    assert_eq!(
        r.response.response.error,
        Some(TxnError::CoordinatorLoadInProgress)
    );
}

// ----- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------------

#[test]
fn add_partitions_unknown_id_is_invalid_producer_id_mapping() {
    let mut h = H::new();
    assert_eq!(
        h.add("nope", 1, 0, &[("a", 0)]),
        Some(TxnError::InvalidProducerIdMapping)
    );
}

#[test]
fn add_partitions_wrong_producer_id_is_invalid_producer_id_mapping() {
    let mut h = H::new();
    let r = h.init("t");
    assert_eq!(
        h.add("t", r.producer_id + 1, 0, &[("a", 0)]),
        Some(TxnError::InvalidProducerIdMapping)
    );
}

#[test]
fn add_partitions_wrong_epoch_is_producer_fenced() {
    let mut h = H::new();
    let r = h.init("t");
    assert_eq!(
        h.add("t", r.producer_id, 1, &[("a", 0)]),
        Some(TxnError::ProducerFenced)
    );
}

#[test]
fn add_partitions_in_prepare_state_is_concurrent_transactions() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, true);
    assert_eq!(
        h.add("t", pid, e, &[("b", 0)]),
        Some(TxnError::ConcurrentTransactions)
    );
    h.complete_markers();
    let (pid, e) = h.ongoing("u", &[("a", 0)]);
    h.end("u", pid, e, false);
    assert_eq!(
        h.add("u", pid, e, &[("b", 0)]),
        Some(TxnError::ConcurrentTransactions)
    );
}

#[test]
fn add_partitions_empty_id_is_invalid_request() {
    let mut h = H::new();
    assert_eq!(h.add("", 1, 0, &[("a", 0)]), Some(TxnError::InvalidRequest));
}

#[test]
fn add_partitions_error_applies_to_every_partition() {
    let mut h = H::new();
    let r = h.add_req(
        AddPartitionsToTxnRequest {
            transactional_id: "nope".into(),
            producer_id: 1,
            producer_epoch: 0,
            partitions: tps(&[("a", 0), ("b", 3)]),
            verify_only: false,
        },
        TransactionVersion::V0,
    );
    assert_eq!(r.partitions.len(), 2);
    assert!(r
        .partitions
        .iter()
        .all(|(_, e)| *e == Some(TxnError::InvalidProducerIdMapping)));
}

#[test]
fn verify_only_errors_mirror_add_partitions() {
    let mut h = H::new();
    assert_eq!(
        h.verify("nope", 1, 0, &[("a", 0)]).first_error(),
        Some(TxnError::InvalidProducerIdMapping)
    );
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    assert_eq!(
        h.verify("t", pid + 1, e, &[("a", 0)]).first_error(),
        Some(TxnError::InvalidProducerIdMapping)
    );
    assert_eq!(
        h.verify("t", pid, e + 1, &[("a", 0)]).first_error(),
        Some(TxnError::ProducerFenced)
    );
    h.end("t", pid, e, true);
    assert_eq!(
        h.verify("t", pid, e, &[("a", 0)]).first_error(),
        Some(TxnError::ConcurrentTransactions)
    );
    assert_eq!(
        h.verify("", pid, e, &[("a", 0)]).first_error(),
        Some(TxnError::InvalidRequest)
    );
}

#[test]
fn verify_only_in_empty_state_is_transaction_abortable() {
    let mut h = H::new();
    let r = h.init("t");
    assert_eq!(
        h.verify("t", r.producer_id, 0, &[("a", 0)]).first_error(),
        Some(TxnError::TransactionAbortable)
    );
}

#[test]
fn add_offsets_wrong_epoch_is_producer_fenced() {
    let mut h = H::new();
    let r = h.init("t");
    assert_eq!(
        h.add_offsets("t", r.producer_id, 9, "g"),
        Some(TxnError::ProducerFenced)
    );
    assert_eq!(
        h.add_offsets("x", r.producer_id, 0, "g"),
        Some(TxnError::InvalidProducerIdMapping)
    );
}

// ----- EndTxn (TV0/1) --------------------------------------------------------------------------

#[test]
fn end_txn_unknown_id_is_invalid_producer_id_mapping() {
    let mut h = H::new();
    assert_eq!(
        h.end("nope", 1, 0, true),
        Some(TxnError::InvalidProducerIdMapping)
    );
}

#[test]
fn end_txn_wrong_producer_id_is_invalid_producer_id_mapping() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    assert_eq!(
        h.end("t", pid + 1, e, true),
        Some(TxnError::InvalidProducerIdMapping)
    );
}

#[test]
fn end_txn_epoch_mismatch_is_producer_fenced_with_tv1() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    assert_eq!(h.end("t", pid, e + 1, true), Some(TxnError::ProducerFenced));
    assert_eq!(h.state("t"), TxnState::Ongoing);
}

#[test]
fn end_txn_in_empty_is_invalid_txn_state() {
    let mut h = H::new();
    let r = h.init("t");
    assert_eq!(
        h.end("t", r.producer_id, 0, true),
        Some(TxnError::InvalidTxnState)
    );
    assert_eq!(
        h.end("t", r.producer_id, 0, false),
        Some(TxnError::InvalidTxnState)
    );
}

#[test]
fn end_txn_mismatched_result_after_complete_is_invalid_txn_state() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, true);
    h.complete_markers();
    assert_eq!(h.end("t", pid, e, false), Some(TxnError::InvalidTxnState));
    let (pid, e) = h.ongoing("u", &[("a", 0)]);
    h.end("u", pid, e, false);
    h.complete_markers();
    assert_eq!(h.end("u", pid, e, true), Some(TxnError::InvalidTxnState));
}

#[test]
fn end_txn_same_result_during_prepare_is_concurrent_transactions() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, true);
    assert_eq!(
        h.end("t", pid, e, true),
        Some(TxnError::ConcurrentTransactions)
    );
    let (pid, e) = h.ongoing("u", &[("a", 0)]);
    h.end("u", pid, e, false);
    assert_eq!(
        h.end("u", pid, e, false),
        Some(TxnError::ConcurrentTransactions)
    );
}

#[test]
fn end_txn_opposite_result_during_prepare_is_invalid_txn_state() {
    let mut h = H::new();
    let (pid, e) = h.ongoing("t", &[("a", 0)]);
    h.end("t", pid, e, true);
    assert_eq!(h.end("t", pid, e, false), Some(TxnError::InvalidTxnState));
    let (pid, e) = h.ongoing("u", &[("a", 0)]);
    h.end("u", pid, e, false);
    assert_eq!(h.end("u", pid, e, true), Some(TxnError::InvalidTxnState));
}

#[test]
fn end_txn_empty_id_is_invalid_request() {
    let mut h = H::new();
    assert_eq!(h.end("", 1, 0, true), Some(TxnError::InvalidRequest));
}

// ----- Describe --------------------------------------------------------------------------------

#[test]
fn describe_unknown_id_is_transactional_id_not_found() {
    let mut h = H::new();
    assert_eq!(
        h.d.shard().describe("nope").error,
        Some(TxnError::TransactionalIdNotFound)
    );
    assert_eq!(
        h.d.shard().describe("").error,
        Some(TxnError::InvalidRequest)
    );
    let (pid, _) = h.ongoing("t", &[("a", 0)]);
    let d = h.d.shard().describe("t");
    assert_eq!(
        (d.error, d.state, d.producer_id),
        (None, Some(TxnState::Ongoing), pid)
    );
    assert_eq!(d.partitions, tps(&[("a", 0)]));
}

#[test]
fn list_filters_by_state_producer_and_duration() {
    let mut h = H::new();
    let (pid, _) = h.ongoing("t", &[("a", 0)]);
    h.init("u");
    let all = h.d.shard().list(&[], &[], -1, h.now);
    assert_eq!(all.len(), 2);
    let ongoing = h.d.shard().list(&[TxnState::Ongoing], &[], -1, h.now);
    assert_eq!(ongoing.len(), 1);
    assert_eq!(ongoing[0].producer_id, pid);
    assert_eq!(h.d.shard().list(&[], &[pid], -1, h.now).len(), 1);
    assert_eq!(
        h.d.shard()
            .list(&[TxnState::Ongoing], &[], 10, h.now + 10)
            .len(),
        1
    );
    assert_eq!(
        h.d.shard()
            .list(&[TxnState::Ongoing], &[], 10, h.now + 9)
            .len(),
        0
    );
}
