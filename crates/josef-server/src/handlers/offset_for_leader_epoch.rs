//! OffsetsForLeaderEpoch (api 23, KIP-101/KIP-320): for each partition, the end offset of the
//! requested leader epoch on this broker's log (the start of the next larger epoch, or the LEO for
//! the current one). Answered by the leader only; consumers use it to check their position after a
//! leader change, older followers to find where to truncate.

use crate::kit::partition_store::TopicPartition;
use crate::state::BrokerState;
use josef_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use josef_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

/// Handles an OffsetsForLeaderEpoch request.
pub fn handle(
    state: &BrokerState,
    req: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    let topics = req
        .topics
        .iter()
        .map(|t| OffsetForLeaderTopicResult {
            topic: t.topic.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut out = EpochEndOffset {
                        partition: p.partition,
                        leader_epoch: -1,
                        end_offset: -1,
                        ..Default::default()
                    };
                    let tp = TopicPartition {
                        topic: &t.topic,
                        partition: p.partition,
                    };
                    match state.partition_store.end_offset_for_leader_epoch(
                        tp,
                        p.current_leader_epoch,
                        p.leader_epoch,
                    ) {
                        Ok(e) => {
                            out.leader_epoch = e.epoch;
                            out.end_offset = e.end_offset;
                        }
                        Err(code) => out.error_code = code.code(),
                    }
                    out
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    OffsetForLeaderEpochResponse {
        topics,
        ..Default::default()
    }
}
