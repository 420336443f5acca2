/*
 * preempt.c - preemption, floor 2 (docs/scheduling.md §5): who may be stopped to make room for a
 * blocked job, and which victims cost least.
 *
 * Guards, all checked for every victim: never a class that is not preemptible (service,
 * interactive); never a job already stopping (so no victim is chosen twice); never a job
 * preempted max_preemptions times or past its class's protection time, unless it has no
 * time limit (immunity would let it block a starving job forever); never one younger than
 * min_runtime, except low-tier work borrowing the reserved zone, which high
 * tiers reclaim at once. A victim must be of a lower effective tier, or a borrower of a
 * project above its guarantee while the preemptor's project is below its own.
 * Order among victims: lowest tier, then class preempt_order (exploration, experiment,
 * training), then least work lost, then jobs that declared a checkpoint signal first.
 */
#include "core/preempt.h"
#include "core/caches.h"
#include "core/model.h"
#include "core/group.h"
#include "core/nodes.h"
#include "core/claims.h"
#include "core/lifecycle.h"
#include "core/topo.h"

#include <stdlib.h>
#include <string.h>

static bool over_guarantee(const struct sched *s, const struct job *v);

/* Recount reclaimable_at from the projects' counters when a borrower may have appeared;
 * with `sel`, and when one has, reclaimable_sel from the borrowers' nodes (only a job with
 * selectors reads it: a job without any asks for no walk over the nodes). */
static void reclaimable_refresh(struct sched *s, bool sel)
{
    uint64_t key[5] = {s->victim_changes, s->memo_epoch, s->reclaim_epoch, s->node_epoch,
                       s->nselsets};
    if (!s->reclaim_key_valid || memcmp(key, s->reclaim_key, sizeof(key))) {
        memset(s->reclaimable_at, 0, sizeof(s->reclaimable_at));
        bool any = false;
        for (size_t i = 0; i < s->nprojects; i++) {
            const struct project *p = &s->projects[i];
            const struct group *g = project_group(s, p);
            if (p->gpus_in_use <= p->spec.guarantee_gpus + 1e-9 &&
                !(g && group_over_guarantee(s, g)))
                continue; /* as over_guarantee() judges its jobs */
            for (int r = 0; r < SCHED_MAX_TIERS; r++) {
                s->reclaimable_at[r] |= p->eligible_by_rank[r] > 0;
                any |= p->eligible_by_rank[r] > 0;
            }
        }
        memcpy(s->reclaim_key, key, sizeof(key));
        s->reclaim_key_valid = true;
        s->reclaimable_any = any;
        s->reclaimable_sel_valid = false;
    }
    if (!sel || s->reclaimable_sel_valid)
        return;
    memset(s->reclaimable_sel, 0, sizeof(s->reclaimable_sel));
    for (size_t i = 0; s->reclaimable_any && i < s->nnodes; i++) {
        const struct node *n = &s->nodes[i];
        uint64_t mask = 0;
        for (uint32_t k = 0; k < n->jobs.n; k++) {
            const struct job *v = &s->jobs[n->jobs.v[k]];
            if (!(v->flags & JF_VICTIM_ELIGIBLE) || !over_guarantee(s, v))
                continue;
            if (!mask)
                mask = node_selsets(s, n) | 1; /* bit 0: computed (it may match none) */
            s->reclaimable_sel[v->victim_rank] |= mask;
        }
    }
    s->reclaimable_sel_valid = true;
}

/* The gate counts victims where a job of the selector set could run: on the nodes it
 * matches (set 0 and sets past 63: anywhere). */
static int victims_at(const struct sched *s, uint32_t selset, int rank)
{
    return selset > 0 && selset < NSELBITS ? s->sel_victims[selset][rank]
                                           : s->eligible_by_rank[rank];
}

static bool victims_below(const struct sched *s, uint32_t selset, int rank)
{
    for (int r = rank + 1; r < s->policy.ntiers; r++)
        if (victims_at(s, selset, r) > 0)
            return true;
    return false;
}

bool victims_gate(const struct sched *s, uint32_t selset, int rank, uint32_t project, int gpus,
                  bool *reclaims)
{
    if (victims_below(s, selset, rank)) {
        *reclaims = project_can_reclaim(s, project, gpus);
        return true;
    }
    if (victims_at(s, selset, rank) == 0)
        return false; /* whatever the project may reclaim */
    *reclaims = project_can_reclaim(s, project, gpus);
    /* looks at the lower tiers once more: a version without measured 0.2 ms slower in
       core_bench job_end_preempt (bench/RESULTS.md) */
    return victims_exist_for(s, selset, rank, *reclaims);
}

bool victims_exist_for(const struct sched *s, uint32_t selset, int rank, bool reclaims)
{
    if (victims_below(s, selset, rank))
        return true;
    return reclaims && reclaim_victims_exist(s, selset, rank);
}

bool reclaim_victims_exist(const struct sched *s, uint32_t selset, int rank)
{
    if (victims_at(s, selset, rank) == 0)
        return false;
    struct sched *m = (struct sched *)(uintptr_t)s; /* a cache refresh */
    bool sel = selset > 0 && selset < NSELBITS;
    reclaimable_refresh(m, sel);
    if (!m->reclaimable_at[rank])
        return false;
    return !sel || (m->reclaimable_sel[rank] >> selset & 1);
}

