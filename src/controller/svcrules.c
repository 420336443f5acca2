/*
 * svcrules.c - the pure rules of services (svcrules.h): no I/O, no clock, no state but
 * what the caller passes.
 */
#include "controller/svcrules.h"

#include <string.h>

int64_t svc_backoff_ms(int64_t base_ms, int64_t max_ms, int streak)
{
    if (base_ms <= 0)
        return 0;
    int64_t d = base_ms;
    for (int i = 1; i < streak && d < max_ms; i++)
        d = d > max_ms / 2 ? max_ms : d * 2; /* no overflow on the way to the cap */
    return d < max_ms ? d : max_ms;
}

static void forget_old(struct svc_restarts *r, int64_t now_ms, int64_t window_ms)
{
    int keep = 0;
    for (int i = 0; i < r->n; i++)
        if (now_ms - r->at_ms[i] < window_ms)
            r->at_ms[keep++] = r->at_ms[i];
    r->n = keep;
}

void svc_restarts_add(struct svc_restarts *r, int64_t now_ms, int64_t window_ms)
{
    forget_old(r, now_ms, window_ms);
    if (r->n == SVC_RECENT_MAX) {
        memmove(r->at_ms, r->at_ms + 1, sizeof(r->at_ms[0]) * (SVC_RECENT_MAX - 1));
        r->n--;
    }
    r->at_ms[r->n++] = now_ms;
}

int svc_restarts_within(const struct svc_restarts *r, int64_t now_ms, int64_t window_ms)
{
    int n = 0;
    for (int i = 0; i < r->n; i++)
        n += now_ms - r->at_ms[i] < window_ms;
    return n;
}

bool svc_crash_looping(const struct svc_restarts *r, int64_t now_ms, int64_t window_ms,
                       int threshold)
{
    return threshold > 0 && svc_restarts_within(r, now_ms, window_ms) >= threshold;
}

int svc_next_streak(int streak, int64_t up_ms, int64_t backoff_max_ms)
{
    int64_t stable = backoff_max_ms > 60000 ? backoff_max_ms : 60000;
    if (up_ms > stable)
        return 1;
    return streak < 1000 ? streak + 1 : streak;
}

const char *svc_replica_state(const char *job_state, bool backoff, bool crash_loop, bool ready)
{
    if (crash_loop)
        return "crash-loop";
    if (backoff)
        return "backoff";
    if (!job_state || !job_state[0])
        return "replacing";
    if (strcmp(job_state, "RUNNING") == 0)
        return ready ? "ready" : "not-ready";
    if (strcmp(job_state, "PENDING") == 0)
        return "pending";
    if (strcmp(job_state, "STARTING") == 0)
        return "starting";
    if (strcmp(job_state, "HELD") == 0)
        return "held";
    return "stopping";
}

const char *svc_service_state(int desired, int ready, int crash_looping, const char *update)
{
    if (update && update[0])
        return update;
    if (desired == 0)
        return "stopped";
    if (crash_looping > 0)
        return "crash-loop";
    if (ready >= desired)
        return "running";
    return ready > 0 ? "degraded" : "down";
}

struct svc_roll_step svc_roll_next(const struct svc_roll_rep *reps, int n, int desired, int version,
                                   int64_t now_ms, int64_t deadline_ms)
{
    int fresh = 0, old = 0, first_old = -1, waiting = -1;
    for (int i = 0; i < n; i++) {
        const struct svc_roll_rep *r = &reps[i];
        if (r->leaving)
            continue;
        if (r->version != version) {
            old++;
            if (first_old < 0 || (!r->ready && reps[first_old].ready))
                first_old = i; /* an old one not ready goes first: it serves nobody */
            continue;
        }
        fresh++;
        if (!r->ready && now_ms - r->since_ms > deadline_ms)
            return (struct svc_roll_step){SVC_ROLL_ROLLBACK, i};
        if (!r->ready)
            waiting = i;
    }
    if (waiting >= 0)
        return (struct svc_roll_step){SVC_ROLL_WAIT, waiting};
    if (fresh + old > desired && old > 0)
        return (struct svc_roll_step){SVC_ROLL_RETIRE, first_old};
    if (old == 0 && fresh >= desired)
        return (struct svc_roll_step){SVC_ROLL_DONE, -1};
    return (struct svc_roll_step){SVC_ROLL_ADD, -1};
}
