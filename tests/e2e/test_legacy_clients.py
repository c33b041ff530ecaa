"""Old protocol versions with real clients: the broker serves Produce v0-2 (legacy message sets
up-converted on append), Fetch v0-3 (v2 data down-converted to magic 0 for v0/v1 and magic 1 for
v2/v3) and ListOffsets v0 (old_style_offsets), as Kafka did before 4.0.

- kafka-python pinned to api_version (0, 9) speaks Produce v1 / Fetch v1 (magic 0, no timestamps),
  (0, 10, 0) Produce v2 / Fetch v2 and (0, 10, 1) Fetch v3 (magic 1, timestamps).
- kcat (librdkafka) with api.version.request=false and broker.version.fallback 0.8.2 / 0.9.0
  uses Fetch v0 / v1 (magic 0) and ListOffsets v0; it reads what a modern client produced (v2
  batches with headers) with every codec the legacy formats know (magic-0 lz4 carries Kafka's
  broken frame header checksum, which librdkafka and kafka-python repair). A fallback of 0.10.0
  or later is no use here: librdkafka then sends ApiVersions anyway and fetches at the newest
  version, so magic 1 is covered by kafka-python alone.
"""
import time

import pytest

from clients import cfk_create_topic, cfk_produce, kcat
from conftest import unique

LEGACY_CODECS = ["none", "gzip", "snappy", "lz4"]
KP_VERSIONS = [(0, 9), (0, 10, 0), (0, 10, 1)]
KCAT_FALLBACKS = ["0.8.2", "0.9.0"]


def kp_old_produce(bootstrap, topic, messages, api_version, codec):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, api_version=api_version,
                      compression_type=None if codec == "none" else codec, linger_ms=5)
    try:
        futs = [p.send(topic, key=m["key"], value=m["value"]) for m in messages]
        p.flush(timeout=60)
        return [f.get(timeout=60) for f in futs]
    finally:
        p.close(timeout=10)


def kp_old_consume(bootstrap, topic, count, api_version, timeout=60):
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, api_version=api_version, enable_auto_commit=False,
                      auto_offset_reset="earliest", consumer_timeout_ms=int(timeout * 1000))
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=200).values():
                out.extend(recs)
        assert len(out) >= count, f"got {len(out)} of {count} messages"
        return sorted(out, key=lambda r: r.offset)
    finally:
        c.close()


def messages(n, tag):
    return [{"key": f"{tag}-k{i}".encode(), "value": f"{tag}-v{i}".encode() * (1 + i % 3)} for i in range(n)]


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("api_version", KP_VERSIONS, ids=lambda v: ".".join(map(str, v)))
def test_kafka_python_pinned_to_old_versions_produces_and_consumes(broker, api_version, codec):
    topic = unique("legacy-kp")
    cfk_create_topic(broker.bootstrap, topic)
    msgs = messages(12, "old")
    meta = kp_old_produce(broker.bootstrap, topic, msgs, api_version, codec)
    assert [m.offset for m in meta] == list(range(12))
    got = kp_old_consume(broker.bootstrap, topic, 12, api_version)
    assert [r.offset for r in got] == list(range(12))
    assert [(r.key, r.value) for r in got] == [(m["key"], m["value"]) for m in msgs]
    if api_version == (0, 9):
        # Magic 0 carries no timestamp at all.
        assert all(r.timestamp is None for r in got)
    else:
        # Magic 1 keeps the producer's CreateTime.
        assert [r.timestamp for r in got] == [m.timestamp for m in meta]
        assert all(r.timestamp > 0 and r.timestamp_type == 0 for r in got)


@pytest.mark.parametrize("api_version", KP_VERSIONS, ids=lambda v: ".".join(map(str, v)))
def test_kafka_python_old_consumer_reads_modern_batches_with_headers(broker, api_version):
    from kafka import KafkaProducer

    topic = unique("legacy-kp-modern")
    cfk_create_topic(broker.bootstrap, topic)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type="gzip", linger_ms=5)
    msgs = messages(8, "new")
    futs = [p.send(topic, key=m["key"], value=m["value"], headers=[("h", b"dropped")]) for m in msgs]
    p.flush(timeout=60)
    meta = [f.get(timeout=60) for f in futs]
    p.close(timeout=10)
    got = kp_old_consume(broker.bootstrap, topic, 8, api_version)
    assert [(r.offset, r.key, r.value) for r in got] == [(i, m["key"], m["value"]) for i, m in enumerate(msgs)]
    assert all(not r.headers for r in got)
    if api_version == (0, 9):
        assert all(r.timestamp is None for r in got)
    else:
        assert [r.timestamp for r in got] == [m.timestamp for m in meta]


def kcat_legacy(bootstrap, topic, fallback, offset="beginning"):
    out = kcat(["-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", offset, "-e", "-q",
                "-f", "%o\t%k\t%s\t%T\n",
                "-X", "api.version.request=false", "-X", f"broker.version.fallback={fallback}"])
    rows = []
    for line in out.decode().splitlines():
        o, k, v, ts = line.split("\t")
        rows.append((int(o), k, v, int(ts)))
    return rows


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("fallback", KCAT_FALLBACKS)
def test_kcat_with_old_broker_fallback_reads_modern_producer_data(broker, fallback, codec):
    topic = unique("legacy-kcat")
    cfk_create_topic(broker.bootstrap, topic)
    msgs = [dict(m, headers=[("h", b"dropped")]) for m in messages(10, "rd")]
    cfk_produce(broker.bootstrap, topic, msgs, {"compression.type": codec, "acks": "all"})
    rows = kcat_legacy(broker.bootstrap, topic, fallback)
    assert [(o, k, v) for o, k, v, _ in rows] == [
        (i, m["key"].decode(), m["value"].decode()) for i, m in enumerate(msgs)
    ]
    # Fetch v0/v1: magic 0 has no timestamps (librdkafka shows 0; a modern fetch would show the
    # producer's CreateTime).
    assert all(ts == 0 for *_, ts in rows)


@pytest.mark.parametrize("fallback", KCAT_FALLBACKS)
def test_kcat_with_old_broker_fallback_tails_via_list_offsets_v0(broker, fallback):
    topic = unique("legacy-kcat-tail")
    cfk_create_topic(broker.bootstrap, topic)
    cfk_produce(broker.bootstrap, topic, messages(6, "tl"), {"acks": "all"})
    # A negative -o is relative to the end: librdkafka asks ListOffsets v0 for the latest offset.
    rows = kcat_legacy(broker.bootstrap, topic, fallback, offset="-2")
    assert [(o, k) for o, k, *_ in rows] == [(4, "tl-k4"), (5, "tl-k5")]
