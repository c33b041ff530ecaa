//! Deterministic simulation of a consumer group against the coordinator with a fake clock.
//!
//! Simulated clients behave like Java/librdkafka consumers (join, MEMBER_ID_REQUIRED retry,
//! leader runs the range assignor, sync, heartbeat every 3 s, rejoin on REBALANCE_IN_PROGRESS,
//! commit offsets of their partitions). Faults: join storms, members that stop heartbeating,
//! graceful leaves, static members restarting, leaders leaving mid-rebalance, subscription
//! changes, coordinator restarts from the records written so far.
//!
//! Invariants checked after every step:
//! - no partition is held by two clients that are Stable in the group's current generation;
//! - after each completed rebalance (group Stable, every member synced in this generation)
//!   every subscribed partition has exactly one owner and every member has the same generation;
//! - an accepted commit came from a member of the current generation, and committed offsets
//!   are never lost (the coordinator always returns the last accepted commit, across restarts).
//!
//! At the end, faults stop and the group must converge.
//!
//! `SIM_SEED=n` runs one seed; `SIM_SEEDS=n` runs n seeds (default 24). The seed is printed on failure.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use common::*;
use josef_group::api::*;
use josef_group::assignor::leader_assign;
use josef_group::classic::GroupState;
use josef_group::consumer_protocol::{Assignment, Subscription};
use josef_group::{Errors, GroupConfig};

const G: &str = "sim";

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    NeedJoin,
    Joining,
    Syncing,
    Stable,
    Dead,
}

#[derive(Debug, Clone)]
struct Client {
    name: String,
    instance: Option<String>,
    member_id: String,
    generation: i32,
    phase: Phase,
    assignment: Vec<(String, i32)>,
    topics: Vec<String>,
    hung: bool,
    /// Heartbeats (background thread) but its poll loop is stuck: never rejoins.
    stuck: bool,
    next_heartbeat: i64,
    version: i16,
    pending: Option<RequestId>,
}

struct Sim {
    h: Harness,
    rng: Rng,
    clients: Vec<Client>,
    topics: BTreeMap<String, i32>,
    /// The last accepted commit per (topic, partition).
    committed: BTreeMap<(String, i32), i64>,
    next_position: i64,
    delivered: BTreeSet<RequestId>,
    completed_rebalances: usize,
    seen_generations: BTreeSet<i32>,
    /// How often each fault / event happened (to show the run is not vacuous).
    stats: BTreeMap<&'static str, usize>,
}

impl Sim {
    fn new(seed: u64) -> Self {
        let config = GroupConfig {
            offsets_retention_check_interval_ms: 60_000,
            ..GroupConfig::default()
        };
        Sim {
            h: Harness::with_config_seed(config, seed),
            rng: Rng(seed),
            clients: Vec::new(),
            topics: BTreeMap::from([("t".to_string(), 12), ("u".to_string(), 5)]),
            committed: BTreeMap::new(),
            next_position: 1,
            delivered: BTreeSet::new(),
            completed_rebalances: 0,
            seen_generations: BTreeSet::new(),
            stats: BTreeMap::new(),
        }
    }

    fn add_client(&mut self, instance: Option<String>) {
        let n = self.clients.len();
        let version = [3, 4, 5, 7, 9][self.rng.below(5) as usize];
        let version = if instance.is_some() {
            version.max(5)
        } else {
            version
        };
        self.clients.push(Client {
            name: format!("client-{n}"),
            instance,
            member_id: String::new(),
            generation: -1,
            phase: Phase::NeedJoin,
            assignment: Vec::new(),
            topics: vec!["t".into()],
            hung: false,
            stuck: false,
            next_heartbeat: 0,
            version,
            pending: None,
        });
    }

    fn active(&self, i: usize) -> bool {
        let c = &self.clients[i];
        c.phase != Phase::Dead && !c.hung
    }

    fn send_join(&mut self, i: usize) {
        let c = &self.clients[i];
        let sub = Subscription {
            topics: c.topics.clone(),
            ..Subscription::default()
        };
        let req = JoinGroupRequest {
            group_id: G.into(),
            // Static members get a long session so they can restart without a rebalance.
            session_timeout_ms: if c.instance.is_some() { 30_000 } else { 10_000 },
            rebalance_timeout_ms: 20_000,
            member_id: c.member_id.clone(),
            group_instance_id: c.instance.clone(),
            protocol_type: "consumer".into(),
            protocols: vec![JoinProtocol {
                name: "range".into(),
                metadata: sub.encode(1),
            }],
            reason: None,
        };
        let (version, name) = (c.version, c.name.clone());
        let id = self.h.join(version, &name, req);
        let c = &mut self.clients[i];
        c.pending = Some(id);
        c.phase = Phase::Joining;
    }

