/*
 * store.c - docketd's persistence (store.h) on either engine: the connection (open on a
 * SQLite file or a postgresql:// URI, close), the statements prepared once for every hot
 * path (in PostgreSQL's words where they differ) and the helpers the other files of
 * src/store/ run them with (store_int.h), savepoint-per-request inside one transaction per
 * loop iteration (group commit), and the small tables: counters, nodes, projects and the
 * policy, default projects, membership and holds. The schema is schema.c's (and
 * schema_pg.c's); jobs, tokens, the audit chain and secrets have files of their own; what
 * only SQLite has (the WAL, its hooks, checkpoints) is store_sqlite.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "store/store_int.h"
#include "util/dbuf.h"
#include "util/str.h"
#include "util/xalloc.h"

/* The statements prepared at open (enum store_stmt_id), by the tables they read. */
#define TOKEN_COLS "hash, kind, user_name, role, created_ms, expires_ms, revoked_ms, parent"
#define NODE_COLS                                                                                  \
    "name, state, reason, gpu_type, gpus, gpu_mem_mb, cpus, mem_mb, labels, info,"                 \
    " last_heartbeat_ms, cmd_seq"

static const char *const stmt_sql[S_COUNT] = {
    [S_COUNTER_GET] = "SELECT value FROM counters WHERE name = ?1",
    [S_COUNTER_SET] = "INSERT INTO counters(name, value) VALUES (?1, ?2)"
                      " ON CONFLICT(name) DO UPDATE SET value = excluded.value",
    [S_JOB_INSERT] = "INSERT INTO jobs(" JOB_INSERT_COLS ") VALUES"
                     " (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,"
                     " ?21,?22,?23,?24,?25,?26,?27,?28,?29,?30,?31,?32,?33,?34,?35,?36,?37,?38)",
    [S_SPEC_PUT] = "INSERT INTO job_specs(id, spec, lean) VALUES (?1, ?2, ?3)",
    [S_JOB_UPDATE] = "UPDATE jobs SET state = ?9, stop_cause = ?10, start_ms = ?12,"
                     " end_ms = ?13, preempt_count = ?14, preemptor = ?15, nodes = ?16,"
                     " alloc = ?18, exit = ?19, usage = ?20, tier = ?7 WHERE id = ?1",
    [S_JOB_RESPEC] = "UPDATE jobs SET name = ?4, tier = ?7, class = ?8, spec = ?17,"
                     " spec_id = ?36, gpus = ?22, cpus = ?23, nnodes = ?24, flags = ?28,"
                     " mem_mb = ?29, time_limit_ms = ?30, begin_ms = ?31, grace_ms = ?32,"
                     " gpu_type = ?33, deps = ?34, selectors = ?35 WHERE id = ?1",
    [S_JOB_GET] = "SELECT " JOB_COLS " FROM jobs WHERE id = ?1",
    [S_JOB_COUNT] = "SELECT count(*) FROM jobs",
    [S_EVENT_ADD] = "INSERT INTO job_events(job, time_ms, type, from_state, to_state, node,"
                    " reason, detail) VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
    [S_EVENT_LIST] = "SELECT job, time_ms, type, from_state, to_state, node, reason, detail, id"
                     " FROM job_events WHERE job = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
    [S_NODE_PUT] =
        "INSERT INTO nodes(" NODE_COLS ") VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)"
        " ON CONFLICT(name) DO UPDATE SET state = excluded.state,"
        " reason = excluded.reason, gpu_type = excluded.gpu_type,"
        " gpus = excluded.gpus, gpu_mem_mb = excluded.gpu_mem_mb,"
        " cpus = excluded.cpus, mem_mb = excluded.mem_mb, labels = excluded.labels,"
        " info = excluded.info, last_heartbeat_ms = excluded.last_heartbeat_ms,"
        " cmd_seq = excluded.cmd_seq",
    [S_NODE_GET] = "SELECT " NODE_COLS " FROM nodes WHERE name = ?1",
    [S_NODE_LIST] = "SELECT " NODE_COLS " FROM nodes ORDER BY name",
    [S_PROJECT_PUT] = "INSERT INTO projects(name, doc) VALUES (?1, ?2)"
                      " ON CONFLICT(name) DO UPDATE SET doc = excluded.doc",
    [S_PROJECT_LIST] = "SELECT name, doc FROM projects ORDER BY name",
    [S_POLICY_PUT] = "INSERT INTO policy(id, doc) VALUES (1, ?1)"
                     " ON CONFLICT(id) DO UPDATE SET doc = excluded.doc",
    [S_POLICY_GET] = "SELECT doc FROM policy WHERE id = 1",
    [S_TOKEN_PUT] = "INSERT INTO tokens(hash, kind, user_name, role, created_ms, expires_ms,"
                    " parent) VALUES (?1,?2,?3,?4,?5,?6,?7)",
    [S_TOKEN_GET] = "SELECT " TOKEN_COLS " FROM tokens WHERE hash = ?1",
    [S_TOKEN_DEL_USER] = "DELETE FROM tokens WHERE kind = ?1 AND user_name = ?2",
    [S_TOKEN_REVOKE] = "UPDATE tokens SET revoked_ms = ?2 WHERE hash = ?1 AND revoked_ms = 0",
    /* every token derived from ?1, however deep (schema 14: a derived token names its parent) */
    [S_TOKEN_REVOKE_DESC] =
        "UPDATE tokens SET revoked_ms = ?2 WHERE revoked_ms = 0 AND hash IN"
        " (WITH RECURSIVE chain(h) AS (SELECT hash FROM tokens WHERE parent = ?1"
        " UNION SELECT t.hash FROM tokens t JOIN chain ON t.parent = chain.h)"
        " SELECT h FROM chain)",
    [S_TOKEN_LIST] = "SELECT " TOKEN_COLS " FROM tokens WHERE (?1 IS NULL OR user_name = ?1)"
                     " AND (?2 IS NULL OR substr(hash, 1, 12) = ?2) ORDER BY created_ms, hash",
    [S_AUDIT_ADD] = "INSERT INTO audit(id, time_ms, actor, action, target, before_doc,"
                    " after_doc, reason, prev_hash, hash) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)",
    [S_AUDIT_LAST] = "SELECT id, hash FROM audit ORDER BY id DESC LIMIT 1",
    [S_MEMBER_PUT] = "INSERT INTO members(project, user_name, role) VALUES (?1, ?2, ?3)"
                     " ON CONFLICT(project, user_name) DO UPDATE SET role = excluded.role",
    [S_MEMBER_GET] = "SELECT role FROM members WHERE project = ?1 AND user_name = ?2",
    [S_MEMBER_DEL] = "DELETE FROM members WHERE project = ?1 AND user_name = ?2",
    [S_MEMBER_LIST] = "SELECT project, user_name, role FROM members"
                      " WHERE (?1 IS NULL OR project = ?1) AND (?2 IS NULL OR user_name = ?2)"
                      " ORDER BY project, user_name",
    [S_JOB_OWNER] = "SELECT project, user_name FROM jobs WHERE id = ?1",
    [S_HOLD_PUT] = "INSERT INTO job_holds(job, user_name, level) VALUES (?1, ?2, ?3)"
                   " ON CONFLICT(job) DO UPDATE SET user_name = excluded.user_name,"
                   " level = excluded.level",
    [S_HOLD_GET] = "SELECT user_name, level FROM job_holds WHERE job = ?1",
    [S_HOLD_DEL] = "DELETE FROM job_holds WHERE job = ?1",
    [S_TOKEN_LIVE] = "SELECT count(*) FROM tokens WHERE kind = ?1 AND user_name = ?2"
                     " AND revoked_ms = 0 AND (expires_ms = 0 OR expires_ms >= ?3)",
    [S_RUN_ADD] =
        "INSERT INTO job_runs(job, run, nodes, start_ms, lease_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
    [S_RUN_GET] = "SELECT job, run, nodes, start_ms, final, lease_ms FROM job_runs"
                  " WHERE job = ?1 AND run = ?2",
    [S_RUN_LAST] = "SELECT coalesce(max(run), 0) FROM job_runs WHERE job = ?1",
    [S_RUN_FINAL] = "UPDATE job_runs SET final = final | ?3 WHERE job = ?1 AND run = ?2",
    [S_RUN_STARTED] = "UPDATE job_runs SET start_ms = ?2 WHERE job = ?1 AND end_ms = 0"
                      " AND run = (SELECT max(run) FROM job_runs WHERE job = ?1)",
    [S_RUN_END] = "UPDATE job_runs SET end_ms = ?2, end_state = ?3, end_cause = ?4"
                  " WHERE job = ?1 AND end_ms = 0 AND run = (SELECT max(run) FROM job_runs"
                  " WHERE job = ?1)",
    [S_TOKEN_DEL_ROLE] = "DELETE FROM tokens WHERE kind = ?1 AND user_name = ?2 AND role = ?3",
    [S_TOKEN_SET_ROLE] =
        "UPDATE tokens SET role = ?4 WHERE kind = ?1 AND user_name = ?2 AND role = ?3",
    [S_DEFAULT_GET] = "SELECT project FROM user_defaults WHERE user_name = ?1",
    [S_DEFAULT_SET] = "INSERT INTO user_defaults(user_name, project) VALUES (?1, ?2)"
                      " ON CONFLICT(user_name) DO UPDATE SET project = excluded.project",
    [S_DEFAULT_DEL] = "DELETE FROM user_defaults WHERE user_name = ?1",
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_SAVEPOINT] = "SAVEPOINT req",
    [S_RELEASE] = "RELEASE req",
    [S_ROLLBACK_TO] = "ROLLBACK TO req",
};

