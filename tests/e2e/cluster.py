"""A test cluster of josef-broker nodes on this machine, written to the cluster contract of docs/cluster.md
("How a cluster is started"): one properties file per node, `josef-broker -c node.properties`. The contract's
layouts and the lowered timeouts come from crates/josef-testbed/contract.json, the file the Rust test bed
(crate josef-testbed) embeds, so the two write the same files.

    c = Cluster(3, base_dir, extra_props={"min.insync.replicas": "2"}, faults=True)
    c.start()                      # all nodes at once (a quorum needs them), then ready + cluster-ready
    c.node(2).kill9(); c.node(2).start(); c.node(1).pause(); c.node(1).resume(); c.node(3).stop() -> exit code
    c.net.drop(1, 2, one_way=True) # with faults=True: the links between nodes go through faultproxy
    c.close()                      # every process killed by PID, proxies closed

Used by the pytest fixture `cluster_factory` (conftest.py) and by scripts/cluster.py (start/status/kill/
stop/soak), on the same code.

Nodes started by a test get SIGKILL if the thread that started them dies (setpriv --pdeathsig), so a
killed or timed-out pytest leaves no broker behind; start nodes from the test's main thread (a helper
thread that exits would take its nodes with it). Ports are chosen free on 127.0.0.1. Each node has a directory base_dir/node<N> with node.properties,
node.log (stdout+stderr, appended across restarts) and data/ (log.dirs, kept across restarts).

With faults=True, every link between two nodes goes through a faultproxy.Proxy:
- controller links: node i's `controller.quorum.voters` names, for every other voter j, a proxy port
  P[i][j] that only node i is told about (so the source is known: node i), forwarding to j's CONTROLLER
  listener; its own entry is its real CONTROLLER port. The voters line thus differs per node file (same
  ids, other ports).
- inter-broker links (replica fetches, and clients after bootstrap): the broker's advertised PLAINTEXT
  listener is one proxy per destination node, forwarding to its real listener. Its address comes from
  the metadata, the same for every source, so the proxy tells sources apart by who holds the connecting
  socket (faultproxy.ProcResolver: /proc/net/tcp inode -> /proc/PID/fd of the node processes); anything
  else (the test's clients, kcat) is the source "client". Clients bootstrap on the real client ports.
Without faults the files are exactly the contract's shape.
"""
from __future__ import annotations

import faulthandler
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

from conftest import broker_binary, free_port, wait_until  # noqa: F401 - one copy of the e2e helpers
from faultproxy import CLIENT, FaultNet, ProcResolver, Proxy

# The cluster contract (one properties layout per process.roles, with {placeholders}), the lowered timeouts
# tests run with and the nodes' default environment: one file shared with the Rust test bed (crates/josef-testbed,
# which embeds it), so both write the same node files.
CONTRACT_PATH = Path(__file__).resolve().parents[2] / "crates" / "josef-testbed" / "contract.json"
CONTRACT = json.loads(CONTRACT_PATH.read_text())
# Lowered timeouts (issue 15 / 18): a broker fenced after 2 s without heartbeats, an ISR shrunk after 3 s of lag,
# a Raft election after 1 s, preferred leaders checked every 5 s.
FAST = dict(CONTRACT["timeouts"])


def contract_props(layout: str, **values) -> dict:
    """The contract's properties for a layout ("broker,controller", "broker", "controller", "single") with
    {node_id}, {voters}, {client_port}, {controller_port}, {advertised_port}, {log_dirs} filled in."""
    props = {}
    for key, template in CONTRACT["properties"][layout]:
        for name, value in values.items():
            template = template.replace("{" + name + "}", str(value))
        props[key] = template
    return props


LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def skewed_clock(offset: str) -> dict | None:
    """The environment that runs a node's wall clock `offset` off (libfaketime, e.g. "+1h", "-1h"):
    CLOCK_REALTIME only, so timers and Instants (CLOCK_MONOTONIC) run as usual. None without libfaketime
    (Debian's `faketime` package, which scripts/e2e.sh installs)."""
    if not os.path.exists(LIBFAKETIME):
        return None
    return {"LD_PRELOAD": LIBFAKETIME, "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "FAKETIME_NO_CACHE": "1"}


def api_versions_ok(port: int, timeout=2.0) -> bool:
    """Sends ApiVersions v0 on 127.0.0.1:port and returns True if it answers error_code 0."""
    client_id = b"josef-testbed"
    body = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        hdr = _recv_exactly(s, 4)
        (size,) = struct.unpack(">i", hdr)
        resp = _recv_exactly(s, size)
    corr, err = struct.unpack_from(">ih", resp)
    return corr == 7 and err == 0


def _recv_exactly(s, n):
    buf = b""
    while len(buf) < n:
        d = s.recv(n - len(buf))
        if not d:
            raise ConnectionError("connection closed")
        buf += d
    return buf


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return False


class Node:
    def __init__(self, cluster: "Cluster", node_id: int):
        self.cluster = cluster
        self.id = node_id
        self.dir = Path(cluster.base_dir) / f"node{node_id}"
        self.data_dir = self.dir / "data"
        self.props_path = self.dir / "node.properties"
        self.log_path = self.dir / "node.log"
        self.client_port = free_port()
        self.controller_port = free_port()
        self.proc: subprocess.Popen | None = None
        self.pid: int | None = None
        self.paused = False
        self.exit_codes: list = []
        self.mount = None  # a DiskMount on data_dir, if the test made one
        self._log_start = 0  # byte offset in node.log where the current run began

    # ---- addresses
    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def advertised_port(self) -> int:
        return self.cluster.client_proxies[self.id].port if self.cluster.faults else self.client_port

    def props(self) -> dict:
        c = self.cluster
        p = contract_props(
            "single" if c.single else "broker,controller",
            node_id=self.id, voters="" if c.single else c.voters_for(self.id), client_port=self.client_port,
            controller_port=self.controller_port, advertised_port=self.advertised_port, log_dirs=self.data_dir,
        )
        if not c.single:
            p.update(c.timeouts)
        p.update(c.extra_props)
        p.update(c.node_props.get(self.id, {}))
        return p

    # ---- lifecycle
    @property
    def running(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return self.pid is not None and pid_alive(self.pid)

    def launch(self, detach=False, rewrite=True):
        """Starts the process without waiting (a quorum needs its peers up to become ready). `detach`: in
        its own session (the CLI leaves it running); `rewrite=False` keeps the node.properties there."""
        if self.running:
            raise RuntimeError(f"node {self.id} is already running (pid {self.pid})")
        self.dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if rewrite or not self.props_path.exists():
            self.props_path.write_text("".join(f"{k}={v}\n" for k, v in self.props().items()))
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            log.write(f"==== testbed: starting node {self.id} at {time.strftime('%H:%M:%S')}\n".encode())
            env = dict(os.environ)
            for k, v in CONTRACT["env"]:
                env.setdefault(k, v)
            env.update(self.cluster.node_env.get(self.id, {}))
            cmd = [str(self.cluster.binary), "-c", str(self.props_path)]
            if not detach and shutil.which("setpriv"):
                # SIGKILL when the test process dies without its teardown (killed, timed out): setpriv
                # execs the broker in place (same PID), the parent-death signal survives the exec.
                cmd = ["setpriv", "--pdeathsig", "KILL", "--"] + cmd
            self.proc = subprocess.Popen(
                cmd,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                start_new_session=detach,
            )
        self.pid = self.proc.pid
        self.paused = False
        return self

    def wait_ready(self, timeout=60.0):
        """Ready: the process prints `listening on 127.0.0.1:<client port>` and answers ApiVersions."""
        want = f"listening on 127.0.0.1:{self.client_port}"

        def ready():
            if not self.running:
                raise RuntimeError(f"node {self.id} exited with {self.returncode()}; log:\n{self.log(8000)}")
            return want in self.current_log() and api_versions_ok(self.client_port)

        wait_until(ready, timeout=timeout, what=f"node {self.id} ready ({want} and ApiVersions)")
        return self

    def start(self, wait=True, timeout=60.0):
        self.launch()
        return self.wait_ready(timeout) if wait else self

    def returncode(self):
        return self.proc.poll() if self.proc is not None else None

    def signal(self, sig):
        if self.running:
            os.kill(self.pid, sig)

    def stop(self, timeout=30.0) -> int | None:
        """SIGTERM, wait for the exit, return the exit code (None for a process that is not our child)."""
        if not self.running:
            return self.returncode()
        self.signal(signal.SIGTERM)
        if self.paused:
            self.resume()
        try:
            wait_until(lambda: not self.running, timeout=timeout, what=f"node {self.id} exit after SIGTERM")
        except AssertionError:
            self.kill9()
            raise AssertionError(f"node {self.id} did not stop within {timeout}s after SIGTERM (killed)")
        code = self.returncode()
        self.exit_codes.append(code)
        return code

    def kill9(self):
        if self.running:
            os.kill(self.pid, signal.SIGKILL)
            if self.proc is not None:
                self.proc.wait(10)
            else:
                wait_until(lambda: not self.running, timeout=10, what=f"node {self.id} gone after SIGKILL")
            self.exit_codes.append(self.returncode())
        self.paused = False

    def proc_state(self):
        """The process state letter from /proc (R, S, T = stopped, Z, ...), None if gone."""
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError, TypeError):
            return None

    def pause(self):
        """SIGSTOP, returning once the kernel shows the process stopped."""
        self.signal(signal.SIGSTOP)
        self.paused = True
        wait_until(lambda: self.proc_state() in ("T", "t", None), timeout=10, interval=0.01,
                   what=f"node {self.id} stopped by SIGSTOP")

    def resume(self):
        self.signal(signal.SIGCONT)
        self.paused = False
        wait_until(lambda: self.proc_state() not in ("T", "t"), timeout=10, interval=0.01,
                   what=f"node {self.id} running after SIGCONT")

    def restart(self, wait=True):
        """SIGTERM, then start again on the same data dir and ports."""
        self.stop()
        return self.start(wait=wait)

    # ---- logs
    def log(self, tail=20000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-tail:]
        except FileNotFoundError:
            return ""

    def current_log(self) -> str:
        """The log of the current run only (since the last launch)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_start)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""


class Cluster:
    def __init__(self, n: int, base_dir, extra_props: dict | None = None, faults=False, single=False,
                 timeouts: dict | None = None, node_props: dict | None = None, binary=None, ids=None,
                 node_env: dict | None = None):
        """n nodes with ids 1..n (or `ids`). `extra_props` go into every node's file (and beat the
        defaults), `node_props` {id: {...}} into one node's, `node_env` {id: {...}} into one node's
        environment (e.g. a skewed clock through libfaketime, `skewed_clock`). `single` writes the single-node broker's file
        (no process.roles; n must be 1): the harness checked against today's broker."""
        if single and n != 1:
            raise ValueError("single mode runs one node")
        self.base_dir = Path(base_dir)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.extra_props = {k: str(v) for k, v in (extra_props or {}).items()}
        self.node_props = {i: {k: str(v) for k, v in d.items()} for i, d in (node_props or {}).items()}
        self.node_env = {i: dict(d) for i, d in (node_env or {}).items()}
        self.timeouts = dict(FAST if timeouts is None else timeouts)
        self.single = single
        self.faults = faults
        self.binary = Path(binary) if binary else broker_binary()
        self.nodes: dict[int, Node] = {i: Node(self, i) for i in (ids or range(1, n + 1))}
        self.net = FaultNet()
        self.client_proxies: dict[int, Proxy] = {}
        self.controller_proxies: dict[tuple, Proxy] = {}  # (src, dst) -> proxy
        if faults:
            resolver = ProcResolver(self.pids)
            for j, nd in self.nodes.items():
                self.client_proxies[j] = Proxy(self.net, nd.client_port, dst=j, resolve=resolver,
                                               name=f"plaintext-to-{j}")
                if not single:
                    for i in self.nodes:
                        if i != j:
                            self.controller_proxies[(i, j)] = Proxy(self.net, nd.controller_port, dst=j, src=i,
                                                                    name=f"controller-{i}-to-{j}")

    # ---- layout
    def voters_for(self, node_id: int) -> str:
        parts = []
        for j, nd in self.nodes.items():
            port = nd.controller_port
            if self.faults and j != node_id:
                port = self.controller_proxies[(node_id, j)].port
            parts.append(f"{j}@127.0.0.1:{port}")
        return ",".join(parts)

    def pids(self) -> dict:
        return {nd.pid: i for i, nd in self.nodes.items() if nd.pid is not None and nd.running}

    def node(self, i) -> Node:
        return self.nodes[i]

    @property
    def bootstrap(self) -> str:
        return ",".join(nd.bootstrap for nd in self.nodes.values())

    def running_bootstrap(self) -> str:
        return ",".join(nd.bootstrap for nd in self.nodes.values() if nd.running and not nd.paused)

    def data_dirs(self) -> dict:
        return {i: nd.data_dir for i, nd in self.nodes.items()}

    # ---- lifecycle
    def start(self, timeout=60.0, ready=True):
        for nd in self.nodes.values():
            if not nd.running:
                nd.launch()
        if ready:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=90.0, nodes=None):
        """Every (given, running) node ready, then cluster-ready: each one's Metadata lists them all."""
        deadline = time.monotonic() + timeout
        want = [self.nodes[i] for i in (nodes or self.nodes)]
        for nd in want:
            nd.wait_ready(max(1.0, deadline - time.monotonic()))
        if self.single:
            return self
        ids = {i for i, nd in self.nodes.items() if nd.running and not nd.paused}
        for nd in want:
            seen = {}

            def lists_all():
                seen["brokers"] = self.brokers_seen(nd.id)
                return seen["brokers"] >= ids

            try:
                wait_until(lists_all, timeout=max(1.0, deadline - time.monotonic()), interval=0.2,
                           what=f"node {nd.id}'s metadata listing brokers {sorted(ids)}")
            except AssertionError as e:
                raise AssertionError(f"{e} (last seen: {sorted(seen.get('brokers', []))})") from None
        return self

    def close(self):
        """Kills every node by PID (SIGKILL; a paused one too) and closes the proxies."""
        for nd in self.nodes.values():
            try:
                nd.kill9()
            except Exception:  # noqa: BLE001
                pass
            if nd.mount is not None:
                nd.mount.umount()
        for p in list(self.client_proxies.values()) + list(self.controller_proxies.values()):
            p.close()

    def stop_all(self, timeout=30.0) -> dict:
        """SIGTERM to every running node, then wait; returns {id: exit code}."""
        for nd in self.nodes.values():
            if nd.running:
                nd.signal(signal.SIGTERM)
                if nd.paused:
                    nd.resume()
        codes = {}
        for i, nd in self.nodes.items():
            try:
                wait_until(lambda: not nd.running, timeout=timeout, what=f"node {i} exit")
            except AssertionError:
                nd.kill9()
            codes[i] = nd.returncode()
        return codes

    # ---- metadata (confluent-kafka AdminClient; imported here so the module loads without it)
    def admin(self, node=None, **conf):
        from confluent_kafka.admin import AdminClient

        bs = self.nodes[node].bootstrap if node is not None else self.running_bootstrap()
        return AdminClient({"bootstrap.servers": bs, "socket.timeout.ms": 5000, **conf})

    def metadata(self, node=None, topic=None, timeout=5.0):
        """A Metadata answer: with `node`, that node's own. librdkafka sends list_topics to any broker it
        is connected to, and an admin client bootstrapped at one node connects to the others it learns
        of, so an answer from another node is asked again, by a new client (an old one may keep choosing
        the other node). (A node resumed from SIGSTOP serves its stale view until it catches up with the
        metadata log; the fault tests ask it on purpose.)"""
        if node is None:
            return self.admin().list_topics(topic=topic, timeout=timeout)
        deadline = time.monotonic() + timeout
        others = []
        while True:
            md = self.admin(node).list_topics(topic=topic, timeout=max(0.1, deadline - time.monotonic()))
            # -1: the bootstrap connection, which is `node`'s address
            if md.orig_broker_id in (node, -1):
                return md
            others.append(md.orig_broker_id)
            if time.monotonic() > deadline:
                raise AssertionError(f"no Metadata answer from node {node} itself within {timeout}s "
                                     f"(answered by {sorted(set(others))})")

    def brokers_seen(self, node=None) -> set:
        return set(self.metadata(node).brokers)

    def controller_id(self, node=None) -> int:
        """The controller id in a node's Metadata answer."""
        return self.metadata(node).controller_id

    ACTIVE = "this node is the active controller"
    NOT_ACTIVE = "no longer the active controller"

    def active_controller(self, settle_s: float = 10.0) -> int:
        """The active controller: the one running node whose log's last word on it (this run) is the
        driver's "this node is the active controller"; else, if no log says so, the Metadata controller id
        (which in KRaft is only *some* live broker: Kafka answers a random one, Josef the lowest id).
        Right after an election the deposed controller logs its deposition a moment after the new one
        logs its activation (soak seed 43: 0.9 s), so two claims are waited out for `settle_s` before
        they count as two active controllers."""
        deadline = time.monotonic() + settle_s
        while True:
            try:
                return self._active_controller_once()
            except AssertionError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)

    def _active_controller_once(self) -> int:
        claims = []
        for i, nd in self.nodes.items():
            if not nd.running or nd.paused:
                continue
            log = nd.current_log()
            a, b = log.rfind(self.ACTIVE), log.rfind(self.NOT_ACTIVE)
            if a >= 0 and a > b:
                claims.append(i)
        if len(claims) == 1:
            return claims[0]
        if not claims:
            return self.controller_id()
        raise AssertionError(f"nodes {claims} each say they are the active controller")

    def wait_replicas_converge(self, topics, timeout=30.0):
        """Bounded wait until every replica of `topics` has the same batches and log end (segment files
        compared across the nodes' data dirs); returns the last comparison either way (the caller's final
        check, after the nodes stopped, is the verdict)."""
        from history import compare_replicas

        last = {}

        def same():
            last["r"] = compare_replicas(self.data_dirs(), strict_ends=True, topics=set(topics))
            return last["r"].ok

        try:
            wait_until(same, timeout=timeout, interval=0.3, what=f"replicas of {sorted(topics)} equal")
        except AssertionError:
            pass
        return last.get("r")

    def partitions(self, topic, node=None) -> dict:
        """{partition: PartitionMetadata (leader, replicas, isrs, error)}."""
        md = self.metadata(node, topic)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            raise RuntimeError(f"topic {topic}: {t.error if t else 'absent'}")
        return dict(t.partitions)

    def leader_of(self, topic, partition=0, node=None) -> int:
        return self.partitions(topic, node)[partition].leader

    def create_topic(self, topic, partitions=1, rf=3, config=None, timeout=30.0):
        from confluent_kafka.admin import NewTopic

        admin = self.admin()  # kept alive until the futures resolve
        fs = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf,
                                           config=config or {})], operation_timeout=timeout)
        for f in fs.values():
            f.result(timeout=timeout)

    def wait_topic_ready(self, topic, partitions, rf=None, timeout=30.0, full_isr=True, node=None):
        """Every partition has a leader on a live broker (and an ISR of rf replicas if full_isr), in the
        Metadata of `node` (else of any running broker)."""

        seen = {}

        def ok():
            ps = self.partitions(topic, node)
            seen["last"] = {n: (p.leader, list(p.isrs)) for n, p in sorted(ps.items())}
            if len(ps) != partitions:
                return False
            for p in ps.values():
                if p.error is not None or p.leader < 0:
                    return False
                if full_isr and rf is not None and len(p.isrs) < rf:
                    return False
            return ps

        try:
            return wait_until(ok, timeout=timeout, interval=0.2,
                              what=f"topic {topic} with leaders" + (f" and ISRs of {rf}" if full_isr and rf else ""))
        except AssertionError as e:
            raise AssertionError(f"{e}; last seen {{partition: (leader, isr)}}: {seen.get('last')}") from None

    def wait_topic_settled(self, topic, partitions, rf, timeout=60.0):
        """Every running node's own Metadata names the same live leader and a full ISR (rf replicas) for
        every partition. Unlike wait_topic_ready (any one node's view), a node that still serves a view
        older than the last election (one resumed from SIGSTOP) holds this up: a client bootstrapped
        there would otherwise be sent to a deposed leader, whose frozen HW ends a read-back early."""
        seen = {}

        def ok():
            views = {}
            for i, nd in self.nodes.items():
                if not nd.running or nd.paused:
                    continue
                ps = self.partitions(topic, i)
                views[i] = {n: (p.leader, sorted(p.isrs)) for n, p in sorted(ps.items())}
            seen["last"] = views
            first = next(iter(views.values()), None)
            return first is not None and len(first) == partitions and all(
                v == first for v in views.values()) and all(
                leader >= 0 and len(isr) >= rf for leader, isr in first.values())

        try:
            wait_until(ok, timeout=timeout, interval=0.2, what=f"every node's view of {topic} settled")
        except AssertionError as e:
            raise AssertionError(f"{e}; last seen per node {{partition: (leader, isr)}}: {seen.get('last')}") from None

    # ---- diagnostics
    def dump_stacks(self, why="") -> Path:
        """For a test about to fail on a stall, while the nodes still run: every running node's all-thread
        stacks (gdb batch attach; a stuck task or a deadlock shows as threads parked in the same lock) and
        its own Metadata view (kcat -L at that node only; a node whose metadata stopped shows stale
        leaders), and this test process's Python threads (a workload stuck in a client call or on a lock).
        Saved under base_dir/diag-<time>/ (kept with the failed test's dir); returns that dir.
        Best effort: a missing gdb or kcat leaves a note in the file instead."""
        out = self.base_dir / f"diag-{time.strftime('%H%M%S')}"
        out.mkdir(parents=True, exist_ok=True)
        (out / "why.txt").write_text(f"{time.strftime('%H:%M:%S')} {why}\n")
        with open(out / "pytest-threads.txt", "w") as f:
            faulthandler.dump_traceback(file=f, all_threads=True)
        jobs = {"pytest-c-stacks.txt": ["gdb", "-p", str(os.getpid()), "-batch", "-ex", "set pagination off",
                                        "-ex", "thread apply all bt"]}
        for i, nd in self.nodes.items():
            if not nd.running or nd.pid is None:
                continue
            jobs[f"node{i}-stacks.txt"] = ["gdb", "-p", str(nd.pid), "-batch", "-ex", "set pagination off",
                                           "-ex", "thread apply all bt"]
            jobs[f"node{i}-metadata.txt"] = ["kcat", "-L", "-b", nd.bootstrap, "-m", "5",
                                             "-X", "topic.metadata.refresh.interval.ms=-1"]
        for name, cmd in jobs.items():
            if shutil.which(cmd[0]) is None:
                (out / name).write_text(f"{cmd[0]} is not installed\n")
                continue
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                (out / name).write_text(r.stdout + r.stderr)
            except subprocess.TimeoutExpired as e:
                (out / name).write_text(f"timed out: {e}\n")
        return out

    # ---- logs
    def logs(self, tail=12000) -> str:
        return "\n".join(f"---- node {i} ({nd.log_path}) ----\n{nd.log(tail)}" for i, nd in self.nodes.items())

    def grep_logs(self, needle) -> dict:
        return {i: [ln for ln in nd.log(10**7).splitlines() if needle in ln] for i, nd in self.nodes.items()}

    # ---- state file for the CLI
    def save_state(self):
        st = {"nodes": {str(i): {"pid": nd.pid, "client_port": nd.client_port, "controller_port": nd.controller_port,
                                 "dir": str(nd.dir)} for i, nd in self.nodes.items()},
              "binary": str(self.binary), "single": self.single}
        (self.base_dir / "cluster.json").write_text(json.dumps(st, indent=1))

    @classmethod
    def from_state(cls, base_dir) -> "Cluster":
        st = json.loads((Path(base_dir) / "cluster.json").read_text())
        ids = sorted(int(i) for i in st["nodes"])
        c = cls(len(ids), base_dir, binary=st["binary"], ids=ids, single=st.get("single", False))
        for i in ids:
            s, nd = st["nodes"][str(i)], c.nodes[i]
            nd.pid, nd.client_port, nd.controller_port = s["pid"], s["client_port"], s["controller_port"]
            if nd.pid and not pid_alive(nd.pid):
                nd.pid = None
        return c


