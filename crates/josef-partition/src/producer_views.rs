//! The producer state of a partition as DescribeProducers and KIP-890's transaction
//! verification read it.

use crate::partition::Partition;

/// One producer the partition keeps state for (a DescribeProducers entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveProducer {
    /// The producer id.
    pub producer_id: i64,
    /// Its current epoch.
    pub producer_epoch: i16,
    /// The sequence of its last appended record (−1 if none).
    pub last_sequence: i32,
    /// The timestamp of its last append.
    pub last_timestamp: i64,
    /// The epoch of the coordinator that wrote its last marker.
    pub coordinator_epoch: i32,
    /// The first offset of its open transaction here, if any.
    pub current_txn_start_offset: Option<i64>,
}

/// What KIP-890 part 1's verification needs to know of one producer on one partition before a
/// transactional append: whether the append would go here and whether the producer's
/// transaction is already open on this partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerTxnState {
    /// This replica leads the partition.
    pub is_leader: bool,
    /// The producer's epoch here, if the partition knows the producer.
    pub producer_epoch: Option<i16>,
    /// The producer has a transaction open on this partition.
    pub has_ongoing_txn: bool,
}

impl Partition {
    /// Every producer this partition keeps state for.
    pub fn active_producers(&self) -> Vec<ActiveProducer> {
        self.data
            .lock()
            .producers
            .producers()
            .map(|e| ActiveProducer {
                producer_id: e.producer_id(),
                producer_epoch: e.producer_epoch(),
                last_sequence: e.last_seq(),
                last_timestamp: e.last_timestamp(),
                coordinator_epoch: e.coordinator_epoch(),
                current_txn_start_offset: e.current_txn_first_offset(),
            })
            .collect()
    }

    /// The verification state of `producer_id` on this partition, sampled under one lock.
    pub fn producer_txn_state(&self, producer_id: i64) -> ProducerTxnState {
        let d = self.data.lock();
        let entry = d.producers.producer(producer_id);
        ProducerTxnState {
            is_leader: d.replication.is_leader(),
            producer_epoch: entry.map(|e| e.producer_epoch()),
            has_ongoing_txn: entry.is_some_and(|e| e.current_txn_first_offset().is_some()),
        }
    }
}
