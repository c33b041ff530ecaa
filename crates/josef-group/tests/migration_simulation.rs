//! Deterministic simulation of one group whose clients speak either protocol: classic clients
//! (eager, like librdkafka's `range`: JoinGroup, SyncGroup, Heartbeat; the leader assigns while
//! the group is classic) and consumer-protocol clients (ConsumerGroupHeartbeat) join, heartbeat,
//! leave and crash in any order, so the group is upgraded to a consumer group and downgraded back
//! (`group.consumer.migration.policy=bidirectional`) over and over. After every step: no
//! partition owned by two clients that are both members, consumer-group invariants hold, and the
//! log's bytes rebuild the same groups. At the end, with no more changes, every live client is a
//! member, the group is stable and the clients own every partition exactly once.

mod consumer_common;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use consumer_common::*;
use josef_group::api::*;
use josef_group::assignor::leader_assign;
use josef_group::classic::GroupState;
use josef_group::consumer::api::ConsumerGroupHeartbeatRequest;
use josef_group::consumer::{ConsumerGroupState, LEAVE_GROUP_MEMBER_EPOCH};
use josef_group::consumer_protocol::{Assignment as ProtocolAssignment, Subscription};
use josef_group::{Errors, GroupConfig, GroupResult};
use proptest::prelude::*;

const G: &str = "g";
const PARTITIONS: i32 = 6;

#[derive(Debug, Clone)]
enum Op {
    Join(u8, bool),
    Step(u8),
    Leave(u8),
    Crash(u8),
    Wait(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..5, any::<bool>()).prop_map(|(m, classic)| Op::Join(m, classic)),
        (0u8..5).prop_map(Op::Step),
        (0u8..5).prop_map(Op::Step),
        (0u8..5).prop_map(Op::Step),
        (0u8..5).prop_map(Op::Leave),
        (0u8..5).prop_map(Op::Crash),
        (0u16..20_000).prop_map(Op::Wait),
    ]
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Idle,
    Joining(RequestId),
    Syncing(RequestId),
    Stable,
}

#[derive(Debug, Clone)]
struct Client {
    classic: bool,
    member_id: String,
    epoch: i32,
    owned: BTreeSet<i32>,
    crashed: bool,
    phase: Phase,
}

struct Sim {
    h: H,
    clients: BTreeMap<String, Client>,
    responses: BTreeMap<RequestId, GroupResponse>,
    next: RequestId,
}

fn owned_of(a: &josef_group::consumer::Assignment) -> BTreeSet<i32> {
    a.get(&topic_id("t")).cloned().unwrap_or_default()
}

fn join_req(member_id: &str) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: G.into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        member_id: member_id.into(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![JoinProtocol {
            name: "range".into(),
            metadata: Subscription {
                topics: vec!["t".into()],
                ..Default::default()
            }
            .encode(1),
        }],
        reason: None,
    }
}

impl Sim {
    fn take<R>(&mut self, r: GroupResult<R>) -> R {
        for c in &r.completions {
            self.responses.insert(c.request, c.response.clone());
        }
        self.h.apply(r)
    }

    fn id(&mut self) -> RequestId {
        self.next += 1;
        self.next
    }

    fn is_member(&self, member_id: &str) -> bool {
        self.h
            .c
            .consumer_group(G)
            .is_some_and(|g| g.member(member_id).is_some())
            || self.h.c.group(G).is_some_and(|g| g.has_member(member_id))
    }

    fn send_join(&mut self, name: &str) {
        let member_id = self.clients[name].member_id.clone();
        let id = self.id();
        let r = self
            .h
            .c
            .join_group(self.h.now, id, &ctx(5), join_req(&member_id));
        self.take(r);
        let c = self.clients.get_mut(name).unwrap();
        // Eager: everything is given up before rejoining.
        c.owned.clear();
        c.phase = Phase::Joining(id);
    }

