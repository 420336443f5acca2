/*
 * history.h - docket-sim's own history: runs saved as their JSON report in a directory
 * (--save DIR), and `docket-sim compare A B`, which reads two saved reports back and puts
 * their comparison tables side by side with the change, so an operator can hold today's
 * policy against last month's run. Format: docs/sim.md "History".
 *
 * Only the "comparison" section of a report is read back (table.h rows); a file without
 * it is refused with a message that says what to do.
 */
#ifndef DOCKET_SIM_HISTORY_H
#define DOCKET_SIM_HISTORY_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/report.h"
#include "sim/table.h"

/* Write the JSON report of `runs` to DIR/<UTC time>-<label>.json (DIR created when
 * missing; the time is only in the name, the content stays deterministic). The path
 * written goes to `path`. 0, or -errno with a message in err. */
int sim_history_save(const char *dir, const char *label, const struct sim_report_meta *meta,
                     const struct sim_run_report *runs, int n, char *path, size_t pathlen,
                     char *err, size_t errlen);

/* Read the comparison table of a saved report (or any --json output). `inputs` gets a
 * short description of its inputs (trace, scales). 0 or -EINVAL with err filled. */
int sim_history_load(const char *path, struct sim_table *t, char *inputs, size_t inputslen,
                     char *err, size_t errlen);

/* A and B side by side: every policy of A ("A name") and of B ("B name"), plus the
 * change B - A for each policy name present in both (or, when none is, of the first of
 * each). Rows are A's; a row B lacks is n/a. 0, -EINVAL (err filled) or -EIO. */
int sim_history_compare(FILE *f, const char *a_path, const char *b_path, bool color, char *err,
                        size_t errlen);

#endif
