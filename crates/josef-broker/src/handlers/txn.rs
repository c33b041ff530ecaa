//! Transaction APIs: wire messages to josef-txn's types and back (InitProducerId with a
//! transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions,
//! ListTransactions). A mechanical mapping that josef-txn's announced wire adapter will replace.

use std::collections::BTreeSet;

use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, StrBytes};
use josef_txn::{
    self as t, error_code, TopicPartition, TransactionVersion, TxnError, TxnReply, TxnState,
};

use crate::state::BrokerState;
use crate::topics::now_ms;
use crate::txns::Env;

fn env(state: &BrokerState) -> Env<'_> {
    Env {
        topics: &state.topics,
        groups: &state.groups,
        pids: &state.producer_ids,
    }
}

fn s(x: &str) -> StrBytes {
    StrBytes::from(x)
}

/// InitProducerId with a transactional id.
pub async fn init_producer_id(
    state: &BrokerState,
    r: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let id = r.transactional_id.as_deref().unwrap_or("").to_string();
    let req = t::InitProducerIdRequest {
        transactional_id: r.transactional_id.as_ref().map(|x| x.to_string()),
        transaction_timeout_ms: r.transaction_timeout_ms,
        producer_id: r.producer_id,
        producer_epoch: r.producer_epoch,
    };
    let reply = state
        .txns
        .call(&env(state), &id, |c, pids, ctx| {
            c.init_producer_id(&req, now_ms(), pids, ctx)
        })
        .await;
    match reply {
        Some(TxnReply::InitProducerId(x)) => InitProducerIdResponse {
            error_code: error_code(x.error),
            producer_id: x.producer_id,
            producer_epoch: x.producer_epoch,
            ..Default::default()
        },
        _ => InitProducerIdResponse {
            error_code: ErrorCode::UnknownServerError.code(),
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        },
    }
}

fn partitions(
    topics: &[add_partitions_to_txn_request::AddPartitionsToTxnTopic],
) -> BTreeSet<TopicPartition> {
    topics
        .iter()
        .flat_map(|tp| {
            tp.partitions
                .iter()
                .map(|&p| TopicPartition::new(tp.name.to_string(), p))
        })
        .collect()
}

fn topic_results(
    res: &t::AddPartitionsToTxnResult,
) -> Vec<add_partitions_to_txn_response::AddPartitionsToTxnTopicResult> {
    let mut by_topic: std::collections::BTreeMap<&str, Vec<(i32, i16)>> = Default::default();
    for (tp, e) in &res.partitions {
        by_topic
            .entry(tp.topic.as_str())
            .or_default()
            .push((tp.partition, error_code(*e)));
    }
    by_topic
        .into_iter()
        .map(
            |(name, ps)| add_partitions_to_txn_response::AddPartitionsToTxnTopicResult {
                name: s(name),
                results_by_partition: ps
                    .into_iter()
                    .map(|(i, e)| {
                        add_partitions_to_txn_response::AddPartitionsToTxnPartitionResult {
                            partition_index: i,
                            partition_error_code: e,
                            ..Default::default()
                        }
                    })
                    .collect(),
                ..Default::default()
            },
        )
        .collect()
}

async fn add_one(
    state: &BrokerState,
    req: t::AddPartitionsToTxnRequest,
) -> t::AddPartitionsToTxnResult {
    // Partitions of unknown topics fail here, the rest get OPERATION_NOT_ATTEMPTED (Kafka's rule).
    let unknown: Vec<TopicPartition> = req
        .partitions
        .iter()
        .filter(|tp| state.topics.partition(&tp.topic, tp.partition).is_none())
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return t::AddPartitionsToTxnResult {
            transactional_id: req.transactional_id.clone(),
            partitions: req
                .partitions
                .iter()
                .map(|tp| {
                    let e = if unknown.contains(tp) {
                        TxnError::UnknownTopicOrPartition
                    } else {
                        TxnError::OperationNotAttempted
                    };
                    (tp.clone(), Some(e))
                })
                .collect(),
        };
    }
    let id = req.transactional_id.clone();
    let reply = state
        .txns
        .call(&env(state), &id, |c, _, ctx| {
            c.add_partitions_to_txn(&req, now_ms(), TransactionVersion::V0, ctx)
        })
        .await;
    match reply {
        Some(TxnReply::AddPartitionsToTxn(r)) => r,
        _ => t::AddPartitionsToTxnResult::uniform(&req, Some(TxnError::UnknownServerError)),
    }
}

