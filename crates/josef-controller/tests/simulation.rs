//! Deterministic simulation of the controller with a fake clock, a simulated quorum and simulated
//! brokers, checking the invariants of C14 after every step, over many seeds.
//!
//! * **Quorum**: one write in flight (the driver serializes writes); its batch commits after a
//!   random delay, is appended to the committed log and replayed, and only then is the response
//!   delivered. A **failover** drops the write in flight (its request is answered NOT_CONTROLLER,
//!   it never commits), leaves the cluster without an active controller for a while (requests get
//!   NOT_CONTROLLER from a standby), then builds a new `Controller` by replaying the committed log
//!   and activates it with the next epoch.
//! * **Brokers**: register (new incarnation per process start), heartbeat, follow the committed log
//!   at their own pace into their own josef-metadata image, crash, lose heartbeats for a while,
//!   restart, shut down in a controlled way (heartbeat `want_shut_down`, or the ControlledShutdown
//!   API), and as leaders propose ISR shrinks and expansions with AlterPartition.
//! * **Admin**: creates, deletes and grows topics, reassigns and cancels, elects preferred (and
//!   sometimes unclean) leaders.
//!
//! Checked after every step: leader ∈ ISR ⊆ replicas (or leader −1), ISR never empty and
//! duplicate-free; leader and partition epochs never decrease; one leader per (partition, leader
//! epoch); only active brokers lead; ISR members other than a lone last one are active; broker
//! epochs only grow; the controller's own partition state equals its josef-metadata image; each
//! broker's image equals the controller's once it has applied the whole log; a new controller's
//! image equals the old one's. At the end, with every broker up and quiet, every partition has a
//! leader and every broker is unfenced.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use josef_controller::{Controller, ControllerConfig, MetadataRecord, WriteContext, NO_LEADER};
use josef_metadata::{MetadataDelta, MetadataImage, MetadataProvenance};
use josef_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use josef_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use josef_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, Uuid};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const CLUSTER_ID: &str = "sim-cluster";
const BROKERS: i32 = 5;
const SESSION_TIMEOUT_MS: i64 = 3000;
const HEARTBEAT_INTERVAL_MS: i64 = 500;
const TOPIC_NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

/// Who waits for the answer of the write in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Requester {
    Broker(i32),
    Admin,
    Tick,
}

/// The answers the simulation acts on.
#[derive(Debug, Clone)]
enum Reply {
    Registration(BrokerRegistrationResponse),
    /// The answer, and whether the broker was in controlled shutdown (and unfenced) when asked.
    Heartbeat(BrokerHeartbeatResponse, bool),
    ControlledShutdown(ControlledShutdownResponse),
    Other,
}

