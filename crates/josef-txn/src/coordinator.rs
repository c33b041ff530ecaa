//! Routes transaction requests to the `__transaction_state` partitions this node leads, one
//! [`TxnShard`] per partition, each driven by a josef-coordinator `CoordinatorDriver`.

use std::collections::BTreeMap;

use josef_coordinator::{
    CoordinatorDriver, CoordinatorResult, DriverError, LogEntry, PartitionWriter, ReplayError,
};

use crate::{
    partition_for, AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AddPartitionsToTxnResult,
    EndTxnRequest, EndTxnResponse, InitProducerIdRequest, InitProducerIdResponse,
    ProducerIdGenerator, Reply, TickOutcome, TransactionDescription, TransactionListing,
    TransactionVersion, TxnConfig, TxnError, TxnLogRecord, TxnMarkerRequest, TxnShard, TxnState,
};

/// Any coordinator answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnReply {
    /// InitProducerId answer.
    InitProducerId(InitProducerIdResponse),
    /// AddPartitionsToTxn answer for one transaction.
    AddPartitionsToTxn(AddPartitionsToTxnResult),
    /// AddOffsetsToTxn answer (`None` = success).
    AddOffsetsToTxn(Option<TxnError>),
    /// EndTxn answer.
    EndTxn(EndTxnResponse),
    /// Whether a marker completion wrote a Complete record.
    MarkersCompleted(bool),
    /// What a tick did.
    Tick(TickOutcome),
}

impl TxnReply {
    /// The same kind of answer carrying `error` instead (e.g. `NOT_COORDINATOR` for answers held
    /// when the partition was lost).
    pub fn failed(&self, error: TxnError) -> TxnReply {
        match self {
            TxnReply::InitProducerId(_) => {
                TxnReply::InitProducerId(InitProducerIdResponse::error(error))
            }
            TxnReply::AddPartitionsToTxn(r) => {
                TxnReply::AddPartitionsToTxn(AddPartitionsToTxnResult {
                    transactional_id: r.transactional_id.clone(),
                    partitions: r
                        .partitions
                        .iter()
                        .map(|(p, _)| (p.clone(), Some(error)))
                        .collect(),
                })
            }
            TxnReply::AddOffsetsToTxn(_) => TxnReply::AddOffsetsToTxn(Some(error)),
            TxnReply::EndTxn(_) => TxnReply::EndTxn(EndTxnResponse::error(error)),
            TxnReply::MarkersCompleted(_) => TxnReply::MarkersCompleted(false),
            TxnReply::Tick(_) => TxnReply::Tick(TickOutcome::default()),
        }
    }
}

/// An answer released to the broker, with the caller's context and the markers to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released<C> {
    /// What the caller passed with the request (correlation id, response channel, ...); `None`
    /// for coordinator-initiated work (ticks, marker completions).
    pub context: Option<C>,
    /// The answer.
    pub reply: TxnReply,
    /// Marker writes to start now (the records deciding them are durable).
    pub markers: Vec<TxnMarkerRequest>,
}

/// Load status of a `__transaction_state` partition on this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionStatus {
    /// Being loaded: requests get `COORDINATOR_LOAD_IN_PROGRESS`.
    Loading {
        /// Leader epoch being loaded.
        coordinator_epoch: i32,
    },
    /// Loaded and serving.
    Active {
        /// Leader epoch.
        coordinator_epoch: i32,
    },
}

enum Slot<W, C> {
    Loading { coordinator_epoch: i32 },
    Active(Box<CoordinatorDriver<TxnShard, W, Released<C>>>),
}

/// The transaction coordinator of a node: the partitions of `__transaction_state` it leads.
///
/// Requests for ids whose partition is not led here get `NOT_COORDINATOR`; while the partition
/// loads, `COORDINATOR_LOAD_IN_PROGRESS`. Each request method returns `Some(answer)` if it can be
/// answered now, `None` if the answer waits for its records to be durable; held answers come
/// back from [`on_high_watermark`](Self::on_high_watermark).
///
/// ```
/// use josef_coordinator::{InMemoryPartitionWriter, LogEntry};
/// use josef_txn::*;
///
/// let mut c: TxnCoordinator<InMemoryPartitionWriter<TxnLogRecord>, u32> =
///     TxnCoordinator::new(TxnConfig::default());
/// let p = c.partition_for("txn-a");
/// let stored: Vec<LogEntry<TxnLogRecord>> = Vec::new();
/// c.complete_loading(p, 0, InMemoryPartitionWriter::new(), stored, 0).unwrap();
/// let mut pids = SequentialProducerIdGenerator::new(0);
/// let req = InitProducerIdRequest {
///     transactional_id: Some("txn-a".into()),
///     transaction_timeout_ms: 60_000,
///     producer_id: -1,
///     producer_epoch: -1,
/// };
/// assert!(c.init_producer_id(&req, 0, &mut pids, 7).is_none());
/// let released = c.on_high_watermark(p, 1);
/// assert_eq!(released[0].context, Some(7));
/// ```
pub struct TxnCoordinator<W, C> {
    config: TxnConfig,
    partitions: BTreeMap<i32, Slot<W, C>>,
}

