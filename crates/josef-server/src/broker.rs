//! The running broker: identity, listeners, request handler, background work, shutdown order.

use std::sync::Arc;
use std::time::Duration;

use crate::config::BrokerConfig;
use crate::connection::ConnectionLimits;
use crate::meta::MetaError;
use crate::server::{bind, BoundListener, Server};
use crate::state::BrokerState;

/// Why the broker could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A log dir's identity is missing or wrong.
    #[error(transparent)]
    Meta(#[from] MetaError),
    /// The logs or topic metadata could not be opened.
    #[error("cannot open the logs: {0}")]
    Storage(String),
    /// A listener could not be bound.
    #[error("{0}")]
    Bind(std::io::Error),
    /// A TLS or SASL listener could not be set up (keystore, JAAS config).
    #[error("{0}")]
    Security(String),
    /// The cluster side (quorum, controller) could not start.
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterStartError),
}

/// A started broker.
pub struct Broker {
    server: Server<BrokerState>,
    cluster: Option<Arc<crate::cluster::ClusterNode>>,
    background: tokio::task::JoinHandle<()>,
    /// Forgets idle producer ids every `producer.id.expiration.check.interval.ms`.
    producer_expiry: tokio::task::JoinHandle<()>,
    /// The log cleaner (none with `log.cleaner.enable=false`).
    log_cleaner: Option<Arc<crate::log_cleaner::LogCleaner>>,
    /// The task running the log cleaner's `log.cleaner.threads` workers.
    cleaners: Vec<tokio::task::JoinHandle<()>>,
    /// Writes the log dirs' checkpoints periodically.
    checkpointer: tokio::task::JoinHandle<()>,
    /// The group and the transaction coordinator tickers.
    tickers: [tokio::task::JoinHandle<()>; 2],
    /// Expires delayed fetches at their max wait.
    fetch_reaper: josef_timer::tokio_driver::TokioDriver,
    /// `/metrics`, when `prometheus.listener` is set.
    metrics: Option<crate::metrics::MetricsServer>,
}

