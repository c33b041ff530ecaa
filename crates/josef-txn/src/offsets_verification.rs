//! KIP-890 part 1 for transactional offset commits, the group coordinator's side (Kafka's
//! `GroupCoordinatorService.commitTransactionalOffsets` → `CoordinatorPartitionWriter
//! .maybeStartTransactionVerification`): before the first offsets of a producer's transaction
//! are written to the group's `__consumer_offsets` partition, the group coordinator asks the
//! transaction coordinator (a verify-only AddPartitionsToTxn) whether AddOffsetsToTxn put that
//! partition in the producer's ongoing transaction. Without it a zombie (or a client that skipped
//! AddOffsetsToTxn) would leave transactional offsets on the partition that no marker ever ends,
//! and the group's offsets would stay pending for good.
//!
//! Only TxnOffsetCommit below v5: from v5 (transactions v2) the producer sends no AddOffsetsToTxn
//! and the group coordinator *adds* the partition instead. Like Produce verification it is
//! skipped when the partition already has the producer's transaction open at the request's
//! epoch, and it follows `transaction.partition.verification.enable`.
//!
//! ```
//! use josef_txn::{txn_offset_commit_error, txn_offset_commit_verifies, PartitionTxnState, TxnError};
//! use josef_protocol::ErrorCode;
//!
//! let fresh = PartitionTxnState { is_leader: true, producer_epoch: None, has_ongoing_txn: false };
//! assert!(txn_offset_commit_verifies(3, true, fresh, 0));
//! assert!(!txn_offset_commit_verifies(5, true, fresh, 0));
//! // The partition was never added: the version decides the code.
//! assert_eq!(txn_offset_commit_error(TxnError::TransactionAbortable, 3), ErrorCode::InvalidTxnState);
//! assert_eq!(txn_offset_commit_error(TxnError::TransactionAbortable, 4), ErrorCode::TransactionAbortable);
//! ```

use josef_protocol::ErrorCode;

use crate::api::AddPartitionsToTxnRequest;
use crate::error::TxnError;
use crate::partition::{group_partition_for, CONSUMER_OFFSETS_TOPIC};
use crate::types::TopicPartition;
use crate::verification::PartitionTxnState;

/// The first TxnOffsetCommit version of transactions v2: its `__consumer_offsets` partition is
/// added to the transaction by the group coordinator, not verified.
pub const FIRST_TRANSACTIONS_V2_TXN_OFFSET_COMMIT_VERSION: i16 = 5;

/// From this TxnOffsetCommit version the client understands TRANSACTION_ABORTABLE (Kafka's
/// `genericError` operation); older ones are told INVALID_TXN_STATE.
pub const FIRST_ABORTABLE_TXN_OFFSET_COMMIT_VERSION: i16 = 4;

/// Whether a TxnOffsetCommit of `version` by a producer at `producer_epoch` must be verified with
/// the transaction coordinator before it is written, given whether verification is enabled and
/// what the group's `__consumer_offsets` partition knows of the producer.
pub fn txn_offset_commit_verifies(
    version: i16,
    verification_enabled: bool,
    state: PartitionTxnState,
    producer_epoch: i16,
) -> bool {
    verification_enabled
        && version < FIRST_TRANSACTIONS_V2_TXN_OFFSET_COMMIT_VERSION
        && state.is_leader
        && !(state.producer_epoch == Some(producer_epoch) && state.has_ongoing_txn)
}

/// The verify-only AddPartitionsToTxn asking whether `group_id`'s `__consumer_offsets` partition
/// (of `offsets_topic_partitions`) is in the transaction of `transactional_id`.
pub fn offsets_verification_request(
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    group_id: &str,
    offsets_topic_partitions: i32,
) -> AddPartitionsToTxnRequest {
    let partition = TopicPartition::new(
        CONSUMER_OFFSETS_TOPIC,
        group_partition_for(group_id, offsets_topic_partitions),
    );
    AddPartitionsToTxnRequest {
        transactional_id: transactional_id.to_string(),
        producer_id,
        producer_epoch,
        partitions: [partition].into_iter().collect(),
        verify_only: true,
    }
}

