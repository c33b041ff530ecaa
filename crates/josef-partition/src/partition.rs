//! One partition replica: its log, its producer state and its replication state under one lock
//! (Kafka's `Partition` over `UnifiedLog` and `ProducerStateManager`), with validate → append →
//! commit for clients, marker and internal appends, the read path shared by fetches and delayed
//! fetches, the leader's answer to follower fetches, and the follower's append and truncation.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use bytes::{Bytes, BytesMut};
use josef_log::storage::FileRegion;
use josef_log::{
    AbortedTxn, BatchHeader, Log, LogAppendInfo, LogConfig, LogError, ProducerStateRebuild,
    ProducerStateReplay, TimestampType,
};
use josef_protocol::{ErrorCode, Uuid};
use josef_sequencer::{
    BatchInfo, ControlType, EndTxnMarker, ProducerStateConfig, ProducerStateTable, Validation,
};
use parking_lot::Mutex;

use crate::error::PartitionError;
use crate::replication::{
    leader_diverging_epoch, truncation_offset, AlterPartitionOutcome, AlterPartitionProposal,
    CommittedPartitionState, EpochEndOffset, IsrState, LeadershipChange, ReplicaId,
    ReplicationState, TruncationDecision, NO_EPOCH,
};
use crate::session_cover::SessionCover;

/// A client's batch to append: one the caller built or rewrote (up-converted, recompressed, its
/// timestamp fixed), which the log may patch in place, or the request's own bytes, which the log
/// writes from where they are with only the header copied.
#[derive(Debug)]
pub enum ClientBatch {
    /// A buffer the log may rewrite.
    Owned(BytesMut),
    /// A slice of the request frame.
    Shared(Bytes),
}

/// Everything of a partition that changes under its lock: the log, the producer state and the
/// replication state are updated together, so validate → append → commit is atomic. It stays
/// inside the crate: callers get narrow methods, never the lock.
pub(crate) struct PartitionData {
    /// The log.
    pub(crate) log: Log,
    /// Producer ids, sequences and open transactions of this partition.
    pub(crate) producers: ProducerStateTable,
    /// Leader or follower state: ISR, follower LEOs, HW.
    pub(crate) replication: ReplicationState,
    /// The I/O error a write to the log met, if one did: no write is made after it.
    write_failure: Option<String>,
}

impl PartitionData {
    /// The I/O error that took the log offline for writes, if one did: every write after it
    /// (client, internal and marker appends, follower appends, truncations) is refused
    /// KAFKA_STORAGE_ERROR until a restart recovers the log from its files; reads go on.
    pub(crate) fn write_failure(&self) -> Option<&str> {
        self.write_failure.as_deref()
    }

    fn check_writable(&self) -> Result<(), PartitionError> {
        match &self.write_failure {
            None => Ok(()),
            Some(why) => Err(PartitionError::with(
                ErrorCode::KafkaStorageError,
                format!("the log is offline after an I/O error: {why}"),
            )),
        }
    }

    /// A write that failed on I/O takes the log offline for writes until a restart recovers it
    /// from its files (Kafka takes the whole log dir offline, and halts the broker when no dir is
    /// left). The failed write may have left its bytes in the files with the LEO moved while the
    /// caller records nothing of it (the producer state: a retry of the batch would then be
    /// appended a second time), or part of them past the LEO (where a smaller later write would
    /// fit and succeed, on a disk that refused the larger one).
    fn on_write<T>(&mut self, r: Result<T, LogError>) -> Result<T, PartitionError> {
        if let Err(LogError::Io { .. }) = &r {
            if self.write_failure.is_none() {
                let why = r
                    .as_ref()
                    .err()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                self.write_failure = Some(why);
            }
        }
        Ok(r?)
    }

    /// Last stable offset: the first offset of the oldest open transaction, else the HW.
    pub(crate) fn last_stable_offset(&self) -> i64 {
        self.producers.last_stable_offset(self.log.high_watermark())
    }

    /// Applies a new HW from the replication state to the log and the producer state.
    fn apply_high_watermark(&mut self) -> i64 {
        let hw = self
            .log
            .update_high_watermark(self.replication.high_watermark());
        self.producers.on_high_watermark_updated(hw);
        hw
    }
}

/// What happened to a partition, told to its listener (outside the lock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartitionEvent {
    /// Records were appended (wakes fetches, which on a leader's followers read to the LEO).
    pub appended: bool,
    /// The HW moved to this value (wakes delayed produces and consumer fetches).
    pub high_watermark: Option<i64>,
    /// The leadership changed (wakes everything parked here, to fail or re-check).
    pub leadership_changed: bool,
    /// An ISR change was proposed (send [`Partition::pending_alter_partition`] to the
    /// controller).
    pub isr_change_proposed: bool,
    /// A follower's fetch reported a higher log start offset, which may raise the leader's low
    /// watermark (wakes delayed DeleteRecords, see [`Partition::check_low_watermark_reaches`]).
    pub follower_log_start_moved: bool,
}

/// What [`Partition::set_append_listener`] takes.
pub type AppendListener = Arc<dyn Fn(&Partition, &PartitionEvent) + Send + Sync>;

/// What a successful produce to one partition returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceResult {
    /// Offset of the first appended (or originally appended, for a duplicate) record.
    pub base_offset: i64,
    /// Offset of the last appended record (acks=-1 waits for the HW to pass it).
    pub last_offset: i64,
    /// Broker time for LogAppendTime topics (or the cached time of a duplicate), else −1.
    pub log_append_time: i64,
    /// Log start offset after the append.
    pub log_start_offset: i64,
    /// The leader epoch the batch was appended in (a DelayedProduce fails if it changes).
    pub leader_epoch: i32,
}

/// Which offsets a read may return (Kafka's `FetchIsolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchIsolation {
    /// Up to the LEO (follower fetches).
    LogEnd,
    /// Up to the HW (read_uncommitted consumers).
    HighWatermark,
    /// Up to the LSO, with the aborted transactions (read_committed consumers).
    TxnCommitted,
}

/// A read of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadParams {
    /// Where to read from.
    pub fetch_offset: i64,
    /// The reader's view of the leader epoch ([`NO_EPOCH`] skips the check).
    pub current_leader_epoch: i32,
    /// At most this many bytes (the partition's share of the fetch).
    pub max_bytes: i64,
    /// The first batch comes whole even if larger (KIP-74).
    pub min_one_message: bool,
    /// Fetch v0–2: a first batch larger than `max_bytes` is read whole and cut at `max_bytes`
    /// ([`ReadResult::cut_to`]), for old clients that see a partial message.
    pub hard_limit: bool,
    /// The read bound.
    pub isolation: FetchIsolation,
    /// Only the leader may answer (consumers); false lets a follower serve its own data.
    pub require_leader: bool,
}

/// What [`Partition::read`] returned. Offsets are sampled under the lock, before the read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResult {
    /// The HW.
    pub high_watermark: i64,
    /// The LSO.
    pub last_stable_offset: i64,
    /// The log start offset.
    pub log_start_offset: i64,
    /// The LEO.
    pub log_end_offset: i64,
    /// Whole batches from the one holding the fetch offset.
    pub records: Bytes,
    /// Bytes of `records` the fetch counts: `records.len()`, or `cut_to` for a hard limit.
    pub size: usize,
    /// Fetch v0–2: where the caller must cut the records' converted form.
    pub cut_to: Option<usize>,
    /// The aborted transactions overlapping the read (TxnCommitted only: empty without records).
    pub aborted_transactions: Option<Vec<AbortedTxn>>,
}

/// A follower's fetch of this partition, as the leader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerFetch {
    /// The follower's broker id.
    pub replica_id: ReplicaId,
    /// Its broker epoch (Fetch v15+, else −1).
    pub broker_epoch: i64,
    /// Its LEO (where it reads from).
    pub fetch_offset: i64,
    /// Its log start offset.
    pub log_start_offset: i64,
    /// Its view of the leader epoch.
    pub current_leader_epoch: i32,
    /// Epoch of its last batch (Fetch v12+, else −1).
    pub last_fetched_epoch: i32,
    /// At most this many bytes.
    pub max_bytes: i64,
    /// The first batch comes whole.
    pub min_one_message: bool,
}

