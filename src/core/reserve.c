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
#include "core/reserve.h"
#include "core/caches.h"
#include "core/model.h"
#include "core/nodes.h"
#include "core/avail.h"
#include "core/claims.h"
#include "core/topo.h"

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

/* When the bare node (its free room plus what its jobs release, no claim counted) first
 * holds the request: now, the first release whose running total covers it (prefix sums
 * are monotone: a binary search), or NEVER. Claims only take away, so no start of the
 * request on the node comes earlier: the floor of node_earliest(), and its answer on a
 * node without other claims. *first_rel: the index of that release (nrel: none). */
static int64_t node_bare_floor(const struct sched *s, const struct node **np,
                               const struct shape *sh, int64_t now, int *first_rel)
{
    const struct node *n = *np;
    struct avail bare = {n->gpus - n->gpus_used, n->cpus - n->cpus_used, n->mem_mb - n->mem_used};
    n = *np = node_releases(s, n);
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
    *first_rel = lo;
    if (avail_covers(bare, sh->gpus, sh->cpus, sh->mem_mb))
        return now;
    if (lo == n->nrel)
        return NEVER;
    return n->rel[lo].at > now ? n->rel[lo].at : now;
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
    int lo;
    int64_t floor_t = node_bare_floor(s, &n, sh, now, &lo);
    if (!claimed || floor_t == NEVER)
        return floor_t;
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
    /* claims only take away: nothing before the bare node's floor can work */
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

/* a gang tries the start times of its candidates up to the (nodes + this)-th earliest */
enum { GANG_STARTS_TRIED = 65 };

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

static inline bool cand_before(const struct cand *x, const struct cand *y)
{
    return x->at < y->at || (x->at == y->at && x->node < y->node);
}

static inline void cand_swap(struct cand *x, struct cand *y)
{
    struct cand t = *x;
    *x = *y;
    *y = t;
}

/* The index of the earliest of c[0..n) by (start, node); n > 0. */
static size_t cands_earliest(const struct cand *c, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (cand_before(&c[i], &c[best]))
            best = i;
    return best;
}

static void cands_sift(struct cand *c, size_t root, size_t n)
{
    for (size_t child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && cand_before(&c[child], &c[child + 1]))
            child++;
        if (!cand_before(&c[root], &c[child]))
            return;
        cand_swap(&c[root], &c[child]);
    }
}

/* Sort candidates by (start, node), as cmp_cand: a quicksort with the comparison inlined
 * (glibc's qsort, a merge sort copying through memcpy and calling cmp_cand by pointer,
 * was a tenth of docket-sim's time on RICC), insertion sort for short runs, and heapsort
 * once the recursion goes deeper than 2 log n. Nodes are distinct, so no two keys tie. */
static void cands_sort(struct cand *c, size_t n)
{
    int depth = 0;
    for (size_t k = n; k > 1; k >>= 1)
        depth += 2;
    while (n > 16) {
        if (depth-- == 0) {
            for (size_t i = n / 2; i-- > 0;)
                cands_sift(c, i, n);
            for (size_t i = n; i-- > 1;) {
                cand_swap(&c[0], &c[i]);
                cands_sift(c, 0, i);
            }
            return;
        }
        /* median of three to c[0], then partition c[1..n) around it */
        size_t mid = n / 2;
        if (cand_before(&c[mid], &c[0]))
            cand_swap(&c[mid], &c[0]);
        if (cand_before(&c[n - 1], &c[0]))
            cand_swap(&c[n - 1], &c[0]);
        if (cand_before(&c[n - 1], &c[mid]))
            cand_swap(&c[n - 1], &c[mid]);
        cand_swap(&c[0], &c[mid]); /* the median is the pivot, at c[0] */
        size_t i = 1, j = n - 1;
        for (;;) {
            while (cand_before(&c[i], &c[0]))
                i++;
            while (cand_before(&c[0], &c[j]))
                j--;
            if (i >= j)
                break;
            cand_swap(&c[i++], &c[j--]);
        }
        cand_swap(&c[0], &c[j]); /* c[0..j) before the pivot at j, c(j..n) after */
        /* recurse into the shorter side, go on with the longer */
        if (j < n - j - 1) {
            cands_sort(c, j);
            c += j + 1;
            n -= j + 1;
        } else {
            cands_sort(c + j + 1, n - j - 1);
            n = j;
        }
    }
    for (size_t i = 1; i < n; i++) {
        struct cand x = c[i];
        size_t k = i;
        for (; k > 0 && cand_before(&x, &c[k - 1]); k--)
            c[k] = c[k - 1];
        c[k] = x;
    }
}

/* The search keeps every candidate, or (pruned) only those that may be among the `keep`
 * earliest by (start, node), the only ones earliest_start() reads: a node whose bare floor
 * (node_bare_floor) already comes after the keep-th earliest start found so far cannot
 * be, and its start is not computed. */
