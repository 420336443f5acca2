#!/usr/bin/env bats
# lifecycle.bats - storage lifecycle rules end to end (docs/storage.md "Lifecycle rules"),
# and the GB-months of storage in docket report (docs/reports.md):
# a real docketd and two real agents (lib/cluster.bash), pools on plain directories and
# one small loop-mounted ext4 image (the target that fills up). docketd hands each run to
# an agent, the agent walks the project's area, copies, checks and deletes; the tests look
# at the files themselves, the run's counts and the audit trail.
# Pools:  hot   a plain directory            cold  a plain directory
#         tiny  an 8 MiB ext4 image (archive) scr   a plain directory (scratch)
#         loc   a plain directory, `local: true` (both agents see the same one here)
# Files are aged with touch -d; the agents run with DOCKET_NODE_TEST_LC_CORRUPT=corrupt.bin,
# so the copy of any file of that name differs from its source and must fail its check.
# The reports' storage samples are rolled up by a policy with a 2 s sample_keep.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=lcyc
load lib/cluster
load lib/images
AGENT_EXTRA=()
DOCKETD_EXTRA=()

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] ||
        skip "docket, docketd or docket-node not built"
    images_need_loop "the areas' owners and a loop mount"
    export DOCKET_NODE_TEST_LC_CORRUPT=corrupt.bin
    cluster_start
    mkdir -p "$T/hot" "$T/cold" "$T/scr" "$T/loc" "$T/outside"
    image_ready tiny 8
    cat >"$T/policy.yaml" <<YAML
projects:
  - {name: ml}
  - {name: bio}
storage:
  check_interval: 1s
  sample_interval: 1s
  groups: {ml: 4711, bio: 4712}
  pools:
    - {name: hot, path: $T/hot, class: hot}
    - {name: cold, path: $T/cold, class: cold}
    - {name: tiny, path: $T/mnt/tiny, class: archive, mount: true}
    - {name: scr, path: $T/scr, class: scratch}
    - {name: loc, path: $T/loc, class: scratch, local: true}
  lifecycle:
    - {name: cool, pool: hot, action: move, to: cold, after: 30d, projects: [ml], rate: 64M}
    - {name: archive, pool: cold, action: move, to: tiny, after: 90d}
    - {name: purge, pool: scr, action: delete, after: 7d}
    - {name: purge-loc, pool: loc, action: delete, after: 7d}
    - {name: intermediates, pool: hot, action: delete, after: 3d, marker: true}
    - {name: slow, pool: hot, action: move, to: cold, after: 30d, projects: [bio], rate: 1M}
YAML
    "$DOCKET" apply -f "$T/policy.yaml" >/dev/null
    local p
    for p in hot cold tiny scr loc; do "$DOCKET" storage create ml "$p" --quota 0 >/dev/null; done
    "$DOCKET" storage create bio hot --quota 0 >/dev/null
    wait_for 30 areas_made
}

teardown_file() {
    images_unmount
    cluster_stop
}

setup() {
    cd "$W"
}

areas_made() {
    [[ -d $T/hot/projects/ml && -d $T/cold/projects/ml && -d $T/mnt/tiny/projects/ml &&
        -d $T/scr/projects/ml && -d $T/loc/projects/ml && -d $T/hot/projects/bio ]] &&
        [[ $("$DOCKET" storage --json | jq '[.pools[].nodes_ok] | min') == 2 ]]
}

# mkfile PATH SIZE_KIB AGE: a file of random bytes, last used AGE ago ("40 days")
mkfile() {
    mkdir -p "$(dirname "$1")"
    head -c "$(($2 * 1024))" /dev/urandom >"$1"
    touch -d "$3 ago" "$1"
}

lc() { "$DOCKET" storage lifecycle "$@"; }
files_of() { jq -r '[.runs[].list[] | select(.error == null) | .path] | sort | join(" ")'; }
left_of() { jq -r '[.runs[].list[] | select(.error != null) | .path] | sort | join(" ")'; }
count() { jq -r "[.runs[].$1] | add"; }

