/*
 * sync.c - the pipelined half of docketd's group commit (docs/controller.md), and the
 * checkpoints.
 *
 * COMMIT runs on the loop with synchronous=NORMAL (the WAL is written, not yet on disk);
 * the replies of that commit wait, tagged with its generation. One helper thread does
 * nothing but fdatasync the WAL (store_sync) when asked, and reports back through a pipe;
 * the loop then sends every reply whose commit that sync covered. While the disk works,
 * the loop keeps serving requests into the next transaction, so one fsync covers every
 * request that arrived meanwhile. The thread touches no controller state.
 *
 * Checkpoints (copying the WAL back into the database) do not run in COMMIT on the loop
 * (store_set_external_checkpoint): the store's checkpoint thread (src/store/ckpt.c,
 * store_ckpt_thread_*) runs them on a connection of its own, with docketd's policy
 * (store_ckpt_policy_default): the sync thread tells it the WAL's frames after each sync,
 * the loop each time it asks for a sync (a commit), so that a TRUNCATE below the forced
 * size waits until the loop has been quiet. At a clean exit the last connection's close
 * checkpoints and removes the WAL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/sync.h"
#include "controller/turns.h"
#include "util/xalloc.h"

struct ctl_sync {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool want, quit, running;
    int pipe_r, pipe_w;
    struct event *ev;
    struct store *st;
    uint64_t target;                /* generation the sync in flight covers (loop side) */
    bool inflight;                  /* loop side */
    struct store_ckpt_thread *ckpt; /* NULL: SQLite's automatic checkpoints, in COMMIT */
    int delay_ms;                   /* DOCKETD_TEST_SYNC_DELAY_MS: a slow disk, for tests */
    const char *hold;               /* DOCKETD_TEST_SYNC_HOLD: no sync while this file is */
};

static void ckpt_stop(struct store_ckpt_thread *k)
{
    struct store_ckpt_stats st;
    store_ckpt_thread_destroy(k, &st);
    log_info("checkpoints",
             "passive=%llu truncated=%llu truncate_busy=%llu failed=%llu max_wal_frames=%d",
             (unsigned long long)st.passive, (unsigned long long)st.truncated,
             (unsigned long long)st.truncate_busy, (unsigned long long)st.failed, st.max_frames);
}

/* The checkpoint thread, and the main connection's automatic checkpoint off; NULL (the
 * automatic checkpoint kept, with a warning) when either cannot be done. */
static struct store_ckpt_thread *ckpt_start(struct ctl *c)
{
    char err[256];
    struct store_ckpt_thread *k =
        store_ckpt_thread_create(store_path(c->store), NULL, err, sizeof(err));
    if (k && store_set_external_checkpoint(c->store) < 0) {
        snprintf(err, sizeof(err), "%s", store_errmsg(c->store));
        store_ckpt_thread_destroy(k, NULL);
        k = NULL;
    }
    if (!k)
        log_warn("checkpoint_thread_failed", "error=\"%s\" autocheckpoint=on", err);
    return k;
}

/* Tests hold the sync back for as long as they need (group_commit.bats): while the file
 * DOCKETD_TEST_SYNC_HOLD names exists, and docketd is not stopping. */
static bool held(struct ctl_sync *s)
{
    if (!s->hold)
        return false;
    pthread_mutex_lock(&s->mu);
    bool quit = s->quit;
    pthread_mutex_unlock(&s->mu);
    return !quit && access(s->hold, F_OK) == 0;
}

static void *worker(void *arg)
{
    struct ctl_sync *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->want && !s->quit)
            pthread_cond_wait(&s->cv, &s->mu);
        bool quit = s->quit && !s->want;
        struct store_ckpt_thread *k = s->ckpt;
        s->want = false;
        pthread_mutex_unlock(&s->mu);
        if (quit)
            return NULL;
        if (s->delay_ms > 0)
            usleep((useconds_t)s->delay_ms * 1000);
        while (held(s))
            usleep(10000);
        int rc = store_sync(s->st);
        if (rc == 0 && k) /* a checkpoint every 1,000 new frames, as SQLite's own would */
            store_ckpt_thread_synced(k, store_wal_frames(s->st));
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
    store_sync_mark(c->store);
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
        log_error("sync_failed", "error=\"%s\"", store_sync_errmsg(c->store));
        c->exit_code = 1;
        event_base_loopexit(c->base, NULL);
    }
    int64_t t0 = ctl_turn_enter(c);
    ctl_replies_release(c, s->target, rc);
    if (c->commit_gen > s->target && rc == 0)
        start_sync(c);
    ctl_turn_leave(c, CTL_TURN_SYNCED, t0);
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
    const char *d = getenv("DOCKETD_TEST_SYNC_DELAY_MS");
    s->delay_ms = d ? atoi(d) : 0;
    const char *h = getenv("DOCKETD_TEST_SYNC_HOLD");
    s->hold = h && *h ? h : NULL;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->thread, NULL, worker, s) != 0) {
        close(fds[0]);
        close(fds[1]);
        free(s);
        return -EAGAIN;
    }
    s->running = true;
    /* PostgreSQL checkpoints by itself */
    struct store_ckpt_thread *k = store_is_postgres(c->store) ? NULL : ckpt_start(c);
    pthread_mutex_lock(&s->mu);
    s->ckpt = k;
    pthread_mutex_unlock(&s->mu);
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
        store_sync_mark(c->store);
        int rc = store_sync(c->store);
        ctl_replies_release(c, c->commit_gen, rc);
        return;
    }
    if (c->sync->ckpt)
        store_ckpt_thread_commit(c->sync->ckpt);
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
    if (s->ckpt)
        ckpt_stop(s->ckpt); /* before the main connection closes: its close checkpoints */
    event_free(s->ev);
    close(s->pipe_r);
    close(s->pipe_w);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    c->sync = NULL;
    /* whatever was committed is synced here, then answered */
    store_sync_mark(c->store);
    ctl_replies_release(c, c->commit_gen, store_sync(c->store));
}
