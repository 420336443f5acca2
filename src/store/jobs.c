/*
 * jobs.c - the jobs in the database (store.h "Jobs", "Job events", "Runs"): a job's row and its
 * spec, the filtered job list, the job's events, and its runs (one row per start, ended with
 * its state and cause). Their statements are prepared once (store.c), but the list's, built
 * from the filters present (the last few kept by their SQL on SQLite).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sched.h"
#include "store/store_int.h"
#include "util/dbuf.h"

void store_job_release(struct store_job *j)
{
    free(j->spec);
    free(j->alloc);
    free(j->exit);
    free(j->usage);
    j->spec = j->alloc = j->exit = j->usage = NULL;
}

/* Binds ?1..?38; the UPDATE uses fewer (binding one a statement lacks does nothing). */
static void bind_job(struct db_stmt *s, const struct store_job *j)
{
    db_bind_int64(s, 1, (int64_t)j->id);
    db_bind_int64(s, 2, (int64_t)j->array_id);
    db_bind_int64(s, 3, j->array_index);
    store_bind_text(s, 4, j->name);
    store_bind_text(s, 5, j->project);
    store_bind_text(s, 6, j->user);
    store_bind_text(s, 7, j->tier);
    store_bind_text(s, 8, j->class_name);
    store_bind_text(s, 9, sched_job_state_name((enum sched_job_state)j->state));
    store_bind_text(s, 10, j->stop_cause);
    db_bind_int64(s, 11, j->submit_ms);
    db_bind_int64(s, 12, j->start_ms);
    db_bind_int64(s, 13, j->end_ms);
    db_bind_int64(s, 14, j->preempt_count);
    db_bind_int64(s, 15, (int64_t)j->preemptor);
    store_bind_text(s, 16, j->nodes);
    store_bind_text(s, 17, j->spec_id ? "" : j->spec ? j->spec : "{}");
    store_bind_text(s, 18, j->alloc);
    store_bind_text(s, 19, j->exit);
    store_bind_text(s, 20, j->usage);
    db_bind_int64(s, 21, j->has_core);
    db_bind_int64(s, 22, j->gpus);
    db_bind_int64(s, 23, j->cpus);
    db_bind_int64(s, 24, j->nnodes);
    db_bind_int64(s, 25, j->signal);
    db_bind_int64(s, 26, j->retries);
    db_bind_int64(s, 27, j->array_limit);
    db_bind_int64(s, 28, j->flags);
    db_bind_int64(s, 29, j->mem_mb);
    db_bind_int64(s, 30, j->time_limit_ms);
    db_bind_int64(s, 31, j->begin_ms);
    db_bind_int64(s, 32, j->grace_ms);
    store_bind_text(s, 33, j->gpu_type);
    store_bind_text(s, 34, j->deps);
    store_bind_text(s, 35, j->selectors);
    db_bind_int64(s, 36, (int64_t)j->spec_id);
    store_bind_text(s, 37, j->template_ref);
    store_bind_text(s, 38, j->image);
}

/* Fill j from the row; -EIO with st's message when the row holds a state this docketd
 * does not know (j is then released). */
