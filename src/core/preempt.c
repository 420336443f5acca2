/*
 * preempt.c - preemption (docs/scheduling.md §5): who may be stopped to make room for a
 * blocked job, and which victims cost least.
 *
 * Guards, all checked for every victim: never a class that is not preemptible (service,
 * interactive); never a job already stopping (so no victim is chosen twice); never a job
 * preempted max_preemptions times; never one younger than min_runtime or past its
 * class's protection time, except low-tier work borrowing the reserved zone, which high
 * tiers reclaim at once. A victim must be of a lower effective tier, or a borrower of a
 * project above its guarantee while the preemptor's project is below its own.
 * Order among victims: lowest tier, then class preempt_order (exploration, experiment,
 * training), then least work lost, then jobs that declared a checkpoint signal first.
 */
#include "core/internal.h"

#include <stdlib.h>
#include <string.h>

/* Potential victim for somebody at `now`, ignoring who: the counter lets a cycle skip
 * preemption entirely when nobody could be preempted. */
static bool victim_for_anyone(const struct sched *s, const struct job *v, int64_t now)
{
    const struct sched_class_spec *c = job_class(s, v);
    if (!c->preemptible || v->preempt_count >= s->policy.max_preemptions)
        return false;
    if (v->state != SCHED_RUNNING && v->state != SCHED_STARTING)
        return false;
    if (v->flags & JF_BORROWER)
        return true;
    int64_t age = now - v->start_ms;
    return age >= s->policy.min_runtime_ms && (c->protect_after_ms == 0 || age < c->protect_after_ms);
}

void victim_mark(struct sched *s, struct job *v, bool eligible)
{
    bool was = v->flags & JF_VICTIM_ELIGIBLE;
    if (was == eligible)
        return;
    int sign = eligible ? 1 : -1;
    if (eligible) {
        v->flags |= JF_VICTIM_ELIGIBLE;
        v->victim_rank = (uint8_t)job_eff_rank(s, v);
    } else {
        v->flags &= (uint8_t)~JF_VICTIM_ELIGIBLE;
    }
    s->eligible_victims += sign;
    for (int i = 0; i < v->nallocs; i++) {
        struct node *n = &s->nodes[v->allocs[i].node];
        n->victim_gpus[v->victim_rank] += sign * v->allocs[i].gpus;
        n->victim_cpus[v->victim_rank] += sign * v->allocs[i].cpus;
    }
}

void victim_eligibility_update(struct sched *s, struct job *v, int64_t now)
{
    victim_mark(s, v, victim_for_anyone(s, v, now));
    if (v->nallocs == 0 || !job_class(s, v)->preemptible)
        return;
    int64_t eligible_at = v->start_ms + s->policy.min_runtime_ms;
    if (now < eligible_at)
        deadline_push(s, eligible_at, v->id, DL_ELIGIBLE);
    int64_t protect = job_class(s, v)->protect_after_ms;
    if (protect > 0 && now < v->start_ms + protect)
        deadline_push(s, v->start_ms + protect, v->id, DL_PROTECT);
}

static bool under_guarantee_after(const struct sched *s, const struct job *j)
{
    const struct project *p = &s->projects[j->project];
    return p->gpus_in_use + j->gpus * j->nodes <= p->spec.guarantee_gpus + 1e-9;
}

static bool over_guarantee(const struct sched *s, const struct job *v)
{
    const struct project *p = &s->projects[v->project];
    return p->gpus_in_use > p->spec.guarantee_gpus + 1e-9;
}

bool victim_eligible(const struct sched *s, const struct job *v, const struct job *j,
                     const struct node *n, int64_t now)
{
    if (v == j || (v->state != SCHED_RUNNING && v->state != SCHED_STARTING))
        return false;
    const struct sched_class_spec *c = job_class(s, v);
    if (!c->preemptible || v->preempt_count >= s->policy.max_preemptions)
        return false;
    int rv = job_eff_rank(s, v), rj = job_eff_rank(s, j);
    if (rv < rj)
        return false; /* never a higher tier */
    bool reclaim = rv == rj && v->project != j->project && over_guarantee(s, v) &&
                   under_guarantee_after(s, j);
    if (rv == rj && !reclaim)
        return false;
    /* borrowed reserved-zone room goes back to the tiers it is for at once */
    if ((v->flags & JF_BORROWER) && n->reserved && rj <= s->reserved_min_rank && rv > rj)
        return true;
    int64_t age = now - v->start_ms;
    if (age < s->policy.min_runtime_ms)
        return false;
    return c->protect_after_ms == 0 || age < c->protect_after_ms;
}