struct cand_search {
    const struct job *j;
    bool horizon_wanted; /* by a caller that keeps the answer (a starving job's proof) */
    int64_t horizon; /* the first instant a visited node's earliest start may move (window_close) */
    const struct shape *sh;
    int64_t now, dur;
    struct cand *out;
    size_t n, max;
    bool prune;
    size_t keep;      /* the candidates earliest_start() reads at most (ties aside) */
    size_t compact;   /* n at which the list is cut back to its keep earliest */
    struct cand kth;  /* the keep-th earliest so far; at NEVER until there are keep */
    uint64_t skipped; /* nodes pruned */
};

/* Cut the list back to the `keep` earliest: for one node the earliest by (start, node),
 * all earliest_start() reads; for a gang also every candidate tied with the keep-th (its
 * search reads those too). Ties can be thousands (every node free at the same release),
 * so the next cut waits until the list has doubled: sorting stays O(n log n) in all. */
static void cands_cut(struct cand_search *cs)
{
    if (cs->keep == 1) {
        cs->out[0] = cs->out[cands_earliest(cs->out, cs->n)];
        cs->n = 1;
        cs->kth = cs->out[0];
        cs->compact = 2 * cs->keep;
        return;
    }
    cands_sort(cs->out, cs->n); /* n >= compact > keep here */
    size_t k = cs->keep;
    while (k < cs->n && cs->out[k].at == cs->out[cs->keep - 1].at)
        k++;
    cs->n = k;
    cs->kth = cs->out[cs->keep - 1];
    cs->compact = 2 * cs->n > cs->n + 2 * cs->keep ? 2 * cs->n : cs->n + 2 * cs->keep;
}

/* A start at `at` holds the request over [at, at + dur). A later start's window reaches the
 * claims that begin at or after at + dur: from the first such claim's start - dur + 1 on,
 * the node's earliest start may jump past that claim (a gang's search tries each node's
 * earliest start only, so the room after the claim was not seen from before). NEVER: time
 * alone does not move it. */
static int64_t window_close(const struct node *n, int64_t at, int64_t dur, uint32_t own)
{
    if (dur >= NEVER - at)
        return NEVER; /* its window reaches every claim already */
    int64_t close = NEVER;
    for (int i = 0; i < n->nclaims; i++) {
        const struct claim *c = &n->claims[i];
        if (c->res != own && c->start >= at + dur && c->start - dur + 1 < close)
            close = c->start - dur + 1;
    }
    return close;
}

static void cand_visit(struct sched *s, uint32_t idx, void *ctx)
{
    struct cand_search *cs = ctx;
    if (cs->n >= cs->max)
        return;
    const struct node *n = &s->nodes[idx];
    if (cs->prune && cs->kth.at < NEVER) {
        int lo;
        int64_t floor_t = node_bare_floor(s, &n, cs->sh, cs->now, &lo);
        /* its start is at least floor_t: past the keep-th, or tied and after it by index */
        if (floor_t > cs->kth.at || (floor_t == cs->kth.at && idx > cs->kth.node)) {
            cs->skipped++;
            return;
        }
    }
    int64_t at = node_earliest(s, n, cs->sh, cs->now, cs->dur, cs->j->reservation);
    if (at < NEVER) {
        int64_t close =
            cs->horizon_wanted ? window_close(n, at, cs->dur, cs->j->reservation) : NEVER;
        if (close < cs->horizon)
            cs->horizon = close;
        cs->out[cs->n].at = at;
        cs->out[cs->n].node = idx;
        cs->n++;
        if (cs->prune && cs->n >= cs->compact)
            cands_cut(cs);
    }
}

/* Candidate nodes with each one's earliest start for the job: every one, or (prune) a
 * list whose `keep` earliest (and their ties) are those of the whole list. */
static size_t collect_candidates(struct sched *s, const struct job *j, const struct shape *sh,
                                 int64_t now, int64_t dur, struct cand *out, size_t max, bool prune,
                                 int64_t *horizon)
{
    size_t keep = sh->nodes == 1 ? 1 : (size_t)sh->nodes + GANG_STARTS_TRIED;
    struct cand_search cs = {.j = j,
                             .sh = sh,
                             .now = now,
                             .dur = dur,
                             .out = out,
                             .max = max,
                             .prune = prune,
                             .horizon_wanted = horizon != NULL,
                             .horizon = NEVER,
                             .keep = keep,
                             .compact = 2 * keep,
                             .kth = {NEVER, 0}};
    shape_candidates_each(s, sh, cand_visit, &cs);
    s->res_pruned += cs.skipped;
    if (horizon && cs.horizon < *horizon)
        *horizon = cs.horizon;
    return cs.n;
}

/* The earliest start of shape `sh` for job j over its candidate nodes: fills chosen[] (the
 * shape's node count) and returns the start, or NEVER. */
static int64_t earliest_start(struct sched *s, const struct job *j, const struct shape *sh,
                              int64_t now, int64_t dur, struct cand *c, uint32_t *chosen,
                              bool prune, int64_t *horizon)
{
    size_t nc = collect_candidates(s, j, sh, now, dur, c, s->nnodes, prune, horizon);
    if (nc < (size_t)sh->nodes)
        return NEVER;
    if (sh->nodes == 1) {
        size_t best = cands_earliest(c, nc);
        chosen[0] = c[best].node;
        return c[best].at;
    }
    /* the full search runs only to verify the pruned one (sched_verify_memos): it sorts
       with qsort, so that it also checks cands_sort */
    if (prune)
        cands_sort(c, nc);
    else
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
        if (first + 1 >= (size_t)sh->nodes + GANG_STARTS_TRIED)
            break; /* bounded search for gangs */
    }
    return NEVER;
}

