//! A partition whose log is over 100 GiB (issue #22's "log size" curve): it opens without reading
//! its data, and a fetch from its start costs what a fetch from its end costs. Counted through a
//! `CountingStorage` over the file system (bytes read, opens), never timed.
//!
//! The log is built cheaply: 101 segments of 1 GiB, each a batch at position 0, a hole (a sparse
//! file: nothing is written or allocated), and a batch at the end that the offset index points
//! at. Any read that walked the data would hit the hole's zeros and fail, so the test also shows
//! that nothing walks it.

use std::path::Path;
use std::sync::Arc;

use josef_log::segment::LogSegment;
use josef_log::storage::{CountingStorage, FileStorage, Storage};
use josef_log::testing::TestBatch;
use josef_log::{Log, LogConfig, PartitionState};

const SEGMENTS: i64 = 101;
const GIB: u64 = 1 << 30;

fn batch(offset: i64) -> bytes::BytesMut {
    TestBatch::new(offset)
        .record(1_000 + offset, Some(b"k"), Some(&[b'v'; 100]))
        .build()
}

/// Segment `k` holds offsets `2k` (at position 0) and `2k + 1` (at the end, past a hole).
fn build(storage: &Arc<dyn Storage>, dir: &Path, config: &LogConfig) -> usize {
    let len = batch(0).len();
    for k in 0..SEGMENTS {
        let base = 2 * k;
        let mut seg = LogSegment::open_in(storage.clone(), dir, base, config, 0).unwrap();
        seg.append(base, 1_000 + base, base, &batch(base)).unwrap();
        seg.close().unwrap();
        // The hole: the segment ends one batch short of `segment.bytes`, so the next append
        // rolls.
        let log_path = josef_log::naming::log_file(dir, base);
        let f = storage.open_file(&log_path, false).unwrap();
        f.set_len(u64::from(config.segment_bytes) - 2 * len as u64)
            .unwrap();
        drop(f);
        let mut seg = LogSegment::open_in(storage.clone(), dir, base, config, 0).unwrap();
        // Counts the hole as bytes since the last index entry, so the batch after it is indexed.
        seg.on_become_active().unwrap();
        seg.append(base + 1, 1_001 + base, base + 1, &batch(base + 1))
            .unwrap();
        seg.close().unwrap();
    }
    storage
        .write_atomically(&dir.join("leader-epoch-checkpoint"), b"0\n1\n0 0\n")
        .unwrap();
    len
}

#[test]
fn a_100_gib_log_opens_and_fetches_from_either_end_without_reading_its_data() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("big-0");
    let counting = Arc::new(CountingStorage::new(Arc::new(FileStorage)));
    let storage: Arc<dyn Storage> = counting.clone();
    storage.create_dir_all(&dir).unwrap();
    let config = LogConfig::default();
    assert_eq!(u64::from(config.segment_bytes), GIB);
    let batch_len = build(&storage, &dir, &config) as u64;

    let before = counting.calls();
    let log = Log::open_in(
        storage.clone(),
        &dir,
        config,
        0,
        PartitionState::Managed {
            recovery_point: 2 * SEGMENTS,
            log_start_offset: 0,
            clean_shutdown: true,
        },
    )
    .unwrap();
    let open = counting.calls();
    assert!(log.load_report().recovered_segments.is_empty());
    assert_eq!(log.log_end_offset(), 2 * SEGMENTS);
    assert!(log.size_in_bytes() > 100 * GIB, "{}", log.size_in_bytes());
    let read_at_open = open.bytes_read - before.bytes_read;
    // Per segment: the first and last entries of its two indexes; the active segment's last
    // batch header; the leader-epoch checkpoint.
    assert!(
        read_at_open <= SEGMENTS as u64 * 64 + 1024,
        "{read_at_open} bytes read to open a {} byte log",
        log.size_in_bytes()
    );

    let fetch = |offset: i64| {
        let before = counting.calls();
        let r = log.read(offset, 1, i64::MAX, true).unwrap();
        assert_eq!(r.records.len() as u64, batch_len, "one batch at {offset}");
        assert_eq!(r.first_batch_base_offset, Some(offset));
        let after = counting.calls();
        (
            after.bytes_read - before.bytes_read,
            after.opens - before.opens,
        )
    };
    let (first, first_maps) = fetch(0);
    let (last, last_maps) = fetch(2 * SEGMENTS - 1);
    let (middle, _) = fetch(SEGMENTS);
    eprintln!("open {read_at_open} B; fetch first {first} B, last {last} B, middle {middle} B; batch {batch_len} B; maps {first_maps} {last_maps}");
    // A fetch opens no file; the first lookup in a segment maps its offset index (Kafka's
    // `LazyIndex`), once: the same fetch again opens nothing.
    assert!(
        first_maps <= 2 && last_maps <= 2,
        "{first_maps} {last_maps}"
    );
    assert_eq!(fetch(0), (first, 0));
    assert_eq!(fetch(2 * SEGMENTS - 1), (last, 0));
    // The batch, its header read while looking it up, the index entries of the lookup and the
    // bound's position in the last segment: the same few hundred bytes wherever the fetch
    // starts.
    for (name, bytes) in [("first", first), ("last", last), ("middle", middle)] {
        assert!(
            bytes <= batch_len + 512,
            "{name} fetch read {bytes} bytes for a {batch_len} byte batch"
        );
    }
    assert!(first.abs_diff(last) <= 256, "first {first}, last {last}");
    drop(log);
}
