//! Drives josef-txn's `TxnCoordinator`: partitions of `__transaction_state` are loaded when
//! their leadership arrives (the tick sees it; a request that comes first loads it itself);
//! records go through a `PartitionWriter` that appends Kafka-format batches to the log;
//! since one node's HW reaches the LEO inside the append, held answers are released right after
//! each call. Marker effects are carried out locally (WriteTxnMarkers without the network hop):
//! a COMMIT/ABORT control batch on every partition of the transaction (aborts indexed in the
//! `.txnindex` and the LSO moved by the sequencer), the group coordinator told about
//! `__consumer_offsets` partitions, then `markers_completed`.
//!
//! **Exclusivity** (Kafka's `TransactionCoordinator.onElection` / `onResignation`, C12): a
//! partition is served only while this broker leads it, with **coordinator epoch = the leader
//! epoch of its `__transaction_state` partition** (on a cluster node the image must name this
//! broker leader at that epoch too, see [`crate::groups::coordinator_epoch`]). Ids whose
//! partition is not led here get NOT_COORDINATOR (josef-txn's routing). A partition loaded under
//! one epoch is resigned (held answers NOT_COORDINATOR, its state dropped) by the next request or
//! tick that sees its leader epoch changed or its leadership gone; the next tick (or request)
//! after a re-election loads it again (replaying the partition to its LEO, markers of Prepare* states
//! re-sent). On a cluster node `__transaction_state` is never created here (the controller does).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI16, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use josef_coordinator::{RecordSerde, SerdeError, TransactionResult};
use josef_txn::{
    EndTxnRequest, EndTxnResponse, PartitionStatus, ProducerIdGenerator, Released,
    TransactionVersion, TxnConfig, TxnCoordinator, TxnError, TxnLogRecord, TxnMarkerRequest,
    TxnRecordSerde, TxnReply, TxnState,
};
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::{oneshot, Notify};

use crate::cluster::broker_connections::BrokerConnections;
use crate::cluster::txn_marker_sender::TxnMarkerSender;
use crate::cluster::ClusterNode;
use crate::config::BrokerConfig;
use crate::coordinator_log::{read_partition, CoordinatorLogWriter};
use crate::groups::{coordinator_epoch, local_leader_epoch, GroupService};
use crate::handlers::write_txn_markers::end_txn_marker;
use crate::partition::Partition;
use crate::state::FileBlockStore;
use crate::topics::{now_ms, TopicManager, GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC};

/// Encodes transaction coordinator records with the value schema of the finalized
/// `transaction.version` level, followed without a restart (UpdateFeatures).
#[derive(Clone)]
pub struct FollowedTxnSerde(Arc<AtomicI16>);

impl FollowedTxnSerde {
    fn current(&self) -> TxnRecordSerde {
        TxnRecordSerde::new(TransactionVersion::from_feature_level(
            self.0.load(Ordering::Relaxed),
        ))
    }
}

impl RecordSerde<TxnLogRecord> for FollowedTxnSerde {
    fn serialize(&self, r: &TxnLogRecord) -> (Option<bytes::Bytes>, Option<bytes::Bytes>) {
        self.current().serialize(r)
    }

    fn deserialize(&self, key: &[u8], value: Option<&[u8]>) -> Result<TxnLogRecord, SerdeError> {
        // Reading does not depend on the level: every value version reads.
        self.current().deserialize(key, value)
    }
}

/// Appends coordinator records to a `__transaction_state` partition (see
/// [`CoordinatorLogWriter`]).
pub type LogWriter = CoordinatorLogWriter<FollowedTxnSerde>;

/// Producer ids for the transaction coordinator from the broker's persisted allocator.
struct Pids<'a>(&'a Mutex<josef_sequencer::ProducerIdManager<FileBlockStore>>);

impl ProducerIdGenerator for Pids<'_> {
    fn generate_producer_id(&mut self) -> Result<i64, TxnError> {
        crate::state::lock_without_holding_a_worker(self.0)
            .next_id()
            .map_err(|_| TxnError::CoordinatorLoadInProgress)
    }
}

type Ctx = u64;

/// Where a cluster node's coordinator hands the markers of decided transactions: the marker
/// sender, which reports back through [`TxnService::markers_written`] (a trait so the wait for
/// that report can be checked without a network).
pub trait MarkerQueue: Send + Sync {
    /// Queues the markers of a transaction decided by `__transaction_state` partition
    /// `txn_partition`.
    fn enqueue(&self, txn_partition: i32, marker: TxnMarkerRequest);
    /// Forgets the markers of `txn_partition` (this broker no longer coordinates it).
    fn remove_txn_partition(&self, txn_partition: i32);
}

impl MarkerQueue for TxnMarkerSender {
    fn enqueue(&self, txn_partition: i32, marker: TxnMarkerRequest) {
        TxnMarkerSender::enqueue(self, txn_partition, marker);
    }

