#!/usr/bin/env bats
# warm.bats - warm environments (issue 35, docs/environments.md "Warm environments") on
# a real docketd and two real docket-node agents on loopback: `docket templates warm`
# unpacks a template's image and builds its prepare script on the chosen nodes ahead of
# any job, whose start then shows no unpack and no preparing step; each node's state is
# in `docket templates show`; a broken image's warm fails with its reason and leaves the
# node UP; the image cache's eviction un-warms a node, which says so; a template's
# `warm_on` keeps it warm on the nodes of a label set; a lead warms its own project's
# templates only. Registry credentials (a project secret named by registry_auth) reach
# skopeo as an authfile of mode 0600, removed after the copy: no registry can run here (no
# network), so a stand-in skopeo on a third agent's PATH records its argv and the file,
# for that check only. Images are OCI layouts built here with umoci from busybox-static
# (no network). One cluster per file; every process it started is stopped by pid.

bats_require_minimum_version 1.5.0

CLUSTER_NAME=warm
load lib/cluster

# The templates every test starts from (IMG: the test's OCI layout): images good and
# broken, prepare steps, two projects' own, one with variables only.
base_templates() {
    cat <<YAML
templates:
  - name: warmbox
    image: oci-layout:$IMG:bb
    prepare: echo built >"\$DOCKET_ENV_DIR/marker"
  - name: otherbox
    image: oci-layout:$IMG:other
  - name: brokenbox
    image: oci-layout:$IMG:broken
  - name: explore-tools
    owner: project:explore
    prepare: echo tools >"\$DOCKET_ENV_DIR/tools"
  - name: vision-tools
    owner: project:vision
    prepare: "true"
  - name: plain
    env: {A: "1"}
YAML
}

setup_file() {
    [[ $(id -u) == 0 ]] || skip "needs root (cgroups, the OCI runtime)"
    [[ -x $DOCKET && -x $DOCKETD_BIN && -x $AGENT_BIN ]] || skip "docket, docketd or docket-node not built"
    command -v crun >/dev/null && command -v umoci >/dev/null && command -v busybox >/dev/null ||
        skip "crun, umoci or busybox-static not installed (scripts/install-deps.sh --test)"
    # 3 MiB: one busybox image (about 2 MiB) fits, two do not
    AGENT_EXTRA=(--image-cache-max 3M)
    cluster_start
    "$DOCKET" apply -f "$BATS_TEST_DIRNAME/../../examples/policy.yaml" >/dev/null
    chmod 0777 "$W"
    export IMG=$T/images
    mkimage bb
    mkimage other
    mkimage broken
    # the broken tag's layer is gone: umoci fails on it
    local m layer
    m=$(jq -r '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == "broken") | .digest' "$IMG/index.json")
    layer=$(jq -r '.layers[0].digest' "$IMG/blobs/sha256/${m#sha256:}")
    rm "$IMG/blobs/sha256/${layer#sha256:}"
    base_templates >"$T/templates.yaml"
    "$DOCKET" apply -f "$T/templates.yaml" >/dev/null
}

teardown_file() {
    # the third agent (the registry test's) is this file's: stopped by pid first; its
    # supervisors go with the cluster's (end_supervisors), its groups after
    [[ -z ${T:-} ]] || kill_pidfile "$T/agent-c.pid"
    cluster_stop
    [[ -z ${PREFIX:-} ]] || sweep_cgroups "$PREFIX" c
}

# mkimage TAG: a busybox image with a file /tag of its own (so no two share a layer)
mkimage() {
    local b=$T/bundle-$1
    [[ -d $IMG ]] || umoci init --layout "$IMG"
    umoci new --image "$IMG:$1"
    umoci config --image "$IMG:$1" --config.env "PATH=/bin" >/dev/null
    umoci unpack --image "$IMG:$1" "$b" >/dev/null
    mkdir -p "$b/rootfs/bin"
    cp "$(command -v busybox)" "$b/rootfs/bin/busybox"
    for c in sh cat echo true; do ln -s busybox "$b/rootfs/bin/$c"; done
    echo "$1" >"$b/rootfs/tag"
    umoci repack --image "$IMG:$1" "$b" >/dev/null
    chmod -R a+rX "$IMG"
}

