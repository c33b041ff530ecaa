//! A deterministic simulation of one partition with three replicas on real josef-log logs (each in
//! its own temp dir), a fake clock, lossy and reordering links between leader and followers,
//! crashes (the `Partition` is dropped without closing and its log reopened from disk), slow
//! followers, acks=-1 producers and a tiny controller (clean elections from the ISR only,
//! AlterPartition with Kafka's epoch checks, fencing of crashed brokers).
//!
//! Checked after every step:
//! - a leader's HW never moves back within its leader epoch, and HW ≤ LEO everywhere;
//! - every alive member of the committed ISR holds every offset below the leader's HW;
//! - no replica in the controller's ISR ever truncates below the highest HW exposed so far;
//! - an acks=-1 produce is acknowledged only when every ISR member holds it (same bytes);
//! - every acknowledged batch stays in the current leader's log with the same bytes;
//! - an idempotent producer retrying its batch to whoever leads is never refused for its
//!   sequence (the producer state is rebuilt on followers and after crashes).
//!
//! After quiescence (no faults, everything restarted, links healed): all replicas hold the same
//! batches byte for byte, the same HW, the full ISR, and every acknowledged batch; the idempotent
//! producer's sequences are in the log exactly once each, in order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use josef_log::testing::TestBatch;
use josef_log::{BatchHeader, LogConfig};
use josef_partition::replication::NO_EPOCH;
use josef_partition::{
    AlterPartitionProposal, ClientBatch, CommittedPartitionState, FetchIsolation,
    FetchResponseAction, FollowerFetch, FollowerFetchRequest, FollowerFetchResult,
    LeaderFetchAnswer, Partition, ReadParams, ReplicaId,
};
use josef_protocol::{ErrorCode, Uuid};
use josef_sequencer::ProducerStateConfig;

const REPLICAS: [ReplicaId; 3] = [1, 2, 3];
const MIN_ISR: i32 = 2;
const LAG_MS: i64 = 200;
const FETCH_TIMEOUT_MS: i64 = 80;
const PRODUCE_TIMEOUT_MS: i64 = 2_000;

/// The run's randomness: one seeded generator, so a seed replays the same run.
struct Rng(rand::rngs::StdRng);