/// The fetch session a follower's fetch belongs to (see [`crate::session_cover`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionFetch {
    /// The session.
    pub cover: SessionCover,
    /// When the session fetched before this fetch (its earlier fetches that covered the
    /// partition count up to then).
    pub previous_fetch_ms: i64,
}

impl FollowerFetch {
    /// Follower `replica_id` fetching from `fetch_offset` in `current_leader_epoch`: no broker
    /// epoch, log start 0, no last fetched epoch (an empty follower), 1 MiB, the first batch
    /// whole. Set the other fields with struct update syntax.
    ///
    /// ```
    /// use josef_partition::FollowerFetch;
    /// let f = FollowerFetch { last_fetched_epoch: 3, ..FollowerFetch::new(2, 10, 4) };
    /// assert_eq!((f.replica_id, f.fetch_offset, f.current_leader_epoch), (2, 10, 4));
    /// ```
    pub fn new(replica_id: ReplicaId, fetch_offset: i64, current_leader_epoch: i32) -> Self {
        FollowerFetch {
            replica_id,
            broker_epoch: -1,
            fetch_offset,
            log_start_offset: 0,
            current_leader_epoch,
            last_fetched_epoch: -1,
            max_bytes: 1 << 20,
            min_one_message: true,
        }
    }
}

/// The leader's answer to a follower fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowerFetchResult {
    /// The data read to the LEO, with HW, LEO and log start sampled before the fetch applied.
    pub read: ReadResult,
    /// The follower diverged: no records, truncate by this (then fetch again).
    pub diverging_epoch: Option<EpochEndOffset>,
    /// An ISR expansion to send to the controller.
    pub alter_partition: Option<AlterPartitionProposal>,
}

/// What a follower's append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowerAppend {
    /// First and last offsets appended, if anything was.
    pub appended: Option<(i64, i64)>,
    /// The follower's HW after the append.
    pub high_watermark: i64,
}

/// What a follower sends for this partition in its next Fetch (Kafka's `PartitionFetchState` +
/// `buildFetch`), from [`Partition::follower_fetch_request`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerFetchRequest {
    /// The leader it fetches from.
    pub leader_id: ReplicaId,
    /// Its view of the leader epoch (`current_leader_epoch`).
    pub current_leader_epoch: i32,
    /// Its LEO.
    pub fetch_offset: i64,
    /// Epoch of its last batch (−1 if none).
    pub last_fetched_epoch: i32,
    /// Its log start offset.
    pub log_start_offset: i64,
}

/// The leader's answer for one partition, as the follower's fetcher received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderFetchAnswer {
    /// The partition's error code.
    pub error: ErrorCode,
    /// The leader's HW.
    pub high_watermark: i64,
    /// The leader's log start offset (−1 if unknown): the follower's moves up to it, so
    /// DeleteRecords and the leader's retention reach every replica.
    pub log_start_offset: i64,
    /// The leader's `diverging_epoch`, if set (epoch ≥ 0).
    pub diverging_epoch: Option<EpochEndOffset>,
    /// The records.
    pub records: Bytes,
}

impl From<Result<FollowerFetchResult, ErrorCode>> for LeaderFetchAnswer {
    /// The answer a follower gets for [`Partition::fetch_from_follower`]'s result when leader and
    /// follower are in one process (simulations, examples); an error carries no offsets.
    fn from(r: Result<FollowerFetchResult, ErrorCode>) -> Self {
        match r {
            Ok(r) => LeaderFetchAnswer {
                error: ErrorCode::None,
                high_watermark: r.read.high_watermark,
                log_start_offset: r.read.log_start_offset,
                diverging_epoch: r.diverging_epoch,
                records: r.read.records,
            },
            Err(error) => LeaderFetchAnswer {
                error,
                high_watermark: -1,
                log_start_offset: -1,
                diverging_epoch: None,
                records: Bytes::new(),
            },
        }
    }
}

/// What the fetcher does next for a partition after [`Partition::on_follower_fetch_response`]
/// (Kafka's `AbstractFetcherThread.processFetchRequest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchResponseAction {
    /// Appended (possibly nothing); fetch on.
    Appended(FollowerAppend),
    /// Truncated by the diverging epoch; fetch again at once (from the new LEO).
    Truncated(TruncationDecision),
    /// The answer was for an older state (another leader or epoch, another fetch offset): drop it
    /// and fetch again.
    Stale,
    /// FENCED_LEADER_EPOCH for the epoch sent: leave the fetcher until new metadata.
    Fenced,
    /// OFFSET_OUT_OF_RANGE: ask the leader for its earliest and latest offsets (ListOffsets) and
    /// call [`Partition::on_offset_out_of_range`].
    OffsetOutOfRange,
    /// Any other error (UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER, ...): retry after
    /// `replica.fetch.backoff.ms`.
    Backoff(ErrorCode),
}

/// What [`Partition::on_offset_out_of_range`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutOfRangeOutcome {
    /// The partition moved on since the fetch (leader, epoch or LEO): nothing done.
    Stale,
    /// The leader's LEO was below ours: truncated to it.
    TruncatedTo(i64),
    /// The leader's log starts past our LEO: the log was emptied and starts there.
    StartedAt(i64),
    /// Our LEO is inside the leader's log after all: fetch on from it.
    Unchanged,
}

/// One partition replica on this broker.
///
/// ```
/// use josef_log::LogConfig;
/// use josef_partition::{ClientBatch, Partition};
/// use josef_protocol::Uuid;
/// use josef_sequencer::ProducerStateConfig;
/// let dir = tempfile::tempdir().unwrap();
/// let p = Partition::open(&dir.path().join("t-0"), "t", 0, Uuid::ZERO,
///     LogConfig::default(), ProducerStateConfig::default(), 0).unwrap();
/// let batch = josef_log::testing::batch(0, 5, &[(None, Some(b"v"))]);
/// let header = josef_log::BatchHeader::parse(&batch).unwrap();
/// let r = p.append_from_client(ClientBatch::Owned(batch), &header, -1, 1, 5).unwrap();
/// assert_eq!((r.base_offset, r.last_offset), (0, 0));
/// // One replica: the HW moved with the append.
/// assert_eq!(p.high_watermark(), 1);
/// ```
pub struct Partition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub index: i32,
    /// Topic id.
    pub topic_id: Uuid,
    /// The data, under one lock.
    pub(crate) data: Mutex<PartitionData>,
    /// Called after appends and HW moves, outside the partition lock.
    on_event: OnceLock<AppendListener>,
    /// What the producer-state rebuild at open did.
    rebuild: ProducerStateRebuild,
    /// Its counters (no-ops without a metrics recorder).
    metrics: crate::metrics::PartitionMetrics,
}

/// Whether a committed `isr` under `leader_epoch` is the ISR change this leader has in flight:
/// `Some(true)` for its shrink, `Some(false)` for its expansion.
fn proposed_isr_change(r: &ReplicationState, leader_epoch: i32, isr: &[ReplicaId]) -> Option<bool> {
    if !r.is_leader() || r.leader_epoch() != leader_epoch {
        return None;
    }
    let proposal = r.isr_state().pending_proposal()?;
    let same =
        |a: &[ReplicaId], b: &[ReplicaId]| a.len() == b.len() && a.iter().all(|x| b.contains(x));
    same(&proposal.new_isr, isr).then(|| matches!(r.isr_state(), IsrState::PendingShrink { .. }))
}

