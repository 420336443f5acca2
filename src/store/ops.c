/*
 * ops.c - the store's statements for the operator's kit (store.h "Run ends", "Alerts",
 * "Reports"; docs/alerts.md, docs/reports.md): alert history and silences, and the report
 * aggregates (run ends, on every start and end, are prepared once in store.c). Prepared
 * per call (store_prepare; none is on a hot path); the SQL is portable (greatest, least
 * and strpos are SQLite functions of db_sqlite.c's) but for the JSON of the repeats.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"
#include "util/str.h"

static void text(struct db_stmt *s, int i, const char *v)
{
    db_bind_text(s, i, v ? v : "");
}

static const char *col(struct db_stmt *s, int i)
{
    const char *t = db_column_text(s, i);
    return t ? t : "";
}

/* Step an INSERT ... RETURNING id, finalize it, and give its row id. */
static int inserted(struct store *st, struct db_stmt *s, const char *what, int64_t *id)
{
    int rc = db_step(s) == DB_ROW ? 0 : store_fail(st, what);
    if (rc == 0)
        *id = db_column_int64(s, 0);
    db_finalize(s);
    return rc;
}

/* Step every row through `row` (which returns the callback's result); finalize. */
static int each(struct store *st, struct db_stmt *s, const char *what,
                int (*row)(struct db_stmt *, void *), void *arg)
{
    int rc, r = 0;
    while ((rc = db_step(s)) == DB_ROW && (r = row(s, arg)) == 0)
        ;
    if (r == 0 && rc != DB_DONE)
        r = store_fail(st, what);
    db_finalize(s);
    return r;
}

/* ------------------------------------------------------------------------------------ */
/* Alerts                                                                                */

int store_alert_fire(struct store *st, const struct store_alert *a, int64_t *id)
{
    struct db_stmt *s;
    int rc = store_prepare(st,
                           "INSERT INTO alert_history(rule, alert_key, kind, severity, summary,"
                           " fired_ms, silenced) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
                           &s);
    if (rc < 0)
        return rc;
    text(s, 1, a->rule);
    text(s, 2, a->key);
    text(s, 3, a->kind);
    text(s, 4, a->severity);
    text(s, 5, a->summary);
    db_bind_int64(s, 6, a->fired_ms);
    db_bind_int64(s, 7, a->silenced);
    return inserted(st, s, "record alert", id);
}

int store_alert_resolve(struct store *st, int64_t id, int64_t resolved_ms)
{
    struct db_stmt *s;
    int rc = store_prepare(st, "UPDATE alert_history SET resolved_ms = ?2 WHERE id = ?1", &s);
    if (rc < 0)
        return rc;
    db_bind_int64(s, 1, id);
    db_bind_int64(s, 2, resolved_ms);
    return store_step_finalize(st, s, "resolve alert");
}

struct cb_ctx {
    void *cb;
    void *arg;
};

static int alert_row(struct db_stmt *s, void *arg)
{
    struct cb_ctx *c = arg;
    struct store_alert a;
    memset(&a, 0, sizeof a);
    a.id = db_column_int64(s, 0);
    str_copy(a.rule, sizeof a.rule, col(s, 1));
    str_copy(a.key, sizeof a.key, col(s, 2));
    str_copy(a.kind, sizeof a.kind, col(s, 3));
    str_copy(a.severity, sizeof a.severity, col(s, 4));
    str_copy(a.summary, sizeof a.summary, col(s, 5));
    a.fired_ms = db_column_int64(s, 6);
    a.resolved_ms = db_column_int64(s, 7);
    a.silenced = db_column_int(s, 8) != 0;
    return ((store_alert_cb)c->cb)(c->arg, &a);
}

