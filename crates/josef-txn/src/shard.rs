//! The transaction coordinator for one `__transaction_state` partition, as a
//! [`CoordinatorShard`]: handlers look at the state and return the records to append plus the
//! reply; the state changes only when those records are replayed.

use std::collections::{BTreeMap, BTreeSet};

use josef_coordinator::{CoordinatorResult, CoordinatorShard, ReplayError};

use crate::metadata::{is_epoch_exhausted, NO_PRODUCER_EPOCH, NO_PRODUCER_ID};
use crate::partition::{group_partition_for, CONSUMER_OFFSETS_TOPIC};
use crate::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AddPartitionsToTxnResult, EndTxnRequest,
    EndTxnResponse, InitProducerIdRequest, InitProducerIdResponse, ProducerIdGenerator, Reply,
    TickOutcome, TopicPartition, TransactionDescription, TransactionListing, TransactionMetadata,
    TransactionResult, TransactionVersion, TxnConfig, TxnError, TxnLogRecord, TxnLogValue,
    TxnMarkerRequest, TxnState,
};

/// What a handler returns: records for `__transaction_state` and the reply to hold until they
/// are durable.
pub type TxnResult<R> = CoordinatorResult<TxnLogRecord, Reply<R>>;

/// Outcome of the shared EndTxn logic before anything is written.
enum EndDecision {
    /// Answer at once without writing (a retry of a completed EndTxn).
    Answer {
        producer_id: i64,
        producer_epoch: i16,
    },
    /// Persist this Prepare* value, then send markers.
    Write(TxnLogValue),
}

/// The transaction coordinator state of one `__transaction_state` partition.
///
/// ```
/// use josef_coordinator::{CoordinatorDriver, InMemoryPartitionWriter};
/// use josef_txn::{InitProducerIdRequest, SequentialProducerIdGenerator, TxnConfig, TxnShard};
///
/// let shard = TxnShard::new(TxnConfig::default(), 0);
/// let mut driver: CoordinatorDriver<_, _, _> =
///     CoordinatorDriver::new(shard, InMemoryPartitionWriter::new());
/// let mut pids = SequentialProducerIdGenerator::new(1000);
/// let req = InitProducerIdRequest {
///     transactional_id: Some("txn-a".into()),
///     transaction_timeout_ms: 60_000,
///     producer_id: -1,
///     producer_epoch: -1,
/// };
/// // Handled, appended and replayed; the answer waits for the record to be durable.
/// assert!(driver.write(|s| s.init_producer_id(&req, 0, &mut pids)).unwrap().is_none());
/// let hw = driver.writer_mut().commit_all();
/// let reply = driver.on_high_watermark(hw).pop().unwrap();
/// assert_eq!((reply.response.producer_id, reply.response.producer_epoch), (1000, 0));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnShard {
    config: TxnConfig,
    coordinator_epoch: i32,
    txns: BTreeMap<String, TransactionMetadata>,
    /// Timestamps read from the log were written by whichever node led the partition then, on its
    /// own wall clock: timers of loaded transactions run from the load on this node's clock instead
    /// (see [`TxnShard::restart_loaded_timers`]). id -> (start, last update) as loaded, and the load time.
    loaded_timers: BTreeMap<String, (i64, i64, i64)>,
}

impl CoordinatorShard for TxnShard {
    type Record = TxnLogRecord;

    /// Applies a record: a value overwrites the id's metadata (as Kafka's loader does), a
    /// tombstone (or a Dead value) removes the id.
    fn replay(
        &mut self,
        _offset: i64,
        _producer_id: i64,
        _producer_epoch: i16,
        record: &TxnLogRecord,
    ) -> Result<(), ReplayError> {
        match &record.value {
            Some(v) if v.state != TxnState::Dead => {
                match self.txns.get_mut(&record.transactional_id) {
                    Some(m) => m.apply(v),
                    None => {
                        self.txns.insert(
                            record.transactional_id.clone(),
                            TransactionMetadata::from_value(record.transactional_id.clone(), v),
                        );
                    }
                }
            }
            _ => {
                self.txns.remove(&record.transactional_id);
            }
        }
        Ok(())
    }
}

