//! A whole v2 record batch over shared bytes.

use std::ops::Deref;

use bytes::Bytes;

use crate::header::{offsets, BATCH_HEADER_LEN};
use crate::{
    decompress, BatchHeader, Compression, DecompressLimits, RecordIter, RecordsError, TimestampType,
};

/// A v2 record batch: its parsed [`BatchHeader`] and the bytes of the whole batch (zero-copy).
///
/// Derefs to its [`BatchHeader`], so `batch.base_offset`, `batch.last_offset()` … work directly.
///
/// ```
/// use josef_records::{DecompressLimits, RecordBatch, RecordBatchBuilder, Compression};
/// let bytes = RecordBatchBuilder::new()
///     .compression(Compression::Gzip)
///     .record(10, Some(b"key"), Some(b"value"))
///     .record(11, Some(b"gone"), None)
///     .build()
///     .unwrap()
///     .freeze();
/// let batch = RecordBatch::parse(bytes).unwrap();
/// batch.validate_crc().unwrap();
/// let records: Vec<_> = batch
///     .records(&DecompressLimits::default())
///     .unwrap()
///     .collect::<Result<_, _>>()
///     .unwrap();
/// assert_eq!(records[0].key.as_deref(), Some(&b"key"[..]));
/// assert_eq!(records[1].value, None);
/// assert_eq!(records[1].offset, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordBatch {
    header: BatchHeader,
    bytes: Bytes,
}

impl RecordBatch {
    /// Parses the batch at the start of `bytes`, keeping exactly its `total_size()` bytes (any
    /// bytes after it are not part of it). The CRC is not checked: call [`RecordBatch::validate_crc`].
    pub fn parse(bytes: Bytes) -> Result<RecordBatch, RecordsError> {
        let header = BatchHeader::parse(&bytes)?;
        let total = header.total_size();
        if bytes.len() < total {
            return Err(RecordsError::Truncated {
                needed: total,
                available: bytes.len(),
            });
        }
        let bytes = if bytes.len() == total {
            bytes
        } else {
            bytes.slice(..total)
        };
        Ok(RecordBatch { header, bytes })
    }

    pub(crate) fn from_parts(header: BatchHeader, bytes: Bytes) -> RecordBatch {
        RecordBatch { header, bytes }
    }

    /// The parsed header.
    pub fn header(&self) -> &BatchHeader {
        &self.header
    }

    /// The bytes of the whole batch.
    pub fn as_bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The bytes of the whole batch, by value.
    pub fn into_bytes(self) -> Bytes {
        self.bytes
    }

    /// The records section as stored (compressed when the batch is compressed).
    pub fn records_section(&self) -> Bytes {
        self.bytes.slice(BATCH_HEADER_LEN..)
    }

    /// CRC-32C computed over the bytes from attributes to the end.
    pub fn compute_crc(&self) -> u32 {
        crc32c::crc32c(&self.bytes[offsets::ATTRIBUTES..])
    }

    /// Checks the stored CRC against the bytes ([`RecordsError::CorruptCrc`] otherwise).
    pub fn validate_crc(&self) -> Result<(), RecordsError> {
        let actual = self.compute_crc();
        if actual != self.header.crc {
            return Err(RecordsError::CorruptCrc {
                expected: self.header.crc,
                actual,
            });
        }
        Ok(())
    }

    /// Iterates the records, decompressing first if needed (bounded by `limits`).
    ///
    /// Keys, values and headers of the records are slices of the batch bytes (uncompressed) or of
    /// one decompressed buffer, never copied one by one.
    pub fn records(&self, limits: &DecompressLimits) -> Result<RecordIter, RecordsError> {
        let h = &self.header;
        if h.record_count < 0 {
            return Err(RecordsError::InvalidLength {
                what: "record count",
                length: h.record_count as i64,
            });
        }
        let codec = h.compression()?;
        let data = match codec {
            Compression::None => self.records_section(),
            _ => Bytes::from(decompress(codec, &self.bytes[BATCH_HEADER_LEN..], limits)?),
        };
        let log_append_time =
            (h.timestamp_type() == TimestampType::LogAppendTime).then_some(h.max_timestamp);
        Ok(RecordIter::new(
            data,
            h.record_count,
            h.base_offset,
            h.base_timestamp,
            log_append_time,
        ))
    }
}

impl Deref for RecordBatch {
    type Target = BatchHeader;

    fn deref(&self) -> &BatchHeader {
        &self.header
    }
}
