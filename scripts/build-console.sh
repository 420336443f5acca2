#!/usr/bin/env bash
# build-console.sh - build the web console into console/dist: `npm ci` (from
# console/package-lock.json, only when the lockfile changed since the last install) and
# `npm run build` (esbuild; only when a source is newer than dist). Offline once npm ci
# has run. make, make demo and make test run it before ninja; docketd embeds console/dist
# at build time (console/meson.build). Without node and npm it says so and leaves dist
# alone: docketd then serves a "console not built" page (docs/console.md).
set -euo pipefail
cd "$(dirname "$0")/../console"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "console: node and npm not found: docketd is built without the web console" \
        "(scripts/install-deps.sh installs them)" >&2
    exit 0
fi
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi
if [[ ! -f dist/index.html ]] ||
    [[ -n $(find src build.mjs package-lock.json -newer dist/index.html -print -quit) ]]; then
    npm run --silent build >/dev/null
fi
