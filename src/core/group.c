/*
 * group.c - the group level of the hierarchy (DESIGN §2, docs/scheduling.md §2): counters
 * over a group's projects, its bounds from the policy, and its fair-share.
 *
 * A group exists once a project names it or the policy lists it, and stays (projects hold
 * its index). Its bounds are looked up in the policy by name at every policy change, so a
 * group the policy stops listing keeps its counters and loses its bounds. The counters
 * change with the projects' (group_count, called where a project's GPUs in use change):
 * sched_check() recounts them from the projects.
 */
#include "core/group.h"
#include "core/containers.h"

#include <errno.h>
#include <stdio.h> /* snprintf only */
#include <stdlib.h>
#include <string.h>

static int policy_group_find(const struct sched_policy *pol, const char *name)
{
    for (int i = 0; i < pol->ngroups; i++)
        if (strcmp(pol->groups[i].name, name) == 0)
            return i;
    return -1;
}

int sched_group_find(const struct sched *s, const char *name)
{
    for (size_t i = 0; i < s->ngroups; i++)
        if (strcmp(s->groups[i].name, name) == 0)
            return (int)i;
    return -ENOENT;
}

static int group_add(struct sched *s, const char *name)
{
    int i = sched_group_find(s, name);
    if (i >= 0)
        return i;
    if (grow((void **)&s->groups, &s->groups_cap, s->ngroups + 1, sizeof(*s->groups)) < 0)
        return -ENOMEM;
    struct group *g = &s->groups[s->ngroups];
    memset(g, 0, sizeof(*g));
    snprintf(g->name, sizeof(g->name), "%s", name);
    g->spec = policy_group_find(&s->policy, name);
    return (int)s->ngroups++;
}

/* Every group the policy lists exists, and every group's bounds follow the policy. */
void groups_sync_policy(struct sched *s)
{
    for (int i = 0; i < s->policy.ngroups; i++)
        (void)group_add(s, s->policy.groups[i].name); /* out of memory: listed later */
    for (size_t i = 0; i < s->ngroups; i++)
        s->groups[i].spec = policy_group_find(&s->policy, s->groups[i].name);
}

/* Put project p in the group named `name` ("" = none), moving what it holds. */
int group_attach(struct sched *s, struct project *p, const char *name)
{
    uint32_t to = NONE32;
    if (name[0]) {
        int i = group_add(s, name);
        if (i < 0)
            return i;
        to = (uint32_t)i;
    }
    if (to == p->group)
        return 0;
    struct group *old = project_group(s, p);
    if (old) {
        old->gpus_in_use -= p->gpus_in_use;
        old->running -= p->running;
        old->nprojects--;
    }
    p->group = to;
    struct group *g = project_group(s, p);
    if (g) {
        g->gpus_in_use += p->gpus_in_use;
        g->running += p->running;
        g->nprojects++;
    }
    s->order_dirty = true; /* its share compares within another group now */
    s->memo_epoch++;       /* reclaim rules changed: struct preempt_memo */
    return 0;
}

int group_gpu_limit(const struct sched *s, const struct group *g)
{
    return g->spec < 0 ? -1 : s->policy.groups[g->spec].gpu_limit;
}

bool group_over_guarantee(const struct sched *s, const struct group *g)
{
    double gu = group_guarantee(s, g);
    return gu >= 0 && g->gpus_in_use > gu + 1e-9;
}

/* A project of the group took (gpus > 0) or gave back GPUs and running jobs. */
void group_count(struct sched *s, const struct project *p, int gpus, int running)
{
    struct group *g = project_group(s, p);
    if (!g)
        return;
    bool was_over = group_over_guarantee(s, g);
    g->gpus_in_use += gpus;
    g->running += running;
    g->usage_changes++;
    if (!was_over && group_over_guarantee(s, g))
        s->reclaim_epoch++; /* its projects' jobs may now be reclaimed: struct preempt_memo */
}

/* A group's share: its projects' usage (already accrued and averaged in their shares)
 * over its guarantee, or over theirs when it has none of its own. One pass over the
 * projects; the sums are kept in the groups' share field until divided. */
void groups_share_refresh(struct sched *s)
{
    double *guarantees = calloc(s->ngroups + 1, sizeof(*guarantees));
    for (size_t i = 0; i < s->ngroups; i++)
        s->groups[i].share = 0;
    for (size_t k = 0; k < s->nprojects; k++) {
        const struct project *p = &s->projects[k];
        struct group *g = project_group(s, p);
        if (!g)
            continue;
        double pg = p->spec.guarantee_gpus > 0 ? p->spec.guarantee_gpus : 0.01;
        g->share += p->share * pg; /* back to its average usage */
        if (guarantees)
            guarantees[p->group] += p->spec.guarantee_gpus;
    }
    for (size_t i = 0; i < s->ngroups; i++) {
        struct group *g = &s->groups[i];
        double gu = group_guarantee(s, g), theirs = guarantees ? guarantees[i] : 0;
        g->share /= gu > 0 ? gu : theirs > 0 ? theirs : 0.01;
    }
    free(guarantees);
}

size_t sched_group_count(const struct sched *s)
{
    return s->ngroups;
}

int sched_group_get(const struct sched *s, size_t index, struct sched_group_view *out)
{
    if (index >= s->ngroups)
        return -ENOENT;
    const struct group *g = &s->groups[index];
    memset(out, 0, sizeof(*out));
    if (g->spec >= 0) {
        out->spec = s->policy.groups[g->spec];
    } else {
        snprintf(out->spec.name, sizeof(out->spec.name), "%s", g->name);
        out->spec.guarantee_gpus = -1;
        out->spec.gpu_limit = -1;
    }
    out->gpus_in_use = g->gpus_in_use;
    out->running = g->running;
    out->projects = g->nprojects;
    out->share = g->share;
    return 0;
}
