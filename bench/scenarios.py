#!/usr/bin/env python3
"""Runs the benchmark scenarios against one running cache and writes JSON.

    scenarios.py --target nginx --base http://127.0.0.1:PORT --origin http://127.0.0.1:OPORT \
                 --out results.json [--pgid N] [--wrk-duration 10] [--wrk-runs 1]

--base is the URL prefix under which the cache serves the origin's /blob/...
(nginx, Varnish: http://127.0.0.1:PORT; Corral: http://127.0.0.1:PORT/bench).
A comma-separated list of prefixes (cluster mode: several caches behind one
round-robin) spreads the load: in S1, S2 and S1s request i of a burst goes to
prefix i mod n, so every key's clients are spread evenly; in S3 wrk runs one
thread per prefix (-tN -c21N), each thread's connections on its own prefix.
Results then also break S1, S2 and S1s down by prefix.

S0   cold: the target as a start leaves it, before any warm-up and before every other
     scenario. 5 bursts of 50 clients on a new 1 KiB key each (origin delay 100 ms): TTFB over
     the origin's delay, when the upstream request leaves and when the last client is answered,
     per burst; the first is the first request the target ever serves. Then one wrk run
     (-t2 -c64, --wrk-duration) on the first burst's key: the target's first seconds of hits.
S1   200 clients x 1 key, 1 MiB, origin delay 500 ms: upstream fetches, TTFB.
S2   50 keys x 20 clients, 1 KiB, origin delay 200 ms: upstream fetches (1 per key is ideal).
S1s  50 clients x 1 key, 1 KiB, origin delay 100 ms, in several rounds (a new key each):
     waiter TTFB - leader TTFB, pooled over the rounds.
S3   warm hits: wrk -t2 -c64 -d<duration>s --latency on a cached 1 KiB and 1 MiB URL
     (several prefixes: -tN -c21N, see above).
S4   miss overhead: 8 clients, each on its own keep-alive connection, ask 500 new 1 KiB keys
     (origin delay 0) one after another; time to last byte against the origin's own for the
     same shape of load asked of the origin directly just before (1000 unmeasured misses first).
S4w  S4 again after --s4w-seconds (60) of the same misses, unmeasured: the miss path as a node
     that has served a minute of misses runs it (issue 14 items 3 and 4: S4 itself is mostly the
     JIT compiling that path); its own keys, origin figure and CPU.
S5   new connections: 10 rounds of 100 clients, each on a fresh connection, one hit each on a
     cached 1 KiB key (1000 connections): time to first byte.
O1   OCI fan-out (issue 15, Corral only, not in the default list): --fanout-pulls clients
     (30) at once pull one new --fanout-mib MiB (256) layer through the oci repository
     bench-oci, spread over the nodes: TTFB and time to the last byte of the first and the last
     puller, the upstream's requests and bytes for the layer (1x the layer is the promise).
Every scenario uses keys no earlier run used, so the cache starts cold for it.
"""
import argparse
import datetime
import hashlib
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import load  # noqa: E402

KIB = 1024
MIB = 1024 * 1024


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


_TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu():
    """{(pid, start time): (process group, CPU seconds)} for every process now alive."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            # after comm: state(0) ppid(1) pgrp(2) ... utime(11) stime(12) ... starttime(19)
            out[(int(pid), fields[19])] = (int(fields[2]), (int(fields[11]) + int(fields[12])) / _TICK)
        except (OSError, IndexError, ValueError):
            continue
    return out


class OtherLoad:
    """CPU used by processes that are not part of this benchmark, in cores, over a window.

    Ours: this process's group (run.sh, this script, wrk) and the --exclude-pgids
    groups (origin, the target). Processes that exit inside the window are not seen."""

    def __init__(self, exclude_pgids):
        self.exclude = set(exclude_pgids) | {os.getpgid(0)}
        self.t0 = time.monotonic()
        self.cpu0 = proc_cpu()

    def cores(self):
        dt = time.monotonic() - self.t0
        used = 0.0
        for key, (pgrp, cpu) in proc_cpu().items():
            if pgrp in self.exclude:
                continue
            used += cpu - self.cpu0.get(key, (pgrp, 0.0))[1]
        return round(used / dt, 3) if dt > 0 else None


def get(url, timeout=30.0):
    """One GET; returns (status, headers, body)."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    try:
        conn.request("GET", u.path + ("?" + u.query if u.query else ""), headers={"User-Agent": "corral-bench"})
        r = conn.getresponse()
        return r.status, r.headers, r.read()
    finally:
        conn.close()


