//! Error types of the runtime: write failures, replay failures, record (de)serialisation failures.

use thiserror::Error;

/// Kafka's `NOT_COORDINATOR` error code.
pub const NOT_COORDINATOR: i16 = 16;
/// Kafka's `COORDINATOR_NOT_AVAILABLE` error code.
pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
/// Kafka's `UNKNOWN_SERVER_ERROR` error code.
pub const UNKNOWN_SERVER_ERROR: i16 = -1;

/// Why appending records to a coordinator partition failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WriteError {
    /// This node no longer leads the coordinator partition.
    #[error("not the leader of the coordinator partition")]
    NotLeader,
    /// Not enough in-sync replicas to accept the write.
    #[error("not enough in-sync replicas")]
    NotEnoughReplicas,
    /// The write did not complete in time.
    #[error("write timed out")]
    Timeout,
    /// The batch is larger than the partition accepts.
    #[error("record batch too large: {size} bytes, limit {max}")]
    RecordTooLarge {
        /// Size of the batch in bytes.
        size: usize,
        /// Maximum accepted size in bytes.
        max: usize,
    },
    /// The storage layer failed.
    #[error("storage error: {0}")]
    Storage(String),
    /// The writer does not support this kind of append (e.g. transaction markers).
    #[error("unsupported write: {0}")]
    Unsupported(&'static str),
}

impl WriteError {
    /// The error code a coordinator returns to the client for this failure, mapped the way Kafka's
    /// coordinators map log append errors (`NOT_COORDINATOR` when leadership or storage is lost,
    /// `COORDINATOR_NOT_AVAILABLE` for transient replication trouble, `UNKNOWN_SERVER_ERROR` for
    /// oversized batches).
    ///
    /// ```
    /// use josef_coordinator::{WriteError, NOT_COORDINATOR};
    /// assert_eq!(WriteError::NotLeader.kafka_error_code(), NOT_COORDINATOR);
    /// ```
    pub fn kafka_error_code(&self) -> i16 {
        match self {
            WriteError::NotLeader | WriteError::Storage(_) => NOT_COORDINATOR,
            WriteError::NotEnoughReplicas | WriteError::Timeout => COORDINATOR_NOT_AVAILABLE,
            WriteError::RecordTooLarge { .. } | WriteError::Unsupported(_) => UNKNOWN_SERVER_ERROR,
        }
    }
}

/// A record could not be applied to a shard.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The record is malformed or contradicts the shard's state.
    #[error("invalid record at offset {offset}: {reason}")]
    InvalidRecord {
        /// Offset of the offending record.
        offset: i64,
        /// What is wrong with it.
        reason: String,
    },
    /// The record type or version is not known to this shard.
    #[error("unsupported record: {0}")]
    Unsupported(String),
}

/// A stored key/value could not be turned into a coordinator record.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SerdeError {
    /// Fewer bytes than the format needs.
    #[error("truncated record")]
    Truncated,
    /// A key or value schema version this code does not know.
    #[error("unknown {what} version {version}")]
    UnknownVersion {
        /// `"key"` or `"value"`.
        what: &'static str,
        /// The version found.
        version: i16,
    },
    /// The bytes decode but make no sense.
    #[error("invalid record: {0}")]
    Invalid(String),
}

/// An operation driven through [`crate::CoordinatorDriver`] failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DriverError {
    /// The records could not be appended; the shard is unchanged.
    #[error("append failed: {0}")]
    Write(#[from] WriteError),
    /// Appended records could not be replayed; the shard should be unloaded and reloaded.
    #[error("replay failed: {0}")]
    Replay(#[from] ReplayError),
}

impl DriverError {
    /// The error code to answer the client with (see [`WriteError::kafka_error_code`]).
    pub fn kafka_error_code(&self) -> i16 {
        match self {
            DriverError::Write(e) => e.kafka_error_code(),
            DriverError::Replay(_) => UNKNOWN_SERVER_ERROR,
        }
    }
}
