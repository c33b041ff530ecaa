//! Behaviour of the classic rebalance protocol: one test per rule / error code.

mod common;

use std::collections::BTreeMap;

use bytes::Bytes;
use common::*;
use josef_group::api::*;
use josef_group::assignor::leader_assign;
use josef_group::classic::GroupState;
use josef_group::record::GroupRecord;
use josef_group::{Errors, GroupConfig, GroupTimerKey};

const G: &str = "g";

fn state(h: &Harness) -> GroupState {
    h.c.group(G).expect("group").state()
}

/// Forms a Stable group of `n` dynamic members; returns member ids (leader first) and generation.
fn stable_group(h: &mut Harness, n: usize) -> (Vec<String>, i32) {
    let mut members = Vec::new();
    let mut parked = Vec::new();
    for i in 0..n {
        let (id, req) = h.join_new(G, &format!("c{i}"));
        members.push(id);
        parked.push(req);
    }
    // Members that arrive during the initial delay extend it once more.
    h.advance(2 * h.config.initial_rebalance_delay_ms as i64);
    let leader_resp = h.join_response(parked[0]).expect("join done").clone();
    assert_eq!(leader_resp.error, Errors::None);
    let generation = leader_resp.generation_id;
    let topics = BTreeMap::from([("t".to_string(), 6)]);
    let list: Vec<(String, Option<String>, Bytes)> = leader_resp
        .members
        .iter()
        .map(|m| {
            (
                m.member_id.clone(),
                m.group_instance_id.clone(),
                m.metadata.clone(),
            )
        })
        .collect();
    let assignments = leader_assign("range", &topics, &list, 1).unwrap();
    h.sync(Harness::sync_req(
        G,
        &leader_resp.leader,
        generation,
        assignments,
    ));
    for m in &members {
        if *m != leader_resp.leader {
            let id = h.sync(Harness::sync_req(G, m, generation, vec![]));
            assert_eq!(h.sync_response(id).unwrap().error, Errors::None);
        }
    }
    assert_eq!(state(h), GroupState::Stable);
    let leader = leader_resp.leader.clone();
    members.sort_by_key(|m| *m != leader);
    (members, generation)
}

#[test]
fn join_v4_plus_without_member_id_gets_member_id_required_with_client_id_uuid() {
    let mut h = Harness::new();
    let id = h.join(4, "my-client", join_req(G, "", None));
    let r = h.join_response(id).unwrap();
    assert_eq!(r.error, Errors::MemberIdRequired);
    let (prefix, uuid) = r.member_id.split_at("my-client-".len());
    assert_eq!(prefix, "my-client-");
    assert_eq!(uuid.len(), 36);
    assert!(h.c.group(G).unwrap().is_pending_member(&r.member_id));
    // The new group is persisted.
    assert!(matches!(
        h.log[0].record,
        GroupRecord::GroupMetadata { value: Some(_), .. }
    ));
}

#[test]
fn join_v3_without_member_id_is_added_directly() {
    let mut h = Harness::new();
    let id = h.join(3, "c", join_req(G, "", None));
    assert!(
        h.join_response(id).is_none(),
        "parked until the join phase ends"
    );
    assert_eq!(state(&h), GroupState::PreparingRebalance);
    h.advance(3000);
    let r = h.join_response(id).unwrap();
    assert_eq!(r.error, Errors::None);
    assert!(r.member_id.starts_with("c-"));
}

#[test]
fn static_member_id_is_group_instance_id_uuid() {
    let mut h = Harness::new();
    let id = h.join(5, "c", join_req(G, "", Some("instance-1")));
    h.advance(3000);
    let r = h.join_response(id).unwrap();
    assert!(r.member_id.starts_with("instance-1-"), "{}", r.member_id);
}

#[test]
fn first_member_to_join_leads() {
    let mut h = Harness::new();
    let (a, ja) = h.join_new(G, "a");
    let (b, jb) = h.join_new(G, "b");
    h.advance(6000);
    let ra = h.join_response(ja).unwrap().clone();
    let rb = h.join_response(jb).unwrap().clone();
    assert_eq!(ra.leader, a);
    assert_eq!(rb.leader, a);
    assert_eq!(ra.members.len(), 2, "the leader gets the member list");
    assert!(rb.members.is_empty(), "followers do not");
    assert_eq!(ra.generation_id, 1);
    assert_ne!(a, b);
}

