//! A cluster of nodes: the builder that lays them out per the contract, and the cluster-wide
//! operations (start all, ready, stop all, logs) and cleanup.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use crate::contract::{self, NodeValues, Properties};
use crate::faultnet::cluster::ClusterFaults;
use crate::faultnet::{FaultNet, Proxy};
use crate::node::{Node, READY_TIMEOUT, STOP_TIMEOUT};
use crate::process::{ports_of, reserve_ports, wait_until, BrokerCommand};
use crate::{client, Error, Role};

/// How a [`Cluster`] is laid out; [`Cluster::builder`].
#[derive(Debug, Default)]
pub struct ClusterBuilder {
    nodes: Vec<(i32, Role)>,
    properties: Properties,
    node_properties: Vec<(i32, String, String)>,
    timeouts: Option<Properties>,
    command: Option<BrokerCommand>,
    dir: Option<PathBuf>,
    faults: bool,
}

impl ClusterBuilder {
    fn add(mut self, n: usize, role: Role) -> Self {
        for _ in 0..n {
            let id = self.nodes.iter().map(|(id, _)| *id).max().unwrap_or(0) + 1;
            self.nodes.push((id, role));
        }
        self
    }

    /// `n` more nodes with `process.roles=broker,controller`, ids following the last.
    pub fn combined(self, n: usize) -> Self {
        self.add(n, Role::Combined)
    }

    /// `n` more controller-only nodes (quorum voters), ids following the last.
    pub fn controllers(self, n: usize) -> Self {
        self.add(n, Role::Controller)
    }

    /// `n` more broker-only nodes, ids following the last.
    pub fn brokers(self, n: usize) -> Self {
        self.add(n, Role::Broker)
    }

    /// One single-node broker (no `process.roles`: today's standalone mode).
    pub fn single(self) -> Self {
        self.add(1, Role::Single)
    }

    /// A node with a chosen id.
    pub fn node(mut self, id: i32, role: Role) -> Self {
        self.nodes.push((id, role));
        self
    }

    /// A property for every node, over the contract's and the timeouts.
    pub fn property(mut self, key: impl Into<String>, value: impl ToString) -> Self {
        contract::set(&mut self.properties, &key.into(), &value.to_string());
        self
    }

    /// A property for one node, over every other.
    pub fn node_property(mut self, id: i32, key: impl Into<String>, value: impl ToString) -> Self {
        self.node_properties
            .push((id, key.into(), value.to_string()));
        self
    }

    /// Replaces the contract's lowered timeouts (an empty list: Kafka's defaults).
    pub fn timeouts<K: Into<String>, V: ToString>(
        mut self,
        t: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        self.timeouts = Some(
            t.into_iter()
                .map(|(k, v)| (k.into(), v.to_string()))
                .collect(),
        );
        self
    }

    /// The program every node runs (default: [`BrokerCommand::josef_broker`]).
    pub fn command(mut self, command: BrokerCommand) -> Self {
        self.command = Some(command);
        self
    }

    /// Shorthand for [`command`](Self::command) with a program taking `-c FILE`.
    pub fn broker_program(self, program: impl Into<PathBuf>) -> Self {
        self.command(BrokerCommand::new(program))
    }

    /// The directory for the nodes' dirs (kept afterwards); default: a temporary one, removed on
    /// drop unless the thread is panicking.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// Puts every link between two nodes through a fault proxy (see [`crate::faultnet`]): each
    /// node is told a proxy port for each other voter in its `controller.quorum.voters`, and each
    /// broker advertises a proxy in front of its PLAINTEXT listener (the inter-broker one).
    /// Clients still bootstrap on the real ports. [`Cluster::net`] then drops, delays and cuts.
    pub fn faults(mut self, on: bool) -> Self {
        self.faults = on;
        self
    }

