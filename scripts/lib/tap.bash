# tap.bash - how scripts/run-tests.sh reads TAP (cmocka's and bats') and counts it:
# passed, failed and skipped apart, every skip printed with its reason, and a skip that
# this machine could have run counted as a failure. Sourced by run-tests.sh and by
# scripts/check-tap.sh, which checks it on made-up TAP.
#
# The caller sets: passed, failed, skipped (counters) and can_root, can_cgroups (yes|no).

# classify_skip NAME REASON: count a skip, or a failure when this machine could run it.
classify_skip() {
    local name=$1 reason=$2 why=
    if [[ -z $reason ]]; then
        why="a skip must say why"
    elif [[ $can_cgroups == yes && $reason == "needs cgroups"* ]]; then
        why="this machine has a usable cgroup hierarchy and runs as root"
    elif [[ $can_root == yes && $reason == "needs root"* ]]; then
        why="this suite runs as root"
    elif [[ $reason == *"not built"* || $reason == *"not installed"* ]]; then
        why="make test builds every binary and installs every test tool"
    fi
    if [[ -n $why ]]; then
        printf 'FAIL (skipped, but %s): %s: %s\n' "$why" "$name" "${reason:-no reason given}"
        failed=$((failed + 1))
    else
        printf 'skip: %s: %s\n' "$name" "$reason"
        skipped=$((skipped + 1))
    fi
}

# tap_results: read TAP (cmocka or bats) on stdin and print one line per result:
# "PASS<TAB>name", "FAIL<TAB>name" or "SKIP<TAB>name<TAB>reason", then "PLAN<TAB>n".
# cmocka 1.1 writes a skip as "not ok N # SKIP name" (with its reason, when given, as the
# "# skip: WHY" line before it); bats as "ok N name # skip (WHY)".
tap_results() {
    awk '
        function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
        /^1\.\.[0-9]+/ { plan = substr($0, 4) + 0; next }
        /^(not )?ok / {
            line = $0; isok = (line ~ /^ok /)
            sub(/^(not )?ok [0-9]* ?(- )?/, "", line)
            if (match(line, /# [Ss][Kk][Ii][Pp]/)) {
                name = trim(substr(line, 1, RSTART - 1)); rest = trim(substr(line, RSTART + 6))
                if (name == "") { name = rest; rest = "" }
                gsub(/^\(|\)$/, "", rest)
                reason = rest != "" ? rest : why
                printf "SKIP\t%s\t%s\n", name, reason
            } else {
                printf "%s\t%s\n", (isok ? "PASS" : "FAIL"), trim(line)
            }
            why = ""; n++; next
        }
        /^#? ?skip: / { why = $0; sub(/^#? ?skip: /, "", why); next }
        END { printf "PLAN\t%d\t%d\n", plan, n }'
}

# count_tap LABEL: tally tap_results of stdin; a plan not met (a crash) is a failure.
count_tap() {
    local label=$1 kind name reason p=0 f=0 plan=0 seen=0
    while IFS=$'\t' read -r kind name reason; do
        case $kind in
        PASS) p=$((p + 1)) ;;
        FAIL) f=$((f + 1)); echo "not ok: $label: $name" ;;
        SKIP) classify_skip "$label: $name" "$reason" ;;
        PLAN) plan=$name; seen=$reason ;;
        esac
    done < <(tap_results)
    if [[ $seen -lt $plan || ($plan -eq 0 && $seen -eq 0) ]]; then
        echo "not ok: $label: ran $seen of its $plan tests (crashed or printed no TAP)"
        f=$((f + 1))
    fi
    passed=$((passed + p)); failed=$((failed + f))
}
