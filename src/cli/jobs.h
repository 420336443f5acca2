/*
 * jobs.h - what the job verbs share: listing jobs for `docket queue`, `history` and
 * `top` (GET /v1/jobs with filters, following `next` cursors, and the tables), and the
 * action of `cancel`, `hold`, `release` and `requeue`.
 */
#ifndef DOCKET_CLI_JOBS_H
#define DOCKET_CLI_JOBS_H

#include <jansson.h>
#include <stdbool.h>

#include "cli/cli.h"

struct jobs_query {
    const char *state, *project, *user, *tier, *class_name, *node, *name, *template_ref;
    const char *fields; /* the members each row needs ("id,state,..."), NULL: every one */
    long limit;
    bool desc;
};

/* The whole of `docket queue` (history false) and `docket history` (true): options,
 * query, table or JSON. Exit status. */
int jobs_list_main(struct cli *c, int argc, char **argv, bool history);
/* Fetch up to q->limit jobs into *jobs (a new array). Exit status. */
int jobs_fetch(struct cli *c, const struct jobs_query *q, json_t **jobs);
void jobs_print_queue(struct cli *c, const json_t *jobs);
/* The same with only the first `show` rows, the counts still over every job given. */
void jobs_print_queue_head(struct cli *c, const json_t *jobs, long show);
/* A new array of the same jobs in the order people read a queue: running ones by id, then
 * pending ones by tier (highest first, from GET /v1/tiers) and submission, then held and
 * finished ones. Fair-share is not known here: `explain` gives exact positions. When the
 * tiers cannot be read, the same order as given (a new reference). */
json_t *jobs_queue_order(struct cli *c, json_t *jobs);
void jobs_print_history(struct cli *c, const json_t *jobs);
/* "8", "2x8", "-" for a job's GPUs, with its type when it asked for one. */
void jobs_gpus(const json_t *job, char *buf, size_t len);
/* "gpu01,gpu02" from a job's allocation, "" when none. */
void jobs_nodelist(const json_t *job, char *buf, size_t len);
/* POST /v1/jobs/ID/ACTION for every JOB argument ("cancelled job 12 (now CANCELLED)").
 * Exit status: 1 when any job was refused (the others are done). */
int jobs_action_main(struct cli *c, int argc, char **argv, const char *action, const char *done);

/* `docket update` and scontrol update (update.c): PATCH /v1/jobs/ID with `body` for each
 * id of `ids` ("updated job 12 (PENDING)" unless quiet, as scontrol prints nothing); exit
 * status 1 when any was refused. A time limit into the body (Slurm's forms, a bare number
 * in minutes when slurm, else docket's durations too): 0, -ERANGE (unlimited), -EINVAL.
 * A dependency in sbatch's syntax resolved into the body's deps ("" drops them). */
int update_jobs(struct cli *c, const json_t *ids, const json_t *body, bool quiet);
int update_time_limit(json_t *body, const char *v, bool slurm);
int update_dependency(struct cli *c, json_t *body, const char *v, int64_t self);

#endif
