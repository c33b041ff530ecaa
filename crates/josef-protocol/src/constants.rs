//! Kafka's sentinel values that several crates meet on, defined once here (the leaf every Josef
//! crate may depend on). Other crates re-export them under their old paths where those are public.

/// `producerId` of a batch, record or write without an idempotent producer
/// (`RecordBatch.NO_PRODUCER_ID`).
pub const NO_PRODUCER_ID: i64 = -1;
/// `producerEpoch` when no producer epoch is known (`RecordBatch.NO_PRODUCER_EPOCH`).
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// `baseSequence` of a batch without sequence numbers (`RecordBatch.NO_SEQUENCE`).
pub const NO_SEQUENCE: i32 = -1;
/// A missing timestamp (`RecordBatch.NO_TIMESTAMP`).
pub const NO_TIMESTAMP: i64 = -1;
/// No leader epoch: a batch written before epochs, a request that carries none, an undefined
/// epoch in the leader-epoch cache (`RecordBatch.NO_PARTITION_LEADER_EPOCH`, which Kafka also
/// spells `UNDEFINED_EPOCH`).
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
/// The `replica_id` of a Fetch or ListOffsets from a consumer (`FetchRequest.CONSUMER_REPLICA_ID`).
pub const CONSUMER_REPLICA_ID: i32 = -1;
