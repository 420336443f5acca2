/*
 * live.h - what live.c owns: the versions of what the console polls (jobs, nodes,
 * projects, alerts: a counter per topic, bumped on every change), the conditional GET on
 * those lists (ETag, 304 Not Modified) and the stream of change notices
 * (GET /v1/changes, text/event-stream; docs/api.md "Conditional requests and change
 * notices").
 */
#ifndef DOCKET_CONTROLLER_LIVE_H
#define DOCKET_CONTROLLER_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctl;
struct ctl_req;
struct event;
struct live_sub;

enum ctl_topic {
    CTL_TOPIC_JOBS = 1u << 0,
    CTL_TOPIC_NODES = 1u << 1,
    CTL_TOPIC_PROJECTS = 1u << 2,
    CTL_TOPIC_ALERTS = 1u << 3,
    CTL_TOPIC_ALL = (1u << 4) - 1,
};

#define CTL_LIVE_NTOPICS 4

/* The topics' versions and the change streams (struct ctl's `live`). */
struct ctl_live {
    uint64_t epoch; /* this process's (0: not set yet): tags of an earlier run never match */
    uint64_t ver[CTL_LIVE_NTOPICS];
    unsigned due;   /* topics changed since the last notice */
    bool owed;      /* a commit changed something since the last cycle */
    uint64_t clock; /* the store's write clock at the last commit */
    struct event *push_ev;
    struct live_sub *subs;
    size_t nsubs;
};

/* A change notice goes out at most this often (changes in between are folded into it). */
#define CTL_LIVE_PUSH_MS 1000
/* A quiet stream gets a comment this often (keeps proxies and the idle timeout away). */
#define CTL_LIVE_KEEPALIVE_MS 15000
/* A stream ends after this long; the client reconnects, its token checked again. */
#define CTL_LIVE_MAX_MS 300000
/* Streams open at once: in all, and per user (past them: 429). */
#define CTL_LIVE_STREAMS_MAX      256
#define CTL_LIVE_STREAMS_PER_USER 8

/* Something the topics show changed: their versions move on and a notice is due. */
void ctl_live_changed(struct ctl *c, unsigned topics);
/* A transaction was committed: the topics whose tables it wrote changed, and the next
 * cycle owes one more change (the reasons it derives from them are no stored row). */
void ctl_live_committed(struct ctl *c);
/* A scheduling cycle ran: decided (it made decisions) or refreshed the order. */
void ctl_live_cycled(struct ctl *c, bool changed);
/* The version of a topic (tests, the stream's first event). */
uint64_t ctl_live_version(struct ctl *c, enum ctl_topic t);
/* Before a GET that shows `topics`: set its ETag (from the topics' versions, the caller
 * and the request's URI) and answer 304 when the request's If-None-Match names it. true
 * when it answered. */
bool ctl_live_not_modified(struct ctl_req *r, unsigned topics);
/* GET /v1/changes: the stream of change notices. */
void h_changes(struct ctl_req *r);
/* End every change stream (before the servers stop); later changes only count. */
void ctl_live_stop(struct ctl *c);

#endif
