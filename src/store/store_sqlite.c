/*
 * store_sqlite.c - the store's parts that only SQLite has (store.h "WAL", "Checkpoints"):
 * the -wal file and its sync, the WAL and update hooks, and the checkpoint connection
 * (ckpt.c's thread runs it). On a PostgreSQL store these say so and do nothing: its
 * COMMIT is durable by itself and there is no WAL of ours to copy back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/db_sqlite.h"
#include "store/store.h"
#include "store/store_int.h"

static bool is_sqlite(struct store *st)
{
    return db_engine(st->db) == DB_SQLITE;
}

void store_job_written(struct store *st, uint64_t id)
{
    if (st->job_write_fn && !is_sqlite(st)) /* SQLite's update hook saw it already */
        st->job_write_fn(st->job_write_arg, id);
}

void store_sqlite_opened(struct store *st, const char *path)
{
    char wal[4096];
    snprintf(wal, sizeof(wal), "%s-wal", path);
    st->wal_fd = open(wal, O_RDONLY | O_CLOEXEC); /* exists once WAL mode wrote (migrations) */
}

int store_set_external_sync(struct store *st)
{
    if (!is_sqlite(st))
        return store_pg_set_external_sync(st);
    if (st->wal_fd < 0) {
        snprintf(st->errmsg, sizeof(st->errmsg), "no WAL file to sync");
        return -ENOENT;
    }
    return store_exec(st, "PRAGMA synchronous = NORMAL");
}

/* The WAL hook: called in COMMIT (on the thread of `st`) with the frames the WAL holds.
 * Installing it also removes SQLite's own hook, the automatic checkpoint. */
static int wal_hook(void *arg, sqlite3 *h, const char *name, int frames)
{
    (void)h;
    (void)name;
    struct store *st = arg;
    atomic_store_explicit(&st->wal_frames, frames, memory_order_relaxed);
    return SQLITE_OK;
}

/* SQLite's update hook: every row change of a rowid table on this connection, with the
 * row's rowid. In `jobs`, `job_specs` and `arrays_writing` the rowid is the job's, the
 * spec's and the array's id (INTEGER PRIMARY KEY). */
static void update_hook(void *arg, int op, const char *db, const char *table, sqlite3_int64 rowid)
{
    (void)op;
    (void)db;
    struct store *st = arg;
    if (strcmp(table, "jobs") == 0 || strcmp(table, "job_specs") == 0 ||
        strcmp(table, "arrays_writing") == 0)
        st->job_write_fn(st->job_write_arg, (uint64_t)rowid);
}

void store_set_job_write_hook(struct store *st, void (*fn)(void *arg, uint64_t id), void *arg)
{
    st->job_write_fn = fn; /* PostgreSQL: called by store_job_written */
    st->job_write_arg = arg;
    if (is_sqlite(st))
        sqlite3_update_hook(db_sqlite_handle(st->db), fn ? update_hook : NULL, fn ? st : NULL);
}

int store_set_external_checkpoint(struct store *st)
{
    if (!is_sqlite(st)) {
        store_set_errmsg(st, "checkpoints are SQLite's");
        return -ENOTSUP;
    }
    if (store_exec(st, "PRAGMA wal_autocheckpoint = 0") < 0)
        return -EIO;
    sqlite3_wal_hook(db_sqlite_handle(st->db), wal_hook, st);
    return 0;
}

int store_wal_autocheckpoint(struct store *st)
{
    struct db_stmt *s;
    int v = -1;
    if (!is_sqlite(st) || db_prepare(st->db, "PRAGMA wal_autocheckpoint", false, &s) < 0)
        return -EIO;
    if (db_step(s) == DB_ROW)
        v = db_column_int(s, 0);
    db_finalize(s);
    return v;
}

int store_wal_frames(const struct store *st)
{
    return atomic_load_explicit(&st->wal_frames, memory_order_relaxed);
}

const char *store_path(struct store *st)
{
    if (!is_sqlite(st))
        return st->target;
    const char *p = sqlite3_db_filename(db_sqlite_handle(st->db), "main");
    return p ? p : "";
}

struct store_ckpt {
    sqlite3 *db;
    char errmsg[256];
};

struct store_ckpt *store_ckpt_open(const char *path, char *err, size_t errlen)
{
    struct store_ckpt *k = calloc(1, sizeof(*k));
    if (!k) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!sqlite3_threadsafe()) { /* Debian's is 1 (serialized); NOMUTEX makes it per connection */
        snprintf(err, errlen, "SQLite was built without threads (SQLITE_THREADSAFE=0)");
        free(k);
        return NULL;
    }
    /* no CREATE: the database exists (store_open made it); synchronous stays FULL, so
     * each checkpoint syncs the WAL before copying it and the database after */
    if (sqlite3_open_v2(path, &k->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "cannot open '%s' for checkpoints: %s", path,
                 k->db ? sqlite3_errmsg(k->db) : "out of memory");
        store_ckpt_close(k);
        return NULL;
    }
    /* read once, so the connection has the WAL open (a checkpoint on one that has not
     * read yet does nothing), and check it is in WAL mode */
    sqlite3_busy_timeout(k->db, 5000);
    sqlite3_stmt *s = NULL;
    const unsigned char *mode = NULL;
    if (sqlite3_prepare_v2(k->db, "PRAGMA journal_mode", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        mode = sqlite3_column_text(s, 0);
    bool wal = mode && strcmp((const char *)mode, "wal") == 0;
    sqlite3_finalize(s);
    if (!wal ||
        sqlite3_exec(k->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "'%s' for checkpoints: %s", path,
                 wal ? sqlite3_errmsg(k->db) : "not in WAL mode");
        store_ckpt_close(k);
        return NULL;
    }
    sqlite3_busy_timeout(k->db, 0);
    return k;
}

int store_ckpt_run(struct store_ckpt *k, enum store_ckpt_mode mode, int busy_ms,
                   struct store_ckpt_result *out)
{
    int nlog = -1, nckpt = -1;
    sqlite3_busy_timeout(k->db, mode == STORE_CKPT_PASSIVE ? 0 : busy_ms);
    int rc = sqlite3_wal_checkpoint_v2(k->db, NULL,
                                       mode == STORE_CKPT_PASSIVE ? SQLITE_CHECKPOINT_PASSIVE
                                                                  : SQLITE_CHECKPOINT_TRUNCATE,
                                       &nlog, &nckpt);
    if (out)
        *out = (struct store_ckpt_result){nlog, nckpt};
    if (rc == SQLITE_BUSY)
        return -EBUSY;
    if (rc != SQLITE_OK) {
        snprintf(k->errmsg, sizeof(k->errmsg), "checkpoint: %s", sqlite3_errmsg(k->db));
        return -EIO;
    }
    return 0;
}

const char *store_ckpt_errmsg(struct store_ckpt *k)
{
    return k->errmsg;
}

void store_ckpt_close(struct store_ckpt *k)
{
    if (!k)
        return;
    sqlite3_close(k->db);
    free(k);
}

int store_sync(struct store *st)
{
    if (!is_sqlite(st))
        return store_pg_sync(st);
    if (st->wal_fd < 0)
        return 0; /* synchronous=FULL still: COMMIT synced already */
    if (fdatasync(st->wal_fd) == 0)
        return 0;
    int e = errno;
    snprintf(st->sync_err, sizeof(st->sync_err), "fdatasync of the WAL: %s", strerror(e));
    return -e;
}

const char *store_sync_errmsg(struct store *st)
{
    return st->sync_err;
}
