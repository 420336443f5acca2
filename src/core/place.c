/*
 * place.c - where a job can start now: best-fit placement (floor 2).
 *
 * Best fit is the first node that fits in the lowest bucket (nodes.c, floor 1) at or above
 * the request, so whole nodes stay free for big jobs; a job asking for a type looks only at
 * that type's buckets, so a type is never substituted. Gang jobs take N distinct nodes or
 * nothing (docs/scheduling.md §3). Among the nodes of one level (equally good fits), those
 * where the job's environment is warm come first (§3 "Warm nodes").
 */
#include "core/place.h"
#include "core/caches.h"
#include "core/model.h"
#include "core/changes.h"
#include "core/nodes.h"
#include "core/claims.h"
#include "core/topo.h"
#include "core/warm.h"

#include <stdlib.h>
#include <string.h>

static uint64_t pick_gpus(const struct node *n, int count)
{
    uint64_t mask = 0;
    for (int i = 0; i < n->gpus && count > 0; i++) {
        uint64_t bit = 1ULL << i;
        if (!(n->gpu_used_mask & bit)) {
            mask |= bit;
            count--;
        }
    }
    return mask;
}

/* Why a shape cannot run, regardless of load: GpuType when no node at all has the type,
 * NodeSelector when none matches its selectors, ReservedZone when only reserved nodes
 * would do and its tier may not use them; else SCHED_R_NONE (nodes that could hold it
 * exist, even if none is UP now: then it waits for Resources). Cached per shape until
 * the set of nodes changes. */
/* Why no node could ever take the shape, from a look at every node. */
static int static_reason_of(const struct sched *s, const struct shape *sh)
{
    bool type_ok = false, sel_ok = false, pool_ok = false;
    for (size_t i = 0; i < s->nnodes && !pool_ok; i++) {
        const struct node *n = &s->nodes[i];
        if (sh->gpu_type > 0 && n->gpu_type != sh->gpu_type)
            continue;
        if (n->gpus < sh->gpus)
            continue;
        type_ok = true;
        if (!node_static_fit(s, n, sh, false))
            continue;
        sel_ok = true;
        pool_ok = node_pool_allowed(n, (enum pool_rule)sh->pool_rule);
    }
    return !type_ok   ? SCHED_R_GPU_TYPE
           : !sel_ok  ? SCHED_R_NODE_SELECTOR
           : !pool_ok ? SCHED_R_RESERVED_ZONE
                      : SCHED_R_NONE;
}

/* Cached per shape while no node changes its type, capacity, labels or state (node_epoch). */
int shape_static_reason(struct sched *s, struct shape *sh, uint64_t job)
{
    if (sh->static_cycle == s->node_epoch) {
        if (cache_verifying(s, SCHED_CACHE_STATIC_REASON))
            cache_verified(s, SCHED_CACHE_STATIC_REASON, job,
                           static_reason_of(s, sh) == sh->static_reason);
        return sh->static_reason;
    }
    sh->static_reason = (uint8_t)static_reason_of(s, sh);
    sh->static_cycle = s->node_epoch;
    return sh->static_reason;
}

struct place_ctx {
    struct sched *s;
    const struct job *j;
    const struct shape *sh;
    int64_t now, end;
    struct sched_alloc *allocs;
    int found, capacity;
    bool want_lower; /* the caller asks whether only lower claims held it off */
    bool lower_only, any_claimed;
    int64_t hold_max; /* the latest end a node with room allowed; -1 once one could not tell */
    struct place_memo **rec; /* the job's memo, recorded on the way (NULL: none) */
    /* a gang with a topology rule: every node that lets it in goes to s->topo_scratch
       (ncollected), and the nodes with room are counted per domain of its level */
    bool collect;
    size_t ncollected;
    const uint32_t *domains;
    size_t ndomains;
    int *dom_room;
    /* the job's environment when some node has it warm (else 0): warm nodes first */
    uint32_t env;
};

/* Which nodes of a bucket one walk takes: all of them, or (a job whose environment is
 * warm somewhere) first the warm ones, then the others, so each is looked at once. */
enum warm_pass { PASS_ALL, PASS_WARM, PASS_COLD };

