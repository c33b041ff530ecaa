//! A [`Storage`] whose new directories exist only in memory until something is written in them:
//! an empty partition costs no inode (issue #22).
//!
//! Creating 100,000 empty partitions on ext4 spent most of its time allocating inodes (a
//! directory, a `.log` and a `partition.metadata` per partition), and a restart spent its time
//! listing and opening them. An empty log needs none of them: it reads as empty whether or not
//! its files exist. [`LazyDirs`] keeps a directory that [`Storage::create_dir_all`] asked for and
//! that does not exist yet *pending*: files created in it are pending too (empty, or holding
//! what [`LazyDirs::write_when_created`] gave them), listings and lookups see them, and the first
//! write of bytes to any of them, an index or an atomic write in the directory, a rename or a
//! removal of one of its files creates the directory and all of its pending files on the
//! storage underneath, at once. From then on the directory is an ordinary one.
//!
//! What is never written needs no durability: a pending directory is exactly what a crash
//! before its first write would have left of an unsynced new directory (nothing), and the next
//! open asks for it again. A file handle opened while its directory was pending keeps working
//! after the directory is created (it then writes through the real file) and after the
//! directory is removed (it keeps its bytes in memory, as an unlinked file keeps them on disk).

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{IndexFile, Storage, StorageFile};

/// Wraps a [`Storage`]: new directories and their files are created on it on their first write
/// (see the [module docs](self)).
///
/// ```
/// use std::sync::{Arc, Mutex, MutexGuard};
/// use josef_log::storage::{LazyDirs, MemoryStorage, Storage};
///
/// let disk = Arc::new(MemoryStorage::new());
/// disk.create_dir_all("/d".as_ref()).unwrap(); // the log dir
/// let lazy = LazyDirs::new(disk.clone());
/// lazy.create_dir_all("/d/t-0".as_ref()).unwrap();
/// let f = lazy.open_file("/d/t-0/0.log".as_ref(), true).unwrap();
/// assert!(lazy.is_dir("/d/t-0".as_ref()) && !disk.exists("/d/t-0".as_ref()));
/// f.write_all_at(&[b"x"], 0).unwrap();
/// assert_eq!(disk.read("/d/t-0/0.log".as_ref()).unwrap(), b"x");
/// ```
#[derive(Debug, Clone)]
pub struct LazyDirs {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    inner: Arc<dyn Storage>,
    /// Pending directories and their pending files by name.
    pending: Mutex<HashMap<PathBuf, BTreeMap<String, Arc<PendingFile>>>>,
}

#[derive(Debug)]
struct PendingFile {
    path: PathBuf,
    state: Mutex<FileState>,
}

#[derive(Debug)]
enum FileState {
    /// Its directory is pending: these bytes are written when it is created.
    Pending(Vec<u8>),
    /// Created on the storage underneath.
    Created(Box<dyn StorageFile>),
    /// Its pending directory was removed: the handle keeps its bytes, as an unlinked file.
    Orphan(Vec<u8>),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: not found", path.display()),
    )
}

fn split(path: &Path) -> Option<(&Path, String)> {
    Some((
        path.parent()?,
        path.file_name()?.to_string_lossy().into_owned(),
    ))
}

