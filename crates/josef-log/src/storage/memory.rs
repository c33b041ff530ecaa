//! [`MemoryStorage`]: every file a byte buffer in a map, for brokers and tests that need Kafka's
//! log semantics without a disk.

use std::collections::BTreeMap;
use std::io;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use bytes::Bytes;

use super::{IndexFile, Storage, StorageFile};

/// Files and directories in memory, shared by every log opened on it (clone the `Arc` the log
/// takes). Paths are only names here: nothing is read from or written to the file system.
/// Contents last as long as the storage value, so a log closed and reopened on the same storage
/// finds its data (as after a broker restart on disk); durability calls are no-ops.
///
/// Files are sparse, as on disk: a preallocated index costs only the entries written.
#[derive(Default)]
pub struct MemoryStorage {
    nodes: Mutex<BTreeMap<PathBuf, Node>>,
}

impl std::fmt::Debug for MemoryStorage {
    // The contents can be gigabytes: a `{:?}` of a log shows sizes only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // One lock at a time: the map's mutex is not reentrant.
        let entries = self.lock().len();
        let bytes_held = self.bytes_held();
        f.debug_struct("MemoryStorage")
            .field("entries", &entries)
            .field("bytes_held", &bytes_held)
            .finish()
    }
}

#[derive(Debug, Clone)]
enum Node {
    Dir,
    File(Arc<MemFile>),
}

/// One file: a logical length and the bytes written so far (reads past them are zeros).
#[derive(Default)]
struct MemFile {
    data: RwLock<Data>,
}

impl std::fmt::Debug for MemFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = self.read();
        f.debug_struct("MemFile")
            .field("len", &d.len)
            .field("bytes_held", &d.bytes.len())
            .finish()
    }
}

#[derive(Default)]
struct Data {
    len: u64,
    bytes: Vec<u8>,
    modified_ms: i64,
}

impl MemoryStorage {
    /// An empty storage.
    pub fn new() -> Self {
        Self::default()
    }

    /// Total bytes held by file contents (for tools and tests).
    pub fn bytes_held(&self) -> usize {
        self.lock()
            .values()
            .map(|n| match n {
                Node::File(f) => f.read().bytes.len(),
                Node::Dir => 0,
            })
            .sum()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<PathBuf, Node>> {
        // A panic elsewhere while holding the lock leaves the map consistent (each change is one
        // insert or remove), so poisoning is ignored.
        self.nodes.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn file(&self, path: &Path) -> io::Result<Arc<MemFile>> {
        match self.lock().get(path) {
            Some(Node::File(f)) => Ok(f.clone()),
            Some(Node::Dir) => Err(is_a_directory()),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }

    fn file_or_create(&self, path: &Path, create: bool) -> io::Result<(Arc<MemFile>, bool)> {
        let mut nodes = self.lock();
        match nodes.get(path) {
            Some(Node::File(f)) => Ok((f.clone(), false)),
            Some(Node::Dir) => Err(is_a_directory()),
            None if !create => Err(io::ErrorKind::NotFound.into()),
            None => {
                parent_must_exist(&nodes, path)?;
                let f = Arc::new(MemFile::default());
                f.write().modified_ms = now_ms();
                nodes.insert(path.to_path_buf(), Node::File(f.clone()));
                Ok((f, true))
            }
        }
    }
}

fn is_a_directory() -> io::Error {
    io::Error::other("is a directory")
}

fn parent_must_exist(nodes: &BTreeMap<PathBuf, Node>, path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() && !matches!(nodes.get(p), Some(Node::Dir)) => {
            Err(io::ErrorKind::NotFound.into())
        }
        _ => Ok(()),
    }
}

/// The paths under `dir` (excluding `dir`): contiguous in the map, as paths order by component.
fn under<'a>(
    nodes: &'a BTreeMap<PathBuf, Node>,
    dir: &'a Path,
) -> impl Iterator<Item = (&'a PathBuf, &'a Node)> + 'a {
    nodes
        .range::<Path, _>((Bound::Excluded(dir), Bound::Unbounded))
        .take_while(move |(p, _)| p.starts_with(dir))
}

