/*
 * logs.c - job output, kept per run (issue 12): agents append chunks of one stream of one
 * run (POST /v1/agent/logs) to STATE_DIR/logs/ID.RUN.stdout|stderr; clients read one run
 * from an offset (GET /v1/jobs/ID/logs?run=N), optionally waiting up to 25 s for more
 * (follow=1). A chunk at an offset already written is ignored past what is new, so agents
 * may resend after a lost reply; a chunk past the end (a gap) is refused with 409 naming
 * `offset`, and the agent resends the run from 0. A node posts output only for a run
 * placed on it (rank 0 of a multi-node job), and nothing more once the agent said that
 * stream of the run is complete (`final`). Past log_max_bytes of a job (all runs and
 * streams) one marker line is written, the job's events say so, and the rest is dropped.
 * A finished job's stream moved to the log archive (logarch.c) is read from there, and
 * counts as complete: nothing more is taken for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/config.h"
#include "controller/conn.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/logarch.h"
#include "controller/logs.h"
#include "controller/loop.h"
#include "protocol/agent_msg.h"
#include "protocol/storage.h"
#include "util/clock.h"
#include "util/parse.h"
#include "util/str.h"
#include "util/xalloc.h"

/* LOG_SETTLE_MS: how long a reader waits for a run's `final` once the run can send no
 * more in the ordinary way (a later run started, or the job ended) before it takes the
 * output as complete anyway (an agent that never came back). */
enum { LOG_READ_MAX = 1 << 20, LOG_FOLLOW_MS = 25000, LOG_SETTLE_MS = 30000 };

static const char cut_marker[] = "\n[docketd: output cut here: the job's log passed "
                                 "log_max_bytes]\n";

struct ctl_log_waiter {
    struct ctl *c;
    struct evhttp_request *req;
    uint64_t job;
    int run;
    int stream; /* 0 stdout, 1 stderr */
    int64_t offset;
    struct event *timer;
    struct ctl_log_waiter *next;
};

static void log_path(struct ctl *c, uint64_t job, int run, int stream, char *out, size_t len)
{
    const char *s = stream ? "stderr" : "stdout";
    snprintf(out, len, "%s/logs/%llu.%d.%s", c->cfg.state_dir, (unsigned long long)job, run, s);
    /* a job logged before runs (logs/ID.stream, schema 3) reads as its run 1 */
    if (run == 1 && access(out, F_OK) != 0) {
        char old[CTL_PATH_MAX + 64];
        snprintf(old, sizeof(old), "%s/logs/%llu.%s", c->cfg.state_dir, (unsigned long long)job, s);
        if (access(old, F_OK) == 0)
            snprintf(out, len, "%s", old);
    }
}

/* The stream's size: its file here, else its archived copy's (logarch.c), else 0. */
static int64_t log_size(struct ctl *c, uint64_t job, int run, int stream)
{
    char path[CTL_PATH_MAX + 64];
    struct stat sb;
    if (run <= 0)
        return 0;
    log_path(c, job, run, stream, path, sizeof(path));
    if (stat(path, &sb) == 0)
        return (int64_t)sb.st_size;
    int64_t archived = ctl_logarch_size(c, job, run, stream);
    return archived > 0 ? archived : 0;
}

/* Bytes kept for the job, all runs and streams (the cap's measure). */
static int64_t job_log_bytes(struct ctl *c, uint64_t job, int last)
{
    int64_t total = 0;
    for (int r = 1; r <= last; r++)
        total += log_size(c, job, r, 0) + log_size(c, job, r, 1);
    return total;
}

static bool job_terminal(struct ctl *c, uint64_t job)
{
    struct sched_job_view v;
    return sched_job_get(c->sched, job, &v) < 0;
}

/* The first node of a run's allocation ",gpu01,gpu02,": its rank 0, which ships the
 * output. "" when the list is malformed. */
static void run_rank0(const char *nodes, char *out, size_t len)
{
    const char *p = nodes[0] == ',' ? nodes + 1 : nodes, *comma = strchr(p, ',');
    out[0] = '\0';
    if (comma && (size_t)(comma - p) < len)
        snprintf(out, len, "%.*s", (int)(comma - p), p);
}

/* Is the agent that ships this run still at it? Its node is reachable and its last
 * heartbeat still listed the job (an agent keeps a finished job until its output is all
 * out), or it has not sent one since docketd started. A follower then waits for `final`
 * however long the shipping takes (issue 33 #12: an end-of-file at a fixed time after
 * the exit cut a 200 MB job's output short). */
