/*
 * queue.h - what queue.c (floor 1) gives the other files of the core: the pending
 * queue (its key and comparison) and the starving list.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_QUEUE_H
#define DOCKET_CORE_QUEUE_H

#include "core/types.h"

void order_insert(struct sched *s, struct job *j);
void order_remove(struct sched *s, struct job *j);
/* The rebuild of the queue alone from the shares as they stand (a forced full cycle, and
   the periodic refresh, order.c). */
void order_rebuild(struct sched *s, int64_t now, bool rekey);
void order_merge_new(struct sched *s);
/* The effective rank the job's queue entry was made at; -1 when it has none. */
int order_entry_rank(const struct sched *s, const struct job *j);
uint64_t job_key1(const struct sched *s, const struct job *j, int64_t now);
int cmp_entries(const struct order_entry *a, const struct order_entry *b);
void starvation_watch(struct sched *s, struct job *j, int64_t now);
/* Drop the slot's entry from the starving list, if it has one (a new job takes the slot, or
   the slot's job starves anew). */
void starving_forget_slot(struct sched *s, uint32_t slot);
/* The pending jobs in slots[0..n) have a new effective rank (a boost, or its end): each
   watched again, and the starving list made right for them (queue.c). */
void starving_rewatch(struct sched *s, const uint32_t *slots, size_t n);
/* The job (back) in the queue at `now`: from when its starvation age counts. */
void job_mark_eligible(struct sched *s, struct job *j, int64_t now);

#endif
