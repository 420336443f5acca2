#!/usr/bin/env bats
# logarchive.bats - finished jobs' logs moved to an archive pool (docs/storage.md "Job
# logs"): a real docketd and two real agents (lib/cluster.bash), the archive pool an
# 8 MiB loop-mounted ext4 image (so it can be filled). docketd moves each finished
# job's streams there compressed and checked, keeps a pointer, drops its own copy, and
# `docket logs` reads them back from the pool, also after a restart. A full pool stops
# the archiving with a storage_full alert (to a real webhook receiver) and loses nothing;
# a directory others may write in is refused.
# The image is unmounted and its loop device freed in teardown_file.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=larc
load lib/cluster
load lib/images
AGENT_EXTRA=()
DOCKETD_EXTRA=()
RECEIVER=$DOCKET_BUILD/tests/system/hook_receiver

setup_file() {
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN && -x $RECEIVER ]] ||
        skip "docket, docketd, docket-node or hook_receiver not built"
    images_need_loop "a loop mount"
    cluster_start
    image_ready arch 8
    "$RECEIVER" "$T/hook.port" "$T/hook.out" &
    echo $! >"$T/hook.pid"
    wait_for 10 test -s "$T/hook.port"
    cat >"$T/policy.yaml" <<YAML
projects:
  - {name: ml}
storage:
  check_interval: 1s
  pools:
    - {name: arch, path: $T/mnt/arch, class: archive, mount: true, nodes: {zone: none}}
  log_archive: {pool: arch, after: 1s, every: 1s}
alerts:
  interval: 1s
  rules:
    - {name: storage-95, kind: storage_full, severity: critical, threshold: 95}
  routes:
    - {severities: [critical], webhook: "http://127.0.0.1:$(cat "$T/hook.port")/generic"}
YAML
    "$DOCKET" apply -f "$T/policy.yaml" >/dev/null
}

teardown_file() {
    [[ -n ${T:-} && -f $T/hook.pid ]] && kill_pidfile "$T/hook.pid"
    images_unmount
    cluster_stop
}

setup() {
    cd "$W"
}

submit() { # FIELDS (a jq object) over the defaults; prints the id
    local body
    body=$(jq -c -n --arg wd "$W" \
        '{project: "ml", user: "root", workdir: $wd, cpus: 1, time_limit: "5m"} + ('"$1"')')
    capi POST /v1/jobs -d "$body" | jq -r '.job.id'
}

jstate() { capi GET "/v1/jobs/$1" | jq -r '.job.state'; }
done_ok() { [[ $(jstate "$1") == COMPLETED ]]; }
archived() { # ID STREAM: the pool has it, docketd's copy is gone
    local f=$T/mnt/arch/docket-logs/$(($1 / 1000))/$1.1.$2.gz
    [[ -f $f && ! -e $T/ctl/logs/$1.1.$2 ]]
}
received() { # STATUS RULE KEY: the bodies the receiver got for that alert
    [[ -f $T/hook.out ]] || return 1
    cut -f2 "$T/hook.out" | jq -c --arg s "$1" --arg r "$2" --arg k "$3" \
        'select(.status == $s and .alert.rule == $r and .alert.key == $k)' 2>/dev/null | grep .
}
audited() { # N: at least N storage.log_archive entries that archived files
    [[ $("$DOCKET" audit --json | jq '[.entries[]? // .audit[]? | select(.action == "storage.log_archive") | .after | fromjson? // . | select(.files > 0)] | length') -ge $1 ]]
}

