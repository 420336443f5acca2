/* test_authz_config.c - unit tests of docketd's one authorization decision (authz.c:
 * who may do what, per role and per project role; env visibility; hold levels; what a
 * lead may change) and of docketd.yaml loading (ctl_config_load: every key, and a bad
 * key or value named). */
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

#include "controller/authz.h"
#include "controller/config.h"

static struct ctl_ident ident(const char *user, enum ctl_role role, bool node)
{
    struct ctl_ident id;
    memset(&id, 0, sizeof(id));
    snprintf(id.user, sizeof(id.user), "%s", user);
    id.role = role;
    id.node = node;
    if (node)
        snprintf(id.node_name, sizeof(id.node_name), "%s", user);
    return id;
}

static struct ctl_target target(const char *project, const char *owner, enum ctl_prole pr)
{
    struct ctl_target t = {project, owner, pr};
    return t;
}

#define ALLOW(id, p, t) assert_int_equal(ctl_authz_check(&(id), (p), (t), &e), 0)
#define DENY(id, p, t)                                                                             \
    do {                                                                                           \
        memset(&e, 0, sizeof(e));                                                                  \
        assert_int_not_equal(ctl_authz_check(&(id), (p), (t), &e), 0);                             \
        assert_int_equal(e.status, 403);                                                           \
    } while (0)

static void admin_may_do_everything_but_agent_calls(void **state)
{
    struct ctl_ident a = ident("root", CTL_ROLE_ADMIN, false);
    struct ctl_target t = target("b", "alice", CTL_PROLE_NONE);
    struct proto_error e;
    for (int p = CTL_P_PUBLIC; p < CTL_P_AGENT; p++)
        ALLOW(a, (enum ctl_perm)p, &t);
    DENY(a, CTL_P_AGENT, &t);
    assert_true(ctl_authz_sees_job_private(&a, &t));
    assert_int_equal(ctl_authz_level(&a, &t), CTL_LEVEL_ADMIN);
}

static void member_submits_only_into_its_projects(void **state)
{
    struct ctl_ident m = ident("alice", CTL_ROLE_NONE, false);
    struct ctl_target mine = target("a", "alice", CTL_PROLE_MEMBER);
    struct ctl_target other = target("b", "alice", CTL_PROLE_NONE);
    struct ctl_target behalf = target("a", "bob", CTL_PROLE_MEMBER);
    struct proto_error e;
    ALLOW(m, CTL_P_SUBMIT, &mine);
    DENY(m, CTL_P_SUBMIT, &other);
    assert_string_equal(e.field, "project");
    assert_non_null(strstr(e.message, "'b'"));
    DENY(m, CTL_P_SUBMIT, &behalf);
    assert_string_equal(e.field, "user");
}

static void member_owns_only_its_jobs(void **state)
{
    struct ctl_ident m = ident("alice", CTL_ROLE_NONE, false);
    struct ctl_target own = target("a", "alice", CTL_PROLE_MEMBER);
    struct ctl_target bobs = target("a", "bob", CTL_PROLE_MEMBER);
    struct proto_error e;
    ALLOW(m, CTL_P_READ, &bobs);
    ALLOW(m, CTL_P_JOB_CONTROL, &own);
    ALLOW(m, CTL_P_JOB_PRIVATE, &own);
    DENY(m, CTL_P_JOB_CONTROL, &bobs);
    assert_non_null(strstr(e.message, "alice"));
    DENY(m, CTL_P_JOB_PRIVATE, &bobs);
    DENY(m, CTL_P_PROJECT_LEAD, &bobs);
    DENY(m, CTL_P_OPERATOR, NULL);
    DENY(m, CTL_P_ADMIN, NULL);
    DENY(m, CTL_P_AUDIT, NULL);
    DENY(m, CTL_P_AGENT, NULL);
    assert_true(ctl_authz_sees_job_private(&m, &own));
    assert_false(ctl_authz_sees_job_private(&m, &bobs));
}

