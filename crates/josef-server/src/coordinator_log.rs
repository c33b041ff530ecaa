//! A coordinator partition (`__consumer_offsets`, `__transaction_state`) as josef-coordinator
//! sees it: a [`PartitionWriter`] appending Kafka-format batches to the led partition, and the
//! partition's batches read back for loading ([`LoadedLog::read`], shared by both coordinators).

use std::sync::Arc;

use josef_coordinator::{LoadedLog, PartitionWriter, RecordSerde, WriteError};
use josef_records::RecordBatchBuilder;

use crate::partition::Partition;
use crate::topics::now_ms;

/// Appends coordinator records to a coordinator partition, only while it is led here in the
/// coordinator epoch the shard was loaded under (else [`WriteError::NotLeader`], which the
/// coordinators answer NOT_COORDINATOR): Kafka appends with the coordinator's leader epoch, so a
/// deposed coordinator never writes.
pub struct CoordinatorLogWriter<S> {
    partition: Arc<Partition>,
    epoch: i32,
    serde: S,
}

impl<S> CoordinatorLogWriter<S> {
    /// A writer to `partition` while it is led here at `epoch`, with records encoded by `serde`.
    pub fn new(partition: Arc<Partition>, epoch: i32, serde: S) -> Self {
        CoordinatorLogWriter {
            partition,
            epoch,
            serde,
        }
    }

    /// The partition written to.
    pub fn partition(&self) -> &Arc<Partition> {
        &self.partition
    }
}

impl<R, S: RecordSerde<R>> PartitionWriter<R> for CoordinatorLogWriter<S> {
    /// One batch; with a producer id it is transactional (TxnOffsetCommit's offsets, which the
    /// transaction's marker later commits or aborts).
    fn append(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        records: &[R],
    ) -> Result<i64, WriteError> {
        if self.partition.leader_epoch_if_leader() != Some(self.epoch) {
            return Err(WriteError::NotLeader);
        }
        let now = now_ms();
        let mut b = RecordBatchBuilder::new().create_time();
        if producer_id >= 0 {
            b = b
                .producer(producer_id, producer_epoch, 0)
                .transactional(true);
        }
        for r in records {
            let (k, v) = self.serde.serialize(r);
            b = b.record(now, k.as_deref(), v.as_deref());
        }
        let batch = b.build().map_err(|e| WriteError::Storage(e.to_string()))?;
        let info = self
            .partition
            .append_internal(batch, now)
            .map_err(|e| WriteError::Storage(format!("{:?}", e.code)))?;
        Ok(info.last_offset)
    }
}

/// What `partition` holds from its log start to its log end, read with `serde`, and its high
/// watermark read before it (so never above what was read: only that much counts as committed).
pub fn read_partition<R, S: RecordSerde<R> + ?Sized>(
    partition: &Partition,
    serde: &S,
) -> (LoadedLog<R>, i64) {
    let high_watermark = partition.high_watermark();
    let (batches, log_end_offset) = match partition.batches_from_log_start() {
        Ok(b) => (b.batches, b.log_end_offset),
        Err(e) => {
            tracing::error!(topic = %partition.topic, partition = partition.index, error = ?e, "cannot read coordinator partition; loading it empty");
            (Vec::new(), partition.log_end_offset())
        }
    };
    let mut log = LoadedLog::read(batches, serde);
    if log.skipped_batches + log.skipped_records > 0 {
        tracing::warn!(
            topic = %partition.topic,
            partition = partition.index,
            skipped_batches = log.skipped_batches,
            skipped_records = log.skipped_records,
            "unreadable coordinator records skipped while loading"
        );
    }
    log.log_end_offset = log.log_end_offset.max(log_end_offset);
    (log, high_watermark)
}
