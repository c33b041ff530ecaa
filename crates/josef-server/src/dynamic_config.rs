//! Kafka's dynamic broker configs (`DynamicBrokerConfig`, KIP-226): settings changed through
//! IncrementalAlterConfigs / AlterConfigs on a BROKER resource (name = broker id for one broker,
//! `""` for the cluster-wide default), kept as ConfigRecords (the metadata log on a cluster, the
//! local metadata store on one node) and applied without a restart.
//!
//! - [`validate`]: Kafka's checks on the broker that receives the request
//!   (`ConfigAdminManager.validateBrokerConfigChange`), every failure INVALID_REQUEST as Kafka
//!   answers (KAFKA-13609): a non-dynamic setting, a TLS setting without its listener prefix, a
//!   per-broker setting at the cluster level, a bad value, a keystore that does not load.
//! - [`DynamicBrokerConfig::apply`]: from an image to the running broker. The topic config
//!   defaults (Kafka's `DynamicLogConfig`: the broker synonyms of topic configs) go to every
//!   partition at once; a change of this broker's own configs reloads its TLS listeners'
//!   keystores and truststores (Kafka reloads the files even when their paths did not change).
//!
//! Precedence, as Kafka: topic override > dynamic per-broker > dynamic cluster default > static
//! (`server.properties`) > Kafka's default.
//!
//! The replication throttle rates (`leader/follower.replication.throttled.rate`) are applied by
//! [`crate::replication_quotas`] from the same image (the cluster publisher refreshes them before
//! it gives partitions to the replica fetchers).
//!
//! `log.cleaner.threads` goes to the log cleaner, which starts or stops workers to match
//! ([`DynamicBrokerConfig::cleaner_threads`]).
//!
//! Settings Kafka can change dynamically but Josef has nothing to apply to (thread pools, the
//! rest of the `log.cleaner.*` tuning, remote storage, metric reporters, ...) are accepted and
//! stored, as Kafka accepts them, and described; they change nothing here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use josef_metadata::MetadataImage;
use josef_tls::{SslSettings, TlsListener};
use parking_lot::Mutex;

use crate::config::BrokerConfig;
use crate::topic_config::{self, ConfigType};
use crate::topics::TopicManager;

/// The BROKER config resource type.
pub const BROKER_RESOURCE: i8 = 4;

/// The TLS store settings a listener reloads (Kafka's `SslConfigs.RECONFIGURABLE_CONFIGS`):
/// dynamic only per broker and only with the listener prefix.
pub const DYNAMIC_SECURITY_CONFIGS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.truststore.certificates",
];

/// Kafka's `DynamicListenerConfig.ReconfigurableConfigs` (besides the TLS stores).
const DYNAMIC_LISTENER_CONFIGS: &[&str] = &[
    "listeners",
    "listener.security.protocol.map",
    "principal.builder.class",
    "ssl.protocol",
    "ssl.provider",
    "ssl.cipher.suites",
    "ssl.enabled.protocols",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation",
    "ssl.client.auth",
    "ssl.engine.factory.class",
    "sasl.mechanism.inter.broker.protocol",
    "sasl.jaas.config",
    "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name",
    "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules",
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
    "max.connections",
    "max.connection.creation.rate",
    "num.network.threads",
];

/// Listener settings Kafka also allows at the cluster level (`ClusterLevelListenerConfigs`).
const CLUSTER_LEVEL_LISTENER_CONFIGS: &[&str] = &[
    "max.connections",
    "max.connection.creation.rate",
    "num.network.threads",
];

