/* test_agent_body.c - unit tests of the readers of the bodies an agent posts, docketd's
 * only readers of them (protocol/agent_msg.h): register (its two steps), heartbeat,
 * events, rotate and the body's node. Each check docketd makes is refused here naming
 * the same JSON path, with status 400, and what docketd takes is taken. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/agent_msg.h"

static json_t *js(const char *text)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    if (!o)
        fail_msg("bad test JSON '%s': %s", text, je.text);
    return o;
}

/* A string of n bytes 'x' as JSON text ("xxx"). */
static char *long_string(size_t n)
{
    char *s = malloc(n + 3);
    assert_non_null(s);
    s[0] = '"';
    memset(s + 1, 'x', n);
    s[n + 1] = '"';
    s[n + 2] = '\0';
    return s;
}

/* The reader of each body kind, under one signature. */
enum body { B_REGISTER, B_NODE, B_HEARTBEAT, B_EVENTS, B_ROTATE };

static int read_body(enum body kind, const json_t *o, struct proto_error *e)
{
    struct agent_registration reg;
    struct agent_heartbeat hb;
    const json_t *evs;
    int rc;
    switch (kind) {
    case B_REGISTER:
        return agent_register_parse(o, &reg, e);
    case B_NODE:
        return agent_register_node_parse(o, &reg, e);
    case B_HEARTBEAT:
        rc = agent_heartbeat_parse(o, &hb, e);
        agent_heartbeat_release(&hb);
        return rc;
    case B_EVENTS:
        return agent_events_parse(o, &evs, e);
    case B_ROTATE:
        return agent_rotate_parse(o, e);
    }
    return -EINVAL;
}

static void refused(enum body kind, const char *text, const char *field)
{
    json_t *o = js(text);
    struct proto_error e;
    memset(&e, 0, sizeof(e));
    if (read_body(kind, o, &e) != -EINVAL)
        fail_msg("taken: %s", text);
    if (strcmp(e.field, field) != 0)
        fail_msg("%s: field '%s', want '%s' (%s)", text, e.field, field, e.message);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.code, "invalid_argument");
    assert_true(strlen(e.message) > 0);
    json_decref(o);
}

static void taken(enum body kind, const char *text)
{
    json_t *o = js(text);
    struct proto_error e;
    memset(&e, 0, sizeof(e));
    if (read_body(kind, o, &e) != 0)
        fail_msg("refused: %s: %s: %s", text, e.field, e.message);
    json_decref(o);
}

static void body_node(void **st)
{
    (void)st;
    const char *node = "x";
    struct proto_error e;
    json_t *o = js("{\"node\": \"gpu01\", \"ack\": 3}");
    assert_int_equal(agent_body_node(o, &node, &e), 0);
    assert_string_equal(node, "gpu01");
    json_decref(o);
    o = js("{\"node\": 7}");
    assert_int_equal(agent_body_node(o, &node, &e), -EINVAL);
    assert_null(node);
    assert_string_equal(e.field, "node");
    assert_string_equal(e.message, "node must be a string");
    json_decref(o);
    taken(B_ROTATE, "{\"node\": \"gpu01\"}");
    refused(B_ROTATE, "{\"node\": \"gpu01\", \"why\": 1}", "why");
}

static void register_head(void **st)
{
    (void)st;
    struct agent_registration reg;
    struct proto_error e;
    json_t *o = js("{\"join_token\": \"dkj_x\", \"agent_version\": \"0.1\", \"node\": {\"name\": "
                   "\"gpu01\", \"cpus\": \"many\"}}");
    assert_int_equal(agent_register_parse(o, &reg, &e), 0);
    assert_string_equal(reg.join_token, "dkj_x");
    assert_string_equal(reg.agent_version, "0.1");
    assert_string_equal(reg.name, "gpu01"); /* peeked: the node is read only later */
    assert_int_equal(agent_register_node_parse(o, &reg, &e), -EINVAL);
    assert_string_equal(e.field, "node.cpus");
    json_decref(o);
    o = js("{\"node\": {\"name\": 5}}");
    assert_int_equal(agent_register_parse(o, &reg, &e), 0);
    assert_null(reg.join_token);
    assert_null(reg.agent_version);
    assert_null(reg.name);
    json_decref(o);

    char *ver = long_string(65), *tok = long_string(257), text[400];
    refused(B_REGISTER, "{\"node\": {}, \"password\": 1}", "password");
    snprintf(text, sizeof(text), "{\"agent_version\": %s}", ver);
    refused(B_REGISTER, text, "agent_version");
    refused(B_REGISTER, "{\"agent_version\": 1}", "agent_version");
    snprintf(text, sizeof(text), "{\"join_token\": %s}", tok);
    refused(B_REGISTER, text, "join_token");
    refused(B_REGISTER, "{\"join_token\": null}", "join_token");
    refused(B_REGISTER, "[1]", "");
    free(ver);
    free(tok);
}

