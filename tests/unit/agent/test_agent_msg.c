/*
 * test_agent_msg.c - the agent API's JSON (src/protocol/agent_msg.c): start commands
 * validated field by field with the field named, commands and replies, events both ways,
 * log chunks and base64.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/agent_msg.h"

static json_t *js(const char *text)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    if (!o)
        fail_msg("bad test JSON: %s", je.text);
    return o;
}

static void parse_ok(const char *text, struct agent_job *j)
{
    json_t *o = js(text);
    struct proto_error e = {0};
    int rc = agent_job_parse(o, j, &e);
    if (rc)
        print_error("%s: %s\n", e.field, e.message);
    assert_int_equal(rc, 0);
    json_decref(o);
}

/* Parse must fail naming `field`. */
static void parse_bad(const char *text, const char *field)
{
    json_t *o = js(text);
    struct agent_job j;
    struct proto_error e = {0};
    assert_int_equal(agent_job_parse(o, &j, &e), -EINVAL);
    assert_string_equal(e.field, field);
    assert_true(strlen(e.message) > 0);
    json_decref(o);
}

/* A template's modules and setup: kept, written back, hostile names refused. */
static void test_job_environment(void **st)
{
    (void)st;
    struct agent_job j, back;
    parse_ok("{\"id\": 3, \"command\": [\"true\"], \"environment\":"
             " {\"modules\": [\"cuda/12.1\", \"nccl\"], \"setup\": \"export A=1\"}}",
             &j);
    assert_int_equal(j.nmodules, 2);
    assert_string_equal(j.modules[1], "nccl");
    assert_null(j.modules[2]);
    assert_string_equal(j.setup, "export A=1");
    json_t *o = agent_job_to_json(&j);
    struct proto_error e = {0};
    assert_int_equal(agent_job_parse(o, &back, &e), 0);
    assert_int_equal(back.nmodules, 2);
    assert_string_equal(back.setup, "export A=1");
    json_decref(o);
    agent_job_release(&back);
    agent_job_release(&j);
    /* none: nothing written */
    parse_ok("{\"id\": 3, \"command\": [\"true\"]}", &j);
    o = agent_job_to_json(&j);
    assert_null(json_object_get(o, "environment"));
    json_decref(o);
    agent_job_release(&j);
    parse_bad(
        "{\"id\": 3, \"command\": [\"true\"], \"environment\": {\"modules\": [\"a'; rm -rf /\"]}}",
        "job.environment.modules");
    parse_bad("{\"id\": 3, \"command\": [\"true\"], \"environment\": {\"modules\": [\"-f\"]}}",
              "job.environment.modules");
    parse_bad("{\"id\": 3, \"command\": [\"true\"], \"environment\": {\"image\": \"x\"}}",
              "job.environment.image");
    parse_bad("{\"id\": 3, \"command\": [\"true\"], \"environment\": []}", "job.environment");
    /* a prepare script is kept under its NAME@VERSION: a directory name, nothing else */
    parse_ok("{\"id\": 3, \"command\": [\"true\"], \"environment\":"
             " {\"template\": \"venv@2\", \"prepare\": \"make\"}}",
             &j);
    assert_string_equal(j.env_key, "venv@2");
    assert_string_equal(j.prepare, "make");
    o = agent_job_to_json(&j);
    assert_int_equal(agent_job_parse(o, &back, &e), 0);
    assert_string_equal(back.env_key, "venv@2");
    json_decref(o);
    agent_job_release(&back);
    agent_job_release(&j);
    static const char *const keys[] = {"../x@1", "x", "x@", "@1", ".x@1", "a/b@1", "x@1a"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char doc[256];
        snprintf(doc, sizeof doc,
                 "{\"id\": 3, \"command\": [\"true\"], \"environment\":"
                 " {\"template\": \"%s\", \"prepare\": \"make\"}}",
                 keys[i]);
        parse_bad(doc, "job.environment.template");
    }
    parse_bad("{\"id\": 3, \"command\": [\"true\"], \"environment\": {\"prepare\": \"make\"}}",
              "job.environment.template");
}