impl<W, C> TxnCoordinator<W, C>
where
    W: PartitionWriter<TxnLogRecord>,
    C: Clone,
{
    /// A coordinator leading no partition yet.
    pub fn new(config: TxnConfig) -> Self {
        Self {
            config,
            partitions: BTreeMap::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    /// Follows the cluster's finalized `transaction.version`: the shards loaded now and later
    /// use it for coordinator-initiated aborts (see [`TxnShard::set_transaction_version`]).
    pub fn set_transaction_version(&mut self, version: TransactionVersion) {
        if self.config.transaction_version == version {
            return;
        }
        self.config.transaction_version = version;
        for slot in self.partitions.values_mut() {
            if let Slot::Active(d) = slot {
                d.shard_mut().set_transaction_version(version);
            }
        }
    }

    /// The `__transaction_state` partition of `transactional_id`.
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        partition_for(transactional_id, self.config.transaction_state_partitions)
    }

    /// Status of `partition` here, `None` if not led here.
    pub fn status(&self, partition: i32) -> Option<PartitionStatus> {
        self.partitions.get(&partition).map(|s| match s {
            Slot::Loading { coordinator_epoch } => PartitionStatus::Loading {
                coordinator_epoch: *coordinator_epoch,
            },
            Slot::Active(d) => PartitionStatus::Active {
                coordinator_epoch: d.shard().coordinator_epoch(),
            },
        })
    }

    /// This node became leader of `partition` at `coordinator_epoch` and starts reading it.
    /// Answers held for a previous incarnation are returned (answer them `NOT_COORDINATOR`).
    pub fn begin_loading(&mut self, partition: i32, coordinator_epoch: i32) -> Vec<Released<C>> {
        let held = self.resign(partition);
        self.partitions
            .insert(partition, Slot::Loading { coordinator_epoch });
        held
    }

    /// Loads `partition` from its stored entries and starts serving it, appending through
    /// `writer`. Returns the marker writes to restart (transactions left in Prepare*). The loaded
    /// transactions' timers run from `now_ms` ([`TxnShard::restart_loaded_timers`]).
    pub fn complete_loading<I>(
        &mut self,
        partition: i32,
        coordinator_epoch: i32,
        writer: W,
        entries: I,
        now_ms: i64,
    ) -> Result<Vec<TxnMarkerRequest>, ReplayError>
    where
        I: IntoIterator,
        I::Item: Into<LogEntry<TxnLogRecord>>,
    {
        let mut driver = CoordinatorDriver::new(
            TxnShard::new(self.config.clone(), coordinator_epoch),
            writer,
        );
        driver.load(entries)?;
        driver.shard_mut().restart_loaded_timers(now_ms);
        let markers = driver.shard().pending_markers();
        self.partitions
            .insert(partition, Slot::Active(Box::new(driver)));
        Ok(markers)
    }

    /// This node no longer leads `partition`: drops its state and returns the held answers
    /// (answer them with [`TxnReply::failed`]`(NOT_COORDINATOR)`).
    pub fn resign(&mut self, partition: i32) -> Vec<Released<C>> {
        match self.partitions.remove(&partition) {
            Some(Slot::Active(mut d)) => d.fail_all(),
            _ => Vec::new(),
        }
    }

    /// The shard of `partition`, if active.
    pub fn shard(&self, partition: i32) -> Option<&TxnShard> {
        match self.partitions.get(&partition) {
            Some(Slot::Active(d)) => Some(d.shard()),
            _ => None,
        }
    }

    /// The driver of `partition`, if active (tests use it to reach the writer).
    pub fn driver_mut(
        &mut self,
        partition: i32,
    ) -> Option<&mut CoordinatorDriver<TxnShard, W, Released<C>>> {
        match self.partitions.get_mut(&partition) {
            Some(Slot::Active(d)) => Some(d),
            _ => None,
        }
    }

    /// Stops serving `partition` and hands back its writer plus the held answers (answer them
    /// `NOT_COORDINATOR`), e.g. to reload it over the same log after a restart.
    pub fn take_writer(&mut self, partition: i32) -> Option<(W, Vec<Released<C>>)> {
        match self.partitions.remove(&partition) {
            Some(Slot::Active(mut d)) => {
                let held = d.fail_all();
                Some((d.into_parts().1, held))
            }
            _ => None,
        }
    }

    /// The partitions led here.
    pub fn partitions(&self) -> Vec<i32> {
        self.partitions.keys().copied().collect()
    }

    fn driver_for(
        &mut self,
        transactional_id: &str,
    ) -> Result<&mut CoordinatorDriver<TxnShard, W, Released<C>>, TxnError> {
        let p = self.partition_for(transactional_id);
        match self.partitions.get_mut(&p) {
            None => Err(TxnError::NotCoordinator),
            Some(Slot::Loading { .. }) => Err(TxnError::CoordinatorLoadInProgress),
            Some(Slot::Active(d)) => Ok(d),
        }
    }

    /// Runs `handler` on the shard of `transactional_id`, appending and holding as needed.
    fn submit<R>(
        &mut self,
        transactional_id: &str,
        context: C,
        wrap: impl FnOnce(R) -> TxnReply,
        error_reply: TxnReply,
        handler: impl FnOnce(&TxnShard) -> CoordinatorResult<TxnLogRecord, Reply<R>>,
    ) -> Option<Released<C>> {
        let fail = |ctx: C, e: TxnError| {
            Some(Released {
                context: Some(ctx),
                reply: error_reply.failed(e),
                markers: Vec::new(),
            })
        };
        let driver = match self.driver_for(transactional_id) {
            Ok(d) => d,
            Err(e) => return fail(context, e),
        };
        let ctx = context.clone();
        let written = driver.write(|s| {
            handler(s).map_response(|r| Released {
                context: Some(ctx),
                reply: wrap(r.response),
                markers: r.markers,
            })
        });
        match written {
            Ok(released) => released,
            Err(e) => fail(context, driver_error(&e)),
        }
    }

    /// InitProducerId. A null transactional id is answered at once by any node.
    pub fn init_producer_id(
        &mut self,
        req: &InitProducerIdRequest,
        now_ms: i64,
        pids: &mut dyn ProducerIdGenerator,
        context: C,
    ) -> Option<Released<C>> {
        let Some(id) = req.transactional_id.clone().filter(|id| !id.is_empty()) else {
            // Null or empty ids need no partition (the shard logic answers them).
            let shard = TxnShard::new(self.config.clone(), 0);
            let r = shard.init_producer_id(req, now_ms, pids);
            return Some(Released {
                context: Some(context),
                reply: TxnReply::InitProducerId(r.response.response),
                markers: Vec::new(),
            });
        };
        self.submit(
            &id,
            context,
            TxnReply::InitProducerId,
            TxnReply::InitProducerId(InitProducerIdResponse::error(TxnError::UnknownServerError)),
            |s| s.init_producer_id(req, now_ms, pids),
        )
    }

    /// AddPartitionsToTxn for one transaction (also the verify-only form).
    pub fn add_partitions_to_txn(
        &mut self,
        req: &AddPartitionsToTxnRequest,
        now_ms: i64,
        client_tv: TransactionVersion,
        context: C,
    ) -> Option<Released<C>> {
        if req.transactional_id.is_empty() {
            return Some(Released {
                context: Some(context),
                reply: TxnReply::AddPartitionsToTxn(AddPartitionsToTxnResult::uniform(
                    req,
                    Some(TxnError::InvalidRequest),
                )),
                markers: Vec::new(),
            });
        }
        self.submit(
            &req.transactional_id,
            context,
            TxnReply::AddPartitionsToTxn,
            TxnReply::AddPartitionsToTxn(AddPartitionsToTxnResult::uniform(req, None)),
            |s| s.add_partitions_to_txn(req, now_ms, client_tv),
        )
    }

    /// AddOffsetsToTxn.
    pub fn add_offsets_to_txn(
        &mut self,
        req: &AddOffsetsToTxnRequest,
        now_ms: i64,
        client_tv: TransactionVersion,
        context: C,
    ) -> Option<Released<C>> {
        if req.transactional_id.is_empty() {
            return Some(Released {
                context: Some(context),
                reply: TxnReply::AddOffsetsToTxn(Some(TxnError::InvalidRequest)),
                markers: Vec::new(),
            });
        }
        self.submit(
            &req.transactional_id,
            context,
            TxnReply::AddOffsetsToTxn,
            TxnReply::AddOffsetsToTxn(None),
            |s| s.add_offsets_to_txn(req, now_ms, client_tv),
        )
    }

    /// EndTxn.
    pub fn end_txn(
        &mut self,
        req: &EndTxnRequest,
        now_ms: i64,
        pids: &mut dyn ProducerIdGenerator,
        context: C,
    ) -> Option<Released<C>> {
        if req.transactional_id.is_empty() {
            return Some(Released {
                context: Some(context),
                reply: TxnReply::EndTxn(EndTxnResponse::error(TxnError::InvalidRequest)),
                markers: Vec::new(),
            });
        }
        self.submit(
            &req.transactional_id,
            context,
            TxnReply::EndTxn,
            TxnReply::EndTxn(EndTxnResponse::error(TxnError::UnknownServerError)),
            |s| s.end_txn(req, now_ms, pids),
        )
    }

    /// All markers of `marker` were written. `Err` when the Complete record could not be
    /// appended: retry later on `COORDINATOR_NOT_AVAILABLE`; on `NOT_COORDINATOR` the new leader
    /// re-sends the markers after loading.
    pub fn markers_completed(
        &mut self,
        marker: &TxnMarkerRequest,
        now_ms: i64,
    ) -> Result<Option<Released<C>>, TxnError> {
        let driver = self.driver_for(&marker.transactional_id)?;
        driver
            .write(|s| {
                s.markers_completed(marker, now_ms)
                    .map_response(|r| Released {
                        context: None,
                        reply: TxnReply::MarkersCompleted(r.response),
                        markers: r.markers,
                    })
            })
            .map_err(|e| driver_error(&e))
    }

    /// Periodic work on every active partition: timed-out transactions are aborted and idle ids
    /// expired. Answers (with markers) come back now or from `on_high_watermark`.
    pub fn on_tick(&mut self, now_ms: i64) -> Vec<Released<C>> {
        let mut out = Vec::new();
        for slot in self.partitions.values_mut() {
            if let Slot::Active(d) = slot {
                let written = d.write(|s| {
                    s.on_tick(now_ms).map_response(|r| Released {
                        context: None,
                        reply: TxnReply::Tick(r.response),
                        markers: r.markers,
                    })
                });
                // A failed append changes nothing; the next tick tries again.
                if let Ok(Some(r)) = written {
                    out.push(r);
                }
            }
        }
        out
    }

    /// The high watermark of `partition` moved: releases the answers it makes durable.
    pub fn on_high_watermark(&mut self, partition: i32, high_watermark: i64) -> Vec<Released<C>> {
        match self.partitions.get_mut(&partition) {
            Some(Slot::Active(d)) => d.on_high_watermark(high_watermark),
            _ => Vec::new(),
        }
    }

    /// DescribeTransactions for one id.
    pub fn describe(&self, transactional_id: &str) -> TransactionDescription {
        let p = self.partition_for(transactional_id);
        match self.partitions.get(&p) {
            Some(Slot::Active(d)) => d.shard().describe(transactional_id),
            other => {
                let mut d = TxnShard::new(self.config.clone(), 0).describe(transactional_id);
                if d.error != Some(TxnError::InvalidRequest) {
                    d.error = Some(match other {
                        Some(Slot::Loading { .. }) => TxnError::CoordinatorLoadInProgress,
                        _ => TxnError::NotCoordinator,
                    });
                }
                d
            }
        }
    }

    /// ListTransactions over every active partition.
    pub fn list(
        &self,
        state_filter: &[TxnState],
        producer_id_filter: &[i64],
        duration_filter_ms: i64,
        now_ms: i64,
    ) -> Vec<TransactionListing> {
        self.partitions
            .values()
            .filter_map(|s| match s {
                Slot::Active(d) => Some(d.shard().list(
                    state_filter,
                    producer_id_filter,
                    duration_filter_ms,
                    now_ms,
                )),
                Slot::Loading { .. } => None,
            })
            .flatten()
            .collect()
    }
}

/// The error a failed driver write answers with (Kafka's mapping of log append errors).
fn driver_error(e: &DriverError) -> TxnError {
    TxnError::from_code(e.kafka_error_code()).unwrap_or(TxnError::UnknownServerError)
}
