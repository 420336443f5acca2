/*
 * fuzz_storage.c - libFuzzer harness for the storage shapes (protocol/storage.h): any bytes
 * that decode as JSON go through the policy's `storage:` section, the heartbeat reply's
 * configuration, the heartbeat's report and a job's pool list.
 * Invariants: what a reader accepts, its writer builds back and the reader accepts again
 * to the same counts; every refusal says why; nothing leaks or crashes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/storage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void refused(const struct proto_error *e)
{
    if (!e->message[0])
        abort();
}

static void check_policy(const json_t *o)
{
    static struct storage_policy p, q; /* large: not on the stack */
    struct proto_error e = {0};
    if (storage_policy_parse(o, &p, &e) != 0) {
        refused(&e);
        return;
    }
    json_t *back = storage_policy_json(&p);
    if (!back || storage_policy_parse(back, &q, &e) != 0 || q.npools != p.npools ||
        q.ngroups != p.ngroups || memcmp(p.pools, q.pools, sizeof(p.pools)) != 0)
        abort();
    json_decref(back);
}

static void check_config(const json_t *o)
{
    struct storage_config c, d;
    struct proto_error e = {0};
    if (storage_config_parse(o, &c, &e) != 0) {
        refused(&e);
        return;
    }
    json_t *back = storage_config_json(&c);
    if (!back || storage_config_parse(back, &d, &e) != 0 || d.nareas != c.nareas ||
        d.npools != c.npools || d.gen != c.gen)
        abort();
    storage_config_release(&d);
    storage_config_release(&c);
    json_decref(back);
}

static void check_report(const json_t *o)
{
    struct storage_report r, s;
    struct proto_error e = {0};
    if (storage_report_parse(o, &r, &e) != 0) {
        refused(&e);
        return;
    }
    json_t *back = storage_report_json(&r);
    if (!back || storage_report_parse(back, &s, &e) != 0 || s.nareas != r.nareas ||
        s.npools != r.npools)
        abort();
    storage_report_release(&s);
    storage_report_release(&r);
    json_decref(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!j)
        return 0;
    struct proto_error e = {0};
    check_policy(j);
    check_config(j);
    check_report(j);
    if (storage_job_pools_check(j, &e) != 0)
        refused(&e);
    json_t *inner = json_object_get(j, "storage"); /* a policy or heartbeat around it */
    if (inner) {
        check_policy(inner);
        check_config(inner);
        check_report(inner);
    }
    json_decref(j);
    return 0;
}