@test "log archive: a finished job's logs move to the pool, compressed and checked, and docket logs reads them" {
    local id f
    id=$(submit '{command: ["sh", "-c", "seq 1 20000; echo oops >&2"]}')
    wait_for 60 done_ok "$id"
    wait_for 60 archived "$id" stdout
    wait_for 30 archived "$id" stderr
    f=$T/mnt/arch/docket-logs/$((id / 1000))/$id.1.stdout.gz
    [[ $(od -An -tx1 -N2 "$f" | tr -d ' ') == 1f8b ]] # gzip
    [[ $(stat -c %s "$f") -lt 108894 ]]             # smaller than the log
    [[ $(zcat "$f" | sha256sum) == $(seq 1 20000 | sha256sum) ]]
    [[ $(stat -c '%U %a' "$T/mnt/arch/docket-logs") == "root 750" ]]
    # read from the pool: every byte, in the CLI's chunks, and the stderr
    diff <("$DOCKET" logs "$id") <(seq 1 20000)
    [[ $("$DOCKET" logs --stderr "$id") == oops ]]
    capi GET "/v1/jobs/$id/logs?offset=100" -D "$T/h" -o /dev/null
    grep -qi '^X-Docket-Archived: arch' "$T/h"
    # the job's pointer: where each stream went, its size and checksum
    capi GET "/v1/jobs/$id" >"$T/job.json"
    [[ $(jq -r '[.job.log_archive[].stream] | join(" ")' "$T/job.json") == "stdout stderr" ]]
    [[ $(jq -r '.job.log_archive[0].sha256' "$T/job.json") == $(seq 1 20000 | sha256sum | cut -d' ' -f1) ]]
    [[ $(jq -r '.job.log_archive[0].bytes' "$T/job.json") == 108894 ]]
    [[ $("$DOCKET" show "$id") == *"archived to pool arch (2 streams"* ]]
    wait_for 30 audited 1
}

@test "log archive: after docketd restarts the archived logs still read, and nothing is archived twice" {
    local id
    id=$(submit '{command: ["sh", "-c", "seq 5 9"]}')
    wait_for 60 archived "$id" stdout
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    [[ $("$DOCKET" logs "$id") == "$(seq 5 9)" ]]
    [[ ! -e $T/ctl/logs/$id.1.stdout ]]
    sleep 2 # passes run every second: a second copy would show in the pool
    [[ $(find "$T/mnt/arch/docket-logs" -name "$id.1.stdout*" | wc -l) == 1 ]]
}

@test "log archive: a full pool stops it with a critical alert and loses nothing; room lets it go on" {
    local id
    dd if=/dev/zero of="$T/mnt/arch/filler" bs=4k 2>/dev/null || true
    sync
    id=$(submit '{command: ["sh", "-c", "seq 1 3000"]}')
    wait_for 60 done_ok "$id"
    wait_for 60 received firing storage-95 arch:logs
    [[ $(received firing storage-95 arch:logs | head -1 | jq -r .alert.summary) == *"storage pool arch is full"*"logs stay"* ]]
    # nothing lost: docketd keeps its copy and reads it
    [[ -s $T/ctl/logs/$id.1.stdout ]]
    diff <("$DOCKET" logs "$id") <(seq 1 3000)
    [[ -z $(find "$T/mnt/arch/docket-logs" -name '*.tmp') ]]
    rm -f "$T/mnt/arch/filler"
    wait_for 60 archived "$id" stdout
    diff <("$DOCKET" logs "$id") <(seq 1 3000)
    wait_for 30 received resolved storage-95 arch:logs
}

@test "log archive: a directory in the pool that others may write in is refused; logs stay until it is fixed" {
    local id
    chmod 0777 "$T/mnt/arch/docket-logs"
    id=$(submit '{command: ["sh", "-c", "echo kept"]}')
    wait_for 60 done_ok "$id"
    wait_for 30 grep -q "log_archive_failed file=$id.1.std" "$T/ctl.log"
    [[ -s $T/ctl/logs/$id.1.stdout && ! -e $T/mnt/arch/docket-logs/$((id / 1000))/$id.1.stdout.gz ]]
    [[ $("$DOCKET" logs "$id") == kept ]]
    chmod 0750 "$T/mnt/arch/docket-logs"
    wait_for 60 archived "$id" stdout
    [[ $("$DOCKET" logs "$id") == kept ]]
}

@test "log archive: the policy refuses a pool it does not have" {
    cat >"$T/bad.yaml" <<YAML
storage:
  pools:
    - {name: arch, path: $T/mnt/arch, class: archive}
  log_archive: {pool: tape, after: 30d}
YAML
    run "$DOCKET" apply -f "$T/bad.yaml"
    [ "$status" -ne 0 ]
    [[ $output == *"storage.log_archive.pool"*"tape"* ]]
}