/// The transaction coordinator's refusal of the offsets partition as a TxnOffsetCommit of
/// `version` answers it (Kafka's `AddPartitionsToTxnManager` then the group coordinator's
/// exception mapping): not in the transaction → TRANSACTION_ABORTABLE, or INVALID_TXN_STATE
/// below [`FIRST_ABORTABLE_TXN_OFFSET_COMMIT_VERSION`]; a fenced producer → INVALID_PRODUCER_EPOCH;
/// coordinator trouble keeps its own code (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR and
/// COORDINATOR_LOAD_IN_PROGRESS make every client look up or retry).
pub fn txn_offset_commit_error(error: TxnError, version: i16) -> ErrorCode {
    match error {
        TxnError::TransactionAbortable if version >= FIRST_ABORTABLE_TXN_OFFSET_COMMIT_VERSION => {
            ErrorCode::TransactionAbortable
        }
        TxnError::TransactionAbortable => ErrorCode::InvalidTxnState,
        TxnError::ProducerFenced | TxnError::InvalidProducerEpoch => {
            ErrorCode::InvalidProducerEpoch
        }
        e => ErrorCode::from_i16(e.code()).unwrap_or(ErrorCode::UnknownServerError),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRESH: PartitionTxnState = PartitionTxnState {
        is_leader: true,
        producer_epoch: None,
        has_ongoing_txn: false,
    };

    #[test]
    fn only_a_v1_commit_without_its_transaction_open_on_the_partition_is_verified() {
        for v in 0..FIRST_TRANSACTIONS_V2_TXN_OFFSET_COMMIT_VERSION {
            assert!(txn_offset_commit_verifies(v, true, FRESH, 2), "v{v}");
        }
        // Transactions v2 adds the partition instead.
        assert!(!txn_offset_commit_verifies(5, true, FRESH, 2));
        // `transaction.partition.verification.enable=false`.
        assert!(!txn_offset_commit_verifies(3, false, FRESH, 2));
        let open = PartitionTxnState {
            producer_epoch: Some(2),
            has_ongoing_txn: true,
            ..FRESH
        };
        assert!(!txn_offset_commit_verifies(3, true, open, 2));
        // An older epoch's open transaction is no proof for this one.
        assert!(txn_offset_commit_verifies(3, true, open, 3));
        let follower = PartitionTxnState {
            is_leader: false,
            ..FRESH
        };
        assert!(!txn_offset_commit_verifies(3, true, follower, 2));
    }

    #[test]
    fn the_request_names_the_groups_offsets_partition_verify_only() {
        let r = offsets_verification_request("tx", 7, 1, "g", 50);
        assert!(r.verify_only);
        assert_eq!((r.producer_id, r.producer_epoch), (7, 1));
        assert_eq!(
            r.partitions.into_iter().collect::<Vec<_>>(),
            vec![TopicPartition::new(
                CONSUMER_OFFSETS_TOPIC,
                group_partition_for("g", 50)
            )]
        );
    }

    #[test]
    fn refusals_map_by_txn_offset_commit_version() {
        assert_eq!(
            txn_offset_commit_error(TxnError::TransactionAbortable, 0),
            ErrorCode::InvalidTxnState
        );
        assert_eq!(
            txn_offset_commit_error(TxnError::TransactionAbortable, 3),
            ErrorCode::InvalidTxnState
        );
        assert_eq!(
            txn_offset_commit_error(TxnError::TransactionAbortable, 4),
            ErrorCode::TransactionAbortable
        );
        for e in [TxnError::ProducerFenced, TxnError::InvalidProducerEpoch] {
            assert_eq!(
                txn_offset_commit_error(e, 3),
                ErrorCode::InvalidProducerEpoch
            );
        }
        for (e, code) in [
            (
                TxnError::CoordinatorNotAvailable,
                ErrorCode::CoordinatorNotAvailable,
            ),
            (TxnError::NotCoordinator, ErrorCode::NotCoordinator),
            (
                TxnError::CoordinatorLoadInProgress,
                ErrorCode::CoordinatorLoadInProgress,
            ),
            (
                TxnError::InvalidProducerIdMapping,
                ErrorCode::InvalidProducerIdMapping,
            ),
        ] {
            assert_eq!(txn_offset_commit_error(e, 4), code);
        }
    }
}