static void register_node(void **st)
{
    (void)st;
    struct agent_registration reg;
    struct proto_error e;
    json_t *o = js("{\"node\": {\"name\": \"gpu01\", \"gpu_type\": \"H100-80GB\", \"gpus\": 8, "
                   "\"gpu_mem_mb\": 81920, \"gpu_uuids\": [\"GPU-1\"], \"cpus\": 64, \"mem_mb\": "
                   "512000, \"labels\": {\"zone\": \"a\"}, \"addr\": \"10.0.0.3\"}}");
    memset(&reg, 0, sizeof(reg));
    assert_int_equal(agent_register_node_parse(o, &reg, &e), 0);
    json_t *node = json_object_get(o, "node");
    assert_string_equal(reg.node_name, "gpu01");
    assert_string_equal(reg.gpu_type, "H100-80GB");
    assert_int_equal(reg.gpus, 8);
    assert_int_equal(reg.gpu_mem_mb, 81920);
    assert_int_equal(reg.cpus, 64);
    assert_int_equal(reg.mem_mb, 512000);
    assert_ptr_equal(reg.labels, json_object_get(node, "labels")); /* kept as they came */
    assert_ptr_equal(reg.gpu_uuids, json_object_get(node, "gpu_uuids"));
    assert_ptr_equal(reg.addr, json_object_get(node, "addr"));
    json_decref(o);
    taken(B_NODE, "{\"node\": {\"name\": \"c1\", \"gpu_type\": \"\", \"cpus\": 1, \"mem_mb\": 1}}");

    static const struct {
        const char *node, *field;
    } bad[] = {
        {"5", "node"},
        {"{\"name\": \"c1\", \"cpus\": 1, \"mem_mb\": 1, \"disk\": 1}", "node.disk"},
        {"{\"cpus\": 1, \"mem_mb\": 1}", "node.name"},
        {"{\"name\": \"bad name\", \"cpus\": 1, \"mem_mb\": 1}", "node.name"},
        {"{\"name\": \"c1\", \"gpu_type\": null, \"cpus\": 1, \"mem_mb\": 1}", "node.gpu_type"},
        {"{\"name\": \"c1\", \"gpus\": 2, \"cpus\": 1, \"mem_mb\": 1}", "node.gpu_type"},
        {"{\"name\": \"c1\", \"gpu_type\": \"A\", \"gpus\": 65, \"cpus\": 1, \"mem_mb\": 1}",
         "node.gpus"},
        {"{\"name\": \"c1\", \"gpu_mem_mb\": -1, \"cpus\": 1, \"mem_mb\": 1}", "node.gpu_mem_mb"},
        {"{\"name\": \"c1\", \"mem_mb\": 1}", "node.cpus"},
        {"{\"name\": \"c1\", \"cpus\": 4097, \"mem_mb\": 1}", "node.cpus"},
        {"{\"name\": \"c1\", \"cpus\": 1, \"mem_mb\": 0}", "node.mem_mb"},
        {"{\"name\": \"c1\", \"cpus\": 1, \"mem_mb\": 1, \"labels\": null}", "node.labels"},
        {"{\"name\": \"c1\", \"cpus\": 1, \"mem_mb\": 1, \"labels\": {\"a b\": \"c\"}}",
         "node.labels.a b"},
        {"{\"name\": \"c1\", \"cpus\": 1, \"mem_mb\": 1, \"labels\": {\"zone\": 1}}",
         "node.labels.zone"},
        {"{\"name\": \"c1\", \"cpus\": 1, \"mem_mb\": 1, \"gpu_uuids\": \"GPU-1\"}",
         "node.gpu_uuids"},
        {"{\"name\": \"c1\", \"cpus\": 1, \"mem_mb\": 1, \"gpu_uuids\": [1]}", "node.gpu_uuids"},
        {"{\"name\": \"c1\", \"cpus\": 1, \"mem_mb\": 1, \"addr\": 1}", "node.addr"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text), "{\"node\": %s}", bad[i].node);
        refused(B_NODE, text, bad[i].field);
    }
}