#[test]
fn initial_rebalance_delay_is_3000ms() {
    let mut h = Harness::new();
    let (_, j) = h.join_new(G, "a");
    h.advance(2999);
    assert!(h.join_response(j).is_none());
    h.advance(1);
    assert_eq!(h.join_response(j).unwrap().error, Errors::None);
}

#[test]
fn initial_rebalance_delay_is_extended_per_new_member() {
    let mut h = Harness::new();
    let (_, ja) = h.join_new(G, "a");
    h.advance(1000);
    let (_, jb) = h.join_new(G, "b");
    h.advance(2000); // t = 3000: a new member arrived, so the delay is extended to 6000
    assert!(h.join_response(ja).is_none());
    h.advance(2999);
    assert!(h.join_response(ja).is_none());
    h.advance(1); // t = 6000
    assert_eq!(h.join_response(ja).unwrap().members.len(), 2);
    assert!(h.join_response(jb).is_some());
}

#[test]
fn initial_rebalance_delay_is_extended_at_most_up_to_the_rebalance_timeout() {
    let mut h = Harness::new();
    let (_, first) = h.join_new(G, "c0");
    // A join storm: a new member every second, forever.
    let mut i = 1;
    while h.join_response(first).is_none() {
        h.advance(1000);
        assert!(
            h.now <= 30_000,
            "the initial rebalance must end by the rebalance timeout"
        );
        if h.join_response(first).is_none() {
            h.join_new(G, &format!("c{i}"));
            i += 1;
        }
    }
    assert_eq!(h.now, 30_000);
}

#[test]
fn join_with_member_id_to_missing_group_is_unknown_member_id() {
    let mut h = Harness::new();
    let id = h.join(9, "c", join_req(G, "some-id", None));
    assert_eq!(h.join_response(id).unwrap().error, Errors::UnknownMemberId);
    assert!(h.c.group(G).is_none());
}

#[test]
fn join_with_session_timeout_outside_bounds_is_invalid_session_timeout() {
    let mut h = Harness::new();
    for t in [5999, 1_800_001] {
        let mut req = join_req(G, "", None);
        req.session_timeout_ms = t;
        let id = h.join(9, "c", req);
        assert_eq!(
            h.join_response(id).unwrap().error,
            Errors::InvalidSessionTimeout
        );
    }
    for t in [6000, 1_800_000] {
        let mut req = join_req(G, "", None);
        req.session_timeout_ms = t;
        let id = h.join(9, "c", req);
        assert_eq!(h.join_response(id).unwrap().error, Errors::MemberIdRequired);
    }
}

#[test]
fn empty_group_id_is_invalid_group_id() {
    let mut h = Harness::new();
    let id = h.join(9, "c", join_req("", "", None));
    assert_eq!(h.join_response(id).unwrap().error, Errors::InvalidGroupId);
    let id = h.sync(Harness::sync_req("", "m", 1, vec![]));
    assert_eq!(h.sync_response(id).unwrap().error, Errors::InvalidGroupId);
    assert_eq!(h.heartbeat("", "m", 1), Errors::InvalidGroupId);
}

#[test]
fn join_with_other_protocol_type_or_no_common_protocol_is_inconsistent_group_protocol() {
    let mut h = Harness::new();
    let (_a, _) = h.join_new(G, "a");
    let mut other_type = join_req(G, "", None);
    other_type.protocol_type = "connect".into();
    let id = h.join(9, "b", other_type);
    assert_eq!(
        h.join_response(id).unwrap().error,
        Errors::InconsistentGroupProtocol
    );
    let mut no_common = join_req(G, "", None);
    no_common.protocols = protocols(&["roundrobin"], &["t"]);
    let id = h.join(9, "b", no_common);
    assert_eq!(
        h.join_response(id).unwrap().error,
        Errors::InconsistentGroupProtocol
    );
    // Empty protocol list on an Empty group
    let mut h = Harness::new();
    let mut none = join_req(G, "", None);
    none.protocols.clear();
    let id = h.join(9, "b", none);
    assert_eq!(
        h.join_response(id).unwrap().error,
        Errors::InconsistentGroupProtocol
    );
}

