"""A real Prometheus server (Debian's `prometheus` package, installed by scripts/e2e.sh) scrapes the
broker's `/metrics` every second while a producer and a consumer load it; the series are read back
through Prometheus's HTTP API (/api/v1/query), with bounded waits."""
import json
import shutil
import subprocess
import urllib.parse
import urllib.request

import pytest

from clients import cfk_consume, cfk_create_topic, cfk_produce
from conftest import free_port, unique, wait_until


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


class Prometheus:
    """A prometheus server process with its own data dir and port, stopped by PID."""

    def __init__(self, binary, workdir, target):
        self.port = free_port()
        self.workdir = workdir
        config = workdir / "prometheus.yml"
        config.write_text(
            "global:\n"
            "  scrape_interval: 1s\n"
            "  scrape_timeout: 1s\n"
            "scrape_configs:\n"
            "  - job_name: josef\n"
            "    static_configs:\n"
            f"      - targets: ['{target}']\n"
        )
        self.log_path = workdir / "prometheus.log"
        self.proc = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=open(self.log_path, "ab"), stderr=subprocess.STDOUT)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def ready(self):
        if self.proc.poll() is not None:
            raise RuntimeError(f"prometheus exited with {self.proc.returncode}:\n{self.log()}")
        return http_get(self.url("/-/ready"))[0] == 200

    def query(self, expr):
        """The instant vector of `expr`: [(labels, value)]."""
        status, body = http_get(self.url("/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
        r = json.loads(body)
        assert status == 200 and r["status"] == "success", body
        return [(s["metric"], float(s["value"][1])) for s in r["data"]["result"]]

    def value(self, expr):
        """The one sample of `expr`, or None when there is none yet."""
        result = self.query(expr)
        return result[0][1] if len(result) == 1 else None

    def log(self):
        return self.log_path.read_text(errors="replace")[-5000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def prometheus_binary():
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("Debian's prometheus package is not installed (scripts/e2e.sh installs it where apt-get works)")
    return binary


def test_prometheus_scrapes_the_broker_during_a_load(broker_factory, prometheus_binary, tmp_path):
    metrics_port = free_port()
    b = broker_factory({"prometheus.listener": f"127.0.0.1:{metrics_port}"})
    status, text = http_get(f"http://127.0.0.1:{metrics_port}/metrics")
    assert status == 200 and "kafka_server_replicamanager_partitioncount" in text, text[:2000]

    prom = Prometheus(prometheus_binary, tmp_path, f"127.0.0.1:{metrics_port}")
    try:
        wait_until(prom.ready, timeout=60, what="prometheus ready")
        wait_until(lambda: prom.value('up{job="josef"}') == 1.0, timeout=30, what="the broker scraped and up")

        topic = unique("prom")
        cfk_create_topic(b.bootstrap, topic, partitions=2)
        series = f'kafka_server_brokertopicmetrics_bytesin_total{{job="josef",topic="{topic}"}}'
        messages_in = f'kafka_server_brokertopicmetrics_messagesin_total{{topic="{topic}"}}'
        produced = 0
        seen = []
        # A load in rounds: Prometheus must see the counter grow from round to round.
        for round_ in range(3):
            batch = [{"key": f"k{i}".encode(), "value": b"x" * 500} for i in range(300)]
            cfk_produce(b.bootstrap, topic, batch, {"acks": "all"})
            produced += len(batch)
            want = produced
            # Messages first: a scrape that has them all has this round's bytes too (the bytes are
            # read after, from that scrape or a later one).
            wait_until(lambda: (prom.value(messages_in) or 0) >= want, timeout=30,
                       what=f"round {round_}: {want} messages in Prometheus")
            seen.append(prom.value(series))
        assert seen[0] >= 300 * 500 and seen[0] < seen[1] < seen[2], seen
        # What Prometheus stored is what the broker counts (no load since the last scrape).
        _, text = http_get(f"http://127.0.0.1:{metrics_port}/metrics")
        direct = [l for l in text.splitlines()
                  if l.startswith(f'kafka_server_brokertopicmetrics_bytesin_total{{topic="{topic}"}}')]
        assert direct and float(direct[0].rsplit(" ", 1)[1]) == seen[2], (direct, seen)

        got = cfk_consume(b.bootstrap, topic, produced, partitions=[0, 1], timeout=60)
        assert len(got) == produced
        bytes_out = f'kafka_server_brokertopicmetrics_bytesout_total{{topic="{topic}"}}'
        wait_until(lambda: (prom.value(bytes_out) or 0) >= produced * 500, timeout=30, what="bytes out scraped")
        # Requests per API and version, latency histograms per API, the log size per partition.
        produce_requests = prom.query('sum by (version) (kafka_network_requestmetrics_requests_total{request="Produce"})')
        assert produce_requests and sum(v for _, v in produce_requests) >= 3, produce_requests
        p99 = prom.value('histogram_quantile(0.99, sum by (le) '
                         '(kafka_network_requestmetrics_totaltimems_bucket{request="Produce"}))')
        assert p99 is not None and p99 > 0, p99
        sizes = prom.query(f'kafka_log_log_size{{topic="{topic}"}}')
        assert sorted(m["partition"] for m, _ in sizes) == ["0", "1"], sizes
        assert sum(v for _, v in sizes) >= produced * 500, sizes
        assert prom.value("kafka_controller_kafkacontroller_activecontrollercount") == 1.0
        assert prom.value('kafka_server_socketservermetrics_connection_count{listener="PLAINTEXT"}') is not None
    finally:
        prom.stop()


def scrape(port):
    """{(name, frozenset(labels)): value} of one broker's /metrics."""
    _, text = http_get(f"http://127.0.0.1:{port}/metrics")
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, value = line.rsplit(" ", 1)
        name, _, labels = series.partition("{")
        pairs = frozenset(tuple(p.split("=", 1)) for p in labels.rstrip("}").replace('"', "").split(",") if p)
        out[(name, pairs)] = float(value)
    return out


def gauge(port, name):
    return scrape(port).get((name, frozenset()))


@pytest.mark.cluster
def test_cluster_nodes_report_one_active_controller_and_isr_changes(cluster_factory):
    """3 combined nodes, each with its endpoint: exactly one reports ActiveControllerCount 1 (the
    active controller); a follower killed shows as UnderReplicatedPartitions and an ISR shrink on
    the leader, and its return as an ISR expansion."""
    ports = {i: free_port() for i in (1, 2, 3)}
    # The leader drops a stopped follower from the ISR itself (counted as a shrink, as in Kafka)
    # long before the controller would fence it (a fenced broker leaves the ISR by the
    # controller's hand, which Kafka's leader does not count).
    timeouts = {"broker.session.timeout.ms": "15000", "broker.heartbeat.interval.ms": "500",
                "replica.lag.time.max.ms": "1000", "controller.quorum.election.timeout.ms": "1000"}
    c = cluster_factory(3, timeouts=timeouts,
                        node_props={i: {"prometheus.listener": f"127.0.0.1:{p}"} for i, p in ports.items()})
    active = "kafka_controller_kafkacontroller_activecontrollercount"

    def one_active():
        counts = {i: gauge(p, active) for i, p in ports.items()}
        return [i for i, v in counts.items() if v == 1.0] if sum(counts.values()) == 1 else None

    [controller] = wait_until(one_active, timeout=60, what="exactly one active controller")
    assert controller == c.active_controller()
    assert gauge(ports[controller], "kafka_controller_kafkacontroller_offlinepartitionscount") == 0.0

    topic = unique("prom-isr")
    c.create_topic(topic, partitions=1, rf=3)
    c.wait_topic_ready(topic, 1, rf=3)
    leader = c.leader_of(topic)
    follower = next(i for i in ports if i not in (leader, controller))
    under = "kafka_server_replicamanager_underreplicatedpartitions"
    shrinks = ("kafka_server_replicamanager_isrshrinks_total", frozenset())
    expands = ("kafka_server_replicamanager_isrexpands_total", frozenset())
    assert wait_until(lambda: gauge(ports[leader], under) == 0.0, timeout=30, what="fully replicated")
    before = scrape(ports[leader])
    c.nodes[follower].pause()
    try:
        # An idle follower at the log end stays caught up (Kafka's rule): records make it lag.
        cfk_produce(c.nodes[leader].bootstrap, topic, [{"value": b"v" * 100, "partition": 0}] * 20, {"acks": "1"})
        wait_until(lambda: (gauge(ports[leader], under) or 0) >= 1.0, timeout=30,
                   what=f"the leader {leader} reports the partition under-replicated")
        wait_until(lambda: scrape(ports[leader])[shrinks] > before.get(shrinks, 0.0), timeout=10,
                   what="the ISR shrink counted")
    finally:
        c.nodes[follower].resume()
    wait_until(lambda: gauge(ports[leader], under) == 0.0, timeout=60, what="the follower back in the ISR")
    assert scrape(ports[leader])[expands] > before.get(expands, 0.0)
