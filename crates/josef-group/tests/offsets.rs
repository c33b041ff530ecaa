//! Offsets, retention, admin APIs and restarts from records.

mod common;

use bytes::Bytes;
use common::*;
use josef_group::api::*;
use josef_group::classic::GroupState;
use josef_group::record::GroupRecord;
use josef_group::{Errors, GroupConfig};

const G: &str = "g";

fn commit_req(
    group: &str,
    generation: i32,
    member: &str,
    offsets: &[(&str, i32, i64)],
) -> OffsetCommitRequest {
    let mut topics: Vec<OffsetCommitTopic> = Vec::new();
    for (t, p, o) in offsets {
        let part = OffsetCommitPartition {
            partition_index: *p,
            committed_offset: *o,
            committed_leader_epoch: 3,
            commit_timestamp: -1,
            committed_metadata: Some("meta".into()),
        };
        match topics.iter_mut().find(|x| x.name == *t) {
            Some(x) => x.partitions.push(part),
            None => topics.push(OffsetCommitTopic {
                name: t.to_string(),
                partitions: vec![part],
            }),
        }
    }
    OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: generation,
        member_id: member.into(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics,
    }
}

fn commit(h: &mut Harness, version: i16, req: OffsetCommitRequest) -> Vec<Errors> {
    let r = h.c.commit_offsets(h.now, &ctx("c", version), req);
    let resp = h.apply(r);
    resp.topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error))
        .collect()
}

fn fetch(
    h: &Harness,
    group: &str,
    topic: &str,
    partitions: &[i32],
    require_stable: bool,
) -> Vec<(i64, Errors)> {
    let resp = h.c.fetch_offsets(&OffsetFetchRequest {
        groups: vec![OffsetFetchGroup {
            group_id: group.into(),
            topics: Some(vec![OffsetFetchTopic {
                name: topic.into(),
                partition_indexes: partitions.to_vec(),
            }]),
            ..Default::default()
        }],
        require_stable,
    });
    resp.groups[0].topics[0]
        .partitions
        .iter()
        .map(|p| (p.committed_offset, p.error))
        .collect()
}

/// One Stable member; returns (member id, generation).
fn one_member_group(h: &mut Harness) -> (String, i32) {
    let (m, j) = h.join_new(G, "c");
    h.advance(3000);
    let generation = h.join_response(j).unwrap().generation_id;
    h.sync(Harness::sync_req(G, &m, generation, vec![]));
    (m, generation)
}

fn txn_req(
    pid: i64,
    generation: i32,
    member: &str,
    offsets: &[(&str, i32, i64)],
) -> TxnOffsetCommitRequest {
    let c = commit_req(G, generation, member, offsets);
    TxnOffsetCommitRequest {
        transactional_id: "tx".into(),
        group_id: G.into(),
        producer_id: pid,
        producer_epoch: 0,
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: None,
        topics: c.topics,
    }
}

#[test]
fn simple_commit_without_group_creates_a_simple_group() {
    let mut h = Harness::new();
    assert_eq!(
        commit(&mut h, 8, commit_req(G, -1, "", &[("t", 0, 42)])),
        vec![Errors::None]
    );
    let g = h.c.group(G).unwrap();
    assert_eq!(g.state(), GroupState::Empty);
    assert!(g.protocol_type().is_none());
    assert_eq!(
        fetch(&h, G, "t", &[0, 1], false),
        vec![(42, Errors::None), (-1, Errors::None)]
    );
}

#[test]
fn committed_offsets_change_only_when_records_are_replayed() {
    let mut h = Harness::new();
    let r =
        h.c.commit_offsets(0, &ctx("c", 8), commit_req(G, -1, "", &[("t", 0, 7)]));
    assert_eq!(r.records.len(), 1);
    assert_eq!(
        fetch(&h, G, "t", &[0], false),
        vec![(-1, Errors::None)],
        "not yet replayed"
    );
    h.apply(r);
    assert_eq!(fetch(&h, G, "t", &[0], false), vec![(7, Errors::None)]);
}

