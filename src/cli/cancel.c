/*
 * cancel.c - `docket cancel JOB... [--reason TEXT]`: the shared code is in jobctl.c
 * (POST /v1/jobs/ID/cancel).
 */
#include "cli/jobs.h"

const char cmd_cancel_usage[] =
    "usage: docket cancel JOB... [--reason TEXT] [--json]\n"
    "\n"
    "Cancel jobs. A pending job ends at once; a running one gets its signal, its\n"
    "grace, then is killed (state STOPPING until then).\n";

int cmd_cancel(struct cli *c, int argc, char **argv)
{
    return jobs_action_main(c, argc, argv, "cancel", "cancelled");
}