    fn step_classic(&mut self, name: &str) {
        let c = self.clients[name].clone();
        match c.phase {
            Phase::Idle => self.send_join(name),
            Phase::Joining(id) => {
                let Some(GroupResponse::Join(r)) = self.responses.remove(&id) else {
                    return;
                };
                match r.error {
                    Errors::None => {
                        let assignments = if r.leader == r.member_id {
                            let members: Vec<(String, Option<String>, Bytes)> = r
                                .members
                                .iter()
                                .map(|m| (m.member_id.clone(), None, m.metadata.clone()))
                                .collect();
                            let topics = BTreeMap::from([("t".to_string(), PARTITIONS)]);
                            leader_assign("range", &topics, &members, 1).unwrap()
                        } else {
                            Vec::new()
                        };
                        let sid = self.id();
                        let req = SyncGroupRequest {
                            group_id: G.into(),
                            generation_id: r.generation_id,
                            member_id: r.member_id.clone(),
                            group_instance_id: None,
                            protocol_type: Some("consumer".into()),
                            protocol_name: r.protocol_name.clone(),
                            assignments,
                        };
                        let res = self.h.c.sync_group(self.h.now, sid, req);
                        self.take(res);
                        let c = self.clients.get_mut(name).unwrap();
                        c.member_id = r.member_id;
                        c.epoch = r.generation_id;
                        c.phase = Phase::Syncing(sid);
                    }
                    Errors::MemberIdRequired | Errors::RebalanceInProgress => {
                        self.clients.get_mut(name).unwrap().member_id = r.member_id;
                        self.send_join(name);
                    }
                    Errors::UnknownMemberId | Errors::IllegalGeneration => {
                        self.clients.get_mut(name).unwrap().member_id.clear();
                        self.send_join(name);
                    }
                    e => panic!("{name}: unexpected JoinGroup error {e:?}"),
                }
            }
            Phase::Syncing(id) => {
                let Some(GroupResponse::Sync(r)) = self.responses.remove(&id) else {
                    return;
                };
                match r.error {
                    Errors::None => {
                        let (_, a) = ProtocolAssignment::decode(&r.assignment).unwrap();
                        let c = self.clients.get_mut(name).unwrap();
                        c.owned = a.topic_partitions().map(|(_, p)| p).collect();
                        c.phase = Phase::Stable;
                    }
                    Errors::RebalanceInProgress | Errors::IllegalGeneration => self.send_join(name),
                    Errors::UnknownMemberId => {
                        self.clients.get_mut(name).unwrap().member_id.clear();
                        self.send_join(name);
                    }
                    e => panic!("{name}: unexpected SyncGroup error {e:?}"),
                }
            }
            Phase::Stable => {
                let req = HeartbeatRequest {
                    group_id: G.into(),
                    generation_id: c.epoch,
                    member_id: c.member_id.clone(),
                    group_instance_id: None,
                };
                let r = self.h.c.heartbeat(self.h.now, req);
                match self.take(r).error {
                    Errors::None => {}
                    Errors::RebalanceInProgress | Errors::IllegalGeneration => self.send_join(name),
                    Errors::UnknownMemberId => {
                        self.clients.get_mut(name).unwrap().member_id.clear();
                        self.send_join(name);
                    }
                    e => panic!("{name}: unexpected Heartbeat error {e:?}"),
                }
            }
        }
    }

    fn step_consumer(&mut self, name: &str) {
        let c = self.clients[name].clone();
        let owned = c
            .owned
            .iter()
            .map(|p| (topic_id("t"), BTreeSet::from([*p])))
            .fold(josef_group::consumer::Assignment::new(), |mut a, (t, p)| {
                a.entry(t).or_default().extend(p);
                a
            });
        let req = if c.epoch == 0 {
            join(G, &c.member_id, &["t"])
        } else {
            // A real client sends -1 for a rebalance timeout that did not change.
            ConsumerGroupHeartbeatRequest {
                rebalance_timeout_ms: -1,
                ..beat(G, &c.member_id, c.epoch, Some(owned))
            }
        };
        let r = self.h.c.consumer_group_heartbeat(self.h.now, &ctx(1), req);
        let r = self.take(r);
        match r.error {
            Errors::None => {
                let c = self.clients.get_mut(name).unwrap();
                c.epoch = r.member_epoch;
                if let Some(a) = r.assignment {
                    c.owned = owned_of(&a);
                }
            }
            Errors::UnknownMemberId | Errors::FencedMemberEpoch => {
                let c = self.clients.get_mut(name).unwrap();
                c.epoch = 0;
                c.owned.clear();
            }
            // Fenced, and the group went back to the classic protocol meanwhile.
            Errors::GroupIdNotFound if c.epoch != 0 && !self.is_member(&c.member_id) => {
                // The client gives everything up and rejoins.
                let c = self.clients.get_mut(name).unwrap();
                c.epoch = 0;
                c.owned.clear();
            }
            e => panic!("{name}: unexpected ConsumerGroupHeartbeat error {e:?}"),
        }
    }

    fn step_client(&mut self, name: &str) {
        match self.clients.get(name) {
            Some(c) if !c.crashed && c.classic => self.step_classic(name),
            Some(c) if !c.crashed => self.step_consumer(name),
            _ => {}
        }
    }

