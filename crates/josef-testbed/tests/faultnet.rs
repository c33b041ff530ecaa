//! The fault proxy on its own (no broker): a tiny echo server behind a [`Proxy`], each rule
//! checked in the direction it names, and the proxy's own cleanup.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use josef_testbed::faultnet::{pid_holds_inode, socket_inode, Endpoint, FaultNet, Source, Way};
use josef_testbed::wait_until;

const A: i32 = 1; // the proxy's fixed source
const B: i32 = 2; // its destination
const BOUND: Duration = Duration::from_secs(10);
/// How long a link must stay silent to count as stalled: several times the proxy's poll period.
const QUIET: Duration = Duration::from_millis(400);
const EVERY: Duration = Duration::from_millis(5);

/// An echo server on 127.0.0.1 counting what it accepted and received; stopped on drop.
struct Echo {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    received: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Echo {
    fn start() -> Echo {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, r, s) = (accepted.clone(), received.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            std::thread::scope(|scope| {
                while !s.load(Ordering::SeqCst) {
                    let Ok((mut c, _)) = l.accept() else {
                        std::thread::sleep(EVERY);
                        continue;
                    };
                    a.fetch_add(1, Ordering::SeqCst);
                    c.set_nonblocking(false).unwrap();
                    let tick = Some(Duration::from_millis(50));
                    c.set_read_timeout(tick).unwrap();
                    c.set_write_timeout(tick).unwrap();
                    let (r, s) = (&r, &s);
                    let stopped = move || s.load(Ordering::SeqCst);
                    scope.spawn(move || {
                        let mut buf = [0u8; 65536];
                        while !stopped() {
                            let n = match c.read(&mut buf) {
                                Ok(0) => return,
                                Ok(n) => n,
                                Err(e) if timed_out(&e) => continue,
                                Err(_) => return,
                            };
                            r.fetch_add(n as u64, Ordering::SeqCst);
                            let mut sent = 0;
                            while sent < n {
                                match c.write(&buf[sent..n]) {
                                    Ok(0) => return,
                                    Ok(w) => sent += w,
                                    Err(e) if timed_out(&e) && !stopped() => {}
                                    Err(_) => return,
                                }
                            }
                        }
                    });
                }
            });
        });
        Echo {
            addr,
            accepted,
            received,
            stop,
            thread: Some(thread),
        }
    }

    fn received(&self) -> u64 {
        self.received.load(Ordering::SeqCst)
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(BOUND)).unwrap();
    s
}

fn round_trip(s: &mut TcpStream, msg: &[u8]) -> Duration {
    let t = Instant::now();
    s.write_all(msg).unwrap();
    let mut back = vec![0u8; msg.len()];
    s.read_exact(&mut back).unwrap();
    assert_eq!(back, msg);
    t.elapsed()
}

/// Whether the stream ends (EOF or reset) within `BOUND`, whatever it still delivers first.
fn ends(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(BOUND)).unwrap();
    let mut b = [0u8; 4096];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => return !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        }
    }
}

fn setup() -> (FaultNet, Echo, josef_testbed::faultnet::Proxy) {
    let net = FaultNet::new();
    let echo = Echo::start();
    let proxy = net
        .proxy(
            echo.addr,
            Endpoint::Node(B),
            Source::Fixed(Endpoint::Node(A)),
        )
        .unwrap();
    (net, echo, proxy)
}

#[test]
fn a_healthy_link_passes_both_ways_and_is_counted() {
    let (net, echo, proxy) = setup();
    let mut s = connect(proxy.addr());
    round_trip(&mut s, b"ping");
    assert_eq!(echo.received(), 4);
    let (ab, ba) = (net.stats(A, B), net.stats(B, A));
    assert_eq!((ab.accepted, ab.delivered, ba.delivered), (1, 4, 4));
    assert_eq!(proxy.open_connections(), 1);
    assert_eq!(net.describe(), "healed");
}

