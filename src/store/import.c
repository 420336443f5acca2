/*
 * import.c - a SQLite database copied into an empty PostgreSQL one (store.h
 * store_import_sqlite; `docketd --db postgresql://... --import-sqlite FILE`, the one way a
 * site moves to PostgreSQL: docs/operations.md "PostgreSQL"). Every table of the SQLite
 * schema, row by row, columns by name and by SQLite's declared type (INTEGER, BLOB, the
 * rest as text), in one transaction: all of it or nothing. The identities PostgreSQL
 * assigns (event, alert and silence ids) continue after the copied rows.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"
#include "util/dbuf.h"
#include "util/str.h"

enum { IMPORT_MAX_COLS = 64 };
enum col_kind { COL_INT, COL_TEXT, COL_BLOB };

struct table {
    char name[64];
    int ncols;
    char cols[IMPORT_MAX_COLS][64];
    enum col_kind kind[IMPORT_MAX_COLS];
};

/* The columns of `t->name` in the source, with the kind their declared type gives. */
static int read_columns(struct store *src, struct table *t)
{
    struct db_stmt *s;
    if (store_prepare(src, "SELECT name, upper(type) FROM pragma_table_info(?1) ORDER BY cid", &s) <
        0)
        return -EIO;
    db_bind_text(s, 1, t->name);
    int rc;
    t->ncols = 0;
    while ((rc = db_step(s)) == DB_ROW && t->ncols < IMPORT_MAX_COLS) {
        const char *type = db_column_text(s, 1);
        str_copy(t->cols[t->ncols], sizeof(t->cols[0]), db_column_text(s, 0));
        t->kind[t->ncols] = !type                       ? COL_TEXT
                            : strstr(type, "INT")       ? COL_INT
                            : strcmp(type, "BLOB") == 0 ? COL_BLOB
                                                        : COL_TEXT;
        t->ncols++;
    }
    rc = rc == DB_ROW || rc == DB_DONE ? 0 : store_fail(src, "read columns");
    db_finalize(s);
    return rc;
}

/* Copy one value of the current source row to parameter i+1 of the insert. */
static void copy_value(struct db_stmt *from, struct db_stmt *to, int i, enum col_kind k)
{
    if (db_column_is_null(from, i))
        db_bind_null(to, i + 1);
    else if (k == COL_INT)
        db_bind_int64(to, i + 1, db_column_int64(from, i));
    else if (k == COL_BLOB)
        db_bind_blob(to, i + 1, db_column_blob(from, i), db_column_bytes(from, i));
    else
        db_bind_text(to, i + 1, db_column_text(from, i));
}

/* Build "SELECT c1, ... FROM t" and "INSERT INTO t(c1, ...) VALUES (?1, ...)". */
static int statements(const struct table *t, struct dbuf *sel, struct dbuf *ins)
{
    dbuf_puts(sel, "SELECT ");
    dbuf_printf(ins, "INSERT INTO %s(", t->name);
    for (int i = 0; i < t->ncols; i++) {
        dbuf_printf(sel, "%s%s", i ? ", " : "", t->cols[i]);
        dbuf_printf(ins, "%s%s", i ? ", " : "", t->cols[i]);
    }
    dbuf_printf(sel, " FROM %s", t->name);
    dbuf_puts(ins, ") VALUES (");
    for (int i = 0; i < t->ncols; i++)
        dbuf_printf(ins, "%s?%d", i ? ", " : "", i + 1);
    dbuf_puts(ins, ")");
    return sel->failed || ins->failed ? -ENOMEM : 0;
}

