/*
 * logs.c - job output: agents append chunks (POST /v1/agent/logs) to
 * STATE_DIR/logs/ID.stdout|stderr; clients read them from an offset
 * (GET /v1/jobs/ID/logs), optionally waiting up to 25 s for more (follow=1).
 * A chunk at an offset already written is ignored past what is new, so agents may
 * resend after a lost reply; a chunk past the end (a gap) is refused with 409 and the
 * current end, from which the agent resends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/ctl.h"
#include "util/base64.h"
#include "util/parse.h"
#include "util/str.h"
#include "util/xalloc.h"

enum { LOG_READ_MAX = 1 << 20, LOG_FOLLOW_MS = 25000 };

struct ctl_log_waiter {
    struct ctl *c;
    struct evhttp_request *req;
    uint64_t job;
    int stream; /* 0 stdout, 1 stderr */
    int64_t offset;
    struct event *timer;
    struct ctl_log_waiter *next;
};

static void log_path(struct ctl *c, uint64_t job, int stream, char *out, size_t len)
{
    snprintf(out, len, "%s/logs/%llu.%s", c->cfg.state_dir, (unsigned long long)job,
             stream ? "stderr" : "stdout");
}

static int64_t log_size(struct ctl *c, uint64_t job, int stream)
{
    char path[CTL_PATH_MAX + 64];
    struct stat sb;
    log_path(c, job, stream, path, sizeof(path));
    return stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

static bool job_terminal(struct ctl *c, uint64_t job)
{
    struct sched_job_view v;
    return sched_job_get(c->sched, job, &v) < 0;
}

/* Send bytes [offset, offset + LOG_READ_MAX) with the offset/eof headers. */
static void send_chunk(struct ctl *c, struct evhttp_request *req, uint64_t job, int stream,
                       int64_t offset)
{
    char path[CTL_PATH_MAX + 64];
    log_path(c, job, stream, path, sizeof(path));
    int64_t size = log_size(c, job, stream);
    if (offset > size)
        offset = size;
    size_t n = (size_t)(size - offset > LOG_READ_MAX ? LOG_READ_MAX : size - offset);
    char *buf = malloc(n + 1);
    ssize_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && buf && n > 0)
        got = pread(fd, buf, n, offset);
    if (fd >= 0)
        close(fd);
    if (got < 0)
        got = 0;
    char off[32];
    snprintf(off, sizeof(off), "%lld", (long long)(offset + got));
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "X-Docket-Offset", off);
    if (job_terminal(c, job) && offset + got >= size)
        evhttp_add_header(h, "X-Docket-Eof", "1");
    ctl_reply_raw(c, req, 200, "text/plain; charset=utf-8", buf ? buf : "", (size_t)got);
    free(buf);
}

static void waiter_free(struct ctl *c, struct ctl_log_waiter *w)
{
    struct ctl_log_waiter **pp = &c->log_waiters;
    while (*pp && *pp != w)
        pp = &(*pp)->next;
    if (*pp)
        *pp = w->next;
    struct evhttp_connection *con = evhttp_request_get_connection(w->req);
    if (con)
        ctl_conn_watch(c, con, NULL, NULL);
    event_free(w->timer);
    free(w);
}

static void waiter_fire(evutil_socket_t fd, short what, void *arg)
{
    struct ctl_log_waiter *w = arg;
    struct ctl *c = w->c;
    struct evhttp_request *req = w->req;
    uint64_t job = w->job;
    int stream = w->stream;
    int64_t off = w->offset;
    waiter_free(c, w);
    send_chunk(c, req, job, stream, off);
}

static void waiter_closed(struct evhttp_connection *con, void *arg)
{
    struct ctl_log_waiter *w = arg;
    struct ctl_log_waiter **pp = &w->c->log_waiters;
    while (*pp && *pp != w)
        pp = &(*pp)->next;
    if (*pp)
        *pp = w->next;
    event_free(w->timer);
    free(w);
}

/* Wake the followers of (job, stream) that now have bytes, or all when it ended. */
static void wake(struct ctl *c, uint64_t job, int stream, bool ended)
{
    struct ctl_log_waiter *w = c->log_waiters;
    while (w) {
        struct ctl_log_waiter *next = w->next;
        if (w->job == job &&
            (ended || (w->stream == stream && log_size(c, job, stream) > w->offset)))
            waiter_fire(-1, 0, w);
        w = next;
    }
}

void ctl_logs_job_ended(struct ctl *c, uint64_t job)
{
    wake(c, job, 0, true);
}

void ctl_logs_stop(struct ctl *c)
{
    while (c->log_waiters) {
        struct ctl_log_waiter *w = c->log_waiters;
        struct evhttp_request *req = w->req;
        waiter_free(c, w);
        evhttp_send_reply(req, 503, "shutting down", NULL);
    }
}

