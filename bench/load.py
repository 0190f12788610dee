#!/usr/bin/env python3
"""Concurrent GET load released together (Python standard library only).

    load.py --clients 50 --url http://127.0.0.1:PORT/blob/k?size=1024&delay_ms=100 [--url ...]
    load.py --clients 50 --base http://127.0.0.1:P1,http://127.0.0.1:P2 --url /blob/k?size=1024

Opens --clients connections per URL before the start, then sends one GET on
each at once and records per request its time to first byte (the status line
received), its total time (body read), status, body length and cache status.
Prints JSON.

With --base (a comma-separated list of base URLs, several caches behind one
round-robin) each --url is a path: request i (numbered over all URLs, clients
of one URL consecutive) goes to base i mod len(bases), so each key's clients are
spread evenly. Requests are grouped by path (the key), whatever their base, and
the summary also breaks the numbers down by base.

Engines: `raw` (default) is one thread on epoll with raw sockets: all requests
are written in one tight loop and a response's first byte is stamped as soon as
its socket is readable, so 50 answers arriving together are stamped within a
fraction of a millisecond of each other. `threads` is one thread per request with
http.client, released by a barrier: simpler, but the threads' wake-ups queue on
the GIL, which adds milliseconds to the spread of 50 simultaneous answers.

Cache status: the X-Cache header when present (nginx here, Corral), otherwise
derived from Varnish's X-Varnish header (two transaction ids = HIT, one = MISS).

Leader of a URL: the only response with cache status MISS, else the request that
completed first. Waiters: every other request for that URL. For each waiter
`delta = waiter TTFB - leader TTFB` (both measured from the request's own send)
and `abs delta = waiter's first byte - leader's first byte` (wall clock; not
flattered by a waiter that was sent a little later than the leader), and
`end delta = waiter's last byte - leader's last byte` (wall clock).
"""
import argparse
import http.client
import json
import math
import resource
import selectors
import socket
import sys
import threading
import time
from urllib.parse import urlsplit


def percentile(values, p):
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    s = sorted(values)
    k = max(1, math.ceil(p / 100.0 * len(s)))
    return s[k - 1]


def ms(x):
    return None if x is None else round(x * 1000.0, 2)


def cache_status(headers):
    xc = headers.get("X-Cache")
    if xc:
        return xc.strip().upper()
    xv = headers.get("X-Varnish")
    if xv:
        return "HIT" if len(xv.split()) >= 2 else "MISS"
    return None


class Probe(threading.Thread):
    def __init__(self, index, target, barrier, timeout):
        super().__init__(daemon=True)
        key, self.url, base = target
        self.index = index
        self.barrier = barrier
        self.timeout = timeout
        self.rec = {"i": index, "url": key}
        if base is not None:
            self.rec["base"] = base

    def run(self):
        u = urlsplit(self.url)
        path = u.path + ("?" + u.query if u.query else "")
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=self.timeout)
        rec = self.rec
        try:
            conn.connect()
        except OSError as e:
            rec["error"] = f"connect: {e}"
        try:
            self.barrier.wait(timeout=self.timeout)
        except threading.BrokenBarrierError:
            rec.setdefault("error", "barrier broken")
            conn.close()
            return
        if "error" in rec:
            return
        try:
            t_send = time.perf_counter()
            conn.request("GET", path, headers={"User-Agent": "corral-bench"})
            resp = conn.getresponse()
            t_fb = time.perf_counter()
            body = resp.read()
            t_end = time.perf_counter()
            rec.update(
                send=t_send,
                first_byte=t_fb,
                end=t_end,
                status=resp.status,
                length=len(body),
                cache=cache_status(resp.headers),
            )
        except (OSError, http.client.HTTPException) as e:
            rec["error"] = f"{type(e).__name__}: {e}"
        finally:
            conn.close()