struct Pending {
    batch: Vec<MetadataRecord>,
    commit_at: i64,
    requester: Requester,
    reply: Reply,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Process {
    Running,
    Stopped,
}

struct SimBroker {
    id: i32,
    process: Process,
    incarnation: u128,
    /// Broker epoch of the current process's registration.
    epoch: Option<i64>,
    in_flight: bool,
    next_heartbeat_ms: i64,
    /// Heartbeats are lost until then.
    heartbeat_loss_until: i64,
    shutting_down: bool,
    /// The broker's own image and how many committed batches it holds.
    image: MetadataImage,
    applied: usize,
    epochs_seen: Vec<i64>,
    /// Log length at which its image was last compared with the controller's.
    compared_at: usize,
}

struct Sim {
    rng: StdRng,
    now: i64,
    config: ControllerConfig,
    /// The committed log: (offset, batch); offsets are 1, 2, 3, ...
    log: Vec<(u64, Vec<MetadataRecord>)>,
    controller: Controller,
    controller_epoch: i32,
    /// No active controller until then (after a failover).
    inactive_until: Option<i64>,
    pending: Option<Pending>,
    brokers: Vec<SimBroker>,
    next_incarnation: u128,
    last_tick_ms: i64,
    // Invariant history.
    leader_epochs: BTreeMap<(Uuid, i32), (i32, i32)>,
    leader_of_epoch: BTreeMap<(Uuid, i32, i32), i32>,
    broker_epochs: BTreeMap<i32, i64>,
    stats: Stats,
}

#[derive(Default, Debug)]
struct Stats {
    commits: usize,
    failovers: usize,
    lost_writes: usize,
    crashes: usize,
    shutdowns: usize,
    fenced_by_tick: usize,
    alter_partition_ok: usize,
    shutdowns_completed: usize,
    reassignments_completed: usize,
    unclean_elections: usize,
}

fn prov(offset: u64) -> MetadataProvenance {
    MetadataProvenance {
        last_offset: offset,
        last_epoch: 0,
    }
}

impl Sim {
    fn new(seed: u64) -> Self {
        let config = ControllerConfig {
            node_id: 3000,
            broker_session_timeout_ms: SESSION_TIMEOUT_MS,
            default_replication_factor: 2,
            num_partitions: 2,
            leader_imbalance_check_interval_ms: 10_000,
            seed,
            ..Default::default()
        };
        let mut sim = Sim {
            rng: StdRng::seed_from_u64(seed),
            now: 0,
            controller: Controller::new(config.clone()),
            config,
            log: Vec::new(),
            controller_epoch: 0,
            inactive_until: Some(0),
            pending: None,
            brokers: Vec::new(),
            next_incarnation: 1,
            last_tick_ms: 0,
            leader_epochs: BTreeMap::new(),
            leader_of_epoch: BTreeMap::new(),
            broker_epochs: BTreeMap::new(),
            stats: Stats::default(),
        };
        for id in 1..=BROKERS {
            let incarnation = sim.new_incarnation();
            sim.brokers.push(SimBroker {
                id,
                process: Process::Running,
                incarnation,
                epoch: None,
                in_flight: false,
                next_heartbeat_ms: 0,
                heartbeat_loss_until: 0,
                shutting_down: false,
                image: MetadataImage::empty(),
                applied: 0,
                epochs_seen: Vec::new(),
                compared_at: 0,
            });
        }
        sim
    }

    fn new_incarnation(&mut self) -> u128 {
        self.next_incarnation += 1;
        self.next_incarnation
    }

    fn ctx(&self) -> WriteContext {
        WriteContext {
            now_ms: self.now,
            next_offset: self.log.len() as u64 + 1,
        }
    }

    fn broker(&mut self, id: i32) -> &mut SimBroker {
        &mut self.brokers[(id - 1) as usize]
    }

    /// Hands a handler's result to the quorum: an empty batch is answered at once.
    fn submit(&mut self, requester: Requester, records: Vec<MetadataRecord>, reply: Reply) {
        if records.is_empty() {
            self.deliver(requester, reply);
        } else {
            let delay = self.rng.gen_range(1..150);
            self.pending = Some(Pending {
                batch: records,
                commit_at: self.now + delay,
                requester,
                reply,
            });
        }
    }

    fn maybe_commit(&mut self) {
        let due = self
            .pending
            .as_ref()
            .is_some_and(|p| p.commit_at <= self.now);
        if !due {
            return;
        }
        let Some(p) = self.pending.take() else { return };
        let offset = self.log.len() as u64 + 1;
        for r in &p.batch {
            self.controller
                .replay(offset, r)
                .unwrap_or_else(|e| panic!("replay of {r:?} at {offset}: {e}"));
        }
        for r in &p.batch {
            if let MetadataRecord::PartitionChange(c) = r {
                if c.removing_replicas.as_ref().is_some_and(|r| r.is_empty())
                    && c.adding_replicas.as_ref().is_some_and(|r| r.is_empty())
                    && c.replicas.is_some()
                {
                    self.stats.reassignments_completed += 1;
                }
                if c.leader_recovery_state == 1 {
                    self.stats.unclean_elections += 1;
                }
            }
        }
        self.log.push((offset, p.batch));
        self.stats.commits += 1;
        self.deliver(p.requester, p.reply);
    }

