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
