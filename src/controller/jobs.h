/*
 * jobs.h - what jobs.c owns: the job endpoints (submit, list, show, actions, events,
 * explain, forecast), big arrays written in slices, and the JOB object of the API.
 */
#ifndef DOCKET_CONTROLLER_JOBS_H
#define DOCKET_CONTROLLER_JOBS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
void h_job_action(struct ctl_req *r); /* cancel|hold|release|requeue|signal in arg[1] */
void h_job_events(struct ctl_req *r);
void h_job_explain(struct ctl_req *r);
void h_forecast(struct ctl_req *r);
/* At shutdown, the big arrays still being written are dropped (their marker stays: the
 * next start rolls them back) and their clients answered 503. */
void ctl_arrays_stop_all(struct ctl *c);
/* Is a big array of `user` with Idempotency-Key `key` being written now (its key is
 * stored with its last slice)? */
bool ctl_array_key_writing(struct ctl *c, const char *user, const char *key);
json_t *ctl_job_json(struct ctl *c, const struct store_job *j);
/* The same with the job's spec already parsed (borrowed). */
json_t *ctl_job_json_spec(struct ctl *c, const struct store_job *j, const json_t *spec);
/* The JOB object as the caller of r may see it: script and command null, env values
 * hidden and "hidden": true unless it is the owner, a lead of the job's project or an
 * admin (ctl_authz_sees_job_private). */
json_t *ctl_job_json_for(struct ctl_req *r, const struct store_job *j);
/* Hide, in a JOB object or a job spec, what only those may see (in place). */
void ctl_job_redact_private(json_t *o);
/* Replace every value of the object `env` (in place) by "<hidden>". */
void ctl_env_redact(json_t *env);

/* Submissions docketd makes itself (services.c's replicas). ctl_jobspec_resolve fills a
 * spec's defaults as a submission of r would, and checks that r's caller may submit it
 * (it answers r when not: -errno). ctl_job_submit_resolved submits a spec resolved so,
 * inside the caller's transaction, in `actor`'s name (the audit entry's): *id, or -errno
 * with err saying why (the core refused, or the store failed: nothing is left of it). */
struct proto_jobspec;
int ctl_jobspec_resolve(struct ctl_req *r, struct proto_jobspec *ps);
int ctl_job_submit_resolved(struct ctl *c, const char *actor, struct proto_jobspec *ps, int64_t now,
                            uint64_t *id, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Write HELD for a job the core holds already (sched_job_hold), with an event in actor's
 * name; release a held job as docketd (an event too), -errno when the core refuses
 * (nothing changed). A failed write stops docketd (ctl_store_diverged), as the core
 * changed already. */
int ctl_job_write_held(struct ctl *c, uint64_t id, const char *actor, const char *reason);
int ctl_job_release_as(struct ctl *c, uint64_t id, const char *actor, const char *reason);

/* For the job's other endpoints (jobupdate.c): the job of the path's id, or 404 answered
 * (-ENOENT); a spec's dependencies on jobs that ended settled (met ones dropped, never
 * met ones kept), or 400 answered; the core's columns of a row written from a spec. */
int ctl_job_arg(struct ctl_req *r, struct store_job *row);
int ctl_job_resolve_deps(struct ctl_req *r, struct proto_jobspec *ps);
void ctl_job_fill_core(struct store_job *row, const struct proto_jobspec *ps, int array_limit);
#endif