    fn send_sync(&mut self, i: usize, assignments: Vec<(String, Bytes)>) {
        let c = &self.clients[i];
        let req = SyncGroupRequest {
            group_id: G.into(),
            generation_id: c.generation,
            member_id: c.member_id.clone(),
            group_instance_id: c.instance.clone(),
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignments,
        };
        let id = self.h.sync(req);
        let c = &mut self.clients[i];
        c.pending = Some(id);
        c.phase = Phase::Syncing;
    }

    fn rejoin(&mut self, i: usize, reset_member_id: bool) {
        let c = &mut self.clients[i];
        if reset_member_id {
            c.member_id.clear();
            c.generation = -1;
        }
        c.assignment.clear();
        c.phase = Phase::NeedJoin;
        c.pending = None;
    }

    fn on_join(&mut self, i: usize, r: JoinGroupResponse) {
        match r.error {
            Errors::MemberIdRequired => {
                self.clients[i].member_id = r.member_id;
                self.rejoin(i, false);
            }
            Errors::None => {
                let c = &mut self.clients[i];
                c.member_id = r.member_id.clone();
                c.generation = r.generation_id;
                let assignments = if r.leader == r.member_id && !r.skip_assignment {
                    let members: Vec<(String, Option<String>, Bytes)> = r
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
                    assert_eq!(r.protocol_name.as_deref(), Some("range"));
                    leader_assign("range", &self.topics, &members, 1).expect("assignable")
                } else {
                    Vec::new()
                };
                self.send_sync(i, assignments);
            }
            Errors::UnknownMemberId | Errors::IllegalGeneration => self.rejoin(i, true),
            Errors::RebalanceInProgress
            | Errors::CoordinatorNotAvailable
            | Errors::NotCoordinator => self.rejoin(i, false),
            Errors::FencedInstanceId | Errors::GroupMaxSizeReached => {
                self.clients[i].phase = Phase::Dead
            }
            e => panic!("unexpected JoinGroup error {e:?} for {:?}", self.clients[i]),
        }
    }

    fn on_sync(&mut self, i: usize, r: SyncGroupResponse) {
        match r.error {
            Errors::None => {
                let (_, a) = Assignment::decode(&r.assignment).unwrap_or_default();
                let now = self.h.now;
                let c = &mut self.clients[i];
                c.assignment = a
                    .topic_partitions()
                    .map(|(t, p)| (t.to_string(), p))
                    .collect();
                c.phase = Phase::Stable;
                c.pending = None;
                c.next_heartbeat = now + 3000;
            }
            Errors::RebalanceInProgress | Errors::IllegalGeneration => self.rejoin(i, false),
            Errors::UnknownMemberId => self.rejoin(i, true),
            Errors::FencedInstanceId => self.clients[i].phase = Phase::Dead,
            e => panic!("unexpected SyncGroup error {e:?}"),
        }
    }

    /// Delivers responses and lets clients react until nothing changes.
    fn pump(&mut self) {
        loop {
            let mut progressed = false;
            let ready: Vec<(RequestId, GroupResponse)> = std::mem::take(&mut self.h.fresh)
                .into_iter()
                .filter(|id| !self.delivered.contains(id))
                .map(|id| (id, self.h.responses[&id].clone()))
                .collect();
            for (id, resp) in ready {
                self.delivered.insert(id);
                progressed = true;
                let Some(i) = self.clients.iter().position(|c| c.pending == Some(id)) else {
                    continue; // stale (superseded, or the client gave up on it)
                };
                if !self.active(i) {
                    continue;
                }
                match resp {
                    GroupResponse::Join(r) => self.on_join(i, r),
                    GroupResponse::Sync(r) => self.on_sync(i, r),
                }
            }
            for i in 0..self.clients.len() {
                if self.active(i)
                    && !self.clients[i].stuck
                    && self.clients[i].phase == Phase::NeedJoin
                {
                    self.send_join(i);
                    progressed = true;
                }
            }
            if !progressed {
                break;
            }
        }
    }

