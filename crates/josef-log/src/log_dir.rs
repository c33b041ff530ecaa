//! The files a log manager keeps per log dir, as Kafka's `LogManager` does: one
//! `recovery-point-offset-checkpoint` and one `log-start-offset-checkpoint` for all the partitions
//! of the dir, and one `.kafka_cleanshutdown` marker written once every log of the dir is closed.
//!
//! With them, a restart reads three files per log dir instead of three per partition, and a
//! shutdown writes them once instead of fsyncing per partition (issue #22: 100,000 partitions).
//! Logs are then opened with [`PartitionState::Managed`], from
//! [`LogDirCheckpoints::partition_state`].
//!
//! A damaged checkpoint is not fatal: the dir's logs are opened as after a crash, from offset 0
//! (Kafka resets the recovery point the same way), and the caller is told why. A log dir written
//! before these files existed (each partition directory holding its own one-entry checkpoints and
//! marker, [`PartitionState::Standalone`]) is read through those files until the first
//! [`write_log_dir_checkpoints`] takes over; [`remove_partition_checkpoints`] then deletes them.
//!
//! ```
//! use josef_log::log_dir::{self, LogDirCheckpoints, PartitionCheckpoint};
//! use josef_log::storage::{MemoryStorage, Storage};
//! use josef_log::PartitionState;
//! use std::path::Path;
//! let storage = MemoryStorage::new();
//! let dir = Path::new("/data");
//! storage.create_dir_all(dir).unwrap();
//! let entry = PartitionCheckpoint { topic: "t".into(), partition: 0, recovery_point: 7, log_start_offset: 2 };
//! log_dir::write_log_dir_checkpoints(&storage, dir, &[entry]).unwrap();
//! log_dir::mark_clean_shutdown(&storage, dir).unwrap();
//! let (read, warnings) = LogDirCheckpoints::read(&storage, dir);
//! assert!(warnings.is_empty() && read.clean_shutdown());
//! assert_eq!(
//!     read.partition_state(&storage, &dir.join("t-0"), "t", 0),
//!     PartitionState::Managed { recovery_point: 7, log_start_offset: 2, clean_shutdown: true },
//! );
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::checkpoint::{
    format_offset_checkpoint, parse_offset_checkpoint, sync_dir_in, CheckpointEntry,
};
use crate::error::LogError;
use crate::log::PartitionState;
use crate::naming;
use crate::storage::{self, Storage};

type Offsets = HashMap<(String, i32), i64>;

/// What a log dir's checkpoint files and marker said at startup.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogDirCheckpoints {
    /// `None` when the dir has no `recovery-point-offset-checkpoint`: a new dir, or one written
    /// when each partition kept its own files.
    recovery_points: Option<Offsets>,
    log_start_offsets: Offsets,
    clean_shutdown: bool,
}

/// A file of a log dir that could not be used; the logs it covers are recovered as after a crash.
#[derive(Debug)]
pub struct LogDirWarning {
    /// The file.
    pub path: PathBuf,
    /// What was wrong with it.
    pub error: LogError,
}

/// One partition's line in its log dir's checkpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionCheckpoint {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// Offset below which the log is known to be fsynced.
    pub recovery_point: i64,
    /// The log start offset.
    pub log_start_offset: i64,
}

enum Read {
    Missing,
    Entries(Offsets),
    Damaged(LogDirWarning),
}

fn read_offsets(storage: &dyn Storage, path: &Path) -> Read {
    let bytes = match storage.read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Read::Missing,
        Err(e) => {
            return Read::Damaged(LogDirWarning {
                path: path.to_path_buf(),
                error: LogError::io(path, e),
            })
        }
    };
    let parsed = String::from_utf8(bytes)
        .map_err(|_| LogError::MalformedCheckpoint("not UTF-8".into()))
        .and_then(|text| parse_offset_checkpoint(&text));
    match parsed {
        Ok(entries) => Read::Entries(
            entries
                .into_iter()
                .map(|e| ((e.topic, e.partition), e.offset))
                .collect(),
        ),
        Err(error) => Read::Damaged(LogDirWarning {
            path: path.to_path_buf(),
            error,
        }),
    }
}

