/*
 * usage.c - usage samples in SQLite (store.h "Usage samples", schema 9): each sample is
 * written raw, added into its minute and folded into the job's summary in one call;
 * pruning deletes what is past its keep in bounded slices. Design: docs/monitoring.md.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/store.h"
#include "store/store_int.h"
#include "util/str.h"

enum {
    U_PREV,
    U_RAW_ADD,
    U_MIN_ADD,
    U_SUM_GET,
    U_SUM_PUT,
    U_FLAG,
    U_SERIES_RAW,
    U_SERIES_MIN,
    U_PRUNE_RAW,
    U_PRUNE_MIN,
    U_COUNTS,
    U_COUNT
};
_Static_assert((int)U_COUNT <= (int)STORE_USAGE_NSTMT, "raise STORE_USAGE_NSTMT");

#define SUM_COLS                                                                                   \
    "job, run, gpu_source, samples, first_ms, last_ms, cpu_ms, mem_peak_bytes, io_read_bytes,"     \
    " io_write_bytes, gpu_util_sum, gpu_samples, gpu_idle_ms, last_busy_ms, idle_since_ms,"        \
    " idle_flagged_ms, gpu_errors"
#define RAW_COLS                                                                                   \
    "job, node, time_ms, run, cpu_ms, mem_bytes, mem_peak_bytes, io_read_bytes, io_write_bytes,"   \
    " gpu_util, gpu_mem_mb, gpu_power_mw, gpu_temp_c, gpu_errors"
/* minute sums: an unknown figure (NULL) adds nothing and keeps what is there */
/* clang-format does not keep the string literals ADD pastes stable: left as written */
// clang-format off
#define ADD(C) C " = CASE WHEN excluded." C " IS NULL THEN usage_minute." C \
    " ELSE coalesce(usage_minute." C ", 0) + excluded." C " END"
/* An upsert's "the new row wins" (INSERT OR REPLACE is SQLite's; this is portable). */
#define NEW(C) C " = excluded." C

static const char *const sql[U_COUNT] = {
    [U_PREV] = "SELECT run, time_ms, cpu_ms, io_read_bytes, io_write_bytes FROM usage_raw"
               " WHERE job = ?1 AND node = ?2 ORDER BY time_ms DESC LIMIT 1",
    [U_RAW_ADD] = "INSERT INTO usage_raw(" RAW_COLS ") VALUES"
                  " (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)"
                  " ON CONFLICT(job, node, time_ms) DO UPDATE SET " NEW("run") ", " NEW("cpu_ms") ","
                  " " NEW("mem_bytes") ", " NEW("mem_peak_bytes") ", " NEW("io_read_bytes") ","
                  " " NEW("io_write_bytes") ", " NEW("gpu_util") ", " NEW("gpu_mem_mb") ","
                  " " NEW("gpu_power_mw") ", " NEW("gpu_temp_c") ", " NEW("gpu_errors"),
    [U_MIN_ADD] = "INSERT INTO usage_minute(job, minute_ms, samples, span_ms, cpu_ms, mem_sum,"
                  " mem_n, mem_peak_bytes, io_read_bytes, io_write_bytes, gpu_util_sum, gpu_n,"
                  " gpu_mem_sum, gpu_power_sum) VALUES (?1,?2,1,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)"
                  " ON CONFLICT(job, minute_ms) DO UPDATE SET samples = usage_minute.samples + 1,"
                  " span_ms = usage_minute.span_ms + excluded.span_ms,"
                  " mem_n = usage_minute.mem_n + excluded.mem_n,"
                  " gpu_n = usage_minute.gpu_n + excluded.gpu_n, " ADD("cpu_ms") ", " ADD("mem_sum") ", " ADD(
                      "io_read_bytes") ", " ADD("io_write_bytes") ", " ADD("gpu_util_sum") ", " ADD("gpu_mem_sum") ", " ADD("gpu_power_sum") ","
                  " mem_peak_bytes = greatest(coalesce(usage_minute.mem_peak_bytes, -1),"
                  " coalesce(excluded.mem_peak_bytes, -1))",
    [U_SUM_GET] = "SELECT " SUM_COLS " FROM usage_summary WHERE job = ?1",
    [U_SUM_PUT] = "INSERT INTO usage_summary(" SUM_COLS ") VALUES"
                  " (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)"
                  " ON CONFLICT(job) DO UPDATE SET " NEW("run") ", " NEW("gpu_source") ","
                  " " NEW("samples") ", " NEW("first_ms") ", " NEW("last_ms") ", " NEW("cpu_ms") ","
                  " " NEW("mem_peak_bytes") ", " NEW("io_read_bytes") ", " NEW("io_write_bytes") ","
                  " " NEW("gpu_util_sum") ", " NEW("gpu_samples") ", " NEW("gpu_idle_ms") ","
                  " " NEW("last_busy_ms") ", " NEW("idle_since_ms") ", " NEW("idle_flagged_ms") ","
                  " " NEW("gpu_errors"),
    [U_FLAG] = "UPDATE usage_summary SET idle_flagged_ms = ?2 WHERE job = ?1",
    [U_SERIES_RAW] = "SELECT * FROM (SELECT time_ms, node, run, cpu_ms, mem_bytes, mem_peak_bytes,"
                     " io_read_bytes, io_write_bytes, gpu_util, gpu_mem_mb, gpu_power_mw"
                     " FROM usage_raw WHERE job = ?1 AND time_ms >= ?2"
                     " ORDER BY time_ms DESC LIMIT ?3) AS t ORDER BY time_ms",
    [U_SERIES_MIN] = "SELECT * FROM (SELECT minute_ms, samples, span_ms, cpu_ms, mem_sum, mem_n,"
                     " mem_peak_bytes, io_read_bytes, io_write_bytes, gpu_util_sum, gpu_n,"
                     " gpu_mem_sum, gpu_power_sum FROM usage_minute WHERE job = ?1"
                     " AND minute_ms >= ?2 ORDER BY minute_ms DESC LIMIT ?3) AS t ORDER BY minute_ms",
    [U_PRUNE_RAW] = "DELETE FROM usage_raw WHERE (job, node, time_ms) IN (SELECT job, node,"
                    " time_ms FROM usage_raw WHERE time_ms < ?1 LIMIT ?2)",
    [U_PRUNE_MIN] = "DELETE FROM usage_minute WHERE (job, minute_ms) IN (SELECT job, minute_ms"
                    " FROM usage_minute WHERE minute_ms < ?1 LIMIT ?2)",
    [U_COUNTS] = "SELECT (SELECT count(*) FROM usage_raw), (SELECT count(*) FROM usage_minute),"
                 " (SELECT count(*) FROM usage_summary)",
};
// clang-format on

