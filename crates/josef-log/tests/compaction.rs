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
fn tombstones_survive_delete_retention_ms_after_the_run_that_first_kept_them() {
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
    // The first run keeps the tombstone and stamps its batch with now + delete.retention.ms.
    log.compact(500).unwrap().unwrap();
    let r = records(&log);
    assert!(
        r.contains(&(tomb, Some("a".into()), None)),
        "tombstone kept before the horizon"
    );
    assert!(!r.iter().any(|x| x.0 == 0));
    let read = log.read(tomb, 1 << 20, log.log_end_offset(), true).unwrap();
    let b = Batches::new(read.records).next().unwrap().unwrap();
    assert_eq!(b.header().delete_horizon_ms(), Some(500 + 1000));
    // Kafka's rule counts from that run, not from the record's timestamp (200 + 1000 passed).
    assert_eq!(
        log.compact(1499).unwrap(),
        None,
        "nothing dirty, horizon not reached"
    );
    assert!(records(&log).contains(&(tomb, Some("a".into()), None)));
    // Once the horizon passed, the log is cleaned again even without new dirty data.
    log.compact(1500).unwrap().unwrap();
    let r = records(&log);
    assert!(
        !r.iter().any(|x| x.1.as_deref() == Some("a")),
        "tombstone removed after the horizon"
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

/// Kafka aborts the cleaning of a log it truncates (`abortAndPauseCleaning`): a follower truncated
/// into the cleaned range that fetches the same number of bytes back (so every source segment has
/// its old base and size again) must keep what it fetched, not the cleaned old records.
#[test]
fn a_truncation_meanwhile_aborts_the_cleaning_even_when_the_sizes_come_back() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("c-0");
    let mut log = fill(&dir);
    let task = log.prepare_compaction(10_000, 40).unwrap().unwrap();
    let result = task.run().unwrap();
    let bases = log.segment_base_offsets();
    log.truncate_to(0, 0).unwrap();
    // The same shapes with other values of the same length: the same segments and sizes.
    for round in 0..10 {
        for k in 0..4 {
            put(
                &mut log,
                100 + round,
                &format!("k{k}"),
                Some(&format!("w{round}-{k}")),
            );
        }
    }
    assert_eq!(
        log.segment_base_offsets(),
        bases,
        "the refill rolled elsewhere"
    );
    let refilled = records(&log);
    let stats = log.finish_compaction(result).unwrap();
    assert!(!stats.swapped);
    assert_eq!(records(&log), refilled);
    assert!(refilled
        .iter()
        .all(|(_, _, v)| v.as_deref().unwrap().starts_with('w')));
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

/// Cleans whenever anything is dirty.
fn any_dirt() -> LogConfig {
    LogConfig {
        min_cleanable_dirty_ratio_percent: 0,
        ..config()
    }
}

fn txn_batch(pid: i64, seq: i32, ts: i64, key: &str, value: &str) -> bytes::BytesMut {
    TestBatch::new(0)
        .producer(pid, 0, seq)
        .transactional()
        .record(ts, Some(key.as_bytes()), Some(value.as_bytes()))
        .build()
}

fn marker(log: &mut Log, pid: i64, ts: i64, commit: bool) -> i64 {
    let m = TestBatch::new(0)
        .producer(pid, 0, -1)
        .control_marker(ts, commit)
        .build();
    log.append_as_leader(m, 0, ts, TimestampType::CreateTime)
        .unwrap()
        .first_offset
}

fn fillers(log: &mut Log, ts: i64, n: usize) {
    for i in 0..n {
        put(
            log,
            ts,
            &format!("f{i}"),
            Some("ffffffffffffffffffffffffffffff"),
        );
    }
}

/// Offsets of the control batches in the log.
fn markers(log: &Log) -> Vec<i64> {
    let mut out = Vec::new();
    for b in log.batches_from(log.log_start_offset()).unwrap() {
        if b.0.header.is_control() {
            out.push(b.0.header.base_offset);
        }
    }
    out
}

#[test]
fn a_second_run_starts_at_the_cleaner_checkpoint_and_rewrites_only_changed_segments() {
    let d = tempfile::tempdir().unwrap();
    let mut log = fill(&d.path().join("c-0"));
    let first = log.compact(10_000).unwrap().unwrap();
    assert_eq!(first.first_dirty_offset, 0);
    assert_eq!(log.cleaner_checkpoint(), Some(first.end_offset));
    // Nothing new: no dirty bytes, nothing to do.
    assert_eq!(log.compact(10_000).unwrap(), None);
    // A little dirty data next to the clean part: below the 50% ratio.
    fillers(&mut log, 10_001, 12);
    log.update_high_watermark(log.log_end_offset());
    // With a ratio of 0 any dirty byte is enough.
    let mut c = log.config().clone();
    c.min_cleanable_dirty_ratio_percent = 0;
    log.set_config(c).unwrap();
    let second = log.compact(10_002).unwrap().unwrap();
    assert_eq!(second.first_dirty_offset, first.end_offset);
    assert!(second.end_offset > first.end_offset);
    // The clean part was rewritten only where something changed.
    assert!(second.segments < second.segments_read, "{second:?}");
}

#[test]
fn dirty_ratio_below_the_threshold_skips_cleaning() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(
        d.path().join("c-0"),
        LogConfig {
            min_cleanable_dirty_ratio_percent: 90,
            ..config()
        },
        0,
    )
    .unwrap();
    fillers(&mut log, 1, 30);
    log.update_high_watermark(log.log_end_offset());
    log.compact(100).unwrap().unwrap();
    let clean_end = log.cleaner_checkpoint().unwrap();
    // Dirty data of one segment next to several clean ones is far below 90%.
    fillers(&mut log, 2, 12);
    log.update_high_watermark(log.log_end_offset());
    assert_eq!(log.compact(100).unwrap(), None);
    assert_eq!(log.cleaner_checkpoint(), Some(clean_end));
    // max.compaction.lag.ms forces it once the oldest dirty data is old enough.
    let mut c = log.config().clone();
    c.max_compaction_lag_ms = 50;
    log.set_config(c).unwrap();
    assert_eq!(log.compact(40).unwrap(), None);
    assert!(log.compact(100).unwrap().unwrap().swapped);
    assert!(log.cleaner_checkpoint().unwrap() > clean_end);
}

#[test]
fn cleaner_offset_checkpoint_is_written_in_kafkas_format_and_survives_reopen() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("c-0");
    let mut log = fill(&dir);
    let stats = log.compact(10_000).unwrap().unwrap();
    let text = std::fs::read_to_string(dir.join("cleaner-offset-checkpoint")).unwrap();
    assert_eq!(text, format!("0\n1\nc 0 {}\n", stats.end_offset));
    log.close().unwrap();
    let mut log = Log::open(&dir, config(), 0).unwrap();
    assert_eq!(log.cleaner_checkpoint(), Some(stats.end_offset));
    log.update_high_watermark(log.log_end_offset());
    assert_eq!(
        log.compact(10_000).unwrap(),
        None,
        "clean log is not cleaned again"
    );
    // Truncation below the checkpoint pulls it back.
    log.truncate_to(3, 0).unwrap();
    assert_eq!(log.cleaner_checkpoint(), Some(3));
}

