/*
 * fuzz_lifecycle.c - libFuzzer harness for the lifecycle shapes (protocol/lifecycle.h): any
 * bytes that decode as JSON go through the heartbeat reply's runs, the heartbeat's
 * results, and the policy's rules (inside a storage section with pools).
 * Invariants: what a reader accepts, its writer builds back and the reader accepts again
 * to the same values; every refusal says why; nothing leaks or crashes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/lifecycle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void refused(const struct proto_error *e)
{
    if (!e->message[0])
        abort();
}

static void check_runs(const json_t *o)
{
    struct lifecycle_run *runs = NULL, back;
    size_t n = 0;
    struct proto_error e = {0};
    if (lifecycle_runs_parse(o, &runs, &n, &e) != 0) {
        refused(&e);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *j = lifecycle_run_json(&runs[i]);
        if (!j || lifecycle_run_parse(j, "run", &back, &e) != 0 ||
            memcmp(&back, &runs[i], sizeof(back)) != 0)
            abort();
        json_decref(j);
    }
    free(runs);
}

static void check_results(const json_t *o)
{
    struct lifecycle_result *res = NULL, back;
    size_t n = 0;
    struct proto_error e = {0};
    if (lifecycle_results_parse(o, &res, &n, &e) != 0) {
        refused(&e);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *j = lifecycle_result_json(&res[i]);
        if (!j || lifecycle_result_parse(j, "r", &back, &e) != 0 || back.done != res[i].done ||
            (back.done && (back.files != res[i].files || back.nlist != res[i].nlist)))
            abort();
        lifecycle_result_release(&back);
        json_decref(j);
    }
    lifecycle_results_free(res, n);
}

static void check_rules(const json_t *o)
{
    static struct storage_policy p, q; /* large: not on the stack */
    struct proto_error e = {0};
    json_t *sec =
        json_pack("{s:[{s:s,s:s},{s:s,s:s,s:s}],s:O}", "pools", "name", "hot", "path", "/hot",
                  "name", "scr", "path", "/scr", "class", "scratch", "lifecycle", o);
    if (storage_policy_parse(sec, &p, &e) != 0) {
        refused(&e);
        json_decref(sec);
        return;
    }
    json_decref(sec);
    json_t *back = storage_policy_json(&p);
    if (!back || storage_policy_parse(back, &q, &e) != 0 || q.nrules != p.nrules ||
        memcmp(p.rules, q.rules, sizeof(p.rules)) != 0)
        abort();
    json_decref(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!j)
        return 0;
    check_runs(j);
    check_results(j);
    check_rules(j);
    json_decref(j);
    return 0;
}