static void test_job_full(void **st)
{
    (void)st;
    struct agent_job j;
    parse_ok(
        "{\"id\": 915, \"name\": \"resnet\", \"project\": \"vision\", \"tier\": \"high\","
        " \"class\": \"training\", \"user\": \"alice\", \"command\": [\"python\", \"train.py\"],"
        " \"script\": null, \"workdir\": \"/home/alice\", \"output\": \"%j.out\", \"error\": null,"
        " \"env\": {\"EPOCHS\": \"90\"}, \"gpus\": [0, 1], \"cpus\": 16, \"mem_mb\": 65536,"
        " \"time_limit_ms\": 172800000, \"signal\": 10, \"grace_ms\": 120000,"
        " \"nodelist\": [\"gpu03\", \"gpu04\"], \"node_rank\": 1, \"world_size\": 2,"
        " \"master_addr\": \"gpu03\", \"master_port\": 29500, \"array_index\": 3}",
        &j);
    assert_int_equal(j.id, 915);
    assert_string_equal(j.class_name, "training");
    assert_int_equal(j.argc, 2);
    assert_string_equal(j.argv[1], "train.py");
    assert_null(j.argv[2]);
    assert_null(j.script);
    assert_null(j.error);
    assert_string_equal(j.output, "%j.out");
    assert_string_equal(j.env[0], "EPOCHS=90");
    assert_int_equal(j.ngpus, 2);
    assert_int_equal(j.gpus[1], 1);
    assert_int_equal(j.mem_mb, 65536);
    assert_int_equal(j.nnodes, 2);
    assert_string_equal(j.nodelist[1], "gpu04");
    assert_int_equal(j.master_port, 29500);
    /* round trip */
    json_t *back = agent_job_to_json(&j);
    struct agent_job k;
    struct proto_error e = {0};
    assert_int_equal(agent_job_parse(back, &k, &e), 0);
    assert_int_equal(k.grace_ms, 120000);
    assert_string_equal(k.env[0], "EPOCHS=90");
    assert_string_equal(k.master_addr, "gpu03");
    json_decref(back);
    agent_job_release(&k);
    agent_job_release(&j);
}

/* A Slurm-style job: its tasks, signal timing, the step hosts; round trip; bad ones. */
static void test_job_slurm(void **st)
{
    (void)st;
    struct agent_job j;
    parse_ok("{\"id\": 7, \"script\": \"#!/bin/sh\\n\", \"array_id\": 5, \"slurm\": {"
             "\"ntasks\": 4, \"ntasks_per_node\": 2, \"cpus_per_task\": 3,"
             " \"gpus_per_task\": 1, \"signal\": 10, \"signal_before\": 20,"
             " \"signal_batch\": true, \"submit_dir\": \"/w\", \"step_key\": \"abc\","
             " \"step_hosts\": [\"10.0.0.1\", \"10.0.0.2\"]}}",
             &j);
    assert_true(j.slurm.on);
    assert_int_equal(j.array_id, 5);
    assert_int_equal(j.slurm.ntasks_per_node, 2);
    assert_int_equal(j.slurm.signal_before, 20);
    assert_true(j.slurm.signal_batch);
    assert_string_equal(j.slurm.submit_dir, "/w");
    assert_int_equal(j.slurm.nstep_hosts, 2);
    assert_string_equal(j.slurm.step_hosts[1], "10.0.0.2");
    json_t *o = agent_job_to_json(&j);
    struct agent_job back;
    struct proto_error e = {0};
    assert_int_equal(agent_job_parse(o, &back, &e), 0);
    json_t *o2 = agent_job_to_json(&back);
    assert_true(json_equal(o, o2));
    json_decref(o);
    json_decref(o2);
    agent_job_release(&back);
    agent_job_release(&j);
    parse_ok("{\"id\": 7, \"script\": \"x\"}", &j);
    assert_false(j.slurm.on);
    assert_int_equal(j.slurm.signal_before, -1);
    agent_job_release(&j);
    parse_bad("{\"id\": 7, \"script\": \"x\", \"slurm\": {\"nope\": 1}}", "job.slurm.nope");
    parse_bad("{\"id\": 7, \"script\": \"x\", \"slurm\": {\"step_hosts\": [\"a b\"]}}",
              "job.slurm.step_hosts");
}

