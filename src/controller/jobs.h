/*
 * jobs.h - what jobs.c owns: the job endpoints (submit, list, show, actions, events,
 * explain, forecast), big arrays written in slices, and the JOB object of the API.
 */
#ifndef DOCKET_CONTROLLER_JOBS_H
#define DOCKET_CONTROLLER_JOBS_H

#include <jansson.h>

struct ctl;
struct ctl_req;
struct store_job;

/* Big arrays (docs/controller.md "Big submissions"): an array of more than
 * CTL_ARRAY_SLICE_TASKS tasks is written at most that many tasks (or about
 * CTL_ARRAY_SLICE_US of loop) a turn, and added to the core as many a turn. */
#define CTL_ARRAY_SLICE_TASKS 256
#define CTL_ARRAY_SLICE_US    8000

void h_jobs_submit(struct ctl_req *r);
void h_jobs_list(struct ctl_req *r);
void h_job_show(struct ctl_req *r);
void h_job_action(struct ctl_req *r); /* cancel|hold|release|requeue in arg[1] */
void h_job_events(struct ctl_req *r);
void h_job_explain(struct ctl_req *r);
void h_forecast(struct ctl_req *r);
/* At shutdown, the big arrays still being written are dropped (their marker stays: the
 * next start rolls them back) and their clients answered 503. */
void ctl_arrays_stop_all(struct ctl *c);
json_t *ctl_job_json(struct ctl *c, const struct store_job *j);
/* The same with the job's spec already parsed (borrowed). */
json_t *ctl_job_json_spec(struct ctl *c, const struct store_job *j, const json_t *spec);
/* The JOB object as the caller of r may see it: env values hidden unless it is the
 * owner, a lead of the job's project or an admin (ctl_authz_sees_env). */
json_t *ctl_job_json_for(struct ctl_req *r, const struct store_job *j);
/* Replace every value of the object `env` (in place) by "<hidden>". */
void ctl_env_redact(json_t *env);

#endif