/* PostgreSQL's words for the statements above where they differ (NULL: the same). */
static const char *const stmt_sql_pg[S_COUNT] = {
    [S_BEGIN] = "BEGIN",
};

struct db *store_db(struct store *st)
{
    return st->db;
}

int store_fail(struct store *st, const char *what)
{
    snprintf(st->errmsg, sizeof(st->errmsg), "%s: %s", what, db_errmsg(st->db));
    return -EIO;
}

int store_prepare(struct store *st, const char *sql, struct db_stmt **s)
{
    if (db_prepare(st->db, sql, false, s) == 0)
        return 0;
    *s = NULL;
    return store_fail(st, "prepare");
}

int store_step_finalize(struct store *st, struct db_stmt *s, const char *what)
{
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, what);
    db_finalize(s);
    return rc;
}

struct db_stmt *store_usage_stmt(struct store *st, int i, const char *sql)
{
    if (!st->ustmt[i] && db_prepare(st->db, sql, true, &st->ustmt[i]) < 0) {
        store_fail(st, "prepare usage statement");
        return NULL;
    }
    return st->ustmt[i];
}

void store_set_errmsg(struct store *st, const char *msg)
{
    snprintf(st->errmsg, sizeof(st->errmsg), "%s", msg);
}

static int fail(struct store *st, const char *what)
{
    return store_fail(st, what);
}