static bool under_guarantee_after(const struct sched *s, const struct job *j)
{
    return project_can_reclaim(s, j->project, j->gpus * j->nodes);
}

/* A borrower: its project, or its project's group, is over its guarantee. */
static bool over_guarantee(const struct sched *s, const struct job *v)
{
    const struct project *p = &s->projects[v->project];
    const struct group *g = project_group(s, p);
    return p->gpus_in_use > p->spec.guarantee_gpus + 1e-9 || (g && group_over_guarantee(s, g));
}

/* May j (of effective rank rj; reclaims: its project may reclaim its guarantee) stop v
 * on node n at `now`? */
static bool victim_for(const struct sched *s, const struct job *v, const struct job *j, int rj,
                       bool reclaims, const struct node *n, int64_t now)
{
    /* not a victim for anyone (flag kept by victim_mark at every start, stop and age
       deadline): most jobs on a busy node are ruled out here without a lookup */
    if (!(v->flags & JF_VICTIM_ELIGIBLE) || v == j)
        return false;
    if (v->state != SCHED_RUNNING && v->state != SCHED_STARTING)
        return false;
    const struct sched_class_spec *c = job_class(s, v);
    if (!c->preemptible || job_immune_by_count(s, v))
        return false;
    int rv = job_eff_rank(s, v);
    if (rv < rj)
        return false; /* never a higher tier */
    if (rv == rj && !(reclaims && v->project != j->project && over_guarantee(s, v)))
        return false;
    /* borrowed reserved-zone room goes back to the tiers it is for at once */
    if ((v->flags & JF_BORROWER) && n->reserved && rj <= s->reserved_min_rank && rv > rj)
        return true;
    int64_t age = now - v->start_ms;
    if (age < s->policy.min_runtime_ms)
        return false;
    return c->protect_after_ms == 0 || age < c->protect_after_ms || !job_may_be_immune(v);
}

