//! Producer ids, epochs and sequence checks for idempotent and transactional Kafka writes:
//! the broker-side half of exactly-once.
//!
//! The crate is pure: no I/O, no threads, no clock. Time comes in as `now_ms`, persistence
//! goes through the [`ProducerIdBlockStore`] trait and snapshot bytes.
//!
//! - [`ProducerIdManager`] hands out producer ids in blocks and never repeats one across
//!   restarts.
//! - [`ProducerStateTable`] (one per partition) validates each idempotent or transactional
//!   batch before it is appended, recognises retries of the last five batches, tracks open
//!   transactions and the last stable offset, expires idle producers, and is snapshotted in
//!   Kafka's `.snapshot` layout or rebuilt by replaying the log.
//!
//! The input is a plain [`BatchInfo`] (filled from a record-batch header) or an
//! [`EndTxnMarker`], so any broker can feed it.
//!
//! ```
//! use josef_sequencer::*;
//!
//! let mut table = ProducerStateTable::new(ProducerStateConfig::default());
//! // A transactional producer writes two batches, then the coordinator aborts.
//! table.append(&BatchInfo::transactional(9, 0, 0, 2).with_offsets(100, 101, 5)).unwrap();
//! table.append(&BatchInfo::transactional(9, 0, 2, 1).with_offsets(102, 102, 6)).unwrap();
//! assert_eq!(table.last_stable_offset(103), 100);
//! let txn = table
//!     .append_marker(&EndTxnMarker::new(9, 0, ControlType::Abort, 1).at(103, 7))
//!     .unwrap()
//!     .expect("the marker closes the open transaction");
//! assert_eq!((txn.first_offset, txn.last_offset, txn.is_aborted), (100, 103, true));
//! assert_eq!(txn.last_stable_offset, 104); // what the .txnindex entry records
//! // The marker is not yet below the high watermark: the LSO waits for it.
//! assert_eq!(table.last_stable_offset(103), 100);
//! table.on_high_watermark_updated(104);
//! assert_eq!(table.last_stable_offset(104), 104);
//! ```
#![deny(missing_docs)]

mod batch;
mod entry;
mod error;
mod pid;
mod snapshot;
mod table;
mod txn;

pub use batch::{
    decrement_sequence, increment_sequence, BatchInfo, ControlType, EndTxnMarker,
    NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP,
};
pub use entry::{BatchMetadata, ProducerStateEntry, NUM_BATCHES_TO_RETAIN};
pub use error::{codes, ProducerIdError, SequenceError, SnapshotError};
pub use pid::{
    InMemoryBlockStore, ProducerIdBlockStore, ProducerIdManager, DEFAULT_PRODUCER_ID_BLOCK_SIZE,
};
pub use snapshot::{
    decode_snapshot, encode_entries, PRODUCER_SNAPSHOT_VERSION, SNAPSHOT_ENTRY_LEN,
};
pub use table::{
    AppendOrigin, AppendPlan, MarkerPlan, ProducerStateConfig, ProducerStateTable, Validation,
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
};
pub use txn::CompletedTxn;

/// Kafka's name for the per-partition producer-state table.
pub type ProducerStateManager = ProducerStateTable;

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
