/*
 * types.h - the core's model: the data every file of src/core/ works on (jobs,
 * nodes, projects, groups, shapes, reservations, the queue, the memos, struct sched), and the
 * few inline helpers many files read it through. It declares no function of a file: each
 * file's own header does (model.h, nodes.h ..., docs/architecture.md "Inside the core").
 *
 * Layout for speed (docs/scheduling.md "Performance"):
 * - jobs live in a slab indexed by slot; a hash map finds a slot by id;
 * - the pending queue is an array of compact entries sorted by priority key; the walk
 *   reads entries sequentially and touches a job only when its shape may fit;
 * - free capacity is indexed by (GPU type, pool, free GPUs) buckets of UP nodes, so
 *   "does anything fit" is a handful of list-head reads on a full cluster;
 * - shapes (the resource request of a job, deduplicated) carry per-cycle memos.
 */
#ifndef DOCKET_CORE_TYPES_H
#define DOCKET_CORE_TYPES_H

#include "core/sched.h"
#include "core/containers.h"

#include <stdbool.h>
#include <stdint.h>

#define NONE32 UINT32_MAX
#define NEVER  INT64_MAX
#define LN2    0.69314718055994530942

enum { POOL_NORMAL = 0, POOL_RESERVED = 1, NPOOLS = 2 };
enum { NTYPES = SCHED_MAX_GPU_TYPES + 1 }; /* type 0 = CPU-only nodes */
enum { NBUCKETS = SCHED_MAX_NODE_GPUS + 1 };
enum { NSELBITS = 64 }; /* selector sets 1..63 are cached per node and counted by the gate */

/* What a job's tier allows in the reserved zone. */
enum pool_rule {
    POOL_RULE_NORMAL_ONLY,   /* low tier, not preemptible: never on reserved nodes */
    POOL_RULE_BORROW,        /* low tier, preemptible: normal first, reserved as borrower */
    POOL_RULE_RESERVED_FIRST /* tier >= reserved_min_tier */
};

enum job_flags {
    JF_CKPT_SIGNAL = 1 << 0,
    JF_IDEMPOTENT = 1 << 1,
    JF_NO_REQUEUE = 1 << 2,
    JF_KILL_SENT = 1 << 3,
    JF_VICTIM_ELIGIBLE = 1 << 4, /* counted in eligible_victims */
    JF_BORROWER = 1 << 5,        /* low tier running on a reserved node */
    JF_STARVING = 1 << 6,
    JF_STARTED = 1 << 7, /* it has started since it was submitted (arrays.c: after:ARRAY) */
};

struct job_dep {
    enum sched_dep_kind kind;
    uint64_t id;
    bool array; /* id is an array's: the whole array (arrays.c) */
    bool met;
    bool never; /* its job ended, and not as `kind` needs */
};

struct dep_ref {
    uint32_t slot;
    uint64_t id; /* checked: the slot may have been reused */
};

/* A job's last placement that found no room to start (place.c place_job_memo, used for
 * the starving jobs, which the cycle places first each cycle): the nodes the scan found
 * with room for its shape, each with the time before which the claims there keep refusing
 * it unless the node changes (claims_refused_until; the time of the scan for a node the
 * claims let in, one of a gang too small to start, or one the exact walk answered). A node
 * without room keeps none until it changes, and every change of a node's jobs, claims or
 * capacity puts it in the change log (changes.c) after `logpos`. So a later placement
 * looks again only at the nodes changed since and those whose refusal ran out, and knows
 * the answer of a full scan: room nowhere, or held off by claims (as many nodes with room
 * as before, less or more); room to start calls for the full scan, which picks the nodes.
 * Valid under `epoch` (memo_epoch: nodes, labels, pools or a lost log entry) for the
 * shape, pool rule and length it was made for. */
struct place_memo_node {
    uint32_t node;
    int64_t until;
};

struct place_memo { /* allocated with its room: only jobs that use one pay for it */
    bool live;
    uint8_t pool_rule;
    uint32_t shape;
    uint64_t epoch, node_epoch; /* memo_epoch, node_epoch (a node's state or labels) */
    size_t logpos;
    int64_t dur;
    int nroom, cap;
    struct place_memo_node room[]; /* nroom entries of cap, at most PLACE_MEMO_MAX */
};

enum { PLACE_MEMO_MAX = 128 }; /* more nodes with room: no memo (a scan is cheap enough) */

