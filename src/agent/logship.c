/*
 * logship.c - the jobs' stdout/stderr shipped to docketd in increments, under the job's
 * run number (each run from its own offset 0: a requeued run's output is its own), files
 * opened only while they are still the ones the supervisor made, the per-job log limit
 * with its cut marker, a final chunk once a finished job's stream is all out, gaps and
 * refusals handled. agent_http.c decides when a chunk goes. See agent_int.h and
 * docs/agent.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/http.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/pathopen.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"

enum { LOG_CHUNK = 256 * 1024 };

struct logreq {
    struct agent *a;
    uint64_t job;
    int stream;
    int64_t at; /* the offset the chunk was sent at */
    size_t len;
    bool final;
};

static void logs_cb(struct evhttp_request *req, void *arg)
{
    struct logreq *lr = arg;
    struct agent *a = lr->a;
    a->log_inflight = NULL;
    int code;
    json_t *body = ag_reply_json(req, &code);
    a->post_inflight = false;
    int64_t off = 0;
    struct proto_error e = {0};
    struct ajob *j = ag_job_find(a, lr->job);
    if (code == 200 && body && agent_logs_reply_parse(body, &off, &e) == 0) {
        if (j) {
            /* the controller's end is where we go on from: past a repeat it already has
             * (after our restart), or back to a gap it is missing */
            j->sent[lr->stream] = off;
            if (lr->final)
                j->final_sent[lr->stream] = true;
            else if (lr->len > 0 && off <= lr->at) /* no progress: do not spin */
                j->log_hold_until = clock_mono_ms() + 1000;
        }
        a->post_failures = 0;
        json_decref(body);
        free(lr);
        ag_kick_post(a);
        return;
    }
    json_t *err = json_object_get(body, "error");
    json_t *m = json_object_get(err, "message"), *f = json_object_get(err, "field");
    const char *msg = json_is_string(m) ? json_string_value(m) : "";
    if (j && code == 409 && json_is_string(f) && strcmp(json_string_value(f), "offset") == 0) {
        /* the controller has less of this run than we thought (it lost some): send the run
         * again from its start; it keeps what it has and takes the rest */
        log_warn("log_gap", "job=%llu stream=%d message=\"%s\"", (unsigned long long)j->id,
                 lr->stream, msg);
        j->sent[lr->stream] = 0;
        code = 200;
    } else if (j && code >= 400 && code < 500 && code != 401 && code != 408 && code != 429) {
        /* refused for good (not this node's run, the run's output complete there, a bad
         * chunk): this stream stops here, rather than hold every other job's output */
        log_error("log_refused", "job=%llu stream=%d status=%d message=\"%s\"",
                  (unsigned long long)j->id, lr->stream, code, msg);
        j->sent[lr->stream] = INT64_MAX / 2;
        j->final_sent[lr->stream] = true;
        code = 200;
    } else if (code == 401) {
        a->registered = false;
    }
    json_decref(body);
    free(lr);
    if (code == 200) {
        ag_kick_post(a);
        return;
    }
    ag_post_failed(a, code ? "logs refused" : "no connection");
}

static const char cut_marker[] = "\n[docket-node: output cut here, past this node's log limit]\n";

/* The job's output file, opened for reading the safe way: never through a symlink at any
 * component of a path the job chose (a directory swapped for a link to /dev or to a
 * FIFO is never opened by root: opening some devices acts), never waiting on a FIFO, and
 * only while it is still the regular file the supervisor opened for the job (same device
 * and inode). A job that swaps its output path for anything else gets nothing more
 * shipped from it. The agent's own logs (in its state directory) open as they are. */
static int open_output(const struct agent *a, const struct ajob *j, int s, int64_t *size)
{
    const char *path = s ? j->st.err_path : j->st.out_path;
    int64_t dev = s ? j->st.err_dev : j->st.out_dev, ino = s ? j->st.err_ino : j->st.out_ino;
    if (!path[0] || ino == 0)
        return -ENOENT;
    size_t own = strlen(a->cfg.state_dir);
    int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, fd;
    if (own && strncmp(path, a->cfg.state_dir, own) == 0 && path[own] == '/' &&
        !strstr(path + own, "/../")) {
        if ((fd = open(path, flags)) < 0)
            return -errno;
    } else if ((fd = path_open_nofollow(path, flags, 0)) < 0) {
        return fd;
    }
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || (int64_t)sb.st_dev != dev ||
        (int64_t)sb.st_ino != ino) {
        close(fd);
        return -EPERM;
    }
    *size = (int64_t)sb.st_size;
    return fd;
}

