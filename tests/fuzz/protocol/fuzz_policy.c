/* fuzz_policy.c - libFuzzer harness for the policy document parser (protocol/proto.h),
 * JSON or YAML by the first byte: a document either parses, and then its GET form parses
 * back to the same policy (its alerts and prices sections too: protocol/ops.h), or is
 * refused with a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/ops.h"
#include "protocol/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct sched_policy base;
    static int ready;
    if (!ready) {
        sched_policy_defaults(&base);
        ready = 1;
    }
    if (size == 0)
        return 0;
    bool yaml = data[0] & 1;
    struct proto_policy p;
    struct proto_error e;
    if (proto_policy_parse_text((const char *)data + 1, size - 1, yaml, &base, &p, &e) < 0) {
        if (!e.message[0])
            abort();
        proto_policy_release(&p);
        return 0;
    }
    json_t *doc = proto_policy_to_json(&p.policy);
    if (p.alerts)
        json_object_set_new(doc, "alerts", proto_alerts_json(p.alerts, false));
    if (p.prices)
        json_object_set_new(doc, "prices", proto_prices_json(p.prices));
    struct proto_policy q;
    if (proto_policy_parse(doc, &base, &q, &e) < 0)
        abort(); /* GET /v1/policy must apply back */
    json_t *again = proto_policy_to_json(&q.policy);
    if (q.alerts)
        json_object_set_new(again, "alerts", proto_alerts_json(q.alerts, false));
    if (q.prices)
        json_object_set_new(again, "prices", proto_prices_json(q.prices));
    if (!json_equal(doc, again))
        abort();
    json_decref(again);
    json_decref(doc);
    proto_policy_release(&q);
    proto_policy_release(&p);
    return 0;
}