@test "lifecycle: a dry run lists exactly the files due and moves nothing" {
    local ml=$T/hot/projects/ml
    mkfile "$ml/old/a.bin" 1024 "40 days"
    mkfile "$ml/old/deep/b.bin" 100 "35 days"
    mkfile "$ml/new.bin" 10 "1 day"
    mkfile "$T/hot/projects/bio/old.bin" 10 "40 days" # rule cool covers ml only
    # read yesterday, written long ago: in use by atime (relatime updates it on a read)
    mkfile "$ml/read.bin" 10 "40 days"
    touch -a -d "1 day ago" "$ml/read.bin"
    run lc --dry-run --rule cool --json
    [ "$status" -eq 0 ]
    [[ $(jq -r '.runs | length' <<<"$output") == 1 ]]
    [[ $(jq -r '.runs[0].dry_run' <<<"$output") == true ]]
    [[ $(jq -r '.runs[0].age_basis' <<<"$output") == atime ]]
    [[ $(files_of <<<"$output") == "old/a.bin old/deep/b.bin" ]]
    [[ $(count files <<<"$output") == 2 ]]
    [[ $(count bytes <<<"$output") == $((1124 * 1024)) ]]
    # nothing moved, nothing made on the target
    [[ -f $ml/old/a.bin && -f $ml/old/deep/b.bin ]]
    [[ -z $(ls -A "$T/cold/projects/ml") ]]
    # the table a person reads
    run lc --dry-run --rule cool
    [ "$status" -eq 0 ]
    [[ $output == *"rule cool, project ml, hot -> cold"* ]]
    [[ $output == *"2 files, 1.1M would be moved"* ]]
    [[ $output == *old/deep/b.bin* ]]
    # a dry run is not audited
    [[ $("$DOCKET" audit --json | jq '[.entries[]? // .audit[]? | select(.action == "storage.lifecycle_run")] | length') == 0 ]]
}

@test "lifecycle: a real run moves exactly those files, verified, with their owner and times, audited" {
    local ml=$T/hot/projects/ml cold=$T/cold/projects/ml
    chown 1234:4711 "$ml/old/a.bin"
    chmod 0640 "$ml/old/a.bin"
    cp -p "$ml/old/a.bin" "$T/a.ref"
    cp -p "$ml/old/deep/b.bin" "$T/b.ref"
    # reading them made them recent (relatime): old again
    touch -d "40 days ago" "$ml/old/a.bin" "$ml/old/deep/b.bin"
    local mtime
    mtime=$(stat -c %Y "$ml/old/a.bin")
    run lc --rule cool --json
    [ "$status" -eq 0 ]
    [[ $(jq -r '.runs[0].state' <<<"$output") == done ]]
    [[ $(files_of <<<"$output") == "old/a.bin old/deep/b.bin" ]]
    [[ $(count bytes <<<"$output") == $((1124 * 1024)) ]]
    [[ $(count freed_bytes <<<"$output") -ge $((1124 * 1024)) ]]
    [[ $(count failed <<<"$output") == 0 ]]
    # gone from hot, on cold byte for byte, owner, mode and times kept
    [[ ! -e $ml/old/a.bin && ! -e $ml/old/deep/b.bin ]]
    cmp "$T/a.ref" "$cold/old/a.bin"
    cmp "$T/b.ref" "$cold/old/deep/b.bin"
    [[ $(stat -c '%u %g %a %Y' "$cold/old/a.bin") == "1234 4711 640 $mtime" ]]
    # the rest stays
    [[ -f $ml/new.bin && -f $ml/read.bin && -f $T/hot/projects/bio/old.bin ]]
    [[ -z $(find "$T/cold" -name '.docket-lc.*') ]]
    # audited, with the counts; and in the history
    local a
    a=$("$DOCKET" audit --json | jq -c '[.entries[]? // .audit[]? | select(.action == "storage.lifecycle_run")] | last')
    [[ $(jq -r '.target' <<<"$a") == cool/ml ]]
    [[ $(jq -r '.after | if type == "string" then fromjson else . end | .files' <<<"$a") == 2 ]]
    run lc --history
    [ "$status" -eq 0 ]
    [[ $output == *"rule cool: move hot -> cold, files unused 30d"* ]]
    [[ $output == *"2 files, 1.1M moved"* ]]
}

