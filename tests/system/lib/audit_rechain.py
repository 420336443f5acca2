#!/usr/bin/env python3
"""audit_rechain.py DB ID ACTOR: what someone with docketd's database file (and docketd
stopped) can do to hide a change, for seams_budget.bats: set the actor of audit row ID,
then rebuild every row's prev_hash and hash from the first row on, the way docketd
computes them (src/store/audit.c: SHA-256 over each field as LENGTH:BYTES, (NULL as "-,")
and the previous hash), so the trail is a valid chain again. The triggers that refuse
UPDATE are dropped first, as such a person would.
"""
import hashlib
import sqlite3
import sys

GENESIS = "0" * 64


def field(v):
    if v is None:
        return b"-,"
    b = str(v).encode()
    return str(len(b)).encode() + b":" + b + b","


def main():
    db, row, actor = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    con = sqlite3.connect(db)
    con.execute("DROP TRIGGER IF EXISTS audit_no_update")
    con.execute("DROP TRIGGER IF EXISTS audit_no_delete")
    con.execute("UPDATE audit SET actor = ? WHERE id = ?", (actor, row))
    prev = GENESIS
    rows = con.execute("SELECT id, time_ms, actor, action, target, before_doc, after_doc,"
                       " reason FROM audit ORDER BY id").fetchall()
    for r in rows:
        d = hashlib.sha256()
        for v in r[:5]:
            d.update(field(v if v is not None else ""))
        d.update(field(r[5]))
        d.update(field(r[6]))
        d.update(field(r[7] if r[7] is not None else ""))
        d.update(field(prev))
        h = d.hexdigest()
        con.execute("UPDATE audit SET prev_hash = ?, hash = ? WHERE id = ?", (prev, h, r[0]))
        prev = h
    con.commit()
    print(len(rows))


if __name__ == "__main__":
    main()