static void lead_manages_its_project_only(void **state)
{
    struct ctl_ident l = ident("lee", CTL_ROLE_NONE, false);
    struct ctl_target in_a = target("a", "bob", CTL_PROLE_LEAD);
    struct ctl_target in_b = target("b", "bob", CTL_PROLE_NONE);
    struct proto_error e;
    ALLOW(l, CTL_P_PROJECT_LEAD, &in_a);
    ALLOW(l, CTL_P_JOB_CONTROL, &in_a);
    ALLOW(l, CTL_P_JOB_PRIVATE, &in_a);
    DENY(l, CTL_P_PROJECT_LEAD, &in_b);
    DENY(l, CTL_P_JOB_CONTROL, &in_b);
    DENY(l, CTL_P_OPERATOR, &in_a);
    assert_true(ctl_authz_sees_job_private(&l, &in_a));
    assert_false(ctl_authz_sees_job_private(&l, &in_b));
    assert_int_equal(ctl_authz_level(&l, &in_a), CTL_LEVEL_LEAD);
}

static void operator_and_viewer(void **state)
{
    struct ctl_ident o = ident("ops", CTL_ROLE_OPERATOR, false);
    struct ctl_ident v = ident("dash", CTL_ROLE_VIEWER, false);
    struct ctl_target t = target("a", "bob", CTL_PROLE_NONE);
    struct proto_error e;
    ALLOW(o, CTL_P_OPERATOR, &t);
    ALLOW(o, CTL_P_JOB_CONTROL, &t);
    ALLOW(o, CTL_P_AUDIT, &t);
    DENY(o, CTL_P_ADMIN, &t);
    DENY(o, CTL_P_SUBMIT, &t);
    DENY(o, CTL_P_JOB_PRIVATE, &t);
    assert_false(ctl_authz_sees_job_private(&o, &t));
    ALLOW(v, CTL_P_READ, &t);
    ALLOW(v, CTL_P_AUDIT, &t);
    DENY(v, CTL_P_OPERATOR, &t);
    DENY(v, CTL_P_JOB_CONTROL, &t);
    DENY(v, CTL_P_SUBMIT, &t);
    assert_false(ctl_authz_sees_job_private(&v, &t));
}

static void node_credential_only_for_agent_endpoints(void **state)
{
    struct ctl_ident n = ident("gpu01", CTL_ROLE_ADMIN, true); /* even with a role */
    struct ctl_target t = target("a", "gpu01", CTL_PROLE_LEAD);
    struct proto_error e;
    ALLOW(n, CTL_P_AGENT, NULL);
    ALLOW(n, CTL_P_PUBLIC, NULL);
    for (int p = CTL_P_READ; p < CTL_P_AGENT; p++)
        DENY(n, (enum ctl_perm)p, &t);
    assert_false(ctl_authz_sees_job_private(&n, &t));
}

static void a_hold_is_released_at_its_level(void **state)
{
    struct ctl_ident owner = ident("alice", CTL_ROLE_NONE, false);
    struct ctl_ident op = ident("ops", CTL_ROLE_OPERATOR, false);
    struct ctl_ident admin = ident("root", CTL_ROLE_ADMIN, false);
    struct ctl_target t = target("a", "alice", CTL_PROLE_MEMBER);
    struct proto_error e;
    assert_int_equal(ctl_authz_release(&owner, &t, "alice", CTL_LEVEL_OWNER, &e), 0);
    assert_int_not_equal(ctl_authz_release(&owner, &t, "root", CTL_LEVEL_ADMIN, &e), 0);
    assert_int_equal(e.status, 403);
    assert_non_null(strstr(e.message, "root"));
    assert_int_not_equal(ctl_authz_release(&owner, &t, "ops", CTL_LEVEL_OPERATOR, &e), 0);
    assert_int_not_equal(ctl_authz_release(&op, &t, "root", CTL_LEVEL_ADMIN, &e), 0);
    assert_int_equal(ctl_authz_release(&op, &t, "ops", CTL_LEVEL_OPERATOR, &e), 0);
    assert_int_equal(ctl_authz_release(&admin, &t, "ops", CTL_LEVEL_OPERATOR, &e), 0);
    assert_int_equal(ctl_level_parse("bogus"), CTL_LEVEL_ADMIN);
    assert_int_equal(ctl_level_parse("lead"), CTL_LEVEL_LEAD);
}