struct victim {
    uint32_t slot;
    int rank, order, ckpt_last;
    int64_t lost;
    int gpus, cpus;
    int64_t mem;
};

static int cmp_victims(const void *a, const void *b)
{
    const struct victim *x = a, *y = b;
    if (x->rank != y->rank)
        return y->rank - x->rank; /* higher rank number = lower tier goes first */
    if (x->order != y->order)
        return x->order - y->order;
    if (x->lost != y->lost)
        return x->lost < y->lost ? -1 : 1;
    if (x->ckpt_last != y->ckpt_last)
        return x->ckpt_last - y->ckpt_last;
    return (x->slot > y->slot) - (x->slot < y->slot);
}

struct node_plan {
    uint32_t node;
    int nvictims;
    struct victim v[SCHED_MAX_NODE_GPUS + 8];
    /* cost: the highest tier hit (lowest rank number), then count, then work lost */
    int best_rank;
    int64_t lost;
};

static bool plan_fits(const struct node *n, const struct shape *sh, const struct victim *v,
                      int count)
{
    int g = n->gpus - n->gpus_used, c = n->cpus - n->cpus_used;
    int64_t m = n->mem_mb - n->mem_used;
    for (int i = 0; i < count; i++) {
        g += v[i].gpus;
        c += v[i].cpus;
        m += v[i].mem;
    }
    return g >= sh->gpus && c >= sh->cpus && m >= sh->mem_mb;
}

static bool has_sticky_claim(const struct sched *s, const struct node *n, uint32_t own)
{
    for (int i = 0; i < n->nclaims; i++) {
        const struct reservation *r = &s->res[n->claims[i].res];
        if (n->claims[i].res != own && (r->preempting || r->starving))
            return true;
    }
    return false;
}

/* Plan the cheapest victim set on one node; false when even all eligible victims would
 * not make room. */
static bool plan_node(struct sched *s, const struct job *j, uint32_t idx, int64_t now,
                      struct node_plan *p)
{
    const struct node *n = &s->nodes[idx];
    const struct shape *sh = &s->shapes[j->shape];
    p->node = idx;
    p->nvictims = 0;
    p->best_rank = 255;
    p->lost = 0;
    if (node_free_fit(n, sh))
        return sh->nodes > 1; /* a gang may use it as is; a single job was held off it
                                 by a reservation, and victims elsewhere would not help */
    /* upper bound first: everything lower tiers (and, when it may reclaim, its own tier)
       hold here; most nodes fail this without looking at a single job */
    int rj = job_eff_rank(s, j);
    int g = n->gpus - n->gpus_used, c = n->cpus - n->cpus_used;
    for (int r = under_guarantee_after(s, j) ? rj : rj + 1; r < s->policy.ntiers; r++) {
        g += n->victim_gpus[r];
        c += n->victim_cpus[r];
    }
    if (g < sh->gpus || c < sh->cpus)
        return false;
    struct victim all[SCHED_MAX_NODE_GPUS + 8];
    int nall = 0;
    for (uint32_t i = 0; i < n->jobs.n && nall < (int)(sizeof(all) / sizeof(all[0])); i++) {
        const struct job *v = &s->jobs[n->jobs.v[i]];
        if (!victim_eligible(s, v, j, n, now))
            continue;
        for (int a = 0; a < v->nallocs; a++) {
            if (v->allocs[a].node != idx)
                continue;
            struct victim *x = &all[nall++];
            x->slot = n->jobs.v[i];
            x->rank = job_eff_rank(s, v);
            x->order = job_class(s, v)->preempt_order;
            x->lost = now - (v->ckpt_ms > v->start_ms ? v->ckpt_ms : v->start_ms);
            x->ckpt_last = (v->flags & JF_CKPT_SIGNAL) ? 0 : 1;
            x->gpus = v->allocs[a].gpus;
            x->cpus = v->allocs[a].cpus;
            x->mem = v->allocs[a].mem_mb;
        }
    }
    qsort(all, nall, sizeof(all[0]), cmp_victims);
    int take = 0;
    while (take < nall && !plan_fits(n, sh, all, take))
        take++;
    if (!plan_fits(n, sh, all, take))
        return false;
    /* drop victims the others already cover, most valuable first */
    for (int i = take - 1; i >= 0; i--) {
        struct victim saved = all[i];
        memmove(&all[i], &all[i + 1], (take - i - 1) * sizeof(all[0]));
        if (plan_fits(n, sh, all, take - 1)) {
            take--;
        } else {
            memmove(&all[i + 1], &all[i], (take - i - 1) * sizeof(all[0]));
            all[i] = saved;
        }
    }
    memcpy(p->v, all, take * sizeof(all[0]));
    p->nvictims = take;
    for (int i = 0; i < take; i++) {
        if (all[i].rank < p->best_rank)
            p->best_rank = all[i].rank;
        p->lost += all[i].lost;
    }
    return true;
}

