//! `Log::read_region`: the same whole batches as `Log::read`, handed out as a range of the
//! segment file without copying the records (counted through `CountingStorage`).

use std::sync::Arc;

use josef_log::storage::{CountingStorage, FileStorage, MemoryStorage, Storage};
use josef_log::{Log, LogConfig, PartitionState, TimestampType};

const HEADER: u64 = 61;

fn open(storage: Arc<dyn Storage>, dir: &std::path::Path) -> Log {
    Log::open_in(
        storage,
        dir,
        LogConfig::default(),
        0,
        PartitionState::Standalone,
    )
    .unwrap()
}

/// `n` batches of one 1,000-byte record each.
fn fill(log: &mut Log, n: i64) {
    for i in 0..n {
        let value = vec![i as u8; 1_000];
        let b = josef_log::testing::batch(0, 1_000 + i, &[(None, Some(&value))]);
        log.append_as_leader(b, 0, 5, TimestampType::CreateTime)
            .unwrap();
    }
}

fn region_bytes(r: &josef_log::storage::FileRegion) -> Vec<u8> {
    let mut buf = vec![0u8; r.len()];
    r.read_at(0, &mut buf).unwrap();
    buf
}

#[test]
fn a_region_names_the_same_whole_batches_as_a_read_without_copying_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let counting = Arc::new(CountingStorage::new(Arc::new(FileStorage)));
    let mut log = open(counting.clone(), &dir.path().join("t-0"));
    let n = 20;
    fill(&mut log, n);
    let leo = log.log_end_offset();
    for (from, max) in [(0, 1 << 20), (3, 5_000), (7, 10)] {
        let read = log.read(from, max, leo, true).unwrap();
        let before = counting.calls().bytes_read;
        let info = log.read_region(from, max, leo, true).unwrap();
        let region_read = counting.calls().bytes_read - before;
        let region = info
            .region
            .clone()
            .expect("file storage shares its descriptor");
        assert!(info.records.is_empty());
        assert_eq!(region_bytes(&region), read.records, "from {from} max {max}");
        assert_eq!(info.first_batch_base_offset, read.first_batch_base_offset);
        assert_eq!(info.position, read.position);
        // Only batch headers were read to find the whole-batch cut: never the records.
        let batches = (read.records.len() / 1_000).max(1) as u64;
        assert!(
            region_read <= (batches + 2) * HEADER + 2 * 1024,
            "{region_read} bytes read for {} bytes of records",
            read.records.len()
        );
    }
}

#[test]
fn memory_storage_has_no_descriptor_and_reads_bytes() {
    let mut log = open(Arc::new(MemoryStorage::new()), "/m/t-0".as_ref());
    fill(&mut log, 3);
    let leo = log.log_end_offset();
    let info = log.read_region(0, 1 << 20, leo, true).unwrap();
    assert!(info.region.is_none());
    assert_eq!(
        info.records,
        log.read(0, 1 << 20, leo, true).unwrap().records
    );
}

#[test]
fn a_region_outlives_the_deletion_of_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(Arc::new(FileStorage), &dir.path().join("t-0"));
    fill(&mut log, 3);
    let leo = log.log_end_offset();
    let expected = log.read(0, 1 << 20, leo, true).unwrap().records;
    let region = log
        .read_region(0, 1 << 20, leo, true)
        .unwrap()
        .region
        .unwrap();
    drop(log);
    std::fs::remove_dir_all(dir.path().join("t-0")).unwrap();
    assert_eq!(region_bytes(&region), expected);
}

#[test]
fn a_truncation_after_the_read_never_widens_the_region() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(Arc::new(FileStorage), &dir.path().join("t-0"));
    fill(&mut log, 4);
    let leo = log.log_end_offset();
    let region = log
        .read_region(0, 1 << 20, leo, true)
        .unwrap()
        .region
        .unwrap();
    let len = region.len();
    log.truncate_to(2, 0).unwrap();
    fill(&mut log, 4);
    // The region keeps the length captured at read time, whatever the file holds now.
    assert_eq!(region.len(), len);
    let mut buf = vec![0u8; len];
    region.read_at(0, &mut buf).unwrap();
    let mut past = [0u8; 1];
    assert!(region.read_at(len, &mut past).is_err());
}
