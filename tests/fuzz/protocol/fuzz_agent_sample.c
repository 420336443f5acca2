/* fuzz_agent_sample.c - libFuzzer harness for the usage sample reader (agent_sample_parse,
 * protocol/agent_msg.h): any bytes that decode as JSON either read into a sample that
 * its builder writes back to the same JSON and that reads again to the same sample, or
 * are refused with a field and a message. Nothing leaks or crashes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/agent_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const struct agent_sample *a, const struct agent_sample *b)
{
    if (a->cpu_ms != b->cpu_ms || a->mem_bytes != b->mem_bytes ||
        a->mem_peak_bytes != b->mem_peak_bytes || a->io_read_bytes != b->io_read_bytes ||
        a->io_write_bytes != b->io_write_bytes || a->interval_ms != b->interval_ms ||
        strcmp(a->gpu_source, b->gpu_source) != 0 || a->ngpus != b->ngpus)
        abort();
    if (a->ngpus && memcmp(a->gpus, b->gpus, (size_t)a->ngpus * sizeof(a->gpus[0])) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *o = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
    if (!o)
        return 0;
    struct agent_sample s, back;
    struct proto_error e = {0};
    if (agent_sample_parse(o, &s, &e) != 0) {
        if (!e.message[0] || !e.field[0])
            abort(); /* every refusal names its field and says why */
        json_decref(o);
        return 0;
    }
    json_t *out = agent_sample_to_json(&s);
    if (!out || agent_sample_parse(out, &back, &e) != 0)
        abort(); /* what we write we must read */
    same(&s, &back);
    json_t *again = agent_sample_to_json(&back);
    if (!json_equal(out, again))
        abort();
    /* the same object inside a usage event goes through the event reader alike */
    json_t *ev = json_pack("{s:i,s:s,s:O}", "job", 1, "type", "usage", "sample", o);
    struct agent_event ae;
    if (!ev || agent_event_parse(ev, "", &ae, &e) != 0 || !ae.has_sample)
        abort();
    same(&s, &ae.sample);
    json_decref(ev);
    json_decref(again);
    json_decref(out);
    json_decref(o);
    return 0;
}
