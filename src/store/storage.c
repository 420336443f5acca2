/*
 * storage.c - project storage areas in the database (store.h "Storage areas"): which
 * project has a directory on which pool, with which quota; and the lifecycle runs (what
 * ran where, with its counts); and each area's usage sampled over time, integrated for
 * reports; and where each archived stream of a job's log lives. The pools and rules are the
 * policy's; the usage now is the agents' and lives in
 * docketd's memory. Statements prepared per call: they are rare.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"
#include "util/xalloc.h"

static struct db_stmt *prepare(struct store *st, const char *sql)
{
    struct db_stmt *s = NULL;
    return store_prepare(st, sql, &s) < 0 ? NULL : s;
}

int store_storage_area_put(struct store *st, const struct store_storage_area *a)
{
    struct db_stmt *s =
        prepare(st, "INSERT INTO storage_areas(project, pool, quota_bytes, created_by,"
                    " created_ms) VALUES (?1,?2,?3,?4,?5) ON CONFLICT(project, pool)"
                    " DO UPDATE SET quota_bytes = excluded.quota_bytes");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, a->project);
    store_bind_text(s, 2, a->pool);
    db_bind_int64(s, 3, a->quota_bytes);
    store_bind_text(s, 4, a->created_by);
    db_bind_int64(s, 5, a->created_ms);
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "put storage area");
    db_finalize(s);
    return rc;
}

int store_storage_area_delete(struct store *st, const char *project, const char *pool)
{
    struct db_stmt *s = prepare(st, "DELETE FROM storage_areas WHERE project = ?1 AND pool = ?2");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, project);
    store_bind_text(s, 2, pool);
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "delete storage area");
    if (rc == 0 && db_changes(store_db(st)) == 0)
        rc = -ENOENT;
    db_finalize(s);
    return rc;
}

int store_storage_area_list(struct store *st, store_storage_area_cb cb, void *arg)
{
    struct db_stmt *s = prepare(st, "SELECT project, pool, quota_bytes, created_by, created_ms"
                                    " FROM storage_areas ORDER BY project, pool");
    if (!s)
        return -EIO;
    int step, rc = 0;
    while ((step = db_step(s)) == DB_ROW) {
        struct store_storage_area a;
        memset(&a, 0, sizeof(a));
        store_col_copy(s, 0, a.project, sizeof(a.project));
        store_col_copy(s, 1, a.pool, sizeof(a.pool));
        a.quota_bytes = db_column_int64(s, 2);
        store_col_copy(s, 3, a.created_by, sizeof(a.created_by));
        a.created_ms = db_column_int64(s, 4);
        if ((rc = cb(arg, &a)))
            break;
    }
    if (!rc && step != DB_DONE)
        rc = store_fail(st, "list storage areas");
    db_finalize(s);
    return rc;
}

int store_lc_run_put(struct store *st, const struct store_lc_run *r)
{
    struct db_stmt *s = prepare(
        st, "INSERT INTO lifecycle_runs(id, rule, project, pool, to_pool, action, dry_run, node,"
            " state, requested_by, created_ms, finished_ms, files, bytes, freed_bytes, failed,"
            " in_use, message, result) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,"
            "?15,?16,?17,?18,?19) ON CONFLICT(id) DO UPDATE SET node = excluded.node,"
            " state = excluded.state, finished_ms = excluded.finished_ms,"
            " files = excluded.files, bytes = excluded.bytes,"
            " freed_bytes = excluded.freed_bytes, failed = excluded.failed,"
            " in_use = excluded.in_use, message = excluded.message, result = excluded.result");
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, r->id);
    store_bind_text(s, 2, r->rule);
    store_bind_text(s, 3, r->project);
    store_bind_text(s, 4, r->pool);
    store_bind_text(s, 5, r->to_pool);
    store_bind_text(s, 6, r->action);
    db_bind_int64(s, 7, r->dry_run);
    store_bind_text(s, 8, r->node);
    store_bind_text(s, 9, r->state);
    store_bind_text(s, 10, r->requested_by);
    db_bind_int64(s, 11, r->created_ms);
    db_bind_int64(s, 12, r->finished_ms);
    db_bind_int64(s, 13, r->files);
    db_bind_int64(s, 14, r->bytes);
    db_bind_int64(s, 15, r->freed_bytes);
    db_bind_int64(s, 16, r->failed);
    db_bind_int64(s, 17, r->in_use);
    store_bind_text(s, 18, r->message);
    store_bind_text(s, 19, r->result ? r->result : "");
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "put lifecycle run");
    db_finalize(s);
    return rc;
}

static void lc_run_row(struct db_stmt *s, struct store_lc_run *r)
{
    memset(r, 0, sizeof(*r));
    r->id = db_column_int64(s, 0);
    store_col_copy(s, 1, r->rule, sizeof(r->rule));
    store_col_copy(s, 2, r->project, sizeof(r->project));
    store_col_copy(s, 3, r->pool, sizeof(r->pool));
    store_col_copy(s, 4, r->to_pool, sizeof(r->to_pool));
    store_col_copy(s, 5, r->action, sizeof(r->action));
    r->dry_run = db_column_int64(s, 6) != 0;
    store_col_copy(s, 7, r->node, sizeof(r->node));
    store_col_copy(s, 8, r->state, sizeof(r->state));
    store_col_copy(s, 9, r->requested_by, sizeof(r->requested_by));
    r->created_ms = db_column_int64(s, 10);
    r->finished_ms = db_column_int64(s, 11);
    r->files = db_column_int64(s, 12);
    r->bytes = db_column_int64(s, 13);
    r->freed_bytes = db_column_int64(s, 14);
    r->failed = db_column_int64(s, 15);
    r->in_use = db_column_int64(s, 16);
    store_col_copy(s, 17, r->message, sizeof(r->message));
    r->result = (char *)db_column_text(s, 18);
}

int store_lc_run_list(struct store *st, int64_t limit, bool unfinished, store_lc_run_cb cb,
                      void *arg)
{
    struct db_stmt *s = prepare(
        st, unfinished
                ? "SELECT id, rule, project, pool, to_pool, action, dry_run, node, state,"
                  " requested_by, created_ms, finished_ms, files, bytes, freed_bytes, failed,"
                  " in_use, message, result FROM lifecycle_runs WHERE finished_ms = 0"
                  " ORDER BY id DESC LIMIT ?1"
                : "SELECT id, rule, project, pool, to_pool, action, dry_run, node, state,"
                  " requested_by, created_ms, finished_ms, files, bytes, freed_bytes, failed,"
                  " in_use, message, result FROM lifecycle_runs ORDER BY id DESC LIMIT ?1");
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, limit > 0 ? limit : INT64_MAX);
    int step, rc = 0;
    while ((step = db_step(s)) == DB_ROW) {
        struct store_lc_run r;
        lc_run_row(s, &r);
        if ((rc = cb(arg, &r)))
            break;
    }
    if (!rc && step != DB_DONE)
        rc = store_fail(st, "list lifecycle runs");
    db_finalize(s);
    return rc;
}

int store_storage_sample_add(struct store *st, int64_t sample_ms, const char *project,
                             const char *pool, int64_t used_bytes)
{
    struct db_stmt *s = prepare(st, "INSERT INTO storage_usage(project, pool, sample_ms,"
                                    " used_bytes) VALUES (?1,?2,?3,?4) ON CONFLICT(project, pool,"
                                    " sample_ms) DO UPDATE SET used_bytes = excluded.used_bytes");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, project);
    store_bind_text(s, 2, pool);
    db_bind_int64(s, 3, sample_ms);
    db_bind_int64(s, 4, used_bytes);
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "add storage sample");
    db_finalize(s);
    return rc;
}

/* One area's samples in time order, integrated as a step function. */
struct area_sum {
    char project[64], pool[64];
    int64_t at, used; /* the sample in hand; at < 0: none */
    double byte_ms;
};