#[test]
fn commit_with_generation_checks_member_and_generation() {
    let mut h = Harness::new();
    let (m, generation) = one_member_group(&mut h);
    assert_eq!(
        commit(&mut h, 8, commit_req(G, generation, &m, &[("t", 0, 1)])),
        vec![Errors::None]
    );
    assert_eq!(
        commit(
            &mut h,
            8,
            commit_req(G, generation, "ghost", &[("t", 0, 1)])
        ),
        vec![Errors::UnknownMemberId]
    );
    assert_eq!(
        commit(&mut h, 8, commit_req(G, generation + 1, &m, &[("t", 0, 1)])),
        vec![Errors::IllegalGeneration]
    );
    // No member id and no generation on a non-empty group
    assert_eq!(
        commit(&mut h, 8, commit_req(G, -1, "", &[("t", 0, 1)])),
        vec![Errors::UnknownMemberId]
    );
    let mut fenced = commit_req(G, generation, "other-id", &[("t", 0, 1)]);
    fenced.group_instance_id = Some("nobody".into());
    assert_eq!(commit(&mut h, 8, fenced), vec![Errors::UnknownMemberId]);
}

#[test]
fn commit_from_stale_generation_is_illegal_generation_and_not_stored() {
    let mut h = Harness::new();
    let (m, generation) = one_member_group(&mut h);
    commit(&mut h, 8, commit_req(G, generation, &m, &[("t", 0, 10)]));
    // A rebalance makes the generation stale.
    h.join(9, "c", join_req(G, &m, None));
    let new_generation = h.c.group(G).unwrap().generation_id();
    assert_eq!(new_generation, generation + 1);
    assert_eq!(
        commit(&mut h, 8, commit_req(G, generation, &m, &[("t", 0, 99)])),
        vec![Errors::IllegalGeneration]
    );
    assert_eq!(fetch(&h, G, "t", &[0], false), vec![(10, Errors::None)]);
}

#[test]
fn commit_in_completing_rebalance_is_rebalance_in_progress() {
    let mut h = Harness::new();
    let (m, j) = h.join_new(G, "c");
    h.advance(3000);
    let generation = h.join_response(j).unwrap().generation_id;
    assert_eq!(
        h.c.group(G).unwrap().state(),
        GroupState::CompletingRebalance
    );
    assert_eq!(
        commit(&mut h, 8, commit_req(G, generation, &m, &[("t", 0, 1)])),
        vec![Errors::RebalanceInProgress]
    );
}

#[test]
fn commit_with_static_member_id_mismatch_is_fenced_instance_id() {
    let mut h = Harness::new();
    let j = h.join(9, "c", join_req(G, "", Some("i1")));
    h.advance(3000);
    let r = h.join_response(j).unwrap().clone();
    h.sync(SyncGroupRequest {
        group_instance_id: Some("i1".into()),
        ..Harness::sync_req(G, &r.member_id, r.generation_id, vec![])
    });
    let mut req = commit_req(G, r.generation_id, "i1-old", &[("t", 0, 1)]);
    req.group_instance_id = Some("i1".into());
    assert_eq!(commit(&mut h, 8, req), vec![Errors::FencedInstanceId]);
}

#[test]
fn commit_to_unknown_group_with_generation_is_illegal_generation_before_v9_and_group_id_not_found_after(
) {
    let mut h = Harness::new();
    assert_eq!(
        commit(&mut h, 8, commit_req(G, 3, "m", &[("t", 0, 1)])),
        vec![Errors::IllegalGeneration]
    );
    assert_eq!(
        commit(&mut h, 9, commit_req(G, 3, "m", &[("t", 0, 1)])),
        vec![Errors::GroupIdNotFound]
    );
    assert!(h.c.group(G).is_none());
}

#[test]
fn commit_with_empty_group_id_is_invalid_group_id() {
    let mut h = Harness::new();
    assert_eq!(
        commit(&mut h, 8, commit_req("", -1, "", &[("t", 0, 1)])),
        vec![Errors::InvalidGroupId]
    );
}

#[test]
fn offset_metadata_over_4096_is_offset_metadata_too_large() {
    let mut h = Harness::new();
    let mut req = commit_req(G, -1, "", &[("t", 0, 1), ("t", 1, 2), ("t", 2, 3)]);
    req.topics[0].partitions[0].committed_metadata = Some("x".repeat(4096));
    req.topics[0].partitions[1].committed_metadata = Some("x".repeat(4097));
    // 2049 characters that are 2 UTF-16 units each: 4098 units, over the limit.
    req.topics[0].partitions[2].committed_metadata = Some("\u{1F600}".repeat(2049));
    assert_eq!(
        commit(&mut h, 8, req),
        vec![
            Errors::None,
            Errors::OffsetMetadataTooLarge,
            Errors::OffsetMetadataTooLarge
        ]
    );
    assert_eq!(
        fetch(&h, G, "t", &[0, 1], false),
        vec![(1, Errors::None), (-1, Errors::None)]
    );
}

