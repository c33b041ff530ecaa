//! Per-log configuration (Kafka's topic-level `LogConfig`), with Kafka's defaults.

use crate::error::LogError;

/// What happens to old segments (`cleanup.policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CleanupPolicy {
    /// `delete`: retention by time and size.
    #[default]
    Delete,
    /// `compact`: keep the latest record per key.
    Compact,
    /// `compact,delete`: both.
    CompactDelete,
}

impl CleanupPolicy {
    /// Whether retention deletes segments.
    pub fn deletes(self) -> bool {
        matches!(self, CleanupPolicy::Delete | CleanupPolicy::CompactDelete)
    }

    /// Whether the log is compacted.
    pub fn compacts(self) -> bool {
        matches!(self, CleanupPolicy::Compact | CleanupPolicy::CompactDelete)
    }
}

/// Which timestamp batches carry (`message.timestamp.type`), as josef-records defines it.
pub use josef_records::TimestampType;

/// Configuration of one partition log. `Default` gives Kafka's defaults.
///
/// ```
/// let c = josef_log::LogConfig::default();
/// assert_eq!(c.segment_bytes, 1 << 30);
/// assert_eq!(c.index_interval_bytes, 4096);
/// c.validate().unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// `segment.bytes`: roll when the active segment would exceed this size.
    pub segment_bytes: u32,
    /// `segment.ms`: roll a non-empty segment this old (measured from its first batch's max
    /// timestamp, or its creation time when that has none).
    pub segment_ms: i64,
    /// `segment.jitter.ms`: subtracted from `segment.ms`, to spread rolls of many partitions. This
    /// log applies it as given (no random draw), so tests stay deterministic.
    pub segment_jitter_ms: i64,
    /// `segment.index.bytes`: preallocated size of the offset and time indexes.
    pub segment_index_bytes: u32,
    /// `index.interval.bytes`: bytes appended between two index entries.
    pub index_interval_bytes: u32,
    /// `retention.ms`: delete segments whose largest timestamp is older; -1 keeps forever.
    pub retention_ms: i64,
    /// `retention.bytes`: delete oldest segments while the log is larger; -1 is unlimited.
    pub retention_bytes: i64,
    /// `flush.messages`: fsync after this many appended messages (offsets).
    pub flush_messages: i64,
    /// `flush.ms`: fsync when the last flush is this old (checked on append and
    /// [`crate::Log::maybe_flush`]).
    pub flush_ms: i64,
    /// `max.message.bytes`: largest accepted batch.
    pub max_message_bytes: u32,
    /// `cleanup.policy`.
    pub cleanup_policy: CleanupPolicy,
    /// `delete.retention.ms`: how long tombstones survive compaction.
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms`: records younger than this are not compacted.
    pub min_compaction_lag_ms: i64,
    /// `min.cleanable.dirty.ratio`, in percent (Kafka's 0.5 is 50), so the config stays `Eq`.
    pub min_cleanable_dirty_ratio_percent: u8,
    /// `message.timestamp.type`.
    pub message_timestamp_type: TimestampType,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 7 * 24 * 60 * 60 * 1000,
            segment_jitter_ms: 0,
            segment_index_bytes: 10 * 1024 * 1024,
            index_interval_bytes: 4096,
            retention_ms: 7 * 24 * 60 * 60 * 1000,
            retention_bytes: -1,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            max_message_bytes: 1_048_588,
            cleanup_policy: CleanupPolicy::Delete,
            delete_retention_ms: 24 * 60 * 60 * 1000,
            min_compaction_lag_ms: 0,
            min_cleanable_dirty_ratio_percent: 50,
            message_timestamp_type: TimestampType::CreateTime,
        }
    }
}

impl LogConfig {
    /// Checks Kafka's lower bounds (`segment.bytes` ≥ 14, index size ≥ 4 entries).
    pub fn validate(&self) -> Result<(), LogError> {
        if self.segment_bytes < 14 {
            return Err(LogError::InvalidConfig(
                "segment.bytes must be at least 14".into(),
            ));
        }
        if self.segment_index_bytes < 4 * 12 {
            return Err(LogError::InvalidConfig(
                "segment.index.bytes must hold at least 4 time index entries".into(),
            ));
        }
        if self.segment_ms <= 0 {
            return Err(LogError::InvalidConfig(
                "segment.ms must be positive".into(),
            ));
        }
        if self.flush_messages <= 0 || self.flush_ms < 0 {
            return Err(LogError::InvalidConfig(
                "flush.messages must be positive and flush.ms non-negative".into(),
            ));
        }
        if self.min_cleanable_dirty_ratio_percent > 100 {
            return Err(LogError::InvalidConfig(
                "min.cleanable.dirty.ratio must be within [0, 1]".into(),
            ));
        }
        Ok(())
    }
}
