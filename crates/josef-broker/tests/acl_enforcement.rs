//! ACLs on an in-process broker: the ACL APIs, and each API's required operation allowed and
//! denied, spoken to with raw josef-protocol requests.
//!
//! Every connection here is `User:ANONYMOUS` from 127.0.0.1. ACLs are created by a first broker
//! that has `User:ANONYMOUS` as super user; a second broker on the same data dir (the ACLs are in
//! its local metadata store) then enforces them with the configuration under test.

use bytes::Bytes;
use josef_authorizer::convert::{
    creation_from_binding, delete_filter_from_filter, describe_request_from_filter,
};
use josef_authorizer::{
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation,
    PatternType, ResourcePattern, ResourcePatternFilter, ResourceType,
};
use josef_broker::Broker;
use josef_protocol::messages::fetch_request::FetchTopic;
use josef_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use josef_protocol::messages::metadata_request::MetadataRequestTopic;
use josef_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, ResponseBody};

mod common;
use common::{create_topic, fetch_partition, produce_request, start_with, Client};

const AUTHORIZER: (&str, &str) = (
    "authorizer.class.name",
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
);
const ME: &str = "User:ANONYMOUS";

fn acl(
    rt: ResourceType,
    name: &str,
    pattern: PatternType,
    principal: &str,
    host: &str,
    op: AclOperation,
    allow: bool,
) -> AclBinding {
    let entry = if allow {
        AccessControlEntry::allow(principal, host, op)
    } else {
        AccessControlEntry::deny(principal, host, op)
    };
    AclBinding::new(ResourcePattern::new(rt, name, pattern), entry)
}

fn allow_me(rt: ResourceType, name: &str, op: AclOperation) -> AclBinding {
    acl(rt, name, PatternType::Literal, ME, "*", op, true)
}

fn batch() -> Bytes {
    josef_log::testing::batch(0, 1_700_000_000_000, &[(None, Some(b"v".as_slice()))]).freeze()
}

async fn create_acls(c: &mut Client, acls: &[AclBinding]) -> Vec<i16> {
    let r = c
        .call(
            3,
            CreateAclsRequest {
                creations: acls.iter().map(creation_from_binding).collect(),
                ..Default::default()
            },
        )
        .await;
    let ResponseBody::CreateAcls(r) = r else {
        panic!("not CreateAcls")
    };
    r.results.iter().map(|r| r.error_code).collect()
}

async fn describe_acls(c: &mut Client, filter: &AclBindingFilter) -> DescribeAclsResponse {
    let ResponseBody::DescribeAcls(r) = c.call(3, describe_request_from_filter(filter)).await
    else {
        panic!("not DescribeAcls")
    };
    r
}

fn count(r: &DescribeAclsResponse) -> usize {
    r.resources.iter().map(|x| x.acls.len()).sum()
}

/// Creates `topics` and `acls` as super user, then restarts the broker with the authorizer and
/// `config` (no super user unless `config` names one).
async fn broker_with(
    dir: &std::path::Path,
    topics: &[&str],
    acls: &[AclBinding],
    config: &[(&str, &str)],
) -> Broker {
    let setup = start_with(dir, &[AUTHORIZER, ("super.users", ME)]).await;
    let mut c = Client::connect(&setup).await;
    for t in topics {
        create_topic(&mut c, t, 1).await;
    }
    // One NONE per ACL: `all` over an empty answer would pass.
    assert_eq!(create_acls(&mut c, acls).await, vec![0; acls.len()]);
    drop(c);
    setup.shutdown().await;
    let mut props = vec![AUTHORIZER];
    props.extend_from_slice(config);
    start_with(dir, &props).await
}

async fn produce_error(c: &mut Client, topic: &str) -> i16 {
    let ResponseBody::Produce(r) = c.call(9, produce_request(topic, batch())).await else {
        panic!("not Produce")
    };
    r.responses[0].partition_responses[0].error_code
}

