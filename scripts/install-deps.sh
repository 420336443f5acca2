#!/usr/bin/env bash
# Install the Debian packages Docket needs to build, test and run, when they are missing.
# As root it uses apt-get; otherwise it prints the command to run. Usage:
#   scripts/install-deps.sh          build + run dependencies
#   scripts/install-deps.sh --test   also what the test suite needs (git for the commit
#                                    style check and the package tests' copy of the tree,
#                                    cmocka, bats and GNU parallel, which runs bats files
#                                    side by side, clang, jq,
#                                    libtsan2 for the ThreadSanitizer build of scripts/run-tsan.sh,
#                                    python3 for the core floor check and the page checks,
#                                    postgresql for the store's tests on PostgreSQL
#                                    (scripts/pg-test.sh: a throwaway cluster per run),
#                                    chromium for the browser tests: the console, the sim pages,
#                                    and the packaging tools below: tests/system/install.bats),
#                                    e2fsprogs, util-linux and mount for the storage tests'
#                                    loop-mounted ext4 images (mkfs.ext4, losetup, mount),
#                                    crun, umoci, skopeo and busybox-static for the container
#                                    tests (tests/system/containers.bats: images built here
#                                    from busybox with umoci, run by crun; no network)
#   scripts/install-deps.sh --package   the packaging tools only: dpkg-buildpackage with
#                                    debhelper, lintian, systemd-analyze, logrotate, debootstrap
#   scripts/install-deps.sh --list-test  print what --test installs, a package a line, and
#                                    install nothing (scripts/test-tools.sh reads it: the
#                                    system tests may call only what these packages bring)
# Node.js and npm build the web console (console/, docs/console.md): Debian's nodejs and
# npm are added only when no node and npm are on PATH already (a newer node, installed
# some other way, is kept).
set -euo pipefail

build_pkgs=(build-essential pkg-config meson ninja-build
            libevent-dev libsqlite3-dev libpq-dev libjansson-dev libyaml-dev libssl-dev
            libcurl4-openssl-dev libbpf-dev zlib1g-dev curl jq)
test_pkgs=(git libcmocka-dev bats parallel clang libclang-rt-14-dev libtsan2 clang-format sqlite3 bsdutils procps psmisc iproute2 nftables iperf3 python3
           postgresql chromium haproxy e2fsprogs util-linux mount
           crun umoci skopeo busybox-static)
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    build_pkgs+=(nodejs npm)
fi
package_pkgs=(dpkg-dev debhelper fakeroot lintian systemd logrotate debootstrap)

want=("${build_pkgs[@]}")
case "${1:-}" in
--test) want+=("${test_pkgs[@]}" "${package_pkgs[@]}") ;;
--package) want+=("${package_pkgs[@]}") ;;
--list-test)
    printf '%s\n' "${build_pkgs[@]}" "${test_pkgs[@]}" "${package_pkgs[@]}"
    exit 0
    ;;
esac

missing=()
for p in "${want[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi

echo "docket: installing missing packages: ${missing[*]}" >&2
if [[ $(id -u) -ne 0 ]]; then
    echo "docket: not root; run this first:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/docket-apt.log 2>&1; then
    apt-get update >/tmp/docket-apt.log 2>&1
    apt-get install -y --no-install-recommends "${missing[@]}" >>/tmp/docket-apt.log 2>&1 || {
        echo "docket: apt-get failed; see /tmp/docket-apt.log" >&2
        exit 1
    }
fi
