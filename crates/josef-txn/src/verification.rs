//! KIP-890 part 1, the partition leader's side (Kafka's `UnifiedLog.maybeStartTransactionVerification`
//! and `AddPartitionsToTxnManager`), as pure decisions: before a producer's first transactional
//! append to a partition in its current transaction, the leader asks the transaction coordinator
//! (a verify-only AddPartitionsToTxn) whether the partition is part of the producer's ongoing
//! transaction. An append the coordinator does not know about fails, so a zombie (a fenced
//! producer, or one whose transaction already ended) cannot open a transaction on a partition
//! that nobody will ever end, which would hold the partition's last stable offset back for good.
//! `transaction.partition.verification.enable`.
//!
//! [`plan_verification`] says, from the transactional batches of one Produce request and each
//! partition's producer state, whether to ask and what; the caller sends the request (in-process
//! to its own coordinator, or over the network) and [`verification_errors`] turns the answer
//! into Produce errors.
//!
//! **Transactions v2** (KIP-890 part 2): a Produce from v12 on comes from a producer that never
//! sends AddPartitionsToTxn; the leader's request then *adds* the partitions
//! (`verify_only` false, AddPartitionsToTxn v5, which the coordinator treats as a v2 client), and
//! it is made whatever `transaction.partition.verification.enable` says ([`produce_adds_partitions`]).
//!
//! The coordinator's answers map as Kafka maps them ([`produce_error`]): TRANSACTION_ABORTABLE
//! (not in the transaction) → INVALID_TXN_STATE (Produce ≤ v10) or TRANSACTION_ABORTABLE (v11+);
//! PRODUCER_FENCED → INVALID_PRODUCER_EPOCH; CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS,
//! COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR and no answer → NOT_ENOUGH_REPLICAS (old clients
//! retry it). Kafka also keeps a verification guard on the partition so that a marker landing
//! between the answer and the append invalidates it; Josef does not (the window is one request).
//!
//! ```
//! use josef_txn::{
//!     plan_verification, verification_errors, AddPartitionsToTxnResult, PartitionTxnState,
//!     TopicPartition, TransactionalAppend, TxnError, Verification,
//! };
//! use josef_protocol::ErrorCode;
//!
//! // Producer 7 (epoch 0) writes t-0 for the first time in its transaction.
//! let first = TransactionalAppend {
//!     partition: TopicPartition::new("t", 0),
//!     producer_id: 7,
//!     producer_epoch: 0,
//!     state: PartitionTxnState { is_leader: true, producer_epoch: None, has_ongoing_txn: false },
//! };
//! let Verification::Ask(check) = plan_verification("tx", [first]) else { panic!() };
//! assert!(check.verify_only);
//! // The coordinator does not know t-0 in tx's transaction.
//! let answer = AddPartitionsToTxnResult::uniform(&check, Some(TxnError::TransactionAbortable));
//! let errors = verification_errors(&answer, 9);
//! assert_eq!(errors[&TopicPartition::new("t", 0)], ErrorCode::InvalidTxnState);
//! ```

use std::collections::{BTreeMap, BTreeSet};

use josef_protocol::ErrorCode;

use crate::api::{AddPartitionsToTxnRequest, AddPartitionsToTxnResult};
use crate::error::TxnError;
use crate::types::TopicPartition;

/// AddPartitionsToTxn carries verify-only batches from v4 on.
pub const VERIFY_ADD_PARTITIONS_TO_TXN_VERSION: i16 = 4;

/// The AddPartitionsToTxn version a leader adds partitions with for a transactions v2 producer:
/// from v5 the coordinator takes the request as coming from a v2 client.
pub const ADD_PARTITIONS_TO_TXN_V2_VERSION: i16 = 5;

/// The first Produce version of transactions v2 (Kafka 4.0).
pub const FIRST_TRANSACTIONS_V2_PRODUCE_VERSION: i16 = 12;

/// Whether a transactional Produce of `version` adds its partitions to the transaction (the
/// producer runs transactions v2 and sent no AddPartitionsToTxn) rather than only verifying them.
pub fn produce_adds_partitions(version: i16) -> bool {
    version >= FIRST_TRANSACTIONS_V2_PRODUCE_VERSION
}

/// What the leader's partition knows of the producer of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionTxnState {
    /// Whether this broker leads the partition (a follower refuses the append anyway, so there
    /// is nothing to verify).
    pub is_leader: bool,
    /// The producer's epoch in the partition's producer state, if it has an entry.
    pub producer_epoch: Option<i16>,
    /// Whether that entry has a transaction open on the partition.
    pub has_ongoing_txn: bool,
}

