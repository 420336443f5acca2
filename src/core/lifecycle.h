/*
 * lifecycle.h - what lifecycle.c (floor 1, on top of the indexes) gives the files
 * above it: the job life cycle, every index kept in step.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_LIFECYCLE_H
#define DOCKET_CORE_LIFECYCLE_H

#include "core/types.h"

void job_set_state(struct sched *s, struct job *j, enum sched_job_state st);
void job_start(struct sched *s, struct job *j, const struct sched_alloc *allocs, int nallocs);
void job_release_resources(struct sched *s, struct job *j);
void job_to_pending(struct sched *s, struct job *j, int64_t begin_ms);
void job_finish(struct sched *s, struct job *j, enum sched_job_state st, const char *detail);
void job_stop(struct sched *s, struct job *j, enum sched_stop_cause cause, int signal,
              int64_t grace, uint64_t preemptor, int64_t now);
void job_nodes_touch(struct sched *s, const struct job *j);
void job_free_parts(struct job *j); /* its arrays freed (the job itself stays) */
/* A job of any-of dependencies (deps_any): ndeps_unmet 0 once one is met, else 1;
 * dep_never when every one can never be met. */
void job_deps_any_count(struct job *j);
/* One dependency of the waiter `w` is settled: met, or never to be (DependencyNever-
 * Satisfied for an all-of job; an any-of job recounts). */
void dep_settle(struct sched *s, struct job *w, struct job_dep *dep, bool met);
/* Settle every dependency on the whole array that its counters now decide (after one of
 * arrays.h's changes returned true), then forget the array if every task ended. */
void array_waiters_settle(struct sched *s, uint64_t array_id);

#endif
