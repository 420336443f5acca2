/*
 * svcrules.h - what svcrules.c owns: the pure rules of services (docs/services.md), kept
 * apart from services.c's I/O so unit tests drive them alone: the restart backoff, the
 * crash-loop window, the state a replica and a service show, and the steps of a rolling
 * update.
 */
#ifndef DOCKET_CONTROLLER_SVCRULES_H
#define DOCKET_CONTROLLER_SVCRULES_H

#include <stdbool.h>
#include <stdint.h>

enum { SVC_RECENT_MAX = 32 }; /* restarts remembered per replica for the crash-loop window */

/* The delay before the n-th restart in a row (n >= 1): base, doubling each time, at most
 * max. 0 when base is 0. */
int64_t svc_backoff_ms(int64_t base_ms, int64_t max_ms, int streak);

/* The restarts of one replica, newest last. */
struct svc_restarts {
    int64_t at_ms[SVC_RECENT_MAX];
    int n;
};
/* Record a restart at now, forgetting those older than the window (and the oldest when
 * full). */
void svc_restarts_add(struct svc_restarts *r, int64_t now_ms, int64_t window_ms);
/* Restarts within the window before now. */
int svc_restarts_within(const struct svc_restarts *r, int64_t now_ms, int64_t window_ms);
/* A crash loop: at least `threshold` restarts within the window. */
bool svc_crash_looping(const struct svc_restarts *r, int64_t now_ms, int64_t window_ms,
                       int threshold);
/* The streak after a run of up_ms ended: a run that stayed up longer than the backoff cap
 * (at least a minute) starts the count again. */
int svc_next_streak(int streak, int64_t up_ms, int64_t backoff_max_ms);

/* What a replica shows (docket services show): from its job's state in the core ("" when
 * the core holds no such job: it is being replaced), whether it waits out a backoff,
 * whether it crash-loops, and its readiness (probes; true when it has no readiness probe). */
const char *svc_replica_state(const char *job_state, bool backoff, bool crash_loop, bool ready);
/* What the service shows from its counts: "running" (all desired ready), "degraded" (some),
 * "down" (none of a positive count), "crash-loop" (any replica crash-loops), "stopped"
 * (0 desired), "updating" / "rolled-back" as its update says. */
const char *svc_service_state(int desired, int ready, int crash_looping, const char *update);

/* A rolling update (docs/services.md "Rolling updates"), one step at a time. Each replica
 * as the update sees it: its version, whether it is ready, since when its current
 * version's job was submitted, and whether it is leaving (out of traffic, being
 * stopped: it no longer counts). */
struct svc_roll_rep {
    int version;
    bool ready;
    bool leaving;
    int64_t since_ms;
};
enum svc_roll_action {
    SVC_ROLL_WAIT,     /* a new replica is not ready yet: wait */
    SVC_ROLL_ADD,      /* start one more replica of the new version */
    SVC_ROLL_RETIRE,   /* take replica `index` (of an old version) out, then stop it */
    SVC_ROLL_DONE,     /* every counted replica has the new version, and enough are ready */
    SVC_ROLL_ROLLBACK, /* replica `index` of the new version missed the deadline */
};
struct svc_roll_step {
    enum svc_roll_action action;
    int index;
};
/* The next step towards `desired` replicas of `version`: never fewer ready replicas than
 * there were (a new one is ready before an old one goes), one new replica at a time, and
 * a rollback once a new replica has waited past deadline_ms without being ready. */
struct svc_roll_step svc_roll_next(const struct svc_roll_rep *reps, int n, int desired, int version,
                                   int64_t now_ms, int64_t deadline_ms);

#endif
