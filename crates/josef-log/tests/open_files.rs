//! What an idle partition holds open: its active segment's `.log` and nothing else. Index files
//! are mapped only when an entry is read or written (Kafka's `LazyIndex`), so thousands of idle
//! partitions cost neither two memory mappings each (`vm.max_map_count` is 65,530 by default) nor
//! descriptors. Counted through a `CountingStorage`, never timed.

use std::path::PathBuf;
use std::sync::Arc;

use josef_log::storage::{CountingStorage, MemoryStorage, Storage};
use josef_log::testing::TestBatch;
use josef_log::{Log, LogConfig, PartitionState, TimestampType};

const PARTITIONS: u64 = 200;

fn config() -> LogConfig {
    LogConfig {
        segment_index_bytes: 64 * 1024,
        ..LogConfig::default()
    }
}

fn dir(i: u64) -> PathBuf {
    PathBuf::from(format!("/data/t-{i}"))
}

fn open_all(storage: &Arc<dyn Storage>) -> Vec<Log> {
    (0..PARTITIONS)
        .map(|i| {
            Log::open_in(
                storage.clone(),
                dir(i),
                config(),
                0,
                PartitionState::Standalone,
            )
            .unwrap()
        })
        .collect()
}

fn append(log: &mut Log, i: i64) {
    let b = TestBatch::new(0)
        .record(1_000 + i, Some(b"k"), Some(&[b'v'; 100]))
        .build();
    log.append_as_leader(b, 0, 0, TimestampType::CreateTime)
        .unwrap();
}

#[test]
fn idle_partitions_hold_one_open_file_each_however_they_were_stopped() {
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    let storage: Arc<dyn Storage> = counting.clone();

    let mut logs = open_all(&storage);
    assert_eq!(
        counting.calls().open_now,
        PARTITIONS,
        "new partitions: the .log only"
    );
    // A few records each, under `index.interval.bytes`: no index entry is written.
    for log in &mut logs {
        for i in 0..3 {
            append(log, i);
        }
    }
    assert_eq!(counting.calls().open_now, PARTITIONS, "after small appends");
    for log in logs {
        log.close().unwrap();
    }
    assert_eq!(counting.calls().open_now, 0, "close releases everything");

    let logs = open_all(&storage);
    assert!(logs.iter().all(|l| l.load_report().clean_shutdown));
    assert_eq!(
        counting.calls().open_now,
        PARTITIONS,
        "a clean reopen maps no index without entries"
    );

    // kill -9: recovery rebuilds the active segments' indexes without mapping them.
    drop(logs);
    let logs = open_all(&storage);
    assert!(logs.iter().all(|l| !l.load_report().clean_shutdown));
    assert!(logs.iter().all(|l| l.log_end_offset() == 3));
    assert_eq!(
        counting.calls().open_now,
        PARTITIONS,
        "an unclean reopen maps nothing either"
    );

    // Reads find every record: the indexes are mapped when a lookup needs entries, not before.
    for log in &logs {
        let r = log.read(1, 1 << 20, 3, true).unwrap();
        assert!(!r.records.is_empty());
        let t = log.fetch_offset_by_timestamp(1_002).unwrap().unwrap();
        assert_eq!(t.offset, 2);
    }
}

#[test]
fn an_index_is_mapped_when_it_gets_entries() {
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    let storage: Arc<dyn Storage> = counting.clone();
    let mut log = Log::open_in(
        storage,
        dir(0),
        LogConfig {
            index_interval_bytes: 256,
            ..config()
        },
        0,
        PartitionState::Standalone,
    )
    .unwrap();
    assert_eq!(counting.calls().open_now, 1);
    for i in 0..10 {
        append(&mut log, i);
    }
    let active = log.segments().last().unwrap();
    assert!(active.offset_index().entries() > 0);
    assert!(active.offset_index().is_mapped());
    assert_eq!(counting.calls().open_now, 3, ".log, .index and .timeindex");
    for o in 0..10 {
        let r = log.read(o, 1, 10, true).unwrap();
        assert_eq!(
            josef_log::BatchHeader::parse(&r.records)
                .unwrap()
                .base_offset,
            o
        );
    }
}

/// Past the partitions an idle broker keeps open, files are closed and reopened by name: a
/// storage bounded to 50 descriptors carries 200 partitions, each written, read, closed,
/// reopened and recovered.
#[test]
fn partitions_beyond_the_descriptor_bound_share_it() {
    use josef_log::storage::BoundedFiles;
    let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
    let storage: Arc<dyn Storage> = Arc::new(BoundedFiles::new(counting.clone(), 50));
    let mut logs = open_all(&storage);
    assert!(counting.calls().open_now <= 50, "{:?}", counting.calls());
    for (i, log) in logs.iter_mut().enumerate() {
        for j in 0..=(i as i64 % 3) {
            append(log, j);
        }
    }
    assert!(counting.calls().open_now <= 50);
    for (i, log) in logs.iter().enumerate() {
        let leo = 1 + i as i64 % 3;
        assert_eq!(log.log_end_offset(), leo);
        let r = log.read(0, 1 << 20, leo, true).unwrap();
        assert!(!r.records.is_empty());
    }
    // Half closed cleanly, half crashed.
    for (i, log) in logs.into_iter().enumerate() {
        if i % 2 == 0 {
            log.close().unwrap();
        }
    }
    let logs = open_all(&storage);
    assert!(counting.calls().open_now <= 50);
    for (i, log) in logs.iter().enumerate() {
        assert_eq!(log.load_report().clean_shutdown, i % 2 == 0);
        assert_eq!(log.log_end_offset(), 1 + i as i64 % 3);
    }
}