/// AddPartitionsToTxn (v0–3 one transaction; v4+ several, possibly verify-only).
pub async fn add_partitions(
    state: &BrokerState,
    version: i16,
    r: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    if version <= 3 {
        let req = t::AddPartitionsToTxnRequest {
            transactional_id: r.v3_and_below_transactional_id.to_string(),
            producer_id: r.v3_and_below_producer_id,
            producer_epoch: r.v3_and_below_producer_epoch,
            partitions: partitions(&r.v3_and_below_topics),
            verify_only: false,
        };
        let res = add_one(state, req).await;
        return AddPartitionsToTxnResponse {
            results_by_topic_v3_and_below: topic_results(&res),
            ..Default::default()
        };
    }
    let mut results = Vec::new();
    for tx in &r.transactions {
        let req = t::AddPartitionsToTxnRequest {
            transactional_id: tx.transactional_id.to_string(),
            producer_id: tx.producer_id,
            producer_epoch: tx.producer_epoch,
            partitions: partitions(&tx.topics),
            verify_only: tx.verify_only,
        };
        let res = add_one(state, req).await;
        results.push(add_partitions_to_txn_response::AddPartitionsToTxnResult {
            transactional_id: tx.transactional_id.clone(),
            topic_results: topic_results(&res),
            ..Default::default()
        });
    }
    AddPartitionsToTxnResponse {
        results_by_transaction: results,
        ..Default::default()
    }
}

/// AddOffsetsToTxn.
pub async fn add_offsets(
    state: &BrokerState,
    r: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    // The group's __consumer_offsets partition must exist for its marker.
    let _ = state
        .topics
        .ensure_internal(crate::topics::GROUP_METADATA_TOPIC);
    let req = t::AddOffsetsToTxnRequest {
        transactional_id: r.transactional_id.to_string(),
        producer_id: r.producer_id,
        producer_epoch: r.producer_epoch,
        group_id: r.group_id.to_string(),
    };
    let id = req.transactional_id.clone();
    let reply = state
        .txns
        .call(&env(state), &id, |c, _, ctx| {
            c.add_offsets_to_txn(&req, now_ms(), TransactionVersion::V0, ctx)
        })
        .await;
    let code = match reply {
        Some(TxnReply::AddOffsetsToTxn(e)) => error_code(e),
        _ => ErrorCode::UnknownServerError.code(),
    };
    AddOffsetsToTxnResponse {
        error_code: code,
        ..Default::default()
    }
}

/// EndTxn.
pub async fn end_txn(state: &BrokerState, r: EndTxnRequest) -> EndTxnResponse {
    let req = t::EndTxnRequest {
        transactional_id: r.transactional_id.to_string(),
        producer_id: r.producer_id,
        producer_epoch: r.producer_epoch,
        committed: r.committed,
        client_transaction_version: TransactionVersion::V0,
    };
    let id = req.transactional_id.clone();
    let reply = state
        .txns
        .call(&env(state), &id, |c, pids, ctx| {
            c.end_txn(&req, now_ms(), pids, ctx)
        })
        .await;
    match reply {
        Some(TxnReply::EndTxn(x)) => EndTxnResponse {
            error_code: error_code(x.error),
            producer_id: x.producer_id,
            producer_epoch: x.producer_epoch,
            ..Default::default()
        },
        _ => EndTxnResponse {
            error_code: ErrorCode::UnknownServerError.code(),
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        },
    }
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
            let d = state.txns.read(&env(state), Some(id), |c| c.describe(id));
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
                            partitions,
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
        state.config.transaction_state_log_num_partitions,
    );
    let listings = state.txns.read(&env(state), None, |c| {
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
