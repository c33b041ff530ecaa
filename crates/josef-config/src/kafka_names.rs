//! Every broker setting name Kafka knows, so that a name Josef does not apply can still be told
//! apart from a typo.
//!
//! The names are those of the `ConfigDef`s that Kafka's `AbstractKafkaConfig.CONFIG_DEF` merges
//! (`ServerConfigs`, `KRaftConfigs`, `QuorumConfig`, `ReplicationConfigs`, `SocketServerConfigs`,
//! `ZkConfigs`, `GroupCoordinatorConfig`, `ShareGroupConfig`, `ShareCoordinatorConfig`,
//! `TransactionLogConfig`, `TransactionStateManagerConfig`, `CleanerConfig`,
//! `LogConfig.SERVER_CONFIG_DEF` with `ServerLogConfigs`, `RemoteLogManagerConfig`, `QuotaConfig`,
//! `MetricConfigs`, `BrokerSecurityConfigs` with `SslConfigs` and `SaslConfigs`,
//! `DelegationTokenManagerConfigs`, `PasswordEncoderConfigs`), plus: names of Kafka 3.x since
//! removed (`zookeeper.sync.time.ms`, `offsets.commit.required.acks`,
//! `delegation.token.master.key`, from `KafkaConfig.scala`), names added in 4.x
//! (`group.streams.*`, `group.share.assignors`, …), and what Kafka's `StandardAuthorizer`
//! (`super.users`, `allow.everyone.if.no.acl.found`) and `AbstractConfig` (`config.providers`)
//! read from the same file.
//!
//! Kafka also accepts some families of names by prefix; see [`is_kafka_broker_setting`].