class Origin:
    def __init__(self, base):
        self.base = base.rstrip("/")

    def reset(self):
        get(self.base + "/__reset")

    def counts(self):
        _, _, body = get(self.base + "/__count")
        return json.loads(body)

    def count(self, prefix=None):
        c = self.counts()
        if prefix is None:
            return c["total"]
        return sum(n for p, n in c["paths"].items() if p.startswith(prefix))


def blob(base, name, size, delay_ms):
    return f"{base.rstrip('/')}/blob/{name}?size={size}&delay_ms={delay_ms}"


def key_url(args, name, size, delay_ms):
    """What load.run gets for a key: the URL on the one base, or the path when several
    bases share the load (load.run spreads it)."""
    return blob("" if args.spread else args.base, name, size, delay_ms)


def burst(args, urls, clients):
    return load.run(urls, clients, timeout=args.timeout, engine=args.engine,
                    bases=args.bases if args.spread else None)


def clean(summary):
    for k in [k for k in summary if k.startswith("_")]:
        summary.pop(k)
    return summary


def coalescing(args, origin, name, clients, keys, size, delay_ms):
    """One barrier-released burst: `clients` requests on each of `keys` cold keys."""
    prefix = f"/blob/{args.run_id}-{name}-"
    urls = [key_url(args, f"{args.run_id}-{name}-{k}", size, delay_ms) for k in range(keys)]
    origin.reset()
    la0 = loadavg()
    _, s = burst(args, urls, clients)
    time.sleep(0.2)  # let any straggling upstream request reach the origin's counter
    s = clean(s)
    s.update(
        upstream_requests=origin.count(prefix),
        keys=keys,
        clients_per_key=clients,
        body_bytes=size,
        origin_delay_ms=delay_ms,
        bad_lengths=sum(n for ln, n in s["lengths"].items() if int(ln) != size),
        loadavg_before=la0,
        loadavg_after=loadavg(),
    )
    return s


def cold(args, origin, bursts=5, clients=50, delay_ms=100):
    """S0: a freshly started target (issue 14 items 2 and 4). Per burst: the clients' TTFB, when
    the upstream request reached the origin and when the last client had its whole body, both
    counted from the burst's first send (the origin and this process share CLOCK_MONOTONIC)."""
    per_burst = []
    for r in range(bursts):
        name = f"{args.run_id}-s0-{r}"
        origin.reset()
        records, s = burst(args, [key_url(args, name, KIB, delay_ms)], clients)
        time.sleep(0.2)
        c = origin.counts()
        arrivals = [a for p, a in c["arrivals"] if p == f"/blob/{name}"]
        ok = [x for x in records if "error" not in x]
        first_send = min((x["send"] for x in ok), default=None)
        per_burst.append({
            "ttfb_ms": s["ttfb_ms"],
            "ttfb_over_origin_ms": {p: round(v - delay_ms, 3) if v is not None else None for p, v in s["ttfb_ms"].items()},
            "upstream_requests": len(arrivals),
            "upstream_request_after_ms": load.ms(c["since"] + arrivals[0] - first_send) if arrivals and first_send else None,
            "last_answered_after_ms": load.ms(max(x["end"] for x in ok) - first_send) if ok else None,
            "cache": s["cache"],
            "errors": s["errors"],
        })
    url = blob(args.base, f"{args.run_id}-s0-0", KIB, delay_ms)
    la0 = loadavg()
    cmd = ["wrk", "-t2", "-c64", f"-d{args.wrk_duration}s", "--latency", url]
    hits = {"error": "wrk not installed"}
    if shutil.which("wrk"):
        origin.reset()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.wrk_duration + 60)
        hits = parse_wrk(p.stdout)
        hits["exit"] = p.returncode
        hits["upstream_requests"] = origin.count(f"/blob/{args.run_id}-s0-0")
    return {
        "bursts": per_burst,
        "first_burst_ttfb_over_origin_p50_ms": per_burst[0]["ttfb_over_origin_ms"]["p50"],
        "later_bursts_ttfb_over_origin_p50_ms": [b["ttfb_over_origin_ms"]["p50"] for b in per_burst[1:]],
        "hits": hits,
        "hits_rps": hits.get("rps"),
        "upstream_requests": sum(b["upstream_requests"] for b in per_burst),
        "errors": sum(b["errors"] for b in per_burst),
        "clients_per_burst": clients, "body_bytes": KIB, "origin_delay_ms": delay_ms,
        "loadavg_before": la0, "loadavg_after": loadavg(),
    }


