//! Transaction APIs: wire messages to josef-txn's types and back (InitProducerId with a
//! transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions,
//! ListTransactions) through josef-txn's `wire` adapter; Describe/ListTransactions are mapped here.

use josef_protocol::messages::*;
use josef_protocol::StrBytes;
use josef_txn::{self as t, error_code, wire, TransactionVersion, TxnError, TxnReply, TxnState};

use crate::state::BrokerState;
use crate::topics::now_ms;
use crate::txns::Env;

fn env(state: &BrokerState) -> Env<'_> {
    Env::of(state)
}

fn s(x: &str) -> StrBytes {
    StrBytes::from(x)
}

/// InitProducerId with a transactional id.
pub async fn init_producer_id(
    state: &BrokerState,
    version: i16,
    r: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let req = wire::init_producer_id_request(&r);
    let id = req.transactional_id.clone().unwrap_or_default();
    let reply = state
        .txns
        .call(
            &env(state),
            state.cluster.as_deref(),
            &id,
            |c, pids, ctx| c.init_producer_id(&req, now_ms(), pids, ctx),
        )
        .await;
    let resp = match reply {
        Some(TxnReply::InitProducerId(x)) => x,
        _ => t::InitProducerIdResponse::error(TxnError::UnknownServerError),
    };
    wire::init_producer_id_response(&resp, version)
}

/// Whether `tp` exists in the cluster: in the metadata image on a cluster node (the coordinator
/// need not host a replica of it, e.g. of the `__consumer_offsets` partition a TxnOffsetCommit v5
/// adds), else among this node's topics.
fn partition_exists(state: &BrokerState, tp: &t::TopicPartition) -> bool {
    match &state.cluster {
        Some(node) => node
            .log
            .image()
            .topic_by_name(&tp.topic)
            .is_some_and(|t| t.partitions.contains_key(&tp.partition)),
        // Not checked against a leader epoch (−1) nor for leadership: Ok means hosted.
        None => state
            .partition_store
            .check_leader_epoch(
                crate::kit::partition_store::TopicPartition {
                    topic: &tp.topic,
                    partition: tp.partition,
                },
                -1,
                false,
            )
            .is_ok(),
    }
}

/// AddPartitionsToTxn (v0–3 one transaction; v4+ several, possibly verify-only).
pub async fn add_partitions(
    state: &BrokerState,
    version: i16,
    r: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let tv = wire::add_partitions_client_version(version);
    let mut results = Vec::new();
    for req in wire::add_partitions_to_txn_requests(&r, version) {
        let exists = |tp: &t::TopicPartition| partition_exists(state, tp);
        if let Some(failed) = wire::check_partitions_exist(&req, exists) {
            results.push(failed);
            continue;
        }
        let id = req.transactional_id.clone();
        let reply = state
            .txns
            .call(&env(state), state.cluster.as_deref(), &id, |c, _, ctx| {
                c.add_partitions_to_txn(&req, now_ms(), tv, ctx)
            })
            .await;
        results.push(match reply {
            Some(TxnReply::AddPartitionsToTxn(x)) => x,
            _ => t::AddPartitionsToTxnResult::uniform(&req, Some(TxnError::UnknownServerError)),
        });
    }
    wire::add_partitions_to_txn_response(&results, version)
}

/// AddOffsetsToTxn.
pub async fn add_offsets(
    state: &BrokerState,
    version: i16,
    r: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    // The group's __consumer_offsets partition must exist for its marker (on a cluster node the
    // controller creates it).
    match &state.cluster {
        None => {
            let _ = state
                .topics
                .ensure_internal(crate::topics::GROUP_METADATA_TOPIC);
        }
        Some(node)
            if state
                .topics
                .get(crate::topics::GROUP_METADATA_TOPIC)
                .is_none() =>
        {
            let topic = crate::topics::GROUP_METADATA_TOPIC;
            if let Err(code) = super::cluster::create_topic_via_controller(
                &state.config,
                &state.topics,
                node,
                topic,
            )
            .await
            {
                tracing::warn!(%topic, ?code, "cannot create internal topic");
            }
        }
        Some(_) => {}
    }
    let req = wire::add_offsets_to_txn_request(&r);
    let id = req.transactional_id.clone();
    let reply = state
        .txns
        .call(&env(state), state.cluster.as_deref(), &id, |c, _, ctx| {
            c.add_offsets_to_txn(&req, now_ms(), TransactionVersion::V0, ctx)
        })
        .await;
    let error = match reply {
        Some(TxnReply::AddOffsetsToTxn(e)) => e,
        _ => Some(TxnError::UnknownServerError),
    };
    wire::add_offsets_to_txn_response(error, version)
}

