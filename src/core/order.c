/*
 * order.c - the fair-share refresh of the queue order (floor 2; docs/scheduling.md §1).
 *
 * Shares are frozen between refreshes (fairshare_refresh_ms): every fairshare_refresh_ms a
 * project's share is taken from its decayed usage over its guarantee, and the queue
 * (queue.c, floor 1) is rebuilt on the new keys.
 */
#include "core/order.h"
#include "core/model.h"
#include "core/group.h"
#include "core/queue.h"
#include "core/claims.h"
#include "core/containers.h"
#include "core/shapes.h"
#include "core/victims.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Average billing units over the window: usage / τ, with τ = half-life / ln 2. */
static double project_avg_usage(const struct sched *s, const struct project *p)
{
    double tau = (double)s->policy.fairshare_half_life_ms / 1000.0 / LN2;
    return p->usage / tau;
}

void project_share_refresh(struct sched *s, struct project *p)
{
    project_accrue(s, p, s->now);
    double g = p->spec.guarantee_gpus > 0 ? p->spec.guarantee_gpus : 0.01;
    p->share = project_avg_usage(s, p) / g;
}

/* The periodic refresh: shares from the decayed usage, then the queue rebuilt on them.
 * Priorities move, and with them which claims bind whom: the ordinary reservations are
 * dropped (their nodes are logged as changed); sticky claims bind everyone, so the
 * preemption memos stay (struct preempt_memo). */
void order_refresh(struct sched *s, int64_t now)
{
    for (size_t i = 0; i < s->nprojects; i++)
        project_share_refresh(s, &s->projects[i]);
    groups_share_refresh(s);
    order_rebuild(s, now, true);
    s->last_refresh = now;
    reservations_drop_all(s, true);
    /* starving reservations stay (rebuilding them all made a refresh cost seconds with
       thousands starving): they are sticky and at worst late, and their job starts early
       wherever room appears. Those of jobs that no longer starve (a boost ended) go. */
    for (size_t r = res_next(s, 0, false); r < s->nres; r = res_next(s, r + 1, false))
        if (s->res[r].starving && !s->res[r].preempting &&
            !(s->jobs[s->res[r].slot].flags & JF_STARVING))
            reservation_drop(s, (uint32_t)r);
    s->res_refreshed = now;
}

/* A boost, or its end, moved the effective tier of one project's jobs: what read that
 * tier is made again for those jobs alone, not by a refresh (every share, the whole queue
 * sorted, every ordinary reservation dropped: 17 times a job end at 100,000 pending, issue
 * 34). Its running victims are counted under their new rank (victim_mark logs their nodes:
 * the preemption memos and quiet proofs that read them see it); its pending jobs whose rank
 * moved take their new shape (the pool rule reads the rank), key and entry, are watched at
 * their new bound (queue.c starving_rewatch), and lose the reservations that rested on the
 * old rank: an ordinary one (which claims bind it, and whom its claims bind, follows its
 * key), and a starving one once it no longer starves (as the refresh does); a preemptor's
 * stays, a promise made to its victims. Other jobs keep theirs: their keys did not move,
 * and claims bind by key at each look (claims.c). The preemption memos are by rank and
 * searcher's key, which no other job's move changes; a job's own memo reads its rank. */
void order_project_rerank(struct sched *s, uint32_t project)
{
    if (s->order_dirty)
        return; /* the refresh to come makes everything again */
    uint32_t *moved = NULL;
    size_t nmoved = 0, cap = 0;
    for (size_t slot = 0; slot < s->jobs_cap; slot++) { /* slot_project covers them */
        if (s->slot_project[slot] != project)
            continue;
        struct job *j = &s->jobs[slot];
        if (!j->id || j->project != project)
            continue;
        int rank = job_eff_rank(s, j);
        if ((j->flags & JF_VICTIM_ELIGIBLE) && j->victim_rank != rank) {
            victim_mark(s, j, false);
            victim_mark(s, j, true);
        }
        /* its entry's rank too: once a boost has passed, a watch made before its deadline
           fired (a dependency met) read the rank that the entry does not */
        if (j->state != SCHED_PENDING || (j->watch_rank == rank && order_entry_rank(s, j) == rank))
            continue;
        if (grow((void **)&moved, &cap, nmoved + 1, sizeof(*moved)) < 0) {
            free(moved);
            s->order_dirty = true;
            return;
        }
        moved[nmoved++] = (uint32_t)slot;
    }
    for (size_t i = 0; i < nmoved; i++) {
        struct job *j = &s->jobs[moved[i]];
        order_remove(s, j); /* found by its old key */
        shape_rule_refresh(s, j);
        order_insert(s, j);
    }
    starving_rewatch(s, moved, nmoved);
    for (size_t i = 0; i < nmoved; i++) {
        struct job *j = &s->jobs[moved[i]];
        if (j->reservation == NONE32)
            continue;
        const struct reservation *r = &s->res[j->reservation];
        if (!r->preempting && (!r->starving || !(j->flags & JF_STARVING)))
            reservation_drop(s, j->reservation);
    }
    free(moved);
}
