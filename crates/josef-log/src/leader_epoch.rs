//! The leader epoch cache and its `leader-epoch-checkpoint` file (Kafka's `LeaderEpochFileCache`
//! and `LeaderEpochCheckpointFile`).
//!
//! The cache maps each leader epoch to the first offset appended in it. A follower uses it (through
//! OffsetsForLeaderEpoch) to find where its log diverges from the leader's; a single node keeps it
//! so that its directories are what Kafka would write and replication can be added later.
//!
//! The file lives in the partition directory: line 1 the version `0`, line 2 the entry count, then
//! one `epoch start_offset` line per entry. It is rewritten via `.tmp` and a rename whenever the
//! cache changes (rarely: on a new epoch, a truncation, or a log start offset move): with an
//! fsync after a log start move, and without one after a new epoch or a truncation from the end,
//! which the log's next flush makes durable instead (see [`LeaderEpochFileCache::assign`] for
//! why that is enough).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::checkpoint::write_file_atomically_in;
use crate::error::LogError;
use crate::storage::{self, Storage};
use std::sync::Arc;

/// Name of the checkpoint file in the partition directory.
pub const LEADER_EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";

/// Version written in line 1 of the checkpoint.
pub const LEADER_EPOCH_CHECKPOINT_VERSION: i32 = 0;

/// No epoch (Kafka's `UNDEFINED_EPOCH`), the same −1 as a batch's "no partition leader epoch".
pub use josef_records::NO_PARTITION_LEADER_EPOCH as UNDEFINED_EPOCH;

/// No offset (Kafka's `UNDEFINED_EPOCH_OFFSET`).
pub const UNDEFINED_EPOCH_OFFSET: i64 = -1;

/// One entry: the first offset written in `epoch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    /// The leader epoch.
    pub epoch: i32,
    /// The first offset appended in it.
    pub start_offset: i64,
}

/// Epoch → start offset, in increasing order of both, persisted in `leader-epoch-checkpoint`.
///
/// ```
/// use josef_log::leader_epoch::LeaderEpochFileCache;
/// let dir = tempfile::tempdir().unwrap();
/// let mut cache = LeaderEpochFileCache::open(dir.path()).unwrap();
/// cache.assign(0, 0).unwrap();
/// cache.assign(0, 5).unwrap(); // same epoch: unchanged
/// cache.assign(3, 10).unwrap();
/// assert_eq!(cache.latest_epoch(), Some(3));
/// // Epoch 0 ended where epoch 3 began.
/// assert_eq!(cache.end_offset_for(0, 42), (0, 10));
/// assert_eq!(cache.end_offset_for(3, 42), (3, 42));
/// let again = LeaderEpochFileCache::open(dir.path()).unwrap();
/// assert_eq!(again.entries(), cache.entries());
/// ```
#[derive(Debug)]
pub struct LeaderEpochFileCache {
    path: PathBuf,
    storage: Arc<dyn Storage>,
    /// Keyed by epoch; start offsets increase with the epoch (kept so by `assign`).
    epochs: BTreeMap<i32, i64>,
    /// The file was replaced by `assign` and not fsynced since.
    unsynced: AtomicBool,
    /// The file was read and was empty (see [`LeaderEpochFileCache::read_an_empty_file`]).
    read_empty: bool,
}

impl LeaderEpochFileCache {
    /// Loads the cache from `dir/leader-epoch-checkpoint` (a missing file is an empty cache; a
    /// malformed one is an error the caller may treat as empty, since recovery re-assigns epochs
    /// from the batches it scans).
    pub fn open(dir: &Path) -> Result<Self, LogError> {
        Self::open_in(storage::file_system(), dir)
    }

