/*
 * warm.h - warm environments in docketd (docs/environments.md "Warm environments"): the
 * requests to make a template version warm on nodes (POST /v1/templates/NAME/warm, and a
 * template's `warm_on` selector, which asks every node that matches it as its heartbeats
 * come, new and returning nodes among them), handed to each node in its heartbeat reply
 * (protocol/warm.h) until the node reports it; and what each node last reported, shown
 * by GET /v1/templates/NAME, and given to the scheduler's core (the versions ready on
 * each node). Kept in memory: a restarted docketd hears the nodes' states
 * again in their next heartbeats and takes their requests back from them (a request not
 * yet handed to its node is lost then).
 */
#ifndef DOCKET_CONTROLLER_WARM_H
#define DOCKET_CONTROLLER_WARM_H

#include <jansson.h>
#include <stdbool.h>

#include "controller/ctl.h"
#include "protocol/warm.h"

struct ctl_req;

/* A heartbeat's `warm` (NULL/0: the node holds none); the versions ready there go to the
 * scheduler's core, which prefers those nodes for their jobs (docs/scheduling.md §3
 * "Warm nodes"). */
void ctl_warm_report(struct ctl *c, struct ctl_node *n, const struct warm_state *st, size_t ns);
/* The node went silent: nothing it holds is known until it reports again (the core's
 * warm set of it is emptied; its next heartbeat fills it). */
void ctl_warm_node_lost(struct ctl *c, struct ctl_node *n);
/* The reply's `warm`: the orders the node has not taken yet (none: nothing added). */
void ctl_warm_reply(struct ctl *c, struct ctl_node *n, json_t *reply);
/* The nodes' states for every version of template `name`: a new list. */
json_t *ctl_warm_json(struct ctl *c, const char *name);
void ctl_warm_free(struct ctl *c);

/* POST /v1/templates/NAME[@VERSION]/warm {"nodes": SELECTOR}: admins, and the leads of
 * the project that owns the template. */
void h_template_warm(struct ctl_req *r);

#endif