struct job {
    uint64_t id;
    uint32_t project;
    uint32_t user; /* interned */
    uint32_t shape;
    uint8_t tier; /* requested tier index, 0 = highest */
    uint8_t klass;
    uint8_t state;
    uint8_t reason;
    uint8_t stop_cause;
    uint8_t flags;
    uint8_t victim_rank; /* the rank it is counted under in its nodes' victim_* sums */
    uint8_t watch_rank;  /* the rank whose starve_after its starvation deadline was set by */
    int16_t gpu_type;    /* -1 any; else type index >= 1 */
    int gpus, cpus, nodes;
    int64_t mem_mb;
    int64_t limit_ms; /* 0 = none */
    int64_t submit_ms, begin_ms, start_ms, kill_at_ms, ckpt_ms;
    int64_t stop_ms;     /* when it was told to stop (STOPPING): claims.c's overdue rule */
    int64_t pushed_ms;   /* when its sticky reservation was last pushed back, or 0 */
    uint64_t pushed_by;  /* by a late preemptor, an older starving job, or itself (expired) */
    int64_t eligible_ms; /* when it last became free to start (queued, released, its
                            dependencies met, its begin time reached): starvation counts
                            from here; NEVER while a dependency is unmet */
    int signal;
    int64_t grace_ms;
    int retries_left;
    int preempt_count;
    int ndeps_unmet;
    bool dep_never; /* a dependency can never be met (SCHED_R_DEPENDENCY_NEVER) */
    bool deps_any;  /* Slurm's '?': waits while none is met (ndeps_unmet 1), never runs
                       only when every one can never be met (job_deps_any_count) */
    uint64_t preemptor;
    uint64_t array_id;
    uint32_t reservation; /* index into s->res, or NONE32 */
    uint64_t key1;        /* priority key of its queue entry */
    struct job_dep *deps; /* ndeps entries, or NULL */
    int ndeps;
    struct dep_ref *dependents; /* jobs waiting on this one */
    int ndependents, dependents_cap;
    struct sched_alloc *allocs; /* nallocs while it holds resources */
    int nallocs;
    struct sched_selector *selectors; /* copy for views/explain */
    int nselectors;
    char *constraint;         /* its feature constraint, or NULL */
    struct place_memo *place; /* its last placement without room (starving jobs), or NULL */
    /* numbers behind the reason, for explain (set when the reason is computed) */
    int64_t r_value, r_in_use, r_request;
    /* Slurm's --switches (sched_job_spec): at most this many switches, 0 = the class's rule */
    int switches;
    int64_t switches_wait_ms;
    bool topo_relaxed; /* submitted switches_wait_ms ago: its class's rule from then on */
    uint32_t env;      /* its environment key, interned (0 = none): warm.c */
};

/* One entry of the rebuild's radix sort: the key of the current pass and the entry's index. */
struct sort_pair {
    uint64_t key;
    uint32_t idx;
};

/* One job of the starving list, and the proof, if any, that serving it again would change
 * nothing (cycle.c walk_starving; docs/scheduling.md "Quiet starving jobs"). Its last
 * service changed no node, no epoch and no project's usage: a fixed point. Everything a
 * service reads is then the same while
 *  - its slot's changed bit is clear: the job is the one proven, in the state it was;
 *  - memo_epoch is as it was, but for the moves of the change logs (log_resets): the
 *    policy, projects' tiers, pools, a lost shadow; node_epoch too (nodes, their states
 *    and labels) and project_changes (guarantees, limits: cycle.c quiet_epoch); and
 *    reclaim_epoch
 *    too when its project could reclaim (a new borrower, whose jobs it might take);
 *  - no node its selectors match changed or saw a shadow (sel_changes, node_changes for a
 *    job without selectors or past the 63 counted sets): free room, claims, victims and
 *    their eligibility, jobs, and the times at which a preemption could succeed; unless
 *    `how` says what it stopped at needs less (enum quiet_how);
 *  - for admission and reclaim: its project's and group's usage did not move
 *    (usage_changes); or, for an admitted job that no usage can hold back (`limited`
 *    clear: no GPU, running or user limit on its project or group, no array), whether
 *    its project may reclaim is as it was (most starving jobs of a busy partition: its
 *    usage moves with every start and end there);
 *  - the time is before `wake`: its reservation's start, and the end of a refusal by the
 *    claims that its placement memo counts on.
 * (A refresh makes the list anew and keeps the proofs of the jobs that still starve with
 * the same shape, project and rank: queue.c proofs_restore. A recomputation trusts none.)
 * The parts of the walk its service set for the others (its shape found no capacity, its
 * project or group at a limit) are set again from `marks` when it is skipped. */
struct starving_entry {
    uint32_t slot;
    uint32_t shape, project; /* the job's, so the proof is checked without reading it */
    int gpus;                /* ... its GPUs in all, */
    uint8_t rank;            /* ... and its effective tier rank */
    uint8_t marks;           /* QUIET_NOFIT... */
    uint8_t how;             /* enum quiet_how */
    bool reclaims;           /* its project could reclaim: a new borrower matters */
    bool limited;            /* admission may depend on usage (see above) */
    uint8_t sel;             /* its shape's selector set, 1..63, or 0 (cycle.c quiet_nodes) */
    uint64_t id;             /* the job proven quiet; 0: no proof */
    uint64_t epoch, repoch, nodes, usage;
    uint64_t room; /* room_changes of its shape (QUIET_CLAIMED, QUIET_NO_ROOM) */
    int64_t wake;
};

enum { QUIET_NOFIT = 1, QUIET_PROJECT = 2, QUIET_PROJECT_GPUS = 4, QUIET_GROUP_GPUS = 8 };

/* What its last service stopped at, and so what the proof needs beyond the epochs, its
 * project's usage and the time: */
