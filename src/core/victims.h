/*
 * victims.h - what victims.c (floor 1) gives the other files of the core: the
 * preemptible running jobs, counted per rank, project, node and selector set.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_VICTIMS_H
#define DOCKET_CORE_VICTIMS_H

#include "core/types.h"

void victim_eligibility_update(struct sched *s, struct job *v, int64_t now);
/* The same under a new policy, plus an entry for each rule of the job that the change put
   between the last cycle and now (the next cycle fires it). */
void victim_rules_after_policy(struct sched *s, struct job *v, int64_t now);
/* Set or clear a job's JF_VICTIM_ELIGIBLE, keeping the counters and node sums in step. */
void victim_mark(struct sched *s, struct job *v, bool eligible);
/* The node's victims added to (sign 1) or taken from (-1) the counts of the selector sets
   it matches: around a change of its labels. */
void victim_sel_node(struct sched *s, struct node *n, int sign);
/* Count selector set `selset` (just interned) from the nodes' victim_allocs. */
void victim_sel_recount(struct sched *s, uint32_t selset);

#endif