    fn heartbeats(&mut self) {
        for i in 0..self.clients.len() {
            let c = self.clients[i].clone();
            if !self.active(i) || c.next_heartbeat > self.h.now {
                continue;
            }
            if !matches!(c.phase, Phase::Stable | Phase::Syncing | Phase::Joining)
                || c.member_id.is_empty()
            {
                continue;
            }
            let req = HeartbeatRequest {
                group_id: G.into(),
                generation_id: c.generation,
                member_id: c.member_id.clone(),
                group_instance_id: c.instance.clone(),
            };
            let now = self.h.now;
            self.clients[i].next_heartbeat = now + 3000;
            if c.phase == Phase::Joining {
                continue; // a parked join keeps the session; Java clients do not heartbeat then
            }
            let r = self.h.c.heartbeat(now, req);
            let error = self.h.apply(r).error;
            if self.clients[i].stuck {
                if matches!(error, Errors::UnknownMemberId | Errors::FencedInstanceId) {
                    self.clients[i].phase = Phase::Dead; // kicked out; the process is gone for us
                    self.count("stuck member removed");
                }
                continue;
            }
            match error {
                Errors::None => {}
                Errors::RebalanceInProgress | Errors::IllegalGeneration => {
                    if self.clients[i].phase == Phase::Stable {
                        self.rejoin(i, false)
                    }
                }
                Errors::UnknownMemberId => self.rejoin(i, true),
                Errors::FencedInstanceId => self.clients[i].phase = Phase::Dead,
                e => panic!("unexpected Heartbeat error {e:?}"),
            }
        }
    }

