/*
 * store.c - SQLite persistence for docketd (store.h): schema migrations, prepared
 * statements for every hot path, savepoint-per-request inside one transaction per loop
 * iteration (group commit). The SQL is kept portable (no SQLite-only types) so a
 * PostgreSQL backend can follow.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sched.h"
#include "store/store.h"
#include "store/store_int.h"
#include "util/dbuf.h"
#include "util/str.h"
#include "util/xalloc.h"

/* Each entry migrates from version i to i+1; PRAGMA user_version holds the version. */
static const char *const migrations[] = {
    /* 1: the first schema */
    "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "CREATE TABLE jobs ("
    " id INTEGER PRIMARY KEY, array_id INTEGER NOT NULL DEFAULT 0,"
    " array_index INTEGER NOT NULL DEFAULT 0, name TEXT NOT NULL, project TEXT NOT NULL,"
    " user_name TEXT NOT NULL, tier TEXT NOT NULL, class TEXT NOT NULL,"
    " state INTEGER NOT NULL, stop_cause TEXT NOT NULL DEFAULT '',"
    " submit_ms INTEGER NOT NULL, start_ms INTEGER NOT NULL DEFAULT 0,"
    " end_ms INTEGER NOT NULL DEFAULT 0, preempt_count INTEGER NOT NULL DEFAULT 0,"
    " preemptor INTEGER NOT NULL DEFAULT 0, nodes TEXT NOT NULL DEFAULT '',"
    " spec TEXT NOT NULL, alloc TEXT, exit TEXT, usage TEXT);"
    "CREATE INDEX jobs_state ON jobs(state, id);"
    "CREATE INDEX jobs_project ON jobs(project, id);"
    "CREATE INDEX jobs_user ON jobs(user_name, id);"
    "CREATE INDEX jobs_array ON jobs(array_id) WHERE array_id <> 0;"
    "CREATE TABLE job_events ("
    " id INTEGER PRIMARY KEY, job INTEGER NOT NULL, time_ms INTEGER NOT NULL,"
    " type TEXT NOT NULL, from_state TEXT NOT NULL, to_state TEXT NOT NULL,"
    " node TEXT NOT NULL, reason TEXT NOT NULL, detail TEXT NOT NULL);"
    "CREATE INDEX job_events_job ON job_events(job, id);"
    "CREATE TABLE nodes ("
    " name TEXT PRIMARY KEY, state TEXT NOT NULL, reason TEXT NOT NULL,"
    " gpu_type TEXT NOT NULL, gpus INTEGER NOT NULL, gpu_mem_mb INTEGER NOT NULL,"
    " cpus INTEGER NOT NULL, mem_mb INTEGER NOT NULL, labels TEXT NOT NULL,"
    " info TEXT NOT NULL, last_heartbeat_ms INTEGER NOT NULL, cmd_seq INTEGER NOT NULL);"
    "CREATE TABLE projects (name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE policy (id INTEGER PRIMARY KEY CHECK (id = 1), doc TEXT NOT NULL);"
    "CREATE TABLE tokens ("
    " hash TEXT PRIMARY KEY, kind INTEGER NOT NULL, user_name TEXT NOT NULL,"
    " role TEXT NOT NULL, created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL);"
    "CREATE INDEX tokens_user ON tokens(kind, user_name);"
    "CREATE TABLE audit ("
    " id INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL, actor TEXT NOT NULL,"
    " action TEXT NOT NULL, target TEXT NOT NULL, before_doc TEXT, after_doc TEXT,"
    " reason TEXT NOT NULL);"
    "CREATE INDEX audit_target ON audit(target, id);"
    /* append-only: the database itself refuses edits of the audit trail */
    "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit"
    " BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END;"
    "CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit"
    " BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END;",
    /* 2: the scheduling fields in columns, so a restart needs no JSON parsing */
    "ALTER TABLE jobs ADD COLUMN core INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN gpus INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN cpus INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE jobs ADD COLUMN nnodes INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE jobs ADD COLUMN signal INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN array_limit INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN flags INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN mem_mb INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN time_limit_ms INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN begin_ms INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN grace_ms INTEGER NOT NULL DEFAULT -1;"
    "ALTER TABLE jobs ADD COLUMN gpu_type TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE jobs ADD COLUMN deps TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE jobs ADD COLUMN selectors TEXT NOT NULL DEFAULT '';",
    /* 3: job states and token kinds by name, as node states, stop causes and events already
     * are: reordering an enum must never change what a stored row means. The numbers are
     * those the enums had up to schema 2 (frozen here); an unknown one fails the
     * migration (NOT NULL), which then changes nothing. */
    "DROP INDEX jobs_state;"
    "ALTER TABLE jobs RENAME COLUMN state TO state_number;"
    "ALTER TABLE jobs ADD COLUMN state TEXT NOT NULL DEFAULT '';"
    "UPDATE jobs SET state = CASE state_number WHEN 0 THEN 'PENDING' WHEN 1 THEN 'HELD'"
    " WHEN 2 THEN 'STARTING' WHEN 3 THEN 'RUNNING' WHEN 4 THEN 'STOPPING'"
    " WHEN 5 THEN 'COMPLETED' WHEN 6 THEN 'FAILED' WHEN 7 THEN 'CANCELLED'"
    " WHEN 8 THEN 'TIMEOUT' WHEN 9 THEN 'PREEMPTED' WHEN 10 THEN 'NODE_FAIL' END;"
    "ALTER TABLE jobs DROP COLUMN state_number;"
    "CREATE INDEX jobs_state ON jobs(state, id);"
    "DROP INDEX tokens_user;"
    "ALTER TABLE tokens RENAME COLUMN kind TO kind_number;"
    "ALTER TABLE tokens ADD COLUMN kind TEXT NOT NULL DEFAULT '';"
    "UPDATE tokens SET kind = CASE kind_number WHEN 0 THEN 'user' WHEN 1 THEN 'node'"
    " WHEN 2 THEN 'join' END;"
    "ALTER TABLE tokens DROP COLUMN kind_number;"
    "CREATE INDEX tokens_user ON tokens(kind, user_name);",
    /* ---- h-node: 4: runs of a job (issue 12: logs per run; issue 11: a node posts only for
     * the runs placed on it). One row per start of a job: its number (1, 2, ... in start
     * order), the nodes it was placed on (",gpu01,gpu02,", rank 0 first) and which
     * streams the agent said are complete (bit 1 stdout, bit 2 stderr). ---- */
    "CREATE TABLE job_runs ("
    " job INTEGER NOT NULL, run INTEGER NOT NULL, nodes TEXT NOT NULL,"
    " start_ms INTEGER NOT NULL DEFAULT 0, final INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY (job, run));"
    /* jobs placed before this schema: their current placement is their run 1 */
    "INSERT INTO job_runs(job, run, nodes, start_ms)"
    " SELECT id, 1, nodes, start_ms FROM jobs WHERE nodes != '';",
    /* ---- h-roles (issue 11): roles, membership, tokens, audit chain ----------------------
     * 5: project membership (lead|member per project and user); token revocation, and an
     * expiry for every user and join token that had none (90 days from the migration);
     * who held a job and at what level (a member cannot release an admin's hold); the
     * audit hash chain (rows written before have hash '' and are reported as unchained). */
    "CREATE TABLE members (project TEXT NOT NULL, user_name TEXT NOT NULL,"
    " role TEXT NOT NULL, PRIMARY KEY (project, user_name));"
    "CREATE INDEX members_user ON members(user_name);"
    "ALTER TABLE tokens ADD COLUMN revoked_ms INTEGER NOT NULL DEFAULT 0;"
    "UPDATE tokens SET expires_ms = CAST(strftime('%s', 'now') AS INTEGER) * 1000"
    " + 7776000000 WHERE expires_ms = 0 AND kind <> 'node';"
    "CREATE TABLE job_holds (job INTEGER PRIMARY KEY, user_name TEXT NOT NULL,"
    " level TEXT NOT NULL);"
    "ALTER TABLE audit ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE audit ADD COLUMN hash TEXT NOT NULL DEFAULT '';",
    /* ---- end h-roles ---------------------------------------------------------------- */
    /* ---- h-tls: secrets -------------------------------------------------------------
     * 6: the secrets of each project, sealed by docketd with AES-256-GCM
     * (src/controller/secrets.c). Only the nonce and the ciphertext with its tag are
     * here: the key lives in its own file, never in the database. */
    "CREATE TABLE secrets ("
    " project TEXT NOT NULL, name TEXT NOT NULL, nonce BLOB NOT NULL, sealed BLOB NOT NULL,"
    " set_by TEXT NOT NULL, set_ms INTEGER NOT NULL, PRIMARY KEY (project, name));",
    /* ---- h-conn (issue 11): an array's spec stored once ------------------------------
     * 7: a 10,000-task array of a 131 KB script wrote the spec 10,000 times (1.3 GB). A
     * task row whose spec_id is not 0 has '' in spec and reads the spec from job_specs
     * (the row with that id: the array's id), which also keeps it without "script" and
     * "env" (lean) for lists. Rows written before keep their own spec (spec_id 0). */
    ("CREATE TABLE job_specs (id INTEGER PRIMARY KEY, spec TEXT NOT NULL, lean TEXT NOT NULL);"
     "ALTER TABLE jobs ADD COLUMN spec_id INTEGER NOT NULL DEFAULT 0;"),
    /* ---- end h-conn ------------------------------------------------------------------ */
    /* ---- h-slurm: default project per user (Slurm's default account; docs/slurm.md) ---- */
    /* 8: the project a user's jobs go to when they name none */
    "CREATE TABLE user_defaults (user_name TEXT PRIMARY KEY, project TEXT NOT NULL);",
    /* ---- h-usage (issue 14): usage samples, downsampled (store.h "Usage samples") ----
     * 9: raw samples (1 h), minute sums (7 d), one summary per job (forever). NULL is an
     * unknown figure. Without rowid: the key is the order every read and prune uses. */
    "CREATE TABLE usage_raw (job INTEGER NOT NULL, node TEXT NOT NULL,"
    " time_ms INTEGER NOT NULL, run INTEGER NOT NULL, cpu_ms INTEGER, mem_bytes INTEGER,"
    " mem_peak_bytes INTEGER, io_read_bytes INTEGER, io_write_bytes INTEGER,"
    " gpu_util INTEGER, gpu_mem_mb INTEGER, gpu_power_mw INTEGER, gpu_temp_c INTEGER,"
    " gpu_errors INTEGER, PRIMARY KEY (job, node, time_ms)) WITHOUT ROWID;"
    "CREATE INDEX usage_raw_time ON usage_raw(time_ms);"
    "CREATE TABLE usage_minute (job INTEGER NOT NULL, minute_ms INTEGER NOT NULL,"
    " samples INTEGER NOT NULL, span_ms INTEGER NOT NULL, cpu_ms INTEGER,"
    " mem_sum INTEGER, mem_n INTEGER NOT NULL, mem_peak_bytes INTEGER,"
    " io_read_bytes INTEGER, io_write_bytes INTEGER, gpu_util_sum INTEGER,"
    " gpu_n INTEGER NOT NULL, gpu_mem_sum INTEGER, gpu_power_sum INTEGER,"
    " PRIMARY KEY (job, minute_ms)) WITHOUT ROWID;"
    "CREATE INDEX usage_minute_time ON usage_minute(minute_ms);"
    "CREATE TABLE usage_summary (job INTEGER PRIMARY KEY, run INTEGER NOT NULL,"
    " gpu_source TEXT NOT NULL, samples INTEGER NOT NULL, first_ms INTEGER NOT NULL,"
    " last_ms INTEGER NOT NULL, cpu_ms INTEGER NOT NULL, mem_peak_bytes INTEGER NOT NULL,"
    " io_read_bytes INTEGER NOT NULL, io_write_bytes INTEGER NOT NULL,"
    " gpu_util_sum INTEGER NOT NULL, gpu_samples INTEGER NOT NULL,"
    " gpu_idle_ms INTEGER NOT NULL, last_busy_ms INTEGER NOT NULL,"
    " idle_since_ms INTEGER NOT NULL, idle_flagged_ms INTEGER NOT NULL,"
    " gpu_errors INTEGER NOT NULL);",
    /* ---- end h-usage ----------------------------------------------------------------- */
    /* ---- h-alerts (issue 14): 10: alerts and reports -------------------------------
     * The history of alert instances (one row per firing, resolved_ms 0 while it fires),
     * the silences, and the end of each run (when, in which state, why), so usage
     * reports count GPU-time to the second. Runs ended before this schema take the time
     * of the first state event that left the run. */
    "CREATE TABLE alert_history ("
    " id INTEGER PRIMARY KEY, rule TEXT NOT NULL, alert_key TEXT NOT NULL,"
    " kind TEXT NOT NULL, severity TEXT NOT NULL, summary TEXT NOT NULL,"
    " fired_ms INTEGER NOT NULL, resolved_ms INTEGER NOT NULL DEFAULT 0,"
    " silenced INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX alert_history_open ON alert_history(resolved_ms, id);"
    "CREATE TABLE alert_silences ("
    " id INTEGER PRIMARY KEY, rule TEXT NOT NULL, alert_key TEXT NOT NULL,"
    " until_ms INTEGER NOT NULL, created_by TEXT NOT NULL, created_ms INTEGER NOT NULL,"
    " reason TEXT NOT NULL);"
    "ALTER TABLE job_runs ADD COLUMN end_ms INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE job_runs ADD COLUMN end_state TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE job_runs ADD COLUMN end_cause TEXT NOT NULL DEFAULT '';"
    "UPDATE job_runs SET end_ms = coalesce((SELECT min(e.time_ms) FROM job_events e"
    " WHERE e.job = job_runs.job AND e.type = 'state' AND e.time_ms >= job_runs.start_ms"
    " AND e.to_state NOT IN ('STARTING', 'RUNNING', 'STOPPING')), 0),"
    " end_state = coalesce((SELECT e.to_state FROM job_events e"
    " WHERE e.job = job_runs.job AND e.type = 'state' AND e.time_ms >= job_runs.start_ms"
    " AND e.to_state NOT IN ('STARTING', 'RUNNING', 'STOPPING') ORDER BY e.id LIMIT 1), '');"
    "CREATE INDEX job_runs_start ON job_runs(start_ms);",
    /* ---- h-slice (issue 11): big arrays written across loop turns -----------------
     * 11: an array whose rows are still being written, slice by slice, has a row here
     * (written with its first slice, deleted with its last, docs/controller.md "Big
     * submissions"); one still here at start is rolled back (store_arrays_rollback). */
    "CREATE TABLE arrays_writing (array_id INTEGER PRIMARY KEY, tasks INTEGER NOT NULL,"
    " started_ms INTEGER NOT NULL);",
};

/* Token kinds as stored (schema 3). */
static const char *const token_kind_names[] = {
    [STORE_TOKEN_USER] = "user", [STORE_TOKEN_NODE] = "node", [STORE_TOKEN_JOIN] = "join"};

static int token_kind_parse(const char *name)
{
    for (size_t i = 0; i < sizeof(token_kind_names) / sizeof(token_kind_names[0]); i++)
        if (strcmp(name, token_kind_names[i]) == 0)
            return (int)i;
    return -1;
}

enum stmt_id {
    S_COUNTER_GET,
    S_COUNTER_SET,
    S_JOB_INSERT,
    S_JOB_UPDATE,
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

#define JOB_COLS_WITH(SPEC)                                                                        \
    "id, array_id, array_index, name, project, user_name, tier, class, state, stop_cause,"         \
    " submit_ms, start_ms, end_ms, preempt_count, preemptor, nodes, " SPEC ", alloc, exit, usage," \
    " core, gpus, cpus, nnodes, signal, retries, array_limit, flags, mem_mb, time_limit_ms,"       \
    " begin_ms, grace_ms, gpu_type, deps, selectors, spec_id"
#define JOB_INSERT_COLS JOB_COLS_WITH("spec")
#define JOB_COLS        JOB_COLS_WITH(SPEC_OF("spec"))
/* The same without the spec JSON (column 16 reads NULL). */
#define JOB_COLS_NO_SPEC JOB_COLS_WITH("NULL")
/* For lists: the spec without its two big members: an array's kept so, another row's cut
 * by SQLite (no copy, no parse here). */
#define JOB_COLS_LEAN                                                                              \
    JOB_COLS_WITH("CASE WHEN spec_id = 0 THEN json_remove(spec, '$.script', '$.env')"              \
                  " ELSE (SELECT s.lean FROM job_specs s WHERE s.id = jobs.spec_id) END")
#define TOKEN_COLS "hash, kind, user_name, role, created_ms, expires_ms, revoked_ms"
#define NODE_COLS                                                                                  \
    "name, state, reason, gpu_type, gpus, gpu_mem_mb, cpus, mem_mb, labels, info,"                 \
    " last_heartbeat_ms, cmd_seq"

static const char *const stmt_sql[S_COUNT] = {
    [S_COUNTER_GET] = "SELECT value FROM counters WHERE name = ?1",
    [S_COUNTER_SET] = "INSERT INTO counters(name, value) VALUES (?1, ?2)"
                      " ON CONFLICT(name) DO UPDATE SET value = excluded.value",
    [S_JOB_INSERT] = "INSERT INTO jobs(" JOB_INSERT_COLS ") VALUES"
                     " (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,"
                     " ?21,?22,?23,?24,?25,?26,?27,?28,?29,?30,?31,?32,?33,?34,?35,?36)",
    [S_SPEC_PUT] = "INSERT INTO job_specs(id, spec, lean) VALUES (?1, ?2, ?3)",
    [S_JOB_UPDATE] = "UPDATE jobs SET state = ?9, stop_cause = ?10, start_ms = ?12,"
                     " end_ms = ?13, preempt_count = ?14, preemptor = ?15, nodes = ?16,"
                     " alloc = ?18, exit = ?19, usage = ?20, tier = ?7 WHERE id = ?1",
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
    [S_TOKEN_PUT] = "INSERT INTO tokens(hash, kind, user_name, role, created_ms, expires_ms)"
                    " VALUES (?1,?2,?3,?4,?5,?6)",
    [S_TOKEN_GET] = "SELECT " TOKEN_COLS " FROM tokens WHERE hash = ?1",
    [S_TOKEN_DEL_USER] = "DELETE FROM tokens WHERE kind = ?1 AND user_name = ?2",
    [S_TOKEN_REVOKE] = "UPDATE tokens SET revoked_ms = ?2 WHERE hash = ?1 AND revoked_ms = 0",
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
    [S_RUN_ADD] = "INSERT INTO job_runs(job, run, nodes, start_ms) VALUES (?1, ?2, ?3, ?4)",
    [S_RUN_GET] =
        "SELECT job, run, nodes, start_ms, final FROM job_runs WHERE job = ?1 AND run = ?2",
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

struct store {
    sqlite3 *db;
    int wal_fd;             /* the -wal file, for store_sync */
    _Atomic int wal_frames; /* frames in the WAL at this connection's last commit */
    sqlite3_stmt *stmt[S_COUNT];
    sqlite3_stmt *ustmt[STORE_USAGE_NSTMT]; /* usage.c's, prepared on first use */
    bool in_tx;
    char errmsg[256];
    void (*job_write_fn)(void *arg, uint64_t id); /* store_set_job_write_hook */
    void *job_write_arg;
};

sqlite3 *store_db(struct store *st)
{
    return st->db;
}

int store_fail(struct store *st, const char *what)
{
    snprintf(st->errmsg, sizeof(st->errmsg), "%s: %s", what, sqlite3_errmsg(st->db));
    return -EIO;
}

int store_prepare(struct store *st, const char *sql, sqlite3_stmt **s)
{
    if (sqlite3_prepare_v2(st->db, sql, -1, s, NULL) == SQLITE_OK)
        return 0;
    *s = NULL;
    return store_fail(st, "prepare");
}

int store_step_finalize(struct store *st, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_fail(st, what);
    sqlite3_finalize(s);
    return rc;
}

sqlite3_stmt *store_usage_stmt(struct store *st, int i, const char *sql)
{
    if (!st->ustmt[i] && sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
                                            &st->ustmt[i], NULL) != SQLITE_OK) {
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

/* Run a prepared statement that returns no rows, then reset it. */
static int step_done(struct store *st, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (rc != SQLITE_DONE)
        return fail(st, what);
    return 0;
}

static sqlite3_stmt *stmt(struct store *st, enum stmt_id id)
{
    return st->stmt[id];
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

static char *col_dup(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    return t ? xstrdup((const char *)t) : NULL;
}

static void col_copy(sqlite3_stmt *s, int i, char *dst, size_t len)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    str_copy(dst, len, t ? (const char *)t : "");
}

static int exec(struct store *st, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(st->errmsg, sizeof(st->errmsg), "%s", msg ? msg : "sqlite error");
        sqlite3_free(msg);
        return -EIO;
    }
    return 0;
}

int store_schema_version(struct store *st)
{
    sqlite3_stmt *s;
    int v = -1;
    if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return v;
}

static int migrate(struct store *st)
{
    int n = (int)(sizeof(migrations) / sizeof(migrations[0]));
    int v = store_schema_version(st);
    if (v < 0)
        return fail(st, "read schema version");
    if (v > n) {
        snprintf(st->errmsg, sizeof(st->errmsg),
                 "database schema version %d is newer than this docketd (%d)", v, n);
        return -EPROTO;
    }
    for (; v < n; v++) {
        char pragma[48];
        snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", v + 1);
        if (exec(st, "BEGIN IMMEDIATE") < 0)
            return -EIO;
        if (exec(st, migrations[v]) < 0 || exec(st, pragma) < 0) {
            char keep[200];
            str_copy(keep, sizeof(keep), st->errmsg);
            exec(st, "ROLLBACK");
            snprintf(st->errmsg, sizeof(st->errmsg), "migration %d: %s", v + 1, keep);
            return -EIO;
        }
        if (exec(st, "COMMIT") < 0)
            return -EIO;
    }
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

struct store *store_open(const char *path, char *err, size_t errlen)
{
    struct store *st = calloc(1, sizeof(*st));
    if (!st) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    st->wal_fd = -1;
    restrict_mode(path);
    if (sqlite3_open_v2(path, &st->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open '%s': %s", path,
                 st->db ? sqlite3_errmsg(st->db) : "out of memory");
        store_close(st);
        return NULL;
    }
    sqlite3_busy_timeout(st->db, 5000);
    if (exec(st, "PRAGMA journal_mode = WAL") < 0 || exec(st, "PRAGMA synchronous = FULL") < 0 ||
        exec(st, "PRAGMA foreign_keys = ON") < 0 || migrate(st) < 0) {
        snprintf(err, errlen, "'%s': %s", path, st->errmsg);
        store_close(st);
        return NULL;
    }
    char wal[4096];
    snprintf(wal, sizeof(wal), "%s-wal", path);
    st->wal_fd = open(wal, O_RDONLY | O_CLOEXEC); /* exists once WAL mode wrote (migrations) */
    for (int i = 0; i < S_COUNT; i++)
        if (sqlite3_prepare_v3(st->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &st->stmt[i],
                               NULL) != SQLITE_OK) {
            snprintf(err, errlen, "prepare statement %d: %s", i, sqlite3_errmsg(st->db));
            store_close(st);
            return NULL;
        }
    return st;
}

struct store *store_open_readonly(const char *path, char *err, size_t errlen)
{
    int n = (int)(sizeof(migrations) / sizeof(migrations[0]));
    struct store *st = calloc(1, sizeof(*st));
    if (!st) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    st->wal_fd = -1;
    if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "cannot open '%s' read-only: %s", path,
                 st->db ? sqlite3_errmsg(st->db) : "out of memory");
        store_close(st);
        return NULL;
    }
    sqlite3_busy_timeout(st->db, 5000);
    int v = store_schema_version(st);
    if (v != n) {
        if (v < 0)
            snprintf(err, errlen, "'%s': not a docketd database (%s)", path,
                     sqlite3_errmsg(st->db));
        else
            snprintf(err, errlen, "'%s': schema version %d, this build reads %d (%s)", path, v, n,
                     v < n ? "start docketd once on it to migrate it" : "use a newer build");
        store_close(st);
        return NULL;
    }
    /* the write statements prepare on a read-only connection too; only running them fails */
    for (int i = 0; i < S_COUNT; i++)
        if (sqlite3_prepare_v3(st->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &st->stmt[i],
                               NULL) != SQLITE_OK) {
            snprintf(err, errlen, "'%s': prepare statement %d: %s", path, i,
                     sqlite3_errmsg(st->db));
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
        sqlite3_finalize(st->stmt[i]);
    for (int i = 0; i < STORE_USAGE_NSTMT; i++)
        sqlite3_finalize(st->ustmt[i]);
    sqlite3_close(st->db);
    if (st->wal_fd >= 0)
        close(st->wal_fd);
    free(st);
}

/* ------------------------------------------------------------------------------------ */

int store_set_external_sync(struct store *st)
{
    if (st->wal_fd < 0) {
        snprintf(st->errmsg, sizeof(st->errmsg), "no WAL file to sync");
        return -ENOENT;
    }
    return exec(st, "PRAGMA synchronous = NORMAL");
}

/* The WAL hook: called in COMMIT (on the thread of `st`) with the frames the WAL holds.
 * Installing it also removes SQLite's own hook, the automatic checkpoint. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
    (void)db;
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
    st->job_write_fn = fn;
    st->job_write_arg = arg;
    sqlite3_update_hook(st->db, fn ? update_hook : NULL, fn ? st : NULL);
}

int store_set_external_checkpoint(struct store *st)
{
    if (exec(st, "PRAGMA wal_autocheckpoint = 0") < 0)
        return -EIO;
    sqlite3_wal_hook(st->db, wal_hook, st);
    return 0;
}

int store_wal_autocheckpoint(struct store *st)
{
    sqlite3_stmt *s;
    int v = -1;
    if (sqlite3_prepare_v2(st->db, "PRAGMA wal_autocheckpoint", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return v;
}

int store_wal_frames(const struct store *st)
{
    return atomic_load_explicit(&st->wal_frames, memory_order_relaxed);
}

const char *store_path(struct store *st)
{
    const char *p = sqlite3_db_filename(st->db, "main");
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
    if (st->wal_fd < 0)
        return 0; /* synchronous=FULL still: COMMIT synced already */
    return fdatasync(st->wal_fd) < 0 ? -errno : 0;
}

int store_begin(struct store *st)
{
    if (st->in_tx)
        return 0;
    int rc = step_done(st, stmt(st, S_BEGIN), "begin");
    if (rc == 0)
        st->in_tx = true;
    return rc;
}

bool store_in_tx(const struct store *st)
{
    return st->in_tx;
}

int store_commit(struct store *st)
{
    if (!st->in_tx)
        return 0;
    int rc = step_done(st, stmt(st, S_COMMIT), "commit");
    if (rc < 0) {
        store_rollback(st);
        return rc;
    }
    st->in_tx = false;
    return 0;
}

int store_rollback(struct store *st)
{
    if (!st->in_tx)
        return 0;
    st->in_tx = false;
    if (sqlite3_get_autocommit(st->db))
        return 0; /* SQLite already rolled back (e.g. after an I/O error) */
    return step_done(st, stmt(st, S_ROLLBACK), "rollback");
}

int store_savepoint(struct store *st)
{
    int rc = store_begin(st);
    return rc < 0 ? rc : step_done(st, stmt(st, S_SAVEPOINT), "savepoint");
}

int store_release(struct store *st)
{
    return step_done(st, stmt(st, S_RELEASE), "release savepoint");
}

int store_rollback_to(struct store *st)
{
    int rc = step_done(st, stmt(st, S_ROLLBACK_TO), "rollback to savepoint");
    int rc2 = step_done(st, stmt(st, S_RELEASE), "release savepoint");
    return rc < 0 ? rc : rc2;
}

int store_counter_get(struct store *st, const char *name, int64_t *out)
{
    sqlite3_stmt *s = stmt(st, S_COUNTER_GET);
    bind_text(s, 1, name);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : fail(st, "counter get");
}

int store_counter_set(struct store *st, const char *name, int64_t v)
{
    sqlite3_stmt *s = stmt(st, S_COUNTER_SET);
    bind_text(s, 1, name);
    sqlite3_bind_int64(s, 2, v);
    return step_done(st, s, "counter set");
}

/* ------------------------------------------------------------------------------------ */
/* Jobs                                                                                  */

void store_job_release(struct store_job *j)
{
    free(j->spec);
    free(j->alloc);
    free(j->exit);
    free(j->usage);
    j->spec = j->alloc = j->exit = j->usage = NULL;
}

/* Binds ?1..?36; the UPDATE uses fewer (SQLite ignores binding the ones it lacks). */
static void bind_job(sqlite3_stmt *s, const struct store_job *j)
{
    sqlite3_bind_int64(s, 1, (sqlite3_int64)j->id);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)j->array_id);
    sqlite3_bind_int(s, 3, j->array_index);
    bind_text(s, 4, j->name);
    bind_text(s, 5, j->project);
    bind_text(s, 6, j->user);
    bind_text(s, 7, j->tier);
    bind_text(s, 8, j->class_name);
    bind_text(s, 9, sched_job_state_name((enum sched_job_state)j->state));
    bind_text(s, 10, j->stop_cause);
    sqlite3_bind_int64(s, 11, j->submit_ms);
    sqlite3_bind_int64(s, 12, j->start_ms);
    sqlite3_bind_int64(s, 13, j->end_ms);
    sqlite3_bind_int(s, 14, j->preempt_count);
    sqlite3_bind_int64(s, 15, (sqlite3_int64)j->preemptor);
    bind_text(s, 16, j->nodes);
    bind_text(s, 17, j->spec_id ? "" : j->spec ? j->spec : "{}");
    bind_text(s, 18, j->alloc);
    bind_text(s, 19, j->exit);
    bind_text(s, 20, j->usage);
    sqlite3_bind_int(s, 21, j->has_core);
    sqlite3_bind_int(s, 22, j->gpus);
    sqlite3_bind_int(s, 23, j->cpus);
    sqlite3_bind_int(s, 24, j->nnodes);
    sqlite3_bind_int(s, 25, j->signal);
    sqlite3_bind_int(s, 26, j->retries);
    sqlite3_bind_int(s, 27, j->array_limit);
    sqlite3_bind_int(s, 28, j->flags);
    sqlite3_bind_int64(s, 29, j->mem_mb);
    sqlite3_bind_int64(s, 30, j->time_limit_ms);
    sqlite3_bind_int64(s, 31, j->begin_ms);
    sqlite3_bind_int64(s, 32, j->grace_ms);
    bind_text(s, 33, j->gpu_type);
    bind_text(s, 34, j->deps);
    bind_text(s, 35, j->selectors);
    sqlite3_bind_int64(s, 36, (sqlite3_int64)j->spec_id);
}

