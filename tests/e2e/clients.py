"""Thin drivers around the real clients so tests read as scenarios. Every wait is bounded."""
import base64
import json
import subprocess
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

NODE_DIR = Path(__file__).resolve().parent / "node"


# ---------------------------------------------------------------- confluent-kafka (librdkafka)

def cfk_create_topic(bootstrap, topic, partitions=1, config=None, timeout=30):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1, config=config or {})])
    for f in fs.values():
        f.result(timeout=timeout)


def cfk_produce(bootstrap, topic, messages, conf=None, flush_timeout=60):
    """messages: list of dicts {key, value, headers, partition}; returns [(partition, offset)] in order."""
    c = {"bootstrap.servers": bootstrap, "linger.ms": 5}
    c.update(conf or {})
    p = Producer(c)
    results = [None] * len(messages)
    errors = []

    def cb(i):
        def _cb(err, msg):
            if err is not None:
                errors.append(err)
            else:
                results[i] = (msg.partition(), msg.offset())
        return _cb

    for i, m in enumerate(messages):
        kw = dict(value=m.get("value"), key=m.get("key"), on_delivery=cb(i))
        if m.get("headers"):
            kw["headers"] = m["headers"]
        if m.get("partition") is not None:
            kw["partition"] = m["partition"]
        while True:
            try:
                p.produce(topic, **kw)
                break
            except BufferError:
                p.poll(0.1)
    remaining = p.flush(flush_timeout)
    assert remaining == 0, f"{remaining} messages not delivered"
    assert not errors, f"delivery errors: {errors[:5]}"
    return results


def cfk_consume(bootstrap, topic, count, partitions=None, conf=None, timeout=60, group=None):
    """Reads `count` messages. With `group`, subscribes; else assigns the given partitions from the start."""
    c = {
        "bootstrap.servers": bootstrap,
        "group.id": group or f"e2e-reader-{time.monotonic_ns()}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    c.update(conf or {})
    cons = Consumer(c)
    try:
        if group:
            cons.subscribe([topic])
        else:
            cons.assign([TopicPartition(topic, p, 0) for p in (partitions or [0])])
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            msg = cons.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == -191:  # _PARTITION_EOF
                    continue
                raise KafkaException(msg.error())
            out.append(msg_dict(msg))
        assert len(out) >= count, f"got {len(out)} of {count} messages"
        return out
    finally:
        cons.close()


def msg_dict(msg):
    return {
        "partition": msg.partition(),
        "offset": msg.offset(),
        "key": msg.key(),
        "value": msg.value(),
        "headers": [(k, v) for k, v in (msg.headers() or [])],
        "timestamp": msg.timestamp()[1],
    }


# ---------------------------------------------------------------- kafka-python

def kp_produce(bootstrap, topic, messages, compression=None, acks="all"):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=compression, acks=acks, linger_ms=5)
    futs = []
    for m in messages:
        futs.append(p.send(topic, value=m.get("value"), key=m.get("key"), headers=m.get("headers") or [],
                           partition=m.get("partition")))
    p.flush(timeout=60)
    res = [(f.get(timeout=60).partition, f.get(timeout=60).offset) for f in futs]
    p.close(timeout=10)
    return res


def kp_consume(bootstrap, topic, count, partitions=None, timeout=60, isolation_level="read_uncommitted"):
    from kafka import KafkaConsumer, TopicPartition as KTP

    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                      isolation_level=isolation_level, consumer_timeout_ms=int(timeout * 1000))
    try:
        c.assign([KTP(topic, p) for p in (partitions or [0])])
        for p in partitions or [0]:
            c.seek(KTP(topic, p), 0)
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            batch = c.poll(timeout_ms=200)
            for recs in batch.values():
                for r in recs:
                    out.append({
                        "partition": r.partition, "offset": r.offset, "key": r.key, "value": r.value,
                        "headers": [(k, v) for k, v in (r.headers or [])], "timestamp": r.timestamp,
                    })
        assert len(out) >= count, f"got {len(out)} of {count} messages"
        out.sort(key=lambda m: (m["partition"], m["offset"]))
        return out
    finally:
        c.close()


# ---------------------------------------------------------------- kafkajs (node)

def _b64(b):
    return None if b is None else base64.b64encode(b).decode()


def _unb64(s):
    return None if s is None else base64.b64decode(s)


def js(cmd, timeout=120):
    proc = subprocess.run(["node", str(NODE_DIR / "client.js"), json.dumps(cmd)], capture_output=True, text=True,
                          timeout=timeout)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    assert lines, f"kafkajs printed no result (exit {proc.returncode}): {proc.stdout}\n{proc.stderr}"
    res = json.loads(lines[-1])
    assert res.get("ok"), f"kafkajs failed: {res.get('error')}\n{proc.stderr}"
    return res


def kjs_produce(bootstrap, topic, messages, compression="none", idempotent=False, security=None):
    """`security`: {"ssl": {"ca", "cert", "key"} (PEM paths), "sasl": {"mechanism", "username", "password"}}."""
    msgs = [{"key": _b64(m.get("key")), "value": _b64(m.get("value")), "partition": m.get("partition"),
             "headers": [(k, _b64(v)) for k, v in (m.get("headers") or [])]} for m in messages]
    return js({"op": "produce", "bootstrap": bootstrap, "topic": topic, "messages": msgs,
               "compression": compression, "idempotent": idempotent, **(security or {})})


def kjs_consume(bootstrap, topic, count, group, timeout_s=60, security=None):
    res = js({"op": "consume", "bootstrap": bootstrap, "topic": topic, "count": count, "group": group,
              "timeout_s": timeout_s, **(security or {})}, timeout=timeout_s + 30)
    out = []
    for m in res["messages"]:
        out.append({"partition": m["partition"], "offset": m["offset"], "key": _unb64(m["key"]),
                    "value": _unb64(m["value"]), "headers": [(k, _unb64(v)) for k, v in m["headers"]],
                    "timestamp": m["timestamp"]})
    out.sort(key=lambda m: (m["partition"], m["offset"]))
    return out


# ---------------------------------------------------------------- kcat

def kcat(args, input_bytes=None, timeout=60):
    proc = subprocess.run(["kcat", *args], input=input_bytes, capture_output=True, timeout=timeout)
    assert proc.returncode == 0, f"kcat {args} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}"
    return proc.stdout


def cfk_watermarks(bootstrap, topic, partition=0, isolation="read_uncommitted", timeout=10):
    """(low, high) as ListOffsets answers them; with read_committed, high is the last stable offset."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"wm-{time.monotonic_ns()}",
                  "isolation.level": isolation})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout, cached=False)
    finally:
        c.close()
