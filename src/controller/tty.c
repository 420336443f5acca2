/*
 * tty.c - the terminal streams of interactive sessions (tty.h, docs/interactive.md).
 *
 * Two upgraded connections make one stream: the person's (GET /v1/jobs/ID/tty, the job's
 * owner only) and the node's (GET /v1/agent/jobs/ID/tty, the node of the job's rank 0).
 * The node's end is parked unanswered until a person asks; a person who asks first waits
 * a while for the node's end. Then both get `101 Switching Protocols` and docketd takes
 * their sockets from evhttp (libevent 2.1 has no upgrade of its own: the request is left
 * unanswered, its bufferevent given our callbacks, and the connection freed by us when
 * the stream ends) and copies bytes from one to the other as they come: the frames
 * (protocol/ttyframe.h) are read only at the two ends, so this loop does no parsing and
 * keeps no session state. A second person's request for the same job takes the session
 * over (a reattach after a dropped connection): the old pair is closed, the node parks a
 * fresh end at once and the new person is joined to it.
 *
 * Back-pressure: a side whose peer has more than TTY_HIGH_WATER bytes unsent is not read
 * until the peer's output drains, so a slow terminal slows the session's output instead
 * of filling docketd's memory.
 */
#define _GNU_SOURCE
#include "controller/tty.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "controller/conn.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/str.h"

enum { TTY_HIGH_WATER = 256 * 1024, TTY_WAIT_NODE_MS = 15000 };

static const char switching[] = "HTTP/1.1 101 Switching Protocols\r\n"
                                "Upgrade: docket-tty\r\n"
                                "Connection: Upgrade\r\n\r\n";

struct ctl_tty_end {
    struct ctl *c;
    struct evhttp_request *req;
    struct evhttp_connection *evcon;
    struct bufferevent *bev; /* once joined: the socket is ours */
    uint64_t job;
    bool agent;
    bool closing;        /* the peer left: send what is queued, then close */
    struct event *timer; /* a person waiting for the node's end */
    struct ctl_tty_end *peer;
    struct ctl_tty_end *next;
};

static void unlink_end(struct ctl_tty_end *e)
{
    struct ctl_tty_end **pp = &e->c->ttys;
    while (*pp && *pp != e)
        pp = &(*pp)->next;
    if (*pp)
        *pp = e->next;
}

static void end_free(struct ctl_tty_end *e)
{
    unlink_end(e);
    if (e->timer)
        event_free(e->timer);
    free(e);
}

/* A joined end goes: its connection freed (ours since the upgrade). */
static void end_close(struct ctl_tty_end *e)
{
    struct evhttp_connection *evcon = e->evcon;
    bufferevent_setcb(e->bev, NULL, NULL, NULL, NULL);
    end_free(e);
    evhttp_connection_free(evcon);
}

/* e's side ended: its peer sends what it still has for its client, then closes too. */
static void end_gone(struct ctl_tty_end *e)
{
    struct ctl_tty_end *p = e->peer;
    if (p) {
        p->peer = NULL;
        if (evbuffer_get_length(bufferevent_get_output(p->bev)) == 0) {
            end_close(p);
        } else {
            p->closing = true;
            bufferevent_disable(p->bev, EV_READ);
        }
    }
    e->peer = NULL;
    end_close(e);
}

static void relay_read(struct bufferevent *bev, void *arg)
{
    struct ctl_tty_end *e = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (!e->peer) {
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    struct evbuffer *out = bufferevent_get_output(e->peer->bev);
    evbuffer_add_buffer(out, in);
    if (evbuffer_get_length(out) > TTY_HIGH_WATER)
        bufferevent_disable(bev, EV_READ);
}

/* e's output drained: a closing end closes; a peer held back reads again. */
static void relay_write(struct bufferevent *bev, void *arg)
{
    struct ctl_tty_end *e = arg;
    if (e->closing) {
        end_close(e);
        return;
    }
    if (e->peer)
        bufferevent_enable(e->peer->bev, EV_READ);
}

static void relay_event(struct bufferevent *bev, short what, void *arg)
{
    struct ctl_tty_end *e = arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        end_gone(e);
    } else if (what & BEV_EVENT_TIMEOUT) {
        /* a quiet session is no dead one: the timeout evhttp gave the connection left
         * its reading off, which goes on (the peers' own ends say when one is gone) */
        bufferevent_set_timeouts(bev, NULL, NULL);
        bufferevent_enable(bev, what & BEV_EVENT_READING ? EV_READ : EV_WRITE);
    }
}

