/* test_budget.c - unit tests of the connection budget's books (budget.c, docs/security.md
 * "The connection budget"): a new connection is admitted while there is room; past a
 * peer's cap its own oldest unproven connection gives way; past the unproven pool
 * (max_connections - reserved) and at the cap the oldest unproven one does; a proven
 * connection never gives way, so a cap full of proven ones refuses; a slowloris of any
 * size from any number of peers never takes a proven connection's slot; a connection of
 * this loop turn never gives way to a burst; keys. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "controller/budget.h"

static struct budget_key v4(const char *ip)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    inet_pton(AF_INET, ip, &sa.sin_addr);
    return budget_key_addr((struct sockaddr *)&sa, sizeof(sa));
}

/* What conn.c does for a new connection, accepted in a loop turn of its own: close
 * victims until there is room, then count it. true when counted. */
static bool connect_in_turn(struct conn_budget *b, struct budget_key k, struct budget_slot *s,
                            int *shed)
{
    for (int i = 0; i < 4; i++) {
        struct budget_slot *victim;
        enum budget_verdict v = budget_victim(b, &k, &victim);
        if (v == BUDGET_ADMIT)
            return budget_add(b, &k, s) == 0;
        if (v == BUDGET_REFUSE || v == BUDGET_REFUSE_FRESH)
            return false;
        assert_non_null(victim);
        assert_true(victim->unproven);
        budget_remove(b, victim);
        (*shed)++;
    }
    return false;
}

static bool connect_from(struct conn_budget *b, struct budget_key k, struct budget_slot *s,
                         int *shed)
{
    budget_next_turn(b);
    return connect_in_turn(b, k, s, shed);
}

static void admits_while_room(void **state)
{
    (void)state;
    struct conn_budget b;
    struct budget_slot s[4];
    int shed = 0;
    assert_int_equal(budget_init(&b, 10, 2, 8), 0);
    for (int i = 0; i < 4; i++)
        assert_true(connect_from(&b, v4("10.0.0.1"), &s[i], &shed));
    assert_int_equal(shed, 0);
    assert_int_equal(b.open, 4);
    assert_int_equal(b.unproven, 4);
    budget_prove(&b, &s[0]);
    budget_prove(&b, &s[0]); /* twice is once */
    assert_int_equal(b.unproven, 3);
    assert_int_equal(budget_peer_unproven(&b, &(struct budget_key){0}), 0);
    struct budget_key k = v4("10.0.0.1");
    assert_int_equal(budget_peer_unproven(&b, &k), 3);
    for (int i = 0; i < 4; i++)
        budget_remove(&b, &s[i]);
    budget_remove(&b, &s[1]); /* twice is once */
    assert_int_equal(b.open, 0);
    assert_int_equal(b.unproven, 0);
    assert_int_equal(b.npeers, 0); /* a peer is kept only while it has unproven ones */
    budget_free(&b);
}

static void peer_cap_sheds_the_peers_oldest(void **state)
{
    (void)state;
    struct conn_budget b;
    struct budget_slot a[3], other;
    struct budget_slot *victim;
    int shed = 0;
    assert_int_equal(budget_init(&b, 100, 10, 2), 0);
    assert_true(connect_from(&b, v4("10.0.0.9"), &other, &shed));
    assert_true(connect_from(&b, v4("10.0.0.1"), &a[0], &shed));
    assert_true(connect_from(&b, v4("10.0.0.1"), &a[1], &shed));
    struct budget_key k = v4("10.0.0.1");
    assert_int_equal(budget_victim(&b, &k, &victim), BUDGET_SHED_PEER);
    assert_ptr_equal(victim, &a[0]); /* its own oldest, not the older one of another peer */
    assert_true(connect_from(&b, k, &a[2], &shed));
    assert_int_equal(shed, 1);
    assert_false(a[0].counted);
    assert_true(other.counted);
    assert_int_equal(budget_peer_unproven(&b, &k), 2);
    /* a proven connection of the peer no longer counts against it */
    budget_prove(&b, &a[1]);
    assert_int_equal(budget_victim(&b, &k, &victim), BUDGET_ADMIT);
    budget_free(&b);
}