static void test_job_script(void **st)
{
    (void)st;
    struct agent_job j;
    parse_ok("{\"id\": 1, \"script\": \"#!/bin/sh\\necho hi\\n\"}", &j);
    assert_null(j.argv);
    assert_string_equal(j.script, "#!/bin/sh\necho hi\n");
    assert_non_null(j.env);
    assert_null(j.env[0]);
    assert_non_null(j.nodelist);
    agent_job_release(&j);
}

/* A service replica (docs/services.md "Ports and probes"): its port wish and its probes,
 * read by the service spec's own probe reader, written back the same; bad ones refused
 * naming the field. */
static void test_job_service(void **st)
{
    (void)st;
    struct agent_job j, k;
    parse_ok(
        "{\"id\": 1, \"command\": [\"true\"], \"service\": {\"port\": true, \"readiness\":"
        " {\"http\": {\"path\": \"/healthz\"}, \"period\": \"200ms\"}, \"liveness\":"
        " {\"exec\": {\"command\": [\"test\", \"-f\", \"/tmp/ok\"]}, \"failure_threshold\": 2}}}",
        &j);
    assert_true(j.service && j.service_port);
    assert_int_equal(j.readiness.kind, PROTO_PROBE_HTTP);
    assert_string_equal(j.readiness.path, "/healthz");
    assert_int_equal(j.readiness.period_ms, 200);
    assert_int_equal(j.liveness.kind, PROTO_PROBE_EXEC);
    assert_int_equal(j.liveness.failure_threshold, 2);
    json_t *back = agent_job_to_json(&j);
    struct proto_error e = {0};
    assert_int_equal(agent_job_parse(back, &k, &e), 0);
    assert_true(k.service && k.service_port);
    assert_int_equal(k.liveness.kind, PROTO_PROBE_EXEC);
    assert_string_equal(json_string_value(json_array_get(k.liveness.command, 2)), "/tmp/ok");
    json_decref(back);
    agent_job_release(&k);
    agent_job_release(&j);
    parse_ok("{\"id\": 1, \"command\": [\"true\"]}", &j);
    assert_false(j.service);
    assert_int_equal(j.readiness.kind, PROTO_PROBE_NONE);
    agent_job_release(&j);
    parse_bad("{\"id\": 1, \"command\": [\"true\"], \"service\": 1}", "job.service");
    parse_bad("{\"id\": 1, \"command\": [\"true\"], \"service\": {\"port\": 1}}",
              "job.service.port");
    parse_bad("{\"id\": 1, \"command\": [\"true\"], \"service\": {\"startup\": {}}}",
              "job.service.startup");
    parse_bad("{\"id\": 1, \"command\": [\"true\"], \"service\": {\"readiness\": {\"http\":"
              " {\"path\": \"x\"}}}}",
              "job.service.readiness.http.path");
}

/* h-node: the run number and the class's pids.max of a start command, and back */
static void test_job_run_and_pids(void **st)
{
    (void)st;
    json_t *o = js("{\"id\": 7, \"command\": [\"x\"], \"run\": 3, \"pids_max\": 64}");
    struct agent_job j;
    struct proto_error e = {0};
    assert_int_equal(agent_job_parse(o, &j, &e), 0);
    assert_int_equal(j.run, 3);
    assert_int_equal(j.pids_max, 64);
    json_t *back = agent_job_to_json(&j);
    assert_int_equal(json_integer_value(json_object_get(back, "run")), 3);
    assert_int_equal(json_integer_value(json_object_get(back, "pids_max")), 64);
    json_decref(back);
    agent_job_release(&j);
    json_decref(o);
    parse_bad("{\"id\": 7, \"command\": [\"x\"], \"run\": -1}", "job.run");
    parse_bad("{\"id\": 7, \"command\": [\"x\"], \"pids_max\": \"lots\"}", "job.pids_max");
}

