//! Three voters in one process, each on its own runtime and loopback port, and the helpers to
//! crash, restart and drive them (shared by the quorum and the observer tests).

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use josef_quorum::{MetadataQuorum, QuorumConfig, QuorumError, StreamConnector, TcpConnector};
use tokio::runtime::Runtime;

use super::{init_tracing, wait_until, Recorder};

pub const WAIT: Duration = Duration::from_secs(15);

pub struct Node {
    pub id: u64,
    pub addr: SocketAddr,
    pub dir: PathBuf,
    pub rt: Option<Runtime>,
    pub quorum: Option<MetadataQuorum>,
    pub sm: Arc<Recorder>,
}

pub struct Cluster {
    pub voters: BTreeMap<u64, String>,
    pub nodes: Vec<Node>,
    pub snapshot_every: u64,
    /// How the voters dial each other (plain TCP unless a test slows the links).
    pub connector: Arc<dyn StreamConnector>,
    /// An election timeout set through `QuorumConfig::set_election_timeout` (the heartbeat follows
    /// it) instead of the fast fixed timeouts below.
    pub election_timeout_ms: Option<u64>,
    pub _tmp: tempfile::TempDir,
}

impl Cluster {
    pub fn new(n: u64, snapshot_every: u64) -> Cluster {
        Cluster::with_links(n, snapshot_every, Arc::new(TcpConnector), None)
    }

    /// `n` voters dialling each other through `connector`, with `election_timeout_ms` if given.
    pub fn with_links(
        n: u64,
        snapshot_every: u64,
        connector: Arc<dyn StreamConnector>,
        election_timeout_ms: Option<u64>,
    ) -> Cluster {
        init_tracing();
        let tmp = tempfile::tempdir().unwrap();
        let mut listeners = Vec::new();
        for _ in 0..n {
            listeners.push(TcpListener::bind("127.0.0.1:0").unwrap());
        }
        let voters: BTreeMap<u64, String> = listeners
            .iter()
            .enumerate()
            .map(|(i, l)| (i as u64 + 1, l.local_addr().unwrap().to_string()))
            .collect();
        let mut cluster = Cluster {
            voters,
            nodes: Vec::new(),
            snapshot_every,
            connector,
            election_timeout_ms,
            _tmp: tmp,
        };
        for (i, l) in listeners.into_iter().enumerate() {
            let id = i as u64 + 1;
            let dir = cluster
                ._tmp
                .path()
                .join(format!("node{id}"))
                .join("__cluster_metadata-0");
            let addr = l.local_addr().unwrap();
            let mut node = Node {
                id,
                addr,
                dir,
                rt: None,
                quorum: None,
                sm: Arc::new(Recorder::default()),
            };
            cluster.start(&mut node, Some(l));
            cluster.nodes.push(node);
        }
        cluster
    }

    pub fn config(&self, node: &Node) -> QuorumConfig {
        let mut c = QuorumConfig::new(node.id, self.voters.clone(), node.dir.clone());
        c.election_timeout_ms = 300;
        c.heartbeat_interval_ms = 50;
        c.request_timeout_ms = 500;
        c.fetch_timeout_ms = 600;
        c.propose_timeout_ms = 5000;
        c.snapshot_every_n_entries = self.snapshot_every;
        c.entries_kept_after_snapshot = 2;
        c.segment_bytes = 256;
        if let Some(ms) = self.election_timeout_ms {
            c.set_election_timeout(ms);
            c.fetch_timeout_ms = 2 * ms;
        }
        c
    }

