/* test_svcrules.c - unit tests of the pure rules of services (svcrules.c): the backoff
 * doubles from its base to its cap and never overflows, the crash-loop window forgets old
 * restarts, a long run starts the streak again, and the states a replica and a service
 * show. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "controller/svcrules.h"

static void test_backoff_doubles_to_its_cap(void **state)
{
    (void)state;
    assert_int_equal(svc_backoff_ms(1000, 300000, 1), 1000);
    assert_int_equal(svc_backoff_ms(1000, 300000, 2), 2000);
    assert_int_equal(svc_backoff_ms(1000, 300000, 5), 16000);
    assert_int_equal(svc_backoff_ms(1000, 300000, 10), 300000);
    assert_int_equal(svc_backoff_ms(1000, 300000, 1000), 300000);
    assert_int_equal(svc_backoff_ms(0, 300000, 7), 0);
    assert_int_equal(svc_backoff_ms(500, 500, 3), 500);
    /* no overflow on the way to a huge cap */
    assert_true(svc_backoff_ms(INT64_MAX / 4, INT64_MAX, 64) == INT64_MAX);
}

static void test_crash_loop_window(void **state)
{
    (void)state;
    struct svc_restarts r;
    memset(&r, 0, sizeof(r));
    svc_restarts_add(&r, 1000, 60000);
    svc_restarts_add(&r, 2000, 60000);
    assert_false(svc_crash_looping(&r, 2000, 60000, 3));
    svc_restarts_add(&r, 3000, 60000);
    assert_true(svc_crash_looping(&r, 3000, 60000, 3));
    /* a minute later the first two have left the window */
    assert_int_equal(svc_restarts_within(&r, 62500, 60000), 1);
    assert_false(svc_crash_looping(&r, 62500, 60000, 3));
    /* a full list drops the oldest */
    for (int i = 0; i < SVC_RECENT_MAX + 5; i++)
        svc_restarts_add(&r, 100000 + i, 60000);
    assert_int_equal(r.n, SVC_RECENT_MAX);
    assert_int_equal(r.at_ms[SVC_RECENT_MAX - 1], 100000 + SVC_RECENT_MAX + 4);
    assert_false(svc_crash_looping(&r, 100000, 60000, 0)); /* 0: never */
}

static void test_streak_starts_again_after_a_long_run(void **state)
{
    (void)state;
    assert_int_equal(svc_next_streak(0, 10, 300000), 1);
    assert_int_equal(svc_next_streak(4, 10, 300000), 5);
    assert_int_equal(svc_next_streak(4, 300001, 300000), 1);
    /* at least a minute, whatever a small cap says */
    assert_int_equal(svc_next_streak(4, 30000, 1000), 5);
    assert_int_equal(svc_next_streak(4, 60001, 1000), 1);
}

static void test_states(void **state)
{
    (void)state;
    assert_string_equal(svc_replica_state("RUNNING", false, false, true), "ready");
    assert_string_equal(svc_replica_state("RUNNING", false, false, false), "not-ready");
    assert_string_equal(svc_replica_state("HELD", true, false, true), "backoff");
    assert_string_equal(svc_replica_state("HELD", true, true, true), "crash-loop");
    assert_string_equal(svc_replica_state("", false, false, true), "replacing");
    assert_string_equal(svc_replica_state("PENDING", false, false, true), "pending");
    assert_string_equal(svc_replica_state("STARTING", false, false, true), "starting");
    assert_string_equal(svc_replica_state("HELD", false, false, true), "held");
    assert_string_equal(svc_replica_state("STOPPING", false, false, true), "stopping");
    assert_string_equal(svc_service_state(2, 2, 0, NULL), "running");
    assert_string_equal(svc_service_state(2, 1, 0, NULL), "degraded");
    assert_string_equal(svc_service_state(2, 0, 0, NULL), "down");
    assert_string_equal(svc_service_state(2, 1, 1, NULL), "crash-loop");
    assert_string_equal(svc_service_state(0, 0, 0, NULL), "stopped");
    assert_string_equal(svc_service_state(2, 2, 0, "updating"), "updating");
}

/* A rolling update of 2 replicas from version 1 to 2, step by step: one new replica at a
 * time, an old one retired only once the new one is ready, done when all are new. */
static void test_roll_one_at_a_time(void **state)
{
    (void)state;
    struct svc_roll_rep r[4] = {{1, true, false, 0}, {1, true, false, 0}};
    struct svc_roll_step st = svc_roll_next(r, 2, 2, 2, 1000, 5000);
    assert_int_equal(st.action, SVC_ROLL_ADD);
    r[2] = (struct svc_roll_rep){2, false, false, 1000};
    st = svc_roll_next(r, 3, 2, 2, 2000, 5000);
    assert_int_equal(st.action, SVC_ROLL_WAIT);
    assert_int_equal(st.index, 2);
    r[2].ready = true;
    st = svc_roll_next(r, 3, 2, 2, 3000, 5000);
    assert_int_equal(st.action, SVC_ROLL_RETIRE);
    assert_int_equal(st.index, 0);
    r[0].leaving = true; /* it no longer counts */
    st = svc_roll_next(r, 3, 2, 2, 3000, 5000);
    assert_int_equal(st.action, SVC_ROLL_ADD);
    r[3] = (struct svc_roll_rep){2, true, false, 3000};
    st = svc_roll_next(r, 4, 2, 2, 4000, 5000);
    assert_int_equal(st.action, SVC_ROLL_RETIRE);
    assert_int_equal(st.index, 1);
    r[1].leaving = true;
    st = svc_roll_next(r, 4, 2, 2, 4000, 5000);
    assert_int_equal(st.action, SVC_ROLL_DONE);
}

/* A new replica not ready past the deadline rolls back; an old replica that serves nobody
 * goes before one that does; fewer replicas than wanted get one more first. */
static void test_roll_deadline_and_order(void **state)
{
    (void)state;
    struct svc_roll_rep r[3] = {{1, true, false, 0}, {1, true, false, 0}, {2, false, false, 1000}};
    struct svc_roll_step st = svc_roll_next(r, 3, 2, 2, 6000, 5000);
    assert_int_equal(st.action, SVC_ROLL_WAIT); /* exactly at the deadline: not yet */
    st = svc_roll_next(r, 3, 2, 2, 6001, 5000);
    assert_int_equal(st.action, SVC_ROLL_ROLLBACK);
    assert_int_equal(st.index, 2);
    struct svc_roll_rep o[3] = {{1, true, false, 0}, {1, false, false, 0}, {2, true, false, 0}};
    st = svc_roll_next(o, 3, 2, 2, 1, 5000);
    assert_int_equal(st.action, SVC_ROLL_RETIRE);
    assert_int_equal(st.index, 1);
    struct svc_roll_rep one[1] = {{1, true, false, 0}};
    st = svc_roll_next(one, 1, 2, 1, 1, 5000);
    assert_int_equal(st.action, SVC_ROLL_ADD);
    st = svc_roll_next(one, 1, 1, 1, 1, 5000);
    assert_int_equal(st.action, SVC_ROLL_DONE);
    /* scaled to 0 by the update: the old ones go, one at a time */
    st = svc_roll_next(one, 1, 0, 2, 1, 5000);
    assert_int_equal(st.action, SVC_ROLL_RETIRE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roll_one_at_a_time),
        cmocka_unit_test(test_roll_deadline_and_order),
        cmocka_unit_test(test_backoff_doubles_to_its_cap),
        cmocka_unit_test(test_crash_loop_window),
        cmocka_unit_test(test_streak_starts_again_after_a_long_run),
        cmocka_unit_test(test_states),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