/* A node with room for the shape, into the memo being made or moved (until: see struct
 * place_memo). Past PLACE_MEMO_MAX nodes, or out of memory, the memo is given up. */
static void memo_room(struct place_memo **mp, uint32_t node, int64_t until)
{
    struct place_memo *m = mp ? *mp : NULL;
    if (!m || !m->live)
        return;
    if (m->nroom == m->cap) {
        int cap = m->cap * 2;
        struct place_memo *bigger = m->nroom < PLACE_MEMO_MAX
                                        ? realloc(m, sizeof(*m) + (size_t)cap * sizeof(*m->room))
                                        : NULL;
        if (!bigger) {
            m->live = false;
            return;
        }
        *mp = m = bigger;
        m->cap = cap;
    }
    m->room[m->nroom++] = (struct place_memo_node){node, until};
}

/* Room for the shape on node n now, and may the claims there let the job in? A node with
 * room goes into the memo being recorded, if any. */
static bool node_room_allows(struct place_ctx *c, uint32_t idx)
{
    struct sched *s = c->s;
    const struct shape *sh = c->sh;
    const struct node *n = &s->nodes[idx];
    if (!node_free_fit(n, sh) || !node_matches_selset(s, n, sh->selset) ||
        !topo_node_in_part(n, sh))
        return false;
    c->capacity++;
    if (c->dom_room) {
        int d = topo_domain_index(c->domains, c->ndomains, topo_node_domain(n, sh->topo_key));
        if (d >= 0)
            c->dom_room[d]++;
    }
    bool lower = true;
    int64_t hold = NEVER;
    if (n->nclaims && !claims_allow(s, n, c->j->reservation, c->now, c->end, sh->gpus, sh->cpus,
                                    sh->mem_mb, c->j, c->want_lower ? &lower : NULL, &hold)) {
        c->any_claimed = true;
        c->lower_only &= lower;
        if (c->hold_max >= 0 && (hold < 0 || hold > c->hold_max))
            c->hold_max = hold;
        memo_room(c->rec, idx, c->rec ? claims_refused_until(s, n, c->now, hold) : 0);
        return false;
    }
    memo_room(c->rec, idx, c->now); /* let in: looked at again each time */
    return true;
}

static bool already_chosen(const struct place_ctx *c, uint32_t idx)
{
    for (int i = 0; i < c->found; i++)
        if (c->allocs[i].node == idx)
            return true;
    return false;
}

/* Walk one bucket list, the nodes of the pass; returns true when the job has all its
 * nodes. */
static bool scan_bucket(struct place_ctx *c, uint32_t head, enum warm_pass pass)
{
    struct sched *s = c->s;
    const struct shape *sh = c->sh;
    for (uint32_t idx = head; idx != NONE32; idx = s->nodes[idx].next) {
        if (pass != PASS_ALL && node_warm_has(&s->nodes[idx], c->env) != (pass == PASS_WARM))
            continue;
        if (c->collect) {
            if (node_room_allows(c, idx))
                s->topo_scratch[c->ncollected++] = idx;
            continue;
        }
        if (already_chosen(c, idx) || !node_room_allows(c, idx))
            continue;
        struct sched_alloc *a = &c->allocs[c->found++];
        a->node = idx;
        a->gpus = sh->gpus;
        a->cpus = sh->cpus;
        a->mem_mb = sh->mem_mb;
        a->gpu_mask = pick_gpus(&s->nodes[idx], sh->gpus);
        if (c->found == sh->nodes)
            return true;
    }
    return false;
}

/* One level of fit: the buckets of types [from, to) at index k of a pool, which leave the
 * job the same free GPUs (or, on CPU-only nodes, CPUs), so any of their nodes is as good a
 * fit as another. A job whose environment is warm somewhere takes their warm nodes first:
 * the order within the level alone changes, never whether the job starts (§3 "Warm
 * nodes"). */
static bool scan_level(struct place_ctx *c, int pool, int k, int from, int to)
{
    struct sched *s = c->s;
    enum warm_pass first = c->env ? PASS_WARM : PASS_ALL;
    for (enum warm_pass pass = first; pass <= (c->env ? PASS_COLD : PASS_ALL); pass++)
        for (int t = from; t < to; t++) {
            uint32_t head = s->buckets[t][pool][k];
            if (head != NONE32 && scan_bucket(c, head, pass))
                return true;
        }
    return false;
}