#[test]
fn join_beyond_group_max_size_is_group_max_size_reached() {
    let mut h = Harness::with_config(GroupConfig {
        max_group_size: 2,
        ..GroupConfig::default()
    });
    stable_group(&mut h, 2);
    let id = h.join(9, "c", join_req(G, "", None));
    // The id is handed out, but joining with it is refused.
    let member_id = h.join_response(id).unwrap().member_id.clone();
    let id = h.join(9, "c", join_req(G, &member_id, None));
    let r = h.join_response(id).unwrap();
    assert_eq!(r.error, Errors::GroupMaxSizeReached);
    assert_eq!(r.member_id, "");
    assert_eq!(h.c.group(G).unwrap().num_members(), 2);
}

#[test]
fn protocol_is_chosen_by_vote_among_protocols_all_members_support() {
    let mut h = Harness::new();
    let mut a = join_req(G, "", None);
    a.protocols = protocols(&["roundrobin", "range"], &["t"]);
    let mut b = join_req(G, "", None);
    b.protocols = protocols(&["range", "roundrobin", "sticky"], &["t"]);
    let mut c = join_req(G, "", None);
    c.protocols = protocols(&["range", "roundrobin"], &["t"]);
    let mut parked = vec![];
    for (i, mut req) in [a, b, c].into_iter().enumerate() {
        let first = h.join(9, &format!("c{i}"), req.clone());
        req.member_id = h.join_response(first).unwrap().member_id.clone();
        parked.push(h.join(9, &format!("c{i}"), req));
    }
    h.advance(6000);
    // a votes roundrobin, b and c vote range; sticky is not supported by all.
    assert_eq!(
        h.join_response(parked[0]).unwrap().protocol_name.as_deref(),
        Some("range")
    );
}

#[test]
fn only_the_leaders_sync_carries_the_assignment_and_followers_wait_for_it() {
    let mut h = Harness::new();
    let (a, ja) = h.join_new(G, "a");
    let (b, _jb) = h.join_new(G, "b");
    h.advance(6000);
    let generation = h.join_response(ja).unwrap().generation_id;
    // The follower syncs first, with an assignment of its own that must be ignored.
    let fs = h.sync(Harness::sync_req(
        G,
        &b,
        generation,
        vec![(b.clone(), Bytes::from_static(b"mine"))],
    ));
    assert!(
        h.sync_response(fs).is_none(),
        "parked until the leader syncs"
    );
    assert_eq!(state(&h), GroupState::CompletingRebalance);
    let id = h.request_id();
    let r = h.c.sync_group(
        h.now,
        id,
        Harness::sync_req(
            G,
            &a,
            generation,
            vec![
                (a.clone(), Bytes::from_static(b"A")),
                (b.clone(), Bytes::from_static(b"B")),
            ],
        ),
    );
    // The GroupMetadata record comes with the answers: they go out once it is durable.
    assert_eq!(r.records.len(), 1);
    let GroupRecord::GroupMetadata { value: Some(v), .. } = &r.records[0] else {
        panic!("expected group metadata")
    };
    assert_eq!(v.generation, generation);
    assert_eq!(
        v.members
            .iter()
            .find(|m| m.member_id == b)
            .unwrap()
            .assignment,
        Bytes::from_static(b"B")
    );
    assert_eq!(r.completions.len(), 2);
    h.apply(r);
    assert_eq!(
        h.sync_response(fs).unwrap().assignment,
        Bytes::from_static(b"B")
    );
    assert_eq!(
        h.sync_response(id).unwrap().assignment,
        Bytes::from_static(b"A")
    );
    assert_eq!(state(&h), GroupState::Stable);
    // A member missing from the leader's assignment gets an empty one.
}

#[test]
fn member_missing_from_leader_assignment_gets_empty_assignment() {
    let mut h = Harness::new();
    let (a, ja) = h.join_new(G, "a");
    let (b, _) = h.join_new(G, "b");
    h.advance(6000);
    let generation = h.join_response(ja).unwrap().generation_id;
    h.sync(Harness::sync_req(
        G,
        &a,
        generation,
        vec![(a.clone(), Bytes::from_static(b"A"))],
    ));
    let fs = h.sync(Harness::sync_req(G, &b, generation, vec![]));
    let r = h.sync_response(fs).unwrap();
    assert_eq!(r.error, Errors::None);
    assert!(r.assignment.is_empty());
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    assert_eq!(r.protocol_type.as_deref(), Some("consumer"));
}

