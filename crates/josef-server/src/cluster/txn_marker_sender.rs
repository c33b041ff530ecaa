//! The transaction coordinator's marker sender on a cluster node (Kafka's
//! `TransactionMarkerChannelManager` and its inter-broker send thread): marker effects the
//! coordinator releases are queued in josef-txn's [`TxnMarkerChannel`], which groups their
//! partitions by the leader the metadata image names into one WriteTxnMarkers per broker. Each
//! request goes over the inter-broker listener (one connection per broker, as the replica
//! fetcher has), or, for partitions this broker leads, straight to the WriteTxnMarkers handler's
//! code. Answers and lost connections go back to the channel, which retries after a new leader
//! lookup (every [`RETRY_BACKOFF`]) and says when a transaction's markers are all written: only
//! then does the coordinator write CompleteCommit / CompleteAbort.

use std::sync::{Arc, Weak};
use std::time::Duration;

use josef_metadata::MetadataImage;
use josef_protocol::{RequestBody, ResponseBody};
use josef_txn::{
    wire, LeaderLookup, MarkerBatch, MarkerOutcome, TopicPartition, TxnMarkerChannel,
    TxnMarkerRequest,
};
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::broker_connections::BrokerConnections;
use super::ClusterNode;
use crate::handlers::write_txn_markers::{write_markers, MARKER_WRITE_TIMEOUT_MS};
use crate::state::BrokerState;
use crate::txns::Env;

/// WriteTxnMarkers v1 (flexible).
const WRITE_TXN_MARKERS_VERSION: i16 = 1;
/// How often partitions waiting for a leader, or answered with a retriable error, are looked up
/// and sent again.
pub const RETRY_BACKOFF: Duration = Duration::from_millis(100);

/// Where `tp`'s marker goes by `image`.
fn leader_in(image: &MetadataImage, tp: &TopicPartition) -> LeaderLookup {
    let Some(p) = image
        .topic_by_name(&tp.topic)
        .and_then(|t| t.partitions.get(&tp.partition))
    else {
        return LeaderLookup::Unknown;
    };
    if p.leader < 0 {
        LeaderLookup::NoLeader
    } else {
        LeaderLookup::Leader(p.leader)
    }
}

/// The marker sender of a broker.
pub struct TxnMarkerSender {
    channel: Mutex<TxnMarkerChannel>,
    wake: Notify,
    state: Weak<BrokerState>,
    node: Weak<ClusterNode>,
    conns: BrokerConnections,
}

impl TxnMarkerSender {
    /// Starts the sender of `state` on `node`.
    pub fn spawn(state: &Arc<BrokerState>, node: &Arc<ClusterNode>) -> Arc<Self> {
        let s = Arc::new(TxnMarkerSender {
            channel: Mutex::new(TxnMarkerChannel::new()),
            wake: Notify::new(),
            state: Arc::downgrade(state),
            node: Arc::downgrade(node),
            conns: BrokerConnections::new(format!("josef-txn-marker-sender-{}", node.node_id)),
        });
        let (run_s, shutdown) = (s.clone(), node.shutdown.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = shutdown.cancelled() => {}
                _ = run(run_s) => {}
            }
        });
        s
    }

    /// Queues the markers of a transaction decided by `__transaction_state` partition
    /// `txn_partition`.
    pub fn enqueue(&self, txn_partition: i32, marker: TxnMarkerRequest) {
        self.channel.lock().add(txn_partition, marker);
        self.wake.notify_one();
    }

    /// Forgets the markers of `txn_partition` (this broker no longer coordinates it).
    pub fn remove_txn_partition(&self, txn_partition: i32) {
        let n = self.channel.lock().remove_txn_partition(txn_partition);
        if n > 0 {
            tracing::info!(
                partition = txn_partition,
                transactions = n,
                "dropped markers of a resigned transaction coordinator partition"
            );
        }
    }
}

async fn run(s: Arc<TxnMarkerSender>) {
    loop {
        let _ = tokio::time::timeout(RETRY_BACKOFF, s.wake.notified()).await;
        let (Some(state), Some(node)) = (s.state.upgrade(), s.node.upgrade()) else {
            return;
        };
        finish(&state, &s);
        let image = node.log.image();
        let batches = s.channel.lock().drain(|tp| leader_in(&image, tp));
        for b in batches {
            let (s, state, node) = (s.clone(), state.clone(), node.clone());
            tokio::spawn(async move {
                let request_id = b.request_id;
                match send(&s, &state, &node, b).await {
                    Some(results) => s.channel.lock().on_response(request_id, &results),
                    None => s.channel.lock().on_send_failed(request_id),
                }
                finish(&state, &s);
            });
        }
    }
}

/// Hands the channel's outcomes to the coordinator.
fn finish(state: &BrokerState, s: &TxnMarkerSender) {
    let outcomes = s.channel.lock().take_outcomes();
    for o in outcomes {
        match o {
            MarkerOutcome::Completed(m) => state.txns.markers_written(&Env::of(state), m),
            MarkerOutcome::Abandoned { marker, error } => {
                tracing::info!(transactional_id = %marker.transactional_id, ?error, "transaction markers fenced; not completing it here");
            }
        }
    }
}

/// Sends one batch: in-process to this broker, else over the inter-broker listener. `None` when
/// no answer came.
async fn send(
    s: &TxnMarkerSender,
    state: &BrokerState,
    node: &ClusterNode,
    b: MarkerBatch,
) -> Option<Vec<wire::MarkerResult>> {
    if b.broker == node.node_id {
        return Some(write_markers(state, &b.markers).await);
    }
    let req = RequestBody::WriteTxnMarkers(wire::write_txn_markers_request(&b.markers));
    let timeout = Duration::from_millis(MARKER_WRITE_TIMEOUT_MS) + Duration::from_secs(5);
    match s
        .conns
        .call(node, b.broker, req, WRITE_TXN_MARKERS_VERSION, timeout)
        .await
    {
        Some(ResponseBody::WriteTxnMarkers(r)) => Some(wire::write_txn_markers_results(&r)),
        _ => None,
    }
}
