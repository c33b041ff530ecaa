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

use crate::kit::partition_store::TopicPartition;
use crate::partition::FetchIsolation;
use crate::state::BrokerState;

use josef_partition::offsets_for_time::{
    EARLIEST_LOCAL_TIMESTAMP as EARLIEST_LOCAL, EARLIEST_TIMESTAMP as EARLIEST,
    LATEST_TIERED_TIMESTAMP as LATEST_TIERED, LATEST_TIMESTAMP as LATEST, MAX_TIMESTAMP,
};

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
    let store = state.partition_store.as_ref();
    let tp = TopicPartition {
        topic,
        partition: rp.partition_index,
    };
    let leader_epoch =
        match store.check_leader_epoch(tp, rp.current_leader_epoch, isolation.leader_only) {
            Ok(epoch) => epoch,
            Err(e) => return e,
        };
    match min_version(rp.timestamp) {
        Some(v) if version >= v => {}
        _ => return ErrorCode::UnsupportedVersion,
    }
    let bound = if !isolation.from_consumer {
        FetchIsolation::LogEnd
    } else if isolation.read_committed {
        FetchIsolation::TxnCommitted
    } else {
        FetchIsolation::HighWatermark
    };
    match store.offset_for_timestamp(tp, rp.timestamp, bound) {
        Ok(Some((offset, timestamp))) => {
            out.offset = offset;
            out.timestamp = timestamp;
            if version >= 4 {
                out.leader_epoch = leader_epoch;
            }
            ErrorCode::None
        }
        Ok(None) => ErrorCode::None,
        Err(e) => e,
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
                    let tp = TopicPartition {
                        topic: &t.name,
                        partition: rp.partition_index,
                    };
                    match state.partition_store.legacy_offsets(
                        tp,
                        rp.timestamp,
                        rp.max_num_offsets,
                        from_consumer,
                        now,
                    ) {
                        Ok(offsets) => out.old_style_offsets = offsets.into(),
                        Err(e) => out.error_code = e.code(),
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
