//! Where coordinator records go: the partition-writer trait, the entries a coordinator partition
//! holds, and an in-memory writer for tests and simulations.

use crate::{CoordinatorShard, ReplayError, TransactionResult, WriteError};

pub use josef_protocol::constants::{NO_PRODUCER_EPOCH, NO_PRODUCER_ID};

/// Appends coordinator records to the coordinator's partition (`__consumer_offsets` or
/// `__transaction_state`). The broker implements it over its log; tests use
/// [`InMemoryPartitionWriter`].
pub trait PartitionWriter<R> {
    /// Appends `records` atomically (one batch) and returns the offset of the last one.
    /// `producer_id`/`producer_epoch` are −1/−1 for non-transactional writes.
    fn append(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        records: &[R],
    ) -> Result<i64, WriteError>;

    /// Appends a transaction marker (control record) for `producer_id` and returns its offset.
    /// Only coordinators that write transactionally (the group coordinator's TxnOffsetCommit) need
    /// it; the default refuses.
    fn append_end_transaction_marker(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        result: TransactionResult,
    ) -> Result<i64, WriteError> {
        let _ = (producer_id, producer_epoch, coordinator_epoch, result);
        Err(WriteError::Unsupported("transaction markers"))
    }
}

impl<R, W: PartitionWriter<R> + ?Sized> PartitionWriter<R> for &mut W {
    fn append(&mut self, pid: i64, epoch: i16, records: &[R]) -> Result<i64, WriteError> {
        (**self).append(pid, epoch, records)
    }

    fn append_end_transaction_marker(
        &mut self,
        pid: i64,
        epoch: i16,
        coordinator_epoch: i32,
        result: TransactionResult,
    ) -> Result<i64, WriteError> {
        (**self).append_end_transaction_marker(pid, epoch, coordinator_epoch, result)
    }
}

/// A data record as stored in a coordinator partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRecord<R> {
    /// Offset in the partition.
    pub offset: i64,
    /// Writer's producer id (−1 if non-transactional).
    pub producer_id: i64,
    /// Writer's producer epoch (−1 if non-transactional).
    pub producer_epoch: i16,
    /// The record.
    pub record: R,
}

/// One entry of a coordinator partition: a data record or a transaction marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEntry<R> {
    /// A coordinator record.
    Record(StoredRecord<R>),
    /// A transaction marker.
    EndTransaction {
        /// Offset in the partition.
        offset: i64,
        /// Producer whose transaction ends.
        producer_id: i64,
        /// Producer epoch on the marker.
        producer_epoch: i16,
        /// Epoch of the transaction coordinator that wrote the marker.
        coordinator_epoch: i32,
        /// Commit or abort.
        result: TransactionResult,
    },
}

impl<R> LogEntry<R> {
    /// Offset of the entry.
    pub fn offset(&self) -> i64 {
        match self {
            LogEntry::Record(r) => r.offset,
            LogEntry::EndTransaction { offset, .. } => *offset,
        }
    }

    /// Replays the entry into `shard`.
    pub fn replay_into<S: CoordinatorShard<Record = R>>(
        &self,
        shard: &mut S,
    ) -> Result<(), ReplayError> {
        match self {
            LogEntry::Record(r) => {
                shard.replay(r.offset, r.producer_id, r.producer_epoch, &r.record)
            }
            LogEntry::EndTransaction {
                offset,
                producer_id,
                producer_epoch,
                result,
                ..
            } => {
                shard.replay_end_transaction_marker(*offset, *producer_id, *producer_epoch, *result)
            }
        }
    }
}

impl<R> From<StoredRecord<R>> for LogEntry<R> {
    fn from(r: StoredRecord<R>) -> Self {
        LogEntry::Record(r)
    }
}

/// An in-memory coordinator partition for tests and simulations.
///
/// It assigns consecutive offsets, keeps a high watermark that only moves when told to (so tests
/// control when responses are released), can be told to fail appends, and can lose its
/// unreplicated tail (a leader failover) before being replayed into a fresh shard (a coordinator
/// restart).
///
/// ```
/// use josef_coordinator::{InMemoryPartitionWriter, PartitionWriter};
///
/// let mut w = InMemoryPartitionWriter::new();
/// assert_eq!(w.append(-1, -1, &["a", "b"]).unwrap(), 1);
/// assert_eq!(w.log_end_offset(), 2);
/// assert_eq!(w.high_watermark(), 0);
/// w.advance_high_watermark(2);
/// assert_eq!(w.high_watermark(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct InMemoryPartitionWriter<R> {
    entries: Vec<LogEntry<R>>,
    next_offset: i64,
    high_watermark: i64,
    fail_next: Option<WriteError>,
    fail_always: Option<WriteError>,
}

