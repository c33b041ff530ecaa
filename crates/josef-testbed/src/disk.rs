//! Disk faults under a node: a small filesystem mounted on its data dir, made and removed by the
//! test (the same as `DiskMount` of `tests/e2e/cluster.py`).
//!
//! - [`DiskKind::Tmpfs`]: ENOSPC by [`fill`](DiskMount::fill) (or a small size), space back by
//!   [`unfill`](DiskMount::unfill) or [`resize`](DiskMount::resize).
//! - [`DiskKind::Ext4`]: an ext4 image on a loop device mounted with `errors=remount-ro`, for a
//!   *live* read-only remount: `mount -o remount,ro` is refused while the broker has files open
//!   for writing, so [`make_read_only`](DiskMount::make_read_only) raises an ext4 error through
//!   `/sys/fs/ext4/<dev>/trigger_fs_error` and the kernel turns the filesystem read-only under
//!   the running broker (EROFS on every write), as when a disk fails.
//!   [`restore`](DiskMount::restore), with the node stopped, unmounts, runs `e2fsck -fy` and
//!   mounts it writable again.
//!
//! Mounting needs root (CAP_SYS_ADMIN) and the tools; [`DiskMount::unavailable`] says why it
//! cannot be done here, so a test can report itself skipped with the reason rather than pass.
//! Unmounting is lazy (`umount -l`) and happens on drop, after the node's process is killed when
//! the mount belongs to a [`Node`](crate::Node): a tmpfs's contents go with it, also when the
//! test failed and its directory is kept.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::process::wait_until;
use crate::Error;

/// How long one mount tool may run.
const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// The filesystem under a data dir.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskKind {
    /// A tmpfs of a given size: ENOSPC when full.
    Tmpfs,
    /// An ext4 image on a loop device with `errors=remount-ro`: read-only on a (triggered) error.
    Ext4,
}

impl DiskKind {
    fn tools(self) -> &'static [&'static str] {
        match self {
            DiskKind::Tmpfs => &["mount", "umount"],
            DiskKind::Ext4 => &[
                "mount",
                "umount",
                "losetup",
                "mkfs.ext4",
                "e2fsck",
                "blockdev",
            ],
        }
    }
}

/// A small filesystem mounted on a directory; unmounted (and its loop device and image removed)
/// on drop.
#[derive(Debug)]
pub struct DiskMount {
    path: PathBuf,
    kind: DiskKind,
    size_mb: u64,
    mounted: bool,
    loop_dev: Option<String>,
    image: PathBuf,
}

/// Runs a mount tool, bounded by [`TOOL_TIMEOUT`]; its stdout, or an error with its stderr when
/// its exit code is not in `ok`.
fn run(args: &[&str], ok: &[i32]) -> Result<String, Error> {
    let what = args.join(" ");
    let fail = |reason: String| Error::Command {
        command: what.clone(),
        reason,
    };
    let mut child = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(e.to_string()))?;
    let mut status = None;
    wait_until(TOOL_TIMEOUT, Duration::from_millis(10), || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(fail(format!(
            "still running after {TOOL_TIMEOUT:?} (killed)"
        )));
    };
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut err);
    }
    match status.code() {
        Some(c) if ok.contains(&c) => Ok(out.trim().to_string()),
        _ => Err(fail(if err.trim().is_empty() {
            status.to_string()
        } else {
            err.trim().to_string()
        })),
    }
}

fn on_path(tool: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/sbin", "/usr/sbin"].map(PathBuf::from))
        .any(|d| d.join(tool).is_file())
}

fn path_str(p: &Path) -> Result<&str, Error> {
    p.to_str()
        .ok_or_else(|| Error::Invalid(format!("not a UTF-8 path: {}", p.display())))
}

