//! Online migration between the classic and the consumer protocol
//! (`group.consumer.migration.policy`): a classic group upgraded by a consumer-protocol member,
//! classic members inside a consumer group, and the downgrade when the last consumer-protocol
//! member leaves. Every step is checked against a coordinator rebuilt from the log's bytes.

mod consumer_common;

use std::collections::BTreeMap;

use bytes::Bytes;
use consumer_common::*;
use josef_group::api::*;
use josef_group::assignor::leader_assign;
use josef_group::classic::GroupState;
use josef_group::consumer::{ConsumerGroupState, LEAVE_GROUP_MEMBER_EPOCH};
use josef_group::consumer_protocol::{Assignment as ProtocolAssignment, Subscription};
use josef_group::record::{ConsumerRecord, GroupRecord};
use josef_group::{Errors, GroupConfig, GroupResult, MigrationPolicy};

const G: &str = "g";
const SESSION: i32 = 10_000;
const REBALANCE: i32 = 60_000;

struct T {
    h: H,
    next: RequestId,
    responses: BTreeMap<RequestId, GroupResponse>,
    /// Records of the last call, as returned.
    last: Vec<GroupRecord>,
}

fn subscription(topics: &[&str]) -> Bytes {
    Subscription {
        topics: topics.iter().map(|t| t.to_string()).collect(),
        ..Default::default()
    }
    .encode(1)
}

fn protocols(topics: &[&str]) -> Vec<JoinProtocol> {
    vec![JoinProtocol {
        name: "range".into(),
        metadata: subscription(topics),
    }]
}

fn join_req(member_id: &str) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: G.into(),
        session_timeout_ms: SESSION,
        rebalance_timeout_ms: REBALANCE,
        member_id: member_id.into(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: protocols(&["t"]),
        reason: None,
    }
}

fn partitions_of(assignment: &Bytes) -> Vec<(String, i32)> {
    let (_, a) = ProtocolAssignment::decode(assignment).expect("assignment decodes");
    a.topic_partitions()
        .map(|(t, p)| (t.to_string(), p))
        .collect()
}

impl T {
    fn new(policy: MigrationPolicy) -> T {
        let config = GroupConfig {
            consumer_migration_policy: policy,
            ..GroupConfig::default()
        };
        T {
            h: H::new(config, &[("t", 4)]),
            next: 1,
            responses: BTreeMap::new(),
            last: Vec::new(),
        }
    }

    fn take<R>(&mut self, r: GroupResult<R>) -> R {
        for c in &r.completions {
            self.responses.insert(c.request, c.response.clone());
        }
        self.last = r.records.clone();
        self.h.apply(r)
    }

    fn advance(&mut self, ms: i64) {
        self.h.now += ms;
        while let Some(r) = self.h.c.fire_next_due(self.h.now) {
            self.take(r);
        }
    }

    fn join(&mut self, req: JoinGroupRequest) -> RequestId {
        let id = self.next;
        self.next += 1;
        let r = self.h.c.join_group(self.h.now, id, &ctx(3), req);
        self.take(r);
        id
    }

    fn join_response(&self, id: RequestId) -> JoinGroupResponse {
        match self.responses.get(&id) {
            Some(GroupResponse::Join(j)) => j.clone(),
            other => panic!("no join response for {id}: {other:?}"),
        }
    }

    fn sync(
        &mut self,
        member: &str,
        generation: i32,
        assignments: Vec<(String, Bytes)>,
    ) -> SyncGroupResponse {
        let id = self.next;
        self.next += 1;
        let req = SyncGroupRequest {
            group_id: G.into(),
            generation_id: generation,
            member_id: member.into(),
            group_instance_id: None,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignments,
        };
        let r = self.h.c.sync_group(self.h.now, id, req);
        self.take(r);
        match self.responses.get(&id) {
            Some(GroupResponse::Sync(s)) => s.clone(),
            other => panic!("sync of {member} not answered: {other:?}"),
        }
    }

