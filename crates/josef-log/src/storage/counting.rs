//! A [`Storage`] that counts the calls it passes on: what a workload costs in file operations,
//! as numbers a test can assert (timings on a shared machine cannot be).

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{IndexFile, Storage, StorageFile};

/// How many calls of each kind a [`CountingStorage`] has passed on.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StorageCalls {
    /// `open_file` and `open_index`.
    pub opens: u64,
    /// `write_atomically` (each is a temporary file, an fsync, a rename and a directory fsync
    /// on disk).
    pub atomic_writes: u64,
    /// `exists` and `is_dir`.
    pub lookups: u64,
    /// `read_dir`.
    pub dir_listings: u64,
    /// Every other call: `read`, `rename`, `remove_file`, `create_dir_all`, `remove_dir_all`,
    /// `sync_dir`.
    pub other: u64,
}

/// Wraps any [`Storage`] and counts its calls by kind ([`StorageCalls`]).
///
/// ```
/// use std::sync::Arc;
/// use josef_log::storage::{CountingStorage, MemoryStorage, Storage};
///
/// let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
/// counting.create_dir_all("/d".as_ref()).unwrap();
/// counting.write_atomically("/d/f".as_ref(), b"x").unwrap();
/// assert!(counting.exists("/d/f".as_ref()));
/// let calls = counting.calls();
/// assert_eq!((calls.atomic_writes, calls.lookups, calls.other), (1, 1, 1));
/// ```
#[derive(Debug)]
pub struct CountingStorage {
    inner: Arc<dyn Storage>,
    opens: AtomicU64,
    atomic_writes: AtomicU64,
    lookups: AtomicU64,
    dir_listings: AtomicU64,
    other: AtomicU64,
}

impl CountingStorage {
    /// Counts the calls passed on to `inner`, from zero.
    pub fn new(inner: Arc<dyn Storage>) -> Self {
        CountingStorage {
            inner,
            opens: AtomicU64::new(0),
            atomic_writes: AtomicU64::new(0),
            lookups: AtomicU64::new(0),
            dir_listings: AtomicU64::new(0),
            other: AtomicU64::new(0),
        }
    }

    /// The counts so far.
    pub fn calls(&self) -> StorageCalls {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StorageCalls {
            opens: get(&self.opens),
            atomic_writes: get(&self.atomic_writes),
            lookups: get(&self.lookups),
            dir_listings: get(&self.dir_listings),
            other: get(&self.other),
        }
    }

    fn count(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

impl Storage for CountingStorage {
    fn open_file(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>> {
        Self::count(&self.opens);
        self.inner.open_file(path, create)
    }

    fn open_index(&self, path: &Path) -> io::Result<(Box<dyn IndexFile>, bool)> {
        Self::count(&self.opens);
        self.inner.open_index(path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        Self::count(&self.other);
        self.inner.read(path)
    }

    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        Self::count(&self.atomic_writes);
        self.inner.write_atomically(path, bytes)
    }

    fn exists(&self, path: &Path) -> bool {
        Self::count(&self.lookups);
        self.inner.exists(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        Self::count(&self.lookups);
        self.inner.is_dir(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        Self::count(&self.other);
        self.inner.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        Self::count(&self.other);
        self.inner.remove_file(path)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        Self::count(&self.other);
        self.inner.create_dir_all(dir)
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        Self::count(&self.other);
        self.inner.remove_dir_all(dir)
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        Self::count(&self.dir_listings);
        self.inner.read_dir(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        Self::count(&self.other);
        self.inner.sync_dir(dir)
    }
}