class DiskMount:
    """A small filesystem mounted on a directory (a node's data dir), made by the test and removed by it.

    kind="tmpfs": ENOSPC by fill() (or a small size), more space by resize() or unfill().
    kind="ext4": an ext4 image on a loop device mounted with errors=remount-ro, for a *live* read-only
    remount: `mount -o remount,ro` refuses while the broker has files open for writing ("mount point is
    busy"), so make_read_only() raises an ext4 error through /sys/fs/ext4/<dev>/trigger_fs_error and the
    kernel turns the mounted filesystem read-only under the running broker (EROFS on every write), as when a
    disk fails. restore() (with the node stopped) unmounts, runs e2fsck -fy and mounts it writable again.
    Needs root (CAP_SYS_ADMIN); `DiskMount.unavailable(kind)` says why not, or None."""

    def __init__(self, path, size_mb=16, kind="tmpfs"):
        assert kind in ("tmpfs", "ext4")
        self.path = Path(path)
        self.size_mb = size_mb
        self.kind = kind
        self.mounted = False
        self.loop = None
        self.image = self.path.parent / f"{self.path.name}.ext4.img"

    @staticmethod
    def unavailable(kind="tmpfs") -> str | None:
        need = ["mount", "umount"] + (["losetup", "mkfs.ext4", "e2fsck", "blockdev"] if kind == "ext4" else [])
        missing = [t for t in need if shutil.which(t) is None]
        if missing:
            return f"missing {', '.join(missing)}"
        probe = Path(f"/tmp/josef-mount-probe-{os.getpid()}-{kind}")
        probe.mkdir(parents=True, exist_ok=True)
        m = DiskMount(probe / "d", size_mb=8, kind=kind)
        try:
            m.mount()
            if kind == "ext4":
                m.make_read_only()
                try:
                    (m.path / "x").write_bytes(b"x")
                    return "an ext4 error did not turn the filesystem read-only"
                except OSError:
                    pass
            return None
        except Exception as e:  # noqa: BLE001
            return str(e)
        finally:
            m.umount()
            shutil.rmtree(probe, ignore_errors=True)

    def _run(self, *args, ok=(0,)) -> str:
        r = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
        if r.returncode not in ok:
            raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip() or r.returncode}")
        return r.stdout.strip()

    def mount(self):
        self.path.mkdir(parents=True, exist_ok=True)
        if self.kind == "tmpfs":
            self._run("mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m,mode=0755", "tmpfs", str(self.path))
        else:
            with open(self.image, "wb") as f:
                f.truncate(self.size_mb << 20)
            self._run("mkfs.ext4", "-q", "-F", str(self.image))
            self.loop = self._run("losetup", "-f", "--show", str(self.image))
            self._run("blockdev", "--setrw", self.loop)
            self._run("mount", "-o", "errors=remount-ro", self.loop, str(self.path))
        self.mounted = True
        return self

    def make_read_only(self):
        if self.kind == "tmpfs":
            self._run("mount", "-o", "remount,ro", str(self.path))  # only works with no file open for writing
            return
        dev = os.path.basename(self.loop)
        Path(f"/sys/fs/ext4/{dev}/trigger_fs_error").write_text("josef test bed: disk goes read-only\n")

    def restore(self):
        """Writable again (the node using it must be stopped for ext4)."""
        if self.kind == "tmpfs":
            self._run("mount", "-o", "remount,rw", str(self.path))
            return
        self._run("umount", str(self.path))
        self._run("e2fsck", "-fy", self.loop, ok=(0, 1))
        self._run("mount", "-o", "errors=remount-ro", self.loop, str(self.path))

    def resize(self, size_mb):
        assert self.kind == "tmpfs"
        self._run("mount", "-o", f"remount,size={size_mb}m", str(self.path))
        self.size_mb = size_mb

    def fill(self, leave_bytes=0) -> Path:
        """Writes a filler file until the filesystem is full (but `leave_bytes`)."""
        filler = self.path / "filler"
        st = os.statvfs(self.path)
        free = st.f_bavail * st.f_frsize - leave_bytes
        chunk = b"\0" * (1 << 20)
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            while free > 0:
                try:
                    n = os.write(fd, chunk[: min(len(chunk), free)])
                except OSError:  # ENOSPC: full (the broker's own writes raced us there)
                    break
                free -= n
            while True:  # the last bytes statvfs did not count (reserved blocks, rounding)
                try:
                    os.write(fd, chunk[:4096])
                except OSError:
                    break
        finally:
            os.close(fd)
        return filler

    def unfill(self):
        (self.path / "filler").unlink(missing_ok=True)

    def umount(self):
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True, timeout=30)
            self.mounted = False
        if self.loop:
            subprocess.run(["losetup", "-d", self.loop], capture_output=True, timeout=30)
            self.loop = None
        if self.image.exists():
            self.image.unlink()
