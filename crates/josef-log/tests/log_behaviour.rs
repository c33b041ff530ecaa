//! Behaviour of the log, one test per rule, each run on the file system and on
//! [`MemoryStorage`]: a log must not behave differently on either (tests/memory_storage.rs adds
//! what only the memory storage promises, and a differential property over random operations).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::BytesMut;
use josef_log::storage::{FileStorage, MemoryStorage, Storage};
use josef_log::testing::{batch, TestBatch};
use josef_log::{AbortedTxn, Log, LogConfig, LogError, PartitionState, TimestampType};

/// Where a test's log lives: a temporary directory through [`FileStorage`], or names in a
/// [`MemoryStorage`]. Every look at the files goes through the storage, so one test body checks
/// both.
struct Backend {
    storage: Arc<dyn Storage>,
    root: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl Backend {
    fn file() -> Self {
        let temp = tempfile::tempdir().unwrap();
        Backend {
            storage: Arc::new(FileStorage),
            root: temp.path().to_path_buf(),
            _temp: Some(temp),
        }
    }

    fn memory() -> Self {
        Backend {
            storage: Arc::new(MemoryStorage::new()),
            root: PathBuf::from("/josef-memory"),
            _temp: None,
        }
    }

    fn dir(&self, partition: &str) -> PathBuf {
        self.root.join(partition)
    }

    fn open(&self, dir: &Path, config: LogConfig) -> Log {
        self.open_with(dir, config, PartitionState::Standalone)
    }

    fn open_with(&self, dir: &Path, config: LogConfig, state: PartitionState) -> Log {
        Log::open_in(self.storage.clone(), dir, config, 0, state).unwrap()
    }

    fn exists(&self, path: &Path) -> bool {
        self.storage.exists(path)
    }

    fn names(&self, dir: &Path) -> Vec<String> {
        self.storage.read_dir(dir).unwrap()
    }

    fn len(&self, path: &Path) -> u64 {
        self.storage.open_file(path, false).unwrap().len().unwrap()
    }

    fn read_to_string(&self, path: &Path) -> String {
        String::from_utf8(self.storage.read(path).unwrap()).unwrap()
    }
}

fn small_config() -> LogConfig {
    LogConfig {
        segment_bytes: 4096,
        index_interval_bytes: 256,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    }
}

fn value(n: usize) -> Vec<u8> {
    vec![b'x'; n]
}

fn append(log: &mut Log, ts: i64, records: usize, value_len: usize) -> josef_log::LogAppendInfo {
    let v = value(value_len);
    let recs: Vec<_> = (0..records).map(|_| (None, Some(&v[..]))).collect();
    log.append_as_leader(batch(0, ts, &recs), 3, ts, TimestampType::CreateTime)
        .unwrap()
}

fn offsets_of(records: &[u8]) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < records.len() {
        let h = josef_log::BatchHeader::parse(&records[pos..]).unwrap();
        out.push((h.base_offset, h.last_offset()));
        pos += h.total_size();
    }
    out
}

fn append_assigns_offsets_from_the_log_end_offset_and_sets_the_epoch(s: &Backend) {
    let mut log = s.open(&s.dir("t-0"), small_config());
    let a = append(&mut log, 10, 3, 10);
    assert_eq!((a.first_offset, a.last_offset), (0, 2));
    let b = append(&mut log, 11, 2, 10);
    assert_eq!((b.first_offset, b.last_offset), (3, 4));
    assert_eq!(log.log_end_offset(), 5);
    let h = josef_log::BatchHeader::parse(&b.records).unwrap();
    assert_eq!(h.base_offset, 3);
    assert_eq!(h.partition_leader_epoch, 3);
    // The CRC still matches: base offset and epoch are outside it.
    assert_eq!(crc32c::crc32c(&b.records[21..]), h.crc);
}

fn log_append_time_overwrites_max_timestamp_and_recomputes_crc(s: &Backend) {
    let mut log = s.open(&s.dir("t-0"), small_config());
    let info = log
        .append_as_leader(
            batch(0, 5, &[(None, Some(b"v"))]),
            0,
            777,
            TimestampType::LogAppendTime,
        )
        .unwrap();
    assert_eq!(info.log_append_time, 777);
    assert_eq!(info.max_timestamp, 777);
    let h = josef_log::BatchHeader::parse(&info.records).unwrap();
    assert_eq!(h.max_timestamp, 777);
    assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(crc32c::crc32c(&info.records[21..]), h.crc);
}

