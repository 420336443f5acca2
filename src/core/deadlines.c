/*
 * deadlines.c - the deadline index (floor 1): a min-heap of (time, job or project, kind)
 * for the time-based rules. Stale entries stay in it and are checked when popped: the
 * cycle (cycle.c fire_deadlines) pops what is due and decides what each means.
 */
#include "core/internal.h"

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
