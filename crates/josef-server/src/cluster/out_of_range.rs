//! A follower's answer to OFFSET_OUT_OF_RANGE from its leader (Kafka's
//! `AbstractFetcherThread.handleOutOfRangeError` → `fetchOffsetAndTruncate`): ListOffsets LATEST
//! and EARLIEST to the leader with this broker's replica id (so LATEST is the leader's LEO, not
//! its HW), then josef-partition's [`Partition::on_offset_out_of_range`] truncates to the
//! leader's LEO or restarts the log at the leader's log start. It runs beside the fetcher, which
//! backs the partition off meanwhile; an answer for a state the partition left is dropped there.

use std::sync::Arc;
use std::time::Duration;

use super::channel::exchange;
use super::ClusterNode;
use crate::peer_connection::PeerStream;
use crate::topics::now_ms;
use bytes::BytesMut;
use josef_partition::{FollowerFetchRequest, OutOfRangeOutcome, Partition};
use josef_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use josef_protocol::messages::ListOffsetsRequest;
use josef_protocol::{
    encode_request_frame, ApiKey, ErrorCode, RequestBody, RequestHeader, ResponseBody, StrBytes,
};

/// ListOffsets v4: the first with `current_leader_epoch`, so a deposed leader answers
/// FENCED/NOT_LEADER rather than its own offsets.
const LIST_OFFSETS_VERSION: i16 = 4;
const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
/// A leader that does not answer within this is asked again on the next out-of-range fetch.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Resolves the out-of-range fetch `sent` for `partition` in the background.
pub(super) fn spawn(node: Arc<ClusterNode>, partition: Arc<Partition>, sent: FollowerFetchRequest) {
    tokio::spawn(async move {
        let (topic, index) = (partition.topic.clone(), partition.index);
        match tokio::time::timeout(TIMEOUT, leader_offsets(&node, &partition, &sent)).await {
            Ok(Ok((latest, earliest))) => {
                match partition.on_offset_out_of_range(&sent, latest, earliest, now_ms()) {
                    Ok(OutOfRangeOutcome::Stale) | Ok(OutOfRangeOutcome::Unchanged) => {}
                    Ok(outcome) => {
                        tracing::info!(%topic, partition = index, ?outcome, leader_log_end = latest, leader_log_start = earliest, "follower out of range: reset to the leader's log")
                    }
                    Err(e) => {
                        tracing::warn!(%topic, partition = index, error = %e, "follower out of range: truncation failed")
                    }
                }
            }
            Ok(Err(why)) => {
                tracing::debug!(%topic, partition = index, %why, "follower out of range: no offsets from the leader")
            }
            Err(_) => {
                tracing::debug!(%topic, partition = index, "follower out of range: ListOffsets timed out")
            }
        }
    });
}

/// The leader's `(LEO, log start)` for the partition, by ListOffsets over one connection.
async fn leader_offsets(
    node: &ClusterNode,
    partition: &Partition,
    sent: &FollowerFetchRequest,
) -> Result<(i64, i64), String> {
    let endpoint = node
        .log
        .image()
        .broker(sent.leader_id)
        .and_then(|b| b.listener(node.inter_broker.listener()))
        .map(|e| format!("{}:{}", e.host, e.port))
        .ok_or_else(|| format!("no endpoint for leader {}", sent.leader_id))?;
    let client_id = format!("josef-replica-fetcher-{}", node.node_id);
    let mut stream = node
        .inter_broker
        .connect(&endpoint, &client_id)
        .await
        .map_err(|e| e.to_string())?;
    let latest = list_offset(&mut stream, node.node_id, partition, sent, LATEST, 1).await?;
    let earliest = list_offset(&mut stream, node.node_id, partition, sent, EARLIEST, 2).await?;
    Ok((latest, earliest))
}

async fn list_offset(
    stream: &mut PeerStream,
    replica_id: i32,
    partition: &Partition,
    sent: &FollowerFetchRequest,
    timestamp: i64,
    correlation_id: i32,
) -> Result<i64, String> {
    let req = ListOffsetsRequest {
        replica_id,
        topics: vec![ListOffsetsTopic {
            name: StrBytes::from(partition.topic.as_str()),
            partitions: vec![ListOffsetsPartition {
                partition_index: partition.index,
                current_leader_epoch: sent.current_leader_epoch,
                timestamp,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let header = RequestHeader {
        request_api_key: ApiKey::ListOffsets as i16,
        request_api_version: LIST_OFFSETS_VERSION,
        correlation_id,
        client_id: Some(StrBytes::from(format!(
            "josef-replica-fetcher-{replica_id}"
        ))),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_request_frame(&header, &RequestBody::ListOffsets(req), &mut buf)
        .map_err(|e| e.to_string())?;
    let body = exchange(
        stream,
        &buf,
        ApiKey::ListOffsets,
        LIST_OFFSETS_VERSION,
        correlation_id,
    )
    .await
    .map_err(|_| "ListOffsets exchange failed".to_string())?;
    let ResponseBody::ListOffsets(resp) = body else {
        return Err("not a ListOffsets answer".into());
    };
    let p = resp
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .find(|p| p.partition_index == partition.index)
        .ok_or("no partition in the ListOffsets answer")?;
    match ErrorCode::from_i16(p.error_code) {
        Some(ErrorCode::None) if p.offset >= 0 => Ok(p.offset),
        code => Err(format!(
            "ListOffsets answered {code:?}, offset {}",
            p.offset
        )),
    }
}
