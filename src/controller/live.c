/*
 * live.c - what changed, for the pages that watch (live.h; docs/api.md "Conditional
 * requests and change notices").
 *
 * Versions: one counter per topic, bumped where the state a topic's lists show changes:
 * every commit that wrote a table the topic shows, every cycle that decided something or
 * refreshed the order, and the first cycle after a commit (jobs, nodes, projects: the
 * reasons, positions and use the core derives are no stored row), every heartbeat
 * (nodes: its time and GPU samples), every alert round whose instances changed (alerts).
 * A list's ETag is made from its topic's version before the list is read: a change while
 * it is read gives the next request a new tag, never a stale 304. The body is never
 * hashed; the tag's salt hashes who asks (user, role: what they may see) and the URI (the
 * query: what they asked for).
 *
 * Notices: GET /v1/changes is a text/event-stream the console reads with fetch (its token
 * in the Authorization header, as every call). Each change is folded into one notice sent
 * at most every CTL_LIVE_PUSH_MS, `event: changed` with the topics as data; a comment
 * every CTL_LIVE_KEEPALIVE_MS; the stream ends after CTL_LIVE_MAX_MS and the client
 * reconnects (so a revoked token stops getting notices). A notice says only that a
 * topic changed, nothing a reader of the lists could not see.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/conn.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/live.h"
#include "controller/turns.h"
#include "util/clock.h"
#include "util/etag.h"
#include "util/str.h"
#include "util/xalloc.h"

static const char *const topic_names[CTL_LIVE_NTOPICS] = {"jobs", "nodes", "projects", "alerts"};

struct live_sub {
    struct ctl *c;
    struct evhttp_request *req;
    struct event *timer; /* keepalive and the end of its life; the cleanup once closed */
    int64_t end_mono_ms;
    char user[64];
    bool closed; /* the client went away: only the request is left to end */
    struct live_sub *next;
};

static struct ctl_live *live_of(struct ctl *c)
{
    if (!c->live.epoch)
        c->live.epoch = (uint64_t)clock_now_ms();
    return &c->live;
}

/* "jobs,nodes" of a topic mask into out. */
static void topics_text(unsigned topics, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < CTL_LIVE_NTOPICS && n < len; i++)
        if (topics & (1u << i))
            n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "," : "", topic_names[i]);
}

static void sub_send(struct live_sub *s, const char *text)
{
    struct evbuffer *b = xnonnull(evbuffer_new(), "event buffer");
    evbuffer_add(b, text, strlen(text));
    evhttp_send_reply_chunk(s->req, b);
    evbuffer_free(b);
}

static void sub_free(struct live_sub *s)
{
    struct ctl_live *l = &s->c->live;
    struct live_sub **pp = &l->subs;
    while (*pp && *pp != s)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = s->next;
        l->nsubs--;
    }
    struct evhttp_connection *con = s->closed ? NULL : evhttp_request_get_connection(s->req);
    if (con)
        ctl_conn_watch(s->c, con, NULL, NULL);
    event_free(s->timer);
    struct evhttp_request *req = s->req;
    free(s);
    /* (with the client gone, libevent frees the detached request here) */
    evhttp_send_reply_end(req);
}

static void push_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ctl *c = arg;
    struct ctl_live *l = &c->live;
    int64_t t0 = ctl_turn_enter(c);
    char topics[64], text[96];
    topics_text(l->due, topics, sizeof(topics));
    l->due = 0;
    snprintf(text, sizeof(text), "event: changed\ndata: %s\n\n", topics);
    for (struct live_sub *s = l->subs; s; s = s->next)
        if (!s->closed)
            sub_send(s, text);
    ctl_turn_leave(c, CTL_TURN_TIMER, t0);
}

void ctl_live_changed(struct ctl *c, unsigned topics)
{
    struct ctl_live *l = live_of(c);
    for (int i = 0; i < CTL_LIVE_NTOPICS; i++)
        if (topics & (1u << i))
            l->ver[i]++;
    l->due |= topics & CTL_TOPIC_ALL;
    if (!l->subs || !l->due)
        return;
    if (!l->push_ev)
        l->push_ev = xnonnull(evtimer_new(c->base, push_cb, c), "push timer");
    if (!event_pending(l->push_ev, EV_TIMEOUT, NULL)) {
        struct timeval tv = {CTL_LIVE_PUSH_MS / 1000, (CTL_LIVE_PUSH_MS % 1000) * 1000};
        event_add(l->push_ev, &tv);
    }
}

/* The tables each topic's lists read (or whose writes come with a change they show):
 * a commit moves a topic on only when it wrote one of them, so the usage samples, logs
 * and prunes a running cluster commits every second leave the lists' tags alone. */
static const char *const topic_tables[CTL_LIVE_NTOPICS][8] = {
    {"jobs", "job_specs", "job_holds", "job_runs", "job_events", "members", "policy", NULL},
    {"nodes", "policy", NULL},
    {"projects", "members", "policy", NULL},
    {"alert_history", "alert_silences", "policy", NULL},
};

void ctl_live_committed(struct ctl *c)
{
    struct ctl_live *l = live_of(c);
    unsigned changed = 0;
    for (int i = 0; i < CTL_LIVE_NTOPICS; i++)
        if (store_written_since(c->store, topic_tables[i], l->clock))
            changed |= 1u << i;
    l->clock = store_write_clock(c->store);
    if (!changed)
        return;
    ctl_live_changed(c, changed);
    l->owed = true;
}

