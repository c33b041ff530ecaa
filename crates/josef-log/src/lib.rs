//! A Kafka-compatible segmented partition log with offset, time and transaction indexes: the
//! storage engine of one partition, usable on its own.
//!
//! A [`Log`] lives in one directory (`<topic>-<partition>/`) laid out as Kafka lays it out:
//! segments named by their base offset (20 digits) with `.log`, `.index`, `.timeindex` and
//! `.txnindex` files, producer-state `.snapshot` files (opaque bytes from the caller), checkpoint
//! files in Kafka's format, and a `.kafka_cleanshutdown` marker after a clean close.
//!
//! The log assigns offsets, serves reads on batch boundaries, looks offsets up by offset and by
//! timestamp, rolls segments, applies retention and DeleteRecords, compacts, flushes by policy and
//! recovers after a crash by checking every batch past the recovery point. It keeps a leader epoch
//! cache (`leader-epoch-checkpoint`) and a high watermark distinct from the log end offset, for
//! replication. Producer state is the caller's table: it stores snapshots through the log, and
//! [`Log::rebuild_producer_state`] rebuilds it after opening through the [`ProducerStateReplay`]
//! trait (newest snapshot plus replay).
//!
//! ```
//! use josef_log::{Log, LogConfig, TimestampType};
//! # fn batch() -> bytes::BytesMut { josef_log::testing::batch(0, 1_000, &[(Some(b"k"), Some(b"v"))]) }
//! let dir = tempfile::tempdir().unwrap();
//! let mut log = Log::open(dir.path().join("orders-0"), LogConfig::default(), 0).unwrap();
//! let info = log.append_as_leader(batch(), 0, 5, TimestampType::CreateTime).unwrap();
//! assert_eq!((info.first_offset, info.last_offset), (0, 0));
//! log.update_high_watermark(log.log_end_offset());
//! let read = log.read(0, 1 << 20, log.high_watermark(), true).unwrap();
//! assert_eq!(read.records, info.records);
//! log.close().unwrap();
//! ```
#![deny(missing_docs)]

mod batch;
pub mod checkpoint;
pub mod cleaner;
pub mod cleaner_manager;
pub mod config;
pub mod error;
pub mod index;
pub mod leader_epoch;
pub mod legacy_offsets;
mod loader;
mod log;
pub mod log_dir;
pub mod naming;
pub mod producer_state;
mod records;
pub mod segment;
pub mod storage;
pub mod testing;

pub use crate::config::{CleanupPolicy, LogConfig, TimestampType};
pub use crate::error::LogError;
pub use crate::index::{AbortedTxn, OffsetPosition, TimestampOffset};
pub use crate::leader_epoch::{EpochEntry, LeaderEpochFileCache};
pub use crate::loader::{write_clean_shutdown_marker, CLEAN_SHUTDOWN_CONTENT};
pub use crate::log::{
    FetchDataInfo, LoadReport, Log, LogAppendInfo, LogBatches, PartitionState, SHARED_APPEND_MIN,
};
pub use crate::producer_state::{ProducerStateRebuild, ProducerStateReplay, SnapshotLoadError};
pub use josef_records::BatchHeader;
