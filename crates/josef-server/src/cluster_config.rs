//! The settings of a node in a KRaft-style cluster (`process.roles` and what goes with it), with
//! Kafka's names and defaults (`KRaftConfigs`, `QuorumConfig`, `ReplicationConfigs`).
//!
//! Without `process.roles` the broker is the single-node broker and none of this is in force.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::config::{ConfigError, ConfigWarning, Listener, Props};

/// The settings that only a cluster node (one with `process.roles`) uses; on a single node each
/// one given is reported as not used.
pub const CLUSTER_SETTINGS: &[&str] = &[
    "broker.heartbeat.interval.ms",
    "broker.session.timeout.ms",
    "controller.listener.names",
    "controller.quorum.bootstrap.servers",
    "controller.quorum.election.timeout.ms",
    "controller.quorum.request.timeout.ms",
    "controller.quorum.voters",
    "controlled.shutdown.enable",
    "controlled.shutdown.max.retries",
    "controlled.shutdown.retry.backoff.ms",
    "auto.leader.rebalance.enable",
    "initial.broker.registration.timeout.ms",
    "inter.broker.listener.name",
    "leader.imbalance.check.interval.seconds",
    "leader.imbalance.per.broker.percentage",
    "metadata.log.dir",
    "metadata.log.max.record.bytes.between.snapshots",
    "metadata.log.max.snapshot.interval.ms",
    "metadata.log.segment.bytes",
    "metadata.log.segment.min.bytes",
    "replica.fetch.backoff.ms",
    "replica.fetch.max.bytes",
    "replica.fetch.min.bytes",
    "replica.fetch.response.max.bytes",
    "replica.fetch.wait.max.ms",
    "replica.lag.time.max.ms",
    "security.inter.broker.protocol",
    "unclean.leader.election.enable",
];

/// Why a [`CLUSTER_SETTINGS`] name has no effect on a single node.
pub const SINGLE_NODE: &str = "process.roles is not set, so this is a single node";

/// A role of `process.roles`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProcessRole {
    /// Serves clients and hosts partition replicas.
    Broker,
    /// A voter of the metadata quorum; the active one is the controller.
    Controller,
}

/// One entry of `controller.quorum.voters`: `id@host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Voter {
    /// The voter's `node.id`.
    pub id: i32,
    /// Its CONTROLLER listener host.
    pub host: String,
    /// Its CONTROLLER listener port.
    pub port: u16,
}

impl Voter {
    /// `host:port`.
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// Parses `controller.quorum.voters` (`1@host:port,2@host:port`).
pub fn parse_voters(value: &str) -> Result<Vec<Voter>, ConfigError> {
    let invalid = |reason: &str| ConfigError::Invalid {
        key: "controller.quorum.voters".to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    };
    let mut out: Vec<Voter> = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (id, addr) = item
            .split_once('@')
            .ok_or_else(|| invalid("expected id@host:port"))?;
        let id: i32 = id
            .trim()
            .parse()
            .map_err(|_| invalid("voter id is not a number"))?;
        let (host, port) = addr
            .rsplit_once(':')
            .ok_or_else(|| invalid("expected id@host:port"))?;
        let port: u16 = port.parse().map_err(|_| invalid("port is not 1..65535"))?;
        if id < 0 || port == 0 {
            return Err(invalid("voter ids are >= 0 and ports are not 0"));
        }
        if out.iter().any(|v| v.id == id) {
            return Err(invalid("a voter id is listed twice"));
        }
        out.push(Voter {
            id,
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
        });
    }
    if out.is_empty() {
        return Err(invalid("no voter"));
    }
    Ok(out)
}

