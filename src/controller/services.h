/*
 * services.h - what services.c owns (docs/services.md): the service objects
 * (/v1/services), kept in memory from the database, and the loop that keeps each one's
 * replicas (jobs of class `service`) at the desired count: a replica that ends is
 * restarted after an exponential backoff (its job held meanwhile), one that restarts too
 * often within a window shows a crash loop, one whose job is gone is replaced.
 */
#ifndef DOCKET_CONTROLLER_SERVICES_H
#define DOCKET_CONTROLLER_SERVICES_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct ctl;
struct ctl_req;

void h_services_list(struct ctl_req *r);
void h_services_create(struct ctl_req *r);
void h_service_show(struct ctl_req *r);
void h_service_scale(struct ctl_req *r);
void h_service_update(struct ctl_req *r);
void h_service_delete(struct ctl_req *r);

/* Each second (loop.c's tick): load the services once (at start, or when a standby takes
 * over), then release the replicas whose backoff is over and bring each service to its
 * desired count. */
void ctl_services_tick(struct ctl *c);
/* A job's run ended and the core has its decision (agent.c: after sched_job_ended): a
 * replica's restart is counted and, when the core requeued it, held for its backoff. */
void ctl_services_run_ended(struct ctl *c, uint64_t job, int64_t now_ms);
/* loop.c, after a decision about `job` was written: a replica held by
 * ctl_services_run_ended is written HELD now that its requeue is. */
void ctl_services_job_written(struct ctl *c, uint64_t job);
/* loop.c, building a start command's job object: a replica's gets "service" (a port,
 * its probes) for its agent (docs/services.md "Ports and probes"). */
void ctl_services_start_cmd(struct ctl *c, uint64_t job, json_t *cmd_job);
/* agent.c: a replica's run started on a node at host, with the port its agent gave it
 * (0: none). */
void ctl_services_started(struct ctl *c, uint64_t job, const char *host, int port);
/* agent.c: a replica's probe event (its job event written here; a liveness failure
 * kills its process, so it restarts). 0 or -errno (the event's write). */
struct ctl_node;
int ctl_services_probe(struct ctl *c, struct ctl_node *n, uint64_t job, const char *probe, bool ok,
                       const char *message);
/* The /metrics families of services (docs/monitoring.md) into b. */
struct dbuf;
void ctl_services_metrics(struct ctl *c, struct dbuf *b);
/* Free everything (docketd's exit). */
void ctl_services_free(struct ctl *c);

#endif