async fn fetch_error(c: &mut Client, topic: &str) -> i16 {
    let r = c
        .fetch(
            12,
            FetchRequest {
                replica_id: -1,
                max_wait_ms: 0,
                max_bytes: 1 << 20,
                session_epoch: -1,
                topics: vec![FetchTopic {
                    topic: topic.into(),
                    partitions: vec![fetch_partition(0, 0)],
                    ..Default::default()
                }],
                ..Default::default()
            },
        )
        .await;
    r.responses[0].partitions[0].error_code
}

async fn metadata(c: &mut Client, topics: Option<&[&str]>, auto_create: bool) -> MetadataResponse {
    let req = MetadataRequest {
        topics: topics.map(|ts| {
            ts.iter()
                .map(|t| MetadataRequestTopic {
                    name: Some((*t).into()),
                    ..Default::default()
                })
                .collect()
        }),
        allow_auto_topic_creation: auto_create,
        include_topic_authorized_operations: true,
        include_cluster_authorized_operations: true,
        ..Default::default()
    };
    let ResponseBody::Metadata(r) = c.call(9, req).await else {
        panic!("not Metadata")
    };
    r
}

fn names(r: &MetadataResponse) -> Vec<String> {
    r.topics
        .iter()
        .filter(|t| t.error_code == 0)
        .filter_map(|t| t.name.as_ref().map(|n| n.to_string()))
        .collect()
}

const DENIED_TOPIC: i16 = ErrorCode::TopicAuthorizationFailed as i16;
const DENIED_GROUP: i16 = ErrorCode::GroupAuthorizationFailed as i16;
const DENIED_CLUSTER: i16 = ErrorCode::ClusterAuthorizationFailed as i16;
const DENIED_TXN: i16 = ErrorCode::TransactionalIdAuthorizationFailed as i16;

