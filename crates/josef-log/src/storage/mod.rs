//! Where a log keeps its bytes: the [`Storage`] seam.
//!
//! Everything the log persists goes through one [`Storage`]: segment `.log` files
//! ([`StorageFile`]), the offset and time indexes ([`IndexFile`], memory-mapped on the file
//! system), `.txnindex` files, checkpoints, the leader-epoch file and producer snapshots (whole
//! files written with [`Storage::write_atomically`]), and the directory operations that recovery
//! and compaction rely on (list, rename, remove). The log's logic — offsets, indexes, recovery,
//! producer state, the aborted-transaction index, the LSO, retention and compaction — sits above
//! the seam and is the same whatever the storage.
//!
//! Two implementations come with the crate: [`FileStorage`] (the file system, the default of
//! [`crate::Log::open`]) and [`MemoryStorage`] (a process-local map of byte buffers: nothing
//! survives the process, everything else behaves as on disk, including reopening a log).
//!
//! ```
//! use std::sync::Arc;
//! use josef_log::storage::{MemoryStorage, Storage};
//! use josef_log::{Log, LogConfig, PartitionState, TimestampType};
//! # fn batch() -> bytes::BytesMut { josef_log::testing::batch(0, 1_000, &[(Some(b"k"), Some(b"v"))]) }
//! let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
//! let mut log = Log::open_in(storage.clone(), "/data/orders-0", LogConfig::default(), 0,
//!     PartitionState::Standalone).unwrap();
//! log.append_as_leader(batch(), 0, 5, TimestampType::CreateTime).unwrap();
//! log.close().unwrap();
//! // Nothing touched the disk, and the log reopens with its data.
//! assert!(!std::path::Path::new("/data/orders-0").exists());
//! let log = Log::open_in(storage, "/data/orders-0", LogConfig::default(), 0,
//!     PartitionState::Standalone).unwrap();
//! assert_eq!(log.log_end_offset(), 1);
//! ```
//!
//! # Rules every implementation keeps
//!
//! The log was written against POSIX file semantics; an implementation provides these:
//!
//! - **Paths name files.** A path is the same file until renamed or removed; operations on a
//!   missing file fail with [`std::io::ErrorKind::NotFound`] (the log treats that kind as
//!   "absent", any other error as a storage failure, Kafka's KAFKA_STORAGE_ERROR).
//! - **Open handles outlive names.** A [`StorageFile`] or [`IndexFile`] keeps reading and writing
//!   the same bytes after its path is renamed or removed (compaction reads segments that
//!   retention may delete meanwhile; swaps rename open segments).
//! - **Reads see earlier writes** through any handle of the same file, at once.
//! - **Files are sparse.** Growing a file with `set_len` reads back as zeros; cutting it drops the
//!   bytes past the new length.
//! - **Durability is what `sync_data` / `flush` / `write_atomically` / `sync_dir` promise.** A
//!   storage that does not survive the process (memory) may make them no-ops, but must keep
//!   `write_atomically` all-or-nothing for readers.
//! - **Never panic on any path or length;** return an error.

mod bounded;
mod counting;
mod file;
mod lazy_dirs;
mod memory;
mod region;

use std::fmt::Debug;
use std::io;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

pub use bounded::{default_max_open_files, BoundedFiles};
pub use counting::{CountingStorage, StorageCalls};
pub use file::FileStorage;
pub use lazy_dirs::LazyDirs;
pub use memory::MemoryStorage;
pub use region::FileRegion;

/// A place to keep a log's files (see the [module docs](self) for the rules).
pub trait Storage: Send + Sync + Debug {
    /// Opens the file at `path` for reading and writing; a missing file is created empty when
    /// `create`, else the error is `NotFound`. Never truncates.
    fn open_file(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>>;

    /// Opens (creating an empty one if missing) an index file for in-place access; the `bool` says
    /// whether it was created by this call. Only one index handle per path is open at a time.
    fn open_index(&self, path: &Path) -> io::Result<(Box<dyn IndexFile>, bool)>;

    /// The length of the file at `path` without keeping it open (`NotFound` if missing): how a
    /// lazily mapped index learns its entry count.
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        self.open_file(path, false)?.len()
    }

    /// The whole contents of a file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;

    /// Replaces the file at `path` with `bytes`, all or nothing (on disk: `<path>.tmp`, fsync,
    /// rename, directory fsync), so a reader or a restart sees the old or the new contents.
    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;

