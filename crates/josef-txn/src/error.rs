//! The Kafka error codes the transaction coordinator answers with.

use thiserror::Error;

/// An error a transaction-coordinator request can end with, named and numbered as Kafka's
/// `Errors` enum. Success is represented as `None` where a response carries an `Option<TxnError>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Error)]
#[non_exhaustive]
pub enum TxnError {
    /// `UNKNOWN_SERVER_ERROR` (−1).
    #[error("UNKNOWN_SERVER_ERROR")]
    UnknownServerError,
    /// `UNKNOWN_TOPIC_OR_PARTITION` (3).
    #[error("UNKNOWN_TOPIC_OR_PARTITION")]
    UnknownTopicOrPartition,
    /// `COORDINATOR_LOAD_IN_PROGRESS` (14): the partition is still being loaded.
    #[error("COORDINATOR_LOAD_IN_PROGRESS")]
    CoordinatorLoadInProgress,
    /// `COORDINATOR_NOT_AVAILABLE` (15).
    #[error("COORDINATOR_NOT_AVAILABLE")]
    CoordinatorNotAvailable,
    /// `NOT_COORDINATOR` (16): this node does not own the id's partition.
    #[error("NOT_COORDINATOR")]
    NotCoordinator,
    /// `INVALID_REQUEST` (42).
    #[error("INVALID_REQUEST")]
    InvalidRequest,
    /// `INVALID_PRODUCER_EPOCH` (47): what pre-KIP-588 clients get instead of `PRODUCER_FENCED`.
    #[error("INVALID_PRODUCER_EPOCH")]
    InvalidProducerEpoch,
    /// `INVALID_TXN_STATE` (48).
    #[error("INVALID_TXN_STATE")]
    InvalidTxnState,
    /// `INVALID_PRODUCER_ID_MAPPING` (49).
    #[error("INVALID_PRODUCER_ID_MAPPING")]
    InvalidProducerIdMapping,
    /// `INVALID_TRANSACTION_TIMEOUT` (50).
    #[error("INVALID_TRANSACTION_TIMEOUT")]
    InvalidTransactionTimeout,
    /// `CONCURRENT_TRANSACTIONS` (51): retriable, a transition is in progress.
    #[error("CONCURRENT_TRANSACTIONS")]
    ConcurrentTransactions,
    /// `TRANSACTION_COORDINATOR_FENCED` (52).
    #[error("TRANSACTION_COORDINATOR_FENCED")]
    TransactionCoordinatorFenced,
    /// `OPERATION_NOT_ATTEMPTED` (55).
    #[error("OPERATION_NOT_ATTEMPTED")]
    OperationNotAttempted,
    /// `PRODUCER_FENCED` (90).
    #[error("PRODUCER_FENCED")]
    ProducerFenced,
    /// `TRANSACTIONAL_ID_NOT_FOUND` (105).
    #[error("TRANSACTIONAL_ID_NOT_FOUND")]
    TransactionalIdNotFound,
    /// `TRANSACTION_ABORTABLE` (120).
    #[error("TRANSACTION_ABORTABLE")]
    TransactionAbortable,
}

impl TxnError {
    /// Kafka's numeric error code.
    ///
    /// ```
    /// use josef_txn::TxnError;
    /// assert_eq!(TxnError::ConcurrentTransactions.code(), 51);
    /// assert_eq!(TxnError::from_code(90), Some(TxnError::ProducerFenced));
    /// ```
    pub fn code(self) -> i16 {
        match self {
            TxnError::UnknownServerError => -1,
            TxnError::UnknownTopicOrPartition => 3,
            TxnError::CoordinatorLoadInProgress => 14,
            TxnError::CoordinatorNotAvailable => 15,
            TxnError::NotCoordinator => 16,
            TxnError::InvalidRequest => 42,
            TxnError::InvalidProducerEpoch => 47,
            TxnError::InvalidTxnState => 48,
            TxnError::InvalidProducerIdMapping => 49,
            TxnError::InvalidTransactionTimeout => 50,
            TxnError::ConcurrentTransactions => 51,
            TxnError::TransactionCoordinatorFenced => 52,
            TxnError::OperationNotAttempted => 55,
            TxnError::ProducerFenced => 90,
            TxnError::TransactionalIdNotFound => 105,
            TxnError::TransactionAbortable => 120,
        }
    }

    /// The error with Kafka code `code`, if it is one of these.
    pub fn from_code(code: i16) -> Option<TxnError> {
        ALL.iter().copied().find(|e| e.code() == code)
    }
}

const ALL: [TxnError; 16] = [
    TxnError::UnknownServerError,
    TxnError::UnknownTopicOrPartition,
    TxnError::CoordinatorLoadInProgress,
    TxnError::CoordinatorNotAvailable,
    TxnError::NotCoordinator,
    TxnError::InvalidRequest,
    TxnError::InvalidProducerEpoch,
    TxnError::InvalidTxnState,
    TxnError::InvalidProducerIdMapping,
    TxnError::InvalidTransactionTimeout,
    TxnError::ConcurrentTransactions,
    TxnError::TransactionCoordinatorFenced,
    TxnError::OperationNotAttempted,
    TxnError::ProducerFenced,
    TxnError::TransactionalIdNotFound,
    TxnError::TransactionAbortable,
];

/// Numeric code of an optional error (`None` = success = 0).
pub fn error_code(error: Option<TxnError>) -> i16 {
    error.map_or(0, TxnError::code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for e in ALL {
            assert_eq!(TxnError::from_code(e.code()), Some(e));
        }
        assert_eq!(TxnError::from_code(0), None);
        assert_eq!(error_code(None), 0);
    }
}
