//! Error answers to controller APIs, shaped like each API's response.

use josef_protocol::messages::{
    alter_configs_response, create_acls_response, create_partitions_response,
    create_topics_response, delete_acls_response, delete_topics_response,
    incremental_alter_configs_response, AllocateProducerIdsResponse, AlterConfigsResponse,
    AlterPartitionReassignmentsResponse, AlterPartitionResponse, BrokerHeartbeatResponse,
    BrokerRegistrationResponse, ControlledShutdownResponse, CreatePartitionsResponse,
    CreateTopicsResponse, DeleteTopicsResponse, ElectLeadersResponse,
    IncrementalAlterConfigsResponse, ListPartitionReassignmentsResponse, UnregisterBrokerResponse,
};
use josef_protocol::{ErrorCode, RequestBody, ResponseBody};

/// The answer to `body` when this node cannot serve it as controller: NOT_CONTROLLER where the API
/// has a top-level code, else on every topic or resource.
pub fn not_controller(body: &RequestBody) -> ResponseBody {
    error_response(body, ErrorCode::NotController)
}

/// The response of an API whose only error is its top-level `error_code`, with that code.
macro_rules! top_level_errors {
    ($body:expr, $code:expr, $($api:ident => $resp:ident),* $(,)?) => {
        match $body {
            $(RequestBody::$api(_) => Some($resp { error_code: $code, ..Default::default() }.into()),)*
            _ => None,
        }
    };
}

fn top_level_error(body: &RequestBody, c: i16) -> Option<ResponseBody> {
    use josef_protocol::messages::{DescribeQuorumResponse, UpdateFeaturesResponse};
    top_level_errors!(body, c,
        UnregisterBroker => UnregisterBrokerResponse,
        ControlledShutdown => ControlledShutdownResponse,
        AlterPartition => AlterPartitionResponse,
        AllocateProducerIds => AllocateProducerIdsResponse,
        ElectLeaders => ElectLeadersResponse,
        AlterPartitionReassignments => AlterPartitionReassignmentsResponse,
        UpdateFeatures => UpdateFeaturesResponse,
        DescribeQuorum => DescribeQuorumResponse,
        ListPartitionReassignments => ListPartitionReassignmentsResponse,
    )
}

/// `body`'s response with `code` at the top level or on every entry.
pub fn error_response(body: &RequestBody, code: ErrorCode) -> ResponseBody {
    let c = code.code();
    if let Some(r) = top_level_error(body, c) {
        return r;
    }
    match body {
        RequestBody::BrokerRegistration(_) => BrokerRegistrationResponse {
            error_code: c,
            broker_epoch: -1,
            ..Default::default()
        }
        .into(),
        RequestBody::BrokerHeartbeat(_) => BrokerHeartbeatResponse {
            error_code: c,
            is_fenced: true,
            ..Default::default()
        }
        .into(),
        RequestBody::CreateTopics(r) => CreateTopicsResponse {
            topics: r
                .topics
                .iter()
                .map(|t| create_topics_response::CreatableTopicResult {
                    name: t.name.clone(),
                    error_code: c,
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestBody::DeleteTopics(r) => {
            let mut responses: Vec<_> = r
                .topic_names
                .iter()
                .map(|n| delete_topics_response::DeletableTopicResult {
                    name: Some(n.clone()),
                    error_code: c,
                    ..Default::default()
                })
                .collect();
            responses.extend(r.topics.iter().map(|t| {
                delete_topics_response::DeletableTopicResult {
                    name: t.name.clone(),
                    topic_id: t.topic_id,
                    error_code: c,
                    ..Default::default()
                }
            }));
            DeleteTopicsResponse {
                responses,
                ..Default::default()
            }
            .into()
        }
        RequestBody::CreatePartitions(r) => CreatePartitionsResponse {
            results: r
                .topics
                .iter()
                .map(
                    |t| create_partitions_response::CreatePartitionsTopicResult {
                        name: t.name.clone(),
                        error_code: c,
                        ..Default::default()
                    },
                )
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestBody::IncrementalAlterConfigs(r) => IncrementalAlterConfigsResponse {
            responses: r
                .resources
                .iter()
                .map(
                    |x| incremental_alter_configs_response::AlterConfigsResourceResponse {
                        error_code: c,
                        resource_type: x.resource_type,
                        resource_name: x.resource_name.clone(),
                        ..Default::default()
                    },
                )
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestBody::AlterConfigs(r) => AlterConfigsResponse {
            responses: r
                .resources
                .iter()
                .map(|x| alter_configs_response::AlterConfigsResourceResponse {
                    error_code: c,
                    resource_type: x.resource_type,
                    resource_name: x.resource_name.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestBody::AlterUserScramCredentials(r) => {
            crate::handlers::scram_credentials::alter_error(r, code)
        }
        RequestBody::AlterClientQuotas(r) => crate::quotas::alter_error_response(r, code).into(),
        RequestBody::CreateAcls(r) => josef_protocol::messages::CreateAclsResponse {
            results: r
                .creations
                .iter()
                .map(|_| create_acls_response::AclCreationResult {
                    error_code: c,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestBody::DeleteAcls(r) => josef_protocol::messages::DeleteAclsResponse {
            filter_results: r
                .filters
                .iter()
                .map(|_| delete_acls_response::DeleteAclsFilterResult {
                    error_code: c,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        other => {
            // Not a controller API: the caller answers it elsewhere; an empty ApiVersions-like
            // answer is never sent for it.
            tracing::warn!(api = ?other.api_key(), "not a controller API");
            ResponseBody::ApiVersions(josef_protocol::messages::ApiVersionsResponse {
                error_code: ErrorCode::InvalidRequest.code(),
                ..Default::default()
            })
        }
    }
}