/// The COMMIT/ABORT type of a control batch, read from its first record's key
/// (version i16, type i16). Control batches are never compressed; bad bytes give `None`.
pub fn control_type_of(batch: &[u8]) -> Option<ControlType> {
    const HEADER: usize = 61;
    let mut pos = HEADER;
    let _len = read_varint(batch, &mut pos)?;
    pos += 1; // attributes
    let _ts = read_varint(batch, &mut pos)?;
    let _od = read_varint(batch, &mut pos)?;
    let key_len = read_varint(batch, &mut pos)?;
    if key_len < 4 {
        return None;
    }
    let k = batch.get(pos..pos.checked_add(4)?)?;
    ControlType::from_id(i16::from_be_bytes([k[2], k[3]]))
}

/// Reads a zigzag varint (records use signed varints).
fn read_varint(buf: &[u8], pos: &mut usize) -> Option<i64> {
    let mut value: u64 = 0;
    let mut shift = 0;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
    Some(((value >> 1) as i64) ^ -((value & 1) as i64))
}

/// The COMMIT/ABORT control batch of `marker` as a leader at `leader_epoch` appends it.
fn control_batch(marker: &EndTxnMarker, leader_epoch: i32, now_ms: i64) -> BytesMut {
    josef_records::build_control_batch(
        marker.producer_id,
        marker.producer_epoch,
        josef_records::EndTxnMarker {
            control_type: match marker.control_type {
                ControlType::Commit => josef_records::ControlRecordType::Commit,
                ControlType::Abort => josef_records::ControlRecordType::Abort,
            },
            coordinator_epoch: marker.coordinator_epoch,
        },
        0,
        leader_epoch,
        now_ms,
    )
}

/// The sequencer's view of a batch header.
pub fn batch_info(h: &BatchHeader) -> BatchInfo {
    let mut b = if h.is_transactional() {
        BatchInfo::transactional(
            h.producer_id,
            h.producer_epoch,
            h.base_sequence,
            h.record_count.max(1),
        )
    } else {
        BatchInfo::idempotent(
            h.producer_id,
            h.producer_epoch,
            h.base_sequence,
            h.record_count.max(1),
        )
    };
    b.is_control = h.is_control();
    b
}

/// josef-log's producer-state replay over josef-sequencer's table (the two crates do not know
/// each other: the partition composes them).
struct TableReplay<'a> {
    table: &'a mut ProducerStateTable,
    config: ProducerStateConfig,
    now_ms: i64,
}

impl ProducerStateReplay for TableReplay<'_> {
    type SnapshotError = josef_sequencer::SnapshotError;

    fn load_snapshot(&mut self, offset: i64, bytes: &[u8]) -> Result<(), Self::SnapshotError> {
        let t = ProducerStateTable::from_snapshot(self.config, bytes, offset, self.now_ms)?;
        *self.table = t;
        Ok(())
    }

    fn replay_batch(&mut self, h: &BatchHeader) {
        self.table.replay(&batch_info(h).with_offsets(
            h.base_offset,
            h.last_offset(),
            h.max_timestamp,
        ));
    }

    fn replay_marker(
        &mut self,
        h: &BatchHeader,
        marker: josef_records::EndTxnMarker,
    ) -> Option<AbortedTxn> {
        let ct = match marker.control_type {
            josef_records::ControlRecordType::Commit => ControlType::Commit,
            josef_records::ControlRecordType::Abort => ControlType::Abort,
        };
        let m = EndTxnMarker::new(
            h.producer_id,
            h.producer_epoch,
            ct,
            marker.coordinator_epoch,
        )
        .at(h.base_offset, h.max_timestamp);
        self.table
            .replay_control(&m)
            .filter(|c| c.is_aborted)
            .map(|c| AbortedTxn {
                producer_id: c.producer_id,
                first_offset: c.first_offset,
                last_offset: c.last_offset,
                last_stable_offset: c.last_stable_offset,
            })
    }
}

/// Rebuilds `producers` from the log (newest snapshot, then the batches after it).
fn rebuild_producers(
    log: &mut Log,
    producers: &mut ProducerStateTable,
    now_ms: i64,
) -> Result<ProducerStateRebuild, LogError> {
    let config = *producers.config();
    *producers = ProducerStateTable::new(config);
    log.rebuild_producer_state(&mut TableReplay {
        table: producers,
        config,
        now_ms,
    })
}

impl Partition {
    /// Opens (or creates) a single-replica partition led by this node (the single-node broker:
    /// ISR = [self], leader epoch 0, so the HW follows the LEO) and rebuilds its producer state
    /// (what the rebuild did is [`Partition::producer_state_rebuild`]).
    pub fn open(
        dir: &Path,
        topic: &str,
        index: i32,
        topic_id: Uuid,
        config: LogConfig,
        producer_config: ProducerStateConfig,
        now_ms: i64,
    ) -> Result<Partition, LogError> {
        let log = Log::open(dir, config, now_ms)?;
        Self::single_replica_from_log(log, topic, index, topic_id, producer_config, now_ms)
    }

    /// [`Partition::open`] over a log the caller opened, on whatever storage it chose
    /// ([`Log::open_in`] with [`josef_log::storage::MemoryStorage`], for example).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use josef_log::storage::{MemoryStorage, Storage};
    /// use josef_log::{Log, LogConfig, PartitionState};
    /// use josef_partition::Partition;
    /// use josef_protocol::Uuid;
    /// use josef_sequencer::ProducerStateConfig;
    /// let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    /// let log = Log::open_in(storage, "/mem/orders-0", LogConfig::default(), 0,
    ///     PartitionState::Standalone).unwrap();
    /// let p = Partition::single_replica_from_log(log, "orders", 0, Uuid::from_bytes([1; 16]),
    ///     ProducerStateConfig::default(), 0).unwrap();
    /// assert_eq!(p.log_end_offset(), 0);
    /// ```
    pub fn single_replica_from_log(
        log: Log,
        topic: &str,
        index: i32,
        topic_id: Uuid,
        producer_config: ProducerStateConfig,
        now_ms: i64,
    ) -> Result<Partition, LogError> {
        let p = Self::replica_from_log(log, topic, index, topic_id, producer_config, 0, now_ms)?;
        {
            let mut d = p.data.lock();
            let leo = d.log.log_end_offset();
            d.replication = ReplicationState::single_replica(0, 0, leo);
            d.apply_high_watermark();
        }
        Ok(p)
    }

    /// What rebuilding the producer state at open did (a bad snapshot is its `snapshot_error`;
    /// the state was then rebuilt from the log).
    pub fn producer_state_rebuild(&self) -> &ProducerStateRebuild {
        &self.rebuild
    }

    /// Opens (or creates) a replica on broker `local_id` with no role yet: the HW is the log's
    /// (recovered) HW until [`Partition::make_leader`] or [`Partition::make_follower`].
    #[allow(clippy::too_many_arguments)]
    pub fn open_replica(
        dir: &Path,
        topic: &str,
        index: i32,
        topic_id: Uuid,
        config: LogConfig,
        producer_config: ProducerStateConfig,
        local_id: ReplicaId,
        now_ms: i64,
    ) -> Result<Partition, LogError> {
        let log = Log::open(dir, config, now_ms)?;
        Self::replica_from_log(
            log,
            topic,
            index,
            topic_id,
            producer_config,
            local_id,
            now_ms,
        )
    }

    /// [`Partition::open_replica`] over a log the caller opened, on whatever storage it chose.
    pub fn replica_from_log(
        mut log: Log,
        topic: &str,
        index: i32,
        topic_id: Uuid,
        producer_config: ProducerStateConfig,
        local_id: ReplicaId,
        now_ms: i64,
    ) -> Result<Partition, LogError> {
        let mut producers = ProducerStateTable::new(producer_config);
        let report = rebuild_producers(&mut log, &mut producers, now_ms)?;
        let hw = log.high_watermark();
        producers.on_high_watermark_updated(hw);
        let replication = ReplicationState::new(local_id, hw);
        Ok(Partition {
            topic: topic.to_string(),
            index,
            topic_id,
            data: Mutex::new(PartitionData {
                log,
                producers,
                replication,
                write_failure: None,
            }),
            on_event: OnceLock::new(),
            rebuild: report,
            metrics: crate::metrics::PartitionMetrics::new(topic),
        })
    }