impl LogDirCheckpoints {
    /// Reads the checkpoints and the marker of `dir`. Never fails: a damaged recovery-point
    /// checkpoint makes every log of the dir recover from offset 0, even after a clean shutdown
    /// (the marker vouches for data the broken file says nothing sure about); a damaged
    /// log-start checkpoint leaves each log starting at its first segment. Each is a warning.
    pub fn read(storage: &dyn Storage, dir: &Path) -> (Self, Vec<LogDirWarning>) {
        let mut warnings = Vec::new();
        let mut clean_shutdown = storage.exists(&dir.join(naming::CLEAN_SHUTDOWN_FILE));
        let recovery_points =
            match read_offsets(storage, &dir.join(naming::RECOVERY_POINT_CHECKPOINT_FILE)) {
                Read::Missing => None,
                Read::Entries(e) => Some(e),
                Read::Damaged(w) => {
                    warnings.push(w);
                    clean_shutdown = false;
                    Some(Offsets::new())
                }
            };
        let log_start_offsets =
            match read_offsets(storage, &dir.join(naming::LOG_START_OFFSET_CHECKPOINT_FILE)) {
                Read::Missing => Offsets::new(),
                Read::Entries(e) => e,
                Read::Damaged(w) => {
                    warnings.push(w);
                    Offsets::new()
                }
            };
        let read = LogDirCheckpoints {
            recovery_points,
            log_start_offsets,
            clean_shutdown,
        };
        (read, warnings)
    }

    /// Whether the dir's logs were all closed cleanly (its marker was there and its
    /// recovery-point checkpoint readable).
    pub fn clean_shutdown(&self) -> bool {
        self.clean_shutdown
    }

    /// Whether the dir has no recovery-point checkpoint of its own yet, so its partitions are
    /// read through the files in their own directories.
    pub fn is_per_partition(&self) -> bool {
        self.recovery_points.is_none()
    }

    /// The state to open the log of `topic`-`partition` (in `partition_dir`) with. A partition
    /// the checkpoint does not list (created after it was written) starts its recovery at 0.
    pub fn partition_state(
        &self,
        storage: &dyn Storage,
        partition_dir: &Path,
        topic: &str,
        partition: i32,
    ) -> PartitionState {
        let key = (topic.to_string(), partition);
        let Some(recovery_points) = &self.recovery_points else {
            return per_partition_state(storage, partition_dir, topic, partition, self);
        };
        PartitionState::Managed {
            recovery_point: recovery_points.get(&key).copied().unwrap_or(0),
            log_start_offset: self.log_start_offsets.get(&key).copied().unwrap_or(0),
            clean_shutdown: self.clean_shutdown,
        }
    }
}

/// A partition directory from before the log dir kept the checkpoints: its own one-entry files
/// and marker (a damaged file reads as 0, which only costs a longer recovery).
fn per_partition_state(
    storage: &dyn Storage,
    partition_dir: &Path,
    topic: &str,
    partition: i32,
    dir: &LogDirCheckpoints,
) -> PartitionState {
    let pick = |file: &str| -> i64 {
        match read_offsets(storage, &partition_dir.join(file)) {
            Read::Entries(e) => e
                .get(&(topic.to_string(), partition))
                .or_else(|| e.values().next())
                .copied()
                .unwrap_or(0),
            Read::Missing | Read::Damaged(_) => 0,
        }
    };
    PartitionState::Managed {
        recovery_point: pick(naming::RECOVERY_POINT_CHECKPOINT_FILE),
        log_start_offset: pick(naming::LOG_START_OFFSET_CHECKPOINT_FILE),
        clean_shutdown: dir.clean_shutdown
            || storage.exists(&partition_dir.join(naming::CLEAN_SHUTDOWN_FILE)),
    }
}