impl Broker {
    /// Checks the log dirs, opens (and recovers) the logs, binds the listeners and serves.
    pub async fn start(config: BrokerConfig) -> Result<Broker, StartError> {
        // Before the partitions open: they look their counters up then.
        let metrics_handle = config
            .prometheus_listener
            .is_some()
            .then(crate::metrics::install);
        let cluster = match &config.cluster {
            Some(cl) => {
                let node = crate::cluster::ClusterNode::start(&config).await?;
                let wait = Duration::from_millis(cl.initial_broker_registration_timeout_ms as u64);
                let id = node.wait_cluster_id(wait).await?;
                Some((node, id))
            }
            None => None,
        };
        let metas = crate::meta::ensure_meta_with(
            &config.log_dirs,
            config.node_id,
            cluster.as_ref().map(|(_, id)| id.as_str()),
        )?;
        let cluster = cluster.map(|(node, _)| node);
        let config = Arc::new(config);
        let cluster_id = metas[0].cluster_id.clone();
        let state = {
            let config = config.clone();
            let cluster = cluster.clone();
            tokio::task::spawn_blocking(move || BrokerState::open(config, cluster_id, cluster))
                .await
                .map_err(|e| StartError::Storage(e.to_string()))?
                .map_err(StartError::Storage)?
        };
        let bound = bind(&config).await.map_err(StartError::Bind)?;
        let metrics_listener = match (&config.prometheus_listener, metrics_handle) {
            (Some((host, port)), Some(_)) => Some(
                josef_metrics::bind(host, *port)
                    .await
                    .map_err(StartError::Bind)?,
            ),
            _ => None,
        };
        let limits = ConnectionLimits {
            max_request_bytes: config.socket_request_max_bytes,
            idle_timeout: (config.connections_max_idle_ms >= 0)
                .then(|| Duration::from_millis(config.connections_max_idle_ms as u64)),
        };
        let state = Arc::new(state);
        tracing::info!(cluster_id = %state.cluster_id, node_id = config.node_id, "broker started");
        let background = every(
            &state,
            config.log_retention_check_interval_ms.max(100),
            |s| s.topics.run_retention(),
        );
        let producer_expiry = every(
            &state,
            config.producer_id_expiration_check_interval_ms,
            |s| {
                s.topics.remove_expired_producers();
            },
        );
        let log_cleaner = config
            .log_cleaner_enable
            .then(|| Arc::new(crate::log_cleaner::LogCleaner::new()));
        let cleaners: Vec<_> = log_cleaner
            .iter()
            .map(|c| {
                c.run(
                    state.topics.clone(),
                    state.dynamic.cleaner_threads(),
                    Duration::from_millis(config.log_cleaner_backoff_ms.max(0) as u64),
                )
            })
            .collect();
        // Kafka has a task per file; both files are written at the shorter of the two intervals
        // here, each only when it changed.
        let checkpointer = every(
            &state,
            config
                .log_flush_offset_checkpoint_interval_ms
                .min(config.log_flush_start_offset_checkpoint_interval_ms),
            |s| s.topics.checkpoint(),
        );
        // One ticker per coordinator (Kafka gives each coordinator runtime its own timer): the
        // transaction coordinator's tick may wait up to a controller round trip for its lock
        // (a producer-id block is fetched under it), and the group coordinator's heartbeat
        // expirations, shard loads and unloads must not wait behind it.
        let ticker = {
            let (groups, txns) = (state.clone(), state.clone());
            let every = Duration::from_millis(crate::kit::coordinators::COORDINATOR_TICK_MS);
            let group_ticker = tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                loop {
                    tick.tick().await;
                    groups.tick_group_coordinator(crate::topics::now_ms());
                }
            });
            let txn_ticker = tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                loop {
                    tick.tick().await;
                    txns.tick_txn_coordinator(crate::topics::now_ms());
                }
            });
            [group_ticker, txn_ticker]
        };
        let fetch_reaper = josef_timer::tokio_driver::spawn_reaper(state.fetch_purgatory.clone());
        if let Some(node) = &cluster {
            crate::quotas::spawn_image_watch(state.quotas.clone(), node.log.subscribe_image());
            crate::dynamic_config::spawn_image_watch(state.clone(), node.log.subscribe_image());
        }
        let security = {
            let state = state.clone();
            crate::server::listener_security(&config, Arc::new(move || state.metadata_image()))
                .map_err(StartError::Security)?
        };
        state.dynamic.register_tls(
            security
                .iter()
                .filter_map(|(name, s)| Some((name.clone(), s.tls.clone()?))),
        );
        let connection_quotas = crate::connection_quotas::ConnectionQuotas::new(
            config.connection_quotas.clone(),
            config.quota.client,
        );
        {
            let quotas = state.quotas.clone();
            connection_quotas.set_ip_rate_check(Arc::new(move |ip, now_ms| {
                quotas.ip_connection_throttle(ip, now_ms)
            }));
        }
        let server =
            Server::start_secure(bound, state.clone(), limits, security, connection_quotas);
        let metrics = match (metrics_listener, metrics_handle) {
            (Some(l), Some(h)) => {
                Some(crate::metrics::serve(l, h, state.clone()).map_err(StartError::Bind)?)
            }
            _ => None,
        };
        if let Some(node) = &cluster {
            if node.config.is_broker() {
                let listeners = server
                    .listeners()
                    .iter()
                    .map(|l| {
                        let (host, port) = config.advertised_for(&l.name, l.addr.port());
                        (l.name.clone(), host, port)
                    })
                    .collect();
                let info = crate::cluster::lifecycle::RegistrationInfo {
                    node_id: config.node_id,
                    cluster_id: state.cluster_id.clone(),
                    listeners,
                    rack: config.broker_rack.clone(),
                    log_dirs: metas
                        .iter()
                        .filter_map(|m| crate::meta::uuid_from_base64(&m.directory_id))
                        .map(josef_protocol::Uuid::from_bytes)
                        .collect(),
                    heartbeat_interval: Duration::from_millis(
                        node.config.broker_heartbeat_interval_ms as u64,
                    ),
                    session_timeout: Duration::from_millis(
                        node.config.broker_session_timeout_ms as u64,
                    ),
                };
                node.start_broker(&state, info);
            }
        }
        Ok(Broker {
            metrics,
            tickers: ticker,
            fetch_reaper,
            server,
            cluster,
            background,
            producer_expiry,
            log_cleaner,
            cleaners,
            checkpointer,
        })
    }

    /// The bound listeners (the real port when 0 was configured).
    pub fn listeners(&self) -> &[BoundListener] {
        match &self.cluster {
            // A controller-only node has no client listener: its CONTROLLER one is what it serves.
            Some(c) if self.server.listeners().is_empty() => &c.controller_listeners,
            _ => self.server.listeners(),
        }
    }

    /// The address `/metrics` is served on (`prometheus.listener`, its port resolved), if set.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.metrics.as_ref().map(|m| m.addr())
    }

    /// Resolves, with the reason, when this node's metadata quorum stopped on its own (a write
    /// or fsync of the metadata log failed): the node can then take no part in the quorum while
    /// its peers may still count on it (its controller role, its votes). Kafka halts the process
    /// on such a fault; the binary does. Never resolves on a single node or a broker-only node.
    pub async fn fatal(&self) -> String {
        if let Some(q) = self.cluster.as_ref().and_then(|c| c.quorum.as_ref()) {
            if let Some(why) = q.wait_fatal().await {
                return why;
            }
        }
        std::future::pending().await
    }

    /// The cluster side of the node, if it is part of a cluster.
    pub fn cluster(&self) -> Option<&Arc<crate::cluster::ClusterNode>> {
        self.cluster.as_ref()
    }

    /// The log cleaner, unless `log.cleaner.enable=false`.
    pub fn log_cleaner(&self) -> Option<&Arc<crate::log_cleaner::LogCleaner>> {
        self.log_cleaner.as_ref()
    }

    /// The shared state (for tests and embedding).
    pub fn state(&self) -> &Arc<BrokerState> {
        self.server.handler()
    }

    /// Graceful shutdown: stop accepting, finish in-flight requests, then flush and close every
    /// log, snapshot producer state, write each log dir's checkpoints and mark the dirs clean.
    pub async fn shutdown(self) {
        // Leaderships move away while this node still serves (Kafka's controlled shutdown).
        if let Some(c) = &self.cluster {
            c.shutdown().await;
        }
        let state = self.server.handler().clone();
        // Produces parked for followers that will not come (controlled shutdown off or failed,
        // followers paused or gone) would wait out their timeout, past the connections' grace
        // period, and hold their partitions when the logs close, which then are not marked clean.
        answer_parked_requests(&state);
        self.server.stop().await;
        if let Some(m) = self.metrics {
            m.stop().await;
        }
        self.background.abort();
        self.producer_expiry.abort();
        for c in &self.cleaners {
            c.abort();
        }
        self.checkpointer.abort();
        for t in &self.tickers {
            t.abort();
        }
        // Anything parked while the connections drained.
        answer_parked_requests(&state);
        // The coordinators go before the logs (Kafka's shutdown order): a loaded shard holds its
        // partition, which could then not close, and its dir would not be marked clean.
        state.shutdown_coordinators();
        self.fetch_reaper.shutdown().await;
        let _ = tokio::task::spawn_blocking(move || state.topics.shutdown()).await;
    }
}

/// Completes every fetch and acks=−1 produce parked on this node's partitions (see
/// [`crate::delayed_fetch::complete_parked`]).
fn answer_parked_requests(state: &BrokerState) {
    let keys: Vec<_> = state
        .topics
        .all()
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (p.topic_id, p.index)))
        .collect();
    let answered = crate::delayed_fetch::complete_parked(&state.fetch_purgatory, keys);
    if answered > 0 {
        tracing::info!(answered, "answered parked requests at shutdown");
    }
}

/// Runs `work` on a blocking thread every `period_ms` (at least 1 ms; the first run one period
/// after the start), until the task is aborted.
fn every(
    state: &Arc<BrokerState>,
    period_ms: i64,
    work: fn(&BrokerState),
) -> tokio::task::JoinHandle<()> {
    let state = state.clone();
    let period = Duration::from_millis(period_ms.max(1) as u64);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.tick().await;
        loop {
            tick.tick().await;
            let s = state.clone();
            let _ = tokio::task::spawn_blocking(move || work(&s)).await;
        }
    })
}