enum quiet_how {
    QUIET_NODES,     /* ... no change on the nodes its selectors match */
    QUIET_ADMISSION, /* ... nothing more: admission held it back, whatever the nodes */
    QUIET_NO_ROOM,   /* ... no change there, or: it holds a sticky reservation, no victim
                        is there for it, and no node that has or had room for it changed
                        (room_changes): its reason, Resources at the reservation's start,
                        stands */
    QUIET_CLAIMED,   /* ... no change there, or: it holds a sticky reservation, no victim
                        is there for it, and no node that has or had room for it changed:
                        the claims that held it off there still do, until `wake`.
                        Either turns into the other without a service when its shape found
                        no room in this walk, or claims held off its shape in it
                        (cycle.c quiet_holds, claimed_in_walk) */
};

struct order_entry {
    uint64_t key1;     /* priority: higher sorts first */
    int64_t submit_ms; /* then older first */
    uint64_t id;       /* then lower id */
    uint32_t slot;     /* NONE32 once the job left the queue (tombstone) */
    uint32_t shape;
    uint32_t project;
    uint8_t rank;     /* effective tier rank, for the preemption memo */
    uint16_t dur_min; /* limit + grace in whole minutes (floor, saturated), for the
                         backfill memo; 65535 also means no limit */
};

struct sel_pair {
    uint32_t key, value; /* interned */
    bool negate;
    bool expr; /* value is a feature constraint (constraint.c), key a fixed marker */
};

/* A preemption search for a job of some shape and effective tier failed at `at` (docs/
 * scheduling.md "Guarantees", the preemption memo). It stays proven for a job of the same
 * shape and tier that has no reservation, runs at least `dur` and does not outrank the
 * searcher (every claim that bound the searcher binds it too), as long as:
 *  - the epoch has not moved (memo_epoch: the policy, a project, the reserved zone
 *    changed, or a log could not grow; reclaim memos also reclaim_epoch: a project or a
 *    group went over its guarantee, making its jobs reclaimable), and
 *  - no node it could use changed since: every node changed since (its jobs, claims or
 *    victims, and its state, capacity or labels: nodes.c node_moved) is in the change log
 *    after `logpos`, and a node whose room grows with time alone (a release or a claim's
 *    end, seen from a victim's grace: its shadow, changes.c) after `at` is in the shadow
 *    log. Those nodes alone are searched again (seen as the searcher: same priority and
 *    `dur`), and the memo moves to now.
 * A reclaim search fails the same for every project that may reclaim: its victims are
 * lower tiers and same-tier jobs of projects (or groups) over their guarantee, and the
 * searcher's own project and group, under theirs, have none of those. */
/* The cost of a preemption plan on one node as of `at` (preempt.c plan_cheaper): the
   highest tier it hits, its victims, the work they lose (growing by one per victim and
   millisecond), its start. */
struct plan_cost {
    int best_rank, nvictims;
    int64_t lost, start, at;
    uint32_t node;
};

/* A preemption search's answer on one node (preempt.c plan_memo): its plan's cost, or no
 * plan (nvictims < 0), made when the change log was `logpos` long. */
struct plan_memo_node {
    uint64_t gen; /* the memo's gen when made: older entries are not read */
    size_t logpos;
    int64_t lost, start;
    int64_t fail_dur; /* the longest window that failed there (preempt.c plan_window) */
    int64_t dur;      /* the length of the searcher that made it */
    int16_t best_rank, nvictims;
};

struct plan_leader {
    uint32_t node;
    struct plan_memo_node e;
};
enum { PLAN_MEMOS = 4, PLAN_LEADERS = 8 };

/* The plans one kind of search found in this cycle (preempt.c plan_memo_fits) on nodes
 * whose claims are all sticky (they bind every searcher) and none the searcher's own, if
 * any: a search for a shape by a job of effective rank `rank` reads on such a node only
 * the node, its jobs, those claims, its own length where there are claims, and the time,
 * and when it may reclaim, its project and who borrows (usage_moves); the next search of
 * that kind reads a node's entry while the node stayed out of the change log (its claims
 * with it), on a node with claims only at the same length (or, for "no plan", a longer
 * one: a longer window only fails more). */
struct plan_memo {
    uint64_t gen, cycle, epoch, used, usage;
    int64_t now, lead_dur; /* lead_dur: the length of the leaders' searcher */
    uint32_t lead_res;     /* the reservation of the search that made the leaders (NONE32) */
    uint32_t shape, project;
    int rank;
    bool reclaims;
    struct plan_memo_node *nodes;
    size_t cap;
    /* the last search of every node of this kind (a one-node shape): its cheapest plans on
       nodes it could keep, cheapest first, when the change log was leaders_logpos long;
       every other node it kept had none or a costlier one than the last of them (when
       there are PLAN_LEADERS) (preempt.c leaders_answer) */
    bool leaders_ready, lead_claimed; /* lead_claimed: a node with claims had a plan */
    int nleaders;
    size_t leaders_logpos;
    struct plan_leader leaders[PLAN_LEADERS];
};

