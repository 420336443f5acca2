/*
 * lease.h - what lease.c owns: when a job on a silent node is declared lost
 * (docs/agent.md "Fencing and leases"). A node silent past node_timeout + margin is UNREACHABLE: it
 * takes no new work, but its jobs run on under the leases its agent holds. Each job is
 * declared lost (NODE_FAIL, requeued where its class allows) only once its lease, plus
 * the margin, has passed since the last request heard from the node; after a restart of
 * docketd, since the restart (no lease it granted can be later). The lease of each run is
 * the one stored with it (store_run.lease_ms), never the policy's of today. Owns
 * ctl_node.lease_check_ms.
 */
#ifndef DOCKET_CONTROLLER_LEASE_H
#define DOCKET_CONTROLLER_LEASE_H

#include <stdint.h>

struct ctl;
struct ctl_node;

/* The controller's margin past a lease before it declares a job lost. */
int64_t ctl_lease_margin_ms(const struct ctl *c);
/* Node n has gone silent (UNREACHABLE): look at its jobs' leases at the next tick. */
void ctl_leases_watch(struct ctl_node *n, int64_t mono);
/* Each tick, for an UNREACHABLE node: declare lost the jobs whose lease has run out, and
 * note when the next one does. */
void ctl_leases_tick(struct ctl *c, struct ctl_node *n, int64_t mono);
/* The wall-clock ms at which the next of n's jobs will be declared lost; 0 when none
 * (the node is heard from, or nothing runs there). */
int64_t ctl_leases_next_end_ms(struct ctl *c, struct ctl_node *n);
/* The wall-clock ms at which job `id` on node n is declared lost if n stays silent; 0
 * when n is not silent or the job does not run there. */
int64_t ctl_lease_end_ms(struct ctl *c, const struct ctl_node *n, uint64_t id);

#endif
