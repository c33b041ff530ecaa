//! What an open after an unclean stop reads: only the segments from the one holding the recovery
//! point on (Kafka's `LogLoader.recoverLog`), counted in bytes and segments, never in time.

use std::path::Path;
use std::sync::Arc;

use josef_log::storage::{CountingStorage, MemoryStorage, Storage};
use josef_log::testing::TestBatch;
use josef_log::{Log, LogConfig, PartitionState, TimestampType};

const SEGMENTS: i64 = 50;
const BATCHES_PER_SEGMENT: i64 = 10;

fn config() -> LogConfig {
    LogConfig {
        segment_index_bytes: 4096,
        index_interval_bytes: 256,
        ..LogConfig::default()
    }
}

fn open(storage: &Arc<dyn Storage>, dir: &Path) -> Log {
    Log::open_in(
        storage.clone(),
        dir,
        config(),
        0,
        PartitionState::Standalone,
    )
    .unwrap()
}

fn append(log: &mut Log, i: i64) {
    let value = vec![b'v'; 200];
    let b = TestBatch::new(0)
        .record(1_000 + i, Some(format!("k{i}").as_bytes()), Some(&value))
        .build();
    log.append_as_leader(b, 0, 0, TimestampType::CreateTime)
        .unwrap();
}

/// A log of `SEGMENTS` rolled (so flushed) segments and an active one holding `tail` unflushed
/// batches, left without a clean shutdown. Returns the storage, the log's size in bytes and the
/// active segment's size.
fn crashed(dir: &Path, tail: i64) -> (Arc<CountingStorage>, u64, u64) {
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    let storage: Arc<dyn Storage> = counting.clone();
    let mut log = open(&storage, dir);
    let mut i = 0;
    for _ in 0..SEGMENTS {
        for _ in 0..BATCHES_PER_SEGMENT {
            append(&mut log, i);
            i += 1;
        }
        log.roll(log.log_end_offset(), 0).unwrap();
    }
    for _ in 0..tail {
        append(&mut log, i);
        i += 1;
    }
    assert_eq!(
        log.recovery_point(),
        SEGMENTS * BATCHES_PER_SEGMENT,
        "rolling flushed every segment before the active one"
    );
    let total = log.size_in_bytes();
    let active = log.segments().last().unwrap().size() as u64;
    // kill -9: no close, no clean-shutdown marker.
    drop(log);
    (counting, total, active)
}

#[test]
fn an_unclean_open_recovers_only_the_segments_past_the_recovery_point() {
    let dir = Path::new("/data/t-0");
    let (counting, total, active) = crashed(dir, 7);
    let storage: Arc<dyn Storage> = counting.clone();
    let before = counting.calls();
    let log = open(&storage, dir);
    let read = counting.calls().bytes_read - before.bytes_read;

    assert!(!log.load_report().clean_shutdown);
    assert_eq!(log.log_end_offset(), SEGMENTS * BATCHES_PER_SEGMENT + 7);
    assert_eq!(
        log.load_report().recovered_segments,
        vec![SEGMENTS * BATCHES_PER_SEGMENT],
        "only the active segment, which holds the recovery point, is recovered"
    );
    // The recovered segment is read once (headers, then whole batches), plus the checkpoints,
    // the leader-epoch file and what the flushed segments' indexes are checked with: far less
    // than even one re-read of the flushed data.
    let flushed = total - active;
    eprintln!("unclean open: {read} bytes read, {active} active, {flushed} flushed");
    assert!(
        read < 3 * active + flushed / 10,
        "{read} bytes read to recover {active} bytes past the recovery point \
         ({flushed} flushed bytes before it)"
    );
    // The recovered tail is not fsynced by the open: the recovery point stays, so a second crash
    // recovers the same tail again.
    assert_eq!(log.recovery_point(), SEGMENTS * BATCHES_PER_SEGMENT);
    drop(log);
    let log = open(&storage, dir);
    assert_eq!(
        log.load_report().recovered_segments,
        vec![SEGMENTS * BATCHES_PER_SEGMENT]
    );
    assert_eq!(log.log_end_offset(), SEGMENTS * BATCHES_PER_SEGMENT + 7);
}

