/*
 * deps.h - the dependencies the core cannot settle alone (deps.c): on jobs and arrays
 * that ended, which only the database still knows, and the arrays whose tasks the core
 * holds only in part (a reload).
 */
#ifndef DOCKET_CONTROLLER_DEPS_H
#define DOCKET_CONTROLLER_DEPS_H

#include "controller/ctl.h"
#include "core/sched.h"

/* What the database says of a dependency of `kind` on the whole array `array_id`. */
enum ctl_array_dep {
    CTL_ARRAY_LIVE,    /* the core holds it */
    CTL_ARRAY_MET,     /* every task ended, and as the kind needs */
    CTL_ARRAY_NEVER,   /* every task ended, not as the kind needs (or afterok: one failed) */
    CTL_ARRAY_NONE,    /* no such array */
    CTL_ARRAY_WRITING, /* its rows are still being written: not all there */
    CTL_ARRAY_ERROR,   /* the database or the core failed (logged) */
};
enum ctl_array_dep ctl_array_dep_state(struct ctl *c, uint64_t array_id, enum sched_dep_kind kind);
/* On reload, before a task of array_id or a job that depends on the whole array is
 * restored: the core learns the array's tasks in all and those ended, so dependencies on
 * it wait for all of them. Nothing for an array that ended. 0 or -1 (logged). */
int ctl_array_declare(struct ctl *c, uint64_t array_id);
/* Settle sp's dependencies on jobs and arrays that ended (the store says how): those met
 * are dropped (with '?', all of them), those that can never be met are marked, and the
 * core keeps such a job pending, DependencyNeverSatisfied, as Slurm does. */
void ctl_deps_settle(struct ctl *c, struct sched_job_spec *sp);
enum sched_dep_kind ctl_dep_kind(const char *type); /* "afterok" ... */

#endif