    /// Starts `node` on a fresh runtime with a fresh state machine (as a new process would).
    pub fn start(&self, node: &mut Node, listener: Option<TcpListener>) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        node.sm = Arc::new(Recorder::default());
        let q = rt
            .block_on(MetadataQuorum::start_with_connector(
                self.config(node),
                node.sm.clone(),
                self.connector.clone(),
            ))
            .unwrap();
        let listener = listener.unwrap_or_else(|| {
            // The port was freed when the crashed node's runtime went away.
            let mut bound = None;
            wait_until(WAIT, || {
                bound = TcpListener::bind(node.addr).ok();
                bound.is_some()
            });
            bound.expect("rebind the node's port")
        });
        rt.block_on(async { q.serve_listener(listener) }).unwrap();
        node.rt = Some(rt);
        node.quorum = Some(q);
    }

    /// Crashes a node: its runtime is dropped with every task, nothing is stopped gracefully.
    pub fn kill(&mut self, id: u64) {
        let node = self.node_mut(id);
        node.quorum = None;
        if let Some(rt) = node.rt.take() {
            rt.shutdown_background();
        }
    }

    pub fn restart(&mut self, id: u64) {
        let i = self.nodes.iter().position(|n| n.id == id).unwrap();
        let addr = self.nodes[i].addr;
        let mut node = std::mem::replace(
            &mut self.nodes[i],
            Node {
                id,
                addr,
                dir: PathBuf::new(),
                rt: None,
                quorum: None,
                sm: Arc::default(),
            },
        );
        self.start(&mut node, None);
        self.nodes[i] = node;
    }

    pub fn node(&self, id: u64) -> &Node {
        self.nodes.iter().find(|n| n.id == id).unwrap()
    }

    pub fn node_mut(&mut self, id: u64) -> &mut Node {
        self.nodes.iter_mut().find(|n| n.id == id).unwrap()
    }

    pub fn live(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| n.quorum.is_some())
    }

    /// Waits until every live node names the same leader (one of them), and returns it.
    pub fn agreed_leader(&self) -> Option<(u64, u64)> {
        let mut found = None;
        wait_until(WAIT, || {
            let views: Vec<_> = self
                .live()
                .map(|n| n.quorum.as_ref().unwrap().leader())
                .collect();
            let first = views[0];
            let ok = first.is_some_and(|(l, _)| self.live().any(|n| n.id == l))
                && views.iter().all(|v| *v == first);
            if ok {
                found = first;
            }
            ok
        });
        found
    }

    pub fn propose(&self, id: u64, text: &str) -> Result<u64, QuorumError> {
        let n = self.node(id);
        let q = n.quorum.as_ref().unwrap();
        n.rt.as_ref().unwrap().block_on(q.propose(vec![
            Bytes::from(text.to_string()),
            Bytes::from_static(b"r2"),
        ]))
    }
}

impl Cluster {
    /// Commits one batch through whoever leads, retrying (under a new text) when leadership
    /// moves meanwhile, as a controller would. Returns the index and the text that committed.
    pub fn commit(&self, text: &str) -> (u64, String) {
        let deadline = Instant::now() + WAIT;
        for attempt in 0.. {
            assert!(Instant::now() < deadline, "{text} did not commit");
            let Some((leader, _)) = self.agreed_leader() else {
                continue;
            };
            let t = if attempt == 0 {
                text.to_string()
            } else {
                format!("{text}#{attempt}")
            };
            match self.propose(leader, &t) {
                Ok(index) => return (index, t),
                Err(QuorumError::NotLeader { .. } | QuorumError::Timeout { .. }) => continue,
                Err(e) => panic!("propose {t}: {e}"),
            }
        }
        unreachable!()
    }

    /// Whether every live node applied the same batches, among them every `committed` one at its
    /// index.
    pub fn consistent(&self, committed: &[(u64, String)]) -> bool {
        let want = expected(committed);
        let views: Vec<_> = self.live().map(|n| n.sm.texts()).collect();
        views
            .iter()
            .all(|v| v == &views[0] && want.iter().all(|w| v.contains(w)))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            n.quorum = None;
            if let Some(rt) = n.rt.take() {
                rt.shutdown_background();
            }
        }
    }
}

pub fn expected(committed: &[(u64, String)]) -> Vec<(u64, String)> {
    committed
        .iter()
        .map(|(i, t)| (*i, format!("{t}|r2")))
        .collect()
}
