/*
 * reserve.c - reservations and the backfill rule (docs/scheduling.md §6-§7).
 *
 * A reservation promises a blocked job a set of nodes from a start time, computed from
 * the running jobs' time limits. It is written on each node as a claim. A job may start
 * now on a node only if, at the start of every claim it would overlap, what stays free
 * still covers the claim: that is "backfill never delays a reservation".
 *
 * Reservations persist across cycles. A stale one (computed before some job ended early)
 * is still safe, only late; they are recomputed at least every reservation_refresh_ms.
 * Preempting and starvation reservations are sticky: no other job takes their room.
 */
#include "core/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool job_outranks(const struct sched *s, const struct job *a, const struct job *b)
{
    (void)s;
    if (a->key1 != b->key1)
        return a->key1 > b->key1;
    if (a->submit_ms != b->submit_ms)
        return a->submit_ms < b->submit_ms;
    return a->id < b->id;
}

static const struct sched_alloc *alloc_on(const struct job *j, uint32_t node)
{
    for (int i = 0; i < j->nallocs; i++)
        if (j->allocs[i].node == node)
            return &j->allocs[i];
    return NULL;
}

static int cmp_release(const void *a, const void *b)
{
    const struct release *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

/* The node's releases in time order, each entry holding the running total released by
 * then. A cache: queries that are const for the model may refresh it. */
const struct node *node_releases(const struct sched *s, const struct node *cn)
{
    struct node *n = (struct node *)(uintptr_t)cn;
    if (!n->rel_dirty)
        return n;
    size_t cap = (size_t)n->rel_cap;
    if (grow((void **)&n->rel, &cap, n->jobs.n + 1, sizeof(*n->rel)) < 0) {
        n->nrel = 0;
        return n; /* stays dirty: retried next time; meanwhile nothing is released */
    }
    n->rel_cap = (int)cap;
    uint32_t idx = (uint32_t)(n - s->nodes);
    int nr = 0;
    for (uint32_t i = 0; i < n->jobs.n; i++) {
        const struct job *j = &s->jobs[n->jobs.v[i]];
        const struct sched_alloc *al = alloc_on(j, idx);
        int64_t e = job_expected_end(s, j);
        if (al && e < NEVER)
            n->rel[nr++] = (struct release){e, al->gpus, al->cpus, al->mem_mb};
    }
    qsort(n->rel, nr, sizeof(*n->rel), cmp_release);
    for (int i = 1; i < nr; i++) {
        n->rel[i].gpus += n->rel[i - 1].gpus;
        n->rel[i].cpus += n->rel[i - 1].cpus;
        n->rel[i].mem += n->rel[i - 1].mem;
    }
    n->nrel = nr;
    n->rel_dirty = false;
    return n;
}

/* What node `n` will have free at time t: free now, plus what its jobs release by t
 * (their expected ends), minus the claims active then except reservation `own`. */
/* Must a job honour this reservation? Sticky ones (preempting, starving) bind everyone;
 * others bind the jobs they outrank. `j` NULL: every claim counts. */
bool claim_binds(const struct sched *s, uint32_t res, const struct job *j)
{
    const struct reservation *r = &s->res[res];
    return !j || r->preempting || r->starving || !job_outranks(s, j, &s->jobs[r->slot]);
}

struct avail node_avail_for(const struct sched *s, const struct node *n, int64_t t, uint32_t own,
                            const struct job *j)
{
    struct avail a = {n->gpus - n->gpus_used, n->cpus - n->cpus_used, n->mem_mb - n->mem_used};
    n = node_releases(s, n);
    int lo = 0, hi = n->nrel; /* first release after t */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (n->rel[mid].at <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0) {
        a.gpus += n->rel[lo - 1].gpus;
        a.cpus += n->rel[lo - 1].cpus;
        a.mem += n->rel[lo - 1].mem;
    }
    for (int i = 0; i < n->nclaims; i++) {
        const struct claim *c = &n->claims[i];
        if (c->res == own || c->start > t || c->end <= t || !claim_binds(s, c->res, j))
            continue;
        a.gpus -= c->gpus;
        a.cpus -= c->cpus;
        a.mem -= c->mem_mb;
    }
    return a;
}

static bool covers(struct avail a, int gpus, int cpus, int64_t mem)
{
    return a.gpus >= gpus && a.cpus >= cpus && a.mem >= mem;
}

struct avail node_avail_at(const struct sched *s, const struct node *n, int64_t t, uint32_t own)
{
    return node_avail_for(s, n, t, own, NULL);
}

/* Does the node hold jobs that were due to release their share by now but still hold it:
 * killed jobs that have not exited yet, jobs past their limit and grace? */
static bool has_overdue(const struct sched *s, const struct node *n, int64_t now)
{
    n = node_releases(s, n);
    return n->nrel > 0 && n->rel[0].at <= now;
}

/* Did the claim count on the room of x, a job told to go that has not gone yet? It did
 * when x was already told to stop when the claim was made (its release was known), or when
 * x's own limit ends by the claim's start. */
static bool claim_counted(const struct sched *s, const struct claim *c, const struct job *x)
{
    const struct reservation *r = &s->res[c->res];
    int64_t natural_end = x->limit_ms > 0 ? x->start_ms + x->limit_ms + x->grace_ms : NEVER;
    return x->stop_ms <= r->made_ms || natural_end <= c->start;
}

/* The room an overdue job still holds counts for the claims active at t only when every
 * one of them counted on it. A claim made before the job was told to go (a gang killed by
 * a node failure, a cancel) did not: a job starting now on the strength of that release
 * would leave the claim's owner waiting for a job that was never its to wait for. */
static struct avail overdue_not_counted(const struct sched *s, const struct node *n, int64_t t,
                                        int64_t now, uint32_t own)
{
    struct avail a = {0, 0, 0};
    uint32_t idx = (uint32_t)(n - s->nodes);
    for (uint32_t k = 0; k < n->jobs.n; k++) {
        const struct job *x = &s->jobs[n->jobs.v[k]];
        if (job_expected_end(s, x) > now)
            continue;
        bool counted = true;
        for (int i = 0; i < n->nclaims && counted; i++) {
            const struct claim *c = &n->claims[i];
            if (c->res != own && c->start <= t && c->end > t)
                counted = claim_counted(s, c, x);
        }
        const struct sched_alloc *al = counted ? NULL : alloc_on(x, idx);
        if (al) {
            a.gpus += al->gpus;
            a.cpus += al->cpus;
            a.mem += al->mem_mb;
        }
    }
    return a;
}

/* May a job start on n now and hold it until `end` without delaying any claim (its own
 * reservation's aside)? When not, *lower_only is cleared unless some claim in the window
 * belongs to a lower job's ordinary reservation: those are stale (from an earlier cycle)
 * and the caller may drop them and ask again. That hint is generous on purpose: it costs
 * at most one drop per walk, where an exact answer cost a pass over the claims per claim. */
bool claims_allow(const struct sched *s, const struct node *n, uint32_t own_res, int64_t now,
                  int64_t end, int gpus, int cpus, int64_t mem, const struct job *for_job,
                  bool *lower_only, int64_t *hold)
{
    bool ok;
    bool overdue = has_overdue(s, n, now);
    if (hold)
        *hold = -1;
    if (!overdue && !avail_own_claim(n, own_res)) {
        int64_t h = avail_hold(s, n, now, gpus, cpus, mem);
        ok = h >= end; /* out of memory (-1): refuse, which is safe */
        if (hold)
            *hold = h;
    } else {
        ok = true; /* the exact walk, leaving the job's own claim out */
        for (int i = 0; i < n->nclaims && ok; i++) {
            const struct claim *c = &n->claims[i];
            if (c->res == own_res || c->start >= end || c->end <= now)
                continue;
            int64_t t = c->start > now ? c->start : now;
            struct avail a = node_avail_at(s, n, t, own_res);
            if (overdue) {
                struct avail od = overdue_not_counted(s, n, t, now, own_res);
                a.gpus -= od.gpus;
                a.cpus -= od.cpus;
                a.mem -= od.mem;
            }
            ok = covers(a, gpus, cpus, mem);
        }
    }
    if (ok || !lower_only)
        return ok;
    bool lower = false;
    for (int i = 0; i < n->nclaims && !lower; i++) {
        const struct claim *c = &n->claims[i];
        if (c->res != own_res && c->start < end && c->end > now)
            lower = !claim_binds(s, c->res, for_job);
    }
    *lower_only &= lower;
    return false;
}

/* Can the node hold the job over [t, t + dur)? Checked at t and at every claim start
 * inside the window, since availability only drops when a claim begins. */
static bool feasible_at(const struct sched *s, const struct node *n, const struct shape *sh,
                        int64_t t, int64_t dur, uint32_t own)
{
    if (!avail_own_claim(n, own)) {
        int w = avail_window(s, n, t, dur >= NEVER - t ? NEVER : t + dur, sh->gpus, sh->cpus,
                             sh->mem_mb);
        if (w >= 0)
            return w == 1;
    }
    if (!covers(node_avail_at(s, n, t, own), sh->gpus, sh->cpus, sh->mem_mb))
        return false;
    int64_t end = dur >= NEVER - t ? NEVER : t + dur;
    for (int i = 0; i < n->nclaims; i++) {
        const struct claim *c = &n->claims[i];
        if (c->res == own || c->start <= t || c->start >= end)
            continue;
        if (!covers(node_avail_at(s, n, c->start, own), sh->gpus, sh->cpus, sh->mem_mb))
            return false;
    }
    return true;
}

/* A node without other claims: the first release that makes the request fit. */
static int64_t earliest_unclaimed(const struct sched *s, const struct node *n,
                                  const struct shape *sh, int64_t now)
{
    struct avail a = {n->gpus - n->gpus_used, n->cpus - n->cpus_used, n->mem_mb - n->mem_used};
    if (covers(a, sh->gpus, sh->cpus, sh->mem_mb))
        return now;
    n = node_releases(s, n);
    for (int i = 0; i < n->nrel; i++) {
        struct avail b = {a.gpus + n->rel[i].gpus, a.cpus + n->rel[i].cpus, a.mem + n->rel[i].mem};
        if (covers(b, sh->gpus, sh->cpus, sh->mem_mb))
            return n->rel[i].at > now ? n->rel[i].at : now;
    }
    return NEVER;
}

/* Availability only rises at a release or a claim's end: try those times in order. */
int64_t node_earliest(const struct sched *s, const struct node *n, const struct shape *sh,
                      int64_t now, int64_t dur, uint32_t own_res)
{
    if (!avail_own_claim(n, own_res)) {
        int64_t t = avail_earliest(s, n, sh, now, dur);
        if (t != -2)
            return t;
    }
    bool claimed = false;
    for (int i = 0; i < n->nclaims && !claimed; i++)
        claimed = n->claims[i].res != own_res;
    if (!claimed)
        return earliest_unclaimed(s, n, sh, now);
    if (feasible_at(s, n, sh, now, dur, own_res))
        return now;
    int64_t ends[64];
    int nends = 0;
    for (int i = 0; i < n->nclaims && nends < 64; i++) {
        int64_t e = n->claims[i].end;
        if (n->claims[i].res == own_res || e <= now || e >= NEVER)
            continue;
        int k = nends++;
        while (k > 0 && ends[k - 1] > e) {
            ends[k] = ends[k - 1];
            k--;
        }
        ends[k] = e;
    }
    n = node_releases(s, n);
    /* claims only take away: nothing before the first release that fits the request on
       the bare node can work (prefix sums are monotone, so a binary search finds it) */
    struct avail bare = {n->gpus - n->gpus_used, n->cpus - n->cpus_used, n->mem_mb - n->mem_used};
    int lo = 0, hi = n->nrel;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        struct avail b = {bare.gpus + n->rel[mid].gpus, bare.cpus + n->rel[mid].cpus,
                          bare.mem + n->rel[mid].mem};
        if (covers(b, sh->gpus, sh->cpus, sh->mem_mb))
            hi = mid;
        else
            lo = mid + 1;
    }
    if (!covers(bare, sh->gpus, sh->cpus, sh->mem_mb) && lo == n->nrel)
        return NEVER;
    int64_t floor_t = covers(bare, sh->gpus, sh->cpus, sh->mem_mb) ? now : n->rel[lo].at;
    int r = lo, c = 0;
    while (c < nends && ends[c] < floor_t)
        c++;
    while (r < n->nrel || c < nends) {
        int64_t t =
            c >= nends || (r < n->nrel && n->rel[r].at <= ends[c]) ? n->rel[r++].at : ends[c++];
        if (t > now && feasible_at(s, n, sh, t, dur, own_res))
            return t;
    }
    return NEVER;
}

