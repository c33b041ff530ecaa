//! The sparse offset index (`.index`, Kafka's `OffsetIndex`).
//!
//! Each 8-byte entry maps an offset relative to the segment's base offset (u32, big-endian) to the
//! byte position (u32, big-endian) of the batch holding it. The log writes an entry for a batch's
//! last offset at the batch's start position after more than `index.interval.bytes` were appended
//! since the previous entry, so a lookup lands at or before the batch that holds any offset.

use std::path::Path;
use std::sync::Arc;

use crate::error::LogError;
use crate::index::mmap::MmapIndex;
use crate::storage::{self, Storage};

/// Bytes per offset index entry.
pub const OFFSET_INDEX_ENTRY_SIZE: usize = 8;

/// An absolute offset and the byte position of the batch holding it in the segment file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    /// Absolute offset.
    pub offset: i64,
    /// Byte position in the `.log` file.
    pub position: u32,
}

/// A segment's offset index.
#[derive(Debug)]
pub struct OffsetIndex {
    inner: MmapIndex,
    base_offset: i64,
}

impl OffsetIndex {
    /// Opens the index of the segment based at `base_offset`. A missing file is an empty index,
    /// created and preallocated to `max_index_size` rounded down to 8 bytes by its first entry.
    pub fn open(path: &Path, base_offset: i64, max_index_size: usize) -> Result<Self, LogError> {
        Self::open_in(storage::file_system(), path, base_offset, max_index_size)
    }

    /// [`OffsetIndex::open`] on any [`Storage`].
    pub fn open_in(
        storage: Arc<dyn Storage>,
        path: &Path,
        base_offset: i64,
        max_index_size: usize,
    ) -> Result<Self, LogError> {
        Self::open_known(storage, path, base_offset, max_index_size, false)
    }

    /// [`OffsetIndex::open_in`] of a file the caller's directory listing showed absent when
    /// `known_absent` (nothing is asked of the storage then).
    pub(crate) fn open_known(
        storage: Arc<dyn Storage>,
        path: &Path,
        base_offset: i64,
        max_index_size: usize,
        known_absent: bool,
    ) -> Result<Self, LogError> {
        Ok(OffsetIndex {
            inner: MmapIndex::open(
                storage,
                path,
                OFFSET_INDEX_ENTRY_SIZE,
                max_index_size,
                known_absent,
            )?,
            base_offset,
        })
    }

    /// The segment's base offset.
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Number of valid entries.
    pub fn entries(&self) -> usize {
        self.inner.entries()
    }

    /// Whether no further entry fits.
    pub fn is_full(&self) -> bool {
        self.inner.entries() >= self.inner.max_entries()
    }

    /// Entry `n` (`n < entries()`).
    pub fn entry(&self, n: usize) -> OffsetPosition {
        self.decode(self.inner.entry(n))
    }

    fn decode(&self, b: [u8; crate::index::mmap::MAX_ENTRY_SIZE]) -> OffsetPosition {
        let rel = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let pos = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        OffsetPosition {
            offset: self.base_offset + i64::from(rel),
            position: pos,
        }
    }

    /// The last entry, or `(base_offset, 0)` when empty.
    pub fn last_entry(&self) -> OffsetPosition {
        match self.entries() {
            0 => OffsetPosition {
                offset: self.base_offset,
                position: 0,
            },
            n => self.decode(self.inner.peek(n - 1)),
        }
    }

    /// Whether `offset` can be stored relative to the base offset (Kafka's `canAppendOffset`).
    pub fn can_append_offset(&self, offset: i64) -> bool {
        relative(self.base_offset, offset).is_some()
    }

    /// Appends an entry; offsets must strictly increase.
    pub fn append(&mut self, offset: i64, position: u32) -> Result<(), LogError> {
        if self.is_full() {
            return Err(LogError::IndexFull(self.inner.path().to_path_buf()));
        }
        if self.entries() > 0 && offset <= self.last_entry().offset {
            return Err(LogError::InvalidOffset(format!(
                "offset index entry {offset} is not larger than the last entry {} in {}",
                self.last_entry().offset,
                self.inner.path().display()
            )));
        }
        let rel = relative(self.base_offset, offset).ok_or_else(|| {
            LogError::InvalidOffset(format!(
                "offset {offset} does not fit relative to base {}",
                self.base_offset
            ))
        })?;
        let mut e = [0u8; OFFSET_INDEX_ENTRY_SIZE];
        e[..4].copy_from_slice(&rel.to_be_bytes());
        e[4..].copy_from_slice(&position.to_be_bytes());
        self.inner.push(&e)
    }

