//! The state every request handler sees.

use std::path::PathBuf;
use std::sync::Arc;

use josef_fetch::{
    FetchSessionCache, FetchSessionCacheConfig, TopicIdPartition, DEFAULT_EVICTION_MS,
};
use josef_sequencer::{ProducerIdBlockStore, ProducerIdManager, DEFAULT_PRODUCER_ID_BLOCK_SIZE};
use parking_lot::{Mutex, MutexGuard};

use crate::config::BrokerConfig;
use crate::kit::{
    ClusterMetadata, GroupCoordinator, JosefGroupCoordinator, JosefTxnCoordinator, MetadataView,
    PartitionStore, SingleNodeMetadata, TxnCoordinator,
};
use crate::meta::write_atomically;
use crate::topics::TopicManager;

/// Locks `m` without holding a runtime worker while it waits. For locks whose holder may wait
/// for a network round trip (a producer-id block from the controller,
/// `cluster::allocate_producer_ids`, runs in `block_in_place` under the producer-id manager's and
/// the transaction coordinator's locks): request tasks parked on such a lock would otherwise
/// take every worker, and with them the I/O and timer drivers that round trip needs, so the whole
/// node froze (seen in the soak: a leader cut off from the controller while idempotent producers
/// retried InitProducerId). Off a multi-threaded runtime (unit tests) it just locks.
pub fn lock_without_holding_a_worker<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    if let Some(g) = m.try_lock() {
        return g;
    }
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| m.lock())
        }
        _ => m.lock(),
    }
}

/// Producer-id blocks persisted in `josef-producer-ids` (one number: the next block start), written
/// atomically and fsynced, so a restart never hands out an id twice.
///
/// On a cluster node the blocks come from the controller instead (AllocateProducerIds, so ids
/// are unique across brokers); the file is then not used.
pub struct FileBlockStore {
    path: PathBuf,
    controller: Option<Arc<crate::cluster::ClusterNode>>,
}

impl FileBlockStore {
    /// A store in `dir`.
    pub fn new(dir: &std::path::Path) -> Self {
        FileBlockStore {
            path: dir.join("josef-producer-ids"),
            controller: None,
        }
    }

    /// Blocks from the cluster's controller.
    pub fn from_controller(node: Arc<crate::cluster::ClusterNode>) -> Self {
        FileBlockStore {
            path: PathBuf::new(),
            controller: Some(node),
        }
    }
}

impl ProducerIdBlockStore for FileBlockStore {
    type Error = std::io::Error;

