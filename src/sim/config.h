/*
 * config.h - the simulator's inputs besides the trace: the cluster description (node
 * groups), the policy document (the same policy.yaml that `docket apply` takes, read by
 * src/protocol's reader into struct sched_policy + project specs), the
 * mapping rules from trace projects/users to Docket projects, tiers and classes, and the
 * baseline policies for --compare. Formats: docs/sim.md.
 *
 * Errors: loaders return 0 or -EINVAL and write "file: field: message" into err; on error
 * the output is left released (nothing to free). Structures below own their arrays and
 * are freed by their _release function (safe on a zeroed or released value).
 */
#ifndef DOCKET_SIM_CONFIG_H
#define DOCKET_SIM_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sched.h"

/* ---------------------------------------------------------------------------------- */
/* Cluster                                                                            */

struct sim_node_group {
    char prefix[SCHED_NAME_MAX]; /* nodes are named PREFIX-0001, PREFIX-0002 ... */
    int count;
    int gpus;
    char gpu_type[SCHED_NAME_MAX];
    int64_t gpu_mem_mb;
    int cpus;
    int64_t mem_mb;
    struct sched_label labels[SCHED_MAX_LABELS];
    int nlabels;
    long name_offset; /* its first node is PREFIX-(name_offset + 1): a group cut in parts */
};

struct sim_cluster {
    struct sim_node_group *groups;
    int ngroups;
};

int sim_cluster_load(const char *path, struct sim_cluster *out, char *err, size_t errlen);
int sim_cluster_from_json(json_t *doc, const char *name, struct sim_cluster *out, char *err,
                          size_t errlen);
void sim_cluster_release(struct sim_cluster *c);
/* Deep copy into a zeroed dst. 0 or -ENOMEM. */
int sim_cluster_copy(struct sim_cluster *dst, const struct sim_cluster *src);
/* Multiply every group's count by `scale` (rounded, at least 1 for a non-empty group). */
void sim_cluster_scale(struct sim_cluster *c, double scale);
/* Total nodes and GPUs; GPUs of the nodes whose label `key` equals `value` (key NULL: all). */
long sim_cluster_nodes(const struct sim_cluster *c);
long sim_cluster_gpus(const struct sim_cluster *c, const char *key, const char *value);
int sim_cluster_max_node_gpus(const struct sim_cluster *c);
/* Fill node i (0 <= i < sim_cluster_nodes) of the expanded cluster. */
void sim_cluster_node(const struct sim_cluster *c, long i, struct sched_node_spec *out);

/* ---------------------------------------------------------------------------------- */
/* Topology: leaf switches under one spine (docs/sim.md "Topology")                   */

struct sim_switch {
    char name[SCHED_NAME_MAX];
    long nodes; /* the next this many nodes of the expanded cluster, in order */
};

/* A topology file: one switch a line, `NAME NODES` (# comments, blank lines). 0, or -1
 * with `file:line: message` in err. *out is the caller's to free. */
int sim_topology_load(const char *path, struct sim_switch **out, int *n, char *err, size_t errlen);
/* Switches of `per_switch` nodes each (sw-0001 ...) over the whole cluster. 0 or -ENOMEM. */
int sim_topology_uniform(const struct sim_cluster *c, long per_switch, struct sim_switch **out,
                         int *n);
/* Label every node `switch=NAME` by the switches, in node order (the groups are cut where
 * a switch ends; names stay as they were). Nodes past the last switch keep no label.
 * 0, or -1 with a message in err. */
int sim_cluster_set_switches(struct sim_cluster *c, const struct sim_switch *sw, int n, char *err,
                             size_t errlen);

/* ---------------------------------------------------------------------------------- */
/* Mapping rules                                                                      */

enum sim_limit_source { SIM_LIMIT_RUNTIME, SIM_LIMIT_REQUESTED, SIM_LIMIT_CLASS };
/* What a job does when the core signals it (time limit, preemption): AUTO = a job that
 * declared a checkpoint saves and exits at once, others run until the grace ends and the
 * core kills them; EXIT = every job exits at once; GRACE = every job runs out its grace. */
enum sim_on_signal { SIM_SIGNAL_AUTO, SIM_SIGNAL_EXIT, SIM_SIGNAL_GRACE };
/* Fractional GPU/CPU requests (GPU-sharing traces publish 0.5): round up, round down
 * (at least 1), or skip the row. Every touched row is counted. */
enum sim_fractional { SIM_FRAC_ROUND_UP, SIM_FRAC_ROUND_DOWN, SIM_FRAC_SKIP };
/* A trace job whose recorded runtime exceeds its class's max_limit: RUN it to the end
 * (the cap is lifted for it), KILL it at the cap (a timeout), or SKIP the row. */
enum sim_over_cap { SIM_CAP_RUN, SIM_CAP_KILL, SIM_CAP_SKIP };

