#!/usr/bin/env bash
# run-tsan.sh - docketd's helper threads under ThreadSanitizer. Builds docketd, and the
# docket CLI, docket-node and the webhook receiver that alerts.bats drives, with gcc's
# -fsanitize=thread in build-tsan/ (or $TSANBUILD; only those targets), then runs the
# system tests that put its threads to work against them: the WAL sync thread of the
# group commit and the checkpoint thread (tests/system/group_commit.bats), shutdown,
# restart, SIGHUP and failed writes with both running (a few of controller.bats), the
# alert delivery thread (the first test of alerts.bats), and the backup thread (made
# under submissions, a second refused, its client leaving, docketd stopping: three tests
# of backup.bats). Prints their TAP (bats), with
# one more test at the end: no ThreadSanitizer report from any process of the run.
#
# docketd stops at its first report (halt_on_error=1), so the test in progress fails as
# well; every report goes to a file of its own (log_path) and is printed under that last
# test, which also catches one at a shutdown no test looks at. Exits non-zero when any
# test failed. scripts/run-tests.sh runs it as its part `tsan`. TSAN_TESTS (a bats
# --filter regex) and TSAN_FILES choose other tests by hand.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
B=${TSANBUILD:-build-tsan}
[[ $B == /* ]] || B=$PWD/$B
TSAN_FILES=${TSAN_FILES:-tests/system/group_commit.bats tests/system/controller.bats tests/system/alerts.bats tests/system/backup.bats}
TSAN_TESTS=${TSAN_TESTS:-'^(group commit: |checkpoints: |SIGTERM shuts down|SIGHUP reopens|restart keeps jobs, nodes|fault: a failed write on submit|fault: a decision of the cycle|a failed job fires|a backup taken under|one backup at a time|a client that leaves)'}

# fail_all WHAT FILE: the run could not start; one failed test saying why, FILE's tail.
fail_all() {
    echo "1..1"
    echo "not ok 1 ThreadSanitizer run: $1"
    [[ -f $2 ]] && tail -n 40 "$2" | sed 's/^/# /'
    exit 1
}

if [[ ! -f $B/build.ninja ]]; then
    setup_log=${TMPDIR:-/tmp}/docket-tsan-setup.$$
    meson setup "$B" --buildtype=debug -Db_sanitize=thread >"$setup_log" 2>&1 ||
        fail_all "meson setup failed (its log: $setup_log)" "$setup_log"
    rm -f "$setup_log"
fi
ninja -C "$B" src/controller/docketd src/cli/docket src/agent/docket-node \
    tests/system/hook_receiver >"$B/ninja.log" 2>&1 || fail_all "build failed" "$B/ninja.log"

# TSan maps its shadow memory at fixed addresses; on a kernel whose address space
# randomisation gets in the way ("FATAL: ThreadSanitizer: unexpected memory mapping") the
# tests run with it off (setarch -R, inherited by every process bats starts).
run=()
if ! "$B/src/controller/docketd" --version >"$B/probe.log" 2>&1; then
    if setarch "$(uname -m)" -R "$B/src/controller/docketd" --version >>"$B/probe.log" 2>&1; then
        run=(setarch "$(uname -m)" -R)
    else
        fail_all "docketd does not start under ThreadSanitizer" "$B/probe.log"
    fi
fi

reports=$B/tsan-reports
rm -rf "$reports"
mkdir -p "$reports"
export DOCKET_BUILD=$B
unset DOCKETD
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}:log_path=$reports/tsan"
# shellcheck disable=SC2086 # TSAN_FILES is a list of paths
# (TEST_TOOLS_PATH, from run-tests.sh: the PATH of the other system tests, the programs of
# the installed packages only)
"${run[@]}" env ${TEST_TOOLS_PATH:+PATH="$TEST_TOOLS_PATH"} bats --tap --filter "$TSAN_TESTS" \
    $TSAN_FILES >"$B/bats.log" 2>&1
rc=$?

# bats' TAP with its plan one larger, then the test of the reports.
n=$(grep -cE '^(not )?ok ' "$B/bats.log")
awk '!done && /^1\.\.[0-9]+$/ { print "1.." substr($0, 4) + 1; done = 1; next } { print }' "$B/bats.log"
if compgen -G "$reports/tsan.*" >/dev/null; then
    echo "not ok $((n + 1)) no ThreadSanitizer report from any process of the run"
    for f in "$reports"/tsan.*; do
        echo "# $f:"
        head -n 80 "$f" | sed 's/^/#   /'
    done
    exit 1
fi
echo "ok $((n + 1)) no ThreadSanitizer report from any process of the run"
exit $rc
