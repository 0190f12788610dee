#!/usr/bin/env bash
# Corral vs nginx (proxy_cache_lock on) vs Varnish, same load, same machine, same run.
#
#   bench/run.sh [--quick]
#
# Installs nginx, wrk and varnish from Debian's packages when missing (needs root
# and apt-get; Varnish is optional). Starts a counting fake origin (bench/origin.py),
# then each target in turn on free ports of 127.0.0.1, runs the scenarios
# (bench/scenarios.py) against it and stops it. Corral is skipped, with a message,
# when ./corral is missing or does not say "listening on http://<host>:<port>" in 120 s.
#
# Writes bench/results/<UTC timestamp>.json and prints a markdown table with
# ratios Corral/nginx and Corral/Varnish.
#
# Environment:
#   BENCH_TARGETS       comma list, default nginx,varnish,corral
#   BENCH_WRK_DURATION  seconds per wrk run (default 10; --quick: 3)
#   BENCH_WRK_RUNS      wrk runs per URL, the median is reported (default 3; --quick: 1)
#   BENCH_S1S_ROUNDS    S1s rounds of 50 clients (default 3)
#   BENCH_WAIT_QUIET    seconds to wait, before each target, for other processes to use
#                       <= 0.2 cores (default 30; 0 = don't wait); the load seen is reported
#   BENCH_CORRAL_START_TIMEOUT  seconds to wait for Corral's "listening on" line (default 120)
#   BENCH_KEEP_TMP=1    keep the temp dir (configs, logs, caches) for inspection
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
TARGETS=${BENCH_TARGETS:-nginx,varnish,corral}
WRK_DURATION=${BENCH_WRK_DURATION:-10}
WRK_RUNS=${BENCH_WRK_RUNS:-3}
S1S_ROUNDS=${BENCH_S1S_ROUNDS:-3}
WAIT_QUIET=${BENCH_WAIT_QUIET:-30}
CORRAL_START_TIMEOUT=${BENCH_CORRAL_START_TIMEOUT:-120}
if [[ "${1:-}" == "--quick" ]]; then
  WRK_DURATION=${BENCH_WRK_DURATION:-3}
  WRK_RUNS=${BENCH_WRK_RUNS:-1}
fi
PY=${PYTHON:-python3}

