//! A request's response carrying one error code everywhere (Kafka's
//! `AbstractRequest.getErrorResponse`): at the top level for an API that has a top-level
//! `error_code`, else on every topic, resource, user or entry the request names.
//!
//! A broker answers this way when it refuses a request as a whole (authorization), when it cannot
//! forward it (no controller, timeout) or when it cannot store what the request changes.
//!
//! ```
//! use josef_protocol::error_response::error_response;
//! use josef_protocol::messages::{create_topics_request::CreatableTopic, CreateTopicsRequest};
//! use josef_protocol::{ErrorCode, RequestBody, ResponseBody};
//!
//! let request = RequestBody::CreateTopics(CreateTopicsRequest {
//!     topics: vec![CreatableTopic { name: "events".into(), ..Default::default() }],
//!     ..Default::default()
//! });
//! let Some(ResponseBody::CreateTopics(r)) = error_response(&request, ErrorCode::NotController) else {
//!     panic!("CreateTopics has an error response");
//! };
//! assert_eq!(r.topics[0].name, "events");
//! assert_eq!(r.topics[0].error_code, ErrorCode::NotController.code());
//! ```

use crate::messages::{
    alter_client_quotas_response, alter_configs_response, alter_user_scram_credentials_response,
    create_acls_response, create_partitions_response, create_topics_response, delete_acls_response,
    delete_topics_response, incremental_alter_configs_response, AllocateProducerIdsResponse,
    AlterClientQuotasResponse, AlterConfigsResponse, AlterPartitionReassignmentsResponse,
    AlterPartitionResponse, AlterUserScramCredentialsResponse, BrokerHeartbeatResponse,
    BrokerRegistrationResponse, ControlledShutdownResponse, CreateAclsResponse,
    CreatePartitionsResponse, CreateTopicsResponse, DeleteAclsResponse, DeleteTopicsResponse,
    DescribeQuorumResponse, ElectLeadersResponse, IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsResponse, UnregisterBrokerResponse, UpdateFeaturesResponse,
};
use crate::{ErrorCode, RequestBody, ResponseBody, StrBytes};

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

/// `items` mapped to their error entries, collected.
fn each<T, R>(items: &[T], entry: impl FnMut(&T) -> R) -> Vec<R> {
    items.iter().map(entry).collect()
}

/// A `$resp` whose `$field` holds one `$entry` per item of `$items`, with the given fields (the
/// rest default).
macro_rules! each_entry {
    (
        $resp:ident . $field:ident,
        for $x:pat_param in $items:expr => $entry:path { $($f:ident: $v:expr),* $(,)? }
    ) => {{
        type Entry = $entry;
        $resp {
            $field: each($items, |$x| Entry { $($f: $v,)* ..Default::default() }),
            ..Default::default()
        }
        .into()
    }};
}

