//! Which ACLs a broker checks for each Kafka API, and the error it answers when the check fails
//! (after Kafka's `KafkaApis`, `ControllerApis`, `AclApis` and `AuthHelper`).
//!
//! Pure data: [`api_acls`] returns, per [`ApiKey`], a list of [`ApiCheck`]s. Each check applies
//! under a [`Condition`] and passes if **any** of its [`AclRequirement`]s is allowed; every
//! applicable check must pass. A requirement says on which resource names to check
//! ([`Target`]), the error code on failure and whether the failure fails the whole request or only
//! the resources concerned ([`FailureScope`]).
//!
//! ```
//! use josef_authorizer::api_acls::{api_acls, Condition, Target};
//! use josef_authorizer::{AclOperation, ResourceType};
//! use josef_protocol::{ApiKey, ErrorCode};
//!
//! let produce = api_acls(ApiKey::Produce);
//! let topic = &produce.checks[0];
//! assert_eq!(topic.when, Condition::Always);
//! assert_eq!(topic.any_of[0].resource_type, ResourceType::Topic);
//! assert_eq!(topic.any_of[0].operation, AclOperation::Write);
//! assert_eq!(topic.any_of[0].error, ErrorCode::TopicAuthorizationFailed);
//! let txn = &produce.checks[1];
//! assert_eq!(txn.when, Condition::Transactional);
//! assert_eq!(txn.any_of[0].target, Target::TransactionalIds);
//! assert!(api_acls(ApiKey::ApiVersions).checks.is_empty());
//! ```

use josef_protocol::{ApiKey, ErrorCode};

use crate::types::{AclOperation, ResourceType};

/// The resource names a requirement is checked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// The cluster resource, `kafka-cluster`.
    Cluster,
    /// Each topic the request names (or, for listings, each candidate topic).
    Topics,
    /// The request's group id(s).
    Groups,
    /// The request's transactional id(s).
    TransactionalIds,
    /// Each delegation token concerned.
    DelegationTokens,
    /// The user a delegation token is created for.
    Users,
    /// Each config resource the request names (topic or group name; `kafka-cluster` for brokers).
    ConfigResources,
    /// Some resource of the type: [`StandardAuthorizer::authorize_by_resource_type`](crate::StandardAuthorizer::authorize_by_resource_type).
    AnyOfType,
}

/// What a failed requirement does to the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureScope {
    /// The whole request fails with the error (a top-level error, or the error on every entry).
    WholeRequest,
    /// Only the entries for unauthorized resources carry the error; the rest proceed.
    PerResource,
    /// Unauthorized resources are silently left out of a listing.
    Filtered,
}

/// One allowed-or-not question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AclRequirement {
    /// The resource type.
    pub resource_type: ResourceType,
    /// The operation.
    pub operation: AclOperation,
    /// On which names.
    pub target: Target,
    /// The error code when it is denied.
    pub error: ErrorCode,
    /// What the denial does to the response.
    pub scope: FailureScope,
}

/// When a check applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Condition {
    /// Always.
    Always,
    /// Produce with a transactional id.
    Transactional,
    /// A consumer's Fetch (replica id < 0).
    ConsumerFetch,
    /// A follower's Fetch (a replica id or replica state).
    FollowerFetch,
    /// Metadata asking to auto-create missing topics.
    AutoCreateTopics,
    /// InitProducerId with a transactional id.
    WithTransactionalId,
    /// InitProducerId without one (idempotent producer).
    WithoutTransactionalId,
    /// FindCoordinator key type 0 (group).
    GroupCoordinatorKey,
    /// FindCoordinator key type 1 (transaction).
    TransactionCoordinatorKey,
    /// CreateTopics returning topic configs in the reply: failure only blanks the configs and sets
    /// `topic_config_error_code`.
    ConfigsInReply,
    /// A TOPIC config resource (type 2).
    TopicConfigResource,
    /// A GROUP config resource (type 32).
    GroupConfigResource,
    /// A BROKER (4), BROKER_LOGGER (8) or CLIENT_METRICS (16) config resource.
    ClusterConfigResource,
    /// Request versions up to and including this one.
    VersionAtMost(i16),
    /// Request versions from this one.
    VersionAtLeast(i16),
    /// A group heartbeat that names subscribed topics.
    SubscribedTopics,
    /// ConsumerGroupDescribe: the topics in each described group (subscribed or assigned).
    GroupTopics,
    /// CreateDelegationToken for an owner other than the requester.
    OwnerIsAnotherUser,
}

