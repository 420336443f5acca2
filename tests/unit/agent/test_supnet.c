/* test_supnet.c - unit tests of a job's network rules (agent/supnet.h): the nftables
 * ruleset made from a start command's `network` object, checked line by line and, as
 * root with nft installed, by `nft --check` (parsed, never applied); and the names. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/supnet.h"

static void fill_job(struct net_job *j, uint32_t *peers)
{
    memset(j, 0, sizeof(*j));
    j->addr = 0x0ac80102; /* 10.200.1.2 */
    peers[0] = 0x0ac80202;
    peers[1] = 0x0ac80103;
    j->peers = peers;
    j->npeers = 2;
    j->dns[0] = 0x0a000035;
    j->ndns = 1;
    j->controller = true;
}

static void ruleset_lines(void **state)
{
    (void)state;
    struct net_job j;
    uint32_t peers[2];
    fill_job(&j, peers);
    static const uint16_t ports[] = {443, 80};
    struct sup_net_dest dests[] = {{0x0a010000, 16, ports, 2}, {0x5db8d822, 32, NULL, 0}};
    struct sup_net_node node = {"/usr/sbin/nft", 0x0a630101, 8443};
    struct dbuf b;
    dbuf_init(&b, 1 << 20);
    sup_net_ruleset(&b, 42, &j, &node, dests, 2);
    assert_false(b.failed);
    static const char *const want[] = {
        "table inet docket_42 {",
        "ip saddr != 10.200.1.2 counter name refused drop",
        "elements = { 10.200.2.2, 10.200.1.3 }",
        "ct state established,related accept",
        "ip daddr @peers accept",
        "ip daddr 10.99.1.1 tcp dport 8443 accept",
        "ip daddr 10.0.0.53 udp dport 53 accept",
        "ip daddr 10.1.0.0/16 tcp dport { 443, 80 } accept",
        "ip daddr 10.1.0.0/16 udp dport { 443, 80 } accept",
        "ip daddr 93.184.216.34/32 accept",
        "counter name refused reject with icmpx type admin-prohibited",
        "iifname \"dk42\" jump egress",
        "type filter hook input priority filter; policy accept;",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(b.data, want[i]))
            fail_msg("missing '%s' in:\n%s", want[i], b.data);
    /* the refusal is the last word of the job's chain: nothing after it accepts */
    const char *refuse = strstr(b.data, "counter name refused reject");
    const char *end = strstr(refuse, "}");
    assert_null(memmem(refuse, (size_t)(end - refuse), "accept", 6));
    /* no controller when the policy says so; no peers set when there are none */
    dbuf_reset(&b);
    j.controller = false;
    j.npeers = 0;
    sup_net_ruleset(&b, 42, &j, &node, NULL, 0);
    assert_null(strstr(b.data, "8443"));
    assert_null(strstr(b.data, "@peers"));
    dbuf_release(&b);
}

/* nft itself reads the ruleset (--check: nothing is applied) */
static void ruleset_parses(void **state)
{
    (void)state;
    if (geteuid() != 0 || access("/usr/sbin/nft", X_OK) != 0)
        skip();
    struct net_job j;
    uint32_t peers[2];
    fill_job(&j, peers);
    j.rate_mbit = 20;
    static const uint16_t ports[] = {7000};
    struct sup_net_dest dests[] = {{0x0a620001, 32, ports, 1}};
    struct sup_net_node node = {"/usr/sbin/nft", 0x0a630101, 8443};
    struct dbuf b;
    dbuf_init(&b, 1 << 20);
    sup_net_ruleset(&b, 7, &j, &node, dests, 1);
    char path[] = "/tmp/docket-test-supnet.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
    close(fd);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "/usr/sbin/nft --check -f %s", path);
    int rc = system(cmd);
    unlink(path);
    if (rc != 0)
        fail_msg("nft refused:\n%s", b.data);
    dbuf_release(&b);
}

static void names(void **state)
{
    (void)state;
    char ifname[32], ns[160];
    sup_net_names("gpu01", 1234567, ifname, sizeof(ifname), ns, sizeof(ns));
    assert_string_equal(ifname, "dk1234567");
    assert_string_equal(ns, "docket-gpu01-1234567");
    /* an interface name is at most 15 bytes: any job id of 13 digits fits */
    sup_net_names("n", 9999999999999ULL, ifname, sizeof(ifname), ns, sizeof(ns));
    assert_true(strlen(ifname) <= 15);
    char why[256];
    assert_false(sup_net_can_enforce("/nonexistent/nft", why, sizeof(why)));
    assert_non_null(strstr(why, geteuid() == 0 ? "nftables" : "root"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ruleset_lines),
        cmocka_unit_test(ruleset_parses),
        cmocka_unit_test(names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