    fn failover(&mut self) {
        self.stats.failovers += 1;
        let old_image = self.controller.image();
        self.controller.deactivate();
        if let Some(p) = self.pending.take() {
            // Never committed: the requester hears NOT_CONTROLLER (or nothing) and retries.
            self.stats.lost_writes += 1;
            self.fail_request(p.requester);
        }
        let mut c = Controller::new(self.config.clone());
        for (o, batch) in &self.log {
            for r in batch {
                c.replay(*o, r).unwrap();
            }
        }
        assert_eq!(
            c.image(),
            old_image,
            "a new controller replays to the same image"
        );
        self.controller = c;
        self.inactive_until = Some(self.now + self.rng.gen_range(50..1500));
    }

    fn maybe_activate(&mut self) {
        if self.inactive_until.is_some_and(|t| t <= self.now) && self.pending.is_none() {
            self.inactive_until = None;
            self.controller_epoch += 1;
            let r = self
                .controller
                .activate(self.ctx(), self.controller_epoch, CLUSTER_ID.into());
            assert!(self.controller.is_active());
            self.submit(Requester::Tick, r.records, Reply::Other);
        }
    }

    fn fail_request(&mut self, requester: Requester) {
        if let Requester::Broker(id) = requester {
            let b = self.broker(id);
            b.in_flight = false;
        }
    }

    fn deliver(&mut self, requester: Requester, reply: Reply) {
        let Requester::Broker(id) = requester else {
            return;
        };
        if let Reply::Heartbeat(r, true) = &reply {
            if r.error_code == 0 && r.should_shut_down {
                self.check_shutdown_offset(id);
            }
        }
        let now = self.now;
        let incarnation = self.new_incarnation();
        let b = self.broker(id);
        b.in_flight = false;
        if b.process == Process::Stopped {
            return;
        }
        match reply {
            Reply::Registration(r) => {
                if r.error_code == 0 {
                    if let Some(&last) = b.epochs_seen.last() {
                        assert!(r.broker_epoch >= last, "broker {id}: epoch went back");
                    }
                    b.epochs_seen.push(r.broker_epoch);
                    b.epoch = Some(r.broker_epoch);
                    b.next_heartbeat_ms = now;
                } else {
                    b.next_heartbeat_ms = now + HEARTBEAT_INTERVAL_MS;
                }
            }
            Reply::Heartbeat(r, _) => {
                if r.error_code == ErrorCode::StaleBrokerEpoch.code() {
                    // The registration it holds is gone: start over as a new incarnation.
                    b.epoch = None;
                    b.incarnation = incarnation;
                    b.shutting_down = false;
                } else if r.error_code == 0 && r.should_shut_down && b.shutting_down {
                    b.process = Process::Stopped;
                    self.stats.shutdowns_completed += 1;
                }
            }
            Reply::ControlledShutdown(r) => {
                if r.error_code == 0 && r.remaining_partitions.is_empty() {
                    b.process = Process::Stopped;
                    self.stats.shutdowns_completed += 1;
                }
            }
            Reply::Other => {}
        }
    }

    // ---- events ----