    fn remove_txn_partition(&self, txn_partition: i32) {
        TxnMarkerSender::remove_txn_partition(self, txn_partition);
    }
}

/// The node's transaction coordinator.
pub struct TxnService {
    coord: Mutex<TxnCoordinator<LogWriter, Ctx>>,
    /// The partitions loaded, with the partition object they were loaded from.
    loaded: Mutex<HashMap<i32, Arc<Partition>>>,
    pending: Mutex<HashMap<Ctx, oneshot::Sender<TxnReply>>>,
    next: AtomicU64,
    /// A cluster node: `__transaction_state` comes from the controller.
    cluster: bool,
    /// A cluster node's marker sender: markers go to partition leaders over WriteTxnMarkers.
    /// Unset (single node), they are written here at once.
    marker_sender: OnceLock<Arc<dyn MarkerQueue>>,
    /// Verify-only AddPartitionsToTxn to other brokers' coordinators (KIP-890, the partition
    /// leader's side), apart from the markers so neither waits behind the other.
    verification: BrokerConnections,
    /// Woken whenever the marker sender reports a transaction's markers written.
    markers_done: Notify,
    /// The finalized `transaction.version` level the coordinator follows (see
    /// [`TxnService::follow_feature`]).
    transaction_version: Arc<AtomicI16>,
}

/// What a handler needs from the rest of the broker.
pub struct Env<'a> {
    /// Topics.
    pub topics: &'a TopicManager,
    /// Group coordinator (for offsets committed in a transaction).
    pub groups: &'a GroupService,
    /// Producer id allocator.
    pub pids: &'a Mutex<josef_sequencer::ProducerIdManager<FileBlockStore>>,
    /// The finalized `transaction.version` (metadata image or config).
    pub transaction_version: TransactionVersion,
}

impl<'a> Env<'a> {
    /// The environment of `state`.
    pub fn of(state: &'a crate::state::BrokerState) -> Self {
        Env {
            topics: &state.topics,
            groups: &state.groups,
            pids: &state.producer_ids,
            transaction_version: crate::features::transaction_version(
                &state.config,
                state.cluster.as_deref(),
            ),
        }
    }
}

impl TxnService {
    /// Settings from the broker config.
    pub fn new(c: &BrokerConfig) -> Self {
        let level = TransactionVersion::from_feature_level(c.transaction_version).feature_level();
        let config = TxnConfig {
            transaction_max_timeout_ms: c.transaction_max_timeout_ms.min(i32::MAX as i64) as i32,
            transactional_id_expiration_ms: c.transactional_id_expiration_ms,
            transaction_state_partitions: c.transaction_state_log_num_partitions,
            offsets_topic_partitions: c.offsets_topic_num_partitions,
            transaction_version: TransactionVersion::from_feature_level(c.transaction_version),
            ..TxnConfig::default()
        };
        TxnService {
            coord: Mutex::new(TxnCoordinator::new(config)),
            loaded: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            cluster: c.cluster.is_some(),
            marker_sender: OnceLock::new(),
            verification: BrokerConnections::new(format!("josef-txn-verification-{}", c.node_id)),
            markers_done: Notify::new(),
            transaction_version: Arc::new(AtomicI16::new(level)),
        }
    }

