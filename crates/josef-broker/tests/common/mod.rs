//! Helpers of the process-level cluster tests: `josef-broker -c node.properties` processes on
//! free loopback ports with temp data dirs, and single Kafka requests to them. Every wait is on
//! a condition, bounded; processes are stopped by PID (never by name).
#![allow(dead_code)] // each test binary uses a part

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use josef_protocol::messages::create_topics_request::CreatableTopic;
use josef_protocol::messages::{
    CreateTopicsRequest, CreateTopicsResponse, MetadataRequest, MetadataResponse,
};
use josef_protocol::{RequestBody, ResponseBody};

pub const START: Duration = Duration::from_secs(30);
pub const SETTLE: Duration = Duration::from_secs(20);
pub const PROTOCOLS: &str = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT";

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Polls `cond` every 50 ms until it holds or `timeout` passes; whether it held (the test bed's).
pub fn wait_until(timeout: Duration, cond: impl FnMut() -> bool) -> bool {
    josef_testbed::wait_until(timeout, Duration::from_millis(50), cond)
}

/// One `josef-broker -c node.properties` process, restartable on the same config and data.
pub struct Node {
    pub id: i32,
    pub dir: PathBuf,
    config: PathBuf,
    child: Child,
    stdout: Arc<Mutex<Vec<String>>>,
    /// Not running: killed or stopped (and reaped) by the test already.
    pub killed: bool,
}

impl Node {
    /// Writes `<root>/node<id>/node.properties` (`node.id`, `log.dirs` under it, `props`, and the
    /// lowered broker timeouts docs/cluster.md allows) and starts it.
    pub fn spawn(root: &Path, id: i32, props: &[(&str, String)]) -> Node {
        let dir = root.join(format!("node{id}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = format!("node.id={id}\nlog.dirs={}\n", dir.join("data").display());
        for (k, v) in props {
            text.push_str(&format!("{k}={v}\n"));
        }
        text.push_str("broker.session.timeout.ms=3000\nbroker.heartbeat.interval.ms=500\n");
        let config = dir.join("node.properties");
        std::fs::write(&config, text).unwrap();
        let (child, stdout) = start_process(&dir, &config);
        Node {
            id,
            dir,
            config,
            child,
            stdout,
            killed: false,
        }
    }

    /// The node's data dir (its `log.dirs`).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Starts it again on the same config and data (after [`kill`](Self::kill) or
    /// [`stop`](Self::stop)).
    pub fn restart(&mut self) {
        assert!(self.killed, "node {} is still running", self.id);
        let (child, stdout) = start_process(&self.dir, &self.config);
        self.child = child;
        self.stdout = stdout;
        self.killed = false;
    }

    /// SIGKILL by PID, and reap it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.killed = true;
    }

    /// Sends SIGTERM by PID (see [`await_stop`](Self::await_stop)).
    pub fn term(&self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
    }

    /// SIGTERM by PID and wait for the exit (SIGKILL after `bound`); its exit status.
    pub fn stop(&mut self, bound: Duration) -> Option<ExitStatus> {
        self.term();
        self.await_stop(bound)
    }

    /// Waits for the exit after [`term`](Self::term) (SIGKILL after `bound`); its exit status.
    pub fn await_stop(&mut self, bound: Duration) -> Option<ExitStatus> {
        let status = self.wait_exit(bound);
        if status.is_none() {
            self.kill();
        }
        self.killed = true;
        status
    }

    /// Waits up to `bound` for the process to exit on its own; its status, `None` if it did not.
    pub fn wait_exit(&mut self, bound: Duration) -> Option<ExitStatus> {
        let mut status = None;
        wait_until(bound, || {
            status = self.child.try_wait().ok().flatten();
            status.is_some()
        });
        if status.is_some() {
            self.killed = true;
        }
        status
    }

    /// The address of its first `listening on` line, once printed.
    pub fn listening(&self) -> Option<SocketAddr> {
        self.stdout
            .lock()
            .unwrap()
            .iter()
            .find_map(|l| l.strip_prefix("listening on ")?.trim().parse().ok())
    }

    /// Its stderr (the log) since the first start.
    pub fn stderr(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(self.dir.join("stderr.log")) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    /// The last lines of its log, for failure messages.
    pub fn log_tail(&self) -> String {
        let s = self.stderr();
        let lines: Vec<&str> = s.lines().collect();
        let tail = lines[lines.len().saturating_sub(25)..].join("\n");
        format!("--- node {} stderr (tail) ---\n{tail}", self.id)
    }
}

/// Starts the binary on `config`, its stderr appended to `<dir>/stderr.log`, its stdout lines
/// collected.
fn start_process(dir: &Path, config: &Path) -> (Child, Arc<Mutex<Vec<String>>>) {
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("stderr.log"))
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_josef-broker"))
        .arg("-c")
        .arg(config)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let out = child.stdout.take().unwrap();
    let lines = stdout.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            lines.lock().unwrap().push(line);
        }
    });
    (child, stdout)
}

