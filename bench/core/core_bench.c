/*
 * core_bench.c - how fast is the scheduling core? Builds synthetic clusters and queues
 * (mixed tiers, projects, GPU types, sizes from 1 GPU to 8-node gangs) and prints one
 * line per case with the median time and the core's memory.
 *
 *   core_bench              all cases of bench/RESULTS.md
 *   core_bench --quick      the smallest cases (make demo's smoke run)
 *   core_bench --case NAME  one case: full, full_refresh, job_end, job_end_preempt,
 *                           starving_refresh, submit, scale_jobs, scale_nodes,
 *                           live, live_starving (live changes beside a job end: a
 *                           no-op policy apply, a relabel, a drain, a guarantee flip, a
 *                           GPU limit flip, a new selector set, a boost)
 *   core_bench --reps N     N timed repetitions of the steady cases (to profile them)
 *   core_bench --event E    the live cases apply only event E (policy_noop, relabel, drain,
 *                           guarantee, limit, selset, boost) beside the job end: to
 *                           profile one event (its state then differs from the full run's)
 *   core_bench --cpu        time with the thread's CPU clock, not the wall clock: on a
 *                           loaded shared machine, the time the core computed rather than
 *                           the time it also waited for a core (the setup is the same)
 *
 * job_end_preempt and starving_refresh are the hard states: victims past min_runtime so
 * that every cycle may preempt, and 20,000 starving jobs holding sticky reservations.
 * Each line says how many pending jobs the last timed cycle looked at and how many it
 * skipped, by which proof (docs/scheduling.md "Guarantees").
 *
 * Only the core is timed: building the cluster and the queue is set-up. The clock is
 * read here, never in the core.
 */
#define _GNU_SOURCE
#include "core/sched.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define MS   1LL
#define MIN  (60000 * MS)
#define HOUR (60 * MIN)
#define T0   1700000000000LL