struct victim {
    uint32_t slot;
    int rank, order, ckpt_last;
    int64_t lost;
    int64_t kill_at; /* when it is gone once signalled (now + its grace) */
    int64_t end;     /* when the model expects it to end without preemption */
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

enum { PLAN_MAX = SCHED_MAX_NODE_GPUS + 8 };

struct node_plan {
    uint32_t node;
    bool from_memo; /* its cost read from a plan memo, its victims not listed yet */
    int nvictims;
    struct victim v[PLAN_MAX];
    int64_t start; /* when the room is there: the last victim killed, or a release */
    /* cost: the highest tier hit (lowest rank number), then count, then work lost */
    int best_rank;
    int64_t lost;
};

static int64_t plan_start(int64_t now, const struct victim *v, int count)
{
    int64_t t = now;
    for (int i = 0; i < count; i++)
        if (v[i].kill_at > t)
            t = v[i].kill_at;
    return t;
}

/* When does the room stop holding for j over [start, start + dur) once the victims are
 * gone (NEVER: it holds)? Checked at
 * the start and at every binding claim that begins inside the window: what is free then
 * (releases of the running and stopping jobs included, binding claims taken off) plus the
 * victims that would otherwise still run must cover the request. Claims of lower jobs that
 * are not sticky do not bind: they are dropped when the preemption goes ahead. */
static int64_t plan_fails_at(const struct sched *s, const struct node *n, const struct job *j,
                             const struct shape *sh, const struct victim *v, int count,
                             int64_t start, int64_t dur)
{
    int64_t end = dur >= NEVER - start ? NEVER : start + dur;
    int64_t t = start;
    for (;;) {
        struct avail a = node_avail_for(s, n, t, j->reservation, j);
        for (int i = 0; i < count; i++)
            if (v[i].end > t) {
                a.gpus += v[i].gpus;
                a.cpus += v[i].cpus;
                a.mem += v[i].mem;
            }
        if (a.gpus < sh->gpus || a.cpus < sh->cpus || a.mem < sh->mem_mb)
            return t;
        int64_t next = NEVER;
        for (int k = 0; k < n->nclaims; k++) {
            const struct claim *c = &n->claims[k];
            if (c->res != j->reservation && c->start > t && c->start < end && c->start < next &&
                claim_binds(s, c->res, j))
                next = c->start;
        }
        if (next == NEVER)
            return NEVER;
        t = next;
    }
}

static bool plan_holds(const struct sched *s, const struct node *n, const struct job *j,
                       const struct shape *sh, const struct victim *v, int count, int64_t start,
                       int64_t dur)
{
    return plan_fails_at(s, n, j, sh, v, count, start, dur) == NEVER;
}

/* When the jobs already stopping on n for a cause other than a preemption (a cancel, a
 * time limit, a requeue, a lost node) are gone: the latest kill among them (now: none to
 * come). Their grace bounds it, as a victim's grace bounds a preemption's wait: that is the
 * preemptor's acceptable delay. Victims of a preemption are never waited for, whoever
 * searches: their room is their preemptor's (its sticky claim binds everyone else), and a
 * rule that waited for a searcher's own victims would make the answer depend on who
 * searches, which the shape memos do not key on (issue 34: that broke the memos at
 * property seeds 197 and 5271). So the answer reads the node alone: its stopping jobs, their
 * causes and kill times, which the change log and the shadows already carry (a cancel of a
 * stopping victim, which changes its cause, logs its nodes: jobs.c sched_job_cancel). */
static int64_t stopping_gone_at(const struct sched *s, const struct node *n, int64_t now)
{
    int64_t t = now;
    if (n->stopping_gpus == 0 && n->stopping_cpus == 0)
        return t;
    for (uint32_t i = 0; i < n->jobs.n; i++) {
        const struct job *x = &s->jobs[n->jobs.v[i]];
        if (x->state == SCHED_STOPPING && x->stop_cause != SCHED_STOP_PREEMPT && x->kill_at_ms > t)
            t = x->kill_at_ms;
    }
    return t;
}

/* The start of a plan with `count` victims: once they are gone; a plan without victims may
 * also start once the jobs already stopping there are gone, when that makes the room hold
 * (least work lost: waiting for a job being cancelled beats killing fresh work; only
 * there, so a search pays one more look per node at most). *fails: when the room stops
 * holding from the start returned (NEVER: it holds). Both starts are fixed times or the
 * victims' grace after now, as the shadows of the preemption memos assume (changes.c).
 * fail_dur, when given, grows to the longest window tried that failed: a shorter job
 * might fit in either (a memo covers only jobs at least that long; counting the first
 * window alone let a memo cover a job that fits in the second, property seed 5271). */
static int64_t plan_window(const struct sched *s, const struct node *n, const struct job *j,
                           const struct shape *sh, const struct victim *v, int count, int64_t now,
                           int64_t dur, int64_t *fails, int64_t *fail_dur)
{
    int64_t start = plan_start(now, v, count);
    *fails = plan_fails_at(s, n, j, sh, v, count, start, dur);
    if (*fails == NEVER)
        return start;
    if (fail_dur && *fails - start + 1 > *fail_dur)
        *fail_dur = *fails - start + 1;
    int64_t gone = count > 0 ? start : stopping_gone_at(s, n, now);
    if (gone <= start)
        return start;
    int64_t later = plan_fails_at(s, n, j, sh, v, count, gone, dur);
    if (later == NEVER) {
        *fails = NEVER;
        return gone;
    }
    if (fail_dur && later - gone + 1 > *fail_dur)
        *fail_dur = later - gone + 1;
    return start;
}

/* Does a plan with these victims hold from some start plan_window allows? */
static bool plan_window_holds(const struct sched *s, const struct node *n, const struct job *j,
                              const struct shape *sh, const struct victim *v, int count,
                              int64_t now, int64_t dur)
{
    int64_t fails;
    (void)plan_window(s, n, j, sh, v, count, now, dur, &fails, NULL);
    return fails == NEVER;
}

/* j's effective rank and whether its project may reclaim (under_guarantee_after): the
 * same for every node of one search, so asked once per search */
struct preemptor {
    const struct job *j;
    int rank;
    bool reclaims;
};

static int collect_victims(struct sched *s, const struct preemptor *pj, uint32_t idx, int64_t now,
                           struct victim *all)
{
    const struct node *n = &s->nodes[idx];
    const struct job *j = pj->j;
    int nall = 0, rj = pj->rank;
    bool reclaims = pj->reclaims;
    for (uint32_t i = 0; i < n->jobs.n && nall < PLAN_MAX; i++) {
        const struct job *v = &s->jobs[n->jobs.v[i]];
        if (!victim_for(s, v, j, rj, reclaims, n, now))
            continue;
        int rank = job_eff_rank(s, v), order = job_class(s, v)->preempt_order;
        for (int a = 0; a < v->nallocs; a++) {
            if (v->allocs[a].node != idx)
                continue;
            struct victim *x = &all[nall++];
            x->slot = n->jobs.v[i];
            x->rank = rank;
            x->order = order;
            x->lost = now - (v->ckpt_ms > v->start_ms ? v->ckpt_ms : v->start_ms);
            x->ckpt_last = (v->flags & JF_CKPT_SIGNAL) ? 0 : 1;
            x->kill_at = now + v->grace_ms;
            x->end = job_expected_end(s, v);
            x->gpus = v->allocs[a].gpus;
            x->cpus = v->allocs[a].cpus;
            x->mem = v->allocs[a].mem_mb;
        }
    }
    return nall;
}

/* Plan the cheapest victim set on one node; false when even all eligible victims would
 * not make room. Room that jobs already stopping will free counts first: a job being
 * cancelled or killed is never replaced by a new victim. */
static bool plan_node(struct sched *s, const struct preemptor *pj, const struct shape *sh,
                      uint32_t idx, int64_t now, struct node_plan *p, int64_t *fail_dur)
{
    const struct job *j = pj->j;
    const struct node *n = &s->nodes[idx];
    p->node = idx;
    p->from_memo = false;
    p->nvictims = 0;
    p->best_rank = 255;
    p->lost = 0;
    p->start = now;
    if (sh->nodes == 1 && node_free_fit(n, sh))
        return false; /* held off it by a reservation: victims here would not help */
    /* upper bound first: everything lower tiers (and, when it may reclaim, its own tier)
       hold here, and what stopping jobs free; most nodes fail this without a job looked at */
    int rj = pj->rank;
    int g = n->gpus - n->gpus_used + n->stopping_gpus,
        c = n->cpus - n->cpus_used + n->stopping_cpus;
    for (int r = pj->reclaims ? rj : rj + 1; r < s->policy.ntiers; r++) {
        g += n->victim_gpus[r];
        c += n->victim_cpus[r];
    }
    if (g < sh->gpus || c < sh->cpus)
        return false;
    struct victim all[PLAN_MAX];
    int nall = collect_victims(s, pj, idx, now, all);
    qsort(all, nall, sizeof(all[0]), cmp_victims);
    int64_t dur = job_duration(j);
    int take = 0;
    for (; take <= nall; take++) {
        int64_t t; /* a job shorter than a window that failed might fit: fail_dur */
        (void)plan_window(s, n, j, sh, all, take, now, dur, &t, fail_dur);
        if (t == NEVER)
            break;
    }
    if (take > nall)
        return false;
    /* drop victims the others already cover, most valuable first */
    for (int i = take - 1; i >= 0; i--) {
        struct victim saved = all[i];
        memmove(&all[i], &all[i + 1], (take - i - 1) * sizeof(all[0]));
        if (plan_window_holds(s, n, j, sh, all, take - 1, now, dur)) {
            take--;
        } else {
            memmove(&all[i + 1], &all[i], (take - i - 1) * sizeof(all[0]));
            all[i] = saved;
        }
    }
    memcpy(p->v, all, take * sizeof(all[0]));
    p->nvictims = take;
    p->start = plan_window(s, n, j, sh, all, take, now, dur, &(int64_t){0}, NULL);
    for (int i = 0; i < take; i++) {
        if (all[i].rank < p->best_rank)
            p->best_rank = all[i].rank;
        p->lost += all[i].lost;
    }
    return true;
}

/* Is plan a cheaper than plan b? A total order (the node index breaks the last tie), so
 * the plan chosen does not depend on the order the nodes were searched in: a search over
 * the nodes a memo names and a full one pick the same. */
static bool plan_cheaper(const struct node_plan *a, const struct node_plan *b)
{
    if (a->best_rank != b->best_rank)
        return a->best_rank > b->best_rank;
    if (a->nvictims != b->nvictims)
        return a->nvictims < b->nvictims;
    if (a->lost != b->lost)
        return a->lost < b->lost;
    if (a->start != b->start)
        return a->start < b->start;
    return a->node < b->node;
}

bool plan_costlier(const struct plan_cost *a, const struct plan_cost *b)
{
    if (a->best_rank != b->best_rank)
        return a->best_rank < b->best_rank;
    if (a->nvictims != b->nvictims)
        return a->nvictims > b->nvictims;
    int64_t t = a->at > b->at ? a->at : b->at;
    int64_t la = a->lost + (int64_t)a->nvictims * (t - a->at),
            lb = b->lost + (int64_t)b->nvictims * (t - b->at);
    if (la != lb)
        return la > lb;
    /* a plan starts when its last victim's grace ends: a fixed time after its search */
    int64_t sa = a->start + (t - a->at), sb = b->start + (t - b->at);
    if (sa != sb)
        return sa > sb;
    return a->node > b->node;
}

static struct plan_cost plan_cost_of(const struct node_plan *p, int64_t now)
{
    return (struct plan_cost){p->best_rank, p->nvictims, p->lost, p->start, now, p->node};
}

/* The costliest of the plans kept. */
static int plans_worst(const struct node_plan *best, int nbest)
{
    int worst = 0;
    for (int i = 1; i < nbest; i++)
        if (plan_cheaper(&best[worst], &best[i]))
            worst = i;
    return worst;
}

/* Keep p if it is among the `want` cheapest. */
static void plans_keep_best(struct node_plan *best, int *nbest, int want, const struct node_plan *p)
{
    if (*nbest < want) {
        best[(*nbest)++] = *p;
    } else {
        int worst = plans_worst(best, *nbest);
        if (!plan_cheaper(p, &best[worst]))
            return;
        best[worst] = *p;
    }
}

/* The preemptor waits for every job on its nodes that the plan counted as gone by its
 * start: the victims, and the jobs already stopping or ending by then. */
static int wait_list(struct sched *s, const uint32_t *nodes, int nnodes, int64_t start,
                     uint64_t **out)
{
    int cap = 0, n = 0;
    for (int i = 0; i < nnodes; i++)
        cap += (int)s->nodes[nodes[i]].jobs.n;
    *out = malloc((size_t)(cap ? cap : 1) * sizeof(**out));
    if (!*out)
        return 0;
    for (int i = 0; i < nnodes; i++) {
        const struct node *nd = &s->nodes[nodes[i]];
        for (uint32_t k = 0; k < nd->jobs.n; k++) {
            const struct job *v = &s->jobs[nd->jobs.v[k]];
            bool dup = false;
            for (int d = 0; d < n && !dup; d++)
                dup = (*out)[d] == v->id;
            if (!dup && job_expected_end(s, v) <= start)
                (*out)[n++] = v->id;
        }
    }
    return n;
}

/* Signal the victims and reserve their room for `j`: a sticky reservation replaces any it
 * held (a starving one stays starving), and lower reservations on those nodes give way. */
static int64_t plans_start(const struct node_plan *plans, int nplans, int64_t now)
{
    int64_t start = now;
    for (int p = 0; p < nplans; p++)
        if (plans[p].start > start)
            start = plans[p].start;
    return start;
}

/* A gang starts when its last node is ready: every node must hold until then too. */
static bool plans_hold_together(const struct sched *s, const struct job *j, const struct shape *sh,
                                const struct node_plan *plans, int nplans, int64_t now)
{
    int64_t start = plans_start(plans, nplans, now);
    for (int p = 0; p < nplans && nplans > 1; p++)
        if (!plan_holds(s, &s->nodes[plans[p].node], j, sh, plans[p].v, plans[p].nvictims, start,
                        job_duration(j)))
            return false;
    return true;
}

static int preempt_apply(struct sched *s, struct job *j, const struct shape *sh,
                         struct node_plan *plans, int nplans, int64_t now)
{
    uint32_t nodes[SCHED_MAX_JOB_NODES];
    int64_t start = plans_start(plans, nplans, now);
    for (int p = 0; p < nplans; p++) {
        nodes[p] = plans[p].node;
        for (int i = 0; i < plans[p].nvictims; i++) {
            struct job *v = &s->jobs[plans[p].v[i].slot];
            if (v->state != SCHED_STOPPING) /* a gang victim may be hit on two nodes */
                job_stop(s, v, SCHED_STOP_PREEMPT, v->signal, v->grace_ms, j->id, now);
        }
    }
    for (int p = 0; p < nplans; p++) {
        const struct node *n = &s->nodes[nodes[p]];
        for (int k = 0; k < n->nclaims;) {
            uint32_t r = n->claims[k].res;
            if (r != j->reservation && !claim_binds(s, r, j))
                reservation_drop(s, r); /* removes this claim: look at index k again */
            else
                k++;
        }
    }
    bool starving = false;
    if (j->reservation != NONE32) {
        starving = s->res[j->reservation].starving;
        reservation_drop(s, j->reservation);
    }
    int64_t dur = job_duration(j);
    int64_t end = dur >= NEVER - start ? NEVER : start + dur;
    uint32_t r = reservation_add(s, j, start, end, nodes, nplans, true, starving);
    if (r == NONE32)
        return -1;
    s->res[r].nvictims = wait_list(s, nodes, nplans, start, &s->res[r].victims);
    return 0;
}

struct preempt_search {
    struct job *j;
    struct preemptor pj;
    const struct shape *sh;
    int64_t now;
    struct node_plan *best, *cur;
    int nbest, want, feasible;
    int64_t fail_dur;       /* nodes without a plan fail for every job at least this long */
    struct plan_memo *memo; /* the plans of this kind of search so far in the cycle */
    bool lead;              /* it visits every node: it makes the memo's leaders anew */
};

/* Is memo m of the kind of this search? Same cycle and time, epoch, shape and rank, and
 * whether it may reclaim; one that may also reads its own project (it takes borrowers of
 * others alone) and who is a borrower, which moves with every project's usage
 * (usage_moves), logged on no node. */
static bool plan_memo_fits(const struct sched *s, const struct plan_memo *m,
                           const struct preempt_search *ps)
{
    if (!m->gen || m->cycle != s->cycle || m->now != ps->now || m->epoch != s->memo_epoch ||
        m->shape != ps->j->shape || m->rank != ps->pj.rank || m->reclaims != ps->pj.reclaims)
        return false;
    return !m->reclaims || (m->project == ps->j->project && m->usage == s->usage_moves);
}

/* The plan memo for j's search, made anew (in the least recently used of PLAN_MEMOS) when
 * none is of its kind; NULL when the search may not use one: its shape is searched in parts
 * (a GPU type or a domain each), or the cycle trusts no memo. */
static struct plan_memo *plan_memo_for(struct sched *s, const struct preempt_search *ps,
                                       const struct shape *sh)
{
    if (s->recomputing || shape_spans_types(sh) || topo_required(sh) || topo_best_effort(sh))
        return NULL;
    struct plan_memo *m = NULL, *lru = &s->plan_memos[0];
    for (int i = 0; i < PLAN_MEMOS && !m; i++) {
        struct plan_memo *x = &s->plan_memos[i];
        if (plan_memo_fits(s, x, ps))
            m = x;
        else if (x->used < lru->used)
            lru = x;
    }
    if (!m) {
        m = lru;
        if (m->cap < s->nnodes) {
            void *p = realloc(m->nodes, s->nnodes * sizeof(*m->nodes));
            if (!p)
                return NULL;
            m->nodes = p;
            memset(m->nodes + m->cap, 0, (s->nnodes - m->cap) * sizeof(*m->nodes));
            m->cap = s->nnodes;
        }
        m->gen++; /* every entry made before is old */
        m->cycle = s->cycle;
        m->now = ps->now;
        m->epoch = s->memo_epoch;
        m->shape = ps->j->shape;
        m->rank = ps->pj.rank;
        m->reclaims = ps->pj.reclaims;
        m->project = ps->j->project;
        m->usage = s->usage_moves;
        m->leaders_ready = false;
    }
    m->used = ++s->plan_memo_tick;
    /* from here on a node that changes is logged again, after every entry made now */
    s->chlog_mark = s->nchlog;
    return m;
}

/* May j's plan on n be kept for (and read by) another search of its kind? Where n has no
 * claim, or only sticky ones (they bind every searcher) and none of j's own: elsewhere the
 * plan also reads the searcher's priority (which ordinary claims bind) and reservation. */
static bool plan_keepable(const struct sched *s, const struct node *n, const struct job *j)
{
    for (int k = 0; k < n->nclaims; k++) {
        const struct reservation *r = &s->res[n->claims[k].res];
        if (n->claims[k].res == j->reservation || !(r->preempting || r->starving))
            return false;
    }
    return true;
}

/* p's cost from a memo entry; its victims are listed only if it is chosen. */
static void plan_from_entry(struct node_plan *p, uint32_t idx, const struct plan_memo_node *e)
{
    p->node = idx;
    p->from_memo = true;
    p->nvictims = e->nvictims;
    p->start = e->start;
    p->best_rank = e->best_rank;
    p->lost = e->lost;
}

/* The node's plan from the memo into p: true when the memo holds one for j (*has: whether
 * there is a plan), the window that failed there added to *fail_dur. */
static bool plan_memo_read(const struct sched *s, const struct plan_memo *m, const struct job *j,
                           uint32_t idx, struct node_plan *p, bool *has, int64_t *fail_dur)
{
    const struct node *n = &s->nodes[idx];
    const struct plan_memo_node *e = &m->nodes[idx];
    if (e->gen != m->gen || n->logged_at > e->logpos || !plan_keepable(s, n, j))
        return false;
    int64_t dur = job_duration(j);
    if (n->nclaims > 0 && e->dur != dur && !(e->nvictims < 0 && dur > e->dur))
        return false; /* its claims' windows read the length */
    *has = e->nvictims >= 0;
    plan_from_entry(p, idx, e);
    if (fail_dur && e->fail_dur > *fail_dur)
        *fail_dur = e->fail_dur;
    return true;
}

static void plan_memo_write(const struct sched *s, struct plan_memo *m, const struct job *j,
                            uint32_t idx, const struct node_plan *p, bool has, int64_t fail_dur)
{
    if (!plan_keepable(s, &s->nodes[idx], j))
        return;
    m->nodes[idx] = (struct plan_memo_node){.gen = m->gen,
                                            .logpos = s->nchlog,
                                            .lost = p->lost,
                                            .start = p->start,
                                            .fail_dur = fail_dur,
                                            .dur = job_duration(j),
                                            .best_rank = (int16_t)p->best_rank,
                                            .nvictims = (int16_t)(has ? p->nvictims : -1)};
}

/* p, a plan the memo keeps, among the leaders if it is one of the cheapest. */
static void leaders_offer(struct plan_memo *m, const struct node_plan *p)
{
    struct node_plan x;
    int at = m->nleaders;
    while (at > 0) {
        plan_from_entry(&x, m->leaders[at - 1].node, &m->leaders[at - 1].e);
        if (!plan_cheaper(p, &x))
            break;
        at--;
    }
    if (at >= PLAN_LEADERS)
        return;
    int n = m->nleaders < PLAN_LEADERS ? m->nleaders + 1 : PLAN_LEADERS;
    memmove(&m->leaders[at + 1], &m->leaders[at], (size_t)(n - 1 - at) * sizeof(m->leaders[0]));
    m->leaders[at] = (struct plan_leader){p->node, m->nodes[p->node]};
    m->nleaders = n;
}

/* A node's plan for this search: from the memo where it holds one, else made (and kept). */
static bool plan_node_memo(struct sched *s, struct preempt_search *ps, const struct shape *sh,
                           uint32_t idx, struct node_plan *p, int64_t *fail_dur)
{
    bool has;
    if (ps->memo && plan_memo_read(s, ps->memo, ps->j, idx, p, &has, fail_dur))
        return has;
    int64_t failed = 1; /* this node's windows alone: the memo keeps them with its plan */
    has = plan_node(s, &ps->pj, sh, idx, ps->now, p, &failed);
    if (fail_dur && failed > *fail_dur)
        *fail_dur = failed;
    if (ps->memo)
        plan_memo_write(s, ps->memo, ps->j, idx, p, has, failed);
    return has;
}

static void preempt_visit(struct sched *s, uint32_t idx, void *ctx)
{
    struct preempt_search *ps = ctx;
    if (plan_node_memo(s, ps, ps->sh, idx, ps->cur, &ps->fail_dur)) {
        ps->feasible++;
        if (ps->lead && plan_keepable(s, &s->nodes[idx], ps->j)) {
            leaders_offer(ps->memo, ps->cur);
            ps->memo->lead_claimed |= s->nodes[idx].nclaims > 0;
        }
        plans_keep_best(ps->best, &ps->nbest, ps->want, ps->cur);
    }
}

enum { LEADERS_RES_MAX = 256 }; /* reservations looked through, at most */

/* Consider node idx for the answer from the leaders: *best the cheapest so far. */
static void leaders_consider(struct sched *s, struct preempt_search *ps, const struct shape *sh,
                             uint32_t idx, bool *found)
{
    if (!node_is_candidate(s, &s->nodes[idx], sh))
        return;
    if (plan_node_memo(s, ps, sh, idx, ps->cur, NULL) &&
        (!*found || plan_cheaper(ps->cur, &ps->best[0]))) {
        ps->best[0] = *ps->cur;
        *found = true;
    }
}

/* Every node of reservation r (a live one). */
static void leaders_consider_res(struct sched *s, struct preempt_search *ps, const struct shape *sh,
                                 uint32_t r, bool *found)
{
    if (r == NONE32 || r >= s->nres || !(s->res_live_bits[r / 64] >> (r % 64) & 1))
        return;
    for (int k = 0; k < s->res[r].nnodes; k++)
        leaders_consider(s, ps, sh, s->res[r].nodes[k], found);
}

/* A one-node shape's cheapest plan without a look at every node, from the last search of
 * its kind in this cycle (struct plan_memo): its leaders, the nodes logged since (changed:
 * planned again, or read where the memo still holds them), the nodes of the ordinary
 * reservations, of this searcher's and of the leaders' searcher's (their plans read the
 * searcher). Every other node is unchanged since, and its plan is the leaders' searcher's:
 * it had none, or one costlier than the last leader (a searcher of another length: no node
 * with claims had one, and it is longer, so none has one now). So a plan found that is no
 * costlier than the last leader (or any, with fewer leaders than PLAN_LEADERS) is the
 * cheapest of all. False when that cannot be told: search every node. */
static bool leaders_answer(struct sched *s, struct preempt_search *ps, const struct shape *sh)
{
    struct plan_memo *m = ps->memo;
    /* when many nodes changed since, or ordinary reservations are many, a look at every
       node costs about as much */
    if (!m->leaders_ready || s->nchlog - m->leaders_logpos > 64 + s->nnodes / 8 ||
        s->res_active > LEADERS_RES_MAX)
        return false;
    int64_t dur = job_duration(ps->j);
    if (dur != m->lead_dur && (m->lead_claimed || dur < m->lead_dur))
        return false;
    struct plan_leader last = m->leaders[m->nleaders > 0 ? m->nleaders - 1 : 0];
    bool found = false;
    for (int i = 0; i < m->nleaders; i++)
        leaders_consider(s, ps, sh, m->leaders[i].node, &found);
    for (size_t k = m->leaders_logpos; k < s->nchlog; k++)
        leaders_consider(s, ps, sh, s->chlog[k], &found);
    for (size_t r = res_next(s, 0, true); r < s->nres; r = res_next(s, r + 1, true))
        leaders_consider_res(s, ps, sh, (uint32_t)r, &found);
    leaders_consider_res(s, ps, sh, ps->j->reservation, &found);
    leaders_consider_res(s, ps, sh, m->lead_res, &found);
    if (!found)
        return false;
    if (m->nleaders == PLAN_LEADERS) {
        struct node_plan floor;
        plan_from_entry(&floor, last.node, &last.e);
        if (plan_cheaper(&floor, &ps->best[0]))
            return false;
    }
    ps->nbest = 1;
    ps->feasible = 1;
    return true;
}

/* Every candidate node, or only those of the scope. */
static void preempt_visit_all(struct sched *s, const struct shape *sh, struct preempt_search *ps,
                              const struct preempt_scope *sc)
{
    if (!sc || !sc->nodes) {
        shape_candidates_each(s, sh, preempt_visit, ps);
        return;
    }
    for (size_t i = 0; i < sc->nnodes; i++)
        if (node_is_candidate(s, &s->nodes[sc->nodes[i]], sh))
            preempt_visit(s, sc->nodes[i], ps);
}

static int plans_victims(const struct node_plan *p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++)
        v += p[i].nvictims;
    return v;
}