int store_alert_list(struct store *st, bool open_only, int64_t before, int limit, store_alert_cb cb,
                     void *arg)
{
    struct db_stmt *s;
    int rc = store_prepare(st,
                           "SELECT id, rule, alert_key, kind, severity, summary, fired_ms,"
                           " resolved_ms, silenced FROM alert_history"
                           " WHERE (?1 = 0 OR resolved_ms = 0) AND (?2 = 0 OR id < ?2)"
                           " ORDER BY id DESC LIMIT ?3",
                           &s);
    if (rc < 0)
        return rc;
    db_bind_int64(s, 1, open_only);
    db_bind_int64(s, 2, before);
    db_bind_int64(s, 3, limit);
    struct cb_ctx c = {(void *)cb, arg};
    return each(st, s, "list alerts", alert_row, &c);
}

int store_alert_prune(struct store *st, int64_t older_ms, int64_t keep_rows)
{
    struct db_stmt *s;
    int rc = store_prepare(st,
                           "DELETE FROM alert_history WHERE resolved_ms <> 0 AND (resolved_ms < ?1"
                           " OR id <= (SELECT id FROM alert_history ORDER BY id DESC"
                           " LIMIT 1 OFFSET ?2))",
                           &s);
    if (rc < 0)
        return rc;
    db_bind_int64(s, 1, older_ms);
    db_bind_int64(s, 2, keep_rows);
    return store_step_finalize(st, s, "prune alerts");
}

int store_silence_add(struct store *st, const struct store_silence *x, int64_t *id)
{
    struct db_stmt *s;
    int rc = store_prepare(st,
                           "INSERT INTO alert_silences(rule, alert_key, until_ms, created_by,"
                           " created_ms, reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
                           &s);
    if (rc < 0)
        return rc;
    text(s, 1, x->rule);
    text(s, 2, x->key);
    db_bind_int64(s, 3, x->until_ms);
    text(s, 4, x->created_by);
    db_bind_int64(s, 5, x->created_ms);
    text(s, 6, x->reason);
    return inserted(st, s, "add silence", id);
}

int store_silence_delete(struct store *st, int64_t id)
{
    struct db_stmt *s;
    int rc = store_prepare(st, "DELETE FROM alert_silences WHERE id = ?1", &s);
    if (rc < 0)
        return rc;
    db_bind_int64(s, 1, id);
    rc = store_step_finalize(st, s, "delete silence");
    if (rc == 0 && db_changes(store_db(st)) == 0)
        return -ENOENT;
    return rc;
}

static int silence_row(struct db_stmt *s, void *arg)
{
    struct cb_ctx *c = arg;
    struct store_silence x;
    memset(&x, 0, sizeof x);
    x.id = db_column_int64(s, 0);
    str_copy(x.rule, sizeof x.rule, col(s, 1));
    str_copy(x.key, sizeof x.key, col(s, 2));
    x.until_ms = db_column_int64(s, 3);
    str_copy(x.created_by, sizeof x.created_by, col(s, 4));
    x.created_ms = db_column_int64(s, 5);
    str_copy(x.reason, sizeof x.reason, col(s, 6));
    return ((store_silence_cb)c->cb)(c->arg, &x);
}

int store_silence_list(struct store *st, int64_t now_ms, store_silence_cb cb, void *arg)
{
    struct db_stmt *s;
    int rc = store_prepare(st, "DELETE FROM alert_silences WHERE until_ms <= ?1", &s);
    if (rc == 0) {
        db_bind_int64(s, 1, now_ms);
        rc = store_step_finalize(st, s, "expire silences");
    }
    if (rc == 0)
        rc = store_prepare(st,
                           "SELECT id, rule, alert_key, until_ms, created_by, created_ms, reason"
                           " FROM alert_silences ORDER BY id",
                           &s);
    if (rc < 0)
        return rc;
    struct cb_ctx c = {(void *)cb, arg};
    return each(st, s, "list silences", silence_row, &c);
}

/* ------------------------------------------------------------------------------------ */
/* Reports                                                                               */

/* Run a report query over [since, until) (?1, ?2; ?3 = p3 when the query has it), each
 * row through `row` with the caller's callback. */
