/*
 * proto.h - the JSON shapes of Docket's public API (docs/api.md), shared by the
 * controller and the CLI: the job spec (submit body) with full validation, the policy
 * document, and the small JSON getters every protocol parser uses.
 *
 * Nothing here holds controller state or does I/O. The policy parser fills the core's
 * plain structs (types only from core/sched.h: no call into the core is made, so a
 * program that links protocol does not link the core).
 *
 * Errors: parsers return 0 or a negative errno and fill a struct proto_error
 * (protocol/error.h, the one error type of every protocol parser).
 */
#ifndef DOCKET_PROTOCOL_PROTO_H
#define DOCKET_PROTOCOL_PROTO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sched.h"
#include "protocol/error.h"

/* ------------------------------------------------------------------------------------ */
/* Job spec: the body of POST /v1/jobs                                                   */

enum {
    PROTO_NAME_MAX = 64,         /* project, tier, class, user, gpu type, label keys */
    PROTO_SECRET_NAME_MAX = 128, /* a secret's name: the variable it becomes */
    PROTO_MAX_SECRETS = 32,      /* secrets one job may name */
    PROTO_JOB_NAME_MAX = 128,
    PROTO_PATH_MAX = 4096,
    PROTO_MAX_ARGS = 4096,
    PROTO_MAX_ENV = 1024,
    PROTO_MAX_LABELS = 64, /* job labels (free-form metadata) */
    PROTO_MAX_SELECTORS = 16,
    PROTO_CONSTRAINT_MAX = 128, /* a feature constraint, as the core's */
    PROTO_MAX_DEPS = 128,
    PROTO_MAX_GPUS = 64,
    PROTO_MAX_CPUS = 4096,
    PROTO_MAX_NODES = 512,
    PROTO_MAX_RETRIES = 10,
    PROTO_MAX_ARRAY = 100000, /* tasks in one array submission */
    PROTO_SCRIPT_MAX = 256 * 1024,
};

#define PROTO_MAX_MEM_MB      ((int64_t)64 * 1024 * 1024) /* 64 TiB per node */
#define PROTO_MAX_DURATION_MS ((int64_t)366 * 24 * 3600 * 1000)

struct proto_dep {
    char type[16]; /* "afterok", "afterany", "afternotok", "after" (once it started) */
    uint64_t job;
    bool array; /* "array": true: job is an array's id, and the whole array must meet it */
};

struct proto_selector {
    char key[PROTO_NAME_MAX];
    char value[PROTO_NAME_MAX];
    bool negate; /* written "!value" */
};

/*
 * A validated job spec. The variable-size parts (command, env, labels, script, paths)
 * stay as JSON in `extra`, a normalised object owned by the spec:
 * {"command": [...]|null, "script": "..."|null, "workdir", "output", "error",
 *  "env": {}, "labels": {}, "secrets": [NAME...]}. "secrets" names the project's
 * secrets the job gets in its environment (their values are never in a spec).
 */
struct proto_jobspec {
    char name[PROTO_JOB_NAME_MAX];
    char project[PROTO_NAME_MAX];    /* "" = not given */
    char user[PROTO_NAME_MAX];       /* "" = not given */
    char tier[PROTO_NAME_MAX];       /* "" = the project's */
    char class_name[PROTO_NAME_MAX]; /* "" = the policy default */
    char gpu_type[PROTO_NAME_MAX];   /* "" = any */
    int gpus, cpus, nodes;           /* per node; cpus >= 1, nodes >= 1 */
    int64_t mem_mb;                  /* per node; 0 = none */
    int64_t time_limit_ms;           /* 0 = class default */
    int64_t begin_ms;                /* absolute; 0 = now (relative begins are resolved) */
    int signal;                      /* 0 = policy default */
    int64_t grace_ms;                /* -1 = policy default */
    bool checkpoint, idempotent, requeue, hold;
    int retries;
    int switches;             /* Slurm's --switches=N: at most N switches; 0 = the class's rule */
    int64_t switches_wait_ms; /* ... @max-time: waiting at most this long; 0 = no bound */
    struct proto_dep deps[PROTO_MAX_DEPS];
    int ndeps;
    bool deps_any; /* Slurm's '?': one of the deps met is enough ("deps_any": true) */
    struct proto_selector selectors[PROTO_MAX_SELECTORS];
    int nselectors;
    char constraint[PROTO_CONSTRAINT_MAX]; /* Slurm's --constraint over node features; "" */
    char partition[PROTO_NAME_MAX];        /* the site's partition (protocol/site.h); "" */
    char array[64];                        /* the array expression as given, "" = none */
    json_t *extra;                         /* owned */
};

/* A secret's name: an environment variable name of at most PROTO_SECRET_NAME_MAX bytes. */
bool proto_secret_name_ok(const char *name);
/* A shell function exported by bash, as a job's variable: BASH_FUNC_NAME%% (bash 4.3 and
 * later), NAME of letters, digits, _ . : - (how `module` and `ml` reach a Slurm job). */
bool proto_exported_function_name(const char *name);

void proto_jobspec_init(struct proto_jobspec *j);
void proto_jobspec_release(struct proto_jobspec *j);