/// The rest of Kafka's dynamic broker settings: `AllDynamicConfigs` (the log cleaner's, the
/// thread pools', the socket server's, the producer state manager's, remote storage's,
/// replication's, metric reporters, config providers) and the broker quotas of
/// `DynamicConfig.Broker` (KIP-73 replication throttles).
const OTHER_DYNAMIC_CONFIGS: &[&str] = &[
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
    "log.cleaner.threads",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.backoff.ms",
    "num.io.threads",
    "num.replica.fetchers",
    "num.recovery.threads.per.data.dir",
    "background.threads",
    "metric.reporters",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "producer.id.expiration.ms",
    "transaction.partition.verification.enable",
    "remote.log.index.file.cache.total.size.bytes",
    "remote.fetch.max.wait.ms",
    "remote.log.manager.copy.max.bytes.per.second",
    "remote.log.manager.fetch.max.bytes.per.second",
    "remote.list.offsets.request.timeout.ms",
    "remote.log.manager.copier.thread.pool.size",
    "remote.log.manager.expiration.thread.pool.size",
    "remote.log.manager.follower.thread.pool.size",
    "remote.log.reader.threads",
    "follower.fetch.last.tiered.offset.enable",
    "config.providers",
];

/// Whether Kafka lets `name` (unprefixed) change without a restart.
pub fn is_dynamic(name: &str) -> bool {
    topic_config::by_synonym(name).is_some()
        || DYNAMIC_SECURITY_CONFIGS.contains(&name)
        || DYNAMIC_LISTENER_CONFIGS.contains(&name)
        || OTHER_DYNAMIC_CONFIGS.contains(&name)
}

/// `listener.name.<listener>.<setting>`: the listener and the setting.
fn listener_prefixed(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("listener.name.")?;
    rest.split_once('.')
        .filter(|(l, s)| !l.is_empty() && !s.is_empty())
}

/// Kafka's text for a set of names (`Set(a, b)`), sorted so it is stable.
fn set_text(names: &BTreeSet<&str>) -> String {
    let joined: Vec<&str> = names.iter().copied().collect();
    format!("Set({})", joined.join(", "))
}

/// Checks a value of a topic config's broker synonym: its type first (Kafka's wording), then the
/// topic config's own validator.
/// `log.cleaner.threads` is a count of at least one (Kafka's `LogCleaner.validateReconfiguration`).
fn validate_cleaner_threads(name: &str, value: &str) -> Result<(), String> {
    if name != "log.cleaner.threads" {
        return Ok(());
    }
    match value.trim().parse::<i32>() {
        Err(_) => Err(format!(
            "Invalid value {value} for configuration {name}: Not a number of type INT"
        )),
        Ok(n) if n < 1 => Err("Log cleaner threads should be at least 1".into()),
        Ok(_) => Ok(()),
    }
}

fn validate_log_value(name: &str, value: &str) -> Result<(), String> {
    let Some(def) = topic_config::by_synonym(name) else {
        return Ok(());
    };
    let v = value.trim();
    let type_error = match def.kind {
        ConfigType::Int => v
            .parse::<i32>()
            .is_err()
            .then_some("Not a number of type INT"),
        ConfigType::Long => v
            .parse::<i64>()
            .is_err()
            .then_some("Not a number of type LONG"),
        ConfigType::Double => v
            .parse::<f64>()
            .is_err()
            .then_some("Not a number of type DOUBLE"),
        ConfigType::Boolean => (!v.eq_ignore_ascii_case("true")
            && !v.eq_ignore_ascii_case("false"))
        .then_some("Expected value to be either true or false"),
        ConfigType::String | ConfigType::List => None,
    };
    if let Some(why) = type_error {
        return Err(format!(
            "Invalid value {value} for configuration {name}: {why}"
        ));
    }
    topic_config::validate(def.name, v)
        .map_err(|why| format!("Invalid value {value} for configuration {name}: {why}"))
}

/// The byte rates of Kafka's `DynamicConfig.Broker` (KIP-73 throttles and the log-dir mover's):
/// LONG, at least 0, with Kafka's `ConfigException` messages.
const BYTE_RATE_CONFIGS: &[&str] = &[
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
];

fn validate_byte_rate(name: &str, value: &str) -> Result<(), String> {
    if !BYTE_RATE_CONFIGS.contains(&name) {
        return Ok(());
    }
    match value.trim().parse::<i64>() {
        Ok(v) if v >= 0 => Ok(()),
        Ok(_) => Err(format!(
            "Invalid value {value} for configuration {name}: Value must be at least 0"
        )),
        Err(_) => Err(format!(
            "Invalid value {value} for configuration {name}: Not a number of type LONG"
        )),
    }
}

