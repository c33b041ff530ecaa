//! Per-producer state of one partition: epoch, the last five batches, coordinator epoch and
//! the open transaction (Kafka's `ProducerStateEntry` and `BatchMetadata`).

use crate::batch::{decrement_sequence, NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_TIMESTAMP};

/// How many appended batches are remembered per producer for duplicate detection; matches the
/// client's `max.in.flight.requests.per.connection` limit for idempotence.
pub const NUM_BATCHES_TO_RETAIN: usize = 5;

/// What is remembered of one appended batch (Kafka's `BatchMetadata`): enough to recognise a
/// retry of it and to answer the retry with the original offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchMetadata {
    /// Sequence of the batch's last record.
    pub last_seq: i32,
    /// Offset of the batch's last record.
    pub last_offset: i64,
    /// `last_offset - first_offset`.
    pub offset_delta: i32,
    /// The batch's max timestamp.
    pub timestamp: i64,
}

impl BatchMetadata {
    /// Sequence of the batch's first record, derived with wrapping like Kafka.
    pub fn first_seq(&self) -> i32 {
        decrement_sequence(self.last_seq, self.offset_delta)
    }

    /// Offset of the batch's first record.
    pub fn first_offset(&self) -> i64 {
        // Wrapping: a corrupt-but-CRC-valid snapshot may hold any values.
        self.last_offset.wrapping_sub(i64::from(self.offset_delta))
    }
}

/// The state of one producer id on one partition.
///
/// Read it through [`ProducerStateTable::producer`](crate::ProducerStateTable::producer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerStateEntry {
    pub(crate) producer_id: i64,
    pub(crate) producer_epoch: i16,
    pub(crate) coordinator_epoch: i32,
    pub(crate) last_timestamp: i64,
    pub(crate) current_txn_first_offset: Option<i64>,
    // Oldest first; a fixed array so an append never allocates.
    batches: [BatchMetadata; NUM_BATCHES_TO_RETAIN],
    len: u8,
}

impl ProducerStateEntry {
    /// An entry with no epoch, no batches and no transaction (`ProducerStateEntry.empty`).
    pub fn empty(producer_id: i64) -> Self {
        ProducerStateEntry {
            producer_id,
            producer_epoch: NO_PRODUCER_EPOCH,
            coordinator_epoch: -1,
            last_timestamp: NO_TIMESTAMP,
            current_txn_first_offset: None,
            batches: [BatchMetadata::default(); NUM_BATCHES_TO_RETAIN],
            len: 0,
        }
    }

    /// The producer id.
    pub fn producer_id(&self) -> i64 {
        self.producer_id
    }

    /// The current producer epoch (-1 if none is known).
    pub fn producer_epoch(&self) -> i16 {
        self.producer_epoch
    }

    /// Epoch of the last transaction coordinator that wrote a marker (-1 if none).
    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch
    }

    /// Timestamp of the last batch or marker; expiry is measured from it.
    pub fn last_timestamp(&self) -> i64 {
        self.last_timestamp
    }

    /// First offset of the producer's open transaction, if any.
    pub fn current_txn_first_offset(&self) -> Option<i64> {
        self.current_txn_first_offset
    }

    /// The remembered batches, oldest first (at most [`NUM_BATCHES_TO_RETAIN`]).
    pub fn batches(&self) -> &[BatchMetadata] {
        &self.batches[..usize::from(self.len)]
    }

    /// True when no batch is remembered.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// First sequence of the oldest remembered batch, or -1.
    pub fn first_seq(&self) -> i32 {
        self.batches()
            .first()
            .map_or(NO_SEQUENCE, BatchMetadata::first_seq)
    }

    /// Last sequence of the newest remembered batch, or -1.
    pub fn last_seq(&self) -> i32 {
        self.last_batch().map_or(NO_SEQUENCE, |b| b.last_seq)
    }

    /// Last offset of the newest remembered batch, or -1.
    pub fn last_data_offset(&self) -> i64 {
        self.last_batch().map_or(-1, |b| b.last_offset)
    }

    /// Offset delta of the newest remembered batch, or 0.
    pub fn last_offset_delta(&self) -> i32 {
        self.last_batch().map_or(0, |b| b.offset_delta)
    }

    /// The newest remembered batch.
    pub fn last_batch(&self) -> Option<&BatchMetadata> {
        self.batches().last()
    }

    /// The remembered batch with exactly this sequence range in the current epoch.
    pub(crate) fn find_duplicate(
        &self,
        epoch: i16,
        first_seq: i32,
        last_seq: i32,
    ) -> Option<BatchMetadata> {
        if epoch != self.producer_epoch {
            return None;
        }
        self.batches()
            .iter()
            .find(|b| b.last_seq == last_seq && b.first_seq() == first_seq)
            .copied()
    }

    /// A new epoch forgets the previous epoch's batches: their sequences restart at 0.
    pub(crate) fn maybe_update_epoch(&mut self, epoch: i16) {
        if self.producer_epoch != epoch {
            self.len = 0;
            self.producer_epoch = epoch;
        }
    }

    pub(crate) fn add_batch(&mut self, epoch: i16, batch: BatchMetadata) {
        self.maybe_update_epoch(epoch);
        let n = usize::from(self.len);
        if n == NUM_BATCHES_TO_RETAIN {
            self.batches.copy_within(1.., 0);
            self.batches[NUM_BATCHES_TO_RETAIN - 1] = batch;
        } else {
            self.batches[n] = batch;
            self.len += 1;
        }
        self.last_timestamp = batch.timestamp;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(last_seq: i32, last_offset: i64) -> BatchMetadata {
        BatchMetadata {
            last_seq,
            last_offset,
            offset_delta: 0,
            timestamp: last_offset,
        }
    }

    #[test]
    fn oldest_batch_is_evicted_when_five_are_retained() {
        let mut e = ProducerStateEntry::empty(1);
        for i in 0..7 {
            e.add_batch(0, meta(i, i64::from(i)));
        }
        let seqs: Vec<i32> = e.batches().iter().map(|b| b.last_seq).collect();
        assert_eq!(seqs, vec![2, 3, 4, 5, 6]);
        assert_eq!(e.first_seq(), 2);
        assert_eq!(e.last_seq(), 6);
    }

    #[test]
    fn epoch_change_clears_the_batch_cache() {
        let mut e = ProducerStateEntry::empty(1);
        e.add_batch(0, meta(0, 0));
        e.add_batch(0, meta(1, 1));
        e.add_batch(1, meta(0, 2));
        assert_eq!(e.batches().len(), 1);
        assert_eq!(e.producer_epoch(), 1);
    }
}