static struct db_stmt *stmt(struct store *st, int i)
{
    return store_usage_stmt(st, i, sql[i]);
}

static int done(struct store *st, struct db_stmt *s, const char *what)
{
    int rc = db_step(s);
    db_reset(s);
    db_clear_bindings(s);
    return rc == DB_DONE ? 0 : store_fail(st, what);
}

/* -1 (unknown) binds NULL; NULL reads -1 */
static void bind_known(struct db_stmt *s, int i, int64_t v)
{
    if (v < 0)
        db_bind_null(s, i);
    else
        db_bind_int64(s, i, v);
}

static int64_t col_known(struct db_stmt *s, int i)
{
    return db_column_is_null(s, i) ? -1 : db_column_int64(s, i);
}

/* ------------------------------------------------------------------------------------ */
/* The fold (pure)                                                                       */

/* What a cumulative counter adds: all of it after a reset (new run, counter went down). */
static int64_t counter_delta(int64_t prev, int64_t cur, bool same_run)
{
    if (cur < 0)
        return -1;
    if (!same_run || prev < 0 || cur < prev)
        return cur;
    return cur - prev;
}

static void add_known(int64_t *sum, int64_t v)
{
    if (v > 0)
        *sum += v;
}

void store_usage_fold(struct store_usage_summary *s, const struct store_usage_point *prev,
                      const struct store_usage_point *p, const char *gpu_source, int idle_below,
                      struct store_usage_point *d)
{
    bool same = prev && prev->run == p->run;
    *d = *p;
    d->cpu_ms = counter_delta(same ? prev->cpu_ms : -1, p->cpu_ms, same);
    d->io_read_bytes = counter_delta(same ? prev->io_read_bytes : -1, p->io_read_bytes, same);
    d->io_write_bytes = counter_delta(same ? prev->io_write_bytes : -1, p->io_write_bytes, same);
    int64_t span = same ? p->time_ms - prev->time_ms : 0;
    d->time_ms = span > 0 && span <= STORE_USAGE_GAP_MAX_MS ? span : 0;

