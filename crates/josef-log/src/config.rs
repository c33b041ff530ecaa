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

use josef_records::validate::ValidationConfig;
use josef_records::Compression;

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
    /// `max.compaction.lag.ms`: a log whose oldest dirty data is this old is compacted whatever
    /// its dirty ratio.
    pub max_compaction_lag_ms: i64,
    /// `file.delete.delay.ms`: how long a deleted segment's files stay on disk (renamed
    /// `.deleted`) before they are removed; 0 removes them at once.
    pub file_delete_delay_ms: i64,
    /// `min.cleanable.dirty.ratio`, in percent (Kafka's 0.5 is 50), so the config stays `Eq`.
    pub min_cleanable_dirty_ratio_percent: u8,
    /// `message.timestamp.type`.
    pub message_timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`: how far before the broker's time a CreateTime
    /// timestamp may lie; `i64::MAX` (the default) defers to
    /// `message.timestamp.difference.max.ms`, as in Kafka 3.6+ (see
    /// [`LogConfig::validation_config`]).
    pub message_timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`: how far after the broker's time a CreateTime timestamp
    /// may lie; `i64::MAX` defers to `message.timestamp.difference.max.ms`.
    pub message_timestamp_after_max_ms: i64,
    /// `message.timestamp.difference.max.ms` (deprecated): both bounds, where they are not set.
    pub message_timestamp_difference_max_ms: i64,
    /// `compression.type`: the codec batches are stored with; `None` is `producer` (kept as the
    /// producer sent them).
    pub compression_type: Option<Compression>,
    /// `min.insync.replicas`: the ISR size below which acks=-1 appends are refused.
    pub min_insync_replicas: i32,
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
            max_compaction_lag_ms: i64::MAX,
            file_delete_delay_ms: 60_000,
            min_cleanable_dirty_ratio_percent: 50,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: i64::MAX,
            message_timestamp_difference_max_ms: i64::MAX,
            compression_type: None,
            min_insync_replicas: 1,
        }
    }
}

impl LogConfig {
    /// What josef-records' produce-side preparation needs of this config
    /// ([`josef_records::prepare`]): timestamp type and bounds, compaction, `max.message.bytes`,
    /// `compression.type`. A bound left at `i64::MAX` takes `message.timestamp.difference.max.ms`
    /// (Kafka's `getMessageTimestampBeforeMaxMs` / `AfterMaxMs`).
    ///
    /// ```
    /// let c = josef_log::LogConfig::from_properties([
    ///     ("message.timestamp.difference.max.ms", "1000"),
    ///     ("message.timestamp.after.max.ms", "50"),
    /// ]).unwrap();
    /// let v = c.validation_config();
    /// assert_eq!((v.timestamp_before_max_ms, v.timestamp_after_max_ms), (1000, 50));
    /// ```
    pub fn validation_config(&self) -> ValidationConfig {
        let or_difference = |bound: i64| {
            if bound == i64::MAX {
                self.message_timestamp_difference_max_ms
            } else {
                bound
            }
        };
        ValidationConfig {
            timestamp_type: self.message_timestamp_type,
            timestamp_before_max_ms: or_difference(self.message_timestamp_before_max_ms),
            timestamp_after_max_ms: or_difference(self.message_timestamp_after_max_ms),
            compacted: self.cleanup_policy.compacts(),
            max_batch_bytes: self.max_message_bytes as usize,
            target_compression: self.compression_type,
            ..ValidationConfig::default()
        }
    }

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