const char *store_errmsg(struct store *st)
{
    return st->errmsg;
}

int store_step_done(struct store *st, struct db_stmt *s, const char *what)
{
    int rc = db_step(s);
    db_reset(s);
    db_clear_bindings(s);
    if (rc != DB_DONE)
        return fail(st, what);
    return 0;
}

struct db_stmt *store_stmt(struct store *st, enum store_stmt_id id)
{
    return st->stmt[id];
}

void store_bind_text(struct db_stmt *s, int i, const char *v)
{
    db_bind_text(s, i, v);
}

char *store_col_dup(struct db_stmt *s, int i)
{
    const char *t = db_column_text(s, i);
    return t ? xstrdup(t) : NULL;
}

void store_col_copy(struct db_stmt *s, int i, char *dst, size_t len)
{
    const char *t = db_column_text(s, i);
    str_copy(dst, len, t ? t : "");
}

void store_add_text_filter(struct dbuf *sql, const char *col, const char *v, int *nparam)
{
    if (!v)
        return;
    (*nparam)++;
    dbuf_printf(sql, " AND %s = ?%d", col, *nparam);
}

int store_exec(struct store *st, const char *sql)
{
    if (db_exec(st->db, sql) == 0)
        return 0;
    snprintf(st->errmsg, sizeof(st->errmsg), "%s", db_errmsg(st->db));
    return -EIO;
}

