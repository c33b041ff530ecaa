//! Drives josef-group: one `GroupCoordinator` shard per `__consumer_offsets` partition, loaded
//! on first use by replaying the partition; each handler result's records are appended to the
//! partition (Kafka's key/value format) and replayed; completions of parked JoinGroup/SyncGroup
//! requests are delivered through oneshot channels; a ticker fires due timers.
//!
//! On one node the HW reaches the LEO inside the append, so responses are released right after
//! the write (what `CoordinatorDriver::on_high_watermark` would do).
//!
//! **Exclusivity** (Kafka's `CoordinatorRuntime` load/unload on election/resignation, C12): a
//! shard is served only while this broker leads its partition, and belongs to the leader epoch it
//! was loaded under (its coordinator epoch). A request for a partition not led here gets
//! NOT_COORDINATOR; a shard whose partition moved to another epoch or broker is unloaded (parked
//! JoinGroup/SyncGroup answered NOT_COORDINATOR, timers cancelled) by the next request or tick
//! (every 20 ms) that sees it, and the next request after a re-election loads it again by
//! replaying the partition to its LEO. On a cluster node the image must also name this broker
//! leader at that epoch (a partition opened at start is a leader of epoch 0 until the publisher
//! applies its role), and `__consumer_offsets` is never created here (the controller does it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use josef_coordinator::RecordSerde;
use josef_group::api::{Completion, GroupResponse, RequestId};
use josef_group::record::GroupRecord;
use josef_group::serde::GroupRecordSerde;
use josef_group::{
    placement, GroupConfig, GroupCoordinator, GroupResult, NoopTimer, RandomMemberIds,
};
use josef_log::BatchHeader;
use josef_records::{DecompressLimits, RecordBatch, RecordBatchBuilder};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::cluster::ClusterNode;
use crate::config::BrokerConfig;
use crate::partition::{control_type_of, Partition};
use crate::topics::{now_ms, Topic, TopicManager, GROUP_METADATA_TOPIC};

/// The coordinator type the broker runs.
pub type Coordinator = GroupCoordinator<NoopTimer, RandomMemberIds>;

/// One loaded shard.
pub struct Shard {
    /// The state machine.
    pub coord: Coordinator,
    partition: Arc<Partition>,
    /// The partition's leader epoch the shard was loaded under (the coordinator epoch).
    epoch: i32,
    /// Unloaded: whoever still holds it gets NOT_COORDINATOR.
    closed: bool,
}

impl Shard {
    /// Whether the partition is still led here in the epoch the shard was loaded under.
    fn current(&self) -> bool {
        !self.closed && local_leader_epoch(&self.partition) == Some(self.epoch)
    }
}

/// Why a group request cannot reach its coordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardError {
    /// `__consumer_offsets` cannot be created, or a write to it failed
    /// (COORDINATOR_NOT_AVAILABLE).
    NotAvailable,
    /// This broker does not lead the group's partition (NOT_COORDINATOR).
    NotCoordinator,
}

/// The leader epoch of `p` if this broker's replica of it is the leader.
pub fn local_leader_epoch(p: &Partition) -> Option<i32> {
    let d = p.data.lock();
    d.replication
        .is_leader()
        .then(|| d.replication.leader_epoch())
}

/// The coordinator epoch under which this broker may serve the coordinator shard of `p`: its
/// leader epoch while the local replica leads it and, on a cluster node, the committed image also
/// names this broker leader of that partition (same topic id) at that epoch. `None`: not the
/// coordinator here.
pub fn coordinator_epoch(p: &Partition, cluster: Option<&ClusterNode>) -> Option<i32> {
    let epoch = local_leader_epoch(p)?;
    if let Some(node) = cluster {
        let image = node.log.image();
        let t = image
            .topic_by_name(&p.topic)
            .filter(|t| t.id == p.topic_id)?;
        let reg = t.partitions.get(&p.index)?;
        if reg.leader != node.node_id || reg.leader_epoch != epoch {
            return None;
        }
    }
    Some(epoch)
}