/// Modification times are the one thing a file records about the clock, as on disk.
pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Storage for MemoryStorage {
    fn open_file(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>> {
        let (f, _) = self.file_or_create(path, create)?;
        Ok(Box::new(MemHandle(f)))
    }

    fn open_index(&self, path: &Path) -> io::Result<(Box<dyn IndexFile>, bool)> {
        let (f, created) = self.file_or_create(path, true)?;
        Ok((Box::new(MemHandle(f)), created))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let f = self.file(path)?;
        let d = f.read();
        let mut out = d.bytes.clone();
        out.resize(d.len as usize, 0);
        Ok(out)
    }

    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        // A new file replaces the old one in one map insert: handles on the old contents keep
        // them, as after a rename on disk.
        let f = MemFile {
            data: RwLock::new(Data {
                len: bytes.len() as u64,
                bytes: bytes.to_vec(),
                modified_ms: now_ms(),
            }),
        };
        let mut nodes = self.lock();
        parent_must_exist(&nodes, path)?;
        if matches!(nodes.get(path), Some(Node::Dir)) {
            return Err(is_a_directory());
        }
        nodes.insert(path.to_path_buf(), Node::File(Arc::new(f)));
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        self.lock().contains_key(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        matches!(self.lock().get(path), Some(Node::Dir))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut nodes = self.lock();
        match nodes.get(from) {
            Some(Node::File(_)) => {}
            Some(Node::Dir) => return Err(is_a_directory()),
            None => return Err(io::ErrorKind::NotFound.into()),
        }
        parent_must_exist(&nodes, to)?;
        if matches!(nodes.get(to), Some(Node::Dir)) {
            return Err(is_a_directory());
        }
        if let Some(node) = nodes.remove(from) {
            nodes.insert(to.to_path_buf(), node);
        }
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut nodes = self.lock();
        match nodes.get(path) {
            Some(Node::File(_)) => {
                nodes.remove(path);
                Ok(())
            }
            Some(Node::Dir) => Err(is_a_directory()),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut nodes = self.lock();
        for d in dir.ancestors().filter(|d| !d.as_os_str().is_empty()) {
            match nodes.get(d) {
                Some(Node::Dir) => break,
                Some(Node::File(_)) => return Err(io::ErrorKind::AlreadyExists.into()),
                None => {
                    nodes.insert(d.to_path_buf(), Node::Dir);
                }
            }
        }
        Ok(())
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut nodes = self.lock();
        if !matches!(nodes.get(dir), Some(Node::Dir)) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let doomed: Vec<PathBuf> = under(&nodes, dir).map(|(p, _)| p.clone()).collect();
        for p in doomed {
            nodes.remove(&p);
        }
        nodes.remove(dir);
        Ok(())
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let nodes = self.lock();
        if !matches!(nodes.get(dir), Some(Node::Dir)) {
            return Err(io::ErrorKind::NotFound.into());
        }
        Ok(under(&nodes, dir)
            .filter(|(p, _)| p.parent() == Some(dir))
            .filter_map(|(p, _)| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect())
    }

    fn sync_file_system(&self, dir: &Path) -> io::Result<()> {
        self.sync_dir(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.is_dir(dir) {
            Ok(())
        } else {
            Err(io::ErrorKind::NotFound.into())
        }
    }
}

impl MemFile {
    fn read(&self) -> RwLockReadGuard<'_, Data> {
        self.data.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Data> {
        self.data.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl Data {
    /// Copies `buf.len()` bytes at `at` (which must lie within `len`), zeros past the written part.
    fn copy_out(&self, at: usize, buf: &mut [u8]) {
        let written = self.bytes.get(at..).unwrap_or(&[]);
        let n = written.len().min(buf.len());
        buf[..n].copy_from_slice(&written[..n]);
        buf[n..].fill(0);
    }

    fn write_at(&mut self, at: usize, bytes: &[u8]) -> io::Result<()> {
        let end = at
            .checked_add(bytes.len())
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        if self.bytes.len() < end {
            self.bytes.resize(end, 0);
        }
        self.bytes[at..end].copy_from_slice(bytes);
        self.len = self.len.max(end as u64);
        self.modified_ms = now_ms();
        Ok(())
    }

    fn set_len(&mut self, len: u64) {
        self.len = len;
        if (self.bytes.len() as u64) > len {
            self.bytes.truncate(len as usize);
            self.bytes.shrink_to_fit();
        }
        self.modified_ms = now_ms();
    }
}

/// A handle on one [`MemFile`]: the same type serves segments and indexes.
#[derive(Debug)]
struct MemHandle(Arc<MemFile>);

fn in_range(len: u64, offset: u64, n: usize) -> io::Result<usize> {
    match offset.checked_add(n as u64) {
        Some(end) if end <= len => {
            usize::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput.into())
        }
        _ => Err(io::ErrorKind::UnexpectedEof.into()),
    }
}

impl StorageFile for MemHandle {
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.read().len)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let d = self.0.read();
        let at = in_range(d.len, offset, buf.len())?;
        d.copy_out(at, buf);
        Ok(())
    }

    fn read_bytes_at(&self, len: usize, offset: u64) -> io::Result<Bytes> {
        let d = self.0.read();
        let at = in_range(d.len, offset, len)?;
        let mut out = vec![0u8; len];
        d.copy_out(at, &mut out);
        Ok(Bytes::from(out))
    }

    fn write_all_at(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        let mut d = self.0.write();
        let mut at =
            usize::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        for p in parts {
            d.write_at(at, p)?;
            at += p.len();
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.write().set_len(len);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    fn modified_ms(&self) -> io::Result<i64> {
        Ok(self.0.read().modified_ms)
    }
}

impl IndexFile for MemHandle {
    fn len(&self) -> usize {
        self.0.read().len as usize
    }

    fn read_at(&self, position: usize, buf: &mut [u8]) {
        let d = self.0.read();
        match position.checked_add(buf.len()) {
            Some(end) if end as u64 <= d.len => d.copy_out(position, buf),
            _ => buf.fill(0),
        }
    }

    fn write_at(&mut self, position: usize, bytes: &[u8]) {
        let mut d = self.0.write();
        if matches!(position.checked_add(bytes.len()), Some(end) if end as u64 <= d.len) {
            // In range, so the write cannot fail.
            let _ = d.write_at(position, bytes);
        }
    }

    fn set_len(&mut self, len: usize) -> io::Result<()> {
        self.0.write().set_len(len as u64);
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        Ok(())
    }

    fn moved_to(&mut self, _path: &Path) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_sparse_and_handles_outlive_renames_and_removals() {
        let s = MemoryStorage::new();
        s.create_dir_all(Path::new("/d")).unwrap();
        let f = s.open_file(Path::new("/d/a"), true).unwrap();
        f.set_len(1 << 30).unwrap();
        assert_eq!(s.bytes_held(), 0);
        f.write_all_at(&[b"ab", b"cd"], 2).unwrap();
        let mut buf = [9u8; 6];
        f.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"\0\0abcd");
        s.rename(Path::new("/d/a"), Path::new("/d/b")).unwrap();
        s.remove_file(Path::new("/d/b")).unwrap();
        assert_eq!(f.read_bytes_at(2, 4).unwrap(), Bytes::from_static(b"cd"));
        assert!(!s.exists(Path::new("/d/b")));
    }

    #[test]
    fn debug_output_shows_sizes_not_contents() {
        let s = MemoryStorage::new();
        s.write_atomically(Path::new("f"), &[7u8; 4096]).unwrap();
        let f = s.open_file(Path::new("f"), false).unwrap();
        assert_eq!(
            format!("{s:?}"),
            "MemoryStorage { entries: 1, bytes_held: 4096 }"
        );
        assert_eq!(
            format!("{f:?}"),
            "MemHandle(MemFile { len: 4096, bytes_held: 4096 })"
        );
    }

    #[test]
    fn reads_past_the_end_fail_like_a_file() {
        let s = MemoryStorage::new();
        let f = s.open_file(Path::new("x"), true).unwrap();
        f.write_all_at(&[b"abc"], 0).unwrap();
        let e = f.read_bytes_at(4, 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert!(f.read_bytes_at(usize::MAX, u64::MAX).is_err());
        let e = s.open_file(Path::new("nope"), false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn read_dir_lists_direct_children_only() {
        let s = MemoryStorage::new();
        s.create_dir_all(Path::new("/r/t-0")).unwrap();
        s.create_dir_all(Path::new("/r-x")).unwrap();
        s.write_atomically(Path::new("/r/t-0/f"), b"1").unwrap();
        s.write_atomically(Path::new("/r/g"), b"2").unwrap();
        let mut names = s.read_dir(Path::new("/r")).unwrap();
        names.sort();
        assert_eq!(names, ["g", "t-0"]);
        assert!(s.write_atomically(Path::new("/missing/f"), b"").is_err());
        s.remove_dir_all(Path::new("/r")).unwrap();
        assert!(!s.exists(Path::new("/r/t-0/f")));
        assert!(s.is_dir(Path::new("/r-x")));
    }

    #[test]
    fn index_handles_ignore_out_of_range_access() {
        let s = MemoryStorage::new();
        let (mut i, created) = s.open_index(Path::new("i")).unwrap();
        assert!(created);
        i.set_len(24).unwrap();
        i.write_at(20, b"12345678");
        let mut b = [1u8; 8];
        i.read_at(20, &mut b);
        assert_eq!(b, [0; 8]);
        i.write_at(12, b"abcdefgh");
        i.read_at(12, &mut b);
        assert_eq!(&b, b"abcdefgh");
        let (_, created) = s.open_index(Path::new("i")).unwrap();
        assert!(!created);
    }
}