/// Kafka's `DynamicBrokerConfig.validateConfigs` on the configs a BROKER resource would have
/// after the request (`per_broker`: a broker id, else the cluster default). The message is
/// Kafka's.
pub fn validate(props: &BTreeMap<String, String>, per_broker: bool) -> Result<(), String> {
    let non_dynamic: BTreeSet<&str> = props
        .keys()
        .map(String::as_str)
        .filter(|k| crate::config::kafka_names::is_kafka_config_name(k) && !is_dynamic(k))
        .collect();
    if !non_dynamic.is_empty() {
        return Err(format!(
            "Cannot update these configs dynamically: {}",
            set_text(&non_dynamic)
        ));
    }
    let unprefixed_security: BTreeSet<&str> = props
        .keys()
        .map(String::as_str)
        .filter(|k| DYNAMIC_SECURITY_CONFIGS.contains(k))
        .collect();
    if !unprefixed_security.is_empty() {
        return Err(format!(
            "These security configs can be dynamically updated only per-listener using the listener prefix: {}",
            set_text(&unprefixed_security)
        ));
    }
    for (k, v) in props {
        validate_log_value(k, v)?;
        validate_byte_rate(k, v)?;
        validate_cleaner_threads(k, v)?;
    }
    if !per_broker {
        let per_broker_only: BTreeSet<&str> = props
            .keys()
            .map(String::as_str)
            .filter(|k| {
                let base = listener_prefixed(k).map_or(*k, |(_, s)| s);
                let listener_setting = listener_prefixed(k).is_some()
                    || DYNAMIC_SECURITY_CONFIGS.contains(&base)
                    || DYNAMIC_LISTENER_CONFIGS.contains(&base);
                listener_setting && !CLUSTER_LEVEL_LISTENER_CONFIGS.contains(&base)
            })
            .collect();
        if !per_broker_only.is_empty() {
            return Err(format!(
                "Cannot update these configs at default cluster level, broker id must be specified: {}",
                set_text(&per_broker_only)
            ));
        }
    }
    Ok(())
}

/// The two dynamic layers of one broker: the cluster default and its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layers {
    /// Resource `""`.
    pub cluster_default: BTreeMap<String, String>,
    /// Resource `<node id>`.
    pub per_broker: BTreeMap<String, String>,
}

impl Layers {
    /// This broker's layers in `image`.
    pub fn of(image: &MetadataImage, node_id: i32) -> Layers {
        let get = |name: &str| {
            image
                .config(BROKER_RESOURCE, name)
                .cloned()
                .unwrap_or_default()
        };
        Layers {
            cluster_default: get(""),
            per_broker: get(&node_id.to_string()),
        }
    }

    /// The topic config defaults they set, by topic config name, the broker's own winning.
    /// Values that do not validate (written before a check existed, or by another tool) are
    /// left out with a warning, as Kafka's `removeInvalidConfigs`.
    pub fn topic_defaults(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for layer in [&self.cluster_default, &self.per_broker] {
            for (k, v) in layer {
                let Some(def) = topic_config::by_synonym(k) else {
                    continue;
                };
                match validate_log_value(k, v) {
                    Ok(()) => {
                        out.insert(def.name.to_string(), v.trim().to_string());
                    }
                    Err(e) => {
                        tracing::warn!(config = %k, error = %e, "dynamic broker config ignored")
                    }
                }
            }
        }
        out
    }

    /// The value of `key` and which layer set it (`true`: this broker's own).
    pub fn get(&self, key: &str) -> Option<(&str, bool)> {
        self.per_broker
            .get(key)
            .map(|v| (v.as_str(), true))
            .or_else(|| self.cluster_default.get(key).map(|v| (v.as_str(), false)))
    }
}

