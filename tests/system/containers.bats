#!/usr/bin/env bats
# containers.bats - jobs in containers through an existing OCI runtime (issue 35,
# docs/environments.md "Containers") on a real docketd and two real docket-node agents on
# loopback: OCI image layouts built here with umoci from busybox-static (no network), run
# by crun as the job's user inside the job's cgroup, with only its GPUs' device nodes
# (stand-in nodes, major 195); a broken image or runtime error fails the job, never the
# node; a cancel reaches the container; the node's image cache unpacks once per image,
# is reused, and evicts at its cap but never an image in use; sbatch's Pyxis options;
# srun --container-image's steps inside a bare job, run by each node's supervisor; a
# hostile job's escapes fail. One cluster per file; every process it started is stopped
# by pid.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=oci
load lib/cluster

setup_file() {
    [[ $(id -u) == 0 ]] || skip "needs root (cgroups, the OCI runtime)"
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    command -v crun >/dev/null && command -v umoci >/dev/null && command -v busybox >/dev/null ||
        skip "crun, umoci or busybox-static not installed (scripts/install-deps.sh --test)"
    # the GPUs' stand-in device nodes (minor N = GPU N), given to both agents
    export DEVDIR
    DEVDIR=$(mktemp -d /tmp/docket-bats-ocidev.XXXXXX)
    chmod 0755 "$DEVDIR"
    for i in 0 1 2 3 4 5 6 7; do mknod -m 0666 "$DEVDIR/nvidia$i" c 195 "$i"; done
    mknod -m 0666 "$DEVDIR/nvidiactl" c 195 255
    agent_flags
    cluster_start
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
    chmod 0777 "$W"
    export IMG=$T/images
    mkimage bb
    mkimage other /marker other
    mkimage suid
    # a tag whose manifest names a layer that is not there: umoci fails on it
    mkimage broken /marker broken # a layer of its own (an identical one would be shared)
    local layer
    layer=$(jq -r '.layers[0].digest' "$IMG/blobs/sha256/$(jq -r '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == "broken") | .digest' "$IMG/index.json" | cut -d: -f2)")
    rm "$IMG/blobs/sha256/${layer#sha256:}"
    cat >"$T/templates.yaml" <<YAML
templates:
  - name: boxed
    image: oci-layout:$IMG:bb
    mounts: ["$T/shared:/shared:ro"]
    env: {FROM_TEMPLATE: "yes"}
YAML
    mkdir -p "$T/shared" && echo "site data" >"$T/shared/readme" && chmod -R a+rX "$T/shared"
    "$DOCKET" apply -f "$T/templates.yaml" >/dev/null
}

# the agents' flags (a restarted agent needs them again: arrays do not reach the tests).
# 3 MiB: one busybox image (about 2 MiB) fits, two do not; Slurm's commands for srun.
agent_flags() {
    AGENT_EXTRA=(--gpu-dev-dir "$DEVDIR" --image-cache-max 3M --addr 127.0.0.1 --slurm-cli "$DOCKET")
}

teardown_file() {
    cluster_stop
    [[ -z ${DEVDIR:-} ]] || rm -rf "$DEVDIR"
}

# mkimage TAG [FILE CONTENT]: a busybox image (its shell and tools), with FILE in it
mkimage() {
    local b=$T/bundle-$1
    [[ -d $IMG ]] || umoci init --layout "$IMG"
    umoci new --image "$IMG:$1"
    umoci config --image "$IMG:$1" --config.env "IMAGE_VAR=from-$1" \
        --config.env "PATH=/bin:/usr/bin" >/dev/null
    umoci unpack --image "$IMG:$1" "$b" >/dev/null
    mkdir -p "$b/rootfs/bin" "$b/rootfs/mnt"
    cp "$(command -v busybox)" "$b/rootfs/bin/busybox"
    for c in sh ls cat id echo sleep mount touch grep head wc true pwd; do ln -s busybox "$b/rootfs/bin/$c"; done
    [[ -z ${2:-} ]] || echo "$3" >"$b/rootfs$2"
    if [[ $1 == suid ]]; then
        mkdir -p "$b/rootfs/suid"
        cp "$b/rootfs/bin/busybox" "$b/rootfs/suid/busybox" && chmod 4755 "$b/rootfs/suid/busybox"
    fi
    umoci repack --image "$IMG:$1" "$b" >/dev/null
    chmod -R a+rX "$IMG"
}

