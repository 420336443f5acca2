/* fixture.h - the store unit tests' fixture: a fresh database per test (setup), removed
 * after it (teardown); reopen closes and opens it again (what survives a restart). The
 * database is a SQLite file in a temporary directory, or, when DOCKET_TEST_PG_DSN names a
 * PostgreSQL database (tests/unit/store/with-pg.sh starts one), that database emptied
 * first (its schema dropped and made again). fx_pg says which; fx_sql runs SQL on the
 * database with a connection of its own, whichever it is. Include once per program. */
#ifndef DOCKET_TESTS_STORE_FIXTURE_H
#define DOCKET_TESTS_STORE_FIXTURE_H

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "store/store.h"

struct fx {
    char dir[64];
    char path[512]; /* the SQLite file, or the PostgreSQL DSN */
    struct store *st;
};

static bool fx_pg(const struct fx *f)
{
    return f->dir[0] == '\0';
}

/* Run `sql` on the database; 0, or -1 with the engine's message in err. The first column
 * of the first row goes to out[len] when out is given ("" when there is none). */
static int fx_sql(const struct fx *f, const char *sql, char *out, size_t len, char *err,
                  size_t errlen)
{
    int rc = 0;
    if (out && len)
        out[0] = '\0';
    if (fx_pg(f)) {
        PGconn *c = PQconnectdb(f->path);
        PGresult *r = PQexec(c, sql);
        ExecStatusType s = PQresultStatus(r);
        if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
            snprintf(err, errlen, "%s", PQerrorMessage(c));
            rc = -1;
        } else if (out && s == PGRES_TUPLES_OK && PQntuples(r) > 0) {
            snprintf(out, len, "%s", PQgetvalue(r, 0, 0));
        }
        PQclear(r);
        PQfinish(c);
        return rc;
    }
    sqlite3 *db;
    sqlite3_stmt *s = NULL;
    if (sqlite3_open(f->path, &db) != SQLITE_OK) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(db));
        sqlite3_close(db);
        return -1;
    }
    if (out) {
        if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
            snprintf(err, errlen, "%s", sqlite3_errmsg(db));
            rc = -1;
        } else if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
            snprintf(out, len, "%s", (const char *)sqlite3_column_text(s, 0));
        }
        sqlite3_finalize(s);
    } else {
        char *msg = NULL;
        if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
            snprintf(err, errlen, "%s", msg ? msg : "sqlite error");
            rc = -1;
        }
        sqlite3_free(msg);
    }
    sqlite3_close(db);
    return rc;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char err[256];
    const char *dsn = getenv("DOCKET_TEST_PG_DSN");
    if (!f)
        return -1;
    if (dsn && dsn[0]) {
        snprintf(f->path, sizeof(f->path), "%s", dsn);
        if (fx_sql(f,
                   "SET client_min_messages = warning;"
                   " DROP SCHEMA public CASCADE; CREATE SCHEMA public",
                   NULL, 0, err, sizeof(err)) < 0) {
            fprintf(stderr, "%s\n", err);
            return -1;
        }
    } else {
        snprintf(f->dir, sizeof(f->dir), "/tmp/store-test.XXXXXX");
        if (!mkdtemp(f->dir))
            return -1;
        snprintf(f->path, sizeof(f->path), "%s/docket.db", f->dir);
    }
    f->st = store_open(f->path, err, sizeof(err));
    if (!f->st) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    char p[600];
    store_close(f->st);
    if (!fx_pg(f)) {
        const char *suffix[] = {"", "-wal", "-shm"};
        for (int i = 0; i < 3; i++) {
            snprintf(p, sizeof(p), "%s%s", f->path, suffix[i]);
            unlink(p);
        }
        rmdir(f->dir);
    }
    free(f);
    return 0;
}

#endif