/// `settings` of `listener` with the TLS store settings of `per_broker` applied
/// (`listener.name.<listener>.ssl.*`, the listener name in any case).
pub fn listener_ssl_settings(
    listener: &str,
    settings: &SslSettings,
    per_broker: &BTreeMap<String, String>,
) -> Result<SslSettings, String> {
    let mut s = settings.clone();
    let mine: BTreeMap<&str, &str> = per_broker
        .iter()
        .filter_map(|(k, v)| {
            let (l, setting) = listener_prefixed(k)?;
            l.eq_ignore_ascii_case(listener)
                .then_some((setting, v.as_str()))
        })
        .collect();
    for k in ["ssl.keystore.type", "ssl.truststore.type"] {
        if let Some(v) = mine.get(k) {
            if !v.trim().eq_ignore_ascii_case("PEM") {
                return Err(format!("{k}: only PEM stores are supported"));
            }
        }
    }
    for k in [
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.password",
    ] {
        if mine.contains_key(k) {
            return Err(format!(
                "{k}: encrypted PEM keys and store passwords are not supported"
            ));
        }
    }
    let location = mine.get("ssl.keystore.location");
    let chain = mine.get("ssl.keystore.certificate.chain");
    let key = mine.get("ssl.keystore.key");
    match (location, chain, key) {
        (None, None, None) => {}
        (Some(l), None, None) => {
            s.keystore_location = Some(l.trim().into());
            s.keystore_certificate_chain = None;
            s.keystore_key = None;
        }
        (None, Some(c), Some(k)) => {
            s.keystore_location = None;
            s.keystore_certificate_chain = Some((*c).to_string());
            s.keystore_key = Some((*k).to_string());
        }
        _ => {
            return Err(
                "give either ssl.keystore.location or ssl.keystore.certificate.chain and ssl.keystore.key"
                    .into(),
            )
        }
    }
    match (
        mine.get("ssl.truststore.location"),
        mine.get("ssl.truststore.certificates"),
    ) {
        (None, None) => {}
        (Some(l), None) => {
            s.truststore_location = Some(l.trim().into());
            s.truststore_certificates = None;
        }
        (None, Some(c)) => {
            s.truststore_location = None;
            s.truststore_certificates = Some((*c).to_string());
        }
        _ => {
            return Err("give either ssl.truststore.location or ssl.truststore.certificates".into())
        }
    }
    Ok(s)
}

/// The running broker's side: the layers last applied and the TLS listeners to reload.
pub struct DynamicBrokerConfig {
    config: Arc<BrokerConfig>,
    applied: Mutex<Option<Layers>>,
    tls: Mutex<BTreeMap<String, TlsListener>>,
    /// The effective `log.cleaner.threads`, which the log cleaner follows.
    cleaner_threads: tokio::sync::watch::Sender<usize>,
}

impl DynamicBrokerConfig {
    /// Nothing applied yet, no TLS listener known.
    pub fn new(config: Arc<BrokerConfig>) -> Self {
        let cleaner_threads = tokio::sync::watch::Sender::new(config.log_cleaner_threads);
        DynamicBrokerConfig {
            config,
            applied: Mutex::new(None),
            tls: Mutex::new(BTreeMap::new()),
            cleaner_threads,
        }
    }

    /// The effective `log.cleaner.threads` (this broker's dynamic value, else the cluster
    /// default, else the static one), updated as the configs change: what
    /// [`LogCleaner::run`](crate::log_cleaner::LogCleaner::run) follows.
    pub fn cleaner_threads(&self) -> tokio::sync::watch::Receiver<usize> {
        self.cleaner_threads.subscribe()
    }

    /// The TLS listeners (by listener name) whose stores a per-broker update reloads; what the
    /// accept loops hold are clones sharing their configuration.
    pub fn register_tls(&self, listeners: impl IntoIterator<Item = (String, TlsListener)>) {
        self.tls.lock().extend(listeners);
        // Stores set dynamically before the listeners were built.
        if let Some(layers) = self.applied.lock().clone() {
            self.reload_tls(&layers.per_broker);
        }
    }

