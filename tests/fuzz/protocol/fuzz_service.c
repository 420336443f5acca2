/* fuzz_service.c - libFuzzer harness for the service spec's reader (protocol/service.h):
 * any bytes either parse into a spec whose normalised form reads back to itself, or are
 * refused with a message. */
#include <stdint.h>
#include <stdlib.h>

#include "protocol/service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct proto_service s, back;
    struct proto_error e;
    if (proto_service_parse_text((const char *)data, size, 1800000000000LL, &s, &e) < 0) {
        if (!e.message[0])
            abort(); /* every refusal says why */
        proto_service_release(&s);
        return 0;
    }
    json_t *stored = proto_service_to_json(&s);
    if (!stored || proto_service_parse(stored, 1800000000000LL, &back, &e) < 0)
        abort(); /* what we store we must read back */
    json_t *again = proto_service_to_json(&back);
    if (!json_equal(stored, again))
        abort();
    json_decref(again);
    json_decref(stored);
    proto_service_release(&back);
    proto_service_release(&s);
    return 0;
}