    /// The coordinator lock, with the coordinator following the finalized `transaction.version`
    /// of `env` (UpdateFeatures may have changed it): coordinator-initiated aborts use it, and
    /// records are written with its schema version.
    fn lock_following(&self, env: &Env<'_>) -> MutexGuard<'_, TxnCoordinator<LogWriter, Ctx>> {
        let mut coord = self.lock_coord();
        let v = env.transaction_version;
        coord.set_transaction_version(v);
        self.transaction_version
            .store(v.feature_level(), Ordering::Relaxed);
        coord
    }

    /// The connections partition leaders verify transactional appends over.
    pub fn verification_connections(&self) -> &BrokerConnections {
        &self.verification
    }

    /// Sends markers through `sender` from now on (a cluster node, once its broker side runs).
    pub fn set_marker_sender(&self, sender: Arc<dyn MarkerQueue>) {
        let _ = self.marker_sender.set(sender);
    }

    /// Every marker of `marker` is written (the marker sender says so): CompleteCommit /
    /// CompleteAbort, if this broker still coordinates the transaction in the marker's epoch
    /// (the shard checks). A Complete record that cannot be written yet (not NOT_COORDINATOR)
    /// is retried by sending the markers again.
    pub fn markers_written(&self, env: &Env<'_>, marker: TxnMarkerRequest) {
        let mut coord = self.lock_following(env);
        let p = coord.partition_for(&marker.transactional_id);
        let mut work = VecDeque::new();
        match coord.markers_completed(&marker, now_ms()) {
            Ok(Some(more)) => work.push_back(more),
            Ok(None) => {}
            Err(TxnError::NotCoordinator) => {}
            Err(e) => {
                tracing::warn!(error = ?e, transactional_id = %marker.transactional_id, "cannot complete the transaction yet; markers sent again");
                if let Some(s) = self.marker_sender.get() {
                    s.enqueue(p, marker);
                }
            }
        }
        work.extend(self.release_all(env, &mut coord, p));
        self.process(env, &mut coord, work);
        drop(coord);
        self.markers_done.notify_waiters();
    }

    /// EndTxn: the coordinator's answer, given once the transaction's markers are written (see
    /// [`wait_markers_written`](Self::wait_markers_written)), or CONCURRENT_TRANSACTIONS once
    /// `bound` passes first: the client retries, and a retry is answered CONCURRENT_TRANSACTIONS
    /// until the markers are written, then NONE (Kafka's answers to a retried EndTxn), so the
    /// client never starts its next transaction while this one is in Prepare*.
    pub async fn end_txn(
        &self,
        env: &Env<'_>,
        cluster: Option<&ClusterNode>,
        req: &EndTxnRequest,
        bound: std::time::Duration,
    ) -> EndTxnResponse {
        let id = &req.transactional_id;
        let reply = self
            .call(env, cluster, id, |c, pids, ctx| {
                c.end_txn(req, now_ms(), pids, ctx)
            })
            .await;
        let mut resp = match reply {
            Some(TxnReply::EndTxn(x)) => x,
            _ => EndTxnResponse::error(TxnError::UnknownServerError),
        };
        if resp.error.is_none() && !self.wait_markers_written(env, cluster, id, bound).await {
            tracing::info!(transactional_id = %id, "EndTxn: markers still being written; answered CONCURRENT_TRANSACTIONS");
            resp.error = Some(TxnError::ConcurrentTransactions);
        }
        resp
    }

    /// Waits, at most `bound`, while `transactional_id` is in PrepareCommit / PrepareAbort, i.e.
    /// until its markers are written; `false` when they are still being written at `bound`. The
    /// EndTxn handler answers after this: Kafka answers as soon as Prepare* is in the log, but
    /// then a client's next transaction meets the markers still in flight (AddPartitionsToTxn gets
    /// CONCURRENT_TRANSACTIONS, and an abort right away gets INVALID_TXN_STATE, which librdkafka
    /// treats as fatal). Across brokers the markers take a replication round trip per leader, so
    /// the window is real; waiting closes it. The bound keeps the answer within a client's
    /// request timeout.
    pub async fn wait_markers_written(
        &self,
        env: &Env<'_>,
        cluster: Option<&ClusterNode>,
        transactional_id: &str,
        bound: std::time::Duration,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            // Registered before the state is read, so a completion in between is not missed.
            let notified = self.markers_done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let state = self.read(env, cluster, Some(transactional_id), |c| {
                c.describe(transactional_id).state
            });
            if !matches!(
                state,
                Some(TxnState::PrepareCommit | TxnState::PrepareAbort)
            ) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return false;
            }
        }
    }

    /// The coordinator lock. Its holder may wait for a network round trip (a producer-id block
    /// from the controller, `cluster::allocate_producer_ids`, in `block_in_place`), so waiting
    /// for it must not hold a runtime worker: request tasks and the ticker all parked on this
    /// lock would leave no worker to drive that round trip (the node hangs, its heartbeats and
    /// quorum answers stop). Off a multi-threaded runtime (unit tests) it just locks.
    fn lock_coord(&self) -> MutexGuard<'_, TxnCoordinator<LogWriter, Ctx>> {
        crate::state::lock_without_holding_a_worker(&self.coord)
    }

    /// Partition `p` of `__transaction_state` here: created on demand on one node; on a cluster
    /// node only if the publisher opened it.
    fn state_partition(&self, env: &Env<'_>, p: i32) -> Option<Arc<Partition>> {
        let topic = if self.cluster {
            env.topics.get(TRANSACTION_STATE_TOPIC)?
        } else {
            env.topics.ensure_internal(TRANSACTION_STATE_TOPIC).ok()?
        };
        topic.partitions.get(p as usize).cloned()
    }

    /// Drops partition `p` (this broker no longer leads it in its epoch): its held answers are
    /// failed NOT_COORDINATOR.
    fn resign(&self, coord: &mut TxnCoordinator<LogWriter, Ctx>, p: i32) -> Vec<Released<Ctx>> {
        let was = coord.status(p);
        self.loaded.lock().remove(&p);
        if let Some(s) = self.marker_sender.get() {
            s.remove_txn_partition(p);
        }
        let held = coord.resign(p);
        if was.is_some() {
            tracing::info!(partition = p, status = ?was, "resigned transaction coordinator partition");
        }
        held.into_iter()
            .map(|r| Released {
                context: r.context,
                reply: r.reply.failed(TxnError::NotCoordinator),
                markers: Vec::new(),
            })
            .collect()
    }

    /// Makes partition `p` match this broker's leadership: kept if loaded under the current
    /// leader epoch of the same partition, resigned if not, (re)loaded if led here.
    fn refresh(
        &self,
        env: &Env<'_>,
        cluster: Option<&ClusterNode>,
        coord: &mut TxnCoordinator<LogWriter, Ctx>,
        p: i32,
    ) -> Vec<Released<Ctx>> {
        let partition = self.state_partition(env, p);
        let epoch = partition
            .as_ref()
            .and_then(|part| coordinator_epoch(part, cluster));
        let loaded = self.loaded.lock().get(&p).cloned();
        let same = match (&loaded, &partition, epoch) {
            (Some(l), Some(part), Some(e)) => {
                Arc::ptr_eq(l, part)
                    && coord.status(p)
                        == Some(PartitionStatus::Active {
                            coordinator_epoch: e,
                        })
            }
            _ => false,
        };
        if same {
            return Vec::new();
        }
        let mut out = Vec::new();
        if loaded.is_some() || coord.status(p).is_some() {
            out.extend(self.resign(coord, p));
        }
        let (Some(partition), Some(epoch)) = (partition, epoch) else {
            return out;
        };
        let serde = FollowedTxnSerde(self.transaction_version.clone());
        let (log, _) = read_partition(&partition, &serde);
        let n = log.entries.len();
        let writer = CoordinatorLogWriter::new(partition.clone(), epoch, serde);
        match coord.complete_loading(p, epoch, writer, log.entries, now_ms()) {
            Ok(released) => {
                tracing::info!(
                    partition = p,
                    epoch,
                    records = n,
                    "loaded transaction coordinator partition"
                );
                self.loaded.lock().insert(p, partition);
                out.extend(resend(released));
            }
            Err(e) => {
                tracing::error!(partition = p, error = ?e, "cannot load __transaction_state partition");
            }
        }
        out
    }

    /// Loads every `__transaction_state` partition led here in an epoch it is not loaded under,
    /// so loading follows leadership as Kafka's `onElection` does: after a failover the new
    /// leader re-sends the markers of Prepare* transactions and aborts the ones that time out
    /// although no client asks about them (their producer may have died with the old leader;
    /// the LSO of their partitions would hang). Requests meanwhile wait on the coordinator lock
    /// rather than getting COORDINATOR_LOAD_IN_PROGRESS. Never creates the topic (one node: the
    /// first request does).
    fn load_led(
        &self,
        env: &Env<'_>,
        cluster: Option<&ClusterNode>,
        coord: &mut TxnCoordinator<LogWriter, Ctx>,
    ) -> Vec<Released<Ctx>> {
        let Some(topic) = env.topics.get(TRANSACTION_STATE_TOPIC) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (p, partition) in topic.partitions.iter().enumerate() {
            let p = p as i32;
            let Some(epoch) = local_leader_epoch(partition) else {
                continue;
            };
            let loaded = self
                .loaded
                .lock()
                .get(&p)
                .is_some_and(|l| Arc::ptr_eq(l, partition))
                && coord.status(p)
                    == Some(PartitionStatus::Active {
                        coordinator_epoch: epoch,
                    });
            if !loaded && coordinator_epoch(partition, cluster) == Some(epoch) {
                out.extend(self.refresh(env, cluster, coord, p));
            }
        }
        out
    }

    /// Loads the partition owning `transactional_id` if needed (see [`TxnService::refresh`]).
    fn ensure_loaded(
        &self,
        env: &Env<'_>,
        cluster: Option<&ClusterNode>,
        coord: &mut TxnCoordinator<LogWriter, Ctx>,
        transactional_id: &str,
    ) -> Vec<Released<Ctx>> {
        let p = coord.partition_for(transactional_id);
        self.refresh(env, cluster, coord, p)
    }

    /// Runs one coordinator call and returns its answer (waiting for it if held).
    pub async fn call(
        &self,
        env: &Env<'_>,
        cluster: Option<&ClusterNode>,
        transactional_id: &str,
        f: impl FnOnce(
            &mut TxnCoordinator<LogWriter, Ctx>,
            &mut dyn ProducerIdGenerator,
            Ctx,
        ) -> Option<Released<Ctx>>,
    ) -> Option<TxnReply> {
        let ctx = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(ctx, tx);
        {
            let mut coord = self.lock_following(env);
            let mut work: VecDeque<Released<Ctx>> = self
                .ensure_loaded(env, cluster, &mut coord, transactional_id)
                .into();
            let p = coord.partition_for(transactional_id);
            let mut pids = Pids(env.pids);
            if let Some(r) = f(&mut coord, &mut pids, ctx) {
                work.push_back(r);
            }
            work.extend(self.release_all(env, &mut coord, p));
            self.process(env, &mut coord, work);
        }
        let reply = rx.await.ok();
        self.pending.lock().remove(&ctx);
        reply
    }

    fn release_all(
        &self,
        env: &Env<'_>,
        coord: &mut TxnCoordinator<LogWriter, Ctx>,
        p: i32,
    ) -> Vec<Released<Ctx>> {
        let hw = env
            .topics
            .partition(TRANSACTION_STATE_TOPIC, p)
            .map(|part| part.high_watermark())
            .unwrap_or(0);
        coord.on_high_watermark(p, hw)
    }

    /// Delivers answers and carries out marker writes (which may release more answers).
    fn process(
        &self,
        env: &Env<'_>,
        coord: &mut TxnCoordinator<LogWriter, Ctx>,
        mut work: VecDeque<Released<Ctx>>,
    ) {
        while let Some(r) = work.pop_front() {
            if let Some(ctx) = r.context {
                if let Some(tx) = self.pending.lock().remove(&ctx) {
                    let _ = tx.send(r.reply.clone());
                }
            }
            for marker in r.markers {
                let p = coord.partition_for(&marker.transactional_id);
                if let Some(s) = self.marker_sender.get() {
                    s.enqueue(p, marker);
                    continue;
                }
                write_markers(env, &marker);
                match coord.markers_completed(&marker, now_ms()) {
                    Ok(Some(more)) => work.push_back(more),
                    Ok(None) => {}
                    Err(e) => tracing::warn!(error = ?e, "markers_completed failed"),
                }
                work.extend(self.release_all(env, coord, p));
            }
        }
    }

    /// Resigns every loaded partition (broker shutdown): held answers get NOT_COORDINATOR, and
    /// the coordinator lets go of its `__transaction_state` partitions so the logs can close and
    /// their dir be marked clean.
    pub fn unload_all(&self, env: &Env<'_>) {
        let mut coord = self.lock_following(env);
        let loaded: Vec<i32> = self.loaded.lock().keys().copied().collect();
        let mut work: VecDeque<Released<Ctx>> = VecDeque::new();
        for p in loaded {
            work.extend(self.resign(&mut coord, p));
        }
        // Only answers: a resigned partition has no markers left to send.
        while let Some(r) = work.pop_front() {
            if let Some(tx) = r.context.and_then(|ctx| self.pending.lock().remove(&ctx)) {
                let _ = tx.send(r.reply.clone());
            }
        }
    }

    /// Periodic work: loads partitions newly led here, resigns partitions no longer led here in
    /// their epoch, aborts timed-out transactions, expires idle ids.
    pub fn tick(&self, env: &Env<'_>, cluster: Option<&ClusterNode>) {
        let mut coord = self.lock_following(env);
        let now = now_ms();
        let mut work: VecDeque<Released<Ctx>> = self.load_led(env, cluster, &mut coord).into();
        let loaded: Vec<(i32, Arc<Partition>)> = self
            .loaded
            .lock()
            .iter()
            .map(|(p, part)| (*p, part.clone()))
            .collect();
        for (p, part) in &loaded {
            let epoch = match coord.status(*p) {
                Some(PartitionStatus::Active { coordinator_epoch }) => Some(coordinator_epoch),
                _ => None,
            };
            if local_leader_epoch(part).is_none() || local_leader_epoch(part) != epoch {
                work.extend(self.resign(&mut coord, *p));
            }
        }
        work.extend(coord.on_tick(now));
        let loaded: Vec<i32> = self.loaded.lock().keys().copied().collect();
        for p in loaded {
            work.extend(self.release_all(env, &mut coord, p));
        }
        self.process(env, &mut coord, work);
    }

    /// The `__transaction_state` partitions loaded here, in order, without loading any.
    pub fn loaded_partitions(&self) -> Vec<i32> {
        let mut v: Vec<i32> = self.loaded.lock().keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// Transactional ids in the partitions of `__transaction_state` loaded here.
    pub fn num_transactional_ids(&self) -> usize {
        let coord = self.lock_coord();
        coord
            .partitions()
            .into_iter()
            .filter_map(|p| coord.shard(p))
            .map(|s| s.transactions().len())
            .sum()
    }

    /// Read-only access (Describe/ListTransactions).
    pub fn read<T>(
        &self,
        env: &Env<'_>,
        cluster: Option<&ClusterNode>,
        transactional_id: Option<&str>,
        f: impl FnOnce(&TxnCoordinator<LogWriter, Ctx>) -> T,
    ) -> T {
        let mut coord = self.lock_following(env);
        if let Some(id) = transactional_id {
            let released = self.ensure_loaded(env, cluster, &mut coord, id);
            self.process(env, &mut coord, released.into());
        }
        f(&coord)
    }

    /// Loads every partition led here (ListTransactions must see them all) and resigns the
    /// others.
    pub fn load_all(&self, env: &Env<'_>, cluster: Option<&ClusterNode>, partitions: i32) {
        let mut coord = self.lock_following(env);
        for p in 0..partitions {
            let released = self.refresh(env, cluster, &mut coord, p);
            self.process(env, &mut coord, released.into());
        }
    }
}

