#!/usr/bin/env bash
# The whole test suite: cmocka unit tests and the bats system tests against the real
# binaries, all built with ASan + UBSan, then each libFuzzer harness briefly.
# Ends with one line "N passed, N failed"; exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
TESTBUILD=${TESTBUILD:-build-test}
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
passed=0
failed=0
log() { printf '== %s\n' "$*"; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

log "building with ASan + UBSan in $TESTBUILD"
if [[ ! -f $TESTBUILD/build.ninja ]]; then
    meson setup "$TESTBUILD" --buildtype=debug -Db_sanitize=address,undefined \
        -Dc_args=-fno-sanitize-recover=all -Dc_link_args=-fno-sanitize-recover=all >/dev/null || {
        echo "meson setup failed"; echo "0 passed, 1 failed"; exit 1; }
fi
if ! ninja -C "$TESTBUILD" >"$TESTBUILD/ninja.log" 2>&1; then
    tail -n 60 "$TESTBUILD/ninja.log"
    echo "0 passed, 1 failed"
    exit 1
fi

# Unit tests: each cmocka binary prints TAP; count its ok / not ok lines.
log "unit tests"
export CMOCKA_MESSAGE_OUTPUT=TAP
meson test -C "$TESTBUILD" --no-rebuild --print-errorlogs --num-processes 2 >"$TESTBUILD/unit.log" 2>&1
unit_rc=$?
if [[ -f $TESTBUILD/meson-logs/testlog.json ]]; then
    read -r up uf < <(jq -rs '
        [ .[] | (.stdout // "") as $o
          | ($o | [scan("(?m)^ok ")] | length) as $ok
          | ($o | [scan("(?m)^not ok ")] | length) as $nok
          | { ok: $ok, nok: (if .result != "OK" and $nok == 0 then 1 else $nok end) } ]
        | "\(map(.ok) | add // 0) \(map(.nok) | add // 0)"' "$TESTBUILD/meson-logs/testlog.json")
    passed=$((passed + up)); failed=$((failed + uf))
    echo "unit: $up passed, $uf failed"
    [[ $uf -gt 0 || $unit_rc -ne 0 ]] && grep -E '^(not ok|#)|FAIL|ERROR|runtime error|AddressSanitizer' "$TESTBUILD/meson-logs/testlog.txt" | head -n 80
fi
unset CMOCKA_MESSAGE_OUTPUT

# System tests: bats drives the real binaries on loopback.
if compgen -G "tests/system/*.bats" >/dev/null; then
    log "system tests (bats)"
    export DOCKET_BUILD="$PWD/$TESTBUILD"
    bats --tap tests/system >"$TESTBUILD/bats.log" 2>&1
    sp=$(grep -cE '^ok ' "$TESTBUILD/bats.log" || true)
    sf=$(grep -cE '^not ok ' "$TESTBUILD/bats.log" || true)
    if [[ $sp -eq 0 && $sf -eq 0 ]]; then sf=1; tail -n 40 "$TESTBUILD/bats.log"; fi
    passed=$((passed + sp)); failed=$((failed + sf))
    echo "system: $sp passed, $sf failed"
    [[ $sf -gt 0 ]] && grep -A25 -E '^not ok ' "$TESTBUILD/bats.log" | head -n 150
fi

# Fuzzers: each harness runs briefly; a crash is a failure.
if compgen -G "tests/fuzz/*/fuzz_*.c" >/dev/null; then
    log "fuzzers (${FUZZ_SECONDS}s each)"
    FUZZ_SECONDS=$FUZZ_SECONDS scripts/run-fuzz.sh >"$TESTBUILD/fuzz.log" 2>&1
    fp=$(grep -cE '^fuzz ok ' "$TESTBUILD/fuzz.log" || true)
    ff=$(grep -cE '^fuzz FAIL ' "$TESTBUILD/fuzz.log" || true)
    if [[ $fp -eq 0 && $ff -eq 0 ]]; then ff=1; tail -n 30 "$TESTBUILD/fuzz.log"; fi
    passed=$((passed + fp)); failed=$((failed + ff))
    echo "fuzz: $fp passed, $ff failed"
    [[ $ff -gt 0 ]] && grep -B2 -A30 '^fuzz FAIL' "$TESTBUILD/fuzz.log" | head -n 120
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 && $passed -gt 0 ]]
