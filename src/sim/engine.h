/*
 * engine.h - the discrete-event simulation: a virtual clock in milliseconds drives the
 * real scheduling core (core/sched.h) with the rows of a trace, and records what happened
 * to every job plus utilisation and queue length over time. Design: docs/sim.md.
 *
 * Deterministic: no wall clock, no unseeded randomness; events at the same time are
 * handled in the order they were created. The same inputs give the same result.
 *
 * Ownership: sim_run returns a heap struct sim_result the caller frees with
 * sim_result_destroy. It keeps copies of everything it needs (names, policy).
 */
#ifndef DOCKET_SIM_ENGINE_H
#define DOCKET_SIM_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sched.h"
#include "sim/config.h"
#include "sim/trace.h"

struct sim_options {
    const char *trace_path; /* also the name in messages when rows are given */
    enum trace_format format;
    const struct trace_row *rows; /* not NULL: replay these (a site's history) */
    size_t nrows;
    double arrival_scale; /* submit time x scale; 0.5 doubles the offered load */
    long limit;           /* at most this many rows; 0 = all */
    int64_t start_at_ms;  /* rows submitted before this (trace time, before arrival_scale)
                             are not replayed: a window past a trace's ramp-up */
    uint64_t seed;
    double node_failure_rate;  /* failures per node per day; 0 = none */
    int64_t repair_ms;         /* a failed node comes back after this long */
    int64_t sample_ms;         /* width of a time-series bucket */
    int64_t cycle_interval_ms; /* 0: a cycle at every event time; else at most this often */
    bool skip_bad_rows;        /* report bad rows and go on (else stop at the first) */
    int max_errors_shown;      /* bad rows / rejections printed to stderr */
    bool progress;             /* progress line on stderr (the caller checks for a TTY) */
};

void sim_options_defaults(struct sim_options *o);

/* Final state of a job in the simulation. */
enum sim_job_end {
    SIM_END_NONE, /* never finished: still pending or running when it stopped */
    SIM_END_COMPLETED,
    SIM_END_FAILED,
    SIM_END_TIMEOUT,
    SIM_END_PREEMPTED, /* preempted and not requeueable */
    SIM_END_NODE_FAIL,
    SIM_END_CANCELLED,
    SIM_END_REJECTED, /* the core refused the submission */
};

const char *sim_job_end_name(enum sim_job_end e);

struct sim_job_rec {
    int64_t submit_ms;
    int64_t runtime_ms;
    int64_t limit_ms;        /* the time limit given to the core (0 = class default) */
    int64_t first_start_ms;  /* -1 never started */
    int64_t start_ms;        /* start of the current or last run */
    int64_t end_ms;          /* -1 not ended */
    int64_t saved_ms;        /* work kept across runs (checkpoints) */
    int64_t run_saved_ms;    /* saved_ms when the current run started */
    int64_t lost_ms;         /* run time lost to preemption and node failures */
    int64_t lost_preempt_ms; /* the part of lost_ms lost to preemption */
    int64_t ckpt_ms;         /* declared checkpoint interval, 0 none */
    uint32_t id_off;         /* trace job id in the result's id arena */
    uint32_t gen;            /* bumps when a run starts or stops: stale events are ignored */
    int32_t gpus;            /* total over its nodes */
    int32_t cpus;            /* total over its nodes */
    uint16_t project;        /* index into sim_result.projects */
    uint8_t tier;            /* index into the policy's tiers */
    uint8_t end;             /* enum sim_job_end */
    uint16_t preempts;
    uint16_t core;      /* which core (partition) holds it: docs/sim.md "Baselines" */
    uint8_t stop_cause; /* enum sched_stop_cause while signalled */
    bool running;
    bool failed_in_trace;
};

struct sim_project_stat {
    char name[SCHED_NAME_MAX];
    double guarantee_gpus;
    int64_t gpu_ms; /* GPU time used */
};

struct sim_series {
    int64_t bucket_ms;
    size_t n;
    double *busy_gpu_ms; /* integral of busy GPUs over each bucket */
    double *pending_ms;  /* integral of pending jobs over each bucket */
    double *busy_cpu_ms; /* integral of busy CPUs over each bucket */
};

/* What the trace's rows became: every row the simulation did not take as it is is
 * counted here with its reason (docs/sim.md "What happens to each row"). */
struct sim_row_counts {
    long read;         /* rows the reader returned (bad rows are in sim_result.bad_rows) */
    long before_start; /* submitted before --start-at: not replayed (not in `read`) */
    long never_ran;    /* skipped: no runtime, pending, or cancelled after 0 s */
    long frac_rounded; /* fractional GPU/CPU request rounded (--fractional round-*) */
    long frac_skipped; /* fractional request skipped (--fractional skip) */
    long cpu_jobs;     /* CPU-only rows run as CPU jobs */
    long cpu_as_units; /* CPU-only rows turned into GPU units (cpu_unit_cores set) */
    long no_request;   /* neither GPUs nor CPUs given: run as a 1-CPU job */
    long limit_raised; /* time limit at or below the recorded runtime, raised past it */
    long over_cap;     /* runtime above its class's max_limit (over_cap decides) */
    long over_cap_skipped;
};

struct sim_result {
    char policy_name[64];
    struct sched_policy policy;
    int64_t starve_bound_ms[SCHED_MAX_TIERS]; /* "starved" is counted against these */
    int partitions;                           /* cores the run used (1 = one shared queue) */
    long total_gpus, total_nodes, total_cpus;
    struct sim_row_counts rows;
    int64_t busy_cpu_ms_total;
    struct sim_job_rec *jobs;
    size_t njobs;
    char *ids; /* NUL-separated trace ids */
    size_t ids_len;
    struct sim_project_stat *projects;
    int nprojects;
    struct sim_series series;
    int64_t end_ms; /* virtual time when the run stopped */
    int64_t busy_gpu_ms_total;
    /* the last submission, and the busy totals up to it (the window while jobs arrive) */
    int64_t arrivals_end_ms;
    int64_t busy_gpu_ms_arrivals, busy_cpu_ms_arrivals;
    long bad_rows, rejected, unfinished;
    long preemptions, requeues, node_failures, timeouts;
    double lost_gpu_ms; /* to preemption */
    double lost_node_fail_gpu_ms;
    uint64_t cycles;
    /* topology (nodes labelled switch=NAME: docs/sim.md "Topology"): starts of gangs, those
       that spanned more switches than the fewest that could hold them, and the switches
       spanned beyond that, summed */
    bool topology;
    long gang_starts, gangs_spread, extra_switches;
};

/* Run one simulation. Returns NULL with a message in err on a fatal error (unreadable
 * trace, a bad row without skip_bad_rows, the core refusing the policy or a node). */
struct sim_result *sim_run(const struct sim_options *opt, const struct sim_cluster *cluster,
                           const struct sim_policy *policy, const struct sim_mapping *map,
                           char *err, size_t errlen);
void sim_result_destroy(struct sim_result *r);

static inline const char *sim_job_id(const struct sim_result *r, const struct sim_job_rec *j)
{
    return r->ids + j->id_off;
}

#endif