/// How long an accepted EndTxn waits for its markers before it is answered CONCURRENT_TRANSACTIONS
/// (see `TxnService::wait_markers_written`); well under clients' request timeouts.
const END_TXN_MARKER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// EndTxn (v0–4: transaction version 0/1).
pub async fn end_txn(state: &BrokerState, version: i16, r: EndTxnRequest) -> EndTxnResponse {
    let req = wire::end_txn_request(&r, version);
    let id = req.transactional_id.clone();
    let resp = state
        .txns
        .end_txn(
            &env(state),
            state.cluster.as_deref(),
            &req,
            END_TXN_MARKER_WAIT,
        )
        .await;
    if resp.error == Some(TxnError::InvalidTxnState) {
        // Kafka logs the refused transition too: the state it met tells a client bug from ours.
        let d = state
            .txns
            .read(&env(state), state.cluster.as_deref(), Some(&id), |c| {
                c.describe(&id)
            });
        tracing::warn!(
            transactional_id = %id,
            producer_id = req.producer_id,
            producer_epoch = req.producer_epoch,
            committed = req.committed,
            state = ?d.state,
            current_producer_id = d.producer_id,
            current_producer_epoch = d.producer_epoch,
            partitions = d.partitions.len(),
            txn_start_ms = d.transaction_start_time_ms,
            "EndTxn refused: INVALID_TXN_STATE"
        );
    }
    wire::end_txn_response(&resp, version)
}

/// DescribeTransactions.
pub fn describe(
    state: &BrokerState,
    r: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let states = r
        .transactional_ids
        .iter()
        .map(|id| {
            let d = state
                .txns
                .read(&env(state), state.cluster.as_deref(), Some(id), |c| {
                    c.describe(id)
                });
            let mut by_topic: std::collections::BTreeMap<String, Vec<i32>> = Default::default();
            for tp in &d.partitions {
                by_topic
                    .entry(tp.topic.clone())
                    .or_default()
                    .push(tp.partition);
            }
            describe_transactions_response::TransactionState {
                error_code: error_code(d.error),
                transactional_id: id.clone(),
                transaction_state: s(d.state.map_or("", TxnState::name)),
                transaction_timeout_ms: d.transaction_timeout_ms,
                transaction_start_time_ms: d.transaction_start_time_ms,
                producer_id: d.producer_id,
                producer_epoch: d.producer_epoch,
                topics: by_topic
                    .into_iter()
                    .map(
                        |(topic, partitions)| describe_transactions_response::TopicData {
                            topic: s(&topic),
                            partitions: partitions.into(),
                            ..Default::default()
                        },
                    )
                    .collect(),
                ..Default::default()
            }
        })
        .collect();
    DescribeTransactionsResponse {
        transaction_states: states,
        ..Default::default()
    }
}

/// ListTransactions.
pub fn list(state: &BrokerState, r: ListTransactionsRequest) -> ListTransactionsResponse {
    let mut unknown = Vec::new();
    let mut filters = Vec::new();
    for f in &r.state_filters {
        match TxnState::from_name(f) {
            Some(st) => filters.push(st),
            None => unknown.push(f.clone()),
        }
    }
    state.txns.load_all(
        &env(state),
        state.cluster.as_deref(),
        state.config.transaction_state_log_num_partitions,
    );
    let listings = state
        .txns
        .read(&env(state), state.cluster.as_deref(), None, |c| {
            c.list(
                &filters,
                &r.producer_id_filters,
                r.duration_filter,
                now_ms(),
            )
        });
    ListTransactionsResponse {
        unknown_state_filters: unknown,
        transaction_states: listings
            .into_iter()
            .map(|l| list_transactions_response::TransactionState {
                transactional_id: s(&l.transactional_id),
                producer_id: l.producer_id,
                transaction_state: s(l.state.name()),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
