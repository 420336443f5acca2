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

#include "controller/conn.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/stream.h"
#include "controller/turns.h"
#include "util/parse.h"
#include "util/str.h"
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
static void turn_body(struct ctl_stream *s);

static void turn(evutil_socket_t unused, short what, void *arg)
{
    struct ctl_stream *s = arg;
    struct ctl *c = s->c;
    int64_t t0 = ctl_turn_enter(c);
    turn_body(s); /* (may free s) */
    ctl_turn_leave(c, CTL_TURN_STREAM, t0);
}

static void turn_body(struct ctl_stream *s)
{
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

void ctl_stream_start(struct ctl *c, struct evhttp_request *req, const char *content_type,
                      ctl_stream_fill fill, ctl_stream_free free_fn, void *arg)
{
    struct ctl_stream *s = xnonnull(calloc(1, sizeof(*s)), "stream");
    *s = (struct ctl_stream){c, req, NULL, fill, free_fn, arg, false, false, c->streams};
    s->ev = xnonnull(event_new(c->base, -1, 0, turn, s), "stream event");
    c->streams = s;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", content_type);
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

/* ------------------------------------------------------------------------------------ */
/* Paged lists (docs/api.md "Lists"): {"KEY": [rows...], "next": "CURSOR"}, one page of at
 * most `limit` rows and `max_bytes` of JSON, streamed in slices of CTL_LIST_SLICE_ROWS
 * rows or about CTL_LIST_SLICE_BYTES.                                                    */

/* The envelope's share of a page's bytes: {"KEY":[ ... ],"next":"CURSOR"} */
#define LIST_ENVELOPE 64

struct ctl_list {
    struct ctl *c;
    char key[32];
    int64_t limit, sent;
    size_t max_bytes;  /* of the page, envelope included */
    size_t bytes;      /* of the page so far */
    size_t turn_bytes; /* of this slice */
    int64_t turn_rows; /* rows this slice took */
    int64_t last;      /* the cursor of the last row sent */
    bool full;         /* stopped by limit or bytes: there may be more, "next" says where */
    bool started;
    struct evbuffer *out; /* the slice being made */
    ctl_list_fetch fetch;
    ctl_stream_free free_fn;
    void *arg;
};

int ctl_list_row(struct ctl_list *l, const char *text, size_t n, int64_t cursor)
{
    /* a row that would take the page past its bytes waits for the next page (a page
     * always has one row, however long, so that the cursor moves) */
    if (l->sent > 0 && l->bytes + n + 1 + LIST_ENVELOPE > l->max_bytes) {
        l->full = true;
        return 1;
    }
    if (l->sent > 0)
        evbuffer_add(l->out, ",", 1);
    evbuffer_add(l->out, text, n);
    l->sent++;
    l->turn_rows++;
    l->bytes += n + 1;
    l->turn_bytes += n + 1;
    l->last = cursor;
    if (l->sent >= l->limit) {
        l->full = true;
        return 1;
    }
    return l->turn_bytes >= CTL_LIST_SLICE_BYTES ? 1 : 0;
}

int ctl_list_row_json(struct ctl_list *l, json_t *row, int64_t cursor)
{
    char *text = row ? json_dumps(row, JSON_COMPACT) : NULL;
    json_decref(row);
    if (!text)
        return -ENOMEM;
    int rc = ctl_list_row(l, text, strlen(text), cursor);
    free(text);
    return rc;
}

static int list_fill(void *arg, struct evbuffer *out, bool *done)
{
    struct ctl_list *l = arg;
    if (!l->started)
        evbuffer_add_printf(out, "{\"%s\":[", l->key);
    l->started = true;
    l->turn_bytes = 0;
    l->turn_rows = 0;
    l->out = out;
    int64_t ask = l->limit - l->sent;
    int max = (int)(ask < CTL_LIST_SLICE_ROWS ? ask : CTL_LIST_SLICE_ROWS);
    int rc = l->fetch(l, l->arg, l->last, max);
    if (rc < 0)
        return rc == -ENOMEM ? rc : -EIO;
    if (!l->full && ((rc == 0 && l->turn_rows == max) || rc == 1 || rc == CTL_LIST_MORE))
        return 0; /* the slice's rows or bytes were used up: more may follow */
    if (l->full)
        evbuffer_add_printf(out, "],\"next\":\"%lld\"}", (long long)l->last);
    else
        evbuffer_add(out, "]}", 2);
    *done = true;
    return 0;
}

static void list_free(void *arg)
{
    struct ctl_list *l = arg;
    if (l->free_fn)
        l->free_fn(l->arg);
    free(l);
}

int ctl_list_params(struct ctl_req *r, int64_t *limit, int64_t *after, size_t *max_bytes)
{
    const char *keys[] = {"limit", "after", "max_bytes"};
    const int64_t min[] = {1, 0, 1024}, max[] = {10000, INT64_MAX, (int64_t)CTL_LIST_PAGE_BYTES};
    int64_t v[3] = {*limit, 0, (int64_t)CTL_LIST_PAGE_BYTES};
    for (int i = 0; i < 3; i++) {
        const char *q = ctl_query(r, keys[i]);
        if (q && parse_int64(q, min[i], max[i], &v[i]) < 0) {
            ctl_reply_errorf(r->c, r->req, 400, keys[i],
                             "%s must be an integer between %lld and %lld", keys[i],
                             (long long)min[i], (long long)max[i]);
            return -EINVAL;
        }
    }
    *limit = v[0];
    *after = v[1];
    *max_bytes = (size_t)v[2];
    return 0;
}

void ctl_list_start(struct ctl *c, struct evhttp_request *req, const char *key, int64_t limit,
                    int64_t after, size_t max_bytes, ctl_list_fetch fetch, ctl_stream_free free_fn,
                    void *arg)
{
    struct ctl_list *l = xnonnull(calloc(1, sizeof(*l)), "list");
    l->c = c;
    str_copy(l->key, sizeof(l->key), key);
    l->limit = limit;
    l->last = after;
    l->max_bytes = max_bytes;
    l->fetch = fetch;
    l->free_fn = free_fn;
    l->arg = arg;
    ctl_stream_start(c, req, "application/json", list_fill, list_free, l);
}