static int read_job(struct store *st, struct db_stmt *s, struct store_job *j)
{
    memset(j, 0, sizeof(*j));
    j->id = (uint64_t)db_column_int64(s, 0);
    j->array_id = (uint64_t)db_column_int64(s, 1);
    j->array_index = db_column_int(s, 2);
    store_col_copy(s, 3, j->name, sizeof(j->name));
    store_col_copy(s, 4, j->project, sizeof(j->project));
    store_col_copy(s, 5, j->user, sizeof(j->user));
    store_col_copy(s, 6, j->tier, sizeof(j->tier));
    store_col_copy(s, 7, j->class_name, sizeof(j->class_name));
    const char *state = db_column_text(s, 8);
    j->state = sched_job_state_parse(state ? (const char *)state : "");
    store_col_copy(s, 9, j->stop_cause, sizeof(j->stop_cause));
    j->submit_ms = db_column_int64(s, 10);
    j->start_ms = db_column_int64(s, 11);
    j->end_ms = db_column_int64(s, 12);
    j->preempt_count = db_column_int(s, 13);
    j->preemptor = (uint64_t)db_column_int64(s, 14);
    store_col_copy(s, 15, j->nodes, sizeof(j->nodes));
    j->spec = store_col_dup(s, 16);
    j->alloc = store_col_dup(s, 17);
    j->exit = store_col_dup(s, 18);
    j->usage = store_col_dup(s, 19);
    j->has_core = db_column_int(s, 20) != 0;
    j->gpus = db_column_int(s, 21);
    j->cpus = db_column_int(s, 22);
    j->nnodes = db_column_int(s, 23);
    j->signal = db_column_int(s, 24);
    j->retries = db_column_int(s, 25);
    j->array_limit = db_column_int(s, 26);
    j->flags = db_column_int(s, 27);
    j->mem_mb = db_column_int64(s, 28);
    j->time_limit_ms = db_column_int64(s, 29);
    j->begin_ms = db_column_int64(s, 30);
    j->grace_ms = db_column_int64(s, 31);
    store_col_copy(s, 32, j->gpu_type, sizeof(j->gpu_type));
    store_col_copy(s, 33, j->deps, sizeof(j->deps));
    store_col_copy(s, 34, j->selectors, sizeof(j->selectors));
    j->spec_id = (uint64_t)db_column_int64(s, 35);
    store_col_copy(s, 36, j->template_ref, sizeof(j->template_ref));
    store_col_copy(s, 37, j->image, sizeof(j->image));
    if (j->state < 0) {
        char m[96];
        snprintf(m, sizeof(m), "job %llu: unknown state '%.32s'", (unsigned long long)j->id,
                 state ? (const char *)state : "");
        store_set_errmsg(st, m);
        store_job_release(j);
        return -EIO;
    }
    return 0;
}

static int check_state(struct store *st, const struct store_job *j)
{
    if (j->state >= 0 && j->state < SCHED_JOB_STATE_COUNT)
        return 0;
    char m[96];
    snprintf(m, sizeof(m), "job %llu: no such state %d", (unsigned long long)j->id, j->state);
    store_set_errmsg(st, m);
    return -EINVAL;
}

int store_job_insert(struct store *st, const struct store_job *j)
{
    if (check_state(st, j) < 0)
        return -EINVAL;
    struct db_stmt *s = store_stmt(st, S_JOB_INSERT);
    bind_job(s, j);
    store_job_written(st, j->id);
    return store_step_done(st, s, "insert job");
}

int store_spec_put(struct store *st, uint64_t id, const char *spec, const char *lean)
{
    struct db_stmt *s = store_stmt(st, S_SPEC_PUT);
    db_bind_int64(s, 1, (int64_t)id);
    store_bind_text(s, 2, spec);
    store_bind_text(s, 3, lean);
    store_job_written(st, id);
    return store_step_done(st, s, "put spec");
}

int store_job_update(struct store *st, const struct store_job *j)
{
    if (check_state(st, j) < 0)
        return -EINVAL;
    struct db_stmt *s = store_stmt(st, S_JOB_UPDATE);
    bind_job(s, j);
    store_job_written(st, j->id);
    int rc = store_step_done(st, s, "update job");
    if (rc == 0 && db_changes(store_db(st)) == 0)
        return -ENOENT;
    return rc;
}

int store_job_respec(struct store *st, const struct store_job *j)
{
    if (check_state(st, j) < 0)
        return -EINVAL;
    struct db_stmt *s = store_stmt(st, S_JOB_RESPEC);
    bind_job(s, j);
    store_job_written(st, j->id);
    int rc = store_step_done(st, s, "respec job");
    if (rc == 0 && db_changes(store_db(st)) == 0)
        return -ENOENT;
    return rc;
}