/// One check: passes if any requirement is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ApiCheck {
    /// When it applies.
    pub when: Condition,
    /// The alternatives.
    pub any_of: &'static [AclRequirement],
}

/// What one API needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ApiAcls {
    /// The API.
    pub api_key: ApiKey,
    /// Every applicable check must pass; empty: no ACL is needed.
    pub checks: &'static [ApiCheck],
    /// Behaviour beyond the table, in a sentence (empty if none).
    pub note: &'static str,
}

/// The authorization error for a resource type (Kafka's `AclEntry.authorizationError`).
pub const fn authorization_error(resource_type: ResourceType) -> ErrorCode {
    match resource_type {
        ResourceType::Topic => ErrorCode::TopicAuthorizationFailed,
        ResourceType::Group => ErrorCode::GroupAuthorizationFailed,
        ResourceType::Cluster => ErrorCode::ClusterAuthorizationFailed,
        ResourceType::TransactionalId => ErrorCode::TransactionalIdAuthorizationFailed,
        ResourceType::DelegationToken | ResourceType::User => {
            ErrorCode::DelegationTokenAuthorizationFailed
        }
        ResourceType::Unknown | ResourceType::Any => ErrorCode::UnknownServerError,
    }
}

const fn req(
    resource_type: ResourceType,
    operation: AclOperation,
    target: Target,
    scope: FailureScope,
) -> AclRequirement {
    AclRequirement {
        resource_type,
        operation,
        target,
        error: authorization_error(resource_type),
        scope,
    }
}

const fn check(when: Condition, any_of: &'static [AclRequirement]) -> ApiCheck {
    ApiCheck { when, any_of }
}

use AclOperation as Op;
use Condition as C;
use FailureScope::{Filtered, PerResource, WholeRequest};
use ResourceType as R;

const fn cluster(op: AclOperation) -> AclRequirement {
    req(R::Cluster, op, Target::Cluster, WholeRequest)
}
const fn topics(op: AclOperation) -> AclRequirement {
    req(R::Topic, op, Target::Topics, PerResource)
}
const fn group(op: AclOperation) -> AclRequirement {
    req(R::Group, op, Target::Groups, WholeRequest)
}
const fn groups_each(op: AclOperation) -> AclRequirement {
    req(R::Group, op, Target::Groups, PerResource)
}
const fn txn_id(op: AclOperation) -> AclRequirement {
    req(
        R::TransactionalId,
        op,
        Target::TransactionalIds,
        WholeRequest,
    )
}
/// Transactional id DESCRIBE, failing (or filtering out) only the ids concerned.
const fn txn_ids_describe(scope: FailureScope) -> AclRequirement {
    req(
        R::TransactionalId,
        Op::Describe,
        Target::TransactionalIds,
        scope,
    )
}
/// Cluster CREATE or Topic CREATE on each topic.
const CLUSTER_OR_TOPIC_CREATE: &[AclRequirement] = &[
    req(R::Cluster, Op::Create, Target::Cluster, PerResource),
    topics(Op::Create),
];

const CLUSTER_ACTION: &[ApiCheck] = &[check(C::Always, &[cluster(Op::ClusterAction)])];
const CLUSTER_ALTER: &[ApiCheck] = &[check(C::Always, &[cluster(Op::Alter)])];
const CLUSTER_DESCRIBE: &[ApiCheck] = &[check(C::Always, &[cluster(Op::Describe)])];
const GROUP_READ: &[ApiCheck] = &[check(C::Always, &[group(Op::Read)])];
const NONE: &[ApiCheck] = &[];
const GROUP_READ_TOPICS_READ: &[ApiCheck] = &[
    check(C::Always, &[group(Op::Read)]),
    check(C::Always, &[topics(Op::Read)]),
];

