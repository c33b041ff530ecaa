//! KIP-890 part 1 on this broker: the I/O around josef-txn's pure decisions
//! ([`josef_txn::plan_verification`] says which transactional appends of a Produce request the
//! coordinator must confirm and [`josef_txn::verification_errors`] maps its answer by Produce
//! version; see there for the rules). This module reads each partition's producer state and asks
//! the coordinator: in-process when this broker coordinates the transactional id, else over the
//! inter-broker listener. `transaction.partition.verification.enable`.
//!
//! Transactions v2 (KIP-890 part 2): a transactional Produce from v12 on *adds* its partitions
//! to the transaction through the same path (the producer sends no AddPartitionsToTxn), whatever
//! the setting says; see [`josef_txn::produce_adds_partitions`].
//!
//! The group coordinator's broker does the same for the `__consumer_offsets` partition of a
//! TxnOffsetCommit: verified below v5 ([`verify_offsets_partition`]), added from v5
//! ([`add_offsets_partition`]).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use josef_protocol::messages::ProduceRequest;
use josef_protocol::{ApiKey, ErrorCode, RequestBody, RequestHeader, ResponseBody};
use josef_records::BatchHeader;
use josef_txn::{
    wire, AddPartitionsToTxnRequest, AddPartitionsToTxnResult, PartitionTxnState, TopicPartition,
    TransactionalAppend, TxnError, Verification, ADD_PARTITIONS_TO_TXN_V2_VERSION,
    VERIFY_ADD_PARTITIONS_TO_TXN_VERSION,
};

use crate::connection::ConnectionInfo;
use crate::kit::coordinators::CoordinatorRequest;
use crate::state::BrokerState;
use crate::topics::TRANSACTION_STATE_TOPIC;

/// How long a leader waits for the coordinator's answer.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(10);

/// A v2 producer's partitions are asked again after CONCURRENT_TRANSACTIONS (its previous
/// transaction's markers are still being written) every this long, within
/// [`ADD_RETRY_BOUND`], before the error is returned: a Produce is costly for the client to
/// retry (Kafka's `add.partitions.to.txn.retry.backoff.ms` / `.max.ms`).
const ADD_RETRY_BACKOFF: Duration = Duration::from_millis(20);
/// See [`ADD_RETRY_BACKOFF`].
const ADD_RETRY_BOUND: Duration = Duration::from_millis(100);

/// The transactional batches of `req` on partitions this broker has, with each partition's view
/// of the batch's producer.
fn transactional_appends(state: &BrokerState, req: &ProduceRequest) -> Vec<TransactionalAppend> {
    let mut out = Vec::new();
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
            let s = partition.producer_txn_state(h.producer_id);
            out.push(TransactionalAppend {
                partition: TopicPartition::new(t.name.as_str(), p.index),
                producer_id: h.producer_id,
                producer_epoch: h.producer_epoch,
                state: PartitionTxnState {
                    is_leader: s.is_leader,
                    producer_epoch: s.producer_epoch,
                    has_ongoing_txn: s.has_ongoing_txn,
                },
            });
        }
    }
    out
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
    let adds = josef_txn::produce_adds_partitions(version);
    if !adds && !state.config.transaction_partition_verification_enable {
        return BTreeMap::new();
    }
    let Some(tid) = req.transactional_id.as_deref().filter(|t| !t.is_empty()) else {
        return BTreeMap::new();
    };
    let errors = match josef_txn::plan_verification(tid, transactional_appends(state, req)) {
        Verification::Unneeded => BTreeMap::new(),
        Verification::Refused(errors) => errors,
        Verification::Ask(mut check) => {
            check.verify_only = !adds;
            let result = if adds {
                add_with_retries(state, &check).await
            } else {
                ask_coordinator(state, &check).await
            };
            let errors = josef_txn::verification_errors(&result, version);
            for (tp, e) in &errors {
                tracing::debug!(topic = %tp.topic, partition = tp.partition, transactional_id = tid, ?e, "transactional produce not verified");
            }
            errors
        }
    };
    errors
        .into_iter()
        .map(|(tp, e)| ((tp.topic, tp.partition), e))
        .collect()
}

/// Adds `group_id`'s `__consumer_offsets` partition to the transaction of a transactions v2
/// producer (TxnOffsetCommit v5, which comes without AddOffsetsToTxn). `None` once added; else
/// the error the commit answers: retriable coordinator trouble as COORDINATOR_NOT_AVAILABLE
/// (the client looks the coordinator up again and retries), a fenced producer as
/// INVALID_PRODUCER_EPOCH, a transaction still ending as CONCURRENT_TRANSACTIONS.
pub async fn add_offsets_partition(
    state: &BrokerState,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    group_id: &str,
) -> Option<ErrorCode> {
    let partition = TopicPartition::new(
        crate::topics::GROUP_METADATA_TOPIC,
        josef_txn::group_partition_for(group_id, state.config.offsets_topic_num_partitions),
    );
    let req = AddPartitionsToTxnRequest {
        transactional_id: transactional_id.to_string(),
        producer_id,
        producer_epoch,
        partitions: [partition].into_iter().collect(),
        verify_only: false,
    };
    let error = add_with_retries(state, &req).await.first_error()?;
    Some(
        match josef_txn::produce_error(error, josef_txn::FIRST_TRANSACTIONS_V2_PRODUCE_VERSION) {
            ErrorCode::NotEnoughReplicas => ErrorCode::CoordinatorNotAvailable,
            code => code,
        },
    )
}