    fn commit(&mut self, i: usize) {
        let c = self.clients[i].clone();
        if c.assignment.is_empty() {
            return;
        }
        let mut topics: Vec<OffsetCommitTopic> = Vec::new();
        let mut offsets = Vec::new();
        for (t, p) in &c.assignment {
            let offset = self.next_position;
            self.next_position += 1;
            offsets.push(((t.clone(), *p), offset));
            let part = OffsetCommitPartition {
                partition_index: *p,
                committed_offset: offset,
                committed_leader_epoch: -1,
                commit_timestamp: -1,
                committed_metadata: None,
            };
            match topics.iter_mut().find(|x| &x.name == t) {
                Some(x) => x.partitions.push(part),
                None => topics.push(OffsetCommitTopic {
                    name: t.clone(),
                    partitions: vec![part],
                }),
            }
        }
        let req = OffsetCommitRequest {
            group_id: G.into(),
            generation_id_or_member_epoch: c.generation,
            member_id: c.member_id.clone(),
            group_instance_id: c.instance.clone(),
            retention_time_ms: -1,
            topics,
        };
        let (group_generation, is_member) = self
            .h
            .c
            .group(G)
            .map(|g| (g.generation_id(), g.has_member(&c.member_id)))
            .unwrap_or((-1, false));
        let r = self.h.c.commit_offsets(self.h.now, &ctx(&c.name, 8), req);
        let resp = self.h.apply(r);
        let errors: Vec<Errors> = resp
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error))
            .collect();
        if errors.iter().all(|e| e.is_none()) {
            assert_eq!(
                c.generation, group_generation,
                "commit accepted from a stale generation"
            );
            assert!(is_member, "commit accepted from a non-member");
            for (tp, o) in offsets {
                self.committed.insert(tp, o);
            }
            self.count("commits accepted");
        } else {
            self.count("commits rejected");
            for e in errors {
                assert!(
                    matches!(
                        e,
                        Errors::IllegalGeneration
                            | Errors::UnknownMemberId
                            | Errors::RebalanceInProgress
                            | Errors::FencedInstanceId
                    ),
                    "unexpected commit error {e:?}"
                );
            }
        }
    }

    fn coordinator_restart(&mut self) {
        self.h.restart();
        // Parked requests died with the coordinator: clients see a disconnect.
        for i in 0..self.clients.len() {
            if self.clients[i].pending.is_some()
                && matches!(self.clients[i].phase, Phase::Joining | Phase::Syncing)
            {
                self.rejoin(i, false);
            }
        }
    }

    fn count(&mut self, what: &'static str) {
        *self.stats.entry(what).or_default() += 1;
    }

    fn fault(&mut self) {
        let roll = self.rng.below(100);
        let live: Vec<usize> = (0..self.clients.len())
            .filter(|i| self.active(*i))
            .collect();
        let pick = |rng: &mut Rng| live.get(rng.below(live.len() as u64) as usize).copied();
        match roll {
            0..=7 => {
                self.count("join storm");
                for _ in 0..(2 + self.rng.below(4)) {
                    self.add_client(None);
                }
            }
            8..=11 => {
                if let Some(i) = pick(&mut self.rng) {
                    self.clients[i].hung = true; // stops heartbeating (and everything else)
                    self.count("member hangs");
                }
            }
            12..=16 => {
                if let Some(i) = pick(&mut self.rng) {
                    let c = self.clients[i].clone();
                    if !c.member_id.is_empty() && c.instance.is_none() {
                        let r = self.h.c.leave_group(
                            self.h.now,
                            LeaveGroupRequest {
                                group_id: G.into(),
                                members: vec![LeavingMember {
                                    member_id: c.member_id.clone(),
                                    group_instance_id: None,
                                    reason: None,
                                }],
                            },
                        );
                        self.h.apply(r);
                        self.clients[i].phase = Phase::Dead;
                        self.count("member leaves");
                    }
                }
            }
            17..=21 => {
                // a static member restarts: the old process dies silently, a new one joins
                let statics: Vec<usize> = live
                    .iter()
                    .copied()
                    .filter(|i| self.clients[*i].instance.is_some())
                    .collect();
                if let Some(&i) = statics.get(self.rng.below(statics.len() as u64) as usize) {
                    let instance = self.clients[i].instance.clone();
                    self.clients[i].phase = Phase::Dead;
                    self.add_client(instance);
                    self.count("static member restarts");
                } else {
                    let n = self.clients.len();
                    self.add_client(Some(format!("instance-{n}")));
                }
            }
            26..=28 => {
                self.coordinator_restart();
                self.count("coordinator restarts");
            }
            29..=31 => {
                if let Some(i) = pick(&mut self.rng) {
                    if self.clients[i].phase == Phase::Stable {
                        let c = &mut self.clients[i];
                        c.topics = if c.topics.len() == 1 {
                            vec!["t".into(), "u".into()]
                        } else {
                            vec!["t".into()]
                        };
                        self.rejoin(i, false);
                        self.count("subscription changes");
                    }
                }
            }
            59..=62 => {
                if let Some(i) = pick(&mut self.rng) {
                    self.clients[i].stuck = true;
                    self.count("member stuck in poll");
                }
            }
            51..=58 => {
                // A hung, stuck or dead member commits with whatever generation it had.
                let zombies: Vec<usize> = (0..self.clients.len())
                    .filter(|i| {
                        let c = &self.clients[*i];
                        !c.member_id.is_empty() && (c.hung || c.stuck || c.phase == Phase::Dead)
                    })
                    .collect();
                if let Some(&i) = zombies.get(self.rng.below(zombies.len() as u64) as usize) {
                    self.count("zombie commits");
                    self.commit(i);
                }
            }
            32..=50 => {
                if let Some(i) = pick(&mut self.rng) {
                    if self.clients[i].phase == Phase::Stable {
                        self.commit(i);
                    }
                }
            }
            _ => {}
        }
    }

    fn leader_leaves_mid_rebalance(&mut self) {
        let live: Vec<usize> = (0..self.clients.len())
            .filter(|i| self.active(*i))
            .collect();
        if let Some(g) = self.h.c.group(G) {
            if matches!(
                g.state(),
                GroupState::PreparingRebalance | GroupState::CompletingRebalance
            ) {
                let leader = g.leader_id().unwrap_or_default().to_string();
                if let Some(i) = live
                    .iter()
                    .copied()
                    .find(|i| self.clients[*i].member_id == leader)
                {
                    let c = self.clients[i].clone();
                    let r = self.h.c.leave_group(
                        self.h.now,
                        LeaveGroupRequest {
                            group_id: G.into(),
                            members: vec![LeavingMember {
                                member_id: c.member_id.clone(),
                                group_instance_id: c.instance.clone(),
                                reason: None,
                            }],
                        },
                    );
                    self.h.apply(r);
                    self.clients[i].phase = Phase::Dead;
                    self.count("leader leaves mid-rebalance");
                }
            }
        }
    }

    fn check_invariants(&mut self) {
        let Some(g) = self.h.c.group(G) else { return };
        let generation = g.generation_id();
        // No partition held twice by clients Stable in the current generation.
        let mut owners: BTreeMap<(String, i32), &str> = BTreeMap::new();
        for c in self
            .clients
            .iter()
            .filter(|c| c.phase == Phase::Stable && c.generation == generation && !c.hung)
        {
            for tp in &c.assignment {
                if let Some(other) = owners.insert(tp.clone(), &c.name) {
                    panic!(
                        "{tp:?} owned by {other} and {} in generation {generation}",
                        c.name
                    );
                }
            }
        }
        // A completed rebalance: every member synced in this generation.
        if g.state() == GroupState::Stable && g.num_members() > 0 {
            let synced: Vec<&Client> = g
                .members()
                .filter_map(|m| {
                    self.clients.iter().find(|c| {
                        c.member_id == m.member_id
                            && c.phase == Phase::Stable
                            && c.generation == generation
                    })
                })
                .collect();
            if synced.len() == g.num_members() {
                // Every member synced in this generation: a completed rebalance.
                let subscribed: BTreeSet<&String> =
                    synced.iter().flat_map(|c| c.topics.iter()).collect();
                let mut seen = BTreeSet::new();
                for c in &synced {
                    for tp in &c.assignment {
                        assert!(seen.insert(tp.clone()), "{tp:?} assigned twice");
                    }
                }
                for t in subscribed {
                    for p in 0..self.topics[t] {
                        assert!(
                            seen.contains(&(t.clone(), p)),
                            "{t}-{p} has no owner in generation {generation}"
                        );
                    }
                }
                if self.seen_generations.insert(generation) {
                    self.completed_rebalances += 1;
                }
            }
        }
        // Committed offsets are never lost.
        for ((t, p), o) in &self.committed {
            let got = self.h.c.offsets().get(G, t, *p).map(|c| c.value.offset);
            assert_eq!(got, Some(*o), "committed offset of {t}-{p} lost");
        }
    }

    fn step(&mut self, faults: bool) {
        if faults && self.rng.chance(30) {
            self.fault();
        }
        if faults && self.rng.chance(15) {
            self.leader_leaves_mid_rebalance();
        }
        self.pump();
        self.heartbeats();
        self.pump();
        let dt = 100 + self.rng.below(1900) as i64;
        self.h.advance(dt);
        self.pump();
        self.check_invariants();
    }
}

