/*
 * storage.c - project storage areas in the database (store.h "Storage areas"): which
 * project has a directory on which pool, with which quota; and the lifecycle runs (what
 * ran where, with its counts); and each area's usage sampled over time, integrated for
 * reports; and where each archived stream of a job's log lives. The pools and rules are the
 * policy's; the usage now is the agents' and lives in
 * docketd's memory. Statements prepared per call: they are rare.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"

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

int store_storage_byte_ms(struct store *st, int64_t since, int64_t until, store_storage_use_cb cb,
                          void *arg)
{
    /* from the last sampling before the window (every area is sampled at the same tick) */
    struct db_stmt *s =
        prepare(st, "SELECT project, pool, sample_ms, used_bytes FROM storage_usage"
                    " WHERE sample_ms < ?2 AND sample_ms >= coalesce((SELECT max(sample_ms)"
                    " FROM storage_usage WHERE sample_ms <= ?1), 0)"
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

int store_log_archive_get(struct store *st, uint64_t job, int run, int stream,
                          struct store_log_archive *out)
{
    struct db_stmt *s = prepare(st, "SELECT pool, path, bytes, stored_bytes, sha256, archived_ms"
                                    " FROM log_archives WHERE job = ?1 AND run = ?2"
                                    " AND stream = ?3");
    if (!s)
        return -EIO;
    db_bind_int64(s, 1, (int64_t)job);
    db_bind_int64(s, 2, run);
    db_bind_int64(s, 3, stream);
    int step = db_step(s), rc = -ENOENT;
    if (step == DB_ROW) {
        *out = (struct store_log_archive){.job = job, .run = run, .stream = stream};
        store_col_copy(s, 0, out->pool, sizeof(out->pool));
        store_col_copy(s, 1, out->path, sizeof(out->path));
        out->bytes = db_column_int64(s, 2);
        out->stored_bytes = db_column_int64(s, 3);
        store_col_copy(s, 4, out->sha256, sizeof(out->sha256));
        out->archived_ms = db_column_int64(s, 5);
        rc = 0;
    } else if (step != DB_DONE) {
        rc = store_fail(st, "get log archive");
    }
    db_finalize(s);
    return rc;
}
