//! A node of a cluster (`process.roles` set): the metadata log, the quorum and the controller on
//! controller nodes, registration and heartbeats, and what the broker takes from the metadata
//! image. See `docs/cluster.md`.
//!
//! Start order (Kafka's `KafkaRaftServer`): the controller side first (CONTROLLER listener,
//! quorum, controller driver), then the broker waits for the cluster id from the metadata log,
//! checks it against meta.properties, opens its logs, binds its listeners and registers.

pub mod alter_partition;
pub mod broker_connections;
pub mod channel;
pub mod controlled_shutdown;
pub mod controller_apis;
pub mod driver;
pub mod event_loop;
pub mod fetcher_key;
pub mod lifecycle;
pub mod listener;
mod listener_sasl;
pub mod metadata_log;
mod observer;
mod out_of_range;
pub mod publisher;
pub mod replica_fetcher;
pub mod responses;
pub mod txn_marker_sender;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use josef_quorum::{MetadataQuorum, MetadataStateMachine, QuorumConfig};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::cluster_config::ClusterConfig;
use crate::config::BrokerConfig;
use crate::connection::ConnectionLimits;
use crate::server::BoundListener;
use channel::ControllerChannel;
use controlled_shutdown::ShutdownAttempts;
use driver::ControllerDriver;
use lifecycle::BrokerLifecycle;
use metadata_log::MetadataLog;

use crate::peer_connection::PeerConnector;

/// Why a cluster node could not start.
#[derive(Debug, thiserror::Error)]
pub enum ClusterStartError {
    /// The CONTROLLER listener could not be bound.
    #[error("cannot bind the controller listener {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The metadata quorum did not start.
    #[error("metadata quorum: {0}")]
    Quorum(#[from] josef_quorum::QuorumError),
    /// The controller's event loop thread could not be started.
    #[error("cannot start the controller event loop: {0}")]
    EventLoop(std::io::Error),
    /// The TLS settings of the listener this node connects to cannot be loaded.
    #[error(transparent)]
    PeerSecurity(#[from] crate::peer_connection::PeerConnectorError),
    /// The SASL settings of a controller listener do not build (a PLAIN without users).
    #[error("controller listener {listener}: {source}")]
    ControllerSasl {
        /// The listener.
        listener: String,
        /// Why.
        source: crate::sasl_session::SaslConfigError,
    },
    /// No cluster id arrived in time.
    #[error("no cluster id in the metadata log after {0:?} (is a majority of controller.quorum.voters up?)")]
    NoClusterId(Duration),
}

/// Takes a block of producer ids from the controller (AllocateProducerIds, Kafka's
/// `RPCProducerIdManager`); blocks the calling thread, which must be a tokio worker.
pub fn allocate_producer_ids(node: &ClusterNode) -> std::io::Result<(i64, i64)> {
    use josef_protocol::messages::AllocateProducerIdsRequest;
    use josef_protocol::{RequestBody, ResponseBody};
    let req = AllocateProducerIdsRequest {
        broker_id: node.node_id,
        broker_epoch: node.lifecycle().map_or(-1, |l| l.broker_epoch()),
        ..Default::default()
    };
    let send = node.channel.send(
        RequestBody::AllocateProducerIds(req),
        0,
        Duration::from_secs(10),
    );
    let resp = tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(send));
    match resp {
        Ok(ResponseBody::AllocateProducerIds(r)) if r.error_code == 0 && r.producer_id_len > 0 => {
            Ok((r.producer_id_start, i64::from(r.producer_id_len)))
        }
        Ok(ResponseBody::AllocateProducerIds(r)) => Err(std::io::Error::other(format!(
            "AllocateProducerIds: error {}",
            r.error_code
        ))),
        Ok(_) => Err(std::io::Error::other(
            "AllocateProducerIds: unexpected answer",
        )),
        Err(e) => Err(std::io::Error::other(e.to_string())),
    }
}

/// Wraps a partition listener so that ISR changes the partition proposes (a follower caught up,
/// Kafka's `maybeExpandIsr`) are queued for the controller.
pub fn with_isr_change_sender(
    inner: josef_partition::AppendListener,
    node: Arc<ClusterNode>,
) -> josef_partition::AppendListener {
    Arc::new(
        move |p: &josef_partition::Partition, e: &josef_partition::PartitionEvent| {
            inner(p, e);
            if e.isr_change_proposed {
                if let Some(proposal) = p.pending_alter_partition() {
                    node.alter_partitions
                        .submit(&p.topic, p.topic_id, p.index, proposal);
                }
            }
        },
    )
}

/// The metadata log as josef-quorum's state machine.
struct LogStateMachine(Arc<MetadataLog>);

impl MetadataStateMachine for LogStateMachine {
    fn apply(&self, index: u64, term: u64, batch: &[Bytes]) {
        self.0.apply_batch(index, term, batch);
    }