/* The limits of a node: 16 labels, 64 GPU ids of at most 128 bytes, an addr of 255. */
static void register_limits(void **st)
{
    (void)st;
    char text[4096], *uuid = long_string(128), *addr = long_string(255);
    int n = snprintf(text, sizeof(text),
                     "{\"node\": {\"name\": \"c\", \"cpus\": 1, \"mem_mb\": "
                     "1, \"addr\": %s, \"gpu_uuids\": [%s], \"labels\": {",
                     addr, uuid);
    for (int i = 0; i < 16; i++)
        n += snprintf(text + n, sizeof(text) - (size_t)n, "%s\"k%d\": \"v\"", i ? "," : "", i);
    snprintf(text + n, sizeof(text) - (size_t)n, "}}}");
    taken(B_NODE, text);
    text[n] = '\0';
    snprintf(text + n, sizeof(text) - (size_t)n, ", \"k16\": \"v\"}}}");
    refused(B_NODE, text, "node.labels");
    free(uuid);
    free(addr);
    uuid = long_string(129);
    addr = long_string(256);
    snprintf(text, sizeof(text),
             "{\"node\": {\"name\": \"c\", \"cpus\": 1, \"mem_mb\": 1, "
             "\"gpu_uuids\": [%s]}}",
             uuid);
    refused(B_NODE, text, "node.gpu_uuids");
    snprintf(text, sizeof(text),
             "{\"node\": {\"name\": \"c\", \"cpus\": 1, \"mem_mb\": 1, "
             "\"addr\": %s}}",
             addr);
    refused(B_NODE, text, "node.addr");
    free(uuid);
    free(addr);
}

static void heartbeat(void **st)
{
    (void)st;
    struct agent_heartbeat hb;
    struct proto_error e;
    json_t *o = js("{\"node\": \"gpu01\"}");
    assert_int_equal(agent_heartbeat_parse(o, &hb, &e), 0);
    assert_int_equal(hb.ack, 0);
    assert_int_equal(hb.wait_ms, AGENT_WAIT_DEFAULT_MS);
    assert_true(hb.health_ok);
    assert_string_equal(hb.health_msg, "");
    assert_int_equal(hb.njobs, 0);
    agent_heartbeat_release(&hb);
    json_decref(o);
    o = js("{\"node\": \"gpu01\", \"ack\": 17, \"wait_ms\": 0, \"health\": {\"ok\": false, "
           "\"message\": \"disk full\"}, \"jobs\": [{\"id\": 915, \"state\": \"running\", "
           "\"pid\": \"any\"}, {\"id\": 916}]}");
    assert_int_equal(agent_heartbeat_parse(o, &hb, &e), 0);
    assert_int_equal(hb.ack, 17);
    assert_int_equal(hb.wait_ms, 0);
    assert_false(hb.health_ok);
    assert_string_equal(hb.health_msg, "disk full");
    assert_int_equal(hb.njobs, 2);
    assert_int_equal(hb.jobs[0].id, 915);
    assert_string_equal(hb.jobs[0].state, "running");
    assert_int_equal(hb.jobs[1].id, 916);
    assert_null(hb.jobs[1].state);
    agent_heartbeat_release(&hb);
    json_decref(o);

    char *msg = long_string(256), text[400];
    snprintf(text, sizeof(text), "{\"health\": {\"message\": %s}}", msg);
    refused(B_HEARTBEAT, text, "health.message");
    free(msg);
    refused(B_HEARTBEAT, "{\"node\": \"a\", \"acks\": 1}", "acks");
    refused(B_HEARTBEAT, "{\"ack\": -1}", "ack");
    refused(B_HEARTBEAT, "{\"ack\": null}", "ack");
    refused(B_HEARTBEAT, "{\"wait_ms\": 600001}", "wait_ms");
    refused(B_HEARTBEAT, "{\"health\": true}", "health");
    refused(B_HEARTBEAT, "{\"health\": {\"ok\": 1}}", "health.ok");
    refused(B_HEARTBEAT, "{\"health\": {\"load\": 1}}", "health.load");
    refused(B_HEARTBEAT, "{\"jobs\": {}}", "jobs");
    refused(B_HEARTBEAT, "{\"jobs\": null}", "jobs");
    refused(B_HEARTBEAT, "{\"jobs\": [{\"id\": 1}, 2]}", "jobs[1]");
    refused(B_HEARTBEAT, "{\"jobs\": [{\"id\": 1}, {}]}", "jobs[1].id");
    refused(B_HEARTBEAT, "{\"jobs\": [{\"id\": 0}]}", "jobs[0].id");
    refused(B_HEARTBEAT, "{\"jobs\": [{\"id\": 1, \"state\": 3}]}", "jobs[0].state");
    refused(B_HEARTBEAT, "{\"jobs\": [{\"id\": 1, \"rss\": 3}]}", "jobs[0].rss");
}

