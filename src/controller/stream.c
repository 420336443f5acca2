/*
 * stream.c - a long reply sent in slices (docs/controller.md "Lists"): the status line at
 * once, then one chunk per loop turn, the next slice made only when the client has taken
 * the previous one. No list is ever built whole in memory, and between two slices the loop
 * serves everything else (a /healthz waits for one slice at most, not for the list).
 *
 * A slice never reads an open transaction: the loop's writes are committed first (they
 * would otherwise reach a client before they are durable, which buffered replies never
 * do, ctl_reply_raw).
 */
#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctl.h"
#include "util/xalloc.h"

struct ctl_stream {
    struct ctl *c;
    struct evhttp_request *req;
    struct event *ev;
    ctl_stream_fill fill;
    ctl_stream_free free_fn;
    void *arg;
    bool closed;  /* the client went away: only the request is left to free */
    bool writing; /* a chunk is on its way: the next slice waits for it */
    struct ctl_stream *next;
};

static void stream_free(struct ctl_stream *s)
{
    struct ctl_stream **pp = &s->c->streams;
    while (*pp && *pp != s)
        pp = &(*pp)->next;
    if (*pp)
        *pp = s->next;
    struct evhttp_connection *con = s->closed ? NULL : evhttp_request_get_connection(s->req);
    if (con)
        ctl_conn_watch(s->c, con, NULL, NULL);
    if (s->free_fn)
        s->free_fn(s->arg);
    event_free(s->ev);
    free(s);
}

static void stream_closed(struct evhttp_connection *con, void *arg)
{
    struct ctl_stream *s = arg;
    s->closed = true;
    event_active(s->ev, EV_TIMEOUT, 0);
}

static void chunk_written(struct evhttp_connection *con, void *arg)
{
    struct ctl_stream *s = arg;
    s->writing = false;
    event_active(s->ev, EV_TIMEOUT, 0);
}

static void stream_end(struct ctl_stream *s)
{
    struct evhttp_request *req = s->req;
    stream_free(s);
    /* (with the client gone, libevent frees the detached request here) */
    evhttp_send_reply_end(req);
}

/* One slice: its text as one chunk; the last one ends the reply. */
static void turn(evutil_socket_t unused, short what, void *arg)
{
    struct ctl_stream *s = arg;
    if (s->closed) {
        stream_end(s);
        return;
    }
    if (s->writing)
        return;
    if (store_in_tx(s->c->store)) { /* after this turn's commit */
        struct timeval tv = {0, 1000};
        event_add(s->ev, &tv);
        return;
    }
    struct evbuffer *out = xnonnull(evbuffer_new(), "stream buffer");
    bool done = false;
    int rc = s->fill(s->arg, out, &done);
    if (rc < 0) /* the status line has left: cut the reply short, the JSON is unfinished */
        log_error("stream_failed", "error=\"%s\"", strerror(-rc));
    if (evbuffer_get_length(out) > 0) {
        s->writing = !done && rc == 0;
        evhttp_send_reply_chunk_with_cb(s->req, out, s->writing ? chunk_written : NULL, s);
    }
    evbuffer_free(out);
    if (done || rc < 0)
        stream_end(s);
    else if (!s->writing)
        event_active(s->ev, EV_TIMEOUT, 0);
}

void ctl_stream_start(struct ctl *c, struct evhttp_request *req, ctl_stream_fill fill,
                      ctl_stream_free free_fn, void *arg)
{
    struct ctl_stream *s = xnonnull(calloc(1, sizeof(*s)), "stream");
    *s = (struct ctl_stream){c, req, NULL, fill, free_fn, arg, false, false, c->streams};
    s->ev = xnonnull(event_new(c->base, -1, 0, turn, s), "stream event");
    c->streams = s;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    c->metrics.http_by_code[200]++;
    evhttp_send_reply_start(req, 200, "OK");
    struct evhttp_connection *con = evhttp_request_get_connection(req);
    if (con)
        ctl_conn_watch(c, con, stream_closed, s);
    event_active(s->ev, EV_TIMEOUT, 0);
}

void ctl_stream_stop_all(struct ctl *c)
{
    while (c->streams)
        stream_free(c->streams);
}