    /// Sets the function called after appends and HW moves (once; later calls are ignored).
    pub fn set_append_listener(&self, listener: AppendListener) {
        let _ = self.on_event.set(listener);
    }

    fn notify(&self, event: PartitionEvent) {
        if event == PartitionEvent::default() {
            return;
        }
        if let Some(listener) = self.on_event.get() {
            listener(self, &event);
        }
    }

    /// Forgets the producers idle for `producer.id.expiration.ms` (measured from the timestamp of
    /// their last batch or marker), never one with an open transaction; returns how many went
    /// (Kafka's `removeExpiredProducers`, run every `producer.id.expiration.check.interval.ms`).
    /// A forgotten producer's next batch is accepted at any sequence, as after retention removed
    /// its batches; without this the table (and every snapshot) grows with each producer id ever
    /// seen.
    pub fn remove_expired_producers(&self, now_ms: i64) -> usize {
        self.data.lock().producers.remove_expired_producers(now_ms)
    }

    /// The current leader epoch.
    pub fn leader_epoch(&self) -> i32 {
        self.data.lock().replication.leader_epoch()
    }

    /// Appends a client's records (one v2 batch, validated by the caller) as the leader: the
    /// `min.insync.replicas` check for acks = −1 (NOT_ENOUGH_REPLICAS, nothing written),
    /// producer-state checks (a duplicate returns its original offsets), offset assignment, HW
    /// advance, listener.
    pub fn append_from_client(
        &self,
        records: ClientBatch,
        header: &BatchHeader,
        required_acks: i16,
        min_insync_replicas: i32,
        now_ms: i64,
    ) -> Result<ProduceResult, PartitionError> {
        let (result, hw) = {
            let mut d = self.data.lock();
            d.check_writable()?;
            // The topic's current setting also rules the HW (KAFKA-15583).
            d.replication.set_min_insync_replicas(min_insync_replicas);
            d.replication
                .check_append(required_acks, min_insync_replicas)?;
            let info = batch_info(header);
            let plan = if info.has_producer_id() {
                match d
                    .producers
                    .validate(&info)
                    .map_err(|e| PartitionError::from(&e))?
                {
                    Validation::Duplicate {
                        first_offset,
                        last_offset,
                        timestamp,
                        ..
                    } => {
                        let lat = if d.log.config().message_timestamp_type
                            == TimestampType::LogAppendTime
                        {
                            timestamp
                        } else {
                            -1
                        };
                        return Ok(ProduceResult {
                            base_offset: first_offset,
                            last_offset,
                            log_append_time: lat,
                            log_start_offset: d.log.log_start_offset(),
                            leader_epoch: d.replication.leader_epoch(),
                        });
                    }
                    Validation::Append(plan) => Some(plan),
                }
            } else {
                None
            };
            let append = Self::append_locked(&mut d, records, now_ms)?;
            self.metrics
                .record_append(append.valid_bytes, header.record_count);
            if let Some(plan) = plan {
                d.producers.commit(plan.with_offsets(
                    append.first_offset,
                    append.last_offset,
                    append.max_timestamp,
                ));
            }
            let hw = Self::advance_leader_hw(&mut d, now_ms);
            (
                ProduceResult {
                    base_offset: append.first_offset,
                    last_offset: append.last_offset,
                    log_append_time: append.log_append_time,
                    log_start_offset: append.log_start_offset,
                    leader_epoch: d.replication.leader_epoch(),
                },
                hw,
            )
        };
        self.notify(PartitionEvent {
            appended: true,
            high_watermark: hw,
            leadership_changed: false,
            isr_change_proposed: false,
            follower_log_start_moved: false,
        });
        Ok(result)
    }

    /// Moves the leader's HW after an append (one replica: to the LEO) and applies it.
    fn advance_leader_hw(d: &mut PartitionData, now_ms: i64) -> Option<i64> {
        let leo = d.log.log_end_offset();
        let moved = d.replication.maybe_increment_high_watermark(leo, now_ms);
        d.apply_high_watermark();
        moved
    }

    fn append_locked(
        d: &mut PartitionData,
        records: ClientBatch,
        now_ms: i64,
    ) -> Result<LogAppendInfo, PartitionError> {
        if !d.replication.is_leader() {
            return Err(PartitionError::new(ErrorCode::NotLeaderOrFollower));
        }
        d.check_writable()?;
        let leader_epoch = d.replication.leader_epoch().max(0);
        let ts_type = d.log.config().message_timestamp_type;
        // Client batches had their CRC checked by `josef_records::validate` and the broker's own
        // batches are built with theirs: the log need not compute it again.
        let appended = match records {
            ClientBatch::Owned(records) => {
                d.log
                    .append_as_leader_crc_checked(records, leader_epoch, now_ms, ts_type)
            }
            ClientBatch::Shared(records) => {
                d.log
                    .append_as_leader_shared(records, leader_epoch, now_ms, ts_type)
            }
        };
        d.on_write(appended)
    }

    /// Appends records written by the broker itself (coordinator records), without producer
    /// checks; a batch with a producer id is replayed into the producer state.
    pub fn append_internal(
        &self,
        records: BytesMut,
        now_ms: i64,
    ) -> Result<LogAppendInfo, PartitionError> {
        let (hw, info) = {
            let mut d = self.data.lock();
            let info = Self::append_locked(&mut d, ClientBatch::Owned(records), now_ms)?;
            if let Ok(h) = BatchHeader::parse(&info.records) {
                if h.has_producer_id() && !h.is_control() {
                    d.producers.replay(&batch_info(&h).with_offsets(
                        info.first_offset,
                        info.last_offset,
                        info.max_timestamp,
                    ));
                }
            }
            (Self::advance_leader_hw(&mut d, now_ms), info)
        };
        self.notify(PartitionEvent {
            appended: true,
            high_watermark: hw,
            leadership_changed: false,
            isr_change_proposed: false,
            follower_log_start_moved: false,
        });
        Ok(info)
    }

    /// Appends a COMMIT/ABORT marker batch (built by the caller) for `marker`: the sequencer
    /// validates it, an abort goes to the `.txnindex`, the LSO moves. Returns the marker's
    /// offset (WriteTxnMarkers waits for the HW to pass it).
    pub fn append_marker(
        &self,
        batch: BytesMut,
        marker: EndTxnMarker,
        now_ms: i64,
    ) -> Result<i64, PartitionError> {
        let (hw, offset) = {
            let mut d = self.data.lock();
            Self::append_marker_locked(&mut d, batch, &marker, now_ms)?
        };
        self.notify_appended(hw);
        Ok(offset)
    }

    /// The leader's side of WriteTxnMarkers for this partition (Kafka's
    /// `ReplicaManager.appendRecords` of a marker, origin coordinator): under one lock, the
    /// pre-append check at `required_acks` (the coordinator writes markers with acks = −1, so
    /// NOT_LEADER_OR_FOLLOWER, or NOT_ENOUGH_REPLICAS with an ISR below `min_insync_replicas`),
    /// the control batch of `marker` built at the current leader epoch, the producer state's
    /// fencing (TRANSACTION_COORDINATOR_FENCED for a coordinator epoch below the last marker's,
    /// INVALID_PRODUCER_EPOCH for an old producer epoch), then the append as
    /// [`Partition::append_marker`]. Returns the marker's offset: the caller answers once the HW
    /// passes it.
    pub fn append_txn_marker(
        &self,
        marker: &EndTxnMarker,
        required_acks: i16,
        min_insync_replicas: i32,
        now_ms: i64,
    ) -> Result<i64, PartitionError> {
        let (hw, offset) = {
            let mut d = self.data.lock();
            d.replication
                .check_append(required_acks, min_insync_replicas)?;
            let batch = control_batch(marker, d.replication.leader_epoch(), now_ms);
            Self::append_marker_locked(&mut d, batch, marker, now_ms)?
        };
        self.notify_appended(hw);
        Ok(offset)
    }

