/*
 * lease.c - the leases of running jobs on silent nodes (lease.h, docs/agent.md
 * "Fencing and leases"): one pass over a silent node's jobs when it goes silent and again only when
 * the earliest of their leases runs out, so a silent rack costs nothing per second.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "controller/agent.h"
#include "controller/ctl.h"
#include "controller/lease.h"
#include "controller/loop.h"
#include "protocol/agent_msg.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/parse.h"

/* A store read that fails is tried again this much later. */
enum { LEASE_RETRY_MS = 1000 };

int64_t ctl_lease_margin_ms(const struct ctl *c)
{
    return agent_fence_margin_ms(c->cfg.node_timeout_ms, AGENT_FENCE_MARGIN_DEFAULT_MS);
}

void ctl_leases_watch(struct ctl_node *n, int64_t mono)
{
    n->lease_check_ms = mono;
}

/* The monotonic ms at which job `id`'s run on n is lost, or -1 when its run cannot be
 * read (try again later). */
static int64_t lost_at(struct ctl *c, const struct ctl_node *n, uint64_t id)
{
    struct store_run run;
    int last = store_run_last(c->store, id);
    if (last <= 0 || store_run_get(c->store, id, last, &run) < 0)
        return -1;
    return n->last_hb_ms + agent_lease_ms(run.lease_ms, c->cfg.node_timeout_ms) +
           ctl_lease_margin_ms(c);
}

static bool runs_on(const struct sched_job_view *v, uint32_t idx)
{
    for (int k = 0; k < v->nallocs; k++)
        if (v->allocs[k].node == idx)
            return true;
    return false;
}

/* The job's lease on n ran out: its agent has stopped it. Its exit says why, commands
 * still queued for it there are dropped (a start or kill must never reach the agent once
 * the job runs elsewhere), and the core ends or stops it. */
static void declare_lost(struct ctl *c, struct ctl_node *n, uint64_t id, int64_t silent_ms)
{
    char ago[32], msg[160];
    format_duration(silent_ms, ago, sizeof ago);
    snprintf(msg, sizeof msg, "lease ran out: no contact with node %s for %s", n->name, ago);
    json_t *ex = json_pack("{s:s,s:i,s:s}", "kind", "lost", "code", 0, "message", msg);
    int rc = ctl_job_record_exit(c, id, ex, NULL);
    json_decref(ex);
    if (rc < 0)
        return; /* nothing changed: the next tick tries again */
    ctl_node_drop_job_commands(n, id);
    struct sched_error se;
    if (sched_job_lost_on(c->sched, id, n->name, clock_now_ms(), &se) < 0)
        return;
    if (ctl_job_event(c, id, "lease_expired", "", "", n->name, "node_fail", msg) < 0)
        ctl_store_diverged(c, "lease_expired", id);
    log_warn("lease_expired", "job=%llu node=%s silent_ms=%lld", (unsigned long long)id, n->name,
             (long long)silent_ms);
}

/* One pass over n's jobs: when the earliest lease not yet run out ends (monotonic ms, 0
 * for none); with `declare`, those already run out are declared lost on the way. */
static int64_t leases_pass(struct ctl *c, struct ctl_node *n, int64_t mono, bool declare,
                           bool *lost)
{
    int idx = sched_node_find(c->sched, n->name);
    int64_t next = 0;
    for (size_t i = 0; idx >= 0 && i < sched_job_slots(c->sched); i++) {
        struct sched_job_view v;
        if (sched_job_at(c->sched, i, &v) < 0 || !runs_on(&v, (uint32_t)idx))
            continue;
        int64_t at = lost_at(c, n, v.id);
        if (at < 0) {
            at = mono + LEASE_RETRY_MS;
        } else if (at <= mono && declare) {
            declare_lost(c, n, v.id, mono - n->last_hb_ms);
            *lost = true;
            at = mono + LEASE_RETRY_MS; /* a gang still stopping: looked at again */
        }
        if (!next || at < next)
            next = at;
    }
    return next;
}

void ctl_leases_tick(struct ctl *c, struct ctl_node *n, int64_t mono)
{
    if (!n->lease_check_ms || mono < n->lease_check_ms)
        return;
    bool lost = false;
    n->lease_check_ms = leases_pass(c, n, mono, true, &lost);
    if (lost)
        ctl_cycle_soon(c);
}

int64_t ctl_leases_next_end_ms(struct ctl *c, struct ctl_node *n)
{
    int idx = sched_node_find(c->sched, n->name);
    struct sched_node_view v;
    if (!n->lease_check_ms || idx < 0 || sched_node_get(c->sched, (uint32_t)idx, &v) < 0 ||
        v.state != SCHED_NODE_UNREACHABLE)
        return 0;
    int64_t mono = clock_mono_ms(), at = n->lease_check_ms;
    if (at <= mono) { /* a look is due (just restored, or this very tick): look now */
        bool lost = false;
        at = leases_pass(c, n, mono, false, &lost);
        if (!at)
            return 0;
    }
    return clock_now_ms() + (at - mono);
}

int64_t ctl_lease_end_ms(struct ctl *c, const struct ctl_node *n, uint64_t id)
{
    int idx = sched_node_find(c->sched, n->name);
    struct sched_node_view nv;
    struct sched_job_view v;
    if (idx < 0 || sched_node_get(c->sched, (uint32_t)idx, &nv) < 0 ||
        nv.state != SCHED_NODE_UNREACHABLE || sched_job_get(c->sched, id, &v) < 0 ||
        !runs_on(&v, (uint32_t)idx))
        return 0;
    int64_t at = lost_at(c, n, id);
    return at < 0 ? 0 : clock_now_ms() + (at - clock_mono_ms());
}
