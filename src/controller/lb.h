/*
 * lb.h - what lb.c owns (docs/services.md "The endpoint"): the HAProxy process docketd
 * runs for the services' endpoints (--lb-haproxy), its configuration file (lbconf.c
 * writes the text) and its runtime API socket: a frontend and backend per service, the
 * ready replicas put in traffic and the others taken out with `set server`, the whole
 * configuration reloaded (a new haproxy with -sf) only when services come or go.
 */
#ifndef DOCKET_CONTROLLER_LB_H
#define DOCKET_CONTROLLER_LB_H

#include <stdbool.h>

#include "controller/lbconf.h"

struct ctl;

/* A service as the load balancer needs it: its name, its endpoint's port, its replicas. */
struct ctl_lb_service {
    const char *name;
    int port;
    struct lb_want want[LB_SLOTS];
    int nwant;
};

/* Whether docketd runs a load balancer (--lb-haproxy). */
bool ctl_lb_on(const struct ctl *c);
/* The host clients reach the endpoints at (--lb-bind; this host's name for a wildcard). */
const char *ctl_lb_host(const struct ctl *c);
/* A port of --lb-ports for a new endpoint, none of used[] and free now; 0 when none. */
int ctl_lb_pick_port(struct ctl *c, const int *used, int nused);
/* Bring HAProxy to these services: (re)started with a new configuration when the set of
 * services or their ports changed, then each backend's servers set through the runtime
 * API. Cheap when nothing changed; a standby runs none. */
void ctl_lb_sync(struct ctl *c, const struct ctl_lb_service *svcs, int n);
/* docketd's exit: haproxy stopped, everything freed. */
void ctl_lb_free(struct ctl *c);

#endif
