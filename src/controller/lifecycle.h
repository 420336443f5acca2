/*
 * lifecycle.h - what lifecycle.c owns: storage lifecycle runs in docketd (docs/storage.md
 * "Lifecycle rules"). The policy's rules (protocol/storage.h) say what; this file decides
 * when a rule is due (its `every`, or an admin's `docket storage lifecycle`), turns it
 * into one run per project area, picks a node that has both pools mounted and passing
 * their checks, hands the run to its agent in the heartbeat reply (as data: the agent
 * holds no policy), takes the result the agent reports, stores it (lifecycle_runs) and
 * audits every real run. Unfinished runs survive a restart: they are handed out again and
 * an agent that still holds one reports it instead of starting it over.
 */
#ifndef DOCKET_CONTROLLER_LIFECYCLE_H
#define DOCKET_CONTROLLER_LIFECYCLE_H

#include <jansson.h>
#include <stddef.h>

struct ctl;
struct ctl_req;
struct ctl_node;
struct lifecycle_result;

/* A heartbeat's `lifecycle` (the runs the agent holds; done ones with their results). */
void ctl_lifecycle_report(struct ctl *c, const char *node, const struct lifecycle_result *res,
                          size_t n);
/* The reply's `lifecycle`: the node's runs its agent does not hold yet (none: nothing). */
void ctl_lifecycle_reply(struct ctl *c, struct ctl_node *n, json_t *reply);
/* From the loop's one-second tick: rules due, runs whose node went away. */
void ctl_lifecycle_tick(struct ctl *c);
void ctl_lifecycle_free(struct ctl *c);

/* POST /v1/storage/lifecycle {dry_run, target}: runs now; GET: the rules and the
 * history; GET /v1/storage/lifecycle/runs/:id: one run with its files. */
void h_lifecycle_start(struct ctl_req *r);
void h_lifecycle_list(struct ctl_req *r);
void h_lifecycle_run_get(struct ctl_req *r);

#endif
