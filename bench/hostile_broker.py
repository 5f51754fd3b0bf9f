#!/usr/bin/env python3
"""A fake Kafka broker that turns hostile on cue, for `cauda broker`.

It speaks just enough of the protocol for a run: ApiVersions (offering
each API cauda needs at one old, non-flexible version), Metadata (one
broker, itself, and the topic asked for with one partition it leads),
DescribeConfigs (none), ListOffsets (offset 0), Produce (every record
acknowledged; with acks=0 no response, as Kafka sends none) and Fetch
(empty, after 200 ms). MODE says what it does wrong, and when:

  ok                     nothing
  huge-apiversions       an ApiVersions reply claiming 2^31 API keys in 12 bytes
  huge-metadata          a Metadata reply claiming 2^31-1 brokers
  huge-produce           a ProduceResponse claiming 2^31-1 topics, 1 s into measuring
  huge-fetch             a FetchResponse claiming 2^31-1 topics, 1 s into measuring
  trickle-apiversions    the ApiVersions reply one byte a second
  big-frame-apiversions  a frame header claiming 80 MiB, then a byte a second
  big-frame-fetch        a Fetch reply's header claiming 8 MiB (what cauda takes),
                         then a byte a second, 1 s into measuring
  bulk-fetch             a Fetch reply as long as cauda takes (10 MiB), of the smallest
                         partitions (the most decoded per byte), 1 s into measuring
  silent-apiversions     the connection kept, ApiVersions never answered
  silent-produce         Produce no longer answered 1 s into measuring
  short-metadata         a Metadata reply cut short (a malformed reply)
  two-leaders            a topic of two partitions, each led by another broker (the
                         second on a second port of this process): several leaders
  two-ids-one-address    a topic of two partitions led by brokers 1 and 2, which
                         have the same address (one leader address)
  slow-produce           each Produce answered after 1.5 s, from 1 s into measuring
  close-produce          the connection closed at a Produce, 1 s into measuring
  stop-reading           a connection that sends Produce is no longer read (nor
                         closed), 1 s into measuring: the producer's writes block

"1 s into measuring" is 1 s after the first Fetch (consumers start
fetching once the producers' warm-up is done).

Usage: hostile_broker.py MODE   (prints its port, serves until killed)
       hostile_broker.py --seeds DIR   (the replies of every mode, as the
       fuzz target broker_reply takes them: bench/fuzz.sh's seeds)
Used by tests/broker.rs and bench/review.py (class 10). Standard library only.
"""

from __future__ import annotations

import socket
import struct
import sys
import threading
import time

APIS = {  # api key: (min, max) offered
    0: (3, 3),  # Produce
    1: (4, 4),  # Fetch
    2: (1, 1),  # ListOffsets
    3: (4, 4),  # Metadata
    18: (0, 3),  # ApiVersions
    19: (2, 2),  # CreateTopics
    20: (1, 1),  # DeleteTopics
    32: (1, 1),  # DescribeConfigs
}
HUGE = 0x7FFFFFFF


def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)
def string(s: bytes): return i16(len(s)) + s
def array(items): return i32(len(items)) + b"".join(items)


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


