//! Small shared value types: topic partitions and the transaction protocol version.

use std::fmt;

/// A topic partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
}

impl TopicPartition {
    /// A topic partition.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// Kafka's `transaction.version` feature level (KIP-890).
///
/// V0/V1 keep the producer epoch across transactions; V2 bumps it on every EndTxn. From V1 on
/// the transaction log value is written with (flexible) schema version 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum TransactionVersion {
    /// The original protocol.
    #[default]
    V0,
    /// Flexible transaction log records, no epoch bump.
    V1,
    /// Epoch bump on every EndTxn; server-side AddPartitionsToTxn.
    V2,
}

impl TransactionVersion {
    /// The feature level number.
    pub fn feature_level(self) -> i16 {
        match self {
            TransactionVersion::V0 => 0,
            TransactionVersion::V1 => 1,
            TransactionVersion::V2 => 2,
        }
    }

    /// The version for a feature level (levels above 2 are treated as 2).
    pub fn from_feature_level(level: i16) -> Self {
        match level {
            i16::MIN..=0 => TransactionVersion::V0,
            1 => TransactionVersion::V1,
            _ => TransactionVersion::V2,
        }
    }

    /// Whether EndTxn bumps the producer epoch (V2).
    pub fn supports_epoch_bump(self) -> bool {
        self == TransactionVersion::V2
    }

    /// Schema version of `TransactionLogValue` Kafka writes at this level (1 from V1 on, else 0).
    pub fn transaction_log_value_version(self) -> i16 {
        if self != TransactionVersion::V0 {
            1
        } else {
            0
        }
    }
}
