"""Network faults between the nodes of a test cluster, without root: TCP proxies in front of every node's
controller and inter-broker listeners, and one table of link rules they all read.

Model
-----
A *link* is an ordered pair of endpoints (src, dst): node ids (ints) or "client" for anything that is not a
node (the test's own clients). A rule on (src, dst) governs the bytes *sent by src to dst*, whichever side
opened the TCP connection: on a connection opened by A to B, A's requests go A->B and B's responses B->A.
So `net.drop(A, B, one_way=True)` stalls only the bytes A->B: A's requests on connections A opened, and A's
responses on connections B opened; B's bytes to A still flow.

Rules, set and lifted while connections are open (every chunk looks at the table when it is sent):
- drop (blackhole): bytes on the link are not delivered, as when every packet is lost. The proxy stops
  reading, so the sender's socket buffer fills and the stream stalls; nothing is discarded (discarding bytes
  from a TCP stream would corrupt the framing when the link heals, which a real network never does: TCP
  retransmits). When the rule is lifted the stalled bytes flow, exactly like TCP after a loss burst. A new
  connection between two endpoints whose link is dropped in either direction is accepted by the proxy's
  socket (that cannot be avoided without root) but not connected onward until the link heals (a real
  handshake needs both directions), so the opener sees a connection on which nothing is ever answered.
- delay: every chunk is delivered `seconds` after the proxy read it (order kept, no accumulation).
- cut: open connections on the link (either direction) are closed now; while `refuse` holds, new ones are
  closed right after accept (the opener sees a reset/EOF).

Who is the source of a connection?
----------------------------------
A proxy either has a fixed source (`src=`: only one node is ever given its port, e.g. node i's entry for
node j in node i's own `controller.quorum.voters`), or a `resolve(peer_port, local_port)` callback that
names the process on the other end. `ProcResolver` does it on Linux without privileges: it finds the
connecting socket's inode in /proc/net/tcp and the node process (by PID) holding that inode in
/proc/PID/fd. This is what makes per-(source, destination) rules possible on a listener whose address is
the same for every source (the advertised inter-broker listener comes from the metadata, identical on
all nodes). Anything not resolved to a node is "client".
"""
from __future__ import annotations

import collections
import os
import select
import sys
import socket
import threading
import time
from dataclasses import dataclass, field

CLIENT = "client"
_POLL = 0.02  # seconds between looks at the rule table while a link is stalled


@dataclass
class Rule:
    drop: bool = False
    delay: float = 0.0
    refuse: bool = False


class FaultNet:
    """The rule table shared by every proxy of one cluster, keyed by (src, dst)."""

    def __init__(self):
        self._rules: dict[tuple, Rule] = {}
        self._lock = threading.Lock()
        self._conns: set["_Conn"] = set()
        self.generation = 0  # bumped on every change (for tests and logs)

    # ---- queries (called by the proxies for every chunk)
    def rule(self, src, dst) -> Rule:
        return self._rules.get((src, dst)) or _OK

    def passes(self, src, dst) -> bool:
        return not self.rule(src, dst).drop

    # ---- changes
    def _update(self, src, dst, **kw):
        with self._lock:
            r = self._rules.get((src, dst)) or Rule()
            r = Rule(**{**r.__dict__, **kw})
            if r == _OK:
                self._rules.pop((src, dst), None)
            else:
                self._rules[(src, dst)] = r
            self.generation += 1

    def _pairs(self, a, b, one_way):
        return [(a, b)] if one_way else [(a, b), (b, a)]

    def drop(self, a, b, one_way=False):
        """Blackhole bytes a->b (and b->a unless one_way)."""
        for s, d in self._pairs(a, b, one_way):
            self._update(s, d, drop=True)

    def delay(self, a, b, seconds, one_way=False):
        for s, d in self._pairs(a, b, one_way):
            self._update(s, d, delay=float(seconds))

    def cut(self, a, b, refuse=True):
        """Close every open connection between a and b (both directions; a TCP connection needs both);
        with refuse, new ones are closed on accept until heal()."""
        if refuse:
            self._update(a, b, refuse=True)
            self._update(b, a, refuse=True)
        for c in list(self._conns):
            if {c.src, c.dst} == {a, b}:
                c.close()

    def isolate(self, node, others, one_way=False):
        """Blackhole node from each of others: node->other (and other->node unless one_way)."""
        for o in others:
            if o != node:
                self.drop(node, o, one_way=one_way)

    def heal(self, a=None, b=None):
        """Lift every rule (or those between a and b, both directions)."""
        with self._lock:
            if a is None:
                self._rules.clear()
            else:
                self._rules.pop((a, b), None)
                self._rules.pop((b, a), None)
            self.generation += 1

    def describe(self) -> str:
        with self._lock:
            return ", ".join(f"{s}->{d}: {r}" for (s, d), r in sorted(self._rules.items(), key=str)) or "healed"

    # ---- bookkeeping of connections (for cut)
    def _register(self, c):
        with self._lock:
            self._conns.add(c)

    def _unregister(self, c):
        with self._lock:
            self._conns.discard(c)


