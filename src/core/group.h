/*
 * group.h - what group.c (floor 1) gives the other files of the core: a project's group,
 * the groups' bounds from the policy, their counters and their fair-share. The reads the
 * queue walk makes inline (project_group, project_can_reclaim) are in types.h.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_GROUP_H
#define DOCKET_CORE_GROUP_H

#include "core/types.h"

int group_attach(struct sched *s, struct project *p, const char *name);
void groups_sync_policy(struct sched *s);
int group_gpu_limit(const struct sched *s, const struct group *g); /* -1: none */
void group_count(struct sched *s, const struct project *p, int gpus, int running);
bool group_over_guarantee(const struct sched *s, const struct group *g);
void groups_share_refresh(struct sched *s);

#endif
