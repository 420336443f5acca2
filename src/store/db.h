/*
 * db.h - the statement layer under the store (src/store/ only; not a public API): one
 * connection and its prepared statements, whatever the engine (db_sqlite.c: SQLite;
 * db_pg.c: PostgreSQL through libpq). The store's SQL is written once with `?N`
 * placeholders; an engine translates what it must. What differs between the engines and
 * cannot be hidden here is asked for by name (db_engine) and kept in few places.
 *
 * The calls mirror SQLite's own: prepare, bind (1-based), step (DB_ROW, DB_DONE or
 * DB_ERROR, the message then in db_errmsg), column (0-based, valid until the next step or
 * reset), reset, finalize. Binding a parameter the statement lacks does nothing.
 */
#ifndef DOCKET_STORE_DB_H
#define DOCKET_STORE_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct db;
struct db_stmt;

enum db_engine { DB_SQLITE, DB_POSTGRES };
enum { DB_ERROR = -1, DB_DONE = 0, DB_ROW = 1 };

/* Open `target`: a postgresql:// or postgres:// URI opens PostgreSQL, anything else is a
 * SQLite file (created unless read-only). NULL with the reason in err. */
struct db *db_open(const char *target, bool readonly, char *err, size_t errlen);
/* Whether `target` names a PostgreSQL database. */
bool db_target_is_postgres(const char *target);
void db_close(struct db *db);

enum db_engine db_engine(const struct db *db);
const char *db_errmsg(struct db *db);
/* Run SQL that returns no rows (several statements allowed): 0, or -EIO. */
int db_exec(struct db *db, const char *sql);
/* Rows changed by the last INSERT, UPDATE or DELETE run on this connection. */
int64_t db_changes(struct db *db);
/* Whether the connection is inside a transaction right now (the engine's own view: after
 * some errors it has rolled back by itself). */
bool db_in_tx(struct db *db);

/* Prepare `sql`; `persistent`: kept for the connection's life (prepared on the server
 * where there is one). 0, or -EIO with db_errmsg set. */
int db_prepare(struct db *db, const char *sql, bool persistent, struct db_stmt **out);
/* Mark a persistent write statement blind: its caller reads nothing of it but whether it
 * failed, not even db_changes. Inside a transaction an engine with round trips
 * (PostgreSQL) may then send it later, in one pipeline with the next statement that needs
 * an answer; a blind write that fails fails that statement and every one after it but a
 * whole ROLLBACK (never ROLLBACK TO, which would undo a request that was told it
 * succeeded), so the transaction can only end rolled back. SQLite runs it at once. */
void db_mark_blind(struct db_stmt *s);

/* ---- what each statement reads and writes (read from its SQL at prepare, so no caller
 * lists it by hand), and when each table was last written: a cache of a statement's rows
 * is still true while db_unchanged_since(its reads, the clock when it was filled). A
 * write counts when it is stepped, whether or not it succeeds; ROLLBACK (to a savepoint
 * or whole), db_exec and a new connection count as writing every table. */
uint64_t db_stmt_reads(const struct db_stmt *s);
uint64_t db_write_clock(const struct db *db);
bool db_unchanged_since(const struct db *db, uint64_t tables, uint64_t clock);
/* Count every table written now (e.g. a connection made again after the server left). */
void db_touch_all(struct db *db);
/* The bit of table `name` in the masks above (a name not seen yet gets one). */
uint64_t db_table_bit(struct db *db, const char *name);
void db_finalize(struct db_stmt *s);
void db_reset(struct db_stmt *s);
void db_clear_bindings(struct db_stmt *s);
int db_step(struct db_stmt *s);

void db_bind_int64(struct db_stmt *s, int i, int64_t v);
/* Text (copied, or borrowed until the step), NULL binds NULL. */
void db_bind_text(struct db_stmt *s, int i, const char *v);
void db_bind_blob(struct db_stmt *s, int i, const void *v, size_t n);
void db_bind_null(struct db_stmt *s, int i);

int64_t db_column_int64(struct db_stmt *s, int i);
static inline int db_column_int(struct db_stmt *s, int i)
{
    return (int)db_column_int64(s, i);
}
/* NULL for SQL NULL. */
const char *db_column_text(struct db_stmt *s, int i);
const void *db_column_blob(struct db_stmt *s, int i);
size_t db_column_bytes(struct db_stmt *s, int i);
bool db_column_is_null(struct db_stmt *s, int i);

/* ---- the engines' tables (db.c dispatches through them) */
struct db_ops {
    void (*close)(struct db *db);
    const char *(*errmsg)(struct db *db);
    int (*exec)(struct db *db, const char *sql);
    int64_t (*changes)(struct db *db);
    bool (*in_tx)(struct db *db);
    int (*prepare)(struct db *db, const char *sql, bool persistent, struct db_stmt **out);
    void (*mark_blind)(struct db_stmt *s); /* NULL: blind writes run at once */
    void (*finalize)(struct db_stmt *s);
    void (*reset)(struct db_stmt *s);
    void (*clear_bindings)(struct db_stmt *s);
    int (*step)(struct db_stmt *s);
    void (*bind_int64)(struct db_stmt *s, int i, int64_t v);
    void (*bind_text)(struct db_stmt *s, int i, const char *v);
    void (*bind_blob)(struct db_stmt *s, int i, const void *v, size_t n);
    void (*bind_null)(struct db_stmt *s, int i);
    int64_t (*column_int64)(struct db_stmt *s, int i);
    const char *(*column_text)(struct db_stmt *s, int i);
    const void *(*column_blob)(struct db_stmt *s, int i);
    size_t (*column_bytes)(struct db_stmt *s, int i);
    bool (*column_is_null)(struct db_stmt *s, int i);
};

enum { DB_MAX_TABLES = 63, DB_TABLE_NAME = 40 };

/* Every engine's connection and statement start with these. Tables are bits, in the order
 * the connection first met them; bit DB_MAX_TABLES stands for every table past the 63rd. */
struct db {
    const struct db_ops *ops;
    enum db_engine engine;
    uint64_t clock;                            /* writes counted so far */
    uint64_t written[DB_MAX_TABLES + 1];       /* the clock at each table's last write */
    char tables[DB_MAX_TABLES][DB_TABLE_NAME]; /* bit i's table */
    int ntables;
    /* PostgreSQL: when the server this connection reached started (µs since the epoch),
     * read at each connection made; 0 for SQLite */
    int64_t server_started;
};
struct db_stmt {
    struct db *db;
    uint64_t reads, writes; /* table bits */
};

struct db *db_sqlite_open(const char *path, bool readonly, char *err, size_t errlen);
struct db *db_pg_open(const char *uri, bool readonly, char *err, size_t errlen);

#endif
