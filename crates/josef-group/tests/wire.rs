//! The wire adapter: generated requests of every version map onto the core, and every core
//! response encodes at every version. Plus whole client flows at the versions real clients use
//! (librdkafka: JoinGroup v5, SyncGroup v3, Heartbeat v3, OffsetCommit v9, OffsetFetch v9,
//! LeaveGroup v1; kafka-python: JoinGroup v7, SyncGroup v5, OffsetCommit v8).

use bytes::{Bytes, BytesMut};
use josef_group::api::*;
use josef_group::consumer_protocol::{Assignment, Subscription};
use josef_group::wire::{self, WireGroupResponse};
use josef_group::{Errors, GroupConfig, GroupCoordinator, NoopTimer, SeededMemberIds};
use josef_protocol::messages::{
    self as m, join_group_request, leave_group_request, offset_commit_request,
    offset_fetch_request, sync_group_request,
};
use josef_protocol::{Decode, Encode, StrBytes};

/// Encodes at `version` and decodes back, as the broker and the client would.
fn through_wire<M: Encode + Decode>(msg: &M, version: i16) -> M {
    let mut buf = BytesMut::new();
    msg.encode(&mut buf, version)
        .unwrap_or_else(|e| panic!("encode v{version}: {e}"));
    let mut bytes = buf.freeze();
    let back = M::decode(&mut bytes, version).unwrap_or_else(|e| panic!("decode v{version}: {e}"));
    assert!(bytes.is_empty(), "trailing bytes at v{version}");
    back
}

fn sb(s: &str) -> StrBytes {
    StrBytes::from(s)
}

#[test]
fn every_core_response_encodes_at_every_version() {
    let join = JoinGroupResponse {
        error: Errors::None,
        generation_id: 3,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        leader: "m1".into(),
        skip_assignment: true,
        member_id: "m1".into(),
        members: vec![JoinGroupResponseMember {
            member_id: "m1".into(),
            group_instance_id: Some("i".into()),
            metadata: Bytes::from_static(b"x"),
        }],
    };
    for v in 0..=9 {
        through_wire(&wire::join_group_response(&join, v), v);
        let err = JoinGroupResponse::error(Errors::MemberIdRequired, "m");
        let back = through_wire(&wire::join_group_response(&err, v), v);
        assert_eq!(back.error_code, 79);
    }
    let sync = SyncGroupResponse {
        error: Errors::None,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignment: Bytes::from_static(b"a"),
    };
    for v in 0..=5 {
        through_wire(&wire::sync_group_response(&sync, v), v);
        through_wire(
            &wire::sync_group_response(&SyncGroupResponse::error(Errors::RebalanceInProgress), v),
            v,
        );
    }
    for v in 0..=4 {
        through_wire(
            &wire::heartbeat_response(&HeartbeatResponse {
                error: Errors::None,
            }),
            v,
        );
    }
    let leave = LeaveGroupResponse {
        error: Errors::None,
        members: vec![LeaveGroupMemberResponse {
            member_id: "m".into(),
            group_instance_id: None,
            error: Errors::UnknownMemberId,
        }],
    };
    for v in 0..=5 {
        let back = through_wire(&wire::leave_group_response(&leave, v), v);
        if v <= 2 {
            assert_eq!(
                back.error_code, 25,
                "v{v}: the member's error at the top level"
            );
        } else {
            assert_eq!(back.error_code, 0);
            assert_eq!(back.members[0].error_code, 25);
        }
    }
    let commit = OffsetCommitResponse::all(
        &[OffsetCommitTopic {
            name: "t".into(),
            partitions: vec![OffsetCommitPartition {
                partition_index: 0,
                committed_offset: 1,
                committed_leader_epoch: -1,
                commit_timestamp: -1,
                committed_metadata: None,
            }],
        }],
        Errors::IllegalGeneration,
    );
    for v in 0..=9 {
        through_wire(&wire::offset_commit_response(&commit), v);
    }
    for v in 0..=4 {
        through_wire(&wire::txn_offset_commit_response(&commit), v);
    }
    let fetch = OffsetFetchResponse {
        groups: vec![OffsetFetchGroupResponse {
            group_id: "g".into(),
            error: Errors::None,
            topics: vec![OffsetFetchTopicResponse {
                name: "t".into(),
                partitions: vec![OffsetFetchPartitionResponse {
                    partition_index: 0,
                    committed_offset: 10,
                    committed_leader_epoch: 2,
                    metadata: Some(String::new()),
                    error: Errors::None,
                }],
            }],
        }],
    };
    for v in 0..=9 {
        let back = through_wire(&wire::offset_fetch_response(&fetch, v), v);
        if v >= 8 {
            assert_eq!(back.groups[0].topics[0].partitions[0].committed_offset, 10);
        } else {
            assert_eq!(back.topics[0].partitions[0].committed_offset, 10);
        }
    }
    let del = OffsetDeleteResponse {
        error: Errors::None,
        topics: vec![("t".into(), vec![(0, Errors::GroupSubscribedToTopic)])],
    };
    through_wire(&wire::offset_delete_response(&del), 0);
    let list = ListGroupsResponse {
        error: Errors::None,
        groups: vec![ListedGroup {
            group_id: "g".into(),
            protocol_type: "consumer".into(),
            group_state: "Stable".into(),
            group_type: "classic".into(),
        }],
    };
    for v in 0..=5 {
        through_wire(&wire::list_groups_response(&list, v), v);
    }
    let described = vec![DescribedGroup {
        error: Errors::None,
        group_id: "g".into(),
        group_state: "Stable".into(),
        protocol_type: "consumer".into(),
        protocol_data: "range".into(),
        members: vec![DescribedMember {
            member_id: "m".into(),
            group_instance_id: Some("i".into()),
            client_id: "c".into(),
            client_host: "/h".into(),
            member_metadata: Bytes::from_static(b"md"),
            member_assignment: Bytes::from_static(b"as"),
        }],
    }];
    for v in 0..=5 {
        through_wire(&wire::describe_groups_response(&described, v, v >= 3), v);
    }
    let deleted = vec![DeletedGroup {
        group_id: "g".into(),
        error: Errors::NonEmptyGroup,
    }];
    for v in 0..=2 {
        through_wire(&wire::delete_groups_response(&deleted), v);
    }
}

