//! Log compaction: latest record per key, tombstones, aborted transactions, swap and crashes.

use std::path::Path;

use josef_log::testing::TestBatch;
use josef_log::{AbortedTxn, CleanupPolicy, Log, LogConfig, TimestampType};
use josef_records::{Batches, DecompressLimits};

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 600,
        index_interval_bytes: 100,
        segment_index_bytes: 1024,
        cleanup_policy: CleanupPolicy::Compact,
        delete_retention_ms: 1000,
        ..LogConfig::default()
    }
}

type Rec = (i64, Option<String>, Option<String>);

/// Every record of the log: offset, key, value.
fn records(log: &Log) -> Vec<Rec> {
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
            if b.header().is_control() {
                continue;
            }
            for rec in b.records(&DecompressLimits::default()).unwrap() {
                let rec = rec.unwrap();
                let s = |x: Option<bytes::Bytes>| x.map(|v| String::from_utf8(v.to_vec()).unwrap());
                out.push((rec.offset, s(rec.key), s(rec.value)));
            }
        }
    }
    out
}

fn put(log: &mut Log, ts: i64, key: &str, value: Option<&str>) -> i64 {
    let b = TestBatch::new(0)
        .record(ts, Some(key.as_bytes()), value.map(str::as_bytes))
        .build();
    log.append_as_leader(b, 0, ts, TimestampType::CreateTime)
        .unwrap()
        .first_offset
}

fn fill(dir: &Path) -> Log {
    let mut log = Log::open(dir, config(), 0).unwrap();
    for round in 0..10 {
        for k in 0..4 {
            put(
                &mut log,
                100 + round,
                &format!("k{k}"),
                Some(&format!("v{round}-{k}")),
            );
        }
    }
    log.update_high_watermark(log.log_end_offset());
    log
}

#[test]
fn compaction_keeps_the_latest_record_per_key_in_closed_segments() {
    let d = tempfile::tempdir().unwrap();
    let mut log = fill(&d.path().join("c-0"));
    let before = records(&log);
    let active_base = *log.segment_base_offsets().last().unwrap();
    let stats = log.compact(10_000).unwrap().unwrap();
    assert!(stats.swapped && stats.segments > 0);
    assert!(stats.bytes_written < stats.bytes_read);
    let after = records(&log);
    // Offsets are kept; closed segments hold each key at most once and only its latest value
    // below the active segment.
    let mut expected: Vec<Rec> = Vec::new();
    for r in &before {
        let later_dup = before
            .iter()
            .any(|o| o.1 == r.1 && o.0 > r.0 && o.0 < active_base);
        if r.0 >= active_base || !later_dup {
            expected.push(r.clone());
        }
    }
    assert_eq!(after, expected);
    assert_eq!(log.log_end_offset(), 40);
    // The latest value of every key is still there.
    for k in 0..4 {
        let key = Some(format!("k{k}"));
        let last = before.iter().rev().find(|r| r.1 == key).unwrap();
        assert!(after.contains(last));
    }
}

#[test]
fn compaction_survives_reopen_and_offsets_stay_readable() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("c-0");
    let mut log = fill(&dir);
    log.compact(10_000).unwrap().unwrap();
    let after = records(&log);
    log.close().unwrap();
    let log = Log::open(&dir, config(), 0).unwrap();
    assert_eq!(records(&log), after);
    // Reading from a removed offset starts at the next batch that exists.
    for o in 0..40 {
        let r = log.read(o, 1, 40, true).unwrap();
        let first = Batches::new(r.records).next().unwrap().unwrap();
        assert!(first.header().last_offset() >= o);
    }
    drop(log);
    let log = Log::open(&dir, config(), 0).unwrap(); // unclean: recovery scans cleaned segments
    assert_eq!(records(&log), after);
}

#[test]
fn tombstones_survive_delete_retention_ms_then_go() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("c-0"), config(), 0).unwrap();
    put(&mut log, 100, "a", Some("1"));
    let tomb = put(&mut log, 200, "a", None);
    for i in 0..20 {
        put(
            &mut log,
            300 + i,
            "filler",
            Some("xxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
        );
    }
    log.update_high_watermark(log.log_end_offset());
    log.compact(500).unwrap().unwrap();
    let r = records(&log);
    assert!(
        r.contains(&(tomb, Some("a".into()), None)),
        "tombstone kept before the horizon"
    );
    assert!(!r.iter().any(|x| x.0 == 0));
    log.compact(200 + 1000).unwrap().unwrap();
    let r = records(&log);
    assert!(
        !r.iter().any(|x| x.1.as_deref() == Some("a")),
        "tombstone removed after it"
    );
}

