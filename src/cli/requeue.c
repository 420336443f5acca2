/*
 * requeue.c - `docket requeue JOB... [--reason TEXT]`: the shared code is in jobctl.c
 * (POST /v1/jobs/ID/requeue).
 */
#include "cli/jobs.h"

const char cmd_requeue_usage[] =
    "usage: docket requeue JOB... [--reason TEXT] [--json]\n"
    "\n"
    "Put jobs back in the queue: a running job is stopped (signal, grace) and\n"
    "returns to PENDING with the same id.\n";

int cmd_requeue(struct cli *c, int argc, char **argv)
{
    return jobs_action_main(c, argc, argv, "requeue", "requeued");
}
