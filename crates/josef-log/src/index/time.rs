//! The sparse time index (`.timeindex`, Kafka's `TimeIndex`).
//!
//! Each 12-byte entry is a timestamp (i64, big-endian) and an offset relative to the segment base
//! (u32, big-endian): the largest timestamp seen up to that offset. Entries are appended only when
//! the timestamp grows, so timestamps and offsets both increase. One slot is always kept free so
//! that the segment's max timestamp can be written when it rolls or closes.

use std::path::Path;
use std::sync::Arc;

use crate::error::LogError;
use crate::index::mmap::MmapIndex;
use crate::storage::{self, Storage};

/// Bytes per time index entry.
pub const TIME_INDEX_ENTRY_SIZE: usize = 12;

/// Kafka's `RecordBatch.NO_TIMESTAMP`.
pub use josef_records::NO_TIMESTAMP;

/// A timestamp and an absolute offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    /// Timestamp in milliseconds.
    pub timestamp: i64,
    /// Absolute offset.
    pub offset: i64,
}

/// A segment's time index.
#[derive(Debug)]
pub struct TimeIndex {
    inner: MmapIndex,
    base_offset: i64,
}

impl TimeIndex {
    /// Opens the time index of the segment based at `base_offset` (a missing file is an empty
    /// index, created by its first entry).
    pub fn open(path: &Path, base_offset: i64, max_index_size: usize) -> Result<Self, LogError> {
        Self::open_in(storage::file_system(), path, base_offset, max_index_size)
    }

    /// [`TimeIndex::open`] on any [`Storage`].
    pub fn open_in(
        storage: Arc<dyn Storage>,
        path: &Path,
        base_offset: i64,
        max_index_size: usize,
    ) -> Result<Self, LogError> {
        Self::open_known(storage, path, base_offset, max_index_size, false)
    }

    /// [`TimeIndex::open_in`] of a file the caller's directory listing showed absent when
    /// `known_absent` (nothing is asked of the storage then).
    pub(crate) fn open_known(
        storage: Arc<dyn Storage>,
        path: &Path,
        base_offset: i64,
        max_index_size: usize,
        known_absent: bool,
    ) -> Result<Self, LogError> {
        Ok(TimeIndex {
            inner: MmapIndex::open(
                storage,
                path,
                TIME_INDEX_ENTRY_SIZE,
                max_index_size,
                known_absent,
            )?,
            base_offset,
        })
    }

    /// Number of valid entries.
    pub fn entries(&self) -> usize {
        self.inner.entries()
    }

    /// Whether the index is full; the last slot is reserved for the roll-time entry.
    pub fn is_full(&self) -> bool {
        self.inner.entries() + 1 >= self.inner.max_entries()
    }

    /// Entry `n` (`n < entries()`).
    pub fn entry(&self, n: usize) -> TimestampOffset {
        self.decode(self.inner.entry(n))
    }

    fn decode(&self, b: [u8; crate::index::mmap::MAX_ENTRY_SIZE]) -> TimestampOffset {
        let ts = i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        let rel = u32::from_be_bytes([b[8], b[9], b[10], b[11]]);
        TimestampOffset {
            timestamp: ts,
            offset: self.base_offset + i64::from(rel),
        }
    }

