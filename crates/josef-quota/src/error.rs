//! Typed errors, each with the Kafka error code a response carries.

use josef_protocol::ErrorCode;
use thiserror::Error;

use crate::entity::EntityType;

/// A bad quota window setting.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum QuotaConfigError {
    /// A setting below its minimum of 1.
    #[error("{name} must be at least 1")]
    AtLeastOne {
        /// The config name.
        name: &'static str,
    },
}

/// A strict controller mutation quota rejected a mutation: the topic gets
/// THROTTLING_QUOTA_EXCEEDED (89).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("the throttling quota has been exceeded: retry after {throttle_time_ms} ms")]
pub struct ThrottlingQuotaExceeded {
    /// How long until the quota has room again.
    pub throttle_time_ms: u64,
}

impl ThrottlingQuotaExceeded {
    /// THROTTLING_QUOTA_EXCEEDED.
    pub fn error_code(&self) -> ErrorCode {
        ErrorCode::ThrottlingQuotaExceeded
    }
}

/// A bad `*.replication.throttled.replicas` value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ThrottledReplicasError {
    /// An entry that is not `partition:broker` with decimal numbers.
    #[error(
        "entry {index} ({entry:?}) must be the literal '*' or a list of replicas in the format \
         [partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )]
    BadEntry {
        /// The entry's position.
        index: usize,
        /// The entry (its first 64 characters).
        entry: String,
    },
    /// A partition or broker id above `i32::MAX`.
    #[error("entry {index}: partition or broker id out of range")]
    OutOfRange {
        /// The entry's position.
        index: usize,
    },
}

/// A quota entity that is not one Kafka accepts (every variant is INVALID_REQUEST).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EntityError {
    /// No component.
    #[error("Invalid empty client quota entity")]
    Empty,
    /// A type given twice.
    #[error("Invalid client quota entity, duplicate entity entry {0}")]
    DuplicateType(EntityType),
    /// A type other than `user`, `client-id` and `ip`.
    #[error("Unhandled client quota entity type: {0}")]
    UnknownType(String),
    /// An empty (not null) name.
    #[error("Empty {0} not supported")]
    EmptyName(EntityType),
    /// `ip` together with `user` or `client-id`.
    #[error(
        "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
    )]
    IpCombination,
    /// An ip name that is not an IPv4 or IPv6 address.
    #[error("{0} is not a valid IP or resolvable host.")]
    InvalidIp(String),
}

/// Why an AlterClientQuotas entry was refused (every variant is INVALID_REQUEST).
#[derive(Debug, Clone, PartialEq, Error)]
pub enum AlterQuotaError {
    /// The entity is not valid.
    #[error(transparent)]
    Entity(#[from] EntityError),
    /// The same entity appears in two entries.
    #[error("Ignoring duplicate entity {0}")]
    DuplicateEntity(String),
    /// The same key appears twice in one entry.
    #[error("Duplicate quota key {0} not updating quota for this entity")]
    DuplicateKey(String),
    /// A key the entity cannot carry.
    #[error("Invalid configuration key {0}")]
    UnknownKey(String),
    /// A value of 0 or less.
    #[error("Quota {key} must be greater than 0")]
    NotPositive {
        /// The key.
        key: String,
    },
    /// NaN or infinite.
    #[error("Quota {key} must be a finite number")]
    NotFinite {
        /// The key.
        key: String,
    },
    /// A fractional value for an integral key.
    #[error("{key} cannot be a fractional value.")]
    Fractional {
        /// The key.
        key: String,
    },
    /// A value above the range of the key's type.
    #[error("Proposed value for {key} is too large for its type.")]
    TooLarge {
        /// The key.
        key: String,
    },
}

impl AlterQuotaError {
    /// INVALID_REQUEST.
    pub fn error_code(&self) -> ErrorCode {
        ErrorCode::InvalidRequest
    }
}

/// Why a DescribeClientQuotas filter was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DescribeQuotaError {
    /// A component with an empty entity type.
    #[error("Invalid empty entity type.")]
    EmptyEntityType,
    /// A type given in two components.
    #[error("Entity type {0} cannot appear more than once in the filter.")]
    DuplicateEntityType(String),
    /// A type other than `user`, `client-id` and `ip` (UNSUPPORTED_VERSION).
    #[error("Unsupported entity type {0}")]
    UnsupportedEntityType(String),
    /// EXACT without a match string.
    #[error("Request specified MATCH_TYPE_EXACT, but set match string to null.")]
    ExactWithoutMatch,
    /// DEFAULT with a match string.
    #[error("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")]
    DefaultWithMatch,
    /// SPECIFIED with a match string.
    #[error("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")]
    SpecifiedWithMatch,
    /// A match type other than 0, 1 and 2.
    #[error("Unknown match type {0}")]
    UnknownMatchType(i8),
    /// `ip` together with `user` or `client-id`.
    #[error(
        "Invalid entity filter component combination. IP filter component should not be used \
         with user or clientId filter component."
    )]
    IpCombination,
}

impl DescribeQuotaError {
    /// UNSUPPORTED_VERSION for an unknown entity type, INVALID_REQUEST otherwise.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            DescribeQuotaError::UnsupportedEntityType(_) => ErrorCode::UnsupportedVersion,
            _ => ErrorCode::InvalidRequest,
        }
    }
}

/// A ClientQuotaRecord whose entity cannot be represented.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum QuotaRecordError {
    /// The record's entity is not valid.
    #[error("bad ClientQuotaRecord entity: {0}")]
    Entity(#[from] EntityError),
}
