//! Produce (api 0): per-partition checks in Kafka's order, append through the partition (which
//! runs the sequencer), answer. On one node the HW reaches the LEO inside the append, so acks=−1
//! completes at once (Kafka's first `DelayedProduce.tryComplete` succeeds the same way).

use bytes::Bytes;
use josef_log::BatchHeader;
use josef_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use josef_protocol::messages::{ProduceRequest, ProduceResponse};
use josef_protocol::{ErrorCode, RequestHeader, StrBytes};

use crate::dispatch::{reply, Reply};
use crate::partition::{PartitionError, ProduceResult};
use crate::state::BrokerState;
use crate::topics::{now_ms, INTERNAL_TOPICS};

const COMPRESSION_ZSTD: i16 = 4;
const ATTR_TIMESTAMP_TYPE: i16 = 0x08;
const BATCH_HEADER_LEN: usize = 61;

/// Splits `records` into batch headers; `Err` if the bytes are not whole v2 batches.
fn batch_headers(records: &[u8]) -> Result<Vec<BatchHeader>, PartitionError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < records.len() {
        let rest = &records[pos..];
        if rest.len() < BATCH_HEADER_LEN {
            return Err(PartitionError::new(ErrorCode::InvalidRecord));
        }
        if rest[16] as i8 != 2 {
            return Err(PartitionError {
                code: ErrorCode::InvalidRecord,
                message: Some(format!("unsupported record batch magic {}", rest[16] as i8)),
            });
        }
        let h = BatchHeader::parse(rest).map_err(|e| PartitionError {
            code: ErrorCode::CorruptMessage,
            message: Some(e.to_string()),
        })?;
        let size = h.total_size();
        if size > rest.len() || size < BATCH_HEADER_LEN {
            return Err(PartitionError::new(ErrorCode::CorruptMessage));
        }
        pos += size;
        out.push(h);
    }
    Ok(out)
}

/// The checks of B7 "Produce" steps 2, 7 and 8 that need only the batch header.
fn check_batch(records: &[u8], version: i16) -> Result<BatchHeader, PartitionError> {
    let headers = batch_headers(records)?;
    if headers.len() != 1 {
        return Err(PartitionError {
            code: ErrorCode::InvalidRecord,
            message: Some(format!(
                "Produce v3+ must carry exactly one record batch per partition, got {}",
                headers.len()
            )),
        });
    }
    let h = headers.into_iter().next().expect("one batch");
    if h.attributes.0 & 0x07 == COMPRESSION_ZSTD && version < 7 {
        return Err(PartitionError::new(ErrorCode::UnsupportedCompressionType));
    }
    if h.base_offset != 0 {
        return Err(PartitionError {
            code: ErrorCode::InvalidRecord,
            message: Some("the base offset of a produced batch must be 0".into()),
        });
    }
    if h.is_control() {
        return Err(PartitionError {
            code: ErrorCode::InvalidRecord,
            message: Some("clients may not write control batches".into()),
        });
    }
    if h.has_producer_id() && h.base_sequence < 0 {
        return Err(PartitionError {
            code: ErrorCode::InvalidRecord,
            message: Some("an idempotent batch must have a base sequence >= 0".into()),
        });
    }
    if h.attributes.0 & ATTR_TIMESTAMP_TYPE != 0 {
        return Err(PartitionError {
            code: ErrorCode::InvalidTimestamp,
            message: Some("clients may not set the LogAppendTime bit".into()),
        });
    }
    Ok(h)
}

fn produce_partition(
    state: &BrokerState,
    header: &RequestHeader,
    req: &ProduceRequest,
    topic: &str,
    index: i32,
    records: Option<&Bytes>,
    version: i16,
) -> Result<ProduceResult, PartitionError> {
    let partition = state
        .topics
        .partition(topic, index)
        .ok_or_else(|| PartitionError::new(ErrorCode::UnknownTopicOrPartition))?;
    let records = records.ok_or_else(|| PartitionError::new(ErrorCode::InvalidRecord))?;
    let batch = check_batch(records, version)?;
    if !matches!(req.acks, -1..=1) {
        return Err(PartitionError::new(ErrorCode::InvalidRequiredAcks));
    }
    let client_id = header.client_id.as_deref().unwrap_or("");
    if INTERNAL_TOPICS.contains(&topic) && client_id != "__admin_client" {
        return Err(PartitionError {
            code: ErrorCode::InvalidTopicException,
            message: Some(format!("Cannot append to internal topic {topic}")),
        });
    }
    partition.append_from_client(records.clone(), &batch, now_ms())
}

/// Handles a Produce request.
pub fn handle(
    state: &BrokerState,
    header: &RequestHeader,
    req: ProduceRequest,
    version: i16,
) -> Reply {
    // Step 0: a transactional batch without a transactional id fails every partition.
    let txn_without_id = req.transactional_id.is_none()
        && req.topic_data.iter().any(|t| {
            t.partition_data.iter().any(|p| {
                p.records
                    .as_ref()
                    .and_then(|r| BatchHeader::parse(r).ok())
                    .is_some_and(|h| h.is_transactional())
            })
        });
    let mut any_error = false;
    let mut responses = Vec::with_capacity(req.topic_data.len());
    for t in &req.topic_data {
        let mut parts = Vec::with_capacity(t.partition_data.len());
        for p in &t.partition_data {
            let result = if txn_without_id {
                Err(PartitionError::new(
                    ErrorCode::TransactionalIdAuthorizationFailed,
                ))
            } else {
                produce_partition(
                    state,
                    header,
                    &req,
                    &t.name,
                    p.index,
                    p.records.as_ref(),
                    version,
                )
            };
            let pr = match result {
                Ok(r) => PartitionProduceResponse {
                    index: p.index,
                    error_code: 0,
                    base_offset: r.base_offset,
                    log_append_time_ms: r.log_append_time,
                    log_start_offset: r.log_start_offset,
                    ..Default::default()
                },
                Err(e) => {
                    any_error = true;
                    tracing::debug!(topic = %t.name, partition = p.index, code = ?e.code, msg = ?e.message, "produce failed");
                    PartitionProduceResponse {
                        index: p.index,
                        error_code: e.code.code(),
                        base_offset: -1,
                        log_append_time_ms: -1,
                        log_start_offset: -1,
                        error_message: e.message.map(StrBytes::from),
                        ..Default::default()
                    }
                }
            };
            parts.push(pr);
        }
        responses.push(TopicProduceResponse {
            name: t.name.clone(),
            partition_responses: parts,
            ..Default::default()
        });
    }
    if req.acks == 0 {
        // No response; a failure closes the connection so the producer refreshes its metadata.
        return if any_error {
            Reply::Close("acks=0 produce failed on some partition".into())
        } else {
            Reply::None
        };
    }
    reply(ProduceResponse {
        responses,
        ..Default::default()
    })
}
