/*
 * nodes.c - the node index (floor 1): node states, the reserved zone, and the
 * free-capacity buckets of UP nodes keyed by (GPU type, pool, free GPUs; free CPUs for
 * CPU-only nodes), with the fit primitives the policy pieces ask of a node and the
 * candidates of a shape. Which nodes a job gets is place.c's decision (floor 2).
 */
#include "core/nodes.h"
#include "core/changes.h"
#include "core/containers.h"
#include "core/model.h"
#include "core/topo.h"

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

static void bucket_insert(struct sched *s, uint32_t idx)
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
    return topo_node_in_part(n, sh) && node_matches_selset(s, n, sh->selset);
}

bool reservation_nodes_usable(const struct sched *s, const struct reservation *r,
                              const struct job *j)
{
    const struct shape *sh = &s->shapes[j->shape];
    for (int i = 0; i < r->nnodes; i++) {
        const struct node *n = &s->nodes[r->nodes[i]];
        if (!node_schedulable(n) || !node_static_fit(s, n, sh, true))
            return false;
    }
    return topo_nodes_ok(s, sh, r->nodes, r->nnodes);
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

void shape_parts_begin(struct sched *s, const struct shape *sh, struct shape_parts *it)
{
    memset(it, 0, sizeof(*it));
    it->base = *sh;
    it->spans = shape_spans_types(sh);
    it->t = it->spans ? 1 : 0;
    it->t_end = it->spans ? s->ntypes : 1;
    it->ndomains = 1;
    if (topo_required(sh)) {
        it->ndomains = topo_domains(s, sh->topo_key, &it->domains);
    } else if (topo_best_effort(sh)) {
        it->free_first = true; /* every node, then each domain alone */
        it->ndomains = 1 + topo_domains(s, sh->topo_key, &it->domains);
    }
}

bool shape_part_next(struct shape_parts *it, struct shape *out)
{
    if (it->t >= it->t_end || it->ndomains == 0)
        return false;
    *out = it->base;
    if (it->spans)
        out->gpu_type = (int16_t)it->t;
    if (it->domains && !(it->free_first && it->d == 0)) {
        out->topo_pinned = true;
        out->topo_value = it->domains[it->d - (it->free_first ? 1 : 0)];
    }
    if (++it->d == it->ndomains) {
        it->d = 0;
        it->t++;
    }
    return true;
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

static bool node_has_label_ids(const struct node *n, uint32_t kid, uint32_t vid)
{
    for (int i = 0; i < n->nlabels; i++)
        if (n->label_ids[i].key == kid && n->label_ids[i].value == vid)
            return true;
    return false;
}

void reserved_zone_recompute(struct sched *s)
{
    s->profiles_dirty = true;
    int total = 0;
    for (size_t i = 0; i < s->nnodes; i++)
        total += s->nodes[i].gpus;
    double budget = s->policy.reserved_max_ratio * total;
    int used = 0;
    uint32_t kid = strtab_find(&s->strings, s->policy.reserved_label_key);
    uint32_t vid = strtab_find(&s->strings, s->policy.reserved_label_value);
    for (size_t i = 0; i < s->nnodes; i++) {
        struct node *n = &s->nodes[i];
        bool want =
            kid && vid && node_has_label_ids(n, kid, vid) && used + n->gpus <= budget + 1e-9;
        if (want)
            used += n->gpus;
        if (want != n->reserved) {
            s->memo_epoch++; /* pools and borrowers changed (struct preempt_memo) */
            node_moved(s, n);
            bool in = n->in_bucket;
            if (in)
                bucket_remove(s, (uint32_t)i);
            n->reserved = want;
            if (in)
                bucket_insert(s, (uint32_t)i);
        }
    }
}

/* Recompute the reserved zone once after a burst of node changes. */
void zone_refresh(struct sched *s)
{
    if (s->zone_dirty) {
        reserved_zone_recompute(s);
        s->zone_dirty = false;
    }
}

/* A node's state, capacity, labels or pool moved: what reads the nodes as a whole reads
 * node_epoch; the preemption memos, which read the nodes one by one, find it in the change
 * log and search it again (a relabel or a drain once voided every memo through memo_epoch,
 * and every job holding a reservation searched the whole cluster again: issue 34). */
void node_moved(struct sched *s, struct node *n)
{
    s->node_epoch++;
    node_change_log(s, n);
}

/* Set the state and keep the bucket index in step: only UP nodes take new work. */
void node_set_state_internal(struct sched *s, struct node *n, enum sched_node_state st)
{
    uint32_t idx = (uint32_t)(n - s->nodes);
    node_moved(s, n);
    if (st == SCHED_NODE_DRAINING && n->jobs.n == 0)
        st = SCHED_NODE_DRAINED;
    n->state = (uint8_t)st;
    bool want = st == SCHED_NODE_UP;
    if (want && !n->in_bucket)
        bucket_insert(s, idx);
    else if (!want && n->in_bucket)
        bucket_remove(s, idx);
}
