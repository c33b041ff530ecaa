//! One Kafka partition as a library (Kafka's `Partition` over `UnifiedLog` and
//! `ProducerStateManager`): a [`Partition`] holds a josef-log [`josef_log::Log`], a josef-sequencer
//! producer-state table and the replication state ([`replication::ReplicationState`]) under one
//! lock. It appends for clients (validate → append → commit, acks and `min.insync.replicas`),
//! for the broker (coordinator records, transaction markers), serves reads for consumers and
//! delayed fetches through one path, answers followers (diverging epoch, follower state, HW, ISR
//! expansion) and, as a follower, appends the leader's batches byte for byte and truncates by
//! leader epoch.
//!
//! The replication rules themselves are pure and deterministic ([`replication`]): the current
//! time and the leader's LEO come in as arguments, proposals for the controller come out.
//!
//! ```
//! use josef_partition::replication::ReplicationState;
//! // Broker 1 leads [1, 2]; the HW waits for broker 2.
//! let mut r = ReplicationState::new(1, 0);
//! r.make_leader(1, 1, &[1, 2], &[1, 2], 0, 0);
//! assert_eq!(r.maybe_increment_high_watermark(5, 0), None);
//! let out = r.update_follower_fetch_state(2, 5, 0, -1, 5, 1).unwrap();
//! assert_eq!(out.high_watermark, Some(5));
//! assert_eq!(r.check_enough_replicas_reach_offset(5, 2), Ok(true));
//! ```
#![deny(missing_docs)]

pub mod error;
mod log_start;
pub mod metrics;
pub mod offsets_for_time;
pub mod partition;
mod producer_views;
pub mod replication;
pub mod session_cover;
mod views;

pub use error::{log_error_code, PartitionError};
pub use log_start::DeleteRecordsOutcome;
pub use partition::{
    batch_info, control_type_of, AppendListener, ClientBatch, FetchIsolation, FetchResponseAction,
    FollowerAppend, FollowerFetch, FollowerFetchRequest, FollowerFetchResult, LeaderFetchAnswer,
    OutOfRangeOutcome, Partition, PartitionEvent, ProduceResult, ReadParams, ReadResult,
    SessionFetch,
};
pub use producer_views::{ActiveProducer, ProducerTxnState};
pub use replication::{
    leader_diverging_epoch, truncation_offset, AlterPartitionOutcome, AlterPartitionProposal,
    CommittedPartitionState, EpochEndOffset, FollowerFetchOutcome, FollowerState, IsrState,
    LeadershipChange, ReplicaId, ReplicationState, Role, TruncationDecision,
};
pub use session_cover::SessionCover;
pub use views::{LogBatches, LogDirSummary, ReplicaSummary};

/// Kafka's "no producer id" (−1), defined once in `josef_protocol::constants`.
pub use josef_protocol::constants::NO_PRODUCER_ID;

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
