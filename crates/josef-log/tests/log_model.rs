//! Model-based test: random appends, reads, rolls, retention, DeleteRecords, truncations, high
//! watermark moves, clean reopens and crashes, run against the log and an in-memory model of its
//! segments; every observable result must be identical.

use bytes::Bytes;
use josef_log::testing::TestBatch;
use josef_log::{BatchHeader, Log, LogConfig, LogError, TimestampType};
use proptest::prelude::*;

const SEGMENT_BYTES: u32 = 1500;

fn config(retention_bytes: i64) -> LogConfig {
    LogConfig {
        segment_bytes: SEGMENT_BYTES,
        index_interval_bytes: 200,
        segment_index_bytes: 4096,
        retention_bytes,
        retention_ms: -1,
        ..LogConfig::default()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Append {
        records: usize,
        value_len: usize,
    },
    Read {
        at: u16,
        max_bytes: usize,
        min_one: bool,
        to_hw: bool,
    },
    Roll,
    SetHighWatermark {
        at: u16,
    },
    Retention {
        retention_bytes: i64,
    },
    DeleteRecords {
        at: u16,
    },
    Truncate {
        at: u16,
    },
    Reopen {
        clean: bool,
    },
    TimestampLookup {
        at: u16,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1usize..4, 0usize..300).prop_map(|(records, value_len)| Op::Append { records, value_len }),
        4 => (any::<u16>(), 1usize..2000, any::<bool>(), any::<bool>())
            .prop_map(|(at, max_bytes, min_one, to_hw)| Op::Read { at, max_bytes, min_one, to_hw }),
        1 => Just(Op::Roll),
        2 => any::<u16>().prop_map(|at| Op::SetHighWatermark { at }),
        1 => (0i64..6000).prop_map(|retention_bytes| Op::Retention { retention_bytes }),
        1 => any::<u16>().prop_map(|at| Op::DeleteRecords { at }),
        1 => any::<u16>().prop_map(|at| Op::Truncate { at }),
        1 => any::<bool>().prop_map(|clean| Op::Reopen { clean }),
        1 => any::<u16>().prop_map(|at| Op::TimestampLookup { at }),
    ]
}

#[derive(Debug, Clone)]
struct MBatch {
    base: i64,
    last: i64,
    ts: i64,
    bytes: Bytes,
}

#[derive(Debug, Clone)]
struct MSegment {
    base: i64,
    batches: Vec<MBatch>,
}

impl MSegment {
    fn size(&self) -> usize {
        self.batches.iter().map(|b| b.bytes.len()).sum()
    }
}

#[derive(Debug)]
struct Model {
    segments: Vec<MSegment>,
    log_start: i64,
    leo: i64,
    hw: i64,
}

impl Model {
    fn new() -> Self {
        Model {
            segments: vec![MSegment {
                base: 0,
                batches: vec![],
            }],
            log_start: 0,
            leo: 0,
            hw: 0,
        }
    }

    fn pick(&self, at: u16, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        lo + i64::from(at) % (hi - lo + 1)
    }

    fn append(&mut self, bytes: Bytes, ts: i64) {
        let h = BatchHeader::parse(&bytes).unwrap();
        let active = self.segments.last().unwrap();
        if active.size() + bytes.len() > SEGMENT_BYTES as usize {
            self.segments.push(MSegment {
                base: self.leo,
                batches: vec![],
            });
        }
        self.segments.last_mut().unwrap().batches.push(MBatch {
            base: h.base_offset,
            last: h.last_offset(),
            ts,
            bytes,
        });
        self.leo = h.next_offset();
    }

    fn roll(&mut self) {
        let active = self.segments.last().unwrap();
        if active.base == self.leo && active.batches.is_empty() {
            return;
        }
        self.segments.push(MSegment {
            base: self.leo,
            batches: vec![],
        });
    }

    /// Kafka's read: whole batches of the segment holding the first batch with `last >= start`.
    fn read(&self, start: i64, max_bytes: usize, bound: i64, min_one: bool) -> Result<Vec<u8>, ()> {
        if start < self.log_start || start > self.leo {
            return Err(());
        }
        let bound = bound.min(self.leo);
        if start >= bound {
            return Ok(vec![]);
        }
        for seg in &self.segments {
            let Some(i) = seg.batches.iter().position(|b| b.last >= start) else {
                continue;
            };
            let mut out = Vec::new();
            for (n, b) in seg.batches[i..].iter().enumerate() {
                // Reads stop before the batch holding the bound.
                if b.last >= bound {
                    break;
                }
                let fits = out.len() + b.bytes.len() <= max_bytes;
                if !(fits || (n == 0 && min_one)) {
                    break;
                }
                out.extend_from_slice(&b.bytes);
            }
            return Ok(out);
        }
        Ok(vec![])
    }

    fn delete_prefix_segments(&mut self, mut pred: impl FnMut(&MSegment, i64, i64) -> bool) {
        loop {
            if self.segments.len() < 2 {
                break;
            }
            let next_base = self.segments[1].base;
            if next_base > self.hw || !pred(&self.segments[0], next_base, self.log_start) {
                break;
            }
            self.segments.remove(0);
            self.log_start = self.log_start.max(self.segments[0].base);
        }
    }

    fn retention(&mut self, retention_bytes: i64) {
        self.delete_prefix_segments(|s, next, lso| next <= lso && s.base < lso);
        let total: i64 = self.segments.iter().map(|s| s.size() as i64).sum();
        let mut excess = total - retention_bytes;
        self.delete_prefix_segments(|s, _, _| {
            if excess - s.size() as i64 >= 0 {
                excess -= s.size() as i64;
                true
            } else {
                false
            }
        });
    }

