/*
 * shapes.c - the shape index (floor 1): the resource requests of jobs, deduplicated,
 * with their selector sets interned and the pool rule of their tier.
 */
#include "core/shapes.h"
#include "core/containers.h"
#include "core/model.h"
#include "core/topo.h"
#include "core/victims.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum pool_rule job_pool_rule(const struct sched *s, const struct job *j, int rank)
{
    if (rank <= s->reserved_min_rank)
        return POOL_RULE_RESERVED_FIRST;
    if (job_preemptible_class(s, j) && j->preempt_count < s->policy.max_preemptions)
        return POOL_RULE_BORROW;
    return POOL_RULE_NORMAL_ONLY;
}

static int cmp_pairs(const void *a, const void *b)
{
    const struct sel_pair *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    if (x->expr != y->expr)
        return (int)x->expr - (int)y->expr;
    return (int)x->negate - (int)y->negate;
}

/* Intern a job's selectors and feature constraint as a canonical (sorted) set; 0 for
 * none. The constraint is one more pair whose value is the expression (model.c reads it
 * through constraint.c), so alike jobs share a set and its per-node cache. */
static uint32_t selset_intern(struct sched *s, const struct sched_selector *sel, int nsel,
                              const char *constraint)
{
    int n = nsel + (constraint ? 1 : 0);
    if (n == 0)
        return 0;
    struct sel_pair tmp[SCHED_MAX_LABELS + 1];
    memset(tmp, 0, sizeof(tmp));
    for (int i = 0; i < nsel; i++) {
        tmp[i].key = strtab_intern(&s->strings, sel[i].key);
        tmp[i].value = strtab_intern(&s->strings, sel[i].value);
        tmp[i].negate = sel[i].negate;
        if (!tmp[i].key || !tmp[i].value)
            return NONE32;
    }
    if (constraint) {
        tmp[nsel].key = strtab_intern(&s->strings, "@constraint");
        tmp[nsel].value = strtab_intern(&s->strings, constraint);
        tmp[nsel].expr = true;
        if (!tmp[nsel].key || !tmp[nsel].value)
            return NONE32;
    }
    qsort(tmp, n, sizeof(tmp[0]), cmp_pairs);
    for (size_t i = 1; i < s->nselsets; i++) {
        const struct selset *ss = &s->selsets[i];
        if (ss->n != n)
            continue;
        bool same = true;
        for (int k = 0; k < n && same; k++)
            same = cmp_pairs(&ss->pairs[k], &tmp[k]) == 0;
        if (same)
            return (uint32_t)i;
    }
    if (grow((void **)&s->selsets, &s->selsets_cap, s->nselsets + 1, sizeof(*s->selsets)) < 0)
        return NONE32;
    struct sel_pair *pairs = malloc(n * sizeof(*pairs));
    if (!pairs)
        return NONE32;
    memcpy(pairs, tmp, n * sizeof(*pairs));
    s->selsets[s->nselsets].pairs = pairs;
    s->selsets[s->nselsets].n = n;
    s->nselsets++;
    victim_sel_recount(s, (uint32_t)s->nselsets - 1); /* the victim gate counts it too */
    return (uint32_t)s->nselsets - 1;
}

static bool shape_equal(const struct shape *a, const struct shape *b)
{
    return a->gpu_type == b->gpu_type && a->pool_rule == b->pool_rule && a->gpus == b->gpus &&
           a->cpus == b->cpus && a->nodes == b->nodes && a->mem_mb == b->mem_mb &&
           a->selset == b->selset && a->topo_key == b->topo_key && a->topo_mode == b->topo_mode;
}

static uint64_t shape_hash(const struct shape *sh, uint64_t attempt)
{
    int64_t f[9] = {sh->gpu_type, sh->pool_rule, sh->gpus,     sh->cpus,     sh->nodes,
                    sh->mem_mb,   sh->selset,    sh->topo_key, sh->topo_mode};
    uint64_t h = hash_bytes(f, sizeof(f), attempt);
    return h >= UINT64_MAX - 1 ? h - 2 : h;
}

/* Find or add the shape of job `j` at effective rank `rank`; counts it as pending when
 * the job is pending. Returns the shape index (0 on allocation failure, shape 0 being a
 * valid but pessimistic fallback). */
uint32_t shape_intern(struct sched *s, const struct job *j, int rank, int *err)
{
    struct shape key;
    memset(&key, 0, sizeof(key));
    key.gpu_type = j->gpu_type;
    key.pool_rule = (uint8_t)job_pool_rule(s, j, rank);
    key.gpus = j->gpus;
    key.cpus = j->cpus;
    key.nodes = j->nodes;
    key.mem_mb = j->mem_mb;
    uint32_t ss = selset_intern(s, j->selectors, j->nselectors, j->constraint);
    key.selset = ss == NONE32 ? 0 : ss;
    topo_of_job(s, j, &key.topo_key, &key.topo_mode);
    uint32_t idx = NONE32;
    uint64_t attempt = 0, v;
    while (u64map_get(&s->shape_index, shape_hash(&key, attempt), &v)) {
        if (shape_equal(&s->shapes[v], &key)) {
            idx = (uint32_t)v;
            break;
        }
        attempt++;
    }
    if (idx == NONE32) {
        if (grow((void **)&s->shapes, &s->shapes_cap, s->nshapes + 1, sizeof(*s->shapes)) < 0 ||
            u64map_put(&s->shape_index, shape_hash(&key, attempt), s->nshapes) < 0) {
            if (err)
                *err = -ENOMEM;
            return 0;
        }
        idx = (uint32_t)s->nshapes++;
        s->shapes[idx] = key;
    }
    if (j->state == SCHED_PENDING)
        s->shapes[idx].pending++;
    return idx;
}

/* Re-derive a pending job's shape (its pool rule depends on its effective tier, its
 * topology on its class's). */
void shape_rule_refresh(struct sched *s, struct job *j)
{
    const struct shape *sh = &s->shapes[j->shape];
    uint32_t key;
    uint8_t mode;
    topo_of_job(s, j, &key, &mode);
    if (sh->pool_rule == job_pool_rule(s, j, job_eff_rank(s, j)) && sh->topo_key == key &&
        sh->topo_mode == mode)
        return; /* unchanged: the common case on a refresh */
    s->shapes[j->shape].pending--;
    j->shape = shape_intern(s, j, job_eff_rank(s, j), NULL);
}