fn run(seed: u64) -> (usize, BTreeMap<&'static str, usize>) {
    let mut sim = Sim::new(seed);
    for _ in 0..3 {
        sim.add_client(None);
    }
    sim.add_client(Some("instance-a".into()));
    sim.add_client(Some("instance-b".into()));
    for _ in 0..250 {
        sim.step(true);
    }
    // Faults stop; hung clients are gone for good. The group must converge.
    for c in sim.clients.iter_mut().filter(|c| c.hung || c.stuck) {
        c.phase = Phase::Dead;
    }
    if sim.clients.iter().all(|c| c.phase == Phase::Dead) {
        sim.add_client(None);
    }
    for _ in 0..120 {
        sim.step(false);
    }
    let g = sim.h.c.group(G).expect("group exists");
    assert_eq!(g.state(), GroupState::Stable, "group did not converge");
    let alive: Vec<&Client> = sim
        .clients
        .iter()
        .filter(|c| c.phase != Phase::Dead)
        .collect();
    assert_eq!(g.num_members(), alive.len(), "members vs live clients");
    for c in &alive {
        assert_eq!(c.phase, Phase::Stable, "{} did not settle", c.name);
        assert_eq!(c.generation, g.generation_id());
    }
    let removed = sim.h.log.len();
    let _ = removed;
    (sim.completed_rebalances, sim.stats)
}

#[test]
fn simulation_of_consumer_groups_under_faults() {
    let seeds: Vec<u64> = match std::env::var("SIM_SEED") {
        Ok(s) => vec![s.parse().expect("SIM_SEED")],
        Err(_) => {
            let n: u64 = std::env::var("SIM_SEEDS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(24);
            (1..=n).collect()
        }
    };
    let mut total_rebalances = 0;
    let mut stats: BTreeMap<&'static str, usize> = BTreeMap::new();
    for seed in seeds {
        let outcome = std::panic::catch_unwind(|| run(seed));
        match outcome {
            Ok((rebalances, s)) => {
                total_rebalances += rebalances;
                for (k, v) in s {
                    *stats.entry(k).or_default() += v;
                }
            }
            Err(e) => {
                eprintln!("simulation failed with seed {seed} (rerun: SIM_SEED={seed} cargo test -p josef-group --test simulation)");
                std::panic::resume_unwind(e);
            }
        }
    }
    eprintln!("completed rebalances checked: {total_rebalances}; events: {stats:?}");
    assert!(
        total_rebalances > 0,
        "the invariants after completed rebalances were never exercised"
    );
    if std::env::var("SIM_SEED").is_err() {
        for what in [
            "join storm",
            "member hangs",
            "member leaves",
            "static member restarts",
            "leader leaves mid-rebalance",
            "coordinator restarts",
            "subscription changes",
            "commits accepted",
            "commits rejected",
            "member stuck in poll",
        ] {
            assert!(
                stats.get(what).copied().unwrap_or(0) > 0,
                "no {what:?} happened: the run is too short"
            );
        }
    }
}
