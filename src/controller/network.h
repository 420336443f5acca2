/*
 * network.h - what network.c owns: job network boundaries in docketd (docs/network.md).
 * The policy's `network:` section (protocol/network.h); the address each running job
 * holds in its node's job range (in memory: an address is free again once its job no
 * longer runs); and from those, each start command's `network` object (address, peers,
 * the allow-list merged for the job's group and project, the cap) and the sentence that
 * `docket show` and `explain` print.
 */
#ifndef DOCKET_CONTROLLER_NETWORK_H
#define DOCKET_CONTROLLER_NETWORK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct ctl;
struct dbuf;
struct proto_policy;
struct sched_decision;
struct store_job;

/* The policy's section taken (a document without one keeps the current), and written
 * into a policy document (pp's when it has one, else the current). */
void ctl_net_take(struct ctl *c, const struct proto_policy *pp);
void ctl_net_json(struct ctl *c, json_t *doc, const struct proto_policy *pp);

/* The start of job `row` as decided in `d`: an address for each rank in its node's job
 * range, and each rank's `network` object, as an array by rank (a new reference) in
 * *out; *out = NULL when the job keeps the node's network. -1 with `why` when the job
 * cannot be given one (a node without a job range, a full range): its launch fails. */
int ctl_net_assign(struct ctl *c, const struct store_job *row, const struct sched_decision *d,
                   json_t **out, char *why, size_t whylen);

/* What a job of `project` and `class_name` runs under, in words ("own namespace; group
 * g: 2 allowed destinations; cap 100 Mbit/s" or "the node's network (class rdma)"). */
void ctl_net_describe(struct ctl *c, const char *project, const char *class_name, char *out,
                      size_t len);

/* {"policy": SENTENCE, "addrs": [rank 0's, ...]} of a job (addrs while it holds them). */
json_t *ctl_net_job_json(struct ctl *c, uint64_t id, const char *project, const char *class_name);
/* Everything ctl_net_job_json shows of that job, appended to k as bytes (a list's row
 * key, rowcache.c): equal bytes, equal objects, with no JSON made. */
void ctl_net_job_key(struct ctl *c, uint64_t id, const char *project, const char *class_name,
                     struct dbuf *k);

/* A usage sample's count of refused packets for job `id`'s rank on node `node`. */
void ctl_net_refused(struct ctl *c, uint64_t id, const char *node, int64_t packets);
/* The /metrics family docket_job_network_refused_total (docs/monitoring.md). */
void ctl_net_metrics(struct ctl *c, struct dbuf *b);

void ctl_net_free(struct ctl *c);

#endif