/* Fill j from the row; -EIO with st's message when the row holds a state this docketd
 * does not know (j is then released). */
static int read_job(struct store *st, sqlite3_stmt *s, struct store_job *j)
{
    memset(j, 0, sizeof(*j));
    j->id = (uint64_t)sqlite3_column_int64(s, 0);
    j->array_id = (uint64_t)sqlite3_column_int64(s, 1);
    j->array_index = sqlite3_column_int(s, 2);
    col_copy(s, 3, j->name, sizeof(j->name));
    col_copy(s, 4, j->project, sizeof(j->project));
    col_copy(s, 5, j->user, sizeof(j->user));
    col_copy(s, 6, j->tier, sizeof(j->tier));
    col_copy(s, 7, j->class_name, sizeof(j->class_name));
    const unsigned char *state = sqlite3_column_text(s, 8);
    j->state = sched_job_state_parse(state ? (const char *)state : "");
    col_copy(s, 9, j->stop_cause, sizeof(j->stop_cause));
    j->submit_ms = sqlite3_column_int64(s, 10);
    j->start_ms = sqlite3_column_int64(s, 11);
    j->end_ms = sqlite3_column_int64(s, 12);
    j->preempt_count = sqlite3_column_int(s, 13);
    j->preemptor = (uint64_t)sqlite3_column_int64(s, 14);
    col_copy(s, 15, j->nodes, sizeof(j->nodes));
    j->spec = col_dup(s, 16);
    j->alloc = col_dup(s, 17);
    j->exit = col_dup(s, 18);
    j->usage = col_dup(s, 19);
    j->has_core = sqlite3_column_int(s, 20) != 0;
    j->gpus = sqlite3_column_int(s, 21);
    j->cpus = sqlite3_column_int(s, 22);
    j->nnodes = sqlite3_column_int(s, 23);
    j->signal = sqlite3_column_int(s, 24);
    j->retries = sqlite3_column_int(s, 25);
    j->array_limit = sqlite3_column_int(s, 26);
    j->flags = sqlite3_column_int(s, 27);
    j->mem_mb = sqlite3_column_int64(s, 28);
    j->time_limit_ms = sqlite3_column_int64(s, 29);
    j->begin_ms = sqlite3_column_int64(s, 30);
    j->grace_ms = sqlite3_column_int64(s, 31);
    col_copy(s, 32, j->gpu_type, sizeof(j->gpu_type));
    col_copy(s, 33, j->deps, sizeof(j->deps));
    col_copy(s, 34, j->selectors, sizeof(j->selectors));
    j->spec_id = (uint64_t)sqlite3_column_int64(s, 35);
    if (j->state < 0) {
        snprintf(st->errmsg, sizeof(st->errmsg), "job %llu: unknown state '%.32s'",
                 (unsigned long long)j->id, state ? (const char *)state : "");
        store_job_release(j);
        return -EIO;
    }
    return 0;
}