    /// Kafka's defaults overridden by `props` (topic-config names and values as Kafka spells
    /// them, e.g. `("retention.ms", "3600000")`), then [`LogConfig::validate`]. Names this struct
    /// has no field for (`preallocate`, `message.downconversion.enable`, ...) are ignored; a bad
    /// value of a known name is [`LogError::InvalidConfig`] with Kafka's message.
    ///
    /// ```
    /// use josef_log::{CleanupPolicy, LogConfig};
    /// let c = LogConfig::from_properties([
    ///     ("cleanup.policy", "compact,delete"),
    ///     ("min.cleanable.dirty.ratio", "0.25"),
    ///     ("preallocate", "true"), // no field for it: ignored
    /// ]).unwrap();
    /// assert_eq!(c.cleanup_policy, CleanupPolicy::CompactDelete);
    /// assert_eq!(c.min_cleanable_dirty_ratio_percent, 25);
    /// assert!(LogConfig::from_properties([("segment.ms", "0")]).is_err());
    /// ```
    pub fn from_properties<K, V>(props: impl IntoIterator<Item = (K, V)>) -> Result<Self, LogError>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut c = LogConfig::default();
        for (k, v) in props {
            c.set_property(k.as_ref(), v.as_ref())?;
        }
        c.validate()?;
        Ok(c)
    }

    /// Checks one topic config value against Kafka's type and range (`LogConfig.java`'s
    /// validators). `Ok(false)` for a name this struct has no field for.
    pub fn validate_property(name: &str, value: &str) -> Result<bool, LogError> {
        LogConfig::default().set_property(name, value)
    }

    /// Sets the field of one topic config from its Kafka name and text value. Returns `Ok(false)`
    /// (and changes nothing) for a name this struct has no field for.
    pub fn set_property(&mut self, name: &str, value: &str) -> Result<bool, LogError> {
        let bad = |why: &str| {
            LogError::InvalidConfig(format!(
                "Invalid value {value} for configuration {name}: {why}"
            ))
        };
        let v = value.trim();
        let int = |min: i64| -> Result<i64, LogError> {
            let n: i32 = v.parse().map_err(|_| bad("Not a number of type INT"))?;
            if i64::from(n) < min {
                return Err(bad(&format!("Value must be at least {min}")));
            }
            Ok(i64::from(n))
        };
        let long = |min: i64| -> Result<i64, LogError> {
            let n: i64 = v.parse().map_err(|_| bad("Not a number of type LONG"))?;
            if n < min {
                return Err(bad(&format!("Value must be at least {min}")));
            }
            Ok(n)
        };
        // Sizes are stored as u32: every INT accepted here is non-negative and fits.
        let to_u32 = |n: i64| u32::try_from(n).map_err(|_| bad("out of range"));
        match name {
            // LegacyRecord.RECORD_OVERHEAD_V0, Kafka's lower bound.
            "segment.bytes" => self.segment_bytes = to_u32(int(14)?)?,
            "segment.ms" => self.segment_ms = long(1)?,
            "segment.jitter.ms" => self.segment_jitter_ms = long(0)?,
            "segment.index.bytes" => self.segment_index_bytes = to_u32(int(4)?)?,
            "index.interval.bytes" => self.index_interval_bytes = to_u32(int(0)?)?,
            "retention.ms" => self.retention_ms = long(-1)?,
            "retention.bytes" => self.retention_bytes = long(i64::MIN)?,
            "flush.messages" => self.flush_messages = long(1)?,
            "flush.ms" => self.flush_ms = long(0)?,
            "max.message.bytes" => self.max_message_bytes = to_u32(int(0)?)?,
            "delete.retention.ms" => self.delete_retention_ms = long(0)?,
            "min.compaction.lag.ms" => self.min_compaction_lag_ms = long(0)?,
            "max.compaction.lag.ms" => self.max_compaction_lag_ms = long(1)?,
            "file.delete.delay.ms" => self.file_delete_delay_ms = long(0)?,
            "min.cleanable.dirty.ratio" => {
                let r: f64 = v.parse().map_err(|_| bad("Not a number of type DOUBLE"))?;
                if !(0.0..=1.0).contains(&r) {
                    return Err(bad("Value must be no more than 1.0"));
                }
                // Kept in whole percent so the config stays `Eq`.
                self.min_cleanable_dirty_ratio_percent = (r * 100.0).round() as u8;
            }
            "cleanup.policy" => {
                let (mut compact, mut delete) = (false, false);
                for p in v.split(',').map(str::trim) {
                    match p {
                        "compact" => compact = true,
                        "delete" => delete = true,
                        "" => {}
                        _ => return Err(bad("String must be one of: compact, delete")),
                    }
                }
                self.cleanup_policy = match (compact, delete) {
                    (true, true) => CleanupPolicy::CompactDelete,
                    (true, false) => CleanupPolicy::Compact,
                    // An empty list: neither compaction nor deletion in Kafka 4; the closest
                    // this log has is `delete` (its retention settings then decide).
                    _ => CleanupPolicy::Delete,
                };
            }
            "message.timestamp.before.max.ms" => self.message_timestamp_before_max_ms = long(0)?,
            "message.timestamp.after.max.ms" => self.message_timestamp_after_max_ms = long(0)?,
            "message.timestamp.difference.max.ms" => {
                self.message_timestamp_difference_max_ms = long(0)?
            }
            "min.insync.replicas" => {
                self.min_insync_replicas =
                    i32::try_from(int(1)?).map_err(|_| bad("out of range"))?
            }
            "compression.type" => {
                self.compression_type = match v {
                    "producer" => None,
                    "uncompressed" => Some(Compression::None),
                    "gzip" => Some(Compression::Gzip),
                    "snappy" => Some(Compression::Snappy),
                    "lz4" => Some(Compression::Lz4),
                    "zstd" => Some(Compression::Zstd),
                    _ => return Err(bad(
                        "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
                    )),
                }
            }
            "message.timestamp.type" => {
                self.message_timestamp_type = match v {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    _ => return Err(bad("String must be one of: CreateTime, LogAppendTime")),
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The Kafka topic-config names [`LogConfig::set_property`] understands.
pub const LOG_CONFIG_PROPERTY_NAMES: &[&str] = &[
    "cleanup.policy",
    "compression.type",
    "delete.retention.ms",
    "file.delete.delay.ms",
    "flush.messages",
    "flush.ms",
    "index.interval.bytes",
    "max.compaction.lag.ms",
    "max.message.bytes",
    "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms",
    "message.timestamp.difference.max.ms",
    "message.timestamp.type",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "min.insync.replicas",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.index.bytes",
    "segment.jitter.ms",
    "segment.ms",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_property_name_is_understood() {
        for name in LOG_CONFIG_PROPERTY_NAMES {
            let ok = ["compact", "CreateTime", "0.5", "100", "zstd"]
                .iter()
                .any(|v| matches!(LogConfig::validate_property(name, v), Ok(true)));
            assert!(ok, "{name}");
        }
        assert!(matches!(
            LogConfig::validate_property("preallocate", "true"),
            Ok(false)
        ));
    }

    #[test]
    fn properties_are_checked_against_kafkas_validators() {
        for (name, value) in [
            ("segment.bytes", "13"),
            ("segment.bytes", "abc"),
            ("segment.bytes", "3000000000"),
            ("segment.ms", "0"),
            ("flush.messages", "0"),
            ("retention.ms", "-2"),
            ("max.compaction.lag.ms", "0"),
            ("min.cleanable.dirty.ratio", "1.5"),
            ("cleanup.policy", "shred"),
            ("message.timestamp.type", "Now"),
            ("compression.type", "brotli"),
            ("min.insync.replicas", "0"),
            ("message.timestamp.before.max.ms", "-1"),
        ] {
            assert!(
                LogConfig::validate_property(name, value).is_err(),
                "{name}={value}"
            );
        }
        for (name, value) in [
            ("retention.ms", "-1"),
            ("retention.bytes", "-1"),
            ("cleanup.policy", "delete,compact"),
            ("segment.bytes", " 1048576 "),
        ] {
            assert!(
                matches!(LogConfig::validate_property(name, value), Ok(true)),
                "{name}={value}"
            );
        }
    }

    #[test]
    fn from_properties_overrides_kafkas_defaults() {
        let c = LogConfig::from_properties([
            ("segment.bytes", "1048576"),
            ("retention.ms", "-1"),
            ("message.timestamp.type", "LogAppendTime"),
            ("file.delete.delay.ms", "0"),
            ("min.insync.replicas", "2"),
        ])
        .unwrap();
        assert_eq!(c.segment_bytes, 1 << 20);
        assert_eq!(c.retention_ms, -1);
        assert_eq!(c.message_timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(c.file_delete_delay_ms, 0);
        assert_eq!(c.max_message_bytes, LogConfig::default().max_message_bytes);
        assert_eq!(c.min_insync_replicas, 2);
        // The whole config is validated too (index smaller than four time index entries).
        assert!(LogConfig::from_properties([("segment.index.bytes", "10")]).is_err());
    }

    #[test]
    fn the_validation_config_carries_the_produce_settings() {
        let c = LogConfig::from_properties([
            ("cleanup.policy", "compact"),
            ("compression.type", "lz4"),
            ("max.message.bytes", "5000"),
            ("message.timestamp.type", "LogAppendTime"),
            ("message.timestamp.before.max.ms", "10"),
        ])
        .unwrap();
        let v = c.validation_config();
        assert!(v.compacted);
        assert_eq!(v.target_compression, Some(Compression::Lz4));
        assert_eq!(v.max_batch_bytes, 5000);
        assert_eq!(v.timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(
            (v.timestamp_before_max_ms, v.timestamp_after_max_ms),
            (10, i64::MAX)
        );
        // The defaults: `producer`, unbounded timestamps.
        let v = LogConfig::default().validation_config();
        assert_eq!(v.target_compression, None);
        assert_eq!(v.timestamp_before_max_ms, i64::MAX);
        // The deprecated bound fills both where they are not set.
        let c = LogConfig::from_properties([("message.timestamp.difference.max.ms", "7")]).unwrap();
        let v = c.validation_config();
        assert_eq!(
            (v.timestamp_before_max_ms, v.timestamp_after_max_ms),
            (7, 7)
        );
    }
}