fn append_rejects_corrupt_partial_and_oversized_batches(s: &Backend) {
    let mut log = s.open(
        &s.dir("t-0"),
        LogConfig {
            max_message_bytes: 200,
            ..small_config()
        },
    );
    let mut bad = batch(0, 1, &[(None, Some(b"v"))]);
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert!(matches!(
        log.append_as_leader(bad, 0, 1, TimestampType::CreateTime),
        Err(LogError::CorruptRecords(_))
    ));
    let mut partial = batch(0, 1, &[(None, Some(b"v"))]);
    partial.truncate(partial.len() - 2);
    assert!(matches!(
        log.append_as_leader(partial, 0, 1, TimestampType::CreateTime),
        Err(LogError::InvalidRecords(_))
    ));
    let big = value(300);
    assert!(matches!(
        log.append_as_leader(
            batch(0, 1, &[(None, Some(&big[..]))]),
            0,
            1,
            TimestampType::CreateTime
        ),
        Err(LogError::RecordTooLarge { .. })
    ));
    assert!(matches!(
        log.append_as_leader(BytesMut::new(), 0, 1, TimestampType::CreateTime),
        Err(LogError::InvalidRecords(_))
    ));
    assert_eq!(log.log_end_offset(), 0);
}

fn read_returns_whole_batches_and_the_first_batch_even_if_larger_than_max_bytes(s: &Backend) {
    let mut log = s.open(&s.dir("t-0"), LogConfig::default());
    let a = append(&mut log, 1, 1, 500);
    let b = append(&mut log, 2, 1, 500);
    append(&mut log, 3, 1, 500);
    let leo = log.log_end_offset();
    // min_one_message: the first batch comes whole even though max_bytes is 10.
    let r = log.read(0, 10, leo, true).unwrap();
    assert_eq!(r.records, a.records);
    // without it: nothing, flagged incomplete.
    let r = log.read(0, 10, leo, false).unwrap();
    assert!(r.records.is_empty());
    assert!(r.first_entry_incomplete);
    // max_bytes between one and two batches: one whole batch, never a partial second.
    let r = log.read(0, a.records.len() + 100, leo, false).unwrap();
    assert_eq!(r.records, a.records);
    // a read from an offset inside the log starts at the batch holding it.
    let r = log.read(1, 1 << 20, leo, true).unwrap();
    assert_eq!(offsets_of(&r.records), vec![(1, 1), (2, 2)]);
    assert_eq!(&r.records[..b.records.len()], &b.records[..]);
}

fn read_stops_at_the_bound_and_is_empty_at_the_end(s: &Backend) {
    let mut log = s.open(&s.dir("t-0"), small_config());
    for i in 0..5 {
        append(&mut log, i, 2, 100);
    }
    let r = log.read(0, 1 << 20, 4, true).unwrap();
    assert_eq!(offsets_of(&r.records), vec![(0, 1), (2, 3)]);
    let r = log.read(4, 1 << 20, 4, true).unwrap();
    assert!(r.records.is_empty());
    let r = log.read(10, 1 << 20, 10, true).unwrap();
    assert!(r.records.is_empty());
}

