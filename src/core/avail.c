/*
 * avail.c - each node's availability profile: what it will have free over time.
 *
 * Free capacity is a step function of time: it rises when a running job is expected to
 * release its share (time limit plus grace, or its kill time once stopping) and when a
 * claim ends, and drops when a claim starts. Reservations ask of many nodes "when could
 * this request hold for this long?" and backfill asks "does this request hold from now to
 * then?"; walking claims pairwise for each question made both quadratic in the claims of a
 * node (the profile of docket-sim on a contended trace was 70 % there). The profile is the
 * step function itself, sorted, built once per change of the node's jobs or claims and
 * answered in one pass.
 *
 * It counts every claim. A question asked for a job whose own reservation claims the node
 * must not count that claim: callers take the slower exact path then (avail_own_claim).
 */
#include "core/internal.h"

#include <stdlib.h>

struct step_event {
    int64_t at;
    int gpus, cpus;
    int64_t mem;
};

static int cmp_event(const void *a, const void *b)
{
    const struct step_event *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

void node_profile_touch(struct node *n)
{
    n->prof_dirty = true;
}

static const struct sched_alloc *alloc_on(const struct job *j, uint32_t node)
{
    for (int i = 0; i < j->nallocs; i++)
        if (j->allocs[i].node == node)
            return &j->allocs[i];
    return NULL;
}

static int collect_events(const struct sched *s, const struct node *n, struct step_event *ev)
{
    uint32_t idx = (uint32_t)(n - s->nodes);
    int k = 0;
    for (uint32_t i = 0; i < n->jobs.n; i++) {
        const struct job *j = &s->jobs[n->jobs.v[i]];
        const struct sched_alloc *al = alloc_on(j, idx);
        int64_t e = job_expected_end(s, j);
        if (al && e < NEVER)
            ev[k++] = (struct step_event){e, al->gpus, al->cpus, al->mem_mb};
    }
    for (int i = 0; i < n->nclaims; i++) {
        const struct claim *c = &n->claims[i];
        ev[k++] = (struct step_event){c->start, -c->gpus, -c->cpus, -c->mem_mb};
        if (c->end < NEVER)
            ev[k++] = (struct step_event){c->end, c->gpus, c->cpus, c->mem_mb};
    }
    return k;
}

/* Rebuild the step function: base (free now, before any release or claim) then one step
 * per distinct event time. A cache: const queries may refresh it. */
static const struct node *profile(const struct sched *s, const struct node *cn)
{
    struct node *n = (struct node *)(uintptr_t)cn;
    if (!n->prof_dirty)
        return n;
    size_t need = n->jobs.n + 2 * (size_t)n->nclaims + 1;
    struct step_event *ev = malloc(need * sizeof(*ev));
    size_t cap = (size_t)n->prof_cap;
    if (!ev || grow((void **)&n->prof, &cap, need, sizeof(*n->prof)) < 0) {
        free(ev);
        n->nprof = -1; /* stays dirty; callers fall back to the exact walk */
        return n;
    }
    n->prof_cap = (int)cap;
    int k = collect_events(s, n, ev);
    qsort(ev, k, sizeof(*ev), cmp_event);
    struct profile_step cur = {INT64_MIN, n->gpus - n->gpus_used, n->cpus - n->cpus_used,
                               n->mem_mb - n->mem_used};
    int np = 0;
    n->prof[np++] = cur;
    for (int i = 0; i < k; i++) {
        cur.at = ev[i].at;
        cur.gpus += ev[i].gpus;
        cur.cpus += ev[i].cpus;
        cur.mem += ev[i].mem;
        if (n->prof[np - 1].at == cur.at)
            n->prof[np - 1] = cur; /* several events at one time: one step */
        else
            n->prof[np++] = cur;
    }
    n->nprof = np;
    n->prof_dirty = false;
    free(ev);
    return n;
}

bool avail_own_claim(const struct node *n, uint32_t own)
{
    if (own == NONE32)
        return false;
    for (int i = 0; i < n->nclaims; i++)
        if (n->claims[i].res == own)
            return true;
    return false;
}

static bool step_covers(const struct profile_step *p, int gpus, int cpus, int64_t mem)
{
    return p->gpus >= gpus && p->cpus >= cpus && p->mem >= mem;
}

/* Index of the step in force at time t (the last one at or before t). */
static int step_at(const struct node *n, int64_t t)
{
    int lo = 0, hi = n->nprof;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (n->prof[mid].at <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 ? lo - 1 : 0;
}

int avail_window(const struct sched *s, const struct node *n, int64_t from, int64_t to, int gpus,
                 int cpus, int64_t mem)
{
    n = profile(s, n);
    if (n->nprof < 0)
        return -1;
    int i = step_at(n, from);
    if (!step_covers(&n->prof[i], gpus, cpus, mem))
        return 0;
    for (i++; i < n->nprof && n->prof[i].at < to; i++)
        if (!step_covers(&n->prof[i], gpus, cpus, mem))
            return 0;
    return 1;
}

int64_t avail_earliest(const struct sched *s, const struct node *n, const struct shape *sh,
                       int64_t now, int64_t dur)
{
    n = profile(s, n);
    if (n->nprof < 0)
        return -2;
    int64_t run_start = -1; /* start of the current stretch that holds the request */
    for (int i = step_at(n, now); i < n->nprof; i++) {
        const struct profile_step *p = &n->prof[i];
        int64_t t = p->at > now ? p->at : now;
        if (!step_covers(p, sh->gpus, sh->cpus, sh->mem_mb)) {
            run_start = -1;
            continue;
        }
        if (run_start < 0)
            run_start = t;
        int64_t next = i + 1 < n->nprof ? n->prof[i + 1].at : NEVER;
        if (next == NEVER || next - run_start >= dur)
            return run_start;
    }
    return NEVER;
}

/* The cached profile against a fresh one (sched_check). */
bool avail_profile_fresh(const struct sched *s, const struct node *cn)
{
    struct node *n = (struct node *)(uintptr_t)cn;
    if (n->prof_dirty || n->nprof < 0)
        return true; /* nothing cached to be stale */
    struct profile_step *old = n->prof;
    int nold = n->nprof, oldcap = n->prof_cap;
    n->prof = NULL;
    n->prof_cap = 0;
    n->prof_dirty = true;
    (void)profile(s, n);
    bool same = n->nprof == nold;
    for (int i = 0; same && i < nold; i++)
        same = old[i].at == n->prof[i].at && old[i].gpus == n->prof[i].gpus &&
               old[i].cpus == n->prof[i].cpus && old[i].mem == n->prof[i].mem;
    free(n->prof);
    n->prof = old;
    n->nprof = nold;
    n->prof_cap = oldcap;
    n->prof_dirty = false;
    return same;
}
