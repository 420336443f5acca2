/*
 * schema.c - the database's schema (store.h): the migrations, one per version, and
 * their run at open (store_migrate, inside a transaction each). SQLite's PRAGMA
 * user_version or PostgreSQL's schema_version table holds the version (PostgreSQL's
 * migrations are schema_pg.c's); a database newer than this build is refused, never
 * changed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "store/store_int.h"
#include "util/str.h"

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
    /* ---- issue 32: 12: the lease each run was granted (docs/agent.md "Fencing and leases"): its
     * agent keeps it running that long past the last answer it had, so the controller
     * may declare it lost no sooner, whatever the policy says since. 0 (runs started
     * before this schema): the node timeout, the lease they were started under. */
    "ALTER TABLE job_runs ADD COLUMN lease_ms INTEGER NOT NULL DEFAULT 0;",
    /* ---- issue 36: 13: services (docs/services.md): the spec a user gave and the state
     * the controller keeps of its replicas (their jobs, restarts, backoff), as JSON */
    "CREATE TABLE services (name TEXT PRIMARY KEY, project TEXT NOT NULL,"
    " user_name TEXT NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL,"
    " created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);",
    /* ---- issue 33: 14: the parent of a derived token (a console session is made from the
     * token that asked for its code): it never outlives its parent and is revoked with
     * it. '' for every token made before this schema, and for those made from nothing.
     * Who may receive each secret (a JSON array: "members", "user:NAME", "class:NAME");
     * '' is the project's leads only, as secrets set before this schema now are. */
    "ALTER TABLE tokens ADD COLUMN parent TEXT NOT NULL DEFAULT '';"
    "CREATE INDEX tokens_parent ON tokens(parent);"
    "ALTER TABLE secrets ADD COLUMN allow TEXT NOT NULL DEFAULT '';",
    /* ---- issue 35: 15: the environment template a job runs with, NAME@VERSION as docketd
     * resolved it at submit (docs/environments.md); '' for none and for jobs before. */
    "ALTER TABLE jobs ADD COLUMN template_ref TEXT NOT NULL DEFAULT '';",
    /* ---- issue 37: 16: project storage areas (docs/storage.md): a project's directory
     * on a pool with its quota; the pools themselves are the policy's. */
    "CREATE TABLE storage_areas (project TEXT NOT NULL, pool TEXT NOT NULL,"
    " quota_bytes INTEGER NOT NULL, created_by TEXT NOT NULL, created_ms INTEGER NOT NULL,"
    " PRIMARY KEY (project, pool));",
    /* ---- issue 37: 17: storage lifecycle runs (docs/storage.md "Lifecycle rules"): one
     * rule on one project's area, on one node; its counts and its list of files (JSON). */
    "CREATE TABLE lifecycle_runs (id INTEGER PRIMARY KEY, rule TEXT NOT NULL,"
    " project TEXT NOT NULL, pool TEXT NOT NULL, to_pool TEXT NOT NULL, action TEXT NOT NULL,"
    " dry_run INTEGER NOT NULL, node TEXT NOT NULL, state TEXT NOT NULL,"
    " requested_by TEXT NOT NULL, created_ms INTEGER NOT NULL, finished_ms INTEGER NOT NULL,"
    " files INTEGER NOT NULL, bytes INTEGER NOT NULL, freed_bytes INTEGER NOT NULL,"
    " failed INTEGER NOT NULL, in_use INTEGER NOT NULL, message TEXT NOT NULL,"
    " result TEXT NOT NULL);",
    /* ---- issue 37: 18: each area's usage, sampled by docketd every
     * storage.sample_interval, so reports count GB-months over any window (a sample
     * holds until the next one of the same area). */
    "CREATE TABLE storage_usage (project TEXT NOT NULL, pool TEXT NOT NULL,"
    " sample_ms INTEGER NOT NULL, used_bytes INTEGER NOT NULL,"
    " PRIMARY KEY (project, pool, sample_ms));"
    "CREATE INDEX storage_usage_time ON storage_usage(sample_ms);",
    /* ---- issue 36: 19: a service's endpoint (docs/services.md "The endpoint"): the port
     * its HAProxy frontend listens on, kept across restarts of docketd so the address
     * clients use stays; one service per port. 0: none (no load balancer configured). */
    ("ALTER TABLE services ADD COLUMN endpoint_port INTEGER NOT NULL DEFAULT 0;"
     "CREATE UNIQUE INDEX services_endpoint ON services(endpoint_port) WHERE endpoint_port > 0;"),
    /* ---- issue 35: 20: the image a job's container runs, as docketd resolved it at
     * submit (its own, else its template's; docs/environments.md "Containers"); '' for a
     * job on the node's own system and for jobs before. */
    "ALTER TABLE jobs ADD COLUMN image TEXT NOT NULL DEFAULT '';",
    /* ---- issue 32: 21: idempotency keys of submissions (docs/api.md "Retrying a
     * submission"): a user's key, the SHA-256 of the body it came with, and the job or
     * array it made, written in the submission's own transaction; pruned after the
     * window. */
    "CREATE TABLE submit_keys (user_name TEXT NOT NULL, idem_key TEXT NOT NULL,"
    " body_sha TEXT NOT NULL, first_id INTEGER NOT NULL, is_array INTEGER NOT NULL,"
    " tasks INTEGER NOT NULL, created_ms INTEGER NOT NULL, PRIMARY KEY (user_name, idem_key));"
    "CREATE INDEX submit_keys_time ON submit_keys(created_ms);",
    /* ---- issue 37: 22: where each archived stream of a finished job's log now lives
     * (docs/storage.md "Job logs"): its path under the pool, its size as written and as
     * stored (compressed), and the SHA-256 of what was written. */
    "CREATE TABLE log_archives (job INTEGER NOT NULL, run INTEGER NOT NULL,"
    " stream INTEGER NOT NULL, pool TEXT NOT NULL, path TEXT NOT NULL,"
    " bytes INTEGER NOT NULL, stored_bytes INTEGER NOT NULL, sha256 TEXT NOT NULL,"
    " archived_ms INTEGER NOT NULL, PRIMARY KEY (job, run, stream));",
};

