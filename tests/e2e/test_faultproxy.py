"""Unit tests of faultproxy (no broker): a tiny echo server behind a Proxy, each rule checked both ways."""
import os
import select
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import wait_until
from faultproxy import CLIENT, FaultNet, ProcResolver, Proxy

A, B = 1, 2  # the proxy's source (fixed) and destination


class Echo:
    """Echo server on 127.0.0.1; counts the bytes it received."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.received = 0
        self.accepted = 0
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                self.received += len(d)
                c.sendall(d)
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


@pytest.fixture
def net_echo():
    net = FaultNet()
    echo = Echo()
    proxy = Proxy(net, echo.port, dst=B, src=A)
    yield net, echo, proxy
    proxy.close()
    echo.close()


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exactly(s, n, timeout=5.0):
    buf = b""
    deadline = time.monotonic() + timeout
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([s], [], [], left)
        if not r:
            break
        d = s.recv(n - len(buf))
        if not d:
            break
        buf += d
    return buf


def nothing_arrives(s, within=0.4) -> bool:
    """True if no byte is readable on s within `within` seconds (a bounded check of absence)."""
    r, _, _ = select.select([s], [], [], within)
    return not r


def test_passes_bytes_both_ways(net_echo):
    net, echo, proxy = net_echo
    s = connect(proxy.port)
    payload = os.urandom(200_000)
    s.sendall(payload)
    assert recv_exactly(s, len(payload)) == payload
    assert proxy.bytes[(A, B)] == len(payload) and proxy.bytes[(B, A)] == len(payload)
    s.close()


def test_one_way_drop_stalls_requests_then_heals_without_losing_bytes(net_echo):
    net, echo, proxy = net_echo
    s = connect(proxy.port)
    s.sendall(b"hello")
    assert recv_exactly(s, 5) == b"hello"
    net.drop(A, B, one_way=True)
    s.sendall(b"during-drop")
    assert nothing_arrives(s), "bytes crossed a dropped link"
    assert echo.received == 5, "the server saw bytes sent over a dropped link"
    net.heal()
    assert recv_exactly(s, len(b"during-drop")) == b"during-drop"  # TCP-like: delivered late, not lost
    s.close()


def test_one_way_drop_of_responses_only(net_echo):
    net, echo, proxy = net_echo
    s = connect(proxy.port)
    s.sendall(b"x")
    assert recv_exactly(s, 1) == b"x"
    net.drop(B, A, one_way=True)
    s.sendall(b"request")
    wait_until(lambda: echo.received == 8, timeout=5, what="request reaching the server")
    assert nothing_arrives(s), "a response crossed the dropped B->A link"
    net.heal(A, B)
    assert recv_exactly(s, 7) == b"request"
    s.close()


def test_rules_of_other_pairs_do_not_apply(net_echo):
    net, echo, proxy = net_echo
    net.drop(3, B)
    net.drop(A, 3)
    s = connect(proxy.port)
    s.sendall(b"ok")
    assert recv_exactly(s, 2) == b"ok"
    s.close()


def test_new_connection_during_drop_is_held_until_heal(net_echo):
    net, echo, proxy = net_echo
    net.drop(B, A, one_way=True)  # either direction dropped: no handshake
    s = connect(proxy.port)
    s.sendall(b"held")
    assert nothing_arrives(s)
    assert echo.accepted == 0, "the proxy connected onward over a dropped link"
    net.heal()
    assert recv_exactly(s, 4) == b"held"
    assert echo.accepted == 1
    s.close()


def test_delay_holds_each_chunk_without_accumulating(net_echo):
    net, echo, proxy = net_echo
    net.delay(A, B, 0.3, one_way=True)
    s = connect(proxy.port)
    t0 = time.monotonic()
    for i in range(5):
        s.sendall(b"%d" % i)
    got = recv_exactly(s, 5, timeout=5)
    took = time.monotonic() - t0
    assert got == b"01234"
    assert 0.3 <= took < 1.2, f"5 chunks sent together under a 0.3 s delay took {took:.2f}s"
    s.close()


def test_cut_closes_open_connections_and_refuses_new_ones(net_echo):
    net, echo, proxy = net_echo
    s = connect(proxy.port)
    s.sendall(b"a")
    assert recv_exactly(s, 1) == b"a"
    net.cut(A, B)
    r, _, _ = select.select([s], [], [], 5)
    assert r, "cut connection not closed"
    try:
        assert s.recv(10) == b""
    except ConnectionResetError:
        pass
    # the listen socket accepts; the proxy resets it at once (seen at connect or at the first read)
    s2 = None
    try:
        s2 = connect(proxy.port)
        r, _, _ = select.select([s2], [], [], 5)
        assert r
        assert s2.recv(10) == b""
    except ConnectionResetError:
        pass
    assert echo.accepted == 1, "a refused connection reached the server"
    net.heal()
    s3 = connect(proxy.port)
    s3.sendall(b"back")
    assert recv_exactly(s3, 4) == b"back"
    for x in (s, s2, s3):
        if x is not None:
            x.close()


def test_proc_resolver_names_the_connecting_process():
    """One proxy, two sources told apart by PID: this process ("me") and a child ("child")."""
    net = FaultNet()
    echo = Echo()
    child = None
    pids = {os.getpid(): "me"}
    proxy = Proxy(net, echo.port, dst=B, resolve=ProcResolver(lambda: dict(pids)))
    try:
        s = connect(proxy.port)
        s.sendall(b"1")
        assert recv_exactly(s, 1) == b"1"
        assert proxy.accepted["me"] == 1
        net.drop("me", B)
        # The child connects, sends, and prints what came back; the "me" rule must not apply to it.
        code = ("import socket,sys; sys.stdin.readline(); s=socket.create_connection(('127.0.0.1',%d));"
                "s.sendall(b'child'); b=b''\n"
                "while len(b)<5:\n d=s.recv(5)\n if not d: break\n b+=d\n"
                "print(b.decode(), flush=True)") % proxy.port
        child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        pids[child.pid] = "child"
        child.stdin.write(b"go\n")  # connect now that its PID is known
        child.stdin.flush()
        wait_until(lambda: proxy.accepted["child"] + proxy.accepted[CLIENT] >= 1, timeout=10,
                   what="the child's connection")
        assert proxy.accepted["child"] == 1, f"child not resolved: {dict(proxy.accepted)}"
        out, _ = child.communicate(timeout=10)
        assert out.strip() == b"child"
        s.sendall(b"2")
        assert nothing_arrives(s), "the drop rule of 'me' did not apply to my own connection"
        s.close()
    finally:
        if child and child.poll() is None:
            child.kill()
            child.wait()
        proxy.close()
        echo.close()