/// Kafka's broker setting names, sorted (for binary search).
pub const KAFKA_BROKER_CONFIG_NAMES: &[&str] = &[
    "advertised.listeners",
    "allow.everyone.if.no.acl.found",
    "alter.config.policy.class.name",
    "alter.log.dirs.replication.quota.window.num",
    "alter.log.dirs.replication.quota.window.size.seconds",
    "authorizer.class.name",
    "auto.create.topics.enable",
    "auto.leader.rebalance.enable",
    "background.threads",
    "broker.heartbeat.interval.ms",
    "broker.id",
    "broker.id.generation.enable",
    "broker.rack",
    "broker.session.timeout.ms",
    "client.quota.callback.class",
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.type",
    "compression.zstd.level",
    "config.providers",
    "connection.failed.authentication.delay.ms",
    "connections.max.idle.ms",
    "connections.max.reauth.ms",
    "control.plane.listener.name",
    "controlled.shutdown.enable",
    "controlled.shutdown.max.retries",
    "controlled.shutdown.retry.backoff.ms",
    "controller.listener.names",
    "controller.quorum.append.linger.ms",
    "controller.quorum.auto.join.enable",
    "controller.quorum.bootstrap.servers",
    "controller.quorum.election.backoff.max.ms",
    "controller.quorum.election.timeout.ms",
    "controller.quorum.fetch.timeout.ms",
    "controller.quorum.request.timeout.ms",
    "controller.quorum.retry.backoff.ms",
    "controller.quorum.voters",
    "controller.quota.window.num",
    "controller.quota.window.size.seconds",
    "controller.socket.timeout.ms",
    "create.topic.policy.class.name",
    "default.replication.factor",
    "delegation.token.expiry.check.interval.ms",
    "delegation.token.expiry.time.ms",
    "delegation.token.master.key",
    "delegation.token.max.lifetime.ms",
    "delegation.token.secret.key",
    "delete.records.purgatory.purge.interval.requests",
    "delete.topic.enable",
    "early.start.listeners",
    "eligible.leader.replicas.enable",
    "fetch.max.bytes",
    "fetch.purgatory.purge.interval.requests",
    "follower.replication.throttled.rate",
    "group.consumer.assignors",
    "group.consumer.heartbeat.interval.ms",
    "group.consumer.max.heartbeat.interval.ms",
    "group.consumer.max.session.timeout.ms",
    "group.consumer.max.size",
    "group.consumer.migration.policy",
    "group.consumer.min.heartbeat.interval.ms",
    "group.consumer.min.session.timeout.ms",
    "group.consumer.regex.refresh.interval.ms",
    "group.consumer.session.timeout.ms",
    "group.coordinator.append.linger.ms",
    "group.coordinator.new.enable",
    "group.coordinator.rebalance.protocols",
    "group.coordinator.threads",
    "group.initial.rebalance.delay.ms",
    "group.max.session.timeout.ms",
    "group.max.size",
    "group.min.session.timeout.ms",
    "group.share.assignors",
    "group.share.delivery.count.limit",
    "group.share.enable",
    "group.share.heartbeat.interval.ms",
    "group.share.max.groups",
    "group.share.max.heartbeat.interval.ms",
    "group.share.max.record.lock.duration.ms",
    "group.share.max.session.timeout.ms",
    "group.share.max.share.sessions",
    "group.share.max.size",
    "group.share.min.heartbeat.interval.ms",
    "group.share.min.record.lock.duration.ms",
    "group.share.min.session.timeout.ms",
    "group.share.partition.max.record.locks",
    "group.share.persister.class.name",
    "group.share.record.lock.duration.ms",
    "group.share.session.timeout.ms",
    "group.streams.heartbeat.interval.ms",
    "group.streams.initial.rebalance.delay.ms",
    "group.streams.max.heartbeat.interval.ms",
    "group.streams.max.session.timeout.ms",
    "group.streams.max.size",
    "group.streams.max.standby.replicas",
    "group.streams.min.heartbeat.interval.ms",
    "group.streams.min.session.timeout.ms",
    "group.streams.num.standby.replicas",
    "group.streams.session.timeout.ms",
    "initial.broker.registration.timeout.ms",
    "inter.broker.listener.name",
    "inter.broker.protocol.version",
    "kafka.metrics.polling.interval.secs",
    "kafka.metrics.reporters",
    "leader.imbalance.check.interval.seconds",
    "leader.imbalance.per.broker.percentage",
    "leader.replication.throttled.rate",
    "listener.security.protocol.map",
    "listeners",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.enable",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.threads",
    "log.cleanup.policy",
    "log.dir",
    "log.dir.failure.timeout.ms",
    "log.dirs",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.flush.offset.checkpoint.interval.ms",
    "log.flush.scheduler.interval.ms",
    "log.flush.start.offset.checkpoint.interval.ms",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "log.initial.task.delay.ms",
    "log.local.retention.bytes",
    "log.local.retention.ms",
    "log.message.downconversion.enable",
    "log.message.format.version",
    "log.message.timestamp.after.max.ms",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.difference.max.ms",
    "log.message.timestamp.type",
    "log.preallocate",
    "log.retention.bytes",
    "log.retention.check.interval.ms",
    "log.retention.hours",
    "log.retention.minutes",
    "log.retention.ms",
    "log.roll.hours",
    "log.roll.jitter.hours",
    "log.roll.jitter.ms",
    "log.roll.ms",
    "log.segment.bytes",
    "log.segment.delete.delay.ms",
    "max.connection.creation.rate",
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "max.incremental.fetch.session.cache.slots",
    "max.request.partition.size.limit",
    "message.max.bytes",
    "metadata.log.dir",
    "metadata.log.max.record.bytes.between.snapshots",
    "metadata.log.max.snapshot.interval.ms",
    "metadata.log.segment.bytes",
    "metadata.log.segment.min.bytes",
    "metadata.log.segment.ms",
    "metadata.max.idle.interval.ms",
    "metadata.max.retention.bytes",
    "metadata.max.retention.ms",
    "metric.reporters",
    "metrics.num.samples",
    "metrics.recording.level",
    "metrics.sample.window.ms",
    "min.insync.replicas",
    "node.id",
    "num.io.threads",
    "num.network.threads",
    "num.partitions",
    "num.recovery.threads.per.data.dir",
    "num.replica.alter.log.dirs.threads",
    "num.replica.fetchers",
    "offset.metadata.max.bytes",
    "offsets.commit.required.acks",
    "offsets.commit.timeout.ms",
    "offsets.load.buffer.size",
    "offsets.retention.check.interval.ms",
    "offsets.retention.minutes",
    "offsets.topic.compression.codec",
    "offsets.topic.num.partitions",
    "offsets.topic.replication.factor",
    "offsets.topic.segment.bytes",
    "password.encoder.cipher.algorithm",
    "password.encoder.iterations",
    "password.encoder.key.length",
    "password.encoder.keyfactory.algorithm",
    "password.encoder.old.secret",
    "password.encoder.secret",
    "principal.builder.class",
    "process.roles",
    "producer.id.expiration.check.interval.ms",
    "producer.id.expiration.ms",
    "producer.purgatory.purge.interval.requests",
    "queued.max.request.bytes",
    "queued.max.requests",
    "quota.window.num",
    "quota.window.size.seconds",
    "remote.fetch.max.wait.ms",
    "remote.list.offsets.request.timeout.ms",
    "remote.log.index.file.cache.total.size.bytes",
    "remote.log.manager.copier.thread.pool.size",
    "remote.log.manager.copy.max.bytes.per.second",
    "remote.log.manager.copy.quota.window.num",
    "remote.log.manager.copy.quota.window.size.seconds",
    "remote.log.manager.expiration.thread.pool.size",
    "remote.log.manager.fetch.max.bytes.per.second",
    "remote.log.manager.fetch.quota.window.num",
    "remote.log.manager.fetch.quota.window.size.seconds",
    "remote.log.manager.follower.thread.pool.size",
    "remote.log.manager.task.interval.ms",
    "remote.log.manager.task.retry.backoff.max.ms",
    "remote.log.manager.task.retry.backoff.ms",
    "remote.log.manager.task.retry.jitter",
    "remote.log.manager.thread.pool.size",
    "remote.log.metadata.custom.metadata.max.bytes",
    "remote.log.metadata.manager.class.name",
    "remote.log.metadata.manager.class.path",
    "remote.log.metadata.manager.impl.prefix",
    "remote.log.metadata.manager.listener.name",
    "remote.log.reader.max.pending.tasks",
    "remote.log.reader.threads",
    "remote.log.storage.manager.class.name",
    "remote.log.storage.manager.class.path",
    "remote.log.storage.manager.impl.prefix",
    "remote.log.storage.system.enable",
    "replica.alter.log.dirs.io.max.bytes.per.second",
    "replica.fetch.backoff.ms",
    "replica.fetch.max.bytes",
    "replica.fetch.min.bytes",
    "replica.fetch.response.max.bytes",
    "replica.fetch.wait.max.ms",
    "replica.high.watermark.checkpoint.interval.ms",
    "replica.lag.time.max.ms",
    "replica.selector.class",
    "replica.socket.receive.buffer.bytes",
    "replica.socket.timeout.ms",
    "replication.quota.window.num",
    "replication.quota.window.size.seconds",
    "request.timeout.ms",
    "reserved.broker.max.id",
    "sasl.client.callback.handler.class",
    "sasl.enabled.mechanisms",
    "sasl.jaas.config",
    "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules",
    "sasl.kerberos.service.name",
    "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.ticket.renew.window.factor",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.login.connect.timeout.ms",
    "sasl.login.read.timeout.ms",
    "sasl.login.refresh.buffer.seconds",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.login.retry.backoff.max.ms",
    "sasl.login.retry.backoff.ms",
    "sasl.mechanism.controller.protocol",
    "sasl.mechanism.inter.broker.protocol",
    "sasl.oauthbearer.clock.skew.seconds",
    "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
    "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.scope.claim.name",
    "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.server.callback.handler.class",
    "sasl.server.max.receive.size",
    "security.inter.broker.protocol",
    "security.providers",
    "server.max.startup.time.ms",
    "share.coordinator.append.linger.ms",
    "share.coordinator.load.buffer.size",
    "share.coordinator.snapshot.update.records.per.snapshot",
    "share.coordinator.state.topic.compression.codec",
    "share.coordinator.state.topic.min.isr",
    "share.coordinator.state.topic.num.partitions",
    "share.coordinator.state.topic.prune.interval.ms",
    "share.coordinator.state.topic.replication.factor",
    "share.coordinator.state.topic.segment.bytes",
    "share.coordinator.threads",
    "share.coordinator.write.timeout.ms",
    "share.fetch.max.fetch.records",
    "share.fetch.purgatory.purge.interval.requests",
    "socket.connection.setup.timeout.max.ms",
    "socket.connection.setup.timeout.ms",
    "socket.listen.backlog.size",
    "socket.receive.buffer.bytes",
    "socket.request.max.bytes",
    "socket.send.buffer.bytes",
    "ssl.allow.dn.changes",
    "ssl.allow.san.changes",
    "ssl.cipher.suites",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.endpoint.identification.algorithm",
    "ssl.engine.factory.class",
    "ssl.key.password",
    "ssl.keymanager.algorithm",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.principal.mapping.rules",
    "ssl.protocol",
    "ssl.provider",
    "ssl.secure.random.implementation",
    "ssl.trustmanager.algorithm",
    "ssl.truststore.certificates",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
    "super.users",
    "telemetry.max.bytes",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    "transaction.max.timeout.ms",
    "transaction.partition.verification.enable",
    "transaction.remove.expired.transaction.cleanup.interval.ms",
    "transaction.state.log.load.buffer.size",
    "transaction.state.log.min.isr",
    "transaction.state.log.num.partitions",
    "transaction.state.log.replication.factor",
    "transaction.state.log.segment.bytes",
    "transaction.two.phase.commit.enable",
    "transactional.id.expiration.ms",
    "unclean.leader.election.enable",
    "unclean.leader.election.interval.ms",
    "unstable.api.versions.enable",
    "unstable.feature.versions.enable",
    "zookeeper.clientCnxnSocket",
    "zookeeper.connect",
    "zookeeper.connection.timeout.ms",
    "zookeeper.max.in.flight.requests",
    "zookeeper.metadata.migration.enable",
    "zookeeper.metadata.migration.min.batch.size",
    "zookeeper.session.timeout.ms",
    "zookeeper.set.acl",
    "zookeeper.ssl.cipher.suites",
    "zookeeper.ssl.client.enable",
    "zookeeper.ssl.crl.enable",
    "zookeeper.ssl.enabled.protocols",
    "zookeeper.ssl.endpoint.identification.algorithm",
    "zookeeper.ssl.keystore.location",
    "zookeeper.ssl.keystore.password",
    "zookeeper.ssl.keystore.type",
    "zookeeper.ssl.ocsp.enable",
    "zookeeper.ssl.protocol",
    "zookeeper.ssl.truststore.location",
    "zookeeper.ssl.truststore.password",
    "zookeeper.ssl.truststore.type",
    "zookeeper.sync.time.ms",
];