/// One transactional batch of a Produce request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionalAppend {
    /// Where it goes.
    pub partition: TopicPartition,
    /// The batch's producer id.
    pub producer_id: i64,
    /// The batch's producer epoch.
    pub producer_epoch: i16,
    /// The partition's view of that producer.
    pub state: PartitionTxnState,
}

impl TransactionalAppend {
    /// Whether the coordinator must confirm the partition before the batch is appended: the
    /// partition is led here and the producer has no transaction open on it at this epoch.
    pub fn needs_verification(&self) -> bool {
        let s = &self.state;
        s.is_leader && !(s.producer_epoch == Some(self.producer_epoch) && s.has_ongoing_txn)
    }
}

/// What to do about the transactional batches of one Produce request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    /// Every batch may be appended as it is.
    Unneeded,
    /// The partitions to verify are written by more than one producer (id or epoch): each of
    /// them answers INVALID_PRODUCER_ID_MAPPING without asking.
    Refused(BTreeMap<TopicPartition, ErrorCode>),
    /// Send this verify-only AddPartitionsToTxn (at [`VERIFY_ADD_PARTITIONS_TO_TXN_VERSION`] or
    /// later) to the coordinator of its transactional id.
    Ask(AddPartitionsToTxnRequest),
}

/// Decides the verification of a Produce request with `transactional_id` whose transactional
/// batches are `appends` (the caller checks `transaction.partition.verification.enable` and that
/// the request has a non-empty transactional id).
pub fn plan_verification(
    transactional_id: &str,
    appends: impl IntoIterator<Item = TransactionalAppend>,
) -> Verification {
    let mut need: BTreeSet<TopicPartition> = BTreeSet::new();
    let mut producers: BTreeSet<(i64, i16)> = BTreeSet::new();
    for a in appends {
        if a.needs_verification() {
            producers.insert((a.producer_id, a.producer_epoch));
            need.insert(a.partition);
        }
    }
    let Some(&(producer_id, producer_epoch)) = producers.iter().next() else {
        return Verification::Unneeded;
    };
    if producers.len() > 1 {
        return Verification::Refused(
            need.into_iter()
                .map(|tp| (tp, ErrorCode::InvalidProducerIdMapping))
                .collect(),
        );
    }
    Verification::Ask(AddPartitionsToTxnRequest {
        transactional_id: transactional_id.to_string(),
        producer_id,
        producer_epoch,
        partitions: need,
        verify_only: true,
    })
}

/// The partitions the coordinator did not confirm in `result`, with the error each answers at
/// Produce `produce_version` instead of being appended.
pub fn verification_errors(
    result: &AddPartitionsToTxnResult,
    produce_version: i16,
) -> BTreeMap<TopicPartition, ErrorCode> {
    result
        .partitions
        .iter()
        .filter_map(|(tp, e)| e.map(|e| (tp.clone(), produce_error(e, produce_version))))
        .collect()
}

