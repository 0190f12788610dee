#!/usr/bin/env python3
"""One fan-out measurement (issue 17 item 3) against a running Corral cluster; bench/fanout.sh
starts the cluster, the origin and PostgreSQL and calls this once per mode.

One new artifact of --size bytes (an OCI layer of the bench origin, through the `bench-oci`
repository, so the node checks its digest) is asked at once by --clients clients on every node.
Per node it reports:

  first head    the node's first client's time to the response head (TTFB), from the common start
  holds it      the node's first client's last byte: a node sends the last byte of a body only
                once the whole body verified (GrowingBlob), so this is when the node holds it
  peer sent     corral_peer_sent_bytes_total (every result) before -> after: the node's peer egress
  peer received corral_peer_received_bytes_total, likewise
  X-Cache       of its clients, and of a one-byte Range request afterwards (HIT: it holds a copy)

and for the run: the time until every node holds it (the largest "holds it"), the last node's
first head minus the first node's, the largest peer egress of a node, and the upstream's requests
for the layer (must be 1). Python standard library only.
"""
import argparse
import hashlib
import http.client
import json
import os
import re
import sys
import threading
import time
import urllib.request
from urllib.parse import urlsplit

MIB = 1024 * 1024
PEER = re.compile(r"^(corral_peer_[a-z_]+?)(?:\{[^}]*\})? ([0-9.eE+-]+)$", re.M)


def get_json(url, timeout=120):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def peer_metrics(base):
    """A node's corral_peer_* samples, each summed over its labels."""
    with urllib.request.urlopen(base + "/-/metrics", timeout=30) as r:
        text = r.read().decode()
    sums = {}
    for name, value in PEER.findall(text):
        sums[name] = sums.get(name, 0.0) + float(value)
    return sums