static void a_lead_changes_user_caps_and_the_limit_within_the_group(void **state)
{
    struct ctl_ident l = ident("lee", CTL_ROLE_NONE, false);
    struct ctl_ident m = ident("alice", CTL_ROLE_NONE, false);
    struct ctl_target t = target("a", NULL, CTL_PROLE_LEAD);
    struct ctl_target tm = target("a", NULL, CTL_PROLE_MEMBER);
    struct sched_project_spec p;
    struct proto_error e;
    sched_project_spec_init(&p);
    p.gpu_limit = 16;
    p.user_gpu_limit = 8;
    json_t *ok = json_pack("{s:i}", "user_gpu_limit", 8);
    json_t *quota = json_pack("{s:i}", "gpu_limit", 32);
    json_t *share = json_pack("{s:f}", "guarantee_gpus", 8.0);
    assert_int_equal(ctl_authz_project_patch(&l, &t, ok, &p, -1, &e), 0);
    assert_int_not_equal(ctl_authz_project_patch(&m, &tm, ok, &p, -1, &e), 0);
    /* the project's own limit: without a group limit the admin's */
    assert_int_not_equal(ctl_authz_project_patch(&l, &t, quota, &p, -1, &e), 0);
    assert_string_equal(e.field, "gpu_limit");
    assert_non_null(strstr(e.message, "no group"));
    /* within its group's, the lead's; past it, or unbounded, not */
    p.gpu_limit = 32;
    assert_int_equal(ctl_authz_project_patch(&l, &t, quota, &p, 32, &e), 0);
    assert_int_not_equal(ctl_authz_project_patch(&l, &t, quota, &p, 24, &e), 0);
    assert_string_equal(e.field, "gpu_limit");
    p.gpu_limit = -1;
    assert_int_not_equal(ctl_authz_project_patch(&l, &t, quota, &p, 24, &e), 0);
    p.gpu_limit = 16;
    /* its guarantee stays the admin's, group or not */
    assert_int_not_equal(ctl_authz_project_patch(&l, &t, share, &p, 32, &e), 0);
    assert_string_equal(e.field, "guarantee_gpus");
    p.user_gpu_limit = 17; /* above the project's own limit */
    assert_int_not_equal(ctl_authz_project_patch(&l, &t, ok, &p, 32, &e), 0);
    assert_string_equal(e.field, "user_gpu_limit");
    json_decref(ok);
    json_decref(quota);
    json_decref(share);
}

/* Issue 33 item 6: a job's script, command, env and logs are its owner's, its project's
 * leads' and the admins'; a report over every project's jobs shows them to admins only. */
static void job_private_is_owner_lead_admin(void **state)
{
    (void)state;
    struct ctl_ident own = ident("mem", CTL_ROLE_NONE, false);
    struct ctl_ident other = ident("memb", CTL_ROLE_NONE, false);
    struct ctl_ident op = ident("oper", CTL_ROLE_OPERATOR, false);
    struct ctl_ident view = ident("view", CTL_ROLE_VIEWER, false);
    struct ctl_ident adm = ident("root", CTL_ROLE_ADMIN, false);
    struct ctl_ident node = ident("mem", CTL_ROLE_ADMIN, true);
    struct ctl_target as_member = target("pa", "mem", CTL_PROLE_MEMBER);
    struct ctl_target as_lead = target("pa", "mem", CTL_PROLE_LEAD);
    struct ctl_target all = target(NULL, NULL, CTL_PROLE_NONE);
    assert_true(ctl_authz_sees_job_private(&own, &as_member));
    assert_false(ctl_authz_sees_job_private(&other, &as_member)); /* a fellow member */
    assert_true(ctl_authz_sees_job_private(&other, &as_lead));
    assert_false(ctl_authz_sees_job_private(&op, &as_member));
    assert_false(ctl_authz_sees_job_private(&view, &as_member));
    assert_true(ctl_authz_sees_job_private(&adm, &as_member));
    assert_false(ctl_authz_sees_job_private(&node, &as_member));
    assert_true(ctl_authz_sees_job_private(&adm, &all));
    assert_false(ctl_authz_sees_job_private(&view, &all));
    assert_false(ctl_authz_sees_job_private(&op, &all));
}

