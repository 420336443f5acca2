/*
 * reserve.c - where and from when a blocked job is promised room (floor 2; docs/scheduling.md
 * §6-§7). The reservations and their claims are stored by claims.c (floor 1).
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
#include "core/pieces.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
    if (!avail_covers(node_avail_at(s, n, t, own), sh->gpus, sh->cpus, sh->mem_mb))
        return false;
    int64_t end = dur >= NEVER - t ? NEVER : t + dur;
    for (int i = 0; i < n->nclaims; i++) {
        const struct claim *c = &n->claims[i];
        if (c->res == own || c->start <= t || c->start >= end)
            continue;
        if (!avail_covers(node_avail_at(s, n, c->start, own), sh->gpus, sh->cpus, sh->mem_mb))
            return false;
    }
    return true;
}

/* A node without other claims: the first release that makes the request fit. */
static int64_t earliest_unclaimed(const struct sched *s, const struct node *n,
                                  const struct shape *sh, int64_t now)
{
    struct avail a = {n->gpus - n->gpus_used, n->cpus - n->cpus_used, n->mem_mb - n->mem_used};
    if (avail_covers(a, sh->gpus, sh->cpus, sh->mem_mb))
        return now;
    n = node_releases(s, n);
    for (int i = 0; i < n->nrel; i++) {
        struct avail b = {a.gpus + n->rel[i].gpus, a.cpus + n->rel[i].cpus, a.mem + n->rel[i].mem};
        if (avail_covers(b, sh->gpus, sh->cpus, sh->mem_mb))
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
        if (avail_covers(b, sh->gpus, sh->cpus, sh->mem_mb))
            hi = mid;
        else
            lo = mid + 1;
    }
    if (!avail_covers(bare, sh->gpus, sh->cpus, sh->mem_mb) && lo == n->nrel)
        return NEVER;
    int64_t floor_t = avail_covers(bare, sh->gpus, sh->cpus, sh->mem_mb) ? now : n->rel[lo].at;
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
    /* candidates: scratch space of the scheduler, grown as needed */
    size_t need = s->nnodes ? s->nnodes : 1;
    if (need > s->cand_scratch_cap) {
        void *p = realloc(s->cand_scratch, need * sizeof(struct cand));
        if (p) {
            s->cand_scratch = p;
            s->cand_scratch_cap = need;
        }
    }
    struct cand *c = need <= s->cand_scratch_cap ? s->cand_scratch : NULL;
    uint32_t chosen[2 * SCHED_MAX_JOB_NODES];
    int rc = -ENOSPC;
    if (!c || sh->nodes > SCHED_MAX_JOB_NODES) {
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
    return rc;
}
