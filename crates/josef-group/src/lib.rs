//! Kafka group coordinator (classic rebalance protocol), offsets and partition assignors, as a
//! deterministic library: no I/O, no threads, no wall clock.
//!
//! - [`GroupCoordinator`]: one shard per `__consumer_offsets` partition. JoinGroup, SyncGroup,
//!   Heartbeat, LeaveGroup, OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete,
//!   ListGroups, DescribeGroups, DeleteGroups; timers keyed by (group, member); state rebuilt by
//!   replaying [`record::GroupRecord`]s.
//! - [`placement`]: which partition owns a group (bit-exact with Java).
//! - [`consumer_protocol`]: ConsumerProtocolSubscription v0–v3 / ConsumerProtocolAssignment.
//! - [`assignor`]: range, roundrobin, sticky, cooperative-sticky; server-side `uniform` and
//!   `range` ([`assignor::server`]).
//! - [`consumer`]: consumer groups of the KIP-848 protocol (ConsumerGroupHeartbeat,
//!   ConsumerGroupDescribe): epochs, member reconciliation, regex subscriptions.
//!
//! JoinGroup and SyncGroup responses are usually *delayed*: the request is parked under a
//! broker-chosen [`api::RequestId`] and answered by an [`api::Completion`] in the result of a
//! later call (another member's join, a leave, a timer). See `docs/groups.md`.
#![deny(missing_docs)]

pub mod api;
pub mod assignor;
pub mod classic;
mod config;
pub mod consumer;
pub mod consumer_protocol;
mod coordinator;
mod error;
mod ids;
mod offset_api;
pub mod offsets;
pub mod placement;
mod rebalance;
pub mod record;
pub mod serde;
mod serde_consumer;
pub mod timer;
pub mod wire;

pub use config::{GroupConfig, GroupConfigError, MigrationPolicy};
pub use coordinator::{GroupCoordinator, GroupResult, Handled, NO_PRODUCER_ID};
pub use error::{Errors, GroupError};
pub use ids::{MemberIdGenerator, RandomMemberIds, SeededMemberIds};
pub use timer::{CoordinatorTimer, GroupTimerKey, NoopTimer};

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