#[test]
fn sync_errors_unknown_member_illegal_generation_rebalance_in_progress_inconsistent_protocol() {
    let mut h = Harness::new();
    let (members, generation) = stable_group(&mut h, 2);
    let id = h.sync(Harness::sync_req(G, "nobody", generation, vec![]));
    assert_eq!(h.sync_response(id).unwrap().error, Errors::UnknownMemberId);
    let id = h.sync(Harness::sync_req("missing-group", "x", generation, vec![]));
    assert_eq!(h.sync_response(id).unwrap().error, Errors::UnknownMemberId);
    let id = h.sync(Harness::sync_req(G, &members[1], generation + 1, vec![]));
    assert_eq!(
        h.sync_response(id).unwrap().error,
        Errors::IllegalGeneration
    );
    let mut bad = Harness::sync_req(G, &members[1], generation, vec![]);
    bad.protocol_name = Some("roundrobin".into());
    let id = h.sync(bad);
    assert_eq!(
        h.sync_response(id).unwrap().error,
        Errors::InconsistentGroupProtocol
    );
    // A new member makes the group rebalance: syncs now get REBALANCE_IN_PROGRESS.
    h.join_new(G, "c");
    assert_eq!(state(&h), GroupState::PreparingRebalance);
    let id = h.sync(Harness::sync_req(G, &members[1], generation, vec![]));
    assert_eq!(
        h.sync_response(id).unwrap().error,
        Errors::RebalanceInProgress
    );
}

#[test]
fn heartbeat_answer_depends_on_state() {
    let mut h = Harness::new();
    assert_eq!(
        h.heartbeat(G, "m", 0),
        Errors::UnknownMemberId,
        "unknown group"
    );
    let (members, generation) = stable_group(&mut h, 2);
    assert_eq!(h.heartbeat(G, &members[0], generation), Errors::None);
    assert_eq!(
        h.heartbeat(G, "nobody", generation),
        Errors::UnknownMemberId
    );
    assert_eq!(
        h.heartbeat(G, &members[0], generation - 1),
        Errors::IllegalGeneration
    );
    h.join_new(G, "c");
    assert_eq!(
        h.heartbeat(G, &members[0], generation),
        Errors::RebalanceInProgress
    );
}

#[test]
fn heartbeat_in_completing_rebalance_is_none() {
    let mut h = Harness::new();
    let (a, ja) = h.join_new(G, "a");
    h.advance(3000);
    let generation = h.join_response(ja).unwrap().generation_id;
    assert_eq!(state(&h), GroupState::CompletingRebalance);
    assert_eq!(h.heartbeat(G, &a, generation), Errors::None);
}

#[test]
fn heartbeat_to_empty_group_is_unknown_member_id() {
    let mut h = Harness::new();
    let (members, generation) = stable_group(&mut h, 1);
    // The last member leaves: the group is Empty (and the member gone).
    let r = h.c.leave_group(
        h.now,
        LeaveGroupRequest {
            group_id: G.into(),
            members: vec![LeavingMember {
                member_id: members[0].clone(),
                group_instance_id: None,
                reason: None,
            }],
        },
    );
    h.apply(r);
    assert_eq!(state(&h), GroupState::Empty);
    assert_eq!(
        h.heartbeat(G, &members[0], generation),
        Errors::UnknownMemberId
    );
}

#[test]
fn session_timeout_removes_a_silent_member_and_rebalances() {
    let mut h = Harness::new();
    let (members, generation) = stable_group(&mut h, 2);
    // Only the leader heartbeats.
    for _ in 0..3 {
        h.advance(4000);
        let e = h.heartbeat(G, &members[0], generation);
        if e != Errors::None {
            assert_eq!(e, Errors::RebalanceInProgress);
            break;
        }
    }
    assert!(!h.c.group(G).unwrap().has_member(&members[1]));
    assert_eq!(state(&h), GroupState::PreparingRebalance);
    // The leader rejoins: the next generation has only it.
    let mut req = join_req(G, &members[0], None);
    req.protocols = protocols(&["range"], &["t"]);
    let id = h.join(9, "c0", req);
    let r = h.join_response(id).unwrap();
    assert_eq!(r.generation_id, generation + 1);
    assert_eq!(r.members.len(), 1);
}