# api_submit JSON: a job of user nobody in project explore (fields merged); its id
api_submit() {
    local body
    body=$(jq -c -n --argjson extra "$1" --arg wd "$W" \
        '{project: "explore", class: "exploration", user: "nobody", workdir: $wd, cpus: 1,
          time_limit: "5m"} + $extra')
    curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/jobs" -d "$body" |
        jq -r '.job.id // .error.message'
}

api_refused() { # JSON: the submit's error (400), as "FIELD: MESSAGE"
    local body
    body=$(jq -c -n --argjson extra "$1" --arg wd "$W" \
        '{project: "explore", class: "exploration", user: "nobody", workdir: $wd,
          command: ["true"]} + $extra')
    curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/jobs" -d "$body" |
        jq -r '"\(.error.field): \(.error.message)"'
}

ended() { # ID: in a terminal state
    state_in "$1" COMPLETED FAILED TIMEOUT CANCELLED NODE_FAIL
}

done_ok() {
    local s
    wait_for 60 ended "$1"
    s=$(job_state "$1")
    [[ $s == COMPLETED ]] || { echo "job $1 is $s"; "$DOCKET" show "$1"; "$DOCKET" logs "$1" --stderr; false; }
}

unpacks() { # NODE (a|b): images unpacked there so far
    cat "$T/agent-$1/images/unpack.log" 2>/dev/null | wc -l
}

digest_of() { # TAG
    jq -r --arg t "$1" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $t) | .digest' "$IMG/index.json" | cut -d: -f2
}

@test "a job runs in its image as its user, with the image's variables and its own" {
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:bb\", \"selectors\": {\"zone\": \"a\"},
        \"env\": {\"MINE\": \"mine\"}, \"command\": [\"sh\", \"-c\",
        \"id -u; id -g; echo \$IMAGE_VAR \$MINE \$DOCKET_JOB_ID; pwd; test -e /usr/bin/jq && echo host || echo image; touch /probe 2>/dev/null && echo rw || echo ro\"]}")
    done_ok "$id"
    mapfile -t lines < <("$DOCKET" logs "$id")
    [ "${lines[0]}" = 65534 ]
    [ "${lines[1]}" = 65534 ]
    [ "${lines[2]}" = "from-bb mine $id" ]
    [ "${lines[3]}" = "$W" ]     # its workdir, mounted at the same path
    [ "${lines[4]}" = image ]    # the image's files, not the node's
    [ "${lines[5]}" = ro ]       # the image is shared: read-only
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.image <<<"$output")" = "oci-layout:$IMG:bb" ]
    body=$(ctl_get "/v1/jobs?state=terminal&fields=id,image&limit=1000")
    [ "$(jq -r --argjson id "$id" '.jobs[] | select(.id == $id) | .image' <<<"$body")" = "oci-layout:$IMG:bb" ]
    [ "$(jq -c '[.jobs[0] | keys[]]' <<<"$body")" = '["id","image"]' ]
}

@test "a job sees only its own GPUs' device nodes, and CUDA_VISIBLE_DEVICES names them" {
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:bb\", \"gpus\": 2, \"selectors\": {\"zone\": \"a\"},
        \"command\": [\"sh\", \"-c\", \"echo \$CUDA_VISIBLE_DEVICES; ls /dev | grep nvidia\"]}")
    done_ok "$id"
    mine=$("$DOCKET" show "$id" --json | jq -r '.job.allocation[0].gpus | map(tostring) | join(",")')
    mapfile -t lines < <("$DOCKET" logs "$id")
    [ "${lines[0]}" = "$mine" ]
    want=$(tr ',' '\n' <<<"$mine" | sed 's/^/nvidia/'; echo nvidiactl)
    [ "$(printf '%s\n' "${lines[@]:1}" | sort)" = "$(sort <<<"$want")" ]
    # without GPUs: none at all
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:bb\", \"command\": [\"sh\", \"-c\", \"ls /dev | grep -c nvidia || true\"]}")
    done_ok "$id"
    [ "$("$DOCKET" logs "$id")" = 0 ]
}

