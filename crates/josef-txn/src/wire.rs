//! Wire adapter: Kafka's generated messages (josef-protocol) ⇄ the coordinator's own types.
//!
//! The broker decodes a request with josef-protocol, converts it here, calls [`crate::TxnCoordinator`]
//! (or a [`crate::TxnShard`] through its driver), and converts the answer back for the request's
//! version. Version rules applied here, as Kafka's `KafkaApis` does:
//! - `PRODUCER_FENCED` is answered as `INVALID_PRODUCER_EPOCH` to clients that predate it
//!   (InitProducerId < v4, AddPartitionsToTxn / AddOffsetsToTxn / EndTxn < v2);
//! - AddPartitionsToTxn v0–3 carries one transaction, v4+ a batch (and the verify-only form);
//! - EndTxn v5+ and AddPartitionsToTxn v5+ are Transactions V2.

use std::collections::BTreeSet;

use josef_protocol::messages::{
    add_partitions_to_txn_request as apreq, add_partitions_to_txn_response as apresp,
    write_txn_markers_request as wtm, write_txn_markers_response as wtmr,
    AddOffsetsToTxnRequest as WireAddOffsetsReq, AddOffsetsToTxnResponse as WireAddOffsetsResp,
    AddPartitionsToTxnRequest as WireAddPartitionsReq,
    AddPartitionsToTxnResponse as WireAddPartitionsResp, EndTxnRequest as WireEndTxnReq,
    EndTxnResponse as WireEndTxnResp, InitProducerIdRequest as WireInitReq,
    InitProducerIdResponse as WireInitResp, WriteTxnMarkersRequest as WireWriteTxnMarkersReq,
};
use josef_protocol::StrBytes;

use crate::{
    error_code, AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AddPartitionsToTxnResult,
    EndTxnRequest, EndTxnResponse, InitProducerIdRequest, InitProducerIdResponse, TopicPartition,
    TransactionResult, TransactionVersion, TxnError, TxnMarkerRequest,
};

/// `PRODUCER_FENCED` as clients of `version` understand it: `INVALID_PRODUCER_EPOCH` below
/// `first_version_with_fenced`.
fn fenced_for(error: Option<TxnError>, version: i16, first_version_with_fenced: i16) -> i16 {
    match error {
        Some(TxnError::ProducerFenced) if version < first_version_with_fenced => {
            TxnError::InvalidProducerEpoch.code()
        }
        e => error_code(e),
    }
}

// ----- InitProducerId -------------------------------------------------------------------------

/// InitProducerId request (v0–5) → coordinator request.
pub fn init_producer_id_request(req: &WireInitReq) -> InitProducerIdRequest {
    InitProducerIdRequest {
        transactional_id: req.transactional_id.as_ref().map(|s| s.to_string()),
        transaction_timeout_ms: req.transaction_timeout_ms,
        producer_id: req.producer_id,
        producer_epoch: req.producer_epoch,
    }
}

/// Coordinator answer → InitProducerId response for `version`.
pub fn init_producer_id_response(resp: &InitProducerIdResponse, version: i16) -> WireInitResp {
    WireInitResp {
        error_code: fenced_for(resp.error, version, 4),
        producer_id: resp.producer_id,
        producer_epoch: resp.producer_epoch,
        ..WireInitResp::default()
    }
}

// ----- AddPartitionsToTxn ---------------------------------------------------------------------

fn topics_to_partitions(topics: &[apreq::AddPartitionsToTxnTopic]) -> BTreeSet<TopicPartition> {
    topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| TopicPartition::new(t.name.to_string(), *p))
        })
        .collect()
}

/// The transaction version a request of this AddPartitionsToTxn `version` implies (V2 from v5).
pub fn add_partitions_client_version(version: i16) -> TransactionVersion {
    if version >= 5 {
        TransactionVersion::V2
    } else {
        TransactionVersion::V0
    }
}

