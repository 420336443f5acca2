#!/usr/bin/env bash
# The floors of the scheduling core (docs/architecture.md "Inside the core"): each file of
# src/core/ has a floor, and a file may call (or take the address of) a non-static function
# defined in another file, or include that file's header (foo.c's is foo.h), only when that
# file is on a lower floor, or on the same floor through an edge listed in SAME_FLOOR below
# (those edges must form no cycle). A header obeys the rule of its file; the shared headers
# (SHARED: the model's types, the public interface) may include only each other and floor
# 0's. Exits non-zero and names each call and each include that goes the wrong way, each
# file without a floor, each listed file that is gone, and each header of src/core/ that is
# neither a file's nor listed in SHARED. Usage: scripts/check-core-floors.sh [DIR] (src/core).
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "${1:-src/core}" <<'PY'
import os, re, sys

FLOORS = {
    # 0: containers and the policy as data; know nothing of the model
    "containers.c": 0, "policy.c": 0, "constraint.c": 0,
    # 1: the model and its indexes; own every invariant sched_check() walks
    "model.c": 1, "group.c": 1, "deadlines.c": 1, "changes.c": 1, "shapes.c": 1,
    "nodes.c": 1, "avail.c": 1, "victims.c": 1, "queue.c": 1, "claims.c": 1,
    "lifecycle.c": 1, "caches.c": 1, "topo.c": 1, "warm.c": 1,
    "arrays.c": 1,
    # 2: the policy pieces; change the model only through floor 1
    "admit.c": 2, "order.c": 2, "place.c": 2, "reserve.c": 2, "preempt.c": 2, "memo.c": 2,
    # 3: the cycle and the entry points
    "cycle.c": 3, "jobs.c": 3, "explain.c": 3, "cluster.c": 3,
    # 4: sched_check() walks every floor
    "check.c": 4,
}

# Calls between files of one floor: caller -> callees. No cycles.
SAME_FLOOR = {
    "policy.c": ["containers.c"],
    "deadlines.c": ["model.c"],
    "changes.c": ["model.c"],
    "shapes.c": ["model.c", "victims.c", "topo.c"],
    "nodes.c": ["model.c", "topo.c", "changes.c"],
    "avail.c": ["model.c", "changes.c"],
    "victims.c": ["model.c", "changes.c", "deadlines.c"],
    "queue.c": ["model.c", "deadlines.c", "shapes.c", "victims.c"],
    "claims.c": ["model.c", "avail.c", "changes.c"],
    "lifecycle.c": ["model.c", "group.c", "deadlines.c", "shapes.c", "nodes.c", "avail.c",
                    "victims.c", "queue.c", "claims.c", "arrays.c"],
    "memo.c": ["preempt.c"],
    "cluster.c": ["jobs.c"],
}

# Headers that are no single file's: any file of the core may include them.
SHARED = {"types.h", "sched.h"}

# Known exceptions: (caller, callee file, function) that go the wrong way for now.
EXCEPTIONS = set()

d = sys.argv[1]
bad = []

def strip(t):
    t = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), t, flags=re.S)
    t = re.sub(r"//[^\n]*", "", t)
    t = re.sub(r'"(\\.|[^"\\\n])*"', '""', t)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", t)

present = sorted(f for f in os.listdir(d) if f.endswith(".c"))
for f in present:
    if f not in FLOORS:
        bad.append(f"{f}: no floor (add it to FLOORS in {sys.argv[0]})")
for f in FLOORS:
    if f not in present:
        bad.append(f"{f}: listed in FLOORS but not in {d}")
for a, bs in SAME_FLOOR.items():
    for b in bs:
        if FLOORS.get(a) != FLOORS.get(b):
            bad.append(f"SAME_FLOOR {a} -> {b}: not on one floor")