static void test_job_bad(void **st)
{
    (void)st;
    parse_bad("[]", "job");
    parse_bad("{\"command\": [\"x\"]}", "job.id");
    parse_bad("{\"id\": 0, \"command\": [\"x\"]}", "job.id");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"colour\": 1}", "job.colour");
    parse_bad("{\"id\": 1}", "job.command");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"script\": \"y\"}", "job.command");
    parse_bad("{\"id\": 1, \"command\": []}", "job.command");
    parse_bad("{\"id\": 1, \"command\": [\"x\", 2]}", "job.command[1]");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"gpus\": [0, 0]}", "job.gpus[1]");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"gpus\": [64]}", "job.gpus[0]");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"gpus\": 2}", "job.gpus");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"env\": {\"1X\": \"a\"}}", "job.env.1X");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"env\": {\"X\": 1}}", "job.env.X");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"cpus\": -1}", "job.cpus");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"signal\": 65}", "job.signal");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"mem_mb\": \"64G\"}", "job.mem_mb");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"user\": \"-rf\"}", "job.user");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"user\": \"a/b\"}", "job.user");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"nodelist\": [\"a b\"]}", "job.nodelist[0]");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"node_rank\": 2, \"world_size\": 2}",
              "job.node_rank");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"master_port\": 70000}", "job.master_port");
    parse_bad("{\"id\": 1, \"command\": [\"x\"], \"name\": 5}", "job.name");
}

static void test_heartbeat_reply(void **st)
{
    (void)st;
    json_t *o = js(
        "{\"commands\": [{\"seq\": 18, \"type\": \"start\", \"job\": {\"id\": 915, \"command\": "
        "[\"true\"]}},"
        " {\"seq\": 19, \"type\": \"signal\", \"job\": 915, \"signal\": 10, \"grace_ms\": 120000},"
        " {\"seq\": 20, \"type\": \"kill\", \"job\": 915},"
        " {\"seq\": 21, \"type\": \"step_host\", \"job\": 915, \"rank\": 2, \"addr\":"
        " \"10.0.0.2:41234\"},"
        " {\"seq\": 22, \"type\": \"notify\", \"job\": 915, \"signal\": 12, \"to\": \"batch\"},"
        " {\"seq\": 23, \"type\": \"limit\", \"job\": 915, \"time_limit_ms\": 60000}],"
        " \"node_state\": \"UP\"}");
    struct agent_heartbeat_reply r;
    struct proto_error e = {0};
    assert_int_equal(agent_heartbeat_reply_parse(o, &r, &e), 0);
    assert_int_equal(r.ncmds, 6);
    assert_string_equal(r.node_state, "UP");
    assert_int_equal(r.cmds[0].type, AGENT_CMD_START);
    assert_int_equal(r.cmds[0].job_id, 915);
    assert_non_null(r.cmds[0].job);
    assert_int_equal(r.cmds[1].type, AGENT_CMD_SIGNAL);
    assert_int_equal(r.cmds[1].signal, 10);
    assert_int_equal(r.cmds[1].grace_ms, 120000);
    assert_int_equal(r.cmds[2].type, AGENT_CMD_KILL);
    assert_int_equal(r.cmds[2].seq, 20);
    assert_int_equal(r.cmds[3].type, AGENT_CMD_STEP_HOST);
    assert_int_equal(r.cmds[3].rank, 2);
    assert_string_equal(r.cmds[3].addr, "10.0.0.2:41234");
    assert_int_equal(r.cmds[4].type, AGENT_CMD_NOTIFY); /* scancel --signal */
    assert_int_equal(r.cmds[4].signal, 12);
    assert_int_equal(r.cmds[4].notify_to, AGENT_NOTIFY_BATCH);
    assert_int_equal(r.cmds[5].type, AGENT_CMD_LIMIT); /* scontrol update TimeLimit= */
    assert_int_equal(r.cmds[5].time_limit_ms, 60000);
    /* builders give back the same shapes */
    for (size_t i = 0; i < 6; i++) {
        json_t *c = agent_cmd_to_json(&r.cmds[i]);
        assert_true(json_equal(c, json_array_get(json_object_get(o, "commands"), i)));
        json_decref(c);
    }
    agent_heartbeat_reply_release(&r);
    json_decref(o);
}

