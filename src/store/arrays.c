/*
 * arrays.c - the store's side of big array submissions (docs/controller.md "Big
 * submissions"): the durable marker of an array whose rows are written across several
 * loop turns, and the rollback of such an array, a bounded step a turn (a slice failed)
 * or whole at the next start (docketd stopped before the last slice, or before the
 * rollback's last step). Prepared per call: a few times an array.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/sched.h"
#include "store/store_int.h"

/* Run `sql` with ?1 bound to `id` (and ?2, ?3 when given); finalize. */
static int run_id(struct store *st, const char *sql, uint64_t id, int nextra, const int64_t *extra,
                  const char *what)
{
    struct db_stmt *s;
    int rc = store_prepare(st, sql, &s);
    if (rc < 0)
        return rc;
    db_bind_int64(s, 1, (int64_t)id);
    for (int i = 0; i < nextra; i++)
        db_bind_int64(s, 2 + i, (int64_t)extra[i]);
    return store_step_finalize(st, s, what);
}

int store_array_writing_put(struct store *st, uint64_t array_id, int64_t tasks, int64_t now_ms)
{
    const int64_t extra[2] = {tasks, now_ms};
    store_job_written(st, array_id);
    return run_id(st, "INSERT INTO arrays_writing(array_id, tasks, started_ms) VALUES (?1, ?2, ?3)",
                  array_id, 2, extra, "mark array");
}

int store_array_writing_clear(struct store *st, uint64_t array_id)
{
    store_job_written(st, array_id);
    int rc = run_id(st, "DELETE FROM arrays_writing WHERE array_id = ?1", array_id, 0, NULL,
                    "clear array mark");
    if (rc == 0 && db_changes(store_db(st)) != 1) {
        char m[96];
        snprintf(m, sizeof(m), "array %llu is not being written", (unsigned long long)array_id);
        store_set_errmsg(st, m);
        return -ENOENT;
    }
    return rc;
}

/* Delete the next task rows (`sql`: ... RETURNING id), each one a job write. */
static int delete_tasks(struct store *st, const char *sql, uint64_t array_id, int64_t lim,
                        size_t *deleted)
{
    struct db_stmt *s;
    int rc = store_prepare(st, sql, &s);
    if (rc < 0)
        return rc;
    db_bind_int64(s, 1, (int64_t)array_id);
    db_bind_int64(s, 2, lim);
    while ((rc = db_step(s)) == DB_ROW) {
        store_job_written(st, (uint64_t)db_column_int64(s, 0));
        (*deleted)++;
    }
    rc = rc == DB_DONE ? 0 : store_fail(st, "discard array");
    db_finalize(s);
    return rc;
}

int store_array_discard_step(struct store *st, uint64_t array_id, size_t max, size_t *deleted,
                             bool *done)
{
    /* the lowest ids first, through the partial index on array_id (which holds the rowid);
     * events and holds by their job, the rows themselves last */
#define NEXT_TASKS                                                                                 \
    "(SELECT id FROM jobs WHERE array_id = ?1 AND array_id <> 0 ORDER BY id LIMIT ?2)"
    static const char *const rows[] = {
        "DELETE FROM job_events WHERE job IN " NEXT_TASKS,
        "DELETE FROM job_holds WHERE job IN " NEXT_TASKS,
    };
    static const char tasks[] = "DELETE FROM jobs WHERE id IN " NEXT_TASKS " RETURNING id";
#undef NEXT_TASKS
    static const char *const last[] = {
        "DELETE FROM job_specs WHERE id = ?1",
        "DELETE FROM arrays_writing WHERE array_id = ?1",
    };
    /* no limit is a limit no table reaches (LIMIT -1 is SQLite's only) */
    const int64_t lim[1] = {max > (size_t)INT64_MAX ? INT64_MAX : (int64_t)max};
    *deleted = 0;
    *done = false;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        int rc = run_id(st, rows[i], array_id, 1, lim, "discard array");
        if (rc < 0)
            return rc;
    }
    int rc = delete_tasks(st, tasks, array_id, lim[0], deleted);
    if (rc < 0)
        return rc;
    if (*deleted == max)
        return 0; /* maybe more: the spec and the marker stay until none is left */
    store_job_written(st, array_id);
    for (size_t i = 0; i < sizeof(last) / sizeof(last[0]); i++) {
        rc = run_id(st, last[i], array_id, 0, NULL, "discard array");
        if (rc < 0)
            return rc;
    }
    *done = true;
    return 0;
}

int store_array_discard(struct store *st, uint64_t array_id)
{
    size_t deleted;
    bool done;
    return store_array_discard_step(st, array_id, SIZE_MAX, &deleted, &done);
}

int store_arrays_writing(struct store *st, uint64_t *ids, size_t max, size_t *n)
{
    struct db_stmt *s;
    int rc = store_prepare(st, "SELECT array_id FROM arrays_writing ORDER BY array_id", &s);
    *n = 0;
    if (rc < 0)
        return rc;
    while ((rc = db_step(s)) == DB_ROW) {
        if (*n < max && ids)
            ids[*n] = (uint64_t)db_column_int64(s, 0);
        (*n)++;
    }
    rc = rc == DB_DONE ? 0 : store_fail(st, "list arrays being written");
    db_finalize(s);
    return rc;
}

int store_arrays_rollback(struct store *st, size_t *rolled)
{
    uint64_t ids[64];
    size_t n = 0;
    *rolled = 0;
    int rc = store_begin(st);
    /* a handful at most (one per submission in flight when docketd stopped) */
    do {
        if (rc == 0)
            rc = store_arrays_writing(st, ids, sizeof(ids) / sizeof(ids[0]), &n);
        for (size_t i = 0; rc == 0 && i < n && i < sizeof(ids) / sizeof(ids[0]); i++) {
            rc = store_array_discard(st, ids[i]);
            if (rc == 0)
                (*rolled)++;
        }
    } while (rc == 0 && n > 0);
    if (rc == 0)
        return store_commit(st);
    store_rollback(st);
    return rc;
}

int store_array_tally(struct store *st, uint64_t array_id, struct store_array_tally *out)
{
    struct db_stmt *s;
    memset(out, 0, sizeof(*out));
    /* through the partial index on array_id; a state is stored by its name: ?2 .. ?6 are
       the live ones, ?7 COMPLETED */
    int rc = store_prepare(
        st,
        "SELECT COUNT(*),"
        " COALESCE(SUM(CASE WHEN state IN (?2, ?3, ?4, ?5, ?6) THEN 0 ELSE 1 END), 0),"
        " COALESCE(SUM(CASE WHEN state IN (?2, ?3, ?4, ?5, ?6, ?7) THEN 0 ELSE 1 END), 0),"
        " (SELECT COUNT(*) FROM arrays_writing WHERE array_id = ?1)"
        " FROM jobs WHERE array_id = ?1 AND array_id <> 0",
        &s);
    if (rc < 0)
        return rc;
    db_bind_int64(s, 1, (int64_t)array_id);
    for (int i = 0; i <= SCHED_COMPLETED; i++)
        db_bind_text(s, 2 + i, sched_job_state_name((enum sched_job_state)i));
    rc = db_step(s);
    if (rc == DB_ROW) {
        out->tasks = db_column_int64(s, 0);
        out->ended = db_column_int64(s, 1);
        out->failed = db_column_int64(s, 2);
        out->writing = db_column_int64(s, 3) != 0;
        rc = 0;
    } else {
        rc = store_fail(st, "tally array");
    }
    db_finalize(s);
    return rc;
}
