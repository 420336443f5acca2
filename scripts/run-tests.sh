#!/usr/bin/env bash
# The whole test suite: the commit style, source format and core floor checks, cmocka unit
# tests and the bats system tests against the real binaries, all built with ASan + UBSan,
# docketd's threads under ThreadSanitizer (a build of its own), then each libFuzzer harness
# briefly. Ends with one line "N passed, N failed, N skipped"; exits non-zero when
# anything failed. `make check` runs the parts format, unit and system with the quick
# bats files only (Makefile, CHECK_BATS).
#
# Skips are counted apart and each is printed with its reason. A skip is a failure when
# this machine could have run the test: a test that skips for want of root or cgroups
# while the suite runs as root with a usable cgroup hierarchy, one that skips because a
# binary is "not built" or a tool "not installed" (make test built and installed them),
# or one that gives no reason at all. cmocka tests give their reason by printing a line
# "# skip: WHY" (print_message) just before skip(); bats tests with skip "WHY". A reason
# that starts "needs root" or "needs cgroups" is checked against this machine.
set -uo pipefail
cd "$(dirname "$0")/.."
TESTBUILD=${TESTBUILD:-build-test}
# a smoke pass: each fuzzer its seed corpus and FUZZ_RUNS inputs more from a fixed seed, the
# same on every machine (a cap of FUZZ_SECONDS each); `make fuzz` explores for longer
FUZZ_RUNS=${FUZZ_RUNS:-5000}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
# TEST_PARTS: which parts to run: format unit system tsan fuzz by default, envcheck on CI
# (.ci/run); BATS_FILES: the bats files (all); BATS_JOBS: how many run at once (4);
# PG_BATS_FILES: those run once more with docketd on PostgreSQL (below).
TEST_PARTS=${TEST_PARTS:-format unit system tsan fuzz}
BATS_FILES=${BATS_FILES:-tests/system}
want() { [[ " $TEST_PARTS " == *" $1 "* ]]; }
passed=0
failed=0
skipped=0
# each part's line says when it began, counted from the start of the run
log() { printf '== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
finish() {
    echo "$passed passed, $failed failed, $skipped skipped"
    [[ $failed -eq 0 && $passed -gt 0 ]]
    exit
}

# The caller's own docket configuration must not reach the tests (a config file under
# HOME, DOCKET_URL, a token). TERM and the locale are left as they are: a test that
# depends on one sets it itself (cli.bats gives script(1) its TERM), and .ci/run runs the
# CLI tests once under env -i to prove it.
unset NO_COLOR DOCKET_URL DOCKET_TOKEN DOCKET_PARTITION_MAP DOCKET_CA DOCKET_FINGERPRINT \
    DOCKET_CONTROLLER_FINGERPRINT XDG_CONFIG_HOME
export HOME=${TMPDIR:-/tmp}/docket-test-home.$$
mkdir -p "$HOME"
TOOLS_PATH= # the system tests' PATH, made below when a part needs it
trap 'rm -rf "$HOME" ${TOOLS_PATH:+"$TOOLS_PATH"}' EXIT
export PATH=$PATH:/usr/sbin:/sbin

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# What this machine can do: a skip for want of one of these is a failure here.
can_root=no
can_cgroups=no
if [[ $(id -u) -eq 0 ]]; then
    can_root=yes
    if [[ -f /sys/fs/cgroup/freezer/cgroup.procs ]] ||
        [[ -s /sys/fs/cgroup/cgroup.controllers ]]; then
        can_cgroups=yes
    fi
fi

# classify_skip, tap_results, count_tap: scripts/lib/tap.bash (checked by
# scripts/check-tap.sh, which runs below as one test).
source scripts/lib/tap.bash

log "building the web console (scripts/build-console.sh) and, with ASan + UBSan, $TESTBUILD"
scripts/build-console.sh || { echo "console build failed"; failed=$((failed + 1)); finish; }
if [[ ! -f $TESTBUILD/build.ninja ]]; then
    if ! meson setup "$TESTBUILD" --buildtype=debug -Db_sanitize=address,undefined \
        -Dc_args=-fno-sanitize-recover=all -Dc_link_args=-fno-sanitize-recover=all \
        >"${TMPDIR:-/tmp}/docket-meson-setup.$$" 2>&1; then
        grep -E 'ERROR|error' "${TMPDIR:-/tmp}/docket-meson-setup.$$" | head -n 20
        rm -f "${TMPDIR:-/tmp}/docket-meson-setup.$$"
        echo "meson setup failed"; failed=$((failed + 1)); finish
    fi
    rm -f "${TMPDIR:-/tmp}/docket-meson-setup.$$"
fi
if ! ninja -C "$TESTBUILD" >"$TESTBUILD/ninja.log" 2>&1; then
    tail -n 60 "$TESTBUILD/ninja.log"
    echo "build failed"; failed=$((failed + 1)); finish
fi

# check LABEL LOG WHAT CMD...: one check of the format part, as one test; on failure the
# head of its output (kept in $TESTBUILD/LOG) and "not ok: WHAT".
check() {
    local label=$1 out=$TESTBUILD/$2 what=$3
    shift 3
    log "$label"
    if "$@" >"$out" 2>&1; then
        passed=$((passed + 1))
    else
        head -n 40 "$out"
        echo "not ok: $what"
        failed=$((failed + 1))
    fi
}

if want format; then
    # the counting itself: scripts/lib/tap.bash on made-up TAP
    check "the runner's TAP counting (scripts/check-tap.sh)" check-tap.log \
        "scripts/check-tap.sh" scripts/check-tap.sh
    # every commit since the rule: a subject of at most 72 characters and a body
    check "commit style (scripts/check-commits.sh)" commits.log \
        "commit style (scripts/check-commits.sh)" scripts/check-commits.sh
    # src/, tests/ and bench/ as .clang-format writes them
    check "format (clang-format --dry-run --Werror)" format.log \
        "format: files differ from .clang-format (scripts/check-format.sh)" scripts/check-format.sh
    # the floors of the scheduling core (docs/architecture.md "Inside the core")
    check "core floors (scripts/check-core-floors.sh)" core-floors.log \
        "core floors: a call or an include goes up (scripts/check-core-floors.sh)" \
        scripts/check-core-floors.sh
fi

# Unit tests: each cmocka binary prints TAP (meson.build's default test setup sets
# CMOCKA_MESSAGE_OUTPUT=TAP for every test). The store's tests run twice: on SQLite, and
# on a PostgreSQL that tests/unit/store/with-pg.sh starts for the run (scripts/pg-test.sh
# start: initdb as `nobody` into a temporary directory, a unix socket only) and stops.
if want unit; then
log "unit tests"
# Each test's own timeout (meson's default 30 s where meson.build names none) times four: a
# sanitizer build on a slow or busy machine must not be killed half-way (test_store was,
# on a fresh root); a test that hangs is still stopped.
meson test -C "$TESTBUILD" --no-rebuild --print-errorlogs --num-processes 2 --timeout-multiplier 4 \
    >"$TESTBUILD/unit.log" 2>&1
unit_rc=$?
if [[ -f $TESTBUILD/meson-logs/testlog.json ]]; then
    p0=$passed f0=$failed s0=$skipped
    unit_failed=() # the tests that failed, whose own logs are shown below
    while read -r t; do
        name=$(jq -r '.name' <<<"$t")
        result=$(jq -r '.result' <<<"$t")
        before=$failed
        count_tap "$name" < <(jq -r '.stdout // ""' <<<"$t")
        if [[ $result != OK && $result != SKIP ]]; then
            # meson's word too when the TAP already failed: a TAP cut short reads
            # "crashed", and only meson knows it was a TIMEOUT
            echo "not ok: $name: meson says $result"
            [[ $failed -eq $before ]] && failed=$((failed + 1))
        fi
        [[ $failed -gt $before ]] && unit_failed+=("$name")
    done < <(jq -c '{name, result, stdout}' "$TESTBUILD/meson-logs/testlog.json")
    echo "unit: $((passed - p0)) passed, $((failed - f0)) failed, $((skipped - s0)) skipped"
    # The logs of the failed tests only: a passing test's stderr may hold what looks like
    # an error (test_xalloc_clock's ASan "failed to allocate" warning is expected).
    for name in "${unit_failed[@]}"; do
        echo "-- $name"
        jq -r --arg n "$name" 'select(.name == $n) | (.stdout // ""), (.stderr // "")' \
            "$TESTBUILD/meson-logs/testlog.json" |
            grep -E '^not ok|^# [^o]|FAIL|ERROR|runtime error|AddressSanitizer' | head -n 40
    done
    [[ ${#unit_failed[@]} -eq 0 && $unit_rc -ne 0 ]] && tail -n 40 "$TESTBUILD/unit.log"
else
    echo "not ok: unit tests: no meson test log"; failed=$((failed + 1))
fi
fi

# The programs a system test may call: those a fresh root has after install-deps.sh
# --test, and no others (scripts/test-tools.sh), so a test that calls a tool the install
# step forgets fails here too, not only on a fresh machine.
# It lives in a directory of its own under /tmp that everyone may enter, not in the build:
# jobs the tests run as `nobody` inherit the agent's PATH, and a checkout under /root
# (0700 on Debian) would leave them without a shell.
if want system || want envcheck || want tsan; then
    TOOLS_PATH=$(mktemp -d /tmp/docket-test-tools.XXXXXX) && chmod 0755 "$TOOLS_PATH"
    log "the system tests' PATH: the programs of the installed packages (scripts/test-tools.sh)"
    scripts/test-tools.sh "$TOOLS_PATH" >"$TESTBUILD/test-tools.log" 2>&1 ||
        { cat "$TESTBUILD/test-tools.log"; echo "test-tools.sh failed"; failed=$((failed + 1)); finish; }
fi

# System tests: bats drives the real binaries on loopback, BATS_JOBS files at a time (GNU
# parallel; the tests of one file run in order): they spend most of their time waiting on
# the programs they drive, not computing, and each starts its own on its own ports and
# directories. --timing puts each test's time in the log (bats.log), for the choice of
# `make check`'s files (CONTRIBUTING.md).
BATS_JOBS=${BATS_JOBS:-4}
# The longest files first: GNU parallel starts the files in the order given, and a long file
# started last would run on alone at the end. LONG_BATS names them, longest first (the sums
# of their tests' times in bats.log, bench/RESULTS.md "The slowest system tests"); the
# other files follow by name. A name no longer there is passed over.
LONG_BATS="console controller limits install agent_hostile big_arrays agent alerts roles
    lifecycle standby"
# bats_in_order DIR: the .bats files of DIR, the long ones first
bats_in_order() {
    local dir=$1 name f
    for name in $LONG_BATS; do
        [[ -f $dir/$name.bats ]] && echo "$dir/$name.bats"
    done
    for f in "$dir"/*.bats; do
        name=$(basename "$f" .bats)
        [[ " ${LONG_BATS//$'\n'/ } " == *" $name "* ]] || echo "$f"
    done
}
if want system; then
    log "system tests (bats, $BATS_JOBS files at a time)"
    export DOCKET_BUILD="$PWD/$TESTBUILD"
    side_by_side=()
    ((BATS_JOBS > 1)) && side_by_side=(--jobs "$BATS_JOBS" --no-parallelize-within-files)
    bats_files=($BATS_FILES)
    [[ ${#bats_files[@]} -eq 1 && -d ${bats_files[0]} ]] &&
        mapfile -t bats_files < <(bats_in_order "${bats_files[0]}")
    env PATH="$TOOLS_PATH" bats --tap --timing "${side_by_side[@]}" "${bats_files[@]}" \
        >"$TESTBUILD/bats.log" 2>&1
    p0=$passed f0=$failed s0=$skipped
    count_tap bats <"$TESTBUILD/bats.log"
    echo "system: $((passed - p0)) passed, $((failed - f0)) failed, $((skipped - s0)) skipped"
    [[ $failed -gt $f0 ]] && grep -A25 -E '^not ok ' "$TESTBUILD/bats.log" | head -n 150
fi

# The controller's system tests once more with docketd on PostgreSQL (DOCKET_TEST_PG:
# tests/system/lib/cluster.bash starts a throwaway cluster per file, scripts/pg-test.sh):
# the CLI end to end, and the leases across controller restarts. postgresql.bats, in the
# run above, covers what only PostgreSQL has (the import, a server that goes away).
PG_BATS_FILES=${PG_BATS_FILES:-tests/system/cli.bats tests/system/leases.bats}
if want system; then
    log "system tests on PostgreSQL: $PG_BATS_FILES"
    # side by side too: each file starts its own PostgreSQL on a socket of its own
    env PATH="$TOOLS_PATH" DOCKET_TEST_PG=1 bats --tap --timing "${side_by_side[@]}" $PG_BATS_FILES \
        >"$TESTBUILD/bats-pg.log" 2>&1
    p0=$passed f0=$failed s0=$skipped
    count_tap "bats (PostgreSQL)" <"$TESTBUILD/bats-pg.log"
    echo "system on PostgreSQL: $((passed - p0)) passed, $((failed - f0)) failed, $((skipped - s0)) skipped"
    [[ $failed -gt $f0 ]] && grep -A25 -E '^not ok ' "$TESTBUILD/bats-pg.log" | head -n 150
fi

# ThreadSanitizer: docketd's helper threads (WAL sync, checkpoints, alert delivery) under
# the system tests that drive them, in a build of its own (scripts/run-tsan.sh).
if want tsan; then
    log "ThreadSanitizer: the controller's threads (scripts/run-tsan.sh)"
    TEST_TOOLS_PATH=$TOOLS_PATH scripts/run-tsan.sh >"$TESTBUILD/tsan.log" 2>&1
    p0=$passed f0=$failed s0=$skipped
    count_tap tsan <"$TESTBUILD/tsan.log"
    echo "tsan: $((passed - p0)) passed, $((failed - f0)) failed, $((skipped - s0)) skipped"
    [[ $failed -gt $f0 ]] && grep -A40 -E '^not ok ' "$TESTBUILD/tsan.log" | head -n 150
fi

# The environment self-check (.ci/run asks for it): the CLI's system tests once more under
# env -i, with no TERM and then TERM=dumb; each run counts as one test.
if want envcheck; then
    log "self-check: tests/system/cli.bats under env -i"
    for term in "" dumb; do
        label="env -i ${term:+TERM=$term }cli.bats"
        if env -i PATH="$TOOLS_PATH" ${term:+TERM=$term} \
            DOCKET_BUILD="$PWD/$TESTBUILD" bats --tap tests/system/cli.bats \
            >"$TESTBUILD/envcheck.log" 2>&1; then
            echo "ok: $label ($(grep -c '^ok ' "$TESTBUILD/envcheck.log") tests)"
            passed=$((passed + 1))
        else
            grep -A20 '^not ok' "$TESTBUILD/envcheck.log" | head -n 60
            echo "not ok: $label"
            failed=$((failed + 1))
        fi
    done
fi

# Fuzzers: each harness runs briefly; a crash is a failure.
if want fuzz; then
    log "fuzzers ($FUZZ_RUNS inputs each from seed ${FUZZ_SEED:-1}, at most ${FUZZ_SECONDS}s)"
    FUZZ_RUNS=$FUZZ_RUNS FUZZ_SECONDS=$FUZZ_SECONDS scripts/run-fuzz.sh >"$TESTBUILD/fuzz.log" 2>&1
    fp=$(grep -cE '^fuzz ok ' "$TESTBUILD/fuzz.log" || true)
    ff=$(grep -cE '^fuzz FAIL ' "$TESTBUILD/fuzz.log" || true)
    if [[ $fp -eq 0 && $ff -eq 0 ]]; then ff=1; tail -n 30 "$TESTBUILD/fuzz.log"; fi
    passed=$((passed + fp)); failed=$((failed + ff))
    echo "fuzz: $fp passed, $ff failed"
    [[ $ff -gt 0 ]] && grep -B2 -A30 '^fuzz FAIL' "$TESTBUILD/fuzz.log" | head -n 120
fi

finish