static void reply_bad(const char *text, const char *field)
{
    json_t *o = js(text);
    struct agent_heartbeat_reply r;
    struct proto_error e = {0};
    assert_int_equal(agent_heartbeat_reply_parse(o, &r, &e), -EINVAL);
    assert_string_equal(e.field, field);
    json_decref(o);
}

static void test_heartbeat_reply_bad(void **st)
{
    (void)st;
    reply_bad("{\"commands\": 1}", "commands");
    reply_bad("{\"commands\": [], \"extra\": 1}", "extra");
    reply_bad("{\"commands\": [{\"type\": \"kill\", \"job\": 1}]}", "commands[0].seq");
    reply_bad("{\"commands\": [{\"seq\": 1, \"type\": \"reboot\", \"job\": 1}]}",
              "commands[0].job");
    reply_bad("{\"commands\": [{\"seq\": 1, \"type\": \"signal\", \"job\": 1}]}",
              "commands[0].signal");
    reply_bad("{\"commands\": [{\"seq\": 1, \"type\": \"kill\", \"job\": 1, \"signal\": 9}]}",
              "commands[0].signal");
    reply_bad("{\"commands\": [{\"seq\": 1, \"type\": \"start\", \"job\": {\"id\": -1}}]}",
              "commands[0].job");
    reply_bad("{\"commands\": [{\"seq\": 1, \"type\": \"kill\", \"job\": 1}, 5]}", "commands[1]");
    reply_bad("{\"commands\": [{\"seq\": 1, \"type\": \"notify\", \"job\": 1}]}",
              "commands[0].signal");
    reply_bad("{\"commands\": [{\"seq\": 1, \"type\": \"notify\", \"job\": 1, \"signal\": 10,"
              " \"to\": \"everyone\"}]}",
              "commands[0].to");
    reply_bad("{\"commands\": [{\"seq\": 1, \"type\": \"notify\", \"job\": 1, \"signal\": 10,"
              " \"grace_ms\": 5}]}",
              "commands[0].grace_ms");
    reply_bad("{\"commands\": [{\"seq\": 1, \"type\": \"limit\", \"job\": 1}]}",
              "commands[0].time_limit_ms");
    reply_bad("{\"commands\": [{\"seq\": 1, \"type\": \"limit\", \"job\": 1,"
              " \"time_limit_ms\": 0}]}",
              "commands[0].time_limit_ms");
    /* where a step host listens: a rank > 0 and HOST:PORT, nothing a file line could split */
    static const char *const step_bad[][2] = {
        {"\"rank\": 0, \"addr\": \"h:1\"", "commands[0].rank"},
        {"\"addr\": \"h:1\"", "commands[0].rank"},
        {"\"rank\": 1", "commands[0].addr"},
        {"\"rank\": 1, \"addr\": \"h\"", "commands[0].addr"},
        {"\"rank\": 1, \"addr\": \"h:0\"", "commands[0].addr"},
        {"\"rank\": 1, \"addr\": \"h:65536\"", "commands[0].addr"},
        {"\"rank\": 1, \"addr\": \"h:1x\"", "commands[0].addr"},
        {"\"rank\": 1, \"addr\": \":1\"", "commands[0].addr"},
        {"\"rank\": 1, \"addr\": \"h h:1\"", "commands[0].addr"},
        {"\"rank\": 1, \"addr\": \"h:1\\n\"", "commands[0].addr"},
        {"\"rank\": 1, \"addr\": \"h:1\", \"port\": 2", "commands[0].port"},
    };
    for (size_t i = 0; i < sizeof step_bad / sizeof step_bad[0]; i++) {
        char text[300];
        snprintf(text, sizeof text,
                 "{\"commands\": [{\"seq\": 1, \"type\": \"step_host\", \"job\": 1, %s}]}",
                 step_bad[i][0]);
        reply_bad(text, step_bad[i][1]);
    }
}

