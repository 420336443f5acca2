/*
 * ckpt.c - the checkpoint thread (docs/controller.md "Checkpoints"): when to copy the WAL
 * back into the database, and when to reset it, on a connection of its own
 * (store_ckpt_open), off the writer's thread.
 *
 * The writer's side tells it two things: each commit (store_ckpt_thread_commit, the time
 * the writer last committed) and, after each sync of the WAL, its frames
 * (store_ckpt_thread_synced). Every `frames` new frames it wakes: a PASSIVE checkpoint,
 * which never blocks the writer; and when the WAL has grown to `truncate_frames` anyway
 * (a writer that writes all the time keeps a passive one from ever finding it all copied
 * with no commit since, and the WAL is only reused from its start then), a TRUNCATE once
 * the writer has committed nothing for `quiet_ms` (the thread looks again every
 * `quiet_ms` until then: a TRUNCATE holds the write lock while it syncs, and the writer's
 * next BEGIN would wait for it), which waits for nobody (it runs only if the writer has no
 * transaction open at that moment); past `force_frames`, one that runs at once, quiet or
 * not, and waits up to `force_busy_ms` for the writer's lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store.h"
#include "util/clock.h"
#include "util/log.h"

struct store_ckpt_thread {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool want, quit, ready, ok;
    struct store_ckpt_policy pol;
    _Atomic int64_t last_commit_ms; /* the writer's last commit, by pol's clock */
    int woken_at;                   /* the WAL's frames at the last wake (synced's caller) */
    char path[4096];
    char err[256];
    struct store_ckpt_stats stats; /* under mu */
};

void store_ckpt_policy_default(struct store_ckpt_policy *p)
{
    *p = (struct store_ckpt_policy){
        .frames = 1000,           /* SQLite's own automatic threshold (pages) */
        .truncate_frames = 16384, /* 64 MiB at 4 KiB pages: try to reset the WAL */
        .force_frames = 65536,    /* 256 MiB: reset it even if the writer's next BEGIN waits */
        .force_busy_ms = 200,
        .quiet_ms = 500,
    };
}

static int64_t now_ms(const struct store_ckpt_thread *k)
{
    return k->pol.now_ms ? k->pol.now_ms(k->pol.now_arg) : clock_mono_ms();
}

/* Wait for a wake, or (a TRUNCATE due) for quiet_ms of real time to look again. Under mu;
 * false when asked to quit. */
static bool wait_turn(struct store_ckpt_thread *k, bool truncate_due)
{
    while (!k->want && !k->quit) {
        if (!truncate_due) {
            pthread_cond_wait(&k->cv, &k->mu);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)k->pol.quiet_ms * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        if (pthread_cond_timedwait(&k->cv, &k->mu, &ts) == ETIMEDOUT)
            break; /* look again: the writer may be quiet now */
    }
    k->want = false;
    return !k->quit;
}

static void *worker(void *arg)
{
    struct store_ckpt_thread *k = arg;
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
    bool truncate_due = false; /* the WAL is past truncate_frames: wait for quiet */
    for (;;) {
        pthread_mutex_lock(&k->mu);
        bool go = wait_turn(k, truncate_due);
        pthread_mutex_unlock(&k->mu);
        if (!go)
            break;
        struct store_ckpt_result r;
        bool trunc = false, busy = false;
        int rc = store_ckpt_run(db, STORE_CKPT_PASSIVE, 0, &r);
        int frames = r.log_frames;
        bool quiet = now_ms(k) - atomic_load(&k->last_commit_ms) >= k->pol.quiet_ms;
        bool force = r.log_frames >= k->pol.force_frames;
        truncate_due = rc == 0 && r.log_frames >= k->pol.truncate_frames;
        if (truncate_due && (quiet || force)) {
            rc = store_ckpt_run(db, STORE_CKPT_TRUNCATE, force ? k->pol.force_busy_ms : 0, &r);
            trunc = rc == 0;
            truncate_due = !trunc;
            busy = rc == -EBUSY;
            if (busy)
                rc = 0;
        }
        if (rc == -EBUSY)
            rc = 0; /* another checkpoint (an external tool's): the next wake tries again */
        pthread_mutex_lock(&k->mu);
        k->stats.passive++;
        k->stats.truncated += trunc;
        k->stats.truncate_busy += busy;
        k->stats.failed += rc < 0;
        if (frames > k->stats.max_frames)
            k->stats.max_frames = frames;
        pthread_mutex_unlock(&k->mu);
        if (rc < 0 && clock_mono_ms() - last_err_ms >= 10000) {
            last_err_ms = clock_mono_ms();
            log_error("checkpoint_failed", "error=\"%s\"", store_ckpt_errmsg(db));
        }
    }
    store_ckpt_close(db);
    return NULL;
}

struct store_ckpt_thread *store_ckpt_thread_create(const char *path,
                                                   const struct store_ckpt_policy *pol, char *err,
                                                   size_t errlen)
{
    struct store_ckpt_thread *k = calloc(1, sizeof(*k));
    if (!k) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (pol)
        k->pol = *pol;
    else
        store_ckpt_policy_default(&k->pol);
    atomic_store(&k->last_commit_ms, now_ms(k));
    snprintf(k->path, sizeof(k->path), "%s", path);
    pthread_mutex_init(&k->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* its quiet waits are timed */
    pthread_cond_init(&k->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&k->thread, NULL, worker, k) != 0) {
        snprintf(err, errlen, "pthread_create");
        pthread_mutex_destroy(&k->mu);
        pthread_cond_destroy(&k->cv);
        free(k);
        return NULL;
    }
    pthread_mutex_lock(&k->mu);
    while (!k->ready)
        pthread_cond_wait(&k->cv, &k->mu);
    bool ok = k->ok;
    pthread_mutex_unlock(&k->mu);
    if (!ok) {
        snprintf(err, errlen, "%s", k->err);
        store_ckpt_thread_destroy(k, NULL);
        return NULL;
    }
    return k;
}

void store_ckpt_thread_commit(struct store_ckpt_thread *k)
{
    atomic_store(&k->last_commit_ms, now_ms(k));
}

void store_ckpt_thread_synced(struct store_ckpt_thread *k, int frames)
{
    pthread_mutex_lock(&k->mu);
    if (frames < k->woken_at) /* the WAL has started over: count again from 0 */
        k->woken_at = 0;
    if (frames >= k->pol.frames && frames - k->woken_at >= k->pol.frames) {
        k->woken_at = frames;
        k->want = true;
        pthread_cond_signal(&k->cv);
    }
    pthread_mutex_unlock(&k->mu);
}

void store_ckpt_thread_stats(struct store_ckpt_thread *k, struct store_ckpt_stats *out)
{
    pthread_mutex_lock(&k->mu);
    *out = k->stats;
    pthread_mutex_unlock(&k->mu);
}

void store_ckpt_thread_destroy(struct store_ckpt_thread *k, struct store_ckpt_stats *out)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    k->quit = true;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->thread, NULL);
    if (out)
        *out = k->stats;
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    free(k);
}
