//! [`LocalMetadataLog`]: the metadata log of a node without a quorum (a single-node broker).
//!
//! A single node has no Raft, so it needs none of the quorum's terms, votes or snapshots; but the
//! records it accepts (ACLs, SCRAM credentials, client quotas, ...) must be as durable as a
//! committed entry. This store keeps them in one file of frames, written and fsynced before the
//! caller applies them. It lives here, beside the replicated log, because it is the same concern
//! (framing, fsync, recovery of a metadata record log); the records stay opaque bytes, as in
//! [`crate::MetadataQuorum::propose`], and josef-metadata (pure, no I/O) decodes and replays them
//! (`MetadataImage::with_records`).
//!
//! # File format
//!
//! One frame per record: `length: u32 BE | crc32c(body): u32 BE | body`, `length` at most
//! [`MAX_LOCAL_RECORD_BYTES`]. At open, as Kafka recovers a log segment:
//!
//! - a frame cut short at the end of the file (a crash in the middle of a write), or a last frame
//!   whose checksum fails (its length reached the disk, not all of its body), is a torn tail: the
//!   file is truncated before it, with a warning;
//! - a frame before the tail that fails its checksum, or any length above the limit, is
//!   corruption: the open fails with [`LocalLogError::Corrupt`] rather than dropping records
//!   that were acknowledged.
//!
//! ```
//! use josef_quorum::LocalMetadataLog;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("__josef_local_metadata");
//! let (mut log, records) = LocalMetadataLog::open(&path)?;
//! assert!(records.is_empty());
//! log.append(&[b"first".as_slice(), b"second".as_slice()])?;
//! drop(log);
//! let (_, records) = LocalMetadataLog::open(&path)?;
//! assert_eq!(records.len(), 2);
//! assert_eq!(&records[1].body[..], b"second");
//! assert_eq!(records[1].position, 13); // 8 header bytes + "first"
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;

/// A record longer than this is corruption (no metadata record comes near it), and cannot be
/// appended.
pub const MAX_LOCAL_RECORD_BYTES: u32 = 16 * 1024 * 1024;

/// Bytes before a frame's body: length and checksum.
const FRAME_HEADER: usize = 8;

/// One record read back from the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalRecord {
    /// Where its frame starts in the file (for error messages).
    pub position: u64,
    /// The record's bytes, as appended.
    pub body: Bytes,
}

/// What is wrong with a frame before the end of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A length above [`MAX_LOCAL_RECORD_BYTES`].
    #[error("frame length {0} above the limit of {MAX_LOCAL_RECORD_BYTES}")]
    TooLong(u32),
    /// The body does not match its checksum.
    #[error("checksum mismatch")]
    ChecksumMismatch,
}

/// A corrupt frame: where it starts and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt frame at byte {position}: {reason}")]
pub struct CorruptFrame {
    /// Where the frame starts.
    pub position: u64,
    /// What is wrong.
    pub reason: FrameError,
}

/// The frames of a file's bytes (see [`decode_local_frames`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalFrames {
    /// The records of the valid prefix, in order.
    pub records: Vec<LocalRecord>,
    /// The length of the valid prefix; bytes after it are a torn tail.
    pub valid_len: u64,
}

/// Why the log cannot be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum LocalLogError {
    /// File-system error.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A frame before the end of the file is damaged.
    #[error("{path}: corrupt record at byte {position}: {reason}")]
    Corrupt {
        /// The file.
        path: String,
        /// Where the bad frame starts.
        position: u64,
        /// What is wrong.
        reason: FrameError,
    },
    /// A record to append is longer than [`MAX_LOCAL_RECORD_BYTES`] (nothing was written).
    #[error("a record of {0} bytes is above the limit of {MAX_LOCAL_RECORD_BYTES}")]
    RecordTooLarge(usize),
}

/// Splits `bytes` (a whole file) into frames. A frame cut short at the end, or a last frame whose
/// checksum fails, is a torn write: the valid prefix stops before it. A length above
/// [`MAX_LOCAL_RECORD_BYTES`] anywhere, or a checksum failure before the last frame, is an error
/// at the frame's position. Never allocates from a length in the input: bodies are slices of
/// `bytes`.
pub fn decode_local_frames(bytes: &Bytes) -> Result<LocalFrames, CorruptFrame> {
    let mut records = Vec::new();
    let mut pos = 0usize;
    while let Some(header) = bytes.get(pos..pos + FRAME_HEADER) {
        let (len, crc) = header.split_at(4);
        let len = u32::from_be_bytes(len.try_into().expect("4 bytes"));
        let crc = u32::from_be_bytes(crc.try_into().expect("4 bytes"));
        let corrupt = |reason| CorruptFrame {
            position: pos as u64,
            reason,
        };
        if len > MAX_LOCAL_RECORD_BYTES {
            return Err(corrupt(FrameError::TooLong(len)));
        }
        let end = pos + FRAME_HEADER + len as usize;
        if end > bytes.len() {
            break;
        }
        let body = bytes.slice(pos + FRAME_HEADER..end);
        if crc32c::crc32c(&body) != crc {
            if end == bytes.len() {
                // The last frame: a torn write whose length made it to disk.
                break;
            }
            return Err(corrupt(FrameError::ChecksumMismatch));
        }
        records.push(LocalRecord {
            position: pos as u64,
            body,
        });
        pos = end;
    }
    Ok(LocalFrames {
        records,
        valid_len: pos as u64,
    })
}

