//! Kafka transaction coordinator as a deterministic state machine.
//!
//! [`TxnShard`] is the coordinator of one `__transaction_state` partition, written for
//! josef-coordinator's runtime: each handler (`init_producer_id`, `add_partitions_to_txn`,
//! `add_offsets_to_txn`, `end_txn`, `markers_completed`, `on_tick`) looks at the state and
//! returns the [`TxnLogRecord`]s to append plus a [`Reply`] (response and marker writes); the state
//! only changes when the records are replayed, so loading a partition runs the same code.
//! [`TxnCoordinator`] routes requests to the shards a node leads, answering `NOT_COORDINATOR` and
//! `COORDINATOR_LOAD_IN_PROGRESS` where Kafka does.
//!
//! No I/O, no threads, no clock: time comes in as `now_ms`, producer ids through
//! [`ProducerIdGenerator`], records go out through josef-coordinator's `PartitionWriter`.
//!
//! [`TxnMarkerChannel`] is the coordinator's marker bookkeeping across brokers (what to send to
//! which partition leader, what to retry, when every marker is written).
//!
//! [`plan_verification`] is a partition leader's side of KIP-890 part 1: which transactional
//! appends the coordinator must confirm first, and how its answers map to Produce errors;
//! [`txn_offset_commit_verifies`] is the group coordinator's side, for TxnOffsetCommit below v5.
//!
//! See `docs/transactions.md` for the state diagram and the request flow.
#![deny(missing_docs)]

mod api;
mod config;
mod coordinator;
mod error;
mod marker_channel;
mod metadata;
mod offsets_verification;
mod partition;
mod pid;
mod record;
mod serde;
mod shard;
mod state;
mod types;
mod verification;
pub mod wire;

pub use api::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AddPartitionsToTxnResult, EndTxnRequest,
    EndTxnResponse, InitProducerIdRequest, InitProducerIdResponse, Reply, TickOutcome,
    TransactionDescription, TransactionListing, TransactionResult, TxnMarkerRequest,
};
pub use config::TxnConfig;
pub use coordinator::{PartitionStatus, Released, TxnCoordinator, TxnReply};
pub use error::{error_code, TxnError};
pub use marker_channel::{
    marker_error_action, LeaderLookup, MarkerBatch, MarkerErrorAction, MarkerOutcome,
    TxnMarkerChannel,
};
pub use metadata::{
    is_epoch_exhausted, IllegalTransition, TransactionMetadata, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
};
pub use offsets_verification::{
    offsets_verification_request, txn_offset_commit_error, txn_offset_commit_verifies,
    FIRST_ABORTABLE_TXN_OFFSET_COMMIT_VERSION, FIRST_TRANSACTIONS_V2_TXN_OFFSET_COMMIT_VERSION,
};
pub use partition::{
    group_partition_for, java_string_hash, kafka_abs, partition_for, CONSUMER_OFFSETS_TOPIC,
    DEFAULT_OFFSETS_TOPIC_PARTITIONS, DEFAULT_TRANSACTION_STATE_PARTITIONS,
    TRANSACTION_STATE_TOPIC,
};
pub use pid::{ProducerIdGenerator, SequentialProducerIdGenerator};
pub use record::{TxnLogRecord, TxnLogValue};
pub use serde::{TxnRecordSerde, TRANSACTION_LOG_KEY_TYPE};
pub use shard::{TxnResult, TxnShard};
pub use state::TxnState;
pub use types::{TopicPartition, TransactionVersion};
pub use verification::{
    plan_verification, produce_adds_partitions, produce_error, verification_errors,
    PartitionTxnState, TransactionalAppend, Verification, ADD_PARTITIONS_TO_TXN_V2_VERSION,
    FIRST_TRANSACTIONS_V2_PRODUCE_VERSION, VERIFY_ADD_PARTITIONS_TO_TXN_VERSION,
};

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