api_submit() { # JSON: a job of user nobody in project explore (fields merged); its id
    local body
    body=$(jq -c -n --argjson extra "$1" --arg wd "$W" \
        '{project: "explore", class: "exploration", user: "nobody", workdir: $wd, cpus: 1,
          time_limit: "5m"} + $extra')
    curl -s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/v1/jobs" -d "$body" |
        jq -r '.job.id // .error.message'
}

done_ok() {
    local s
    wait_for 60 state_in "$1" COMPLETED FAILED TIMEOUT CANCELLED NODE_FAIL
    s=$(job_state "$1")
    [[ $s == COMPLETED ]] || { echo "job $1 is $s"; "$DOCKET" show "$1"; "$DOCKET" logs "$1" --stderr; false; }
}

unpacks() { # a|b: images unpacked on that node so far
    cat "$T/agent-$1/images/unpack.log" 2>/dev/null | wc -l
}

warm_state() { # TEMPLATE NODE: that node's state of the template ("" when none)
    "$DOCKET" templates show "$1" --json |
        jq -r --arg n "$2" '[.warm[] | select(.node == $n) | .state][0] // ""'
}

warm_is() { # TEMPLATE NODE STATE
    [ "$(warm_state "$1" "$2")" = "$3" ]
}

@test "templates warm: the image and the prepare are made ready ahead; the job starts on them" {
    run -0 "$DOCKET" templates warm warmbox --nodes "$PREFIX-a" --json
    [ "$(jq -c .nodes <<<"$output")" = "[\"$PREFIX-a\"]" ]
    [ "$(jq -r .template <<<"$output")" = warmbox@1 ]
    wait_for 60 warm_is warmbox "$PREFIX-a" ready
    [ "$(unpacks a)" = 1 ]
    [ "$(unpacks b)" = 0 ]
    [ "$(cat "$T/agent-a/envs/warmbox@1/marker")" = built ]
    [ "$(warm_state warmbox "$PREFIX-b")" = "" ]
    run -0 "$DOCKET" templates show warmbox
    [[ $output == *"warm:"*"$PREFIX-a"*"warmbox@1"*"ready"* ]]
    # the job: no unpack, no prepare, nothing preparing in its events or on its stderr
    id=$(api_submit '{"template": "warmbox", "selectors": {"zone": "a"}, "command": ["cat", "/tag"]}')
    done_ok "$id"
    [ "$("$DOCKET" logs "$id")" = bb ]
    run -0 "$DOCKET" logs "$id" --stderr
    [[ $output != *preparing* ]]
    run -0 "$DOCKET" show "$id" --json
    [ "$(jq '[.events[] | select(.type == "preparing")] | length' <<<"$output")" = 0 ]
    [ "$(unpacks a)" = 1 ]
    # warming again what is warm changes nothing on the node
    "$DOCKET" templates warm warmbox --nodes "$PREFIX-a" >/dev/null
    wait_for 60 warm_is warmbox "$PREFIX-a" ready
    [ "$(unpacks a)" = 1 ]
}

# The scheduler prefers a warm node (docs/scheduling.md §3 "Warm nodes"): two templates,
# each warm on one of the two nodes only; a job of each, free to run on either, lands
# where its template is warm (so one of them lands where the scan alone would not have
# put it), prepares nothing there, and its start event says so.
@test "the scheduler prefers the node where a job's template is warm: no preparing there" {
    {
        base_templates
        for n in a b; do
            printf '  - name: pick-%s\n    owner: project:explore\n' "$n"
            printf '    prepare: echo %s >"$DOCKET_ENV_DIR/mark"\n' "$n"
        done
    } >"$T/pick.yaml"
    "$DOCKET" apply -f "$T/pick.yaml" >/dev/null
    "$DOCKET" templates warm pick-a --nodes "$PREFIX-a" >/dev/null
    "$DOCKET" templates warm pick-b --nodes "$PREFIX-b" >/dev/null
    wait_for 60 warm_is pick-a "$PREFIX-a" ready
    wait_for 60 warm_is pick-b "$PREFIX-b" ready
    for n in a b; do
        id=$(api_submit "$(jq -c -n --arg t "pick-$n" \
            '{template: $t, command: ["sh", "-c", "cat \"$DOCKET_ENV_DIR/mark\""]}')")
        done_ok "$id"
        [ "$("$DOCKET" logs "$id")" = "$n" ]
        run -0 "$DOCKET" show "$id" --json
        start=$(jq -c '[.events[] | select(.type == "start")][0]' <<<"$output")
        [ "$(jq -r .node <<<"$start")" = "$PREFIX-$n" ]
        [ "$(jq -r .detail <<<"$start")" = "placed on a warm node (pick-$n@1 ready there)" ]
        [ "$(jq '[.events[] | select(.type == "preparing")] | length' <<<"$output")" = 0 ]
        run -0 "$DOCKET" show "$id"
        [[ $output == *"placed on a warm node"* ]]
    done
    # neither node built the other's: each job prepared nothing
    [ ! -e "$T/agent-a/envs/pick-b@1" ]
    [ ! -e "$T/agent-b/envs/pick-a@1" ]
    "$DOCKET" apply -f "$T/templates.yaml" >/dev/null
}