/// Writes the dir's `recovery-point-offset-checkpoint` (every partition) and
/// `log-start-offset-checkpoint` (those whose log start is past 0, as Kafka lists only those
/// past their first segment: a missing line reads as 0), each through a `.tmp` file, fsync,
/// rename and fsync of the dir.
pub fn write_log_dir_checkpoints(
    storage: &dyn Storage,
    dir: &Path,
    partitions: &[PartitionCheckpoint],
) -> Result<(), LogError> {
    let (recovery, start) = render(partitions);
    let write = |file: &str, text: &str| {
        let path = dir.join(file);
        storage
            .write_atomically(&path, text.as_bytes())
            .map_err(|e| LogError::io(&path, e))
    };
    // The log start first: a recovery-point file from this write with an older log-start file
    // would not be worse than both old, but the order keeps the two from the same moment when
    // a crash falls between them as often as possible.
    write(naming::LOG_START_OFFSET_CHECKPOINT_FILE, &start)?;
    write(naming::RECOVERY_POINT_CHECKPOINT_FILE, &recovery)
}

/// Writes a log dir's checkpoints, each file only when its text changed since this writer last
/// wrote it: with 100,000 idle partitions the periodic checkpoint then costs no fsync.
#[derive(Debug, Default)]
pub struct CheckpointWriter {
    recovery_points: Option<String>,
    log_start_offsets: Option<String>,
}

impl CheckpointWriter {
    /// [`write_log_dir_checkpoints`], skipping a file this writer already wrote with the same
    /// text. Returns how many files were written.
    pub fn write(
        &mut self,
        storage: &dyn Storage,
        dir: &Path,
        partitions: &[PartitionCheckpoint],
    ) -> Result<usize, LogError> {
        let (recovery, start) = render(partitions);
        let mut written = 0;
        for (file, text, last) in [
            (
                naming::LOG_START_OFFSET_CHECKPOINT_FILE,
                start,
                &mut self.log_start_offsets,
            ),
            (
                naming::RECOVERY_POINT_CHECKPOINT_FILE,
                recovery,
                &mut self.recovery_points,
            ),
        ] {
            if last.as_ref() == Some(&text) {
                continue;
            }
            // Unknown until the write succeeds.
            *last = None;
            let path = dir.join(file);
            storage
                .write_atomically(&path, text.as_bytes())
                .map_err(|e| LogError::io(&path, e))?;
            *last = Some(text);
            written += 1;
        }
        Ok(written)
    }
}

/// The text of both checkpoint files for `partitions` (recovery points, log start offsets), so a
/// caller can skip a write that would change nothing.
pub fn render(partitions: &[PartitionCheckpoint]) -> (String, String) {
    let entry = |p: &PartitionCheckpoint, offset| CheckpointEntry {
        topic: p.topic.clone(),
        partition: p.partition,
        offset,
    };
    let recovery: Vec<CheckpointEntry> = partitions
        .iter()
        .map(|p| entry(p, p.recovery_point))
        .collect();
    let start: Vec<CheckpointEntry> = partitions
        .iter()
        .filter(|p| p.log_start_offset > 0)
        .map(|p| entry(p, p.log_start_offset))
        .collect();
    (
        format_offset_checkpoint(&recovery),
        format_offset_checkpoint(&start),
    )
}

/// Writes the dir's `.kafka_cleanshutdown` marker: call it once every log of the dir is closed
/// and [`write_log_dir_checkpoints`] has returned (see [`crate::write_clean_shutdown_marker`]
/// for why it needs no fsync).
pub fn mark_clean_shutdown(storage: &dyn Storage, dir: &Path) -> Result<(), LogError> {
    crate::loader::write_clean_shutdown_marker_in(storage, dir)
}

/// Removes the dir's marker once its logs are open, durably: from the first write on, a crash
/// must be recovered from. One fsync per log dir.
pub fn consume_clean_shutdown_marker(storage: &dyn Storage, dir: &Path) -> Result<(), LogError> {
    let marker = dir.join(naming::CLEAN_SHUTDOWN_FILE);
    if !storage.exists(&marker) {
        return Ok(());
    }
    storage::remove_if_exists(storage, &marker).map_err(|e| LogError::io(&marker, e))?;
    sync_dir_in(storage, dir)
}

