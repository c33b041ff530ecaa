//! Client requests on a cluster node that are answered from the metadata image (Metadata,
//! DescribeCluster) or forwarded to the active controller (topic and config changes, elections,
//! reassignments; Kafka's `ForwardingManager`, without the Envelope: the controller listener takes
//! the request as the client sent it).

use std::sync::Arc;
use std::time::Duration;

use josef_protocol::messages::create_topics_request::CreatableTopic;
use josef_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use josef_protocol::messages::metadata_response::MetadataResponseTopic;
use josef_protocol::messages::{
    CreateTopicsRequest, DescribeClusterRequest, DescribeClusterResponse, MetadataRequest,
    MetadataResponse,
};
use josef_protocol::{ErrorCode, RequestBody, ResponseBody, StrBytes, Uuid};

use crate::cluster::metadata_view;
use crate::cluster::responses::error_response;
use crate::cluster::ClusterNode;
use crate::connection::ConnectionInfo;
use crate::state::BrokerState;
use crate::topics::{validate_topic_name, Topic, GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC};

/// How long a forwarded request may look for the active controller.
const FORWARD_DEADLINE: Duration = Duration::from_secs(30);
/// How long a broker waits for a topic it asked the controller for to reach its own image.
const TOPIC_VISIBLE_WAIT: Duration = Duration::from_secs(10);

/// Forwards `body` (sent by a client at `version`) to the active controller.
pub async fn forward(node: &ClusterNode, body: RequestBody, version: i16) -> ResponseBody {
    let fallback = error_response(&body, ErrorCode::RequestTimedOut);
    match node.channel.send(body, version, FORWARD_DEADLINE).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, "forwarding to the controller failed");
            fallback
        }
    }
}

fn missing(name: Option<StrBytes>, id: Uuid, code: ErrorCode) -> MetadataResponseTopic {
    MetadataResponseTopic {
        error_code: code.code(),
        name,
        topic_id: id,
        partitions: vec![],
        topic_authorized_operations: i32::MIN,
        ..Default::default()
    }
}

