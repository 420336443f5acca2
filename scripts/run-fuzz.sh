#!/usr/bin/env bash
# Build every libFuzzer harness (tests/fuzz/<module>/fuzz_*.c) with clang in build-fuzz/
# (or $FUZZBUILD)
# and run each for FUZZ_SECONDS (default 60), starting from its seed corpus when it has one.
# With FUZZ_RUNS=N each runs N inputs instead, from the fixed FUZZ_SEED (default 1), with
# FUZZ_SECONDS as a cap only: the same inputs on any machine at any speed, so a pass or a
# failure says the same thing everywhere (the test suite's smoke pass; `make fuzz` explores).
# Prints "fuzz ok NAME" or "fuzz FAIL NAME" per harness.
set -uo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
B=${FUZZBUILD:-build-fuzz}
# A harness is known by its name alone (its seeds are corpus/NAME next to it, its work
# corpus $B/corpus/NAME): two sources of one name would share both, so refuse them.
dups=$(find tests/fuzz -name 'fuzz_*.c' -printf '%f\n' | sort | uniq -d)
if [[ -n $dups ]]; then
    echo "fuzz FAIL two harnesses share a name:" $dups; exit 1
fi
if [[ ! -f $B/build.ninja ]]; then
    CC=clang meson setup "$B" -Dfuzz=true --buildtype=debugoptimized \
        -Db_sanitize=address,undefined -Db_lundef=false >/dev/null || { echo "fuzz FAIL setup"; exit 1; }
fi
if ! ninja -C "$B" >"$B/ninja.log" 2>&1; then
    tail -n 40 "$B/ninja.log"; echo "fuzz FAIL build"; exit 1
fi
status=0
for bin in $(find "$B/tests/fuzz" -type f -name 'fuzz_*' -perm -u+x | sort); do
    name=$(basename "$bin")
    src=$(find tests/fuzz -name "$name.c")
    [[ -n $src ]] || continue # a harness since removed, left in an older build dir
    seeds="$(dirname "$src")/corpus/$name"
    work="$B/corpus/$name"
    mkdir -p "$work"
    args=("$work")
    [[ -d $seeds ]] && args+=("$seeds")
    [[ -z ${FUZZ_RUNS:-} ]] || args=(-runs="$FUZZ_RUNS" -seed="${FUZZ_SEED:-1}" "${args[@]}")
    if "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix="$B/" "${args[@]}" >"$B/$name.log" 2>&1; then
        echo "fuzz ok $name ($(grep -oE 'Done [0-9]+ runs' "$B/$name.log" | tail -n 1))"
    else
        echo "fuzz FAIL $name"; tail -n 40 "$B/$name.log"; status=1
    fi
done
exit $status
