//! Produce (api 0): per-partition checks in Kafka's order, the records prepared by
//! `josef_records::prepare` (up-conversion, Kafka's `LogValidator`, recompression, timestamp fix)
//! with the partition's parsed config, append through the state's
//! [`PartitionStore`](crate::kit::PartitionStore) (Josef's partition runs
//! the sequencer and, for acks=−1, the `min.insync.replicas` check), answer. On one node the HW
//! reaches the LEO inside the append, so acks=−1 completes at once (Kafka's first
//! `DelayedProduce.tryComplete` succeeds the same way); `min.insync.replicas` is capped by the
//! replica count, so a single replica never gets NOT_ENOUGH_REPLICAS.

use josef_protocol::messages::produce_request::PartitionProduceData;
use josef_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use josef_protocol::messages::{ProduceRequest, ProduceResponse};
use josef_protocol::{ErrorCode, RequestHeader, StrBytes};
use josef_records::prepare::{
    check_produce_records, prepare_client_batch, PrepareError, PreparedRecords, ProduceFormat,
};
use josef_records::BatchHeader;

use crate::delayed_fetch::{DelayedOp, DelayedProduce, ProducingPartition};
use crate::dispatch::{reply, Reply};
use crate::kit::partition_store::{
    PartitionStore, PreparedBatch, ProduceError, Produced, TopicPartition,
};
use crate::partition::{ClientBatch, PartitionError, ProduceResult};
use crate::state::BrokerState;
use crate::topics::{now_ms, INTERNAL_TOPICS};

/// A refusal of the records by the produce path's own checks, as the partition's answer.
fn refused(e: PrepareError) -> ProduceError {
    let code = ErrorCode::from_i16(e.kafka_error_code()).unwrap_or(ErrorCode::InvalidRecord);
    // Kafka sends a message only with record-level errors (`RecordValidationException`);
    // batch-level ones are logged here so an operator still sees why.
    let message = e.error_message();
    if message.is_none() {
        tracing::debug!(error = %e, "produced batch refused");
    }
    ProduceError::Records {
        code,
        message,
        record_errors: e.into_record_errors(),
    }
}

