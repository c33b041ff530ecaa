//! KIP-890 part 1, the server-side defence (Kafka's `UnifiedLog.maybeStartTransactionVerification`
//! and `AddPartitionsToTxnManager`): before a producer's first transactional append to a partition
//! in its current transaction, the partition leader asks the transaction coordinator (a
//! verify-only AddPartitionsToTxn, in-process when the coordinator is this broker) whether the
//! partition is part of the producer's ongoing transaction. An append the coordinator does not
//! know about fails, so a zombie (a fenced producer, or one whose transaction already ended)
//! cannot open a transaction on a partition that nobody will ever end, which would hold the
//! partition's last stable offset back for good. `transaction.partition.verification.enable`.
//!
//! The coordinator's answers map as Kafka maps them: TRANSACTION_ABORTABLE (not in the
//! transaction) → INVALID_TXN_STATE (Produce ≤ v10) or TRANSACTION_ABORTABLE (v11+);
//! PRODUCER_FENCED → INVALID_PRODUCER_EPOCH; CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS,
//! COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR and no answer → NOT_ENOUGH_REPLICAS (old clients
//! retry it). Kafka also keeps a verification guard on the partition so that a marker landing
//! between the answer and the append invalidates it; Josef does not (the window is one request).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use josef_protocol::messages::ProduceRequest;
use josef_protocol::{ErrorCode, RequestBody, ResponseBody};
use josef_records::BatchHeader;
use josef_txn::{
    wire, AddPartitionsToTxnRequest, AddPartitionsToTxnResult, TopicPartition, TransactionVersion,
    TxnError, TxnReply,
};

use crate::state::BrokerState;
use crate::topics::{now_ms, TRANSACTION_STATE_TOPIC};
use crate::txns::Env;

/// Verify-only AddPartitionsToTxn is v4+.
const VERIFY_VERSION: i16 = 4;
/// How long a leader waits for the coordinator's answer.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(10);

/// The coordinator's answer for one partition as the producer sees it at Produce `version`.
pub fn produce_error(error: TxnError, version: i16) -> ErrorCode {
    match error {
        TxnError::TransactionAbortable if version >= 11 => ErrorCode::TransactionAbortable,
        TxnError::TransactionAbortable => ErrorCode::InvalidTxnState,
        TxnError::ProducerFenced | TxnError::InvalidProducerEpoch => {
            ErrorCode::InvalidProducerEpoch
        }
        TxnError::ConcurrentTransactions
        | TxnError::CoordinatorLoadInProgress
        | TxnError::CoordinatorNotAvailable
        | TxnError::NotCoordinator => ErrorCode::NotEnoughReplicas,
        e => ErrorCode::from_i16(e.code()).unwrap_or(ErrorCode::UnknownServerError),
    }
}

/// The partitions of `req` whose transactional batch the coordinator did not confirm, with the
/// error each must answer instead of being appended. Empty when verification is off, the
/// request is not transactional, or every producer already has its transaction open on the
/// partitions it writes.
pub async fn verify_produce(
    state: &BrokerState,
    req: &ProduceRequest,
    version: i16,
) -> BTreeMap<(String, i32), ErrorCode> {
    let mut out = BTreeMap::new();
    if !state.config.transaction_partition_verification_enable {
        return out;
    }
    let Some(tid) = req.transactional_id.as_deref().filter(|t| !t.is_empty()) else {
        return out;
    };
    let mut need: BTreeSet<TopicPartition> = BTreeSet::new();
    let mut producers: BTreeSet<(i64, i16)> = BTreeSet::new();
    for t in &req.topic_data {
        for p in &t.partition_data {
            let Some(h) = p.records.as_ref().and_then(|r| BatchHeader::parse(r).ok()) else {
                continue;
            };
            if !h.is_transactional() {
                continue;
            }
            let Some(partition) = state.topics.partition(&t.name, p.index) else {
                continue;
            };
            let ongoing = {
                let d = partition.data.lock();
                // A follower refuses the append anyway.
                !d.replication.is_leader()
                    || d.producers.producer(h.producer_id).is_some_and(|e| {
                        e.producer_epoch() == h.producer_epoch
                            && e.current_txn_first_offset().is_some()
                    })
            };
            if !ongoing {
                producers.insert((h.producer_id, h.producer_epoch));
                need.insert(TopicPartition::new(t.name.as_str(), p.index));
            }
        }
    }
    let Some(&(producer_id, producer_epoch)) = producers.iter().next() else {
        return out;
    };
    if producers.len() > 1 {
        for tp in need {
            out.insert(
                (tp.topic, tp.partition),
                ErrorCode::InvalidProducerIdMapping,
            );
        }
        return out;
    }
    let check = AddPartitionsToTxnRequest {
        transactional_id: tid.to_string(),
        producer_id,
        producer_epoch,
        partitions: need,
        verify_only: true,
    };
    let result = ask_coordinator(state, &check).await;
    for (tp, error) in result.partitions {
        if let Some(e) = error {
            tracing::debug!(topic = %tp.topic, partition = tp.partition, transactional_id = tid, ?e, "transactional produce not verified");
            out.insert((tp.topic, tp.partition), produce_error(e, version));
        }
    }
    out
}

/// The coordinator's verify-only answer for `req`: in-process when this broker coordinates the
/// id (always on a single node), else from the leader of its `__transaction_state` partition.
async fn ask_coordinator(
    state: &BrokerState,
    req: &AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResult {
    let unavailable =
        || AddPartitionsToTxnResult::uniform(req, Some(TxnError::CoordinatorNotAvailable));
    if let Some(node) = &state.cluster {
        let p = josef_txn::partition_for(
            &req.transactional_id,
            state.config.transaction_state_log_num_partitions,
        );
        let image = node.log.image();
        let leader = image
            .topic_by_name(TRANSACTION_STATE_TOPIC)
            .and_then(|t| t.partitions.get(&p))
            .map_or(-1, |r| r.leader);
        if leader < 0 {
            return unavailable();
        }
        if leader != node.node_id {
            let body =
                RequestBody::AddPartitionsToTxn(wire::add_partitions_to_txn_verify_request(req));
            return match state
                .txns
                .verification_connections()
                .call(node, leader, body, VERIFY_VERSION, VERIFY_TIMEOUT)
                .await
            {
                Some(ResponseBody::AddPartitionsToTxn(r)) => {
                    wire::add_partitions_to_txn_result_for(req, &r)
                }
                _ => unavailable(),
            };
        }
    }
    let reply = state
        .txns
        .call(
            &Env::of(state),
            state.cluster.as_deref(),
            &req.transactional_id,
            |c, _, ctx| c.add_partitions_to_txn(req, now_ms(), TransactionVersion::V0, ctx),
        )
        .await;
    match reply {
        Some(TxnReply::AddPartitionsToTxn(r)) => r,
        _ => unavailable(),
    }
}
