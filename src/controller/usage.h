/*
 * usage.h - what usage.c owns: usage samples (docs/monitoring.md), the classes' idle
 * rules, a node's latest GPU samples and a job's usage endpoint.
 */
#ifndef DOCKET_CONTROLLER_USAGE_H
#define DOCKET_CONTROLLER_USAGE_H

#include <jansson.h>
#include <stdint.h>

#include "controller/ctl.h"
#include "protocol/agent_msg.h"
#include "store/store.h"

struct ctl_req;

/* ctl_usage_apply stores one sample of a job's usage event (read by agent_event_parse)
 * and applies the class's idle rule: 0 or -errno from the store. ctl_usage_prune deletes
 * old samples, a bounded slice per call (the 1 s tick). ctl_usage_explain: what explain
 * says of a running job's usage (a new object). ctl_usage_summary_json: the summary
 * object of the API. */
int ctl_usage_apply(struct ctl *c, struct ctl_node *n, uint64_t id, int run,
                    const struct agent_sample *s) CTL_WUR;
void ctl_usage_prune(struct ctl *c);
json_t *ctl_usage_explain(struct ctl *c, uint64_t id, const char *class_name);
json_t *ctl_usage_summary_json(const struct store_usage_summary *s);
/* A node's latest GPU samples ({source, gpus: [...]}, fresh ones only) for GET /v1/nodes. */
enum { CTL_GPU_SAMPLE_FRESH_MS = 5 * 60 * 1000 };
json_t *ctl_usage_node_json(const struct ctl_node *n);
void h_job_usage(struct ctl_req *r);

#endif