/// All group coordinator shards of the node.
pub struct GroupService {
    config: GroupConfig,
    shards: Mutex<HashMap<i32, Arc<Mutex<Shard>>>>,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<GroupResponse>>>,
    next_request: AtomicU64,
    serde: GroupRecordSerde,
    /// A cluster node: the internal topic comes from the controller, never created here.
    cluster: bool,
}

impl GroupService {
    /// The coordinator settings taken from the broker config.
    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// Settings from the broker config.
    pub fn new(c: &BrokerConfig) -> Self {
        GroupService {
            config: GroupConfig {
                initial_rebalance_delay_ms: c.group_initial_rebalance_delay_ms.min(i32::MAX as i64)
                    as i32,
                min_session_timeout_ms: c.group_min_session_timeout_ms.min(i32::MAX as i64) as i32,
                max_session_timeout_ms: c.group_max_session_timeout_ms.min(i32::MAX as i64) as i32,
                max_group_size: c.group_max_size as usize,
                offsets_retention_ms: c.offsets_retention_minutes.saturating_mul(60_000),
                offsets_retention_check_interval_ms: c.offsets_retention_check_interval_ms,
                offset_metadata_max_bytes: c.offset_metadata_max_bytes.max(0) as usize,
                consumer_session_timeout_ms: c.group_consumer.session_timeout_ms,
                consumer_min_session_timeout_ms: c.group_consumer.min_session_timeout_ms,
                consumer_max_session_timeout_ms: c.group_consumer.max_session_timeout_ms,
                consumer_heartbeat_interval_ms: c.group_consumer.heartbeat_interval_ms,
                consumer_min_heartbeat_interval_ms: c.group_consumer.min_heartbeat_interval_ms,
                consumer_max_heartbeat_interval_ms: c.group_consumer.max_heartbeat_interval_ms,
                consumer_max_size: c.group_consumer.max_size.max(1) as usize,
                consumer_assignors: c.group_consumer.assignors.clone(),
                ..GroupConfig::default()
            },
            shards: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            serde: GroupRecordSerde::default(),
            cluster: c.cluster.is_some(),
        }
    }

    /// `__consumer_offsets`: created on demand on one node; on a cluster node only if the
    /// publisher opened it (else nothing is led here: NOT_COORDINATOR).
    fn offsets_topic(&self, topics: &TopicManager) -> Result<Arc<Topic>, ShardError> {
        if self.cluster {
            return topics
                .get(GROUP_METADATA_TOPIC)
                .ok_or(ShardError::NotCoordinator);
        }
        topics
            .ensure_internal(GROUP_METADATA_TOPIC)
            .map_err(|_| ShardError::NotAvailable)
    }

    /// The shard that owns `group_id` if this broker leads its partition, loading it on first
    /// use (and again after a change of leader epoch).
    pub fn shard(
        &self,
        topics: &TopicManager,
        cluster: Option<&ClusterNode>,
        group_id: &str,
    ) -> Result<Arc<Mutex<Shard>>, ShardError> {
        let topic = self.offsets_topic(topics)?;
        let n = topic.partitions.len() as i32;
        let index = placement::partition_for(group_id, n).ok_or(ShardError::NotAvailable)?;
        self.shard_at(&topic, index, cluster)
    }

