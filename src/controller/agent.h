/*
 * agent.h - what agent.c owns: the agent endpoints of docs/api.md (register, heartbeat,
 * events, rotate) and the node identity endpoint (replace).
 */
#ifndef DOCKET_CONTROLLER_AGENT_H
#define DOCKET_CONTROLLER_AGENT_H

#include <jansson.h>
#include <stdint.h>

struct ctl;
struct ctl_req;

/* A batch of agent events is applied at most this many events a loop turn. */
#define CTL_AGENT_EVENTS_SLICE 64

void h_agent_register(struct ctl_req *r);
void h_agent_heartbeat(struct ctl_req *r);
void h_agent_events(struct ctl_req *r);
void h_agent_rotate(struct ctl_req *r);
void h_node_replace(struct ctl_req *r);
/* Answer 503 to the event batches still being applied (their applied events are
 * committed; the agent sends the batch again and those repeat, ignored). */
void ctl_agent_events_stop_all(struct ctl *c);
/* Record how a job ended on its row (so a restart can finish applying it), before the
 * core hears of it: `exit` as docs/api.md's job "exit", `usage` or NULL. 0 or -errno. */
int ctl_job_record_exit(struct ctl *c, uint64_t id, const json_t *exit, const json_t *usage);

#endif