/// The coordinator's answer for one partition as the producer sees it at Produce `version`.
pub fn produce_error(error: TxnError, version: i16) -> ErrorCode {
    match error {
        TxnError::TransactionAbortable if version >= 11 => ErrorCode::TransactionAbortable,
        TxnError::TransactionAbortable => ErrorCode::InvalidTxnState,
        TxnError::ProducerFenced | TxnError::InvalidProducerEpoch => {
            ErrorCode::InvalidProducerEpoch
        }
        // A v2 producer meets it whenever it writes right after EndTxn (the markers are still
        // being written), and it retries it; older ones only retry NOT_ENOUGH_REPLICAS.
        TxnError::ConcurrentTransactions if produce_adds_partitions(version) => {
            ErrorCode::ConcurrentTransactions
        }
        TxnError::ConcurrentTransactions
        | TxnError::CoordinatorLoadInProgress
        | TxnError::CoordinatorNotAvailable
        | TxnError::NotCoordinator => ErrorCode::NotEnoughReplicas,
        e => ErrorCode::from_i16(e.code()).unwrap_or(ErrorCode::UnknownServerError),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append(topic: &str, pid: i64, epoch: i16, state: PartitionTxnState) -> TransactionalAppend {
        TransactionalAppend {
            partition: TopicPartition::new(topic, 0),
            producer_id: pid,
            producer_epoch: epoch,
            state,
        }
    }

    const FRESH: PartitionTxnState = PartitionTxnState {
        is_leader: true,
        producer_epoch: None,
        has_ongoing_txn: false,
    };

    #[test]
    fn an_open_transaction_at_the_same_epoch_needs_no_verification() {
        let open = PartitionTxnState {
            is_leader: true,
            producer_epoch: Some(3),
            has_ongoing_txn: true,
        };
        assert!(!append("t", 1, 3, open).needs_verification());
        // An older epoch's open transaction does not count.
        assert!(append("t", 1, 4, open).needs_verification());
        // Nor does the same epoch without a transaction open.
        let ended = PartitionTxnState {
            has_ongoing_txn: false,
            ..open
        };
        assert!(append("t", 1, 3, ended).needs_verification());
        // A follower refuses the append anyway.
        let follower = PartitionTxnState {
            is_leader: false,
            ..FRESH
        };
        assert!(!append("t", 1, 3, follower).needs_verification());
        assert_eq!(
            plan_verification("tx", [append("t", 1, 3, follower)]),
            Verification::Unneeded
        );
    }

    #[test]
    fn one_producer_asks_a_verify_only_request_for_the_partitions_it_needs() {
        let open = PartitionTxnState {
            is_leader: true,
            producer_epoch: Some(0),
            has_ongoing_txn: true,
        };
        let plan = plan_verification(
            "tx",
            [
                append("a", 5, 0, FRESH),
                append("b", 5, 0, open),
                append("c", 5, 0, FRESH),
            ],
        );
        assert_eq!(
            plan,
            Verification::Ask(AddPartitionsToTxnRequest {
                transactional_id: "tx".into(),
                producer_id: 5,
                producer_epoch: 0,
                partitions: [TopicPartition::new("a", 0), TopicPartition::new("c", 0)]
                    .into_iter()
                    .collect(),
                verify_only: true,
            })
        );
    }

    #[test]
    fn two_producers_are_refused_without_asking() {
        let plan = plan_verification("tx", [append("a", 5, 0, FRESH), append("b", 5, 1, FRESH)]);
        let Verification::Refused(errors) = plan else {
            panic!("expected a refusal, got {plan:?}");
        };
        assert_eq!(
            errors.into_iter().collect::<Vec<_>>(),
            vec![
                (
                    TopicPartition::new("a", 0),
                    ErrorCode::InvalidProducerIdMapping
                ),
                (
                    TopicPartition::new("b", 0),
                    ErrorCode::InvalidProducerIdMapping
                ),
            ]
        );
    }

    #[test]
    fn answers_map_by_produce_version() {
        assert_eq!(
            produce_error(TxnError::TransactionAbortable, 10),
            ErrorCode::InvalidTxnState
        );
        assert_eq!(
            produce_error(TxnError::TransactionAbortable, 11),
            ErrorCode::TransactionAbortable
        );
        for e in [TxnError::ProducerFenced, TxnError::InvalidProducerEpoch] {
            assert_eq!(produce_error(e, 9), ErrorCode::InvalidProducerEpoch);
        }
        for e in [
            TxnError::ConcurrentTransactions,
            TxnError::CoordinatorLoadInProgress,
            TxnError::CoordinatorNotAvailable,
            TxnError::NotCoordinator,
        ] {
            assert_eq!(produce_error(e, 11), ErrorCode::NotEnoughReplicas);
        }
        // Transactions v2 producers are told the truth about a transaction still ending.
        assert_eq!(
            produce_error(TxnError::ConcurrentTransactions, 12),
            ErrorCode::ConcurrentTransactions
        );
        assert_eq!(
            produce_error(TxnError::NotCoordinator, 12),
            ErrorCode::NotEnoughReplicas
        );
        // Any other answer keeps its own code.
        assert_eq!(
            produce_error(TxnError::UnknownTopicOrPartition, 9),
            ErrorCode::UnknownTopicOrPartition
        );
        assert_eq!(
            produce_error(TxnError::InvalidTxnState, 11),
            ErrorCode::InvalidTxnState
        );
    }

    #[test]
    fn confirmed_partitions_are_not_errors() {
        let result = AddPartitionsToTxnResult {
            transactional_id: "tx".into(),
            partitions: vec![
                (TopicPartition::new("a", 0), None),
                (TopicPartition::new("b", 0), Some(TxnError::ProducerFenced)),
            ],
        };
        assert_eq!(
            verification_errors(&result, 9)
                .into_iter()
                .collect::<Vec<_>>(),
            vec![(TopicPartition::new("b", 0), ErrorCode::InvalidProducerEpoch)]
        );
    }
}
