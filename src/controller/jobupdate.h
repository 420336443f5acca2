/*
 * jobupdate.h - what jobupdate.c owns: PATCH /v1/jobs/ID, a submitted job's request
 * changed (scontrol update, docket update).
 */
#ifndef DOCKET_CONTROLLER_JOBUPDATE_H
#define DOCKET_CONTROLLER_JOBUPDATE_H

struct ctl_req;

/* The body names what changes: name, time_limit, deps, partition, nodes, constraint,
 * comment (a pending or held job), time_limit only and only down (a running one), and an
 * optional reason for the audit trail. 200 with the JOB; 400 naming a bad field; 403 a
 * raise of the time limit by someone not an admin; 409 a job past changing. */
void h_job_update(struct ctl_req *r);

#endif