#[test]
fn rebalance_timeout_drops_members_that_did_not_rejoin() {
    let mut h = Harness::new();
    let (members, generation) = stable_group(&mut h, 2);
    let (_c, jc) = h.join_new(G, "c");
    // The leader rejoins; the follower keeps heartbeating but never rejoins.
    let ja = h.join(9, "c0", join_req(G, &members[0], None));
    for _ in 0..7 {
        h.advance(4000);
        assert_eq!(
            h.heartbeat(G, &members[1], generation),
            Errors::RebalanceInProgress
        );
    }
    assert!(h.join_response(ja).is_none());
    h.advance(2000); // 30 s after the rebalance started
    let r = h.join_response(ja).unwrap();
    assert_eq!(r.members.len(), 2, "leader and the new member");
    assert!(h.join_response(jc).is_some());
    assert!(!h.c.group(G).unwrap().has_member(&members[1]));
}

#[test]
fn leave_triggers_a_rebalance() {
    let mut h = Harness::new();
    let (members, _) = stable_group(&mut h, 3);
    let r = h.c.leave_group(
        h.now,
        LeaveGroupRequest {
            group_id: G.into(),
            members: vec![LeavingMember {
                member_id: members[2].clone(),
                group_instance_id: None,
                reason: Some("bye".into()),
            }],
        },
    );
    let resp = h.apply(r);
    assert_eq!(resp.error, Errors::None);
    assert_eq!(resp.members[0].error, Errors::None);
    assert_eq!(state(&h), GroupState::PreparingRebalance);
}

#[test]
fn leave_batch_reports_errors_per_member() {
    let mut h = Harness::new();
    let (members, _) = stable_group(&mut h, 2);
    let r = h.c.leave_group(
        h.now,
        LeaveGroupRequest {
            group_id: G.into(),
            members: vec![
                LeavingMember {
                    member_id: members[1].clone(),
                    group_instance_id: None,
                    reason: None,
                },
                LeavingMember {
                    member_id: "ghost".into(),
                    group_instance_id: None,
                    reason: None,
                },
                LeavingMember {
                    member_id: String::new(),
                    group_instance_id: Some("no-such-instance".into()),
                    reason: None,
                },
            ],
        },
    );
    let resp = h.apply(r);
    let errors: Vec<Errors> = resp.members.iter().map(|m| m.error).collect();
    assert_eq!(
        errors,
        vec![
            Errors::None,
            Errors::UnknownMemberId,
            Errors::UnknownMemberId
        ]
    );
    let r = h.c.leave_group(
        h.now,
        LeaveGroupRequest {
            group_id: "nope".into(),
            members: vec![],
        },
    );
    assert_eq!(h.apply(r).error, Errors::UnknownMemberId);
}

#[test]
fn leader_leaving_mid_rebalance_hands_leadership_to_a_joined_member() {
    let mut h = Harness::new();
    let (members, _) = stable_group(&mut h, 3);
    h.join_new(G, "d"); // starts a rebalance
    let jb = h.join(9, "c1", join_req(G, &members[1], None));
    let jc = h.join(9, "c2", join_req(G, &members[2], None));
    let r = h.c.leave_group(
        h.now,
        LeaveGroupRequest {
            group_id: G.into(),
            members: vec![LeavingMember {
                member_id: members[0].clone(),
                group_instance_id: None,
                reason: None,
            }],
        },
    );
    h.apply(r);
    // Everyone left has rejoined: the join completes with a new leader among them.
    let rb = h.join_response(jb).unwrap().clone();
    let rc = h.join_response(jc).unwrap().clone();
    assert_eq!(rb.leader, rc.leader);
    assert_ne!(rb.leader, members[0]);
    assert!(h.c.group(G).unwrap().has_member(&rb.leader));
}

#[test]
fn changed_subscription_in_stable_triggers_a_rebalance() {
    let mut h = Harness::new();
    let (members, _) = stable_group(&mut h, 2);
    let mut req = join_req(G, &members[1], None);
    req.protocols = protocols(&["range"], &["t", "u"]);
    h.join(9, "c1", req);
    assert_eq!(state(&h), GroupState::PreparingRebalance);
}

#[test]
fn follower_rejoining_with_same_metadata_in_stable_gets_current_generation() {
    let mut h = Harness::new();
    let (members, generation) = stable_group(&mut h, 2);
    let id = h.join(9, "c1", join_req(G, &members[1], None));
    let r = h.join_response(id).unwrap();
    assert_eq!(r.error, Errors::None);
    assert_eq!(r.generation_id, generation);
    assert_eq!(state(&h), GroupState::Stable);
}