static int check_state(struct store *st, const struct store_job *j)
{
    if (j->state >= 0 && j->state < SCHED_JOB_STATE_COUNT)
        return 0;
    snprintf(st->errmsg, sizeof(st->errmsg), "job %llu: no such state %d",
             (unsigned long long)j->id, j->state);
    return -EINVAL;
}

int store_job_insert(struct store *st, const struct store_job *j)
{
    if (check_state(st, j) < 0)
        return -EINVAL;
    sqlite3_stmt *s = stmt(st, S_JOB_INSERT);
    bind_job(s, j);
    return step_done(st, s, "insert job");
}

int store_spec_put(struct store *st, uint64_t id, const char *spec, const char *lean)
{
    sqlite3_stmt *s = stmt(st, S_SPEC_PUT);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
    bind_text(s, 2, spec);
    bind_text(s, 3, lean);
    return step_done(st, s, "put spec");
}

int store_job_update(struct store *st, const struct store_job *j)
{
    if (check_state(st, j) < 0)
        return -EINVAL;
    sqlite3_stmt *s = stmt(st, S_JOB_UPDATE);
    bind_job(s, j);
    int rc = step_done(st, s, "update job");
    if (rc == 0 && sqlite3_changes(st->db) == 0)
        return -ENOENT;
    return rc;
}

