//! Typed errors of the sequencer, each mapping to the Kafka error code a client sees.

/// Kafka's numeric error codes for the outcomes this crate produces or documents.
pub mod codes {
    /// `NONE`.
    pub const NONE: i16 = 0;
    /// `OUT_OF_ORDER_SEQUENCE_NUMBER`.
    pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
    /// `DUPLICATE_SEQUENCE_NUMBER` (never returned by the log: duplicates succeed).
    pub const DUPLICATE_SEQUENCE_NUMBER: i16 = 46;
    /// `INVALID_PRODUCER_EPOCH`.
    pub const INVALID_PRODUCER_EPOCH: i16 = 47;
    /// `INVALID_TXN_STATE`.
    pub const INVALID_TXN_STATE: i16 = 48;
    /// `TRANSACTION_COORDINATOR_FENCED`.
    pub const TRANSACTION_COORDINATOR_FENCED: i16 = 52;
    /// `UNKNOWN_PRODUCER_ID` (never returned by the log since KIP-360).
    pub const UNKNOWN_PRODUCER_ID: i16 = 59;
    /// `INVALID_RECORD`.
    pub const INVALID_RECORD: i16 = 87;
    /// `PRODUCER_FENCED` (a coordinator error; the log answers INVALID_PRODUCER_EPOCH since 2.7).
    pub const PRODUCER_FENCED: i16 = 90;
}

/// Why a batch or a marker was refused by the producer-state checks.
///
/// ```
/// use josef_sequencer::SequenceError;
/// let e = SequenceError::OutOfOrderSequence {
///     producer_id: 7, producer_epoch: 0, received_sequence: 5, last_sequence: 2,
/// };
/// assert_eq!(e.kafka_error_code(), 45);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SequenceError {
    /// The batch's first sequence does not follow the producer's last sequence, or a new
    /// epoch does not start at sequence 0.
    #[error(
        "out of order sequence for producer {producer_id} epoch {producer_epoch}: \
         received {received_sequence}, last appended {last_sequence}"
    )]
    OutOfOrderSequence {
        /// Producer id.
        producer_id: i64,
        /// Epoch of the refused batch.
        producer_epoch: i16,
        /// First sequence of the refused batch.
        received_sequence: i32,
        /// Last appended sequence in the batch's epoch (-1 if none / new epoch).
        last_sequence: i32,
    },
    /// The batch or marker carries an epoch older than the stored one (a zombie producer).
    #[error(
        "invalid producer epoch for producer {producer_id}: received {received_epoch}, \
         current {current_epoch}"
    )]
    InvalidProducerEpoch {
        /// Producer id.
        producer_id: i64,
        /// Epoch carried by the refused batch or marker.
        received_epoch: i16,
        /// Epoch stored for the producer.
        current_epoch: i16,
    },
    /// A non-transactional batch from a producer whose transaction is still open.
    #[error(
        "non-transactional write from producer {producer_id} with an open transaction \
         starting at offset {txn_first_offset}"
    )]
    InvalidTxnState {
        /// Producer id.
        producer_id: i64,
        /// First offset of the producer's open transaction.
        txn_first_offset: i64,
    },
    /// A marker from a transaction coordinator whose epoch is older than the stored one.
    #[error(
        "transaction coordinator fenced for producer {producer_id}: marker coordinator epoch \
         {received_coordinator_epoch}, current {current_coordinator_epoch}"
    )]
    TransactionCoordinatorFenced {
        /// Producer id.
        producer_id: i64,
        /// Coordinator epoch carried by the marker.
        received_coordinator_epoch: i32,
        /// Coordinator epoch stored for the producer.
        current_coordinator_epoch: i32,
    },
    /// The batch is malformed for producer-state purposes (a control batch given to the data
    /// path, or a negative base sequence on an idempotent batch).
    #[error("invalid record batch from producer {producer_id}: {reason}")]
    InvalidRecord {
        /// Producer id.
        producer_id: i64,
        /// What is wrong.
        reason: &'static str,
    },
}

impl SequenceError {
    /// The Kafka error code to put in the Produce (or WriteTxnMarkers) response.
    pub fn kafka_error_code(&self) -> i16 {
        match self {
            SequenceError::OutOfOrderSequence { .. } => codes::OUT_OF_ORDER_SEQUENCE_NUMBER,
            SequenceError::InvalidProducerEpoch { .. } => codes::INVALID_PRODUCER_EPOCH,
            SequenceError::InvalidTxnState { .. } => codes::INVALID_TXN_STATE,
            SequenceError::TransactionCoordinatorFenced { .. } => {
                codes::TRANSACTION_COORDINATOR_FENCED
            }
            SequenceError::InvalidRecord { .. } => codes::INVALID_RECORD,
        }
    }
}

/// Why a producer-state snapshot could not be decoded. The caller then drops the snapshot and
/// rebuilds the state by replaying the log (as Kafka does on `CorruptSnapshotException`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// Fewer bytes than the fixed header or than the declared entries need.
    #[error("producer snapshot truncated: need {needed} bytes, have {available}")]
    Truncated {
        /// Bytes required.
        needed: usize,
        /// Bytes present.
        available: usize,
    },
    /// A version other than the supported one (1).
    #[error("producer snapshot has unknown version {0}")]
    UnknownVersion(i16),
    /// The stored CRC-32C does not match the entries.
    #[error("producer snapshot CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        /// CRC in the file.
        stored: u32,
        /// CRC of the bytes read.
        computed: u32,
    },
    /// A negative entry count.
    #[error("producer snapshot has a negative entry count {0}")]
    NegativeCount(i32),
    /// Bytes after the last declared entry.
    #[error("producer snapshot has {0} trailing bytes")]
    TrailingBytes(usize),
    /// The same producer id appears twice.
    #[error("producer snapshot lists producer {0} twice")]
    DuplicateProducer(i64),
}

/// Why a producer id could not be handed out.
#[derive(Debug, thiserror::Error)]
pub enum ProducerIdError {
    /// The next block would pass `i64::MAX`.
    #[error("producer ids exhausted")]
    Exhausted,
    /// The block store failed to load or save; no id of the new block was handed out.
    #[error("producer id block store failed: {0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The store returned a negative next block start.
    #[error("producer id block store returned an invalid next block start {0}")]
    InvalidStoredState(i64),
}
