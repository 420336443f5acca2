/*
 * reserve.h - what reserve.c (floor 2, a policy piece) gives the cycle and the
 * views: where and from when a blocked job is promised room.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_RESERVE_H
#define DOCKET_CORE_RESERVE_H

#include "core/types.h"

int reservation_make(struct sched *s, struct job *j, int64_t now, bool starving);
int64_t node_earliest(const struct sched *s, const struct node *n, const struct shape *sh,
                      int64_t now, int64_t dur, uint32_t own_res);

#endif