/* One event in a body: refused naming `field`. */
static void event_refused(const char *event, const char *field)
{
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"node\": \"n\", \"events\": [{\"job\": 1, \"type\": "
             "\"usage\"}, %s]}",
             event);
    refused(B_EVENTS, text, field);
}

static void event_taken(const char *event)
{
    char text[2048];
    snprintf(text, sizeof(text), "{\"node\": \"n\", \"events\": [%s]}", event);
    taken(B_EVENTS, text);
}

static void events(void **st)
{
    (void)st;
    refused(B_EVENTS, "{\"node\": \"n\"}", "events");
    refused(B_EVENTS, "{\"node\": \"n\", \"events\": {}}", "events");
    refused(B_EVENTS, "{\"node\": \"n\", \"events\": [], \"more\": 1}", "more");
    event_refused("3", "events[1]");
    event_refused("{\"type\": \"usage\"}", "events[1].job");
    event_refused("{\"job\": 1, \"type\": \"usage\", \"run\": 0}", "events[1].run");
    event_refused("{\"job\": 1, \"type\": \"exploded\"}", "events[1].type");
    event_refused("{\"job\": 1}", "events[1].type");
    event_refused("{\"job\": 1, \"type\": \"usage\", \"time_ms\": -1}", "events[1].time_ms");
    event_refused("{\"job\": 1, \"type\": \"usage\", \"colour\": 1}", "events[1].colour");
    /* every field is checked on any type */
    event_refused("{\"job\": 1, \"type\": \"exited\", \"exit\": {\"kind\": \"code\"}, \"pid\": "
                  "\"x\"}",
                  "events[1].pid");
    event_refused("{\"job\": 1, \"type\": \"usage\", \"exit\": {\"kind\": \"boom\"}}",
                  "events[1].exit.kind");
    event_refused("{\"job\": 1, \"type\": \"started\", \"usage\": null}", "events[1].usage");
    event_refused("{\"job\": 1, \"type\": \"exited\"}", "events[1].exit");
    event_refused("{\"job\": 1, \"type\": \"exited\", \"exit\": 0}", "events[1].exit");
    event_refused("{\"job\": 1, \"type\": \"exited\", \"exit\": {\"kind\": \"code\", \"why\": "
                  "1}}",
                  "events[1].exit.why");
    event_refused("{\"job\": 1, \"type\": \"exited\", \"exit\": {\"kind\": \"code\", \"code\": "
                  "256}}",
                  "events[1].exit.code");
    event_refused("{\"job\": 1, \"type\": \"usage\", \"usage\": {\"cpu_ms\": -1}}",
                  "events[1].usage.cpu_ms");
    event_refused("{\"job\": 1, \"type\": \"usage\", \"usage\": {\"gpus\": 1}}",
                  "events[1].usage.gpus");
    event_refused("{\"job\": 1, \"type\": \"usage\", \"message\": 1}", "events[1].message");
    event_refused("{\"job\": 1, \"type\": \"started\", \"sample\": {\"gpu_source\": \"none\"}}",
                  "events[1].sample");
    event_refused("{\"job\": 1, \"type\": \"usage\", \"sample\": {\"gpu_source\": \"guess\"}}",
                  "events[1].sample.gpu_source");
    /* what docketd takes: signalled events, a utilisation past 100 in the legacy usage */
    event_taken("{\"job\": 1, \"type\": \"signalled\", \"message\": \"SIGUSR1\"}");
    /* a template's prepare on the node: begun, done (docs/environments.md) */
    event_taken("{\"job\": 1, \"type\": \"preparing\", \"message\": \"venv@2\"}");
    event_taken("{\"job\": 1, \"type\": \"prepared\", \"message\": \"venv@2\"}");
    event_taken("{\"job\": 1, \"type\": \"usage\", \"usage\": {\"gpu_util\": 150}}");
    event_taken("{\"job\": 1, \"run\": 2, \"type\": \"started\", \"pid\": 7, \"time_ms\": 1}");
    /* a step host's port: on its event only, always there, a port */
    event_taken("{\"job\": 1, \"run\": 2, \"type\": \"step_host\", \"port\": 40123}");
    event_refused("{\"job\": 1, \"type\": \"step_host\"}", "events[1].port");
    event_refused("{\"job\": 1, \"type\": \"step_host\", \"port\": 0}", "events[1].port");
    event_refused("{\"job\": 1, \"type\": \"step_host\", \"port\": 65536}", "events[1].port");
    event_refused("{\"job\": 1, \"type\": \"step_host\", \"port\": \"1\"}", "events[1].port");
    event_refused("{\"job\": 1, \"type\": \"usage\", \"port\": 1}", "events[1].port");
    /* a service replica's port on its start (docs/services.md "Ports and probes") */
    event_taken("{\"job\": 1, \"type\": \"started\", \"port\": 31000}");
    event_refused("{\"job\": 1, \"type\": \"started\", \"port\": 0}", "events[1].port");
    /* a probe's verdict: its object on a probe event only, and always there */
    event_taken("{\"job\": 1, \"type\": \"probe\", \"probe\": {\"name\": \"readiness\","
                " \"ok\": false}, \"message\": \"answered HTTP/1.0 503\"}");
    event_taken("{\"job\": 1, \"type\": \"probe\", \"probe\": {\"name\": \"liveness\","
                " \"ok\": true}}");
    event_refused("{\"job\": 1, \"type\": \"probe\"}", "events[1].probe");
    event_refused("{\"job\": 1, \"type\": \"usage\", \"probe\": {\"name\": \"liveness\","
                  " \"ok\": true}}",
                  "events[1].probe");
    event_refused("{\"job\": 1, \"type\": \"probe\", \"probe\": {\"name\": \"startup\","
                  " \"ok\": true}}",
                  "events[1].probe.name");
    event_refused("{\"job\": 1, \"type\": \"probe\", \"probe\": {\"name\": \"liveness\"}}",
                  "events[1].probe.ok");
    event_refused("{\"job\": 1, \"type\": \"probe\", \"probe\": {\"name\": \"liveness\","
                  " \"ok\": true, \"x\": 1}}",
                  "events[1].probe.x");
}