static int window_rows(struct store *st, const char *sql, int64_t since, int64_t until, int64_t p3,
                       const char *what, int (*row)(struct db_stmt *, void *), void *cb, void *arg)
{
    struct db_stmt *s;
    int rc = store_prepare(st, sql, &s);
    if (rc < 0)
        return rc;
    db_bind_int64(s, 1, since);
    db_bind_int64(s, 2, until);
    db_bind_int64(s, 3, p3); /* a query without ?3 ignores it */
    struct cb_ctx c = {cb, arg};
    return each(st, s, what, row, &c);
}

static const char *const by_names[STORE_BY_COUNT] = {"project", "user", "tier", "class",
                                                     "gpu-type"};

int store_report_by_parse(const char *s)
{
    for (int i = 0; i < STORE_BY_COUNT; i++)
        if (strcmp(s, by_names[i]) == 0)
            return i;
    return -1;
}

/* The GPU type of run r's first node (",gpu01,gpu02," -> gpu01's type). */
#define RUN_TYPE(R)                                                                                \
    "coalesce((SELECT n.gpu_type FROM nodes n WHERE n.name = substr(" R ".nodes, 2,"               \
    " strpos(substr(" R ".nodes, 2), ',') - 1)), '')"
/* The part of run r inside [?1, ?2), in ms (an open run counts to ?2). */
#define RUN_MS                                                                                     \
    "greatest(0, least(CASE WHEN r.end_ms = 0 THEN ?2 ELSE r.end_ms END, ?2)"                      \
    " - greatest(r.start_ms, ?1))"

/* The grouping key of a run r of job j. */
static const char *run_key(enum store_report_by by)
{
    static const char *const k[STORE_BY_COUNT] = {"j.project", "j.user_name", "j.tier", "j.class",
                                                  RUN_TYPE("r")};
    return k[by];
}

static int usage_row(struct db_stmt *s, void *arg)
{
    struct cb_ctx *c = arg;
    struct store_report_row r = {
        .key = col(s, 0),
        .gpu_type = col(s, 1),
        .runs = db_column_int64(s, 2),
        .gpu_ms = db_column_int64(s, 3),
        .cpu_ms = db_column_int64(s, 4),
        .preemptions = db_column_int64(s, 5),
        .preempt_gpu_ms = db_column_int64(s, 6),
    };
    return ((store_report_cb)c->cb)(c->arg, &r);
}

int store_report_usage(struct store *st, enum store_report_by by, int64_t since, int64_t until,
                       store_report_cb cb, void *arg)
{
    char sql[2048];
    snprintf(
        sql, sizeof sql,
        "SELECT %s AS k, " RUN_TYPE(
            "r") " AS gt, count(*),"
                 " sum(j.gpus * j.nnodes * " RUN_MS "), sum(j.cpus * j.nnodes * " RUN_MS "),"
                 " sum(CASE WHEN r.end_cause = 'preempted' AND r.end_ms >= ?1 AND r.end_ms < ?2"
                 " THEN 1 ELSE 0 END),"
                 " sum(CASE WHEN r.end_cause = 'preempted' THEN j.gpus * j.nnodes * " RUN_MS
                 " ELSE 0 END)"
                 " FROM job_runs r JOIN jobs j ON j.id = r.job"
                 " WHERE r.start_ms > 0 AND r.start_ms < ?2 AND (r.end_ms = 0 OR r.end_ms > ?1)"
                 " GROUP BY k, gt ORDER BY k, gt",
        run_key(by));
    return window_rows(st, sql, since, until, 0, "report usage", usage_row, (void *)cb, arg);
}

static int span_row(struct db_stmt *s, void *arg)
{
    struct cb_ctx *c = arg;
    return ((store_span_cb)c->cb)(c->arg, db_column_int64(s, 0), db_column_int64(s, 1),
                                  db_column_int64(s, 2));
}