    fn broker_event(&mut self, id: i32) -> bool {
        let now = self.now;
        let b = &self.brokers[(id - 1) as usize];
        if b.process != Process::Running || b.in_flight || b.next_heartbeat_ms > now {
            return false;
        }
        let ctx = self.ctx();
        match b.epoch {
            None => {
                let req = BrokerRegistrationRequest {
                    broker_id: id,
                    cluster_id: CLUSTER_ID.into(),
                    incarnation_id: Uuid::from_u128(b.incarnation),
                    rack: Some(format!("rack-{}", id % 3).into()),
                    ..Default::default()
                };
                let r = self.controller.register_broker(ctx, &req);
                let b = self.broker(id);
                b.in_flight = true;
                b.next_heartbeat_ms = now + HEARTBEAT_INTERVAL_MS;
                self.submit(
                    Requester::Broker(id),
                    r.records,
                    Reply::Registration(r.response),
                );
            }
            Some(epoch) => {
                let lost = b.heartbeat_loss_until > now;
                let req = BrokerHeartbeatRequest {
                    broker_id: id,
                    broker_epoch: epoch,
                    current_metadata_offset: b.applied as i64,
                    want_fence: false,
                    want_shut_down: b.shutting_down,
                    ..Default::default()
                };
                let b = self.broker(id);
                b.next_heartbeat_ms = now + HEARTBEAT_INTERVAL_MS;
                if lost {
                    return true;
                }
                let use_api_7 = b.shutting_down && self.rng.gen_bool(0.2);
                let b = self.broker(id);
                b.in_flight = true;
                if use_api_7 {
                    let req = ControlledShutdownRequest {
                        broker_id: id,
                        broker_epoch: epoch,
                        ..Default::default()
                    };
                    let r = self.controller.controlled_shutdown(ctx, &req);
                    self.submit(
                        Requester::Broker(id),
                        r.records,
                        Reply::ControlledShutdown(r.response),
                    );
                } else {
                    let in_cs = self
                        .controller
                        .broker(id)
                        .is_some_and(|b| b.in_controlled_shutdown && !b.fenced);
                    let r = self.controller.broker_heartbeat(ctx, &req);
                    let reply = Reply::Heartbeat(r.response, in_cs);
                    self.submit(Requester::Broker(id), r.records, reply);
                }
            }
        }
        true
    }

    /// A leader proposes an ISR change from what its own image says.
    fn alter_partition_event(&mut self) -> bool {
        let candidates: Vec<i32> = self
            .brokers
            .iter()
            .filter(|b| b.process == Process::Running && !b.in_flight && b.epoch.is_some())
            .map(|b| b.id)
            .collect();
        let Some(&id) = candidates.choose(&mut self.rng) else {
            return false;
        };
        let b = &self.brokers[(id - 1) as usize];
        let epoch = b.epoch.unwrap_or(-1);
        let image = b.image.clone();
        let mut led = Vec::new();
        for t in image.topics() {
            for (&i, p) in &t.partitions {
                if p.leader == id {
                    led.push((t.id, i, p.clone()));
                }
            }
        }
        let Some((topic_id, index, p)) = led.choose(&mut self.rng).cloned() else {
            return false;
        };
        let running: BTreeSet<i32> = self
            .brokers
            .iter()
            .filter(|b| b.process == Process::Running && b.epoch.is_some())
            .map(|b| b.id)
            .collect();
        let mut isr = p.isr.clone();
        let outside: Vec<i32> = p
            .replicas
            .iter()
            .copied()
            .filter(|r| !isr.contains(r) && running.contains(r))
            .collect();
        let dead: Vec<i32> = isr
            .iter()
            .copied()
            .filter(|&r| r != id && !running.contains(&r))
            .collect();
        if let Some(&r) = dead.choose(&mut self.rng) {
            isr.retain(|&x| x != r); // a follower stopped fetching
        } else if let Some(&r) = outside.choose(&mut self.rng) {
            isr.push(r); // a follower caught up
        } else if isr.len() > 1 && self.rng.gen_bool(0.3) {
            let r = *isr.iter().filter(|&&x| x != id).collect::<Vec<_>>()[0];
            isr.retain(|&x| x != r); // a slow follower
        } else {
            return false;
        }
        let members: Vec<(i32, i64)> = isr
            .iter()
            .map(|&r| (r, image.broker(r).map_or(-1, |b| b.epoch)))
            .collect();
        let req = common::alter_partition_request(
            id,
            epoch,
            topic_id,
            index,
            p.leader_epoch,
            p.partition_epoch,
            &members,
            0,
        );
        let r = self.controller.alter_partition(self.ctx(), &req, 3);
        if r.response.error_code == 0
            && r.response.topics[0].partitions[0].error_code == 0
            && !r.records.is_empty()
        {
            self.stats.alter_partition_ok += 1;
        }
        self.broker(id).in_flight = true;
        self.submit(Requester::Broker(id), r.records, Reply::Other);
        true
    }

