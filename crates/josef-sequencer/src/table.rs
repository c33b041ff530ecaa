//! The producer-state table of one partition: validation of idempotent and transactional
//! appends, transaction tracking, expiry and replay (Kafka's `ProducerStateManager` together
//! with `ProducerAppendInfo` and `UnifiedLog.analyzeAndValidateProducerState`).

use std::collections::HashMap;

use crate::batch::{BatchInfo, EndTxnMarker, NO_PRODUCER_EPOCH};
use crate::entry::{BatchMetadata, ProducerStateEntry};
use crate::error::SequenceError;
use crate::txn::{CompletedTxn, TxnIndex};

/// Default `producer.id.expiration.ms`: one day.
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;

/// Settings of a [`ProducerStateTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerStateConfig {
    /// `producer.id.expiration.ms`: a producer idle this long (measured from the timestamp of
    /// its last batch or marker) is forgotten, unless it has an open transaction.
    pub producer_id_expiration_ms: i64,
}

impl Default for ProducerStateConfig {
    fn default() -> Self {
        ProducerStateConfig {
            producer_id_expiration_ms: DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        }
    }
}

/// Who is appending, which decides how much is checked (Kafka's `AppendOrigin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AppendOrigin {
    /// A Produce request: duplicate detection, epoch, sequence and transaction checks.
    Client,
    /// A coordinator's own write (e.g. transactional offset commits): epoch and transaction
    /// checks only, since such batches carry no meaningful sequence.
    Coordinator,
    /// Replication or log recovery: nothing is checked, the batch is already in a log.
    Replication,
}

/// The outcome of a successful [`ProducerStateTable::validate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Validation {
    /// The batch is new: append it to the log, then pass the plan, with the offsets the log
    /// assigned, to [`ProducerStateTable::commit`].
    Append(AppendPlan),
    /// The batch is a retry of one of the producer's last five batches: do not append it,
    /// answer the Produce request with error NONE and these original values.
    Duplicate {
        /// Base offset of the original batch.
        first_offset: i64,
        /// Last offset of the original batch.
        last_offset: i64,
        /// Max timestamp of the original batch (Kafka returns it as the log-append time).
        timestamp: i64,
    },
}

/// A validated data batch waiting for its log offsets.
///
/// Dropping it (e.g. because the log append failed) leaves the table unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendPlan {
    batch: BatchInfo,
}

impl AppendPlan {
    /// Sets the offsets and max timestamp the log assigned to the batch.
    pub fn with_offsets(mut self, first_offset: i64, last_offset: i64, max_timestamp: i64) -> Self {
        self.batch = self
            .batch
            .with_offsets(first_offset, last_offset, max_timestamp);
        self
    }

    /// The batch as it will be committed.
    pub fn batch(&self) -> &BatchInfo {
        &self.batch
    }
}

/// A validated end-transaction marker waiting for its log offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerPlan {
    marker: EndTxnMarker,
}

impl MarkerPlan {
    /// Sets the offset and record timestamp the log assigned to the marker.
    pub fn with_offset(mut self, offset: i64, timestamp: i64) -> Self {
        self.marker = self.marker.at(offset, timestamp);
        self
    }

    /// The marker as it will be committed.
    pub fn marker(&self) -> &EndTxnMarker {
        &self.marker
    }
}

/// Producer state of one partition: who wrote what, which transactions are open, and where
/// the last stable offset is.
///
/// Validation and commit are two steps so the log can assign offsets in between. For one
/// producer id, commit (or drop) a plan before validating that producer's next batch; since
/// Produce v3 a request carries one batch per partition, so a broker that holds the partition
/// lock across validate → append → commit gets this for free.
///
/// ```
/// use josef_sequencer::{BatchInfo, ProducerStateConfig, ProducerStateTable, Validation};
///
/// let mut table = ProducerStateTable::new(ProducerStateConfig::default());
/// let batch = BatchInfo::idempotent(4000, 0, 0, 3);
/// let Validation::Append(plan) = table.validate(&batch).unwrap() else { unreachable!() };
/// // ... the log appends the batch at offsets 10..=12 ...
/// table.commit(plan.with_offsets(10, 12, 1_700_000_000_000));
///
/// // The client retries the same batch: it gets the original offsets back.
/// assert_eq!(
///     table.validate(&batch).unwrap(),
///     Validation::Duplicate { first_offset: 10, last_offset: 12, timestamp: 1_700_000_000_000 }
/// );
/// // A gap is refused with OUT_OF_ORDER_SEQUENCE_NUMBER.
/// let gap = BatchInfo::idempotent(4000, 0, 5, 1);
/// assert_eq!(table.validate(&gap).unwrap_err().kafka_error_code(), 45);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ProducerStateTable {
    config: ProducerStateConfig,
    producers: HashMap<i64, ProducerStateEntry>,
    txns: TxnIndex,
    map_end_offset: i64,
}