/// Appends the frame of `body` to `out`.
pub fn encode_local_frame(body: &[u8], out: &mut Vec<u8>) -> Result<(), LocalLogError> {
    let len = u32::try_from(body.len())
        .ok()
        .filter(|l| *l <= MAX_LOCAL_RECORD_BYTES)
        .ok_or(LocalLogError::RecordTooLarge(body.len()))?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&crc32c::crc32c(body).to_be_bytes());
    out.extend_from_slice(body);
    Ok(())
}

/// A single node's metadata log (see the module docs).
#[derive(Debug)]
pub struct LocalMetadataLog {
    path: PathBuf,
    file: File,
    /// The file's length after the last complete append.
    len: u64,
}

impl LocalMetadataLog {
    /// Opens (or creates) the log at `path`, cuts a torn tail off and returns every record in it.
    pub fn open(path: &Path) -> Result<(Self, Vec<LocalRecord>), LocalLogError> {
        let io = |source| LocalLogError::Io {
            path: path.display().to_string(),
            source,
        };
        let existed = path.exists();
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io)?;
        if !existed {
            // The file's directory entry must survive a crash as its first records do.
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                crate::files::sync_dir(dir).map_err(io)?;
            }
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let bytes = Bytes::from(bytes);
        let frames = decode_local_frames(&bytes).map_err(|c| LocalLogError::Corrupt {
            path: path.display().to_string(),
            position: c.position,
            reason: c.reason,
        })?;
        if frames.valid_len < bytes.len() as u64 {
            tracing::warn!(
                file = %path.display(),
                cut = bytes.len() as u64 - frames.valid_len,
                "local metadata log: torn tail cut off"
            );
            file.set_len(frames.valid_len).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        let log = LocalMetadataLog {
            path: path.to_path_buf(),
            file,
            len: frames.valid_len,
        };
        Ok((log, frames.records))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `records` and fsyncs them. All or nothing: a record too large writes nothing, and a
    /// failed write is cut off again (as far as the file system allows; a crash in between leaves
    /// a torn tail, which the next open cuts).
    pub fn append<R: AsRef<[u8]>>(&mut self, records: &[R]) -> Result<(), LocalLogError> {
        let mut buf = Vec::new();
        for r in records {
            encode_local_frame(r.as_ref(), &mut buf)?;
        }
        let io = |source| LocalLogError::Io {
            path: self.path.display().to_string(),
            source,
        };
        let written = self
            .file
            .write_all(&buf)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            let _ = self.file.set_len(self.len);
            return Err(io(e));
        }
        self.len += buf.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(bodies: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for b in bodies {
            encode_local_frame(b, &mut out).unwrap();
        }
        out
    }

    #[test]
    fn records_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let (mut log, records) = LocalMetadataLog::open(&path).unwrap();
        assert!(records.is_empty());
        log.append(&[b"a".as_slice(), b"bc".as_slice()]).unwrap();
        log.append(&[b"".as_slice()]).unwrap();
        drop(log);
        let (_, records) = LocalMetadataLog::open(&path).unwrap();
        let bodies: Vec<&[u8]> = records.iter().map(|r| &r.body[..]).collect();
        assert_eq!(bodies, vec![b"a".as_slice(), b"bc", b""]);
        let positions: Vec<u64> = records.iter().map(|r| r.position).collect();
        assert_eq!(positions, vec![0, 9, 19]);
    }

    #[test]
    fn torn_tail_is_cut_and_later_appends_survive() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let (mut log, _) = LocalMetadataLog::open(&path).unwrap();
        log.append(&[b"one"]).unwrap();
        drop(log);
        let good = std::fs::metadata(&path).unwrap().len();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[0, 0, 0, 50, 1, 2, 3]).unwrap();
        drop(f);
        let (mut log, records) = LocalMetadataLog::open(&path).unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), good);
        log.append(&[b"two"]).unwrap();
        drop(log);
        let (_, records) = LocalMetadataLog::open(&path).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(&records[1].body[..], b"two");
    }

    #[test]
    fn a_last_frame_with_a_bad_checksum_is_a_torn_tail() {
        let mut bytes = frames(&[b"one", b"two"]);
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        let got = decode_local_frames(&Bytes::from(bytes)).unwrap();
        assert_eq!(got.records.len(), 1);
        assert_eq!(got.valid_len, 11);
    }

    #[test]
    fn corruption_before_the_tail_fails_the_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut bytes = frames(&[b"one", b"two"]);
        bytes[9] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            LocalMetadataLog::open(&path),
            Err(LocalLogError::Corrupt {
                position: 0,
                reason: FrameError::ChecksumMismatch,
                ..
            })
        ));
        // Nothing was cut.
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }

    #[test]
    fn huge_length_is_corruption_not_an_allocation() {
        let err = decode_local_frames(&Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]))
            .unwrap_err();
        assert_eq!(
            err,
            CorruptFrame {
                position: 0,
                reason: FrameError::TooLong(u32::MAX)
            }
        );
    }

    #[test]
    fn a_record_too_large_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let (mut log, _) = LocalMetadataLog::open(&path).unwrap();
        let big = vec![0u8; MAX_LOCAL_RECORD_BYTES as usize + 1];
        assert!(matches!(
            log.append(&[b"small".as_slice(), &big]),
            Err(LocalLogError::RecordTooLarge(n)) if n == big.len()
        ));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }
}
