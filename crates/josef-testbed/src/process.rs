//! The OS side: free ports, signals by PID, process states from /proc, the broker command, and
//! bounded polling.

use std::ffi::OsString;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::Error;

/// `n` distinct free ports on 127.0.0.1. All are bound before any is released, so one call never
/// hands out the same port twice (another process may still take one before the node binds it).
pub fn free_ports(n: usize) -> Result<Vec<u16>, Error> {
    ports_of(&reserve_ports(n)?)
}

/// `n` listeners on free 127.0.0.1 ports, held so that nothing else binds those ports (the fault
/// proxies, bound to port 0, could be given one) until they are dropped.
///
/// The ports are below the kernel's ephemeral range when there is room: a port there cannot be
/// taken by some process's outgoing connection between its release and the node binding it, nor
/// while the node is down for a restart (cluster runs failed on "Address already in use" that
/// way). Port 0's pick, from the ephemeral range, otherwise.
pub(crate) fn reserve_ports(n: usize) -> Result<Vec<TcpListener>, Error> {
    (0..n)
        .map(|_| reserve_port())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::io("binding a free port", e))
}

fn reserve_port() -> std::io::Result<TcpListener> {
    let low = ephemeral_low();
    if low > 11_000 {
        for attempt in 0..200u64 {
            let port = 10_000 + (random(attempt) % u64::from(low - 10_000)) as u16;
            if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
                return Ok(l);
            }
        }
    }
    TcpListener::bind("127.0.0.1:0")
}

/// The first port of `net.ipv4.ip_local_port_range` (32768 when it cannot be read).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// A random number (std's per-process random hash keys, mixed with the time and `salt`).
fn random(salt: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(salt);
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// The ports of `listeners`.
pub(crate) fn ports_of(listeners: &[TcpListener]) -> Result<Vec<u16>, Error> {
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()
        .map_err(|e| Error::io("reading a free port", e))
}

/// Sends `sig` to `pid`.
pub(crate) fn signal(pid: u32, sig: libc::c_int) -> Result<(), Error> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| Error::io("pid", std::io::Error::other("out of range")))?;
    // SAFETY: kill(2) has no memory effects; a stale pid is answered ESRCH.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(Error::io("kill(2)", std::io::Error::last_os_error()))
    }
}

/// The state letter of `/proc/PID/stat` (`R`, `S`, `T` stopped, `Z`, ...), `None` once gone.
pub fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: the state follows the last ')'.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// Polls `cond` every `every` until it holds or `timeout` passes; whether it held.
pub fn wait_until(timeout: Duration, every: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(every);
    }
}

/// [`wait_until`] for a condition that yields a value: polls `f` every `every` until it gives
/// `Some`, for at most `timeout`; that value, or `None` if the time ran out first.
///
/// ```
/// use std::time::Duration;
/// let mut n = 0;
/// let got = josef_testbed::wait_for(Duration::from_secs(1), Duration::ZERO, || {
///     n += 1;
///     (n == 3).then_some(n)
/// });
/// assert_eq!(got, Some(3));
/// ```
pub fn wait_for<T>(
    timeout: Duration,
    every: Duration,
    mut f: impl FnMut() -> Option<T>,
) -> Option<T> {
    let mut out = None;
    wait_until(timeout, every, || {
        out = f();
        out.is_some()
    });
    out
}

/// The program a node runs: `PROGRAM ARGS... -c node.properties`.
#[derive(Debug, Clone)]
pub struct BrokerCommand {
    program: PathBuf,
    args: Vec<OsString>,
}

impl BrokerCommand {
    /// Any program that takes `-c FILE` (josef-broker's short form of `--config FILE`) last.
    pub fn new(program: impl Into<PathBuf>) -> BrokerCommand {
        BrokerCommand {
            program: program.into(),
            args: Vec::new(),
        }
    }

    /// Arguments put before `-c FILE`.
    pub fn args<I, S>(mut self, args: I) -> BrokerCommand
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The josef-broker binary: `$JOSEF_BROKER_BIN`, else `josef-broker` beside the running
    /// executable or one directory up (a Cargo target dir: `target/debug/deps/TEST` and
    /// `target/debug/josef-testbed` both find `target/debug/josef-broker`), else on `PATH`.
    pub fn josef_broker() -> Result<BrokerCommand, Error> {
        if let Some(p) = std::env::var_os("JOSEF_BROKER_BIN") {
            return Ok(BrokerCommand::new(p));
        }
        let exe = std::env::current_exe().ok();
        let beside = exe
            .iter()
            .flat_map(|e| e.ancestors().skip(1).take(2))
            .map(|d| d.join("josef-broker"));
        let on_path = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .map(|d| d.join("josef-broker"));
        beside
            .chain(on_path)
            .find(|p| p.is_file())
            .map(BrokerCommand::new)
            .ok_or(Error::BrokerNotFound)
    }

    /// The program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The command for one node's properties file. Its process gets SIGKILL if the thread that
    /// spawned it dies first (PR_SET_PDEATHSIG), so a killed test binary leaves no broker behind,
    /// and starts with no signal blocked.
    pub(crate) fn command(&self, config: &Path) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).arg("-c").arg(config);
        // SAFETY: prctl, getppid, sigemptyset and sigprocmask are async-signal-safe and touch no
        // memory of the parent (the set is on the child's stack).
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent died between fork and prctl: nobody would stop this process.
                if libc::getppid() == 1 {
                    return Err(std::io::Error::other("the test bed exited"));
                }
                // A mask the caller set (the CLI blocks SIGTERM to sigwait it) is inherited
                // across exec: the broker must get its SIGTERM.
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut none);
                if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct() {
        let p = free_ports(8).unwrap();
        let set: std::collections::BTreeSet<_> = p.iter().collect();
        assert_eq!(set.len(), 8);
    }

    #[test]
    fn free_ports_are_below_the_ephemeral_range() {
        let low = ephemeral_low();
        if low <= 11_000 {
            return; // No room below it on this machine: port 0's picks are used.
        }
        for p in free_ports(16).unwrap() {
            assert!((10_000..low).contains(&p), "{p} is not below {low}");
        }
    }

    #[test]
    fn proc_state_reads_this_process_and_none_for_a_missing_one() {
        assert!(matches!(proc_state(std::process::id()), Some('R' | 'S')));
        assert_eq!(proc_state(u32::MAX), None);
    }
}