    /// The shard of partition `index` of `topic` (see [`GroupService::shard`]).
    fn shard_at(
        &self,
        topic: &Topic,
        index: i32,
        cluster: Option<&ClusterNode>,
    ) -> Result<Arc<Mutex<Shard>>, ShardError> {
        let partition = topic
            .partitions
            .get(index as usize)
            .cloned()
            .ok_or(ShardError::NotAvailable)?;
        let is_current = |s: &Arc<Mutex<Shard>>, epoch: Option<i32>| {
            let g = s.lock();
            !g.closed && Some(g.epoch) == epoch && Arc::ptr_eq(&g.partition, &partition)
        };
        let epoch = coordinator_epoch(&partition, cluster);
        let existing = self.shards.lock().get(&index).cloned();
        if let Some(s) = existing {
            if is_current(&s, epoch) {
                return Ok(s);
            }
            // Loaded under another epoch (or another incarnation of the topic): resign.
            self.unload_if_same(index, &s);
        }
        let epoch = epoch.ok_or(ShardError::NotCoordinator)?;
        let shard = Arc::new(Mutex::new(self.load(partition.clone(), epoch)));
        let mut shards = self.shards.lock();
        if let Some(s) = shards.get(&index) {
            if is_current(s, Some(epoch)) {
                // Loaded concurrently by another request.
                return Ok(s.clone());
            }
        }
        let stale = shards.insert(index, shard.clone());
        drop(shards);
        if let Some(stale) = stale {
            self.close(&mut stale.lock());
        }
        Ok(shard)
    }

    /// Unloads the shard: parked requests answered NOT_COORDINATOR, timers cancelled; holders
    /// of it get NOT_COORDINATOR from then on.
    fn close(&self, shard: &mut Shard) {
        if shard.closed {
            return;
        }
        shard.closed = true;
        let completions = shard.coord.unload();
        self.deliver(completions);
        tracing::info!(
            partition = shard.partition.index,
            epoch = shard.epoch,
            "unloaded group coordinator shard"
        );
    }

    /// Removes `shard` from the map (if it is still the one at `index`) and unloads it.
    fn unload_if_same(&self, index: i32, shard: &Arc<Mutex<Shard>>) {
        {
            let mut shards = self.shards.lock();
            if shards.get(&index).is_some_and(|s| Arc::ptr_eq(s, shard)) {
                shards.remove(&index);
            }
        }
        self.close(&mut shard.lock());
    }

    fn load(&self, partition: Arc<Partition>, epoch: i32) -> Shard {
        let mut coord = Coordinator::new(self.config.clone(), NoopTimer, RandomMemberIds);
        let batches = {
            let d = partition.data.lock();
            d.log
                .batches_from(d.log.log_start_offset())
                .unwrap_or_default()
        };
        let mut count = 0usize;
        for (_, bytes) in batches {
            let Ok(h) = BatchHeader::parse(&bytes) else {
                continue;
            };
            if h.is_control() {
                if let Some(ct) = control_type_of(&bytes) {
                    coord.complete_transaction(
                        h.producer_id,
                        ct == josef_sequencer::ControlType::Commit,
                    );
                }
                continue;
            }
            let Ok(batch) = RecordBatch::parse(bytes) else {
                continue;
            };
            let Ok(records) = batch.records(&DecompressLimits::default()) else {
                continue;
            };
            for r in records.flatten() {
                let Some(key) = r.key.as_deref() else {
                    continue;
                };
                match self.serde.deserialize(key, r.value.as_deref()) {
                    Ok(rec) => {
                        coord.replay(r.offset, h.producer_id, h.producer_epoch, &rec);
                        count += 1;
                    }
                    Err(e) => tracing::debug!(error = %e, "skipping unreadable group record"),
                }
            }
        }
        tracing::info!(
            partition = partition.index,
            epoch,
            records = count,
            "loaded group coordinator shard"
        );
        Shard {
            coord,
            partition,
            epoch,
            closed: false,
        }
    }

    /// Appends and replays a result's records, then delivers its completions. A failed append
    /// unloads the shard (the state machine already counted the records) and fails the request:
    /// its completions are dropped (their waiters get NOT_COORDINATOR) and the next request
    /// reloads the shard from the log.
    fn finish<T>(&self, shard: &mut Shard, result: GroupResult<T>) -> Result<T, ShardError> {
        let GroupResult {
            records,
            response,
            completions,
            transaction,
        } = result;
        if !records.is_empty() {
            if let Err(e) = self.write(shard, &records, transaction) {
                {
                    let mut pending = self.pending.lock();
                    for c in &completions {
                        pending.remove(&c.request);
                    }
                }
                self.close(shard);
                return Err(e);
            }
        }
        self.deliver(completions);
        Ok(response)
    }

