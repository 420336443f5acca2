/*
 * jobs.h - listing jobs, shared by `docket queue` and `docket history`: the query
 * (GET /v1/jobs with filters, following `next` cursors) and the tables.
 */
#ifndef DOCKET_CLI_JOBS_H
#define DOCKET_CLI_JOBS_H

#include <jansson.h>
#include <stdbool.h>

#include "cli/cli.h"

struct jobs_query {
    const char *state, *project, *user, *tier, *class_name, *node, *name;
    long limit;
    bool desc;
};

/* Fetch up to q->limit jobs into *jobs (a new array). Exit status. */
int jobs_fetch(struct cli *c, const struct jobs_query *q, json_t **jobs);
void jobs_print_queue(struct cli *c, const json_t *jobs);
void jobs_print_history(struct cli *c, const json_t *jobs);
/* "8", "2x8", "-" for a job's GPUs, with its type when it asked for one. */
void jobs_gpus(const json_t *job, char *buf, size_t len);
/* "gpu01,gpu02" from a job's allocation, "" when none. */
void jobs_nodelist(const json_t *job, char *buf, size_t len);

#endif