static void sum_step(struct area_sum *a, int64_t to, int64_t since)
{
    int64_t from = a->at > since ? a->at : since;
    if (a->at >= 0 && to > from)
        a->byte_ms += (double)a->used * (double)(to - from);
}

/* The samples before ?2 that matter from ?1 on: those from ?1, and each area's last
 * one before ?1 (which holds into it). */
#define HELD_FROM                                                                                  \
    "storage_usage a WHERE a.sample_ms < ?2 AND (a.sample_ms > ?1 OR NOT EXISTS (SELECT 1"         \
    " FROM storage_usage b WHERE b.project = a.project AND b.pool = a.pool"                        \
    " AND b.sample_ms > a.sample_ms AND b.sample_ms <= ?1))"

int store_storage_byte_ms(struct store *st, int64_t since, int64_t until, store_storage_use_cb cb,
                          void *arg)
{
    /* each area from its own last sample at or before the window's start: a rolled-up
     * area has no sample at a step where its usage did not change */
    struct db_stmt *s = prepare(st, "SELECT project, pool, sample_ms, used_bytes FROM " HELD_FROM
                                    " ORDER BY project, pool, sample_ms");
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, since);
    db_bind_int64(s, 2, until);
    struct area_sum a = {.at = -1};
    int step, rc = 0;
    while ((step = db_step(s)) == DB_ROW) {
        char project[64], pool[64];
        store_col_copy(s, 0, project, sizeof(project));
        store_col_copy(s, 1, pool, sizeof(pool));
        int64_t at = db_column_int64(s, 2), used = db_column_int64(s, 3);
        if (a.at >= 0 && (strcmp(project, a.project) != 0 || strcmp(pool, a.pool) != 0)) {
            sum_step(&a, until, since);
            if ((rc = cb(arg, a.project, a.pool, a.byte_ms)))
                break;
            a = (struct area_sum){.at = -1};
        }
        sum_step(&a, at, since);
        snprintf(a.project, sizeof(a.project), "%s", project);
        snprintf(a.pool, sizeof(a.pool), "%s", pool);
        a.at = at;
        a.used = used;
    }
    if (!rc && step != DB_DONE)
        rc = store_fail(st, "integrate storage usage");
    if (!rc && a.at >= 0) {
        sum_step(&a, until, since);
        rc = cb(arg, a.project, a.pool, a.byte_ms);
    }
    db_finalize(s);
    return rc;
}

