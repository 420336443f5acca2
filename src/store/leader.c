/*
 * leader.c - which docketd leads a PostgreSQL database (store.h "Leadership"). The leader
 * holds a session-level advisory lock on its connection, so the lock goes with it when
 * its process or its session dies, and raises a fencing epoch in docket_leader when it
 * takes over; every commit of a leader checks, inside its transaction, that the epoch is
 * still its own (the row read FOR SHARE: a takeover's raise waits for that commit), so a
 * deposed leader's late write is refused, whatever its connection did meanwhile. The
 * table is the control plane's, outside the versioned schema. SQLite has no standby.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/db.h"
#include "store/store_int.h"
#include "util/str.h"

/* The advisory lock's key (the migrations use 7243453, "docket"). */

static int need_postgres(struct store *st)
{
    if (db_engine(store_db(st)) == DB_POSTGRES)
        return 0;
    store_set_errmsg(st, "leadership needs PostgreSQL: a SQLite database has one docketd");
    return -ENOTSUP;
}

/* A query of one row and one integer column. */
static int one_int(struct store *st, const char *sql, const char *what, int64_t *out)
{
    struct db_stmt *s;
    if (db_prepare(store_db(st), sql, false, &s) < 0)
        return store_fail(st, what);
    int rc = db_step(s);
    if (rc == DB_ROW)
        *out = db_column_int64(s, 0);
    db_finalize(s);
    return rc == DB_ROW ? 0 : rc == DB_DONE ? -ENOENT : store_fail(st, what);
}

/* The table, made once by this store (a standby reads it each second). */
static int make_table(struct store *st)
{
    if (st->leader_table)
        return 0;
    int rc = store_exec(st, "BEGIN;"
                            "SELECT pg_advisory_xact_lock(7243453);"
                            "CREATE TABLE IF NOT EXISTS docket_leader (id BIGINT PRIMARY KEY"
                            " CHECK (id = 1), epoch BIGINT NOT NULL, holder TEXT NOT NULL,"
                            " url TEXT NOT NULL, since_ms BIGINT NOT NULL);"
                            "COMMIT;");
    st->leader_table = rc == 0;
    return rc;
}

int store_leader_try(struct store *st, const char *holder, const char *url, int64_t now_ms,
                     bool *leading)
{
    int64_t got = 0, epoch = 0;
    int rc;
    *leading = false;
    if ((rc = need_postgres(st)) < 0 || (rc = make_table(st)) < 0)
        return rc;
    if ((rc = one_int(st, "SELECT pg_try_advisory_lock(" STORE_LEADER_LOCK_KEY ")::int",
                      "take the leader's lock", &got)) < 0)
        return rc;
    if (!got)
        return 0;
    struct db_stmt *s;
    if (db_prepare(store_db(st),
                   "INSERT INTO docket_leader (id, epoch, holder, url, since_ms)"
                   " VALUES (1, 1, ?1, ?2, ?3) ON CONFLICT (id) DO UPDATE SET"
                   " epoch = docket_leader.epoch + 1, holder = excluded.holder,"
                   " url = excluded.url, since_ms = excluded.since_ms RETURNING epoch",
                   false, &s) < 0)
        return store_fail(st, "raise the leader's epoch");
    db_bind_text(s, 1, holder);
    db_bind_text(s, 2, url);
    db_bind_int64(s, 3, now_ms);
    rc = db_step(s);
    if (rc == DB_ROW)
        epoch = db_column_int64(s, 0);
    db_finalize(s);
    if (rc != DB_ROW)
        return store_fail(st, "raise the leader's epoch");
    db_touch_all(store_db(st)); /* another docketd wrote until now: nothing read stands */
    st->leader_epoch = epoch;
    *leading = true;
    return 0;
}

int store_leader_get(struct store *st, struct store_leader *out)
{
    int rc;
    memset(out, 0, sizeof(*out));
    if ((rc = need_postgres(st)) < 0 || (rc = make_table(st)) < 0)
        return rc;
    struct db_stmt *s;
    if (db_prepare(store_db(st),
                   "SELECT epoch, holder, url, since_ms FROM docket_leader WHERE id = 1", false,
                   &s) < 0)
        return store_fail(st, "read the leader");
    rc = db_step(s);
    if (rc == DB_ROW) {
        out->epoch = db_column_int64(s, 0);
        str_copy(out->holder, sizeof(out->holder), db_column_text(s, 1));
        str_copy(out->url, sizeof(out->url), db_column_text(s, 2));
        out->since_ms = db_column_int64(s, 3);
    }
    db_finalize(s);
    return rc == DB_ROW ? 0 : rc == DB_DONE ? -ENOENT : store_fail(st, "read the leader");
}

/* The epoch check inside a transaction (store_commit): 0, -ESTALE when another docketd
 * has taken over since. */
int store_leader_fence(struct store *st)
{
    if (st->leader_epoch <= 0)
        return 0;
    int64_t epoch = 0;
    int rc = one_int(st, "SELECT epoch FROM docket_leader WHERE id = 1 FOR SHARE",
                     "check the leader's epoch", &epoch);
    if (rc < 0 && rc != -ENOENT)
        return rc;
    if (rc == 0 && epoch == st->leader_epoch)
        return 0;
    char m[160];
    snprintf(m, sizeof(m), "deposed: another docketd leads this database (epoch %lld, ours %lld)",
             (long long)epoch, (long long)st->leader_epoch);
    store_set_errmsg(st, m);
    return -ESTALE;
}

int store_leader_check(struct store *st)
{
    int64_t held = 0;
    int rc = one_int(st,
                     "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 0"
                     " AND objid = " STORE_LEADER_LOCK_KEY " AND objsubid = 1"
                     " AND pid = pg_backend_pid() AND granted",
                     "look at the leader's lock", &held);
    if (rc < 0)
        return rc;
    if (!held) { /* the session was lost and made anew: take the lock again, if free */
        if ((rc = one_int(st, "SELECT pg_try_advisory_lock(" STORE_LEADER_LOCK_KEY ")::int",
                          "take the leader's lock", &held)) < 0)
            return rc;
        if (!held) {
            store_set_errmsg(st, "deposed: another docketd holds the leader's lock");
            return -ESTALE;
        }
    }
    return store_leader_fence(st);
}