    fn admin_event(&mut self) {
        let ctx = self.ctx();
        let names: Vec<String> = self.controller.topics().map(|t| t.name.clone()).collect();
        let roll = self.rng.gen_range(0..100);
        let (records, _) = match roll {
            0..=29 => {
                let name = *TOPIC_NAMES.choose(&mut self.rng).unwrap();
                let unclean = self.rng.gen_bool(0.2);
                let req = CreateTopicsRequest {
                    topics: vec![CreatableTopic {
                        name: name.into(),
                        num_partitions: self.rng.gen_range(1..4),
                        replication_factor: self.rng.gen_range(1..4),
                        configs: if unclean {
                            vec![CreatableTopicConfig {
                                name: "unclean.leader.election.enable".into(),
                                value: Some("true".into()),
                                ..Default::default()
                            }]
                        } else {
                            Vec::new()
                        },
                        ..Default::default()
                    }],
                    ..Default::default()
                };
                let r = self.controller.create_topics(ctx, &req, 7);
                (r.records, ())
            }
            30..=37 if !names.is_empty() => {
                let name = names.choose(&mut self.rng).unwrap().clone();
                let req = DeleteTopicsRequest {
                    topic_names: vec![name.into()],
                    ..Default::default()
                };
                (self.controller.delete_topics(ctx, &req, 5).records, ())
            }
            38..=47 if !names.is_empty() => {
                let name = names.choose(&mut self.rng).unwrap().clone();
                let count = self
                    .controller
                    .topic(&name)
                    .map_or(0, |t| t.partitions.len()) as i32;
                let req = CreatePartitionsRequest {
                    topics: vec![CreatePartitionsTopic {
                        name: name.into(),
                        count: count + 1,
                        assignments: None,
                        ..Default::default()
                    }],
                    ..Default::default()
                };
                (self.controller.create_partitions(ctx, &req).records, ())
            }
            48..=74 if !names.is_empty() => {
                let name = names.choose(&mut self.rng).unwrap().clone();
                let t = self.controller.topic(&name).unwrap();
                let index = *t
                    .partitions
                    .keys()
                    .collect::<Vec<_>>()
                    .choose(&mut self.rng)
                    .unwrap();
                let p = &t.partitions[index];
                let cancel = p.is_reassigning() && self.rng.gen_bool(0.5);
                let replicas = if cancel {
                    None
                } else {
                    let rf = (p.replicas.len() - p.removing_replicas.len()).max(1);
                    let mut all: Vec<i32> = (1..=BROKERS).collect();
                    all.shuffle(&mut self.rng);
                    Some(all[..rf].to_vec().into())
                };
                let req = AlterPartitionReassignmentsRequest {
                    topics: vec![ReassignableTopic {
                        name: name.into(),
                        partitions: vec![ReassignablePartition {
                            partition_index: *index,
                            replicas,
                            ..Default::default()
                        }],
                        ..Default::default()
                    }],
                    ..Default::default()
                };
                let r = self.controller.alter_partition_reassignments(ctx, &req);
                (r.records, ())
            }
            75..=84 => {
                let req = ElectLeadersRequest {
                    election_type: if self.rng.gen_bool(0.2) { 1 } else { 0 },
                    topic_partitions: None,
                    ..Default::default()
                };
                (self.controller.elect_leaders(ctx, &req, 2).records, ())
            }
            85..=89 => {
                // Some AllocateProducerIds from a registered broker.
                let Some(b) = self.controller.brokers().next().map(|b| (b.id, b.epoch)) else {
                    return;
                };
                let req = AllocateProducerIdsRequest {
                    broker_id: b.0,
                    broker_epoch: b.1,
                    ..Default::default()
                };
                (self.controller.allocate_producer_ids(ctx, &req).records, ())
            }
            _ => {
                let req = ListPartitionReassignmentsRequest::default();
                let listed = self.controller.list_partition_reassignments(&req);
                assert_eq!(listed.error_code, 0);
                (Vec::new(), ())
            }
        };
        self.submit(Requester::Admin, records, Reply::Other);
    }

