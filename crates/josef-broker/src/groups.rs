//! Drives josef-group: one `GroupCoordinator` shard per `__consumer_offsets` partition, loaded
//! on first use by replaying the partition; each handler result's records are appended to the
//! partition (Kafka's key/value format) and replayed; completions of parked JoinGroup/SyncGroup
//! requests are delivered through oneshot channels; a ticker fires due timers.
//!
//! On one node the HW reaches the LEO inside the append, so responses are released right after
//! the write (what `CoordinatorDriver::on_high_watermark` would do).

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

use crate::config::BrokerConfig;
use crate::partition::{control_type_of, Partition};
use crate::topics::{now_ms, TopicManager, GROUP_METADATA_TOPIC};

/// The coordinator type the broker runs.
pub type Coordinator = GroupCoordinator<NoopTimer, RandomMemberIds>;

/// One loaded shard.
pub struct Shard {
    /// The state machine.
    pub coord: Coordinator,
    partition: Arc<Partition>,
}

/// Why a group request cannot reach its coordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardError {
    /// `__consumer_offsets` cannot be created.
    NotAvailable,
}

/// All group coordinator shards of the node.
pub struct GroupService {
    config: GroupConfig,
    shards: Mutex<HashMap<i32, Arc<Mutex<Shard>>>>,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<GroupResponse>>>,
    next_request: AtomicU64,
    serde: GroupRecordSerde,
}

impl GroupService {
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
                offset_metadata_max_bytes: c.offset_metadata_max_bytes.max(0) as usize,
                ..GroupConfig::default()
            },
            shards: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            serde: GroupRecordSerde::default(),
        }
    }

    /// The shard that owns `group_id`, loading it on first use.
    pub fn shard(
        &self,
        topics: &TopicManager,
        group_id: &str,
    ) -> Result<Arc<Mutex<Shard>>, ShardError> {
        let topic = topics
            .ensure_internal(GROUP_METADATA_TOPIC)
            .map_err(|_| ShardError::NotAvailable)?;
        let n = topic.partitions.len() as i32;
        let index = placement::partition_for(group_id, n).ok_or(ShardError::NotAvailable)?;
        if let Some(s) = self.shards.lock().get(&index) {
            return Ok(s.clone());
        }
        let partition = topic.partitions[index as usize].clone();
        let shard = Arc::new(Mutex::new(self.load(partition)));
        let mut shards = self.shards.lock();
        Ok(shards.entry(index).or_insert(shard).clone())
    }

    fn load(&self, partition: Arc<Partition>) -> Shard {
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
            records = count,
            "loaded group coordinator shard"
        );
        Shard { coord, partition }
    }

    /// Appends and replays a result's records, then delivers its completions.
    fn finish<T>(&self, shard: &mut Shard, result: GroupResult<T>) -> T {
        let GroupResult {
            records,
            response,
            completions,
            transaction,
        } = result;
        if !records.is_empty() {
            self.write(shard, &records, transaction);
        }
        self.deliver(completions);
        response
    }

    fn write(&self, shard: &mut Shard, records: &[GroupRecord], transaction: Option<(i64, i16)>) {
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
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot append group records; unloading the shard");
                let completions = shard.coord.unload();
                self.deliver(completions);
                shard.coord = self.load(shard.partition.clone()).coord;
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

    /// Runs a handler that answers at once.
    pub fn run<T>(
        &self,
        shard: &Arc<Mutex<Shard>>,
        f: impl FnOnce(&mut Coordinator, i64) -> GroupResult<T>,
    ) -> T {
        let mut s = shard.lock();
        let result = f(&mut s.coord, now_ms());
        self.finish(&mut s, result)
    }

    /// Runs a handler whose answer may come later as a completion (JoinGroup, SyncGroup).
    pub async fn run_parked(
        &self,
        shard: &Arc<Mutex<Shard>>,
        f: impl FnOnce(&mut Coordinator, i64, RequestId) -> GroupResult<()>,
    ) -> Option<GroupResponse> {
        let id = self.next_request.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(id, tx);
        self.run(shard, |c, now| f(c, now, id));
        rx.await.ok()
    }

    /// Reads without writing.
    pub fn read<T>(&self, shard: &Arc<Mutex<Shard>>, f: impl FnOnce(&Coordinator) -> T) -> T {
        f(&shard.lock().coord)
    }

    /// Every loaded shard (for ListGroups).
    pub fn loaded_shards(&self, topics: &TopicManager) -> Vec<Arc<Mutex<Shard>>> {
        // Load every partition so groups persisted before a restart are listed too.
        if let Some(t) = topics.get(GROUP_METADATA_TOPIC) {
            for i in 0..t.partitions.len() as i32 {
                if !self.shards.lock().contains_key(&i) {
                    let shard = Arc::new(Mutex::new(self.load(t.partitions[i as usize].clone())));
                    self.shards.lock().entry(i).or_insert(shard);
                }
            }
        }
        self.shards.lock().values().cloned().collect()
    }

    /// Fires due timers of every loaded shard (called by the broker's ticker).
    pub fn tick(&self) {
        let shards: Vec<_> = self.shards.lock().values().cloned().collect();
        let now = now_ms();
        for shard in shards {
            let mut s = shard.lock();
            while let Some(result) = s.coord.fire_next_due(now) {
                self.finish(&mut s, result);
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