/* Lowest bucket first. A job without GPUs tries the CPU-only nodes first (their buckets
 * count free CPUs), then the GPU nodes. */
static bool scan_pool(struct place_ctx *c, int pool)
{
    struct sched *s = c->s;
    const struct shape *sh = c->sh;
    int type = sh->gpu_type, gpus = sh->gpus;
    if (type <= 0 && gpus == 0)
        for (int k = sh->cpus < NBUCKETS - 1 ? sh->cpus : NBUCKETS - 1; k < NBUCKETS; k++)
            if (scan_level(c, pool, k, 0, 1))
                return true;
    int from = type > 0 ? type : 1, to = type > 0 ? type + 1 : s->ntypes;
    for (int k = from < to ? gpus : NBUCKETS; k < NBUCKETS; k++)
        if (scan_level(c, pool, k, from, to))
            return true;
    return false;
}

static enum place_result place_shape(struct sched *s, const struct job *j, const struct shape *sh,
                                     int64_t now, struct sched_alloc *allocs,
                                     bool *claimed_by_lower, int64_t *held_until,
                                     struct place_memo **rec);

/* The pools a shape's rule scans, in its order of preference. */
static int shape_pools(const struct shape *sh, int pools[2])
{
    switch ((enum pool_rule)sh->pool_rule) {
    case POOL_RULE_RESERVED_FIRST:
        pools[0] = POOL_RESERVED;
        pools[1] = POOL_NORMAL;
        return 2;
    case POOL_RULE_BORROW:
        pools[0] = POOL_NORMAL;
        pools[1] = POOL_RESERVED;
        return 2;
    default:
        pools[0] = POOL_NORMAL;
        return 1;
    }
}

/* The domain a topology gang takes whole: the one with the fewest nodes that let it in,
 * and enough of them (best fit, as for nodes: fuller switches stay whole for bigger
 * gangs); -1 when none has enough. */
static int topo_best_domain(const int *allowed, size_t ndomains, int want)
{
    int best = -1;
    for (size_t d = 0; d < ndomains; d++)
        if (allowed[d] >= want && (best < 0 || allowed[d] < allowed[best]))
            best = (int)d;
    return best;
}

/* Take the collected nodes of domain d, in scan order (best fit), up to the gang's size. */
static void topo_take(struct place_ctx *c, uint32_t value)
{
    struct sched *s = c->s;
    const struct shape *sh = c->sh;
    for (size_t i = 0; i < c->ncollected && c->found < sh->nodes; i++) {
        uint32_t idx = s->topo_scratch[i];
        if (topo_node_domain(&s->nodes[idx], sh->topo_key) != value)
            continue;
        struct sched_alloc *a = &c->allocs[c->found++];
        a->node = idx;
        a->gpus = sh->gpus;
        a->cpus = sh->cpus;
        a->mem_mb = sh->mem_mb;
        a->gpu_mask = pick_gpus(&s->nodes[idx], sh->gpus);
    }
}

/* Best effort over several domains: the fullest first, so the gang spans as few as the
 * free room allows. */
static void topo_take_fullest(struct place_ctx *c, int *allowed)
{
    while (c->found < c->sh->nodes) {
        int most = -1;
        for (size_t d = 0; d < c->ndomains; d++)
            if (allowed[d] > 0 && (most < 0 || allowed[d] > allowed[most]))
                most = (int)d;
        if (most < 0)
            return;
        topo_take(c, c->domains[most]);
        allowed[most] = 0;
    }
}

/* A gang with a topology rule (docs/scheduling.md §3, "Topology"): every node that lets it
 * in now is collected, counted per domain, and the gang takes one domain whole (required,
 * or best effort where one has the room), else (best effort) the fullest domains. */
