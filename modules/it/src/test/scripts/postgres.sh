#!/usr/bin/env bash
# A throwaway PostgreSQL for the integration tests, on 127.0.0.1 only.
#
#   postgres.sh start PORT        -> prints "dir=DIR" and "port=PORT" once it accepts connections
#   postgres.sh createdb DIR PORT NAME PASSWORD
#                                 -> a user NAME (password PASSWORD) owning a database NAME
#   postgres.sh sql DIR PORT DB SQL
#                                 -> runs SQL in database DB as the superuser
#   postgres.sh stop DIR          -> stops the server and removes DIR
#
# The binaries come from /usr/lib/postgresql/*/bin (15 preferred); when there are none, the
# Debian package "postgresql" is installed with apt-get (needs root). The package's own cluster
# is never started or touched: the server here runs from a new data directory under /tmp, as
# the "postgres" user when this script runs as root (initdb refuses root). TCP logins need a
# password (scram-sha-256); the Unix socket in DIR trusts the local superuser, for setup only.
set -euo pipefail

bin_dir() {
  local dir
  for dir in /usr/lib/postgresql/15/bin $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/postgres" ]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

ensure_installed() {
  if bin_dir >/dev/null; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "postgres.sh: no PostgreSQL under /usr/lib/postgresql and not root: install the package postgresql" >&2
    exit 1
  fi
  echo "postgres.sh: installing postgresql with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  bin_dir >/dev/null || { echo "postgres.sh: apt-get installed no PostgreSQL server binaries" >&2; exit 1; }
}

# Runs a command as the postgres user when we are root, else as ourselves.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

cmd_start() {
  local port="$1"
  ensure_installed
  local bin dir
  bin="$(bin_dir)"
  dir="$(mktemp -d /tmp/corral-pg.XXXXXX)"
  mkdir -p "$dir/sock"
  if [ "$(id -u)" -eq 0 ]; then
    chown -R postgres: "$dir"
  fi
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; rm -rf "$dir"; exit 1; }
  if ! as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port -k $dir/sock -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100" \
      start >"$dir/pg_ctl.log" 2>&1; then
    cat "$dir/pg_ctl.log" "$dir/server.log" >&2 || true
    rm -rf "$dir"
    exit 1
  fi
  echo "dir=$dir"
  echo "port=$port"
}

cmd_createdb() {
  local dir="$1" port="$2" name="$3" password="$4"
  local bin
  bin="$(bin_dir)"
  as_owner "$bin/psql" -q -v ON_ERROR_STOP=1 -h "$dir/sock" -p "$port" -U postgres -d postgres \
    -c "CREATE USER \"$name\" PASSWORD '$password'" \
    -c "CREATE DATABASE \"$name\" OWNER \"$name\"" >&2
}

cmd_sql() {
  local dir="$1" port="$2" db="$3" sql="$4"
  local bin
  bin="$(bin_dir)"
  as_owner "$bin/psql" -q -v ON_ERROR_STOP=1 -h "$dir/sock" -p "$port" -U postgres -d "$db" -c "$sql" >&2
}

cmd_stop() {
  local dir="$1"
  case "$dir" in
    /tmp/corral-pg.*) ;;
    *) echo "postgres.sh: refusing to remove $dir (not made by this script)" >&2; exit 1 ;;
  esac
  local bin
  bin="$(bin_dir)"
  if [ -d "$dir/data" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) cmd_start "$2" ;;
  createdb) cmd_createdb "$2" "$3" "$4" "$5" ;;
  sql) cmd_sql "$2" "$3" "$4" "$5" ;;
  stop) cmd_stop "$2" ;;
  *) echo "usage: postgres.sh start PORT | createdb DIR PORT NAME PASSWORD | sql DIR PORT DB SQL | stop DIR" >&2; exit 2 ;;
esac