/* ------------------------------------------------------------------------------------ */

static int add_claim(struct sched *s, struct node *n, const struct claim *c)
{
    size_t cap = (size_t)n->claims_cap;
    if (grow((void **)&n->claims, &cap, (size_t)n->nclaims + 1, sizeof(*n->claims)) < 0)
        return -ENOMEM;
    n->claims_cap = (int)cap;
    n->claims[n->nclaims++] = *c;
    node_profile_touch(s, n);
    return 0;
}

uint32_t reservation_add(struct sched *s, struct job *j, int64_t start, int64_t end,
                         const uint32_t *nodes, int nnodes, bool preempting, bool starving)
{
    uint32_t r = NONE32;
    for (size_t i = 0; i < s->nres; i++)
        if (!s->res[i].live) {
            r = (uint32_t)i;
            break;
        }
    if (r == NONE32) {
        if (grow((void **)&s->res, &s->res_cap, s->nres + 1, sizeof(*s->res)) < 0)
            return NONE32;
        r = (uint32_t)s->nres++;
    }
    struct reservation *res = &s->res[r];
    memset(res, 0, sizeof(*res));
    res->nodes = malloc(nnodes * sizeof(*nodes));
    if (!res->nodes)
        return NONE32;
    memcpy(res->nodes, nodes, nnodes * sizeof(*nodes));
    res->nnodes = nnodes;
    res->slot = job_slot(s, j);
    res->job_id = j->id;
    res->start = start;
    res->end = end;
    res->made_ms = s->now;
    res->preempting = preempting;
    res->starving = starving;
    res->live = true;
    const struct shape *sh = &s->shapes[j->shape];
    struct claim c = {r, start, end, sh->gpus, sh->cpus, sh->mem_mb};
    for (int i = 0; i < nnodes; i++)
        (void)add_claim(s, &s->nodes[nodes[i]], &c);
    j->reservation = r;
    s->shapes[j->shape].with_res++;
    if (!preempting && !starving)
        s->res_active++;
    return r;
}