int store_log_archive_put(struct store *st, const struct store_log_archive *a)
{
    struct db_stmt *s = prepare(
        st, "INSERT INTO log_archives(job, run, stream, pool, path, bytes, stored_bytes, sha256,"
            " archived_ms) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9) ON CONFLICT(job, run, stream)"
            " DO UPDATE SET pool = excluded.pool, path = excluded.path, bytes = excluded.bytes,"
            " stored_bytes = excluded.stored_bytes, sha256 = excluded.sha256,"
            " archived_ms = excluded.archived_ms");
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, (int64_t)a->job);
    db_bind_int64(s, 2, a->run);
    db_bind_int64(s, 3, a->stream);
    store_bind_text(s, 4, a->pool);
    store_bind_text(s, 5, a->path);
    db_bind_int64(s, 6, a->bytes);
    db_bind_int64(s, 7, a->stored_bytes);
    store_bind_text(s, 8, a->sha256);
    db_bind_int64(s, 9, a->archived_ms);
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "put log archive");
    db_finalize(s);
    return rc;
}

static void log_archive_row(struct db_stmt *s, struct store_log_archive *out)
{
    out->job = (uint64_t)db_column_int64(s, 0);
    out->run = (int)db_column_int64(s, 1);
    out->stream = (int)db_column_int64(s, 2);
    store_col_copy(s, 3, out->pool, sizeof(out->pool));
    store_col_copy(s, 4, out->path, sizeof(out->path));
    out->bytes = db_column_int64(s, 5);
    out->stored_bytes = db_column_int64(s, 6);
    store_col_copy(s, 7, out->sha256, sizeof(out->sha256));
    out->archived_ms = db_column_int64(s, 8);
}

#define LOG_ARCHIVE_COLS                                                                           \
    "SELECT job, run, stream, pool, path, bytes, stored_bytes, sha256, archived_ms"                \
    " FROM log_archives WHERE job = ?1"

