//! The preallocated array of fixed-size entries under the offset and time indexes (Kafka's
//! `AbstractIndex`), memory-mapped on the file system (see [`crate::storage::IndexFile`]).
//!
//! An index file is created and preallocated to `segment.index.bytes` rounded down to the entry
//! size when its first entry is written (a missing file reads as an empty index); the number of valid entries is tracked in memory (Kafka's mmap
//! position). An existing file is taken to be full of valid entries (it was trimmed when its
//! segment rolled or closed); the active segment's index grows back to the preallocated size with
//! its next entry, and is trimmed to its entries on roll and close.
//!
//! The file is mapped lazily (Kafka's `LazyIndex`): only when an entry is read or written. Its
//! length is known from the file system, so opening, growing, trimming or resetting an index
//! maps nothing, and an idle partition holds no mapping at all — Linux allows 65,530 mappings per
//! process by default (`vm.max_map_count`), two per segment would cap a broker near 30,000 idle
//! partitions.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::error::LogError;
use crate::storage::{IndexFile, Storage};

/// Size of the "warm" tail of an index that lookups search first: the last pages written are the
/// ones in-sync followers and consumers touch, so searching them first keeps the page cache warm.
const WARM_SECTION_BYTES: usize = 8192;

/// The largest entry size (the time index's 12 bytes).
pub(crate) const MAX_ENTRY_SIZE: usize = 12;

/// A page of zeros: what index bytes are overwritten from, a page at a time.
const ZEROS: [u8; 4096] = [0; 4096];

/// A preallocated array of fixed-size index entries.
#[derive(Debug)]
pub(crate) struct MmapIndex {
    path: PathBuf,
    storage: Arc<dyn Storage>,
    /// The mapping once something needed it; `Some(None)` when mapping failed on a read, which
    /// then sees zeros (see [`MmapIndex::entry`]) until a write maps it again or fails.
    file: OnceLock<Option<Box<dyn IndexFile>>>,
    /// Length in bytes (the file length).
    len: usize,
    entries: usize,
    entry_size: usize,
    max_index_size: usize,
    /// The file was missing when the index was opened.
    missing_at_open: bool,
    /// The file exists: a missing one is created by the first entry (or by
    /// [`MmapIndex::materialize`]), so a partition that never gets an entry costs no index file
    /// (issue #22: creating 100,000 empty partitions created 200,000 empty index files).
    exists: bool,
    /// Written or resized since the last flush: a flush of an unmapped index must still reach
    /// the disk (pages dirtied through a dropped mapping stay dirty in the page cache).
    dirty: AtomicBool,
}

impl MmapIndex {
    /// Opens an index file without mapping it; a missing file is an empty index, created by its
    /// first entry. `known_absent` says the caller's directory listing showed no such file, which
    /// spares asking the storage again.
    pub(crate) fn open(
        storage: Arc<dyn Storage>,
        path: &Path,
        entry_size: usize,
        max_index_size: usize,
        known_absent: bool,
    ) -> Result<MmapIndex, LogError> {
        debug_assert!(entry_size <= MAX_ENTRY_SIZE);
        let max_index_size = round_down(max_index_size, entry_size);
        let found = if known_absent {
            None
        } else {
            match storage.file_len(path) {
                Ok(file_len) => Some(usize::try_from(file_len).map_err(|_| {
                    LogError::io(path, std::io::Error::other("index file too large"))
                })?),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(LogError::io(path, e)),
            }
        };
        let len = found.unwrap_or(0);
        Ok(MmapIndex {
            path: path.to_path_buf(),
            storage,
            file: OnceLock::new(),
            len,
            entries: round_down(len, entry_size) / entry_size,
            entry_size,
            max_index_size,
            missing_at_open: found.is_none(),
            exists: found.is_some(),
            dirty: AtomicBool::new(false),
        })
    }

    /// Creates the file, empty, if it does not exist: what a segment with data does on roll,
    /// close and recovery, so that a clean reopen finds both indexes and trusts them rather than
    /// scanning the segment for an index that was merely never needed.
    pub(crate) fn materialize(&mut self) -> Result<(), LogError> {
        if !self.exists {
            self.storage
                .open_file(&self.path, true)
                .map_err(|e| LogError::io(&self.path, e))?;
            self.exists = true;
        }
        Ok(())
    }

    fn map(&self) -> std::io::Result<Box<dyn IndexFile>> {
        if !self.exists {
            // Mapping would create the file; a missing index has nothing to map.
            return Err(std::io::ErrorKind::NotFound.into());
        }
        let (mut f, _) = self.storage.open_index(&self.path)?;
        if f.len() != self.len {
            // Changed behind the log's back: the log's view of the length wins, as it did when
            // the mapping was kept open.
            f.set_len(self.len)?;
        }
        Ok(f)
    }

