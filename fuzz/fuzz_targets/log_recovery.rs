//! Recovers a partition directory built from fuzzed segment and index bytes: opening, reading
//! every offset, looking up timestamps, appending and reopening must never panic, and the
//! recovered log must be readable end to end.
#![no_main]

use josef_log::{Log, LogConfig, TimestampType};
use libfuzzer_sys::fuzz_target;

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 4096,
        index_interval_bytes: 64,
        segment_index_bytes: 1024,
        ..LogConfig::default()
    }
}

fn take<'a>(data: &mut &'a [u8], n: usize) -> &'a [u8] {
    let n = n.min(data.len());
    let (head, rest) = data.split_at(n);
    *data = rest;
    head
}

fuzz_target!(|input: &[u8]| {
    let mut data = input;
    let head = take(&mut data, 8);
    if head.len() < 8 {
        return;
    }
    let flags = head[0];
    let idx_len = usize::from(head[1]) * 4;
    let time_len = usize::from(head[2]) * 4;
    let txn_len = usize::from(head[3]) * 2;
    let second_base = i64::from(u16::from_be_bytes([head[4], head[5]]));
    let split = usize::from(u16::from_be_bytes([head[6], head[7]]));
    let index = take(&mut data, idx_len);
    let time = take(&mut data, time_len);
    let txn = take(&mut data, txn_len);
    let log = data;

    let Ok(tmp) = tempfile::tempdir() else { return };
    let dir = tmp.path().join("f-0");
    std::fs::create_dir_all(&dir).unwrap();
    let name = |base: i64, ext: &str| dir.join(format!("{base:020}{ext}"));
    if flags & 1 != 0 && second_base > 0 {
        // Two segments: the log bytes split between them.
        let (a, b) = log.split_at(split.min(log.len()));
        std::fs::write(name(0, ".log"), a).unwrap();
        std::fs::write(name(second_base, ".log"), b).unwrap();
        std::fs::write(name(second_base, ".index"), index).unwrap();
        std::fs::write(name(second_base, ".timeindex"), time).unwrap();
    } else {
        std::fs::write(name(0, ".log"), log).unwrap();
        std::fs::write(name(0, ".index"), index).unwrap();
        std::fs::write(name(0, ".timeindex"), time).unwrap();
    }
    if !txn.is_empty() {
        std::fs::write(name(0, ".txnindex"), txn).unwrap();
    }
    if flags & 2 != 0 {
        std::fs::write(dir.join(".kafka_cleanshutdown"), b"{}").unwrap();
    }
    if flags & 4 != 0 {
        std::fs::write(
            dir.join("recovery-point-offset-checkpoint"),
            "0\n1\nf 0 1\n",
        )
        .unwrap();
    }

    let Ok(mut log) = Log::open(&dir, config(), 0) else {
        return;
    };
    let (start, end) = (log.log_start_offset(), log.log_end_offset());
    // A recovered (unclean) log reads end to end; a "clean" one may hold garbage the marker
    // vouched for, which must still only produce errors.
    let mut next = start;
    let mut steps = 0;
    while next < end && steps < 10_000 {
        steps += 1;
        match log.read(next, 1 << 16, end, true) {
            Ok(r) if !r.records.is_empty() => {
                let mut pos = 0;
                while pos < r.records.len() {
                    let h = josef_log::BatchHeader::parse(&r.records[pos..]).unwrap();
                    next = next.max(h.next_offset());
                    pos += h.total_size();
                }
            }
            Ok(_) => next += 1,
            Err(_) => {
                assert!(flags & 2 != 0, "unclean recovery left unreadable data");
                next += 1;
            }
        }
    }
    let _ = log.fetch_offset_by_timestamp(i64::from(flags));
    let _ = log.offset_of_max_timestamp();
    let _ = log.collect_aborted_transactions(start, end);
    let batch = josef_log::testing::batch(0, 1, &[(Some(b"k"), Some(b"v"))]);
    if log
        .append_as_leader(batch, 0, 1, TimestampType::CreateTime)
        .is_ok()
    {
        assert_eq!(log.log_end_offset(), end + 1);
    }
    if log.close().is_ok() {
        let _ = Log::open(&dir, config(), 0);
    }
});