#[test]
fn abort_marker_is_removed_once_its_data_is_gone_and_the_horizon_passed() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("c-0"), any_dirt(), 0).unwrap();
    // Producer 5 expired: nothing of it needs keeping for producer state.
    let compact = |log: &mut Log, now: i64| {
        let hw = log.high_watermark();
        let t = log.prepare_compaction(now, hw).unwrap()?;
        Some(
            log.finish_compaction(t.with_active_producers([]).run().unwrap())
                .unwrap(),
        )
    };
    let first = log
        .append_as_leader(
            txn_batch(5, 0, 1, "k", "aborted"),
            0,
            1,
            TimestampType::CreateTime,
        )
        .unwrap()
        .first_offset;
    let m = marker(&mut log, 5, 2, false);
    log.append_aborted_txn(AbortedTxn {
        producer_id: 5,
        first_offset: first,
        last_offset: m,
        last_stable_offset: first,
    })
    .unwrap();
    fillers(&mut log, 3, 20);
    log.update_high_watermark(log.log_end_offset());
    // Run 1: the aborted data goes; the marker stays (data of its transaction was seen).
    compact(&mut log, 100).unwrap();
    assert!(!records(&log)
        .iter()
        .any(|x| x.2.as_deref() == Some("aborted")));
    assert_eq!(markers(&log), vec![m]);
    assert_eq!(log.collect_aborted_transactions(0, 1000).len(), 1);
    // Run 2 (new dirty data): no data left, so the marker gets a delete horizon.
    fillers(&mut log, 200, 20);
    log.update_high_watermark(log.log_end_offset());
    compact(&mut log, 200).unwrap();
    assert_eq!(markers(&log), vec![m]);
    assert!(log.collect_aborted_transactions(0, 1000).is_empty());
    // Run 3, at the horizon: the marker goes.
    assert!(compact(&mut log, 1199).is_none());
    compact(&mut log, 1200).unwrap();
    assert!(markers(&log).is_empty());
}