/* The statements prepared once, in the engine's words where they differ. */
static const char *stmt_text(const struct store *st, int i)
{
    return db_engine(st->db) == DB_POSTGRES && stmt_sql_pg[i] ? stmt_sql_pg[i] : stmt_sql[i];
}

/* The writes whose callers read nothing back but whether they failed (db.h
 * db_mark_blind): a submission's rows, its event and audit entry, the id counter. */
static const enum store_stmt_id blind_writes[] = {S_COUNTER_SET, S_JOB_INSERT, S_SPEC_PUT,
                                                  S_EVENT_ADD,   S_AUDIT_ADD,  S_RUN_ADD};

static int prepare_all(struct store *st, char *err, size_t errlen)
{
    for (int i = 0; i < S_COUNT; i++)
        if (db_prepare(st->db, stmt_text(st, i), true, &st->stmt[i]) < 0) {
            snprintf(err, errlen, "'%s': prepare statement %d: %s", st->target, i,
                     db_errmsg(st->db));
            return -EIO;
        }
    for (size_t i = 0; i < sizeof(blind_writes) / sizeof(blind_writes[0]); i++)
        db_mark_blind(st->stmt[blind_writes[i]]);
    return 0;
}

/* A new store on `target`'s connection (NULL, with err set, on failure). */
static struct store *open_conn(const char *target, bool readonly, char *err, size_t errlen)
{
    struct store *st = calloc(1, sizeof(*st));
    if (!st) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    st->wal_fd = -1;
    store_target_name(target, st->target, sizeof(st->target));
    st->uri = strdup(target);
    st->db = db_open(target, readonly, err, errlen);
    if (!st->db) {
        free(st->uri);
        free(st);
        return NULL;
    }
    return st;
}

struct store *store_open(const char *target, char *err, size_t errlen)
{
    struct store *st = open_conn(target, false, err, errlen);
    if (!st)
        return NULL;
    if (store_migrate(st) < 0) {
        snprintf(err, errlen, "'%s': %s", st->target, st->errmsg);
        store_close(st);
        return NULL;
    }
    if (db_engine(st->db) == DB_SQLITE)
        store_sqlite_opened(st, target);
    if (prepare_all(st, err, errlen) < 0) {
        store_close(st);
        return NULL;
    }
    return st;
}

struct store *store_open_readonly(const char *target, char *err, size_t errlen)
{
    int n = store_schema_latest();
    struct store *st = open_conn(target, true, err, errlen);
    if (!st)
        return NULL;
    st->no_rcache = true;
    int v = store_schema_version(st);
    if (v != n) {
        if (v < 0)
            snprintf(err, errlen, "'%s': not a docketd database (%s)", st->target,
                     db_errmsg(st->db));
        else
            snprintf(err, errlen, "'%s': schema version %d, this build reads %d (%s)", st->target,
                     v, n, v < n ? "start docketd once on it to migrate it" : "use a newer build");
        store_close(st);
        return NULL;
    }
    /* the write statements prepare on a read-only connection too; only running them fails */
    if (prepare_all(st, err, errlen) < 0) {
        store_close(st);
        return NULL;
    }
    return st;
}

void store_close(struct store *st)
{
    if (!st)
        return;
    if (st->in_tx)
        store_rollback(st);
    for (int i = 0; i < S_COUNT; i++)
        db_finalize(st->stmt[i]);
    for (int i = 0; i < STORE_USAGE_NSTMT; i++)
        db_finalize(st->ustmt[i]);
    for (int i = 0; i < STORE_LIST_NSTMT; i++) {
        db_finalize(st->lstmt[i].s);
        free(st->lstmt[i].sql);
    }
    store_rcache_clear(st);
    db_close(st->sync_db);
    db_close(st->db);
    free(st->uri);
    if (st->wal_fd >= 0)
        close(st->wal_fd);
    free(st);
}

