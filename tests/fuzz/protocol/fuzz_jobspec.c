/* fuzz_jobspec.c - libFuzzer harness for the submit body parser (protocol/proto.h):
 * any bytes either parse into a spec that normalises, reloads and normalises to the
 * same stored form, or are refused with a field and a message. The same bytes as a
 * change to a stored spec (PATCH /v1/jobs/ID, proto_jobspec_patch) are taken, the result
 * again stored and read back, or refused with a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The bytes as a change to a small stored spec. */
static void patch_one(const uint8_t *data, size_t size)
{
    struct proto_jobspec j, back;
    struct proto_error e;
    json_t *patch = json_loadb((const char *)data, size, 0, NULL);
    static const char base[] = "{\"command\": [\"x\"], \"time_limit\": \"1h\"}";
    if (!patch || proto_jobspec_parse_text(base, sizeof(base) - 1, 0, &j, &e) < 0) {
        json_decref(patch);
        return;
    }
    memset(&e, 0, sizeof(e));
    if (proto_jobspec_patch(patch, 1800000000000LL, &j, &e) < 0) {
        if (!e.message[0])
            abort(); /* every refusal says why */
    } else {
        json_t *stored = proto_jobspec_to_json(&j);
        if (proto_jobspec_load(stored, &back, &e) < 0)
            abort(); /* a changed spec is stored and read back like any */
        proto_jobspec_release(&back);
        json_decref(stored);
    }
    json_decref(patch);
    proto_jobspec_release(&j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct proto_jobspec j, back;
    struct proto_error e;
    patch_one(data, size);
    if (proto_jobspec_parse_text((const char *)data, size, 1800000000000LL, &j, &e) < 0) {
        if (!e.message[0])
            abort(); /* every refusal says why */
        proto_jobspec_release(&j);
        return 0;
    }
    json_t *stored = proto_jobspec_to_json(&j);
    if (proto_jobspec_load(stored, &back, &e) < 0)
        abort(); /* what we store we must read back */
    json_t *again = proto_jobspec_to_json(&back);
    if (!json_equal(stored, again))
        abort();
    if (j.array[0]) {
        int32_t *idx = NULL;
        size_t n;
        int limit;
        if (proto_array_expand(j.array, &idx, &n, &limit, &e) < 0 || n == 0)
            abort();
        free(idx);
    }
    json_decref(again);
    json_decref(stored);
    proto_jobspec_release(&back);
    proto_jobspec_release(&j);
    return 0;
}
