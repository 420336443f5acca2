#!/usr/bin/env bats
# install.bats - Docket installed like a service (docs/operations.md): `make install` with
# PREFIX and DESTDIR, the systemd units checked by systemd-analyze, logrotate's configs,
# and the Debian packages, built once per file (dpkg-buildpackage, in setup_file) and
# installed into a clean Debian 12 root made by debootstrap, where their maintainer
# scripts run and docketd starts from the packaged configuration as the user docket.
# systemd cannot run as PID 1 here, so the units are checked by systemd-analyze verify,
# on this machine and inside that root.
#
# The clean root is debootstrap's minbase of bookworm plus systemd, kept as a tar in
# DOCKET_TEST_CACHE (default /var/cache/docket-test) and made again after 30 days; the
# packages' dependencies come from the Debian archive (deb.debian.org). Root only.

load lib/common
CLUSTER_NAME=inst
load lib/cluster

SRC=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
VERSION=$("$SRC/scripts/version.sh") # meson.build's, as every package and binary has it
CACHE=${DOCKET_TEST_CACHE:-/var/cache/docket-test}
MIRROR=${DOCKET_DEBIAN_MIRROR:-http://deb.debian.org/debian}
TOOLS=(dpkg-buildpackage dh lintian systemd-analyze logrotate debootstrap)

missing_tools() {
    local t out=()
    for t in "${TOOLS[@]}"; do command -v "$t" >/dev/null || out+=("$t"); done
    echo "${out[*]}"
}

# A copy of the source tree (what git tracks or would track), so the build writes
# nothing into the checkout and its .deb files land in $INST/pkg.
copy_source() {
    mkdir -p "$INST/pkg/docket"
    (cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
        xargs -0 cp --parents -t "$INST/pkg/docket")
    # the built console, as make deb builds it before the (offline) package build
    "$SRC/scripts/build-console.sh" && cp -r "$SRC/console/dist" "$INST/pkg/docket/console/"
    "$SRC/scripts/debian-changelog.sh" "$INST/pkg/docket"
}

# The clean root: the cached tar, unpacked, with /proc mounted for apt and systemd.
make_root() {
    local base=$CACHE/bookworm-minbase-systemd.tar
    if [[ ! -s $base || -n $(find "$base" -mtime +30) ]]; then
        mkdir -p "$CACHE" "$INST/boot"
        debootstrap --variant=minbase --include=systemd bookworm "$INST/boot" "$MIRROR" \
            >"$INST/debootstrap.log" 2>&1 || return 1
        tar -C "$INST/boot" -cf "$base.new" . && mv "$base.new" "$base"
        rm -rf --one-file-system "$INST/boot"
    fi
    mkdir -p "$INST/root"
    tar -C "$INST/root" -xf "$base" || return 1
    cp /etc/resolv.conf "$INST/root/etc/resolv.conf"
    mount -t proc proc "$INST/root/proc"
}

setup_file() {
    export INST PKG_SKIP="" ROOT_SKIP=""
    INST=$(mktemp -d /tmp/docket-bats-install.XXXXXX)
    if [[ $(id -u) -ne 0 ]]; then
        PKG_SKIP="needs root (dpkg-buildpackage's tools installed, chroot, mount)"
        ROOT_SKIP=$PKG_SKIP
        return 0
    fi
    [[ -z $(missing_tools) ]] || "$SRC/scripts/install-deps.sh" --package >"$INST/deps.log" 2>&1
    if [[ -n $(missing_tools) ]]; then
        PKG_SKIP="$(missing_tools) not installed (scripts/install-deps.sh --package)"
        ROOT_SKIP=$PKG_SKIP
        return 0
    fi
    copy_source
    (cd "$INST/pkg/docket" && nice -n 10 dpkg-buildpackage -us -uc -b >"$INST/build.log" 2>&1) ||
        true # the test on the build says what failed
    if ! make_root; then
        ROOT_SKIP="needs the Debian archive ($MIRROR) for debootstrap: see $INST/debootstrap.log"
    elif ! in_root apt-get update >"$INST/apt.log" 2>&1; then
        ROOT_SKIP="needs the Debian archive ($MIRROR) for the packages' dependencies"
    fi
}

teardown_file() {
    [[ -n ${INST:-} && -d $INST ]] || return 0
    if [[ -f $INST/docketd.pid ]]; then
        kill -TERM "$(cat "$INST/docketd.pid")" 2>/dev/null || true
    fi
    mountpoint -q "$INST/root/proc" && umount -l "$INST/root/proc"
    rm -rf --one-file-system "$INST"
}

need_pkg() { [[ -z $PKG_SKIP ]] || skip "$PKG_SKIP"; }
need_root() { [[ -z $ROOT_SKIP ]] || skip "$ROOT_SKIP"; }
# (with the root's own PATH: the tests' PATH names a directory of this machine)
ROOT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
in_root() { chroot "$INST/root" /usr/bin/env PATH=$ROOT_PATH "$@"; }

# make install into DESTDIR (PREFIX=/usr), built in $INST/build, once for the file.
make_install() {
    [[ -f $INST/destdir.log ]] && return 0
    make -C "$SRC" install BUILD="$INST/build" PREFIX=/usr DESTDIR="$INST/destdir" \
        >"$INST/destdir.log" 2>&1 || { cat "$INST/destdir.log"; return 1; }
}

# The packages' maintainer scripts and units, unpacked once.
deb() { echo "$INST/pkg/$1_${VERSION}_amd64.deb"; }

@test "make install DESTDIR lays out binaries, man page, completion, units, logrotate, docs and /etc/docket" {
    make_install
    D=$INST/destdir
    for f in usr/bin/docketd usr/bin/docket-node usr/bin/docket usr/bin/docket-sim; do
        [[ -x $D/$f ]] || { echo "missing $f"; false; }
    done
    run "$D/usr/bin/docketd" --version
    [[ $output == "docketd $VERSION" ]]
    for f in usr/share/man/man1/docket.1 usr/share/bash-completion/completions/docket \
        usr/share/doc/docket/README.md usr/share/doc/docket/operations.md \
        usr/share/doc/docket/examples/policy.yaml \
        usr/share/docket/grafana/docket.json usr/share/docket/prometheus/docket-alerts.yml \
        etc/logrotate.d/docketd etc/logrotate.d/docket-node \
        etc/docket/docketd.yaml etc/docket/node.yaml etc/docket/policy.yaml; do
        [[ -f $D/$f ]] || { echo "missing $f"; false; }
    done
    unit=$(find "$D" -name docketd.service)
    [[ $unit == "$D"/*lib/systemd/system/docketd.service ]]
    grep -qx 'ExecStart=/usr/bin/docketd --config /etc/docket/docketd.yaml' "$unit"
    grep -qx 'ExecStart=/usr/bin/docket-node --config /etc/docket/node.yaml' \
        "$(dirname "$unit")/docket-node.service"
    cmp "$SRC/examples/docketd.yaml" "$D/etc/docket/docketd.yaml"
    # everything went under DESTDIR
    ! grep -E '^Installing .* to ' "$INST/destdir.log" | grep -v " to $D/"
}

@test "make install again keeps an edited /etc/docket file and puts the new one beside it" {
    make_install
    D=$INST/destdir
    echo "# edited by the operator" >>"$D/etc/docket/docketd.yaml"
    make -C "$SRC" install BUILD="$INST/build" PREFIX=/usr DESTDIR="$D" >"$INST/again.log" 2>&1
    tail -n 1 "$D/etc/docket/docketd.yaml" | grep -qx "# edited by the operator"
    cmp "$SRC/examples/docketd.yaml" "$D/etc/docket/docketd.yaml.dist"
}

@test "make install-slurm-compat links the Slurm commands to the installed docket, under DESTDIR" {
    make_install
    D=$INST/destdir
    make -C "$SRC" install-slurm-compat BUILD="$INST/build" PREFIX=/usr DESTDIR="$D" >"$INST/slurm.log" 2>&1
    for c in sbatch srun squeue scancel scontrol sinfo sacct; do
        [[ $(readlink "$D/usr/bin/$c") == /usr/bin/docket ]] || { cat "$INST/slurm.log"; false; }
    done
}

@test "systemd-analyze verify passes both units, installed with PREFIX (their programs exist)" {
    need_pkg
    make -C "$SRC" install BUILD="$INST/build" PREFIX="$INST/prefix" \
        SYSCONFDIR="$INST/prefix/etc" >"$INST/prefix.log" 2>&1 || { cat "$INST/prefix.log"; false; }
    U=$INST/prefix/lib/systemd/system
    grep -qx "ExecStart=$INST/prefix/bin/docketd --config $INST/prefix/etc/docket/docketd.yaml" \
        "$U/docketd.service"
    run systemd-analyze verify --man=no "$U/docketd.service" "$U/docket-node.service"
    echo "$output"
    [[ $status -eq 0 && -z $output ]]
    # and it does check: a unit whose program is missing fails
    sed "s|^ExecStart=$INST/prefix/bin/docketd|ExecStart=$INST/prefix/bin/nothing|" \
        "$U/docketd.service" >"$INST/broken.service"
    run systemd-analyze verify --man=no "$INST/broken.service"
    [[ $status -ne 0 && $output == *"nothing"* ]]
}

@test "the units hold their hardening: docketd confined (exposure at most 2.5), the agent as jobs need it" {
    need_pkg
    U=$SRC/contrib/systemd
    for k in User=docket ProtectSystem=strict ReadWritePaths=/var/lib/docket PrivateTmp=yes \
        NoNewPrivileges=yes Restart=on-failure LimitNOFILE=1048576 StateDirectory=docket; do
        grep -qx "$k" "$U/docketd.service.in" || { echo "docketd: no $k"; false; }
    done
    for k in Delegate=yes KillMode=process Restart=on-failure LimitNOFILE=1048576 \
        ProtectSystem=full StateDirectory=docket-node StateDirectoryMode=0711; do
        grep -qx "$k" "$U/docket-node.service.in" || { echo "docket-node: no $k"; false; }
    done
    # jobs inherit the agent's namespace: none of these may reach them
    ! grep -E '^(NoNewPrivileges|PrivateTmp|ProtectHome|PrivateDevices|User)=' \
        "$U/docket-node.service.in" || false
    [[ -f $INST/prefix/lib/systemd/system/docketd.service ]] || skip "runs after the verify test"
    run systemd-analyze security --offline=yes --threshold=25 \
        "$INST/prefix/lib/systemd/system/docketd.service"
    echo "$output" | tail -n 1
    [[ $status -eq 0 ]]
}

@test "logrotate reads both configs" {
    need_pkg
    run logrotate --debug --state "$INST/logrotate.state" "$SRC/contrib/logrotate/docketd" \
        "$SRC/contrib/logrotate/docket-node"
    echo "$output"
    [[ $status -eq 0 ]]
    [[ $output == *"/var/log/docket/docketd.log"* && $output == *"/var/log/docket-node/docket-node.log"* ]]
    [[ $output != *error* ]]
}

@test "dpkg-buildpackage builds docket, docketd and docket-node; lintian finds no error" {
    need_pkg
    for p in docket docketd docket-node; do
        [[ -f $(deb $p) ]] || { tail -n 40 "$INST/build.log"; false; }
    done
    run lintian --tag-display-limit 0 "$INST/pkg/docket_${VERSION}_amd64.changes"
    echo "$output"
    ! grep -q '^E:' <<<"$output"
}

@test "each package holds its part of make install's layout, conffiles and sound maintainer scripts" {
    need_pkg
    has() { dpkg-deb -c "$(deb "$1")" | awk '{print $6}' | grep -qx "./$2" || { echo "$1: no $2"; false; }; }
    has docket usr/bin/docket
    has docket usr/bin/docket-sim
    has docket usr/share/man/man1/docket.1.gz
    has docket usr/share/bash-completion/completions/docket
    has docket usr/share/doc/docket/operations.md
    has docketd usr/bin/docketd
    has docketd lib/systemd/system/docketd.service
    has docketd etc/logrotate.d/docketd
    has docketd usr/share/docket/grafana/docket.json
    has docketd usr/share/docket/prometheus/docket-alerts.yml
    has docket-node usr/bin/docket-node
    has docket-node lib/systemd/system/docket-node.service
    has docket-node etc/logrotate.d/docket-node
    for p in docketd docket-node; do
        mkdir -p "$INST/ctl/$p"
        dpkg-deb -e "$(deb "$p")" "$INST/ctl/$p"
        for s in "$INST/ctl/$p"/{preinst,postinst,prerm,postrm}; do
            [[ -f $s ]] || continue
            sh -n "$s"
            bash -n "$s"
        done
    done
    grep -qx /etc/docket/docketd.yaml "$INST/ctl/docketd/conffiles"
    grep -qx /etc/docket/policy.yaml "$INST/ctl/docketd/conffiles"
    grep -qx /etc/docket/node.yaml "$INST/ctl/docket-node/conffiles"
    # an upgrade restarts a running unit; nothing enables or starts one at install
    grep -q 'try-restart' "$INST/ctl/docketd/postinst"
    grep -q 'try-restart' "$INST/ctl/docket-node/postinst"
    grep -q 'deb-systemd-invoke stop docketd.service' "$INST/ctl/docketd/prerm"
    grep -q 'deb-systemd-invoke stop docket-node.service' "$INST/ctl/docket-node/prerm"
    ! grep -q 'deb-systemd-invoke start' "$INST/ctl/docketd/postinst" "$INST/ctl/docket-node/postinst"
}

@test "the packages install into a clean Debian 12 root: user docket, directories, programs run" {
    need_pkg
    need_root
    cp "$(deb docket)" "$(deb docketd)" "$(deb docket-node)" "$INST/root/tmp/"
    run in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        "/tmp/docket_${VERSION}_amd64.deb" "/tmp/docketd_${VERSION}_amd64.deb" "/tmp/docket-node_${VERSION}_amd64.deb"
    [[ $status -eq 0 ]] || { echo "$output" | tail -n 30; false; }
    [[ $(in_root getent passwd docket | cut -d: -f7) == /usr/sbin/nologin ]]
    [[ $(in_root stat -c '%a %U:%G' /var/lib/docket) == "700 docket:docket" ]]
    [[ $(in_root stat -c '%a %U:%G' /var/log/docket) == "750 docket:adm" ]]
    [[ $(in_root stat -c '%a %U:%G' /var/lib/docket-node) == "711 root:root" ]]
    [[ $(in_root docketd --version) == "docketd $VERSION" ]]
    in_root docket-node --help | grep -q '^usage: docket-node'
    in_root docket --help >/dev/null
    in_root docket-sim --help >/dev/null
    # nothing enabled, nothing started
    [[ ! -e $INST/root/etc/systemd/system/multi-user.target.wants/docketd.service ]]
    [[ ! -e $INST/root/etc/systemd/system/multi-user.target.wants/docket-node.service ]]
}

@test "systemd-analyze verify passes the packaged units inside that root" {
    need_pkg
    need_root
    [[ -f $INST/root/usr/bin/docketd ]] || skip "runs after the install test"
    run in_root systemd-analyze verify --man=no /lib/systemd/system/docketd.service \
        /lib/systemd/system/docket-node.service
    echo "$output"
    [[ $status -eq 0 && -z $output ]]
}

# docketd as its unit runs it: ExecStart as the user docket, /run/docket made as
# RuntimeDirectory= makes it; only the TCP port is changed (port 0, read back).
start_packaged_docketd() {
    local exec
    exec=$(sed -n 's/^ExecStart=//p' "$INST/root/lib/systemd/system/docketd.service")
    install -d -m 0755 -o "$(in_root id -u docket)" -g "$(in_root id -g docket)" "$INST/root/run/docket"
    rm -f "$INST/root/var/lib/docket/docketd.port"
    # shellcheck disable=SC2086
    chroot --userspec=docket:docket "$INST/root" $exec --listen 127.0.0.1:0 \
        >>"$INST/docketd.log" 2>&1 &
    echo $! >"$INST/docketd.pid"
    for _ in $(seq 1 200); do
        [[ -s $INST/root/var/lib/docket/docketd.port ]] &&
            curl -sf -o /dev/null "http://127.0.0.1:$(cat "$INST/root/var/lib/docket/docketd.port")/healthz" &&
            return 0
        sleep 0.05
    done
    cat "$INST/docketd.log"
    return 1
}

stop_packaged_docketd() {
    local pid
    pid=$(cat "$INST/docketd.pid")
    kill -TERM "$pid"
    wait "$pid"
    rm -f "$INST/docketd.pid"
}

@test "docketd starts there from the packaged configuration as user docket; root is admin on its socket" {
    need_pkg
    need_root
    [[ -f $INST/root/usr/bin/docketd ]] || skip "runs after the install test"
    start_packaged_docketd
    [[ $(stat -c %u "$INST/root/var/lib/docket/docket.db") == "$(in_root id -u docket)" ]]
    [[ $(stat -c %a "$INST/root/var/lib/docket/admin.token") == 600 ]]
    [[ -S $INST/root/run/docket/docketd.sock ]]
    # the example policy of /etc/docket/policy.yaml was applied at first start
    run in_root docket projects --json
    [[ $status -eq 0 ]]
    [[ $(jq -r '[.projects[].name] | sort | join(",")' <<<"$output") == *explore*nlp*vision* ]]
    run in_root docket token join
    [[ $status -eq 0 && $output == *dkj_* ]]
    # the packaged docketd serves the built console, not the "console not built" page
    run curl -sf "http://127.0.0.1:$(cat "$INST/root/var/lib/docket/docketd.port")/"
    [[ $status -eq 0 && $output == *app.js* && $output != *"not built"* ]]
    stop_packaged_docketd
}

@test "back up the state online with sqlite3 (.backup, VACUUM INTO), restore it into the state directory" {
    need_pkg
    need_root
    [[ -f $INST/root/usr/bin/docketd ]] || skip "runs after the install test"
    start_packaged_docketd
    in_root docket token create --user before >/dev/null
    # online, while docketd runs and holds the database (WAL): docs/operations.md
    sqlite3 "$INST/root/var/lib/docket/docket.db" ".backup '$INST/backup.db'"
    sqlite3 "$INST/root/var/lib/docket/docket.db" "VACUUM INTO '$INST/vacuum.db'"
    for b in backup vacuum; do
        [[ $(sqlite3 "$INST/$b.db" "PRAGMA integrity_check") == ok ]]
        [[ ! -e $INST/$b.db-wal ]]
    done
    in_root docket token create --user after >/dev/null   # after the backup: lost by the restore
    [[ $(in_root docket token list --json | jq -r '[.tokens[].user] | join(",")') == *after* ]]
    stop_packaged_docketd
    # restore: docketd stopped, the database and its -wal/-shm replaced, keys kept
    rm -f "$INST"/root/var/lib/docket/docket.db{,-wal,-shm}
    install -m 0600 -o "$(in_root id -u docket)" -g "$(in_root id -g docket)" \
        "$INST/backup.db" "$INST/root/var/lib/docket/docket.db"
    start_packaged_docketd
    run in_root docket token list --json
    [[ $status -eq 0 ]]
    users=$(jq -r '[.tokens[].user] | join(",")' <<<"$output")
    [[ $users == *before* && $users != *after* ]]
    in_root docket audit --verify >/dev/null
    stop_packaged_docketd
}

@test "reinstall keeps conffile edits and the state; purge removes the logs, keeps the state and user" {
    need_pkg
    need_root
    [[ -f $INST/root/usr/bin/docketd ]] || skip "runs after the install test"
    echo "# edited" >>"$INST/root/etc/docket/docketd.yaml"
    run in_root env DEBIAN_FRONTEND=noninteractive dpkg -i --force-confold "/tmp/docketd_${VERSION}_amd64.deb"
    [[ $status -eq 0 ]] || { echo "$output"; false; }
    tail -n 1 "$INST/root/etc/docket/docketd.yaml" | grep -qx "# edited"
    [[ -f $INST/root/var/lib/docket/docket.db ]]
    run in_root dpkg --purge docket-node docketd
    [[ $status -eq 0 ]] || { echo "$output"; false; }
    [[ ! -e $INST/root/var/log/docket && ! -e $INST/root/usr/bin/docketd ]]
    [[ ! -e $INST/root/etc/docket/docketd.yaml ]]
    [[ -f $INST/root/var/lib/docket/docket.db ]]
    in_root getent passwd docket >/dev/null
}

teardown() {
    [[ -n ${T:-} ]] && cluster_stop
    return 0
}

# What `systemctl restart docket-node` does under KillMode=process: SIGTERM to the agent
# only, its supervisors left in place, then a new agent on the same state directory.
@test "SIGTERM to the agent alone, as systemctl restart sends it: the job runs on and is reported once" {
    cluster_start
    id=$("$DOCKET" submit --select zone=a --parsable -- sh -c "echo run >>$W/once; sleep 3; echo done")
    wait_for 20 state_in "$id" RUNNING
    pid=$(cat "$T/agent-a.pid")
    kill -TERM "$pid"
    wait "$pid" || true
    grep -q 'agent_stopping.*left running under their supervisors' "$T/agent-a.log"
    state_in "$id" RUNNING
    agent_start a "$("$DOCKET" token join)"
    wait_for 30 state_in "$id" COMPLETED FAILED NODE_FAIL
    [[ $(job_state "$id") == COMPLETED ]]
    [[ $(grep -c run "$W/once") == 1 ]]
}

# docs/operations.md "Back up and restore": the controller's database goes back to an
# earlier copy while the agents keep their state. Every job runs on one node, so its
# acknowledged command numbers and the job directories of the ids given out again are all
# ahead of the restored database; docketd numbers its commands above the agent's ack.
@test "restore under live agents: new jobs (their ids given again) run, a job the backup does not know is killed" {
    cluster_start
    for _ in 1 2 3; do "$DOCKET" submit --select zone=a --parsable -- true >/dev/null; done
    wait_for 30 bash -c "[[ \$('$DOCKET' history --json | jq '[.jobs[] | select(.state == \"COMPLETED\")] | length') == 3 ]]"
    sqlite3 "$T/ctl/docket.db" ".backup '$T/backup.db'"
    for _ in 1 2 3 4; do "$DOCKET" submit --select zone=a --parsable -- true >/dev/null; done
    long=$("$DOCKET" submit --select zone=a --parsable -- sh -c "echo \$\$ >$W/long.pid; sleep 1000")
    wait_for 30 state_in "$long" RUNNING
    wait_for 10 test -s "$W/long.pid"
    kill_pidfile "$T/ctl.pid"
    rm -f "$T"/ctl/docket.db{,-wal,-shm}
    cp "$T/backup.db" "$T/ctl/docket.db"
    ctl_start "$PORT"
    # the long job is not in the restored state: reconciliation kills it
    wait_for 30 bash -c "! kill -0 $(cat "$W/long.pid") 2>/dev/null"
    ids=()
    for _ in 1 2 3 4 5; do ids+=("$("$DOCKET" submit --select zone=a --parsable -- true)"); done
    [[ ${ids[0]} == 4 && ${ids[4]} == "$long" ]]   # ids after the backup are given out again
    for id in "${ids[@]}"; do wait_for 30 state_in "$id" COMPLETED; done
    grep -q 'node_ack_ahead' "$T/ctl.log"
}
