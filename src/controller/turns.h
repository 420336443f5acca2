/*
 * turns.h - what turns.c owns: the timing of docketd's loop turns (see turns.c for what a
 * turn is), kept in struct ctl (controller/ctl.h).
 */
#ifndef DOCKET_CONTROLLER_TURNS_H
#define DOCKET_CONTROLLER_TURNS_H

#include <stdint.h>

struct ctl;

/* The kinds of docketd's callbacks a loop turn is made of */
enum ctl_turn_kind {
    CTL_TURN_HEARTBEAT, /* POST /v1/agent/heartbeat */
    CTL_TURN_EVENTS,    /* POST /v1/agent/events */
    CTL_TURN_REQUEST,   /* every other request */
    CTL_TURN_CYCLE,     /* a scheduling cycle (the timer's) */
    CTL_TURN_COMMIT,    /* the group commit */
    CTL_TURN_SYNCED,    /* a WAL sync ended: its replies sent */
    CTL_TURN_ARRAY,     /* a slice of a big array (jobs.c) */
    CTL_TURN_STREAM,    /* a slice of a list (stream.c) */
    CTL_TURN_TIMER,     /* ticks, heartbeat park timeouts, log follow timers */
    CTL_TURN_DEFERRED,  /* heartbeats past CTL_HEARTBEATS_PER_TURN: queued, then run */
    CTL_TURN_NKINDS
};

struct ctl_turn {
    int64_t key_us, start_us, last_end_us, gap_before_us; /* wall clock, us */
    int64_t log_us; /* DOCKETD_TURN_LOG_MS: log turns at least this long; -1: never */
    int depth;
    int n[CTL_TURN_NKINDS];
    int64_t us[CTL_TURN_NKINDS];
    int starts, replies, parked;
    int64_t core_us;     /* of the cycle's time: sched_cycle itself */
    int agent_events;    /* agent events applied */
    int array_discarded; /* tasks of failed arrays deleted (jobs.c) */
    int heartbeats;      /* heartbeats handled (http.c: at most CTL_HEARTBEATS_PER_TURN) */
};

/* Time a callback of ours: enter returns its start, leave adds it to the turn it ran in
 * by kind. */
void ctl_turns_init(struct ctl *c);
int64_t ctl_turn_enter(struct ctl *c);
void ctl_turn_leave(struct ctl *c, enum ctl_turn_kind kind, int64_t t0);

#endif