int store_job_get(struct store *st, uint64_t id, struct store_job *out)
{
    struct db_stmt *s = store_stmt(st, S_JOB_GET);
    db_bind_int64(s, 1, (int64_t)id);
    int rc = db_step(s);
    int bad = rc == DB_ROW ? read_job(st, s, out) : 0;
    db_reset(s);
    db_clear_bindings(s);
    if (bad < 0)
        return bad;
    return rc == DB_ROW ? 0 : rc == DB_DONE ? -ENOENT : store_fail(st, "get job");
}

int64_t store_job_count(struct store *st)
{
    struct db_stmt *s = store_stmt(st, S_JOB_COUNT);
    int64_t n = -1;
    if (db_step(s) == DB_ROW)
        n = db_column_int64(s, 0);
    db_reset(s);
    return n;
}

/* The list's filters but the state, each value a bound parameter numbered from 1 in the
 * order store_job_list binds them (the same numbers in every arm of a union). */
static void list_filters(struct dbuf *sql, const struct store_job_filter *f)
{
    int np = 0;
    store_add_text_filter(sql, "project", f->project, &np);
    store_add_text_filter(sql, "user_name", f->user, &np);
    store_add_text_filter(sql, "tier", f->tier, &np);
    store_add_text_filter(sql, "class", f->class_name, &np);
    store_add_text_filter(sql, "name", f->name, &np);
    if (f->node)
        /* strpos, not LIKE: a node name is matched exactly, '%' and '_' are no wildcards */
        dbuf_printf(sql, " AND strpos(nodes, ',' || ?%d || ',') > 0", ++np);
    if (f->template_ref) { /* NAME alone: each of its versions ("NAME@..."), no wildcards */
        ++np;
        dbuf_printf(sql,
                    " AND (template_ref = ?%d OR substr(template_ref, 1, length(?%d) + 1) = ?%d"
                    " || '@')",
                    np, np, np);
    }
    if (f->array_id)
        dbuf_printf(sql, " AND array_id = ?%d", ++np);
    if (f->since_ms)
        dbuf_printf(sql, " AND submit_ms >= ?%d", ++np);
    /* an array still being written is not there yet (docs/controller.md "Big submissions") */
    dbuf_puts(sql,
              " AND NOT (array_id <> 0 AND array_id IN (SELECT array_id FROM arrays_writing))");
    if (f->after)
        dbuf_printf(sql, " AND id %s ?%d", f->desc ? "<" : ">", ++np);
}

/* The list query is built from the filters present; every value is a bound parameter.
 * Several states are one arm each, state = 'X', merged by id: each arm walks the index
 * (state, id) in order and the merge stops at the limit. `state IN (...)` instead had
 * the database read every matching row past the cursor and sort them to return the first
 * few: each slice of a long list cost the whole rest of it (issue 40). */
/* A list's statement: the one kept for the same SQL, reset (SQLite), else a new one;
 * *kept says which (list_stmt_done then resets or finalizes it). A list's slices differ
 * only in their cursor, bound, so a list prepares three at most: the first slice's (no
 * cursor), the others' and the last's (fewer rows to go). */
static int list_stmt(struct store *st, const char *sql, struct db_stmt **s,
                     struct store_list_stmt **kept)
{
    *kept = NULL;
    if (db_engine(st->db) == DB_POSTGRES) /* (each of its statements is its own round trip) */
        return store_prepare(st, sql, s);
    for (int i = 0; i < STORE_LIST_NSTMT; i++)
        if (st->lstmt[i].sql && !st->lstmt[i].busy && strcmp(st->lstmt[i].sql, sql) == 0) {
            *kept = &st->lstmt[i];
            (*kept)->busy = true;
            *s = (*kept)->s;
            return 0;
        }
    if (store_prepare(st, sql, s) < 0)
        return -EIO;
    struct store_list_stmt *e = &st->lstmt[st->lstmt_next];
    char *copy = e->busy ? NULL : strdup(sql);
    if (!copy)
        return 0; /* (used once, not kept) */
    st->lstmt_next = (st->lstmt_next + 1) % STORE_LIST_NSTMT;
    db_finalize(e->s);
    free(e->sql);
    *e = (struct store_list_stmt){copy, *s, true};
    *kept = e;
    return 0;
}