#[test]
fn one_way_drop_stalls_only_its_direction_until_heal() {
    let (net, echo, proxy) = setup();
    let mut s = connect(proxy.addr());
    round_trip(&mut s, b"before");

    // A -> B dropped: the request does not reach the echo server.
    net.drop(A, B, Way::OneWay);
    assert!(net.passes(B, A));
    s.write_all(b"stalled").unwrap();
    assert!(
        !wait_until(QUIET, EVERY, || echo.received() > 6),
        "bytes crossed a dropped link"
    );
    net.heal();
    let mut back = [0u8; 7];
    s.read_exact(&mut back).unwrap();
    assert_eq!(
        &back, b"stalled",
        "the stalled bytes flow after heal, in order"
    );

    // B -> A dropped: the request arrives, its answer does not.
    net.drop(B, A, Way::OneWay);
    s.set_read_timeout(Some(QUIET)).unwrap();
    s.write_all(b"asked").unwrap();
    assert!(wait_until(BOUND, EVERY, || echo.received() == 18));
    let mut answer = [0u8; 5];
    let err = s.read_exact(&mut answer).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err}"
    );
    net.heal_between(B, A);
    s.set_read_timeout(Some(BOUND)).unwrap();
    s.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"asked");
}

#[test]
fn a_new_connection_over_a_dropped_link_is_held_until_heal() {
    let (net, echo, proxy) = setup();
    net.drop(B, A, Way::OneWay); // either direction holds the handshake
    let mut s = connect(proxy.addr());
    s.write_all(b"hi").unwrap();
    assert!(
        !wait_until(QUIET, EVERY, || echo.accepted() > 0),
        "connected onward over a dropped link"
    );
    net.heal();
    round_trip_rest(&mut s, b"hi");
    assert_eq!(echo.accepted(), 1);
}

fn round_trip_rest(s: &mut TcpStream, sent: &[u8]) {
    let mut back = vec![0u8; sent.len()];
    s.read_exact(&mut back).unwrap();
    assert_eq!(back, sent);
}

#[test]
fn delay_holds_each_chunk_that_long_in_its_direction_without_accumulating() {
    let (net, _echo, proxy) = setup();
    let mut s = connect(proxy.addr());
    let fast = round_trip(&mut s, b"x");
    let d = Duration::from_millis(300);

    net.delay(A, B, d, Way::OneWay);
    let one = round_trip(&mut s, b"y");
    assert!(one >= d, "one-way delay: {one:?}");
    net.delay(A, B, d, Way::TwoWay);
    let two = round_trip(&mut s, b"z");
    assert!(two >= 2 * d, "two-way delay: {two:?}");

    // Ten chunks 30 ms apart, each delivered ~2d after it was sent: all back in about
    // 270 ms + 2d, not 10 x 2d (a delay per link, not a queue of delays).
    let t = Instant::now();
    let mut reader = s.try_clone().unwrap();
    let got = std::thread::spawn(move || {
        let mut all = [0u8; 10];
        reader.read_exact(&mut all).map(|_| all)
    });
    for i in 0..10u8 {
        s.write_all(&[b'0' + i]).unwrap();
        std::thread::sleep(Duration::from_millis(30));
    }
    assert_eq!(&got.join().unwrap().unwrap(), b"0123456789");
    let all = t.elapsed();
    assert!(
        all >= 2 * d && all < 2 * d + Duration::from_secs(2),
        "ten chunks: {all:?}"
    );

    net.heal();
    let healed = round_trip(&mut s, b"w");
    assert!(
        healed < d,
        "healed: {healed:?} (before any delay: {fast:?})"
    );
}

#[test]
fn cut_closes_open_connections_and_refuses_new_ones_until_heal() {
    let (net, echo, proxy) = setup();
    let mut s = connect(proxy.addr());
    round_trip(&mut s, b"open");
    net.cut(B, A);
    assert!(ends(&mut s), "an open connection survived a cut");
    assert!(wait_until(BOUND, EVERY, || proxy.open_connections() == 0));

    let mut refused = connect(proxy.addr());
    assert!(ends(&mut refused), "a new connection passed a cut link");
    assert_eq!(
        echo.accepted(),
        1,
        "a refused connection reached the target"
    );

    net.heal();
    let mut again = connect(proxy.addr());
    round_trip(&mut again, b"again");
    assert_eq!(echo.accepted(), 2);
}

