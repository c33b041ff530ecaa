//! `log.storage`, Josef's own setting (Kafka has no such key): where partition logs keep their
//! bytes. `file` (the default) is Kafka's on-disk layout in `log.dirs`; `memory` keeps every log
//! in [`josef_log::storage::MemoryStorage`] with the same semantics (offsets, indexes, producer
//! state, transactions, retention, compaction) and nothing surviving the process. A builder can
//! also hand the broker any [`Storage`] of their own ([`LogStorage::Custom`]).

use std::sync::Arc;

use josef_log::storage::{FileStorage, MemoryStorage, Storage};

use crate::config::ConfigError;

/// The setting's name.
pub const LOG_STORAGE: &str = "log.storage";

/// Where partition logs are stored.
#[derive(Clone, Default)]
pub enum LogStorage {
    /// `log.storage=file`: the log dirs, as Kafka lays them out.
    #[default]
    File,
    /// `log.storage=memory`: in memory, lost at exit. The log dirs keep only the broker's small
    /// identity files (`meta.properties`, the producer-id block, the single-node metadata store).
    Memory,
    /// A storage supplied in code (not settable from a properties file).
    Custom(Arc<dyn Storage>),
}

impl std::fmt::Debug for LogStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl LogStorage {
    /// Parses the setting's value (`file` or `memory`, case-insensitive; absent = `file`).
    pub fn parse(value: Option<&str>) -> Result<LogStorage, ConfigError> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("file") => Ok(LogStorage::File),
            Some("memory") => Ok(LogStorage::Memory),
            Some(_) => Err(ConfigError::Invalid {
                key: LOG_STORAGE.to_string(),
                value: value.unwrap_or_default().to_string(),
                reason: "expected `file` or `memory`".to_string(),
            }),
        }
    }

    /// The value as written in a properties file.
    pub fn name(&self) -> &'static str {
        match self {
            LogStorage::File => "file",
            LogStorage::Memory => "memory",
            LogStorage::Custom(_) => "custom",
        }
    }

    /// Whether logs survive a restart (only the file system's do, as far as the broker knows).
    pub fn is_durable(&self) -> bool {
        matches!(self, LogStorage::File)
    }

    /// A storage instance for one broker run (a fresh, empty one for `memory`).
    pub fn open(&self) -> Arc<dyn Storage> {
        match self {
            LogStorage::File => Arc::new(FileStorage),
            LogStorage::Memory => Arc::new(MemoryStorage::new()),
            LogStorage::Custom(s) => s.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn log_storage_is_josefs_own_setting_defaulting_to_file() {
        use crate::config::BrokerConfig;
        let cfg = BrokerConfig::from_properties(BTreeMap::new()).unwrap();
        assert!(matches!(cfg.log_storage, LogStorage::File));
        let (cfg, warnings) = BrokerConfig::from_properties_with_warnings(BTreeMap::from([(
            LOG_STORAGE.to_string(),
            "Memory".to_string(),
        )]))
        .unwrap();
        assert!(matches!(cfg.log_storage, LogStorage::Memory));
        assert!(warnings.is_empty(), "{warnings:?}");
        let e = BrokerConfig::from_properties(BTreeMap::from([(
            LOG_STORAGE.to_string(),
            "tape".to_string(),
        )]))
        .unwrap_err();
        assert!(e.to_string().contains("log.storage"), "{e}");
    }

    #[test]
    fn topics_on_memory_storage_write_nothing_to_the_log_dir_and_vanish_with_the_storage() {
        use crate::config::BrokerConfig;
        use crate::topics::TopicManager;
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let on = |log_storage| BrokerConfig {
            log_dirs: vec![dir.path().to_path_buf()],
            log_storage,
            ..BrokerConfig::default()
        };
        let cfg = Arc::new(on(LogStorage::Custom(storage.clone())));
        let topics = TopicManager::load(cfg.clone(), None).unwrap();
        topics.create("orders", 2, BTreeMap::new()).unwrap();
        let p = topics.partition("orders", 1).unwrap();
        let batch = josef_log::testing::batch(0, 1, &[(Some(b"k"), Some(b"v"))]);
        p.append_internal(batch, 1).unwrap();
        topics.shutdown();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // A restart on the same storage finds the topic and its record; a fresh one finds nothing.
        let again = TopicManager::load(cfg, None).unwrap();
        let p = again.partition("orders", 1).unwrap();
        assert_eq!(p.log_end_offset(), 1);
        let empty = TopicManager::load(Arc::new(on(LogStorage::Memory)), None).unwrap();
        assert!(empty.get("orders").is_none());
    }
}