static void list_stmt_done(struct db_stmt *s, struct store_list_stmt *kept)
{
    if (kept) {
        db_reset(s);
        db_clear_bindings(s);
        kept->busy = false;
    } else {
        db_finalize(s);
    }
}

int store_job_list(struct store *st, const struct store_job_filter *f, store_job_cb cb, void *arg)
{
    struct dbuf sql, where;
    int np = 0, rc = 0;
    dbuf_init(&sql, 65536);
    dbuf_init(&where, 4096);
    bool pg = db_engine(store_db(st)) == DB_POSTGRES;
    const char *select = f->skip_spec    ? "SELECT " JOB_COLS_NO_SPEC " FROM jobs WHERE "
                         : f->lean && pg ? "SELECT " JOB_COLS_LEAN_PG " FROM jobs WHERE "
                         : f->lean       ? "SELECT " JOB_COLS_LEAN " FROM jobs WHERE "
                                         : "SELECT " JOB_COLS " FROM jobs WHERE ";
    list_filters(&where, f);
    int arms = 0;
    for (int i = 0; i < SCHED_JOB_STATE_COUNT; i++) /* the core's names: nothing to escape */
        if (f->state_mask & (1u << i))
            dbuf_printf(&sql, "%s%sstate = '%s'%s", arms++ ? " UNION ALL " : "", select,
                        sched_job_state_name((enum sched_job_state)i), where.data);
    if (arms == 0)
        dbuf_printf(&sql, "%s1 = 1%s", select, where.data);
    dbuf_printf(&sql, " ORDER BY id %s LIMIT %d", f->desc ? "DESC" : "ASC",
                f->limit > 0 ? f->limit : 100);
    if (where.failed)
        sql.failed = true;
    dbuf_release(&where);
    struct db_stmt *s = NULL;
    struct store_list_stmt *kept = NULL;
    if (sql.failed || list_stmt(st, sql.data, &s, &kept) < 0) {
        dbuf_release(&sql);
        return sql.failed ? -ENOMEM : -EIO;
    }
    dbuf_release(&sql);
    np = 0;
    const char *texts[] = {f->project, f->user, f->tier,        f->class_name,
                           f->name,    f->node, f->template_ref};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        if (texts[i])
            store_bind_text(s, ++np, texts[i]);
    if (f->array_id)
        db_bind_int64(s, ++np, (int64_t)f->array_id);
    if (f->since_ms)
        db_bind_int64(s, ++np, f->since_ms);
    if (f->after)
        db_bind_int64(s, ++np, (int64_t)f->after);
    int step;
    while ((step = db_step(s)) == DB_ROW) {
        struct store_job j;
        if ((rc = read_job(st, s, &j)) < 0)
            break;
        rc = cb(arg, &j);
        store_job_release(&j);
        if (rc)
            break;
    }
    if (!rc && step != DB_DONE && step != DB_ROW)
        rc = store_fail(st, "list jobs");
    list_stmt_done(s, kept);
    return rc;
}

/* ---- Events */

int store_event_add(struct store *st, const struct store_event *e)
{
    struct db_stmt *s = store_stmt(st, S_EVENT_ADD);
    db_bind_int64(s, 1, (int64_t)e->job);
    db_bind_int64(s, 2, e->time_ms);
    store_bind_text(s, 3, e->type ? e->type : "");
    store_bind_text(s, 4, e->from ? e->from : "");
    store_bind_text(s, 5, e->to ? e->to : "");
    store_bind_text(s, 6, e->node ? e->node : "");
    store_bind_text(s, 7, e->reason ? e->reason : "");
    store_bind_text(s, 8, e->detail ? e->detail : "");
    return store_step_done(st, s, "add event");
}

