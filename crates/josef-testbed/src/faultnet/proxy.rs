//! One TCP proxy: a listener on 127.0.0.1 forwarding each accepted connection to one target, its
//! bytes in each direction held, delayed or passed as the [`FaultNet`]'s rules say at the moment
//! each chunk moves.
//!
//! Threads: one accepting; per connection one that opens the upstream side and then, in a scope,
//! a reader and a writer per direction (the writer delivers each chunk `delay` after the reader
//! stamped it, so a delay does not accumulate along a stream). Every thread polls a stop flag
//! with a bound, so dropping the proxy joins them all.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{Endpoint, FaultNet, LinkStats};
use crate::Error;

/// How often a stalled stream looks at the rule table again.
const POLL: Duration = Duration::from_millis(20);
/// The longest any blocking socket call or wait lasts before the stop flag is looked at.
const TICK: Duration = Duration::from_millis(200);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Bytes read in one chunk.
const CHUNK: usize = 64 << 10;
/// Chunks queued per direction: with [`CHUNK`], at most 4 MiB held per direction, after which
/// the reader stops reading and the sender's socket buffer fills, as with a slow network.
const QUEUED: usize = 64;
/// Connections open at once through one proxy; more are refused (a leak in a test, not load).
const MAX_CONNECTIONS: usize = 1024;

/// Who is at the other end of an accepted connection.
#[derive(Clone)]
pub enum Source {
    /// Always this endpoint: the proxy's port was given to one node only (node `i`'s entry for
    /// voter `j` in its own `controller.quorum.voters`).
    Fixed(Endpoint),
    /// Asked per connection with `(peer port, proxy port)`; `None` means [`Endpoint::Client`].
    /// [`Cluster`](crate::Cluster) resolves through /proc: the node process holding the socket.
    Resolve(Arc<dyn Fn(u16, u16) -> Option<Endpoint> + Send + Sync>),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Fixed(e) => write!(f, "Fixed({e})"),
            Source::Resolve(_) => f.write_str("Resolve(..)"),
        }
    }
}

impl Source {
    fn of(&self, peer_port: u16, local_port: u16) -> Endpoint {
        match self {
            Source::Fixed(e) => *e,
            Source::Resolve(f) => f(peer_port, local_port).unwrap_or(Endpoint::Client),
        }
    }
}

/// A proxy listening on `127.0.0.1:<free port>`, forwarding to one target as the destination
/// `dst` of the links it carries; from [`FaultNet::proxy`]. Dropping it closes the listener and
/// every connection, and joins every thread.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    dst: Endpoint,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    net: FaultNet,
    target: SocketAddr,
    dst: Endpoint,
    source: Source,
    stop: AtomicBool,
    conns: Mutex<Vec<(Arc<Conn>, JoinHandle<()>)>>,
    /// What went through this proxy, by link (the net's counts are over all its proxies).
    stats: Mutex<std::collections::BTreeMap<(Endpoint, Endpoint), LinkStats>>,
}

impl Proxy {
    pub(crate) fn start(
        net: FaultNet,
        target: SocketAddr,
        dst: Endpoint,
        source: Source,
    ) -> Result<Proxy, Error> {
        let listener =
            TcpListener::bind("127.0.0.1:0").map_err(|e| Error::io("binding a proxy port", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("reading a proxy port", e))?;
        // Accept is polled (poll(2) with a bound) so the thread sees the stop flag.
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("proxy listener", e))?;
        let shared = Arc::new(Shared {
            net,
            target,
            dst,
            source,
            stop: AtomicBool::new(false),
            conns: Mutex::new(Vec::new()),
            stats: Mutex::new(std::collections::BTreeMap::new()),
        });
        let s = shared.clone();
        let accept = std::thread::Builder::new()
            .name(format!("proxy-to-{dst}"))
            .spawn(move || s.accept_loop(listener))
            .map_err(|e| Error::io("spawning a proxy thread", e))?;
        Ok(Proxy {
            addr,
            dst,
            shared,
            accept: Some(accept),
        })
    }

    /// Where it listens (what is advertised instead of the target).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Where it forwards to.
    pub fn target(&self) -> SocketAddr {
        self.shared.target
    }

    /// The destination endpoint of every link through it.
    pub fn dst(&self) -> Endpoint {
        self.dst
    }