#[test]
fn offset_commit_keeps_the_session_alive() {
    let mut h = Harness::new();
    let (m, generation) = one_member_group(&mut h);
    for _ in 0..5 {
        h.advance(5000);
        commit(&mut h, 8, commit_req(G, generation, &m, &[("t", 0, 1)]));
    }
    assert!(h.c.group(G).unwrap().has_member(&m));
}

#[test]
fn fetch_of_unknown_group_returns_minus_one_without_error() {
    let h = Harness::new();
    assert_eq!(
        fetch(&h, "nope", "t", &[0], false),
        vec![(-1, Errors::None)]
    );
}

#[test]
fn fetch_all_offsets_and_several_groups_at_once() {
    let mut h = Harness::new();
    commit(
        &mut h,
        8,
        commit_req("a", -1, "", &[("t", 0, 1), ("u", 2, 5)]),
    );
    commit(&mut h, 8, commit_req("b", -1, "", &[("t", 0, 9)]));
    let resp = h.c.fetch_offsets(&OffsetFetchRequest {
        groups: vec![
            OffsetFetchGroup {
                group_id: "a".into(),
                topics: None,
                ..Default::default()
            },
            OffsetFetchGroup {
                group_id: "b".into(),
                topics: Some(vec![OffsetFetchTopic {
                    name: "t".into(),
                    partition_indexes: vec![0],
                }]),
                ..Default::default()
            },
        ],
        require_stable: false,
    });
    assert_eq!(resp.groups.len(), 2);
    let a = &resp.groups[0];
    assert_eq!(a.topics.len(), 2);
    assert_eq!(a.topics[1].name, "u");
    assert_eq!(a.topics[1].partitions[0].committed_offset, 5);
    assert_eq!(a.topics[0].partitions[0].metadata.as_deref(), Some("meta"));
    assert_eq!(a.topics[0].partitions[0].committed_leader_epoch, 3);
    assert_eq!(resp.groups[1].topics[0].partitions[0].committed_offset, 9);
}

#[test]
fn txn_offsets_stay_pending_until_the_commit_marker() {
    let mut h = Harness::new();
    commit(&mut h, 8, commit_req(G, -1, "", &[("t", 0, 5)]));
    let r =
        h.c.commit_txn_offsets(h.now, txn_req(77, -1, "", &[("t", 0, 50)]));
    assert_eq!(r.transaction, Some((77, 0)));
    h.apply(r);
    assert_eq!(fetch(&h, G, "t", &[0], false), vec![(5, Errors::None)]);
    assert_eq!(
        fetch(&h, G, "t", &[0], true),
        vec![(-1, Errors::UnstableOffsetCommit)],
        "require_stable"
    );
    h.end_transaction(77, true);
    assert_eq!(fetch(&h, G, "t", &[0], true), vec![(50, Errors::None)]);
}

#[test]
fn txn_offsets_are_dropped_on_abort() {
    let mut h = Harness::new();
    let r =
        h.c.commit_txn_offsets(h.now, txn_req(77, -1, "", &[("t", 0, 50)]));
    h.apply(r);
    h.end_transaction(77, false);
    assert_eq!(fetch(&h, G, "t", &[0], true), vec![(-1, Errors::None)]);
}

#[test]
fn txn_commit_does_not_overwrite_a_later_plain_commit() {
    let mut h = Harness::new();
    let r =
        h.c.commit_txn_offsets(h.now, txn_req(77, -1, "", &[("t", 0, 50)]));
    h.apply(r);
    commit(&mut h, 8, commit_req(G, -1, "", &[("t", 0, 60)]));
    h.end_transaction(77, true);
    assert_eq!(fetch(&h, G, "t", &[0], false), vec![(60, Errors::None)]);
}

