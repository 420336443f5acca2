/*
 * warm.c - the environments warm on each node (floor 1; docs/scheduling.md §3 "Warm
 * nodes"): per node the sorted set of the environment keys the caller says are ready
 * there (sched_node_set_warm), and per key how many nodes hold it, so that placement
 * looks for warm nodes only for a job whose environment is warm somewhere. No cache of
 * the core reads these sets: placement asks them afresh each time, and only to order the
 * nodes of one bucket, which no memo remembers (docs/scheduling.md "What each cache
 * reads").
 */
#include "core/warm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool node_warm_has(const struct node *n, uint32_t env)
{
    int lo = 0, hi = n->nwarm;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (n->warm[mid] == env)
            return true;
        if (n->warm[mid] < env)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

bool env_warm_anywhere(const struct sched *s, uint32_t env)
{
    return env > 0 && env < s->env_warm_cap && s->env_warm[env] > 0;
}

/* Room in the counts for every id up to `top`: the one allocation of a replace, done
 * before anything changes. */
static int counts_reserve(struct sched *s, uint32_t top)
{
    if (top < s->env_warm_cap)
        return 0;
    size_t cap = s->env_warm_cap ? s->env_warm_cap : 16;
    while (cap <= top)
        cap *= 2;
    uint32_t *p = realloc(s->env_warm, cap * sizeof(*p));
    if (!p)
        return -ENOMEM;
    memset(p + s->env_warm_cap, 0, (cap - s->env_warm_cap) * sizeof(*p));
    s->env_warm = p;
    s->env_warm_cap = cap;
    return 0;
}

int node_warm_replace(struct sched *s, struct node *n, const uint32_t *ids, int nids)
{
    uint32_t *set = NULL;
    if (nids > 0) {
        set = malloc((size_t)nids * sizeof(*set));
        if (!set || counts_reserve(s, ids[nids - 1]) < 0) {
            free(set);
            return -ENOMEM;
        }
        memcpy(set, ids, (size_t)nids * sizeof(*set));
    }
    for (int i = 0; i < n->nwarm; i++)
        s->env_warm[n->warm[i]]--;
    for (int i = 0; i < nids; i++)
        s->env_warm[set[i]]++;
    free(n->warm);
    n->warm = set;
    n->nwarm = nids;
    return 0;
}

int warm_check(const struct sched *s, uint32_t *bad)
{
    uint32_t *count = calloc(s->env_warm_cap ? s->env_warm_cap : 1, sizeof(*count));
    if (!count)
        return 0; /* out of memory: nothing to check with */
    int rc = 0;
    for (uint32_t idx = 0; idx < s->nnodes && rc == 0; idx++) {
        const struct node *n = &s->nodes[idx];
        for (int i = 0; i < n->nwarm && rc == 0; i++) {
            uint32_t id = n->warm[i];
            if (id == 0 || id > s->strings.n || id >= s->env_warm_cap ||
                (i > 0 && n->warm[i - 1] >= id)) {
                *bad = idx;
                rc = -1;
            } else {
                count[id]++;
            }
        }
    }
    for (size_t id = 0; id < s->env_warm_cap && rc == 0; id++)
        if (count[id] != s->env_warm[id]) {
            *bad = NONE32;
            rc = -1;
        }
    free(count);
    return rc;
}

void warm_release(struct sched *s)
{
    for (size_t i = 0; i < s->nnodes; i++) {
        free(s->nodes[i].warm);
        s->nodes[i].warm = NULL;
        s->nodes[i].nwarm = 0;
    }
    free(s->env_warm);
    s->env_warm = NULL;
    s->env_warm_cap = 0;
}
