//! The consumer group protocol (KIP-848): ConsumerGroupHeartbeat (68) and
//! ConsumerGroupDescribe (69), run on the group's coordinator shard like the classic APIs.
//! Each call first hands the shard the current topic image, so subscriptions (names and
//! regular expressions) and OffsetCommit's partition check see the topics as they are now.

use josef_group::consumer::{api as c, wire, TopicImage, TopicInfo};
use josef_group::{wire::ALL_GROUP_OPERATIONS, Errors, GroupResult};
use josef_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
};
use josef_protocol::RequestHeader;

use crate::connection::ConnectionInfo;
use crate::groups::ShardError;
use crate::state::BrokerState;
use crate::topics::TopicManager;

/// The topics consumer groups subscribe to: the cluster's image on a cluster node, the local
/// topics on one node (internal topics left out).
pub fn topic_image(state: &BrokerState) -> TopicImage {
    match state.cluster.as_deref() {
        Some(node) => node
            .log
            .image()
            .topics()
            .filter(|t| !crate::topics::INTERNAL_TOPICS.contains(&t.name.as_str()))
            .map(|t| {
                (
                    t.name.clone(),
                    TopicInfo::new(t.id, t.partitions.len() as i32),
                )
            })
            .collect(),
        None => local_topic_image(&state.topics),
    }
}

fn local_topic_image(topics: &TopicManager) -> TopicImage {
    topics
        .all()
        .into_iter()
        .filter(|t| !t.is_internal())
        .map(|t| {
            (
                t.name.clone(),
                TopicInfo::new(t.id, t.partitions.len() as i32),
            )
        })
        .collect()
}

/// Runs `f` after the shard has seen the current topic image; both results' records are
/// written together.
pub fn with_image<R>(
    coord: &mut crate::groups::Coordinator,
    now: i64,
    image: TopicImage,
    f: impl FnOnce(&mut crate::groups::Coordinator, i64) -> GroupResult<R>,
) -> GroupResult<R> {
    let first = coord.on_topics_changed(now, image);
    let mut second = f(coord, now);
    let mut records = first.records;
    records.append(&mut second.records);
    second.records = records;
    second
}

fn shard_error(e: ShardError) -> Errors {
    match e {
        ShardError::NotAvailable => Errors::CoordinatorNotAvailable,
        ShardError::NotCoordinator => Errors::NotCoordinator,
        ShardError::ProducerFenced => Errors::InvalidProducerEpoch,
        ShardError::LoadInProgress => Errors::CoordinatorLoadInProgress,
    }
}

/// ConsumerGroupHeartbeat (68).
pub async fn heartbeat(
    state: &BrokerState,
    conn: &ConnectionInfo,
    header: &RequestHeader,
    r: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    let req = wire::heartbeat_request(&r);
    let ctx = super::groups::ctx(header, conn);
    let image = topic_image(state);
    let shard = state
        .groups
        .shard(&state.topics, state.cluster.as_deref(), &req.group_id);
    let answer = match shard {
        Ok(shard) => {
            state
                .groups
                .run(&shard, |coord, now| {
                    with_image(coord, now, image, |coord, now| {
                        coord.consumer_group_heartbeat(now, &ctx, req)
                    })
                })
                .await
        }
        Err(e) => Err(e),
    };
    wire::heartbeat_response(
        &answer.unwrap_or_else(|e| c::ConsumerGroupHeartbeatResponse::error(shard_error(e), None)),
    )
}

/// ConsumerGroupDescribe (69): each group from its own shard, once its writes are committed.
pub async fn describe(
    state: &BrokerState,
    r: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let mut groups = Vec::with_capacity(r.group_ids.len());
    for id in &r.group_ids {
        let id = id.to_string();
        let answer = match state
            .groups
            .shard(&state.topics, state.cluster.as_deref(), &id)
        {
            Ok(shard) => {
                state
                    .groups
                    .read_committed(&shard, |coord| {
                        coord.consumer_group_describe(std::slice::from_ref(&id))
                    })
                    .await
            }
            Err(e) => Err(e),
        };
        match answer {
            Ok(d) => groups.extend(d),
            Err(e) => groups.push(c::DescribedConsumerGroup::error(&id, shard_error(e), None)),
        }
    }
    let ops = r
        .include_authorized_operations
        .then_some(ALL_GROUP_OPERATIONS);
    wire::describe_response(&groups, ops)
}