def fanout(args, origin):
    """O1 (issue 15): one new OCI layer of --fanout-mib MiB pulled by --fanout-pulls clients at once,
    spread round-robin over the target's nodes, through the oci repository `bench-oci` (Corral
    targets only). Per pull: TTFB and time to the last byte; one pull per node checks the bytes'
    sha256. The origin counts its requests for the layer and the body bytes it sent."""
    size = args.fanout_mib * MIB
    image = f"fanout/s{size}{args.run_id.replace('-', '').lower()}"
    _, _, body = get(args.origin.rstrip("/") + f"/__sha256?name={image}&size={size}", timeout=120)
    hexd = json.loads(body)["sha256"]
    urls = [f"{b.rsplit('/bench', 1)[0]}/v2/bench-oci/{image}/blobs/sha256:{hexd}" for b in args.bases]
    origin.reset()
    barrier = threading.Barrier(args.fanout_pulls)
    results = [None] * args.fanout_pulls

    def pull(i):
        u = urlsplit(urls[i % len(urls)])
        verify = i < len(urls)
        h = hashlib.sha256() if verify else None
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=args.timeout)
        try:
            barrier.wait(30)
            t0 = time.monotonic()
            conn.request("GET", u.path, headers={"User-Agent": "corral-bench"})
            r = conn.getresponse()
            ttfb = time.monotonic() - t0
            n = 0
            while True:
                chunk = r.read(1 << 20)
                if not chunk:
                    break
                n += len(chunk)
                if h:
                    h.update(chunk)
            results[i] = {"status": r.status, "cache": r.getheader("X-Cache"), "ttfb_s": ttfb,
                          "total_s": time.monotonic() - t0, "bytes": n,
                          "digest_ok": None if h is None else h.hexdigest() == hexd}
        except Exception as e:
            results[i] = {"error": f"{type(e).__name__}: {e}"}
        finally:
            conn.close()

    threads = [threading.Thread(target=pull, args=(i,)) for i in range(args.fanout_pulls)]
    la0 = loadavg()
    for t in threads:
        t.start()
    for t in threads:
        t.join(args.timeout + 60)
    time.sleep(0.2)
    c = origin.counts()
    ok = [r for r in results if r and "error" not in r and r["status"] == 200 and r["bytes"] == size]
    ttfb = sorted(r["ttfb_s"] for r in ok)
    total = sorted(r["total_s"] for r in ok)
    caches = {}
    for r in ok:
        caches[r["cache"]] = caches.get(r["cache"], 0) + 1
    return {
        "pulls": args.fanout_pulls, "nodes": len(urls), "layer_bytes": size,
        "complete": len(ok), "errors": args.fanout_pulls - len(ok),
        "digest_checked": sum(1 for r in ok if r["digest_ok"] is not None),
        "digest_bad": sum(1 for r in ok if r["digest_ok"] is False),
        "cache": caches,
        "ttfb_first_s": round(ttfb[0], 3) if ttfb else None, "ttfb_last_s": round(ttfb[-1], 3) if ttfb else None,
        "total_first_s": round(total[0], 3) if total else None, "total_last_s": round(total[-1], 3) if total else None,
        "total_p50_s": round(total[len(total) // 2], 3) if total else None,
        "upstream_requests": sum(n for p, n in c["paths"].items() if p.startswith("/oci/v2/" + image)),
        "upstream_bytes": c.get("bytes"),
        "upstream_bytes_ratio": round(c.get("bytes", 0) / size, 3),
        "loadavg_before": la0, "loadavg_after": loadavg(),
        "first_error": next((r.get("error") or r.get("status") for r in results if r not in ok), None),
    }


def warmup(args, origin):
    """Bursts like S1s (50 clients x 1 new 1 KiB key, origin 20 ms), back to back, not measured:
    a JVM compiles its hot paths only after thousands of calls, and every target gets the same."""
    t, errors = time.monotonic(), 0
    origin.reset()
    for r in range(args.warmup_rounds):
        _, s = burst(args, [key_url(args, f"{args.run_id}-warm{r}-0", KIB, 20)], 50)
        errors += s["errors"]
    time.sleep(0.2)
    upstream = origin.count(f"/blob/{args.run_id}-warm")
    return {"rounds": args.warmup_rounds, "clients_per_round": 50, "body_bytes": KIB, "origin_delay_ms": 20,
            "seconds": round(time.monotonic() - t, 1), "errors": errors, "upstream_requests": upstream}


def s1s(args, origin):
    rounds, deltas, abs_deltas, end_deltas, per_round, upstream = [], [], [], [], [], 0
    other_base_end, per_base = [], {}
    la0 = loadavg()
    for r in range(args.s1s_rounds):
        prefix = f"/blob/{args.run_id}-s1s{r}-"
        url = key_url(args, f"{args.run_id}-s1s{r}-0", KIB, 100)
        if args.floor:  # the origin itself answers all 50 at one instant: a perfect coalescer
            url = url.replace("delay_ms=100", "delay_ms=0&sync_ms=100")
        urls = [url]
        origin.reset()
        _, s = burst(args, urls, 50)
        time.sleep(0.2)
        deltas += s["_deltas"]
        abs_deltas += s["_abs_deltas"]
        end_deltas += s["_end_deltas"]
        other_base_end += s.get("_other_base_end_deltas", [])
        for base, pb in s.get("_per_base", {}).items():
            acc = per_base.setdefault(base, {"deltas": [], "end_deltas": []})
            acc["deltas"] += pb["deltas"]
            acc["end_deltas"] += pb["end_deltas"]
        upstream += origin.count(prefix)
        rounds.append(clean(s))
        per_round.append({
            "leader_ttfb_ms": s["leaders"][0]["ttfb_ms"] if s["leaders"] else None,
            "leader_chosen_by": s["leaders"][0]["chosen_by"] if s["leaders"] else None,
            "leader_base": s["leaders"][0].get("base") if s["leaders"] else None,
            "waiter_delta_ms": s["waiter_delta_ms"],
            "waiter_abs_delta_ms": s["waiter_abs_delta_ms"],
            "send_spread_ms": s["send_spread_ms"],
            "cache": s["cache"],
            "errors": s["errors"],
        })
    pcts = lambda v: {p: load.ms(load.percentile(v, q)) for p, q in (("p50", 50), ("p99", 99), ("max", 100))}  # noqa: E731
    spread = {}
    if args.spread:
        spread = {
            "other_base_waiters": len(other_base_end),
            "other_base_waiter_end_delta_ms": pcts(other_base_end),
            "by_base": {b: {"waiters": len(pb["deltas"]), "waiter_delta_ms": pcts(pb["deltas"]),
                            "waiter_end_delta_ms": pcts(pb["end_deltas"])} for b, pb in per_base.items()},
        }
    return {
        **spread,
        "rounds": args.s1s_rounds,
        "clients_per_round": 50,
        "body_bytes": KIB,
        "origin_delay_ms": 100,
        "upstream_requests": upstream,
        "waiters": len(deltas),
        "waiter_delta_ms": {p: load.ms(load.percentile(deltas, q)) for p, q in (("p50", 50), ("p99", 99), ("max", 100))},
        "waiter_abs_delta_ms": {p: load.ms(load.percentile(abs_deltas, q)) for p, q in (("p50", 50), ("p99", 99), ("max", 100))},
        "waiter_end_delta_ms": pcts(end_deltas),
        "leader_ttfb_ms_p50": load.ms(load.percentile([x["leader_ttfb_ms"] / 1000 for x in per_round if x["leader_ttfb_ms"] is not None], 50)),
        "errors": sum(x["errors"] for x in per_round),
        "per_round": per_round,
        "loadavg_before": la0,
        "loadavg_after": loadavg(),
    }


def sequential_misses(bases, names, clients, timeout):
    """`clients` threads, each with its own keep-alive connection per base, ask for the names
    one after another (name i by thread i mod clients, on base i mod len(bases)); returns each
    request's time to last byte in seconds and the responses' cache statuses."""
    times, statuses, errors = [], {}, []
    lock = threading.Lock()

    def client(mine):
        conns = {}
        try:
            for i, name in mine:
                base = urlsplit(bases[i % len(bases)])
                conn = conns.get(base.netloc)
                if conn is None:
                    conn = conns[base.netloc] = http.client.HTTPConnection(base.hostname, base.port, timeout=timeout)
                path = base.path.rstrip("/") + f"/blob/{name}?size={KIB}&delay_ms=0"
                t0 = time.perf_counter()
                conn.request("GET", path, headers={"User-Agent": "corral-bench"})
                r = conn.getresponse()
                body = r.read()
                dt = time.perf_counter() - t0
                with lock:
                    if r.status != 200 or len(body) != KIB:
                        errors.append(f"{r.status} {len(body)}")
                        continue
                    times.append(dt)
                    st = load.cache_status(r.headers) or "-"
                    statuses[st] = statuses.get(st, 0) + 1
        except Exception as e:  # noqa: BLE001
            with lock:
                errors.append(f"{type(e).__name__}: {e}")
        finally:
            for c in conns.values():
                c.close()

    work = list(enumerate(names))
    threads = [threading.Thread(target=client, args=(work[k::clients],)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times, statuses, errors


def miss_warmup(args, origin, seconds, clients=8, chunk=1000):
    """S4w's unmeasured part: S4's load (new keys one after another) for `seconds`."""
    t = time.monotonic()
    n, errors, rounds = 0, 0, 0
    while time.monotonic() - t < seconds:
        names = [f"{args.run_id}-s4ww-{rounds}-{k}" for k in range(chunk)]
        _, _, err = sequential_misses(args.bases, names, clients, args.timeout)
        n, errors, rounds = n + len(names), errors + len(err), rounds + 1
    origin.reset()
    return {"seconds": round(time.monotonic() - t, 1), "misses": n, "errors": errors}


def misses(args, origin, keys=500, clients=8, warmup=1000, tag="s4"):
    """S4: what a miss adds to the origin's own time to last byte, for small bodies."""
    pcts = lambda v: {p: load.ms(load.percentile(v, q)) for p, q in (("p50", 50), ("p90", 90), ("p99", 99), ("max", 100))}  # noqa: E731
    name = lambda kind, k: f"{args.run_id}-{tag}{kind}-{k}"  # noqa: E731
    origin.reset()
    t = time.monotonic()
    _, _, werr = sequential_misses(args.bases, [name("w", k) for k in range(warmup)], clients, args.timeout)
    warm_s = time.monotonic() - t
    # the origin's own figure, the same shape of load asked of it directly, right before
    own, _, oerr = sequential_misses([origin.base], [name("o", k) for k in range(keys)], clients, args.timeout)
    origin.reset()
    la0 = loadavg()
    t = time.monotonic()
    got, statuses, errors = sequential_misses(args.bases, [name("m", k) for k in range(keys)], clients, args.timeout)
    seconds = time.monotonic() - t
    time.sleep(0.2)
    o, c = pcts(own), pcts(got)
    return {
        "keys": keys, "clients": clients, "body_bytes": KIB, "origin_delay_ms": 0,
        "warmup_misses": warmup, "warmup_seconds": round(warm_s, 1), "warmup_errors": len(werr),
        "origin_ttlb_ms": o,
        "ttlb_ms": c,
        "overhead_ms": {p: round(c[p] - o[p], 3) if c[p] is not None and o[p] is not None else None for p in ("p50", "p90", "p99")},
        "cache": statuses,
        "upstream_requests": origin.count(f"/blob/{args.run_id}-{tag}m-"),
        "seconds": round(seconds, 2),
        "errors": len(errors) + len(oerr),
        "error_samples": (errors + oerr)[:5],
        "loadavg_before": la0,
        "loadavg_after": loadavg(),
    }


def new_connections(args, origin, rounds=10, clients=100):
    """S5: what a fresh connection costs a hit (issue 14 item 5)."""
    name = f"{args.run_id}-s5"
    for base in args.bases:  # cached on every base before the rounds
        for _ in range(2):
            get(blob(base, name, KIB, 0))
    origin.reset()
    ttfb, cache, errors = [], {}, 0
    la0 = loadavg()
    for _ in range(rounds):
        records, s = burst(args, [key_url(args, name, KIB, 0)], clients)
        ttfb += [r["first_byte"] - r["send"] for r in records if "error" not in r]
        errors += s["errors"]
        for k, v in s["cache"].items():
            cache[k] = cache.get(k, 0) + v
    time.sleep(0.2)
    return {
        "rounds": rounds, "clients_per_round": clients, "body_bytes": KIB,
        "connections": rounds * clients,
        "ttfb_ms": {p: load.ms(load.percentile(ttfb, q)) for p, q in (("p50", 50), ("p90", 90), ("p99", 99), ("max", 100))},
        "cache": cache,
        "errors": errors,
        "upstream_requests": origin.count(f"/blob/{name}"),
        "loadavg_before": la0,
        "loadavg_after": loadavg(),
    }


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60000.0, "h": 3600000.0}


def parse_wrk(text):
    out = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    out["rps"] = float(m.group(1)) if m else None
    for pct in ("50", "90", "99"):
        m = re.search(r"^\s+%s%%\s+([\d.]+)(us|ms|s|m|h)\s*$" % pct, text, re.M)
        out[f"p{pct}_ms"] = round(float(m.group(1)) * _UNITS[m.group(2)], 3) if m else None
    m = re.search(r"(\d+) requests in", text)
    out["requests"] = int(m.group(1)) if m else None
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    out["non_2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors:.*", text)
    out["socket_errors"] = m.group(0) if m else None
    return out


WRK_SPREAD_LUA = """-- written by bench/scenarios.py: thread i connects to address i mod n
local addrs = {%s}
local next_thread = 0
function setup(thread)
  local a = addrs[next_thread %% #addrs + 1]
  next_thread = next_thread + 1
  thread.addr = wrk.lookup(a[1], a[2])[1]
end
"""


def trivial_route(args, hit_url):
    """Pekko HTTP's trivial route in the same JVM (Corral's `/-/health/live`, a synchronous
    5-byte answer), loaded as S3's 1 KiB hits are, its runs alternating with runs of those hits
    so that neither gets the JIT's later work or the machine's quieter minute: issue 14 items 1a
    (the hit against it) and 1b (it against nginx)."""
    parts = urlsplit(args.base)
    url = f"{parts.scheme}://{parts.netloc}/-/health/live"
    status, _, body = get(url)
    res = {"url_path": "/-/health/live", "warm_status": status, "length": len(body)}
    route_runs, hit_runs = [], []
    for _ in range(args.wrk_runs):
        route_runs += wrk_runs(args, ["-t2", "-c64"], url, runs=1)["runs"]
        hit_runs += wrk_runs(args, ["-t2", "-c64"], hit_url, runs=1)["runs"]
    res.update(median_of(route_runs))
    res["hits"] = median_of(hit_runs)
    res["runs"], res["hits"]["runs"] = route_runs, hit_runs
    return res


def median_of(runs):
    best = sorted((r for r in runs if r["rps"] is not None), key=lambda r: r["rps"])
    median = best[len(best) // 2] if best else {}
    return {"rps": median.get("rps"), "p99_ms": median.get("p99_ms"), "rps_all": [r["rps"] for r in best]}


def wrk_runs(args, wrk_opts, url, runs=None):
    """`runs` (default args.wrk_runs) runs of wrk on url: each run, and the median run's req/s
    and p99."""
    out = {"wrk_opts": " ".join(wrk_opts), "runs": []}
    la0 = loadavg()
    for _ in range(args.wrk_runs if runs is None else runs):
        cmd = ["wrk", *wrk_opts, f"-d{args.wrk_duration}s", "--latency", url]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.wrk_duration + 60)
        run = parse_wrk(p.stdout)
        run["exit"] = p.returncode
        out["runs"].append(run)
    out.update(median_of(out["runs"]))
    out["loadavg_before"] = la0
    out["loadavg_after"] = loadavg()
    return out


def s3_name(args, label):
    return f"{args.run_id}-s3-{label}"


def warm_hits(args, origin, size, label):
    name = s3_name(args, label)
    url = blob(args.base, name, size, 0)
    origin.reset()
    first = get(url)
    second = get(url)
    res = {
        "body_bytes": size,
        "warm_first": {"status": first[0], "cache": load.cache_status(first[1]), "length": len(first[2])},
        "warm_second": {"status": second[0], "cache": load.cache_status(second[1]), "length": len(second[2])},
    }
    wrk_opts = ["-t2", "-c64"]
    if args.spread:
        # every cache gets the key twice before wrk; the bases share the path after their host:port
        res["warm_others"] = []
        for base in args.bases[1:]:
            for _ in range(2):
                st, hd, body = get(blob(base, name, size, 0))
                res["warm_others"].append({"base": base, "status": st, "cache": load.cache_status(hd), "length": len(body)})
        hosts = [urlsplit(b) for b in args.bases]
        if len({(u.path.rstrip("/")) for u in hosts}) != 1:
            raise ValueError("wrk spread needs the same path prefix on every base")
        lua = os.path.join(os.path.dirname(os.path.abspath(args.out)), f"wrk-spread-{args.target}.lua")
        with open(lua, "w") as f:
            f.write(WRK_SPREAD_LUA % ", ".join(f'{{"{u.hostname}", "{u.port or 80}"}}' for u in hosts))
        n = len(hosts)
        wrk_opts = [f"-t{n}", f"-c{21 * n}", "-s", lua]
    res["upstream_requests_warming"] = origin.count(f"/blob/{name}")
    origin.reset()
    res.update(wrk_runs(args, wrk_opts, url))
    res["upstream_requests_during_wrk"] = origin.count(f"/blob/{name}")
    return res


def jit_cpu(pgids):
    """CPU seconds so far of the target's threads, split into the JVM's JIT compiler threads
    ("C1/C2 CompilerThread") and all the others; {} for a target without threads by that name."""
    out = {"jit_s": 0.0, "other_s": 0.0}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[2]) not in pgids:
                    continue
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    stat = f.read()
                name = stat[stat.index("(") + 1:stat.rindex(")")]
                fields = stat.rsplit(")", 1)[1].split()
                cpu = (int(fields[11]) + int(fields[12])) / _TICK
                out["jit_s" if "CompilerThre" in name else "other_s"] += cpu
        except (OSError, ValueError, IndexError):
            continue
    return out


_GC_PAUSE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)([+-]\d{4})\].*Pause (\w+).* ([0-9.]+)ms$")