@test "a template's image and mounts; mounts and images refused at submit with the field" {
    run -0 "$DOCKET" templates show boxed
    [[ $output == *"image"*"oci-layout:$IMG:bb"* ]]
    [[ $output == *"mounts"*"$T/shared:/shared:ro"* ]]
    id=$(submit_cli --template boxed -- sh -c 'echo $IMAGE_VAR $FROM_TEMPLATE; cat /shared/readme; touch /shared/x 2>/dev/null || echo ro')
    done_ok "$id"
    mapfile -t lines < <("$DOCKET" logs "$id")
    [ "${lines[0]}" = "from-bb yes" ]
    [ "${lines[1]}" = "site data" ]
    [ "${lines[2]}" = ro ]
    # a job's own mount: from its workdir only (or its project's storage)
    mkdir -p "$W/data" && echo "job data" >"$W/data/f"
    id=$(submit_cli --image "oci-layout:$IMG:bb" --mount "$W/data:/data:ro" --container-workdir /data -- sh -c 'pwd; cat f')
    done_ok "$id"
    [ "$("$DOCKET" logs "$id" | tr '\n' ' ')" = "/data job data " ]
    [[ $(api_refused "{\"image\": \"oci-layout:$IMG:bb\", \"mounts\": [\"/etc:/x\"]}") == "mounts[0]: "*"neither under the job's workdir nor in a storage area"* ]]
    [[ $(api_refused "{\"image\": \"oci-layout:$IMG:bb\", \"mounts\": [\"$W/../etc:/x\"]}") == "mounts[0]: "*"absolute paths without '..'"* ]]
    [[ $(api_refused "{\"image\": \"oci-layout:$IMG:bb\", \"mounts\": [\"$W/data:/proc/x\"]}") == "mounts[0]: "*"runtime's"* ]]
    [[ $(api_refused "{\"mounts\": [\"$W/data:/data\"]}") == "mounts: "*"need an image"* ]]
    [[ $(api_refused '{"image": "http://x/y"}') == "image: "*"neither oci-layout"* ]]
    [[ $(api_refused '{"image": "oci-layout:relative:tag"}') == "image: "*"absolute path"* ]]
    run -2 "$DOCKET" submit --image /no/scheme -- true
    [[ $output == *"bad image"* ]]
    # a #DOCKET --image line (the script itself runs in the image: its shebang is /bin/sh)
    printf '#!/bin/sh\n#DOCKET --image oci-layout:%s:other\ncat /marker\n' "$IMG" >"$W/boxed.sh"
    id=$(submit_cli "$W/boxed.sh")
    done_ok "$id"
    [ "$("$DOCKET" logs "$id")" = other ]
}

submit_cli() {
    "$DOCKET" submit --parsable -p explore --class exploration --select zone=b --workdir "$W" "$@"
}

@test "a broken image or a runtime error fails the job with the reason, never the node" {
    id=$(api_submit "{\"image\": \"oci-layout:$T/nosuch:bb\", \"selectors\": {\"zone\": \"a\"}, \"command\": [\"true\"]}")
    wait_for 60 ended "$id"
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.state <<<"$output")" = FAILED ]
    [[ $(jq -r .job.exit.message <<<"$output") == *"cannot read '$T/nosuch/index.json'"* ]]
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:nosuchtag\", \"selectors\": {\"zone\": \"a\"}, \"command\": [\"true\"]}")
    wait_for 60 ended "$id"
    [[ $("$DOCKET" show "$id" --json | jq -r .job.exit.message) == *"no manifest has that tag ('nosuchtag')"* ]]
    # a layer missing: umoci's own words on the job's stderr, the step named
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:broken\", \"selectors\": {\"zone\": \"a\"}, \"command\": [\"true\"]}")
    wait_for 60 ended "$id"
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.state <<<"$output")" = FAILED ]
    [[ $(jq -r .job.exit.message <<<"$output") == *"umoci raw unpack"*"failed"* ]]
    run -0 "$DOCKET" logs "$id" --stderr
    [[ $output == *"preparing image oci-layout:$IMG:broken"* ]]
    [[ $output == *"no such file"* || $output == *"not exist"* ]]
    # the command missing in the image: the runtime's error, before the job ran
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:bb\", \"selectors\": {\"zone\": \"a\"}, \"command\": [\"/no/such/program\"]}")
    wait_for 60 ended "$id"
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.exit.kind <<<"$output")" = launch_failed ]
    [[ $(jq -r .job.exit.message <<<"$output") == *"OCI runtime failed before the job ran"*"/no/such/program"* ]]
    # the node is fine: UP, and the next job there runs
    [ "$("$DOCKET" nodes --json | jq -r --arg n "$PREFIX-a" '.nodes[] | select(.name == $n) | .state')" = UP ]
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:bb\", \"selectors\": {\"zone\": \"a\"}, \"command\": [\"true\"]}")
    done_ok "$id"
}