/* Parse and validate a submit body (already decoded JSON). `now_ms` resolves a relative
 * `begin`. Unknown fields, wrong types, bad values are refused naming the field. On
 * error `out` is released (still safe to release again). */
int proto_jobspec_parse(const json_t *body, int64_t now_ms, struct proto_jobspec *out,
                        struct proto_error *err) PROTO_WUR;
/* Same, from raw bytes (malformed JSON is an error naming no field). */
int proto_jobspec_parse_text(const char *text, size_t len, int64_t now_ms,
                             struct proto_jobspec *out, struct proto_error *err) PROTO_WUR;

/* The normalised, storable form of a spec (times and sizes resolved): a new reference.
 * proto_jobspec_load() reads it back exactly. */
json_t *proto_jobspec_to_json(const struct proto_jobspec *j);
int proto_jobspec_load(const json_t *stored, struct proto_jobspec *out,
                       struct proto_error *err) PROTO_WUR;
/* A change to a submitted job (PATCH /v1/jobs/ID, scontrol update) over `j` (a stored
 * spec, proto_jobspec_load): each member of `patch` read as the submission reads it, of
 * name, time_limit, deps, deps_any, partition, nodes, constraint and comment ("reason" is passed
 * over: the caller's). Any other member is refused naming it. On error `j` may be half
 * changed: the caller drops it. */
int proto_jobspec_patch(const json_t *patch, int64_t now_ms, struct proto_jobspec *j,
                        struct proto_error *err) PROTO_WUR;
/* A stored spec's switches and their wait (0 and 0 when it has none): 0, or -EINVAL. */
int proto_jobspec_switches(const json_t *stored, int *switches, int64_t *wait_ms);

/* Indices of an array expression ("0-99%8"). Caller frees *indices. */
int proto_array_expand(const char *expr, int32_t **indices, size_t *count, int *limit,
                       struct proto_error *err) PROTO_WUR;

/* ------------------------------------------------------------------------------------ */
/* Policy document (docs/api.md "Projects, tiers, classes, policy")                     */

enum { PROTO_MAX_PROJECTS = 10000, PROTO_MAX_POLICY_MEMBERS = 200000 };

struct proto_alerts;
struct proto_prices;
struct proto_templates;
struct storage_policy;
struct net_policy;

/* What a class gives the node agent in the start command (the core knows nothing of it):
 * the job's pids.max and a memory limit for jobs that ask for none. In a parsed document,
 * -1 = not given (the controller keeps the class's earlier value); 0 = the node's default
 * (the agent's --job-pids-max, --job-mem-default). */
/* The class's idle rule (docs/monitoring.md "Idle rules"): a running job whose GPUs all
 * stay under gpu_util_below percent for for_ms is flagged, and the action taken: alert
 * (an event and a log line), or requeue / cancel, allowed only on a preemptible class.
 * PROTO_IDLE_UNSET: the document does not give the rule (the earlier one stays). */
enum proto_idle_action {
    PROTO_IDLE_UNSET = -1,
    PROTO_IDLE_NONE = 0,
    PROTO_IDLE_ALERT,
    PROTO_IDLE_REQUEUE,
    PROTO_IDLE_CANCEL
};
struct proto_idle_rule {
    int gpu_util_below; /* 1..100 */
    int64_t for_ms;
    enum proto_idle_action action;
};
const char *proto_idle_action_name(enum proto_idle_action a);
/* Utilisation under this is idle for the usage summary when a class has no rule. */
enum { PROTO_IDLE_DEFAULT_BELOW = 5 };

/* How long a running job of a class outlives silence between its node and the
 * controller (docs/agent.md "Fencing and leases"): long enough by default that a 10-minute
 * controller outage stops nothing. */
#define PROTO_LEASE_DEFAULT_MS ((int64_t)15 * 60 * 1000)

/* A class's fields for the nodes, set only with the policy document; -1 (lease_ms,
 * pids_max, default_mem_mb) and PROTO_IDLE_UNSET mean "not given": keep the earlier. */
struct proto_class_node {
    int64_t pids_max;
    int64_t default_mem_mb;
    struct proto_idle_rule idle;
    int64_t lease_ms;
    /* an interactive session (docs/interactive.md) with no input and no output this long
     * is warned, then ended; 0 = PROTO_SESSION_IDLE_DEFAULT_MS */
    int64_t session_idle_ms;
};

#define PROTO_SESSION_IDLE_DEFAULT_MS ((int64_t)60 * 60 * 1000)

struct proto_policy {
    struct sched_policy policy; /* starts as the caller's current policy */
    bool has_tiers, has_classes, has_settings;
    struct proto_class_node class_node[SCHED_MAX_CLASSES]; /* by index of policy.classes */
    struct sched_project_spec *projects;                   /* owned; nprojects entries */
    size_t nprojects;
    /* the operator's sections (protocol/ops.h), owned; NULL when the document has none */
    struct proto_alerts *alerts;
    struct proto_prices *prices;
    struct proto_templates *templates; /* protocol/templates.h; replaces the list whole */
    struct storage_policy *storage;    /* protocol/storage.h */
    struct net_policy *network;        /* protocol/network.h */
    json_t *gpu_aliases, *partitions;  /* protocol/site.h, normalised; NULL when absent */
    json_t *node_labels;               /* protocol/site.h; NULL when absent */
    /* the projects' `members`, `leads` and `default_for` lists, in bulk: [{project, user,
       role}] and {user: project}; NULL when no project names any (added, never removed) */
    json_t *members, *defaults;
};