int store_project_runs(struct store *st, const char *project, int64_t since, int64_t until,
                       store_span_cb cb, void *arg)
{
    struct db_stmt *s;
    int rc = store_prepare(st,
                           "SELECT j.gpus * j.nnodes, r.start_ms, r.end_ms"
                           " FROM job_runs r JOIN jobs j ON j.id = r.job"
                           " WHERE j.project = ?3 AND j.gpus > 0 AND r.start_ms > 0"
                           " AND r.start_ms < ?2 AND (r.end_ms = 0 OR r.end_ms > ?1)"
                           " ORDER BY r.start_ms",
                           &s);
    if (rc < 0)
        return rc;
    db_bind_int64(s, 1, since);
    db_bind_int64(s, 2, until);
    db_bind_text(s, 3, project);
    struct cb_ctx c = {cb, arg};
    return each(st, s, "project runs", span_row, &c);
}

static int count_row(struct db_stmt *s, void *arg)
{
    struct cb_ctx *c = arg;
    return ((store_count_cb)c->cb)(c->arg, col(s, 0), col(s, 1), db_column_int64(s, 2));
}

int store_report_outcomes(struct store *st, enum store_report_by by, int64_t since, int64_t until,
                          store_count_cb cb, void *arg)
{
    static const char *const k[STORE_BY_COUNT] = {
        "j.project", "j.user_name", "j.tier", "j.class",
        "coalesce((SELECT " RUN_TYPE("r") " FROM job_runs r WHERE r.job = j.id"
                                          " ORDER BY r.run DESC LIMIT 1), j.gpu_type)"};
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT %s AS k, j.state, count(*) FROM jobs j WHERE j.end_ms >= ?1"
             " AND j.end_ms < ?2 AND j.state IN ('COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT',"
             " 'PREEMPTED', 'NODE_FAIL') GROUP BY k, j.state ORDER BY k, j.state",
             k[by]);
    return window_rows(st, sql, since, until, 0, "report outcomes", count_row, (void *)cb, arg);
}

/* When run r's wait began: the job's submission, or the end of the run before. */
#define WAIT_BEGIN                                                                                 \
    "CASE WHEN r.run = 1 THEN j.submit_ms ELSE coalesce((SELECT p.end_ms FROM job_runs p"          \
    " WHERE p.job = r.job AND p.run = r.run - 1), j.submit_ms) END"

static int wait_row(struct db_stmt *s, void *arg)
{
    struct cb_ctx *c = arg;
    return ((store_wait_cb)c->cb)(c->arg, col(s, 0), db_column_int64(s, 1));
}

int store_report_waits(struct store *st, enum store_report_by by, int64_t since, int64_t until,
                       store_wait_cb cb, void *arg)
{
    char sql[1536];
    snprintf(sql, sizeof sql,
             "SELECT %s AS k, greatest(0, r.start_ms - " WAIT_BEGIN ") AS w"
             " FROM job_runs r JOIN jobs j ON j.id = r.job"
             " WHERE r.start_ms >= ?1 AND r.start_ms < ?2 ORDER BY k, w",
             run_key(by));
    return window_rows(st, sql, since, until, 0, "report waits", wait_row, (void *)cb, arg);
}

int store_report_idle(struct store *st, enum store_report_by by, int64_t since, int64_t until,
                      store_idle_cb cb, void *arg)
{
    char sql[1536];
    snprintf(sql, sizeof sql,
             "SELECT %s AS k, sum(CAST(round(u.gpu_idle_ms * j.gpus * CASE"
             " WHEN u.last_ms > u.first_ms THEN greatest(0, least(u.last_ms, ?2) - "
             "greatest(u.first_ms, ?1))"
             " * 1.0 / (u.last_ms - u.first_ms) ELSE 1.0 END) AS INTEGER))"
             " FROM usage_summary u JOIN jobs j ON j.id = u.job"
             " JOIN job_runs r ON r.job = u.job AND r.run = u.run"
             " WHERE u.last_ms >= ?1 AND u.first_ms < ?2 AND u.gpu_idle_ms > 0"
             " GROUP BY k ORDER BY k",
             run_key(by));
    return window_rows(st, sql, since, until, 0, "report idle", wait_row, (void *)cb, arg);
}