const fn per_config(rt: ResourceType, op: AclOperation) -> AclRequirement {
    req(rt, op, Target::ConfigResources, PerResource)
}
/// The checks of a config API: `op` on each config resource, by the resource type that guards it
/// (see [`config_resource_acl_type`]).
macro_rules! config_checks {
    ($op:expr) => {
        &[
            check(C::TopicConfigResource, &[per_config(R::Topic, $op)]),
            check(C::GroupConfigResource, &[per_config(R::Group, $op)]),
            check(C::ClusterConfigResource, &[per_config(R::Cluster, $op)]),
        ]
    };
}
const DESCRIBE_CONFIGS: &[ApiCheck] = config_checks!(Op::DescribeConfigs);
const ALTER_CONFIGS: &[ApiCheck] = config_checks!(Op::AlterConfigs);

/// The ACL resource type that guards a config resource, by Kafka's `ConfigResource.Type` code:
/// TOPIC (2) a topic, GROUP (32) a group, BROKER (4), BROKER_LOGGER (8) and CLIENT_METRICS (16)
/// the cluster; `None` for other codes (no ACL is checked).
pub const fn config_resource_acl_type(config_resource_type: i8) -> Option<ResourceType> {
    match config_resource_type {
        2 => Some(R::Topic),
        32 => Some(R::Group),
        4 | 8 | 16 => Some(R::Cluster),
        _ => None,
    }
}

/// A `'static` list of checks: a const item, so the nested requirement slices are promoted.
macro_rules! checks {
    ($($c:expr),* $(,)?) => {{
        const CHECKS: &[ApiCheck] = &[$($c),*];
        CHECKS
    }};
}

fn entry(api_key: ApiKey, checks: &'static [ApiCheck], note: &'static str) -> ApiAcls {
    ApiAcls {
        api_key,
        checks,
        note,
    }
}

