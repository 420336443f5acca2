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
 * (store_set_external_checkpoint): a second thread runs them on a connection of its own,
 * which it opens, uses and closes alone. After a sync, when the WAL holds CKPT_FRAMES or
 * more, CKPT_FRAMES more than when it last did, the sync thread wakes it: a PASSIVE
 * checkpoint, which never blocks the loop's writes; and when the WAL has grown to
 * CKPT_TRUNCATE_FRAMES anyway (the loop writes all the time, so a passive one rarely finds
 * it all copied with no commit since, and the WAL is only reused from its start then), a
 * TRUNCATE once the loop has committed nothing for CKPT_QUIET_MS (the thread looks again
 * every CKPT_QUIET_MS until then: a TRUNCATE holds the write lock while it syncs, and the
 * loop's next BEGIN would wait for it), that waits for nobody (it runs only if the loop
 * has no transaction open at that moment) or, past CKPT_FORCE_FRAMES, one that runs at once
 * and waits up to CKPT_FORCE_BUSY_MS for the
 * loop's write lock (the loop's next BEGIN then waits for what is left to copy, one or two
 * turns' pages, and the database sync). At a clean exit the last connection's close
 * checkpoints and removes the WAL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "controller/ctl.h"
#include "util/clock.h"
#include "util/xalloc.h"

enum {
    CKPT_FRAMES = 1000,           /* SQLite's own automatic threshold (pages) */
    CKPT_TRUNCATE_FRAMES = 16384, /* 64 MiB at 4 KiB pages: try to reset the WAL */
    CKPT_FORCE_FRAMES = 65536,    /* 256 MiB: reset it even if the loop's next BEGIN waits */
    CKPT_FORCE_BUSY_MS = 200,
    /* a TRUNCATE holds the write lock while it copies and syncs the database: the loop's
       next BEGIN waits for it (100-190 ms seen in a burst of starts). Below
       CKPT_FORCE_FRAMES it runs only once the loop has committed nothing for this long. */
    CKPT_QUIET_MS = 500,
};

struct ctl_ckpt {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool want, quit, ready, ok;
    _Atomic int64_t last_commit_ms; /* loop side: when it last asked for a sync */
    char path[4096];
    char err[256];
    /* the thread's own counts, logged at exit (under mu) */
    uint64_t passive, truncated, truncate_busy, failed;
    int max_frames;
};

struct ctl_sync {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool want, quit, running;
    int pipe_r, pipe_w;
    struct event *ev;
    struct store *st;
    uint64_t target;       /* generation the sync in flight covers (loop side) */
    bool inflight;         /* loop side */
    struct ctl_ckpt *ckpt; /* NULL: SQLite's automatic checkpoints, in COMMIT */
    int delay_ms;          /* DOCKETD_TEST_SYNC_DELAY_MS: a slow disk, for tests */
};

static void *ckpt_worker(void *arg)
{
    struct ctl_ckpt *k = arg;
    char err[256] = "";
    struct store_ckpt *db = store_ckpt_open(k->path, err, sizeof(err));
    pthread_mutex_lock(&k->mu);
    k->ready = true;
    k->ok = db != NULL;
    memcpy(k->err, err, sizeof(k->err));
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    if (!db)
        return NULL;
    int64_t last_err_ms = 0;
    bool truncate_due = false; /* the WAL is past CKPT_TRUNCATE_FRAMES: wait for quiet */
    for (;;) {
        pthread_mutex_lock(&k->mu);
        while (!k->want && !k->quit) {
            if (!truncate_due) {
                pthread_cond_wait(&k->cv, &k->mu);
                continue;
            }
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_nsec += CKPT_QUIET_MS * 1000000L;
            ts.tv_sec += ts.tv_nsec / 1000000000L;
            ts.tv_nsec %= 1000000000L;
            if (pthread_cond_timedwait(&k->cv, &k->mu, &ts) == ETIMEDOUT)
                break; /* look again: the loop may be quiet now */
        }
        bool quit = k->quit;
        k->want = false;
        pthread_mutex_unlock(&k->mu);
        if (quit)
            break;
        struct store_ckpt_result r;
        bool trunc = false, busy = false;
        int rc = store_ckpt_run(db, STORE_CKPT_PASSIVE, 0, &r);
        int frames = r.log_frames;
        bool quiet = clock_mono_ms() - atomic_load(&k->last_commit_ms) >= CKPT_QUIET_MS;
        truncate_due = rc == 0 && r.log_frames >= CKPT_TRUNCATE_FRAMES;
        if (truncate_due && (quiet || r.log_frames >= CKPT_FORCE_FRAMES)) {
            int wait_ms = r.log_frames >= CKPT_FORCE_FRAMES ? CKPT_FORCE_BUSY_MS : 0;
            rc = store_ckpt_run(db, STORE_CKPT_TRUNCATE, wait_ms, &r);
            trunc = rc == 0;
            truncate_due = !trunc;
            busy = rc == -EBUSY;
            if (busy)
                rc = 0;
        }
        if (rc == -EBUSY)
            rc = 0; /* another checkpoint (an external tool's): the next sync tries again */
        pthread_mutex_lock(&k->mu);
        k->passive++;
        k->truncated += trunc;
        k->truncate_busy += busy;
        k->failed += rc < 0;
        if (frames > k->max_frames)
            k->max_frames = frames;
        pthread_mutex_unlock(&k->mu);
        if (rc < 0 && clock_mono_ms() - last_err_ms >= 10000) {
            last_err_ms = clock_mono_ms();
            log_error("checkpoint_failed", "error=\"%s\"", store_ckpt_errmsg(db));
        }
    }
    store_ckpt_close(db);
    return NULL;
}

