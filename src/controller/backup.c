/*
 * backup.c - GET /v1/admin/backup (docs/api.md "Backup", docs/operations.md "Back up and
 * restore the state"): one consistent snapshot of the database, sent to an admin.
 *
 * The loop never waits for it. A thread of its own makes the copy on its own read-only
 * connection (store_backup_write: VACUUM INTO, which docketd's writer does not wait for;
 * on PostgreSQL store_pg_backup_write: pg_dump, one read-only transaction of its own)
 * into STATE_DIR/backup.tmp (0600), checks it (integrity_check) and hashes it (SHA-256),
 * then tells the loop through a pipe. The loop opens the file and unlinks it at once, so
 * no path leaves it behind once the stream starts (a client that leaves, an error, a
 * stop, even a kill: the descriptor holds the only reference); it then sends it in
 * slices (stream.c), one per loop turn, each read only when the client has taken the
 * previous one, with its size, schema version and SHA-256 in the headers. Until then a
 * client that leaves (seen on its socket: evhttp reads nothing meanwhile), or docketd
 * stopping, stops the thread (the store's cancel flag) and the file is removed. One backup at a
 * time: a second is answered 409.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "controller/backup.h"
#include "controller/conn.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/stream.h"
#include "controller/turns.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

#define SLICE_BYTES ((size_t)256 << 10) /* one loop turn's share of the file */

struct ctl_backup {
    struct ctl *c;
    struct evhttp_request *req; /* NULL once the client has left */
    pthread_t thread;
    bool thread_running; /* not joined yet */
    atomic_bool cancel;
    int pipe_r, pipe_w;
    struct event *done_ev;
    struct event *peer_ev; /* the client's socket readable while the copy is made */
    bool client_gone;
    char db[CTL_PATH_MAX]; /* the SQLite file, or the PostgreSQL URI (password and all) */
    bool pg;
    char tmp[CTL_PATH_MAX + 32];
    const char *hold; /* DOCKETD_TEST_BACKUP_HOLD: the thread waits while this file is */
    int64_t started_ms;
    /* the thread's result, read by the loop after the pipe says it is done */
    int rc;
    char err[512];
    struct store_backup_info info;
    char sha256[65];
    /* the stream */
    int fd;
    int64_t sent;
    char *slice;
};

/* SHA-256 of the file at path in hex; stops early when cancelled. 0 or -errno. */
static int file_sha256(const char *path, const atomic_bool *cancel, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    char *buf = malloc(1 << 20);
    int rc = ctx && buf && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 ? 0 : -ENOMEM;
    while (rc == 0) {
        ssize_t n = read(fd, buf, 1 << 20);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = -errno;
        else if (n == 0)
            break;
        else if (atomic_load(cancel))
            rc = -ECANCELED;
        else if (EVP_DigestUpdate(ctx, buf, (size_t)n) != 1)
            rc = -EIO;
    }
    if (rc == 0 && EVP_DigestFinal_ex(ctx, md, &mdlen) != 1)
        rc = -EIO;
    for (unsigned int i = 0; rc == 0 && i < mdlen && i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    EVP_MD_CTX_free(ctx);
    free(buf);
    close(fd);
    return rc;
}

static void *worker(void *arg)
{
    struct ctl_backup *b = arg;
    b->rc = b->pg
                ? store_pg_backup_write(b->db, b->tmp, &b->cancel, &b->info, b->err, sizeof(b->err))
                : store_backup_write(b->db, b->tmp, &b->cancel, &b->info, b->err, sizeof(b->err));
    if (b->rc == 0 && (b->rc = file_sha256(b->tmp, &b->cancel, b->sha256)) < 0)
        snprintf(b->err, sizeof(b->err), "hashing '%s': %s", b->tmp, strerror(-b->rc));
    while (b->rc == 0 && b->hold && access(b->hold, F_OK) == 0 && !atomic_load(&b->cancel))
        usleep(10000); /* tests: a backup that takes as long as they need */
    if (b->rc == 0 && atomic_load(&b->cancel))
        b->rc = -ECANCELED;
    char one = 1;
    while (write(b->pipe_w, &one, 1) < 0 && errno == EINTR)
        ;
    return NULL;
}

static void peer_unwatch(struct ctl_backup *b)
{
    if (b->peer_ev)
        event_free(b->peer_ev);
    b->peer_ev = NULL;
}

static void backup_free(struct ctl_backup *b)
{
    peer_unwatch(b);
    if (b->thread_running) {
        atomic_store(&b->cancel, true);
        pthread_join(b->thread, NULL);
        b->thread_running = false;
    }
    if (b->c->backup == b)
        b->c->backup = NULL;
    if (b->fd >= 0)
        close(b->fd);
    (void)unlink(b->tmp); /* gone already once streamed; a failed thread removed it too */
    if (b->done_ev)
        event_free(b->done_ev);
    close(b->pipe_r);
    close(b->pipe_w);
    free(b->slice);
    free(b);
}

/* The client left while the copy was being made: stop the thread. */
static void client_left(struct evhttp_connection *con, void *arg)
{
    (void)con;
    struct ctl_backup *b = arg;
    b->req = NULL;
    peer_unwatch(b); /* its socket is closed */
    atomic_store(&b->cancel, true);
    log_info("backup_abandoned", "why=\"the client left\"");
}

/* evhttp reads nothing from a connection whose request waits for its reply, so it does
 * not see that client leave; the copy may take minutes. Its socket turning readable
 * says so: an end of file (or an error) is the client gone; bytes (a pipelined request,
 * TLS records) are left to evhttp, and the watch ends. */
static void peer_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct ctl_backup *b = arg;
    char byte;
    ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        event_add(b->peer_ev, NULL);
        return;
    }
    peer_unwatch(b);
    if (n > 0)
        return;
    b->client_gone = true;
    atomic_store(&b->cancel, true);
    log_info("backup_abandoned", "why=\"the client left\"");
}

