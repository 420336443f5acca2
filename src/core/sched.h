/*
 * sched.h - Docket's scheduling core: the cluster model and the policy, pure.
 *
 * The core owns an in-memory model of the cluster (policy, projects, nodes, live jobs)
 * and answers one question: given this state and the time `now`, what should happen?
 * It does no I/O, reads no clock, keeps no globals and calls nothing outside libc/libm.
 * The controller (src/controller), the simulator (src/sim) and the benchmarks (bench/)
 * all drive this same code. Design: docs/scheduling.md.
 *
 * Time is always an argument: int64 milliseconds on the caller's clock (the controller
 * uses the Unix epoch, the simulator its virtual clock). Durations are milliseconds too.
 *
 * Life of a job in the core:
 *   sched_job_submit()        -> PENDING (or HELD)
 *   sched_cycle() decides     -> STARTING, decision SCHED_D_START with its allocation
 *   sched_job_running()       -> RUNNING (the agent confirmed the launch)
 *   time limit / preemption / cancel -> STOPPING, decision SCHED_D_SIGNAL (signal + grace),
 *                                 later SCHED_D_KILL if it has not ended by then
 *   sched_job_ended()         -> a terminal state (decision SCHED_D_STATE), or back to
 *                                 PENDING with the same id (requeue, retry, preempted)
 * A job leaves the core when it reaches a terminal state: the caller keeps history.
 *
 * Ownership: strings passed in are copied. Pointers returned by queries are borrowed and
 * live until the next call that mutates the state (any function taking a non-const
 * struct sched *), unless the comment says otherwise.
 *
 * Errors: fallible calls return 0 or a negative errno-style code and fill a
 * struct sched_error naming the offending field, so the controller can answer
 * {"error": {"code", "message", "field"}} without rewording.
 */
#ifndef DOCKET_CORE_SCHED_H
#define DOCKET_CORE_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHED_WUR __attribute__((warn_unused_result))

enum {
    SCHED_NAME_MAX = 64,        /* names of projects, tiers, classes, nodes, types, users */
    SCHED_CONSTRAINT_MAX = 128, /* a job's feature constraint (Slurm's --constraint) */
    SCHED_MAX_TIERS = 5,
    SCHED_MIN_TIERS = 3,
    SCHED_MAX_CLASSES = 8,
    SCHED_MAX_GPU_TYPES = 32,
    SCHED_MAX_NODE_GPUS = 64,  /* GPU indices on one node are a 64-bit mask */
    SCHED_MAX_LABELS = 16,     /* labels on a node, selectors on a job */
    SCHED_MAX_DEPS = 128,      /* a whole array is one (sched_dep.array) */
    SCHED_MAX_JOB_NODES = 512, /* nodes of one gang job */
    SCHED_MAX_GROUPS = 128,    /* groups the policy may bound */
    SCHED_ENV_MAX = 80,        /* a job's environment key: a template's NAME@VERSION */
    SCHED_MAX_WARM = 64,       /* environments warm on one node (sched_node_set_warm) */
};

/* ------------------------------------------------------------------------------------ */
/* Enumerations                                                                         */

enum sched_job_state {
    SCHED_PENDING,
    SCHED_HELD,
    SCHED_STARTING,
    SCHED_RUNNING,
    SCHED_STOPPING,
    SCHED_COMPLETED,
    SCHED_FAILED,
    SCHED_CANCELLED,
    SCHED_TIMEOUT,
    SCHED_PREEMPTED,
    SCHED_NODE_FAIL,
    SCHED_JOB_STATE_COUNT
};

enum sched_node_state {
    SCHED_NODE_UP,
    SCHED_NODE_DRAINING,
    SCHED_NODE_DRAINED,
    SCHED_NODE_DOWN,
    SCHED_NODE_UNREACHABLE,
    SCHED_NODE_UNHEALTHY,
    SCHED_NODE_STATE_COUNT
};

/* Why a pending job is not running (DESIGN §3). SCHED_R_NONE for jobs not pending. */
enum sched_reason {
    SCHED_R_NONE,
    SCHED_R_PRIORITY,    /* higher-priority jobs wait for the same resources */
    SCHED_R_RESOURCES,   /* not enough free resources now; reservation/forecast given */
    SCHED_R_QUOTA_LIMIT, /* project or user GPU limit */
    SCHED_R_JOB_LIMIT,   /* project/user running-job cap, or array %limit */
    SCHED_R_DEPENDENCY,
    SCHED_R_HELD,
    SCHED_R_RESERVED_ZONE, /* only reserved-pool nodes could take it, and its tier may not */
    SCHED_R_GPU_TYPE,      /* no node has the GPU type it asks for (nodes of the type
                              that are down or drained mean Resources) */
    SCHED_R_NODE_SELECTOR, /* no node matches its selectors */
    SCHED_R_BEGIN_TIME,
    SCHED_R_ADMISSION_PAUSED,
    SCHED_R_RESERVATION,   /* resources are free but held for a higher job's reservation */
    SCHED_R_PREEMPTING,    /* victims were signalled; waiting for their grace to end */
    SCHED_R_STORAGE_QUOTA, /* its project is over a storage quota (sched_project_storage_hold) */
    /* a job it depends on ended in a way that can never satisfy the dependency: pending
       until cancelled, as Slurm's DependencyNeverSatisfied */
    SCHED_R_DEPENDENCY_NEVER,
    SCHED_REASON_COUNT
};

