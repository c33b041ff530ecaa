//! `Log::append_as_leader_shared` (headers patched in copies, bodies written from the caller's
//! buffer with one vectored write) must leave exactly the log that the copying append leaves.

use bytes::{Bytes, BytesMut};
use josef_log::testing::batch;
use josef_log::{Log, LogAppendInfo, LogConfig, LogError, TimestampType, SHARED_APPEND_MIN};
use proptest::prelude::*;
use std::path::Path;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 32 * 1024,
        index_interval_bytes: 300,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    }
}

/// One append: `batches` batches of `records` records of `value_len` bytes each.
fn append_bytes(seed: u8, ts: i64, batches: usize, records: usize, value_len: usize) -> BytesMut {
    let mut out = BytesMut::new();
    for b in 0..batches {
        let value = vec![seed.wrapping_add(b as u8); value_len];
        let recs: Vec<_> = (0..records).map(|_| (None, Some(&value[..]))).collect();
        out.extend_from_slice(&batch(0, ts + b as i64, &recs));
    }
    out
}

/// Every `.log` file of the directory, by name, with its bytes.
fn segment_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

fn without_records(info: LogAppendInfo) -> LogAppendInfo {
    LogAppendInfo {
        records: Bytes::new(),
        ..info
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn shared_append_writes_what_the_copying_append_writes(
        appends in proptest::collection::vec((1usize..4, 1usize..6, 0usize..2000), 1..25),
        epoch in 0i32..5,
    ) {
        let d = tempfile::tempdir().unwrap();
        let (copy_dir, shared_dir) = (d.path().join("copy-0"), d.path().join("shared-0"));
        let mut copying = Log::open(&copy_dir, config(), 0).unwrap();
        let mut shared = Log::open(&shared_dir, config(), 0).unwrap();
        for (i, &(batches, records, value_len)) in appends.iter().enumerate() {
            let ts = 1_000 + i as i64 * 10;
            let bytes = append_bytes(i as u8, ts, batches, records, value_len);
            // The shared path gets a slice of a larger frame, as a request's records are.
            let mut frame = BytesMut::from(&b"request header"[..]);
            frame.extend_from_slice(&bytes);
            let frame = frame.freeze();
            let slice = frame.slice(14..);
            let copied = bytes.len() < SHARED_APPEND_MIN;
            let a = copying.append_as_leader_crc_checked(bytes, epoch, ts, TimestampType::CreateTime);
            let b = shared.append_as_leader_shared(slice.clone(), epoch, ts, TimestampType::CreateTime);
            match (a, b) {
                (Ok(a), Ok(b)) => {
                    prop_assert_eq!(b.records.is_empty(), !copied);
                    prop_assert_eq!(without_records(a), without_records(b));
                }
                (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                (a, b) => prop_assert!(false, "{a:?} vs {b:?}"),
            }
            // The caller's bytes are untouched.
            prop_assert_eq!(&frame[14..], &slice[..]);
        }
        prop_assert_eq!(copying.log_end_offset(), shared.log_end_offset());
        copying.flush().unwrap();
        shared.flush().unwrap();
        prop_assert_eq!(segment_files(&copy_dir), segment_files(&shared_dir));
        let leo = shared.log_end_offset();
        let read = shared.read(0, 1 << 20, leo, false).unwrap();
        let expected = copying.read(0, 1 << 20, leo, false).unwrap();
        prop_assert_eq!(read.records, expected.records);
    }
}

#[test]
fn more_batches_than_one_pwritev_takes_are_all_written() {
    // 700 batches are 1,400 pieces, more than IOV_MAX (1,024): the write goes in two calls.
    let d = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 1 << 20,
        ..LogConfig::default()
    };
    let (copy_dir, shared_dir) = (d.path().join("copy-0"), d.path().join("shared-0"));
    let mut copying = Log::open(&copy_dir, config.clone(), 0).unwrap();
    let mut shared = Log::open(&shared_dir, config, 0).unwrap();
    let bytes = append_bytes(1, 50, 700, 1, 20);
    let a = copying
        .append_as_leader_crc_checked(bytes.clone(), 2, 50, TimestampType::CreateTime)
        .unwrap();
    let b = shared
        .append_as_leader_shared(bytes.freeze(), 2, 50, TimestampType::CreateTime)
        .unwrap();
    assert_eq!(
        (b.first_offset, b.last_offset, b.batch_count),
        (0, 699, 700)
    );
    assert!(b.records.is_empty());
    assert_eq!(without_records(a), b);
    assert_eq!(segment_files(&copy_dir), segment_files(&shared_dir));
    // And it survives a restart: recovery reads every batch back.
    drop(shared);
    let reopened = Log::open(&shared_dir, LogConfig::default(), 0).unwrap();
    assert_eq!(reopened.log_end_offset(), 700);
}

#[test]
fn log_append_time_copies_because_the_crc_changes() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("t-0"), config(), 0).unwrap();
    let bytes = append_bytes(3, 5, 2, 2, 10).freeze();
    let info = log
        .append_as_leader_shared(bytes.clone(), 0, 777, TimestampType::LogAppendTime)
        .unwrap();
    assert_eq!((info.log_append_time, info.max_timestamp), (777, 777));
    let h = josef_log::BatchHeader::parse(&info.records).unwrap();
    assert_eq!(h.max_timestamp, 777);
    assert_eq!(crc32c::crc32c(&info.records[21..h.total_size()]), h.crc);
    // The caller's bytes still hold their create times.
    assert_eq!(
        josef_log::BatchHeader::parse(&bytes).unwrap().max_timestamp,
        5
    );
}

#[test]
fn shared_append_still_checks_everything_but_the_crc() {
    let d = tempfile::tempdir().unwrap();
    let mut log = Log::open(d.path().join("t-0"), config(), 0).unwrap();
    let mut partial = append_bytes(1, 1, 1, 1, 10);
    partial.truncate(partial.len() - 2);
    assert!(matches!(
        log.append_as_leader_shared(partial.freeze(), 0, 1, TimestampType::CreateTime),
        Err(LogError::InvalidRecords(_))
    ));
    assert!(matches!(
        log.append_as_leader_shared(Bytes::new(), 0, 1, TimestampType::CreateTime),
        Err(LogError::InvalidRecords(_))
    ));
    assert_eq!(log.log_end_offset(), 0);
}
