#!/usr/bin/env bash
# Corral vs nginx (proxy_cache_lock on) vs Varnish, same load, same machine, same run.
#
#   bench/run.sh [--quick] [--cluster]
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
# --cluster (or BENCH_MODE=cluster): the same scenarios with the load spread
# round-robin over 3 base URLs, against (a) 3 independent nginx caches (target
# nginx-3, each configured as in single mode) and (b) 3 Corral nodes forming one
# cluster on 127.0.0.1 (target corral-3: the first node is the seed; the journal
# is a real PostgreSQL started by modules/it/src/test/scripts/postgres.sh, which
# installs Debian's postgresql package when missing, then `./corral db init`).
# Ratios corral-3/nginx-3.
#
# Environment:
#   BENCH_TARGETS       comma list, default nginx,varnish,corral
#   BENCH_WRK_DURATION  seconds per wrk run (default 10; --quick: 3)
#   BENCH_WRK_RUNS      wrk runs per URL, the median is reported (default 3; --quick: 1)
#   BENCH_S1S_ROUNDS    S1s rounds of 50 clients (default 10)
#   BENCH_S4W_SECONDS   seconds of unmeasured misses before S4w (default 60; --quick: 10)
#   BENCH_SCENARIOS     comma list of scenarios to run (default S0,S1,S2,S1s,S3,S4,S4w,S5; O1, the OCI
#                       fan-out of issue 15, runs only when listed: BENCH_SCENARIOS=O1 --cluster)
#   BENCH_WARMUP_ROUNDS unmeasured S1s-like bursts before Corral's scenarios (default 600;
#                       --quick: 30): a JVM compiles its hot paths only after thousands of calls
#                       (nginx and Varnish need none, and their lock's 500 ms poll would make it slow)
#   BENCH_WAIT_QUIET    seconds to wait, before each target, for other processes to use
#                       <= 0.2 cores (default 30; 0 = don't wait); the load seen is reported
#   BENCH_CORRAL_START_TIMEOUT  seconds to wait for Corral's "listening on" line (default 120)
#   BENCH_KEEP_TMP=1    keep the temp dir (configs, logs, caches) for inspection
#   BENCH_MODE          single (default) or cluster
#   BENCH_CLUSTER_NODES nodes per cluster target (default 3)
#   BENCH_CLUSTER_JAVA_OPTS  JAVA_OPTS of each Corral node in cluster mode (default -Xmx384m)
#   BENCH_CLUSTER_FORM_TIMEOUT  seconds to wait for all nodes Up and ready (default 120)
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
MODE=${BENCH_MODE:-single}
QUICK=0
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    --cluster) MODE=cluster ;;
    *) echo "usage: bench/run.sh [--quick] [--cluster]" >&2; exit 2 ;;
  esac
done
case "$MODE" in
  single) TARGETS=${BENCH_TARGETS:-nginx,varnish,corral} ;;
  cluster) TARGETS=${BENCH_TARGETS:-nginx,corral} ;; # run as nginx-3 and corral-3
  *) echo "BENCH_MODE must be single or cluster" >&2; exit 2 ;;
esac
WRK_DURATION=${BENCH_WRK_DURATION:-10}
WRK_RUNS=${BENCH_WRK_RUNS:-3}
S1S_ROUNDS=${BENCH_S1S_ROUNDS:-10}
S4W_SECONDS=${BENCH_S4W_SECONDS:-60}
SCENARIOS=${BENCH_SCENARIOS:-S0,S1,S2,S1s,S3,S4,S4w,S5}
WARMUP_ROUNDS=${BENCH_WARMUP_ROUNDS:-600}
WAIT_QUIET=${BENCH_WAIT_QUIET:-30}
CORRAL_START_TIMEOUT=${BENCH_CORRAL_START_TIMEOUT:-120}
CLUSTER_NODES=${BENCH_CLUSTER_NODES:-3}
CLUSTER_JAVA_OPTS=${BENCH_CLUSTER_JAVA_OPTS:--Xmx384m}
CLUSTER_FORM_TIMEOUT=${BENCH_CLUSTER_FORM_TIMEOUT:-120}
if ((QUICK)); then
  WRK_DURATION=${BENCH_WRK_DURATION:-3}
  WRK_RUNS=${BENCH_WRK_RUNS:-1}
  WARMUP_ROUNDS=${BENCH_WARMUP_ROUNDS:-30}
  S4W_SECONDS=${BENCH_S4W_SECONDS:-10}
fi
PG_SCRIPT="$ROOT/modules/it/src/test/scripts/postgres.sh"
PY=${PYTHON:-python3}

