//! Model-based test of transactions on one partition: interleaved transactional and
//! non-transactional batches of several producers, COMMIT/ABORT markers from coordinators
//! with changing epochs, and a moving high watermark. After every step the table's LSO,
//! first undecided offset and every outcome (including INVALID_TXN_STATE = 48 and
//! TRANSACTION_COORDINATOR_FENCED = 52) are compared with a brute-force model.

use std::collections::BTreeMap;

use josef_sequencer::*;
use proptest::prelude::*;

const PRODUCERS: usize = 4;

#[derive(Debug, Clone)]
enum Op {
    TxnBatch {
        p: usize,
        count: i32,
    },
    PlainBatch {
        p: usize,
    },
    Marker {
        p: usize,
        abort: bool,
        coordinator_delta: i32,
    },
    AdvanceHw {
        by: i64,
        tell_table: bool,
    },
    NonIdempotentBatch,
}

fn op() -> impl Strategy<Value = Op> {
    let p = 0..PRODUCERS;
    prop_oneof![
        5 => (p.clone(), 1..=3i32).prop_map(|(p, count)| Op::TxnBatch { p, count }),
        2 => p.clone().prop_map(|p| Op::PlainBatch { p }),
        3 => (p, any::<bool>(), -1..=1i32)
            .prop_map(|(p, abort, coordinator_delta)| Op::Marker { p, abort, coordinator_delta }),
        3 => (0..6i64, any::<bool>()).prop_map(|(by, tell_table)| Op::AdvanceHw { by, tell_table }),
        1 => Just(Op::NonIdempotentBatch),
    ]
}

#[derive(Default)]
struct Model {
    next_offset: i64,
    hw: i64,
    next_seq: [i32; PRODUCERS],
    coordinator_epoch: [i32; PRODUCERS],
    /// producer index → first offset of its open transaction.
    open: BTreeMap<usize, i64>,
    /// (first offset, marker offset) of completed transactions.
    completed: Vec<(i64, i64)>,
}

fn pid(p: usize) -> i64 {
    500 + p as i64
}

impl Model {
    fn lso(&self) -> i64 {
        let open = self.open.values().copied();
        let unreplicated = self
            .completed
            .iter()
            .filter(|(_, marker)| *marker >= self.hw)
            .map(|(first, _)| *first);
        open.chain(unreplicated)
            .min()
            .map_or(self.hw, |f| f.min(self.hw))
    }

    fn take(&mut self, n: i64) -> (i64, i64) {
        let first = self.next_offset;
        self.next_offset += n;
        (first, self.next_offset - 1)
    }
}

fn run(ops: &[Op]) {
    let mut t = ProducerStateTable::new(ProducerStateConfig::default());
    let mut m = Model {
        coordinator_epoch: [-1; PRODUCERS],
        ..Model::default()
    };
    for op in ops {
        match *op {
            Op::TxnBatch { p, count } => {
                let b = BatchInfo::transactional(pid(p), 0, m.next_seq[p], count);
                let Ok(Validation::Append(plan)) = t.validate(&b) else {
                    panic!("in-order transactional batch refused: {b:?}")
                };
                let (first, last) = m.take(i64::from(count));
                t.commit(plan.with_offsets(first, last, first));
                m.next_seq[p] = increment_sequence(m.next_seq[p], count);
                m.open.entry(p).or_insert(first);
            }
            Op::PlainBatch { p } => {
                let b = BatchInfo::idempotent(pid(p), 0, m.next_seq[p], 1);
                match (t.validate(&b), m.open.get(&p)) {
                    (Err(e), Some(&first)) => assert_eq!(
                        e,
                        SequenceError::InvalidTxnState {
                            producer_id: pid(p),
                            txn_first_offset: first
                        }
                    ),
                    (Ok(Validation::Append(plan)), None) => {
                        let (first, last) = m.take(1);
                        t.commit(plan.with_offsets(first, last, first));
                        m.next_seq[p] = increment_sequence(m.next_seq[p], 1);
                    }
                    (r, open) => panic!("plain batch: got {r:?}, open txn {open:?}"),
                }
            }
            Op::Marker {
                p,
                abort,
                coordinator_delta,
            } => {
                let ce = m.coordinator_epoch[p].max(0) + coordinator_delta;
                let kind = if abort {
                    ControlType::Abort
                } else {
                    ControlType::Commit
                };
                let marker = EndTxnMarker::new(pid(p), 0, kind, ce);
                match t.validate_marker(&marker) {
                    Err(e) => {
                        assert!(ce < m.coordinator_epoch[p], "marker refused: {e}");
                        assert_eq!(e.kafka_error_code(), codes::TRANSACTION_COORDINATOR_FENCED);
                    }
                    Ok(plan) => {
                        assert!(ce >= m.coordinator_epoch[p]);
                        let (off, _) = m.take(1);
                        let done = t.commit_marker(plan.with_offset(off, off));
                        m.coordinator_epoch[p] = ce;
                        match m.open.remove(&p) {
                            Some(first) => {
                                let next_other = m.open.values().copied().min();
                                assert_eq!(
                                    done,
                                    Some(CompletedTxn {
                                        producer_id: pid(p),
                                        first_offset: first,
                                        last_offset: off,
                                        is_aborted: abort,
                                        last_stable_offset: next_other.unwrap_or(off + 1),
                                    })
                                );
                                m.completed.push((first, off));
                            }
                            None => assert_eq!(done, None),
                        }
                    }
                }
            }
            Op::AdvanceHw { by, tell_table } => {
                m.hw = (m.hw + by).min(m.next_offset);
                if tell_table {
                    t.on_high_watermark_updated(m.hw);
                }
            }
            Op::NonIdempotentBatch => {
                let b = BatchInfo::idempotent(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE, 2);
                let Ok(Validation::Append(plan)) = t.validate(&b) else {
                    panic!("plain batch refused")
                };
                let (first, last) = m.take(2);
                t.commit(plan.with_offsets(first, last, first));
            }
        }
        assert_eq!(t.last_stable_offset(m.hw), m.lso(), "after {op:?}");
        assert_eq!(t.first_undecided_offset(), m.open.values().copied().min());
        assert_eq!(t.map_end_offset(), m.next_offset);
        // A producer with an open transaction never expires.
        let mut copy = t.clone();
        copy.remove_expired_producers(i64::MAX);
        assert_eq!(copy.len(), m.open.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn last_stable_offset_and_txn_outcomes_match_the_model(
        ops in proptest::collection::vec(op(), 1..150),
    ) {
        run(&ops);
    }
}