int store_log_archive_get(struct store *st, uint64_t job, int run, int stream,
                          struct store_log_archive *out)
{
    struct db_stmt *s = prepare(st, LOG_ARCHIVE_COLS " AND run = ?2 AND stream = ?3");
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, (int64_t)job);
    db_bind_int64(s, 2, run);
    db_bind_int64(s, 3, stream);
    int step = db_step(s), rc = -ENOENT;
    if (step == DB_ROW) {
        log_archive_row(s, out);
        rc = 0;
    } else if (step != DB_DONE) {
        rc = store_fail(st, "get log archive");
    }
    db_finalize(s);
    return rc;
}

int store_log_archive_list(struct store *st, uint64_t job, store_log_archive_cb cb, void *arg)
{
    struct db_stmt *s = prepare(st, LOG_ARCHIVE_COLS " ORDER BY run, stream");
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, (int64_t)job);
    int step, rc = 0;
    while ((step = db_step(s)) == DB_ROW) {
        struct store_log_archive a;
        log_archive_row(s, &a);
        if ((rc = cb(arg, &a)))
            break;
    }
    if (!rc && step != DB_DONE)
        rc = store_fail(st, "list log archives");
    db_finalize(s);
    return rc;
}

/* ---- rolling samples up ---------------------------------------------------------------- */

struct rolled {
    char project[64], pool[64];
    int64_t at, used;
};

/* One area's step function walked over [from, until) in steps of `step`: each step's
 * integral kept as one sample at its start (its mean), written only where it differs
 * from the value before it; and at `until`, the value that holds there. */
struct roll {
    int64_t from, until, step;
    struct rolled *out;
    size_t nout, cap;
    /* the area in hand */
    char project[64], pool[64];
    bool open;
    int64_t cur;     /* the value holding at `t`, -1: none yet */
    int64_t t, d;    /* where the walk is; the start of its step */
    double integral; /* byte-ms of the step so far */
    bool known;      /* the step had a value for some of it */
    int64_t written; /* the value the rows written so far hold at `t`, -1: none */
};

static void roll_emit(struct roll *r, int64_t at, int64_t used)
{
    if (r->nout == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->out = xrealloc(r->out, r->cap * sizeof(*r->out));
    }
    struct rolled *o = &r->out[r->nout++];
    snprintf(o->project, sizeof(o->project), "%s", r->project);
    snprintf(o->pool, sizeof(o->pool), "%s", r->pool);
    o->at = at;
    o->used = used;
    r->written = used;
}

/* Close the step in hand and move to the next. */
static void roll_step(struct roll *r)
{
    int64_t end = r->d + r->step;
    if (r->cur >= 0) {
        r->integral += (double)r->cur * (double)(end - r->t);
        r->known = true;
    }
    if (r->known) {
        int64_t mean = llround(r->integral / (double)r->step);
        if (mean != r->written)
            roll_emit(r, r->d, mean);
    }
    r->d = end;
    r->t = end;
    r->integral = 0;
    r->known = false;
}

static void roll_close(struct roll *r)
{
    if (!r->open)
        return;
    while (r->d < r->until)
        roll_step(r);
    if (r->cur >= 0 && r->cur != r->written)
        roll_emit(r, r->until, r->cur); /* what holds from `until` on, as before */
    r->open = false;
}

static void roll_sample(struct roll *r, const char *project, const char *pool, int64_t at,
                        int64_t used)
{
    if (!r->open || strcmp(project, r->project) != 0 || strcmp(pool, r->pool) != 0) {
        roll_close(r);
        snprintf(r->project, sizeof(r->project), "%s", project);
        snprintf(r->pool, sizeof(r->pool), "%s", pool);
        r->open = true;
        r->cur = r->written = -1;
        r->t = r->d = r->from;
        r->integral = 0;
        r->known = false;
    }
    if (at < r->from) { /* the sample before the span: it stays, and holds into it */
        r->cur = r->written = used;
        return;
    }
    while (at >= r->d + r->step)
        roll_step(r);
    if (r->cur >= 0) {
        r->integral += (double)r->cur * (double)(at - r->t);
        r->known = true;
    }
    r->t = at;
    r->cur = used;
}