impl ProducerStateTable {
    /// An empty table.
    pub fn new(config: ProducerStateConfig) -> Self {
        ProducerStateTable {
            config,
            producers: HashMap::new(),
            txns: TxnIndex::default(),
            map_end_offset: 0,
        }
    }

    /// The table's settings.
    pub fn config(&self) -> &ProducerStateConfig {
        &self.config
    }

    /// Checks a data batch from a Produce request ([`AppendOrigin::Client`]).
    ///
    /// Batches without a producer id pass (their plan commits nothing).
    pub fn validate(&self, batch: &BatchInfo) -> Result<Validation, SequenceError> {
        self.validate_from(batch, AppendOrigin::Client)
    }

    /// Checks a data batch with the checks of `origin`, in Kafka's order: base sequence
    /// sanity, duplicate of one of the last five batches, producer epoch, sequence, and
    /// transaction state.
    pub fn validate_from(
        &self,
        batch: &BatchInfo,
        origin: AppendOrigin,
    ) -> Result<Validation, SequenceError> {
        let plan = || Ok(Validation::Append(AppendPlan { batch: *batch }));
        if !batch.has_producer_id() {
            return plan();
        }
        let producer_id = batch.producer_id;
        if batch.is_control {
            return Err(SequenceError::InvalidRecord {
                producer_id,
                reason: "control batch on the data path; use validate_marker",
            });
        }
        if origin == AppendOrigin::Replication {
            return plan();
        }
        if origin == AppendOrigin::Client && batch.base_sequence < 0 {
            // LogValidator refuses this before producer state is consulted.
            return Err(SequenceError::InvalidRecord {
                producer_id,
                reason: "negative base sequence",
            });
        }
        let entry = self.producers.get(&producer_id);
        if origin == AppendOrigin::Client {
            if let Some(dup) = entry.and_then(|e| {
                e.find_duplicate(
                    batch.producer_epoch,
                    batch.base_sequence,
                    batch.last_sequence,
                )
            }) {
                return Ok(Validation::Duplicate {
                    first_offset: dup.first_offset(),
                    last_offset: dup.last_offset,
                    timestamp: dup.timestamp,
                });
            }
        }
        let current_epoch = entry.map_or(NO_PRODUCER_EPOCH, |e| e.producer_epoch);
        if batch.producer_epoch < current_epoch {
            return Err(SequenceError::InvalidProducerEpoch {
                producer_id,
                received_epoch: batch.producer_epoch,
                current_epoch,
            });
        }
        if origin == AppendOrigin::Client {
            check_sequence(entry, producer_id, batch)?;
        }
        if let Some(txn_first_offset) = entry.and_then(|e| e.current_txn_first_offset) {
            if !batch.is_transactional {
                return Err(SequenceError::InvalidTxnState {
                    producer_id,
                    txn_first_offset,
                });
            }
        }
        plan()
    }

    /// Records a validated batch at the offsets in the plan. A transactional batch from a
    /// producer without an open transaction opens one at the batch's first offset.
    pub fn commit(&mut self, plan: AppendPlan) {
        self.apply_data(&plan.batch);
    }

    /// Validates and commits a batch whose offsets are already in `batch`; returns the
    /// validation outcome (a duplicate commits nothing).
    pub fn append(&mut self, batch: &BatchInfo) -> Result<Validation, SequenceError> {
        let v = self.validate(batch)?;
        if let Validation::Append(plan) = &v {
            self.commit(plan.clone());
        }
        Ok(v)
    }

    /// Applies a data batch read from a log (recovery or replication) without any check.
    ///
    /// If the log holds a non-transactional batch from a producer with an open transaction
    /// (which validation never lets in), the transaction stays open.
    pub fn replay(&mut self, batch: &BatchInfo) {
        if batch.is_control {
            return;
        }
        self.apply_data(batch);
    }