int store_job_get(struct store *st, uint64_t id, struct store_job *out)
{
    sqlite3_stmt *s = stmt(st, S_JOB_GET);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(s);
    int bad = rc == SQLITE_ROW ? read_job(st, s, out) : 0;
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (bad < 0)
        return bad;
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : fail(st, "get job");
}

int64_t store_job_count(struct store *st)
{
    sqlite3_stmt *s = stmt(st, S_JOB_COUNT);
    int64_t n = -1;
    if (sqlite3_step(s) == SQLITE_ROW)
        n = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    return n;
}

static void add_text_filter(struct dbuf *sql, const char *col, const char *v, int *nparam)
{
    if (!v)
        return;
    (*nparam)++;
    dbuf_printf(sql, " AND %s = ?%d", col, *nparam);
}

/* The list query is built from the filters present; every value is a bound parameter. */
int store_job_list(struct store *st, const struct store_job_filter *f, store_job_cb cb, void *arg)
{
    struct dbuf sql;
    int np = 0, rc = 0;
    dbuf_init(&sql, 4096);
    dbuf_puts(&sql, f->skip_spec ? "SELECT " JOB_COLS_NO_SPEC " FROM jobs WHERE 1 = 1"
                    : f->lean    ? "SELECT " JOB_COLS_LEAN " FROM jobs WHERE 1 = 1"
                                 : "SELECT " JOB_COLS " FROM jobs WHERE 1 = 1");
    if (f->state_mask) { /* the core's names: capitals and '_', nothing to escape */
        dbuf_puts(&sql, " AND state IN (''");
        for (int i = 0; i < SCHED_JOB_STATE_COUNT; i++)
            if (f->state_mask & (1u << i))
                dbuf_printf(&sql, ",'%s'", sched_job_state_name((enum sched_job_state)i));
        dbuf_puts(&sql, ")");
    }
    add_text_filter(&sql, "project", f->project, &np);
    add_text_filter(&sql, "user_name", f->user, &np);
    add_text_filter(&sql, "tier", f->tier, &np);
    add_text_filter(&sql, "class", f->class_name, &np);
    add_text_filter(&sql, "name", f->name, &np);
    if (f->node)
        /* instr, not LIKE: a node name is matched exactly, '%' and '_' are no wildcards */
        dbuf_printf(&sql, " AND instr(nodes, ',' || ?%d || ',') > 0", ++np);
    if (f->array_id)
        dbuf_printf(&sql, " AND array_id = ?%d", ++np);
    if (f->since_ms)
        dbuf_printf(&sql, " AND submit_ms >= ?%d", ++np);
    /* an array still being written is not there yet (docs/controller.md "Big submissions") */
    dbuf_puts(&sql,
              " AND NOT (array_id <> 0 AND array_id IN (SELECT array_id FROM arrays_writing))");
    if (f->after)
        dbuf_printf(&sql, " AND id %s ?%d", f->desc ? "<" : ">", ++np);
    dbuf_printf(&sql, " ORDER BY id %s LIMIT %d", f->desc ? "DESC" : "ASC",
                f->limit > 0 ? f->limit : 100);
    sqlite3_stmt *s = NULL;
    if (sql.failed || sqlite3_prepare_v2(st->db, sql.data, -1, &s, NULL) != SQLITE_OK) {
        dbuf_release(&sql);
        return fail(st, "prepare job list");
    }
    dbuf_release(&sql);
    np = 0;
    const char *texts[] = {f->project, f->user, f->tier, f->class_name, f->name, f->node};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        if (texts[i])
            bind_text(s, ++np, texts[i]);
    if (f->array_id)
        sqlite3_bind_int64(s, ++np, (sqlite3_int64)f->array_id);
    if (f->since_ms)
        sqlite3_bind_int64(s, ++np, f->since_ms);
    if (f->after)
        sqlite3_bind_int64(s, ++np, (sqlite3_int64)f->after);
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_job j;
        if ((rc = read_job(st, s, &j)) < 0)
            break;
        rc = cb(arg, &j);
        store_job_release(&j);
        if (rc)
            break;
    }
    if (!rc && step != SQLITE_DONE && step != SQLITE_ROW)
        rc = fail(st, "list jobs");
    sqlite3_finalize(s);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Events                                                                                */

