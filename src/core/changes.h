/*
 * changes.h - what changes.c (floor 1) gives the other files of the core: the change
 * log and the shadow log, and the change counts that the quiet starving jobs' proofs rest
 * on.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_CHANGES_H
#define DOCKET_CORE_CHANGES_H

#include "core/types.h"

void node_changed(struct sched *s, struct node *n);
/* node_changed() without counting the change for the quiet starving jobs (the caller
   counted it, or claims_settle() will) */
void node_change_log(struct sched *s, struct node *n);
/* Count a change of n for the proofs of the quiet starving jobs (struct starving_entry). */
void changes_count(struct sched *s, struct node *n);
void changes_advance(struct sched *s, int64_t now);
size_t changes_since(struct sched *s, size_t logpos, int64_t since, int64_t now,
                     const uint32_t **nodes);
size_t changes_also(struct sched *s, size_t n, uint32_t idx);
void changes_free(struct sched *s);

#endif
