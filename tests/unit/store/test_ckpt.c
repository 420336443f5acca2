/* test_ckpt.c - unit tests of the checkpoint thread (store/ckpt.c, docs/controller.md
 * "Checkpoints"): while commits keep coming, no TRUNCATE runs below the forced size (nor
 * is one tried); once the writer is quiet the WAL is truncated; past the forced size one
 * runs at once. The thread's "quiet" reads a clock the test moves (the policy's now_ms),
 * so a test thread descheduled for longer than quiet_ms on a loaded machine cannot look
 * quiet; what takes real time (the thread's passes) is polled with a generous deadline. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "util/clock.h"

#include "fixture.h"

enum {
    DOC_BYTES = 240 * 1024, /* one commit rewrites ~60 pages: >= 50 frames each */
    DEADLINE_MS = 60000,    /* for what the thread does in real time */
};

static _Atomic int64_t fake_now = 1000;

static int64_t test_clock(void *arg)
{
    (void)arg;
    return atomic_load(&fake_now);
}

/* A policy on the test's clock; a pass every commit (frames 10, each commit ~60), a
 * TRUNCATE due from 40 frames, looked at again every 50 ms of real time. */
static struct store_ckpt_policy test_policy(int force_frames)
{
    struct store_ckpt_policy p = {.frames = 10,
                                  .truncate_frames = 40,
                                  .force_frames = force_frames,
                                  .force_busy_ms = 1000,
                                  .quiet_ms = 50,
                                  .now_ms = test_clock};
    return p;
}

static off_t wal_size(const struct fx *f)
{
    char wal[160];
    struct stat sb;
    snprintf(wal, sizeof(wal), "%s-wal", f->path);
    return stat(wal, &sb) == 0 ? sb.st_size : -1;
}

/* One commit of ~60 frames, as docketd's loop and sync thread report it. */
static void commit_one(struct fx *f, struct store_ckpt_thread *k, char *doc, int i)
{
    /* a byte of every page changed: SQLite overwrites a row of the same size in place and
     * writes only the pages that differ */
    for (int b = 6; b < DOC_BYTES; b += 1024)
        doc[b] = (char)('a' + i % 26);
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_policy_put(f->st, doc), 0);
    assert_int_equal(store_commit(f->st), 0);
    atomic_fetch_add(&fake_now, 1); /* 1 ms a commit by the test's clock: never quiet */
    store_ckpt_thread_commit(k);
    int frames = store_wal_frames(f->st);
    assert_true(frames >= 50); /* the WAL is past truncate_frames after every commit */
    store_ckpt_thread_synced(k, frames);
}

static char *big_doc(void)
{
    char *doc = malloc(DOC_BYTES + 16);
    assert_non_null(doc);
    int off = snprintf(doc, 16, "{\"x\":\"");
    memset(doc + off, 'x', DOC_BYTES);
    snprintf(doc + off + DOC_BYTES, 16, "\"}");
    return doc;
}

/* The writer's automatic checkpoint off, and the thread started on the same database. */
static struct store_ckpt_thread *start_thread(struct fx *f, const struct store_ckpt_policy *pol)
{
    char err[256];
    assert_int_equal(store_set_external_checkpoint(f->st), 0);
    struct store_ckpt_thread *k = store_ckpt_thread_create(f->path, pol, err, sizeof(err));
    if (!k)
        fail_msg("checkpoint thread: %s", err);
    return k;
}

static void defaults_are_docketds(void **state)
{
    (void)state;
    struct store_ckpt_policy p;
    store_ckpt_policy_default(&p);
    assert_int_equal(p.frames, 1000);
    assert_int_equal(p.truncate_frames, 16384);
    assert_int_equal(p.force_frames, 65536);
    assert_int_equal(p.force_busy_ms, 200);
    assert_int_equal(p.quiet_ms, 500);
    assert_null(p.now_ms);
}

static void truncate_waits_for_a_quiet_writer(void **state)
{
    struct fx *f = *state;
    struct store_ckpt_stats st;
    struct store_ckpt_policy pol = test_policy(1 << 30);
    struct store_ckpt_thread *k = start_thread(f, &pol);
    char *doc = big_doc();
    /* commits keep coming: passes, a TRUNCATE due all along, none run nor tried; and long
     * enough by the real clock that the thread looked again on its own (50 ms) many times */
    int64_t t0 = clock_mono_ms();
    int i = 0;
    do {
        commit_one(f, k, doc, i++);
        store_ckpt_thread_stats(k, &st);
        assert_true(clock_mono_ms() - t0 < DEADLINE_MS);
    } while (st.passive < 20 || clock_mono_ms() - t0 < 20 * pol.quiet_ms);
    store_ckpt_thread_stats(k, &st);
    assert_true(st.max_frames >= pol.truncate_frames); /* it was due */
    assert_int_equal(st.truncated, 0);
    assert_int_equal(st.truncate_busy, 0);
    assert_int_equal(st.failed, 0);
    assert_true(wal_size(f) > 0);
    /* the writer goes quiet (by the clock the thread reads): the WAL is reset to 0 bytes
     * at the thread's next look, with no commit to wake it */
    atomic_fetch_add(&fake_now, pol.quiet_ms);
    t0 = clock_mono_ms();
    do {
        store_ckpt_thread_stats(k, &st);
        if (st.truncated)
            break;
        usleep(10000);
    } while (clock_mono_ms() - t0 < DEADLINE_MS);
    assert_int_equal(st.truncated, 1);
    assert_int_equal(st.failed, 0);
    assert_int_equal(wal_size(f), 0);
    store_ckpt_thread_destroy(k, &st);
    assert_int_equal(st.truncated, 1);
    /* nothing was lost on the way: the last commit is in the database itself */
    char *got = NULL;
    assert_int_equal(store_policy_get(f->st, &got), 0);
    assert_non_null(got);
    assert_string_equal(got, doc);
    free(got);
    free(doc);
}

static void truncate_at_once_past_the_forced_size(void **state)
{
    struct fx *f = *state;
    struct store_ckpt_stats st;
    struct store_ckpt_policy pol = test_policy(50); /* every commit takes the WAL past it */
    struct store_ckpt_thread *k = start_thread(f, &pol);
    char *doc = big_doc();
    int64_t t0 = clock_mono_ms();
    int i = 0;
    do { /* never quiet by the clock: the size alone makes it run */
        commit_one(f, k, doc, i++);
        store_ckpt_thread_stats(k, &st);
        assert_true(clock_mono_ms() - t0 < DEADLINE_MS);
    } while (st.truncated == 0);
    assert_int_equal(st.failed, 0);
    store_ckpt_thread_destroy(k, NULL);
    free(doc);
}

static void refuses_a_missing_database(void **state)
{
    struct fx *f = *state;
    char err[256] = "", path[192];
    snprintf(path, sizeof(path), "%s/nothing-here.db", f->dir);
    assert_null(store_ckpt_thread_create(path, NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "nothing-here.db"));
    store_ckpt_thread_destroy(NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_are_docketds),
        cmocka_unit_test_setup_teardown(truncate_waits_for_a_quiet_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(truncate_at_once_past_the_forced_size, setup, teardown),
        cmocka_unit_test_setup_teardown(refuses_a_missing_database, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