int store_event_add(struct store *st, const struct store_event *e)
{
    sqlite3_stmt *s = stmt(st, S_EVENT_ADD);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)e->job);
    sqlite3_bind_int64(s, 2, e->time_ms);
    bind_text(s, 3, e->type ? e->type : "");
    bind_text(s, 4, e->from ? e->from : "");
    bind_text(s, 5, e->to ? e->to : "");
    bind_text(s, 6, e->node ? e->node : "");
    bind_text(s, 7, e->reason ? e->reason : "");
    bind_text(s, 8, e->detail ? e->detail : "");
    return step_done(st, s, "add event");
}

int store_event_list(struct store *st, uint64_t job, int64_t after, int limit, store_event_cb cb,
                     void *arg)
{
    sqlite3_stmt *s = stmt(st, S_EVENT_LIST);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(s, 2, after);
    sqlite3_bind_int(s, 3, limit > 0 ? limit : -1);
    int step, rc = 0;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_event e = {
            .id = sqlite3_column_int64(s, 8),
            .job = (uint64_t)sqlite3_column_int64(s, 0),
            .time_ms = sqlite3_column_int64(s, 1),
            .type = (const char *)sqlite3_column_text(s, 2),
            .from = (const char *)sqlite3_column_text(s, 3),
            .to = (const char *)sqlite3_column_text(s, 4),
            .node = (const char *)sqlite3_column_text(s, 5),
            .reason = (const char *)sqlite3_column_text(s, 6),
            .detail = (const char *)sqlite3_column_text(s, 7),
        };
        if ((rc = cb(arg, &e)))
            break;
    }
    if (!rc && step != SQLITE_DONE)
        rc = fail(st, "list events");
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
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
    sqlite3_stmt *s = stmt(st, S_NODE_PUT);
    bind_text(s, 1, n->name);
    bind_text(s, 2, n->state);
    bind_text(s, 3, n->reason);
    bind_text(s, 4, n->gpu_type);
    sqlite3_bind_int(s, 5, n->gpus);
    sqlite3_bind_int64(s, 6, n->gpu_mem_mb);
    sqlite3_bind_int(s, 7, n->cpus);
    sqlite3_bind_int64(s, 8, n->mem_mb);
    bind_text(s, 9, n->labels ? n->labels : "{}");
    bind_text(s, 10, n->info ? n->info : "{}");
    sqlite3_bind_int64(s, 11, n->last_heartbeat_ms);
    sqlite3_bind_int64(s, 12, n->cmd_seq);
    return step_done(st, s, "put node");
}

static void read_node(sqlite3_stmt *s, struct store_node *n)
{
    memset(n, 0, sizeof(*n));
    col_copy(s, 0, n->name, sizeof(n->name));
    col_copy(s, 1, n->state, sizeof(n->state));
    col_copy(s, 2, n->reason, sizeof(n->reason));
    col_copy(s, 3, n->gpu_type, sizeof(n->gpu_type));
    n->gpus = sqlite3_column_int(s, 4);
    n->gpu_mem_mb = sqlite3_column_int64(s, 5);
    n->cpus = sqlite3_column_int(s, 6);
    n->mem_mb = sqlite3_column_int64(s, 7);
    n->labels = col_dup(s, 8);
    n->info = col_dup(s, 9);
    n->last_heartbeat_ms = sqlite3_column_int64(s, 10);
    n->cmd_seq = sqlite3_column_int64(s, 11);
}

int store_node_get(struct store *st, const char *name, struct store_node *out)
{
    sqlite3_stmt *s = stmt(st, S_NODE_GET);
    bind_text(s, 1, name);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        read_node(s, out);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : fail(st, "get node");
}

int store_node_list(struct store *st, store_node_cb cb, void *arg)
{
    sqlite3_stmt *s = stmt(st, S_NODE_LIST);
    int step, rc = 0;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_node n;
        read_node(s, &n);
        rc = cb(arg, &n);
        store_node_release(&n);
        if (rc)
            break;
    }
    if (!rc && step != SQLITE_DONE)
        rc = fail(st, "list nodes");
    sqlite3_reset(s);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Projects, policy                                                                      */

