//! One Kafka partition as a library (Kafka's `Partition`): the replication state of a leader and
//! of a follower, with no I/O ([`replication`]).
//!
//! ```
//! use josef_partition::replication::ReplicationState;
//! // A single replica: the HW follows the LEO.
//! let mut r = ReplicationState::single_replica(1, 0, 0);
//! assert_eq!(r.maybe_increment_high_watermark(5, 0), Some(5));
//! assert_eq!(r.check_enough_replicas_reach_offset(5, 2), Ok(true));
//! ```
#![deny(missing_docs)]

pub mod replication;

pub use replication::{
    leader_diverging_epoch, truncation_offset, AlterPartitionOutcome, AlterPartitionProposal,
    CommittedPartitionState, EpochEndOffset, FollowerFetchOutcome, FollowerState, IsrState,
    LeadershipChange, ReplicaId, ReplicationState, Role, TruncationDecision,
};
