//! Errors where the partition meets its callers, and the mapping of the crates' errors to Kafka
//! codes.

use josef_log::LogError;
use josef_protocol::ErrorCode;
use josef_sequencer::SequenceError;

/// A failed operation on a partition: the Kafka error a client sees and an optional message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}", code.name(), message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
pub struct PartitionError {
    /// Kafka error code.
    pub code: ErrorCode,
    /// Message for the client (Produce v8+ `error_message`).
    pub message: Option<String>,
}

impl PartitionError {
    /// An error without a message.
    pub fn new(code: ErrorCode) -> Self {
        PartitionError {
            code,
            message: None,
        }
    }

    /// An error with a message.
    pub fn with(code: ErrorCode, message: impl Into<String>) -> Self {
        PartitionError {
            code,
            message: Some(message.into()),
        }
    }
}

impl From<ErrorCode> for PartitionError {
    fn from(code: ErrorCode) -> Self {
        PartitionError::new(code)
    }
}

impl From<LogError> for PartitionError {
    fn from(e: LogError) -> Self {
        PartitionError::with(log_error_code(&e), e.to_string())
    }
}

impl From<&SequenceError> for PartitionError {
    fn from(e: &SequenceError) -> Self {
        PartitionError {
            code: ErrorCode::from_i16(e.kafka_error_code())
                .unwrap_or(ErrorCode::UnknownServerError),
            message: Some(e.to_string()),
        }
    }
}

/// Maps a log error to the Kafka error code a client sees.
///
/// ```
/// use josef_log::LogError;
/// use josef_partition::log_error_code;
/// use josef_protocol::ErrorCode;
/// assert_eq!(log_error_code(&LogError::CorruptRecords("crc".into())), ErrorCode::CorruptMessage);
/// ```
pub fn log_error_code(e: &LogError) -> ErrorCode {
    match e {
        LogError::OffsetOutOfRange { .. } => ErrorCode::OffsetOutOfRange,
        LogError::CorruptRecords(_) => ErrorCode::CorruptMessage,
        LogError::InvalidRecords(_) | LogError::BatchRewrite(_) => ErrorCode::InvalidRecord,
        LogError::RecordTooLarge { .. } => ErrorCode::MessageTooLarge,
        LogError::RecordBatchTooLarge { .. } => ErrorCode::RecordListTooLarge,
        _ => ErrorCode::KafkaStorageError,
    }
}