    /// The layers last applied (empty before the first image).
    pub fn layers(&self) -> Layers {
        self.applied.lock().clone().unwrap_or_default()
    }

    /// The rest of Kafka's check, which needs the running broker: the stores of this broker's
    /// TLS listeners under the new per-broker configs must load (else Kafka's "Invalid dynamic
    /// configuration").
    pub fn validate_reconfiguration(
        &self,
        per_broker: &BTreeMap<String, String>,
    ) -> Result<(), String> {
        for (name, l) in &self.config.security.listeners {
            let Some(ssl) = &l.ssl else { continue };
            let checked = listener_ssl_settings(name, ssl, per_broker)
                .and_then(|s| TlsListener::check(&s).map_err(|e| e.to_string()));
            if let Err(e) = checked {
                tracing::info!(listener = %name, error = %e, "dynamic TLS update refused");
                return Err("Invalid dynamic configuration".into());
            }
        }
        Ok(())
    }

    /// Applies this broker's layers in `image`: the topic defaults to every partition when they
    /// changed, the TLS stores reloaded when this broker's own configs changed.
    pub fn apply(&self, image: &MetadataImage, topics: &TopicManager) {
        let layers = Layers::of(image, self.config.node_id);
        let previous = {
            let mut applied = self.applied.lock();
            if applied.as_ref() == Some(&layers) {
                return;
            }
            applied.replace(layers.clone())
        };
        let previous = previous.unwrap_or_default();
        let defaults = layers.topic_defaults();
        if previous.topic_defaults() != defaults || *topics.dynamic_defaults() != defaults {
            tracing::info!(?defaults, "dynamic broker defaults applied");
            topics.set_dynamic_defaults(defaults);
        }
        if previous.per_broker != layers.per_broker {
            self.reload_tls(&layers.per_broker);
        }
        let threads = match layers.get("log.cleaner.threads") {
            Some((v, _)) => match v.trim().parse::<usize>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    tracing::warn!(value = %v, "dynamic log.cleaner.threads ignored: not a count of at least 1");
                    self.config.log_cleaner_threads
                }
            },
            None => self.config.log_cleaner_threads,
        };
        self.cleaner_threads.send_if_modified(|t| {
            let changed = *t != threads;
            *t = threads;
            changed
        });
    }

    /// Rebuilds each TLS listener's stores from the static settings and `per_broker`; one that
    /// does not load keeps the stores it has.
    fn reload_tls(&self, per_broker: &BTreeMap<String, String>) {
        for (name, listener) in self.tls.lock().iter() {
            let Some(ssl) = self
                .config
                .security
                .listeners
                .get(name)
                .and_then(|l| l.ssl.as_ref())
            else {
                continue;
            };
            let reloaded = listener_ssl_settings(name, ssl, per_broker)
                .and_then(|s| listener.reload(&s).map_err(|e| e.to_string()));
            match reloaded {
                Ok(()) => tracing::info!(listener = %name, "TLS stores reloaded"),
                Err(e) => {
                    tracing::error!(listener = %name, error = %e, "TLS stores not reloaded, the old ones stay")
                }
            }
        }
    }
}

