//! Kafka's client quotas as a pure state machine: time comes in as `now_ms`, throttle times go
//! out; no clock, thread or socket inside.
//!
//! * [`SampledRate`]: Kafka's `Rate` / `SimpleRate` over `quota.window.num` samples of
//!   `quota.window.size.seconds`; [`TokenBucket`] for mutation quotas.
//! * [`throttle_time_ms`]: `(observed − quota) ÷ quota × window`, and its bounded and token-bucket
//!   forms.
//! * [`ClientQuotaManager`]: `producer_byte_rate`, `consumer_byte_rate`, `request_percentage` per
//!   user / client-id with Kafka's eight-level precedence ([`QuotaOverrides`]) and one sensor per
//!   matched level ([`SensorKey`]), dropped after an hour idle.
//! * [`ControllerMutationQuotaManager`]: `controller_mutation_rate` (KIP-599), strict from
//!   CreateTopics v6, DeleteTopics v5, CreatePartitions v3.
//! * [`IpConnectionQuotas`], [`ConnectionCreationRate`]: `connection_creation_rate` per ip and
//!   `max.connection.creation.rate` (KIP-612).
//! * [`QuotaStore`]: quotas from ClientQuotaRecords; AlterClientQuotas and DescribeClientQuotas
//!   answered as Kafka does. [`QuotaManagers`] keeps the store and the managers in step.
//! * [`ThrottledChannels`]: channels muted until their throttle ends (KIP-219).
//! * [`client_throttles`]: which responses the client backs off on by itself (KIP-219).
//! * [`ReplicationQuotaManager`], [`ThrottledReplicas`]: replication throttling (KIP-73);
//!   [`ReplicationThrottles`]: the rates and throttled replicas a broker's configs set.
//! * [`RequestQuotas`]: which request counts against which quota, a throttled fetch emptied,
//!   `throttle_time_ms` written into the response, THROTTLING_QUOTA_EXCEEDED for the topics a
//!   strict mutation quota refuses ([`charge_mutation`]); the quotas follow a metadata image.
//! * [`QuotaSettings::from_props`]: the quota windows of a Kafka configuration.
//! * [`alter_error_response`], [`fail_accepted_entries`], [`alter_entry`], [`describe_request`]:
//!   AlterClientQuotas / DescribeClientQuotas answers and requests outside the store.
//!
//! ```
//! use josef_quota::{ClientQuotaManager, ClientQuotaType, QuotaEntity, QuotaWindow};
//!
//! let mut produce = ClientQuotaManager::new(ClientQuotaType::Produce, QuotaWindow::default());
//! produce.update_quota(&QuotaEntity::User("alice".into()), Some(1_000_000.0));
//! // 15 MB at once: 1.5 MB/s over the 10 s a first burst is spread over, 5 s of throttle.
//! let t0 = 1_700_000_000_000;
//! assert_eq!(produce.record_and_get_throttle_time_ms("alice", "app", 15_000_000.0, t0), 5_000);
//! // Another user has no quota.
//! assert_eq!(produce.record_and_get_throttle_time_ms("bob", "app", 15_000_000.0, t0), 0);
//! ```
#![deny(missing_docs)]

mod alter_response;
mod builders;
mod channels;
mod client;
pub mod config;
mod connection;
mod entity;
mod error;
mod image;
mod kip219;
mod managers;
mod mutation;
mod mutation_request;
mod precedence;
mod rate;
mod replication;
mod replication_config;
mod request_quotas;
mod sensors;
mod settings;
mod store;
mod throttle;
mod token_bucket;

pub use alter_response::{alter_error_response, fail_accepted_entries};
pub use builders::{alter_entry, describe_request};
pub use channels::ThrottledChannels;
pub use client::{nanos_to_percentage, ClientQuotaManager, ClientQuotaType};
pub use config::QuotaWindow;
pub use connection::{ConnectionCreationRate, IpConnectionDecision, IpConnectionQuotas};
pub use entity::{
    EntityName, EntityType, QuotaEntity, QuotaKey, QuotaValueType, DEFAULT_ENTITY_NAME,
};
pub use error::{
    AlterQuotaError, DescribeQuotaError, EntityError, QuotaConfigError, QuotaRecordError,
    ThrottledReplicasError, ThrottlingQuotaExceeded,
};
pub use kip219::{client_throttles, client_throttles_since};
pub use managers::{QuotaManagers, QuotaManagersConfig};
pub use mutation::{
    is_strict, strict_since_version, ControllerMutationQuota, ControllerMutationQuotaManager,
};
pub use mutation_request::{
    answer_throttled_topics, charge_mutation, MutationCharge, TopicPartitionCounts,
};
pub use precedence::{QuotaLevel, QuotaOverrides, SensorKey};
pub use rate::{RateKind, SampledRate};
pub use replication::{
    ReplicationQuotaManager, ThrottledReplicas, FOLLOWER_REPLICATION_THROTTLED_RATE_CONFIG,
    FOLLOWER_REPLICATION_THROTTLED_REPLICAS_CONFIG, LEADER_REPLICATION_THROTTLED_RATE_CONFIG,
    LEADER_REPLICATION_THROTTLED_REPLICAS_CONFIG,
};
pub use replication_config::ReplicationThrottles;
pub use request_quotas::{ImageQuotaUpdate, QuotaClient, RequestQuota, RequestQuotas};
pub use settings::QuotaSettings;
pub use store::{
    entity_from_components, validate_quota_value, AlterOutcome, AlterResult, QuotaChange,
    QuotaFilter, QuotaOp, QuotaStore, MATCH_TYPE_DEFAULT, MATCH_TYPE_EXACT, MATCH_TYPE_SPECIFIED,
};
pub use throttle::{
    bounded_throttle_time_ms, throttle_time_ms, token_bucket_throttle_time_ms, MAX_THROTTLE_TIME_MS,
};
pub use token_bucket::TokenBucket;

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