#[tokio::test]
async fn without_an_authorizer_acl_apis_are_disabled_and_every_operation_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[]).await;
    let mut c = Client::connect(&b).await;
    create_topic(&mut c, "t", 1).await;
    let codes = create_acls(
        &mut c,
        &[allow_me(ResourceType::Topic, "t", AclOperation::Read)],
    )
    .await;
    assert_eq!(codes, vec![ErrorCode::SecurityDisabled as i16]);
    let d = describe_acls(&mut c, &AclBindingFilter::ANY).await;
    assert_eq!(d.error_code, ErrorCode::SecurityDisabled as i16);
    let m = metadata(&mut c, Some(&["t"]), false).await;
    let topic_ops = josef_authorizer::AuthorizedOperations::all_supported(ResourceType::Topic);
    assert_eq!(m.topics[0].topic_authorized_operations, topic_ops.bits());
    let cluster_ops = josef_authorizer::AuthorizedOperations::all_supported(ResourceType::Cluster);
    assert_eq!(m.cluster_authorized_operations, cluster_ops.bits());
    let ResponseBody::DescribeCluster(dc) = c
        .call(
            0,
            DescribeClusterRequest {
                include_cluster_authorized_operations: true,
                endpoint_type: 1,
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(dc.cluster_authorized_operations, cluster_ops.bits());
    assert_eq!(produce_error(&mut c, "t").await, 0);
    b.shutdown().await;
}

#[tokio::test]
async fn acls_are_created_described_deleted_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[AUTHORIZER, ("super.users", ME)]).await;
    let mut c = Client::connect(&b).await;
    let lit = acl(
        ResourceType::Topic,
        "orders-eu",
        PatternType::Literal,
        "User:a",
        "*",
        AclOperation::Read,
        true,
    );
    let pre = acl(
        ResourceType::Topic,
        "orders-",
        PatternType::Prefixed,
        "User:b",
        "*",
        AclOperation::Write,
        true,
    );
    let star = acl(
        ResourceType::Topic,
        "*",
        PatternType::Literal,
        "User:c",
        "*",
        AclOperation::Describe,
        false,
    );
    let group = acl(
        ResourceType::Group,
        "g",
        PatternType::Literal,
        "User:a",
        "*",
        AclOperation::Read,
        true,
    );
    let bad = acl(
        ResourceType::Topic,
        "x",
        PatternType::Match,
        "User:a",
        "*",
        AclOperation::Read,
        true,
    );
    let bad_cluster = acl(
        ResourceType::Cluster,
        "other",
        PatternType::Literal,
        "User:a",
        "*",
        AclOperation::Alter,
        true,
    );
    let codes = create_acls(
        &mut c,
        &[lit.clone(), pre, star, group, bad, bad_cluster, lit],
    )
    .await;
    let invalid = ErrorCode::InvalidRequest as i16;
    assert_eq!(codes, vec![0, 0, 0, 0, invalid, invalid, 0]);
    assert_eq!(
        count(&describe_acls(&mut c, &AclBindingFilter::ANY).await),
        4
    );
    // MATCH: the literal name, the `*` and the covering prefix.
    let matching = AclBindingFilter::new(
        ResourcePatternFilter {
            resource_type: ResourceType::Topic,
            name: Some("orders-eu".into()),
            pattern_type: PatternType::Match,
        },
        AccessControlEntryFilter::ANY,
    );
    assert_eq!(count(&describe_acls(&mut c, &matching).await), 3);
    let prefixed_only = AclBindingFilter::new(
        ResourcePatternFilter {
            resource_type: ResourceType::Any,
            name: None,
            pattern_type: PatternType::Prefixed,
        },
        AccessControlEntryFilter::ANY,
    );
    let d = describe_acls(&mut c, &prefixed_only).await;
    assert_eq!(count(&d), 1);
    assert_eq!(d.resources[0].resource_name.as_str(), "orders-");
    let by_principal = AclBindingFilter::new(
        ResourcePatternFilter::ANY,
        AccessControlEntryFilter {
            principal: Some("User:a".into()),
            ..AccessControlEntryFilter::ANY
        },
    );
    assert_eq!(count(&describe_acls(&mut c, &by_principal).await), 2);
    let unknown = AclBindingFilter::new(
        ResourcePatternFilter {
            resource_type: ResourceType::Unknown,
            ..ResourcePatternFilter::ANY
        },
        AccessControlEntryFilter::ANY,
    );
    assert_eq!(describe_acls(&mut c, &unknown).await.error_code, invalid);
    drop(c);
    b.shutdown().await;

    let b = start_with(dir.path(), &[AUTHORIZER, ("super.users", ME)]).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(
        count(&describe_acls(&mut c, &AclBindingFilter::ANY).await),
        4
    );
    let ResponseBody::DeleteAcls(r) = c
        .call(
            3,
            DeleteAclsRequest {
                filters: vec![
                    delete_filter_from_filter(&matching),
                    delete_filter_from_filter(&by_principal),
                ],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(r.filter_results[0].matching_acls.len(), 3);
    assert_eq!(r.filter_results[1].matching_acls.len(), 2);
    let d = describe_acls(&mut c, &AclBindingFilter::ANY).await;
    assert_eq!(count(&d), 0, "{d:?}");
    b.shutdown().await;
}

#[tokio::test]
async fn acl_apis_need_cluster_alter_and_describe() {
    let dir = tempfile::tempdir().unwrap();
    let read_only = [allow_me(
        ResourceType::Cluster,
        "kafka-cluster",
        AclOperation::Describe,
    )];
    let b = broker_with(dir.path(), &[], &read_only, &[]).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(
        describe_acls(&mut c, &AclBindingFilter::ANY)
            .await
            .error_code,
        0
    );
    let codes = create_acls(
        &mut c,
        &[allow_me(ResourceType::Topic, "t", AclOperation::Read)],
    )
    .await;
    assert_eq!(codes, vec![DENIED_CLUSTER]);
    b.shutdown().await;
    let b = broker_with(dir.path(), &[], &[], &[("super.users", "User:admin")]).await;
    let mut c = Client::connect(&b).await;
    // The ACL for DESCRIBE is still there: DescribeAcls passes, DeleteAcls does not.
    let ResponseBody::DeleteAcls(r) = c
        .call(
            3,
            DeleteAclsRequest {
                filters: vec![delete_filter_from_filter(&AclBindingFilter::ANY)],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(r.filter_results[0].error_code, DENIED_CLUSTER);
    b.shutdown().await;
}

#[tokio::test]
async fn produce_fetch_and_list_offsets_need_write_read_and_describe() {
    let dir = tempfile::tempdir().unwrap();
    let acls = [
        allow_me(ResourceType::Topic, "w", AclOperation::Write),
        allow_me(ResourceType::Topic, "r", AclOperation::Read),
        allow_me(ResourceType::Topic, "r", AclOperation::Write),
    ];
    let b = broker_with(dir.path(), &["w", "r", "none"], &acls, &[]).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(produce_error(&mut c, "w").await, 0);
    assert_eq!(produce_error(&mut c, "r").await, 0);
    assert_eq!(produce_error(&mut c, "none").await, DENIED_TOPIC);
    // Checked before existence.
    assert_eq!(produce_error(&mut c, "no-such-topic").await, DENIED_TOPIC);
    assert_eq!(fetch_error(&mut c, "r").await, 0);
    assert_eq!(fetch_error(&mut c, "w").await, DENIED_TOPIC);
    assert_eq!(fetch_error(&mut c, "none").await, DENIED_TOPIC);
    let list = |t: &str| ListOffsetsTopic {
        name: t.into(),
        partitions: vec![ListOffsetsPartition {
            partition_index: 0,
            timestamp: -1,
            current_leader_epoch: -1,
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::ListOffsets(r) = c
        .call(
            7,
            ListOffsetsRequest {
                replica_id: -1,
                topics: vec![list("none"), list("w")],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    let err = |name: &str| {
        r.topics
            .iter()
            .find(|t| t.name.as_str() == name)
            .unwrap()
            .partitions[0]
            .error_code
    };
    // WRITE implies DESCRIBE.
    assert_eq!(err("w"), 0);
    assert_eq!(err("none"), DENIED_TOPIC);
    let producers = |t: &str| describe_producers_request::TopicRequest {
        name: t.into(),
        partition_indexes: josef_protocol::smallvec![0],
        ..Default::default()
    };
    let ResponseBody::DescribeProducers(r) = c
        .call(
            0,
            DescribeProducersRequest {
                topics: vec![producers("r"), producers("w")],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    let err = |name: &str| {
        r.topics
            .iter()
            .find(|t| t.name.as_str() == name)
            .unwrap()
            .partitions[0]
            .error_code
    };
    assert_eq!(err("r"), 0);
    assert_eq!(err("w"), DENIED_TOPIC, "DescribeProducers needs READ");
    b.shutdown().await;
}

#[tokio::test]
async fn metadata_hides_undescribable_topics_and_guards_auto_creation() {
    let dir = tempfile::tempdir().unwrap();
    let acls = [
        allow_me(ResourceType::Topic, "visible", AclOperation::Read),
        acl(
            ResourceType::Topic,
            "auto-",
            PatternType::Prefixed,
            ME,
            "*",
            AclOperation::All,
            true,
        ),
    ];
    let b = broker_with(dir.path(), &["visible", "hidden"], &acls, &[]).await;
    let mut c = Client::connect(&b).await;
    let all = metadata(&mut c, None, false).await;
    assert_eq!(names(&all), vec!["visible".to_string()]);
    // No cluster ACL: the cluster's operations are none.
    assert_eq!(all.cluster_authorized_operations, 0);
    let named = metadata(&mut c, Some(&["visible", "hidden", "nope"]), true).await;
    let find = |n: &str| {
        named
            .topics
            .iter()
            .find(|t| t.name.as_deref() == Some(n))
            .unwrap()
    };
    assert_eq!(find("visible").error_code, 0);
    // READ and the DESCRIBE it implies.
    assert_eq!(
        find("visible").topic_authorized_operations,
        (1 << 3) | (1 << 8)
    );
    assert_eq!(find("hidden").error_code, DENIED_TOPIC);
    assert_eq!(find("hidden").topic_id, josef_protocol::Uuid::ZERO);
    assert_eq!(find("nope").error_code, DENIED_TOPIC);
    // auto-* may be described and created: auto-created.
    let auto = metadata(&mut c, Some(&["auto-1"]), true).await;
    assert_eq!(auto.topics[0].error_code, 0, "{auto:?}");
    assert!(!auto.topics[0].partitions.is_empty());
    b.shutdown().await;
}

#[tokio::test]
async fn deny_wins_prefixes_and_wildcards_cover_and_hosts_must_match() {
    let dir = tempfile::tempdir().unwrap();
    let acls = [
        acl(
            ResourceType::Topic,
            "orders-",
            PatternType::Prefixed,
            "User:*",
            "*",
            AclOperation::Read,
            true,
        ),
        acl(
            ResourceType::Topic,
            "orders-secret",
            PatternType::Literal,
            ME,
            "*",
            AclOperation::Read,
            false,
        ),
        acl(
            ResourceType::Topic,
            "*",
            PatternType::Literal,
            ME,
            "*",
            AclOperation::Write,
            true,
        ),
        acl(
            ResourceType::Topic,
            "elsewhere",
            PatternType::Literal,
            ME,
            "10.0.0.1",
            AclOperation::Read,
            true,
        ),
        acl(
            ResourceType::Topic,
            "here",
            PatternType::Literal,
            ME,
            "127.0.0.1",
            AclOperation::Read,
            true,
        ),
        acl(
            ResourceType::Topic,
            "someone-else",
            PatternType::Literal,
            "User:alice",
            "*",
            AclOperation::Read,
            true,
        ),
    ];
    let topics = [
        "orders-eu",
        "orders-secret",
        "order",
        "elsewhere",
        "here",
        "someone-else",
    ];
    let b = broker_with(dir.path(), &topics, &acls, &[]).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(fetch_error(&mut c, "orders-eu").await, 0);
    assert_eq!(fetch_error(&mut c, "orders-secret").await, DENIED_TOPIC);
    assert_eq!(fetch_error(&mut c, "order").await, DENIED_TOPIC);
    assert_eq!(fetch_error(&mut c, "elsewhere").await, DENIED_TOPIC);
    assert_eq!(fetch_error(&mut c, "here").await, 0);
    assert_eq!(fetch_error(&mut c, "someone-else").await, DENIED_TOPIC);
    // The wildcard WRITE covers every topic.
    for t in topics {
        assert_eq!(produce_error(&mut c, t).await, 0, "{t}");
    }
    b.shutdown().await;
}

#[tokio::test]
async fn super_users_pass_every_deny() {
    let dir = tempfile::tempdir().unwrap();
    let acls = [acl(
        ResourceType::Topic,
        "t",
        PatternType::Literal,
        ME,
        "*",
        AclOperation::All,
        false,
    )];
    let b = broker_with(
        dir.path(),
        &["t"],
        &acls,
        &[("super.users", "User:admin;User:ANONYMOUS")],
    )
    .await;
    let mut c = Client::connect(&b).await;
    assert_eq!(produce_error(&mut c, "t").await, 0);
    assert_eq!(fetch_error(&mut c, "t").await, 0);
    b.shutdown().await;
}

#[tokio::test]
async fn allow_everyone_if_no_acl_found_only_helps_resources_without_acls() {
    let dir = tempfile::tempdir().unwrap();
    let acls = [acl(
        ResourceType::Topic,
        "guarded",
        PatternType::Literal,
        "User:alice",
        "*",
        AclOperation::Write,
        true,
    )];
    let everyone = [("allow.everyone.if.no.acl.found", "true")];
    let b = broker_with(dir.path(), &["open", "guarded"], &acls, &everyone).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(produce_error(&mut c, "open").await, 0);
    assert_eq!(produce_error(&mut c, "guarded").await, DENIED_TOPIC);
    b.shutdown().await;
    let b = broker_with(dir.path(), &[], &[], &[]).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(
        produce_error(&mut c, "open").await,
        DENIED_TOPIC,
        "the default is false"
    );
    b.shutdown().await;
}

fn join(group: &str) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: group.into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        protocol_type: "consumer".into(),
        protocols: vec![join_group_request::JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: Bytes::from_static(b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[tokio::test]
async fn group_apis_need_group_read_describe_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let acls = [
        allow_me(ResourceType::Group, "mine", AclOperation::Read),
        allow_me(ResourceType::Topic, "t", AclOperation::Read),
    ];
    let commit = |topic: &str| OffsetCommitRequestTopic {
        name: topic.into(),
        partitions: vec![OffsetCommitRequestPartition {
            partition_index: 0,
            committed_offset: 1,
            committed_leader_epoch: -1,
            ..Default::default()
        }],
        ..Default::default()
    };
    let config = [
        ("offsets.topic.num.partitions", "1"),
        ("group.initial.rebalance.delay.ms", "0"),
    ];
    // A group the principal will not see: it exists, with an offset committed by a super user.
    let setup = start_with(dir.path(), &[AUTHORIZER, ("super.users", ME), config[0]]).await;
    let mut c = Client::connect(&setup).await;
    create_topic(&mut c, "other", 1).await;
    let ResponseBody::OffsetCommit(oc) = c
        .call(
            8,
            OffsetCommitRequest {
                group_id: "theirs".into(),
                generation_id_or_member_epoch: -1,
                topics: vec![commit("other")],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(oc.topics[0].partitions[0].error_code, 0);
    drop(c);
    setup.shutdown().await;
    let b = broker_with(dir.path(), &["t"], &acls, &config).await;
    let mut c = Client::connect(&b).await;
    let ResponseBody::FindCoordinator(f) = c
        .call(
            4,
            FindCoordinatorRequest {
                key_type: 0,
                coordinator_keys: vec!["mine".into(), "theirs".into()],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    let fc = |k: &str| {
        f.coordinators
            .iter()
            .find(|x| x.key.as_str() == k)
            .unwrap()
            .error_code
    };
    assert_eq!(fc("theirs"), DENIED_GROUP);
    let ResponseBody::JoinGroup(j) = c.call(5, join("theirs")).await else {
        panic!()
    };
    assert_eq!(j.error_code, DENIED_GROUP);
    // Group READ passes; the commit is then checked per topic.
    let ResponseBody::OffsetCommit(oc) = c
        .call(
            8,
            OffsetCommitRequest {
                group_id: "mine".into(),
                generation_id_or_member_epoch: -1,
                topics: vec![commit("t"), commit("other")],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    let err = |n: &str| {
        oc.topics
            .iter()
            .find(|t| t.name.as_str() == n)
            .unwrap()
            .partitions[0]
            .error_code
    };
    assert_eq!(err("t"), 0, "{oc:?}");
    assert_eq!(err("other"), DENIED_TOPIC);
    let ResponseBody::OffsetCommit(oc) = c
        .call(
            8,
            OffsetCommitRequest {
                group_id: "theirs".into(),
                generation_id_or_member_epoch: -1,
                topics: vec![commit("t")],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(oc.topics[0].partitions[0].error_code, DENIED_GROUP);
    // ListGroups without Cluster DESCRIBE lists only describable groups.
    let ResponseBody::ListGroups(l) = c.call(4, ListGroupsRequest::default()).await else {
        panic!()
    };
    let listed: Vec<_> = l.groups.iter().map(|g| g.group_id.to_string()).collect();
    assert_eq!(listed, vec!["mine".to_string()]);
    let ResponseBody::DescribeGroups(d) = c
        .call(
            5,
            DescribeGroupsRequest {
                groups: vec!["mine".into(), "theirs".into()],
                include_authorized_operations: true,
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    let dg = |n: &str| {
        d.groups
            .iter()
            .find(|g| g.group_id.as_str() == n)
            .unwrap()
            .clone()
    };
    assert_eq!(dg("mine").error_code, 0);
    assert_eq!(dg("mine").authorized_operations, (1 << 3) | (1 << 8));
    assert_eq!(dg("theirs").error_code, DENIED_GROUP);
    let ResponseBody::DeleteGroups(dr) = c
        .call(
            2,
            DeleteGroupsRequest {
                groups_names: vec!["mine".into()],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(
        dr.results[0].error_code, DENIED_GROUP,
        "READ does not give DELETE"
    );
    b.shutdown().await;
}

async fn init_producer_id(c: &mut Client, txn: Option<&str>) -> i16 {
    let ResponseBody::InitProducerId(r) = c
        .call(
            4,
            InitProducerIdRequest {
                transactional_id: txn.map(Into::into),
                transaction_timeout_ms: 60_000,
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    r.error_code
}

#[tokio::test]
async fn producer_ids_need_a_transactional_id_write_or_idempotent_write() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker_with(dir.path(), &["t"], &[], &[]).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(init_producer_id(&mut c, None).await, DENIED_CLUSTER);
    assert_eq!(init_producer_id(&mut c, Some("tx")).await, DENIED_TXN);
    let ResponseBody::EndTxn(e) = c
        .call(
            3,
            EndTxnRequest {
                transactional_id: "tx".into(),
                producer_id: 1,
                producer_epoch: 0,
                committed: true,
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(e.error_code, DENIED_TXN);
    b.shutdown().await;
    // WRITE on some topic is enough for an idempotent producer (Kafka 3+).
    let acls = [allow_me(ResourceType::Topic, "t", AclOperation::Write)];
    let b = broker_with(dir.path(), &[], &acls, &[]).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(init_producer_id(&mut c, None).await, 0);
    b.shutdown().await;
}

#[tokio::test]
async fn admin_apis_need_create_delete_and_config_operations() {
    let dir = tempfile::tempdir().unwrap();
    let acls = [
        acl(
            ResourceType::Topic,
            "mine-",
            PatternType::Prefixed,
            ME,
            "*",
            AclOperation::Create,
            true,
        ),
        allow_me(ResourceType::Topic, "t", AclOperation::DescribeConfigs),
    ];
    let b = broker_with(dir.path(), &["t"], &acls, &[]).await;
    let mut c = Client::connect(&b).await;
    let topic = |n: &str| create_topics_request::CreatableTopic {
        name: n.into(),
        num_partitions: 1,
        replication_factor: 1,
        ..Default::default()
    };
    let ResponseBody::CreateTopics(r) = c
        .call(
            7,
            CreateTopicsRequest {
                topics: vec![topic("mine-1"), topic("yours-1")],
                timeout_ms: 5000,
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    let err = |n: &str| {
        r.topics
            .iter()
            .find(|t| t.name.as_str() == n)
            .unwrap()
            .error_code
    };
    assert_eq!(err("mine-1"), 0);
    assert_eq!(err("yours-1"), DENIED_TOPIC);
    let ResponseBody::DeleteTopics(r) = c
        .call(
            5,
            DeleteTopicsRequest {
                topic_names: vec!["t".into()],
                timeout_ms: 5000,
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(r.responses[0].error_code, DENIED_TOPIC);
    let resource = |rt: i8, n: &str| describe_configs_request::DescribeConfigsResource {
        resource_type: rt,
        resource_name: n.into(),
        configuration_keys: None,
        ..Default::default()
    };
    let ResponseBody::DescribeConfigs(r) = c
        .call(
            4,
            DescribeConfigsRequest {
                resources: vec![resource(2, "t"), resource(2, "mine-1"), resource(4, "1")],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    let err = |rt: i8, n: &str| {
        r.results
            .iter()
            .find(|x| x.resource_type == rt && x.resource_name.as_str() == n)
            .unwrap()
            .error_code
    };
    assert_eq!(err(2, "t"), 0);
    assert_eq!(err(2, "mine-1"), DENIED_TOPIC);
    assert_eq!(err(4, "1"), DENIED_CLUSTER);
    b.shutdown().await;
}

#[tokio::test]
async fn new_acls_apply_to_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let admin = [allow_me(
        ResourceType::Cluster,
        "kafka-cluster",
        AclOperation::Alter,
    )];
    let b = broker_with(dir.path(), &["t"], &admin, &[]).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(produce_error(&mut c, "t").await, DENIED_TOPIC);
    let write = allow_me(ResourceType::Topic, "t", AclOperation::Write);
    assert_eq!(
        create_acls(&mut c, std::slice::from_ref(&write)).await,
        vec![0]
    );
    assert_eq!(produce_error(&mut c, "t").await, 0);
    let ResponseBody::DeleteAcls(r) = c
        .call(
            3,
            DeleteAclsRequest {
                filters: vec![delete_filter_from_filter(&write.to_filter())],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(r.filter_results[0].matching_acls.len(), 1);
    assert_eq!(produce_error(&mut c, "t").await, DENIED_TOPIC);
    b.shutdown().await;
}

#[tokio::test]
async fn quota_and_scram_apis_need_cluster_operations() {
    let dir = tempfile::tempdir().unwrap();
    let acls = [allow_me(
        ResourceType::Cluster,
        "kafka-cluster",
        AclOperation::DescribeConfigs,
    )];
    let b = broker_with(dir.path(), &[], &acls, &[]).await;
    let mut c = Client::connect(&b).await;
    let denied = ErrorCode::ClusterAuthorizationFailed.code();
    // DESCRIBE_CONFIGS on the cluster: quotas may be described, not altered.
    let ResponseBody::DescribeClientQuotas(r) =
        c.call(1, DescribeClientQuotasRequest::default()).await
    else {
        panic!()
    };
    assert_eq!(r.error_code, 0);
    let entry = alter_client_quotas_request::EntryData {
        entity: vec![alter_client_quotas_request::EntityData {
            entity_type: "client-id".into(),
            entity_name: Some("app".into()),
            ..Default::default()
        }],
        ops: vec![alter_client_quotas_request::OpData {
            key: "producer_byte_rate".into(),
            value: 1024.0,
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::AlterClientQuotas(r) = c
        .call(
            1,
            AlterClientQuotasRequest {
                entries: vec![entry],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    assert_eq!(r.entries[0].error_code, denied);
    // Nothing on the cluster for DESCRIBE or ALTER: SCRAM credentials stay hidden and fixed.
    let ResponseBody::DescribeUserScramCredentials(r) = c
        .call(0, DescribeUserScramCredentialsRequest::default())
        .await
    else {
        panic!()
    };
    assert_eq!(r.error_code, denied);
    let ResponseBody::AlterUserScramCredentials(r) = c
        .call(
            0,
            AlterUserScramCredentialsRequest {
                deletions: vec![
                    alter_user_scram_credentials_request::ScramCredentialDeletion {
                        name: "alice".into(),
                        mechanism: 1,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
        )
        .await
    else {
        panic!()
    };
    assert!(r.results.iter().all(|x| x.error_code == denied), "{r:?}");
    assert!(!r.results.is_empty());
}