static bool shipper_busy(struct ctl *c, const struct store_run *rr)
{
    char rank0[80];
    run_rank0(rr->nodes, rank0, sizeof(rank0));
    int idx = rank0[0] ? sched_node_find(c->sched, rank0) : -1;
    struct ctl_node *n = idx >= 0 ? ctl_node_at(c, (uint32_t)idx) : NULL;
    struct sched_node_view v;
    if (!n || sched_node_get(c->sched, (uint32_t)idx, &v) < 0 ||
        v.state == SCHED_NODE_UNREACHABLE || v.state == SCHED_NODE_DOWN)
        return false;
    if (!n->held_known)
        return true;
    for (size_t i = 0; i < n->nheld; i++)
        if (n->held[i] == rr->job)
            return true;
    return false;
}

/* LOG_SETTLE_MS, or the test-only $DOCKETD_TEST_LOG_SETTLE_MS (logs_runs.bats shows a
 * follower outwaits it while the agent still holds the job). */
static int64_t log_settle_ms(void)
{
    const char *v = getenv("DOCKETD_TEST_LOG_SETTLE_MS");
    int64_t ms = 0;
    if (v && parse_int64(v, 1, INT32_MAX, &ms) == 0)
        return ms;
    return LOG_SETTLE_MS;
}

/* When the stream's file last grew (the controller's clock, ms), 0 when it has none. */
static int64_t log_mtime_ms(struct ctl *c, uint64_t job, int run, int stream)
{
    char path[CTL_PATH_MAX + 64];
    struct stat sb;
    log_path(c, job, run, stream, path, sizeof(path));
    if (stat(path, &sb) < 0)
        return 0;
    return (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
}

/* A run that can send no more in the ordinary way (a later run started at `since`, or
 * the job ended then) and whose agent is not busy with it any more: complete once
 * nothing came for LOG_SETTLE_MS (an agent that lost the job, or never came back). */
static bool run_settled(struct ctl *c, const struct store_run *rr, int stream, int64_t since)
{
    if (shipper_busy(c, rr))
        return false;
    int64_t grew = log_mtime_ms(c, rr->job, rr->run, stream);
    if (grew > since)
        since = grew;
    return clock_now_ms() - since >= log_settle_ms();
}

/* Is the output of this run's stream all here? Once the agent said so (final); at once
 * when the job ended as lost (its node is gone); otherwise once the run can send no more
 * and its agent is done with it or gone (run_settled). */
static bool run_complete(struct ctl *c, uint64_t job, int run, int stream, int last)
{
    struct store_run rr, next;
    if (run <= 0 || run > last)
        return job_terminal(c, job); /* never started: complete once it never will */
    if (store_run_get(c->store, job, run, &rr) < 0)
        return job_terminal(c, job);
    if (rr.final_mask & (1 << stream) || ctl_logarch_size(c, job, run, stream) >= 0)
        return true; /* said complete, or archived (only complete logs are) */
    if (run < last)
        return store_run_get(c->store, job, run + 1, &next) == 0 &&
               run_settled(c, &rr, stream, next.start_ms);
    if (!job_terminal(c, job))
        return false;
    struct store_job row;
    if (store_job_get(c->store, job, &row) < 0)
        return true;
    json_t *x = row.exit ? json_loads(row.exit, 0, NULL) : NULL;
    const char *kind = json_string_value(json_object_get(x, "kind"));
    bool done = (kind && strcmp(kind, "lost") == 0) || run_settled(c, &rr, stream, row.end_ms);
    json_decref(x);
    store_job_release(&row);
    return done;
}

/* Send bytes [offset, offset + LOG_READ_MAX) of one run with the offset/run/eof headers. */
static void send_chunk(struct ctl *c, struct evhttp_request *req, uint64_t job, int run, int stream,
                       int64_t offset)
{
    char path[CTL_PATH_MAX + 64];
    int last = store_run_last(c->store, job);
    if (last < 0)
        last = 0;
    log_path(c, job, run, stream, path, sizeof(path));
    int64_t size = log_size(c, job, run, stream);
    if (offset > size)
        offset = size;
    size_t n = (size_t)(size - offset > LOG_READ_MAX ? LOG_READ_MAX : size - offset);
    char *buf = malloc(n + 1), pool[STORAGE_POOL_NAME_MAX] = "";
    ssize_t got = 0;
    int fd = run > 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0 && buf && n > 0)
        got = pread(fd, buf, n, offset);
    if (fd >= 0)
        close(fd);
    else if (run > 0 && buf && n > 0)
        got = ctl_logarch_read(c, job, run, stream, offset, buf, n, pool, sizeof(pool));
    if (got < 0) {
        free(buf);
        ctl_reply_errorf(c, req, 500, NULL,
                         "cannot read the archived log of job %llu (run %d) from pool %s: %s",
                         (unsigned long long)job, run, pool[0] ? pool : "?", strerror((int)-got));
        return;
    }
    char off[32], rs[16], ls[16];
    snprintf(off, sizeof(off), "%lld", (long long)(offset + got));
    snprintf(rs, sizeof(rs), "%d", run);
    snprintf(ls, sizeof(ls), "%d", last);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "X-Docket-Offset", off);
    evhttp_add_header(h, "X-Docket-Run", rs);
    evhttp_add_header(h, "X-Docket-Runs", ls);
    if (pool[0])
        evhttp_add_header(h, "X-Docket-Archived", pool);
    if (offset + got >= size && run_complete(c, job, run, stream, last))
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
    int run = w->run, stream = w->stream;
    int64_t off = w->offset;
    waiter_free(c, w);
    send_chunk(c, req, job, run, stream, off);
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

