/*
 * lifecycle.c - the job life cycle (floor 1, on top of the indexes): start, release,
 * stop, requeue, finish, each keeping every index and counter in step (buckets, victims,
 * claims, queue, deadlines, the counters sched_check() recounts). It carries decisions
 * out; which ones to make is decided on floors 2 and 3.
 */
#include "core/lifecycle.h"
#include "core/containers.h"
#include "core/model.h"
#include "core/group.h"
#include "core/deadlines.h"
#include "core/nodes.h"
#include "core/avail.h"
#include "core/victims.h"
#include "core/shapes.h"
#include "core/queue.h"
#include "core/claims.h"
#include "core/arrays.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void settle_dependents(struct sched *s, struct job *done, bool ok, bool started_only);

void job_deps_any_count(struct job *j)
{
    int met = 0, never = 0;
    for (int i = 0; i < j->ndeps; i++) {
        met += j->deps[i].met;
        never += j->deps[i].never;
    }
    j->ndeps_unmet = met ? 0 : 1;
    j->dep_never = !met && never == j->ndeps;
}

void job_free_parts(struct job *j)
{
    free(j->deps);
    free(j->allocs);
    free(j->selectors);
    free(j->constraint);
    free(j->dependents);
    free(j->place);
}

static void node_stopping_add(struct sched *s, const struct job *j, int sign)
{
    for (int i = 0; i < j->nallocs; i++) {
        struct node *n = &s->nodes[j->allocs[i].node];
        n->stopping_gpus += sign * j->allocs[i].gpus;
        n->stopping_cpus += sign * j->allocs[i].cpus;
    }
}

void job_set_state(struct sched *s, struct job *j, enum sched_job_state st)
{
    if ((j->state == SCHED_STOPPING) != (st == SCHED_STOPPING))
        node_stopping_add(s, j, st == SCHED_STOPPING ? 1 : -1);
    s->by_state[j->state]--;
    j->state = (uint8_t)st;
    s->by_state[st]++;
    slot_changed(s, job_slot(s, j)); /* a proof of the starving list is for the old state */
}

static void node_take(struct sched *s, struct job *j, const struct sched_alloc *a)
{
    struct node *n = &s->nodes[a->node];
    n->gpus_used += a->gpus;
    n->cpus_used += a->cpus;
    n->mem_used += a->mem_mb;
    n->gpu_used_mask |= a->gpu_mask;
    (void)u32vec_push(&n->jobs, job_slot(s, j));
    node_holders_touch(s, n);
    if (n->in_bucket)
        bucket_update(s, a->node);
    if (n->reserved && job_pool_rule(s, j, job_eff_rank(s, j)) != POOL_RULE_RESERVED_FIRST)
        j->flags |= JF_BORROWER;
}

/* The job takes `allocs` (copied) and starts now: counters, usage rate, deadlines. */
void job_start(struct sched *s, struct job *j, const struct sched_alloc *allocs, int nallocs)
{
    struct project *p = &s->projects[j->project];
    project_accrue(s, p, s->now);
    free(j->allocs);
    j->allocs = malloc(nallocs * sizeof(*allocs));
    if (!j->allocs)
        nallocs = 0;
    else
        memcpy(j->allocs, allocs, nallocs * sizeof(*allocs));
    j->nallocs = nallocs;
    free(j->place); /* its placement memo is of no more use */
    j->place = NULL;
    j->flags &= (uint8_t) ~(JF_BORROWER | JF_KILL_SENT | JF_VICTIM_ELIGIBLE);
    for (int i = 0; i < nallocs; i++)
        node_take(s, j, &allocs[i]);
    if (j->state == SCHED_STOPPING)
        node_stopping_add(s, j, 1); /* restored while stopping */
    int total_gpus = j->gpus * j->nodes;
    bool was_over = p->gpus_in_use > p->spec.guarantee_gpus + 1e-9;
    p->gpus_in_use += total_gpus;
    s->usage_moves++; /* who borrows may move: struct plan_memo */
    if (!was_over && p->gpus_in_use > p->spec.guarantee_gpus + 1e-9)
        s->reclaim_epoch++; /* its jobs may now be reclaimed: struct preempt_memo */
    p->running++;
    p->usage_changes++;
    group_count(s, p, total_gpus, 1);
    p->rate += job_billing_rate(s, j);
    struct user_count *uc = user_count_get(s, j->project, j->user, true);
    if (uc) {
        uc->running++;
        uc->gpus += total_gpus;
    }
    if (j->array_id) {
        uint64_t ai;
        if (u64map_get(&s->arrays, j->array_id, &ai))
            s->array_counts[ai].running++, s->array_counts[ai].changes++;
    }
    if (!(j->flags & JF_STARTED)) {
        j->flags |= JF_STARTED;
        if (array_task_started(s, j)) /* after:ARRAY_ID counts its tasks' first starts */
            array_waiters_settle(s, j->array_id);
    }
    j->start_ms = s->now;
    j->ckpt_ms = s->now;
    settle_dependents(s, j, true, true); /* after:ID waits for a start alone */
    if (j->limit_ms > 0)
        deadline_push(s, j->start_ms + j->limit_ms, j->id, DL_LIMIT);
    victim_eligibility_update(s, j, s->now);
}