/* Why a running job is being stopped; also the cause recorded on its end. */
enum sched_stop_cause {
    SCHED_STOP_NONE,
    SCHED_STOP_TIMEOUT,
    SCHED_STOP_PREEMPT,
    SCHED_STOP_CANCEL,
    SCHED_STOP_REQUEUE,   /* admin asked to requeue a running job */
    SCHED_STOP_NODE_FAIL, /* part of a gang lost a node: the rest is killed */
};

/* How a job's processes ended, as the agent reports it. */
enum sched_exit_kind {
    SCHED_EXIT_CODE,          /* exited normally with `code` */
    SCHED_EXIT_SIGNAL,        /* killed by signal `code` */
    SCHED_EXIT_OOM,           /* killed by the memory limit */
    SCHED_EXIT_LAUNCH_FAILED, /* never started (bad workdir, no such user ...) */
    SCHED_EXIT_LOST,          /* the agent no longer knows the job (restart reconciliation) */
};

/* How a class places its gangs over the nodes' topology (docs/scheduling.md §3,
 * "Topology"): the nodes' value of one label (the level: "switch", "block", "rack") names
 * the domain each node sits in. */
enum sched_topo_mode {
    SCHED_TOPO_NONE,        /* any nodes */
    SCHED_TOPO_BEST_EFFORT, /* the fewest domains that have the room now */
    SCHED_TOPO_REQUIRED,    /* one domain, or wait (and be reserved) for one */
};

/* Queue ordering. TIERED is Docket's policy; the others are baselines for docket-sim. */
enum sched_ordering {
    SCHED_ORDER_TIERED,      /* tier desc, fair-share asc, submit asc (DESIGN §3.1) */
    SCHED_ORDER_FIFO,        /* submit time only */
    SCHED_ORDER_MULTIFACTOR, /* Slurm-like weighted sum: age + fair-share + QOS (tier) */
};

const char *sched_job_state_name(enum sched_job_state s);
const char *sched_node_state_name(enum sched_node_state s);
const char *sched_reason_name(enum sched_reason r); /* "Priority", "QuotaLimit" ... */
const char *sched_stop_cause_name(enum sched_stop_cause c);
bool sched_job_state_terminal(enum sched_job_state s);
/* Parse the names above back; return -1 when unknown. */
int sched_job_state_parse(const char *name);
int sched_node_state_parse(const char *name);

/* ------------------------------------------------------------------------------------ */
/* Errors                                                                               */

struct sched_error {
    int code;          /* negative errno: -EINVAL, -ENOENT, -EEXIST, -ENOSPC ... */
    char field[64];    /* the input field at fault ("gpus", "project"), or "" */
    char message[256]; /* lowercase, no trailing period, names the subject */
};

/* ------------------------------------------------------------------------------------ */
/* Policy: tiers, classes and global knobs. Changeable at run time (sched_set_policy).   */

struct sched_tier_spec {
    char name[SCHED_NAME_MAX];
    int64_t starve_after_ms; /* pending longer than this earns a reservation; 0 = never */
};

struct sched_class_spec {
    char name[SCHED_NAME_MAX];
    int64_t default_limit_ms; /* default time limit; 0 = none (services) */
    int64_t max_limit_ms;     /* cap on a requested limit; 0 = no cap */
    bool preemptible;
    int preempt_order;        /* lower goes first among victims of one tier */
    int64_t protect_after_ms; /* run time after which it may no longer be preempted; 0 = never */
    int64_t max_grace_ms;     /* cap on the grace a job may ask for */
    int max_retries;          /* auto-retries of a failed idempotent job */
    bool restart_on_failure;  /* services: requeue whenever it ends, unless cancelled */
    bool requeueable;         /* may go back to PENDING after preemption or node failure */
    enum sched_topo_mode topo_mode;  /* how its gangs are placed over the topology */
    char topo_level[SCHED_NAME_MAX]; /* the node label that names a node's domain ("" = none,
                                        which with a mode means "switch") */
};

struct sched_gpu_weight {
    char gpu_type[SCHED_NAME_MAX];
    double weight; /* billing units per GPU-second of this type */
};

/* A group of projects (DESIGN §2: org -> group -> project -> user). Its projects together
 * may use at most its GPU limit and reclaim at most its guarantee; fair-share compares
 * groups first, then the projects within one. A project names its group
 * (sched_project_spec.group); a name the policy does not list is a group without bounds
 * (it still shares fairly as one). */
struct sched_group_spec {
    char name[SCHED_NAME_MAX];
    double guarantee_gpus; /* what its projects together may reclaim; -1 = no bound of its own */
    int gpu_limit;         /* hard cap on its projects' GPUs together; -1 = none */
};

struct sched_policy {
    struct sched_tier_spec tiers[SCHED_MAX_TIERS]; /* highest priority first */
    int ntiers;
    struct sched_class_spec classes[SCHED_MAX_CLASSES];
    int nclasses;
    char default_class[SCHED_NAME_MAX];

    enum sched_ordering ordering;
    bool backfill; /* reservations + backfill (off: strict order, stop at first block) */
    bool preemption;

    /* fair-share (DESIGN §3.1) */
    int64_t fairshare_half_life_ms;
    int64_t fairshare_refresh_ms; /* how often shares are recomputed and the queue re-sorted */
    struct sched_gpu_weight gpu_weights[SCHED_MAX_GPU_TYPES];
    int ngpu_weights;
    double default_gpu_weight;
    double cpu_weight;        /* billing units per CPU-second */
    double mem_weight_per_gb; /* billing units per GB-second */

    /* multifactor baseline weights (SCHED_ORDER_MULTIFACTOR) */
    double mf_age_weight, mf_fairshare_weight, mf_tier_weight;
    int64_t mf_age_max_ms;