_OK = Rule()


class _Conn:
    """One proxied TCP connection: client side (opened by src) and upstream side (to dst)."""

    def __init__(self, proxy: "Proxy", client: socket.socket, src):
        self.proxy = proxy
        self.net = proxy.net
        self.client = client
        self.upstream: socket.socket | None = None
        self.src = src
        self.dst = proxy.dst
        self.closed = threading.Event()
        self._close_lock = threading.Lock()

    def start(self):
        self.net._register(self)
        threading.Thread(target=self._run, daemon=True, name=f"proxy-{self.src}->{self.dst}").start()

    def _run(self):
        try:
            # A handshake needs both directions: hold the connection while either way is dropped.
            while not (self.net.passes(self.src, self.dst) and self.net.passes(self.dst, self.src)):
                if self.closed.is_set() or self.proxy.stopped.is_set():
                    return self.close()
                time.sleep(_POLL)
            if self.net.rule(self.src, self.dst).refuse:
                return self.close()
            try:
                self.upstream = socket.create_connection(("127.0.0.1", self.proxy.target_port), timeout=5)
                self.upstream.settimeout(None)
            except OSError:
                return self.close()
            if self.closed.is_set():
                return self.close()
            for a, b, s, d in ((self.client, self.upstream, self.src, self.dst),
                               (self.upstream, self.client, self.dst, self.src)):
                _Pump(self, a, b, s, d).start()
        except Exception:  # noqa: BLE001 - a proxy thread must never die noisily
            self.close()

    def close(self):
        with self._close_lock:
            if self.closed.is_set():
                return
            self.closed.set()
        for s in (self.client, self.upstream):
            if s is not None:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                try:
                    s.close()
                except OSError:
                    pass
        self.net._unregister(self)
        self.proxy._closed(self)


class _Pump:
    """One direction of a connection: a reader stamping chunks and a writer delivering them when the rule
    allows (stalled while dropped, `delay` after they were read)."""

    MAX_BUFFER = 4 << 20

    def __init__(self, conn: _Conn, src_sock, dst_sock, src, dst):
        self.conn, self.src_sock, self.dst_sock, self.src, self.dst = conn, src_sock, dst_sock, src, dst
        self.q: collections.deque = collections.deque()
        self.buffered = 0
        self.cv = threading.Condition()
        self.eof = False

    def start(self):
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._write, daemon=True).start()

    def _read(self):
        net, conn = self.conn.net, self.conn
        try:
            while not conn.closed.is_set():
                if not net.passes(self.src, self.dst) or self.buffered > self.MAX_BUFFER:
                    time.sleep(_POLL)  # stop reading: the sender's buffer fills, like lost packets
                    continue
                r, _, _ = select.select([self.src_sock], [], [], 0.2)
                if not r:
                    continue
                data = self.src_sock.recv(65536)
                with self.cv:
                    if not data:
                        self.eof = True
                    else:
                        self.q.append((time.monotonic(), data))
                        self.buffered += len(data)
                    self.cv.notify()
                if not data:
                    return
        except (OSError, ValueError):
            with self.cv:
                self.eof = True
                self.cv.notify()

    def _write(self):
        net, conn = self.conn.net, self.conn
        try:
            while not conn.closed.is_set():
                with self.cv:
                    while not self.q and not self.eof and not conn.closed.is_set():
                        self.cv.wait(0.2)
                    if not self.q:
                        if self.eof:
                            break
                        continue
                    t, data = self.q[0]
                rule = net.rule(self.src, self.dst)
                if rule.drop:
                    time.sleep(_POLL)
                    continue
                wait = t + rule.delay - time.monotonic()
                if wait > 0:
                    time.sleep(min(wait, _POLL * 5))
                    continue
                with self.cv:
                    self.q.popleft()
                    self.buffered -= len(data)
                self.conn.proxy.bytes[(self.src, self.dst)] += len(data)  # counted before the peer can see it
                self.dst_sock.sendall(data)
            # EOF from the source: half-close toward the destination, as TCP does.
            try:
                self.dst_sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self.conn.proxy._half_closed(self.conn)
        except (OSError, ValueError):
            conn.close()