static int copy_table(struct store *src, struct store *dst, struct table *t, int64_t *rows)
{
    struct dbuf sel, ins;
    struct db_stmt *from = NULL, *to = NULL;
    int rc = read_columns(src, t);
    if (rc < 0)
        return rc;
    dbuf_init(&sel, 1024);
    dbuf_init(&ins, 1024);
    rc = statements(t, &sel, &ins);
    if (rc == 0 && store_prepare(src, sel.data, &from) < 0)
        rc = -EIO;
    if (rc == 0 && db_prepare(store_db(dst), ins.data, true, &to) < 0)
        rc = store_fail(dst, "prepare import");
    int step = DB_DONE;
    while (rc == 0 && (step = db_step(from)) == DB_ROW) {
        for (int i = 0; i < t->ncols; i++)
            copy_value(from, to, i, t->kind[i]);
        if (db_step(to) != DB_DONE) {
            char m[96];
            snprintf(m, sizeof(m), "import %s", t->name);
            rc = store_fail(dst, m);
        }
        db_reset(to);
        db_clear_bindings(to);
        (*rows)++;
    }
    if (rc == 0 && step != DB_DONE)
        rc = store_fail(src, "read source");
    db_finalize(from);
    db_finalize(to);
    dbuf_release(&sel);
    dbuf_release(&ins);
    return rc;
}

/* The names of the source's tables (SQLite's own left out). */
static int source_tables(struct store *src, struct table *out, int max, int *n)
{
    struct db_stmt *s;
    if (store_prepare(src,
                      "SELECT name FROM sqlite_master WHERE type = 'table'"
                      " AND name NOT LIKE 'sqlite%' ORDER BY name",
                      &s) < 0)
        return -EIO;
    int rc;
    *n = 0;
    while ((rc = db_step(s)) == DB_ROW && *n < max)
        str_copy(out[(*n)++].name, sizeof(out[0].name), db_column_text(s, 0));
    rc = rc == DB_ROW || rc == DB_DONE ? 0 : store_fail(src, "list tables");
    db_finalize(s);
    return rc;
}

/* PostgreSQL's identities continue after the ids the copied rows brought. */
static int advance_identities(struct store *dst)
{
    static const char *const tables[] = {"job_events", "alert_history", "alert_silences"};
    char sql[256];
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        snprintf(sql, sizeof(sql),
                 "SELECT setval(pg_get_serial_sequence('%s', 'id'),"
                 " coalesce((SELECT max(id) FROM %s), 0) + 1, false)",
                 tables[i], tables[i]);
        if (store_exec(dst, sql) < 0)
            return -EIO;
    }
    return 0;
}

/* Refuse a destination that holds state already: an import never merges. */
static int check_empty(struct store *dst)
{
    struct db_stmt *s;
    if (store_prepare(dst,
                      "SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM counters)"
                      " + (SELECT count(*) FROM tokens) + (SELECT count(*) FROM nodes)",
                      &s) < 0)
        return -EIO;
    int64_t n = db_step(s) == DB_ROW ? db_column_int64(s, 0) : -1;
    db_finalize(s);
    if (n < 0)
        return store_fail(dst, "check empty");
    if (n > 0) {
        store_set_errmsg(dst, "the PostgreSQL database holds state already: an import needs an"
                              " empty one");
        return -EEXIST;
    }
    return 0;
}

int store_import_sqlite(struct store *dst, const char *path, struct store_import_stats *stats,
                        char *err, size_t errlen)
{
    static struct table tables[64];
    int n = 0, rc;
    memset(stats, 0, sizeof(*stats));
    if (db_engine(store_db(dst)) != DB_POSTGRES) {
        snprintf(err, errlen,
                 "--import-sqlite copies into a PostgreSQL database (--db postgresql://...)");
        return -EINVAL;
    }
    if (db_target_is_postgres(path)) {
        snprintf(err, errlen, "'%s': the source is a SQLite file", path);
        return -EINVAL;
    }
    /* opened as docketd opens it: migrated to this build's schema first */
    struct store *src = store_open(path, err, errlen);
    if (!src)
        return -EIO;
    if ((rc = check_empty(dst)) == 0 && (rc = source_tables(src, tables, 64, &n)) == 0 &&
        (rc = store_begin(dst)) == 0) {
        for (int i = 0; rc == 0 && i < n; i++) {
            rc = copy_table(src, dst, &tables[i], &stats->rows);
            if (rc == 0)
                stats->tables++;
        }
        if (rc == 0)
            rc = advance_identities(dst);
        rc = rc == 0 ? store_commit(dst) : (store_rollback(dst), rc);
    }
    if (rc < 0)
        snprintf(err, errlen, "%s", store_errmsg(dst)[0] ? store_errmsg(dst) : store_errmsg(src));
    store_close(src);
    return rc;
}
