//! [`FileStorage`]: the file system, with `pread`/`pwritev` for segments and memory-mapped
//! indexes (what the log did before the seam existed, at the same cost).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use memmap2::MmapMut;

use super::{FileRegion, IndexFile, Storage, StorageFile};
use crate::naming::TMP_FILE_SUFFIX;

/// The file system. Kafka's layout, byte for byte; a partition directory must belong to one
/// process (Kafka locks its log dirs), since indexes are memory-mapped.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileStorage;

impl Storage for FileStorage {
    fn open_file(&self, path: &Path, create: bool) -> io::Result<Box<dyn StorageFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)?;
        Ok(Box::new(DiskFile(Arc::new(file))))
    }

    fn open_index(&self, path: &Path) -> io::Result<(Box<dyn IndexFile>, bool)> {
        // Opening first and creating only on NotFound spares a stat per index when a log with
        // many segments opens.
        let (file, created) = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => (f, false),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(path)?;
                (f, true)
            }
            Err(e) => return Err(e),
        };
        let len = usize::try_from(file.metadata()?.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "index file too large"))?;
        let mmap = map(&file, len)?;
        // The descriptor is not kept: a log with thousands of segments would hold two more per
        // segment; resizing reopens by name.
        Ok((
            Box::new(MappedIndex {
                path: path.to_path_buf(),
                mmap,
                len,
            }),
            created,
        ))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(TMP_FILE_SUFFIX);
        let tmp = PathBuf::from(tmp);
        {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)?;
        match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => self.sync_dir(parent),
            _ => Ok(()),
        }
    }

    fn write_replacing(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(TMP_FILE_SUFFIX);
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, path)
    }

    fn sync_file_system(&self, dir: &Path) -> io::Result<()> {
        sync_file_system_of(&File::open(dir)?)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        let m = std::fs::metadata(path)?;
        if m.is_dir() {
            return Err(io::Error::other(format!(
                "{} is a directory",
                path.display()
            )));
        }
        Ok(m.len())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::remove_dir_all(dir)
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        std::fs::read_dir(dir)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect()
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        // Opening a directory read-only and calling fsync is how POSIX makes its entries durable.
        File::open(dir)?.sync_all()
    }
}