@test "a broken image's warm fails with its reason; the node stays UP and runs jobs" {
    run -0 "$DOCKET" templates warm brokenbox --nodes zone=a
    [[ $output == *"warming brokenbox@1 on 1 node: $PREFIX-a"* ]]
    wait_for 60 warm_is brokenbox "$PREFIX-a" failed
    run -0 "$DOCKET" templates show brokenbox --json
    reason=$(jq -r '.warm[0].reason' <<<"$output")
    [[ $reason == "image oci-layout:$IMG:broken: unpacking the image (umoci raw unpack) failed"* ]]
    [[ $reason == *"$T/agent-a/images/sha256-"*".log"* ]]
    run -0 "$DOCKET" templates show brokenbox
    [[ $output == *failed*"umoci raw unpack"* ]]
    [ "$(ctl_get /v1/nodes | jq -r --arg n "$PREFIX-a" '.nodes[] | select(.name == $n) | .state')" = UP ]
    id=$(api_submit '{"template": "plain", "selectors": {"zone": "a"}, "command": ["true"]}')
    done_ok "$id"
}

@test "nothing to warm, an unknown template, a bad selector: refused with the reason" {
    run -1 "$DOCKET" templates warm plain
    [[ $output == *"has no image and no prepare script"* ]]
    run -1 "$DOCKET" templates warm nosuch
    [[ $output == *"no such template"* ]]
    run -1 "$DOCKET" templates warm warmbox@9
    [[ $output == *"no such template"* ]]
    run -2 "$DOCKET" templates warm 'bad/name'
    run -2 "$DOCKET" templates show warmbox --nodes x
}

@test "a lead warms its own project's templates, nothing else; a member nothing" {
    "$DOCKET" projects members add explore lena --role lead >/dev/null
    "$DOCKET" projects members add explore mo >/dev/null
    lena=$("$DOCKET" token create --user lena --role member --ttl 1h 2>/dev/null)
    mo=$("$DOCKET" token create --user mo --role member --ttl 1h 2>/dev/null)
    DOCKET_TOKEN=$lena run -0 "$DOCKET" templates warm explore-tools --nodes "$PREFIX-b"
    wait_for 60 warm_is explore-tools "$PREFIX-b" ready
    [ "$(cat "$T/agent-b/envs/explore-tools@1/tools")" = tools ]
    # another project's template, the site's: refused, and nothing asked of the nodes
    DOCKET_TOKEN=$lena run -1 "$DOCKET" templates warm vision-tools
    [[ $output == *"not a lead of project 'vision'"* ]]
    DOCKET_TOKEN=$lena run -1 "$DOCKET" templates warm warmbox --nodes "$PREFIX-b"
    [[ $output == *"not a lead"* ]]
    DOCKET_TOKEN=$mo run -1 "$DOCKET" templates warm explore-tools
    [[ $output == *"not a lead of project 'explore'"* ]]
    run -0 "$DOCKET" templates show vision-tools --json
    [ "$(jq '.warm | length' <<<"$output")" = 0 ]
    [ "$(warm_state warmbox "$PREFIX-b")" = "" ]
    # every warm asked is audited
    run -0 "$DOCKET" audit --action template.warm --json
    [ "$(jq -r '[.entries[] | select(.target == "template:explore-tools")][0].actor' <<<"$output")" = lena ]
}

