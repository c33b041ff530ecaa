//! ListOffsets (api 2, v1+): earliest, latest, max timestamp, earliest local, latest tiered, and
//! lookups by timestamp, bounded by the HW (or the LSO for read_committed).

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