class Broker:
    def __init__(self, mode: str):
        self.mode = mode
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.partitions = 2 if mode in ("two-leaders", "two-ids-one-address") else 1
        self.sock2 = None
        self.port2 = self.port
        if mode == "two-leaders":  # broker 2: a second listener, same replies
            self.sock2 = socket.socket()
            self.sock2.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock2.bind(("127.0.0.1", 0))
            self.sock2.listen(64)
            self.port2 = self.sock2.getsockname()[1]
        self.first_fetch = None
        self.lock = threading.Lock()

    def measuring_for(self, seconds: float) -> bool:
        with self.lock:
            return self.first_fetch is not None and time.monotonic() - self.first_fetch >= seconds

    def serve(self):
        if self.sock2 is not None:
            threading.Thread(target=self.accept, args=(self.sock2,), daemon=True).start()
        self.accept(self.sock)

    def accept(self, sock):
        while True:
            conn, _ = sock.accept()
            threading.Thread(target=self.connection, args=(conn,), daemon=True).start()

    def connection(self, conn: socket.socket):
        try:
            while True:
                head = recv_exact(conn, 4)
                (size,) = struct.unpack(">i", head)
                body = recv_exact(conn, size)
                api, version, corr = struct.unpack(">hhi", body[:8])
                reply = self.answer(api, version, corr, body, conn)
                if reply is None:
                    continue
                conn.sendall(reply)
        except (ConnectionError, OSError):
            pass
        finally:
            conn.close()

    def answer(self, api, version, corr, body, conn):
        m = self.mode
        frame = lambda payload: i32(len(payload) + 4) + i32(corr) + payload  # noqa: E731
        if api == 18:  # ApiVersions (response header v0, flexible body at v3)
            if m == "silent-apiversions":
                hold(conn)
            if m == "huge-apiversions":
                return frame(i16(0) + uvarint(HUGE + 2) + i16(0))
            if m == "big-frame-apiversions":
                conn.sendall(i32(80 << 20))
                trickle(conn, b"\0" * 10_000)
            keys = b"".join(i16(k) + i16(lo) + i16(hi) + uvarint(0) for k, (lo, hi) in APIS.items())
            reply = frame(i16(0) + uvarint(len(APIS) + 1) + keys + i32(0) + uvarint(0))
            if m == "trickle-apiversions":
                trickle(conn, reply)
            return reply
        if api == 3:  # Metadata v4
            if m == "huge-metadata":
                return frame(i32(0) + i32(HUGE))
            brokers = [i32(1) + string(b"127.0.0.1") + i32(self.port) + i16(-1)]
            if self.partitions > 1:
                brokers.append(i32(2) + string(b"127.0.0.1") + i32(self.port2) + i16(-1))
            parts = [i16(0) + i32(p) + i32(1 + p % len(brokers)) + array([i32(1 + p % len(brokers))])
                     + array([i32(1 + p % len(brokers))]) for p in range(self.partitions)]
            topic = i16(0) + string(b"fake") + i8(0) + array(parts)
            reply = frame(i32(0) + array(brokers) + string(b"fake-cluster") + i32(1) + array([topic]))
            if m == "short-metadata":
                return i32(len(reply) - 4 - 9) + reply[4:-9]
            return reply
        if api == 32:  # DescribeConfigs v1: nothing to say
            return frame(i32(0) + array([]))
        if api == 2:  # ListOffsets v1
            parts = [i32(p) + i16(0) + i64(-1) + i64(0) for p in range(self.partitions)]
            return frame(array([string(b"fake") + array(parts)]))
        if api == 0:  # Produce v3
            if m == "huge-produce" and self.measuring_for(1.0):
                return frame(i32(HUGE))
            if m == "silent-produce" and self.measuring_for(1.0):
                return None
            if m == "slow-produce" and self.measuring_for(1.0):
                time.sleep(1.5)
            if m == "close-produce" and self.measuring_for(1.0):
                raise ConnectionError("closed on cue")
            if m == "stop-reading" and self.measuring_for(1.0):
                while True:
                    time.sleep(3600)
            if produce_acks(body) == 0:
                return None
            parts = [i32(p) + i16(0) + i64(0) + i64(-1) for p in produced_partitions(body)]
            return frame(array([string(b"fake") + array(parts)]) + i32(0))
        if api == 1:  # Fetch v4
            with self.lock:
                if self.first_fetch is None:
                    self.first_fetch = time.monotonic()
            if m == "huge-fetch" and self.measuring_for(1.0):
                return frame(i32(0) + i32(HUGE))
            if m == "bulk-fetch" and self.measuring_for(1.0):
                part = i32(0) + i16(0) + i64(0) + i64(0) + i32(-1) + i32(-1)
                n = ((10 << 20) - 64) // len(part)  # cauda takes 10 MiB by default
                return frame(i32(0) + i32(1) + string(b"fake") + i32(n) + part * n)
            if m == "big-frame-fetch" and self.measuring_for(1.0):
                conn.sendall(i32(8 << 20))
                trickle(conn, b"\0" * 10_000)
            if conn is not None:
                time.sleep(0.2)
            return frame(i32(0) + array([]))
        if api == 20:  # DeleteTopics v1
            return frame(i32(0) + array([string(b"fake") + i16(0)]))
        return None


