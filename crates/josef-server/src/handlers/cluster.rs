//! Client requests a cluster node forwards to the active controller (topic and config changes,
//! elections, reassignments; Kafka's `ForwardingManager`, without the Envelope: the controller
//! listener takes the request as the client sent it), and the ApiVersions features. Metadata and
//! DescribeCluster are answered from the metadata image through the kit's
//! [`ClusterMetadata`](crate::kit::ClusterMetadata) view.

use std::sync::Arc;
use std::time::Duration;

use josef_protocol::messages::create_topics_request::CreatableTopic;
use josef_protocol::messages::CreateTopicsRequest;
use josef_protocol::{ErrorCode, RequestBody, ResponseBody, StrBytes};

use crate::cluster::responses::error_response;
use crate::cluster::ClusterNode;
use crate::config::BrokerConfig;
use crate::topics::{Topic, TopicManager, GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC};

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

/// Asks the controller to create `name` (broker defaults, or the internal topics' own settings)
/// and waits until this broker has opened it.
pub async fn create_topic_via_controller(
    c: &BrokerConfig,
    topics: &TopicManager,
    node: &ClusterNode,
    name: &str,
) -> Result<Arc<Topic>, ErrorCode> {
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
        if let Some(t) = topics.get(name) {
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
