//! A [`Storage`] that counts the calls it passes on: what a workload costs in file operations,
//! as numbers a test can assert (timings on a shared machine cannot be).

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use super::{FileRegion, IndexFile, Storage, StorageFile};

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
    /// `sync_dir` (an fsync of a directory on disk).
    pub dir_syncs: u64,
    /// `write_replacing` (a temporary file and a rename on disk, no fsync).
    pub unsynced_writes: u64,
    /// `sync_file_system` (one `syncfs` on disk, whatever the number of files).
    pub file_system_syncs: u64,
    /// Every other call: `read`, `rename`, `remove_file`, `create_dir_all`, `remove_dir_all`.
    pub other: u64,
    /// Bytes read: whole files (`read`), through open files and through index files (what a
    /// recovery or an open costs in I/O, as a number).
    pub bytes_read: u64,
    /// Data syncs through open files and index files (`sync_data`, `flush`).
    pub syncs: u64,
    /// Handles open now: files and index mappings opened and not dropped yet (what a broker
    /// pays in file descriptors and memory mappings per partition).
    pub open_now: u64,
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
    bytes_read: Arc<AtomicU64>,
    syncs: Arc<AtomicU64>,
    open_now: Arc<AtomicU64>,
    opens: AtomicU64,
    atomic_writes: AtomicU64,
    lookups: AtomicU64,
    dir_listings: AtomicU64,
    dir_syncs: AtomicU64,
    unsynced_writes: AtomicU64,
    file_system_syncs: AtomicU64,
    other: AtomicU64,
}

impl CountingStorage {
    /// Counts the calls passed on to `inner`, from zero.
    pub fn new(inner: Arc<dyn Storage>) -> Self {
        CountingStorage {
            inner,
            bytes_read: Arc::new(AtomicU64::new(0)),
            syncs: Arc::new(AtomicU64::new(0)),
            open_now: Arc::new(AtomicU64::new(0)),
            opens: AtomicU64::new(0),
            atomic_writes: AtomicU64::new(0),
            lookups: AtomicU64::new(0),
            dir_listings: AtomicU64::new(0),
            dir_syncs: AtomicU64::new(0),
            unsynced_writes: AtomicU64::new(0),
            file_system_syncs: AtomicU64::new(0),
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
            dir_syncs: get(&self.dir_syncs),
            unsynced_writes: get(&self.unsynced_writes),
            file_system_syncs: get(&self.file_system_syncs),
            other: get(&self.other),
            bytes_read: get(&self.bytes_read),
            syncs: get(&self.syncs),
            open_now: get(&self.open_now),
        }
    }

    fn count(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

impl Storage for CountingStorage {
    fn open_file(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>> {
        Self::count(&self.opens);
        let inner = self.inner.open_file(path, create)?;
        Ok(Box::new(CountingFile {
            inner,
            bytes_read: self.bytes_read.clone(),
            syncs: self.syncs.clone(),
            _open: OpenHandle::new(&self.open_now),
        }))
    }

    fn open_index(&self, path: &Path) -> io::Result<(Box<dyn IndexFile>, bool)> {
        Self::count(&self.opens);
        let (inner, created) = self.inner.open_index(path)?;
        let file = CountingIndex {
            inner,
            bytes_read: self.bytes_read.clone(),
            syncs: self.syncs.clone(),
            _open: OpenHandle::new(&self.open_now),
        };
        Ok((Box::new(file), created))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        Self::count(&self.other);
        let bytes = self.inner.read(path)?;
        self.bytes_read
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(bytes)
    }

    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        Self::count(&self.atomic_writes);
        self.inner.write_atomically(path, bytes)
    }

    fn write_replacing(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        Self::count(&self.unsynced_writes);
        self.inner.write_replacing(path, bytes)
    }

    fn sync_file_system(&self, dir: &Path) -> io::Result<()> {
        Self::count(&self.file_system_syncs);
        self.inner.sync_file_system(dir)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        Self::count(&self.lookups);
        self.inner.file_len(path)
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
        Self::count(&self.dir_syncs);
        self.inner.sync_dir(dir)
    }
}

/// An open file of a [`CountingStorage`]: counts the bytes read through it.
#[derive(Debug)]
struct CountingFile {
    inner: Box<dyn StorageFile>,
    bytes_read: Arc<AtomicU64>,
    syncs: Arc<AtomicU64>,
    _open: OpenHandle,
}

/// One handle counted in [`StorageCalls::open_now`] while it lives.
#[derive(Debug)]
struct OpenHandle(Arc<AtomicU64>);

impl OpenHandle {
    fn new(count: &Arc<AtomicU64>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        OpenHandle(count.clone())
    }
}

impl Drop for OpenHandle {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl StorageFile for CountingFile {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.bytes_read
            .fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.inner.read_exact_at(buf, offset)
    }

    fn read_bytes_at(&self, len: usize, offset: u64) -> io::Result<Bytes> {
        self.bytes_read.fetch_add(len as u64, Ordering::Relaxed);
        self.inner.read_bytes_at(len, offset)
    }

    fn region_at(&self, len: usize, offset: u64) -> io::Result<Option<FileRegion>> {
        // Not a read: the bytes are not copied here (a region's reads are its own).
        self.inner.region_at(len, offset)
    }

    fn write_all_at(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        self.inner.write_all_at(parts, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.inner.sync_data()
    }

    fn modified_ms(&self) -> io::Result<i64> {
        self.inner.modified_ms()
    }
}

/// An index file of a [`CountingStorage`]: counts the bytes read through it.
#[derive(Debug)]
struct CountingIndex {
    inner: Box<dyn IndexFile>,
    bytes_read: Arc<AtomicU64>,
    syncs: Arc<AtomicU64>,
    _open: OpenHandle,
}

impl IndexFile for CountingIndex {
    fn len(&self) -> usize {
        self.inner.len()
    }

    fn read_at(&self, position: usize, buf: &mut [u8]) {
        self.bytes_read
            .fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.inner.read_at(position, buf)
    }

    fn write_at(&mut self, position: usize, bytes: &[u8]) {
        self.inner.write_at(position, bytes)
    }

    fn set_len(&mut self, len: usize) -> io::Result<()> {
        self.inner.set_len(len)
    }

    fn flush(&self) -> io::Result<()> {
        self.syncs.fetch_add(1, Ordering::Relaxed);
        self.inner.flush()
    }

    fn moved_to(&mut self, path: &Path) {
        self.inner.moved_to(path)
    }
}
