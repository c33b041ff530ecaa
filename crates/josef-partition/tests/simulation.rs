//! A deterministic simulation of one partition with three replicas on real josef-log logs (each in
//! its own temp dir), a fake clock, lossy and reordering links between leader and followers,
//! crashes (the `Partition` is dropped without closing and its log reopened from disk), slow
//! followers, acks=-1 producers and a tiny controller (`simulation/controller.rs`).
//!
//! Brokers learn the controller's metadata image late, each on its own: a broker cut off from the
//! controller (its heartbeats lost) is fenced and replaced as leader while it still runs, still
//! gets produce requests from clients with old metadata, and still has followers that have not
//! learnt the new leader epoch either. AlterPartition requests and responses are dropped (the
//! broker resends the pending change), duplicated, delayed and reordered, and the controller moves
//! the partition epoch on its own now and then, so proposals go stale.
//!
//! Checked after every step, on every broker that believes it leads (the deposed one included):
//! - its HW never moves back within its leader epoch, and HW ≤ LEO everywhere;
//! - every alive member of its ISR holds every offset below its HW, with the same batches
//!   (compared in full every few steps);
//! - no replica in the controller's ISR ever truncates below the highest HW exposed so far;
//! - an acks=-1 produce is acknowledged only when every member of the acking leader's ISR, every
//!   alive member of the controller's ISR and the controller's leader hold it (same bytes);
//! - every acknowledged batch stays in the current leader's log with the same bytes;
//! - a deposed leader that learnt the new epoch truncates by OffsetsForLeaderEpoch to a prefix of
//!   the new leader's log;
//! - an idempotent producer retrying its batch to whoever leads is never refused for its
//!   sequence by a current leader (the producer state is rebuilt on followers and after crashes).
//!
//! After quiescence (no faults, everything restarted, links healed): all replicas hold the same
//! batches byte for byte, the same HW, the full ISR, and every acknowledged batch; the idempotent
//! producer's sequences are in the log exactly once each, in order.

#[path = "simulation/controller.rs"]
mod controller;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use controller::{Controller, REPLICAS};
use josef_log::testing::TestBatch;
use josef_log::{BatchHeader, LogConfig};
use josef_partition::replication::NO_EPOCH;
use josef_partition::{
    AlterPartitionOutcome, AlterPartitionProposal, ClientBatch, CommittedPartitionState,
    EpochEndOffset, FetchIsolation, FetchResponseAction, FollowerFetch, FollowerFetchRequest,
    FollowerFetchResult, LeaderFetchAnswer, Partition, ReadParams, ReplicaId,
};
use josef_protocol::{ErrorCode, Uuid};
use josef_sequencer::ProducerStateConfig;

const MIN_ISR: i32 = 2;
const LAG_MS: i64 = 200;
const FETCH_TIMEOUT_MS: i64 = 80;
const PRODUCE_TIMEOUT_MS: i64 = 2_000;
/// A broker that got no AlterPartition answer in this long resends its pending change (Kafka's
/// AlterPartitionManager resends after a disconnect).
const ALTER_RETRY_MS: i64 = 100;
/// Logs of a leader and its ISR are compared in full every this many steps.
const FULL_CHECK_EVERY: u64 = 16;

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

