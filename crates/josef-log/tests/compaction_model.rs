//! Compaction against a model: random puts and tombstones over a few keys, compactions at random
//! times. After every run, below the cleaner checkpoint each key appears at most once and only as
//! its latest record there, the latest value of every key is still readable, offsets and the LEO
//! are unchanged, and a reopen reads the same records.

use std::collections::BTreeMap;

use josef_log::testing::TestBatch;
use josef_log::{CleanupPolicy, Log, LogConfig, TimestampType};
use josef_records::{Batches, DecompressLimits};
use proptest::prelude::*;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 400,
        index_interval_bytes: 100,
        segment_index_bytes: 1024,
        cleanup_policy: CleanupPolicy::Compact,
        delete_retention_ms: 50,
        min_cleanable_dirty_ratio_percent: 30,
        retention_ms: -1,
        ..LogConfig::default()
    }
}

/// (offset, key, value) of every record of the log.
fn records(log: &Log) -> Vec<(i64, u8, Option<u8>)> {
    let leo = log.log_end_offset();
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    while next < leo {
        let r = log.read(next, 1 << 20, leo, true).unwrap();
        if r.records.is_empty() {
            break;
        }
        for b in Batches::new(r.records.clone()) {
            let b = b.unwrap();
            b.validate_crc().unwrap();
            next = b.header().next_offset();
            for rec in b.records(&DecompressLimits::default()).unwrap() {
                let rec = rec.unwrap();
                let key = rec.key.unwrap()[0];
                out.push((rec.offset, key, rec.value.map(|v| v[0])));
            }
        }
    }
    out
}

#[derive(Debug, Clone)]
enum Op {
    Put(u8, Option<u8>),
    Compact(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u8..6, proptest::option::weighted(0.8, any::<u8>())).prop_map(|(k, v)| Op::Put(k, v)),
        1 => (0u8..100).prop_map(Op::Compact),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn compaction_matches_the_latest_per_key_model(ops in proptest::collection::vec(op(), 1..80)) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("m-0");
        let mut log = Log::open(&dir, config(), 0).unwrap();
        // Everything ever written: offset -> (key, value).
        let mut written: BTreeMap<i64, (u8, Option<u8>)> = BTreeMap::new();
        let mut now = 0i64;
        for op in ops {
            match op {
                Op::Put(k, v) => {
                    now += 1;
                    let b = TestBatch::new(0)
                        .record(now, Some(&[k]), v.as_ref().map(std::slice::from_ref))
                        .build();
                    let info = log.append_as_leader(b, 0, now, TimestampType::CreateTime).unwrap();
                    written.insert(info.first_offset, (k, v));
                }
                Op::Compact(dt) => {
                    now += i64::from(dt);
                    let leo = log.log_end_offset();
                    log.update_high_watermark(leo);
                    let before = records(&log);
                    if log.compact(now).unwrap().is_none() {
                        prop_assert_eq!(records(&log), before);
                        continue;
                    }
                    prop_assert_eq!(log.log_end_offset(), leo);
                    let end = log.cleaner_checkpoint().unwrap();
                    let after = records(&log);
                    // Offsets increase and every kept record is one that was written, unchanged.
                    for w in after.windows(2) {
                        prop_assert!(w[0].0 < w[1].0);
                    }
                    for (o, k, v) in &after {
                        prop_assert_eq!(written.get(o), Some(&(*k, *v)));
                    }
                    // Below the checkpoint: each key at most once, as its latest record there.
                    let mut latest_below: BTreeMap<u8, (i64, Option<u8>)> = BTreeMap::new();
                    for (&o, &(k, v)) in written.range(..end) {
                        latest_below.insert(k, (o, v));
                    }
                    let mut seen = BTreeMap::new();
                    for (o, k, _) in after.iter().filter(|r| r.0 < end) {
                        prop_assert!(seen.insert(*k, *o).is_none(), "key {} twice below {}", k, end);
                        prop_assert_eq!(latest_below[k].0, *o);
                    }
                    // The latest value of every key is still there; everything at or above the
                    // checkpoint is untouched.
                    for (k, (o, v)) in &latest_below {
                        if v.is_some() {
                            prop_assert!(after.contains(&(*o, *k, *v)), "lost latest value of key {}", k);
                        }
                    }
                    let above_before: Vec<_> = before.iter().filter(|r| r.0 >= end).collect();
                    let above_after: Vec<_> = after.iter().filter(|r| r.0 >= end).collect();
                    prop_assert_eq!(above_before, above_after);
                    // Reads from every offset start at a batch holding it or the next kept one.
                    for o in log.log_start_offset()..leo {
                        let r = log.read(o, 1, leo, true).unwrap();
                        if let Some(b) = Batches::new(r.records).next() {
                            prop_assert!(b.unwrap().header().last_offset() >= o);
                        }
                    }
                }
            }
        }
        let expected = records(&log);
        log.close().unwrap();
        let log = Log::open(&dir, config(), 0).unwrap();
        prop_assert_eq!(records(&log), expected);
    }
}
