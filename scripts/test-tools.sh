#!/usr/bin/env bash
# The commands a test may call, as a directory of links: scripts/test-tools.sh DIR fills DIR
# with a link to every program that a fresh Debian 12 root has once scripts/install-deps.sh
# --test has run there, and to nothing else. The test runner (scripts/run-tests.sh) puts
# DIR alone on the system tests' PATH, so a test that calls a tool nobody installs (bc once
# was one) fails on every machine, not only on a fresh one.
#
# What a fresh root has: the packages of priority "required" (debootstrap's minbase), the
# packages install-deps.sh names (its --list-test output: crun, umoci and busybox-static
# for the container tests among them) and what they depend on
# (Depends and Pre-Depends; install-deps.sh installs without Recommends). node and npm
# installed some other way than by a package are kept where install-deps.sh accepts them.
# Prints the number of programs linked.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/test-tools.sh DIR}

mapfile -t declared < <(scripts/install-deps.sh --list-test)
required=$(dpkg-query -W -f='${Package} ${Priority}\n' | awk '$2 == "required" { print $1 }')
# the dependency closure, as package names (apt-cache prints alternatives and virtual
# packages too: only those installed here count, below)
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances "${declared[@]}" 2>/dev/null | grep -v '^ ' |
    tr -d '<>' | sed 's/:any$//')
installed=$(dpkg-query -W -f='${db:Status-Status} ${Package}\n' | awk '$1 == "installed" { print $2 }')

rm -rf "$dir"
mkdir -m 0755 -p "$dir" # jobs of other users run with it on their PATH
# every file of those packages in a bin directory, linked by its name (the first one wins,
# in the order of a login PATH)
sort -u <(printf '%s\n' $required "${declared[@]}" $closure) |
    comm -12 - <(sort -u <<<"$installed") |
    xargs -r dpkg-query -L 2>/dev/null |
    grep -E '^/(usr/)?(local/)?s?bin/[^/]+$' |
    awk -F/ '{ print ($2 == "usr" ? 1 : 2), $0 }' | sort -s -k1,1 | cut -d' ' -f2- |
    while read -r f; do
        name=${f##*/}
        if [[ -x $f && ! -e $dir/$name ]]; then ln -s "$f" "$dir/$name"; fi
    done
# names given by update-alternatives (awk -> mawk, which, cc ...): a link in a bin directory
# that resolves to a program linked above
for f in /usr/bin/* /usr/sbin/*; do
    name=${f##*/}
    [[ -L $f && ! -e $dir/$name ]] || continue
    real=$(readlink -f "$f")
    have=$dir/${real##*/}
    if [[ -e $have && $(readlink -f "$have") == "$real" ]]; then ln -s "$real" "$dir/$name"; fi
done
# node and npm from outside Debian's packages (install-deps.sh leaves them be)
for tool in node npm npx; do
    if [[ ! -e $dir/$tool ]] && p=$(command -v "$tool"); then ln -s "$p" "$dir/$tool"; fi
done
find "$dir" -maxdepth 1 -type l | wc -l
