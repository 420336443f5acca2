/*
 * release.c - `docket release JOB... [--reason TEXT]`: the shared code is in jobctl.c
 * (POST /v1/jobs/ID/release).
 */
#include "cli/jobs.h"

const char cmd_release_usage[] = "usage: docket release JOB... [--reason TEXT] [--json]\n"
                                 "\n"
                                 "Release held jobs: they compete for resources again.\n";

int cmd_release(struct cli *c, int argc, char **argv)
{
    return jobs_action_main(c, argc, argv, "release", "released");
}
