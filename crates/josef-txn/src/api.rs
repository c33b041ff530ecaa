//! The coordinator's own request and response types (the wire adapter maps Kafka's generated
//! messages onto them), and the marker effect it hands to the broker.

use std::collections::BTreeSet;

pub use josef_coordinator::TransactionResult;

use crate::{TopicPartition, TransactionVersion, TxnError, TxnState};

/// InitProducerId.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitProducerIdRequest {
    /// `None` for an idempotent (non-transactional) producer.
    pub transactional_id: Option<String>,
    /// Requested transaction timeout.
    pub transaction_timeout_ms: i32,
    /// Producer id the client has (KIP-360, v3+), or −1.
    pub producer_id: i64,
    /// Producer epoch the client has (KIP-360, v3+), or −1.
    pub producer_epoch: i16,
}

/// InitProducerId answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitProducerIdResponse {
    /// Error, `None` on success.
    pub error: Option<TxnError>,
    /// Assigned producer id (−1 on error).
    pub producer_id: i64,
    /// Assigned epoch (−1 on error).
    pub producer_epoch: i16,
}

impl InitProducerIdResponse {
    /// An error answer (producer id and epoch −1).
    pub fn error(error: TxnError) -> Self {
        Self {
            error: Some(error),
            producer_id: -1,
            producer_epoch: -1,
        }
    }
}

/// AddPartitionsToTxn for one transaction (the v0–3 request, or one entry of a v4+ batch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddPartitionsToTxnRequest {
    /// Transactional id.
    pub transactional_id: String,
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// Partitions to add (or verify).
    pub partitions: BTreeSet<TopicPartition>,
    /// v4+ broker verification (KIP-890 part 1): only check membership, write nothing.
    pub verify_only: bool,
}

/// Per-partition outcome of AddPartitionsToTxn for one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddPartitionsToTxnResult {
    /// Transactional id.
    pub transactional_id: String,
    /// Error per partition (`None` = added / present).
    pub partitions: Vec<(TopicPartition, Option<TxnError>)>,
}

impl AddPartitionsToTxnResult {
    /// The same outcome for every partition of `request`.
    pub fn uniform(request: &AddPartitionsToTxnRequest, error: Option<TxnError>) -> Self {
        Self {
            transactional_id: request.transactional_id.clone(),
            partitions: request
                .partitions
                .iter()
                .map(|p| (p.clone(), error))
                .collect(),
        }
    }

    /// The first error, if any partition failed.
    pub fn first_error(&self) -> Option<TxnError> {
        self.partitions.iter().find_map(|(_, e)| *e)
    }
}

/// AddOffsetsToTxn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddOffsetsToTxnRequest {
    /// Transactional id.
    pub transactional_id: String,
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// Consumer group whose offsets the transaction will commit.
    pub group_id: String,
}

/// EndTxn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndTxnRequest {
    /// Transactional id.
    pub transactional_id: String,
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// Commit (true) or abort (false).
    pub committed: bool,
    /// Transaction version of the client (V2 from EndTxn v5 on).
    pub client_transaction_version: TransactionVersion,
}

/// EndTxn answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTxnResponse {
    /// Error, `None` on success.
    pub error: Option<TxnError>,
    /// V2: the producer id to use next (−1 otherwise).
    pub producer_id: i64,
    /// V2: the producer epoch to use next (−1 otherwise).
    pub producer_epoch: i16,
}

impl EndTxnResponse {
    /// An error answer.
    pub fn error(error: TxnError) -> Self {
        Self {
            error: Some(error),
            producer_id: -1,
            producer_epoch: -1,
        }
    }
}

/// Effect: write transaction markers for one transaction to its partitions (Kafka's
/// WriteTxnMarkers, sent by the coordinator to every partition leader).
///
/// The broker writes a control record with `result` for `producer_id`/`producer_epoch` and
/// `coordinator_epoch` on every partition in `partitions`. A partition of `__consumer_offsets` in
/// that set means the transaction committed offsets: the broker must then also tell the group
/// coordinator owning that partition to materialise (commit) or drop (abort) the pending
/// TxnOffsetCommits of `producer_id` (josef-coordinator's `CoordinatorDriver::complete_transaction`).
/// Once every partition acknowledged, the broker calls `markers_completed` with this request.
/// An empty `partitions` set (a V2 abort with nothing added) completes at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMarkerRequest {
    /// Transaction whose markers these are.
    pub transactional_id: String,
    /// Producer id on the markers.
    pub producer_id: i64,
    /// Producer epoch on the markers.
    pub producer_epoch: i16,
    /// Epoch of the coordinator partition that decided (fences stale coordinators).
    pub coordinator_epoch: i32,
    /// Commit or abort.
    pub result: TransactionResult,
    /// Partitions to write a marker to.
    pub partitions: BTreeSet<TopicPartition>,
    /// Transaction version of the transaction.
    pub transaction_version: TransactionVersion,
}

/// A handler's answer plus the marker writes the broker must start once the answer is released.
///
/// Markers ride with the response because they may only be sent after the Prepare record is
/// durable: the driver holds both until the high watermark passes the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply<R> {
    /// The response to send.
    pub response: R,
    /// Marker writes to start.
    pub markers: Vec<TxnMarkerRequest>,
}

impl<R> Reply<R> {
    /// A reply with no markers.
    pub fn new(response: R) -> Self {
        Self {
            response,
            markers: Vec::new(),
        }
    }
}

/// What a time tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickOutcome {
    /// Ids whose transaction timed out and is being aborted.
    pub aborted: Vec<String>,
    /// Ids expired and removed.
    pub expired: Vec<String>,
}

/// DescribeTransactions result for one id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionDescription {
    /// Error (`TRANSACTIONAL_ID_NOT_FOUND`, `INVALID_REQUEST`, ...), `None` on success.
    pub error: Option<TxnError>,
    /// Transactional id.
    pub transactional_id: String,
    /// State.
    pub state: Option<TxnState>,
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i16,
    /// Timeout.
    pub transaction_timeout_ms: i32,
    /// Start time.
    pub transaction_start_time_ms: i64,
    /// Partitions.
    pub partitions: BTreeSet<TopicPartition>,
}

/// ListTransactions entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionListing {
    /// Transactional id.
    pub transactional_id: String,
    /// Producer id.
    pub producer_id: i64,
    /// State.
    pub state: TxnState,
}