/// AddPartitionsToTxn request → one coordinator request per transaction (one for v0–3).
pub fn add_partitions_to_txn_requests(
    req: &WireAddPartitionsReq,
    version: i16,
) -> Vec<AddPartitionsToTxnRequest> {
    if version < 4 {
        return vec![AddPartitionsToTxnRequest {
            transactional_id: req.v3_and_below_transactional_id.to_string(),
            producer_id: req.v3_and_below_producer_id,
            producer_epoch: req.v3_and_below_producer_epoch,
            partitions: topics_to_partitions(&req.v3_and_below_topics),
            verify_only: false,
        }];
    }
    req.transactions
        .iter()
        .map(|t| AddPartitionsToTxnRequest {
            transactional_id: t.transactional_id.to_string(),
            producer_id: t.producer_id,
            producer_epoch: t.producer_epoch,
            partitions: topics_to_partitions(&t.topics),
            verify_only: t.verify_only,
        })
        .collect()
}

/// Kafka's broker-side check before the coordinator sees the request: if any partition does not
/// exist (`exists` is false), those get `UNKNOWN_TOPIC_OR_PARTITION`, the others
/// `OPERATION_NOT_ATTEMPTED`, and the coordinator is not called.
pub fn check_partitions_exist(
    req: &AddPartitionsToTxnRequest,
    exists: impl Fn(&TopicPartition) -> bool,
) -> Option<AddPartitionsToTxnResult> {
    if req.partitions.iter().all(&exists) {
        return None;
    }
    Some(AddPartitionsToTxnResult {
        transactional_id: req.transactional_id.clone(),
        partitions: req
            .partitions
            .iter()
            .map(|p| {
                let e = if exists(p) {
                    TxnError::OperationNotAttempted
                } else {
                    TxnError::UnknownTopicOrPartition
                };
                (p.clone(), Some(e))
            })
            .collect(),
    })
}

fn topic_results(
    result: &AddPartitionsToTxnResult,
    version: i16,
) -> Vec<apresp::AddPartitionsToTxnTopicResult> {
    let mut out: Vec<apresp::AddPartitionsToTxnTopicResult> = Vec::new();
    for (tp, e) in &result.partitions {
        let pr = apresp::AddPartitionsToTxnPartitionResult {
            partition_index: tp.partition,
            partition_error_code: fenced_for(*e, version, 2),
            ..Default::default()
        };
        match out.last_mut() {
            Some(t) if t.name.as_str() == tp.topic => t.results_by_partition.push(pr),
            _ => out.push(apresp::AddPartitionsToTxnTopicResult {
                name: StrBytes::from(tp.topic.as_str()),
                results_by_partition: vec![pr],
                ..Default::default()
            }),
        }
    }
    out
}

/// Per-transaction results → AddPartitionsToTxn response for `version` (v0–3: the first result).
pub fn add_partitions_to_txn_response(
    results: &[AddPartitionsToTxnResult],
    version: i16,
) -> WireAddPartitionsResp {
    if version < 4 {
        return WireAddPartitionsResp {
            results_by_topic_v3_and_below: results
                .first()
                .map(|r| topic_results(r, version))
                .unwrap_or_default(),
            ..WireAddPartitionsResp::default()
        };
    }
    WireAddPartitionsResp {
        results_by_transaction: results
            .iter()
            .map(|r| apresp::AddPartitionsToTxnResult {
                transactional_id: StrBytes::from(r.transactional_id.as_str()),
                topic_results: topic_results(r, version),
                ..Default::default()
            })
            .collect(),
        ..WireAddPartitionsResp::default()
    }
}

/// A v4+ response with only a top-level error (e.g. `CLUSTER_AUTHORIZATION_FAILED`).
pub fn add_partitions_to_txn_top_level_error(error_code: i16) -> WireAddPartitionsResp {
    WireAddPartitionsResp {
        error_code,
        ..WireAddPartitionsResp::default()
    }
}

// ----- AddOffsetsToTxn ------------------------------------------------------------------------

/// AddOffsetsToTxn request → coordinator request.
pub fn add_offsets_to_txn_request(req: &WireAddOffsetsReq) -> AddOffsetsToTxnRequest {
    AddOffsetsToTxnRequest {
        transactional_id: req.transactional_id.to_string(),
        producer_id: req.producer_id,
        producer_epoch: req.producer_epoch,
        group_id: req.group_id.to_string(),
    }
}

/// Coordinator answer → AddOffsetsToTxn response for `version`.
pub fn add_offsets_to_txn_response(error: Option<TxnError>, version: i16) -> WireAddOffsetsResp {
    WireAddOffsetsResp {
        error_code: fenced_for(error, version, 2),
        ..WireAddOffsetsResp::default()
    }
}