    /* reserved zone (DESIGN §3.4) */
    char reserved_label_key[SCHED_NAME_MAX];
    char reserved_label_value[SCHED_NAME_MAX];
    double reserved_max_ratio;              /* at most this share of all GPUs is reserved */
    char reserved_min_tier[SCHED_NAME_MAX]; /* tiers at or above this use it freely */

    /* preemption guards (DESIGN §3.5) */
    int64_t min_runtime_ms;
    int max_preemptions;
    int preempt_max_per_cycle; /* jobs that may preempt in one cycle (the next one follows
                                  soon while victims are left); searches are bounded by the
                                  memos, not by this */
    int max_starts_per_cycle;  /* a cycle stops after this many starts and the next one
                                  follows at once (0 = no cap): bounds one cycle's work */
    /* queue caps at submission (sched_queue_room): pending+held jobs (array tasks each)
     * of a project without a max_queued of its own, and of one user over all projects;
     * 0 = no cap */
    int default_max_queued;
    int user_max_queued;
    int default_signal;
    int64_t default_grace_ms;
    int64_t cancel_grace_ms;

    /* backfill */
    int backfill_depth;             /* reservations for the highest blocked jobs */
    int64_t reservation_refresh_ms; /* full recomputation of reservations at least this often */

    int64_t service_restart_delay_ms;
    int64_t retry_delay_ms;

    /* groups with bounds (struct sched_group_spec); names unique */
    struct sched_group_spec groups[SCHED_MAX_GROUPS];
    int ngroups;
};

/* Fill `p` with the defaults of DESIGN §2-§3: tiers critical/high/normal/low, the five
 * classes, 7-day half-life, 20 % reserved zone for tiers >= high, 10 min min_runtime,
 * 3 max preemptions, SIGTERM with 30 s default grace. */
void sched_policy_defaults(struct sched_policy *p);

/* ------------------------------------------------------------------------------------ */
/* Projects, nodes, jobs: specs the callers fill in.                                    */

struct sched_project_spec {
    char name[SCHED_NAME_MAX];
    char group[SCHED_NAME_MAX];
    char tier[SCHED_NAME_MAX]; /* the highest tier its users may submit at */
    double guarantee_gpus;     /* what it can reclaim from borrowers */
    int gpu_limit;             /* hard cap on GPUs in use; -1 = none */
    int max_running;           /* running jobs; -1 = none */
    int max_queued;            /* pending+held jobs; -1 = none of its own (the policy's
                                  default_max_queued at submission; checked at submit) */
    int user_max_running;      /* per user; -1 = none */
    int user_gpu_limit;        /* per user; -1 = none */
    bool paused;               /* admission switch: keeps running jobs, starts nothing */
};

void sched_project_spec_init(struct sched_project_spec *p); /* limits -1, tier "normal" */

struct sched_label {
    char key[SCHED_NAME_MAX];
    char value[SCHED_NAME_MAX];
};

struct sched_node_spec {
    char name[SCHED_NAME_MAX];
    char gpu_type[SCHED_NAME_MAX]; /* "" for a CPU-only node */
    int gpus;                      /* 0..SCHED_MAX_NODE_GPUS */
    int64_t gpu_mem_mb;
    int cpus;
    int64_t mem_mb;
    struct sched_label labels[SCHED_MAX_LABELS];
    int nlabels;
    enum sched_node_state state;
};

/* afterok, afterany, afternotok: met when the job ends (well, any way, badly); after
 * (Slurm's after:ID): met once the job has started, or ended without starting. */
enum sched_dep_kind {
    SCHED_DEP_AFTEROK,
    SCHED_DEP_AFTERANY,
    SCHED_DEP_AFTERNOTOK,
    SCHED_DEP_AFTER
};

struct sched_dep {
    enum sched_dep_kind kind;
    uint64_t job_id; /* a job, or with `array` an array's id */
    bool never;      /* job_id ended already, and not as the kind needs: never met (the caller
                        knows how finished jobs ended; the core holds live ones only) */
    /* Slurm's afterok:ARRAY_ID: job_id is an array, and the dependency is met when the
     * whole array meets it: afterok when every task completed (never once one did not),
     * afterany when every task ended, afternotok when every task ended and one did not
     * complete (never when all did), after when every task started or ended. An array the
     * core does not know has ended: the caller settles it (never, or drops it). */
    bool array;
};

/* Selector: the node's label `key` must equal (or, with negate, differ from) `value`. */
struct sched_selector {
    char key[SCHED_NAME_MAX];
    char value[SCHED_NAME_MAX];
    bool negate;
};

