#!/usr/bin/env bash
# Profiles Corral's warm hit, or its warm miss, on CPU (issue 14: "profile first") with
# async-profiler.
#
#   bench/profile.sh [SIZE_BYTES] [SECONDS]          hits: default 1024 bytes, 20 s
#   bench/profile.sh --miss [SIZE_BYTES] [SECONDS]   misses: every request a new key
#   bench/profile.sh --alloc [--miss] [SIZE_BYTES] [SECONDS]
#                                                    the same, profiling the bytes allocated
#                                                    instead of CPU (the summary per request)
#
# Starts the bench's fake origin (bench/origin.py) and one Corral node (./corral serve with its
# defaults, a generic repository "bench"), then:
#   - hits: fetches one key of SIZE bytes, warms the JVM for 20 s with wrk (-t2 -c64), profiles
#     SECONDS of the same load and prints hits/s while profiled, and /-/health/live's (a trivial
#     route in the same JVM) after it;
#   - misses (--miss): 8 connections (wrk -t2 -c8, bench/misses.lua), each request for a key not
#     asked before, so each is an upstream fetch, a store commit and a record write; warms for
#     WARMUP seconds (default 75: the miss path keeps the JIT compilers busy for about a minute
#     on 2 cores), profiles SECONDS of the same load and prints misses/s and the time to last byte
#     (p50, p99) while profiled, and the node's CPU per miss;
#   - then bench/hotspots.py's summary of the CPU samples (with --alloc: of the bytes allocated,
#     per request).
# It leaves a flame graph (hit.html or miss.html) and the folded stacks (.collapsed) in the
# printed directory.
#
# async-profiler is the Maven artifact tools.profiler:async-profiler (version in the root pom,
# property async-profiler.version), fetched with `mvn dependency:get` when missing; its native
# library is attached to the running node with `jcmd JVMTI.agent_load`. Samples are of CPU
# time (perf events, with kernel frames, where the kernel allows them; else a timer).
# Loopback only. Needs wrk (Debian package `wrk`, installed here when missing and run as root),
# python3, Maven and a JDK. Run it on a quiet machine: figures are only worth comparing within
# one run.
set -euo pipefail
MODE=hit
EVENT="event=cpu,interval=1ms" # --alloc: "event=alloc", every allocation sample weighed in bytes
DUMP=collapsed
ALLOC=0
while [[ ${1:-} == --* ]]; do
  case $1 in
    --miss) MODE=miss ;;
    --alloc) EVENT="event=alloc,total"; DUMP="collapsed,total"; ALLOC=1 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
SIZE=${1:-1024}
SECONDS_PROFILED=${2:-20}
BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH_DIR/.." && pwd)"
TMP=$(mktemp -d /tmp/corral-profile.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

if ! command -v wrk >/dev/null; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    apt-get install -y -qq wrk >&2
  else
    echo "wrk is missing (Debian package wrk)" >&2; exit 1
  fi
fi

version=$(sed -n 's#.*<async-profiler.version>\(.*\)</async-profiler.version>.*#\1#p' "$ROOT/pom.xml")
jar="$HOME/.m2/repository/tools/profiler/async-profiler/$version/async-profiler-$version.jar"
if [[ ! -f "$jar" ]]; then
  mvn -B -q dependency:get -Dartifact="tools.profiler:async-profiler:$version" >&2
fi
arch=$(uname -m); case "$arch" in x86_64) arch=x64 ;; aarch64) arch=arm64 ;; esac
(cd "$TMP" && unzip -q -o "$jar" "linux-$arch/libasyncProfiler.so")
agent="$TMP/linux-$arch/libasyncProfiler.so"

# shellcheck source=one-node.sh
source "$BENCH_DIR/one-node.sh"
start_origin_and_node
# jcmd splits an unquoted option string at "=": the agent's options go in double quotes.
profiler() { jcmd "$pid" JVMTI.agent_load "$agent" "\"$1\"" >/dev/null; }
# hotspots.py's summary: of CPU samples, or with --alloc of bytes per request ($1 requests).
summary() { if [[ $ALLOC == 1 ]]; then python3 "$BENCH_DIR/hotspots.py" "$2" --alloc "$1"; else python3 "$BENCH_DIR/hotspots.py" "$2"; fi; }
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

if [[ $MODE == miss ]]; then
  WARMUP=${WARMUP:-75}
  echo "warming up ${WARMUP} s with misses ($base/bench/blob/<new key>?size=$SIZE)" >&2
  SIZE=$SIZE wrk -t2 -c8 -d"${WARMUP}s" -s "$BENCH_DIR/misses.lua" "$base/" >/dev/null
  profiler "start,$EVENT"
  echo "profiling ${SECONDS_PROFILED} s" >&2
  c0=$(cpu)
  out=$(SIZE=$SIZE wrk -t2 -c8 -d"${SECONDS_PROFILED}s" --latency -s "$BENCH_DIR/misses.lua" "$base/")
  c1=$(cpu)
  profiler "dump,$DUMP,file=$TMP/miss.collapsed"
  profiler "stop,file=$TMP/miss.html"
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  echo "misses/s (${SIZE} B, while profiled): $(awk '/Requests\/sec/ {print $2}' <<<"$out")"
  echo "time to last byte p50 / p99: $(awk '$1 == "50%" {print $2}' <<<"$out") / $(awk '$1 == "99%" {print $2}' <<<"$out")"
  echo "node CPU per miss: $(python3 -c "print(round(($c1 - $c0) / $(getconf CLK_TCK) / $n * 1e6))") µs"
  echo
  summary "$n" "$TMP/miss.collapsed"
  echo
  echo "flame graph: $TMP/miss.html; folded stacks: $TMP/miss.collapsed"
  exit 0
fi

url="$base/bench/blob/hot?size=$SIZE"
curl -sf -o /dev/null "$url"
curl -sf -o /dev/null -D - "$url" | grep -i '^x-cache: HIT' >/dev/null || { echo "the key is not a HIT" >&2; exit 1; }

echo "warming up 20 s ($url)" >&2
wrk -t2 -c64 -d20s "$url" >/dev/null
profiler "start,$EVENT"
echo "profiling ${SECONDS_PROFILED} s" >&2
out=$(wrk -t2 -c64 -d"${SECONDS_PROFILED}s" "$url")
hits=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
profiler "dump,$DUMP,file=$TMP/hit.collapsed"
profiler "stop,file=$TMP/hit.html"
live=$(wrk -t2 -c64 -d10s "$base/-/health/live" | awk '/Requests\/sec/ {print $2}')

echo "hits/s (${SIZE} B, while profiled): $hits"
echo "/-/health/live req/s (after, not profiled): $live"
echo
summary "$(awk '/requests in/ {print $1}' <<<"$out")" "$TMP/hit.collapsed"
echo
echo "flame graph: $TMP/hit.html; folded stacks: $TMP/hit.collapsed"
