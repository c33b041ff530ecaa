//! Network faults between nodes, without root: TCP proxies in front of every node's CONTROLLER
//! and inter-broker (PLAINTEXT) listeners, and one table of link rules they all read. The same
//! model and vocabulary as `tests/e2e/faultproxy.py`.
//!
//! A *link* is an ordered pair `(src, dst)` of [`Endpoint`]s: nodes, or [`Endpoint::Client`] for
//! anything else. A rule on `(src, dst)` governs the bytes *sent by src to dst*, whichever side
//! opened the TCP connection: on a connection A opened to B, A's requests go A->B and B's
//! responses B->A. So `net.drop(1, 2, Way::OneWay)` stalls only what node 1 sends node 2.
//!
//! - [`drop`](FaultNet::drop) (blackhole): bytes are not delivered, as if every packet were
//!   lost; nothing is discarded (that would corrupt the stream's framing when the link heals,
//!   which TCP never does), the stream stalls and flows again on [`heal`](FaultNet::heal). A new
//!   connection between endpoints whose link is dropped either way is accepted by the proxy but
//!   not connected onward until it heals (a handshake needs both directions).
//! - [`delay`](FaultNet::delay): every chunk is delivered that long after the proxy read it.
//! - [`cut`](FaultNet::cut): open connections between the two are closed now, and new ones are
//!   reset right after accept until healed.
//! - [`isolate`](FaultNet::isolate): `drop` between one node and each of the others.
//!
//! With [`ClusterBuilder::faults`](crate::ClusterBuilder::faults), node `i` reaches voter `j`
//! through a proxy port only `i` is given (its own `controller.quorum.voters` line), so the
//! source is known; a broker's advertised listener is one proxy per broker, the same address for
//! every source (it comes from the metadata), so that proxy names the source of each connection
//! by the node process holding the connecting socket (/proc). Clients bootstrap on the real
//! ports; what they reach through advertised addresses is the source `Client`.
//!
//! ```
//! use std::io::{Read, Write};
//! use std::net::{TcpListener, TcpStream};
//! use std::time::Duration;
//! use josef_testbed::faultnet::{Endpoint, FaultNet, Source, Way};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let echo = TcpListener::bind("127.0.0.1:0")?;
//! let target = echo.local_addr()?;
//! std::thread::spawn(move || {
//!     for mut s in echo.incoming().flatten() {
//!         let mut b = [0u8; 5];
//!         if s.read_exact(&mut b).is_ok() {
//!             let _ = s.write_all(&b);
//!         }
//!     }
//! });
//! let net = FaultNet::new();
//! // Everything through this proxy is what node 1 sends node 2 (and 2's answers).
//! let proxy = net.proxy(target, Endpoint::Node(2), Source::Fixed(Endpoint::Node(1)))?;
//! net.delay(1, 2, Duration::from_millis(300), Way::OneWay);
//! let mut s = TcpStream::connect(proxy.addr())?;
//! let t = std::time::Instant::now();
//! s.write_all(b"hello")?;
//! let mut back = [0u8; 5];
//! s.read_exact(&mut back)?;
//! assert_eq!(&back, b"hello");
//! assert!(t.elapsed() >= Duration::from_millis(300));
//! assert_eq!(net.describe(), "1->2: delay 300ms");
//! net.heal();
//! # Ok(()) }
//! ```

pub(crate) mod cluster;
mod procfs;
mod proxy;
mod rules;

pub use procfs::{pid_holds_inode, socket_inode};
pub use proxy::{Proxy, Source};
pub use rules::{Endpoint, Rule, Way};

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use crate::Error;
use proxy::Conn;
use rules::Rules;

/// The rule table shared by every proxy of one cluster, keyed by directed link. Cloning it gives
/// another handle on the same table.
#[derive(Debug, Clone, Default)]
pub struct FaultNet {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    rules: RwLock<Rules>,
    generation: AtomicU64,
    /// Open connections, for `cut`; dead entries are pruned as new ones come.
    conns: Mutex<Vec<Weak<Conn>>>,
    stats: Mutex<BTreeMap<(Endpoint, Endpoint), LinkStats>>,
}