    /// The entry with the largest offset `<= target`, or `(base_offset, 0)` if none.
    pub fn lookup(&self, target: i64) -> OffsetPosition {
        match self
            .inner
            .largest_lower_bound(target, |i| self.entry(i).offset)
        {
            Some(i) => self.entry(i),
            None => OffsetPosition {
                offset: self.base_offset,
                position: 0,
            },
        }
    }

    /// Removes every entry with offset `>= offset`.
    pub fn truncate_to(&mut self, offset: i64) -> Result<(), LogError> {
        self.inner.ensure_mapped()?;
        let keep = match self
            .inner
            .largest_lower_bound(offset, |i| self.entry(i).offset)
        {
            None => 0,
            Some(i) if self.entry(i).offset == offset => i,
            Some(i) => i + 1,
        };
        self.inner.truncate_entries(keep)
    }

    /// Removes every entry and restores the preallocated size (before a rebuild).
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

    /// Checks the file the way Kafka does on a clean open (O(1), so opening thousands of segments
    /// stays fast): whole entries, first and last offsets not below the base offset and ordered, and
    /// the last position inside a log of `log_size` bytes.
    pub fn sanity_check(&self, log_size: u64) -> Result<(), LogError> {
        let corrupt = |reason: String| LogError::CorruptIndex {
            path: self.inner.path().to_path_buf(),
            reason,
        };
        if self.inner.file_len() % OFFSET_INDEX_ENTRY_SIZE != 0 {
            return Err(corrupt(format!(
                "length {} is not a multiple of {OFFSET_INDEX_ENTRY_SIZE}",
                self.inner.file_len()
            )));
        }
        if self.entries() == 0 {
            return Ok(());
        }
        let first = self.decode(self.inner.peek(0));
        let last = self.last_entry();
        if self.entries() > 1 && (last.offset <= first.offset || last.position <= first.position) {
            return Err(corrupt(format!(
                "entries do not increase ({first:?} .. {last:?})"
            )));
        }
        if u64::from(last.position) >= log_size {
            return Err(corrupt(format!(
                "last entry points past the log ({last:?})"
            )));
        }
        Ok(())
    }

