/*
 * table.h - the comparison table of docket-sim: every run (policy) against every metric,
 * per tier and for the whole cluster, on the same rows. The terminal page, the CSV, the
 * HTML table, the JSON "comparison" and `docket-sim compare` all print this one table, so
 * they always show the same numbers. Definitions: docs/sim.md "Reports".
 *
 * A value that does not exist (Jain's index where no project has a guarantee, a tier a
 * policy does not have) is NAN and prints as "n/a", never as 0.
 *
 * Ownership: sim_table_build allocates the rows; sim_table_release frees them.
 */
#ifndef DOCKET_SIM_TABLE_H
#define DOCKET_SIM_TABLE_H

#include <stddef.h>

#include "sim/report.h"

enum { SIM_TABLE_MAX_RUNS = 16 };

enum sim_cell_kind {
    SIM_CELL_DURATION, /* seconds, printed "1h30m" */
    SIM_CELL_COUNT,
    SIM_CELL_REAL2, /* two decimals */
    SIM_CELL_PERCENT,
    SIM_CELL_HOURS, /* one decimal */
    SIM_CELL_INDEX, /* three decimals (Jain) */
};

struct sim_table_row {
    char group[80];  /* "all", "tier high", "cluster" */
    char metric[48]; /* "wait p95" */
    char key[32];    /* "wait_p95_s": stable, for CSV and JSON */
    enum sim_cell_kind kind;
    int better;    /* -1 lower is better, +1 higher is better, 0 neither */
    bool headline; /* counts in the verdict sentence */
    double v[SIM_TABLE_MAX_RUNS];
};

struct sim_table {
    int nruns;
    char runs[SIM_TABLE_MAX_RUNS][64]; /* policy names, in run order */
    struct sim_table_row *rows;
    size_t nrows, cap;
};

/* Build the table of n runs (n <= SIM_TABLE_MAX_RUNS). 0 or -ENOMEM. */
int sim_table_build(const struct sim_run_report *runs, int n, struct sim_table *t);
/* Add a row by hand (used when reading a saved table back). 0 or -ENOMEM. */
int sim_table_add(struct sim_table *t, const struct sim_table_row *row);
void sim_table_release(struct sim_table *t);

/* A cell as text: "n/a" for NAN; `raw` gives plain numbers (seconds, fractions) for CSV. */
void sim_cell_format(double v, enum sim_cell_kind kind, bool raw, char *buf, size_t len);
const char *sim_cell_kind_name(enum sim_cell_kind k);
int sim_cell_kind_parse(const char *s, enum sim_cell_kind *out);

/* The run that is best on a row, or -1 (no direction, no values, or a tie: another run
 * within 1 % of it). */
int sim_table_best(const struct sim_table *t, const struct sim_table_row *row);

/* One sentence saying which policy wins on which headline metric. */
void sim_table_verdict(const struct sim_table *t, char *buf, size_t len);

/* The table as aligned text (colour when asked), as CSV (group,metric,key,<runs...>). */
int sim_table_text(FILE *f, const struct sim_table *t, bool color);
int sim_table_csv(FILE *f, const struct sim_table *t);

#endif
