/*
 * store_int.h - what the files of src/store/ share (not a public API): the connection and
 * its error text (store.c), the statements store.c prepares once at open and the helpers
 * that run them and read their rows, the column lists of a job's row (store.c prepares
 * with them, jobs.c lists with them), the schema's migration (schema.c), a cache of
 * prepared statements for usage.c (a hot path), and the helpers for the statements
 * prepared per call (ops.c, arrays.c, audit.c, secrets.c).
 */
#ifndef DOCKET_STORE_STORE_INT_H
#define DOCKET_STORE_STORE_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/db.h"
#include "store/store.h"

struct dbuf;

enum { STORE_USAGE_NSTMT = 12 };

/* A row's spec: its own, or its array's (schema 7). */
#define SPEC_OF(COL)                                                                               \
    "CASE WHEN spec_id = 0 THEN " COL " ELSE (SELECT s." COL " FROM job_specs s"                   \
    " WHERE s.id = jobs.spec_id) END"

/* The columns of a job's row, in the order jobs.c binds and reads them. */
#define JOB_COLS_WITH(SPEC)                                                                        \
    "id, array_id, array_index, name, project, user_name, tier, class, state, stop_cause,"         \
    " submit_ms, start_ms, end_ms, preempt_count, preemptor, nodes, " SPEC ", alloc, exit, usage," \
    " core, gpus, cpus, nnodes, signal, retries, array_limit, flags, mem_mb, time_limit_ms,"       \
    " begin_ms, grace_ms, gpu_type, deps, selectors, spec_id, template_ref, image"
#define JOB_INSERT_COLS JOB_COLS_WITH("spec")
#define JOB_COLS        JOB_COLS_WITH(SPEC_OF("spec"))
/* The same without the spec JSON (column 16 reads NULL). */
#define JOB_COLS_NO_SPEC JOB_COLS_WITH("NULL")
/* For lists: the spec without its two big members: an array's kept so, another row's cut
 * by the database (no copy, no parse here), in each engine's JSON functions. */
#define JOB_LEAN_OF(CUT)                                                                           \
    JOB_COLS_WITH("CASE WHEN spec_id = 0 THEN " CUT                                                \
                  " ELSE (SELECT s.lean FROM job_specs s WHERE s.id = jobs.spec_id) END")
#define JOB_COLS_LEAN    JOB_LEAN_OF("json_remove(spec, '$.script', '$.env')")
#define JOB_COLS_LEAN_PG JOB_LEAN_OF("(spec::jsonb - 'script' - 'env')::text")

/* The statements prepared once at open (store.c stmt_sql), run with store_stmt(). */
enum store_stmt_id {
    S_COUNTER_GET,
    S_COUNTER_SET,
    S_JOB_INSERT,
    S_JOB_UPDATE,
    S_JOB_RESPEC,
    S_JOB_GET,
    S_JOB_COUNT,
    S_SPEC_PUT,
    S_EVENT_ADD,
    S_EVENT_LIST,
    S_NODE_PUT,
    S_NODE_GET,
    S_NODE_LIST,
    S_PROJECT_PUT,
    S_PROJECT_LIST,
    S_POLICY_PUT,
    S_POLICY_GET,
    S_TOKEN_PUT,
    S_TOKEN_GET,
    S_TOKEN_DEL_USER,
    S_TOKEN_REVOKE,
    S_TOKEN_REVOKE_DESC,
    S_TOKEN_LIST,
    S_AUDIT_ADD,
    S_TOKEN_LIVE, /* h-node: runs and node credentials */
    S_RUN_ADD,
    S_RUN_GET,
    S_RUN_LAST,
    S_RUN_FINAL,
    S_RUN_STARTED, /* on every agent's started and every run's end: prepared once */
    S_RUN_END,
    S_TOKEN_DEL_ROLE,
    S_TOKEN_SET_ROLE,
    S_AUDIT_LAST,
    S_MEMBER_PUT,
    S_MEMBER_GET,
    S_MEMBER_DEL,
    S_MEMBER_LIST,
    S_JOB_OWNER,
    S_HOLD_PUT,
    S_HOLD_GET,
    S_HOLD_DEL,
    S_DEFAULT_GET,
    S_DEFAULT_SET,
    S_DEFAULT_DEL,
    S_BEGIN,
    S_COMMIT,
    S_ROLLBACK,
    S_SAVEPOINT,
    S_RELEASE,
    S_ROLLBACK_TO,
    S_COUNT
};

#define STORE_LIST_NSTMT 4