#[test]
fn join_group_v0_uses_the_session_timeout_as_rebalance_timeout() {
    let req = m::JoinGroupRequest {
        group_id: sb("g"),
        session_timeout_ms: 12_000,
        member_id: sb(""),
        protocol_type: sb("consumer"),
        protocols: vec![join_group_request::JoinGroupRequestProtocol {
            name: sb("range"),
            metadata: Bytes::new(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let back = through_wire(&req, 0);
    assert_eq!(
        wire::join_group_request(&back, 0).rebalance_timeout_ms,
        12_000
    );
    let back = through_wire(
        &m::JoinGroupRequest {
            rebalance_timeout_ms: 50_000,
            ..req
        },
        1,
    );
    assert_eq!(
        wire::join_group_request(&back, 1).rebalance_timeout_ms,
        50_000
    );
}

#[test]
fn leave_group_v0_to_v2_carry_one_member() {
    let req = m::LeaveGroupRequest {
        group_id: sb("g"),
        member_id: sb("m1"),
        ..Default::default()
    };
    let core = wire::leave_group_request(&through_wire(&req, 1), 1);
    assert_eq!(core.members.len(), 1);
    assert_eq!(core.members[0].member_id, "m1");
    let req = m::LeaveGroupRequest {
        group_id: sb("g"),
        members: vec![
            leave_group_request::MemberIdentity {
                member_id: sb("a"),
                ..Default::default()
            },
            leave_group_request::MemberIdentity {
                member_id: sb(""),
                group_instance_id: Some(sb("i")),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let core = wire::leave_group_request(&through_wire(&req, 3), 3);
    assert_eq!(core.members.len(), 2);
    assert_eq!(core.members[1].group_instance_id.as_deref(), Some("i"));
}

#[test]
fn offset_fetch_v1_has_one_group_and_v8_a_batch() {
    let old = m::OffsetFetchRequest {
        group_id: sb("g"),
        topics: Some(vec![offset_fetch_request::OffsetFetchRequestTopic {
            name: sb("t"),
            partition_indexes: josef_protocol::smallvec![0, 1],
            ..Default::default()
        }]),
        ..Default::default()
    };
    let core = wire::offset_fetch_request(&through_wire(&old, 1), 1);
    assert_eq!(core.groups.len(), 1);
    assert_eq!(
        core.groups[0].topics.as_ref().unwrap()[0].partition_indexes,
        vec![0, 1]
    );
    let new = m::OffsetFetchRequest {
        groups: vec![
            offset_fetch_request::OffsetFetchRequestGroup {
                group_id: sb("a"),
                topics: None,
                ..Default::default()
            },
            offset_fetch_request::OffsetFetchRequestGroup {
                group_id: sb("b"),
                topics: None,
                ..Default::default()
            },
        ],
        require_stable: true,
        ..Default::default()
    };
    let core = wire::offset_fetch_request(&through_wire(&new, 8), 8);
    assert_eq!(core.groups.len(), 2);
    assert!(core.require_stable);
    assert!(core.groups[0].topics.is_none());
}

type Shard = GroupCoordinator<NoopTimer, SeededMemberIds>;

struct Client {
    join: i16,
    sync: i16,
    heartbeat: i16,
    commit: i16,
    fetch: i16,
    leave: i16,
}

/// One consumer's whole life over the wire at a client's versions: join (MEMBER_ID_REQUIRED
/// when v4+), wait out the initial delay, lead the group, sync, heartbeat, commit, fetch, leave.
fn consumer_flow(versions: Client) {
    let mut c: Shard =
        GroupCoordinator::new(GroupConfig::default(), NoopTimer, SeededMemberIds::new(3));
    let ctx = |v| RequestContext {
        client_id: "rdkafka".into(),
        client_host: "/127.0.0.1".into(),
        api_version: v,
    };
    let mut offset = 0i64;
    let mut apply = |c: &mut Shard, records: Vec<josef_group::record::GroupRecord>| {
        for r in records {
            c.replay(offset, -1, -1, &r);
            offset += 1;
        }
    };
    let metadata = Subscription {
        topics: vec!["orders".into()],
        ..Subscription::default()
    }
    .encode(3);
    let join = |member_id: &str| m::JoinGroupRequest {
        group_id: sb("cg"),
        session_timeout_ms: 45_000,
        rebalance_timeout_ms: 300_000,
        member_id: sb(member_id),
        protocol_type: sb("consumer"),
        protocols: vec![join_group_request::JoinGroupRequestProtocol {
            name: sb("range"),
            metadata: metadata.clone(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let jv = versions.join;
    let wire_join = |r: &Completion| match wire::completion_response(r, jv) {
        WireGroupResponse::Join(j) => through_wire(&j, jv),
        WireGroupResponse::Sync(_) => panic!("sync"),
    };
    let req = wire::join_group_request(&through_wire(&join(""), jv), jv);
    let r = c.join_group(0, 1, &ctx(jv), req);
    apply(&mut c, r.records);
    let mut member_id = String::new();
    if jv >= 4 {
        let resp = wire_join(&r.completions[0]);
        assert_eq!(resp.error_code, Errors::MemberIdRequired.code());
        member_id = resp.member_id.to_string();
        let req = wire::join_group_request(&through_wire(&join(&member_id), jv), jv);
        let r = c.join_group(0, 2, &ctx(jv), req);
        assert!(r.completions.is_empty(), "parked");
        apply(&mut c, r.records);
    } else {
        assert!(r.completions.is_empty(), "parked");
    }
    let mut done = Vec::new();
    while let Some(r) = c.fire_next_due(3000) {
        apply(&mut c, r.records);
        done.extend(r.completions);
    }
    let resp = wire_join(&done[0]);
    assert_eq!(resp.error_code, 0);
    if jv < 4 {
        member_id = resp.member_id.to_string();
    }
    assert_eq!(resp.leader.as_str(), member_id);
    assert_eq!(resp.protocol_name.as_deref(), Some("range"));
    let generation = resp.generation_id;
    let members: Vec<(String, Option<String>, Bytes)> = resp
        .members
        .iter()
        .map(|m| (m.member_id.to_string(), None, m.metadata.clone()))
        .collect();
    let topics = std::collections::BTreeMap::from([("orders".to_string(), 3)]);
    let assignment = josef_group::assignor::leader_assign("range", &topics, &members, 3).unwrap();

    let sv = versions.sync;
    let sync = m::SyncGroupRequest {
        group_id: sb("cg"),
        generation_id: generation,
        member_id: sb(&member_id),
        protocol_type: if sv >= 5 { Some(sb("consumer")) } else { None },
        protocol_name: if sv >= 5 { Some(sb("range")) } else { None },
        assignments: assignment
            .iter()
            .map(|(m, a)| sync_group_request::SyncGroupRequestAssignment {
                member_id: sb(m),
                assignment: a.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let r = c.sync_group(3000, 3, wire::sync_group_request(&through_wire(&sync, sv)));
    assert_eq!(r.records.len(), 1, "the assignment is persisted");
    apply(&mut c, r.records);
    let WireGroupResponse::Sync(s) = wire::completion_response(&r.completions[0], sv) else {
        panic!()
    };
    let s = through_wire(&s, sv);
    assert_eq!(s.error_code, 0);
    let (_, a) = Assignment::decode(&s.assignment).unwrap();
    assert_eq!(a.topic_partitions().count(), 3);

    let hv = versions.heartbeat;
    let hb = m::HeartbeatRequest {
        group_id: sb("cg"),
        generation_id: generation,
        member_id: sb(&member_id),
        ..Default::default()
    };
    let r = c.heartbeat(4000, wire::heartbeat_request(&through_wire(&hb, hv)));
    assert_eq!(
        through_wire(&wire::heartbeat_response(&r.response), hv).error_code,
        0
    );

    let cv = versions.commit;
    let commit = m::OffsetCommitRequest {
        group_id: sb("cg"),
        generation_id_or_member_epoch: if cv >= 1 { generation } else { -1 },
        member_id: sb(if cv >= 1 { member_id.as_str() } else { "" }),
        retention_time_ms: -1,
        topics: vec![offset_commit_request::OffsetCommitRequestTopic {
            name: sb("orders"),
            partitions: vec![offset_commit_request::OffsetCommitRequestPartition {
                partition_index: 1,
                committed_offset: 500,
                committed_leader_epoch: -1,
                commit_timestamp: -1,
                committed_metadata: Some(sb("")),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = c.commit_offsets(
        5000,
        &ctx(cv),
        wire::offset_commit_request(&through_wire(&commit, cv)),
    );
    apply(&mut c, r.records);
    let resp = through_wire(&wire::offset_commit_response(&r.response), cv);
    if cv >= 1 {
        assert_eq!(resp.topics[0].partitions[0].error_code, 0, "commit v{cv}");
    } else {
        // v0 has no generation: a commit to a non-empty group is UNKNOWN_MEMBER_ID (as in Kafka).
        assert_eq!(
            resp.topics[0].partitions[0].error_code,
            Errors::UnknownMemberId.code()
        );
        return;
    }

    let fv = versions.fetch;
    let fetch = if fv >= 8 {
        m::OffsetFetchRequest {
            groups: vec![offset_fetch_request::OffsetFetchRequestGroup {
                group_id: sb("cg"),
                topics: Some(vec![offset_fetch_request::OffsetFetchRequestTopics {
                    name: sb("orders"),
                    partition_indexes: josef_protocol::smallvec![0, 1],
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            require_stable: true,
            ..Default::default()
        }
    } else {
        m::OffsetFetchRequest {
            group_id: sb("cg"),
            topics: Some(vec![offset_fetch_request::OffsetFetchRequestTopic {
                name: sb("orders"),
                partition_indexes: josef_protocol::smallvec![0, 1],
                ..Default::default()
            }]),
            ..Default::default()
        }
    };
    let r = c.fetch_offsets(&wire::offset_fetch_request(&through_wire(&fetch, fv), fv));
    let resp = through_wire(&wire::offset_fetch_response(&r, fv), fv);
    let offsets: Vec<i64> = if fv >= 8 {
        resp.groups[0].topics[0]
            .partitions
            .iter()
            .map(|p| p.committed_offset)
            .collect()
    } else {
        resp.topics[0]
            .partitions
            .iter()
            .map(|p| p.committed_offset)
            .collect()
    };
    assert_eq!(offsets, vec![-1, 500]);

    let lv = versions.leave;
    let leave = if lv <= 2 {
        m::LeaveGroupRequest {
            group_id: sb("cg"),
            member_id: sb(&member_id),
            ..Default::default()
        }
    } else {
        m::LeaveGroupRequest {
            group_id: sb("cg"),
            members: vec![leave_group_request::MemberIdentity {
                member_id: sb(&member_id),
                ..Default::default()
            }],
            ..Default::default()
        }
    };
    let r = c.leave_group(
        6000,
        wire::leave_group_request(&through_wire(&leave, lv), lv),
    );
    apply(&mut c, r.records);
    assert_eq!(
        through_wire(&wire::leave_group_response(&r.response, lv), lv).error_code,
        0
    );
    assert_eq!(c.group("cg").unwrap().state().name(), "Empty");
}

#[test]
fn librdkafka_versions_flow() {
    consumer_flow(Client {
        join: 5,
        sync: 3,
        heartbeat: 3,
        commit: 9,
        fetch: 9,
        leave: 1,
    });
}

#[test]
fn kafka_python_versions_flow() {
    consumer_flow(Client {
        join: 7,
        sync: 5,
        heartbeat: 4,
        commit: 8,
        fetch: 7,
        leave: 4,
    });
}

#[test]
fn old_client_versions_flow() {
    consumer_flow(Client {
        join: 2,
        sync: 1,
        heartbeat: 1,
        commit: 2,
        fetch: 1,
        leave: 0,
    });
    consumer_flow(Client {
        join: 0,
        sync: 0,
        heartbeat: 0,
        commit: 0,
        fetch: 0,
        leave: 0,
    });
}
