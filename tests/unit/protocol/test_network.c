/* test_network.c - unit tests of the network shapes (protocol/network.h): the policy's
 * `network:` section read, refused field by field and written back; a start command's
 * `network` object read back exactly; the address readers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/network.h"

static json_t *doc(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    if (!j)
        fail_msg("bad test json: %s", je.text);
    return j;
}

static struct net_policy pol; /* large: not on the stack */

static const char *const good =
    "{\"isolate\": true, \"host_classes\": [\"rdma\"], \"dns\": [\"10.0.0.53\"],"
    " \"rules\": [{\"group\": \"research\", \"allow\": [{\"to\": \"10.1.0.0/16\", \"ports\":"
    " [443, 80]}, {\"to\": \"pypi.org\"}], \"bandwidth_mbit\": 100}, {\"project\": \"ml\"}]}";

static void policy_section(void **state)
{
    (void)state;
    struct proto_error e;
    json_t *j = doc(good);
    if (net_policy_parse(j, &pol, &e))
        fail_msg("%s: %s", e.field, e.message);
    assert_true(pol.isolate);
    assert_true(pol.controller); /* the default */
    assert_true(net_policy_host_class(&pol, "rdma"));
    assert_false(net_policy_host_class(&pol, "batch"));
    assert_int_equal(pol.ndns, 1);
    assert_int_equal(pol.dns[0], 0x0a000035);
    assert_int_equal(pol.nrules, 2);
    assert_string_equal(pol.rules[0].group, "research");
    assert_int_equal(pol.rules[0].nallow, 2);
    assert_int_equal(pol.rules[0].allow[0].nports, 2);
    assert_int_equal(pol.rules[0].allow[0].ports[1], 80);
    assert_string_equal(pol.rules[0].allow[1].to, "pypi.org");
    assert_int_equal(pol.rules[0].rate_mbit, 100);
    assert_string_equal(pol.rules[1].project, "ml");
    /* written back, read back the same */
    static struct net_policy again;
    json_t *back = net_policy_json(&pol);
    assert_int_equal(net_policy_parse(back, &again, &e), 0);
    assert_memory_equal(&pol, &again, sizeof(pol));
    json_decref(back);
    json_decref(j);
}

static void policy_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *text, *field;
    } bad[] = {
        {"{\"isolate\": 1}", "network.isolate"},
        {"{\"dns\": [\"10.0.0\"]}", "network.dns[0]"},
        {"{\"firewall\": true}", "network.firewall"},
        {"{\"rules\": [{\"allow\": []}]}", "network.rules[0]"},
        {"{\"rules\": [{\"group\": \"a\", \"project\": \"b\"}]}", "network.rules[0]"},
        {"{\"rules\": [{\"group\": \"a\"}, {\"group\": \"a\"}]}", "network.rules[1]"},
        {"{\"rules\": [{\"group\": \"a\", \"allow\": [{\"to\": \"10.1.0.1/16\"}]}]}",
         "network.rules[0].allow[0].to"},
        {"{\"rules\": [{\"group\": \"a\", \"allow\": [{\"to\": \"bad host!\"}]}]}",
         "network.rules[0].allow[0].to"},
        {"{\"rules\": [{\"group\": \"a\", \"allow\": [{\"to\": \"1.2.3.4\", \"ports\": [0]}]}]}",
         "network.rules[0].allow[0].ports[0]"},
        {"{\"rules\": [{\"project\": \"p\", \"bandwidth_mbit\": 0}]}",
         "network.rules[0].bandwidth_mbit"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct proto_error e = {0};
        json_t *j = doc(bad[i].text);
        if (net_policy_parse(j, &pol, &e) != -EINVAL)
            fail_msg("accepted %s", bad[i].text);
        if (strcmp(e.field, bad[i].field) != 0)
            fail_msg("%s: field '%s', want '%s' (%s)", bad[i].text, e.field, bad[i].field,
                     e.message);
        assert_true(e.message[0] != '\0');
        json_decref(j);
    }
}

static void job_object(void **state)
{
    (void)state;
    struct net_job j, k;
    struct proto_error e;
    json_t *o = doc("{\"addr\": \"10.200.1.2\", \"policy\": \"own namespace\", \"peers\":"
                    " [\"10.200.2.2\", \"10.200.1.3\"], \"allow\": [{\"to\": \"10.98.0.1/32\","
                    " \"ports\": [7000]}], \"dns\": [\"10.0.0.53\"], \"controller\": true,"
                    " \"bandwidth_mbit\": 20}");
    if (net_job_parse(o, &j, &e))
        fail_msg("%s: %s", e.field, e.message);
    assert_int_equal(j.addr, 0x0ac80102);
    assert_int_equal(j.npeers, 2);
    assert_int_equal(j.peers[1], 0x0ac80103);
    assert_int_equal(j.nallow, 1);
    assert_true(j.controller);
    assert_int_equal(j.rate_mbit, 20);
    json_t *back = net_job_json(&j);
    assert_int_equal(net_job_parse(back, &k, &e), 0);
    assert_int_equal(k.addr, j.addr);
    assert_int_equal(k.npeers, 2);
    assert_memory_equal(k.peers, j.peers, 2 * sizeof(*j.peers));
    assert_memory_equal(k.allow, j.allow, sizeof(j.allow[0]));
    net_job_release(&k);
    net_job_release(&j);
    json_decref(back);
    json_decref(o);
    /* an address is required; a bad peer fails the object, nothing leaks */
    o = doc("{\"peers\": []}");
    assert_int_equal(net_job_parse(o, &j, &e), -EINVAL);
    assert_string_equal(e.field, "job.network.addr");
    json_decref(o);
    o = doc("{\"addr\": \"10.0.0.1\", \"peers\": [\"10.0.0.2\", \"x\"]}");
    assert_int_equal(net_job_parse(o, &j, &e), -EINVAL);
    assert_string_equal(e.field, "job.network.peers[1]");
    json_decref(o);
}

static void addresses(void **state)
{
    (void)state;
    uint32_t a, net;
    int prefix;
    char t[16];
    assert_true(net_addr_parse("192.168.0.255", &a));
    net_addr_text(a, t, sizeof(t));
    assert_string_equal(t, "192.168.0.255");
    assert_false(net_addr_parse("256.1.1.1", &a));
    assert_false(net_addr_parse(" 1.1.1.1", &a));
    assert_false(net_addr_parse("1.1.1.1x", &a));
    assert_false(net_addr_parse("1.1.1", &a));
    assert_true(net_cidr_parse("10.200.0.0/16", &net, &prefix));
    assert_int_equal(prefix, 16);
    assert_true(net_cidr_parse("10.1.2.3", &net, &prefix));
    assert_int_equal(prefix, 32);
    assert_true(net_cidr_parse("0.0.0.0/0", &net, &prefix));
    assert_false(net_cidr_parse("10.200.1.0/16", &net, &prefix)); /* host bits set */
    assert_false(net_cidr_parse("10.0.0.0/33", &net, &prefix));
    assert_false(net_cidr_parse("10.0.0.0/", &net, &prefix));
    assert_true(net_host_name_ok("pypi.org"));
    assert_true(net_host_name_ok("files-1.example.com"));
    assert_false(net_host_name_ok("10.0.0.1"));
    assert_false(net_host_name_ok("-x.org"));
    assert_false(net_host_name_ok("a b"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(policy_section),
        cmocka_unit_test(policy_refusals),
        cmocka_unit_test(job_object),
        cmocka_unit_test(addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