    fn delete_records(&mut self, offset: i64) {
        if offset > self.log_start {
            self.log_start = offset;
            self.delete_prefix_segments(|_, next, lso| next <= lso);
        }
    }

    fn truncate(&mut self, offset: i64) {
        if offset >= self.leo {
            return;
        }
        if offset < self.log_start {
            self.segments = vec![MSegment {
                base: offset,
                batches: vec![],
            }];
            self.log_start = offset;
            self.leo = offset;
            self.hw = offset;
            return;
        }
        self.segments.retain(|s| s.base <= offset);
        let seg = self.segments.last_mut().unwrap();
        let mut new_leo = offset;
        if let Some(i) = seg.batches.iter().position(|b| b.last >= offset) {
            new_leo = new_leo.min(seg.batches[i].base);
            seg.batches.truncate(i);
        }
        if new_leo < self.log_start {
            let start = self.log_start;
            self.segments = vec![MSegment {
                base: start,
                batches: vec![],
            }];
            self.leo = start;
            self.hw = start;
            return;
        }
        self.leo = new_leo;
        self.hw = self.hw.min(self.leo);
    }

    fn timestamp_lookup(&self, ts: i64) -> Option<(i64, i64)> {
        for seg in &self.segments {
            let max = seg.batches.iter().map(|b| b.ts).max();
            if max.is_some_and(|m| m >= ts) {
                return seg
                    .batches
                    .iter()
                    .find(|b| b.ts >= ts && b.last >= self.log_start)
                    .map(|b| (b.base.max(self.log_start), b.ts));
            }
        }
        None
    }
}

fn tempdir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(t) = tempfile::tempdir_in(shm) {
            return t;
        }
    }
    tempfile::tempdir().unwrap()
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let tmp = tempdir();
    let dir = tmp.path().join("m-0");
    let mut retention_bytes = -1;
    let mut log = Some(Log::open(&dir, config(retention_bytes), 0).unwrap());
    let mut m = Model::new();
    let mut ts = 1_000i64;
    for (step, op) in ops.into_iter().enumerate() {
        let l = log.as_mut().unwrap();
        match op {
            Op::Append { records, value_len } => {
                ts += 7;
                let v = vec![b'v'; value_len];
                let mut b = TestBatch::new(0);
                for _ in 0..records {
                    b = b.record(ts, Some(b"key"), Some(&v));
                }
                let info = l
                    .append_as_leader(b.build(), 0, ts, TimestampType::CreateTime)
                    .unwrap();
                prop_assert_eq!(info.first_offset, m.leo);
                m.append(info.records, ts);
            }
            Op::Read {
                at,
                max_bytes,
                min_one,
                to_hw,
            } => {
                let start = m.pick(at, m.log_start.saturating_sub(1), m.leo + 1);
                let bound = if to_hw { m.hw } else { m.leo };
                let got = l.read(start, max_bytes, bound, min_one);
                let want = m.read(start, max_bytes, bound, min_one);
                match (got, want) {
                    (Ok(g), Ok(w)) => {
                        prop_assert!(g.records[..] == w[..], "step {step}: read {start}")
                    }
                    (Err(LogError::OffsetOutOfRange { .. }), Err(())) => {}
                    (g, w) => prop_assert!(false, "step {step}: read {start}: {g:?} vs {w:?}"),
                }
            }
            Op::Roll => {
                l.roll(0, ts).unwrap();
                m.roll();
            }
            Op::SetHighWatermark { at } => {
                let hw = m.pick(at, m.log_start, m.leo);
                m.hw = l.update_high_watermark(hw);
                prop_assert_eq!(m.hw, hw);
            }
            Op::Retention { retention_bytes: r } => {
                retention_bytes = r;
                l.set_config(config(r)).unwrap();
                l.delete_old_segments(ts).unwrap();
                m.retention(r);
            }
            Op::DeleteRecords { at } => {
                let o = m.pick(at, m.log_start, m.hw);
                l.delete_records_before(o).unwrap();
                m.delete_records(o);
            }
            Op::Truncate { at } => {
                let o = m.pick(at, m.log_start, m.leo);
                l.truncate_to(o, ts).unwrap();
                m.truncate(o);
            }
            Op::Reopen { clean } => {
                let old = log.take().unwrap();
                if clean {
                    old.close().unwrap();
                } else {
                    drop(old);
                }
                let reopened = Log::open(&dir, config(retention_bytes), ts).unwrap();
                // A reopened standalone log starts with HW = LEO.
                m.hw = m.leo;
                log = Some(reopened);
            }
            Op::TimestampLookup { at } => {
                let target = m.pick(at, 990, ts + 10);
                let got = l
                    .fetch_offset_by_timestamp(target)
                    .unwrap()
                    .map(|t| (t.offset, t.timestamp));
                prop_assert_eq!(
                    got,
                    m.timestamp_lookup(target),
                    "step {}: ts {}",
                    step,
                    target
                );
            }
        }
        let l = log.as_ref().unwrap();
        prop_assert_eq!(l.log_end_offset(), m.leo, "step {}: LEO", step);
        prop_assert_eq!(
            l.log_start_offset(),
            m.log_start,
            "step {}: log start",
            step
        );
        prop_assert_eq!(l.high_watermark(), m.hw, "step {}: HW", step);
        let bases: Vec<i64> = m.segments.iter().map(|s| s.base).collect();
        prop_assert_eq!(l.segment_base_offsets(), bases, "step {}: segments", step);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn log_matches_its_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(ops)?;
    }
}