impl<R> Default for InMemoryPartitionWriter<R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R> InMemoryPartitionWriter<R> {
    /// An empty partition starting at offset 0.
    pub fn new() -> Self {
        Self {
            entries: Vec::new(),
            next_offset: 0,
            high_watermark: 0,
            fail_next: None,
            fail_always: None,
        }
    }

    /// Makes the next append fail with `error` (once).
    pub fn fail_next_append(&mut self, error: WriteError) {
        self.fail_next = Some(error);
    }

    /// Makes every append fail with `error` until called with `None`.
    pub fn set_failing(&mut self, error: Option<WriteError>) {
        self.fail_always = error;
    }

    /// Everything stored, in offset order.
    pub fn entries(&self) -> &[LogEntry<R>] {
        &self.entries
    }

    /// The next offset to be assigned.
    pub fn log_end_offset(&self) -> i64 {
        self.next_offset
    }

    /// The high watermark: entries below it are durable.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// Moves the high watermark to `offset`, clamped to the log end; it never moves backwards.
    pub fn advance_high_watermark(&mut self, offset: i64) -> i64 {
        self.high_watermark = self.high_watermark.max(offset.min(self.next_offset));
        self.high_watermark
    }

    /// Marks everything appended so far durable and returns the new high watermark.
    pub fn commit_all(&mut self) -> i64 {
        self.advance_high_watermark(self.next_offset)
    }

    /// Drops entries at or above the high watermark, as a leader failover loses unreplicated data.
    pub fn truncate_to_high_watermark(&mut self) {
        let hw = self.high_watermark;
        self.entries.retain(|e| e.offset() < hw);
        self.next_offset = hw;
    }

    /// Replays every stored entry into `shard` (a coordinator restart), in offset order.
    pub fn replay_into<S: CoordinatorShard<Record = R>>(
        &self,
        shard: &mut S,
    ) -> Result<(), ReplayError> {
        self.entries.iter().try_for_each(|e| e.replay_into(shard))
    }

    fn check_failure(&mut self) -> Result<(), WriteError> {
        if let Some(e) = self.fail_next.take() {
            return Err(e);
        }
        if let Some(e) = &self.fail_always {
            return Err(e.clone());
        }
        Ok(())
    }
}

impl<R: Clone> PartitionWriter<R> for InMemoryPartitionWriter<R> {
    fn append(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        records: &[R],
    ) -> Result<i64, WriteError> {
        self.check_failure()?;
        for r in records {
            self.entries.push(LogEntry::Record(StoredRecord {
                offset: self.next_offset,
                producer_id,
                producer_epoch,
                record: r.clone(),
            }));
            self.next_offset += 1;
        }
        Ok(self.next_offset - 1)
    }

    fn append_end_transaction_marker(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        result: TransactionResult,
    ) -> Result<i64, WriteError> {
        self.check_failure()?;
        let offset = self.next_offset;
        self.entries.push(LogEntry::EndTransaction {
            offset,
            producer_id,
            producer_epoch,
            coordinator_epoch,
            result,
        });
        self.next_offset += 1;
        Ok(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_append_stores_nothing() {
        let mut w = InMemoryPartitionWriter::new();
        w.fail_next_append(WriteError::NotLeader);
        assert_eq!(w.append(-1, -1, &[1u8]), Err(WriteError::NotLeader));
        assert_eq!(w.append(-1, -1, &[1u8]), Ok(0));
        w.set_failing(Some(WriteError::Timeout));
        assert_eq!(w.append(-1, -1, &[2u8]), Err(WriteError::Timeout));
        assert_eq!(w.entries().len(), 1);
    }

    #[test]
    fn truncation_drops_unreplicated_tail() {
        let mut w = InMemoryPartitionWriter::new();
        w.append(-1, -1, &[1u8, 2]).unwrap();
        w.commit_all();
        w.append(-1, -1, &[3u8]).unwrap();
        w.truncate_to_high_watermark();
        assert_eq!(w.entries().len(), 2);
        assert_eq!(w.append(-1, -1, &[4u8]).unwrap(), 2);
    }
}