/* The messages docketd answers with (HTTP-visible), and the limits on messages. */
static void event_messages(void **st)
{
    (void)st;
    struct proto_error e;
    const json_t *evs;
    json_t *o = js("{\"node\": \"n\", \"events\": [{\"job\": 1, \"type\": \"rebooted\"}]}");
    assert_int_equal(agent_events_parse(o, &evs, &e), -EINVAL);
    assert_string_equal(e.message, "events[0].type must be started, signalled, exited, usage,"
                                   " reclaim_failed, step_host, preparing, prepared or probe");
    json_decref(o);
    o = js("{\"node\": \"n\", \"events\": [{\"job\": 1, \"type\": \"usage\", \"sample\": "
           "{\"gpu_source\": \"guess\"}}]}");
    assert_int_equal(agent_events_parse(o, &evs, &e), -EINVAL);
    assert_string_equal(e.message, "events[0]: 'sample.gpu_source' must be nvml, declared or none");
    json_decref(o);

    char *ok = long_string(AGENT_MESSAGE_MAX), *big = long_string(AGENT_MESSAGE_MAX + 1);
    char text[2200];
    snprintf(text, sizeof(text),
             "{\"job\": 1, \"type\": \"exited\", \"exit\": {\"kind\": "
             "\"code\", \"message\": %s}}",
             ok);
    event_taken(text);
    snprintf(text, sizeof(text),
             "{\"job\": 1, \"type\": \"exited\", \"exit\": {\"kind\": "
             "\"code\", \"message\": %s}}",
             big);
    event_refused(text, "events[1].exit.message");
    snprintf(text, sizeof(text), "{\"job\": 1, \"type\": \"reclaim_failed\", \"message\": %s}",
             big);
    event_refused(text, "events[1].message");
    free(ok);
    free(big);
}

