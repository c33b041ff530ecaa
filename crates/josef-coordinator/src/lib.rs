//! Deterministic runtime for Kafka coordinators: record replay, timers, deferred responses.
//!
//! A coordinator (transaction coordinator, group coordinator) is written as a [`CoordinatorShard`]
//! per coordinator partition: handlers take a request and the current time, look at the state, and
//! return a [`CoordinatorResult`] (records to append + response) without mutating anything. The
//! [`CoordinatorDriver`] appends the records through a [`PartitionWriter`], replays them into the
//! shard, and releases the response once the high watermark passes them. Loading a partition at
//! startup reads its stored batches with [`LoadedLog::read`] (every coordinator loads the same
//! way) and replays them through the same `replay`, so live serving and recovery run the same
//! code. Timers are keyed ([`CoordinatorTimer`], [`ManualTimer`]).
//!
//! This crate does no I/O, spawns no threads and reads no clock; a broker drives it from a task.
//!
//! ```
//! use josef_coordinator::{
//!     CoordinatorDriver, CoordinatorResult, CoordinatorShard, InMemoryPartitionWriter, ReplayError,
//! };
//! use std::collections::BTreeMap;
//!
//! /// A toy key/value coordinator.
//! #[derive(Default)]
//! struct Kv { map: BTreeMap<String, String> }
//!
//! impl CoordinatorShard for Kv {
//!     type Record = (String, String);
//!     fn replay(&mut self, _o: i64, _p: i64, _e: i16, r: &Self::Record) -> Result<(), ReplayError> {
//!         self.map.insert(r.0.clone(), r.1.clone());
//!         Ok(())
//!     }
//! }
//!
//! impl Kv {
//!     fn put(&self, k: &str, v: &str) -> CoordinatorResult<(String, String), &'static str> {
//!         CoordinatorResult::new(vec![(k.into(), v.into())], "ok")
//!     }
//! }
//!
//! let mut d = CoordinatorDriver::new(Kv::default(), InMemoryPartitionWriter::new());
//! assert_eq!(d.write(|kv| kv.put("a", "1")).unwrap(), None);
//! let hw = d.writer_mut().commit_all();
//! assert_eq!(d.on_high_watermark(hw), vec!["ok"]);
//! ```
#![deny(missing_docs)]

mod deferred;
mod driver;
mod error;
mod load;
pub mod placement;
mod result;
mod serde;
mod shard;
mod timer;
mod writer;

pub use deferred::DeferredResponses;
pub use driver::CoordinatorDriver;
pub use error::{
    DriverError, ReplayError, SerdeError, WriteError, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
    UNKNOWN_SERVER_ERROR,
};
pub use load::LoadedLog;
pub use result::CoordinatorResult;
pub use serde::RecordSerde;
pub use shard::{CoordinatorShard, TransactionResult};
pub use timer::{CoordinatorTimer, ManualTimer};
pub use writer::{
    InMemoryPartitionWriter, LogEntry, PartitionWriter, StoredRecord, NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
};

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