/* Is plan a cheaper than plan b? */
static bool plan_cheaper(const struct node_plan *a, const struct node_plan *b)
{
    if (a->best_rank != b->best_rank)
        return a->best_rank > b->best_rank;
    if (a->nvictims != b->nvictims)
        return a->nvictims < b->nvictims;
    return a->lost < b->lost;
}

static void plans_keep_best(struct node_plan *best, int *nbest, int want,
                            const struct node_plan *p)
{
    if (*nbest < want) {
        best[(*nbest)++] = *p;
    } else {
        int worst = 0;
        for (int i = 1; i < *nbest; i++)
            if (plan_cheaper(&best[worst], &best[i]))
                worst = i;
        if (!plan_cheaper(p, &best[worst]))
            return;
        best[worst] = *p;
    }
}

/* Signal the victims and reserve their room for `j`. */
static int preempt_apply(struct sched *s, struct job *j, struct node_plan *plans, int nplans,
                         int64_t now)
{
    uint32_t nodes[SCHED_MAX_JOB_NODES];
    uint64_t victims[SCHED_MAX_JOB_NODES];
    int nv = 0;
    int64_t start = now;
    for (int p = 0; p < nplans; p++) {
        nodes[p] = plans[p].node;
        for (int i = 0; i < plans[p].nvictims; i++) {
            struct job *v = &s->jobs[plans[p].v[i].slot];
            if (v->state == SCHED_STOPPING)
                continue; /* a gang victim already hit on another node */
            job_stop(s, v, SCHED_STOP_PREEMPT, v->signal, v->grace_ms, j->id, now);
            if (v->kill_at_ms > start)
                start = v->kill_at_ms;
            if (nv < SCHED_MAX_JOB_NODES)
                victims[nv++] = v->id;
        }
    }
    if (nv == 0)
        return -1;
    int64_t dur = j->limit_ms > 0 ? j->limit_ms + j->grace_ms : NEVER;
    int64_t end = dur >= NEVER - start ? NEVER : start + dur;
    uint32_t r = reservation_add(s, j, start, end, nodes, nplans, true, false);
    if (r != NONE32) {
        s->res[r].victims = malloc(nv * sizeof(*victims));
        if (s->res[r].victims) {
            memcpy(s->res[r].victims, victims, nv * sizeof(*victims));
            s->res[r].nvictims = nv;
        }
    }
    return 0;
}

struct preempt_search {
    struct job *j;
    int64_t now;
    struct node_plan *best, *cur;
    int nbest, want;
};

static void preempt_visit(struct sched *s, uint32_t idx, void *ctx)
{
    struct preempt_search *ps = ctx;
    if (has_sticky_claim(s, &s->nodes[idx], ps->j->reservation))
        return;
    if (plan_node(s, ps->j, idx, ps->now, ps->cur))
        plans_keep_best(ps->best, &ps->nbest, ps->want, ps->cur);
}

int preempt_for(struct sched *s, struct job *j, int64_t now)
{
    const struct shape *sh = &s->shapes[j->shape];
    struct preempt_search ps = {.j = j, .now = now, .want = sh->nodes};
    ps.best = malloc((size_t)ps.want * sizeof(*ps.best));
    ps.cur = malloc(sizeof(*ps.cur));
    int rc = -1;
    if (ps.best && ps.cur) {
        shape_candidates_each(s, sh, preempt_visit, &ps);
        if (ps.nbest == ps.want)
            rc = preempt_apply(s, j, ps.best, ps.nbest, now);
    }
    free(ps.best);
    free(ps.cur);
    return rc;
}
