/*
 * backup.c - snapshots of docketd's SQLite database and the checks a copy must pass
 * before docketd runs on it (docs/operations.md "Back up and restore the state").
 *
 * store_backup_write makes one consistent copy of a live database on a read-only
 * connection of its own: VACUUM INTO reads everything inside one read transaction, and a
 * WAL reader never makes the writer wait, so docketd's loop keeps committing while the
 * copy is made (it only keeps the checkpointer from recycling the WAL past the snapshot).
 * store_backup_verify opens a copy that is nobody else's, makes it one self-contained
 * file (rollback journal: no -wal or -shm beside it), and runs PRAGMA integrity_check.
 *
 * This file is SQLite's alone: another engine has its own tool (pg_dump).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "store/store_int.h"

/* The progress handler: a non-zero return makes the running statement fail with
 * SQLITE_INTERRUPT, which is how another thread stops a long VACUUM INTO. */
static int cancelled(void *arg)
{
    const atomic_bool *cancel = arg;
    return cancel && atomic_load(cancel);
}

static int one_int(sqlite3 *db, const char *sql, int *out)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    int rc = sqlite3_step(s) == SQLITE_ROW ? 0 : -EIO;
    if (rc == 0)
        *out = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return rc;
}

/* PRAGMA integrity_check's first line into msg: "ok" when the file is sound. */
static int integrity(sqlite3 *db, char *msg, size_t len)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check(10)", -1, &s, NULL) != SQLITE_OK) {
        snprintf(msg, len, "%s", sqlite3_errmsg(db));
        return -EINVAL;
    }
    int rc = sqlite3_step(s);
    const unsigned char *t = rc == SQLITE_ROW ? sqlite3_column_text(s, 0) : NULL;
    snprintf(msg, len, "%s", t ? (const char *)t : sqlite3_errmsg(db));
    bool ok = t && strcmp((const char *)t, "ok") == 0;
    sqlite3_finalize(s); /* (t is gone with it) */
    return ok ? 0 : -EINVAL;
}

static int verify(const char *path, const atomic_bool *cancel, struct store_backup_info *out,
                  char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    char msg[256];
    int rc = -EINVAL, v = -1, tables = 0;
    struct stat sb;
    if (stat(path, &sb) < 0) {
        snprintf(err, errlen, "'%s': %s", path, strerror(errno));
        return -errno;
    }
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "'%s': cannot open: %s", path,
                 db ? sqlite3_errmsg(db) : "out of memory");
        goto out;
    }
    sqlite3_progress_handler(db, 1000, cancelled, (void *)cancel);
    /* a copy made from a WAL database says WAL in its header; as its own rollback-journal
     * file it is whole without a -wal beside it (docketd switches it back at open) */
    if (sqlite3_exec(db, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "'%s': not a readable SQLite database: %s", path, sqlite3_errmsg(db));
        goto out;
    }
    if (integrity(db, msg, sizeof(msg)) < 0) {
        snprintf(err, errlen, "'%s': damaged (integrity_check: %s)", path, msg);
        goto out;
    }
    if (one_int(db, "PRAGMA user_version", &v) < 0 ||
        one_int(db,
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table'"
                " AND name IN ('jobs', 'counters', 'audit')",
                &tables) < 0 ||
        v < 1 || tables != 3) {
        snprintf(err, errlen, "'%s': a sound SQLite file, but not a docketd database", path);
        goto out;
    }
    if (v > store_schema_latest()) {
        snprintf(err, errlen,
                 "'%s': schema version %d is newer than this build's (%d): restore it with "
                 "the docketd that made it, or a newer one",
                 path, v, store_schema_latest());
        rc = -EPROTO;
        goto out;
    }
    out->schema = v;
    rc = 0;
out:
    sqlite3_close(db);
    if (rc == 0 && stat(path, &sb) == 0)
        out->bytes = (int64_t)sb.st_size;
    return rc;
}

int store_backup_verify(const char *path, struct store_backup_info *out, char *err, size_t errlen)
{
    return verify(path, NULL, out, err, errlen);
}

int store_backup_write(const char *db_path, const char *dest, const atomic_bool *cancel,
                       struct store_backup_info *out, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    int rc = -EIO;
    /* VACUUM INTO wants a file that is missing or empty; made here so it is 0600 (it
     * holds token hashes, secrets sealed with docketd's key and the audit trail) */
    int fd = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create '%s': %s", dest, strerror(errno));
        return -errno;
    }
    close(fd);
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "cannot open '%s' read-only: %s", db_path,
                 db ? sqlite3_errmsg(db) : "out of memory");
        goto out;
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_progress_handler(db, 1000, cancelled, (void *)cancel);
    if (sqlite3_prepare_v2(db, "VACUUM INTO ?1", -1, &s, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "backup: %s", sqlite3_errmsg(db));
        goto out;
    }
    sqlite3_bind_text(s, 1, dest, -1, SQLITE_STATIC);
    int step = sqlite3_step(s);
    if (step != SQLITE_DONE) {
        rc = step == SQLITE_INTERRUPT ? -ECANCELED : -EIO;
        snprintf(err, errlen, "backup of '%s': %s", db_path,
                 rc == -ECANCELED ? "stopped" : sqlite3_errmsg(db));
        goto out;
    }
    sqlite3_finalize(s);
    s = NULL;
    sqlite3_close(db);
    db = NULL;
    if (cancelled((void *)cancel)) {
        snprintf(err, errlen, "backup of '%s': stopped", db_path);
        rc = -ECANCELED;
        goto out;
    }
    rc = verify(dest, cancel, out, err, errlen);
    if (rc < 0 && cancelled((void *)cancel))
        rc = -ECANCELED;
out:
    sqlite3_finalize(s);
    sqlite3_close(db);
    if (rc < 0)
        (void)unlink(dest);
    return rc;
}