/* The job's expected end changed (it is being stopped): its nodes' releases move. */
void job_nodes_touch(struct sched *s, const struct job *j)
{
    s->room_grew++; /* a preemption in the walk frees its victims' room early: claimed memo */
    for (int i = 0; i < j->nallocs; i++)
        node_holders_touch(s, &s->nodes[j->allocs[i].node]);
}

/* Give back everything the job holds; keep its state (the caller sets the next one). */
void job_release_resources(struct sched *s, struct job *j)
{
    if (j->nallocs == 0)
        return;
    struct project *p = &s->projects[j->project];
    project_accrue(s, p, s->now);
    p->rate -= job_billing_rate(s, j);
    if (p->rate < 1e-9)
        p->rate = p->running > 1 ? p->rate : 0;
    int total_gpus = j->gpus * j->nodes;
    p->gpus_in_use -= total_gpus;
    s->usage_moves++;
    p->running--;
    p->usage_changes++;
    group_count(s, p, -total_gpus, -1);
    struct user_count *uc = user_count_get(s, j->project, j->user, false);
    if (uc) {
        uc->running--;
        uc->gpus -= total_gpus;
    }
    if (j->array_id) {
        uint64_t ai;
        if (u64map_get(&s->arrays, j->array_id, &ai))
            s->array_counts[ai].running--, s->array_counts[ai].changes++;
    }
    victim_mark(s, j, false);
    if (j->state == SCHED_STOPPING)
        node_stopping_add(s, j, -1);
    for (int i = 0; i < j->nallocs; i++) {
        const struct sched_alloc *a = &j->allocs[i];
        struct node *n = &s->nodes[a->node];
        n->gpus_used -= a->gpus;
        n->cpus_used -= a->cpus;
        n->mem_used -= a->mem_mb;
        n->gpu_used_mask &= ~a->gpu_mask;
        n->gpu_beyond_mask &= n->gpu_used_mask;
        u32vec_remove_value(&n->jobs, job_slot(s, j));
        node_holders_touch(s, n);
        if (n->in_bucket)
            bucket_update(s, a->node);
        if (n->state == SCHED_NODE_DRAINING && n->jobs.n == 0) {
            node_set_state_internal(s, n, SCHED_NODE_DRAINED);
            struct sched_decision *d = decision_push(s, SCHED_D_NODE_STATE, NULL);
            if (d) {
                d->node = a->node;
                d->node_from = SCHED_NODE_DRAINING;
                d->node_to = SCHED_NODE_DRAINED;
                snprintf(d->detail, sizeof(d->detail), "last job ended");
            }
        }
    }
    free(j->allocs);
    j->allocs = NULL;
    j->nallocs = 0;
    j->flags &= (uint8_t)~JF_BORROWER;
}

/* Back to the queue with the same id and submit time (requeue, retry, preempted). */
void job_to_pending(struct sched *s, struct job *j, int64_t begin_ms)
{
    job_set_state(s, j, SCHED_PENDING);
    job_walked_set(s, job_slot(s, j), false); /* derived until the next walk looks at it */
    j->stop_cause = SCHED_STOP_NONE;
    j->preemptor = 0;
    j->kill_at_ms = 0;
    j->begin_ms = begin_ms;
    if (begin_ms > s->now)
        deadline_push(s, begin_ms, j->id, DL_BEGIN);
    queued_count(s, j, 1);
    j->shape = shape_intern(s, j, job_eff_rank(s, j), NULL);
    order_insert(s, j);
    job_mark_eligible(s, j, s->now);
    starvation_watch(s, j, s->now);
}

/* Terminal: emit the state decision, settle dependents, drop the job from the core. */
void job_finish(struct sched *s, struct job *j, enum sched_job_state st, const char *detail)
{
    enum sched_job_state from = j->state;
    if (j->reservation != NONE32)
        reservation_drop(s, j->reservation);
    if (from == SCHED_PENDING || from == SCHED_HELD) {
        queued_count(s, j, -1);
        if (from == SCHED_PENDING) {
            s->shapes[j->shape].pending--;
            order_remove(s, j);
        }
    }
    job_release_resources(s, j);
    job_set_state(s, j, st);
    struct sched_decision *d = decision_push(s, SCHED_D_STATE, j);
    if (d) {
        d->from = from;
        d->to = st;
        d->preemptor = j->preemptor;
        snprintf(d->detail, sizeof(d->detail), "%s", detail ? detail : "");
    }
    settle_dependents(s, j, st == SCHED_COMPLETED, false);
    if (j->array_id && array_task_ended(s, j, st == SCHED_COMPLETED))
        array_waiters_settle(s, j->array_id);
    s->by_state[st]--;
    u64map_del(&s->job_index, j->id);
    uint32_t slot = job_slot(s, j);
    job_free_parts(j);
    memset(j, 0, sizeof(*j));
    walk_look_sync(s, j);
    (void)u32vec_push(&s->free_slots, slot);
    s->njobs--;
}

