//! What a broker checks in records a client produces before it appends them: the batch framing of
//! a Produce v3+ partition (`ProduceRequest.validateRecords`), the per-batch checks of
//! `UnifiedLog.analyzeAndValidateRecords` (base offset, size, CRC) and Kafka's `LogValidator`
//! (offset range and record count, no control batches, sequences, then every record: keys of
//! compacted topics and timestamp bounds).
//!
//! Record-level failures are collected for the whole batch, each with its index in the batch, as
//! Produce v8+ reports them (`record_errors`); nothing of a failed batch may be appended.
//!
//! The checks read no clock: the broker's time comes in as `now_ms`.
//!
//! ```
//! use josef_records::validate::{validate_client_batch, ValidationConfig};
//! use josef_records::RecordBatchBuilder;
//! let now = 1_700_000_000_000;
//! let compacted = ValidationConfig { compacted: true, ..ValidationConfig::default() };
//!
//! let ok = RecordBatchBuilder::new().record(now, Some(b"k"), Some(b"v")).build().unwrap();
//! let v = validate_client_batch(&ok, &compacted, now).unwrap();
//! assert_eq!(v.max_timestamp, now);
//!
//! let no_key = RecordBatchBuilder::new()
//!     .record(now, Some(b"k"), Some(b"v"))
//!     .record(now, None, Some(b"v"))
//!     .build()
//!     .unwrap();
//! let err = validate_client_batch(&no_key, &compacted, now).unwrap_err();
//! assert_eq!(err.kafka_error_code(), 87); // INVALID_RECORD
//! assert_eq!(err.record_errors()[0].batch_index, 1);
//! ```

use crate::header::{offsets, MAGIC_V2, NO_TIMESTAMP};
use crate::record::RecordRefIter;
use crate::{
    decompress, BatchHeader, Compression, DecompressLimits, RecordBatchBuilder, RecordsError,
    TimestampType, BATCH_HEADER_LEN,
};

/// Kafka error codes this module answers with (the records crate does not depend on a protocol
/// crate, so they are plain numbers, as in `Errors.java`).
pub mod codes {
    /// CORRUPT_MESSAGE: bad CRC or unreadable batch framing.
    pub const CORRUPT_MESSAGE: i16 = 2;
    /// MESSAGE_TOO_LARGE: the batch is above the topic's `max.message.bytes`.
    pub const MESSAGE_TOO_LARGE: i16 = 10;
    /// INVALID_TIMESTAMP: a record timestamp out of bounds, or a client-set LogAppendTime.
    pub const INVALID_TIMESTAMP: i16 = 32;
    /// UNSUPPORTED_COMPRESSION_TYPE: zstd in a Produce request older than v7.
    pub const UNSUPPORTED_COMPRESSION_TYPE: i16 = 76;
    /// INVALID_RECORD: everything else the validator rejects.
    pub const INVALID_RECORD: i16 = 87;
}

/// The topic settings validation depends on (the arguments of Kafka's `LogValidator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidationConfig {
    /// `message.timestamp.type`: with `LogAppendTime` the broker stamps batches itself and
    /// record timestamps are not bounded.
    pub timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`: how far a CreateTime timestamp may lie before `now`.
    pub timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`: how far a CreateTime timestamp may lie after `now`.
    pub timestamp_after_max_ms: i64,
    /// `cleanup.policy` includes `compact`: every record needs a key.
    pub compacted: bool,
    /// `max.message.bytes`: the largest batch accepted (`usize::MAX` = no limit).
    pub max_batch_bytes: usize,
    /// Bound on the decompressed size of a compressed batch.
    pub decompress_limits: DecompressLimits,
    /// `compression.type`: the codec batches are stored with, or `None` for `producer` (kept as
    /// sent). A batch in another codec is rebuilt ([`ValidatedBatch::rebuild_codec`]).
    pub target_compression: Option<Compression>,
}

impl Default for ValidationConfig {
    /// Kafka's topic defaults: CreateTime, unbounded timestamps, `delete` policy; no size limit.
    fn default() -> Self {
        ValidationConfig {
            timestamp_type: TimestampType::CreateTime,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: i64::MAX,
            compacted: false,
            max_batch_bytes: usize::MAX,
            decompress_limits: DecompressLimits::default(),
            target_compression: None,
        }
    }
}

/// One rejected record: its index in the batch and why (an entry of Produce v8+ `record_errors`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    /// Position of the record in its batch, from 0.
    pub batch_index: i32,
    /// Why it was rejected.
    pub message: String,
}