bool store_path_is_postgres(const char *path)
{
    return db_target_is_postgres(path);
}

bool store_is_postgres(struct store *st)
{
    return db_engine(st->db) == DB_POSTGRES;
}

void store_target_name(const char *target, char *out, size_t len)
{
    /* a URI's password stays out of messages, in either of libpq's places for it:
     * postgresql://user:secret@host/db -> postgresql://user@host/db, and
     * ...?password=secret&sslmode=require -> ...?password=***&sslmode=require */
    if (!db_target_is_postgres(target)) {
        str_copy(out, len, target);
        return;
    }
    const char *auth = strstr(target, "://") + 3;
    size_t alen = strcspn(auth, "/?");
    const char *at = NULL;
    for (const char *p = auth; p < auth + alen; p++)
        if (*p == '@')
            at = p;
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    char buf[1024];
    if (colon)
        snprintf(buf, sizeof(buf), "%.*s%s", (int)(colon - target), target, at);
    else
        str_copy(buf, sizeof(buf), target);
    char *pw = strstr(buf, "password=");
    if (pw && (pw == buf || pw[-1] == '?' || pw[-1] == '&')) {
        char *end = pw + strlen("password=");
        char rest[1024];
        str_copy(rest, sizeof(rest), end + strcspn(end, "&"));
        snprintf(end, sizeof(buf) - (size_t)(end - buf), "***%s", rest);
    }
    str_copy(out, len, buf);
}

int store_begin(struct store *st)
{
    if (st->in_tx)
        return 0;
    int rc = store_step_done(st, store_stmt(st, S_BEGIN), "begin");
    if (rc == 0)
        st->in_tx = true;
    return rc;
}

bool store_in_tx(const struct store *st)
{
    return st->in_tx;
}

uint64_t store_write_clock(const struct store *st)
{
    return db_write_clock(st->db);
}

bool store_written_since(struct store *st, const char *const *tables, uint64_t clock)
{
    uint64_t bits = 0;
    for (; *tables; tables++)
        bits |= db_table_bit(st->db, *tables);
    return !db_unchanged_since(st->db, bits, clock);
}

int store_commit(struct store *st)
{
    if (!st->in_tx)
        return 0;
    int rc = store_leader_fence(st); /* a deposed leader's write never lands */
    if (rc < 0) {
        char keep[256];
        str_copy(keep, sizeof(keep), st->errmsg);
        store_rollback(st);
        store_set_errmsg(st, keep);
        return rc;
    }
    rc = store_step_done(st, store_stmt(st, S_COMMIT), "commit");
    if (rc < 0) {
        store_rollback(st);
        return rc;
    }
    st->in_tx = false;
    store_pg_committed(st);
    return 0;
}

int store_rollback(struct store *st)
{
    if (!st->in_tx)
        return 0;
    st->in_tx = false;
    if (!db_in_tx(st->db))
        return 0; /* the engine already rolled back (e.g. SQLite after an I/O error) */
    return store_step_done(st, store_stmt(st, S_ROLLBACK), "rollback");
}

int store_savepoint(struct store *st)
{
    int rc = store_begin(st);
    return rc < 0 ? rc : store_step_done(st, store_stmt(st, S_SAVEPOINT), "savepoint");
}

int store_release(struct store *st)
{
    return store_step_done(st, store_stmt(st, S_RELEASE), "release savepoint");
}

int store_rollback_to(struct store *st)
{
    int rc = store_step_done(st, store_stmt(st, S_ROLLBACK_TO), "rollback to savepoint");
    int rc2 = store_step_done(st, store_stmt(st, S_RELEASE), "release savepoint");
    return rc < 0 ? rc : rc2;
}

int store_counter_get(struct store *st, const char *name, int64_t *out)
{
    struct db_stmt *s = store_stmt(st, S_COUNTER_GET);
    store_bind_text(s, 1, name);
    int rc = db_step(s);
    if (rc == DB_ROW)
        *out = db_column_int64(s, 0);
    db_reset(s);
    db_clear_bindings(s);
    return rc == DB_ROW ? 0 : rc == DB_DONE ? -ENOENT : fail(st, "counter get");
}