log() { printf '[bench %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# --- processes: each started with setsid, so its pid is its process group id ---
TMP=$(mktemp -d /tmp/corral-bench.XXXXXX)
chmod 755 "$TMP" # nginx workers and varnish's child drop root and must reach their dirs
GROUPS_STARTED=()
SCENARIOS_PID="" # scenarios.py while it runs
GC_LOG="" # the GC log of the Corral node while its scenarios run
PG_DIR="" # the PostgreSQL of the corral-3 target while it runs (pg_ctl daemonizes it: stopped by postgres.sh)

stop_group() { # pgid [seconds]: TERM the group, wait up to 5 s (or seconds), then KILL it
  local pg=$1 secs=${2:-5} i
  kill -TERM -- "-$pg" 2>/dev/null || return 0
  for ((i = 0; i < secs * 10; i++)); do
    kill -0 -- "-$pg" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL -- "-$pg" 2>/dev/null || true
}

cleanup() {
  local pg
  if [[ -n "$SCENARIOS_PID" ]]; then kill -TERM "$SCENARIOS_PID" 2>/dev/null || true; fi
  for pg in "${GROUPS_STARTED[@]}"; do stop_group "$pg"; done
  if [[ -n "$PG_DIR" ]]; then "$PG_SCRIPT" stop "$PG_DIR" || true; fi
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

http_status() { # url: prints the HTTP status of a GET (000 when it fails)
  "$PY" -c '
import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=5).status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception:
    print("000")' "$1"
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

run_scenarios() { # target base[,base...] pgid[,pgid...] [more pgids to exclude from "other load"]
  local out="$TMP/result-$1.json"
  "$PY" "$BENCH_DIR/scenarios.py" --target "$1" --base "$2" --origin "$ORIGIN" --pgid "$3" --exclude-pgids "$ORIGIN_PID${4:+,$4}" \
    --out "$out" --wrk-duration "$WRK_DURATION" --wrk-runs "$WRK_RUNS" --s1s-rounds "$S1S_ROUNDS" \
    --s4w-seconds "$S4W_SECONDS" --scenarios "$SCENARIOS" --warmup-rounds "$([[ $1 == corral* ]] && echo "$WARMUP_ROUNDS" || echo 0)" --wait-quiet "$WAIT_QUIET" \
    ${GC_LOG:+--gc-log "$GC_LOG"} \
    --run-id "$STAMP" &
  SCENARIOS_PID=$! # waited on in the background, so a TERM or INT runs the trap at once
  local rc=0
  wait "$SCENARIOS_PID" || rc=$?
  SCENARIOS_PID=""
  ((rc == 0)) && RESULTS+=("$out")
  return "$rc"
}

skip() { # target reason
  log "SKIP $1: $2"
  printf '{"target": "%s", "skipped": %s}\n' "$1" "$("$PY" -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$2")" >"$TMP/result-$1.json"
  RESULTS+=("$TMP/result-$1.json")
}

nginx_start() { # dir port: writes the config and starts nginx; sets STARTED_PID; false if it did not start
  local dir=$1 port=$2
  mkdir -p "$dir/cache" "$dir/tmp"
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
  if ! wait_port "$port" 15 "$STARTED_PID"; then
    cat "$dir/stderr.log" "$dir/error.log" >&2 2>/dev/null || true
    return 1
  fi
  log "nginx $(nginx -v 2>&1 | sed 's/.*\///') on 127.0.0.1:$port (proxy_cache_lock on)"
}

bench_nginx() {
  local port pid
  port=$(free_port)
  if ! nginx_start "$TMP/nginx" "$port"; then
    stop_group "$STARTED_PID"
    skip nginx "nginx did not start"
    return
  fi
  pid=$STARTED_PID
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
  # from the repository root, as documented; `cd` in a subshell so this script's cwd stays.
  # JDK_JAVA_OPTIONS adds to ./corral's JVM flags (JAVA_OPTS would replace them): a GC log, whose
  # pauses scenarios.py reports per scenario.
  GC_LOG="$TMP/corral-gc.log"
  start_group "$log" env JDK_JAVA_OPTIONS="-Xlog:gc:file=$GC_LOG:time" \
    bash -c 'cd "$1" && shift && exec "$@"' _ "$ROOT" ./corral serve \
    --http-host 127.0.0.1 --http-port 0 --data-dir "$TMP/corral-data" \
    --repo "bench=generic:http://127.0.0.1:$ORIGIN_PORT" --repo "bench-oci=oci:http://127.0.0.1:$ORIGIN_PORT/oci"
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
  GC_LOG=""
  stop_group "$pid"
}

# --- cluster mode: N caches behind one round-robin (scenarios.py spreads the load) ---

bench_nginx_cluster() { # N independent nginx caches, each as in single mode, each its own cache dir
  local i port bases=() pids=()
  for ((i = 1; i <= CLUSTER_NODES; i++)); do
    port=$(free_port)
    if ! nginx_start "$TMP/nginx-$i" "$port"; then
      stop_group "$STARTED_PID"
      for pid in "${pids[@]}"; do stop_group "$pid"; done
      skip nginx-3 "nginx $i of $CLUSTER_NODES did not start"
      return
    fi
    pids+=("$STARTED_PID")
    bases+=("http://127.0.0.1:$port")
  done
  run_scenarios nginx-3 "$(IFS=,; echo "${bases[*]}")" "$(IFS=,; echo "${pids[*]}")" || log "nginx-3 scenarios failed"
  for pid in "${pids[@]}"; do stop_group "$pid"; done
}

cluster_formed() { # management-url expected: true when that node sees `expected` members, all Up, none unreachable
  "$PY" - "$1/cluster/members" "$2" <<'PYEOF'
import json, sys, urllib.request
try:
    m = json.load(urllib.request.urlopen(sys.argv[1], timeout=5))
except Exception:
    sys.exit(1)
up = [x for x in m.get("members", []) if x.get("status") == "Up"]
sys.exit(0 if len(up) == int(sys.argv[2]) == len(m.get("members", [])) and not m.get("unreachable") else 1)
PYEOF
}

stop_corral_cluster() { # pgids...: SIGTERM all nodes at once (they drain and leave), then the database
  local pid
  for pid in "$@"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "$@"; do stop_group "$pid" 40; done # a node drains, hands off its shards and leaves first
  if [[ -n "$PG_DIR" ]]; then "$PG_SCRIPT" stop "$PG_DIR" || true; PG_DIR=""; fi
}

bench_corral_cluster() {
  if [[ ! -x "$ROOT/corral" ]]; then
    skip corral-3 "$ROOT/corral not found (build Corral first)"
    return
  fi
  # the journal: a throwaway PostgreSQL on a free port of 127.0.0.1 (the integration tests' script)
  local pg_port out db=corral_bench pw pwfile="$TMP/journal-password" i
  pg_port=$(free_port)
  log "starting PostgreSQL on 127.0.0.1:$pg_port ($PG_SCRIPT)"
  if ! out=$("$PG_SCRIPT" start "$pg_port"); then
    skip corral-3 "PostgreSQL did not start (postgres.sh start)"
    return
  fi
  PG_DIR=$(sed -n 's/^dir=//p' <<<"$out")
  pw="bench-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
  (umask 077 && printf '%s\n' "$pw" >"$pwfile")
  if ! "$PG_SCRIPT" createdb "$PG_DIR" "$pg_port" "$db" "$pw"; then
    stop_corral_cluster
    skip corral-3 "could not create the database (postgres.sh createdb)"
    return
  fi
  local pg_pgid # the postmaster leads its own session: its CPU is the target's, not "other load"
  pg_pgid=$(head -n1 "$PG_DIR/data/postmaster.pid" 2>/dev/null || true)
  local journal=(--journal "jdbc:postgresql://127.0.0.1:$pg_port/$db" --journal-user "$db" --journal-password-file "$pwfile")
  # db init first and alone: ./corral builds the jar when it is stale, once, before the nodes start
  log "./corral db init (builds the server jar first when it is stale)"
  if ! (cd "$ROOT" && timeout 900 ./corral db init "${journal[@]}") >"$TMP/db-init.log" 2>&1; then
    tail -n 30 "$TMP/db-init.log" >&2 || true
    stop_corral_cluster
    skip corral-3 "./corral db init failed (log: last lines above)"
    return
  fi

  local cports=() mports=() pids=() bases=() line port
  for ((i = 0; i < CLUSTER_NODES; i++)); do
    cports+=("$(free_port)")
    mports+=("$(free_port)")
  done
  for ((i = 0; i < CLUSTER_NODES; i++)); do
    start_group "$TMP/corral-$((i + 1)).log" env JAVA_OPTS="$CLUSTER_JAVA_OPTS" \
      bash -c 'cd "$1" && shift && exec "$@"' _ "$ROOT" ./corral serve \
      --http-host 127.0.0.1 --http-port 0 --data-dir "$TMP/corral-data-$((i + 1))" --node-name "node-$((i + 1))" \
      --cluster-host 127.0.0.1 --cluster-port "${cports[i]}" --seed-nodes "127.0.0.1:${cports[0]}" \
      --peer-port 0 --management-port "${mports[i]}" "${journal[@]}" \
      --repo "bench=generic:http://127.0.0.1:$ORIGIN_PORT" --repo "bench-oci=oci:http://127.0.0.1:$ORIGIN_PORT/oci"
    pids+=("$STARTED_PID")
  done
  for ((i = 0; i < CLUSTER_NODES; i++)); do
    if ! line=$(wait_line "$TMP/corral-$((i + 1)).log" 'listening on http://[^ :]+:[0-9]+' "$CORRAL_START_TIMEOUT" "${pids[i]}"); then
      tail -n 30 "$TMP/corral-$((i + 1)).log" >&2 || true
      stop_corral_cluster "${pids[@]}"
      skip corral-3 "node-$((i + 1)) did not report 'listening on http://<host>:<port>' within $CORRAL_START_TIMEOUT s (log: last lines above)"
      return
    fi
    port=$(sed -E 's#.*listening on http://[^ :]+:([0-9]+).*#\1#' <<<"$line")
    bases+=("http://127.0.0.1:$port/bench")
  done
  # every node Up in one cluster (as the seed sees it) and ready, bounded
  local formed=0 t
  for ((t = 0; t < CLUSTER_FORM_TIMEOUT * 2; t++)); do
    if cluster_formed "http://127.0.0.1:${mports[0]}" "$CLUSTER_NODES"; then
      formed=1
      for ((i = 0; i < CLUSTER_NODES; i++)); do
        [[ $(http_status "${bases[i]%/bench}/-/health/ready") == 200 ]] || formed=0
      done
      ((formed)) && break
    fi
    sleep 0.5
  done
  if ((!formed)); then
    for ((i = 0; i < CLUSTER_NODES; i++)); do tail -n 15 "$TMP/corral-$((i + 1)).log" >&2 || true; done
    stop_corral_cluster "${pids[@]}"
    skip corral-3 "the $CLUSTER_NODES nodes did not form one cluster (all Up, all ready) within $CLUSTER_FORM_TIMEOUT s"
    return
  fi
  log "corral cluster of $CLUSTER_NODES on ${bases[*]} (seed 127.0.0.1:${cports[0]}, journal PostgreSQL 127.0.0.1:$pg_port, JAVA_OPTS=$CLUSTER_JAVA_OPTS)"
  run_scenarios corral-3 "$(IFS=,; echo "${bases[*]}")" "$(IFS=,; echo "${pids[*]}")" "$pg_pgid" || log "corral-3 scenarios failed"
  # for the record: each node's request, upstream and fall-through counters after the run
  [[ -f "$TMP/result-corral-3.json" ]] && "$PY" - "$TMP/result-corral-3.json" "${bases[@]}" <<'PYEOF' || true
import json, re, sys, urllib.request
path, bases = sys.argv[1], sys.argv[2:]
with open(path) as f:
    res = json.load(f)
nodes = {}
for base in bases:
    try:
        text = urllib.request.urlopen(base.rsplit("/bench", 1)[0] + "/-/metrics", timeout=10).read().decode()
    except Exception as e:
        nodes[base] = {"error": str(e)}
        continue
    counters = {}
    for line in text.splitlines():
        m = re.match(r'(corral_(?:requests|upstream_requests|fallthrough|coalesced|peer_(?:sent|received)_bytes|peer_copies_(?:sent|received)|peer_transfers|peer_transfer_bytes)_total)\{([^}]*)\}\s+([0-9.eE+-]+)$', line)
        if m:
            labels = ",".join(l for l in m.group(2).split(",") if not l.startswith("repo="))
            counters[f"{m.group(1)}{{{labels}}}"] = float(m.group(3))
    nodes[base] = counters
res["node_metrics"] = nodes
with open(path, "w") as f:
    json.dump(res, f, indent=1)
PYEOF
  stop_corral_cluster "${pids[@]}"
}

# The harness floor: the origin answering all 50 S1s requests at one instant (a perfect
# coalescer), so the waiter - leader spread it shows is the load client's own.
"$PY" "$BENCH_DIR/scenarios.py" --target floor --base "$ORIGIN" --origin "$ORIGIN" --floor --scenarios S1s \
  --s1s-rounds "$S1S_ROUNDS" --wait-quiet "$WAIT_QUIET" --exclude-pgids "$ORIGIN_PID" --out "$TMP/result-floor.json" --run-id "$STAMP" && RESULTS+=("$TMP/result-floor.json")

IFS=, read -r -a TARGET_LIST <<<"$TARGETS"
for t in "${TARGET_LIST[@]}"; do
  case "$MODE:$t" in
    single:nginx) bench_nginx ;;
    single:varnish) bench_varnish ;;
    single:corral) bench_corral ;;
    cluster:nginx) bench_nginx_cluster ;;
    cluster:corral) bench_corral_cluster ;;
    *) log "unknown target $t (mode $MODE)" ;;
  esac
done

mkdir -p "$BENCH_DIR/results"
"$PY" "$BENCH_DIR/report.py" --out "$BENCH_DIR/results/$STAMP.json" "${RESULTS[@]}"
log "results: $BENCH_DIR/results/$STAMP.json"
