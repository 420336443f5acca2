/*
 * avail.h - what avail.c (floor 1) gives the other files of the core: each node's
 * availability profile, its free capacity over time.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_AVAIL_H
#define DOCKET_CORE_AVAIL_H

#include "core/types.h"

void node_profile_touch(struct sched *s, struct node *n); /* its claims or capacity changed */
void node_holders_touch(struct sched *s, struct node *n); /* its jobs or their ends changed */
void node_claims_touch(struct sched *s, struct node *n);  /* after claims_will_change() */
bool avail_own_claim(const struct node *n, uint32_t own); /* reservation `own` claims it */
/* Until when does the node hold the request from `from` on, claims counted: the first
   time its room falls short (`from` itself when it is short now; NEVER: it holds). A job
   may run [from, end) there iff end <= the answer. -1: out of memory. */
int64_t avail_hold(const struct sched *s, const struct node *n, int64_t from, int gpus, int cpus,
                   int64_t mem);
/* The end of the stretch from `from` over which a request avail_hold() found held only
   until `hold` stays so while the profile stays (claims_refused_until). */
int64_t avail_refused_until(const struct sched *s, const struct node *n, int64_t from,
                            int64_t hold);
/* Does [from, to) hold the request, counting every claim? 1 yes, 0 no, -1 unknown. */
int avail_window(const struct sched *s, const struct node *n, int64_t from, int64_t to, int gpus,
                 int cpus, int64_t mem);
/* Earliest t >= now from which the shape holds for dur (counting every claim); NEVER when
 * no release makes room; -2 unknown (out of memory). */
int64_t avail_earliest(const struct sched *s, const struct node *n, const struct shape *sh,
                       int64_t now, int64_t dur);
bool avail_profile_fresh(const struct sched *s, const struct node *n);

#endif
