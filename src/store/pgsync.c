/*
 * pgsync.c - the pipelined group commit on PostgreSQL (store.h store_set_external_sync):
 * docketd's connection commits with synchronous_commit = off, so COMMIT returns once the
 * transaction is in the server's WAL, not on its disk, and the loop goes on building the
 * next transaction; the sync thread then makes the WAL durable on a connection of its own
 * with a transaction that takes a transaction id and commits synchronously. PostgreSQL
 * writes and flushes its WAL in order, so that flush covers every commit that returned
 * before it began (what SQLite's fdatasync of the WAL is for docketd on a file).
 *
 * A server that crashes loses the commits it had not flushed. Each connection knows when
 * its server started (db.h server_started); the commits a sync covers are all of one
 * server's life (store_commit notes it, store_sync_mark hands it to the next sync), and a
 * sync on a server that started since fails: docketd stops and reloads what survived,
 * having acknowledged none of what did not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>

#include "store/db.h"
#include "store/store.h"
#include "store/store_int.h"

int store_pg_set_external_sync(struct store *st)
{
    char err[256];
    if (st->sync_db)
        return 0;
    if (!st->uri) {
        store_set_errmsg(st, "out of memory");
        return -ENOMEM;
    }
    st->sync_db = db_open(st->uri, false, err, sizeof(err));
    if (!st->sync_db) {
        store_set_errmsg(st, err);
        return -EIO;
    }
    if (store_exec(st, "SET synchronous_commit = off") < 0) {
        db_close(st->sync_db);
        st->sync_db = NULL;
        return -EIO;
    }
    return 0;
}

void store_pg_committed(struct store *st)
{
    if (!st->sync_db)
        return;
    int64_t life = st->db->server_started;
    if (st->unsynced_life == 0)
        st->unsynced_life = life;
    else if (st->unsynced_life != life)
        st->unsynced_life = -1; /* commits on two servers' lives: the older may be lost */
}

void store_sync_mark(struct store *st)
{
    atomic_store(&st->sync_expect, st->unsynced_life);
    st->unsynced_life = 0;
}

/* One synchronous commit on the sync connection; the start of the server that made it. */
static int flush_wal(struct db *db, int64_t *life, char *err, size_t errlen)
{
    struct db_stmt *s = NULL;
    int rc = db_exec(db, "BEGIN");
    if (rc == 0 && (rc = db_prepare(db, "SELECT txid_current()", false, &s)) == 0)
        rc = db_step(s) == DB_ROW ? 0 : -EIO;
    db_finalize(s);
    *life = db->server_started; /* read after the statement: a new connection's, if one */
    if (rc == 0)
        rc = db_exec(db, "COMMIT");
    if (rc < 0) {
        snprintf(err, errlen, "flush PostgreSQL's WAL: %s", db_errmsg(db));
        (void)db_exec(db, "ROLLBACK");
    }
    return rc < 0 ? -EIO : 0;
}

int store_pg_sync(struct store *st)
{
    int64_t expect = atomic_load(&st->sync_expect), life = 0;
    char err[512];
    if (!st->sync_db)
        return 0; /* synchronous_commit = on still: COMMIT was durable already */
    if (flush_wal(st->sync_db, &life, err, sizeof(err)) < 0) {
        snprintf(st->sync_err, sizeof(st->sync_err), "%s", err);
        return -EIO;
    }
    if (expect != 0 && expect != life) {
        snprintf(st->sync_err, sizeof(st->sync_err),
                 "PostgreSQL restarted before the last commits were on its disk: they may be "
                 "lost");
        return -EIO;
    }
    return 0;
}
