//! The partition store: where the partition handlers (ListOffsets, Produce, Fetch,
//! OffsetForLeaderEpoch, DescribeProducers, WriteTxnMarkers, DeleteRecords) find a partition and
//! what they ask of it. Josef's own is the [`TopicManager`](crate::topics::TopicManager) over
//! josef-partition's [`Partition`]; a builder may wrap it (quotas of their own, a topic policy,
//! counting) or answer from another store altogether.

use std::sync::Arc;

use josef_log::storage::FileRegion;
use josef_protocol::{ErrorCode, Uuid};
use josef_records::validate::{RecordError, ValidationConfig};
use josef_records::BatchHeader;
use josef_sequencer::EndTxnMarker;

use crate::partition::{
    ActiveProducer, ClientBatch, DeleteRecordsOutcome, EpochEndOffset, FetchIsolation, Partition,
    PartitionError, ProduceResult, ReadParams, ReadResult,
};

/// A partition as clients name it: topic name and partition index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TopicPartition<'a> {
    /// The topic's name.
    pub topic: &'a str,
    /// The partition's index in the topic.
    pub partition: i32,
}

/// The per-partition settings the produce path needs before it appends.
#[derive(Debug, Clone)]
pub struct ProduceSettings {
    /// What record preparation checks and rewrites: `compression.type`, timestamp type and
    /// bounds, compaction (keys required), `max.message.bytes`.
    pub validation: ValidationConfig,
    /// `min.insync.replicas` (the topic's override, else the broker's).
    pub min_insync_replicas: i32,
}

/// A partition's records as the produce handler hands them to the append, once checked and
/// prepared against the partition's [`ProduceSettings`] (Kafka's `LogValidator` output).
#[derive(Debug)]
pub struct PreparedBatch {
    /// The batch to append.
    pub batch: ClientBatch,
    /// Its header (producer id, epoch and sequence the sequencer checks).
    pub header: BatchHeader,
}

/// A produce to one partition, appended ([`PartitionStore::produce`]).
pub struct Produced {
    /// Where the batch landed.
    pub result: ProduceResult,
    /// The `min.insync.replicas` it was appended under (an acks=−1 answer waits while the ISR
    /// keeps that many).
    pub min_insync_replicas: i32,
    /// For acks −1, the partition the answer waits on
    /// ([`PartitionStore::delayed_operation_target`]); `None` otherwise.
    pub wait_on: Option<Arc<Partition>>,
}

/// Why a produce to one partition failed: the partition's slot of the Produce response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProduceError {
    /// The store refused the partition (UNKNOWN_TOPIC_OR_PARTITION, or a code of its own), or
    /// the append failed (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, the sequencer's answers).
    #[error(transparent)]
    Partition(#[from] PartitionError),
    /// The handler refused the records before any append (framing, acks, an internal topic,
    /// Kafka's `LogValidator`), naming the records at fault (Produce v8+ `record_errors`).
    #[error("{}: records refused", code.name())]
    Records {
        /// Kafka error code.
        code: ErrorCode,
        /// Message for the client (Produce v8+ `error_message`).
        message: Option<String>,
        /// The records at fault.
        record_errors: Vec<RecordError>,
    },
}

impl ProduceError {
    /// The Kafka error code the partition is answered with.
    pub fn code(&self) -> ErrorCode {
        match self {
            ProduceError::Partition(e) => e.code,
            ProduceError::Records { code, .. } => *code,
        }
    }
}

impl From<ErrorCode> for ProduceError {
    fn from(code: ErrorCode) -> Self {
        ProduceError::Partition(code.into())
    }
}

/// Where a transaction marker landed: what the WriteTxnMarkers answer waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkerAppended {
    /// The marker's offset (the answer waits for the HW to pass it).
    pub offset: i64,
    /// The leader epoch it was written in (a leader change while waiting fails the wait).
    pub leader_epoch: i32,
    /// The `min.insync.replicas` the ISR must still have when the HW passes it.
    pub min_insync_replicas: i32,
}