/// Applies the dynamic broker configs of a cluster node's metadata image as it changes.
pub fn spawn_image_watch(
    state: Arc<crate::state::BrokerState>,
    mut images: tokio::sync::watch::Receiver<MetadataImage>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let image = images.borrow_and_update().clone();
            let s = state.clone();
            let _ = tokio::task::spawn_blocking(move || s.dynamic.apply(&image, &s.topics)).await;
            if images.changed().await.is_err() {
                return;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn non_dynamic_settings_are_refused_with_kafkas_message() {
        assert_eq!(
            validate(&props(&[("log.dirs", "/x"), ("node.id", "3")]), true).unwrap_err(),
            "Cannot update these configs dynamically: Set(log.dirs, node.id)"
        );
        assert_eq!(
            validate(&props(&[("log.retention.hours", "1")]), false).unwrap_err(),
            "Cannot update these configs dynamically: Set(log.retention.hours)"
        );
        assert!(validate(&props(&[("log.retention.ms", "1000")]), false).is_ok());
        assert!(validate(
            &props(&[("leader.replication.throttled.rate", "1000")]),
            true
        )
        .is_ok());
        assert_eq!(
            validate(&props(&[("follower.replication.throttled.rate", "fast")]), false)
                .unwrap_err(),
            "Invalid value fast for configuration follower.replication.throttled.rate: Not a number of type LONG"
        );
        assert_eq!(
            validate(&props(&[("leader.replication.throttled.rate", "-1")]), true).unwrap_err(),
            "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"
        );
        assert!(validate(&props(&[("leader.replication.throttled.rate", "0")]), false).is_ok());
        // Not a Kafka name: a custom setting, which Kafka keeps.
        assert!(validate(&props(&[("my.plugin.setting", "1")]), true).is_ok());
    }

    #[test]
    fn tls_stores_need_the_listener_prefix_and_a_broker_id() {
        assert_eq!(
            validate(&props(&[("ssl.keystore.location", "/k.pem")]), true).unwrap_err(),
            "These security configs can be dynamically updated only per-listener using the listener prefix: Set(ssl.keystore.location)"
        );
        let prefixed = props(&[("listener.name.ssl.ssl.keystore.location", "/k.pem")]);
        assert!(validate(&prefixed, true).is_ok());
        assert_eq!(
            validate(&prefixed, false).unwrap_err(),
            "Cannot update these configs at default cluster level, broker id must be specified: Set(listener.name.ssl.ssl.keystore.location)"
        );
        assert!(validate(&props(&[("max.connections", "10")]), false).is_ok());
    }

    #[test]
    fn log_defaults_are_checked_as_their_topic_configs() {
        assert_eq!(
            validate(&props(&[("log.retention.ms", "soon")]), true).unwrap_err(),
            "Invalid value soon for configuration log.retention.ms: Not a number of type LONG"
        );
        assert!(validate(&props(&[("log.cleanup.policy", "shred")]), true).is_err());
        assert!(validate(&props(&[("min.insync.replicas", "0")]), true).is_err());
        assert!(validate(&props(&[("compression.type", "gzip")]), true).is_ok());
    }

    #[test]
    fn the_brokers_own_layer_beats_the_cluster_default() {
        let layers = Layers {
            cluster_default: props(&[("log.retention.ms", "1000"), ("message.max.bytes", "500")]),
            per_broker: props(&[("log.retention.ms", "2000"), ("num.io.threads", "4")]),
        };
        assert_eq!(
            layers.topic_defaults(),
            props(&[("retention.ms", "2000"), ("max.message.bytes", "500")])
        );
        assert_eq!(layers.get("log.retention.ms"), Some(("2000", true)));
        assert_eq!(layers.get("message.max.bytes"), Some(("500", false)));
    }

    #[test]
    fn listener_stores_replace_the_static_ones() {
        let base = SslSettings {
            keystore_location: None,
            keystore_certificate_chain: Some("chain".into()),
            keystore_key: Some("key".into()),
            truststore_location: None,
            truststore_certificates: None,
            client_auth: josef_tls::ClientAuth::None,
            principal_mapping_rules: "DEFAULT".into(),
            enabled_protocols: vec!["TLSv1.3".into()],
            cipher_suites: Vec::new(),
            endpoint_identification: true,
        };
        let s = listener_ssl_settings(
            "SSL",
            &base,
            &props(&[
                ("listener.name.ssl.ssl.keystore.location", "/new.pem"),
                ("listener.name.other.ssl.keystore.location", "/other.pem"),
            ]),
        )
        .unwrap();
        assert_eq!(s.keystore_location, Some("/new.pem".into()));
        assert_eq!(s.keystore_certificate_chain, None);
        assert!(listener_ssl_settings(
            "SSL",
            &base,
            &props(&[("listener.name.ssl.ssl.keystore.password", "x")])
        )
        .is_err());
    }
}