    /// The mapping, made on first use; `None` if it cannot be made.
    fn mapped(&self) -> Option<&dyn IndexFile> {
        self.file.get_or_init(|| self.map().ok()).as_deref()
    }

    /// The mapping for a write: made now, and a failure is an error.
    fn mapped_mut(&mut self) -> Result<&mut Box<dyn IndexFile>, LogError> {
        if !matches!(self.file.get(), Some(Some(_))) {
            let f = self.map().map_err(|e| LogError::io(&self.path, e))?;
            self.file = OnceLock::from(Some(f));
        }
        match self.file.get_mut() {
            Some(Some(f)) => Ok(f),
            _ => Err(LogError::io(
                &self.path,
                std::io::Error::other("index not mapped"),
            )),
        }
    }

    /// Maps the file if it has entries, failing if it cannot be: what a change that reads entries
    /// first (a truncation) calls, so it never decides on the zeros of a failed mapping.
    pub(crate) fn ensure_mapped(&mut self) -> Result<(), LogError> {
        if self.entries > 0 {
            self.mapped_mut()?;
        }
        Ok(())
    }

    /// Drops the mapping; the next access maps again. Nothing is lost: writes through a shared
    /// mapping are already the file's pages.
    pub(crate) fn unmap(&mut self) {
        self.file = OnceLock::new();
    }

