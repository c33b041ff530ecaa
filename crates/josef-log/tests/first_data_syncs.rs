//! What a partition's first data and its close cost in fsyncs (issue #22: filling 10,000 empty
//! partitions with one record each took 52 s, mostly two fsyncs per partition for the
//! leader-epoch checkpoint of the first append; the SIGTERM after it 80 s, mostly the fsyncs of
//! each closed log). Counted through a `CountingStorage`, never timed; and what crash safety
//! needs of the fsyncs left out: the epoch file is synced before the recovery point passes it,
//! and an empty one (what a power failure can leave of an unsynced rename) is not trusted.

use std::path::Path;
use std::sync::Arc;

use josef_log::leader_epoch::{EpochEntry, LEADER_EPOCH_CHECKPOINT_FILE};
use josef_log::storage::{CountingStorage, MemoryStorage, Storage};
use josef_log::testing::TestBatch;
use josef_log::{Log, LogConfig, PartitionState, TimestampType};

fn managed(recovery_point: i64, clean_shutdown: bool) -> PartitionState {
    PartitionState::Managed {
        recovery_point,
        log_start_offset: 0,
        clean_shutdown,
    }
}

fn append(log: &mut Log, epoch: i32) {
    let b = TestBatch::new(0)
        .record(1_000, Some(b"k"), Some(&[b'v'; 100]))
        .build();
    log.append_as_leader(b, epoch, 0, TimestampType::CreateTime)
        .unwrap();
}

fn open(storage: &Arc<dyn Storage>, config: LogConfig, state: PartitionState) -> Log {
    Log::open_in(storage.clone(), Path::new("/data/t-0"), config, 0, state).unwrap()
}

#[test]
fn the_first_append_writes_the_epoch_file_unsynced_and_the_flush_syncs_it() {
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    let storage: Arc<dyn Storage> = counting.clone();
    let mut log = open(&storage, LogConfig::default(), managed(0, false));
    let before = counting.calls();
    append(&mut log, 0);
    let c = counting.calls();
    // The epoch file is replaced through a rename, no fsync (two before: the temporary file and
    // the directory).
    assert_eq!(c.unsynced_writes - before.unsynced_writes, 1, "{c:?}");
    assert_eq!(c.atomic_writes - before.atomic_writes, 0, "{c:?}");
    assert_eq!(c.syncs - before.syncs, 0, "{c:?}");
    assert!(log.leader_epoch_cache().is_unsynced());
    // Appends in the same epoch write nothing.
    append(&mut log, 0);
    assert_eq!(counting.calls().unsynced_writes, c.unsynced_writes);

    // The flush syncs it before the recovery point moves past its entry.
    log.flush().unwrap();
    let f = counting.calls();
    assert_eq!(f.atomic_writes - c.atomic_writes, 1, "{f:?}");
    assert!(!log.leader_epoch_cache().is_unsynced());
    assert_eq!(log.recovery_point(), 2);
    // Nothing to sync at the next flush.
    append(&mut log, 0);
    log.flush().unwrap();
    assert_eq!(counting.calls().atomic_writes, f.atomic_writes);

    // A new epoch: unsynced again until the next flush.
    append(&mut log, 3);
    assert!(log.leader_epoch_cache().is_unsynced());
    log.flush().unwrap();
    assert_eq!(counting.calls().atomic_writes, f.atomic_writes + 1);
}

#[test]
fn with_flush_messages_1_the_epoch_file_is_synced_before_the_append_returns() {
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    let storage: Arc<dyn Storage> = counting.clone();
    let config = LogConfig {
        flush_messages: 1,
        ..LogConfig::default()
    };
    let mut log = open(&storage, config, managed(0, false));
    append(&mut log, 0);
    log.maybe_flush(0).unwrap();
    assert!(!log.leader_epoch_cache().is_unsynced());
    assert_eq!(counting.calls().atomic_writes, 1);
}

/// An empty `leader-epoch-checkpoint` in a log holding data is what a power failure can leave of
/// a file replaced without fsync: the loader rebuilds the cache from every segment, also those
/// before the recovery point, which an unclean open does not scan otherwise.
#[test]
fn an_empty_epoch_file_in_a_log_with_data_is_rebuilt_from_every_segment() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let config = LogConfig {
        segment_bytes: 1_024,
        ..LogConfig::default()
    };
    let mut log = open(&storage, config.clone(), managed(0, false));
    for epoch in [0, 0, 0, 0, 2, 2, 2, 2, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5] {
        append(&mut log, epoch);
    }
    log.flush().unwrap();
    assert!(log.segment_count() > 3, "{} segments", log.segment_count());
    let expected = log.leader_epoch_cache().entries();
    assert_eq!(
        expected,
        [(0, 0), (2, 4), (5, 8)].map(|(epoch, start_offset)| EpochEntry {
            epoch,
            start_offset
        })
    );
    let leo = log.log_end_offset();
    log.close().unwrap();
    let path = Path::new("/data/t-0").join(LEADER_EPOCH_CHECKPOINT_FILE);
    storage.write_atomically(&path, b"").unwrap();
    // After a crash with everything flushed: the unclean open recovers only the active segment,
    // yet the epochs of the earlier ones are back.
    let log = open(&storage, config, managed(leo, false));
    assert_eq!(log.load_report().recovered_segments.len(), 1);
    assert_eq!(log.leader_epoch_cache().entries(), expected);
}

#[test]
fn close_unsynced_syncs_nothing_and_the_log_reopens_whole() {
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    let storage: Arc<dyn Storage> = counting.clone();
    let mut log = open(&storage, LogConfig::default(), managed(0, false));
    append(&mut log, 0);
    append(&mut log, 0);
    let before = counting.calls();
    log.close_unsynced().unwrap();
    let c = counting.calls();
    assert_eq!(
        (
            c.syncs - before.syncs,
            c.atomic_writes - before.atomic_writes,
            c.dir_syncs - before.dir_syncs
        ),
        (0, 0, 0),
        "{c:?}"
    );
    // The caller syncs the file system, then trusts the close.
    storage.sync_file_system(Path::new("/data")).unwrap();
    let log = open(&storage, LogConfig::default(), managed(2, true));
    assert!(log.load_report().recovered_segments.is_empty());
    assert_eq!(log.log_end_offset(), 2);
    assert_eq!(log.leader_epoch_cache().latest_epoch(), Some(0));
}

/// A restart of a partition whose epoch starts at its log end (a cluster node's empty partition:
/// the epoch is assigned on becoming leader) drops that entry, as Kafka's loader does, without
/// an fsync; the next flush syncs the file.
#[test]
fn a_load_that_drops_an_epoch_at_the_log_end_does_not_sync() {
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    let storage: Arc<dyn Storage> = counting.clone();
    let mut log = open(&storage, LogConfig::default(), managed(0, false));
    log.assign_epoch_start_offset(0).unwrap();
    log.close().unwrap();
    let before = counting.calls();
    let mut log = open(&storage, LogConfig::default(), managed(0, true));
    let c = counting.calls();
    assert_eq!(log.leader_epoch_cache().entries(), Vec::<EpochEntry>::new());
    assert_eq!(c.atomic_writes - before.atomic_writes, 0, "{c:?}");
    assert_eq!(c.syncs - before.syncs, 0, "{c:?}");
    assert_eq!(c.unsynced_writes - before.unsynced_writes, 1, "{c:?}");
    assert!(log.leader_epoch_cache().is_unsynced());
    log.flush().unwrap();
    assert!(!log.leader_epoch_cache().is_unsynced());
    assert_eq!(counting.calls().atomic_writes, c.atomic_writes + 1);
}
