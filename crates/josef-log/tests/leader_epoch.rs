//! The log's leader epoch cache: assigned on append from the batch's partition leader epoch,
//! truncated with the log, persisted in `leader-epoch-checkpoint`, rebuilt by recovery.

use josef_log::leader_epoch::LEADER_EPOCH_CHECKPOINT_FILE;
use josef_log::testing::batch;
use josef_log::{EpochEntry, Log, LogConfig, TimestampType};

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 128,
        segment_index_bytes: 1024,
        retention_ms: -1,
        ..LogConfig::default()
    }
}

fn append(log: &mut Log, epoch: i32) -> i64 {
    let v = [b'v'; 100];
    log.append_as_leader(
        batch(0, 1_000, &[(None, Some(&v[..])), (None, Some(&v[..]))]),
        epoch,
        1_000,
        TimestampType::CreateTime,
    )
    .unwrap()
    .first_offset
}

fn entries(log: &Log) -> Vec<(i32, i64)> {
    log.leader_epoch_cache()
        .entries()
        .iter()
        .map(|e: &EpochEntry| (e.epoch, e.start_offset))
        .collect()
}

#[test]
fn leader_epoch_is_assigned_on_append_from_the_leader_epoch() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let mut log = Log::open(&dir, config(), 0).unwrap();
    assert_eq!(log.latest_epoch(), None);
    append(&mut log, 0);
    append(&mut log, 0);
    let e5 = append(&mut log, 5);
    append(&mut log, 5);
    assert_eq!(entries(&log), vec![(0, 0), (5, e5)]);
    assert_eq!(log.latest_epoch(), Some(5));
    assert_eq!(log.end_offset_for_epoch(0), (0, e5));
    assert_eq!(log.end_offset_for_epoch(5), (5, log.log_end_offset()));
    let text = std::fs::read_to_string(dir.join(LEADER_EPOCH_CHECKPOINT_FILE)).unwrap();
    assert_eq!(text, format!("0\n2\n0 0\n5 {e5}\n"));
    log.close().unwrap();
    let log = Log::open(&dir, config(), 0).unwrap();
    assert_eq!(entries(&log), vec![(0, 0), (5, e5)]);
}

#[test]
fn follower_append_assigns_each_batch_epoch() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("t-0"), config(), 0).unwrap();
    let mut bytes = Vec::new();
    for (base, epoch) in [(0i64, 1i32), (1, 1), (2, 4)] {
        let mut b = batch(base, 10, &[(None, Some(b"x"))]);
        b[12..16].copy_from_slice(&epoch.to_be_bytes()); // partition leader epoch, outside the CRC
        bytes.extend_from_slice(&b);
    }
    log.append_as_follower(bytes.into(), 10).unwrap();
    assert_eq!(entries(&log), vec![(1, 0), (4, 2)]);
}

#[test]
fn truncation_removes_epochs_past_the_new_end() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("t-0"), config(), 0).unwrap();
    append(&mut log, 1);
    let e2 = append(&mut log, 2);
    let e3 = append(&mut log, 3);
    log.truncate_to(e3, 0).unwrap();
    assert_eq!(entries(&log), vec![(1, 0), (2, e2)]);
    // Truncation removes whole batches: epoch 2's only batch goes, and its entry with it.
    log.truncate_to(e2 + 1, 0).unwrap();
    assert_eq!(log.log_end_offset(), e2);
    assert_eq!(entries(&log), vec![(1, 0)]);
    log.truncate_fully_and_start_at(100, 0).unwrap();
    assert_eq!(entries(&log), vec![]);
}

#[test]
fn a_moving_log_start_offset_moves_the_first_epoch_start() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("t-0"), config(), 0).unwrap();
    for _ in 0..6 {
        append(&mut log, 1);
    }
    let e2 = append(&mut log, 2);
    log.update_high_watermark(log.log_end_offset());
    log.delete_records_before(3).unwrap();
    assert_eq!(entries(&log), vec![(1, 3), (2, e2)]);
    log.delete_records_before(e2 + 1).unwrap();
    assert_eq!(entries(&log), vec![(2, e2 + 1)]);
}

#[test]
fn recovery_rebuilds_the_epochs_of_scanned_segments_and_a_missing_file() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let mut log = Log::open(&dir, config(), 0).unwrap();
    append(&mut log, 0);
    let e7 = append(&mut log, 7);
    for _ in 0..5 {
        append(&mut log, 7);
    }
    log.close().unwrap();
    // A directory written before the cache existed: the file is rebuilt from the batches.
    std::fs::remove_file(dir.join(LEADER_EPOCH_CHECKPOINT_FILE)).unwrap();
    let log = Log::open(&dir, config(), 0).unwrap();
    assert_eq!(entries(&log), vec![(0, 0), (7, e7)]);
    drop(log); // unclean
               // A garbled file after an unclean stop: recovery re-assigns from what it scans.
    std::fs::write(dir.join(LEADER_EPOCH_CHECKPOINT_FILE), "garbage").unwrap();
    let log = Log::open(&dir, config(), 0).unwrap();
    assert_eq!(entries(&log), vec![(0, 0), (7, e7)]);
    // Entries past a torn tail go with it.
    let last = *log.segment_base_offsets().last().unwrap();
    drop(log);
    let seg = dir.join(format!("{last:020}.log"));
    let len = std::fs::metadata(&seg).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    let log = Log::open(&dir, config(), 0).unwrap();
    assert!(log
        .leader_epoch_cache()
        .entries()
        .iter()
        .all(|e| e.start_offset < log.log_end_offset()));
}

#[test]
fn a_new_leader_assigns_its_epoch_start_before_any_batch_of_it() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("t-0"), config(), 0).unwrap();
    append(&mut log, 1);
    assert!(log.assign_epoch_start_offset(3).unwrap());
    assert!(!log.assign_epoch_start_offset(3).unwrap());
    assert_eq!(entries(&log), vec![(1, 0), (3, 2)]);
    // A follower at epoch 1 offset 5 learns epoch 1 ended at 2.
    assert_eq!(log.end_offset_for_epoch(1), (1, 2));
    assert_eq!(log.end_offset_for_epoch(2), (1, 2));
    append(&mut log, 3);
    assert_eq!(entries(&log), vec![(1, 0), (3, 2)]);
    assert_eq!(log.end_offset_for_epoch(3), (3, 4));
}

#[test]
fn truncating_to_the_log_end_drops_an_epoch_that_starts_there() {
    // A replica that became leader of epoch 3 (recording its start at the LEO) and was deposed
    // before appending anything: truncating to its LEO must forget epoch 3, or its last fetched
    // epoch stays one the new leader never had, and every fetch diverges again.
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("t-0"), config(), 0).unwrap();
    append(&mut log, 0);
    let leo = log.log_end_offset();
    log.assign_epoch_start_offset(3).unwrap();
    assert_eq!(entries(&log), vec![(0, 0), (3, leo)]);
    log.truncate_to(leo, 1_000).unwrap();
    assert_eq!(entries(&log), vec![(0, 0)]);
    assert_eq!(log.latest_epoch(), Some(0));
    assert_eq!(log.log_end_offset(), leo);
    // Past the end: the same, and the data stays.
    log.assign_epoch_start_offset(4).unwrap();
    log.truncate_to(leo + 10, 1_000).unwrap();
    assert_eq!(entries(&log), vec![(0, 0)]);
    assert_eq!(log.log_end_offset(), leo);
}