/// `controller.quorum.bootstrap.servers` without `controller.quorum.voters` (KIP-853's dynamic
/// quorum, as Kafka 4's stock files have it): Josef has a static quorum only, so it takes the
/// one case it can read without the voter ids that Kafka keeps in its formatted storage: a
/// controller whose bootstrap list is just its own CONTROLLER listener, which is what
/// `kafka-storage.sh format --standalone` makes of it (a quorum of this node alone).
fn standalone_voter(
    bootstrap: &str,
    node_id: i32,
    is_controller: bool,
    listeners: &[Listener],
    controller_listener_names: &[String],
) -> Result<String, ConfigError> {
    let key = "controller.quorum.bootstrap.servers";
    let entries: Vec<&str> = bootstrap
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let need_voters = || {
        Props::invalid(
            key,
            bootstrap,
            "dynamic quorums (KIP-853) are not supported: Josef needs the voters' ids; \
             list controller.quorum.voters (id@host:port,...) instead",
        )
    };
    let [entry] = entries[..] else {
        return Err(need_voters());
    };
    let (host, port) = entry.rsplit_once(':').ok_or_else(need_voters)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = port.parse().map_err(|_| need_voters())?;
    // Its own listener: the same port, and the same host or a loopback name (a listener bound
    // to all interfaces answers on loopback too).
    let loopback = matches!(host, "localhost" | "::1") || host.starts_with("127.");
    let own = is_controller
        && listeners
            .iter()
            .filter(|l| controller_listener_names.contains(&l.name))
            .any(|l| l.port == port && (l.host == host || loopback));
    if !own {
        return Err(need_voters());
    }
    Ok(format!("{node_id}@{entry}"))
}

