//! In-place rewrites of a v2 batch on the append path (the broker assigns offsets, stamps the
//! leader epoch and, for `LogAppendTime` topics, the append time).
//!
//! The CRC covers attributes..end, so base offset and partition leader epoch are rewritten without
//! touching it; the timestamp rewrite changes covered bytes and recomputes it.

use crate::header::{be_i16, be_i64, offsets, BATCH_HEADER_LEN, LOG_OVERHEAD, MAGIC_V2};
use crate::{Attributes, BatchHeader, RecordsError, TimestampType};

/// Checks that `buf` starts with a v2 header (at least 61 bytes, magic 2).
fn check_v2_header(buf: &[u8]) -> Result<(), RecordsError> {
    if buf.len() < BATCH_HEADER_LEN {
        return Err(RecordsError::Truncated {
            needed: BATCH_HEADER_LEN,
            available: buf.len(),
        });
    }
    match buf[offsets::MAGIC] as i8 {
        MAGIC_V2 => Ok(()),
        m @ (0 | 1) => Err(RecordsError::UnexpectedMagic {
            found: m,
            expected: MAGIC_V2,
        }),
        m => Err(RecordsError::UnknownMagic(m)),
    }
}

/// Sets the base offset of the v2 batch at the start of `buf`. The CRC stays valid.
///
/// ```
/// use josef_records::{set_base_offset, BatchHeader, RecordBatchBuilder, RecordBatch};
/// let mut buf = RecordBatchBuilder::new().record(5, None, Some(b"v")).build().unwrap();
/// set_base_offset(&mut buf, 42).unwrap();
/// let batch = RecordBatch::parse(buf.freeze()).unwrap();
/// assert_eq!(batch.base_offset, 42);
/// batch.validate_crc().unwrap();
/// ```
pub fn set_base_offset(buf: &mut [u8], offset: i64) -> Result<(), RecordsError> {
    check_v2_header(buf)?;
    buf[offsets::BASE_OFFSET..offsets::BASE_OFFSET + 8].copy_from_slice(&offset.to_be_bytes());
    Ok(())
}

/// Sets the partition leader epoch of the v2 batch at the start of `buf`. The CRC stays valid.
pub fn set_partition_leader_epoch(buf: &mut [u8], epoch: i32) -> Result<(), RecordsError> {
    check_v2_header(buf)?;
    buf[offsets::PARTITION_LEADER_EPOCH..offsets::PARTITION_LEADER_EPOCH + 4]
        .copy_from_slice(&epoch.to_be_bytes());
    Ok(())
}

/// Sets the timestamp type and max timestamp of the v2 batch at the start of `buf` and recomputes
/// its CRC, like Kafka's `DefaultRecordBatch.setMaxTimestamp` (which does nothing when both are
/// already as asked). `buf` must hold the whole batch.
pub fn set_max_timestamp(
    buf: &mut [u8],
    timestamp_type: TimestampType,
    max_timestamp: i64,
) -> Result<(), RecordsError> {
    let h = BatchHeader::parse(buf)?;
    let total = h.total_size();
    if buf.len() < total {
        return Err(RecordsError::Truncated {
            needed: total,
            available: buf.len(),
        });
    }
    let attributes = Attributes(be_i16(buf, offsets::ATTRIBUTES));
    if attributes.timestamp_type() == timestamp_type
        && be_i64(buf, offsets::MAX_TIMESTAMP) == max_timestamp
    {
        return Ok(());
    }
    let attributes = attributes.with_timestamp_type(timestamp_type);
    buf[offsets::ATTRIBUTES..offsets::ATTRIBUTES + 2].copy_from_slice(&attributes.0.to_be_bytes());
    buf[offsets::MAX_TIMESTAMP..offsets::MAX_TIMESTAMP + 8]
        .copy_from_slice(&max_timestamp.to_be_bytes());
    write_crc(&mut buf[..total]);
    Ok(())
}

/// Marks the v2 batch at the start of `buf` as `LogAppendTime` with append time `ts` (stored as
/// the max timestamp; readers report it as every record's timestamp) and recomputes the CRC.
///
/// ```
/// use josef_records::{set_log_append_time, DecompressLimits, RecordBatch, RecordBatchBuilder, TimestampType};
/// let mut buf = RecordBatchBuilder::new().record(5, None, Some(b"v")).build().unwrap();
/// set_log_append_time(&mut buf, 9_000).unwrap();
/// let batch = RecordBatch::parse(buf.freeze()).unwrap();
/// batch.validate_crc().unwrap();
/// assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
/// let r = batch.records(&DecompressLimits::default()).unwrap().next().unwrap().unwrap();
/// assert_eq!(r.timestamp, 9_000);
/// ```
pub fn set_log_append_time(buf: &mut [u8], ts: i64) -> Result<(), RecordsError> {
    set_max_timestamp(buf, TimestampType::LogAppendTime, ts)
}

