//! Produce (api 0): per-partition checks in Kafka's order, record validation through
//! `josef_records::validate` (Kafka's `LogValidator`), append through the partition (which runs
//! the sequencer and, for acks=−1, the `min.insync.replicas` check), answer. On one node the HW
//! reaches the LEO inside the append, so acks=−1 completes at once (Kafka's first
//! `DelayedProduce.tryComplete` succeeds the same way); `min.insync.replicas` is capped by the
//! replica count, so a single replica never gets NOT_ENOUGH_REPLICAS.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::produce_request::PartitionProduceData;
use josef_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use josef_protocol::messages::{ProduceRequest, ProduceResponse};
use josef_protocol::{ErrorCode, RequestHeader, StrBytes};
use josef_records::validate::{
    produce_batch_header, rebuild_with_compression, validate_client_batch, RecordError,
    ValidationConfig, ValidationError,
};
use josef_records::{
    legacy_to_v2, set_max_timestamp, BatchHeader, Compression, LegacyConversion, LegacyMessageSet,
    RecordsError, TimestampType,
};

use crate::config::BrokerConfig;
use crate::delayed_fetch::{DelayedOp, DelayedProduce, ProducingPartition};
use crate::dispatch::{reply, Reply};
use crate::partition::{ClientBatch, PartitionError, ProduceResult};
use crate::state::BrokerState;
use crate::topics::{now_ms, Topic, INTERNAL_TOPICS};

/// A failed partition: its error, the v8+ `error_message` and the per-record errors.
struct Failure {
    code: ErrorCode,
    message: Option<String>,
    record_errors: Vec<RecordError>,
}

impl From<PartitionError> for Failure {
    fn from(e: PartitionError) -> Self {
        Failure {
            code: e.code,
            message: e.message,
            record_errors: Vec::new(),
        }
    }
}

impl From<ErrorCode> for Failure {
    fn from(code: ErrorCode) -> Self {
        Failure {
            code,
            message: None,
            record_errors: Vec::new(),
        }
    }
}

impl From<ValidationError> for Failure {
    fn from(e: ValidationError) -> Self {
        let code = ErrorCode::from_i16(e.kafka_error_code()).unwrap_or(ErrorCode::InvalidRecord);
        // Kafka sends a message only with record-level errors (`RecordValidationException`);
        // batch-level ones are logged here so an operator still sees why.
        let message = e.is_record_level().then(|| e.to_string());
        if !e.is_record_level() {
            tracing::debug!(error = %e, "produced batch refused");
        }
        let record_errors = match e {
            ValidationError::Records { errors, .. } => errors,
            _ => Vec::new(),
        };
        Failure {
            code,
            message,
            record_errors,
        }
    }
}

/// The topic settings record validation needs (timestamp type and bounds, compaction, size,
/// `compression.type`), from the topic's overrides over the broker defaults (`message.timestamp.before/after.max.ms` fall back to the deprecated
/// `message.timestamp.difference.max.ms`, as in Kafka 3.6+).
pub fn validation_config(topic: &Topic, broker: &BrokerConfig) -> ValidationConfig {
    let c = &topic.configs;
    let long = |name: &str| c.get(name).and_then(|v| v.trim().parse::<i64>().ok());
    let difference = long("message.timestamp.difference.max.ms");
    let timestamp_type = match c.get("message.timestamp.type") {
        Some(t) => t.as_str(),
        None => broker.log_message_timestamp_type.as_str(),
    };
    let policy = match c.get("cleanup.policy") {
        Some(p) => p.as_str(),
        None => broker.log_cleanup_policy.as_str(),
    };
    let max_message_bytes = long("max.message.bytes").unwrap_or(broker.message_max_bytes as i64);
    let compression_type = match c.get("compression.type") {
        Some(t) => t.as_str(),
        None => broker.compression_type.as_str(),
    };
    let target_compression = match compression_type {
        "uncompressed" | "none" => Some(Compression::None),
        "gzip" => Some(Compression::Gzip),
        "snappy" => Some(Compression::Snappy),
        "lz4" => Some(Compression::Lz4),
        "zstd" => Some(Compression::Zstd),
        _ => None, // producer
    };
    ValidationConfig {
        timestamp_type: if timestamp_type == "LogAppendTime" {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        },
        timestamp_before_max_ms: long("message.timestamp.before.max.ms")
            .or(difference)
            .unwrap_or(i64::MAX),
        timestamp_after_max_ms: long("message.timestamp.after.max.ms")
            .or(difference)
            .unwrap_or(i64::MAX),
        compacted: policy.contains("compact"),
        max_batch_bytes: usize::try_from(max_message_bytes).unwrap_or(0),
        target_compression,
        ..ValidationConfig::default()
    }
}

