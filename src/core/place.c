/*
 * place.c - where a job can run: the free-capacity index and best-fit placement.
 *
 * UP nodes sit in buckets keyed by (GPU type, pool, free GPUs; free CPUs for CPU-only
 * nodes). Best fit is the first node
 * that fits in the lowest bucket at or above the request, so whole nodes stay free for
 * big jobs; a job asking for a type looks only at that type's buckets, so a type is never
 * substituted. Gang jobs take N distinct nodes or nothing (docs/scheduling.md §3).
 */
#include "core/internal.h"

#include <string.h>

/* The bucket a node sits in: its free GPUs, or for a CPU-only node (type 0) its free
 * CPUs, saturated at the last bucket. Best fit then holds for CPU jobs too: on a cluster of
 * CPU nodes running many small jobs, a placement looks at the nodes with room first
 * instead of every node. */
int node_bucket_key(const struct node *n)
{
    int f = n->gpu_type == 0 ? n->cpus - n->cpus_used : n->gpus - n->gpus_used;
    if (f < 0)
        f = 0;
    return f > NBUCKETS - 1 ? NBUCKETS - 1 : f;
}

static uint32_t *bucket_head(struct sched *s, const struct node *n, int key)
{
    return &s->buckets[n->gpu_type][n->reserved ? POOL_RESERVED : POOL_NORMAL][key];
}

void bucket_insert(struct sched *s, uint32_t idx)
{
    struct node *n = &s->nodes[idx];
    int f = node_bucket_key(n);
    uint32_t *head = bucket_head(s, n, f);
    n->prev = NONE32;
    n->next = *head;
    if (*head != NONE32)
        s->nodes[*head].prev = idx;
    *head = idx;
    n->in_bucket = true;
    n->bucket_free = (int16_t)f;
    n->bucket_pool = n->reserved ? POOL_RESERVED : POOL_NORMAL;
}

void bucket_remove(struct sched *s, uint32_t idx)
{
    struct node *n = &s->nodes[idx];
    if (!n->in_bucket)
        return;
    uint32_t *head = &s->buckets[n->gpu_type][n->bucket_pool][n->bucket_free];
    if (n->prev != NONE32)
        s->nodes[n->prev].next = n->next;
    else
        *head = n->next;
    if (n->next != NONE32)
        s->nodes[n->next].prev = n->prev;
    n->prev = n->next = NONE32;
    n->in_bucket = false;
}

void bucket_update(struct sched *s, uint32_t idx)
{
    struct node *n = &s->nodes[idx];
    if (n->in_bucket && n->bucket_free != node_bucket_key(n)) {
        bucket_remove(s, idx);
        bucket_insert(s, idx);
    }
}

bool node_schedulable(const struct node *n)
{
    return n->state == SCHED_NODE_UP;
}

bool node_pool_allowed(const struct node *n, enum pool_rule rule)
{
    return !n->reserved || rule != POOL_RULE_NORMAL_ONLY;
}

bool node_free_fit(const struct node *n, const struct shape *sh)
{
    return n->gpus - n->gpus_used >= sh->gpus && n->cpus - n->cpus_used >= sh->cpus &&
           n->mem_mb - n->mem_used >= sh->mem_mb;
}

/* Could the node ever take the shape (type, capacity when empty, selectors, pool)? */
bool node_static_fit(const struct sched *s, const struct node *n, const struct shape *sh,
                     bool pool_ok_only)
{
    if (sh->gpu_type > 0 && n->gpu_type != sh->gpu_type)
        return false;
    if (n->gpus < sh->gpus || n->cpus < sh->cpus || n->mem_mb < sh->mem_mb)
        return false;
    if (pool_ok_only && !node_pool_allowed(n, (enum pool_rule)sh->pool_rule))
        return false;
    return node_matches_selset(s, n, sh->selset);
}

uint64_t pick_gpus(const struct node *n, int count)
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
int shape_static_reason(struct sched *s, struct shape *sh)
{
    if (sh->static_cycle == s->node_epoch)
        return sh->static_reason;
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
    sh->static_reason = (uint8_t)(!type_ok   ? SCHED_R_GPU_TYPE
                                  : !sel_ok  ? SCHED_R_NODE_SELECTOR
                                  : !pool_ok ? SCHED_R_RESERVED_ZONE
                                             : SCHED_R_NONE);
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
};

static bool already_chosen(const struct place_ctx *c, uint32_t idx)
{
    for (int i = 0; i < c->found; i++)
        if (c->allocs[i].node == idx)
            return true;
    return false;
}