@test "lifecycle: a symlink planted by a member is not followed, on either pool" {
    local ml=$T/hot/projects/ml cold=$T/cold/projects/ml
    mkfile "$T/outside/secret.bin" 10 "400 days"
    mkfile "$T/outside2/keep" 1 "1 day"
    ln -s "$T/outside" "$ml/evil"           # a directory link in the source
    ln -s "$T/outside/secret.bin" "$ml/x.bin" # a file link in the source
    mkfile "$ml/sub/c.bin" 10 "40 days"
    ln -s "$T/outside2" "$cold/sub"         # and a link where the target directory goes
    run lc --rule cool --json
    [[ $(count files <<<"$output") == 0 ]]
    [[ $(left_of <<<"$output") == "sub/c.bin" ]]
    [[ $(jq -r '.runs[0].list[0].error' <<<"$output") == *"cannot open its directory on the target"* ]]
    # nothing outside the areas moved or changed
    [[ -f $T/outside/secret.bin && -L $ml/x.bin && -L $ml/evil && -f $ml/sub/c.bin ]]
    [[ $(ls -A "$T/outside2") == keep ]]
    [[ ! -e $cold/evil && ! -e $cold/x.bin ]]
    rm -f "$cold/sub"
}

@test "lifecycle: a file held open and a copy that fails its check are not deleted" {
    local ml=$T/hot/projects/ml cold=$T/cold/projects/ml
    mkfile "$ml/open.bin" 10 "40 days"
    mkfile "$ml/corrupt.bin" 10 "40 days"
    cp "$ml/corrupt.bin" "$T/corrupt.ref"
    touch -d "40 days ago" "$ml/corrupt.bin" # the read made it recent
    exec 7>>"$ml/open.bin" # a job still writing it
    run lc --rule cool --json
    exec 7>&-
    [[ $(jq -r '.runs[0].state' <<<"$output") == failed ]]
    [[ $(count in_use <<<"$output") == 1 ]]
    [[ $(count failed <<<"$output") -ge 1 ]]
    [[ $(jq -r '.runs[0].list[] | select(.path == "open.bin") | .error' <<<"$output") == *"in use"* ]]
    [[ $(jq -r '.runs[0].list[] | select(.path == "corrupt.bin") | .error' <<<"$output") == *"failed its check"* ]]
    # both where they were, untouched; neither on the target, no temporary copy left
    [[ -f $ml/open.bin ]]
    cmp "$T/corrupt.ref" "$ml/corrupt.bin"
    [[ ! -e $cold/open.bin && ! -e $cold/corrupt.bin ]]
    [[ -z $(find "$T/cold" -name '.docket-lc.*') ]]
    # the sub/c.bin of the test before moves now that its target is a directory again
    [[ -f $cold/sub/c.bin && ! -e $ml/sub/c.bin ]]
    # closed: the next run moves open.bin
    run lc --rule cool --json
    [[ -f $cold/open.bin && ! -e $ml/open.bin ]]
    rm -f "$ml/corrupt.bin"
}

@test "lifecycle: a target that fills mid-move leaves the source intact" {
    local cold=$T/cold/projects/ml tiny=$T/mnt/tiny/projects/ml
    mkfile "$cold/big.bin" $((12 * 1024)) "100 days"
    cp "$cold/big.bin" "$T/big.ref"
    touch -d "100 days ago" "$cold/big.bin" # the read made it recent
    run lc --rule archive --json
    [ "$status" -ne 0 ]
    [[ $(jq -r '.runs[0].state' <<<"$output") == failed ]]
    [[ $(jq -r '.runs[0].message' <<<"$output") == *"target pool is full"* ]]
    [[ $(jq -r '.runs[0].list[] | select(.path == "big.bin") | .error' <<<"$output") == *"full"* ]]
    cmp "$T/big.ref" "$cold/big.bin"
    [[ ! -e $tiny/big.bin ]]
    [[ -z $(find "$T/mnt/tiny" -name '.docket-lc.*') ]]
    rm -f "$cold/big.bin"
}

