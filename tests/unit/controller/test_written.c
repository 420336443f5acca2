/* test_written.c - unit tests of which jobs count as on disk (written.c, docs/controller.md
 * "Reads that leave at once"), on a real store: a job written in the open transaction is
 * durable only once a sync covers that transaction's commit, not the one before it; a
 * write outside a transaction only after the next commit's sync; an array's task also
 * waits for its spec and marker; a job nothing wrote since a sync is durable; nothing is
 * before tracking starts or after docketd diverged. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "controller/ctl.h"
#include "controller/written.h"

#include "../store/fixture.h"

/* The controller under test: only its store and generations matter here. */
static struct ctl ctl_under_test;

static int setup_ctl(void **state)
{
    memset(&ctl_under_test, 0, sizeof(ctl_under_test));
    int rc = setup(state);
    if (rc == 0)
        ctl_under_test.store = ((struct fx *)*state)->st;
    return rc;
}

static int teardown_ctl(void **state)
{
    ctl_written_stop(&ctl_under_test);
    return teardown(state);
}

static struct store_job job(uint64_t id, uint64_t array_id)
{
    struct store_job j;
    memset(&j, 0, sizeof(j));
    j.id = id;
    j.array_id = array_id;
    j.spec_id = array_id;
    snprintf(j.name, sizeof(j.name), "job%llu", (unsigned long long)id);
    snprintf(j.project, sizeof(j.project), "p");
    snprintf(j.user, sizeof(j.user), "alice");
    snprintf(j.tier, sizeof(j.tier), "normal");
    snprintf(j.class_name, sizeof(j.class_name), "experiment");
    j.spec = "{\"command\":[\"true\"]}";
    return j;
}

/* What commit_cb and the sync do with the generations. */
static void commit(struct ctl *c)
{
    assert_int_equal(store_commit(c->store), 0);
    c->commit_gen++;
}

static void synced(struct ctl *c, uint64_t gen)
{
    c->synced_gen = gen;
    ctl_written_synced(c, gen);
}

static void write_job(struct ctl *c, struct store_job *j)
{
    assert_int_equal(store_job_insert(c->store, j), 0);
}

static void durable_once_its_own_commit_is_synced(void **state)
{
    struct ctl *c = &ctl_under_test;
    (void)state;
    struct store_job a = job(1, 0), b = job(2, 0);
    ctl_written_start(c);
    assert_int_equal(store_begin(c->store), 0);
    write_job(c, &a);
    commit(c); /* generation 1 */
    synced(c, 1);
    assert_true(ctl_job_durable(c, &a));
    /* b is written in generation 2's transaction while 1 is on disk */
    assert_int_equal(store_begin(c->store), 0);
    write_job(c, &b);
    assert_false(ctl_job_durable(c, &b)); /* open */
    commit(c);
    assert_false(ctl_job_durable(c, &b)); /* committed, not synced */
    assert_true(ctl_job_durable(c, &a));  /* nothing wrote a since */
    /* a write to a in generation 3 while 2 is not synced yet */
    assert_int_equal(store_begin(c->store), 0);
    a.state = 5;
    assert_int_equal(store_job_update(c->store, &a), 0);
    assert_false(ctl_job_durable(c, &a));
    synced(c, 2);
    assert_true(ctl_job_durable(c, &b));
    assert_false(ctl_job_durable(c, &a)); /* its transaction is still open */
    commit(c);
    assert_false(ctl_job_durable(c, &a));
    synced(c, 3);
    assert_true(ctl_job_durable(c, &a));
    assert_true(ctl_job_durable(c, &b));
}

static void a_write_outside_a_transaction_waits_for_the_next_commit(void **state)
{
    struct ctl *c = &ctl_under_test;
    (void)state;
    struct store_job a = job(1, 0), b = job(2, 0);
    ctl_written_start(c);
    write_job(c, &a); /* autocommit, after generation 0 */
    synced(c, 0);
    assert_false(ctl_job_durable(c, &a));
    assert_int_equal(store_begin(c->store), 0);
    write_job(c, &b);
    commit(c);
    synced(c, 1); /* the WAL is synced whole: a is on disk */
    assert_true(ctl_job_durable(c, &a));
    assert_true(ctl_job_durable(c, &b));
}

static void a_task_waits_for_its_array(void **state)
{
    struct ctl *c = &ctl_under_test;
    (void)state;
    struct store_job t = job(11, 10);
    ctl_written_start(c);
    assert_int_equal(store_begin(c->store), 0);
    write_job(c, &t);
    commit(c);
    synced(c, 1);
    assert_true(ctl_job_durable(c, &t));
    /* the array's spec rewritten, or its marker, in an unsynced commit */
    assert_int_equal(store_begin(c->store), 0);
    assert_int_equal(store_spec_put(c->store, 10, "{\"gpus\":1}", "{\"gpus\":1}"), 0);
    commit(c);
    assert_false(ctl_job_durable(c, &t));
    synced(c, 2);
    assert_true(ctl_job_durable(c, &t));
    assert_int_equal(store_begin(c->store), 0);
    assert_int_equal(store_array_writing_put(c->store, 10, 2, 1000), 0);
    assert_false(ctl_job_durable(c, &t));
    commit(c);
    synced(c, 3);
    assert_true(ctl_job_durable(c, &t));
}

static void nothing_is_durable_untracked_or_diverged(void **state)
{
    struct ctl *c = &ctl_under_test;
    (void)state;
    struct store_job a = job(1, 0);
    assert_false(ctl_job_durable(c, &a)); /* before ctl_written_start */
    ctl_written_start(c);
    assert_true(ctl_job_durable(c, &a));
    c->diverged = true;
    assert_false(ctl_job_durable(c, &a));
}

/* Many ids across generations: the set grows and shrinks, and each id's answer stays. */
static void many_jobs_across_syncs(void **state)
{
    struct ctl *c = &ctl_under_test;
    (void)state;
    enum { N = 3000 };
    ctl_written_start(c);
    for (uint64_t gen = 1; gen <= 3; gen++) {
        assert_int_equal(store_begin(c->store), 0);
        for (uint64_t k = 1; k <= N; k++) {
            struct store_job j = job(gen * 10000 + k, 0);
            write_job(c, &j);
        }
        commit(c);
    }
    synced(c, 2);
    for (uint64_t gen = 1; gen <= 3; gen++)
        for (uint64_t k = 1; k <= N; k += 97) {
            struct store_job j = job(gen * 10000 + k, 0);
            assert_int_equal(ctl_job_durable(c, &j), gen <= 2);
        }
    synced(c, 3);
    struct store_job last = job(3 * 10000 + N, 0);
    assert_true(ctl_job_durable(c, &last));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(durable_once_its_own_commit_is_synced, setup_ctl,
                                        teardown_ctl),
        cmocka_unit_test_setup_teardown(a_write_outside_a_transaction_waits_for_the_next_commit,
                                        setup_ctl, teardown_ctl),
        cmocka_unit_test_setup_teardown(a_task_waits_for_its_array, setup_ctl, teardown_ctl),
        cmocka_unit_test_setup_teardown(nothing_is_durable_untracked_or_diverged, setup_ctl,
                                        teardown_ctl),
        cmocka_unit_test_setup_teardown(many_jobs_across_syncs, setup_ctl, teardown_ctl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