#[test]
fn close_connections_resets_without_refusing() {
    let (net, _echo, proxy) = setup();
    let mut s = connect(proxy.addr());
    round_trip(&mut s, b"a");
    net.close_connections(A, B);
    assert!(ends(&mut s));
    let mut next = connect(proxy.addr());
    round_trip(&mut next, b"b");
}

#[test]
fn isolate_drops_between_a_node_and_each_other_one_way_or_both() {
    let net = FaultNet::new();
    net.isolate(1, [1, 2, 3], Way::OneWay);
    assert_eq!(net.describe(), "1->2: drop, 1->3: drop");
    net.heal();
    net.isolate(1, [2, 3], Way::TwoWay);
    assert!(!net.passes(2, 1) && !net.passes(1, 3) && net.passes(2, 3));
    let g = net.generation();
    net.heal();
    assert!(net.generation() > g);
    assert_eq!(net.describe(), "healed");
}

#[test]
fn a_resolving_proxy_names_the_process_holding_the_connecting_socket() {
    let net = FaultNet::new();
    let echo = Echo::start();
    let me = std::process::id();
    let by_pid = Source::Resolve(Arc::new(move |peer, local| {
        let inode = socket_inode(peer, local)?;
        pid_holds_inode(me, inode).then_some(Endpoint::Node(7))
    }));
    let nobody = Source::Resolve(Arc::new(|_, _| None));
    let named = net.proxy(echo.addr, Endpoint::Node(B), by_pid).unwrap();
    let unnamed = net.proxy(echo.addr, Endpoint::Node(B), nobody).unwrap();
    round_trip(&mut connect(named.addr()), b"n");
    round_trip(&mut connect(unnamed.addr()), b"c");
    assert_eq!(net.stats(7, B).accepted, 1);
    assert_eq!(net.stats(Endpoint::Client, B).accepted, 1);
    // A rule on the resolved source applies to it alone.
    net.drop(7, B, Way::OneWay);
    let mut s = connect(named.addr());
    s.write_all(b"held").unwrap();
    let mut c = connect(unnamed.addr());
    round_trip(&mut c, b"free");
    assert!(!wait_until(QUIET, EVERY, || echo.received() > 6));
}

#[test]
fn dropping_the_proxy_closes_its_connections_and_its_port() {
    let (net, _echo, proxy) = setup();
    let addr = proxy.addr();
    let mut s = connect(addr);
    round_trip(&mut s, b"x");
    net.drop(A, B, Way::TwoWay); // a stalled stream must not keep a thread alive either
    s.write_all(b"stalled").unwrap();
    let t = Instant::now();
    drop(proxy);
    assert!(t.elapsed() < BOUND, "drop took {:?}", t.elapsed());
    assert!(ends(&mut s));
    assert!(TcpStream::connect(addr).is_err(), "still listening");
}

#[test]
fn a_stalled_link_holds_a_bounded_amount() {
    let (net, echo, proxy) = setup();
    let mut s = connect(proxy.addr());
    round_trip(&mut s, b"connected"); // onward too: a new connection would be held whole
    net.drop(B, A, Way::OneWay); // the echo's answers pile up in the proxy, then in the echo
    let mut w = s.try_clone().unwrap();
    w.set_write_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let chunk = vec![7u8; 1 << 20];
    let mut sent = 0u64;
    // Writes succeed until every buffer on the way is full; then one times out.
    while sent < (256 << 20) {
        match w.write(&chunk) {
            Ok(n) => sent += n as u64,
            Err(_) => break,
        }
    }
    eprintln!(
        "{sent} bytes written, {} echoed before the link stalled them",
        echo.received()
    );
    // The proxy holds at most 4 MiB a direction; the rest is the kernel's socket buffers (about
    // 20 MiB here in all). Unbounded buffering in the proxy would take all 256 MiB.
    assert!(sent < (64 << 20), "{sent} bytes went into a stalled link");
    assert!(echo.received() <= sent);
    net.heal();
}
