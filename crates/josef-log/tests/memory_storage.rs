//! The log on [`MemoryStorage`]: nothing written to disk, and the same behaviour as on the file
//! system (a differential property test runs random operations on both and compares everything
//! observable; tests/log_behaviour.rs runs every rule on both).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use josef_log::storage::{BoundedFiles, FileStorage, MemoryStorage, Storage};
use josef_log::testing::TestBatch;
use josef_log::{CleanupPolicy, Log, LogConfig, PartitionState, TimestampType};
use proptest::prelude::*;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 700,
        index_interval_bytes: 100,
        segment_index_bytes: 1024,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

fn open(storage: &Arc<dyn Storage>, dir: &Path, config: LogConfig) -> Log {
    Log::open_in(storage.clone(), dir, config, 0, PartitionState::Standalone).unwrap()
}

fn put(log: &mut Log, ts: i64, key: &str, value: Option<&str>) -> i64 {
    let b = TestBatch::new(0)
        .record(ts, Some(key.as_bytes()), value.map(str::as_bytes))
        .build();
    log.append_as_leader(b, 0, ts, TimestampType::CreateTime)
        .unwrap()
        .first_offset
}

/// Every batch of the log as (base offset, bytes).
fn contents(log: &Log) -> Vec<(i64, Vec<u8>)> {
    log.iter_batches_from(log.log_start_offset())
        .map(|b| {
            let (_, pos, bytes) = b.unwrap();
            (pos.header.base_offset, bytes.to_vec())
        })
        .collect()
}

/// A directory no test creates on disk: the memory log must never make it appear.
fn memory_dir() -> PathBuf {
    std::env::temp_dir().join(format!("josef-memory-never-on-disk-{}", std::process::id()))
}

// The log's rules on memory are tests/log_behaviour.rs (`on_memory::*`); here only what the
// memory storage adds: nothing of a log's life reaches the file system.
#[test]
fn a_memory_log_rolls_reopens_recovers_and_deletes_without_touching_the_disk() {
    let memory = Arc::new(MemoryStorage::new());
    let storage: Arc<dyn Storage> = memory.clone();
    let dir = memory_dir().join("t-0");
    let cfg = LogConfig {
        retention_ms: 1_000,
        ..config()
    };
    let mut log = open(&storage, &dir, cfg.clone());
    for i in 0..30 {
        put(
            &mut log,
            i * 100,
            &format!("k{i}"),
            Some("some value bytes"),
        );
    }
    assert!(log.segment_count() > 2);
    let before = contents(&log);
    log.close().unwrap();
    let log = open(&storage, &dir, cfg.clone());
    assert_eq!(contents(&log), before);
    drop(log); // a crash
    let mut log = open(&storage, &dir, cfg);
    assert!(!log.load_report().clean_shutdown);
    assert_eq!(contents(&log), before);
    log.update_high_watermark(log.log_end_offset());
    assert!(log.delete_old_segments(10_000).unwrap() > 0);
    log.write_producer_snapshot(log.log_end_offset(), b"state")
        .unwrap();
    log.close().unwrap();
    assert!(memory.bytes_held() > 0, "the log is held in memory");
    assert!(!memory_dir().exists());
}

#[test]
fn compaction_works_on_memory() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let dir = Path::new("/josef/c-0");
    let compacted = LogConfig {
        cleanup_policy: CleanupPolicy::Compact,
        delete_retention_ms: 1000,
        ..config()
    };
    let mut log = open(&storage, dir, compacted.clone());
    // Ten rounds over four keys: most records are superseded.
    for i in 0..40 {
        let (round, key) = (i / 4, format!("k{}", i % 4));
        put(&mut log, 100 + round, &key, Some(&format!("v{round}")));
    }
    log.update_high_watermark(log.log_end_offset());
    let stats = log.compact(10_000).unwrap().unwrap();
    assert!(stats.swapped);
    let kept = contents(&log);
    assert!(
        kept.len() < 40,
        "compaction removed superseded records: {:?}",
        kept.iter().map(|(b, _)| b).collect::<Vec<_>>()
    );
    assert_eq!(log.cleaner_checkpoint(), Some(stats.end_offset));
    log.close().unwrap();
    let log = open(&storage, dir, compacted);
    assert_eq!(contents(&log), kept, "the compacted log survives a reopen");
}

#[derive(Debug, Clone)]
enum Op {
    Append { records: u8, ts: i64 },
    Roll,
    Reopen,
    Crash,
    DeleteRecords(u8),
    Truncate(u8),
    Retention(i64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1u8..5, 0i64..10_000).prop_map(|(records, ts)| Op::Append { records, ts }),
        1 => Just(Op::Roll),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
        1 => any::<u8>().prop_map(Op::DeleteRecords),
        1 => any::<u8>().prop_map(Op::Truncate),
        1 => (0i64..20_000).prop_map(Op::Retention),
    ]
}