/* n node plans of scratch space, or NULL (out of memory). */
static struct node_plan *plan_scratch(struct sched *s, size_t n)
{
    if (n > s->plan_scratch_cap) {
        void *p = realloc(s->plan_scratch, n * sizeof(struct node_plan));
        if (!p)
            return NULL;
        s->plan_scratch = p;
        s->plan_scratch_cap = n;
    }
    return s->plan_scratch;
}

/* What one search chose: its plans (one per node of the job) and the part (GPU type,
 * domain) they are for; the most nodes with a plan in any one part. */
struct preempt_choice {
    struct node_plan *plans;
    int n, most_feasible;
    struct shape sh;
};

/* Search every part of j's shape (a gang of any type is planned per type: its nodes must be
 * alike; one that requires a domain, per domain: nodes.c shape_part_next) and choose. */
static void preempt_search_parts(struct sched *s, const struct shape *sh, struct preempt_search *ps,
                                 struct preempt_scope *sc, struct preempt_choice *ch)
{
    struct shape_parts parts;
    struct shape typed;
    ch->n = ch->most_feasible = 0;
    ch->sh = *sh;
    shape_parts_begin(s, sh, &parts);
    while (shape_part_next(&parts, &typed)) {
        ps->sh = &typed;
        ps->nbest = 0;
        ps->feasible = 0;
        bool every = !sc || !sc->nodes;
        if (ps->memo && every && ps->want == 1 && leaders_answer(s, ps, &typed)) {
            s->plans_led++;
        } else {
            ps->lead = ps->memo && every && ps->want == 1;
            if (ps->lead) {
                ps->memo->nleaders = 0;
                ps->memo->leaders_logpos = s->nchlog;
                ps->memo->lead_res = ps->j->reservation;
                ps->memo->lead_dur = job_duration(ps->j);
                ps->memo->lead_claimed = false;
            }
            preempt_visit_all(s, &typed, ps, sc);
            if (ps->lead)
                ps->memo->leaders_ready = true;
        }
        if (ps->feasible > ch->most_feasible)
            ch->most_feasible = ps->feasible; /* of one part: a gang's nodes are alike */
        /* best effort: one domain's plan with no more victims than any nodes' wins */
        int v = ps->nbest == ps->want ? plans_victims(ps->best, ps->nbest) : 0;
        int was = ch->n ? plans_victims(ch->plans, ch->n) : 0;
        if (ps->nbest == ps->want &&
            (ch->n == 0 || v < was || (v == was && typed.topo_pinned && !ch->sh.topo_pinned))) {
            memcpy(ch->plans, ps->best, (size_t)ps->nbest * sizeof(*ch->plans));
            ch->n = ps->nbest;
            ch->sh = typed;
        }
    }
    /* a plan read from the memo is made again for its victims: the same plan, as nothing
       it read has moved (memo_search_verify checks it against a full search) */
    for (int p = 0; p < ch->n; p++)
        if (ch->plans[p].from_memo)
            (void)plan_node(s, &ps->pj, &ch->sh, ch->plans[p].node, ps->now, &ch->plans[p], NULL);
}