    s->job = p->job;
    if (s->samples == 0 || p->time_ms < s->first_ms)
        s->first_ms = p->time_ms;
    if (p->time_ms > s->last_ms)
        s->last_ms = p->time_ms;
    if (s->run != p->run) { /* a new run: its own idle stretch */
        s->run = p->run;
        s->idle_since_ms = s->idle_flagged_ms = 0;
    }
    s->samples++;
    str_copy(s->gpu_source, sizeof(s->gpu_source), gpu_source ? gpu_source : "none");
    add_known(&s->cpu_ms, d->cpu_ms);
    add_known(&s->io_read_bytes, d->io_read_bytes);
    add_known(&s->io_write_bytes, d->io_write_bytes);
    if (p->mem_peak_bytes > s->mem_peak_bytes)
        s->mem_peak_bytes = p->mem_peak_bytes;
    if (p->mem_bytes > s->mem_peak_bytes)
        s->mem_peak_bytes = p->mem_bytes;
    if (p->gpu_errors > s->gpu_errors)
        s->gpu_errors = p->gpu_errors;
    if (p->gpu_util < 0)
        return; /* no GPU figure: says nothing about idleness */
    s->gpu_util_sum += p->gpu_util;
    s->gpu_samples++;
    if (p->gpu_util < idle_below) {
        s->gpu_idle_ms += d->time_ms;
        if (!s->idle_since_ms)
            s->idle_since_ms = p->time_ms;
    } else {
        s->last_busy_ms = p->time_ms;
        s->idle_since_ms = s->idle_flagged_ms = 0;
    }
}

/* ------------------------------------------------------------------------------------ */
/* Rows                                                                                  */

static int prev_get(struct store *st, const struct store_usage_point *p,
                    struct store_usage_point *prev)
{
    struct db_stmt *s = stmt(st, U_PREV);
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, (int64_t)p->job);
    db_bind_text(s, 2, p->node);
    int rc = db_step(s);
    if (rc == DB_ROW) {
        memset(prev, 0, sizeof(*prev));
        prev->run = db_column_int(s, 0);
        prev->time_ms = db_column_int64(s, 1);
        prev->cpu_ms = col_known(s, 2);
        prev->io_read_bytes = col_known(s, 3);
        prev->io_write_bytes = col_known(s, 4);
    }
    db_reset(s);
    db_clear_bindings(s);
    return rc == DB_ROW ? 0 : rc == DB_DONE ? -ENOENT : store_fail(st, "usage prev");
}

static int raw_add(struct store *st, const struct store_usage_point *p)
{
    struct db_stmt *s = stmt(st, U_RAW_ADD);
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, (int64_t)p->job);
    db_bind_text(s, 2, p->node);
    db_bind_int64(s, 3, p->time_ms);
    db_bind_int64(s, 4, p->run);
    const int64_t v[] = {p->cpu_ms,         p->mem_bytes, p->mem_peak_bytes, p->io_read_bytes,
                         p->io_write_bytes, p->gpu_util,  p->gpu_mem_mb,     p->gpu_power_mw,
                         p->gpu_temp_c,     p->gpu_errors};
    for (int i = 0; i < (int)(sizeof(v) / sizeof(v[0])); i++)
        bind_known(s, 5 + i, v[i]);
    return done(st, s, "usage raw add");
}

static int minute_add(struct store *st, const struct store_usage_point *p,
                      const struct store_usage_point *d)
{
    struct db_stmt *s = stmt(st, U_MIN_ADD);
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, (int64_t)p->job);
    db_bind_int64(s, 2, p->time_ms - p->time_ms % 60000);
    db_bind_int64(s, 3, d->time_ms);
    bind_known(s, 4, d->cpu_ms);
    bind_known(s, 5, p->mem_bytes);
    db_bind_int64(s, 6, p->mem_bytes >= 0);
    bind_known(s, 7, p->mem_peak_bytes);
    bind_known(s, 8, d->io_read_bytes);
    bind_known(s, 9, d->io_write_bytes);
    bind_known(s, 10, p->gpu_util);
    db_bind_int64(s, 11, p->gpu_util >= 0);
    bind_known(s, 12, p->gpu_util >= 0 ? p->gpu_mem_mb : -1);
    bind_known(s, 13, p->gpu_util >= 0 ? p->gpu_power_mw : -1);
    return done(st, s, "usage minute add");
}

