/*
 * order.h - what order.c (floor 2, a policy piece) gives the cycle and the cluster
 * entry points: the fair-share refresh of the queue order.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_ORDER_H
#define DOCKET_CORE_ORDER_H

#include "core/types.h"

/* The periodic refresh: shares, the queue rebuilt on them, ordinary reservations dropped. */
void order_refresh(struct sched *s, int64_t now);
/* A boost or its end moved the effective tier of the project's jobs: theirs made again. */
void order_project_rerank(struct sched *s, uint32_t project);
void project_share_refresh(struct sched *s, struct project *p);

#endif