#[test]
fn txn_offset_commit_checks_generation_but_not_group_state() {
    let mut h = Harness::new();
    let (m, j) = h.join_new(G, "c");
    h.advance(3000);
    let generation = h.join_response(j).unwrap().generation_id;
    // CompletingRebalance does not block transactional commits.
    let r =
        h.c.commit_txn_offsets(h.now, txn_req(1, generation, &m, &[("t", 0, 1)]));
    assert!(r.response.topics[0].partitions[0].error.is_none());
    let r =
        h.c.commit_txn_offsets(h.now, txn_req(1, generation + 5, &m, &[("t", 0, 1)]));
    assert_eq!(
        r.response.topics[0].partitions[0].error,
        Errors::IllegalGeneration
    );
    let mut other = txn_req(1, 4, "m", &[("t", 0, 1)]);
    other.group_id = "unknown".into();
    let r = h.c.commit_txn_offsets(h.now, other);
    assert_eq!(
        r.response.topics[0].partitions[0].error,
        Errors::IllegalGeneration
    );
}

#[test]
fn offset_delete_rules() {
    let mut h = Harness::new();
    let r = h.c.delete_offsets(
        0,
        OffsetDeleteRequest {
            group_id: G.into(),
            topics: vec![],
        },
    );
    assert_eq!(r.response.error, Errors::GroupIdNotFound);
    // A consumer group subscribed to t: t's offsets cannot go, u's can.
    let (m, generation) = one_member_group(&mut h);
    commit(
        &mut h,
        8,
        commit_req(G, generation, &m, &[("t", 0, 1), ("u", 0, 1)]),
    );
    let r = h.c.delete_offsets(
        h.now,
        OffsetDeleteRequest {
            group_id: G.into(),
            topics: vec![("t".into(), vec![0]), ("u".into(), vec![0])],
        },
    );
    assert_eq!(r.records.len(), 1);
    let resp = h.apply(r);
    assert_eq!(resp.topics[0].1, vec![(0, Errors::GroupSubscribedToTopic)]);
    assert_eq!(resp.topics[1].1, vec![(0, Errors::None)]);
    assert_eq!(fetch(&h, G, "u", &[0], false), vec![(-1, Errors::None)]);
    // A non-empty group of another protocol type: NON_EMPTY_GROUP.
    let mut req = join_req("connect-g", "", None);
    req.protocol_type = "connect".into();
    let j = h.join(9, "c", req.clone());
    req.member_id = h.join_response(j).unwrap().member_id.clone();
    h.join(9, "c", req);
    let r = h.c.delete_offsets(
        h.now,
        OffsetDeleteRequest {
            group_id: "connect-g".into(),
            topics: vec![("t".into(), vec![0])],
        },
    );
    assert_eq!(r.response.error, Errors::NonEmptyGroup);
}

#[test]
fn offsets_of_simple_groups_expire_after_retention_with_tombstones() {
    let mut h = Harness::with_config(GroupConfig {
        offsets_retention_ms: 60_000,
        offsets_retention_check_interval_ms: 10_000,
        ..GroupConfig::default()
    });
    commit(&mut h, 8, commit_req(G, -1, "", &[("t", 0, 1)]));
    h.advance(50_000);
    assert_eq!(fetch(&h, G, "t", &[0], false), vec![(1, Errors::None)]);
    h.advance(20_000);
    assert_eq!(fetch(&h, G, "t", &[0], false), vec![(-1, Errors::None)]);
    let tombstones: Vec<&GroupRecord> = h
        .log
        .iter()
        .map(|e| &e.record)
        .filter(|r| r.is_tombstone())
        .collect();
    assert_eq!(tombstones.len(), 2, "offset and group tombstones");
    assert!(
        h.c.group(G).is_none(),
        "an empty group without offsets is deleted"
    );
}

#[test]
fn default_retention_is_seven_days() {
    let mut h = Harness::new();
    commit(&mut h, 8, commit_req(G, -1, "", &[("t", 0, 1)]));
    h.advance(7 * 24 * 3600 * 1000 - 600_000 - 1);
    assert_eq!(fetch(&h, G, "t", &[0], false), vec![(1, Errors::None)]);
    h.advance(600_000 + 1);
    assert_eq!(fetch(&h, G, "t", &[0], false), vec![(-1, Errors::None)]);
}

