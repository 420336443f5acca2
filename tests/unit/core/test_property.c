/*
 * test_property.c - randomised property test of the core under contention.
 *
 * Each seed builds a random cluster (GPU types, CPU-only nodes, a reserved pool), random
 * projects (tiers, guarantees, limits, groups) and a random policy (min_runtime, max_preemptions,
 * backfill depth, short starvation bounds), then drives the real core through a random
 * workload on a virtual clock: submissions of every class and size (gangs, typed, CPU-only),
 * dependencies, holds, begin times, cancels, requeues, checkpoints, boosts, node failures and
 * drains, while a simulated agent confirms starts, ends jobs early or at their limit, and
 * obeys signals and kills after a random part of the grace. After every event and every
 * cycle it asserts sched_check() and the guarantees of docs/scheduling.md that can be seen
 * from outside:
 *   P1 every pending job has a reason;
 *   P2 the freed room of a preemption goes to its preemptor: in the first cycle after its
 *      last victim left, the preemptor starts (unless it left the queue, a node failed, or an
 *      admission limit now holds it, in which case it no longer holds the room);
 *   P3 no node stays idle while a pending job that fits it waits with reason Resources;
 *   P4 a starving job's sticky reservation is a promise kept: it starts by the start that
 *      reservation first gave it (plus the agent's latency), unless it left the queue, an
 *      admission limit holds it, a node event or boost changed what it may use, its own
 *      window passed unused and was made again, or a preemptor or an older starving job
 *      ahead of it on its nodes pushed it back (explain says so for the last three). (In a
 *      third of the seeds jobs run to their limit, so promises are tight; making starving
 *      reservations non-sticky by hand fails it at seed 277.)
 * Every seed whose number leaves 6 divided by 7 also gives jobs environments and nodes warm
 * sets (sched_node_set_warm: placement takes warm nodes first among equal fits), drawn on
 * a stream of their own so that the other seeds' workloads stay what they were.
 * The second test drives a twin instance with the same events, whose every cycle is a
 * forced recomputation (SCHED_CYCLE_RECOMPUTE: the queue, the starving list, the release
 * lists and availability profiles made anew, no memo trusted); both must take the same
 * decisions, decision by decision (incremental == full), besides all of the above.
 *
 *   DOCKET_PROP_SEEDS=N   number of seeds (default 25; long runs by hand: 10000)
 *   DOCKET_PROP_FIRST=F   start at seed F (default 1)
 *   DOCKET_PROP_SEED=S    run only seed S (to replay a failure)
 *   DOCKET_PROP_TRACE=1   print every event and decision
 * A failure prints its seed, the step and the virtual time.
 */
#include "helpers.h"

#include <stdlib.h>

enum { MAX_JOBS = 4096, STEPS = 320 };

static uint64_t rng;
static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static int pick(int n)
{
    return (int)(rnd() % (uint64_t)n);
}
static bool chance(int percent)
{
    return pick(100) < percent;
}

/* What the simulated agent knows of a job it runs. */
struct run {
    bool live; /* holds resources as far as the agent knows */
    bool confirmed;
    int64_t confirm_at; /* launch confirmed then */
    int64_t exit_at;    /* ends on its own then (INT64_MAX: never) */
    int exit_code;
    int exit_signal; /* ends by this signal (after SIGNAL / KILL) */
};

enum twin_mode {
    TWIN_NONE,
    TWIN_FULL, /* the twin recomputes everything in every cycle */
};

struct world {
    struct sched *s, *twin; /* twin: same events, see enum twin_mode */
    enum twin_mode mode;
    uint64_t seed;
    int step;
    int64_t now;
    uint64_t next_id;
    struct run runs[MAX_JOBS];
    uint64_t node_events;
    int nnodes, nprojects;
    char node_names[16][SCHED_NAME_MAX];
    char project_names[8][SCHED_NAME_MAX];
    int project_tier[8];
    int64_t max_limit, max_grace;
    int64_t starve_after[SCHED_MAX_TIERS];
    int64_t eligible_since[MAX_JOBS]; /* -1 while not waiting */
    /* P4: the first start promised by a starving job's sticky reservation, and the node
       events and boosts seen then (either may move it); -1 while none */
    int64_t starve_promise[MAX_JOBS];
    uint64_t promise_events[MAX_JOBS];
    int64_t promise_pushed[MAX_JOBS]; /* explain's pushed_back_ms when the promise was taken */
    uint64_t boosts;
    int64_t boost_ends[512]; /* a boost's end changes tiers and pools too */
    int nboost_ends;
    bool to_limit; /* jobs run to their time limit: reservations' promises are tight */
    /* few shapes (every third seed, drawn from no random number, so that the other seeds
       stay as they were): jobs ask one CPU and no memory, so many share a shape, as in a
       busy partition, where the starving walk learns from one job of a shape what holds
       the next (cycle.c claimed_in_walk) */
    bool few_shapes;
    int ntypes;
    /* partitioned: nodes carry a label vc=a or vc=b (node_vc) that jobs may select, and
       that an operator may change (the victim gate counts victims by selector set) */
    bool partitioned;
    int node_vc[16];
    bool node_reserved[16];
    int8_t job_vc[MAX_JOBS]; /* a job's selector: 0 none, 1 vc=a, 2 vc=b, negated: -1, -2 */
    /* topology (every fourth seed, from no random number): nodes under switch sw0 or sw1
       (by index), training gangs placed by switch, required or best effort; job_one_switch
       marks the gangs that must start under one switch (checked at each start) */
    bool topo;
    bool job_one_switch[MAX_JOBS];
    int64_t one_switch_until[MAX_JOBS]; /* ... until then (the switches' wait) */
    uint64_t idle_rng;                  /* idle_cycle */
    int64_t jumped_to;       /* the clock's last jump landed then: limits and kills that fell in
                                the jump are sent from then on, so a promise may come that late */
    bool unlimited_training; /* training jobs may run without a time limit */
    bool capped; /* the last cycle stopped at max_starts_per_cycle: the rest of its walk,
                    reasons included, is the next cycle's, which follows at once */
    /* warm environments (seeds = 6 mod 7): jobs name one of ENVS, nodes hold some warm,
       both drawn from warm_rng alone */
    bool warm;
    uint64_t warm_rng;
};

static const char *const ENVS[] = {"t@1", "t@2", "u@1"};
enum { NENVS = 3 };

/* The warm seeds' own stream. */
static int warm_pick(struct world *w, int n)
{
    w->warm_rng = w->warm_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((w->warm_rng >> 33) % (uint64_t)n);
}

#define WFAIL(w, ...)                                                                              \
    do {                                                                                           \
        fprintf(stderr, "seed %llu mode %d step %d t=+%llds: ", (unsigned long long)(w)->seed,     \
                (int)(w)->mode, (w)->step, (long long)(((w)->now - T0) / 1000));                   \
        fail_msg(__VA_ARGS__);                                                                     \
    } while (0)

