//! One partition this node leads: its log, its producer state, and an append listener (the
//! broker's completes the delayed fetches parked on it as soon as data is appended).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use bytes::{Bytes, BytesMut};
use josef_log::{
    AbortedTxn, BatchHeader, Log, LogAppendInfo, LogConfig, LogError, ProducerStateReplay,
};
use josef_protocol::{ErrorCode, Uuid};
use josef_sequencer::{
    BatchInfo, ControlType, EndTxnMarker, ProducerStateConfig, ProducerStateTable, SequenceError,
    Validation,
};
use parking_lot::Mutex;
use tokio::sync::watch;

/// A client's batch to append: one the broker built or rewrote (up-converted, recompressed, its
/// timestamp fixed), which the log may patch in place, or the request's own bytes, which the log
/// writes from where they are with only the header copied.
#[derive(Debug)]
pub enum ClientBatch {
    /// A buffer the log may rewrite.
    Owned(BytesMut),
    /// A slice of the request frame.
    Shared(Bytes),
}

/// Everything of a partition that changes under its lock: the log and the producer state are
/// updated together so validate → append → commit is atomic per partition.
pub struct PartitionData {
    /// The log.
    pub log: Log,
    /// Producer ids, sequences and open transactions of this partition.
    pub producers: ProducerStateTable,
}

impl PartitionData {
    /// Last stable offset: the first offset of the oldest open transaction, else the HW.
    pub fn last_stable_offset(&self) -> i64 {
        self.producers.last_stable_offset(self.log.high_watermark())
    }
}

/// A partition led by this node.
pub struct Partition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub index: i32,
    /// Topic id.
    pub topic_id: Uuid,
    /// Leader epoch (a single node keeps 0: leadership never moves).
    pub leader_epoch: i32,
    /// The data, under one lock.
    pub data: Mutex<PartitionData>,
    /// Bumped (with the new HW) on every append (for embedders that `subscribe`).
    appended: watch::Sender<i64>,
    /// Called after every append, outside the partition lock (the broker completes delayed
    /// fetches waiting on this partition).
    on_append: OnceLock<AppendListener>,
}

/// What [`Partition::set_append_listener`] takes.
pub type AppendListener = Arc<dyn Fn(&Partition) + Send + Sync>;

/// What a successful produce to one partition returns.
#[derive(Debug, Clone, Copy)]
pub struct ProduceResult {
    /// Offset of the first appended (or originally appended, for a duplicate) record.
    pub base_offset: i64,
    /// Broker time for LogAppendTime topics (or the cached time of a duplicate), else −1.
    pub log_append_time: i64,
    /// Log start offset after the append.
    pub log_start_offset: i64,
}

/// A failed produce to one partition: Kafka error and optional message.
#[derive(Debug, Clone)]
pub struct PartitionError {
    /// Kafka error code.
    pub code: ErrorCode,
    /// Message for the client (v8+ `error_message`).
    pub message: Option<String>,
}

impl PartitionError {
    /// An error without a message.
    pub fn new(code: ErrorCode) -> Self {
        PartitionError {
            code,
            message: None,
        }
    }

    fn with(code: ErrorCode, message: impl Into<String>) -> Self {
        PartitionError {
            code,
            message: Some(message.into()),
        }
    }
}

/// Maps a log error to the Kafka error code a client sees.
pub fn log_error_code(e: &LogError) -> ErrorCode {
    match e {
        LogError::OffsetOutOfRange { .. } => ErrorCode::OffsetOutOfRange,
        LogError::InvalidRecords(m) if m.contains("crc") || m.contains("CRC") => {
            ErrorCode::CorruptMessage
        }
        LogError::InvalidRecords(_) => ErrorCode::InvalidRecord,
        LogError::RecordTooLarge { .. } => ErrorCode::MessageTooLarge,
        LogError::RecordBatchTooLarge { .. } => ErrorCode::RecordListTooLarge,
        _ => ErrorCode::KafkaStorageError,
    }
}