    /// [`LeaderEpochFileCache::open`] on any [`Storage`].
    pub fn open_in(storage: Arc<dyn Storage>, dir: &Path) -> Result<Self, LogError> {
        let path = dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
        let (epochs, read_empty) = match storage.read(&path) {
            Ok(bytes) => (
                parse_leader_epoch_checkpoint(&String::from_utf8_lossy(&bytes))?
                    .into_iter()
                    .map(|e| (e.epoch, e.start_offset))
                    .collect(),
                bytes.is_empty(),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (BTreeMap::new(), false),
            Err(e) => return Err(LogError::io(&path, e)),
        };
        Ok(LeaderEpochFileCache {
            path,
            storage,
            epochs,
            unsynced: AtomicBool::new(false),
            read_empty,
        })
    }

    /// An empty cache writing to `dir/leader-epoch-checkpoint` (replacing whatever is there on the
    /// first change).
    pub fn empty(dir: &Path) -> Self {
        Self::empty_in(storage::file_system(), dir)
    }

    /// [`LeaderEpochFileCache::empty`] on any [`Storage`].
    pub fn empty_in(storage: Arc<dyn Storage>, dir: &Path) -> Self {
        LeaderEpochFileCache {
            path: dir.join(LEADER_EPOCH_CHECKPOINT_FILE),
            storage,
            epochs: BTreeMap::new(),
            unsynced: AtomicBool::new(false),
            read_empty: false,
        }
    }

    /// Whether the file was there but empty when the cache was opened. Josef never writes an
    /// empty file (even no entries is a version and a count line), Kafka creates one only
    /// before its first entry; in a log holding data it is what a power failure can leave of
    /// a file replaced without fsync, so the loader rebuilds the cache from every segment.
    pub fn read_an_empty_file(&self) -> bool {
        self.read_empty
    }

    /// Path of the checkpoint file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entries, in increasing epoch order.
    pub fn entries(&self) -> Vec<EpochEntry> {
        self.epochs
            .iter()
            .map(|(&epoch, &start_offset)| EpochEntry {
                epoch,
                start_offset,
            })
            .collect()
    }

    /// The latest epoch, if any.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.epochs.keys().next_back().copied()
    }

    /// The latest entry, if any.
    pub fn latest_entry(&self) -> Option<EpochEntry> {
        self.epochs
            .iter()
            .next_back()
            .map(|(&epoch, &start_offset)| EpochEntry {
                epoch,
                start_offset,
            })
    }

    /// The earliest entry, if any.
    pub fn earliest_entry(&self) -> Option<EpochEntry> {
        self.epochs
            .iter()
            .next()
            .map(|(&epoch, &start_offset)| EpochEntry {
                epoch,
                start_offset,
            })
    }

    /// Whether `assign(epoch, start_offset)` would change the cache: a new epoch, or an earlier
    /// start for the latest one. The hot path of every append: a compare, no allocation.
    #[inline]
    fn is_update_needed(&self, epoch: i32, start_offset: i64) -> bool {
        match self.epochs.iter().next_back() {
            Some((&e, &o)) => epoch != e || start_offset < o,
            None => true,
        }
    }

    /// Records that `epoch` starts at `start_offset` (Kafka's `assign`). A negative epoch is
    /// ignored (batches written without a leader epoch). Entries that would break monotonicity
    /// (an epoch `>= epoch` or a start offset `>= start_offset`) are removed first, as Kafka does.
    /// Returns whether the cache changed (and the file was rewritten).
    ///
    /// The file is replaced through a rename without fsync; [`LeaderEpochFileCache::sync`]
    /// (called by the log's flush before it moves the recovery point) makes it durable. Kafka
    /// fsyncs it here, on the append path, so that the file never lacks an entry for data its
    /// recovery point covers: after an unclean stop only the segments from the recovery point
    /// are scanned again and re-assign their epochs (its truncations, by contrast, are written
    /// in the background). The entry assigned here starts at the LEO, past the recovery point,
    /// so that rule holds as long as the file is durable before the recovery point moves past
    /// the entry's offset, which every flush does (and the broker's shutdown, through one
    /// `syncfs` before its checkpoints). A kill -9 loses nothing written (the page cache
    /// survives it); a power failure can leave the old file (its missing entries are in
    /// segments recovery scans again) or an empty one (the loader then rescans every segment:
    /// [`LeaderEpochFileCache::read_an_empty_file`]). With `flush.messages=1` the flush before
    /// the acknowledgement syncs the file, so an acknowledged batch's epoch is as durable as in
    /// Kafka. An fsync per new epoch was one of two per partition on the first append, most
    /// of the time filling 10,000 empty partitions took (issue #22).
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> Result<bool, LogError> {
        if epoch < 0 || !self.is_update_needed(epoch, start_offset) {
            return Ok(false);
        }
        self.epochs
            .retain(|&e, &mut o| e < epoch && o < start_offset);
        self.epochs.insert(epoch, start_offset);
        self.replace_unsynced()?;
        Ok(true)
    }