/* Wake the followers of (job, run, stream) that now have bytes, or all of the job's when
 * `all` (it ended, a new run started, a stream was said complete). */
static void wake(struct ctl *c, uint64_t job, int run, int stream, bool all)
{
    struct ctl_log_waiter *w = c->log_waiters;
    while (w) {
        struct ctl_log_waiter *next = w->next;
        if (w->job == job && (all || (w->run == run && w->stream == stream &&
                                      log_size(c, job, run, stream) > w->offset)))
            waiter_fire(-1, 0, w);
        w = next;
    }
}

bool ctl_log_complete(struct ctl *c, uint64_t job, int run, int stream)
{
    int last = store_run_last(c->store, job);
    return last >= 0 && run_complete(c, job, run, stream, last);
}

void ctl_logs_job_ended(struct ctl *c, uint64_t job)
{
    wake(c, job, 0, 0, true);
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
    int64_t id, offset = 0, run = 0;
    /* the route's check (http.c, authz.c) found the job and allowed the caller */
    if (parse_int64(r->arg[0], 1, INT64_MAX, &id) < 0) {
        ctl_reply_errorf(c, r->req, 404, NULL, "no such job '%.32s'", r->arg[0]);
        return;
    }
    const char *s = ctl_query(r, "stream"), *o = ctl_query(r, "offset"),
               *f = ctl_query(r, "follow"), *rq = ctl_query(r, "run");
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
    int last = store_run_last(c->store, (uint64_t)id);
    if (last < 0) {
        ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
        return;
    }
    if (rq && parse_int64(rq, 0, INT32_MAX, &run) < 0) {
        ctl_reply_errorf(c, r->req, 400, "run", "run must be a run number (1, 2, ...)");
        return;
    }
    /* run 1 of a job not started yet is asked for before it exists: empty until it does */
    if (run > (last > 1 ? last : 1)) {
        ctl_reply_errorf(c, r->req, 404, "run", "job %lld has had %d run%s, not %lld",
                         (long long)id, last, last == 1 ? "" : "s", (long long)run);
        return;
    }
    if (run == 0)
        run = last;
    bool follow = f && (strcmp(f, "1") == 0 || strcmp(f, "true") == 0);
    if (!follow || log_size(c, (uint64_t)id, (int)run, stream) > offset ||
        run_complete(c, (uint64_t)id, (int)run, stream, last)) {
        send_chunk(c, r->req, (uint64_t)id, (int)run, stream, offset);
        return;
    }
    struct ctl_log_waiter *w = calloc(1, sizeof(*w));
    if (!w) {
        ctl_reply_errorf(c, r->req, 500, NULL, "out of memory");
        return;
    }
    *w = (struct ctl_log_waiter){c,      r->req, (uint64_t)id, (int)run,
                                 stream, offset, NULL,         c->log_waiters};
    w->timer = xnonnull(evtimer_new(c->base, waiter_fire, w), "log follow timer");
    struct timeval tv = {LOG_FOLLOW_MS / 1000, 0};
    event_add(w->timer, &tv);
    c->log_waiters = w;
    struct evhttp_connection *con = evhttp_request_get_connection(r->req);
    if (con)
        ctl_conn_watch(c, con, waiter_closed, w);
}

