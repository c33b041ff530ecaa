//! The records of `__transaction_state`: one per transactional id and state change.

use std::collections::BTreeSet;

use crate::{TopicPartition, TransactionVersion, TxnState};

/// A `__transaction_state` record: the full metadata of one transactional id after a transition
/// (Kafka's `TxnTransitMetadata`), or a tombstone when the id expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnLogRecord {
    /// The key: the transactional id.
    pub transactional_id: String,
    /// The value; `None` is a tombstone (the id is removed).
    pub value: Option<TxnLogValue>,
}

/// The metadata a transactional id has after a transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnLogValue {
    /// Producer id in use.
    pub producer_id: i64,
    /// Producer id before this transition (Kafka's `prevProducerId`: the id the metadata held
    /// when the transition was prepared).
    pub prev_producer_id: i64,
    /// Producer id the client moves to once this transaction completes (Transactions V2 epoch
    /// overflow), or −1.
    pub next_producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// The previous epoch, used to recognise an InitProducerId retry. Kafka does not persist it
    /// (it reads back as −1 after a reload) and neither does the Kafka-format serde; in memory it
    /// is carried like Kafka's `TxnTransitMetadata` does.
    pub last_producer_epoch: i16,
    /// Transaction timeout.
    pub txn_timeout_ms: i32,
    /// The state entered.
    pub state: TxnState,
    /// Partitions of the open transaction.
    pub partitions: BTreeSet<TopicPartition>,
    /// When the first partition was added (−1 when no transaction).
    pub txn_start_timestamp: i64,
    /// Time of this transition (drives id expiration).
    pub txn_last_update_timestamp: i64,
    /// Transaction protocol version of the client that caused the transition.
    pub client_transaction_version: TransactionVersion,
}
