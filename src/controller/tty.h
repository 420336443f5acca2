/*
 * tty.h - what tty.c owns: the terminal streams of interactive sessions
 * (docs/interactive.md). A person's connection (GET /v1/jobs/ID/tty) and the session's
 * node's connection (GET /v1/agent/jobs/ID/tty) both ask for `Upgrade: docket-tty`; the
 * node's waits, parked, until a person comes, then both are answered 101 and joined, and
 * docketd passes the frames between them as they are.
 */
#ifndef DOCKET_CONTROLLER_TTY_H
#define DOCKET_CONTROLLER_TTY_H

struct ctl;
struct ctl_req;

void h_job_tty(struct ctl_req *r);
void h_agent_tty(struct ctl_req *r);
/* Every parked and joined terminal stream closed (shutdown). */
void ctl_tty_stop_all(struct ctl *c);

#endif