void h_job_logs(struct ctl_req *r)
{
    struct ctl *c = r->c;
    struct proto_error e;
    int64_t id, offset = 0;
    struct store_job row;
    if (parse_int64(r->arg[0], 1, INT64_MAX, &id) < 0 ||
        store_job_get(c->store, (uint64_t)id, &row) < 0) {
        ctl_reply_errorf(c, r->req, 404, NULL, "no such job '%.32s'", r->arg[0]);
        return;
    }
    int rc = ctl_authorize(&r->id, CTL_JOB_LOGS, row.user, &e);
    store_job_release(&row);
    if (rc < 0) {
        ctl_reply_error(c, r->req, &e);
        return;
    }
    const char *s = ctl_query(r, "stream"), *o = ctl_query(r, "offset"),
               *f = ctl_query(r, "follow");
    int stream = 0;
    if (s && strcmp(s, "stdout") != 0 && strcmp(s, "stderr") != 0) {
        ctl_reply_errorf(c, r->req, 400, "stream", "stream must be stdout or stderr");
        return;
    }
    stream = s && strcmp(s, "stderr") == 0;
    if (o && parse_int64(o, 0, INT64_MAX, &offset) < 0) {
        ctl_reply_errorf(c, r->req, 400, "offset", "offset must be a non-negative integer");
        return;
    }
    bool follow = f && (strcmp(f, "1") == 0 || strcmp(f, "true") == 0);
    if (!follow || log_size(c, (uint64_t)id, stream) > offset || job_terminal(c, (uint64_t)id)) {
        send_chunk(c, r->req, (uint64_t)id, stream, offset);
        return;
    }
    struct ctl_log_waiter *w = calloc(1, sizeof(*w));
    if (!w) {
        ctl_reply_errorf(c, r->req, 500, NULL, "out of memory");
        return;
    }
    *w = (struct ctl_log_waiter){c, r->req, (uint64_t)id, stream, offset, NULL, c->log_waiters};
    w->timer = xnonnull(evtimer_new(c->base, waiter_fire, w), "log follow timer");
    struct timeval tv = {LOG_FOLLOW_MS / 1000, 0};
    event_add(w->timer, &tv);
    c->log_waiters = w;
    struct evhttp_connection *con = evhttp_request_get_connection(r->req);
    if (con)
        ctl_conn_watch(c, con, waiter_closed, w);
}

static int append_chunk(struct ctl *c, uint64_t job, int stream, int64_t offset,
                        const unsigned char *data, size_t n, int64_t *end)
{
    char dir[CTL_PATH_MAX + 16], path[CTL_PATH_MAX + 64];
    snprintf(dir, sizeof(dir), "%s/logs", c->cfg.state_dir);
    mkdir(dir, 0750);
    log_path(c, job, stream, path, sizeof(path));
    int64_t size = log_size(c, job, stream);
    *end = size;
    if (offset > size)
        return -ERANGE;
    if (offset + (int64_t)n <= size)
        return 0; /* a repeat */
    size_t skip = (size_t)(size - offset);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0)
        return -errno;
    ssize_t w = write(fd, data + skip, n - skip);
    int err = w < 0 ? -errno : 0;
    close(fd);
    if (err < 0)
        return err;
    *end = size + w;
    return 0;
}

void h_agent_logs(struct ctl_req *r)
{
    static const char *const known[] = {"node", "job", "stream", "offset", "data", NULL};
    struct proto_error e;
    int64_t job = 0, offset = 0, end = 0;
    json_t *b = ctl_body_json(r, false);
    if (!b)
        return;
    json_t *node = json_object_get(b, "node"), *st = json_object_get(b, "stream");
    json_t *data = json_object_get(b, "data");
    int rc = proto_check_fields(b, "", known, &e);
    if (rc == 0 && (!json_is_string(node) || strcmp(json_string_value(node), r->id.node_name)))
        rc = proto_errorf(&e, 403, NULL, "node", "this credential belongs to node '%s'",
                          r->id.node_name);
    if (rc == 0)
        rc = proto_get_int(json_object_get(b, "job"), "job", 1, INT64_MAX, &job, &e);
    if (rc == 0)
        rc = proto_get_int(json_object_get(b, "offset"), "offset", 0, INT64_MAX, &offset, &e);
    const char *ss = json_string_value(st);
    if (rc == 0 && (!ss || (strcmp(ss, "stdout") && strcmp(ss, "stderr"))))
        rc = proto_errorf(&e, 400, NULL, "stream", "stream must be stdout or stderr");
    if (rc == 0 && !json_is_string(data))
        rc = proto_errorf(&e, 400, NULL, "data", "data must be a base64 string");
    struct store_job row;
    if (rc == 0 && store_job_get(r->c->store, (uint64_t)job, &row) < 0)
        rc = proto_errorf(&e, 404, NULL, "job", "no such job %lld", (long long)job);
    else if (rc == 0)
        store_job_release(&row);
    unsigned char *raw = NULL;
    int64_t n = 0;
    if (rc == 0) {
        size_t max = B64_DECODED_MAX(json_string_length(data));
        raw = malloc(max + 1);
        n = raw ? b64_decode(json_string_value(data), json_string_length(data), raw, max) : -ENOMEM;
        if (n < 0)
            rc = proto_errorf(&e, 400, NULL, "data", "data is not valid base64");
    }
    int stream = ss && strcmp(ss, "stderr") == 0;
    if (rc == 0) {
        int arc = append_chunk(r->c, (uint64_t)job, stream, offset, raw, (size_t)n, &end);
        if (arc == -ERANGE)
            rc = proto_errorf(&e, 409, NULL, "offset",
                              "offset %lld is past the end of the log (%lld)", (long long)offset,
                              (long long)end);
        else if (arc < 0)
            rc = proto_errorf(&e, 500, NULL, NULL, "cannot write the log: %s", strerror(-arc));
    }
    free(raw);
    json_decref(b);
    if (rc < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return;
    }
    wake(r->c, (uint64_t)job, stream, false);
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:I}", "offset", (json_int_t)end));
}
