/*
 * hold.c - `docket hold JOB... [--reason TEXT]`: the shared code is in jobctl.c
 * (POST /v1/jobs/ID/hold).
 */
#include "cli/jobs.h"

const char cmd_hold_usage[] =
    "usage: docket hold JOB... [--reason TEXT] [--json]\n"
    "\n"
    "Hold pending jobs: they stay in the queue but never start until released.\n";

int cmd_hold(struct cli *c, int argc, char **argv)
{
    return jobs_action_main(c, argc, argv, "hold", "held");
}