static bool dep_satisfied(enum sched_dep_kind k, bool ok)
{
    /* after: an end without a start (cancelled while pending) meets it too, as Slurm's
       "after the specified jobs start or are cancelled" */
    return k == SCHED_DEP_AFTERANY || k == SCHED_DEP_AFTER || (k == SCHED_DEP_AFTEROK) == ok;
}

/* One of an any-of job's dependencies settled: the first one met lets it go. Once one is
 * met, the others settling change nothing, and the reason its walk gave it stands (made
 * derived, a job holding a reservation would say Resources where its walk said
 * Reservation: property seed 6957). */
static void settle_any(struct sched *s, struct job *w, struct job_dep *dep, bool met)
{
    bool waited = w->ndeps_unmet > 0;
    dep->met = met;
    dep->never = !met;
    job_deps_any_count(w);
    if (waited)
        job_walked_set(s, job_slot(s, w), false); /* its reason is derived from these */
    if (waited && w->ndeps_unmet == 0 && w->state == SCHED_PENDING) {
        job_mark_eligible(s, w, s->now);
        starvation_watch(s, w, s->now);
    }
}

void dep_settle(struct sched *s, struct job *w, struct job_dep *dep, bool met)
{
    if (w->deps_any) {
        settle_any(s, w, dep, met);
        return;
    }
    if (!met) {
        /* as Slurm: pending, DependencyNeverSatisfied, until someone cancels it */
        dep->never = true;
        w->dep_never = true;
        job_walked_set(s, job_slot(s, w), false); /* its reason changed: derived */
        return;
    }
    dep->met = true;
    if (--w->ndeps_unmet == 0 && w->state == SCHED_PENDING) {
        job_walked_set(s, job_slot(s, w), false); /* no longer Dependency: derived */
        job_mark_eligible(s, w, s->now);
        starvation_watch(s, w, s->now);
    }
}

void array_waiters_settle(struct sched *s, uint64_t array_id)
{
    struct array_count *a = array_find(s, array_id);
    for (int i = 0; a && i < a->nwaiters; i++) {
        struct job *w = &s->jobs[a->waiters[i].slot];
        if (w->id != a->waiters[i].id)
            continue; /* that waiter is gone and its slot reused */
        for (int k = 0; k < w->ndeps; k++) {
            struct job_dep *dep = &w->deps[k];
            if (!dep->array || dep->id != array_id || dep->met || dep->never)
                continue;
            enum dep_verdict v = array_dep_verdict(a, dep->kind);
            if (v != DEP_WAIT)
                dep_settle(s, w, dep, v == DEP_MET);
        }
    }
    array_forget_if_ended(s, array_id);
}

/* The waiters on `done` whose dependencies it settles: all of them when it ended (ok:
 * COMPLETED), those of after:ID alone when it started (started_only). */
static void settle_dependents(struct sched *s, struct job *done, bool ok, bool started_only)
{
    for (int i = 0; i < done->ndependents; i++) {
        struct job *w = &s->jobs[done->dependents[i].slot];
        if (w->id != done->dependents[i].id)
            continue; /* that waiter is gone and its slot reused */
        for (int k = 0; k < w->ndeps; k++) {
            struct job_dep *dep = &w->deps[k];
            if (dep->id != done->id || dep->array || dep->met || dep->never ||
                (started_only && dep->kind != SCHED_DEP_AFTER))
                continue;
            dep_settle(s, w, dep, dep_satisfied(dep->kind, ok));
        }
    }
}

void job_stop(struct sched *s, struct job *j, enum sched_stop_cause cause, int signal,
              int64_t grace, uint64_t preemptor, int64_t now)
{
    victim_mark(s, j, false);
    j->stop_cause = (uint8_t)cause;
    j->preemptor = preemptor;
    enum sched_job_state from = j->state;
    /* stopping never releases later than the job's limit would have: reservations were
       made counting on that release (a job 10 s from its end gets at most 10 s of grace) */
    int64_t limit_end = job_expected_end(s, j);
    if (limit_end < now + grace)
        grace = limit_end > now ? limit_end - now : 0;
    job_set_state(s, j, SCHED_STOPPING);
    j->stop_ms = now;
    j->kill_at_ms = now + grace;
    job_nodes_touch(s, j);
    deadline_push(s, j->kill_at_ms, j->id, DL_KILL);
    struct sched_decision *d = decision_push(s, SCHED_D_SIGNAL, j);
    if (d) {
        d->from = from;
        d->to = SCHED_STOPPING;
        d->cause = cause;
        d->signal = signal;
        d->grace_ms = grace;
        d->preemptor = preemptor;
        decision_attach_allocs(s, d, j);
        snprintf(d->detail, sizeof(d->detail), "%s", sched_stop_cause_name(cause));
    }
}
