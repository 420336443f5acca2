/*
 * place.c - where a job can start now: best-fit placement (floor 2).
 *
 * Best fit is the first node that fits in the lowest bucket (nodes.c, floor 1) at or above
 * the request, so whole nodes stay free for big jobs; a job asking for a type looks only at
 * that type's buckets, so a type is never substituted. Gang jobs take N distinct nodes or
 * nothing (docs/scheduling.md §3).
 */
#include "core/pieces.h"

#include <string.h>

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