    fn append_marker_locked(
        d: &mut PartitionData,
        batch: BytesMut,
        marker: &EndTxnMarker,
        now_ms: i64,
    ) -> Result<(Option<i64>, i64), PartitionError> {
        let plan = d
            .producers
            .validate_marker(marker)
            .map_err(|e| PartitionError::from(&e))?;
        let info = Self::append_locked(d, ClientBatch::Owned(batch), now_ms)?;
        let completed = d
            .producers
            .commit_marker(plan.with_offset(info.first_offset, info.max_timestamp));
        if let Some(c) = completed.filter(|c| c.is_aborted) {
            let indexed = d.log.append_aborted_txn(AbortedTxn {
                producer_id: c.producer_id,
                first_offset: c.first_offset,
                last_offset: c.last_offset,
                last_stable_offset: c.last_stable_offset,
            });
            d.on_write(indexed)?;
        }
        Ok((Self::advance_leader_hw(d, now_ms), info.first_offset))
    }

    fn notify_appended(&self, hw: Option<i64>) {
        self.notify(PartitionEvent {
            appended: true,
            high_watermark: hw,
            leadership_changed: false,
            isr_change_proposed: false,
            follower_log_start_moved: false,
        });
    }

    /// The offsets of a read and its bound, after the epoch, role and range checks (the part of
    /// the read the delayed fetch shares): `(log start, LEO, HW, LSO, bound)`.
    fn read_bounds(
        d: &PartitionData,
        fetch_offset: i64,
        current_leader_epoch: i32,
        isolation: FetchIsolation,
        require_leader: bool,
    ) -> Result<(i64, i64, i64, i64, i64), ErrorCode> {
        d.replication
            .check_current_leader_epoch(current_leader_epoch, require_leader)?;
        let log_start = d.log.log_start_offset();
        let leo = d.log.log_end_offset();
        if fetch_offset < log_start || fetch_offset > leo {
            return Err(ErrorCode::OffsetOutOfRange);
        }
        let hw = d.log.high_watermark();
        let lso = d.last_stable_offset();
        let bound = match isolation {
            FetchIsolation::LogEnd => leo,
            FetchIsolation::HighWatermark => hw,
            FetchIsolation::TxnCommitted => lso,
        };
        Ok((log_start, leo, hw, lso, bound))
    }

    /// Reads one partition (Kafka's `Partition.fetchRecords` → `readRecords`): leader-epoch check
    /// (FENCED/UNKNOWN_LEADER_EPOCH), NOT_LEADER_OR_FOLLOWER when the leader is required,
    /// OFFSET_OUT_OF_RANGE outside `[log start, LEO]`, then whole batches up to the bound, and for
    /// TxnCommitted the aborted transactions overlapping them.
    pub fn read(&self, params: &ReadParams) -> Result<ReadResult, ErrorCode> {
        let d = self.data.lock();
        let (r, _) = Self::read_locked(&d, params, false)?;
        self.metrics.record_read(r.size);
        Ok(r)
    }

    /// [`Partition::read`], but the batches come as a [`FileRegion`] of the segment file
    /// (`records` empty, `size` its length) when the log's storage keeps descriptors, for a
    /// fetch that sends them unread (`sendfile`); the same batches, bounds, sizes and aborted
    /// transactions (those come from the transaction index, never from the records). A
    /// `hard_limit` read (Fetch v0–2, cut inside a batch) and storage without descriptors give
    /// bytes as [`Partition::read`] does.
    pub fn read_region(
        &self,
        params: &ReadParams,
    ) -> Result<(ReadResult, Option<FileRegion>), ErrorCode> {
        let d = self.data.lock();
        let (r, region) = Self::read_locked(&d, params, !params.hard_limit)?;
        self.metrics.record_read(r.size);
        Ok((r, region))
    }

    fn read_locked(
        d: &PartitionData,
        params: &ReadParams,
        region: bool,
    ) -> Result<(ReadResult, Option<FileRegion>), ErrorCode> {
        let (log_start, leo, hw, lso, bound) = Self::read_bounds(
            d,
            params.fetch_offset,
            params.current_leader_epoch,
            params.isolation,
            params.require_leader,
        )?;
        let txn = params.isolation == FetchIsolation::TxnCommitted;
        let mut out = ReadResult {
            high_watermark: hw,
            last_stable_offset: lso,
            log_start_offset: log_start,
            log_end_offset: leo,
            records: Bytes::new(),
            size: 0,
            cut_to: None,
            aborted_transactions: txn.then(Vec::new),
        };
        if params.max_bytes <= 0 && !params.min_one_message {
            return Ok((out, None));
        }
        let limit = usize::try_from(params.max_bytes.max(0)).unwrap_or(usize::MAX);
        let log = &d.log;
        let first = if region {
            log.read_region(params.fetch_offset, limit, bound, params.min_one_message)
        } else {
            log.read(params.fetch_offset, limit, bound, params.min_one_message)
        };
        let (info, cut) = match first {
            Ok(info)
                if params.hard_limit && info.records.is_empty() && info.first_entry_incomplete =>
            {
                (
                    log.read(params.fetch_offset, limit, bound, true),
                    Some(limit),
                )
            }
            other => (other, None),
        };
        let info = info.map_err(|e| crate::error::log_error_code(&e))?;
        let read_len = info
            .region
            .as_ref()
            .map_or(info.records.len(), FileRegion::len);
        out.size = cut.unwrap_or(read_len);
        out.cut_to = cut;
        if txn && out.size > 0 {
            out.aborted_transactions =
                Some(log.collect_aborted_transactions(params.fetch_offset, bound));
        }
        out.records = info.records;
        Ok((out, info.region))
    }

    /// The delayed-fetch condition for one partition (Kafka's `DelayedFetch.tryComplete`; reads
    /// are served by the leader only): `None` when the fetch must be answered at once (an error:
    /// fenced epoch, no longer leader,
    /// offset out of range or past the bound after a truncation), else the bytes available from
    /// `fetch_offset` to the bound, capped at `max_bytes`. With `exact` false any data counts as
    /// one byte (min_bytes ≤ 1 needs no sizing).
    pub fn available_bytes(
        &self,
        fetch_offset: i64,
        current_leader_epoch: i32,
        isolation: FetchIsolation,
        max_bytes: i64,
        exact: bool,
    ) -> Option<i64> {
        let d = self.data.lock();
        let (_, _, _, _, bound) =
            Self::read_bounds(&d, fetch_offset, current_leader_epoch, isolation, true).ok()?;
        if fetch_offset > bound {
            return None;
        }
        if fetch_offset == bound {
            return Some(0);
        }
        if !exact {
            return Some(1);
        }
        let limit = usize::try_from(max_bytes.max(0)).unwrap_or(0);
        // A first batch larger than max_bytes counts as max_bytes (Kafka's min(available,
        // maxBytes)), so read it whole and cap.
        match d.log.read(fetch_offset, limit, bound, true) {
            Ok(info) => Some(info.records.len().min(limit) as i64),
            Err(_) => None,
        }
    }

