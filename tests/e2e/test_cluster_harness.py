"""The test bed itself, checked against today's broker (no cluster mode needed, so not marked `cluster`):
properties files per the contract, a single-node Cluster started/paused/killed/restarted/stopped by PID,
the fault proxy in front of a real broker with real clients, and the CLI (scripts/cluster.py)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from cluster import FAST, Cluster, api_versions_ok, wait_until
from conftest import unique
from faultproxy import CLIENT
from history import READ_UNCOMMITTED, History, check
from workloads import IdempotentProducer, read_back

REPO = Path(__file__).resolve().parents[2]


def read_props(path):
    return dict(line.split("=", 1) for line in Path(path).read_text().splitlines() if "=" in line)


def test_properties_follow_the_cluster_contract(tmp_path):
    c = Cluster(3, tmp_path, extra_props={"min.insync.replicas": 2}, node_props={2: {"broker.rack": "r2"}})
    try:
        for nd in c.nodes.values():
            nd.dir.mkdir(parents=True)
            nd.props_path.write_text("".join(f"{k}={v}\n" for k, v in nd.props().items()))
        voters = "1@127.0.0.1:{},2@127.0.0.1:{},3@127.0.0.1:{}".format(*(c.nodes[i].controller_port for i in (1, 2, 3)))
        ports = set()
        for i, nd in c.nodes.items():
            p = read_props(nd.props_path)
            assert p["process.roles"] == "broker,controller"
            assert p["node.id"] == str(i)
            assert p["controller.quorum.voters"] == voters
            assert p["listeners"] == f"PLAINTEXT://127.0.0.1:{nd.client_port},CONTROLLER://127.0.0.1:{nd.controller_port}"
            assert p["advertised.listeners"] == f"PLAINTEXT://127.0.0.1:{nd.client_port}"
            assert p["controller.listener.names"] == "CONTROLLER"
            assert p["inter.broker.listener.name"] == "PLAINTEXT"
            assert p["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
            assert p["log.dirs"] == str(nd.data_dir)
            assert p["min.insync.replicas"] == "2"
            for k, v in FAST.items():
                assert p[k] == v
            assert ("broker.rack" in p) == (i == 2)
            ports |= {nd.client_port, nd.controller_port}
        assert len(ports) == 6
    finally:
        c.close()


def test_properties_with_fault_proxies_route_every_link_through_a_proxy(tmp_path):
    c = Cluster(3, tmp_path, faults=True)
    try:
        real = {nd.controller_port for nd in c.nodes.values()} | {nd.client_port for nd in c.nodes.values()}
        for i, nd in c.nodes.items():
            p = nd.props()
            entries = dict(e.split("@") for e in p["controller.quorum.voters"].split(","))
            assert set(entries) == {"1", "2", "3"}
            for j, addr in entries.items():
                port = int(addr.rsplit(":", 1)[1])
                if int(j) == i:
                    assert port == nd.controller_port  # its own entry is its real listener
                else:
                    assert port == c.controller_proxies[(i, int(j))].port and port not in real
            adv = int(p["advertised.listeners"].rsplit(":", 1)[1])
            assert adv == c.client_proxies[i].port and adv not in real
            assert c.client_proxies[i].target_port == nd.client_port
        # node i's route to j is its own: six distinct controller proxies
        assert len({px.port for px in c.controller_proxies.values()}) == 6
    finally:
        c.close()


def test_single_node_lifecycle_by_pid(cluster_factory):
    c = cluster_factory(1, single=True, timeouts={})
    nd = c.node(1)
    assert nd.running and "listening on 127.0.0.1:%d" % nd.client_port in nd.log()
    assert c.brokers_seen() == {1}
    topic = unique("harness")
    c.create_topic(topic, partitions=2, rf=1)
    h = History()
    w = IdempotentProducer(c.bootstrap, topic, h, count=200)
    w.start()
    w.finish(60)
    assert not w.errors, w.errors

    nd.pause()  # SIGSTOP: the process is there but answers nothing
    with open(f"/proc/{nd.pid}/stat") as f:
        assert f.read().rsplit(")", 1)[1].split()[0] == "T"
    with pytest.raises(OSError):
        api_versions_ok(nd.client_port, timeout=0.5)
    nd.resume()
    wait_until(lambda: api_versions_ok(nd.client_port), timeout=10, what="answers after SIGCONT")

    pid = nd.pid
    nd.kill9()
    assert not nd.running and nd.exit_codes[-1] == -9
    nd.start()  # same data dir and port
    assert nd.pid != pid
    read_back(c.bootstrap, topic, [0, 1], h, READ_UNCOMMITTED)
    r = check(h)
    assert r.ok and r.counts["acked"] == 200, r.summary()

    assert nd.stop() == 0  # SIGTERM
    nd.start()
    assert nd.current_log().count("==== testbed: starting node 1") == 1
    assert nd.log(10**7).count("==== testbed: starting node 1") == 3


def test_fault_proxy_in_front_of_a_real_broker(cluster_factory):
    """The broker advertises the proxy; a real producer goes through it; drop stalls it, heal delivers."""
    c = cluster_factory(1, single=True, timeouts={}, faults=True)
    topic = unique("proxied")
    c.create_topic(topic, rf=1)
    md = c.metadata()
    assert md.brokers[1].port == c.client_proxies[1].port
    acks = []
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 0, "message.timeout.ms": 30000})
    p.produce(topic, b"before", on_delivery=lambda e, m: acks.append((e, m.value())))
    assert p.flush(20) == 0
    assert c.client_proxies[1].accepted[CLIENT] >= 1  # this process is no node: "client"
    c.net.drop(CLIENT, 1, one_way=True)
    p.produce(topic, b"during", on_delivery=lambda e, m: acks.append((e, m.value())))
    assert p.flush(1.5) == 1, "a record crossed a dropped link"
    c.net.heal()
    assert p.flush(30) == 0
    assert [v for e, v in acks if e is None] == [b"before", b"during"]
    c.net.cut(CLIENT, 1)
    c.net.heal()
    p.produce(topic, b"after-cut", on_delivery=lambda e, m: acks.append((e, m.value())))
    assert p.flush(30) == 0
    assert acks[-1] == (None, b"after-cut")


def test_cli_start_status_kill_stop(tmp_path):
    d = tmp_path / "cli"
    py = [sys.executable, str(REPO / "scripts" / "cluster.py")]

    def run(*args, check=True):
        r = subprocess.run(py + list(args) + ["--dir", str(d)], capture_output=True, text=True, timeout=120)
        if check:
            assert r.returncode == 0, r.stdout + r.stderr
        return r

    pid = None
    try:
        out = run("start", "--nodes", "1", "--single").stdout
        st = json.loads((d / "cluster.json").read_text())
        pid = st["nodes"]["1"]["pid"]
        assert "node 1" in out and os.path.exists(f"/proc/{pid}")
        s = run("status").stdout
        assert "ready" in s, s
        run("kill", "1")
        wait_until(lambda: not os.path.exists(f"/proc/{pid}") or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2],
                   timeout=10, what="node killed")
        assert "down" in run("status", check=False).stdout
        run("restart", "1")
        pid = json.loads((d / "cluster.json").read_text())["nodes"]["1"]["pid"]
        assert "ready" in run("status").stdout
        run("stop")
        assert "down" in run("status", check=False).stdout
    finally:
        if pid and os.path.exists(f"/proc/{pid}"):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
