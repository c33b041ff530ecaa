//! Metadata (api 3): brokers = this node at its advertised address, controller = self, topics
//! with auto-creation.

use std::collections::BTreeMap;
use std::sync::Arc;

use josef_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use josef_protocol::messages::{MetadataRequest, MetadataResponse};
use josef_protocol::{ErrorCode, StrBytes, Uuid};

use crate::connection::ConnectionInfo;
use crate::state::BrokerState;
use crate::topics::{validate_topic_name, Topic, GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC};

/// Kafka's "authorized operations not requested" marker.
const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

/// The metadata of one topic as this node reports it.
pub fn topic_metadata(state: &BrokerState, t: &Topic) -> MetadataResponseTopic {
    let node = state.config.node_id;
    MetadataResponseTopic {
        error_code: 0,
        name: Some(StrBytes::from(t.name.as_str())),
        topic_id: t.id,
        is_internal: t.is_internal(),
        partitions: t
            .partitions
            .iter()
            .map(|p| MetadataResponsePartition {
                error_code: 0,
                partition_index: p.index,
                leader_id: node,
                leader_epoch: p.leader_epoch(),
                replica_nodes: josef_protocol::smallvec![node],
                isr_nodes: josef_protocol::smallvec![node],
                offline_replicas: josef_protocol::smallvec![],
                ..Default::default()
            })
            .collect(),
        topic_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
        ..Default::default()
    }
}

/// Creates a topic a client named, with the broker defaults (or the internal topics' own).
pub fn auto_create(state: &BrokerState, name: &str) -> Result<Arc<Topic>, ErrorCode> {
    if name == GROUP_METADATA_TOPIC || name == TRANSACTION_STATE_TOPIC {
        return state.topics.ensure_internal(name).map_err(|e| e.code);
    }
    match state
        .topics
        .create(name, state.config.num_partitions, BTreeMap::new())
    {
        Ok(t) => Ok(t),
        Err(e) if e.code == josef_protocol::ErrorCode::TopicAlreadyExists => state
            .topics
            .get(name)
            .ok_or(ErrorCode::UnknownTopicOrPartition),
        Err(e) => Err(e.code),
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

/// Handles a Metadata request.
pub fn handle(
    state: &BrokerState,
    conn: &ConnectionInfo,
    req: MetadataRequest,
    version: i16,
) -> MetadataResponse {
    let (host, port) = state.advertised(conn);
    let mut resp = MetadataResponse {
        brokers: vec![MetadataResponseBroker {
            node_id: state.config.node_id,
            host: StrBytes::from(host),
            port: i32::from(port),
            rack: None,
            ..Default::default()
        }],
        cluster_id: Some(StrBytes::from(state.cluster_id.as_str())),
        controller_id: state.config.node_id,
        cluster_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
        ..Default::default()
    };
    let all = match &req.topics {
        None => true,
        Some(t) => t.is_empty() && version == 0,
    };
    if all {
        resp.topics = state
            .topics
            .all()
            .iter()
            .map(|t| topic_metadata(state, t))
            .collect();
        return resp;
    }
    let allow_auto =
        state.config.auto_create_topics_enable && (version < 4 || req.allow_auto_topic_creation);
    for rt in req.topics.unwrap_or_default() {
        let name = rt.name.filter(|n| !n.is_empty());
        let Some(name) = name else {
            // By id (v12).
            match state.topics.get_by_id(&rt.topic_id) {
                Some(t) => resp.topics.push(topic_metadata(state, &t)),
                None => resp
                    .topics
                    .push(missing(None, rt.topic_id, ErrorCode::UnknownTopicId)),
            }
            continue;
        };
        if let Some(t) = state.topics.get(&name) {
            resp.topics.push(topic_metadata(state, &t));
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
        if allow_auto {
            match auto_create(state, &name) {
                Ok(t) => resp.topics.push(topic_metadata(state, &t)),
                Err(code) => resp.topics.push(missing(Some(name), Uuid::ZERO, code)),
            }
        } else {
            resp.topics.push(missing(
                Some(name),
                Uuid::ZERO,
                ErrorCode::UnknownTopicOrPartition,
            ));
        }
    }
    resp
}