/// `body`'s response with `code` at the top level or on every entry; `None` for an API this
/// module does not cover (the controller-bound APIs, the ACL, SCRAM and client-quota APIs are
/// covered).
pub fn error_response(body: &RequestBody, code: ErrorCode) -> Option<ResponseBody> {
    let c = code.code();
    if let Some(r) = top_level_error(body, c) {
        return Some(r);
    }
    let response: ResponseBody = match body {
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
        RequestBody::CreateTopics(r) => each_entry!(
            CreateTopicsResponse.topics,
            for t in &r.topics => create_topics_response::CreatableTopicResult {
                name: t.name.clone(),
                error_code: c,
                num_partitions: -1,
                replication_factor: -1,
            }
        ),
        RequestBody::DeleteTopics(r) => {
            let mut responses = each(&r.topic_names, |n| {
                delete_topics_response::DeletableTopicResult {
                    name: Some(n.clone()),
                    error_code: c,
                    ..Default::default()
                }
            });
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
        RequestBody::CreatePartitions(r) => each_entry!(
            CreatePartitionsResponse.results,
            for t in &r.topics => create_partitions_response::CreatePartitionsTopicResult {
                name: t.name.clone(),
                error_code: c,
            }
        ),
        RequestBody::IncrementalAlterConfigs(r) => each_entry!(
            IncrementalAlterConfigsResponse.responses,
            for x in &r.resources => incremental_alter_configs_response::AlterConfigsResourceResponse {
                error_code: c,
                resource_type: x.resource_type,
                resource_name: x.resource_name.clone(),
            }
        ),
        RequestBody::AlterConfigs(r) => each_entry!(
            AlterConfigsResponse.responses,
            for x in &r.resources => alter_configs_response::AlterConfigsResourceResponse {
                error_code: c,
                resource_type: x.resource_type,
                resource_name: x.resource_name.clone(),
            }
        ),
        RequestBody::AlterUserScramCredentials(r) => {
            // One result per user, in the order users first appear (deletions, then upsertions).
            let mut users: Vec<&StrBytes> = Vec::new();
            for name in r
                .deletions
                .iter()
                .map(|d| &d.name)
                .chain(r.upsertions.iter().map(|u| &u.name))
            {
                if !users.contains(&name) {
                    users.push(name);
                }
            }
            each_entry!(
                AlterUserScramCredentialsResponse.results,
                for u in &users => alter_user_scram_credentials_response::AlterUserScramCredentialsResult {
                    user: (*u).clone(),
                    error_code: c,
                    error_message: None,
                }
            )
        }
        RequestBody::AlterClientQuotas(r) => AlterClientQuotasResponse {
            entries: each(&r.entries, |e| alter_client_quotas_response::EntryData {
                error_code: c,
                entity: each(&e.entity, |x| alter_client_quotas_response::EntityData {
                    entity_type: x.entity_type.clone(),
                    entity_name: x.entity_name.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
        .into(),
        RequestBody::CreateAcls(r) => each_entry!(
            CreateAclsResponse.results,
            for _ in &r.creations => create_acls_response::AclCreationResult {
                error_code: c,
            }
        ),
        RequestBody::DeleteAcls(r) => each_entry!(
            DeleteAclsResponse.filter_results,
            for _ in &r.filters => delete_acls_response::DeleteAclsFilterResult {
                error_code: c,
            }
        ),
        _ => return None,
    };
    Some(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::*;

    const C: ErrorCode = ErrorCode::ClusterAuthorizationFailed;

    fn answer(body: RequestBody) -> ResponseBody {
        error_response(&body, C).expect("covered")
    }

    #[test]
    fn top_level_apis_carry_the_code_at_the_top() {
        let r = answer(RequestBody::ElectLeaders(Default::default()));
        assert_eq!(
            r,
            ElectLeadersResponse {
                error_code: C.code(),
                ..Default::default()
            }
            .into()
        );
        let r = answer(RequestBody::DescribeQuorum(Default::default()));
        assert_eq!(
            r,
            DescribeQuorumResponse {
                error_code: C.code(),
                ..Default::default()
            }
            .into()
        );
        let r = answer(RequestBody::BrokerHeartbeat(Default::default()));
        assert_eq!(
            r,
            BrokerHeartbeatResponse {
                error_code: C.code(),
                is_fenced: true,
                ..Default::default()
            }
            .into()
        );
        let r = answer(RequestBody::BrokerRegistration(Default::default()));
        assert_eq!(
            r,
            BrokerRegistrationResponse {
                error_code: C.code(),
                broker_epoch: -1,
                ..Default::default()
            }
            .into()
        );
    }

    #[test]
    fn delete_topics_answers_names_then_ids() {
        let id = crate::Uuid::from_u128(7);
        let req = DeleteTopicsRequest {
            topic_names: vec!["a".into()],
            topics: vec![delete_topics_request::DeleteTopicState {
                name: None,
                topic_id: id,
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::DeleteTopics(r) = answer(RequestBody::DeleteTopics(req)) else {
            panic!("wrong response type");
        };
        assert_eq!(r.responses.len(), 2);
        assert_eq!(r.responses[0].name.as_deref(), Some("a"));
        assert_eq!(r.responses[1].name, None);
        assert_eq!(r.responses[1].topic_id, id);
        assert!(r.responses.iter().all(|t| t.error_code == C.code()));
    }

    #[test]
    fn scram_users_are_answered_once_in_first_appearance_order() {
        use alter_user_scram_credentials_request::{
            ScramCredentialDeletion, ScramCredentialUpsertion,
        };
        let req = AlterUserScramCredentialsRequest {
            deletions: vec![ScramCredentialDeletion {
                name: "bob".into(),
                ..Default::default()
            }],
            upsertions: vec![
                ScramCredentialUpsertion {
                    name: "alice".into(),
                    ..Default::default()
                },
                ScramCredentialUpsertion {
                    name: "bob".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let ResponseBody::AlterUserScramCredentials(r) =
            answer(RequestBody::AlterUserScramCredentials(req))
        else {
            panic!("wrong response type");
        };
        let users: Vec<&str> = r.results.iter().map(|u| u.user.as_str()).collect();
        assert_eq!(users, ["bob", "alice"]);
        assert!(r
            .results
            .iter()
            .all(|u| u.error_code == C.code() && u.error_message.is_none()));
    }

    #[test]
    fn client_quota_entries_keep_their_entity() {
        use alter_client_quotas_request::{EntityData, EntryData};
        let req = AlterClientQuotasRequest {
            entries: vec![EntryData {
                entity: vec![EntityData {
                    entity_type: "user".into(),
                    entity_name: Some("alice".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::AlterClientQuotas(r) = answer(RequestBody::AlterClientQuotas(req)) else {
            panic!("wrong response type");
        };
        assert_eq!(r.entries.len(), 1);
        assert_eq!(r.entries[0].error_code, C.code());
        assert_eq!(r.entries[0].entity[0].entity_type, "user");
        assert_eq!(r.entries[0].entity[0].entity_name.as_deref(), Some("alice"));
    }

    #[test]
    fn per_entry_apis_answer_every_entry() {
        let req = CreateTopicsRequest {
            topics: vec![
                create_topics_request::CreatableTopic {
                    name: "a".into(),
                    ..Default::default()
                },
                create_topics_request::CreatableTopic {
                    name: "b".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let ResponseBody::CreateTopics(r) = answer(RequestBody::CreateTopics(req)) else {
            panic!("wrong response type");
        };
        assert_eq!(r.topics.len(), 2);
        assert!(r.topics.iter().all(|t| t.error_code == C.code()
            && t.num_partitions == -1
            && t.replication_factor == -1));
        let req = IncrementalAlterConfigsRequest {
            resources: vec![incremental_alter_configs_request::AlterConfigsResource {
                resource_type: 2,
                resource_name: "t".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::IncrementalAlterConfigs(r) =
            answer(RequestBody::IncrementalAlterConfigs(req))
        else {
            panic!("wrong response type");
        };
        assert_eq!(r.responses[0].resource_type, 2);
        assert_eq!(r.responses[0].resource_name, "t");
        assert_eq!(r.responses[0].error_code, C.code());
        let req = DeleteAclsRequest {
            filters: vec![Default::default(), Default::default()],
            ..Default::default()
        };
        let ResponseBody::DeleteAcls(r) = answer(RequestBody::DeleteAcls(req)) else {
            panic!("wrong response type");
        };
        assert_eq!(r.filter_results.len(), 2);
        assert!(r.filter_results.iter().all(|f| f.error_code == C.code()));
    }

    #[test]
    fn alter_configs_create_partitions_and_create_acls_answer_every_entry() {
        let req = AlterConfigsRequest {
            resources: vec![alter_configs_request::AlterConfigsResource {
                resource_type: 4,
                resource_name: "1".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::AlterConfigs(r) = answer(RequestBody::AlterConfigs(req)) else {
            panic!("wrong response type");
        };
        let got: Vec<_> = r
            .responses
            .iter()
            .map(|x| (x.error_code, x.resource_type, x.resource_name.as_str()))
            .collect();
        assert_eq!(got, [(C.code(), 4, "1")]);
        let req = CreatePartitionsRequest {
            topics: vec![create_partitions_request::CreatePartitionsTopic {
                name: "t".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::CreatePartitions(r) = answer(RequestBody::CreatePartitions(req)) else {
            panic!("wrong response type");
        };
        assert_eq!(r.results[0].name, "t");
        assert_eq!(r.results[0].error_code, C.code());
        let req = CreateAclsRequest {
            creations: vec![Default::default(); 3],
            ..Default::default()
        };
        let ResponseBody::CreateAcls(r) = answer(RequestBody::CreateAcls(req)) else {
            panic!("wrong response type");
        };
        assert_eq!(r.results.len(), 3);
        assert!(r.results.iter().all(|x| x.error_code == C.code()));
    }

    #[test]
    fn apis_it_does_not_cover_have_none() {
        assert!(error_response(&RequestBody::Produce(Default::default()), C).is_none());
        assert!(error_response(&RequestBody::ApiVersions(Default::default()), C).is_none());
    }
}