    fn write(
        &self,
        shard: &mut Shard,
        records: &[GroupRecord],
        transaction: Option<(i64, i16)>,
    ) -> Result<(), ShardError> {
        // Never write to a partition this shard's epoch no longer leads (Kafka appends with the
        // coordinator's leader epoch and gets NOT_LEADER_OR_FOLLOWER -> NOT_COORDINATOR).
        if !shard.current() {
            return Err(ShardError::NotCoordinator);
        }
        let now = now_ms();
        let mut b = RecordBatchBuilder::new().create_time();
        if let Some((pid, epoch)) = transaction {
            b = b.producer(pid, epoch, 0).transactional(true);
        }
        for r in records {
            let (k, v) = self.serde.serialize(r);
            b = b.record(now, k.as_deref(), v.as_deref());
        }
        let (pid, epoch) = transaction.unwrap_or((-1, -1));
        let appended = b.build().map_err(|e| e.to_string()).and_then(|batch| {
            shard
                .partition
                .append_internal(batch, now)
                .map_err(|e| format!("{:?}", e.code))
        });
        match appended {
            Ok(info) => {
                for (i, r) in records.iter().enumerate() {
                    shard
                        .coord
                        .replay(info.first_offset + i as i64, pid, epoch, r);
                }
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot append group records; unloading the shard");
                Err(if shard.current() {
                    ShardError::NotAvailable
                } else {
                    ShardError::NotCoordinator
                })
            }
        }
    }

    fn deliver(&self, completions: Vec<Completion>) {
        if completions.is_empty() {
            return;
        }
        let mut pending = self.pending.lock();
        for c in completions {
            if let Some(tx) = pending.remove(&c.request) {
                let _ = tx.send(c.response);
            }
        }
    }

    /// Runs a handler that answers at once; NOT_COORDINATOR if the shard's leadership is gone.
    pub fn run<T>(
        &self,
        shard: &Arc<Mutex<Shard>>,
        f: impl FnOnce(&mut Coordinator, i64) -> GroupResult<T>,
    ) -> Result<T, ShardError> {
        let mut s = shard.lock();
        if !s.current() {
            self.close(&mut s);
            return Err(ShardError::NotCoordinator);
        }
        let result = f(&mut s.coord, now_ms());
        self.finish(&mut s, result)
    }

    /// Runs a handler whose answer may come later as a completion (JoinGroup, SyncGroup). A
    /// shard unloaded meanwhile answers its parked requests NOT_COORDINATOR.
    pub async fn run_parked(
        &self,
        shard: &Arc<Mutex<Shard>>,
        f: impl FnOnce(&mut Coordinator, i64, RequestId) -> GroupResult<()>,
    ) -> Result<GroupResponse, ShardError> {
        let id = self.next_request.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(id, tx);
        if let Err(e) = self.run(shard, |c, now| f(c, now, id)) {
            self.pending.lock().remove(&id);
            return Err(e);
        }
        rx.await.map_err(|_| ShardError::NotCoordinator)
    }

    /// Reads without writing; NOT_COORDINATOR if the shard's leadership is gone.
    pub fn read<T>(
        &self,
        shard: &Arc<Mutex<Shard>>,
        f: impl FnOnce(&Coordinator) -> T,
    ) -> Result<T, ShardError> {
        let mut s = shard.lock();
        if !s.current() {
            self.close(&mut s);
            return Err(ShardError::NotCoordinator);
        }
        Ok(f(&s.coord))
    }

    /// The shards of every partition led here (for ListGroups), loading those not loaded yet so
    /// groups persisted before a restart are listed too.
    pub fn loaded_shards(
        &self,
        topics: &TopicManager,
        cluster: Option<&ClusterNode>,
    ) -> Vec<Arc<Mutex<Shard>>> {
        let Some(t) = topics.get(GROUP_METADATA_TOPIC) else {
            return Vec::new();
        };
        (0..t.partitions.len() as i32)
            .filter_map(|i| self.shard_at(&t, i, cluster).ok())
            .collect()
    }