struct sched_job_spec {
    uint64_t id; /* assigned by the caller, unique, > 0 */
    char project[SCHED_NAME_MAX];
    char user[SCHED_NAME_MAX];
    char tier[SCHED_NAME_MAX];       /* "" = the project's tier */
    char class_name[SCHED_NAME_MAX]; /* "" = policy default class */
    char gpu_type[SCHED_NAME_MAX];   /* "" = any type */
    int gpus_per_node;
    int cpus_per_node;       /* 0 = 1 */
    int64_t mem_mb_per_node; /* 0 = no memory request */
    int nodes;               /* 0 = 1 */
    int64_t time_limit_ms;   /* 0 = the class default */
    int64_t submit_ms;       /* queue-order time; keeps its value across requeues */
    int64_t begin_ms;        /* not before; 0 = now */
    struct sched_dep deps[SCHED_MAX_DEPS];
    int ndeps;
    bool deps_any; /* Slurm's '?': one met dependency is enough (else all of them) */
    struct sched_selector selectors[SCHED_MAX_LABELS];
    int nselectors;
    /* "" or Slurm's --constraint grammar over the nodes' features (docs/slurm.md
       "Features"): `a100&ib`, `a100|h100`, `[a|b]` (one node), `a*N` (N = nodes) */
    char constraint[SCHED_CONSTRAINT_MAX];
    int signal;                 /* checkpoint signal; 0 = policy default */
    int64_t grace_ms;           /* asked grace; -1 = policy default; capped by class */
    bool has_checkpoint_signal; /* the job declared it handles `signal` (saves state) */
    int retries;                /* auto-retries wanted (idempotent experiment/exploration) */
    bool idempotent;
    bool no_requeue;   /* never requeue: preemption/node failure end it */
    bool hold;         /* submit HELD */
    uint64_t array_id; /* 0, or the id shared by all tasks of one array */
    int array_limit;   /* max running tasks of the array (%N); 0 = none */
    int preempt_count; /* restored on reload; 0 for new jobs */
    /* Slurm's --switches=N[@wait]: a gang on at most N domains of the `switch` label (1 =
     * one switch, required; more = the fewest, best effort); 0 = its class's rule */
    int switches;
    int64_t switches_wait_ms; /* its class's rule from submit_ms + this on; 0 = never */
    /* the environment it runs in, as the caller names what nodes have warm
       (sched_node_set_warm): docketd gives its template's NAME@VERSION; "" = none. Only
       where it lands among nodes that fit it equally well depends on it (§3 "Warm nodes") */
    char env[SCHED_ENV_MAX];
};

void sched_job_spec_init(struct sched_job_spec *j); /* nodes 1, cpus 1, grace -1 */

/* ------------------------------------------------------------------------------------ */
/* Decisions: what a cycle (or an event) asks the caller to do.                         */

struct sched_alloc {
    uint32_t node;     /* node index (sched_node_name) */
    uint64_t gpu_mask; /* bit i = GPU index i on that node */
    int gpus;
    int cpus;
    int64_t mem_mb;
};

enum sched_decision_kind {
    SCHED_D_START,      /* launch `job` on allocs[]; job is now STARTING */
    SCHED_D_SIGNAL,     /* send `signal` to the whole job; kill after `grace_ms` */
    SCHED_D_KILL,       /* kill the whole job now (grace over, or a gang lost a node) */
    SCHED_D_STATE,      /* the job changed state without a command (requeue, end, cancel) */
    SCHED_D_NODE_STATE, /* a node changed state on its own (DRAINING -> DRAINED) */
};

struct sched_decision {
    enum sched_decision_kind kind;
    uint64_t job_id;               /* 0 for NODE_STATE */
    uint32_t node;                 /* NODE_STATE: the node */
    enum sched_job_state from, to; /* STATE, START (PENDING->STARTING), SIGNAL (->STOPPING) */
    enum sched_node_state node_from, node_to;
    enum sched_stop_cause cause; /* SIGNAL, KILL, STATE: why */
    int signal;
    int64_t grace_ms;
    int64_t time_limit_ms; /* START: the limit the agent enforces as a duration */
    uint64_t preemptor;    /* SIGNAL/STATE with cause PREEMPT: the job that needed room */
    int64_t lost_ms;       /* STATE after preemption: run time lost */
    const struct sched_alloc *allocs; /* START, SIGNAL, KILL: where the job runs */
    int nallocs;
    int warm_nodes;   /* START: how many of allocs[] had the job's environment warm */
    char detail[128]; /* short human text for the event log */
};

/* ------------------------------------------------------------------------------------ */
/* Lifecycle                                                                            */

struct sched;

/* Create an empty model with `policy` (copied, validated). NULL with err filled on error. */
struct sched *sched_create(const struct sched_policy *policy, struct sched_error *err);
void sched_destroy(struct sched *s);

/* Replace the policy. Validated whole; on error nothing changes. Tiers may be renamed or
 * added but not removed while a project or job uses them. */
int sched_set_policy(struct sched *s, const struct sched_policy *policy,
                     struct sched_error *err) SCHED_WUR;
const struct sched_policy *sched_get_policy(const struct sched *s);
/* Would sched_set_policy accept `policy` now? Nothing changes. 0 or -errno with err. Lets
 * the controller save a policy first and apply it only once it is durable. */
int sched_policy_check(const struct sched *s, const struct sched_policy *policy,
                       struct sched_error *err) SCHED_WUR;

/* ------------------------------------------------------------------------------------ */
/* Events: each updates the model incrementally. Decisions they produce are queued and   */
/* returned by the next sched_cycle().                                                   */

/* Create or update a project by name. Changing the tier re-sorts the queue. */
int sched_project_upsert(struct sched *s, const struct sched_project_spec *p,
                         struct sched_error *err) SCHED_WUR;
/* Boost a project by `levels` tiers until `until_ms` (0 levels: remove the boost). */
/* Hold back (or, with why "", let go) every pending job of a project because it is over
 * a storage quota: its jobs wait with StorageQuota and `why` (the pool, usage and quota,
 * as the controller measured them) in their explanation. Running jobs go on. */
int sched_project_storage_hold(struct sched *s, const char *project, const char *why,
                               struct sched_error *err) SCHED_WUR;
int sched_project_boost(struct sched *s, const char *project, int levels, int64_t until_ms,
                        int64_t now, struct sched_error *err) SCHED_WUR;

/* Add or update a node by name. Capacity changes apply to new placements; a node shrunk
 * below what runs on it keeps its jobs. */
int sched_node_upsert(struct sched *s, const struct sched_node_spec *n, int64_t now,
                      struct sched_error *err) SCHED_WUR;