    fn load(&mut self) -> Result<Option<i64>, Self::Error> {
        if self.controller.is_some() {
            return Ok(None);
        }
        match std::fs::read_to_string(&self.path) {
            Ok(t) => t.trim().parse().map(Some).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{} is not a number", self.path.display()),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn save(&mut self, next_block_start: i64) -> Result<(), Self::Error> {
        write_atomically(&self.path, format!("{next_block_start}\n").as_bytes())
    }

    fn allocate(&mut self, start: i64, size: i64) -> Result<(i64, i64), Self::Error> {
        match &self.controller {
            None => {
                self.save(start.saturating_add(size))?;
                Ok((start, size))
            }
            Some(node) => crate::cluster::allocate_producer_ids(node),
        }
    }
}

/// Shared broker state.
pub struct BrokerState {
    /// Settings.
    pub config: Arc<BrokerConfig>,
    /// From meta.properties.
    pub cluster_id: String,
    /// Topics and partitions.
    pub topics: Arc<TopicManager>,
    /// The partitions ListOffsets, Produce and Fetch go through: [`BrokerState::topics`] unless a
    /// builder set another ([`BrokerState::with_partition_store`]).
    pub partition_store: Arc<dyn PartitionStore>,
    /// What Metadata and DescribeCluster report: [`SingleNodeMetadata`] over
    /// [`BrokerState::topics`] on a single node, [`ClusterMetadata`] over the metadata image on a
    /// cluster node, unless a builder set another ([`BrokerState::with_metadata_view`]).
    pub metadata_view: Arc<dyn MetadataView>,
    /// What the group APIs are answered by: [`JosefGroupCoordinator`] over
    /// [`BrokerState::groups`] unless a builder set another
    /// ([`BrokerState::with_group_coordinator`]).
    pub group_coordinator: Arc<dyn GroupCoordinator>,
    /// What the transaction APIs and InitProducerId are answered by: [`JosefTxnCoordinator`]
    /// over [`BrokerState::txns`] and [`BrokerState::producer_ids`] unless a builder set another
    /// ([`BrokerState::with_txn_coordinator`]).
    pub txn_coordinator: Arc<dyn TxnCoordinator>,
    /// Producer-id allocation.
    pub producer_ids: Mutex<ProducerIdManager<FileBlockStore>>,
    /// Group coordinator shards.
    pub groups: crate::groups::GroupService,
    /// Transaction coordinator.
    pub txns: crate::txns::TxnService,
    /// Fetches waiting for `fetch.min.bytes` (completed by appends or by expiry).
    pub fetch_purgatory: Arc<crate::delayed_fetch::FetchPurgatory>,
    /// Incremental fetch sessions (KIP-227).
    /// Shared with the partitions' listener, which records each partition's changes in it
    /// (change tracking: incremental fetches read only what changed).
    pub fetch_sessions: Arc<Mutex<FetchSessionCache<TopicIdPartition>>>,
    /// The cluster side of this node (`process.roles` set); `None` for the single-node broker.
    pub cluster: Option<Arc<crate::cluster::ClusterNode>>,
    /// The single-node broker's metadata records (ACLs, SCRAM credentials, client quotas);
    /// `None` on a cluster node, whose records live in the metadata log.
    pub local_metadata: Option<crate::local_metadata::LocalMetadataStore>,
    /// Client quotas (producer/consumer byte rates, request percentage), from the image.
    pub quotas: Arc<crate::quotas::BrokerQuotas>,
    /// Replication throttles (KIP-73), from the image.
    pub replication_quotas: crate::replication_quotas::ReplicationQuotas,
    /// The authorizer (`authorizer.class.name`), following the image's ACLs.
    pub authorizer: crate::authorization::BrokerAuthorizer,
    /// Broker configs changed without a restart (BROKER resources in the image).
    pub dynamic: crate::dynamic_config::DynamicBrokerConfig,
    /// Log levels changed at runtime (the BROKER_LOGGER resource).
    pub loggers: crate::broker_logger::BrokerLoggers,
}

impl BrokerState {
    /// Opens the topics and the producer-id store.
    pub fn open(
        config: Arc<BrokerConfig>,
        cluster_id: String,
        cluster: Option<Arc<crate::cluster::ClusterNode>>,
    ) -> Result<BrokerState, String> {
        let fetch_purgatory = crate::delayed_fetch::new_purgatory();
        let fetch_sessions = Arc::new(Mutex::new(FetchSessionCache::new(
            FetchSessionCacheConfig {
                max_sessions: usize::try_from(config.max_incremental_fetch_session_cache_slots)
                    .unwrap_or(0),
                eviction_ms: DEFAULT_EVICTION_MS,
                // Random, so a session id of an earlier run is not taken for a live one.
                id_seed: rand::random(),
            },
        )));
        let wake_parked = crate::delayed_fetch::append_listener(&fetch_purgatory);
        let wake_parked = crate::delayed_fetch::with_session_changes(wake_parked, &fetch_sessions);
        let listener = match &cluster {
            // ISR changes a partition proposes (a follower caught up) go to the controller.
            Some(node) => crate::cluster::with_isr_change_sender(wake_parked, node.clone()),
            None => wake_parked,
        };
        let topics = Arc::new(TopicManager::load(config.clone(), Some(listener))?);
        let store = match &cluster {
            Some(node) => FileBlockStore::from_controller(node.clone()),
            None => FileBlockStore::new(&config.log_dirs[0]),
        };
        let producer_ids = ProducerIdManager::new(store, DEFAULT_PRODUCER_ID_BLOCK_SIZE)
            .map_err(|e| format!("producer id store: {e}"))?;
        let local_metadata = match &cluster {
            Some(_) => None,
            None => Some(
                crate::local_metadata::LocalMetadataStore::open(&config.log_dirs[0])
                    .map_err(|e| format!("local metadata: {e}"))?,
            ),
        };
        let quotas = Arc::new(crate::quotas::BrokerQuotas::new(config.quota));
        let dynamic = crate::dynamic_config::DynamicBrokerConfig::new(config.clone());
        if let Some(store) = &local_metadata {
            quotas.refresh(&store.image());
            dynamic.apply(&store.image(), &topics);
        }
        Ok(BrokerState {
            dynamic,
            loggers: crate::broker_logger::BrokerLoggers::new(config.node_id),
            quotas,
            replication_quotas: crate::replication_quotas::ReplicationQuotas::new(
                config.node_id,
                config.quota.replication,
            ),
            authorizer: crate::authorization::BrokerAuthorizer::new(config.authorizer.clone()),
            local_metadata,
            groups: {
                let groups = crate::groups::GroupService::new(&config);
                groups.set_purgatory(fetch_purgatory.clone());
                groups
            },
            txns: crate::txns::TxnService::new(&config),
            fetch_purgatory,
            fetch_sessions,
            partition_store: topics.clone(),
            metadata_view: match &cluster {
                Some(node) => Arc::new(ClusterMetadata::new(
                    node.clone(),
                    config.clone(),
                    topics.clone(),
                )),
                None => Arc::new(SingleNodeMetadata::new(config.clone(), topics.clone())),
            },
            group_coordinator: Arc::new(JosefGroupCoordinator::default()),
            txn_coordinator: Arc::new(JosefTxnCoordinator::default()),
            config,
            cluster_id,
            cluster,
            topics,
            producer_ids: Mutex::new(producer_ids),
        })
    }