static int summary_put(struct store *st, const struct store_usage_summary *u)
{
    struct db_stmt *s = stmt(st, U_SUM_PUT);
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, (int64_t)u->job);
    db_bind_int64(s, 2, u->run);
    db_bind_text(s, 3, u->gpu_source);
    const int64_t v[] = {u->samples,         u->first_ms,      u->last_ms,        u->cpu_ms,
                         u->mem_peak_bytes,  u->io_read_bytes, u->io_write_bytes, u->gpu_util_sum,
                         u->gpu_samples,     u->gpu_idle_ms,   u->last_busy_ms,   u->idle_since_ms,
                         u->idle_flagged_ms, u->gpu_errors};
    for (int i = 0; i < (int)(sizeof(v) / sizeof(v[0])); i++)
        db_bind_int64(s, 4 + i, v[i]);
    return done(st, s, "usage summary put");
}

int store_usage_summary_get(struct store *st, uint64_t job, struct store_usage_summary *out)
{
    struct db_stmt *s = stmt(st, U_SUM_GET);
    if (!s)
        return -EIO;
    memset(out, 0, sizeof(*out));
    out->job = job;
    out->mem_peak_bytes = out->gpu_errors = 0;
    db_bind_int64(s, 1, (int64_t)job);
    int rc = db_step(s);
    if (rc == DB_ROW) {
        const char *src = db_column_text(s, 2);
        out->run = db_column_int(s, 1);
        str_copy(out->gpu_source, sizeof(out->gpu_source), src ? (const char *)src : "none");
        int64_t *v[] = {&out->samples,         &out->first_ms,       &out->last_ms,
                        &out->cpu_ms,          &out->mem_peak_bytes, &out->io_read_bytes,
                        &out->io_write_bytes,  &out->gpu_util_sum,   &out->gpu_samples,
                        &out->gpu_idle_ms,     &out->last_busy_ms,   &out->idle_since_ms,
                        &out->idle_flagged_ms, &out->gpu_errors};
        for (int i = 0; i < (int)(sizeof(v) / sizeof(v[0])); i++)
            *v[i] = db_column_int64(s, 3 + i);
    }
    db_reset(s);
    db_clear_bindings(s);
    return rc == DB_ROW ? 0 : rc == DB_DONE ? -ENOENT : store_fail(st, "usage summary");
}

int store_usage_add(struct store *st, const struct store_usage_point *p, const char *gpu_source,
                    int idle_below, struct store_usage_summary *out)
{
    struct store_usage_point prev, d;
    struct store_usage_summary sum;
    int rc = prev_get(st, p, &prev);
    if (rc < 0 && rc != -ENOENT)
        return rc;
    bool have_prev = rc == 0;
    rc = store_usage_summary_get(st, p->job, &sum);
    if (rc < 0 && rc != -ENOENT)
        return rc;
    if (rc == -ENOENT)
        sum.run = p->run; /* the first sample starts the first stretch */
    store_usage_fold(&sum, have_prev ? &prev : NULL, p, gpu_source, idle_below, &d);
    if ((rc = raw_add(st, p)) < 0 || (rc = minute_add(st, p, &d)) < 0 ||
        (rc = summary_put(st, &sum)) < 0)
        return rc;
    if (out)
        *out = sum;
    return 0;
}

int store_usage_flag(struct store *st, uint64_t job, int64_t flagged_ms)
{
    struct db_stmt *s = stmt(st, U_FLAG);
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, (int64_t)job);
    db_bind_int64(s, 2, flagged_ms);
    return done(st, s, "usage flag");
}

/* ------------------------------------------------------------------------------------ */
/* Series                                                                                */

/* The last raw counters of up to 16 nodes, for rates between a node's samples. */
struct last_by_node {
    char node[16][64];
    int run[16];
    int64_t time_ms[16], cpu_ms[16];
    int n;
};

static double raw_rate(struct last_by_node *l, const char *node, int run, int64_t t, int64_t cpu)
{
    int k = 0;
    while (k < l->n && strcmp(l->node[k], node) != 0)
        k++;
    if (k == l->n) {
        if (l->n == 16)
            return -1;
        str_copy(l->node[l->n++], sizeof(l->node[0]), node);
        l->time_ms[k] = -1;
    }
    double r = -1;
    if (l->time_ms[k] >= 0 && l->run[k] == run && t > l->time_ms[k] && cpu >= l->cpu_ms[k] &&
        l->cpu_ms[k] >= 0)
        r = (double)(cpu - l->cpu_ms[k]) / (double)(t - l->time_ms[k]);
    l->run[k] = run;
    l->time_ms[k] = t;
    l->cpu_ms[k] = cpu;
    return r;
}