/* PostgreSQL's twin of each migration after STORE_PG_BASE_VERSION (schema_pg.c holds the
 * schema up to it), in the same order: a migration added above needs its twin here. */
static const char *const pg_migrations[] = {
    /* 12: the lease each run was granted */
    "ALTER TABLE job_runs ADD COLUMN lease_ms BIGINT NOT NULL DEFAULT 0;",
    /* 13: services */
    "CREATE TABLE services (name TEXT PRIMARY KEY, project TEXT NOT NULL,"
    " user_name TEXT NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL,"
    " created_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL);",
    /* 14: the parent of a derived token; who may receive each secret */
    "ALTER TABLE tokens ADD COLUMN parent TEXT NOT NULL DEFAULT '';"
    "CREATE INDEX tokens_parent ON tokens(parent);"
    "ALTER TABLE secrets ADD COLUMN allow TEXT NOT NULL DEFAULT '';",
    /* 15: the job's environment template */
    "ALTER TABLE jobs ADD COLUMN template_ref TEXT NOT NULL DEFAULT '';",
    /* 16: project storage areas */
    "CREATE TABLE storage_areas (project TEXT NOT NULL, pool TEXT NOT NULL,"
    " quota_bytes BIGINT NOT NULL, created_by TEXT NOT NULL, created_ms BIGINT NOT NULL,"
    " PRIMARY KEY (project, pool));",
    /* 17: storage lifecycle runs */
    "CREATE TABLE lifecycle_runs (id BIGINT PRIMARY KEY, rule TEXT NOT NULL,"
    " project TEXT NOT NULL, pool TEXT NOT NULL, to_pool TEXT NOT NULL, action TEXT NOT NULL,"
    " dry_run BIGINT NOT NULL, node TEXT NOT NULL, state TEXT NOT NULL,"
    " requested_by TEXT NOT NULL, created_ms BIGINT NOT NULL, finished_ms BIGINT NOT NULL,"
    " files BIGINT NOT NULL, bytes BIGINT NOT NULL, freed_bytes BIGINT NOT NULL,"
    " failed BIGINT NOT NULL, in_use BIGINT NOT NULL, message TEXT NOT NULL,"
    " result TEXT NOT NULL);",
    /* 18: each area's usage over time */
    "CREATE TABLE storage_usage (project TEXT NOT NULL, pool TEXT NOT NULL,"
    " sample_ms BIGINT NOT NULL, used_bytes BIGINT NOT NULL,"
    " PRIMARY KEY (project, pool, sample_ms));"
    "CREATE INDEX storage_usage_time ON storage_usage(sample_ms);",
    /* 19: a service's endpoint port */
    ("ALTER TABLE services ADD COLUMN endpoint_port INTEGER NOT NULL DEFAULT 0;"
     "CREATE UNIQUE INDEX services_endpoint ON services(endpoint_port) WHERE endpoint_port > 0;"),
    /* 20: the image of a job's container */
    "ALTER TABLE jobs ADD COLUMN image TEXT NOT NULL DEFAULT '';",
    /* 21: idempotency keys of submissions */
    "CREATE TABLE submit_keys (user_name TEXT NOT NULL, idem_key TEXT NOT NULL,"
    " body_sha TEXT NOT NULL, first_id BIGINT NOT NULL, is_array BIGINT NOT NULL,"
    " tasks BIGINT NOT NULL, created_ms BIGINT NOT NULL, PRIMARY KEY (user_name, idem_key));"
    "CREATE INDEX submit_keys_time ON submit_keys(created_ms);",
    /* 22: archived job logs */
    "CREATE TABLE log_archives (job BIGINT NOT NULL, run BIGINT NOT NULL,"
    " stream BIGINT NOT NULL, pool TEXT NOT NULL, path TEXT NOT NULL,"
    " bytes BIGINT NOT NULL, stored_bytes BIGINT NOT NULL, sha256 TEXT NOT NULL,"
    " archived_ms BIGINT NOT NULL, PRIMARY KEY (job, run, stream));",
};
_Static_assert(sizeof(migrations) / sizeof(migrations[0]) ==
                   STORE_PG_BASE_VERSION + sizeof(pg_migrations) / sizeof(pg_migrations[0]),
               "every SQLite migration after STORE_PG_BASE_VERSION needs its PostgreSQL twin");