    fn apply_data(&mut self, batch: &BatchInfo) {
        self.map_end_offset = batch.last_offset.saturating_add(1);
        if !batch.has_producer_id() {
            return;
        }
        let producer_id = batch.producer_id;
        let entry = self
            .producers
            .entry(producer_id)
            .or_insert_with(|| ProducerStateEntry::empty(producer_id));
        entry.add_batch(
            batch.producer_epoch,
            BatchMetadata {
                last_seq: batch.last_sequence,
                last_offset: batch.last_offset,
                // Kafka keeps the delta as an int; a batch never spans more than i32 offsets.
                offset_delta: batch.last_offset.wrapping_sub(batch.first_offset) as i32,
                timestamp: batch.max_timestamp,
            },
        );
        if batch.is_transactional && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(batch.first_offset);
            self.txns.begin(batch.first_offset, producer_id);
        }
    }

    /// Checks an end-transaction marker from WriteTxnMarkers ([`AppendOrigin::Coordinator`]):
    /// an older producer epoch (or, for transaction version 2, one not newer — except an
    /// idempotent retry after the transaction already ended) is INVALID_PRODUCER_EPOCH; an
    /// older coordinator epoch is TRANSACTION_COORDINATOR_FENCED.
    pub fn validate_marker(&self, marker: &EndTxnMarker) -> Result<MarkerPlan, SequenceError> {
        let producer_id = marker.producer_id;
        let entry = self.producers.get(&producer_id);
        let current_epoch = entry.map_or(NO_PRODUCER_EPOCH, |e| e.producer_epoch);
        let open_txn = entry.and_then(|e| e.current_txn_first_offset);
        let strict = marker.transaction_version >= 2;
        let invalid = if strict {
            marker.producer_epoch <= current_epoch
        } else {
            marker.producer_epoch < current_epoch
        };
        let tv2_retry = strict && marker.producer_epoch == current_epoch && open_txn.is_none();
        if invalid && !tv2_retry {
            return Err(SequenceError::InvalidProducerEpoch {
                producer_id,
                received_epoch: marker.producer_epoch,
                current_epoch,
            });
        }
        let current_coordinator_epoch = entry.map_or(-1, |e| e.coordinator_epoch);
        if current_coordinator_epoch > marker.coordinator_epoch {
            return Err(SequenceError::TransactionCoordinatorFenced {
                producer_id,
                received_coordinator_epoch: marker.coordinator_epoch,
                current_coordinator_epoch,
            });
        }
        Ok(MarkerPlan { marker: *marker })
    }

    /// Records a validated marker. Returns the transaction it closed, if the producer had one
    /// open on this partition (a marker without data yields nothing, as in Kafka).
    pub fn commit_marker(&mut self, plan: MarkerPlan) -> Option<CompletedTxn> {
        self.apply_marker(&plan.marker)
    }

    /// Validates and commits a marker whose offset is already set.
    pub fn append_marker(
        &mut self,
        marker: &EndTxnMarker,
    ) -> Result<Option<CompletedTxn>, SequenceError> {
        let plan = self.validate_marker(marker)?;
        Ok(self.commit_marker(plan))
    }

    /// Applies a marker read from a log without any check.
    pub fn replay_control(&mut self, marker: &EndTxnMarker) -> Option<CompletedTxn> {
        self.apply_marker(marker)
    }

    fn apply_marker(&mut self, marker: &EndTxnMarker) -> Option<CompletedTxn> {
        self.map_end_offset = marker.offset.saturating_add(1);
        let producer_id = marker.producer_id;
        let entry = self
            .producers
            .entry(producer_id)
            .or_insert_with(|| ProducerStateEntry::empty(producer_id));
        let open = entry.current_txn_first_offset.take();
        entry.maybe_update_epoch(marker.producer_epoch);
        entry.coordinator_epoch = marker.coordinator_epoch;
        entry.last_timestamp = marker.timestamp;
        open.map(|first_offset| CompletedTxn {
            producer_id,
            first_offset,
            last_offset: marker.offset,
            is_aborted: marker.is_abort(),
            last_stable_offset: self.txns.complete(producer_id, first_offset, marker.offset),
        })
    }

    /// Forgets producers idle for `producer.id.expiration.ms` or longer (now − last timestamp),
    /// never one with an open transaction. Returns how many were removed.
    pub fn remove_expired_producers(&mut self, now_ms: i64) -> usize {
        let before = self.producers.len();
        let expiration = self.config.producer_id_expiration_ms;
        self.producers
            .retain(|_, e| !is_expired(e, now_ms, expiration));
        before - self.producers.len()
    }

    /// The state of one producer, if known.
    pub fn producer(&self, producer_id: i64) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id)
    }

    /// All known producers, in no particular order.
    pub fn producers(&self) -> impl Iterator<Item = &ProducerStateEntry> + '_ {
        self.producers.values()
    }

    /// Number of known producers.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// True when no producer is known.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Open transactions as `(first_offset, producer_id)`, oldest first.
    pub fn ongoing_transactions(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.txns.ongoing()
    }

    /// First offset of the oldest open transaction.
    pub fn first_undecided_offset(&self) -> Option<i64> {
        self.txns.first_undecided_offset()
    }

    /// First offset of the oldest transaction that is open or completed with its marker not
    /// yet known to be below the high watermark (see [`Self::on_high_watermark_updated`]).
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.txns.first_unstable_offset()
    }

    /// The last stable offset for `high_watermark`: the first offset of the oldest transaction
    /// that is open or whose marker is at or above the high watermark, capped at the high
    /// watermark. read_committed fetches stop here.
    pub fn last_stable_offset(&self, high_watermark: i64) -> i64 {
        match self.txns.first_unstable_offset_at(high_watermark) {
            Some(first) if first < high_watermark => first,
            _ => high_watermark,
        }
    }

    /// Forgets completed transactions whose marker is below the new high watermark, so the
    /// first unstable offset can advance.
    pub fn on_high_watermark_updated(&mut self, high_watermark: i64) {
        self.txns.remove_unreplicated_before(high_watermark);
    }

    /// Forgets completed transactions below a new log start offset.
    pub fn on_log_start_offset_incremented(&mut self, log_start_offset: i64) {
        self.txns.remove_unreplicated_before(log_start_offset);
        self.map_end_offset = self.map_end_offset.max(log_start_offset);
    }

    /// The offset after the last batch or marker the table has seen; a snapshot taken now
    /// belongs in `<map_end_offset>.snapshot`.
    pub fn map_end_offset(&self) -> i64 {
        self.map_end_offset
    }

    /// Tells the table the log end after an append it was not shown (non-idempotent batches).
    pub fn update_map_end_offset(&mut self, offset: i64) {
        self.map_end_offset = offset;
    }

    /// Forgets everything and starts at `offset` (Kafka's `truncateFullyAndStartAt`), e.g.
    /// before rebuilding from a snapshot and the log after a truncation.
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) {
        self.producers.clear();
        self.txns.clear();
        self.map_end_offset = offset;
    }

    /// Loads decoded snapshot entries into an emptied table, dropping expired ones, and sets
    /// the map end offset to the snapshot's offset.
    pub(crate) fn load_entries(
        &mut self,
        entries: Vec<ProducerStateEntry>,
        snapshot_offset: i64,
        now_ms: i64,
    ) {
        self.truncate_fully_and_start_at(snapshot_offset);
        let expiration = self.config.producer_id_expiration_ms;
        self.producers.reserve(entries.len());
        for e in entries {
            if is_expired(&e, now_ms, expiration) {
                continue;
            }
            if let Some(first) = e.current_txn_first_offset {
                self.txns.begin(first, e.producer_id);
            }
            self.producers.insert(e.producer_id, e);
        }
    }
}