/// The partitions this broker serves to the partition handlers.
///
/// The broker holds one as `Arc<dyn PartitionStore>` ([`crate::state::BrokerState::partition_store`]).
/// Every method is called per partition of a request, with no lock of the caller held; an
/// implementation must be safe to call from many connections at once. Errors are Kafka error
/// codes, returned in the partition's slot of the response, so an implementation refuses a
/// partition by returning the code Kafka would send.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
///
/// use josef_protocol::{ErrorCode, Uuid};
/// use josef_records::BatchHeader;
/// use josef_sequencer::EndTxnMarker;
/// use josef_server::kit::partition_store::{
///     MarkerAppended, PartitionStore, ProduceSettings, TopicPartition,
/// };
/// use josef_server::partition::{
///     ActiveProducer, ClientBatch, DeleteRecordsOutcome, EpochEndOffset, FetchIsolation,
///     Partition, PartitionError, ProduceResult, ReadParams, ReadResult,
/// };
///
/// /// Josef's store, with appends counted and one topic closed to writes.
/// struct Counting {
///     inner: Arc<dyn PartitionStore>,
///     appends: AtomicU64,
/// }
///
/// impl PartitionStore for Counting {
///     fn check_leader_epoch(&self, tp: TopicPartition<'_>, epoch: i32, require_leader: bool)
///         -> Result<i32, ErrorCode> {
///         self.inner.check_leader_epoch(tp, epoch, require_leader)
///     }
///     fn offset_for_timestamp(&self, tp: TopicPartition<'_>, ts: i64, isolation: FetchIsolation)
///         -> Result<Option<(i64, i64)>, ErrorCode> {
///         self.inner.offset_for_timestamp(tp, ts, isolation)
///     }
///     fn legacy_offsets(&self, tp: TopicPartition<'_>, ts: i64, max: i32, from_consumer: bool, now_ms: i64)
///         -> Result<Vec<i64>, ErrorCode> {
///         self.inner.legacy_offsets(tp, ts, max, from_consumer, now_ms)
///     }
///     fn produce_settings(&self, tp: TopicPartition<'_>) -> Result<ProduceSettings, ErrorCode> {
///         if tp.topic == "read-only" {
///             return Err(ErrorCode::TopicAuthorizationFailed);
///         }
///         self.inner.produce_settings(tp)
///     }
///     fn append(&self, tp: TopicPartition<'_>, batch: ClientBatch, header: &BatchHeader, acks: i16,
///         min_isr: i32, now_ms: i64) -> Result<ProduceResult, PartitionError> {
///         self.appends.fetch_add(1, Ordering::Relaxed);
///         self.inner.append(tp, batch, header, acks, min_isr, now_ms)
///     }
///     fn topic_name(&self, topic_id: Uuid) -> Option<String> {
///         self.inner.topic_name(topic_id)
///     }
///     fn topic_config(&self, topic: &str, name: &str) -> Option<String> {
///         self.inner.topic_config(topic, name)
///     }
///     fn read(&self, tp: TopicPartition<'_>, params: &ReadParams) -> Result<ReadResult, ErrorCode> {
///         self.inner.read(tp, params)
///     }
///     fn delayed_operation_target(&self, tp: TopicPartition<'_>) -> Option<Arc<Partition>> {
///         self.inner.delayed_operation_target(tp)
///     }
///     fn end_offset_for_leader_epoch(&self, tp: TopicPartition<'_>, current: i32, epoch: i32)
///         -> Result<EpochEndOffset, ErrorCode> {
///         self.inner.end_offset_for_leader_epoch(tp, current, epoch)
///     }
///     fn active_producers(&self, tp: TopicPartition<'_>) -> Result<Vec<ActiveProducer>, ErrorCode> {
///         self.inner.active_producers(tp)
///     }
///     fn append_txn_marker(&self, tp: TopicPartition<'_>, marker: &EndTxnMarker, now_ms: i64)
///         -> Result<MarkerAppended, PartitionError> {
///         self.inner.append_txn_marker(tp, marker, now_ms)
///     }
///     fn delete_records(&self, tp: TopicPartition<'_>, offset: i64, is_alive: &dyn Fn(i32) -> bool)
///         -> Result<DeleteRecordsOutcome, PartitionError> {
///         self.inner.delete_records(tp, offset, is_alive)
///     }
///     // `produce` keeps its default (settings, then append): the refusal and the count above
///     // see every produced partition.
/// }
///
/// // Plugged in over the store a broker opened:
/// // let state = state.with_partition_store(Arc::new(Counting { inner: state.partition_store.clone(), .. }));
/// ```
pub trait PartitionStore: Send + Sync {
    /// The partition's current leader epoch, once the request's view of it checks out (Kafka's
    /// `Partition.localLogWithEpochOrThrow`, the first step of ListOffsets). Kafka's rules, in
    /// this order: UNKNOWN_TOPIC_OR_PARTITION when this broker does not host the partition;
    /// FENCED_LEADER_EPOCH when `current_leader_epoch` (−1: not checked) is older than the
    /// partition's, UNKNOWN_LEADER_EPOCH when newer; with `require_leader`,
    /// NOT_LEADER_OR_FOLLOWER when this broker is not the leader.
    fn check_leader_epoch(
        &self,
        tp: TopicPartition<'_>,
        current_leader_epoch: i32,
        require_leader: bool,
    ) -> Result<i32, ErrorCode>;