/* Issue 33 item 7: a secret reaches the jobs of those its allow list names (members,
 * user:NAME, class:NAME), the project's leads and admins; nobody else, and an entry this
 * docketd does not know admits no one. */
static void secret_use_follows_its_allow_list(void **state)
{
    (void)state;
    struct proto_error e;
    struct ctl_ident mem = ident("mem", CTL_ROLE_NONE, false);
    struct ctl_ident adm = ident("root", CTL_ROLE_ADMIN, false);
    struct ctl_ident op = ident("oper", CTL_ROLE_OPERATOR, false);
    struct ctl_target as_member = target("pa", "mem", CTL_PROLE_MEMBER);
    struct ctl_target as_lead = target("pa", "mem", CTL_PROLE_LEAD);
    json_t *none = json_array();
    json_t *bob = json_pack("[s,s]", "user:bob", "class:interactive");
    json_t *mine = json_pack("[s]", "user:mem");
    json_t *members = json_pack("[s]", "members");
    json_t *odd = json_pack("[s,s]", "group:pa", "user:");
    assert_true(ctl_authz_secret_use(&mem, &as_member, "training", "K", none, "secrets[0]", &e) <
                0);
    assert_int_equal(e.status, 403);
    assert_string_equal(e.field, "secrets[0]");
    assert_true(ctl_authz_secret_use(&mem, &as_member, "training", "K", NULL, "f", &e) < 0);
    assert_true(ctl_authz_secret_use(&mem, &as_member, "training", "K", bob, "f", &e) < 0);
    assert_int_equal(ctl_authz_secret_use(&mem, &as_member, "interactive", "K", bob, "f", &e), 0);
    assert_int_equal(ctl_authz_secret_use(&mem, &as_member, "training", "K", mine, "f", &e), 0);
    assert_int_equal(ctl_authz_secret_use(&mem, &as_member, "training", "K", members, "f", &e), 0);
    assert_true(ctl_authz_secret_use(&mem, &as_member, "training", "K", odd, "f", &e) < 0);
    assert_int_equal(ctl_authz_secret_use(&mem, &as_lead, "training", "K", none, "f", &e), 0);
    assert_int_equal(ctl_authz_secret_use(&adm, &as_member, "training", "K", none, "f", &e), 0);
    assert_true(ctl_authz_secret_use(&op, &as_member, "training", "K", none, "f", &e) < 0);
    json_decref(none);
    json_decref(bob);
    json_decref(mine);
    json_decref(members);
    json_decref(odd);
}

/* Issue 33 item 8: a socket peer is its account by uid; root, docketd's own uid and the
 * configured ones are admins; a login named like the built-in admin account is not it. */