/* Change a node's state. DOWN ends its jobs as NODE_FAIL (requeued when requeueable; the
 * other nodes of a gang are sent KILL). UNREACHABLE only stops new placements: its jobs
 * run on under the leases their agent holds, until the caller declares each lost
 * (sched_job_lost_on). DRAINING becomes DRAINED by itself when its last job ends. */
int sched_node_set_state(struct sched *s, const char *node, enum sched_node_state st, int64_t now,
                         struct sched_error *err) SCHED_WUR;
/* The job's part on `node` is lost (its lease there ran out: the agent has stopped it):
 * the job ends as NODE_FAIL, requeued when requeueable; a gang's other nodes are sent
 * KILL. -ENOENT for an unknown node or job, -EINVAL when the job does not run there. */
int sched_job_lost_on(struct sched *s, uint64_t id, const char *node, int64_t now,
                      struct sched_error *err) SCHED_WUR;
int sched_node_set_labels(struct sched *s, const char *node, const struct sched_label *labels,
                          int nlabels, struct sched_error *err) SCHED_WUR;
/* The environments ready on a node now (docs/scheduling.md §3 "Warm nodes"): at most
 * SCHED_MAX_WARM keys as jobs name them (sched_job_spec.env), replacing what it had; 0
 * keys: none. A soft preference only: among the nodes that fit a job equally well, those
 * where its environment is warm are taken first; whether and when a job starts, its
 * reservations and its victims never depend on it. -ENOENT for an unknown node, -EINVAL
 * for an empty or too long key or too many. */
int sched_node_set_warm(struct sched *s, const char *node, const char *const *keys, int nkeys,
                        struct sched_error *err) SCHED_WUR;
/* Is `env` warm on node `index` (as the last sched_node_set_warm said)? */
bool sched_node_warm(const struct sched *s, uint32_t index, const char *env);

/* Check a job spec against the model without changing anything: names resolve, sizes are
 * sane, the tier is allowed for the project, the class allows what it asks, and the job
 * could fit the cluster if it were empty (all known nodes, any state). 0 or -errno. */
int sched_job_validate(const struct sched *s, const struct sched_job_spec *spec,
                       struct sched_error *err) SCHED_WUR;
/* Validate then add a job (PENDING, or HELD when spec->hold). Also enforces the project's
 * max_queued. On error nothing changes. */
int sched_job_submit(struct sched *s, const struct sched_job_spec *spec, int64_t now,
                     struct sched_error *err) SCHED_WUR;
/* May `user` queue more jobs (pending or held; an array's tasks each) in `project`:
 * n_project more for the project, n_user more for the user (the caller adds what it
 * holds outside the core, arrays still being written)? The project's max_queued (else
 * the policy's default_max_queued) and the policy's user_max_queued over all of the
 * user's projects (unless user_exempt: the caller's admins). 0, or -ENOSPC with err
 * naming the cap ("project" or "user" in err->field). The caller asks before it writes
 * anything, so a refused array leaves nothing behind; sched_job_submit itself still
 * holds a project's own max_queued. */
int sched_queue_room(const struct sched *s, const char *project, const char *user, size_t n_project,
                     size_t n_user, bool user_exempt, struct sched_error *err) SCHED_WUR;
/* Take a PENDING or HELD job out of the core as if it had never been submitted: no
 * decision is queued, nothing else changes (the caller could not store the submission).
 * -ENOENT when not live, -EINVAL when it is not pending or held. */
int sched_job_withdraw(struct sched *s, uint64_t id, struct sched_error *err) SCHED_WUR;
/* Re-add a job that was already running when the controller restarted: it takes its
 * allocation again (RUNNING since start_ms) without a START decision. */
int sched_job_restore_running(struct sched *s, const struct sched_job_spec *spec,
                              const struct sched_alloc *allocs, int nallocs, int64_t start_ms,
                              enum sched_job_state state, struct sched_error *err) SCHED_WUR;

/* An array whose tasks the core holds only in part: it has `tasks` in all, of which
 * `ended` ended already (a reload; `failed` of them not COMPLETED). Dependencies on the
 * whole array (sched_dep.array) then wait for all of them, however its tasks arrive.
 * Called before its first live task is submitted (the controller: when the array is
 * stored whole, and on reload); once the core knows the array it changes nothing. An
 * array never declared counts the tasks submitted to it. -EINVAL for a bad count,
 * -ENOMEM. */
int sched_array_declare(struct sched *s, uint64_t array_id, int tasks, int ended, int failed,
                        struct sched_error *err) SCHED_WUR;
/* A task of a declared array ended outside the core (refused at submission or reload);
 * `ok`: COMPLETED. Nothing when the core does not know the array. */
void sched_array_task_gone(struct sched *s, uint64_t array_id, bool ok, int64_t now);
/* Does the core know the array (a live task, or declared and not all ended)? */
bool sched_array_known(const struct sched *s, uint64_t array_id);

/* The agent confirmed the launch: STARTING -> RUNNING. */
int sched_job_running(struct sched *s, uint64_t id, int64_t now, struct sched_error *err) SCHED_WUR;
/* The job's processes are gone. The core picks the resulting state from how it ended and
 * why it was being stopped: COMPLETED/FAILED/TIMEOUT/CANCELLED, PREEMPTED (or requeued),
 * NODE_FAIL (or requeued), or a retry. Frees its resources. */
int sched_job_ended(struct sched *s, uint64_t id, enum sched_exit_kind how, int code, int64_t now,
                    struct sched_error *err) SCHED_WUR;
/* The job declared a checkpoint: work lost on preemption counts from here. */
int sched_job_checkpointed(struct sched *s, uint64_t id, int64_t now,
                           struct sched_error *err) SCHED_WUR;