/// B7 "Produce" steps 1–11 for one partition.
fn produce_partition(
    state: &BrokerState,
    header: &RequestHeader,
    acks: i16,
    topic: Option<&Arc<Topic>>,
    topic_name: &str,
    data: &PartitionProduceData,
    version: i16,
) -> Result<ProduceResult, Failure> {
    let (index, records) = (data.index, data.records.as_ref());
    // Step 1.
    let topic = topic.ok_or(ErrorCode::UnknownTopicOrPartition)?;
    let partition = usize::try_from(index)
        .ok()
        .and_then(|i| topic.partitions.get(i))
        .ok_or(ErrorCode::UnknownTopicOrPartition)?;
    let records = records.ok_or(ErrorCode::InvalidRecord)?;
    // Produce v0–v2 carry legacy message sets (magic 0/1); Kafka up-converts them to one v2
    // batch on append. A v2 batch in an old request is taken as it is.
    let legacy = version < 3 && records.get(16).is_some_and(|&magic| magic < 2);
    if !legacy {
        // Step 2: framing (`ProduceRequest.validateRecords`).
        let batch = produce_batch_header(records)?;
        if batch.attributes.compression_id() == Compression::Zstd.id() && version < 7 {
            return Err(ErrorCode::UnsupportedCompressionType.into());
        }
    }
    // Step 4.
    if !matches!(acks, -1..=1) {
        return Err(ErrorCode::InvalidRequiredAcks.into());
    }
    // Step 5.
    let client_id = header.client_id.as_deref().unwrap_or("");
    if INTERNAL_TOPICS.contains(&topic_name) && client_id != "__admin_client" {
        return Err(Failure {
            code: ErrorCode::InvalidTopicException,
            message: Some(format!("Cannot append to internal topic {topic_name}")),
            record_errors: Vec::new(),
        });
    }
    // Steps 7–9.
    let config = validation_config(topic, &state.config);
    let now = now_ms();
    let converted = if legacy {
        Some(up_convert(records, &config)?)
    } else {
        None
    };
    let batch_bytes: &[u8] = converted.as_deref().unwrap_or(records);
    let validated = validate_client_batch(batch_bytes, &config, now)?;
    let rebuilt = if let Some(codec) = validated.rebuild_codec(&config) {
        rebuild_with_compression(batch_bytes, codec, &config.decompress_limits)
            .map_err(|e| Failure {
                code: ErrorCode::CorruptMessage,
                message: Some(e.to_string()),
                record_errors: Vec::new(),
            })?
            .into()
    } else {
        converted
    };
    let batch = match (rebuilt, validated.header_timestamp_fix(&config)) {
        // The usual case: the producer's batch goes to the log as it came, unchanged but for its
        // offsets and epoch, which the log writes into a copy of the header.
        (None, None) => ClientBatch::Shared(records.clone()),
        (rebuilt, fix) => {
            // Not rebuilt means not converted either: the batch is the request's bytes.
            let mut owned = rebuilt.unwrap_or_else(|| BytesMut::from(&records[..]));
            if let Some((ts_type, max_ts)) = fix {
                set_max_timestamp(&mut owned, ts_type, max_ts).map_err(|e| Failure {
                    code: ErrorCode::CorruptMessage,
                    message: Some(e.to_string()),
                    record_errors: Vec::new(),
                })?;
            }
            ClientBatch::Owned(owned)
        }
    };
    // Steps 10–11 happen in the partition (min.insync.replicas for acks=-1, log limits,
    // producer state).
    let min_isr = min_insync_replicas(topic, &state.config);
    Ok(partition.append_from_client(batch, &validated.header, acks, min_isr, now)?)
}

/// The topic's `min.insync.replicas` (its override, else the broker's).
pub(crate) fn min_insync_replicas(topic: &Topic, broker: &BrokerConfig) -> i32 {
    topic
        .configs
        .get("min.insync.replicas")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(broker.min_insync_replicas)
}

/// A legacy message set (Produce v0–v2) as one v2 batch in the topic's `compression.type`, or the
/// codec of its first message for `producer` (Kafka's `convertAndAssignOffsetsNonCompressed` /
/// `buildRecordsAndAssignOffsets`). Every message CRC (and every inner one of a compressed
/// wrapper) is checked: a mismatch is CORRUPT_MESSAGE; anything else unreadable, mixed magics
/// included, is INVALID_RECORD.
fn up_convert(records: &Bytes, config: &ValidationConfig) -> Result<BytesMut, Failure> {
    let fail = |e: RecordsError| Failure {
        code: match e {
            RecordsError::CorruptCrc { .. } => ErrorCode::CorruptMessage,
            _ => ErrorCode::InvalidRecord,
        },
        message: None,
        record_errors: Vec::new(),
    };
    let codec = match LegacyMessageSet::new(records.clone()).next() {
        Some(Ok(first)) => first.compression().map_err(fail)?,
        Some(Err(e)) => return Err(fail(e)),
        None => return Err(ErrorCode::InvalidRecord.into()),
    };
    let conversion = LegacyConversion {
        compression: config.target_compression.unwrap_or(codec),
        keep_offsets: false,
    };
    legacy_to_v2(records.clone(), &config.decompress_limits, &conversion).map_err(fail)
}