    /// Groups (classic and consumer) in the shards loaded here, without loading any (Kafka's
    /// NumGroups).
    pub fn num_groups(&self) -> usize {
        let shards: Vec<_> = self.shards.lock().values().cloned().collect();
        let all = josef_group::api::ListGroupsRequest::default();
        shards
            .iter()
            .map(|s| s.lock())
            .filter(|s| s.current())
            .map(|s| s.coord.list_groups(&all).groups.len())
            .sum()
    }

    /// Unloads shards whose partition is no longer led here in their epoch, then fires due
    /// timers of the others (called by the broker's ticker).
    pub fn tick(&self) {
        self.tick_with(None)
    }

    /// [`GroupService::tick`], first handing every shard the current topic image (so consumer
    /// groups see topics created and deleted, and regexes are resolved again).
    pub fn tick_with(&self, image: Option<&josef_group::consumer::TopicImage>) {
        let shards: Vec<_> = self
            .shards
            .lock()
            .iter()
            .map(|(i, s)| (*i, s.clone()))
            .collect();
        let now = now_ms();
        for (index, shard) in shards {
            if !shard.lock().current() {
                self.unload_if_same(index, &shard);
                continue;
            }
            let mut s = shard.lock();
            if let Some(image) = image {
                let result = s.coord.on_topics_changed(now, image.clone());
                if self.finish(&mut s, result).is_err() {
                    continue;
                }
            }
            while let Some(result) = s.coord.fire_next_due(now) {
                if self.finish(&mut s, result).is_err() {
                    break;
                }
            }
        }
    }

