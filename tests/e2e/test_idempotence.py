"""Idempotent producer through a proxy that cuts connections: no duplicate, no gap."""
from clients import cfk_consume, cfk_create_topic, cfk_produce, cfk_watermarks
from conftest import free_port, unique
from proxy import CuttingProxy


def test_idempotent_producer_through_cutting_proxy_has_no_duplicate_and_no_gap(broker_factory):
    b = broker_factory(start=False)
    proxy = CuttingProxy(b.port, cut_every=0)  # start transparent, cut once the broker is up
    b.extra["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{proxy.port}"
    b.start()
    try:
        topic = unique("idem")
        cfk_create_topic(f"127.0.0.1:{proxy.port}", topic, partitions=1)
        proxy.cut_every = 5
        n = 2000
        msgs = [{"value": f"{i:06d}".encode(), "partition": 0} for i in range(n)]
        cfk_produce(f"127.0.0.1:{proxy.port}", topic, msgs,
                    {"enable.idempotence": True, "acks": "all", "linger.ms": 1, "batch.num.messages": 50,
                     "max.in.flight.requests.per.connection": 5, "message.timeout.ms": 120000,
                     "retry.backoff.ms": 10, "reconnect.backoff.ms": 10})
        assert proxy.cuts > 0, "the proxy never cut a connection; the test proved nothing"
        proxy.cut_every = 0
        got = cfk_consume(b.bootstrap, topic, n, timeout=90)
        values = [m["value"] for m in got]
        assert values == [m["value"] for m in msgs], "duplicates, gaps or reordering in the log"
        assert cfk_watermarks(b.bootstrap, topic) == (0, n), "the log holds more records than were produced"
    finally:
        proxy.close()
