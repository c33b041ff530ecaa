//! ConsumerGroupHeartbeat and ConsumerGroupDescribe: generated wire messages (every version)
//! to and from the core types of [`super::api`].

use josef_protocol::messages::{
    consumer_group_describe_response as dr, consumer_group_heartbeat_response as hr,
    ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest as WRequest,
    ConsumerGroupHeartbeatResponse as WResponse,
};
use josef_protocol::StrBytes;

use super::api::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, DescribedConsumerGroup,
    DescribedTopicPartitions,
};
use super::types::{normalize, Assignment};

fn s(v: &str) -> StrBytes {
    StrBytes::from(v)
}

/// ConsumerGroupHeartbeat request → core (v0 has no regex field: it arrives as `None`).
pub fn heartbeat_request(r: &WRequest) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest {
        group_id: r.group_id.to_string(),
        member_id: r.member_id.to_string(),
        member_epoch: r.member_epoch,
        instance_id: r.instance_id.as_ref().map(|v| v.to_string()),
        rack_id: r.rack_id.as_ref().map(|v| v.to_string()),
        rebalance_timeout_ms: r.rebalance_timeout_ms,
        subscribed_topic_names: r
            .subscribed_topic_names
            .as_ref()
            .map(|n| n.iter().map(|t| t.to_string()).collect()),
        subscribed_topic_regex: r.subscribed_topic_regex.as_ref().map(|v| v.to_string()),
        server_assignor: r.server_assignor.as_ref().map(|v| v.to_string()),
        topic_partitions: r.topic_partitions.as_ref().map(|tps| {
            let mut a = Assignment::new();
            for tp in tps {
                a.entry(tp.topic_id)
                    .or_default()
                    .extend(tp.partitions.iter().copied());
            }
            normalize(a)
        }),
    }
}

/// Core → ConsumerGroupHeartbeat response.
pub fn heartbeat_response(r: &ConsumerGroupHeartbeatResponse) -> WResponse {
    WResponse {
        error_code: r.error.code(),
        error_message: r.error_message.as_deref().map(s),
        member_id: r.member_id.as_deref().map(s),
        member_epoch: r.member_epoch,
        heartbeat_interval_ms: r.heartbeat_interval_ms,
        assignment: r.assignment.as_ref().map(|a| hr::Assignment {
            topic_partitions: a
                .iter()
                .map(|(t, ps)| hr::TopicPartitions {
                    topic_id: *t,
                    partitions: ps.iter().copied().collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn described(tps: &[DescribedTopicPartitions]) -> dr::Assignment {
    dr::Assignment {
        topic_partitions: tps
            .iter()
            .map(|t| dr::TopicPartitions {
                topic_id: t.topic_id,
                topic_name: s(&t.topic_name),
                partitions: t.partitions.iter().copied().collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Core → ConsumerGroupDescribe response. `authorized_operations` is sent when asked for.
pub fn describe_response(
    groups: &[DescribedConsumerGroup],
    authorized_operations: Option<i32>,
) -> ConsumerGroupDescribeResponse {
    ConsumerGroupDescribeResponse {
        groups: groups
            .iter()
            .map(|g| dr::DescribedGroup {
                error_code: g.error.code(),
                error_message: g.error_message.as_deref().map(s),
                group_id: s(&g.group_id),
                group_state: s(&g.group_state),
                group_epoch: g.group_epoch,
                assignment_epoch: g.assignment_epoch,
                assignor_name: s(&g.assignor_name),
                members: g
                    .members
                    .iter()
                    .map(|m| dr::Member {
                        member_id: s(&m.member_id),
                        instance_id: m.instance_id.as_deref().map(s),
                        rack_id: m.rack_id.as_deref().map(s),
                        member_epoch: m.member_epoch,
                        client_id: s(&m.client_id),
                        client_host: s(&m.client_host),
                        subscribed_topic_names: m
                            .subscribed_topic_names
                            .iter()
                            .map(|n| s(n))
                            .collect(),
                        subscribed_topic_regex: m.subscribed_topic_regex.as_deref().map(s),
                        assignment: described(&m.assignment),
                        target_assignment: described(&m.target_assignment),
                        ..Default::default()
                    })
                    .collect(),
                authorized_operations: authorized_operations.unwrap_or(i32::MIN),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