fn sequence_error(e: &SequenceError) -> PartitionError {
    PartitionError {
        code: ErrorCode::from_i16(e.kafka_error_code()).unwrap_or(ErrorCode::UnknownServerError),
        message: Some(e.to_string()),
    }
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

/// The COMMIT/ABORT type of a control batch, read from its first record's key
/// (version i16, type i16). Control batches are never compressed.
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
    let k = batch.get(pos..pos + 4)?;
    ControlType::from_id(i16::from_be_bytes([k[2], k[3]]))
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

/// josef-log's producer-state rebuild, over josef-sequencer's table (the two crates do not know
/// each other: the broker composes them).
struct TableReplay<'a> {
    table: &'a mut ProducerStateTable,
    config: ProducerStateConfig,
    now_ms: i64,
}

impl ProducerStateReplay for TableReplay<'_> {
    fn load_snapshot(&mut self, offset: i64, bytes: &[u8]) -> Result<(), String> {
        let t = ProducerStateTable::from_snapshot(self.config, bytes, offset, self.now_ms)
            .map_err(|e| e.to_string())?;
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

impl Partition {
    /// Opens (or creates) the partition's log in `dir` and rebuilds its producer state from the
    /// newest snapshot plus the batches after it.
    pub fn open(
        dir: &Path,
        topic: &str,
        index: i32,
        topic_id: Uuid,
        config: LogConfig,
        producer_config: ProducerStateConfig,
        now_ms: i64,
    ) -> Result<Partition, LogError> {
        let mut log = Log::open(dir, config, now_ms)?;
        let leo = log.log_end_offset();
        // One replica: everything in the log is committed.
        log.update_high_watermark(leo);
        let mut producers = ProducerStateTable::new(producer_config);
        let report = log.rebuild_producer_state(&mut TableReplay {
            table: &mut producers,
            config: producer_config,
            now_ms,
        })?;
        if let Some(e) = report.snapshot_error {
            tracing::warn!(%topic, index, error = %e, "bad producer snapshot, rebuilt from the log");
        }
        producers.on_high_watermark_updated(leo);
        let (appended, _) = watch::channel(leo);
        Ok(Partition {
            topic: topic.to_string(),
            index,
            topic_id,
            leader_epoch: 0,
            data: Mutex::new(PartitionData { log, producers }),
            appended,
            on_append: OnceLock::new(),
        })
    }

    /// Sets the function called after every append (once; later calls are ignored).
    pub fn set_append_listener(&self, listener: AppendListener) {
        let _ = self.on_append.set(listener);
    }

    fn notify_append(&self, hw: i64) {
        self.appended.send_replace(hw);
        if let Some(listener) = self.on_append.get() {
            listener(self);
        }
    }

    /// A receiver that changes on every append (subscribe before reading to never miss one).
    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.appended.subscribe()
    }

    /// Appends a client's records (one v2 batch, validated by the Produce handler) as the leader:
    /// producer-state checks, offset assignment, HW advance, fetch wake-up.
    pub fn append_from_client(
        &self,
        records: ClientBatch,
        header: &BatchHeader,
        now_ms: i64,
    ) -> Result<ProduceResult, PartitionError> {
        let hw = {
            let mut d = self.data.lock();
            let info = batch_info(header);
            let plan = if info.has_producer_id() {
                match d
                    .producers
                    .validate(&info)
                    .map_err(|e| sequence_error(&e))?
                {
                    Validation::Duplicate {
                        first_offset,
                        timestamp,
                        ..
                    } => {
                        let lat = if d.log.config().message_timestamp_type
                            == josef_log::TimestampType::LogAppendTime
                        {
                            timestamp
                        } else {
                            -1
                        };
                        return Ok(ProduceResult {
                            base_offset: first_offset,
                            log_append_time: lat,
                            log_start_offset: d.log.log_start_offset(),
                        });
                    }
                    Validation::Append(plan) => Some(plan),
                }
            } else {
                None
            };
            let append = Self::append_locked(&mut d, records, self.leader_epoch, now_ms)?;
            if let Some(plan) = plan {
                d.producers.commit(plan.with_offsets(
                    append.first_offset,
                    append.last_offset,
                    append.max_timestamp,
                ));
            }
            let hw = d.log.high_watermark();
            d.producers.on_high_watermark_updated(hw);
            let result = ProduceResult {
                base_offset: append.first_offset,
                log_append_time: append.log_append_time,
                log_start_offset: append.log_start_offset,
            };
            (hw, result)
        };
        self.notify_append(hw.0);
        Ok(hw.1)
    }

    fn append_locked(
        d: &mut PartitionData,
        records: ClientBatch,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<LogAppendInfo, PartitionError> {
        let ts_type = d.log.config().message_timestamp_type;
        // Client batches had their CRC checked by `josef_records::validate` (produce handler) and
        // the broker's own batches are built with theirs: the log need not compute it again.
        let info = match records {
            ClientBatch::Owned(records) => {
                d.log
                    .append_as_leader_crc_checked(records, leader_epoch, now_ms, ts_type)
            }
            ClientBatch::Shared(records) => {
                d.log
                    .append_as_leader_shared(records, leader_epoch, now_ms, ts_type)
            }
        }
        .map_err(|e| PartitionError::with(log_error_code(&e), e.to_string()))?;
        let leo = d.log.log_end_offset();
        d.log.update_high_watermark(leo);
        Ok(info)
    }

    /// Appends records written by the broker itself (coordinator records, transaction markers),
    /// without producer checks. Returns the append info.
    pub fn append_internal(
        &self,
        records: BytesMut,
        now_ms: i64,
    ) -> Result<LogAppendInfo, PartitionError> {
        let (hw, info) = {
            let mut d = self.data.lock();
            let info = Self::append_locked(
                &mut d,
                ClientBatch::Owned(records),
                self.leader_epoch,
                now_ms,
            )?;
            if let Ok(h) = BatchHeader::parse(&info.records) {
                if h.has_producer_id() && !h.is_control() {
                    d.producers.replay(&batch_info(&h).with_offsets(
                        info.first_offset,
                        info.last_offset,
                        info.max_timestamp,
                    ));
                }
            }
            let hw = d.log.high_watermark();
            d.producers.on_high_watermark_updated(hw);
            (hw, info)
        };
        self.notify_append(hw);
        Ok(info)
    }

    /// Appends a COMMIT/ABORT marker batch (built by the caller) for `marker`, updates producer
    /// state and indexes an abort in the `.txnindex`.
    pub fn append_marker(
        &self,
        batch: BytesMut,
        marker: EndTxnMarker,
        now_ms: i64,
    ) -> Result<(), PartitionError> {
        let hw = {
            let mut d = self.data.lock();
            let plan = d
                .producers
                .validate_marker(&marker)
                .map_err(|e| sequence_error(&e))?;
            let info =
                Self::append_locked(&mut d, ClientBatch::Owned(batch), self.leader_epoch, now_ms)?;
            let completed = d
                .producers
                .commit_marker(plan.with_offset(info.first_offset, info.max_timestamp));
            if let Some(c) = completed {
                if c.is_aborted {
                    d.log
                        .append_aborted_txn(AbortedTxn {
                            producer_id: c.producer_id,
                            first_offset: c.first_offset,
                            last_offset: c.last_offset,
                            last_stable_offset: c.last_stable_offset,
                        })
                        .map_err(|e| PartitionError::with(log_error_code(&e), e.to_string()))?;
                }
            }
            let hw = d.log.high_watermark();
            d.producers.on_high_watermark_updated(hw);
            hw
        };
        self.notify_append(hw);
        Ok(())
    }

    /// Flushes, snapshots producer state at the LEO, and closes the log.
    pub fn close(self) -> Result<(), LogError> {
        let mut d = self.data.into_inner();
        d.log.flush()?;
        let leo = d.log.log_end_offset();
        let snapshot = d.producers.encode_snapshot();
        d.log.write_producer_snapshot(leo, &snapshot)?;
        d.log.close()
    }
}