int store_project_put(struct store *st, const char *name, const char *json)
{
    sqlite3_stmt *s = stmt(st, S_PROJECT_PUT);
    bind_text(s, 1, name);
    bind_text(s, 2, json);
    return step_done(st, s, "put project");
}

int store_default_project_get(struct store *st, const char *user, char *project, size_t len)
{
    sqlite3_stmt *s = stmt(st, S_DEFAULT_GET);
    bind_text(s, 1, user);
    int step = sqlite3_step(s), rc = 0;
    if (step == SQLITE_ROW)
        rc = str_copy(project, len, (const char *)sqlite3_column_text(s, 0)) < 0 ? -EIO : 0;
    else
        rc = step == SQLITE_DONE ? -ENOENT : fail(st, "get default project");
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
}

int store_default_project_set(struct store *st, const char *user, const char *project)
{
    sqlite3_stmt *s = stmt(st, project ? S_DEFAULT_SET : S_DEFAULT_DEL);
    bind_text(s, 1, user);
    if (project)
        bind_text(s, 2, project);
    return step_done(st, s, "set default project");
}

int store_project_list(struct store *st, store_doc_cb cb, void *arg)
{
    sqlite3_stmt *s = stmt(st, S_PROJECT_LIST);
    int step, rc = 0;
    while ((step = sqlite3_step(s)) == SQLITE_ROW)
        if ((rc = cb(arg, (const char *)sqlite3_column_text(s, 0),
                     (const char *)sqlite3_column_text(s, 1))))
            break;
    if (!rc && step != SQLITE_DONE)
        rc = fail(st, "list projects");
    sqlite3_reset(s);
    return rc;
}

int store_policy_put(struct store *st, const char *json)
{
    sqlite3_stmt *s = stmt(st, S_POLICY_PUT);
    bind_text(s, 1, json);
    return step_done(st, s, "put policy");
}

int store_policy_get(struct store *st, char **json)
{
    sqlite3_stmt *s = stmt(st, S_POLICY_GET);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *json = col_dup(s, 0);
    sqlite3_reset(s);
    if (rc == SQLITE_ROW)
        return *json ? 0 : -ENOMEM;
    return rc == SQLITE_DONE ? -ENOENT : fail(st, "get policy");
}

/* ------------------------------------------------------------------------------------ */
/* Tokens                                                                                */

void store_token_hash(const char *token, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    static const char hex[] = "0123456789abcdef";
    EVP_Digest(token, strlen(token), md, &n, EVP_sha256(), NULL);
    for (unsigned int i = 0; i < n && i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}

int store_token_put(struct store *st, const struct store_token *t)
{
    if ((int)t->kind < 0 ||
        (size_t)t->kind >= sizeof(token_kind_names) / sizeof(token_kind_names[0]))
        return -EINVAL;
    sqlite3_stmt *s = stmt(st, S_TOKEN_PUT);
    bind_text(s, 1, t->hash);
    bind_text(s, 2, token_kind_names[t->kind]);
    bind_text(s, 3, t->user);
    bind_text(s, 4, t->role);
    sqlite3_bind_int64(s, 5, t->created_ms);
    sqlite3_bind_int64(s, 6, t->expires_ms);
    return step_done(st, s, "put token");
}

/* Fill `out` from a row of TOKEN_COLS. -EIO for a kind this docketd does not know. */
static int token_row(struct store *st, sqlite3_stmt *s, struct store_token *out)
{
    memset(out, 0, sizeof(*out));
    col_copy(s, 0, out->hash, sizeof(out->hash));
    const unsigned char *kind = sqlite3_column_text(s, 1);
    int k = token_kind_parse(kind ? (const char *)kind : "");
    if (k < 0) { /* never a credential of unknown power */
        snprintf(st->errmsg, sizeof(st->errmsg), "token: unknown kind '%.16s'",
                 kind ? (const char *)kind : "");
        return -EIO;
    }
    out->kind = (enum store_token_kind)k;
    col_copy(s, 2, out->user, sizeof(out->user));
    col_copy(s, 3, out->role, sizeof(out->role));
    out->created_ms = sqlite3_column_int64(s, 4);
    out->expires_ms = sqlite3_column_int64(s, 5);
    out->revoked_ms = sqlite3_column_int64(s, 6);
    memcpy(out->id, out->hash, STORE_TOKEN_ID_LEN);
    out->id[STORE_TOKEN_ID_LEN] = '\0';
    return 0;
}

int store_token_get(struct store *st, const char *hash, struct store_token *out)
{
    sqlite3_stmt *s = stmt(st, S_TOKEN_GET);
    bind_text(s, 1, hash);
    int rc = sqlite3_step(s), trc = 0;
    if (rc == SQLITE_ROW)
        trc = token_row(st, s, out);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (trc < 0)
        return trc;
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : fail(st, "get token");
}

int store_token_list(struct store *st, const char *user, const char *id, store_token_cb cb,
                     void *arg)
{
    sqlite3_stmt *s = stmt(st, S_TOKEN_LIST);
    bind_text(s, 1, user);
    bind_text(s, 2, id);
    int step, rc = 0;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_token t;
        if ((rc = token_row(st, s, &t)) < 0 || (rc = cb(arg, &t)) != 0)
            break;
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = fail(st, "list tokens");
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
}

int store_token_revoke(struct store *st, const char *hash, int64_t now_ms)
{
    sqlite3_stmt *s = stmt(st, S_TOKEN_REVOKE);
    bind_text(s, 1, hash);
    sqlite3_bind_int64(s, 2, now_ms);
    int rc = step_done(st, s, "revoke token");
    if (rc == 0 && sqlite3_changes(st->db) == 0)
        return -ENOENT;
    return rc;
}

int store_token_delete_user(struct store *st, enum store_token_kind kind, const char *user)
{
    if ((int)kind < 0 || (size_t)kind >= sizeof(token_kind_names) / sizeof(token_kind_names[0]))
        return -EINVAL;
    sqlite3_stmt *s = stmt(st, S_TOKEN_DEL_USER);
    bind_text(s, 1, token_kind_names[kind]);
    bind_text(s, 2, user);
    return step_done(st, s, "delete tokens");
}

int store_token_live(struct store *st, enum store_token_kind kind, const char *user, int64_t now_ms)
{
    if ((int)kind < 0 || (size_t)kind >= sizeof(token_kind_names) / sizeof(token_kind_names[0]))
        return -EINVAL;
    sqlite3_stmt *s = stmt(st, S_TOKEN_LIVE);
    bind_text(s, 1, token_kind_names[kind]);
    bind_text(s, 2, user);
    sqlite3_bind_int64(s, 3, now_ms);
    int rc = sqlite3_step(s), n = rc == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_ROW ? n > 0 : fail(st, "count tokens");
}

static int token_role_stmt(struct store *st, enum stmt_id id, enum store_token_kind kind,
                           const char *user, const char *role, const char *to)
{
    if ((int)kind < 0 || (size_t)kind >= sizeof(token_kind_names) / sizeof(token_kind_names[0]))
        return -EINVAL;
    sqlite3_stmt *s = stmt(st, id);
    bind_text(s, 1, token_kind_names[kind]);
    bind_text(s, 2, user);
    bind_text(s, 3, role);
    if (to)
        bind_text(s, 4, to);
    return step_done(st, s, "update tokens");
}

int store_token_delete_role(struct store *st, enum store_token_kind kind, const char *user,
                            const char *role)
{
    return token_role_stmt(st, S_TOKEN_DEL_ROLE, kind, user, role, NULL);
}

int store_token_set_role(struct store *st, enum store_token_kind kind, const char *user,
                         const char *from, const char *to)
{
    return token_role_stmt(st, S_TOKEN_SET_ROLE, kind, user, from, to);
}

/* ------------------------------------------------------------------------------------ */
/* Runs                                                                                  */

int store_run_add(struct store *st, const struct store_run *r)
{
    sqlite3_stmt *s = stmt(st, S_RUN_ADD);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)r->job);
    sqlite3_bind_int(s, 2, r->run);
    bind_text(s, 3, r->nodes);
    sqlite3_bind_int64(s, 4, r->start_ms);
    return step_done(st, s, "add run");
}

int store_run_get(struct store *st, uint64_t job, int run, struct store_run *out)
{
    sqlite3_stmt *s = stmt(st, S_RUN_GET);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
    sqlite3_bind_int(s, 2, run);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        memset(out, 0, sizeof(*out));
        out->job = (uint64_t)sqlite3_column_int64(s, 0);
        out->run = sqlite3_column_int(s, 1);
        col_copy(s, 2, out->nodes, sizeof(out->nodes));
        out->start_ms = sqlite3_column_int64(s, 3);
        out->final_mask = sqlite3_column_int(s, 4);
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : fail(st, "get run");
}

