#!/usr/bin/env bats
# sim_page.bats - docket-sim's HTML pages in a real browser: headless Chromium renders the
# comparison page (the documented --compare command on a slice of the Philly trace) and a
# --sweep page, with no network at all (the pages must be self-contained). Each screenshot
# must be a real rendering, not a blank or broken page: its size, how many colours it has,
# how much of it is inked, and the chart lines' colours present. The screenshots are kept
# in the test output directory ($DOCKET_TEST_OUTPUT, default $DOCKET_BUILD/test-output).

bats_require_minimum_version 1.5.0

B=${DOCKET_BUILD:-$BATS_TEST_DIRNAME/../../build}
EX=$BATS_TEST_DIRNAME/../../examples/sim
# A 3,000-job cut of the Philly trace ships with the tests (tests/data/traces/README.md),
# so no test needs ../shared; DOCKET_TRACE names another file of the same schema.
PHILLY=${DOCKET_TRACE:-$BATS_TEST_DIRNAME/../data/traces/philly_vc-3000.csv}
SIM="$B/src/sim/docket-sim"
OUT=${DOCKET_TEST_OUTPUT:-$B/test-output}
PNG="python3 $BATS_TEST_DIRNAME/lib/png_colours.py"

setup() {
    [[ -x $SIM ]] || skip "docket-sim not built"
    command -v chromium >/dev/null || skip "chromium not installed (scripts/install-deps.sh --test)"
    T=$(mktemp -d)
    mkdir -p "$OUT"
}

teardown() {
    rm -rf "$T"
}

# shot HTML PNG WIDTH HEIGHT: render HTML offline in headless Chromium
shot() {
    local sandbox=()
    [[ $(id -u) -eq 0 ]] && sandbox=(--no-sandbox) # Chromium refuses to run as root otherwise
    # no network: every host resolves to nothing, and no proxy or background fetches
    timeout 120 chromium --headless "${sandbox[@]}" --disable-gpu --hide-scrollbars \
        --host-resolver-rules="MAP * ~NOTFOUND" --no-proxy-server --disable-background-networking \
        --user-data-dir="$T/profile" --window-size="$3,$4" --screenshot="$2" "file://$1" \
        >"$T/chromium.log" 2>&1 || { cat "$T/chromium.log"; return 1; }
    [[ -s $2 ]]
}

@test "the comparison page renders in headless Chromium: table, verdict and charts" {
    run -0 "$SIM" --trace "$PHILLY" --cluster "$EX/cluster-philly.yaml" \
        --policy "$EX/policy-tiered.yaml" --mapping "$EX/mapping-philly.yaml" --limit 800 \
        --compare --html "$T/compare.html" --quiet --no-progress
    shot "$T/compare.html" "$OUT/sim-compare.png" 1000 3200
    read -r w h colours inked found < <($PNG "$OUT/sim-compare.png" 1f77b4 d62728 2ca02c ff7f0e 9467bd)
    echo "screenshot $w x $h, $colours colours, $inked inked, $found of 5 line colours" >&3
    [ "$w" -eq 1000 ] && [ "$h" -eq 3200 ]
    [ "$(stat -c %s "$OUT/sim-compare.png")" -gt 50000 ]
    [ "$colours" -ge 64 ]   # text anti-aliasing, table shading, five chart colours
    awk -v i="$inked" 'BEGIN { exit !(i >= 0.05 && i <= 0.9) }' # neither blank nor a solid fill
    [ "$found" -eq 5 ]      # one line per policy drawn in its colour
}

@test "the --sweep page renders in headless Chromium" {
    run -0 "$SIM" --trace "$PHILLY" --cluster "$EX/cluster-philly.yaml" \
        --policy "$EX/policy-tiered.yaml" --mapping "$EX/mapping-philly.yaml" --limit 300 \
        --baseline easy --sweep arrival-scale=0.5,1 --html "$T/sweep.html" --quiet --no-progress
    shot "$T/sweep.html" "$OUT/sim-sweep.png" 1000 1200
    read -r w h colours inked found < <($PNG "$OUT/sim-sweep.png")
    [ "$colours" -ge 16 ]
    awk -v i="$inked" 'BEGIN { exit !(i >= 0.03 && i <= 0.9) }'
}

@test "a blank page fails the screenshot checks (the checks can fail)" {
    printf '<!DOCTYPE html><html><body></body></html>\n' >"$T/blank.html"
    shot "$T/blank.html" "$T/blank.png" 1000 800
    read -r w h colours inked found < <($PNG "$T/blank.png" 1f77b4)
    [ "$colours" -lt 16 ] && [ "$found" -eq 0 ]
    awk -v i="$inked" 'BEGIN { exit !(i < 0.03) }'
}