    /// Whether the file is mapped now (the cost an idle index must not have).
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self.file.get(), Some(Some(_)))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file was missing when this index was opened.
    pub(crate) fn missing_at_open(&self) -> bool {
        self.missing_at_open
    }

    pub(crate) fn entries(&self) -> usize {
        self.entries
    }

    /// How many entries fit in the preallocated size.
    pub(crate) fn max_entries(&self) -> usize {
        self.max_index_size / self.entry_size
    }

    pub(crate) fn file_len(&self) -> usize {
        self.len
    }

    /// The bytes of entry `n` (`n < entries`), in the first `entry_size` bytes. Zeros if the file
    /// cannot be mapped: an all-zero entry points at the segment's base offset and first byte, so
    /// lookups degrade to a scan from the segment start (slower, never wrong) and the checks on
    /// open see a corrupt index and rebuild it.
    pub(crate) fn entry(&self, n: usize) -> [u8; MAX_ENTRY_SIZE] {
        let mut b = [0u8; MAX_ENTRY_SIZE];
        if let Some(f) = self.mapped() {
            f.read_at(n * self.entry_size, &mut b[..self.entry_size]);
        }
        b
    }

    /// Entry `n` like [`MmapIndex::entry`], but an unmapped file is read through a descriptor
    /// opened for it and is left unmapped: the first and last entries an open checks and keeps
    /// cost no mapping held for the life of the segment.
    pub(crate) fn peek(&self, n: usize) -> [u8; MAX_ENTRY_SIZE] {
        let mut b = [0u8; MAX_ENTRY_SIZE];
        match self.file.get() {
            Some(Some(f)) => f.read_at(n * self.entry_size, &mut b[..self.entry_size]),
            Some(None) => {}
            None => {
                let read = self.storage.open_file(&self.path, false).and_then(|f| {
                    f.read_exact_at(&mut b[..self.entry_size], (n * self.entry_size) as u64)
                });
                if read.is_err() {
                    // Same degradation as a failed mapping.
                    b = [0u8; MAX_ENTRY_SIZE];
                }
            }
        }
        b
    }

    /// Appends one entry, growing the file if it has no room (only after a trim).
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<(), LogError> {
        debug_assert_eq!(bytes.len(), self.entry_size);
        let end = (self.entries + 1) * self.entry_size;
        if end > self.len {
            self.resize(end.max(self.max_index_size))?;
        }
        if end > self.len {
            return Err(LogError::IndexFull(self.path.clone()));
        }
        let at = self.entries * self.entry_size;
        self.mapped_mut()?.write_at(at, bytes);
        self.dirty.store(true, Ordering::Relaxed);
        self.entries += 1;
        Ok(())
    }

    /// Forgets entries from `n` on (the bytes are zeroed so a crash never revives them).
    pub(crate) fn truncate_entries(&mut self, n: usize) -> Result<(), LogError> {
        if n >= self.entries {
            return Ok(());
        }
        // Zeroed a page at a time from one buffer: no allocation sized by the index.
        let end = self.entries * self.entry_size;
        let mut at = n * self.entry_size;
        self.dirty.store(true, Ordering::Relaxed);
        let file = self.mapped_mut()?;
        while at < end {
            let k = (end - at).min(ZEROS.len());
            file.write_at(at, &ZEROS[..k]);
            at += k;
        }
        self.entries = n;
        Ok(())
    }

    /// Removes all entries; the next entry grows the file back to its preallocated size.
    ///
    /// The entries are dropped by cutting the file to nothing, not by writing zeros over them: the
    /// active segment's index after an unclean shutdown is the whole preallocated file (every byte
    /// counts as an entry until recovery), and zeroing it would dirty and then flush
    /// `segment.index.bytes` per index and partition — about 20 MiB of writes per partition
    /// recovered, which made a restart after kill -9 take minutes with a few thousand partitions
    /// (issue #22).
    ///
    /// An index of at most a page (what a clean close trims an idle partition's index to) is
    /// zeroed in place instead: cutting it frees its block, and on a file system mounted with
    /// `discard` each freed block is a synchronous discard request to the disk. Recovering
    /// 10,000 partitions of one small segment each after kill -9 waited about 2 s of its 4 s
    /// on those (issue #22). Kafka's `reset` does not cut the file either.
    pub(crate) fn reset(&mut self) -> Result<(), LogError> {
        self.entries = 0;
        if self.exists && self.len > 0 && self.len <= ZEROS.len() {
            let len = self.len;
            self.dirty.store(true, Ordering::Relaxed);
            self.mapped_mut()?.write_at(0, &ZEROS[..len]);
            return Ok(());
        }
        self.resize(0)
    }

    /// Changes the file length; entries past the new length are dropped.
    pub(crate) fn resize(&mut self, new_len: usize) -> Result<(), LogError> {
        let new_len = round_down(new_len, self.entry_size);
        if new_len == self.len {
            return Ok(());
        }
        match self.file.get_mut() {
            Some(Some(f)) => f.set_len(new_len),
            // Unmapped, the length changes through a descriptor opened for it (a failed mapping
            // is forgotten: the next read tries again); a missing file is created here, by the
            // first entry.
            _ => {
                self.file = OnceLock::new();
                self.storage
                    .open_file(&self.path, !self.exists)
                    .and_then(|f| f.set_len(new_len as u64))
            }
        }
        .map_err(|e| LogError::io(&self.path, e))?;
        self.exists = true;
        self.dirty.store(true, Ordering::Relaxed);
        self.len = new_len;
        self.entries = self.entries.min(new_len / self.entry_size);
        Ok(())
    }

    /// Cuts the file to exactly its valid entries (on roll and close).
    pub(crate) fn trim_to_valid_size(&mut self) -> Result<(), LogError> {
        self.resize(self.entries * self.entry_size)
    }

    /// Makes room for the active segment's appends. Nothing is done until the first entry needs
    /// it ([`MmapIndex::push`] grows the file to the preallocated size): an idle partition's index
    /// then keeps the length it was trimmed to, so its close changes nothing and syncs nothing.
    pub(crate) fn grow_to_max(&mut self) -> Result<(), LogError> {
        Ok(())
    }

    /// Writes dirty pages to disk.
    pub(crate) fn flush(&self) -> Result<(), LogError> {
        if !self.dirty.swap(false, Ordering::Relaxed) {
            return Ok(());
        }
        let synced = match self.file.get() {
            Some(Some(f)) => f.flush(),
            // Unmapped: what earlier mappings or resizes left in the page cache is synced through
            // a descriptor opened for it.
            _ => self
                .storage
                .open_file(&self.path, false)
                .and_then(|f| f.sync_data()),
        };
        if synced.is_err() {
            self.dirty.store(true, Ordering::Relaxed);
        }
        synced.map_err(|e| LogError::io(&self.path, e))
    }

    /// Renames the file (used when swapping cleaned segments in).
    pub(crate) fn rename(&mut self, storage: &dyn Storage, to: &Path) -> Result<(), LogError> {
        if !self.exists {
            self.path = to.to_path_buf();
            return Ok(());
        }
        storage
            .rename(&self.path, to)
            .map_err(|e| LogError::io(&self.path, e))?;
        if let Some(Some(f)) = self.file.get_mut() {
            f.moved_to(to);
        }
        self.path = to.to_path_buf();
        Ok(())
    }

    /// Index of the last entry whose key is `<= target`, or `None` if every key is larger (or there
    /// are no entries). `key(i)` must be non-decreasing in `i`. The warm tail is searched first.
    pub(crate) fn largest_lower_bound(
        &self,
        target: i64,
        key: impl Fn(usize) -> i64,
    ) -> Option<usize> {
        if self.entries == 0 {
            return None;
        }
        let warm_entries = WARM_SECTION_BYTES / self.entry_size;
        let first_hot = self.entries.saturating_sub(1 + warm_entries);
        if key(first_hot) <= target {
            return Some(binary_search(first_hot, self.entries - 1, target, &key));
        }
        if key(0) > target {
            return None;
        }
        Some(binary_search(0, first_hot, target, &key))
    }
}

