//! Topic-level configs: the names Kafka reports (Kafka's `TopicConfig` and `LogConfig`), their types, their
//! defaults taken from the broker settings, validation of overrides, and the mapping to
//! [`josef_log::LogConfig`].

use std::collections::BTreeMap;

use josef_log::{LogConfig, LogError};

use crate::config::BrokerConfig;

/// Kafka's `ConfigType` numbers as DescribeConfigs reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    /// 1
    Boolean = 1,
    /// 2
    String = 2,
    /// 3
    Int = 3,
    /// 5
    Long = 5,
    /// 6
    Double = 6,
    /// 7
    List = 7,
}

/// One topic config: name, type, broker synonym (if any: Kafka's `ServerTopicConfigSynonyms`, the
/// first of each list, which is also the name a dynamic broker default is set under).
#[derive(Debug, Clone, Copy)]
pub struct TopicConfigDef {
    /// The topic-level name.
    pub name: &'static str,
    /// Its type.
    pub kind: ConfigType,
    /// The broker setting that supplies the default, if any.
    pub synonym: Option<&'static str>,
}

const fn def(
    name: &'static str,
    kind: ConfigType,
    synonym: Option<&'static str>,
) -> TopicConfigDef {
    TopicConfigDef {
        name,
        kind,
        synonym,
    }
}

use ConfigType::{Boolean, Double, Int, List, Long};

/// Every topic config Josef reports, in Kafka's order of `LogConfig`.
pub const TOPIC_CONFIGS: &[TopicConfigDef] = &[
    def("cleanup.policy", List, Some("log.cleanup.policy")),
    def(
        "compression.type",
        ConfigType::String,
        Some("compression.type"),
    ),
    def(
        "compression.gzip.level",
        Int,
        Some("compression.gzip.level"),
    ),
    def("compression.lz4.level", Int, Some("compression.lz4.level")),
    def(
        "compression.zstd.level",
        Int,
        Some("compression.zstd.level"),
    ),
    def(
        "delete.retention.ms",
        Long,
        Some("log.cleaner.delete.retention.ms"),
    ),
    def(
        "file.delete.delay.ms",
        Long,
        Some("log.segment.delete.delay.ms"),
    ),
    def("flush.messages", Long, Some("log.flush.interval.messages")),
    def("flush.ms", Long, Some("log.flush.interval.ms")),
    def("follower.replication.throttled.replicas", List, None),
    def(
        "index.interval.bytes",
        Int,
        Some("log.index.interval.bytes"),
    ),
    def("leader.replication.throttled.replicas", List, None),
    def(
        "local.retention.bytes",
        Long,
        Some("log.local.retention.bytes"),
    ),
    def("local.retention.ms", Long, Some("log.local.retention.ms")),
    def(
        "max.compaction.lag.ms",
        Long,
        Some("log.cleaner.max.compaction.lag.ms"),
    ),
    def("max.message.bytes", Int, Some("message.max.bytes")),
    def("message.downconversion.enable", Boolean, None),
    def(
        "message.format.version",
        ConfigType::String,
        Some("log.message.format.version"),
    ),
    def(
        "message.timestamp.after.max.ms",
        Long,
        Some("log.message.timestamp.after.max.ms"),
    ),
    def(
        "message.timestamp.before.max.ms",
        Long,
        Some("log.message.timestamp.before.max.ms"),
    ),
    def("message.timestamp.difference.max.ms", Long, None),
    def(
        "message.timestamp.type",
        ConfigType::String,
        Some("log.message.timestamp.type"),
    ),
    def(
        "min.cleanable.dirty.ratio",
        Double,
        Some("log.cleaner.min.cleanable.ratio"),
    ),
    def(
        "min.compaction.lag.ms",
        Long,
        Some("log.cleaner.min.compaction.lag.ms"),
    ),
    def("min.insync.replicas", Int, Some("min.insync.replicas")),
    def("preallocate", Boolean, Some("log.preallocate")),
    def("remote.log.copy.disable", Boolean, None),
    def("remote.log.delete.on.disable", Boolean, None),
    def("remote.storage.enable", Boolean, None),
    def("retention.bytes", Long, Some("log.retention.bytes")),
    def("retention.ms", Long, Some("log.retention.ms")),
    def("segment.bytes", Int, Some("log.segment.bytes")),
    def("segment.index.bytes", Int, Some("log.index.size.max.bytes")),
    def("segment.jitter.ms", Long, Some("log.roll.jitter.ms")),
    def("segment.ms", Long, Some("log.roll.ms")),
    def(
        "unclean.leader.election.enable",
        Boolean,
        Some("unclean.leader.election.enable"),
    ),
];