static void events_limit(void **st)
{
    (void)st;
    json_t *evs = json_array();
    for (int i = 0; i <= AGENT_MAX_EVENTS; i++)
        json_array_append_new(evs, json_pack("{s:i,s:s}", "job", 1, "type", "usage"));
    json_t *o = json_pack("{s:s,s:o}", "node", "n", "events", evs);
    const json_t *got;
    struct proto_error e;
    assert_int_equal(agent_events_parse(o, &got, &e), -EINVAL);
    assert_string_equal(e.field, "events");
    json_array_remove(evs, 0);
    assert_int_equal(agent_events_parse(o, &got, &e), 0);
    assert_ptr_equal(got, evs);
    json_decref(o);
}

/* An event read alone: its fields, and the exit and usage objects as sent. */
static void event_fields(void **st)
{
    (void)st;
    struct agent_event ev;
    struct proto_error e;
    json_t *o = js("{\"job\": 9, \"run\": 2, \"type\": \"exited\", \"time_ms\": 5, \"exit\": "
                   "{\"kind\": \"oom\", \"code\": 9, \"message\": \"out\"}, \"message\": "
                   "\"ignored\", \"usage\": {\"cpu_ms\": 7}}");
    assert_int_equal(agent_event_parse(o, "events[4]", &ev, &e), 0);
    assert_int_equal(ev.job, 9);
    assert_int_equal(ev.run, 2);
    assert_string_equal(ev.type, "exited");
    assert_true(ev.has_exit);
    assert_int_equal(ev.exit_kind, AGENT_EXIT_OOM);
    assert_int_equal(ev.exit_code, 9);
    assert_string_equal(ev.message, "out"); /* an exited event's message is its exit's */
    assert_true(ev.has_usage);
    assert_int_equal(ev.usage.cpu_ms, 7);
    assert_ptr_equal(ev.exit_json, json_object_get(o, "exit"));
    assert_ptr_equal(ev.usage_json, json_object_get(o, "usage"));
    uint64_t job;
    int run;
    agent_event_job_run(o, &job, &run);
    assert_int_equal(job, 9);
    assert_int_equal(run, 2);
    json_decref(o);
    o = js("{\"job\": 9, \"type\": \"reclaim_failed\", \"message\": \"busy\"}");
    assert_int_equal(agent_event_parse(o, "", &ev, &e), 0);
    assert_string_equal(ev.message, "busy");
    assert_false(ev.has_exit);
    assert_null(ev.exit_json);
    assert_null(ev.usage_json);
    agent_event_job_run(o, &job, &run);
    assert_int_equal(run, 0); /* not given */
    json_decref(o);
    o = js("{\"job\": 9, \"type\": \"exited\", \"exit\": {\"kind\": \"lost\"}}");
    assert_int_equal(agent_event_parse(o, "events[4]", &ev, &e), 0);
    assert_int_equal(ev.exit_code, 0);
    assert_string_equal(ev.message, "");
    json_decref(o);
    o = js("{\"job\": 9, \"type\": \"exited\", \"exit\": {\"kind\": \"lost\", \"code\": \"x\"}}");
    assert_int_equal(agent_event_parse(o, "events[4]", &ev, &e), -EINVAL);
    assert_string_equal(e.field, "events[4].exit.code");
    assert_int_equal(agent_event_parse(o, "", &ev, &e), -EINVAL);
    assert_string_equal(e.field, "exit.code");
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(body_node),      cmocka_unit_test(register_head),
        cmocka_unit_test(register_node),  cmocka_unit_test(register_limits),
        cmocka_unit_test(heartbeat),      cmocka_unit_test(events),
        cmocka_unit_test(event_messages), cmocka_unit_test(events_limit),
        cmocka_unit_test(event_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