impl Rng {
    fn seeded(seed: u64) -> Self {
        Rng(rand::SeedableRng::seed_from_u64(seed))
    }
    fn next(&mut self) -> u64 {
        rand::RngCore::next_u64(&mut self.0)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

/// The controller's view of the partition.
#[derive(Debug, Clone)]
struct Controller {
    leader: ReplicaId,
    leader_epoch: i32,
    partition_epoch: i32,
    isr: Vec<ReplicaId>,
    fenced: BTreeSet<ReplicaId>,
}

impl Controller {
    /// Clean election: keep the leader while valid, else the first ISR member in assignment order
    /// that is not fenced; none → −1 with the ISR left as is.
    fn elect(&mut self) {
        if self.leader >= 0
            && !self.fenced.contains(&self.leader)
            && self.isr.contains(&self.leader)
        {
            return;
        }
        let new = REPLICAS
            .iter()
            .copied()
            .find(|r| self.isr.contains(r) && !self.fenced.contains(r))
            .unwrap_or(-1);
        if new != self.leader {
            self.leader = new;
            self.leader_epoch += 1;
        }
        self.partition_epoch += 1;
    }

    fn fence(&mut self, id: ReplicaId) {
        self.fenced.insert(id);
        if self.isr.len() > 1 {
            self.isr.retain(|&r| r != id);
        }
        self.elect();
    }

    fn unfence(&mut self, id: ReplicaId) {
        self.fenced.remove(&id);
        if self.leader < 0 {
            self.elect();
        }
    }

    fn alter_partition(
        &mut self,
        p: &AlterPartitionProposal,
    ) -> Result<CommittedPartitionState, ErrorCode> {
        if p.leader_epoch < self.leader_epoch {
            return Err(ErrorCode::FencedLeaderEpoch);
        }
        if p.leader_id != self.leader {
            return Err(ErrorCode::InvalidRequest);
        }
        if p.partition_epoch < self.partition_epoch {
            return Err(ErrorCode::InvalidUpdateVersion);
        }
        if p.new_isr.is_empty() || !p.new_isr.contains(&p.leader_id) {
            return Err(ErrorCode::InvalidRequest);
        }
        if p.new_isr.iter().any(|r| self.fenced.contains(r)) {
            return Err(ErrorCode::IneligibleReplica);
        }
        self.isr = p.new_isr.clone();
        self.partition_epoch += 1;
        Ok(self.committed())
    }

    fn committed(&self) -> CommittedPartitionState {
        CommittedPartitionState {
            leader_id: self.leader,
            leader_epoch: self.leader_epoch,
            isr: self.isr.clone(),
            partition_epoch: self.partition_epoch,
        }
    }
}

enum Msg {
    Fetch {
        to: ReplicaId,
        seq: u64,
        fetch: FollowerFetch,
    },
    FetchResponse {
        to: ReplicaId,
        seq: u64,
        result: Result<FollowerFetchResult, ErrorCode>,
    },
    AlterPartition {
        proposal: AlterPartitionProposal,
    },
    AlterPartitionResponse {
        to: ReplicaId,
        proposal: AlterPartitionProposal,
        result: Result<CommittedPartitionState, ErrorCode>,
    },
}

struct Replica {
    id: ReplicaId,
    dir: PathBuf,
    partition: Option<Arc<Partition>>,
    /// The fetch in flight: its sequence number, when it was sent, and what it asked.
    inflight: Option<(u64, i64, FollowerFetchRequest)>,
    /// A slow follower fetches only this often (ms between fetches).
    slowness_ms: i64,
    last_fetch_sent: i64,
    /// An AlterPartition in flight (the leader sends one at a time).
    alter_inflight: bool,
}

struct Pending {
    leader: ReplicaId,
    leader_epoch: i32,
    base_offset: i64,
    required: i64,
    deadline: i64,
    /// The base sequence, for the idempotent producer's batches.
    idempotent_seq: Option<i32>,
}

/// The idempotent producer (max.in.flight = 1): one batch at a time, retried with the same bytes
/// (same sequence) to whoever leads until it is acknowledged.
#[derive(Default)]
struct IdempotentProducer {
    next_seq: i32,
    outstanding: Option<(bytes::BytesMut, i32, i32)>,
    in_flight: bool,
    acked_seqs: BTreeSet<i32>,
    /// Retries answered with the original offsets (the batch was already in the log).
    duplicates: u64,
}

const PRODUCER_ID: i64 = 4242;

struct Sim {
    rng: Rng,
    now: i64,
    _tmp: tempfile::TempDir,
    replicas: Vec<Replica>,
    controller: Controller,
    net: Vec<(i64, Msg)>,
    loss_per_mille: u64,
    seq: u64,
    pending: Vec<Pending>,
    /// Acknowledged batches: base offset → bytes.
    acked: BTreeMap<i64, Bytes>,
    /// (leader, leader epoch) → highest HW seen.
    leader_hw: BTreeMap<(ReplicaId, i32), i64>,
    /// The highest HW any leader exposed.
    exposed_hw: i64,
    idempotent: IdempotentProducer,
    /// The leader (and epoch) the acknowledged batches were last checked on.
    acked_checked: Option<(ReplicaId, i32)>,
    produced: u64,
    acks: u64,
    truncations: u64,
    crashes: u64,
    elections: u64,
}

fn open(dir: &std::path::Path, id: ReplicaId, now: i64) -> Partition {
    let config = LogConfig {
        segment_bytes: 16 * 1024,
        ..LogConfig::default()
    };
    Partition::open_replica(
        dir,
        "t",
        0,
        Uuid::ZERO,
        config,
        ProducerStateConfig::default(),
        id,
        now,
    )
    .expect("open replica")
}

impl Sim {
    fn new(seed: u64) -> Sim {
        // Logs in memory where the machine has a tmpfs: the run then waits for no fsync.
        let shm = std::path::Path::new("/dev/shm");
        let tmp = if shm.is_dir() {
            tempfile::tempdir_in(shm).unwrap()
        } else {
            tempfile::tempdir().unwrap()
        };
        let replicas = REPLICAS
            .iter()
            .map(|&id| {
                let dir = tmp.path().join(format!("b{id}/t-0"));
                Replica {
                    id,
                    partition: Some(Arc::new(open(&dir, id, 0))),
                    dir,
                    inflight: None,
                    slowness_ms: 0,
                    last_fetch_sent: 0,
                    alter_inflight: false,
                }
            })
            .collect();
        let mut sim = Sim {
            rng: Rng::seeded(seed),
            now: 1_000,
            _tmp: tmp,
            replicas,
            controller: Controller {
                leader: 1,
                leader_epoch: 0,
                partition_epoch: 0,
                isr: REPLICAS.to_vec(),
                fenced: BTreeSet::new(),
            },
            net: Vec::new(),
            loss_per_mille: 100,
            seq: 0,
            pending: Vec::new(),
            acked: BTreeMap::new(),
            leader_hw: BTreeMap::new(),
            exposed_hw: 0,
            acked_checked: None,
            idempotent: IdempotentProducer::default(),
            produced: 0,
            acks: 0,
            truncations: 0,
            crashes: 0,
            elections: 0,
        };
        sim.publish();
        sim
    }

    fn replica(&self, id: ReplicaId) -> &Replica {
        &self.replicas[(id - 1) as usize]
    }

    fn replica_mut(&mut self, id: ReplicaId) -> &mut Replica {
        &mut self.replicas[(id - 1) as usize]
    }

    fn partition(&self, id: ReplicaId) -> Option<Arc<Partition>> {
        if !REPLICAS.contains(&id) {
            return None;
        }
        self.replica(id).partition.clone()
    }

    /// The metadata image reaches every alive broker (at once: the publisher is not under test).
    fn publish(&mut self) {
        let c = self.controller.clone();
        for r in &mut self.replicas {
            let Some(p) = &r.partition else { continue };
            if r.id == c.leader {
                let change = p
                    .make_leader(
                        c.leader_epoch,
                        c.partition_epoch,
                        &c.isr,
                        &REPLICAS,
                        MIN_ISR,
                        self.now,
                    )
                    .unwrap();
                if change.new_leader_epoch {
                    r.alter_inflight = false;
                }
                p.set_replica_lag_time_max_ms(LAG_MS);
            } else {
                p.make_follower(c.leader, c.leader_epoch, c.partition_epoch);
            }
        }
    }

    fn send(&mut self, msg: Msg) {
        if self.rng.chance(self.loss_per_mille) {
            return;
        }
        let delay = 1 + self.rng.below(30) as i64;
        self.net.push((self.now + delay, msg));
    }

    fn crash(&mut self, id: ReplicaId) {
        let r = self.replica_mut(id);
        // kill -9: the partition goes away without a close; its files stay as written.
        r.partition = None;
        r.inflight = None;
        r.alter_inflight = false;
        self.crashes += 1;
        let before = self.controller.leader_epoch;
        self.controller.fence(id);
        if self.controller.leader_epoch != before {
            self.elections += 1;
        }
        self.publish();
    }

    fn restart(&mut self, id: ReplicaId) {
        let now = self.now;
        let r = self.replica_mut(id);
        let dir = r.dir.clone();
        r.partition = Some(Arc::new(open(&dir, id, now)));
        let before = self.controller.leader_epoch;
        self.controller.unfence(id);
        if self.controller.leader_epoch != before {
            self.elections += 1;
        }
        self.publish();
    }

    fn produce(&mut self) {
        let leader = self.controller.leader;
        let Some(p) = self.partition(leader) else {
            return;
        };
        let n = 1 + self.rng.below(3);
        let mut b = TestBatch::new(0);
        for i in 0..n {
            let v = format!("p{}-{i}-{}", self.produced, self.rng.next());
            b = b.record(self.now, None, Some(v.as_bytes()));
        }
        let bytes = b.build();
        let h = BatchHeader::parse(&bytes).unwrap();
        let epoch = p.leader_epoch();
        let leo_before = p.log_end_offset();
        self.produced += 1;
        match p.append_from_client(ClientBatch::Owned(bytes), &h, -1, MIN_ISR, self.now) {
            Ok(r) => self.pending.push(Pending {
                leader,
                leader_epoch: epoch,
                base_offset: r.base_offset,
                required: r.last_offset + 1,
                deadline: self.now + PRODUCE_TIMEOUT_MS,
                idempotent_seq: None,
            }),
            Err(e) => {
                assert_eq!(e.code, ErrorCode::NotEnoughReplicas, "{e}");
                // Nothing written.
                assert_eq!(p.log_end_offset(), leo_before);
                assert!(p.isr().len() < MIN_ISR as usize);
            }
        }
    }

    /// The idempotent producer sends (or resends) its batch to the current leader.
    fn produce_idempotent(&mut self) {
        let leader = self.controller.leader;
        if self.idempotent.in_flight {
            return;
        }
        let Some(p) = self.partition(leader) else {
            return;
        };
        let (bytes, seq, _) = match &self.idempotent.outstanding {
            Some(o) => o.clone(),
            None => {
                let seq = self.idempotent.next_seq;
                let n = 1 + self.rng.below(3) as i32;
                let mut b = TestBatch::new(0).producer(PRODUCER_ID, 0, seq);
                for i in 0..n {
                    let v = format!("idem-{seq}-{i}");
                    b = b.record(self.now, None, Some(v.as_bytes()));
                }
                let o = (b.build(), seq, n);
                self.idempotent.outstanding = Some(o.clone());
                o
            }
        };
        let h = BatchHeader::parse(&bytes).unwrap();
        let epoch = p.leader_epoch();
        let leo_before = p.log_end_offset();
        match p.append_from_client(ClientBatch::Owned(bytes), &h, -1, MIN_ISR, self.now) {
            Ok(r) => {
                if r.base_offset < leo_before {
                    self.idempotent.duplicates += 1;
                }
                self.idempotent.in_flight = true;
                self.pending.push(Pending {
                    leader,
                    leader_epoch: epoch,
                    base_offset: r.base_offset,
                    required: r.last_offset + 1,
                    deadline: self.now + PRODUCE_TIMEOUT_MS,
                    idempotent_seq: Some(seq),
                });
            }
            // Retried later with the same sequence; anything else (an out-of-order sequence) is a
            // bug in the producer state kept across failovers.
            Err(e) => assert_eq!(e.code, ErrorCode::NotEnoughReplicas, "seq {seq}: {e}"),
        }
    }

    /// DelayedProduce: complete the acks=-1 writes whose condition holds.
    fn complete_produces(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for w in pending {
            let done = match self.partition(w.leader) {
                // NOT_LEADER_OR_FOLLOWER
                None => Some(false),
                Some(p) if p.leader_epoch() != w.leader_epoch => Some(false),
                Some(p) => match p.check_enough_replicas_reach_offset(w.required, MIN_ISR) {
                    Ok(true) => Some(true),
                    Ok(false) if self.now < w.deadline => None,
                    // REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND: not acked.
                    _ => Some(false),
                },
            };
            match done {
                None => self.pending.push(w),
                Some(acked) => {
                    if acked {
                        self.ack(&w);
                    }
                    if let Some(seq) = w.idempotent_seq {
                        self.idempotent.in_flight = false;
                        if acked {
                            let (_, _, n) = self.idempotent.outstanding.take().unwrap();
                            assert!(self.idempotent.acked_seqs.insert(seq));
                            self.idempotent.next_seq = seq + n;
                        }
                    }
                }
            }
        }
    }

    fn batch_at(p: &Partition, base: i64) -> Option<Bytes> {
        if base >= p.log_end_offset() {
            return None;
        }
        let read = p
            .read(&ReadParams {
                fetch_offset: base,
                current_leader_epoch: NO_EPOCH,
                max_bytes: 1,
                min_one_message: true,
                hard_limit: false,
                isolation: FetchIsolation::LogEnd,
                require_leader: false,
            })
            .ok()?;
        let h = BatchHeader::parse(&read.records).ok()?;
        (h.base_offset == base).then(|| read.records.slice(..h.total_size()))
    }

    fn ack(&mut self, w: &Pending) {
        let leader = self.partition(w.leader).unwrap();
        let bytes = Self::batch_at(&leader, w.base_offset).expect("acked batch on the leader");
        let isr = leader.isr();
        for id in isr {
            let Some(p) = self.partition(id) else {
                continue;
            };
            let held = Self::batch_at(&p, w.base_offset);
            assert_eq!(
                held.as_ref(),
                Some(&bytes),
                "acked offset {} not held by ISR member {id}",
                w.base_offset
            );
        }
        self.acks += 1;
        self.acked.insert(w.base_offset, bytes);
    }

    fn follower_fetches(&mut self, max_bytes: i64) {
        let c = self.controller.clone();
        for i in 0..self.replicas.len() {
            let id = self.replicas[i].id;
            if id == c.leader || c.leader < 0 {
                continue;
            }
            let now = self.now;
            let r = &self.replicas[i];
            let Some(p) = &r.partition else { continue };
            let timed_out = r
                .inflight
                .is_some_and(|(_, at, _)| now - at > FETCH_TIMEOUT_MS);
            if (r.inflight.is_some() && !timed_out) || now - r.last_fetch_sent < r.slowness_ms {
                continue;
            }
            let Some(sent) = p.follower_fetch_request() else {
                continue;
            };
            let fetch = FollowerFetch {
                replica_id: id,
                broker_epoch: -1,
                fetch_offset: sent.fetch_offset,
                log_start_offset: sent.log_start_offset,
                current_leader_epoch: sent.current_leader_epoch,
                last_fetched_epoch: sent.last_fetched_epoch,
                max_bytes,
                min_one_message: true,
            };
            self.seq += 1;
            let seq = self.seq;
            self.replicas[i].inflight = Some((seq, now, sent));
            self.replicas[i].last_fetch_sent = now;
            self.send(Msg::Fetch {
                to: sent.leader_id,
                seq,
                fetch,
            });
        }
    }

    fn deliver(&mut self) {
        let mut due = Vec::new();
        let mut later = Vec::new();
        for (at, m) in std::mem::take(&mut self.net) {
            if at <= self.now {
                due.push(m);
            } else {
                later.push((at, m));
            }
        }
        self.net = later;
        // Messages due together arrive in any order.
        while !due.is_empty() {
            let i = self.rng.below(due.len() as u64) as usize;
            let m = due.swap_remove(i);
            self.handle(m);
        }
    }

    fn handle(&mut self, m: Msg) {
        let now = self.now;
        match m {
            Msg::Fetch { to, seq, fetch } => {
                let Some(p) = self.partition(to) else { return };
                let result = p.fetch_from_follower(&fetch, now);
                if let Ok(r) = &result {
                    if let Some(proposal) = r.alter_partition.clone() {
                        self.propose(to, proposal);
                    }
                }
                self.send(Msg::FetchResponse {
                    to: fetch.replica_id,
                    seq,
                    result,
                });
            }
            Msg::FetchResponse { to, seq, result } => {
                let in_isr = self.controller.isr.contains(&to);
                let exposed = self.exposed_hw;
                let r = self.replica_mut(to);
                let Some((_, _, sent)) = r.inflight.filter(|(s, _, _)| *s == seq) else {
                    return; // not the fetch in flight (a retry replaced it)
                };
                r.inflight = None;
                let Some(p) = r.partition.clone() else { return };
                let answer = LeaderFetchAnswer::from(result);
                let before = p.log_end_offset();
                match p.on_follower_fetch_response(&sent, answer, now).unwrap() {
                    FetchResponseAction::Truncated(_) => {
                        let after = p.log_end_offset();
                        if after < before {
                            self.truncations += 1;
                            assert!(
                                !in_isr || after >= exposed,
                                "ISR member {to} truncated to {after} below the exposed HW {exposed}"
                            );
                        }
                    }
                    FetchResponseAction::OffsetOutOfRange => {
                        // ListOffsets to the leader, then Kafka's fetchOffsetAndTruncate.
                        let Some(l) = self.partition(sent.leader_id) else {
                            return;
                        };
                        let (latest, earliest) = { (l.log_end_offset(), l.log_start_offset()) };
                        p.on_offset_out_of_range(&sent, latest, earliest, now)
                            .unwrap();
                        let after = p.log_end_offset();
                        assert!(!in_isr || after >= exposed.min(before));
                    }
                    _ => {}
                }
            }
            Msg::AlterPartition { proposal } => {
                let from = proposal.leader_id;
                let result = self.controller.alter_partition(&proposal);
                if result.is_ok() {
                    self.publish_isr_change_later();
                }
                self.send_reliable(Msg::AlterPartitionResponse {
                    to: from,
                    proposal,
                    result,
                });
            }
            Msg::AlterPartitionResponse {
                to,
                proposal,
                result,
            } => {
                let r = self.replica_mut(to);
                r.alter_inflight = false;
                let Some(p) = r.partition.clone() else { return };
                if let josef_partition::AlterPartitionOutcome::Resubmit(again) =
                    p.on_alter_partition_response(&proposal, result, now)
                {
                    self.propose(to, again);
                }
            }
        }
    }

    /// The controller's ISR change reaches the brokers through metadata too (sometimes before
    /// the AlterPartition answer): half the time publish now.
    fn publish_isr_change_later(&mut self) {
        if self.rng.chance(500) {
            self.publish();
        }
    }

    fn send_reliable(&mut self, msg: Msg) {
        let delay = 1 + self.rng.below(20) as i64;
        self.net.push((self.now + delay, msg));
    }

    fn propose(&mut self, leader: ReplicaId, proposal: AlterPartitionProposal) {
        self.replica_mut(leader).alter_inflight = true;
        self.send_reliable(Msg::AlterPartition { proposal });
    }

    fn shrink_isr(&mut self) {
        let leader = self.controller.leader;
        if leader < 0 || self.replica(leader).alter_inflight {
            return;
        }
        let Some(p) = self.partition(leader) else {
            return;
        };
        if let Some(proposal) = p.maybe_shrink_isr(self.now) {
            self.propose(leader, proposal);
        }
    }

    fn check(&mut self) {
        let c = &self.controller;
        for r in &self.replicas {
            if let Some(p) = &r.partition {
                assert!(p.high_watermark() <= p.log_end_offset());
                assert!(p.isr().iter().all(|i| REPLICAS.contains(i)));
            }
        }
        assert!(!c.isr.is_empty());
        if c.leader < 0 {
            return;
        }
        let Some(p) = self.partition(c.leader) else {
            return;
        };
        let Some(epoch) = p.leader_epoch_if_leader() else {
            return;
        };
        let (hw, isr) = (p.high_watermark(), p.isr());
        let last = self.leader_hw.entry((c.leader, epoch)).or_insert(hw);
        assert!(
            hw >= *last,
            "HW of leader {} went back in epoch {epoch}",
            c.leader
        );
        *last = hw;
        self.exposed_hw = self.exposed_hw.max(hw);
        for id in isr {
            if let Some(f) = self.partition(id) {
                let leo = f.log_end_offset();
                assert!(leo >= hw, "ISR member {id} has LEO {leo} below the HW {hw}");
            }
        }
        // Every acknowledged batch on each new leader (checking on every step costs too much).
        if self.acked_checked != Some((c.leader, epoch)) {
            self.acked_checked = Some((c.leader, epoch));
            for (&base, bytes) in &self.acked {
                assert_eq!(
                    Self::batch_at(&p, base).as_ref(),
                    Some(bytes),
                    "acked batch at {base} missing on leader {}",
                    self.controller.leader
                );
            }
        }
    }

    fn step(&mut self, faults: bool) {
        self.now += 1 + self.rng.below(10) as i64;
        if faults {
            let alive: Vec<ReplicaId> = REPLICAS
                .iter()
                .copied()
                .filter(|&i| self.partition(i).is_some())
                .collect();
            if alive.len() > 1 && self.rng.chance(8) {
                let victim = alive[self.rng.below(alive.len() as u64) as usize];
                self.crash(victim);
            }
            let dead: Vec<ReplicaId> = REPLICAS
                .iter()
                .copied()
                .filter(|&i| self.partition(i).is_none())
                .collect();
            if !dead.is_empty() && self.rng.chance(40) {
                let back = dead[self.rng.below(dead.len() as u64) as usize];
                self.restart(back);
            }
            if self.rng.chance(20) {
                let id = 1 + self.rng.below(3) as i32;
                self.replica_mut(id).slowness_ms =
                    if self.rng.chance(500) { LAG_MS * 2 } else { 0 };
            }
            if self.rng.chance(300) {
                self.produce();
            }
            if self.rng.chance(300) {
                self.produce_idempotent();
            }
        }
        let max_bytes = 100 + self.rng.below(400) as i64;
        self.follower_fetches(max_bytes);
        self.deliver();
        if self.rng.chance(100) {
            self.shrink_isr();
        }
        self.complete_produces();
        self.check();
    }

    fn quiesce(&mut self) {
        self.loss_per_mille = 0;
        for r in &mut self.replicas {
            r.slowness_ms = 0;
        }
        for id in REPLICAS {
            if self.partition(id).is_none() {
                self.restart(id);
            }
        }
        for _ in 0..3_000 {
            self.step(false);
            if self.settled() {
                break;
            }
        }
        assert!(self.settled(), "no quiescence: {:?}", self.controller);
    }

    fn settled(&self) -> bool {
        let c = &self.controller;
        if c.leader < 0 || c.isr.len() != REPLICAS.len() || !self.net.is_empty() {
            return false;
        }
        let states: Vec<(i64, i64)> = REPLICAS
            .iter()
            .map(|&i| {
                let p = self.partition(i).unwrap();
                (p.log_end_offset(), p.high_watermark())
            })
            .collect();
        states.windows(2).all(|w| w[0] == w[1]) && states[0].0 == states[0].1
    }

    fn batches(&self, id: ReplicaId) -> Vec<Bytes> {
        let p = self.partition(id).unwrap();
        p.batches_from_log_start().unwrap().batches
    }
}

fn run(seed: u64, steps: usize) -> Sim {
    let mut sim = Sim::new(seed);
    for _ in 0..steps {
        sim.step(true);
    }
    sim.quiesce();
    let reference = sim.batches(REPLICAS[0]);
    for &id in &REPLICAS[1..] {
        assert_eq!(
            sim.batches(id),
            reference,
            "seed {seed}: replica {id} differs"
        );
    }
    let leader = sim.partition(sim.controller.leader).unwrap();
    for (&base, bytes) in &sim.acked {
        assert_eq!(
            Sim::batch_at(&leader, base).as_ref(),
            Some(bytes),
            "seed {seed}"
        );
    }
    sim
}

#[test]
fn replicas_converge_and_keep_every_acknowledged_write() {
    let seeds: u64 = std::env::var("SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let (mut acks, mut truncations, mut crashes, mut elections, mut duplicates) = (0, 0, 0, 0, 0);
    for seed in 0..seeds {
        let sim = run(seed, 1_200);
        acks += sim.acks;
        truncations += sim.truncations;
        crashes += sim.crashes;
        elections += sim.elections;
        duplicates += sim.idempotent.duplicates;
    }
    eprintln!(
        "{seeds} seeds: {acks} acks, {crashes} crashes, {elections} elections, {truncations} \
         truncations, {duplicates} idempotent retries deduplicated"
    );
    // The faults must actually have happened for the run to mean something.
    assert!(acks > 0 && crashes > 0 && elections > 0);
}