    /// Replaces the file at `path` with `bytes` through `<path>.tmp` and a rename, syncing
    /// nothing: a restart after kill -9 sees the old or the new contents, but after a power
    /// failure the file may be the old one, or empty or cut. Only for files whose reader refuses
    /// a damaged one and whose writer makes them durable (a [`Storage::sync_dir`] of their
    /// directory and an fsync, or a [`Storage::sync_file_system`]) before anything relies on
    /// them. The default is [`Storage::write_atomically`].
    fn write_replacing(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.write_atomically(path, bytes)
    }

    /// Makes every write so far to the file system holding `dir` durable, data and names (Linux
    /// `syncfs`): one call instead of an fsync per file when thousands of files changed.
    fn sync_file_system(&self, dir: &Path) -> io::Result<()>;

    /// Whether a file or directory exists at `path`.
    fn exists(&self, path: &Path) -> bool;

    /// Whether `path` is a directory.
    fn is_dir(&self, path: &Path) -> bool;

    /// Renames a file, replacing any file at `to`. Open handles follow the file.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes a file (open handles keep working on its bytes).
    fn remove_file(&self, path: &Path) -> io::Result<()>;

    /// Creates a directory and its parents (no error if it exists).
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Removes a directory and everything under it.
    fn remove_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Names of the files and directories directly in `dir`, in no particular order.
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<String>>;

    /// Makes creations, renames and removals in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// An open file read and written at byte positions (a segment's `.log`, a `.txnindex`).
pub trait StorageFile: Send + Sync + Debug {
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;

    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Fills `buf` from `offset`; fewer bytes than `buf.len()` before the end is `UnexpectedEof`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;

    /// Reads exactly `len` bytes at `offset` into a new buffer (`UnexpectedEof` past the end).
    /// The hot path of fetches: implementations avoid extra copies where they can.
    fn read_bytes_at(&self, len: usize, offset: u64) -> io::Result<Bytes> {
        let mut buf = vec![0u8; len];
        self.read_exact_at(&mut buf, offset)?;
        Ok(Bytes::from(buf))
    }

    /// `len` bytes at `offset` as a [`FileRegion`] of this file's open descriptor instead of a
    /// copy (`UnexpectedEof` past the end), for a fetch that sends them without looking at them;
    /// `None` when the storage has no descriptor to share (memory), and the caller reads bytes.
    fn region_at(&self, len: usize, offset: u64) -> io::Result<Option<FileRegion>> {
        let _ = (len, offset);
        Ok(None)
    }

    /// Writes `parts` one after another starting at `offset`, all of them, extending the file as
    /// needed.
    fn write_all_at(&self, parts: &[&[u8]], offset: u64) -> io::Result<()>;

    /// Sets the length: cuts or grows (with zeros).
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Makes the written bytes durable.
    fn sync_data(&self) -> io::Result<()>;

    /// Time of the last modification, ms since the epoch (retention's fallback when a segment's
    /// batches carry no timestamp).
    fn modified_ms(&self) -> io::Result<i64>;
}

/// An open index file: a byte array of fixed length accessed in place (memory-mapped on disk).
/// Positions passed are always within `len()`; an implementation never panics if they are not.
pub trait IndexFile: Send + Sync + Debug {
    /// Current length in bytes.
    fn len(&self) -> usize;

    /// Whether the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies `buf.len()` bytes at `position` into `buf` (zeros past the end).
    fn read_at(&self, position: usize, buf: &mut [u8]);

    /// Overwrites bytes at `position` (ignored past the end; callers resize first).
    fn write_at(&mut self, position: usize, bytes: &[u8]);

    /// Changes the length: bytes past it are dropped, new bytes read as zeros.
    fn set_len(&mut self, len: usize) -> io::Result<()>;

    /// Makes the written bytes durable.
    fn flush(&self) -> io::Result<()>;

    /// Tells the handle that [`Storage::rename`] moved its file to `path` (an implementation
    /// that reopens by name uses it from now on).
    fn moved_to(&mut self, path: &Path);
}

/// The storage [`crate::Log::open`] uses: the file system.
pub fn file_system() -> Arc<dyn Storage> {
    Arc::new(FileStorage)
}

/// Removes a file, a missing one being no error.
pub(crate) fn remove_if_exists(storage: &dyn Storage, path: &Path) -> io::Result<()> {
    match storage.remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}