/// What went through one link so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Connections opened by `src` to `dst` that a proxy accepted (refused ones too).
    pub accepted: u64,
    /// Bytes delivered from `src` to `dst`.
    pub delivered: u64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panicking proxy thread leaves the data consistent (every update is one statement).
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl FaultNet {
    /// An empty table: every link passes.
    pub fn new() -> FaultNet {
        FaultNet::default()
    }

    /// A proxy on a free 127.0.0.1 port forwarding to `target`, the endpoint `dst`, whose
    /// connections come from `source`; it runs until dropped.
    pub fn proxy(&self, target: SocketAddr, dst: Endpoint, source: Source) -> Result<Proxy, Error> {
        Proxy::start(self.clone(), target, dst, source)
    }

    /// The rule on what `src` sends `dst` now.
    pub fn rule(&self, src: impl Into<Endpoint>, dst: impl Into<Endpoint>) -> Rule {
        let rules = self.inner.rules.read().unwrap_or_else(|e| e.into_inner());
        rules.get(src.into(), dst.into())
    }

    /// Whether bytes from `src` to `dst` are delivered (not dropped).
    pub fn passes(&self, src: impl Into<Endpoint>, dst: impl Into<Endpoint>) -> bool {
        !self.rule(src, dst).drop
    }

    fn update(&self, links: Vec<(Endpoint, Endpoint)>, f: impl Fn(&mut Rule)) {
        let mut rules = self.inner.rules.write().unwrap_or_else(|e| e.into_inner());
        for (s, d) in links {
            rules.update(s, d, &f);
        }
        self.inner.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Blackholes the bytes `a` sends `b` (and `b` sends `a` with [`Way::TwoWay`]).
    pub fn drop(&self, a: impl Into<Endpoint>, b: impl Into<Endpoint>, way: Way) {
        self.update(way.links(a.into(), b.into()), |r| r.drop = true);
    }

    /// Delivers the bytes `a` sends `b` (and `b` sends `a` with [`Way::TwoWay`]) `by` after
    /// they were read.
    pub fn delay(&self, a: impl Into<Endpoint>, b: impl Into<Endpoint>, by: Duration, way: Way) {
        self.update(way.links(a.into(), b.into()), |r| r.delay = by);
    }

    /// Closes every open connection between `a` and `b` (a TCP connection needs both
    /// directions, so a cut is both ways) and resets new ones until [`heal`](Self::heal).
    pub fn cut(&self, a: impl Into<Endpoint>, b: impl Into<Endpoint>) {
        let (a, b) = (a.into(), b.into());
        self.update(Way::TwoWay.links(a, b), |r| r.refuse = true);
        self.close_connections(a, b);
    }

    /// Closes every open connection between `a` and `b` now, refusing nothing afterwards (a
    /// reset of the connections, as a NAT or firewall restart does).
    pub fn close_connections(&self, a: impl Into<Endpoint>, b: impl Into<Endpoint>) {
        let (a, b) = (a.into(), b.into());
        let conns: Vec<Arc<Conn>> = lock(&self.inner.conns)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for c in conns {
            if (c.src, c.dst) == (a, b) || (c.src, c.dst) == (b, a) {
                c.close();
            }
        }
    }

    /// Blackholes `node` from each of `others` (itself skipped): `node -> other`, and
    /// `other -> node` too with [`Way::TwoWay`].
    pub fn isolate<I, E>(&self, node: impl Into<Endpoint>, others: I, way: Way)
    where
        I: IntoIterator<Item = E>,
        E: Into<Endpoint>,
    {
        let node = node.into();
        for o in others.into_iter().map(Into::into).filter(|o| *o != node) {
            self.drop(node, o, way);
        }
    }

    /// Lifts every rule: stalled streams flow, delayed chunks go, connections are accepted.
    pub fn heal(&self) {
        let mut rules = self.inner.rules.write().unwrap_or_else(|e| e.into_inner());
        rules.clear();
        self.inner.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Lifts the rules between `a` and `b`, both directions.
    pub fn heal_between(&self, a: impl Into<Endpoint>, b: impl Into<Endpoint>) {
        let mut rules = self.inner.rules.write().unwrap_or_else(|e| e.into_inner());
        rules.clear_between(a.into(), b.into());
        self.inner.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Bumped by every change of the rules (for logs and tests).
    pub fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::SeqCst)
    }

    /// The rules in force, `src->dst: rule, ...`, or `healed`.
    pub fn describe(&self) -> String {
        let rules = self.inner.rules.read().unwrap_or_else(|e| e.into_inner());
        rules.describe()
    }

    /// What went through the link `src -> dst` so far, over every proxy of this table.
    pub fn stats(&self, src: impl Into<Endpoint>, dst: impl Into<Endpoint>) -> LinkStats {
        lock(&self.inner.stats)
            .get(&(src.into(), dst.into()))
            .copied()
            .unwrap_or_default()
    }

    /// Every link that carried a connection so far, with its counts.
    pub fn all_stats(&self) -> BTreeMap<(Endpoint, Endpoint), LinkStats> {
        lock(&self.inner.stats).clone()
    }

    pub(crate) fn count_accepted(&self, src: Endpoint, dst: Endpoint) {
        lock(&self.inner.stats)
            .entry((src, dst))
            .or_default()
            .accepted += 1;
    }

    pub(crate) fn count_delivered(&self, src: Endpoint, dst: Endpoint, bytes: usize) {
        lock(&self.inner.stats)
            .entry((src, dst))
            .or_default()
            .delivered += bytes as u64;
    }

    pub(crate) fn register(&self, conn: &Arc<Conn>) {
        let mut conns = lock(&self.inner.conns);
        conns.retain(|c| c.strong_count() > 0);
        conns.push(Arc::downgrade(conn));
    }
}
