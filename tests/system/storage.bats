#!/usr/bin/env bats
# storage.bats - project storage end to end (docs/storage.md): a real docketd, two real
# agents (lib/cluster.bash), pools on loop-mounted ext4 images and a plain directory, the
# project areas the agents make on them, quotas, mount checks, the StorageQuota hold and
# the storage_full alerts to a real webhook receiver (tests/system/hook_receiver.c).
# Pools:  hot   an ext4 image on both nodes (accounting quotas)
#         cold  a plain directory on both nodes
#         fastb an ext4 image on node b only (labels zone=b): unmounted, b turns UNHEALTHY
#         full  an ext4 image the alert test fills
#         proj  an ext4 image with project quotas, when this kernel can mount one
# Every image is unmounted and its loop device freed in teardown_file.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=stor
load lib/cluster
load lib/images
AGENT_EXTRA=()
DOCKETD_EXTRA=()
RECEIVER=$DOCKET_BUILD/tests/system/hook_receiver

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN && -x $RECEIVER ]] ||
        skip "docket, docketd, docket-node or hook_receiver not built"
    images_need_loop "loop mounts and the areas' owners"
    cluster_start
    mkdir -p "$T/cold"
    image hot 32
    image fastb 8
    image full 16
    mount_image hot || skip "loop devices unavailable: $(cat "$T/mount-hot.err")"
    mount_image fastb
    mount_image full
    # project quotas need a kernel built with CONFIG_QUOTA: without it the proj pool and
    # its test are left out (the test says why)
    image proj 32 -O quota,project
    if mount_image proj prjquota; then
        touch "$T/proj.ok"
    else
        # one line, and the kernel's word for it when it gives one (CONFIG_QUOTA missing)
        local why
        why=$(head -n1 "$T/mount-proj.err")
        ! dmesg 2>/dev/null | grep -q 'CONFIG_QUOTA' || why="the kernel lacks CONFIG_QUOTA ($why)"
        echo "$why" >"$T/proj.why"
    fi
    "$RECEIVER" "$T/hook.port" "$T/hook.out" &
    echo $! >"$T/hook.pid"
    wait_for 10 test -s "$T/hook.port"
    local proj=""
    [[ ! -f $T/proj.ok ]] ||
        proj="- {name: proj, path: $T/mnt/proj, class: hot, mount: true, fstype: ext4, quota: ext4-project}"
    cat >"$T/policy.yaml" <<YAML
projects:
  - {name: ml}
  - {name: bio}
storage:
  check_interval: 1s
  groups: {ml: 4711, bio: 4712}
  pools:
    - {name: hot, path: $T/mnt/hot, class: hot, mount: true, fstype: ext4}
    - {name: cold, path: $T/cold, class: cold}
    - {name: fastb, path: $T/mnt/fastb, class: scratch, mount: true, nodes: {zone: b}}
    - {name: full, path: $T/mnt/full, class: scratch, mount: true}
    $proj
alerts:
  interval: 1s
  rules:
    - {name: storage-80, kind: storage_full, severity: warning, threshold: 80}
    - {name: storage-90, kind: storage_full, severity: major, threshold: 90}
    - {name: storage-95, kind: storage_full, severity: critical, threshold: 95}
  routes:
    - {severities: [critical, major, warning, info], webhook: "http://127.0.0.1:$(cat "$T/hook.port")/generic"}
YAML
    "$DOCKET" apply -f "$T/policy.yaml" >/dev/null
    "$DOCKET" storage create ml hot --quota 4M >/dev/null
    "$DOCKET" storage create bio hot --quota 20M >/dev/null
    "$DOCKET" storage create ml cold --quota 1G >/dev/null
    "$DOCKET" storage create bio full --quota 0 >/dev/null
    [[ ! -f $T/proj.ok ]] || "$DOCKET" storage create ml proj --quota 2M >/dev/null
    wait_for 30 pools_ok
}