struct preempt_memo {
    bool live;
    uint64_t epoch, repoch; /* memo_epoch; reclaim_epoch (reclaim memos) */
    int64_t at, dur;
    size_t logpos;
    uint64_t key1; /* the searcher's priority (job_outranks) */
    int64_t submit_ms;
    uint64_t id;
    int feasible;     /* gangs: nodes that had a plan (fewer than the gang needs) */
    bool reclaim;     /* a job's own memo (struct reservation): the search could reclaim */
    uint8_t rank;     /* own memo: its job's effective tier then (a boost moves it) */
    bool not_earlier; /* own memo: plans there were, the cheapest (`chosen`; node NONE32
                         for a gang) no earlier than the reservation; a changed node with a
                         plan that is not surely costlier calls for a full search */
    struct plan_cost chosen;
};

/* An instant at which a node's room may grow for a preemptor: a release or a claim's end
 * less the grace of one of its jobs (changes.c). */
struct shadow {
    int64_t at;
    uint32_t node, gen;
};

struct shape {
    int16_t gpu_type; /* -1 any */
    uint8_t pool_rule;
    int gpus, cpus, nodes;
    int64_t mem_mb;
    uint32_t selset; /* index into s->selsets; 0 = none */
    /* topology (topo.c): the label key naming a node's domain (interned; 0 = none), how
       gangs use the domains (enum sched_topo_mode), and, only on the part of a shape a
       search is run for (topo_part_next; never on an interned shape), the one domain the
       nodes must be in: topo_value, the label's value (0: nodes without the label) */
    uint32_t topo_key;
    uint8_t topo_mode;
    bool topo_pinned;
    uint32_t topo_value;
    uint32_t pending;     /* live pending jobs with this shape */
    uint64_t nofit_cycle; /* no capacity for it in this cycle */
    bool nofit_zone;      /* ... where a reserved-pool node would take it (ReservedZone) */
    struct preempt_memo preempt_fail[SCHED_MAX_TIERS]; /* a search among lower tiers */
    struct preempt_memo reclaim_fail[SCHED_MAX_TIERS]; /* one that may reclaim too */
    uint64_t static_cycle;   /* node_epoch for which static_reason holds */
    uint64_t res_fail_cycle; /* in this cycle no reservation could be made for a job of
                                this shape that would run ... */
    int64_t res_fail_dur;    /* ... this long: longer ones cannot have one either ... */
    uint64_t res_fail_grew;  /* ... while no room grew since (room_grew) */
    uint64_t claimed_cycle;  /* in this cycle, claims held off a job of this shape ... */
    int64_t claimed_dur;     /* ... that would run this long: longer ones are too ... */
    uint64_t claimed_grew;   /* ... while no room grew since (room_grew) */
    int64_t claimed_seen;    /* the shortest claimed_dur of this cycle, drops or not: what
                                the walk told the jobs it skipped (reason_derive) */
    uint8_t static_reason;   /* SCHED_R_NONE, GPU_TYPE, NODE_SELECTOR, RESERVED_ZONE */
    /* In this cycle's starving walk a service found claims holding off a job of this
       shape that would run starving_claimed_dur, with the nodes its selectors match as
       they are while their change count (cycle.c quiet_nodes) is starving_claimed_nodes,
       a refusal that stands until starving_claimed_until while they stay so */
    uint64_t starving_claimed_cycle, starving_claimed_nodes;
    int64_t starving_claimed_dur, starving_claimed_until;
};

struct selset {
    struct sel_pair *pairs;
    int n;
};

struct claim {
    uint32_t res; /* reservation index */
    int64_t start, end;
    int gpus, cpus;
    int64_t mem_mb;
};

/* A claim as kept for the comparison of claims_settle(): by its job, not by the index of a
 * reservation that may be dropped and made again. */
struct claim_snap {
    uint64_t job_id;
    int64_t start, end, made_ms;
    int gpus, cpus;
    int64_t mem_mb;
    uint32_t res;
    bool preempting, starving;
};

/* A running job's hold on one node, with when it is expected to let go. */
struct release {
    int64_t at;
    int gpus, cpus;
    int64_t mem;
};

/* One step of a node's availability profile (avail.c): free from `at` on. */
struct profile_step {
    int64_t at;
    int gpus, cpus;
    int64_t mem;
};