    /// Replaces the file with the entries through a rename, without fsync, until
    /// [`LeaderEpochFileCache::sync`].
    fn replace_unsynced(&self) -> Result<(), LogError> {
        self.storage
            .write_replacing(
                &self.path,
                format_leader_epoch_checkpoint(&self.entries()).as_bytes(),
            )
            .map_err(|e| LogError::io(&self.path, e))?;
        self.unsynced.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Makes the file durable if [`LeaderEpochFileCache::assign`] replaced it since the last
    /// fsync (an atomic rewrite: the same two fsyncs it skipped); nothing otherwise.
    pub fn sync(&self) -> Result<(), LogError> {
        if self.unsynced.load(Ordering::Relaxed) {
            self.flush()?;
        }
        Ok(())
    }

    /// Whether the file was replaced without fsync and not synced since.
    pub fn is_unsynced(&self) -> bool {
        self.unsynced.load(Ordering::Relaxed)
    }

    /// Removes every entry starting at or after `end_offset` (the log was truncated to it, or
    /// is loaded with its end there). The file is replaced without fsync, as after
    /// [`LeaderEpochFileCache::assign`] (Kafka writes these truncations in the background,
    /// `truncateFromEndAsyncFlush`): what a power failure can leave is the old file, whose extra
    /// entries at or past the log end the next load drops again, or an empty one, which the
    /// loader does not trust; and the log's flush syncs it before the recovery point passes any
    /// later entry. A cluster node's empty partition has its epoch's entry at its log end, so
    /// each restart dropped it here and rewrote the file with two fsyncs (then wrote the entry
    /// back on becoming leader): 30,000 partitions took 74–81 s to start (issue #22).
    pub fn truncate_from_end(&mut self, end_offset: i64) -> Result<(), LogError> {
        let Some(latest) = self.latest_entry() else {
            return Ok(());
        };
        if end_offset >= 0 && latest.start_offset >= end_offset {
            self.epochs.retain(|_, &mut o| o < end_offset);
            self.replace_unsynced()?;
        }
        Ok(())
    }

    /// The log start offset moved to `start_offset`: entries starting at or below it are dropped,
    /// and the last of them is kept with its start moved to `start_offset` (its epoch still covers
    /// the new first offset).
    pub fn truncate_from_start(&mut self, start_offset: i64) -> Result<(), LogError> {
        let removed: Vec<i32> = self
            .epochs
            .iter()
            .filter(|(_, &o)| o <= start_offset)
            .map(|(&e, _)| e)
            .collect();
        let Some(&last) = removed.last() else {
            return Ok(());
        };
        if removed.len() == 1 && self.epochs.get(&last) == Some(&start_offset) {
            return Ok(());
        }
        for e in &removed {
            self.epochs.remove(e);
        }
        self.epochs.insert(last, start_offset);
        self.flush()
    }

    /// Removes every entry and the file's content (the log was emptied).
    pub fn clear_and_flush(&mut self) -> Result<(), LogError> {
        self.epochs.clear();
        self.flush()
    }

    /// The epoch at or below `requested_epoch` and the offset where it ended (Kafka's
    /// `endOffsetFor`, behind OffsetsForLeaderEpoch):
    /// - an undefined requested epoch, or one above every known epoch but not the latest →
    ///   `(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)`;
    /// - the latest epoch → `(epoch, log_end_offset)`;
    /// - otherwise the largest known epoch `<= requested_epoch` (or `requested_epoch` itself if
    ///   there is none) and the start offset of the next known epoch.
    pub fn end_offset_for(&self, requested_epoch: i32, log_end_offset: i64) -> (i32, i64) {
        if requested_epoch == UNDEFINED_EPOCH {
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        }
        if self.latest_epoch() == Some(requested_epoch) {
            return (requested_epoch, log_end_offset);
        }
        let Some((_, &higher_start)) = self
            .epochs
            .range(requested_epoch.saturating_add(1)..)
            .next()
        else {
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        };
        match self.epochs.range(..=requested_epoch).next_back() {
            Some((&floor, _)) => (floor, higher_start),
            None => (requested_epoch, higher_start),
        }
    }

    /// The epoch of the entry holding `offset` (the largest start offset `<= offset`).
    pub fn epoch_for_offset(&self, offset: i64) -> Option<i32> {
        self.epochs
            .iter()
            .rev()
            .find(|(_, &o)| o <= offset)
            .map(|(&e, _)| e)
    }

    /// Writes the checkpoint file atomically (fsynced).
    pub fn flush(&self) -> Result<(), LogError> {
        write_file_atomically_in(
            &*self.storage,
            &self.path,
            format_leader_epoch_checkpoint(&self.entries()).as_bytes(),
        )?;
        self.unsynced.store(false, Ordering::Relaxed);
        Ok(())
    }
}

/// Renders entries in the `leader-epoch-checkpoint` format.
///
/// ```
/// use josef_log::leader_epoch::{format_leader_epoch_checkpoint, EpochEntry};
/// let text = format_leader_epoch_checkpoint(&[EpochEntry { epoch: 2, start_offset: 40 }]);
/// assert_eq!(text, "0\n1\n2 40\n");
/// ```
pub fn format_leader_epoch_checkpoint(entries: &[EpochEntry]) -> String {
    let mut out = format!("{LEADER_EPOCH_CHECKPOINT_VERSION}\n{}\n", entries.len());
    for e in entries {
        out.push_str(&format!("{} {}\n", e.epoch, e.start_offset));
    }
    out
}

/// Parses the `leader-epoch-checkpoint` format; a wrong version, a malformed line, a count
/// mismatch or entries that do not increase are errors. An empty file (Kafka creates it so) has
/// no entries.
pub fn parse_leader_epoch_checkpoint(text: &str) -> Result<Vec<EpochEntry>, LogError> {
    let bad =
        |why: String| LogError::MalformedCheckpoint(format!("leader-epoch-checkpoint: {why}"));
    // Kafka creates the file empty before the first write; an empty file is an empty cache.
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let mut lines = text.lines();
    let version: i32 = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| bad("bad version line".into()))?;
    if version != LEADER_EPOCH_CHECKPOINT_VERSION {
        return Err(bad(format!("unsupported version {version}")));
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| bad("bad count line".into()))?;
    // The count is untrusted: never preallocate by it.
    let mut entries: Vec<EpochEntry> = Vec::new();
    for line in lines {
        if line.trim().is_empty() {
            continue;
        }
        let mut parts = line.split(' ');
        let (Some(epoch), Some(offset), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad(format!("malformed line {line:?}")));
        };
        let (Ok(epoch), Ok(start_offset)) = (epoch.parse::<i32>(), offset.parse::<i64>()) else {
            return Err(bad(format!("malformed line {line:?}")));
        };
        if let Some(prev) = entries.last() {
            if epoch <= prev.epoch || start_offset < prev.start_offset {
                return Err(bad(format!("entries do not increase at {line:?}")));
            }
        }
        entries.push(EpochEntry {
            epoch,
            start_offset,
        });
    }
    if entries.len() != count {
        return Err(bad(format!(
            "expected {count} entries, found {}",
            entries.len()
        )));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cache() -> (tempfile::TempDir, LeaderEpochFileCache) {
        let d = tempfile::tempdir().unwrap();
        let c = LeaderEpochFileCache::open(d.path()).unwrap();
        (d, c)
    }

    fn pairs(c: &LeaderEpochFileCache) -> Vec<(i32, i64)> {
        c.entries()
            .iter()
            .map(|e| (e.epoch, e.start_offset))
            .collect()
    }

    #[test]
    fn assign_keeps_the_first_offset_of_each_epoch_and_ignores_negative_epochs() {
        let (_d, mut c) = cache();
        assert!(!c.assign(-1, 0).unwrap());
        assert!(c.assign(1, 5).unwrap());
        assert!(!c.assign(1, 9).unwrap());
        assert!(c.assign(2, 12).unwrap());
        assert_eq!(pairs(&c), vec![(1, 5), (2, 12)]);
    }

    #[test]
    fn assign_removes_entries_that_would_break_monotonicity() {
        let (_d, mut c) = cache();
        c.assign(1, 5).unwrap();
        c.assign(3, 10).unwrap();
        // A lower epoch at a later offset replaces the higher epoch (Kafka's rule).
        c.assign(2, 20).unwrap();
        assert_eq!(pairs(&c), vec![(1, 5), (2, 20)]);
        // An earlier start for the latest epoch moves it back and drops later starts.
        c.assign(2, 3).unwrap();
        assert_eq!(pairs(&c), vec![(2, 3)]);
    }

    #[test]
    fn end_offset_for_follows_kafkas_rules() {
        let (_d, mut c) = cache();
        c.assign(2, 10).unwrap();
        c.assign(4, 30).unwrap();
        assert_eq!(c.end_offset_for(UNDEFINED_EPOCH, 50), (-1, -1));
        assert_eq!(c.end_offset_for(4, 50), (4, 50));
        assert_eq!(c.end_offset_for(2, 50), (2, 30));
        assert_eq!(c.end_offset_for(3, 50), (2, 30));
        assert_eq!(c.end_offset_for(1, 50), (1, 10));
        assert_eq!(c.end_offset_for(7, 50), (-1, -1));
    }

    #[test]
    fn truncate_from_end_drops_epochs_starting_at_or_after_the_offset() {
        let (_d, mut c) = cache();
        c.assign(1, 0).unwrap();
        c.assign(2, 10).unwrap();
        c.assign(3, 20).unwrap();
        c.truncate_from_end(15).unwrap();
        assert_eq!(pairs(&c), vec![(1, 0), (2, 10)]);
        c.truncate_from_end(10).unwrap();
        assert_eq!(pairs(&c), vec![(1, 0)]);
    }

    #[test]
    fn truncate_from_start_moves_the_covering_epoch_to_the_new_start() {
        let (_d, mut c) = cache();
        c.assign(1, 0).unwrap();
        c.assign(2, 10).unwrap();
        c.assign(3, 20).unwrap();
        c.truncate_from_start(15).unwrap();
        assert_eq!(pairs(&c), vec![(2, 15), (3, 20)]);
        c.truncate_from_start(20).unwrap();
        assert_eq!(pairs(&c), vec![(3, 20)]);
    }

    #[test]
    fn leader_epoch_checkpoint_is_kafkas_format_and_survives_reopen() {
        let (d, mut c) = cache();
        c.assign(0, 0).unwrap();
        c.assign(5, 100).unwrap();
        let text = std::fs::read_to_string(d.path().join(LEADER_EPOCH_CHECKPOINT_FILE)).unwrap();
        assert_eq!(text, "0\n2\n0 0\n5 100\n");
        let again = LeaderEpochFileCache::open(d.path()).unwrap();
        assert_eq!(pairs(&again), vec![(0, 0), (5, 100)]);
    }

    #[test]
    fn malformed_leader_epoch_checkpoints_are_errors() {
        for text in [
            "\n",
            "1\n0\n",
            "0\n1\n",
            "0\n1\n1\n",
            "0\n2\n3 5\n2 9\n",
            "0\n1\nx 1\n",
        ] {
            assert!(parse_leader_epoch_checkpoint(text).is_err(), "{text:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn entries_stay_strictly_increasing(ops in proptest::collection::vec((0u8..3, 0i32..8, 0i64..100), 0..40)) {
            let (_d, mut c) = cache();
            for (op, epoch, offset) in ops {
                match op {
                    0 => { c.assign(epoch, offset).unwrap(); }
                    1 => c.truncate_from_end(offset).unwrap(),
                    _ => c.truncate_from_start(offset).unwrap(),
                }
                let e = c.entries();
                for w in e.windows(2) {
                    prop_assert!(w[0].epoch < w[1].epoch && w[0].start_offset < w[1].start_offset);
                }
            }
            let again = LeaderEpochFileCache::open(c.path().parent().unwrap()).unwrap();
            prop_assert_eq!(again.entries(), c.entries());
        }
    }
}
