//! josef-server: the request-handling layer of a Kafka-compatible broker, as a library.
//!
//! Everything between a socket and the Josef state machines lives here: connection handling over
//! any transport ([`connection::serve_connection`] takes any `AsyncRead + AsyncWrite`, so TCP, TLS
//! and in-memory pipes), the dispatch of every Kafka API ([`dispatch`]), the handlers with Kafka's
//! behaviour, the coordinator runtimes (groups, transactions) over the partition logs, the delayed
//! produce and fetch purgatories, quotas, ACLs and SASL on connections, and the cluster node
//! runtime ([`cluster`]: quorum, controller, replica fetchers, broker lifecycle).
//!
//! A builder picks the seam they need:
//! - **Storage**: [`config::BrokerConfig::log_storage`] takes any [`josef_log::storage::Storage`]
//!   ([`log_storage::LogStorage::Custom`]); offsets, leader epochs, producer state and the
//!   transaction index stay Josef's, so Kafka's semantics hold over a memory map, an object store or
//!   a database alike. `examples/memory_broker.rs` at the repository root is a whole broker on
//!   in-memory storage in a page of code.
//! - **Partitions, metadata and coordinators** ([`kit`]): the handlers reach partitions through
//!   a [`kit::PartitionStore`], report brokers and topics from a [`kit::MetadataView`] (a single
//!   node's topics or a cluster node's image) and answer the group and transaction APIs through a
//!   [`kit::GroupCoordinator`] and a [`kit::TxnCoordinator`], small traits documented with the
//!   Kafka rules each method keeps. The state opened by [`state::BrokerState::open`] has Josef's
//!   own; `with_partition_store`, `with_metadata_view`, `with_group_coordinator` and
//!   `with_txn_coordinator` plug in a builder's (`tests/kit_seams.rs` wraps the store and the
//!   coordinators and serves a fixed image).
//! - **Transport**: [`connection::serve_connection`] over any stream, with any
//!   [`connection::FrameHandler`] (the assembled [`state::BrokerState`] is one).
//! - **Everything else**: [`Broker::start`] assembles a whole node from a [`config::BrokerConfig`]
//!   (Kafka's names and defaults, [`config::read_properties_file`] reads a `server.properties`).
//!   The josef-broker binary is that call plus flags and signals.
//!
//! ```no_run
//! # async fn demo() -> Result<(), josef_server::StartError> {
//! let mut config = josef_server::config::BrokerConfig::default();
//! config.listeners[0].port = 0; // any free port
//! let broker = josef_server::Broker::start(config).await?;
//! println!("listening on {}", broker.listeners()[0].addr);
//! broker.shutdown().await;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod authorization;
pub mod broker_logger;
pub mod cluster;
pub mod cluster_config;
pub mod config;
pub mod connection;
pub mod connection_quotas;
pub mod coordinator_log;
pub mod delayed_delete_records;
pub mod delayed_fetch;
pub mod dispatch;
pub mod dynamic_config;
pub mod features;
pub mod file_slice;
pub mod groups;
pub mod kit;
pub mod local_metadata;
pub mod log_cleaner;
pub mod log_dir_space;
mod log_dirs;
pub mod log_storage;
pub mod meta;
pub mod metrics;
pub mod partition;
mod partition_metadata;
pub mod peer_connection;
pub mod quotas;
pub mod replication_quotas;
pub mod sasl_session;
pub mod security_config;
pub mod server;
pub mod state;
pub mod topic_config;
pub mod topics;
pub mod txn_verification;
pub mod txns;

mod broker;
mod handlers;

pub use broker::{Broker, StartError};

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
