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
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation as Op,
    PatternType as Pat, ResourcePattern, ResourcePatternFilter, ResourceType as Rt,
};
use josef_protocol::messages::fetch_request::FetchTopic;
use josef_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use josef_protocol::messages::metadata_request::MetadataRequestTopic;
use josef_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, ResponseBody};
use josef_server::Broker;

mod common;
use common::{create_topic, fetch_partition, produce_request, start_with, Client};

const AUTHORIZER: (&str, &str) = (
    "authorizer.class.name",
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
);
const ME: &str = "User:ANONYMOUS";
const ALLOW: bool = true;
const DENY: bool = false;

/// Sends `$req` at version `$v` on client `$c` and returns the response, which must be `$api`'s.
macro_rules! call {
    ($c:expr, $v:expr, $api:ident, $req:expr) => {{
        let ResponseBody::$api(r) = $c.call($v, $req).await else {
            panic!(concat!("not ", stringify!($api)))
        };
        r
    }};
}

/// The entry of `items` whose `key` is `name`.
fn find<'a, T>(items: &'a [T], name: &str, key: impl Fn(&T) -> &str) -> &'a T {
    let found = items.iter().find(|x| key(x) == name);
    found.unwrap_or_else(|| panic!("no entry {name}"))
}

fn acl(
    rt: Rt,
    name: &str,
    pattern: Pat,
    principal: &str,
    host: &str,
    op: Op,
    allow: bool,
) -> AclBinding {
    let entry = if allow {
        AccessControlEntry::allow(principal, host, op)
    } else {
        AccessControlEntry::deny(principal, host, op)
    };
    AclBinding::new(ResourcePattern::new(rt, name, pattern), entry)
}

fn allow_me(rt: Rt, name: &str, op: Op) -> AclBinding {
    acl(rt, name, Pat::Literal, ME, "*", op, ALLOW)
}

fn batch() -> Bytes {
    josef_log::testing::batch(0, 1_700_000_000_000, &[(None, Some(b"v".as_slice()))]).freeze()
}

async fn create_acls(c: &mut Client, acls: &[AclBinding]) -> Vec<i16> {
    let creations = acls.iter().map(creation_from_binding).collect();
    let r = call!(
        c,
        3,
        CreateAcls,
        CreateAclsRequest {
            creations,
            ..Default::default()
        }
    );
    r.results.iter().map(|r| r.error_code).collect()
}

async fn describe_acls(c: &mut Client, filter: &AclBindingFilter) -> DescribeAclsResponse {
    let r = call!(c, 3, DescribeAcls, describe_request_from_filter(filter));
    r
}

async fn delete_acls(c: &mut Client, filters: &[AclBindingFilter]) -> DeleteAclsResponse {
    let filters = filters.iter().map(delete_filter_from_filter).collect();
    call!(
        c,
        3,
        DeleteAcls,
        DeleteAclsRequest {
            filters,
            ..Default::default()
        }
    )
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
    let r = call!(c, 9, Produce, produce_request(topic, batch()));
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
    let r = call!(c, 9, Metadata, req);
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
    let codes = create_acls(&mut c, &[allow_me(Rt::Topic, "t", Op::Read)]).await;
    assert_eq!(codes, vec![ErrorCode::SecurityDisabled as i16]);
    let d = describe_acls(&mut c, &AclBindingFilter::ANY).await;
    assert_eq!(d.error_code, ErrorCode::SecurityDisabled as i16);
    let m = metadata(&mut c, Some(&["t"]), DENY).await;
    let topic_ops = josef_authorizer::AuthorizedOperations::all_supported(Rt::Topic);
    assert_eq!(m.topics[0].topic_authorized_operations, topic_ops.bits());
    let cluster_ops = josef_authorizer::AuthorizedOperations::all_supported(Rt::Cluster);
    assert_eq!(m.cluster_authorized_operations, cluster_ops.bits());
    let dc = call!(
        c,
        0,
        DescribeCluster,
        DescribeClusterRequest {
            include_cluster_authorized_operations: true,
            endpoint_type: 1,
            ..Default::default()
        }
    );
    assert_eq!(dc.cluster_authorized_operations, cluster_ops.bits());
    assert_eq!(produce_error(&mut c, "t").await, 0);
    b.shutdown().await;
}