    /// What went through it on the link `src -> dst` (connections accepted from `src` when
    /// `dst` is its destination, bytes delivered).
    pub fn stats(&self, src: impl Into<Endpoint>, dst: impl Into<Endpoint>) -> LinkStats {
        let stats = self.shared.stats.lock().unwrap_or_else(|e| e.into_inner());
        stats
            .get(&(src.into(), dst.into()))
            .copied()
            .unwrap_or_default()
    }

    /// Connections open through it now.
    pub fn open_connections(&self) -> usize {
        let conns = self.shared.conns.lock().unwrap_or_else(|e| e.into_inner());
        conns.iter().filter(|(c, _)| !c.is_closed()).count()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        let conns =
            std::mem::take(&mut *self.shared.conns.lock().unwrap_or_else(|e| e.into_inner()));
        for (c, _) in &conns {
            c.close();
        }
        for (_, h) in conns {
            let _ = h.join();
        }
    }
}

/// Whether `fd` has something to accept or read within `timeout`.
fn readable(fd: i32, timeout: Duration) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd on the stack, for the duration of the call.
    unsafe { libc::poll(&mut p, 1, ms) > 0 }
}

/// Closes with a reset (SO_LINGER 0): the opener sees ECONNRESET, not a polite EOF.
fn reset(s: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt reads `linger` (on the stack) for its size; the fd is owned by `s`.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn count(&self, src: Endpoint, dst: Endpoint, f: impl FnOnce(&mut LinkStats)) {
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        f(stats.entry((src, dst)).or_default());
    }

    fn accept_loop(self: Arc<Self>, listener: TcpListener) {
        let own_port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        while !self.stopped() {
            if !readable(listener.as_raw_fd(), TICK) {
                continue;
            }
            let (client, peer) = match listener.accept() {
                Ok(x) => x,
                Err(_) => continue,
            };
            let src = self.source.of(peer.port(), own_port);
            self.net.count_accepted(src, self.dst);
            self.count(src, self.dst, |s| s.accepted += 1);
            let refused =
                self.net.rule(src, self.dst).refuse || self.net.rule(self.dst, src).refuse;
            let mut conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
            // Reap the connections that ended, so the list stays as long as what is open.
            let (done, open): (Vec<_>, Vec<_>) = std::mem::take(&mut *conns)
                .into_iter()
                .partition(|(_, h)| h.is_finished());
            *conns = open;
            for (_, h) in done {
                let _ = h.join();
            }
            if refused || conns.len() >= MAX_CONNECTIONS || client.set_nonblocking(false).is_err() {
                reset(client);
                continue;
            }
            let _ = client.set_nodelay(true);
            let conn = Arc::new(Conn {
                src,
                dst: self.dst,
                client,
                upstream: OnceLock::new(),
                closed: AtomicBool::new(false),
                half_closed: AtomicU8::new(0),
            });
            self.net.register(&conn);
            let (s, c) = (self.clone(), conn.clone());
            match std::thread::Builder::new()
                .name(format!("proxy-{src}->{}", self.dst))
                .spawn(move || s.serve(&c))
            {
                Ok(h) => conns.push((conn, h)),
                Err(_) => conn.close(),
            }
        }
    }

    /// One connection: held while the link is dropped either way (a handshake needs both), then
    /// connected onward and pumped both ways until either side ends or it is cut.
    fn serve(&self, conn: &Conn) {
        let (src, dst) = (conn.src, conn.dst);
        while !(self.net.passes(src, dst) && self.net.passes(dst, src)) {
            if conn.is_closed() || self.stopped() {
                return conn.close();
            }
            std::thread::sleep(POLL);
        }
        if self.net.rule(src, dst).refuse {
            return conn.close();
        }
        let upstream = match TcpStream::connect_timeout(&self.target, CONNECT_TIMEOUT) {
            Ok(u) => u,
            Err(_) => return conn.close(),
        };
        let _ = upstream.set_nodelay(true);
        let _ = conn.upstream.set(upstream);
        // close() may have run before the upstream side existed: it is shut here instead.
        if conn.is_closed() || self.stopped() {
            return conn.close();
        }
        let Some(up) = conn.upstream.get() else {
            return conn.close();
        };
        for s in [&conn.client, up] {
            if s.set_read_timeout(Some(TICK)).is_err() || s.set_write_timeout(Some(TICK)).is_err() {
                return conn.close();
            }
        }
        std::thread::scope(|scope| {
            for (from, to, s, d) in [(&conn.client, up, src, dst), (up, &conn.client, dst, src)] {
                let (tx, rx) = sync_channel(QUEUED);
                let pump = Pump {
                    shared: self,
                    conn,
                    src: s,
                    dst: d,
                };
                scope.spawn(move || pump.read(from, tx));
                scope.spawn(move || pump.write(to, rx));
            }
        });
        conn.close();
    }
}

