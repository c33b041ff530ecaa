//! A single node's metadata log (`josef_quorum::LocalMetadataLog`) from arbitrary bytes: decoding
//! the frames never panics and never allocates from a length in the input (a huge length is
//! corruption); what is kept is a prefix of the input that re-encodes byte for byte; whatever
//! is cut is a torn tail (a frame cut short, or a last frame failing its checksum). Through a
//! file: the open truncates to that prefix, an append after it reads back, and opening again
//! changes nothing.
//!
//! Input: `mode: u8 | bytes`. With bit 0 of `mode` the checksum of every whole frame is made right
//! first (so long chains of frames are reached); with bit 1 the bytes also go through a file.
#![no_main]

use bytes::Bytes;
use josef_quorum::{
    decode_local_frames, encode_local_frame, FrameError, LocalLogError, LocalMetadataLog,
    MAX_LOCAL_RECORD_BYTES,
};
use libfuzzer_sys::fuzz_target;

fn fix_crcs(data: &mut [u8]) {
    let mut pos = 0;
    while pos + 8 <= data.len() {
        let len = u32::from_be_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        let Some(end) = (pos + 8).checked_add(len).filter(|e| *e <= data.len()) else {
            break;
        };
        let crc = crc32c::crc32c(&data[pos + 8..end]);
        data[pos + 4..pos + 8].copy_from_slice(&crc.to_be_bytes());
        pos = end;
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let mut data = rest.to_vec();
    if mode & 1 != 0 {
        fix_crcs(&mut data);
    }
    let bytes = Bytes::from(data);
    let frames = match decode_local_frames(&bytes) {
        Ok(f) => f,
        Err(c) => {
            let at = c.position as usize;
            let header = &bytes[at..at + 8];
            let len = u32::from_be_bytes(header[..4].try_into().unwrap());
            match c.reason {
                FrameError::TooLong(l) => {
                    assert_eq!(l, len);
                    assert!(l > MAX_LOCAL_RECORD_BYTES);
                }
                FrameError::ChecksumMismatch => {
                    // Only a frame with bytes after it is corruption rather than a torn tail.
                    assert!(at + 8 + (len as usize) < bytes.len(), "a torn tail refused");
                }
            }
            return;
        }
    };
    let valid = frames.valid_len as usize;
    assert!(valid <= bytes.len());
    let mut again = Vec::new();
    for r in &frames.records {
        assert_eq!(r.position as usize, again.len(), "positions out of step");
        encode_local_frame(&r.body, &mut again).expect("a decoded body re-encodes");
    }
    assert_eq!(
        &again[..],
        &bytes[..valid],
        "kept bytes that do not re-encode"
    );
    let tail = &bytes[valid..];
    if tail.len() >= 8 {
        let len = u32::from_be_bytes(tail[..4].try_into().unwrap()) as usize;
        // Cut short, or exactly one last frame whose checksum fails.
        assert!(8 + len >= tail.len(), "cut more than a torn tail");
    }
    if mode & 2 == 0 {
        return;
    }
    let Ok(dir) = tempfile::tempdir() else { return };
    let path = dir.path().join("log");
    std::fs::write(&path, &bytes).unwrap();
    let (mut log, records) = LocalMetadataLog::open(&path).expect("decodable bytes open");
    assert_eq!(records, frames.records);
    assert_eq!(std::fs::read(&path).unwrap(), &bytes[..valid]);
    log.append(&[b"appended".as_slice()]).unwrap();
    drop(log);
    let (_, reopened) = LocalMetadataLog::open(&path).expect("reopens");
    assert_eq!(reopened.len(), records.len() + 1);
    assert_eq!(&reopened.last().unwrap().body[..], b"appended");
    assert!(!matches!(
        LocalMetadataLog::open(&path).map(|(_, r)| r.len()),
        Err(LocalLogError::Corrupt { .. })
    ));
});
