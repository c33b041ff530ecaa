//! The disk faults on their own (no broker): a tmpfs filled to ENOSPC and given its space back,
//! an ext4 image turned read-only under an open file and restored. They mount, so they need
//! root: without it each says SKIPPED and why (JOSEF_TESTBED_REQUIRE_MOUNT=1 makes that a
//! failure).

use std::io::{ErrorKind, Write};

use josef_testbed::disk::{DiskKind, DiskMount};

fn mountable(kind: DiskKind) -> bool {
    let Some(why) = DiskMount::unavailable(kind) else {
        return true;
    };
    assert!(
        std::env::var_os("JOSEF_TESTBED_REQUIRE_MOUNT").is_none(),
        "JOSEF_TESTBED_REQUIRE_MOUNT is set but a {kind:?} cannot be mounted: {why}"
    );
    eprintln!("SKIPPED: cannot mount a {kind:?}: {why}");
    false
}

fn mounted_at(path: &std::path::Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let p = path.to_str().unwrap();
    mounts.lines().any(|l| l.split(' ').nth(1) == Some(p))
}

#[test]
fn a_filled_tmpfs_refuses_writes_with_enospc_until_unfilled_or_resized() {
    if !mountable(DiskKind::Tmpfs) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    let mut m = DiskMount::mount(&path, DiskKind::Tmpfs, 8).unwrap();
    assert!(mounted_at(&path));
    let mut f = std::fs::File::create(path.join("segment")).unwrap();
    f.write_all(&[1u8; 4096]).unwrap();
    m.fill(0).unwrap();
    assert_eq!(m.available().unwrap(), 0);
    let full = f.write_all(&[2u8; 65536]).and_then(|_| f.sync_all());
    assert_eq!(full.unwrap_err().raw_os_error(), Some(libc_enospc()));

    m.unfill().unwrap();
    f.write_all(&[3u8; 65536]).unwrap();
    m.fill(0).unwrap();
    m.resize(16).unwrap();
    assert!(m.available().unwrap() >= 7 << 20);
    f.write_all(&[4u8; 65536]).unwrap();
    drop(f);
    m.umount();
    assert!(!mounted_at(&path), "unmounted");
}

fn libc_enospc() -> i32 {
    28 // ENOSPC on Linux
}

#[test]
fn an_ext4_error_makes_the_disk_read_only_under_an_open_file_until_restored() {
    if !mountable(DiskKind::Ext4) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    let m = DiskMount::mount(&path, DiskKind::Ext4, 16).unwrap();
    let mut f = std::fs::File::create(path.join("segment")).unwrap();
    f.write_all(b"kept").unwrap();
    f.sync_all().unwrap();
    m.make_read_only().unwrap();
    let err = std::fs::write(path.join("new"), b"x").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ReadOnlyFilesystem, "{err}");
    let open = f.write_all(b"more").and_then(|_| f.sync_all());
    assert!(open.is_err(), "an open file stayed writable");
    drop(f);

    m.restore().unwrap();
    assert_eq!(std::fs::read(path.join("segment")).unwrap(), b"kept");
    std::fs::write(path.join("new"), b"x").unwrap();
    let image = path.with_file_name("data.ext4.img");
    assert!(image.exists());
    drop(m);
    assert!(
        !mounted_at(&path) && !image.exists(),
        "unmounted and removed"
    );
}
