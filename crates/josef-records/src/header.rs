//! The 61-byte v2 batch header, read without touching the records.

use crate::{Attributes, Compression, RecordsError, TimestampType};

/// Byte positions of the v2 batch header fields (`DefaultRecordBatch` constants).
pub mod offsets {
    /// baseOffset: int64.
    pub const BASE_OFFSET: usize = 0;
    /// batchLength: int32, counts the bytes after itself.
    pub const BATCH_LENGTH: usize = 8;
    /// partitionLeaderEpoch: int32.
    pub const PARTITION_LEADER_EPOCH: usize = 12;
    /// magic: int8, at the same place as in legacy messages.
    pub const MAGIC: usize = 16;
    /// crc: uint32 (CRC-32C of attributes..end).
    pub const CRC: usize = 17;
    /// attributes: int16; the CRC covers from here to the end.
    pub const ATTRIBUTES: usize = 21;
    /// lastOffsetDelta: int32.
    pub const LAST_OFFSET_DELTA: usize = 23;
    /// baseTimestamp: int64.
    pub const BASE_TIMESTAMP: usize = 27;
    /// maxTimestamp: int64.
    pub const MAX_TIMESTAMP: usize = 35;
    /// producerId: int64.
    pub const PRODUCER_ID: usize = 43;
    /// producerEpoch: int16.
    pub const PRODUCER_EPOCH: usize = 51;
    /// baseSequence: int32.
    pub const BASE_SEQUENCE: usize = 53;
    /// recordCount: int32.
    pub const RECORD_COUNT: usize = 57;
    /// First byte of the records section.
    pub const RECORDS: usize = 61;
}

/// Size of the v2 batch header (`RECORD_BATCH_OVERHEAD`).
pub const BATCH_HEADER_LEN: usize = 61;
/// Size of the offset + length prefix every log entry (v0, v1, v2) starts with (`LOG_OVERHEAD`).
pub const LOG_OVERHEAD: usize = 12;
/// Smallest legal `batch_length` of a v2 batch (a header with no records).
pub const MIN_BATCH_LENGTH: i32 = (BATCH_HEADER_LEN - LOG_OVERHEAD) as i32;
/// Magic byte of v2 batches.
pub const MAGIC_V2: i8 = 2;
pub use josef_protocol::constants::{
    NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP,
};

#[inline]
pub(crate) fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

#[inline]
pub(crate) fn be_i32(b: &[u8], at: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    i32::from_be_bytes(a)
}

#[inline]
pub(crate) fn be_u32(b: &[u8], at: usize) -> u32 {
    be_i32(b, at) as u32
}

#[inline]
pub(crate) fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

/// Kafka's `DefaultRecordBatch.incrementSequence`: sequences wrap from `i32::MAX` to 0.
pub fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    // Java int arithmetic (wrapping), so arbitrary header values cannot overflow-panic.
    if sequence > i32::MAX.wrapping_sub(increment) {
        increment
            .wrapping_sub(i32::MAX.wrapping_sub(sequence))
            .wrapping_sub(1)
    } else {
        sequence.wrapping_add(increment)
    }
}

/// Kafka's `DefaultRecordBatch.decrementSequence`, the inverse of [`increment_sequence`].
pub fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        i32::MAX
            .wrapping_sub(decrement.wrapping_sub(sequence))
            .wrapping_add(1)
    } else {
        sequence.wrapping_sub(decrement)
    }
}

/// The header of a v2 record batch, parsed from its first 61 bytes without looking at the records.
///
/// `parse` needs only the header bytes, so a log can read headers of batches it does not load.
///
/// ```
/// use josef_records::{BatchHeader, RecordBatchBuilder};
/// let batch = RecordBatchBuilder::new()
///     .base_offset(100)
///     .producer(7, 0, 5)
///     .record(1_000, Some(b"k"), Some(b"v"))
///     .record(1_001, None, Some(b"v2"))
///     .build()
///     .unwrap();
/// let h = BatchHeader::parse(&batch).unwrap();
/// assert_eq!((h.base_offset, h.last_offset(), h.record_count), (100, 101, 2));
/// assert_eq!((h.base_sequence, h.last_sequence()), (5, 6));
/// assert_eq!(h.total_size(), batch.len());
/// assert!(h.has_producer_id());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// Offset of the first record.
    pub base_offset: i64,
    /// Bytes after this field (the batch is `12 + batch_length` bytes).
    pub batch_length: i32,
    /// Leader epoch the batch was appended in.
    pub partition_leader_epoch: i32,
    /// Always 2.
    pub magic: i8,
    /// CRC-32C of the bytes from attributes to the end.
    pub crc: u32,
    /// Codec, timestamp type and flags.
    pub attributes: Attributes,
    /// Offset of the last record minus `base_offset`.
    pub last_offset_delta: i32,
    /// Timestamp of the first record (or the delete horizon, see [`Attributes::has_delete_horizon`]).
    pub base_timestamp: i64,
    /// Largest record timestamp, or the log append time.
    pub max_timestamp: i64,
    /// Producer id, or -1.
    pub producer_id: i64,
    /// Producer epoch, or -1.
    pub producer_epoch: i16,
    /// Sequence of the first record, or -1.
    pub base_sequence: i32,
    /// Number of records.
    pub record_count: i32,
}