    /// Becomes (or stays) leader (Kafka's `makeLeader`): on a new leader epoch the epoch's start
    /// (the LEO) goes to the log's epoch cache before anything of it is written. The HW may move.
    pub fn make_leader(
        &self,
        leader_epoch: i32,
        partition_epoch: i32,
        isr: &[ReplicaId],
        replicas: &[ReplicaId],
        min_insync_replicas: i32,
        now_ms: i64,
    ) -> Result<LeadershipChange, PartitionError> {
        let change = {
            let mut d = self.data.lock();
            let leo = d.log.log_end_offset();
            d.replication.set_min_insync_replicas(min_insync_replicas);
            // This leader's own ISR change may come back in the metadata before (or instead of)
            // the AlterPartition answer: it counts either way, once.
            let proposed = proposed_isr_change(&d.replication, leader_epoch, isr);
            let change = d.replication.make_leader(
                leader_epoch,
                partition_epoch,
                isr,
                replicas,
                leo,
                now_ms,
            );
            if change.new_leader_epoch {
                d.log.assign_epoch_start_offset(leader_epoch)?;
            }
            d.apply_high_watermark();
            if let Some(shrink) = proposed.filter(|_| change.changed) {
                self.metrics.record_isr_change(shrink);
            }
            change
        };
        if change.changed {
            self.notify(PartitionEvent {
                appended: false,
                high_watermark: change.high_watermark,
                leadership_changed: true,
                isr_change_proposed: false,
                follower_log_start_moved: false,
            });
        }
        Ok(change)
    }

    /// Replicas the controller says may not join the ISR (fenced or shutting down brokers,
    /// Kafka's ineligible replicas): an ISR expansion skips them, and outside the ISR they no
    /// longer hold the HW. The broker sets them from each metadata image before
    /// [`make_leader`](Self::make_leader); when the set changes on a leader the HW is computed
    /// again (and the listener told if it moved), since a stopped replica sends nothing that
    /// would.
    pub fn set_ineligible_replicas(&self, ids: &[ReplicaId], now_ms: i64) {
        let hw = {
            let mut d = self.data.lock();
            if !d.replication.set_ineligible_replicas(ids) || !d.replication.is_leader() {
                return;
            }
            Self::advance_leader_hw(&mut d, now_ms)
        };
        // Also without an HW move: a replica that became eligible may join the ISR at its next
        // read, which the event makes its fetch session do.
        self.notify(PartitionEvent {
            high_watermark: hw,
            ..PartitionEvent::default()
        });
    }

    /// Becomes (or stays) a follower of `leader_id` (Kafka's `makeFollower`); no truncation here.
    pub fn make_follower(
        &self,
        leader_id: ReplicaId,
        leader_epoch: i32,
        partition_epoch: i32,
    ) -> LeadershipChange {
        let change =
            self.data
                .lock()
                .replication
                .make_follower(leader_id, leader_epoch, partition_epoch);
        if change.changed {
            self.notify(PartitionEvent {
                appended: false,
                high_watermark: None,
                leadership_changed: true,
                isr_change_proposed: false,
                follower_log_start_moved: false,
            });
        }
        change
    }

    /// Leader: answers a follower's fetch (Kafka's `fetchRecords` for a replica): the epoch and
    /// replica checks, then the diverging-epoch check (no records and the state untouched when it
    /// diverges), then a read to the LEO, and the follower's state updated with its fetch offset
    /// (which may move the HW and propose an ISR expansion). The HW, LEO and log start returned
    /// were sampled before the fetch applied.
    pub fn fetch_from_follower(
        &self,
        fetch: &FollowerFetch,
        now_ms: i64,
    ) -> Result<FollowerFetchResult, ErrorCode> {
        self.fetch_from_follower_in_session(fetch, None, now_ms)
    }

    /// [`fetch_from_follower`](Self::fetch_from_follower) for a fetch of an incremental fetch
    /// session (see [`crate::session_cover`]): the session's earlier fetches that did not read
    /// this partition count first (if the session covered it), and the session covers it after
    /// this read if the follower is then at the log end. Without a session, or on an error, the
    /// cover ends.
    pub fn fetch_from_follower_in_session(
        &self,
        fetch: &FollowerFetch,
        session: Option<SessionFetch>,
        now_ms: i64,
    ) -> Result<FollowerFetchResult, ErrorCode> {
        let (result, hw, log_start_moved) = {
            let mut d = self.data.lock();
            if let Err(e) = d
                .replication
                .validate_follower_fetch(fetch.replica_id, fetch.current_leader_epoch)
            {
                d.replication.set_session_cover(fetch.replica_id, None);
                return Err(e);
            }
            if let Some(s) = session {
                // This follower's cover only: the other followers' sessions are not this one.
                d.replication
                    .apply_session_fetch(fetch.replica_id, s.cover, s.previous_fetch_ms);
            }
            let diverging = leader_diverging_epoch(
                fetch.last_fetched_epoch,
                fetch.fetch_offset,
                d.log.log_start_offset(),
                d.log.end_offset_for_epoch(fetch.last_fetched_epoch),
            )?;
            let params = ReadParams {
                fetch_offset: fetch.fetch_offset,
                current_leader_epoch: NO_EPOCH,
                max_bytes: fetch.max_bytes,
                min_one_message: fetch.min_one_message,
                hard_limit: false,
                isolation: FetchIsolation::LogEnd,
                require_leader: true,
            };
            if let Some(diverging) = diverging {
                let read = ReadResult {
                    high_watermark: d.log.high_watermark(),
                    last_stable_offset: d.last_stable_offset(),
                    log_start_offset: d.log.log_start_offset(),
                    log_end_offset: d.log.log_end_offset(),
                    records: Bytes::new(),
                    size: 0,
                    cut_to: None,
                    aborted_transactions: None,
                };
                return Ok(FollowerFetchResult {
                    read,
                    diverging_epoch: Some(diverging),
                    alter_partition: None,
                });
            }
            let (read, _) = Self::read_locked(&d, &params, false)?;
            let leo = d.log.log_end_offset();
            let log_start_before = d
                .replication
                .follower(fetch.replica_id)
                .map(|f| f.log_start_offset);
            let outcome = d.replication.update_follower_fetch_state(
                fetch.replica_id,
                fetch.fetch_offset,
                fetch.log_start_offset,
                fetch.broker_epoch,
                leo,
                now_ms,
            )?;
            if outcome.high_watermark.is_some() {
                d.apply_high_watermark();
            }
            d.replication
                .set_session_cover(fetch.replica_id, session.map(|s| s.cover));
            let log_start_moved = log_start_before.is_some_and(|b| fetch.log_start_offset > b);
            (
                FollowerFetchResult {
                    read,
                    diverging_epoch: None,
                    alter_partition: outcome.alter_partition,
                },
                outcome.high_watermark,
                log_start_moved,
            )
        };
        self.notify(PartitionEvent {
            appended: false,
            high_watermark: hw,
            leadership_changed: false,
            isr_change_proposed: result.alter_partition.is_some(),
            follower_log_start_moved: log_start_moved,
        });
        Ok(result)
    }

    /// Leader: the ISR change waiting for the controller's answer, if any (what to send, or send
    /// again, in AlterPartition).
    pub fn pending_alter_partition(&self) -> Option<AlterPartitionProposal> {
        self.data
            .lock()
            .replication
            .isr_state()
            .pending_proposal()
            .cloned()
    }

    /// Leader: the ISR shrink task (every `replica.lag.time.max.ms / 2`).
    pub fn maybe_shrink_isr(&self, now_ms: i64) -> Option<AlterPartitionProposal> {
        self.maybe_shrink_isr_with_sessions(now_ms, |_| None)
    }

    /// [`maybe_shrink_isr`](Self::maybe_shrink_isr) for a leader whose followers fetch in
    /// incremental sessions: `session_fetch_ms` (a session's last fetch time, `None` once it is
    /// gone) first counts the fetches of the sessions covering this partition
    /// ([`crate::session_cover`]), so a follower caught up on an idle partition stays in the ISR.
    /// With nothing to shrink, retries the expansion of covered followers outside the ISR
    /// ([`ReplicationState::maybe_expand_isr_for_covered`]); the proposal returned is either.
    pub fn maybe_shrink_isr_with_sessions(
        &self,
        now_ms: i64,
        session_fetch_ms: impl Fn(SessionCover) -> Option<i64>,
    ) -> Option<AlterPartitionProposal> {
        let mut d = self.data.lock();
        let leo = d.log.log_end_offset();
        d.replication.apply_session_fetches(session_fetch_ms);
        d.replication
            .maybe_shrink_isr(leo, now_ms)
            .or_else(|| d.replication.maybe_expand_isr_for_covered())
    }