static void peer_watch(struct ctl_backup *b, struct evhttp_connection *con)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(con);
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd < 0)
        return;
    b->peer_ev = xnonnull(event_new(b->c->base, fd, EV_READ, peer_readable, b), "backup event");
    event_add(b->peer_ev, NULL);
}

static void unwatch(struct ctl_backup *b)
{
    struct evhttp_connection *con = b->req ? evhttp_request_get_connection(b->req) : NULL;
    if (con)
        ctl_conn_watch(b->c, con, NULL, NULL);
}

static int fill(void *arg, struct evbuffer *out, bool *done)
{
    struct ctl_backup *b = arg;
    int64_t left = b->info.bytes - b->sent;
    size_t want = left < (int64_t)SLICE_BYTES ? (size_t)left : SLICE_BYTES;
    ssize_t n;
    do
        n = pread(b->fd, b->slice, want, (off_t)b->sent);
    while (n < 0 && errno == EINTR);
    if (n < 0 || (n == 0 && want > 0))
        return n < 0 ? -errno : -EIO; /* the reply is cut short: its size says so */
    evbuffer_add(out, b->slice, (size_t)n);
    b->sent += n;
    *done = b->sent >= b->info.bytes;
    if (*done)
        log_info("backup_sent", "bytes=%lld sha256=%s ms=%lld", (long long)b->sent, b->sha256,
                 (long long)(clock_mono_ms() - b->started_ms));
    return 0;
}

static void stream_done(void *arg)
{
    backup_free(arg);
}

static void start_stream(struct ctl_backup *b)
{
    struct ctl *c = b->c;
    struct evkeyvalq *h = evhttp_request_get_output_headers(b->req);
    char v[64];
    b->fd = open(b->tmp, O_RDONLY | O_CLOEXEC);
    if (b->fd < 0) {
        ctl_reply_errorf(c, b->req, 500, NULL, "cannot open the copy '%s': %s", b->tmp,
                         strerror(errno));
        backup_free(b);
        return;
    }
    (void)unlink(b->tmp); /* from here on the descriptor is its only reference */
    b->slice = xmalloc(SLICE_BYTES);
    snprintf(v, sizeof(v), "%lld", (long long)b->info.bytes);
    evhttp_add_header(h, "Content-Length", v); /* a cut stream is a short file to the client */
    evhttp_add_header(h, "X-Docket-Backup-Bytes", v);
    evhttp_add_header(h, "X-Docket-Backup-Sha256", b->sha256);
    snprintf(v, sizeof(v), "%d", b->info.schema);
    evhttp_add_header(h, "X-Docket-Schema", v);
    evhttp_add_header(h, "X-Docket-Backup-Format", b->pg ? "pg_dump" : "sqlite");
    evhttp_add_header(h, "Cache-Control", "no-store");
    log_info("backup_ready", "bytes=%lld schema=%d sha256=%s ms=%lld", (long long)b->info.bytes,
             b->info.schema, b->sha256, (long long)(clock_mono_ms() - b->started_ms));
    ctl_stream_start(c, b->req, b->pg ? "application/octet-stream" : "application/vnd.sqlite3",
                     fill, stream_done, b);
}