int store_run_last(struct store *st, uint64_t job)
{
    sqlite3_stmt *s = stmt(st, S_RUN_LAST);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
    int rc = sqlite3_step(s), n = rc == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_ROW ? n : fail(st, "last run");
}

int store_run_started(struct store *st, uint64_t job, int64_t start_ms)
{
    sqlite3_stmt *s = stmt(st, S_RUN_STARTED);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(s, 2, start_ms);
    return step_done(st, s, "start run");
}

int store_run_end(struct store *st, uint64_t job, int64_t end_ms, const char *state,
                  const char *cause)
{
    sqlite3_stmt *s = stmt(st, S_RUN_END);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
    sqlite3_bind_int64(s, 2, end_ms);
    sqlite3_bind_text(s, 3, state ? state : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, cause ? cause : "", -1, SQLITE_STATIC);
    return step_done(st, s, "end run");
}

int store_run_set_final(struct store *st, uint64_t job, int run, int mask)
{
    sqlite3_stmt *s = stmt(st, S_RUN_FINAL);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
    sqlite3_bind_int(s, 2, run);
    sqlite3_bind_int(s, 3, mask);
    return step_done(st, s, "set run final");
}

/* ------------------------------------------------------------------------------------ */
/* Audit                                                                                 */

/* Feed one field to the digest as "LENGTH:BYTES," (NULL as "-,"), so no two different
 * rows share a canonical text (the fields cannot run into each other). */
static void digest_field(EVP_MD_CTX *ctx, const char *v)
{
    char len[24];
    if (!v) {
        EVP_DigestUpdate(ctx, "-,", 2);
        return;
    }
    size_t n = strlen(v);
    int k = snprintf(len, sizeof(len), "%zu:", n);
    EVP_DigestUpdate(ctx, len, (size_t)k);
    EVP_DigestUpdate(ctx, v, n);
    EVP_DigestUpdate(ctx, ",", 1);
}

/* The hash of an audit row: SHA-256 over its canonical content (id, time, actor, action,
 * target, before, after, reason) and the previous row's hash. docs/security.md "Audit". */
static int audit_digest(const struct store_audit *a, const char *prev, char out[65])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    char num[48];
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return -ENOMEM;
    }
    snprintf(num, sizeof(num), "%lld", (long long)a->id);
    digest_field(ctx, num);
    snprintf(num, sizeof(num), "%lld", (long long)a->time_ms);
    digest_field(ctx, num);
    digest_field(ctx, a->actor ? a->actor : "");
    digest_field(ctx, a->action ? a->action : "");
    digest_field(ctx, a->target ? a->target : "");
    digest_field(ctx, a->before);
    digest_field(ctx, a->after);
    digest_field(ctx, a->reason ? a->reason : "");
    digest_field(ctx, prev);
    int ok = EVP_DigestFinal_ex(ctx, md, &n) == 1 && n == 32;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return -EIO;
    for (unsigned int i = 0; i < n; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
    return 0;
}

/* The chain starts from this value (the first hashed row's prev_hash). */
static const char audit_genesis[] =
    "0000000000000000000000000000000000000000000000000000000000000000";

int store_audit_add(struct store *st, const struct store_audit *a)
{
    struct store_audit row = *a;
    char prev[65], hash[65];
    sqlite3_stmt *s = stmt(st, S_AUDIT_LAST);
    int rc = sqlite3_step(s);
    row.id = 1;
    str_copy(prev, sizeof(prev), audit_genesis);
    if (rc == SQLITE_ROW) {
        row.id = sqlite3_column_int64(s, 0) + 1;
        const unsigned char *h = sqlite3_column_text(s, 1);
        if (h && h[0]) /* a row from before the chain: start it here */
            str_copy(prev, sizeof(prev), (const char *)h);
    }
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(st, "last audit row");
    if ((rc = audit_digest(&row, prev, hash)) < 0)
        return rc;
    s = stmt(st, S_AUDIT_ADD);
    sqlite3_bind_int64(s, 1, row.id);
    sqlite3_bind_int64(s, 2, row.time_ms);
    bind_text(s, 3, row.actor ? row.actor : "");
    bind_text(s, 4, row.action ? row.action : "");
    bind_text(s, 5, row.target ? row.target : "");
    bind_text(s, 6, row.before);
    bind_text(s, 7, row.after);
    bind_text(s, 8, row.reason ? row.reason : "");
    bind_text(s, 9, prev);
    bind_text(s, 10, hash);
    return step_done(st, s, "add audit");
}

/* Check one row against the chain so far; fills v->why on the first break. */
static void verify_row(struct store_audit_check *v, const struct store_audit *a, const char *prev,
                       const char *hash, char *expect_prev)
{
    char want[65];
    if (!hash[0]) {
        if (v->checked == 0) { /* before the chain began (schema < 4) */
            v->unchained++;
            return;
        }
        snprintf(v->why, sizeof(v->why), "row %lld has no hash inside the chain", (long long)a->id);
    } else if (strcmp(prev, expect_prev) != 0) {
        snprintf(v->why, sizeof(v->why),
                 "row %lld does not follow row %lld (a row was removed or changed before it)",
                 (long long)a->id, (long long)v->last_id);
    } else if (audit_digest(a, prev, want) < 0) {
        snprintf(v->why, sizeof(v->why), "row %lld: cannot compute its hash", (long long)a->id);
    } else if (strcmp(want, hash) != 0) {
        snprintf(v->why, sizeof(v->why), "row %lld was changed after it was written",
                 (long long)a->id);
    }
    if (v->why[0]) {
        v->first_bad = a->id;
        return;
    }
    v->checked++;
    v->last_id = a->id;
    str_copy(expect_prev, 65, hash);
    str_copy(v->head, sizeof(v->head), hash);
}
/* An audit row whose first eight columns are id, time_ms, actor, action, target,
 * before_doc, after_doc, reason (its texts borrowed from the statement). */
static struct store_audit audit_row(sqlite3_stmt *s)
{
    return (struct store_audit){
        .id = sqlite3_column_int64(s, 0),
        .time_ms = sqlite3_column_int64(s, 1),
        .actor = (const char *)sqlite3_column_text(s, 2),
        .action = (const char *)sqlite3_column_text(s, 3),
        .target = (const char *)sqlite3_column_text(s, 4),
        .before = (const char *)sqlite3_column_text(s, 5),
        .after = (const char *)sqlite3_column_text(s, 6),
        .reason = (const char *)sqlite3_column_text(s, 7),
    };
}

void store_audit_verify_begin(struct store_audit_check *v)
{
    memset(v, 0, sizeof(*v));
    str_copy(v->expect, sizeof(v->expect), audit_genesis);
}

int store_audit_verify_step(struct store *st, const char *want_head, struct store_audit_check *v,
                            int max_rows)
{
    sqlite3_stmt *s = NULL;
    if (v->first_bad)
        return 0;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT id, time_ms, actor, action, target, before_doc, after_doc,"
                           " reason, prev_hash, hash FROM audit WHERE id > ?1 ORDER BY id"
                           " LIMIT ?2",
                           -1, &s, NULL) != SQLITE_OK)
        return fail(st, "prepare audit verify");
    sqlite3_bind_int64(s, 1, v->cursor);
    sqlite3_bind_int(s, 2, max_rows);
    int step = SQLITE_DONE, n = 0;
    while (!v->first_bad && (step = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_audit a = audit_row(s);
        const char *prev = (const char *)sqlite3_column_text(s, 8);
        const char *hash = (const char *)sqlite3_column_text(s, 9);
        verify_row(v, &a, prev ? prev : "", hash ? hash : "", v->expect);
        if (!v->first_bad && want_head && hash && strcmp(hash, want_head) == 0)
            v->head_found = true;
        v->cursor = a.id;
        n++;
    }
    int rc = v->first_bad || step == SQLITE_DONE ? 0 : fail(st, "audit verify");
    sqlite3_finalize(s);
    if (rc < 0)
        return rc;
    return !v->first_bad && n == max_rows ? 1 : 0;
}

int store_audit_verify(struct store *st, const char *want_head, struct store_audit_check *v)
{
    int rc;
    store_audit_verify_begin(v);
    while ((rc = store_audit_verify_step(st, want_head, v, 4096)) == 1)
        ;
    return rc;
}