static void socket_peers_map_by_uid(void **state)
{
    (void)state;
    struct ctl_ident id;
    const unsigned admins[] = {4243};
    memset(&id, 0, sizeof(id));
    ctl_authz_socket_ident(4242, "admin", 999, admins, 1, &id); /* the attack */
    assert_string_equal(id.user, "uid4242");
    assert_int_equal(id.role, CTL_ROLE_NONE);
    ctl_authz_socket_ident(1000, "alice", 999, admins, 1, &id);
    assert_string_equal(id.user, "alice");
    assert_int_equal(id.role, CTL_ROLE_NONE);
    ctl_authz_socket_ident(0, "root", 999, admins, 1, &id);
    assert_string_equal(id.user, "root");
    assert_int_equal(id.role, CTL_ROLE_ADMIN);
    ctl_authz_socket_ident(999, "docket", 999, admins, 1, &id);
    assert_int_equal(id.role, CTL_ROLE_ADMIN);
    ctl_authz_socket_ident(4243, NULL, 999, admins, 1, &id); /* configured, no passwd entry */
    assert_string_equal(id.user, "uid4243");
    assert_int_equal(id.role, CTL_ROLE_ADMIN);
    ctl_authz_socket_ident(4243, "admin", 999, admins, 1, &id); /* configured: it is the admin */
    assert_string_equal(id.user, "admin");
    ctl_authz_socket_ident(4244, "", 999, NULL, 0, &id);
    assert_string_equal(id.user, "uid4244");
}

/* Issue 33 item 5: a lead acts only inside its project. It adds a user of no other
 * project, changes roles of its own members, never pulls in another project's member; a
 * default project is set by its user (to one of its projects) or an admin. */
static void member_add_and_default_rules(void **state)
{
    (void)state;
    struct proto_error e;
    struct ctl_ident lee = ident("lee", CTL_ROLE_NONE, false);
    struct ctl_ident bob = ident("bob", CTL_ROLE_NONE, false);
    struct ctl_ident adm = ident("root", CTL_ROLE_ADMIN, false);
    struct ctl_target pa_lead = target("pa", NULL, CTL_PROLE_LEAD);
    struct ctl_target pa_member = target("pa", NULL, CTL_PROLE_MEMBER);
    assert_int_equal(ctl_authz_member_add(&lee, &pa_lead, "new", false, NULL, &e), 0);
    assert_int_equal(ctl_authz_member_add(&lee, &pa_lead, "bob", true, "pb", &e), 0);
    assert_int_equal(ctl_authz_member_add(&lee, &pa_lead, "lee", false, "pb", &e), 0);
    assert_true(ctl_authz_member_add(&lee, &pa_lead, "bob", false, "pb", &e) < 0);
    assert_int_equal(e.status, 403);
    assert_string_equal(e.field, "user");
    assert_non_null(strstr(e.message, "'pb'"));
    assert_true(ctl_authz_member_add(&bob, &pa_member, "new", false, NULL, &e) < 0);
    assert_int_equal(ctl_authz_member_add(&adm, &pa_member, "bob", false, "pb", &e), 0);
    /* defaults: bob's own, to his project; nobody else's but an admin */
    struct ctl_target bob_pb = target("pb", "bob", CTL_PROLE_NONE);
    struct ctl_target bob_pa = target("pa", "bob", CTL_PROLE_LEAD);
    assert_int_equal(ctl_authz_default_project(&bob, &bob_pb, true, &e), 0);
    assert_true(ctl_authz_default_project(&bob, &bob_pa, false, &e) < 0);
    assert_string_equal(e.field, "project");
    assert_true(ctl_authz_default_project(&lee, &bob_pa, true, &e) < 0);
    assert_int_equal(e.status, 403);
    assert_int_equal(ctl_authz_default_project(&adm, &bob_pa, false, &e), 0);
}

