//! Broker configuration: Kafka `server.properties` names and defaults, the reading of the file
//! ([`properties`], Java's syntax), and the command-line flags that override it.
//!
//! Every key the broker reads is listed here with Kafka's default (Kafka's `KafkaConfig` and the
//! `*Configs` classes its `AbstractKafkaConfig.CONFIG_DEF` merges; see [`kafka_names`]).
//! Any other key is sorted into one of three kinds ([`BrokerConfig::from_properties_with_warnings`]):
//! a Kafka broker setting Josef does not use ([`kafka_names`], [`NOT_USED`]) is accepted with one
//! [`ConfigWarning`] naming it; an older spelling found in guides ([`OLD_SPELLINGS`]) is applied
//! as the real key with a warning; a name Kafka does not have fails the start, with the closest
//! Kafka name as a suggestion: a typo must not silently leave a default in force.

pub use josef_config::{kafka_names, properties};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use josef_config::settings::{ConfigError, ConfigWarning, Props, UnknownSetting};

const TOKIO: &str = "requests and connections run on tokio's thread pool";
const NOT_IMPLEMENTED: &str = "not implemented";
const VALIDATED_ONLY: &str = "its value is checked but nothing reads it yet";

/// Kafka settings that a stock Kafka `server.properties` may hold but that have no effect in
/// Josef, each with the reason reported at start. Some are parsed (their values must still be
/// valid) and kept in [`BrokerConfig`] or [`crate::cluster_config::ClusterConfig`] for the code
/// that will use them.
pub const NOT_USED: &[(&str, &str)] = &[
    ("num.network.threads", TOKIO),
    ("num.io.threads", TOKIO),
    ("background.threads", TOKIO),
    ("queued.max.requests", TOKIO),
    (
        "socket.send.buffer.bytes",
        "the operating system's socket buffer sizes are kept",
    ),
    (
        "socket.receive.buffer.bytes",
        "the operating system's socket buffer sizes are kept",
    ),
    ("log.cleaner.dedupe.buffer.size", NOT_IMPLEMENTED),
    ("log.cleaner.io.buffer.size", NOT_IMPLEMENTED),
    ("log.cleaner.io.buffer.load.factor", NOT_IMPLEMENTED),
    ("log.cleaner.io.max.bytes.per.second", NOT_IMPLEMENTED),
    ("log.flush.scheduler.interval.ms", NOT_IMPLEMENTED),
    (
        "replica.high.watermark.checkpoint.interval.ms",
        NOT_IMPLEMENTED,
    ),
    (
        "share.coordinator.state.topic.replication.factor",
        "share groups are not implemented",
    ),
    (
        "share.coordinator.state.topic.min.isr",
        "share groups are not implemented",
    ),
    ("group.coordinator.rebalance.protocols", NOT_IMPLEMENTED),
    (
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        NOT_IMPLEMENTED,
    ),
    (
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        NOT_IMPLEMENTED,
    ),
    ("request.timeout.ms", NOT_IMPLEMENTED),
    ("zookeeper.connect", "Josef has no ZooKeeper mode"),
    (
        "zookeeper.connection.timeout.ms",
        "Josef has no ZooKeeper mode",
    ),
    // Parsed and kept, but no code reads them yet.
    ("metadata.max.idle.interval.ms", VALIDATED_ONLY),
    ("controller.quorum.fetch.timeout.ms", VALIDATED_ONLY),
    ("controller.quorum.append.linger.ms", VALIDATED_ONLY),
    ("controller.quorum.retry.backoff.ms", VALIDATED_ONLY),
    ("replica.socket.timeout.ms", VALIDATED_ONLY),
];

/// Spellings that Kafka does not have but guides use, and Kafka's name for each. The value is
/// applied under Kafka's name (unless that is given too), with a warning.
pub const OLD_SPELLINGS: &[(&str, &str)] = &[
    (
        "transactional.id.timeout.ms",
        "transactional.id.expiration.ms",
    ),
    ("max.transaction.timeout.ms", "transaction.max.timeout.ms"),
];

/// Josef's own settings: not Kafka names (Kafka has no such setting), applied like the Kafka
/// ones and suggested for a near miss.
pub const JOSEF_SETTINGS: &[&str] = &["prometheus.listener"];

/// `HOST:PORT` (IPv6 hosts in brackets), or `None` when `key` is not set.
fn host_port(p: &mut Props, key: &str) -> Result<Option<(String, u16)>, ConfigError> {
    let Some(v) = p.take(key) else {
        return Ok(None);
    };
    let (host, port) = v
        .rsplit_once(':')
        .ok_or_else(|| Props::invalid(key, &v, "expected HOST:PORT"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| Props::invalid(key, &v, "port is not 0..65535"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(Props::invalid(key, &v, "expected HOST:PORT"));
    }
    Ok(Some((host.to_string(), port)))
}

/// The reason reported for a Kafka setting not in [`NOT_USED`].
const OTHER_KAFKA_SETTING: &str = "a Kafka setting Josef does not implement";
/// The reason reported for a listener-prefixed setting.
const LISTENER_SETTING: &str = "listener-scoped settings are not applied yet";

/// One listener: `NAME://host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    /// Listener name (`PLAINTEXT` unless `listener.security.protocol.map` names others).
    pub name: String,
    /// Host to bind (empty = all interfaces).
    pub host: String,
    /// Port (0 = pick a free one).
    pub port: u16,
}

impl Listener {
    fn parse_list(key: &str, value: &str) -> Result<Vec<Listener>, ConfigError> {
        let invalid = |reason: &str| ConfigError::Invalid {
            key: key.to_string(),
            value: value.to_string(),
            reason: reason.to_string(),
        };
        let mut out = Vec::new();
        for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, rest) = item
                .split_once("://")
                .ok_or_else(|| invalid("expected NAME://host:port"))?;
            let (host, port) = rest
                .rsplit_once(':')
                .ok_or_else(|| invalid("expected NAME://host:port"))?;
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let port: u16 = port.parse().map_err(|_| invalid("port is not 0..65535"))?;
            if name.is_empty() {
                return Err(invalid("empty listener name"));
            }
            out.push(Listener {
                name: name.to_ascii_uppercase(),
                host: host.to_string(),
                port,
            });
        }
        if out.is_empty() {
            return Err(invalid("no listener"));
        }
        Ok(out)
    }
}