    /// Checks every entry: offsets and positions strictly increasing, positions inside the log.
    /// Used after an unclean stop, when any page of the index may be stale.
    pub fn full_check(&self, log_size: u64) -> Result<(), LogError> {
        self.sanity_check(log_size)?;
        let mut prev: Option<OffsetPosition> = None;
        for i in 0..self.entries() {
            let e = self.entry(i);
            let ordered = prev.map_or(true, |p| e.offset > p.offset && e.position > p.position);
            if !ordered || u64::from(e.position) >= log_size {
                return Err(LogError::CorruptIndex {
                    path: self.inner.path().to_path_buf(),
                    reason: format!("entry {i} ({e:?}) out of order or past the log"),
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

fn relative(base: i64, offset: i64) -> Option<u32> {
    let rel = offset.checked_sub(base)?;
    // Kafka stores a signed int: relative offsets above i32::MAX overflow.
    if (0..=i64::from(i32::MAX)).contains(&rel) {
        Some(rel as u32)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &Path, base: i64, max: usize) -> OffsetIndex {
        OffsetIndex::open(&dir.join("i.index"), base, max).unwrap()
    }

    #[test]
    fn lookup_returns_largest_entry_at_or_below_target() {
        let d = tempfile::tempdir().unwrap();
        let mut idx = open(d.path(), 100, 1 << 16);
        assert_eq!(
            idx.lookup(150),
            OffsetPosition {
                offset: 100,
                position: 0
            }
        );
        for i in 0..2000u32 {
            idx.append(100 + i64::from(i) * 10 + 5, i * 100 + 50)
                .unwrap();
        }
        assert_eq!(idx.lookup(99).offset, 100);
        assert_eq!(idx.lookup(104).position, 0);
        assert_eq!(
            idx.lookup(105),
            OffsetPosition {
                offset: 105,
                position: 50
            }
        );
        assert_eq!(idx.lookup(114).offset, 105);
        assert_eq!(idx.lookup(115).offset, 115);
        // in the cold section
        assert_eq!(idx.lookup(1009).offset, 1005);
        assert_eq!(idx.lookup(i64::MAX).offset, 100 + 1999 * 10 + 5);
    }

    #[test]
    fn append_requires_strictly_increasing_offsets() {
        let d = tempfile::tempdir().unwrap();
        let mut idx = open(d.path(), 0, 1024);
        idx.append(5, 0).unwrap();
        assert!(matches!(idx.append(5, 10), Err(LogError::InvalidOffset(_))));
        assert!(matches!(idx.append(4, 10), Err(LogError::InvalidOffset(_))));
    }

    #[test]
    fn index_is_full_at_preallocated_size() {
        let d = tempfile::tempdir().unwrap();
        let mut idx = open(d.path(), 0, 8 * 3 + 5);
        for i in 0..3 {
            idx.append(i, i as u32).unwrap();
        }
        assert!(idx.is_full());
        assert!(matches!(idx.append(10, 10), Err(LogError::IndexFull(_))));
    }

    #[test]
    fn relative_offset_overflow_is_detected() {
        let d = tempfile::tempdir().unwrap();
        let idx = open(d.path(), 10, 1024);
        assert!(idx.can_append_offset(10 + i64::from(i32::MAX)));
        assert!(!idx.can_append_offset(11 + i64::from(i32::MAX)));
        assert!(!idx.can_append_offset(9));
    }

    #[test]
    fn trimmed_index_reopens_with_same_entries() {
        let d = tempfile::tempdir().unwrap();
        let mut idx = open(d.path(), 7, 4096);
        idx.append(8, 0).unwrap();
        idx.append(20, 4000).unwrap();
        idx.trim_to_valid_size().unwrap();
        drop(idx);
        assert_eq!(
            std::fs::metadata(d.path().join("i.index")).unwrap().len(),
            16
        );
        let mut idx = open(d.path(), 7, 4096);
        assert_eq!(idx.entries(), 2);
        assert_eq!(
            idx.last_entry(),
            OffsetPosition {
                offset: 20,
                position: 4000
            }
        );
        idx.sanity_check(5000).unwrap();
        assert!(idx.sanity_check(4000).is_err());
        idx.grow_to_max().unwrap();
        idx.append(30, 4500).unwrap();
        assert_eq!(idx.entries(), 3);
    }

    #[test]
    fn truncate_to_drops_entries_at_or_above() {
        let d = tempfile::tempdir().unwrap();
        let mut idx = open(d.path(), 0, 4096);
        for i in 1..=5 {
            idx.append(i * 10, (i * 100) as u32).unwrap();
        }
        idx.truncate_to(30).unwrap();
        assert_eq!(idx.entries(), 2);
        idx.truncate_to(25).unwrap();
        assert_eq!(idx.entries(), 2);
        idx.truncate_to(0).unwrap();
        assert_eq!(idx.entries(), 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn lookup_matches_a_linear_scan(
            gaps in proptest::collection::vec(1i64..50, 0..3000),
            targets in proptest::collection::vec(0i64..200_000, 1..50),
        ) {
            let d = tempfile::tempdir().unwrap();
            let mut idx = open(d.path(), 1000, 1 << 16);
            let mut entries = Vec::new();
            let (mut o, mut p) = (1000i64, 0u32);
            for g in gaps {
                o += g;
                p += g as u32 * 7;
                if idx.append(o, p).is_ok() {
                    entries.push((o, p));
                }
            }
            for t in targets {
                let want = entries.iter().rev().find(|e| e.0 <= t).map_or((1000, 0), |e| *e);
                let got = idx.lookup(t);
                proptest::prop_assert_eq!((got.offset, got.position), want);
            }
        }
    }
}