/// Cluster settings, present when `process.roles` is set.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// `process.roles`.
    pub roles: BTreeSet<ProcessRole>,
    /// `controller.quorum.voters`.
    pub voters: Vec<Voter>,
    /// `controller.listener.names` (upper case).
    pub controller_listener_names: Vec<String>,
    /// The CONTROLLER listeners this node binds (controller role only).
    pub controller_listeners: Vec<Listener>,
    /// `inter.broker.listener.name` (default PLAINTEXT).
    pub inter_broker_listener_name: String,
    /// `metadata.log.dir` (default: the first log dir).
    pub metadata_log_dir: Option<PathBuf>,
    /// `broker.session.timeout.ms` (9000).
    pub broker_session_timeout_ms: i64,
    /// `broker.heartbeat.interval.ms` (2000).
    pub broker_heartbeat_interval_ms: i64,
    /// `initial.broker.registration.timeout.ms` (60000).
    pub initial_broker_registration_timeout_ms: i64,
    /// `controller.quorum.election.timeout.ms` (1000).
    pub quorum_election_timeout_ms: i64,
    /// `controller.quorum.fetch.timeout.ms` (2000).
    pub quorum_fetch_timeout_ms: i64,
    /// `controller.quorum.request.timeout.ms` (2000).
    pub quorum_request_timeout_ms: i64,
    /// `metadata.max.idle.interval.ms` (500).
    pub metadata_max_idle_interval_ms: i64,
    /// `metadata.log.max.record.bytes.between.snapshots` (20 MiB); see
    /// [`ClusterConfig::snapshot_every_n_entries`] for how it is applied.
    pub metadata_log_max_record_bytes_between_snapshots: i64,
    /// `metadata.log.max.snapshot.interval.ms` (3600000; 0 = no time-based snapshot).
    pub metadata_log_max_snapshot_interval_ms: i64,
    /// `metadata.log.segment.bytes`: the size at which a metadata log segment is closed; whole
    /// segments below the snapshot are deleted. Josef's default is 8 MiB, not Kafka's 1 GiB,
    /// because the log after the last purge is also held in memory (josef-quorum). At least
    /// `metadata.log.segment.min.bytes` (Kafka's internal floor, 8 MiB), as in Kafka.
    pub metadata_log_segment_bytes: i64,
    /// `replica.lag.time.max.ms` (30000).
    pub replica_lag_time_max_ms: i64,
    /// `replica.fetch.wait.max.ms` (500).
    pub replica_fetch_wait_max_ms: i32,
    /// `replica.fetch.min.bytes` (1).
    pub replica_fetch_min_bytes: i32,
    /// `replica.fetch.max.bytes` (1048576).
    pub replica_fetch_max_bytes: i32,
    /// `replica.fetch.response.max.bytes` (10485760).
    pub replica_fetch_response_max_bytes: i32,
    /// `replica.fetch.backoff.ms` (1000).
    pub replica_fetch_backoff_ms: i64,
    /// `num.replica.fetchers` (1).
    pub num_replica_fetchers: i32,
    /// `unclean.leader.election.enable` (false).
    pub unclean_leader_election_enable: bool,
    /// `auto.leader.rebalance.enable` (true).
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds` (300).
    pub leader_imbalance_check_interval_seconds: i64,
    /// `leader.imbalance.per.broker.percentage` (10): the auto rebalance's per-broker threshold
    /// (the ZooKeeper-era controller's rule; KRaft has none).
    pub leader_imbalance_per_broker_percentage: i32,
    /// `controlled.shutdown.enable` (true).
    pub controlled_shutdown_enable: bool,
    /// `controlled.shutdown.max.retries` (3).
    pub controlled_shutdown_max_retries: i32,
    /// `controlled.shutdown.retry.backoff.ms` (5000).
    pub controlled_shutdown_retry_backoff_ms: i64,
}

impl ClusterConfig {
    /// Whether this node is a broker.
    pub fn is_broker(&self) -> bool {
        self.roles.contains(&ProcessRole::Broker)
    }

    /// Whether this node is a voter of the metadata quorum.
    pub fn is_controller(&self) -> bool {
        self.roles.contains(&ProcessRole::Controller)
    }

    /// The entries between two snapshots of the metadata log, from
    /// `metadata.log.max.record.bytes.between.snapshots`. openraft (the quorum's engine) counts
    /// entries, not bytes, so the bytes are approximated as [`ASSUMED_METADATA_ENTRY_BYTES`]
    /// per entry (one entry is one controller write): Kafka's default 20 MiB gives 10240
    /// entries. A metadata log of larger writes (topics with many partitions) snapshots later
    /// in bytes than Kafka would, one of smaller writes sooner.
    pub fn snapshot_every_n_entries(&self) -> u64 {
        (self.metadata_log_max_record_bytes_between_snapshots.max(1) as u64)
            .div_ceil(ASSUMED_METADATA_ENTRY_BYTES)
    }

    /// The entries kept in the log below the newest snapshot, so a voter a little behind
    /// catches up from the log rather than a whole snapshot: 1000, or one snapshot interval
    /// when that is shorter. Kafka instead keeps older snapshots and the log between them
    /// (`metadata.max.retention.bytes` / `.ms`); Josef keeps the newest snapshot only.
    pub fn entries_kept_after_snapshot(&self) -> u64 {
        self.snapshot_every_n_entries().min(1000)
    }
}

/// The size of one metadata log entry assumed by [`ClusterConfig::snapshot_every_n_entries`].
pub const ASSUMED_METADATA_ENTRY_BYTES: u64 = 2048;

/// Reads the cluster settings out of `p`. `listeners` are all configured listeners; the
/// CONTROLLER ones are returned in [`ClusterConfig::controller_listeners`] and must be removed
/// from the client listeners by the caller. `None` when `process.roles` is unset or empty.
pub(crate) fn parse(
    p: &mut Props,
    node_id: i32,
    listeners: &[Listener],
    warnings: &mut Vec<ConfigWarning>,
) -> Result<Option<ClusterConfig>, ConfigError> {
    // Parsed whether or not the node is clustered, so a single node accepts them too.
    let broker_session_timeout_ms = p.num("broker.session.timeout.ms", 9000, 1)?;
    let broker_heartbeat_interval_ms = p.num("broker.heartbeat.interval.ms", 2000, 1)?;
    let initial_broker_registration_timeout_ms =
        p.num("initial.broker.registration.timeout.ms", 60_000, 1)?;
    let quorum_election_timeout_ms = p.num("controller.quorum.election.timeout.ms", 1000, 1)?;
    let quorum_fetch_timeout_ms = p.num("controller.quorum.fetch.timeout.ms", 2000, 1)?;
    let quorum_request_timeout_ms = p.num("controller.quorum.request.timeout.ms", 2000, 1)?;
    let _linger: i64 = p.num("controller.quorum.append.linger.ms", 25, 0)?;
    let _retry: i64 = p.num("controller.quorum.retry.backoff.ms", 20, 0)?;
    let metadata_max_idle_interval_ms = p.num("metadata.max.idle.interval.ms", 500, 0)?;
    let metadata_log_dir = p.take("metadata.log.dir").map(PathBuf::from);
    let metadata_log_max_record_bytes_between_snapshots = p.num(
        "metadata.log.max.record.bytes.between.snapshots",
        20 * 1024 * 1024,
        1,
    )?;
    let metadata_log_max_snapshot_interval_ms =
        p.num("metadata.log.max.snapshot.interval.ms", 3_600_000, 0)?;
    let metadata_log_segment_min_bytes: i64 =
        p.num("metadata.log.segment.min.bytes", 8 * 1024 * 1024, 1)?;
    let metadata_log_segment_bytes: i64 =
        p.num("metadata.log.segment.bytes", 8 * 1024 * 1024, 1)?;
    if metadata_log_segment_bytes < metadata_log_segment_min_bytes {
        return Err(Props::invalid(
            "metadata.log.segment.bytes",
            &metadata_log_segment_bytes.to_string(),
            format!("below metadata.log.segment.min.bytes ({metadata_log_segment_min_bytes})"),
        ));
    }
    let replica_lag_time_max_ms = p.num("replica.lag.time.max.ms", 30_000, 1)?;
    let replica_fetch_wait_max_ms = p.num("replica.fetch.wait.max.ms", 500, 0)?;
    let replica_fetch_min_bytes = p.num("replica.fetch.min.bytes", 1, 1)?;
    let replica_fetch_max_bytes = p.num("replica.fetch.max.bytes", 1_048_576, 0)?;
    let replica_fetch_response_max_bytes =
        p.num("replica.fetch.response.max.bytes", 10_485_760, 0)?;
    let replica_fetch_backoff_ms = p.num("replica.fetch.backoff.ms", 1000, 0)?;
    let _socket: i64 = p.num("replica.socket.timeout.ms", 30_000, 1)?;
    let num_replica_fetchers = p.num("num.replica.fetchers", 1, 1)?;
    let unclean_leader_election_enable = p.boolean("unclean.leader.election.enable", false)?;
    let auto_leader_rebalance_enable = p.boolean("auto.leader.rebalance.enable", true)?;
    let leader_imbalance_check_interval_seconds =
        p.num("leader.imbalance.check.interval.seconds", 300, 1)?;
    let leader_imbalance_per_broker_percentage =
        p.num("leader.imbalance.per.broker.percentage", 10, 0)?;
    let controlled_shutdown_enable = p.boolean("controlled.shutdown.enable", true)?;
    let controlled_shutdown_max_retries = p.num("controlled.shutdown.max.retries", 3, 0)?;
    let controlled_shutdown_retry_backoff_ms =
        p.num("controlled.shutdown.retry.backoff.ms", 5000, 0)?;
    // Kafka's `interBrokerListenerNameAndSecurityProtocol`: the listener by name, or by protocol
    // (whose listener has the protocol's name), never both.
    const BY_PROTOCOL: &str = "security.inter.broker.protocol";
    let inter_broker_listener_name = match (
        p.take("inter.broker.listener.name"),
        p.take(BY_PROTOCOL),
    ) {
        (Some(_), Some(protocol)) => {
            return Err(Props::invalid(
                BY_PROTOCOL,
                &protocol,
                "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.",
            ))
        }
        (Some(name), None) => name.trim().to_ascii_uppercase(),
        (None, Some(protocol)) => {
            crate::security_config::SecurityProtocol::from_name(protocol.trim())
                .ok_or_else(|| {
                    Props::invalid(
                        BY_PROTOCOL,
                        &protocol,
                        "not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
                    )
                })?
                .name()
                .to_string()
        }
        (None, None) => "PLAINTEXT".to_string(),
    };
    let controller_listener_names: Vec<String> = p
        .take("controller.listener.names")
        .map(|v| {
            v.split(',')
                .map(|s| s.trim().to_ascii_uppercase())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let voters_raw = p.take("controller.quorum.voters");
    let bootstrap_raw = p
        .take("controller.quorum.bootstrap.servers")
        .filter(|b| !b.trim().is_empty());
    let roles_raw = p.take("process.roles").unwrap_or_default();
    let mut roles = BTreeSet::new();
    for r in roles_raw
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        match r.to_ascii_lowercase().as_str() {
            "broker" => roles.insert(ProcessRole::Broker),
            "controller" => roles.insert(ProcessRole::Controller),
            _ => {
                return Err(Props::invalid(
                    "process.roles",
                    &roles_raw,
                    "expected broker, controller or broker,controller",
                ))
            }
        };
    }
    if roles.is_empty() {
        return Ok(None);
    }
    let is_controller = roles.contains(&ProcessRole::Controller);
    let voters_raw = match (voters_raw, bootstrap_raw) {
        (Some(v), Some(_)) => {
            warnings.push(ConfigWarning::Shadowed {
                key: "controller.quorum.bootstrap.servers".into(),
                by: "controller.quorum.voters",
            });
            v
        }
        (Some(v), None) => v,
        (None, Some(b)) => standalone_voter(
            &b,
            node_id,
            is_controller,
            listeners,
            &controller_listener_names,
        )?,
        (None, None) => {
            return Err(Props::invalid(
                "controller.quorum.voters",
                "",
                "required when process.roles is set",
            ))
        }
    };
    let voters = parse_voters(&voters_raw)?;
    if controller_listener_names.is_empty() {
        return Err(Props::invalid(
            "controller.listener.names",
            "",
            "required when process.roles is set",
        ));
    }
    let controller_listeners: Vec<Listener> = listeners
        .iter()
        .filter(|l| controller_listener_names.contains(&l.name))
        .cloned()
        .collect();
    if is_controller {
        if controller_listeners.is_empty() {
            return Err(Props::invalid(
                "listeners",
                "",
                "a controller must list its controller.listener.names listener in listeners",
            ));
        }
        if !voters.iter().any(|v| v.id == node_id) {
            return Err(Props::invalid(
                "controller.quorum.voters",
                &voters_raw,
                format!("node.id {node_id} has the controller role but is not a voter"),
            ));
        }
    } else {
        if !controller_listeners.is_empty() {
            return Err(Props::invalid(
                "listeners",
                "",
                "a broker-only node must not list a controller listener",
            ));
        }
        if voters.iter().any(|v| v.id == node_id) {
            return Err(Props::invalid(
                "controller.quorum.voters",
                &voters_raw,
                format!("node.id {node_id} is a voter but has no controller role"),
            ));
        }
    }
    let is_broker = roles.contains(&ProcessRole::Broker);
    if is_broker
        && !listeners
            .iter()
            .any(|l| l.name == inter_broker_listener_name)
    {
        return Err(Props::invalid(
            "inter.broker.listener.name",
            &inter_broker_listener_name,
            "not one of the listeners",
        ));
    }
    Ok(Some(ClusterConfig {
        roles,
        voters,
        controller_listener_names,
        controller_listeners,
        inter_broker_listener_name,
        metadata_log_dir,
        broker_session_timeout_ms,
        broker_heartbeat_interval_ms,
        initial_broker_registration_timeout_ms,
        quorum_election_timeout_ms,
        quorum_fetch_timeout_ms,
        quorum_request_timeout_ms,
        metadata_max_idle_interval_ms,
        metadata_log_max_record_bytes_between_snapshots,
        metadata_log_max_snapshot_interval_ms,
        metadata_log_segment_bytes,
        replica_lag_time_max_ms,
        replica_fetch_wait_max_ms,
        replica_fetch_min_bytes,
        replica_fetch_max_bytes,
        replica_fetch_response_max_bytes,
        replica_fetch_backoff_ms,
        num_replica_fetchers,
        unclean_leader_election_enable,
        auto_leader_rebalance_enable,
        leader_imbalance_check_interval_seconds,
        leader_imbalance_per_broker_percentage,
        controlled_shutdown_enable,
        controlled_shutdown_max_retries,
        controlled_shutdown_retry_backoff_ms,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BrokerConfig;
    use std::collections::BTreeMap;

    fn node(id: i32, roles: &str) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        let port = |base: u16| (base + id as u16 * 10).to_string();
        m.insert("process.roles".into(), roles.into());
        m.insert("node.id".into(), id.to_string());
        m.insert(
            "controller.quorum.voters".into(),
            "1@127.0.0.1:19093,2@127.0.0.1:29093,3@127.0.0.1:39093".into(),
        );
        let mut listeners = format!("PLAINTEXT://127.0.0.1:{}", port(19092));
        if roles.contains("controller") {
            listeners.push_str(&format!(",CONTROLLER://127.0.0.1:{}", port(19093)));
        }
        m.insert("listeners".into(), listeners);
        m.insert("controller.listener.names".into(), "CONTROLLER".into());
        m.insert("inter.broker.listener.name".into(), "PLAINTEXT".into());
        m.insert(
            "listener.security.protocol.map".into(),
            "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT".into(),
        );
        m
    }

    #[test]
    fn combined_node_of_the_contract_parses() {
        let c = BrokerConfig::from_properties(node(1, "broker,controller")).unwrap();
        let cl = c.cluster.as_ref().unwrap();
        assert!(cl.is_broker() && cl.is_controller());
        assert_eq!(cl.voters.len(), 3);
        assert_eq!(cl.voters[1].address(), "127.0.0.1:29093");
        assert_eq!(cl.controller_listeners.len(), 1);
        assert_eq!(
            c.listeners.len(),
            1,
            "the CONTROLLER listener is not a client listener"
        );
        assert_eq!(cl.broker_session_timeout_ms, 9000);
        assert_eq!(cl.replica_lag_time_max_ms, 30_000);
    }

    #[test]
    fn the_inter_broker_listener_is_named_or_given_by_its_protocol_not_both() {
        let mut m = node(1, "broker,controller");
        m.remove("inter.broker.listener.name");
        m.insert("security.inter.broker.protocol".into(), "plaintext".into());
        let c = BrokerConfig::from_properties(m.clone()).unwrap();
        assert_eq!(c.cluster.unwrap().inter_broker_listener_name, "PLAINTEXT");
        m.insert("security.inter.broker.protocol".into(), "SSL".into());
        let e = BrokerConfig::from_properties(m.clone()).unwrap_err();
        assert!(e.to_string().contains("not one of the listeners"), "{e}");
        m.insert("security.inter.broker.protocol".into(), "TLS".into());
        assert!(BrokerConfig::from_properties(m.clone()).is_err());
        m.insert("security.inter.broker.protocol".into(), "PLAINTEXT".into());
        m.insert("inter.broker.listener.name".into(), "PLAINTEXT".into());
        let e = BrokerConfig::from_properties(m).unwrap_err();
        assert!(e.to_string().contains("Only one of"), "{e}");
    }

    #[test]
    fn a_controller_must_be_a_voter_and_a_broker_only_node_must_not() {
        let e = BrokerConfig::from_properties(node(4, "broker,controller")).unwrap_err();
        assert!(e.to_string().contains("not a voter"), "{e}");
        let e = BrokerConfig::from_properties(node(2, "broker")).unwrap_err();
        assert!(e.to_string().contains("no controller role"), "{e}");
        let c = BrokerConfig::from_properties(node(5, "broker")).unwrap();
        assert!(!c.cluster.unwrap().is_controller());
    }

    #[test]
    fn bad_voters_and_roles_are_rejected() {
        assert!(parse_voters("1@h:1,1@h:2").is_err());
        assert!(parse_voters("x@h:1").is_err());
        assert!(parse_voters("1@h").is_err());
        assert!(parse_voters("").is_err());
        let mut m = node(1, "broker,controller");
        m.insert("process.roles".into(), "broker,zookeeper".into());
        assert!(BrokerConfig::from_properties(m).is_err());
        let mut m = node(1, "broker,controller");
        m.remove("controller.quorum.voters");
        assert!(BrokerConfig::from_properties(m).is_err());
    }

    #[test]
    fn a_controller_bootstrapping_from_itself_is_a_standalone_quorum() {
        let mut m = node(1, "broker,controller");
        m.remove("controller.quorum.voters");
        m.insert(
            "controller.quorum.bootstrap.servers".into(),
            "localhost:19103".into(),
        );
        let c = BrokerConfig::from_properties(m.clone()).unwrap();
        let cl = c.cluster.unwrap();
        assert_eq!(
            cl.voters,
            [Voter {
                id: 1,
                host: "localhost".into(),
                port: 19103
            }]
        );
        // Another node's address, or several, need the voter ids.
        m.insert(
            "controller.quorum.bootstrap.servers".into(),
            "localhost:29093".into(),
        );
        let e = BrokerConfig::from_properties(m.clone()).unwrap_err();
        assert!(e.to_string().contains("KIP-853"), "{e}");
        m.insert(
            "controller.quorum.bootstrap.servers".into(),
            "localhost:19103,localhost:29093".into(),
        );
        assert!(BrokerConfig::from_properties(m).is_err());
        let mut b = node(5, "broker");
        b.remove("controller.quorum.voters");
        b.insert(
            "controller.quorum.bootstrap.servers".into(),
            "localhost:19093".into(),
        );
        assert!(BrokerConfig::from_properties(b).is_err());
    }

    #[test]
    fn voters_beat_bootstrap_servers() {
        let mut m = node(1, "broker,controller");
        m.insert(
            "controller.quorum.bootstrap.servers".into(),
            "localhost:1".into(),
        );
        let (c, w) = BrokerConfig::from_properties_with_warnings(m).unwrap();
        assert_eq!(c.cluster.unwrap().voters.len(), 3);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].key(), "controller.quorum.bootstrap.servers");
    }

    #[test]
    fn snapshot_settings_follow_kafka_names() {
        let c = BrokerConfig::from_properties(node(1, "broker,controller")).unwrap();
        let cl = c.cluster.unwrap();
        assert_eq!(cl.metadata_log_max_record_bytes_between_snapshots, 20 << 20);
        assert_eq!(cl.snapshot_every_n_entries(), 10_240);
        assert_eq!(cl.entries_kept_after_snapshot(), 1000);
        assert_eq!(cl.metadata_log_max_snapshot_interval_ms, 3_600_000);
        assert_eq!(cl.metadata_log_segment_bytes, 8 << 20);

        let mut m = node(1, "broker,controller");
        m.insert(
            "metadata.log.max.record.bytes.between.snapshots".into(),
            "20000".into(),
        );
        m.insert("metadata.log.max.snapshot.interval.ms".into(), "0".into());
        m.insert("metadata.log.segment.min.bytes".into(), "4096".into());
        m.insert("metadata.log.segment.bytes".into(), "4096".into());
        let cl = BrokerConfig::from_properties(m.clone())
            .unwrap()
            .cluster
            .unwrap();
        assert_eq!(cl.snapshot_every_n_entries(), 10);
        assert_eq!(cl.entries_kept_after_snapshot(), 10);
        assert_eq!(cl.metadata_log_max_snapshot_interval_ms, 0);
        assert_eq!(cl.metadata_log_segment_bytes, 4096);

        // As in Kafka, a segment size below the floor is refused.
        m.remove("metadata.log.segment.min.bytes");
        let e = BrokerConfig::from_properties(m.clone()).unwrap_err();
        assert!(
            e.to_string().contains("metadata.log.segment.min.bytes"),
            "{e}"
        );
        m.insert(
            "metadata.log.max.record.bytes.between.snapshots".into(),
            "0".into(),
        );
        assert!(BrokerConfig::from_properties(m).is_err());
    }

    #[test]
    fn without_process_roles_the_node_is_single() {
        let c = BrokerConfig::from_properties(BTreeMap::new()).unwrap();
        assert!(c.cluster.is_none());
    }
}
