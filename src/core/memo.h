/*
 * memo.h - what memo.c (floor 2, a policy piece) gives the cycle: the preemption
 * searches that remember their failures, and their checks under sched_verify_memos().
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_MEMO_H
#define DOCKET_CORE_MEMO_H

#include "core/types.h"

bool memo_skips_entry(const struct sched *s, const struct order_entry *e, bool reclaim, int64_t dur,
                      int64_t now);
void memo_verify(struct sched *s, struct job *j, int64_t now);
/* sched_verify_memos(): the victim gate skipped j; its full search must find no victims. */
void gate_verify(struct sched *s, struct job *j, int64_t now);
int preempt_memoised(struct sched *s, struct job *j, int64_t now, struct sched_cycle_stats *st);

#endif