/* Parse a policy document (JSON object) on top of `base` (the current policy, copied).
 * `tiers` and `classes`, when present, replace the lists whole; `settings` overrides
 * the named knobs; `projects` are specs to upsert (limits default to -1). */
int proto_policy_parse(const json_t *doc, const struct sched_policy *base, struct proto_policy *out,
                       struct proto_error *err) PROTO_WUR;
/* From text: JSON, or YAML when `yaml` (util/yamljson.h). */
int proto_policy_parse_text(const char *text, size_t len, bool yaml,
                            const struct sched_policy *base, struct proto_policy *out,
                            struct proto_error *err) PROTO_WUR;
void proto_policy_release(struct proto_policy *p);

/* The policy as a document of the same shape (without projects): a new reference. */
json_t *proto_policy_to_json(const struct sched_policy *p);
json_t *proto_tier_json(const struct sched_policy *p, int i);
json_t *proto_class_json(const struct sched_class_spec *c);
/* "none", "best_effort", "required": a class's topology mode as the policy file says it */
const char *proto_topo_mode_name(enum sched_topo_mode m);
/* Add each class's node fields (`pids_max`, `default_mem` as "16G"-style MiB text) to the
 * classes of a document or list made by proto_policy_to_json / proto_class_json; `cn` by
 * index of p->classes; 0 values are left out. */
void proto_class_node_json(json_t *classes, const struct sched_policy *p,
                           const struct proto_class_node *cn);
/* Apply a PATCH body to one class (same field names as the policy document). */
int proto_class_patch(const json_t *body, struct sched_class_spec *c,
                      struct proto_error *err) PROTO_WUR;
/* Parse a project object (create: all fields optional but name; patch: `name` refused
 * unless equal). `p` is updated in place from the fields present. `path` prefixes
 * error fields ("projects[2]"), may be "". */
int proto_project_parse(const json_t *obj, const char *path, bool patch,
                        struct sched_project_spec *p, struct proto_error *err) PROTO_WUR;

/* ------------------------------------------------------------------------------------ */
/* Small JSON helpers shared by the parsers                                              */

/* A duration: "90s"/"1h30m" string or integer seconds. */
int proto_get_duration(const json_t *v, const char *field, int64_t max_ms, int64_t *out,
                       struct proto_error *err) PROTO_WUR;
/* A memory size: "64G" string or integer MiB. */
int proto_get_size_mb(const json_t *v, const char *field, int64_t *out,
                      struct proto_error *err) PROTO_WUR;
int proto_get_int(const json_t *v, const char *field, int64_t min, int64_t max, int64_t *out,
                  struct proto_error *err) PROTO_WUR;
int proto_get_bool(const json_t *v, const char *field, bool *out,
                   struct proto_error *err) PROTO_WUR;
/* A name (str_is_name) copied into out[PROTO_NAME_MAX]. */
int proto_get_name(const json_t *v, const char *field, char *out,
                   struct proto_error *err) PROTO_WUR;
/* Member `key` of `o` (error field "PATH.KEY"): a string of 1..cap-1 printable bytes
 * copied into out; absent: out untouched, an error only when `required`. */
int proto_member_text(const json_t *o, const char *key, const char *path, bool required, char *out,
                      size_t cap, struct proto_error *err) PROTO_WUR;
/* Member `key` of `o`: a boolean; absent: out untouched. */
int proto_member_flag(const json_t *o, const char *key, const char *path, bool *out,
                      struct proto_error *err) PROTO_WUR;
/* One element of a list (proto_list_parse): `v` parsed into `elem` (zeroed), errors
 * naming `path` ("FIELD[i]"). */
typedef int (*proto_elem_parse_fn)(const json_t *v, const char *path, void *elem,
                                   struct proto_error *err);
/* Releases what the first n elements of a list hold, and the list itself. */
typedef void (*proto_list_release_fn)(void *list, size_t n);
/* A JSON list of at most `max` elements of `size` bytes ("FIELD must be a list of at most
 * MAX WHAT"): *out a new array (one zeroed element past the end), *n its length. On an
 * error nothing is left: the elements parsed so far, the failing one included, go to
 * `release` (NULL: the array is only freed), and *out is NULL, *n 0. */
int proto_list_parse(const json_t *v, const char *field, const char *what, size_t max, size_t size,
                     proto_elem_parse_fn parse, proto_list_release_fn release, void **out,
                     size_t *n, struct proto_error *err) PROTO_WUR;
/* Refuse any key of `obj` not in the NULL-terminated list `known`. */
int proto_check_fields(const json_t *obj, const char *path, const char *const *known,
                       struct proto_error *err) PROTO_WUR;

#endif
