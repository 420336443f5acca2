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
/* A pending task leaves as if never submitted: withdrawn (its waiters are settled when
 * the rest of the array decides them), or coming_back at once with a new request (an
 * update: nothing is decided). */
void array_unregister(struct sched *s, const struct job *j, bool coming_back);
/* A task's first start since it was submitted (job_start sets JF_STARTED). */
void array_task_started(struct sched *s, const struct job *j);
/* A task ended for good (ok: COMPLETED): its waiters are settled when that decides them,
 * and the array is forgotten once every task ended. */
void array_task_ended(struct sched *s, const struct job *j, bool ok);

enum dep_verdict { DEP_WAIT, DEP_MET, DEP_NEVER };
/* What the whole array says of a dependency of `kind` now. */
enum dep_verdict array_dep_verdict(const struct array_count *a, enum sched_dep_kind kind);
/* The job in `slot` (id) waits on the whole array: settled by array_task_ended/started. */
int array_add_waiter(struct array_count *a, uint32_t slot, uint64_t id);
void array_counts_free(struct sched *s); /* at sched_destroy */

#endif
