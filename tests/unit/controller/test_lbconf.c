/* test_lbconf.c - unit tests of the pure parts of the services' load balancer (lbconf.c):
 * the HAProxy configuration (a frontend and a backend of server-template slots per
 * service, the admin socket, retries), the slots replicas keep while they stay, and the
 * runtime API commands between two states of a backend (out of traffic before an address
 * changes, nothing sent when nothing changed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "controller/lbconf.h"

static void test_config_has_a_frontend_and_backend_per_service(void **state)
{
    (void)state;
    struct dbuf b;
    dbuf_init(&b, 1 << 20);
    struct lb_frontend fe[] = {{"web", 30001}, {"api.v2", 30002}};
    lb_config_text(&b, fe, 2, "127.0.0.1", "/var/lib/docket/lb/admin.sock");
    assert_non_null(
        strstr(b.data, "stats socket /var/lib/docket/lb/admin.sock mode 600 level admin\n"));
    assert_non_null(strstr(b.data, "frontend svc_web\n    bind 127.0.0.1:30001\n"
                                   "    default_backend svc_web\n"));
    assert_non_null(strstr(b.data, "backend svc_api.v2\n"));
    assert_non_null(strstr(b.data, "server-template r 1-65 127.0.0.1:1 disabled\n"));
    assert_non_null(strstr(b.data, "option redispatch"));
    assert_non_null(strstr(b.data, "retry-on conn-failure"));
    dbuf_release(&b);
    /* no service: a valid configuration all the same (global and defaults only) */
    dbuf_init(&b, 1 << 20);
    lb_config_text(&b, NULL, 0, "0.0.0.0", "/s");
    assert_null(strstr(b.data, "frontend"));
    assert_non_null(strstr(b.data, "defaults\n"));
    dbuf_release(&b);
}

static void test_slots_stay_while_replicas_stay(void **state)
{
    (void)state;
    struct lb_slot now[LB_SLOTS], next[LB_SLOTS];
    memset(now, 0, sizeof(now));
    struct lb_want w[] = {{11, "10.0.0.1", 31000, true}, {12, "10.0.0.2", 31000, false}};
    lb_assign(now, w, 2, next);
    assert_int_equal(next[0].job, 11);
    assert_true(next[0].ready);
    assert_int_equal(next[1].job, 12);
    assert_false(next[1].ready);
    /* 11 goes, 13 comes: 12 keeps slot 1, 13 takes the free slot 0 */
    memcpy(now, next, sizeof(now));
    struct lb_want w2[] = {{12, "10.0.0.2", 31000, true}, {13, "10.0.0.1", 31001, true}};
    lb_assign(now, w2, 2, next);
    assert_int_equal(next[1].job, 12);
    assert_true(next[1].ready);
    assert_int_equal(next[0].job, 13);
    assert_int_equal(next[0].port, 31001);
    /* a replica restarted on another port is a new placement */
    memcpy(now, next, sizeof(now));
    struct lb_want w3[] = {{12, "10.0.0.2", 31005, true}};
    lb_assign(now, w3, 1, next);
    assert_int_equal(next[0].job, 12);
    assert_int_equal(next[0].port, 31005);
    assert_int_equal(next[1].job, 0);
    /* without a port or a job, no slot */
    struct lb_want w4[] = {{14, "h", 0, true}, {0, "h", 1, true}};
    lb_assign(now, w4, 2, next);
    for (int i = 0; i < LB_SLOTS; i++)
        assert_int_equal(next[i].job, 0);
    /* more replicas than slots: the rest wait for one */
    struct lb_want many[LB_SLOTS + 3];
    for (int i = 0; i < LB_SLOTS + 3; i++)
        many[i] = (struct lb_want){(uint64_t)i + 1, "h", 1000 + i, true};
    memset(now, 0, sizeof(now));
    lb_assign(now, many, LB_SLOTS + 3, next);
    assert_int_equal(next[LB_SLOTS - 1].job, LB_SLOTS);
}

static void test_commands_between_two_states(void **state)
{
    (void)state;
    struct lb_slot had[LB_SLOTS], want[LB_SLOTS];
    memset(had, 0, sizeof(had));
    memset(want, 0, sizeof(want));
    struct dbuf b;
    dbuf_init(&b, 1 << 20);
    /* nothing to nothing: no command */
    assert_int_equal(lb_commands(&b, "svc_web", had, want), 0);
    /* a new ready replica: its address, then ready */
    want[0] = (struct lb_slot){7, "10.0.0.1", 31000, true};
    assert_int_equal(lb_commands(&b, "svc_web", had, want), 2);
    assert_string_equal(b.data, "set server svc_web/r1 addr 10.0.0.1 port 31000\n"
                                "set server svc_web/r1 state ready\n");
    /* the same again: nothing */
    memcpy(had, want, sizeof(had));
    dbuf_release(&b);
    dbuf_init(&b, 1 << 20);
    assert_int_equal(lb_commands(&b, "svc_web", had, want), 0);
    /* not ready any more: maint only */
    want[0].ready = false;
    assert_int_equal(lb_commands(&b, "svc_web", had, want), 1);
    assert_string_equal(b.data, "set server svc_web/r1 state maint\n");
    /* a ready slot given to another replica: out, moved, in */
    dbuf_release(&b);
    dbuf_init(&b, 1 << 20);
    want[0] = (struct lb_slot){8, "10.0.0.2", 31001, true};
    assert_int_equal(lb_commands(&b, "svc_web", had, want), 3);
    assert_string_equal(b.data, "set server svc_web/r1 state maint\n"
                                "set server svc_web/r1 addr 10.0.0.2 port 31001\n"
                                "set server svc_web/r1 state ready\n");
    /* a replica gone: its slot to maint */
    dbuf_release(&b);
    dbuf_init(&b, 1 << 20);
    memset(want, 0, sizeof(want));
    assert_int_equal(lb_commands(&b, "svc_web", had, want), 1);
    assert_string_equal(b.data, "set server svc_web/r1 state maint\n");
    dbuf_release(&b);
}

static bool free_but_30001(int port) /* someone else listens on 30001 */
{
    return port != 30001;
}

static void test_port_pick(void **state)
{
    (void)state;
    int used[] = {30000, 30002};
    assert_int_equal(lb_port_pick(30000, 30005, used, 2, NULL), 30001);
    assert_int_equal(lb_port_pick(30000, 30005, used, 2, free_but_30001), 30003);
    assert_int_equal(lb_port_pick(30000, 30000, used, 2, NULL), 0);
    assert_int_equal(lb_port_pick(0, 0, NULL, 0, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_has_a_frontend_and_backend_per_service),
        cmocka_unit_test(test_slots_stay_while_replicas_stay),
        cmocka_unit_test(test_commands_between_two_states),
        cmocka_unit_test(test_port_pick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