/* User/admin actions. Cancel of a pending job ends it at once; of a running job it signals
 * SIGTERM with the policy's cancel grace. Hold/release apply to pending jobs. Requeue
 * stops a running job and returns it to PENDING. */
int sched_job_cancel(struct sched *s, uint64_t id, int64_t now, struct sched_error *err) SCHED_WUR;
int sched_job_hold(struct sched *s, uint64_t id, int64_t now, struct sched_error *err) SCHED_WUR;
int sched_job_release(struct sched *s, uint64_t id, int64_t now, struct sched_error *err) SCHED_WUR;
int sched_job_requeue(struct sched *s, uint64_t id, int64_t now, struct sched_error *err) SCHED_WUR;
/* A pending or held job's request changes (scontrol update): `spec` is the whole new
 * request under the job's id, checked as a submission is, with the same project and
 * array; the job keeps its state, its place in the queue (spec->submit_ms) and the jobs
 * that wait on it, and every cache that read the old request lets go of it. On error
 * nothing changes. */
int sched_job_update(struct sched *s, const struct sched_job_spec *spec, int64_t now,
                     struct sched_error *err) SCHED_WUR;
/* A running (or starting) job's time limit becomes `limit_ms` from its start, within its
 * class's maximum; a limit already past ends it at the next cycle, as a time limit does.
 * Who may raise it is the caller's rule (Slurm: users only lower it). */
int sched_job_set_limit(struct sched *s, uint64_t id, int64_t limit_ms, int64_t now,
                        struct sched_error *err) SCHED_WUR;

/* ------------------------------------------------------------------------------------ */
/* The cycle                                                                            */

struct sched_cycle_stats {
    int started, preempted, reservations, considered, pending, running;
    bool full; /* a refresh (shares, order, reservations) or a forced recomputation */
    /* pending jobs the queue walk did not look at, by the proof that let it skip them:
       their project (or its GPU limit) held back, their shape found no capacity, their shape
       held off by claims for a job no longer; and those left after the walk stopped
       because nothing further could start, reserve or preempt (docs/scheduling.md) */
    int skipped_limit, skipped_nofit, skipped_claimed, not_reached;
    int starving_served; /* starving jobs served before the walk */
    int starving_quiet;  /* ... and those skipped: proven to change nothing (docs/scheduling.md) */
    /* preemption searches: over every candidate node; over the nodes changed since a
       memo's failed search (and the nodes looked at again so); skipped by an unchanged
       memo (docs/scheduling.md "Guarantees") */
    int preempt_full, preempt_rechecks, preempt_recheck_nodes, preempt_memo_skips;
    /* nodes the reservation searches skipped: their bare floor (free room plus releases,
       no claim) came after the earliest starts already found (docs/scheduling.md) */
    long reserve_pruned;
    /* preemption searches answered from the plans of their kind found earlier in the cycle,
       without a look at every node (docs/scheduling.md "What each cache reads") */
    int preempt_led;
    /* of `reservations`, those given back without a search: a gang's room that a higher
       job's arrival had taken in this walk, still free for it (docs/scheduling.md §6) */
    int reservations_restored;
    bool start_capped; /* stopped at max_starts_per_cycle: sched_next_wakeup() is now */
};

/* Run one scheduling cycle at `now`: fire due time-based rules (time limits, kill after
 * grace, boosts expiring, begin times), then walk the pending queue in priority order,
 * starting what fits without delaying any reservation, preempting where the policy allows,
 * and leaving every pending job with a reason. Returns the decisions queued since the last
 * cycle (events included); the array is borrowed until the next call that mutates `s`.
 * `mode`: SCHED_CYCLE_INCREMENTAL (0, the normal case) recomputes only what changed;
 * SCHED_CYCLE_REFRESH (1) runs the periodic refresh now: fair-share, the order, and the
 * ordinary reservations dropped and made again; SCHED_CYCLE_RECOMPUTE (2) recomputes every
 * structure derived from the model and trusts no memo, keeping what the model holds (the
 * shares, the reservations and their claims): it takes the same decisions as an
 * incremental cycle on the same state (the property test's twin checks this). */
enum sched_cycle_mode {
    SCHED_CYCLE_INCREMENTAL = 0,
    SCHED_CYCLE_REFRESH = 1,
    SCHED_CYCLE_RECOMPUTE = 2,
};
const struct sched_decision *sched_cycle(struct sched *s, int64_t now, enum sched_cycle_mode mode,
                                         size_t *ndec, struct sched_cycle_stats *stats);

/* The next time a time-based rule may change something (a time limit, a grace ending, a
 * boost expiring, a begin time, a starvation bound, a victim leaving min_runtime, the
 * periodic refresh). INT64_MAX when nothing is scheduled. The caller should run a cycle
 * then (or earlier, on events). */
int64_t sched_next_wakeup(const struct sched *s, int64_t now);

/* ------------------------------------------------------------------------------------ */
/* Queries                                                                              */

struct sched_job_view {
    uint64_t id;
    enum sched_job_state state;
    enum sched_reason reason;         /* pending jobs */
    enum sched_stop_cause stop_cause; /* STOPPING jobs */
    const char *project, *user, *tier, *eff_tier, *class_name, *gpu_type;
    int gpus_per_node, cpus_per_node, nodes;
    int64_t mem_mb_per_node;
    int64_t submit_ms, start_ms, time_limit_ms, kill_at_ms;
    int preempt_count, retries_left;
    uint64_t preemptor;               /* STOPPING by preemption: who needed the room */
    int64_t reservation_ms;           /* pending with a reservation: its start; else -1 */
    const struct sched_alloc *allocs; /* running jobs */
    int nallocs;
    const char *env; /* its environment key ("" = none) */
};