static int interval_row(struct db_stmt *s, void *arg)
{
    struct cb_ctx *c = arg;
    return ((store_interval_cb)c->cb)(c->arg, col(s, 0), db_column_int64(s, 1),
                                      db_column_int64(s, 2), db_column_int64(s, 3));
}

int store_report_wait_intervals(struct store *st, int64_t since, int64_t until, int64_t now,
                                store_interval_cb cb, void *arg)
{
    static const char sql[] =
        "SELECT tier, g, b, e FROM ("
        " SELECT j.tier AS tier, j.gpus * j.nnodes AS g, " WAIT_BEGIN " AS b, r.start_ms AS e"
        " FROM job_runs r JOIN jobs j ON j.id = r.job"
        " UNION ALL"
        " SELECT j.tier, j.gpus * j.nnodes,"
        " coalesce((SELECT max(p.end_ms) FROM job_runs p WHERE p.job = j.id), j.submit_ms),"
        " CASE WHEN j.end_ms > 0 THEN j.end_ms ELSE ?3 END FROM jobs j"
        " WHERE j.state IN ('PENDING', 'HELD') OR (j.end_ms > 0 AND NOT EXISTS (SELECT 1"
        " FROM job_runs p WHERE p.job = j.id AND p.end_ms = j.end_ms))) AS t"
        " WHERE b < ?2 AND e > ?1 AND e > b ORDER BY b";
    return window_rows(st, sql, since, until, now, "report wait intervals", interval_row,
                       (void *)cb, arg);
}

static int spec_row(struct db_stmt *s, void *arg)
{
    struct cb_ctx *c = arg;
    return ((store_spec_cb)c->cb)(c->arg, col(s, 0), col(s, 1), db_column_int64(s, 2),
                                  db_column_int64(s, 3));
}

/* A job's spec text, and its command or the start of its script (for repeats), in each
 * engine's JSON functions. */
#define SPEC_TEXT SPEC_OF("spec")
#define CMD_OF                                                                                     \
    "coalesce(json_extract(" SPEC_TEXT ", '$.command'), 'script: ' ||"                             \
    " substr(json_extract(" SPEC_TEXT ", '$.script'), 1, 200))"
#define CMD_OF_PG                                                                                  \
    "coalesce((" SPEC_TEXT ")::jsonb ->> 'command', 'script: ' ||"                                 \
    " substr((" SPEC_TEXT ")::jsonb ->> 'script', 1, 200))"
#define REPEATS(CMD)                                                                               \
    "SELECT project, cmd, count(*) AS n, sum(g) FROM (SELECT jobs.project AS project,"             \
    " " CMD " AS cmd, coalesce((SELECT sum(jobs.gpus * jobs.nnodes * " RUN_MS ")"                  \
    " FROM job_runs r WHERE r.job = jobs.id), 0) AS g"                                             \
    " FROM jobs WHERE jobs.submit_ms >= ?1 AND jobs.submit_ms < ?2) AS t"                          \
    " WHERE cmd IS NOT NULL GROUP BY project, cmd HAVING count(*) >= 2"                            \
    " ORDER BY n DESC, project, cmd LIMIT ?3"

int store_report_repeats(struct store *st, int64_t since, int64_t until, int limit,
                         store_spec_cb cb, void *arg)
{
    const char *sql = db_engine(store_db(st)) == DB_POSTGRES ? REPEATS(CMD_OF_PG) : REPEATS(CMD_OF);
    return window_rows(st, sql, since, until, limit, "report repeats", spec_row, (void *)cb, arg);
}
