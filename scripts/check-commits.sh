#!/usr/bin/env bash
# The commit style (CONTRIBUTING.md "Commits"), checked over every commit made since the
# rule began: a subject of at most 72 characters, then a blank line and a body that says
# why. Merge commits are not checked (their subjects are git's). The rule began after the
# commit named in scripts/commit-style.since; in a shallow clone that lacks it, the
# commits the clone has are checked. Exits non-zero naming each commit that breaks it.
# Usage: scripts/check-commits.sh [REV] (HEAD).
set -euo pipefail
cd "$(dirname "$0")/.."
head=${1:-HEAD}
git rev-parse --git-dir >/dev/null 2>&1 || { echo "check-commits: not a git checkout: nothing to check"; exit 0; }
since=$(tr -d ' \n' <scripts/commit-style.since)
if git cat-file -e "$since^{commit}" 2>/dev/null; then
    range="$since..$head"
else
    range=$head
fi
bad=0 n=0
while read -r c; do
    n=$((n + 1))
    subject=$(git log -1 --format=%s "$c")
    body=$(git log -1 --format=%b "$c" | grep -v '^\s*$' | grep -v -E '^[A-Za-z-]+: ' || true)
    blank=$(git log -1 --format=%B "$c" | sed -n 2p)
    if ((${#subject} > 72)); then
        echo "commit ${c:0:12}: subject of ${#subject} characters (at most 72): $subject"
        bad=$((bad + 1))
    fi
    if [[ -z $body ]]; then
        echo "commit ${c:0:12}: no body saying why: $subject"
        bad=$((bad + 1))
    elif [[ -n $blank ]]; then
        echo "commit ${c:0:12}: the subject is not followed by a blank line: $subject"
        bad=$((bad + 1))
    fi
done < <(git rev-list --no-merges "$range")
if ((bad)); then
    echo "check-commits: $bad problem(s) in $n commit(s); fix with git commit --amend or git rebase -i (CONTRIBUTING.md)"
    exit 1
fi
echo "check-commits: $n commit(s) since ${since:0:12}, every one with a short subject and a body"