/// Why a produced batch is refused. [`ValidationError::kafka_error_code`] gives the Produce
/// partition error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValidationError {
    /// The partition data holds no complete batch.
    #[error("produce requests must have at least one record batch per partition")]
    NoBatch,
    /// A magic other than 2 (legacy message sets are only legal in Produce v0–v2).
    #[error("produce requests with record batches must use magic 2, got {0}")]
    NotMagicV2(i8),
    /// Bytes follow the first batch.
    #[error("produce requests must have exactly one record batch per partition")]
    MoreThanOneBatch,
    /// A client batch must start at offset 0 (the broker assigns offsets).
    #[error("the base offset of a produced record batch must be 0, got {0}")]
    NonZeroBaseOffset(i64),
    /// The batch is larger than the topic allows.
    #[error("the record batch is {size} bytes, larger than the maximum of {max}")]
    TooLarge {
        /// Size of the batch.
        size: usize,
        /// The topic's `max.message.bytes`.
        max: usize,
    },
    /// The stored CRC does not match, or the batch framing cannot be read.
    #[error("corrupt record batch: {0}")]
    Corrupt(RecordsError),
    /// `last_offset_delta` does not give a positive offset range.
    #[error("batch has an invalid offset range: last offset delta {0}")]
    InvalidOffsetRange(i32),
    /// `record_count` is not positive.
    #[error("invalid reported count for record batch: {0}")]
    InvalidRecordCount(i32),
    /// `last_offset_delta + 1` differs from `record_count`.
    #[error("inconsistent batch offset range (last offset delta {last_offset_delta}) and count of records {record_count}")]
    InconsistentRecordCount {
        /// The header's last offset delta.
        last_offset_delta: i32,
        /// The header's record count.
        record_count: i32,
    },
    /// Control batches are written by the broker only.
    #[error("clients are not allowed to write control records")]
    ControlBatch,
    /// An idempotent or transactional batch without a sequence number.
    #[error(
        "invalid sequence number {base_sequence} in record batch with producer id {producer_id}"
    )]
    InvalidSequence {
        /// The batch's producer id.
        producer_id: i64,
        /// Its base sequence (negative).
        base_sequence: i32,
    },
    /// The records themselves cannot be decoded (a record's fields do not add up, the count in the
    /// header is not the number of records, the data does not decompress).
    #[error("malformed records: {0}")]
    MalformedRecords(RecordsError),
    /// One or more records broke a rule; `timestamp` tells whether any of them was a timestamp
    /// error (the partition error is then INVALID_TIMESTAMP, else INVALID_RECORD).
    #[error("{}", records_message(*.timestamp, .errors))]
    Records {
        /// Whether any error is a timestamp error.
        timestamp: bool,
        /// Every rejected record, in batch order.
        errors: Vec<RecordError>,
    },
}

fn records_message(timestamp: bool, errors: &[RecordError]) -> String {
    if timestamp {
        return "One or more records have been rejected due to invalid timestamp".to_string();
    }
    let shown: Vec<String> = errors
        .iter()
        .take(3)
        .map(|e| format!("{{batch_index={}, message={}}}", e.batch_index, e.message))
        .collect();
    format!(
        "One or more records have been rejected due to {} record errors in total, and only showing the first three errors at most: [{}]",
        errors.len(),
        shown.join(", ")
    )
}

impl ValidationError {
    /// The Kafka error code of the Produce partition response.
    pub fn kafka_error_code(&self) -> i16 {
        match self {
            ValidationError::Corrupt(_) => codes::CORRUPT_MESSAGE,
            ValidationError::TooLarge { .. } => codes::MESSAGE_TOO_LARGE,
            ValidationError::Records {
                timestamp: true, ..
            } => codes::INVALID_TIMESTAMP,
            _ => codes::INVALID_RECORD,
        }
    }

    /// The per-record errors (empty unless [`ValidationError::Records`]).
    pub fn record_errors(&self) -> &[RecordError] {
        match self {
            ValidationError::Records { errors, .. } => errors,
            _ => &[],
        }
    }

    /// Whether Kafka sends this error's message as the Produce v8+ `error_message`: only for
    /// record-level errors (`RecordValidationException`); other failures answer with the code alone.
    pub fn is_record_level(&self) -> bool {
        matches!(self, ValidationError::Records { .. })
    }
}

