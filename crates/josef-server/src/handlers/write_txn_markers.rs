//! WriteTxnMarkers (api 27), served by partition leaders (Kafka's
//! `KafkaApis.handleWriteTxnMarkersRequest`). The per-partition rules are josef-partition's
//! `Partition::append_txn_marker`, reached through the state's
//! [`PartitionStore`](crate::kit::PartitionStore): the COMMIT/ABORT control batch carrying the coordinator epoch,
//! appended as leader with acks = −1 (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS), fenced by the
//! producer state (TRANSACTION_COORDINATOR_FENCED for a deposed coordinator,
//! INVALID_PRODUCER_EPOCH for an old producer epoch). This handler adds what needs the broker:
//! UNKNOWN_TOPIC_OR_PARTITION for partitions it does not have, the wait for the ISR (the produce
//! purgatory), and for a `__consumer_offsets` marker the end of the producer's pending
//! TxnOffsetCommits in the group coordinator (the kit's
//! [`GroupCoordinator::on_transaction_completed`](crate::kit::GroupCoordinator::on_transaction_completed)).
//!
//! The coordinator's marker sender (`cluster::txn_marker_sender`) calls [`write_markers`]
//! directly for the partitions this broker leads.

use josef_protocol::messages::{WriteTxnMarkersRequest, WriteTxnMarkersResponse};
use josef_protocol::ErrorCode;
use josef_sequencer::{ControlType, EndTxnMarker};
use josef_txn::wire::{self, MarkerResult};
use josef_txn::{TransactionResult, TxnMarkerRequest};

use crate::delayed_fetch::{DelayedOp, DelayedProduce, ProducingPartition};
use crate::kit::partition_store::TopicPartition;
use crate::state::BrokerState;
use crate::topics::{now_ms, GROUP_METADATA_TOPIC};

/// How long a marker waits for the ISR (Kafka uses `request.timeout.ms`, default 30 s).
pub const MARKER_WRITE_TIMEOUT_MS: u64 = 30_000;

/// The marker of `m` as each of its partitions checks and appends it.
pub fn end_txn_marker(m: &TxnMarkerRequest) -> EndTxnMarker {
    let control = match m.result {
        TransactionResult::Commit => ControlType::Commit,
        TransactionResult::Abort => ControlType::Abort,
    };
    EndTxnMarker::new(
        m.producer_id,
        m.producer_epoch,
        control,
        m.coordinator_epoch,
    )
}

/// Writes every marker of `markers` on the partitions led here and waits (at most
/// [`MARKER_WRITE_TIMEOUT_MS`]) for the ISR to hold them; one answer per (producer id, partition).
pub async fn write_markers(state: &BrokerState, markers: &[TxnMarkerRequest]) -> Vec<MarkerResult> {
    let now = now_ms();
    let store = state.partition_store.as_ref();
    let mut results: Vec<MarkerResult> = Vec::new();
    let mut waiting: Vec<ProducingPartition> = Vec::new();
    // (index into results, producer id, commit, __consumer_offsets)
    let mut waiting_at: Vec<(usize, i64, bool, bool)> = Vec::new();
    for m in markers {
        for tp in &m.partitions {
            let at = TopicPartition {
                topic: &tp.topic,
                partition: tp.partition,
            };
            // The partition's own rules (the store's): leader, ISR, coordinator and producer
            // epoch fencing.
            match store.append_txn_marker(at, &end_txn_marker(m), now) {
                Ok(appended) => {
                    // A store without josef-partition's partition answers once the append
                    // returns (as for an acks=-1 produce).
                    if let Some(partition) = store.delayed_operation_target(at) {
                        waiting_at.push((
                            results.len(),
                            m.producer_id,
                            m.result == TransactionResult::Commit,
                            tp.topic == GROUP_METADATA_TOPIC,
                        ));
                        waiting.push(ProducingPartition {
                            leader_epoch: appended.leader_epoch,
                            partition,
                            required_offset: appended.offset + 1,
                            min_insync_replicas: appended.min_insync_replicas,
                        });
                    } else if tp.topic == GROUP_METADATA_TOPIC {
                        state.group_coordinator.on_transaction_completed(
                            state,
                            m.producer_id,
                            m.result == TransactionResult::Commit,
                        );
                    }
                    results.push((m.producer_id, tp.clone(), ErrorCode::None));
                }
                Err(e) => {
                    tracing::debug!(topic = %tp.topic, partition = tp.partition, code = ?e.code, msg = ?e.message, "marker refused");
                    results.push((m.producer_id, tp.clone(), e.code));
                }
            }
        }
    }
    if !waiting.is_empty() {
        let (op, done) = DelayedProduce::new(waiting, MARKER_WRITE_TIMEOUT_MS);
        let op = DelayedOp::Produce(op);
        let keys = op.keys();
        state.fetch_purgatory.try_complete_else_watch(op, keys);
        let statuses = done.await.unwrap_or_default();
        for (i, &(at, pid, commit, offsets)) in waiting_at.iter().enumerate() {
            let code = statuses
                .get(i)
                .copied()
                .unwrap_or(ErrorCode::RequestTimedOut);
            results[at].2 = code;
            if code == ErrorCode::None && offsets {
                state
                    .group_coordinator
                    .on_transaction_completed(state, pid, commit);
            }
        }
    }
    results
}

/// WriteTxnMarkers.
pub async fn handle(state: &BrokerState, r: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse {
    let markers = wire::write_txn_markers_from_request(&r);
    let results = write_markers(state, &markers).await;
    wire::write_txn_markers_response(&results)
}
