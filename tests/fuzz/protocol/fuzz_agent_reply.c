/*
 * fuzz_agent_reply.c - libFuzzer harness for the agent messages docket-node reads
 * (protocol/agent_msg.h): any bytes that decode as JSON go through the heartbeat reply
 * (its commands and their start jobs), the job, the register reply and the logs reply
 * readers, and a JSON string through base64.
 * Invariants: a job read back from its builder reads again to the same job; a command
 * builds back; every refusal says why; nothing leaks or crashes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/agent_msg.h"
#include "util/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_job(const json_t *o)
{
    struct agent_job j;
    struct proto_error e = {0};
    if (agent_job_parse(o, &j, &e) != 0) {
        if (!e.message[0])
            abort();
        return;
    }
    json_t *back = agent_job_to_json(&j);
    struct agent_job k;
    if (!back || agent_job_parse(back, &k, &e) != 0)
        abort();
    if (k.id != j.id || k.ngpus != j.ngpus || k.nenv != j.nenv || k.argc != j.argc)
        abort();
    agent_job_release(&k);
    json_decref(back);
    agent_job_release(&j);
}

static void check_reply(const json_t *o)
{
    struct proto_error e = {0};
    struct agent_heartbeat_reply r;
    if (agent_heartbeat_reply_parse(o, &r, &e) != 0) {
        if (!e.message[0])
            abort();
        return;
    }
    for (size_t i = 0; i < r.ncmds; i++) {
        if (r.cmds[i].job)
            check_job(r.cmds[i].job);
        json_t *c = agent_cmd_to_json(&r.cmds[i]);
        if (!c)
            abort();
        json_decref(c);
    }
    agent_heartbeat_reply_release(&r);
}

static void check_base64(const json_t *o)
{
    unsigned char buf[4096];
    int64_t n = b64_decode(json_string_value(o), json_string_length(o), buf, sizeof buf);
    if (n < 0)
        return;
    char *enc = b64_encode(buf, (size_t)n);
    if (!enc || strcmp(enc, json_string_value(o)) != 0)
        abort();
    free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *o = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
    if (!o)
        return 0;
    struct proto_error e = {0};
    check_reply(o);
    check_job(o);
    struct agent_register_reply rr;
    if (agent_register_reply_parse(o, &rr, &e) != 0 && !e.message[0])
        abort();
    int64_t off;
    e.message[0] = '\0';
    if (agent_logs_reply_parse(o, &off, &e) != 0 && !e.message[0])
        abort();
    if (json_is_string(o))
        check_base64(o);
    json_decref(o);
    return 0;
}