/// Step 0: a transactional batch in a request without a transactional id.
fn transactional_without_id(req: &ProduceRequest) -> bool {
    req.transactional_id.is_none()
        && req.topic_data.iter().any(|t| {
            t.partition_data.iter().any(|p| {
                p.records
                    .as_ref()
                    // The first batch decides, whatever follows it (Kafka's `hasTransactionalRecords`).
                    .and_then(|r| BatchHeader::parse(r).ok())
                    .is_some_and(|h| h.is_transactional())
            })
        })
}

/// Handles a Produce request. With acks=−1 the answer waits in the purgatory until the ISR holds
/// every appended batch (at once on a single replica), or `timeout_ms` passes.
pub async fn handle(
    state: &BrokerState,
    conn: &crate::connection::ConnectionInfo,
    header: &RequestHeader,
    req: ProduceRequest,
    version: i16,
) -> Reply {
    let txn_without_id = transactional_without_id(&req);
    // KIP-890: transactional batches the coordinator does not know about are refused.
    let unverified = crate::txn_verification::verify_produce(state, &req, version).await;
    let mut results: Vec<Vec<Result<ProduceResult, Failure>>> =
        Vec::with_capacity(req.topic_data.len());
    let mut waiting: Vec<ProducingPartition> = Vec::new();
    let mut waiting_at: Vec<(usize, usize)> = Vec::new();
    for (ti, t) in req.topic_data.iter().enumerate() {
        let topic = state.topics.get(&t.name);
        let mut parts = Vec::with_capacity(t.partition_data.len());
        for (pi, p) in t.partition_data.iter().enumerate() {
            let result = if txn_without_id {
                Err(ErrorCode::TransactionalIdAuthorizationFailed.into())
            } else if let Some(&code) = unverified.get(&(t.name.to_string(), p.index)) {
                Err(code.into())
            } else {
                produce_partition(state, header, req.acks, topic.as_ref(), &t.name, p, version)
            };
            if let (Ok(r), Some(topic)) = (&result, &topic) {
                if req.acks == -1 {
                    if let Some(partition) = usize::try_from(p.index)
                        .ok()
                        .and_then(|i| topic.partitions.get(i))
                    {
                        waiting.push(ProducingPartition {
                            partition: partition.clone(),
                            required_offset: r.last_offset + 1,
                            min_insync_replicas: min_insync_replicas(topic, &state.config),
                            leader_epoch: r.leader_epoch,
                        });
                        waiting_at.push((ti, pi));
                    }
                }
            }
            parts.push(result);
        }
        results.push(parts);
    }
    if !waiting.is_empty() {
        // Kafka's DelayedProduce: completes at once when the HW already passed every batch (one
        // replica), else when followers catch up, else at timeout_ms with REQUEST_TIMED_OUT.
        let timeout = u64::try_from(req.timeout_ms).unwrap_or(0);
        let (op, done) = DelayedProduce::new(waiting, timeout);
        let op = DelayedOp::Produce(op);
        let keys = op.keys();
        state.fetch_purgatory.try_complete_else_watch(op, keys);
        let statuses = done.await.unwrap_or_default();
        for (i, &(ti, pi)) in waiting_at.iter().enumerate() {
            let code = statuses
                .get(i)
                .copied()
                .unwrap_or(ErrorCode::RequestTimedOut);
            if code != ErrorCode::None {
                results[ti][pi] = Err(code.into());
            }
        }
    }
    let mut any_error = false;
    let mut responses = Vec::with_capacity(req.topic_data.len());
    for (t, results) in req.topic_data.iter().zip(results) {
        let mut parts = Vec::with_capacity(t.partition_data.len());
        for (p, result) in t.partition_data.iter().zip(results) {
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
                        record_errors: e
                            .record_errors
                            .into_iter()
                            .map(|r| BatchIndexAndErrorMessage {
                                batch_index: r.batch_index,
                                batch_index_error_message: Some(StrBytes::from(r.message)),
                                ..Default::default()
                            })
                            .collect(),
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
    let mut resp = ProduceResponse {
        responses,
        ..Default::default()
    };
    super::leader_hints::produce(state, &conn.listener, version, &mut resp);
    reply(resp)
}
