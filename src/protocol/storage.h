/*
 * storage.h - the JSON shapes of project storage (docs/storage.md), one reader each:
 *   - the `storage:` section of the policy document: pools (name, path on the nodes,
 *     class, quota mechanism, the node labels that have it, mount checks) and how a
 *     project maps to its Unix group;
 *   - the `storage` object of a heartbeat reply: what docketd tells one agent to keep
 *     (its pools and the project areas on them, with owners and quotas);
 *   - the `storage` object of a heartbeat: what the agent found (each pool's check, each
 *     area's usage).
 * Nothing here holds state or does I/O. Depends on jansson and libc only, so the agent
 * links it without the core.
 */
#ifndef DOCKET_PROTOCOL_STORAGE_H
#define DOCKET_PROTOCOL_STORAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/error.h"

enum {
    STORAGE_NAME_MAX = 64,       /* projects, groups, label keys and values */
    STORAGE_POOL_NAME_MAX = 32,  /* a pool's name: [a-z][a-z0-9_]*, a variable's suffix */
    STORAGE_PATH_MAX = 256,      /* a pool's path on the nodes */
    STORAGE_FSTYPE_MAX = 32,     /* "ext4", "nfs4", "lustre" ... */
    STORAGE_MAX_POOLS = 16,      /* pools in a policy */
    STORAGE_MAX_POOL_LABELS = 4, /* labels a pool's nodes carry */
    STORAGE_MAX_GROUPS = 1024,   /* explicit project -> group entries */
    STORAGE_MAX_AREAS = 100000,  /* areas in one agent message */
    STORAGE_MSG_MAX = 200,       /* a pool's or area's check message (bytes) */
    STORAGE_MAX_JOB_POOLS = 8,   /* pools one job may name */
    STORAGE_MAX_RULES = 32,      /* lifecycle rules in a policy */
    STORAGE_RULE_NAME_MAX = 32,  /* a rule's name */
    STORAGE_GLOB_MAX = 64,       /* a rule's file name pattern */
    STORAGE_RULE_PROJECTS = 8,   /* projects one rule may name */
};

enum storage_class { STORAGE_HOT, STORAGE_COLD, STORAGE_ARCHIVE, STORAGE_SCRATCH };
/* ext4-project: the file system enforces a hard block limit per area (project quota);
 * accounting: the agent measures usage by a scan and docketd holds the project's jobs. */
enum storage_quota { STORAGE_QUOTA_ACCOUNTING, STORAGE_QUOTA_EXT4_PROJECT };

struct storage_label {
    char key[STORAGE_NAME_MAX], value[STORAGE_NAME_MAX];
};

struct storage_pool {
    char name[STORAGE_POOL_NAME_MAX];
    char path[STORAGE_PATH_MAX];
    enum storage_class cls;
    enum storage_quota quota;
    bool mount; /* the path must be a mount point */
    bool local; /* each node has its own file system there (a local disk), not one shared */
    char fstype[STORAGE_FSTYPE_MAX];                     /* "" = any */
    struct storage_label nodes[STORAGE_MAX_POOL_LABELS]; /* all must match; none = every node */
    int nnodes;
};

/* A lifecycle rule (docs/storage.md "Lifecycle rules"): on each area of `pool` (or of the
 * projects named), the regular files not used for `after_ms` (their last access, or their
 * last change where the file system keeps no access times), of those only the ones under
 * a directory marked `.docket-intermediate` when `marker` and the ones whose name matches
 * `glob` when it is set, are moved to the project's area on pool `to`, or deleted. A rule
 * with `every_ms` runs that often; one without runs only when asked. Read by
 * protocol/lifecycle.c. */
enum lifecycle_action { LC_MOVE, LC_DELETE };

struct lifecycle_rule {
    char name[STORAGE_RULE_NAME_MAX];
    char pool[STORAGE_POOL_NAME_MAX];
    char to[STORAGE_POOL_NAME_MAX]; /* MOVE: the target pool */
    enum lifecycle_action action;
    int64_t after_ms;   /* unused for at least this long */
    int64_t every_ms;   /* 0: only when asked (docket storage lifecycle) */
    int64_t rate_bytes; /* bytes per second a run copies, 0: no limit */
    bool marker;        /* only trees marked with a .docket-intermediate file */
    char glob[STORAGE_GLOB_MAX];
    char projects[STORAGE_RULE_PROJECTS][STORAGE_NAME_MAX]; /* none: every area */
    int nprojects;
};

/* The policy's `storage:` section. A project's Unix group is groups[] when listed, else
 * group_prefix + the project's name (docs/storage.md "Projects and groups"). */