/* Fill `out` for a live job; -ENOENT when the core does not hold it (never or no longer). */
int sched_job_get(const struct sched *s, uint64_t id, struct sched_job_view *out);
/* Number of live jobs. To visit them all: for slot in 0..sched_job_slots()-1, call
 * sched_job_at(), which returns -ENOENT for an empty slot (O(1) each). Slots are stable
 * only until the next mutating call. */
size_t sched_job_count(const struct sched *s);
size_t sched_job_slots(const struct sched *s);
int sched_job_at(const struct sched *s, size_t slot, struct sched_job_view *out);

struct sched_node_view {
    const char *name, *gpu_type;
    enum sched_node_state state;
    int gpus, gpus_used, cpus, cpus_used;
    int64_t mem_mb, mem_used_mb, gpu_mem_mb;
    uint64_t gpu_used_mask;
    bool reserved; /* counts in the reserved zone (as of the last cycle or
                      submission: node changes are folded in then) */
    int njobs;
    const struct sched_label *labels;
    int nlabels;
    int nwarm; /* environments warm there (sched_node_set_warm) */
};

size_t sched_node_count(const struct sched *s);
int sched_node_get(const struct sched *s, uint32_t index, struct sched_node_view *out);
int sched_node_find(const struct sched *s, const char *name); /* index or -ENOENT */
const char *sched_node_name(const struct sched *s, uint32_t index);

struct sched_project_view {
    struct sched_project_spec spec;
    const char *eff_tier; /* after boost */
    int boost_levels;
    int64_t boost_until_ms;
    int gpus_in_use, running, queued;
    double usage; /* decayed billing units, as average units over the window */
    double share; /* usage / guarantee: below 1 means under its guarantee */
};

/* Every group a project names or the policy lists. */
struct sched_group_view {
    struct sched_group_spec spec; /* bounds from the policy; -1 when it lists none */
    int gpus_in_use, running, projects;
    double share; /* its projects' usage over its guarantee (theirs when it has none) */
};

size_t sched_group_count(const struct sched *s);
int sched_group_get(const struct sched *s, size_t index, struct sched_group_view *out);
int sched_group_find(const struct sched *s, const char *name); /* index or -ENOENT */

size_t sched_project_count(const struct sched *s);
int sched_project_get(const struct sched *s, size_t index, struct sched_project_view *out);
int sched_project_find(const struct sched *s, const char *name); /* index or -ENOENT */

/* Cluster-wide counts for /metrics. */
struct sched_totals {
    size_t jobs_by_state[SCHED_JOB_STATE_COUNT];
    size_t nodes_by_state[SCHED_NODE_STATE_COUNT];
    int gpus_total, gpus_used, gpus_usable;
    int cpus_total, cpus_used;
    uint64_t cycles;
    size_t core_bytes; /* memory held by the core's structures */
};
void sched_totals_get(const struct sched *s, struct sched_totals *out);

/* Walk the whole model and recount every book the core keeps (docs/scheduling.md
 * "Guarantees"): allocations against node counters, GPU masks and the free-capacity index;
 * the queue, shapes and the starving list against the pending jobs; project and user
 * counters; claims against reservations and no node promised beyond its capacity; a reason
 * for every pending job the last cycle walked. 0, or -EFAULT with err naming the first
 * broken invariant. O(jobs + nodes + claims); for tests and debugging. */
int sched_check(const struct sched *s, struct sched_error *err) SCHED_WUR;

/* Test aid for the core's caches (docs/scheduling.md "What each cache reads"): while on,
 * every answer a cache gives is computed again the slow way, without acting on it, and
 * sched_check() fails from then on if the two differ (naming the cache and the job).
 * Slow; for property and unit tests. */
void sched_verify_memos(struct sched *s, bool on);

/* The caches sched_verify_memos() checks, one per kind of cached answer. A new cache gets
 * a kind here, a name (caches.c, a size assertion), a check at each of its hits, and a row
 * in the table of docs/scheduling.md; the property test fails while a kind's check never
 * runs. */
enum sched_cache {
    SCHED_CACHE_SHAPE_MEMO,    /* a shape's failed preemption search skipped a job's */
    SCHED_CACHE_OWN_MEMO,      /* a reserved job's own failed search skipped its search */
    SCHED_CACHE_VICTIM_GATE,   /* the victim counts said no search can find victims */
    SCHED_CACHE_QUIET,         /* a starving job was passed by as quiet */
    SCHED_CACHE_PLACE_MEMO,    /* a starving job's placement answered from its memo */
    SCHED_CACHE_RES_PRUNED,    /* a reservation search pruned nodes by their floors */
    SCHED_CACHE_WALK_SKIP,     /* the queue walk skipped a job by its shape's or project's mark */
    SCHED_CACHE_RES_USABLE,    /* a reservation's nodes proven usable under the epochs */
    SCHED_CACHE_STATIC_REASON, /* a shape's static reason (no node of its type, selectors, pool) */
    SCHED_CACHE_PLAN_MEMO,     /* a preemption search read plans kept earlier in the cycle */
    SCHED_CACHE_COUNT
};

/* The inputs a quiet proof reads (docs/scheduling.md "What each cache reads"). A check at
 * a hit catches a forgotten input only when the workload moves that input alone, where it
 * matters: so under sched_verify_memos() the walk also counts, per input, the proofs that
 * this input alone ended and whose service then changed something (a witness: a proof
 * without that input would have been wrong there, and its check would say so). The
 * property test fails while an input has no witness in its seeds (issue 34's mutation
 * trial: a proof without reclaim_epoch passed 150 seeds, none of which moved it alone). */