/// B7 "Produce" steps 1–11 for one partition, through one [`PartitionStore::produce`]: the
/// store finds the partition, these checks and the preparation run against its settings, then
/// it appends.
fn produce_partition(
    store: &dyn PartitionStore,
    header: &RequestHeader,
    acks: i16,
    tp: TopicPartition<'_>,
    data: &PartitionProduceData,
    version: i16,
) -> Result<Produced, ProduceError> {
    let (topic_name, records) = (tp.topic, data.records.as_ref());
    let now = now_ms();
    // Step 1 is the store's (UNKNOWN_TOPIC_OR_PARTITION), with the parsed settings of the
    // partition's produce path (parsed when the partition opened and on every config change,
    // not per request).
    store.produce(tp, acks, now, &mut |settings| {
        let records = records.ok_or(ErrorCode::InvalidRecord)?;
        // Step 2: framing (`ProduceRequest.validateRecords`), before the acks and internal-topic
        // checks as in Kafka; Produce v0–v2 legacy message sets are checked when converted.
        let format = ProduceFormat::for_version(version);
        check_produce_records(records, format).map_err(refused)?;
        // Step 4.
        if !matches!(acks, -1..=1) {
            return Err(ErrorCode::InvalidRequiredAcks.into());
        }
        // Step 5.
        let client_id = header.client_id.as_deref().unwrap_or("");
        if INTERNAL_TOPICS.contains(&topic_name) && client_id != "__admin_client" {
            return Err(PartitionError::with(
                ErrorCode::InvalidTopicException,
                format!("Cannot append to internal topic {topic_name}"),
            )
            .into());
        }
        // Steps 7–9: up-conversion, validation, recompression, timestamp fix, in josef-records.
        let prepared =
            prepare_client_batch(records, format, &settings.validation, now).map_err(refused)?;
        let batch = match prepared.records {
            // The usual case: the producer's batch goes to the log as it came, unchanged but for
            // its offsets and epoch, which the log writes into a copy of the header.
            PreparedRecords::Shared(b) => ClientBatch::Shared(b),
            PreparedRecords::Owned(b) => ClientBatch::Owned(b),
        };
        // Steps 10–11 happen in the partition (min.insync.replicas for acks=-1, log limits,
        // producer state).
        Ok(PreparedBatch {
            batch,
            header: prepared.header,
        })
    })
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
    let mut results: Vec<Vec<Result<ProduceResult, ProduceError>>> =
        Vec::with_capacity(req.topic_data.len());
    let mut waiting: Vec<ProducingPartition> = Vec::new();
    let mut waiting_at: Vec<(usize, usize)> = Vec::new();
    let store = state.partition_store.as_ref();
    for (ti, t) in req.topic_data.iter().enumerate() {
        let mut parts = Vec::with_capacity(t.partition_data.len());
        for (pi, p) in t.partition_data.iter().enumerate() {
            let tp = TopicPartition {
                topic: &t.name,
                partition: p.index,
            };
            let result = if txn_without_id {
                Err(ErrorCode::TransactionalIdAuthorizationFailed.into())
            } else if let Some(&code) = unverified.get(&(t.name.to_string(), p.index)) {
                Err(code.into())
            } else {
                produce_partition(store, header, req.acks, tp, p, version)
            };
            let result = result.map(|produced| {
                if let Some(partition) = produced.wait_on {
                    waiting.push(ProducingPartition {
                        partition,
                        required_offset: produced.result.last_offset + 1,
                        min_insync_replicas: produced.min_insync_replicas,
                        leader_epoch: produced.result.leader_epoch,
                    });
                    waiting_at.push((ti, pi));
                }
                produced.result
            });
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
                    let (code, message, record_errors) = match e {
                        ProduceError::Partition(e) => (e.code, e.message, Vec::new()),
                        ProduceError::Records {
                            code,
                            message,
                            record_errors,
                        } => (code, message, record_errors),
                    };
                    tracing::debug!(topic = %t.name, partition = p.index, ?code, msg = ?message, "produce failed");
                    PartitionProduceResponse {
                        index: p.index,
                        error_code: code.code(),
                        base_offset: -1,
                        log_append_time_ms: -1,
                        log_start_offset: -1,
                        record_errors: record_errors
                            .into_iter()
                            .map(|r| BatchIndexAndErrorMessage {
                                batch_index: r.batch_index,
                                batch_index_error_message: Some(StrBytes::from(r.message)),
                                ..Default::default()
                            })
                            .collect(),
                        error_message: message.map(StrBytes::from),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BrokerConfig;
    use crate::connection::ConnectionInfo;
    use crate::log_storage::LogStorage;
    use crate::topics::lookups;
    use josef_protocol::messages::produce_request::TopicProduceData;
    use josef_protocol::ResponseBody;
    use josef_records::RecordBatchBuilder;
    use std::sync::Arc;

    /// A produce finds each of its partitions once (issue #23: the settings, the append and the
    /// acks=−1 wait each looked the topic up, under the topics' lock, three per partition).
    #[tokio::test(flavor = "current_thread")]
    async fn each_produced_partition_is_looked_up_once() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            log_dirs: vec![dir.path().to_path_buf()],
            log_storage: LogStorage::Memory,
            ..BrokerConfig::default()
        };
        let state = BrokerState::open(Arc::new(config), "c".into(), None).unwrap();
        state
            .topics
            .create("t", 3, std::collections::BTreeMap::new())
            .unwrap();
        let conn = ConnectionInfo::new("PLAINTEXT", 9092, "127.0.0.1:40000".parse().unwrap());
        let batch = RecordBatchBuilder::new()
            .record(1_700_000_000_000, Some(b"k"), Some(b"v"))
            .build_bytes()
            .unwrap();
        let mut per_acks = Vec::new();
        for acks in [-1, 1] {
            let req = ProduceRequest {
                acks,
                timeout_ms: 5000,
                topic_data: vec![TopicProduceData {
                    name: "t".into(),
                    partition_data: (0..3)
                        .map(|index| PartitionProduceData {
                            index,
                            records: Some(batch.clone()),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let before = lookups::made();
            let reply = handle(&state, &conn, &RequestHeader::default(), req, 9).await;
            let made = lookups::made() - before;
            let Reply::Body(ResponseBody::Produce(r)) = reply else {
                panic!("not a produce response")
            };
            let codes: Vec<i16> = r.responses[0]
                .partition_responses
                .iter()
                .map(|p| p.error_code)
                .collect();
            assert_eq!(codes, [0, 0, 0]);
            per_acks.push((acks, made));
        }
        assert_eq!(
            per_acks,
            [(-1, 3), (1, 3)],
            "(acks, lookups) for 3 partitions"
        );
    }
}