    fn snapshot(&self) -> (u64, Vec<u8>) {
        self.0.snapshot()
    }

    fn install_snapshot(&self, last_index: u64, data: &[u8]) {
        self.0.install_snapshot(last_index, data);
    }
}

/// Raft connections from the CONTROLLER listener go to the quorum.
struct QuorumAcceptor(MetadataQuorum);

impl listener::RaftAcceptor for QuorumAcceptor {
    fn serve_raft(&self, stream: josef_quorum::QuorumStream, peer: String) {
        self.0.serve_stream(stream, peer);
    }

    fn serve_observer(&self, stream: josef_quorum::QuorumStream, peer: String) {
        self.0.serve_observer_stream(stream, peer);
    }
}

/// Dials the voters' controller listener for the quorum (Raft, observers) as every other
/// connection to the controllers: TCP, TLS when that listener is SSL or SASL_SSL, the SASL login
/// when it is SASL_PLAINTEXT or SASL_SSL.
#[derive(Debug)]
struct ControllerStreams {
    connector: PeerConnector,
    client_id: String,
}

impl josef_quorum::StreamConnector for ControllerStreams {
    fn connect<'a>(&'a self, addr: &'a str) -> josef_quorum::transport::ConnectFuture<'a> {
        Box::pin(async move {
            match self.connector.connect(addr, &self.client_id).await {
                Ok(s) => Ok(Box::new(s) as josef_quorum::QuorumStream),
                // `connect` has logged a configuration failure already.
                Err(crate::peer_connection::PeerConnectError::Io(e)) => Err(e),
                Err(e) => {
                    let kind = if e.is_authentication_failure() {
                        std::io::ErrorKind::PermissionDenied
                    } else {
                        std::io::ErrorKind::Other
                    };
                    Err(std::io::Error::new(kind, e.to_string()))
                }
            }
        })
    }
}

/// The cluster side of a node.
pub struct ClusterNode {
    /// The settings.
    pub config: ClusterConfig,
    /// `node.id`.
    pub node_id: i32,
    /// The committed metadata as this node has it.
    pub log: Arc<MetadataLog>,
    /// The quorum member (controller nodes).
    pub quorum: Option<MetadataQuorum>,
    /// The controller driver (controller nodes).
    pub driver: Option<Arc<ControllerDriver>>,
    /// How this broker reaches the other brokers' inter-broker listener (replica fetches,
    /// transaction markers and verification): the listener's protocol, TLS and SASL login.
    pub inter_broker: PeerConnector,
    /// Requests to the active controller (forwarded admin requests, producer id blocks).
    pub channel: Arc<ControllerChannel>,
    /// Registration, heartbeats and controlled shutdown.
    pub heartbeat_channel: Arc<ControllerChannel>,
    /// AlterPartition.
    pub alter_partition_channel: Arc<ControllerChannel>,
    /// Registration and heartbeats (broker nodes, once started).
    pub lifecycle: OnceLock<Arc<BrokerLifecycle>>,
    /// The CONTROLLER listeners bound.
    pub controller_listeners: Vec<BoundListener>,
    /// ISR changes to the controller (broker nodes).
    pub alter_partitions: Arc<alter_partition::AlterPartitionManager>,
    /// Follower fetchers (broker nodes, once started).
    pub fetchers: OnceLock<Arc<replica_fetcher::ReplicaFetcherManager>>,
    pub(crate) shutdown: CancellationToken,
    tracker: TaskTracker,
    /// Set once a heartbeat answer says this broker caught up with the metadata log, to the
    /// metadata offset it had applied then.
    caught_up: Arc<tokio::sync::watch::Sender<Option<u64>>>,
    /// The offset of the last image the publisher applied to this broker's partitions.
    published: Arc<tokio::sync::watch::Sender<u64>>,
    /// That image: what clients are answered from, so that a Metadata answer never shows a state
    /// the partitions have not reached (a deleted topic gone from Metadata while its replica still
    /// answers Produce with NOT_LEADER_OR_FOLLOWER).
    published_image: parking_lot::Mutex<Option<josef_metadata::MetadataImage>>,
}

fn controller_config(
    config: &BrokerConfig,
    cl: &ClusterConfig,
) -> josef_controller::ControllerConfig {
    josef_controller::ControllerConfig {
        node_id: config.node_id,
        broker_session_timeout_ms: cl.broker_session_timeout_ms,
        default_replication_factor: config.default_replication_factor,
        num_partitions: config.num_partitions,
        auto_leader_rebalance_enable: cl.auto_leader_rebalance_enable,
        leader_imbalance_check_interval_ms: cl.leader_imbalance_check_interval_seconds * 1000,
        leader_imbalance_per_broker_percentage: cl.leader_imbalance_per_broker_percentage,
        unclean_leader_election_enable: cl.unclean_leader_election_enable,
        seed: rand::random(),
        bootstrap_features: vec![(
            crate::features::TRANSACTION_VERSION_FEATURE.to_string(),
            config.transaction_version,
        )],
        ..josef_controller::ControllerConfig::default()
    }
}

impl ClusterNode {
    /// Starts the controller side (controller nodes) and the channel to the controller.
    pub async fn start(config: &BrokerConfig) -> Result<Arc<ClusterNode>, ClusterStartError> {
        let cl = config
            .cluster
            .clone()
            .expect("ClusterNode::start needs process.roles");
        let shutdown = CancellationToken::new();
        let tracker = TaskTracker::new();
        let (events, queue) = if cl.is_controller() {
            let (events, queue) = event_loop::channel();
            (Some(events), Some(queue))
        } else {
            (None, None)
        };
        let log = MetadataLog::new(events.clone());
        // How this node reaches the controllers (quorum, observers, controller requests).
        let controller_client = config
            .security
            .controller_client(&cl.controller_listener_names);
        let to_controller = PeerConnector::new(&controller_client)?;
        let quorum_streams: Arc<dyn josef_quorum::StreamConnector> = Arc::new(ControllerStreams {
            connector: to_controller.clone(),
            client_id: format!("josef-node-{}-metadata-quorum", config.node_id),
        });
        let mut quorum = None;
        let mut driver = None;
        let mut controller_listeners = Vec::new();
        if let (Some(events), Some(queue)) = (events, queue) {
            let mut bound = Vec::new();
            for l in &cl.controller_listeners {
                let host = if l.host.is_empty() {
                    "0.0.0.0"
                } else {
                    &l.host
                };
                let addr = format!("{host}:{}", l.port);
                let listener = tokio::net::TcpListener::bind(&addr)
                    .await
                    .map_err(|source| ClusterStartError::Bind {
                        addr: addr.clone(),
                        source,
                    })?;
                let local = listener
                    .local_addr()
                    .map_err(|source| ClusterStartError::Bind {
                        addr: addr.clone(),
                        source,
                    })?;
                controller_listeners.push(BoundListener {
                    name: l.name.clone(),
                    addr: local,
                });
                bound.push((l.name.clone(), listener));
            }
            let voters: BTreeMap<u64, String> = cl
                .voters
                .iter()
                .map(|v| (v.id as u64, v.address()))
                .collect();
            let dir = cl
                .metadata_log_dir
                .clone()
                .unwrap_or_else(|| config.log_dirs[0].clone())
                .join("__cluster_metadata-0");
            let mut qc = QuorumConfig::new(config.node_id as u64, voters, dir);
            qc.set_election_timeout(cl.quorum_election_timeout_ms as u64);
            qc.request_timeout_ms = cl.quorum_request_timeout_ms as u64;
            qc.snapshot_every_n_entries = cl.snapshot_every_n_entries();
            qc.entries_kept_after_snapshot = cl.entries_kept_after_snapshot();
            qc.snapshot_max_interval_ms = cl.metadata_log_max_snapshot_interval_ms as u64;
            qc.segment_bytes = cl.metadata_log_segment_bytes as u64;
            let q = MetadataQuorum::start_with_connector(
                qc,
                Arc::new(LogStateMachine(log.clone())),
                quorum_streams.clone(),
            )
            .await?;
            let cc = controller_config(config, &cl);
            event_loop::spawn(
                queue,
                config.node_id as u64,
                Arc::new(driver::RaftControllerQuorum::new(
                    q.clone(),
                    tokio::runtime::Handle::current(),
                )),
                Box::new(move || josef_controller::Controller::new(cc.clone())),
                crate::topics::now_ms,
            )
            .map_err(ClusterStartError::EventLoop)?;
            let d = ControllerDriver::new(config.node_id, log.clone(), q.clone(), events);
            d.spawn(shutdown.clone());
            let apis = Arc::new(controller_apis::ControllerApis {
                driver: d.clone(),
                quorum: q.clone(),
                voters: cl.voters.clone(),
            });
            let acceptor = Arc::new(QuorumAcceptor(q.clone()));
            let limits = ConnectionLimits {
                max_request_bytes: config.socket_request_max_bytes,
                idle_timeout: None,
            };
            for (name, l) in bound {
                let tls = match config.security.controller_tls.get(&name) {
                    None => None,
                    Some(s) => Some(josef_tls::TlsListener::new(s).map_err(|source| {
                        crate::peer_connection::PeerConnectorError {
                            listener: name.clone(),
                            source,
                        }
                    })?),
                };
                let sasl = match config.security.controller_sasl.get(&name) {
                    None => None,
                    Some(s) => {
                        let log = log.clone();
                        let image: crate::sasl_session::ImageSource =
                            Arc::new(move || Arc::new(log.image()));
                        Some(crate::sasl_session::listener(s, image).map_err(|source| {
                            ClusterStartError::ControllerSasl {
                                listener: name.clone(),
                                source,
                            }
                        })?)
                    }
                };
                listener::spawn_accept_loop(
                    listener::ControllerSocket {
                        name,
                        listener: l,
                        tls,
                        sasl,
                    },
                    apis.clone(),
                    acceptor.clone(),
                    limits,
                    shutdown.clone(),
                    tracker.clone(),
                );
            }
            quorum = Some(q);
            driver = Some(d);
        }
        // A broker-only node follows the log as an observer of the voters (observer.rs).
        let observed = observer::start_if_broker_only(
            &cl,
            config.node_id,
            &log,
            quorum_streams.clone(),
            &shutdown,
            &tracker,
        )?;
        let hint: Option<Arc<dyn Fn() -> Option<i32> + Send + Sync>> = quorum.clone().map(|q| {
            Arc::new(move || q.leader().map(|(id, _)| id as i32))
                as Arc<dyn Fn() -> Option<i32> + Send + Sync>
        });
        let hint = hint.or(observed);
        // One channel per kind of traffic, as Kafka's broker has (heartbeats, AlterPartition,
        // forwarding): each is one connection with one request at a time, so a burst of ISR
        // changes or a slow CreateTopics never delays the heartbeat that keeps the broker unfenced.
        let new_channel = || {
            Arc::new(ControllerChannel::new(
                cl.voters.clone(),
                config.node_id,
                hint.clone(),
                Duration::from_millis(cl.quorum_request_timeout_ms.max(1) as u64),
                to_controller.clone(),
            ))
        };
        let inter_broker = match &config.security.inter_broker_client {
            Some(s) => PeerConnector::new(s)?,
            None => PeerConnector::plaintext(cl.inter_broker_listener_name.clone()),
        };
        let (channel, heartbeat_channel, alter_partition_channel) =
            (new_channel(), new_channel(), new_channel());
        Ok(Arc::new(ClusterNode {
            config: cl,
            node_id: config.node_id,
            log,
            quorum,
            driver,
            inter_broker,
            channel,
            heartbeat_channel,
            alter_partition_channel,
            lifecycle: OnceLock::new(),
            controller_listeners,
            alter_partitions: alter_partition::AlterPartitionManager::new(),
            fetchers: OnceLock::new(),
            shutdown,
            tracker,
            caught_up: Arc::new(tokio::sync::watch::channel(None).0),
            published: Arc::new(tokio::sync::watch::channel(0).0),
            published_image: parking_lot::Mutex::new(None),
        }))
    }

