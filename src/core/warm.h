/*
 * warm.h - what warm.c (floor 1) gives the other files of the core: the environments
 * warm on each node (docs/scheduling.md §3 "Warm nodes").
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_WARM_H
#define DOCKET_CORE_WARM_H

#include "core/types.h"

/* Is environment `env` (interned, > 0) warm on node n? */
bool node_warm_has(const struct node *n, uint32_t env);
/* Is `env` warm on any node (placement looks for warm nodes only then)? */
bool env_warm_anywhere(const struct sched *s, uint32_t env);
/* Node n's warm set becomes ids[0..nids) (interned, ascending, distinct). 0, or -ENOMEM
 * with nothing changed. */
int node_warm_replace(struct sched *s, struct node *n, const uint32_t *ids, int nids);
/* sched_check(): every node's set ascending, distinct and interned, and the counts per
 * key those of the sets. 0, or -1 with the first node at fault in *bad (NONE32: the
 * counts). */
int warm_check(const struct sched *s, uint32_t *bad);
void warm_release(struct sched *s);

#endif