static enum place_result place_topo(struct place_ctx *c, bool *claimed_by_lower)
{
    struct sched *s = c->s;
    const struct shape *sh = c->sh;
    if (s->topo_scratch_cap < s->nnodes) {
        uint32_t *p = realloc(s->topo_scratch, s->nnodes * sizeof(*p));
        if (!p)
            return PLACE_NO_CAPACITY;
        s->topo_scratch = p;
        s->topo_scratch_cap = s->nnodes;
    }
    c->ndomains = topo_domains(s, sh->topo_key, &c->domains);
    int *counts = calloc(2 * (c->ndomains ? c->ndomains : 1), sizeof(*counts));
    if (!counts || !c->ndomains) {
        free(counts);
        return PLACE_NO_CAPACITY;
    }
    int *allowed = counts + c->ndomains;
    c->dom_room = counts;
    c->collect = true;
    int pools[2], npools = shape_pools(sh, pools);
    for (int p = 0; p < npools; p++)
        scan_pool(c, pools[p]);
    for (size_t i = 0; i < c->ncollected; i++) {
        int d = topo_domain_index(c->domains, c->ndomains,
                                  topo_node_domain(&s->nodes[s->topo_scratch[i]], sh->topo_key));
        allowed[d]++;
    }
    enum place_result r = PLACE_OK;
    int best = topo_best_domain(allowed, c->ndomains, sh->nodes);
    if (best >= 0)
        topo_take(c, c->domains[best]);
    else if (topo_best_effort(sh) && c->ncollected >= (size_t)sh->nodes)
        topo_take_fullest(c, allowed);
    else if (topo_required(sh))
        r = topo_best_domain(counts, c->ndomains, sh->nodes) >= 0 ? PLACE_CLAIMED
                                                                  : PLACE_NO_CAPACITY;
    else
        r = c->capacity >= sh->nodes ? PLACE_CLAIMED : PLACE_NO_CAPACITY;
    free(counts);
    if (r != PLACE_OK && claimed_by_lower)
        *claimed_by_lower = c->any_claimed && c->lower_only;
    return r;
}

/* A gang asking for no type still runs on one type: its nodes must be alike (and it is
 * billed by that type). Each type is tried in turn. */
enum place_result place_job(struct sched *s, const struct job *j, int64_t now,
                            struct sched_alloc *allocs, bool *claimed_by_lower, int64_t *held_until)
{
    const struct shape *sh = &s->shapes[j->shape];
    if (held_until)
        *held_until = -1;
    if (!shape_spans_types(sh))
        return place_shape(s, j, sh, now, allocs, claimed_by_lower, held_until, NULL);
    enum place_result best = PLACE_NO_CAPACITY;
    bool lower_only = true;
    for (int t = 1; t < s->ntypes; t++) {
        struct shape typed = shape_typed(sh, t);
        bool lower = false;
        enum place_result r = place_shape(s, j, &typed, now, allocs, &lower, NULL, NULL);
        if (r == PLACE_OK)
            return r;
        if (r == PLACE_CLAIMED) {
            best = PLACE_CLAIMED;
            lower_only &= lower;
        }
    }
    if (claimed_by_lower)
        *claimed_by_lower = best == PLACE_CLAIMED && lower_only;
    return best;
}

static enum place_result place_shape(struct sched *s, const struct job *j, const struct shape *sh,
                                     int64_t now, struct sched_alloc *allocs,
                                     bool *claimed_by_lower, int64_t *held_until,
                                     struct place_memo **rec)
{
    struct place_ctx c = {.rec = rec,
                          .s = s,
                          .j = j,
                          .sh = sh,
                          .now = now,
                          .allocs = allocs,
                          .lower_only = true,
                          .want_lower = claimed_by_lower != NULL,
                          .hold_max =
                              sh->nodes == 1 ? 0 : -1, /* a gang's bound would be its N-th node's */
                          .env = env_warm_anywhere(s, j->env) ? j->env : 0};
    int64_t dur = j->limit_ms > 0 ? j->limit_ms + j->grace_ms : 0;
    c.end = dur ? now + dur : NEVER;
    if (topo_required(sh) || topo_best_effort(sh))
        return place_topo(&c, claimed_by_lower);
    int pools[2], npools = shape_pools(sh, pools);
    for (int p = 0; p < npools; p++)
        if (scan_pool(&c, pools[p]))
            return PLACE_OK;
    if (claimed_by_lower)
        *claimed_by_lower = c.any_claimed && c.lower_only;
    if (held_until && c.any_claimed)
        *held_until = c.hold_max;
    return c.capacity >= sh->nodes ? PLACE_CLAIMED : PLACE_NO_CAPACITY;
}