    fn step(&mut self, op: &Op) {
        match op {
            Op::Join(m, classic) => {
                let name = format!("m{m}");
                if self.clients.contains_key(&name) {
                    return;
                }
                self.clients.insert(
                    name.clone(),
                    Client {
                        classic: *classic,
                        member_id: if *classic {
                            String::new()
                        } else {
                            name.clone()
                        },
                        epoch: 0,
                        owned: BTreeSet::new(),
                        crashed: false,
                        phase: Phase::Idle,
                    },
                );
                self.step_client(&name);
            }
            Op::Step(m) => self.step_client(&format!("m{m}")),
            Op::Leave(m) => {
                let name = format!("m{m}");
                let Some(c) = self.clients.get(&name).filter(|c| !c.crashed).cloned() else {
                    return;
                };
                if c.classic {
                    if !c.member_id.is_empty() {
                        let req = LeaveGroupRequest {
                            group_id: G.into(),
                            members: vec![LeavingMember {
                                member_id: c.member_id.clone(),
                                group_instance_id: None,
                                reason: None,
                            }],
                        };
                        let r = self.h.c.leave_group(self.h.now, req);
                        self.take(r);
                    }
                } else if c.epoch != 0 {
                    let mut req = beat(G, &c.member_id, LEAVE_GROUP_MEMBER_EPOCH, None);
                    req.member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
                    let r = self.h.c.consumer_group_heartbeat(self.h.now, &ctx(1), req);
                    self.take(r);
                }
                self.clients.remove(&name);
            }
            Op::Crash(m) => {
                if let Some(c) = self.clients.get_mut(&format!("m{m}")) {
                    c.crashed = true;
                }
            }
            Op::Wait(ms) => {
                // Live clients keep going while time passes.
                let mut left = *ms as i64;
                while left > 0 {
                    let dt = left.min(2_000);
                    self.h.now += dt;
                    while let Some(r) = self.h.c.fire_next_due(self.h.now) {
                        self.take(r);
                    }
                    left -= dt;
                    let names: Vec<String> = self.clients.keys().cloned().collect();
                    for n in names {
                        self.step_client(&n);
                    }
                }
            }
        }
    }

    fn check(&self) {
        self.h.assert_invariants();
        self.h.assert_replay_rebuilds();
        let replayed = self.h.replayed();
        assert_eq!(
            replayed.group(G).is_some(),
            self.h.c.group(G).is_some(),
            "replay rebuilds the classic group"
        );
        assert!(
            self.h.c.group(G).is_none() || self.h.c.consumer_group(G).is_none(),
            "a group has one type"
        );
        // No partition owned by two clients that the coordinator both counts as members.
        let mut seen: BTreeMap<i32, &str> = BTreeMap::new();
        for (name, c) in &self.clients {
            if c.crashed || !self.is_member(&c.member_id) {
                continue;
            }
            for p in &c.owned {
                if let Some(other) = seen.insert(*p, name) {
                    panic!("partition {p} owned by {other} and {name}");
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn groups_migrating_between_protocols_stay_safe_and_converge(ops in prop::collection::vec(op(), 1..60)) {
        let mut sim = Sim {
            h: H::new(GroupConfig::default(), &[("t", PARTITIONS)]),
            clients: BTreeMap::new(),
            responses: BTreeMap::new(),
            next: 0,
        };
        for op in &ops {
            sim.step(op);
            sim.check();
        }
        // Crashed members expire; the others carry on until nothing changes.
        sim.step(&Op::Wait(60_000));
        sim.check();
        let live: BTreeSet<String> = sim.clients.iter().filter(|(_, c)| !c.crashed).map(|(n, _)| n.clone()).collect();
        if live.is_empty() {
            return Ok(());
        }
        let ids: BTreeSet<String> = live.iter().map(|n| sim.clients[n].member_id.clone()).collect();
        if let Some(g) = sim.h.c.consumer_group(G) {
            prop_assert_eq!(g.members.keys().cloned().collect::<BTreeSet<_>>(), ids);
            prop_assert_eq!(g.state(), ConsumerGroupState::Stable, "{:#?} {:#?}", g, sim.clients);
        } else {
            let g = sim.h.c.group(G).expect("a group");
            prop_assert_eq!(g.members().map(|m| m.member_id.clone()).collect::<BTreeSet<_>>(), ids);
            prop_assert_eq!(g.state(), GroupState::Stable);
        }
        let mut all = Vec::new();
        for n in &live {
            all.extend(sim.clients[n].owned.iter().copied());
        }
        all.sort();
        prop_assert_eq!(all, (0..PARTITIONS).collect::<Vec<_>>(), "every partition owned once");
    }
}
