#!/usr/bin/env bash
# The C sources under src/, tests/ and bench/ must be as .clang-format writes them:
# `clang-format --dry-run --Werror` on each; prints every file that differs (with the first
# lines of the difference) and exits non-zero. scripts/run-tests.sh runs it as one test.
# Fix with: clang-format -i FILE.
#
# NOT_YET lists the files still to be reformatted by the engineers who own them and are
# changing them now (reformatting under them would collide with their work); each run
# says they were not checked. Remove an entry once its file is formatted.
set -uo pipefail
cd "$(dirname "$0")/.."
NOT_YET=()

command -v clang-format >/dev/null || {
    echo "clang-format is not installed (apt-get install clang-format)"; exit 1; }
bad=0 checked=0 skipped=()
while IFS= read -r f; do
    skip=
    for p in "${NOT_YET[@]}"; do
        [[ $f == "$p"* ]] && skip=1
    done
    if [[ -n $skip ]]; then
        skipped+=("$f")
        continue
    fi
    checked=$((checked + 1))
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "not formatted: $f"
        clang-format "$f" | diff -u "$f" - | sed -n '3,14p'
        bad=$((bad + 1))
    fi
done < <(find src tests bench -name '*.[ch]' | sort)
echo "format: $checked files checked, $bad not formatted; ${#skipped[@]} not checked yet (${NOT_YET[*]})"
[[ $bad -eq 0 ]]