/* ---- store.c: the connection */
struct store {
    struct db *db;
    char target[512];       /* what was opened, for messages (a URI without its password) */
    int wal_fd;             /* SQLite: the -wal file, for store_sync */
    _Atomic int wal_frames; /* SQLite: frames in the WAL at this connection's last commit */
    struct db_stmt *stmt[S_COUNT];
    struct db_stmt *ustmt[STORE_USAGE_NSTMT]; /* usage.c's, prepared on first use */
    /* jobs.c: the job lists' last statements by their SQL (SQLite only), so a list's
     * 40 slices prepare it once, not 40 times (issue 40) */
    struct store_list_stmt {
        char *sql;
        struct db_stmt *s;
        bool busy; /* stepping: a list inside a list's callback makes its own */
    } lstmt[STORE_LIST_NSTMT];
    int lstmt_next;
    bool in_tx;
    int64_t leader_epoch; /* leader.c: the epoch this store leads with (0: not leading) */
    bool leader_table;    /* leader.c: docket_leader is known to exist */
    char errmsg[256];
    void (*job_write_fn)(void *arg, uint64_t id); /* store_set_job_write_hook */
    void *job_write_arg;
    struct store_rcache *rcache; /* rcache.c, NULL until the first answer is kept */
    bool no_rcache;              /* a read-only store: another process writes, nothing is kept */
    /* pgsync.c: PostgreSQL's pipelined group commit */
    char *uri;             /* the target as given (with its password): for sync_db */
    struct db *sync_db;    /* the sync thread's connection; NULL: COMMIT is durable */
    int64_t unsynced_life; /* loop: the server life of the commits not synced (0 none, -1 two) */
    _Atomic int64_t sync_expect; /* the same, handed to the sync in flight */
    char sync_err[512];          /* the sync thread's last error (read after it reports) */
};

struct db *store_db(struct store *st);
/* ---- leader.c: the epoch check inside each commit of a leader */
int store_leader_fence(struct store *st);
/* A write to job (or array) `id`'s rows, for store_set_job_write_hook where the engine has
 * no hook of its own (PostgreSQL): called with the statement, before anything reads it. */
void store_job_written(struct store *st, uint64_t id);
/* `target` as messages show it: a URI's password left out. */
void store_target_name(const char *target, char *out, size_t len);
/* Keep "what: the engine's message" for store_errmsg; always -EIO. */
int store_fail(struct store *st, const char *what);
/* Keep `msg` for store_errmsg (an error of ours, not SQLite's). */
void store_set_errmsg(struct store *st, const char *msg);
/* Run `sql` (any number of statements, no rows wanted): 0, or -EIO with SQLite's message
   kept. */
int store_exec(struct store *st, const char *sql);

/* ---- store.c: the statements prepared once, and their rows */
struct db_stmt *store_stmt(struct store *st, enum store_stmt_id id);
/* Run a prepared statement that returns no rows, then reset it: 0, or -EIO naming `what`. */
int store_step_done(struct store *st, struct db_stmt *s, const char *what);
/* Bind text (borrowed until the step), or NULL for v NULL. */
void store_bind_text(struct db_stmt *s, int i, const char *v);
/* Column i's text: a malloc'd copy (NULL for NULL), or copied into dst[len] ("" for NULL). */
char *store_col_dup(struct db_stmt *s, int i);
void store_col_copy(struct db_stmt *s, int i, char *dst, size_t len);
/* A list's filter: " AND col = ?N" appended to sql when v is set (*nparam counts the
   parameters; the caller binds v as ?N). */
void store_add_text_filter(struct dbuf *sql, const char *col, const char *v, int *nparam);

/* ---- store.c: statements prepared per call */
/* A statement prepared for one call (0, or -EIO with the error set), and stepped once for
   a statement that returns nothing, then finalized (0, or -EIO naming `what`): the SQL
   run now and then, outside store.c's prepared-once set. */
int store_prepare(struct store *st, const char *sql, struct db_stmt **s);
int store_step_finalize(struct store *st, struct db_stmt *s, const char *what);
/* usage.c's statement `i` (0..STORE_USAGE_NSTMT-1), prepared on first use from `sql`
 * and kept until store_close; NULL after store_fail. */
struct db_stmt *store_usage_stmt(struct store *st, int i, const char *sql);

/* ---- leader.c: the advisory lock the leader holds (pgdump.c's restore takes it too) */
#define STORE_LEADER_LOCK_KEY "7243454"

/* ---- pgsync.c */
int store_pg_set_external_sync(struct store *st);
int store_pg_sync(struct store *st);
/* A COMMIT went through on the main connection: note its server's life. */
void store_pg_committed(struct store *st);

/* ---- rcache.c: the read cache. An answer of statement `stmt` for `key` (any bytes the
 * caller chooses to keep, len may be 0), valid while no table the statement reads has been
 * written since it was put; get gives a pointer valid until the next put or clear. */
bool store_rcache_get(struct store *st, enum store_stmt_id stmt, const char *key, const void **val,
                      size_t *len);
void store_rcache_put(struct store *st, enum store_stmt_id stmt, const char *key, const void *val,
                      size_t len);
void store_rcache_clear(struct store *st);

/* ---- store_sqlite.c */
/* A SQLite store opened read-write on `path`: keep its -wal file open for store_sync. */
void store_sqlite_opened(struct store *st, const char *path);

/* ---- schema_pg.c: PostgreSQL's schema (schema.c runs it) */
enum { STORE_PG_BASE_VERSION = 11 }; /* the version a new PostgreSQL database starts at */
extern const char store_pg_base[];

/* ---- schema.c */
/* Migrate the database to store_schema_latest(), each step in a transaction of its own:
   0; -EPROTO for a database newer than this build; -EIO, with the error kept. */
int store_migrate(struct store *st);

#endif