/// Recomputes and stores the CRC of the whole v2 batch `batch` (exactly one batch); returns it.
pub fn write_crc(batch: &mut [u8]) -> u32 {
    debug_assert!(batch.len() >= BATCH_HEADER_LEN);
    let crc = crc32c::crc32c(&batch[offsets::ATTRIBUTES..]);
    batch[offsets::CRC..offsets::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    crc
}

/// Assigns offsets to every v2 batch of `buf` (concatenated batches, as in a Produce request),
/// starting at `first_offset`, and stamps `partition_leader_epoch`; returns the next offset.
/// Offsets follow each batch's `last_offset_delta`. Nothing is written unless every batch is a
/// complete v2 batch.
pub fn assign_offsets(
    buf: &mut [u8],
    first_offset: i64,
    partition_leader_epoch: i32,
) -> Result<i64, RecordsError> {
    // First pass: check the whole buffer, so a bad tail does not leave it half rewritten.
    let mut pos = 0;
    while pos < buf.len() {
        let h = BatchHeader::parse(&buf[pos..])?;
        let total = h.total_size();
        if buf.len() - pos < total {
            return Err(RecordsError::Truncated {
                needed: total,
                available: buf.len() - pos,
            });
        }
        pos += total;
    }
    let mut pos = 0;
    let mut next = first_offset;
    while pos < buf.len() {
        let h = BatchHeader::parse(&buf[pos..])?;
        set_base_offset(&mut buf[pos..], next)?;
        set_partition_leader_epoch(&mut buf[pos..], partition_leader_epoch)?;
        next = next
            .wrapping_add(h.last_offset_delta as i64)
            .wrapping_add(1);
        pos += LOG_OVERHEAD + h.batch_length as usize;
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RecordBatch, RecordBatchBuilder};

    #[test]
    fn base_offset_and_epoch_rewrite_keeps_crc_valid() {
        let mut buf = RecordBatchBuilder::new()
            .record(1, Some(b"k"), Some(b"v"))
            .build()
            .unwrap();
        let crc_before = BatchHeader::parse(&buf).unwrap().crc;
        set_base_offset(&mut buf, 1 << 40).unwrap();
        set_partition_leader_epoch(&mut buf, 17).unwrap();
        let b = RecordBatch::parse(buf.freeze()).unwrap();
        assert_eq!((b.base_offset, b.partition_leader_epoch), (1 << 40, 17));
        assert_eq!(b.crc, crc_before);
        b.validate_crc().unwrap();
    }

    #[test]
    fn log_append_time_rewrite_recomputes_crc() {
        let mut buf = RecordBatchBuilder::new()
            .record(1, Some(b"k"), Some(b"v"))
            .build()
            .unwrap();
        set_log_append_time(&mut buf, 77).unwrap();
        let b = RecordBatch::parse(buf.freeze()).unwrap();
        b.validate_crc().unwrap();
        assert_eq!(b.max_timestamp, 77);
        assert_eq!(b.timestamp_type(), TimestampType::LogAppendTime);
    }

    #[test]
    fn rewrite_of_short_or_legacy_buffer_is_an_error() {
        assert!(set_base_offset(&mut [0u8; 20], 1)
            .unwrap_err()
            .is_truncated());
        let mut legacy = [0u8; 61];
        legacy[16] = 1;
        assert!(matches!(
            set_partition_leader_epoch(&mut legacy, 1),
            Err(RecordsError::UnexpectedMagic { .. })
        ));
    }

    #[test]
    fn assign_offsets_follows_last_offset_delta() {
        let a = RecordBatchBuilder::new()
            .record(1, None, Some(b"a"))
            .record(1, None, Some(b"b"))
            .build()
            .unwrap();
        let b = RecordBatchBuilder::new()
            .record(1, None, Some(b"c"))
            .build()
            .unwrap();
        let mut buf = a.to_vec();
        buf.extend_from_slice(&b);
        assert_eq!(assign_offsets(&mut buf, 10, 3).unwrap(), 13);
        let offsets: Vec<i64> = crate::Batches::new(buf.into())
            .map(|b| b.unwrap().base_offset)
            .collect();
        assert_eq!(offsets, [10, 12]);
    }
}