container_sleeps() { # ID: its container's sleep runs
    "$DOCKET" logs "$1" | grep -q started
}

job_procs() { # NODE ID: the pids of the job's cgroup (v1 or v2)
    cat /sys/fs/cgroup/memory/docket/"$PREFIX-$1"/job_"$2"/cgroup.procs 2>/dev/null ||
        cat /sys/fs/cgroup/docket/"$PREFIX-$1"/job_"$2"/cgroup.procs
}

@test "a cancel reaches the container's processes once; the exit status comes through" {
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:bb\", \"selectors\": {\"zone\": \"b\"},
        \"command\": [\"sh\", \"-c\", \"trap 'echo got TERM; exit 3' TERM; echo started; sleep 300 & wait; echo never\"]}")
    wait_for 60 container_sleeps "$id"
    pids=$(job_procs b "$id")
    [ -n "$pids" ]
    "$DOCKET" cancel "$id" >/dev/null
    wait_for 60 state_in "$id" CANCELLED
    for p in $pids; do ! kill -0 "$p" 2>/dev/null; done
    # the TERM came to the job's shell once (the runtime passes none on a second time)
    wait_for 20 bash -c "'$DOCKET' logs $id | grep -q 'got TERM'"
    [ "$("$DOCKET" logs "$id" | grep -c 'got TERM')" = 1 ]
    [[ $("$DOCKET" logs "$id") != *never* ]]
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:bb\", \"selectors\": {\"zone\": \"b\"},
        \"command\": [\"sh\", \"-c\", \"exit 7\"]}")
    wait_for 60 ended "$id"
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.exit.code <<<"$output")" = 7 ]
}

@test "the node's image cache: unpacked once, reused, evicted at its cap but never in use" {
    # on node b: the first job unpacks bb (unless it is there already), the next reuse it
    bb_unpacks() { grep -c "$(digest_of bb)" "$T/agent-b/images/unpack.log" || true; }
    for i in 1 2 3; do
        id=$(api_submit "{\"image\": \"oci-layout:$IMG:bb\", \"selectors\": {\"zone\": \"b\"}, \"command\": [\"true\"]}")
        done_ok "$id"
        [[ $i != 1 ]] || first=$(bb_unpacks)
    done
    [ "$first" -ge 1 ]
    [ "$(bb_unpacks)" = "$first" ]
    [ -d "$T/agent-b/images/sha256-$(digest_of bb)/rootfs" ]
    # bb held by a running job: unpacking `other` passes the cap, but bb stays
    hold=$(api_submit "{\"image\": \"oci-layout:$IMG:bb\", \"selectors\": {\"zone\": \"b\"},
        \"command\": [\"sh\", \"-c\", \"echo started; sleep 300\"]}")
    wait_for 60 container_sleeps "$hold"
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:other\", \"selectors\": {\"zone\": \"b\"}, \"command\": [\"cat\", \"/marker\"]}")
    done_ok "$id"
    [ "$("$DOCKET" logs "$id")" = other ]
    [ -d "$T/agent-b/images/sha256-$(digest_of bb)/rootfs" ]
    "$DOCKET" cancel "$hold" >/dev/null
    wait_for 60 state_in "$hold" CANCELLED
    # bb free now: the next unpack (bb is warm, so `suid`) evicts the least recently used
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:suid\", \"selectors\": {\"zone\": \"b\"}, \"command\": [\"true\"]}")
    done_ok "$id"
    [ ! -e "$T/agent-b/images/sha256-$(digest_of bb)" ]
    [ ! -e "$T/agent-b/images/sha256-$(digest_of other)" ]
    [ -d "$T/agent-b/images/sha256-$(digest_of suid)/rootfs" ]
    # evicted images come back on use, unpacked again
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:bb\", \"selectors\": {\"zone\": \"b\"}, \"command\": [\"true\"]}")
    done_ok "$id"
    [ "$(bb_unpacks)" = $((first + 1)) ]
}