#[derive(Clone)]
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
    /// OffsetsForLeaderEpoch from a follower that must truncate before it fetches.
    EpochQuery {
        to: ReplicaId,
        from: ReplicaId,
        seq: u64,
        current_leader_epoch: i32,
        leader_epoch: i32,
    },
    EpochAnswer {
        to: ReplicaId,
        seq: u64,
        result: Result<EpochEndOffset, ErrorCode>,
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

/// A follower's request in flight to its leader: a Fetch, or an OffsetsForLeaderEpoch.
#[derive(Clone, Copy)]
struct Inflight {
    seq: u64,
    at: i64,
    sent: FollowerFetchRequest,
}

struct Replica {
    id: ReplicaId,
    dir: PathBuf,
    partition: Option<Arc<Partition>>,
    inflight: Option<Inflight>,
    /// A slow follower fetches only this often (ms between fetches).
    slowness_ms: i64,
    last_fetch_sent: i64,
    /// The AlterPartition in flight (one at a time) and when it was sent.
    alter_inflight: Option<(i64, AlterPartitionProposal)>,
    /// When this broker next catches up with the controller's image (`None`: up to date).
    metadata_at: Option<i64>,
    /// Truncate by OffsetsForLeaderEpoch before fetching (set on learning a new leader epoch).
    truncating: bool,
    /// It led an epoch the controller replaced while it ran, and has not truncated since.
    deposed: bool,
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

/// What happened in a run, so the test can insist the faults it claims to cover did occur.
#[derive(Default, Debug, Clone, Copy)]
struct Counts {
    acks: u64,
    truncations: u64,
    crashes: u64,
    elections: u64,
    duplicates: u64,
    /// Leaders replaced while alive.
    deposals: u64,
    /// Produce requests appended by a leader that was already deposed.
    deposed_appends: u64,
    /// Deposed leaders that truncated by OffsetsForLeaderEpoch after learning the new epoch.
    deposed_truncations: u64,
    /// Followers that truncated by OffsetsForLeaderEpoch (deposed leaders included).
    epoch_truncations: u64,
    /// AlterPartition answers: FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION.
    fenced_alters: u64,
    stale_alters: u64,
    /// AlterPartition requests or responses lost, and duplicated.
    alters_lost: u64,
    alters_duplicated: u64,
}

struct Sim {
    rng: Rng,
    now: i64,
    steps: u64,
    _tmp: tempfile::TempDir,
    replicas: Vec<Replica>,
    controller: Controller,
    net: Vec<(i64, Msg)>,
    loss_per_mille: u64,
    alter_loss_per_mille: u64,
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
    counts: Counts,
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

/// The batches of `p` whose base offset is in `[from, below)`.
fn batches_in(p: &Partition, from: i64, below: i64) -> Vec<(i64, Bytes)> {
    p.batches_from(from)
        .unwrap()
        .into_iter()
        .filter(|(base, _)| *base >= from && *base < below)
        .collect()
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
                    alter_inflight: None,
                    metadata_at: Some(0),
                    truncating: false,
                    deposed: false,
                }
            })
            .collect();
        let mut sim = Sim {
            rng: Rng::seeded(seed),
            now: 1_000,
            steps: 0,
            _tmp: tmp,
            replicas,
            controller: Controller::new(),
            net: Vec::new(),
            loss_per_mille: 100,
            alter_loss_per_mille: 100,
            seq: 0,
            pending: Vec::new(),
            acked: BTreeMap::new(),
            leader_hw: BTreeMap::new(),
            exposed_hw: 0,
            acked_checked: None,
            idempotent: IdempotentProducer::default(),
            produced: 0,
            counts: Counts::default(),
        };
        sim.sync_metadata();
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

    /// The alive brokers that believe they lead, whatever the controller says.
    fn believers(&self) -> Vec<ReplicaId> {
        REPLICAS
            .iter()
            .copied()
            .filter(|&id| self.partition(id).is_some_and(|p| p.is_leader()))
            .collect()
    }

    /// The controller's image changed: each alive broker learns it a little later, in its own
    /// time; a broker cut off from the controller keeps its later date.
    fn publish(&mut self) {
        for i in 0..self.replicas.len() {
            if self.replicas[i].partition.is_none() || self.replicas[i].metadata_at.is_some() {
                continue;
            }
            let delay = self.rng.below(12) as i64;
            self.replicas[i].metadata_at = Some(self.now + delay);
        }
    }

    /// Brokers whose time came apply the controller's current image (Kafka's brokers apply the
    /// metadata log in order; the latest image is what matters to one partition). A fenced broker
    /// that hears from the controller again heartbeats and is unfenced.
    fn sync_metadata(&mut self) {
        let c = self.controller.clone();
        let fenced: Vec<ReplicaId> = c.fenced.iter().copied().collect();
        let mut heard_again = Vec::new();
        for i in 0..self.replicas.len() {
            let now = self.now;
            let r = &self.replicas[i];
            let Some(p) = r.partition.clone() else {
                continue;
            };
            if !r.metadata_at.is_some_and(|t| t <= now) {
                continue;
            }
            let id = r.id;
            let was_leader = p.is_leader();
            let coin = self.rng.chance(300);
            let r = &mut self.replicas[i];
            r.metadata_at = None;
            if id == c.leader {
                r.truncating = false;
                r.deposed = false;
                p.make_leader(
                    c.leader_epoch,
                    c.partition_epoch,
                    &c.isr,
                    &REPLICAS,
                    MIN_ISR,
                    now,
                )
                .unwrap();
                p.set_replica_lag_time_max_ms(LAG_MS);
                p.set_ineligible_replicas(&fenced, now);
            } else {
                let change = p.make_follower(c.leader, c.leader_epoch, c.partition_epoch);
                if change.new_leader_epoch || change.new_leader {
                    // The fetcher starts over for the new leader; a deposed leader (and some
                    // followers) first asks it where its epoch ends.
                    r.inflight = None;
                    if was_leader {
                        r.deposed = true;
                        r.truncating = true;
                    } else {
                        r.truncating = coin;
                    }
                }
            }
            if c.fenced.contains(&id) {
                heard_again.push(id);
            }
        }
        for id in heard_again {
            let before = self.controller.leader_epoch;
            self.controller.unfence(id);
            if self.controller.leader_epoch != before {
                self.counts.elections += 1;
            }
            self.publish();
        }
    }

    fn send(&mut self, msg: Msg) {
        if self.rng.chance(self.loss_per_mille) {
            return;
        }
        let delay = 1 + self.rng.below(30) as i64;
        self.net.push((self.now + delay, msg));
    }

    /// AlterPartition traffic: lost, duplicated, delayed and reordered.
    fn send_alter(&mut self, msg: Msg) {
        if self.rng.chance(self.alter_loss_per_mille) {
            self.counts.alters_lost += 1;
            return;
        }
        if self.rng.chance(self.alter_loss_per_mille) {
            self.counts.alters_duplicated += 1;
            let delay = 1 + self.rng.below(120) as i64;
            self.net.push((self.now + delay, msg.clone()));
        }
        let delay = 1 + self.rng.below(60) as i64;
        self.net.push((self.now + delay, msg));
    }

    fn crash(&mut self, id: ReplicaId) {
        let r = self.replica_mut(id);
        // kill -9: the partition goes away without a close; its files stay as written.
        r.partition = None;
        r.inflight = None;
        r.alter_inflight = None;
        r.metadata_at = None;
        r.truncating = false;
        r.deposed = false;
        self.counts.crashes += 1;
        let before = self.controller.leader_epoch;
        self.controller.fence(id);
        if self.controller.leader_epoch != before {
            self.counts.elections += 1;
        }
        self.publish();
    }

    fn restart(&mut self, id: ReplicaId) {
        let now = self.now;
        let r = self.replica_mut(id);
        let dir = r.dir.clone();
        r.partition = Some(Arc::new(open(&dir, id, now)));
        r.metadata_at = Some(now);
        let before = self.controller.leader_epoch;
        self.controller.unfence(id);
        if self.controller.leader_epoch != before {
            self.counts.elections += 1;
        }
        self.publish();
        self.sync_metadata();
    }

    /// The leader stops hearing from the controller (a long GC pause of its heartbeats, a cut
    /// link): its session expires, it is fenced and another ISR member elected, but it runs on
    /// as leader of the old epoch until it catches up, and so may some followers.
    fn depose(&mut self) {
        let now = self.now;
        let old = self.controller.leader;
        if old < 0
            || self.partition(old).is_none()
            || self.controller.fenced.contains(&old)
            || self.replica(old).metadata_at.is_some_and(|t| t > now)
        {
            return;
        }
        let cut = 150 + self.rng.below(1_200) as i64;
        self.replica_mut(old).metadata_at = Some(now + cut);
        for &id in &REPLICAS {
            if id != old && self.partition(id).is_some() && self.rng.chance(500) {
                let late = self.rng.below(cut as u64) as i64;
                self.replica_mut(id).metadata_at = Some(now + late);
            }
        }
        let before = self.controller.leader_epoch;
        self.controller.fence(old);
        if self.controller.leader_epoch != before {
            self.counts.elections += 1;
            self.counts.deposals += 1;
        }
        self.publish();
    }

    /// A client with its own (possibly old) metadata: it sends to any broker that answers as
    /// leader.
    fn pick_leader(&mut self) -> Option<ReplicaId> {
        let believers = self.believers();
        if believers.is_empty() {
            return None;
        }
        Some(believers[self.rng.below(believers.len() as u64) as usize])
    }

    fn is_deposed(&self, id: ReplicaId) -> bool {
        self.partition(id)
            .is_some_and(|p| p.leader_epoch() < self.controller.leader_epoch)
    }

    fn produce(&mut self) {
        let Some(leader) = self.pick_leader() else {
            return;
        };
        let p = self.partition(leader).unwrap();
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
            Ok(r) => {
                if self.is_deposed(leader) {
                    self.counts.deposed_appends += 1;
                }
                self.pending.push(Pending {
                    leader,
                    leader_epoch: epoch,
                    base_offset: r.base_offset,
                    required: r.last_offset + 1,
                    deadline: self.now + PRODUCE_TIMEOUT_MS,
                    idempotent_seq: None,
                })
            }
            Err(e) => {
                assert_eq!(e.code, ErrorCode::NotEnoughReplicas, "{e}");
                // Nothing written.
                assert_eq!(p.log_end_offset(), leo_before);
                assert!(p.isr().len() < MIN_ISR as usize);
            }
        }
    }

    /// The idempotent producer sends (or resends) its batch to a broker answering as leader.
    fn produce_idempotent(&mut self) {
        if self.idempotent.in_flight {
            return;
        }
        let Some(leader) = self.pick_leader() else {
            return;
        };
        let p = self.partition(leader).unwrap();
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
            // Retried later with the same sequence. A deposed leader never saw the batches the
            // new leader acknowledged, so it may find the sequence out of order; a current
            // leader refusing it is a bug in the producer state kept across failovers.
            Err(e) if e.code == ErrorCode::OutOfOrderSequenceNumber && self.is_deposed(leader) => {}
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

    /// An acks=-1 answer: the acking leader's ISR holds the batch, and so do the controller's
    /// leader and ISR (a deposed leader must not acknowledge what the new leader lacks).
    fn ack(&mut self, w: &Pending) {
        let leader = self.partition(w.leader).unwrap();
        let bytes = Self::batch_at(&leader, w.base_offset).expect("acked batch on the leader");
        let mut holders = leader.isr();
        holders.extend(self.controller.isr.iter().copied());
        holders.push(self.controller.leader);
        let deposed = self.is_deposed(w.leader);
        for id in holders {
            let Some(p) = self.partition(id) else {
                continue;
            };
            let held = Self::batch_at(&p, w.base_offset);
            assert_eq!(
                held.as_ref(),
                Some(&bytes),
                "acked offset {} (by {}leader {}) not held by {id} (controller: {:?})",
                w.base_offset,
                if deposed { "deposed " } else { "" },
                w.leader,
                self.controller,
            );
        }
        self.counts.acks += 1;
        self.acked.insert(w.base_offset, bytes);
    }

    fn follower_fetches(&mut self, max_bytes: i64) {
        for i in 0..self.replicas.len() {
            let id = self.replicas[i].id;
            let now = self.now;
            let r = &self.replicas[i];
            let Some(p) = r.partition.clone() else {
                continue;
            };
            let timed_out = r.inflight.is_some_and(|f| now - f.at > FETCH_TIMEOUT_MS);
            if (r.inflight.is_some() && !timed_out) || now - r.last_fetch_sent < r.slowness_ms {
                continue;
            }
            let Some(sent) = p.follower_fetch_request() else {
                continue;
            };
            self.seq += 1;
            let seq = self.seq;
            let r = &mut self.replicas[i];
            r.inflight = Some(Inflight { seq, at: now, sent });
            r.last_fetch_sent = now;
            if r.truncating && sent.last_fetched_epoch < 0 {
                r.truncating = false; // nothing to truncate
            }
            if r.truncating {
                self.send(Msg::EpochQuery {
                    to: sent.leader_id,
                    from: id,
                    seq,
                    current_leader_epoch: sent.current_leader_epoch,
                    leader_epoch: sent.last_fetched_epoch,
                });
                continue;
            }
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

    /// The follower `to` truncated from `before` to its current LEO: a member of the
    /// controller's ISR may never go below a HW some leader exposed.
    fn check_truncation(&mut self, to: ReplicaId, in_isr: bool, before: i64) {
        let p = self.partition(to).unwrap();
        let after = p.log_end_offset();
        if after < before {
            self.counts.truncations += 1;
            assert!(
                !in_isr || after >= self.exposed_hw,
                "ISR member {to} truncated to {after} below the exposed HW {}",
                self.exposed_hw
            );
        }
    }

    /// The in-flight request `seq` of `to`, taken out if it is the current one.
    fn take_inflight(
        &mut self,
        to: ReplicaId,
        seq: u64,
    ) -> Option<(FollowerFetchRequest, Arc<Partition>)> {
        let r = self.replica_mut(to);
        let f = r.inflight.filter(|f| f.seq == seq)?;
        r.inflight = None;
        Some((f.sent, r.partition.clone()?))
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
                let Some((sent, p)) = self.take_inflight(to, seq) else {
                    return; // not the fetch in flight (a retry replaced it)
                };
                let answer = LeaderFetchAnswer::from(result);
                let before = p.log_end_offset();
                match p.on_follower_fetch_response(&sent, answer, now).unwrap() {
                    FetchResponseAction::Truncated(_) => self.check_truncation(to, in_isr, before),
                    FetchResponseAction::OffsetOutOfRange => {
                        // ListOffsets to the leader, then Kafka's fetchOffsetAndTruncate.
                        let Some(l) = self.partition(sent.leader_id) else {
                            return;
                        };
                        let (latest, earliest) = { (l.log_end_offset(), l.log_start_offset()) };
                        p.on_offset_out_of_range(&sent, latest, earliest, now)
                            .unwrap();
                        let after = p.log_end_offset();
                        assert!(!in_isr || after >= self.exposed_hw.min(before));
                    }
                    _ => {}
                }
            }
            Msg::EpochQuery {
                to,
                from,
                seq,
                current_leader_epoch,
                leader_epoch,
            } => {
                let Some(p) = self.partition(to) else { return };
                let result = p.last_offset_for_leader_epoch(current_leader_epoch, leader_epoch);
                self.send(Msg::EpochAnswer {
                    to: from,
                    seq,
                    result,
                });
            }
            Msg::EpochAnswer { to, seq, result } => {
                let in_isr = self.controller.isr.contains(&to);
                let Some((sent, p)) = self.take_inflight(to, seq) else {
                    return;
                };
                let Ok(end) = result else {
                    return; // asked again at the next fetch
                };
                let (current, before) = {
                    let leo = p.log_end_offset();
                    let current = p.with_replication(|r| {
                        !r.is_leader()
                            && r.leader_id() == Some(sent.leader_id)
                            && r.leader_epoch() == sent.current_leader_epoch
                    });
                    (current && leo == sent.fetch_offset, leo)
                };
                if !current {
                    return;
                }
                let decision = p.truncate_on_divergence(end, now).unwrap();
                self.check_truncation(to, in_isr, before);
                if decision.completed {
                    self.counts.epoch_truncations += 1;
                    let r = self.replica_mut(to);
                    r.truncating = false;
                    if std::mem::take(&mut r.deposed) {
                        self.counts.deposed_truncations += 1;
                        self.check_prefix_of_leader(to, sent.leader_id);
                    }
                }
            }
            Msg::AlterPartition { proposal } => {
                let from = proposal.leader_id;
                let before = self.controller.partition_epoch;
                let result = self.controller.alter_partition(&proposal);
                match &result {
                    Err(ErrorCode::FencedLeaderEpoch) => self.counts.fenced_alters += 1,
                    Err(ErrorCode::InvalidUpdateVersion) => self.counts.stale_alters += 1,
                    _ => {}
                }
                if self.controller.partition_epoch != before {
                    self.publish();
                }
                self.send_alter(Msg::AlterPartitionResponse {
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
                if r.alter_inflight
                    .as_ref()
                    .is_some_and(|(_, p)| *p == proposal)
                {
                    r.alter_inflight = None;
                }
                let Some(p) = r.partition.clone() else { return };
                if let AlterPartitionOutcome::Resubmit(again) =
                    p.on_alter_partition_response(&proposal, result, now)
                {
                    self.propose(to, again);
                }
            }
        }
    }

    /// A deposed leader that finished truncating holds a prefix of its new leader's log.
    fn check_prefix_of_leader(&self, id: ReplicaId, leader: ReplicaId) {
        let (Some(p), Some(l)) = (self.partition(id), self.partition(leader)) else {
            return;
        };
        let (start, leo) = { (p.log_start_offset(), p.log_end_offset()) };
        assert_eq!(
            batches_in(&p, start, leo),
            batches_in(&l, start, leo),
            "deposed leader {id} truncated to {leo} but its log is no prefix of leader {leader}'s"
        );
    }

    fn propose(&mut self, leader: ReplicaId, proposal: AlterPartitionProposal) {
        let now = self.now;
        self.replica_mut(leader).alter_inflight = Some((now, proposal.clone()));
        self.send_alter(Msg::AlterPartition { proposal });
    }

    /// No answer to an AlterPartition for a while: the connection is taken as lost and the
    /// change still pending is sent again (a change settled by metadata meanwhile is not).
    fn resend_alters(&mut self) {
        for id in REPLICAS {
            let Some((at, sent)) = self.replica(id).alter_inflight.clone() else {
                continue;
            };
            if self.now - at <= ALTER_RETRY_MS {
                continue;
            }
            let pending = self.partition(id).and_then(|p| p.pending_alter_partition());
            if pending.as_ref() == Some(&sent) {
                self.propose(id, sent);
            } else {
                self.replica_mut(id).alter_inflight = None;
            }
        }
    }

    /// Every broker that believes it leads runs its ISR shrink task.
    fn shrink_isr(&mut self) {
        for leader in self.believers() {
            if self.replica(leader).alter_inflight.is_some() {
                continue;
            }
            let p = self.partition(leader).unwrap();
            if let Some(proposal) = p.maybe_shrink_isr(self.now) {
                self.propose(leader, proposal);
            }
        }
    }

    fn check(&mut self) {
        for r in &self.replicas {
            if let Some(p) = &r.partition {
                assert!(p.high_watermark() <= p.log_end_offset());
                assert!(p.isr().iter().all(|i| REPLICAS.contains(i)));
            }
        }
        assert!(!self.controller.isr.is_empty());
        let full = self.steps % FULL_CHECK_EVERY == 0;
        for leader in self.believers() {
            self.check_leader(leader, full);
        }
        // Every acknowledged batch on each new leader (checking on every step costs too much).
        let c = &self.controller;
        let Some(p) = self.partition(c.leader) else {
            return;
        };
        let epoch = {
            let Some(epoch) = p.leader_epoch_if_leader() else {
                return;
            };
            epoch
        };
        if self.acked_checked != Some((c.leader, epoch)) {
            self.acked_checked = Some((c.leader, epoch));
            for (&base, bytes) in &self.acked {
                assert_eq!(
                    Self::batch_at(&p, base).as_ref(),
                    Some(bytes),
                    "acked batch at {base} missing on leader {}",
                    c.leader
                );
            }
        }
    }

    /// The rules for one broker that believes it leads, deposed or not.
    fn check_leader(&mut self, leader: ReplicaId, full: bool) {
        let p = self.partition(leader).unwrap();
        let (hw, epoch, isr) = { (p.high_watermark(), p.leader_epoch(), p.isr()) };
        let last = self.leader_hw.entry((leader, epoch)).or_insert(hw);
        assert!(
            hw >= *last,
            "HW of leader {leader} went back in epoch {epoch}"
        );
        *last = hw;
        self.exposed_hw = self.exposed_hw.max(hw);
        for id in isr {
            let Some(f) = self.partition(id).filter(|_| id != leader) else {
                continue;
            };
            let (leo, start) = { (f.log_end_offset(), f.log_start_offset()) };
            assert!(
                leo >= hw,
                "ISR member {id} of leader {leader} has LEO {leo} below the HW {hw}"
            );
            if full {
                let start = start.max(p.log_start_offset());
                assert_eq!(
                    batches_in(&f, start, hw),
                    batches_in(&p, start, hw),
                    "ISR member {id} disagrees with leader {leader} below the HW {hw}"
                );
            }
        }
    }

    fn step(&mut self, faults: bool) {
        self.steps += 1;
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
            if self.rng.chance(6) {
                self.depose();
            }
            if self.rng.chance(5) {
                self.controller.bump_partition_epoch();
                self.publish();
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
        self.sync_metadata();
        let max_bytes = 100 + self.rng.below(400) as i64;
        self.follower_fetches(max_bytes);
        self.deliver();
        self.resend_alters();
        if self.rng.chance(100) {
            self.shrink_isr();
        }
        self.complete_produces();
        self.check();
    }

    fn quiesce(&mut self) {
        self.loss_per_mille = 0;
        self.alter_loss_per_mille = 0;
        for r in &mut self.replicas {
            r.slowness_ms = 0;
        }
        for id in REPLICAS {
            if self.partition(id).is_none() {
                self.restart(id);
            }
        }
        for _ in 0..4_000 {
            self.step(false);
            if self.settled() {
                break;
            }
        }
        assert!(self.settled(), "no quiescence: {}", self.describe());
    }

    /// The state of every broker, for failure messages.
    fn describe(&self) -> String {
        let mut out = format!(
            "{:?}, {} messages in flight",
            self.controller,
            self.net.len()
        );
        for r in &self.replicas {
            let Some(p) = &r.partition else {
                out += &format!("\n  {}: down", r.id);
                continue;
            };
            let (role, epoch, partition_epoch, isr_state) = p.with_replication(|r| {
                (
                    r.role(),
                    r.leader_epoch(),
                    r.partition_epoch(),
                    format!("{:?}", r.isr_state()),
                )
            });
            out += &format!(
                "\n  {}: {:?} epoch {} partition epoch {} LEO {} HW {} {} metadata_at {:?} \
                 truncating {} alter {:?}",
                r.id,
                role,
                epoch,
                partition_epoch,
                p.log_end_offset(),
                p.high_watermark(),
                isr_state,
                r.metadata_at,
                r.truncating,
                r.alter_inflight,
            );
        }
        out
    }

    fn settled(&self) -> bool {
        let c = &self.controller;
        if c.leader < 0
            || c.isr.len() != REPLICAS.len()
            || !self.net.is_empty()
            || self.believers() != [c.leader]
            || self
                .replicas
                .iter()
                .any(|r| r.metadata_at.is_some() || r.truncating)
        {
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
    sim.counts.duplicates = sim.idempotent.duplicates;
    sim
}

#[test]
fn replicas_converge_and_keep_every_acknowledged_write() {
    let seeds: u64 = std::env::var("SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let first: u64 = std::env::var("SIM_FIRST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut total = Counts::default();
    for seed in first..first + seeds {
        let c = std::panic::catch_unwind(|| run(seed, 1_200).counts)
            .unwrap_or_else(|e| panic!("seed {seed} failed: {}", panic_message(&e)));
        total.acks += c.acks;
        total.truncations += c.truncations;
        total.crashes += c.crashes;
        total.elections += c.elections;
        total.duplicates += c.duplicates;
        total.deposals += c.deposals;
        total.deposed_appends += c.deposed_appends;
        total.deposed_truncations += c.deposed_truncations;
        total.epoch_truncations += c.epoch_truncations;
        total.fenced_alters += c.fenced_alters;
        total.stale_alters += c.stale_alters;
        total.alters_lost += c.alters_lost;
        total.alters_duplicated += c.alters_duplicated;
    }
    eprintln!("seeds {first}..{}: {total:?}", first + seeds);
    // The faults must actually have happened for the run to mean something.
    let t = total;
    assert!(t.acks > 0 && t.crashes > 0 && t.elections > 0, "{t:?}");
    assert!(
        t.deposals > 0 && t.deposed_appends > 0 && t.deposed_truncations > 0,
        "{t:?}"
    );
    assert!(
        t.fenced_alters > 0 && t.stale_alters > 0 && t.alters_lost > 0 && t.alters_duplicated > 0,
        "{t:?}"
    );
}

fn panic_message(e: &Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}