log() { printf '[bench %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# --- processes: each started with setsid, so its pid is its process group id ---
TMP=$(mktemp -d /tmp/corral-bench.XXXXXX)
chmod 755 "$TMP" # nginx workers and varnish's child drop root and must reach their dirs
GROUPS_STARTED=()

stop_group() { # pgid: TERM the group, wait up to 5 s, then KILL it
  local pg=$1 i
  kill -TERM -- "-$pg" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    kill -0 -- "-$pg" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL -- "-$pg" 2>/dev/null || true
}

cleanup() {
  local pg
  for pg in "${GROUPS_STARTED[@]}"; do stop_group "$pg"; done
  if [[ "${BENCH_KEEP_TMP:-0}" == 1 ]]; then log "temp dir kept: $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_group() { # logfile cmd...: starts cmd in its own session; sets STARTED_PID
  local logfile=$1
  shift
  setsid "$@" >"$logfile" 2>&1 </dev/null &
  STARTED_PID=$!
  GROUPS_STARTED+=("$STARTED_PID")
}

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() { # port seconds pid: true once 127.0.0.1:port accepts, false on timeout or death
  local port=$1 secs=$2 pid=$3 i
  for ((i = 0; i < secs * 10; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

wait_line() { # file regex seconds pid: prints the first matching line
  local file=$1 re=$2 secs=$3 pid=$4 i line
  for ((i = 0; i < secs * 5; i++)); do
    line=$(grep -m1 -E "$re" "$file" 2>/dev/null || true)
    if [[ -n "$line" ]]; then
      printf '%s\n' "$line"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}

# --- tools ---
install_missing() {
  local need=() opt=()
  command -v nginx >/dev/null || need+=(nginx)
  command -v wrk >/dev/null || need+=(wrk)
  [[ ",$TARGETS," == *,varnish,* ]] && ! command -v varnishd >/dev/null && opt+=(varnish)
  ((${#need[@]} + ${#opt[@]})) || return 0
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    log "missing: ${need[*]} ${opt[*]} (install them; this script installs only as root with apt-get)"
    return 0
  fi
  log "installing from Debian's packages: ${need[*]} ${opt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  if ((${#need[@]})); then apt-get install -y -qq "${need[@]}" >&2 || log "could not install ${need[*]}"; fi
  if ((${#opt[@]})); then apt-get install -y -qq "${opt[@]}" >&2 || log "could not install varnish; skipping it"; fi
}
install_missing
command -v nginx >/dev/null || { log "nginx is required (it is the reference)"; exit 1; }

# --- origin ---
start_group "$TMP/origin.log" "$PY" "$BENCH_DIR/origin.py"
ORIGIN_PID=$STARTED_PID
line=$(wait_line "$TMP/origin.log" 'listening on http://' 15 "$ORIGIN_PID") || { cat "$TMP/origin.log" >&2; log "origin did not start"; exit 1; }
ORIGIN_PORT=${line##*:}
ORIGIN="http://127.0.0.1:$ORIGIN_PORT"
log "origin on $ORIGIN"

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RESULTS=()

run_scenarios() { # target base pgid
  local out="$TMP/result-$1.json"
  "$PY" "$BENCH_DIR/scenarios.py" --target "$1" --base "$2" --origin "$ORIGIN" --pgid "$3" --exclude-pgids "$ORIGIN_PID" \
    --out "$out" --wrk-duration "$WRK_DURATION" --wrk-runs "$WRK_RUNS" --s1s-rounds "$S1S_ROUNDS" \
    --wait-quiet "$WAIT_QUIET" \
    --run-id "$STAMP" && RESULTS+=("$out")
}

skip() { # target reason
  log "SKIP $1: $2"
  printf '{"target": "%s", "skipped": %s}\n' "$1" "$("$PY" -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$2")" >"$TMP/result-$1.json"
  RESULTS+=("$TMP/result-$1.json")
}

bench_nginx() {
  local dir="$TMP/nginx" port
  mkdir -p "$dir/cache" "$dir/tmp"
  port=$(free_port)
  cat >"$dir/nginx.conf" <<EOF
# Written by bench/run.sh: nginx as a pull-through cache with proxy_cache_lock on.
worker_processes auto;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  proxy_cache_path $dir/cache levels=1:2 keys_zone=bench:10m max_size=2g inactive=60m use_temp_path=off;
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass $ORIGIN;
      proxy_cache bench;
      proxy_cache_lock on;
      proxy_cache_valid 200 10m;
      add_header X-Cache \$upstream_cache_status always;
    }
  }
}
EOF
  start_group "$dir/stderr.log" nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" -g 'daemon off;'
  local pid=$STARTED_PID
  if ! wait_port "$port" 15 "$pid"; then
    cat "$dir/stderr.log" "$dir/error.log" >&2 2>/dev/null || true
    skip nginx "nginx did not start"
    return
  fi
  log "nginx $(nginx -v 2>&1 | sed 's/.*\///') on 127.0.0.1:$port (proxy_cache_lock on)"
  run_scenarios nginx "http://127.0.0.1:$port" "$pid" || log "nginx scenarios failed"
  stop_group "$pid"
}

bench_varnish() {
  command -v varnishd >/dev/null || { skip varnish "varnishd not installed"; return; }
  local dir="$TMP/varnish" port
  mkdir -p "$dir"
  port=$(free_port)
  start_group "$TMP/varnish.log" varnishd -F -a "127.0.0.1:$port" -b "127.0.0.1:$ORIGIN_PORT" -n "$dir" -s malloc,256m
  local pid=$STARTED_PID
  if ! wait_port "$port" 30 "$pid"; then
    cat "$TMP/varnish.log" >&2 || true
    skip varnish "varnishd did not start"
    return
  fi
  log "varnish $(varnishd -V 2>&1 | grep -o 'varnish-[0-9.]*' | head -1) on 127.0.0.1:$port (builtin VCL)"
  run_scenarios varnish "http://127.0.0.1:$port" "$pid" || log "varnish scenarios failed"
  stop_group "$pid"
}

bench_corral() {
  if [[ ! -x "$ROOT/corral" ]]; then
    skip corral "$ROOT/corral not found (build Corral first)"
    return
  fi
  local log="$TMP/corral.log" line port
  # from the repository root, as documented; `cd` in a subshell so this script's cwd stays
  start_group "$log" bash -c 'cd "$1" && shift && exec "$@"' _ "$ROOT" ./corral serve \
    --http-host 127.0.0.1 --http-port 0 --data-dir "$TMP/corral-data" \
    --repo "bench=generic:http://127.0.0.1:$ORIGIN_PORT"
  local pid=$STARTED_PID
  if ! line=$(wait_line "$log" 'listening on http://[^ :]+:[0-9]+' "$CORRAL_START_TIMEOUT" "$pid"); then
    tail -n 30 "$log" >&2 || true
    if kill -0 "$pid" 2>/dev/null; then
      skip corral "./corral serve did not report 'listening on http://<host>:<port>' within $CORRAL_START_TIMEOUT s (log: last lines above)"
    else
      skip corral "./corral serve exited before reporting 'listening on http://<host>:<port>' (log: last lines above)"
    fi
    stop_group "$pid"
    return
  fi
  port=$(sed -E 's#.*listening on http://[^ :]+:([0-9]+).*#\1#' <<<"$line")
  log "corral on 127.0.0.1:$port"
  run_scenarios corral "http://127.0.0.1:$port/bench" "$pid" || log "corral scenarios failed"
  stop_group "$pid"
}

# The harness floor: the origin answering all 50 S1s requests at one instant (a perfect
# coalescer), so the waiter - leader spread it shows is the load client's own.
"$PY" "$BENCH_DIR/scenarios.py" --target floor --base "$ORIGIN" --origin "$ORIGIN" --floor --scenarios S1s \
  --s1s-rounds "$S1S_ROUNDS" --wait-quiet "$WAIT_QUIET" --exclude-pgids "$ORIGIN_PID" --out "$TMP/result-floor.json" --run-id "$STAMP" && RESULTS+=("$TMP/result-floor.json")

IFS=, read -r -a TARGET_LIST <<<"$TARGETS"
for t in "${TARGET_LIST[@]}"; do
  case "$t" in
    nginx) bench_nginx ;;
    varnish) bench_varnish ;;
    corral) bench_corral ;;
    *) log "unknown target $t" ;;
  esac
done

mkdir -p "$BENCH_DIR/results"
"$PY" "$BENCH_DIR/report.py" --out "$BENCH_DIR/results/$STAMP.json" "${RESULTS[@]}"
log "results: $BENCH_DIR/results/$STAMP.json"
