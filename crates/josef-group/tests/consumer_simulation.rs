//! Deterministic simulation of consumer groups: members join (by names or regex), heartbeat as
//! well-behaved clients (reporting what they were given), leave, crash (go silent until their
//! session expires), while topics come and go and members commit offsets. After every step: no
//! partition owned by two members, member epochs ≤ group epoch, replay rebuilds the groups,
//! committed offsets never go back. At the end, with no more changes, the group converges.

mod consumer_common;

use std::collections::{BTreeMap, BTreeSet};

use consumer_common::*;
use josef_group::api::{OffsetCommitPartition, OffsetCommitRequest, OffsetCommitTopic};
use josef_group::consumer::{Assignment, ConsumerGroupState};
use josef_group::{Errors, GroupConfig};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Join(u8, bool),
    Beat(u8),
    Leave(u8),
    Crash(u8),
    Topics(u8),
    Commit(u8),
    Wait(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..5, any::<bool>()).prop_map(|(m, r)| Op::Join(m, r)),
        (0u8..5).prop_map(Op::Beat),
        (0u8..5).prop_map(Op::Beat),
        (0u8..5).prop_map(Op::Beat),
        (0u8..5).prop_map(Op::Leave),
        (0u8..5).prop_map(Op::Crash),
        (0u8..4).prop_map(Op::Topics),
        (0u8..5).prop_map(Op::Commit),
        (0u16..20_000).prop_map(Op::Wait),
    ]
}

/// What a client believes: its epoch and the partitions it owns.
#[derive(Clone)]
struct Client {
    epoch: i32,
    owned: Assignment,
    crashed: bool,
}

const TOPIC_SETS: [&[(&str, i32)]; 4] = [
    &[("t-a", 3), ("t-b", 2)],
    &[("t-a", 3), ("t-b", 2), ("t-c", 4)],
    &[("t-a", 3)],
    &[("t-a", 3), ("t-c", 4), ("x", 2)],
];

struct Sim {
    h: H,
    clients: BTreeMap<String, Client>,
    committed: BTreeMap<(String, i32), i64>,
    next_offset: i64,
}

impl Sim {
    fn beat(&mut self, id: &str) {
        let Some(c) = self.clients.get(id).cloned() else {
            return;
        };
        if c.crashed {
            return;
        }
        let r = self.h.hb(beat("g", id, c.epoch, Some(c.owned.clone())));
        match r.error {
            Errors::None => {
                let c = self.clients.get_mut(id).unwrap();
                c.epoch = r.member_epoch;
                if let Some(a) = r.assignment {
                    c.owned = a;
                }
            }
            Errors::UnknownMemberId | Errors::FencedMemberEpoch => {
                // The client gives everything up and rejoins.
                self.clients.remove(id);
            }
            e => panic!("unexpected heartbeat error {e:?}"),
        }
    }

