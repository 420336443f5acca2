/*
 * deadlines.h - what deadlines.c (floor 1) gives the other files of the core: the
 * deadline heap of the time-based rules.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_DEADLINES_H
#define DOCKET_CORE_DEADLINES_H

#include "core/types.h"

void deadline_push(struct sched *s, int64_t at, uint64_t id, enum deadline_kind kind);
struct deadline deadline_pop(struct sched *s); /* the earliest; s->nheap > 0 */
bool deadline_live(const struct sched *s, const struct deadline *d); /* firing would act */
void deadlines_prune(struct sched *s);             /* the stale entries at the top */
int64_t deadline_next_live(const struct sched *s); /* the earliest live one, or NEVER */

#endif