#[test]
fn a_crash_before_any_checkpoint_recovers_everything() {
    let dir = Path::new("/data/t-0");
    let (counting, total, _) = crashed(dir, 3);
    let storage: Arc<dyn Storage> = counting.clone();
    // No recovery-point checkpoint (lost or never written): the whole log is scanned.
    storage
        .remove_file(&dir.join("recovery-point-offset-checkpoint"))
        .unwrap();
    let before = counting.calls();
    let log = open(&storage, dir);
    let read = counting.calls().bytes_read - before.bytes_read;
    assert_eq!(
        log.load_report().recovered_segments.len() as i64,
        SEGMENTS + 1
    );
    assert!(read >= total, "{read} bytes read, the log holds {total}");
    assert_eq!(log.recovery_point(), 0);
    assert_eq!(log.log_end_offset(), SEGMENTS * BATCHES_PER_SEGMENT + 3);
}

#[test]
fn a_clean_open_reads_no_segment() {
    let dir = Path::new("/data/t-0");
    let (counting, _, active) = crashed(dir, 5);
    let storage: Arc<dyn Storage> = counting.clone();
    open(&storage, dir).close().unwrap();
    let before = counting.calls();
    let log = open(&storage, dir);
    let read = counting.calls().bytes_read - before.bytes_read;
    assert!(log.load_report().clean_shutdown);
    assert!(log.load_report().recovered_segments.is_empty());
    assert_eq!(log.recovery_point(), log.log_end_offset());
    // Checkpoints, the O(1) index checks (a few entries per segment) and the active segment's
    // tail: nothing proportional to the data.
    let budget = active + 64 * (SEGMENTS as u64 + 1);
    assert!(
        read < budget,
        "{read} bytes read on a clean open (budget {budget})"
    );
}

/// The same crash for a log whose recovery point lives in its log dir's
/// `recovery-point-offset-checkpoint` (the broker's layout, `josef_log::log_dir`): the open
/// recovers from the checkpointed recovery point, not from 0, and a crash after a checkpoint that
/// does not list the partition recovers it whole.
#[test]
fn an_unclean_open_of_a_managed_log_recovers_from_its_log_dirs_checkpoint() {
    use josef_log::log_dir::{self, LogDirCheckpoints, PartitionCheckpoint};
    let log_dir = Path::new("/data");
    let dir = log_dir.join("t-0");
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    let storage: Arc<dyn Storage> = counting.clone();
    let managed = |storage: &Arc<dyn Storage>| {
        let (read, warnings) = LogDirCheckpoints::read(&**storage, log_dir);
        assert!(warnings.is_empty(), "{warnings:?}");
        let state = read.partition_state(&**storage, &dir, "t", 0);
        Log::open_in(storage.clone(), &dir, config(), 0, state).unwrap()
    };
    let mut log = managed(&storage);
    let mut i = 0;
    for _ in 0..SEGMENTS {
        for _ in 0..BATCHES_PER_SEGMENT {
            append(&mut log, i);
            i += 1;
        }
        log.roll(log.log_end_offset(), 0).unwrap();
    }
    for _ in 0..7 {
        append(&mut log, i);
        i += 1;
    }
    let flushed = SEGMENTS * BATCHES_PER_SEGMENT;
    assert_eq!(log.recovery_point(), flushed);
    // The periodic checkpoint, then kill -9.
    log_dir::write_log_dir_checkpoints(
        &*storage,
        log_dir,
        &[PartitionCheckpoint {
            topic: "t".into(),
            partition: 0,
            recovery_point: log.recovery_point(),
            log_start_offset: log.log_start_offset(),
        }],
    )
    .unwrap();
    drop(log);
    for f in [
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        ".kafka_cleanshutdown",
    ] {
        assert!(!storage.exists(&dir.join(f)), "a managed log wrote {f}");
    }
    let log = managed(&storage);
    assert!(!log.load_report().clean_shutdown);
    assert_eq!(log.load_report().recovered_segments, vec![flushed]);
    assert_eq!(log.recovery_point(), flushed);
    assert_eq!(log.log_end_offset(), flushed + 7);
    drop(log);
    // A checkpoint written before the partition existed: everything is recovered.
    log_dir::write_log_dir_checkpoints(&*storage, log_dir, &[]).unwrap();
    let log = managed(&storage);
    assert_eq!(
        log.load_report().recovered_segments.len() as i64,
        SEGMENTS + 1
    );
    assert_eq!(log.log_end_offset(), flushed + 7);
}