#[test]
fn leader_rejoining_in_stable_forces_a_rebalance() {
    let mut h = Harness::new();
    let (members, _) = stable_group(&mut h, 2);
    h.join(9, "c0", join_req(G, &members[0], None));
    assert_eq!(state(&h), GroupState::PreparingRebalance);
}

#[test]
fn rejoin_in_completing_rebalance_with_same_metadata_returns_the_generation() {
    let mut h = Harness::new();
    let (a, ja) = h.join_new(G, "a");
    h.advance(3000);
    let generation = h.join_response(ja).unwrap().generation_id;
    let id = h.join(9, "a", join_req(G, &a, None));
    let r = h.join_response(id).unwrap();
    assert_eq!(r.generation_id, generation);
    assert_eq!(r.members.len(), 1, "still the leader");
    assert_eq!(state(&h), GroupState::CompletingRebalance);
}

#[test]
fn rebalance_from_completing_rebalance_fails_parked_syncs_with_rebalance_in_progress() {
    let mut h = Harness::new();
    let (_a, ja) = h.join_new(G, "a");
    let (b, _) = h.join_new(G, "b");
    h.advance(6000);
    let generation = h.join_response(ja).unwrap().generation_id;
    let fs = h.sync(Harness::sync_req(G, &b, generation, vec![]));
    assert!(h.sync_response(fs).is_none());
    h.join_new(G, "c");
    assert_eq!(
        h.sync_response(fs).unwrap().error,
        Errors::RebalanceInProgress
    );
    assert_eq!(state(&h), GroupState::PreparingRebalance);
}

#[test]
fn members_that_do_not_sync_in_time_are_removed() {
    let mut h = Harness::new();
    let (a, ja) = h.join_new(G, "a");
    let (b, _) = h.join_new(G, "b");
    h.advance(6000);
    let generation = h.join_response(ja).unwrap().generation_id;
    // a syncs (as leader) but b never does; both heartbeat.
    h.sync(Harness::sync_req(G, &a, generation, vec![]));
    for _ in 0..8 {
        h.advance(4000);
        h.heartbeat(G, &a, generation);
        h.heartbeat(G, &b, generation);
    }
    let g = h.c.group(G).unwrap();
    assert!(
        !g.has_member(&b),
        "b did not sync within the rebalance timeout"
    );
    assert!(g.has_member(&a));
}

#[test]
fn pending_member_that_never_joins_expires_after_its_session_timeout() {
    let mut h = Harness::new();
    let id = h.join(9, "c", join_req(G, "", None));
    let member_id = h.join_response(id).unwrap().member_id.clone();
    assert!(h.c.group(G).unwrap().is_pending_member(&member_id));
    h.advance(10_000);
    assert!(!h.c.group(G).unwrap().is_pending_member(&member_id));
}

#[test]
fn static_member_rejoining_with_unknown_member_id_replaces_the_old_id_without_rebalance() {
    let mut h = Harness::new();
    let first = h.join(9, "c", join_req(G, "", Some("i1")));
    h.advance(3000);
    let r = h.join_response(first).unwrap().clone();
    let old_id = r.member_id.clone();
    let generation = r.generation_id;
    h.sync(SyncGroupRequest {
        group_instance_id: Some("i1".into()),
        ..Harness::sync_req(
            G,
            &old_id,
            generation,
            vec![(old_id.clone(), Bytes::from_static(b"A"))],
        )
    });
    assert_eq!(state(&h), GroupState::Stable);
    let log_len = h.log.len();
    // The process restarts and joins again with the same instance id.
    let again = h.join(9, "c", join_req(G, "", Some("i1")));
    let r2 = h.join_response(again).unwrap().clone();
    assert_eq!(r2.error, Errors::None);
    assert_ne!(r2.member_id, old_id);
    assert_eq!(r2.generation_id, generation, "no rebalance");
    assert!(
        r2.skip_assignment,
        "v9: the static leader skips the assignment"
    );
    assert_eq!(state(&h), GroupState::Stable);
    assert_eq!(h.log.len(), log_len + 1, "the new member id is persisted");
    // The old id is fenced.
    let hb = h.c.heartbeat(
        h.now,
        HeartbeatRequest {
            group_id: G.into(),
            generation_id: generation,
            member_id: old_id.clone(),
            group_instance_id: Some("i1".into()),
        },
    );
    assert_eq!(h.apply(hb).error, Errors::FencedInstanceId);
    // And the new one keeps the assignment.
    let s = h.sync(SyncGroupRequest {
        group_instance_id: Some("i1".into()),
        ..Harness::sync_req(G, &r2.member_id, generation, vec![])
    });
    assert_eq!(
        h.sync_response(s).unwrap().assignment,
        Bytes::from_static(b"A")
    );
}