    fn heartbeat(&mut self, member: &str, generation: i32) -> Errors {
        let req = HeartbeatRequest {
            group_id: G.into(),
            generation_id: generation,
            member_id: member.into(),
            group_instance_id: None,
        };
        let r = self.h.c.heartbeat(self.h.now, req);
        self.take(r).error
    }

    fn hb(
        &mut self,
        req: josef_group::consumer::api::ConsumerGroupHeartbeatRequest,
    ) -> josef_group::consumer::api::ConsumerGroupHeartbeatResponse {
        let r = self.h.c.consumer_group_heartbeat(self.h.now, &ctx(1), req);
        self.take(r)
    }

    /// A heartbeat of the consumer-protocol member `c` at its current epoch.
    fn keep_c_alive(&mut self) {
        let e = self
            .h
            .c
            .consumer_group(G)
            .unwrap()
            .member("c")
            .unwrap()
            .member_epoch;
        assert_eq!(self.hb(beat(G, "c", e, None)).error, Errors::None);
    }

    fn leave(&mut self, member: &str) -> LeaveGroupResponse {
        let req = LeaveGroupRequest {
            group_id: G.into(),
            members: vec![LeavingMember {
                member_id: member.into(),
                group_instance_id: None,
                reason: None,
            }],
        };
        let r = self.h.c.leave_group(self.h.now, req);
        self.take(r)
    }

