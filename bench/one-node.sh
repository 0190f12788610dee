# Sourced by bench/profile.sh and bench/misses.sh: the bench's fake origin and one Corral node
# (./corral serve with its defaults and a generic repository "bench"), both on 127.0.0.1 with
# their files in $TMP; their process ids are added to PIDS for the caller's trap. Needs
# BENCH_DIR, ROOT, TMP and PIDS; JAVA_OPTS, when exported, reaches ./corral.

wait_line() { # file regex seconds: prints the first matching line
  for _ in $(seq 1 $(($3 * 10))); do
    if grep -Eo "$2" "$1" 2>/dev/null | head -1; then return 0; fi
    sleep 0.1
  done
  echo "timed out waiting for '$2' in $1" >&2
  tail -n 20 "$1" >&2
  return 1
}

# Sets origin (the origin's URL), base (the node's) and pid (the node's JVM).
start_origin_and_node() {
  python3 "$BENCH_DIR/origin.py" >"$TMP/origin.log" 2>&1 &
  PIDS+=($!)
  origin=$(wait_line "$TMP/origin.log" 'http://127\.0\.0\.1:[0-9]+' 30)
  (cd "$ROOT" && exec ./corral serve --http-host 127.0.0.1 --http-port 0 --data-dir "$TMP/data" \
    --repo "bench=generic:$origin") >"$TMP/corral.log" 2>&1 &
  PIDS+=($!)
  base=$(wait_line "$TMP/corral.log" 'listening on http://[^ :]+:[0-9]+' 300 | sed 's/listening on //')
  pid=$(pgrep -f "corral-server.*-all.jar.*$TMP/data" | head -1)
}