static void test_register(void **st)
{
    (void)st;
    struct agent_node_info n;
    memset(&n, 0, sizeof n);
    snprintf(n.name, sizeof n.name, "gpu03");
    snprintf(n.gpu_type, sizeof n.gpu_type, "H100-80GB");
    n.gpus = 8;
    n.cpus = 64;
    n.mem_mb = 515000;
    json_t *body = agent_register_body(&n, "dkj_x", "9.8.7");
    assert_string_equal(json_string_value(json_object_get(body, "join_token")), "dkj_x");
    json_t *node = json_object_get(body, "node");
    assert_int_equal(json_integer_value(json_object_get(node, "gpus")), 8);
    assert_true(json_is_object(json_object_get(node, "labels")));
    json_decref(body);
    body = agent_register_body(&n, NULL, "9.8.7");
    assert_null(json_object_get(body, "join_token"));
    json_decref(body);

    struct agent_register_reply r;
    struct proto_error e = {0};
    json_t *o = js("{\"credential\": \"dkn_abc\", \"node\": \"gpu03\", \"heartbeat_wait_ms\": "
                   "25000, \"node_timeout_ms\": 60000}");
    assert_int_equal(agent_register_reply_parse(o, &r, &e), 0);
    assert_string_equal(r.credential, "dkn_abc");
    json_decref(o);
    o = js("{\"node\": \"gpu03\"}");
    assert_int_equal(agent_register_reply_parse(o, &r, &e), -EINVAL);
    assert_string_equal(e.field, "credential");
    json_decref(o);
}

static void test_events(void **st)
{
    (void)st;
    json_t *bad;
    struct agent_event e;
    memset(&e, 0, sizeof e);
    e.job = 915;
    snprintf(e.type, sizeof e.type, "exited");
    e.time_ms = 5;
    e.exit_kind = AGENT_EXIT_OOM;
    e.exit_code = 9;
    snprintf(e.message, sizeof e.message, "memory limit exceeded");
    e.has_usage = true;
    e.usage.cpu_ms = 1200;
    e.usage.max_rss_mb = 300;
    json_t *o = agent_event_to_json(&e);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "exit"), "kind")),
                        "oom");
    struct agent_event back;
    struct proto_error err = {0};
    assert_int_equal(agent_event_parse(o, "", &back, &err), 0);
    assert_int_equal(back.exit_kind, AGENT_EXIT_OOM);
    assert_int_equal(back.exit_code, 9);
    assert_int_equal(back.usage.max_rss_mb, 300);
    assert_string_equal(back.message, "memory limit exceeded");
    assert_int_equal(back.run, 0);
    assert_null(json_object_get(o, "run"));
    json_decref(o);
    e.run = 3;
    o = agent_event_to_json(&e);
    assert_int_equal(agent_event_parse(o, "", &back, &err), 0);
    assert_int_equal(back.run, 3);
    json_decref(o);
    bad = js("{\"job\": 1, \"run\": 0, \"type\": \"usage\"}");
    assert_int_equal(agent_event_parse(bad, "", &back, &err), -EINVAL);
    assert_string_equal(err.field, "run");
    json_decref(bad);

    bad = js("{\"job\": 1, \"type\": \"exited\", \"exit\": {\"kind\": \"exploded\"}}");
    assert_int_equal(agent_event_parse(bad, "", &back, &err), -EINVAL);
    assert_string_equal(err.field, "exit.kind");
    json_decref(bad);
    bad = js("{\"job\": 1, \"type\": \"usage\", \"usage\": {\"gpu_util\": -1}}");
    assert_int_equal(agent_event_parse(bad, "", &back, &err), -EINVAL);
    assert_string_equal(err.field, "usage.gpu_util");
    json_decref(bad);
    bad = js("{\"job\": 1, \"type\": \"rebooted\"}");
    assert_int_equal(agent_event_parse(bad, "", &back, &err), -EINVAL);
    assert_string_equal(err.field, "type");
    json_decref(bad);

    json_t *arr = json_array();
    json_array_append_new(arr, json_integer(1));
    json_t *body = agent_events_body("gpu03", arr);
    assert_int_equal(json_array_size(json_object_get(body, "events")), 1);
    json_decref(body);
    json_decref(arr);
}

/* h-usage: the sample of a usage event round-trips; unknown figures stay unknown; bad
 * input is refused naming the field */
