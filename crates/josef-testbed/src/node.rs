//! One node: its directory, properties file, process and log.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::contract::{self, Properties};
use crate::disk::{DiskKind, DiskMount};
use crate::process::{proc_state, signal, wait_until, BrokerCommand};
use crate::{client, Error, Role};

/// How long `stop` waits for an exit after SIGTERM before it kills.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `start` waits for a node to answer ApiVersions.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long pause/resume/kill wait for the kernel to show the new state.
const SIGNAL_TIMEOUT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);
/// Lines of log put in error messages.
const TAIL_LINES: usize = 40;

/// One broker process of a [`Cluster`](crate::Cluster), by PID, in `DIR/node<ID>`: its
/// `node.properties`, `node.log` (stdout and stderr, appended across restarts) and `data/`
/// (`log.dirs`, kept across restarts). Its ports stay the same across restarts.
#[derive(Debug)]
pub struct Node {
    pub(crate) id: i32,
    pub(crate) role: Role,
    pub(crate) dir: PathBuf,
    pub(crate) client_port: Option<u16>,
    pub(crate) controller_port: Option<u16>,
    pub(crate) properties: Properties,
    pub(crate) command: BrokerCommand,
    child: Option<Child>,
    paused: bool,
    /// SIGTERM was sent to the current process (its exit is expected).
    stopping: bool,
    /// The last process exited on its own (not stopped or killed by the test bed).
    crashed: bool,
    log_start: u64,
    exits: Vec<ExitStatus>,
    /// The PID of the current process, 0 without one; shared with the fault proxies, which name
    /// a connection's source by the node process holding its socket.
    pub(crate) pid_cell: Arc<AtomicU32>,
    /// A filesystem mounted on `data/` by the test; unmounted after the process is killed.
    disk: Option<DiskMount>,
}

impl Node {
    pub(crate) fn new(
        id: i32,
        role: Role,
        dir: PathBuf,
        ports: (Option<u16>, Option<u16>),
        command: BrokerCommand,
    ) -> Node {
        Node {
            id,
            role,
            dir,
            client_port: ports.0,
            controller_port: ports.1,
            properties: Vec::new(),
            command,
            child: None,
            paused: false,
            stopping: false,
            crashed: false,
            log_start: 0,
            exits: Vec::new(),
            pid_cell: Arc::new(AtomicU32::new(0)),
            disk: None,
        }
    }

    /// `node.id`.
    pub fn id(&self) -> i32 {
        self.id
    }

    /// Its `process.roles`.
    pub fn role(&self) -> Role {
        self.role
    }

    /// `DIR/node<ID>`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `log.dirs`.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The entries of `meta.properties` in its data dir (the `cluster.id` and `node.id` the broker
    /// keeps there), read now.
    pub fn meta_properties(&self) -> Result<Properties, Error> {
        let path = self.data_dir().join("meta.properties");
        let text =
            std::fs::read_to_string(&path).map_err(|e| Error::io(path.display().to_string(), e))?;
        Ok(contract::parse(&text))
    }

    /// `cluster.id` of its `meta.properties` ([`meta_properties`](Self::meta_properties)), `None`
    /// while the file or the entry is missing.
    pub fn cluster_id(&self) -> Option<String> {
        let props = self.meta_properties().ok()?;
        props
            .into_iter()
            .find(|(k, _)| k == "cluster.id")
            .map(|(_, v)| v)
    }

    /// The properties file it runs with.
    pub fn properties_path(&self) -> PathBuf {
        self.dir.join("node.properties")
    }

