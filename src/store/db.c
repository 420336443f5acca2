/*
 * db.c - the statement layer's front (db.h): which engine a target opens, the calls
 * passed on to that engine's table, and the tables each statement reads and writes (read
 * from its SQL here, once, at prepare) with the clock of each table's last write.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

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
    db_touch_all(db); /* DDL, several statements: not read here */
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

/* ---- tables */

/* The bit of table `name` (len bytes), registered on first sight. */
static uint64_t table_bit(struct db *db, const char *name, size_t len)
{
    for (int i = 0; i < db->ntables; i++)
        if (strlen(db->tables[i]) == len && strncasecmp(db->tables[i], name, len) == 0)
            return 1ULL << i;
    if (db->ntables == DB_MAX_TABLES || len >= DB_TABLE_NAME)
        return 1ULL << DB_MAX_TABLES;
    memcpy(db->tables[db->ntables], name, len);
    db->tables[db->ntables][len] = '\0';
    return 1ULL << db->ntables++;
}

static bool ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Whether SQL word `w` starts at p (a whole word, any case). */
static bool word_at(const char *sql, const char *p, const char *w)
{
    size_t n = strlen(w);
    return (p == sql || !ident_char(p[-1])) && strncasecmp(p, w, n) == 0 && !ident_char(p[n]);
}

/* The table named after p's word and blanks (a quoted name keeps its quotes out). */
static uint64_t table_after(struct db *db, const char *p)
{
    while (ident_char(*p))
        p++;
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '"')
        p++;
    size_t n = 0;
    while (ident_char(p[n]))
        n++;
    return n && !isdigit((unsigned char)p[0]) ? table_bit(db, p, n) : 0;
}

/* What `sql` reads (every table after FROM or JOIN) and writes (INSERT INTO, REPLACE
 * INTO, UPDATE, DELETE FROM: the table named after the first keyword's INTO or FROM);
 * ROLLBACK, whole or to a savepoint, writes every table. Quoted strings are skipped. */
static void scan_tables(struct db *db, const char *sql, uint64_t *reads, uint64_t *writes)
{
    const char *p = sql;
    while (*p == ' ' || *p == '\n' || *p == '\t')
        p++;
    const char *first = p;
    *reads = *writes = 0;
    if (word_at(sql, first, "ROLLBACK")) {
        *writes = ~0ULL;
        return;
    }
    bool ins = word_at(sql, first, "INSERT") || word_at(sql, first, "REPLACE");
    bool upd = word_at(sql, first, "UPDATE"), del = word_at(sql, first, "DELETE");
    if (upd)
        *writes = table_after(db, first);
    for (char quote = 0; *p; p++) {
        if (quote) {
            quote = *p == quote ? 0 : quote;
            continue;
        }
        if (*p == '\'') {
            quote = *p;
            continue;
        }
        bool from = word_at(sql, p, "FROM"), join = word_at(sql, p, "JOIN");
        if (ins && !*writes && word_at(sql, p, "INTO"))
            *writes = table_after(db, p);
        else if (del && !*writes && from)
            *writes = table_after(db, p);
        else if (from || join)
            *reads |= table_after(db, p);
    }
}

uint64_t db_stmt_reads(const struct db_stmt *s)
{
    return s->reads;
}

uint64_t db_write_clock(const struct db *db)
{
    return db->clock;
}

bool db_unchanged_since(const struct db *db, uint64_t tables, uint64_t clock)
{
    for (int i = 0; i <= DB_MAX_TABLES; i++)
        if ((tables >> i & 1) && db->written[i] > clock)
            return false;
    return true;
}

static void note_write(struct db *db, uint64_t tables)
{
    db->clock++;
    for (int i = 0; i <= DB_MAX_TABLES; i++)
        if (tables >> i & 1)
            db->written[i] = db->clock;
}

void db_touch_all(struct db *db)
{
    note_write(db, ~0ULL);
}

uint64_t db_table_bit(struct db *db, const char *name)
{
    return table_bit(db, name, strlen(name));
}

int db_prepare(struct db *db, const char *sql, bool persistent, struct db_stmt **out)
{
    int rc = db->ops->prepare(db, sql, persistent, out);
    if (rc == 0)
        scan_tables(db, sql, &(*out)->reads, &(*out)->writes);
    return rc;
}

void db_mark_blind(struct db_stmt *s)
{
    if (s && s->db->ops->mark_blind)
        s->db->ops->mark_blind(s);
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
    if (s->writes)
        note_write(s->db, s->writes);
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