    /// Serves ListOffsets, Produce and Fetch from `store` instead (a wrapper around
    /// [`BrokerState::partition_store`], or a store of the builder's own).
    pub fn with_partition_store(mut self, store: Arc<dyn PartitionStore>) -> Self {
        self.partition_store = store;
        self
    }

    /// Answers Metadata and DescribeCluster from `view` instead.
    pub fn with_metadata_view(mut self, view: Arc<dyn MetadataView>) -> Self {
        self.metadata_view = view;
        self
    }

    /// Answers the group APIs with `coordinator` instead (a wrapper around
    /// [`BrokerState::group_coordinator`], or a coordinator of the builder's own).
    pub fn with_group_coordinator(mut self, coordinator: Arc<dyn GroupCoordinator>) -> Self {
        self.group_coordinator = coordinator;
        self
    }

    /// Answers InitProducerId and the transaction APIs with `coordinator` instead.
    pub fn with_txn_coordinator(mut self, coordinator: Arc<dyn TxnCoordinator>) -> Self {
        self.txn_coordinator = coordinator;
        self
    }

    /// One beat of the coordinators' background work: the group and transaction coordinators
    /// set on the state are ticked ([`GroupCoordinator::tick`], [`TxnCoordinator::tick`]), and
    /// only they, so Josef's shards are neither loaded nor timed out under a builder's
    /// coordinator. A running broker calls it every
    /// [`COORDINATOR_TICK_MS`](crate::kit::coordinators::COORDINATOR_TICK_MS); a builder
    /// serving connections themselves calls it the same way.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use josef_server::config::BrokerConfig;
    /// use josef_server::log_storage::LogStorage;
    /// use josef_server::state::BrokerState;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let config = BrokerConfig {
    ///     log_dirs: vec![dir.path().to_path_buf()],
    ///     log_storage: LogStorage::Memory,
    ///     ..BrokerConfig::default()
    /// };
    /// let state = BrokerState::open(Arc::new(config), "cluster".into(), None)?;
    /// let offsets = state.topics.ensure_internal("__consumer_offsets").expect("created");
    /// // Josef's group coordinator loads the shard of every partition led here, unasked.
    /// tokio::runtime::Runtime::new()?.block_on(async {
    ///     state.tick_coordinators(josef_server::topics::now_ms());
    /// });
    /// assert_eq!(state.groups.loaded_partitions().len(), offsets.partitions.len());
    /// state.shutdown_coordinators();
    /// # Ok(())
    /// # }
    /// ```
    pub fn tick_coordinators(&self, now_ms: i64) {
        self.tick_group_coordinator(now_ms);
        self.tick_txn_coordinator(now_ms);
    }