    /// ListOffsets v1+: the first `(offset, timestamp)` at or after `timestamp`, or for Kafka's
    /// specials (−1 latest, −2 earliest, −3 max timestamp, −4 earliest local, −5 latest tiered:
    /// `josef_partition::offsets_for_time`) the offset they name; `None` when no record
    /// qualifies (Kafka answers offset −1, timestamp −1, no error). The answer never reaches
    /// `isolation`'s bound (the HW for read_uncommitted consumers, the LSO for read_committed
    /// ones, the log end for replicas), and while a new leader's HW is behind its epoch start a
    /// consumer gets OFFSET_NOT_AVAILABLE. UNKNOWN_TOPIC_OR_PARTITION when not hosted.
    fn offset_for_timestamp(
        &self,
        tp: TopicPartition<'_>,
        timestamp: i64,
        isolation: FetchIsolation,
    ) -> Result<Option<(i64, i64)>, ErrorCode>;

    /// ListOffsets v0 (`old_style_offsets`): up to `max_num_offsets` segment base offsets (and
    /// the log end) at or before `timestamp`, newest first, capped at the HW for consumers.
    /// UNKNOWN_TOPIC_OR_PARTITION when not hosted; a negative `max_num_offsets` is
    /// UNKNOWN_SERVER_ERROR (Kafka fails on a negative array size).
    fn legacy_offsets(
        &self,
        tp: TopicPartition<'_>,
        timestamp: i64,
        max_num_offsets: i32,
        from_consumer: bool,
        now_ms: i64,
    ) -> Result<Vec<i64>, ErrorCode>;