/// Prefixes under which Kafka hands settings on to a plugin (the remote storage and remote log
/// metadata managers' `remote.log.*.impl.prefix` defaults, and `config.providers.<name>.*`).
pub const PASS_THROUGH_PREFIXES: &[&str] = &["rsm.config.", "rlmm.config.", "config.providers."];

/// Whether `name` is in [`KAFKA_BROKER_CONFIG_NAMES`].
pub fn is_kafka_config_name(name: &str) -> bool {
    KAFKA_BROKER_CONFIG_NAMES.binary_search(&name).is_ok()
}

/// A listener-prefixed setting, `listener.name.<listener>.<setting>` or, for SASL settings,
/// `listener.name.<listener>.<mechanism>.<setting>` (Kafka's `ListenerName.configPrefix` and
/// `saslMechanismPrefix`): the listener name (as written) and the setting it scopes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerPrefixed<'a> {
    /// The listener, e.g. `sasl_ssl` (Kafka matches it case-insensitively).
    pub listener: &'a str,
    /// The SASL mechanism, lower case as Kafka writes it, e.g. `scram-sha-256`.
    pub mechanism: Option<&'a str>,
    /// The setting, e.g. `sasl.jaas.config`.
    pub setting: &'a str,
}

/// Splits a `listener.name.` setting, if `name` is one and the scoped setting is a Kafka name.
pub fn listener_prefixed(name: &str) -> Option<ListenerPrefixed<'_>> {
    let rest = name.strip_prefix("listener.name.")?;
    let (listener, setting) = rest.split_once('.')?;
    if listener.is_empty() {
        return None;
    }
    if is_kafka_config_name(setting) {
        return Some(ListenerPrefixed {
            listener,
            mechanism: None,
            setting,
        });
    }
    // Per-mechanism SASL settings: the mechanism is one segment (PLAIN, SCRAM-SHA-256, ...;
    // no dots) before a `sasl.*` or `connections.max.reauth.ms` name.
    let (mechanism, setting) = setting.split_once('.')?;
    (!mechanism.is_empty()
        && is_kafka_config_name(setting)
        && (setting.starts_with("sasl.") || setting == "connections.max.reauth.ms"))
        .then_some(ListenerPrefixed {
            listener,
            mechanism: Some(mechanism),
            setting,
        })
}