struct storage_policy {
    struct storage_pool pools[STORAGE_MAX_POOLS];
    int npools;
    int64_t check_interval_ms; /* how often agents check pools and measure areas */
    char group_prefix[32];
    struct {
        char project[STORAGE_NAME_MAX], group[STORAGE_NAME_MAX];
    } groups[STORAGE_MAX_GROUPS];
    int ngroups;
    struct lifecycle_rule rules[STORAGE_MAX_RULES];
    int nrules;
    int64_t sample_interval_ms; /* how often docketd records each area's usage */
    /* samples older than sample_keep_ms are rolled up into one per area per
     * sample_rollup_ms (docs/reports.md): GB-months over windows on its boundaries stay */
    int64_t sample_keep_ms, sample_rollup_ms;
    /* Finished jobs' logs moved from docketd's state directory to a pool (docs/storage.md
     * "Job logs"): pool "" = never. */
    struct {
        char pool[STORAGE_POOL_NAME_MAX];
        int64_t after_ms; /* once the job ended (and its log last grew) this long ago */
        int64_t every_ms; /* how often docketd looks for such logs */
    } log_archive;
};

const char *storage_class_name(enum storage_class c);
const char *storage_quota_name(enum storage_quota q);
/* Defaults: no pools, 60 s checks, no prefix, no groups, no rules, hourly samples kept
 * 30 d then rolled up daily, no log archive (after 30 d, every 1 h once a pool is named). */
void storage_policy_defaults(struct storage_policy *p);
/* Parse the `storage` object (replaces `out` whole); errors name "storage.pools[1].path". */
int storage_policy_parse(const json_t *v, struct storage_policy *out,
                         struct proto_error *err) PROTO_WUR;
/* The section back (a new reference), read back exactly by storage_policy_parse. */
json_t *storage_policy_json(const struct storage_policy *p);
const struct storage_pool *storage_pool_find(const struct storage_policy *p, const char *name);
/* The Unix group of a project's areas (a name or a number as text). */
void storage_project_group(const struct storage_policy *p, const char *project, char *out,
                           size_t len);
/* A pool's variable: DOCKET_STORAGE_ + the name in upper case. */
void storage_pool_env_name(const char *pool, char *out, size_t len);
/* The area's directory: POOL_PATH/projects/PROJECT. */
void storage_area_path(const struct storage_pool *pool, const char *project, char *out, size_t len);
/* A job's `storage` list: pool names, distinct, at most STORAGE_MAX_JOB_POOLS. */
int storage_job_pools_check(const json_t *v, struct proto_error *err) PROTO_WUR;

/* ---- docketd -> agent: the heartbeat reply's `storage` ------------------------------ */

struct storage_area {
    char pool[STORAGE_POOL_NAME_MAX];
    char project[STORAGE_NAME_MAX];
    char group[STORAGE_NAME_MAX]; /* the owning group: a name or a gid */
    int64_t quota_bytes;          /* 0 = none */
};

struct storage_config {
    int64_t gen;         /* changes whenever anything below does */
    int64_t interval_ms; /* checks and scans */
    struct storage_pool pools[STORAGE_MAX_POOLS];
    int npools;
    struct storage_area *areas; /* owned */
    size_t nareas;
};

json_t *storage_config_json(const struct storage_config *c);
int storage_config_parse(const json_t *v, struct storage_config *out,
                         struct proto_error *err) PROTO_WUR;
void storage_config_release(struct storage_config *c);

/* ---- agent -> docketd: the heartbeat's `storage` ------------------------------------- */

struct storage_pool_state {
    char name[STORAGE_POOL_NAME_MAX];
    bool ok;
    char message[STORAGE_MSG_MAX + 1]; /* why not ok */
    char fstype[STORAGE_FSTYPE_MAX];
    int64_t latency_us;             /* the probe's write, fsync and unlink; -1 unknown */
    int64_t size_bytes, used_bytes; /* the file system's; -1 unknown */
};

struct storage_area_state {
    char pool[STORAGE_POOL_NAME_MAX];
    char project[STORAGE_NAME_MAX];
    bool ok;
    char message[STORAGE_MSG_MAX + 1];
    enum storage_quota enforced; /* how its quota is kept here */
    int64_t used_bytes;          /* -1 unknown */
    int64_t quota_bytes;         /* as set, 0 = none */
};

struct storage_report {
    int64_t gen; /* the config it answers (0: none yet) */
    struct storage_pool_state pools[STORAGE_MAX_POOLS];
    int npools;
    struct storage_area_state *areas; /* owned */
    size_t nareas;
};

json_t *storage_report_json(const struct storage_report *r);
int storage_report_parse(const json_t *v, struct storage_report *out,
                         struct proto_error *err) PROTO_WUR;
void storage_report_release(struct storage_report *r);

#endif
