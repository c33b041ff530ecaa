//! Coordinator configuration, with Kafka's defaults.

use crate::partition::{DEFAULT_OFFSETS_TOPIC_PARTITIONS, DEFAULT_TRANSACTION_STATE_PARTITIONS};
use crate::TransactionVersion;

/// Transaction coordinator settings (Kafka broker configs of the same names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnConfig {
    /// `transaction.max.timeout.ms` (15 min): larger client timeouts are refused.
    pub transaction_max_timeout_ms: i32,
    /// `transactional.id.expiration.ms` (7 days): idle Empty/Complete* ids are removed.
    pub transactional_id_expiration_ms: i64,
    /// `transaction.state.log.num.partitions` (50).
    pub transaction_state_partitions: i32,
    /// `offsets.topic.num.partitions` (50): where AddOffsetsToTxn places a group.
    pub offsets_topic_partitions: i32,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms` (10 s): how often the broker
    /// should call `on_tick`.
    pub abort_timed_out_transactions_interval_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms` (1 h): how often expired ids
    /// are removed by `on_tick`.
    pub remove_expired_transactional_ids_interval_ms: i64,
    /// The finalized `transaction.version` feature of the cluster: used for coordinator-initiated
    /// aborts (timeouts, fencing) and for the record value schema version.
    pub transaction_version: TransactionVersion,
}

impl Default for TxnConfig {
    fn default() -> Self {
        Self {
            transaction_max_timeout_ms: 15 * 60 * 1000,
            transactional_id_expiration_ms: 7 * 24 * 60 * 60 * 1000,
            transaction_state_partitions: DEFAULT_TRANSACTION_STATE_PARTITIONS,
            offsets_topic_partitions: DEFAULT_OFFSETS_TOPIC_PARTITIONS,
            abort_timed_out_transactions_interval_ms: 10_000,
            remove_expired_transactional_ids_interval_ms: 60 * 60 * 1000,
            transaction_version: TransactionVersion::V0,
        }
    }
}

impl TxnConfig {
    /// Kafka's `validateTransactionTimeoutMs`: `0 < timeout <= transaction.max.timeout.ms`.
    pub fn is_valid_timeout(&self, txn_timeout_ms: i32) -> bool {
        txn_timeout_ms > 0 && txn_timeout_ms <= self.transaction_max_timeout_ms
    }
}