/// Whether Kafka would take `name` as one of its broker settings: a name of the table, a
/// listener-prefixed one, or one under a pass-through prefix.
pub fn is_kafka_broker_setting(name: &str) -> bool {
    is_kafka_config_name(name)
        || listener_prefixed(name).is_some()
        || PASS_THROUGH_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The edit distance (insertions, deletions, substitutions, and swaps of two neighbours) between
/// two names, in characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the optimal-string-alignment table.
    let mut prev2: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The known name closest to `name` among `candidates`, if one is close enough to be a likely
/// typo (at most a third of the name's length, and at most 4 edits).
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).clamp(1, 4);
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c)
}

/// The suggestion for an unknown setting: the closest Kafka name; for a `listener.name.` setting,
/// the same listener with the closest setting.
pub fn suggest(name: &str) -> Option<String> {
    if let Some(rest) = name.strip_prefix("listener.name.") {
        if let Some((listener, setting)) = rest.split_once('.') {
            return closest(setting, KAFKA_BROKER_CONFIG_NAMES.iter().copied())
                .map(|s| format!("listener.name.{listener}.{s}"));
        }
    }
    closest(name, KAFKA_BROKER_CONFIG_NAMES.iter().copied()).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_has_no_duplicates() {
        assert!(KAFKA_BROKER_CONFIG_NAMES.windows(2).all(|w| w[0] < w[1]));
        assert!(KAFKA_BROKER_CONFIG_NAMES.len() > 300);
    }

    #[test]
    fn stock_names_are_known() {
        for n in [
            "zookeeper.connect",
            "num.network.threads",
            "broker.id",
            "node.id",
            "log.dir",
            "log.dirs",
            "ssl.keystore.location",
            "sasl.enabled.mechanisms",
            "controller.quorum.bootstrap.servers",
            "share.coordinator.state.topic.min.isr",
            "group.streams.heartbeat.interval.ms",
        ] {
            assert!(is_kafka_broker_setting(n), "{n}");
        }
        assert!(!is_kafka_broker_setting("num.partitons"));
        assert!(!is_kafka_broker_setting("transactional.id.timeout.ms"));
    }

    #[test]
    fn listener_prefixed_settings_are_known() {
        assert_eq!(
            listener_prefixed("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config"),
            Some(ListenerPrefixed {
                listener: "sasl_ssl",
                mechanism: Some("scram-sha-256"),
                setting: "sasl.jaas.config"
            })
        );
        assert_eq!(
            listener_prefixed("listener.name.x.ssl.keystore.location"),
            Some(ListenerPrefixed {
                listener: "x",
                mechanism: None,
                setting: "ssl.keystore.location"
            })
        );
        assert!(is_kafka_broker_setting(
            "listener.name.internal.max.connections"
        ));
        assert!(listener_prefixed("listener.name.x.plain.ssl.keystore.location").is_none());
        assert!(listener_prefixed("listener.name.x.no.such.thing").is_none());
        assert!(listener_prefixed("listener.name..ssl.keystore.location").is_none());
    }

    #[test]
    fn pass_through_prefixes_are_known() {
        assert!(is_kafka_broker_setting("rsm.config.bucket"));
        assert!(is_kafka_broker_setting("config.providers.file.class"));
    }

    #[test]
    fn edit_distance_counts_edits_and_swaps() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("num.partitons", "num.partitions"), 1);
    }

    #[test]
    fn suggestions_find_the_likely_name() {
        assert_eq!(suggest("num.partitons").as_deref(), Some("num.partitions"));
        assert_eq!(suggest("log.dirss").as_deref(), Some("log.dirs"));
        assert_eq!(
            suggest("listener.name.x.ssl.keystore.locaton").as_deref(),
            Some("listener.name.x.ssl.keystore.location")
        );
        assert_eq!(suggest("completely.unrelated.words"), None);
    }
}