/* evhttp arms the connection's idle timeout again once its request callback returns: a
 * moment later the timeouts are taken off for good (a session may be quiet for hours) */
static void untimed(evutil_socket_t fd, short what, void *arg)
{
    struct ctl_tty_end *e = arg;
    if (e->bev)
        bufferevent_set_timeouts(e->bev, NULL, NULL);
}

static void upgrade(struct ctl_tty_end *e)
{
    if (e->timer)
        event_free(e->timer);
    e->timer = evtimer_new(e->c->base, untimed, e);
    if (e->timer)
        event_active(e->timer, EV_TIMEOUT, 0);
    ctl_conn_watch(e->c, e->evcon, NULL, NULL); /* its end is ours to see now */
    e->bev = evhttp_connection_get_bufferevent(e->evcon);
    bufferevent_set_timeouts(e->bev, NULL, NULL);
    bufferevent_setwatermark(e->bev, EV_WRITE, 0, 0);
    bufferevent_setcb(e->bev, relay_read, relay_write, relay_event, e);
    evbuffer_add(bufferevent_get_output(e->bev), switching, sizeof switching - 1);
    bufferevent_enable(e->bev, EV_READ | EV_WRITE);
}

static void join(struct ctl_tty_end *node, struct ctl_tty_end *person)
{
    node->peer = person;
    person->peer = node;
    upgrade(node);
    upgrade(person);
    log_info("tty_joined", "job=%llu", (unsigned long long)node->job);
    /* bytes that came behind the request heads (none from our own clients) */
    relay_read(node->bev, node);
    relay_read(person->bev, person);
}

static struct ctl_tty_end *find(struct ctl *c, uint64_t job, bool agent, bool joined)
{
    for (struct ctl_tty_end *e = c->ttys; e; e = e->next)
        if (e->job == job && e->agent == agent && (e->bev != NULL) == joined && !e->closing)
            return e;
    return NULL;
}

/* A parked or waiting end's connection closed under us (evhttp frees it). */
static void waiting_closed(struct evhttp_connection *evcon, void *arg)
{
    end_free(arg);
}

static void person_waited(evutil_socket_t fd, short what, void *arg)
{
    struct ctl_tty_end *e = arg;
    struct ctl *c = e->c;
    struct evhttp_request *req = e->req;
    uint64_t job = e->job;
    ctl_conn_watch(c, e->evcon, NULL, NULL);
    end_free(e);
    ctl_reply_errorf(c, req, 503, NULL,
                     "the node of job %llu has not offered the session's terminal; try "
                     "docket attach %llu again",
                     (unsigned long long)job, (unsigned long long)job);
}

static struct ctl_tty_end *end_new(struct ctl_req *r, uint64_t job, bool agent)
{
    struct ctl_tty_end *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->c = r->c;
    e->req = r->req;
    e->evcon = evhttp_request_get_connection(r->req);
    e->job = job;
    e->agent = agent;
    if (!e->evcon) {
        free(e);
        return NULL;
    }
    e->next = r->c->ttys;
    r->c->ttys = e;
    ctl_conn_watch(r->c, e->evcon, waiting_closed, e);
    return e;
}

static bool asks_upgrade(struct ctl_req *r)
{
    const char *u = evhttp_find_header(evhttp_request_get_input_headers(r->req), "Upgrade");
    if (u && strcasecmp(u, "docket-tty") == 0)
        return true;
    ctl_reply_errorf(r->c, r->req, 400, NULL, "this endpoint needs 'Upgrade: docket-tty'");
    return false;
}

/* The running job `id` of the path, with its view; replies and returns -1 otherwise.
 * `starting`: a job whose start went to its node counts too (the node offers the
 * terminal as soon as it launched the job, before docketd has heard that it runs). */