    fn tick_event(&mut self) -> bool {
        let due = self
            .controller
            .next_deadline_ms()
            .is_some_and(|d| d <= self.now);
        if !due && self.now < self.last_tick_ms + 250 {
            return false;
        }
        self.last_tick_ms = self.now;
        let before = self.controller.brokers().filter(|b| b.fenced).count();
        let r = self.controller.tick(self.ctx());
        if r.records
            .iter()
            .any(|r| matches!(r, MetadataRecord::BrokerRegistrationChange(c) if c.fenced == 1))
        {
            self.stats.fenced_by_tick += 1;
        }
        let _ = before;
        let had_records = !r.records.is_empty();
        self.submit(Requester::Tick, r.records, Reply::Other);
        had_records
    }

    // ---- faults ----

    fn faults(&mut self, chaos: bool) {
        if !chaos {
            return;
        }
        let i = self.rng.gen_range(0..self.brokers.len());
        let roll = self.rng.gen_range(0..1000);
        let now = self.now;
        let incarnation = self.new_incarnation();
        let b = &mut self.brokers[i];
        match roll {
            0..=3 if b.process == Process::Running => {
                b.process = Process::Stopped; // crash
                self.stats.crashes += 1;
            }
            4..=30 if b.process == Process::Stopped => {
                // Restart: a new incarnation, the image it kept on disk.
                b.process = Process::Running;
                b.incarnation = incarnation;
                b.epoch = None;
                b.in_flight = false;
                b.shutting_down = false;
                b.next_heartbeat_ms = now;
            }
            31..=33 if b.process == Process::Running && b.epoch.is_some() && !b.shutting_down => {
                b.shutting_down = true;
                self.stats.shutdowns += 1;
            }
            34..=36 if b.process == Process::Running => {
                b.heartbeat_loss_until = now + self.rng.gen_range(1000..6000);
            }
            37..=38 => self.failover(),
            _ => {}
        }
    }

    /// Brokers follow the committed log, each at its own pace; with `slow`, broker 1 lags (a slow
    /// metadata fetcher).
    fn follow_log(&mut self, all: bool, slow: bool) {
        for i in 0..self.brokers.len() {
            let n = if all {
                usize::MAX
            } else if slow && i == 0 && self.rng.gen_bool(0.9) {
                0
            } else {
                self.rng.gen_range(0..3)
            };
            let b = &mut self.brokers[i];
            let end = self.log.len().min(b.applied.saturating_add(n));
            if end == b.applied {
                continue;
            }
            let mut delta = MetadataDelta::new(&b.image);
            for (_, batch) in &self.log[b.applied..end] {
                for r in batch {
                    delta
                        .replay(r)
                        .unwrap_or_else(|e| panic!("broker {}: {e}", b.id));
                }
            }
            b.image = delta.apply(prov(self.log[end - 1].0));
            b.applied = end;
        }
    }

    // ---- invariants ----

    /// C14.11: a broker told to shut down after a controlled shutdown leaves only once every
    /// active broker has seen the batch that moved its leaderships.
    fn check_shutdown_offset(&self, id: i32) {
        let Some(offset) = self
            .controller
            .broker(id)
            .and_then(|b| b.controlled_shutdown_offset)
        else {
            return;
        };
        for b in self.controller.brokers().filter(|b| b.is_active()) {
            let applied = self.brokers[(b.id - 1) as usize].applied as i64;
            assert!(
                applied >= offset,
                "t={}: broker {id} shuts down at offset {offset} while active broker {} has applied {applied}",
                self.now,
                b.id
            );
        }
    }