static bool plans_same(const struct node_plan *a, const struct node_plan *b, int n)
{
    for (int p = 0; p < n; p++) {
        if (a[p].node != b[p].node || a[p].nvictims != b[p].nvictims || a[p].start != b[p].start)
            return false;
        for (int i = 0; i < a[p].nvictims; i++)
            if (a[p].v[i].slot != b[p].v[i].slot)
                return false;
    }
    return true;
}

/* sched_verify_memos(): the search without pruning must choose the same plans. */
static void memo_search_verify(struct sched *s, const struct shape *sh,
                               const struct preempt_search *ps, const struct preempt_scope *sc,
                               const struct preempt_choice *got, struct node_plan *scratch,
                               uint64_t job)
{
    if (!ps->memo || !cache_verifying(s, SCHED_CACHE_PLAN_MEMO))
        return;
    struct preempt_search full = *ps;
    full.memo = NULL;
    full.lead = false;
    full.best = scratch;
    full.cur = scratch + ps->want;
    struct preempt_choice ch = {.plans = scratch + ps->want + 1};
    struct preempt_scope fsc = {0};
    if (sc)
        fsc = (struct preempt_scope){.nodes = sc->nodes, .nnodes = sc->nnodes};
    preempt_search_parts(s, sh, &full, &fsc, &ch);
    bool same = ch.n == got->n && plans_same(ch.plans, got->plans, ch.n) &&
                (ch.most_feasible < ps->want ? ch.most_feasible == got->most_feasible
                                             : got->most_feasible >= ps->want);
    cache_verified(s, SCHED_CACHE_PLAN_MEMO, job, same);
}

