//! ListOffsets (api 2): earliest, latest, max timestamp, earliest local, latest tiered, and
//! lookups by timestamp, bounded by the HW (or the LSO for read_committed); v0 answers Kafka's
//! legacy old_style_offsets (segment base offsets chosen by segment mtime).

use std::collections::HashSet;

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
                read_committed,
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

fn answer(
    state: &BrokerState,
    topic: &str,
    rp: &josef_protocol::messages::list_offsets_request::ListOffsetsPartition,
    version: i16,
    read_committed: bool,
    seen: &mut HashSet<(String, i32)>,
    out: &mut ListOffsetsPartitionResponse,
) -> ErrorCode {
    if !seen.insert((topic.to_string(), rp.partition_index)) {
        return ErrorCode::InvalidRequest;
    }
    let Some(p) = state.topics.partition(topic, rp.partition_index) else {
        return ErrorCode::UnknownTopicOrPartition;
    };
    if rp.current_leader_epoch >= 0 && rp.current_leader_epoch != p.leader_epoch {
        return if rp.current_leader_epoch < p.leader_epoch {
            ErrorCode::FencedLeaderEpoch
        } else {
            ErrorCode::UnknownLeaderEpoch
        };
    }
    match min_version(rp.timestamp) {
        Some(v) if version >= v => {}
        _ => return ErrorCode::UnsupportedVersion,
    }
    let d = p.data.lock();
    let bound = if read_committed {
        d.last_stable_offset()
    } else {
        d.log.high_watermark()
    };
    let found = match rp.timestamp {
        LATEST => {
            out.offset = bound;
            if version >= 4 {
                out.leader_epoch = p.leader_epoch;
            }
            return ErrorCode::None;
        }
        EARLIEST | EARLIEST_LOCAL => {
            out.offset = d.log.log_start_offset();
            if version >= 4 {
                out.leader_epoch = p.leader_epoch;
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
                out.leader_epoch = p.leader_epoch;
            }
            ErrorCode::None
        }
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
                            let segments: Vec<SegmentInfo> = d
                                .log
                                .segments()
                                .map(|s| SegmentInfo {
                                    base_offset: s.base_offset(),
                                    last_modified_ms: s.last_modified_ms(),
                                    size: s.size(),
                                })
                                .collect();
                            let offsets = legacy_fetch_offsets_before(
                                &segments,
                                d.log.log_start_offset(),
                                d.log.log_end_offset(),
                                now,
                                rp.timestamp,
                                rp.max_num_offsets,
                            );
                            match offsets {
                                Some(offsets) if from_consumer => {
                                    out.old_style_offsets =
                                        cap_at_high_watermark(offsets, d.log.high_watermark());
                                }
                                Some(offsets) => out.old_style_offsets = offsets,
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

const CONSUMER_REPLICA_ID: i32 = -1;

/// What the legacy lookup needs of one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SegmentInfo {
    base_offset: i64,
    last_modified_ms: i64,
    size: u32,
}

/// Kafka's `legacyFetchOffsetsBefore`: the candidate offsets are every segment's base offset (not
/// below the log start) with the segment's mtime, plus the LEO stamped `now` when the last segment
/// holds data. -1 (latest) starts from the last candidate, -2 (earliest) from the first, a
/// timestamp from the last candidate whose time is <= it; from there up to `max_num` candidates
/// going back, in descending offset order. `None` for a negative `max_num` (Kafka fails there).
fn legacy_fetch_offsets_before(
    segments: &[SegmentInfo],
    log_start_offset: i64,
    log_end_offset: i64,
    now_ms: i64,
    timestamp: i64,
    max_num: i32,
) -> Option<Vec<i64>> {
    let mut candidates: Vec<(i64, i64)> = segments
        .iter()
        .map(|s| (s.base_offset.max(log_start_offset), s.last_modified_ms))
        .collect();
    if segments.last().is_some_and(|s| s.size > 0) {
        candidates.push((log_end_offset, now_ms));
    }
    // Index one past the starting candidate (0: nothing qualifies).
    let start = match timestamp {
        LATEST => candidates.len(),
        EARLIEST => candidates.len().min(1),
        ts => candidates
            .iter()
            .rposition(|&(_, t)| t <= ts)
            .map_or(0, |i| i + 1),
    };
    let max_num = usize::try_from(max_num).ok()?;
    let mut offsets: Vec<i64> = candidates[..start]
        .iter()
        .rev()
        .take(max_num)
        .map(|&(o, _)| o)
        .collect();
    offsets.sort_unstable_by(|a, b| b.cmp(a));
    Some(offsets)
}

/// For consumers, offsets above the HW are replaced by the HW (`Partition.legacyFetchOffsetsForTimestamp`).
fn cap_at_high_watermark(offsets: Vec<i64>, hw: i64) -> Vec<i64> {
    if !offsets.iter().any(|&o| o > hw) {
        return offsets;
    }
    std::iter::once(hw)
        .chain(offsets.into_iter().skip_while(|&o| o > hw))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(base_offset: i64, last_modified_ms: i64, size: u32) -> SegmentInfo {
        SegmentInfo {
            base_offset,
            last_modified_ms,
            size,
        }
    }

    #[test]
    fn v0_latest_is_the_leo_then_segment_bases_descending() {
        let segs = [seg(0, 100, 10), seg(50, 200, 10), seg(90, 300, 10)];
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 0, 120, 1_000, LATEST, 10),
            Some(vec![120, 90, 50, 0])
        );
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 0, 120, 1_000, LATEST, 1),
            Some(vec![120])
        );
    }

    #[test]
    fn v0_earliest_is_the_log_start_offset() {
        let segs = [seg(0, 100, 10), seg(50, 200, 10)];
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 7, 60, 1_000, EARLIEST, 5),
            Some(vec![7])
        );
    }

    #[test]
    fn v0_timestamp_picks_segments_modified_at_or_before_it() {
        let segs = [seg(0, 100, 10), seg(50, 200, 10), seg(90, 300, 10)];
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 0, 120, 1_000, 250, 10),
            Some(vec![50, 0])
        );
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 0, 120, 1_000, 99, 10),
            Some(vec![])
        );
        // The LEO counts as modified now.
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 0, 120, 1_000, 1_000, 2),
            Some(vec![120, 90])
        );
    }

    #[test]
    fn v0_empty_last_segment_adds_no_leo_entry() {
        let segs = [seg(0, 100, 10), seg(40, 200, 0)];
        assert_eq!(
            legacy_fetch_offsets_before(&segs, 0, 40, 1_000, LATEST, 10),
            Some(vec![40, 0])
        );
    }

    #[test]
    fn v0_negative_max_num_offsets_fails_like_kafka() {
        assert_eq!(
            legacy_fetch_offsets_before(&[seg(0, 1, 1)], 0, 1, 2, LATEST, -1),
            None
        );
    }

    #[test]
    fn v0_consumer_offsets_above_the_hw_become_the_hw() {
        assert_eq!(cap_at_high_watermark(vec![120, 90, 50], 100), [100, 90, 50]);
        assert_eq!(cap_at_high_watermark(vec![120, 110], 100), [100]);
        assert_eq!(cap_at_high_watermark(vec![90, 50], 100), [90, 50]);
    }
}
