//! A [`Storage`] that keeps at most a given number of files open: handles it hands out close
//! their descriptor when others need room and reopen by name on their next use.
//!
//! Kafka keeps every segment's file open, which is why it asks for a high `ulimit -n` and advises
//! a few thousand partitions per broker. A broker holding 100,000 partitions would need 100,000
//! descriptors for their active segments alone; with this storage in front of the file system
//! it needs at most `max_open`, the least recently used files being closed (a clock: each use
//! marks a file, the hand clears marks and closes the first unmarked file it meets).
//!
//! The rules of [`Storage`] still hold: a closed handle reopens under the name its file has now
//! ([`Storage::rename`] through this storage moves the handles too), and a file removed or whose
//! directory is removed through this storage is opened first and never closed again by the
//! cache, so handles keep reading its bytes after the name is gone. Fsync through a new
//! descriptor makes everything written through earlier ones durable (it applies to the file).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use bytes::Bytes;

use super::{FileRegion, IndexFile, Storage, StorageFile};

/// A storage whose files hold at most `max_open` descriptors between them (see the
/// [module docs](self)).
///
/// ```
/// use std::sync::Arc;
/// use josef_log::storage::{BoundedFiles, CountingStorage, MemoryStorage, Storage};
///
/// let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
/// let bounded = BoundedFiles::new(counting.clone(), 2);
/// bounded.create_dir_all("/d".as_ref()).unwrap();
/// let files: Vec<_> = (0..5)
///     .map(|i| bounded.open_file(format!("/d/{i}").as_ref(), true).unwrap())
///     .collect();
/// for f in &files {
///     f.write_all_at(&[b"x"], 0).unwrap();
/// }
/// assert!(counting.calls().open_now <= 2);
/// assert_eq!(files[0].len().unwrap(), 1);
/// ```
#[derive(Debug)]
pub struct BoundedFiles {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    inner: Arc<dyn Storage>,
    max_open: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Handles by the path their file has now (several handles may share a path).
    by_path: HashMap<PathBuf, Vec<Weak<Slot>>>,
    /// Open handles in the order the clock hand visits them.
    clock: VecDeque<Weak<Slot>>,
    /// Descriptors open now (pinned ones included).
    open: usize,
}

#[derive(Debug)]
struct Slot {
    path: Mutex<PathBuf>,
    /// Read-locked for every operation (reads of one file run side by side), write-locked to
    /// open or close the descriptor.
    file: RwLock<Option<Box<dyn StorageFile>>>,
    /// Used since the clock hand last passed.
    referenced: AtomicBool,
    /// Its name is gone: it stays open for good.
    pinned: AtomicBool,
}

// A panic elsewhere leaves the data consistent (every update is a single assignment), so a
// poisoned lock is used as is.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(|e| e.into_inner())
}