struct node {
    char name[SCHED_NAME_MAX];
    int16_t gpu_type; /* 0 = none */
    int gpus, cpus;
    int64_t mem_mb, gpu_mem_mb;
    int gpus_used, cpus_used;
    int64_t mem_used;
    uint64_t gpu_used_mask;
    /* GPU indices at or beyond `gpus` that jobs still hold: the node shrank under them
       (sched_node_upsert keeps its jobs); never given again, cleared as they end */
    uint64_t gpu_beyond_mask;
    uint8_t state;
    bool reserved;
    bool in_bucket;
    uint8_t bucket_pool;
    int16_t bucket_free;
    uint32_t prev, next; /* bucket list links */
    struct sched_label *labels;
    struct sel_pair *label_ids; /* interned copies, negate unused */
    int nlabels;
    struct u32vec jobs; /* slots of jobs holding resources here */
    struct claim *claims;
    int nclaims, claims_cap;
    /* releases of its jobs in time order, rebuilt lazily when a job starts, ends or is
       stopped here (reservations read it for every candidate node) */
    struct release *rel;
    int nrel, rel_cap;
    bool rel_dirty;
    /* what its preemptible running jobs hold, by their tier rank: an upper bound that lets
       a preemption search pass over a node that could never make room */
    int victim_gpus[SCHED_MAX_TIERS], victim_cpus[SCHED_MAX_TIERS];
    /* ... and how many allocations of them sit here, by rank (the victim gate's counts) */
    int victim_allocs[SCHED_MAX_TIERS];
    /* free capacity over time (releases and claims), rebuilt lazily after a change */
    struct profile_step *prof;
    int nprof, prof_cap;
    bool prof_dirty;
    /* what its STOPPING jobs hold: room that comes free without a new victim */
    int stopping_gpus, stopping_cpus;
    /* selector sets 1..63 already checked against its labels, and which of them match */
    uint64_t sel_known, sel_match;
    /* changes.c: 1 + its last index in the change log (0: not since the last reset), its
       shadow schedule's generation and whether it must be rebuilt, a visit mark */
    size_t logged_at;
    int room_logged; /* its free GPUs when its last change was counted (room_changes) */
    uint32_t shadow_gen, visit;
    bool shadow_dirty;
    /* claims.c: its claims as they were before the first change since the last starving
       walk (claims_pending), to count the change at the next one only if they differ */
    struct claim_snap *snap;
    int nsnap, snap_cap;
    bool claims_pending;
    /* warm.c: the environment keys ready here (interned, ascending, distinct) */
    uint32_t *warm;
    int nwarm;
};

struct project {
    struct sched_project_spec spec;
    uint8_t tier; /* index */
    int boost;
    int64_t boost_until;
    int gpus_in_use, running, queued;
    double rate;  /* billing units per second of its running jobs */
    double usage; /* decayed billing-unit-seconds */
    int64_t usage_at;
    double share;               /* frozen at the last refresh, used by the order */
    uint64_t blocked_cycle;     /* every job of it is held back in this cycle */
    uint64_t gpu_blocked_cycle; /* its jobs that ask for GPUs are (at its gpu_limit) */
    uint64_t usage_changes;     /* its jobs started or released resources (struct starving_entry) */
    uint32_t group;             /* index into s->groups, NONE32 when it names none */
    char storage_hold[160];     /* over a storage quota: why ("" = not held) */
    int eligible_by_rank[SCHED_MAX_TIERS]; /* its eligible victims, by victim_rank */
};

/* A group as the model keeps it: counters over its projects, bounds looked up in the
 * policy by name (spec: index into policy.groups, or -1). */
struct group {
    char name[SCHED_NAME_MAX];
    int spec;
    int gpus_in_use, running, nprojects;
    double share;               /* frozen at the last refresh, like the projects' */
    uint64_t gpu_blocked_cycle; /* at its gpu_limit in this cycle: its GPU jobs wait */
    uint64_t usage_changes;     /* its counters moved (struct starving_entry) */
};

struct user_count {
    int running, gpus;
    int queued; /* pending and held (sched_queue_room sums them over projects) */
};

struct reservation {
    uint32_t slot;
    uint64_t job_id;
    int64_t start, end;
    int64_t made_ms; /* when it was made: which stops it knew of (claims.c) */
    bool preempting; /* victims signalled: sticky, nobody else may take it */
    bool starving;   /* starvation guard: sticky too */
    uint32_t *nodes;
    int nnodes;
    uint64_t *victims;
    int nvictims;
    bool live;
    /* its job may use its nodes (cycle.c reservation_usable), proven under these epochs
       for this shape of its job: a node's state, capacity or labels (node_epoch), pools
       or the policy (memo_epoch), a boost that moved its pool rule (the job's shape).
       Zero: not proven. sched_check() asks again where it is set. */
    uint64_t usable_node_epoch, usable_epoch;
    uint32_t usable_shape;
    /* its job's last failed preemption search: the job holds more room than others on
       these nodes, so the shapes' memos do not cover it; this one does (memo.c) */
    struct preempt_memo own;
};

/* An ordinary reservation that reservation_drop_lower took from a lower gang in this walk,
 * remembered until the walk reaches that job (claims.c reservation_hint_take): its room,
 * when it still fits, is given back without a search (reserve.c). Lives only within one
 * walk: sched_cycle clears what is left, and sched_check() finds none between cycles. */
struct res_hint {
    uint64_t job_id;
    uint32_t slot;
    int64_t start;
    uint32_t *nodes;
    int nnodes;
};

enum deadline_kind {
    DL_LIMIT,
    DL_KILL,
    DL_BEGIN,
    DL_ELIGIBLE,
    DL_PROTECT,
    DL_BOOST,
    DL_STARVE,
    DL_TOPO, /* a job's wait for its switches is over (job.topo_relaxed) */
};

struct deadline {
    int64_t at;
    uint64_t id; /* job id or project index */
    uint8_t kind;
};

/* An array's counters (arrays.c): its %limit and running tasks for admission, and what a
 * dependency on the whole array reads. tasks >= ended + jobs always. */
