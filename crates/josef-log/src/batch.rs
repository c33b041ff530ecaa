//! The few batch operations the log needs, in one place: header view, CRC check, in-place rewrite
//! of the fields the log assigns, and a scanner that tells a torn tail from corruption.
//!
//! TEMPORARY: a minimal local header view until josef-records lands on main; then this file
//! delegates to `josef_records` (same names).

/// Bytes before `batch_length` ends (base offset + length).
pub const LOG_OVERHEAD: usize = 12;
/// Size of a v2 batch header.
pub const BATCH_HEADER_LEN: usize = 61;
const MAGIC_OFFSET: usize = 16;
const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;
const MAX_TIMESTAMP_OFFSET: usize = 35;
const TIMESTAMP_TYPE_BIT: i16 = 0x08;
const TRANSACTIONAL_BIT: i16 = 0x10;
const CONTROL_BIT: i16 = 0x20;

/// The header of a v2 batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// Offset of the first record.
    pub base_offset: i64,
    /// Bytes after the length field.
    pub batch_length: i32,
    /// Leader epoch.
    pub partition_leader_epoch: i32,
    /// Magic (2).
    pub magic: i8,
    /// CRC-32C from attributes to the end.
    pub crc: u32,
    /// Attributes word.
    pub attributes: i16,
    /// Last offset minus base offset.
    pub last_offset_delta: i32,
    /// First record's timestamp.
    pub base_timestamp: i64,
    /// Largest timestamp.
    pub max_timestamp: i64,
    /// Producer id or -1.
    pub producer_id: i64,
    /// Producer epoch or -1.
    pub producer_epoch: i16,
    /// Base sequence or -1.
    pub base_sequence: i32,
    /// Number of records.
    pub record_count: i32,
}

fn be<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&b[at..at + N]);
    out
}

impl BatchHeader {
    /// Parses a v2 header from the first 61 bytes.
    pub fn parse(b: &[u8]) -> Result<BatchHeader, String> {
        if b.len() < BATCH_HEADER_LEN {
            return Err(format!("truncated header: {} bytes", b.len()));
        }
        let magic = b[MAGIC_OFFSET] as i8;
        if magic != 2 {
            return Err(format!("unsupported magic {magic}"));
        }
        let batch_length = i32::from_be_bytes(be(b, 8));
        if batch_length < (BATCH_HEADER_LEN - LOG_OVERHEAD) as i32 {
            return Err(format!("batch length {batch_length} too small"));
        }
        Ok(BatchHeader {
            base_offset: i64::from_be_bytes(be(b, 0)),
            batch_length,
            partition_leader_epoch: i32::from_be_bytes(be(b, 12)),
            magic,
            crc: u32::from_be_bytes(be(b, 17)),
            attributes: i16::from_be_bytes(be(b, 21)),
            last_offset_delta: i32::from_be_bytes(be(b, 23)),
            base_timestamp: i64::from_be_bytes(be(b, 27)),
            max_timestamp: i64::from_be_bytes(be(b, 35)),
            producer_id: i64::from_be_bytes(be(b, 43)),
            producer_epoch: i16::from_be_bytes(be(b, 51)),
            base_sequence: i32::from_be_bytes(be(b, 53)),
            record_count: i32::from_be_bytes(be(b, 57)),
        })
    }

    /// `base_offset + last_offset_delta`.
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .wrapping_add(i64::from(self.last_offset_delta))
    }

    /// `last_offset() + 1`.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// `12 + batch_length`.
    pub fn total_size(&self) -> usize {
        LOG_OVERHEAD + self.batch_length as usize
    }

    /// Transactional flag.
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_BIT != 0
    }

    /// Control flag.
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_BIT != 0
    }

    /// Whether the producer id is set.
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }

    /// Whether the batch uses LogAppendTime.
    pub fn is_log_append_time(&self) -> bool {
        self.attributes & TIMESTAMP_TYPE_BIT != 0
    }
}

/// Whether the stored CRC matches the bytes of a whole batch.
pub fn crc_is_valid(batch: &[u8], header: &BatchHeader) -> bool {
    batch.len() >= BATCH_HEADER_LEN && crc32c::crc32c(&batch[ATTRIBUTES_OFFSET..]) == header.crc
}

/// Overwrites the base offset (not covered by the CRC).
pub fn set_base_offset(batch: &mut [u8], offset: i64) {
    batch[0..8].copy_from_slice(&offset.to_be_bytes());
}

/// Overwrites the partition leader epoch (not covered by the CRC).
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    batch[12..16].copy_from_slice(&epoch.to_be_bytes());
}

/// Sets the LogAppendTime attribute and max timestamp, and recomputes the CRC.
pub fn set_log_append_time(batch: &mut [u8], ts: i64) {
    let attrs = i16::from_be_bytes(be(batch, ATTRIBUTES_OFFSET)) | TIMESTAMP_TYPE_BIT;
    batch[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attrs.to_be_bytes());
    batch[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8].copy_from_slice(&ts.to_be_bytes());
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_OFFSET..]);
    batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
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
    /// Bytes that can never be a batch.
    Corrupt(String),
}

/// Looks at the batch starting at `buf[0]`, where `buf` holds all remaining bytes.
pub fn next_batch(buf: &[u8]) -> Next {
    if buf.is_empty() {
        return Next::End;
    }
    if buf.len() < LOG_OVERHEAD + 5 {
        return Next::Truncated;
    }
    if buf.len() < BATCH_HEADER_LEN {
        // Magic is known: a wrong one is corruption, otherwise the header was torn.
        let magic = buf[MAGIC_OFFSET] as i8;
        return if magic != 2 {
            Next::Corrupt(format!("unsupported magic {magic}"))
        } else {
            Next::Truncated
        };
    }
    match BatchHeader::parse(buf) {
        Err(e) => Next::Corrupt(e),
        Ok(h) if h.total_size() > buf.len() => Next::Truncated,
        Ok(h) => Next::Batch(h),
    }
}
