//! Metadata (api 3): brokers, controller and topics from the state's
//! [`MetadataView`](crate::kit::MetadataView) (a single node's own topics, a cluster node's
//! metadata image, or a builder's view), with auto-creation through the view. The rules of the
//! request (which topics, name validation, whether it may create) are kept here, the same in
//! every mode.

use josef_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use josef_protocol::messages::{MetadataRequest, MetadataResponse};
use josef_protocol::{ErrorCode, StrBytes, Uuid};

use crate::connection::ConnectionInfo;
use crate::kit::metadata_view::TopicMetadata;
use crate::state::BrokerState;
use crate::topics::validate_topic_name;

/// Kafka's "authorized operations not requested" marker.
const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

/// One topic of the view, in the response's shape.
fn topic_response(t: TopicMetadata) -> MetadataResponseTopic {
    MetadataResponseTopic {
        error_code: 0,
        name: Some(StrBytes::from(t.name)),
        topic_id: t.topic_id,
        is_internal: t.is_internal,
        partitions: t
            .partitions
            .into_iter()
            .map(|p| MetadataResponsePartition {
                error_code: p.error.code(),
                partition_index: p.partition_index,
                leader_id: p.leader_id,
                leader_epoch: p.leader_epoch,
                replica_nodes: p.replica_nodes.into_iter().collect(),
                isr_nodes: p.isr_nodes.into_iter().collect(),
                offline_replicas: p.offline_replicas.into_iter().collect(),
                ..Default::default()
            })
            .collect(),
        topic_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
        ..Default::default()
    }
}

fn missing(name: Option<StrBytes>, id: Uuid, code: ErrorCode) -> MetadataResponseTopic {
    MetadataResponseTopic {
        error_code: code.code(),
        name,
        topic_id: id,
        is_internal: false,
        partitions: vec![],
        topic_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
        ..Default::default()
    }
}

/// Handles a Metadata request from the state's [`MetadataView`](crate::kit::MetadataView).
pub async fn handle(
    state: &BrokerState,
    conn: &ConnectionInfo,
    req: MetadataRequest,
    version: i16,
) -> MetadataResponse {
    let live = state.metadata_view.as_ref();
    // One moment of the view for the whole response (Kafka's one cache snapshot per request).
    let mut snapshot = live.snapshot();
    let mut view = snapshot.as_deref().unwrap_or(live);
    let mut resp = MetadataResponse {
        brokers: view
            .brokers(conn)
            .into_iter()
            .map(|b| MetadataResponseBroker {
                node_id: b.node_id,
                host: StrBytes::from(b.host),
                port: b.port,
                rack: b.rack.map(StrBytes::from),
                ..Default::default()
            })
            .collect(),
        cluster_id: Some(StrBytes::from(state.cluster_id.as_str())),
        controller_id: view.controller_id(conn),
        cluster_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
        ..Default::default()
    };
    let all = match &req.topics {
        None => true,
        Some(t) => t.is_empty() && version == 0,
    };
    if all {
        resp.topics = view.topics(conn).into_iter().map(topic_response).collect();
        return resp;
    }
    let allow_auto =
        state.config.auto_create_topics_enable && (version < 4 || req.allow_auto_topic_creation);
    for rt in req.topics.unwrap_or_default() {
        let name = rt.name.filter(|n| !n.is_empty());
        let Some(name) = name else {
            // By id (v12).
            match view.topic_by_id(rt.topic_id, conn) {
                Some(t) => resp.topics.push(topic_response(t)),
                None => resp
                    .topics
                    .push(missing(None, rt.topic_id, ErrorCode::UnknownTopicId)),
            }
            continue;
        };
        if let Some(t) = view.topic(&name, conn) {
            resp.topics.push(topic_response(t));
            continue;
        }
        if validate_topic_name(&name).is_err() {
            resp.topics.push(missing(
                Some(name),
                Uuid::ZERO,
                ErrorCode::InvalidTopicException,
            ));
            continue;
        }
        if !allow_auto {
            resp.topics.push(missing(
                Some(name),
                Uuid::ZERO,
                ErrorCode::UnknownTopicOrPartition,
            ));
            continue;
        }
        let created = match live.create_topic(&name).await {
            Ok(()) => {
                // The rest of the response from a moment that has the new topic.
                snapshot = live.snapshot();
                view = snapshot.as_deref().unwrap_or(live);
                // Deleted again before we looked: as if it had never been there.
                view.topic(&name, conn)
                    .ok_or(ErrorCode::UnknownTopicOrPartition)
            }
            Err(code) => Err(code),
        };
        match created {
            Ok(t) => resp.topics.push(topic_response(t)),
            Err(code) => resp.topics.push(missing(Some(name), Uuid::ZERO, code)),
        }
    }
    resp
}