@test "warm_on keeps a template warm on the nodes of a label set, asked by docketd" {
    {
        base_templates
        cat <<YAML
  - name: kept
    prepare: echo kept >"\$DOCKET_ENV_DIR/kept"
    warm_on: zone=b
YAML
    } >"$T/keep.yaml"
    "$DOCKET" apply -f "$T/keep.yaml" >/dev/null
    wait_for 60 warm_is kept "$PREFIX-b" ready
    [ "$(cat "$T/agent-b/envs/kept@1/kept")" = kept ]
    [ "$(warm_state kept "$PREFIX-a")" = "" ]
    [ ! -e "$T/agent-a/envs/kept@1" ]
    run -0 "$DOCKET" templates show kept
    [[ $output == *"warm on"*"zone=b"* ]]
}

@test "the image cache's eviction un-warms a node, which says why" {
    "$DOCKET" templates warm warmbox --nodes "$PREFIX-b" >/dev/null
    wait_for 60 warm_is warmbox "$PREFIX-b" ready
    # a second image does not fit the 3 MiB cap with the first: bb goes
    "$DOCKET" templates warm otherbox --nodes "$PREFIX-b" >/dev/null
    wait_for 60 warm_is otherbox "$PREFIX-b" ready
    wait_for 60 warm_is warmbox "$PREFIX-b" evicted
    run -0 "$DOCKET" templates show warmbox --json
    [[ $(jq -r --arg n "$PREFIX-b" '.warm[] | select(.node == $n) | .reason' <<<"$output") == *"was evicted from the node's image cache"* ]]
    # node a keeps it warm: its cache is its own
    [ "$(warm_state warmbox "$PREFIX-a")" = ready ]
    # warmed again on request
    "$DOCKET" templates warm warmbox --nodes "$PREFIX-b" >/dev/null
    wait_for 60 warm_is warmbox "$PREFIX-b" ready
}

@test "restarts: docketd hears the nodes' states again; a restarted agent re-warms from disk" {
    wait_for 60 warm_is warmbox "$PREFIX-a" ready
    before=$(unpacks a)
    held=$(api_submit '{"template": "warmbox", "hold": true, "command": ["cat", "/tag"]}')
    kill_pidfile "$T/ctl.pid"
    ctl_start "$PORT"
    wait_for 60 warm_is warmbox "$PREFIX-a" ready
    # ... and hands them to the scheduler again: a job of it lands warm, prepares nothing,
    # whether submitted after the restart or restored from the store by it
    id=$(api_submit '{"template": "warmbox", "command": ["cat", "/tag"]}')
    "$DOCKET" release "$held" >/dev/null
    for j in "$id" "$held"; do
        done_ok "$j"
        run -0 "$DOCKET" show "$j" --json
        [ "$(jq -r '[.events[] | select(.type == "start")][0].detail' <<<"$output")" = \
            "placed on a warm node (warmbox@1 ready there)" ]
        [ "$(jq '[.events[] | select(.type == "preparing")] | length' <<<"$output")" = 0 ]
    done
    # the agent forgets what it was asked; docketd asks again, and what is on disk serves
    pid=$(cat "$T/agent-a.pid")
    kill -TERM "$pid"
    wait_for 20 bash -c "! kill -0 $pid 2>/dev/null"
    agent_start a "$("$DOCKET" token join)"
    wait_for 30 nodes_up 2
    wait_for 90 warm_is warmbox "$PREFIX-a" ready
    [ "$(unpacks a)" = "$before" ]
    grep -q 'warm_queued template=warmbox@1' "$T/agent-a.log"
}