int store_counter_set(struct store *st, const char *name, int64_t v)
{
    struct db_stmt *s = store_stmt(st, S_COUNTER_SET);
    store_bind_text(s, 1, name);
    db_bind_int64(s, 2, v);
    return store_step_done(st, s, "counter set");
}

/* ------------------------------------------------------------------------------------ */
/* Nodes                                                                                 */

void store_node_release(struct store_node *n)
{
    free(n->labels);
    free(n->info);
    n->labels = n->info = NULL;
}

int store_node_put(struct store *st, const struct store_node *n)
{
    struct db_stmt *s = store_stmt(st, S_NODE_PUT);
    store_bind_text(s, 1, n->name);
    store_bind_text(s, 2, n->state);
    store_bind_text(s, 3, n->reason);
    store_bind_text(s, 4, n->gpu_type);
    db_bind_int64(s, 5, n->gpus);
    db_bind_int64(s, 6, n->gpu_mem_mb);
    db_bind_int64(s, 7, n->cpus);
    db_bind_int64(s, 8, n->mem_mb);
    store_bind_text(s, 9, n->labels ? n->labels : "{}");
    store_bind_text(s, 10, n->info ? n->info : "{}");
    db_bind_int64(s, 11, n->last_heartbeat_ms);
    db_bind_int64(s, 12, n->cmd_seq);
    return store_step_done(st, s, "put node");
}

static void read_node(struct db_stmt *s, struct store_node *n)
{
    memset(n, 0, sizeof(*n));
    store_col_copy(s, 0, n->name, sizeof(n->name));
    store_col_copy(s, 1, n->state, sizeof(n->state));
    store_col_copy(s, 2, n->reason, sizeof(n->reason));
    store_col_copy(s, 3, n->gpu_type, sizeof(n->gpu_type));
    n->gpus = db_column_int(s, 4);
    n->gpu_mem_mb = db_column_int64(s, 5);
    n->cpus = db_column_int(s, 6);
    n->mem_mb = db_column_int64(s, 7);
    n->labels = store_col_dup(s, 8);
    n->info = store_col_dup(s, 9);
    n->last_heartbeat_ms = db_column_int64(s, 10);
    n->cmd_seq = db_column_int64(s, 11);
}

int store_node_get(struct store *st, const char *name, struct store_node *out)
{
    struct db_stmt *s = store_stmt(st, S_NODE_GET);
    store_bind_text(s, 1, name);
    int rc = db_step(s);
    if (rc == DB_ROW)
        read_node(s, out);
    db_reset(s);
    db_clear_bindings(s);
    return rc == DB_ROW ? 0 : rc == DB_DONE ? -ENOENT : fail(st, "get node");
}