static void raw_row(struct db_stmt *s, struct last_by_node *l, struct store_usage_row *r)
{
    const char *node = db_column_text(s, 1);
    memset(r, 0, sizeof(*r));
    r->time_ms = db_column_int64(s, 0);
    r->samples = 1;
    str_copy(r->node, sizeof(r->node), node ? (const char *)node : "");
    r->cpu_cores = raw_rate(l, r->node, db_column_int(s, 2), r->time_ms, col_known(s, 3));
    r->mem_bytes = col_known(s, 4);
    r->mem_peak_bytes = col_known(s, 5);
    r->io_read_bytes = col_known(s, 6);
    r->io_write_bytes = col_known(s, 7);
    r->gpu_util = (int)col_known(s, 8);
    r->gpu_mem_mb = col_known(s, 9);
    r->gpu_power_mw = col_known(s, 10);
}

static int64_t mean(struct db_stmt *s, int sum_col, int64_t n)
{
    return n > 0 && !db_column_is_null(s, sum_col) ? db_column_int64(s, sum_col) / n : -1;
}

static void minute_row(struct db_stmt *s, struct store_usage_row *r)
{
    memset(r, 0, sizeof(*r));
    r->time_ms = db_column_int64(s, 0);
    r->samples = db_column_int64(s, 1);
    int64_t span = db_column_int64(s, 2);
    r->cpu_cores = span > 0 && col_known(s, 3) >= 0 ? (double)col_known(s, 3) / (double)span : -1;
    r->mem_bytes = mean(s, 4, db_column_int64(s, 5));
    r->mem_peak_bytes = col_known(s, 6);
    r->io_read_bytes = col_known(s, 7);
    r->io_write_bytes = col_known(s, 8);
    int64_t gn = db_column_int64(s, 10);
    r->gpu_util = (int)mean(s, 9, gn);
    r->gpu_mem_mb = mean(s, 11, gn);
    r->gpu_power_mw = mean(s, 12, gn);
}

int store_usage_series(struct store *st, uint64_t job, bool raw, int64_t since_ms, int limit,
                       store_usage_cb cb, void *arg)
{
    struct db_stmt *s = stmt(st, raw ? U_SERIES_RAW : U_SERIES_MIN);
    if (!s)
        return -EIO;
    struct last_by_node last = {.n = 0};
    db_bind_int64(s, 1, (int64_t)job);
    db_bind_int64(s, 2, since_ms);
    db_bind_int64(s, 3, limit);
    int rc, out = 0;
    while ((rc = db_step(s)) == DB_ROW) {
        struct store_usage_row r;
        if (raw)
            raw_row(s, &last, &r);
        else
            minute_row(s, &r);
        if ((out = cb(arg, &r)) != 0)
            break;
    }
    if (out == 0 && rc != DB_DONE)
        out = store_fail(st, "usage series");
    db_reset(s);
    db_clear_bindings(s);
    return out;
}

/* ------------------------------------------------------------------------------------ */
/* Retention                                                                             */

static int prune(struct store *st, int which, int64_t before, int limit)
{
    struct db_stmt *s = stmt(st, which);
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, before);
    db_bind_int64(s, 2, limit);
    int rc = done(st, s, "usage prune");
    return rc < 0 ? rc : db_changes(store_db(st));
}

int store_usage_prune(struct store *st, int64_t now_ms, int limit)
{
    int a = prune(st, U_PRUNE_RAW, now_ms - STORE_USAGE_RAW_KEEP_MS, limit);
    if (a < 0)
        return a;
    int b = prune(st, U_PRUNE_MIN, now_ms - STORE_USAGE_MINUTE_KEEP_MS, limit);
    return b < 0 ? b : a + b;
}

int store_usage_counts(struct store *st, int64_t *raw, int64_t *minutes, int64_t *summaries)
{
    struct db_stmt *s = stmt(st, U_COUNTS);
    if (!s)
        return -EIO;
    int rc = db_step(s);
    if (rc == DB_ROW) {
        *raw = db_column_int64(s, 0);
        *minutes = db_column_int64(s, 1);
        *summaries = db_column_int64(s, 2);
    }
    db_reset(s);
    return rc == DB_ROW ? 0 : store_fail(st, "usage counts");
}
