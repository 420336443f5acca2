/* fuzz_agent_msg.c - libFuzzer harness for the controller's parsers of agent bodies
 * (register, heartbeat, events: ctl_agent_validate). The first byte picks the endpoint,
 * the rest is the body; every refusal must say why. */
#include <stdint.h>
#include <stdlib.h>

#include "controller/ctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const endpoints[] = {"register", "heartbeat", "events"};
    if (size < 1)
        return 0;
    json_t *body = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, NULL);
    if (!body)
        return 0;
    struct proto_error e;
    e.message[0] = '\0';
    if (ctl_agent_validate(endpoints[data[0] % 3], body, &e) < 0 && !e.message[0])
        abort();
    json_decref(body);
    return 0;
}
