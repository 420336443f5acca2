/*
 * metrics.h - what metrics.c owns: docketd's counters and histograms (kept in struct ctl,
 * controller/ctl.h), GET /metrics and GET /healthz; and metrics_quota.c's families of
 * quotas and queues, which /metrics writes too.
 */
#ifndef DOCKET_CONTROLLER_METRICS_H
#define DOCKET_CONTROLLER_METRICS_H

#include <stdint.h>

#include "core/sched.h"

struct ctl;
struct ctl_req;

struct ctl_hist {
    const double *bounds;
    int nbounds;
    uint64_t counts[16];
    uint64_t count;
    double sum;
};

struct ctl_metrics {
    uint64_t submissions;
    uint64_t http_by_code[600];
    struct ctl_hist queue_wait; /* the shape of every tier's (bounds) */
    struct ctl_tier_hist {      /* queue wait per tier, by the job's tier at its start */
        char tier[SCHED_NAME_MAX];
        struct ctl_hist h;
    } wait_by_tier[SCHED_MAX_TIERS + 1];
    int nwait_tiers;
    struct ctl_hist cycle;
    struct ctl_hist commit;  /* group commit: one fsync per loop iteration */
    struct ctl_hist turn;    /* one turn of the loop, its callbacks of ours (turns.c) */
    uint64_t conn_refused;   /* connections answered 503 past max_connections */
    uint64_t conn_timed_out; /* connections closed past request_timeout mid-request */
    uint64_t conn_shed;      /* unproven connections closed to make room (conn.c) */
    uint64_t accept_errors;  /* accept() failures (EMFILE...) that paused accepting */
};

void ctl_hist_observe(struct ctl_hist *h, double v);
/* A job of `tier` started after waiting `seconds`. */
void ctl_metrics_queue_wait(struct ctl *c, const char *tier, double seconds);
void h_healthz(struct ctl_req *r);
void h_metrics(struct ctl_req *r);
struct dbuf;
/* Per project and group GPUs used, guaranteed and allowed; per tier pending jobs and the
 * oldest wait at `now` (metrics_quota.c). */
void ctl_metrics_quota_text(struct ctl *c, struct dbuf *b, int64_t now);

#endif
