#!/usr/bin/env python3
"""Merges per-target results of scenarios.py into one JSON file and prints a
markdown report: a table per scenario with one column per target, ratios
Corral/nginx and Corral/Varnish, and the issue's targets checked.

Cluster mode (targets nginx-3 and corral-3, whose load was spread round-robin over
several base URLs): ratios corral-3/nginx-3, extra rows (waiters on another node
than the leader's, upstream requests while warming each node), a per-node table,
and the cluster issue's targets checked.

    report.py --out bench/results/<stamp>.json result-nginx.json result-varnish.json ...
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

ORDER = ["nginx", "varnish", "corral", "nginx-3", "corral-3"]


def sh(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (p.stdout + p.stderr).strip().splitlines()[0] if (p.stdout + p.stderr).strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def machine():
    info = {"cores": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version()}
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), None)
        with open("/proc/meminfo") as f:
            info["mem_total_kib"] = int(next(ln.split()[1] for ln in f if ln.startswith("MemTotal")))
        with open("/proc/loadavg") as f:
            info["loadavg_at_report"] = [float(x) for x in f.read().split()[:3]]
    except (OSError, StopIteration, ValueError):
        pass
    return info


def versions():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return {
        "nginx": sh(["nginx", "-v"]),
        "varnish": sh(["varnishd", "-V"]),
        "wrk": sh(["wrk", "-v"]),
        "corral_commit": sh(["git", "-C", root, "rev-parse", "--short", "HEAD"]),
    }


def dig(d, *path):
    for p in path:
        if isinstance(d, list) and isinstance(p, int) and 0 <= p < len(d):
            d = d[p]
        elif isinstance(d, dict) and p in d:
            d = d[p]
        else:
            return None
    return d


def fmt(v, unit=""):
    if v is None:
        return "–"
    if isinstance(v, float):
        v = f"{v:,.0f}" if abs(v) >= 1000 else (f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}")
    else:
        v = f"{v:,}" if isinstance(v, int) else str(v)
    return v.replace(",", " ") + unit


def ratio(a, b):
    # latency deltas can be ~0 or negative: a ratio of those says nothing
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)) or b <= 0 or a < 0:
        return None
    return a / b


def fmt_ratio(r):
    return "–" if r is None else f"{r:.2f}x"


# (section, label, path into a target's result, unit)
ROWS = [
    ("S0: cold, right after start: 5 bursts of 50 clients x 1 new 1 KiB key (origin 100 ms), then wrk on it", [
        ("first burst: TTFB p50 over the origin's 100 ms", ("S0", "bursts", 0, "ttfb_over_origin_ms", "p50"), " ms"),
        ("first burst: TTFB p99 over the origin's 100 ms", ("S0", "bursts", 0, "ttfb_over_origin_ms", "p99"), " ms"),
        ("first burst: the upstream request leaves after", ("S0", "bursts", 0, "upstream_request_after_ms"), " ms"),
        ("first burst: the last client answered after", ("S0", "bursts", 0, "last_answered_after_ms"), " ms"),
        ("bursts 2-5: TTFB p50 over the origin", ("S0", "later_bursts_ttfb_over_origin_p50_ms"), " ms"),
        ("upstream requests (ideal 5)", ("S0", "upstream_requests"), ""),
        ("first hits after start (one wrk run), req/s", ("S0", "hits_rps"), " req/s"),
        ("those hits' p99", ("S0", "hits", "p99_ms"), " ms"),
    ]),
    ("S1: 200 clients x 1 key, 1 MiB, origin 500 ms", [
        ("upstream requests", ("S1", "upstream_requests"), ""),
        ("TTFB p50", ("S1", "ttfb_ms", "p50"), " ms"),
        ("TTFB p99", ("S1", "ttfb_ms", "p99"), " ms"),
        ("total p50", ("S1", "total_ms", "p50"), " ms"),
        ("waiter TTFB - leader TTFB p50", ("S1", "waiter_delta_ms", "p50"), " ms"),
        ("waiter TTFB - leader TTFB p99", ("S1", "waiter_delta_ms", "p99"), " ms"),
        ("errors / short bodies", None, ""),
        ("other processes' CPU", ("S1", "other_load_cores"), " cores"),
    ]),
    ("S2: 50 keys x 20 clients, 1 KiB, origin 200 ms", [
        ("upstream requests (ideal 50)", ("S2", "upstream_requests"), ""),
        ("TTFB p50", ("S2", "ttfb_ms", "p50"), " ms"),
        ("TTFB p99", ("S2", "ttfb_ms", "p99"), " ms"),
        ("errors / short bodies", None, ""),
        ("other processes' CPU", ("S2", "other_load_cores"), " cores"),
    ]),
    ("S1s: 50 clients x 1 key, 1 KiB, origin 100 ms (rounds pooled)", [
        ("upstream requests (ideal 1 per round)", ("S1s", "upstream_requests"), ""),
        ("leader TTFB p50", ("S1s", "leader_ttfb_ms_p50"), " ms"),
        ("waiter TTFB - leader TTFB p50", ("S1s", "waiter_delta_ms", "p50"), " ms"),
        ("waiter TTFB - leader TTFB p99", ("S1s", "waiter_delta_ms", "p99"), " ms"),
        ("waiter TTFB - leader TTFB max", ("S1s", "waiter_delta_ms", "max"), " ms"),
        ("waiter TTFB - leader TTFB p50 / p99, each round", None, ""),
        ("waiter first byte - leader first byte (wall clock) p50", ("S1s", "waiter_abs_delta_ms", "p50"), " ms"),
        ("waiter first byte - leader first byte (wall clock) p99", ("S1s", "waiter_abs_delta_ms", "p99"), " ms"),
        ("other processes' CPU", ("S1s", "other_load_cores"), " cores"),
        ("the target's CPU in S1s", ("S1s", "target_cpu_s"), " s"),
        ("of which JIT compiler threads", ("S1s", "target_jit_cpu_s"), " s"),
    ]),
    ("S3: warm hits, wrk -t2 -c64 (median of runs)", [
        ("1 KiB req/s", ("S3_1KiB", "rps"), ""),
        ("1 KiB req/s, each run", None, ""),
        ("1 KiB p99", ("S3_1KiB", "p99_ms"), " ms"),
        ("trivial route (`/-/health/live`, same JVM), its runs alternating with 1 KiB hits', req/s", ("S3_route", "rps"), ""),
        ("1 KiB hits again, their runs alternating with the trivial route's, req/s", ("S3_route", "hits", "rps"), ""),
        ("1 MiB req/s", ("S3_1MiB", "rps"), ""),
        ("1 MiB req/s, each run", None, ""),
        ("1 MiB p99", ("S3_1MiB", "p99_ms"), " ms"),
        ("upstream requests during wrk", None, ""),
        ("peak RSS (sum over processes)", ("peak_rss_mib",), " MiB"),
        ("GC pauses during the 1 KiB hits: count", ("S3_1KiB", "gc_pauses", "count"), ""),
        ("GC pause p99, 1 KiB hits", ("S3_1KiB", "gc_pauses", "p99_ms"), " ms"),
        ("GC pause max, 1 KiB hits", ("S3_1KiB", "gc_pauses", "max_ms"), " ms"),
        ("GC pause p99, 1 MiB hits", ("S3_1MiB", "gc_pauses", "p99_ms"), " ms"),
        ("GC pause p99 during the warm-up", ("warmup", "gc_pauses", "p99_ms"), " ms"),
        ("GC pause max during the warm-up", ("warmup", "gc_pauses", "max_ms"), " ms"),
        ("RSS after the hit load (sum over processes)", ("rss_after_hits_mib",), " MiB"),
        ("RSS 6 s after the hit load", ("rss_after_hits_6s_mib",), " MiB"),
        ("other processes' CPU, 1 KiB / 1 MiB", None, ""),
    ]),
    ("S4: misses, 8 clients x 500 new 1 KiB keys one after another, origin delay 0", [
        ("origin's own time to last byte p50 (asked directly, just before)", ("S4", "origin_ttlb_ms", "p50"), " ms"),
        ("origin's own time to last byte p99", ("S4", "origin_ttlb_ms", "p99"), " ms"),
        ("time to last byte p50", ("S4", "ttlb_ms", "p50"), " ms"),
        ("time to last byte p99", ("S4", "ttlb_ms", "p99"), " ms"),
        ("overhead over the origin p50", ("S4", "overhead_ms", "p50"), " ms"),
        ("overhead over the origin p99", ("S4", "overhead_ms", "p99"), " ms"),
        ("upstream requests (ideal 500)", ("S4", "upstream_requests"), ""),
        ("errors", ("S4", "errors"), ""),
        ("the target's CPU in S4", ("S4", "target_cpu_s"), " s"),
        ("of which JIT compiler threads", ("S4", "target_jit_cpu_s"), " s"),
        ("other processes' CPU", ("S4", "other_load_cores"), " cores"),
    ]),
    ("S4w: S4 again after a minute of the same misses (unmeasured), the miss path warm", [
        ("unmeasured misses before it", ("S4w_misses", "misses"), ""),
        ("origin's own time to last byte p50 (asked directly, just before)", ("S4w", "origin_ttlb_ms", "p50"), " ms"),
        ("time to last byte p50", ("S4w", "ttlb_ms", "p50"), " ms"),
        ("time to last byte p99", ("S4w", "ttlb_ms", "p99"), " ms"),
        ("overhead over the origin p50", ("S4w", "overhead_ms", "p50"), " ms"),
        ("overhead over the origin p99", ("S4w", "overhead_ms", "p99"), " ms"),
        ("upstream requests (ideal 500)", ("S4w", "upstream_requests"), ""),
        ("errors", ("S4w", "errors"), ""),
        ("the target's CPU in S4w", ("S4w", "target_cpu_s"), " s"),
        ("of which JIT compiler threads", ("S4w", "target_jit_cpu_s"), " s"),
        ("GC pause max in S4w", ("S4w", "gc_pauses", "max_ms"), " ms"),
    ]),
    ("S5: new connections, 10 rounds x 100 clients, one hit each on a fresh connection, 1 KiB", [
        ("TTFB p50", ("S5", "ttfb_ms", "p50"), " ms"),
        ("TTFB p90", ("S5", "ttfb_ms", "p90"), " ms"),
        ("TTFB p99", ("S5", "ttfb_ms", "p99"), " ms"),
        ("upstream requests (ideal 0)", ("S5", "upstream_requests"), ""),
        ("errors", ("S5", "errors"), ""),
        ("the target's CPU in S5", ("S5", "target_cpu_s"), " s"),
        ("other processes' CPU", ("S5", "other_load_cores"), " cores"),
    ]),
    ("O1: OCI fan-out, one new layer pulled at once through the oci repository (Corral only)", [
        ("layer size", ("O1", "layer_bytes"), " bytes"),
        ("pulls", ("O1", "pulls"), ""),
        ("complete pulls", ("O1", "complete"), ""),
        ("errors", ("O1", "errors"), ""),
        ("pulls whose sha256 was checked", ("O1", "digest_checked"), ""),
        ("digest mismatches", ("O1", "digest_bad"), ""),
        ("TTFB first puller", ("O1", "ttfb_first_s"), " s"),
        ("TTFB last puller", ("O1", "ttfb_last_s"), " s"),
        ("last byte, first puller", ("O1", "total_first_s"), " s"),
        ("last byte, last puller", ("O1", "total_last_s"), " s"),
        ("upstream requests (ideal 1)", ("O1", "upstream_requests"), ""),
        ("upstream bytes / layer size (ideal 1.0)", ("O1", "upstream_bytes_ratio"), "x"),
        ("the target's CPU in O1", ("O1", "target_cpu_s"), " s"),
        ("GC pause p99 in O1", ("O1", "gc_pauses", "p99_ms"), " ms"),
    ]),
]


# rows added to a section's table when a target spread its load over several nodes
CLUSTER_ROWS = {
    "S1:": [
        ("waiter last byte - leader last byte p99", ("S1", "waiter_end_delta_ms", "p99"), " ms"),
        ("waiters on another node than the leader's: last byte - leader's p99",
         ("S1", "other_base_waiter_end_delta_ms", "p99"), " ms"),
        ("X-Cache", None, ""),
    ],
    "S2:": [
        ("X-Cache", None, ""),
    ],
    "S1s:": [
        ("waiter last byte - leader last byte p99", ("S1s", "waiter_end_delta_ms", "p99"), " ms"),
        ("waiters on another node than the leader's", ("S1s", "other_base_waiters"), ""),
        ("those waiters: last byte - leader's last byte p50", ("S1s", "other_base_waiter_end_delta_ms", "p50"), " ms"),
        ("those waiters: last byte - leader's last byte p99", ("S1s", "other_base_waiter_end_delta_ms", "p99"), " ms"),
        ("those waiters: last byte - leader's last byte max", ("S1s", "other_base_waiter_end_delta_ms", "max"), " ms"),
    ],
    "S3:": [
        ("upstream requests while warming, 1 KiB / 1 MiB", None, ""),
        ("wrk options", ("S3_1KiB", "wrk_opts"), ""),
    ],
}


def special(label, res, section):
    if label == "X-Cache":
        key = "S1" if section.startswith("S1:") else "S2"
        c = dig(res, key, "cache")
        return None if c is None else ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
    if label.startswith("upstream requests while warming"):
        a, b = dig(res, "S3_1KiB", "upstream_requests_warming"), dig(res, "S3_1MiB", "upstream_requests_warming")
        return None if a is None and b is None else f"{fmt(a)} / {fmt(b)}"
    if label == "errors / short bodies":
        key = "S1" if section.startswith("S1:") else "S2"
        e, b = dig(res, key, "errors"), dig(res, key, "bad_lengths")
        return None if e is None else f"{e} / {b}"
    if label.endswith("req/s, each run"):
        runs = dig(res, "S3_" + label.split()[0] + label.split()[1], "rps_all")
        return None if not runs else " / ".join(fmt(float(x)) for x in runs)
    if label.startswith("other processes' CPU, 1 KiB"):
        a, b = dig(res, "S3_1KiB", "other_load_cores"), dig(res, "S3_1MiB", "other_load_cores")
        return None if a is None and b is None else f"{fmt(a)} / {fmt(b)} cores"
    if label == "waiter TTFB - leader TTFB p50 / p99, each round":
        # the waiters of a round move as a block against their leader, or spread: which one sets the p99
        rounds = dig(res, "S1s", "per_round")
        return None if not rounds else ", ".join(
            f"{fmt(dig(r, 'waiter_delta_ms', 'p50'))}/{fmt(dig(r, 'waiter_delta_ms', 'p99'))}" for r in rounds) + " ms"
    if label == "upstream requests during wrk":
        a, b = dig(res, "S3_1KiB", "upstream_requests_during_wrk"), dig(res, "S3_1MiB", "upstream_requests_during_wrk")
        return None if a is None and b is None else f"{fmt(a)} / {fmt(b)}"
    return None


def per_node(name, res):
    """A table with one row per node (base URL) of a target whose load was spread."""
    bases = res["base"].split(",")
    nm = res.get("node_metrics") or {}
    out = [f"## {name}: per node", "",
           "| node | S1 X-Cache | S2 X-Cache | S1s waiters | S1s waiter TTFB - leader TTFB p99 | "
           "S1s waiter last byte - leader last byte p99 | S1s leader here (rounds) |"
           + (" node counters after the run |" if nm else ""),
           "|---" * (7 + (1 if nm else 0)) + "|"]
    leader_bases = [r.get("leader_base") for r in (dig(res, "S1s", "per_round") or [])]
    for i, b in enumerate(bases):
        def cache(sc):
            c = dig(res, sc, "by_base", b, "cache")
            return "–" if not c else ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
        row = [f"{i + 1} `{b}`", cache("S1"), cache("S2"),
               fmt(dig(res, "S1s", "by_base", b, "waiters")),
               fmt(dig(res, "S1s", "by_base", b, "waiter_delta_ms", "p99"), " ms"),
               fmt(dig(res, "S1s", "by_base", b, "waiter_end_delta_ms", "p99"), " ms"),
               str(sum(1 for x in leader_bases if x == b))]
        if nm:
            counters = nm.get(b) or {}
            row.append("; ".join(f"{k} {v:g}" for k, v in sorted(counters.items()) if isinstance(v, float) and v)
                       or "–")
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    return out


def cluster_checks(c, nginx3):
    """The cluster issue's targets that this benchmark measures."""
    checks = []
    m6, n = dig(c, "rss_after_hits_6s_mib"), dig(c, "processes")
    if m6 is not None and n:
        checks.append(("resident memory after the hit load <= 300 MiB per node (6 s after it)", m6 / n <= 300.0,
                       f"{fmt(round(m6 / n, 1), ' MiB')} per node"))
    for sc, ideal in (("S1", 1), ("S2", 50)):
        n = dig(c, sc, "upstream_requests")
        peer = dig(nginx3, sc, "upstream_requests") if nginx3 else None
        checks.append((f"{sc} upstream requests = {ideal} across the nodes", n == ideal,
                       f"{fmt(n)} (nginx-3: {fmt(peer)})"))
    checks.append(("S1s upstream requests = rounds",
                   dig(c, "S1s", "upstream_requests") == dig(c, "S1s", "rounds"),
                   fmt(dig(c, "S1s", "upstream_requests"))))
    for sc in ("S1", "S2"):
        e, b = dig(c, sc, "errors"), dig(c, sc, "bad_lengths")
        checks.append((f"{sc}: every client got a 200 with the full length", e == 0 and b == 0
                       and dig(c, sc, "statuses") == {"200": dig(c, sc, "requests")},
                       f"errors {fmt(e)}, short {fmt(b)}, statuses {dig(c, sc, 'statuses')}"))
    p99 = dig(c, "S1s", "other_base_waiter_end_delta_ms", "p99")
    checks.append(("S1s waiters on another node than the leader's finish within 20 ms of the leader's finish (p99)",
                   p99 is not None and p99 <= 20.0,
                   f"{fmt(p99, ' ms')} over {fmt(dig(c, 'S1s', 'other_base_waiters'))} waiters"))
    return checks


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("results", nargs="*")
    args = ap.parse_args()

    targets = {}
    for path in args.results:
        try:
            with open(path) as f:
                r = json.load(f)
        except (OSError, ValueError) as e:
            print(f"cannot read {path}: {e}", file=sys.stderr)
            continue
        for k in ("peak_rss", "rss_after_hits", "rss_after_hits_6s"):
            if r.get(k + "_kib"):
                r[k + "_mib"] = round(r[k + "_kib"] / 1024, 1)
        targets[r["target"]] = r
    floor = targets.pop("floor", None)
    names = [t for t in ORDER if t in targets] + [t for t in targets if t not in ORDER]
    ran = [t for t in names if not targets[t].get("skipped")]
    skipped = {t: targets[t]["skipped"] for t in names if targets[t].get("skipped")}

    m = machine()
    out = {"stamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": m, "versions": versions(),
           "targets": targets, "harness_floor": floor}

    lines = [f"# Corral benchmark, {out['stamp']}", ""]
    lines.append(f"Machine: {m.get('cores')} cores ({m.get('cpu')}), "
                 f"{(m.get('mem_total_kib') or 0) // 1024} MiB RAM; client, cache and origin share it. "
                 f"Load average at the end: {m.get('loadavg_at_report')}.")
    v = out["versions"]
    lines.append(f"Versions: {v['nginx']}; {v['varnish'] or 'varnish: not installed'}; {v['wrk']}.")
    la = " · ".join(f"{t} {dig(targets[t], 'loadavg_start')}" for t in ran)
    lines.append(f"Load average (1/5/15 min) when each target's scenarios started: {la}. "
                 "\"other processes' CPU\" is CPU used during a scenario by processes that are not "
                 "this benchmark's (nor the target's, nor the origin's).")
    warm = [t for t in ran if isinstance(targets[t].get("warmup"), dict) and "rounds" in targets[t]["warmup"]]
    if warm:
        w = targets[warm[0]]["warmup"]
        lines.append(f"Warm-up (JVM targets only), not measured, before the scenarios: {w['rounds']} bursts of "
                     f"{w['clients_per_round']} clients on a new {w['body_bytes']} B key each (origin "
                     f"{w['origin_delay_ms']} ms), so that the JVMs have compiled their hot paths: "
                     + " · ".join(f"{t} {targets[t]['warmup']['seconds']} s, "
                                  f"{targets[t]['warmup']['upstream_requests']} upstream requests, "
                                  f"{targets[t]['warmup']['errors']} errors" for t in warm) + ".")
    settled = []
    for t in ran:
        waits = [(k, targets[t][k]["settle"]) for k in targets[t]
                 if isinstance(targets[t][k], dict) and isinstance(targets[t][k].get("settle"), dict)]
        if waits:
            settled.append(f"{t} " + ", ".join(f"{k} {w['waited_s']} s" for k, w in waits))
    if settled:
        lines.append("Before each scenario the bench waited (at most 30 s) until the target itself idled "
                     "(<= 0.1 cores; a JVM keeps compiling what the last scenario made hot): "
                     + " · ".join(settled) + ".")
    for t, why in skipped.items():
        lines.append(f"**{t} skipped:** {why}")
    lines.append("")

    ratio_cols = []
    if "corral" in ran:
        ratio_cols += [("corral", "nginx"), ("corral", "varnish")]
    if "varnish" in ran and "nginx" in ran:
        ratio_cols.append(("varnish", "nginx"))
    ratio_cols.append(("corral-3", "nginx-3"))
    ratio_cols = [(a, b) for a, b in ratio_cols if a in ran and b in ran]
    spread = [t for t in ran if "," in (targets[t].get("base") or "")]
    if spread:
        lines.append(f"Cluster mode: {', '.join(spread)} got the load round-robin over their nodes "
                     f"({'; '.join(t + ': ' + targets[t]['base'] for t in spread)}).")
        lines.append("")

    if not ran:
        lines.append("No target ran.")
    for section, rows in (ROWS if ran else []):
        if not any(dig(targets[t], rows[0][1][0]) is not None for t in ran):
            continue  # a scenario no target ran (O1 runs only when asked for)
        if spread:
            rows = rows + next((extra for prefix, extra in CLUSTER_ROWS.items() if section.startswith(prefix)), [])
        lines.append(f"## {section}")
        if section.startswith("S1s") and floor:
            lines.append("")
            lines.append(f"Harness floor (the origin answering all 50 at one instant, a perfect coalescer): "
                         f"waiter - leader p50 {fmt(dig(floor, 'S1s', 'waiter_delta_ms', 'p50'), ' ms')}, "
                         f"p99 {fmt(dig(floor, 'S1s', 'waiter_delta_ms', 'p99'), ' ms')}; wall clock p99 "
                         f"{fmt(dig(floor, 'S1s', 'waiter_abs_delta_ms', 'p99'), ' ms')}.")
        lines.append("")
        lines.append("| | " + " | ".join(ran) + "".join(f" | {a}/{b}" for a, b in ratio_cols) + " |")
        lines.append("|---" * (1 + len(ran) + len(ratio_cols)) + "|")
        for label, path, unit in rows:
            cells = []
            for t in ran:
                if path is None:
                    cells.append(special(label, targets[t], section) or "–")
                else:
                    err = dig(targets[t], path[0], "error")
                    cells.append(f"error: {err}" if err else fmt(dig(targets[t], *path), unit))
            rcells = []
            for a, b in ratio_cols:
                rcells.append(fmt_ratio(ratio(dig(targets[a], *path), dig(targets[b], *path))) if path else "")
            lines.append(f"| {label} | " + " | ".join(cells) + "".join(f" | {c}" for c in rcells) + " |")
        lines.append("")

    for t in spread:
        lines += per_node(t, targets[t])

    # one-line ratios and the targets
    summary, checks = [], []
    cname = "corral" if "corral" in ran else ("corral-3" if "corral-3" in ran else None)
    c = targets[cname] if cname else None
    peer_names = ("nginx", "varnish") if cname == "corral" else ("nginx-3",)
    for label, path, unit in [
        ("hits 1 KiB", ("S3_1KiB", "rps"), " req/s"),
        ("hits 1 MiB", ("S3_1MiB", "rps"), " req/s"),
        ("S1s waiter TTFB - leader TTFB p50", ("S1s", "waiter_delta_ms", "p50"), " ms"),
        ("S1s waiter TTFB - leader TTFB p99", ("S1s", "waiter_delta_ms", "p99"), " ms"),
        ("S1s waiter first byte - leader first byte p99", ("S1s", "waiter_abs_delta_ms", "p99"), " ms"),
        ("S1 upstream requests", ("S1", "upstream_requests"), ""),
        ("S2 upstream requests", ("S2", "upstream_requests"), ""),
        ("S4 miss overhead p50", ("S4", "overhead_ms", "p50"), " ms"),
        ("S4 miss overhead p99", ("S4", "overhead_ms", "p99"), " ms"),
        ("S4w miss overhead p50, after a minute of misses", ("S4w", "overhead_ms", "p50"), " ms"),
        ("S4w miss overhead p99, after a minute of misses", ("S4w", "overhead_ms", "p99"), " ms"),
        ("S5 new connection TTFB p50", ("S5", "ttfb_ms", "p50"), " ms"),
        ("S0 first hits after start", ("S0", "hits_rps"), " req/s"),
        ("S0 first burst TTFB p50 over the origin", ("S0", "first_burst_ttfb_over_origin_p50_ms"), " ms"),
    ]:
        if c is not None:
            parts = [f"{cname} {fmt(dig(c, *path), unit)}"]
            for b in peer_names:
                if b in ran:
                    parts.append(f"{fmt_ratio(ratio(dig(c, *path), dig(targets[b], *path)))} {b}")
            summary.append(f"- {label}: " + " = ".join(parts[:2]) + "".join(f", {p}" for p in parts[2:]))
        else:
            parts = [f"{t} {fmt(dig(targets[t], *path), unit)}" for t in ran]
            summary.append(f"- {label}: " + ", ".join(parts))
    out["ratios"] = summary
    if cname == "corral-3":
        checks += cluster_checks(c, targets.get("nginx-3") if "nginx-3" in ran else None)
    elif c is not None:
        for size in ("1KiB", "1MiB"):
            peers = [dig(targets[t], f"S3_{size}", "rps") for t in ("nginx", "varnish") if t in ran]
            peers = [p for p in peers if p]
            best = max(peers) if peers else None
            r = ratio(dig(c, f"S3_{size}", "rps"), best)
            checks.append((f"hits {size} >= faster of nginx/Varnish", r is not None and r >= 1.0,
                           f"{fmt_ratio(r)} of {fmt(best)} req/s"))
        hit, route = dig(c, "S3_route", "hits", "rps"), dig(c, "S3_route", "rps")
        if route:
            r = ratio(hit, route)
            checks.append(("1 KiB hits >= 0.95x the trivial route in the same JVM and run, runs alternating (item 1a)",
                           r is not None and r >= 0.95, f"{fmt_ratio(r)}: {fmt(hit)} against {fmt(route)} req/s"))
            n1 = dig(targets.get("nginx", {}), "S3_1KiB", "rps")
            if n1:
                r = ratio(route, n1)
                checks.append(("the trivial route >= 0.9x nginx's 1 KiB hits (item 1b)", r >= 0.9,
                               f"{fmt_ratio(r)} of {fmt(n1)} req/s"))
        p99 = dig(c, "S1s", "waiter_delta_ms", "p99")
        p99a = dig(c, "S1s", "waiter_abs_delta_ms", "p99")
        checks.append(("S1s waiter TTFB within 5 ms of the leader's at p99 (TTFB and wall clock)",
                       p99 is not None and p99a is not None and max(p99, p99a) <= 5.0,
                       f"{fmt(p99, ' ms')} (wall clock {fmt(p99a, ' ms')}; nginx "
                       f"{fmt(dig(targets.get('nginx', {}), 'S1s', 'waiter_delta_ms', 'p99'), ' ms')})"))
        for sc, ideal in (("S1", 1), ("S2", 50)):
            n = dig(c, sc, "upstream_requests")
            checks.append((f"{sc} upstream requests = {ideal}", n == ideal, fmt(n)))
        o50, o99 = dig(c, "S4", "overhead_ms", "p50"), dig(c, "S4", "overhead_ms", "p99")
        if o50 is not None:
            checks.append(("S4 miss overhead <= 2 ms p50 and <= 5 ms p99 (one node)",
                           o99 is not None and o50 <= 2.0 and o99 <= 5.0, f"{fmt(o50, ' ms')} / {fmt(o99, ' ms')}"))
        o50, o99 = dig(c, "S4w", "overhead_ms", "p50"), dig(c, "S4w", "overhead_ms", "p99")
        if o50 is not None:
            checks.append(("S4w miss overhead <= 2 ms p50 and <= 5 ms p99, after a minute of misses",
                           o99 is not None and o50 <= 2.0 and o99 <= 5.0, f"{fmt(o50, ' ms')} / {fmt(o99, ' ms')}"))
        c5 = dig(c, "S5", "ttfb_ms", "p50")
        n5 = dig(targets.get("nginx", {}), "S5", "ttfb_ms", "p50")
        if c5 is not None and n5:
            checks.append(("S5 new connections: TTFB p50 <= 1.2x nginx", c5 <= 1.2 * n5,
                           f"{fmt(c5, ' ms')} = {fmt_ratio(ratio(c5, n5))} nginx"))
        checks.append(("S1s upstream requests = rounds",
                       dig(c, "S1s", "rounds") is not None
                       and dig(c, "S1s", "upstream_requests") == dig(c, "S1s", "rounds"),
                       fmt(dig(c, "S1s", "upstream_requests"))))
        g = [dig(c, f"S3_{size}", "gc_pauses", "p99_ms") for size in ("1KiB", "1MiB")]
        g = [x for x in g if x is not None]
        if g:
            checks.append(("GC pause p99 <= 10 ms during the hit benchmark (S3)", max(g) <= 10.0, fmt(max(g), " ms")))
        m6 = dig(c, "rss_after_hits_6s_mib")
        if m6 is not None:
            checks.append(("resident memory after the hit load <= 200 MiB (6 s after it)", m6 <= 200.0, fmt(m6, " MiB")))
        c0, n0 = dig(c, "S0", "hits_rps"), dig(targets.get("nginx", {}), "S0", "hits_rps")
        if c0 is not None and n0:
            checks.append(("S0 first hits after start >= 0.7x nginx's", c0 >= 0.7 * n0,
                           f"{fmt(c0)} req/s = {fmt_ratio(ratio(c0, n0))} nginx"))
        f0 = dig(c, "S0", "first_burst_ttfb_over_origin_p50_ms")
        if f0 is not None:
            checks.append(("S0 first burst after start: TTFB p50 <= origin + 100 ms", f0 <= 100.0, fmt(f0, " ms")))
        l1 = dig(c, "S1s", "leader_ttfb_ms_p50")
        if l1 is not None:
            checks.append(("S1s after warm-up: leader TTFB p50 <= origin + 10 ms", l1 - 100.0 <= 10.0,
                           f"origin + {fmt(round(l1 - 100.0, 3), ' ms')}"))
    for t in ran:
        if dig(targets[t], "O1", "pulls") is not None:
            o = targets[t]["O1"]
            checks.append((f"{t} O1: the upstream saw one request and 1x the layer's bytes",
                           o.get("upstream_requests") == 1 and o.get("upstream_bytes_ratio") == 1.0,
                           f"{fmt(o.get('upstream_requests'))} requests, {fmt(o.get('upstream_bytes_ratio'))}x"))
            checks.append((f"{t} O1: every pull got the whole layer, digests right",
                           o.get("complete") == o.get("pulls") and o.get("digest_bad") == 0,
                           f"{fmt(o.get('complete'))} of {fmt(o.get('pulls'))}"))
    out["checks"] = [{"check": a, "met": b, "value": v} for a, b, v in checks]

    if ran:
        lines.append("## Ratios")
        lines.append("")
        lines += summary
        lines.append("")
    if checks:
        lines.append("## Targets (issue)")
        lines.append("")
        for a, b, v in checks:
            lines.append(f"- [{'x' if b else ' '}] {a}: {v}")
        lines.append("")

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