void reservation_drop(struct sched *s, uint32_t r)
{
    struct reservation *res = &s->res[r];
    if (!res->live)
        return;
    s->res_drops++;
    for (int i = 0; i < res->nnodes; i++) {
        struct node *n = &s->nodes[res->nodes[i]];
        node_profile_touch(s, n);
        for (int k = 0; k < n->nclaims;) {
            if (n->claims[k].res == r)
                n->claims[k] = n->claims[--n->nclaims];
            else
                k++;
        }
    }
    struct job *j = &s->jobs[res->slot];
    if (j->id == res->job_id && j->reservation == r) {
        j->reservation = NONE32;
        s->shapes[j->shape].with_res--;
    }
    if (!res->preempting && !res->starving)
        s->res_active--;
    free(res->nodes);
    free(res->victims);
    memset(res, 0, sizeof(*res));
}

void reservation_drop_lower(struct sched *s, const struct job *j)
{
    for (size_t r = 0; r < s->nres; r++) {
        struct reservation *res = &s->res[r];
        if (res->live && !res->preempting && !res->starving &&
            job_outranks(s, j, &s->jobs[res->slot]))
            reservation_drop(s, (uint32_t)r);
    }
}

void reservations_drop_all(struct sched *s, bool keep_sticky)
{
    for (size_t r = 0; r < s->nres; r++) {
        struct reservation *res = &s->res[r];
        if (res->live && (!keep_sticky || (!res->preempting && !res->starving)))
            reservation_drop(s, (uint32_t)r);
    }
}