@test "lifecycle: delete rules purge scratch and marked intermediates only" {
    local scr=$T/scr/projects/ml ml=$T/hot/projects/ml
    mkfile "$scr/old.tmp" 10 "10 days"
    mkfile "$scr/d/older.tmp" 10 "20 days"
    mkfile "$scr/new.tmp" 10 "1 day"
    mkfile "$ml/run1/.docket-intermediate" 0 "9 days"
    mkfile "$ml/run1/step/ckpt.pt" 20 "5 days"
    mkfile "$ml/run2/ckpt.pt" 20 "5 days"
    # directories: one the purge empties (two levels), one empty from before, one a link to
    # an empty directory outside the area
    mkfile "$scr/e/f/oldest.tmp" 10 "30 days"
    mkdir -p "$scr/was-empty" "$T/outside/empty"
    ln -sfn "$T/outside/empty" "$scr/link"
    run lc --rule purge --json
    [ "$status" -eq 0 ]
    [[ $(files_of <<<"$output") == "d/older.tmp e/f/oldest.tmp old.tmp" ]]
    [[ $(count bytes <<<"$output") == $((30 * 1024)) ]]
    [[ $(count dirs_removed <<<"$output") == 3 ]]
    [[ ! -e $scr/old.tmp && ! -e $scr/d/older.tmp && -f $scr/new.tmp ]]
    # the emptied directories went, the area and what was empty before stay, no link followed
    [[ ! -e $scr/d && ! -e $scr/e && -d $scr && -d $scr/was-empty ]]
    [[ -L $scr/link && -d $T/outside/empty ]]
    run lc --rule intermediates hot --json
    [ "$status" -eq 0 ]
    [[ $(files_of <<<"$output") == "run1/step/ckpt.pt" ]]
    [[ ! -e $ml/run1/step/ckpt.pt && -f $ml/run1/.docket-intermediate && -f $ml/run2/ckpt.pt ]]
    # step went with its file; run1 keeps its marker, so it stays
    [[ ! -e $ml/run1/step && -d $ml/run1 ]]
    # a rule that deletes whole areas of a hot pool is refused by the policy's reader
    sed 's/marker: true//' "$T/policy.yaml" >"$T/bad.yaml"
    run "$DOCKET" apply -f "$T/bad.yaml"
    [ "$status" -ne 0 ]
    [[ $output == *"needs marker: true or a glob"* ]]
}

@test "lifecycle: a rule on a pool local to each node runs on every node that has it" {
    local loc=$T/loc/projects/ml
    mkfile "$loc/old.tmp" 10 "10 days"
    run -0 lc --dry-run --rule purge-loc --json
    [[ $(jq -r '[.runs[].node] | sort | join(" ")' <<<"$output") == "$PREFIX-a $PREFIX-b" ]]
    [[ $(files_of <<<"$output") == "old.tmp old.tmp" ]]
    # a rule on a shared pool: one node
    run -0 lc --dry-run --rule purge --json
    [[ $(jq -r '.runs | length' <<<"$output") == 1 ]]
    # for real: a run on each node (here both see one directory: one deletes the file)
    run -0 lc --rule purge-loc --json
    [[ $(jq -r '[.runs[].node] | sort | join(" ")' <<<"$output") == "$PREFIX-a $PREFIX-b" ]]
    [[ ! -e $loc/old.tmp ]]
    [[ $("$DOCKET" audit --json | jq '[.entries[]? // .audit[]? | select(.action == "storage.lifecycle_run" and .target == "purge-loc/ml")] | length') == 2 ]]
}