int store_event_list(struct store *st, uint64_t job, int64_t after, int limit, store_event_cb cb,
                     void *arg)
{
    struct db_stmt *s = store_stmt(st, S_EVENT_LIST);
    db_bind_int64(s, 1, (int64_t)job);
    db_bind_int64(s, 2, after);
    db_bind_int64(s, 3, limit > 0 ? limit : INT64_MAX); /* LIMIT -1 is SQLite's only */
    int step, rc = 0;
    while ((step = db_step(s)) == DB_ROW) {
        struct store_event e = {
            .id = db_column_int64(s, 8),
            .job = (uint64_t)db_column_int64(s, 0),
            .time_ms = db_column_int64(s, 1),
            .type = (const char *)db_column_text(s, 2),
            .from = (const char *)db_column_text(s, 3),
            .to = (const char *)db_column_text(s, 4),
            .node = (const char *)db_column_text(s, 5),
            .reason = (const char *)db_column_text(s, 6),
            .detail = (const char *)db_column_text(s, 7),
        };
        if ((rc = cb(arg, &e)))
            break;
    }
    if (!rc && step != DB_DONE)
        rc = store_fail(st, "list events");
    db_reset(s);
    db_clear_bindings(s);
    return rc;
}

/* ---- Runs */

int store_run_add(struct store *st, const struct store_run *r)
{
    struct db_stmt *s = store_stmt(st, S_RUN_ADD);
    db_bind_int64(s, 1, (int64_t)r->job);
    db_bind_int64(s, 2, r->run);
    store_bind_text(s, 3, r->nodes);
    db_bind_int64(s, 4, r->start_ms);
    db_bind_int64(s, 5, r->lease_ms);
    return store_step_done(st, s, "add run");
}

int store_run_get(struct store *st, uint64_t job, int run, struct store_run *out)
{
    struct db_stmt *s = store_stmt(st, S_RUN_GET);
    db_bind_int64(s, 1, (int64_t)job);
    db_bind_int64(s, 2, run);
    int rc = db_step(s);
    if (rc == DB_ROW) {
        memset(out, 0, sizeof(*out));
        out->job = (uint64_t)db_column_int64(s, 0);
        out->run = db_column_int(s, 1);
        store_col_copy(s, 2, out->nodes, sizeof(out->nodes));
        out->start_ms = db_column_int64(s, 3);
        out->final_mask = db_column_int(s, 4);
        out->lease_ms = db_column_int64(s, 5);
    }
    db_reset(s);
    db_clear_bindings(s);
    return rc == DB_ROW ? 0 : rc == DB_DONE ? -ENOENT : store_fail(st, "get run");
}

int store_run_last(struct store *st, uint64_t job)
{
    struct db_stmt *s = store_stmt(st, S_RUN_LAST);
    db_bind_int64(s, 1, (int64_t)job);
    int rc = db_step(s), n = rc == DB_ROW ? db_column_int(s, 0) : 0;
    db_reset(s);
    db_clear_bindings(s);
    return rc == DB_ROW ? n : store_fail(st, "last run");
}

int store_run_started(struct store *st, uint64_t job, int64_t start_ms)
{
    struct db_stmt *s = store_stmt(st, S_RUN_STARTED);
    db_bind_int64(s, 1, (int64_t)job);
    db_bind_int64(s, 2, start_ms);
    return store_step_done(st, s, "start run");
}

int store_run_end(struct store *st, uint64_t job, int64_t end_ms, const char *state,
                  const char *cause)
{
    struct db_stmt *s = store_stmt(st, S_RUN_END);
    db_bind_int64(s, 1, (int64_t)job);
    db_bind_int64(s, 2, end_ms);
    db_bind_text(s, 3, state ? state : "");
    db_bind_text(s, 4, cause ? cause : "");
    return store_step_done(st, s, "end run");
}

int store_run_set_final(struct store *st, uint64_t job, int run, int mask)
{
    struct db_stmt *s = store_stmt(st, S_RUN_FINAL);
    db_bind_int64(s, 1, (int64_t)job);
    db_bind_int64(s, 2, run);
    db_bind_int64(s, 3, mask);
    return store_step_done(st, s, "set run final");
}