/// The broker's settings, typed. Field names follow Kafka's keys.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// `node.id` (default 1).
    pub node_id: i32,
    /// `listeners` (default `PLAINTEXT://127.0.0.1:9092`).
    pub listeners: Vec<Listener>,
    /// `advertised.listeners` (default: the listeners).
    pub advertised_listeners: Vec<Listener>,
    /// `log.dirs` / `log.dir` (default `./josef-data`).
    pub log_dirs: Vec<PathBuf>,
    /// `broker.rack` (none; an empty value is none): reported in Metadata and DescribeCluster,
    /// registered with the controller on a cluster node, and the rack of every partition this
    /// node holds for the consumer groups' rack-aware assignment.
    pub broker_rack: Option<String>,
    /// `log.storage`, Josef's own setting: `file` (default) or `memory` (see
    /// [`crate::log_storage`]).
    pub log_storage: crate::log_storage::LogStorage,
    /// `num.partitions` (1).
    pub num_partitions: i32,
    /// `default.replication.factor` (1).
    pub default_replication_factor: i16,
    /// `min.insync.replicas` (1).
    pub min_insync_replicas: i32,
    /// `auto.create.topics.enable` (true).
    pub auto_create_topics_enable: bool,
    /// `delete.topic.enable` (true).
    pub delete_topic_enable: bool,
    /// `socket.request.max.bytes` (104857600).
    pub socket_request_max_bytes: i32,
    /// `connections.max.idle.ms` (600000).
    pub connections_max_idle_ms: i64,
    /// `message.max.bytes` (1048588).
    pub message_max_bytes: i32,
    /// `fetch.max.bytes` (57671680).
    pub fetch_max_bytes: i32,
    /// `max.incremental.fetch.session.cache.slots` (1000).
    pub max_incremental_fetch_session_cache_slots: i32,
    /// `log.segment.bytes` (1073741824).
    pub log_segment_bytes: i32,
    /// `log.roll.ms`, else `log.roll.hours` (168 h).
    pub log_roll_ms: i64,
    /// `log.retention.ms`, else `.minutes`, else `.hours` (168 h); −1 = forever.
    pub log_retention_ms: i64,
    /// `log.retention.bytes` (−1).
    pub log_retention_bytes: i64,
    /// `log.retention.check.interval.ms` (300000).
    pub log_retention_check_interval_ms: i64,
    /// `log.cleanup.policy` (delete).
    pub log_cleanup_policy: String,
    /// `log.cleaner.enable` (true).
    pub log_cleaner_enable: bool,
    /// `log.cleaner.threads` (1): cleaner threads, each cleaning the filthiest log no other
    /// thread holds ([`crate::log_cleaner`]); 0 cleans nothing.
    pub log_cleaner_threads: usize,
    /// `log.cleaner.backoff.ms` (15000): how long a cleaner thread sleeps when no log needs
    /// cleaning.
    pub log_cleaner_backoff_ms: i64,
    /// `log.cleaner.min.cleanable.ratio` (0.5).
    pub log_cleaner_min_cleanable_ratio: f64,
    /// `log.cleaner.delete.retention.ms` (86400000).
    pub log_cleaner_delete_retention_ms: i64,
    /// `log.cleaner.min.compaction.lag.ms` (0).
    pub log_cleaner_min_compaction_lag_ms: i64,
    /// `log.cleaner.max.compaction.lag.ms` (Long.MAX).
    pub log_cleaner_max_compaction_lag_ms: i64,
    /// `num.recovery.threads.per.data.dir` (1): threads per log dir that open (and recover) the
    /// logs at startup and close them at shutdown.
    pub num_recovery_threads_per_data_dir: usize,
    /// `log.flush.offset.checkpoint.interval.ms` (60000): how often each log dir's
    /// `recovery-point-offset-checkpoint` is written.
    pub log_flush_offset_checkpoint_interval_ms: i64,
    /// `log.flush.start.offset.checkpoint.interval.ms` (60000): how often each log dir's
    /// `log-start-offset-checkpoint` is written.
    pub log_flush_start_offset_checkpoint_interval_ms: i64,
    /// `compression.type` (producer).
    pub compression_type: String,
    /// `log.message.timestamp.type` (CreateTime).
    pub log_message_timestamp_type: String,
    /// `log.index.size.max.bytes` (10485760).
    pub log_index_size_max_bytes: i32,
    /// `log.index.interval.bytes` (4096).
    pub log_index_interval_bytes: i32,
    /// `log.segment.delete.delay.ms` (60000).
    pub log_segment_delete_delay_ms: i64,
    /// `log.flush.interval.messages` (Long.MAX).
    pub log_flush_interval_messages: i64,
    /// `log.flush.interval.ms` (Long.MAX: no timed fsync).
    pub log_flush_interval_ms: i64,
    /// `offsets.topic.num.partitions` (50).
    pub offsets_topic_num_partitions: i32,
    /// `offsets.topic.replication.factor` (Kafka's 3 on a cluster node; Josef's single-node
    /// default is 1, since one node cannot hold 3).
    pub offsets_topic_replication_factor: i16,
    /// `offsets.topic.segment.bytes` (104857600).
    pub offsets_topic_segment_bytes: i32,
    /// `offsets.retention.minutes` (10080).
    pub offsets_retention_minutes: i64,
    /// `offsets.retention.check.interval.ms` (600000): how often expired committed offsets are removed.
    pub offsets_retention_check_interval_ms: i64,
    /// `offset.metadata.max.bytes` (4096).
    pub offset_metadata_max_bytes: i32,
    /// `offsets.commit.timeout.ms` (5000).
    pub offsets_commit_timeout_ms: i64,
    /// `transaction.state.log.num.partitions` (50).
    pub transaction_state_log_num_partitions: i32,
    /// `transaction.state.log.replication.factor` (Kafka's 3 on a cluster node; 1 on one node).
    pub transaction_state_log_replication_factor: i16,
    /// `transaction.state.log.min.isr` (Josef: 1).
    pub transaction_state_log_min_isr: i32,
    /// `transaction.state.log.segment.bytes` (104857600).
    pub transaction_state_log_segment_bytes: i32,
    /// `transaction.max.timeout.ms` (900000).
    pub transaction_max_timeout_ms: i64,
    /// `transactional.id.expiration.ms` (604800000).
    pub transactional_id_expiration_ms: i64,
    /// `producer.id.expiration.ms` (86400000).
    pub producer_id_expiration_ms: i64,
    /// `producer.id.expiration.check.interval.ms` (600000): how often idle producers are
    /// forgotten on every hosted partition.
    pub producer_id_expiration_check_interval_ms: i64,
    /// `transaction.partition.verification.enable` (true): KIP-890 part 1, a partition leader
    /// asks the coordinator before a producer's first transactional append to a partition.
    pub transaction_partition_verification_enable: bool,
    /// `transaction.version` (2; Josef's, standing in for Kafka's `kafka-storage format
    /// --feature`): the level of the `transaction.version` feature (KIP-890) a single node
    /// finalizes, and the level a cluster's controller bootstraps a new cluster at (Kafka 4.0
    /// starts at 2); a cluster then follows its metadata log, where UpdateFeatures changes it.
    /// 0..=2; below 2 the transactions v2 API versions are not advertised.
    pub transaction_version: i16,
    /// `group.initial.rebalance.delay.ms` (3000, Kafka's default; Kafka's sample
    /// server.properties sets 0 for development).
    pub group_initial_rebalance_delay_ms: i64,
    /// The consumer group protocol's settings (`group.consumer.*`): session timeout (45000,
    /// within min 45000 / max 60000), heartbeat interval (5000, within 5000 / 15000),
    /// `group.consumer.max.size` (Int.MAX), `group.consumer.assignors` (`uniform,range`).
    pub group_consumer: GroupConsumerConfig,
    /// `group.min.session.timeout.ms` (6000).
    pub group_min_session_timeout_ms: i64,
    /// `group.max.session.timeout.ms` (1800000).
    pub group_max_session_timeout_ms: i64,
    /// `group.max.size` (Int.MAX).
    pub group_max_size: i32,
    /// Client quota sample windows (`quota.window.*`, `controller.quota.window.*`).
    pub quota: crate::quotas::QuotaSettings,
    /// `max.connections`, `max.connections.per.ip` (and overrides), `max.connection.creation.rate`,
    /// and their per-listener forms.
    pub connection_quotas: crate::connection_quotas::ConnectionQuotaConfig,
    /// `listener.security.protocol.map` entries (name → protocol), Kafka's default map when
    /// not set.
    pub listener_security_protocol_map: BTreeMap<String, String>,
    /// Each client listener's protocol with its TLS and SASL settings.
    pub security: crate::security_config::SecurityConfig,
    /// Cluster settings (`process.roles` and the rest); `None` for the single-node broker.
    pub cluster: Option<crate::cluster_config::ClusterConfig>,
    /// `prometheus.listener` (Josef's own, [`JOSEF_SETTINGS`]): `HOST:PORT` of the Prometheus
    /// `/metrics` endpoint (port 0: any free port); unset (the default): no endpoint, no metrics.
    pub prometheus_listener: Option<(String, u16)>,
    /// `authorizer.class.name` with `super.users` and `allow.everyone.if.no.acl.found`; `None`
    /// (the default, an empty class name): no authorizer, every operation is allowed.
    pub authorizer: Option<josef_authorizer::AuthorizerConfig>,
}

