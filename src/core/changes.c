/*
 * changes.c - which nodes may have changed their answer to a preemption search since a
 * given moment (struct preempt_memo): the change log and the shadow log.
 *
 * The change log lists every node whose jobs, claims or victims changed, in order: a node
 * is appended when it changes, unless it is already there after the last memo was made
 * (chlog_mark), so the log grows with changes between memos, not with all changes.
 *
 * A node can also let a preemption succeed with time alone: a preemptor starts once its
 * victims' grace is over, so a search at T looks at the node's room at T + g for each
 * grace g of the jobs there (0 when no victim is needed), and at T' > T at T' + g. The room
 * between only grows at a release of a job or the end of a claim. So for each such rise r
 * and grace g, r - g is a "shadow": a search's failure on the node holds from T to T' if no
 * shadow falls in (T, T']. A heap holds each node's next shadow; changes_advance() moves
 * the due ones to the shadow log, in time order. A node's schedule is rebuilt when it
 * changes (it is in the change log then anyway).
 *
 * Both logs are cleared, and every memo with them (memo_epoch), when they grow past a few
 * entries per node.
 */
#include "core/changes.h"
#include "core/containers.h"
#include "core/model.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_GRACES = 16 };

static int push_u32(uint32_t **arr, size_t *n, size_t *cap, uint32_t v)
{
    if (grow((void **)arr, cap, *n + 1, sizeof(**arr)) < 0)
        return -1;
    (*arr)[(*n)++] = v;
    return 0;
}

void changes_count(struct sched *s, struct node *n)
{
    int now_free = node_free_gpus(n);
    int top = now_free > n->room_logged ? now_free : n->room_logged;
    n->room_logged = now_free;
    if (top >= NBUCKETS)
        top = NBUCKETS - 1;
    s->node_changes++;
    for (uint64_t m = node_selsets(s, n); m; m &= m - 1) {
        int k = __builtin_ctzll(m);
        s->sel_changes[k]++;
        for (int f = 0; f <= top; f++)
            s->sel_room_changes[k][f]++;
    }
    for (int f = 0; f <= top; f++) {
        s->room_changes[NTYPES][f]++;
        if (n->gpu_type > 0)
            s->room_changes[n->gpu_type][f]++;
    }
}

void node_changed(struct sched *s, struct node *n)
{
    changes_count(s, n);
    node_change_log(s, n);
}

void node_change_log(struct sched *s, struct node *n)
{
    uint32_t idx = (uint32_t)(n - s->nodes);
    if (!n->shadow_dirty && push_u32(&s->shdirty, &s->nshdirty, &s->shdirty_cap, idx) == 0)
        n->shadow_dirty = true;
    if (n->logged_at > s->chlog_mark)
        return; /* already logged after the last memo */
    if (push_u32(&s->chlog, &s->nchlog, &s->chlog_cap, idx) < 0) {
        s->memo_epoch++; /* could not log it: no memo may trust the log */
        s->log_resets++; /* (counted all the same for the quiet starving jobs) */
        return;
    }
    n->logged_at = s->nchlog;
}

/* ---- the shadow heap (min on `at`) */

static void heap_up(struct shadow *h, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p].at <= h[i].at)
            break;
        struct shadow t = h[p];
        h[p] = h[i];
        h[i] = t;
        i = p;
    }
}

static void heap_down(struct shadow *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l].at < h[m].at)
            m = l;
        if (r < n && h[r].at < h[m].at)
            m = r;
        if (m == i)
            return;
        struct shadow t = h[m];
        h[m] = h[i];
        h[i] = t;
        i = m;
    }
}

static void heap_push(struct sched *s, struct shadow e)
{
    if (grow((void **)&s->shheap, &s->shheap_cap, s->nshheap + 1, sizeof(*s->shheap)) < 0) {
        s->memo_epoch++; /* a lost shadow: no memo may trust the log */
        return;
    }
    s->shheap[s->nshheap] = e;
    heap_up(s->shheap, s->nshheap++);
}

static struct shadow heap_pop(struct sched *s)
{
    struct shadow top = s->shheap[0];
    s->shheap[0] = s->shheap[--s->nshheap];
    heap_down(s->shheap, s->nshheap, 0);
    return top;
}

/* The distinct graces of the node's jobs, and 0. More than MAX_GRACES: -1 (the node is
 * then treated as changing all the time). */
static int node_graces(const struct sched *s, const struct node *n, int64_t *g)
{
    int ng = 0;
    g[ng++] = 0;
    for (uint32_t i = 0; i < n->jobs.n; i++) {
        int64_t v = s->jobs[n->jobs.v[i]].grace_ms;
        int k = 0;
        while (k < ng && g[k] != v)
            k++;
        if (k < ng)
            continue;
        if (ng == MAX_GRACES)
            return -1;
        g[ng++] = v;
    }
    return ng;
}

