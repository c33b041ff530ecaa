//! ListOffsets (api 2): earliest, latest, max timestamp, earliest local, latest tiered, and
//! lookups by timestamp, bounded by the HW (or the LSO for read_committed); v0 answers Kafka's
//! legacy old_style_offsets (segment base offsets chosen by segment mtime, `josef_log::legacy_offsets`).

use std::collections::HashSet;

use josef_protocol::constants::CONSUMER_REPLICA_ID;
use josef_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use josef_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};
use josef_protocol::ErrorCode;

use crate::partition::log_error_code;
use crate::state::BrokerState;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;

fn min_version(ts: i64) -> Option<i16> {
    match ts {
        LATEST | EARLIEST => Some(1),
        MAX_TIMESTAMP => Some(7),
        EARLIEST_LOCAL => Some(8),
        LATEST_TIERED => Some(9),
        t if t >= 0 => Some(1),
        _ => None,
    }
}

/// Handles a ListOffsets request.
pub fn handle(state: &BrokerState, req: ListOffsetsRequest, version: i16) -> ListOffsetsResponse {
    if version == 0 {
        return handle_v0(state, &req);
    }
    let read_committed = version >= 2 && req.isolation_level == 1;
    let from_consumer = req.replica_id == CONSUMER_REPLICA_ID;
    let leader_only = req.replica_id != DEBUGGING_REPLICA_ID;
    let mut seen = HashSet::new();
    let mut topics = Vec::with_capacity(req.topics.len());
    for t in &req.topics {
        let mut parts = Vec::with_capacity(t.partitions.len());
        for rp in &t.partitions {
            let mut out = ListOffsetsPartitionResponse {
                partition_index: rp.partition_index,
                timestamp: -1,
                offset: -1,
                leader_epoch: -1,
                ..Default::default()
            };
            let code = answer(
                state,
                &t.name,
                rp,
                version,
                Isolation {
                    read_committed,
                    from_consumer,
                    leader_only,
                },
                &mut seen,
                &mut out,
            );
            out.error_code = code.code();
            parts.push(out);
        }
        topics.push(ListOffsetsTopicResponse {
            name: t.name.clone(),
            partitions: parts,
            ..Default::default()
        });
    }
    ListOffsetsResponse {
        topics,
        ..Default::default()
    }
}

/// Whose view of the partition a request asks for.
struct Isolation {
    /// isolation_level 1: the bound is the LSO, else the HW.
    read_committed: bool,
    /// A consumer's request (replica id -1), not a replica's or a debugging tool's.
    from_consumer: bool,
    /// Only the leader answers, except to a debugging tool (replica id −2), which may read any
    /// replica's offsets (Kafka's `fetchOnlyFromLeader`).
    leader_only: bool,
}

fn answer(
    state: &BrokerState,
    topic: &str,
    rp: &josef_protocol::messages::list_offsets_request::ListOffsetsPartition,
    version: i16,
    isolation: Isolation,
    seen: &mut HashSet<(String, i32)>,
    out: &mut ListOffsetsPartitionResponse,
) -> ErrorCode {
    if !seen.insert((topic.to_string(), rp.partition_index)) {
        return ErrorCode::InvalidRequest;
    }
    let Some(p) = state.topics.partition(topic, rp.partition_index) else {
        return ErrorCode::UnknownTopicOrPartition;
    };
    let leader_epoch = {
        let d = p.data.lock();
        if let Err(e) = d
            .replication
            .check_current_leader_epoch(rp.current_leader_epoch, isolation.leader_only)
        {
            return e;
        }
        d.replication.leader_epoch()
    };
    match min_version(rp.timestamp) {
        Some(v) if version >= v => {}
        _ => return ErrorCode::UnsupportedVersion,
    }
    let d = p.data.lock();
    // A replica's (or a debugging tool's) request has no isolation level: it reads to the LEO,
    // which is what a follower out of range truncates to (Kafka's `fetchOffsetForTimestamp`).
    let bound = if !isolation.from_consumer {
        d.log.log_end_offset()
    } else if isolation.read_committed {
        d.last_stable_offset()
    } else {
        d.log.high_watermark()
    };
    // A leader elected moments ago has a HW that only moves once its followers fetch in its
    // epoch; until it reaches the epoch's start, its HW (and LSO) is older than what the previous
    // leader already served. Kafka (`Partition.fetchOffsetForTimestamp`) answers a consumer
    // OFFSET_NOT_AVAILABLE then, for the end offset and for a timestamp found beyond the bound,
    // and the client retries.
    let lagging = isolation.from_consumer
        && d.replication
            .high_watermark_lags_epoch_start(d.log.high_watermark());
    let found = match rp.timestamp {
        LATEST if lagging => return ErrorCode::OffsetNotAvailable,
        LATEST => {
            out.offset = bound;
            if version >= 4 {
                out.leader_epoch = leader_epoch;
            }
            return ErrorCode::None;
        }
        EARLIEST | EARLIEST_LOCAL => {
            out.offset = d.log.log_start_offset();
            if version >= 4 {
                out.leader_epoch = leader_epoch;
            }
            return ErrorCode::None;
        }
        LATEST_TIERED => return ErrorCode::None,
        MAX_TIMESTAMP => d.log.offset_of_max_timestamp(),
        ts => d.log.fetch_offset_by_timestamp(ts),
    };
    match found {
        Ok(Some(to)) if to.offset < bound => {
            out.offset = to.offset;
            out.timestamp = to.timestamp;
            if version >= 4 {
                out.leader_epoch = leader_epoch;
            }
            ErrorCode::None
        }
        Ok(Some(_)) if lagging => ErrorCode::OffsetNotAvailable,
        Ok(_) => ErrorCode::None,
        Err(e) => log_error_code(&e),
    }
}

/// ListOffsets v0 (`KafkaApis.handleListOffsetRequestV0`): per partition, up to max_num_offsets
/// offsets in old_style_offsets; no duplicate-partition check, no leader epochs.
fn handle_v0(state: &BrokerState, req: &ListOffsetsRequest) -> ListOffsetsResponse {
    let from_consumer = req.replica_id == CONSUMER_REPLICA_ID;
    let now = crate::topics::now_ms();
    let topics = req
        .topics
        .iter()
        .map(|t| ListOffsetsTopicResponse {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|rp| {
                    let mut out = ListOffsetsPartitionResponse {
                        partition_index: rp.partition_index,
                        timestamp: -1,
                        offset: -1,
                        leader_epoch: -1,
                        ..Default::default()
                    };
                    match state.topics.partition(&t.name, rp.partition_index) {
                        None => out.error_code = ErrorCode::UnknownTopicOrPartition.code(),
                        Some(p) => {
                            let d = p.data.lock();
                            let offsets =
                                d.log
                                    .legacy_offsets_before(rp.timestamp, rp.max_num_offsets, now);
                            match offsets {
                                Some(offsets) if from_consumer => {
                                    out.old_style_offsets =
                                        josef_log::legacy_offsets::cap_at_high_watermark(
                                            offsets,
                                            d.log.high_watermark(),
                                        )
                                        .into();
                                }
                                Some(offsets) => out.old_style_offsets = offsets.into(),
                                // Kafka fails on a negative max_num_offsets (a negative array size).
                                None => out.error_code = ErrorCode::UnknownServerError.code(),
                            }
                        }
                    }
                    out
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    ListOffsetsResponse {
        topics,
        ..Default::default()
    }
}

/// `ListOffsetsRequest.DEBUGGING_REPLICA_ID`: a tool reading a follower's offsets.
const DEBUGGING_REPLICA_ID: i32 = -2;
