/*
 * lbconf.h - what lbconf.c owns: the pure parts of the services' load balancer
 * (docs/services.md "The endpoint"), apart from lb.c's processes and sockets so unit tests
 * drive them alone: HAProxy's configuration for a set of services (a frontend and a
 * backend of server slots, server-template, per service), the slots each ready replica
 * takes (stable while it stays), and the runtime API commands that bring HAProxy's
 * servers from what it has to what is wanted.
 */
#ifndef DOCKET_CONTROLLER_LBCONF_H
#define DOCKET_CONTROLLER_LBCONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/dbuf.h"

/* Server slots per backend: the most replicas (64) and one more, a rolling update's. */
enum { LB_SLOTS = 65, LB_HOST_MAX = 256 };

/* One server slot of a backend: the replica in it (job 0: free, in maint), where it
 * listens, and whether it takes traffic. */
struct lb_slot {
    uint64_t job;
    char host[LB_HOST_MAX];
    int port;
    bool ready;
};

/* A replica as the services see it: its job, where it listens, whether it is ready. */
struct lb_want {
    uint64_t job;
    const char *host;
    int port;
    bool ready;
};

/* A service's frontend: its name (a name, str_is_name, so safe in the configuration)
 * and the port its endpoint listens on. */
struct lb_frontend {
    const char *name;
    int port;
};

/* HAProxy's configuration for these services, bound on `bind`, its runtime API on the
 * Unix socket `admin_socket`: into out (appended). Every slot starts in maint; the
 * runtime API puts the ready replicas in. */
void lb_config_text(struct dbuf *out, const struct lb_frontend *fe, int n, const char *bind,
                    const char *admin_socket);

/* The backend name of service `name` ("svc_" NAME). */
void lb_backend_name(char *out, size_t len, const char *name);

/* The slots wanted next, from those of now and the replicas: a replica keeps its slot
 * while it is there with the same address, one gone frees its slot, a new one takes the
 * lowest free slot (none left: it gets none). next may not alias now. */
void lb_assign(const struct lb_slot now[LB_SLOTS], const struct lb_want *want, int nwant,
               struct lb_slot next[LB_SLOTS]);

/* The runtime API commands (one a line) that take backend `backend` from `had` to `want`:
 * a slot taken out goes to maint first; a slot whose address changes gets `set server
 * ... addr A port P` (in maint, then ready when it is). Returns the count of commands. */
int lb_commands(struct dbuf *out, const char *backend, const struct lb_slot had[LB_SLOTS],
                const struct lb_slot want[LB_SLOTS]);

/* A port of [lo, hi] for a new endpoint: the lowest not in used[] for which free_cb says
 * yes (nobody listens there). 0 when none. */
int lb_port_pick(int lo, int hi, const int *used, int nused, bool (*free_cb)(int port));

#endif
