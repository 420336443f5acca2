#!/usr/bin/env bash
# Writes debian/changelog, which dpkg-buildpackage reads for the packages' version, from
# meson.build's version (scripts/version.sh), so that the version is written in one place.
# What each version brought is in NEWS.md. The date is the last commit's, so two builds
# of one commit write the same file. Usage: scripts/debian-changelog.sh [TREE] (this tree;
# tests/system/install.bats passes its copy). `make deb` runs it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tree=${1:-$here}
version=$("$here/scripts/version.sh")
at=$(git -C "$here" log -1 --format=%at 2>/dev/null || true)
when=$(LC_ALL=C date -R ${at:+-d "@$at"})
cat >"$tree/debian/changelog" <<CHANGELOG
docket ($version) unstable; urgency=medium

  * Docket $version: docket, docketd and docket-node, with systemd units,
    logrotate and /etc/docket configuration; NEWS.md says what it brought.

 -- Docket developers <docket-dev@example.org>  $when
CHANGELOG