/// Free bytes for an unprivileged writer on the filesystem holding `path`.
fn available(path: &Path) -> Result<u64, Error> {
    let c = std::ffi::CString::new(path_str(path)?)
        .map_err(|_| Error::Invalid(format!("a NUL in {}", path.display())))?;
    // SAFETY: statvfs writes into the zeroed struct on the stack; `c` is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(Error::io(
            format!("statvfs {}", path.display()),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

impl DiskMount {
    /// Why a `kind` disk cannot be mounted here (not root, a tool missing, no loop device, an
    /// ext4 error that does not turn the filesystem read-only), or `None` when it can: a probe
    /// mounts, for ext4 also makes read-only, and unmounts one in a temporary directory.
    pub fn unavailable(kind: DiskKind) -> Option<String> {
        let missing: Vec<&str> = kind
            .tools()
            .iter()
            .copied()
            .filter(|t| !on_path(t))
            .collect();
        if !missing.is_empty() {
            return Some(format!("missing {}", missing.join(", ")));
        }
        let probe = match tempfile::Builder::new()
            .prefix("josef-mount-probe-")
            .tempdir()
        {
            Ok(d) => d,
            Err(e) => return Some(format!("a temporary directory: {e}")),
        };
        let m = match DiskMount::mount(probe.path().join("d"), kind, 8) {
            Ok(m) => m,
            Err(e) => return Some(e.to_string()),
        };
        if kind == DiskKind::Ext4 {
            if let Err(e) = m.make_read_only() {
                return Some(e.to_string());
            }
            if std::fs::write(m.path().join("x"), b"x").is_ok() {
                return Some("an ext4 error did not turn the filesystem read-only".into());
            }
        }
        None
    }

    /// Mounts a new `kind` filesystem of `size_mb` MiB on `path` (created if missing; for ext4,
    /// its image is `<path>.ext4.img` beside it).
    pub fn mount(
        path: impl Into<PathBuf>,
        kind: DiskKind,
        size_mb: u64,
    ) -> Result<DiskMount, Error> {
        let path = path.into();
        std::fs::create_dir_all(&path).map_err(|e| Error::io(path.display().to_string(), e))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "disk".into());
        let image = path.with_file_name(format!("{name}.ext4.img"));
        let mut m = DiskMount {
            path,
            kind,
            size_mb,
            mounted: false,
            loop_dev: None,
            image,
        };
        let p = path_str(&m.path)?.to_string();
        match kind {
            DiskKind::Tmpfs => {
                let opts = format!("size={size_mb}m,mode=0755");
                run(&["mount", "-t", "tmpfs", "-o", &opts, "tmpfs", &p], &[0])?;
            }
            DiskKind::Ext4 => {
                let img = path_str(&m.image)?.to_string();
                let f = std::fs::File::create(&m.image).map_err(|e| Error::io(&img, e))?;
                f.set_len(size_mb << 20).map_err(|e| Error::io(&img, e))?;
                drop(f);
                run(&["mkfs.ext4", "-q", "-F", &img], &[0])?;
                let dev = run(&["losetup", "-f", "--show", &img], &[0])?;
                m.loop_dev = Some(dev.clone());
                run(&["blockdev", "--setrw", &dev], &[0])?;
                run(&["mount", "-o", "errors=remount-ro", &dev, &p], &[0])?;
            }
        }
        m.mounted = true;
        Ok(m)
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its kind.
    pub fn kind(&self) -> DiskKind {
        self.kind
    }

    /// Its size in MiB.
    pub fn size_mb(&self) -> u64 {
        self.size_mb
    }

    /// Free bytes on it now.
    pub fn available(&self) -> Result<u64, Error> {
        available(&self.path)
    }

    /// Writes `<path>/filler` until the filesystem is full but `leave_bytes` (ENOSPC for the
    /// next write beyond them); the filler's path.
    pub fn fill(&self, leave_bytes: u64) -> Result<PathBuf, Error> {
        let filler = self.path.join("filler");
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&filler)
            .map_err(|e| Error::io(filler.display().to_string(), e))?;
        let mut free = available(&self.path)?.saturating_sub(leave_bytes);
        let chunk = vec![0u8; 1 << 20];
        while free > 0 {
            let n = chunk.len().min(usize::try_from(free).unwrap_or(usize::MAX));
            match f.write(&chunk[..n]) {
                Ok(0) | Err(_) => break, // ENOSPC: the broker's own writes raced us there
                Ok(w) => free -= w as u64,
            }
        }
        if leave_bytes == 0 {
            // The last blocks statvfs did not count (reserved blocks, rounding).
            while matches!(f.write(&chunk[..4096]), Ok(w) if w > 0) {}
        }
        Ok(filler)
    }

    /// Removes the filler and returns once the space shows (within [`TOOL_TIMEOUT`]).
    pub fn unfill(&self) -> Result<(), Error> {
        let filler = self.path.join("filler");
        match std::fs::remove_file(&filler) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io(filler.display().to_string(), e));
            }
            _ => {}
        }
        // The blocks are freed with the last descriptor, and a child forked by another thread
        // of this process (a node, a mount tool) holds a copy of the filler's until its exec.
        if wait_until(TOOL_TIMEOUT, Duration::from_millis(5), || {
            available(&self.path).is_ok_and(|a| a > 0)
        }) {
            Ok(())
        } else {
            Err(Error::Timeout {
                what: format!("free space on {} after unfill", self.path.display()),
                timeout: TOOL_TIMEOUT,
            })
        }
    }

    /// A tmpfs's new size (more space, or less for ENOSPC); live, with the node running.
    pub fn resize(&mut self, size_mb: u64) -> Result<(), Error> {
        if self.kind != DiskKind::Tmpfs {
            return Err(Error::Invalid("only a tmpfs is resized".into()));
        }
        let opts = format!("remount,size={size_mb}m");
        run(&["mount", "-o", &opts, path_str(&self.path)?], &[0])?;
        self.size_mb = size_mb;
        Ok(())
    }

    /// Read-only under whoever uses it: for ext4 an error raised through sysfs (the node may run);
    /// for tmpfs `mount -o remount,ro` (refused while a file is open for writing).
    pub fn make_read_only(&self) -> Result<(), Error> {
        match (self.kind, &self.loop_dev) {
            (DiskKind::Ext4, Some(dev)) => {
                let name = dev.rsplit('/').next().unwrap_or(dev);
                let trigger = format!("/sys/fs/ext4/{name}/trigger_fs_error");
                std::fs::write(&trigger, "josef test bed: disk goes read-only\n")
                    .map_err(|e| Error::io(trigger, e))
            }
            _ => run(&["mount", "-o", "remount,ro", path_str(&self.path)?], &[0]).map(|_| ()),
        }
    }

    /// Writable again; for ext4 unmounted, checked (`e2fsck -fy`) and mounted again, so the node
    /// using it must be stopped.
    pub fn restore(&self) -> Result<(), Error> {
        let p = path_str(&self.path)?;
        match (self.kind, &self.loop_dev) {
            (DiskKind::Ext4, Some(dev)) => {
                run(&["umount", p], &[0])?;
                // 1: errors corrected, which is what a triggered error leaves to do.
                run(&["e2fsck", "-fy", dev], &[0, 1])?;
                run(&["mount", "-o", "errors=remount-ro", dev, p], &[0]).map(|_| ())
            }
            _ => run(&["mount", "-o", "remount,rw", p], &[0]).map(|_| ()),
        }
    }

    /// Unmounts (lazily: a process may still hold files), detaches the loop device and removes
    /// the image. Also done on drop.
    pub fn umount(&mut self) {
        if self.mounted {
            if let Ok(p) = path_str(&self.path) {
                let _ = run(&["umount", "-l", p], &[0]);
            }
            self.mounted = false;
        }
        if let Some(dev) = self.loop_dev.take() {
            let _ = run(&["losetup", "-d", &dev], &[0]);
        }
        let _ = std::fs::remove_file(&self.image);
    }
}

impl Drop for DiskMount {
    fn drop(&mut self) {
        self.umount();
    }
}
