/*
 * site.h - a Slurm site's GPU names and partitions in docketd (docs/slurm.md "A site's
 * partitions and GPU names"): the `gpu_aliases` and `partitions` sections of the policy
 * document (which the store keeps, so a restart reads them back), applied to each job at
 * submit (a GPU type through the aliases; a partition's nodes, times, tier, class and
 * projects), and GET /v1/partitions for sinfo and squeue. The core knows nothing of
 * partitions: a partition's nodes reach it as the job's selectors.
 */
#ifndef DOCKET_CONTROLLER_SITE_H
#define DOCKET_CONTROLLER_SITE_H

#include <jansson.h>

#include "controller/ctl.h"
#include "protocol/proto.h"

struct ctl_req;

/* Keep a parsed policy's sections, each when the document has it (it replaces the old). */
void ctl_site_take(struct ctl *c, const struct proto_policy *pp);
/* Add "gpu_aliases" and "partitions" to a policy document (pp's, else the current ones),
 * each only when there is one. */
void ctl_site_json(struct ctl *c, json_t *doc, const struct proto_policy *pp);
void ctl_site_stop(struct ctl *c);
/* node_labels: the policy's labels for `node` over `labels` (a first registration). */
void ctl_site_node_labels_merge(struct ctl *c, const char *node, json_t *labels);
/* At apply, in its transaction: the stored labels of the registered nodes pp names (theirs
 * with pp's over them); then, once applied, the same to the core and the records. */
int ctl_site_node_labels_write(struct ctl *c, const struct proto_policy *pp);
/* Before: refused (400 naming node_labels.NODE) when a node would pass 16 labels. */
int ctl_site_node_labels_check(struct ctl *c, const struct proto_policy *pp, struct proto_error *e);
void ctl_site_node_labels_take(struct ctl *c, const struct proto_policy *pp);
/* Before the job's tier, class and time are filled in: its GPU type through the aliases,
 * then its partition (named, or the default one for a Slurm-style job): refused naming
 * the field when the partition is unknown, does not admit the project, or its max_time
 * is below the job's limit. */
int ctl_site_job_spec(struct ctl *c, struct proto_jobspec *ps, struct proto_error *e);
/* After the class's defaults: a partition's max_time holds whatever filled the limit. */
int ctl_site_job_check(struct ctl *c, const struct proto_jobspec *ps, struct proto_error *e);

/* GET /v1/partitions: each partition with its settings and its nodes (name, state). */
void h_partitions(struct ctl_req *r);

/* A job leaves its partition (scontrol update Partition=): the selectors the partition's
 * nodes gave it go, and its name; its tier, class and time stay as they are. */
void ctl_site_job_leave_partition(struct ctl *c, struct proto_jobspec *ps);
#endif