/* ---- the placement memo (struct place_memo) */

/* Does the scan of place_shape() visit node n for the shape: a node in a bucket (UP), in
 * a pool its rule scans, of a type it scans (the bucket key is then implied by room)? */
static bool scan_visits(const struct sched *s, const struct node *n, const struct shape *sh)
{
    if (!n->in_bucket || !node_pool_allowed(n, (enum pool_rule)sh->pool_rule))
        return false;
    if (sh->gpu_type > 0)
        return n->gpu_type == sh->gpu_type;
    return sh->gpus == 0 || (n->gpu_type >= 1 && n->gpu_type < s->ntypes);
}

static bool memo_current(const struct sched *s, const struct job *j, const struct shape *sh)
{
    const struct place_memo *m = j->place;
    return m && m->live && m->epoch == s->memo_epoch && m->node_epoch == s->node_epoch &&
           m->shape == j->shape && m->pool_rule == sh->pool_rule && m->dur == job_duration(j) &&
           m->logpos <= s->nchlog;
}

/* A fresh memo for the scan about to run (false: out of memory, no memo). */
static bool memo_begin(struct sched *s, struct job *j, const struct shape *sh)
{
    if (!j->place) {
        enum { FIRST = 4 };
        j->place = malloc(sizeof(*j->place) + FIRST * sizeof(j->place->room[0]));
        if (!j->place)
            return false;
        j->place->cap = FIRST;
    }
    struct place_memo *m = j->place;
    m->live = true;
    m->epoch = s->memo_epoch;
    m->node_epoch = s->node_epoch;
    m->shape = j->shape;
    m->pool_rule = sh->pool_rule;
    m->dur = job_duration(j);
    m->nroom = 0;
    return true;
}

/* The memo as of now: from here on, every change of a node is logged after logpos. */
static void memo_stamp(struct sched *s, struct place_memo *m)
{
    m->logpos = s->nchlog;
    s->chlog_mark = s->nchlog;
}

/* Bring the memo to now by looking again at the nodes changed since and at those whose
 * refusal ran out; the others answer as they did. Returns the nodes that let the job in
 * (a full scan is due once they are enough), or -1 when the memo had to be given up. */
static int memo_recheck(struct sched *s, struct job *j, const struct shape *sh, int64_t now)
{
    struct place_memo *m = j->place;
    const uint32_t *nodes;
    size_t n = changes_since(s, m->logpos, now, now, &nodes); /* marks them visited */
    if (n == SIZE_MAX)
        return -1;
    int keep = 0;
    for (int i = 0; i < m->nroom; i++) {
        const struct place_memo_node *e = &m->room[i];
        if (s->nodes[e->node].visit == s->visit)
            continue; /* changed: looked at below */
        if (e->until > now)
            m->room[keep++] = *e;
        else
            n = changes_also(s, n, e->node);
    }
    m->nroom = keep;
    struct place_ctx c = {.s = s, .j = j, .sh = sh, .now = now, .hold_max = -1, .rec = &j->place};
    int64_t dur = job_duration(j);
    c.end = dur >= NEVER - now ? NEVER : now + dur;
    int allowed = 0;
    for (size_t i = 0; i < n && j->place->live; i++)
        if (scan_visits(s, &s->nodes[nodes[i]], sh) && node_room_allows(&c, nodes[i]))
            allowed++;
    if (!j->place->live)
        return -1;
    memo_stamp(s, j->place);
    return allowed;
}

/* sched_check(): what a current memo rests on holds. Its entries are distinct nodes; every
 * node unchanged since the memo (not in the change log after logpos) has room for the
 * shape exactly when the memo lists it. 0, or -1 with the first node that breaks it. */
