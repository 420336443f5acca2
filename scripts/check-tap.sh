#!/usr/bin/env bash
# check-tap.sh - scripts/lib/tap.bash on made-up TAP: cmocka's and bats' passes, failures,
# skips with and without reasons, skips this machine could have run, a crash before the
# plan was met. Prints what differs and exits non-zero when the counting is wrong.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/tap.bash
status=0

# expect LABEL P F S CAN_ROOT CAN_CGROUPS < TAP: the counts count_tap must reach.
expect() {
    local label=$1 want="$2 $3 $4"
    passed=0 failed=0 skipped=0 can_root=$5 can_cgroups=$6
    count_tap "$label" >/dev/null
    if [[ "$passed $failed $skipped" != "$want" ]]; then
        echo "check-tap: $label: got $passed passed, $failed failed, $skipped skipped; want $want"
        status=1
    fi
}

# cmocka 1.1 (TAP): a skip is "not ok N # SKIP name", its reason the "# skip:" line before
expect cmocka 1 1 1 yes yes <<'TAP'
1..3
ok 1 - passes
# skip: no v2 tree mounted at /sys/fs/cgroup/unified
not ok 2 # SKIP v2_only
not ok 3 - fails
# 0x1 != 0x2
TAP
# a skip for want of cgroups or root, on a machine that has them, is a failure
expect cmocka-capable 0 2 0 yes yes <<'TAP'
1..2
# skip: needs cgroups: no hierarchy found
not ok 1 # SKIP a
# skip: needs root: cgroups are made by root
not ok 2 # SKIP b
TAP
# ... and a skip where the machine lacks them
expect cmocka-unable 0 0 2 no no <<'TAP'
1..2
# skip: needs cgroups: no hierarchy found
not ok 1 # SKIP a
# skip: needs root: cgroups are made by root
not ok 2 # SKIP b
TAP
# a skip without a reason, and one whose reason belongs to another test, fail
expect cmocka-no-reason 1 1 0 no no <<'TAP'
1..2
# skip: this line was printed by test a, which then passed
ok 1 - a
not ok 2 # SKIP b
TAP
# bats: "ok N name # skip (reason)"; "not built" and "not installed" are failures
expect bats 2 3 1 no no <<'TAP'
1..6
ok 1 first
ok 2 second # skip (no shared traces at /x)
ok 3 third # skip
ok 4 fourth # skip (docketd not built)
not ok 5 fifth
# (in test file x.bats, line 3)
ok 6 sixth
TAP
# a binary that died before its plan: one failure more
expect crash 1 1 0 no no <<'TAP'
1..3
ok 1 - a
TAP
# no TAP at all: a failure
expect silent 0 1 0 no no </dev/null

[[ $status -eq 0 ]] && echo "check-tap: ok"
exit $status