    /// Waits (at most `timeout`) for the cluster id the first controller wrote.
    pub async fn wait_cluster_id(&self, timeout: Duration) -> Result<String, ClusterStartError> {
        let mut rx = self.log.subscribe_image();
        let found = tokio::time::timeout(timeout, async {
            loop {
                if let Some(id) = rx.borrow_and_update().cluster_id() {
                    return id.to_string();
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        })
        .await;
        found.map_err(|_| ClusterStartError::NoClusterId(timeout))
    }

    /// Starts the broker side: publisher, fetchers, ISR changes, the ISR shrink timer and
    /// registration.
    pub fn start_broker(
        self: &Arc<Self>,
        state: &Arc<crate::state::BrokerState>,
        info: lifecycle::RegistrationInfo,
    ) {
        let fetchers = replica_fetcher::ReplicaFetcherManager::new(
            Arc::downgrade(state),
            Arc::downgrade(self),
        );
        let _ = self.fetchers.set(fetchers);
        state
            .txns
            .set_marker_sender(txn_marker_sender::TxnMarkerSender::spawn(state, self));
        publisher::spawn(state.clone(), self.clone());
        let lifecycle = BrokerLifecycle::spawn(
            info,
            self.heartbeat_channel.clone(),
            self.log.clone(),
            self.caught_up.clone(),
        );
        let epoch = {
            let l = lifecycle.clone();
            Arc::new(move || l.broker_epoch()) as Arc<dyn Fn() -> i64 + Send + Sync>
        };
        let _ = self.lifecycle.set(lifecycle);
        self.alter_partitions.spawn(
            Arc::downgrade(state),
            self.alter_partition_channel.clone(),
            self.node_id,
            epoch,
        );
        // Kafka's isr-expiration task: every replica.lag.time.max.ms / 2.
        let every = Duration::from_millis((self.config.replica_lag_time_max_ms as u64 / 2).max(50));
        let (weak_state, weak_node) = (Arc::downgrade(state), Arc::downgrade(self));
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let (Some(state), Some(node)) = (weak_state.upgrade(), weak_node.upgrade()) else {
                    return;
                };
                let now = crate::topics::now_ms();
                // Followers' fetch sessions: their last fetch counts for the idle partitions
                // they cover (josef_partition::session_cover). One snapshot per pass (the
                // sessions are few), so no partition lock is held with the cache's.
                let session_fetches: std::collections::HashMap<i32, (i64, i64)> = state
                    .fetch_sessions
                    .lock()
                    .sessions()
                    .filter(|s| s.is_privileged())
                    .map(|s| (s.id(), (s.creation_ms(), s.last_used_ms())))
                    .collect();
                let session_fetch_ms = |c: josef_partition::SessionCover| {
                    session_fetches
                        .get(&c.session_id)
                        .filter(|(created, _)| *created == c.created_ms)
                        .map(|(_, last)| *last)
                };
                for t in state.topics.all() {
                    for p in &t.partitions {
                        if let Some(proposal) =
                            p.maybe_shrink_isr_with_sessions(now, session_fetch_ms)
                        {
                            node.alter_partitions
                                .submit(&t.name, t.id, p.index, proposal);
                        }
                    }
                }
            }
        });
    }