    /// Leader: follower `replica_id` fetches this partition in session `cover` from now on, or
    /// in none (it forgot the partition); see [`crate::session_cover`]. Set after a full fetch
    /// that created the session (its reads came before the session existed).
    pub fn set_follower_session_cover(&self, replica_id: i32, cover: Option<SessionCover>) {
        self.data
            .lock()
            .replication
            .set_session_cover(replica_id, cover);
    }

    /// Leader: the controller's answer to an ISR change (see
    /// [`ReplicationState::on_alter_partition_response`]); a commit may move the HW.
    pub fn on_alter_partition_response(
        &self,
        sent: &AlterPartitionProposal,
        result: Result<CommittedPartitionState, ErrorCode>,
        now_ms: i64,
    ) -> AlterPartitionOutcome {
        let outcome = {
            let mut d = self.data.lock();
            let leo = d.log.log_end_offset();
            let shrink = matches!(d.replication.isr_state(), IsrState::PendingShrink { .. });
            let outcome = d
                .replication
                .on_alter_partition_response(sent, result, leo, now_ms);
            d.apply_high_watermark();
            if matches!(outcome, AlterPartitionOutcome::Committed { .. }) {
                self.metrics.record_isr_change(shrink);
            }
            outcome
        };
        // An ISR state that left pending may let a follower join: the event makes the fetch
        // sessions read the partition again (an idle one is otherwise not read, so its followers'
        // expansion would wait for the next append).
        let high_watermark = match outcome {
            AlterPartitionOutcome::Committed { high_watermark } => Some(high_watermark),
            AlterPartitionOutcome::Reverted => Some(None),
            _ => None,
        };
        if let Some(high_watermark) = high_watermark {
            self.notify(PartitionEvent {
                appended: false,
                high_watermark,
                leadership_changed: false,
                isr_change_proposed: false,
                follower_log_start_moved: false,
            });
        }
        outcome
    }

    /// The DelayedProduce condition (see
    /// [`ReplicationState::check_enough_replicas_reach_offset`]).
    pub fn check_enough_replicas_reach_offset(
        &self,
        required_offset: i64,
        min_insync_replicas: i32,
    ) -> Result<bool, ErrorCode> {
        self.data
            .lock()
            .replication
            .check_enough_replicas_reach_offset(required_offset, min_insync_replicas)
    }

    /// OffsetsForLeaderEpoch (API 23) for this partition: the epoch check (leader required unless
    /// `replica_id` is a follower's debugging id, as Kafka allows only the leader to answer), then
    /// the log's end offset for `leader_epoch`.
    pub fn last_offset_for_leader_epoch(
        &self,
        current_leader_epoch: i32,
        leader_epoch: i32,
    ) -> Result<EpochEndOffset, ErrorCode> {
        let d = self.data.lock();
        d.replication
            .check_current_leader_epoch(current_leader_epoch, true)?;
        let (epoch, end_offset) = d.log.end_offset_for_epoch(leader_epoch);
        if end_offset < 0 {
            return Ok(EpochEndOffset::UNDEFINED);
        }
        Ok(EpochEndOffset { epoch, end_offset })
    }

    /// Follower: where to fetch from next, `(LEO, epoch of the last batch or −1)` (Kafka's
    /// initial fetch state with a non-empty epoch cache, and `last_fetched_epoch`).
    pub fn follower_fetch_position(&self) -> (i64, i32) {
        let d = self.data.lock();
        (
            d.log.log_end_offset(),
            d.log.latest_epoch().unwrap_or(NO_EPOCH),
        )
    }

    /// Follower: what to send in the next Fetch for this partition, or `None` when this broker
    /// leads it or knows no leader.
    pub fn follower_fetch_request(&self) -> Option<FollowerFetchRequest> {
        let d = self.data.lock();
        let leader_id = match d.replication.role() {
            crate::replication::Role::Follower { leader_id } if leader_id >= 0 => leader_id,
            _ => return None,
        };
        Some(FollowerFetchRequest {
            leader_id,
            current_leader_epoch: d.replication.leader_epoch(),
            fetch_offset: d.log.log_end_offset(),
            last_fetched_epoch: d.log.latest_epoch().unwrap_or(NO_EPOCH),
            log_start_offset: d.log.log_start_offset(),
        })
    }

    /// Follower: applies the leader's answer to the fetch `sent` (Kafka's `processFetchRequest`
    /// for one partition): an answer for another leader, epoch or fetch offset is stale; a
    /// diverging epoch truncates; data is appended as follower with the leader's HW; errors map
    /// to what the fetcher does next.
    pub fn on_follower_fetch_response(
        &self,
        sent: &FollowerFetchRequest,
        answer: LeaderFetchAnswer,
        now_ms: i64,
    ) -> Result<FetchResponseAction, PartitionError> {
        let current = {
            let d = self.data.lock();
            let same_leader = d.replication.leader_id() == Some(sent.leader_id)
                && !d.replication.is_leader()
                && d.replication.leader_epoch() == sent.current_leader_epoch;
            (same_leader, d.log.log_end_offset())
        };
        let (same_leader, leo) = current;
        match answer.error {
            ErrorCode::None => {}
            // Our epoch moved since the fetch was sent: just fetch again.
            ErrorCode::FencedLeaderEpoch if same_leader => return Ok(FetchResponseAction::Fenced),
            _ if !same_leader => return Ok(FetchResponseAction::Stale),
            ErrorCode::OffsetOutOfRange => return Ok(FetchResponseAction::OffsetOutOfRange),
            code => return Ok(FetchResponseAction::Backoff(code)),
        }
        if !same_leader || sent.fetch_offset != leo {
            return Ok(FetchResponseAction::Stale);
        }
        if let Some(d) = answer.diverging_epoch.filter(|d| d.epoch >= 0) {
            return Ok(FetchResponseAction::Truncated(
                self.truncate_on_divergence(d, now_ms)?,
            ));
        }
        let appended = self.append_as_follower(
            sent.fetch_offset,
            answer.records,
            answer.high_watermark,
            now_ms,
        )?;
        self.maybe_increment_log_start_offset(answer.log_start_offset)?;
        Ok(FetchResponseAction::Appended(appended))
    }

    /// Follower: the leader answered OFFSET_OUT_OF_RANGE to the fetch `sent`, and ListOffsets to
    /// it then gave its `leader_latest` (LEO, asked with this replica's id) and
    /// `leader_earliest` (log start) offsets (Kafka's `fetchOffsetAndTruncate`): a leader behind
    /// us → truncate to its LEO; a leader whose log starts past our LEO → empty the log and start
    /// at its log start; else fetch on from our LEO. Nothing changes when the partition moved on
    /// since `sent` (another leader or epoch, another LEO): the offsets may be for another state.
    pub fn on_offset_out_of_range(
        &self,
        sent: &FollowerFetchRequest,
        leader_latest: i64,
        leader_earliest: i64,
        now_ms: i64,
    ) -> Result<OutOfRangeOutcome, PartitionError> {
        let mut d = self.data.lock();
        let leo = d.log.log_end_offset();
        let current = !d.replication.is_leader()
            && d.replication.leader_id() == Some(sent.leader_id)
            && d.replication.leader_epoch() == sent.current_leader_epoch
            && leo == sent.fetch_offset;
        if !current || leader_latest < 0 || leader_earliest < 0 {
            return Ok(OutOfRangeOutcome::Stale);
        }
        if leader_latest < leo {
            Self::truncate_locked(&mut d, leader_latest, now_ms)?;
            return Ok(OutOfRangeOutcome::TruncatedTo(leader_latest));
        }
        if leader_earliest > leo {
            Self::truncate_fully_and_start_at(&mut d, leader_earliest, now_ms)?;
            return Ok(OutOfRangeOutcome::StartedAt(leader_earliest));
        }
        Ok(OutOfRangeOutcome::Unchanged)
    }