int place_memo_check(const struct sched *s, const struct job *j, uint32_t *bad)
{
    const struct shape *sh = &s->shapes[j->shape];
    if (!memo_current(s, j, sh))
        return 0;
    const struct place_memo *m = j->place;
    /* 1: unchanged, 2: listed as well */
    *bad = NONE32;
    if (m->nroom > m->cap || m->cap > PLACE_MEMO_MAX)
        return -1;
    uint8_t *mark = malloc(s->nnodes ? s->nnodes : 1);
    if (!mark)
        return 0; /* out of memory: nothing to check with */
    memset(mark, 1, s->nnodes);
    for (size_t i = m->logpos; i < s->nchlog; i++)
        mark[s->chlog[i]] = 0;
    int rc = 0;
    for (int i = 0; i < m->nroom && rc == 0; i++) {
        uint32_t idx = m->room[i].node;
        if (idx >= s->nnodes || mark[idx] == 2) {
            *bad = idx;
            rc = -1;
        } else if (mark[idx] == 1) {
            mark[idx] = 2;
        }
    }
    for (uint32_t idx = 0; idx < s->nnodes && rc == 0; idx++) {
        const struct node *n = &s->nodes[idx];
        bool room =
            scan_visits(s, n, sh) && node_free_fit(n, sh) && node_matches_selset(s, n, sh->selset);
        if (mark[idx] && room != (mark[idx] == 2)) {
            *bad = idx;
            rc = -1;
        }
    }
    free(mark);
    return rc;
}

int64_t place_memo_wake(const struct sched *s, const struct job *j, int64_t now)
{
    const struct shape *sh = &s->shapes[j->shape];
    if (shape_spans_types(sh) || topo_required(sh) || topo_best_effort(sh) ||
        !memo_current(s, j, sh))
        return now; /* no memo: nothing proves how long the claims refuse it */
    int64_t wake = NEVER;
    for (int i = 0; i < j->place->nroom; i++)
        if (j->place->room[i].until < wake)
            wake = j->place->room[i].until;
    return wake;
}

/* The memo's answer against a full scan's (sched_verify_memos): sched_check() fails on a
 * difference. */
static void memo_verify_place(struct sched *s, const struct job *j, int64_t now,
                              enum place_result said)
{
    if (!cache_verifying(s, SCHED_CACHE_PLACE_MEMO))
        return;
    struct sched_alloc *scratch = calloc((size_t)s->shapes[j->shape].nodes, sizeof(*scratch));
    if (scratch)
        cache_verified(s, SCHED_CACHE_PLACE_MEMO, j->id,
                       place_job(s, j, now, scratch, NULL, NULL) == said);
    free(scratch);
}

enum place_result place_job_memo(struct sched *s, struct job *j, int64_t now,
                                 struct sched_alloc *allocs)
{
    const struct shape *sh = &s->shapes[j->shape];
    if (shape_spans_types(sh) || topo_required(sh) || topo_best_effort(sh))
        return place_job(s, j, now, allocs, NULL, NULL); /* no memo: it picks among all */
    if (memo_current(s, j, sh)) {
        int allowed = memo_recheck(s, j, sh, now);
        if (allowed >= 0 && allowed < sh->nodes) {
            enum place_result pr = j->place->nroom >= sh->nodes ? PLACE_CLAIMED : PLACE_NO_CAPACITY;
            memo_verify_place(s, j, now, pr);
            return pr;
        }
    }
    bool rec = memo_begin(s, j, sh);
    enum place_result pr = place_shape(s, j, sh, now, allocs, NULL, NULL, rec ? &j->place : NULL);
    if (rec && pr == PLACE_OK)
        j->place->live = false;
    else if (rec && j->place->live)
        memo_stamp(s, j->place);
    return pr;
}

/* Would a reserved-pool node take the shape right now (ignoring its pool rule)? Lets a
 * low tier blocked only by the reserved zone say so (ReservedZone). */
bool reserved_could_fit(struct sched *s, const struct shape *sh)
{
    for (int t = sh->gpu_type > 0 ? sh->gpu_type : 0;
         t < (sh->gpu_type > 0 ? sh->gpu_type + 1 : s->ntypes); t++)
        for (int k = sh->gpus; k < NBUCKETS; k++)
            for (uint32_t idx = s->buckets[t][POOL_RESERVED][k]; idx != NONE32;
                 idx = s->nodes[idx].next)
                if (node_free_fit(&s->nodes[idx], sh) &&
                    node_matches_selset(s, &s->nodes[idx], sh->selset))
                    return true;
    return false;
}
