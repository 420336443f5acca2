/*
 * logs.h - what logs.c owns: job output kept per run, the agents' log chunks, clients
 * reading (and following) it, and which node may post what for a run.
 */
#ifndef DOCKET_CONTROLLER_LOGS_H
#define DOCKET_CONTROLLER_LOGS_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol/error.h"

struct ctl;
struct ctl_req;
struct store_run;

void h_job_logs(struct ctl_req *r);
void h_agent_logs(struct ctl_req *r);
void ctl_logs_job_ended(struct ctl *c, uint64_t job);
/* Is the output of that stream of that run all here (logarch.c archives only those)? */
bool ctl_log_complete(struct ctl *c, uint64_t job, int run, int stream);
/* The run `run` of job `job` (0: its latest), if node `node` may post events or output for
 * it (the run was placed there; for output, on its rank 0): 0 with *out filled, or
 * -EPERM/-ENOENT/-EIO with e filled (403 / 404 / 500), `field` named. */
int ctl_run_for_node(struct ctl *c, const char *node, uint64_t job, int run, bool output,
                     const char *field, struct store_run *out, struct proto_error *e);
void ctl_logs_stop(struct ctl *c);

#endif
