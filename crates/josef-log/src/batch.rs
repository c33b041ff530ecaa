//! The few batch operations the log needs, in one place, over josef-records: header view, CRC
//! check, in-place rewrite of the fields the log assigns, and a look at the next batch of a buffer
//! that tells a torn tail from corruption.

use josef_records::RecordsError;
pub use josef_records::{BatchHeader, BATCH_HEADER_LEN};

/// Position of the attributes field: the CRC covers everything from here to the batch end.
const ATTRIBUTES_OFFSET: usize = josef_records::header::offsets::ATTRIBUTES;
/// Position of the magic byte.
const MAGIC_OFFSET: usize = josef_records::header::offsets::MAGIC;

/// Whether the stored CRC-32C matches the bytes of one whole batch (no copy, no allocation).
pub fn crc_is_valid(batch: &[u8], header: &BatchHeader) -> bool {
    batch.len() >= BATCH_HEADER_LEN && crc32c::crc32c(&batch[ATTRIBUTES_OFFSET..]) == header.crc
}

/// Overwrites the base offset (outside the CRC).
pub fn set_base_offset(batch: &mut [u8], offset: i64) -> Result<(), RecordsError> {
    josef_records::set_base_offset(batch, offset)
}

/// Overwrites the partition leader epoch (outside the CRC).
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) -> Result<(), RecordsError> {
    josef_records::set_partition_leader_epoch(batch, epoch)
}

/// Sets the LogAppendTime attribute and the max timestamp, recomputing the CRC.
pub fn set_log_append_time(batch: &mut [u8], ts: i64) -> Result<(), RecordsError> {
    josef_records::set_log_append_time(batch, ts)
}

/// What is at a position of a sequence of batches.
#[derive(Debug)]
pub enum Next {
    /// A whole batch of `header.total_size()` bytes.
    Batch(BatchHeader),
    /// Nothing left.
    End,
    /// Fewer bytes than a header, or than the batch announces: a torn write.
    Truncated,
    /// Bytes that can never be a batch (wrong magic, impossible length).
    Corrupt(String),
}

/// Looks at the batch starting at `buf[0]`, where `buf` holds all remaining bytes.
pub fn next_batch(buf: &[u8]) -> Next {
    if buf.is_empty() {
        return Next::End;
    }
    if buf.len() <= MAGIC_OFFSET {
        return Next::Truncated;
    }
    if buf.len() < BATCH_HEADER_LEN {
        // The magic is known: a wrong one is corruption, otherwise the header was torn.
        let magic = buf[MAGIC_OFFSET] as i8;
        return if magic != josef_records::header::MAGIC_V2 {
            Next::Corrupt(format!("unsupported magic {magic}"))
        } else {
            Next::Truncated
        };
    }
    match BatchHeader::parse(buf) {
        Err(e) => Next::Corrupt(e.to_string()),
        Ok(h) if h.total_size() > buf.len() => Next::Truncated,
        Ok(h) => Next::Batch(h),
    }
}