// ----- EndTxn ---------------------------------------------------------------------------------

/// EndTxn request → coordinator request (v5+ is Transactions V2).
pub fn end_txn_request(req: &WireEndTxnReq, version: i16) -> EndTxnRequest {
    EndTxnRequest {
        transactional_id: req.transactional_id.to_string(),
        producer_id: req.producer_id,
        producer_epoch: req.producer_epoch,
        committed: req.committed,
        client_transaction_version: if version >= 5 {
            TransactionVersion::V2
        } else {
            TransactionVersion::V0
        },
    }
}

/// Coordinator answer → EndTxn response for `version`.
pub fn end_txn_response(resp: &EndTxnResponse, version: i16) -> WireEndTxnResp {
    WireEndTxnResp {
        error_code: fenced_for(resp.error, version, 2),
        producer_id: resp.producer_id,
        producer_epoch: resp.producer_epoch,
        ..WireEndTxnResp::default()
    }
}

// ----- WriteTxnMarkers ------------------------------------------------------------------------

/// Marker effects → a WriteTxnMarkers request (for brokers that send markers to partition leaders
/// over the wire; a single node can write them to its log directly).
pub fn write_txn_markers_request(markers: &[TxnMarkerRequest]) -> WireWriteTxnMarkersReq {
    WireWriteTxnMarkersReq {
        markers: markers
            .iter()
            .map(|m| {
                let mut topics: Vec<wtm::WritableTxnMarkerTopic> = Vec::new();
                for tp in &m.partitions {
                    match topics.last_mut() {
                        Some(t) if t.name.as_str() == tp.topic => {
                            t.partition_indexes.push(tp.partition)
                        }
                        _ => topics.push(wtm::WritableTxnMarkerTopic {
                            name: StrBytes::from(tp.topic.as_str()),
                            partition_indexes: josef_protocol::smallvec![tp.partition],
                            ..Default::default()
                        }),
                    }
                }
                wtm::WritableTxnMarker {
                    producer_id: m.producer_id,
                    producer_epoch: m.producer_epoch,
                    transaction_result: m.result == TransactionResult::Commit,
                    topics,
                    coordinator_epoch: m.coordinator_epoch,
                    ..Default::default()
                }
            })
            .collect(),
        ..WireWriteTxnMarkersReq::default()
    }
}

/// The answer for one (producer id, partition) of a WriteTxnMarkers request.
pub type MarkerResult = (i64, TopicPartition, josef_protocol::ErrorCode);

/// A WriteTxnMarkers request as the partition leader reads it: one marker effect per entry
/// (the transactional id is not on the wire and is left empty). Duplicate partitions of an
/// entry are merged.
pub fn write_txn_markers_from_request(req: &WireWriteTxnMarkersReq) -> Vec<TxnMarkerRequest> {
    req.markers
        .iter()
        .map(|m| TxnMarkerRequest {
            transactional_id: String::new(),
            producer_id: m.producer_id,
            producer_epoch: m.producer_epoch,
            coordinator_epoch: m.coordinator_epoch,
            result: if m.transaction_result {
                TransactionResult::Commit
            } else {
                TransactionResult::Abort
            },
            partitions: m
                .topics
                .iter()
                .flat_map(|t| {
                    t.partition_indexes
                        .iter()
                        .map(|p| TopicPartition::new(t.name.as_str(), *p))
                })
                .collect(),
            transaction_version: TransactionVersion::V0,
        })
        .collect()
}

/// Per-partition answers → the WriteTxnMarkers response (one entry per producer id, in the
/// order first seen).
pub fn write_txn_markers_response(results: &[MarkerResult]) -> wtmr::WriteTxnMarkersResponse {
    let mut markers: Vec<wtmr::WritableTxnMarkerResult> = Vec::new();
    for (pid, tp, error) in results {
        let idx = match markers.iter().position(|m| m.producer_id == *pid) {
            Some(i) => i,
            None => {
                markers.push(wtmr::WritableTxnMarkerResult {
                    producer_id: *pid,
                    ..Default::default()
                });
                markers.len() - 1
            }
        };
        let topics = &mut markers[idx].topics;
        let t = match topics.iter().position(|t| t.name.as_str() == tp.topic) {
            Some(i) => &mut topics[i],
            None => {
                topics.push(wtmr::WritableTxnMarkerTopicResult {
                    name: StrBytes::from(tp.topic.as_str()),
                    ..Default::default()
                });
                topics.last_mut().expect("pushed above")
            }
        };
        t.partitions.push(wtmr::WritableTxnMarkerPartitionResult {
            partition_index: tp.partition,
            error_code: error.code(),
            ..Default::default()
        });
    }
    wtmr::WriteTxnMarkersResponse {
        markers,
        ..Default::default()
    }
}