static bool send_chunk(struct agent *a, struct ajob *j, int s, int64_t at, const void *buf,
                       size_t len, bool final, bool cut)
{
    json_t *body = agent_logs_body(a->cfg.name, j->id, j->run, s ? "stderr" : "stdout", at, buf,
                                   len, final, cut);
    struct logreq *lr = xcalloc(1, sizeof *lr);
    *lr = (struct logreq){a, j->id, s, at, len, final};
    struct evhttp_request *req = ag_new_request(a, logs_cb, lr, body, true);
    struct evhttp_connection *conn = ag_conn(a, &a->post_conn, 30);
    a->post_inflight = true;
    a->log_inflight = lr;
    if (!req || !conn || evhttp_make_request(conn, req, EVHTTP_REQ_POST, "/v1/agent/logs") < 0) {
        a->post_inflight = false;
        a->log_inflight = NULL;
        free(lr);
        ag_post_failed(a, "cannot send logs");
        return false;
    }
    return true;
}

/* Stream s (0 stdout, 1 stderr) of this run: its file open as shipped from (-1 when there
 * is none, or stderr goes to stdout's file), its size and where this run's output starts. */
static int stream_open(const struct agent *a, const struct ajob *j, int s, int64_t *size,
                       int64_t *start)
{
    if (s == 1 && strcmp(j->st.err_path, j->st.out_path) == 0)
        return -1;
    *size = 0;
    *start = s ? j->st.err_start : j->st.out_start;
    return open_output(a, j, s, size);
}

/* Ship one increment of one log, if any is pending; true when a request went out. A
 * finished job's stream, once all of it is out (or cut), gets a final chunk (empty when
 * nothing is left), also when it has no file at all (a launch that failed). */
bool ag_ship_log(struct agent *a, struct ajob *j)
{
    if (j->log_hold_until && clock_mono_ms() < j->log_hold_until)
        return false;
    for (int s = 0; s < 2; s++) {
        if (j->final_sent[s])
            continue;
        int64_t size = 0, start = 0;
        int fd = stream_open(a, j, s, &size, &start);
        int64_t limit = a->cfg.log_limit_bytes, sent = j->sent[s];
        int64_t avail = fd >= 0 ? size - start : 0;
        if (avail > sent && sent <= limit) {
            if (sent == limit) {
                close(fd);
                log_warn("log_cut", "job=%llu stream=%s limit=%lld", (unsigned long long)j->id,
                         s ? "stderr" : "stdout", (long long)limit);
                /* marked `cut`: docketd records the job's log_cut event with it */
                return send_chunk(a, j, s, sent, cut_marker, sizeof cut_marker - 1, j->exited,
                                  true);
            }
            int64_t want = avail - sent;
            if (want > LOG_CHUNK)
                want = LOG_CHUNK;
            if (want > limit - sent)
                want = limit - sent;
            char *buf = xmalloc((size_t)want);
            ssize_t got = pread(fd, buf, (size_t)want, start + sent);
            close(fd);
            if (got > 0) {
                /* the job is over (its processes reclaimed): this chunk ends the stream
                 * when it reaches the end of the file */
                bool final = j->exited && sent + got >= avail && sent + got < limit;
                bool ok = send_chunk(a, j, s, sent, buf, (size_t)got, final, false);
                free(buf);
                return ok;
            }
            free(buf);
            fd = -1;
        }
        if (fd >= 0)
            close(fd);
        if (j->exited) /* nothing more will come: the stream is complete */
            return send_chunk(a, j, s, sent, "", 0, true, false);
    }
    return false;
}

/* Output of this run not shipped yet (bytes below the limit, the cut marker, or the final
 * chunk of a finished job). */
bool ag_logs_pending(const struct agent *a, const struct ajob *j)
{
    for (int s = 0; s < 2; s++) {
        if (j->final_sent[s])
            continue;
        if (j->exited)
            return true;
        int64_t size, start;
        int fd = stream_open(a, j, s, &size, &start);
        if (fd < 0)
            continue;
        close(fd);
        if (size - start > j->sent[s] && j->sent[s] <= a->cfg.log_limit_bytes)
            return true;
    }
    return false;
}