int store_node_list(struct store *st, store_node_cb cb, void *arg)
{
    struct db_stmt *s = store_stmt(st, S_NODE_LIST);
    int step, rc = 0;
    while ((step = db_step(s)) == DB_ROW) {
        struct store_node n;
        read_node(s, &n);
        rc = cb(arg, &n);
        store_node_release(&n);
        if (rc)
            break;
    }
    if (!rc && step != DB_DONE)
        rc = fail(st, "list nodes");
    db_reset(s);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Projects, policy                                                                      */

int store_project_put(struct store *st, const char *name, const char *json)
{
    struct db_stmt *s = store_stmt(st, S_PROJECT_PUT);
    store_bind_text(s, 1, name);
    store_bind_text(s, 2, json);
    return store_step_done(st, s, "put project");
}

/* A default project from the read cache: "" kept for a user without one. */
static int default_project_cached(const void *val, size_t n, char *project, size_t len)
{
    if (n == 0)
        return -ENOENT;
    if (n >= len)
        return -EIO;
    memcpy(project, val, n);
    project[n] = '\0';
    return 0;
}

int store_default_project_get(struct store *st, const char *user, char *project, size_t len)
{
    const void *val;
    size_t n;
    if (store_rcache_get(st, S_DEFAULT_GET, user, &val, &n))
        return default_project_cached(val, n, project, len);
    struct db_stmt *s = store_stmt(st, S_DEFAULT_GET);
    store_bind_text(s, 1, user);
    int step = db_step(s), rc = 0;
    if (step == DB_ROW)
        rc = str_copy(project, len, (const char *)db_column_text(s, 0)) < 0 ? -EIO : 0;
    else
        rc = step == DB_DONE ? -ENOENT : fail(st, "get default project");
    db_reset(s);
    db_clear_bindings(s);
    if (rc == 0 || rc == -ENOENT)
        store_rcache_put(st, S_DEFAULT_GET, user, project, rc == 0 ? strlen(project) : 0);
    return rc;
}

int store_default_project_set(struct store *st, const char *user, const char *project)
{
    struct db_stmt *s = store_stmt(st, project ? S_DEFAULT_SET : S_DEFAULT_DEL);
    store_bind_text(s, 1, user);
    if (project)
        store_bind_text(s, 2, project);
    return store_step_done(st, s, "set default project");
}

int store_project_list(struct store *st, store_doc_cb cb, void *arg)
{
    struct db_stmt *s = store_stmt(st, S_PROJECT_LIST);
    int step, rc = 0;
    while ((step = db_step(s)) == DB_ROW)
        if ((rc = cb(arg, (const char *)db_column_text(s, 0), (const char *)db_column_text(s, 1))))
            break;
    if (!rc && step != DB_DONE)
        rc = fail(st, "list projects");
    db_reset(s);
    return rc;
}

int store_policy_put(struct store *st, const char *json)
{
    struct db_stmt *s = store_stmt(st, S_POLICY_PUT);
    store_bind_text(s, 1, json);
    return store_step_done(st, s, "put policy");
}

int store_policy_get(struct store *st, char **json)
{
    struct db_stmt *s = store_stmt(st, S_POLICY_GET);
    int rc = db_step(s);
    if (rc == DB_ROW)
        *json = store_col_dup(s, 0);
    db_reset(s);
    if (rc == DB_ROW)
        return *json ? 0 : -ENOMEM;
    return rc == DB_DONE ? -ENOENT : fail(st, "get policy");
}

/* ------------------------------------------------------------------------------------ */
/* Membership, holds, job owner                                                          */

int store_member_put(struct store *st, const char *project, const char *user, const char *role)
{
    struct db_stmt *s = store_stmt(st, S_MEMBER_PUT);
    store_bind_text(s, 1, project);
    store_bind_text(s, 2, user);
    store_bind_text(s, 3, role);
    return store_step_done(st, s, "put member");
}

int store_member_get(struct store *st, const char *project, const char *user, char *role,
                     size_t len)
{
    struct db_stmt *s = store_stmt(st, S_MEMBER_GET);
    store_bind_text(s, 1, project);
    store_bind_text(s, 2, user);
    int rc = db_step(s);
    if (rc == DB_ROW)
        store_col_copy(s, 0, role, len);
    db_reset(s);
    db_clear_bindings(s);
    return rc == DB_ROW ? 0 : rc == DB_DONE ? -ENOENT : fail(st, "get member");
}

int store_member_delete(struct store *st, const char *project, const char *user)
{
    struct db_stmt *s = store_stmt(st, S_MEMBER_DEL);
    store_bind_text(s, 1, project);
    store_bind_text(s, 2, user);
    int rc = store_step_done(st, s, "delete member");
    if (rc == 0 && db_changes(st->db) == 0)
        return -ENOENT;
    return rc;
}

static int member_list_read(struct store *st, const char *project, const char *user,
                            store_member_cb cb, void *arg);

/* A user's memberships from the read cache: project, user and role, each ending in NUL. */
static int members_cached(const char *val, size_t n, store_member_cb cb, void *arg)
{
    for (const char *p = val, *end = val + n; p < end;) {
        const char *u = p + strlen(p) + 1, *r = u + strlen(u) + 1;
        int rc = cb(arg, p, u, r);
        if (rc != 0)
            return rc;
        p = r + strlen(r) + 1;
    }
    return 0;
}

/* Keep one row of a user's memberships for the read cache. */
static int member_keep(void *arg, const char *project, const char *user, const char *role)
{
    struct dbuf *b = arg;
    const char *parts[3] = {project, user, role};
    for (int i = 0; i < 3; i++)
        if (dbuf_append(b, parts[i], strlen(parts[i]) + 1) < 0)
            return -ENOMEM;
    return 0;
}

/* Every membership of `user` (the question each request with a token asks), through
 * the read cache. */
static int member_list_of_user(struct store *st, const char *user, store_member_cb cb, void *arg)
{
    const void *val;
    size_t n;
    if (store_rcache_get(st, S_MEMBER_LIST, user, &val, &n))
        return members_cached(val, n, cb, arg);
    struct dbuf b;
    dbuf_init(&b, 0);
    int rc = member_list_read(st, NULL, user, member_keep, &b);
    if (rc == 0)
        store_rcache_put(st, S_MEMBER_LIST, user, b.data, b.len);
    if (rc == 0)
        rc = members_cached(b.data, b.len, cb, arg);
    dbuf_release(&b);
    return rc == -ENOMEM || rc == -ENOSPC ? store_fail(st, "list members") : rc;
}

int store_member_list(struct store *st, const char *project, const char *user, store_member_cb cb,
                      void *arg)
{
    if (!project && user)
        return member_list_of_user(st, user, cb, arg);
    return member_list_read(st, project, user, cb, arg);
}

static int member_list_read(struct store *st, const char *project, const char *user,
                            store_member_cb cb, void *arg)
{
    struct db_stmt *s = store_stmt(st, S_MEMBER_LIST);
    store_bind_text(s, 1, project);
    store_bind_text(s, 2, user);
    int step, rc = 0;
    while ((step = db_step(s)) == DB_ROW) {
        const char *p = (const char *)db_column_text(s, 0);
        const char *u = (const char *)db_column_text(s, 1);
        const char *r = (const char *)db_column_text(s, 2);
        if ((rc = cb(arg, p ? p : "", u ? u : "", r ? r : "")) != 0)
            break;
    }
    if (rc == 0 && step != DB_DONE)
        rc = fail(st, "list members");
    db_reset(s);
    db_clear_bindings(s);
    return rc;
}

/* One row of two text columns selected by a job id: 0, -ENOENT, or the store's error. */
static int two_texts_by_job(struct store *st, enum store_stmt_id which, uint64_t id, char *a,
                            size_t alen, char *b, size_t blen, const char *what)
{
    struct db_stmt *s = store_stmt(st, which);
    db_bind_int64(s, 1, (int64_t)id);
    int rc = db_step(s);
    if (rc == DB_ROW) {
        store_col_copy(s, 0, a, alen);
        store_col_copy(s, 1, b, blen);
    }
    db_reset(s);
    db_clear_bindings(s);
    return rc == DB_ROW ? 0 : rc == DB_DONE ? -ENOENT : fail(st, what);
}

int store_job_owner(struct store *st, uint64_t id, char *project, size_t plen, char *user,
                    size_t ulen)
{
    return two_texts_by_job(st, S_JOB_OWNER, id, project, plen, user, ulen, "job owner");
}

int store_hold_put(struct store *st, uint64_t job, const char *user, const char *level)
{
    struct db_stmt *s = store_stmt(st, S_HOLD_PUT);
    db_bind_int64(s, 1, (int64_t)job);
    store_bind_text(s, 2, user);
    store_bind_text(s, 3, level);
    return store_step_done(st, s, "put hold");
}

int store_hold_get(struct store *st, uint64_t job, char *user, size_t ulen, char *level,
                   size_t llen)
{
    return two_texts_by_job(st, S_HOLD_GET, job, user, ulen, level, llen, "get hold");
}

int store_hold_delete(struct store *st, uint64_t job)
{
    struct db_stmt *s = store_stmt(st, S_HOLD_DEL);
    db_bind_int64(s, 1, (int64_t)job);
    return store_step_done(st, s, "delete hold");
}
