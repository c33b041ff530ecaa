//! Kafka's offset checkpoint files (`CheckpointFile`, `OffsetCheckpointFile`).
//!
//! Format: line 1 is the version `0`, line 2 the entry count, then one `topic partition offset` line
//! per entry separated by single spaces. Files are written as `<name>.tmp`, fsynced, then renamed
//! over the old file and the directory is fsynced, so a crash leaves either the old or the new file.
//!
//! Kafka keeps `recovery-point-offset-checkpoint` and `log-start-offset-checkpoint` per log dir; a
//! broker's log manager can use [`write_offset_checkpoint`]/[`read_offset_checkpoint`] for those. A
//! standalone [`crate::Log`] keeps one-entry files of the same format in its partition directory.

use std::path::Path;

use crate::error::LogError;
use crate::storage::{FileStorage, Storage};

/// Version written in line 1 of offset checkpoints.
pub const OFFSET_CHECKPOINT_VERSION: i32 = 0;

/// One `topic partition offset` line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CheckpointEntry {
    /// Topic name (no spaces).
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// The checkpointed offset.
    pub offset: i64,
}

/// Renders entries in Kafka's checkpoint format.
///
/// ```
/// use josef_log::checkpoint::{format_offset_checkpoint, parse_offset_checkpoint, CheckpointEntry};
/// let e = vec![CheckpointEntry { topic: "t".into(), partition: 0, offset: 42 }];
/// let text = format_offset_checkpoint(&e);
/// assert_eq!(text, "0\n1\nt 0 42\n");
/// assert_eq!(parse_offset_checkpoint(&text).unwrap(), e);
/// ```
pub fn format_offset_checkpoint(entries: &[CheckpointEntry]) -> String {
    let mut out = format!("{OFFSET_CHECKPOINT_VERSION}\n{}\n", entries.len());
    for e in entries {
        out.push_str(&format!("{} {} {}\n", e.topic, e.partition, e.offset));
    }
    out
}

/// Parses Kafka's checkpoint format; any malformed line, wrong version or count mismatch is an error.
pub fn parse_offset_checkpoint(text: &str) -> Result<Vec<CheckpointEntry>, LogError> {
    let bad = |why: &str| LogError::MalformedCheckpoint(why.to_string());
    let mut lines = text.lines();
    let version: i32 = lines
        .next()
        .ok_or_else(|| bad("missing version line"))?
        .trim()
        .parse()
        .map_err(|_| bad("version is not a number"))?;
    if version != OFFSET_CHECKPOINT_VERSION {
        return Err(bad(&format!("unsupported version {version}")));
    }
    let count: usize = lines
        .next()
        .ok_or_else(|| bad("missing count line"))?
        .trim()
        .parse()
        .map_err(|_| bad("count is not a number"))?;
    // The count is untrusted: never preallocate by it.
    let mut entries = Vec::new();
    for line in lines {
        if line.trim().is_empty() {
            continue;
        }
        let mut parts = line.split(' ');
        let (Some(topic), Some(partition), Some(offset), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad(&format!("malformed entry line {line:?}")));
        };
        let partition = partition
            .parse()
            .map_err(|_| bad(&format!("bad partition in {line:?}")))?;
        let offset = offset
            .parse()
            .map_err(|_| bad(&format!("bad offset in {line:?}")))?;
        entries.push(CheckpointEntry {
            topic: topic.to_string(),
            partition,
            offset,
        });
    }
    if entries.len() != count {
        return Err(bad(&format!(
            "expected {count} entries, found {}",
            entries.len()
        )));
    }
    Ok(entries)
}

/// Reads a checkpoint file; a missing file reads as no entries.
pub fn read_offset_checkpoint(path: &Path) -> Result<Vec<CheckpointEntry>, LogError> {
    read_offset_checkpoint_in(&FileStorage, path)
}

/// [`read_offset_checkpoint`] on any [`Storage`].
pub fn read_offset_checkpoint_in(
    storage: &dyn Storage,
    path: &Path,
) -> Result<Vec<CheckpointEntry>, LogError> {
    match storage.read(path) {
        Ok(bytes) => {
            let text = String::from_utf8(bytes)
                .map_err(|_| LogError::MalformedCheckpoint("not UTF-8".into()))?;
            parse_offset_checkpoint(&text)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(LogError::io(path, e)),
    }
}

/// Writes a checkpoint file atomically: `<path>.tmp`, fsync, rename, fsync of the directory.
pub fn write_offset_checkpoint(path: &Path, entries: &[CheckpointEntry]) -> Result<(), LogError> {
    write_offset_checkpoint_in(&FileStorage, path, entries)
}

/// [`write_offset_checkpoint`] on any [`Storage`].
pub fn write_offset_checkpoint_in(
    storage: &dyn Storage,
    path: &Path,
    entries: &[CheckpointEntry],
) -> Result<(), LogError> {
    write_file_atomically_in(storage, path, format_offset_checkpoint(entries).as_bytes())
}

/// Writes `bytes` to `path` via `<path>.tmp` + fsync + rename + directory fsync.
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> Result<(), LogError> {
    write_file_atomically_in(&FileStorage, path, bytes)
}

/// [`write_file_atomically`] on any [`Storage`] ([`Storage::write_atomically`]).
pub fn write_file_atomically_in(
    storage: &dyn Storage,
    path: &Path,
    bytes: &[u8],
) -> Result<(), LogError> {
    storage
        .write_atomically(path, bytes)
        .map_err(|e| LogError::io(path, e))
}

/// Fsyncs a directory so that renames and creations in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), LogError> {
    sync_dir_in(&FileStorage, dir)
}

/// [`sync_dir`] on any [`Storage`].
pub fn sync_dir_in(storage: &dyn Storage, dir: &Path) -> Result<(), LogError> {
    storage.sync_dir(dir).map_err(|e| LogError::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn checkpoint_file_is_written_via_tmp_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recovery-point-offset-checkpoint");
        let entries = vec![
            CheckpointEntry {
                topic: "a".into(),
                partition: 0,
                offset: 5,
            },
            CheckpointEntry {
                topic: "b-c".into(),
                partition: 12,
                offset: 0,
            },
        ];
        write_offset_checkpoint(&path, &entries).unwrap();
        assert!(!dir
            .path()
            .join("recovery-point-offset-checkpoint.tmp")
            .exists());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "0\n2\na 0 5\nb-c 12 0\n"
        );
        assert_eq!(read_offset_checkpoint(&path).unwrap(), entries);
    }

    #[test]
    fn missing_checkpoint_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_offset_checkpoint(&dir.path().join("nope"))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn malformed_checkpoints_are_errors() {
        for text in [
            "",
            "1\n0\n",
            "0\n2\nt 0 1\n",
            "0\n1\nt 0\n",
            "0\n1\nt x 1\n",
            "0\n1\nt 0 1 9\n",
            "0\nx\n",
        ] {
            assert!(parse_offset_checkpoint(text).is_err(), "{text:?}");
        }
    }

    proptest! {
        #[test]
        fn checkpoint_round_trips(entries in proptest::collection::vec(
            ("[a-zA-Z0-9._-]{1,20}", 0i32..1000, any::<i64>()), 0..20)) {
            let entries: Vec<_> = entries.into_iter().map(|(topic, partition, offset)|
                CheckpointEntry { topic, partition, offset }).collect();
            prop_assert_eq!(parse_offset_checkpoint(&format_offset_checkpoint(&entries)).unwrap(), entries);
        }
    }
}
