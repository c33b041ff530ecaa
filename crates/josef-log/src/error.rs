//! Errors of the log.

use std::path::{Path, PathBuf};

/// Everything that can go wrong in the log. Kafka's matching error code is named where one exists.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// An I/O error on a file of the log (Kafka: KAFKA_STORAGE_ERROR).
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A read or lookup asked for an offset outside `[log_start_offset, log_end_offset]`
    /// (Kafka: OFFSET_OUT_OF_RANGE).
    #[error("offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        /// The requested offset.
        offset: i64,
        /// The log start offset at the time of the request.
        log_start_offset: i64,
        /// The log end offset at the time of the request.
        log_end_offset: i64,
    },
    /// Appended bytes are not a sequence of whole, valid v2 batches (Kafka: CORRUPT_MESSAGE /
    /// INVALID_RECORD).
    #[error("invalid records: {0}")]
    InvalidRecords(String),
    /// A batch's header could not be rewritten with what the log assigns (offset, leader epoch,
    /// LogAppendTime): not a whole v2 batch (Kafka: INVALID_RECORD).
    #[error("invalid records: {0}")]
    BatchRewrite(#[from] josef_records::RecordsError),
    /// A batch's CRC does not match its bytes (Kafka: CORRUPT_MESSAGE).
    #[error("corrupt records: {0}")]
    CorruptRecords(String),
    /// A batch is larger than `max.message.bytes` (Kafka: MESSAGE_TOO_LARGE).
    #[error("batch of {size} bytes exceeds max.message.bytes {max}")]
    RecordTooLarge {
        /// Size of the batch.
        size: usize,
        /// The configured limit.
        max: usize,
    },
    /// One append is larger than a whole segment (Kafka: RECORD_BATCH_TOO_LARGE).
    #[error("append of {size} bytes exceeds segment.bytes {max}")]
    RecordBatchTooLarge {
        /// Size of the append.
        size: usize,
        /// The configured segment size.
        max: usize,
    },
    /// Offsets given to the log do not increase (e.g. a follower append below the LEO, or an index
    /// entry out of order).
    #[error("invalid offset: {0}")]
    InvalidOffset(String),
    /// An index file is inconsistent with its segment (found by the sanity check on open).
    #[error("corrupt index {path}: {reason}")]
    CorruptIndex {
        /// The index file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A checkpoint file is malformed.
    #[error("malformed checkpoint: {0}")]
    MalformedCheckpoint(String),
    /// The configuration is invalid.
    #[error("invalid log config: {0}")]
    InvalidConfig(String),
    /// An index is full; the segment must roll first (internal, never returned by [`crate::Log`]).
    #[error("index {0} is full")]
    IndexFull(PathBuf),
}

impl LogError {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        LogError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
