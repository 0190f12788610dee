#!/usr/bin/env python3
"""Counting fake upstream for the benchmark (Python standard library only).

GET /blob/<name>?size=N&delay_ms=D[&status=S][&sync_ms=T]
    waits D ms, then answers status S (default 200) with N deterministic bytes
    (the same name and size always give the same bytes) and a Content-Length.
    sync_ms=T: every request for this path (since the last reset) arriving within
    T ms of the first is answered at the same instant, T ms after the first one
    arrived, by one thread writing all the responses back to back: a perfect
    coalescer, used to measure the floor of the load client itself.
GET /oci/v2/<image>/blobs/sha256:<hex>   an OCI registry's blob for the bench's oci
    repository: <image> holds s<N> (fanout/s268435456r1: 256 MiB), the body is the
    deterministic bytes of (image, N), whatever the digest says (GET /__sha256 gives it).
GET /__sha256?name=<image>&size=N   JSON {"sha256": hex} of those bytes (not counted).
GET /__count   JSON: {"total": n, "paths": {"/blob/a": n, ...}, "arrivals": [[path, s], ...],
               "since": t, "bytes": b} (arrivals: seconds since the last reset, first 10000
               requests; since: the reset's time on CLOCK_MONOTONIC, Python's time.monotonic();
               bytes: body bytes sent since the last reset, sync_ms answers not counted)
GET /__reset   sets every counter to zero.

Listens on 127.0.0.1, port 0 by default, and prints "origin listening on
http://127.0.0.1:PORT" (and nothing else) on stdout once it accepts connections.
Admin requests are not counted.
"""
import argparse
import hashlib
import json
import re
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

_PATTERN = bytes(range(256)) * 4096  # 1 MiB
_MAX_ARRIVALS = 10000


class Counter:
    def __init__(self):
        self._lock = threading.Lock()
        self.reset()

    def reset(self):
        with self._lock:
            self.total = 0
            self.paths = {}
            self.arrivals = []
            self.since = time.monotonic()
            self.sync = {}
            self.bytes = 0

    def sent(self, n):
        with self._lock:
            self.bytes += n

    def hit(self, path):
        with self._lock:
            self.total += 1
            self.paths[path] = self.paths.get(path, 0) + 1
            if len(self.arrivals) < _MAX_ARRIVALS:
                self.arrivals.append([path, round(time.monotonic() - self.since, 4)])

    def join_sync(self, path, delay_s, wfile, data):
        """Queues a response for the path's release; returns (group, is_releaser) or None if too late."""
        with self._lock:
            group = self.sync.get(path)
            if group is None:
                group = self.sync[path] = SyncGroup(time.monotonic() + delay_s)
                group.items.append((wfile, data))
                return group, True
            if group.released:
                return None
            group.items.append((wfile, data))
            return group, False

    def release(self, group):
        with self._lock:
            group.released = True
            return list(group.items)

    def snapshot(self):
        with self._lock:
            return {"total": self.total, "paths": dict(self.paths), "arrivals": list(self.arrivals),
                    "since": self.since, "bytes": self.bytes}


class SyncGroup:
    def __init__(self, deadline):
        self.deadline = deadline
        self.items = []
        self.released = False
        self.sent = threading.Event()


COUNTER = Counter()


def body_chunks(name, size, chunk=65536):
    """Yields `size` bytes determined by (name, size): the byte pattern rotated by a hash of the name."""
    shift = zlib.crc32(name.encode()) % 256
    sent = 0
    while sent < size:
        start = (shift + sent) % 256
        n = min(chunk, size - sent)
        yield _PATTERN[start:start + n]
        sent += n


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle on, the body waits for the
    # client's (delayed, up to 40 ms) ACK on a kept-alive connection. Real registries do not
    # behave like that, and it would penalise whichever cache reuses upstream connections.
    disable_nagle_algorithm = True

    def version_string(self):
        return "bench-origin"

    def log_message(self, fmt, *args):  # quiet: thousands of requests per run
        pass

    def _head(self, status, size):
        """The same head as the normal path, as bytes, for the sync path's batched writes."""
        return (f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}\r\n"
                "Server: bench-origin\r\nContent-Type: application/octet-stream\r\n"
                f"Content-Length: {size}\r\nCache-Control: public, max-age=600\r\n\r\n").encode()

    def _json(self, obj):
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def do_HEAD(self):
        self.do_GET(head=True)

    def do_GET(self, head=False):
        url = urlsplit(self.path)
        if url.path == "/__count":
            return self._json(COUNTER.snapshot())
        if url.path == "/__reset":
            COUNTER.reset()
            return self._json({"ok": True})
        if url.path == "/__sha256":
            q = parse_qs(url.query)
            h = hashlib.sha256()
            for chunk in body_chunks(q["name"][0], int(q["size"][0])):
                h.update(chunk)
            return self._json({"sha256": h.hexdigest()})
        oci = re.fullmatch(r"/oci/v2/(.+/s([0-9]+)[^/]*)/blobs/sha256:[0-9a-f]{64}", url.path)
        if oci:
            COUNTER.hit(url.path)
            return self._body(200, oci.group(1), int(oci.group(2)), head, cache=False)
        if not url.path.startswith("/blob/"):
            self.send_error(404)
            return
        COUNTER.hit(url.path)
        q = parse_qs(url.query)
        try:
            size = int(q.get("size", ["1024"])[0])
            delay_ms = float(q.get("delay_ms", ["0"])[0])
            status = int(q.get("status", ["200"])[0])
            sync_ms = float(q.get("sync_ms", ["0"])[0])
        except ValueError:
            self.send_error(400)
            return
        if delay_ms > 0:
            time.sleep(delay_ms / 1000.0)
        name = url.path[len("/blob/"):]
        if sync_ms > 0 and not head:
            data = self._head(status, size) + b"".join(body_chunks(name, size))
            joined = COUNTER.join_sync(url.path, sync_ms / 1000.0, self.wfile, data)
            if joined is not None:
                group, releaser = joined
                if releaser:
                    time.sleep(max(0.0, group.deadline - time.monotonic()))
                    for wfile, d in COUNTER.release(group):
                        try:
                            wfile.write(d)
                        except OSError:
                            pass
                    group.sent.set()
                else:
                    group.sent.wait(60)
                return
            self.wfile.write(data)
            return
        self._body(status, name, size, head, cache=True)

    def _body(self, status, name, size, head, cache):
        """Status, headers and the deterministic bytes of (name, size), counted as sent."""
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size))
        if cache:
            self.send_header("Cache-Control", "public, max-age=600")
        self.end_headers()
        if head:
            return
        try:
            for chunk in body_chunks(name, size):
                self.wfile.write(chunk)
                COUNTER.sent(len(chunk))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    server = Server(("127.0.0.1", args.port), Handler)
    print(f"origin listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    sys.exit(main())