impl LazyDirs {
    /// Wraps `inner`. Directories that already exist on it are used as they are.
    pub fn new(inner: Arc<dyn Storage>) -> Self {
        LazyDirs {
            shared: Arc::new(Shared {
                inner,
                pending: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// How many directories are pending (created on the first write in them).
    pub fn pending_dirs(&self) -> usize {
        lock(&self.shared.pending).len()
    }

    /// Writes a small file with a plain, unsynced write; in a pending directory it is kept in
    /// memory and written when the directory is created (the first write of anything in it).
    pub fn write_when_created(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        if let Some((dir, name)) = split(path) {
            let mut pending = lock(&self.shared.pending);
            if let Some(files) = pending.get_mut(dir) {
                files.insert(
                    name,
                    Arc::new(PendingFile {
                        path: path.to_path_buf(),
                        state: Mutex::new(FileState::Pending(bytes.to_vec())),
                    }),
                );
                return Ok(());
            }
        }
        let f = self.shared.inner.open_file(path, true)?;
        f.write_all_at(&[bytes], 0)?;
        f.set_len(bytes.len() as u64)
    }
}

impl Shared {
    /// Creates `dir` and its pending files underneath, if it is pending.
    fn materialize(&self, dir: &Path) -> io::Result<()> {
        let mut pending = lock(&self.pending);
        let Some(files) = pending.get(dir) else {
            return Ok(());
        };
        self.inner.create_dir_all(dir)?;
        for f in files.values() {
            let mut state = lock(&f.state);
            if let FileState::Pending(bytes) = &*state {
                let file = self.inner.open_file(&f.path, true)?;
                if !bytes.is_empty() {
                    file.write_all_at(&[bytes], 0)?;
                }
                *state = FileState::Created(file);
            }
        }
        pending.remove(dir);
        Ok(())
    }

    fn materialize_parent(&self, path: &Path) -> io::Result<()> {
        match path.parent() {
            Some(dir) => self.materialize(dir),
            None => Ok(()),
        }
    }
}

impl Storage for LazyDirs {
    fn open_file(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>> {
        if let Some((dir, name)) = split(path) {
            let mut pending = lock(&self.shared.pending);
            if let Some(files) = pending.get_mut(dir) {
                let file = match files.get(&name) {
                    Some(f) => f.clone(),
                    None if create => {
                        let f = Arc::new(PendingFile {
                            path: path.to_path_buf(),
                            state: Mutex::new(FileState::Pending(Vec::new())),
                        });
                        files.insert(name, f.clone());
                        f
                    }
                    None => return Err(not_found(path)),
                };
                return Ok(Box::new(LazyFile {
                    file,
                    shared: self.shared.clone(),
                }));
            }
        }
        self.shared.inner.open_file(path, create)
    }

    fn open_index(&self, path: &Path) -> io::Result<(Box<dyn IndexFile>, bool)> {
        self.shared.materialize_parent(path)?;
        self.shared.inner.open_index(path)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        if let Some((dir, name)) = split(path) {
            let file = match lock(&self.shared.pending).get(dir) {
                Some(files) => Some(files.get(&name).cloned().ok_or_else(|| not_found(path))?),
                None => None,
            };
            if let Some(f) = file {
                return LazyFile::len_of(&f);
            }
        }
        self.shared.inner.file_len(path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        if let Some((dir, name)) = split(path) {
            if let Some(files) = lock(&self.shared.pending).get(dir) {
                let f = files.get(&name).ok_or_else(|| not_found(path))?;
                if let FileState::Pending(bytes) = &*lock(&f.state) {
                    return Ok(bytes.clone());
                }
            }
        }
        self.shared.inner.read(path)
    }

    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.shared.materialize_parent(path)?;
        self.shared.inner.write_atomically(path, bytes)
    }

    fn write_replacing(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.shared.materialize_parent(path)?;
        self.shared.inner.write_replacing(path, bytes)
    }

    fn sync_file_system(&self, dir: &Path) -> io::Result<()> {
        // Pending directories hold nothing written; the log dir itself always exists.
        self.shared.inner.sync_file_system(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        {
            let pending = lock(&self.shared.pending);
            if pending.contains_key(path) {
                return true;
            }
            if let Some((dir, name)) = split(path) {
                if let Some(files) = pending.get(dir) {
                    return files.contains_key(&name);
                }
            }
        }
        self.shared.inner.exists(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        lock(&self.shared.pending).contains_key(path) || self.shared.inner.is_dir(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.shared.materialize_parent(from)?;
        self.shared.materialize_parent(to)?;
        self.shared.inner.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        if let Some((dir, name)) = split(path) {
            if let Some(files) = lock(&self.shared.pending).get_mut(dir) {
                // Never created, so removing it creates nothing either.
                let f = files.remove(&name).ok_or_else(|| not_found(path))?;
                orphan(&f);
                return Ok(());
            }
        }
        self.shared.inner.remove_file(path)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut pending = lock(&self.shared.pending);
        if pending.contains_key(dir) || self.shared.inner.is_dir(dir) {
            return Ok(());
        }
        // Only a directory whose parent exists waits: a missing log dir is created at once.
        let parent_exists = dir
            .parent()
            .is_some_and(|p| p.as_os_str().is_empty() || self.shared.inner.is_dir(p));
        if !parent_exists {
            drop(pending);
            return self.shared.inner.create_dir_all(dir);
        }
        pending.insert(dir.to_path_buf(), BTreeMap::new());
        Ok(())
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        let removed = lock(&self.shared.pending).remove(dir);
        match removed {
            Some(files) => {
                files.values().for_each(|f| orphan(f));
                Ok(())
            }
            None => self.shared.inner.remove_dir_all(dir),
        }
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let pending = lock(&self.shared.pending);
        if let Some(files) = pending.get(dir) {
            return Ok(files.keys().cloned().collect());
        }
        // Pending subdirectories are listed as the directories they stand for.
        let subdirs: Vec<String> = pending
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        drop(pending);
        let mut names = self.shared.inner.read_dir(dir)?;
        names.extend(subdirs);
        Ok(names)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if lock(&self.shared.pending).contains_key(dir) {
            // Nothing in it exists yet, so there is nothing to make durable.
            return Ok(());
        }
        self.shared.inner.sync_dir(dir)
    }
}

/// A pending file's handles keep its bytes once its name is gone.
fn orphan(f: &PendingFile) {
    let mut state = lock(&f.state);
    if let FileState::Pending(bytes) = &mut *state {
        *state = FileState::Orphan(std::mem::take(bytes));
    }
}

/// A file opened in a pending directory.
#[derive(Debug)]
struct LazyFile {
    file: Arc<PendingFile>,
    shared: Arc<Shared>,
}

impl LazyFile {
    fn len_of(f: &PendingFile) -> io::Result<u64> {
        match &*lock(&f.state) {
            FileState::Pending(b) | FileState::Orphan(b) => Ok(b.len() as u64),
            FileState::Created(file) => file.len(),
        }
    }

    /// Runs `created` on the real file, creating the directory first if it is still pending;
    /// an orphan runs `orphan` on its bytes.
    fn write<T>(
        &self,
        created: impl Fn(&dyn StorageFile) -> io::Result<T>,
        orphan: impl FnOnce(&mut Vec<u8>) -> io::Result<T>,
    ) -> io::Result<T> {
        for _ in 0..2 {
            {
                let mut state = lock(&self.file.state);
                match &mut *state {
                    FileState::Created(f) => return created(&**f),
                    FileState::Orphan(bytes) => return orphan(bytes),
                    FileState::Pending(_) => {}
                }
            }
            // Not under the file's lock: creating the directory takes it.
            self.shared.materialize_parent(&self.file.path)?;
        }
        Err(io::Error::other(format!(
            "{}: its directory was not created",
            self.file.path.display()
        )))
    }

    /// Reads through the state without creating anything.
    fn read<T>(
        &self,
        created: impl FnOnce(&dyn StorageFile) -> io::Result<T>,
        bytes: impl FnOnce(&[u8]) -> io::Result<T>,
    ) -> io::Result<T> {
        match &*lock(&self.file.state) {
            FileState::Created(f) => created(&**f),
            FileState::Pending(b) | FileState::Orphan(b) => bytes(b),
        }
    }
}

fn slice_at(bytes: &[u8], len: usize, offset: u64) -> io::Result<&[u8]> {
    usize::try_from(offset)
        .ok()
        .and_then(|o| Some(o..o.checked_add(len)?))
        .and_then(|r| bytes.get(r))
        .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))
}

impl StorageFile for LazyFile {
    fn len(&self) -> io::Result<u64> {
        Self::len_of(&self.file)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match &*lock(&self.file.state) {
            FileState::Created(f) => f.read_exact_at(buf, offset),
            FileState::Pending(b) | FileState::Orphan(b) => {
                let n = buf.len();
                buf.copy_from_slice(slice_at(b, n, offset)?);
                Ok(())
            }
        }
    }

    fn read_bytes_at(&self, len: usize, offset: u64) -> io::Result<bytes::Bytes> {
        self.read(
            |f| f.read_bytes_at(len, offset),
            |b| Ok(bytes::Bytes::copy_from_slice(slice_at(b, len, offset)?)),
        )
    }

    fn region_at(&self, len: usize, offset: u64) -> io::Result<Option<super::FileRegion>> {
        self.read(
            |f| f.region_at(len, offset),
            |b| slice_at(b, len, offset).map(|_| None),
        )
    }

    fn write_all_at(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        self.write(
            |f| f.write_all_at(parts, offset),
            |b| {
                let mut at = usize::try_from(offset).map_err(io::Error::other)?;
                for p in parts {
                    let end = at
                        .checked_add(p.len())
                        .ok_or_else(|| io::Error::other("too long"))?;
                    if b.len() < end {
                        b.resize(end, 0);
                    }
                    b[at..end].copy_from_slice(p);
                    at = end;
                }
                Ok(())
            },
        )
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        if len == 0 && matches!(&*lock(&self.file.state), FileState::Pending(b) if b.is_empty()) {
            return Ok(());
        }
        self.write(
            |f| f.set_len(len),
            |b| {
                b.resize(usize::try_from(len).map_err(io::Error::other)?, 0);
                Ok(())
            },
        )
    }

    fn sync_data(&self) -> io::Result<()> {
        // A pending file's bytes reach the storage only with its directory: nothing to sync.
        self.read(|f| f.sync_data(), |_| Ok(()))
    }

    fn modified_ms(&self) -> io::Result<i64> {
        self.read(
            |f| f.modified_ms(),
            // As the memory storage: the time it is asked (nothing was written yet).
            |_| Ok(super::memory::now_ms()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{CountingStorage, MemoryStorage};

    fn setup() -> (Arc<MemoryStorage>, LazyDirs) {
        let disk = Arc::new(MemoryStorage::new());
        disk.create_dir_all(Path::new("/d")).unwrap();
        let lazy = LazyDirs::new(disk.clone());
        (disk, lazy)
    }

    #[test]
    fn a_directory_and_its_files_wait_for_the_first_write() {
        let (disk, lazy) = setup();
        let dir = Path::new("/d/t-0");
        lazy.create_dir_all(dir).unwrap();
        let log = lazy.open_file(&dir.join("0.log"), true).unwrap();
        lazy.write_when_created(&dir.join("partition.metadata"), b"id")
            .unwrap();
        // Seen through the lazy storage, absent underneath.
        assert!(lazy.is_dir(dir) && lazy.exists(&dir.join("0.log")));
        let mut names = lazy.read_dir(dir).unwrap();
        names.sort();
        assert_eq!(names, ["0.log", "partition.metadata"]);
        assert_eq!(lazy.read_dir(Path::new("/d")).unwrap(), ["t-0"]);
        assert_eq!(lazy.file_len(&dir.join("0.log")).unwrap(), 0);
        assert_eq!(lazy.read(&dir.join("partition.metadata")).unwrap(), b"id");
        assert_eq!(log.len().unwrap(), 0);
        log.sync_data().unwrap();
        log.set_len(0).unwrap();
        lazy.sync_dir(dir).unwrap();
        assert!(!disk.exists(dir));
        assert_eq!(lazy.pending_dirs(), 1);
        // The first write creates the directory and every pending file.
        log.write_all_at(&[b"abc"], 0).unwrap();
        assert_eq!(disk.read(&dir.join("0.log")).unwrap(), b"abc");
        assert_eq!(disk.read(&dir.join("partition.metadata")).unwrap(), b"id");
        assert_eq!(lazy.pending_dirs(), 0);
        let again = lazy.open_file(&dir.join("0.log"), false).unwrap();
        assert_eq!(again.read_bytes_at(3, 0).unwrap(), &b"abc"[..]);
    }

    #[test]
    fn an_existing_directory_is_used_as_it_is() {
        let (disk, lazy) = setup();
        disk.create_dir_all(Path::new("/d/t-1")).unwrap();
        lazy.create_dir_all(Path::new("/d/t-1")).unwrap();
        assert_eq!(lazy.pending_dirs(), 0);
        lazy.write_when_created(Path::new("/d/t-1/partition.metadata"), b"x")
            .unwrap();
        assert_eq!(
            disk.read(Path::new("/d/t-1/partition.metadata")).unwrap(),
            b"x"
        );
        // A missing parent (a log dir) is created at once.
        lazy.create_dir_all(Path::new("/e/f")).unwrap();
        assert!(disk.is_dir(Path::new("/e/f")));
    }

    #[test]
    fn an_index_an_atomic_write_or_a_rename_creates_the_directory() {
        for op in 0..3 {
            let (disk, lazy) = setup();
            let dir = Path::new("/d/t-0");
            lazy.create_dir_all(dir).unwrap();
            let _log = lazy.open_file(&dir.join("0.log"), true).unwrap();
            match op {
                0 => drop(lazy.open_index(&dir.join("0.index")).unwrap()),
                1 => lazy.write_atomically(&dir.join("cp"), b"1").unwrap(),
                _ => lazy.rename(&dir.join("0.log"), &dir.join("1.log")).unwrap(),
            }
            assert!(disk.is_dir(dir), "op {op}");
            assert_eq!(lazy.pending_dirs(), 0);
        }
    }

    #[test]
    fn a_removed_pending_directory_leaves_nothing_and_its_handles_keep_their_bytes() {
        let counting = Arc::new(CountingStorage::new(Arc::new(MemoryStorage::new())));
        counting.create_dir_all(Path::new("/d")).unwrap();
        let lazy = LazyDirs::new(counting.clone());
        let dir = Path::new("/d/t-0");
        lazy.create_dir_all(dir).unwrap();
        let log = lazy.open_file(&dir.join("0.log"), true).unwrap();
        lazy.remove_dir_all(dir).unwrap();
        assert!(!lazy.exists(dir));
        log.write_all_at(&[b"ab", b"cd"], 1).unwrap();
        let mut buf = [0u8; 5];
        log.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"\0abcd");
        assert!(log.read_bytes_at(2, 4).is_err());
        // Nothing reached the storage underneath but the lookups of the first create.
        let calls = counting.calls();
        assert_eq!((calls.opens, calls.other), (0, 1), "{calls:?}");
        assert!(lazy.open_file(&dir.join("0.log"), false).is_err());
    }

    #[test]
    fn removing_a_pending_file_creates_nothing() {
        let (disk, lazy) = setup();
        let dir = Path::new("/d/t-0");
        lazy.create_dir_all(dir).unwrap();
        drop(lazy.open_file(&dir.join("a"), true).unwrap());
        lazy.remove_file(&dir.join("a")).unwrap();
        assert_eq!(
            lazy.remove_file(&dir.join("a")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert!(lazy.read_dir(dir).unwrap().is_empty());
        assert!(!disk.exists(dir));
    }
}