/// What validation learned about an accepted batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidatedBatch {
    /// The batch header as sent.
    pub header: BatchHeader,
    /// The largest record timestamp (`-1` when no record has one above `-1`), which Kafka writes
    /// as the batch's max timestamp on a CreateTime topic.
    pub max_timestamp: i64,
    /// Offset delta of the record holding `max_timestamp` (`-1` when none).
    pub offset_delta_of_max_timestamp: i32,
    /// Whether the records' offset deltas run 0, 1, 2, …; a compressed batch where they do not is
    /// rebuilt by Kafka (see [`rebuild_with_consecutive_offsets`]).
    pub offsets_consecutive: bool,
}

impl ValidatedBatch {
    /// Whether the batch must be rebuilt before it is appended (Kafka's "no in-place assignment"
    /// case for a compressed batch whose inner offsets are not consecutive).
    pub fn needs_rebuild(&self) -> bool {
        !self.offsets_consecutive && self.header.attributes.compression_id() != 0
    }

    /// The codec to rebuild the batch with before it is appended, if it must be rebuilt: the
    /// topic's `compression.type` when it differs from the batch's codec, else the batch's own
    /// codec when [`ValidatedBatch::needs_rebuild`] (Kafka's `inPlaceAssignment = false`).
    pub fn rebuild_codec(&self, config: &ValidationConfig) -> Option<Compression> {
        let source = self.header.compression().ok()?;
        match config.target_compression {
            Some(target) if target != source => Some(target),
            _ if self.needs_rebuild() => Some(source),
            _ => None,
        }
    }

    /// The `(timestamp type, max timestamp)` Kafka's `setMaxTimestamp` stores in the header of the
    /// appended batch on a CreateTime topic, when it differs from what the header says (a wrong
    /// max timestamp, or a LogAppendTime bit Kafka clears); `None` when the header is already
    /// right or the topic uses LogAppendTime (the log stamps those).
    pub fn header_timestamp_fix(&self, config: &ValidationConfig) -> Option<(TimestampType, i64)> {
        if config.timestamp_type != TimestampType::CreateTime {
            return None;
        }
        let h = &self.header;
        (h.timestamp_type() != TimestampType::CreateTime || h.max_timestamp != self.max_timestamp)
            .then_some((TimestampType::CreateTime, self.max_timestamp))
    }
}

/// Validates the records of one partition of a Produce v3+ request: exactly one v2 batch, checked
/// in Kafka's order (framing, base offset, size, CRC, batch rules, then every record).
///
/// Errors tell the partition error code ([`ValidationError::kafka_error_code`]) and, for record
/// rules, every failed record ([`ValidationError::record_errors`]).
pub fn validate_client_batch(
    records: &[u8],
    config: &ValidationConfig,
    now_ms: i64,
) -> Result<ValidatedBatch, ValidationError> {
    let header = produce_batch_header(records)?;
    let size = header.total_size();
    if header.base_offset != 0 {
        return Err(ValidationError::NonZeroBaseOffset(header.base_offset));
    }
    if size > config.max_batch_bytes {
        return Err(ValidationError::TooLarge {
            size,
            max: config.max_batch_bytes,
        });
    }
    let batch = &records[..size];
    let crc = crc32c::crc32c(&batch[offsets::ATTRIBUTES..]);
    if crc != header.crc {
        return Err(ValidationError::Corrupt(RecordsError::CorruptCrc {
            expected: header.crc,
            actual: crc,
        }));
    }
    validate_batch_fields(&header)?;
    validate_records(batch, &header, config, now_ms)
}

/// The framing check of a Produce v3+ partition (`ProduceRequest.validateRecords`, which Kafka
/// runs before the acks and internal-topic checks): `records` must be exactly one whole v2 batch.
/// Returns its header; [`validate_client_batch`] repeats this and goes on with the other checks.
pub fn produce_batch_header(records: &[u8]) -> Result<BatchHeader, ValidationError> {
    if records.len() < offsets::MAGIC + 1 {
        return Err(ValidationError::NoBatch);
    }
    let magic = records[offsets::MAGIC] as i8;
    if magic != MAGIC_V2 {
        return Err(ValidationError::NotMagicV2(magic));
    }
    let header = match BatchHeader::parse(records) {
        Ok(h) => h,
        // Kafka's batch iterator stops at an incomplete batch: no batch at all.
        Err(RecordsError::Truncated { .. }) => return Err(ValidationError::NoBatch),
        Err(e) => return Err(ValidationError::Corrupt(e)),
    };
    let size = header.total_size();
    if size > records.len() {
        return Err(ValidationError::NoBatch);
    }
    if size < records.len() {
        return Err(ValidationError::MoreThanOneBatch);
    }
    Ok(header)
}