#[test]
fn commit_marker_is_removed_once_its_transaction_data_was_compacted_away() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("c-0"), any_dirt(), 0).unwrap();
    log.append_as_leader(
        txn_batch(7, 0, 1, "k", "old"),
        0,
        1,
        TimestampType::CreateTime,
    )
    .unwrap();
    let m = marker(&mut log, 7, 2, true);
    put(&mut log, 3, "k", Some("new"));
    fillers(&mut log, 3, 20);
    log.update_high_watermark(log.log_end_offset());
    let active = [(
        7i64,
        josef_log::cleaner::LastRecord {
            last_data_offset: None,
            producer_epoch: 1,
        },
    )];
    // Run 1: "old" is shadowed by "new"; its batch goes (producer 7 is not active with it), but
    // the marker stays: its transaction's batch was seen in this run.
    let t = log
        .prepare_compaction(100, log.high_watermark())
        .unwrap()
        .unwrap();
    let r = t.with_active_producers(active).run().unwrap();
    log.finish_compaction(r).unwrap();
    assert!(!records(&log).iter().any(|x| x.2.as_deref() == Some("old")));
    assert_eq!(markers(&log), vec![m]);
    // Run 2: nothing of the transaction left: horizon stamped, then the marker goes.
    fillers(&mut log, 200, 20);
    log.update_high_watermark(log.log_end_offset());
    let t = log
        .prepare_compaction(200, log.high_watermark())
        .unwrap()
        .unwrap();
    log.finish_compaction(t.with_active_producers(active).run().unwrap())
        .unwrap();
    assert_eq!(markers(&log), vec![m]);
    let t = log
        .prepare_compaction(1200, log.high_watermark())
        .unwrap()
        .unwrap();
    log.finish_compaction(t.with_active_producers(active).run().unwrap())
        .unwrap();
    assert!(markers(&log).is_empty());
}

#[test]
fn only_the_batch_with_an_active_producers_last_sequence_survives_emptying() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("c-0"), config(), 0).unwrap();
    let idem = |seq: i32, key: &str| {
        TestBatch::new(0)
            .producer(3, 0, seq)
            .record(1, Some(key.as_bytes()), Some(b"old"))
            .build()
    };
    let a = log
        .append_as_leader(idem(0, "x"), 0, 1, TimestampType::CreateTime)
        .unwrap();
    let b = log
        .append_as_leader(idem(1, "y"), 0, 1, TimestampType::CreateTime)
        .unwrap();
    put(&mut log, 2, "x", Some("new"));
    put(&mut log, 2, "y", Some("new"));
    fillers(&mut log, 3, 20);
    log.update_high_watermark(log.log_end_offset());
    let t = log
        .prepare_compaction(100, log.high_watermark())
        .unwrap()
        .unwrap();
    let active = [(
        3i64,
        josef_log::cleaner::LastRecord {
            last_data_offset: Some(b.last_offset),
            producer_epoch: 0,
        },
    )];
    log.finish_compaction(t.with_active_producers(active).run().unwrap())
        .unwrap();
    let kept: Vec<(i64, i32, i32)> = log
        .batches_from(0)
        .unwrap()
        .iter()
        .filter(|(p, _)| p.header.producer_id == 3)
        .map(|(p, _)| {
            (
                p.header.base_offset,
                p.header.record_count,
                p.header.base_sequence,
            )
        })
        .collect();
    assert_eq!(
        kept,
        vec![(b.first_offset, 0, 1)],
        "batch {} dropped",
        a.first_offset
    );
}

#[test]
fn compaction_runs_on_another_thread_while_appends_continue() {
    let d = tempfile::tempdir().unwrap();
    let mut log = fill(&d.path().join("c-0"));
    let task = log
        .prepare_compaction(10_000, log.high_watermark())
        .unwrap()
        .unwrap();
    let worker = std::thread::spawn(move || task.run());
    for i in 0..30 {
        put(&mut log, 20_000 + i, "k1", Some("during"));
    }
    let result = worker.join().unwrap().unwrap();
    let stats = log.finish_compaction(result).unwrap();
    assert!(stats.swapped);
    assert_eq!(log.log_end_offset(), 70);
    let r = records(&log);
    assert_eq!(
        r.iter()
            .filter(|x| x.2.as_deref() == Some("during"))
            .count(),
        30
    );
}