@test "registry credentials: a project secret reaches skopeo as a 0600 authfile, then is gone" {
    # the stand-in skopeo: what it was given, then the registry's refusal (no network here)
    mkdir -p "$T/fakebin"
    cat >"$T/fakebin/skopeo" <<SH
#!/bin/sh
echo "argv: \$*" >>"$T/skopeo.log"
while [ \$# -gt 0 ]; do
    if [ "\$1" = --src-authfile ]; then
        stat -c 'mode %a %U' "\$2" >>"$T/skopeo.log"
        cat "\$2" >>"$T/skopeo.log" && echo >>"$T/skopeo.log"
        echo "\$2" >"$T/skopeo.authfile"
    fi
    shift
done
echo "unauthorized: the stand-in registry says no" >&2
exit 1
SH
    chmod 0755 "$T/fakebin/skopeo"
    PATH="$T/fakebin:$PATH" agent_start c "$("$DOCKET" token join)"
    wait_for 30 nodes_up 3
    printf '%s' '{"auths": {"registry.example": {"auth": "c2VjcmV0LXRva2Vu"}}}' >"$T/regcred"
    "$DOCKET" secret set explore REGCRED --from-file "$T/regcred" --allow class:exploration >/dev/null
    cp "$T/templates.yaml" "$T/private.yaml"
    cat >>"$T/private.yaml" <<YAML
  - name: private
    image: docker://registry.example/team/img:1
    registry_auth: REGCRED
  - name: explore-private
    owner: project:explore
    image: docker://registry.example/team/img:3
    registry_auth: REGCRED
YAML
    "$DOCKET" apply -f "$T/private.yaml" >/dev/null
    id=$(api_submit '{"template": "private", "selectors": {"zone": "c"}, "command": ["true"]}')
    wait_for 60 state_in "$id" FAILED
    run -0 "$DOCKET" show "$id" --json
    [[ $(jq -r .job.exit.message <<<"$output") == *"skopeo copy failed"* ]]
    cat "$T/skopeo.log"
    grep -qx "argv: copy --quiet --src-authfile $T/agent-c/jobs/$id/registry-auth.json docker://registry.example/team/img:1 oci:$T/agent-c/images/layouts/[0-9a-f]*.tmp:img" "$T/skopeo.log"
    grep -qx 'mode 600 root' "$T/skopeo.log"
    grep -qxF "$(cat "$T/regcred")" "$T/skopeo.log"
    # gone after the copy; in no log, no reply, not in the job's output
    [ ! -e "$(cat "$T/skopeo.authfile")" ]
    ! grep -rqF c2VjcmV0LXRva2Vu "$T/ctl.log" "$T/agent-c.log" "$T/agent-c/jobs/$id"
    run -0 "$DOCKET" show "$id" --json
    [[ $output != *c2VjcmV0LXRva2Vu* ]]
    run -0 "$DOCKET" logs "$id" --stderr
    [[ $output == *"the stand-in registry says no"* && $output != *c2VjcmV0LXRva2Vu* ]]
    # the job's own registry_auth, the same way; wrong uses refused, naming the field
    : >"$T/skopeo.log"
    id=$(api_submit '{"image": "docker://registry.example/team/img:2", "registry_auth": "REGCRED", "selectors": {"zone": "c"}, "command": ["true"]}')
    wait_for 60 state_in "$id" FAILED
    grep -q -- "--src-authfile $T/agent-c/jobs/$id/registry-auth.json docker://registry.example/team/img:2" "$T/skopeo.log"
    [[ $(api_submit '{"image": "docker://r.example/x", "registry_auth": "NOPE", "command": ["true"]}') == *"has no secret 'NOPE'"* ]]
    [[ $(api_submit "{\"image\": \"oci-layout:$IMG:bb\", \"registry_auth\": \"REGCRED\", \"command\": [\"true\"]}") == *"registry_auth is for a docker:// image"* ]]
    [[ $(api_submit '{"registry_auth": "REGCRED", "command": ["true"]}') == *"need an image"* ]]
    [[ $(api_submit '{"image": "docker://r.example/x", "registry_auth": "no such", "command": ["true"]}') == *"registry_auth must name a secret"* ]]
    # a project's template warmed: its project's secret, the same way, outside any job
    : >"$T/skopeo.log"
    "$DOCKET" templates warm explore-private --nodes "$PREFIX-c" >/dev/null
    wait_for 60 warm_is explore-private "$PREFIX-c" failed
    grep -q -- "--src-authfile $T/agent-c/warm/explore-private@1.auth docker://registry.example/team/img:3" "$T/skopeo.log"
    grep -qx 'mode 600 root' "$T/skopeo.log"
    [ ! -e "$T/agent-c/warm/explore-private@1.auth" ]
    run -0 "$DOCKET" templates show explore-private --json
    [[ $(jq -r '.warm[0].reason' <<<"$output") == *"skopeo copy failed"* ]]
    ! grep -rqF c2VjcmV0LXRva2Vu "$T/ctl.log" "$T/agent-c.log" "$T/agent-c/warm"
    # the node is not marked anything
    [ "$(ctl_get /v1/nodes | jq -r --arg n "$PREFIX-c" '.nodes[] | select(.name == $n) | .state')" = UP ]
}
