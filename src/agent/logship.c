/*
 * logship.c - the jobs' stdout/stderr shipped to docketd in increments: files opened
 * only while they are still the ones the supervisor made, this run's controller offset
 * asked once and kept in JOBDIR/log_base, the per-job log limit with its cut marker,
 * gaps and refusals handled. agent_http.c decides when a chunk goes. See agent_int.h
 * and docs/agent.md.
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
#include "util/clock.h"
#include "util/log.h"
#include "util/xalloc.h"

enum { LOG_CHUNK = 256 * 1024 };

struct logreq {
    struct agent *a;
    uint64_t job;
    int stream;
    int64_t at; /* the controller offset the chunk was sent at */
    bool probe; /* an empty chunk asking where the log ends */
};

/* JOBDIR/log_base: the controller offsets of this run's first bytes, written once they
 * are known and before any byte goes at them, so a restarted agent goes on the same. */
static void save_base(struct agent *a, struct ajob *j)
{
    char dir[PATH_MAX], path[PATH_MAX + 32], tmp[PATH_MAX + 32], buf[64];
    sup_job_dir(&a->sup, j->id, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/log_base", dir);
    snprintf(tmp, sizeof tmp, "%s/.log_base.tmp", dir);
    int n = snprintf(buf, sizeof buf, "%lld %lld\n", (long long)j->base[0], (long long)j->base[1]);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, buf, (size_t)n) != n || rename(tmp, path) < 0)
        log_error("log_base_save_failed", "job=%llu error=\"%s\"", (unsigned long long)j->id,
                  strerror(errno));
    if (fd >= 0)
        close(fd);
}

void ag_load_base(struct agent *a, struct ajob *j)
{
    char dir[PATH_MAX], path[PATH_MAX + 32], buf[64] = "";
    j->base[0] = j->base[1] = -1;
    sup_job_dir(&a->sup, j->id, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/log_base", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    long long b0, b1;
    if (n > 0 && (buf[n] = '\0', sscanf(buf, "%lld %lld", &b0, &b1) == 2)) {
        j->base[0] = b0;
        j->base[1] = b1;
    }
}

static void logs_cb(struct evhttp_request *req, void *arg)
{
    struct logreq *lr = arg;
    struct agent *a = lr->a;
    a->log_inflight = NULL;
    int code;
    json_t *body = ag_reply_json(req, &code);
    a->post_inflight = false;
    int64_t off = 0;
    struct agent_msg_error e;
    struct ajob *j = ag_job_find(a, lr->job);
    if (code == 200 && body && agent_logs_reply_parse(body, &off, &e) == 0) {
        if (j && lr->probe) {
            j->base[lr->stream] = off; /* this run starts where the log ends now */
            j->sent[lr->stream] = 0;
            save_base(a, j);
        } else if (j && j->base[lr->stream] >= 0) {
            /* the controller's end is where we go on from: past a repeat it already has
             * (after our restart), or back to a gap it is missing */
            int64_t sent = off - j->base[lr->stream];
            j->sent[lr->stream] = sent < 0 ? 0 : sent;
            if (off <= lr->at) /* no progress: do not spin, try again in a second */
                j->log_hold_until = clock_mono_ms() + 1000;
        }
        a->post_failures = 0;
        json_decref(body);
        free(lr);
        ag_kick_post(a);
        return;
    }
    json_t *m = json_object_get(json_object_get(body, "error"), "message");
    const char *msg = json_is_string(m) ? json_string_value(m) : "";
    if (j && code == 409) {
        /* the controller has less of the log than this run's base says (it lost some):
         * ask again where it ends; some of this run may then be sent twice, none lost */
        log_warn("log_gap", "job=%llu stream=%d message=\"%s\"", (unsigned long long)j->id,
                 lr->stream, msg);
        j->base[lr->stream] = -1;
        j->sent[lr->stream] = 0;
        code = 200;
    } else if (j && code >= 400 && code < 500 && code != 401 && code != 408 && code != 429) {
        /* refused for good (the job is gone there, a bad chunk): this stream stops here,
         * rather than hold every other job's output behind it */
        log_error("log_refused", "job=%llu stream=%d status=%d message=\"%s\"",
                  (unsigned long long)j->id, lr->stream, code, msg);
        j->sent[lr->stream] = INT64_MAX / 2;
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

/* The job's output file, opened for reading the safe way: never through a symlink,
 * never waiting on a FIFO, and only while it is still the regular file the supervisor
 * opened for the job (same device and inode). A job that swaps its output path for
 * anything else (a link to a file it cannot read, a FIFO) gets nothing shipped from it. */
static int open_output(const struct ajob *j, int s, int64_t *size)
{
    const char *path = s ? j->st.err_path : j->st.out_path;
    int64_t dev = s ? j->st.err_dev : j->st.out_dev, ino = s ? j->st.err_ino : j->st.out_ino;
    if (!path[0] || ino == 0)
        return -ENOENT;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -errno;
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
                       size_t len, bool probe)
{
    json_t *body = agent_logs_body(a->cfg.name, j->id, s ? "stderr" : "stdout", at, buf, len);
    struct logreq *lr = xcalloc(1, sizeof *lr);
    *lr = (struct logreq){a, j->id, s, at, probe};
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
static int stream_open(const struct ajob *j, int s, int64_t *size, int64_t *start)
{
    if (s == 1 && strcmp(j->st.err_path, j->st.out_path) == 0)
        return -1;
    *size = 0;
    *start = s ? j->st.err_start : j->st.out_start;
    return open_output(j, s, size);
}

/* Ship one increment of one log, if any is pending; true when a request went out. */
bool ag_ship_log(struct agent *a, struct ajob *j)
{
    if (j->log_hold_until && clock_mono_ms() < j->log_hold_until)
        return false;
    for (int s = 0; s < 2; s++) {
        int64_t size, start;
        int fd = stream_open(j, s, &size, &start);
        if (fd < 0)
            continue;
        int64_t limit = a->cfg.log_limit_bytes, sent = j->sent[s];
        bool more = size - start > sent;
        if (!more || sent > limit) {
            close(fd);
            continue; /* nothing new, or cut already (the marker went) */
        }
        if (j->base[s] < 0) {
            close(fd);
            return send_chunk(a, j, s, 0, "", 0, true);
        }
        if (sent == limit) {
            close(fd);
            log_warn("log_cut", "job=%llu stream=%s limit=%lld", (unsigned long long)j->id,
                     s ? "stderr" : "stdout", (long long)limit);
            return send_chunk(a, j, s, j->base[s] + sent, cut_marker, sizeof cut_marker - 1, false);
        }
        int64_t want = size - start - sent;
        if (want > LOG_CHUNK)
            want = LOG_CHUNK;
        if (want > limit - sent)
            want = limit - sent;
        char *buf = xmalloc((size_t)want);
        ssize_t got = pread(fd, buf, (size_t)want, start + sent);
        close(fd);
        if (got <= 0) {
            free(buf);
            continue;
        }
        bool ok = send_chunk(a, j, s, j->base[s] + sent, buf, (size_t)got, false);
        free(buf);
        return ok;
    }
    return false;
}

/* Output of this run not shipped yet (bytes below the limit, or the cut marker). */
bool ag_logs_pending(const struct agent *a, const struct ajob *j)
{
    for (int s = 0; s < 2; s++) {
        int64_t size, start;
        int fd = stream_open(j, s, &size, &start);
        if (fd < 0)
            continue;
        close(fd);
        if (size - start > j->sent[s] && j->sent[s] <= a->cfg.log_limit_bytes)
            return true;
    }
    return false;
}