    /// Waits until this broker has once caught up with the metadata log (Kafka's
    /// `initialCatchUpFuture`, which `BrokerServer` waits for before it enables request
    /// processing): until then its image may be older than what it restarted into, e.g. an ISR
    /// that still names it, and answering clients from it would mislead them.
    ///
    /// The catch-up is complete only once the publisher has also applied that image to the
    /// partitions: the metadata log reaching the offset is not enough, because until the
    /// partitions see it, a partition this broker led before it restarted (its log possibly lost)
    /// still acts as leader in the old epoch, and a follower fetching from it would truncate to
    /// its empty log (reliability bug 4).
    pub async fn initial_catch_up(&self) {
        let mut rx = self.caught_up.subscribe();
        let at = match rx.wait_for(|c| c.is_some()).await {
            Ok(v) => v.unwrap_or(0),
            Err(_) => return,
        };
        let mut rx = self.published.subscribe();
        let _ = rx.wait_for(|p| *p >= at).await;
    }

    /// Records that the publisher applied `image` to the partitions.
    pub(crate) fn mark_published(&self, image: josef_metadata::MetadataImage) {
        let offset = image.provenance().last_offset;
        *self.published_image.lock() = Some(image);
        self.published.send_if_modified(|p| {
            let newer = offset > *p;
            if newer {
                *p = offset;
            }
            newer
        });
    }