/* The earliest start over the job's GPU types (a gang of any type: each type alone) and,
 * for a gang that requires one domain, over its domains (each alone, the first of equal
 * starts in node order); a best-effort gang takes one domain's when it is as early as
 * any nodes'. Its nodes in chosen[] (room for 2 x nodes). */
static int64_t best_start(struct sched *s, const struct job *j, const struct shape *sh, int64_t now,
                          int64_t dur, struct cand *c, uint32_t *chosen, bool prune,
                          int64_t *horizon)
{
    if (!shape_spans_types(sh) && !topo_required(sh) && !topo_best_effort(sh))
        return earliest_start(s, j, sh, now, dur, c, chosen, prune, horizon);
    int64_t best = NEVER;
    bool best_pinned = false;
    uint32_t *mine = chosen + sh->nodes;
    struct shape_parts parts;
    struct shape typed;
    shape_parts_begin(s, sh, &parts);
    while (shape_part_next(&parts, &typed)) {
        int64_t at = earliest_start(s, j, &typed, now, dur, c, mine, prune, horizon);
        /* best effort: one domain's start as early as any nodes' is taken instead */
        if (at < best || (at == best && at < NEVER && typed.topo_pinned && !best_pinned)) {
            best_pinned = typed.topo_pinned;
            best = at;
            memcpy(chosen, mine, (size_t)sh->nodes * sizeof(*chosen));
        }
    }
    return best;
}

/* The room a higher job's arrival took from gang j in this walk (reservation_drop_lower),
 * given back when it still holds: a start still to come, every node one its reservation
 * could keep (reservation_nodes_usable) and feasible from that start for the job's time,
 * against every claim now on it. That is what the search checks of the nodes it chooses,
 * so the promise is as safe as a new one; it may start later than a new search would find,
 * as a reservation kept from an earlier cycle may (the refresh makes them all again). A
 * gang's search tries up to GANG_STARTS_TRIED start times over every candidate; a one-node
 * job's, pruned by the nodes' bare floors, costs little, and is not spared (its hint is
 * not kept). True when j holds its room again. */
static bool reservation_restore(struct sched *s, struct job *j, int64_t now, int64_t dur)
{
    struct res_hint h;
    if (!reservation_hint_take(s, j, &h))
        return false;
    const struct shape *sh = &s->shapes[j->shape];
    struct reservation probe = {.nodes = h.nodes, .nnodes = h.nnodes};
    bool ok = h.start > now && h.nnodes == sh->nodes && reservation_nodes_usable(s, &probe, j);
    for (int i = 0; ok && i < h.nnodes; i++)
        ok = feasible_at(s, &s->nodes[h.nodes[i]], sh, h.start, dur, NONE32);
    if (ok) {
        int64_t end = dur >= NEVER - h.start ? NEVER : h.start + dur;
        ok = reservation_add(s, j, h.start, end, h.nodes, h.nnodes, false, false) != NONE32;
        s->res_restored += ok;
    }
    free(h.nodes);
    return ok;
}

/* Give a blocked job a reservation at its earliest possible start, or (an ordinary one of a
 * gang) back the room it held before a higher job's arrival took it in this walk. 0, or -ENOSPC
 * when no start can be foreseen (the nodes it needs run jobs without time limits). */
int reservation_make(struct sched *s, struct job *j, int64_t now, bool starving)
{
    const struct shape *sh = &s->shapes[j->shape];
    int64_t dur = j->limit_ms > 0 ? j->limit_ms + j->grace_ms : NEVER;
    if (!starving && reservation_restore(s, j, now, dur))
        return 0;
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
    int64_t horizon = NEVER;
    int rc = -ENOSPC;
    s->res_horizon_job = j->id;
    s->res_horizon = now; /* until the search is made: nothing is known */
    if (!c || sh->nodes > SCHED_MAX_JOB_NODES) {
        rc = -ENOMEM;
        goto out;
    }
    /* only a starving job's quiet proof keeps a failed search's answer across cycles */
    int64_t best = best_start(s, j, sh, now, dur, c, chosen, true, starving ? &horizon : NULL);
    s->res_horizon = starving ? horizon : now;
    if (cache_verifying(s, SCHED_CACHE_RES_PRUNED)) {
        /* the pruned search must choose as the full one does */
        uint32_t full[2 * SCHED_MAX_JOB_NODES];
        bool same = best_start(s, j, sh, now, dur, c, full, false, NULL) == best &&
                    (best >= NEVER || !memcmp(full, chosen, (size_t)sh->nodes * sizeof(*full)));
        cache_verified(s, SCHED_CACHE_RES_PRUNED, j->id, same);
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
