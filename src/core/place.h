/*
 * place.h - what place.c (floor 2, a policy piece) gives the cycle and sched_check():
 * where a job can start now (best fit, honouring claims), and its placement memo.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_PLACE_H
#define DOCKET_CORE_PLACE_H

#include "core/types.h"

enum place_result { PLACE_OK, PLACE_CLAIMED, PLACE_NO_CAPACITY };
/* Find nodes for `j` now, honouring claims of other reservations. On PLACE_OK fills
 * allocs (nnodes entries). *claimed_by_lower reports that only claims of lower-priority,
 * non-sticky reservations were in the way. On PLACE_CLAIMED, *held_until (when not NULL)
 * gets the latest end any node with room for the shape would have allowed (a job of the
 * shape ending later is held off everywhere), or -1 when that is not known. */
enum place_result place_job(struct sched *s, const struct job *j, int64_t now,
                            struct sched_alloc *allocs, bool *claimed_by_lower,
                            int64_t *held_until);
/* place_job() for a job that keeps a memo of its last placement without room (struct
 * place_memo): the same answer, from the nodes that changed since. Not for a caller that
 * asks claimed_by_lower or held_until. */
enum place_result place_job_memo(struct sched *s, struct job *j, int64_t now,
                                 struct sched_alloc *allocs);
/* Until when a placement that the claims held off (PLACE_CLAIMED) stays so with time alone
 * while no node changes: the first end of a refusal its current memo counts on; `now`
 * when it has no memo to say so. */
int64_t place_memo_wake(const struct sched *s, const struct job *j, int64_t now);
/* sched_check(): j's placement memo, if current, lists exactly the unchanged nodes with
 * room for its shape. 0, or -1 with *bad the first node that breaks it (NONE32: its size). */
int place_memo_check(const struct sched *s, const struct job *j, uint32_t *bad);
bool reserved_could_fit(struct sched *s, const struct shape *sh);
/* Why no node could ever take the shape (SCHED_R_NONE: some node can), for job `job`. */
int shape_static_reason(struct sched *s, struct shape *sh, uint64_t job);

#endif
