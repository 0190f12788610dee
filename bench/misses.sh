#!/usr/bin/env bash
# A steady miss load on one node, with its garbage collector watched (issue 14 items 3 and 6):
#
#   bench/misses.sh [WARMUP_SECONDS] [SECONDS]     default 60 and 60
#
# Starts the bench's fake origin (bench/origin.py) and one Corral node (./corral serve with its
# defaults, a generic repository "bench"), sends WARMUP_SECONDS of misses (wrk, CLIENTS connections,
# 8 by default; bench/misses.lua: every request a key not asked before, 1 KiB; SIZE sets another
# size), then SECONDS more, measured, and prints for the measured part: misses/s, time to last
# byte (p50, p90, p99), the GC pauses (count, p50, p99, longest, full collections) from the node's -Xlog:gc, and at
# the end the fetch entities alive (corral_cluster_entities) and the node's resident memory.
# JAVA_OPTS, when set, replaces ./corral's JVM flags (the GC log is added either way), e.g.
#   JAVA_OPTS="-Xms32m -Xmx256m -XX:+UseG1GC -XX:MaxGCPauseMillis=10" bench/misses.sh
# Eight clients keep both cores busy, so a miss's time is mostly its wait for the CPU behind the
# others; CLIENTS=1 shows a miss's own time.
# Loopback only. Needs wrk (Debian package wrk), python3, curl, Maven and a JDK. Run it on a
# quiet machine; compare figures only within one sitting.
set -euo pipefail
WARMUP=${1:-60}
MEASURED=${2:-60}
SIZE=${SIZE:-1024}
CLIENTS=${CLIENTS:-8}
THREADS=$((CLIENTS < 2 ? CLIENTS : 2))
BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH_DIR/.." && pwd)"
TMP=$(mktemp -d /tmp/corral-misses.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
command -v wrk >/dev/null || { echo "wrk is missing (Debian package wrk)" >&2; exit 1; }

# The GC log as bench/run.sh adds it: JAVA_OPTS stays the caller's (or ./corral's defaults).
export JDK_JAVA_OPTIONS="-Xlog:gc:file=$TMP/gc.log:time"
# shellcheck source=one-node.sh
source "$BENCH_DIR/one-node.sh"
start_origin_and_node

echo "JVM flags: ${JAVA_OPTS:-the defaults of ./corral}" >&2
echo "warming up ${WARMUP} s with misses ($base/bench/blob/<new key>?size=$SIZE)" >&2
SIZE=$SIZE wrk -t$THREADS -c$CLIENTS -d"${WARMUP}s" -s "$BENCH_DIR/misses.lua" "$base/" >/dev/null
echo "measuring ${MEASURED} s" >&2
t0=$(date +%s.%N)
out=$(SIZE=$SIZE wrk -t$THREADS -c$CLIENTS -d"${MEASURED}s" --latency -s "$BENCH_DIR/misses.lua" "$base/")
t1=$(date +%s.%N)
entities=$(curl -sf "$base/-/metrics" | awk '$1 == "corral_cluster_entities" {printf "%d", $2}')

echo "misses/s (${SIZE} B, $CLIENTS clients): $(awk '/Requests\/sec/ {print $2}' <<<"$out")"
echo "time to last byte p50 / p90 / p99: $(awk '$1 == "50%" {print $2}' <<<"$out") /" \
  "$(awk '$1 == "90%" {print $2}' <<<"$out") / $(awk '$1 == "99%" {print $2}' <<<"$out")"
python3 - "$BENCH_DIR" "$TMP/gc.log" "$t0" "$t1" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from scenarios import gc_pauses  # the bench's own summary of a GC log
p = gc_pauses(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
if not p or not p["count"]:
    print("GC pauses: none")
else:
    print("GC pauses: %d, p50 %.1f ms, p99 %.1f ms, longest %.1f ms; %d full collections"
          % (p["count"], p["p50_ms"], p["p99_ms"], p["max_ms"], p["full"]))
EOF
echo "fetch entities alive at the end: ${entities:-unknown}"
echo "resident memory at the end: $(($(awk '/VmRSS/ {print $2}' "/proc/$pid/status") / 1024)) MiB"