teardown_file() {
    [[ -n ${T:-} && -f $T/hook.pid ]] && kill_pidfile "$T/hook.pid"
    images_unmount
    [[ -z ${STOR_KEEP_LOGS:-} || -z ${T:-} ]] || cp "$T"/*.log "$STOR_KEEP_LOGS/" 2>/dev/null
    cluster_stop
}

setup() {
    cd "$W"
}

storage() { "$DOCKET" storage --json; }

# both nodes pass the checks of the pools they have, and every area is made
pools_ok() {
    local s
    s=$(storage) || return 1
    [[ $(jq '[.pools[] | select(.name == "hot" or .name == "cold" or .name == "full") |
              .nodes_ok] | min' <<<"$s") == 2 ]] &&
        [[ $(jq '.pools[] | select(.name == "fastb") | .nodes_ok' <<<"$s") == 1 ]] &&
        [[ -d $T/mnt/hot/projects/ml && -d $T/mnt/hot/projects/bio ]]
}

submit() { # FIELDS (a jq object) over the defaults; prints the id
    local body
    body=$(jq -c -n --arg wd "$W" \
        '{project: "ml", user: "root", workdir: $wd, cpus: 1, time_limit: "5m"} + ('"$1"')')
    capi POST /v1/jobs -d "$body" | jq -r '.job.id'
}

job() { capi GET "/v1/jobs/$1"; }
jstate() { job "$1" | jq -r '.job.state'; }
state_is() { # ID STATE...
    local s
    s=$(jstate "$1")
    shift
    for want in "$@"; do [[ $s == "$want" ]] && return 0; done
    return 1
}
reason_is() { [[ $(job "$1" | jq -r '.job.reason') == "$2" ]]; }
out() { capi GET "/v1/jobs/$1/logs?stream=${2:-stdout}"; }
node_state() { capi GET "/v1/nodes/$PREFIX-$1" | jq -r '.node.state'; }
area_used() { # PROJECT POOL
    storage | jq -r --arg p "$1" --arg o "$2" '.areas[] | select(.project == $p and .pool == $o) | .used_bytes'
}
received() { # STATUS RULE KEY: the bodies the receiver got for that alert
    [[ -f $T/hook.out ]] || return 1
    cut -f2 "$T/hook.out" | jq -c --arg s "$1" --arg r "$2" --arg k "$3" \
        'select(.status == $s and .alert.rule == $r and .alert.key == $k)' 2>/dev/null | grep .
}

@test "storage: areas are root's, the project's group, mode 2770, on every pool it has" {
    run stat -c '%U %g %a' "$T/mnt/hot/projects/ml" "$T/mnt/hot/projects/bio" "$T/cold/projects/ml"
    [ "$status" -eq 0 ]
    [[ ${lines[0]} == "root 4711 2770" ]]
    [[ ${lines[1]} == "root 4712 2770" ]]
    [[ ${lines[2]} == "root 4711 2770" ]]
    [[ $(stat -c '%U %a' "$T/mnt/hot/projects") == "root 755" ]]
    # the CLI's table, and the API's view of the same
    run "$DOCKET" storage
    [ "$status" -eq 0 ]
    [[ $output == *hot*ext4* || $output == *hot*hot* ]]
    [[ $output == *"$T/mnt/hot/projects/ml"* ]]
    [[ $(storage | jq -r '.areas[] | select(.project == "ml" and .pool == "hot") | .group') == 4711 ]]
    # an admin-only change: a reader is refused
    run "$DOCKET" storage create ml nosuchpool --quota 1G
    [ "$status" -ne 0 ]
    [[ $output == *"unknown storage pool"* ]]
    run "$DOCKET" storage create ml hot
    [ "$status" -ne 0 ]
    [[ $output == *"--quota"* ]]
    # the audit trail has each area
    [[ $("$DOCKET" audit --json | jq '[.entries[]? // .audit[]? | select(.action == "storage.area_set")] | length') -ge 4 ]]
}

@test "storage: a job sees DOCKET_PROJECT_DIR and DOCKET_STORAGE_<POOL>; another project cannot read the area" {
    local id
    id=$(submit '{command: ["sh", "-c", "echo dir=$DOCKET_PROJECT_DIR hot=$DOCKET_STORAGE_HOT cold=$DOCKET_STORAGE_COLD; echo secret >$DOCKET_STORAGE_HOT/secret.txt"], storage: ["cold"]}')
    wait_for 30 state_is "$id" COMPLETED
    run out "$id"
    [[ $output == *"dir=$T/cold/projects/ml hot=$T/mnt/hot/projects/ml cold=$T/cold/projects/ml"* ]]
    [[ $(stat -c %g "$T/mnt/hot/projects/ml/secret.txt") == 4711 ]] # setgid: the project's
    # a member of another project (here: nobody, in neither group) can neither list nor
    # read it, nor make a directory beside the areas
    id=$(submit '{project: "bio", user: "nobody", command: ["sh", "-c", "ls '"$T"'/mnt/hot/projects/ml; cat '"$T"'/mnt/hot/projects/ml/secret.txt; mkdir '"$T"'/mnt/hot/projects/evil; echo done"]}')
    wait_for 30 state_is "$id" COMPLETED FAILED
    run out "$id" stderr
    [[ $output == *"Permission denied"* ]]
    [[ $(grep -c 'Permission denied' <<<"$output") -ge 3 ]]
    [[ ! -e $T/mnt/hot/projects/evil ]]
    # a pool nobody declared is refused at submission
    run capi POST /v1/jobs -d '{"project": "ml", "command": ["true"], "storage": ["nope"]}'
    [[ $output == *"unknown storage pool 'nope'"* ]]
}

@test "storage: a project at its quota has its next jobs held (StorageQuota); others run; freeing space lets them go" {
    local id bio held
    id=$(submit '{command: ["dd", "if=/dev/urandom", "of='"$T"'/mnt/hot/projects/ml/big", "bs=1M", "count=6"]}')
    wait_for 30 state_is "$id" COMPLETED
    wait_for 30 bash -c "[[ \$($DOCKET storage --json | jq '.areas[] | select(.project == \"ml\" and .pool == \"hot\") | .held') == true ]]"
    held=$(submit '{command: ["true"]}')
    wait_for 30 reason_is "$held" StorageQuota
    run "$DOCKET" explain "$held"
    [[ $output == *"over its storage quota"*"pool hot"*"of its 4.0 MiB quota"* ]]
    run "$DOCKET" storage
    [[ $output == *"over quota: jobs held"* ]]
    # the other project is not held
    bio=$(submit '{project: "bio", command: ["true"]}')
    wait_for 30 state_is "$bio" COMPLETED
    sleep 2
    state_is "$held" PENDING
    # below the quota again: the held job runs
    rm -f "$T/mnt/hot/projects/ml/big"
    wait_for 30 state_is "$held" COMPLETED
    [[ $(storage | jq '.areas[] | select(.project == "ml" and .pool == "hot") | .held') == false ]]
}

@test "storage: ext4 project quota: writes past the hard limit fail with EDQUOT; the project waits with StorageQuota" {
    [[ -f $T/proj.ok ]] || skip "this kernel cannot mount ext4 with project quotas: $(cat "$T/proj.why")"
    local id held
    [[ $(storage | jq -r '.areas[] | select(.project == "ml" and .pool == "proj") | .percent') != null ]] ||
        wait_for 30 bash -c "$DOCKET storage --json | jq -e '.areas[] | select(.project == \"ml\" and .pool == \"proj\") | .used_bytes >= 0'"
    id=$(submit '{command: ["dd", "if=/dev/zero", "of='"$T"'/mnt/proj/projects/ml/big", "bs=1M", "count=8"]}')
    wait_for 30 state_is "$id" FAILED COMPLETED
    run out "$id" stderr
    [[ $output == *"Disk quota exceeded"* || $output == *"No space left"* ]]
    held=$(submit '{command: ["true"]}')
    wait_for 30 reason_is "$held" StorageQuota
    rm -f "$T/mnt/proj/projects/ml/big"
    wait_for 30 state_is "$held" COMPLETED
}

@test "storage: a node whose pool is not mounted turns UNHEALTHY and gets no job needing it" {
    umount "$T/mnt/fastb"
    wait_for 30 bash -c "[[ \$(curl -s -H 'Authorization: Bearer $TOKEN' http://127.0.0.1:$PORT/v1/nodes/$PREFIX-b | jq -r .node.state) == UNHEALTHY ]]"
    run capi GET "/v1/nodes/$PREFIX-b"
    [[ $output == *"storage pool fastb"*"is not a mount point"* ]]
    run "$DOCKET" storage
    [[ $output == *"fastb on $PREFIX-b"*"not a mount point"* ]]
    local needs other
    needs=$(submit '{command: ["sh", "-c", "echo on $DOCKET_NODE"], storage: ["fastb"]}')
    other=$(submit '{project: "bio", command: ["sh", "-c", "echo on $DOCKET_NODE"], storage: ["hot"]}')
    wait_for 30 state_is "$other" COMPLETED
    [[ $(out "$other") == "on $PREFIX-a" ]]
    sleep 2
    state_is "$needs" PENDING
    mount_image fastb
    wait_for 30 bash -c "[[ \$(curl -s -H 'Authorization: Bearer $TOKEN' http://127.0.0.1:$PORT/v1/nodes/$PREFIX-b | jq -r .node.state) == UP ]]"
    wait_for 30 state_is "$needs" COMPLETED
    [[ $(out "$needs") == "on $PREFIX-b" ]]
}

@test "storage: filling a pool fails the writer with ENOSPC and fires 80/90/95 % alerts to the webhook" {
    local id
    id=$(submit '{project: "bio", command: ["sh", "-c", "dd if=/dev/zero of=$DOCKET_STORAGE_FULL/fill bs=1M count=64"], storage: ["full"]}')
    wait_for 30 state_is "$id" FAILED COMPLETED
    run out "$id" stderr
    [[ $output == *"No space left on device"* ]]
    wait_for 30 received firing storage-95 full
    wait_for 10 received firing storage-90 full
    wait_for 10 received firing storage-80 full
    [[ $(received firing storage-95 full | head -1 | jq -r .alert.severity) == critical ]]
    [[ $(received firing storage-80 full | head -1 | jq -r .alert.severity) == warning ]]
    [[ $(received firing storage-95 full | head -1 | jq -r .alert.summary) == *"storage pool full is"*"% full"* ]]
    # the pool full is not a broken pool: the nodes stay UP
    [[ $(node_state a) == UP && $(node_state b) == UP ]]
    rm -f "$T/mnt/full/projects/bio/fill"
    wait_for 30 received resolved storage-95 full
}

@test "storage: /metrics has the pools' and areas' families; docket report a storage line" {
    run ctl_get /metrics
    [[ $output == *'docket_storage_pool_size_bytes{pool="hot"}'* ]]
    [[ $output == *'docket_storage_pool_nodes_failing{pool="hot"} 0'* ]]
    [[ $output == *'docket_storage_area_quota_bytes{project="ml",pool="hot"} 4194304'* ]]
    [[ $output == *'docket_storage_area_used_bytes{project="ml",pool="hot"}'* ]]
    # and docket report's storage line, each project's areas over the window and now
    run "$DOCKET" report usage
    [ "$status" -eq 0 ]
    [[ $output == *"storage: ml"*"hot "*"GB-months (now "*"GiB of "* ]]
    [[ $("$DOCKET" report usage --json | jq '.storage.ml.hot.quota_bytes') == 4194304 ]]
}

@test "storage: a project's area forgotten stays on disk; the policy refuses a bad pool" {
    "$DOCKET" storage create bio cold --quota 1G >/dev/null
    wait_for 30 test -d "$T/cold/projects/bio"
    run "$DOCKET" storage delete bio cold
    [ "$status" -eq 0 ]
    [[ $output == *"its files stay"* ]]
    [[ -d $T/cold/projects/bio ]]
    [[ $(storage | jq '[.areas[] | select(.project == "bio" and .pool == "cold")] | length') == 0 ]]
    run "$DOCKET" storage delete bio cold
    [ "$status" -ne 0 ]
    printf 'storage:\n  pools:\n    - {name: Bad, path: /x}\n' >"$T/bad.yaml"
    run "$DOCKET" apply -f "$T/bad.yaml"
    [ "$status" -ne 0 ]
    [[ $output == *"storage.pools[0].name"* ]]
    printf 'storage:\n  pools:\n    - {name: x, path: /a/../etc}\n' >"$T/bad.yaml"
    run "$DOCKET" apply -f "$T/bad.yaml"
    [ "$status" -ne 0 ]
    [[ $output == *"storage.pools[0].path"* ]]
}