/// The ACL checks a broker (or controller) makes for `api_key`.
pub fn api_acls(api_key: ApiKey) -> ApiAcls {
    use ApiKey as K;
    let e = |checks, note| entry(api_key, checks, note);
    match api_key {
        K::Produce => e(
            checks![
                check(C::Always, &[topics(Op::Write)]),
                check(C::Transactional, &[txn_id(Op::Write)]),
            ],
            "Checked before the topic's existence: an unauthorized unknown topic is TOPIC_AUTHORIZATION_FAILED.",
        ),
        K::Fetch => e(
            checks![
                check(C::ConsumerFetch, &[topics(Op::Read)]),
                check(C::FollowerFetch, &[cluster(Op::ClusterAction)]),
            ],
            "Checked before the topic's existence.",
        ),
        K::ListOffsets | K::DescribeTopicPartitions => {
            e(checks![check(C::Always, &[topics(Op::Describe)])], "")
        }
        K::Metadata => e(
            checks![
                check(C::Always, &[topics(Op::Describe)]),
                check(C::AutoCreateTopics, CLUSTER_OR_TOPIC_CREATE),
            ],
            "An all-topics request leaves undescribable topics out; a named one answers TOPIC_AUTHORIZATION_FAILED with a zero id and no existence check.",
        ),
        K::LeaderAndIsr
        | K::StopReplica
        | K::UpdateMetadata
        | K::ControlledShutdown
        | K::WriteTxnMarkers
        | K::Vote
        | K::BeginQuorumEpoch
        | K::EndQuorumEpoch
        | K::AlterPartition
        | K::Envelope
        | K::FetchSnapshot
        | K::BrokerRegistration
        | K::BrokerHeartbeat
        | K::AllocateProducerIds
        | K::ControllerRegistration
        | K::AssignReplicasToDirs
        | K::UpdateRaftVoter
        | K::InitializeShareGroupState
        | K::ReadShareGroupState
        | K::WriteShareGroupState
        | K::DeleteShareGroupState
        | K::ReadShareGroupStateSummary => e(CLUSTER_ACTION, "Inter-broker and controller API."),
        K::OffsetCommit => e(
            GROUP_READ_TOPICS_READ,
            "Topics are checked before their existence.",
        ),
        K::OffsetFetch => e(
            checks![
                check(C::Always, &[groups_each(Op::Describe)]),
                check(C::Always, &[topics(Op::Describe)]),
            ],
            "Fetching all offsets drops the partitions of undescribable topics instead of marking them.",
        ),
        K::OffsetDelete => e(
            checks![
                check(C::Always, &[group(Op::Delete)]),
                check(C::Always, &[topics(Op::Read)]),
            ],
            "",
        ),
        K::FindCoordinator => e(
            checks![
                check(C::GroupCoordinatorKey, &[groups_each(Op::Describe)]),
                check(
                    C::TransactionCoordinatorKey,
                    &[txn_ids_describe(PerResource)],
                ),
            ],
            "",
        ),
        K::JoinGroup | K::SyncGroup | K::Heartbeat | K::LeaveGroup => e(GROUP_READ, ""),
        K::ConsumerGroupHeartbeat | K::ShareGroupHeartbeat => e(
            checks![
                check(C::Always, &[group(Op::Read)]),
                check(
                    C::SubscribedTopics,
                    &[req(R::Topic, Op::Describe, Target::Topics, WholeRequest)],
                ),
            ],
            "Any undescribable subscribed topic fails the heartbeat with TOPIC_AUTHORIZATION_FAILED (KAFKA-18813); topics a regex resolves to are filtered by the same check instead.",
        ),
        K::DescribeGroups | K::ShareGroupDescribe => {
            e(checks![check(C::Always, &[groups_each(Op::Describe)])], "")
        }
        K::ConsumerGroupDescribe => e(
            checks![
                check(C::Always, &[groups_each(Op::Describe)]),
                check(
                    C::GroupTopics,
                    &[req(R::Topic, Op::Describe, Target::Topics, PerResource)],
                ),
            ],
            "A described group with an undescribable topic loses its details and gets TOPIC_AUTHORIZATION_FAILED (KAFKA-18813).",
        ),
        K::ListGroups => e(
            checks![check(
                C::Always,
                &[
                    cluster(Op::Describe),
                    req(R::Group, Op::Describe, Target::Groups, Filtered),
                ],
            )],
            "Cluster DESCRIBE lists every group; otherwise only the groups the principal may describe, with no error.",
        ),
        K::DeleteGroups => e(checks![check(C::Always, &[groups_each(Op::Delete)])], ""),
        K::SaslHandshake
        | K::ApiVersions
        | K::SaslAuthenticate
        | K::RenewDelegationToken
        | K::ExpireDelegationToken
        | K::GetTelemetrySubscriptions
        | K::PushTelemetry => e(NONE, ""),
        K::DescribeCluster => e(
            NONE,
            "No check; its authorized operations field is 0 without Cluster DESCRIBE.",
        ),
        K::CreateTopics => e(
            checks![
                check(C::Always, CLUSTER_OR_TOPIC_CREATE),
                check(
                    C::ConfigsInReply,
                    &[req(R::Topic, Op::DescribeConfigs, Target::Topics, PerResource)],
                ),
            ],
            "",
        ),
        K::DeleteTopics => e(
            checks![check(C::Always, &[topics(Op::Delete)])],
            "UNKNOWN_TOPIC_OR_PARTITION is only revealed to principals that may also describe the topic.",
        ),
        K::DeleteRecords => e(checks![check(C::Always, &[topics(Op::Delete)])], ""),
        K::CreatePartitions => e(checks![check(C::Always, &[topics(Op::Alter)])], ""),
        K::InitProducerId => e(
            checks![
                check(C::WithTransactionalId, &[txn_id(Op::Write)]),
                check(
                    C::WithoutTransactionalId,
                    &[
                        cluster(Op::IdempotentWrite),
                        AclRequirement {
                            error: ErrorCode::ClusterAuthorizationFailed,
                            ..req(R::Topic, Op::Write, Target::AnyOfType, WholeRequest)
                        },
                    ],
                ),
            ],
            "",
        ),
        K::OffsetForLeaderEpoch => e(
            checks![check(
                C::Always,
                &[
                    req(R::Cluster, Op::ClusterAction, Target::Cluster, PerResource),
                    topics(Op::Describe),
                ],
            )],
            "",
        ),
        K::AddPartitionsToTxn => e(
            checks![
                check(C::VersionAtMost(3), &[txn_id(Op::Write)]),
                check(C::VersionAtMost(3), &[topics(Op::Write)]),
                check(C::VersionAtLeast(4), &[cluster(Op::ClusterAction)]),
            ],
            "Versions 4+ are the brokers' verification batches.",
        ),
        K::AddOffsetsToTxn => e(
            checks![
                check(C::Always, &[txn_id(Op::Write)]),
                check(C::Always, &[group(Op::Read)]),
            ],
            "",
        ),
        K::TxnOffsetCommit => e(
            checks![
                check(C::Always, &[txn_id(Op::Write)]),
                check(C::Always, &[group(Op::Read)]),
                check(C::Always, &[topics(Op::Read)]),
            ],
            "",
        ),
        K::EndTxn => e(checks![check(C::Always, &[txn_id(Op::Write)])], ""),
        K::DescribeAcls => e(
            CLUSTER_DESCRIBE,
            "Without an authorizer the answer is SECURITY_DISABLED.",
        ),
        K::CreateAcls | K::DeleteAcls => e(
            CLUSTER_ALTER,
            "Without an authorizer the answer is SECURITY_DISABLED.",
        ),
        K::DescribeConfigs => e(DESCRIBE_CONFIGS, ""),
        K::AlterConfigs | K::IncrementalAlterConfigs => e(ALTER_CONFIGS, ""),
        K::AlterReplicaLogDirs
        | K::ElectLeaders
        | K::AlterPartitionReassignments
        | K::UpdateFeatures
        | K::AlterUserScramCredentials
        | K::UnregisterBroker
        | K::AddRaftVoter
        | K::RemoveRaftVoter => e(CLUSTER_ALTER, ""),
        K::DescribeLogDirs
        | K::ListPartitionReassignments
        | K::DescribeUserScramCredentials
        | K::DescribeQuorum => e(CLUSTER_DESCRIBE, ""),
        K::DescribeClientQuotas | K::ListClientMetricsResources => {
            e(checks![check(C::Always, &[cluster(Op::DescribeConfigs)])], "")
        }
        K::AlterClientQuotas => e(checks![check(C::Always, &[cluster(Op::AlterConfigs)])], ""),
        K::CreateDelegationToken => e(
            checks![check(
                C::OwnerIsAnotherUser,
                &[req(R::User, Op::CreateTokens, Target::Users, WholeRequest)],
            )],
            "Tokens cannot be created over a delegation-token connection.",
        ),
        K::DescribeDelegationToken => e(
            checks![check(
                C::Always,
                &[req(
                    R::DelegationToken,
                    Op::Describe,
                    Target::DelegationTokens,
                    Filtered,
                )],
            )],
            "A principal also sees the tokens it owns or renews, and those of owners it has User DESCRIBE_TOKENS on.",
        ),
        K::DescribeProducers => e(checks![check(C::Always, &[topics(Op::Read)])], ""),
        K::DescribeTransactions => e(
            checks![check(C::Always, &[txn_ids_describe(PerResource)])],
            "",
        ),
        K::ListTransactions => e(
            checks![check(C::Always, &[txn_ids_describe(Filtered)])],
            "",
        ),
        K::ShareFetch | K::ShareAcknowledge => e(GROUP_READ_TOPICS_READ, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only(api: ApiKey) -> AclRequirement {
        let a = api_acls(api);
        assert_eq!(a.checks.len(), 1, "{api:?}");
        assert_eq!(a.checks[0].any_of.len(), 1, "{api:?}");
        a.checks[0].any_of[0]
    }

    #[test]
    fn every_api_has_an_entry_and_consistent_errors() {
        for key in ApiKey::ALL {
            let a = api_acls(key);
            assert_eq!(a.api_key, key);
            for c in a.checks {
                assert!(!c.any_of.is_empty(), "{key:?}");
                for r in c.any_of {
                    assert!(r.resource_type.is_concrete());
                    assert!(
                        r.resource_type
                            .supported_operations()
                            .contains(&r.operation),
                        "{key:?}: {} on {}",
                        r.operation,
                        r.resource_type
                    );
                    if r.target == Target::Cluster {
                        assert_eq!(r.resource_type, ResourceType::Cluster);
                    }
                }
            }
        }
    }

    #[test]
    fn acl_apis_need_cluster_alter_or_describe() {
        for api in [ApiKey::CreateAcls, ApiKey::DeleteAcls] {
            let r = only(api);
            assert_eq!(
                (r.resource_type, r.operation),
                (ResourceType::Cluster, AclOperation::Alter)
            );
            assert_eq!(r.error, ErrorCode::ClusterAuthorizationFailed);
            assert_eq!(r.scope, FailureScope::WholeRequest);
        }
        assert_eq!(only(ApiKey::DescribeAcls).operation, AclOperation::Describe);
        assert_eq!(
            only(ApiKey::AlterClientQuotas).operation,
            AclOperation::AlterConfigs
        );
        assert_eq!(
            only(ApiKey::DescribeClientQuotas).operation,
            AclOperation::DescribeConfigs
        );
        assert_eq!(
            only(ApiKey::BrokerHeartbeat).operation,
            AclOperation::ClusterAction
        );
    }

    #[test]
    fn idempotent_init_producer_id_accepts_cluster_or_any_topic_write() {
        let a = api_acls(ApiKey::InitProducerId);
        let idem = a
            .checks
            .iter()
            .find(|c| c.when == Condition::WithoutTransactionalId)
            .unwrap();
        assert_eq!(idem.any_of[0].operation, AclOperation::IdempotentWrite);
        assert_eq!(idem.any_of[1].target, Target::AnyOfType);
        assert!(idem
            .any_of
            .iter()
            .all(|r| r.error == ErrorCode::ClusterAuthorizationFailed));
        let txn = a
            .checks
            .iter()
            .find(|c| c.when == Condition::WithTransactionalId)
            .unwrap();
        assert_eq!(
            txn.any_of[0].error,
            ErrorCode::TransactionalIdAuthorizationFailed
        );
    }

    #[test]
    fn config_resources_are_guarded_by_topic_group_or_cluster() {
        let guards: Vec<_> = [2, 32, 4, 8, 16, 0, 1, 64]
            .into_iter()
            .map(config_resource_acl_type)
            .collect();
        use ResourceType::{Cluster, Group, Topic};
        assert_eq!(
            guards,
            [
                Some(Topic),
                Some(Group),
                Some(Cluster),
                Some(Cluster),
                Some(Cluster),
                None,
                None,
                None
            ]
        );
    }

    #[test]
    fn group_and_topic_pairs() {
        let commit = api_acls(ApiKey::OffsetCommit);
        assert_eq!(
            commit.checks[0].any_of[0].error,
            ErrorCode::GroupAuthorizationFailed
        );
        assert_eq!(commit.checks[1].any_of[0].operation, AclOperation::Read);
        let fetch = api_acls(ApiKey::OffsetFetch);
        assert!(fetch
            .checks
            .iter()
            .all(|c| c.any_of[0].operation == AclOperation::Describe));
        let hb = api_acls(ApiKey::ConsumerGroupHeartbeat);
        assert_eq!(hb.checks[1].when, Condition::SubscribedTopics);
        assert_eq!(
            hb.checks[1].any_of[0].error,
            ErrorCode::TopicAuthorizationFailed
        );
        let cfg = api_acls(ApiKey::IncrementalAlterConfigs);
        let broker = cfg
            .checks
            .iter()
            .find(|c| c.when == Condition::ClusterConfigResource)
            .unwrap();
        assert_eq!(
            broker.any_of[0].error,
            ErrorCode::ClusterAuthorizationFailed
        );
        assert_eq!(broker.any_of[0].operation, AclOperation::AlterConfigs);
    }
}
