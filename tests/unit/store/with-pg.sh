#!/usr/bin/env bash
# with-pg.sh PROGRAM [ARGS]: run a store unit test program against a PostgreSQL of its own
# (scripts/pg-test.sh start, DOCKET_TEST_PG_DSN set for it), stopped afterwards whatever
# the program's end. Exits 77 (skipped) where PostgreSQL's server is not installed.
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
bindir=$(pg_config --bindir 2>/dev/null || true)
if [[ ! -x $bindir/initdb ]] && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
    echo "# skip: PostgreSQL is not installed (scripts/install-deps.sh --test)"
    exit 77
fi
# no fsync: these tests never crash the server, and 1,000 commits each synced are slow
dsn=$(PG_TEST_OPTS="-c fsync=off" "$root/scripts/pg-test.sh" start) || exit 1
trap '"$root/scripts/pg-test.sh" stop "$dsn"' EXIT
DOCKET_TEST_PG_DSN=$dsn "$@"