static void check_both(struct world *w, const char *after)
{
    struct sched_error err;
    if (sched_check(w->s, &err))
        WFAIL(w, "sched_check after %s: %s", after, err.message);
    if (w->twin && sched_check(w->twin, &err))
        WFAIL(w, "sched_check (full twin) after %s: %s", after, err.message);
}

/* Apply an event to both instances; they must agree on its result. */
#define BOTH(w, call)                                                                              \
    ({                                                                                             \
        struct sched *s_ = (w)->s;                                                                 \
        int rc1_ = (call);                                                                         \
        if ((w)->twin) {                                                                           \
            s_ = (w)->twin;                                                                        \
            int rc2_ = (call);                                                                     \
            if (rc1_ != rc2_)                                                                      \
                WFAIL((w), "twin disagrees on %s: %d vs %d", #call, rc1_, rc2_);                   \
        }                                                                                          \
        rc1_;                                                                                      \
    })

/* The switch of node i in a topology seed: sw0 for even indices, sw1 for odd. */
static void node_switch_label(struct sched_label *l, int i)
{
    snprintf(l->key, SCHED_NAME_MAX, "switch");
    snprintf(l->value, SCHED_NAME_MAX, "sw%d", i % 2);
}

static void setup(struct world *w, enum twin_mode twin)
{
    struct sched_policy p;
    sched_policy_defaults(&p);
    int64_t mins[] = {0, 2 * MIN, 10 * MIN};
    p.min_runtime_ms = mins[pick(3)];
    p.max_preemptions = 1 + pick(3);
    p.backfill_depth = 1 + pick(16);
    p.preempt_max_per_cycle = chance(30) ? 1 + pick(3) : 256;
    p.preemption = !chance(10);
    bool baseline = chance(20); /* the baselines docket-sim compares against */
    if (baseline)
        p.ordering = chance(50) ? SCHED_ORDER_MULTIFACTOR : SCHED_ORDER_FIFO;
    p.default_grace_ms = (1 + pick(60)) * SEC;
    p.cancel_grace_ms = (1 + pick(20)) * SEC;
    for (int t = 0; t < p.ntiers; t++)
        p.tiers[t].starve_after_ms = chance(20) ? 0 : (20 + pick(240)) * MIN;
    if (chance(30))
        p.classes[0].protect_after_ms = (30 + pick(120)) * MIN;
    /* training without a default limit: jobs that ask none are never immune (§5) */
    w->unlimited_training = chance(30);
    if (w->unlimited_training)
        p.classes[0].default_limit_ms = 0;
    if (baseline) { /* as docket-sim runs them: no preemption, no guard, no reserved zone */
        p.preemption = false;
        for (int t = 0; t < p.ntiers; t++)
            p.tiers[t].starve_after_ms = 0;
        p.reserved_label_key[0] = '\0';
        p.reserved_label_value[0] = '\0';
    }
    if (w->topo) {
        p.classes[0].topo_mode = w->seed % 8 == 1 ? SCHED_TOPO_REQUIRED : SCHED_TOPO_BEST_EFFORT;
        snprintf(p.classes[0].topo_level, SCHED_NAME_MAX, "switch");
    }
    /* groups: bounds on some, and projects in a group the policy does not list */
    p.ngroups = chance(50) ? 1 + pick(2) : 0;
    for (int g = 0; g < p.ngroups; g++) {
        snprintf(p.groups[g].name, sizeof(p.groups[g].name), "g%d", g);
        p.groups[g].guarantee_gpus = chance(50) ? pick(3) * 4 : -1;
        p.groups[g].gpu_limit = chance(40) ? 4 + pick(16) : -1;
    }
    w->mode = twin;
    w->s = mk_sched_with(&p);
    sched_verify_memos(w->s, true); /* every cache hit is computed again (caches.c) */
    w->twin = twin != TWIN_NONE ? mk_sched_with(&p) : NULL;
    w->max_grace = p.default_grace_ms > 10 * MIN ? 10 * MIN : p.default_grace_ms;
    if (p.cancel_grace_ms > w->max_grace)
        w->max_grace = p.cancel_grace_ms;
    for (int t = 0; t < p.ntiers; t++)
        w->starve_after[t] = p.tiers[t].starve_after_ms;
    w->to_limit = chance(30);
    w->ntypes = 1 + pick(2);
    w->nnodes = 3 + pick(8);
    w->partitioned = chance(50);
    for (int i = 0; i < w->nnodes; i++) {
        struct sched_node_spec n;
        memset(&n, 0, sizeof(n));
        snprintf(n.name, sizeof(n.name), "n%02d", i);
        snprintf(w->node_names[i], SCHED_NAME_MAX, "%s", n.name);
        bool cpu_only = i > 0 && chance(15);
        n.gpus = cpu_only ? 0 : (chance(50) ? 8 : 4);
        snprintf(n.gpu_type, sizeof(n.gpu_type), "%s", cpu_only ? "" : pick(w->ntypes) ? "B" : "A");
        n.cpus = 32;
        n.mem_mb = 256 * 1024;
        n.state = SCHED_NODE_UP;
        if (i == 1 && chance(50)) {
            snprintf(n.labels[0].key, SCHED_NAME_MAX, "pool");
            snprintf(n.labels[0].value, SCHED_NAME_MAX, "reserved");
            n.nlabels = 1;
            w->node_reserved[i] = true;
        }
        if (w->topo)
            node_switch_label(&n.labels[n.nlabels++], i);
        if (w->partitioned) {
            w->node_vc[i] = pick(2);
            snprintf(n.labels[n.nlabels].key, SCHED_NAME_MAX, "vc");
            snprintf(n.labels[n.nlabels].value, SCHED_NAME_MAX, "%s", w->node_vc[i] ? "b" : "a");
            n.nlabels++;
        }
        struct sched_error err;
        if (BOTH(w, sched_node_upsert(s_, &n, T0, &err)))
            WFAIL(w, "node: %s", err.message);
    }
    const char *tiers[] = {"critical", "high", "normal", "low"};
    w->nprojects = 3 + pick(4);
    for (int i = 0; i < w->nprojects; i++) {
        struct sched_project_spec ps = project_spec("");
        snprintf(ps.name, sizeof(ps.name), "p%d", i);
        snprintf(w->project_names[i], SCHED_NAME_MAX, "%s", ps.name);
        w->project_tier[i] = pick(4);
        snprintf(ps.tier, sizeof(ps.tier), "%s", tiers[w->project_tier[i]]);
        ps.guarantee_gpus = pick(3) * 4;
        ps.gpu_limit = chance(30) ? 4 + pick(12) : -1;
        ps.max_running = chance(15) ? 1 + pick(4) : -1;
        if (p.ngroups && chance(70))
            snprintf(ps.group, sizeof(ps.group), "g%d", pick(p.ngroups + 1));
        struct sched_error err;
        if (BOTH(w, sched_project_upsert(s_, &ps, &err)))
            WFAIL(w, "project: %s", err.message);
    }
    w->now = T0;
    w->next_id = 1;
    for (int i = 0; i < MAX_JOBS; i++)
        w->eligible_since[i] = -1;
    for (int i = 0; i < MAX_JOBS; i++)
        w->starve_promise[i] = -1;
}

static bool tracing(void)
{
    static int t = -1;
    if (t < 0)
        t = getenv("DOCKET_PROP_TRACE") != NULL;
    return t;
}

static bool job_view(struct sched *s, uint64_t id, struct sched_job_view *v)
{
    return sched_job_get(s, id, v) == 0;
}

static bool holding(enum sched_job_state st)
{
    return st == SCHED_STARTING || st == SCHED_RUNNING || st == SCHED_STOPPING;
}

static uint64_t random_live_job(struct world *w, enum sched_job_state want)
{
    for (int tries = 0; tries < 8 && w->next_id > 1; tries++) {
        uint64_t id = 1 + (uint64_t)pick((int)(w->next_id - 1));
        struct sched_job_view v;
        if (job_view(w->s, id, &v) && (want == SCHED_JOB_STATE_COUNT || v.state == want))
            return id;
    }
    return 0;
}

/* As the controller does for an array stored whole or reloaded: the core is told its tasks
 * in all and those that ended before; and a task of such an array that never reaches the
 * core (refused) ends outside it. Dependencies on the whole array wait for all of them. */
static void array_declare_or_gone(struct world *w, uint64_t array_id)
{
    struct sched_error err;
    if (!sched_array_known(w->s, array_id) && chance(30)) {
        int tasks = 2 + pick(4), ended = pick(2), failed = ended ? pick(2) : 0;
        if (BOTH(w, sched_array_declare(s_, array_id, tasks, ended, failed, &err)))
            WFAIL(w, "declare array %llu: %s", (unsigned long long)array_id, err.message);
    } else if (sched_array_known(w->s, array_id) && chance(10)) {
        bool ok = chance(50);
        sched_array_task_gone(w->s, array_id, ok, w->now);
        if (w->twin)
            sched_array_task_gone(w->twin, array_id, ok, w->now);
    }
}

static void submit_random(struct world *w)
{
    if (w->next_id >= MAX_JOBS)
        return;
    const char *tiers[] = {"critical", "high", "normal", "low"};
    const char *classes[] = {"training", "experiment", "exploration", "interactive", "service"};
    int p = pick(w->nprojects);
    struct sched_job_spec j;
    int gpus_opts[] = {0, 1, 2, 4, 8};
    int64_t limits[] = {10 * MIN, 30 * MIN, HOUR, 3 * HOUR};
    int cls = chance(3) ? 4 : pick(4);
    spec_fill(&j, w->next_id, w->project_names[p],
              tiers[w->project_tier[p] + pick(4 - w->project_tier[p])], classes[cls],
              gpus_opts[pick(5)], chance(15) ? 2 + pick(2) : 1, cls == 4 ? 0 : limits[pick(4)],
              w->now);
    if (cls == 0 && w->unlimited_training && chance(50))
        j.time_limit_ms = 0; /* runs until it ends or is preempted */
    int cpus = 1 + pick(8);
    j.cpus_per_node = w->few_shapes ? 1 : cpus;
    if (chance(20)) {
        int64_t mem = (1 + pick(64)) * 1024;
        j.mem_mb_per_node = w->few_shapes ? 0 : mem;
    }
    if (j.gpus_per_node > 0 && chance(30))
        snprintf(j.gpu_type, sizeof(j.gpu_type), "%s", pick(w->ntypes) ? "B" : "A");
    w->job_vc[j.id] = 0;
    if (w->partitioned && chance(60)) {
        snprintf(j.selectors[0].key, SCHED_NAME_MAX, "vc");
        snprintf(j.selectors[0].value, SCHED_NAME_MAX, "%s", pick(2) ? "b" : "a");
        j.selectors[0].negate = chance(15);
        j.nselectors = 1;
        int vc = j.selectors[0].value[0] == 'a' ? 1 : 2;
        w->job_vc[j.id] = (int8_t)(j.selectors[0].negate ? -vc : vc);
    }
    if (w->topo && j.nodes > 1 && chance(30)) {
        j.switches = 1 + pick(2); /* Slurm's --switches: 1 requires one switch */
        j.switches_wait_ms = chance(50) ? (1 + pick(60)) * MIN : 0;
    }
    w->one_switch_until[j.id] = j.switches_wait_ms ? j.submit_ms + j.switches_wait_ms : INT64_MAX;
    w->job_one_switch[j.id] =
        j.nodes > 1 && (j.switches == 1 || (j.switches == 0 && cls == 0 && w->seed % 8 == 1));
    j.has_checkpoint_signal = chance(30);
    if (w->warm) {
        int e = warm_pick(w, NENVS + 1);
        snprintf(j.env, sizeof(j.env), "%s", e < NENVS ? ENVS[e] : "");
    }
    if (chance(30))
        j.grace_ms = pick(30) * SEC;
    j.hold = chance(4);
    if (chance(5))
        j.begin_ms = w->now + pick(60) * MIN;
    if (chance(10)) {
        uint64_t dep = random_live_job(w, SCHED_JOB_STATE_COUNT);
        if (dep) {
            j.deps[0].kind = (enum sched_dep_kind)pick(4); /* after:ID among them */
            j.deps[0].job_id = dep;
            j.ndeps = 1;
            uint64_t arr = 1000000 + (uint64_t)pick(3); /* or a whole array's (Slurm's) */
            if (chance(25) && sched_array_known(w->s, arr)) {
                j.deps[0].job_id = arr;
                j.deps[0].array = true;
            }
            uint64_t other = random_live_job(w, SCHED_JOB_STATE_COUNT);
            if (other && other != dep && chance(40)) { /* two: all of them, or any ('?') */
                j.deps[1].kind = (enum sched_dep_kind)pick(4);
                j.deps[1].job_id = other;
                j.ndeps = 2;
                j.deps_any = chance(50);
            }
        }
    }
    if ((cls == 1 || cls == 2) && chance(20)) {
        j.idempotent = true;
        j.retries = 1;
    }
    if (chance(10)) { /* a task of one of three arrays that span the projects */
        j.array_id = 1000000 + (uint64_t)pick(3);
        j.array_limit = 1 + (int)(j.array_id % 3);
        array_declare_or_gone(w, j.array_id);
    }
    struct sched_error err;
    if (BOTH(w, sched_job_submit(s_, &j, w->now, &err)) == 0) {
        if (tracing())
            fprintf(stderr,
                    "  +%llds submit %llu %s tier %s class %s %dx%d GPUs type '%s' cpus %d "
                    "limit %llds hold %d deps %d (on %llu)\n",
                    (long long)((w->now - T0) / 1000), (unsigned long long)j.id, j.project, j.tier,
                    j.class_name, j.nodes, j.gpus_per_node, j.gpu_type, j.cpus_per_node,
                    (long long)(j.time_limit_ms / 1000), j.hold, j.ndeps,
                    (unsigned long long)(j.ndeps ? j.deps[0].job_id : 0));
        w->next_id++;
    }
}

/* An operator moves a node to the other partition (its reserved label kept). */
static void relabel_random(struct world *w)
{
    int i = pick(w->nnodes);
    struct sched_label labels[3];
    memset(labels, 0, sizeof(labels));
    int n = 0;
    if (w->topo)
        node_switch_label(&labels[n++], i);
    if (w->node_reserved[i]) {
        snprintf(labels[n].key, SCHED_NAME_MAX, "pool");
        snprintf(labels[n++].value, SCHED_NAME_MAX, "reserved");
    }
    w->node_vc[i] = !w->node_vc[i];
    snprintf(labels[n].key, SCHED_NAME_MAX, "vc");
    snprintf(labels[n++].value, SCHED_NAME_MAX, "%s", w->node_vc[i] ? "b" : "a");
    struct sched_error err;
    if (BOTH(w, sched_node_set_labels(s_, w->node_names[i], labels, n, &err)))
        WFAIL(w, "node labels: %s", err.message);
    w->node_events++;
}

/* A silent node's lease runs out for one of its jobs (docketd: the job's lease granted to
 * the agent ended): false when nothing runs there. */
static bool lease_expires(struct world *w, const char *name, int idx)
{
    for (uint64_t id = 1; id < w->next_id; id++) {
        struct sched_job_view v;
        if (!job_view(w->s, id, &v) || !holding(v.state))
            continue;
        for (int k = 0; k < v.nallocs; k++) {
            if ((int)v.allocs[k].node != idx)
                continue;
            struct sched_error err;
            if (BOTH(w, sched_job_lost_on(s_, id, name, w->now, &err)))
                WFAIL(w, "lease of %llu: %s", (unsigned long long)id, err.message);
            w->node_events++;
            return true;
        }
    }
    return false;
}

static void node_random(struct world *w)
{
    const char *name = w->node_names[pick(w->nnodes)];
    int idx = sched_node_find(w->s, name);
    struct sched_node_view nv;
    assert_int_equal(sched_node_get(w->s, (uint32_t)idx, &nv), 0);
    enum sched_node_state to;
    struct sched_error err;
    if (nv.state == SCHED_NODE_UNREACHABLE && chance(50) && lease_expires(w, name, idx))
        return;
    if (nv.state != SCHED_NODE_UP) {
        to = SCHED_NODE_UP;
    } else {
        int r = pick(10);
        to = r < 4 ? SCHED_NODE_DOWN : r < 7 ? SCHED_NODE_DRAINING : SCHED_NODE_UNREACHABLE;
    }
    if (BOTH(w, sched_node_set_state(s_, name, to, w->now, &err)))
        WFAIL(w, "node state: %s", err.message);
    if (to == SCHED_NODE_DOWN)
        w->node_events++;
    w->node_events++; /* drains change what P2 may expect too */
}

/* ---- live changes between cycles (issue 34) */

/* The policy applied again as it is (docket apply of an unchanged file): nothing may move,
 * so it is no event for the promises P2 and P4 check. */
static void policy_noop(struct world *w)
{
    struct sched_policy same = *sched_get_policy(w->s);
    struct sched_error err;
    if (BOTH(w, sched_set_policy(s_, &same, &err)))
        WFAIL(w, "policy apply: %s", err.message);
}

/* One part of the policy changed: a knob, a guard, backfill, a starvation bound, a
 * class's protection, the fair-share half-life. */
static void policy_change(struct world *w)
{
    struct sched_policy p = *sched_get_policy(w->s);
    int part = pick(7);
    if (tracing())
        fprintf(stderr, "  +%llds policy change %d\n", (long long)((w->now - T0) / 1000), part);
    switch (part) {
    case 0:
        p.retry_delay_ms = (1 + pick(10)) * MIN;
        p.max_starts_per_cycle = pick(4);
        break;
    case 1:
        p.min_runtime_ms = pick(3) * 5 * MIN;
        break;
    case 2:
        p.max_preemptions = 1 + pick(3);
        break;
    case 3:
        p.backfill_depth = 1 + pick(16);
        break;
    case 4:
        if (p.ordering == SCHED_ORDER_TIERED)
            p.tiers[pick(p.ntiers)].starve_after_ms = chance(20) ? 0 : (20 + pick(240)) * MIN;
        break;
    case 5:
        p.classes[pick(3)].protect_after_ms = chance(50) ? 0 : (30 + pick(120)) * MIN;
        break;
    default:
        p.fairshare_half_life_ms = (1 + pick(14)) * 24 * HOUR;
        break;
    }
    for (int t = 0; t < p.ntiers; t++)
        w->starve_after[t] = p.tiers[t].starve_after_ms;
    struct sched_error err;
    if (BOTH(w, sched_set_policy(s_, &p, &err)))
        WFAIL(w, "policy change: %s", err.message);
    w->node_events++; /* a promise may move with it (a bound, a guard) */
}

/* A project's guarantee, limits or tier change. */
static void project_change(struct world *w)
{
    const char *tiers[] = {"critical", "high", "normal", "low"};
    int i = pick(w->nprojects);
    struct sched_project_view pv;
    assert_int_equal(
        sched_project_get(w->s, (size_t)sched_project_find(w->s, w->project_names[i]), &pv), 0);
    struct sched_project_spec ps = pv.spec;
    switch (pick(4)) {
    case 0:
        ps.guarantee_gpus = pick(3) * 4;
        break;
    case 1:
        ps.gpu_limit = chance(50) ? 4 + pick(12) : -1;
        break;
    case 2:
        ps.max_running = chance(50) ? 1 + pick(4) : -1;
        break;
    default: /* raising is always allowed; its running jobs keep their tier */
        w->project_tier[i] = pick(w->project_tier[i] + 1);
        snprintf(ps.tier, sizeof(ps.tier), "%s", tiers[w->project_tier[i]]);
        break;
    }
    struct sched_error err;
    if (BOTH(w, sched_project_upsert(s_, &ps, &err)))
        WFAIL(w, "project change: %s", err.message);
    w->node_events++;
}

/* A GPU node resized (a GPU failed, or came back): below its jobs too. */
static void node_resize(struct world *w)
{
    int i = pick(w->nnodes);
    struct sched_node_view nv;
    assert_int_equal(sched_node_get(w->s, (uint32_t)sched_node_find(w->s, w->node_names[i]), &nv),
                     0);
    if (nv.gpus == 0 && !nv.gpu_type[0])
        return;
    struct sched_node_spec n;
    memset(&n, 0, sizeof(n));
    snprintf(n.name, sizeof(n.name), "%s", nv.name);
    snprintf(n.gpu_type, sizeof(n.gpu_type), "%s", nv.gpu_type);
    n.gpus = nv.gpus == 8 ? 4 + pick(4) : 8;
    n.cpus = nv.cpus;
    n.mem_mb = nv.mem_mb;
    n.state = nv.state;
    n.nlabels = nv.nlabels;
    if (nv.nlabels)
        memcpy(n.labels, nv.labels, (size_t)nv.nlabels * sizeof(n.labels[0]));
    struct sched_error err;
    if (BOTH(w, sched_node_upsert(s_, &n, w->now, &err)))
        WFAIL(w, "node resize: %s", err.message);
    w->node_events++;
}

/* The controller could not store a submission: the job is withdrawn. */
static void withdraw_random(struct world *w)
{
    uint64_t id = random_live_job(w, chance(50) ? SCHED_PENDING : SCHED_HELD);
    struct sched_error err;
    if (id)
        (void)BOTH(w, sched_job_withdraw(s_, id, &err));
}

/* scontrol update: a pending job's request changes (its GPUs), or a running job's time
 * limit goes down (to a little past now). Jobs whose selectors or switches the checks
 * follow are left as they are. */
static void update_random(struct world *w)
{
    struct sched_error err;
    struct sched_job_view v;
    uint64_t id = random_live_job(w, chance(50) ? SCHED_RUNNING : SCHED_PENDING);
    if (!id || !job_view(w->s, id, &v))
        return;
    if (v.state == SCHED_RUNNING) {
        int64_t limit = w->now - v.start_ms + (1 + pick(30)) * MIN;
        if (v.time_limit_ms > 0 && limit < v.time_limit_ms)
            (void)BOTH(w, sched_job_set_limit(s_, id, limit, w->now, &err));
        return;
    }
    if (w->job_vc[id] || w->job_one_switch[id])
        return;
    int gpus_opts[] = {0, 1, 2, 4};
    struct sched_job_spec j;
    spec_fill(&j, id, v.project, v.tier, v.class_name, gpus_opts[pick(4)], v.nodes, v.time_limit_ms,
              v.submit_ms);
    j.cpus_per_node = v.cpus_per_node;
    j.mem_mb_per_node = v.mem_mb_per_node;
    j.preempt_count = v.preempt_count;
    snprintf(j.env, sizeof(j.env), "%s", v.env);
    if (j.gpus_per_node && v.gpu_type)
        snprintf(j.gpu_type, sizeof(j.gpu_type), "%s", v.gpu_type);
    if (tracing())
        fprintf(stderr, "  +%llds update %llu to %d GPUs\n", (long long)((w->now - T0) / 1000),
                (unsigned long long)id, j.gpus_per_node);
    if (BOTH(w, sched_job_update(s_, &j, w->now, &err)) == 0)
        w->starve_promise[id] = -1; /* a new request: a promise of its own, later */
}

/* Live changes: policy applies (no-op, real), project and node changes, withdrawals, a
 * clock that jumps (the controller stopped for a while) and updates: `r` in 0..13. */
static void live_change(struct world *w, int r)
{
    if (tracing())
        fprintf(stderr, "  +%llds live change %d\n", (long long)((w->now - T0) / 1000), r);
    if (r < 3)
        policy_noop(w);
    else if (r < 5)
        policy_change(w);
    else if (r < 8)
        project_change(w);
    else if (r < 10)
        node_resize(w);
    else if (r < 12)
        withdraw_random(w);
    else if (r < 13) {
        w->now += (1 + pick(90)) * MIN;
        w->jumped_to = w->now;
        w->node_events++; /* promises due in the jump come late by it */
    } else {
        update_random(w);
    }
}

/* One random user, admin or operator action. */
static void act(struct world *w)
{
    struct sched_error err;
    int r = pick(100);
    uint64_t id;
    if (r < 55) {
        submit_random(w);
    } else if (r < 60 && (id = random_live_job(w, SCHED_JOB_STATE_COUNT))) {
        (void)BOTH(w, sched_job_cancel(s_, id, w->now, &err));
    } else if (r < 64 && (id = random_live_job(w, SCHED_PENDING))) {
        (void)BOTH(w, sched_job_hold(s_, id, w->now, &err));
    } else if (r < 70 && (id = random_live_job(w, SCHED_HELD))) {
        (void)BOTH(w, sched_job_release(s_, id, w->now, &err));
    } else if (r < 73 && (id = random_live_job(w, SCHED_RUNNING))) {
        (void)BOTH(w, sched_job_requeue(s_, id, w->now, &err));
    } else if (r < 78 && (id = random_live_job(w, SCHED_RUNNING))) {
        (void)BOTH(w, sched_job_checkpointed(s_, id, w->now, &err));
    } else if (r < 80) {
        /* the arguments are drawn once: BOTH evaluates its call twice */
        const char *project = w->project_names[pick(w->nprojects)];
        int levels = pick(2);
        int64_t until = w->now + (10 + pick(120)) * MIN;
        if (tracing())
            fprintf(stderr, "  +%llds boost %s by %d until +%llds\n",
                    (long long)((w->now - T0) / 1000), project, levels,
                    (long long)((until - T0) / 1000));
        (void)BOTH(w, sched_project_boost(s_, project, levels, until, w->now, &err));
        w->boosts++;
        if (w->nboost_ends < 512)
            w->boost_ends[w->nboost_ends++] = until;
    } else if (r < 84) {
        node_random(w);
    } else if (r < 86 && w->partitioned) {
        relabel_random(w);
    } else if (r >= 86) {
        live_change(w, r - 86);
    }
}

/* A node's warm set changes (a warm finished, an image evicted, an agent restarted). */
static void warm_random(struct world *w)
{
    const char *name = w->node_names[warm_pick(w, w->nnodes)];
    const char *keys[NENVS];
    int n = 0;
    for (int e = 0; e < NENVS; e++)
        if (warm_pick(w, 2))
            keys[n++] = ENVS[e];
    if (tracing())
        fprintf(stderr, "  +%llds warm %s: %d environments\n", (long long)((w->now - T0) / 1000),
                name, n);
    struct sched_error err;
    if (BOTH(w, sched_node_set_warm(s_, name, keys, n, &err)))
        WFAIL(w, "warm %s: %s", name, err.message);
}

/* ---- the simulated agent */

static void agent_end(struct world *w, uint64_t id, enum sched_exit_kind how, int code)
{
    struct sched_error err;
    w->runs[id].live = false;
    if (tracing())
        fprintf(stderr, "  +%llds end job %llu how %d code %d\n", (long long)((w->now - T0) / 1000),
                (unsigned long long)id, (int)how, code);
    if (BOTH(w, sched_job_ended(s_, id, how, code, w->now, &err)))
        WFAIL(w, "end %llu: %s", (unsigned long long)id, err.message);
}

/* Forget runs the core no longer counts as holding (ended by a node failure, cancelled
 * while starting ...). */
static void agent_reconcile(struct world *w)
{
    for (uint64_t id = 1; id < w->next_id; id++) {
        if (!w->runs[id].live)
            continue;
        struct sched_job_view v;
        if (!job_view(w->s, id, &v) || !holding(v.state))
            w->runs[id].live = false;
    }
}

static int64_t agent_next(struct world *w)
{
    int64_t t = INT64_MAX;
    for (uint64_t id = 1; id < w->next_id; id++) {
        const struct run *r = &w->runs[id];
        if (!r->live)
            continue;
        if (!r->confirmed && r->confirm_at < t)
            t = r->confirm_at;
        if (r->exit_at < t)
            t = r->exit_at;
    }
    return t;
}

/* The agent's reports due now; how many it made (each is an event for the core). */
static int agent_step(struct world *w)
{
    struct sched_error err;
    int events = 0;
    for (uint64_t id = 1; id < w->next_id; id++) {
        struct run *r = &w->runs[id];
        if (!r->live)
            continue;
        if (!r->confirmed && r->confirm_at <= w->now) {
            r->confirmed = true;
            events++;
            if (BOTH(w, sched_job_running(s_, id, w->now, &err)))
                WFAIL(w, "running %llu: %s", (unsigned long long)id, err.message);
        }
        if (r->exit_at <= w->now) {
            events++;
            if (r->exit_signal)
                agent_end(w, id, SCHED_EXIT_SIGNAL, r->exit_signal);
            else
                agent_end(w, id, SCHED_EXIT_CODE, r->exit_code);
            check_both(w, "a job's end");
        }
    }
    return events;
}

/* A gang that requires one switch starts under one switch (nodes n00, n02 ... are sw0). */
static void check_one_switch(struct world *w, const struct sched_decision *d)
{
    for (int i = 1; i < d->nallocs; i++)
        if (d->allocs[i].node % 2 != d->allocs[0].node % 2)
            WFAIL(w, "job %llu starts across switches", (unsigned long long)d->job_id);
}

static void agent_obey(struct world *w, const struct sched_decision *d)
{
    struct run *r = &w->runs[d->job_id];
    switch (d->kind) {
    case SCHED_D_START: {
        struct sched_job_view v;
        assert_true(job_view(w->s, d->job_id, &v));
        if (w->job_one_switch[d->job_id] && w->now < w->one_switch_until[d->job_id])
            check_one_switch(w, d);
        memset(r, 0, sizeof(*r));
        r->live = true;
        r->confirm_at = w->now + pick(3000);
        int64_t limit = v.time_limit_ms > 0 ? v.time_limit_ms : 6 * HOUR;
        r->exit_at = chance(w->to_limit ? 0 : 70)
                         ? w->now + 1 + (int64_t)(rnd() % (uint64_t)limit)
                         : (v.time_limit_ms > 0 ? INT64_MAX : w->now + 6 * HOUR);
        r->exit_code = chance(85) ? 0 : 1;
        break;
    }
    case SCHED_D_SIGNAL:
        if (r->live && chance(70)) {
            int64_t at = w->now + (d->grace_ms > 0 ? (int64_t)(rnd() % (uint64_t)d->grace_ms) : 0);
            if (at < r->exit_at) {
                r->exit_at = at;
                r->exit_signal = d->signal;
            }
        }
        break;
    case SCHED_D_KILL:
        if (r->live) {
            int64_t at = w->now + pick(2000);
            if (at < r->exit_at) {
                r->exit_at = at;
                r->exit_signal = 9;
            }
        }
        break;
    default:
        break;
    }
}

/* ---- the guarantees seen from outside */

static bool decisions_equal(const struct sched_decision *a, const struct sched_decision *b)
{
    if (a->kind != b->kind || a->job_id != b->job_id || a->to != b->to || a->cause != b->cause ||
        a->nallocs != b->nallocs || a->node != b->node)
        return false;
    for (int i = 0; i < a->nallocs; i++)
        if (a->allocs[i].node != b->allocs[i].node ||
            a->allocs[i].gpu_mask != b->allocs[i].gpu_mask)
            return false;
    return true;
}

static void trace_decisions(struct world *w, const struct sched_decision *d, size_t n);

static void compare_twin(struct world *w, const struct sched_decision *d, size_t n,
                         const struct sched_decision *d2, size_t n2)
{
    for (size_t i = 0; i < n || i < n2; i++) {
        if (i >= n || i >= n2 || !decisions_equal(&d[i], &d2[i])) {
            if (tracing()) {
                fprintf(stderr, "  the recomputing twin decided:\n");
                trace_decisions(w, d2, n2);
            }
            WFAIL(w,
                  "incremental and full cycles differ at decision %zu of %zu/%zu: "
                  "kind %d job %llu vs kind %d job %llu",
                  i, n, n2, i < n ? (int)d[i].kind : -1,
                  i < n ? (unsigned long long)d[i].job_id : 0ULL, i < n2 ? (int)d2[i].kind : -1,
                  i < n2 ? (unsigned long long)d2[i].job_id : 0ULL);
        }
    }
}

static bool limit_reason(enum sched_reason r)
{
    return r == SCHED_R_QUOTA_LIMIT || r == SCHED_R_JOB_LIMIT;
}

/* Waiting behind higher jobs without a reservation of its own: the walk's memos tell which
 * of these a skipped job gets, from what they knew when it was skipped (the claims may
 * have shrunk or the room gone later in the walk). */
static bool behind_reason(enum sched_reason r)
{
    return r == SCHED_R_PRIORITY || r == SCHED_R_RESERVATION || r == SCHED_R_RESERVED_ZONE;
}

/* After a cycle the twins agree on every pending job too: its reason, whether it holds a
 * reservation and when that starts (a reservation differing without a decision yet would
 * make one differ later). Two differences are allowed, only in the reason, because which
 * jobs a walk skips depends on its memos: a job the walk looked at was admitted at its
 * turn, while a job it skipped is judged after the walk, when jobs of its project started
 * behind it may have reached a limit (or another one: at its turn its project was at its
 * running limit, JobLimit, and after the walk also over its GPU limit, which admission
 * asks first, QuotaLimit: property seed 2565); and a job without a reservation waiting behind
 * higher ones may be told Priority, Reservation or ReservedZone depending on when in the
 * walk its shape was judged. */
static void compare_twin_pending(struct world *w)
{
    for (uint64_t id = 1; id < w->next_id; id++) {
        struct sched_job_view v;
        if (!job_view(w->s, id, &v) || v.state != SCHED_PENDING)
            continue;
        struct sched_explain a, b;
        assert_int_equal(sched_explain(w->s, id, w->now, &a), 0);
        assert_int_equal(sched_explain(w->twin, id, w->now, &b), 0);
        bool same_reason = a.reason == b.reason || limit_reason(a.reason) ||
                           limit_reason(b.reason) ||
                           (behind_reason(a.reason) && behind_reason(b.reason) &&
                            !a.has_reservation && !b.has_reservation);
        if (!same_reason || a.has_reservation != b.has_reservation ||
            (a.has_reservation && a.forecast_start_ms != b.forecast_start_ms))
            WFAIL(w,
                  "incremental and full cycles differ on pending job %llu: %s (%s, start %lld) "
                  "vs %s (%s, start %lld)",
                  (unsigned long long)id, sched_reason_name(a.reason),
                  a.has_reservation ? "reserved" : "no reservation", (long long)a.forecast_start_ms,
                  sched_reason_name(b.reason), b.has_reservation ? "reserved" : "no reservation",
                  (long long)b.forecast_start_ms);
    }
}

/* P1 and P3. */
static void check_pending(struct world *w)
{
    size_t nn = sched_node_count(w->s);
    for (uint64_t id = 1; id < w->next_id; id++) {
        struct sched_job_view v;
        if (!job_view(w->s, id, &v) || v.state != SCHED_PENDING)
            continue;
        if (v.reason == SCHED_R_NONE)
            WFAIL(w, "pending job %llu has no reason", (unsigned long long)id);
        if (v.reason != SCHED_R_RESOURCES || w->capped)
            continue;
        int fit = 0;
        for (uint32_t k = 0; k < nn; k++) {
            struct sched_node_view nv;
            assert_int_equal(sched_node_get(w->s, k, &nv), 0);
            if (nv.state != SCHED_NODE_UP || nv.reserved)
                continue;
            if (w->job_vc[id]) { /* its selector: vc=a|b, or not */
                int vc = 0;
                for (int l = 0; l < nv.nlabels; l++)
                    if (!strcmp(nv.labels[l].key, "vc"))
                        vc = nv.labels[l].value[0] == 'a' ? 1 : 2;
                if ((w->job_vc[id] > 0) != (vc == abs(w->job_vc[id])))
                    continue;
            }
            if (v.gpus_per_node > 0 &&
                (!nv.gpu_type[0] || (v.gpu_type[0] && strcmp(v.gpu_type, nv.gpu_type))))
                continue;
            if (nv.gpus - nv.gpus_used >= v.gpus_per_node &&
                nv.cpus - nv.cpus_used >= v.cpus_per_node &&
                nv.mem_mb - nv.mem_used_mb >= v.mem_mb_per_node)
                fit++;
        }
        if (v.nodes == 1 && fit >= 1)
            WFAIL(w, "job %llu waits for Resources while a node has room for it",
                  (unsigned long long)id);
    }
}

/* P2: a preemptor still waiting after a cycle must still have a victim to wait for, or
 * its promised start must be ahead: once both are past, the next cycle starts it. (Jobs
 * the plan counted on end at most 2 s after their kill: the agent's latency here.) */
static void check_preemptors(struct world *w)
{
    for (uint64_t id = 1; id < w->next_id; id++) {
        struct sched_job_view v;
        if (!job_view(w->s, id, &v) || v.state != SCHED_PENDING || v.reason != SCHED_R_PREEMPTING)
            continue;
        struct sched_explain x;
        assert_int_equal(sched_explain(w->s, id, w->now, &x), 0);
        if (x.nvictims >= 8)
            continue; /* the list is cut: cannot tell */
        bool waiting = false;
        for (int k = 0; k < x.nvictims && !waiting; k++) {
            struct sched_job_view vv;
            waiting = job_view(w->s, x.waiting_on_victims[k], &vv) && holding(vv.state);
        }
        /* jobs whose limits fell in a clock jump are stopped only after it, and may hold
           the room until their grace ends (the room on paper was free) */
        int64_t due = x.forecast_start_ms;
        if (w->jumped_to && due < w->jumped_to + w->max_grace)
            due = w->jumped_to + w->max_grace;
        if (!waiting && due + 3 * SEC < w->now && !w->capped)
            WFAIL(w, "preemptor %llu is still waiting after its victims left: %s (start +%llds)",
                  (unsigned long long)id, x.sentence,
                  (long long)((x.forecast_start_ms - w->now) / 1000));
    }
}

static void trace_decisions(struct world *w, const struct sched_decision *d, size_t n)
{
    for (size_t i = 0; i < n && tracing(); i++) {
        fprintf(stderr, "  +%llds %d job %llu -> %s cause %d preemptor %llu nodes",
                (long long)((w->now - T0) / 1000), (int)d[i].kind, (unsigned long long)d[i].job_id,
                sched_job_state_name(d[i].to), (int)d[i].cause, (unsigned long long)d[i].preemptor);
        for (int k = 0; k < d[i].nallocs; k++)
            fprintf(stderr, " %s:%d", sched_node_name(w->s, d[i].allocs[k].node),
                    d[i].allocs[k].gpus);
        fprintf(stderr, "\n");
    }
}

/* P4: the guard's promise is kept. A starving job's sticky reservation says when it will
 * start at the latest: its room is held from then on, so it starts by then (plus the
 * agent's 2 s latency in ending what held the room), unless it left the queue, an admission
 * limit now holds it, or a node event or a boost changed what it may use. */
static void check_starving(struct world *w)
{
    for (uint64_t id = 1; id < w->next_id; id++) {
        struct sched_job_view v;
        bool pending = job_view(w->s, id, &v) && v.state == SCHED_PENDING;
        if (!pending) {
            w->starve_promise[id] = -1;
            continue;
        }
        struct sched_explain x;
        assert_int_equal(sched_explain(w->s, id, w->now, &x), 0);
        bool held = v.reason != SCHED_R_RESOURCES && v.reason != SCHED_R_RESERVATION &&
                    v.reason != SCHED_R_PREEMPTING && v.reason != SCHED_R_PRIORITY;
        uint64_t events = w->node_events + w->boosts;
        for (int b = 0; b < w->nboost_ends; b++)
            events += w->boost_ends[b] <= w->now;
        if (held || !x.starving || !x.has_reservation) {
            w->starve_promise[id] = -1;
            continue;
        }
        if (w->starve_promise[id] < 0 || w->promise_events[id] != events ||
            w->promise_pushed[id] != x.pushed_back_ms) {
            w->promise_pushed[id] = x.pushed_back_ms;
            w->starve_promise[id] = x.forecast_start_ms;
            if (w->jumped_to && w->starve_promise[id] < w->jumped_to + w->max_grace)
                w->starve_promise[id] = w->jumped_to + w->max_grace;
            w->promise_events[id] = events;
            continue;
        }
        if (w->now > w->starve_promise[id] + 3 * SEC && !w->capped)
            WFAIL(w, "starving job %llu was promised +%llds and still waits (%s): %s",
                  (unsigned long long)id, (long long)((w->starve_promise[id] - T0) / 1000),
                  sched_reason_name(v.reason), x.sentence);
    }
}

/* The guarantees seen from outside, after a cycle or between two. */
static void check_outside(struct world *w)
{
    check_both(w, "a cycle");
    check_pending(w);
    agent_reconcile(w);
    check_preemptors(w);
    check_starving(w);
}

/* The seeds whose number is a multiple of 3 cycle at random times too, on a stream of
 * their own so that the other seeds' workloads stay what they were. */
static bool idle_cycle(struct world *w)
{
    if (w->seed % 3 != 0)
        return false;
    w->idle_rng = w->idle_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (w->idle_rng >> 33) % 2 == 0;
}

static uint64_t warm_starts; /* starts on a node where the job's environment was warm */

static void run_cycle(struct world *w)
{
    size_t n, n2 = 0;
    struct sched_cycle_stats st;
    const struct sched_decision *d = sched_cycle(w->s, w->now, SCHED_CYCLE_INCREMENTAL, &n, &st);
    w->capped = st.start_capped;
    if (tracing())
        fprintf(stderr, "  +%llds cycle: %d started, capped %d, full %d, not reached %d\n",
                (long long)((w->now - T0) / 1000), st.started, st.start_capped, st.full,
                st.not_reached);
    const struct sched_decision *d2 =
        w->twin
            ? sched_cycle(w->twin, w->now,
                          w->mode == TWIN_FULL ? SCHED_CYCLE_RECOMPUTE : SCHED_CYCLE_INCREMENTAL,
                          &n2, NULL)
            : NULL;
    trace_decisions(w, d, n);
    if (w->twin) {
        compare_twin(w, d, n, d2, n2);
        compare_twin_pending(w);
    }
    for (size_t i = 0; i < n; i++) {
        agent_obey(w, &d[i]);
        warm_starts += d[i].kind == SCHED_D_START && d[i].warm_nodes > 0;
    }
    check_outside(w);
}

static uint64_t cache_checked[SCHED_CACHE_COUNT]; /* over the seeds run (run_seeds) */
static uint64_t quiet_witness[SCHED_QI_COUNT];    /* ... and the quiet proofs' witnesses */

static void run_seed(uint64_t seed, enum twin_mode twin)
{
    struct world *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    rng = seed * 0x2545F4914F6CDD1DULL + 1;
    w->seed = seed;
    w->idle_rng = seed;
    w->few_shapes = seed % 3 == 0;
    w->topo = seed % 4 == 1;
    w->warm = seed % 7 == 6;
    w->warm_rng = seed;
    setup(w, twin);
    run_cycle(w);
    for (w->step = 0; w->step < STEPS; w->step++) {
        int64_t next = w->now + (1 + pick(20 * 60)) * SEC;
        int64_t wake = sched_next_wakeup(w->s, w->now);
        int64_t agent = agent_next(w);
        if (wake < next)
            next = wake;
        if (agent < next)
            next = agent;
        w->now = next > w->now ? next : w->now + 1;
        bool events = agent_step(w) > 0;
        agent_reconcile(w);
        if (chance(60)) {
            int k = 1 + pick(3);
            events = true;
            for (int i = 0; i < k; i++) {
                act(w);
                check_both(w, "an action");
                agent_reconcile(w);
            }
        }
        if (w->warm && warm_pick(w, 4) == 0) {
            warm_random(w);
            check_both(w, "a warm set");
        }
        /* as a controller does: a cycle after events or when the core's wakeup is due, and
           none otherwise, so a rule that comes true with time alone and has no wakeup is
           seen late (P2, P4). In every third seed a cycle also follows at random times
           without any event of its own (an unrelated event, to the core: what a memo proved
           must hold whenever the next cycle comes) */
        if (events || wake <= w->now || idle_cycle(w))
            run_cycle(w);
        else
            check_outside(w);
    }
    struct sched_cache_checks cc;
    sched_cache_checks(w->s, &cc);
    for (int c = 0; c < SCHED_CACHE_COUNT; c++)
        cache_checked[c] += cc.checked[c];
    for (int i = 0; i < SCHED_QI_COUNT; i++)
        quiet_witness[i] += cc.quiet_witness[i];
    sched_destroy(w->s);
    sched_destroy(w->twin);
    free(w);
}

/* Every cache's check ran (sched_verify_memos): a cache added without its check, or one
 * the workload never reaches, fails here rather than going unchecked. And in a long run
 * every input of the quiet proof had a witness (enum sched_quiet_input): a seed where it
 * alone ended a proof that was then wrong, so that a proof without it is caught. The rarest
 * come about once in a hundred seeds or less (reclaim_epoch: seed 190), so the default 25
 * seeds only print the counts. The wake time is not asked: with least work lost for stopping
 * jobs seeds 1-600 show it needed nowhere (a proof without it passes them; before, 4
 * witnesses), and test_quiet_proof_wakes_when_a_window_closes shows it (property seed 964). */
enum { WITNESS_SEEDS = 500 };
static void check_caches_checked(long seeds)
{
    for (int c = 0; c < SCHED_CACHE_COUNT; c++) {
        if (tracing() || seeds >= 25)
            fprintf(stderr, "  cache %-26s %llu hits checked\n",
                    sched_cache_name((enum sched_cache)c), (unsigned long long)cache_checked[c]);
        if (seeds >= 25 && cache_checked[c] == 0)
            fail_msg("the %s cache was never checked in %ld seeds",
                     sched_cache_name((enum sched_cache)c), seeds);
    }
    if (tracing() || seeds >= 25)
        fprintf(stderr, "  starts on a warm node: %llu\n", (unsigned long long)warm_starts);
    int unwitnessed = -1;
    for (int i = 0; i < SCHED_QI_COUNT; i++) {
        if (tracing() || seeds >= 25)
            fprintf(stderr, "  quiet proof input %-14s %llu witnesses\n",
                    sched_quiet_input_name((enum sched_quiet_input)i),
                    (unsigned long long)quiet_witness[i]);
        if (quiet_witness[i] == 0 && i != SCHED_QI_WAKE)
            unwitnessed = i;
    }
    if (seeds >= WITNESS_SEEDS && unwitnessed >= 0)
        fail_msg("no seed of %ld showed the quiet proof's input %s needed", seeds,
                 sched_quiet_input_name((enum sched_quiet_input)unwitnessed));
}

static void run_seeds(enum twin_mode twin)
{
    const char *one = getenv("DOCKET_PROP_SEED");
    if (one) {
        run_seed(strtoull(one, NULL, 10), twin);
        return;
    }
    const char *env = getenv("DOCKET_PROP_SEEDS");
    const char *first_env = getenv("DOCKET_PROP_FIRST");
    long count = env ? atol(env) : 25; /* about 5 s under ASan on this machine */
    long first = first_env ? atol(first_env) : 1;
    memset(cache_checked, 0, sizeof(cache_checked));
    memset(quiet_witness, 0, sizeof(quiet_witness));
    warm_starts = 0;
    for (long seed = first; seed < first + count; seed++)
        run_seed((uint64_t)seed, twin);
    check_caches_checked(count);
}

static void test_random_workloads_hold_the_guarantees(void **state)
{
    (void)state;
    run_seeds(TWIN_NONE);
}

static void test_incremental_equals_full(void **state)
{
    (void)state;
    run_seeds(TWIN_FULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_workloads_hold_the_guarantees),
        cmocka_unit_test(test_incremental_equals_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