/// Applies one operation; the observable result (`Err` text aside) must not depend on the storage.
fn apply(log: &mut Option<Log>, storage: &Arc<dyn Storage>, dir: &Path, op: &Op) -> String {
    let cfg = LogConfig {
        retention_ms: 5_000,
        ..config()
    };
    let l = log.as_mut().unwrap();
    let out = match op {
        Op::Append { records, ts } => {
            let mut b = TestBatch::new(0);
            for r in 0..*records {
                b = b.record(*ts + i64::from(r), Some(b"key"), Some(b"value value"));
            }
            let r = l.append_as_leader(b.build(), 0, *ts, TimestampType::CreateTime);
            let leo = l.log_end_offset();
            l.update_high_watermark(leo);
            format!("{:?}", r.map(|i| (i.first_offset, i.last_offset)).ok())
        }
        Op::Roll => format!("{:?}", l.roll(0, 0).ok()),
        Op::Reopen | Op::Crash => {
            let old = log.take().unwrap();
            if matches!(op, Op::Reopen) {
                old.close().unwrap();
            } else {
                drop(old);
            }
            *log = Some(open(storage, dir, cfg));
            let l = log.as_ref().unwrap();
            format!("{:?}", l.load_report())
        }
        Op::DeleteRecords(n) => {
            let to = l.log_start_offset() + i64::from(*n) % 8;
            format!("{:?}", l.delete_records_before(to).ok())
        }
        Op::Truncate(n) => {
            let to = l.log_end_offset() - i64::from(*n) % 4;
            let r = l.truncate_to(to.max(l.log_start_offset()), 0);
            format!("{:?}", r.ok())
        }
        Op::Retention(now) => format!("{:?}", l.delete_old_segments(*now).ok()),
    };
    let l = log.as_ref().unwrap();
    format!(
        "{out} start={} end={} hw={} bases={:?} batches={:?}",
        l.log_start_offset(),
        l.log_end_offset(),
        l.high_watermark(),
        l.segment_base_offsets(),
        contents(l)
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn memory_and_file_storage_behave_the_same(ops in proptest::collection::vec(op(), 1..40)) {
        let d = tempfile::tempdir().unwrap();
        let file: Arc<dyn Storage> = Arc::new(FileStorage);
        let memory: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let (fdir, mdir) = (d.path().join("t-0"), Path::new("/mem/t-0").to_path_buf());
        let cfg = LogConfig { retention_ms: 5_000, ..config() };
        // The file system again, with one descriptor for all files: every file is closed and
        // reopened by name all the time (renames, deletions and crashes included).
        let bounded: Arc<dyn Storage> = Arc::new(BoundedFiles::new(Arc::new(FileStorage), 1));
        let bdir = d.path().join("b").join("t-0");
        let mut on_file = Some(open(&file, &fdir, cfg.clone()));
        let mut on_memory = Some(open(&memory, &mdir, cfg.clone()));
        let mut on_bounded = Some(open(&bounded, &bdir, cfg));
        for op in &ops {
            let a = apply(&mut on_file, &file, &fdir, op);
            let b = apply(&mut on_memory, &memory, &mdir, op);
            let c = apply(&mut on_bounded, &bounded, &bdir, op);
            prop_assert_eq!(&a, &b, "after {:?}", op);
            prop_assert_eq!(&a, &c, "bounded, after {:?}", op);
        }
        let names = |s: &Arc<dyn Storage>, dir: &Path| {
            let mut n = s.read_dir(dir).unwrap();
            n.sort();
            n
        };
        prop_assert_eq!(names(&file, &fdir), names(&memory, &mdir));
    }
}

/// Creating thousands of partitions or reopening them after a clean shutdown is dominated by
/// file writes: a new log and a clean reopen write no checkpoint (what is there already says it).
#[test]
fn a_new_log_and_a_clean_reopen_rewrite_no_checkpoint() {
    use josef_log::storage::CountingStorage;
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    let storage: Arc<dyn Storage> = counting.clone();
    let dir = Path::new("/josef/new-0");
    let mut log = open(&storage, dir, config());
    assert_eq!(
        counting.calls().atomic_writes,
        0,
        "a new log writes no checkpoint"
    );
    put(&mut log, 100, "k", Some("v"));
    log.close().unwrap();
    let after_close = counting.calls().atomic_writes;
    assert!(
        after_close > 0,
        "the clean shutdown checkpoints the log end"
    );
    let syncs = counting.calls().dir_syncs;
    let mut log = open(&storage, dir, config());
    assert_eq!(log.log_end_offset(), 1);
    assert_eq!(
        counting.calls().atomic_writes,
        after_close,
        "a clean reopen rewrites nothing"
    );
    assert_eq!(
        counting.calls().dir_syncs,
        syncs,
        "a clean reopen fsyncs no directory (the marker's removal waits for a write)"
    );
    put(&mut log, 101, "k", Some("v"));
    assert_eq!(
        counting.calls().dir_syncs,
        syncs + 1,
        "the first write makes the marker's removal durable"
    );
    put(&mut log, 102, "k", Some("v"));
    assert_eq!(counting.calls().dir_syncs, syncs + 1, "once");
    // A crash (no clean-shutdown marker) recovers from the checkpointed recovery point, which
    // stays where it was: nothing is rewritten either.
    drop(log);
    let log = open(&storage, dir, config());
    assert_eq!(log.log_end_offset(), 3);
    assert!(!log.load_report().clean_shutdown);
}

/// Shutting down thousands of idle partitions is their closes: a close that finds the checkpoints
/// current writes only the clean-shutdown marker, without fsync (its existence is all an open
/// reads, and the data it vouches for is already durable).
#[test]
fn closing_an_idle_partition_writes_no_checkpoint_and_fsyncs_nothing() {
    use josef_log::storage::CountingStorage;
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    let storage: Arc<dyn Storage> = counting.clone();
    let dir = Path::new("/josef/idle-0");
    let mut log = open(&storage, dir, config());
    put(&mut log, 100, "k", Some("v"));
    log.close().unwrap();
    for round in 0..2 {
        let log = open(&storage, dir, config());
        assert!(log.load_report().clean_shutdown, "round {round}");
        let before = counting.calls();
        log.close().unwrap();
        let after = counting.calls();
        assert_eq!(
            (after.atomic_writes, after.dir_syncs),
            (before.atomic_writes, before.dir_syncs),
            "round {round}: an idle close rewrote or fsynced"
        );
        assert!(storage.exists(&dir.join(".kafka_cleanshutdown")));
    }
    assert_eq!(open(&storage, dir, config()).log_end_offset(), 1);
}