/* The earliest sample before `until` not on a step's start, -ENOENT when none. */
static int first_unrolled(struct store *st, int64_t until, int64_t step, int64_t *at)
{
    struct db_stmt *s = prepare(st, "SELECT min(sample_ms) FROM storage_usage"
                                    " WHERE sample_ms < ?1 AND sample_ms % ?2 <> 0");
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, until);
    db_bind_int64(s, 2, step);
    int step_rc = db_step(s), rc = -ENOENT;
    if (step_rc == DB_ROW && !db_column_is_null(s, 0)) {
        *at = db_column_int64(s, 0);
        rc = 0;
    } else if (step_rc != DB_ROW && step_rc != DB_DONE) {
        rc = store_fail(st, "find storage samples to roll up");
    }
    db_finalize(s);
    return rc;
}

static int roll_read(struct store *st, struct roll *r)
{
    struct db_stmt *s = prepare(st, "SELECT project, pool, sample_ms, used_bytes FROM " HELD_FROM
                                    " ORDER BY project, pool, sample_ms");
    if (!s)
        return -EIO;
    /* ?1 just before the span: its samples from `from` on, and each area's one before */
    db_bind_int64(s, 1, r->from - 1);
    db_bind_int64(s, 2, r->until);
    int step;
    while ((step = db_step(s)) == DB_ROW) {
        char project[64], pool[64];
        store_col_copy(s, 0, project, sizeof(project));
        store_col_copy(s, 1, pool, sizeof(pool));
        roll_sample(r, project, pool, db_column_int64(s, 2), db_column_int64(s, 3));
    }
    db_finalize(s);
    if (step != DB_DONE)
        return store_fail(st, "read storage samples to roll up");
    roll_close(r);
    return 0;
}

static int roll_write(struct store *st, const struct roll *r, int64_t *removed)
{
    struct db_stmt *s = prepare(st, "DELETE FROM storage_usage WHERE sample_ms >= ?1"
                                    " AND sample_ms < ?2");
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, r->from);
    db_bind_int64(s, 2, r->until);
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "delete rolled storage samples");
    db_finalize(s);
    if (rc)
        return rc;
    *removed = db_changes(store_db(st));
    s = prepare(st, "INSERT INTO storage_usage(project, pool, sample_ms, used_bytes)"
                    " VALUES (?1,?2,?3,?4) ON CONFLICT(project, pool, sample_ms) DO NOTHING");
    if (!s)
        return -EIO;
    for (size_t i = 0; i < r->nout && rc == 0; i++) {
        db_reset(s);
        store_bind_text(s, 1, r->out[i].project);
        store_bind_text(s, 2, r->out[i].pool);
        db_bind_int64(s, 3, r->out[i].at);
        db_bind_int64(s, 4, r->out[i].used);
        if (db_step(s) != DB_DONE)
            rc = store_fail(st, "write rolled storage samples");
    }
    db_finalize(s);
    *removed -= (int64_t)r->nout;
    return rc;
}

int store_storage_samples_rollup(struct store *st, int64_t before_ms, int64_t step_ms,
                                 int max_steps, struct store_rollup *out)
{
    memset(out, 0, sizeof(*out));
    int64_t until = before_ms - before_ms % step_ms, first = 0;
    int rc = first_unrolled(st, until, step_ms, &first);
    if (rc == -ENOENT)
        return 0;
    if (rc < 0)
        return rc;
    struct roll r = {.step = step_ms};
    r.from = first - first % step_ms;
    r.until = until - r.from > (int64_t)max_steps * step_ms ? r.from + (int64_t)max_steps * step_ms
                                                            : until;
    rc = roll_read(st, &r);
    if (rc == 0)
        rc = roll_write(st, &r, &out->removed);
    free(r.out);
    out->from_ms = r.from;
    out->until_ms = r.until;
    out->more = rc == 0 && r.until < until;
    return rc;
}