    /// The first step of a produce to one partition: UNKNOWN_TOPIC_OR_PARTITION when this
    /// broker does not host it, else its current produce settings. A store may refuse the
    /// partition here with any Kafka code (the record checks that follow are then skipped, as
    /// Kafka skips them for an unknown partition).
    fn produce_settings(&self, tp: TopicPartition<'_>) -> Result<ProduceSettings, ErrorCode>;

    /// Appends one client batch, prepared and validated by the caller, as the leader
    /// (Kafka's `Partition.appendRecordsToLeader`). Kafka's rules: NOT_LEADER_OR_FOLLOWER if
    /// this broker is not the leader in the current leader epoch; for `acks` −1,
    /// NOT_ENOUGH_REPLICAS (nothing written) when the ISR is smaller than `min_insync_replicas`;
    /// the sequencer's answer for idempotent and transactional batches (a duplicate returns the
    /// original offsets without writing, OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH,
    /// INVALID_TXN_STATE); RECORD_LIST_TOO_LARGE beyond the segment size. On success the batch
    /// has consecutive offsets from the log end, and the result names them.
    fn append(
        &self,
        tp: TopicPartition<'_>,
        batch: ClientBatch,
        header: &BatchHeader,
        acks: i16,
        min_insync_replicas: i32,
        now_ms: i64,
    ) -> Result<ProduceResult, PartitionError>;

    /// A produce to one partition, whole: its settings
    /// ([`produce_settings`](PartitionStore::produce_settings)); the handler's `prepare` of the
    /// records against them, whose error is the answer with nothing appended; the
    /// [`append`](PartitionStore::append) under the settings' `min.insync.replicas`; and for
    /// `acks` −1 the [`delayed_operation_target`](PartitionStore::delayed_operation_target) the
    /// answer waits on. The default is those calls in that order, each finding the partition
    /// again; a store that can find it once overrides this with the same steps (Josef's does:
    /// one lookup per produced partition). A wrapper that intercepts none of those methods
    /// delegates this one too, to keep its inner store's single lookup.
    fn produce(
        &self,
        tp: TopicPartition<'_>,
        acks: i16,
        now_ms: i64,
        prepare: &mut dyn FnMut(&ProduceSettings) -> Result<PreparedBatch, ProduceError>,
    ) -> Result<Produced, ProduceError> {
        let settings = self.produce_settings(tp)?;
        let prepared = prepare(&settings)?;
        let min_insync_replicas = settings.min_insync_replicas;
        let result = self.append(
            tp,
            prepared.batch,
            &prepared.header,
            acks,
            min_insync_replicas,
            now_ms,
        )?;
        let wait_on = if acks == -1 {
            self.delayed_operation_target(tp)
        } else {
            None
        };
        Ok(Produced {
            result,
            min_insync_replicas,
            wait_on,
        })
    }

    /// The name of the topic with id `topic_id` (Fetch v13+ names topics by id), `None` when no
    /// topic has it (the partition is answered UNKNOWN_TOPIC_ID).
    fn topic_name(&self, topic_id: Uuid) -> Option<String>;

    /// A topic's own setting `name` (its override; `None` when the broker default applies).
    /// Fetch reads `compression.type` and `message.downconversion.enable` for Kafka's refusals
    /// of old fetchers (UNSUPPORTED_COMPRESSION_TYPE for zstd below v10, UNSUPPORTED_VERSION for
    /// v0–3 without down-conversion).
    fn topic_config(&self, topic: &str, name: &str) -> Option<String>;

    /// A consumer's read of one partition (Kafka's `Partition.fetchRecords` for a consumer).
    /// Kafka's rules, in this order: UNKNOWN_TOPIC_OR_PARTITION when not hosted;
    /// FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH against `current_leader_epoch` (−1: not
    /// checked); NOT_LEADER_OR_FOLLOWER with `require_leader` on a follower;
    /// OFFSET_OUT_OF_RANGE when `fetch_offset` is below the log start or beyond the log end.
    /// Nothing at or past the isolation bound (HW, or LSO for read_committed) is returned; the
    /// first batch comes whole if `min_one_message` (KIP-74); read_committed reads carry the
    /// aborted transactions overlapping the data. The HW, LSO and log start are sampled before
    /// the read.
    fn read(&self, tp: TopicPartition<'_>, params: &ReadParams) -> Result<ReadResult, ErrorCode>;

    /// [`read`](PartitionStore::read) for a fetch that sends the records unread: a store whose
    /// records sit in files may return them as a [`FileRegion`] (then `records` is empty and
    /// `size` is the region's length), which a plaintext connection sends with `sendfile`. The
    /// default reads bytes with [`read`](PartitionStore::read), so a store that only has bytes
    /// needs nothing more.
    fn read_region(
        &self,
        tp: TopicPartition<'_>,
        params: &ReadParams,
    ) -> Result<(ReadResult, Option<FileRegion>), ErrorCode> {
        self.read(tp, params).map(|r| (r, None))
    }

    /// The josef-partition partition that delayed operations watch (an acks=−1 produce waits
    /// on its HW, Kafka's `DelayedProduce`; a fetch short of `min_bytes` waits for appends,
    /// `DelayedFetch`) and that answers a follower's fetch (replication between Josef brokers).
    /// `None` (a store not built on josef-partition) answers an acks=−1 produce as soon as the
    /// append returns, which keeps Kafka's promise only where the append itself waits for the
    /// ISR, answers a fetch at once with what there is, and refuses a follower's fetch with
    /// NOT_LEADER_OR_FOLLOWER.
    fn delayed_operation_target(&self, tp: TopicPartition<'_>) -> Option<Arc<Partition>>;

    /// OffsetsForLeaderEpoch (KIP-101, KIP-320) for one partition: the epoch check as
    /// [`check_leader_epoch`](PartitionStore::check_leader_epoch) with the leader required
    /// (Kafka lets only the leader answer), then the largest epoch at or below `leader_epoch`
    /// and where it ends: the start offset of the next larger epoch, or the log end offset for
    /// the current one; epoch −1 and offset −1 when the log has no such epoch.
    fn end_offset_for_leader_epoch(
        &self,
        tp: TopicPartition<'_>,
        current_leader_epoch: i32,
        leader_epoch: i32,
    ) -> Result<EpochEndOffset, ErrorCode>;

    /// DescribeProducers (KIP-664): the producers with state in this replica's log (Kafka's
    /// `Partition.activeProducerState`, answered by leader and follower alike;
    /// NOT_LEADER_OR_FOLLOWER only for a partition hosted without a log),
    /// UNKNOWN_TOPIC_OR_PARTITION when not hosted. An ongoing transaction shows its first
    /// offset, which is what an operator aborts a hanging transaction by.
    fn active_producers(&self, tp: TopicPartition<'_>) -> Result<Vec<ActiveProducer>, ErrorCode>;

    /// WriteTxnMarkers for one partition (Kafka's `ReplicaManager.appendRecords` of a marker,
    /// origin coordinator): written as the leader with acks −1 and the partition's
    /// `min.insync.replicas` (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS), the COMMIT/ABORT
    /// control batch at the current leader epoch, fenced by the producer state
    /// (TRANSACTION_COORDINATOR_FENCED for a coordinator epoch below the last marker's,
    /// INVALID_PRODUCER_EPOCH for an older producer epoch); the marker ends the producer's
    /// transaction, so the LSO moves past it once it is the first open one.
    /// UNKNOWN_TOPIC_OR_PARTITION when not hosted. The handler answers once the HW passes the
    /// marker (through [`delayed_operation_target`](PartitionStore::delayed_operation_target)).
    fn append_txn_marker(
        &self,
        tp: TopicPartition<'_>,
        marker: &EndTxnMarker,
        now_ms: i64,
    ) -> Result<MarkerAppended, PartitionError>;

    /// `Some` when the store tells every change of what a fetch of one of its partitions
    /// answers: appends, HW and leadership changes through the partitions' listener (which the
    /// broker also uses to record them in the fetch-session cache), and everything else (topics
    /// created, deleted or altered, configs, log start moves) by a new number here. Incremental
    /// fetch sessions then read only the partitions that changed instead of all of theirs. The
    /// default `None` (nothing told) keeps Kafka's walk over the whole session.
    fn change_generation(&self) -> Option<u64> {
        None
    }

    /// DeleteRecords on the leader (Kafka's `Partition.deleteRecordsOnLeader`): `offset` −1 is
    /// the HW; NOT_LEADER_OR_FOLLOWER on a follower, OFFSET_OUT_OF_RANGE beyond the HW; the log
    /// start moves up to the offset (never down) and the low watermark is returned, computed
    /// over the replicas `is_alive` admits. The handler answers once every live replica's log
    /// start reaches the offset (through
    /// [`delayed_operation_target`](PartitionStore::delayed_operation_target), Kafka's
    /// `DelayedDeleteRecords`). UNKNOWN_TOPIC_OR_PARTITION when not hosted.
    fn delete_records(
        &self,
        tp: TopicPartition<'_>,
        offset: i64,
        is_alive: &dyn Fn(i32) -> bool,
    ) -> Result<DeleteRecordsOutcome, PartitionError>;
}
