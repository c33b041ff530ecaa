//! Model-based test: simulated idempotent producers whose batches the network retries,
//! reorders and duplicates (up to five in flight), with epoch bumps, zombie batches from old
//! epochs, and broker restarts from snapshots (sometimes corrupt) plus log replay.
//!
//! Checked:
//! - every outcome equals what an independent model derived from the log predicts (Kafka's
//!   rules: duplicate among the remembered batches, INVALID_PRODUCER_EPOCH = 47,
//!   OUT_OF_ORDER_SEQUENCE_NUMBER = 45, otherwise appended);
//! - a duplicate is answered with the original offsets;
//! - per producer and epoch, the log holds exactly a prefix of the producer's batches, in
//!   order, each once; every acknowledged batch is in the log;
//! - after a final in-order flush, the log holds all of the producer's current-epoch batches.

use josef_sequencer::*;
use proptest::prelude::*;

const PRODUCERS: usize = 3;
const MAX_IN_FLIGHT: usize = 5;

#[derive(Debug, Clone)]
enum Op {
    NewBatch { p: usize, count: i32 },
    Deliver { p: usize, k: usize },
    DeliverZombie { p: usize, k: usize },
    BumpEpoch { p: usize },
    TakeSnapshot,
    Restart,
    RestartWithCorruptSnapshot { byte: usize },
}

