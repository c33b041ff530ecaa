//! The size of a log dir's filesystem, for DescribeLogDirs (Kafka's `FileStore.getTotalSpace`
//! and `getUsableSpace`): `statvfs(2)`, the space available to an unprivileged writer as usable.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Total and usable bytes of the filesystem holding a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    /// The filesystem's size.
    pub total_bytes: u64,
    /// What a non-root writer can still use (`f_bavail`).
    pub usable_bytes: u64,
}

/// The space of the filesystem `dir` is on.
pub fn space(dir: &Path) -> std::io::Result<Space> {
    let path = CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `path` is NUL-terminated and outlives the call; `st` is plain data statvfs fills.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut st) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let frsize = st.f_frsize as u64;
    Ok(Space {
        total_bytes: (st.f_blocks as u64).saturating_mul(frsize),
        usable_bytes: (st.f_bavail as u64).saturating_mul(frsize),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_has_a_filesystem_with_room() {
        let dir = tempfile::tempdir().unwrap();
        let s = space(dir.path()).unwrap();
        assert!(s.total_bytes > 0);
        assert!(s.usable_bytes <= s.total_bytes);
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(space(&dir.path().join("nope")).is_err());
        assert!(space(Path::new("a\0b")).is_err());
    }
}
