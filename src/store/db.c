/*
 * db.c - the statement layer's front (db.h): which engine a target opens, and the calls
 * passed on to that engine's table.
 */
#include <string.h>

#include "store/db.h"

bool db_target_is_postgres(const char *target)
{
    return strncmp(target, "postgresql://", 13) == 0 || strncmp(target, "postgres://", 11) == 0;
}

struct db *db_open(const char *target, bool readonly, char *err, size_t errlen)
{
    if (db_target_is_postgres(target))
        return db_pg_open(target, readonly, err, errlen);
    return db_sqlite_open(target, readonly, err, errlen);
}

void db_close(struct db *db)
{
    if (db)
        db->ops->close(db);
}

enum db_engine db_engine(const struct db *db)
{
    return db->engine;
}

const char *db_errmsg(struct db *db)
{
    return db->ops->errmsg(db);
}

int db_exec(struct db *db, const char *sql)
{
    return db->ops->exec(db, sql);
}

int64_t db_changes(struct db *db)
{
    return db->ops->changes(db);
}

bool db_in_tx(struct db *db)
{
    return db->ops->in_tx(db);
}

int db_prepare(struct db *db, const char *sql, bool persistent, struct db_stmt **out)
{
    return db->ops->prepare(db, sql, persistent, out);
}

void db_finalize(struct db_stmt *s)
{
    if (s)
        s->db->ops->finalize(s);
}

void db_reset(struct db_stmt *s)
{
    s->db->ops->reset(s);
}

void db_clear_bindings(struct db_stmt *s)
{
    s->db->ops->clear_bindings(s);
}

int db_step(struct db_stmt *s)
{
    return s->db->ops->step(s);
}

void db_bind_int64(struct db_stmt *s, int i, int64_t v)
{
    s->db->ops->bind_int64(s, i, v);
}

void db_bind_text(struct db_stmt *s, int i, const char *v)
{
    s->db->ops->bind_text(s, i, v);
}

void db_bind_blob(struct db_stmt *s, int i, const void *v, size_t n)
{
    s->db->ops->bind_blob(s, i, v, n);
}

void db_bind_null(struct db_stmt *s, int i)
{
    s->db->ops->bind_null(s, i);
}

int64_t db_column_int64(struct db_stmt *s, int i)
{
    return s->db->ops->column_int64(s, i);
}

const char *db_column_text(struct db_stmt *s, int i)
{
    return s->db->ops->column_text(s, i);
}

const void *db_column_blob(struct db_stmt *s, int i)
{
    return s->db->ops->column_blob(s, i);
}

size_t db_column_bytes(struct db_stmt *s, int i)
{
    return s->db->ops->column_bytes(s, i);
}

bool db_column_is_null(struct db_stmt *s, int i)
{
    return s->db->ops->column_is_null(s, i);
}
