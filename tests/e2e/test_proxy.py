"""examples/logging_proxy.rs (a proxy built on josef-protocol alone) in front of josef-broker: real
clients produce, consume and run a consumer group through it, and it logs what passes."""
import os
import re
import subprocess
from pathlib import Path

import pytest

from clients import cfk_consume, cfk_create_topic, cfk_produce, kcat
from conftest import REPO, unique, wait_until


def proxy_binary() -> Path:
    env = os.environ.get("JOSEF_PROXY_BIN")
    if env:
        return Path(env)
    for profile in ("release", "debug"):
        p = REPO / "target" / profile / "examples" / "logging_proxy"
        if p.exists():
            return p
    raise RuntimeError("logging_proxy not built: cargo build -p josef --example logging_proxy")


class Proxy:
    def __init__(self, upstream: str, log_path: Path):
        self.log_path = log_path
        self.log_file = open(log_path, "wb")
        self.proc = subprocess.Popen([str(proxy_binary()), "0", upstream], stdout=self.log_file,
                                     stderr=subprocess.STDOUT)
        m = wait_until(lambda: re.search(r"proxying ([0-9.]+:\d+)", self.log()), timeout=30,
                       what="proxy to listen")
        self.bootstrap = m.group(1)

    def log(self) -> str:
        if self.proc.poll() is not None:
            raise RuntimeError(f"proxy exited with {self.proc.returncode}: {self.log_path.read_text()}")
        return self.log_path.read_text(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log_file.close()


@pytest.fixture
def proxy(broker):
    p = Proxy(broker.bootstrap, broker.data_dir.parent / f"proxy-{broker.port}.log")
    yield p
    p.stop()


def test_kcat_produces_and_consumes_through_the_proxy(proxy):
    topic = unique("proxied")
    metadata = kcat(["-b", proxy.bootstrap, "-L", "-t", topic]).decode()
    # The broker's address was rewritten: kcat sees only the proxy.
    assert f"at {proxy.bootstrap}" in metadata, metadata
    lines = [f"line-{i}" for i in range(50)]
    kcat(["-b", proxy.bootstrap, "-P", "-t", topic, "-p", "0"], input_bytes=("\n".join(lines) + "\n").encode())
    out = kcat(["-b", proxy.bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-c", "50", "-e"])
    assert out.decode().split() == lines
    log = proxy.log()
    for api in ("ApiVersions", "Metadata", "Produce", "Fetch"):
        assert f"-> {api} v" in log, f"{api} not logged:\n{log[-3000:]}"
    assert "(broker addresses rewritten)" in log
    # The produce requests were read through their borrowed views: topic, partition, record bytes.
    assert re.search(rf"    {re.escape(topic)}\[0\]: [1-9][0-9]* bytes", log), log[-3000:]


def test_consumer_group_finds_its_coordinator_through_the_proxy(proxy):
    topic = unique("proxied-group")
    cfk_create_topic(proxy.bootstrap, topic, partitions=2)
    msgs = [{"key": f"k{i}".encode(), "value": f"v{i}".encode()} for i in range(40)]
    cfk_produce(proxy.bootstrap, topic, msgs)
    got = cfk_consume(proxy.bootstrap, topic, 40, group=unique("g"))
    assert sorted(m["value"] for m in got) == sorted(m["value"] for m in msgs)
    log = proxy.log()
    for api in ("FindCoordinator", "JoinGroup", "SyncGroup", "OffsetFetch"):
        assert f"-> {api} v" in log, f"{api} not logged:\n{log[-3000:]}"
