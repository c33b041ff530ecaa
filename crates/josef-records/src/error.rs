//! The one error type of this crate.

use crate::attributes::Compression;

/// Everything that can go wrong while reading, validating, rewriting or building records.
///
/// Every variant is produced for bad *input*; the crate never panics on bytes it is handed.
/// [`RecordsError::Truncated`] is special: it means "the bytes stop before the entry ends", which a
/// log uses to find a torn write at the tail of a segment and a fetch uses to stop at a size limit,
/// while every other variant means the bytes that are present are wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordsError {
    /// The buffer ends before the entry it started: `needed` bytes were required, `available` were there.
    #[error("truncated: need {needed} bytes, only {available} available")]
    Truncated {
        /// Bytes the entry needs (as far as could be told from what was read).
        needed: usize,
        /// Bytes that were available.
        available: usize,
    },
    /// A length field is out of range (negative, smaller than its minimum, larger than its container).
    #[error("invalid {what} length {length}")]
    InvalidLength {
        /// Which length.
        what: &'static str,
        /// The value found.
        length: i64,
    },
    /// The stored CRC does not match the CRC computed over the bytes.
    #[error("corrupt record: stored CRC {expected:#010x}, computed {actual:#010x}")]
    CorruptCrc {
        /// CRC stored in the entry.
        expected: u32,
        /// CRC computed over the bytes.
        actual: u32,
    },
    /// A magic byte this crate does not know (only 0, 1 and 2 exist).
    #[error("unknown magic {0}")]
    UnknownMagic(i8),
    /// A known magic where another was expected (e.g. a legacy v0/v1 entry where a v2 batch must be).
    #[error("unexpected magic {found}, expected {expected}")]
    UnexpectedMagic {
        /// The magic found.
        found: i8,
        /// What the caller accepts (`2` for v2 batches, `1` for "0 or 1" legacy sets).
        expected: i8,
    },
    /// A varint longer than its type allows (5 bytes for 32 bits, 10 for 64 bits).
    #[error("varint is too long")]
    VarintOverflow,
    /// The number of records found differs from the count in the header, or bytes remain after the
    /// declared records.
    #[error("record count mismatch: declared {declared}, found {found}")]
    RecordCountMismatch {
        /// Count declared in the batch header.
        declared: i64,
        /// Records actually decoded (or `declared + 1` when bytes remain after the declared records).
        found: i64,
    },
    /// Decompressed data grew past [`crate::DecompressLimits::max_decompressed_bytes`].
    #[error("decompressed data exceeds the limit of {limit} bytes")]
    DecompressedTooLarge {
        /// The configured limit.
        limit: usize,
    },
    /// The codec failed to compress or decompress.
    #[error("{codec:?} compression error: {reason}")]
    Compression {
        /// The codec.
        codec: Compression,
        /// What the codec library reported.
        reason: String,
    },
    /// Compression bits naming no codec (5, 6 or 7), or zstd in a legacy message.
    #[error("unknown compression codec {0}")]
    UnknownCompression(u8),
    /// A record inside a batch is malformed (its fields do not add up to its declared size, a
    /// header key is null, …).
    #[error("invalid record: {0}")]
    InvalidRecord(&'static str),
    /// A control batch whose records are not valid control records.
    #[error("invalid control record: {0}")]
    InvalidControlRecord(&'static str),
    /// A builder was asked to produce something a batch cannot express.
    #[error("cannot build batch: {0}")]
    Build(&'static str),
}

impl RecordsError {
    /// True when the error only means "more bytes are needed" (a torn tail), not corrupt data.
    pub fn is_truncated(&self) -> bool {
        matches!(self, RecordsError::Truncated { .. })
    }
}