    /// Applies a transaction's end to pending transactional offset commits of every shard.
    pub fn complete_transaction(&self, producer_id: i64, committed: bool) {
        let shards: Vec<_> = self.shards.lock().values().cloned().collect();
        for shard in shards {
            shard
                .lock()
                .coord
                .complete_transaction(producer_id, committed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use josef_group::api::{
        JoinGroupRequest, JoinProtocol, OffsetCommitPartition, OffsetCommitRequest,
        OffsetCommitTopic, OffsetFetchGroup, OffsetFetchRequest, RequestContext,
    };
    use josef_group::Errors;
    use std::collections::BTreeMap;

    /// A cluster node's config (so `__consumer_offsets` is never created here) over `dir`.
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
            ("group.initial.rebalance.delay.ms", "3000"),
            ("log.dirs", dir.to_str().unwrap()),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        BrokerConfig::from_properties(props).unwrap()
    }

    fn commit(group: &str, offset: i64) -> OffsetCommitRequest {
        OffsetCommitRequest {
            group_id: group.into(),
            generation_id_or_member_epoch: -1,
            member_id: String::new(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics: vec![OffsetCommitTopic {
                name: "t".into(),
                partitions: vec![OffsetCommitPartition {
                    partition_index: 0,
                    committed_offset: offset,
                    committed_leader_epoch: -1,
                    commit_timestamp: -1,
                    committed_metadata: None,
                }],
            }],
        }
    }

    fn fetched(
        svc: &GroupService,
        shard: &Arc<Mutex<Shard>>,
        group: &str,
    ) -> Result<i64, ShardError> {
        let req = OffsetFetchRequest {
            groups: vec![OffsetFetchGroup {
                group_id: group.into(),
                topics: None,
            }],
            require_stable: false,
        };
        svc.read(shard, |c| {
            let g = &c.fetch_offsets(&req).groups[0];
            g.topics
                .iter()
                .flat_map(|t| &t.partitions)
                .map(|p| p.committed_offset)
                .next()
                .unwrap_or(-1)
        })
    }

    fn ctx() -> RequestContext {
        RequestContext {
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            api_version: 3,
        }
    }

    fn join(group: &str) -> JoinGroupRequest {
        JoinGroupRequest {
            group_id: group.into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 10_000,
            member_id: String::new(),
            group_instance_id: None,
            protocol_type: "consumer".into(),
            protocols: vec![JoinProtocol {
                name: "range".into(),
                metadata: bytes::Bytes::new(),
            }],
            reason: None,
        }
    }

    /// Served only while led here, in the epoch loaded under: a lost leadership answers
    /// NOT_COORDINATOR (parked joins too, by the tick), a re-election in a new epoch reloads the
    /// shard from the log, and the shard of the old epoch stays dead.
    #[test]
    fn a_shard_is_served_only_while_its_partition_is_led_in_its_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let config = Arc::new(cluster_config(dir.path()));
        let topics = TopicManager::load(config.clone(), None).unwrap();
        let svc = Arc::new(GroupService::new(&config));
        // No __consumer_offsets on a cluster node until the controller creates it.
        assert_eq!(
            svc.shard(&topics, None, "g").err(),
            Some(ShardError::NotCoordinator)
        );
        assert!(topics.get(GROUP_METADATA_TOPIC).is_none());
        topics
            .create_with_id(
                GROUP_METADATA_TOPIC,
                josef_protocol::Uuid::from_u128(7),
                1,
                BTreeMap::new(),
            )
            .unwrap();
        let p = topics.partition(GROUP_METADATA_TOPIC, 0).unwrap();
        let me = p.data.lock().replication.local_id();
        p.make_leader(0, 0, &[me], &[me], 1, now_ms()).unwrap();
        let old = svc.shard(&topics, None, "g").unwrap();
        let answer = svc.run(&old, |c, now| {
            c.commit_offsets(now, &ctx(), commit("g", 42))
        });
        assert_eq!(answer.unwrap().topics[0].partitions[0].error, Errors::None);
        assert_eq!(fetched(&svc, &old, "g"), Ok(42));

        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (s, shard) = (svc.clone(), old.clone());
            let parked = tokio::spawn(async move {
                s.run_parked(&shard, |c, now, id| {
                    c.join_group(now, id, &ctx(), join("g"))
                })
                .await
            });
            // The join waits for the initial rebalance delay.
            tokio::task::yield_now().await;
            assert!(!parked.is_finished());
            // Another broker becomes leader in epoch 1.
            p.make_follower(2, 1, 1);
            assert_eq!(
                svc.run(&old, |c, now| c.commit_offsets(
                    now,
                    &ctx(),
                    commit("g", 43)
                ))
                .err(),
                Some(ShardError::NotCoordinator)
            );
            assert_eq!(fetched(&svc, &old, "g"), Err(ShardError::NotCoordinator));
            assert_eq!(
                svc.shard(&topics, None, "g").err(),
                Some(ShardError::NotCoordinator)
            );
            svc.tick();
            match parked.await.unwrap() {
                Ok(GroupResponse::Join(j)) => assert_eq!(j.error, Errors::NotCoordinator),
                other => panic!("parked join answered {other:?}"),
            }
        });
        // Nothing was written as a follower.
        assert_eq!(p.data.lock().log.log_end_offset(), 1);

        // Elected again in epoch 2: loaded again from the log, under the new epoch.
        p.make_leader(2, 2, &[me], &[me], 1, now_ms()).unwrap();
        let new = svc.shard(&topics, None, "g").unwrap();
        assert!(!Arc::ptr_eq(&old, &new));
        assert_eq!(new.lock().epoch, 2);
        assert_eq!(fetched(&svc, &new, "g"), Ok(42));
        assert_eq!(
            svc.run(&old, |c, now| c.commit_offsets(
                now,
                &ctx(),
                commit("g", 44)
            ))
            .err(),
            Some(ShardError::NotCoordinator)
        );
        let answer = svc.run(&new, |c, now| {
            c.commit_offsets(now, &ctx(), commit("g", 45))
        });
        assert_eq!(answer.unwrap().topics[0].partitions[0].error, Errors::None);
        assert_eq!(fetched(&svc, &new, "g"), Ok(45));
        assert_eq!(svc.loaded_shards(&topics, None).len(), 1);
    }
}