def delta(after, before):
    return {k: (v if k.endswith("_in_progress") else v - before.get(k, 0.0)) for k, v in after.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bases", required=True, help="comma list of the nodes' base URLs, http://127.0.0.1:PORT")
    ap.add_argument("--origin", required=True)
    ap.add_argument("--size", type=int, default=256 * MIB)
    ap.add_argument("--clients", type=int, default=2, help="clients per node")
    ap.add_argument("--mode", default="owner-only")
    ap.add_argument("--run-id", default=time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--out")
    args = ap.parse_args()
    bases = [b.rstrip("/") for b in args.bases.split(",")]
    n = len(bases)

    # s<size> then a suffix that does not start with a digit (the origin reads the size from it)
    image = f"fanout/s{args.size}x{args.mode.replace('-', '')}{args.run_id.replace('-', '').lower()}"
    hexd = get_json(args.origin + f"/__sha256?name={image}&size={args.size}")["sha256"]
    path = f"/v2/bench-oci/{image}/blobs/sha256:{hexd}"
    before = [peer_metrics(b) for b in bases]
    get_json(args.origin + "/__reset")

    total = n * args.clients
    results = [None] * total
    t0 = [0.0]
    barrier = threading.Barrier(total, action=lambda: t0.__setitem__(0, time.monotonic()))

    def pull(i):
        node = i % n
        u = urlsplit(bases[node])
        h = hashlib.sha256() if i < n else None  # one client per node checks the bytes
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=args.timeout)
        got = 0
        try:
            barrier.wait(60)
            conn.request("GET", path, headers={"User-Agent": "corral-bench-fanout"})
            r = conn.getresponse()
            head = time.monotonic() - t0[0]
            while True:
                chunk = r.read(MIB)
                if not chunk:
                    break
                got += len(chunk)
                if h:
                    h.update(chunk)
            results[i] = {"node": node, "status": r.status, "cache": r.getheader("X-Cache"), "head_s": head,
                          "done_s": time.monotonic() - t0[0], "bytes": got,
                          "digest_ok": None if h is None else h.hexdigest() == hexd}
        except Exception as e:  # reported, never retried
            results[i] = {"node": node, "error": f"{type(e).__name__}: {e}", "bytes": got}
        finally:
            conn.close()

    load_before = os.getloadavg()
    threads = [threading.Thread(target=pull, args=(i,)) for i in range(total)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(args.timeout + 60)

    # A node counts a copy's bytes when the copy ends, which may come just after its clients' last byte.
    deadline = time.monotonic() + 60
    while True:
        after = [delta(peer_metrics(b), before[i]) for i, b in enumerate(bases)]
        sent = sum(m.get("corral_peer_copies_sent_total", 0) for m in after)
        received = sum(m.get("corral_peer_copies_received_total", 0) for m in after)
        idle = all(m.get("corral_peer_uploads_in_progress", 0) == 0 for m in after)
        if (idle and sent == received) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    load_after = os.getloadavg()
    counts = get_json(args.origin + "/__count")
    upstream = sum(v for p, v in counts["paths"].items() if p.startswith("/oci/v2/" + image))

    held = []
    for b in bases:
        u = urlsplit(b)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        try:
            conn.request("GET", path, headers={"Range": "bytes=0-0"})
            r = conn.getresponse()
            held.append(r.getheader("X-Cache"))
        except Exception as e:
            held.append(f"error {e}")
        finally:
            conn.close()  # never reads more than the head and a byte

    ok = [r for r in results if r and "error" not in r and r["status"] == 200 and r["bytes"] == args.size]
    errors = total - len(ok)
    nodes = []
    for node in range(n):
        mine = [r for r in ok if r["node"] == node]
        first = min(mine, key=lambda r: r["head_s"]) if mine else None
        caches = {}
        for r in mine:
            caches[r["cache"]] = caches.get(r["cache"], 0) + 1
        m = after[node]
        nodes.append({
            "node": f"node-{node + 1}", "base": bases[node], "x_cache": caches, "held_after": held[node],
            "first_head_s": round(first["head_s"], 3) if first else None,
            "holds_it_s": round(min(r["done_s"] for r in mine), 3) if mine else None,
            "last_byte_s": round(max(r["done_s"] for r in mine), 3) if mine else None,
            "peer_sent_bytes": int(m.get("corral_peer_sent_bytes_total", 0)),
            "peer_received_bytes": int(m.get("corral_peer_received_bytes_total", 0)),
            "peer_copies_sent": int(m.get("corral_peer_copies_sent_total", 0)),
            "peer_copies_received": int(m.get("corral_peer_copies_received_total", 0)),
        })
    heads = [x["first_head_s"] for x in nodes if x["first_head_s"] is not None]
    holds = [x["holds_it_s"] for x in nodes if x["holds_it_s"] is not None]
    summary = {
        "mode": args.mode, "nodes": n, "clients_per_node": args.clients, "size_bytes": args.size,
        "upstream_requests": upstream, "errors": errors,
        "digest_bad": sum(1 for r in ok if r["digest_ok"] is False),
        "all_hold_s": max(holds) if len(holds) == n else None,
        "first_head_first_s": min(heads) if heads else None, "first_head_last_s": max(heads) if heads else None,
        "ttfb_spread_s": round(max(heads) - min(heads), 3) if heads else None,
        "last_client_last_byte_s": max((r["done_s"] for r in ok), default=None),
        "peer_egress_max_bytes": max(x["peer_sent_bytes"] for x in nodes),
        "peer_egress_max_x": round(max(x["peer_sent_bytes"] for x in nodes) / args.size, 2),
        "peer_egress_total_bytes": sum(x["peer_sent_bytes"] for x in nodes),
        "loadavg_before": load_before, "loadavg_after": load_after,
        "first_error": next((r.get("error") for r in results if r and "error" in r), None),
        "per_node": nodes,
    }

    print(f"\nfan-out bench, mode {args.mode}: {n} nodes x {args.clients} clients, one {args.size / MIB:.0f} MiB layer")
    print(f"{'node':8} {'X-Cache':28} {'first head':>10} {'holds it':>9} {'peer sent MiB':>14} {'received MiB':>13}  after")
    for x in nodes:
        print(f"{x['node']:8} {json.dumps(x['x_cache']):28} {x['first_head_s'] or float('nan'):9.3f}s "
              f"{x['holds_it_s'] or float('nan'):8.2f}s {x['peer_sent_bytes'] / MIB:8.0f} ({x['peer_copies_sent']:2d}) "
              f"{x['peer_received_bytes'] / MIB:7.0f} ({x['peer_copies_received']:2d})  {x['held_after']}")
    print(f"every node holds it after {summary['all_hold_s']} s; first head last - first {summary['ttfb_spread_s']} s; "
          f"peer egress max {summary['peer_egress_max_bytes'] / MIB:.0f} MiB ({summary['peer_egress_max_x']}x the body); "
          f"upstream requests {upstream}; errors {errors}; bad digests {summary['digest_bad']}; "
          f"load average {load_before[0]:.1f} -> {load_after[0]:.1f}")
    if summary["first_error"]:
        print(f"first error: {summary['first_error']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(summary, f, indent=1)
    return 0 if errors == 0 and upstream == 1 and summary["digest_bad"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