@test "a job waiting on its image says so in its events" {
    run -0 "$DOCKET" show "$(api_submit "{\"image\": \"oci-layout:$IMG:other\", \"selectors\": {\"zone\": \"a\"}, \"command\": [\"true\"]}")" --json
    id=$(jq -r .job.id <<<"$output")
    done_ok "$id"
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r '[.events[] | select(.type == "preparing")][0].reason' <<<"$output")" = "preparing image" ]
    [ "$(jq -r '[.events[] | select(.type == "preparing")][0].detail' <<<"$output")" = "image oci-layout:$IMG:other" ]
}

@test "sbatch --container-image and the other Pyxis options" {
    mkdir -p "$W/in"
    echo "mounted" >"$W/in/f"
    cat >"$W/box.sh" <<EOF
#!/bin/sh
#SBATCH -A explore
#SBATCH --container-image=oci-layout:$IMG:bb
#SBATCH --container-mounts=$W/in:/in:ro
#SBATCH --container-workdir=/in
#SBATCH --container-env=PYXIS_VAR
echo "\$IMAGE_VAR \$PYXIS_VAR \$(pwd) \$(cat f)"
EOF
    cd "$W"
    id=$(PYXIS_VAR=passed "$DOCKET" sbatch --parsable "$W/box.sh")
    done_ok "$id"
    # (the first job of the image on its node says so on stderr, the same file here)
    [ "$(tail -n 1 "$W/slurm-$id.out")" = "from-bb passed /in mounted" ]
    run -2 "$DOCKET" sbatch --container=/some/bundle --wrap true
    [[ $output == *"--container-image"* ]]
}

@test "a hostile job: setuid, mount, /proc/1 and the image's files all stay closed" {
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:suid\", \"selectors\": {\"zone\": \"a\"}, \"command\": [\"sh\", \"-c\",
        \"/suid/busybox id -u; mount -t tmpfs x /mnt 2>&1 | head -1; cat /proc/1/environ >/dev/null 2>&1 && echo read1 || echo no1; ls /proc/1/root/ >/dev/null 2>&1 && echo root1 || echo noroot; echo x >/bin/busybox 2>/dev/null && echo wrote || echo nowrite; grep CapEff /proc/self/status; grep NoNewPrivs /proc/self/status\"]}")
    done_ok "$id"
    mapfile -t lines < <("$DOCKET" logs "$id")
    [ "${lines[0]}" = 65534 ]                       # the setuid bit gives nothing
    [[ ${lines[1]} == *"ermission denied"* || ${lines[1]} == *"not permitted"* ]]
    [ "${lines[2]}" = no1 ]
    [ "${lines[3]}" = noroot ]
    [ "${lines[4]}" = nowrite ]
    [[ ${lines[5]} == *0000000000000000 ]]
    [[ ${lines[6]} == *1 ]]
    # a mount through a symbolic link of the job's own is refused on the node
    ln -sfn /etc "$W/sneaky"
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:bb\", \"selectors\": {\"zone\": \"a\"}, \"mounts\": [\"$W/sneaky:/x\"], \"command\": [\"cat\", \"/x/shadow\"]}")
    wait_for 60 ended "$id"
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq -r .job.state <<<"$output")" = FAILED ]
    [[ $(jq -r .job.exit.message <<<"$output") == *"symbolic link"* ]]
    # a working directory behind one the user may not pass is not mounted for them
    mkdir -m 0700 "$T/locked" && mkdir -m 0755 "$T/locked/open" && echo secret >"$T/locked/open/f"
    id=$(api_submit "{\"image\": \"oci-layout:$IMG:bb\", \"selectors\": {\"zone\": \"a\"}, \"workdir\": \"$T/locked/open\", \"command\": [\"cat\", \"f\"]}")
    wait_for 60 ended "$id"
    [[ $("$DOCKET" show "$id" --json | jq -r .job.exit.message) == *"cannot enter working directory '$T/locked/open' as user 'nobody'"* ]]
    [[ $("$DOCKET" logs "$id") != *secret* ]]
    # an image layout the user may not read is not run for them
    mkdir -m 0700 "$T/private" && cp -a "$IMG" "$T/private/img"
    id=$(api_submit "{\"image\": \"oci-layout:$T/private/img:bb\", \"selectors\": {\"zone\": \"a\"}, \"command\": [\"true\"]}")
    wait_for 60 ended "$id"
    [[ $("$DOCKET" show "$id" --json | jq -r .job.exit.message) == *"user 'nobody' cannot read"* ]]
}