int store_audit_list(struct store *st, const struct store_audit_filter *f, store_audit_cb cb,
                     void *arg)
{
    struct dbuf sql;
    int np = 0, rc = 0;
    dbuf_init(&sql, 2048);
    dbuf_puts(&sql, "SELECT id, time_ms, actor, action, target, before_doc, after_doc, reason"
                    " FROM audit WHERE 1 = 1");
    add_text_filter(&sql, "actor", f->actor, &np);
    add_text_filter(&sql, "action", f->action, &np);
    add_text_filter(&sql, "target", f->target, &np);
    if (f->since_ms)
        dbuf_printf(&sql, " AND time_ms >= ?%d", ++np);
    if (f->after)
        dbuf_printf(&sql, " AND id > ?%d", ++np);
    dbuf_printf(&sql, " ORDER BY id LIMIT %d", f->limit > 0 ? f->limit : 100);
    sqlite3_stmt *s = NULL;
    if (sql.failed || sqlite3_prepare_v2(st->db, sql.data, -1, &s, NULL) != SQLITE_OK) {
        dbuf_release(&sql);
        return fail(st, "prepare audit list");
    }
    dbuf_release(&sql);
    np = 0;
    const char *texts[] = {f->actor, f->action, f->target};
    for (size_t i = 0; i < 3; i++)
        if (texts[i])
            bind_text(s, ++np, texts[i]);
    if (f->since_ms)
        sqlite3_bind_int64(s, ++np, f->since_ms);
    if (f->after)
        sqlite3_bind_int64(s, ++np, f->after);
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_audit a = audit_row(s);
        if ((rc = cb(arg, &a)))
            break;
    }
    if (!rc && step != SQLITE_DONE)
        rc = fail(st, "list audit");
    sqlite3_finalize(s);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Membership, holds, job owner                                                          */

int store_member_put(struct store *st, const char *project, const char *user, const char *role)
{
    sqlite3_stmt *s = stmt(st, S_MEMBER_PUT);
    bind_text(s, 1, project);
    bind_text(s, 2, user);
    bind_text(s, 3, role);
    return step_done(st, s, "put member");
}

int store_member_get(struct store *st, const char *project, const char *user, char *role,
                     size_t len)
{
    sqlite3_stmt *s = stmt(st, S_MEMBER_GET);
    bind_text(s, 1, project);
    bind_text(s, 2, user);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        col_copy(s, 0, role, len);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : fail(st, "get member");
}

int store_member_delete(struct store *st, const char *project, const char *user)
{
    sqlite3_stmt *s = stmt(st, S_MEMBER_DEL);
    bind_text(s, 1, project);
    bind_text(s, 2, user);
    int rc = step_done(st, s, "delete member");
    if (rc == 0 && sqlite3_changes(st->db) == 0)
        return -ENOENT;
    return rc;
}

int store_member_list(struct store *st, const char *project, const char *user, store_member_cb cb,
                      void *arg)
{
    sqlite3_stmt *s = stmt(st, S_MEMBER_LIST);
    bind_text(s, 1, project);
    bind_text(s, 2, user);
    int step, rc = 0;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *p = (const char *)sqlite3_column_text(s, 0);
        const char *u = (const char *)sqlite3_column_text(s, 1);
        const char *r = (const char *)sqlite3_column_text(s, 2);
        if ((rc = cb(arg, p ? p : "", u ? u : "", r ? r : "")) != 0)
            break;
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = fail(st, "list members");
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
}

/* One row of two text columns selected by a job id: 0, -ENOENT, or the store's error. */
static int two_texts_by_job(struct store *st, enum stmt_id which, uint64_t id, char *a, size_t alen,
                            char *b, size_t blen, const char *what)
{
    sqlite3_stmt *s = stmt(st, which);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        col_copy(s, 0, a, alen);
        col_copy(s, 1, b, blen);
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : fail(st, what);
}

int store_job_owner(struct store *st, uint64_t id, char *project, size_t plen, char *user,
                    size_t ulen)
{
    return two_texts_by_job(st, S_JOB_OWNER, id, project, plen, user, ulen, "job owner");
}

int store_hold_put(struct store *st, uint64_t job, const char *user, const char *level)
{
    sqlite3_stmt *s = stmt(st, S_HOLD_PUT);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
    bind_text(s, 2, user);
    bind_text(s, 3, level);
    return step_done(st, s, "put hold");
}

int store_hold_get(struct store *st, uint64_t job, char *user, size_t ulen, char *level,
                   size_t llen)
{
    return two_texts_by_job(st, S_HOLD_GET, job, user, ulen, level, llen, "get hold");
}

int store_hold_delete(struct store *st, uint64_t job)
{
    sqlite3_stmt *s = stmt(st, S_HOLD_DEL);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)job);
    return step_done(st, s, "delete hold");
}

/* ------------------------------------------------------------------------------------ */
/* Secrets (sealed values; statements prepared per call: they are rare)                 */

static sqlite3_stmt *prepare(struct store *st, const char *sql)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) {
        fail(st, "prepare");
        return NULL;
    }
    return s;
}

int store_secret_put(struct store *st, const struct store_secret *sec)
{
    sqlite3_stmt *s = prepare(st, "INSERT INTO secrets(project, name, nonce, sealed, set_by,"
                                  " set_ms) VALUES (?1,?2,?3,?4,?5,?6) ON CONFLICT(project, name)"
                                  " DO UPDATE SET nonce = excluded.nonce, sealed = excluded.sealed,"
                                  " set_by = excluded.set_by, set_ms = excluded.set_ms");
    if (!s)
        return -EIO;
    bind_text(s, 1, sec->project);
    bind_text(s, 2, sec->name);
    sqlite3_bind_blob(s, 3, sec->nonce, (int)sizeof(sec->nonce), SQLITE_STATIC);
    sqlite3_bind_blob(s, 4, sec->sealed, (int)sec->sealed_len, SQLITE_STATIC);
    bind_text(s, 5, sec->set_by);
    sqlite3_bind_int64(s, 6, sec->set_ms);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : fail(st, "put secret");
    sqlite3_finalize(s);
    return rc;
}

static void secret_row(sqlite3_stmt *s, struct store_secret *out)
{
    memset(out, 0, sizeof(*out));
    col_copy(s, 0, out->project, sizeof(out->project));
    col_copy(s, 1, out->name, sizeof(out->name));
    col_copy(s, 2, out->set_by, sizeof(out->set_by));
    out->set_ms = sqlite3_column_int64(s, 3);
}

int store_secret_get(struct store *st, const char *project, const char *name,
                     struct store_secret *out)
{
    sqlite3_stmt *s = prepare(st, "SELECT project, name, set_by, set_ms, nonce, sealed"
                                  " FROM secrets WHERE project = ?1 AND name = ?2");
    if (!s)
        return -EIO;
    bind_text(s, 1, project);
    bind_text(s, 2, name);
    int step = sqlite3_step(s), rc = -ENOENT;
    if (step == SQLITE_ROW) {
        secret_row(s, out);
        const void *nonce = sqlite3_column_blob(s, 4);
        int nlen = sqlite3_column_bytes(s, 4);
        const void *sealed = sqlite3_column_blob(s, 5);
        int slen = sqlite3_column_bytes(s, 5);
        rc = -EBADMSG; /* a row of the wrong shape opens as nothing */
        if (nonce && nlen == (int)sizeof(out->nonce) && sealed && slen > 0) {
            memcpy(out->nonce, nonce, sizeof(out->nonce));
            out->sealed = xmalloc((size_t)slen);
            memcpy(out->sealed, sealed, (size_t)slen);
            out->sealed_len = (size_t)slen;
            rc = 0;
        }
    } else if (step != SQLITE_DONE) {
        rc = fail(st, "get secret");
    }
    sqlite3_finalize(s);
    return rc;
}

void store_secret_release(struct store_secret *s)
{
    free(s->sealed);
    s->sealed = NULL;
    s->sealed_len = 0;
}

int store_secret_delete(struct store *st, const char *project, const char *name)
{
    sqlite3_stmt *s = prepare(st, "DELETE FROM secrets WHERE project = ?1 AND name = ?2");
    if (!s)
        return -EIO;
    bind_text(s, 1, project);
    bind_text(s, 2, name);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : fail(st, "delete secret");
    if (rc == 0 && sqlite3_changes(st->db) == 0)
        rc = -ENOENT;
    sqlite3_finalize(s);
    return rc;
}

int store_secret_list(struct store *st, const char *project, store_secret_cb cb, void *arg)
{
    sqlite3_stmt *s = prepare(st, "SELECT project, name, set_by, set_ms FROM secrets"
                                  " WHERE ?1 IS NULL OR project = ?1 ORDER BY project, name");
    if (!s)
        return -EIO;
    bind_text(s, 1, project);
    int step, rc = 0;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_secret sec;
        secret_row(s, &sec);
        if ((rc = cb(arg, &sec)))
            break;
    }
    if (!rc && step != SQLITE_DONE)
        rc = fail(st, "list secrets");
    sqlite3_finalize(s);
    return rc;
}
