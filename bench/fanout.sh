#!/usr/bin/env bash
# Fan-out of one large artifact over a Corral cluster (issue 17 item 3).
#
#   bench/fanout.sh [--nodes N] [--size 256MiB] [--clients C]
#
# Starts the counting bench origin (bench/origin.py) and one PostgreSQL
# (modules/it/src/test/scripts/postgres.sh), then, for each mode, a fresh cluster of N Corral
# nodes on 127.0.0.1 (./corral serve, fresh data dirs, a fresh database), asks one new OCI layer
# of the given size at once from every node (C clients each) and prints per node: its first
# client's time to the response head, when it held the layer, its peer egress and ingress
# (corral_peer_sent_bytes_total / corral_peer_received_bytes_total), and for the run: the time
# until every node holds it, the last node's first head minus the first's, the largest peer
# egress and the upstream's request count (bench/fanout.py does the measuring).
#
# Modes: `--peer-fanout off` (owner-only: the node that fetched sends every copy) and
# `--peer-fanout on`, in the same run. A build without the setting (issue 17 items 1-2 not
# merged) runs once, owner-only, and says so: the script passes --peer-fanout only when
# `./corral help` lists it.
#
# Defaults: 3 nodes, 256 MiB, 2 clients per node, JAVA_OPTS "-Xmx256m -XX:+UseSerialGC" per node
# (BENCH_FANOUT_JAVA_OPTS). Nodes are started two at a time after the seed: ten JVMs compiling at
# once on two cores pause their heartbeats for seconds. The failure detector accepts 10 s pauses
# here (a --config file): a benchmark on a shared two-core machine must not down a busy node.
# Results: bench/results/fanout-<N>n-<UTC timestamp>.json. Needs ./corral built (mvn -o ... package).
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
PY=${PYTHON:-python3}
PG_SCRIPT="$ROOT/modules/it/src/test/scripts/postgres.sh"
NODES=3
SIZE=256MiB
CLIENTS=2
JAVA_OPTS_NODE=${BENCH_FANOUT_JAVA_OPTS:--Xmx256m -XX:+UseSerialGC}
FORM_TIMEOUT=${BENCH_FANOUT_FORM_TIMEOUT:-180}

usage() { echo "usage: bench/fanout.sh [--nodes N] [--size 256MiB] [--clients C]" >&2; exit 2; }
while (($#)); do
  case "$1" in
    --nodes) NODES=${2:?}; shift 2 ;;
    --size) SIZE=${2:?}; shift 2 ;;
    --clients) CLIENTS=${2:?}; shift 2 ;;
    *) usage ;;
  esac
done
[[ "$NODES" =~ ^[0-9]+$ && "$NODES" -ge 2 ]] || { echo "--nodes: a number >= 2" >&2; exit 2; }
[[ "$CLIENTS" =~ ^[0-9]+$ && "$CLIENTS" -ge 1 ]] || { echo "--clients: a number >= 1" >&2; exit 2; }
SIZE_BYTES=$("$PY" -c '
import re, sys
m = re.fullmatch(r"([0-9]+)(|KiB|MiB|GiB)", sys.argv[1])
if not m:
    sys.exit("--size: a number of bytes, or with KiB, MiB or GiB (e.g. 256MiB)")
print(int(m.group(1)) * {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)])' "$SIZE")

