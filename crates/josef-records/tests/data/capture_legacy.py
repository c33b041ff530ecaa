#!/usr/bin/env python3
"""Captures legacy (magic 0 / magic 1) message sets written by kafka-python.

A tiny fake broker on 127.0.0.1 answers ApiVersions/Metadata just enough for kafka-python, pinned to
api_version (0, 9) (magic 0, Produce v1) or (0, 10, 0) (magic 1, Produce v2), to send one Produce
request; the records bytes of its single partition are written to
`kafka-python-legacy-m<magic>-<codec>.bin` next to this script.

Run: python3 -m venv /tmp/v && /tmp/v/bin/pip install kafka-python lz4 cramjam && /tmp/v/bin/python capture_legacy.py
"""
import os
import socket
import struct
import threading

from kafka import KafkaProducer

HERE = os.path.dirname(os.path.abspath(__file__))
TOPIC = "legacy"


def s16(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def read_frame(conn):
    hdr = b""
    while len(hdr) < 4:
        c = conn.recv(4 - len(hdr))
        if not c:
            return None
        hdr += c
    (n,) = struct.unpack(">i", hdr)
    body = b""
    while len(body) < n:
        c = conn.recv(n - len(body))
        if not c:
            return None
        body += c
    return body


def serve(sock, port, captured):
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        threading.Thread(target=handle, args=(conn, port, captured), daemon=True).start()


def handle(conn, port, captured):
    while True:
        frame = read_frame(conn)
        if frame is None:
            return
        api_key, version, corr = struct.unpack(">hhi", frame[:8])
        (cid_len,) = struct.unpack(">h", frame[8:10])
        body = frame[10 + max(cid_len, 0):]
        if api_key == 18:  # ApiVersions v0
            apis = [(0, 0, 2), (3, 0, 1), (18, 0, 0)]
            resp = struct.pack(">hi", 0, len(apis)) + b"".join(struct.pack(">hhh", *a) for a in apis)
        elif api_key == 3:  # Metadata v0/v1
            broker = struct.pack(">i", 0) + s16("127.0.0.1") + struct.pack(">i", port)
            if version >= 1:
                broker += struct.pack(">h", -1)  # rack
            part = struct.pack(">hiii", 0, 0, 0, 1) + struct.pack(">i", 0) + struct.pack(">ii", 1, 0)
            topic = struct.pack(">h", 0) + s16(TOPIC)
            if version >= 1:
                topic += b"\x00"  # is_internal
            topic += struct.pack(">i", 1) + part
            resp = struct.pack(">i", 1) + broker
            if version >= 1:
                resp += struct.pack(">i", 0)  # controller id
            resp += struct.pack(">i", 1) + topic
        elif api_key == 0:  # Produce v0-v2: acks, timeout, [topic [partition records]]
            pos = 6
            (nt,) = struct.unpack(">i", body[pos:pos + 4]); pos += 4
            (tl,) = struct.unpack(">h", body[pos:pos + 2]); pos += 2 + tl
            (np_,) = struct.unpack(">i", body[pos:pos + 4]); pos += 4
            (p, rl) = struct.unpack(">ii", body[pos:pos + 8]); pos += 8
            captured.append(body[pos:pos + rl])
            resp = struct.pack(">i", 1) + s16(TOPIC) + struct.pack(">i", 1) + struct.pack(">ihq", 0, 0, 0)
            if version >= 2:
                resp += struct.pack(">q", -1)
            if version >= 1:
                resp += struct.pack(">i", 0)
        else:
            return
        out = struct.pack(">i", corr) + resp
        conn.sendall(struct.pack(">i", len(out)) + out)


def capture(api_version, codec):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    port = sock.getsockname()[1]
    captured = []
    threading.Thread(target=serve, args=(sock, port, captured), daemon=True).start()
    p = KafkaProducer(bootstrap_servers="127.0.0.1:%d" % port, api_version=api_version,
                      compression_type=codec, linger_ms=200, acks=1, retries=0)
    tag = "m%d-%s" % (0 if api_version < (0, 10) else 1, codec or "none")
    for i in range(4):
        p.send(TOPIC, key=b"k%d" % i, value=("%s-value-%d" % (tag, i)).encode(), partition=0,
               timestamp_ms=1700000000000 + i)
    p.send(TOPIC, key=None, value=("%s-nokey" % tag).encode(), partition=0, timestamp_ms=1700000000004)
    p.send(TOPIC, key=b"k-tomb", value=None, partition=0, timestamp_ms=1700000000005)
    p.flush(10)
    p.close(5)
    sock.close()
    assert len(captured) == 1, captured
    with open(os.path.join(HERE, "kafka-python-legacy-%s.bin" % tag), "wb") as f:
        f.write(captured[0])
    print(tag, len(captured[0]))


for api in [(0, 9), (0, 10, 0)]:
    for codec in [None, "gzip", "snappy", "lz4"]:
        capture(api, codec)