static int running_job(struct ctl_req *r, uint64_t *id, struct sched_job_view *v, bool starting)
{
    int64_t n;
    if (parse_int64(r->arg[0], 1, INT64_MAX, &n) < 0 ||
        sched_job_get(r->c->sched, (uint64_t)n, v) < 0) {
        ctl_reply_errorf(r->c, r->req, 409, "state", "job '%.32s' is not running", r->arg[0]);
        return -1;
    }
    *id = (uint64_t)n;
    if ((v->state != SCHED_RUNNING && !(starting && v->state == SCHED_STARTING)) ||
        v->nallocs < 1) {
        ctl_reply_errorf(r->c, r->req, 409, "state", "job %llu is %s, not running",
                         (unsigned long long)*id, sched_job_state_name(v->state));
        return -1;
    }
    return 0;
}

static bool has_tty(struct ctl *c, uint64_t id)
{
    struct store_job row;
    if (store_job_get(c->store, id, &row) < 0)
        return false;
    json_t *spec = row.spec ? json_loads(row.spec, 0, NULL) : NULL;
    bool on = json_is_true(json_object_get(spec, "tty"));
    json_decref(spec);
    store_job_release(&row);
    return on;
}

void h_job_tty(struct ctl_req *r)
{
    struct sched_job_view v;
    uint64_t id;
    if (!asks_upgrade(r) || running_job(r, &id, &v, false) < 0)
        return;
    /* the session is a shell as its owner: nobody else types into it, lead or admin */
    if (r->id.node || strcmp(v.user, r->id.user) != 0) {
        ctl_reply_errorf(r->c, r->req, 403, NULL,
                         "only the owner of job %llu may attach to its terminal",
                         (unsigned long long)id);
        return;
    }
    if (!has_tty(r->c, id)) {
        ctl_reply_errorf(r->c, r->req, 409, "tty",
                         "job %llu has no terminal (it was not started by docket shell)",
                         (unsigned long long)id);
        return;
    }
    struct ctl_tty_end *old;
    while ((old = find(r->c, id, false, true)) != NULL) /* taken over */
        end_gone(old);
    while ((old = find(r->c, id, false, false)) != NULL) {
        ctl_conn_watch(r->c, old->evcon, NULL, NULL);
        struct evhttp_request *oreq = old->req;
        end_free(old);
        ctl_reply_errorf(r->c, oreq, 409, NULL, "another terminal attached to job %llu",
                         (unsigned long long)id);
    }
    struct ctl_tty_end *e = end_new(r, id, false);
    if (!e) {
        ctl_reply_errorf(r->c, r->req, 500, NULL, "out of memory");
        return;
    }
    struct ctl_tty_end *node = find(r->c, id, true, false);
    if (node) {
        join(node, e);
        return;
    }
    e->timer = evtimer_new(r->c->base, person_waited, e);
    struct timeval tv = {TTY_WAIT_NODE_MS / 1000, 0};
    if (e->timer)
        evtimer_add(e->timer, &tv);
}

void h_agent_tty(struct ctl_req *r)
{
    struct sched_job_view v;
    uint64_t id;
    if (!asks_upgrade(r) || running_job(r, &id, &v, true) < 0)
        return;
    const char *first = sched_node_name(r->c->sched, v.allocs[0].node);
    if (!first || strcmp(first, r->id.node_name) != 0) {
        ctl_reply_errorf(r->c, r->req, 403, NULL, "job %llu's terminal is not on node '%s'",
                         (unsigned long long)id, r->id.node_name);
        return;
    }
    struct ctl_tty_end *old = find(r->c, id, true, false);
    if (old) { /* the node parks one end per session: a new one replaces it */
        ctl_conn_watch(r->c, old->evcon, NULL, NULL);
        struct evhttp_request *oreq = old->req;
        end_free(old);
        ctl_reply_errorf(r->c, oreq, 409, NULL, "replaced by a newer end");
    }
    struct ctl_tty_end *e = end_new(r, id, true);
    if (!e) {
        ctl_reply_errorf(r->c, r->req, 500, NULL, "out of memory");
        return;
    }
    struct ctl_tty_end *person = find(r->c, id, false, false);
    if (person)
        join(e, person);
}

void ctl_tty_stop_all(struct ctl *c)
{
    while (c->ttys) {
        struct ctl_tty_end *e = c->ttys;
        if (e->bev)
            bufferevent_setcb(e->bev, NULL, NULL, NULL, NULL);
        else
            ctl_conn_watch(c, e->evcon, NULL, NULL);
        end_free(e); /* the connections go with their server (evhttp_free) */
    }
}
