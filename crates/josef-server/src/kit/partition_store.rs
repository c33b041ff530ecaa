//! The partition store: where the data-path handlers (ListOffsets, Produce, Fetch) find a
//! partition and what they ask of it. Josef's own is the [`TopicManager`](crate::topics::TopicManager) over
//! josef-partition's [`Partition`]; a builder may wrap it (quotas of their own, a topic policy,
//! counting) or answer from another store altogether.

use std::sync::Arc;

use josef_protocol::{ErrorCode, Uuid};
use josef_records::validate::ValidationConfig;
use josef_records::BatchHeader;

use crate::partition::{
    ClientBatch, FetchIsolation, Partition, PartitionError, ProduceResult, ReadParams, ReadResult,
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

/// The partitions this broker serves to the data-path handlers.
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
/// use josef_server::kit::partition_store::{PartitionStore, ProduceSettings, TopicPartition};
/// use josef_server::partition::{
///     ClientBatch, FetchIsolation, Partition, PartitionError, ProduceResult, ReadParams,
///     ReadResult,
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

    /// The josef-partition partition that delayed operations watch (an acks=−1 produce waits
    /// on its HW, Kafka's `DelayedProduce`; a fetch short of `min_bytes` waits for appends,
    /// `DelayedFetch`) and that answers a follower's fetch (replication between Josef brokers).
    /// `None` (a store not built on josef-partition) answers an acks=−1 produce as soon as the
    /// append returns, which keeps Kafka's promise only where the append itself waits for the
    /// ISR, answers a fetch at once with what there is, and refuses a follower's fetch with
    /// NOT_LEADER_OR_FOLLOWER.
    fn delayed_operation_target(&self, tp: TopicPartition<'_>) -> Option<Arc<Partition>>;
}