#[test]
fn static_leader_rejoining_before_v9_is_told_the_old_leader_id() {
    let mut h = Harness::new();
    let first = h.join(5, "c", join_req(G, "", Some("i1")));
    h.advance(3000);
    let r = h.join_response(first).unwrap().clone();
    h.sync(SyncGroupRequest {
        group_instance_id: Some("i1".into()),
        ..Harness::sync_req(G, &r.member_id, r.generation_id, vec![])
    });
    let again = h.join(5, "c", join_req(G, "", Some("i1")));
    let r2 = h.join_response(again).unwrap();
    assert_eq!(
        r2.leader, r.member_id,
        "old id: the member acts as a follower"
    );
    assert!(!r2.skip_assignment);
    assert!(r2.members.is_empty());
}

#[test]
fn static_member_with_wrong_member_id_is_fenced_and_unknown_instance_is_unknown_member() {
    let mut h = Harness::new();
    let first = h.join(9, "c", join_req(G, "", Some("i1")));
    h.advance(3000);
    let id = h.join_response(first).unwrap().member_id.clone();
    let j = h.join(9, "c", join_req(G, "i1-not-the-id", Some("i1")));
    assert_eq!(h.join_response(j).unwrap().error, Errors::FencedInstanceId);
    let j = h.join(9, "c", join_req(G, &id, Some("other-instance")));
    assert_eq!(h.join_response(j).unwrap().error, Errors::UnknownMemberId);
}

#[test]
fn static_members_are_not_dropped_when_they_miss_a_rebalance() {
    let mut h = Harness::new();
    // A long session: the static member is expected back within it (KIP-345).
    let mut static_req = join_req(G, "", Some("i1"));
    static_req.session_timeout_ms = 120_000;
    let first = h.join(9, "s", static_req);
    let (dyn_id, jd) = h.join_new(G, "d");
    h.advance(6000);
    let static_id = h.join_response(first).unwrap().member_id.clone();
    let generation = h.join_response(jd).unwrap().generation_id;
    let leader = h.join_response(jd).unwrap().leader.clone();
    h.sync(SyncGroupRequest {
        group_instance_id: Some("i1".into()).filter(|_| leader == static_id),
        ..Harness::sync_req(G, &leader, generation, vec![])
    });
    // The dynamic member rejoins with a new subscription; the static one does not rejoin.
    let mut req = join_req(G, &dyn_id, None);
    req.protocols = protocols(&["range"], &["t", "u"]);
    let j = h.join(9, "d", req);
    h.heartbeat(G, &static_id, generation);
    h.advance(30_000);
    let r = h.join_response(j).unwrap();
    assert_eq!(r.error, Errors::None);
    assert!(
        h.c.group(G).unwrap().has_member(&static_id),
        "static members stay"
    );
}

#[test]
fn superseded_parked_join_is_answered_rebalance_in_progress() {
    let mut h = Harness::new();
    let (a, j1) = h.join_new(G, "a");
    let j2 = h.join(9, "a", join_req(G, &a, None));
    assert_eq!(
        h.join_response(j1).unwrap().error,
        Errors::RebalanceInProgress
    );
    h.advance(3000);
    assert_eq!(h.join_response(j2).unwrap().error, Errors::None);
}

#[test]
fn unload_answers_parked_requests_not_coordinator() {
    let mut h = Harness::new();
    let (_, j) = h.join_new(G, "a");
    let completions = h.c.unload();
    assert_eq!(completions.len(), 1);
    assert_eq!(completions[0].request, j);
    let GroupResponse::Join(r) = &completions[0].response else {
        panic!()
    };
    assert_eq!(r.error, Errors::NotCoordinator);
    assert_eq!(state(&h), GroupState::Dead);
    assert!(h.c.next_deadline().is_none());
}

