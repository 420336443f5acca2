/*
 * db_sqlite.c - the statement layer on SQLite (db.h): a connection in WAL mode with
 * synchronous = FULL, and the few functions PostgreSQL has built in that the store's
 * portable SQL uses (greatest, least and strpos, as SQLite functions here). Statements
 * map one to one onto SQLite's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/db_sqlite.h"

struct sqlite_db {
    struct db base;
    sqlite3 *h;
    char errmsg[256]; /* db_exec's, which SQLite does not keep */
    bool own_msg;
};

struct sqlite_stmt {
    struct db_stmt base;
    sqlite3_stmt *h;
};

static struct sqlite_db *conn(struct db *db)
{
    return (struct sqlite_db *)db;
}

static sqlite3_stmt *stmt(struct db_stmt *s)
{
    return ((struct sqlite_stmt *)s)->h;
}

sqlite3 *db_sqlite_handle(struct db *db)
{
    return conn(db)->h;
}

static void s_close(struct db *db)
{
    sqlite3_close(conn(db)->h);
    free(db);
}

static const char *s_errmsg(struct db *db)
{
    struct sqlite_db *c = conn(db);
    return c->own_msg ? c->errmsg : sqlite3_errmsg(c->h);
}

static int s_exec(struct db *db, const char *sql)
{
    struct sqlite_db *c = conn(db);
    char *msg = NULL;
    c->own_msg = false;
    if (sqlite3_exec(c->h, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    snprintf(c->errmsg, sizeof(c->errmsg), "%s", msg ? msg : "sqlite error");
    c->own_msg = true;
    sqlite3_free(msg);
    return -EIO;
}

static int64_t s_changes(struct db *db)
{
    return sqlite3_changes(conn(db)->h);
}

static bool s_in_tx(struct db *db)
{
    return !sqlite3_get_autocommit(conn(db)->h);
}

static int s_prepare(struct db *db, const char *sql, bool persistent, struct db_stmt **out)
{
    struct sqlite_db *c = conn(db);
    struct sqlite_stmt *s = calloc(1, sizeof(*s));
    *out = NULL;
    c->own_msg = false;
    if (!s) {
        snprintf(c->errmsg, sizeof(c->errmsg), "out of memory");
        c->own_msg = true;
        return -EIO;
    }
    if (sqlite3_prepare_v3(c->h, sql, -1, persistent ? SQLITE_PREPARE_PERSISTENT : 0, &s->h,
                           NULL) != SQLITE_OK) {
        free(s);
        return -EIO;
    }
    s->base.db = db;
    *out = &s->base;
    return 0;
}

static void s_finalize(struct db_stmt *s)
{
    sqlite3_finalize(stmt(s));
    free(s);
}

static void s_reset(struct db_stmt *s)
{
    sqlite3_reset(stmt(s));
}

static void s_clear_bindings(struct db_stmt *s)
{
    sqlite3_clear_bindings(stmt(s));
}

static int s_step(struct db_stmt *s)
{
    conn(s->db)->own_msg = false;
    int rc = sqlite3_step(stmt(s));
    return rc == SQLITE_ROW ? DB_ROW : rc == SQLITE_DONE ? DB_DONE : DB_ERROR;
}

static void s_bind_int64(struct db_stmt *s, int i, int64_t v)
{
    sqlite3_bind_int64(stmt(s), i, v);
}

static void s_bind_text(struct db_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(stmt(s), i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(stmt(s), i);
}

static void s_bind_blob(struct db_stmt *s, int i, const void *v, size_t n)
{
    sqlite3_bind_blob64(stmt(s), i, v, n, SQLITE_STATIC);
}

static void s_bind_null(struct db_stmt *s, int i)
{
    sqlite3_bind_null(stmt(s), i);
}

static int64_t s_column_int64(struct db_stmt *s, int i)
{
    return sqlite3_column_int64(stmt(s), i);
}

static const char *s_column_text(struct db_stmt *s, int i)
{
    return (const char *)sqlite3_column_text(stmt(s), i);
}

static const void *s_column_blob(struct db_stmt *s, int i)
{
    return sqlite3_column_blob(stmt(s), i);
}

static size_t s_column_bytes(struct db_stmt *s, int i)
{
    return (size_t)sqlite3_column_bytes(stmt(s), i);
}

static bool s_column_is_null(struct db_stmt *s, int i)
{
    return sqlite3_column_type(stmt(s), i) == SQLITE_NULL;
}

static const struct db_ops sqlite_ops = {
    .close = s_close,
    .errmsg = s_errmsg,
    .exec = s_exec,
    .changes = s_changes,
    .in_tx = s_in_tx,
    .prepare = s_prepare,
    .finalize = s_finalize,
    .reset = s_reset,
    .clear_bindings = s_clear_bindings,
    .step = s_step,
    .bind_int64 = s_bind_int64,
    .bind_text = s_bind_text,
    .bind_blob = s_bind_blob,
    .bind_null = s_bind_null,
    .column_int64 = s_column_int64,
    .column_text = s_column_text,
    .column_blob = s_column_blob,
    .column_bytes = s_column_bytes,
    .column_is_null = s_column_is_null,
};

/* greatest(a, b, ...) and least(...), as PostgreSQL's: NULLs are ignored (NULL if all
 * are); integers compare as integers, anything else as SQLite compares values. */
static void pick(sqlite3_context *ctx, int argc, sqlite3_value **argv, int sign)
{
    sqlite3_value *best = NULL;
    for (int i = 0; i < argc; i++) {
        if (sqlite3_value_type(argv[i]) == SQLITE_NULL)
            continue;
        if (!best) {
            best = argv[i];
            continue;
        }
        double a = sqlite3_value_double(argv[i]), b = sqlite3_value_double(best);
        bool ints = sqlite3_value_type(argv[i]) == SQLITE_INTEGER &&
                    sqlite3_value_type(best) == SQLITE_INTEGER;
        int cmp = ints ? (sqlite3_value_int64(argv[i]) > sqlite3_value_int64(best)) -
                             (sqlite3_value_int64(argv[i]) < sqlite3_value_int64(best))
                       : (a > b) - (a < b);
        if (cmp * sign > 0)
            best = argv[i];
    }
    if (best)
        sqlite3_result_value(ctx, best);
    else
        sqlite3_result_null(ctx);
}

static void fn_greatest(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    pick(ctx, argc, argv, 1);
}

static void fn_least(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    pick(ctx, argc, argv, -1);
}

/* strpos(haystack, needle): PostgreSQL's name of SQLite's instr (1-based, 0 if absent). */
static void fn_strpos(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *h = (const char *)sqlite3_value_text(argv[0]);
    const char *n = (const char *)sqlite3_value_text(argv[1]);
    if (!h || !n) {
        sqlite3_result_null(ctx);
        return;
    }
    const char *p = strstr(h, n);
    int64_t pos = 0;
    if (p) /* in characters, as instr counts them: UTF-8 continuation bytes do not count */
        for (const char *q = h; q <= p; q++)
            pos += ((unsigned char)*q & 0xC0) != 0x80;
    sqlite3_result_int64(ctx, pos);
}

static int add_functions(sqlite3 *h)
{
    const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
    if (sqlite3_create_function(h, "greatest", -1, flags, NULL, fn_greatest, NULL, NULL) !=
            SQLITE_OK ||
        sqlite3_create_function(h, "least", -1, flags, NULL, fn_least, NULL, NULL) != SQLITE_OK ||
        sqlite3_create_function(h, "strpos", 2, flags, NULL, fn_strpos, NULL, NULL) != SQLITE_OK)
        return -EIO;
    return 0;
}

/* The database holds token hashes, env and audit: readable by docketd's user only. SQLite
 * gives the -wal and -shm files the mode of the database when it creates them, so the
 * database is created 0600 before SQLite opens it (and an older one is narrowed). */
static void restrict_mode(const char *path)
{
    static const char *const sfx[] = {"", "-wal", "-shm"};
    char p[4096];
    if (!path[0] || path[0] == ':' || strncmp(path, "file:", 5) == 0)
        return; /* in memory, or a URI: nothing of ours on disk */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++)
        if (snprintf(p, sizeof(p), "%s%s", path, sfx[i]) < (int)sizeof(p))
            (void)chmod(p, 0600);
}

struct db *db_sqlite_open(const char *path, bool readonly, char *err, size_t errlen)
{
    struct sqlite_db *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->base = (struct db){.ops = &sqlite_ops, .engine = DB_SQLITE};
    if (!readonly)
        restrict_mode(path);
    int flags = SQLITE_OPEN_NOMUTEX |
                (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    if (sqlite3_open_v2(path, &c->h, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open '%s'%s: %s", path, readonly ? " read-only" : "",
                 c->h ? sqlite3_errmsg(c->h) : "out of memory");
        s_close(&c->base);
        return NULL;
    }
    sqlite3_busy_timeout(c->h, 5000);
    if (add_functions(c->h) < 0 ||
        (!readonly && (s_exec(&c->base, "PRAGMA journal_mode = WAL") < 0 ||
                       s_exec(&c->base, "PRAGMA synchronous = FULL") < 0 ||
                       s_exec(&c->base, "PRAGMA foreign_keys = ON") < 0))) {
        snprintf(err, errlen, "'%s': %s", path, s_errmsg(&c->base));
        s_close(&c->base);
        return NULL;
    }
    return &c->base;
}
