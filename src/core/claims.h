/*
 * claims.h - what claims.c (floor 1) gives the other files of the core: reservations
 * as stored, their claims on nodes, what a node has free once claims count, the claims
 * changed between two starving walks, and the walk's hints.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_CLAIMS_H
#define DOCKET_CORE_CLAIMS_H

#include "core/types.h"

struct avail {
    int gpus, cpus;
    int64_t mem;
};
bool avail_covers(struct avail a, int gpus, int cpus, int64_t mem);
/* What node n will have free at time t: free now, plus what its jobs release by t (their
 * expected ends), minus the claims active then except reservation `own`. */
struct avail node_avail_at(const struct sched *s, const struct node *n, int64_t t, uint32_t own);
/* The same, counting only the claims that bind job j (claim_binds). */
struct avail node_avail_for(const struct sched *s, const struct node *n, int64_t t, uint32_t own,
                            const struct job *j);
bool claim_binds(const struct sched *s, uint32_t res, const struct job *j);
/* `hold`, when not NULL, gets until when the node holds the request from now (as
   avail_hold), or -1 when this check could not tell (an own claim or an overdue job there). */
bool claims_allow(const struct sched *s, const struct node *n, uint32_t own_res, int64_t now,
                  int64_t end, int gpus, int cpus, int64_t mem, const struct job *for_job,
                  bool *lower_only, int64_t *hold);
/* After claims_allow() refused with `hold`: the time before which it refuses the same
   request at any later moment while the node does not change (now: unknown). */
int64_t claims_refused_until(const struct sched *s, const struct node *n, int64_t now,
                             int64_t hold);
uint32_t reservation_add(struct sched *s, struct job *j, int64_t start, int64_t end,
                         const uint32_t *nodes, int nnodes, bool preempting, bool starving);
void reservation_drop(struct sched *s, uint32_t r);
/* The next live reservation at index r or past it (an ordinary one when `ordinary`), in
 * index order; s->nres when none is left. The loops over them:
 *   for (size_t r = res_next(s, 0, o); r < s->nres; r = res_next(s, r + 1, o)) */
size_t res_next(const struct sched *s, size_t r, bool ordinary);
/* An ordinary reservation whose job starves becomes sticky: it binds everyone now, so its
   nodes count as changed. */
void reservation_make_sticky(struct sched *s, uint32_t r);
/* Drop every ordinary reservation of a job j outranks, a gang's remembered as a hint for
   the rest of the walk. */
void reservation_drop_lower(struct sched *s, const struct job *j);
/* The hint left for j in this walk, taken (its nodes are the caller's to free); false when
   there is none. */
bool reservation_hint_take(struct sched *s, const struct job *j, struct res_hint *out);
/* Forget every hint (the walk is over). */
void reservation_hints_clear(struct sched *s);
void reservations_drop_all(struct sched *s, bool keep_sticky);
/* The claims changed since the last starving walk, counted at the start of this one if
   they differ (claims_will_change, claims.c). */
void claims_settle(struct sched *s);

#endif
