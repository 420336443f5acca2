/*
 * deps.c - dependencies the core cannot settle alone (deps.h). The core holds live jobs
 * only: a dependency on a job or an array that ended is settled here from the database,
 * how its tasks ended. A dependency on a whole array (Slurm's afterok:ARRAY_ID) is one
 * dependency in the core, which counts the array's tasks; after a reload the core is
 * told first how many the array has and how many ended before (sched_array_declare).
 */
#include <errno.h>
#include <string.h>

#include "controller/deps.h"
#include "controller/loop.h"
#include "store/store.h"
#include "util/log.h"

enum sched_dep_kind ctl_dep_kind(const char *t)
{
    return strcmp(t, "afterany") == 0     ? SCHED_DEP_AFTERANY
           : strcmp(t, "afternotok") == 0 ? SCHED_DEP_AFTERNOTOK
           : strcmp(t, "after") == 0      ? SCHED_DEP_AFTER
                                          : SCHED_DEP_AFTEROK;
}

static int tally(struct ctl *c, uint64_t array_id, struct store_array_tally *t)
{
    if (store_array_tally(c->store, array_id, t) == 0)
        return 0;
    log_error("store_failed", "what=array_tally array=%llu error=\"%s\"",
              (unsigned long long)array_id, store_errmsg(c->store));
    return -1;
}

static int declare(struct ctl *c, uint64_t array_id, const struct store_array_tally *t)
{
    struct sched_error se;
    memset(&se, 0, sizeof(se));
    if (t->tasks > INT32_MAX || sched_array_declare(c->sched, array_id, (int)t->tasks,
                                                    (int)t->ended, (int)t->failed, &se) < 0) {
        log_error("array_declare_failed", "array=%llu error=\"%s\"", (unsigned long long)array_id,
                  se.message);
        return -1;
    }
    return 0;
}

int ctl_array_declare(struct ctl *c, uint64_t array_id)
{
    struct store_array_tally t;
    if (sched_array_known(c->sched, array_id))
        return 0;
    if (tally(c, array_id, &t) < 0)
        return -1;
    return t.ended < t.tasks ? declare(c, array_id, &t) : 0;
}

enum ctl_array_dep ctl_array_dep_state(struct ctl *c, uint64_t array_id, enum sched_dep_kind kind)
{
    struct store_array_tally t = {0};
    if (sched_array_known(c->sched, array_id))
        return CTL_ARRAY_LIVE;
    if (c->ended_array_id == array_id) { /* read already: every task of a big array asks */
        t.tasks = t.ended = c->ended_array_tasks;
        t.failed = c->ended_array_failed;
    } else if (tally(c, array_id, &t) < 0) {
        return CTL_ARRAY_ERROR;
    }
    if (t.tasks == 0)
        return CTL_ARRAY_NONE;
    if (t.writing)
        return CTL_ARRAY_WRITING;
    if (t.ended < t.tasks) {
        /* the core let its last tasks go, and the cycle that writes how has not run yet:
           run it, then read again (a reload declared its arrays before: ctl_array_declare) */
        ctl_cycle_now(c);
        if (tally(c, array_id, &t) < 0)
            return CTL_ARRAY_ERROR;
        if (t.ended < t.tasks)
            return CTL_ARRAY_LIVE; /* the core refuses it, naming the array */
    }
    c->ended_array_id = array_id;
    c->ended_array_tasks = t.tasks;
    c->ended_array_failed = t.failed;
    bool met = kind == SCHED_DEP_AFTEROK      ? t.failed == 0
               : kind == SCHED_DEP_AFTERNOTOK ? t.failed > 0
                                              : true;
    return met ? CTL_ARRAY_MET : CTL_ARRAY_NEVER;
}

/* A dependency of sp on what the core does not hold: met, never, or still open. */
static enum ctl_array_dep settle_one(struct ctl *c, const struct sched_dep *d)
{
    if (d->array) {
        enum ctl_array_dep v = ctl_array_dep_state(c, d->job_id, d->kind);
        return v == CTL_ARRAY_MET || v == CTL_ARRAY_NEVER ? v : CTL_ARRAY_LIVE;
    }
    struct sched_job_view v;
    struct store_job row;
    if (sched_job_get(c->sched, d->job_id, &v) == 0 || store_job_get(c->store, d->job_id, &row) < 0)
        return CTL_ARRAY_LIVE;
    bool ended = sched_job_state_terminal((enum sched_job_state)row.state);
    bool ok = row.state == SCHED_COMPLETED;
    store_job_release(&row);
    if (!ended)
        return CTL_ARRAY_LIVE; /* a reload: it comes back */
    bool met = d->kind == SCHED_DEP_AFTERANY || d->kind == SCHED_DEP_AFTER ||
               (d->kind == SCHED_DEP_AFTEROK) == ok;
    return met ? CTL_ARRAY_MET : CTL_ARRAY_NEVER;
}

void ctl_deps_settle(struct ctl *c, struct sched_job_spec *sp)
{
    int out = 0;
    for (int i = 0; i < sp->ndeps; i++) {
        struct sched_dep d = sp->deps[i];
        enum ctl_array_dep v = settle_one(c, &d);
        if (v == CTL_ARRAY_MET && sp->deps_any) { /* Slurm's '?': one met is all it takes */
            sp->ndeps = 0;
            sp->deps_any = false;
            return;
        }
        if (v == CTL_ARRAY_MET)
            continue; /* the core would not find it live: it is met (a reload) */
        d.never = v == CTL_ARRAY_NEVER;
        sp->deps[out++] = d;
    }
    sp->ndeps = out;
}
