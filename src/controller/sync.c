/*
 * sync.c - the pipelined half of docketd's group commit (docs/controller.md).
 *
 * COMMIT runs on the loop with synchronous=NORMAL (the WAL is written, not yet on disk);
 * the replies of that commit wait, tagged with its generation. One helper thread does
 * nothing but fdatasync the WAL (store_sync) when asked, and reports back through a pipe;
 * the loop then sends every reply whose commit that sync covered. While the disk works,
 * the loop keeps serving requests into the next transaction, so one fsync covers every
 * request that arrived meanwhile. The thread touches no controller state.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/ctl.h"
#include "util/xalloc.h"

struct ctl_sync {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool want, quit, running;
    int pipe_r, pipe_w;
    struct event *ev;
    struct store *st;
    uint64_t target; /* generation the sync in flight covers (loop side) */
    bool inflight;   /* loop side */
};

static void *worker(void *arg)
{
    struct ctl_sync *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->want && !s->quit)
            pthread_cond_wait(&s->cv, &s->mu);
        bool quit = s->quit && !s->want;
        s->want = false;
        pthread_mutex_unlock(&s->mu);
        if (quit)
            return NULL;
        int rc = store_sync(s->st);
        ssize_t w;
        do
            w = write(s->pipe_w, &rc, sizeof(rc));
        while (w < 0 && errno == EINTR);
    }
}

static void start_sync(struct ctl *c)
{
    struct ctl_sync *s = c->sync;
    s->inflight = true;
    s->target = c->commit_gen;
    pthread_mutex_lock(&s->mu);
    s->want = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void synced_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ctl *c = arg;
    struct ctl_sync *s = c->sync;
    int rc;
    if (read(fd, &rc, sizeof(rc)) != (ssize_t)sizeof(rc))
        return;
    s->inflight = false;
    if (rc < 0) {
        log_error("sync_failed", "error=\"%s\"", strerror(-rc));
        c->exit_code = 1;
        event_base_loopexit(c->base, NULL);
    }
    ctl_replies_release(c, s->target, rc);
    if (c->commit_gen > s->target && rc == 0)
        start_sync(c);
}

int ctl_sync_start(struct ctl *c)
{
    struct ctl_sync *s = calloc(1, sizeof(*s));
    int fds[2];
    if (!s)
        return -ENOMEM;
    if (store_set_external_sync(c->store) < 0 || pipe2(fds, O_CLOEXEC) < 0) {
        free(s);
        return -EIO;
    }
    s->pipe_r = fds[0];
    s->pipe_w = fds[1];
    s->st = c->store;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->thread, NULL, worker, s) != 0) {
        close(fds[0]);
        close(fds[1]);
        free(s);
        return -EAGAIN;
    }
    s->running = true;
    s->ev =
        xnonnull(event_new(c->base, s->pipe_r, EV_READ | EV_PERSIST, synced_cb, c), "sync event");
    event_add(s->ev, NULL);
    c->sync = s;
    return 0;
}

/* A commit of generation c->commit_gen happened: make it durable. */
void ctl_sync_request(struct ctl *c)
{
    if (!c->sync) { /* no helper (startup, or it could not start): sync inline */
        int rc = store_sync(c->store);
        ctl_replies_release(c, c->commit_gen, rc);
        return;
    }
    if (!c->sync->inflight)
        start_sync(c);
}

void ctl_sync_stop(struct ctl *c)
{
    struct ctl_sync *s = c->sync;
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->quit = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    event_free(s->ev);
    close(s->pipe_r);
    close(s->pipe_w);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    c->sync = NULL;
    /* whatever was committed is synced here, then answered */
    ctl_replies_release(c, c->commit_gen, store_sync(c->store));
}