/// The nodes of one test; stopped by PID when dropped (SIGTERM, then SIGKILL after a bound).
pub struct Nodes(pub Vec<Node>);

impl Nodes {
    pub fn logs(&self) -> String {
        self.0
            .iter()
            .map(Node::log_tail)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Waits until every running node printed `listening on`; their addresses (in node order,
    /// `None` for a node not running).
    pub fn listening(&self) -> Vec<SocketAddr> {
        let ok = wait_until(START, || {
            self.0.iter().all(|n| n.killed || n.listening().is_some())
        });
        assert!(ok, "every node prints `listening on`\n{}", self.logs());
        self.0.iter().filter_map(|n| n.listening()).collect()
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for n in self.0.iter().filter(|n| !n.killed) {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(n.child.id().to_string())
                .status();
        }
        for n in self.0.iter_mut().filter(|n| !n.killed) {
            let exited = wait_until(Duration::from_secs(10), || {
                matches!(n.child.try_wait(), Ok(Some(_)))
            });
            if !exited {
                let _ = n.child.kill();
            }
            let _ = n.child.wait();
        }
    }
}

/// One Kafka request on a fresh connection; `None` on any failure (the node may be starting).
/// The test bed's client: timeouts, and a bounded response size.
pub fn call(addr: SocketAddr, version: i16, body: RequestBody) -> Option<ResponseBody> {
    josef_testbed::client::call(addr, version, body).ok()
}

pub fn metadata(addr: SocketAddr) -> Option<MetadataResponse> {
    let req = MetadataRequest {
        topics: None,
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    match call(addr, 12, req.into())? {
        ResponseBody::Metadata(m) => Some(m),
        _ => None,
    }
}

pub fn broker_ids(m: &MetadataResponse) -> Vec<i32> {
    let mut ids: Vec<i32> = m.brokers.iter().map(|b| b.node_id).collect();
    ids.sort_unstable();
    ids
}

pub fn create_topics(
    addr: SocketAddr,
    topics: Vec<CreatableTopic>,
) -> Option<CreateTopicsResponse> {
    let req = CreateTopicsRequest {
        topics,
        timeout_ms: 10_000,
        ..Default::default()
    };
    match call(addr, 7, req.into())? {
        ResponseBody::CreateTopics(r) => Some(r),
        _ => None,
    }
}

/// `controller.quorum.voters` of nodes 1.. on `ports`.
pub fn voters(ports: &[u16]) -> String {
    ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}@127.0.0.1:{p}", i + 1))
        .collect::<Vec<_>>()
        .join(",")
}

/// The settings of a combined (`broker,controller`) node of the quorum `voters`, with its
/// client port `bport` and CONTROLLER port `cport`.
pub fn combined(voters: &str, bport: u16, cport: u16) -> Vec<(&'static str, String)> {
    vec![
        ("process.roles", "broker,controller".into()),
        ("controller.quorum.voters", voters.into()),
        (
            "listeners",
            format!("PLAINTEXT://127.0.0.1:{bport},CONTROLLER://127.0.0.1:{cport}"),
        ),
        (
            "advertised.listeners",
            format!("PLAINTEXT://127.0.0.1:{bport}"),
        ),
        ("controller.listener.names", "CONTROLLER".into()),
        ("inter.broker.listener.name", "PLAINTEXT".into()),
        ("listener.security.protocol.map", PROTOCOLS.into()),
    ]
}

/// Starts 3 combined nodes (ids 1, 2, 3) under `root` on free ports, each with `extra` settings
/// added; the nodes and their client ports.
pub fn three_combined(root: &Path, extra: &[(&'static str, String)]) -> (Nodes, Vec<u16>) {
    let cports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let bports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let quorum = voters(&cports);
    let nodes = (0..3)
        .map(|i| {
            let mut props = combined(&quorum, bports[i], cports[i]);
            props.extend_from_slice(extra);
            Node::spawn(root, i as i32 + 1, &props)
        })
        .collect();
    (Nodes(nodes), bports)
}
