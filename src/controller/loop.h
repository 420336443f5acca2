/*
 * loop.h - what loop.c owns: the scheduling loop and its decisions, the per-node records
 * and command queues, job events and audit entries, the classes' node fields, and the
 * rule that keeps the core and the database together.
 */
#ifndef DOCKET_CONTROLLER_LOOP_H
#define DOCKET_CONTROLLER_LOOP_H

#include <jansson.h>
#include <stdint.h>

#include "controller/ctl.h"
#include "core/sched.h"
#include "protocol/proto.h"

void ctl_cycle_soon(struct ctl *c);
/* Run one cycle now and apply its decisions (used when a reply needs the result). */
void ctl_cycle_now(struct ctl *c);
int ctl_loop_start(struct ctl *c);
void ctl_loop_stop(struct ctl *c);
/* Persist a job event. */
int ctl_job_event(struct ctl *c, uint64_t job, const char *type, const char *from, const char *to,
                  const char *node, const char *reason, const char *detail) CTL_WUR;
/* Same with before/after already as JSON text (or NULL). */
int ctl_audit_text(struct ctl *c, const char *actor, const char *action, const char *target,
                   const char *before, const char *after, const char *reason) CTL_WUR;
/* Record an audit entry (before/after may be NULL; not stolen). */
int ctl_audit(struct ctl *c, const char *actor, const char *action, const char *target,
              const json_t *before, const json_t *after, const char *reason) CTL_WUR;
/* The rule (docs/controller.md "Core and database together"): a handler writes the store
 * first and changes the core only once the writes succeeded, or undoes its core change
 * when a write fails. Where neither is possible (a decision of the scheduling cycle, which
 * the core already made) a failed write calls this: it logs what was lost and stops
 * docketd (exit 1), as a failed commit does, so a restart reloads the core from the
 * database instead of running on with the two disagreeing. */
void ctl_store_diverged(struct ctl *c, const char *what, uint64_t job);
struct ctl_node *ctl_node_by_name(struct ctl *c, const char *name);
/* Answer the node's parked heartbeat now (a lifecycle run for it, lifecycle.c). */
void ctl_node_wake(struct ctl *c, struct ctl_node *n);
struct ctl_node *ctl_node_at(struct ctl *c, uint32_t index);
/* Persist the node record (rec) of n, its state taken from the core. */
int ctl_node_save(struct ctl *c, struct ctl_node *n) CTL_WUR;
/* Persist n's record as it will be once the core takes `state`, `reason` and `labels`
 * (JSON text), before the core is changed; n itself is not modified. */
int ctl_node_put(struct ctl *c, const struct ctl_node *n, const char *state, const char *reason,
                 const char *labels) CTL_WUR;
/* Forget every command queued for a node (it was declared unreachable). */
void ctl_node_drop_commands(struct ctl_node *n);
/* Drop the commands queued on n for job `id` (the job no longer runs there). */
void ctl_node_drop_job_commands(struct ctl_node *n, uint64_t id);
/* Queue a command for a node and wake its parked heartbeat. Steals `cmd`. */
int ctl_node_command(struct ctl *c, struct ctl_node *n, uint64_t job, json_t *cmd);
/* The address a node advertised (docket-node --addr), else its name; a static buffer. */
const char *ctl_node_addr(struct ctl *c, uint32_t index);
/* Convert a protocol spec into the core's (id, submit time and owner given). */
void ctl_spec_to_sched(const struct proto_jobspec *p, uint64_t id, int64_t submit_ms,
                       uint64_t array_id, int array_limit, struct sched_job_spec *out);
/* The classes' node fields. Take a parsed policy's (a class that does not give a field
 * keeps its earlier value); a class's (zeros when none); and the same added to the
 * classes list of a policy document about to be saved or shown (pp: the document being
 * applied, or NULL for the current). */
void ctl_class_nodes_take(struct ctl *c, const struct proto_policy *pp);
struct proto_class_node ctl_class_node(const struct ctl *c, const char *name);
void ctl_class_nodes_json(const struct ctl *c, json_t *classes, const struct sched_policy *p,
                          const struct proto_policy *pp);

#endif
