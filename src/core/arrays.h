/*
 * arrays.h - what arrays.c (floor 1) gives the files above it: each array's counters,
 * kept in step with its tasks' submissions, starts and ends, and the dependencies on a
 * whole array (Slurm's afterok:ARRAY_ID) that read them.
 */
#ifndef DOCKET_CORE_ARRAYS_H
#define DOCKET_CORE_ARRAYS_H

#include "core/types.h"

/* The array's counters, or NULL when the core does not know it. */
struct array_count *array_find(const struct sched *s, uint64_t array_id);
/* A task joins its array (submitted, restored, or back after an update). -ENOMEM. */
int array_register(struct sched *s, const struct sched_job_spec *sp);
/* The counters' changes below return true when an answer for some kind of dependency on
 * the array became known: the caller then settles its waiters (array_waiters_settle,
 * lifecycle.h), which also forgets an array whose every task ended. */
/* A pending task leaves as if never submitted: withdrawn (the rest of the array may
 * decide its waiters), or coming_back at once with a new request (an update: nothing is
 * decided). */
bool array_unregister(struct sched *s, const struct job *j, bool coming_back);
/* A task's first start since it was submitted (job_start sets JF_STARTED). */
bool array_task_started(struct sched *s, const struct job *j);
/* A task ended for good (ok: COMPLETED). */
bool array_task_ended(struct sched *s, const struct job *j, bool ok);
/* A task the core never held ended (sched_array_task_gone). */
bool array_task_gone(struct sched *s, uint64_t array_id, bool ok);
/* The array dropped once every task ended (its waiters settled first). */
void array_forget_if_ended(struct sched *s, uint64_t array_id);

enum dep_verdict { DEP_WAIT, DEP_MET, DEP_NEVER };
/* What the whole array says of a dependency of `kind` now. */
enum dep_verdict array_dep_verdict(const struct array_count *a, enum sched_dep_kind kind);
/* The job in `slot` (id) waits on the whole array: settled by array_waiters_settle. */
int array_add_waiter(struct array_count *a, uint32_t slot, uint64_t id);
void array_counts_free(struct sched *s); /* at sched_destroy */

#endif