    fn check(&mut self, step: usize) {
        self.controller.check_consistency().unwrap();
        let image = self.controller.image();
        let ctx = |what: String| format!("step {step} t={} : {what}", self.now);
        for t in image.topics() {
            for (&i, p) in &t.partitions {
                let name = format!("{}-{i}", t.name);
                assert!(!p.isr.is_empty(), "{}", ctx(format!("{name}: empty ISR")));
                let isr: BTreeSet<i32> = p.isr.iter().copied().collect();
                assert_eq!(
                    isr.len(),
                    p.isr.len(),
                    "{}",
                    ctx(format!("{name}: ISR duplicates"))
                );
                let replicas: BTreeSet<i32> = p.replicas.iter().copied().collect();
                assert_eq!(replicas.len(), p.replicas.len());
                assert!(
                    isr.is_subset(&replicas),
                    "{}",
                    ctx(format!("{name}: ISR ⊄ replicas {p:?}"))
                );
                if p.leader != NO_LEADER {
                    assert!(
                        isr.contains(&p.leader),
                        "{}",
                        ctx(format!("{name}: leader ∉ ISR {p:?}"))
                    );
                    assert!(
                        image.is_active(p.leader),
                        "{}",
                        ctx(format!("{name}: leader {} is not active {p:?}", p.leader))
                    );
                }
                if p.isr.len() > 1 {
                    for m in &p.isr {
                        assert!(
                            image.is_active(*m),
                            "{}",
                            ctx(format!("{name}: ISR member {m} is not active {p:?}"))
                        );
                    }
                }
                let key = (t.id, i);
                if let Some(&(le, pe)) = self.leader_epochs.get(&key) {
                    assert!(
                        p.leader_epoch >= le,
                        "{}",
                        ctx(format!("{name}: leader epoch went back"))
                    );
                    assert!(
                        p.partition_epoch >= pe,
                        "{}",
                        ctx(format!("{name}: partition epoch went back"))
                    );
                }
                self.leader_epochs
                    .insert(key, (p.leader_epoch, p.partition_epoch));
                if p.leader != NO_LEADER {
                    let prev = *self
                        .leader_of_epoch
                        .entry((t.id, i, p.leader_epoch))
                        .or_insert(p.leader);
                    assert_eq!(
                        prev,
                        p.leader,
                        "{}",
                        ctx(format!("{name}: two leaders in epoch {}", p.leader_epoch))
                    );
                }
                // The controller's own state agrees with its image.
                let own = &self.controller.topic(&t.name).unwrap().partitions[&i];
                assert_eq!(own, p);
            }
        }
        for (id, b) in image.brokers() {
            let last = self.broker_epochs.entry(*id).or_insert(b.epoch);
            assert!(
                b.epoch >= *last,
                "{}",
                ctx(format!("broker {id}: epoch went back"))
            );
            *last = b.epoch;
        }
        let log_len = self.log.len();
        for b in &mut self.brokers {
            if b.applied == log_len && log_len > 0 && b.compared_at != log_len {
                b.compared_at = log_len;
                assert!(
                    b.image == image,
                    "{}",
                    ctx(format!(
                        "broker {} image differs from the controller's",
                        b.id
                    ))
                );
            }
        }
    }

    // ---- the loop ----