struct array_count {
    int limit, running, jobs; /* jobs: its live tasks */
    uint64_t changes;         /* starts and ends of its tasks, in every project (quiet proofs) */
    int tasks;                /* in all: declared (sched_array_declare), else the tasks submitted */
    int ended, failed;        /* tasks ended, and of those not COMPLETED */
    int started;              /* live tasks that have started (JF_STARTED) */
    bool declared;
    struct dep_ref *waiters; /* jobs that depend on the whole array (checked by id) */
    int nwaiters, waiters_cap;
};

/* The domains of one topology level (topo.c): the label key, and its values in the order
 * their first nodes come, as listed at node_epoch (UINT64_MAX: to be listed). */
struct topo_level {
    uint32_t key;
    uint64_t node_epoch;
    uint32_t *values;
    size_t n, cap;
};

struct sched {
    struct sched_policy policy;
    int reserved_min_rank;

    /* interned strings: users, label keys and values, GPU type names */
    struct strtab strings;
    char gpu_types[NTYPES][SCHED_NAME_MAX];
    int ntypes; /* includes type 0 (none) */

    struct project *projects;
    size_t nprojects, projects_cap;
    struct group *groups; /* never shrinks: projects hold indices */
    size_t ngroups, groups_cap;
    struct u64map user_counts; /* (project << 32 | user) -> index into ucounts */
    struct user_count *ucounts;
    size_t nucounts, ucounts_cap;

    struct node *nodes;
    size_t nnodes, nodes_cap;
    uint64_t node_epoch; /* bumped when nodes, their states or labels change */
    /* node profiles: nodes alike in type, capacity, labels and pool, with their counts,
       so "could it ever fit?" at submit looks at a handful of profiles, not every node */
    uint32_t *profile_node;
    int *profile_count;
    size_t nprofiles, profiles_cap;
    bool profiles_dirty;
    bool zone_dirty;          /* the reserved zone must be recomputed before it is used */
    struct u64map node_index; /* interned name id -> node index */
    /* warm.c: per interned environment key, the nodes where it is warm (env_warm_cap ids) */
    uint32_t *env_warm;
    size_t env_warm_cap;
    uint32_t buckets[NTYPES][NPOOLS][NBUCKETS];

    struct job *jobs; /* slab */
    size_t jobs_cap;
    struct u32vec free_slots;
    struct u64map job_index; /* id -> slot */
    size_t njobs;
    size_t by_state[SCHED_JOB_STATE_COUNT];

    struct shape *shapes;
    size_t nshapes, shapes_cap;
    struct u64map shape_index; /* hash -> first shape index (chained by probing) */
    struct selset *selsets;
    size_t nselsets, selsets_cap;
    struct topo_level *topo_levels; /* topo.c: the levels gangs were placed by */
    size_t ntopo_levels, topo_levels_cap;
    uint32_t *topo_scratch; /* place.c: the nodes a gang could take now, of nnodes */
    size_t topo_scratch_cap;

    struct order_entry *order;
    size_t norder, order_cap, order_stale;
    struct order_entry *order_new;
    size_t nnew, new_cap;
    /* the queue's radix sort (queue.c): pairs for twice the entries sorted, and the array
       the entries are gathered into */
    struct sort_pair *sort_pairs;
    struct order_entry *sort_spare;
    size_t sort_pairs_cap, sort_spare_cap;
    bool order_dirty; /* keys must be recomputed and the queue re-sorted */
    bool rewatch;     /* starve_after changed: every pending job's deadline is set again */
    int64_t last_refresh;

    struct reservation *res;
    size_t nres, res_cap;
    int res_active; /* live non-sticky reservations */
    /* which of res[] are live, and which of those are ordinary (neither preempting nor
       starving), one bit each (claims.c): the walks over the few ordinary ones, and the
       search for a free entry, no longer read thousands of sticky ones */
    uint64_t *res_live_bits, *res_ordinary_bits;
    size_t res_words;
    int64_t res_refreshed;
    struct res_hint *hints; /* this walk's dropped lower reservations (claims.c) */
    size_t nhints, hints_cap;
    uint64_t res_restored; /* reservations given back from a hint, ever (stats) */

    struct deadline *heap;
    size_t nheap, heap_cap;
    int64_t fired_to; /* the deadlines due by then have fired (the last cycle's time) */

    struct u64map arrays; /* array id -> index into array_counts */
    struct array_count *array_counts;
    size_t narrays, arrays_cap;

