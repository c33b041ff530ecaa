//! josef-broker: a thin single-node Kafka-compatible broker composed from the Josef crates.
//!
//! The binary (`cargo run --release -p josef-broker`) listens on `127.0.0.1:9092` and keeps its data
//! in `./josef-data`. The library side lets tests start a broker in-process:
//!
//! ```no_run
//! # async fn demo() -> Result<(), josef_broker::StartError> {
//! let mut config = josef_broker::config::BrokerConfig::default();
//! config.listeners[0].port = 0; // any free port
//! let broker = josef_broker::Broker::start(config).await?;
//! println!("listening on {}", broker.listeners()[0].addr);
//! broker.shutdown().await;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod authorization;
pub mod cluster;
pub mod cluster_config;
pub mod config;
pub mod connection;
pub mod delayed_fetch;
pub mod dispatch;
pub mod groups;
pub mod local_metadata;
pub mod log_dir_space;
pub mod log_storage;
pub mod meta;
pub mod metrics;
pub mod partition;
pub mod quotas;
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
