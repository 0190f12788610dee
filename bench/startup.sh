#!/usr/bin/env bash
# Start-up with a store of N cached artifacts (issue 14 item 7).
#
#   bench/startup.sh [N ...]        default: 0 100000 1000000
#
# For each N: writes a store of N small artifacts in the store's own format
# (dev.corral.core.store.StoreGenerator in modules/microbench, built here with -Pjmh when
# missing), starts `./corral serve` on it with ./corral's defaults, and prints the seconds until
# /-/health/ready answers 200, then the node's resident memory at that moment. The jar (and its
# class data sharing archive) are made before the first measurement. Loopback only; each store
# is deleted after its run (a million artifacts take about 8 GiB of small files).
set -euo pipefail
BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH_DIR/.." && pwd)"
COUNTS=("$@")
[[ ${#COUNTS[@]} -gt 0 ]] || COUNTS=(0 100000 1000000)
GEN="$ROOT/modules/microbench/target/corral-microbench.jar"
[[ -f "$GEN" ]] || (cd "$ROOT" && mvn -B -q -Pjmh -pl modules/microbench -am package -DskipTests >&2)
TMP=$(mktemp -d /tmp/corral-startup.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# one start beforehand: builds the jar and the class data sharing archive if they are stale
(cd "$ROOT" && timeout 300 ./corral serve --http-host 127.0.0.1 --http-port "$port" --cluster-port 0 --peer-port 0 \
  --management-port 0 --data-dir "$TMP/warm" >"$TMP/warm.log" 2>&1 &)
for _ in $(seq 1 3000); do curl -sf -o /dev/null "http://127.0.0.1:$port/-/health/ready" && break; sleep 0.1; done
pkill -f -- "--data-dir $TMP/warm" || true
sleep 2

echo "| artifacts in the store | ready after | resident memory at ready |"
echo "|---|---|---|"
for n in "${COUNTS[@]}"; do
  data="$TMP/store-$n"
  java -cp "$GEN" dev.corral.core.store.StoreGenerator "$data" "$n" >&2
  sync
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  t0=$(date +%s.%N)
  (cd "$ROOT" && exec ./corral serve --http-host 127.0.0.1 --http-port "$port" --cluster-port 0 --peer-port 0 \
    --management-port 0 --data-dir "$data" --repo bench=generic:http://127.0.0.1:9) >"$TMP/node-$n.log" 2>&1 &
  pid=$!
  ready=""
  for _ in $(seq 1 60000); do
    if curl -sf -o /dev/null "http://127.0.0.1:$port/-/health/ready"; then ready=$(date +%s.%N); break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  rss=$(ps -o rss= -p "$pid" 2>/dev/null || echo 0)
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [[ -z "$ready" ]]; then
    echo "| $n | did not become ready (log: $TMP/node-$n.log) | |"; tail -5 "$TMP/node-$n.log" >&2; continue
  fi
  printf '| %s | %.2f s | %d MiB |\n' "$n" "$(python3 -c "print($ready-$t0)")" $((rss / 1024))
  grep -o "store opened: [0-9]* keys" "$TMP/node-$n.log" >&2 || true
  rm -rf "$data"
done
