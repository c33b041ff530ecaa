#!/usr/bin/env python3
"""Single-record Produce v3 requests over one raw socket, one at a time (no client library, so the
broker's cost per request is all that is measured). Standard library only.

    python3 benches/raw-produce.py PORT N [ACKS]

Creates topic `rawt` through Metadata v4 auto-creation (start the broker with
auto.create.topics.enable=true, the default), then sends N requests of one 100-byte record each
and waits for every answer. Pair it with the broker's CPU time from /proc/PID/stat, `perf stat -p PID`
or `valgrind --tool=callgrind` around the broker (see docs/performance.md)."""
import socket
import struct
import sys
import time


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_T = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _T[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def s16(b: bytes) -> bytes:
    return struct.pack(">h", len(b)) + b


def varint(v: int) -> bytes:
    """A zigzag varint (record fields)."""
    return uvarint((v << 1) ^ (v >> 63))


def uvarint(v: int) -> bytes:
    """An unsigned varint (flexible versions' lengths and counts)."""
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def frame(key: int, version: int, corr: int, body: bytes) -> bytes:
    msg = struct.pack(">hhi", key, version, corr) + s16(b"raw") + body
    return struct.pack(">i", len(msg)) + msg


def main():
    port, n = int(sys.argv[1]), int(sys.argv[2])
    acks = int(sys.argv[3]) if len(sys.argv) > 3 else -1
    topic = b"rawt"
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def recv_exact(k):
        d = b""
        while len(d) < k:
            chunk = sock.recv(k - len(d))
            if not chunk:
                raise SystemExit("broker closed the connection")
            d += chunk
        return d

    def recv_response():
        return recv_exact(struct.unpack(">i", recv_exact(4))[0])

    metadata = struct.pack(">i", 1) + s16(topic) + b"\x01"
    for corr in (1, 2):  # the second one sees the topic created by the first
        sock.sendall(frame(3, 4, corr, metadata))
        recv_response()
        time.sleep(0.2)
    value = b"x" * 100
    rec = b"\x00" + varint(0) + varint(0) + varint(-1) + varint(len(value)) + value + varint(0)
    rec = varint(len(rec)) + rec
    ts = int(time.time() * 1000)
    after_crc = struct.pack(">hiqqqhii", 0, 0, ts, ts, -1, -1, -1, 1) + rec
    batch_body = struct.pack(">ib", -1, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    batch = struct.pack(">qi", 0, len(batch_body)) + batch_body
    body = (struct.pack(">hhi", -1, acks, 30000) + struct.pack(">i", 1) + s16(topic)
            + struct.pack(">i", 1) + struct.pack(">ii", 0, len(batch)) + batch)
    t0 = time.time()
    for i in range(n):
        sock.sendall(frame(0, 3, 100 + i, body))
        if acks != 0:
            r = recv_response()
            # correlation id, 1 topic "rawt", 1 partition: index 0, then the int16 error code.
            if struct.unpack(">h", r[4 + 4 + 6 + 4 + 4: 4 + 4 + 6 + 4 + 4 + 2])[0] != 0:
                raise SystemExit(f"produce failed: {r.hex()}")
    if acks == 0:
        sock.sendall(frame(3, 4, 99, metadata))
        recv_response()
    print(f"sent {n} single-record produce requests in {time.time() - t0:.3f} s")


if __name__ == "__main__":
    main()
