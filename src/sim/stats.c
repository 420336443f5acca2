/*
 * stats.c - summary statistics of a simulation run (see stats.h, docs/sim.md).
 *
 * Waits are measured from submission to the first start; the total delay (end -
 * submission - runtime) of the jobs that did all their work shows what requeues cost. A
 * job that never started counts as unfinished and is left out of the wait percentiles.
 */
#include "sim/stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/str.h"

double sim_percentile(const double *sorted, size_t n, double q)
{
    size_t k;

    if (n == 0)
        return 0;
    k = (size_t)ceil(q * (double)n);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return sorted[k - 1];
}

double sim_jain(const double *x, size_t n)
{
    double s = 0, s2 = 0;

    for (size_t i = 0; i < n; i++) {
        s += x[i];
        s2 += x[i] * x[i];
    }
    if (n == 0 || s2 == 0)
        return 0;
    return s * s / ((double)n * s2);
}

double sim_bounded_slowdown(int64_t wait_ms, int64_t runtime_ms)
{
    double d = (double)(runtime_ms > SIM_SLOWDOWN_BOUND_MS ? runtime_ms : SIM_SLOWDOWN_BOUND_MS);
    double v = (double)(wait_ms + runtime_ms) / d;

    return v < 1 ? 1 : v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Which jobs a group holds: all, one tier, or one project. */
enum group_kind { G_ALL, G_TIER, G_PROJECT };

static bool in_group(const struct sim_job_rec *j, enum group_kind k, int idx)
{
    return k == G_ALL || (k == G_TIER && j->tier == idx) || (k == G_PROJECT && j->project == idx);
}

static void count_job(const struct sim_result *r, const struct sim_job_rec *j,
                      struct sim_group_stats *g)
{
    int64_t starve = r->starve_bound_ms[j->tier];

    if (j->end == SIM_END_REJECTED) {
        g->rejected++;
        return;
    }
    g->jobs++;
    if (j->first_start_ms >= 0)
        g->started++;
    if (j->preempts > 0)
        g->preempted_jobs++;
    switch (j->end) {
    case SIM_END_COMPLETED:
        g->completed++;
        break;
    case SIM_END_TIMEOUT:
        g->timeouts++;
        if (j->start_ms >= 0 && j->end_ms >= j->start_ms)
            g->lost_timeout_gpu_h += (double)j->gpus * (double)(j->end_ms - j->start_ms) / 3.6e6;
        break;
    case SIM_END_FAILED:
        g->failed++;
        break;
    case SIM_END_NONE:
        g->unfinished++;
        break;
    default:
        break;
    }
    g->lost_preempt_gpu_h += (double)j->gpus * (double)j->lost_preempt_ms / 3.6e6;
    if (starve > 0) {
        int64_t w =
            j->first_start_ms >= 0 ? j->first_start_ms - j->submit_ms : r->end_ms - j->submit_ms;
        if (w > starve)
            g->starved++;
    }
}

/* Did the job do all its recorded work (completed, or failed at the end of it)? Its total
 * delay is then end - submission - runtime: waits, requeues and lost work together. */
static bool did_all_work(const struct sim_job_rec *j)
{
    return j->end_ms >= 0 && j->saved_ms >= j->runtime_ms &&
           (j->end == SIM_END_COMPLETED || j->end == SIM_END_FAILED);
}

static int group_stats(const struct sim_result *r, enum group_kind k, int idx, double *waits,
                       double *slows, double *delays, struct sim_group_stats *g)
{
    size_t n = 0, nd = 0;
    double sum_w = 0, sum_s = 0, sum_d = 0;

    for (size_t i = 0; i < r->njobs; i++) {
        const struct sim_job_rec *j = &r->jobs[i];
        int64_t w;

        if (!in_group(j, k, idx))
            continue;
        count_job(r, j, g);
        if (j->end == SIM_END_REJECTED || j->first_start_ms < 0)
            continue;
        if (did_all_work(j)) {
            delays[nd] = (double)(j->end_ms - j->submit_ms - j->runtime_ms) / 1000.0;
            sum_d += delays[nd++];
        }
        w = j->first_start_ms - j->submit_ms;
        waits[n] = (double)w / 1000.0;
        /* slowdown uses the time to the end, which includes lost work and requeues */
        slows[n] = j->end_ms >= 0 ? sim_bounded_slowdown(j->end_ms - j->submit_ms - j->runtime_ms,
                                                         j->runtime_ms)
                                  : sim_bounded_slowdown(w, j->runtime_ms);
        sum_w += waits[n];
        sum_s += slows[n];
        n++;
    }
    qsort(waits, n, sizeof(double), cmp_double);
    qsort(slows, n, sizeof(double), cmp_double);
    g->wait_p50_s = sim_percentile(waits, n, 0.50);
    g->wait_p95_s = sim_percentile(waits, n, 0.95);
    g->wait_p99_s = sim_percentile(waits, n, 0.99);
    g->wait_max_s = n ? waits[n - 1] : 0;
    g->wait_mean_s = n ? sum_w / (double)n : 0;
    g->slowdown_mean = n ? sum_s / (double)n : 0;
    g->slowdown_p95 = sim_percentile(slows, n, 0.95);
    qsort(delays, nd, sizeof(double), cmp_double);
    g->delayed_jobs = (long)nd;
    g->delay_p50_s = sim_percentile(delays, nd, 0.50);
    g->delay_p95_s = sim_percentile(delays, nd, 0.95);
    g->delay_max_s = nd ? delays[nd - 1] : 0;
    g->delay_mean_s = nd ? sum_d / (double)nd : 0;
    return 0;
}

static void shares(const struct sim_result *r, struct sim_summary *s)
{
    double total_gpu_ms = 0, total_guar = 0;

    for (int i = 0; i < r->nprojects; i++) {
        total_gpu_ms += (double)r->projects[i].gpu_ms;
        total_guar += r->projects[i].guarantee_gpus;
    }
    s->all.gpu_hours = total_gpu_ms / 3.6e6;
    s->all.guarantee_gpus = total_guar;
    for (int i = 0; i < r->nprojects; i++) {
        struct sim_group_stats *g = &s->projects[i];

        g->gpu_hours = (double)r->projects[i].gpu_ms / 3.6e6;
        g->guarantee_gpus = r->projects[i].guarantee_gpus;
        g->used_share = total_gpu_ms > 0 ? (double)r->projects[i].gpu_ms / total_gpu_ms : 0;
        g->guarantee_share = total_guar > 0 ? g->guarantee_gpus / total_guar : 0;
    }
}

static void fairness(struct sim_summary *s)
{
    double *x = calloc((size_t)s->nprojects + 1, sizeof(double));
    size_t n = 0;

    if (!x)
        return;
    for (int i = 0; i < s->nprojects; i++)
        if (s->projects[i].guarantee_share > 0)
            x[n++] = s->projects[i].used_share / s->projects[i].guarantee_share;
    /* no guarantee, no share to be fair to: undefined, printed "n/a", never 0 */
    s->jain_share = n > 0 ? sim_jain(x, n) : NAN;
    n = 0;
    for (int i = 0; i < s->nprojects; i++)
        if (s->projects[i].started > 0)
            x[n++] = s->projects[i].slowdown_mean;
    s->jain_slowdown = n > 1 ? sim_jain(x, n) : NAN;
    free(x);
}

static void tier_gpu_hours(const struct sim_result *r, struct sim_summary *s)
{
    for (size_t i = 0; i < r->njobs; i++) {
        const struct sim_job_rec *j = &r->jobs[i];

        if (j->first_start_ms < 0 || j->end == SIM_END_REJECTED)
            continue;
        /* work done plus work lost, as GPU time: what the tier consumed */
        s->tiers[j->tier].gpu_hours += (double)j->gpus * (double)(j->saved_ms + j->lost_ms) / 3.6e6;
    }
}

int sim_summary_compute(const struct sim_result *r, struct sim_summary *s)
{
    double *waits = malloc((r->njobs + 1) * sizeof(double));
    double *slows = malloc((r->njobs + 1) * sizeof(double));
    double *delays = malloc((r->njobs + 1) * sizeof(double));
    int64_t first = r->njobs ? r->jobs[0].submit_ms : 0;

    memset(s, 0, sizeof(*s));
    s->ntiers = r->policy.ntiers;
    s->nprojects = r->nprojects;
    s->tiers = calloc((size_t)s->ntiers + 1, sizeof(*s->tiers));
    s->projects = calloc((size_t)s->nprojects + 1, sizeof(*s->projects));
    if (!waits || !slows || !delays || !s->tiers || !s->projects) {
        free(waits);
        free(slows);
        free(delays);
        sim_summary_release(s);
        return -ENOMEM;
    }
    (void)str_copy(s->all.name, sizeof(s->all.name), "all");
    group_stats(r, G_ALL, 0, waits, slows, delays, &s->all);
    for (int t = 0; t < s->ntiers; t++) {
        (void)str_copy(s->tiers[t].name, SCHED_NAME_MAX, r->policy.tiers[t].name);
        group_stats(r, G_TIER, t, waits, slows, delays, &s->tiers[t]);
    }
    for (int p = 0; p < s->nprojects; p++) {
        (void)str_copy(s->projects[p].name, SCHED_NAME_MAX, r->projects[p].name);
        group_stats(r, G_PROJECT, p, waits, slows, delays, &s->projects[p]);
    }
    free(waits);
    free(slows);
    free(delays);
    shares(r, s);
    tier_gpu_hours(r, s);
    fairness(s);
    s->makespan_h = (double)(r->end_ms - first) / 3.6e6;
    if (r->total_gpus > 0 && r->end_ms > first)
        s->utilisation =
            (double)r->busy_gpu_ms_total / ((double)r->total_gpus * (double)(r->end_ms - first));
    if (r->total_cpus > 0 && r->end_ms > first)
        s->cpu_utilisation =
            (double)r->busy_cpu_ms_total / ((double)r->total_cpus * (double)(r->end_ms - first));
    int64_t window = r->arrivals_end_ms - first;
    s->arrivals_h = (double)window / 3.6e6;
    s->utilisation_arrivals = s->cpu_utilisation_arrivals = -1;
    if (r->total_gpus > 0 && window > 0)
        s->utilisation_arrivals =
            (double)r->busy_gpu_ms_arrivals / ((double)r->total_gpus * (double)window);
    if (r->total_cpus > 0 && window > 0)
        s->cpu_utilisation_arrivals =
            (double)r->busy_cpu_ms_arrivals / ((double)r->total_cpus * (double)window);
    s->lost_gpu_hours = r->lost_gpu_ms / 3.6e6;
    s->lost_node_fail_gpu_hours = r->lost_node_fail_gpu_ms / 3.6e6;
    return 0;
}

void sim_summary_release(struct sim_summary *s)
{
    free(s->tiers);
    free(s->projects);
    s->tiers = NULL;
    s->projects = NULL;
}
