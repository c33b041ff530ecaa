//! The metadata log's files (josef-quorum) from arbitrary bytes, opened through the recovery the
//! node runs at start (`josef_quorum::fuzzing`): never a panic, never an allocation beyond a small
//! multiple of the input. A damaged segment is cut back to the prefix of records that check: what
//! is left on disk is a prefix of what was written, its entries follow each other without a gap,
//! and opening again changes nothing. A vote, purged or committed file or a snapshot from arbitrary
//! bytes is refused or loaded, never guessed past.
//!
//! Input: `mode: u8 | a: u8 | b: u8 | split: u16 BE | bytes`. Mode (low 2 bits):
//! 0: one segment `log-<a>.seg`; 1: two segments `log-<a>.seg` and `log-<a + b + 1>.seg`, the bytes
//! split at `split`; 2: the bytes as `vote.json`, `purged.json` or `committed.json` (by `b`), next to a
//! valid segment; 3: the bytes as a snapshot file `snapshot-<a>.snap`. With bit 2 of `mode` the
//! CRCs are made right first (each record's in a segment, the trailing one of a snapshot), so the
//! decoders behind them are reached.
#![no_main]

use std::fs;
use std::path::Path;

use josef_quorum::fuzzing::{load_snapshot, log_record, open_log, RecoveredLog};
use libfuzzer_sys::fuzz_target;

const SEGMENT_BYTES: u64 = 4096;

fn segment(dir: &Path, first: u64) -> std::path::PathBuf {
    dir.join(format!("log-{first:020}.seg"))
}

/// Entries follow each other, from the purge point on when there is one.
fn check_contiguous(log: &RecoveredLog) {
    for w in log.entries.windows(2) {
        assert_eq!(
            w[1].0,
            w[0].0 + 1,
            "a gap in the recovered log: {:?}",
            log.entries
        );
    }
    if let (Some(p), Some(first)) = (log.purged, log.entries.first()) {
        assert_eq!(
            Some(first.0),
            p.checked_add(1),
            "entries do not start after the purge point"
        );
    }
}

fn reopen_same(dir: &Path, log: &RecoveredLog, files: &[(std::path::PathBuf, Option<Vec<u8>>)]) {
    let again = open_log(dir, SEGMENT_BYTES).expect("a recovered log opens again");
    assert_eq!(&again, log, "a second recovery changed the log");
    for (path, before) in files {
        assert_eq!(
            &fs::read(path).ok(),
            before,
            "a second recovery changed {}",
            path.display()
        );
    }
}

/// Writes the right crc32c into every whole record of a segment.
fn fix_record_crcs(data: &mut [u8]) {
    let mut pos = 0;
    while pos + 8 <= data.len() {
        let len = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        let Some(end) = (pos + 8).checked_add(len).filter(|e| *e <= data.len()) else {
            break;
        };
        let crc = crc32c::crc32c(&data[pos + 8..end]);
        data[pos + 4..pos + 8].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 5 {
        return;
    }
    let (mode, a, b) = (input[0] & 3, u64::from(input[1]), input[2]);
    let split = usize::from(u16::from_be_bytes([input[3], input[4]]));
    let mut data = input[5..].to_vec();
    if input[0] & 4 != 0 {
        if mode == 3 {
            if data.len() >= 4 {
                let n = data.len() - 4;
                let crc = crc32c::crc32c(&data[..n]);
                data[n..].copy_from_slice(&crc.to_le_bytes());
            }
        } else {
            fix_record_crcs(&mut data);
        }
    }
    let data = &data[..];
    let Ok(tmp) = tempfile::tempdir() else { return };
    let dir = tmp.path();
    match mode {
        0 | 1 => {
            let mut written = vec![(segment(dir, a), data)];
            if mode == 1 {
                let (x, y) = data.split_at(split.min(data.len()));
                written = vec![
                    (segment(dir, a), x),
                    (segment(dir, a + u64::from(b) + 1), y),
                ];
            }
            for (path, bytes) in &written {
                fs::write(path, bytes).unwrap();
            }
            // Segments alone (no vote or purged file) always open.
            let log = open_log(dir, SEGMENT_BYTES).expect("segments alone always open");
            check_contiguous(&log);
            let mut files = Vec::new();
            for (path, bytes) in &written {
                let now = fs::read(path).ok();
                if let Some(kept) = &now {
                    assert!(
                        bytes.starts_with(kept),
                        "recovery kept bytes that were not written"
                    );
                }
                files.push((path.clone(), now));
            }
            // The first segment is only cut, never removed.
            assert!(files[0].1.is_some(), "the first segment was deleted");
            reopen_same(dir, &log, &files);
        }
        2 => {
            let name = ["vote.json", "purged.json", "committed.json"][usize::from(b % 3)];
            fs::write(dir.join(name), data).unwrap();
            let mut seg = log_record(a, 1, 1, None);
            seg.extend(log_record(a + 1, 1, 1, Some(&[b"x", b""])));
            fs::write(segment(dir, a), &seg).unwrap();
            match open_log(dir, SEGMENT_BYTES) {
                Ok(log) => {
                    check_contiguous(&log);
                    if name == "vote.json" {
                        assert!(log.vote.is_some(), "a vote file that parsed gave no vote");
                    }
                    let files = vec![(segment(dir, a), fs::read(segment(dir, a)).ok())];
                    reopen_same(dir, &log, &files);
                }
                // Only a vote or purged file may refuse the start; a committed one is a hint.
                Err(_) => assert_ne!(
                    name, "committed.json",
                    "a bad committed.json failed the open"
                ),
            }
        }
        _ => {
            fs::write(dir.join(format!("snapshot-{a:020}.snap")), data).unwrap();
            if let Ok(Some((_, snap))) = load_snapshot(dir) {
                // magic, meta length, data length, crc around the data.
                assert!(
                    snap.len() + 24 <= data.len(),
                    "snapshot data larger than its file"
                );
            }
            if b & 1 == 1 {
                // With a valid older snapshot beside it, one of the two always loads.
                let older = josef_quorum::fuzzing::snapshot_file(0, 1, &[1], b"state");
                if a > 0 {
                    fs::write(dir.join(format!("snapshot-{:020}.snap", 0)), older).unwrap();
                    let loaded = load_snapshot(dir).expect("snapshots load");
                    assert!(loaded.is_some(), "the valid older snapshot was not loaded");
                }
            }
        }
    }
});