/// `syncfs` of the file system `file` is on (since Linux 5.8 it reports write-back errors).
#[cfg(target_os = "linux")]
fn sync_file_system_of(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: syncfs only reads the descriptor, which `file` keeps open for the call.
    match unsafe { libc::syncfs(file.as_raw_fd()) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Elsewhere there is no `syncfs`, and POSIX does not promise that `sync` waits for the writes:
/// refused, so that nothing is taken for durable that may not be.
#[cfg(not(target_os = "linux"))]
fn sync_file_system_of(_file: &File) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

#[derive(Debug)]
struct DiskFile(Arc<File>);

impl StorageFile for DiskFile {
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.0.read_exact_at(buf, offset)
    }

    fn read_bytes_at(&self, len: usize, offset: u64) -> io::Result<Bytes> {
        // The buffer is sized by the caller's length: past the end of the file it is refused
        // before allocating (a corrupt length must not become a huge allocation or a capacity
        // overflow panic).
        let size = self.0.metadata()?.len();
        let end = u64::try_from(len).ok().and_then(|l| offset.checked_add(l));
        if !matches!(end, Some(end) if end <= size) {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let mut buf = BytesMut::with_capacity(len);
        read_exact_at_uninit(&self.0, &mut buf, len, offset)?;
        Ok(buf.freeze())
    }

    fn region_at(&self, len: usize, offset: u64) -> io::Result<Option<FileRegion>> {
        // Checked against the length now, like `read_bytes_at`: the region never names bytes the
        // file did not hold when it was made.
        let size = self.0.metadata()?.len();
        let end = u64::try_from(len).ok().and_then(|l| offset.checked_add(l));
        if !matches!(end, Some(end) if end <= size) {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(Some(FileRegion::new(self.0.clone(), offset, len)))
    }

    fn write_all_at(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        match parts {
            [one] => self.0.write_all_at(one, offset),
            _ => write_all_vectored_at(&self.0, parts, offset),
        }
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn modified_ms(&self) -> io::Result<i64> {
        let t = self.0.metadata()?.modified()?;
        Ok(t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64))
    }
}

/// A memory-mapped index file.
#[derive(Debug)]
struct MappedIndex {
    path: PathBuf,
    mmap: Option<MmapMut>,
    len: usize,
}

impl IndexFile for MappedIndex {
    fn len(&self) -> usize {
        self.len
    }

    fn read_at(&self, position: usize, buf: &mut [u8]) {
        let src = self
            .mmap
            .as_deref()
            .and_then(|m| m.get(position..position.checked_add(buf.len())?));
        match src {
            Some(s) => buf.copy_from_slice(s),
            None => buf.fill(0),
        }
    }

    fn write_at(&mut self, position: usize, bytes: &[u8]) {
        let dst = self
            .mmap
            .as_deref_mut()
            .and_then(|m| m.get_mut(position..position.checked_add(bytes.len())?));
        if let Some(d) = dst {
            d.copy_from_slice(bytes);
        }
    }

    fn set_len(&mut self, new_len: usize) -> io::Result<()> {
        if new_len == self.len {
            return Ok(());
        }
        // No msync before remapping (Kafka's `AbstractIndex.resize` does none either): dirty pages
        // stay in the page cache when the mapping goes, and durability comes from the `flush`
        // that follows every trim on roll and close. An msync here cost a journal commit per
        // index per partition on recovery.
        self.mmap = None;
        let file = OpenOptions::new().read(true).write(true).open(&self.path)?;
        file.set_len(new_len as u64)?;
        self.mmap = map(&file, new_len)?;
        self.len = new_len;
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        match &self.mmap {
            Some(m) => m.flush(),
            None => Ok(()),
        }
    }

    fn moved_to(&mut self, path: &Path) {
        self.path = path.to_path_buf();
    }
}

fn map(file: &File, len: usize) -> io::Result<Option<MmapMut>> {
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: the index file is private to this log (one process owns a partition directory, as in
    // Kafka, which locks its log dirs); it is only resized through `MappedIndex::set_len`, which
    // drops the mapping first, so no mapping ever outlives the file bytes it covers.
    let m = unsafe { MmapMut::map_mut(file) }?;
    // Index entries are read by binary search and written one at a time at the end, never
    // streamed. Without this hint each first touch of a page of the (mostly sparse, preallocated)
    // file faulted in the kernel's whole read-around window, zero-filled and charged, and the trim
    // on roll and close then had to drop it again: with 10,000 partitions, most of a shutdown's
    // CPU (issue #22). The hint only changes what the page cache reads ahead, not what is written
    // or when it is synced.
    let _ = m.advise(memmap2::Advice::Random);
    Ok(Some(m))
}

/// Writes all of `parts`, in order, at `offset` with `pwritev`, resuming after short writes.
fn write_all_vectored_at(file: &File, parts: &[&[u8]], mut offset: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // Where the next write starts: part index and byte within it.
    let (mut part, mut within) = (0usize, 0usize);
    while part < parts.len() {
        let iov: Vec<libc::iovec> = parts[part..]
            .iter()
            .take(1024) // IOV_MAX on Linux
            .enumerate()
            .map(|(i, p)| {
                let p = if i == 0 { &p[within..] } else { p };
                libc::iovec {
                    iov_base: p.as_ptr() as *mut libc::c_void,
                    iov_len: p.len(),
                }
            })
            .collect();
        let at = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: every iovec describes a live slice of `parts`, which pwritev only reads.
        let n =
            unsafe { libc::pwritev(file.as_raw_fd(), iov.as_ptr(), iov.len() as libc::c_int, at) };
        let Some(mut n) = transferred(n, io::ErrorKind::WriteZero)? else {
            continue;
        };
        offset += n as u64;
        while part < parts.len() && n >= parts[part].len() - within {
            n -= parts[part].len() - within;
            part += 1;
            within = 0;
        }
        within += n;
    }
    Ok(())
}

/// `pread`s exactly `len` bytes at `offset` into `buf`'s spare capacity, without zeroing it
/// first: fetch reads are megabytes, and the memset was as costly as the read's copy.
fn read_exact_at_uninit(
    file: &File,
    buf: &mut BytesMut,
    len: usize,
    offset: u64,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    buf.reserve(len);
    let start = buf.len();
    while buf.len() - start < len {
        let done = buf.len() - start;
        let spare = buf.spare_capacity_mut();
        let want = len - done;
        let at = libc::off_t::try_from(offset + done as u64)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: the pointer and `want` (<= spare.len(), reserved above) describe writable
        // memory owned by `buf`; pread only writes into it and reports how much it wrote.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                spare.as_mut_ptr().cast::<libc::c_void>(),
                want,
                at,
            )
        };
        let Some(n) = transferred(n, io::ErrorKind::UnexpectedEof)? else {
            continue;
        };
        // SAFETY: pread initialised the first `n` (<= want) spare bytes.
        unsafe { buf.set_len(buf.len() + n) };
    }
    Ok(())
}

/// The byte count a `pread`/`pwritev` returned: `None` when a signal interrupted it (retry), the
/// OS error when it failed, `on_zero` when it moved nothing (end of file, or a full device).
fn transferred(n: isize, on_zero: io::ErrorKind) -> io::Result<Option<usize>> {
    match n {
        n if n > 0 => Ok(Some(n as usize)),
        0 => Err(on_zero.into()),
        _ => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(None)
            } else {
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_of(bytes: &[u8]) -> (tempfile::TempDir, Box<dyn StorageFile>) {
        let dir = tempfile::tempdir().unwrap();
        let f = FileStorage.open_file(&dir.path().join("f"), true).unwrap();
        f.write_all_at(&[bytes], 0).unwrap();
        (dir, f)
    }

    /// An index mapping is marked for random access (`rr` in `/proc/self/smaps`), so a fault
    /// brings in the one page touched rather than a read-around window of the preallocated file.
    #[cfg(target_os = "linux")]
    #[test]
    fn index_mappings_do_not_read_around() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.index");
        let (mut idx, _) = FileStorage.open_index(&path).unwrap();
        idx.set_len(10 << 20).unwrap();
        idx.write_at(0, &[1; 8]);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let name = path.to_str().unwrap();
        let flags = smaps
            .lines()
            .skip_while(|l| !l.ends_with(name))
            .find(|l| l.starts_with("VmFlags:"))
            .expect("the index is mapped");
        assert!(
            flags.split_whitespace().any(|f| f == "rr"),
            "not marked random-access: {flags}"
        );
    }

    #[test]
    fn read_bytes_past_the_end_is_unexpected_eof_without_allocating() {
        let (_dir, f) = file_of(b"abcdef");
        assert_eq!(f.read_bytes_at(2, 4).unwrap(), Bytes::from_static(b"ef"));
        for (len, offset) in [
            (7, 0),
            (1, 6),
            (usize::MAX, 0),
            (1, u64::MAX),
            (usize::MAX, u64::MAX),
        ] {
            let e = f.read_bytes_at(len, offset).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{len} at {offset}");
        }
        let mut buf = [0u8; 4];
        let e = f.read_exact_at(&mut buf, u64::MAX - 1).unwrap_err();
        assert!(matches!(
            e.kind(),
            io::ErrorKind::UnexpectedEof | io::ErrorKind::InvalidInput
        ));
    }
}