def acks_at(body: bytes) -> int:
    """Where a Produce v3 request's acks are in BODY (from its header):
    past the client id and the transactional id. Raises struct.error on a
    body too short."""
    at = 8
    for _ in range(2):
        (n,) = struct.unpack_from(">h", body, at)
        at += 2 + max(n, 0)
    return at


def produce_acks(body: bytes) -> int:
    """The acks of a Produce v3 request; 1 when it cannot be read."""
    try:
        (acks,) = struct.unpack_from(">h", body, acks_at(body))
        return acks
    except struct.error:
        return 1


def produced_partitions(body: bytes) -> list[int]:
    """The partitions a Produce v3 request (BODY, from its header) writes
    to; [0] when it cannot be read (a seed's empty body)."""
    try:
        at = acks_at(body) + 2 + 4  # acks, timeout
        (topics,) = struct.unpack_from(">i", body, at)
        at += 4
        out = []
        for _ in range(topics):
            (n,) = struct.unpack_from(">h", body, at)
            at += 2 + n
            (parts,) = struct.unpack_from(">i", body, at)
            at += 4
            for _ in range(parts):
                index, size = struct.unpack_from(">ii", body, at)
                at += 8 + max(size, 0)
                out.append(index)
        return out or [0]
    except struct.error:
        return [0]


def recv_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def trickle(conn, data: bytes):
    for b in data:
        conn.sendall(bytes([b]))
        time.sleep(1.0)
    hold(conn)


def hold(conn):
    """Keeps the connection open and silent, reading what comes."""
    while conn.recv(65536):
        pass
    raise ConnectionError("closed")


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def varint(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def record_batch(values: list[bytes]) -> bytes:
    """A v2 record batch of VALUES, uncompressed, from offset 0."""
    records = b""
    for i, v in enumerate(values):
        body = i8(0) + varint(0) + varint(i) + varint(-1) + varint(len(v)) + v + varint(0)
        records += varint(len(body)) + body
    after_crc = (i16(0) + i32(len(values) - 1) + i64(0) + i64(0) + i64(-1) + i16(-1)
                 + i32(-1) + i32(len(values)) + records)
    tail = i32(-1) + i8(2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return i64(0) + i32(len(tail)) + tail


# The fuzz target's first byte: the request, in cauda's order
# (admin::VERSIONS_SPOKEN); the second: the version above the lowest.
SELECTOR = {18: 0, 0: 1, 1: 2, 3: 3, 2: 4, 19: 5, 20: 6, 32: 7}


def seeds(out: str):
    import os
    modes = ["ok", "huge-apiversions", "huge-metadata", "huge-produce", "huge-fetch", "short-metadata"]
    for mode in modes:
        b = Broker(mode)
        b.first_fetch = time.monotonic() - 10
        for api in (18, 3, 32, 2, 0, 1, 20):
            reply = b.answer(api, APIS[api][0], 7, b"", None)
            if reply:
                name = f"{mode}-{api}"
                with open(os.path.join(out, name), "wb") as f:
                    f.write(bytes([SELECTOR[api], 0]) + reply[4:])
        b.sock.close()
    stamp = bytes(range(40))
    part = (i32(0) + i16(0) + i64(2) + i64(2) + i32(-1)
            + (lambda r: i32(len(r)) + r)(record_batch([stamp, b"other"])))
    fetch = i32(7) + i32(0) + array([string(b"fake") + array([part])])
    with open(os.path.join(out, "fetch-records"), "wb") as f:
        f.write(bytes([SELECTOR[1], 0]) + fetch)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--seeds":
        seeds(sys.argv[2])
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    broker = Broker(sys.argv[1])
    print(broker.port, flush=True)
    broker.serve()


if __name__ == "__main__":
    main()