enum sched_quiet_input {
    SCHED_QI_SLOT,    /* its job changed (changed_bits) */
    SCHED_QI_EPOCH,   /* memo_epoch - log_resets + node_epoch + project_changes: the policy,
                         projects, their guarantees and limits, nodes, labels */
    SCHED_QI_USAGE,   /* its project's, group's and array's usage, or whether it may reclaim */
    SCHED_QI_RECLAIM, /* reclaim_epoch: a project or group went over its guarantee */
    SCHED_QI_WAKE,    /* time: its reservation's start, a refusal's end, a search's horizon */
    SCHED_QI_NODES,   /* the nodes its selectors match, and the room for its shape */
    SCHED_QI_COUNT
};

/* What the checks found since sched_verify_memos() was first turned on: hits checked per
 * kind, and the first job whose check differed (0: none); the quiet proofs' witnesses. */
struct sched_cache_checks {
    uint64_t checked[SCHED_CACHE_COUNT];
    uint64_t wrong[SCHED_CACHE_COUNT];
    uint64_t quiet_witness[SCHED_QI_COUNT];
};
void sched_cache_checks(const struct sched *s, struct sched_cache_checks *out);
const char *sched_cache_name(enum sched_cache c);
const char *sched_quiet_input_name(enum sched_quiet_input i);

/* ------------------------------------------------------------------------------------ */
/* Explain and forecast (DESIGN §3 "Explaining"), as data.                              */

enum { SCHED_EXPLAIN_AHEAD = 10, SCHED_EXPLAIN_NODES = 10, SCHED_FORECAST_MAX = 256 };

struct sched_explain_job {
    uint64_t id;
    char project[SCHED_NAME_MAX];
    char tier[SCHED_NAME_MAX];
    int gpus, nodes;
    enum sched_reason reason;
};

struct sched_explain_node {
    char name[SCHED_NAME_MAX];
    enum sched_node_state state;
    int gpus_free, gpus_total;
    int cpus_free;
    int64_t mem_free_mb;
    bool fits_now; /* free resources suffice right now */
    bool reserved;
    int64_t free_at_ms; /* when enough would be free (-1 unknown) */
};

struct sched_explain {
    uint64_t id;
    enum sched_job_state state;
    enum sched_reason reason;
    char sentence[320]; /* one human sentence for the reason, with its numbers */

    /* priority components (pending and running) */
    char tier[SCHED_NAME_MAX], eff_tier[SCHED_NAME_MAX];
    int tier_rank; /* 0 = highest */
    int boost_levels;
    double fairshare_usage, fairshare_guarantee, fairshare_share;
    int64_t submit_ms, age_ms;
    double mf_priority; /* multifactor score when that ordering is active */

    /* pending */
    long position, pending_total; /* 1-based position in the whole queue */
    long tier_position, tier_total;
    struct sched_explain_job ahead[SCHED_EXPLAIN_AHEAD]; /* nearest jobs ahead, nearest last */
    int nahead;
    int64_t limit_value, limit_in_use, limit_request; /* QuotaLimit / JobLimit numbers */
    char limit_name[160]; /* "project gpu_limit", "user max_running", "array %limit" */
    struct sched_explain_node nodes[SCHED_EXPLAIN_NODES]; /* candidates, best first */
    int nnodes;
    int nodes_matching;        /* usable nodes of the right type/selectors/capacity */
    int64_t forecast_start_ms; /* -1 when unknown */
    bool has_reservation;
    bool starving;
    int64_t starve_at_ms; /* when the starvation guard applies (-1 never) */
    /* when its sticky reservation was last pushed back (-1 never), and by whom: a
       preemptor ahead of it on its nodes starting late (its victims outlived their kill),
       an older starving job whose passed window was made again, or the job itself (its
       own window passed unused, after a clock jump or a job hung past its kill, and was
       made again behind what took the room meanwhile) */
    int64_t pushed_back_ms;
    uint64_t pushed_back_by;
    uint64_t waiting_on_victims[8];
    int nvictims;
    /* a gang with a topology rule (docs/scheduling.md §3, "Topology"): its level ("switch")
       and mode, and the domain with the most nodes that have room for it now */
    enum sched_topo_mode topo_mode;
    char topo_level[SCHED_NAME_MAX];
    char topo_best_domain[SCHED_NAME_MAX]; /* "" for nodes without the level's label */
    int topo_best_free;                    /* its nodes with room now (0: none anywhere) */
    int topo_domains;                      /* domains with any node that could hold it */

    /* running */
    bool preemptible;
    char preemptible_by[SCHED_NAME_MAX]; /* lowest tier that may preempt it now, or "" */
    char not_preemptible_why[128];
    int64_t protected_at_ms;     /* -1 never */
    int64_t preemptible_from_ms; /* min_runtime end */
    int64_t expected_end_ms;     /* -1 no limit */
    int preempt_count;
};

int sched_explain(const struct sched *s, uint64_t id, int64_t now, struct sched_explain *out);

struct sched_release {
    int64_t at_ms;   /* when the resources come free (time limit, or grace end) */
    uint64_t job_id; /* the job ending */
    char node[SCHED_NAME_MAX];
    int gpus;
    char gpu_type[SCHED_NAME_MAX];
    uint64_t next_job; /* who they go to (0 = nobody waiting fits) */
    char next_project[SCHED_NAME_MAX];
    char next_tier[SCHED_NAME_MAX];
    bool by_reservation; /* next_job holds a reservation on that node */
};

/* Up to `max` next releases in time order, each with where its resources flow. Returns the
 * number written. */
size_t sched_forecast(const struct sched *s, int64_t now, struct sched_release *out, size_t max);

#endif
