#!/usr/bin/env bash
# Prints Docket's version, read from the one place it is written: the version of
# meson.build's project(). For scripts and tests that have no build to ask (`docketd
# --version` prints the same, compiled in as DOCKET_VERSION).
set -euo pipefail
cd "$(dirname "$0")/.."
v=$(sed -n "/^project(/,/)/ s/^ *version *: *'\([^']*\)'.*/\1/p" meson.build)
[[ -n $v ]] || { echo "version.sh: no version in meson.build's project()" >&2; exit 1; }
echo "$v"