/* Walk one bucket list; returns true when the job has all its nodes. */
static bool scan_bucket(struct place_ctx *c, uint32_t head)
{
    struct sched *s = c->s;
    const struct shape *sh = c->sh;
    for (uint32_t idx = head; idx != NONE32; idx = s->nodes[idx].next) {
        const struct node *n = &s->nodes[idx];
        if (!node_free_fit(n, sh) || !node_matches_selset(s, n, sh->selset))
            continue;
        if (already_chosen(c, idx))
            continue;
        c->capacity++;
        bool lower = true;
        int64_t hold = NEVER;
        if (n->nclaims && !claims_allow(s, n, c->j->reservation, c->now, c->end, sh->gpus, sh->cpus,
                                        sh->mem_mb, c->j, c->want_lower ? &lower : NULL, &hold)) {
            c->any_claimed = true;
            c->lower_only &= lower;
            if (c->hold_max >= 0 && (hold < 0 || hold > c->hold_max))
                c->hold_max = hold;
            continue;
        }
        struct sched_alloc *a = &c->allocs[c->found++];
        a->node = idx;
        a->gpus = sh->gpus;
        a->cpus = sh->cpus;
        a->mem_mb = sh->mem_mb;
        a->gpu_mask = pick_gpus(n, sh->gpus);
        if (c->found == sh->nodes)
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
        for (int k = sh->cpus < NBUCKETS - 1 ? sh->cpus : NBUCKETS - 1; k < NBUCKETS; k++) {
            uint32_t head = s->buckets[0][pool][k];
            if (head != NONE32 && scan_bucket(c, head))
                return true;
        }
    int from = type > 0 ? type : 1, to = type > 0 ? type + 1 : s->ntypes;
    for (int k = from < to ? gpus : NBUCKETS; k < NBUCKETS; k++)
        for (int t = from; t < to; t++) {
            uint32_t head = s->buckets[t][pool][k];
            if (head != NONE32 && scan_bucket(c, head))
                return true;
        }
    return false;
}

bool shape_spans_types(const struct shape *sh)
{
    return sh->nodes > 1 && sh->gpus > 0 && sh->gpu_type <= 0;
}

struct shape shape_typed(const struct shape *sh, int type)
{
    struct shape t = *sh;
    t.gpu_type = (int16_t)type;
    return t;
}

static enum place_result place_shape(struct sched *s, const struct job *j, const struct shape *sh,
                                     int64_t now, struct sched_alloc *allocs,
                                     bool *claimed_by_lower, int64_t *held_until);

/* A gang asking for no type still runs on one type: its nodes must be alike (and it is
 * billed by that type). Each type is tried in turn. */
enum place_result place_job(struct sched *s, const struct job *j, int64_t now,
                            struct sched_alloc *allocs, bool *claimed_by_lower, int64_t *held_until)
{
    const struct shape *sh = &s->shapes[j->shape];
    if (held_until)
        *held_until = -1;
    if (!shape_spans_types(sh))
        return place_shape(s, j, sh, now, allocs, claimed_by_lower, held_until);
    enum place_result best = PLACE_NO_CAPACITY;
    bool lower_only = true;
    for (int t = 1; t < s->ntypes; t++) {
        struct shape typed = shape_typed(sh, t);
        bool lower = false;
        enum place_result r = place_shape(s, j, &typed, now, allocs, &lower, NULL);
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
                                     bool *claimed_by_lower, int64_t *held_until)
{
    struct place_ctx c = {
        .s = s,
        .j = j,
        .sh = sh,
        .now = now,
        .allocs = allocs,
        .lower_only = true,
        .want_lower = claimed_by_lower != NULL,
        .hold_max = sh->nodes == 1 ? 0 : -1}; /* a gang's bound would be its N-th node's */
    int64_t dur = j->limit_ms > 0 ? j->limit_ms + j->grace_ms : 0;
    c.end = dur ? now + dur : NEVER;
    int pools[2], npools = 0;
    switch ((enum pool_rule)sh->pool_rule) {
    case POOL_RULE_RESERVED_FIRST:
        pools[npools++] = POOL_RESERVED;
        pools[npools++] = POOL_NORMAL;
        break;
    case POOL_RULE_BORROW:
        pools[npools++] = POOL_NORMAL;
        pools[npools++] = POOL_RESERVED;
        break;
    default:
        pools[npools++] = POOL_NORMAL;
        break;
    }
    for (int p = 0; p < npools; p++)
        if (scan_pool(&c, pools[p]))
            return PLACE_OK;
    if (claimed_by_lower)
        *claimed_by_lower = c.any_claimed && c.lower_only;
    if (held_until && c.any_claimed)
        *held_until = c.hold_max;
    return c.capacity >= sh->nodes ? PLACE_CLAIMED : PLACE_NO_CAPACITY;
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

/* One node of shape_candidates_each() below: up (in a bucket), of the shape's type, in a
 * pool the shape may use, statically fit. */
bool node_is_candidate(const struct sched *s, const struct node *n, const struct shape *sh)
{
    if (!n->in_bucket || (sh->gpu_type > 0 && n->gpu_type != sh->gpu_type))
        return false;
    if (n->bucket_pool == POOL_RESERVED && sh->pool_rule == POOL_RULE_NORMAL_ONLY)
        return false;
    return node_static_fit(s, n, sh, true);
}

void shape_candidates_each(struct sched *s, const struct shape *sh,
                           void (*fn)(struct sched *s, uint32_t node, void *ctx), void *ctx)
{
    for (int t = sh->gpu_type > 0 ? sh->gpu_type : 0;
         t < (sh->gpu_type > 0 ? sh->gpu_type + 1 : s->ntypes); t++) {
        for (int pool = 0; pool < NPOOLS; pool++) {
            if (pool == POOL_RESERVED && sh->pool_rule == POOL_RULE_NORMAL_ONLY)
                continue;
            for (int k = 0; k < NBUCKETS; k++)
                for (uint32_t idx = s->buckets[t][pool][k]; idx != NONE32; idx = s->nodes[idx].next)
                    if (node_static_fit(s, &s->nodes[idx], sh, true))
                        fn(s, idx, ctx);
        }
    }
}
