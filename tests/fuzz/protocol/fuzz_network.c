/*
 * fuzz_network.c - libFuzzer harness for the network shapes (protocol/network.h): any
 * bytes that decode as JSON go through the policy's `network:` section and a start
 * command's `network` object, and the address readers take any string found.
 * Invariants: what a reader accepts, its writer builds back and the reader accepts again
 * to the same values; every refusal says why; nothing leaks or crashes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/network.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void refused(const struct proto_error *e)
{
    if (!e->message[0])
        abort();
}

static void check_policy(const json_t *o)
{
    static struct net_policy p, q; /* large: not on the stack */
    struct proto_error e = {0};
    if (net_policy_parse(o, &p, &e) != 0) {
        refused(&e);
        return;
    }
    json_t *back = net_policy_json(&p);
    if (!back || net_policy_parse(back, &q, &e) != 0 || q.nrules != p.nrules ||
        q.isolate != p.isolate || q.ndns != p.ndns ||
        memcmp(p.rules, q.rules, sizeof(p.rules[0]) * (size_t)p.nrules) != 0)
        abort();
    json_decref(back);
}

static void check_job(const json_t *o)
{
    static struct net_job j, k;
    struct proto_error e = {0};
    if (net_job_parse(o, &j, &e) != 0) {
        refused(&e);
        return;
    }
    json_t *back = net_job_json(&j);
    if (!back || net_job_parse(back, &k, &e) != 0 || k.addr != j.addr || k.npeers != j.npeers ||
        k.nallow != j.nallow || k.rate_mbit != j.rate_mbit ||
        (j.npeers && memcmp(j.peers, k.peers, j.npeers * sizeof(*j.peers)) != 0))
        abort();
    net_job_release(&k);
    net_job_release(&j);
    json_decref(back);
}

/* An address or CIDR that parses prints back to the same text. */
static void check_text(const char *s)
{
    uint32_t a, net;
    int prefix;
    char t[16];
    if (net_addr_parse(s, &a)) {
        net_addr_text(a, t, sizeof(t));
        uint32_t b;
        if (!net_addr_parse(t, &b) || a != b)
            abort();
    }
    if (net_cidr_parse(s, &net, &prefix) && (prefix < 0 || prefix > 32))
        abort();
    (void)net_host_name_ok(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!j)
        return 0;
    check_policy(j);
    check_job(j);
    if (json_is_string(j))
        check_text(json_string_value(j));
    json_t *inner = json_object_get(j, "network"); /* a policy or start command around it */
    if (inner) {
        check_policy(inner);
        check_job(inner);
    }
    json_decref(j);
    return 0;
}
