/*
 * storage.h - what storage.c owns: project storage in docketd (docs/storage.md). The
 * policy's pools (protocol/storage.h), the project areas (store.h "Storage areas"), what
 * each agent is told to keep (its pools and areas, in the heartbeat reply) and what it
 * reported (pool checks, area usage); from those: the StorageQuota hold of projects over
 * a quota, the jobs' pool selectors and variables, the storage endpoints, the /metrics
 * families and the storage_full alert levels.
 */
#ifndef DOCKET_CONTROLLER_STORAGE_H
#define DOCKET_CONTROLLER_STORAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct ctl;
struct ctl_req;
struct ctl_node;
struct dbuf;
struct proto_policy;
struct proto_jobspec;
struct proto_error;
struct storage_report;
struct storage_policy;

/* The policy's section taken (a document without one keeps the current), and written
 * into a policy document (pp's when it has one, else the current). */
void ctl_storage_take(struct ctl *c, const struct proto_policy *pp);
void ctl_storage_json(struct ctl *c, json_t *doc, const struct proto_policy *pp);

/* A heartbeat's report taken (NULL: the agent sent none), and the reply's `storage`
 * added when the agent does not hold the node's current configuration. */
void ctl_storage_report(struct ctl *c, const char *node, const struct storage_report *rep);
void ctl_storage_reply(struct ctl *c, struct ctl_node *n, json_t *reply);

/* A submitted job's `storage` pools checked against the policy and turned into node
 * selectors (each pool's node labels), so the core places it only where they are. */
int ctl_storage_job_spec(struct ctl *c, struct proto_jobspec *ps, struct proto_error *e);
/* Whether `path` (absolute, no "..") lies in one of the project's storage areas: where a
 * job's container mounts may come from (docs/environments.md "Containers"). */
bool ctl_storage_path_in_area(struct ctl *c, const char *project, const char *path);
/* The start command's env on node `node`: a copy of `env` with DOCKET_PROJECT_DIR and
 * DOCKET_STORAGE_<POOL> set (a new reference). */
json_t *ctl_storage_job_env(struct ctl *c, const char *project, const json_t *spec,
                            const char *node, const json_t *env);

/* Each pool's and each area's fill for the storage_full rules: cb(key, percent, summary)
 * with key "POOL" or "POOL/PROJECT". */
typedef void (*ctl_storage_fill_cb)(void *arg, const char *key, double pct, const char *summary);
void ctl_storage_each_fill(struct ctl *c, ctl_storage_fill_cb cb, void *arg);

/* For lifecycle.c and the usage samples: the policy's section; whether `node` has `pool`
 * (its labels) and its last check of it passed; each area with its usage (-1 unknown). */
const struct storage_policy *ctl_storage_policy(struct ctl *c);
bool ctl_storage_node_ready(struct ctl *c, const char *node, const char *pool);
typedef void (*ctl_storage_area_fn)(void *arg, const char *project, const char *pool,
                                    int64_t used_bytes);
void ctl_storage_each_area(struct ctl *c, ctl_storage_area_fn fn, void *arg);

/* From the loop's one-second tick: each area's usage sampled into the store every
 * storage.sample_interval (the reports' GB-months, docs/reports.md). */
void ctl_storage_tick(struct ctl *c);

/* The /metrics families (docs/monitoring.md). */
void ctl_storage_metrics(struct ctl *c, struct dbuf *b);
/* One line per project for `docket report`: {project: {pool: used_bytes}}. */
json_t *ctl_storage_usage_json(struct ctl *c);

void ctl_storage_free(struct ctl *c);

void h_storage_list(struct ctl_req *r);
void h_storage_area_put(struct ctl_req *r);
void h_storage_area_delete(struct ctl_req *r);

#endif
