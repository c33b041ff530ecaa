//! Errors: [`ApiError`] (a Kafka error code with a message, Kafka's `ApiError`) for requests, and
//! [`ReplayError`] for records that cannot be applied.

use josef_protocol::ErrorCode;
use thiserror::Error;

/// A request failure as the controller answers it: a Kafka error code and a human-readable message
/// (Kafka's `org.apache.kafka.common.requests.ApiError`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}: {message}", code.name())]
pub struct ApiError {
    /// The Kafka error code.
    pub code: ErrorCode,
    /// Why.
    pub message: String,
}

impl ApiError {
    /// An error with a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
        }
    }

    /// The numeric code.
    pub fn code(&self) -> i16 {
        self.code.code()
    }
}

impl From<ErrorCode> for ApiError {
    fn from(code: ErrorCode) -> Self {
        ApiError {
            code,
            message: code.name().to_string(),
        }
    }
}

/// A committed record the controller could not apply: the log and the controller disagree, which a
/// driver should treat as fatal for this controller (Kafka raises a fault and renounces).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// Records must be replayed in log order.
    #[error("offset {offset} replayed after offset {last}")]
    OffsetWentBack {
        /// The offset passed.
        offset: u64,
        /// The last offset replayed before it.
        last: u64,
    },
    /// A record names a topic id that does not exist.
    #[error("unknown topic id {0}")]
    UnknownTopic(josef_protocol::Uuid),
    /// A record names a partition that does not exist.
    #[error("unknown partition {partition} of topic {topic}")]
    UnknownPartition {
        /// Topic id.
        topic: josef_protocol::Uuid,
        /// Partition index.
        partition: i32,
    },
    /// A record names a broker that is not registered.
    #[error("broker {0} is not registered")]
    UnknownBroker(i32),
    /// josef-metadata's delta refused the record (the controller's image would not follow it).
    #[error("metadata image: {0}")]
    Metadata(#[from] josef_metadata::MetadataError),
    /// A record would break an invariant (epochs going back, a producer id block below the last).
    #[error("invalid record: {0}")]
    Invalid(String),
}