@test "runc is refused at the agent's start: it cannot stay in the job's cgroup" {
    run -2 "$AGENT_BIN" --controller "http://127.0.0.1:$PORT" --join-token x --name "$PREFIX-r" \
        --state-dir "$T/agent-r" --oci-runtime /usr/sbin/runc
    [[ $output == *"runc cannot run a container inside the job's own cgroup; use crun"* ]]
}

# logs_have ID FLAGS TEXT: the job's logs (FLAGS: "" or --stderr) hold TEXT; a job's end
# may be known before the last of its output has reached docketd
logs_have() {
    "$DOCKET" logs "$1" $2 | grep -qF -- "$3"
}

# slurm_submit SCRIPT [EXTRA]: a Slurm-style job of user nobody running SCRIPT; its id
slurm_submit() {
    api_submit "$(jq -c -n --arg s "$1" --argjson extra "${2:-{\}}" \
        '{script: $s, slurm: {ntasks: 2}, selectors: {zone: "a"}} + $extra')"
}

@test "srun --container-image runs a bare job's step in the image, as its user, in its cgroup" {
    bb_unpacks() { grep -c "$(digest_of bb)" "$T/agent-a/images/unpack.log" || true; }
    mkdir -p "$W/in" && echo "in the mount" >"$W/in/f"
    id=$(slurm_submit "#!/bin/sh
srun -l --container-image=oci-layout:$IMG:other sh -c 'echo \$SLURM_PROCID \$SLURM_NTASKS \$(id -u) \$(cat /marker) \$IMAGE_VAR \$(pwd) cg=\$(grep -c job_\$SLURM_JOB_ID /proc/self/cgroup)'
echo other=\$?
srun -n 1 --container-image=oci-layout:$IMG:bb --container-workdir=/in --container-mounts=$W/in:/in:ro cat f
echo mounted=\$?
srun -n 1 --container-image=oci-layout:$IMG:bb sh -c 'exit 7'
echo seven=\$?
srun -n 1 --container-image=oci-layout:$IMG:bb sh -c 'kill -9 \$\$'
echo killed=\$?
srun -n 1 bash -c 'test -e /usr/bin/jq && echo bare on the node'
")
    done_ok "$id"
    wait_for 30 logs_have "$id" "" "bare on the node"
    wait_for 30 logs_have "$id" --stderr "Killed by signal 9"
    run -0 "$DOCKET" logs "$id"
    # each task: its rank, the step's size, the job's user, the image's file and
    # variables, its directory (the job's, mounted at the same path), the job's cgroup
    [[ $output == *"0: 0 2 65534 other from-other $W"* ]]
    [[ $output == *"1: 1 2 65534 other from-other $W"* ]]
    [ "$(grep -c " cg=[1-9]" <<<"$output")" = 2 ]
    [[ $output == *"other=0"* ]]
    [[ $output == *"in the mount"*"mounted=0"* ]]
    [[ $output == *"seven=7"* ]]
    [[ $output == *"killed=137"* ]]
    [[ $output == *"bare on the node"* ]]
    run -0 "$DOCKET" logs "$id" --stderr
    [[ $output == *"srun: error: task 0: Exited with exit code 7"* ]]
    [[ $output == *"srun: error: task 0: Killed by signal 9"* ]]
    # the step's images come from the node's cache, as a job's: bb was unpacked once
    before=$(bb_unpacks)
    id=$(slurm_submit "#!/bin/sh
srun -n 1 --container-image=oci-layout:$IMG:bb true && srun -n 1 --container-image=oci-layout:$IMG:bb true && echo twice
")
    done_ok "$id"
    wait_for 30 logs_have "$id" "" twice
    [ "$(bb_unpacks)" -le "$((before + 1))" ]
    [ "$(bb_unpacks)" -ge 1 ]
    # nothing of the steps' bundles stays in the job's directory
    [ -z "$(ls -d "$T"/agent-a/jobs/"$id"/oci-step-* 2>/dev/null)" ]
}

@test "srun --container-image: a bad image or a mount out of reach fails the step, not the job" {
    ln -sfn /etc "$W/sneaky"
    id=$(slurm_submit "#!/bin/sh
srun -n 1 --container-image=oci-layout:$IMG:nosuchtag true
echo tag=\$?
srun -n 1 --container-image=oci-layout:$T/nosuch:bb true
echo layout=\$?
srun -n 1 --container-image=oci-layout:$IMG:bb /no/such/program
echo program=\$?
srun -n 1 --container-image=oci-layout:$IMG:bb --container-mounts=/etc:/x cat /x/shadow
echo outside=\$?
srun -n 1 --container-image=oci-layout:$IMG:bb --container-mounts=$W/sneaky:/x cat /x/shadow
echo link=\$?
DOCKET_STEP_KEY=not-the-key srun -n 1 --container-image=oci-layout:$IMG:bb true
echo key=\$?
srun -n 1 --container-mounts=$W:/w true
echo noimage=\$?
echo still here
")
    done_ok "$id"
    wait_for 30 logs_have "$id" "" "still here"
    wait_for 30 logs_have "$id" --stderr "need --container-image"
    run -0 "$DOCKET" logs "$id"
    for w in tag layout program outside link key; do
        [[ $output == *"$w="[1-9]* ]] || { echo "$w: $output"; false; }
    done
    [[ $output == *"noimage=2"* || $output == *"noimage=1"* ]]
    [[ $output == *"still here"* ]]
    [[ $output != *root:* ]]
    run -0 "$DOCKET" logs "$id" --stderr
    [[ $output == *"no manifest has that tag ('nosuchtag')"* ]]
    [[ $output == *"user 'nobody' cannot read '$T/nosuch/index.json'"* ]]
    [[ $output == *"OCI runtime failed before the task ran"*"/no/such/program"* ]]
    [[ $output == *"source '/etc' is neither under the job's workdir nor in a storage area"* ]]
    [[ $output == *"a symbolic link is on its way"* ]]
    [[ $output == *"not this job's step key"* ]]
    [[ $output == *"need --container-image"* ]]
    # the node is fine: UP, and its next job runs
    [ "$("$DOCKET" nodes --json | jq -r --arg n "$PREFIX-a" '.nodes[] | select(.name == $n) | .state')" = UP ]
}

@test "srun --container-image: another job of the same user cannot use a job's step socket" {
    victim=$(slurm_submit "#!/bin/sh
echo \"\$DOCKET_STEP_KEY \$DOCKET_SCRATCH\" > $W/victim-key
echo started
sleep 300
")
    wait_for 60 container_sleeps "$victim"
    read -r key scratch <"$W/victim-key"
    # a job of nobody (the victim's user) that knows the victim's key and socket
    id=$(slurm_submit "#!/bin/sh
DOCKET_STEP_KEY=$key DOCKET_SCRATCH=$scratch srun -n 1 --container-image=oci-layout:$IMG:bb sh -c 'echo ran in the victim'
echo thief=\$?
")
    done_ok "$id"
    wait_for 30 logs_have "$id" "" "thief="
    wait_for 30 logs_have "$id" --stderr "srun: error: task 0"
    run -0 "$DOCKET" logs "$id"
    [[ $output == *"thief=1"* ]]
    [[ $output != *"ran in the victim"* ]]
    run -0 "$DOCKET" logs "$id" --stderr
    echo "$output"
    [[ $output == *"refused: not a process of this job"* ]]
    "$DOCKET" cancel "$victim" >/dev/null
    wait_for 60 state_in "$victim" CANCELLED
}

@test "srun --container-image: the job's GPUs are the step's; srun's signals and -K reach it" {
    rm -f "$W/started"
    id=$(slurm_submit "#!/bin/sh
srun -n 1 --container-image=oci-layout:$IMG:bb sh -c 'echo \$CUDA_VISIBLE_DEVICES; ls /dev | grep nvidia'
srun -n 1 --container-image=oci-layout:$IMG:bb sh -c 'trap \"echo got TERM; exit 3\" TERM; touch $W/started; sleep 300 & wait' &
pid=\$!
while [ ! -e $W/started ]; do sleep 0.1; done
kill -TERM \$pid
wait \$pid
echo term=\$?
srun -n 2 -K --container-image=oci-layout:$IMG:bb sh -c 'if [ \$SLURM_PROCID = 1 ]; then exit 5; fi; sleep 300'
echo K=\$?
" '{"gpus": 2}')
    done_ok "$id"
    wait_for 30 logs_have "$id" "" "K="
    wait_for 30 logs_have "$id" --stderr "Killed by signal 9"
    mine=$("$DOCKET" show "$id" --json | jq -r '.job.allocation[0].gpus | map(tostring) | join(",")')
    mapfile -t lines < <("$DOCKET" logs "$id")
    # its GPUs named and their device nodes only, as in a container job
    [ "${lines[0]}" = "$mine" ]
    want=$(tr ',' '\n' <<<"$mine" | sed 's/^/nvidia/'; echo nvidiactl)
    [ "$(printf '%s\n' "${lines[@]:1:3}" | sort)" = "$(sort <<<"$want")" ]
    # srun's SIGTERM came to the container's shell once, and its exit status back
    run -0 "$DOCKET" logs "$id"
    [ "$(grep -c 'got TERM' <<<"$output")" = 1 ]
    [[ $output == *"term=3"* ]]
    # -K: the first failure ended the other task's container (the job did not wait 300 s)
    [[ $output == *"K="[1-9]* ]]
    [[ $("$DOCKET" logs "$id" --stderr) == *"task 1: Exited with exit code 5"* ]]
}

@test "srun --container-image: a step outlives its agent's restart, and ends with its job" {
    rm -f "$W/step1" "$W/go" "$W/step2"
    id=$(slurm_submit "#!/bin/sh
srun -n 1 --container-image=oci-layout:$IMG:bb sh -c 'touch $W/step1; while [ ! -e $W/go ]; do sleep 0.1; done; echo step one done'
echo one=\$?
srun -n 1 --container-image=oci-layout:$IMG:bb sh -c 'touch $W/step2; sleep 300'
")
    wait_for 60 test -e "$W/step1"
    # the agent goes and comes back while the step runs: its supervisor serves it alone
    kill_pidfile "$T/agent-a.pid"
    agent_flags
    agent_start a "$("$DOCKET" token join)"
    wait_for 30 nodes_up 2
    touch "$W/go"
    wait_for 60 test -e "$W/step2"
    wait_for 30 logs_have "$id" "" "one=0"
    [[ $("$DOCKET" logs "$id") == *"step one done"*"one=0"* ]]
    # the second step's server (a child of the job's supervisor) and container's processes
    sup=$(jq -r .sup_pid "$T/agent-a/jobs/$id/state.json")
    servers=$(pgrep -P "$sup" -x docket-step)
    [ -n "$servers" ]
    pids=$(job_procs a "$id")
    "$DOCKET" cancel "$id" >/dev/null
    wait_for 60 state_in "$id" CANCELLED
    for p in $servers $pids; do wait_for 20 bash -c "! kill -0 $p 2>/dev/null"; done
    [ -z "$(ls -d "$T"/agent-a/jobs/"$id"/oci-step-* 2>/dev/null)" ]
}

@test "srun --container-image across two nodes: each node's supervisor runs its tasks" {
    id=$(api_submit "$(jq -c -n --arg s "#!/bin/sh
srun -N 2 -n 2 -l --container-image=oci-layout:$IMG:bb sh -c 'echo \$SLURM_PROCID \$SLURM_NODEID \$(id -u) \$IMAGE_VAR'
echo both=\$?
" '{script: $s, nodes: 2, slurm: {ntasks: 2}}')")
    done_ok "$id"
    wait_for 30 logs_have "$id" "" "both="
    run -0 "$DOCKET" logs "$id"
    [[ $output == *"0: 0 0 65534 from-bb"* ]]
    [[ $output == *"1: 1 1 65534 from-bb"* ]]
    [[ $output == *"both=0"* ]]
}
