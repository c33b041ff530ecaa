//! A test bed of broker processes on this machine: N nodes of josef-broker (or of any broker
//! taking `-c FILE`), each with a properties file written per the cluster contract of
//! docs/cluster.md ("How a cluster is started"), on free 127.0.0.1 ports, with the lowered
//! timeouts tests run with; started, waited for, stopped with SIGTERM, killed with -9, paused
//! with SIGSTOP/SIGCONT, restarted, their logs read; every process killed by PID at the end.
//!
//! The contract and the timeouts live in `contract.json` beside this crate's manifest, which the
//! Python test bed (`tests/e2e/cluster.py`) reads too, so both write the same files.
//!
//! ```no_run
//! use josef_testbed::Cluster;
//!
//! # fn main() -> Result<(), josef_testbed::Error> {
//! // Three `process.roles=broker,controller` nodes; returns once each answers ApiVersions and
//! // each one's Metadata lists all three.
//! let mut cluster = Cluster::builder()
//!     .combined(3)
//!     .property("min.insync.replicas", 2)
//!     .start()?;
//! println!("bootstrap.servers={}", cluster.bootstrap());
//!
//! cluster.node_mut(2)?.pause()?; // SIGSTOP, until /proc says stopped
//! cluster.node_mut(2)?.resume()?;
//! cluster.node_mut(3)?.kill9()?;
//! cluster.node_mut(3)?.start()?; // same ports, same data dir
//! let exits = cluster.stop_all()?; // SIGTERM to all
//! assert!(exits.values().all(|s| s.success()));
//! # Ok(()) }
//! ```
//!
//! Each node lives in `DIR/node<ID>/`: `node.properties`, `node.log` (stdout and stderr, appended
//! across restarts, a `==== testbed: starting node` line before each run) and `data/` (`log.dirs`).
//! `DIR` is a temporary directory unless [`ClusterBuilder::dir`] names one; it is kept, and its
//! path printed with each node's log tail, when the cluster is dropped on a panicking thread.
//! A node's process also gets SIGKILL if the thread that spawned it exits first (Linux's
//! parent-death signal), so a test binary killed on a timeout leaves no broker behind: start and
//! restart nodes from the test's own thread.
//!
//! Faults: [`ClusterBuilder::faults`] puts every link between nodes through a TCP proxy of one
//! [`faultnet::FaultNet`] ([`Cluster::net`]: drop, delay, cut, isolate one way or both, heal);
//! [`Node::mount_disk`] puts a small tmpfs or ext4 image under a node's data dir
//! ([`disk::DiskMount`]: fill for ENOSPC, a live read-only remount).
//!
//! Checking: [`history::History`] records what clients did and [`history::check`] reports what
//! Kafka promises that they saw broken (lost, duplicated, reordered, aborted seen, ...).
//!
//! ```no_run
//! use josef_testbed::{faultnet::Way, Cluster};
//!
//! # fn main() -> Result<(), josef_testbed::Error> {
//! let c = Cluster::builder().combined(3).faults(true).start()?;
//! let net = c.net().expect("built with faults");
//! net.isolate(1, [2, 3], Way::TwoWay); // node 1 neither reaches nor is reached by 2 and 3
//! // ... node 1's leaderships move; acks=all writes to it are not acknowledged ...
//! net.heal();
//! # Ok(()) }
//! ```
//!
//! `cargo run -p josef-testbed -- up --nodes 3 --dir DIR` runs a cluster until Ctrl-C.

#![deny(missing_docs)]

pub mod client;
mod cluster;
mod contract;
pub mod disk;
pub mod faultnet;
pub mod history;
mod node;
mod process;

pub use cluster::{Cluster, ClusterBuilder};
pub use contract::Properties;
pub use node::{Node, READY_TIMEOUT, STOP_TIMEOUT};
pub use process::{free_ports, proc_state, wait_for, wait_until, BrokerCommand};

use std::net::SocketAddr;
use std::time::Duration;

/// A node's `process.roles`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `broker,controller`: a quorum voter that also serves clients.
    Combined,
    /// `broker`: serves clients, follows the metadata log.
    Broker,
    /// `controller`: a quorum voter only (no client listener).
    Controller,
    /// No `process.roles`: the single-node broker, alone.
    Single,
}

impl Role {
    /// Whether it has a PLAINTEXT (client) listener.
    pub fn is_broker(self) -> bool {
        !matches!(self, Role::Controller)
    }

    /// Whether it is a quorum voter (with a CONTROLLER listener).
    pub fn is_controller(self) -> bool {
        matches!(self, Role::Combined | Role::Controller)
    }
}

/// What goes wrong in a test bed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file, socket or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// No josef-broker binary was found.
    #[error(
        "josef-broker not found: set JOSEF_BROKER_BIN, or build it (`cargo build -p josef-broker`)"
    )]
    BrokerNotFound,
    /// `contract.json` does not parse (a bad edit of the file).
    #[error("contract.json: {0}")]
    Contract(String),
    /// The layout asked for cannot run.
    #[error("invalid cluster: {0}")]
    Invalid(String),
    /// No node has this id.
    #[error("no node {0}")]
    NoSuchNode(i32),
    /// The node is already running.
    #[error("node {node} is already running (pid {pid})")]
    AlreadyRunning {
        /// Its id.
        node: i32,
        /// Its PID.
        pid: u32,
    },
    /// The node has no process.
    #[error("node {0} is not running")]
    NotRunning(i32),
    /// The node exited while it was awaited.
    #[error("node {node} exited ({status}) before it was ready\n{log}")]
    Exited {
        /// Its id.
        node: i32,
        /// Its exit status.
        status: String,
        /// Its log's tail.
        log: String,
    },
    /// The node did not answer ApiVersions in time.
    #[error("node {node} did not answer ApiVersions on {addr} within {timeout:?}\n{log}")]
    NotReady {
        /// Its id.
        node: i32,
        /// Where it was asked.
        addr: SocketAddr,
        /// The bound.
        timeout: Duration,
        /// Its log's tail.
        log: String,
    },
    /// The node did not exit in time, after SIGTERM or on its own (it was killed).
    #[error("node {node} did not exit within {timeout:?} (killed)")]
    NoExit {
        /// Its id.
        node: i32,
        /// The bound.
        timeout: Duration,
    },
    /// Another bounded wait ran out.
    #[error("timed out after {timeout:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// The bound.
        timeout: Duration,
    },
    /// A tool the test bed runs (mount, losetup, ...) failed or did not finish.
    #[error("{command}: {reason}")]
    Command {
        /// The command line.
        command: String,
        /// Its stderr, or its exit status.
        reason: String,
    },
    /// A Kafka request failed (connection, framing or decoding).
    #[error("request to {addr}: {reason}")]
    Request {
        /// The node's address.
        addr: SocketAddr,
        /// Why.
        reason: String,
    },
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}
