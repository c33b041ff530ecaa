//! The partitions this node hosts are josef-partition's [`Partition`]: its log, its producer
//! state and its replication state under one lock, with an event listener the broker uses to
//! complete the delayed fetches parked on it (`delayed_fetch.rs`). On a single node each one is a
//! single replica (ISR = [self], leader epoch 0): the HW follows the LEO inside the append.

pub use josef_partition::{
    control_type_of, log_error_code, ActiveProducer, AppendListener, ClientBatch,
    DeleteRecordsOutcome, EpochEndOffset, FetchIsolation, FollowerFetch, Partition, PartitionError,
    PartitionEvent, ProduceResult, ReadParams, ReadResult,
};

/// The partition's `min.insync.replicas` (its topic's override, else the broker's), as its log
/// config holds it: parsed once by `topic_config::log_config` when the partition opened and
/// again on every config change, not per request.
pub(crate) fn min_insync_replicas(partition: &Partition) -> i32 {
    partition.min_insync_replicas()
}