/// Largest `i` in `[lo, hi]` with `key(i) <= target`, given `key(lo) <= target`.
fn binary_search(mut lo: usize, mut hi: usize, target: i64, key: &impl Fn(usize) -> i64) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if key(mid) <= target {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

pub(crate) fn round_down(n: usize, factor: usize) -> usize {
    n - n % factor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_search_finds_largest_lower_bound() {
        let keys = [1i64, 3, 3, 5, 9];
        let k = |i: usize| keys[i];
        assert_eq!(binary_search(0, 4, 1, &k), 0);
        assert_eq!(binary_search(0, 4, 4, &k), 2);
        assert_eq!(binary_search(0, 4, 100, &k), 4);
        assert_eq!(binary_search(0, 4, 8, &k), 3);
    }

    #[test]
    fn reset_of_a_small_index_keeps_its_block() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.timeindex");
        let storage = crate::storage::file_system();
        let max = 1024 * 1024;
        {
            let mut idx = MmapIndex::open(storage.clone(), &path, 12, max, false).unwrap();
            idx.push(&[7; 12]).unwrap();
            idx.trim_to_valid_size().unwrap();
            idx.flush().unwrap();
        }
        let blocks = std::fs::metadata(&path).unwrap().blocks();
        assert!(blocks > 0);
        let mut idx = MmapIndex::open(storage.clone(), &path, 12, max, false).unwrap();
        assert_eq!(idx.entries(), 1);
        idx.reset().unwrap();
        idx.flush().unwrap();
        assert_eq!(idx.entries(), 0);
        // Not cut: the block stays allocated (no discard), its bytes are zeros.
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!((meta.len(), meta.blocks()), (12, blocks));
        assert_eq!(std::fs::read(&path).unwrap(), [0; 12]);
        idx.push(&[9; 12]).unwrap();
        assert_eq!(idx.entries(), 1);
        idx.trim_to_valid_size().unwrap();
        idx.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), [9; 12]);
    }

    #[test]
    fn reset_after_an_unclean_shutdown_writes_nothing() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.index");
        let storage = crate::storage::file_system();
        let max = 1024 * 1024;
        {
            let mut idx = MmapIndex::open(storage.clone(), &path, 8, max, false).unwrap();
            for i in 0..3u64 {
                idx.push(&i.to_be_bytes()).unwrap();
            }
            idx.flush().unwrap();
            // Dropped without a trim: what kill -9 leaves of the active segment's index.
        }
        let mut idx = MmapIndex::open(storage.clone(), &path, 8, max, false).unwrap();
        assert_eq!(idx.entries(), max / 8, "an untrimmed file counts as full");
        idx.reset().unwrap();
        idx.flush().unwrap();
        assert_eq!(idx.entries(), 0);
        assert_eq!(idx.file_len(), 0);
        idx.push(&9u64.to_be_bytes()).unwrap();
        assert_eq!(idx.file_len(), max, "the next entry preallocates again");
        assert_eq!(
            idx.entry(1),
            [0; MAX_ENTRY_SIZE],
            "the old entries are gone"
        );
        // Zeroing by writing would have allocated the whole megabyte on disk.
        let allocated = std::fs::metadata(&path).unwrap().blocks() * 512;
        assert!(allocated < 64 * 1024, "{allocated} bytes allocated");
    }

    /// Pages written through a mapping that was dropped stay dirty in the page cache: a flush
    /// must still sync them, and a flush with nothing written syncs nothing.
    #[test]
    fn a_flush_syncs_what_a_dropped_mapping_wrote_and_only_that() {
        use crate::storage::{CountingStorage, MemoryStorage};
        let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
        let storage: Arc<dyn Storage> = counting.clone();
        storage.create_dir_all(Path::new("/d")).unwrap();
        let mut idx = MmapIndex::open(storage, Path::new("/d/x.index"), 8, 1024, false).unwrap();
        idx.flush().unwrap();
        assert_eq!(counting.calls().syncs, 0, "nothing written, nothing synced");
        idx.push(&1u64.to_be_bytes()).unwrap();
        idx.unmap();
        idx.flush().unwrap();
        assert_eq!(counting.calls().syncs, 1);
        idx.flush().unwrap();
        assert_eq!(counting.calls().syncs, 1, "synced once");
        idx.trim_to_valid_size().unwrap();
        idx.flush().unwrap();
        assert_eq!(counting.calls().syncs, 2, "a resize is synced too");
    }

    #[test]
    fn new_index_is_preallocated_rounded_down_to_entry_size() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.index");
        let mut idx = MmapIndex::open(crate::storage::file_system(), &p, 12, 100, false).unwrap();
        assert!(idx.missing_at_open());
        assert_eq!(
            idx.file_len(),
            0,
            "nothing preallocated before the first entry"
        );
        assert!(!p.exists(), "nor created");
        idx.push(&[1; 12]).unwrap();
        assert_eq!(idx.file_len(), 96);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 96);
        assert_eq!(idx.entries(), 1);
    }
}