fn op() -> impl Strategy<Value = Op> {
    let p = 0..PRODUCERS;
    prop_oneof![
        4 => (p.clone(), 1..=4i32).prop_map(|(p, count)| Op::NewBatch { p, count }),
        8 => (p.clone(), 0..8usize).prop_map(|(p, k)| Op::Deliver { p, k }),
        1 => (p.clone(), 0..16usize).prop_map(|(p, k)| Op::DeliverZombie { p, k }),
        1 => p.prop_map(|p| Op::BumpEpoch { p }),
        1 => Just(Op::TakeSnapshot),
        1 => Just(Op::Restart),
        1 => (0..200usize).prop_map(|byte| Op::RestartWithCorruptSnapshot { byte }),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct SimBatch {
    pid: i64,
    epoch: i16,
    base: i32,
    count: i32,
}

impl SimBatch {
    fn info(&self) -> BatchInfo {
        BatchInfo::idempotent(self.pid, self.epoch, self.base, self.count)
    }
    fn last(&self) -> i32 {
        self.info().last_sequence
    }
}

#[derive(Debug)]
struct Producer {
    pid: i64,
    epoch: i16,
    next_seq: i32,
    /// Every batch ever created, all epochs, in creation order.
    created: Vec<SimBatch>,
    /// Indexes into `created` of batches acknowledged to the producer.
    acked: Vec<bool>,
}

impl Producer {
    fn current_epoch_batches(&self) -> Vec<usize> {
        (0..self.created.len())
            .filter(|&i| self.created[i].epoch == self.epoch)
            .collect()
    }
    fn unacked_in_epoch(&self) -> usize {
        self.current_epoch_batches()
            .into_iter()
            .filter(|&i| !self.acked[i])
            .count()
    }
}

#[derive(Debug, Clone, Copy)]
struct Logged {
    batch: SimBatch,
    first_offset: i64,
    last_offset: i64,
}

struct Sim {
    table: ProducerStateTable,
    log: Vec<Logged>,
    next_offset: i64,
    producers: Vec<Producer>,
    /// (bytes, log length at the snapshot, map end offset).
    snapshot: Option<(Vec<u8>, usize, i64)>,
    /// Log position of the snapshot the table was last rebuilt from (0: full replay).
    restart_pos: usize,
}

#[derive(Debug, PartialEq)]
enum Expected {
    Append,
    Duplicate { first_offset: i64, last_offset: i64 },
    Error(i16),
}

impl Sim {
    fn new(initial_seqs: [i32; PRODUCERS]) -> Self {
        Sim {
            table: ProducerStateTable::new(ProducerStateConfig::default()),
            log: Vec::new(),
            next_offset: 0,
            producers: (0..PRODUCERS)
                .map(|i| Producer {
                    pid: 100 + i as i64,
                    epoch: 0,
                    next_seq: initial_seqs[i],
                    created: Vec::new(),
                    acked: Vec::new(),
                })
                .collect(),
            snapshot: None,
            restart_pos: 0,
        }
    }

    /// What the broker remembers of `pid`, derived only from the log: its batches, whether
    /// before the snapshot the table was rebuilt from (a snapshot keeps every remembered batch,
    /// not only the newest as Kafka's does) or after it; a new epoch forgets older batches; at
    /// most five are kept.
    fn remembered(&self, pid: i64) -> Option<(i16, Vec<Logged>)> {
        let mut known: Vec<Logged> = self.log[..self.restart_pos]
            .iter()
            .filter(|l| l.batch.pid == pid)
            .copied()
            .collect();
        known.extend(
            self.log[self.restart_pos..]
                .iter()
                .filter(|l| l.batch.pid == pid)
                .copied(),
        );
        let epoch = known.last()?.batch.epoch;
        let mut same: Vec<Logged> = known
            .into_iter()
            .filter(|l| l.batch.epoch == epoch)
            .collect();
        let drop = same.len().saturating_sub(NUM_BATCHES_TO_RETAIN);
        same.drain(..drop);
        Some((epoch, same))
    }

    fn expect(&self, b: &SimBatch) -> Expected {
        let Some((epoch, window)) = self.remembered(b.pid) else {
            return Expected::Append; // unknown producer: any sequence
        };
        if let Some(d) = window.iter().find(|l| {
            l.batch.epoch == b.epoch && l.batch.base == b.base && l.batch.last() == b.last()
        }) {
            return Expected::Duplicate {
                first_offset: d.first_offset,
                last_offset: d.last_offset,
            };
        }
        if b.epoch < epoch {
            return Expected::Error(codes::INVALID_PRODUCER_EPOCH);
        }
        if b.epoch != epoch {
            return if b.base == 0 {
                Expected::Append
            } else {
                Expected::Error(codes::OUT_OF_ORDER_SEQUENCE_NUMBER)
            };
        }
        let last = window
            .last()
            .expect("same-epoch window is non-empty")
            .batch
            .last();
        if b.base == increment_sequence(last, 1) {
            Expected::Append
        } else {
            Expected::Error(codes::OUT_OF_ORDER_SEQUENCE_NUMBER)
        }
    }

    /// Sends batch `idx` of producer `p`; returns the outcome seen by the producer.
    fn deliver(&mut self, p: usize, idx: usize) -> Expected {
        let b = self.producers[p].created[idx];
        let expected = self.expect(&b);
        let got = match self.table.validate(&b.info()) {
            Ok(Validation::Append(plan)) => {
                let first = self.next_offset;
                let last = first + i64::from(b.count) - 1;
                self.table.commit(plan.with_offsets(first, last, first));
                self.log.push(Logged {
                    batch: b,
                    first_offset: first,
                    last_offset: last,
                });
                self.next_offset = last + 1;
                self.producers[p].acked[idx] = true;
                Expected::Append
            }
            Ok(Validation::Duplicate {
                first_offset,
                last_offset,
                timestamp,
            }) => {
                assert_eq!(
                    timestamp, first_offset,
                    "duplicate carries the original timestamp"
                );
                self.producers[p].acked[idx] = true;
                Expected::Duplicate {
                    first_offset,
                    last_offset,
                }
            }
            Err(e) => Expected::Error(e.kafka_error_code()),
        };
        assert_eq!(got, expected, "batch {b:?}");
        got
    }

    fn rebuild(&mut self, from_snapshot: Option<(Vec<u8>, usize, i64)>) {
        let cfg = ProducerStateConfig::default();
        match from_snapshot {
            Some((bytes, pos, map_end)) => {
                self.table = ProducerStateTable::from_snapshot(cfg, &bytes, map_end, 0)
                    .expect("intact snapshot decodes");
                self.restart_pos = pos;
            }
            None => {
                self.table = ProducerStateTable::new(cfg);
                self.restart_pos = 0;
            }
        }
        for l in &self.log[self.restart_pos..] {
            self.table.replay(&l.batch.info().with_offsets(
                l.first_offset,
                l.last_offset,
                l.first_offset,
            ));
        }
        assert_eq!(self.table.map_end_offset(), self.next_offset);
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::NewBatch { p, count } => {
                let pr = &mut self.producers[p];
                if pr.unacked_in_epoch() < MAX_IN_FLIGHT {
                    pr.created.push(SimBatch {
                        pid: pr.pid,
                        epoch: pr.epoch,
                        base: pr.next_seq,
                        count,
                    });
                    pr.acked.push(false);
                    pr.next_seq = increment_sequence(pr.next_seq, count);
                }
            }
            Op::Deliver { p, k } => {
                // Any of the last five batches of the epoch: unacked ones (retries, reordering)
                // and acked ones (network duplicates).
                let cur = self.producers[p].current_epoch_batches();
                let mut window = &cur[cur.len().saturating_sub(MAX_IN_FLIGHT)..];
                if self.remembered(self.producers[p].pid).is_none() {
                    // The broker accepts any sequence from a producer it knows nothing about
                    // (Kafka before KIP-890 part 2), so a reordered first batch would be
                    // logged ahead of its predecessors. Real clients hit this only when the
                    // very first batch of a new producer id is retried behind a later one;
                    // the simulation sends a new producer's first batch alone.
                    let first_unacked = window.iter().position(|&i| !self.producers[p].acked[i]);
                    window = match first_unacked {
                        Some(f) => &window[f..=f],
                        None => &[],
                    };
                }
                if !window.is_empty() {
                    let idx = window[k % window.len()];
                    self.deliver(p, idx);
                }
            }
            Op::DeliverZombie { p, k } => {
                let pr = &self.producers[p];
                let old: Vec<usize> = (0..pr.created.len())
                    .filter(|&i| pr.created[i].epoch < pr.epoch)
                    .collect();
                // Same caveat as above: zombies only reach a broker that knows the producer.
                if !old.is_empty() && self.remembered(pr.pid).is_some() {
                    let idx = old[k % old.len()];
                    self.deliver(p, idx);
                }
            }
            Op::BumpEpoch { p } => {
                let pr = &mut self.producers[p];
                pr.epoch += 1;
                pr.next_seq = 0;
            }
            Op::TakeSnapshot => {
                self.snapshot = Some((
                    self.table.encode_snapshot(),
                    self.log.len(),
                    self.table.map_end_offset(),
                ));
            }
            Op::Restart => {
                let snap = self.snapshot.clone();
                self.rebuild(snap);
            }
            Op::RestartWithCorruptSnapshot { byte } => {
                if let Some((bytes, _, map_end)) = &self.snapshot {
                    let mut bad = bytes.clone();
                    let i = byte % bad.len();
                    bad[i] ^= 0x5a;
                    let r = ProducerStateTable::from_snapshot(
                        ProducerStateConfig::default(),
                        &bad,
                        *map_end,
                        0,
                    );
                    assert!(r.is_err(), "a flipped byte is always detected");
                    // The caller drops the snapshot and rebuilds from the whole log.
                    self.snapshot = None;
                    self.rebuild(None);
                }
            }
        }
    }

    fn check_log(&self) {
        for pr in &self.producers {
            let mut epochs: Vec<i16> = pr.created.iter().map(|b| b.epoch).collect();
            epochs.dedup();
            for e in epochs {
                let created: Vec<SimBatch> = pr
                    .created
                    .iter()
                    .filter(|b| b.epoch == e)
                    .copied()
                    .collect();
                let logged: Vec<SimBatch> = self
                    .log
                    .iter()
                    .filter(|l| l.batch.pid == pr.pid && l.batch.epoch == e)
                    .map(|l| l.batch)
                    .collect();
                assert!(logged.len() <= created.len());
                assert_eq!(
                    logged,
                    created[..logged.len()],
                    "producer {} epoch {e}: log is not an in-order prefix",
                    pr.pid
                );
            }
            for (i, b) in pr.created.iter().enumerate() {
                if pr.acked[i] {
                    assert!(
                        self.log.iter().any(|l| l.batch == *b),
                        "acked batch {b:?} missing from the log"
                    );
                }
            }
        }
    }

    /// Delivers every unacked current-epoch batch in order, as a client does when the
    /// network heals.
    fn flush(&mut self) {
        for p in 0..PRODUCERS {
            for idx in self.producers[p].current_epoch_batches() {
                if self.producers[p].acked[idx] {
                    continue;
                }
                let b = self.producers[p].created[idx];
                match self.deliver(p, idx) {
                    Expected::Append | Expected::Duplicate { .. } => {}
                    Expected::Error(code) => {
                        // Only a retry the broker can no longer recognise (its snapshot keeps
                        // just the newest batch, as Kafka's does) may be refused here, and then
                        // the batch is already in the log.
                        assert_eq!(code, codes::OUT_OF_ORDER_SEQUENCE_NUMBER);
                        assert!(
                            self.log.iter().any(|l| l.batch == b),
                            "in-order flush refused a batch that is not in the log: {b:?}"
                        );
                        self.producers[p].acked[idx] = true;
                    }
                }
            }
            let pr = &self.producers[p];
            let want: Vec<SimBatch> = pr
                .current_epoch_batches()
                .into_iter()
                .map(|i| pr.created[i])
                .collect();
            let got: Vec<SimBatch> = self
                .log
                .iter()
                .filter(|l| l.batch.pid == pr.pid && l.batch.epoch == pr.epoch)
                .map(|l| l.batch)
                .collect();
            assert_eq!(
                got, want,
                "after the flush the epoch's batches are all logged once"
            );
        }
    }
}

fn initial_seq() -> impl Strategy<Value = i32> {
    prop_oneof![Just(0), Just(i32::MAX - 6), 0..=i32::MAX]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn retried_reordered_duplicated_batches_are_logged_exactly_once_in_order(
        seqs in [initial_seq(), initial_seq(), initial_seq()],
        ops in proptest::collection::vec(op(), 1..250),
    ) {
        let mut sim = Sim::new(seqs);
        for op in &ops {
            sim.apply(op);
            sim.check_log();
        }
        sim.flush();
        sim.check_log();
        // A final restart from a fresh snapshot plus nothing to replay keeps the state.
        let before = sim.table.encode_snapshot();
        sim.apply(&Op::TakeSnapshot);
        sim.apply(&Op::Restart);
        prop_assert_eq!(sim.table.encode_snapshot(), before);
    }
}
