/*
 * victims.c - the victim index (floor 1): which running jobs are preemptible by someone
 * now (JF_VICTIM_ELIGIBLE), counted in total, by rank, by project and on each of their
 * nodes, with the deadlines at which that changes. Who is a victim for whom is preempt.c's
 * decision (floor 2).
 */
#include "core/victims.h"
#include "core/model.h"
#include "core/deadlines.h"
#include "core/changes.h"

#include <string.h>

/* Potential victim for somebody at `now`, ignoring who: the counter lets a cycle skip
 * preemption entirely when nobody could be preempted. */
static bool victim_for_anyone(const struct sched *s, const struct job *v, int64_t now)
{
    const struct sched_class_spec *c = job_class(s, v);
    if (!c->preemptible || job_immune_by_count(s, v))
        return false;
    if (v->state != SCHED_RUNNING && v->state != SCHED_STARTING)
        return false;
    if (v->flags & JF_BORROWER)
        return true;
    int64_t age = now - v->start_ms;
    return age >= s->policy.min_runtime_ms &&
           (c->protect_after_ms == 0 || age < c->protect_after_ms || !job_may_be_immune(v));
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
    s->eligible_by_rank[v->victim_rank] += sign;
    s->projects[v->project].eligible_by_rank[v->victim_rank] += sign;
    s->victim_changes++;
    for (int i = 0; i < v->nallocs; i++) {
        struct node *n = &s->nodes[v->allocs[i].node];
        node_changed(s, n); /* a victim more or less there: struct preempt_memo */
        n->victim_gpus[v->victim_rank] += sign * v->allocs[i].gpus;
        n->victim_cpus[v->victim_rank] += sign * v->allocs[i].cpus;
        n->victim_allocs[v->victim_rank] += sign;
        for (uint64_t m = node_selsets(s, n); m; m &= m - 1)
            s->sel_victims[__builtin_ctzll(m)][v->victim_rank] += sign;
    }
}

void victim_sel_node(struct sched *s, struct node *n, int sign)
{
    for (uint64_t m = node_selsets(s, n); m; m &= m - 1)
        for (int r = 0; r < SCHED_MAX_TIERS; r++)
            s->sel_victims[__builtin_ctzll(m)][r] += sign * n->victim_allocs[r];
}

void victim_sel_recount(struct sched *s, uint32_t selset)
{
    if (selset == 0 || selset >= NSELBITS)
        return;
    memset(s->sel_victims[selset], 0, sizeof(s->sel_victims[selset]));
    for (size_t i = 0; i < s->nnodes; i++) {
        struct node *n = &s->nodes[i];
        if (node_matches_selset(s, n, selset))
            for (int r = 0; r < SCHED_MAX_TIERS; r++)
                s->sel_victims[selset][r] += n->victim_allocs[r];
    }
}

/* A policy applied after an event moved the time on may put a victim's coming of age or
 * protection in (fired_to, now]: victim_eligibility_update read it at `now`, but every
 * rule after the last cycle's time keeps an entry (check_deadlines); the next cycle fires
 * it, reading the job again, which changes nothing more. */
static void victim_rule_catch_up(struct sched *s, const struct job *v, int64_t at,
                                 enum deadline_kind kind, int64_t now)
{
    if (at > s->fired_to && at <= now)
        deadline_push(s, at, v->id, kind);
}

void victim_rules_after_policy(struct sched *s, struct job *v, int64_t now)
{
    victim_eligibility_update(s, v, now);
    if (v->nallocs == 0 || !job_class(s, v)->preemptible)
        return;
    victim_rule_catch_up(s, v, v->start_ms + s->policy.min_runtime_ms, DL_ELIGIBLE, now);
    int64_t protect = job_class(s, v)->protect_after_ms;
    if (protect > 0)
        victim_rule_catch_up(s, v, v->start_ms + protect, DL_PROTECT, now);
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