impl TxnShard {
    /// An empty shard led at `coordinator_epoch` (the partition leader epoch).
    pub fn new(config: TxnConfig, coordinator_epoch: i32) -> Self {
        Self {
            config,
            coordinator_epoch,
            txns: BTreeMap::new(),
            loaded_timers: BTreeMap::new(),
        }
    }

    /// Makes the timers of every transactional id loaded so far (transaction timeout, id
    /// expiration) run from `now_ms` on this coordinator's clock instead of the timestamps in the
    /// log, which another node wrote on its own clock. Nothing may depend on the nodes' clocks
    /// agreeing: with the log's timestamps, a transaction moving to a coordinator whose clock is
    /// ahead would be aborted at once as timed out, and one moving to a clock behind would outlive
    /// its timeout. A loaded transaction gets at most one timeout more than Kafka would give it.
    /// Call once a partition is loaded; ids changed here afterwards use this node's timestamps.
    pub fn restart_loaded_timers(&mut self, now_ms: i64) {
        self.loaded_timers = self
            .txns
            .iter()
            .map(|(id, m)| {
                (
                    id.clone(),
                    (m.txn_start_timestamp, m.txn_last_update_timestamp, now_ms),
                )
            })
            .collect();
    }

    /// The start and last update that timers count from: the load time for an id unchanged since
    /// it was loaded, its own timestamps otherwise.
    fn timer_bases(&self, id: &str, meta: &TransactionMetadata) -> (i64, i64) {
        match self.loaded_timers.get(id) {
            Some(&(start, update, loaded_at))
                if start == meta.txn_start_timestamp
                    && update == meta.txn_last_update_timestamp =>
            {
                (loaded_at, loaded_at)
            }
            _ => (meta.txn_start_timestamp, meta.txn_last_update_timestamp),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    /// The cluster finalized another `transaction.version` (UpdateFeatures): coordinator-initiated
    /// aborts from now on follow it. Transactions already open keep the client version they
    /// were opened with.
    pub fn set_transaction_version(&mut self, version: TransactionVersion) {
        self.config.transaction_version = version;
    }

    /// The coordinator epoch markers are stamped with.
    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }

    /// Metadata of `transactional_id`, if known.
    pub fn get(&self, transactional_id: &str) -> Option<&TransactionMetadata> {
        self.txns.get(transactional_id)
    }

    /// Every id's metadata, by id.
    pub fn transactions(&self) -> &BTreeMap<String, TransactionMetadata> {
        &self.txns
    }

    /// The marker writes to (re)start after loading: every transaction left in PrepareCommit or
    /// PrepareAbort (Kafka re-sends them on election).
    pub fn pending_markers(&self) -> Vec<TxnMarkerRequest> {
        self.txns
            .values()
            .filter_map(|m| {
                let result = match m.state {
                    TxnState::PrepareCommit => TransactionResult::Commit,
                    TxnState::PrepareAbort => TransactionResult::Abort,
                    _ => return None,
                };
                Some(TxnMarkerRequest {
                    transactional_id: m.transactional_id.clone(),
                    producer_id: m.producer_id,
                    producer_epoch: m.producer_epoch,
                    coordinator_epoch: self.coordinator_epoch,
                    result,
                    partitions: m.partitions.clone(),
                    transaction_version: m.client_transaction_version,
                })
            })
            .collect()
    }

    // ----- InitProducerId -------------------------------------------------------------------

    /// InitProducerId (Kafka's `handleInitProducerId`).
    ///
    /// A null id gets a fresh producer id with epoch 0 and writes nothing. Otherwise, by state:
    /// Empty/Complete* bump the epoch (or rotate to a new producer id once the epoch is
    /// exhausted); Ongoing fences the producer and aborts its transaction, answering
    /// `CONCURRENT_TRANSACTIONS` so the client retries; Prepare* answer `CONCURRENT_TRANSACTIONS`.
    pub fn init_producer_id(
        &self,
        req: &InitProducerIdRequest,
        now_ms: i64,
        pids: &mut dyn ProducerIdGenerator,
    ) -> TxnResult<InitProducerIdResponse> {
        let fail =
            |e| CoordinatorResult::response_only(Reply::new(InitProducerIdResponse::error(e)));
        let expected = match (req.producer_id, req.producer_epoch) {
            (NO_PRODUCER_ID, NO_PRODUCER_EPOCH) => None,
            (NO_PRODUCER_ID, _) | (_, NO_PRODUCER_EPOCH) => return fail(TxnError::InvalidRequest),
            (p, e) => Some((p, e)),
        };
        let Some(id) = req.transactional_id.as_deref() else {
            return match pids.generate_producer_id() {
                Ok(pid) => CoordinatorResult::response_only(Reply::new(InitProducerIdResponse {
                    error: None,
                    producer_id: pid,
                    producer_epoch: 0,
                })),
                Err(e) => fail(e),
            };
        };
        if id.is_empty() {
            return fail(TxnError::InvalidRequest);
        }
        if !self.config.is_valid_timeout(req.transaction_timeout_ms) {
            return fail(TxnError::InvalidTransactionTimeout);
        }
        let meta = match self.txns.get(id) {
            Some(m) => m.clone(),
            None => match pids.generate_producer_id() {
                Ok(pid) => {
                    TransactionMetadata::new_for_init(id, pid, req.transaction_timeout_ms, now_ms)
                }
                Err(e) => return fail(e),
            },
        };
        if meta.pending_state.is_some() {
            return fail(TxnError::ConcurrentTransactions);
        }
        // KIP-360: a client that names its producer is fenced unless the metadata is new, the id
        // matches, or it retries after a rotation it never heard about.
        if let Some((p, e)) = expected {
            let valid = meta.producer_epoch == NO_PRODUCER_EPOCH
                || p == meta.producer_id
                || (p == meta.prev_producer_id && is_epoch_exhausted(e));
            if !valid {
                return fail(TxnError::ProducerFenced);
            }
        }
        match meta.state {
            TxnState::PrepareAbort | TxnState::PrepareCommit => {
                fail(TxnError::ConcurrentTransactions)
            }
            TxnState::Empty | TxnState::CompleteAbort | TxnState::CompleteCommit => {
                let transit = if meta.is_producer_epoch_exhausted()
                    && expected.map_or(true, |(_, e)| e == meta.producer_epoch)
                {
                    match pids.generate_producer_id() {
                        Ok(new_pid) => meta.prepare_producer_id_rotation(
                            new_pid,
                            req.transaction_timeout_ms,
                            now_ms,
                            expected.is_some(),
                        ),
                        Err(e) => return fail(e),
                    }
                } else {
                    match meta.prepare_increment_producer_epoch(
                        req.transaction_timeout_ms,
                        expected.map(|(_, e)| e),
                        now_ms,
                    ) {
                        Ok(Ok(v)) => Ok(v),
                        Ok(Err(())) => return fail(TxnError::ProducerFenced),
                        Err(e) => Err(e),
                    }
                };
                match transit {
                    Ok(v) => {
                        let response = InitProducerIdResponse {
                            error: None,
                            producer_id: v.producer_id,
                            producer_epoch: v.producer_epoch,
                        };
                        CoordinatorResult::new(vec![record(id, v)], Reply::new(response))
                    }
                    Err(_) => fail(TxnError::UnknownServerError),
                }
            }
            TxnState::Ongoing => {
                // Fence: bump the epoch (never returned), abort the open transaction, and make
                // the client retry; the retry then bumps the epoch a second time.
                match self.fence_and_abort(&meta, false, now_ms) {
                    Ok((v, marker)) => CoordinatorResult::new(
                        vec![record(id, v)],
                        Reply {
                            response: InitProducerIdResponse::error(
                                TxnError::ConcurrentTransactions,
                            ),
                            markers: vec![marker],
                        },
                    ),
                    Err(e) => fail(e),
                }
            }
            TxnState::Dead | TxnState::PrepareEpochFence => fail(TxnError::UnknownServerError),
        }
    }

    /// PrepareEpochFence then PrepareAbort with the fenced epoch (Kafka's
    /// `prepareFenceProducerEpoch` + `endTransaction(ABORT, isFromClient = false)`).
    fn fence_and_abort(
        &self,
        meta: &TransactionMetadata,
        _timed_out: bool,
        now_ms: i64,
    ) -> Result<(TxnLogValue, TxnMarkerRequest), TxnError> {
        let fence = meta
            .prepare_fence_producer_epoch()
            .map_err(|_| TxnError::UnknownServerError)?;
        let mut working = meta.clone();
        working.pending_state = Some(TxnState::PrepareEpochFence);
        match self.end_transaction(
            &working,
            fence.producer_id,
            fence.producer_epoch,
            TransactionResult::Abort,
            false,
            self.config.transaction_version,
            now_ms,
            None,
        )? {
            EndDecision::Write(v) => {
                let marker = self.marker_for(&meta.transactional_id, &v, TransactionResult::Abort);
                Ok((v, marker))
            }
            EndDecision::Answer { .. } => Err(TxnError::UnknownServerError),
        }
    }

    // ----- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------

    /// AddPartitionsToTxn for one transaction: adds the partitions (state → Ongoing), or with
    /// `verify_only` reports per partition `NONE` / `TRANSACTION_ABORTABLE` without writing.
    pub fn add_partitions_to_txn(
        &self,
        req: &AddPartitionsToTxnRequest,
        now_ms: i64,
        client_tv: TransactionVersion,
    ) -> TxnResult<AddPartitionsToTxnResult> {
        if req.verify_only {
            return CoordinatorResult::response_only(Reply::new(self.verify_partitions(req)));
        }
        let uniform = |e| AddPartitionsToTxnResult::uniform(req, e);
        match self.prepare_add(
            &req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            &req.partitions,
            now_ms,
            client_tv,
        ) {
            Ok(Some(v)) => CoordinatorResult::new(
                vec![record(&req.transactional_id, v)],
                Reply::new(uniform(None)),
            ),
            Ok(None) => CoordinatorResult::response_only(Reply::new(uniform(None))),
            Err(e) => CoordinatorResult::response_only(Reply::new(uniform(Some(e)))),
        }
    }

    /// The verify-only form (Kafka's `handleVerifyPartitionsInTransaction`): read-only.
    pub fn verify_partitions(&self, req: &AddPartitionsToTxnRequest) -> AddPartitionsToTxnResult {
        let uniform = |e| AddPartitionsToTxnResult::uniform(req, Some(e));
        if req.transactional_id.is_empty() {
            return uniform(TxnError::InvalidRequest);
        }
        let Some(meta) = self.txns.get(&req.transactional_id) else {
            return uniform(TxnError::InvalidProducerIdMapping);
        };
        if meta.producer_id != req.producer_id {
            return uniform(TxnError::InvalidProducerIdMapping);
        }
        if meta.producer_epoch != req.producer_epoch {
            return uniform(TxnError::ProducerFenced);
        }
        if matches!(meta.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
            return uniform(TxnError::ConcurrentTransactions);
        }
        AddPartitionsToTxnResult {
            transactional_id: req.transactional_id.clone(),
            partitions: req
                .partitions
                .iter()
                .map(|p| {
                    let e =
                        (!meta.partitions.contains(p)).then_some(TxnError::TransactionAbortable);
                    (p.clone(), e)
                })
                .collect(),
        }
    }

    /// AddOffsetsToTxn: adds the group's `__consumer_offsets` partition to the transaction.
    pub fn add_offsets_to_txn(
        &self,
        req: &AddOffsetsToTxnRequest,
        now_ms: i64,
        client_tv: TransactionVersion,
    ) -> TxnResult<Option<TxnError>> {
        let tp = self.offsets_partition_for(&req.group_id);
        let partitions = BTreeSet::from([tp]);
        match self.prepare_add(
            &req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            &partitions,
            now_ms,
            client_tv,
        ) {
            Ok(Some(v)) => {
                CoordinatorResult::new(vec![record(&req.transactional_id, v)], Reply::new(None))
            }
            Ok(None) => CoordinatorResult::response_only(Reply::new(None)),
            Err(e) => CoordinatorResult::response_only(Reply::new(Some(e))),
        }
    }

    /// The `__consumer_offsets` partition that holds `group_id`'s offsets.
    pub fn offsets_partition_for(&self, group_id: &str) -> TopicPartition {
        TopicPartition::new(
            CONSUMER_OFFSETS_TOPIC,
            group_partition_for(group_id, self.config.offsets_topic_partitions),
        )
    }

    /// Kafka's `handleAddPartitionsToTransaction` checks. `Ok(None)`: nothing to write.
    fn prepare_add(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
        now_ms: i64,
        client_tv: TransactionVersion,
    ) -> Result<Option<TxnLogValue>, TxnError> {
        if transactional_id.is_empty() {
            return Err(TxnError::InvalidRequest);
        }
        let meta = self
            .txns
            .get(transactional_id)
            .ok_or(TxnError::InvalidProducerIdMapping)?;
        if meta.producer_id != producer_id {
            return Err(TxnError::InvalidProducerIdMapping);
        }
        if meta.producer_epoch != producer_epoch {
            return Err(TxnError::ProducerFenced);
        }
        if meta.pending_state.is_some()
            || matches!(meta.state, TxnState::PrepareCommit | TxnState::PrepareAbort)
        {
            return Err(TxnError::ConcurrentTransactions);
        }
        if meta.state == TxnState::Ongoing && partitions.is_subset(&meta.partitions) {
            return Ok(None);
        }
        meta.prepare_add_partitions(partitions, now_ms, client_tv)
            .map(Some)
            .map_err(|_| TxnError::UnknownServerError)
    }

    // ----- EndTxn ---------------------------------------------------------------------------

    /// EndTxn from the client: writes PrepareCommit/PrepareAbort and, once that is durable,
    /// answers and hands the marker writes to the broker.
    pub fn end_txn(
        &self,
        req: &EndTxnRequest,
        now_ms: i64,
        pids: &mut dyn ProducerIdGenerator,
    ) -> TxnResult<EndTxnResponse> {
        let fail = |e| CoordinatorResult::response_only(Reply::new(EndTxnResponse::error(e)));
        if req.transactional_id.is_empty() {
            return fail(TxnError::InvalidRequest);
        }
        let Some(meta) = self.txns.get(&req.transactional_id) else {
            return fail(TxnError::InvalidProducerIdMapping);
        };
        let result = if req.committed {
            TransactionResult::Commit
        } else {
            TransactionResult::Abort
        };
        let tv2 = req.client_transaction_version.supports_epoch_bump();
        match self.end_transaction(
            meta,
            req.producer_id,
            req.producer_epoch,
            result,
            true,
            req.client_transaction_version,
            now_ms,
            Some(pids),
        ) {
            Err(e) => fail(e),
            Ok(EndDecision::Answer {
                producer_id,
                producer_epoch,
            }) => CoordinatorResult::response_only(Reply::new(EndTxnResponse {
                error: None,
                producer_id: if tv2 { producer_id } else { NO_PRODUCER_ID },
                producer_epoch: if tv2 {
                    producer_epoch
                } else {
                    NO_PRODUCER_EPOCH
                },
            })),
            Ok(EndDecision::Write(v)) => {
                // V2 clients continue with the id/epoch the transaction completes with: the
                // bumped epoch, or the next producer id at epoch 0 after an overflow.
                let (producer_id, producer_epoch) = if !tv2 {
                    (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
                } else if v.next_producer_id != NO_PRODUCER_ID {
                    (v.next_producer_id, 0)
                } else {
                    (v.producer_id, v.producer_epoch)
                };
                let marker = self.marker_for(&req.transactional_id, &v, result);
                CoordinatorResult::new(
                    vec![record(&req.transactional_id, v)],
                    Reply {
                        response: EndTxnResponse {
                            error: None,
                            producer_id,
                            producer_epoch,
                        },
                        markers: vec![marker],
                    },
                )
            }
        }
    }

    /// Kafka's `endTransaction` (TV0/1 and TV2 rules), on `meta` which may carry a pending
    /// PrepareEpochFence (coordinator-initiated abort).
    #[allow(clippy::too_many_arguments)]
    fn end_transaction(
        &self,
        meta: &TransactionMetadata,
        producer_id: i64,
        producer_epoch: i16,
        result: TransactionResult,
        from_client: bool,
        client_tv: TransactionVersion,
        now_ms: i64,
        pids: Option<&mut dyn ProducerIdGenerator>,
    ) -> Result<EndDecision, TxnError> {
        use TransactionResult::{Abort, Commit};
        use TxnState::*;
        let is_epoch_fence = meta.pending_state == Some(PrepareEpochFence);
        let target = |r| {
            if r == Commit {
                PrepareCommit
            } else {
                PrepareAbort
            }
        };
        let answer = EndDecision::Answer {
            producer_id: meta.producer_id,
            producer_epoch: meta.producer_epoch,
        };

        if !client_tv.supports_epoch_bump() {
            if meta.producer_id != producer_id {
                return Err(TxnError::InvalidProducerIdMapping);
            }
            // Clients must match the epoch exactly; internal aborts carry the fenced epoch.
            if (from_client && producer_epoch != meta.producer_epoch)
                || producer_epoch < meta.producer_epoch
            {
                return Err(TxnError::ProducerFenced);
            }
            if meta.pending_state.is_some() && !is_epoch_fence {
                return Err(TxnError::ConcurrentTransactions);
            }
            return match (meta.state, result) {
                (Ongoing, r) => {
                    let mut m = meta.clone();
                    if target(r) == PrepareAbort && is_epoch_fence {
                        m.pending_state = None;
                        m.producer_epoch = producer_epoch;
                        m.last_producer_epoch = NO_PRODUCER_EPOCH;
                    }
                    m.prepare_abort_or_commit(
                        target(r),
                        TransactionVersion::V0,
                        NO_PRODUCER_ID,
                        now_ms,
                        false,
                    )
                    .map(EndDecision::Write)
                    .map_err(|_| TxnError::UnknownServerError)
                }
                (CompleteCommit, Commit) | (CompleteAbort, Abort) => Ok(answer),
                (PrepareCommit, Commit) | (PrepareAbort, Abort) => {
                    Err(TxnError::ConcurrentTransactions)
                }
                (Dead | PrepareEpochFence, _) => Err(TxnError::UnknownServerError),
                _ => Err(TxnError::InvalidTxnState),
            };
        }

        // Transactions V2: every EndTxn bumps the epoch, so a retry carries current − 1.
        let retry_on_overflow = !is_epoch_fence
            && meta.prev_producer_id == producer_id
            && producer_epoch == i16::MAX - 1
            && meta.producer_epoch == 0;
        let retry_on_epoch_bump =
            !is_epoch_fence && meta.producer_epoch as i32 == producer_epoch as i32 + 1;
        let is_valid_epoch = if !is_epoch_fence {
            match meta.state {
                Ongoing | Empty | Dead | PrepareEpochFence => producer_epoch == meta.producer_epoch,
                PrepareCommit | PrepareAbort => retry_on_epoch_bump,
                CompleteCommit | CompleteAbort => {
                    retry_on_epoch_bump
                        || retry_on_overflow
                        || producer_epoch == meta.producer_epoch
                }
            }
        } else {
            (!from_client || producer_epoch == meta.producer_epoch)
                && producer_epoch >= meta.producer_epoch
        };
        let is_retry = retry_on_epoch_bump || retry_on_overflow;

        if meta.producer_id != producer_id && !retry_on_overflow {
            return Err(TxnError::InvalidProducerIdMapping);
        }
        if !is_valid_epoch {
            return Err(TxnError::ProducerFenced);
        }
        if meta.pending_state.is_some() && !is_epoch_fence {
            return Err(TxnError::ConcurrentTransactions);
        }
        let mut pids = pids;
        let mut complete = |next: TxnState, no_partition_added: bool| {
            let next_producer_id = if !is_epoch_fence && meta.is_producer_epoch_exhausted() {
                match pids.as_mut() {
                    Some(g) => g.generate_producer_id()?,
                    None => return Err(TxnError::UnknownServerError),
                }
            } else {
                NO_PRODUCER_ID
            };
            let mut m = meta.clone();
            if next == PrepareAbort && is_epoch_fence {
                m.pending_state = None;
                m.producer_epoch = producer_epoch;
                m.last_producer_epoch = NO_PRODUCER_EPOCH;
            }
            m.prepare_abort_or_commit(
                next,
                client_tv,
                next_producer_id,
                now_ms,
                no_partition_added,
            )
            .map(EndDecision::Write)
            .map_err(|_| TxnError::UnknownServerError)
        };
        match (meta.state, result) {
            (Ongoing, r) => complete(target(r), false),
            (CompleteCommit, Commit) | (CompleteAbort, Abort) if is_retry => Ok(answer),
            (CompleteCommit, Commit) => Err(TxnError::InvalidTxnState),
            (CompleteCommit, Abort) if is_retry => Err(TxnError::InvalidTxnState),
            (CompleteCommit | CompleteAbort | Empty, Abort) => complete(PrepareAbort, true),
            (CompleteAbort | Empty, Commit) => Err(TxnError::InvalidTxnState),
            (PrepareCommit, Commit) | (PrepareAbort, Abort) => {
                Err(TxnError::ConcurrentTransactions)
            }
            (PrepareCommit, Abort) | (PrepareAbort, Commit) => Err(TxnError::InvalidTxnState),
            (Dead | PrepareEpochFence, _) => Err(TxnError::UnknownServerError),
        }
    }

    fn marker_for(
        &self,
        transactional_id: &str,
        v: &TxnLogValue,
        result: TransactionResult,
    ) -> TxnMarkerRequest {
        TxnMarkerRequest {
            transactional_id: transactional_id.to_string(),
            producer_id: v.producer_id,
            producer_epoch: v.producer_epoch,
            coordinator_epoch: self.coordinator_epoch,
            result,
            partitions: v.partitions.clone(),
            transaction_version: v.client_transaction_version,
        }
    }

    // ----- Marker completion ----------------------------------------------------------------

    /// Every partition of `marker` acknowledged its marker: write CompleteCommit/CompleteAbort.
    /// A stale completion (other coordinator epoch, producer, epoch, or state) writes nothing;
    /// the reply says whether a Complete record was written.
    pub fn markers_completed(&self, marker: &TxnMarkerRequest, now_ms: i64) -> TxnResult<bool> {
        let nothing = || CoordinatorResult::response_only(Reply::new(false));
        if marker.coordinator_epoch != self.coordinator_epoch {
            return nothing();
        }
        let Some(meta) = self.txns.get(&marker.transactional_id) else {
            return nothing();
        };
        let matches_state = matches!(
            (meta.state, marker.result),
            (TxnState::PrepareCommit, TransactionResult::Commit)
                | (TxnState::PrepareAbort, TransactionResult::Abort)
        );
        if meta.producer_id != marker.producer_id
            || meta.producer_epoch != marker.producer_epoch
            || !matches_state
        {
            return nothing();
        }
        match meta.prepare_complete(now_ms) {
            Ok(v) => {
                CoordinatorResult::new(vec![record(&marker.transactional_id, v)], Reply::new(true))
            }
            Err(_) => nothing(),
        }
    }

    // ----- Time -----------------------------------------------------------------------------

    /// Aborts transactions open longer than their timeout (`txnStartTimestamp + txnTimeoutMs <
    /// now`, the start being the load time for a transaction loaded from the log): each is fenced (epoch bump, so the stale producer gets `PRODUCER_FENCED`) and moved
    /// to PrepareAbort; the markers ride in the reply.
    pub fn abort_timed_out_transactions(&self, now_ms: i64) -> TxnResult<TickOutcome> {
        let mut records = Vec::new();
        let mut markers = Vec::new();
        let mut outcome = TickOutcome::default();
        for (id, meta) in &self.txns {
            let (start, _) = self.timer_bases(id, meta);
            let timed_out = meta.state == TxnState::Ongoing
                && meta.pending_state.is_none()
                && start.saturating_add(meta.txn_timeout_ms as i64) < now_ms;
            if !timed_out {
                continue;
            }
            if let Ok((v, marker)) = self.fence_and_abort(meta, true, now_ms) {
                records.push(record(id, v));
                markers.push(marker);
                outcome.aborted.push(id.clone());
            }
        }
        CoordinatorResult::new(
            records,
            Reply {
                response: outcome,
                markers,
            },
        )
    }

    /// Removes ids idle (in Empty/Complete*) for `transactional.id.expiration.ms`, writing a
    /// tombstone for each.
    pub fn expire_transactional_ids(&self, now_ms: i64) -> TxnResult<TickOutcome> {
        let mut records = Vec::new();
        let mut outcome = TickOutcome::default();
        let horizon = now_ms.saturating_sub(self.config.transactional_id_expiration_ms);
        for (id, meta) in &self.txns {
            if meta.state.is_expiration_allowed()
                && meta.pending_state.is_none()
                && self.timer_bases(id, meta).1 <= horizon
                && meta.prepare_dead().is_ok()
            {
                records.push(TxnLogRecord {
                    transactional_id: id.clone(),
                    value: None,
                });
                outcome.expired.push(id.clone());
            }
        }
        CoordinatorResult::new(records, Reply::new(outcome))
    }

    /// Both periodic jobs: timed-out aborts, then expirations.
    pub fn on_tick(&self, now_ms: i64) -> TxnResult<TickOutcome> {
        let mut a = self.abort_timed_out_transactions(now_ms);
        let e = self.expire_transactional_ids(now_ms);
        // An id aborted in this tick is Ongoing, so it cannot also expire.
        a.records.extend(e.records);
        a.response.response.expired = e.response.response.expired;
        a
    }

    // ----- Describe / List ------------------------------------------------------------------

    /// DescribeTransactions for one id.
    pub fn describe(&self, transactional_id: &str) -> TransactionDescription {
        let mut d = TransactionDescription {
            error: None,
            transactional_id: transactional_id.to_string(),
            state: None,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            transaction_timeout_ms: 0,
            transaction_start_time_ms: -1,
            partitions: BTreeSet::new(),
        };
        if transactional_id.is_empty() {
            d.error = Some(TxnError::InvalidRequest);
            return d;
        }
        match self.txns.get(transactional_id) {
            Some(m) if m.state != TxnState::Dead => {
                d.state = Some(m.state);
                d.producer_id = m.producer_id;
                d.producer_epoch = m.producer_epoch;
                d.transaction_timeout_ms = m.txn_timeout_ms;
                d.transaction_start_time_ms = m.txn_start_timestamp;
                d.partitions = m.partitions.clone();
            }
            _ => d.error = Some(TxnError::TransactionalIdNotFound),
        }
        d
    }

    /// ListTransactions: ids filtered by state names, producer ids, and minimum running time
    /// (`duration_filter_ms` < 0 disables it), as Kafka's `listTransactionStates`.
    pub fn list(
        &self,
        state_filter: &[TxnState],
        producer_id_filter: &[i64],
        duration_filter_ms: i64,
        now_ms: i64,
    ) -> Vec<TransactionListing> {
        self.txns
            .values()
            .filter(|m| state_filter.is_empty() || state_filter.contains(&m.state))
            .filter(|m| {
                producer_id_filter.is_empty() || producer_id_filter.contains(&m.producer_id)
            })
            .filter(|m| {
                duration_filter_ms < 0 || now_ms - m.txn_start_timestamp >= duration_filter_ms
            })
            .map(|m| TransactionListing {
                transactional_id: m.transactional_id.clone(),
                producer_id: m.producer_id,
                state: m.state,
            })
            .collect()
    }
}

fn record(transactional_id: &str, v: TxnLogValue) -> TxnLogRecord {
    TxnLogRecord {
        transactional_id: transactional_id.to_string(),
        value: Some(v),
    }
}