#[tokio::test]
async fn acls_are_created_described_deleted_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let b = start_with(dir.path(), &[AUTHORIZER, ("super.users", ME)]).await;
    let mut c = Client::connect(&b).await;
    #[rustfmt::skip]
    let (lit, pre, star, group, bad, bad_cluster) = (
        acl(Rt::Topic, "orders-eu", Pat::Literal, "User:a", "*", Op::Read, ALLOW),
        acl(Rt::Topic, "orders-", Pat::Prefixed, "User:b", "*", Op::Write, ALLOW),
        acl(Rt::Topic, "*", Pat::Literal, "User:c", "*", Op::Describe, DENY),
        acl(Rt::Group, "g", Pat::Literal, "User:a", "*", Op::Read, ALLOW),
        acl(Rt::Topic, "x", Pat::Match, "User:a", "*", Op::Read, ALLOW),
        acl(Rt::Cluster, "other", Pat::Literal, "User:a", "*", Op::Alter, ALLOW),
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
            resource_type: Rt::Topic,
            name: Some("orders-eu".into()),
            pattern_type: Pat::Match,
        },
        AccessControlEntryFilter::ANY,
    );
    assert_eq!(count(&describe_acls(&mut c, &matching).await), 3);
    let prefixed_only = AclBindingFilter::new(
        ResourcePatternFilter {
            resource_type: Rt::Any,
            name: None,
            pattern_type: Pat::Prefixed,
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
            resource_type: Rt::Unknown,
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
    let r = delete_acls(&mut c, &[matching, by_principal]).await;
    assert_eq!(r.filter_results[0].matching_acls.len(), 3);
    assert_eq!(r.filter_results[1].matching_acls.len(), 2);
    let d = describe_acls(&mut c, &AclBindingFilter::ANY).await;
    assert_eq!(count(&d), 0, "{d:?}");
    b.shutdown().await;
}

#[tokio::test]
async fn acl_apis_need_cluster_alter_and_describe() {
    let dir = tempfile::tempdir().unwrap();
    let read_only = [allow_me(Rt::Cluster, "kafka-cluster", Op::Describe)];
    let b = broker_with(dir.path(), &[], &read_only, &[]).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(
        describe_acls(&mut c, &AclBindingFilter::ANY)
            .await
            .error_code,
        0
    );
    let codes = create_acls(&mut c, &[allow_me(Rt::Topic, "t", Op::Read)]).await;
    assert_eq!(codes, vec![DENIED_CLUSTER]);
    b.shutdown().await;
    let b = broker_with(dir.path(), &[], &[], &[("super.users", "User:admin")]).await;
    let mut c = Client::connect(&b).await;
    // The ACL for DESCRIBE is still there: DescribeAcls passes, DeleteAcls does not.
    let r = delete_acls(&mut c, &[AclBindingFilter::ANY]).await;
    assert_eq!(r.filter_results[0].error_code, DENIED_CLUSTER);
    b.shutdown().await;
}

#[tokio::test]
async fn produce_fetch_and_list_offsets_need_write_read_and_describe() {
    let dir = tempfile::tempdir().unwrap();
    let acls = [
        allow_me(Rt::Topic, "w", Op::Write),
        allow_me(Rt::Topic, "r", Op::Read),
        allow_me(Rt::Topic, "r", Op::Write),
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
    let r = call!(
        c,
        7,
        ListOffsets,
        ListOffsetsRequest {
            replica_id: -1,
            topics: vec![list("none"), list("w")],
            ..Default::default()
        }
    );
    let err = |n: &str| find(&r.topics, n, |t| t.name.as_str()).partitions[0].error_code;
    // WRITE implies DESCRIBE.
    assert_eq!(err("w"), 0);
    assert_eq!(err("none"), DENIED_TOPIC);
    let producers = |t: &str| describe_producers_request::TopicRequest {
        name: t.into(),
        partition_indexes: josef_protocol::smallvec![0],
        ..Default::default()
    };
    let r = call!(
        c,
        0,
        DescribeProducers,
        DescribeProducersRequest {
            topics: vec![producers("r"), producers("w")],
            ..Default::default()
        }
    );
    let err = |n: &str| find(&r.topics, n, |t| t.name.as_str()).partitions[0].error_code;
    assert_eq!(err("r"), 0);
    assert_eq!(err("w"), DENIED_TOPIC, "DescribeProducers needs READ");
    b.shutdown().await;
}

#[tokio::test]
async fn metadata_hides_undescribable_topics_and_guards_auto_creation() {
    let dir = tempfile::tempdir().unwrap();
    let acls = [
        allow_me(Rt::Topic, "visible", Op::Read),
        acl(Rt::Topic, "auto-", Pat::Prefixed, ME, "*", Op::All, ALLOW),
    ];
    let b = broker_with(dir.path(), &["visible", "hidden"], &acls, &[]).await;
    let mut c = Client::connect(&b).await;
    let all = metadata(&mut c, None, DENY).await;
    assert_eq!(names(&all), vec!["visible".to_string()]);
    // No cluster ACL: the cluster's operations are none.
    assert_eq!(all.cluster_authorized_operations, 0);
    let named = metadata(&mut c, Some(&["visible", "hidden", "nope"]), ALLOW).await;
    let find = |n: &str| find(&named.topics, n, |t| t.name.as_deref().unwrap_or_default());
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
    let auto = metadata(&mut c, Some(&["auto-1"]), ALLOW).await;
    assert_eq!(auto.topics[0].error_code, 0, "{auto:?}");
    assert!(!auto.topics[0].partitions.is_empty());
    b.shutdown().await;
}

#[tokio::test]
async fn deny_wins_prefixes_and_wildcards_cover_and_hosts_must_match() {
    let dir = tempfile::tempdir().unwrap();
    #[rustfmt::skip]
    let acls = [
        acl(Rt::Topic, "orders-", Pat::Prefixed, "User:*", "*", Op::Read, ALLOW),
        acl(Rt::Topic, "orders-secret", Pat::Literal, ME, "*", Op::Read, DENY),
        acl(Rt::Topic, "*", Pat::Literal, ME, "*", Op::Write, ALLOW),
        acl(Rt::Topic, "elsewhere", Pat::Literal, ME, "10.0.0.1", Op::Read, ALLOW),
        acl(Rt::Topic, "here", Pat::Literal, ME, "127.0.0.1", Op::Read, ALLOW),
        acl(Rt::Topic, "someone-else", Pat::Literal, "User:alice", "*", Op::Read, ALLOW),
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
    #[rustfmt::skip]
    let acls = [acl(Rt::Topic, "t", Pat::Literal, ME, "*", Op::All, DENY)];
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
    #[rustfmt::skip]
    let acls = [acl(Rt::Topic, "guarded", Pat::Literal, "User:alice", "*", Op::Write, ALLOW)];
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
        allow_me(Rt::Group, "mine", Op::Read),
        allow_me(Rt::Topic, "t", Op::Read),
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
    let oc = call!(
        c,
        8,
        OffsetCommit,
        OffsetCommitRequest {
            group_id: "theirs".into(),
            generation_id_or_member_epoch: -1,
            topics: vec![commit("other")],
            ..Default::default()
        }
    );
    assert_eq!(oc.topics[0].partitions[0].error_code, 0);
    drop(c);
    setup.shutdown().await;
    let b = broker_with(dir.path(), &["t"], &acls, &config).await;
    let mut c = Client::connect(&b).await;
    let f = call!(
        c,
        4,
        FindCoordinator,
        FindCoordinatorRequest {
            key_type: 0,
            coordinator_keys: vec!["mine".into(), "theirs".into()],
            ..Default::default()
        }
    );
    let fc = |k: &str| find(&f.coordinators, k, |x| x.key.as_str()).error_code;
    assert_eq!(fc("theirs"), DENIED_GROUP);
    let j = call!(c, 5, JoinGroup, join("theirs"));
    assert_eq!(j.error_code, DENIED_GROUP);
    // Group READ passes; the commit is then checked per topic.
    let oc = call!(
        c,
        8,
        OffsetCommit,
        OffsetCommitRequest {
            group_id: "mine".into(),
            generation_id_or_member_epoch: -1,
            topics: vec![commit("t"), commit("other")],
            ..Default::default()
        }
    );
    let err = |n: &str| find(&oc.topics, n, |t| t.name.as_str()).partitions[0].error_code;
    assert_eq!(err("t"), 0, "{oc:?}");
    assert_eq!(err("other"), DENIED_TOPIC);
    let oc = call!(
        c,
        8,
        OffsetCommit,
        OffsetCommitRequest {
            group_id: "theirs".into(),
            generation_id_or_member_epoch: -1,
            topics: vec![commit("t")],
            ..Default::default()
        }
    );
    assert_eq!(oc.topics[0].partitions[0].error_code, DENIED_GROUP);
    // ListGroups without Cluster DESCRIBE lists only describable groups.
    let l = call!(c, 4, ListGroups, ListGroupsRequest::default());
    let listed: Vec<_> = l.groups.iter().map(|g| g.group_id.to_string()).collect();
    assert_eq!(listed, vec!["mine".to_string()]);
    let d = call!(
        c,
        5,
        DescribeGroups,
        DescribeGroupsRequest {
            groups: vec!["mine".into(), "theirs".into()],
            include_authorized_operations: true,
            ..Default::default()
        }
    );
    let dg = |n: &str| find(&d.groups, n, |g| g.group_id.as_str()).clone();
    assert_eq!(dg("mine").error_code, 0);
    assert_eq!(dg("mine").authorized_operations, (1 << 3) | (1 << 8));
    assert_eq!(dg("theirs").error_code, DENIED_GROUP);
    let dr = call!(
        c,
        2,
        DeleteGroups,
        DeleteGroupsRequest {
            groups_names: vec!["mine".into()],
            ..Default::default()
        }
    );
    assert_eq!(
        dr.results[0].error_code, DENIED_GROUP,
        "READ does not give DELETE"
    );
    b.shutdown().await;
}

async fn init_producer_id(c: &mut Client, txn: Option<&str>) -> i16 {
    let r = call!(
        c,
        4,
        InitProducerId,
        InitProducerIdRequest {
            transactional_id: txn.map(Into::into),
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        }
    );
    r.error_code
}

#[tokio::test]
async fn producer_ids_need_a_transactional_id_write_or_idempotent_write() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker_with(dir.path(), &["t"], &[], &[]).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(init_producer_id(&mut c, None).await, DENIED_CLUSTER);
    assert_eq!(init_producer_id(&mut c, Some("tx")).await, DENIED_TXN);
    let e = call!(
        c,
        3,
        EndTxn,
        EndTxnRequest {
            transactional_id: "tx".into(),
            producer_id: 1,
            producer_epoch: 0,
            committed: true,
            ..Default::default()
        }
    );
    assert_eq!(e.error_code, DENIED_TXN);
    b.shutdown().await;
    // WRITE on some topic is enough for an idempotent producer (Kafka 3+).
    let acls = [allow_me(Rt::Topic, "t", Op::Write)];
    let b = broker_with(dir.path(), &[], &acls, &[]).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(init_producer_id(&mut c, None).await, 0);
    b.shutdown().await;
}

#[tokio::test]
async fn admin_apis_need_create_delete_and_config_operations() {
    let dir = tempfile::tempdir().unwrap();
    #[rustfmt::skip]
    let acls = [
        acl(Rt::Topic, "mine-", Pat::Prefixed, ME, "*", Op::Create, ALLOW),
        allow_me(Rt::Topic, "t", Op::DescribeConfigs),
    ];
    let b = broker_with(dir.path(), &["t"], &acls, &[]).await;
    let mut c = Client::connect(&b).await;
    let topic = |n: &str| create_topics_request::CreatableTopic {
        name: n.into(),
        num_partitions: 1,
        replication_factor: 1,
        ..Default::default()
    };
    let r = call!(
        c,
        7,
        CreateTopics,
        CreateTopicsRequest {
            topics: vec![topic("mine-1"), topic("yours-1")],
            timeout_ms: 5000,
            ..Default::default()
        }
    );
    let err = |n: &str| find(&r.topics, n, |t| t.name.as_str()).error_code;
    assert_eq!(err("mine-1"), 0);
    assert_eq!(err("yours-1"), DENIED_TOPIC);
    let r = call!(
        c,
        5,
        DeleteTopics,
        DeleteTopicsRequest {
            topic_names: vec!["t".into()],
            timeout_ms: 5000,
            ..Default::default()
        }
    );
    assert_eq!(r.responses[0].error_code, DENIED_TOPIC);
    let resource = |rt: i8, n: &str| describe_configs_request::DescribeConfigsResource {
        resource_type: rt,
        resource_name: n.into(),
        configuration_keys: None,
        ..Default::default()
    };
    let r = call!(
        c,
        4,
        DescribeConfigs,
        DescribeConfigsRequest {
            resources: vec![resource(2, "t"), resource(2, "mine-1"), resource(4, "1")],
            ..Default::default()
        }
    );
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
    let admin = [allow_me(Rt::Cluster, "kafka-cluster", Op::Alter)];
    let b = broker_with(dir.path(), &["t"], &admin, &[]).await;
    let mut c = Client::connect(&b).await;
    assert_eq!(produce_error(&mut c, "t").await, DENIED_TOPIC);
    let write = allow_me(Rt::Topic, "t", Op::Write);
    assert_eq!(
        create_acls(&mut c, std::slice::from_ref(&write)).await,
        vec![0]
    );
    assert_eq!(produce_error(&mut c, "t").await, 0);
    let r = delete_acls(&mut c, &[write.to_filter()]).await;
    assert_eq!(r.filter_results[0].matching_acls.len(), 1);
    assert_eq!(produce_error(&mut c, "t").await, DENIED_TOPIC);
    b.shutdown().await;
}

#[tokio::test]
async fn quota_and_scram_apis_need_cluster_operations() {
    let dir = tempfile::tempdir().unwrap();
    let acls = [allow_me(Rt::Cluster, "kafka-cluster", Op::DescribeConfigs)];
    let b = broker_with(dir.path(), &[], &acls, &[]).await;
    let mut c = Client::connect(&b).await;
    let denied = ErrorCode::ClusterAuthorizationFailed.code();
    // DESCRIBE_CONFIGS on the cluster: quotas may be described, not altered.
    let r = call!(
        c,
        1,
        DescribeClientQuotas,
        DescribeClientQuotasRequest::default()
    );
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
    let r = call!(
        c,
        1,
        AlterClientQuotas,
        AlterClientQuotasRequest {
            entries: vec![entry],
            ..Default::default()
        }
    );
    assert_eq!(r.entries[0].error_code, denied);
    // Nothing on the cluster for DESCRIBE or ALTER: SCRAM credentials stay hidden and fixed.
    let r = call!(
        c,
        0,
        DescribeUserScramCredentials,
        DescribeUserScramCredentialsRequest::default()
    );
    assert_eq!(r.error_code, denied);
    let r = call!(
        c,
        0,
        AlterUserScramCredentials,
        AlterUserScramCredentialsRequest {
            deletions: vec![
                alter_user_scram_credentials_request::ScramCredentialDeletion {
                    name: "alice".into(),
                    mechanism: 1,
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    );
    assert!(r.results.iter().all(|x| x.error_code == denied), "{r:?}");
    assert!(!r.results.is_empty());
}