    /// The newest image the publisher has applied to this broker's partitions; the newest
    /// committed image before the first one (a node without partitions, or still starting).
    /// Clients are answered from it, like Kafka's metadata cache, which its publisher updates
    /// together with the replicas.
    pub fn published_image(&self) -> josef_metadata::MetadataImage {
        match &*self.published_image.lock() {
            Some(image) => image.clone(),
            None => self.log.image(),
        }
    }

    /// The broker lifecycle, once started.
    pub fn lifecycle(&self) -> Option<&Arc<BrokerLifecycle>> {
        self.lifecycle.get()
    }

    /// Stops: a controlled shutdown first (brokers), then the controller side.
    pub async fn shutdown(&self) {
        if let Some(l) = self.lifecycle.get() {
            if self.config.controlled_shutdown_enable {
                // An attempt waits a session timeout: the controller answers within a few
                // heartbeats unless it is unreachable or the other brokers lag.
                let per_attempt =
                    Duration::from_millis((self.config.broker_session_timeout_ms as u64).max(1000));
                let attempts = ShutdownAttempts::new(
                    self.config.controlled_shutdown_max_retries,
                    self.config.controlled_shutdown_retry_backoff_ms,
                    per_attempt,
                );
                attempts.run(l.as_ref()).await;
            }
        }
        if let Some(f) = self.fetchers.get() {
            f.shutdown();
        }
        self.shutdown.cancel();
        self.tracker.close();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.tracker.wait()).await;
        if let Some(q) = &self.quorum {
            // Bounded: with the other voters gone, openraft's shutdown must not keep the process
            // alive (the test bed and the load tool saw a node linger after SIGTERM).
            if tokio::time::timeout(Duration::from_secs(3), q.shutdown())
                .await
                .is_err()
            {
                tracing::warn!("metadata quorum did not stop within 3 s; exiting anyway");
            }
        }
    }
}