#[test]
fn offsets_of_a_stable_consumer_group_on_subscribed_topics_do_not_expire() {
    let mut h = Harness::with_config(GroupConfig {
        offsets_retention_ms: 60_000,
        offsets_retention_check_interval_ms: 10_000,
        ..GroupConfig::default()
    });
    let (m, generation) = one_member_group(&mut h);
    commit(
        &mut h,
        8,
        commit_req(G, generation, &m, &[("t", 0, 1), ("other", 0, 1)]),
    );
    for _ in 0..20 {
        h.advance(5000);
        h.heartbeat(G, &m, generation);
    }
    assert_eq!(fetch(&h, G, "t", &[0], false), vec![(1, Errors::None)]);
    assert_eq!(
        fetch(&h, G, "other", &[0], false),
        vec![(-1, Errors::None)],
        "not subscribed"
    );
}

#[test]
fn explicit_retention_time_sets_an_expire_timestamp() {
    let mut h = Harness::with_config(GroupConfig {
        offsets_retention_check_interval_ms: 1000,
        ..GroupConfig::default()
    });
    let mut req = commit_req(G, -1, "", &[("t", 0, 1)]);
    req.retention_time_ms = 5000;
    commit(&mut h, 2, req);
    let GroupRecord::OffsetCommit { value: Some(v), .. } = &h.log[0].record else {
        panic!()
    };
    assert_eq!(v.expire_timestamp, Some(5000));
    h.advance(6000);
    assert_eq!(fetch(&h, G, "t", &[0], false), vec![(-1, Errors::None)]);
}

#[test]
fn pending_transactional_offsets_do_not_expire() {
    let mut h = Harness::with_config(GroupConfig {
        offsets_retention_ms: 1000,
        offsets_retention_check_interval_ms: 1000,
        ..GroupConfig::default()
    });
    commit(&mut h, 8, commit_req(G, -1, "", &[("t", 0, 1)]));
    let r =
        h.c.commit_txn_offsets(h.now, txn_req(5, -1, "", &[("t", 0, 2)]));
    h.apply(r);
    h.advance(5000);
    assert_eq!(fetch(&h, G, "t", &[0], false), vec![(1, Errors::None)]);
}

#[test]
fn list_groups_with_state_filter() {
    let mut h = Harness::new();
    one_member_group(&mut h);
    commit(&mut h, 8, commit_req("simple", -1, "", &[("t", 0, 1)]));
    let all = h.c.list_groups(&ListGroupsRequest::default());
    assert_eq!(all.groups.len(), 2);
    let stable = h.c.list_groups(&ListGroupsRequest {
        states_filter: vec!["stable".into()],
        types_filter: vec![],
    });
    assert_eq!(stable.groups.len(), 1);
    assert_eq!(stable.groups[0].group_id, G);
    assert_eq!(stable.groups[0].protocol_type, "consumer");
    assert_eq!(stable.groups[0].group_type, "classic");
    let consumer_type = h.c.list_groups(&ListGroupsRequest {
        states_filter: vec![],
        types_filter: vec!["consumer".into()],
    });
    assert!(
        consumer_type.groups.is_empty(),
        "KIP-848 groups are not hosted"
    );
}

#[test]
fn describe_groups_shows_assignments_only_when_stable() {
    let mut h = Harness::new();
    let (m, j) = h.join_new(G, "c");
    h.advance(3000);
    let generation = h.join_response(j).unwrap().generation_id;
    let d = h.c.describe_groups(5, &[G.into()]);
    assert_eq!(d[0].group_state, "CompletingRebalance");
    assert_eq!(d[0].protocol_data, "");
    assert!(d[0].members[0].member_metadata.is_empty());
    h.sync(Harness::sync_req(
        G,
        &m,
        generation,
        vec![(m.clone(), Bytes::from_static(b"A"))],
    ));
    let d = h.c.describe_groups(5, &[G.into(), "nope".into()]);
    assert_eq!(d[0].group_state, "Stable");
    assert_eq!(d[0].protocol_data, "range");
    assert_eq!(d[0].members[0].member_assignment, Bytes::from_static(b"A"));
    assert_eq!(d[0].members[0].client_id, "c");
    assert_eq!(
        (d[1].error, d[1].group_state.as_str()),
        (Errors::None, "Dead")
    );
    let d = h.c.describe_groups(6, &["nope".into()]);
    assert_eq!(d[0].error, Errors::GroupIdNotFound);
}