    fn step(&mut self, step: usize, chaos: bool) {
        self.now += self.rng.gen_range(1..60);
        self.maybe_commit();
        self.faults(chaos);
        self.maybe_activate();
        self.follow_log(false, chaos);
        // Handle events while no write is in flight.
        for _ in 0..8 {
            if self.pending.is_some() || !self.controller.is_active() {
                break;
            }
            let mut ids: Vec<i32> = (1..=BROKERS).collect();
            ids.shuffle(&mut self.rng);
            let roll = self.rng.gen_range(0..100);
            let handled = if roll < 8 && chaos {
                self.admin_event();
                true
            } else if roll < 30 {
                self.alter_partition_event()
            } else if roll < 45 {
                self.tick_event()
            } else {
                ids.into_iter().any(|id| self.broker_event(id))
            };
            if !handled && !self.tick_event() {
                break;
            }
        }
        // Standby: brokers' requests are refused.
        if !self.controller.is_active() {
            let req = BrokerHeartbeatRequest::default();
            let r = self.controller.broker_heartbeat(self.ctx(), &req);
            assert_eq!(r.response.error_code, ErrorCode::NotController.code());
            assert!(r.records.is_empty());
        }
        self.check(step);
    }
}

fn run(seed: u64, steps: usize) -> Stats {
    let mut sim = Sim::new(seed);
    for step in 0..steps {
        sim.step(step, true);
    }
    // Calm down: the write in flight commits, then every broker restarts (a new incarnation) and
    // stays up, without faults, for long enough for sessions, elections and the rebalance.
    if let Some(p) = &sim.pending {
        sim.now = sim.now.max(p.commit_at);
        sim.maybe_commit();
    }
    for i in 0..sim.brokers.len() {
        let incarnation = sim.new_incarnation();
        let now = sim.now;
        let b = &mut sim.brokers[i];
        b.process = Process::Running;
        b.incarnation = incarnation;
        b.epoch = None;
        b.in_flight = false;
        b.shutting_down = false;
        b.heartbeat_loss_until = 0;
        b.next_heartbeat_ms = now;
    }
    let calm_until = sim.now + 4 * SESSION_TIMEOUT_MS + 12_000;
    let mut step = steps;
    while sim.now < calm_until {
        sim.step(step, false);
        step += 1;
    }
    while sim.pending.is_some() {
        sim.now += 50;
        sim.maybe_commit();
    }
    sim.follow_log(true, false);
    sim.check(step);
    let image = sim.controller.image();
    for id in 1..=BROKERS {
        let b = image
            .broker(id)
            .unwrap_or_else(|| panic!("seed {seed}: broker {id} unregistered"));
        assert!(
            !b.fenced && !b.in_controlled_shutdown,
            "seed {seed}: broker {id} not active at the end: {b:?}"
        );
    }
    for t in image.topics() {
        for (i, p) in &t.partitions {
            assert_ne!(
                p.leader, NO_LEADER,
                "seed {seed}: {}-{i} has no leader at the end: {p:?}",
                t.name
            );
        }
    }
    sim.stats
}

#[test]
fn simulation_many_seeds() {
    let seeds: u64 = std::env::var("SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let steps: usize = std::env::var("SIM_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1500);
    let first: u64 = std::env::var("SIM_FIRST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut total = Stats::default();
    for seed in first..first + seeds {
        let s = run(seed, steps);
        total.commits += s.commits;
        total.failovers += s.failovers;
        total.lost_writes += s.lost_writes;
        total.crashes += s.crashes;
        total.shutdowns += s.shutdowns;
        total.fenced_by_tick += s.fenced_by_tick;
        total.alter_partition_ok += s.alter_partition_ok;
        total.shutdowns_completed += s.shutdowns_completed;
        total.reassignments_completed += s.reassignments_completed;
        total.unclean_elections += s.unclean_elections;
    }
    eprintln!("{total:?}");
    // The faults really happened.
    assert!(total.failovers > 0 && total.lost_writes > 0);
    assert!(total.crashes > 0 && total.shutdowns > 0 && total.fenced_by_tick > 0);
    assert!(total.alter_partition_ok > 0 && total.shutdowns_completed > 0);
    assert!(total.reassignments_completed > 0 && total.unclean_elections > 0);
}

#[test]
fn simulation_is_deterministic() {
    let a = run(99, 400);
    let b = run(99, 400);
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}