/* The thread is done (the loop, through the pipe): stream the copy, or say why not. */
static void thread_done(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct ctl_backup *b = arg;
    struct ctl *c = b->c;
    char byte;
    int64_t t0 = ctl_turn_enter(c);
    (void)!read(fd, &byte, 1);
    pthread_join(b->thread, NULL);
    b->thread_running = false;
    peer_unwatch(b);
    unwatch(b);
    if (!b->req) {
        backup_free(b);
    } else if (b->client_gone) { /* an answer evhttp fails to send ends the connection */
        ctl_reply_errorf(c, b->req, 503, NULL, "the backup was stopped: its client left");
        backup_free(b);
    } else if (b->rc < 0) {
        log_error("backup_failed", "error=\"%s\"", b->err);
        if (b->rc == -ECANCELED)
            ctl_reply_errorf(c, b->req, 503, NULL,
                             "docketd is stopping: run the backup again "
                             "once it is back");
        else
            ctl_reply_errorf(c, b->req, 500, NULL,
                             "backup failed: %s (docketd's log has it too; see "
                             "docs/operations.md \"Back up and restore the state\")",
                             b->err);
        backup_free(b);
    } else {
        start_stream(b);
    }
    ctl_turn_leave(c, CTL_TURN_TIMER, t0);
}

void h_admin_backup(struct ctl_req *r)
{
    struct ctl *c = r->c;
    if (c->backup) {
        ctl_reply_errorf(c, r->req, 409, NULL,
                         "a backup is already running (started %lld s ago): wait for it to "
                         "finish, then run `docket admin backup` again",
                         (long long)((clock_mono_ms() - c->backup->started_ms) / 1000));
        return;
    }
    struct ctl_backup *b = xnonnull(calloc(1, sizeof(*b)), "backup");
    int p[2];
    b->c = c;
    b->req = r->req;
    b->fd = -1;
    b->started_ms = clock_mono_ms();
    b->hold = getenv("DOCKETD_TEST_BACKUP_HOLD");
    b->pg = store_is_postgres(c->store);
    str_copy(b->db, sizeof(b->db), b->pg ? c->cfg.db : store_path(c->store));
    snprintf(b->tmp, sizeof(b->tmp), "%s/%s", c->cfg.state_dir, CTL_BACKUP_TMP);
    (void)unlink(b->tmp); /* one backup at a time: any file there is a dead one's */
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
        ctl_reply_errorf(c, r->req, 500, NULL, "backup: pipe: %s", strerror(errno));
        free(b);
        return;
    }
    b->pipe_r = p[0];
    b->pipe_w = p[1];
    b->done_ev = xnonnull(event_new(c->base, b->pipe_r, EV_READ, thread_done, b), "backup event");
    event_add(b->done_ev, NULL);
    if (pthread_create(&b->thread, NULL, worker, b) != 0) {
        ctl_reply_errorf(c, r->req, 500, NULL, "backup: cannot start its thread");
        backup_free(b);
        return;
    }
    b->thread_running = true;
    c->backup = b;
    struct evhttp_connection *con = evhttp_request_get_connection(r->req);
    if (con) {
        ctl_conn_watch(c, con, client_left, b);
        peer_watch(b, con);
    }
    log_info("backup_started", "tmp=%s", b->tmp);
}

void ctl_backup_init(struct ctl *c)
{
    char tmp[CTL_PATH_MAX + 32];
    snprintf(tmp, sizeof(tmp), "%s/%s", c->cfg.state_dir, CTL_BACKUP_TMP);
    if (unlink(tmp) == 0)
        log_warn("backup_tmp_removed",
                 "path=%s why=\"left by a docketd that stopped while "
                 "making a backup\"",
                 tmp);
}

void ctl_backup_stop(struct ctl *c)
{
    struct ctl_backup *b = c->backup;
    if (!b || !b->thread_running)
        return; /* none, or one being streamed: the streams end it */
    atomic_store(&b->cancel, true);
    pthread_join(b->thread, NULL);
    b->thread_running = false;
    peer_unwatch(b);
    unwatch(b);
    if (b->req)
        ctl_reply_errorf(c, b->req, 503, NULL,
                         "docketd is stopping: run the backup again once it is back");
    backup_free(b);
}
