//! Kafka record batches (v2 and legacy v0/v1), compression and control records, zero-copy over
//! [`bytes::Bytes`].
//!
//! This crate stands alone (it does not depend on a protocol crate), so a proxy or a storage engine
//! can use it by itself. What it offers:
//!
//! - [`BatchHeader`]: the 61-byte v2 header, read without touching records;
//!   [`Batches`] / [`AnyBatches`]: split a buffer of concatenated batches, telling a torn tail
//!   ([`RecordsError::Truncated`]) from corruption.
//! - [`RecordBatch`]: CRC-32C validation and record iteration ([`RecordIter`]) whose keys, values
//!   and headers are slices of the (decompressed) batch buffer.
//! - In-place rewrites for the append path: [`set_base_offset`], [`set_partition_leader_epoch`],
//!   [`set_log_append_time`], [`assign_offsets`].
//! - [`RecordBatchBuilder`]: writes batches with any codec, timestamp type and producer fields.
//! - Control batches: [`build_control_batch`], [`RecordBatch::control_marker`].
//! - Compression with gzip, snappy (raw and xerial), lz4 (frame) and zstd, bounded by
//!   [`DecompressLimits`].
//! - Legacy message sets (magic 0/1): [`LegacyMessageSet`], [`legacy_to_v2`], [`LegacySetBuilder`],
//!   and down-conversion of v2 batches for Fetch v0–3: [`down_convert`].
//! - [`validate`]: what a broker checks in a produced batch before appending it (Kafka's
//!   `LogValidator`): framing, CRC, offset range and count, control and sequence rules, null keys on
//!   compacted topics and timestamp bounds, with per-record errors for Produce v8+.
//! - [`prepare`]: the whole produce-side preparation of a partition's records in one call
//!   (up-conversion of legacy sets, validation, recompression, max-timestamp fix).
//!
//! It does no I/O, spawns no threads and reads no clock.
//!
//! ```
//! use josef_records::{Batches, Compression, DecompressLimits, RecordBatchBuilder};
//! let batch = RecordBatchBuilder::new()
//!     .compression(Compression::Zstd)
//!     .record_with_headers(1_700_000_000_000, Some(b"k"), Some(b"v"), &[(b"h", None)])
//!     .build_bytes()
//!     .unwrap();
//! for batch in Batches::new(batch) {
//!     let batch = batch.unwrap();
//!     batch.validate_crc().unwrap();
//!     for record in batch.records(&DecompressLimits::default()).unwrap() {
//!         let record = record.unwrap();
//!         assert_eq!(record.headers[0].key_str().unwrap(), "h");
//!     }
//! }
//! ```
#![deny(missing_docs)]

mod attributes;
mod batch;
mod batches;
mod builder;
mod compression;
mod control;
mod downconvert;
mod error;
pub mod header;
mod legacy;
pub mod prepare;
mod record;
mod rewrite;
pub mod validate;
pub mod varint;
mod xxh32;

pub use attributes::{Attributes, Compression, TimestampType};
pub use batch::RecordBatch;
pub use batches::{AnyBatch, AnyBatches, Batches};
pub use builder::RecordBatchBuilder;
pub use compression::{
    compress, compress_into, decompress, decompress_lz4_legacy_v0, CompressionOptions,
    DecompressLimits, SnappyFraming,
};
pub use control::{build_control_batch, control_record_type, ControlRecordType, EndTxnMarker};
pub use downconvert::{down_convert, DownConverted};
pub use error::RecordsError;
pub use header::{
    decrement_sequence, increment_sequence, BatchHeader, BATCH_HEADER_LEN, LOG_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP,
};
pub use legacy::{
    legacy_to_v2, LegacyConversion, LegacyMessage, LegacyMessageSet, LegacyRecord, LegacySetBuilder,
};
pub use record::{Header, Record, RecordIter, RecordRef, RecordRefIter};
pub use rewrite::{
    assign_offsets, set_base_offset, set_log_append_time, set_max_timestamp,
    set_partition_leader_epoch, write_crc,
};