fn is_expired(entry: &ProducerStateEntry, now_ms: i64, expiration_ms: i64) -> bool {
    entry.current_txn_first_offset.is_none()
        && now_ms.saturating_sub(entry.last_timestamp) >= expiration_ms
}

/// Kafka's `ProducerAppendInfo.checkSequence` without the KIP-890 verification state.
fn check_sequence(
    entry: Option<&ProducerStateEntry>,
    producer_id: i64,
    batch: &BatchInfo,
) -> Result<(), SequenceError> {
    let stored_epoch = entry.map_or(NO_PRODUCER_EPOCH, |e| e.producer_epoch);
    let first_seq = batch.base_sequence;
    if batch.producer_epoch != stored_epoch {
        // A bumped epoch restarts sequences at 0, unless nothing was known about the epoch.
        if first_seq != 0 && stored_epoch != NO_PRODUCER_EPOCH {
            return Err(SequenceError::OutOfOrderSequence {
                producer_id,
                producer_epoch: batch.producer_epoch,
                received_sequence: first_seq,
                last_sequence: crate::batch::NO_SEQUENCE,
            });
        }
        return Ok(());
    }
    let last_seq = entry.map_or(crate::batch::NO_SEQUENCE, ProducerStateEntry::last_seq);
    // Without an epoch (state lost to retention or DeleteRecords) any sequence is accepted.
    if stored_epoch == NO_PRODUCER_EPOCH || in_sequence(last_seq, first_seq) {
        Ok(())
    } else {
        Err(SequenceError::OutOfOrderSequence {
            producer_id,
            producer_epoch: batch.producer_epoch,
            received_sequence: first_seq,
            last_sequence: last_seq,
        })
    }
}

fn in_sequence(last_seq: i32, next_seq: i32) -> bool {
    i64::from(next_seq) == i64::from(last_seq) + 1 || (next_seq == 0 && last_seq == i32::MAX)
}