#[test]
fn delete_groups_rules() {
    let mut h = Harness::new();
    one_member_group(&mut h);
    commit(
        &mut h,
        8,
        commit_req("simple", -1, "", &[("t", 0, 1), ("t", 1, 1)]),
    );
    let r =
        h.c.delete_groups(h.now, &[G.into(), "simple".into(), "nope".into()]);
    assert_eq!(
        r.records.len(),
        3,
        "two offset tombstones and the group tombstone"
    );
    let resp = h.apply(r);
    let errors: Vec<Errors> = resp.iter().map(|d| d.error).collect();
    assert_eq!(
        errors,
        vec![Errors::NonEmptyGroup, Errors::None, Errors::GroupIdNotFound]
    );
    assert!(h.c.group("simple").is_none());
    assert_eq!(
        fetch(&h, "simple", "t", &[0], false),
        vec![(-1, Errors::None)]
    );
}

#[test]
fn restart_from_records_restores_groups_members_assignments_and_offsets() {
    let mut h = Harness::new();
    let (a, ja) = h.join_new(G, "a");
    let (b, _) = h.join_new(G, "b");
    h.advance(6000);
    let generation = h.join_response(ja).unwrap().generation_id;
    h.sync(Harness::sync_req(
        G,
        &a,
        generation,
        vec![
            (a.clone(), Bytes::from_static(b"A")),
            (b.clone(), Bytes::from_static(b"B")),
        ],
    ));
    commit(&mut h, 8, commit_req(G, generation, &a, &[("t", 0, 11)]));
    commit(&mut h, 8, commit_req("simple", -1, "", &[("t", 0, 3)]));
    let r =
        h.c.commit_txn_offsets(h.now, txn_req(9, -1, "", &[("t", 1, 40)]));
    h.apply(r);
    h.end_transaction(9, true);

    h.restart();
    let g = h.c.group(G).unwrap();
    assert_eq!(g.state(), GroupState::Stable);
    assert_eq!(g.generation_id(), generation);
    assert_eq!(g.leader_id(), Some(a.as_str()));
    assert_eq!(g.member(&b).unwrap().assignment, Bytes::from_static(b"B"));
    assert_eq!(
        fetch(&h, G, "t", &[0, 1], false),
        vec![(11, Errors::None), (40, Errors::None)]
    );
    assert_eq!(
        fetch(&h, "simple", "t", &[0], false),
        vec![(3, Errors::None)]
    );
    // Members continue where they were.
    assert_eq!(h.heartbeat(G, &a, generation), Errors::None);
    let s = h.sync(Harness::sync_req(G, &b, generation, vec![]));
    assert_eq!(
        h.sync_response(s).unwrap().assignment,
        Bytes::from_static(b"B")
    );
    // Sessions restart at load: a member that stays silent is removed.
    for _ in 0..4 {
        h.advance(4000);
        h.heartbeat(G, &a, generation);
    }
    assert!(!h.c.group(G).unwrap().has_member(&b));
}

#[test]
fn offsets_of_an_empty_consumer_group_expire_retention_after_it_became_empty() {
    let mut h = Harness::with_config(GroupConfig {
        offsets_retention_ms: 60_000,
        offsets_retention_check_interval_ms: 10_000,
        ..GroupConfig::default()
    });
    let (m, generation) = one_member_group(&mut h);
    commit(&mut h, 8, commit_req(G, generation, &m, &[("t", 0, 1)]));
    // The member stays 100 s, then leaves: the clock for its offsets starts now.
    for _ in 0..25 {
        h.advance(4000);
        h.heartbeat(G, &m, generation);
    }
    let r = h.c.leave_group(
        h.now,
        LeaveGroupRequest {
            group_id: G.into(),
            members: vec![LeavingMember {
                member_id: m.clone(),
                group_instance_id: None,
                reason: None,
            }],
        },
    );
    h.apply(r);
    assert_eq!(h.c.group(G).unwrap().state(), GroupState::Empty);
    h.advance(50_000);
    assert_eq!(
        fetch(&h, G, "t", &[0], false),
        vec![(1, Errors::None)],
        "commit is old, but the group was Stable"
    );
    h.advance(20_000);
    assert_eq!(fetch(&h, G, "t", &[0], false), vec![(-1, Errors::None)]);
    assert!(h.c.group(G).is_none());
}
