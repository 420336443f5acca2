/*
 * sweep.h - docket-sim --sweep: a grid of load and setup values (arrival scale, cluster
 * scale, checkpoint interval), each point run for every chosen policy, and one table of
 * the headline metrics of every point so an operator sees where a policy breaks.
 * Format and rows: docs/sim.md "Sweeps".
 *
 * The grid is the product of the axes in the order given (the last axis varies fastest).
 * Values are checked when parsed; an error names --sweep and the value at fault.
 *
 * Ownership: struct sim_sweep is a plain value (no heap); the table rows a point adds
 * belong to the caller's struct sim_table (sim_table_release).
 */
#ifndef DOCKET_SIM_SWEEP_H
#define DOCKET_SIM_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "sim/report.h"
#include "sim/table.h"

enum { SIM_SWEEP_MAX_VALUES = 16, SIM_SWEEP_MAX_POINTS = 64 };

enum sim_sweep_kind { SIM_SWEEP_ARRIVAL, SIM_SWEEP_CLUSTER, SIM_SWEEP_CHECKPOINT, SIM_SWEEP_KINDS };

struct sim_sweep_axis {
    enum sim_sweep_kind kind;
    int n;
    double v[SIM_SWEEP_MAX_VALUES];      /* scales; checkpoint: milliseconds (0 = none) */
    char text[SIM_SWEEP_MAX_VALUES][24]; /* each value as given */
};

struct sim_sweep {
    struct sim_sweep_axis axes[SIM_SWEEP_KINDS];
    int naxes;
};

/* The settings of one point: -1 where no axis sets it (keep the run's own value). */
struct sim_sweep_point {
    double arrival_scale, cluster_scale;
    int64_t checkpoint_ms;
    char label[80]; /* "arrival-scale=0.5 checkpoint=1h" */
};

/* Add the axis of one --sweep argument ("arrival-scale=0.5,0.7,1", "cluster-scale=0.5,1",
 * "checkpoint=none,30m,1h"). 0, or -EINVAL with "--sweep: ..." in err (unknown name,
 * bad or repeated value, an axis given twice, too many values or points). */
int sim_sweep_parse(struct sim_sweep *sw, const char *arg, char *err, size_t errlen);
/* Number of points of the grid (1 with no axis). */
int sim_sweep_count(const struct sim_sweep *sw);
void sim_sweep_point(const struct sim_sweep *sw, int i, struct sim_sweep_point *out);
/* Add the point's rows to `acc` (its runs named on the first call): from the point's
 * comparison table, all jobs' wait mean and p95, bounded slowdown, jobs past the
 * starvation bound and unfinished; each tier's wait p95 and past the bound; utilisation
 * and preemptions; each group named "<label> · <group>". 0 or -ENOMEM. */
int sim_sweep_add(struct sim_table *acc, const char *label, const struct sim_run_report *runs,
                  int n);

#endif
