//! Kafka's KRaft controller as a pure, deterministic state machine.
//!
//! [`Controller`] follows Kafka's `QuorumController` and the managers it is made of, each in a
//! module of the same name: `ClusterControlManager` (registrations, heartbeats, fencing, with
//! [`BrokerHeartbeatManager`] and the state machine [`calculate_next_broker_state`]),
//! `ReplicationControlManager` (topics, partitions, AlterPartition, elections, reassignments,
//! with [`PartitionChangeBuilder`] and [`StripedReplicaPlacer`]; its preferred-leader rebalance
//! acts only for brokers above `leader_imbalance_per_broker_percentage`, the ZooKeeper-era
//! controller's rule), `ProducerIdControlManager`,
//! `ConfigurationControlManager`, `FeatureControlManager` and `AclControlManager` (CreateAcls /
//! DeleteAcls, planned by josef-authorizer).
//!
//! Requests (josef-protocol's generated types) and a [`WriteContext`] (time, next metadata offset)
//! go in; a [`ControllerResult`] (records to commit, response to send after the commit) comes out.
//! The state changes only when committed records are [`replay`](Controller::replay)ed, so a
//! standby that replays the log is ready to take over. No I/O, no threads, no clock, no OS
//! randomness: time comes in `now_ms`, randomness from [`ControllerRng`] seeded by the config.
//!
//! See `docs/cluster.md` for the driver around it. Kafka's rules are in its
//! `metadata/src/main/java/org/apache/kafka/controller/` sources (`QuorumController`,
//! `ClusterControlManager`, `ReplicationControlManager`, `PartitionChangeBuilder`,
//! `BrokerHeartbeatManager`, `ProducerIdControlManager`, `FeatureControlManager`).
#![deny(missing_docs)]

mod acl_control;
mod client_quota_control;
mod cluster_control;
mod config;
mod configuration_control;
mod error;
mod feature_control;
mod heartbeat;
mod leader_imbalance;
mod partition_change;
mod placement;
mod producer_id_control;
mod quorum_controller;
pub mod records;
mod replication_control;
mod rng;
mod scram_control;

pub use cluster_control::BrokerInfo;
pub use config::ControllerConfig;
pub use configuration_control::UNCLEAN_LEADER_ELECTION_ENABLE;
pub use error::{ApiError, ReplayError};
pub use feature_control::MIN_METADATA_VERSION;
pub use heartbeat::{
    calculate_next_broker_state, BrokerControlState, BrokerHeartbeatManager, BrokerSession,
    HeartbeatFacts,
};
pub use josef_metadata::{
    MetadataImage, PartitionRegistration, BROKER_RESOURCE, METADATA_VERSION_FEATURE, TOPIC_RESOURCE,
};
pub use partition_change::{
    ElectionStrategy, LeaderRecoveryState, PartitionChangeBuilder, NO_LEADER, NO_LEADER_CHANGE,
};
pub use placement::{StripedReplicaPlacer, UsableBroker};
pub use quorum_controller::{
    Controller, ControllerResult, WriteContext, BOOTSTRAP_METADATA_VERSION,
};
pub use records::MetadataRecord;
pub use replication_control::{
    TopicInfo, CLUSTER_METADATA_TOPIC, MAX_ELECTIONS_PER_IMBALANCE, MAX_PARTITIONS_PER_REQUEST,
};
pub use rng::ControllerRng;

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