impl BoundedFiles {
    /// Wraps `inner`, keeping at most `max_open` (at least 1) of its files open.
    pub fn new(inner: Arc<dyn Storage>, max_open: usize) -> Self {
        BoundedFiles {
            shared: Arc::new(Shared {
                inner,
                max_open: max_open.max(1),
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Descriptors the handles of this storage hold now.
    pub fn open_now(&self) -> usize {
        lock(&self.shared.state).open
    }

    /// Slots whose path is `path` or, with `under`, lies below it.
    fn slots_at(&self, path: &Path, under: bool) -> Vec<Arc<Slot>> {
        let state = lock(&self.shared.state);
        let mut out = Vec::new();
        if under {
            for (p, slots) in &state.by_path {
                if p.starts_with(path) {
                    out.extend(slots.iter().filter_map(Weak::upgrade));
                }
            }
        } else if let Some(slots) = state.by_path.get(path) {
            out.extend(slots.iter().filter_map(Weak::upgrade));
        }
        out
    }

    /// Opens and pins the handles of files about to lose their name.
    fn pin(&self, path: &Path, under: bool) -> io::Result<()> {
        for slot in self.slots_at(path, under) {
            slot.pinned.store(true, Ordering::Relaxed);
            let mut file = write(&slot.file);
            if file.is_none() {
                let p = lock(&slot.path).clone();
                *file = Some(self.shared.inner.open_file(&p, false)?);
                lock(&self.shared.state).open += 1;
            }
        }
        Ok(())
    }
}

impl Shared {
    /// Records that `slot` opened a descriptor and closes others while over the bound.
    fn opened(&self, slot: &Arc<Slot>) {
        let mut state = lock(&self.state);
        state.open += 1;
        state.clock.push_back(Arc::downgrade(slot));
        // Two passes at most: the first clears marks, the second finds an unmarked file.
        let mut budget = state.clock.len() * 2;
        while state.open > self.max_open && budget > 0 {
            budget -= 1;
            let Some(weak) = state.clock.pop_front() else {
                break;
            };
            let Some(victim) = weak.upgrade() else {
                continue;
            };
            if victim.pinned.load(Ordering::Relaxed) {
                continue;
            }
            if Arc::ptr_eq(&victim, slot) || victim.referenced.swap(false, Ordering::Relaxed) {
                state.clock.push_back(weak);
                continue;
            }
            // A handle in use is skipped, never waited for (it may be the caller's own).
            let Ok(mut file) = victim.file.try_write() else {
                state.clock.push_back(weak);
                continue;
            };
            if file.take().is_some() {
                state.open -= 1;
            }
        }
    }

    fn closed(&self) {
        let mut state = lock(&self.state);
        state.open = state.open.saturating_sub(1);
    }
}

/// A file of a [`BoundedFiles`] storage.
#[derive(Debug)]
struct BoundedFile {
    slot: Arc<Slot>,
    shared: Arc<Shared>,
}

impl BoundedFile {
    fn with<T>(&self, op: impl FnOnce(&dyn StorageFile) -> io::Result<T>) -> io::Result<T> {
        self.slot.referenced.store(true, Ordering::Relaxed);
        {
            let file = read(&self.slot.file);
            if let Some(f) = file.as_deref() {
                return op(f);
            }
        }
        let mut file = write(&self.slot.file);
        if file.is_none() {
            let path = lock(&self.slot.path).clone();
            *file = Some(self.shared.inner.open_file(&path, false)?);
            // The clock skips this slot while it is locked here, never waits for it.
            self.shared.opened(&self.slot);
        }
        match file.as_deref() {
            Some(f) => op(f),
            None => Err(io::Error::other("file closed while in use")),
        }
    }
}

impl Drop for BoundedFile {
    fn drop(&mut self) {
        if write(&self.slot.file).take().is_some() {
            self.shared.closed();
        }
        let path = lock(&self.slot.path).clone();
        let mut state = lock(&self.shared.state);
        if let Some(slots) = state.by_path.get_mut(&path) {
            slots.retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), &*self.slot));
            if slots.is_empty() {
                state.by_path.remove(&path);
            }
        }
    }
}

impl StorageFile for BoundedFile {
    fn len(&self) -> io::Result<u64> {
        self.with(|f| f.len())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.with(|f| f.read_exact_at(buf, offset))
    }

    fn read_bytes_at(&self, len: usize, offset: u64) -> io::Result<Bytes> {
        self.with(|f| f.read_bytes_at(len, offset))
    }

    fn region_at(&self, len: usize, offset: u64) -> io::Result<Option<FileRegion>> {
        // The region shares the descriptor: closing this handle for room later leaves it open
        // until the region is dropped (briefly one more than the bound).
        self.with(|f| f.region_at(len, offset))
    }

    fn write_all_at(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        self.with(|f| f.write_all_at(parts, offset))
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.with(|f| f.set_len(len))
    }

    fn sync_data(&self) -> io::Result<()> {
        // Reopened if closed: the fsync covers what earlier descriptors wrote.
        self.with(|f| f.sync_data())
    }