#[test]
fn dead_group_answers_coordinator_not_available() {
    let mut h = Harness::new();
    let (members, generation) = stable_group(&mut h, 1);
    h.c.unload();
    assert_eq!(
        h.heartbeat(G, &members[0], generation),
        Errors::CoordinatorNotAvailable
    );
    let id = h.join(9, "x", join_req(G, "", None));
    assert_eq!(
        h.join_response(id).unwrap().error,
        Errors::CoordinatorNotAvailable
    );
    let id = h.sync(Harness::sync_req(G, &members[0], generation, vec![]));
    assert_eq!(
        h.sync_response(id).unwrap().error,
        Errors::CoordinatorNotAvailable
    );
}

#[test]
fn timers_are_keyed_by_group_and_member() {
    let mut h = Harness::new();
    let (members, _) = stable_group(&mut h, 2);
    for m in &members {
        let key = GroupTimerKey::Heartbeat {
            group_id: G.into(),
            member_id: m.clone(),
        };
        assert_eq!(h.c.deadline(&key), Some(h.now + 10_000));
    }
    // A heartbeat moves only its own member's deadline.
    h.advance(1000);
    h.heartbeat(G, &members[0], 1);
    let d0 = h.c.deadline(&GroupTimerKey::Heartbeat {
        group_id: G.into(),
        member_id: members[0].clone(),
    });
    let d1 = h.c.deadline(&GroupTimerKey::Heartbeat {
        group_id: G.into(),
        member_id: members[1].clone(),
    });
    assert_eq!(d0, Some(h.now + 10_000));
    assert_eq!(d1, Some(h.now - 1000 + 10_000));
    // A late duplicate fire of a moved key does nothing.
    let r = h.c.on_timer(
        h.now,
        &GroupTimerKey::Heartbeat {
            group_id: G.into(),
            member_id: members[0].clone(),
        },
    );
    assert!(r.records.is_empty() && r.completions.is_empty());
    assert!(h.c.group(G).unwrap().has_member(&members[0]));
}

#[test]
fn last_member_leaving_empties_the_group_and_persists_it() {
    let mut h = Harness::new();
    let (members, generation) = stable_group(&mut h, 1);
    let r = h.c.leave_group(
        h.now,
        LeaveGroupRequest {
            group_id: G.into(),
            members: vec![LeavingMember {
                member_id: members[0].clone(),
                group_instance_id: None,
                reason: None,
            }],
        },
    );
    assert_eq!(r.records.len(), 1);
    let GroupRecord::GroupMetadata { value: Some(v), .. } = &r.records[0] else {
        panic!()
    };
    assert!(v.members.is_empty());
    assert_eq!(v.generation, generation + 1);
    h.apply(r);
    assert_eq!(state(&h), GroupState::Empty);
}

#[test]
fn a_silent_static_member_expires_at_its_session_timeout_and_the_empty_group_can_be_deleted() {
    let mut h = Harness::new();
    let mut req = join_req(G, "", Some("i1"));
    req.session_timeout_ms = 10_000;
    let j = h.join(9, "s", req);
    h.advance(h.config.initial_rebalance_delay_ms as i64);
    let r = h.join_response(j).unwrap().clone();
    assert_eq!(r.error, Errors::None);
    let mut sync = Harness::sync_req(G, &r.member_id, r.generation_id, vec![]);
    sync.group_instance_id = Some("i1".into());
    let s = h.sync(sync);
    assert_eq!(h.sync_response(s).unwrap().error, Errors::None);
    assert_eq!(state(&h), GroupState::Stable);
    // Still alive within its session...
    h.advance(9_000);
    assert!(h.c.group(G).unwrap().has_member(&r.member_id));
    // ...removed when it runs out, although static: the group is left Empty.
    h.advance(1_001);
    assert_eq!(state(&h), GroupState::Empty);
    assert_eq!(h.c.group(G).unwrap().num_members(), 0);
    assert!(h.c.group(G).unwrap().static_member_id("i1").is_none());
    // DeleteGroups works right away.
    let r = h.c.delete_groups(h.now, &[G.to_string()]);
    let deleted = h.apply(r);
    assert_eq!(deleted[0].error, Errors::None);
    assert!(h.c.group(G).is_none());
}