/// `group.consumer.*` (see [`BrokerConfig::group_consumer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConsumerConfig {
    /// `group.consumer.session.timeout.ms`.
    pub session_timeout_ms: i32,
    /// `group.consumer.min.session.timeout.ms`.
    pub min_session_timeout_ms: i32,
    /// `group.consumer.max.session.timeout.ms`.
    pub max_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms`.
    pub heartbeat_interval_ms: i32,
    /// `group.consumer.min.heartbeat.interval.ms`.
    pub min_heartbeat_interval_ms: i32,
    /// `group.consumer.max.heartbeat.interval.ms`.
    pub max_heartbeat_interval_ms: i32,
    /// `group.consumer.max.size`.
    pub max_size: i32,
    /// `group.consumer.assignors`.
    pub assignors: Vec<String>,
    /// `group.consumer.migration.policy` (`bidirectional`, Kafka 4's default).
    pub migration_policy: josef_group::MigrationPolicy,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig::from_properties_with_warnings(BTreeMap::new())
            .expect("defaults are valid")
            .0
    }
}

/// Reads a properties file with Java's rules ([`properties::parse`]).
pub fn read_properties_file(path: &Path) -> Result<BTreeMap<String, String>, ConfigError> {
    let bytes = std::fs::read(path).map_err(|source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    properties::parse(&properties::decode_file_bytes(&bytes)).map_err(|e| ConfigError::Syntax {
        path: path.to_path_buf(),
        line: e.line,
    })
}

/// Applies command-line overrides (`KEY=VALUE`, as `kafka-server-start.sh --override` takes
/// them) over `props`, later ones winning; a malformed one is an error naming it.
///
/// ```
/// let mut props = std::collections::BTreeMap::new();
/// josef_server::config::apply_overrides(&mut props, &["num.partitions = 3".to_string()]).unwrap();
/// assert_eq!(props["num.partitions"], "3");
/// assert!(josef_server::config::apply_overrides(&mut props, &["oops".to_string()]).is_err());
/// ```
pub fn apply_overrides(
    props: &mut BTreeMap<String, String>,
    overrides: &[String],
) -> Result<(), ConfigError> {
    for o in overrides {
        let (k, v) = o
            .split_once('=')
            .ok_or_else(|| Props::invalid("--override", o, "expected KEY=VALUE"))?;
        props.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(())
}

/// Parses properties text ([`properties::parse`]); on error returns the 1-based line number.
pub fn parse_properties(text: &str) -> Result<BTreeMap<String, String>, usize> {
    properties::parse(text).map_err(|e| e.line)
}

const MS_PER_HOUR: i64 = 3_600_000;

impl BrokerConfig {
    /// Builds the configuration from `key → value` settings (file first, flags layered on top by
    /// the caller), logging each [`ConfigWarning`] as one `warn` line. Every key must be a Kafka
    /// broker setting.
    pub fn from_properties(map: BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let (cfg, warnings) = Self::from_properties_with_warnings(map)?;
        for w in &warnings {
            tracing::warn!(setting = w.key(), "{w}");
        }
        Ok(cfg)
    }

    /// [`BrokerConfig::from_properties`] without the logging: the configuration and what is
    /// worth a warning, sorted by setting.
    pub fn from_properties_with_warnings(
        mut map: BTreeMap<String, String>,
    ) -> Result<(Self, Vec<ConfigWarning>), ConfigError> {
        let mut warnings = Vec::new();
        for (old, real) in OLD_SPELLINGS {
            if let Some(v) = map.remove(*old) {
                if map.contains_key(*real) {
                    warnings.push(ConfigWarning::Shadowed {
                        key: old.to_string(),
                        by: real,
                    });
                } else {
                    map.insert(real.to_string(), v);
                    warnings.push(ConfigWarning::OldSpelling {
                        key: old.to_string(),
                        real,
                    });
                }
            }
        }
        let given: BTreeSet<String> = map.keys().cloned().collect();
        let mut p = Props::new(map);
        // KRaft's `node.id`; `broker.id` (ZooKeeper mode's name) is its synonym, as in Kafka,
        // which requires the two to agree when both are set.
        let broker_id: Option<i32> = p.opt_num("broker.id")?;
        let node_id: i32 = match (p.opt_num::<i32>("node.id")?, broker_id) {
            (Some(n), Some(b)) if n != b => {
                return Err(Props::invalid(
                    "broker.id",
                    &b.to_string(),
                    format!("must equal node.id ({n}) when both are set"),
                ))
            }
            (Some(n), _) | (None, Some(n)) => n,
            (None, None) => 1,
        };
        if node_id < 0 {
            return Err(Props::invalid(
                if broker_id == Some(node_id) {
                    "broker.id"
                } else {
                    "node.id"
                },
                &node_id.to_string(),
                "must be at least 0 (Josef does not generate broker ids)",
            ));
        }
        let protocol_map_raw = p.take("listener.security.protocol.map");
        let listeners_raw = p
            .take("listeners")
            .unwrap_or_else(|| "PLAINTEXT://127.0.0.1:9092".to_string());
        let mut listeners = Listener::parse_list("listeners", &listeners_raw)?;
        let controller_names: Vec<String> = p
            .peek("controller.listener.names")
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_ascii_uppercase())
                    .collect()
            })
            .unwrap_or_default();
        // The CONTROLLER listeners are served by the cluster code (cluster_config), never as
        // client listeners.
        let cluster = crate::cluster_config::parse(&mut p, node_id, &listeners, &mut warnings)?;
        listeners.retain(|l| !controller_names.contains(&l.name));
        let protocol_map = crate::security_config::effective_protocol_map(
            protocol_map_raw.as_deref(),
            &controller_names,
        )?;
        let mut security = crate::security_config::parse(
            &mut p,
            &listeners,
            &protocol_map,
            cluster
                .as_ref()
                .map_or(&[][..], |c| &c.controller_listener_names),
        )?;
        if let Some(c) = cluster.as_ref().filter(|c| c.is_broker()) {
            security.inter_broker_client = Some(crate::security_config::inter_broker_client(
                &mut p,
                &security,
                &c.inter_broker_listener_name,
            )?);
        }
        let controller_only = cluster.as_ref().is_some_and(|c| !c.is_broker());
        // The internal topics' replication factor: Kafka's default (3) on a cluster node; one
        // node can only hold 1. With fewer registered brokers the controller refuses to create
        // them (INVALID_REPLICATION_FACTOR) and FindCoordinator answers COORDINATOR_NOT_AVAILABLE.
        let internal_rf: i16 = if cluster.is_some() { 3 } else { 1 };
        if listeners.is_empty() && !controller_only {
            return Err(Props::invalid(
                "listeners",
                &listeners_raw,
                "no client listener",
            ));
        }
        let advertised_listeners = match p.take("advertised.listeners") {
            None => listeners.clone(),
            Some(v) => {
                let adv = Listener::parse_list("advertised.listeners", &v)?;
                let adv: Vec<Listener> = adv
                    .into_iter()
                    .filter(|a| !controller_names.contains(&a.name))
                    .collect();
                for a in &adv {
                    if !listeners.iter().any(|l| l.name == a.name) {
                        return Err(Props::invalid(
                            "advertised.listeners",
                            &v,
                            format!("listener {} is not in listeners", a.name),
                        ));
                    }
                }
                adv
            }
        };
        let log_dirs_raw = p.take("log.dirs");
        let log_dir_raw = p.take("log.dir");
        if log_dirs_raw.is_some() && log_dir_raw.is_some() {
            warnings.push(ConfigWarning::Shadowed {
                key: "log.dir".into(),
                by: "log.dirs",
            });
        }
        let log_dirs: Vec<PathBuf> = log_dirs_raw
            .or(log_dir_raw)
            .unwrap_or_else(|| "./josef-data".to_string())
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect();
        if log_dirs.is_empty() {
            return Err(Props::invalid("log.dirs", "", "no directory"));
        }

        let roll_hours: i64 = p.num("log.roll.hours", 168, 1)?;
        let roll_ms: Option<i64> = p.opt_num("log.roll.ms")?;
        let ret_hours: i64 = p.num("log.retention.hours", 168, -1)?;
        let ret_minutes: Option<i64> = p.opt_num("log.retention.minutes")?;
        let ret_ms: Option<i64> = p.opt_num("log.retention.ms")?;
        let retention = ret_ms
            .or(ret_minutes.map(|m| if m < 0 { -1 } else { m * 60_000 }))
            .unwrap_or(if ret_hours < 0 {
                -1
            } else {
                ret_hours * MS_PER_HOUR
            });

        let connection_quotas = crate::connection_quotas::ConnectionQuotaConfig::from_props(
            &mut p,
            &listeners.iter().map(|l| l.name.clone()).collect::<Vec<_>>(),
            cluster
                .as_ref()
                .map(|c| c.inter_broker_listener_name.clone()),
        )?;
        let cfg = BrokerConfig {
            node_id,
            listeners,
            advertised_listeners,
            log_dirs,
            broker_rack: p.take("broker.rack").filter(|r| !r.is_empty()),
            log_storage: crate::log_storage::LogStorage::parse(
                p.take(crate::log_storage::LOG_STORAGE).as_deref(),
            )?,
            num_partitions: p.num("num.partitions", 1, 1)?,
            default_replication_factor: p.num("default.replication.factor", 1, 1)?,
            min_insync_replicas: p.num("min.insync.replicas", 1, 1)?,
            auto_create_topics_enable: p.boolean("auto.create.topics.enable", true)?,
            delete_topic_enable: p.boolean("delete.topic.enable", true)?,
            socket_request_max_bytes: p.num("socket.request.max.bytes", 104_857_600, 1)?,
            connections_max_idle_ms: p.num("connections.max.idle.ms", 600_000, -1)?,
            message_max_bytes: p.num("message.max.bytes", 1_048_588, 0)?,
            fetch_max_bytes: p.num("fetch.max.bytes", 57_671_680, 0)?,
            max_incremental_fetch_session_cache_slots: p.num(
                "max.incremental.fetch.session.cache.slots",
                1000,
                0,
            )?,
            log_segment_bytes: p.num("log.segment.bytes", 1_073_741_824, 14)?,
            log_roll_ms: roll_ms.unwrap_or(roll_hours * MS_PER_HOUR),
            log_retention_ms: retention,
            log_retention_bytes: p.num("log.retention.bytes", -1, -1)?,
            log_retention_check_interval_ms: p.num(
                "log.retention.check.interval.ms",
                300_000,
                1,
            )?,
            log_cleanup_policy: p.choice(
                "log.cleanup.policy",
                "delete",
                &["delete", "compact", "compact,delete", "delete,compact"],
            )?,
            log_cleaner_enable: p.boolean("log.cleaner.enable", true)?,
            log_cleaner_threads: p.num("log.cleaner.threads", 1, 0)?,
            log_cleaner_backoff_ms: p.num("log.cleaner.backoff.ms", 15_000, 0)?,
            num_recovery_threads_per_data_dir: p.num("num.recovery.threads.per.data.dir", 1, 1)?,
            log_flush_offset_checkpoint_interval_ms: p.num(
                "log.flush.offset.checkpoint.interval.ms",
                60_000,
                0,
            )?,
            log_flush_start_offset_checkpoint_interval_ms: p.num(
                "log.flush.start.offset.checkpoint.interval.ms",
                60_000,
                0,
            )?,
            log_cleaner_min_cleanable_ratio: p.num("log.cleaner.min.cleanable.ratio", 0.5, 0.0)?,
            log_cleaner_delete_retention_ms: p.num(
                "log.cleaner.delete.retention.ms",
                86_400_000,
                0,
            )?,
            log_cleaner_min_compaction_lag_ms: p.num("log.cleaner.min.compaction.lag.ms", 0, 0)?,
            log_cleaner_max_compaction_lag_ms: p.num(
                "log.cleaner.max.compaction.lag.ms",
                i64::MAX,
                1,
            )?,
            compression_type: p.choice(
                "compression.type",
                "producer",
                &["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"],
            )?,
            log_message_timestamp_type: p.choice(
                "log.message.timestamp.type",
                "CreateTime",
                &["CreateTime", "LogAppendTime"],
            )?,
            log_index_size_max_bytes: p.num("log.index.size.max.bytes", 10_485_760, 4)?,
            log_index_interval_bytes: p.num("log.index.interval.bytes", 4096, 0)?,
            log_segment_delete_delay_ms: p.num("log.segment.delete.delay.ms", 60_000, 0)?,
            log_flush_interval_messages: p.num("log.flush.interval.messages", i64::MAX, 1)?,
            log_flush_interval_ms: p.num("log.flush.interval.ms", i64::MAX, 0)?,
            offsets_topic_num_partitions: p.num("offsets.topic.num.partitions", 50, 1)?,
            offsets_topic_replication_factor: p.num(
                "offsets.topic.replication.factor",
                internal_rf,
                1,
            )?,
            offsets_topic_segment_bytes: p.num("offsets.topic.segment.bytes", 104_857_600, 1)?,
            offsets_retention_minutes: p.num("offsets.retention.minutes", 10_080, 1)?,
            offsets_retention_check_interval_ms: p.num(
                "offsets.retention.check.interval.ms",
                600_000,
                1,
            )?,
            offset_metadata_max_bytes: p.num("offset.metadata.max.bytes", 4096, 0)?,
            offsets_commit_timeout_ms: p.num("offsets.commit.timeout.ms", 5000, 1)?,
            transaction_state_log_num_partitions: p.num(
                "transaction.state.log.num.partitions",
                50,
                1,
            )?,
            transaction_state_log_replication_factor: p.num(
                "transaction.state.log.replication.factor",
                internal_rf,
                1,
            )?,
            transaction_state_log_min_isr: p.num("transaction.state.log.min.isr", 1, 1)?,
            transaction_state_log_segment_bytes: p.num(
                "transaction.state.log.segment.bytes",
                104_857_600,
                1,
            )?,
            transaction_max_timeout_ms: p.num("transaction.max.timeout.ms", 900_000, 1)?,
            transactional_id_expiration_ms: p.num(
                "transactional.id.expiration.ms",
                604_800_000,
                1,
            )?,
            producer_id_expiration_ms: p.num("producer.id.expiration.ms", 86_400_000, 1)?,
            producer_id_expiration_check_interval_ms: p.num(
                "producer.id.expiration.check.interval.ms",
                600_000,
                1,
            )?,
            transaction_partition_verification_enable: p
                .boolean("transaction.partition.verification.enable", true)?,
            transaction_version: match p.num("transaction.version", 2i16, 0)? {
                v @ 0..=2 => v,
                v => {
                    return Err(ConfigError::Invalid {
                        key: "transaction.version".into(),
                        value: v.to_string(),
                        reason: "levels 0 to 2 are supported".into(),
                    })
                }
            },
            group_initial_rebalance_delay_ms: p.num("group.initial.rebalance.delay.ms", 3000, 0)?,
            group_consumer: GroupConsumerConfig {
                session_timeout_ms: p.num("group.consumer.session.timeout.ms", 45_000, 1)?,
                min_session_timeout_ms: p.num(
                    "group.consumer.min.session.timeout.ms",
                    45_000,
                    1,
                )?,
                max_session_timeout_ms: p.num(
                    "group.consumer.max.session.timeout.ms",
                    60_000,
                    1,
                )?,
                heartbeat_interval_ms: p.num("group.consumer.heartbeat.interval.ms", 5_000, 1)?,
                min_heartbeat_interval_ms: p.num(
                    "group.consumer.min.heartbeat.interval.ms",
                    5_000,
                    1,
                )?,
                max_heartbeat_interval_ms: p.num(
                    "group.consumer.max.heartbeat.interval.ms",
                    15_000,
                    1,
                )?,
                max_size: p.num("group.consumer.max.size", i32::MAX, 1)?,
                assignors: match p.take("group.consumer.assignors") {
                    None => vec!["uniform".to_string(), "range".to_string()],
                    Some(v) => v
                        .split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect(),
                },
                migration_policy: match p.take("group.consumer.migration.policy") {
                    None => josef_group::MigrationPolicy::default(),
                    Some(v) => josef_group::MigrationPolicy::parse(&v).ok_or_else(|| {
                        ConfigError::Invalid {
                            key: "group.consumer.migration.policy".into(),
                            value: v.clone(),
                            reason: "one of disabled, upgrade, downgrade, bidirectional".into(),
                        }
                    })?,
                },
            },
            group_min_session_timeout_ms: p.num("group.min.session.timeout.ms", 6000, 0)?,
            group_max_session_timeout_ms: p.num("group.max.session.timeout.ms", 1_800_000, 0)?,
            group_max_size: p.num("group.max.size", i32::MAX, 1)?,
            listener_security_protocol_map: protocol_map
                .iter()
                .map(|(k, v)| (k.clone(), v.name().to_string()))
                .collect(),
            security,
            quota: crate::quotas::QuotaSettings::from_props(&mut p)?,
            connection_quotas,
            cluster,
            prometheus_listener: host_port(&mut p, "prometheus.listener")?,
            authorizer: josef_authorizer::settings::authorizer_from_props(&mut p, &mut warnings)?,
        };
        let not_used: BTreeMap<&str, &'static str> = NOT_USED.iter().copied().collect();
        let mut unknown = Vec::new();
        for key in &given {
            if let Some(reason) = not_used.get(key.as_str()) {
                p.take(key);
                warnings.push(ConfigWarning::NotUsed {
                    key: key.clone(),
                    reason,
                });
            } else if cfg.cluster.is_none()
                && crate::cluster_config::CLUSTER_SETTINGS.contains(&key.as_str())
            {
                warnings.push(ConfigWarning::NotUsed {
                    key: key.clone(),
                    reason: crate::cluster_config::SINGLE_NODE,
                });
            }
        }
        for key in p.into_remaining_keys() {
            if kafka_names::listener_prefixed(&key).is_some() {
                warnings.push(ConfigWarning::NotUsed {
                    key,
                    reason: LISTENER_SETTING,
                });
            } else if kafka_names::is_kafka_broker_setting(&key) {
                warnings.push(ConfigWarning::NotUsed {
                    key,
                    reason: OTHER_KAFKA_SETTING,
                });
            } else {
                let suggestion = kafka_names::closest(&key, JOSEF_SETTINGS.iter().copied())
                    .map(str::to_string)
                    .or_else(|| kafka_names::suggest(&key));
                unknown.push(UnknownSetting { key, suggestion });
            }
        }
        if !unknown.is_empty() {
            return Err(ConfigError::Unknown(unknown));
        }
        warnings.sort_by(|a, b| a.key().cmp(b.key()));
        if cfg.default_replication_factor > 1 && cfg.cluster.is_none() {
            return Err(Props::invalid(
                "default.replication.factor",
                &cfg.default_replication_factor.to_string(),
                "a single node can only hold replication factor 1",
            ));
        }
        Ok((cfg, warnings))
    }

    /// The advertised address for a listener name: host (an empty or wildcard bind host is
    /// advertised as 127.0.0.1) and port (`bound_port` replaces a configured 0).
    pub fn advertised_for(&self, listener: &str, bound_port: u16) -> (String, u16) {
        let l = self
            .advertised_listeners
            .iter()
            .find(|l| l.name == listener)
            .or_else(|| self.listeners.iter().find(|l| l.name == listener))
            .or_else(|| self.advertised_listeners.first());
        match l {
            Some(l) => {
                let host = if l.host.is_empty() || l.host == "0.0.0.0" || l.host == "::" {
                    "127.0.0.1".to_string()
                } else {
                    l.host.clone()
                };
                let port = if l.port == 0 { bound_port } else { l.port };
                (host, port)
            }
            None => ("127.0.0.1".to_string(), bound_port),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn group_consumer_migration_policy_defaults_to_bidirectional_and_is_checked() {
        use josef_group::MigrationPolicy;
        let c = BrokerConfig::default();
        assert_eq!(
            c.group_consumer.migration_policy,
            MigrationPolicy::Bidirectional
        );
        let p = props(&[("group.consumer.migration.policy", "UPGRADE")]);
        let (c, _) = BrokerConfig::from_properties_with_warnings(p).unwrap();
        assert_eq!(c.group_consumer.migration_policy, MigrationPolicy::Upgrade);
        let p = props(&[("group.consumer.migration.policy", "sideways")]);
        assert!(matches!(
            BrokerConfig::from_properties_with_warnings(p),
            Err(ConfigError::Invalid { .. })
        ));
    }

    #[test]
    fn log_dir_threads_and_checkpoint_intervals_are_read() {
        let c = BrokerConfig::default();
        assert_eq!(c.num_recovery_threads_per_data_dir, 1);
        assert_eq!(c.log_flush_offset_checkpoint_interval_ms, 60_000);
        assert_eq!(c.log_flush_start_offset_checkpoint_interval_ms, 60_000);
        let p = props(&[
            ("num.recovery.threads.per.data.dir", "4"),
            ("log.flush.offset.checkpoint.interval.ms", "5000"),
            ("log.flush.start.offset.checkpoint.interval.ms", "7000"),
        ]);
        let (c, warnings) = BrokerConfig::from_properties_with_warnings(p).unwrap();
        assert_eq!(c.num_recovery_threads_per_data_dir, 4);
        assert_eq!(c.log_flush_offset_checkpoint_interval_ms, 5000);
        assert_eq!(c.log_flush_start_offset_checkpoint_interval_ms, 7000);
        // Read, so no longer reported as a setting Josef ignores.
        assert!(warnings.is_empty(), "{warnings:?}");
        for bad in ["0", "-1", "two"] {
            let p = props(&[("num.recovery.threads.per.data.dir", bad)]);
            assert!(
                matches!(
                    BrokerConfig::from_properties_with_warnings(p),
                    Err(ConfigError::Invalid { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn defaults_follow_kafka_with_single_node_internal_topics() {
        let c = BrokerConfig::default();
        assert_eq!(c.node_id, 1);
        assert_eq!(c.listeners[0].port, 9092);
        assert_eq!(c.listeners[0].host, "127.0.0.1");
        assert_eq!(c.log_dirs, vec![PathBuf::from("./josef-data")]);
        assert_eq!(c.socket_request_max_bytes, 104_857_600);
        assert_eq!(c.message_max_bytes, 1_048_588);
        assert_eq!(c.log_retention_ms, 168 * MS_PER_HOUR);
        assert_eq!(c.offsets_topic_replication_factor, 1);
        assert_eq!(c.transaction_state_log_replication_factor, 1);
    }

    #[test]
    fn internal_topics_default_to_replication_factor_3_on_a_cluster_node_only() {
        let cluster = [
            ("process.roles", "broker,controller"),
            ("node.id", "1"),
            ("controller.quorum.voters", "1@127.0.0.1:9093"),
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            ),
            ("controller.listener.names", "CONTROLLER"),
            (
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            ),
        ];
        let c = BrokerConfig::from_properties(props(&cluster)).unwrap();
        assert_eq!(c.offsets_topic_replication_factor, 3);
        assert_eq!(c.transaction_state_log_replication_factor, 3);
        let mut set = cluster.to_vec();
        set.push(("offsets.topic.replication.factor", "2"));
        set.push(("transaction.state.log.replication.factor", "1"));
        let c = BrokerConfig::from_properties(props(&set)).unwrap();
        assert_eq!(c.offsets_topic_replication_factor, 2);
        assert_eq!(c.transaction_state_log_replication_factor, 1);
        // One node keeps 1.
        let c = BrokerConfig::from_properties(props(&[("node.id", "1")])).unwrap();
        assert_eq!(c.offsets_topic_replication_factor, 1);
        assert_eq!(c.transaction_state_log_replication_factor, 1);
    }

    fn warnings(pairs: &[(&str, &str)]) -> Vec<ConfigWarning> {
        BrokerConfig::from_properties_with_warnings(props(pairs))
            .unwrap()
            .1
    }

    #[test]
    fn unknown_setting_fails_the_start_with_a_suggestion() {
        let e = BrokerConfig::from_properties(props(&[("num.partitons", "3")])).unwrap_err();
        let ConfigError::Unknown(u) = &e else {
            panic!("{e}")
        };
        assert_eq!(
            u,
            &[UnknownSetting {
                key: "num.partitons".into(),
                suggestion: Some("num.partitions".into())
            }]
        );
        assert!(
            e.to_string().contains("did you mean `num.partitions`?"),
            "{e}"
        );
    }

    #[test]
    fn every_unknown_setting_is_reported_at_once() {
        let e = BrokerConfig::from_properties(props(&[
            ("log.dirss", "/x"),
            ("josef.nonsense.thing", "1"),
        ]))
        .unwrap_err();
        let ConfigError::Unknown(u) = &e else {
            panic!("{e}")
        };
        assert_eq!(u.len(), 2);
        assert_eq!(u[0].key, "josef.nonsense.thing");
        assert_eq!(u[0].suggestion, None);
        assert_eq!(u[1].suggestion.as_deref(), Some("log.dirs"));
    }

    #[test]
    fn kafka_settings_josef_does_not_use_warn_once_each() {
        let w = warnings(&[
            ("zookeeper.connect", "localhost:2181"),
            ("num.network.threads", "3"),
            ("alter.config.policy.class.name", "x.Y"),
            ("num.partitions", "3"),
        ]);
        let keys: Vec<&str> = w.iter().map(|w| w.key()).collect();
        assert_eq!(
            keys,
            [
                "alter.config.policy.class.name",
                "num.network.threads",
                "zookeeper.connect"
            ]
        );
        assert!(w.iter().all(|w| matches!(w, ConfigWarning::NotUsed { .. })));
        assert!(w[2].to_string().contains("not used by Josef"), "{}", w[2]);
    }

    #[test]
    fn parsed_but_unused_settings_are_checked_and_reported() {
        let w = warnings(&[("replica.socket.timeout.ms", "1000")]);
        assert_eq!(
            w,
            [ConfigWarning::NotUsed {
                key: "replica.socket.timeout.ms".into(),
                reason: VALIDATED_ONLY
            }]
        );
        assert!(
            BrokerConfig::from_properties(props(&[("offsets.commit.timeout.ms", "x")])).is_err()
        );
        // Used: how long a group coordinator write waits for the HW (groups.rs).
        assert!(warnings(&[("offsets.commit.timeout.ms", "1000")]).is_empty());
    }

    #[test]
    fn producer_id_expiration_check_interval_is_read() {
        assert!(warnings(&[("producer.id.expiration.check.interval.ms", "1000")]).is_empty());
        let c = BrokerConfig::from_properties(props(&[])).unwrap();
        assert_eq!(c.producer_id_expiration_check_interval_ms, 600_000);
        let c = BrokerConfig::from_properties(props(&[(
            "producer.id.expiration.check.interval.ms",
            "1000",
        )]))
        .unwrap();
        assert_eq!(c.producer_id_expiration_check_interval_ms, 1000);
        assert!(BrokerConfig::from_properties(props(&[(
            "producer.id.expiration.check.interval.ms",
            "0",
        )]))
        .is_err());
    }

    #[test]
    fn offsets_retention_check_interval_reaches_the_group_coordinator() {
        assert!(warnings(&[("offsets.retention.check.interval.ms", "1000")]).is_empty());
        let c = BrokerConfig::from_properties(props(&[(
            "offsets.retention.check.interval.ms",
            "1000",
        )]))
        .unwrap();
        assert_eq!(c.offsets_retention_check_interval_ms, 1000);
        assert_eq!(
            crate::groups::GroupService::new(&c)
                .config()
                .offsets_retention_check_interval_ms,
            1000
        );
    }

    #[test]
    fn every_not_used_name_is_a_kafka_name() {
        for (k, _) in NOT_USED {
            assert!(kafka_names::is_kafka_config_name(k), "{k}");
        }
        for k in crate::cluster_config::CLUSTER_SETTINGS {
            assert!(kafka_names::is_kafka_config_name(k), "{k}");
        }
        for (old, real) in OLD_SPELLINGS {
            assert!(!kafka_names::is_kafka_config_name(old), "{old}");
            assert!(kafka_names::is_kafka_config_name(real), "{real}");
        }
    }

    #[test]
    fn the_defaults_give_no_warning() {
        assert!(warnings(&[]).is_empty());
    }

    #[test]
    fn listener_prefixed_security_settings_are_accepted_as_not_used_yet() {
        let w = warnings(&[
            (
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required;",
            ),
            ("listener.name.x.ssl.keystore.location", "/k.jks"),
        ]);
        assert_eq!(w.len(), 2);
        assert!(w.iter().all(
            |w| matches!(w, ConfigWarning::NotUsed { reason, .. } if *reason == LISTENER_SETTING)
        ));
        let e = BrokerConfig::from_properties(props(&[(
            "listener.name.x.ssl.keystore.locaton",
            "/k.jks",
        )]))
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("did you mean `listener.name.x.ssl.keystore.location`?"),
            "{e}"
        );
    }

    #[test]
    fn old_spellings_apply_as_the_real_key_with_a_warning() {
        let (c, w) = BrokerConfig::from_properties_with_warnings(props(&[
            ("transactional.id.timeout.ms", "1234"),
            ("max.transaction.timeout.ms", "5678"),
        ]))
        .unwrap();
        assert_eq!(c.transactional_id_expiration_ms, 1234);
        assert_eq!(c.transaction_max_timeout_ms, 5678);
        assert_eq!(
            w,
            [
                ConfigWarning::OldSpelling {
                    key: "max.transaction.timeout.ms".into(),
                    real: "transaction.max.timeout.ms"
                },
                ConfigWarning::OldSpelling {
                    key: "transactional.id.timeout.ms".into(),
                    real: "transactional.id.expiration.ms"
                },
            ]
        );
        assert!(w[0]
            .to_string()
            .contains("applied as `transaction.max.timeout.ms`"));
    }

    #[test]
    fn the_real_key_beats_an_old_spelling() {
        let (c, w) = BrokerConfig::from_properties_with_warnings(props(&[
            ("transactional.id.timeout.ms", "1234"),
            ("transactional.id.expiration.ms", "99"),
        ]))
        .unwrap();
        assert_eq!(c.transactional_id_expiration_ms, 99);
        assert!(
            matches!(&w[..], [ConfigWarning::Shadowed { by, .. }] if *by == "transactional.id.expiration.ms")
        );
    }

    #[test]
    fn prometheus_listener_is_josef_s_own_setting() {
        assert_eq!(BrokerConfig::default().prometheus_listener, None);
        let (c, w) = BrokerConfig::from_properties_with_warnings(props(&[(
            "prometheus.listener",
            "0.0.0.0:9404",
        )]))
        .unwrap();
        assert_eq!(c.prometheus_listener, Some(("0.0.0.0".to_string(), 9404)));
        assert!(w.is_empty(), "{w:?}");
        let (c, _) = BrokerConfig::from_properties_with_warnings(props(&[(
            "prometheus.listener",
            "[::1]:0",
        )]))
        .unwrap();
        assert_eq!(c.prometheus_listener, Some(("::1".to_string(), 0)));
        for bad in ["9404", "host:", ":9404", "host:99999"] {
            assert!(
                BrokerConfig::from_properties(props(&[("prometheus.listener", bad)])).is_err(),
                "{bad}"
            );
        }
        assert!(!kafka_names::is_kafka_broker_setting("prometheus.listener"));
        match BrokerConfig::from_properties(props(&[("prometheus.listner", "x:1")])) {
            Err(ConfigError::Unknown(u)) => {
                assert_eq!(u[0].suggestion.as_deref(), Some("prometheus.listener"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn broker_id_and_node_id_are_synonyms() {
        let id =
            |pairs: &[(&str, &str)]| BrokerConfig::from_properties(props(pairs)).map(|c| c.node_id);
        assert_eq!(id(&[("broker.id", "0")]).unwrap(), 0);
        assert_eq!(id(&[("node.id", "7")]).unwrap(), 7);
        assert_eq!(id(&[("node.id", "7"), ("broker.id", "7")]).unwrap(), 7);
        assert_eq!(id(&[]).unwrap(), 1);
        let e = id(&[("node.id", "7"), ("broker.id", "8")]).unwrap_err();
        assert!(e.to_string().contains("must equal node.id"), "{e}");
        let e = id(&[("broker.id", "-1")]).unwrap_err();
        assert!(e.to_string().contains("broker.id"), "{e}");
    }

    #[test]
    fn log_dirs_beats_log_dir() {
        let (c, w) = BrokerConfig::from_properties_with_warnings(props(&[
            ("log.dir", "/one"),
            ("log.dirs", "/two,/three"),
        ]))
        .unwrap();
        assert_eq!(c.log_dirs, [PathBuf::from("/two"), PathBuf::from("/three")]);
        assert_eq!(
            w,
            [ConfigWarning::Shadowed {
                key: "log.dir".into(),
                by: "log.dirs"
            }]
        );
        let c = BrokerConfig::from_properties(props(&[("log.dir", "/one")])).unwrap();
        assert_eq!(c.log_dirs, [PathBuf::from("/one")]);
    }

    #[test]
    fn values_are_trimmed_as_kafka_does() {
        let c = BrokerConfig::from_properties(props(&[("num.partitions", " 4  ")])).unwrap();
        assert_eq!(c.num_partitions, 4);
    }

    #[test]
    fn broker_rack_is_used_on_a_single_node() {
        assert!(warnings(&[("broker.rack", "r1")]).is_empty());
        let c = BrokerConfig::from_properties(props(&[("broker.rack", "r1")])).unwrap();
        assert_eq!(c.broker_rack.as_deref(), Some("r1"));
        let c = BrokerConfig::from_properties(props(&[("broker.rack", "")])).unwrap();
        assert_eq!(c.broker_rack, None);
    }

    #[test]
    fn cluster_settings_on_a_single_node_are_reported() {
        let w = warnings(&[("replica.lag.time.max.ms", "100")]);
        assert_eq!(
            w,
            [ConfigWarning::NotUsed {
                key: "replica.lag.time.max.ms".into(),
                reason: crate::cluster_config::SINGLE_NODE
            }]
        );
    }

    #[test]
    fn invalid_value_fails_the_start() {
        let e = BrokerConfig::from_properties(props(&[("num.partitions", "x")])).unwrap_err();
        assert!(e.to_string().contains("num.partitions"));
        let e = BrokerConfig::from_properties(props(&[("num.partitions", "0")])).unwrap_err();
        assert!(e.to_string().contains("at least 1"));
        let e = BrokerConfig::from_properties(props(&[("auto.create.topics.enable", "yes")]))
            .unwrap_err();
        assert!(e.to_string().contains("true or false"));
    }

    #[test]
    fn retention_ms_beats_minutes_beats_hours() {
        let c = BrokerConfig::from_properties(props(&[
            ("log.retention.hours", "1"),
            ("log.retention.minutes", "2"),
        ]))
        .unwrap();
        assert_eq!(c.log_retention_ms, 120_000);
        let c = BrokerConfig::from_properties(props(&[
            ("log.retention.ms", "5"),
            ("log.retention.minutes", "2"),
        ]))
        .unwrap();
        assert_eq!(c.log_retention_ms, 5);
    }

    #[test]
    fn stock_kraft_server_properties_start() {
        let text = "# comment\nprocess.roles=broker,controller\nnode.id=1\n\
            controller.quorum.voters=1@localhost:9093\n\
            listeners=PLAINTEXT://:9092,CONTROLLER://:9093\n\
            inter.broker.listener.name=PLAINTEXT\n\
            advertised.listeners=PLAINTEXT://localhost:9092\n\
            controller.listener.names=CONTROLLER\n\
            listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n\
            num.network.threads=3\nlog.dirs=/tmp/kraft-combined-logs\n\
            offsets.topic.replication.factor=1\n\
            transaction.state.log.replication.factor=1\n\
            transaction.state.log.min.isr=1\nlog.retention.hours=168\n\
            log.segment.bytes=1073741824\nlog.retention.check.interval.ms=300000\n";
        let (c, w) =
            BrokerConfig::from_properties_with_warnings(parse_properties(text).unwrap()).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].key(), "num.network.threads");
        assert_eq!(c.listeners.len(), 1);
        assert_eq!(c.listeners[0].host, "");
        assert_eq!(
            c.advertised_for("PLAINTEXT", 9092),
            ("localhost".into(), 9092)
        );
    }

    #[test]
    fn an_ssl_listener_needs_a_pem_keystore_and_unmapped_names_are_refused() {
        let e = BrokerConfig::from_properties(props(&[("listeners", "SSL://:9093")])).unwrap_err();
        assert!(e.to_string().contains("no keystore"), "{e}");
        let e = BrokerConfig::from_properties(props(&[
            ("listeners", "SSL://:9093"),
            ("ssl.keystore.location", "/k.jks"),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("only PEM"), "{e}");
        let e =
            BrokerConfig::from_properties(props(&[("listeners", "CLIENT://:9093")])).unwrap_err();
        assert!(e.to_string().contains("no security protocol"), "{e}");
        let (c, warnings) = BrokerConfig::from_properties_with_warnings(props(&[
            ("listeners", "CLIENT://:9093,SASL_PLAINTEXT://:9094"),
            (
                "listener.security.protocol.map",
                "CLIENT:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
            ),
            ("ssl.keystore.type", "PEM"),
            ("listener.name.client.ssl.keystore.location", "/k.pem"),
            ("listener.name.client.ssl.client.auth", "requested"),
            ("ssl.truststore.location", "/ca.pem"),
            ("ssl.truststore.type", "PEM"),
            ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
            ("connections.max.reauth.ms", "60000"),
        ]))
        .unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let client = c.security.of("CLIENT");
        let ssl = client.ssl.unwrap();
        assert_eq!(
            ssl.client_auth,
            crate::security_config::ClientAuth::Requested
        );
        assert_eq!(
            ssl.keystore_location.unwrap(),
            std::path::PathBuf::from("/k.pem")
        );
        let sasl = c.security.of("SASL_PLAINTEXT").sasl.unwrap();
        assert_eq!(sasl.enabled_mechanisms, vec!["SCRAM-SHA-512"]);
        assert_eq!(sasl.connections_max_reauth_ms, 60000);
    }

    #[test]
    fn port_zero_is_advertised_as_the_bound_port() {
        let c = BrokerConfig::from_properties(props(&[("listeners", "PLAINTEXT://127.0.0.1:0")]))
            .unwrap();
        assert_eq!(
            c.advertised_for("PLAINTEXT", 40001),
            ("127.0.0.1".into(), 40001)
        );
    }

    #[test]
    fn properties_parser_handles_comments_colons_and_continuations() {
        let m = parse_properties("! bang\n a = 1 \nb:2\nc=x\\\n  y\n").unwrap();
        assert_eq!(m["a"], "1 ");
        assert_eq!(m["b"], "2");
        assert_eq!(m["c"], "xy");
        assert_eq!(parse_properties("novalue\n").unwrap()["novalue"], "");
        assert_eq!(parse_properties("a=\\u12\n"), Err(1));
    }
}
