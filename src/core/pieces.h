/*
 * pieces.h - floor 2 of the core: the policy pieces (docs/architecture.md "Inside the
 * core"). Each decides one thing and changes the model only through floor 1's functions
 * (internal.h); none calls the cycle or an entry point, and none calls another piece
 * except memo.c, which calls preempt.c (scripts/check-core-floors.sh).
 *
 * admit.c    admission: the limits that hold a job back, and the reasons a job waits
 * order.c    the fair-share refresh of the queue order
 * place.c    where a job can start now (best fit, honouring claims)
 * reserve.c  where and from when a blocked job is promised room
 * preempt.c  who is stopped to make room, and which victims cost least
 * memo.c     the preemption memos: searches proven to fail, not repeated
 */
#ifndef DOCKET_CORE_PIECES_H
#define DOCKET_CORE_PIECES_H

#include "core/internal.h"

/* ---- admit.c */
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

/* ---- order.c */
/* The periodic refresh: shares, the queue rebuilt on them, ordinary reservations dropped. */
void order_refresh(struct sched *s, int64_t now);
void project_share_refresh(struct sched *s, struct project *p);

/* ---- place.c */
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
uint64_t pick_gpus(const struct node *n, int count);
bool reserved_could_fit(struct sched *s, const struct shape *sh);
int shape_static_reason(struct sched *s, struct shape *sh);

/* ---- reserve.c */
int reservation_make(struct sched *s, struct job *j, int64_t now, bool starving);
int64_t node_earliest(const struct sched *s, const struct node *n, const struct shape *sh,
                      int64_t now, int64_t dur, uint32_t own_res);

/* ---- preempt.c */
/* 0: victims signalled and their room reserved for j (sticky); 1: no new victim is needed,
 * jobs already stopping free the room; -1: no victim set makes room. */
struct preempt_scope {
    const uint32_t *nodes; /* search only these (single-node shapes), or NULL: all */
    size_t nnodes;
    int feasible;          /* out: nodes with a plan (gangs) */
    int64_t fail_dur;      /* out: the nodes without a plan fail for any job at least this long */
    bool not_earlier;      /* out: there were plans, none to start it before its own reservation */
    struct plan_cost best; /* out, one-node shapes with a plan: the cheapest found */
};
/* Is plan a costlier than plan b (plan_cheaper's order), each taken at the later of their
   times? Victims lose work at the rate of their count and a plan starts a fixed time after
   its search, so the order of two unchanged plans does not move with time. */
bool plan_costlier(const struct plan_cost *a, const struct plan_cost *b);
int preempt_for(struct sched *s, struct job *j, int64_t now, bool dry, struct preempt_scope *sc);
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

/* ---- memo.c */
bool memo_skips_entry(const struct sched *s, const struct order_entry *e, bool reclaim, int64_t dur,
                      int64_t now);
void memo_verify(struct sched *s, struct job *j, int64_t now);
/* sched_verify_memos(): the victim gate skipped j; its full search must find no victims. */
void gate_verify(struct sched *s, struct job *j, int64_t now);
int preempt_memoised(struct sched *s, struct job *j, int64_t now, struct sched_cycle_stats *st);

#endif