struct cand {
    int64_t at;
    uint32_t node;
};

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

struct cand_search {
    const struct job *j;
    const struct shape *sh;
    int64_t now, dur;
    struct cand *out;
    size_t n, max;
};

static void cand_visit(struct sched *s, uint32_t idx, void *ctx)
{
    struct cand_search *cs = ctx;
    if (cs->n >= cs->max)
        return;
    int64_t at = node_earliest(s, &s->nodes[idx], cs->sh, cs->now, cs->dur, cs->j->reservation);
    if (at < NEVER) {
        cs->out[cs->n].at = at;
        cs->out[cs->n].node = idx;
        cs->n++;
    }
}

/* Candidate nodes with each one's earliest start for the job. */
static size_t collect_candidates(struct sched *s, const struct job *j, const struct shape *sh,
                                 int64_t now, int64_t dur, struct cand *out, size_t max)
{
    struct cand_search cs = {j, sh, now, dur, out, 0, max};
    shape_candidates_each(s, sh, cand_visit, &cs);
    return cs.n;
}

/* The earliest start of shape `sh` for job j over its candidate nodes: fills chosen[] (the
 * shape's node count) and returns the start, or NEVER. */
static int64_t earliest_start(struct sched *s, const struct job *j, const struct shape *sh,
                              int64_t now, int64_t dur, struct cand *c, uint32_t *chosen)
{
    size_t nc = collect_candidates(s, j, sh, now, dur, c, s->nnodes);
    if (nc < (size_t)sh->nodes)
        return NEVER;
    if (sh->nodes == 1) {
        size_t best = 0;
        for (size_t i = 1; i < nc; i++)
            if (cmp_cand(&c[i], &c[best]) < 0)
                best = i;
        chosen[0] = c[best].node;
        return c[best].at;
    }
    qsort(c, nc, sizeof(*c), cmp_cand);
    /* try start times in order; a gang needs N nodes all feasible at the same start */
    for (size_t first = (size_t)sh->nodes - 1; first < nc; first++) {
        int64_t t = c[first].at;
        int got = 0;
        for (size_t i = 0; i < nc && got < sh->nodes && c[i].at <= t; i++)
            if (c[i].at == t || feasible_at(s, &s->nodes[c[i].node], sh, t, dur, j->reservation))
                chosen[got++] = c[i].node;
        if (got == sh->nodes)
            return t;
        if (first >= (size_t)sh->nodes + 64)
            break; /* bounded search for gangs */
    }
    return NEVER;
}