int store_schema_latest(void)
{
    return (int)(sizeof(migrations) / sizeof(migrations[0]));
}

/* SQLite keeps the version in its header (PRAGMA user_version); PostgreSQL in a table of
 * one row, which a database docketd never opened lacks. */
int store_schema_version(struct store *st)
{
    bool pg = db_engine(store_db(st)) == DB_POSTGRES;
    struct db_stmt *s;
    int v = -1;
    if (db_prepare(store_db(st), pg ? "SELECT version FROM schema_version" : "PRAGMA user_version",
                   false, &s) < 0)
        return -EIO;
    int rc = db_step(s);
    if (rc == DB_ROW)
        v = db_column_int(s, 0);
    else if (rc == DB_DONE && pg)
        v = 0; /* the table, made by a migration that stopped before its first step */
    db_finalize(s);
    return v;
}

/* Run one migration's SQL and record version `to`, inside the caller's transaction. */
static int migrate_step(struct store *st, const char *sql, int to)
{
    char set[64];
    if (db_engine(store_db(st)) == DB_POSTGRES)
        snprintf(set, sizeof(set), "UPDATE schema_version SET version = %d", to);
    else
        snprintf(set, sizeof(set), "PRAGMA user_version = %d", to);
    return store_exec(st, sql) < 0 || store_exec(st, set) < 0 ? -EIO : 0;
}

/* The SQL that takes a database at version v to the next one (PostgreSQL: the whole schema
 * from 0 straight to STORE_PG_BASE_VERSION); *to: the version it reaches. */
static const char *migration_from(const struct store *st, int v, int *to)
{
    if (db_engine(st->db) == DB_SQLITE) {
        *to = v + 1;
        return migrations[v];
    }
    if (v == 0) {
        *to = STORE_PG_BASE_VERSION;
        return store_pg_base;
    }
    *to = v + 1;
    return v >= STORE_PG_BASE_VERSION ? pg_migrations[v - STORE_PG_BASE_VERSION] : NULL;
}

/* PostgreSQL: the version's table, made once, and a lock that makes two docketd starting
 * on one database migrate one after the other (held to the transaction's end). */
static int begin_migration(struct store *st)
{
    if (db_engine(st->db) == DB_SQLITE)
        return store_exec(st, "BEGIN IMMEDIATE");
    return store_exec(st, "BEGIN;"
                          "SELECT pg_advisory_xact_lock(7243453);" /* "docket" */
                          "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL);"
                          "INSERT INTO schema_version SELECT 0"
                          " WHERE NOT EXISTS (SELECT 1 FROM schema_version);");
}

int store_migrate(struct store *st)
{
    int n = store_schema_latest();
    for (;;) {
        if (begin_migration(st) < 0)
            return -EIO;
        int v = store_schema_version(st), to = 0;
        const char *sql = v >= 0 && v < n ? migration_from(st, v, &to) : NULL;
        if (v < 0 || v >= n || !sql) {
            char m[256];
            if (v < 0)
                snprintf(m, sizeof(m), "read schema version: %s", db_errmsg(st->db));
            else if (v > n)
                snprintf(m, sizeof(m), "database schema version %d is newer than this docketd (%d)",
                         v, n);
            else if (v < n)
                snprintf(m, sizeof(m), "schema version %d has no PostgreSQL migration", v);
            store_exec(st, "ROLLBACK");
            if (v == n)
                return 0;
            store_set_errmsg(st, m);
            return v > n ? -EPROTO : -EIO;
        }
        if (migrate_step(st, sql, to) < 0) {
            char keep[200], m[256];
            str_copy(keep, sizeof(keep), store_errmsg(st));
            store_exec(st, "ROLLBACK");
            snprintf(m, sizeof(m), "migration %d: %s", to, keep);
            store_set_errmsg(st, m);
            return -EIO;
        }
        if (store_exec(st, "COMMIT") < 0)
            return -EIO;
    }
}