/// `LogValidator.validateBatch` for a client append of a v2 batch.
fn validate_batch_fields(h: &BatchHeader) -> Result<(), ValidationError> {
    let count_from_offsets = i64::from(h.last_offset_delta) + 1;
    if count_from_offsets <= 0 {
        return Err(ValidationError::InvalidOffsetRange(h.last_offset_delta));
    }
    if h.record_count <= 0 {
        return Err(ValidationError::InvalidRecordCount(h.record_count));
    }
    if count_from_offsets != i64::from(h.record_count) {
        return Err(ValidationError::InconsistentRecordCount {
            last_offset_delta: h.last_offset_delta,
            record_count: h.record_count,
        });
    }
    if h.is_control() {
        return Err(ValidationError::ControlBatch);
    }
    if h.has_producer_id() && h.base_sequence < 0 {
        return Err(ValidationError::InvalidSequence {
            producer_id: h.producer_id,
            base_sequence: h.base_sequence,
        });
    }
    Ok(())
}

/// Every record of the batch: decodes it (the count must match), then `validateKey` and
/// `validateTimestamp` of `LogValidator.validateRecord`.
fn validate_records(
    batch: &[u8],
    h: &BatchHeader,
    config: &ValidationConfig,
    now_ms: i64,
) -> Result<ValidatedBatch, ValidationError> {
    let codec = h.compression().map_err(ValidationError::Corrupt)?;
    let decompressed;
    let data: &[u8] = match codec {
        Compression::None => &batch[BATCH_HEADER_LEN..],
        _ => {
            decompressed = decompress(codec, &batch[BATCH_HEADER_LEN..], &config.decompress_limits)
                .map_err(ValidationError::MalformedRecords)?;
            &decompressed
        }
    };
    let batch_is_log_append_time = h.timestamp_type() == TimestampType::LogAppendTime;
    let log_append_time = batch_is_log_append_time.then_some(h.max_timestamp);
    let iter = RecordRefIter::over(
        data,
        h.record_count,
        h.base_offset,
        h.base_timestamp,
        log_append_time,
    );
    let mut errors: Vec<RecordError> = Vec::new();
    let mut any_timestamp_error = false;
    let mut max_timestamp = NO_TIMESTAMP;
    let mut offset_delta_of_max = -1;
    let mut consecutive = true;
    for (index, record) in iter.enumerate() {
        let record = record.map_err(ValidationError::MalformedRecords)?;
        let batch_index = index as i32;
        if record.offset_delta != batch_index {
            consecutive = false;
        }
        if config.compacted && record.key.is_none() {
            errors.push(RecordError {
                batch_index,
                message: "Compacted topic cannot accept message without key".to_string(),
            });
            continue;
        }
        if config.timestamp_type == TimestampType::CreateTime && record.timestamp != NO_TIMESTAMP {
            if timestamp_out_of_bounds(record.timestamp, now_ms, config) {
                any_timestamp_error = true;
                errors.push(RecordError {
                    batch_index,
                    message: format!(
                        "Timestamp {} of message with offset {} is out of range. The timestamp should be within [{}, {}]",
                        record.timestamp,
                        record.offset,
                        now_ms.wrapping_sub(config.timestamp_before_max_ms),
                        now_ms.wrapping_add(config.timestamp_after_max_ms)
                    ),
                });
                continue;
            }
        } else if batch_is_log_append_time {
            any_timestamp_error = true;
            errors.push(RecordError {
                batch_index,
                message: "Invalid timestamp type in message. Producer should not set timestamp type to LogAppendTime.".to_string(),
            });
            continue;
        }
        if record.timestamp > max_timestamp {
            max_timestamp = record.timestamp;
            offset_delta_of_max = record.offset_delta;
        }
    }
    if !errors.is_empty() {
        return Err(ValidationError::Records {
            timestamp: any_timestamp_error,
            errors,
        });
    }
    Ok(ValidatedBatch {
        header: *h,
        max_timestamp,
        offset_delta_of_max_timestamp: offset_delta_of_max,
        offsets_consecutive: consecutive,
    })
}

