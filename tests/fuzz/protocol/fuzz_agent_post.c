/*
 * fuzz_agent_post.c - libFuzzer harness for the bodies an agent posts, read by docketd
 * through protocol/agent_msg.h and nothing else: the first byte picks the reader
 * (register, heartbeat, events, rotate, a log chunk, one event alone), the rest is the
 * body.
 * Invariants: every refusal is a 400 that says why; each event of a batch that was taken
 * reads again alone (docketd counts on it), to the job and run agent_event_job_run says,
 * and round-trips through its builder; a log
 * chunk round-trips through its builder; nothing leaks or crashes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/agent_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void refusal(int rc, const struct proto_error *e)
{
    if (rc == -EINVAL && (e->status != 400 || !e->message[0]))
        abort();
    if (rc != 0 && rc != -EINVAL && rc != -ENOMEM)
        abort();
}

static void check_register(const json_t *o)
{
    struct agent_registration reg;
    struct proto_error e = {0};
    int rc = agent_register_parse(o, &reg, &e);
    if (rc == 0)
        rc = agent_register_node_parse(o, &reg, &e);
    refusal(rc, &e);
    if (rc == 0 && (!reg.node_name[0] || reg.cpus < 1 || (reg.gpus > 0 && !reg.gpu_type[0])))
        abort();
}

static void check_heartbeat(const json_t *o)
{
    struct agent_heartbeat hb;
    struct proto_error e = {0};
    int rc = agent_heartbeat_parse(o, &hb, &e);
    refusal(rc, &e);
    if (rc == 0 && hb.njobs != json_array_size(json_object_get(o, "jobs")))
        abort();
    agent_heartbeat_release(&hb);
}

/* An event that was taken: built back, it reads again to the same facts. */
static void round_trip(const struct agent_event *ev)
{
    struct agent_event back;
    struct proto_error e = {0};
    json_t *o = agent_event_to_json(ev);
    if (!o || agent_event_parse(o, "", &back, &e) != 0)
        abort();
    if (back.job != ev->job || back.run != ev->run || strcmp(back.type, ev->type) != 0 ||
        back.has_sample != ev->has_sample || back.has_usage != ev->has_usage)
        abort();
    if (strcmp(ev->type, "exited") == 0 &&
        (back.exit_kind != ev->exit_kind || back.exit_code != ev->exit_code ||
         strcmp(back.message, ev->message) != 0))
        abort();
    json_decref(o);
}

static void check_events(const json_t *o)
{
    const json_t *evs;
    struct proto_error e = {0};
    int rc = agent_events_parse(o, &evs, &e);
    refusal(rc, &e);
    for (size_t i = 0; rc == 0 && i < json_array_size(evs); i++) {
        struct agent_event ev;
        uint64_t job;
        int run;
        if (agent_event_parse(json_array_get(evs, i), "", &ev, NULL) != 0)
            abort();
        agent_event_job_run(json_array_get(evs, i), &job, &run);
        if (job != ev.job || run != ev.run)
            abort();
        round_trip(&ev);
    }
}

static void check_logs(const json_t *o)
{
    struct agent_log_chunk k, k2;
    struct proto_error e = {0};
    int rc = agent_logs_parse(o, &k, &e);
    refusal(rc, &e);
    if (rc != 0)
        return;
    json_t *back = agent_logs_body(k.node, k.job, k.run, k.stream ? "stderr" : "stdout", k.offset,
                                   k.data, k.len, k.final, k.cut);
    if (!back || agent_logs_parse(back, &k2, &e) != 0)
        abort();
    if (k2.job != k.job || k2.run != k.run || k2.stream != k.stream || k2.offset != k.offset ||
        k2.len != k.len || k2.final != k.final || k2.cut != k.cut ||
        (k.len && memcmp(k2.data, k.data, k.len) != 0))
        abort();
    agent_log_chunk_release(&k2);
    agent_log_chunk_release(&k);
    json_decref(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    json_t *o = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, NULL);
    if (!o)
        return 0;
    struct proto_error e = {0};
    struct agent_event ev;
    const char *node;
    switch (data[0] % 6) {
    case 0:
        check_register(o);
        break;
    case 1:
        if (agent_body_node(o, &node, &e) != 0 && !e.message[0])
            abort();
        check_heartbeat(o);
        break;
    case 2:
        check_events(o);
        break;
    case 3:
        refusal(agent_rotate_parse(o, &e), &e);
        break;
    case 4:
        check_logs(o);
        break;
    default:
        if (agent_event_parse(o, "", &ev, &e) == 0)
            round_trip(&ev);
        else
            refusal(-EINVAL, &e);
    }
    json_decref(o);
    return 0;
}
