/* test_authz_config.c - unit tests of docketd's one authorization decision
 * (ctl_authorize: who may do what) and of docketd.yaml loading (ctl_config_load: every
 * key, and a bad key or value named). */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <unistd.h>

#include "controller/ctl.h"

static struct ctl_ident ident(const char *user, bool admin, bool node)
{
    struct ctl_ident id;
    memset(&id, 0, sizeof(id));
    snprintf(id.user, sizeof(id.user), "%s", user);
    snprintf(id.role, sizeof(id.role), "%s", node ? "node" : admin ? "admin" : "member");
    id.admin = admin;
    id.node = node;
    if (node)
        snprintf(id.node_name, sizeof(id.node_name), "%s", user);
    return id;
}

static void admin_may_do_everything(void **state)
{
    struct ctl_ident a = ident("root", true, false);
    struct proto_error e;
    enum ctl_action acts[] = {CTL_READ, CTL_SUBMIT, CTL_JOB_CONTROL, CTL_JOB_LOGS, CTL_ADMIN};
    for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++)
        assert_int_equal(ctl_authorize(&a, acts[i], "alice", &e), 0);
    assert_int_not_equal(ctl_authorize(&a, CTL_AGENT, NULL, &e), 0);
    assert_int_equal(e.status, 403);
}

static void member_owns_only_its_jobs(void **state)
{
    struct ctl_ident m = ident("alice", false, false);
    struct proto_error e;
    assert_int_equal(ctl_authorize(&m, CTL_READ, NULL, &e), 0);
    assert_int_equal(ctl_authorize(&m, CTL_SUBMIT, NULL, &e), 0);
    assert_int_equal(ctl_authorize(&m, CTL_JOB_CONTROL, "alice", &e), 0);
    assert_int_equal(ctl_authorize(&m, CTL_JOB_LOGS, "alice", &e), 0);
    assert_int_not_equal(ctl_authorize(&m, CTL_JOB_CONTROL, "bob", &e), 0);
    assert_int_equal(e.status, 403);
    assert_non_null(strstr(e.message, "alice"));
    assert_int_not_equal(ctl_authorize(&m, CTL_JOB_LOGS, "bob", &e), 0);
    assert_int_not_equal(ctl_authorize(&m, CTL_JOB_CONTROL, NULL, &e), 0);
    assert_int_not_equal(ctl_authorize(&m, CTL_ADMIN, NULL, &e), 0);
    assert_int_not_equal(ctl_authorize(&m, CTL_AGENT, NULL, &e), 0);
}

static void node_credential_only_for_agent_endpoints(void **state)
{
    struct ctl_ident n = ident("gpu01", false, true);
    struct proto_error e;
    assert_int_equal(ctl_authorize(&n, CTL_AGENT, NULL, &e), 0);
    assert_int_not_equal(ctl_authorize(&n, CTL_READ, NULL, &e), 0);
    assert_int_not_equal(ctl_authorize(&n, CTL_SUBMIT, NULL, &e), 0);
    assert_int_not_equal(ctl_authorize(&n, CTL_JOB_CONTROL, "gpu01", &e), 0);
    assert_int_equal(e.status, 403);
}

static char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/docketd-cfg.XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        close(fd);
        return NULL;
    }
    close(fd);
    return path;
}

static void config_every_key(void **state)
{
    struct ctl_config cfg;
    char err[256] = "";
    ctl_config_defaults(&cfg);
    assert_string_equal(cfg.listen, "127.0.0.1:8420");
    assert_int_equal(cfg.max_body_bytes, 1u << 20);
    char *p = write_tmp("listen: 0.0.0.0:9000\nsocket: /tmp/d.sock\nstate_dir: /tmp/st\n"
                        "log_file: /tmp/d.log\nlog_level: debug\nlog_format: json\n"
                        "policy: /etc/p.yaml\nnode_timeout: 90s\nheartbeat_wait: 10s\n"
                        "cycle_delay: 2ms\ncycle_interval: 1m\nmax_body_bytes: 4096\n"
                        "max_connections: 500\nexpected_nodes: 3000\nidle_timeout: 45s\n"
                        "submit_rate: 5\nsubmit_burst: 50\nmax_array_tasks: 2000\n");
    assert_non_null(p);
    int rc = ctl_config_load(&cfg, p, err, sizeof(err));
    unlink(p);
    if (rc)
        fail_msg("%s", err);
    assert_string_equal(cfg.listen, "0.0.0.0:9000");
    assert_string_equal(cfg.socket_path, "/tmp/d.sock");
    assert_string_equal(cfg.state_dir, "/tmp/st");
    assert_string_equal(cfg.log_file, "/tmp/d.log");
    assert_int_equal(cfg.log_level, LOG_DEBUG);
    assert_int_equal(cfg.log_format, LOG_JSON);
    assert_string_equal(cfg.policy_file, "/etc/p.yaml");
    assert_int_equal(cfg.node_timeout_ms, 90000);
    assert_int_equal(cfg.heartbeat_wait_ms, 10000);
    assert_int_equal(cfg.cycle_delay_ms, 2);
    assert_int_equal(cfg.cycle_interval_ms, 60000);
    assert_int_equal(cfg.max_body_bytes, 4096);
    assert_int_equal(cfg.max_connections, 500);
    assert_int_equal(cfg.expected_nodes, 3000);
    assert_int_equal(cfg.idle_timeout_ms, 45000);
    assert_int_equal(cfg.submit_rate, 5);
    assert_int_equal(cfg.submit_burst, 50);
    assert_int_equal(cfg.max_array_tasks, 2000);
}

static void config_refusals_name_the_key(void **state)
{
    static const struct {
        const char *text, *key;
    } bad[] = {
        {"colour: blue\n", "colour"},
        {"node_timeout: soon\n", "node_timeout"},
        {"node_timeout: 10ms\n", "node_timeout"},
        {"log_level: loud\n", "log_level"},
        {"log_format: xml\n", "log_format"},
        {"listen: [1, 2]\n", "listen"},
        {"max_body_bytes: 10\n", "max_body_bytes"},
        {"max_connections: -1\n", "max_connections"},
        {"expected_nodes: 0\n", "expected_nodes"},
        {"idle_timeout: 10ms\n", "idle_timeout"},
        {"submit_rate: fast\n", "submit_rate"},
        {"submit_burst: 0\n", "submit_burst"},
        {"max_array_tasks: 10001\n", "max_array_tasks"},
        {"- a\n- b\n", "mapping"},
        {"listen: \"unterminated\n", "line"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ctl_config cfg;
        char err[256] = "";
        ctl_config_defaults(&cfg);
        char *p = write_tmp(bad[i].text);
        assert_non_null(p);
        int rc = ctl_config_load(&cfg, p, err, sizeof(err));
        unlink(p);
        if (rc == 0)
            fail_msg("accepted: %s", bad[i].text);
        if (!strstr(err, bad[i].key))
            fail_msg("'%s': message '%s' does not name '%s'", bad[i].text, err, bad[i].key);
    }
    struct ctl_config cfg;
    char err[256];
    ctl_config_defaults(&cfg);
    assert_int_not_equal(ctl_config_load(&cfg, "/nonexistent/docketd.yaml", err, sizeof(err)), 0);
    assert_non_null(strstr(err, "/nonexistent/docketd.yaml"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(admin_may_do_everything),
        cmocka_unit_test(member_owns_only_its_jobs),
        cmocka_unit_test(node_credential_only_for_agent_endpoints),
        cmocka_unit_test(config_every_key),
        cmocka_unit_test(config_refusals_name_the_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
