/*
 * site.h - a site's own history as a workload: docket-sim --from-db reads docketd's
 * database (read-only, safe beside a live docketd) and turns what it ran into trace rows,
 * its nodes into a cluster and its stored policy and projects into a policy document, so
 * the history can be replayed under a candidate policy. docs/sim.md "Replaying the site's
 * own history". All SQL is in src/store (store_open_readonly and its read functions).
 *
 * A job becomes a row with its submission time (relative to the first one read), the
 * runtime of its last run (end - start of the run that ended it), its GPUs, CPUs, memory
 * and nodes, its project, user, tier and class, its own time limit (as "requested") and
 * its end state. Jobs that never started (cancelled in the queue) are rows without a
 * runtime, which the simulation counts as never run. Jobs not finished yet are left out
 * and counted.
 *
 * Ownership: sim_site_load fills a struct sim_site whose rows, cluster and policy document
 * are freed by sim_site_release (safe on a zeroed value).
 */
#ifndef DOCKET_SIM_SITE_H
#define DOCKET_SIM_SITE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/config.h"
#include "sim/trace.h"

struct sim_site {
    struct trace_row *rows; /* by submission time */
    size_t nrows;
    long live;     /* jobs in the window not finished yet: left out */
    long reruns;   /* jobs with more than one run: only the last run's time is replayed */
    int64_t t0_ms; /* the first submission read (Unix ms); rows count from it */
    struct sim_cluster cluster; /* one group of one node per node of the site */
    json_t *policy;             /* the stored policy document with "projects" added (owned) */
};

/* Read the database at `path`: jobs submitted in [since_ms, until_ms) (Unix ms; 0 = no
 * bound), every node, the policy and the projects. 0, or -EINVAL with the reason in err
 * (missing file, not a docketd database, another schema version, a damaged row). */
int sim_site_load(const char *path, int64_t since_ms, int64_t until_ms, struct sim_site *out,
                  char *err, size_t errlen);
void sim_site_release(struct sim_site *s);

/* Add to `p` each project of `site` that `p` does not list (a candidate policy file seldom
 * lists the site's projects). A project whose tier `p` lacks goes to `p`'s tier "normal"
 * (else its lowest), with a line on `note`. 0 or -ENOMEM. */
int sim_policy_add_projects(struct sim_policy *p, const struct sim_policy *site, FILE *note);

#endif