static void pool_and_cap_shed_the_oldest_unproven(void **state)
{
    (void)state;
    struct conn_budget b;
    struct budget_slot s[6];
    struct budget_slot *victim;
    int shed = 0;
    char ip[32];
    assert_int_equal(budget_init(&b, 5, 2, 100), 0);
    /* 3 unproven fill the pool (5 - 2): the 4th sheds the oldest */
    for (int i = 0; i < 3; i++) {
        snprintf(ip, sizeof(ip), "10.0.1.%d", i + 1);
        assert_true(connect_from(&b, v4(ip), &s[i], &shed));
    }
    struct budget_key k = v4("10.0.1.200");
    assert_int_equal(budget_victim(&b, &k, &victim), BUDGET_SHED_POOL);
    assert_ptr_equal(victim, &s[0]);
    /* prove two: the pool has room again, up to the cap */
    budget_prove(&b, &s[0]);
    budget_prove(&b, &s[1]);
    assert_true(connect_from(&b, v4("10.0.1.4"), &s[3], &shed));
    assert_true(connect_from(&b, v4("10.0.1.5"), &s[4], &shed));
    assert_int_equal(shed, 0);
    assert_int_equal(b.open, 5);
    budget_prove(&b, &s[3]);
    /* at the cap: the oldest unproven (s[2]) gives way, never a proven one */
    assert_int_equal(budget_victim(&b, &k, &victim), BUDGET_SHED_CAP);
    assert_ptr_equal(victim, &s[2]);
    budget_free(&b);
}

static void full_of_proven_refuses(void **state)
{
    (void)state;
    struct conn_budget b;
    struct budget_slot s[4];
    struct budget_slot *victim;
    int shed = 0;
    assert_int_equal(budget_init(&b, 4, 1, 100), 0);
    for (int i = 0; i < 4; i++) {
        assert_true(connect_from(&b, v4("10.0.2.1"), &s[i], &shed));
        budget_prove(&b, &s[i]);
    }
    struct budget_key k = v4("10.0.2.2");
    assert_int_equal(budget_victim(&b, &k, &victim), BUDGET_REFUSE);
    assert_null(victim);
    budget_free(&b);
}

/* A slowloris of 10,000 connections from 300 addresses against a cap of 64: every proven
 * connection keeps its slot, and a client that sends its request before 40 newer
 * connections arrive is proven (the pool is 64 - 16 = 48). */
static void slowloris_never_takes_a_proven_slot(void **state)
{
    (void)state;
    struct conn_budget b;
    enum { N = 10000 };
    struct budget_slot *s = calloc(N, sizeof(*s));
    struct budget_slot agent[8], client;
    int shed = 0;
    char ip[32];
    assert_non_null(s);
    assert_int_equal(budget_init(&b, 64, 16, 4), 0);
    for (int i = 0; i < 8; i++) {
        assert_true(connect_from(&b, v4("192.168.0.1"), &agent[i], &shed));
        budget_prove(&b, &agent[i]);
    }
    for (int i = 0; i < N; i++) {
        snprintf(ip, sizeof(ip), "127.0.%d.%d", (i % 300) / 250, (i % 300) % 250 + 2);
        assert_true(connect_from(&b, v4(ip), &s[i], &shed));
        if (i == N / 2) /* a token holder connects in the middle of it */
            assert_true(connect_from(&b, v4("127.0.0.1"), &client, &shed));
        if (i == N / 2 + 40) {
            assert_true(client.counted); /* 40 newer ones: not yet made to give way */
            budget_prove(&b, &client);
        }
        assert_true(b.open <= 64);
        assert_true(b.unproven <= 64 - 16);
    }
    for (int i = 0; i < 8; i++)
        assert_true(agent[i].counted);
    assert_true(client.counted);
    assert_true(shed >= N - 48);
    budget_free(&b);
    free(s);
}

/* A burst of new connections in one loop turn never pushes out one accepted in that turn
 * (its request is read in the next): past the room that older ones make, the burst's
 * own are refused; one turn later they may give way again. */
