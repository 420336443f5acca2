/*
 * stats.h - the numbers of a simulation: waits (p50/p95/p99/max), bounded slowdown,
 * completions, starvation, per tier and per project; shares against guarantees; Jain's
 * fairness index. Pure functions of a struct sim_result. Definitions: docs/sim.md.
 *
 * Ownership: sim_summary_compute allocates the arrays in the summary; free them with
 * sim_summary_release.
 */
#ifndef DOCKET_SIM_STATS_H
#define DOCKET_SIM_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "sim/engine.h"

/* Bounded slowdown: (wait + runtime) / max(runtime, SIM_SLOWDOWN_BOUND_MS), at least 1. */
#define SIM_SLOWDOWN_BOUND_MS 10000

struct sim_group_stats {
    char name[SCHED_NAME_MAX];
    long jobs; /* submitted and accepted by the core */
    long started, completed, timeouts, failed, unfinished, rejected;
    long preempted_jobs; /* jobs preempted at least once */
    long starved;        /* waited longer than their tier's starve_after */
    double wait_p50_s, wait_p95_s, wait_p99_s, wait_max_s, wait_mean_s; /* to first start */
    /* total delay: end - submission - runtime, over the jobs that did all their work
     * (completed, or failed at the end of their recorded runtime): requeues count */
    long delayed_jobs;
    double delay_p50_s, delay_p95_s, delay_max_s, delay_mean_s;
    double lost_preempt_gpu_h; /* GPU-hours of work lost to preemption */
    double lost_timeout_gpu_h; /* GPU-hours of the runs a time limit killed */
    double slowdown_mean, slowdown_p95;
    double gpu_hours; /* GPU time used */
    double guarantee_gpus;
    double used_share;      /* this group's GPU time / all GPU time */
    double guarantee_share; /* guarantee / all guarantees (0 when none) */
};

struct sim_summary {
    struct sim_group_stats all;
    struct sim_group_stats *tiers; /* one per policy tier, in policy order */
    int ntiers;
    struct sim_group_stats *projects; /* one per project, in first-seen order */
    int nprojects;
    double utilisation;     /* busy GPU time / (GPUs x makespan) */
    double cpu_utilisation; /* busy CPU time / (CPUs x makespan) */
    /* the same from the first to the last submission (while jobs arrive: a finite trace
       ends in a tail that no arrival rate fills); -1 when that window is empty */
    double utilisation_arrivals, cpu_utilisation_arrivals;
    double arrivals_h;     /* that window, first to last submission */
    double makespan_h;     /* first submission to last end, hours */
    double jain_share;     /* over projects with a guarantee: used/guaranteed; NAN if none */
    double jain_slowdown;  /* over projects with started jobs (2 or more, else NAN) */
    double lost_gpu_hours; /* to preemption */
    double lost_node_fail_gpu_hours;
};

/* Nearest-rank percentile of sorted values (q in [0,1]); 0 for n == 0. */
double sim_percentile(const double *sorted, size_t n, double q);
/* Jain's index (sum x)^2 / (n sum x^2): 1 when all equal; 0 for n == 0 or all zero. */
double sim_jain(const double *x, size_t n);
double sim_bounded_slowdown(int64_t wait_ms, int64_t runtime_ms);

/* 0 or -ENOMEM. */
int sim_summary_compute(const struct sim_result *r, struct sim_summary *out);
void sim_summary_release(struct sim_summary *s);

#endif