static void test_sample(void **st)
{
    (void)st;
    struct agent_event e, back;
    struct proto_error err = {0};
    memset(&e, 0, sizeof e);
    e.job = 7;
    snprintf(e.type, sizeof e.type, "usage");
    e.has_sample = true;
    agent_sample_init(&e.sample);
    e.sample.cpu_ms = 1500;
    e.sample.mem_bytes = 1 << 20;
    snprintf(e.sample.gpu_source, sizeof e.sample.gpu_source, "nvml");
    e.sample.ngpus = 2;
    e.sample.gpus[0] = (struct agent_gpu_sample){3, 97, 4000, 250000, 66, 0, 1};
    e.sample.gpus[1] = (struct agent_gpu_sample){5, -1, -1, -1, -1, -1, -1};
    json_t *o = agent_event_to_json(&e);
    assert_null(json_object_get(json_object_get(o, "sample"), "io_read_bytes")); /* unknown */
    assert_int_equal(agent_event_parse(o, "", &back, &err), 0);
    json_decref(o);
    assert_true(back.has_sample);
    assert_int_equal(back.sample.cpu_ms, 1500);
    assert_int_equal(back.sample.io_read_bytes, -1);
    assert_int_equal(back.sample.ngpus, 2);
    assert_int_equal(back.sample.gpus[0].power_mw, 250000);
    assert_int_equal(back.sample.gpus[0].xid_errors, 1);
    assert_int_equal(back.sample.gpus[1].index, 5);
    assert_int_equal(back.sample.gpus[1].util, -1);
    static const struct {
        const char *json, *field;
    } bad[] = {
        {"{\"job\":1,\"type\":\"usage\",\"sample\":[]}", "sample"},
        {"{\"job\":1,\"type\":\"usage\",\"sample\":{}}", "sample.gpu_source"},
        {"{\"job\":1,\"type\":\"usage\",\"sample\":{\"gpu_source\":\"guess\"}}",
         "sample.gpu_source"},
        {"{\"job\":1,\"type\":\"usage\",\"sample\":{\"gpu_source\":\"none\",\"cpu_ms\":-1}}",
         "sample.cpu_ms"},
        {"{\"job\":1,\"type\":\"usage\",\"sample\":{\"gpu_source\":\"none\",\"gpus\":[{\"index\":0}"
         "]}}",
         "sample.gpus"},
        {"{\"job\":1,\"type\":\"usage\",\"sample\":{\"gpu_source\":\"nvml\",\"gpus\":[{\"index\":0,"
         "\"util\":101}]}}",
         "sample.gpus[0].util"},
        {"{\"job\":1,\"type\":\"usage\",\"sample\":{\"gpu_source\":\"nvml\",\"gpus\":[{\"index\":0}"
         ",{\"index\":0}]}}",
         "sample.gpus[1].index"},
        {"{\"job\":1,\"type\":\"usage\",\"sample\":{\"gpu_source\":\"nvml\",\"gpus\":[{\"index\":"
         "64}]}}",
         "sample.gpus[0].index"},
        {"{\"job\":1,\"type\":\"usage\",\"sample\":{\"gpu_source\":\"nvml\",\"gpus\":[{\"index\":1,"
         "\"watts\":3}]}}",
         "sample.gpus[0].watts"},
        {"{\"job\":1,\"type\":\"started\",\"sample\":{\"gpu_source\":\"none\"}}", "sample"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *b = js(bad[i].json);
        assert_int_equal(agent_event_parse(b, "", &back, &err), -EINVAL);
        assert_string_equal(err.field, bad[i].field);
        json_decref(b);
    }
}

static void test_heartbeat_body(void **st)
{
    (void)st;
    struct agent_job_status js2[1] = {{915, "running", 4242}};
    json_t *b = agent_heartbeat_body("gpu03", 17, 25000, false, "disk full", js2, 1);
    assert_int_equal(json_integer_value(json_object_get(b, "ack")), 17);
    assert_true(json_is_false(json_object_get(json_object_get(b, "health"), "ok")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(b, "health"), "message")),
                        "disk full");
    json_t *j0 = json_array_get(json_object_get(b, "jobs"), 0);
    assert_int_equal(json_integer_value(json_object_get(j0, "pid")), 4242);
    json_decref(b);
}

