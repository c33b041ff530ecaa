//! ConsumerGroupHeartbeat rules and error codes (the scenarios of Kafka's KIP-848 coordinator).

mod consumer_common;

use consumer_common::*;
use josef_group::consumer::api::ConsumerGroupHeartbeatRequest;
use josef_group::consumer::{ConsumerGroupState, MemberState};
use josef_group::record::{ConsumerRecord, GroupRecord};
use josef_group::{Errors, GroupConfig};

fn h() -> H {
    H::new(GroupConfig::default(), &[("t", 3), ("u", 2)])
}

#[test]
fn first_member_gets_epoch_one_and_every_partition_in_one_batch() {
    let mut h = h();
    let r =
        h.c.consumer_group_heartbeat(h.now, &ctx(1), join("g", "m1", &["t"]));
    let kinds: Vec<&str> = r
        .records
        .iter()
        .map(|r| match r {
            GroupRecord::Consumer { record, .. } => match record {
                ConsumerRecord::MemberMetadata { .. } => "5",
                ConsumerRecord::PartitionMetadata { .. } => "4",
                ConsumerRecord::GroupMetadata { .. } => "3",
                ConsumerRecord::TargetAssignmentMember { .. } => "7",
                ConsumerRecord::TargetAssignmentMetadata { .. } => "6",
                ConsumerRecord::CurrentMemberAssignment { .. } => "8",
            },
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["5", "4", "3", "7", "6", "8"]);
    let resp = h.apply(r);
    assert_eq!(resp.error, Errors::None);
    assert_eq!(resp.member_epoch, 1);
    assert_eq!(resp.heartbeat_interval_ms, 5000);
    assert_eq!(resp.assignment, Some(parts("t", &[0, 1, 2])));
    assert_eq!(
        h.c.consumer_group("g").unwrap().state(),
        ConsumerGroupState::Stable
    );
    h.assert_replay_rebuilds();
}

#[test]
fn a_partition_moves_only_after_its_owner_revoked_it() {
    let mut h = h();
    h.hb(join("g", "m1", &["t"]));
    let r2 = h.hb(join("g", "m2", &["t"]));
    assert_eq!(r2.member_epoch, 2);
    // m1 still owns everything: m2 waits at epoch 2 with nothing.
    let g = h.c.consumer_group("g").unwrap();
    assert_eq!(g.members["m2"].state, MemberState::UnreleasedPartitions);
    assert_eq!(r2.assignment, Some(parts("t", &[])));
    let r1 = h.hb(beat("g", "m1", 1, Some(parts("t", &[0, 1, 2]))));
    assert_eq!(r1.member_epoch, 1);
    let g = h.c.consumer_group("g").unwrap();
    assert_eq!(g.members["m1"].state, MemberState::UnrevokedPartitions);
    assert_eq!(g.state(), ConsumerGroupState::Reconciling);
    // The response holds only what m1 keeps.
    let kept = r1.assignment.clone().unwrap();
    assert_eq!(josef_group::consumer::assignment_len(&kept), 2);
    h.assert_invariants();
    // m2 asks again: still nothing, the partition is not released.
    let r2 = h.hb(beat("g", "m2", 2, Some(parts("t", &[]))));
    assert_eq!(r2.assignment, None);
    // m1 revokes.
    let r1 = h.hb(beat("g", "m1", 1, Some(kept.clone())));
    assert_eq!(r1.member_epoch, 2);
    let r2 = h.hb(beat("g", "m2", 2, Some(parts("t", &[]))));
    assert_eq!(
        josef_group::consumer::assignment_len(r2.assignment.as_ref().unwrap()),
        1
    );
    assert_eq!(
        h.c.consumer_group("g").unwrap().state(),
        ConsumerGroupState::Stable
    );
    h.assert_invariants();
    h.assert_replay_rebuilds();
}

#[test]
fn session_expiry_and_revocation_timeout_fence_the_member() {
    let mut h = h();
    h.hb(join("g", "m1", &["t"]));
    h.hb(join("g", "m2", &["t"]));
    // m2 keeps heartbeating; m1 goes silent past the 45 s session.
    let (mut epoch, mut owned) = (2, parts("t", &[]));
    for _ in 0..10 {
        h.advance(5_000);
        let r = h.hb(beat("g", "m2", epoch, Some(owned.clone())));
        epoch = r.member_epoch;
        owned = r.assignment.unwrap_or(owned);
    }
    let g = h.c.consumer_group("g").unwrap();
    assert!(g.member("m1").is_none());
    assert_eq!(g.group_epoch, 3);
    assert_eq!(
        h.hb(beat("g", "m1", 1, None)).error,
        Errors::UnknownMemberId
    );
    assert_eq!(epoch, 3);
    assert_eq!(owned, parts("t", &[0, 1, 2]));

    // Revocation: a member that does not revoke within its rebalance timeout is fenced.
    let mut h2 = H::new(GroupConfig::default(), &[("t", 3)]);
    let mut j = join("g", "a", &["t"]);
    j.rebalance_timeout_ms = 10_000;
    h2.hb(j);
    h2.hb(join("g", "b", &["t"]));
    h2.hb(beat("g", "a", 1, Some(parts("t", &[0, 1, 2]))));
    assert_eq!(
        h2.c.consumer_group("g").unwrap().members["a"].state,
        MemberState::UnrevokedPartitions
    );
    h2.advance(5_000);
    h2.hb(beat("g", "a", 1, Some(parts("t", &[0, 1, 2]))));
    h2.hb(beat("g", "b", 2, Some(parts("t", &[]))));
    h2.advance(6_000);
    assert!(h2.c.consumer_group("g").unwrap().member("a").is_none());
    h2.assert_replay_rebuilds();
}

#[test]
fn epoch_checks_fence_or_accept_a_lost_response() {
    let mut h = h();
    h.hb(join("g", "m1", &["t"]));
    assert_eq!(
        h.hb(beat("g", "m1", 2, None)).error,
        Errors::FencedMemberEpoch
    );
    // Bump m1 to epoch 2 through a second member joining and leaving.
    h.hb(join("g", "m2", &["u"]));
    let r = h.hb(beat("g", "m1", 1, Some(parts("t", &[0, 1, 2]))));
    assert_eq!(r.member_epoch, 2);
    // The response was lost: the previous epoch with a subset of the assignment is accepted.
    let ok = h.hb(beat("g", "m1", 1, Some(parts("t", &[0]))));
    assert_eq!(ok.error, Errors::None);
    assert_eq!(ok.member_epoch, 2);
    // With a superset (a partition it does not own) it is fenced.
    let mut owned = parts("t", &[0, 1, 2]);
    owned.extend(parts("u", &[0]));
    assert_eq!(
        h.hb(beat("g", "m1", 1, Some(owned))).error,
        Errors::FencedMemberEpoch
    );
    assert_eq!(
        h.hb(beat("g", "m1", 1, None)).error,
        Errors::FencedMemberEpoch
    );
    assert_eq!(
        h.hb(beat("g", "nobody", 1, None)).error,
        Errors::UnknownMemberId
    );
    assert_eq!(
        h.hb(beat("missing", "m1", 1, None)).error,
        Errors::GroupIdNotFound
    );
}

#[test]
fn invalid_first_heartbeats_and_unknown_assignors() {
    let mut h = h();
    let mut r = join("g", "m", &["t"]);
    r.rebalance_timeout_ms = -1;
    assert_eq!(h.hb(r).error, Errors::InvalidRequest);
    let mut r = join("g", "m", &["t"]);
    r.topic_partitions = Some(parts("t", &[0]));
    assert_eq!(h.hb(r).error, Errors::InvalidRequest);
    let mut r = join("g", "m", &["t"]);
    r.topic_partitions = None;
    assert_eq!(h.hb(r).error, Errors::InvalidRequest);
    let mut r = join("g", "m", &["t"]);
    r.subscribed_topic_names = None;
    assert_eq!(h.hb(r).error, Errors::InvalidRequest);
    assert_eq!(h.hb(beat("g", "m", -3, None)).error, Errors::InvalidRequest);
    assert_eq!(h.hb(join("g", "", &["t"])).error, Errors::InvalidRequest);
    assert_eq!(h.hb(join("", "m", &["t"])).error, Errors::InvalidRequest);
    let mut r = join("g", "m", &["t"]);
    r.instance_id = Some(" ".into());
    assert_eq!(h.hb(r).error, Errors::InvalidRequest);
    assert_eq!(h.hb(beat("g", "m", -2, None)).error, Errors::InvalidRequest);
    let mut r = join("g", "m", &["t"]);
    r.server_assignor = Some("sticky".into());
    assert_eq!(h.hb(r).error, Errors::UnsupportedAssignor);
    // v0: an empty member id at epoch 0 gets one generated.
    let resp = {
        let r =
            h.c.consumer_group_heartbeat(h.now, &ctx(0), join("g", "", &["t"]));
        h.apply(r)
    };
    assert_eq!(resp.error, Errors::None);
    assert_eq!(resp.member_id.unwrap().len(), 36);
    // Nothing was written for the rejected requests.
    assert_eq!(h.c.consumer_group("g").unwrap().members.len(), 1);
}

#[test]
fn group_max_size_and_assignor_choice() {
    let config = GroupConfig {
        consumer_max_size: 2,
        ..GroupConfig::default()
    };
    let mut h = H::new(config, &[("t", 4)]);
    h.hb(join("g", "a", &["t"]));
    let mut b = join("g", "b", &["t"]);
    b.server_assignor = Some("range".into());
    h.hb(b);
    assert_eq!(
        h.hb(join("g", "c", &["t"])).error,
        Errors::GroupMaxSizeReached
    );
    // A member already in the group is not refused.
    assert_eq!(h.hb(beat("g", "a", 1, None)).error, Errors::None);
    let d = h.c.consumer_group_describe(&["g".into(), "nope".into()]);
    assert_eq!(d[0].assignor_name, "range");
    assert_eq!(d[0].members.len(), 2);
    assert_eq!(d[1].error, Errors::GroupIdNotFound);
}

#[test]
fn leaving_with_minus_one_fences_and_bumps() {
    let mut h = h();
    h.hb(join("g", "a", &["t"]));
    h.hb(join("g", "b", &["t"]));
    let r = h.hb(beat("g", "a", -1, None));
    assert_eq!((r.error, r.member_epoch), (Errors::None, -1));
    let g = h.c.consumer_group("g").unwrap();
    assert!(g.member("a").is_none());
    assert_eq!(g.group_epoch, 3);
    assert_eq!(
        h.hb(beat("g", "a", -1, None)).error,
        Errors::UnknownMemberId
    );
    let r = h.hb(beat("g", "b", -1, None));
    assert_eq!(r.error, Errors::None);
    assert_eq!(
        h.c.consumer_group("g").unwrap().state(),
        ConsumerGroupState::Empty
    );
    h.assert_replay_rebuilds();
}

fn static_join(member: &str, instance: &str) -> ConsumerGroupHeartbeatRequest {
    let mut r = join("g", member, &["t"]);
    r.instance_id = Some(instance.into());
    r
}

#[test]
fn static_members_leave_temporarily_and_come_back_without_a_bump() {
    let mut h = h();
    h.hb(static_join("a1", "i-a"));
    h.hb(static_join("b1", "i-b"));
    // Settle.
    for _ in 0..3 {
        let a = h.c.consumer_group("g").unwrap().members["a1"].clone();
        h.hb(ConsumerGroupHeartbeatRequest {
            instance_id: Some("i-a".into()),
            ..beat("g", "a1", a.member_epoch, Some(a.assigned.clone()))
        });
        let b = h.c.consumer_group("g").unwrap().members["b1"].clone();
        h.hb(ConsumerGroupHeartbeatRequest {
            instance_id: Some("i-b".into()),
            ..beat("g", "b1", b.member_epoch, Some(b.assigned.clone()))
        });
    }
    let g = h.c.consumer_group("g").unwrap();
    assert_eq!(g.state(), ConsumerGroupState::Stable);
    let epoch = g.group_epoch;
    let owned = g.members["a1"].assigned.clone();
    // Another process with the same instance id while a1 holds it.
    assert_eq!(
        h.hb(static_join("a2", "i-a")).error,
        Errors::UnreleasedInstanceId
    );
    // The wrong member id for an instance.
    let wrong = ConsumerGroupHeartbeatRequest {
        instance_id: Some("i-a".into()),
        ..beat("g", "zz", epoch, None)
    };
    assert_eq!(h.hb(wrong).error, Errors::FencedInstanceId);
    let left = h.hb(ConsumerGroupHeartbeatRequest {
        instance_id: Some("i-a".into()),
        ..beat("g", "a1", -2, None)
    });
    assert_eq!((left.error, left.member_epoch), (Errors::None, -2));
    // Its partitions wait for it.
    let r = h.hb(static_join("a2", "i-a"));
    assert_eq!(r.error, Errors::None);
    assert_eq!(r.assignment, Some(owned));
    let g = h.c.consumer_group("g").unwrap();
    assert_eq!(g.group_epoch, epoch, "no bump for a static replacement");
    assert!(g.member("a1").is_none());
    h.assert_invariants();
    h.assert_replay_rebuilds();
    // A static member that stays away is removed at its session timeout.
    h.hb(ConsumerGroupHeartbeatRequest {
        instance_id: Some("i-b".into()),
        ..beat("g", "b1", -2, None)
    });
    h.advance(46_000);
    let g = h.c.consumer_group("g").unwrap();
    assert!(g.member("b1").is_none());
}

#[test]
fn regex_subscriptions_follow_topics_coming_and_going() {
    let mut h = H::new(GroupConfig::default(), &[("orders-a", 2), ("other", 2)]);
    let mut r = join("g", "m", &[]);
    r.subscribed_topic_names = None;
    r.subscribed_topic_regex = Some("orders-.*".into());
    let resp = h.hb(r);
    assert_eq!(resp.assignment, Some(parts("orders-a", &[0, 1])));
    h.topics(&[("orders-a", 2), ("orders-b", 1), ("other", 2)]);
    let g = h.c.consumer_group("g").unwrap();
    assert_eq!(g.group_epoch, 2);
    let mut owned = parts("orders-a", &[0, 1]);
    let resp = h.hb(beat("g", "m", 1, Some(owned.clone())));
    owned.extend(parts("orders-b", &[0]));
    assert_eq!(resp.member_epoch, 2);
    assert_eq!(resp.assignment, Some(owned));
    // A topic deleted is revoked.
    h.topics(&[("orders-b", 1), ("other", 2)]);
    let resp = h.hb(beat("g", "m", 2, None));
    assert_eq!(resp.assignment, Some(parts("orders-b", &[0])));
    // Whole-name match: `orders` alone does not match `orders-b`.
    let mut bad = join("g", "n", &[]);
    bad.subscribed_topic_regex = Some("(".into());
    assert_eq!(h.hb(bad).error, Errors::InvalidRegularExpression);
    h.assert_replay_rebuilds();
}

#[test]
fn a_rejoin_at_epoch_zero_starts_over_owning_nothing() {
    let mut h = h();
    h.hb(join("g", "m", &["t"]));
    let r = h.hb(join("g", "m", &["t"]));
    assert_eq!(r.error, Errors::None);
    assert_eq!(r.assignment, Some(parts("t", &[0, 1, 2])));
    h.assert_invariants();
    h.assert_replay_rebuilds();
}