#[test]
fn aborted_transaction_data_is_removed_and_markers_are_kept() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("c-0"), config(), 0).unwrap();
    put(&mut log, 1, "k", Some("committed-before"));
    let data = TestBatch::new(0)
        .producer(5, 0, 0)
        .transactional()
        .record(2, Some(b"k"), Some(b"aborted"))
        .build();
    let first = log
        .append_as_leader(data, 0, 2, TimestampType::CreateTime)
        .unwrap()
        .first_offset;
    let marker = TestBatch::new(0)
        .producer(5, 0, -1)
        .control_marker(3, false)
        .build();
    let m = log
        .append_as_leader(marker, 0, 3, TimestampType::CreateTime)
        .unwrap();
    log.append_aborted_txn(AbortedTxn {
        producer_id: 5,
        first_offset: first,
        last_offset: m.last_offset,
        last_stable_offset: first,
    })
    .unwrap();
    for i in 0..20 {
        put(
            &mut log,
            10 + i,
            "other",
            Some("yyyyyyyyyyyyyyyyyyyyyyyyyy"),
        );
    }
    log.update_high_watermark(log.log_end_offset());
    log.compact(100).unwrap().unwrap();
    let r = records(&log);
    // The aborted value never shadows the committed one, and is gone.
    assert!(r.contains(&(0, Some("k".into()), Some("committed-before".into()))));
    assert!(!r.iter().any(|x| x.2.as_deref() == Some("aborted")));
    // The marker batch is still there, and the txn index too.
    let read = log
        .read(m.last_offset, 1 << 20, log.log_end_offset(), true)
        .unwrap();
    let b = Batches::new(read.records).next().unwrap().unwrap();
    assert!(b.header().is_control());
    assert_eq!(log.collect_aborted_transactions(0, 1000).len(), 1);
}

#[test]
fn an_emptied_batch_of_a_producer_keeps_its_offsets_when_it_is_the_producers_last() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("c-0"), config(), 0).unwrap();
    let b = TestBatch::new(0)
        .producer(9, 1, 40)
        .record(1, Some(b"x"), Some(b"old"))
        .record(1, Some(b"y"), Some(b"old"))
        .build();
    log.append_as_leader(b, 0, 1, TimestampType::CreateTime)
        .unwrap();
    put(&mut log, 2, "x", Some("new"));
    put(&mut log, 2, "y", Some("new"));
    for i in 0..20 {
        put(&mut log, 3 + i, "z", Some("zzzzzzzzzzzzzzzzzzzzzzzzzzzzz"));
    }
    log.update_high_watermark(log.log_end_offset());
    log.compact(100).unwrap().unwrap();
    let read = log.read(0, 1 << 20, log.log_end_offset(), true).unwrap();
    let first = Batches::new(read.records).next().unwrap().unwrap();
    let h = first.header();
    assert_eq!((h.base_offset, h.last_offset(), h.record_count), (0, 1, 0));
    assert_eq!(
        (h.producer_id, h.producer_epoch, h.base_sequence),
        (9, 1, 40)
    );
}

#[test]
fn a_crash_after_the_swap_started_is_completed_on_open() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("c-0");
    let log = fill(&dir);
    let task = log
        .prepare_compaction(10_000, log.high_watermark())
        .unwrap()
        .unwrap();
    let bases = task.segment_base_offsets();
    let result = task.run().unwrap();
    // What a completed compaction gives, computed on a copy.
    let copy = d.path().join("copy-0");
    std::fs::create_dir_all(&copy).unwrap();
    for e in std::fs::read_dir(&dir).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
    }
    let mut finished = Log::open(&copy, config(), 0).unwrap();
    finished.update_high_watermark(finished.log_end_offset());
    let expected = {
        let t = finished.prepare_compaction(10_000, 40).unwrap().unwrap();
        let r = t.run().unwrap();
        finished.finish_compaction(r).unwrap();
        records(&finished)
    };
    // Crash in the middle of the swap: the cleaned files renamed to .swap, old segments in place.
    drop(result);
    for base in &bases {
        for ext in [".txnindex", ".timeindex", ".index", ".log"] {
            let from = dir.join(format!("{base:020}{ext}.cleaned"));
            if from.exists() {
                std::fs::rename(&from, dir.join(format!("{base:020}{ext}.swap"))).unwrap();
            }
        }
    }
    drop(log);
    let log = Log::open(&dir, config(), 0).unwrap();
    assert_eq!(records(&log), expected);
    for e in std::fs::read_dir(&dir).unwrap() {
        let n = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!n.ends_with(".swap") && !n.ends_with(".cleaned"), "{n}");
    }
}

#[test]
fn a_crash_before_the_swap_leaves_the_original_log() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("c-0");
    let log = fill(&dir);
    let before = records(&log);
    let task = log.prepare_compaction(10_000, 40).unwrap().unwrap();
    task.run().unwrap();
    drop(log);
    let log = Log::open(&dir, config(), 0).unwrap();
    assert_eq!(records(&log), before);
}

#[test]
fn cleaned_segments_are_not_swapped_in_when_the_log_changed_meanwhile() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("c-0");
    let mut log = fill(&dir);
    let task = log.prepare_compaction(10_000, 40).unwrap().unwrap();
    // appends meanwhile are fine...
    put(&mut log, 500, "k0", Some("late"));
    let result = task.run().unwrap();
    // ...but a truncation below the cleaned range invalidates the work.
    log.truncate_to(3, 0).unwrap();
    let stats = log.finish_compaction(result).unwrap();
    assert!(!stats.swapped);
    assert_eq!(log.log_end_offset(), 3);
    assert_eq!(records(&log).len(), 3);
}

#[test]
fn delete_policy_logs_are_never_compacted() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(
        d.path().join("c-0"),
        LogConfig {
            cleanup_policy: CleanupPolicy::Delete,
            ..config()
        },
        0,
    )
    .unwrap();
    put(&mut log, 1, "a", Some("b"));
    assert_eq!(log.compact(100).unwrap(), None);
}
