/*
 * turns.c - what one turn of the loop costs (issue 11: "any request is answered within
 * 50 ms"). A turn is one pass of libevent's loop: one return of epoll_wait, then every
 * callback that became active. libevent caches the time at which the poll returned
 * (event_base_gettimeofday_cached), so a callback knows which turn it runs in: when that
 * time changes, the previous turn has ended (main.c gives the base the precise clock: on
 * the coarse one, turns within one 4 ms tick share a time and would be counted as one). Each of
 * docketd's callbacks is timed by kind (heartbeats, agent events, other requests, the cycle, the
 * commit, the sync's release of replies, array and list slices, timers, heartbeats put off to a
 * later turn) with how many ran.
 *
 * Always on: docket_loop_turn_seconds, the span of each turn from the poll's return to
 * the end of its last callback of ours (what libevent does after that, writing replies to
 * the sockets, falls in the next turn's gap, not counted). Off by default: with
 * DOCKETD_TURN_LOG_MS=N in the environment (a debugging aid, like DOCKETD_TEST_*), every
 * turn longer than N ms is logged at warn as a `turn` line with its parts.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "controller/ctl.h"
#include "controller/metrics.h"
#include "controller/turns.h"

static const char *const kind_name[CTL_TURN_NKINDS] = {
    [CTL_TURN_HEARTBEAT] = "hb",   [CTL_TURN_EVENTS] = "events", [CTL_TURN_REQUEST] = "req",
    [CTL_TURN_CYCLE] = "cycle",    [CTL_TURN_COMMIT] = "commit", [CTL_TURN_SYNCED] = "synced",
    [CTL_TURN_ARRAY] = "array",    [CTL_TURN_STREAM] = "stream", [CTL_TURN_TIMER] = "timer",
    [CTL_TURN_DEFERRED] = "defer",
};

static int64_t tv_us(const struct timeval *tv)
{
    return (int64_t)tv->tv_sec * 1000000 + tv->tv_usec;
}

static int64_t wall_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv_us(&tv);
}

void ctl_turns_init(struct ctl *c)
{
    const char *v = getenv("DOCKETD_TURN_LOG_MS");
    c->turn.log_us = v && *v ? (int64_t)atoi(v) * 1000 : -1;
}

static void turn_end(struct ctl *c, int64_t next_start)
{
    struct ctl_turn *t = &c->turn;
    if (!t->start_us)
        return;
    int64_t span = t->last_end_us - t->start_us;
    if (span < 0)
        span = 0;
    ctl_hist_observe(&c->metrics.turn, (double)span / 1e6);
    if (t->log_us >= 0 && span >= t->log_us) {
        char parts[512];
        size_t off = 0;
        int64_t sum = 0;
        for (int k = 0; k < CTL_TURN_NKINDS; k++) {
            if (!t->n[k])
                continue;
            sum += t->us[k];
            int w = snprintf(parts + off, sizeof(parts) - off, " %s=%d/%.1f", kind_name[k], t->n[k],
                             (double)t->us[k] / 1000.0);
            if (w > 0 && (size_t)w < sizeof(parts) - off)
                off += (size_t)w;
        }
        parts[off] = '\0';
        log_warn("turn",
                 "span_ms=%.1f ours_ms=%.1f gap_before_ms=%.1f starts=%d replies=%d parked=%d "
                 "heartbeats=%d agent_events=%d array_discarded=%d core_ms=%.1f%s",
                 (double)span / 1000.0, (double)sum / 1000.0, (double)t->gap_before_us / 1000.0,
                 t->starts, t->replies, t->parked, t->heartbeats, t->agent_events,
                 t->array_discarded, (double)t->core_us / 1000.0, parts);
    }
    int64_t gap = next_start - t->last_end_us;
    memset(t->n, 0, sizeof(t->n));
    memset(t->us, 0, sizeof(t->us));
    t->starts = t->replies = t->parked = 0;
    t->core_us = 0;
    t->agent_events = 0;
    t->array_discarded = 0;
    t->heartbeats = 0;
    t->gap_before_us = gap > 0 ? gap : 0;
}

int64_t ctl_turn_enter(struct ctl *c)
{
    struct ctl_turn *t = &c->turn;
    struct timeval tv;
    if (t->depth++ > 0)
        return 0; /* nested (a cycle run from a request): counted in its caller */
    if (event_base_gettimeofday_cached(c->base, &tv) == 0 && tv_us(&tv) != t->key_us) {
        int64_t start = tv_us(&tv);
        turn_end(c, start);
        t->key_us = start;
        t->start_us = start;
    }
    return wall_us();
}

void ctl_turn_leave(struct ctl *c, enum ctl_turn_kind kind, int64_t t0)
{
    struct ctl_turn *t = &c->turn;
    if (t->depth > 0 && --t->depth > 0)
        return;
    int64_t now = wall_us();
    t->n[kind]++;
    t->us[kind] += now - t0;
    if (now > t->last_end_us)
        t->last_end_us = now;
}