/// One proxied connection: the accepted side (opened by `src`) and the upstream side (to `dst`).
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) src: Endpoint,
    pub(crate) dst: Endpoint,
    client: TcpStream,
    upstream: OnceLock<TcpStream>,
    closed: AtomicBool,
    /// Directions that ended with an EOF; at two the connection is over.
    half_closed: AtomicU8,
}

impl Conn {
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Shuts both sides down now (again is harmless); the threads blocked on them return.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _ = self.client.shutdown(Shutdown::Both);
        if let Some(u) = self.upstream.get() {
            let _ = u.shutdown(Shutdown::Both);
        }
    }
}

enum Item {
    /// A chunk and when it was read.
    Chunk(Instant, Vec<u8>),
    Eof,
}

/// One direction of a connection, `src -> dst`.
#[derive(Clone, Copy)]
struct Pump<'a> {
    shared: &'a Shared,
    conn: &'a Conn,
    src: Endpoint,
    dst: Endpoint,
}

impl Pump<'_> {
    fn over(&self) -> bool {
        self.conn.is_closed() || self.shared.stopped()
    }

    /// Reads while the link passes: a dropped link is not read, so the sender stalls.
    fn read(self, mut from: &TcpStream, tx: SyncSender<Item>) {
        let net = &self.shared.net;
        let mut buf = vec![0u8; CHUNK];
        while !self.over() {
            if !net.passes(self.src, self.dst) {
                std::thread::sleep(POLL);
                continue;
            }
            match from.read(&mut buf) {
                Ok(0) => {
                    let _ = tx.send(Item::Eof);
                    return;
                }
                Ok(n) => {
                    // Blocks while QUEUED chunks wait: the bound on what a stalled link holds.
                    if tx
                        .send(Item::Chunk(Instant::now(), buf[..n].to_vec()))
                        .is_err()
                    {
                        return;
                    }
                }
                Err(e) if retry(&e) => {}
                // A reset from the source: the whole connection goes, as the peer would see.
                Err(_) => return self.conn.close(),
            }
        }
    }

    /// Delivers each chunk when the rule allows: not while dropped, `delay` after it was read.
    fn write(self, mut to: &TcpStream, rx: Receiver<Item>) {
        let net = &self.shared.net;
        loop {
            let item = match rx.recv_timeout(TICK) {
                Ok(item) => item,
                Err(RecvTimeoutError::Timeout) if !self.over() => continue,
                Err(_) => return,
            };
            let (read_at, data) = match item {
                Item::Chunk(t, d) => (t, d),
                Item::Eof => {
                    // Half-close toward the destination, as TCP does.
                    let _ = to.shutdown(Shutdown::Write);
                    if self.conn.half_closed.fetch_add(1, Ordering::SeqCst) + 1 >= 2 {
                        self.conn.close();
                    }
                    return;
                }
            };
            loop {
                if self.over() {
                    return;
                }
                let rule = net.rule(self.src, self.dst);
                if rule.drop {
                    std::thread::sleep(POLL);
                    continue;
                }
                let due = read_at + rule.delay;
                let now = Instant::now();
                if now >= due {
                    break;
                }
                std::thread::sleep((due - now).min(TICK));
            }
            // Counted before the peer can see the bytes, so a test that saw them sees the count.
            net.count_delivered(self.src, self.dst, data.len());
            self.shared
                .count(self.src, self.dst, |s| s.delivered += data.len() as u64);
            let mut sent = 0;
            while sent < data.len() {
                if self.over() {
                    return;
                }
                match to.write(&data[sent..]) {
                    Ok(0) => return self.conn.close(),
                    Ok(n) => sent += n,
                    Err(e) if retry(&e) => {}
                    Err(_) => return self.conn.close(),
                }
            }
        }
    }
}

/// A timeout of a socket call (the stop flag is looked at, and the call made again).
fn retry(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}