    /// The group coordinator's part of [`tick_coordinators`](Self::tick_coordinators), for a
    /// broker that ticks each coordinator on its own task, as Josef's does: the transaction
    /// coordinator's tick can wait for a controller round trip, which must not hold back
    /// heartbeat expirations.
    pub fn tick_group_coordinator(&self, now_ms: i64) {
        self.group_coordinator.tick(self, now_ms);
    }

    /// The transaction coordinator's part of [`tick_coordinators`](Self::tick_coordinators).
    pub fn tick_txn_coordinator(&self, now_ms: i64) {
        self.txn_coordinator.tick(self, now_ms);
    }

    /// Lets the coordinators release their partitions before the logs close. Josef's services
    /// are unloaded whatever coordinator is set: a builder's wrapper that delegated requests to
    /// them has had shards loaded, which would keep their partitions from closing clean.
    pub fn shutdown_coordinators(&self) {
        self.group_coordinator.shutdown(self);
        self.txn_coordinator.shutdown(self);
        self.groups.unload_all();
        self.txns.unload_all(&crate::txns::Env::of(self));
    }

    /// The metadata image ACLs, SCRAM credentials and client quotas are read from: the metadata
    /// log's on a cluster node, the local store's on a single node.
    pub fn metadata_image(&self) -> Arc<josef_metadata::MetadataImage> {
        match (&self.cluster, &self.local_metadata) {
            (Some(node), _) => Arc::new(node.log.image()),
            (None, Some(store)) => store.image(),
            (None, None) => Arc::new(josef_metadata::MetadataImage::empty()),
        }
    }

    /// The advertised host and port for the listener a connection came in on.
    pub fn advertised(&self, conn: &crate::connection::ConnectionInfo) -> (String, u16) {
        self.config.advertised_for(&conn.listener, conn.bound_port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Bug 12 of docs/reliability.md (a node froze when cut off from the controller): the lock's
    /// holder waits on a timer from inside `block_in_place` (as the producer-id block round trip
    /// does) while two tasks, as many as the runtime has workers, wait for the lock. A plain
    /// mutex wait parks both workers, nobody drives the timer, and nothing ever completes.
    #[test]
    fn lock_waiters_leave_the_workers_to_drive_the_holders_timer() {
        let (done_tx, done_rx) = mpsc::channel();
        // The runtime lives on a thread of its own: were it stuck, dropping it here would hang
        // the test instead of failing it.
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let lock = Arc::new(Mutex::new(0u32));
            let total = rt.block_on(async {
                let (held_tx, held_rx) = tokio::sync::oneshot::channel();
                let (waiting_tx, waiting_rx) = mpsc::channel::<()>();
                let holder = {
                    let lock = lock.clone();
                    tokio::spawn(async move {
                        let mut held = lock_without_holding_a_worker(&lock);
                        let _ = held_tx.send(());
                        tokio::task::block_in_place(|| {
                            // Both waiters are at the lock before the timer needs a driver.
                            for _ in 0..2 {
                                waiting_rx.recv().unwrap();
                            }
                            tokio::runtime::Handle::current()
                                .block_on(tokio::time::sleep(Duration::from_millis(20)));
                        });
                        *held += 1;
                    })
                };
                held_rx.await.unwrap();
                let waiters: Vec<_> = (0..2)
                    .map(|_| {
                        let (lock, waiting) = (lock.clone(), waiting_tx.clone());
                        tokio::spawn(async move {
                            waiting.send(()).unwrap();
                            *lock_without_holding_a_worker(&lock) += 1;
                        })
                    })
                    .collect();
                holder.await.unwrap();
                for w in waiters {
                    w.await.unwrap();
                }
                let total = *lock.lock();
                total
            });
            let _ = done_tx.send(total);
        });
        let total = done_rx.recv_timeout(Duration::from_secs(30));
        assert_eq!(
            total,
            Ok(3),
            "the holder and both waiters finish (a stuck runtime never answers)"
        );
    }
}
