//! Fetch (api 1): read up to the HW (or the LSO for read_committed), and if fewer than
//! `min_bytes` are there, park until an append to one of the partitions (each partition's watch
//! channel wakes the fetch at once) or `max_wait_ms`.
//!
//! Fetch sessions (KIP-227): this broker creates none (as a broker whose session cache is full
//! would): a full fetch gets session_id 0, so clients keep sending full fetches; an incremental
//! fetch gets FETCH_SESSION_ID_NOT_FOUND.

use std::sync::Arc;
use std::time::Duration;

use josef_protocol::messages::fetch_request::FetchPartition;
use josef_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use josef_protocol::messages::{FetchRequest, FetchResponse};
use josef_protocol::{ErrorCode, StrBytes, Uuid};

use crate::partition::{log_error_code, Partition};
use crate::state::BrokerState;

struct Wanted {
    topic: StrBytes,
    topic_id: Uuid,
    partitions: Vec<(FetchPartition, Result<Arc<Partition>, ErrorCode>)>,
}

/// Reads one partition into `out`; returns the bytes read.
fn read_partition(
    p: &Partition,
    fp: &FetchPartition,
    read_committed: bool,
    limit: i64,
    min_one: bool,
    out: &mut PartitionData,
) -> usize {
    let d = p.data.lock();
    if fp.current_leader_epoch >= 0 && fp.current_leader_epoch != p.leader_epoch {
        out.error_code = if fp.current_leader_epoch < p.leader_epoch {
            ErrorCode::FencedLeaderEpoch.code()
        } else {
            ErrorCode::UnknownLeaderEpoch.code()
        };
        out.high_watermark = -1;
        return 0;
    }
    let log_start = d.log.log_start_offset();
    let leo = d.log.log_end_offset();
    if fp.fetch_offset < log_start || fp.fetch_offset > leo {
        out.error_code = ErrorCode::OffsetOutOfRange.code();
        out.high_watermark = -1;
        out.last_stable_offset = -1;
        out.log_start_offset = -1;
        return 0;
    }
    let hw = d.log.high_watermark();
    let lso = d.last_stable_offset();
    out.high_watermark = hw;
    out.last_stable_offset = lso;
    out.log_start_offset = log_start;
    let bound = if read_committed { lso } else { hw };
    if read_committed {
        out.aborted_transactions = Some(Vec::new());
    }
    if limit <= 0 && !min_one {
        return 0;
    }
    let limit = limit.max(0) as usize;
    match d.log.read(fp.fetch_offset, limit, bound, min_one) {
        Ok(info) => {
            let n = info.records.len();
            if read_committed && n > 0 {
                out.aborted_transactions = Some(
                    d.log
                        .collect_aborted_transactions(fp.fetch_offset, bound)
                        .into_iter()
                        .map(|a| AbortedTransaction {
                            producer_id: a.producer_id,
                            first_offset: a.first_offset,
                            ..Default::default()
                        })
                        .collect(),
                );
            }
            out.records = Some(info.records);
            n
        }
        Err(e) => {
            out.error_code = log_error_code(&e).code();
            out.high_watermark = -1;
            out.last_stable_offset = -1;
            out.log_start_offset = -1;
            0
        }
    }
}

fn read_all(
    wanted: &[Wanted],
    read_committed: bool,
    max_bytes: i64,
    version: i16,
) -> (Vec<FetchableTopicResponse>, i64, bool) {
    let mut total: i64 = 0;
    let mut any_error = false;
    let mut topics = Vec::with_capacity(wanted.len());
    for w in wanted {
        let mut parts = Vec::with_capacity(w.partitions.len());
        for (fp, p) in &w.partitions {
            let mut out = PartitionData {
                partition_index: fp.partition,
                high_watermark: -1,
                last_stable_offset: -1,
                log_start_offset: -1,
                aborted_transactions: None,
                preferred_read_replica: -1,
                records: Some(bytes::Bytes::new()),
                ..Default::default()
            };
            match p {
                Err(code) => {
                    out.error_code = code.code();
                    any_error = true;
                }
                Ok(p) => {
                    let limit = i64::from(fp.partition_max_bytes).min(max_bytes - total);
                    // KIP-74: the first batch of the first non-empty partition comes whole.
                    let min_one = version >= 3 && total == 0;
                    let n = read_partition(p, fp, read_committed, limit, min_one, &mut out);
                    total += n as i64;
                    if out.error_code != 0 {
                        any_error = true;
                    }
                }
            }
            parts.push(out);
        }
        topics.push(FetchableTopicResponse {
            topic: w.topic.clone(),
            topic_id: w.topic_id,
            partitions: parts,
            ..Default::default()
        });
    }
    (topics, total, any_error)
}

/// Handles a Fetch request (possibly parking until data arrives).
pub async fn handle(state: &BrokerState, req: FetchRequest, version: i16) -> FetchResponse {
    if version >= 7 && req.session_epoch > 0 {
        return FetchResponse {
            error_code: ErrorCode::FetchSessionIdNotFound.code(),
            session_id: 0,
            ..Default::default()
        };
    }
    let read_committed = version >= 4 && req.isolation_level == 1;
    let cap = i64::from(state.config.fetch_max_bytes);
    let max_bytes = if version >= 3 {
        i64::from(req.max_bytes).min(cap)
    } else {
        cap
    };
    let min_bytes = i64::from(req.min_bytes).min(max_bytes);
    let mut wanted = Vec::with_capacity(req.topics.len());
    for t in req.topics {
        let topic = if version >= 13 {
            state.topics.get_by_id(&t.topic_id)
        } else {
            state.topics.get(&t.topic)
        };
        let partitions = t
            .partitions
            .into_iter()
            .map(|fp| {
                let p = match &topic {
                    None if version >= 13 => Err(ErrorCode::UnknownTopicId),
                    None => Err(ErrorCode::UnknownTopicOrPartition),
                    Some(topic) => usize::try_from(fp.partition)
                        .ok()
                        .and_then(|i| topic.partitions.get(i).cloned())
                        .ok_or(ErrorCode::UnknownTopicOrPartition),
                };
                (fp, p)
            })
            .collect();
        wanted.push(Wanted {
            topic: if version >= 13 {
                StrBytes::default()
            } else {
                t.topic
            },
            topic_id: t.topic_id,
            partitions,
        });
    }
    let deadline = tokio::time::Instant::now()
        + Duration::from_millis(u64::try_from(req.max_wait_ms).unwrap_or(0));
    loop {
        // Subscribe before reading so an append between the read and the wait is not missed.
        let mut watchers: Vec<_> = wanted
            .iter()
            .flat_map(|w| w.partitions.iter())
            .filter_map(|(_, p)| p.as_ref().ok().map(|p| p.subscribe()))
            .collect();
        let (topics, total, any_error) = read_all(&wanted, read_committed, max_bytes, version);
        let done = req.max_wait_ms <= 0
            || total >= min_bytes
            || any_error
            || watchers.is_empty()
            || tokio::time::Instant::now() >= deadline;
        if done {
            return FetchResponse {
                responses: topics,
                session_id: 0,
                ..Default::default()
            };
        }
        let changed =
            futures::future::select_all(watchers.iter_mut().map(|w| Box::pin(w.changed())));
        tokio::select! {
            _ = changed => {}
            _ = tokio::time::sleep_until(deadline) => {}
        }
    }
}