/* ------------------------------------------------------------------------------------ */
/* The agent's side                                                                      */

static bool node_in(const char *nodes, const char *node)
{
    char want[80];
    snprintf(want, sizeof(want), ",%s,", node);
    return strstr(nodes, want) != NULL;
}

int ctl_run_for_node(struct ctl *c, const char *node, uint64_t job, int run, bool output,
                     const char *field, struct store_run *out, struct proto_error *e)
{
    int last = store_run_last(c->store, job);
    if (last < 0)
        return proto_errorf(e, 500, NULL, NULL, "store: %s", store_errmsg(c->store)), -EIO;
    if (run == 0)
        run = last;
    int rc = run > 0 ? store_run_get(c->store, job, run, out) : -ENOENT;
    if (rc == -ENOENT || (rc == 0 && !node_in(out->nodes, node)))
        return proto_errorf(e, 403, NULL, field, "job %llu has no run %d placed on node '%s'",
                            (unsigned long long)job, run, node),
               -EPERM;
    if (rc < 0)
        return proto_errorf(e, 500, NULL, NULL, "store: %s", store_errmsg(c->store)), -EIO;
    /* a multi-node job's log is its rank 0's (the first node of the allocation) */
    char first[80];
    run_rank0(out->nodes, first, sizeof(first));
    if (output && strcmp(first, node) != 0)
        return proto_errorf(e, 403, NULL, field,
                            "the output of job %llu (run %d) is shipped by its rank 0, node '%s'",
                            (unsigned long long)job, run, first),
               -EPERM;
    return 0;
}

static int write_all(int fd, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0)
            return -errno;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* What a chunk did to the log: *end, the offset the agent goes on from; cut, this chunk
 * reached the job's cap (docketd's marker written); agent_cut, the agent's own limit
 * marker (a chunk marked `cut`) was written. */
struct append_result {
    int64_t end;
    bool cut, agent_cut;
};

static int append_bytes(const char *path, const void *data, size_t n, bool marker)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0)
        return -errno;
    int err = write_all(fd, data, n);
    if (err == 0 && marker)
        err = write_all(fd, cut_marker, sizeof(cut_marker) - 1);
    close(fd);
    return err;
}

/* Append what is new of the chunk to the run's stream file, cutting at the job's cap.
 * The marker goes in with the first byte past the cap, also when the log reached the cap
 * exactly with the chunk before (a cap that is a multiple of the agent's chunk: issue 33
 * #12); past the marker everything is taken and dropped. */
static int append_chunk(struct ctl *c, const struct agent_log_chunk *k, int last,
                        struct append_result *res)
{
    char dir[CTL_PATH_MAX + 16], path[CTL_PATH_MAX + 64];
    snprintf(dir, sizeof(dir), "%s/logs", c->cfg.state_dir);
    mkdir(dir, 0750);
    log_path(c, k->job, k->run, k->stream, path, sizeof(path));
    int64_t size = log_size(c, k->job, k->run, k->stream);
    int64_t total = job_log_bytes(c, k->job, last), max = c->cfg.log_max_bytes;
    int64_t chunk_end = k->offset + (int64_t)k->len;
    *res = (struct append_result){size, false, false};
    if (ctl_logarch_size(c, k->job, k->run, k->stream) >= 0) {
        res->end = chunk_end > size ? chunk_end : size; /* archived: complete, nothing taken */
        return 0;
    }
    if (total >= max) {
        res->end = chunk_end; /* taken and dropped */
        if (total > max || chunk_end <= size)
            return 0; /* the marker is in, or nothing new */
        res->cut = true;
        return append_bytes(path, "", 0, true);
    }
    if (k->offset > size)
        return -ERANGE;
    if (chunk_end <= size)
        return 0; /* a repeat */
    size_t skip = (size_t)(size - k->offset), n = k->len - skip;
    if (total + (int64_t)n > max) {
        n = (size_t)(max - total);
        res->cut = true;
    }
    int err = append_bytes(path, k->data + skip, n, res->cut);
    if (err < 0)
        return err;
    res->agent_cut = k->cut && !res->cut;
    res->end = res->cut ? chunk_end : size + (int64_t)n;
    return 0;
}

