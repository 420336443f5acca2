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
#include "core/avail.h"
#include "core/containers.h"
#include "core/model.h"
#include "core/changes.h"

#include <stdlib.h>
#include <string.h>

struct step_event {
    int64_t at;
    int gpus, cpus;
    int64_t mem;
};

/* Sort ev[0..k) by time, tmp holding k more. Events at one time become one step, so their
 * order among themselves does not matter. A node's claims were sorted through glibc's qsort
 * each time its profile was rebuilt, an indirect merge sort by a comparison called through
 * a pointer: 8 % of a contended Philly replay. Runs of 8 by insertion, then merged. */
static void events_sort(struct step_event *ev, struct step_event *tmp, int k)
{
    enum { RUN = 8 };
    for (int lo = 0; lo < k; lo += RUN) {
        int hi = lo + RUN < k ? lo + RUN : k;
        for (int i = lo + 1; i < hi; i++) {
            struct step_event e = ev[i];
            int j = i;
            for (; j > lo && ev[j - 1].at > e.at; j--)
                ev[j] = ev[j - 1];
            ev[j] = e;
        }
    }
    struct step_event *src = ev, *dst = tmp;
    for (int width = RUN; width < k; width *= 2) {
        for (int lo = 0; lo < k; lo += 2 * width) {
            int mid = lo + width < k ? lo + width : k, hi = lo + 2 * width < k ? lo + 2 * width : k;
            int a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                dst[o++] = src[b].at < src[a].at ? src[b++] : src[a++];
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
        }
        struct step_event *t = src;
        src = dst;
        dst = t;
    }
    if (src != ev)
        memcpy(ev, src, (size_t)k * sizeof(*ev));
}

void node_profile_touch(struct sched *s, struct node *n)
{
    n->prof_dirty = true;
    node_changed(s, n);
}

void node_claims_touch(struct sched *s, struct node *n)
{
    n->prof_dirty = true;
    node_change_log(s, n); /* counted by claims_will_change() */
}

void node_holders_touch(struct sched *s, struct node *n)
{
    n->rel_dirty = true; /* the release list, and the profile built on it */
    n->prof_dirty = true;
    node_changed(s, n);
}

/* The claims' steps, sorted: a drop at each start, a rise at each end. tmp: as many more. */
static int claim_events(const struct node *n, struct step_event *ev, struct step_event *tmp)
{
    int k = 0;
    for (int i = 0; i < n->nclaims; i++) {
        const struct claim *c = &n->claims[i];
        ev[k++] = (struct step_event){c->start, -c->gpus, -c->cpus, -c->mem_mb};
        if (c->end < NEVER)
            ev[k++] = (struct step_event){c->end, c->gpus, c->cpus, c->mem_mb};
    }
    events_sort(ev, tmp, k);
    return k;
}

/* The release at index i of the node's running totals, as a step. */
static struct step_event release_event(const struct node *n, int i)
{
    struct step_event e = {n->rel[i].at, n->rel[i].gpus, n->rel[i].cpus, n->rel[i].mem};
    if (i > 0) {
        e.gpus -= n->rel[i - 1].gpus;
        e.cpus -= n->rel[i - 1].cpus;
        e.mem -= n->rel[i - 1].mem;
    }
    return e;
}

/* Rebuild the step function: base (free now, before any release or claim) then one step
 * per distinct event time. A cache: const queries may refresh it. */
static const struct node *profile(const struct sched *s, const struct node *cn)
{
    struct node *n = (struct node *)(uintptr_t)cn;
    if (!n->prof_dirty)
        return n;
    n = (struct node *)(uintptr_t)node_releases(s, n); /* sorted, cached per job change */
    if (n->rel_dirty) {
        n->nprof = -1; /* out of memory: callers fall back to the exact walk */
        return n;
    }
    size_t need = (size_t)n->nrel + 2 * (size_t)n->nclaims + 1;
    struct step_event *ev = malloc(2 * need * sizeof(*ev)); /* and the sort's scratch */
    size_t cap = (size_t)n->prof_cap;
    if (!ev || grow((void **)&n->prof, &cap, need, sizeof(*n->prof)) < 0) {
        free(ev);
        n->nprof = -1; /* stays dirty; callers fall back to the exact walk */
        return n;
    }
    n->prof_cap = (int)cap;
    int k = claim_events(n, ev, ev + need);
    struct profile_step cur = {INT64_MIN, n->gpus - n->gpus_used, n->cpus - n->cpus_used,
                               n->mem_mb - n->mem_used};
    int np = 0;
    n->prof[np++] = cur;
    for (int r = 0, c = 0; r < n->nrel || c < k;) {
        struct step_event e =
            c >= k || (r < n->nrel && n->rel[r].at <= ev[c].at) ? release_event(n, r++) : ev[c++];
        cur.at = e.at;
        cur.gpus += e.gpus;
        cur.cpus += e.cpus;
        cur.mem += e.mem;
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

int64_t avail_hold(const struct sched *s, const struct node *n, int64_t from, int gpus, int cpus,
                   int64_t mem)
{
    n = profile(s, n);
    if (n->nprof < 0)
        return -1;
    int i = step_at(n, from);
    if (!step_covers(&n->prof[i], gpus, cpus, mem))
        return from;
    for (i++; i < n->nprof; i++)
        if (!step_covers(&n->prof[i], gpus, cpus, mem))
            return n->prof[i].at;
    return NEVER;
}

/* A request refused at `from` because the node holds it only until `hold` (avail_hold's
 * answer, short of the job's end) is refused at every t in [from, answer) as well while the
 * profile stays: before `hold` the walk from t meets the same first shortfall at `hold`,
 * and the end only moves later; when the room falls short at `from` itself, it does so
 * until the next step. */
int64_t avail_refused_until(const struct sched *s, const struct node *n, int64_t from, int64_t hold)
{
    if (hold > from)
        return hold;
    n = profile(s, n);
    if (n->nprof < 0)
        return from;
    int i = step_at(n, from);
    return i + 1 < n->nprof ? n->prof[i + 1].at : NEVER;
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