log() { printf '[fanout %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

TMP=$(mktemp -d /tmp/corral-fanout.XXXXXX)
GROUPS_STARTED=()
PG_DIR=""
NODE_PIDS=()

stop_group() { # pgid [seconds]: TERM the group, wait, then KILL it
  local pg=$1 secs=${2:-5} i
  kill -TERM -- "-$pg" 2>/dev/null || return 0
  for ((i = 0; i < secs * 10; i++)); do
    kill -0 -- "-$pg" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL -- "-$pg" 2>/dev/null || true
}

stop_nodes() { # every node at once: SIGKILL (a benchmark's cluster keeps nothing; a graceful stop of all waits 10 s)
  local pid
  for pid in "${NODE_PIDS[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  NODE_PIDS=()
}

cleanup() {
  local pg
  stop_nodes
  for pg in "${GROUPS_STARTED[@]}"; do stop_group "$pg"; done
  if [[ -n "$PG_DIR" ]]; then "$PG_SCRIPT" stop "$PG_DIR" >/dev/null 2>&1 || true; fi
  if [[ "${BENCH_KEEP_TMP:-0}" == 1 ]]; then log "temp dir kept: $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_group() { # logfile cmd...: starts cmd in its own session; sets STARTED_PID
  local logfile=$1
  shift
  setsid "$@" >"$logfile" 2>&1 </dev/null &
  STARTED_PID=$!
  disown "$STARTED_PID" 2>/dev/null || true # stopped by its group id; no "Killed" line from bash
}

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_line() { # file regex seconds pid: prints the first matching line
  local file=$1 re=$2 secs=$3 pid=$4 i line
  for ((i = 0; i < secs * 5; i++)); do
    line=$(grep -m1 -E "$re" "$file" 2>/dev/null || true)
    if [[ -n "$line" ]]; then printf '%s\n' "$line"; return 0; fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}

cluster_ready() { # management-url nodes base...: all Up, none unreachable, every node ready
  "$PY" - "$@" <<'PYEOF'
import json, sys, urllib.request
mgmt, n, bases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
try:
    m = json.load(urllib.request.urlopen(mgmt + "/cluster/members", timeout=5))
    up = [x for x in m.get("members", []) if x.get("status") == "Up"]
    if len(up) != n or len(m.get("members", [])) != n or m.get("unreachable"):
        sys.exit(1)
    for b in bases:
        if urllib.request.urlopen(b + "/-/health/ready", timeout=5).status != 200:
            sys.exit(1)
except Exception:
    sys.exit(1)
PYEOF
}

if [[ ! -f "$ROOT/modules/server/target/corral-server-0.1.0-SNAPSHOT-all.jar" ]]; then
  log "the server jar is missing: mvn -B -o -q -DskipTests -pl modules/server -am package"
  exit 1
fi
if (cd "$ROOT" && ./corral help 2>/dev/null) | grep -q -- '--peer-fanout'; then
  MODES=(off on)
  log "this build has --peer-fanout: owner-only (off) then fan-out (on), same run"
else
  MODES=(absent)
  log "this build has no --peer-fanout setting (issue 17 items 1-2 not in it): one run, owner-only (today's behaviour)"
fi

# --- origin and PostgreSQL, shared by the modes ---
start_group "$TMP/origin.log" "$PY" "$BENCH_DIR/origin.py"
GROUPS_STARTED+=("$STARTED_PID")
line=$(wait_line "$TMP/origin.log" 'listening on http://' 15 "$STARTED_PID") || { cat "$TMP/origin.log" >&2; log "origin did not start"; exit 1; }
ORIGIN_PORT=${line##*:}
ORIGIN="http://127.0.0.1:$ORIGIN_PORT"
PG_PORT=$(free_port)
out=$("$PG_SCRIPT" start "$PG_PORT") || { log "PostgreSQL did not start"; exit 1; }
PG_DIR=$(sed -n 's/^dir=//p' <<<"$out")
PW="bench-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
(umask 077 && printf '%s\n' "$PW" >"$TMP/journal-password")
cat >"$TMP/bench.conf" <<'EOF'
# bench/fanout.sh: ten JVMs on two shared cores pause for seconds; do not down a busy node
pekko.cluster.failure-detector.acceptable-heartbeat-pause = 10s
pekko.cluster.split-brain-resolver.stable-after = 20s
EOF
log "origin $ORIGIN, PostgreSQL 127.0.0.1:$PG_PORT, $NODES nodes x $CLIENTS clients, one $SIZE layer, JAVA_OPTS=$JAVA_OPTS_NODE"

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RESULTS=()

run_mode() { # mode: off | on | absent
  local mode=$1 db="corral_fanout_$1" i line port cports=() mports=() bases=() extra=()
  "$PG_SCRIPT" createdb "$PG_DIR" "$PG_PORT" "$db" "$PW" >/dev/null
  local journal=(--journal "jdbc:postgresql://127.0.0.1:$PG_PORT/$db" --journal-user "$db" --journal-password-file "$TMP/journal-password")
  (cd "$ROOT" && ./corral db init "${journal[@]}") >"$TMP/db-init-$mode.log" 2>&1 || { tail -n 20 "$TMP/db-init-$mode.log" >&2; return 1; }
  [[ "$mode" != absent ]] && extra=(--peer-fanout "$mode")
  for ((i = 0; i < NODES; i++)); do
    cports+=("$(free_port)")
    mports+=("$(free_port)")
  done
  local formed_at started_at=$SECONDS
  for ((i = 0; i < NODES; i++)); do
    start_group "$TMP/$mode-node-$((i + 1)).log" env JAVA_OPTS="$JAVA_OPTS_NODE" \
      bash -c 'cd "$1" && shift && exec "$@"' _ "$ROOT" ./corral serve \
      --http-host 127.0.0.1 --http-port 0 --data-dir "$TMP/$mode-data-$((i + 1))" --node-name "node-$((i + 1))" \
      --cluster-host 127.0.0.1 --cluster-port "${cports[i]}" --seed-nodes "127.0.0.1:${cports[0]}" \
      --peer-port 0 --management-port "${mports[i]}" --config "$TMP/bench.conf" "${journal[@]}" "${extra[@]}" \
      --repo "bench=generic:$ORIGIN" --repo "bench-oci=oci:$ORIGIN/oci"
    NODE_PIDS+=("$STARTED_PID")
    # the seed alone, then two at a time: each waited for before the next start
    if ((i == 0 || i % 2 == 0 || i == NODES - 1)); then
      local j
      for ((j = ${#bases[@]}; j <= i; j++)); do
        line=$(wait_line "$TMP/$mode-node-$((j + 1)).log" 'listening on http://[^ :]+:[0-9]+' 180 "${NODE_PIDS[j]}") \
          || { tail -n 30 "$TMP/$mode-node-$((j + 1)).log" >&2; log "node-$((j + 1)) did not start"; return 1; }
        port=$(sed -E 's#.*listening on http://[^ :]+:([0-9]+).*#\1#' <<<"$line")
        bases+=("http://127.0.0.1:$port")
      done
    fi
  done
  local t
  for ((t = 0; t < FORM_TIMEOUT * 2; t++)); do
    cluster_ready "http://127.0.0.1:${mports[0]}" "$NODES" "${bases[@]}" && break
    sleep 0.5
  done
  cluster_ready "http://127.0.0.1:${mports[0]}" "$NODES" "${bases[@]}" || { log "the cluster did not form in $FORM_TIMEOUT s"; return 1; }
  formed_at=$SECONDS
  log "mode $mode: $NODES nodes Up and ready after $((formed_at - started_at)) s"
  local out="$TMP/fanout-$mode.json" rc=0
  "$PY" "$BENCH_DIR/fanout.py" --bases "$(IFS=,; echo "${bases[*]}")" --origin "$ORIGIN" --size "$SIZE_BYTES" \
    --clients "$CLIENTS" --mode "$([[ $mode == absent ]] && echo owner-only || echo "fanout-$mode")" --run-id "$STAMP" --out "$out" || rc=$?
  RESULTS+=("$out")
  local rss=0 pid
  for pid in "${NODE_PIDS[@]}"; do
    for p in $(pgrep -g "$pid" java 2>/dev/null || true); do rss=$((rss + $(awk '/VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0))); done
  done
  log "mode $mode: the $NODES nodes' resident memory after the run: $((rss / 1024)) MiB in all"
  stop_nodes
  return "$rc"
}

status=0
for mode in "${MODES[@]}"; do
  run_mode "$mode" || status=1
done

mkdir -p "$BENCH_DIR/results"
final="$BENCH_DIR/results/fanout-${NODES}n-$STAMP.json"
"$PY" - "$final" "${RESULTS[@]}" <<'PYEOF'
import json, sys
runs = []
for p in sys.argv[2:]:
    try:
        with open(p) as f:
            runs.append(json.load(f))
    except OSError:
        pass
with open(sys.argv[1], "w") as f:
    json.dump({"runs": runs}, f, indent=1)
print("\n| mode | nodes | every node holds it | first head first / last | last - first | peer egress max | upstream requests | errors |")
print("|---|---|---|---|---|---|---|---|")
for r in runs:
    print(f"| {r['mode']} | {r['nodes']} | {r['all_hold_s']} s | {r['first_head_first_s']:.3f} / {r['first_head_last_s']:.3f} s "
          f"| {r['ttfb_spread_s']:.3f} s | {r['peer_egress_max_bytes'] / 2**20:.0f} MiB ({r['peer_egress_max_x']}x) "
          f"| {r['upstream_requests']} | {r['errors']} |")
PYEOF
log "results: $final"
exit "$status"