class RawRequest:
    __slots__ = ("rec", "sock", "buf", "header_end", "status", "headers", "length", "chunked", "received", "done")

    def __init__(self, rec, sock):
        self.rec, self.sock = rec, sock
        self.buf = bytearray()
        self.header_end = -1
        self.status = self.headers = self.length = None
        self.chunked = False
        self.received = 0  # body bytes received (raw, chunk framing included when chunked)
        self.done = False

    def parse_head(self):
        head = bytes(self.buf[:self.header_end]).decode("latin-1").split("\r\n")
        self.status = int(head[0].split()[1])
        self.headers = http.client.HTTPMessage()
        for line in head[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                self.headers[k.strip()] = v.strip()
        cl = self.headers.get("Content-Length")
        self.length = int(cl) if cl is not None else None
        self.chunked = "chunked" in (self.headers.get("Transfer-Encoding") or "").lower()
        body = self.buf[self.header_end + 4:]
        self.buf = bytearray(body) if self.chunked else bytearray()
        self.received = len(body)

    def complete(self):
        if self.chunked:
            return self.buf.endswith(b"0\r\n\r\n") and dechunk(self.buf) is not None
        return self.length is not None and self.received >= self.length


def dechunk(data):
    """Body length of a complete chunked body, or None if incomplete or malformed."""
    pos, total = 0, 0
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return None
        try:
            size = int(bytes(data[pos:eol]).split(b";")[0], 16)
        except ValueError:
            return None
        if size == 0:
            return total
        pos = eol + 2 + size + 2
        total += size
        if pos > len(data):
            return None


def targets(urls, clients, bases):
    """[(key, URL to request, base or None)] in send order: `clients` per URL, consecutive;
    with bases, URLs are paths and request i goes to bases[i % len(bases)]."""
    out = []
    for i, url in enumerate(u for u in urls for _ in range(clients)):
        if bases:
            base = bases[i % len(bases)]
            out.append((url, base.rstrip("/") + url, base))
        else:
            out.append((url, url, None))
    return out


def run_raw(urls, clients, timeout, bases=None):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = len(urls) * clients + 64
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(need, soft)), hard))
    sel = selectors.DefaultSelector()
    reqs = []
    for i, (key, url, base) in enumerate(targets(urls, clients, bases)):
        rec = {"i": i, "url": key}
        if base is not None:
            rec["base"] = base
        u = urlsplit(url)
        try:
            sock = socket.create_connection((u.hostname, u.port or 80), timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setblocking(False)
        except OSError as e:
            rec["error"] = f"connect: {e}"
            reqs.append(RawRequest(rec, None))
            continue
        path = u.path + ("?" + u.query if u.query else "")
        rec["_wire"] = (f"GET {path} HTTP/1.1\r\nHost: {u.netloc}\r\nUser-Agent: corral-bench\r\n"
                        "Connection: close\r\n\r\n").encode()
        reqs.append(RawRequest(rec, sock))
    live = [r for r in reqs if r.sock is not None]
    t0 = time.perf_counter()
    for r in live:  # requests are tiny: one non-blocking send each
        r.rec["send"] = time.perf_counter()
        try:
            r.sock.send(r.rec.pop("_wire"))
            sel.register(r.sock, selectors.EVENT_READ, r)
        except OSError as e:
            r.rec["error"] = f"send: {e}"
            r.sock.close()
            r.done = True
    pending = sum(1 for r in live if not r.done)
    deadline = t0 + timeout
    while pending and time.perf_counter() < deadline:
        for key, _ in sel.select(timeout=min(1.0, max(0.0, deadline - time.perf_counter()))):
            r = key.data
            try:
                chunk = r.sock.recv(262144)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as e:
                chunk, r.rec["error"] = b"", f"recv: {e}"
            now = time.perf_counter()
            if chunk and "first_byte" not in r.rec:
                r.rec["first_byte"] = now
            if chunk:
                if r.header_end < 0:
                    r.buf += chunk
                    r.header_end = r.buf.find(b"\r\n\r\n")
                    if r.header_end >= 0:
                        try:
                            r.parse_head()
                        except (ValueError, IndexError) as e:
                            r.rec["error"] = f"bad response head: {e}"
                elif r.chunked:
                    r.buf += chunk
                    r.received += len(chunk)
                else:
                    r.received += len(chunk)
            eof = not chunk
            if "error" in r.rec or eof or (r.header_end >= 0 and r.complete()):
                if "error" not in r.rec:
                    if r.header_end < 0:
                        r.rec["error"] = "connection closed before a response"
                    else:
                        length = dechunk(r.buf) if r.chunked else min(r.received, r.length or r.received)
                        r.rec.update(end=now, status=r.status, length=length if length is not None else -1,
                                     cache=cache_status(r.headers))
                        if r.length is not None and r.received < r.length:
                            r.rec["short"] = True
                sel.unregister(r.sock)
                r.sock.close()
                r.done = True
                pending -= 1
    for r in live:
        if not r.done:
            r.rec["error"] = "still running at deadline"
            sel.unregister(r.sock)
            r.sock.close()
    sel.close()
    records = [r.rec for r in reqs]
    return records, summarize(records, t0, by_base=bool(bases))


def _pcts(values):
    return {p: ms(percentile(values, q)) for p, q in (("p50", 50), ("p99", 99), ("max", 100))}


def summarize(records, t0, by_base=False):
    ok = [r for r in records if "error" not in r]
    out = {
        "requests": len(records),
        "errors": len(records) - len(ok),
        "error_samples": sorted({r["error"] for r in records if "error" in r})[:5],
        "statuses": {},
        "cache": {},
        "lengths": {},
    }
    for r in ok:
        for field, key in (("statuses", r["status"]), ("cache", r["cache"]), ("lengths", r["length"])):
            out[field][str(key)] = out[field].get(str(key), 0) + 1
    ttfb = [r["first_byte"] - r["send"] for r in ok]
    total = [r["end"] - r["send"] for r in ok]
    out["ttfb_ms"] = {p: ms(percentile(ttfb, q)) for p, q in (("p50", 50), ("p99", 99), ("max", 100))}
    out["total_ms"] = {p: ms(percentile(total, q)) for p, q in (("p50", 50), ("p99", 99), ("max", 100))}
    sends = [r["send"] for r in ok]
    out["send_spread_ms"] = ms(max(sends) - min(sends)) if sends else None

    deltas, abs_deltas, end_deltas, leaders = [], [], [], []
    other_base_end_deltas = []  # waiters on another base than their key's leader
    per_base = {}  # base -> {"deltas": [...], "end_deltas": [...]}
    by_url = {}
    for r in ok:
        by_url.setdefault(r["url"], []).append(r)
    for url, rs in by_url.items():
        misses = [r for r in rs if r["cache"] == "MISS"]
        leader = misses[0] if len(misses) == 1 else min(rs, key=lambda r: r["end"])
        lt = leader["first_byte"] - leader["send"]
        leaders.append({
            "url": url,
            "chosen_by": "miss" if len(misses) == 1 else "earliest-completion",
            "ttfb_ms": ms(lt),
            "total_ms": ms(leader["end"] - leader["send"]),
            "first_byte_since_start_ms": ms(leader["first_byte"] - t0),
        })
        if "base" in leader:
            leaders[-1]["base"] = leader["base"]
        for r in rs:
            if r is leader:
                continue
            d, e = (r["first_byte"] - r["send"]) - lt, r["end"] - leader["end"]
            deltas.append(d)
            abs_deltas.append(r["first_byte"] - leader["first_byte"])
            end_deltas.append(e)
            if "base" in r:
                pb = per_base.setdefault(r["base"], {"deltas": [], "end_deltas": []})
                pb["deltas"].append(d)
                pb["end_deltas"].append(e)
                if r["base"] != leader.get("base"):
                    other_base_end_deltas.append(e)
    out["waiters"] = len(deltas)
    out["waiter_delta_ms"] = _pcts(deltas)
    out["waiter_abs_delta_ms"] = _pcts(abs_deltas)
    out["waiter_end_delta_ms"] = _pcts(end_deltas)
    out["leaders"] = leaders if len(leaders) <= 5 else leaders[:5] + [{"more": len(leaders) - 5}]
    out["_deltas"] = deltas  # raw, for pooling across rounds (removed by callers that print)
    out["_abs_deltas"] = abs_deltas
    out["_end_deltas"] = end_deltas
    if by_base:
        bases = {}
        for r in records:
            b = bases.setdefault(r.get("base"), {"requests": 0, "errors": 0, "cache": {}})
            b["requests"] += 1
            if "error" in r:
                b["errors"] += 1
            else:
                b["cache"][str(r["cache"])] = b["cache"].get(str(r["cache"]), 0) + 1
        for base, pb in per_base.items():
            bases[base].update(waiters=len(pb["deltas"]), waiter_delta_ms=_pcts(pb["deltas"]),
                               waiter_end_delta_ms=_pcts(pb["end_deltas"]))
        out["by_base"] = bases
        out["other_base_waiters"] = len(other_base_end_deltas)
        out["other_base_waiter_end_delta_ms"] = _pcts(other_base_end_deltas)
        out["_other_base_end_deltas"] = other_base_end_deltas
        out["_per_base"] = per_base  # raw, for pooling across rounds
    return out


def run(urls, clients, timeout=60.0, engine="raw", bases=None):
    """Fires `clients` GETs per URL released together; returns (records, summary).
    With `bases`, URLs are paths spread round-robin over the bases (see the module doc)."""
    if engine == "raw":
        return run_raw(urls, clients, timeout, bases)
    sys.setswitchinterval(0.0005)  # wake threads promptly so TTFB is not GIL-quantized
    threading.stack_size(512 * 1024)
    n = len(urls) * clients
    barrier = threading.Barrier(n + 1)
    probes = [Probe(i, t, barrier, timeout) for i, t in enumerate(targets(urls, clients, bases))]
    for p in probes:
        p.start()
    try:
        barrier.wait(timeout=timeout)
    except threading.BrokenBarrierError:
        pass
    t0 = time.perf_counter()
    deadline = t0 + timeout + 5
    for p in probes:
        p.join(max(0.0, deadline - time.perf_counter()))
    records = []
    for p in probes:
        if p.is_alive():
            p.rec.setdefault("error", "still running at deadline")
        records.append(p.rec)
    return records, summarize(records, t0, by_base=bool(bases))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", action="append", required=True, help="URL to GET (repeatable); a path with --base")
    ap.add_argument("--base", help="comma-separated base URLs: requests go to them round-robin")
    ap.add_argument("--clients", type=int, default=1, help="concurrent clients per URL")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    ap.add_argument("--engine", choices=("raw", "threads"), default="raw")
    ap.add_argument("--raw", action="store_true", help="include every request's record")
    args = ap.parse_args()
    bases = [b for b in args.base.split(",") if b] if args.base else None
    records, summary = run(args.url, args.clients, args.timeout, args.engine, bases)
    for k in [k for k in summary if k.startswith("_")]:
        summary.pop(k)
    if args.raw:
        base = min((r["send"] for r in records if "send" in r), default=0.0)
        for r in records:
            for k in ("send", "first_byte", "end"):
                if k in r:
                    r[k] = ms(r[k] - base)
        summary["records"] = records
    json.dump(summary, sys.stdout, indent=1)
    print()
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