    /// Follower: appends the batches a fetch from offset `fetch_offset` returned, keeping their
    /// offsets, epochs and timestamps byte for byte (Kafka's `appendAsFollower`), replays them
    /// into the producer state and the transaction index, then takes the HW as
    /// `min(leader HW, LEO)`. A fetch offset that is not the LEO (a stale response after a
    /// truncation) is refused with nothing written.
    pub fn append_as_follower(
        &self,
        fetch_offset: i64,
        records: Bytes,
        leader_high_watermark: i64,
        now_ms: i64,
    ) -> Result<FollowerAppend, PartitionError> {
        let (result, appended) = {
            let mut d = self.data.lock();
            if d.replication.is_leader() {
                return Err(PartitionError::new(ErrorCode::NotLeaderOrFollower));
            }
            d.check_writable()?;
            let leo = d.log.log_end_offset();
            if fetch_offset != leo {
                return Err(PartitionError::with(
                    ErrorCode::OffsetOutOfRange,
                    format!("fetched from {fetch_offset} but the log end offset is {leo}"),
                ));
            }
            let mut appended = None;
            if !records.is_empty() {
                Self::align_empty_log_to_first_batch(&mut d, &records, now_ms)?;
                let written = d.log.append_as_follower(records.clone(), now_ms);
                let info = d.on_write(written)?;
                let PartitionData { log, producers, .. } = &mut *d;
                let config = *producers.config();
                log.replay_appended_batches(
                    &records,
                    &mut TableReplay {
                        table: producers,
                        config,
                        now_ms,
                    },
                )?;
                appended = Some((info.first_offset, info.last_offset));
            }
            let leo = d.log.log_end_offset();
            d.replication
                .update_follower_high_watermark(leader_high_watermark, leo);
            let hw = d.apply_high_watermark();
            (
                FollowerAppend {
                    appended,
                    high_watermark: hw,
                },
                appended.is_some(),
            )
        };
        self.notify(PartitionEvent {
            appended,
            high_watermark: Some(result.high_watermark),
            leadership_changed: false,
            isr_change_proposed: false,
            follower_log_start_moved: false,
        });
        Ok(result)
    }

    /// An empty log whose start falls inside the first fetched batch (the leader's log start
    /// moved mid-batch by DeleteRecords, and this replica restarted there after
    /// OFFSET_OUT_OF_RANGE) restarts at the batch's base offset, so the batch is kept whole
    /// (Kafka's `UnexpectedAppendOffsetException` handling in
    /// `appendRecordsToFollowerOrFutureReplica`); the leader's log start is taken again after the
    /// append.
    fn align_empty_log_to_first_batch(
        d: &mut PartitionData,
        records: &Bytes,
        now_ms: i64,
    ) -> Result<(), PartitionError> {
        let leo = d.log.log_end_offset();
        if leo != d.log.log_start_offset() {
            return Ok(());
        }
        let Ok(first) = BatchHeader::parse(records) else {
            return Ok(());
        };
        if first.base_offset < leo && first.last_offset() >= leo {
            Self::truncate_fully_and_start_at(d, first.base_offset, now_ms)?;
        }
        Ok(())
    }

    /// Empties the log and the producer state and starts both at `offset` (the HW with them).
    fn truncate_fully_and_start_at(
        d: &mut PartitionData,
        offset: i64,
        now_ms: i64,
    ) -> Result<(), PartitionError> {
        d.check_writable()?;
        let emptied = d.log.truncate_fully_and_start_at(offset, now_ms);
        d.on_write(emptied)?;
        let PartitionData { log, producers, .. } = &mut *d;
        producers.truncate_fully_and_start_at(offset);
        let hw = log.high_watermark();
        producers.on_high_watermark_updated(hw);
        d.replication.reset_high_watermark(hw);
        Ok(())
    }

    /// Follower: truncates by the leader's answer (a fetch's `diverging_epoch` or
    /// OffsetsForLeaderEpoch), see [`truncation_offset`]; the producer state is rebuilt for the
    /// shorter log. Returns the decision (fetch on from the new LEO; if not `completed`, the next
    /// fetch re-checks).
    pub fn truncate_on_divergence(
        &self,
        leader: EpochEndOffset,
        now_ms: i64,
    ) -> Result<TruncationDecision, PartitionError> {
        let mut d = self.data.lock();
        let decision = truncation_offset(
            leader,
            d.log.end_offset_for_epoch(leader.epoch),
            d.log.log_end_offset(),
            d.log.high_watermark(),
        );
        Self::truncate_locked(&mut d, decision.offset, now_ms)?;
        Ok(decision)
    }

    /// Truncates the log to `offset` (offsets ≥ it go) and rebuilds the producer state; the HW
    /// cannot stay above the new LEO.
    pub fn truncate_to(&self, offset: i64, now_ms: i64) -> Result<(), PartitionError> {
        let mut d = self.data.lock();
        Self::truncate_locked(&mut d, offset, now_ms)
    }

    fn truncate_locked(
        d: &mut PartitionData,
        offset: i64,
        now_ms: i64,
    ) -> Result<(), PartitionError> {
        d.check_writable()?;
        if offset >= d.log.log_end_offset() {
            // Still drops a leader epoch that starts at the LEO (see `Log::truncate_to`).
            let truncated = d.log.truncate_to(offset, now_ms);
            return d.on_write(truncated);
        }
        let truncated = d.log.truncate_to(offset, now_ms);
        d.on_write(truncated)?;
        let PartitionData { log, producers, .. } = &mut *d;
        rebuild_producers(log, producers, now_ms)?;
        let leo = d.log.log_end_offset();
        d.replication.on_truncation(leo);
        d.apply_high_watermark();
        Ok(())
    }

    /// Flushes, snapshots producer state at the LEO, and closes the log; a log offline after an
    /// I/O error is left for the next open to recover, and this is an error.
    pub fn close(self) -> Result<(), LogError> {
        self.close_with(true)
    }

    /// [`Partition::close`] without fsyncs (the producer snapshot and the log's files are left in
    /// the page cache), for a caller that closes many partitions of a log dir and then makes them
    /// durable with one [`josef_log::storage::Storage::sync_file_system`] before it checkpoints
    /// their recovery points at the LEO (see [`Log::close_unsynced`]).
    pub fn close_unsynced(self) -> Result<(), LogError> {
        self.close_with(false)
    }

    fn close_with(self, sync: bool) -> Result<(), LogError> {
        let mut d = self.data.into_inner();
        if let Some(why) = d.write_failure.take() {
            // Left as after a crash, for the next open to recover from its files: a producer
            // snapshot at the LEO would leave out the batch of the failed write, and its retry
            // would then be appended again.
            return Err(LogError::io(
                d.log.dir(),
                std::io::Error::other(format!("not closed: offline after an I/O error: {why}")),
            ));
        }
        if sync {
            d.log.flush()?;
        }
        let leo = d.log.log_end_offset();
        // Kafka's `ProducerStateManager.takeSnapshot` skips an offset already snapshotted: the
        // state at an offset is what the log up to it says. A log with nothing in it and no
        // producers needs none either. An atomic write (two fsyncs) per idle partition was most
        // of a shutdown with 100,000 partitions (issue #22).
        let snapshotted = d.log.producer_snapshot_offsets();
        let nothing_to_keep =
            leo == d.log.log_start_offset() && d.producers.is_empty() && snapshotted.is_empty();
        if !snapshotted.contains(&leo) && !nothing_to_keep {
            let snapshot = d.producers.encode_snapshot();
            match sync {
                true => d.log.write_producer_snapshot(leo, &snapshot)?,
                false => d.log.write_producer_snapshot_unsynced(leo, &snapshot)?,
            }
        }
        match sync {
            true => d.log.close(),
            false => d.log.close_unsynced(),
        }
    }
}