    int eligible_victims;                  /* running jobs that are preemptible by someone now */
    int eligible_by_rank[SCHED_MAX_TIERS]; /* ... by their rank (victim_rank) */
    /* Which ranks have an eligible victim in a project (or group) over its guarantee, that a
       reclaim could take: a cache, valid while victim_changes, memo_epoch and reclaim_epoch
       are what reclaim_key says (a borrower appears only when one of them moves). */
    uint64_t victim_changes;
    /* events so far that may let room grow within a walk (the claimed memo, the
       reservation-failure memo): a reservation dropped (claims shrank), a release moved
       earlier (a victim stopped, a lowered limit) */
    uint64_t room_grew;
    uint64_t reclaim_key[5];
    bool reclaim_key_valid;
    bool reclaimable_at[SCHED_MAX_TIERS];
    /* ... and, by rank, the selector sets (bits 1..63) of the nodes such victims are on;
       valid with reclaimable_at, whose key also holds node_epoch and nselsets, once
       reclaimable_sel_valid: made only when a job with selectors asks (a walk over every
       node's jobs, which a key moved by each preemption made for every job that asked) */
    uint64_t reclaimable_sel[SCHED_MAX_TIERS];
    bool reclaimable_sel_valid, reclaimable_any;
    /* The victim gate (docs/scheduling.md "The victim gate"): for each selector set 1..63,
       the allocations of eligible victims on the nodes it matches, by victim_rank (the sum
       of victim_allocs over those nodes, whatever their state) */
    int sel_victims[NSELBITS][SCHED_MAX_TIERS];
    uint64_t memo_epoch;      /* struct preempt_memo */
    uint64_t log_resets;      /* ... of them, moves for the logs alone (changes.c) */
    uint64_t reclaim_epoch;   /* ditto, for reclaim memos only */
    uint64_t usage_moves;     /* a project's GPUs in use moved (struct plan_memo) */
    uint64_t project_changes; /* a project's spec moved (cycle.c quiet_epoch) */
    /* changes.c: nodes changed, in order (chlog_mark: its length when the last memo was
       made); shadows due, in time order; those not yet due; nodes to reschedule */
    uint32_t *chlog;
    size_t nchlog, chlog_cap, chlog_mark;
    struct shadow *shlog, *shheap;
    size_t nshlog, shlog_cap, nshheap, shheap_cap;
    int64_t shadow_done;
    uint32_t *shdirty, *chscratch;
    size_t nshdirty, shdirty_cap, chscratch_cap;
    uint32_t visit;
    bool verify_memos; /* sched_verify_memos() */
    /* its ledger (caches.c): per cache, the hits checked and the first job found wrong */
    uint64_t cache_checked[SCHED_CACHE_COUNT], cache_wrong[SCHED_CACHE_COUNT];
    uint64_t quiet_witness[SCHED_QI_COUNT]; /* struct sched_cache_checks */
    uint64_t res_pruned; /* nodes the reservation searches pruned (reserve.c), ever */
    uint64_t plans_led;  /* preemption searches answered by their plan memo's leaders, ever */
    /* the last reservation search (reserve.c reservation_make): for job res_horizon_job, its
       answer holds with time alone until res_horizon (a node's room before a claim closes
       then, and its earliest start jumps past the claim) */
    uint64_t res_horizon_job;
    int64_t res_horizon;
    /* scratch space of preempt_for (its node plans) and reservation_make (its candidates),
       grown as needed, freed with the scheduler: no allocation per search */
    void *plan_scratch, *cand_scratch;
    size_t plan_scratch_cap, cand_scratch_cap;
    struct plan_memo plan_memos[PLAN_MEMOS]; /* preempt.c: plans kept within a cycle */
    uint64_t plan_memo_tick;
    bool recomputing;                /* this cycle is a SCHED_CYCLE_RECOMPUTE: it trusts no memo */
    struct starving_entry *starving; /* starving pending jobs, oldest first */
    /* scratch of order_rebuild (queue.c proofs_restore): a slot's index in the list as it
       was, trusted only where that entry names the slot */
    uint32_t *starving_pos;
    size_t starving_pos_cap;
    size_t nstarving, starving_cap;
    /* Changes counted on the nodes (struct starving_entry): every node_changed() and every
       shadow logged counts once in node_changes and once for each selector set 1..63 the
       node matches */
    uint64_t node_changes;
    uint64_t sel_changes[NSELBITS];
    /* ... and by the room a node had for a shape before or after its change: each change of
       a node of type t with f free GPUs then, or before it (node.room_logged), counts in
       room_changes[t][0..f] and room_changes[NTYPES][0..f] (any type). A shape of g GPUs
       per node is unmoved on a row at level g: no node that has or had room for it changed
       (cycle.c quiet_room); a node that matches selector set k (1..63) counts in
       sel_room_changes[k][0..f] too, so a shape with selectors reads only the nodes it may
       use (in a partitioned cluster a start in one partition moved every other's room) */
    uint64_t room_changes[NTYPES + 1][NBUCKETS];
    uint64_t sel_room_changes[NSELBITS][NBUCKETS];
    bool quiet_walk;        /* in the starving walk: claim changes count at once */
    uint32_t *claims_moved; /* nodes whose claims changed outside it (claims_pending) */
    size_t nclaims_moved, claims_moved_cap;
    /* One bit per job slot: set exactly when the slot's job holds a reservation or
       starves (walk_look_sync). The queue walk skips a deep queue from its entries
       alone; a marked slot is one whose job it must read (sched_check walks the bits). */
    uint64_t *look_bits;
    size_t look_words;
    /* Bits per slot like the look bits, kept apart from struct job so that the starving
       walk passes a quiet job by without reading it (a cache miss per starving job and
       cycle was what serving them cost, bench/RESULTS.md):
        - walked: the job's reason was computed in this cycle (cleared at each cycle's
          start; explain trusts it then), or stands for a quiet starving job;
        - changed: the slot's job changed since its starving entry was proven quiet (its
          state, its starving flag or reservation, the slot taken by another job);
        - listed: the slot has an entry in the starving list (one at most). */
    uint64_t *walked_bits, *changed_bits, *listed_bits;
    /* The project of each slot's job, sized like the bits (model.c walk_look_grow): a boost
       finds its project's jobs here without reading every job (order.c). Set when a job
       takes the slot; a free slot keeps its last job's, so a reader checks the job. */
    uint32_t *slot_project;

