//! The errors of decoding and replaying metadata records.

use josef_protocol::{DecodeError, Uuid};

/// Why bytes could not be decoded as a [`crate::MetadataRecord`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordDecodeError {
    /// The frame header (frame version, record type or record version) could not be read.
    #[error("cannot read the record's {what}: {source}")]
    Header {
        /// `frame version`, `record type` or `record version`.
        what: &'static str,
        /// The wire error.
        source: DecodeError,
    },
    /// A header value above `i16::MAX`.
    #[error("the record's {what} {value} is too large")]
    HeaderTooLarge {
        /// `frame version`, `record type` or `record version`.
        what: &'static str,
        /// The value read.
        value: u32,
    },
    /// A frame version other than [`crate::FRAME_VERSION`].
    #[error("unsupported metadata record frame version {0} (only {v} is supported)", v = crate::FRAME_VERSION)]
    UnsupportedFrameVersion(i16),
    /// A record type (api key) no metadata record has.
    #[error("unknown metadata record type {0}")]
    UnknownRecordType(i16),
    /// A version the record type does not have.
    #[error("metadata record type {record_type} has no version {version}")]
    UnsupportedVersion {
        /// The record type.
        record_type: i16,
        /// The version read.
        version: i16,
    },
    /// The body could not be decoded at its version.
    #[error("cannot decode the body of metadata record type {record_type} v{version}: {source}")]
    Body {
        /// The record type.
        record_type: i16,
        /// Its version.
        version: i16,
        /// The wire error.
        source: DecodeError,
    },
    /// Bytes were left after the body.
    #[error("{0} bytes left after the metadata record")]
    TrailingBytes(usize),
}

/// Why a record could not be replayed into a [`crate::MetadataDelta`] or turned into an image type.
///
/// A failed replay leaves the delta as it was before the record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    /// A record names a topic id the image does not hold.
    #[error("unknown topic id {0}")]
    UnknownTopic(Uuid),
    /// A `PartitionChangeRecord` names a partition the topic does not have.
    #[error("unknown partition {partition} of topic {topic_id}")]
    UnknownPartition {
        /// The topic.
        topic_id: Uuid,
        /// The partition index.
        partition: i32,
    },
    /// A negative partition index.
    #[error("invalid partition index {partition} of topic {topic_id}")]
    InvalidPartitionIndex {
        /// The topic.
        topic_id: Uuid,
        /// The partition index.
        partition: i32,
    },
    /// A `TopicRecord` whose id is already a topic.
    #[error("topic id {0} already exists")]
    TopicIdExists(Uuid),
    /// A `TopicRecord` whose name another topic already has.
    #[error("topic name {name} is already used by topic id {existing}")]
    TopicNameExists {
        /// The name.
        name: String,
        /// The id that holds it.
        existing: Uuid,
    },
    /// A leader recovery state other than 0 (recovered) or 1 (recovering).
    #[error("invalid leader recovery state {0}")]
    InvalidLeaderRecoveryState(i8),
    /// Replica directories given whose count differs from the replicas'.
    #[error("{directories} directories for {replicas} replicas")]
    DirectoriesMismatch {
        /// Number of replicas.
        replicas: usize,
        /// Number of directories.
        directories: usize,
    },
    /// A broker record names a broker that is not registered.
    #[error("cannot {action} broker {broker_id}: not registered")]
    UnknownBroker {
        /// `fence`, `unfence` or `change`.
        action: &'static str,
        /// The broker.
        broker_id: i32,
    },
    /// A broker record's epoch differs from the registration's.
    #[error("cannot {action} broker {broker_id}: epoch {epoch} is not the registered epoch {registered}")]
    BrokerEpochMismatch {
        /// `fence`, `unfence` or `change`.
        action: &'static str,
        /// The broker.
        broker_id: i32,
        /// The record's epoch.
        epoch: i64,
        /// The registration's epoch.
        registered: i64,
    },
    /// A `BrokerRegistrationChangeRecord.Fenced` other than -1, 0 or 1.
    #[error("invalid fencing change {0}")]
    InvalidFencingChange(i8),
    /// A `BrokerRegistrationChangeRecord.InControlledShutdown` other than 0 or 1.
    #[error("invalid controlled shutdown change {0}")]
    InvalidControlledShutdownChange(i8),
    /// A removal record names an ACL, SCRAM credential or delegation token the image does not hold.
    #[error("cannot remove unknown {what} {key}")]
    UnknownEntry {
        /// `ACL`, `SCRAM credential` or `delegation token`.
        what: &'static str,
        /// Its key, as text.
        key: String,
    },
}