void ctl_live_cycled(struct ctl *c, bool changed)
{
    struct ctl_live *l = live_of(c);
    if (changed || l->owed)
        ctl_live_changed(c, CTL_TOPIC_JOBS | CTL_TOPIC_NODES | CTL_TOPIC_PROJECTS);
    l->owed = false;
}

uint64_t ctl_live_version(struct ctl *c, enum ctl_topic t)
{
    struct ctl_live *l = live_of(c);
    uint64_t v = 0;
    for (int i = 0; i < CTL_LIVE_NTOPICS; i++)
        if (t & (1u << i))
            v += l->ver[i];
    return v;
}

bool ctl_live_not_modified(struct ctl_req *r, unsigned topics)
{
    struct ctl_live *l = live_of(r->c);
    uint64_t salt = etag_hash(ETAG_HASH_SEED, r->id.user);
    salt = etag_hash(salt, r->id.node ? "node" : ctl_role_name(r->id.role));
    salt = etag_hash(salt, evhttp_request_get_uri(r->req));
    char tag[ETAG_TEXTLEN];
    etag_format(tag, sizeof(tag), l->epoch, ctl_live_version(r->c, (enum ctl_topic)topics), salt);
    struct evkeyvalq *out = evhttp_request_get_output_headers(r->req);
    evhttp_add_header(out, "ETag", tag);
    /* the browser asks again each time; a shared cache keeps nothing of one viewer's */
    evhttp_add_header(out, "Cache-Control", "private, no-cache");
    const char *inm = evhttp_find_header(evhttp_request_get_input_headers(r->req), "If-None-Match");
    if (!etag_match(inm, tag))
        return false;
    r->c->metrics.http_by_code[304]++;
    evhttp_send_reply(r->req, 304, "Not Modified", NULL);
    r->c->turn.replies++;
    return true;
}

/* ------------------------------------------------------------------------------------ */
/* GET /v1/changes                                                                       */

static void sub_closed(struct evhttp_connection *con, void *arg)
{
    struct live_sub *s = arg;
    (void)con;
    s->closed = true;
    event_active(s->timer, EV_TIMEOUT, 0);
}

static void sub_timer(evutil_socket_t fd, short what, void *arg)
{
    struct live_sub *s = arg;
    struct ctl *c = s->c;
    int64_t t0 = ctl_turn_enter(c);
    if (s->closed || clock_mono_ms() >= s->end_mono_ms) {
        sub_free(s);
    } else {
        sub_send(s, ": keepalive\n\n");
        struct timeval tv = {CTL_LIVE_KEEPALIVE_MS / 1000, 0};
        event_add(s->timer, &tv);
    }
    ctl_turn_leave(c, CTL_TURN_TIMER, t0);
}

static size_t subs_of(const struct ctl_live *l, const char *user)
{
    size_t n = 0;
    for (const struct live_sub *s = l->subs; s; s = s->next)
        n += strcmp(s->user, user) == 0;
    return n;
}

void h_changes(struct ctl_req *r)
{
    struct ctl *c = r->c;
    struct ctl_live *l = live_of(c);
    const char *user = r->id.node ? r->id.node_name : r->id.user;
    if (l->nsubs >= CTL_LIVE_STREAMS_MAX || subs_of(l, user) >= CTL_LIVE_STREAMS_PER_USER) {
        ctl_reply_errorf(c, r->req, 429, NULL,
                         "too many change streams open (at most %d per user, %d in all)",
                         CTL_LIVE_STREAMS_PER_USER, CTL_LIVE_STREAMS_MAX);
        return;
    }
    struct live_sub *s = xcalloc(1, sizeof(*s));
    s->c = c;
    s->req = r->req;
    str_copy(s->user, sizeof(s->user), user);
    s->end_mono_ms = clock_mono_ms() + CTL_LIVE_MAX_MS;
    s->timer = xnonnull(evtimer_new(c->base, sub_timer, s), "change stream timer");
    s->next = l->subs;
    l->subs = s;
    l->nsubs++;
    struct evkeyvalq *h = evhttp_request_get_output_headers(r->req);
    evhttp_add_header(h, "Content-Type", "text/event-stream");
    evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_add_header(h, "X-Accel-Buffering", "no"); /* a proxy passes each notice at once */
    c->metrics.http_by_code[200]++;
    evhttp_send_reply_start(r->req, 200, "OK");
    struct evhttp_connection *con = evhttp_request_get_connection(r->req);
    if (con)
        ctl_conn_watch(c, con, sub_closed, s);
    /* the client reconnects after 5 s; `ready` tells it to read once what it missed */
    sub_send(s, "retry: 5000\nevent: ready\ndata: jobs,nodes,projects,alerts\n\n");
    struct timeval tv = {CTL_LIVE_KEEPALIVE_MS / 1000, 0};
    event_add(s->timer, &tv);
}

void ctl_live_stop(struct ctl *c)
{
    while (c->live.subs)
        sub_free(c->live.subs);
    if (c->live.push_ev)
        event_free(c->live.push_ev);
    c->live.push_ev = NULL;
}