/* Give a blocked job a reservation at its earliest possible start. 0, or -ENOSPC when no
 * start can be foreseen (the nodes it needs run jobs without time limits). */
int reservation_make(struct sched *s, struct job *j, int64_t now, bool starving)
{
    const struct shape *sh = &s->shapes[j->shape];
    int64_t dur = j->limit_ms > 0 ? j->limit_ms + j->grace_ms : NEVER;
    struct cand *c = malloc(s->nnodes * sizeof(*c) + 1);
    uint32_t *chosen = malloc(2 * (size_t)sh->nodes * sizeof(*chosen));
    int rc = -ENOSPC;
    if (!c || !chosen) {
        rc = -ENOMEM;
        goto out;
    }
    int64_t best = NEVER;
    if (!shape_spans_types(sh)) {
        best = earliest_start(s, j, sh, now, dur, c, chosen);
    } else {
        uint32_t *mine = chosen + sh->nodes;
        for (int t = 1; t < s->ntypes; t++) {
            struct shape typed = shape_typed(sh, t);
            int64_t at = earliest_start(s, j, &typed, now, dur, c, mine);
            if (at < best) {
                best = at;
                memcpy(chosen, mine, (size_t)sh->nodes * sizeof(*chosen));
            }
        }
    }
    if (best < NEVER) {
        int64_t end = dur >= NEVER - best ? NEVER : best + dur;
        rc = reservation_add(s, j, best, end, chosen, sh->nodes, false, starving) == NONE32
                 ? -ENOMEM
                 : 0;
    }
out:
    free(c);
    free(chosen);
    return rc;
}