/// Asks the controller to create `name` (broker defaults, or the internal topics' own settings)
/// and waits until this broker has opened it.
pub async fn create_topic_via_controller(
    state: &BrokerState,
    node: &ClusterNode,
    name: &str,
) -> Result<Arc<Topic>, ErrorCode> {
    let c = &state.config;
    let mut topic = CreatableTopic {
        name: StrBytes::from(name),
        num_partitions: -1,
        replication_factor: -1,
        ..Default::default()
    };
    let internal = |key: &str, value: String| {
        josef_protocol::messages::create_topics_request::CreatableTopicConfig {
            name: StrBytes::from(key),
            value: Some(StrBytes::from(value)),
            ..Default::default()
        }
    };
    if name == GROUP_METADATA_TOPIC || name == TRANSACTION_STATE_TOPIC {
        let (parts, rf, seg, compression) = if name == GROUP_METADATA_TOPIC {
            (
                c.offsets_topic_num_partitions,
                c.offsets_topic_replication_factor,
                c.offsets_topic_segment_bytes,
                "producer",
            )
        } else {
            (
                c.transaction_state_log_num_partitions,
                c.transaction_state_log_replication_factor,
                c.transaction_state_log_segment_bytes,
                "uncompressed",
            )
        };
        topic.num_partitions = parts;
        topic.replication_factor = rf;
        topic.configs = vec![
            internal("cleanup.policy", "compact".into()),
            internal("segment.bytes", seg.to_string()),
            internal("compression.type", compression.into()),
        ];
        if name == TRANSACTION_STATE_TOPIC {
            topic.configs.push(internal(
                "min.insync.replicas",
                c.transaction_state_log_min_isr.to_string(),
            ));
        }
    }
    let req = CreateTopicsRequest {
        topics: vec![topic],
        timeout_ms: FORWARD_DEADLINE.as_millis() as i32,
        ..Default::default()
    };
    let resp = node
        .channel
        .send(RequestBody::CreateTopics(req), 7, FORWARD_DEADLINE)
        .await
        .map_err(|_| ErrorCode::RequestTimedOut)?;
    let code = match resp {
        ResponseBody::CreateTopics(r) => r.topics.first().map_or(0, |t| t.error_code),
        _ => ErrorCode::UnknownServerError.code(),
    };
    if code != 0 && code != ErrorCode::TopicAlreadyExists.code() {
        return Err(ErrorCode::from_i16(code).unwrap_or(ErrorCode::UnknownServerError));
    }
    let deadline = tokio::time::Instant::now() + TOPIC_VISIBLE_WAIT;
    loop {
        if let Some(t) = state.topics.get(name) {
            return Ok(t);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(ErrorCode::LeaderNotAvailable);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The features of ApiVersions v3+ (KIP-584): what this broker supports and what the cluster
/// finalized (from the metadata image; the epoch is the image's metadata offset).
pub fn add_features(node: &ClusterNode, r: &mut josef_protocol::messages::ApiVersionsResponse) {
    use josef_protocol::messages::api_versions_response::{
        FinalizedFeatureKey, SupportedFeatureKey,
    };
    let image = node.log.image();
    r.supported_features.push(SupportedFeatureKey {
        name: StrBytes::from("metadata.version"),
        min_version: crate::cluster::lifecycle::METADATA_VERSION_MIN,
        max_version: crate::cluster::lifecycle::METADATA_VERSION_MAX,
        ..Default::default()
    });
    r.finalized_features_epoch = image.provenance().last_offset as i64;
    r.finalized_features = image
        .features()
        .iter()
        .map(|(name, level)| FinalizedFeatureKey {
            name: StrBytes::from(name.as_str()),
            max_version_level: *level,
            min_version_level: *level,
            ..Default::default()
        })
        .collect();
}

/// Metadata (api 3) on a cluster node.
pub async fn metadata(
    state: &BrokerState,
    node: &ClusterNode,
    conn: &ConnectionInfo,
    req: MetadataRequest,
    version: i16,
) -> MetadataResponse {
    let listener = conn.listener.as_str();
    let mut image = node.log.image();
    let all = match &req.topics {
        None => true,
        Some(t) => t.is_empty() && version == 0,
    };
    let mut topics = Vec::new();
    if all {
        topics = image
            .topics()
            .map(|t| metadata_view::topic(&image, t, listener))
            .collect();
    } else {
        let allow_auto = state.config.auto_create_topics_enable
            && (version < 4 || req.allow_auto_topic_creation);
        for rt in req.topics.unwrap_or_default() {
            let Some(name) = rt.name.filter(|n| !n.is_empty()) else {
                match image.topic_by_id(rt.topic_id) {
                    Some(t) => topics.push(metadata_view::topic(&image, t, listener)),
                    None => topics.push(missing(None, rt.topic_id, ErrorCode::UnknownTopicId)),
                }
                continue;
            };
            if let Some(t) = image.topic_by_name(&name) {
                topics.push(metadata_view::topic(&image, t, listener));
                continue;
            }
            if validate_topic_name(&name).is_err() {
                topics.push(missing(
                    Some(name),
                    Uuid::ZERO,
                    ErrorCode::InvalidTopicException,
                ));
                continue;
            }
            if !allow_auto {
                topics.push(missing(
                    Some(name),
                    Uuid::ZERO,
                    ErrorCode::UnknownTopicOrPartition,
                ));
                continue;
            }
            match create_topic_via_controller(state, node, &name).await {
                Ok(_) => {
                    image = node.log.image();
                    match image.topic_by_name(&name) {
                        Some(t) => topics.push(metadata_view::topic(&image, t, listener)),
                        None => topics.push(missing(
                            Some(name),
                            Uuid::ZERO,
                            ErrorCode::LeaderNotAvailable,
                        )),
                    }
                }
                Err(code) => topics.push(missing(Some(name), Uuid::ZERO, code)),
            }
        }
    }
    MetadataResponse {
        brokers: metadata_view::brokers(&image, listener),
        cluster_id: Some(StrBytes::from(state.cluster_id.as_str())),
        controller_id: metadata_view::controller_id(&image, listener),
        topics,
        cluster_authorized_operations: i32::MIN,
        ..Default::default()
    }
}

/// DescribeCluster (api 60) on a cluster node.
pub fn describe_cluster(
    state: &BrokerState,
    node: &ClusterNode,
    conn: &ConnectionInfo,
    req: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let image = node.log.image();
    let listener = conn.listener.as_str();
    let mut r = DescribeClusterResponse {
        endpoint_type: req.endpoint_type,
        cluster_id: StrBytes::from(state.cluster_id.as_str()),
        controller_id: metadata_view::controller_id(&image, listener),
        brokers: metadata_view::brokers(&image, listener)
            .into_iter()
            .map(|b| DescribeClusterBroker {
                broker_id: b.node_id,
                host: b.host,
                port: b.port,
                rack: b.rack,
                ..Default::default()
            })
            .collect(),
        cluster_authorized_operations: i32::MIN,
        ..Default::default()
    };
    if req.endpoint_type != 1 {
        r.error_code = ErrorCode::UnsupportedEndpointType.code();
        r.brokers.clear();
    }
    r
}