    /// The last entry, or `(NO_TIMESTAMP, base_offset)` when empty.
    pub fn last_entry(&self) -> TimestampOffset {
        match self.entries() {
            0 => TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: self.base_offset,
            },
            n => self.decode(self.inner.peek(n - 1)),
        }
    }

    /// Appends `(timestamp, offset)` if `timestamp` is larger than the last entry's. With
    /// `skip_full_check` the reserved last slot may be used (roll, close, end of recovery).
    pub fn maybe_append(
        &mut self,
        timestamp: i64,
        offset: i64,
        skip_full_check: bool,
    ) -> Result<(), LogError> {
        if !skip_full_check && self.is_full() {
            return Err(LogError::IndexFull(self.inner.path().to_path_buf()));
        }
        let last = self.last_entry();
        if self.entries() > 0 && offset < last.offset {
            return Err(LogError::InvalidOffset(format!(
                "time index offset {offset} is below the last entry's {} in {}",
                last.offset,
                self.inner.path().display()
            )));
        }
        if self.entries() > 0 && timestamp < last.timestamp {
            return Err(LogError::InvalidOffset(format!(
                "time index timestamp {timestamp} is below the last entry's {} in {}",
                last.timestamp,
                self.inner.path().display()
            )));
        }
        if timestamp > last.timestamp {
            let rel = offset
                .checked_sub(self.base_offset)
                .filter(|r| (0..=i64::from(i32::MAX)).contains(r))
                .ok_or_else(|| {
                    LogError::InvalidOffset(format!(
                        "offset {offset} does not fit relative to base {}",
                        self.base_offset
                    ))
                })?;
            let mut e = [0u8; TIME_INDEX_ENTRY_SIZE];
            e[..8].copy_from_slice(&timestamp.to_be_bytes());
            e[8..].copy_from_slice(&(rel as u32).to_be_bytes());
            self.inner.push(&e)?;
        }
        Ok(())
    }

    /// The entry with the largest timestamp `<= target`, or `(NO_TIMESTAMP, base_offset)` if none.
    pub fn lookup(&self, target: i64) -> TimestampOffset {
        match self
            .inner
            .largest_lower_bound(target, |i| self.entry(i).timestamp)
        {
            Some(i) => self.entry(i),
            None => TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: self.base_offset,
            },
        }
    }

    /// Removes every entry whose offset is `>= offset`.
    pub fn truncate_to(&mut self, offset: i64) -> Result<(), LogError> {
        self.inner.ensure_mapped()?;
        // Offsets increase with the entry number, so keep the prefix below `offset`.
        let mut keep = self.entries();
        while keep > 0 && self.entry(keep - 1).offset >= offset {
            keep -= 1;
        }
        self.inner.truncate_entries(keep)
    }

    /// Removes every entry and restores the preallocated size.
    pub fn reset(&mut self) -> Result<(), LogError> {
        self.inner.reset()
    }

    /// Cuts the file to its valid entries.
    pub fn trim_to_valid_size(&mut self) -> Result<(), LogError> {
        self.inner.trim_to_valid_size()
    }

    /// Grows the file back to the preallocated size (for the active segment).
    pub fn grow_to_max(&mut self) -> Result<(), LogError> {
        self.inner.grow_to_max()
    }

    /// Writes dirty pages to disk.
    pub fn flush(&self) -> Result<(), LogError> {
        self.inner.flush()
    }

    /// Kafka's clean-open check (O(1)): whole entries, last timestamp not below the first, last
    /// offset not below the base offset.
    pub fn sanity_check(&self) -> Result<(), LogError> {
        let corrupt = |reason: String| LogError::CorruptIndex {
            path: self.inner.path().to_path_buf(),
            reason,
        };
        if self.inner.file_len() % TIME_INDEX_ENTRY_SIZE != 0 {
            return Err(corrupt(format!(
                "length {} is not a multiple of {TIME_INDEX_ENTRY_SIZE}",
                self.inner.file_len()
            )));
        }
        if self.entries() == 0 {
            return Ok(());
        }
        let first = self.decode(self.inner.peek(0));
        let last = self.last_entry();
        if last.timestamp < first.timestamp || last.offset < first.offset {
            return Err(corrupt(format!(
                "entries do not increase ({first:?} .. {last:?})"
            )));
        }
        Ok(())
    }

    /// Checks every entry: timestamps strictly and offsets weakly increasing.
    pub fn full_check(&self) -> Result<(), LogError> {
        self.sanity_check()?;
        let mut prev: Option<TimestampOffset> = None;
        for i in 0..self.entries() {
            let e = self.entry(i);
            if prev.is_some_and(|p| e.timestamp <= p.timestamp || e.offset < p.offset) {
                return Err(LogError::CorruptIndex {
                    path: self.inner.path().to_path_buf(),
                    reason: format!("entry {i} ({e:?}) out of order"),
                });
            }
            prev = Some(e);
        }
        Ok(())
    }

    /// Path of the file.
    pub fn path(&self) -> &Path {
        self.inner.path()
    }

    /// Drops the mapping until the next access needs it.
    pub fn unmap(&mut self) {
        self.inner.unmap()
    }

    /// Whether the file is mapped now (an idle index is not).
    pub fn is_mapped(&self) -> bool {
        self.inner.is_mapped()
    }

    /// Whether the file was missing when this index was opened.
    pub(crate) fn missing_at_open(&self) -> bool {
        self.inner.missing_at_open()
    }

    /// Creates the file, empty, if it does not exist yet.
    pub(crate) fn materialize(&mut self) -> Result<(), LogError> {
        self.inner.materialize()
    }

    pub(crate) fn rename(&mut self, storage: &dyn Storage, to: &Path) -> Result<(), LogError> {
        self.inner.rename(storage, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &Path, base: i64, max: usize) -> TimeIndex {
        TimeIndex::open(&dir.join("t.timeindex"), base, max).unwrap()
    }

    #[test]
    fn entries_are_appended_only_when_timestamp_grows() {
        let d = tempfile::tempdir().unwrap();
        let mut idx = open(d.path(), 10, 1200);
        idx.maybe_append(100, 10, false).unwrap();
        idx.maybe_append(100, 12, false).unwrap();
        assert_eq!(idx.entries(), 1);
        idx.maybe_append(150, 15, false).unwrap();
        assert_eq!(idx.entries(), 2);
        assert!(idx.maybe_append(140, 20, false).is_err());
        assert!(idx.maybe_append(200, 14, false).is_err());
    }

    #[test]
    fn lookup_finds_largest_timestamp_at_or_below() {
        let d = tempfile::tempdir().unwrap();
        let mut idx = open(d.path(), 0, 1 << 16);
        assert_eq!(
            idx.lookup(5),
            TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: 0
            }
        );
        for i in 1..=1000i64 {
            idx.maybe_append(i * 10, i * 3, false).unwrap();
        }
        assert_eq!(idx.lookup(9).timestamp, NO_TIMESTAMP);
        assert_eq!(
            idx.lookup(10),
            TimestampOffset {
                timestamp: 10,
                offset: 3
            }
        );
        assert_eq!(idx.lookup(25).offset, 6);
        assert_eq!(idx.lookup(i64::MAX).offset, 3000);
    }

    #[test]
    fn last_slot_is_reserved_for_the_roll_entry() {
        let d = tempfile::tempdir().unwrap();
        let mut idx = open(d.path(), 0, 36);
        idx.maybe_append(1, 1, false).unwrap();
        idx.maybe_append(2, 2, false).unwrap();
        assert!(idx.is_full());
        assert!(idx.maybe_append(3, 3, false).is_err());
        idx.maybe_append(3, 3, true).unwrap();
        assert_eq!(idx.entries(), 3);
    }

    #[test]
    fn truncate_to_removes_entries_at_or_above_offset() {
        let d = tempfile::tempdir().unwrap();
        let mut idx = open(d.path(), 0, 1200);
        for i in 1..=5 {
            idx.maybe_append(i, i * 10, false).unwrap();
        }
        idx.truncate_to(30).unwrap();
        assert_eq!(idx.last_entry().offset, 20);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn lookup_matches_a_linear_scan(
            steps in proptest::collection::vec((0i64..20, 1i64..5), 0..2000),
            targets in proptest::collection::vec(-5i64..50_000, 1..50),
        ) {
            let d = tempfile::tempdir().unwrap();
            let mut idx = open(d.path(), 0, 1 << 16);
            let mut entries: Vec<(i64, i64)> = Vec::new();
            let (mut ts, mut o) = (0i64, 0i64);
            for (dt, d_o) in steps {
                ts += dt;
                o += d_o;
                let grows = entries.last().map_or(true, |l| ts > l.0);
                if idx.maybe_append(ts, o, false).is_ok() && grows {
                    entries.push((ts, o));
                }
            }
            proptest::prop_assert_eq!(idx.entries(), entries.len());
            for t in targets {
                let want = entries.iter().rev().find(|e| e.0 <= t).map_or((NO_TIMESTAMP, 0), |e| *e);
                let got = idx.lookup(t);
                proptest::prop_assert_eq!((got.timestamp, got.offset), want);
            }
        }
    }
}