    /// Chooses the ports, creates the directories and computes every node's properties; starts
    /// nothing.
    pub fn build(self) -> Result<Cluster, Error> {
        let ClusterBuilder {
            nodes: layout,
            properties,
            node_properties,
            timeouts,
            command,
            dir,
            faults,
        } = self;
        check_layout(&layout)?;
        let command = match command {
            Some(c) => c,
            None => BrokerCommand::josef_broker()?,
        };
        let dir = match dir {
            Some(d) => {
                std::fs::create_dir_all(&d).map_err(|e| Error::io(d.display().to_string(), e))?;
                ClusterDir::Kept(d)
            }
            None => ClusterDir::Temp(Some(
                tempfile::Builder::new()
                    .prefix("josef-testbed-")
                    .tempdir()
                    .map_err(|e| Error::io("creating a temporary directory", e))?,
            )),
        };
        // Held until the proxies are bound, so that none of them is given a node's port.
        let reserved = reserve_ports(layout.len() * 2)?;
        let mut ports = ports_of(&reserved)?.into_iter();
        let mut nodes: Vec<Node> = layout
            .iter()
            .map(|&(id, role)| {
                let mut next = || ports.next();
                let client = role.is_broker().then(&mut next).flatten();
                let controller = role.is_controller().then(&mut next).flatten();
                let node_dir = dir.path().join(format!("node{id}"));
                Node::new(id, role, node_dir, (client, controller), command.clone())
            })
            .collect();
        let faults = if faults {
            Some(ClusterFaults::new(&nodes)?)
        } else {
            None
        };
        drop(reserved);
        let voters: Vec<String> = nodes
            .iter()
            .map(|n| match &faults {
                Some(f) => f.voters_for(n.id, &nodes),
                None => nodes
                    .iter()
                    .filter_map(|n| Some(format!("{}@127.0.0.1:{}", n.id, n.controller_port?)))
                    .collect::<Vec<_>>()
                    .join(","),
            })
            .collect();
        let timeouts = match timeouts {
            Some(t) => t,
            None => contract::timeouts()?,
        };
        for (n, voters) in nodes.iter_mut().zip(voters) {
            let advertised = faults.as_ref().and_then(|f| f.advertised_port(n.id));
            let values = NodeValues {
                node_id: n.id,
                voters,
                client_port: n.client_port,
                controller_port: n.controller_port,
                advertised_port: advertised.or(n.client_port),
                log_dirs: n.data_dir().display().to_string(),
            };
            let mut props = contract::properties(n.role, &values)?;
            // Later beats earlier: the timeouts (not for a single node, as in the Python bed), the
            // cluster's properties, the node's own.
            let timeouts = if n.role == Role::Single {
                &[][..]
            } else {
                &timeouts[..]
            };
            let own = node_properties
                .iter()
                .filter(|(id, _, _)| *id == n.id)
                .map(|(_, k, v)| (k, v));
            for (k, v) in timeouts
                .iter()
                .chain(&properties)
                .map(|(k, v)| (k, v))
                .chain(own)
            {
                contract::set(&mut props, k, v);
            }
            n.properties = props;
            std::fs::create_dir_all(&n.dir)
                .map_err(|e| Error::io(n.dir.display().to_string(), e))?;
        }
        Ok(Cluster { nodes, faults, dir })
    }

    /// [`build`](Self::build), then [`Cluster::start`].
    pub fn start(self) -> Result<Cluster, Error> {
        let mut c = self.build()?;
        c.start()?;
        Ok(c)
    }
}

fn check_layout(layout: &[(i32, Role)]) -> Result<(), Error> {
    let invalid = |s: String| Err(Error::Invalid(s));
    if layout.is_empty() {
        return invalid("no nodes".into());
    }
    let mut ids: Vec<i32> = layout.iter().map(|(id, _)| *id).collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() != layout.len() {
        return invalid(format!("duplicate node ids in {layout:?}"));
    }
    let single = layout.iter().any(|(_, r)| *r == Role::Single);
    if single && layout.len() != 1 {
        return invalid("a single-node broker runs alone".into());
    }
    if !single && !layout.iter().any(|(_, r)| r.is_controller()) {
        return invalid("a cluster needs a controller (a quorum voter)".into());
    }
    Ok(())
}

#[derive(Debug)]
enum ClusterDir {
    Kept(PathBuf),
    Temp(Option<tempfile::TempDir>),
}

impl ClusterDir {
    fn path(&self) -> &Path {
        match self {
            ClusterDir::Kept(p) => p,
            ClusterDir::Temp(Some(t)) => t.path(),
            ClusterDir::Temp(None) => Path::new(""),
        }
    }
}

/// Nodes on this machine, each `PROGRAM -c DIR/node<ID>/node.properties`, written per the cluster
/// contract of docs/cluster.md. Dropping it kills every process by PID; its directory is kept
/// (and its path printed with each node's log tail) when the thread is panicking.
#[derive(Debug)]
pub struct Cluster {
    // Declared in this order: the processes die before their proxies stop and before their
    // directories go.
    nodes: Vec<Node>,
    faults: Option<ClusterFaults>,
    dir: ClusterDir,
}

impl Cluster {
    /// A builder: add nodes, properties, a program, a directory.
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    /// The fault network between the nodes, if built with [`ClusterBuilder::faults`]: drop,
    /// delay, cut, isolate and heal links, read what went through them.
    pub fn net(&self) -> Option<&FaultNet> {
        self.faults.as_ref().map(|f| &f.net)
    }

    /// The fault proxies (advertised PLAINTEXT ones, then the controller ones), none without
    /// faults.
    pub fn proxies(&self) -> impl Iterator<Item = &Proxy> {
        self.faults.iter().flat_map(ClusterFaults::proxies)
    }

    /// The proxy node `id` advertises in front of its PLAINTEXT listener (the one replication
    /// and clients after bootstrap reach), if built with faults.
    pub fn advertised_proxy(&self, id: i32) -> Option<&Proxy> {
        self.faults.as_ref()?.advertised(id)
    }