    fn step(&mut self, op: &Op) {
        match op {
            Op::Join(m, regex) => {
                let id = format!("m{m}");
                if self.clients.contains_key(&id) {
                    return;
                }
                let mut req = join("g", &id, &["t-a", "t-b"]);
                if *regex {
                    req.subscribed_topic_names = None;
                    req.subscribed_topic_regex = Some("t-.*".into());
                }
                req.rebalance_timeout_ms = 30_000;
                let r = self.h.hb(req);
                assert_eq!(r.error, Errors::None);
                self.clients.insert(
                    id,
                    Client {
                        epoch: r.member_epoch,
                        owned: r.assignment.unwrap_or_default(),
                        crashed: false,
                    },
                );
            }
            Op::Beat(m) => self.beat(&format!("m{m}")),
            Op::Leave(m) => {
                let id = format!("m{m}");
                if self.clients.get(&id).is_some_and(|c| !c.crashed) {
                    let r = self.h.hb(beat("g", &id, -1, None));
                    assert_eq!(r.error, Errors::None);
                    self.clients.remove(&id);
                }
            }
            Op::Crash(m) => {
                if let Some(c) = self.clients.get_mut(&format!("m{m}")) {
                    c.crashed = true;
                }
            }
            Op::Topics(i) => {
                let set = TOPIC_SETS[*i as usize];
                self.h.topics(set);
            }
            Op::Commit(m) => {
                let id = format!("m{m}");
                let Some(c) = self.clients.get(&id).filter(|c| !c.crashed).cloned() else {
                    return;
                };
                let Some(g) = self.h.c.consumer_group("g") else {
                    return;
                };
                let names: BTreeMap<_, _> = g
                    .subscription_metadata
                    .values()
                    .map(|t| (t.id, t.name.clone()))
                    .collect();
                self.next_offset += 1;
                let topics: Vec<OffsetCommitTopic> = c
                    .owned
                    .iter()
                    .filter_map(|(t, ps)| {
                        names.get(t).map(|n| OffsetCommitTopic {
                            name: n.clone(),
                            partitions: ps
                                .iter()
                                .map(|p| OffsetCommitPartition {
                                    partition_index: *p,
                                    committed_offset: self.next_offset,
                                    committed_leader_epoch: -1,
                                    commit_timestamp: -1,
                                    committed_metadata: None,
                                })
                                .collect(),
                        })
                    })
                    .collect();
                let req = OffsetCommitRequest {
                    group_id: "g".into(),
                    generation_id_or_member_epoch: c.epoch,
                    member_id: id,
                    group_instance_id: None,
                    retention_time_ms: -1,
                    topics,
                };
                let r = self.h.c.commit_offsets(self.h.now, &ctx(9), req);
                let resp = self.h.apply(r);
                for t in &resp.topics {
                    for p in &t.partitions {
                        assert!(
                            matches!(
                                p.error,
                                Errors::None
                                    | Errors::StaleMemberEpoch
                                    | Errors::UnknownMemberId
                                    | Errors::UnknownTopicOrPartition
                            ),
                            "{:?}",
                            p.error
                        );
                    }
                }
            }
            Op::Wait(ms) => {
                // Live clients keep heartbeating while time passes.
                let mut left = *ms as i64;
                while left > 0 {
                    let dt = left.min(5_000);
                    self.h.advance(dt);
                    left -= dt;
                    let ids: Vec<String> = self.clients.keys().cloned().collect();
                    for id in ids {
                        self.beat(&id);
                    }
                }
            }
        }
    }

    fn check(&mut self) {
        self.h.assert_invariants();
        self.h.assert_replay_rebuilds();
        // A client never believes it owns a partition another member is still given.
        let mut seen = BTreeMap::new();
        for (id, c) in &self.clients {
            if c.crashed {
                continue;
            }
            for (t, ps) in &c.owned {
                for p in ps {
                    if let Some(other) = seen.insert((*t, *p), id.clone()) {
                        // Allowed only if the other has been fenced already.
                        let g = self.h.c.consumer_group("g").unwrap();
                        assert!(
                            g.member(&other).is_none() || g.member(id).is_none(),
                            "{t}-{p} owned by {other} and {id}"
                        );
                    }
                }
            }
        }
        if let Some(offsets) = self.h.c.offsets().group("g") {
            for (topic, parts) in offsets {
                for (p, c) in parts {
                    let key = (topic.clone(), *p);
                    let prev = self
                        .committed
                        .insert(key, c.value.offset)
                        .unwrap_or(i64::MIN);
                    assert!(c.value.offset >= prev, "committed offset went back");
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn consumer_groups_stay_safe_and_converge(ops in prop::collection::vec(op(), 1..60)) {
        let mut sim = Sim {
            h: H::new(GroupConfig::default(), TOPIC_SETS[0]),
            clients: BTreeMap::new(),
            committed: BTreeMap::new(),
            next_offset: 0,
        };
        for op in &ops {
            sim.step(op);
            sim.check();
        }
        // Crashed members expire; the others heartbeat until nothing changes.
        sim.step(&Op::Wait(50_000));
        for _ in 0..6 {
            let ids: Vec<String> = sim.clients.keys().cloned().collect();
            for id in ids { sim.beat(&id); }
            sim.check();
        }
        // The group holds exactly the live clients (a missing group made the checks below
        // vacuous whenever someone had joined).
        let live: BTreeSet<&String> = sim.clients.iter().filter(|(_, c)| !c.crashed).map(|(id, _)| id).collect();
        let Some(g) = sim.h.c.consumer_group("g") else {
            prop_assert!(live.is_empty(), "no group, yet {:?} are in it", live);
            return Ok(());
        };
        prop_assert_eq!(g.members.keys().collect::<BTreeSet<_>>(), live);
        prop_assert!(matches!(g.state(), ConsumerGroupState::Stable | ConsumerGroupState::Empty), "{:?}", g.state());
        for m in g.members.values() {
            prop_assert_eq!(&m.assigned, &g.target_of(&m.member_id));
            prop_assert_eq!(&sim.clients[&m.member_id].owned, &m.assigned);
        }
    }
}