static clockid_t timing_clock = CLOCK_MONOTONIC; /* --cpu: CLOCK_THREAD_CPUTIME_ID */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(timing_clock, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long peak_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* xorshift: deterministic synthetic workloads */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static const char *live_only; /* --event: the live cases time this event alone (and the job end) */
static int reps_wanted; /* --reps: timed repetitions of the steady cases (0: each case's own) */
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static int pick(int n)
{
    return (int)(rnd() % (uint64_t)n);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *const types[] = {"H100-80GB", "A100-40GB", "L40S"};
static const char *const tiers[] = {"critical", "high", "normal", "low"};
static const char *const classes[] = {"training", "experiment", "exploration", "interactive",
                                      "service"};

static void die(const char *what, const struct sched_error *e)
{
    fprintf(stderr, "core_bench: %s: %s (%s)\n", what, e->message, e->field);
    exit(1);
}

static const struct sched_policy *bench_policy; /* NULL: the defaults */

static struct sched *build_cluster(int nodes, int projects)
{
    struct sched_error err;
    struct sched_policy def;
    if (!bench_policy) {
        sched_policy_defaults(&def);
        /* the cases time whole cycles: the first one starts tens of thousands of jobs,
           which docketd's default slices (max_starts_per_cycle) */
        def.max_starts_per_cycle = 0;
    }
    struct sched *s = sched_create(bench_policy ? bench_policy : &def, &err);
    if (!s)
        die("create", &err);
    for (int i = 0; i < nodes; i++) {
        struct sched_node_spec n;
        memset(&n, 0, sizeof(n));
        snprintf(n.name, sizeof(n.name), "gpu%05d", i);
        int t = i % 10 < 6 ? 0 : i % 10 < 9 ? 1 : 2; /* 60 % H100, 30 % A100, 10 % L40S */
        snprintf(n.gpu_type, sizeof(n.gpu_type), "%s", types[t]);
        n.gpus = 8;
        n.cpus = 128;
        n.mem_mb = 1024 * 1024;
        snprintf(n.labels[0].key, SCHED_NAME_MAX, "zone");
        snprintf(n.labels[0].value, SCHED_NAME_MAX, "%c", 'a' + i % 4);
        n.nlabels = 1;
        if (i % 10 == 5) { /* 10 % of the nodes in the reserved pool */
            snprintf(n.labels[1].key, SCHED_NAME_MAX, "pool");
            snprintf(n.labels[1].value, SCHED_NAME_MAX, "reserved");
            n.nlabels = 2;
        }
        n.state = SCHED_NODE_UP;
        if (sched_node_upsert(s, &n, T0, &err))
            die("node", &err);
    }
    for (int p = 0; p < projects; p++) {
        struct sched_project_spec ps;
        sched_project_spec_init(&ps);
        snprintf(ps.name, sizeof(ps.name), "proj%03d", p);
        snprintf(ps.group, sizeof(ps.group), "group%02d", p % 20);
        snprintf(ps.tier, sizeof(ps.tier), "%s", tiers[p % 4]);
        ps.guarantee_gpus = 64 + (p % 7) * 32;
        ps.gpu_limit = p % 10 == 3 ? 256 : -1;
        if (sched_project_upsert(s, &ps, &err))
            die("project", &err);
    }
    return s;
}

/* Sizes from 1 GPU to 8-node gangs: 60 % 1, 15 % 2, 10 % 4, 10 % 8, 3 % 2x8, 1.5 % 4x8,
 * 0.5 % 8x8. */
static void job_shape(int *gpus, int *nodes)
{
    int r = pick(1000);
    *nodes = 1;
    if (r < 600)
        *gpus = 1;
    else if (r < 750)
        *gpus = 2;
    else if (r < 850)
        *gpus = 4;
    else if (r < 950)
        *gpus = 8;
    else if (r < 980) {
        *gpus = 8;
        *nodes = 2;
    } else if (r < 995) {
        *gpus = 8;
        *nodes = 4;
    } else {
        *gpus = 8;
        *nodes = 8;
    }
}

static uint64_t next_id = 1;

static void submit_jobs(struct sched *s, int count, int projects, int64_t now)
{
    struct sched_error err;
    for (int i = 0; i < count; i++) {
        struct sched_job_spec j;
        sched_job_spec_init(&j);
        j.id = next_id++;
        int p = pick(projects);
        snprintf(j.project, sizeof(j.project), "proj%03d", p);
        snprintf(j.user, sizeof(j.user), "user%04d", pick(2000));
        /* at or below the project's tier */
        int tier = p % 4 + pick(4 - p % 4);
        snprintf(j.tier, sizeof(j.tier), "%s", tiers[tier]);
        int c = pick(100);
        int cls = c < 30 ? 0 : c < 70 ? 1 : c < 93 ? 2 : c < 98 ? 3 : 4;
        snprintf(j.class_name, sizeof(j.class_name), "%s", classes[cls]);
        job_shape(&j.gpus_per_node, &j.nodes);
        if (pick(4) == 0)
            snprintf(j.gpu_type, sizeof(j.gpu_type), "%s", types[pick(2)]);
        j.cpus_per_node = j.gpus_per_node * 8;
        j.mem_mb_per_node = (int64_t)j.gpus_per_node * 64 * 1024;
        int64_t limits[] = {30 * MIN, HOUR, 4 * HOUR, 24 * HOUR};
        j.time_limit_ms = cls == 4 ? 0 : limits[pick(4)];
        if (cls == 3)
            j.time_limit_ms = HOUR;
        j.submit_ms = now - pick(3600) * 1000LL;
        if (sched_job_submit(s, &j, now, &err))
            die("submit", &err);
    }
}

/* Confirm every START so the jobs are RUNNING, as the agents would. */
static void confirm_starts(struct sched *s, const struct sched_decision *d, size_t n, int64_t now)
{
    struct sched_error err;
    for (size_t i = 0; i < n; i++)
        if (d[i].kind == SCHED_D_START && sched_job_running(s, d[i].job_id, now, &err))
            die("running", &err);
}

struct result {
    const char *name;
    int pending, nodes, reps;
    double median_ms, max_ms;
    long rss_mb;
    double bytes_per_job;
    int started;
    struct sched_cycle_stats last; /* the last timed cycle's counters */
};

static void print_result(const struct result *r)
{
    printf("%-16s pending=%-8d nodes=%-6d reps=%-4d median=%9.3f ms  max=%9.3f ms  "
           "started=%-6d core_bytes/job=%6.0f  peak_rss=%ld MiB\n",
           r->name, r->pending, r->nodes, r->reps, r->median_ms, r->max_ms, r->started,
           r->bytes_per_job, r->rss_mb);
    const struct sched_cycle_stats *st = &r->last;
    printf("%-16s last cycle: starving served %d (passed by as quiet %d), considered %d, skipped: "
           "project limit %d, shape without capacity %d, shape held off by claims %d; not reached "
           "%d; preempted %d, reservations %d\n",
           "", st->starving_served, st->starving_quiet, st->considered, st->skipped_limit,
           st->skipped_nofit, st->skipped_claimed, st->not_reached, st->preempted,
           st->reservations);
    printf("%-16s preemption searches: %d over every node, %d over %d changed nodes only, "
           "%d skipped by an unchanged memo; reservation searches: %ld nodes pruned\n",
           "", st->preempt_full, st->preempt_rechecks, st->preempt_recheck_nodes,
           st->preempt_memo_skips, st->reserve_pruned);
    fflush(stdout);
}

static double bytes_per_pending(struct sched *s)
{
    struct sched_totals t;
    sched_totals_get(s, &t);
    size_t jobs = sched_job_count(s);
    return jobs ? (double)t.core_bytes / (double)jobs : 0;
}

/* The first cycle on an empty cluster with `pending` queued jobs. */
static void case_full(const char *name, int nodes, int pending, int reps)
{
    double *t = calloc(reps, sizeof(*t));
    struct result r = {.name = name, .pending = pending, .nodes = nodes, .reps = reps};
    for (int i = 0; i < reps; i++) {
        struct sched *s = build_cluster(nodes, 200);
        submit_jobs(s, pending, 200, T0);
        size_t n;
        struct sched_cycle_stats st;
        double a = now_ms();
        (void)sched_cycle(s, T0 + 1000, SCHED_CYCLE_REFRESH, &n, &st);
        t[i] = now_ms() - a;
        r.last = st;
        r.started = st.started;
        if (t[i] > r.max_ms)
            r.max_ms = t[i];
        r.bytes_per_job = bytes_per_pending(s);
        sched_destroy(s);
    }
    r.median_ms = median(t, reps);
    r.rss_mb = peak_rss_kb() / 1024;
    print_result(&r);
    free(t);
}

/* A full cluster with `pending` waiting: a forced full cycle (shares, order and
 * reservations recomputed), and then single events: one job ends -> next cycle. */
static void case_steady(int nodes, int pending, int reps, bool refresh, bool job_end,
                        bool submit_one, int64_t age)
{
    if (reps_wanted > 0)
        reps = reps_wanted;
    struct sched *s = build_cluster(nodes, 200);
    submit_jobs(s, pending, 200, T0);
    size_t n;
    int64_t now = T0 + 1000;
    const struct sched_decision *d = sched_cycle(s, now, SCHED_CYCLE_REFRESH, &n, NULL);
    confirm_starts(s, d, n, now);
    /* top the queue up so `pending` jobs wait on a full cluster */
    struct sched_totals tot;
    sched_totals_get(s, &tot);
    int waiting = (int)tot.jobs_by_state[SCHED_PENDING];
    if (waiting < pending)
        submit_jobs(s, pending - waiting, 200, now);
    now += 1000;
    d = sched_cycle(s, now, SCHED_CYCLE_REFRESH, &n, NULL);
    confirm_starts(s, d, n, now);
    if (age > 0) { /* the hard state: victims old enough, jobs starving */
        now += age;
        double a = now_ms();
        d = sched_cycle(s, now, SCHED_CYCLE_REFRESH, &n, NULL);
        fprintf(stderr, "core_bench: set-up cycle after %lld s: %.0f ms\n", (long long)(age / 1000),
                now_ms() - a);
        confirm_starts(s, d, n, now);
    }
    double *t = calloc(reps, sizeof(*t));
    struct result r = {.name = "", .pending = pending, .nodes = nodes, .reps = reps};
    if (refresh) {
        r.name = age > 0 ? "starving_refresh" : "full_refresh";
        for (int i = 0; i < reps; i++) {
            now += 1000;
            double a = now_ms();
            d = sched_cycle(s, now, SCHED_CYCLE_REFRESH, &n, &r.last);
            t[i] = now_ms() - a;
            confirm_starts(s, d, n, now);
        }
    } else if (job_end) {
        r.name = age > 0 ? "job_end_preempt" : "job_end";
        /* end a running job, then time the cycle that follows */
        struct sched_error err;
        size_t slots = sched_job_slots(s), slot = 0;
        for (int i = 0; i < reps; i++) {
            struct sched_job_view v;
            while (slot < slots && (sched_job_at(s, slot, &v) || v.state != SCHED_RUNNING))
                slot++;
            if (slot >= slots)
                break;
            now += 10;
            if (sched_job_ended(s, v.id, SCHED_EXIT_CODE, 0, now, &err))
                die("ended", &err);
            struct sched_cycle_stats st;
            double a = now_ms();
            d = sched_cycle(s, now, SCHED_CYCLE_INCREMENTAL, &n, &st);
            t[i] = now_ms() - a;
            r.last = st;
            if (getenv("CORE_BENCH_VERBOSE") && t[i] > 5)
                fprintf(stderr,
                        "iteration %d: %.1f ms full=%d started=%d reservations=%d "
                        "preempted=%d considered=%d\n",
                        i, t[i], st.full, st.started, st.reservations, st.preempted, st.considered);
            for (size_t k = 0; k < n; k++)
                r.started += d[k].kind == SCHED_D_START;
            confirm_starts(s, d, n, now);
            slots = sched_job_slots(s);
        }
    } else if (submit_one) {
        r.name = "submit";
        for (int i = 0; i < reps; i++) {
            now += 10;
            double a = now_ms();
            submit_jobs(s, 1, 200, now);
            d = sched_cycle(s, now, SCHED_CYCLE_INCREMENTAL, &n, NULL);
            t[i] = now_ms() - a;
            confirm_starts(s, d, n, now);
        }
    }
    for (int i = 0; i < reps; i++)
        if (t[i] > r.max_ms)
            r.max_ms = t[i];
    r.median_ms = median(t, reps);
    r.bytes_per_job = bytes_per_pending(s);
    r.rss_mb = peak_rss_kb() / 1024;
    print_result(&r);
    free(t);
    sched_destroy(s);
}

/* ---- live changes (issue 34): each event followed by the cycle it calls for, timed side
   by side with the friendly event (one job ends) in the same state */

enum live_event {
    EV_JOB_END,
    EV_POLICY_NOOP,
    EV_RELABEL,
    EV_DRAIN,
    EV_GUARANTEE,
    EV_LIMIT,
    EV_SELSET,
    EV_BOOST,
    EV_N
};
static const char *const live_names[EV_N] = {"job_end",   "policy_noop", "relabel", "drain",
                                             "guarantee", "limit",       "selset",  "boost"};

/* A job whose selector set no job had before (zone != x<i>: every node matches it), so
   the core interns a new set and counts its victims and changes from the nodes. */
static void submit_new_selset(struct sched *s, int i, int64_t now)
{
    struct sched_error err;
    struct sched_job_spec j;
    sched_job_spec_init(&j);
    j.id = next_id++;
    snprintf(j.project, sizeof(j.project), "proj%03d", (i * 11) % 200);
    snprintf(j.user, sizeof(j.user), "user0001");
    snprintf(j.tier, sizeof(j.tier), "%s", tiers[3]);
    snprintf(j.class_name, sizeof(j.class_name), "%s", classes[1]);
    j.gpus_per_node = 1;
    j.nodes = 1;
    j.cpus_per_node = 8;
    j.mem_mb_per_node = 64 * 1024;
    j.time_limit_ms = HOUR;
    j.submit_ms = now;
    snprintf(j.selectors[0].key, SCHED_NAME_MAX, "zone");
    snprintf(j.selectors[0].value, SCHED_NAME_MAX, "x%d", i);
    j.selectors[0].negate = true;
    j.nselectors = 1;
    if (sched_job_submit(s, &j, now, &err))
        die("submit", &err);
}

static int preemptions_in(const struct sched_decision *d, size_t n)
{
    int k = 0;
    for (size_t i = 0; i < n; i++)
        k += d[i].kind == SCHED_D_SIGNAL && d[i].cause == SCHED_STOP_PREEMPT;
    return k;
}

/* One event of kind ev at `now` (untimed set-up is none: the event's call is timed). */
static void live_event_apply(struct sched *s, enum live_event ev, int i, int64_t now, size_t *slot)
{
    struct sched_error err;
    char name[SCHED_NAME_MAX];
    switch (ev) {
    case EV_JOB_END: {
        struct sched_job_view v;
        size_t slots = sched_job_slots(s);
        while (*slot < slots && (sched_job_at(s, *slot, &v) || v.state != SCHED_RUNNING))
            (*slot)++;
        if (*slot < slots && sched_job_ended(s, v.id, SCHED_EXIT_CODE, 0, now, &err))
            die("ended", &err);
        break;
    }
    case EV_POLICY_NOOP: {
        struct sched_policy same = *sched_get_policy(s);
        if (sched_set_policy(s, &same, &err))
            die("policy", &err);
        break;
    }
    case EV_RELABEL: {
        struct sched_label l[2];
        memset(l, 0, sizeof(l));
        snprintf(l[0].key, SCHED_NAME_MAX, "zone");
        snprintf(l[0].value, SCHED_NAME_MAX, "%c", 'a' + (i + 1) % 4);
        snprintf(name, sizeof(name), "gpu%05d", (i * 7919) % 10000 / 10 * 10); /* not reserved */
        if (sched_node_set_labels(s, name, l, 1, &err))
            die("labels", &err);
        break;
    }
    case EV_DRAIN:
        snprintf(name, sizeof(name), "gpu%05d", (i * 104729) % 10000);
        if (sched_node_set_state(s, name, SCHED_NODE_DRAINING, now, &err))
            die("drain", &err);
        break;
    case EV_GUARANTEE: {
        struct sched_project_view pv;
        size_t p = (size_t)(i * 37) % sched_project_count(s);
        if (sched_project_get(s, p, &pv))
            break;
        pv.spec.guarantee_gpus = pv.spec.guarantee_gpus > 64 ? 32 : 256;
        if (sched_project_upsert(s, &pv.spec, &err))
            die("project", &err);
        break;
    }
    case EV_LIMIT: { /* a project's GPU limit set, or lifted */
        struct sched_project_view pv;
        size_t p = (size_t)(i * 53 + 1) % sched_project_count(s);
        if (sched_project_get(s, p, &pv))
            break;
        pv.spec.gpu_limit = pv.spec.gpu_limit < 0 ? 128 : -1;
        if (sched_project_upsert(s, &pv.spec, &err))
            die("project", &err);
        break;
    }
    case EV_SELSET:
        submit_new_selset(s, i, now);
        break;
    default: /* EV_BOOST */
        snprintf(name, sizeof(name), "proj%03d", (i * 13) % 200);
        if (sched_project_boost(s, name, 1, now + HOUR, now, &err))
            die("boost", &err);
        break;
    }
}

/* Every event, or with --event the one named and the job end it is compared with. */
static bool live_event_wanted(enum live_event e)
{
    return !live_only || e == EV_JOB_END || !strcmp(live_names[e], live_only);
}

/* `pending` jobs wait on a full cluster of `nodes`, victims past min_runtime; with
   `starving`, every tier starves after 10 min and the queue is old enough. Each round
   times every event once, in turn, each with the cycle that follows it. */
static void case_live(const char *name, int nodes, int pending, bool starving, int reps)
{
    if (reps_wanted > 0)
        reps = reps_wanted;
    struct sched_policy p;
    sched_policy_defaults(&p);
    p.max_starts_per_cycle = 0;
    if (starving)
        for (int t = 0; t < p.ntiers; t++)
            p.tiers[t].starve_after_ms = 10 * MIN;
    bench_policy = &p;
    struct sched *s = build_cluster(nodes, 200);
    bench_policy = NULL;
    submit_jobs(s, pending, 200, T0);
    size_t n;
    int64_t now = T0 + 1000;
    const struct sched_decision *d = sched_cycle(s, now, SCHED_CYCLE_REFRESH, &n, NULL);
    confirm_starts(s, d, n, now);
    struct sched_totals tot;
    sched_totals_get(s, &tot);
    if ((int)tot.jobs_by_state[SCHED_PENDING] < pending)
        submit_jobs(s, pending - (int)tot.jobs_by_state[SCHED_PENDING], 200, now);
    now += 15 * MIN; /* victims past min_runtime, jobs starving */
    d = sched_cycle(s, now, SCHED_CYCLE_REFRESH, &n, NULL);
    confirm_starts(s, d, n, now);
    /* settle: the preemption wave the aged state starts (256 a cycle) is over before the
       events are timed, so each event's cycle shows its own cost */
    struct sched_cycle_stats wave;
    for (int k = 0; k < 400; k++) {
        now += 1000;
        d = sched_cycle(s, now, SCHED_CYCLE_INCREMENTAL, &n, &wave);
        confirm_starts(s, d, n, now);
        if (wave.preempted == 0)
            break;
    }
    double *t[EV_N];
    int preempted[EV_N] = {0};
    for (int e = 0; e < EV_N; e++)
        t[e] = calloc(reps, sizeof(double));
    size_t slot = 0;
    struct sched_cycle_stats st[EV_N];
    for (int i = 0; i < reps; i++) {
        for (int e = 0; e < EV_N; e++) {
            if (!live_event_wanted((enum live_event)e))
                continue;
            now += 10;
            double a = now_ms();
            live_event_apply(s, (enum live_event)e, i, now, &slot);
            d = sched_cycle(s, now, SCHED_CYCLE_INCREMENTAL, &n, &st[e]);
            t[e][i] = now_ms() - a;
            preempted[e] += preemptions_in(d, n);
            confirm_starts(s, d, n, now);
        }
    }
    sched_totals_get(s, &tot);
    double base = median(t[EV_JOB_END], reps);
    for (int e = 0; e < EV_N; e++) {
        if (!live_event_wanted((enum live_event)e)) {
            free(t[e]);
            continue;
        }
        double m = median(t[e], reps);
        printf("%-16s %-12s pending=%-7zu nodes=%-6d reps=%-3d median=%9.3f ms  (%5.1fx job_end)  "
               "preemptions=%d  last: starving served %d quiet %d, full %d\n",
               name, live_names[e], tot.jobs_by_state[SCHED_PENDING], nodes, reps, m,
               base > 0 ? m / base : 0, preempted[e], st[e].starving_served, st[e].starving_quiet,
               st[e].full);
        free(t[e]);
    }
    fflush(stdout);
    sched_destroy(s);
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    bool quick = false;
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = true;
        else if (!strcmp(argv[i], "--case") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps_wanted = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--event") && i + 1 < argc)
            live_only = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10) | 1;
        else if (!strcmp(argv[i], "--cpu"))
            timing_clock = CLOCK_THREAD_CPUTIME_ID;
        else {
            fprintf(stderr, "usage: core_bench [--quick] [--cpu] [--seed N] [--reps N] [--event E] "
                            "[--case full|"
                            "full_refresh|job_end|job_end_preempt|starving_refresh|submit|"
                            "scale_jobs|scale_nodes|live|live_starving]\n");
            return 2;
        }
    }
    rng_state = seed;
#define RUN(c) (!only || !strcmp(only, c))
    if (quick) {
        case_full("full", 1000, 10000, 3);
        case_steady(1000, 10000, 50, false, true, false, 0);
        return 0;
    }
    if (RUN("full"))
        case_full("full", 10000, 100000, 5);
    if (RUN("full_refresh"))
        case_steady(10000, 100000, 5, true, false, false, 0);
    if (RUN("job_end"))
        case_steady(10000, 100000, 200, false, true, false, 0);
    if (RUN("job_end_preempt")) {
        /* victims 15 min old (min_runtime 10 min): every blocked job may preempt */
        case_steady(10000, 100000, 200, false, true, false, 15 * MIN);
    }
    if (RUN("starving_refresh")) {
        struct sched_policy p;
        sched_policy_defaults(&p);
        for (int t = 0; t < p.ntiers; t++)
            p.tiers[t].starve_after_ms = 10 * MIN;
        p.preemption = false; /* the refresh itself is timed, not preemption */
        p.max_starts_per_cycle = 0;
        bench_policy = &p;
        case_steady(10000, 20000, 5, true, false, false, 15 * MIN);
        bench_policy = NULL;
    }
    if (RUN("submit"))
        case_steady(10000, 100000, 200, false, false, true, 0);
    if (RUN("live"))
        case_live("live", 10000, 100000, false, 20);
    if (RUN("live_starving"))
        case_live("live_starving", 10000, 15000, true, 10);
    if (RUN("scale_jobs")) {
        case_full("scale_jobs", 10000, 10000, 5);
        case_full("scale_jobs", 10000, 100000, 3);
        case_full("scale_jobs", 10000, 1000000, 3);
    }
    if (RUN("scale_nodes")) {
        case_full("scale_nodes", 1000, 100000, 3);
        case_full("scale_nodes", 10000, 100000, 3);
    }
    return 0;
}