@test "lifecycle: a rule with every runs by itself, as docketd" {
    sed 's/action: delete, after: 7d}/action: delete, after: 7d, every: 2s}/' "$T/policy.yaml" >"$T/every.yaml"
    "$DOCKET" apply -f "$T/every.yaml" >/dev/null
    mkfile "$T/scr/projects/ml/stale.tmp" 1 "30 days"
    wait_for 60 test ! -e "$T/scr/projects/ml/stale.tmp"
    run lc --history --json
    [[ $(jq -r '[.runs[] | select(.rule == "purge" and (.requested_by | startswith("docketd")))] | length' <<<"$output") -ge 1 ]]
    [[ $(jq -r '.rules[] | select(.name == "purge") | .next_due_ms' <<<"$output") -gt 0 ]]
    "$DOCKET" apply -f "$T/policy.yaml" >/dev/null
}

area_used() { # PROJECT POOL
    "$DOCKET" storage --json |
        jq -r --arg p "$1" --arg o "$2" '.areas[] | select(.project == $p and .pool == $o) | .used_bytes'
}
gb_months() { "$DOCKET" report usage --json | jq -r --arg p "$1" --arg o "$2" '.storage[$p][$o].gb_months'; }
positive() { awk -v v="$1" 'BEGIN { exit !(v > 0) }'; }

@test "report: GB-months of storage per project and pool over the window, and in the CSV" {
    mkfile "$T/hot/projects/bio/data.bin" $((8 * 1024)) "1 day"
    wait_for 30 bash -c "[[ \$('$DOCKET' storage --json | jq '.areas[] | select(.project == \"bio\" and .pool == \"hot\") | .used_bytes') -ge $((8 << 20)) ]]"
    wait_for 30 positive "$(gb_months bio hot)"
    local used gbm now
    used=$(area_used bio hot)
    run -0 "$DOCKET" report usage --json
    gbm=$(jq -r '.storage.bio.hot.gb_months' <<<"$output")
    now=$(date +%s)
    # at most what the area holds now for as long as this cluster ran (a sample of its
    # usage counts until the next one): bytes * ms / (10^9 * 30 days in ms)
    awk -v g="$gbm" -v u="$used" -v s="$(stat -c %Y "$T")" -v n="$now" \
        'BEGIN { exit !(g > 0 && g <= u * (n - s + 2) * 1000 / (1e9 * 2592000000)) }'
    [[ $(jq -r '.storage.bio.hot.used_bytes' <<<"$output") -ge $((8 << 20)) ]]
    # every area has its figure; a pool with nothing stays at 0
    [[ $(jq -r '.storage.ml.tiny.gb_months' <<<"$output") != null ]]
    run -0 "$DOCKET" report usage
    [[ $output == *"storage: bio  hot "*" GB-months (now "*"GiB)"* ]]
    run -0 "$DOCKET" report usage --csv
    [[ $output == *$'\nproject,pool,gb_months,used_bytes_now,quota_bytes\n'* ]]
    grep -qE '^bio,hot,[0-9.]+,[0-9]+,0$' <<<"$output"
    # a window that ended before this cluster began has none of it
    run -0 "$DOCKET" report usage --month 2026-01 --json
    [[ $(jq -r '.storage.bio.hot.gb_months' <<<"$output") == 0 ]]
}

window_gbm() { # SINCE_MS UNTIL_MS: bio/hot's GB-months over that window, in full
    curl -sS -H "Authorization: Bearer $TOKEN" \
        "http://127.0.0.1:$PORT/v1/reports/usage?by=project&since_ms=$1&until_ms=$2" |
        jq -r '.storage.bio.hot.gb_months'
}
rolled_past() { # MS: docketd has rolled the samples up to at least MS
    grep -o 'storage_samples_rolled_up from_ms=[0-9]* until_ms=[0-9]*' "$T/ctl.log" |
        awk -v t="$1" -F'until_ms=' '$2 >= t { ok = 1 } END { exit !ok }'
}