static void test_base64_and_logs(void **st)
{
    (void)st;
    /* base64 itself: tests/unit/util/test_base64.c */
    json_t *b = agent_logs_body("gpu03", 915, 2, "stdout", 10, "hi\n", 3, true, true);
    assert_string_equal(json_string_value(json_object_get(b, "data")), "aGkK");
    assert_int_equal(json_integer_value(json_object_get(b, "offset")), 10);
    int64_t off = 0;
    struct proto_error e = {0};
    /* the controller's side of the same chunk */
    struct agent_log_chunk k;
    assert_int_equal(agent_logs_parse(b, &k, &e), 0);
    assert_string_equal(k.node, "gpu03");
    assert_int_equal(k.job, 915);
    assert_int_equal(k.run, 2);
    assert_int_equal(k.stream, 0);
    assert_int_equal(k.offset, 10);
    assert_int_equal(k.len, 3);
    assert_memory_equal(k.data, "hi\n", 3);
    assert_true(k.final);
    assert_true(k.cut);
    agent_log_chunk_release(&k);
    json_decref(b);
    /* run 0 and no final are left out */
    b = agent_logs_body("gpu03", 915, 0, "stderr", 0, "", 0, false, false);
    assert_null(json_object_get(b, "run"));
    assert_null(json_object_get(b, "final"));
    assert_null(json_object_get(b, "cut"));
    assert_int_equal(agent_logs_parse(b, &k, &e), 0);
    assert_int_equal(k.run, 0);
    assert_int_equal(k.stream, 1);
    assert_false(k.final);
    assert_false(k.cut);
    agent_log_chunk_release(&k);
    json_decref(b);
    static const struct {
        const char *json, *field;
    } bad[] = {
        {"{\"node\": \"n\", \"job\": 1, \"stream\": \"stdout\", \"offset\": 0, \"data\": \"\", "
         "\"log_base\": 1}",
         "log_base"},
        {"{\"node\": \"n\", \"job\": 1, \"run\": 0, \"stream\": \"stdout\", \"offset\": 0, "
         "\"data\": \"\"}",
         "run"},
        {"{\"node\": \"n\", \"job\": 1, \"stream\": \"both\", \"offset\": 0, \"data\": \"\"}",
         "stream"},
        {"{\"node\": \"n\", \"job\": 1, \"stream\": \"stdout\", \"offset\": 0, \"data\": \"!!\"}",
         "data"},
        {"{\"node\": \"n\", \"job\": 1, \"stream\": \"stdout\", \"offset\": 0, \"data\": \"\", "
         "\"final\": 1}",
         "final"},
        {"{\"node\": \"n\", \"job\": 1, \"stream\": \"stdout\", \"offset\": 0, \"data\": \"\", "
         "\"cut\": \"yes\"}",
         "cut"},
        {"{\"node\": \"n\", \"job\": 1, \"stream\": \"stdout\", \"data\": \"\"}", "offset"},
        {"{\"job\": 1, \"stream\": \"stdout\", \"offset\": 0, \"data\": \"\"}", "node"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *o = js(bad[i].json);
        assert_int_equal(agent_logs_parse(o, &k, &e), -EINVAL);
        assert_string_equal(e.field, bad[i].field);
        json_decref(o);
    }
    json_t *r = js("{\"offset\": 13}");
    assert_int_equal(agent_logs_reply_parse(r, &off, &e), 0);
    assert_int_equal(off, 13);
    json_decref(r);
    r = js("{\"offset\": -1}");
    assert_int_equal(agent_logs_reply_parse(r, &off, &e), -EINVAL);
    json_decref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_full),
        cmocka_unit_test(test_job_script),
        cmocka_unit_test(test_job_environment),
        cmocka_unit_test(test_job_slurm),
        cmocka_unit_test(test_job_bad),
        cmocka_unit_test(test_heartbeat_reply),
        cmocka_unit_test(test_heartbeat_reply_bad),
        cmocka_unit_test(test_register),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_heartbeat_body),
        cmocka_unit_test(test_sample),
        cmocka_unit_test(test_base64_and_logs),
        cmocka_unit_test(test_job_run_and_pids),
        cmocka_unit_test(test_job_service),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
