//! Kafka requests on the CONTROLLER listener (Kafka's `ControllerApis`): the broker-to-controller
//! APIs and the admin requests brokers forward go to the [`ControllerDriver`]; ApiVersions and
//! DescribeQuorum are answered here. Anything else closes the connection.

use std::sync::Arc;

use bytes::Bytes;
use josef_protocol::messages::api_versions_response::ApiVersion;
use josef_protocol::messages::describe_quorum_response::{
    Listener as QuorumListener, Node as QuorumNode, PartitionData, ReplicaState, TopicData,
};
use josef_protocol::messages::{ApiVersionsResponse, DescribeQuorumResponse};
use josef_protocol::{
    decode_request_frame, encode_response_frame_chunks, ApiKey, RequestBody, ResponseBody, StrBytes,
};
use josef_quorum::MetadataQuorum;

use super::driver::ControllerDriver;
use crate::cluster_config::Voter;
use crate::connection::{ConnectionInfo, FrameHandler, Outcome};

/// The APIs the CONTROLLER listener serves.
pub const CONTROLLER_APIS: &[ApiKey] = &[
    ApiKey::ApiVersions,
    ApiKey::BrokerRegistration,
    ApiKey::BrokerHeartbeat,
    ApiKey::UnregisterBroker,
    ApiKey::ControlledShutdown,
    ApiKey::AlterPartition,
    ApiKey::AllocateProducerIds,
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::CreatePartitions,
    ApiKey::ElectLeaders,
    ApiKey::AlterPartitionReassignments,
    ApiKey::ListPartitionReassignments,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::AlterConfigs,
    ApiKey::DescribeQuorum,
    ApiKey::UpdateFeatures,
    ApiKey::AlterUserScramCredentials,
    ApiKey::AlterClientQuotas,
    ApiKey::CreateAcls,
    ApiKey::DeleteAcls,
];

/// The frame handler of the CONTROLLER listener.
pub struct ControllerApis {
    /// The driver of this node's controller.
    pub driver: Arc<ControllerDriver>,
    /// The metadata quorum (for DescribeQuorum).
    pub quorum: MetadataQuorum,
    /// The voters (their CONTROLLER endpoints, for DescribeQuorum v2).
    pub voters: Vec<Voter>,
}

impl ControllerApis {
    fn describe_quorum(&self) -> DescribeQuorumResponse {
        let status = self.quorum.status();
        let voter = |id: u64| {
            let known = status.voters.iter().find(|v| v.id == id);
            ReplicaState {
                replica_id: id as i32,
                log_end_offset: known.map_or(-1, |v| v.log_end_offset),
                last_fetch_timestamp: known.and_then(|v| v.last_fetch_ms).unwrap_or(-1),
                last_caught_up_timestamp: known.and_then(|v| v.last_caught_up_ms).unwrap_or(-1),
                ..Default::default()
            }
        };
        DescribeQuorumResponse {
            topics: vec![TopicData {
                topic_name: StrBytes::from("__cluster_metadata"),
                partitions: vec![PartitionData {
                    partition_index: 0,
                    leader_id: status.leader.map_or(-1, |l| l as i32),
                    leader_epoch: status.term as i32,
                    high_watermark: status.high_watermark as i64,
                    current_voters: self.voters.iter().map(|v| voter(v.id as u64)).collect(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            nodes: self
                .voters
                .iter()
                .map(|v| QuorumNode {
                    node_id: v.id,
                    listeners: vec![QuorumListener {
                        name: StrBytes::from("CONTROLLER"),
                        host: StrBytes::from(v.host.as_str()),
                        port: v.port,
                        ..Default::default()
                    }],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }
}

fn api_versions() -> ApiVersionsResponse {
    ApiVersionsResponse {
        api_keys: CONTROLLER_APIS
            .iter()
            .map(|k| {
                let (min, max) = k.valid_versions();
                ApiVersion {
                    api_key: *k as i16,
                    min_version: min,
                    max_version: max,
                    ..Default::default()
                }
            })
            .collect(),
        ..Default::default()
    }
}

impl FrameHandler for ControllerApis {
    async fn handle(&self, _conn: &ConnectionInfo, frame: Bytes) -> Outcome {
        let (header, body) = match decode_request_frame(frame) {
            Ok(x) => x,
            Err(e) => return Outcome::Close(format!("controller listener: {e}")),
        };
        let key = body.api_key();
        if !CONTROLLER_APIS.contains(&key) {
            return Outcome::Close(format!("{key:?} is not served on the controller listener"));
        }
        let resp: ResponseBody = match body {
            RequestBody::ApiVersions(_) => api_versions().into(),
            RequestBody::DescribeQuorum(_) => {
                let mut r = self.describe_quorum();
                if header.request_api_version < 2 {
                    r.nodes.clear(); // Nodes (and the listeners in it) exist from v2
                }
                if header.request_api_version < 1 {
                    // The fetch and caught-up times exist from v1.
                    for t in &mut r.topics {
                        for p in &mut t.partitions {
                            for v in &mut p.current_voters {
                                v.last_fetch_timestamp = -1;
                                v.last_caught_up_timestamp = -1;
                            }
                        }
                    }
                }
                r.into()
            }
            other => self.driver.handle(other, header.request_api_version).await,
        };
        match encode_response_frame_chunks(
            header.correlation_id,
            key,
            header.request_api_version,
            &resp,
        ) {
            Ok(f) => Outcome::Respond(f),
            Err(e) => Outcome::Close(format!("cannot encode {key:?} response: {e}")),
        }
    }
}