/* Plan the cheapest victims for j and, unless dry, stop them and hold their room for j.
 * 0: preempted (or, dry, would); 1: jobs already stopping free the room, no new victim;
 * -1: no plan. The scope, when given, narrows the search and reports feasible nodes. */
int preempt_for(struct sched *s, struct job *j, int64_t now, bool dry, struct preempt_scope *sc)
{
    const struct shape *sh = &s->shapes[j->shape];
    struct preempt_search ps = {.j = j,
                                .pj = {j, job_eff_rank(s, j), under_guarantee_after(s, j)},
                                .now = now,
                                .want = sh->nodes,
                                .fail_dur = 1};
    /* best plans, the chosen ones, the one at hand, and as much again to verify the
       pruning: scratch space of the scheduler (calls do not nest) */
    size_t one = 2 * (size_t)ps.want + 1;
    struct node_plan *plans = plan_scratch(s, 2 * one);
    if (!plans)
        return -1;
    ps.best = plans;
    ps.cur = plans + ps.want;
    struct preempt_choice ch = {.plans = plans + ps.want + 1};
    if (!dry && (!sc || !sc->nodes))
        ps.memo = plan_memo_for(s, &ps, sh); /* a search of every node that acts */
    preempt_search_parts(s, sh, &ps, sc, &ch);
    memo_search_verify(s, sh, &ps, sc, &ch, plans + one, j->id);
    struct node_plan *chosen = ch.plans;
    int nchosen = ch.n, rc = -1;
    if (sc) {
        sc->feasible = ch.most_feasible;
        sc->fail_dur = ps.fail_dur;
    }
    if (sc && nchosen == 1)
        sc->best = plan_cost_of(&chosen[0], now);
    if (nchosen && !plans_hold_together(s, j, &ch.sh, chosen, nchosen, now))
        nchosen = 0; /* not before all its nodes are ready */
    if (nchosen && j->reservation != NONE32 &&
        s->res[j->reservation].start <= plans_start(chosen, nchosen, now)) {
        nchosen = 0; /* its reservation starts it no later: no victim's work is worth it */
        if (sc)
            sc->not_earlier = true;
    }
    if (nchosen && plans_victims(chosen, nchosen) == 0)
        rc = 1; /* jobs already stopping free the room: no new victim, wait for it */
    else if (nchosen)
        rc = dry ? 0 : preempt_apply(s, j, &ch.sh, chosen, nchosen, now);
    return rc;
}