/// Deletes the one-entry checkpoints and the marker a partition directory kept before its log
/// dir did. Call it only after a [`write_log_dir_checkpoints`] that covered the partition: until
/// then they are what the partition's state is read from. No fsync: once the dir's checkpoint
/// exists, these files are ignored if they come back.
pub fn remove_partition_checkpoints(
    storage: &dyn Storage,
    partition_dir: &Path,
) -> Result<(), LogError> {
    for file in [
        naming::CLEAN_SHUTDOWN_FILE,
        naming::RECOVERY_POINT_CHECKPOINT_FILE,
        naming::LOG_START_OFFSET_CHECKPOINT_FILE,
    ] {
        let path = partition_dir.join(file);
        storage::remove_if_exists(storage, &path).map_err(|e| LogError::io(&path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    fn entry(topic: &str, partition: i32, rp: i64, lso: i64) -> PartitionCheckpoint {
        PartitionCheckpoint {
            topic: topic.into(),
            partition,
            recovery_point: rp,
            log_start_offset: lso,
        }
    }

    fn managed(rp: i64, lso: i64, clean: bool) -> PartitionState {
        PartitionState::Managed {
            recovery_point: rp,
            log_start_offset: lso,
            clean_shutdown: clean,
        }
    }

    fn setup() -> (MemoryStorage, PathBuf) {
        let s = MemoryStorage::new();
        let dir = PathBuf::from("/data");
        s.create_dir_all(&dir).unwrap();
        (s, dir)
    }

    #[test]
    fn checkpoints_round_trip_in_kafkas_format() {
        let (s, dir) = setup();
        let written = [entry("a", 0, 10, 0), entry("b.c", 3, 42, 40)];
        write_log_dir_checkpoints(&s, &dir, &written).unwrap();
        assert_eq!(
            String::from_utf8(
                s.read(&dir.join("recovery-point-offset-checkpoint"))
                    .unwrap()
            )
            .unwrap(),
            "0\n2\na 0 10\nb.c 3 42\n"
        );
        // Only log starts past 0 are listed: a missing line reads as 0.
        assert_eq!(
            String::from_utf8(s.read(&dir.join("log-start-offset-checkpoint")).unwrap()).unwrap(),
            "0\n1\nb.c 3 40\n"
        );
        assert!(!s.exists(&dir.join("recovery-point-offset-checkpoint.tmp")));
        let (read, warnings) = LogDirCheckpoints::read(&s, &dir);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(!read.clean_shutdown() && !read.is_per_partition());
        let state = |t: &str, p| read.partition_state(&s, &dir.join(format!("{t}-{p}")), t, p);
        assert_eq!(state("a", 0), managed(10, 0, false));
        assert_eq!(state("b.c", 3), managed(42, 40, false));
        // Created after the checkpoint: recovered from its start.
        assert_eq!(state("a", 1), managed(0, 0, false));
        mark_clean_shutdown(&s, &dir).unwrap();
        let (read, _) = LogDirCheckpoints::read(&s, &dir);
        assert!(read.clean_shutdown());
        assert_eq!(
            read.partition_state(&s, &dir.join("a-0"), "a", 0),
            managed(10, 0, true)
        );
        consume_clean_shutdown_marker(&s, &dir).unwrap();
        assert!(!LogDirCheckpoints::read(&s, &dir).0.clean_shutdown());
    }

    #[test]
    fn the_writer_skips_files_that_would_not_change() {
        let (s, dir) = setup();
        let mut w = CheckpointWriter::default();
        let mut parts = vec![entry("a", 0, 10, 0), entry("a", 1, 3, 2)];
        assert_eq!(w.write(&s, &dir, &parts).unwrap(), 2);
        assert_eq!(w.write(&s, &dir, &parts).unwrap(), 0);
        parts[0].recovery_point = 11;
        assert_eq!(w.write(&s, &dir, &parts).unwrap(), 1);
        parts[1].log_start_offset = 3;
        assert_eq!(w.write(&s, &dir, &parts).unwrap(), 1);
        let (read, _) = LogDirCheckpoints::read(&s, &dir);
        assert_eq!(
            read.partition_state(&s, &dir.join("a-1"), "a", 1),
            managed(3, 3, false)
        );
        assert_eq!(
            read.partition_state(&s, &dir.join("a-0"), "a", 0),
            managed(11, 0, false)
        );
    }

    #[test]
    fn a_damaged_recovery_point_checkpoint_recovers_the_whole_dir_with_a_warning() {
        for text in [
            "",
            "0\n2\na 0 10\n",
            "0\n1\na 0\n",
            "0\n1\na zero 10\n",
            "\u{0}\u{ff}garbage",
        ] {
            let (s, dir) = setup();
            write_log_dir_checkpoints(&s, &dir, &[entry("a", 0, 10, 5)]).unwrap();
            mark_clean_shutdown(&s, &dir).unwrap();
            s.write_atomically(
                &dir.join("recovery-point-offset-checkpoint"),
                text.as_bytes(),
            )
            .unwrap();
            let (read, warnings) = LogDirCheckpoints::read(&s, &dir);
            assert_eq!(warnings.len(), 1, "{text:?}: {warnings:?}");
            assert!(warnings[0]
                .path
                .ends_with("recovery-point-offset-checkpoint"));
            // Recovered from 0 despite the marker; the log start file still counts.
            assert_eq!(
                read.partition_state(&s, &dir.join("a-0"), "a", 0),
                managed(0, 5, false),
                "{text:?}"
            );
        }
    }

    #[test]
    fn an_unknown_version_is_a_warning_not_a_panic() {
        let (s, dir) = setup();
        s.write_atomically(
            &dir.join("recovery-point-offset-checkpoint"),
            b"1\n1\na 0 10\n",
        )
        .unwrap();
        s.write_atomically(&dir.join("log-start-offset-checkpoint"), b"7\n0\n")
            .unwrap();
        let (read, warnings) = LogDirCheckpoints::read(&s, &dir);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings
            .iter()
            .all(|w| w.error.to_string().contains("unsupported version")));
        assert_eq!(
            read.partition_state(&s, &dir.join("a-0"), "a", 0),
            managed(0, 0, false)
        );
    }

    #[test]
    fn a_dir_without_checkpoints_reads_each_partitions_own_files() {
        let (s, dir) = setup();
        let s = std::sync::Arc::new(s);
        let (read, warnings) = LogDirCheckpoints::read(&*s, &dir);
        assert!(warnings.is_empty() && read.is_per_partition());
        // A new partition: nothing anywhere.
        assert_eq!(
            read.partition_state(&*s, &dir.join("new-0"), "new", 0),
            managed(0, 0, false)
        );
        // A partition directory written by a standalone log (the previous layout).
        let old = dir.join("old-2");
        let mut log = crate::Log::open_in(
            s.clone(),
            &old,
            crate::LogConfig::default(),
            0,
            PartitionState::Standalone,
        )
        .unwrap();
        let b = crate::testing::batch(0, 1_000, &[(None, Some(b"v"))]);
        log.append_as_leader(b, 0, 0, crate::TimestampType::CreateTime)
            .unwrap();
        log.update_high_watermark(1);
        log.delete_records_before(1).unwrap();
        log.close().unwrap();
        assert_eq!(
            read.partition_state(&*s, &old, "old", 2),
            managed(1, 1, true)
        );
        // Once the dir's checkpoint covers it, its own files go and are no longer read.
        write_log_dir_checkpoints(&*s, &dir, &[entry("old", 2, 1, 1)]).unwrap();
        remove_partition_checkpoints(&*s, &old).unwrap();
        for f in [
            ".kafka_cleanshutdown",
            "recovery-point-offset-checkpoint",
            "log-start-offset-checkpoint",
        ] {
            assert!(!s.exists(&old.join(f)), "{f}");
        }
        let (read, _) = LogDirCheckpoints::read(&*s, &dir);
        assert!(!read.is_per_partition());
        crate::loader::write_clean_shutdown_marker_in(&*s, &old).unwrap();
        assert_eq!(
            read.partition_state(&*s, &old, "old", 2),
            managed(1, 1, false),
            "a partition's own marker counts no more"
        );
    }
}