static void role_names_round_trip(void **state)
{
    enum ctl_role r;
    struct proto_error e;
    enum ctl_prole pr;
    assert_int_equal(ctl_role_parse("operator", &r), 0);
    assert_int_equal(r, CTL_ROLE_OPERATOR);
    assert_int_equal(ctl_role_parse("member", &r), 0);
    assert_int_equal(r, CTL_ROLE_NONE);
    assert_int_not_equal(ctl_role_parse("lead", &r), 0); /* a project role, not a global one */
    assert_int_not_equal(ctl_role_parse("root", &r), 0);
    assert_int_equal(ctl_authz_member_role("lead", &pr, &e), 0);
    assert_int_equal(pr, CTL_PROLE_LEAD);
    assert_int_not_equal(ctl_authz_member_role("admin", &pr, &e), 0);
    assert_string_equal(e.field, "role");
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
    assert_int_equal(cfg.log_max_bytes, (int64_t)1 << 30);
    assert_int_equal(cfg.node_credential_ttl_ms, (int64_t)30 * 86400 * 1000);
    assert_int_equal(cfg.token_ttl_ms, (int64_t)90 * 24 * 3600 * 1000);
    char *p = write_tmp("listen: 0.0.0.0:9000\nsocket: /tmp/d.sock\nstate_dir: /tmp/st\n"
                        "log_file: /tmp/d.log\nlog_level: debug\nlog_format: json\n"
                        "policy: /etc/p.yaml\nnode_timeout: 90s\nheartbeat_wait: 10s\n"
                        "cycle_delay: 2ms\ncycle_interval: 1m\nmax_body_bytes: 4096\n"
                        "log_max_bytes: 5000\nnode_credential_ttl: 7d\ntoken_ttl: 30d\n"
                        "max_connections: 500\nexpected_nodes: 3000\nidle_timeout: 45s\n"
                        "request_timeout: 20s\n"
                        "submit_rate: 5\nsubmit_burst: 50\nmax_array_tasks: 2000\n"
                        "admin_uids: [1001, 2002]\n");
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
    assert_int_equal(cfg.log_max_bytes, 5000);
    assert_int_equal(cfg.node_credential_ttl_ms, (int64_t)7 * 86400 * 1000);
    assert_int_equal(cfg.token_ttl_ms, (int64_t)30 * 24 * 3600 * 1000);
    assert_int_equal(cfg.max_connections, 500);
    assert_int_equal(cfg.n_admin_uids, 2);
    assert_int_equal(cfg.admin_uids[1], 2002);
    assert_int_equal(cfg.expected_nodes, 3000);
    assert_int_equal(cfg.idle_timeout_ms, 45000);
    assert_int_equal(cfg.request_timeout_ms, 20000);
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
        {"log_max_bytes: 10\n", "log_max_bytes"},
        {"log_max_bytes: 1G\n", "log_max_bytes"},
        {"node_credential_ttl: 10ms\n", "node_credential_ttl"},
        {"token_ttl: 1s\n", "token_ttl"},
        {"max_connections: -1\n", "max_connections"},
        {"expected_nodes: 0\n", "expected_nodes"},
        {"idle_timeout: 10ms\n", "idle_timeout"},
        {"request_timeout: 10ms\n", "request_timeout"},
        {"request_timeout: soon\n", "request_timeout"},
        {"submit_rate: fast\n", "submit_rate"},
        {"submit_burst: 0\n", "submit_burst"},
        {"max_array_tasks: 100001\n", "max_array_tasks"},
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
        cmocka_unit_test(admin_may_do_everything_but_agent_calls),
        cmocka_unit_test(member_submits_only_into_its_projects),
        cmocka_unit_test(member_owns_only_its_jobs),
        cmocka_unit_test(lead_manages_its_project_only),
        cmocka_unit_test(operator_and_viewer),
        cmocka_unit_test(node_credential_only_for_agent_endpoints),
        cmocka_unit_test(a_hold_is_released_at_its_level),
        cmocka_unit_test(a_lead_changes_user_caps_and_the_limit_within_the_group),
        cmocka_unit_test(job_private_is_owner_lead_admin),
        cmocka_unit_test(member_add_and_default_rules),
        cmocka_unit_test(socket_peers_map_by_uid),
        cmocka_unit_test(secret_use_follows_its_allow_list),
        cmocka_unit_test(role_names_round_trip),
        cmocka_unit_test(config_every_key),
        cmocka_unit_test(config_refusals_name_the_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
