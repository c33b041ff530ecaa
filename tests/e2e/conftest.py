"""Fixtures for the end-to-end tests: each test gets its own josef-broker process on a free port with a
fresh data dir, started from the built binary and stopped by PID.

The binary is taken from $JOSEF_BROKER_BIN, else target/release/josef-broker, else target/debug/josef-broker.

$JOSEF_BROKER_CMD replaces josef-broker with any command (the conformance kit, scripts/conformance.sh):
`{port}`, `{data_dir}` and `{config}` in it are replaced by the test's port, its fresh data dir and the
path of a Kafka server.properties written for the test (listeners, log.dirs and the test's own
settings), e.g. `my-broker --config {config}` or `my-broker --port {port} --dir {data_dir}`. The
command must listen on 127.0.0.1:{port} and stop cleanly on SIGTERM. Unset, nothing changes.
"""
import contextlib
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def broker_binary() -> Path:
    env = os.environ.get("JOSEF_BROKER_BIN")
    if env:
        return Path(env)
    for profile in ("release", "debug"):
        p = REPO / "target" / profile / "josef-broker"
        if p.exists():
            return p
    raise RuntimeError("josef-broker binary not found: build it with `cargo build -p josef-broker`")


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (where outgoing connections' local ports come from)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# Ports free_port has handed out in this process: a port is probed free and closed again, and the node
# binds it only later, so without this two nodes of one cluster could be given the same port (the
# twenty-first session's rehearsal: node 3's client port was node 1's INTERNAL port, "Address already in
# use").
_GIVEN: set[int] = set()


def free_port() -> int:
    """A free 127.0.0.1 port below the ephemeral range when there is room: a port there cannot be taken
    by some process's outgoing connection between now and the node binding it, nor while the node is
    down for a restart (two cluster runs failed on "Address already in use" that way); port 0's pick,
    from the ephemeral range, otherwise. Never the same port twice in one test run."""
    low = _ephemeral_low()
    if low > 11000:
        for _ in range(200):
            port = random.randrange(10000, low)
            if port in _GIVEN:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
                _GIVEN.add(port)
                return port
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port
    raise RuntimeError("no free port that was not handed out before")


def wait_until(cond, timeout=30.0, interval=0.05, what="condition"):
    """Bounded wait on a condition (never a fixed sleep): returns the first truthy value of cond()."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while time.monotonic() < deadline:
        try:
            v = cond()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - the condition may fail until it holds
            last_exc = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f": {last_exc!r}" if last_exc else ""))


class Broker:
    """A josef-broker process with its own data dir and port."""

    def __init__(self, data_dir: Path, port: int, extra: dict | None = None):
        self.data_dir = data_dir
        self.port = port
        self.extra = dict(extra or {})
        self.proc: subprocess.Popen | None = None
        self.log_path = data_dir.parent / f"broker-{port}.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def config_text(self) -> str:
        props = {
            "node.id": "1",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.data_dir),
            "group.initial.rebalance.delay.ms": "0",
        }
        props.update(self.extra)
        return "".join(f"{k}={v}\n" for k, v in props.items())

    def command(self, cfg: Path) -> list[str]:
        template = os.environ.get("JOSEF_BROKER_CMD")
        if not template:
            return [str(broker_binary()), "--config", str(cfg)]
        self.data_dir.mkdir(parents=True, exist_ok=True)
        values = {"{port}": str(self.port), "{data_dir}": str(self.data_dir), "{config}": str(cfg)}
        args = shlex.split(template)
        for k, v in values.items():
            args = [a.replace(k, v) for a in args]
        return args

    def start(self):
        cfg = self.data_dir.parent / f"server-{self.port}.properties"
        cfg.write_text(self.config_text())
        log = open(self.log_path, "ab")
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "info")
        self.proc = subprocess.Popen(
            self.command(cfg),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        wait_until(self._accepts, timeout=60, what=f"broker listening on {self.bootstrap}")
        return self

    def _accepts(self):
        if self.proc and self.proc.poll() is not None:
            raise RuntimeError(f"broker exited with {self.proc.returncode}; log:\n{self.log()}")
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-20000:]
        except FileNotFoundError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=30.0) -> int | None:
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"broker did not stop within {timeout}s after {sig!r}")

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self):
        self.stop()
        return self.start()


@pytest.fixture
def broker_factory():
    tmp = Path(tempfile.mkdtemp(prefix="josef-e2e-"))
    brokers: list[Broker] = []

    def make(extra: dict | None = None, start=True) -> Broker:
        b = Broker(tmp / f"data-{len(brokers)}", free_port(), extra)
        brokers.append(b)
        return b.start() if start else b

    yield make
    failed_logs = []
    for b in brokers:
        b.kill9()
        failed_logs.append(b.log())
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def broker(broker_factory, request):
    b = broker_factory()
    yield b
    if request.node.rep_call.failed if hasattr(request.node, "rep_call") else False:
        print("---- broker log ----\n" + b.log())


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def unique(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{time.monotonic_ns() % 10**9}"


# ---------------------------------------------------------------- cluster test bed (issue 18)
# `cluster_factory` makes Clusters (tests/e2e/cluster.py) in a fresh temp dir; at the end every node is
# killed by PID and every proxy closed. A failed test prints every node's log and keeps the dir.


def pytest_configure(config):
    config.addinivalue_line("markers", "cluster: needs josef-broker's cluster mode (3 nodes, KRaft-style)")
    config.addinivalue_line("markers", "durability: needs data to survive a broker restart or crash "
                            "(deselected for brokers on memory storage: conformance.sh --no-durability)")


def pytest_addoption(parser):
    parser.addoption("--soak-duration", type=float, default=None,
                     help="run test_cluster_soak.py: seconds of random faults (the long run)")
    parser.addoption("--soak-seed", type=int, default=1, help="seed of the long run's fault schedule")


@contextlib.contextmanager
def _cluster_maker(failed):
    """A `make(n, start=True, **kw)` of Clusters in a fresh temp dir; on exit every node is killed and
    every proxy closed, and if `failed()` every node's log is printed and the dir kept."""
    from cluster import Cluster

    tmp = Path(tempfile.mkdtemp(prefix="josef-cluster-"))
    made = []

    def make(n=3, start=True, **kw):
        c = Cluster(n, tmp / f"cluster{len(made)}", **kw)
        made.append(c)
        return c.start() if start else c

    try:
        yield make
    finally:
        bad = failed()
        for c in made:
            if bad:
                print(f"==== cluster logs ({c.base_dir}) ====\n" + c.logs())
            c.close()
        if bad or os.environ.get("JOSEF_KEEP_CLUSTER_DIRS"):
            print(f"==== kept {tmp} for inspection")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def cluster_factory(request):
    def failed():
        rep = getattr(request.node, "rep_call", None)
        return rep is None or rep.failed

    with _cluster_maker(failed) as make:
        yield make


@pytest.fixture(scope="module")
def module_cluster_factory(request):
    """cluster_factory for a cluster shared by a module's tests (they must leave it running and whole);
    the logs are printed if any test of the session failed meanwhile."""
    before = request.session.testsfailed
    with _cluster_maker(lambda: request.session.testsfailed > before) as make:
        yield make