    /// The directory holding `node<ID>/` for every node.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Each running node's client address, by node id (what the client functions take).
    pub fn client_addrs(&self) -> BTreeMap<i32, std::net::SocketAddr> {
        self.nodes()
            .filter_map(|n| Some((n.id(), n.client_addr()?)))
            .collect()
    }

    /// The nodes, in the order they were added.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter()
    }

    /// The nodes, mutably.
    pub fn nodes_mut(&mut self) -> impl Iterator<Item = &mut Node> {
        self.nodes.iter_mut()
    }

    /// The node with this `node.id`.
    pub fn node(&self, id: i32) -> Result<&Node, Error> {
        self.nodes
            .iter()
            .find(|n| n.id == id)
            .ok_or(Error::NoSuchNode(id))
    }

    /// The node with this `node.id`, mutably (to stop, kill, pause, restart it).
    pub fn node_mut(&mut self, id: i32) -> Result<&mut Node, Error> {
        self.nodes
            .iter_mut()
            .find(|n| n.id == id)
            .ok_or(Error::NoSuchNode(id))
    }

    /// `bootstrap.servers` for clients: every broker's client address.
    pub fn bootstrap(&self) -> String {
        self.nodes
            .iter()
            .filter_map(Node::client_addr)
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Launches every node not running (all at once: a quorum needs its voters), then
    /// [`wait_ready`](Self::wait_ready) within [`READY_TIMEOUT`].
    pub fn start(&mut self) -> Result<(), Error> {
        for n in &mut self.nodes {
            if !n.is_running() {
                n.launch()?;
            }
        }
        self.wait_ready(READY_TIMEOUT)
    }

    /// Within `timeout` in all: every running, unpaused node answers ApiVersions, then every
    /// such broker's Metadata lists every such broker (they registered with the controller).
    /// Nodes the test stopped or killed are left out; one that exited on its own is an error.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<(), Error> {
        let deadline = Instant::now() + timeout;
        let left = || deadline.saturating_duration_since(Instant::now());
        for n in &mut self.nodes {
            if n.crashed() {
                return Err(n.exited_error());
            }
            if n.is_running() && !n.is_paused() {
                n.wait_ready(left())?;
            }
        }
        let brokers: Vec<(i32, std::net::SocketAddr)> = self
            .nodes
            .iter_mut()
            .filter(|n| n.role.is_broker() && n.role != Role::Single)
            .filter_map(|n| {
                (n.is_running() && !n.is_paused()).then(|| n.client_addr().map(|a| (n.id, a)))?
            })
            .collect();
        let want: Vec<i32> = brokers.iter().map(|(id, _)| *id).collect();
        let mut seen = BTreeMap::new();
        let ok = wait_until(left(), Duration::from_millis(200), || {
            for (id, addr) in &brokers {
                seen.insert(*id, client::broker_ids(*addr).map_err(|e| e.to_string()));
            }
            seen.values().all(|ids| {
                ids.as_ref()
                    .is_ok_and(|ids| want.iter().all(|w| ids.contains(w)))
            })
        });
        if ok {
            return Ok(());
        }
        Err(Error::Timeout {
            what: format!(
                "every broker's Metadata listing brokers {want:?} (last seen {seen:?})\n{}",
                self.logs(TAIL)
            ),
            timeout,
        })
    }

    /// SIGTERM to every running node at once, then waits for each (killing those still running
    /// after [`STOP_TIMEOUT`]); the exit statuses by node id, or the first node that had to be
    /// killed.
    pub fn stop_all(&mut self) -> Result<BTreeMap<i32, ExitStatus>, Error> {
        for n in &mut self.nodes {
            if n.is_running() {
                n.terminate()?;
            }
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        let mut codes = BTreeMap::new();
        let mut first_error = None;
        for n in &mut self.nodes {
            if n.pid().is_some() {
                match n.wait_exit(deadline.saturating_duration_since(Instant::now())) {
                    Ok(status) => {
                        codes.insert(n.id, status);
                    }
                    // Killed already; the others still get their wait.
                    Err(e) => first_error = first_error.or(Some(e)),
                }
            }
        }
        first_error.map_or(Ok(codes), Err)
    }

    /// The last `lines` lines of every node's log, for failure messages.
    pub fn logs(&self, lines: usize) -> String {
        self.nodes
            .iter()
            .map(|n| n.log_tail(lines))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Log lines per node in failure messages.
const TAIL: usize = 30;

impl Drop for Cluster {
    /// Kills every process by PID (each [`Node`]'s drop); on a panicking thread keeps the directory
    /// and prints where it is, with each node's log tail.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        if let ClusterDir::Temp(t) = &mut self.dir {
            if let Some(t) = t.take() {
                self.dir = ClusterDir::Kept(t.keep());
            }
        }
        eprintln!(
            "josef-testbed: the test failed; the cluster's directory is kept: {}",
            self.dir().display()
        );
        eprintln!("{}", self.logs(TAIL));
    }
}
