#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests (issue 32): the store's unit tests and docketd's
# system tests run against it as they run against a SQLite file.
#
#   scripts/pg-test.sh start   make a cluster in a new temporary directory and start it;
#                              prints its DSN (postgresql:///docket?host=DIR&user=docket)
#   scripts/pg-test.sh stop DSN|DIR   stop that cluster by its postmaster's pid, and
#                              remove its directory
#   scripts/pg-test.sh pause DSN|DIR  stop its server by pid, keeping the cluster (a
#                              database that goes away under docketd)
#   scripts/pg-test.sh resume DSN|DIR start that server again
#
# initdb refuses to run as root, so the cluster belongs to the unprivileged system user
# `nobody` (PG_TEST_USER to name another): initdb and postgres run under it through
# setpriv (util-linux). The server listens on a unix socket in the cluster's directory
# only (listen_addresses is empty: no TCP at all), with trust authentication for the
# socket, which only root and that user can reach (the directory is theirs, 0700). The
# PG_TEST_OPTS adds server options ("-c fsync=off" for tests that never crash the server).
# The PostgreSQL programs are Debian's (postgresql-15: pg_config --bindir, or the newest
# /usr/lib/postgresql/N/bin).
set -euo pipefail

user=${PG_TEST_USER:-nobody}

bindir() {
    local d
    if command -v pg_config >/dev/null && d=$(pg_config --bindir 2>/dev/null) &&
        [[ -x $d/initdb ]]; then
        echo "$d"
        return
    fi
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [[ -x $d/initdb ]]; then
            echo "$d"
            return
        fi
    done
    echo "pg-test.sh: no PostgreSQL server programs (apt-get install postgresql)" >&2
    exit 1
}

as_user() {
    local group
    group=$(id -gn "$user")
    setpriv --reuid="$user" --regid="$group" --clear-groups -- "$@"
}

start() {
    local bin dir
    bin=$(bindir)
    dir=$(mktemp -d "${TMPDIR:-/tmp}/docket-pg.XXXXXX")
    chown "$user" "$dir"
    chmod 0700 "$dir"
    if ! as_user "$bin/initdb" -D "$dir/data" -U docket --auth=trust -E UTF8 \
        --locale=C.UTF-8 >"$dir/initdb.log" 2>&1; then
        cat "$dir/initdb.log" >&2
        rm -rf "$dir"
        exit 1
    fi
    echo "${PG_TEST_OPTS:-}" >"$dir/opts"
    if ! server_start "$dir"; then
        rm -rf "$dir"
        exit 1
    fi
    if ! as_user "$bin/createdb" -h "$dir" -U docket docket; then
        stop "$dir"
        exit 1
    fi
    echo "postgresql:///docket?host=$dir&user=docket"
}

# server_start DIR: the cluster's server, on its socket only (no TCP)
server_start() {
    local dir=$1 bin
    bin=$(bindir)
    if ! as_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses= -k $dir -c max_connections=50 $(cat "$dir/opts")" start \
        >/dev/null; then
        cat "$dir/server.log" >&2
        return 1
    fi
}

# cluster_dir DSN|DIR: the cluster's directory, only one this script made
cluster_dir() {
    local arg=${1:?usage: pg-test.sh stop|pause|resume DSN|DIR} dir
    dir=$arg
    if [[ $arg == postgres* ]]; then
        dir=${arg#*host=}
        dir=${dir%%&*}
    fi
    case $dir in
    "${TMPDIR:-/tmp}"/docket-pg.*) echo "$dir" ;;
    *)
        echo "pg-test.sh: '$dir' is not a cluster pg-test.sh made" >&2
        exit 1
        ;;
    esac
}

# server_stop DIR: by the postmaster's pid (fast shutdown: the clients are cut off)
server_stop() {
    local dir=$1 pid
    if [[ -f $dir/data/postmaster.pid ]]; then
        pid=$(head -n 1 "$dir/data/postmaster.pid")
        kill -INT "$pid" 2>/dev/null || true # fast shutdown: the clients are gone
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
    fi
}

stop() {
    local dir
    dir=$(cluster_dir "$1")
    server_stop "$dir"
    rm -rf "$dir"
}

case ${1:-} in
start) start ;;
stop) stop "${2:-}" ;;
pause) server_stop "$(cluster_dir "${2:-}")" ;;
resume) server_start "$(cluster_dir "${2:-}")" ;;
*)
    echo "usage: scripts/pg-test.sh start | stop|pause|resume DSN|DIR" >&2
    exit 2
    ;;
esac