/// Markers of transactions a load found in Prepare*, as work for [`TxnService::process`].
fn resend(markers: Vec<TxnMarkerRequest>) -> Vec<Released<Ctx>> {
    if markers.is_empty() {
        return Vec::new();
    }
    vec![Released {
        context: None,
        reply: TxnReply::MarkersCompleted(false),
        markers,
    }]
}

/// Writes the COMMIT/ABORT marker of `m` to every partition of the transaction (one node: every
/// partition is led here and the HW follows the append).
fn write_markers(env: &Env<'_>, m: &TxnMarkerRequest) {
    let commit = m.result == TransactionResult::Commit;
    let now = now_ms();
    for tp in &m.partitions {
        let Some(p) = env.topics.partition(&tp.topic, tp.partition) else {
            tracing::warn!(topic = %tp.topic, partition = tp.partition, "marker for an unknown partition skipped");
            continue;
        };
        // acks = 1: one node, no ISR to wait for.
        if let Err(e) = p.append_txn_marker(&end_txn_marker(m), 1, 1, now) {
            tracing::warn!(topic = %tp.topic, partition = tp.partition, code = ?e.code, msg = ?e.message, "marker write failed");
        }
        if tp.topic == GROUP_METADATA_TOPIC {
            env.groups.complete_transaction(m.producer_id, commit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use josef_records::{DecompressLimits, RecordBatch};
    use josef_sequencer::{ProducerIdManager, DEFAULT_PRODUCER_ID_BLOCK_SIZE};
    use josef_txn::{InitProducerIdRequest, InitProducerIdResponse};
    use std::collections::BTreeMap;

    /// What the coordinator tests run on: a cluster node's config in a fresh data dir, its topics,
    /// a group service and a producer id allocator, for an [`Env`] at transaction version 0.
    struct Fixture {
        _dir: tempfile::TempDir,
        config: Arc<BrokerConfig>,
        topics: TopicManager,
        groups: GroupService,
        pids: Mutex<ProducerIdManager<FileBlockStore>>,
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let config = Arc::new(cluster_config(dir.path()));
            let topics = TopicManager::load(config.clone(), None).unwrap();
            let groups = GroupService::new(&config);
            let pids = Mutex::new(
                ProducerIdManager::new(
                    FileBlockStore::new(dir.path()),
                    DEFAULT_PRODUCER_ID_BLOCK_SIZE,
                )
                .unwrap(),
            );
            Fixture {
                _dir: dir,
                config,
                topics,
                groups,
                pids,
            }
        }

        fn env(&self) -> Env<'_> {
            Env {
                topics: &self.topics,
                groups: &self.groups,
                pids: &self.pids,
                transaction_version: TransactionVersion::V0,
            }
        }
    }

    fn cluster_config(dir: &std::path::Path) -> BrokerConfig {
        let props: BTreeMap<String, String> = [
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
            ("transaction.state.log.num.partitions", "1"),
            ("log.dirs", dir.to_str().unwrap()),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        BrokerConfig::from_properties(props).unwrap()
    }

    fn init(
        svc: &TxnService,
        env: &Env<'_>,
        rt: &tokio::runtime::Runtime,
    ) -> InitProducerIdResponse {
        let req = InitProducerIdRequest {
            transactional_id: Some("t1".into()),
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
        };
        let reply = rt.block_on(svc.call(env, None, "t1", |c, pids, ctx| {
            c.init_producer_id(&req, now_ms(), pids, ctx)
        }));
        match reply {
            Some(TxnReply::InitProducerId(r)) => r,
            other => panic!("InitProducerId answered {other:?}"),
        }
    }

    /// The schema version (first two bytes) of the value of every record in `p`'s log.
    fn value_versions(p: &Partition) -> Vec<i16> {
        let batches = { p.batches_from(0).unwrap() };
        let mut out = Vec::new();
        for (_, bytes) in batches {
            let batch = RecordBatch::parse(bytes).unwrap();
            for r in batch
                .records(&DecompressLimits::default())
                .unwrap()
                .flatten()
            {
                let v = r.value.expect("a value");
                out.push(i16::from_be_bytes([v[0], v[1]]));
            }
        }
        out
    }

    /// The coordinator follows the finalized `transaction.version` it is called with: records are
    /// written with value schema v0 at level 0 and the flexible v1 from level 1 on, without a
    /// restart (UpdateFeatures).
    #[test]
    fn records_follow_the_finalized_transaction_version() {
        let f = Fixture::new();
        let (config, topics) = (&f.config, &f.topics);
        let mut env = f.env();
        let svc = TxnService::new(config);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        topics
            .create_with_id(
                TRANSACTION_STATE_TOPIC,
                josef_protocol::Uuid::from_u128(9),
                1,
                BTreeMap::new(),
            )
            .unwrap();
        let p = topics.partition(TRANSACTION_STATE_TOPIC, 0).unwrap();
        let me = p.local_id();
        p.make_leader(1, 1, &[me], &[me], 1, now_ms()).unwrap();
        assert_eq!(init(&svc, &env, &rt).error, None);
        env.transaction_version = TransactionVersion::V2;
        assert_eq!(init(&svc, &env, &rt).error, None);
        assert_eq!(
            svc.read(&env, None, None, |c| c.config().transaction_version),
            TransactionVersion::V2
        );
        assert_eq!(value_versions(&p), vec![0, 1]);
    }

    /// The coordinator epoch is the partition's leader epoch; a lost leadership answers
    /// NOT_COORDINATOR and resigns the partition (tick), a re-election reloads it from the log in
    /// the new epoch.
    #[test]
    fn a_transaction_partition_is_served_only_while_led_with_its_leader_epoch() {
        let f = Fixture::new();
        let (config, topics) = (&f.config, &f.topics);
        let env = f.env();
        let svc = TxnService::new(config);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // No __transaction_state on a cluster node until the controller creates it.
        assert_eq!(init(&svc, &env, &rt).error, Some(TxnError::NotCoordinator));
        assert!(topics.get(TRANSACTION_STATE_TOPIC).is_none());
        topics
            .create_with_id(
                TRANSACTION_STATE_TOPIC,
                josef_protocol::Uuid::from_u128(9),
                1,
                BTreeMap::new(),
            )
            .unwrap();
        let p = topics.partition(TRANSACTION_STATE_TOPIC, 0).unwrap();
        let me = p.local_id();
        p.make_leader(3, 3, &[me], &[me], 1, now_ms()).unwrap();
        let first = init(&svc, &env, &rt);
        assert_eq!(first.error, None);
        let status = |svc: &TxnService| svc.read(&env, None, None, |c| c.status(0));
        assert_eq!(
            status(&svc),
            Some(PartitionStatus::Active {
                coordinator_epoch: 3
            })
        );
        let written = p.log_end_offset();

        // Another broker leads in epoch 4.
        p.make_follower(2, 4, 4);
        assert_eq!(init(&svc, &env, &rt).error, Some(TxnError::NotCoordinator));
        svc.tick(&env, None);
        assert_eq!(status(&svc), None);
        assert_eq!(p.log_end_offset(), written, "nothing written as a follower");

        // Elected again in epoch 5: reloaded from the log, the producer's epoch goes on.
        p.make_leader(5, 5, &[me], &[me], 1, now_ms()).unwrap();
        let again = init(&svc, &env, &rt);
        assert_eq!(again.error, None);
        assert_eq!(again.producer_id, first.producer_id);
        assert_eq!(again.producer_epoch, first.producer_epoch + 1);
        assert_eq!(
            status(&svc),
            Some(PartitionStatus::Active {
                coordinator_epoch: 5
            })
        );
    }

    /// Loading follows leadership (issue #17): a partition elected here is loaded by the tick
    /// alone, with the transactions the previous leader wrote, in the new leader epoch, so
    /// Prepare* markers are re-sent and timed-out transactions aborted although no client asks.
    #[test]
    fn the_tick_loads_a_partition_elected_here_without_any_request() {
        let f = Fixture::new();
        let env = f.env();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let quiet = TxnService::new(&f.config);
        // Nothing to load before the controller creates the topic, and the tick does not.
        quiet.tick(&env, None);
        assert!(f.topics.get(TRANSACTION_STATE_TOPIC).is_none());
        f.topics
            .create_with_id(
                TRANSACTION_STATE_TOPIC,
                josef_protocol::Uuid::from_u128(9),
                1,
                BTreeMap::new(),
            )
            .unwrap();
        let p = f.topics.partition(TRANSACTION_STATE_TOPIC, 0).unwrap();
        let me = p.local_id();
        p.make_follower(2, 1, 1);
        quiet.tick(&env, None);
        assert_eq!(
            quiet.num_transactional_ids(),
            0,
            "led elsewhere: not loaded"
        );

        p.make_leader(2, 2, &[me], &[me], 1, now_ms()).unwrap();
        let old = TxnService::new(&f.config);
        assert_eq!(init(&old, &env, &rt).error, None);

        // Elected here in epoch 3: the new coordinator has it after one tick.
        p.make_leader(3, 3, &[me], &[me], 1, now_ms()).unwrap();
        let new = TxnService::new(&f.config);
        new.tick(&env, None);
        assert_eq!(new.num_transactional_ids(), 1);
        assert_eq!(
            new.read(&env, None, None, |c| c.status(0)),
            Some(PartitionStatus::Active {
                coordinator_epoch: 3
            })
        );
    }

    /// Marker batches a test coordinator hands out, never sent: the test says when they are
    /// written.
    #[derive(Default)]
    struct HeldMarkers(Mutex<Vec<TxnMarkerRequest>>);

    impl MarkerQueue for HeldMarkers {
        fn enqueue(&self, _txn_partition: i32, marker: TxnMarkerRequest) {
            self.0.lock().push(marker);
        }

        fn remove_txn_partition(&self, _txn_partition: i32) {}
    }

    /// Bug 10 of docs/reliability.md: on a cluster node an accepted EndTxn is answered once its
    /// markers are written, not as soon as PrepareCommit is in the log (the client's next
    /// transaction then met PrepareCommit, and an abort right away got a fatal
    /// INVALID_TXN_STATE); when the markers take longer than the bound it is answered
    /// CONCURRENT_TRANSACTIONS, and the retry after they are written NONE.
    #[test]
    fn end_txn_is_answered_once_its_markers_are_written_or_at_the_bound() {
        use josef_txn::{AddPartitionsToTxnRequest, TopicPartition};
        use std::future::Future;
        use std::task::Poll;
        use std::time::Duration;

        let f = Fixture::new();
        let (config, topics) = (&f.config, &f.topics);
        let env = f.env();
        let svc = TxnService::new(config);
        let held = Arc::new(HeldMarkers::default());
        svc.set_marker_sender(held.clone());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        topics
            .create_with_id(
                TRANSACTION_STATE_TOPIC,
                josef_protocol::Uuid::from_u128(9),
                1,
                BTreeMap::new(),
            )
            .unwrap();
        let p = topics.partition(TRANSACTION_STATE_TOPIC, 0).unwrap();
        let me = p.local_id();
        p.make_leader(1, 1, &[me], &[me], 1, now_ms()).unwrap();
        let producer = init(&svc, &env, &rt);
        assert_eq!(producer.error, None);
        let add = AddPartitionsToTxnRequest {
            transactional_id: "t1".into(),
            producer_id: producer.producer_id,
            producer_epoch: producer.producer_epoch,
            partitions: [TopicPartition {
                topic: "data".into(),
                partition: 0,
            }]
            .into(),
            verify_only: false,
        };
        let begin = || {
            let r = rt.block_on(svc.call(&env, None, "t1", |c, _, ctx| {
                c.add_partitions_to_txn(&add, now_ms(), TransactionVersion::V0, ctx)
            }));
            match r {
                Some(TxnReply::AddPartitionsToTxn(r)) => assert_eq!(r.first_error(), None),
                other => panic!("AddPartitionsToTxn answered {other:?}"),
            }
        };
        let commit = EndTxnRequest {
            transactional_id: "t1".into(),
            producer_id: producer.producer_id,
            producer_epoch: producer.producer_epoch,
            committed: true,
            client_transaction_version: TransactionVersion::V0,
        };
        let state = || svc.read(&env, None, Some("t1"), |c| c.describe("t1").state);

        // Markers written while the EndTxn waits: answered then, NONE.
        begin();
        rt.block_on(async {
            let mut answer =
                std::pin::pin!(svc.end_txn(&env, None, &commit, Duration::from_secs(60)));
            let first = std::future::poll_fn(|cx| Poll::Ready(answer.as_mut().poll(cx))).await;
            assert!(
                first.is_pending(),
                "EndTxn answered before its markers were written: {first:?}"
            );
            assert_eq!(state(), Some(TxnState::PrepareCommit));
            let marker = held.0.lock().pop().expect("the markers were handed out");
            svc.markers_written(&env, marker);
            let resp = tokio::time::timeout(Duration::from_secs(10), answer)
                .await
                .expect("EndTxn answered once the markers are written");
            assert_eq!(resp.error, None);
        });
        assert_eq!(state(), Some(TxnState::CompleteCommit));

        // Markers not written within the bound: CONCURRENT_TRANSACTIONS; once they are, the
        // retry gets NONE.
        begin();
        let resp = rt.block_on(svc.end_txn(&env, None, &commit, Duration::from_millis(100)));
        assert_eq!(resp.error, Some(TxnError::ConcurrentTransactions));
        assert_eq!(state(), Some(TxnState::PrepareCommit));
        let marker = held.0.lock().pop().expect("the markers were handed out");
        svc.markers_written(&env, marker);
        let retry = rt.block_on(svc.end_txn(&env, None, &commit, Duration::from_millis(100)));
        assert_eq!(retry.error, None);
        assert_eq!(state(), Some(TxnState::CompleteCommit));
    }
}
