/*
 * topo.c - the nodes' topology as gang placement reads it (floor 1): which domain (switch,
 * block, rack) a node is in, the domains of a level in node order, and each job's rule
 * (docs/scheduling.md §3, "Topology"). The choices themselves are made where the nodes are
 * chosen: place.c (now), reserve.c (a reservation), preempt.c (victims); each runs its
 * search once per domain for a gang that requires one (nodes.c shape_part_next).
 */
#include "core/topo.h"
#include "core/containers.h"

#include <stdlib.h>
#include <string.h>

enum sched_topo_mode topo_rule(const struct sched_class_spec *c, int nodes, int switches,
                               const char **level)
{
    *level = c->topo_level[0] ? c->topo_level : "switch";
    if (nodes <= 1)
        return SCHED_TOPO_NONE; /* one node is in one domain */
    if (switches > 0) {
        /* Slurm's --switches=N counts leaf switches: 1 requires one, more ask for few */
        *level = "switch";
        return switches == 1 ? SCHED_TOPO_REQUIRED : SCHED_TOPO_BEST_EFFORT;
    }
    return c->topo_mode;
}

void topo_of_job(struct sched *s, const struct job *j, uint32_t *key, uint8_t *mode)
{
    const char *level;
    enum sched_topo_mode m = topo_rule(&s->policy.classes[j->klass], j->nodes,
                                       j->topo_relaxed ? 0 : j->switches, &level);
    *key = m == SCHED_TOPO_NONE ? 0 : strtab_intern(&s->strings, level);
    *mode = *key ? (uint8_t)m : (uint8_t)SCHED_TOPO_NONE;
}

uint32_t topo_node_domain(const struct node *n, uint32_t key)
{
    for (int i = 0; i < n->nlabels; i++)
        if (n->label_ids[i].key == key)
            return n->label_ids[i].value;
    return 0;
}

bool topo_node_in_part(const struct node *n, const struct shape *sh)
{
    return !sh->topo_pinned || topo_node_domain(n, sh->topo_key) == sh->topo_value;
}

bool topo_required(const struct shape *sh)
{
    return sh->topo_key && sh->topo_mode == SCHED_TOPO_REQUIRED && sh->nodes > 1;
}

bool topo_best_effort(const struct shape *sh)
{
    return sh->topo_key && sh->topo_mode == SCHED_TOPO_BEST_EFFORT && sh->nodes > 1;
}

static struct topo_level *level_find(struct sched *s, uint32_t key)
{
    for (size_t i = 0; i < s->ntopo_levels; i++)
        if (s->topo_levels[i].key == key)
            return &s->topo_levels[i];
    if (grow((void **)&s->topo_levels, &s->topo_levels_cap, s->ntopo_levels + 1,
             sizeof(*s->topo_levels)) < 0)
        return NULL;
    struct topo_level *l = &s->topo_levels[s->ntopo_levels++];
    memset(l, 0, sizeof(*l));
    l->key = key;
    l->node_epoch = UINT64_MAX; /* not listed yet */
    return l;
}

int topo_domain_index(const uint32_t *values, size_t n, uint32_t value)
{
    for (size_t i = 0; i < n; i++)
        if (values[i] == value)
            return (int)i;
    return -1;
}

/* List the level's domains again, in the order their first nodes come. */
static bool level_list(struct sched *s, struct topo_level *l)
{
    l->n = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        uint32_t v = topo_node_domain(&s->nodes[i], l->key);
        if (topo_domain_index(l->values, l->n, v) >= 0)
            continue;
        if (grow((void **)&l->values, &l->cap, l->n + 1, sizeof(*l->values)) < 0)
            return false;
        l->values[l->n++] = v;
    }
    l->node_epoch = s->node_epoch;
    return true;
}

size_t topo_domains(struct sched *s, uint32_t key, const uint32_t **values)
{
    struct topo_level *l = level_find(s, key);
    if (!l || (l->node_epoch != s->node_epoch && !level_list(s, l))) {
        if (l)
            l->node_epoch = UINT64_MAX;
        return 0;
    }
    *values = l->values;
    return l->n;
}

bool topo_nodes_ok(const struct sched *s, const struct shape *sh, const uint32_t *nodes, int n)
{
    if (!topo_required(sh) || n < 1)
        return true;
    uint32_t first = topo_node_domain(&s->nodes[nodes[0]], sh->topo_key);
    for (int i = 1; i < n; i++)
        if (topo_node_domain(&s->nodes[nodes[i]], sh->topo_key) != first)
            return false;
    return true;
}

void topo_release(struct sched *s)
{
    for (size_t i = 0; i < s->ntopo_levels; i++)
        free(s->topo_levels[i].values);
    free(s->topo_levels);
    s->topo_levels = NULL;
    s->ntopo_levels = s->topo_levels_cap = 0;
}
