/*
 * shapes.h - what shapes.c (floor 1) gives the other files of the core: the shapes
 * (deduplicated requests) and the pool rule of a job's tier.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_SHAPES_H
#define DOCKET_CORE_SHAPES_H

#include "core/types.h"

uint32_t shape_intern(struct sched *s, const struct job *j, int rank, int *err);
void shape_rule_refresh(struct sched *s, struct job *j);
enum pool_rule job_pool_rule(const struct sched *s, const struct job *j, int rank);

#endif
