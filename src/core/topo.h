/*
 * topo.h - what topo.c (floor 1) gives the other files of the core: the topology of the
 * nodes as gangs see it (docs/scheduling.md §3, "Topology"). A node's domain at a level
 * is its value of the level's label (`switch=sw-3`); the domains of a level are listed in
 * node order. The floors: docs/architecture.md "Inside the core".
 */
#ifndef DOCKET_CORE_TOPO_H
#define DOCKET_CORE_TOPO_H

#include "core/types.h"

/* The rule of a job of class c with `nodes` nodes and Slurm's `switches` (0: none): its
 * mode, and in *level the label that names the domains. */
enum sched_topo_mode topo_rule(const struct sched_class_spec *c, int nodes, int switches,
                               const char **level);
/* The job's rule: the level's label key (interned, 0 = none) and the mode. Only gangs
 * have one; Slurm's --switches (j->switches) comes before its class's rule. */
void topo_of_job(struct sched *s, const struct job *j, uint32_t *key, uint8_t *mode);
/* The node's domain at the level `key`: its label's value (interned), 0 without one. */
uint32_t topo_node_domain(const struct node *n, uint32_t key);
/* Is the node in the part of the shape a search runs for (its one domain, when pinned)? */
bool topo_node_in_part(const struct node *n, const struct shape *sh);
/* Must the shape's nodes lie in one domain (searches run per domain)? */
bool topo_required(const struct shape *sh);
/* Is the shape a gang that packs into the fewest domains without requiring one? */
bool topo_best_effort(const struct shape *sh);
/* The distinct domains of the level `key`, in node order (cached until the nodes or their
 * labels change). Returns their count; *values borrowed until then. 0 on out of memory. */
size_t topo_domains(struct sched *s, uint32_t key, const uint32_t **values);
/* The index of `value` in the level's domain list, or -1. */
int topo_domain_index(const uint32_t *values, size_t n, uint32_t value);
/* Do the nodes keep the shape's rule (required: all in one domain)? */
bool topo_nodes_ok(const struct sched *s, const struct shape *sh, const uint32_t *nodes, int n);
void topo_release(struct sched *s);

#endif
