//! What request handlers, coordinators and metrics read of a partition (Kafka's `Partition` and
//! `UnifiedLog` getters), each sampled under the partition lock without handing the lock out,
//! and the settings a broker changes on a live partition.

use std::path::PathBuf;

use bytes::Bytes;
use josef_log::{AbortedTxn, LogConfig, LogError};
use josef_protocol::ErrorCode;
use josef_records::validate::ValidationConfig;

use crate::partition::Partition;
use crate::replication::{ReplicaId, ReplicationState};

/// One partition as the broker's gauges see it, sampled at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaSummary {
    /// This replica leads the partition.
    pub is_leader: bool,
    /// Leader with an ISR smaller than the replica set (Kafka's `UnderReplicatedPartitions`).
    pub under_replicated: bool,
    /// Bytes of the log's segments.
    pub size_in_bytes: u64,
    /// The log start offset.
    pub log_start_offset: i64,
    /// The LEO.
    pub log_end_offset: i64,
}

/// One partition as DescribeLogDirs reports it, sampled at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirSummary {
    /// The partition's directory (its parent is the log dir).
    pub dir: PathBuf,
    /// Bytes of the log's segments.
    pub size_in_bytes: u64,
    /// How far the LEO is behind the HW (Kafka's `getLogEndOffsetLag` of a current log: 0 on a
    /// leader, and Josef has no future logs).
    pub offset_lag: i64,
}

/// The whole log of a partition, as a coordinator loading its state reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogBatches {
    /// Every batch from the log start, in offset order.
    pub batches: Vec<Bytes>,
    /// The LEO when they were read (the coordinator's state is loaded up to it).
    pub log_end_offset: i64,
}

impl Partition {
    /// The HW.
    pub fn high_watermark(&self) -> i64 {
        self.data.lock().log.high_watermark()
    }

    /// The LEO.
    pub fn log_end_offset(&self) -> i64 {
        self.data.lock().log.log_end_offset()
    }

    /// The log start offset.
    pub fn log_start_offset(&self) -> i64 {
        self.data.lock().log.log_start_offset()
    }

    /// The recovery point and the log start offset together, for the log dir's checkpoints
    /// (Kafka's `recovery-point-offset-checkpoint` and `log-start-offset-checkpoint`).
    pub fn checkpoint_offsets(&self) -> (i64, i64) {
        let d = self.data.lock();
        (d.log.recovery_point(), d.log.log_start_offset())
    }

    /// What the log's open found (clean shutdown or not, segments recovered).
    pub fn log_load_report(&self) -> josef_log::LoadReport {
        self.data.lock().log.load_report().clone()
    }

    /// The LSO: the first offset of the oldest open transaction, else the HW.
    pub fn last_stable_offset(&self) -> i64 {
        self.data.lock().last_stable_offset()
    }

    /// Whether this replica leads the partition.
    pub fn is_leader(&self) -> bool {
        self.data.lock().replication.is_leader()
    }

    /// This broker's id, as the replication state knows it.
    pub fn local_id(&self) -> ReplicaId {
        self.data.lock().replication.local_id()
    }

    /// The ISR as this replica knows it (on a leader, the committed one).
    pub fn isr(&self) -> Vec<ReplicaId> {
        self.data.lock().replication.isr().to_vec()
    }

    /// The leader epoch while this replica leads the partition.
    pub fn leader_epoch_if_leader(&self) -> Option<i32> {
        let d = self.data.lock();
        d.replication
            .is_leader()
            .then(|| d.replication.leader_epoch())
    }

    /// The requester's view of the leader epoch against this replica's (FENCED_LEADER_EPOCH,
    /// UNKNOWN_LEADER_EPOCH, and NOT_LEADER_OR_FOLLOWER when `require_leader` and this replica
    /// does not lead); the current leader epoch when it passes.
    pub fn check_current_leader_epoch(
        &self,
        current_leader_epoch: i32,
        require_leader: bool,
    ) -> Result<i32, ErrorCode> {
        let d = self.data.lock();
        d.replication
            .check_current_leader_epoch(current_leader_epoch, require_leader)?;
        Ok(d.replication.leader_epoch())
    }