impl BatchHeader {
    /// Parses the header from the start of `buf`.
    ///
    /// Errors: [`RecordsError::Truncated`] if `buf` is shorter than 17 bytes (magic unknown) or, for
    /// a v2 batch, than 61; [`RecordsError::UnexpectedMagic`] for a legacy (0/1) entry;
    /// [`RecordsError::UnknownMagic`]; [`RecordsError::InvalidLength`] when `batch_length` is below
    /// the 49 bytes of an empty batch. The CRC is not checked here ([`crate::RecordBatch::validate_crc`]).
    pub fn parse(buf: &[u8]) -> Result<BatchHeader, RecordsError> {
        if buf.len() <= offsets::MAGIC {
            return Err(RecordsError::Truncated {
                needed: BATCH_HEADER_LEN,
                available: buf.len(),
            });
        }
        let magic = buf[offsets::MAGIC] as i8;
        match magic {
            MAGIC_V2 => {}
            0 | 1 => {
                return Err(RecordsError::UnexpectedMagic {
                    found: magic,
                    expected: MAGIC_V2,
                })
            }
            other => return Err(RecordsError::UnknownMagic(other)),
        }
        if buf.len() < BATCH_HEADER_LEN {
            return Err(RecordsError::Truncated {
                needed: BATCH_HEADER_LEN,
                available: buf.len(),
            });
        }
        let batch_length = be_i32(buf, offsets::BATCH_LENGTH);
        if batch_length < MIN_BATCH_LENGTH {
            return Err(RecordsError::InvalidLength {
                what: "batch",
                length: batch_length as i64,
            });
        }
        Ok(BatchHeader {
            base_offset: be_i64(buf, offsets::BASE_OFFSET),
            batch_length,
            partition_leader_epoch: be_i32(buf, offsets::PARTITION_LEADER_EPOCH),
            magic,
            crc: be_u32(buf, offsets::CRC),
            attributes: Attributes(be_i16(buf, offsets::ATTRIBUTES)),
            last_offset_delta: be_i32(buf, offsets::LAST_OFFSET_DELTA),
            base_timestamp: be_i64(buf, offsets::BASE_TIMESTAMP),
            max_timestamp: be_i64(buf, offsets::MAX_TIMESTAMP),
            producer_id: be_i64(buf, offsets::PRODUCER_ID),
            producer_epoch: be_i16(buf, offsets::PRODUCER_EPOCH),
            base_sequence: be_i32(buf, offsets::BASE_SEQUENCE),
            record_count: be_i32(buf, offsets::RECORD_COUNT),
        })
    }

    /// Offset of the last record (`base_offset + last_offset_delta`), also for an empty batch.
    pub fn last_offset(&self) -> i64 {
        self.base_offset.wrapping_add(self.last_offset_delta as i64)
    }

    /// The offset after this batch (`last_offset() + 1`).
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// Sequence of the last record, wrapping past `i32::MAX` to 0; -1 when the batch has none.
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence == NO_SEQUENCE {
            return NO_SEQUENCE;
        }
        increment_sequence(self.base_sequence, self.last_offset_delta)
    }

    /// Size of the whole batch in bytes (`12 + batch_length`).
    pub fn total_size(&self) -> usize {
        LOG_OVERHEAD + self.batch_length as usize
    }

    /// Whether the batch belongs to a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes.is_transactional()
    }

    /// Whether the batch holds control records.
    pub fn is_control(&self) -> bool {
        self.attributes.is_control()
    }

    /// Whether the producer id is set (`producer_id >= 0`): the batch is idempotent or transactional.
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }

    /// The codec; an error for the unused ids 5–7.
    pub fn compression(&self) -> Result<Compression, RecordsError> {
        self.attributes.compression()
    }

    /// The timestamp type.
    pub fn timestamp_type(&self) -> TimestampType {
        self.attributes.timestamp_type()
    }

    /// The delete horizon set by compaction, if the attribute says `base_timestamp` holds one.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        self.attributes
            .has_delete_horizon()
            .then_some(self.base_timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_wraps_like_kafka_increment_sequence() {
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
        assert_eq!(increment_sequence(5, 3), 8);
        assert_eq!(decrement_sequence(0, 1), i32::MAX);
        // Found by fuzzing: a negative last_offset_delta must not overflow-panic.
        let _ = increment_sequence(5, -7);
        let _ = increment_sequence(i32::MIN, i32::MIN);
        let _ = decrement_sequence(i32::MIN, i32::MAX);
        assert_eq!(
            decrement_sequence(increment_sequence(i32::MAX - 2, 10), 10),
            i32::MAX - 2
        );
    }

    #[test]
    fn header_shorter_than_magic_is_truncated() {
        assert!(BatchHeader::parse(&[0; 10]).unwrap_err().is_truncated());
    }

    #[test]
    fn header_with_legacy_magic_is_unexpected_magic() {
        let mut b = [0u8; 61];
        b[16] = 1;
        assert_eq!(
            BatchHeader::parse(&b),
            Err(RecordsError::UnexpectedMagic {
                found: 1,
                expected: 2
            })
        );
        b[16] = 3;
        assert_eq!(BatchHeader::parse(&b), Err(RecordsError::UnknownMagic(3)));
    }

    #[test]
    fn header_with_batch_length_below_minimum_is_invalid_length() {
        let mut b = [0u8; 61];
        b[16] = 2;
        b[8..12].copy_from_slice(&48i32.to_be_bytes());
        assert!(matches!(
            BatchHeader::parse(&b),
            Err(RecordsError::InvalidLength {
                what: "batch",
                length: 48
            })
        ));
    }
}
