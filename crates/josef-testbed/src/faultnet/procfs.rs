//! Who opened a loopback connection, without privileges: the connecting socket's inode from
//! `/proc/net/tcp` (or `tcp6`), then the process holding that inode among its `/proc/PID/fd`.
//! This is what lets one proxy port, advertised to every node alike (the inter-broker listener's
//! address comes from the metadata), still tell its sources apart.

use std::fs;

/// `/proc/net/tcp` prints an IPv4 address as the host-order `u32` in hex (127.0.0.1 is
/// `0100007F` on little endian), then the port in hex.
fn v4(port: u16) -> String {
    format!("{:08X}:{port:04X}", u32::from_ne_bytes([127, 0, 0, 1]))
}

/// `/proc/net/tcp6` prints four host-order `u32`s; a socket of an IPv6 program reaching
/// 127.0.0.1 is `::ffff:127.0.0.1`.
fn v6(port: u16) -> String {
    let words = [[0u8; 4], [0; 4], [0, 0, 0xff, 0xff], [127, 0, 0, 1]];
    let hex: String = words
        .iter()
        .map(|w| format!("{:08X}", u32::from_ne_bytes(*w)))
        .collect();
    format!("{hex}:{port:04X}")
}

/// The inode of a loopback TCP socket in `table` (the text of `/proc/net/tcp*`) whose local and
/// remote addresses are `local` and `remote`.
fn find_inode(table: &str, local: &str, remote: &str) -> Option<u64> {
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() > 9 && f[1] == local && f[2] == remote)
            .then(|| f[9].parse().ok())
            .flatten()
    })
}

/// The inode of the socket `127.0.0.1:local_port -> 127.0.0.1:remote_port` of this network
/// namespace, `None` if there is none (or /proc cannot be read).
pub fn socket_inode(local_port: u16, remote_port: u16) -> Option<u64> {
    let inode = |file: &str, f: fn(u16) -> String| {
        let table = fs::read_to_string(file).ok()?;
        find_inode(&table, &f(local_port), &f(remote_port)).filter(|i| *i != 0)
    };
    inode("/proc/net/tcp", v4).or_else(|| inode("/proc/net/tcp6", v6))
}

/// Whether process `pid` holds socket `inode` among its file descriptors.
pub fn pid_holds_inode(pid: u32, inode: u64) -> bool {
    let want = format!("socket:[{inode}]");
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == want.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_connection_of_this_process_is_found_and_its_owner_is_this_pid() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let lport = l.local_addr().unwrap().port();
        let c = TcpStream::connect(("127.0.0.1", lport)).unwrap();
        let cport = c.local_addr().unwrap().port();
        let inode = socket_inode(cport, lport).expect("the connecting socket's inode");
        assert!(pid_holds_inode(std::process::id(), inode));
        // The accepted side is another socket; a made-up pair has none; pid 1 does not hold ours.
        let (_accepted, _) = l.accept().unwrap();
        assert_ne!(socket_inode(lport, cport), Some(inode));
        assert_eq!(socket_inode(cport, cport), None);
        assert!(!pid_holds_inode(u32::MAX, inode));
    }

    #[test]
    fn table_lines_are_matched_on_both_addresses() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 0100007F:0050 01 00000000:00000000 00:00000000 00000000     0        0 4242 1 0\n";
        let (a, b) = (v4(0x1F90), v4(0x50));
        assert_eq!(find_inode(table, &a, &b), Some(4242));
        assert_eq!(find_inode(table, &b, &a), None);
        assert_eq!(find_inode("garbage", &a, &b), None);
        assert!(v6(1).ends_with("0100007F:0001"));
    }
}