def gc_pauses(path, t0, t1):
    """The JVM's GC pauses (-Xlog:gc:file=PATH:time) that began between t0 and t1 (epoch seconds):
    count, p50, p99, max in ms, and how many were full collections; None without a log."""
    if not path or not os.path.exists(path):
        return None
    out, full = [], 0
    with open(path) as f:
        for line in f:
            m = _GC_PAUSE.match(line.strip())
            if not m:
                continue
            stamp = datetime.datetime.strptime(m.group(1) + m.group(2), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
            if t0 <= stamp <= t1:
                out.append(float(m.group(4)))
                full += m.group(3) == "Full"
    out.sort()
    if not out:
        return {"count": 0}
    return {"count": len(out), "p50_ms": out[len(out) // 2], "p99_ms": out[min(len(out) - 1, int(len(out) * 0.99))],
            "max_ms": out[-1], "total_ms": round(sum(out), 1), "full": full}


def rss_kib(pgids, field="VmRSS"):
    """Sum of a /proc status field (resident set: VmRSS; its peak: VmHWM) over the processes of
    some process groups."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            if int(stat.rsplit(")", 1)[1].split()[2]) not in pgids:
                continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        total += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total or None


def peak_rss_kib(pgids):
    """Sum of VmHWM (peak resident set) over the processes of some process groups."""
    return rss_kib(pgids, "VmHWM")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", required=True)
    ap.add_argument("--base", required=True, help="URL prefix, or a comma-separated list of them (round-robin)")
    ap.add_argument("--origin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pgid", default="", help="the target's process group(s), comma list (peak RSS, excluded from other load)")
    ap.add_argument("--exclude-pgids", default="", help="comma list of our other process groups (origin)")
    ap.add_argument("--scenarios", default="S0,S1,S2,S1s,S3,S4,S4w,S5")
    ap.add_argument("--s4w-seconds", type=float, default=60.0, help="S4w: seconds of misses before it")
    ap.add_argument("--wrk-duration", type=int, default=10)
    ap.add_argument("--wrk-runs", type=int, default=1)
    ap.add_argument("--s1s-rounds", type=int, default=3)
    ap.add_argument("--settle", type=float, default=30.0,
                    help="before each scenario, wait up to this many seconds for the target to idle (0 = don't)")
    ap.add_argument("--warmup-rounds", type=int, default=0,
                    help="unmeasured S1s-like bursts before the scenarios (JIT warm-up), 0 = none")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--wait-quiet", type=float, default=0.0,
                    help="wait up to this many seconds for other processes to use <= --quiet-cores")
    ap.add_argument("--quiet-cores", type=float, default=0.2)
    ap.add_argument("--engine", choices=("raw", "threads"), default="raw", help="load.py engine")
    ap.add_argument("--floor", action="store_true",
                    help="--base is the origin: S1s measures the harness floor (origin answers all at once)")
    ap.add_argument("--gc-log", default="", help="the target JVM's -Xlog:gc:file=...:time log: pauses per scenario")
    ap.add_argument("--run-id", default=f"r{int(time.time())}")
    ap.add_argument("--fanout-mib", type=int, default=256, help="O1: the layer's size")
    ap.add_argument("--fanout-pulls", type=int, default=30, help="O1: pulls at once")
    args = ap.parse_args()
    args.run_id = f"{args.target}-{args.run_id}"
    args.bases = [b for b in args.base.split(",") if b]
    args.base = args.bases[0]
    args.spread = len(args.bases) > 1
    args.pgids = [int(x) for x in args.pgid.split(",") if x]
    args.exclude_pgids = [int(x) for x in args.exclude_pgids.split(",") if x] + args.pgids
    want = set(args.scenarios.split(","))
    origin = Origin(args.origin)
    quiet = None
    if args.wait_quiet > 0:
        # other people's builds share these 2 cores: wait (bounded) for a quiet moment
        deadline = time.monotonic() + args.wait_quiet
        while True:
            probe = OtherLoad(args.exclude_pgids)
            time.sleep(1.0)
            quiet = probe.cores()
            if quiet <= args.quiet_cores or time.monotonic() >= deadline:
                break
        print(f"[{args.target}] other processes' CPU before start: {quiet} cores", file=sys.stderr, flush=True)
    res = {"target": args.target, "base": ",".join(args.bases), "started": time.time(), "loadavg_start": loadavg(),
           "other_load_before_start": quiet}

    def settle():
        """Waits (at most --settle seconds) until the target itself is idle: <= 0.1 cores over
        half a second. A JVM compiles what the previous scenario made hot for seconds after it,
        and that CPU would land in the next scenario's numbers."""
        if not args.pgids or args.settle <= 0:
            return None
        t0 = time.monotonic()
        while True:
            a = jit_cpu(set(args.pgids))
            time.sleep(0.5)
            b = jit_cpu(set(args.pgids))
            cores = (b["jit_s"] + b["other_s"] - a["jit_s"] - a["other_s"]) / 0.5
            if cores <= 0.1 or time.monotonic() - t0 >= args.settle:
                return {"waited_s": round(time.monotonic() - t0, 1), "target_cores": round(cores, 2)}

    def step(name, fn):
        settled = settle()
        t = time.time()
        print(f"[{args.target}] {name} ...", file=sys.stderr, flush=True)
        other = OtherLoad(args.exclude_pgids)
        jit0 = jit_cpu(set(args.pgids)) if args.pgids else None
        try:
            res[name] = fn()
            res[name]["other_load_cores"] = other.cores()
            pauses = gc_pauses(args.gc_log, t, time.time())
            if pauses is not None:
                res[name]["gc_pauses"] = pauses
            if settled is not None:
                res[name]["settle"] = settled
            if jit0 is not None:  # the target's own CPU in this step, and how much of it was JIT compiling
                jit1 = jit_cpu(set(args.pgids))
                res[name]["target_cpu_s"] = round(jit1["jit_s"] + jit1["other_s"] - jit0["jit_s"] - jit0["other_s"], 2)
                res[name]["target_jit_cpu_s"] = round(jit1["jit_s"] - jit0["jit_s"], 2)
        except Exception as e:  # keep the other scenarios' numbers
            res[name] = {"error": f"{type(e).__name__}: {e}"}
        print(f"[{args.target}] {name} done in {time.time() - t:.1f} s", file=sys.stderr, flush=True)

    # S0 before anything else: a node as a deploy leaves it (no settling: the JIT's work at start
    # is part of what it measures).
    if "S0" in want:
        t = time.time()
        print(f"[{args.target}] S0 ...", file=sys.stderr, flush=True)
        try:
            res["S0"] = cold(args, origin)
        except Exception as e:
            res["S0"] = {"error": f"{type(e).__name__}: {e}"}
        print(f"[{args.target}] S0 done in {time.time() - t:.1f} s", file=sys.stderr, flush=True)
    if args.warmup_rounds > 0:
        step("warmup", lambda: warmup(args, origin))
    # S1s first, right after the warm-up (whose bursts have its shape): it measures how waiters
    # are woken, and S1/S2 bring new shapes of traffic that make a JVM recompile for seconds.
    if "S1s" in want:
        step("S1s", lambda: s1s(args, origin))
    if "S1" in want:
        step("S1", lambda: coalescing(args, origin, "s1", clients=200, keys=1, size=MIB, delay_ms=500))
    if "S2" in want:
        step("S2", lambda: coalescing(args, origin, "s2", clients=20, keys=50, size=KIB, delay_ms=200))
    if "S3" in want:
        if shutil.which("wrk"):
            step("S3_1KiB", lambda: warm_hits(args, origin, KIB, "1k"))
            if args.target == "corral":  # one node: the same JVM as the 1 KiB hits just measured
                step("S3_route", lambda: trivial_route(args, blob(args.base, s3_name(args, "1k"), KIB, 0)))
            step("S3_1MiB", lambda: warm_hits(args, origin, MIB, "1m"))
            if args.pgids:
                # issue 14 item 6: resident memory after the hit load, at once and 6 s later (a
                # node gives its C heap back every 5 s)
                res["rss_after_hits_kib"] = rss_kib(set(args.pgids))
                time.sleep(6)
                res["rss_after_hits_6s_kib"] = rss_kib(set(args.pgids))
        else:
            res["S3_1KiB"] = res["S3_1MiB"] = {"error": "wrk not installed"}
    if "S4" in want:
        step("S4", lambda: misses(args, origin))
    if "S4w" in want:
        step("S4w_misses", lambda: miss_warmup(args, origin, args.s4w_seconds))
        step("S4w", lambda: misses(args, origin, warmup=0, tag="s4w"))
    if "S5" in want:
        step("S5", lambda: new_connections(args, origin))
    if "O1" in want and args.target.startswith("corral"):
        step("O1", lambda: fanout(args, origin))
    if args.pgids:
        res["peak_rss_kib"] = peak_rss_kib(set(args.pgids))
        res["processes"] = len(args.pgids)
    res["loadavg_end"] = loadavg()
    res["finished"] = time.time()
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