static void a_burst_never_pushes_out_this_turns_connections(void **state)
{
    (void)state;
    struct conn_budget b;
    struct budget_slot old[3], client, burst[10], late[2];
    memset(burst, 0, sizeof(burst));
    struct budget_slot *victim;
    int shed = 0, admitted = 0;
    char ip[32];
    assert_int_equal(budget_init(&b, 8, 4, 100), 0); /* an unproven pool of 4 */
    for (int i = 0; i < 3; i++)
        assert_true(connect_from(&b, v4("10.0.3.1"), &old[i], &shed));
    budget_next_turn(&b);
    assert_true(connect_in_turn(&b, v4("127.0.0.1"), &client, &shed));
    for (int i = 0; i < 10; i++) {
        snprintf(ip, sizeof(ip), "10.0.4.%d", i + 1);
        admitted += connect_in_turn(&b, v4(ip), &burst[i], &shed);
    }
    assert_int_equal(admitted, 3); /* the 3 older ones gave way, then no more room */
    assert_int_equal(shed, 3);
    assert_true(client.counted);
    struct budget_key k = v4("10.0.5.1");
    assert_int_equal(budget_victim(&b, &k, &victim), BUDGET_REFUSE_FRESH);
    assert_null(victim);
    /* the next turn: the client was proven meanwhile; once the pool is full again, the
     * burst's oldest gives way */
    budget_prove(&b, &client);
    assert_true(connect_from(&b, k, &late[0], &shed));
    assert_true(burst[0].counted);
    assert_true(connect_from(&b, k, &late[1], &shed));
    assert_false(burst[0].counted);
    assert_true(client.counted);
    assert_string_equal(budget_verdict_name(BUDGET_REFUSE_FRESH), "all_fresh");
    budget_free(&b);
}

/* 300 agents behind one address (a proxy, NAT) reconnect in one loop turn: none is refused
 * for the peer's cap (only the pool and the cap hold a burst); a turn later, once they
 * are proven, the address is back under its cap, and one that is not proven gives way. */
static void a_peers_burst_in_one_turn_is_not_refused(void **state)
{
    (void)state;
    enum { N = 300 };
    struct conn_budget b;
    struct budget_slot s[N];
    struct budget_slot *victim;
    int shed = 0;
    memset(s, 0, sizeof(s));
    assert_int_equal(budget_init(&b, 1000, 100, 32), 0);
    budget_next_turn(&b);
    for (int i = 0; i < N; i++)
        assert_true(connect_in_turn(&b, v4("10.9.0.1"), &s[i], &shed));
    assert_int_equal(shed, 0);
    assert_int_equal(b.unproven, N);
    for (int i = 1; i < N; i++) /* all but the first send a credential */
        budget_prove(&b, &s[i]);
    struct budget_key k = v4("10.9.0.1");
    assert_int_equal(budget_victim(&b, &k, &victim), BUDGET_ADMIT);
    /* 31 more unproven in a later turn: 32 with s[0]; the next turn's connection from the
     * address closes its oldest, s[0] */
    struct budget_slot more[31];
    memset(more, 0, sizeof(more));
    budget_next_turn(&b);
    for (int i = 0; i < 31; i++)
        assert_true(connect_in_turn(&b, k, &more[i], &shed));
    assert_int_equal(shed, 0);
    budget_next_turn(&b);
    assert_int_equal(budget_victim(&b, &k, &victim), BUDGET_SHED_PEER);
    assert_ptr_equal(victim, &s[0]);
    budget_free(&b);
}

static void keys(void **state)
{
    (void)state;
    char buf[64];
    struct budget_key a = v4("127.0.0.2");
    budget_key_str(&a, buf, sizeof(buf));
    assert_string_equal(buf, "127.0.0.2");
    /* ::ffff:127.0.0.2 is the same peer as 127.0.0.2 */
    struct sockaddr_in6 sa6;
    memset(&sa6, 0, sizeof(sa6));
    sa6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "::ffff:127.0.0.2", &sa6.sin6_addr);
    struct budget_key m = budget_key_addr((struct sockaddr *)&sa6, sizeof(sa6));
    assert_memory_equal(&a, &m, sizeof(a));
    inet_pton(AF_INET6, "2001:db8::1", &sa6.sin6_addr);
    m = budget_key_addr((struct sockaddr *)&sa6, sizeof(sa6));
    budget_key_str(&m, buf, sizeof(buf));
    assert_string_equal(buf, "2001:db8::1");
    struct budget_key u = budget_key_uid(1000);
    budget_key_str(&u, buf, sizeof(buf));
    assert_string_equal(buf, "uid 1000");
    assert_string_equal(budget_verdict_name(BUDGET_SHED_PEER), "peer_cap");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(admits_while_room),
        cmocka_unit_test(peer_cap_sheds_the_peers_oldest),
        cmocka_unit_test(pool_and_cap_shed_the_oldest_unproven),
        cmocka_unit_test(full_of_proven_refuses),
        cmocka_unit_test(slowloris_never_takes_a_proven_slot),
        cmocka_unit_test(a_burst_never_pushes_out_this_turns_connections),
        cmocka_unit_test(a_peers_burst_in_one_turn_is_not_refused),
        cmocka_unit_test(keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
