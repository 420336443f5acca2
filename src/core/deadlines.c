/*
 * deadlines.c - the deadline index (floor 1): a min-heap of (time, job or project, kind)
 * for the time-based rules. An entry goes stale when what it was set for is gone (the job
 * ended, restarted, was requeued with another begin time, started before it starved);
 * stale entries stay in the heap and are told apart by deadline_live(). The cycle (cycle.c
 * fire_deadlines) pops what is due and acts on the live ones, and drops the stale entries
 * at the top before it returns, so sched_next_wakeup() never answers one (docs/
 * scheduling.md "The cycle": what the wakeup promises).
 */
#include "core/deadlines.h"
#include "core/containers.h"
#include "core/model.h"

#include <stdlib.h>

static void heap_swap(struct deadline *h, size_t a, size_t b)
{
    struct deadline t = h[a];
    h[a] = h[b];
    h[b] = t;
}

void deadline_push(struct sched *s, int64_t at, uint64_t id, enum deadline_kind kind)
{
    if (grow((void **)&s->heap, &s->heap_cap, s->nheap + 1, sizeof(*s->heap)) < 0)
        return;
    size_t i = s->nheap++;
    s->heap[i].at = at;
    s->heap[i].id = id;
    s->heap[i].kind = (uint8_t)kind;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (s->heap[parent].at <= s->heap[i].at)
            break;
        heap_swap(s->heap, parent, i);
        i = parent;
    }
}

struct deadline deadline_pop(struct sched *s)
{
    struct deadline top = s->heap[0];
    s->heap[0] = s->heap[--s->nheap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->nheap && s->heap[l].at < s->heap[m].at)
            m = l;
        if (r < s->nheap && s->heap[r].at < s->heap[m].at)
            m = r;
        if (m == i)
            break;
        heap_swap(s->heap, i, m);
        i = m;
    }
    return top;
}

/* Would firing d at its time do something (cycle.c fire_deadline)? The same checks, with
 * "due by now" read as "due by d->at": an entry whose job ended, restarted (a later start,
 * so a later limit), was stopped, started, was requeued with another begin time or already
 * starves is stale. */
bool deadline_live(const struct sched *s, const struct deadline *d)
{
    if (d->kind == DL_BOOST) {
        if (d->id >= s->nprojects)
            return false;
        const struct project *p = &s->projects[d->id];
        return p->boost && p->boost_until <= d->at;
    }
    const struct job *j = job_find(s, d->id);
    if (!j)
        return false;
    switch ((enum deadline_kind)d->kind) {
    case DL_LIMIT:
        return (j->state == SCHED_RUNNING || j->state == SCHED_STARTING) && j->limit_ms > 0 &&
               j->start_ms + j->limit_ms <= d->at;
    case DL_KILL:
        return j->state == SCHED_STOPPING && j->kill_at_ms <= d->at && !(j->flags & JF_KILL_SENT);
    case DL_ELIGIBLE:
        return j->nallocs && job_class(s, j)->preemptible &&
               j->start_ms + s->policy.min_runtime_ms == d->at;
    case DL_PROTECT: {
        int64_t protect = job_class(s, j)->protect_after_ms;
        return j->nallocs && job_class(s, j)->preemptible && protect > 0 &&
               j->start_ms + protect == d->at;
    }
    case DL_STARVE:
        return j->state == SCHED_PENDING && !(j->flags & JF_STARVING) &&
               job_starve_at(s, j) <= d->at;
    case DL_BEGIN: /* the walk looks at the begin time itself: the job may start then */
        return j->state == SCHED_PENDING && j->begin_ms == d->at;
    case DL_TOPO:
        return !j->topo_relaxed && j->switches && j->switches_wait_ms > 0 &&
               j->submit_ms + j->switches_wait_ms == d->at;
    default:
        return false;
    }
}

/* Pop the stale entries off the top: the top is then live, or the heap empty. */
void deadlines_prune(struct sched *s)
{
    while (s->nheap && !deadline_live(s, &s->heap[0]))
        (void)deadline_pop(s);
}

/* The earliest live entry below heap index i that is earlier than `best`: a live entry
 * hides its subtree (its children are no earlier), a stale one is looked through. */
static int64_t live_min(const struct sched *s, size_t i, int64_t best)
{
    if (i >= s->nheap || s->heap[i].at >= best)
        return best;
    if (deadline_live(s, &s->heap[i]))
        return s->heap[i].at;
    best = live_min(s, 2 * i + 1, best);
    return live_min(s, 2 * i + 2, best);
}

int64_t deadline_next_live(const struct sched *s)
{
    return live_min(s, 0, NEVER);
}