/// Kafka's `recordHasInvalidTimestamp`, with Java's wrapping `long` arithmetic (so the default
/// bounds of `Long.MAX_VALUE` accept every timestamp, as in Kafka).
fn timestamp_out_of_bounds(ts: i64, now_ms: i64, config: &ValidationConfig) -> bool {
    let diff = now_ms.wrapping_sub(ts);
    diff > config.timestamp_before_max_ms || diff.wrapping_neg() > config.timestamp_after_max_ms
}

/// Rebuilds a validated batch with offset deltas 0, 1, 2, … (same codec, producer fields,
/// transactional flag, record timestamps, keys, values and headers), as Kafka does for a
/// compressed batch whose inner offsets are not consecutive. The result is a v2 batch at base
/// offset 0 with a fresh CRC.
pub fn rebuild_with_consecutive_offsets(
    batch: &[u8],
    limits: &DecompressLimits,
) -> Result<bytes::BytesMut, RecordsError> {
    let codec = BatchHeader::parse(batch)?.compression()?;
    rebuild_with_compression(batch, codec, limits)
}

/// Rebuilds a validated batch with `codec` (the topic's `compression.type`), offset deltas 0, 1,
/// 2, … and the same producer fields, transactional flag and records, as Kafka's
/// `buildRecordsAndAssignOffsets` does when the stored codec differs from the producer's.
///
/// ```
/// use josef_records::validate::rebuild_with_compression;
/// use josef_records::{BatchHeader, Compression, DecompressLimits, RecordBatchBuilder};
/// let plain = RecordBatchBuilder::new().record(1, Some(b"k"), Some(b"v")).build().unwrap();
/// let gz = rebuild_with_compression(&plain, Compression::Gzip, &DecompressLimits::default()).unwrap();
/// assert_eq!(BatchHeader::parse(&gz).unwrap().compression().unwrap(), Compression::Gzip);
/// ```
pub fn rebuild_with_compression(
    batch: &[u8],
    target: Compression,
    limits: &DecompressLimits,
) -> Result<bytes::BytesMut, RecordsError> {
    let h = BatchHeader::parse(batch)?;
    let total = h.total_size();
    if batch.len() < total {
        return Err(RecordsError::Truncated {
            needed: total,
            available: batch.len(),
        });
    }
    let codec = h.compression()?;
    let decompressed;
    let data: &[u8] = match codec {
        Compression::None => &batch[BATCH_HEADER_LEN..total],
        _ => {
            decompressed = decompress(codec, &batch[BATCH_HEADER_LEN..total], limits)?;
            &decompressed
        }
    };
    let mut builder = RecordBatchBuilder::new()
        .compression(target)
        .transactional(h.is_transactional());
    if h.has_producer_id() {
        builder = builder.producer(h.producer_id, h.producer_epoch, h.base_sequence);
    }
    let log_append_time =
        (h.timestamp_type() == TimestampType::LogAppendTime).then_some(h.max_timestamp);
    for r in RecordRefIter::over(
        data,
        h.record_count,
        h.base_offset,
        h.base_timestamp,
        log_append_time,
    ) {
        let r = r?;
        let headers: Vec<(&[u8], Option<&[u8]>)> = r.headers().collect();
        builder.push(r.timestamp, r.key, r.value, &headers);
    }
    builder.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{set_base_offset, write_crc};

    const NOW: i64 = 1_700_000_000_000;

    fn batch(records: &[(i64, Option<&[u8]>)]) -> Vec<u8> {
        let mut b = RecordBatchBuilder::new();
        for (ts, key) in records {
            b.push(*ts, *key, Some(b"v"), &[]);
        }
        b.build().unwrap().to_vec()
    }

    fn put_i32(buf: &mut [u8], at: usize, v: i32) {
        buf[at..at + 4].copy_from_slice(&v.to_be_bytes());
        write_crc(buf);
    }

    #[test]
    fn a_plain_batch_is_accepted_with_its_max_timestamp() {
        let b = batch(&[(NOW - 5, Some(b"a")), (NOW + 3, None), (NOW, Some(b"c"))]);
        let v = validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap();
        assert_eq!(v.max_timestamp, NOW + 3);
        assert_eq!(v.offset_delta_of_max_timestamp, 1);
        assert!(v.offsets_consecutive && !v.needs_rebuild());
        assert_eq!(v.header_timestamp_fix(&ValidationConfig::default()), None);
    }

    #[test]
    fn empty_partition_data_is_no_batch() {
        let e = validate_client_batch(&[], &ValidationConfig::default(), NOW).unwrap_err();
        assert_eq!(e, ValidationError::NoBatch);
        assert_eq!(e.kafka_error_code(), codes::INVALID_RECORD);
        let b = batch(&[(NOW, None)]);
        let e = validate_client_batch(&b[..b.len() - 1], &ValidationConfig::default(), NOW);
        assert_eq!(e.unwrap_err(), ValidationError::NoBatch);
    }

    #[test]
    fn legacy_magic_in_v3_produce_is_invalid_record() {
        let mut b = batch(&[(NOW, None)]);
        b[offsets::MAGIC] = 1;
        let e = validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap_err();
        assert_eq!(e, ValidationError::NotMagicV2(1));
        assert_eq!(e.kafka_error_code(), codes::INVALID_RECORD);
    }

    #[test]
    fn a_second_batch_is_invalid_record() {
        let mut b = batch(&[(NOW, None)]);
        b.extend(batch(&[(NOW, None)]));
        let e = validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap_err();
        assert_eq!(e, ValidationError::MoreThanOneBatch);
    }

    #[test]
    fn a_non_zero_base_offset_is_invalid_record() {
        let mut b = batch(&[(NOW, None)]);
        set_base_offset(&mut b, 7).unwrap();
        let e = validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap_err();
        assert_eq!(e, ValidationError::NonZeroBaseOffset(7));
    }

    #[test]
    fn a_batch_above_max_message_bytes_is_message_too_large() {
        let b = batch(&[(NOW, None)]);
        let cfg = ValidationConfig {
            max_batch_bytes: b.len() - 1,
            ..ValidationConfig::default()
        };
        let e = validate_client_batch(&b, &cfg, NOW).unwrap_err();
        assert_eq!(e.kafka_error_code(), codes::MESSAGE_TOO_LARGE);
    }

    #[test]
    fn a_bad_crc_is_corrupt_message() {
        let mut b = batch(&[(NOW, None)]);
        let last = b.len() - 1;
        b[last] ^= 0xff;
        let e = validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap_err();
        assert!(matches!(
            e,
            ValidationError::Corrupt(RecordsError::CorruptCrc { .. })
        ));
        assert_eq!(e.kafka_error_code(), codes::CORRUPT_MESSAGE);
    }

    #[test]
    fn offset_delta_and_record_count_must_agree() {
        let mut b = batch(&[(NOW, None), (NOW, None)]);
        put_i32(&mut b, offsets::LAST_OFFSET_DELTA, 5);
        let e = validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap_err();
        assert!(matches!(e, ValidationError::InconsistentRecordCount { .. }));
        let mut b = batch(&[(NOW, None)]);
        put_i32(&mut b, offsets::LAST_OFFSET_DELTA, -1);
        let e = validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap_err();
        assert_eq!(e, ValidationError::InvalidOffsetRange(-1));
        let mut b = batch(&[(NOW, None)]);
        put_i32(&mut b, offsets::RECORD_COUNT, 0);
        let e = validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap_err();
        assert_eq!(e, ValidationError::InvalidRecordCount(0));
    }

    #[test]
    fn a_record_count_that_is_not_the_number_of_records_is_invalid_record() {
        // Header says 3 (and last delta 2) but only two records follow.
        let mut b = batch(&[(NOW, None), (NOW, None)]);
        b[offsets::RECORD_COUNT..offsets::RECORD_COUNT + 4].copy_from_slice(&3i32.to_be_bytes());
        put_i32(&mut b, offsets::LAST_OFFSET_DELTA, 2);
        let e = validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap_err();
        assert!(matches!(
            e,
            ValidationError::MalformedRecords(RecordsError::RecordCountMismatch { .. })
        ));
        assert_eq!(e.kafka_error_code(), codes::INVALID_RECORD);
    }

    #[test]
    fn clients_may_not_write_control_batches() {
        let b = RecordBatchBuilder::new()
            .control(true)
            .record(NOW, Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0, 0, 0]))
            .build()
            .unwrap();
        let e = validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap_err();
        assert_eq!(e, ValidationError::ControlBatch);
    }

    #[test]
    fn an_idempotent_batch_needs_a_sequence() {
        let b = RecordBatchBuilder::new()
            .producer(5, 0, -1)
            .record(NOW, None, Some(b"v"))
            .build()
            .unwrap();
        let e = validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap_err();
        assert_eq!(
            e,
            ValidationError::InvalidSequence {
                producer_id: 5,
                base_sequence: -1
            }
        );
        let ok = RecordBatchBuilder::new()
            .producer(5, 0, 0)
            .transactional(true)
            .record(NOW, None, Some(b"v"))
            .build()
            .unwrap();
        validate_client_batch(&ok, &ValidationConfig::default(), NOW).unwrap();
    }

    #[test]
    fn null_keys_on_a_compacted_topic_are_record_errors_with_their_index() {
        let b = batch(&[
            (NOW, Some(b"a")),
            (NOW, None),
            (NOW, Some(b"c")),
            (NOW, None),
        ]);
        let cfg = ValidationConfig {
            compacted: true,
            ..ValidationConfig::default()
        };
        let e = validate_client_batch(&b, &cfg, NOW).unwrap_err();
        assert_eq!(e.kafka_error_code(), codes::INVALID_RECORD);
        let idx: Vec<i32> = e.record_errors().iter().map(|r| r.batch_index).collect();
        assert_eq!(idx, [1, 3]);
        assert!(e.is_record_level());
        assert!(e.to_string().contains("2 record errors"));
        // Not compacted: fine.
        validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap();
    }

    #[test]
    fn timestamps_outside_the_before_and_after_bounds_are_invalid_timestamp() {
        let cfg = ValidationConfig {
            timestamp_before_max_ms: 1000,
            timestamp_after_max_ms: 100,
            ..ValidationConfig::default()
        };
        let b = batch(&[
            (NOW - 1000, None), // at the bound: fine
            (NOW - 1001, None), // too old
            (NOW + 100, None),  // at the bound: fine
            (NOW + 101, None),  // too new
            (-1, None),         // no timestamp: never checked
        ]);
        let e = validate_client_batch(&b, &cfg, NOW).unwrap_err();
        assert_eq!(e.kafka_error_code(), codes::INVALID_TIMESTAMP);
        let idx: Vec<i32> = e.record_errors().iter().map(|r| r.batch_index).collect();
        assert_eq!(idx, [1, 3]);
        assert!(e.record_errors()[0].message.contains("out of range"));
    }

    #[test]
    fn a_timestamp_error_wins_over_a_key_error_for_the_partition_code() {
        let cfg = ValidationConfig {
            compacted: true,
            timestamp_after_max_ms: 0,
            ..ValidationConfig::default()
        };
        let b = batch(&[(NOW, None), (NOW + 1, Some(b"k"))]);
        let e = validate_client_batch(&b, &cfg, NOW).unwrap_err();
        assert_eq!(e.kafka_error_code(), codes::INVALID_TIMESTAMP);
        assert_eq!(e.record_errors().len(), 2);
    }

    #[test]
    fn log_append_time_topics_do_not_bound_timestamps_but_refuse_a_client_set_log_append_time() {
        let cfg = ValidationConfig {
            timestamp_type: TimestampType::LogAppendTime,
            timestamp_before_max_ms: 0,
            timestamp_after_max_ms: 0,
            ..ValidationConfig::default()
        };
        let b = batch(&[(1, None)]);
        validate_client_batch(&b, &cfg, NOW).unwrap();
        let lat = RecordBatchBuilder::new()
            .log_append_time(NOW)
            .record(NOW, None, Some(b"v"))
            .build()
            .unwrap();
        let e = validate_client_batch(&lat, &cfg, NOW).unwrap_err();
        assert_eq!(e.kafka_error_code(), codes::INVALID_TIMESTAMP);
    }

    #[test]
    fn a_client_set_log_append_time_on_a_create_time_topic_is_bounded_then_cleared() {
        // Kafka checks the (batch max) timestamp against the bounds and clears the bit when it
        // writes the max timestamp.
        let lat = RecordBatchBuilder::new()
            .log_append_time(NOW)
            .record(NOW, None, Some(b"v"))
            .build()
            .unwrap();
        let cfg = ValidationConfig::default();
        let v = validate_client_batch(&lat, &cfg, NOW).unwrap();
        assert_eq!(
            v.header_timestamp_fix(&cfg),
            Some((TimestampType::CreateTime, NOW))
        );
        let strict = ValidationConfig {
            timestamp_before_max_ms: 10,
            ..cfg
        };
        let e = validate_client_batch(&lat, &strict, NOW + 11).unwrap_err();
        assert_eq!(e.kafka_error_code(), codes::INVALID_TIMESTAMP);
    }

    #[test]
    fn default_bounds_accept_any_timestamp_like_kafkas_long_arithmetic() {
        let b = batch(&[(i64::MIN + 1, None), (i64::MAX, None), (0, None)]);
        validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap();
    }

    #[test]
    fn a_wrong_header_max_timestamp_is_reported_for_fixing() {
        let mut b = batch(&[(NOW, None), (NOW + 7, None)]);
        b[offsets::MAX_TIMESTAMP..offsets::MAX_TIMESTAMP + 8].copy_from_slice(&NOW.to_be_bytes());
        write_crc(&mut b);
        let cfg = ValidationConfig::default();
        let v = validate_client_batch(&b, &cfg, NOW).unwrap();
        assert_eq!(
            v.header_timestamp_fix(&cfg),
            Some((TimestampType::CreateTime, NOW + 7))
        );
    }

    #[test]
    fn compressed_batches_are_validated_record_by_record() {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let b = RecordBatchBuilder::new()
                .compression(codec)
                .record(NOW, Some(b"k"), Some(b"v"))
                .record(NOW, None, Some(b"v"))
                .build()
                .unwrap();
            let cfg = ValidationConfig {
                compacted: true,
                ..ValidationConfig::default()
            };
            let e = validate_client_batch(&b, &cfg, NOW).unwrap_err();
            assert_eq!(e.record_errors()[0].batch_index, 1, "{codec:?}");
            let v = validate_client_batch(&b, &ValidationConfig::default(), NOW).unwrap();
            assert!(!v.needs_rebuild());
        }
    }

    #[test]
    fn a_topic_compression_type_other_than_the_batch_codec_rebuilds_with_that_codec() {
        let b = RecordBatchBuilder::new()
            .compression(Compression::Snappy)
            .producer(3, 0, 7)
            .record(NOW, Some(b"k"), Some(b"v"))
            .build()
            .unwrap();
        let producer = ValidationConfig::default();
        let v = validate_client_batch(&b, &producer, NOW).unwrap();
        assert_eq!(v.rebuild_codec(&producer), None);
        let same = ValidationConfig {
            target_compression: Some(Compression::Snappy),
            ..producer
        };
        assert_eq!(v.rebuild_codec(&same), None);
        let zstd = ValidationConfig {
            target_compression: Some(Compression::Zstd),
            ..producer
        };
        assert_eq!(v.rebuild_codec(&zstd), Some(Compression::Zstd));
        let rebuilt =
            rebuild_with_compression(&b, Compression::Zstd, &DecompressLimits::default()).unwrap();
        let v2 = validate_client_batch(&rebuilt, &zstd, NOW).unwrap();
        assert_eq!(v2.header.compression().unwrap(), Compression::Zstd);
        assert_eq!(
            (
                v2.header.producer_id,
                v2.header.base_sequence,
                v2.header.record_count
            ),
            (3, 7, 1)
        );
        assert_eq!(v2.rebuild_codec(&zstd), None);
    }

    #[test]
    fn a_compressed_batch_with_gaps_in_inner_offsets_needs_a_rebuild_and_rebuilds() {
        let mut b = RecordBatchBuilder::new()
            .compression(Compression::Gzip)
            .producer(9, 1, 40);
        b.push_with_offset_delta(0, NOW, Some("a".into()), Some("1".into()), vec![])
            .unwrap();
        b.push_with_offset_delta(2, NOW + 1, Some("b".into()), None, vec![("h".into(), None)])
            .unwrap();
        // Two records, last delta 2: make the header consistent with the count as a client
        // would (last_offset_delta = count - 1) so only the inner offsets are off.
        let mut bytes = b.build().unwrap().to_vec();
        put_i32(&mut bytes, offsets::LAST_OFFSET_DELTA, 1);
        let v = validate_client_batch(&bytes, &ValidationConfig::default(), NOW).unwrap();
        assert!(v.needs_rebuild());
        let rebuilt =
            rebuild_with_consecutive_offsets(&bytes, &DecompressLimits::default()).unwrap();
        let v2 = validate_client_batch(&rebuilt, &ValidationConfig::default(), NOW).unwrap();
        assert!(!v2.needs_rebuild());
        let h = v2.header;
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (9, 1, 40)
        );
        assert_eq!(h.compression().unwrap(), Compression::Gzip);
        let rb = crate::RecordBatch::parse(bytes::Bytes::from(rebuilt.to_vec())).unwrap();
        let recs: Vec<_> = rb
            .records(&DecompressLimits::default())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(recs[1].offset_delta, 1);
        assert_eq!(recs[1].timestamp, NOW + 1);
        assert_eq!(recs[1].headers[0].key.as_ref(), b"h");
    }
}