/* The job's events say its output was cut: by docketd's log_max_bytes, or by the
 * node's --log-limit (the agent marked the chunk with its marker). */
static int cut_event(struct ctl *c, const struct agent_log_chunk *k, bool by_agent)
{
    char detail[160];
    if (by_agent)
        snprintf(detail, sizeof(detail),
                 "the %s passed node %s's log limit: the rest is dropped there",
                 k->stream ? "stderr" : "stdout", k->node);
    else
        snprintf(detail, sizeof(detail),
                 "the job's output passed log_max_bytes (%lld): the rest is dropped",
                 (long long)c->cfg.log_max_bytes);
    log_warn("log_cut", "job=%llu run=%d by=%s limit=%lld", (unsigned long long)k->job, k->run,
             by_agent ? "node" : "docketd", (long long)c->cfg.log_max_bytes);
    return ctl_job_event(c, k->job, "log_cut", "", "", k->node,
                         by_agent ? "log_limit" : "log_max_bytes", detail);
}

void h_agent_logs(struct ctl_req *r)
{
    struct proto_error e;
    struct agent_log_chunk k;
    struct store_run run;
    memset(&run, 0, sizeof(run));
    int64_t end = 0;
    json_t *b = ctl_body_json(r, false);
    if (!b)
        return;
    int rc = agent_logs_parse(b, &k, &e);
    json_decref(b);
    if (rc < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return;
    }
    if (strcmp(k.node, r->id.node_name) != 0)
        rc = proto_errorf(&e, 403, NULL, "node", "this credential belongs to node '%s'",
                          r->id.node_name);
    struct store_job row;
    if (rc == 0 && store_job_get(r->c->store, k.job, &row) < 0)
        rc = proto_errorf(&e, 404, NULL, "job", "no such job %llu", (unsigned long long)k.job);
    else if (rc == 0)
        store_job_release(&row);
    if (rc == 0)
        rc = ctl_run_for_node(r->c, k.node, k.job, k.run, true, "run", &run, &e);
    int last = rc == 0 ? store_run_last(r->c->store, k.job) : 0;
    if (rc == 0)
        k.run = run.run;
    int bit = 1 << k.stream;
    if (rc == 0 && (run.final_mask & bit)) {
        /* complete: a repeat is fine (an agent restarted after its final chunk), new bytes
         * are not (a node writing into an old run) */
        end = log_size(r->c, k.job, k.run, k.stream);
        if (k.offset + (int64_t)k.len > end &&
            job_log_bytes(r->c, k.job, last) < r->c->cfg.log_max_bytes)
            rc = proto_errorf(&e, 409, NULL, "run",
                              "the %s of run %d of job %llu is complete: nothing more is taken",
                              k.stream ? "stderr" : "stdout", k.run, (unsigned long long)k.job);
        else if (k.offset + (int64_t)k.len > end)
            end = k.offset + (int64_t)k.len;
        if (rc == 0) {
            agent_log_chunk_release(&k);
            ctl_reply_json(r->c, r->req, 200, json_pack("{s:I}", "offset", (json_int_t)end));
            return;
        }
    }
    struct append_result res = {0};
    if (rc == 0) {
        int arc = append_chunk(r->c, &k, last, &res);
        if (arc == -ERANGE)
            rc = proto_errorf(&e, 409, NULL, "offset",
                              "offset %lld is past the end of the log (%lld)", (long long)k.offset,
                              (long long)res.end);
        else if (arc < 0)
            rc = proto_errorf(&e, 500, NULL, NULL, "cannot write the log: %s", strerror(-arc));
        end = res.end;
    }
    if (rc == 0 && (res.cut || res.agent_cut) && cut_event(r->c, &k, res.agent_cut) < 0)
        rc = proto_errorf(&e, 500, NULL, NULL, "store: %s", store_errmsg(r->c->store));
    if (rc == 0 && k.final && store_run_set_final(r->c->store, k.job, k.run, bit) < 0)
        rc = proto_errorf(&e, 500, NULL, NULL, "store: %s", store_errmsg(r->c->store));
    int stream = k.stream, krun = k.run;
    uint64_t job = k.job;
    bool final = k.final;
    agent_log_chunk_release(&k);
    if (rc < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return;
    }
    wake(r->c, job, krun, stream, final);
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:I}", "offset", (json_int_t)end));
}
