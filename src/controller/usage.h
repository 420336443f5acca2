/*
 * usage.h - what usage.c owns: usage samples (docs/monitoring.md), the classes' idle
 * rules, a node's latest GPU samples, a job's usage endpoint and a project's GPU use over
 * time.
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
/* GET /v1/projects/NAME/usage: the GPUs its jobs held, averaged over each day (or hour)
 * of the last days, from its runs' start and end times; its limit and guarantee now. */
void h_project_usage(struct ctl_req *r);
/* Add a run holding `gpus` over [start, end) to gpu_ms[0..n), the GPU-milliseconds of
 * the steps of `step` ms from `since` (the part inside each step; none outside them). */
void ctl_usage_spread(double *gpu_ms, int n, int64_t since, int64_t step, int64_t gpus,
                      int64_t start, int64_t end);

#endif