@test "report: samples past sample_keep are rolled up, and GB-months over a window on its steps agree" {
    local t0 t1 i before after
    # bio/hot's usage changes every second or so over a window of 6 s on 2 s steps
    t0=$((($(date +%s%3N) / 2000 + 1) * 2000))
    t1=$((t0 + 6000))
    for i in 1 2 3 4 5; do
        mkfile "$T/hot/projects/bio/roll$i.bin" $((i * 256)) "1 day"
        sleep 1.3
    done
    wait_for 30 bash -c "(( \$(date +%s%3N) > $t1 + 1500 ))"
    before=$(window_gbm "$t0" "$t1")
    positive "$before"
    sed -e 's/^  sample_interval: 1s$/  sample_interval: 1s\n  sample_keep: 2s\n  sample_rollup: 2s/' \
        "$T/policy.yaml" >"$T/policy-roll.yaml"
    grep -q 'sample_rollup: 2s' "$T/policy-roll.yaml"
    "$DOCKET" apply -f "$T/policy-roll.yaml" >/dev/null
    wait_for 60 rolled_past "$t1"
    after=$(window_gbm "$t0" "$t1")
    # the same, to the rounding of each step's mean to a byte
    awk -v a="$before" -v b="$after" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= a * 1e-6) }'
    "$DOCKET" apply -f "$T/policy.yaml" >/dev/null
    rm -f "$T/hot/projects/bio/roll"*.bin
}

run_of() { curl -sS -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/storage/lifecycle/runs/$1"; }
run_finished() { [[ $(run_of "$1" | jq -r '.run.finished_ms') -gt 0 ]]; }

@test "lifecycle: a run under way when docketd restarts finishes once, counted and audited once" {
    "$DOCKET" storage create bio cold --quota 0 >/dev/null
    wait_for 30 test -d "$T/cold/projects/bio"
    local bio=$T/hot/projects/bio id
    rm -f "$bio/old.bin"
    mkfile "$bio/slow/big.bin" $((4 * 1024)) "40 days" # 4 s at the rule's 1M/s
    run -0 lc --rule slow --no-wait --json
    id=$(jq -r '.runs[0]' <<<"$output")
    wait_for 30 grep -q "lifecycle_run_started id=$id" "$T/agent-a.log" "$T/agent-b.log"
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    wait_for 60 run_finished "$id"
    run_of "$id" | jq -e '.run.state == "done" and .run.files == 1 and .run.bytes == 4194304'
    [[ -f $T/cold/projects/bio/slow/big.bin && ! -e $bio/slow/big.bin ]]
    [[ $("$DOCKET" audit --json | jq '[.entries[]? // .audit[]? | select(.action == "storage.lifecycle_run" and .target == "slow/bio")] | length') == 1 ]]
    [[ $(lc --history --json | jq --argjson id "$id" '[.runs[] | select(.id == $id)] | length') == 1 ]]
}

@test "lifecycle: an agent restarted during a run reports the run its earlier child did" {
    local bio=$T/hot/projects/bio id node join
    mkfile "$bio/slow2/big.bin" $((4 * 1024)) "40 days" # 4 s at the rule's 1M/s
    run -0 lc --rule slow --no-wait --json
    id=$(jq -r '.runs[0]' <<<"$output")
    wait_for 30 grep -q "lifecycle_run_started id=$id" "$T/agent-a.log" "$T/agent-b.log"
    node=$(run_of "$id" | jq -r '.run.node')
    node=${node##*-}
    kill_pidfile "$T/agent-$node.pid" # its child goes on, and finishes the copy
    join=$("$DOCKET" token join)
    agent_start "$node" "$join"
    wait_for 60 run_finished "$id"
    run_of "$id" | jq -e '.run.state == "done" and .run.files == 1 and .run.bytes == 4194304'
    [[ -f $T/cold/projects/bio/slow2/big.bin && ! -e $bio/slow2/big.bin ]]
    wait_for 30 nodes_up 2
}