    /// The log's end offset for `leader_epoch` as `(epoch, end offset)`, without the leader
    /// checks of [`Partition::last_offset_for_leader_epoch`] (see `Log::end_offset_for_epoch`).
    pub fn end_offset_for_epoch(&self, leader_epoch: i32) -> (i32, i64) {
        self.data.lock().log.end_offset_for_epoch(leader_epoch)
    }

    /// The aborted transactions of the `.txnindex` overlapping `[from, upper_bound)`.
    pub fn aborted_transactions(&self, from: i64, upper_bound: i64) -> Vec<AbortedTxn> {
        self.data
            .lock()
            .log
            .collect_aborted_transactions(from, upper_bound)
    }

    /// The gauges' sample of this partition.
    pub fn replica_summary(&self) -> ReplicaSummary {
        let d = self.data.lock();
        let r = &d.replication;
        ReplicaSummary {
            is_leader: r.is_leader(),
            under_replicated: r.is_leader() && r.isr().len() < r.replicas().len(),
            size_in_bytes: d.log.size_in_bytes(),
            log_start_offset: d.log.log_start_offset(),
            log_end_offset: d.log.log_end_offset(),
        }
    }

    /// The partition's directory.
    pub fn dir(&self) -> PathBuf {
        self.data.lock().log.dir().to_path_buf()
    }

    /// DescribeLogDirs' sample of this partition.
    pub fn log_dir_summary(&self) -> LogDirSummary {
        let d = self.data.lock();
        LogDirSummary {
            dir: d.log.dir().to_path_buf(),
            size_in_bytes: d.log.size_in_bytes(),
            offset_lag: (d.log.high_watermark() - d.log.log_end_offset()).max(0),
        }
    }

    /// Every batch from the log start and the LEO, read under one lock (a coordinator replays
    /// them to load its state).
    pub fn batches_from_log_start(&self) -> Result<LogBatches, LogError> {
        let d = self.data.lock();
        let batches = d.log.batches_from(d.log.log_start_offset())?;
        Ok(LogBatches {
            batches: batches.into_iter().map(|(_, b)| b).collect(),
            log_end_offset: d.log.log_end_offset(),
        })
    }

    /// Reads the replication state (role, epochs, ISR, follower states) under the partition's
    /// lock, without handing the lock out: a test or a gauge that needs several of its fields
    /// sees them from one moment.
    pub fn with_replication<R>(&self, f: impl FnOnce(&ReplicationState) -> R) -> R {
        f(&self.data.lock().replication)
    }

    /// Every batch whose base offset is at or after `from` (clamped to the log start), with its
    /// base offset, read under one lock.
    pub fn batches_from(&self, from: i64) -> Result<Vec<(i64, Bytes)>, LogError> {
        let d = self.data.lock();
        let batches = d.log.batches_from(from.max(d.log.log_start_offset()))?;
        Ok(batches
            .into_iter()
            .map(|(b, bytes)| (b.header.base_offset, bytes))
            .collect())
    }

    /// The I/O error that took this partition's log offline for writes, if one did (every
    /// write is refused KAFKA_STORAGE_ERROR after it, until a restart recovers the log).
    pub fn write_failure(&self) -> Option<String> {
        self.data.lock().write_failure().map(str::to_owned)
    }

    /// The partition's `min.insync.replicas` (its topic's override, else the broker's), as the
    /// parsed log config holds it.
    pub fn min_insync_replicas(&self) -> i32 {
        self.data.lock().log.config().min_insync_replicas
    }

    /// What preparing a client batch for this partition needs of its log config
    /// (`compression.type`, timestamp type and bounds, compaction, `max.message.bytes`).
    pub fn validation_config(&self) -> ValidationConfig {
        self.data.lock().log.config().validation_config()
    }

    /// Takes a new log config (a topic config change); the log refuses one it cannot apply.
    pub fn set_log_config(&self, config: LogConfig) -> Result<(), LogError> {
        self.data.lock().log.set_config(config)
    }

    /// Sets `replica.lag.time.max.ms`, after which a follower not caught up leaves the ISR.
    pub fn set_replica_lag_time_max_ms(&self, ms: i64) {
        self.data.lock().replication.set_replica_lag_time_max_ms(ms);
    }

    /// Flushes the log to its storage (a shutdown that cannot close the partition because it is
    /// still shared).
    pub fn flush(&self) -> Result<(), LogError> {
        self.data.lock().log.flush()
    }
}
