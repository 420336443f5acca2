/*
 * fuzz_agent_msg.c - libFuzzer harness for the agent messages: any bytes that decode as
 * JSON go through the heartbeat reply, job, register reply, event, log chunk and logs
 * reply parsers.
 * Invariants: a successful parse round-trips through its builder and parses again; a
 * failed one names a field or says why; nothing leaks or crashes.
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
    struct agent_msg_error e = {"", ""};
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *o = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
    if (!o)
        return 0;
    struct agent_msg_error e = {"", ""};
    struct agent_heartbeat_reply r;
    if (agent_heartbeat_reply_parse(o, &r, &e) == 0) {
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
    check_job(o);
    struct agent_register_reply rr;
    (void)agent_register_reply_parse(o, &rr, &e);
    struct agent_event ev;
    if (agent_event_parse(o, &ev, &e) == 0) {
        json_t *back = agent_event_to_json(&ev);
        struct agent_event ev2;
        if (!back || agent_event_parse(back, &ev2, &e) != 0 || ev2.job != ev.job ||
            ev2.run != ev.run)
            abort();
        json_decref(back);
    }
    /* a log chunk round-trips through its builder: same job, run, stream, bytes, final */
    struct agent_log_chunk k;
    if (agent_logs_parse(o, &k, &e) == 0) {
        json_t *back = agent_logs_body(k.node, k.job, k.run, k.stream ? "stderr" : "stdout",
                                       k.offset, k.data, k.len, k.final);
        struct agent_log_chunk k2;
        if (!back || agent_logs_parse(back, &k2, &e) != 0)
            abort();
        if (k2.job != k.job || k2.run != k.run || k2.stream != k.stream ||
            k2.offset != k.offset || k2.len != k.len || k2.final != k.final ||
            (k.len && memcmp(k2.data, k.data, k.len) != 0))
            abort();
        agent_log_chunk_release(&k2);
        agent_log_chunk_release(&k);
        json_decref(back);
    } else if (!e.message[0]) {
        abort();
    }
    int64_t off;
    (void)agent_logs_reply_parse(o, &off, &e);
    if (json_is_string(o)) {
        unsigned char buf[4096];
        int64_t n = b64_decode(json_string_value(o), json_string_length(o), buf, sizeof buf);
        if (n >= 0) {
            char *enc = b64_encode(buf, (size_t)n);
            if (!enc || strcmp(enc, json_string_value(o)) != 0)
                abort();
            free(enc);
        }
    }
    json_decref(o);
    return 0;
}
