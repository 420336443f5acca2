/*
 * admit.h - what admit.c (floor 2, a policy piece) gives the cycle and the views: the
 * limits that hold a job back, and the reasons a job waits.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_ADMIT_H
#define DOCKET_CORE_ADMIT_H

#include "core/types.h"

void reason_set(struct job *j, enum sched_reason r, int64_t value, int64_t in_use, int64_t req);
/* The admission rules' answer for a job, without acting on it: the limit and its
   numbers, and what the limit holds back besides the job (its whole project, its project's
   or group's GPU jobs) for the rest of the cycle. */
enum adm_blocks {
    ADM_BLOCKS_NONE,
    ADM_BLOCKS_PROJECT,
    ADM_BLOCKS_PROJECT_GPUS,
    ADM_BLOCKS_GROUP_GPUS
};
struct admission {
    int64_t value, in_use, request;
    enum adm_blocks blocks;
};
enum sched_reason admission_check(const struct sched *s, const struct job *j, int64_t now,
                                  struct admission *a);
enum sched_reason job_admission(struct sched *s, struct job *j, int64_t now);
/* Could usage (its project's, group's, user's or array's) hold j back, now or after a start
   or an end? Derived from the limits admission_check reads (quiet proofs rest on it). */
bool admission_limited(const struct sched *s, const struct job *j);

#endif