/// A WriteTxnMarkers response → per-partition answers (unknown error codes read as
/// UNKNOWN_SERVER_ERROR).
pub fn write_txn_markers_results(resp: &wtmr::WriteTxnMarkersResponse) -> Vec<MarkerResult> {
    let mut out = Vec::new();
    for m in &resp.markers {
        for t in &m.topics {
            for p in &t.partitions {
                let e = josef_protocol::ErrorCode::from_i16(p.error_code)
                    .unwrap_or(josef_protocol::ErrorCode::UnknownServerError);
                out.push((
                    m.producer_id,
                    TopicPartition::new(t.name.as_str(), p.partition_index),
                    e,
                ));
            }
        }
    }
    out
}

// ----- KIP-890 verification (partition leader → coordinator) --------------------------------

/// The AddPartitionsToTxn (one transaction) a partition leader sends the transaction coordinator
/// for `req`: verify-only (KIP-890 part 1, v4+), or adding the partitions for a transactions v2
/// producer (`verify_only` false, v5+: see [`crate::ADD_PARTITIONS_TO_TXN_V2_VERSION`]).
pub fn add_partitions_to_txn_verify_request(
    req: &AddPartitionsToTxnRequest,
) -> WireAddPartitionsReq {
    let mut topics: Vec<apreq::AddPartitionsToTxnTopic> = Vec::new();
    for tp in &req.partitions {
        match topics.last_mut() {
            Some(t) if t.name.as_str() == tp.topic => t.partitions.push(tp.partition),
            _ => topics.push(apreq::AddPartitionsToTxnTopic {
                name: StrBytes::from(tp.topic.as_str()),
                partitions: josef_protocol::smallvec![tp.partition],
                ..Default::default()
            }),
        }
    }
    WireAddPartitionsReq {
        transactions: vec![apreq::AddPartitionsToTxnTransaction {
            transactional_id: StrBytes::from(req.transactional_id.as_str()),
            producer_id: req.producer_id,
            producer_epoch: req.producer_epoch,
            verify_only: req.verify_only,
            topics,
            ..Default::default()
        }],
        ..WireAddPartitionsReq::default()
    }
}

/// A v4+ AddPartitionsToTxn response → the outcome for `req`'s partitions: a top-level error, or
/// a partition missing from the answer, is that partition's error (unknown codes read as
/// UNKNOWN_SERVER_ERROR).
pub fn add_partitions_to_txn_result_for(
    req: &AddPartitionsToTxnRequest,
    resp: &WireAddPartitionsResp,
) -> AddPartitionsToTxnResult {
    let to_error = |code: i16| match code {
        0 => None,
        c => Some(TxnError::from_code(c).unwrap_or(TxnError::UnknownServerError)),
    };
    if resp.error_code != 0 {
        return AddPartitionsToTxnResult::uniform(req, to_error(resp.error_code));
    }
    let txn = resp
        .results_by_transaction
        .iter()
        .find(|t| t.transactional_id.as_str() == req.transactional_id);
    AddPartitionsToTxnResult {
        transactional_id: req.transactional_id.clone(),
        partitions: req
            .partitions
            .iter()
            .map(|tp| {
                let code = txn
                    .and_then(|t| t.topic_results.iter().find(|r| r.name.as_str() == tp.topic))
                    .and_then(|r| {
                        r.results_by_partition
                            .iter()
                            .find(|p| p.partition_index == tp.partition)
                    })
                    .map_or(TxnError::UnknownServerError.code(), |p| {
                        p.partition_error_code
                    });
                (tp.clone(), to_error(code))
            })
            .collect(),
    }
}
