/*
 * report.h - docket-sim's outputs: the terminal summary (aligned tables; colour only
 * when asked, i.e. on a TTY without NO_COLOR), the side-by-side comparison of several
 * runs, the JSON report, the per-job CSV and the self-contained HTML report (inline SVG
 * charts drawn here, no external JS or CSS). Formats: docs/sim.md.
 *
 * Every writer is deterministic: the same results give the same bytes (no wall clock,
 * fixed number formats). Writers return 0 or -EIO when the stream failed.
 */
#ifndef DOCKET_SIM_REPORT_H
#define DOCKET_SIM_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/engine.h"
#include "sim/stats.h"

/* One run: its result and summary, plus the inputs named in the headers. */
struct sim_run_report {
    const struct sim_result *r;
    const struct sim_summary *s;
};

struct sim_report_meta {
    const char *trace; /* path as given */
    const char *cluster;
    double arrival_scale, cluster_scale;
    long limit;
    int64_t start_at_ms; /* --start-at (0: from the trace's first row) */
    bool pool;
    unsigned long long seed;
    double node_failure_rate;
    const char *fractional; /* the mapping's rules for rows, as named in docs/sim.md */
    const char *over_cap;
};

int sim_report_text(FILE *f, const struct sim_report_meta *meta, const struct sim_run_report *run,
                    bool color);
int sim_report_compare(FILE *f, const struct sim_report_meta *meta,
                       const struct sim_run_report *runs, int n, bool color);
int sim_report_json(FILE *f, const struct sim_report_meta *meta, const struct sim_run_report *runs,
                    int n);
/* One row per job: id, project, tier, state, times... `run` names the policy column. */
int sim_report_jobs_csv(FILE *f, const struct sim_run_report *runs, int n);
/* What the trace's rows became (counts with reasons), one line; "" parts left out. */
void sim_report_rows(FILE *f, const struct sim_report_meta *meta, const struct sim_result *r,
                     bool color);
/* The comparison table as CSV (group,metric,key,<one column per policy>). */
int sim_report_table_csv(FILE *f, const struct sim_run_report *runs, int n);
int sim_report_html(FILE *f, const struct sim_report_meta *meta, const struct sim_run_report *runs,
                    int n);

/* The table of a --sweep (sweep.h) as its own page: the inputs and the table. */
struct sim_table;
/* The sweep as JSON: {"input", "sweep": {"points": [labels], "table": comparison}}. */
int sim_report_sweep_json(FILE *f, const struct sim_report_meta *meta, const char *const *points,
                          int npoints, const struct sim_table *sweep);
int sim_report_sweep_html(FILE *f, const struct sim_report_meta *meta,
                          const struct sim_table *sweep, int points);
/* One CSV field, quoted (RFC 4180) when it holds a comma, a quote or a line break: the one
 * CSV writer of the reports. */
void sim_csv_field(FILE *f, const char *s);

#endif