static void ckpt_wake(struct ctl_ckpt *k)
{
    pthread_mutex_lock(&k->mu);
    k->want = true;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

static void ckpt_stop(struct ctl_ckpt *k, bool report)
{
    pthread_mutex_lock(&k->mu);
    k->quit = true;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->thread, NULL);
    if (report)
        log_info("checkpoints",
                 "passive=%llu truncated=%llu truncate_busy=%llu failed=%llu max_wal_frames=%d",
                 (unsigned long long)k->passive, (unsigned long long)k->truncated,
                 (unsigned long long)k->truncate_busy, (unsigned long long)k->failed,
                 k->max_frames);
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    free(k);
}

/* The checkpoint thread, and the main connection's automatic checkpoint off; NULL (the
 * automatic checkpoint kept, with a warning) when either cannot be done. */
static struct ctl_ckpt *ckpt_start(struct ctl *c)
{
    struct ctl_ckpt *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    snprintf(k->path, sizeof(k->path), "%s", store_path(c->store));
    pthread_mutex_init(&k->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* its quiet waits are timed */
    pthread_cond_init(&k->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&k->thread, NULL, ckpt_worker, k) != 0) {
        pthread_mutex_destroy(&k->mu);
        pthread_cond_destroy(&k->cv);
        free(k);
        log_warn("checkpoint_thread_failed", "error=\"pthread_create\" autocheckpoint=on");
        return NULL;
    }
    pthread_mutex_lock(&k->mu);
    while (!k->ready)
        pthread_cond_wait(&k->cv, &k->mu);
    bool ok = k->ok;
    pthread_mutex_unlock(&k->mu);
    if (ok && store_set_external_checkpoint(c->store) < 0) {
        snprintf(k->err, sizeof(k->err), "%s", store_errmsg(c->store));
        ok = false;
    }
    if (!ok) {
        log_warn("checkpoint_thread_failed", "error=\"%s\" autocheckpoint=on", k->err);
        ckpt_stop(k, false);
        return NULL;
    }
    return k;
}

static void *worker(void *arg)
{
    struct ctl_sync *s = arg;
    int woken_at = 0; /* the WAL's frames when the checkpoint thread was last woken */
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->want && !s->quit)
            pthread_cond_wait(&s->cv, &s->mu);
        bool quit = s->quit && !s->want;
        struct ctl_ckpt *k = s->ckpt;
        s->want = false;
        pthread_mutex_unlock(&s->mu);
        if (quit)
            return NULL;
        if (s->delay_ms > 0)
            usleep((useconds_t)s->delay_ms * 1000);
        int rc = store_sync(s->st);
        /* every CKPT_FRAMES new frames, as SQLite's own would (counted again from 0 once
         * the WAL has started over) */
        int frames = store_wal_frames(s->st);
        if (frames < woken_at)
            woken_at = 0;
        if (rc == 0 && k && frames >= CKPT_FRAMES && frames - woken_at >= CKPT_FRAMES) {
            woken_at = frames;
            ckpt_wake(k);
        }
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
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->thread, NULL, worker, s) != 0) {
        close(fds[0]);
        close(fds[1]);
        free(s);
        return -EAGAIN;
    }
    s->running = true;
    struct ctl_ckpt *k = ckpt_start(c);
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
        int rc = store_sync(c->store);
        ctl_replies_release(c, c->commit_gen, rc);
        return;
    }
    if (c->sync->ckpt)
        atomic_store(&c->sync->ckpt->last_commit_ms, clock_mono_ms());
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
        ckpt_stop(s->ckpt, true); /* before the main connection closes: its close checkpoints */
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
