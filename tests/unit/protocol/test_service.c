/* test_service.c - unit tests of the service spec's reader (protocol/service.h): a full
 * spec with every default written back, the normalised form read back to itself, and
 * every bad field refused with its JSON path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/service.h"

#define NOW ((int64_t)1800000000000)

static void full_spec_and_round_trip(void **state)
{
    (void)state;
    const char *text =
        "{\"name\": \"web\", \"project\": \"p\", \"replicas\": 2,"
        " \"job\": {\"command\": [\"python3\", \"server.py\"], \"cpus\": 1},"
        " \"probes\": {\"readiness\": {\"http\": {\"path\": \"/healthz\"}, \"period\": \"2s\"},"
        "  \"liveness\": {\"exec\": {\"command\": [\"test\", \"-f\", \"/tmp/ok\"]},"
        "   \"failure_threshold\": 2}},"
        " \"restart\": {\"backoff\": \"500ms\", \"backoff_max\": \"1m\"},"
        " \"update\": {\"deadline\": \"2m\"}}";
    struct proto_service s, back;
    struct proto_error e;
    assert_int_equal(proto_service_parse_text(text, strlen(text), NOW, &s, &e), 0);
    assert_string_equal(s.name, "web");
    assert_int_equal(s.replicas, 2);
    assert_int_equal(s.readiness.kind, PROTO_PROBE_HTTP);
    assert_string_equal(s.readiness.path, "/healthz");
    assert_int_equal(s.readiness.port, 0);
    assert_int_equal(s.readiness.period_ms, 2000);
    assert_int_equal(s.readiness.failure_threshold, 3);
    assert_int_equal(s.liveness.kind, PROTO_PROBE_EXEC);
    assert_int_equal(s.liveness.failure_threshold, 2);
    assert_int_equal(s.backoff_ms, 500);
    assert_int_equal(s.backoff_max_ms, 60000);
    assert_int_equal(s.crash_loop_restarts, 5);
    assert_int_equal(s.update_deadline_ms, 120000);
    json_t *j = proto_service_to_json(&s);
    assert_non_null(j);
    assert_int_equal(proto_service_parse(j, NOW, &back, &e), 0);
    json_t *again = proto_service_to_json(&back);
    assert_true(json_equal(j, again));
    json_decref(again);
    json_decref(j);
    proto_service_release(&back);
    proto_service_release(&s);
}

static void refused(const char *text, const char *field)
{
    struct proto_service s;
    struct proto_error e;
    memset(&e, 0, sizeof(e));
    if (proto_service_parse_text(text, strlen(text), NOW, &s, &e) == 0)
        fail_msg("accepted: %s", text);
    if (strcmp(e.field, field) != 0)
        fail_msg("field '%s' (%s), not '%s', for %s", e.field, e.message, field, text);
    assert_true(e.message[0] != '\0');
    proto_service_release(&s);
}

static void bad_fields_named(void **state)
{
    (void)state;
    refused("[]", "");
    refused("{\"job\": {\"command\": [\"x\"]}}", "name");
    refused("{\"name\": \"a b\", \"job\": {\"command\": [\"x\"]}}", "name");
    refused("{\"name\": \"w\"}", "job");
    refused("{\"name\": \"w\", \"job\": {\"command\": [\"x\"]}, \"bogus\": 1}", "bogus");
    refused("{\"name\": \"w\", \"replicas\": 65, \"job\": {\"command\": [\"x\"]}}", "replicas");
    refused("{\"name\": \"w\", \"replicas\": -1, \"job\": {\"command\": [\"x\"]}}", "replicas");
    refused("{\"name\": \"w\", \"job\": {\"command\": [\"x\"], \"class\": \"training\"}}",
            "job.class");
    refused("{\"name\": \"w\", \"job\": {\"command\": [\"x\"], \"array\": \"0-3\"}}", "job.array");
    refused("{\"name\": \"w\", \"job\": {\"command\": [\"x\"], \"gpus\": -1}}", "job.gpus");
    refused("{\"name\": \"w\", \"job\": {\"command\": [\"x\"]}, \"probes\": {\"startup\": {}}}",
            "probes.startup");
    refused("{\"name\": \"w\", \"job\": {\"command\": [\"x\"]},"
            " \"probes\": {\"readiness\": {\"tcp\": {}, \"exec\": {\"command\": [\"x\"]}}}}",
            "probes.readiness");
    refused("{\"name\": \"w\", \"job\": {\"command\": [\"x\"]},"
            " \"probes\": {\"readiness\": {\"http\": {\"path\": \"/a b\"}}}}",
            "probes.readiness.http.path");
    refused("{\"name\": \"w\", \"job\": {\"command\": [\"x\"]},"
            " \"probes\": {\"liveness\": {\"tcp\": {\"port\": 70000}}}}",
            "probes.liveness.tcp.port");
    refused("{\"name\": \"w\", \"job\": {\"command\": [\"x\"]},"
            " \"probes\": {\"liveness\": {\"exec\": {\"command\": []}}}}",
            "probes.liveness.exec.command");
    refused("{\"name\": \"w\", \"job\": {\"command\": [\"x\"]},"
            " \"probes\": {\"liveness\": {\"tcp\": {}, \"period\": \"1ms\"}}}",
            "probes.liveness.period");
    refused("{\"name\": \"w\", \"job\": {\"command\": [\"x\"]},"
            " \"restart\": {\"backoff\": \"1m\", \"backoff_max\": \"1s\"}}",
            "restart.backoff_max");
    refused("{\"name\": \"w\", \"job\": {\"command\": [\"x\"]},"
            " \"restart\": {\"crash_loop_restarts\": 0}}",
            "restart.crash_loop_restarts");
    refused("{\"name\": \"w\", \"job\": {\"command\": [\"x\"]}, \"update\": {\"deadline\": \"x\"}}",
            "update.deadline");
    refused("{\"name\": \"w\", \"name\": \"v\", \"job\": {\"command\": [\"x\"]}}", "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_spec_and_round_trip),
        cmocka_unit_test(bad_fields_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