# the listed edges form no cycle
state = {}
def visit(f, path):
    state[f] = 1
    for g in SAME_FLOOR.get(f, []):
        if state.get(g) == 1:
            bad.append("SAME_FLOOR cycle: " + " -> ".join(path + [f, g]))
        elif not state.get(g):
            visit(g, path + [f])
    state[f] = 2
for f in SAME_FLOOR:
    if not state.get(f):
        visit(f, [])

src, defined = {}, {}
for f in present:
    if f not in FLOORS:
        continue
    t = strip(open(os.path.join(d, f), encoding="utf-8").read())
    src[f] = t
    for m in re.finditer(r"^([A-Za-z_][^;{}()#]*?)\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{", t, re.M):
        if not re.match(r"\s*static\b", m.group(1)):
            defined[m.group(2)] = f

# The includes: a file's (or header's) include of another file's header follows the call
# rule; a shared header includes only shared headers and floor 0's.
headers = sorted(f for f in os.listdir(d) if f.endswith(".h"))
for h in headers:
    if h not in SHARED and h[:-2] + ".c" not in present:
        bad.append(f"{d}/{h}: no file {h[:-2]}.c and not in SHARED: whose header is it?")

def floor_of(g):
    """The floor of a file of the core or of its header; None for a shared header."""
    return None if g in SHARED else FLOORS.get(g[:-2] + ".c")

def include_bad(g, h):
    """What is wrong with g (a .c or .h of the core) including header h, or None."""
    f = h[:-2] + ".c"
    if h in SHARED or f == g[:-2] + ".c":
        return None
    if h not in headers:
        return f"includes {h}: no such header in {d}"
    if f not in FLOORS:
        return None  # a header of no file: reported above
    mine, theirs = floor_of(g), FLOORS[f]
    if g in SHARED:
        way = None if theirs == 0 else "only floor 0's headers"
        mine = "a shared header"
    elif mine is None:
        return None  # a file without a floor: reported above
    elif theirs < mine or f in SAME_FLOOR.get(g[:-2] + ".c", []):
        return None
    else:
        way = "up" if theirs > mine else "across (not in SAME_FLOOR)"
        mine = f"floor {mine}"
    return way and f"includes {h} of {f} (floor {theirs}) from {mine}: {way}"

for g in present + headers:
    if g.endswith(".c") and g not in FLOORS:
        continue
    lines = open(os.path.join(d, g), encoding="utf-8").read().split("\n")
    for i, l in enumerate(lines):
        m = re.match(r'\s*#\s*include\s+"(?:core/)?([\w.-]+\.h)"', l)
        why = m and include_bad(g, m.group(1))
        if why:
            bad.append(f"{d}/{g}:{i + 1}: {why}")

used = set()
for g, t in src.items():
    names = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", t)) | set(re.findall(r"[(,=&]\s*([A-Za-z_]\w*)\b", t))
    for name in sorted(names):
        f = defined.get(name)
        if not f or f == g or (g, f, name) in EXCEPTIONS:
            continue
        if f in SAME_FLOOR.get(g, []):
            used.add((g, f))
        if FLOORS[f] < FLOORS[g] or f in SAME_FLOOR.get(g, []):
            continue
        line = next(i + 1 for i, l in enumerate(t.split("\n")) if re.search(r"\b" + name + r"\b", l))
        way = "up" if FLOORS[f] > FLOORS[g] else "across (not in SAME_FLOOR)"
        bad.append(f"{d}/{g}:{line}: {name}() of {f} (floor {FLOORS[f]}) from floor {FLOORS[g]}: {way}")

for a, bs in SAME_FLOOR.items():
    for b in bs:
        if a in src and (a, b) not in used:
            bad.append(f"SAME_FLOOR {a} -> {b}: no such call (drop the edge)")
for b in bad:
    print(b)
if bad:
    print(f"core floors: {len(bad)} problem(s) (docs/architecture.md \"Inside the core\")")
    sys.exit(1)
print(f"core floors: {len(src)} files, {len(headers)} headers, no call or include goes up")
PY
