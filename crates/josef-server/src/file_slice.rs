//! Fetched records left in their segment file: josef-log's [`FileRegion`] as a protocol
//! [`FileSlice`], so a Fetch response carries them as a piece that the connection writer sends
//! with `sendfile` on a plaintext TCP socket (and reads once on TLS or in-memory transports).
//! The adapter lives here because the log knows nothing of the protocol and the protocol nothing
//! of files.

use std::io;

use josef_log::storage::FileRegion;
use josef_protocol::FileSlice;

/// A [`FileRegion`] as a [`FileSlice`].
#[derive(Debug, Clone)]
pub struct RegionSlice(pub FileRegion);

impl FileSlice for RegionSlice {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn read_at(&self, offset: usize, dst: &mut [u8]) -> io::Result<()> {
        self.0.read_at(offset, dst)
    }

    fn send_to(&self, offset: usize, len: usize, fd: std::os::fd::RawFd) -> io::Result<usize> {
        self.0.send_to(offset, len, fd)
    }
}
