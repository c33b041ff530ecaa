//! What creating an empty partition costs in file operations (issue #22: CreateTopics of 100,000
//! partitions took two minutes, nearly all of it the kernel creating small files). A new log is
//! its directory and the active segment's `.log`: the offset and time indexes are created by
//! their first entry (Kafka's `LazyIndex` creates its file on first use too), and nothing the
//! directory listing already says is absent is looked up or read again. Counted through a
//! `CountingStorage`, never timed.

use std::path::Path;
use std::sync::Arc;

use josef_log::storage::{CountingStorage, MemoryStorage, Storage};
use josef_log::testing::TestBatch;
use josef_log::{Log, LogConfig, PartitionState, TimestampType};

fn new_partition() -> PartitionState {
    PartitionState::Managed {
        recovery_point: 0,
        log_start_offset: 0,
        clean_shutdown: false,
    }
}

fn clean(log: &Log) -> PartitionState {
    PartitionState::Managed {
        recovery_point: log.log_end_offset(),
        log_start_offset: log.log_start_offset(),
        clean_shutdown: true,
    }
}

fn names(storage: &dyn Storage, dir: &Path) -> Vec<String> {
    let mut n = storage.read_dir(dir).unwrap();
    n.sort();
    n
}

fn append(log: &mut Log, n: usize) {
    for i in 0..n {
        let b = TestBatch::new(0)
            .record(1_000 + i as i64, Some(b"k"), Some(&[b'v'; 100]))
            .build();
        log.append_as_leader(b, 0, 0, TimestampType::CreateTime)
            .unwrap();
    }
}

#[test]
fn a_new_partition_is_its_directory_and_one_log_file() {
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    let storage: Arc<dyn Storage> = counting.clone();
    let dir = Path::new("/data/t-0");
    let log = Log::open_in(
        storage.clone(),
        dir,
        LogConfig::default(),
        0,
        new_partition(),
    )
    .unwrap();
    let c = counting.calls();
    assert_eq!(
        names(&*storage, dir),
        ["00000000000000000000.log"],
        "files of a new partition"
    );
    // One open (the `.log`), one listing, one `create_dir_all`; no lookup, no read of a file the
    // listing showed absent, no atomic write, no fsync.
    assert_eq!(
        (c.opens, c.lookups, c.dir_listings, c.other),
        (1, 0, 1, 1),
        "{c:?}"
    );
    assert_eq!((c.atomic_writes, c.dir_syncs, c.syncs), (0, 0, 0), "{c:?}");

    // A clean close and reopen of the idle partition create nothing and recover nothing.
    let state = clean(&log);
    log.close().unwrap();
    let log = Log::open_in(storage.clone(), dir, LogConfig::default(), 0, state).unwrap();
    assert!(log.load_report().recovered_segments.is_empty());
    assert_eq!(names(&*storage, dir), ["00000000000000000000.log"]);
    drop(log);
}

/// A segment with data gets both index files by its close, so a clean reopen trusts them and
/// reads nothing of the `.log` (a missing index of a segment with data is rebuilt by a scan).
#[test]
fn a_segment_with_data_has_its_indexes_after_a_clean_close() {
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    let storage: Arc<dyn Storage> = counting.clone();
    let dir = Path::new("/data/t-0");
    let mut log = Log::open_in(
        storage.clone(),
        dir,
        LogConfig::default(),
        0,
        new_partition(),
    )
    .unwrap();
    // One small batch: under `index.interval.bytes`, so no offset index entry is ever written.
    append(&mut log, 1);
    let state = clean(&log);
    log.close().unwrap();
    assert_eq!(
        names(&*storage, dir),
        [
            "00000000000000000000.index",
            "00000000000000000000.log",
            "00000000000000000000.timeindex",
            "leader-epoch-checkpoint",
        ]
    );
    let read_before = counting.calls().bytes_read;
    let log = Log::open_in(storage.clone(), dir, LogConfig::default(), 0, state).unwrap();
    assert!(log.load_report().recovered_segments.is_empty());
    assert_eq!(log.log_end_offset(), 1);
    let read = counting.calls().bytes_read - read_before;
    assert!(read < 200, "{read} bytes read by a clean reopen");
}

/// A segment whose index files are gone (a crash before their first entry reached the disk, or
/// a hand-copied directory) opens and gets them rebuilt.
#[test]
fn a_segment_without_index_files_opens_and_rebuilds_them() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let dir = Path::new("/data/t-0");
    let config = LogConfig {
        index_interval_bytes: 1,
        ..LogConfig::default()
    };
    let mut log = Log::open_in(storage.clone(), dir, config.clone(), 0, new_partition()).unwrap();
    append(&mut log, 20);
    let state = clean(&log);
    log.close().unwrap();
    for f in [
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
    ] {
        storage.remove_file(&dir.join(f)).unwrap();
    }
    let log = Log::open_in(storage.clone(), dir, config.clone(), 0, state).unwrap();
    assert_eq!(log.load_report().recovered_segments, [0]);
    assert_eq!(log.log_end_offset(), 20);
    let seg = log.segments().next().unwrap();
    assert!(seg.offset_index().entries() > 10, "rebuilt offset index");
    let state = clean(&log);
    log.close().unwrap();
    assert!(storage.exists(&dir.join("00000000000000000000.index")));
    assert!(storage.exists(&dir.join("00000000000000000000.timeindex")));
    let log = Log::open_in(storage, dir, config, 0, state).unwrap();
    assert!(log.load_report().recovered_segments.is_empty());
}

/// On `LazyDirs` (what the broker uses with one log dir) an empty partition creates nothing on
/// the storage underneath through its open, a clean close, a clean and an unclean reopen; its
/// first append creates its directory and `.log`, and the data reopens (issue #22: 100,000
/// empty partitions cost three inodes each to create and a directory listing each to restart).
#[test]
fn on_lazy_dirs_an_empty_partition_creates_nothing_until_its_first_append() {
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    counting.create_dir_all(Path::new("/data")).unwrap();
    let storage: Arc<dyn Storage> = Arc::new(josef_log::storage::LazyDirs::new(counting.clone()));
    let dir = Path::new("/data/t-0");
    let before = counting.calls();
    let log = open_new(&storage, dir);
    let state = clean(&log);
    log.close().unwrap();
    let log = Log::open_in(storage.clone(), dir, LogConfig::default(), 0, state).unwrap();
    drop(log);
    let mut log = open_new(&storage, dir);
    let c = counting.calls();
    assert_eq!(
        (
            c.opens - before.opens,
            c.other - before.other,
            c.atomic_writes,
            c.syncs
        ),
        (0, 0, 0, 0),
        "an empty partition touched the storage: {c:?}"
    );
    assert!(!counting.exists(dir));
    assert_eq!(names(&*storage, dir), ["00000000000000000000.log"]);
    append(&mut log, 3);
    assert!(counting
        .read_dir(dir)
        .unwrap()
        .contains(&"00000000000000000000.log".to_string()));
    let state = clean(&log);
    log.close().unwrap();
    // A new lazy storage over the same files: what a restart sees.
    let storage: Arc<dyn Storage> = Arc::new(josef_log::storage::LazyDirs::new(counting.clone()));
    let log = Log::open_in(storage, dir, LogConfig::default(), 0, state).unwrap();
    assert_eq!(log.log_end_offset(), 3);
}

/// A new (never checkpointed) log at `dir`.
fn open_new(storage: &Arc<dyn Storage>, dir: &Path) -> Log {
    Log::open_in(
        storage.clone(),
        dir,
        LogConfig::default(),
        0,
        new_partition(),
    )
    .unwrap()
}