    fn modified_ms(&self) -> io::Result<i64> {
        self.with(|f| f.modified_ms())
    }
}

impl Storage for BoundedFiles {
    fn open_file(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>> {
        let file = self.shared.inner.open_file(path, create)?;
        let slot = Arc::new(Slot {
            path: Mutex::new(path.to_path_buf()),
            file: RwLock::new(Some(file)),
            referenced: AtomicBool::new(true),
            pinned: AtomicBool::new(false),
        });
        lock(&self.shared.state)
            .by_path
            .entry(path.to_path_buf())
            .or_default()
            .push(Arc::downgrade(&slot));
        self.shared.opened(&slot);
        Ok(Box::new(BoundedFile {
            slot,
            shared: self.shared.clone(),
        }))
    }

    fn open_index(&self, path: &Path) -> io::Result<(Box<dyn IndexFile>, bool)> {
        // Index files are mapped and hold no descriptor.
        self.shared.inner.open_index(path)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        self.shared.inner.file_len(path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.shared.inner.read(path)
    }

    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        // Handles on the replaced file keep its old bytes, as after a rename.
        self.pin(path, false)?;
        self.shared.inner.write_atomically(path, bytes)
    }

    fn write_replacing(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        // Handles on the replaced file keep its old bytes, as after a rename.
        self.pin(path, false)?;
        self.shared.inner.write_replacing(path, bytes)
    }

    fn sync_file_system(&self, dir: &Path) -> io::Result<()> {
        // Data written through descriptors closed since is in the page cache, which syncfs
        // covers whether or not a descriptor is open.
        self.shared.inner.sync_file_system(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.shared.inner.exists(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.shared.inner.is_dir(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        // A file replaced by the rename loses its name.
        self.pin(to, false)?;
        self.shared.inner.rename(from, to)?;
        let moved_dir = self.shared.inner.is_dir(to);
        let mut state = lock(&self.shared.state);
        let keys: Vec<PathBuf> = if moved_dir {
            state
                .by_path
                .keys()
                .filter(|p| p.starts_with(from))
                .cloned()
                .collect()
        } else {
            vec![from.to_path_buf()]
        };
        for old in keys {
            let Some(slots) = state.by_path.remove(&old) else {
                continue;
            };
            let new = match old.strip_prefix(from) {
                Ok(rest) if !rest.as_os_str().is_empty() => to.join(rest),
                _ => to.to_path_buf(),
            };
            for s in slots.iter().filter_map(Weak::upgrade) {
                *lock(&s.path) = new.clone();
            }
            state.by_path.entry(new).or_default().extend(slots);
        }
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.pin(path, false)?;
        self.shared.inner.remove_file(path)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.shared.inner.create_dir_all(dir)
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.pin(dir, true)?;
        self.shared.inner.remove_dir_all(dir)
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.shared.inner.read_dir(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.shared.inner.sync_dir(dir)
    }
}

/// Descriptors a broker may give to segment files: half the process's soft `RLIMIT_NOFILE`
/// (the rest is for connections and everything else), at least 64.
pub fn default_max_open_files() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    let soft = if ok && lim.rlim_cur != libc::RLIM_INFINITY {
        usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX)
    } else {
        1 << 20
    };
    (soft / 2).max(64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    fn storage(max: usize) -> BoundedFiles {
        let s = BoundedFiles::new(Arc::new(MemoryStorage::new()), max);
        s.create_dir_all(Path::new("/d")).unwrap();
        s
    }

    #[test]
    fn closed_handles_reopen_and_keep_their_bytes() {
        let s = storage(3);
        let files: Vec<_> = (0..20u8)
            .map(|i| {
                let f = s.open_file(Path::new(&format!("/d/{i}")), true).unwrap();
                f.write_all_at(&[&[i]], 0).unwrap();
                f
            })
            .collect();
        assert!(s.open_now() <= 3, "{} open", s.open_now());
        for (i, f) in files.iter().enumerate() {
            let mut b = [0u8];
            f.read_exact_at(&mut b, 0).unwrap();
            assert_eq!(b[0], i as u8);
            assert!(s.open_now() <= 3);
        }
        drop(files);
        assert_eq!(s.open_now(), 0);
    }

    #[test]
    fn a_renamed_file_reopens_under_its_new_name() {
        let s = storage(1);
        let a = s.open_file(Path::new("/d/a"), true).unwrap();
        a.write_all_at(&[b"aa"], 0).unwrap();
        s.rename(Path::new("/d/a"), Path::new("/d/b")).unwrap();
        // Opening another file closes `a`'s descriptor.
        let _c = s.open_file(Path::new("/d/c"), true).unwrap();
        assert_eq!(a.len().unwrap(), 2);
        a.write_all_at(&[b"x"], 2).unwrap();
        assert_eq!(s.read(Path::new("/d/b")).unwrap(), b"aax");
    }

    #[test]
    fn a_removed_file_stays_readable_through_its_handle() {
        let s = storage(1);
        let a = s.open_file(Path::new("/d/a"), true).unwrap();
        a.write_all_at(&[b"gone"], 0).unwrap();
        let _b = s.open_file(Path::new("/d/b"), true).unwrap();
        s.remove_file(Path::new("/d/a")).unwrap();
        for i in 0..5 {
            let _other = s.open_file(Path::new(&format!("/d/o{i}")), true).unwrap();
        }
        let mut buf = [0u8; 4];
        a.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"gone");
        s.remove_dir_all(Path::new("/d")).unwrap();
    }
}
