//! The `log_recovery` fuzz target's property as a proptest that runs with the test suite: a
//! partition directory of arbitrary segment and index bytes opens without panic, and after an
//! unclean stop everything it keeps is readable end to end.

use josef_log::{BatchHeader, Log, LogConfig, TimestampType};
use proptest::prelude::*;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 4096,
        index_interval_bytes: 64,
        segment_index_bytes: 1024,
        ..LogConfig::default()
    }
}

/// Valid batches with some bytes flipped, so inputs are near the format, not only noise.
fn log_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        1usize..6,
        proptest::collection::vec((0usize..2000, any::<u8>()), 0..4),
        0usize..2000,
    )
        .prop_map(|(n, flips, cut)| {
            let mut out = Vec::new();
            for i in 0..n {
                let b = josef_log::testing::TestBatch::new(i as i64)
                    .record(i as i64, Some(b"k"), Some(&vec![7u8; 10 * i]))
                    .build();
                out.extend_from_slice(&b);
            }
            for (at, x) in flips {
                if !out.is_empty() {
                    let at = at % out.len();
                    out[at] ^= x;
                }
            }
            out.truncate(cut.max(out.len() / 2));
            out
        })
}

/// Hundreds of opens: tmpfs makes their fsyncs free.
fn tempdir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(t) = tempfile::tempdir_in(shm) {
            return t;
        }
    }
    tempfile::tempdir().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn opening_arbitrary_segment_and_index_bytes_never_panics(
        log in log_bytes(),
        index in proptest::collection::vec(any::<u8>(), 0..64),
        time in proptest::collection::vec(any::<u8>(), 0..64),
        txn in proptest::collection::vec(any::<u8>(), 0..80),
        clean in any::<bool>(),
    ) {
        let tmp = tempdir();
        let dir = tmp.path().join("f-0");
        std::fs::create_dir_all(&dir).unwrap();
        let name = |ext: &str| dir.join(format!("{:020}{ext}", 0));
        std::fs::write(name(".log"), &log).unwrap();
        std::fs::write(name(".index"), &index).unwrap();
        std::fs::write(name(".timeindex"), &time).unwrap();
        std::fs::write(name(".txnindex"), &txn).unwrap();
        if clean {
            std::fs::write(dir.join(".kafka_cleanshutdown"), b"{}").unwrap();
        }
        let Ok(mut l) = Log::open(&dir, config(), 0) else { return Ok(()) };
        let (start, end) = (l.log_start_offset(), l.log_end_offset());
        let mut next = start;
        while next < end {
            match l.read(next, 1 << 16, end, true) {
                Ok(r) if !r.records.is_empty() => {
                    let mut pos = 0;
                    while pos < r.records.len() {
                        let h = BatchHeader::parse(&r.records[pos..]).unwrap();
                        next = next.max(h.next_offset());
                        pos += h.total_size();
                    }
                }
                Ok(_) => next += 1,
                Err(e) => {
                    prop_assert!(clean, "unclean recovery left unreadable data at {}: {}", next, e);
                    next += 1;
                }
            }
        }
        let _ = l.fetch_offset_by_timestamp(3);
        let _ = l.collect_aborted_transactions(start, end);
        let b = josef_log::testing::batch(0, 1, &[(Some(b"k"), Some(b"v"))]);
        if l.append_as_leader(b, 0, 1, TimestampType::CreateTime).is_ok() {
            prop_assert_eq!(l.log_end_offset(), end + 1);
        }
        if l.close().is_ok() {
            let reopened = Log::open(&dir, config(), 0);
            prop_assert!(reopened.is_ok());
        }
    }
}