    fn commit(&mut self, member: &str, generation: i32, version: i16) -> Errors {
        let req = OffsetCommitRequest {
            group_id: G.into(),
            generation_id_or_member_epoch: generation,
            member_id: member.into(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics: vec![OffsetCommitTopic {
                name: "t".into(),
                partitions: vec![OffsetCommitPartition {
                    partition_index: 0,
                    committed_offset: 7,
                    committed_leader_epoch: -1,
                    commit_timestamp: -1,
                    committed_metadata: None,
                }],
            }],
        };
        let r = self.h.c.commit_offsets(self.h.now, &ctx(version), req);
        let resp = self.take(r);
        resp.topics[0].partitions[0].error
    }

    /// A Stable classic group of two range members on `t` (4 partitions); returns the member
    /// ids and the generation.
    fn classic_group(&mut self) -> (Vec<String>, i32) {
        let j1 = self.join(join_req(""));
        let j2 = self.join(join_req(""));
        self.advance(10_000);
        let r1 = self.join_response(j1);
        let r2 = self.join_response(j2);
        assert_eq!((r1.error, r2.error), (Errors::None, Errors::None));
        let (leader, follower) = if r1.leader == r1.member_id {
            (r1, r2)
        } else {
            (r2, r1)
        };
        let members: Vec<(String, Option<String>, Bytes)> = leader
            .members
            .iter()
            .map(|m| (m.member_id.clone(), None, m.metadata.clone()))
            .collect();
        let topics = BTreeMap::from([("t".to_string(), 4)]);
        let assignments = leader_assign("range", &topics, &members, 1).unwrap();
        let generation = leader.generation_id;
        assert_eq!(
            self.sync(&leader.member_id, generation, assignments).error,
            Errors::None
        );
        assert_eq!(
            self.sync(&follower.member_id, generation, vec![]).error,
            Errors::None
        );
        assert_eq!(self.h.c.group(G).unwrap().state(), GroupState::Stable);
        (vec![leader.member_id, follower.member_id], generation)
    }
}

#[test]
fn a_consumer_member_joining_a_classic_group_upgrades_it_and_classic_members_follow() {
    let mut t = T::new(MigrationPolicy::default());
    let (classic, generation) = t.classic_group();

    // The consumer-protocol member joins: the classic group becomes a consumer group.
    let resp = t.hb(join(G, "c", &["t"]));
    assert_eq!(resp.error, Errors::None);
    assert!(t.h.c.group(G).is_none(), "the classic group is gone");
    let g = t.h.c.consumer_group(G).expect("a consumer group");
    assert_eq!(g.members.len(), 3);
    assert_eq!(resp.member_epoch, generation + 1);
    // Kafka's records: the classic group's tombstone, then the converted group.
    assert!(t
        .last
        .iter()
        .any(|r| matches!(r, GroupRecord::GroupMetadata { value: None, .. })));
    for id in &classic {
        let m = &g.members[id];
        assert!(m.uses_classic_protocol());
        assert_eq!(m.classic.as_ref().unwrap().session_timeout_ms, SESSION);
        assert_eq!(m.subscribed_topic_names, vec!["t".to_string()]);
        assert_eq!(m.member_epoch, generation, "kept at the classic generation");
    }
    // All four partitions are still owned by the classic members: the newcomer waits.
    assert!(resp.assignment.unwrap_or_default().is_empty());
    t.h.assert_replay_rebuilds();
    t.h.assert_invariants();

    // Classic members learn of the new epoch through their heartbeat (or a sync) and rejoin.
    assert_eq!(
        t.sync(&classic[0], generation, vec![]).error,
        Errors::RebalanceInProgress
    );
    for id in &classic {
        assert_eq!(t.heartbeat(id, generation), Errors::RebalanceInProgress);
    }
    let mut synced = Vec::new();
    for id in &classic {
        let j = t.join(join_req(id));
        let r = t.join_response(j);
        assert_eq!(r.error, Errors::None);
        assert_eq!(r.generation_id, generation + 1);
        assert_eq!(
            r.leader, "",
            "a classic member of a consumer group is a follower"
        );
        assert!(r.members.is_empty());
        let s = t.sync(id, r.generation_id, vec![]);
        assert_eq!(s.error, Errors::None);
        let target = t.h.c.consumer_group(G).unwrap().target_of(id);
        let got = partitions_of(&s.assignment);
        assert_eq!(got.len(), target.values().map(|p| p.len()).sum::<usize>());
        synced.extend(got);
        assert_eq!(t.heartbeat(id, generation + 1), Errors::None);
        // Commits carry the generation, i.e. the member epoch, through the old versions.
        assert_eq!(t.commit(id, generation + 1, 8), Errors::None);
        assert_eq!(t.commit(id, generation, 8), Errors::IllegalGeneration);
    }
    // The consumer-protocol member gets the rest once released.
    let resp = t.hb(beat(G, "c", generation + 1, Some(Default::default())));
    let mine: usize = resp.assignment.unwrap().values().map(|p| p.len()).sum();
    assert_eq!(mine + synced.len(), 4);
    assert_eq!(
        t.h.c.consumer_group(G).unwrap().state(),
        ConsumerGroupState::Stable
    );
    t.h.assert_replay_rebuilds();
    t.h.assert_invariants();

    // A classic member leaves: fenced, the group stays a consumer group.
    assert_eq!(t.leave(&classic[0]).members[0].error, Errors::None);
    let g = t.h.c.consumer_group(G).unwrap();
    assert_eq!(g.members.len(), 2);
    t.h.assert_replay_rebuilds();
}

#[test]
fn the_last_consumer_member_leaving_downgrades_the_group_to_classic() {
    let mut t = T::new(MigrationPolicy::Bidirectional);
    let (classic, generation) = t.classic_group();
    t.hb(join(G, "c", &["t"]));
    let epoch = t.h.c.consumer_group(G).unwrap().group_epoch;

    let mut leave = beat(G, "c", 0, None);
    leave.member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
    let resp = t.hb(leave);
    assert_eq!(resp.error, Errors::None);
    assert!(
        t.h.c.consumer_group(G).is_none(),
        "no consumer group any more"
    );
    let g = t.h.c.group(G).expect("a classic group again");
    assert_eq!(g.generation_id(), epoch);
    assert_eq!(g.num_members(), 2);
    assert_eq!(g.protocol_name(), Some("range"));
    // The downgrade starts a rebalance so the members rejoin through the classic protocol.
    assert_eq!(g.state(), GroupState::PreparingRebalance);
    // Written as Kafka does: consumer tombstones, then the classic GroupMetadata.
    assert!(matches!(
        t.last.last(),
        Some(GroupRecord::GroupMetadata { value: Some(_), .. })
    ));
    assert!(t.last.iter().any(|r| matches!(
        r,
        GroupRecord::Consumer {
            record: ConsumerRecord::GroupMetadata { epoch: None },
            ..
        }
    )));
    // Reloading the partition gives the classic group back, and no consumer group.
    let replayed = t.h.replayed();
    assert!(replayed.consumer_group(G).is_none());
    let rg = replayed.group(G).expect("replayed classic group");
    assert_eq!(rg.generation_id(), epoch);
    assert_eq!(rg.num_members(), 2);

    // The classic members rejoin and form the next generation.
    let _ = generation;
    let joins: Vec<RequestId> = classic.iter().map(|id| t.join(join_req(id))).collect();
    let rs: Vec<JoinGroupResponse> = joins.iter().map(|j| t.join_response(*j)).collect();
    assert!(rs.iter().all(|r| r.error == Errors::None));
    assert_eq!(rs[0].generation_id, epoch + 1);
    assert_eq!(
        t.h.c.group(G).unwrap().state(),
        GroupState::CompletingRebalance
    );
}

#[test]
fn migration_policy_decides_which_conversions_happen() {
    // Disabled: a consumer member cannot join a non-empty classic group.
    let mut t = T::new(MigrationPolicy::Disabled);
    t.classic_group();
    let resp = t.hb(join(G, "c", &["t"]));
    assert_eq!(resp.error, Errors::GroupIdNotFound);
    assert!(t.h.c.consumer_group(G).is_none());
    assert!(t.last.is_empty(), "nothing written");

    // Downgrade only: no upgrade either.
    let mut t = T::new(MigrationPolicy::Downgrade);
    t.classic_group();
    assert_eq!(t.hb(join(G, "c", &["t"])).error, Errors::GroupIdNotFound);

    // Upgrade only: the group stays a consumer group when the consumer member leaves.
    let mut t = T::new(MigrationPolicy::Upgrade);
    t.classic_group();
    assert_eq!(t.hb(join(G, "c", &["t"])).error, Errors::None);
    let mut leave = beat(G, "c", 0, None);
    leave.member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
    t.hb(leave);
    let g = t.h.c.consumer_group(G).expect("still a consumer group");
    assert_eq!(g.members.len(), 2);
    assert!(t.h.c.group(G).is_none());
    t.h.assert_replay_rebuilds();
}

#[test]
fn a_classic_member_that_does_not_rejoin_in_time_is_fenced() {
    let mut t = T::new(MigrationPolicy::Upgrade);
    let (classic, generation) = t.classic_group();
    t.hb(join(G, "c", &["t"]));
    // Told to rejoin, the first member keeps heartbeating instead; the second rejoins.
    assert_eq!(
        t.heartbeat(&classic[0], generation),
        Errors::RebalanceInProgress
    );
    let j = t.join(join_req(&classic[1]));
    let r = t.join_response(j);
    t.sync(&classic[1], r.generation_id, vec![]);
    for _ in 0..(REBALANCE / 5_000) {
        t.advance(5_000);
        t.heartbeat(&classic[1], r.generation_id);
        t.keep_c_alive();
        t.heartbeat(&classic[0], generation);
    }
    t.advance(5_000);
    let g = t.h.c.consumer_group(G).unwrap();
    assert!(
        g.member(&classic[0]).is_none(),
        "fenced at its rebalance timeout"
    );
    assert!(g.member(&classic[1]).is_some());
    t.h.assert_replay_rebuilds();
}

#[test]
fn a_classic_member_that_joined_but_never_syncs_is_fenced() {
    let mut t = T::new(MigrationPolicy::Upgrade);
    let (classic, _) = t.classic_group();
    t.hb(join(G, "c", &["t"]));
    let j = t.join(join_req(&classic[1]));
    assert_eq!(t.join_response(j).error, Errors::None);
    t.advance(REBALANCE as i64 + 1);
    assert!(t
        .h
        .c
        .consumer_group(G)
        .unwrap()
        .member(&classic[1])
        .is_none());
}

#[test]
fn a_classic_member_of_a_consumer_group_expires_on_its_own_session_timeout() {
    let mut t = T::new(MigrationPolicy::Upgrade);
    let (classic, _) = t.classic_group();
    t.hb(join(G, "c", &["t"]));
    // The classic session (10s) runs out long before the consumer one (45s).
    for _ in 0..3 {
        t.advance(4_000);
        t.keep_c_alive();
    }
    let g = t.h.c.consumer_group(G).unwrap();
    assert!(classic.iter().all(|id| g.member(id).is_none()));
    assert!(g.member("c").is_some());
}

#[test]
fn a_new_classic_member_can_join_a_consumer_group() {
    let mut t = T::new(MigrationPolicy::Upgrade);
    t.hb(join(G, "c", &["t"]));
    let j = t.join(join_req(""));
    let r = t.join_response(j);
    assert_eq!(r.error, Errors::None);
    let g = t.h.c.consumer_group(G).unwrap();
    assert!(g.member(&r.member_id).unwrap().uses_classic_protocol());
    let epoch = g.group_epoch;
    assert_eq!(r.generation_id, epoch);
    // Another protocol type, or no protocol in common with the classic members: refused.
    let mut other = join_req("");
    other.protocols[0].name = "roundrobin".into();
    let j = t.join(other);
    assert_eq!(t.join_response(j).error, Errors::InconsistentGroupProtocol);
    let mut other = join_req("");
    other.protocol_type = "connect".into();
    let j = t.join(other);
    assert_eq!(t.join_response(j).error, Errors::InconsistentGroupProtocol);
    // A consumer-protocol member is not a classic member.
    assert_eq!(t.heartbeat("c", epoch), Errors::UnknownMemberId);
    t.h.assert_replay_rebuilds();
}

#[test]
fn offset_fetch_v9_checks_the_member_and_its_epoch() {
    let mut t = T::new(MigrationPolicy::Bidirectional);
    let (classic, _) = t.classic_group();
    t.hb(join(G, "c", &["t"]));
    assert_eq!(
        t.commit(&classic[0], 1, 8),
        Errors::None,
        "classic member at its generation"
    );
    let g = t.h.c.consumer_group(G).unwrap();
    let epoch = g.member("c").unwrap().member_epoch;
    let classic_epoch = g.member(&classic[0]).unwrap().member_epoch;
    let fetch = |t: &T, member: Option<&str>, epoch: i32| {
        let req = OffsetFetchRequest {
            groups: vec![OffsetFetchGroup {
                group_id: G.into(),
                member_id: member.map(str::to_string),
                member_epoch: epoch,
                ..Default::default()
            }],
            require_stable: false,
        };
        let r = t.h.c.fetch_offsets(&req);
        let g = &r.groups[0];
        (
            g.error,
            g.topics.iter().map(|t| t.partitions.len()).sum::<usize>(),
        )
    };
    // The admin client (no member, no epoch) and the member at its epoch get the offsets.
    assert_eq!(fetch(&t, None, -1), (Errors::None, 1));
    assert_eq!(fetch(&t, Some("c"), epoch), (Errors::None, 1));
    assert_eq!(
        fetch(&t, Some(&classic[0]), classic_epoch),
        (Errors::None, 1)
    );
    // A stale epoch, an unknown member, or an epoch without a member: a group error, no offsets.
    assert_eq!(
        fetch(&t, Some("c"), epoch - 1),
        (Errors::StaleMemberEpoch, 0)
    );
    assert_eq!(
        fetch(&t, Some("c"), epoch + 1),
        (Errors::StaleMemberEpoch, 0)
    );
    assert_eq!(
        fetch(&t, Some("nobody"), epoch),
        (Errors::UnknownMemberId, 0)
    );
    assert_eq!(fetch(&t, None, epoch), (Errors::UnknownMemberId, 0));
    // A classic member's epoch is its generation.
    assert_eq!(
        fetch(&t, Some(&classic[0]), classic_epoch + 1),
        (Errors::IllegalGeneration, 0)
    );
}

#[test]
fn a_cooperative_classic_member_learns_what_to_revoke_from_its_sync() {
    let mut t = T::new(MigrationPolicy::Upgrade);
    let (classic, generation) = t.classic_group();
    t.hb(join(G, "c", &["t"]));
    let g = t.h.c.consumer_group(G).unwrap();
    let tid = topic_id("t");
    // A classic member whose target lost partitions it owns.
    let (id, owned) = classic
        .iter()
        .map(|id| (id.clone(), g.member(id).unwrap().assigned.clone()))
        .find(|(id, a)| g.target_of(id) != *a)
        .expect("a member gives something up");
    let owned_parts: Vec<i32> = owned[&tid].iter().copied().collect();
    let rejoin = |owned: &[i32]| {
        let mut req = join_req(&id);
        req.protocols[0].metadata = Subscription {
            topics: vec!["t".into()],
            owned_partitions: vec![josef_group::consumer_protocol::TopicPartitions {
                topic: "t".into(),
                partitions: owned.to_vec(),
            }],
            ..Default::default()
        }
        .encode(1);
        req
    };
    // It rejoins still owning everything: it must revoke first, at its current epoch.
    let j = t.join(rejoin(&owned_parts));
    let r = t.join_response(j);
    assert_eq!(r.error, Errors::None);
    assert_eq!(
        r.generation_id, generation,
        "epoch unchanged while revoking"
    );
    // Its sync succeeds with what it keeps.
    let s = t.sync(&id, r.generation_id, vec![]);
    assert_eq!(s.error, Errors::None);
    let kept: Vec<i32> = partitions_of(&s.assignment)
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    assert!(kept.len() < owned_parts.len());
    // Its heartbeat asks it to rejoin; having revoked, it reaches the new epoch.
    assert_eq!(t.heartbeat(&id, generation), Errors::RebalanceInProgress);
    let j = t.join(rejoin(&kept));
    let r = t.join_response(j);
    assert_eq!(r.generation_id, generation + 1);
    assert_eq!(t.sync(&id, r.generation_id, vec![]).error, Errors::None);
    assert_eq!(t.heartbeat(&id, generation + 1), Errors::None);
    t.h.assert_invariants();
    t.h.assert_replay_rebuilds();
}

#[test]
fn a_static_classic_member_of_a_consumer_group_is_replaced_by_its_restart() {
    let mut t = T::new(MigrationPolicy::Upgrade);
    t.hb(join(G, "c", &["t"]));
    let mut req = join_req("");
    req.group_instance_id = Some("i1".into());
    let j = t.join(req.clone());
    let first = t.join_response(j);
    assert_eq!(
        first.error,
        Errors::None,
        "a static member needs no MEMBER_ID_REQUIRED"
    );
    let s = t.sync(&first.member_id, first.generation_id, vec![]);
    assert_eq!(s.error, Errors::None);
    let epoch_before = t.h.c.consumer_group(G).unwrap().group_epoch;
    let target_before = t.h.c.consumer_group(G).unwrap().target_of(&first.member_id);
    // The restarted instance joins with no member id: it takes the old member's place and
    // target without a new group epoch.
    let j = t.join(req.clone());
    let second = t.join_response(j);
    assert_eq!(second.error, Errors::None);
    assert_ne!(second.member_id, first.member_id);
    let g = t.h.c.consumer_group(G).unwrap();
    assert!(g.member(&first.member_id).is_none());
    assert_eq!(g.target_of(&second.member_id), target_before);
    assert_eq!(g.group_epoch, epoch_before);
    // The old member id is fenced for that instance.
    let mut stale = req.clone();
    stale.member_id = first.member_id.clone();
    let j = t.join(stale);
    assert_eq!(t.join_response(j).error, Errors::FencedInstanceId);
    t.h.assert_replay_rebuilds();
    t.h.assert_invariants();
}

/// The scenario of Kafka's `validateOnlineDowngradeWithReplacedMemberId`: a classic group of two
/// members, upgraded by the static consumer-protocol member `c` (instance `ic`), plus the
/// consumer-protocol members `others`, all reconciled; then the instance `ic` restarts as a
/// classic consumer (JoinGroup with no member id). Returns the join's answer, the group epoch
/// before it and how many partitions `c` owned.
fn replace_static_consumer_member_by_a_classic_one(
    policy: MigrationPolicy,
    others: &[&str],
) -> (T, JoinGroupResponse, i32, usize) {
    replace_static_consumer_member(policy, others, true)
}

/// [`replace_static_consumer_member_by_a_classic_one`]; with `settle` false, `c` is replaced
/// while it still waits for partitions the classic members have not released.
fn replace_static_consumer_member(
    policy: MigrationPolicy,
    others: &[&str],
    settle: bool,
) -> (T, JoinGroupResponse, i32, usize) {
    let mut t = T::new(policy);
    let (classic, _) = t.classic_group();
    let mut req = join(G, "c", &["t"]);
    req.instance_id = Some("ic".into());
    assert_eq!(t.hb(req).error, Errors::None);
    if !settle {
        let epoch = t.h.c.consumer_group(G).unwrap().group_epoch;
        let mut restart = join_req("");
        restart.group_instance_id = Some("ic".into());
        let j = t.join(restart);
        let r = t.join_response(j);
        assert_eq!(r.error, Errors::None);
        return (t, r, epoch, 0);
    }
    for o in others {
        assert_eq!(t.hb(join(G, o, &["t"])).error, Errors::None);
    }
    for id in &classic {
        let j = t.join(join_req(id));
        let r = t.join_response(j);
        assert_eq!(r.error, Errors::None);
        assert_eq!(t.sync(id, r.generation_id, vec![]).error, Errors::None);
    }
    let consumers: Vec<&str> = std::iter::once("c").chain(others.iter().copied()).collect();
    for _ in 0..3 {
        for m in &consumers {
            let member = t.h.c.consumer_group(G).unwrap().member(m).unwrap().clone();
            let mut b = beat(G, m, member.member_epoch, Some(member.assigned.clone()));
            b.instance_id = member.instance_id.clone();
            assert_eq!(t.hb(b).error, Errors::None);
        }
    }
    let g = t.h.c.consumer_group(G).unwrap();
    assert_eq!(g.state(), ConsumerGroupState::Stable);
    let c_owned: usize = g
        .member("c")
        .unwrap()
        .assigned
        .values()
        .map(|p| p.len())
        .sum();
    assert!(c_owned > 0, "c owns partitions");
    let epoch = g.group_epoch;

    let mut restart = join_req("");
    restart.group_instance_id = Some("ic".into());
    let j = t.join(restart);
    let r = t.join_response(j);
    assert_eq!(r.error, Errors::None);
    assert_ne!(r.member_id, "c");
    (t, r, epoch, c_owned)
}

#[test]
fn a_static_classic_member_replacing_the_last_consumer_member_downgrades_the_group() {
    let (mut t, r, epoch, c_owned) =
        replace_static_consumer_member_by_a_classic_one(MigrationPolicy::Bidirectional, &[]);
    assert!(
        t.h.c.consumer_group(G).is_none(),
        "no consumer group any more"
    );
    let g = t.h.c.group(G).expect("a classic group again");
    assert_eq!(g.num_members(), 3);
    assert_eq!(g.generation_id(), epoch);
    assert_eq!(
        r.generation_id, epoch,
        "the join answers the classic generation"
    );
    assert_eq!(r.protocol_name.as_deref(), g.protocol_name());
    let m = g
        .member(&r.member_id)
        .expect("the new member is in the classic group");
    assert_eq!(m.group_instance_id.as_deref(), Some("ic"));
    // Every member owned its target: nothing to converge, so no rebalance (as Kafka).
    assert_eq!(g.state(), GroupState::Stable);
    // Written as Kafka does: the consumer group's tombstones name the new member, not `c`,
    // then the classic GroupMetadata.
    assert!(matches!(
        t.last.last(),
        Some(GroupRecord::GroupMetadata { value: Some(_), .. })
    ));
    assert!(t.last.iter().any(|rec| matches!(
        rec,
        GroupRecord::Consumer {
            record: ConsumerRecord::MemberMetadata { member_id, value: None },
            ..
        } if *member_id == r.member_id
    )));
    let replayed = t.h.replayed();
    assert!(replayed.consumer_group(G).is_none());
    let rg = replayed.group(G).expect("replayed classic group");
    assert_eq!(rg.generation_id(), epoch);
    assert_eq!(rg.num_members(), 3);
    assert_eq!(
        rg.member(&r.member_id).unwrap().assignment,
        t.h.c
            .group(G)
            .unwrap()
            .member(&r.member_id)
            .unwrap()
            .assignment
    );

    // The new member syncs at the classic generation and gets c's partitions; together the
    // three members own the four partitions once each.
    let mine = t.sync(&r.member_id, r.generation_id, vec![]);
    assert_eq!(mine.error, Errors::None);
    let mine = partitions_of(&mine.assignment);
    assert_eq!(
        mine.len(),
        c_owned,
        "the replacement takes over c's partitions"
    );
    let mut all: Vec<(String, i32)> =
        t.h.c
            .group(G)
            .unwrap()
            .members()
            .flat_map(|m| partitions_of(&m.assignment))
            .collect();
    all.sort();
    assert_eq!(
        all,
        (0..4).map(|p| ("t".to_string(), p)).collect::<Vec<_>>()
    );
    assert_eq!(t.heartbeat(&r.member_id, r.generation_id), Errors::None);
}

#[test]
fn a_static_classic_replacement_does_not_downgrade_without_the_policy_or_with_consumer_members_left(
) {
    // Upgrade only: the group stays a consumer group, the new member in c's place.
    let (t, r, _, _) =
        replace_static_consumer_member_by_a_classic_one(MigrationPolicy::Upgrade, &[]);
    assert!(t.h.c.group(G).is_none());
    let g = t.h.c.consumer_group(G).expect("still a consumer group");
    assert!(g.member(&r.member_id).unwrap().uses_classic_protocol());
    assert!(g.member("c").is_none());
    t.h.assert_replay_rebuilds();

    // Another consumer-protocol member is left: still a consumer group.
    let (t, r, _, _) =
        replace_static_consumer_member_by_a_classic_one(MigrationPolicy::Bidirectional, &["d"]);
    assert!(t.h.c.group(G).is_none());
    let g = t.h.c.consumer_group(G).expect("still a consumer group");
    assert_eq!(g.members.len(), 4);
    assert!(g.member(&r.member_id).is_some());
    t.h.assert_replay_rebuilds();
    t.h.assert_invariants();
}

#[test]
fn a_downgrade_by_replacement_rebalances_when_members_do_not_own_their_targets() {
    // `c` waits for partitions the classic members still own: the classic group starts a
    // rebalance so that they converge.
    let (t, r, epoch, _) =
        replace_static_consumer_member(MigrationPolicy::Bidirectional, &[], false);
    assert!(t.h.c.consumer_group(G).is_none());
    let g = t.h.c.group(G).expect("a classic group again");
    assert_eq!(g.num_members(), 3);
    assert_eq!(r.generation_id, epoch);
    assert_eq!(g.state(), GroupState::PreparingRebalance);
    let replayed = t.h.replayed();
    assert_eq!(replayed.group(G).unwrap().num_members(), 3);
}