    /// The file its stdout and stderr go to.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("node.log")
    }

    /// The properties written at each start (edit with [`set_property`](Self::set_property)).
    pub fn properties(&self) -> &[(String, String)] {
        &self.properties
    }

    /// Sets a property for the next start (replacing it in place if present).
    pub fn set_property(&mut self, key: &str, value: &str) {
        contract::set(&mut self.properties, key, value);
    }

    /// The PLAINTEXT listener's port (not on a controller-only node).
    pub fn client_port(&self) -> Option<u16> {
        self.client_port
    }

    /// The CONTROLLER listener's port (not on a broker-only node).
    pub fn controller_port(&self) -> Option<u16> {
        self.controller_port
    }

    /// `127.0.0.1:<client port>`, for clients (not on a controller-only node).
    pub fn client_addr(&self) -> Option<SocketAddr> {
        self.client_port
            .map(|p| SocketAddr::from(([127, 0, 0, 1], p)))
    }

    /// Where readiness is asked: the client listener, or the CONTROLLER one of a controller-only
    /// node (it answers ApiVersions too).
    pub fn ready_addr(&self) -> SocketAddr {
        let port = self.client_port.or(self.controller_port).unwrap_or(0);
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    /// The PID of its current process, while it has one (running or paused).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Mounts a new `kind` filesystem of `size_mb` MiB on its data dir (see [`DiskMount`]), to
    /// fill or make read-only while it runs; only while it is not running, since a broker keeps
    /// files open there. Unmounted when the node is dropped, after its process is killed.
    pub fn mount_disk(&mut self, kind: DiskKind, size_mb: u64) -> Result<&mut DiskMount, Error> {
        if self.is_running() {
            return Err(Error::AlreadyRunning {
                node: self.id,
                pid: self.pid().unwrap_or(0),
            });
        }
        if self.disk.is_some() {
            return Err(Error::Invalid(format!(
                "node {} already has a disk mounted",
                self.id
            )));
        }
        Ok(self
            .disk
            .insert(DiskMount::mount(self.data_dir(), kind, size_mb)?))
    }

    /// The filesystem [`mount_disk`](Self::mount_disk) put under its data dir.
    pub fn disk(&self) -> Option<&DiskMount> {
        self.disk.as_ref()
    }

    /// The same, mutably (to resize it).
    pub fn disk_mut(&mut self) -> Option<&mut DiskMount> {
        self.disk.as_mut()
    }

    /// Whether its process is alive (a paused one is).
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(None)) => true,
            Some(Ok(Some(status))) => {
                self.exits.push(status);
                self.child = None;
                self.pid_cell.store(0, Ordering::SeqCst);
                self.paused = false;
                self.crashed = !self.stopping;
                false
            }
            Some(Err(_)) | None => false,
        }
    }

    /// Whether its last process exited on its own (not by [`stop`](Self::stop) or
    /// [`kill9`](Self::kill9)).
    pub fn crashed(&mut self) -> bool {
        self.is_running();
        self.crashed
    }

    /// Whether it was paused (SIGSTOP) and not resumed.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// The exit statuses of its processes so far, oldest first.
    pub fn exits(&self) -> &[ExitStatus] {
        &self.exits
    }

    /// Writes `node.properties` and spawns the process without waiting for it (a quorum needs its
    /// peers up before any node is ready).
    pub fn launch(&mut self) -> Result<(), Error> {
        if self.is_running() {
            return Err(Error::AlreadyRunning {
                node: self.id,
                pid: self.pid().unwrap_or(0),
            });
        }
        let data = self.data_dir();
        std::fs::create_dir_all(&data).map_err(|e| Error::io(data.display().to_string(), e))?;
        let config = self.properties_path();
        std::fs::write(&config, contract::render(&self.properties))
            .map_err(|e| Error::io(config.display().to_string(), e))?;
        let log_path = self.log_path();
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| Error::io(log_path.display().to_string(), e))?;
        self.log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let marker = format!(
            "==== testbed: starting node {} at unix {}s\n",
            self.id,
            now.as_secs()
        );
        log.write_all(marker.as_bytes())
            .map_err(|e| Error::io(log_path.display().to_string(), e))?;
        let err = log
            .try_clone()
            .map_err(|e| Error::io(log_path.display().to_string(), e))?;
        let mut cmd = self.command.command(&config);
        for (k, v) in contract::env()? {
            if std::env::var_os(&k).is_none() {
                cmd.env(k, v);
            }
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| Error::io(format!("spawning {}", self.command.program().display()), e))?;
        self.pid_cell.store(child.id(), Ordering::SeqCst);
        self.child = Some(child);
        self.paused = false;
        self.stopping = false;
        self.crashed = false;
        Ok(())
    }

    /// Waits until it answers ApiVersions, at most `timeout`; fails at once if it exits.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<(), Error> {
        let addr = self.ready_addr();
        let mut exited = false;
        let ready = wait_until(timeout, Duration::from_millis(50), || {
            exited = !self.is_running();
            exited || client::api_versions_ok(addr)
        });
        if exited {
            return Err(self.exited_error());
        }
        if !ready {
            return Err(Error::NotReady {
                node: self.id,
                addr,
                timeout,
                log: self.log_tail(TAIL_LINES),
            });
        }
        Ok(())
    }

    /// The error for a process that exited while it should have been running.
    pub(crate) fn exited_error(&self) -> Error {
        let status = self.exits.last().map(|s| s.to_string()).unwrap_or_default();
        Error::Exited {
            node: self.id,
            status,
            log: self.log_tail(TAIL_LINES),
        }
    }

    /// [`launch`](Self::launch), then [`wait_ready`](Self::wait_ready) within [`READY_TIMEOUT`].
    pub fn start(&mut self) -> Result<(), Error> {
        self.launch()?;
        self.wait_ready(READY_TIMEOUT)
    }

    /// SIGTERM (and SIGCONT if paused), then waits for the exit within [`STOP_TIMEOUT`]; its
    /// status. A node still running then is killed (-9) and this is an error.
    pub fn stop(&mut self) -> Result<ExitStatus, Error> {
        self.stop_within(STOP_TIMEOUT)
    }

    /// [`stop`](Self::stop) with another bound.
    pub fn stop_within(&mut self, timeout: Duration) -> Result<ExitStatus, Error> {
        self.terminate()?;
        self.wait_exit(timeout)
    }

    /// Sends SIGTERM (and SIGCONT if paused) without waiting.
    pub fn terminate(&mut self) -> Result<(), Error> {
        let pid = self.running_pid()?;
        self.stopping = true;
        signal(pid, libc::SIGTERM)?;
        if self.paused {
            signal(pid, libc::SIGCONT)?;
            self.paused = false;
        }
        Ok(())
    }

    /// Waits for the process to exit within `timeout` (killing it then); its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus, Error> {
        if !wait_until(timeout, POLL, || !self.is_running()) {
            self.kill9()?;
            return Err(Error::NoExit {
                node: self.id,
                timeout,
            });
        }
        self.exits.last().copied().ok_or(Error::NotRunning(self.id))
    }

    /// SIGKILL, and reaps it; its status (killed by signal 9).
    pub fn kill9(&mut self) -> Result<ExitStatus, Error> {
        self.running_pid()?;
        let mut child = self.child.take().ok_or(Error::NotRunning(self.id))?;
        self.pid_cell.store(0, Ordering::SeqCst);
        let _ = child.kill();
        let status = child.wait().map_err(|e| Error::io("waitpid", e))?;
        self.exits.push(status);
        self.paused = false;
        Ok(status)
    }

    /// SIGSTOP, returning once /proc shows the process stopped.
    pub fn pause(&mut self) -> Result<(), Error> {
        let pid = self.running_pid()?;
        signal(pid, libc::SIGSTOP)?;
        self.paused = true;
        self.wait_state(pid, "stopped by SIGSTOP", |s| matches!(s, Some('T' | 't')))
    }

    /// SIGCONT, returning once /proc shows the process no longer stopped.
    pub fn resume(&mut self) -> Result<(), Error> {
        let pid = self.running_pid()?;
        signal(pid, libc::SIGCONT)?;
        self.paused = false;
        self.wait_state(pid, "running after SIGCONT", |s| {
            !matches!(s, Some('T' | 't'))
        })
    }

    fn wait_state(
        &self,
        pid: u32,
        what: &str,
        ok: impl Fn(Option<char>) -> bool,
    ) -> Result<(), Error> {
        if wait_until(SIGNAL_TIMEOUT, Duration::from_millis(5), || {
            ok(proc_state(pid))
        }) {
            Ok(())
        } else {
            Err(Error::Timeout {
                what: format!("node {} {what} (state {:?})", self.id, proc_state(pid)),
                timeout: SIGNAL_TIMEOUT,
            })
        }
    }

    /// [`stop`](Self::stop) (SIGTERM), then [`start`](Self::start) on the same data dir and ports;
    /// the stopped process's status.
    pub fn restart(&mut self) -> Result<ExitStatus, Error> {
        let status = self.stop()?;
        self.start()?;
        Ok(status)
    }

    /// The process state letter from /proc (`R`, `S`, `T` stopped, ...), `None` without a process.
    pub fn proc_state(&self) -> Option<char> {
        self.pid().and_then(proc_state)
    }

    fn running_pid(&mut self) -> Result<u32, Error> {
        if self.is_running() {
            self.pid().ok_or(Error::NotRunning(self.id))
        } else {
            Err(Error::NotRunning(self.id))
        }
    }

    /// Its whole log, across restarts (empty if there is none yet).
    pub fn log(&self) -> String {
        self.read_log(0)
    }

    /// The log of its current (or last) process only.
    pub fn current_log(&self) -> String {
        self.read_log(self.log_start)
    }

    /// The last `lines` lines of its log, headed by the node and the file's path.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = self.log();
        let all: Vec<&str> = log.lines().collect();
        let tail = all[all.len().saturating_sub(lines)..].join("\n");
        format!(
            "--- node {} ({}) ---\n{tail}",
            self.id,
            self.log_path().display()
        )
    }

    fn read_log(&self, from: u64) -> String {
        let mut bytes = Vec::new();
        if let Ok(mut f) = File::open(self.log_path()) {
            if f.seek(SeekFrom::Start(from)).is_ok() {
                let _ = f.read_to_end(&mut bytes);
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Drop for Node {
    /// Kills its process by PID (a paused one too) and reaps it.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
