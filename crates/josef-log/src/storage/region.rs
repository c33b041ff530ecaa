//! [`FileRegion`]: a byte range of an open segment file, handed out instead of the bytes so that
//! a plaintext fetch can go from the page cache to the socket with `sendfile` (Kafka's
//! `FileRecords.writeTo`), never through user space.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

/// A range of an open file: the descriptor stays open while the region lives (an `Arc` shares it
/// with the segment), so a segment deleted meanwhile is still read from its unlinked inode, as
/// Kafka's open `FileChannel` is.
///
/// The length is the one captured when the region was made (Kafka's `FileRecords.slice`): never
/// more is sent. A file truncated below the region's end before its bytes are sent makes
/// [`FileRegion::read_at`] and [`FileRegion::send_to`] fail with `UnexpectedEof` rather than send
/// fewer bytes than the response promised (Kafka throws "has been truncated during write" there
/// and closes the connection).
#[derive(Debug, Clone)]
pub struct FileRegion {
    file: Arc<File>,
    position: u64,
    len: usize,
}

impl FileRegion {
    /// `len` bytes of `file` from `position`.
    pub fn new(file: Arc<File>, position: u64, len: usize) -> FileRegion {
        FileRegion {
            file,
            position,
            len,
        }
    }

    /// Bytes in the region.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the region starts in its file.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The first `len` bytes of the region, from `offset` in it (a narrower view sharing the same
    /// open file); `None` if that runs past the region's end.
    pub fn slice(&self, offset: usize, len: usize) -> Option<FileRegion> {
        let end = offset.checked_add(len)?;
        (end <= self.len).then(|| FileRegion {
            file: self.file.clone(),
            position: self.position + offset as u64,
            len,
        })
    }

    /// Fills `dst` with the region's bytes from `offset` (a copy into user space: the TLS and
    /// in-memory paths). Past the region's end, or past the file's end (truncated since), is
    /// `UnexpectedEof`.
    pub fn read_at(&self, offset: usize, dst: &mut [u8]) -> io::Result<()> {
        self.check(offset, dst.len())?;
        std::os::unix::fs::FileExt::read_exact_at(&*self.file, dst, self.position + offset as u64)
    }

    /// Sends up to `len` bytes of the region from `offset` to the socket `fd` with one
    /// `sendfile` call; returns how many went. A full non-blocking socket is `WouldBlock` (the
    /// caller waits for it to be writable and calls again from where it got to). A file that
    /// ends before the region does (truncated since) is `UnexpectedEof`.
    pub fn send_to(&self, offset: usize, len: usize, fd: RawFd) -> io::Result<usize> {
        self.check(offset, len)?;
        if len == 0 {
            return Ok(0);
        }
        let mut at = libc::off_t::try_from(self.position + offset as u64)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        loop {
            // SAFETY: both descriptors are open (the file's is kept by `self.file`, the caller
            // owns the socket's); the kernel reads `at` and writes the new offset into it.
            let n = unsafe { libc::sendfile(fd, self.file.as_raw_fd(), &mut at, len) };
            match n {
                n if n > 0 => return Ok(n as usize),
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
    }

    fn check(&self, offset: usize, len: usize) -> io::Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(io::ErrorKind::UnexpectedEof.into()),
        }
    }
}

/// Two regions are equal when they name the same range of the same open file.
impl PartialEq for FileRegion {
    fn eq(&self, other: &FileRegion) -> bool {
        Arc::ptr_eq(&self.file, &other.file)
            && self.position == other.position
            && self.len == other.len
    }
}

impl Eq for FileRegion {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    fn region_of(bytes: &[u8], position: u64, len: usize) -> (tempfile::TempDir, FileRegion) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, bytes).unwrap();
        let f = File::open(&path).unwrap();
        (dir, FileRegion::new(Arc::new(f), position, len))
    }

    #[test]
    fn read_at_copies_the_region_bytes_and_refuses_past_its_end() {
        let (_d, r) = region_of(b"0123456789", 2, 5);
        let mut buf = [0u8; 3];
        r.read_at(1, &mut buf).unwrap();
        assert_eq!(&buf, b"345");
        assert_eq!(
            r.read_at(3, &mut buf).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        assert_eq!(r.slice(1, 4).unwrap().position(), 3);
        assert!(r.slice(1, 5).is_none());
    }

    #[test]
    fn send_to_moves_the_region_bytes_to_a_socket() {
        let (_d, r) = region_of(b"0123456789", 2, 5);
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut sent = 0;
        while sent < r.len() {
            sent += r.send_to(sent, r.len() - sent, a.as_raw_fd()).unwrap();
        }
        drop(a);
        let mut got = Vec::new();
        b.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"23456");
    }

    #[test]
    fn a_deleted_file_is_still_read_through_an_open_region() {
        let (dir, r) = region_of(b"abcdef", 0, 6);
        std::fs::remove_file(dir.path().join("f")).unwrap();
        let (a, mut b) = UnixStream::pair().unwrap();
        assert_eq!(r.send_to(0, 6, a.as_raw_fd()).unwrap(), 6);
        drop(a);
        let mut got = Vec::new();
        b.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"abcdef");
    }

    #[test]
    fn a_file_truncated_under_the_region_is_an_error_never_other_bytes() {
        let (dir, r) = region_of(b"abcdef", 0, 6);
        let path = dir.path().join("f");
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(2)
            .unwrap();
        let mut buf = [0u8; 6];
        assert_eq!(
            r.read_at(0, &mut buf).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        // sendfile sends what is left (2 bytes), then reports the end: the caller gets an error
        // instead of a short response, and never bytes past the captured length.
        let (a, mut b) = UnixStream::pair().unwrap();
        assert_eq!(r.send_to(0, 6, a.as_raw_fd()).unwrap(), 2);
        assert_eq!(
            r.send_to(2, 4, a.as_raw_fd()).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        // Growing the file again does not widen the region.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"XYZWVUT")
            .unwrap();
        assert_eq!(r.send_to(2, 4, a.as_raw_fd()).unwrap(), 4);
        drop(a);
        let mut got = Vec::new();
        b.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"abXYZW");
    }
}