class Proxy:
    """Listens on 127.0.0.1:<free port> and forwards to 127.0.0.1:target_port (node `dst`)."""

    def __init__(self, net: FaultNet, target_port: int, dst, src=None, resolve=None, port: int = 0, name=""):
        self.net, self.target_port, self.dst, self.src, self.resolve = net, target_port, dst, src, resolve
        self.name = name or f"proxy-to-{dst}"
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.stopped = threading.Event()
        self.conns: set[_Conn] = set()
        self._half: dict[_Conn, int] = {}
        self._lock = threading.Lock()
        self.accepted = collections.Counter()  # src -> connections
        self.bytes = collections.Counter()  # (src, dst) -> bytes delivered
        threading.Thread(target=self._accept, daemon=True, name=self.name).start()

    def _source_of(self, peer_port):
        if self.src is not None:
            return self.src
        if self.resolve is not None:
            try:
                s = self.resolve(peer_port, self.port)
                if s is not None:
                    return s
            except Exception:  # noqa: BLE001
                pass
        return CLIENT

    def _accept(self):
        while not self.stopped.is_set():
            try:
                client, addr = self.sock.accept()
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            src = self._source_of(addr[1])
            self.accepted[src] += 1
            if self.net.rule(src, self.dst).refuse or self.net.rule(self.dst, src).refuse:
                try:
                    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    client.close()
                except OSError:
                    pass
                continue
            c = _Conn(self, client, src)
            with self._lock:
                self.conns.add(c)
            c.start()

    def _closed(self, c):
        with self._lock:
            self.conns.discard(c)
            self._half.pop(c, None)

    def _half_closed(self, c):
        with self._lock:
            n = self._half.get(c, 0) + 1
            self._half[c] = n
        if n >= 2:
            c.close()

    def close(self):
        self.stopped.set()
        try:
            self.sock.close()
        except OSError:
            pass
        for c in list(self.conns):
            c.close()


# ------------------------------------------------------------------------------------ source resolution

def _hex_addr(port: int) -> str:
    # /proc/net/tcp prints IPv4 addresses as the host-order u32 in hex: 127.0.0.1 -> 0100007F on little endian.
    ip = socket.inet_aton("127.0.0.1")
    return "%08X:%04X" % (int.from_bytes(ip, "little" if sys.byteorder == "little" else "big"), port)


def socket_inode(local_port: int, remote_port: int) -> int | None:
    """Inode of the loopback TCP socket 127.0.0.1:local_port -> 127.0.0.1:remote_port, from /proc/net/tcp."""
    want_l, want_r = _hex_addr(local_port), _hex_addr(remote_port)
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                parts = line.split()
                if len(parts) > 9 and parts[1] == want_l and parts[2] == want_r:
                    return int(parts[9])
    except OSError:
        return None
    return None


def pid_holds_inode(pid: int, inode: int) -> bool:
    target = f"socket:[{inode}]"
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return True
            except OSError:
                continue
    except OSError:
        return False
    return False


class ProcResolver:
    """resolve(peer_port, local_port) -> the name whose PID holds the connecting socket, else None.

    `pids()` returns {pid: name} at the time of the call (PIDs change when nodes restart)."""

    def __init__(self, pids):
        self.pids = pids

    def __call__(self, peer_port, local_port):
        inode = socket_inode(peer_port, local_port)
        if not inode:
            return None
        for pid, name in self.pids().items():
            if pid_holds_inode(pid, inode):
                return name
        return None