/* The node's first shadow after `after`, or NEVER. */
static int64_t next_shadow(const struct sched *s, const struct node *n, int64_t after)
{
    int64_t g[MAX_GRACES];
    int ng = node_graces(s, n, g);
    if (ng < 0)
        return after + 1;
    n = node_releases(s, n);
    int64_t best = NEVER;
    for (int k = 0; k < ng; k++) {
        int64_t from = after + g[k]; /* rises after this count */
        int lo = 0, hi = n->nrel;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (n->rel[mid].at <= from)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < n->nrel && n->rel[lo].at < NEVER && n->rel[lo].at - g[k] < best)
            best = n->rel[lo].at - g[k];
        for (int c = 0; c < n->nclaims; c++) {
            int64_t end = n->claims[c].end;
            if (end > from && end < NEVER && end - g[k] < best)
                best = end - g[k];
        }
    }
    return best;
}

static void schedule_node(struct sched *s, uint32_t idx, int64_t after)
{
    struct node *n = &s->nodes[idx];
    int64_t at = next_shadow(s, n, after);
    if (at < NEVER)
        heap_push(s, (struct shadow){at, idx, n->shadow_gen});
}

/* Forget both logs (and so every memo) once they hold a few entries per node. */
static void changes_compact(struct sched *s)
{
    size_t cap = 4 * s->nnodes + 4096;
    if (s->nchlog < cap && s->nshlog < cap)
        return;
    s->memo_epoch++;
    s->log_resets++;
    s->nchlog = s->chlog_mark = 0;
    s->nshlog = 0;
    for (size_t i = 0; i < s->nnodes; i++)
        s->nodes[i].logged_at = 0;
}

/* At a cycle's start: reschedule the nodes that changed, then log every node with a
 * shadow in (done, now] (sched_cycle calls this with its own time, the time its memos
 * carry). */
void changes_advance(struct sched *s, int64_t now)
{
    changes_compact(s);
    int64_t done = s->shadow_done;
    for (size_t i = 0; i < s->nshdirty; i++) {
        struct node *n = &s->nodes[s->shdirty[i]];
        n->shadow_dirty = false;
        n->shadow_gen++;
        schedule_node(s, s->shdirty[i], done);
    }
    s->nshdirty = 0;
    while (s->nshheap > 0 && s->shheap[0].at <= now) {
        struct shadow e = heap_pop(s);
        if (e.gen != s->nodes[e.node].shadow_gen)
            continue; /* from a schedule the node has since replaced */
        if (grow((void **)&s->shlog, &s->shlog_cap, s->nshlog + 1, sizeof(*s->shlog)) < 0)
            s->memo_epoch++, s->log_resets++;
        else
            s->shlog[s->nshlog++] = e;
        changes_count(s, &s->nodes[e.node]); /* a preemption may succeed there now */
        /* one entry per node and advance is enough: a memo's time is always the time of
           some advance, so none lies inside (done, now] */
        schedule_node(s, e.node, now);
    }
    if (now > s->shadow_done)
        s->shadow_done = now;
}

static void visit_add(struct sched *s, uint32_t idx, size_t *n)
{
    struct node *nd = &s->nodes[idx];
    if (nd->visit == s->visit)
        return;
    nd->visit = s->visit;
    s->chscratch[(*n)++] = idx;
}

/* The distinct nodes that changed after log position `logpos` or have a shadow in
 * (since, now]; *nodes points into scratch space valid until the next call. */
size_t changes_since(struct sched *s, size_t logpos, int64_t since, int64_t now,
                     const uint32_t **nodes)
{
    *nodes = NULL;
    if (grow((void **)&s->chscratch, &s->chscratch_cap, s->nnodes + 1, sizeof(*s->chscratch)) < 0)
        return SIZE_MAX;
    if (++s->visit == 0) {
        for (size_t i = 0; i < s->nnodes; i++)
            s->nodes[i].visit = 0;
        s->visit = 1;
    }
    size_t n = 0;
    for (size_t i = logpos; i < s->nchlog; i++)
        visit_add(s, s->chlog[i], &n);
    if (since < now) {
        size_t lo = 0, hi = s->nshlog; /* the first shadow after `since` */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (s->shlog[mid].at <= since)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; i < s->nshlog && s->shlog[i].at <= now; i++)
            visit_add(s, s->shlog[i].node, &n);
    }
    *nodes = s->chscratch;
    return n;
}

/* Add one more node to the last changes_since() answer, unless it is there. */
size_t changes_also(struct sched *s, size_t n, uint32_t idx)
{
    visit_add(s, idx, &n);
    return n;
}

void changes_free(struct sched *s)
{
    free(s->chlog);
    free(s->shlog);
    free(s->shheap);
    free(s->shdirty);
    free(s->chscratch);
}
