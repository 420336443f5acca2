/*
 * leader.h - what leader.c owns: active and standby on PostgreSQL (docs/operations.md
 * "Active and standby"). At start a docketd on PostgreSQL leads if the leader's lock is
 * free; else it is a standby: it answers every request 503 (code "standby", the leader's
 * URL in the body and in X-Docket-Leader) and tries again each second, until the leader
 * is gone (its session with the database ended) and it takes over: it loads the state
 * then, as a restart does. A leader looks each second that it still leads; deposed (its
 * session lost and another leading), it stops at once, and none of its later writes
 * would land anyway (store.h "Leadership"). Owns ctl.standby and ctl.leader_url.
 */
#ifndef DOCKET_CONTROLLER_LEADER_H
#define DOCKET_CONTROLLER_LEADER_H

#include <event2/http.h>

struct ctl;

/* Lead, or serve as a standby until leading: 0 once leading, -errno on an error of the
 * database (docketd stops). The HTTP listeners must be started (with ctl.standby set). */
int ctl_leader_await(struct ctl *c);
/* Each second, a leader on PostgreSQL: still leading, or stop (exit 1). */
void ctl_leader_tick(struct ctl *c);
/* A standby's answer to any request. */
void ctl_standby_reply(struct ctl *c, struct evhttp_request *req);

#endif
