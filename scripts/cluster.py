#!/usr/bin/env python3
"""Run a Josef test cluster on this machine (the code of tests/e2e/cluster.py).

    scripts/cluster.py start --nodes 3 --dir DIR [--set KEY=VALUE ...] [--single]
    scripts/cluster.py status --dir DIR
    scripts/cluster.py kill N --dir DIR [--signal KILL|TERM|STOP|CONT]
    scripts/cluster.py restart N --dir DIR
    scripts/cluster.py stop --dir DIR
    scripts/cluster.py soak --seed S --duration SECONDS [--nodes 3] [--dir DIR] [--out result.json]

`start` leaves the nodes running in the background (their PIDs in DIR/cluster.json, logs in
DIR/node<N>/node.log); the fault proxies live in a Python process, so network faults are available to
`soak` and to the tests (tests/e2e/test_cluster_*.py), not to a detached `start`. The binary is
$JOSEF_BROKER_BIN, else target/{release,debug}/josef-broker. Runs under the repository's .venv.
"""
import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENV_PY = REPO / ".venv" / "bin" / "python"
if VENV_PY.exists() and sys.prefix != str(VENV_PY.parent.parent) and not os.environ.get("JOSEF_NO_VENV"):
    os.execv(str(VENV_PY), [str(VENV_PY)] + sys.argv)  # confluent-kafka and pytest live there
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from cluster import Cluster, api_versions_ok, pid_alive  # noqa: E402


def cmd_start(a):
    props = dict(kv.split("=", 1) for kv in a.set)
    c = Cluster(a.nodes, a.dir, extra_props=props, single=a.single, timeouts={} if a.single else None)
    for nd in c.nodes.values():
        nd.launch(detach=True)
    c.save_state()
    try:
        c.wait_ready(a.timeout)
    except Exception as e:  # noqa: BLE001
        print(f"not ready: {e}\n{c.logs(4000)}", file=sys.stderr)
        return 1
    for i, nd in c.nodes.items():
        print(f"node {i}: pid {nd.pid}, client 127.0.0.1:{nd.client_port}, controller "
              f"127.0.0.1:{nd.controller_port}, log {nd.log_path}")
    print(f"bootstrap.servers={c.bootstrap}")
    return 0


def state_of(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def cmd_status(a):
    c = Cluster.from_state(a.dir)
    down = 0
    for i, nd in c.nodes.items():
        if not nd.pid:
            print(f"node {i}: down")
            down += 1
            continue
        st = "paused" if state_of(nd.pid) == "T" else "running"
        try:
            ready = "ready" if api_versions_ok(nd.client_port, timeout=2) else "not answering"
        except OSError as e:
            ready = f"not answering ({e})"
        extra = ""
        if ready == "ready":
            try:
                md = c.metadata(i, timeout=5)
                extra = f", brokers {sorted(md.brokers)}, controller {md.controller_id}"
            except Exception as e:  # noqa: BLE001
                extra = f", metadata: {e}"
        print(f"node {i}: pid {nd.pid} {st}, {ready}{extra}")
    return 1 if down else 0


def cmd_kill(a):
    c = Cluster.from_state(a.dir)
    nd = c.nodes[a.node]
    if not nd.pid:
        print(f"node {a.node} is not running", file=sys.stderr)
        return 1
    os.kill(nd.pid, getattr(signal, "SIG" + a.signal.upper()))
    print(f"node {a.node}: SIG{a.signal.upper()} sent to pid {nd.pid}")
    return 0


def cmd_restart(a):
    c = Cluster.from_state(a.dir)
    nd = c.nodes[a.node]
    if nd.pid and pid_alive(nd.pid):
        os.kill(nd.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while pid_alive(nd.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if pid_alive(nd.pid):
            os.kill(nd.pid, signal.SIGKILL)
    nd.pid = None
    nd.launch(detach=True, rewrite=False)
    c.save_state()
    nd.wait_ready(a.timeout)
    print(f"node {a.node}: pid {nd.pid}")
    return 0


def cmd_stop(a):
    c = Cluster.from_state(a.dir)
    live = [nd for nd in c.nodes.values() if nd.pid]
    for nd in live:
        os.kill(nd.pid, signal.SIGTERM)
        if state_of(nd.pid) == "T":
            os.kill(nd.pid, signal.SIGCONT)
    deadline = time.monotonic() + 30
    while any(pid_alive(nd.pid) for nd in live) and time.monotonic() < deadline:
        time.sleep(0.05)
    rc = 0
    for nd in live:
        if pid_alive(nd.pid):
            os.kill(nd.pid, signal.SIGKILL)
            print(f"node {nd.id}: killed (no exit 30 s after SIGTERM)")
            rc = 1
        else:
            print(f"node {nd.id}: stopped")
    return rc


def cmd_soak(a):
    from soak import soak

    d = a.dir or tempfile.mkdtemp(prefix=f"josef-soak-{a.seed}-")
    print(f"soak seed {a.seed}, {a.duration}s, {a.nodes} nodes, in {d}")
    res = soak(a.seed, a.duration, a.nodes, d, out=a.out,
               log=lambda m: print(f"[{time.strftime('%H:%M:%S')}] {m}", flush=True))
    print(res)
    return 0 if res["ok"] else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start")
    s.add_argument("--nodes", type=int, default=3)
    s.add_argument("--single", action="store_true", help="one single-node broker (no process.roles)")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    for name in ("status", "stop"):
        sub.add_parser(name)
    k = sub.add_parser("kill")
    k.add_argument("node", type=int)
    k.add_argument("--signal", default="KILL")
    r = sub.add_parser("restart")
    r.add_argument("node", type=int)
    so = sub.add_parser("soak")
    so.add_argument("--seed", type=int, required=True)
    so.add_argument("--duration", type=float, required=True, help="seconds of faults")
    so.add_argument("--nodes", type=int, default=3)
    so.add_argument("--out", help="write the result (JSON) here, and the history next to it")
    for p in (s, k, r, so) + tuple(sub.choices[n] for n in ("status", "stop")):
        p.add_argument("--dir", required=p is not so)
        p.add_argument("--timeout", type=float, default=90.0)
    a = ap.parse_args(argv)
    return {"start": cmd_start, "status": cmd_status, "kill": cmd_kill, "restart": cmd_restart,
            "stop": cmd_stop, "soak": cmd_soak}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