/// The topic config whose broker default `broker_name` is (`log.retention.ms` → `retention.ms`).
pub fn by_synonym(broker_name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS
        .iter()
        .find(|d| d.synonym == Some(broker_name))
}

/// Looks a topic config up by name.
pub fn lookup(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// The broker-level default of a topic config (what DescribeConfigs reports without an override).
pub fn default_value(name: &str, b: &BrokerConfig) -> String {
    match name {
        "cleanup.policy" => b.log_cleanup_policy.clone(),
        "compression.type" => b.compression_type.clone(),
        "compression.gzip.level" => "-1".into(),
        "compression.lz4.level" => "9".into(),
        "compression.zstd.level" => "3".into(),
        "delete.retention.ms" => b.log_cleaner_delete_retention_ms.to_string(),
        "file.delete.delay.ms" => b.log_segment_delete_delay_ms.to_string(),
        "flush.messages" => b.log_flush_interval_messages.to_string(),
        "flush.ms" => b.log_flush_interval_ms.to_string(),
        "index.interval.bytes" => b.log_index_interval_bytes.to_string(),
        "local.retention.bytes" | "local.retention.ms" => "-2".into(),
        "max.compaction.lag.ms" => b.log_cleaner_max_compaction_lag_ms.to_string(),
        "max.message.bytes" => b.message_max_bytes.to_string(),
        "message.downconversion.enable" => "true".into(),
        "message.format.version" => "3.0-IV1".into(),
        "message.timestamp.after.max.ms"
        | "message.timestamp.before.max.ms"
        | "message.timestamp.difference.max.ms" => i64::MAX.to_string(),
        "message.timestamp.type" => b.log_message_timestamp_type.clone(),
        "min.cleanable.dirty.ratio" => b.log_cleaner_min_cleanable_ratio.to_string(),
        "min.compaction.lag.ms" => b.log_cleaner_min_compaction_lag_ms.to_string(),
        "min.insync.replicas" => b.min_insync_replicas.to_string(),
        "preallocate"
        | "remote.log.copy.disable"
        | "remote.log.delete.on.disable"
        | "remote.storage.enable"
        | "unclean.leader.election.enable" => "false".into(),
        "retention.bytes" => b.log_retention_bytes.to_string(),
        "retention.ms" => b.log_retention_ms.to_string(),
        "segment.bytes" => b.log_segment_bytes.to_string(),
        "segment.index.bytes" => b.log_index_size_max_bytes.to_string(),
        "segment.jitter.ms" => "0".into(),
        "segment.ms" => b.log_roll_ms.to_string(),
        _ => String::new(),
    }
}

/// Checks one override: the name must be known and the value of the right type and range.
pub fn validate(name: &str, value: &str) -> Result<(), String> {
    let d = lookup(name).ok_or_else(|| format!("Unknown topic config name: {name}"))?;
    let bad = || format!("Invalid value {value} for configuration {name}");
    match d.kind {
        Boolean => match value.to_ascii_lowercase().as_str() {
            "true" | "false" => {}
            _ => return Err(bad()),
        },
        Int => {
            value.trim().parse::<i32>().map_err(|_| bad())?;
        }
        Long => {
            value.trim().parse::<i64>().map_err(|_| bad())?;
        }
        Double => {
            value.trim().parse::<f64>().map_err(|_| bad())?;
        }
        ConfigType::String | List => {}
    }
    // Kafka's validators live with the log config in josef-log.
    LogConfig::validate_property(name, value).map_err(|e| match e {
        LogError::InvalidConfig(m) => m,
        other => other.to_string(),
    })?;
    Ok(())
}

/// The default of a topic config on this broker: the dynamic broker default (by topic config
/// name, see [`crate::dynamic_config`]), else the static one.
pub fn effective_default(
    name: &str,
    dynamic: &BTreeMap<String, String>,
    b: &BrokerConfig,
) -> String {
    dynamic
        .get(name)
        .cloned()
        .unwrap_or_else(|| default_value(name, b))
}

/// [`log_config_with`] without dynamic broker defaults.
pub fn log_config(overrides: &BTreeMap<String, String>, b: &BrokerConfig) -> LogConfig {
    log_config_with(overrides, &BTreeMap::new(), b)
}

/// Builds the log config of a topic from its overrides on top of the dynamic broker defaults on
/// top of the static ones (Kafka's order: topic override, dynamic per-broker, dynamic cluster
/// default, static; `dynamic` already merges the two dynamic layers), [`LogConfig::set_property`]
/// parsing each Kafka name. This is the one place topic config strings are parsed: the
/// partitions keep the result (creation, new partitions, every config change through
/// `TopicManager::set_configs`, from AlterConfigs or the metadata image, and every change of the
/// dynamic defaults), and the produce path reads it typed. Values were validated on the way in;
/// one that still fails (a hand-edited file) falls back to the next layer, with a warning.
pub fn log_config_with(
    overrides: &BTreeMap<String, String>,
    dynamic: &BTreeMap<String, String>,
    b: &BrokerConfig,
) -> LogConfig {
    let mut c = LogConfig::default();
    for name in josef_log::config::LOG_CONFIG_PROPERTY_NAMES {
        let layers = [overrides.get(*name), dynamic.get(*name)];
        let mut applied = false;
        for value in layers.into_iter().flatten() {
            match c.set_property(name, value) {
                Ok(_) => {
                    applied = true;
                    break;
                }
                Err(e) => {
                    tracing::warn!(config = name, %value, error = %e, "ignoring invalid topic config")
                }
            }
        }
        if !applied {
            let _ = c.set_property(name, &default_value(name, b));
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_topic_config_is_invalid() {
        assert!(validate("retention.mss", "1").is_err());
        assert!(validate("retention.ms", "abc").is_err());
        assert!(validate("cleanup.policy", "compact,delete").is_ok());
        assert!(validate("cleanup.policy", "shred").is_err());
    }

    #[test]
    fn storage_configs_follow_kafkas_validators() {
        assert!(validate("segment.ms", "0").is_err());
        assert!(validate("flush.messages", "0").is_err());
        assert!(validate("min.cleanable.dirty.ratio", "2").is_err());
        assert!(validate("message.timestamp.type", "LogAppendTime").is_ok());
        assert!(validate("compression.type", "brotli").is_err());
        assert!(validate("min.insync.replicas", "2").is_ok());
    }

    #[test]
    fn dynamic_defaults_sit_between_overrides_and_static_settings() {
        let b = BrokerConfig {
            log_retention_ms: 1000,
            log_segment_bytes: 1 << 20,
            ..BrokerConfig::default()
        };
        let mut dynamic = BTreeMap::new();
        dynamic.insert("retention.ms".to_string(), "2000".to_string());
        let mut o = BTreeMap::new();
        let c = log_config_with(&o, &dynamic, &b);
        assert_eq!((c.retention_ms, c.segment_bytes), (2000, 1 << 20));
        o.insert("retention.ms".to_string(), "3000".to_string());
        assert_eq!(log_config_with(&o, &dynamic, &b).retention_ms, 3000);
        // A bad dynamic value falls back to the static setting.
        dynamic.insert("segment.bytes".to_string(), "many".to_string());
        assert_eq!(log_config_with(&o, &dynamic, &b).segment_bytes, 1 << 20);
        assert_eq!(effective_default("retention.ms", &dynamic, &b), "2000");
        assert_eq!(by_synonym("log.retention.ms").unwrap().name, "retention.ms");
    }

    #[test]
    fn overrides_beat_broker_defaults() {
        let b = BrokerConfig::default();
        let mut o = BTreeMap::new();
        o.insert("cleanup.policy".to_string(), "compact".to_string());
        o.insert("segment.bytes".to_string(), "1048576".to_string());
        let c = log_config(&o, &b);
        assert_eq!(c.cleanup_policy, josef_log::CleanupPolicy::Compact);
        assert_eq!(c.segment_bytes, 1 << 20);
        assert_eq!(c.max_message_bytes, 1_048_588);
    }

    #[test]
    fn produce_settings_are_parsed_once_into_the_log_config() {
        let b = BrokerConfig {
            min_insync_replicas: 2,
            compression_type: "gzip".into(),
            ..BrokerConfig::default()
        };
        let c = log_config(&BTreeMap::new(), &b);
        assert_eq!(c.min_insync_replicas, 2);
        assert_eq!(
            c.validation_config().target_compression,
            Some(josef_records::Compression::Gzip)
        );
        let mut o = BTreeMap::new();
        o.insert("min.insync.replicas".to_string(), "3".to_string());
        o.insert("compression.type".to_string(), "producer".to_string());
        o.insert(
            "message.timestamp.difference.max.ms".to_string(),
            "60000".to_string(),
        );
        let c = log_config(&o, &b);
        assert_eq!(c.min_insync_replicas, 3);
        let v = c.validation_config();
        assert_eq!(v.target_compression, None);
        assert_eq!(
            (v.timestamp_before_max_ms, v.timestamp_after_max_ms),
            (60000, 60000)
        );
        // A bad value from a hand-edited file falls back to the broker's default.
        o.insert("min.insync.replicas".to_string(), "zero".to_string());
        assert_eq!(log_config(&o, &b).min_insync_replicas, 2);
    }
}