/// KIP-890 part 1 for a TxnOffsetCommit below v5 (see josef-txn's
/// [`josef_txn::txn_offset_commit_verifies`]): `None` when the offsets may be written, the
/// transaction coordinator having confirmed that AddOffsetsToTxn put `group_id`'s
/// `__consumer_offsets` partition in the producer's transaction (or there being nothing to
/// verify); else the error every partition of the commit answers, with nothing written.
pub async fn verify_offsets_partition(
    state: &BrokerState,
    version: i16,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    group_id: &str,
) -> Option<ErrorCode> {
    let req = josef_txn::offsets_verification_request(
        transactional_id,
        producer_id,
        producer_epoch,
        group_id,
        state.config.offsets_topic_num_partitions,
    );
    let tp = req.partitions.first()?;
    // Not here: the group's shard refuses the commit anyway.
    let s = state
        .topics
        .partition(&tp.topic, tp.partition)?
        .producer_txn_state(producer_id);
    let seen = PartitionTxnState {
        is_leader: s.is_leader,
        producer_epoch: s.producer_epoch,
        has_ongoing_txn: s.has_ongoing_txn,
    };
    if !josef_txn::txn_offset_commit_verifies(
        version,
        state.config.transaction_partition_verification_enable,
        seen,
        producer_epoch,
    ) {
        return None;
    }
    let error = ask_coordinator(state, &req).await.first_error()?;
    tracing::debug!(
        group_id,
        transactional_id,
        ?error,
        "transactional offset commit not verified"
    );
    Some(josef_txn::txn_offset_commit_error(error, version))
}

/// [`ask_coordinator`] for a transactions v2 add, asked again while the coordinator answers
/// CONCURRENT_TRANSACTIONS, up to [`ADD_RETRY_BOUND`].
async fn add_with_retries(
    state: &BrokerState,
    req: &AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResult {
    let deadline = tokio::time::Instant::now() + ADD_RETRY_BOUND;
    loop {
        let result = ask_coordinator(state, req).await;
        let concurrent = result
            .partitions
            .iter()
            .any(|(_, e)| *e == Some(TxnError::ConcurrentTransactions));
        if !concurrent || tokio::time::Instant::now() + ADD_RETRY_BACKOFF > deadline {
            return result;
        }
        tokio::time::sleep(ADD_RETRY_BACKOFF).await;
    }
}

/// The coordinator's answer for `req` (verify-only, or adding the partitions for a v2
/// producer): from the state's transaction coordinator when this broker coordinates the id
/// (always on a single node), else from the leader of its `__transaction_state` partition. Both
/// ask with the AddPartitionsToTxn request (v4+, the broker-to-broker form) Kafka's
/// `AddPartitionsToTxnManager` sends, so a builder's coordinator set on the state
/// ([`BrokerState::with_txn_coordinator`](crate::state::BrokerState::with_txn_coordinator))
/// answers the verifications of its own transactions.
pub async fn ask_coordinator(
    state: &BrokerState,
    req: &AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResult {
    let unavailable =
        || AddPartitionsToTxnResult::uniform(req, Some(TxnError::CoordinatorNotAvailable));
    let version = if req.verify_only {
        VERIFY_ADD_PARTITIONS_TO_TXN_VERSION
    } else {
        ADD_PARTITIONS_TO_TXN_V2_VERSION
    };
    let body = wire::add_partitions_to_txn_verify_request(req);
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
            return match state
                .txns
                .verification_connections()
                .call(
                    node,
                    leader,
                    RequestBody::AddPartitionsToTxn(body),
                    version,
                    VERIFY_TIMEOUT,
                )
                .await
            {
                Some(ResponseBody::AddPartitionsToTxn(r)) => {
                    wire::add_partitions_to_txn_result_for(req, &r)
                }
                _ => unavailable(),
            };
        }
    }
    let header = RequestHeader {
        request_api_key: ApiKey::AddPartitionsToTxn as i16,
        request_api_version: version,
        client_id: Some(VERIFICATION_CLIENT_ID.into()),
        ..RequestHeader::default()
    };
    let conn = ConnectionInfo::new(
        VERIFICATION_CLIENT_ID,
        0,
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
    );
    let rq = CoordinatorRequest {
        state,
        conn: &conn,
        header: &header,
    };
    let answer = state.txn_coordinator.add_partitions_to_txn(rq, body).await;
    wire::add_partitions_to_txn_result_for(req, &answer)
}

/// The client id (and listener name) a verification asked in-process carries, so a builder's
/// coordinator can tell it from a client's request.
pub const VERIFICATION_CLIENT_ID: &str = "josef-txn-verification";
