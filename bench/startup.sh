#!/usr/bin/env bash
# Start-up with a store of N cached artifacts (issue 14 item 7).
#
#   bench/startup.sh [N ...]        default: 0 100000 1000000
#
# For each N: writes a store of N small artifacts in the store's own format
# (dev.corral.core.store.StoreGenerator in modules/microbench, built here with -Pjmh when
# missing), then starts `./corral serve` on it twice with ./corral's defaults:
#   first start  no index snapshot: the index is rebuilt from every key record (as after a crash)
#   restart      after a clean stop (SIGTERM, waited for), from the index snapshot that stop wrote
# and prints for each the seconds until /-/health/ready answers 200, what the node answers at that
# moment for a stored artifact (its index loads in the background: a HIT from disk), when its
# index was loaded, its resident memory then and at ready, and how long the clean stop took (it
# writes the snapshot). The jar (and its
# class data sharing archive) are made before the first measurement. Loopback only; each store
# is deleted after its run (a million artifacts take about 8 GiB of small files, under $TMPDIR).
set -euo pipefail
BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH_DIR/.." && pwd)"
COUNTS=("$@")
[[ ${#COUNTS[@]} -gt 0 ]] || COUNTS=(0 100000 1000000)
GEN="$ROOT/modules/microbench/target/corral-microbench.jar"
[[ -f "$GEN" ]] || (cd "$ROOT" && mvn -B -q -Pjmh -pl modules/microbench -am package -DskipTests >&2)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/corral-startup.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# one start beforehand: builds the jar and the class data sharing archive if they are stale
port=$(free_port)
(cd "$ROOT" && exec timeout 300 ./corral serve --http-host 127.0.0.1 --http-port "$port" --cluster-port 0 \
  --peer-port 0 --data-dir "$TMP/warm") >"$TMP/warm.log" 2>&1 &
warm=$!
for _ in $(seq 1 3000); do curl -sf -o /dev/null "http://127.0.0.1:$port/-/health/ready" && break; sleep 0.1; done
kill "$warm" 2>/dev/null || true
wait "$warm" 2>/dev/null || true

# start DATA LOG N: starts a node, waits until it is ready, asks it at once for the last stored
# artifact (a hit while its index may still be loading), waits for the index to be loaded (the
# node's log says so), then stops it cleanly (SIGTERM, waits for the exit); sets READY ("2.13 s",
# or "not ready"), HIT (the answer's status and X-Cache, and its time), LOADED (seconds from the
# start until the index was loaded), RSS (MiB at ready), RSS_LOADED (MiB once loaded) and STOP
# (seconds).
start() {
  local data=$1 log=$2 n=$3 pid t0 ready="" rss stopped loaded="" hit_t0
  port=$(free_port)
  t0=$(date +%s.%N)
  # No --management-port: it is off by default (0 would turn it on, on a free port).
  (cd "$ROOT" && exec ./corral serve --http-host 127.0.0.1 --http-port "$port" --cluster-port 0 --peer-port 0 \
    --data-dir "$data" --repo "bench=generic:$UPSTREAM") >"$log" 2>&1 &
  pid=$!
  ready=$(python3 "$BENCH_DIR/startwait.py" ready "$port" "$pid")
  rss=$(ps -o rss= -p "$pid" 2>/dev/null || echo 0)
  HIT="-"
  if [[ -n "$ready" && "$n" -gt 0 ]]; then
    hit_t0=$(date +%s.%N)
    HIT=$(curl -s -o /dev/null -D - --max-time 30 "http://127.0.0.1:$port/bench/files/$((n - 1)).bin" \
      | awk 'NR==1{s=$2} tolower($1)=="x-cache:"{x=$2} END{gsub(/\r/,"",x); printf "%s %s", s, x}')
    HIT="$HIT in $(python3 -c "print(f'{($(date +%s.%N)-$hit_t0)*1000:.0f} ms')")"
  fi
  loaded=$(python3 "$BENCH_DIR/startwait.py" logged "$log" "store index loaded" "$pid")
  RSS_LOADED=$(( $(ps -o rss= -p "$pid" 2>/dev/null || echo 0) / 1024 ))
  stopped=$(date +%s.%N)
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  STOP=$(python3 -c "print(f'{$(date +%s.%N)-$stopped:.1f}')")
  READY="not ready"
  [[ -z "$ready" ]] || READY=$(python3 -c "print(f'{$ready-$t0:.2f} s')")
  LOADED="not loaded"
  [[ -z "$loaded" ]] || LOADED=$(python3 -c "print(f'{$loaded-$t0:.2f} s')")
  RSS=$((rss / 1024))
}

# Nothing listens on the discard port: a key the store does not hold fails fast, on loopback.
UPSTREAM=http://127.0.0.1:9
echo "| artifacts | start | ready | first hit, asked at ready | index loaded | resident memory at ready / loaded | clean stop |"
echo "|---|---|---|---|---|---|---|"
for n in "${COUNTS[@]}"; do
  data="$TMP/store-$n"
  java -cp "$GEN" dev.corral.core.store.StoreGenerator "$data" "$n" "$UPSTREAM" >&2
  sync
  start "$data" "$TMP/node-$n-first.log" "$n"
  printf '| %s | first (rebuild) | %s | %s | %s | %s / %s MiB | %s s |\n' "$n" "$READY" "$HIT" "$LOADED" "$RSS" "$RSS_LOADED" "$STOP"
  grep -o "store index loaded.*" "$TMP/node-$n-first.log" >&2 || true
  grep -o "index snapshot written.*" "$TMP/node-$n-first.log" >&2 || echo "no index snapshot written" >&2
  [[ "$READY" != "not ready" ]] || tail -5 "$TMP/node-$n-first.log" >&2
  start "$data" "$TMP/node-$n-restart.log" "$n"
  printf '| %s | restart (snapshot) | %s | %s | %s | %s / %s MiB | %s s |\n' "$n" "$READY" "$HIT" "$LOADED" "$RSS" "$RSS_LOADED" "$STOP"
  grep -o "store index loaded.*" "$TMP/node-$n-restart.log" >&2 || true
  [[ "$READY" != "not ready" ]] || tail -5 "$TMP/node-$n-restart.log" >&2
  rm -rf "$data"
done