    /* decisions queued for the next sched_cycle return */
    struct sched_decision *dec;
    size_t ndec, dec_cap;
    struct sched_alloc *dec_allocs;
    size_t ndec_allocs, dec_allocs_cap;
    bool dec_returned;

    uint64_t cycle; /* cycle counter, starts at 1 */
    int64_t now;    /* time of the current call */
    int preempt_budget;
    bool preempt_backlog; /* the last cycle preempted and ran out of budget: go on soon */
    bool start_backlog;   /* the last cycle stopped at max_starts_per_cycle: go on now */
};

/* ---- The shared inline helpers: the walks read the model through these for every entry
   they pass, so they are inline and live with the data. */

/* The claimed memo of a shape (cycle.c shape_claimed_note): is a job of it that would run
 * `dur` held off by claims everywhere in this walk? */
static inline bool shape_claimed(const struct sched *s, const struct shape *sh, int64_t dur)
{
    return sh->claimed_cycle == s->cycle && sh->claimed_grew == s->room_grew &&
           dur >= sh->claimed_dur;
}

/* The look bits (struct sched, model.c walk_look_sync): must the queue walk read the
   slot's job? */
static inline bool walk_look(const struct sched *s, uint32_t slot)
{
    return slot / 64 < s->look_words && (s->look_bits[slot / 64] >> (slot % 64) & 1);
}

static inline bool slot_bit(const uint64_t *bits, uint32_t slot)
{
    return bits[slot / 64] >> (slot % 64) & 1;
}

static inline void slot_bit_set(uint64_t *bits, uint32_t slot, bool on)
{
    uint64_t bit = 1ULL << (slot % 64);
    bits[slot / 64] = on ? bits[slot / 64] | bit : bits[slot / 64] & ~bit;
}

/* Was the job's reason computed in this cycle (by the walk, or standing for a quiet one)? */
static inline bool job_walked(const struct sched *s, uint32_t slot)
{
    return slot_bit(s->walked_bits, slot);
}

/* walked (true) or derived until the next walk looks at it (false) */
static inline void job_walked_set(struct sched *s, uint32_t slot, bool walked)
{
    slot_bit_set(s->walked_bits, slot, walked);
}

/* The slot's job changed: a proof its starving entry holds is for what it was. */
static inline void slot_changed(struct sched *s, uint32_t slot)
{
    slot_bit_set(s->changed_bits, slot, true);
}

/* The project's group (group.c), or NULL when it names none. */
/* Immunity (max_preemptions reached, past its class's protection) is only for a job with a
 * time limit: it protects work that will end. One without a limit would hold its room
 * forever and break the starvation bound (docs/scheduling.md §5). */
static inline bool job_may_be_immune(const struct job *v)
{
    return v->limit_ms > 0;
}

/* v has been preempted as often as the policy allows and keeps running to its end. */
static inline bool job_immune_by_count(const struct sched *s, const struct job *v)
{
    return v->preempt_count >= s->policy.max_preemptions && job_may_be_immune(v);
}

static inline struct group *project_group(const struct sched *s, const struct project *p)
{
    return p->group == NONE32 ? NULL : &s->groups[p->group];
}

static inline double group_guarantee(const struct sched *s, const struct group *g) /* -1: none */
{
    return g->spec < 0 ? -1 : s->policy.groups[g->spec].guarantee_gpus;
}

/* Within its own guarantee and its group's, once it holds `gpus` more (a project's
 * guarantee counts within its group's): it may reclaim from borrowers of its tier. */
static inline bool project_can_reclaim(const struct sched *s, uint32_t project, int gpus)
{
    const struct project *p = &s->projects[project];
    if (p->gpus_in_use + gpus > p->spec.guarantee_gpus + 1e-9)
        return false;
    const struct group *g = project_group(s, p);
    double gu = g ? group_guarantee(s, g) : -1;
    return gu < 0 || g->gpus_in_use + gpus <= gu + 1e-9;
}

/* Is it still proven by r's memo (struct reservation) that every node of r is up and,
 * statically, one that r's job j may use (nodes.c reservation_nodes_usable)? */
static inline bool reservation_usable_proven(const struct sched *s, const struct reservation *r,
                                             const struct job *j)
{
    return r->usable_node_epoch == s->node_epoch && r->usable_epoch == s->memo_epoch &&
           r->usable_shape == j->shape;
}

/* Its free GPUs, never below 0 (what node.room_logged keeps) */
static inline int node_free_gpus(const struct node *n)
{
    return n->gpus > n->gpus_used ? n->gpus - n->gpus_used : 0;
}

#endif
