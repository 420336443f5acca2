/*
 * nodes.h - what nodes.c (floor 1) gives the other files of the core: node states,
 * the reserved zone, the free-capacity buckets, node fit and the candidates of a shape.
 * node_free_gpus and reservation_usable_proven, read inline, are in types.h.
 * The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_NODES_H
#define DOCKET_CORE_NODES_H

#include "core/types.h"

void node_set_state_internal(struct sched *s, struct node *n, enum sched_node_state st);
/* n's state, capacity, labels or pool moved: node_epoch, and n in the change log */
void node_moved(struct sched *s, struct node *n);
void reserved_zone_recompute(struct sched *s);
void zone_refresh(struct sched *s);
void bucket_remove(struct sched *s, uint32_t node);
void bucket_update(struct sched *s, uint32_t node);
int node_bucket_key(const struct node *n);
bool node_schedulable(const struct node *n);
bool node_is_candidate(const struct sched *s, const struct node *n, const struct shape *sh);
bool node_static_fit(const struct sched *s, const struct node *n, const struct shape *sh,
                     bool pool_ok_only);
bool node_pool_allowed(const struct node *n, enum pool_rule rule);
/* Is every node of r up and, statically, one that r's job j may use? */
bool reservation_nodes_usable(const struct sched *s, const struct reservation *r,
                              const struct job *j);
bool node_free_fit(const struct node *n, const struct shape *sh);
/* A gang that asks for GPUs of any type: placed, reserved and preempted for one type at a
 * time, through a copy of its shape fixed to that type. */
bool shape_spans_types(const struct shape *sh);
struct shape shape_typed(const struct shape *sh, int type);
/* The parts a search for a shape runs over, one at a time: each GPU type of a gang that
 * names none (its nodes must be alike) and, within it, each domain of a topology the
 * gang requires (topo.c); for a best-effort gang, every node first, then each domain
 * alone (the caller prefers a domain's answer when it is as good); any other shape is
 * its one part. */
struct shape_parts {
    struct shape base;
    const uint32_t *domains; /* NULL: no domain pinned */
    size_t ndomains, d;      /* parts within a type (free_first: 1 + the domains) */
    int t, t_end;
    bool spans, free_first;
};
void shape_parts_begin(struct sched *s, const struct shape *sh, struct shape_parts *it);
bool shape_part_next(struct shape_parts *it, struct shape *out);
/* Call fn for every UP node of the shape's type, in the pools its rule allows, that could
 * hold it when empty (the candidates of reservations and preemption). */
void shape_candidates_each(struct sched *s, const struct shape *sh,
                           void (*fn)(struct sched *s, uint32_t node, void *ctx), void *ctx);

#endif