fn read_outside_the_log_is_offset_out_of_range(s: &Backend) {
    let mut log = s.open(&s.dir("t-0"), small_config());
    append(&mut log, 0, 2, 10);
    assert!(matches!(
        log.read(3, 100, 3, true),
        Err(LogError::OffsetOutOfRange { offset: 3, .. })
    ));
    assert!(matches!(
        log.read(-1, 100, 3, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
}

fn segment_rolls_on_segment_bytes_and_reads_cross_segments(s: &Backend) {
    let mut log = s.open(&s.dir("t-0"), small_config());
    for i in 0..40 {
        append(&mut log, i, 1, 300);
    }
    assert!(log.segment_count() > 3, "{}", log.segment_count());
    for seg in log.segments() {
        assert!(seg.size() <= 4096);
    }
    let leo = log.log_end_offset();
    let mut next = 0;
    while next < leo {
        let r = log.read(next, 1000, leo, true).unwrap();
        let offs = offsets_of(&r.records);
        assert_eq!(offs[0].0, next);
        next = offs.last().unwrap().1 + 1;
    }
    assert_eq!(next, 40);
}

fn offset_index_gets_an_entry_every_index_interval_bytes(s: &Backend) {
    let mut log = s.open(
        &s.dir("t-0"),
        LogConfig {
            index_interval_bytes: 1000,
            ..LogConfig::default()
        },
    );
    for i in 0..20 {
        append(&mut log, i, 1, 240); // ~300-byte batches
    }
    let seg = log.segments().next().unwrap();
    let size = seg.size() as usize;
    let entries = seg.offset_index().entries();
    // One entry after more than 1000 bytes: about size / 1200.
    assert!(
        entries >= size / 1400 && entries <= size / 1000,
        "{entries} for {size}"
    );
    for i in 0..entries {
        let e = seg.offset_index().entry(i);
        let b = seg.batch_at(e.position).unwrap().unwrap();
        assert_eq!(b.header.last_offset(), e.offset);
    }
}

fn segment_rolls_when_older_than_segment_ms(s: &Backend) {
    let mut log = s.open(
        &s.dir("t-0"),
        LogConfig {
            segment_ms: 1000,
            ..LogConfig::default()
        },
    );
    append(&mut log, 100, 1, 10);
    append(&mut log, 1100, 1, 10);
    assert_eq!(log.segment_count(), 1);
    let info = append(&mut log, 1101, 1, 10);
    assert_eq!(info.rolled_to, Some(2));
    assert_eq!(log.segment_base_offsets(), vec![0, 2]);
}

fn segment_rolls_when_the_offset_index_is_full(s: &Backend) {
    let mut log = s.open(
        &s.dir("t-0"),
        LogConfig {
            index_interval_bytes: 1,
            segment_index_bytes: 48, // 6 offset entries, 4 time entries (1 reserved)
            ..LogConfig::default()
        },
    );
    for i in 0..20 {
        append(&mut log, i, 1, 10);
    }
    assert!(log.segment_count() >= 4);
    for seg in log.segments() {
        assert!(seg.time_index().entries() <= 4);
    }
}

fn roll_flushes_and_moves_the_recovery_point(s: &Backend) {
    let mut log = s.open(&s.dir("t-0"), small_config());
    append(&mut log, 0, 1, 10);
    assert_eq!(log.recovery_point(), 0);
    log.roll(0, 0).unwrap();
    assert_eq!(log.recovery_point(), 1);
    assert_eq!(log.segment_base_offsets(), vec![0, 1]);
}

fn flush_messages_policy_fsyncs_every_n_offsets(s: &Backend) {
    let mut log = s.open(
        &s.dir("t-0"),
        LogConfig {
            flush_messages: 3,
            ..small_config()
        },
    );
    append(&mut log, 0, 2, 10);
    assert_eq!(log.recovery_point(), 0);
    append(&mut log, 0, 1, 10);
    assert_eq!(log.recovery_point(), 3);
}

fn flush_ms_policy_fsyncs_after_the_interval(s: &Backend) {
    let mut log = s.open(
        &s.dir("t-0"),
        LogConfig {
            flush_ms: 100,
            ..small_config()
        },
    );
    log.append_as_leader(
        batch(0, 0, &[(None, Some(b"v"))]),
        0,
        50,
        TimestampType::CreateTime,
    )
    .unwrap();
    assert_eq!(log.recovery_point(), 0);
    assert!(log.maybe_flush(150).unwrap());
    assert_eq!(log.recovery_point(), 1);
}

fn clean_close_and_reopen_keeps_everything_without_recovery(s: &Backend) {
    let dir = s.dir("t-0");
    let mut log = s.open(&dir, small_config());
    let mut all = Vec::new();
    for i in 0..30 {
        all.push(append(&mut log, 1000 + i, 2, 200).records);
    }
    let bases = log.segment_base_offsets();
    log.close().unwrap();
    assert!(s.exists(&dir.join(".kafka_cleanshutdown")));
    // closed indexes are trimmed to their entries
    let indexes: Vec<String> = s
        .names(&dir)
        .into_iter()
        .filter(|n| n.ends_with(".index"))
        .collect();
    assert_eq!(indexes.len(), bases.len());
    for name in indexes {
        let len = s.len(&dir.join(name));
        assert_eq!(len % 8, 0);
        assert!(len < 4096);
    }
    let log = s.open(&dir, small_config());
    assert!(log.load_report().clean_shutdown);
    assert!(log.load_report().recovered_segments.is_empty());
    assert!(!s.exists(&dir.join(".kafka_cleanshutdown")));
    assert_eq!(log.segment_base_offsets(), bases);
    assert_eq!(log.log_end_offset(), 60);
    let r = log.read(0, 1 << 20, 60, true).unwrap();
    let expected: Vec<u8> = all
        .iter()
        .take_while(|_| true)
        .flat_map(|b| b.to_vec())
        .collect();
    assert!(expected.starts_with(&r.records));
}

fn reopen_after_unclean_stop_recovers_and_keeps_whole_batches(s: &Backend) {
    let dir = s.dir("t-0");
    let mut log = s.open(&dir, small_config());
    for i in 0..30 {
        append(&mut log, i, 2, 200);
    }
    drop(log); // no close: no marker
    let log = s.open(&dir, small_config());
    assert!(!log.load_report().clean_shutdown);
    assert!(!log.load_report().recovered_segments.is_empty());
    assert_eq!(log.log_end_offset(), 60);
    assert_eq!(log.load_report().truncated_bytes, 0);
}

fn appends_continue_after_reopen_in_the_active_segment(s: &Backend) {
    let dir = s.dir("t-0");
    let mut log = s.open(
        &dir,
        LogConfig {
            index_interval_bytes: 100,
            ..small_config()
        },
    );
    for i in 0..3 {
        append(&mut log, i, 1, 50);
    }
    log.close().unwrap();
    let mut log = s.open(
        &dir,
        LogConfig {
            index_interval_bytes: 100,
            ..small_config()
        },
    );
    for i in 0..3 {
        append(&mut log, i, 1, 50);
    }
    assert_eq!(log.log_end_offset(), 6);
    log.close().unwrap();
    let log = s.open(
        &dir,
        LogConfig {
            index_interval_bytes: 100,
            ..small_config()
        },
    );
    assert!(log.load_report().recovered_segments.is_empty());
    let r = log.read(0, 1 << 20, 6, true).unwrap();
    assert_eq!(offsets_of(&r.records).len(), 6);
    for o in 0..6 {
        let r = log.read(o, 1, 6, true).unwrap();
        assert_eq!(offsets_of(&r.records), vec![(o, o)]);
    }
}

fn timestamp_lookup_finds_first_batch_at_or_after_target(s: &Backend) {
    let mut log = s.open(&s.dir("t-0"), small_config());
    for i in 0..50 {
        append(&mut log, 1000 + i * 10, 1, 100);
    }
    let r = log.fetch_offset_by_timestamp(1000).unwrap().unwrap();
    assert_eq!((r.offset, r.timestamp), (0, 1000));
    let r = log.fetch_offset_by_timestamp(1205).unwrap().unwrap();
    assert_eq!((r.offset, r.timestamp), (21, 1210));
    let r = log.fetch_offset_by_timestamp(0).unwrap().unwrap();
    assert_eq!(r.offset, 0);
    assert_eq!(log.fetch_offset_by_timestamp(99_999).unwrap(), None);
    let m = log.offset_of_max_timestamp().unwrap().unwrap();
    assert_eq!((m.offset, m.timestamp), (49, 1490));
}

fn retention_by_time_deletes_old_closed_segments_and_advances_log_start(s: &Backend) {
    let mut log = s.open(
        &s.dir("t-0"),
        LogConfig {
            retention_ms: 1000,
            ..small_config()
        },
    );
    for i in 0..40 {
        append(&mut log, i * 100, 1, 300);
    }
    log.update_high_watermark(log.log_end_offset());
    let before = log.segment_count();
    let n = log.delete_old_segments(3000).unwrap();
    assert!(n > 0 && n < before);
    let first = log.segment_base_offsets()[0];
    assert_eq!(log.log_start_offset(), first);
    for seg in log.segments().take(log.segment_count() - 1) {
        assert!(3000 - seg.largest_timestamp() <= 1000);
    }
    assert!(matches!(
        log.read(0, 10, 40, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    // the active segment survives even when everything is old
    log.delete_old_segments(1_000_000).unwrap();
    assert_eq!(log.segment_count(), 1);
    assert_eq!(log.log_end_offset(), 40);
}

fn retention_never_deletes_past_the_high_watermark(s: &Backend) {
    let mut log = s.open(
        &s.dir("t-0"),
        LogConfig {
            retention_ms: 1,
            ..small_config()
        },
    );
    for i in 0..40 {
        append(&mut log, i, 1, 300);
    }
    log.update_high_watermark(0);
    assert_eq!(log.delete_old_segments(1_000_000).unwrap(), 0);
}

fn retention_by_size_deletes_oldest_segments_while_the_log_stays_above_retention_bytes(
    s: &Backend,
) {
    let mut log = s.open(
        &s.dir("t-0"),
        LogConfig {
            retention_bytes: 10_000,
            retention_ms: -1,
            ..small_config()
        },
    );
    for i in 0..100 {
        append(&mut log, i, 1, 300);
    }
    log.update_high_watermark(log.log_end_offset());
    let before = log.size_in_bytes();
    assert!(log.delete_old_segments(0).unwrap() > 0);
    // Kafka's rule: delete the oldest segment while the log stays at least retention.bytes.
    assert!(log.size_in_bytes() >= 10_000 && log.size_in_bytes() < before);
    let oldest = log.segments().next().unwrap().size() as u64;
    assert!(log.size_in_bytes() - oldest < 10_000);
}

fn delete_records_moves_log_start_and_deletes_segments_below_it(s: &Backend) {
    let dir = s.dir("t-0");
    let mut log = s.open(&dir, small_config());
    for i in 0..40 {
        append(&mut log, i, 1, 300);
    }
    assert!(log.delete_records_before(41).is_err()); // above HW
    log.update_high_watermark(40);
    assert_eq!(log.delete_records_before(25).unwrap(), 25);
    assert!(log.segment_base_offsets()[0] <= 25);
    assert!(log.segment_base_offsets().get(1).map_or(true, |&b| b > 25));
    assert!(matches!(
        log.read(24, 10, 40, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    let r = log.read(25, 10, 40, true).unwrap();
    assert_eq!(offsets_of(&r.records), vec![(25, 25)]);
    log.close().unwrap();
    let log = s.open(&dir, small_config());
    assert_eq!(log.log_start_offset(), 25);
}

fn truncate_to_removes_later_batches_and_segments(s: &Backend) {
    let dir = s.dir("t-0");
    let mut log = s.open(&dir, small_config());
    for i in 0..40 {
        append(&mut log, i, 1, 300);
    }
    log.update_high_watermark(40);
    log.truncate_to(17, 0).unwrap();
    assert_eq!(log.log_end_offset(), 17);
    assert_eq!(log.high_watermark(), 17);
    assert!(log.segment_base_offsets().iter().all(|&b| b <= 17));
    let info = append(&mut log, 99, 1, 10);
    assert_eq!(info.first_offset, 17);
    log.close().unwrap();
    let log = s.open(&dir, small_config());
    assert_eq!(log.log_end_offset(), 18);
}

fn aborted_transactions_are_indexed_with_their_marker_and_collected(s: &Backend) {
    let dir = s.dir("t-0");
    let mut log = s.open(&dir, small_config());
    let data = TestBatch::new(0)
        .producer(9, 0, 0)
        .transactional()
        .record(1, None, Some(b"a"))
        .build();
    let first = log
        .append_as_leader(data, 0, 1, TimestampType::CreateTime)
        .unwrap()
        .first_offset;
    for i in 0..20 {
        append(&mut log, i, 1, 300);
    }
    let marker = TestBatch::new(0)
        .producer(9, 0, -1)
        .control_marker(2, false)
        .build();
    let m = log
        .append_as_leader(marker, 0, 2, TimestampType::CreateTime)
        .unwrap();
    let txn = AbortedTxn {
        producer_id: 9,
        first_offset: first,
        last_offset: m.last_offset,
        last_stable_offset: first,
    };
    log.append_aborted_txn(txn).unwrap();
    log.append_aborted_txn(txn).unwrap(); // idempotent
    assert!(log.segment_count() > 1);
    assert_eq!(log.collect_aborted_transactions(0, 100), vec![txn]);
    assert_eq!(
        log.collect_aborted_transactions(m.last_offset + 1, 100),
        vec![]
    );
    assert_eq!(log.collect_aborted_transactions(0, first), vec![]);
    log.close().unwrap();
    let log = s.open(&dir, small_config());
    assert_eq!(log.collect_aborted_transactions(5, 100), vec![txn]);
}

fn producer_snapshots_are_opaque_bytes_stored_by_offset(s: &Backend) {
    let dir = s.dir("t-0");
    let mut log = s.open(&dir, small_config());
    assert_eq!(log.latest_producer_snapshot().unwrap(), None);
    for i in 0..40 {
        append(&mut log, i, 1, 300);
    }
    log.write_producer_snapshot(10, b"ten").unwrap();
    log.write_producer_snapshot(30, b"thirty").unwrap();
    assert!(s.exists(&dir.join("00000000000000000030.snapshot")));
    let (o, b) = log.latest_producer_snapshot().unwrap().unwrap();
    assert_eq!((o, &b[..]), (30, &b"thirty"[..]));
    log.truncate_to(20, 0).unwrap();
    assert_eq!(log.producer_snapshot_offsets(), vec![10]);
    log.close().unwrap();
    let log = s.open(&dir, small_config());
    assert_eq!(log.latest_producer_snapshot().unwrap().unwrap().0, 10);
}

fn batches_from_replays_every_batch_for_producer_state(s: &Backend) {
    let mut log = s.open(&s.dir("t-0"), small_config());
    for i in 0..40 {
        append(&mut log, i, 2, 100);
    }
    let all: Vec<_> = log.iter_batches_from(31).collect::<Result<_, _>>().unwrap();
    assert_eq!(all[0].1.header.base_offset, 30);
    assert_eq!(all.last().unwrap().1.header.last_offset(), 79);
    assert_eq!(all.len(), 25);
    for (base, b, bytes) in &all {
        assert!(*base <= b.header.base_offset);
        assert_eq!(bytes.len(), b.header.total_size());
    }
    assert_eq!(log.iter_batches_from(80).count(), 0);
    assert_eq!(log.batches_from(0).unwrap().len(), 40);
}

fn checkpoint_files_use_kafka_format(s: &Backend) {
    let dir = s.dir("topic-a-7");
    let mut log = s.open(&dir, small_config());
    append(&mut log, 0, 5, 10);
    log.close().unwrap();
    let text = s.read_to_string(&dir.join("recovery-point-offset-checkpoint"));
    assert_eq!(text, "0\n1\ntopic-a 7 5\n");
    let text = s.read_to_string(&dir.join(".kafka_cleanshutdown"));
    assert_eq!(text, josef_log::CLEAN_SHUTDOWN_CONTENT);
}

fn managed_state_writes_no_partition_files(s: &Backend) {
    let dir = s.dir("t-0");
    let state = josef_log::PartitionState::Managed {
        recovery_point: 0,
        log_start_offset: 0,
        clean_shutdown: false,
    };
    let mut log = s.open_with(&dir, small_config(), state);
    append(&mut log, 0, 5, 10);
    log.close().unwrap();
    assert!(!s.exists(&dir.join(".kafka_cleanshutdown")));
    assert!(!s.exists(&dir.join("recovery-point-offset-checkpoint")));
}

fn timestamp_lookup_finds_the_first_record_inside_a_batch(s: &Backend) {
    let mut log = s.open(&s.dir("t-0"), small_config());
    let b = TestBatch::new(0)
        .record(100, None, Some(b"a"))
        .record(300, None, Some(b"b"))
        .record(200, None, Some(b"c"))
        .record(400, None, Some(b"d"))
        .build();
    log.append_as_leader(b, 0, 0, TimestampType::CreateTime)
        .unwrap();
    let r = log.fetch_offset_by_timestamp(150).unwrap().unwrap();
    assert_eq!((r.offset, r.timestamp), (1, 300));
    let r = log.fetch_offset_by_timestamp(400).unwrap().unwrap();
    assert_eq!((r.offset, r.timestamp), (3, 400));
    let m = log.offset_of_max_timestamp().unwrap().unwrap();
    assert_eq!((m.offset, m.timestamp), (3, 400));
}

fn timestamp_lookup_reads_compressed_batches(s: &Backend) {
    let mut log = s.open(&s.dir("t-0"), small_config());
    let b = josef_records::RecordBatchBuilder::new()
        .compression(josef_records::Compression::Zstd)
        .record(10, None, Some(b"a"))
        .record(20, None, Some(b"b"))
        .build()
        .unwrap();
    log.append_as_leader(b, 0, 0, TimestampType::CreateTime)
        .unwrap();
    let r = log.fetch_offset_by_timestamp(15).unwrap().unwrap();
    assert_eq!((r.offset, r.timestamp), (1, 20));
}

fn follower_appends_keep_their_offsets_and_must_not_go_backwards(s: &Backend) {
    let mut log = s.open(&s.dir("t-0"), small_config());
    let b = batch(0, 1, &[(None, Some(b"a")), (None, Some(b"b"))]).freeze();
    let info = log.append_as_follower(b.clone(), 0).unwrap();
    assert_eq!((info.first_offset, info.last_offset), (0, 1));
    assert_eq!(info.records, b);
    // A gap (a compacted source) is kept as is.
    let g = batch(10, 2, &[(None, Some(b"c"))]).freeze();
    assert_eq!(log.append_as_follower(g, 0).unwrap().first_offset, 10);
    assert_eq!(log.log_end_offset(), 11);
    let old = batch(5, 3, &[(None, Some(b"d"))]).freeze();
    assert!(matches!(
        log.append_as_follower(old, 0),
        Err(LogError::InvalidOffset(_))
    ));
    let r = log.read(2, 1 << 20, 11, true).unwrap();
    assert_eq!(offsets_of(&r.records), vec![(10, 10)]);
}

fn deleted_segments_are_renamed_deleted_and_removed_after_file_delete_delay_ms(s: &Backend) {
    let dir = s.dir("t-0");
    let mut log = s.open(
        &dir,
        LogConfig {
            retention_ms: 1000,
            file_delete_delay_ms: 60_000,
            ..small_config()
        },
    );
    for i in 0..40 {
        append(&mut log, i * 100, 1, 300);
    }
    log.update_high_watermark(log.log_end_offset());
    let first = log.segment_base_offsets()[0];
    // A reader that already holds data of the segment keeps it whatever happens next.
    let held = log.read(0, 1 << 20, 40, true).unwrap();
    let n = log.delete_old_segments(3000).unwrap();
    assert!(n > 0);
    let name = |suffix: &str| dir.join(format!("{first:020}.log{suffix}"));
    assert!(!s.exists(&name("")));
    assert!(s.exists(&name(".deleted")), "renamed, not yet removed");
    assert_eq!(log.pending_deletions(), n);
    assert_eq!(offsets_of(&held.records)[0].0, 0);
    // Not yet due...
    assert_eq!(log.delete_expired_files(3000 + 59_999).unwrap(), 0);
    assert!(s.exists(&name(".deleted")));
    // ...then gone.
    assert_eq!(log.delete_expired_files(3000 + 60_000).unwrap(), n);
    assert!(!s.exists(&name(".deleted")));
    assert_eq!(log.pending_deletions(), 0);
}

fn a_crash_before_file_delete_delay_ms_leaves_deleted_files_that_open_removes(s: &Backend) {
    let dir = s.dir("t-0");
    let config = LogConfig {
        retention_ms: 1000,
        ..small_config()
    };
    let mut log = s.open(&dir, config.clone());
    for i in 0..40 {
        append(&mut log, i * 100, 1, 300);
    }
    log.update_high_watermark(log.log_end_offset());
    log.delete_old_segments(3000).unwrap();
    let start = log.log_start_offset();
    drop(log); // crash: the .deleted files are still there
    let deleted = || {
        s.names(&dir)
            .iter()
            .filter(|n| n.ends_with(".deleted"))
            .count()
    };
    assert!(deleted() > 0);
    let log = s.open(&dir, config);
    assert_eq!(deleted(), 0);
    assert_eq!(log.log_start_offset(), start);
}

fn file_delete_delay_ms_zero_removes_files_at_once(s: &Backend) {
    let dir = s.dir("t-0");
    let mut log = s.open(
        &dir,
        LogConfig {
            retention_ms: 1000,
            file_delete_delay_ms: 0,
            ..small_config()
        },
    );
    for i in 0..40 {
        append(&mut log, i * 100, 1, 300);
    }
    log.update_high_watermark(log.log_end_offset());
    assert!(log.delete_old_segments(3000).unwrap() > 0);
    assert_eq!(log.pending_deletions(), 0);
    assert!(!s.names(&dir).iter().any(|n| n.ends_with(".deleted")));
}

fn crc_checked_append_skips_only_the_crc_and_assigns_offsets_like_append_as_leader(s: &Backend) {
    let mut log = s.open(&s.dir("t-0"), small_config());
    let good = batch(0, 5, &[(None, Some(b"a")), (None, Some(b"b"))]);
    let a = log
        .append_as_leader_crc_checked(good, 7, 5, TimestampType::CreateTime)
        .unwrap();
    assert_eq!((a.first_offset, a.last_offset), (0, 1));
    let h = josef_log::BatchHeader::parse(&a.records).unwrap();
    assert_eq!((h.base_offset, h.partition_leader_epoch), (0, 7));
    assert_eq!(crc32c::crc32c(&a.records[21..]), h.crc);
    // The caller vouches for the CRC: a flipped bit is not looked for (append_as_leader rejects
    // it, see append_rejects_corrupt_partial_and_oversized_batches) ...
    let mut flipped = batch(0, 6, &[(None, Some(b"v"))]);
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let b = log
        .append_as_leader_crc_checked(flipped, 7, 6, TimestampType::CreateTime)
        .unwrap();
    assert_eq!(b.first_offset, 2);
    // ... but every other check still runs.
    let mut partial = batch(0, 1, &[(None, Some(b"v"))]);
    partial.truncate(partial.len() - 2);
    assert!(matches!(
        log.append_as_leader_crc_checked(partial, 7, 7, TimestampType::CreateTime),
        Err(LogError::InvalidRecords(_))
    ));
    assert_eq!(log.log_end_offset(), 3);
}

fn a_torn_tail_is_cut_on_reopen_and_the_whole_batches_kept(s: &Backend) {
    let dir = s.dir("t-0");
    let mut log = s.open(&dir, small_config());
    for i in 0..30 {
        append(&mut log, i, 2, 200);
    }
    let before = log.read(0, 1 << 20, 60, true).unwrap().records;
    let active = *log.segment_base_offsets().last().unwrap();
    drop(log); // a crash, then half a batch lands after the last whole one
    let path = dir.join(format!("{active:020}.log"));
    let f = s.storage.open_file(&path, false).unwrap();
    f.write_all_at(&[b"torn tail"], f.len().unwrap()).unwrap();
    let log = s.open(&dir, small_config());
    assert!(!log.load_report().clean_shutdown);
    assert_eq!(log.load_report().truncated_bytes, 9);
    assert_eq!(log.log_end_offset(), 60);
    assert_eq!(log.read(0, 1 << 20, 60, true).unwrap().records, before);
}

/// One `#[test]` per behaviour and storage: `on_file::x` and `on_memory::x` run the body `x`.
macro_rules! on_both_storages {
    ($($name:ident,)*) => {
        mod on_file {
            $(#[test]
            fn $name() {
                super::$name(&super::Backend::file());
            })*
        }
        mod on_memory {
            $(#[test]
            fn $name() {
                super::$name(&super::Backend::memory());
            })*
        }
    };
}

on_both_storages! {
    append_assigns_offsets_from_the_log_end_offset_and_sets_the_epoch,
    log_append_time_overwrites_max_timestamp_and_recomputes_crc,
    append_rejects_corrupt_partial_and_oversized_batches,
    read_returns_whole_batches_and_the_first_batch_even_if_larger_than_max_bytes,
    read_stops_at_the_bound_and_is_empty_at_the_end,
    read_outside_the_log_is_offset_out_of_range,
    segment_rolls_on_segment_bytes_and_reads_cross_segments,
    offset_index_gets_an_entry_every_index_interval_bytes,
    segment_rolls_when_older_than_segment_ms,
    segment_rolls_when_the_offset_index_is_full,
    roll_flushes_and_moves_the_recovery_point,
    flush_messages_policy_fsyncs_every_n_offsets,
    flush_ms_policy_fsyncs_after_the_interval,
    clean_close_and_reopen_keeps_everything_without_recovery,
    reopen_after_unclean_stop_recovers_and_keeps_whole_batches,
    appends_continue_after_reopen_in_the_active_segment,
    timestamp_lookup_finds_first_batch_at_or_after_target,
    retention_by_time_deletes_old_closed_segments_and_advances_log_start,
    retention_never_deletes_past_the_high_watermark,
    retention_by_size_deletes_oldest_segments_while_the_log_stays_above_retention_bytes,
    delete_records_moves_log_start_and_deletes_segments_below_it,
    truncate_to_removes_later_batches_and_segments,
    aborted_transactions_are_indexed_with_their_marker_and_collected,
    producer_snapshots_are_opaque_bytes_stored_by_offset,
    batches_from_replays_every_batch_for_producer_state,
    checkpoint_files_use_kafka_format,
    managed_state_writes_no_partition_files,
    timestamp_lookup_finds_the_first_record_inside_a_batch,
    timestamp_lookup_reads_compressed_batches,
    follower_appends_keep_their_offsets_and_must_not_go_backwards,
    deleted_segments_are_renamed_deleted_and_removed_after_file_delete_delay_ms,
    a_crash_before_file_delete_delay_ms_leaves_deleted_files_that_open_removes,
    file_delete_delay_ms_zero_removes_files_at_once,
    crc_checked_append_skips_only_the_crc_and_assigns_offsets_like_append_as_leader,
    a_torn_tail_is_cut_on_reopen_and_the_whole_batches_kept,
}
