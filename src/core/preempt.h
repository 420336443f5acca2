/*
 * preempt.h - what preempt.c (floor 2, a policy piece) gives memo.c and the cycle:
 * the victim search for a preemptor, the order of plans, and the victim gate.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_PREEMPT_H
#define DOCKET_CORE_PREEMPT_H

#include "core/types.h"

struct preempt_scope {
    const uint32_t *nodes; /* search only these (single-node shapes), or NULL: all */
    size_t nnodes;
    int feasible;          /* out: nodes with a plan (gangs): exact below the shape's node
                              count, at least that count otherwise (a search the plan
                              memo's leaders answered counts the one it chose) */
    int64_t fail_dur;      /* out: the nodes without a plan fail for any job at least this long */
    bool not_earlier;      /* out: there were plans, none to start it before its own reservation */
    struct plan_cost best; /* out, one-node shapes with a plan: the cheapest found */
};
/* 0: victims signalled and their room reserved for j (sticky); 1: no new victim is needed,
 * jobs already stopping free the room; -1: no victim set makes room. */
int preempt_for(struct sched *s, struct job *j, int64_t now, bool dry, struct preempt_scope *sc);
/* Is plan a costlier than plan b (plan_cheaper's order), each taken at the later of their
   times? Victims lose work at the rate of their count and a plan starts a fixed time after
   its search, so the order of two unchanged plans does not move with time. */
bool plan_costlier(const struct plan_cost *a, const struct plan_cost *b);
/* The victim gate: could a job of selector set `selset` and effective rank `rank` find any
   victim on a node it could use (a victim is of a lower tier, or of its own when it may
   reclaim)? Counts eligible victims on the nodes that match the selector set. False proves
   every search would fail (docs/scheduling.md "The victim gate"). */
bool victims_exist_for(const struct sched *s, uint32_t selset, int rank, bool reclaims);
/* Victims of its own tier that a job of the selector set and rank could take were its
 * project allowed to reclaim (borrowers' jobs on nodes it matches): false proves that
 * whether it may reclaim changes no search. */
bool reclaim_victims_exist(const struct sched *s, uint32_t selset, int rank);
/* The same for a job of `project` that would hold `gpus` more, asking whether it may
 * reclaim (project_can_reclaim, into *reclaims) only when the answer depends on it: the
 * queue walk's gate, asked for every entry it skips. *reclaims is set when true comes. */
bool victims_gate(const struct sched *s, uint32_t selset, int rank, uint32_t project, int gpus,
                  bool *reclaims);

#endif