struct sim_rule {
    char match[SCHED_NAME_MAX];      /* trace project: exact, "prefix*", or "*" */
    char user[SCHED_NAME_MAX];       /* trace user: same forms; "" = any */
    char project[SCHED_NAME_MAX];    /* Docket project; "" = the trace project */
    char tier[SCHED_NAME_MAX];       /* "" = the project's tier */
    char class_name[SCHED_NAME_MAX]; /* "" = the mapping default */
    char gpu_type[SCHED_NAME_MAX];
    double time_limit_factor; /* 0 = the mapping's */
    int64_t checkpoint_ms;    /* -1 = the mapping's */
};

struct sim_mapping {
    struct sim_rule *rules; /* first match wins */
    int nrules;
    struct sim_rule dflt;     /* applies when no rule matches */
    double time_limit_factor; /* limit = runtime x factor, capped by the class */
    enum sim_limit_source limit_source;
    int64_t min_time_limit_ms;
    int cpu_unit_cores; /* CPU-only rows: cores per GPU unit; 0 (default) = CPU jobs */
    enum sim_fractional fractional;
    enum sim_over_cap over_cap;
    char partition_label[SCHED_NAME_MAX]; /* per-project clusters: selector KEY=<project> */
    bool pool;                            /* ignore partition_label: one shared pool */
    bool guarantee_from_partition; /* unlisted projects: guarantee = their partition's GPUs */
    int64_t checkpoint_ms;         /* declared checkpoint interval; 0 = none */
    enum sim_on_signal on_signal;
    bool honor_mem; /* pass the trace's memory to the core */
};

void sim_mapping_defaults(struct sim_mapping *m);
/* Apply a "mapping:" object over the current values (flags may then override fields). */
int sim_mapping_from_json(json_t *obj, const char *name, struct sim_mapping *m, char *err,
                          size_t errlen);
int sim_mapping_load(const char *path, struct sim_mapping *m, char *err, size_t errlen);
void sim_mapping_release(struct sim_mapping *m);
/* "round-up|round-down|skip" and "run|kill|skip"; -EINVAL otherwise. */
int sim_fractional_parse(const char *s, enum sim_fractional *out);
int sim_over_cap_parse(const char *s, enum sim_over_cap *out);
/* The rule for a trace row (the default when none matches); never NULL. */
const struct sim_rule *sim_mapping_find(const struct sim_mapping *m, const char *project,
                                        const char *user);

/* ---------------------------------------------------------------------------------- */
/* Policy document                                                                    */

struct sim_policy {
    char name[64]; /* shown in reports: the file's base name or the baseline */
    struct sched_policy policy;
    struct sched_project_spec *projects;
    int nprojects;
    bool has_mapping; /* the document carried a "mapping:" section */
    bool mf_set;      /* the document set a multifactor weight (settings.mf_*) */
    /* Baselines (sim_policy_baseline): one core per partition, and the queue key. */
    bool per_partition;
    bool sjf; /* order by time limit (shortest first), then submission */
    /* "starved" in reports counts against these bounds (the policy's own, kept when a
     * baseline turns the starvation guard off); report_bounds false: the policy's. */
    bool report_bounds;
    int64_t report_starve_ms[SCHED_MAX_TIERS];
    json_t *mapping; /* that section (owned), or NULL */
};

/* Defaults of the core (sched_policy_defaults), no projects. */
void sim_policy_defaults(struct sim_policy *p, const char *name);
/* Load a policy.yaml with src/protocol's reader (proto_policy_parse, as `docket apply`):
 * tiers and classes replace the default lists (a class starts from the default of the
 * same name), settings override single knobs, projects are listed; `mapping:` is kept
 * for sim_mapping_from_json. */
int sim_policy_load(const char *path, struct sim_policy *out, char *err, size_t errlen);
int sim_policy_from_json(json_t *doc, const char *name, struct sim_policy *out, char *err,
                         size_t errlen);
/* Deep copy (projects and mapping). 0 or -ENOMEM. */
int sim_policy_copy(struct sim_policy *dst, const struct sim_policy *src);
void sim_policy_release(struct sim_policy *p);
const struct sched_project_spec *sim_policy_project(const struct sim_policy *p, const char *name);

/* Turn `p` into a baseline of the same tiers, classes and projects, run as a site would
 * run it: one queue per partition, no preemption, no starvation guard, no reserved zone;
 * "fifo" (strict FIFO: no backfill), "easy" (FIFO + EASY backfill: one reservation),
 * "sjf" (shortest time limit first + EASY backfill), "multifactor" (Slurm-like age +
 * fair-share + QOS/tier with backfill; SIM_MF_* weights unless the document set them), or
 * "tiered" (as is). -EINVAL for an unknown name. docs/sim.md "Baselines". */
#define SIM_MF_AGE_WEIGHT       1000.0
#define SIM_MF_FAIRSHARE_WEIGHT 10000.0
#define SIM_MF_TIER_WEIGHT      2000.0
#define SIM_MF_AGE_MAX_MS       (7LL * 24 * 3600 * 1000)
int sim_policy_baseline(struct sim_policy *p, const char *baseline);

#endif
