/* test_store.c - unit tests of store/store.h: migrations from an empty file, a round
 * trip through every table, savepoints and the group-commit transaction shape, and the
 * append-only audit trail. Each test works on a fresh database in a temporary dir. */
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
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sched.h"
#include "store/store.h"
#include "util/str.h"

#include "fixture.h"

static void raw_sql(const struct fx *f, const char *sql, char *out, size_t len);

/* Write schema version v where the engine keeps it. */
static void set_schema_version(const struct fx *f, int v)
{
    char sql[64];
    if (fx_pg(f))
        snprintf(sql, sizeof(sql), "UPDATE schema_version SET version = %d", v);
    else
        snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v);
    raw_sql(f, sql, NULL, 0);
}

static void reopen(struct fx *f)
{
    char err[256];
    store_close(f->st);
    f->st = store_open(f->path, err, sizeof(err));
    assert_non_null(f->st);
}

/* ------------------------------------------------------------------------------------ */

/* The schema version schema.c migrates to (one place to change when a migration is added). */
#define SCHEMA_LATEST                                                                              \
    22 /* 9: usage samples (h-usage), 10: alerts and run ends (h-alerts), 11: arrays being         \
          written (h-slice), 12: each run's lease (issue 32), 13: services (issue 36), 14: token   \
          parents and secrets' allow lists (issue 33), 15: a job's template (issue 35),            \
          16: storage areas, 17: lifecycle runs, 18: storage usage (issue 37), 19: services'       \
          endpoint ports (issue 36), 20: a job's image (issue 35), 21: submissions'                \
          idempotency keys (issue 32), 22: archived logs (issue 37) */

static void migrates_from_empty(void **state)
{
    struct fx *f = *state;
    assert_int_equal(store_schema_version(f->st), SCHEMA_LATEST);
    reopen(f);
    assert_int_equal(store_schema_version(f->st), SCHEMA_LATEST);
    assert_int_equal(store_job_count(f->st), 0);
}

static void refuses_newer_schema(void **state)
{
    struct fx *f = *state;
    char err[256];
    /* put back the version it has (the latest), whatever the number of migrations */
    int back = store_schema_version(f->st);
    store_close(f->st);
    f->st = NULL;
    set_schema_version(f, 99);
    assert_null(store_open(f->path, err, sizeof(err)));
    assert_non_null(strstr(err, "newer"));
    if (fx_pg(f)) { /* the message names the database, never with its password */
        char with_pw[600];
        snprintf(with_pw, sizeof(with_pw), "%s&password=pa55word", f->path);
        assert_null(store_open(with_pw, err, sizeof(err)));
        assert_non_null(strstr(err, "newer"));
        assert_null(strstr(err, "pa55word"));
        assert_non_null(strstr(err, "password=***"));
    }
    set_schema_version(f, back);
    f->st = store_open(f->path, err, sizeof(err));
    assert_non_null(f->st);
}

/* Schema 4: a user's default project, set, replaced, cleared; kept across a reopen */
static void default_projects(void **state)
{
    struct fx *f = *state;
    char p[64] = "";
    assert_int_equal(store_default_project_get(f->st, "alice", p, sizeof(p)), -ENOENT);
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_default_project_set(f->st, "alice", "nlp"), 0);
    assert_int_equal(store_default_project_set(f->st, "alice", "vision"), 0);
    assert_int_equal(store_default_project_set(f->st, "bob", "nlp"), 0);
    assert_int_equal(store_commit(f->st), 0);
    reopen(f);
    assert_int_equal(store_default_project_get(f->st, "alice", p, sizeof(p)), 0);
    assert_string_equal(p, "vision");
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_default_project_set(f->st, "alice", NULL), 0);
    assert_int_equal(store_commit(f->st), 0);
    assert_int_equal(store_default_project_get(f->st, "alice", p, sizeof(p)), -ENOENT);
    assert_int_equal(store_default_project_get(f->st, "bob", p, sizeof(p)), 0);
    assert_string_equal(p, "nlp");
}

static void counters(void **state)
{
    struct fx *f = *state;
    int64_t v = 0;
    assert_int_equal(store_counter_get(f->st, "next_job_id", &v), -ENOENT);
    assert_int_equal(store_counter_set(f->st, "next_job_id", 42), 0);
    assert_int_equal(store_counter_get(f->st, "next_job_id", &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(store_counter_set(f->st, "next_job_id", 43), 0);
    reopen(f);
    assert_int_equal(store_counter_get(f->st, "next_job_id", &v), 0);
    assert_int_equal(v, 43);
}

static struct store_job make_job(uint64_t id, const char *project, int state)
{
    struct store_job j;
    memset(&j, 0, sizeof(j));
    j.id = id;
    j.array_id = id > 10 ? 10 : 0;
    j.array_index = (int)id;
    snprintf(j.name, sizeof(j.name), "job%llu", (unsigned long long)id);
    snprintf(j.project, sizeof(j.project), "%s", project);
    snprintf(j.user, sizeof(j.user), "alice");
    snprintf(j.tier, sizeof(j.tier), "high");
    snprintf(j.class_name, sizeof(j.class_name), "training");
    j.state = state;
    j.submit_ms = 1000 + (int64_t)id;
    j.spec = "{\"command\":[\"true\"]}";
    return j;
}

static void job_round_trip(void **state)
{
    struct fx *f = *state;
    struct store_job in = make_job(7, "vision", 0), out;
    in.start_ms = 5;
    in.end_ms = 6;
    in.preempt_count = 2;
    in.preemptor = 99;
    snprintf(in.nodes, sizeof(in.nodes), ",gpu01,");
    snprintf(in.stop_cause, sizeof(in.stop_cause), "preempt");
    in.alloc = "[{\"node\":\"gpu01\"}]";
    in.exit = "{\"kind\":\"code\",\"code\":0}";
    in.usage = "{\"cpu_ms\":3}";
    in.has_core = true;
    in.gpus = 8;
    in.cpus = 16;
    in.nnodes = 2;
    in.signal = 10;
    in.retries = 1;
    in.array_limit = 4;
    in.flags = STORE_JF_CHECKPOINT | STORE_JF_REQUEUE;
    in.mem_mb = 65536;
    in.time_limit_ms = 3600000;
    in.begin_ms = 9;
    in.grace_ms = -1;
    snprintf(in.gpu_type, sizeof(in.gpu_type), "H100");
    snprintf(in.deps, sizeof(in.deps), "afterok:3");
    snprintf(in.selectors, sizeof(in.selectors), "zone=a,pool!=r");
    snprintf(in.template_ref, sizeof(in.template_ref), "torch@3");
    snprintf(in.image, sizeof(in.image), "oci-layout:/shared/images:torch-2.3");
    assert_int_equal(store_job_insert(f->st, &in), 0);
    assert_int_equal(store_job_insert(f->st, &in), -EIO); /* same id */
    assert_int_equal(store_job_get(f->st, 7, &out), 0);
    assert_int_equal(out.id, 7);
    assert_int_equal(out.array_index, 7);
    assert_string_equal(out.name, "job7");
    assert_string_equal(out.project, "vision");
    assert_string_equal(out.user, "alice");
    assert_string_equal(out.tier, "high");
    assert_string_equal(out.class_name, "training");
    assert_string_equal(out.stop_cause, "preempt");
    assert_string_equal(out.nodes, ",gpu01,");
    assert_int_equal(out.submit_ms, 1007);
    assert_int_equal(out.start_ms, 5);
    assert_int_equal(out.end_ms, 6);
    assert_int_equal(out.preempt_count, 2);
    assert_int_equal(out.preemptor, 99);
    assert_string_equal(out.spec, in.spec);
    assert_string_equal(out.alloc, in.alloc);
    assert_string_equal(out.exit, in.exit);
    assert_string_equal(out.usage, in.usage);
    assert_true(out.has_core);
    assert_int_equal(out.gpus, 8);
    assert_int_equal(out.cpus, 16);
    assert_int_equal(out.nnodes, 2);
    assert_int_equal(out.signal, 10);
    assert_int_equal(out.retries, 1);
    assert_int_equal(out.array_limit, 4);
    assert_int_equal(out.flags, STORE_JF_CHECKPOINT | STORE_JF_REQUEUE);
    assert_int_equal(out.mem_mb, 65536);
    assert_int_equal(out.time_limit_ms, 3600000);
    assert_int_equal(out.begin_ms, 9);
    assert_int_equal(out.grace_ms, -1);
    assert_string_equal(out.gpu_type, "H100");
    assert_string_equal(out.deps, "afterok:3");
    assert_string_equal(out.template_ref, "torch@3");
    assert_string_equal(out.image, "oci-layout:/shared/images:torch-2.3");
    assert_string_equal(out.selectors, "zone=a,pool!=r");
    store_job_release(&out);
    assert_int_equal(store_job_get(f->st, 8, &out), -ENOENT);
}

static int lean_cb(void *arg, const struct store_job *j)
{
    char *got = arg;
    strncat(got, j->spec ? j->spec : "(null)", 400 - strlen(got) - 1);
    strncat(got, ";", 400 - strlen(got) - 1);
    return 0;
}

/* An array's tasks share one stored spec (schema 7): each reads it back whole, lists read
 * it lean, and the spec text is in the database once. */
static void array_spec_stored_once(void **state)
{
    struct fx *f = *state;
    static const char spec[] = "{\"script\":\"#!/bin/sh\\necho hi\",\"env\":{\"K\":\"v\"},"
                               "\"gpus\":1}";
    char got[400] = "";
    assert_int_equal(store_spec_put(f->st, 11, spec, "{\"gpus\":1}"), 0);
    for (uint64_t id = 11; id <= 13; id++) {
        struct store_job j = make_job(id, "vision", 0);
        j.spec = (char *)spec;
        j.spec_id = 11;
        assert_int_equal(store_job_insert(f->st, &j), 0);
    }
    struct store_job out;
    assert_int_equal(store_job_get(f->st, 12, &out), 0);
    assert_string_equal(out.spec, spec);
    assert_int_equal(out.spec_id, 11);
    store_job_release(&out);
    struct store_job_filter flt = {.lean = true, .limit = 10};
    assert_int_equal(store_job_list(f->st, &flt, lean_cb, got), 0);
    assert_string_equal(got, "{\"gpus\":1};{\"gpus\":1};{\"gpus\":1};");
    /* a row with its own spec is cut by SQLite for lists */
    struct store_job own = make_job(5, "vision", 0);
    own.spec = (char *)spec;
    assert_int_equal(store_job_insert(f->st, &own), 0);
    got[0] = '\0';
    flt.limit = 1;
    assert_int_equal(store_job_list(f->st, &flt, lean_cb, got), 0);
    /* each engine writes the JSON it cut its own way (PostgreSQL's jsonb: a space) */
    assert_string_equal(got, fx_pg(f) ? "{\"gpus\": 1};" : "{\"gpus\":1};");
    reopen(f);
    char n[64];
    raw_sql(f, "SELECT count(*) FROM jobs WHERE spec LIKE '%echo hi%'", n, sizeof(n));
    assert_string_equal(n, "1"); /* job 5's own; the array's is in job_specs once */
}

static void job_update(void **state)
{
    struct fx *f = *state;
    struct store_job j = make_job(1, "p", 0), out;
    assert_int_equal(store_job_insert(f->st, &j), 0);
    j.state = 5;
    j.end_ms = 77;
    j.alloc = NULL;
    j.exit = "{\"kind\":\"lost\"}";
    assert_int_equal(store_job_update(f->st, &j), 0);
    assert_int_equal(store_job_get(f->st, 1, &out), 0);
    assert_int_equal(out.state, 5);
    assert_int_equal(out.end_ms, 77);
    assert_null(out.alloc);
    assert_string_equal(out.exit, "{\"kind\":\"lost\"}");
    store_job_release(&out);
    j.id = 2;
    assert_int_equal(store_job_update(f->st, &j), -ENOENT);
}

/* scontrol update: the request columns and the spec change, the rest stays; an array's
 * task takes a spec of its own and its siblings keep the shared one. */
static void job_respec(void **state)
{
    struct fx *f = *state;
    assert_int_equal(store_spec_put(f->st, 10, "{\"command\":[\"shared\"]}", "{}"), 0);
    struct store_job a = make_job(11, "p", 0), b = make_job(12, "p", 0), out;
    a.spec_id = b.spec_id = 10;
    assert_int_equal(store_job_insert(f->st, &a), 0);
    assert_int_equal(store_job_insert(f->st, &b), 0);
    a.spec_id = 0;
    a.spec = "{\"command\":[\"own\"]}";
    snprintf(a.name, sizeof(a.name), "renamed");
    a.time_limit_ms = 600000;
    a.nnodes = 2;
    snprintf(a.deps, sizeof(a.deps), "afterok:3");
    snprintf(a.selectors, sizeof(a.selectors), "@constraint=a100,zone=b");
    a.end_ms = 99; /* not a request column: left as stored */
    assert_int_equal(store_job_respec(f->st, &a), 0);
    assert_int_equal(store_job_get(f->st, 11, &out), 0);
    assert_string_equal(out.name, "renamed");
    assert_string_equal(out.spec, "{\"command\":[\"own\"]}");
    assert_int_equal(out.spec_id, 0);
    assert_int_equal(out.time_limit_ms, 600000);
    assert_int_equal(out.nnodes, 2);
    assert_string_equal(out.deps, "afterok:3");
    assert_string_equal(out.selectors, "@constraint=a100,zone=b");
    assert_int_equal(out.end_ms, 0);
    store_job_release(&out);
    assert_int_equal(store_job_get(f->st, 12, &out), 0);
    assert_string_equal(out.spec, "{\"command\":[\"shared\"]}");
    store_job_release(&out);
    a.id = 99;
    assert_int_equal(store_job_respec(f->st, &a), -ENOENT);
}

static int collect(void *arg, const struct store_job *j)
{
    char *buf = arg;
    char one[16];
    snprintf(one, sizeof(one), "%llu,", (unsigned long long)j->id);
    strncat(buf, one, 255 - strlen(buf));
    return 0;
}

static void list(struct fx *f, struct store_job_filter *flt, const char *want)
{
    char got[256] = "";
    assert_int_equal(store_job_list(f->st, flt, collect, got), 0);
    assert_string_equal(got, want);
}

static void job_list_filters(void **state)
{
    struct fx *f = *state;
    for (uint64_t i = 1; i <= 12; i++) {
        struct store_job j = make_job(i, i % 2 ? "odd" : "even", (int)(i % 3));
        if (i == 4)
            snprintf(j.nodes, sizeof(j.nodes), ",gpu01,gpu02,");
        if (i == 5)
            snprintf(j.nodes, sizeof(j.nodes), ",gpu011,");
        /* templates: 6 torch@1, 7 torch@12, 8 torch_x@1 ('_' is no wildcard), 9 torchy@1 */
        static const char *const refs[13] = {
            [6] = "torch@1", [7] = "torch@12", [8] = "torch_x@1", [9] = "torchy@1"};
        if (refs[i])
            snprintf(j.template_ref, sizeof(j.template_ref), "%s", refs[i]);
        assert_int_equal(store_job_insert(f->st, &j), 0);
    }
    struct store_job_filter flt;
    memset(&flt, 0, sizeof(flt));
    flt.limit = 100;
    list(f, &flt, "1,2,3,4,5,6,7,8,9,10,11,12,");
    flt.project = "odd";
    list(f, &flt, "1,3,5,7,9,11,");
    flt.state_mask = 1u << 0;
    list(f, &flt, "3,9,");
    flt.project = NULL;
    flt.state_mask = 0;
    flt.node = "gpu01";
    list(f, &flt, "4,");
    flt.node = NULL;
    flt.array_id = 10;
    list(f, &flt, "11,12,");
    flt.array_id = 0;
    flt.limit = 3;
    flt.after = 4;
    list(f, &flt, "5,6,7,");
    flt.desc = true;
    list(f, &flt, "3,2,1,");
    flt.desc = false;
    flt.after = 0;
    flt.limit = 100;
    flt.since_ms = 1010;
    list(f, &flt, "10,11,12,");
    flt.since_ms = 0;
    flt.template_ref = "torch";
    list(f, &flt, "6,7,");
    flt.template_ref = "torch@1";
    list(f, &flt, "6,");
    flt.template_ref = "torch@";
    list(f, &flt, "");
    flt.template_ref = NULL;
    flt.user = "bob";
    list(f, &flt, "");
    assert_int_equal(store_job_count(f->st), 12);
}

/* A callback that stops after the first row */
static int first_only(void *arg, const struct store_job *j)
{
    collect(arg, j);
    return 1;
}

struct nested {
    struct fx *f;
    struct store_job_filter *flt;
    char outer[256], inner[256];
    int rows;
};

/* Each row of a list lists the same again, inside it (an outer list that starts over
 * would not end: it stops at 3 rows) */
static int list_inside(void *arg, const struct store_job *j)
{
    struct nested *n = arg;
    if (++n->rows > 3)
        return -E2BIG;
    collect(n->outer, j);
    n->inner[0] = '\0';
    return store_job_list(n->f->st, n->flt, collect, n->inner);
}

/* The list statements kept by their SQL (issue 40): the same SQL with other values bound,
 * a list stopped early, a list inside a list's callback and more shapes than are kept
 * each read what a fresh statement reads. */
static void job_list_kept_statements(void **state)
{
    struct fx *f = *state;
    for (uint64_t i = 1; i <= 12; i++) {
        struct store_job j = make_job(i, i % 2 ? "odd" : "even", 0);
        assert_int_equal(store_job_insert(f->st, &j), 0);
    }
    struct store_job_filter flt;
    memset(&flt, 0, sizeof(flt));
    flt.limit = 3;
    for (int round = 0; round < 2; round++) {
        flt.after = 0;
        list(f, &flt, "1,2,3,");
        flt.after = 3;
        list(f, &flt, "4,5,6,");
        flt.after = 9;
        list(f, &flt, "10,11,12,");
        flt.after = 0;
        flt.project = "odd";
        list(f, &flt, "1,3,5,");
        flt.project = "even"; /* the same SQL, another value bound */
        list(f, &flt, "2,4,6,");
        flt.after = 4;
        list(f, &flt, "6,8,10,");
        flt.project = NULL;
        flt.after = 0;
    }
    char got[256] = "";
    assert_int_equal(store_job_list(f->st, &flt, first_only, got), 1);
    assert_string_equal(got, "1,");
    list(f, &flt, "1,2,3,"); /* from the start again, not where the last one stopped */
    struct nested n = {f, &flt, "", "", 0};
    assert_int_equal(store_job_list(f->st, &flt, list_inside, &n), 0);
    assert_string_equal(n.outer, "1,2,3,");
    assert_string_equal(n.inner, "1,2,3,");
    /* more shapes than are kept, in turn, twice */
    static const char *const want[6] = {"1,2,3,", "2,3,4,", "3,4,5,", "4,5,6,", "5,6,7,", "6,7,8,"};
    for (int round = 0; round < 2; round++)
        for (int k = 0; k < 6; k++) {
            flt.limit = 3 + k; /* (a shape of its own each: LIMIT is in the SQL) */
            flt.after = (uint64_t)k;
            char buf[256] = "";
            assert_int_equal(store_job_list(f->st, &flt, collect, buf), 0);
            assert_int_equal(strncmp(buf, want[k], strlen(want[k])), 0);
        }
}

static int collect_ev(void *arg, const struct store_event *e)
{
    char *buf = arg;
    char one[64];
    snprintf(one, sizeof(one), "%s:%s>%s@%s;", e->type, e->from, e->to, e->node);
    strncat(buf, one, 255 - strlen(buf));
    return 0;
}

static void events_round_trip(void **state)
{
    struct fx *f = *state;
    struct store_event a = {3, 10, "submit", "", "PENDING", "", "", "", 0};
    struct store_event b = {3, 11, "start", "PENDING", "STARTING", "gpu01", "", "x", 0};
    struct store_event c = {4, 12, "submit", NULL, "HELD", NULL, NULL, NULL, 0};
    assert_int_equal(store_event_add(f->st, &a), 0);
    assert_int_equal(store_event_add(f->st, &b), 0);
    assert_int_equal(store_event_add(f->st, &c), 0);
    char got[256] = "";
    assert_int_equal(store_event_list(f->st, 3, 0, 0, collect_ev, got), 0);
    assert_string_equal(got, "submit:>PENDING@;start:PENDING>STARTING@gpu01;");
    got[0] = '\0';
    assert_int_equal(store_event_list(f->st, 4, 0, 0, collect_ev, got), 0);
    assert_string_equal(got, "submit:>HELD@;");
}

static int collect_node(void *arg, const struct store_node *n)
{
    char *buf = arg;
    char one[128];
    snprintf(one, sizeof(one), "%s/%s/%d/%s/%lld;", n->name, n->state, n->gpus, n->labels,
             (long long)n->cmd_seq);
    strncat(buf, one, 255 - strlen(buf));
    return 0;
}

static void nodes_round_trip(void **state)
{
    struct fx *f = *state;
    struct store_node n, out;
    memset(&n, 0, sizeof(n));
    snprintf(n.name, sizeof(n.name), "gpu02");
    snprintf(n.state, sizeof(n.state), "UP");
    snprintf(n.gpu_type, sizeof(n.gpu_type), "H100");
    n.gpus = 8;
    n.cpus = 64;
    n.mem_mb = 1000;
    n.gpu_mem_mb = 80000;
    n.labels = "{\"zone\":\"a\"}";
    n.info = "{\"addr\":\"10.0.0.2\"}";
    n.last_heartbeat_ms = 5;
    n.cmd_seq = 17;
    assert_int_equal(store_node_put(f->st, &n), 0);
    snprintf(n.name, sizeof(n.name), "gpu01");
    n.labels = NULL;
    assert_int_equal(store_node_put(f->st, &n), 0);
    snprintf(n.state, sizeof(n.state), "DRAINED");
    n.cmd_seq = 18;
    assert_int_equal(store_node_put(f->st, &n), 0); /* update in place */
    char got[256] = "";
    assert_int_equal(store_node_list(f->st, collect_node, got), 0);
    assert_string_equal(got, "gpu01/DRAINED/8/{}/18;gpu02/UP/8/{\"zone\":\"a\"}/17;");
    assert_int_equal(store_node_get(f->st, "gpu02", &out), 0);
    assert_string_equal(out.gpu_type, "H100");
    assert_int_equal(out.gpu_mem_mb, 80000);
    assert_int_equal(out.mem_mb, 1000);
    assert_string_equal(out.info, "{\"addr\":\"10.0.0.2\"}");
    store_node_release(&out);
    assert_int_equal(store_node_get(f->st, "gpu09", &out), -ENOENT);
}

static int collect_doc(void *arg, const char *name, const char *json)
{
    char *buf = arg;
    char one[128];
    snprintf(one, sizeof(one), "%s=%s;", name, json);
    strncat(buf, one, 255 - strlen(buf));
    return 0;
}

static void projects_and_policy(void **state)
{
    struct fx *f = *state;
    char *doc = NULL;
    assert_int_equal(store_policy_get(f->st, &doc), -ENOENT);
    assert_int_equal(store_policy_put(f->st, "{\"a\":1}"), 0);
    assert_int_equal(store_policy_put(f->st, "{\"a\":2}"), 0);
    assert_int_equal(store_policy_get(f->st, &doc), 0);
    assert_string_equal(doc, "{\"a\":2}");
    free(doc);
    assert_int_equal(store_project_put(f->st, "b", "{}"), 0);
    assert_int_equal(store_project_put(f->st, "a", "{\"x\":1}"), 0);
    assert_int_equal(store_project_put(f->st, "b", "{\"y\":2}"), 0);
    char got[256] = "";
    assert_int_equal(store_project_list(f->st, collect_doc, got), 0);
    assert_string_equal(got, "a={\"x\":1};b={\"y\":2};");
}

static void tokens(void **state)
{
    struct fx *f = *state;
    char h[65];
    store_token_hash("abc", h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    struct store_token t, out;
    memset(&t, 0, sizeof(t));
    store_token_hash("dkn_secret", t.hash);
    t.kind = STORE_TOKEN_NODE;
    snprintf(t.user, sizeof(t.user), "gpu01");
    snprintf(t.role, sizeof(t.role), "node");
    t.created_ms = 1;
    t.expires_ms = 2;
    assert_int_equal(store_token_put(f->st, &t), 0);
    assert_int_equal(store_token_get(f->st, t.hash, &out), 0);
    assert_int_equal(out.kind, STORE_TOKEN_NODE);
    assert_string_equal(out.user, "gpu01");
    assert_string_equal(out.role, "node");
    assert_int_equal(out.expires_ms, 2);
    assert_int_equal(store_token_get(f->st, h, &out), -ENOENT);
    assert_int_equal(store_token_delete_user(f->st, STORE_TOKEN_USER, "gpu01"), 0);
    assert_int_equal(store_token_get(f->st, t.hash, &out), 0);
    assert_int_equal(store_token_delete_user(f->st, STORE_TOKEN_NODE, "gpu01"), 0);
    assert_int_equal(store_token_get(f->st, t.hash, &out), -ENOENT);
}

static int collect_audit(void *arg, const struct store_audit *a)
{
    char *buf = arg;
    char one[128];
    snprintf(one, sizeof(one), "%lld:%s:%s:%s:%s:%s;", (long long)a->id, a->actor, a->action,
             a->target, a->before ? a->before : "null", a->after ? a->after : "null");
    strncat(buf, one, 511 - strlen(buf));
    return 0;
}

static void audit_append_only(void **state)
{
    struct fx *f = *state;
    struct store_audit a = {0, 10, "alice", "job.submit", "job:1", NULL, "{\"s\":1}", ""};
    struct store_audit b = {
        0, 20, "root", "node.drain", "gpu01", "{\"st\":\"UP\"}", "{\"st\":\"DRAINING\"}", "maint"};
    assert_int_equal(store_audit_add(f->st, &a), 0);
    assert_int_equal(store_audit_add(f->st, &b), 0);
    struct store_audit_filter flt;
    memset(&flt, 0, sizeof(flt));
    char got[512] = "";
    assert_int_equal(store_audit_list(f->st, &flt, collect_audit, got), 0);
    assert_string_equal(got, "1:alice:job.submit:job:1:null:{\"s\":1};"
                             "2:root:node.drain:gpu01:{\"st\":\"UP\"}:{\"st\":\"DRAINING\"};");
    flt.actor = "root";
    got[0] = '\0';
    assert_int_equal(store_audit_list(f->st, &flt, collect_audit, got), 0);
    assert_string_equal(got, "2:root:node.drain:gpu01:{\"st\":\"UP\"}:{\"st\":\"DRAINING\"};");
    flt.actor = NULL;
    flt.since_ms = 15;
    flt.after = 1;
    got[0] = '\0';
    assert_int_equal(store_audit_list(f->st, &flt, collect_audit, got), 0);
    assert_string_equal(got, "2:root:node.drain:gpu01:{\"st\":\"UP\"}:{\"st\":\"DRAINING\"};");
    /* the database itself refuses to rewrite history */
    char err[512];
    assert_int_equal(fx_sql(f, "UPDATE audit SET actor = 'x'", NULL, 0, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "append-only"));
    assert_int_equal(fx_sql(f, "DELETE FROM audit", NULL, 0, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "append-only"));
}

/* What someone with the database's owner rights does first to edit the audit trail. */
static const char *drop_audit_triggers(const struct fx *f)
{
    return fx_pg(f) ? "DROP TRIGGER audit_no_edit ON audit"
                    : "DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete";
}

/* The audit trail is a hash chain: a row changed, removed or inserted by hand (the
 * triggers dropped first, as someone with the file could) is found by store_audit_verify,
 * which names the first broken row. */
static void audit_hash_chain(void **state)
{
    struct fx *f = *state;
    struct store_audit_check v;
    for (int i = 0; i < 5; i++) {
        struct store_audit a = {0, 10 + i, "alice", "job.submit", "job:1", NULL, "{\"s\":1}", ""};
        assert_int_equal(store_audit_add(f->st, &a), 0);
    }
    assert_int_equal(store_audit_verify(f->st, NULL, &v), 0);
    assert_int_equal(v.first_bad, 0);
    assert_int_equal(v.checked, 5);
    assert_int_equal(v.unchained, 0);
    assert_int_equal(strlen(v.head), 64);
    char head[65];
    memcpy(head, v.head, sizeof(head));
    raw_sql(f, drop_audit_triggers(f), NULL, 0);
    raw_sql(f, "UPDATE audit SET reason = 'nothing to see' WHERE id = 3", NULL, 0);
    assert_int_equal(store_audit_verify(f->st, NULL, &v), 0);
    assert_int_equal(v.first_bad, 3);
    assert_non_null(strstr(v.why, "changed"));
    assert_int_equal(v.checked, 2);
    /* put it back: whole again, same head */
    raw_sql(f, "UPDATE audit SET reason = '' WHERE id = 3", NULL, 0);
    assert_int_equal(store_audit_verify(f->st, NULL, &v), 0);
    assert_int_equal(v.first_bad, 0);
    assert_string_equal(v.head, head);
    /* the recorded head is found; cut the last row off and it is not */
    assert_int_equal(store_audit_verify(f->st, head, &v), 0);
    assert_true(v.head_found);
    raw_sql(f, "DELETE FROM audit WHERE id = 5", NULL, 0);
    assert_int_equal(store_audit_verify(f->st, head, &v), 0);
    assert_int_equal(v.first_bad, 0); /* a valid, shorter chain */
    assert_false(v.head_found);
    /* a row removed: the next one no longer follows */
    raw_sql(f, "DELETE FROM audit WHERE id = 2", NULL, 0);
    assert_int_equal(store_audit_verify(f->st, NULL, &v), 0);
    assert_int_equal(v.first_bad, 3);
    assert_non_null(strstr(v.why, "follow"));
}

/* store_audit_verify with an anchor taken from store_audit_head. */
static void verify_anchored(struct fx *f, int64_t id, const char *hash, int64_t from,
                            struct store_audit_check *v)
{
    store_audit_verify_begin(v);
    v->anchor_id = id;
    v->anchor_from = from;
    snprintf(v->anchor_hash, sizeof(v->anchor_hash), "%s", hash);
    int rc;
    while ((rc = store_audit_verify_step(f->st, NULL, v, 2)) == 1)
        ;
    assert_int_equal(rc, 0);
}

/* An anchor (issue 33, item 10): the trail cut short, every hash blanked (which without an
 * anchor reads as rows from before the chain), or the chain rebuilt from an earlier row
 * after a change all fail against it; the intact trail and rows added after it pass. */
static void audit_anchor(void **state)
{
    struct fx *f = *state;
    struct store_audit_check v;
    int64_t id, from = 0; /* 0: look the chain's start up */
    char hash[65];
    for (int i = 0; i < 6; i++) {
        struct store_audit a = {0, 10 + i, "alice", "job.submit", "job:1", NULL, "{}", ""};
        assert_int_equal(store_audit_add(f->st, &a), 0);
    }
    assert_int_equal(store_audit_head(f->st, &id, hash, &from), 0);
    assert_int_equal(id, 6);
    assert_int_equal(from, 1);
    assert_int_equal(strlen(hash), 64);
    verify_anchored(f, id, hash, from, &v);
    assert_int_equal(v.first_bad, 0);
    assert_true(v.anchor_seen);
    /* rows after the anchor are fine */
    struct store_audit later = {0, 99, "bob", "job.cancel", "job:1", NULL, NULL, ""};
    assert_int_equal(store_audit_add(f->st, &later), 0);
    verify_anchored(f, id, hash, from, &v);
    assert_int_equal(v.first_bad, 0);
    assert_int_equal(v.checked, 7);
    raw_sql(f, drop_audit_triggers(f), NULL, 0);
    /* cut short: a valid shorter chain, but the anchored row is gone */
    raw_sql(f, "DELETE FROM audit WHERE id >= 5", NULL, 0);
    verify_anchored(f, id, hash, from, &v);
    assert_int_equal(v.first_bad, 6);
    assert_non_null(strstr(v.why, "cut off"));
    /* every hash blanked: without an anchor "older entries predate the chain" ... */
    raw_sql(f, "UPDATE audit SET hash = '', prev_hash = ''", NULL, 0);
    assert_int_equal(store_audit_verify(f->st, NULL, &v), 0);
    assert_int_equal(v.first_bad, 0);
    assert_int_equal(v.unchained, 4);
    /* ... but the anchor says the chain began at row 1 */
    verify_anchored(f, id, hash, from, &v);
    assert_int_equal(v.first_bad, 1);
    assert_non_null(strstr(v.why, "blanked"));
    /* re-rooted: rows 1-4 rewritten through the store's own writer (a whole new, valid
     * chain with row 2 changed) and rows 5-6 appended: row 6 is not the anchored one */
    raw_sql(f, "DELETE FROM audit", NULL, 0);
    reopen(f); /* as docketd would, started again on the changed file */
    for (int i = 0; i < 6; i++) {
        struct store_audit a = {
            0, 10 + i, i == 1 ? "mallory" : "alice", "job.submit", "job:1", NULL, "{}", ""};
        assert_int_equal(store_audit_add(f->st, &a), 0);
    }
    assert_int_equal(store_audit_verify(f->st, NULL, &v), 0);
    assert_int_equal(v.first_bad, 0); /* valid on its own */
    verify_anchored(f, id, hash, from, &v);
    assert_int_equal(v.first_bad, 6);
    assert_non_null(strstr(v.why, "rebuilt"));
    /* and a chain re-rooted after its first rows were blanked: blanked rows inside it */
    raw_sql(f, "UPDATE audit SET hash = '', prev_hash = '' WHERE id <= 2", NULL, 0);
    verify_anchored(f, id, hash, from, &v);
    assert_int_equal(v.first_bad, 1);
}

/* A long trail (100,000 rows) walked in steps (docketd walks one step a loop turn): the
 * steps resume where the last stopped, agree with the walk in one go, and find a row
 * changed by hand deep in the chain. */
static void audit_verify_in_steps(void **state)
{
    struct fx *f = *state;
    enum { ROWS = 100000, STEP = 2048, BAD = 77777 };
    struct store_audit_check whole, v;
    assert_int_equal(store_begin(f->st), 0);
    for (int i = 0; i < ROWS; i++) {
        struct store_audit a = {0, i, "alice", "job.submit", "job:1", NULL, "{\"s\":1}", ""};
        assert_int_equal(store_audit_add(f->st, &a), 0);
    }
    assert_int_equal(store_commit(f->st), 0);
    assert_int_equal(store_audit_verify(f->st, NULL, &whole), 0);
    assert_int_equal(whole.checked, ROWS);
    int steps = 0, rc;
    store_audit_verify_begin(&v);
    while ((rc = store_audit_verify_step(f->st, whole.head, &v, STEP)) == 1)
        steps++;
    assert_int_equal(rc, 0);
    assert_int_equal(steps, ROWS / STEP); /* resumed, never restarted */
    assert_int_equal(v.checked, ROWS);
    assert_int_equal(v.first_bad, 0);
    assert_true(v.head_found);
    assert_string_equal(v.head, whole.head);
    raw_sql(f, drop_audit_triggers(f), NULL, 0);
    raw_sql(f, "UPDATE audit SET actor = 'mallory' WHERE id = 77777", NULL, 0);
    store_audit_verify_begin(&v);
    while ((rc = store_audit_verify_step(f->st, NULL, &v, STEP)) == 1)
        ;
    assert_int_equal(rc, 0);
    assert_int_equal(v.first_bad, BAD);
    assert_int_equal(v.checked, BAD - 1);
    assert_non_null(strstr(v.why, "changed"));
}

static int count_members(void *arg, const char *project, const char *user, const char *role)
{
    char *out = arg;
    size_t k = strlen(out);
    snprintf(out + k, 256 - k, "%s%s/%s/%s", k ? "," : "", project, user, role);
    return 0;
}

/* The read cache (src/store/rcache.c) never answers from before a write of what it read:
 * a token revoked, a membership added or removed, a default project set or cleared, and an
 * audit entry rolled back with its savepoint (the next one links to the row before it). */
static void read_cache_follows_writes(void **state)
{
    struct fx *f = *state;
    struct store_token t, out;
    memset(&t, 0, sizeof(t));
    store_token_hash("dkt_cached", t.hash);
    t.kind = STORE_TOKEN_USER;
    snprintf(t.user, sizeof(t.user), "alice");
    snprintf(t.role, sizeof(t.role), "member");
    t.created_ms = 1;
    t.expires_ms = 1000;
    assert_int_equal(store_token_put(f->st, &t), 0);
    assert_int_equal(store_token_get(f->st, t.hash, &out), 0);
    assert_int_equal(out.revoked_ms, 0);
    assert_int_equal(store_token_revoke(f->st, t.hash, 500), 0);
    assert_int_equal(store_token_get(f->st, t.hash, &out), 0);
    assert_int_equal(out.revoked_ms, 500);

    char list[256] = "", proj[64];
    assert_int_equal(store_member_put(f->st, "a", "alice", "member"), 0);
    assert_int_equal(store_member_list(f->st, NULL, "alice", count_members, list), 0);
    assert_string_equal(list, "a/alice/member");
    assert_int_equal(store_member_put(f->st, "b", "alice", "lead"), 0);
    list[0] = '\0';
    assert_int_equal(store_member_list(f->st, NULL, "alice", count_members, list), 0);
    assert_string_equal(list, "a/alice/member,b/alice/lead");
    assert_int_equal(store_member_delete(f->st, "a", "alice"), 0);
    list[0] = '\0';
    assert_int_equal(store_member_list(f->st, NULL, "alice", count_members, list), 0);
    assert_string_equal(list, "b/alice/lead");

    assert_int_equal(store_default_project_get(f->st, "alice", proj, sizeof(proj)), -ENOENT);
    assert_int_equal(store_default_project_set(f->st, "alice", "b"), 0);
    assert_int_equal(store_default_project_get(f->st, "alice", proj, sizeof(proj)), 0);
    assert_string_equal(proj, "b");
    assert_int_equal(store_default_project_set(f->st, "alice", NULL), 0);
    assert_int_equal(store_default_project_get(f->st, "alice", proj, sizeof(proj)), -ENOENT);

    struct store_audit a = {0, 10, "alice", "job.submit", "job:1", NULL, "{}", ""};
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_audit_add(f->st, &a), 0);
    assert_int_equal(store_savepoint(f->st), 0);
    assert_int_equal(store_audit_add(f->st, &a), 0); /* the cached head is now this row */
    assert_int_equal(store_rollback_to(f->st), 0);
    assert_int_equal(store_audit_add(f->st, &a), 0); /* id 2 again, linked to row 1 */
    assert_int_equal(store_commit(f->st), 0);
    struct store_audit_check v;
    assert_int_equal(store_audit_verify(f->st, NULL, &v), 0);
    assert_int_equal(v.first_bad, 0);
    assert_int_equal(v.checked, 2);
}

/* A blind write (db.h db_mark_blind: a job row, its event, the audit entry) that fails is
 * never lost silently: on SQLite it fails at once; on PostgreSQL, sent later with the next
 * statement, it fails that statement and every one after it, ROLLBACK TO and COMMIT
 * included, until the whole transaction is rolled back; then the store works again. */
static void failed_blind_write_ends_the_transaction(void **state)
{
    struct fx *f = *state;
    struct store_job j = make_job(1, "p", 0), out;
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_savepoint(f->st), 0);
    assert_int_equal(store_job_insert(f->st, &j), 0);
    assert_int_equal(store_release(f->st), 0);
    assert_int_equal(store_savepoint(f->st), 0);
    int rc = store_job_insert(f->st, &j); /* the same id again */
    if (!fx_pg(f)) {
        assert_int_not_equal(rc, 0);
        store_rollback(f->st);
        return;
    }
    assert_int_equal(rc, 0); /* waiting to be sent */
    assert_int_equal(store_job_get(f->st, 1, &out), -EIO);
    assert_non_null(strstr(store_errmsg(f->st), "an earlier write"));
    assert_int_not_equal(store_rollback_to(f->st), 0);
    assert_int_not_equal(store_commit(f->st), 0); /* rolled back whole */
    assert_int_equal(store_job_get(f->st, 1, &out), -ENOENT);
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_job_insert(f->st, &j), 0);
    assert_int_equal(store_commit(f->st), 0);
    assert_int_equal(store_job_get(f->st, 1, &out), 0);
    store_job_release(&out);
}

static void members_holds_and_owner(void **state)
{
    struct fx *f = *state;
    char role[16], by[64], level[16], list[256] = "";
    assert_int_equal(store_member_get(f->st, "a", "alice", role, sizeof(role)), -ENOENT);
    assert_int_equal(store_member_put(f->st, "a", "alice", "member"), 0);
    assert_int_equal(store_member_put(f->st, "a", "lee", "lead"), 0);
    assert_int_equal(store_member_put(f->st, "b", "alice", "member"), 0);
    assert_int_equal(store_member_put(f->st, "a", "alice", "lead"), 0); /* role changed */
    assert_int_equal(store_member_get(f->st, "a", "alice", role, sizeof(role)), 0);
    assert_string_equal(role, "lead");
    assert_int_equal(store_member_list(f->st, NULL, "alice", count_members, list), 0);
    assert_string_equal(list, "a/alice/lead,b/alice/member");
    list[0] = '\0';
    assert_int_equal(store_member_list(f->st, "a", NULL, count_members, list), 0);
    assert_string_equal(list, "a/alice/lead,a/lee/lead");
    assert_int_equal(store_member_delete(f->st, "a", "alice"), 0);
    assert_int_equal(store_member_delete(f->st, "a", "alice"), -ENOENT);

    assert_int_equal(store_hold_get(f->st, 7, by, sizeof(by), level, sizeof(level)), -ENOENT);
    assert_int_equal(store_hold_put(f->st, 7, "root", "admin"), 0);
    assert_int_equal(store_hold_get(f->st, 7, by, sizeof(by), level, sizeof(level)), 0);
    assert_string_equal(by, "root");
    assert_string_equal(level, "admin");
    assert_int_equal(store_hold_delete(f->st, 7), 0);
    assert_int_equal(store_hold_get(f->st, 7, by, sizeof(by), level, sizeof(level)), -ENOENT);

    char project[64], user[64];
    assert_int_equal(store_job_owner(f->st, 99, project, sizeof(project), user, sizeof(user)),
                     -ENOENT);
}

static int collect_tokens(void *arg, const struct store_token *t)
{
    char *out = arg;
    size_t k = strlen(out);
    snprintf(out + k, 256 - k, "%s%s:%s", k ? "," : "", t->user, t->revoked_ms ? "revoked" : "ok");
    return 0;
}

static void token_list_and_revoke(void **state)
{
    struct fx *f = *state;
    struct store_token t, out;
    char list[256] = "";
    memset(&t, 0, sizeof(t));
    t.kind = STORE_TOKEN_USER;
    snprintf(t.role, sizeof(t.role), "member");
    const char *users[] = {"alice", "bob", "alice"};
    char hashes[3][65];
    for (int i = 0; i < 3; i++) {
        char text[32];
        snprintf(text, sizeof(text), "dkt_%d", i);
        store_token_hash(text, t.hash);
        memcpy(hashes[i], t.hash, 65);
        snprintf(t.user, sizeof(t.user), "%s", users[i]);
        t.created_ms = i + 1;
        t.expires_ms = 1000;
        assert_int_equal(store_token_put(f->st, &t), 0);
    }
    assert_int_equal(store_token_revoke(f->st, hashes[2], 500), 0);
    assert_int_equal(store_token_revoke(f->st, hashes[2], 600), -ENOENT); /* once */
    assert_int_equal(store_token_get(f->st, hashes[2], &out), 0);
    assert_int_equal(out.revoked_ms, 500);
    assert_int_equal(strncmp(out.id, hashes[2], STORE_TOKEN_ID_LEN), 0);
    assert_int_equal(strlen(out.id), STORE_TOKEN_ID_LEN);
    assert_int_equal(store_token_list(f->st, "alice", NULL, collect_tokens, list), 0);
    assert_string_equal(list, "alice:ok,alice:revoked");
    list[0] = '\0';
    assert_int_equal(store_token_list(f->st, NULL, out.id, collect_tokens, list), 0);
    assert_string_equal(list, "alice:revoked");
}

/* A revoke takes every token derived from the revoked one, however deep, in its own
 * statement, and leaves the rest: root <- child <- grandchild, and an unrelated token. */
static void token_revoke_takes_descendants(void **state)
{
    struct fx *f = *state;
    struct store_token t, out;
    char hashes[4][65];
    memset(&t, 0, sizeof(t));
    t.kind = STORE_TOKEN_USER;
    snprintf(t.role, sizeof(t.role), "member");
    snprintf(t.user, sizeof(t.user), "alice");
    for (int i = 0; i < 4; i++) {
        char text[32];
        snprintf(text, sizeof(text), "dkt_chain_%d", i);
        store_token_hash(text, hashes[i]);
        memcpy(t.hash, hashes[i], 65);
        /* 1's parent is 0, 2's is 1; 3 stands alone */
        snprintf(t.parent, sizeof(t.parent), "%s", i == 1 || i == 2 ? hashes[i - 1] : "");
        t.created_ms = i + 1;
        t.expires_ms = 1000;
        assert_int_equal(store_token_put(f->st, &t), 0);
    }
    assert_int_equal(store_token_get(f->st, hashes[2], &out), 0);
    assert_string_equal(out.parent, hashes[1]);
    assert_int_equal(store_token_revoke(f->st, hashes[0], 500), 2); /* two derived */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(store_token_get(f->st, hashes[i], &out), 0);
        assert_int_equal(out.revoked_ms, i < 3 ? 500 : 0);
    }
    assert_int_equal(store_token_revoke(f->st, hashes[3], 600), 0); /* none derived */
}

/* One transaction per loop iteration, one savepoint per request: a failed request
 * leaves nothing, the others commit together. */
static void group_commit(void **state)
{
    struct fx *f = *state;
    struct store_job out;
    assert_false(store_in_tx(f->st));
    assert_int_equal(store_savepoint(f->st), 0);
    assert_true(store_in_tx(f->st));
    struct store_job j1 = make_job(1, "p", 0), j2 = make_job(2, "p", 0), j3 = make_job(3, "p", 0);
    assert_int_equal(store_job_insert(f->st, &j1), 0);
    assert_int_equal(store_release(f->st), 0);
    assert_int_equal(store_savepoint(f->st), 0); /* a request that fails */
    assert_int_equal(store_job_insert(f->st, &j2), 0);
    assert_int_equal(store_rollback_to(f->st), 0);
    assert_int_equal(store_savepoint(f->st), 0);
    assert_int_equal(store_job_insert(f->st, &j3), 0);
    assert_int_equal(store_release(f->st), 0);
    assert_int_equal(store_job_get(f->st, 2, &out), -ENOENT);
    assert_int_equal(store_commit(f->st), 0);
    assert_false(store_in_tx(f->st));
    reopen(f);
    assert_int_equal(store_job_get(f->st, 1, &out), 0);
    store_job_release(&out);
    assert_int_equal(store_job_get(f->st, 2, &out), -ENOENT);
    assert_int_equal(store_job_get(f->st, 3, &out), 0);
    store_job_release(&out);
    /* an uncommitted transaction is lost with the process */
    assert_int_equal(store_begin(f->st), 0);
    struct store_job j4 = make_job(4, "p", 0);
    assert_int_equal(store_job_insert(f->st, &j4), 0);
    assert_int_equal(store_rollback(f->st), 0);
    assert_int_equal(store_job_get(f->st, 4, &out), -ENOENT);
    assert_int_equal(store_commit(f->st), 0); /* nothing open: a no-op */
}

/* The pipelined mode: NORMAL commits, the caller syncs the WAL itself. */
static void external_sync(void **state)
{
    struct fx *f = *state;
    struct store_job j = make_job(1, "p", 0), out;
    assert_int_equal(store_set_external_sync(f->st), 0);
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_job_insert(f->st, &j), 0);
    assert_int_equal(store_commit(f->st), 0);
    assert_int_equal(store_sync(f->st), 0);
    reopen(f);
    assert_int_equal(store_job_get(f->st, 1, &out), 0);
    store_job_release(&out);
}

/* ------------------------------------------------------------------------------------ */
/* Schema 3: states and kinds by name, and the migration of a schema-2 database          */

/* Run SQL on the database with a connection of our own (fx_sql); returns its text result
 * (first column of the first row) in out when given; a failure fails the test. */
static void raw_sql(const struct fx *f, const char *sql, char *out, size_t len)
{
    char err[512];
    if (fx_sql(f, sql, out, len, err, sizeof(err)) < 0)
        fail_msg("%s: %s", sql, err);
}

static void states_and_kinds_stored_by_name(void **state)
{
    struct fx *f = *state;
    char got[64];
    struct store_job j = make_job(1, "p", SCHED_TIMEOUT), out;
    assert_int_equal(store_job_insert(f->st, &j), 0);
    raw_sql(f, "SELECT state || ':' || typeof(state) FROM jobs WHERE id = 1", got, sizeof(got));
    assert_string_equal(got, "TIMEOUT:text");
    struct store_token t;
    memset(&t, 0, sizeof(t));
    store_token_hash("dkj_x", t.hash);
    t.kind = STORE_TOKEN_JOIN;
    assert_int_equal(store_token_put(f->st, &t), 0);
    raw_sql(f, "SELECT kind FROM tokens", got, sizeof(got));
    assert_string_equal(got, "join");
    /* a state that is no enum value is refused, not stored as a number */
    j.state = SCHED_JOB_STATE_COUNT;
    assert_int_equal(store_job_update(f->st, &j), -EINVAL);
    /* a row whose name this docketd does not know reads as an error naming the row */
    raw_sql(f, "UPDATE jobs SET state = 'LIMBO' WHERE id = 1", NULL, 0);
    assert_int_equal(store_job_get(f->st, 1, &out), -EIO);
    assert_non_null(strstr(store_errmsg(f->st), "job 1: unknown state 'LIMBO'"));
}

/* Load a dump of tests/unit/store/data (schema2.sql: a database docketd wrote at schema
 * 2; schema3.sql: the same at schema 3; schema8.sql: at 8) into the fixture's file, closed. */
static void load_dump(struct fx *f, const char *name)
{
    char path[4096];
    const char *dir = getenv("STORE_DATA");
    assert_non_null(dir);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *in = fopen(path, "r");
    assert_non_null(in);
    static char sql[1 << 20];
    size_t n = fread(sql, 1, sizeof(sql) - 1, in);
    fclose(in);
    sql[n] = '\0';
    store_close(f->st);
    f->st = NULL;
    unlink(f->path);
    raw_sql(f, sql, NULL, 0);
}

struct id_list {
    char text[256];
};

static int collect_ids(void *arg, const struct store_job *j)
{
    struct id_list *l = arg;
    size_t k = strlen(l->text);
    snprintf(l->text + k, sizeof(l->text) - k, "%s%llu", k ? "," : "", (unsigned long long)j->id);
    return 0;
}

static void migrates_schema2_database(void **state)
{
    struct fx *f = *state;
    char err[256], got[64];
    load_dump(f, "schema2.sql");
    raw_sql(f, "PRAGMA user_version", got, sizeof(got));
    assert_string_equal(got, "2");
    f->st = store_open(f->path, err, sizeof(err));
    if (!f->st)
        fail_msg("%s", err);
    assert_int_equal(store_schema_version(f->st), SCHEMA_LATEST);
    /* every job keeps its state, now by name */
    static const struct {
        uint64_t id;
        int state;
        const char *name;
    } want[] = {{1, SCHED_COMPLETED, "done"}, {2, SCHED_FAILED, "fails"},
                {3, SCHED_RUNNING, "runs"},   {4, SCHED_CANCELLED, "cancelled"},
                {5, SCHED_HELD, "held"},      {6, SCHED_PENDING, "waits"}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct store_job j;
        assert_int_equal(store_job_get(f->st, want[i].id, &j), 0);
        assert_string_equal(j.name, want[i].name);
        assert_string_equal(sched_job_state_name(j.state), sched_job_state_name(want[i].state));
        assert_true(j.has_core);
        store_job_release(&j);
    }
    raw_sql(f, "SELECT group_concat(state, ',') FROM (SELECT state FROM jobs ORDER BY id)", got,
            sizeof(got));
    assert_string_equal(got, "COMPLETED,FAILED,RUNNING,CANCELLED,HELD,PENDING");
    /* the state filter finds them by name */
    struct store_job_filter flt;
    memset(&flt, 0, sizeof(flt));
    flt.state_mask = (1u << SCHED_RUNNING) | (1u << SCHED_HELD) | (1u << SCHED_PENDING);
    struct id_list ids = {""};
    assert_int_equal(store_job_list(f->st, &flt, collect_ids, &ids), 0);
    assert_string_equal(ids.text, "3,5,6");
    /* tokens keep their kind: the node's credential, the join token, the users' tokens */
    raw_sql(f,
            "SELECT group_concat(kind || ':' || user_name, ',') FROM"
            " (SELECT kind, user_name FROM tokens ORDER BY created_ms)",
            got, sizeof(got));
    assert_string_equal(got, "user:admin,join:admin,node:gpu01,user:alice");
    struct store_token t;
    assert_int_equal(
        store_token_get(f->st, "a7f9dbf66bede4099aacd028cae62ad99a771075ec18d4301de5417731ad6c1e",
                        &t),
        0);
    assert_int_equal(t.kind, STORE_TOKEN_NODE);
    assert_string_equal(t.user, "gpu01");
    /* the rest of the database is untouched; it opens again at the latest schema */
    raw_sql(f, "SELECT count(*) FROM job_events", got, sizeof(got));
    assert_int_not_equal(atoi(got), 0);
    reopen(f);
    assert_int_equal(store_schema_version(f->st), SCHEMA_LATEST);
    /* audit rows from before the chain are reported as such; new ones are chained */
    struct store_audit_check v;
    assert_int_equal(store_audit_verify(f->st, NULL, &v), 0);
    assert_int_equal(v.first_bad, 0);
    assert_int_equal(v.checked, 0);
    int64_t legacy = v.unchained;
    struct store_audit a = {0, 10, "root", "node.drain", "gpu01", NULL, NULL, ""};
    assert_int_equal(store_audit_add(f->st, &a), 0);
    assert_int_equal(store_audit_verify(f->st, NULL, &v), 0);
    assert_int_equal(v.first_bad, 0);
    assert_int_equal(v.checked, 1);
    assert_int_equal(v.unchained, legacy);
    /* user and join tokens got an expiry; the node credential did not (h-node's) */
    raw_sql(f, "SELECT count(*) FROM tokens WHERE expires_ms = 0 AND kind <> 'node'", got,
            sizeof(got));
    assert_string_equal(got, "0");
}

static void migration_refuses_an_unknown_state_number(void **state)
{
    struct fx *f = *state;
    char err[256], got[64];
    load_dump(f, "schema2.sql");
    raw_sql(f, "UPDATE jobs SET state = 42 WHERE id = 3", NULL, 0);
    assert_null(store_open(f->path, err, sizeof(err)));
    assert_non_null(strstr(err, "migration 3"));
    /* nothing changed: still schema 2, numbers intact */
    raw_sql(f, "PRAGMA user_version", got, sizeof(got));
    assert_string_equal(got, "2");
    raw_sql(f, "SELECT group_concat(state, ',') FROM (SELECT state FROM jobs ORDER BY id)", got,
            sizeof(got));
    assert_string_equal(got, "5,6,42,7,1,0");
    /* so that teardown has a store to close */
    raw_sql(f, "UPDATE jobs SET state = 3 WHERE id = 3", NULL, 0);
    f->st = store_open(f->path, err, sizeof(err));
    assert_non_null(f->st);
}

static int count_member(void *arg, const char *project, const char *user, const char *role)
{
    (void)project, (void)user, (void)role;
    ++*(int *)arg;
    return 0;
}

static int count_secret_row(void *arg, const struct store_secret *sec)
{
    (void)sec;
    ++*(int *)arg;
    return 0;
}

/* A database at schema 3 (the release before runs, roles and secrets) takes migrations 4,
 * 5 and 6 in order: a placed job's placement becomes its run 1, user and join tokens get
 * an expiry (the node credential none), the audit rows count as unchained and new ones
 * chain, the new tables are there and empty, and everything else is as it was. */
static void migrates_schema3_database(void **state)
{
    struct fx *f = *state;
    char err[256], got[128];
    load_dump(f, "schema3.sql");
    raw_sql(f, "PRAGMA user_version", got, sizeof(got));
    assert_string_equal(got, "3");
    f->st = store_open(f->path, err, sizeof(err));
    if (!f->st)
        fail_msg("%s", err);
    assert_int_equal(store_schema_version(f->st), SCHEMA_LATEST);
    /* 4: jobs 1-3 were placed on gpu01 (run 1); 4-6 never started (no run) */
    struct store_run run;
    for (uint64_t id = 1; id <= 3; id++) {
        assert_int_equal(store_run_last(f->st, id), 1);
        assert_int_equal(store_run_get(f->st, id, 1, &run), 0);
        assert_string_equal(run.nodes, ",gpu01,");
        assert_int_not_equal(run.start_ms, 0);
        assert_int_equal(run.final_mask, 0);
        assert_int_equal(run.lease_ms, 0); /* 12: runs from before leases: the node timeout's */
    }
    for (uint64_t id = 4; id <= 6; id++)
        assert_int_equal(store_run_last(f->st, id), 0);
    /* 5: tokens keep their kind and hash, none revoked; only the node credential may
     * stay without expiry */
    raw_sql(f,
            "SELECT group_concat(kind || ':' || user_name || ':' || revoked_ms, ',')"
            " FROM (SELECT * FROM tokens ORDER BY created_ms)",
            got, sizeof(got));
    assert_string_equal(got, "user:admin:0,join:admin:0,node:gpu01:0,user:alice:0");
    raw_sql(f, "SELECT group_concat(kind, ',') FROM tokens WHERE expires_ms = 0", got, sizeof(got));
    assert_string_equal(got, "node");
    assert_int_equal(store_token_live(f->st, STORE_TOKEN_NODE, "gpu01", 1), 1);
    struct store_audit_check v;
    assert_int_equal(store_audit_verify(f->st, NULL, &v), 0);
    assert_int_equal(v.first_bad, 0);
    assert_int_equal(v.checked, 0);
    assert_int_not_equal(v.unchained, 0);
    struct store_audit a = {0, 10, "root", "node.drain", "gpu01", NULL, NULL, ""};
    assert_int_equal(store_audit_add(f->st, &a), 0);
    assert_int_equal(store_audit_verify(f->st, NULL, &v), 0);
    assert_int_equal(v.first_bad, 0);
    assert_int_equal(v.checked, 1);
    int n = 0;
    assert_int_equal(store_member_list(f->st, NULL, NULL, count_member, &n), 0);
    assert_int_equal(n, 0);
    /* 6: secrets, empty, and usable */
    assert_int_equal(store_secret_list(f->st, "default", count_secret_row, &n), 0);
    assert_int_equal(n, 0);
    /* 7: rows from before keep their own spec (spec_id 0) and read it back; job_specs is
     * there and empty */
    raw_sql(f, "SELECT count(*) FROM jobs WHERE spec_id <> 0", got, sizeof(got));
    assert_string_equal(got, "0");
    raw_sql(f, "SELECT count(*) FROM job_specs", got, sizeof(got));
    assert_string_equal(got, "0");
    struct store_job old;
    assert_int_equal(store_job_get(f->st, 1, &old), 0);
    assert_non_null(old.spec);
    assert_int_not_equal(strlen(old.spec), 0);
    assert_int_equal(old.spec_id, 0);
    store_job_release(&old);
    /* 8: no user has a default project yet; one can be set */
    char dp[64];
    assert_int_equal(store_default_project_get(f->st, "alice", dp, sizeof(dp)), -ENOENT);
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_default_project_set(f->st, "alice", "default"), 0);
    assert_int_equal(store_commit(f->st), 0);
    assert_int_equal(store_default_project_get(f->st, "alice", dp, sizeof(dp)), 0);
    assert_string_equal(dp, "default");
    /* the rest as it was: jobs by state name, the job events */
    raw_sql(f, "SELECT group_concat(state, ',') FROM (SELECT state FROM jobs ORDER BY id)", got,
            sizeof(got));
    assert_string_equal(got, "COMPLETED,FAILED,RUNNING,CANCELLED,HELD,PENDING");
    raw_sql(f, "SELECT count(*) FROM job_events", got, sizeof(got));
    assert_int_not_equal(atoi(got), 0);
    reopen(f);
    assert_int_equal(store_schema_version(f->st), SCHEMA_LATEST);
    assert_int_equal(store_run_last(f->st, 3), 1);
}

/* A database at schema 8 (main before issue 14) takes 9 and 10: the usage tables are there
 * and empty and take a sample, the alert tables are there and empty, and each run that
 * ended before gets its end from the first state event that left it (an open run: 0). */
static void migrates_schema8_database(void **state)
{
    struct fx *f = *state;
    char err[256], got[128];
    load_dump(f, "schema8.sql");
    raw_sql(f, "PRAGMA user_version", got, sizeof(got));
    assert_string_equal(got, "8");
    f->st = store_open(f->path, err, sizeof(err));
    if (!f->st)
        fail_msg("%s", err);
    assert_int_equal(store_schema_version(f->st), SCHEMA_LATEST);
    /* 9: no samples yet; one is stored and summarised */
    int64_t raw = -1, minutes = -1, sums = -1;
    assert_int_equal(store_usage_counts(f->st, &raw, &minutes, &sums), 0);
    assert_true(raw == 0 && minutes == 0 && sums == 0);
    struct store_usage_summary sum;
    assert_int_equal(store_usage_summary_get(f->st, 3, &sum), -ENOENT);
    struct store_usage_point p = {.job = 3,
                                  .run = 1,
                                  .node = "gpu01",
                                  .time_ms = 1000,
                                  .cpu_ms = 50,
                                  .mem_bytes = 1,
                                  .gpu_util = 2,
                                  .gpu_temp_c = -1,
                                  .gpu_mem_mb = -1,
                                  .gpu_power_mw = -1,
                                  .gpu_errors = -1};
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_usage_add(f->st, &p, "declared", 5, &sum), 0);
    assert_int_equal(store_commit(f->st), 0);
    assert_int_equal(store_usage_summary_get(f->st, 3, &sum), 0);
    assert_int_equal(sum.samples, 1);
    assert_int_equal(sum.idle_since_ms, 1000);
    /* 10: no alerts, no silences; run ends from the events */
    raw_sql(f,
            "SELECT (SELECT count(*) FROM alert_history) + (SELECT count(*) FROM alert_silences)",
            got, sizeof(got));
    assert_string_equal(got, "0");
    raw_sql(f,
            "SELECT group_concat(r.job || ':' || r.end_state || ':' ||"
            " (r.end_ms = coalesce((SELECT min(e.time_ms) FROM job_events e WHERE e.job = r.job"
            " AND e.type = 'state' AND e.to_state IN ('COMPLETED', 'FAILED')), 0)), ',')"
            " FROM (SELECT * FROM job_runs ORDER BY job) r",
            got, sizeof(got));
    assert_string_equal(got, "1:COMPLETED:1,2:FAILED:1,3::1");
    reopen(f);
    assert_int_equal(store_schema_version(f->st), SCHEMA_LATEST);
}

/* Leadership (issue 32): one store leads, another waits; when the leader's session ends
 * the other takes over, and the deposed one's later writes are refused. */
static void leadership(void **state)
{
    struct fx *f = *state;
    bool leading = true;
    struct store_leader l;
    if (!fx_pg(f)) { /* one docketd per SQLite file: no standby */
        assert_int_equal(store_leader_try(f->st, "a", "http://a", 1, &leading), -ENOTSUP);
        assert_false(leading);
        return;
    }
    char err[256];
    struct store *b = store_open(f->path, err, sizeof(err));
    if (!b)
        fail_msg("%s", err);
    assert_int_equal(store_leader_get(b, &l), -ENOENT); /* nobody ever led */
    assert_int_equal(store_leader_try(f->st, "a", "http://a", 1, &leading), 0);
    assert_true(leading);
    assert_int_equal(store_leader_try(b, "b", "http://b", 2, &leading), 0);
    assert_false(leading); /* a holds the lock */
    assert_int_equal(store_leader_get(b, &l), 0);
    assert_string_equal(l.url, "http://a");
    assert_int_equal(l.epoch, 1);
    assert_int_equal(store_leader_check(f->st), 0);
    struct store_job j = make_job(1, "p", SCHED_PENDING);
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_job_insert(f->st, &j), 0);
    assert_int_equal(store_commit(f->st), 0); /* the leader writes */
    /* a's session ends (a network cut, a killed backend): b takes over */
    raw_sql(f,
            "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory'"
            " AND objid = 7243454 AND granted",
            NULL, 0);
    /* pg_terminate_backend only signals a's backend: the lock goes when it has exited,
     * which on a loaded machine may be a while (b tries each second in docketd) */
    for (int tries = 0; tries < 600; tries++) {
        assert_int_equal(store_leader_try(b, "b", "http://b", 3, &leading), 0);
        if (leading)
            break;
        usleep(50000);
    }
    assert_true(leading);
    assert_int_equal(store_leader_get(b, &l), 0);
    assert_string_equal(l.url, "http://b");
    assert_int_equal(l.epoch, 2);
    /* a, its connection made anew, is deposed: its check says so, its write is refused */
    assert_int_equal(store_leader_check(f->st), -ESTALE);
    j = make_job(2, "p", SCHED_PENDING);
    if (store_begin(f->st) == 0 && store_job_insert(f->st, &j) == 0)
        assert_int_equal(store_commit(f->st), -ESTALE);
    assert_non_null(strstr(store_errmsg(f->st), "deposed"));
    struct store_job out;
    assert_int_equal(store_job_get(b, 2, &out), -ENOENT); /* nothing of a's landed */
    assert_int_equal(store_job_get(b, 1, &out), 0);
    store_job_release(&out);
    assert_int_equal(store_leader_check(b), 0);
    store_close(b);
}

/* h-node: runs of a job and live node credentials */
static void runs_and_live_credentials(void **state)
{
    struct fx *f = *state;
    struct store_run r = {
        .job = 7, .run = 1, .nodes = ",gpu01,", .start_ms = 5, .lease_ms = 900000};
    struct store_run got;
    assert_int_equal(store_run_last(f->st, 7), 0);
    assert_int_equal(store_run_get(f->st, 7, 1, &got), -ENOENT);
    assert_int_equal(store_run_add(f->st, &r), 0);
    r.run = 2;
    str_copy(r.nodes, sizeof(r.nodes), ",gpu02,gpu03,");
    assert_int_equal(store_run_add(f->st, &r), 0);
    assert_int_not_equal(store_run_add(f->st, &r), 0); /* one row per run */
    assert_int_equal(store_run_last(f->st, 7), 2);
    assert_int_equal(store_run_set_final(f->st, 7, 2, 1), 0);
    assert_int_equal(store_run_set_final(f->st, 7, 2, 2), 0);
    assert_int_equal(store_run_get(f->st, 7, 2, &got), 0);
    assert_string_equal(got.nodes, ",gpu02,gpu03,");
    assert_int_equal(got.final_mask, 3);
    assert_int_equal(store_run_get(f->st, 7, 1, &got), 0);
    assert_int_equal(got.final_mask, 0);
    assert_int_equal(got.lease_ms, 900000); /* the lease it was granted, kept */

    struct store_token t = {.kind = STORE_TOKEN_NODE, .user = "gpu01", .role = "node"};
    assert_int_equal(store_token_live(f->st, STORE_TOKEN_NODE, "gpu01", 1000), 0);
    str_copy(t.hash, sizeof(t.hash), "aa");
    t.expires_ms = 500; /* expired at 1000 */
    assert_int_equal(store_token_put(f->st, &t), 0);
    assert_int_equal(store_token_live(f->st, STORE_TOKEN_NODE, "gpu01", 1000), 0);
    assert_int_equal(store_token_live(f->st, STORE_TOKEN_NODE, "gpu01", 400), 1);
    str_copy(t.hash, sizeof(t.hash), "bb");
    t.expires_ms = 0; /* never */
    assert_int_equal(store_token_put(f->st, &t), 0);
    assert_int_equal(store_token_live(f->st, STORE_TOKEN_NODE, "gpu01", 1000), 1);
    assert_int_equal(store_token_live(f->st, STORE_TOKEN_USER, "gpu01", 1000), 0);
    /* a revoked credential (h-roles' token revoke) holds the name no more */
    assert_int_equal(store_token_revoke(f->st, "bb", 900), 0);
    assert_int_equal(store_token_live(f->st, STORE_TOKEN_NODE, "gpu01", 1000), 0);
}

static int count_secret(void *arg, const struct store_secret *s)
{
    char *names = arg;
    assert_null(s->sealed); /* a list never carries the sealed values */
    strcat(names, s->name);
    strcat(names, ",");
    return 0;
}

static int list_area(void *arg, const struct store_storage_area *a)
{
    char *out = arg;
    char row[200];
    snprintf(row, sizeof(row), "%s/%s=%lld:%s;", a->project, a->pool, (long long)a->quota_bytes,
             a->created_by);
    strcat(out, row);
    return 0;
}

/* Storage areas (schema 14): put makes or changes the quota (the first creator stays),
 * list orders by project and pool, delete says when there was nothing. */
static void storage_areas_round_trip(void **state)
{
    struct fx *f = *state;
    struct store_storage_area a = {
        .project = "ml", .pool = "hot", .quota_bytes = 10, .created_by = "alice", .created_ms = 5};
    assert_int_equal(store_storage_area_put(f->st, &a), 0);
    snprintf(a.pool, sizeof(a.pool), "cold");
    assert_int_equal(store_storage_area_put(f->st, &a), 0);
    snprintf(a.pool, sizeof(a.pool), "hot");
    snprintf(a.created_by, sizeof(a.created_by), "bob");
    a.quota_bytes = 20;
    assert_int_equal(store_storage_area_put(f->st, &a), 0);
    reopen(f);
    char got[256] = "";
    assert_int_equal(store_storage_area_list(f->st, list_area, got), 0);
    assert_string_equal(got, "ml/cold=10:alice;ml/hot=20:alice;");
    assert_int_equal(store_storage_area_delete(f->st, "ml", "cold"), 0);
    assert_int_equal(store_storage_area_delete(f->st, "ml", "cold"), -ENOENT);
    got[0] = '\0';
    assert_int_equal(store_storage_area_list(f->st, list_area, got), 0);
    assert_string_equal(got, "ml/hot=20:alice;");
}

/* Idempotency keys (schema 21): a key is the user's (another user's same key is another
 * row), put twice is -EEXIST and changes nothing, it survives a reopen, a rolled-back
 * transaction keeps no key, one past the window reads as absent and is taken over by a new
 * put, and prune deletes only those past it. */
static void submit_keys_round_trip(void **state)
{
    struct fx *f = *state;
    struct store_submit_key k = {
        .user = "alice", .key = "k 1/x", .first_id = 7, .tasks = 1, .created_ms = 1000};
    snprintf(k.body_sha, sizeof(k.body_sha), "%064d", 1);
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_submit_key_put(f->st, &k, 0), 0);
    struct store_submit_key again = k;
    again.first_id = 8;
    assert_int_equal(store_submit_key_put(f->st, &again, 0), -EEXIST);
    snprintf(again.user, sizeof(again.user), "bob");
    assert_int_equal(store_submit_key_put(f->st, &again, 0), 0);
    assert_int_equal(store_commit(f->st), 0);
    /* rolled back: its key is not kept */
    struct store_submit_key lost = k;
    snprintf(lost.key, sizeof(lost.key), "lost");
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_submit_key_put(f->st, &lost, 0), 0);
    assert_int_equal(store_rollback(f->st), 0);
    reopen(f);
    struct store_submit_key got;
    assert_int_equal(store_submit_key_get(f->st, "alice", "k 1/x", 0, &got), 0);
    assert_int_equal(got.first_id, 7);
    assert_false(got.is_array);
    assert_string_equal(got.body_sha, k.body_sha);
    assert_int_equal(store_submit_key_get(f->st, "bob", "k 1/x", 0, &got), 0);
    assert_int_equal(got.first_id, 8);
    assert_int_equal(store_submit_key_get(f->st, "alice", "lost", 0, &got), -ENOENT);
    assert_int_equal(store_submit_key_get(f->st, "carol", "k 1/x", 0, &got), -ENOENT);
    /* past the window (made before 2000): absent, and a new put takes it over */
    assert_int_equal(store_submit_key_get(f->st, "alice", "k 1/x", 2000, &got), -ENOENT);
    struct store_submit_key arr = k;
    arr.first_id = 20;
    arr.is_array = true;
    arr.tasks = 5;
    arr.created_ms = 3000;
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_submit_key_put(f->st, &arr, 2000), 0);
    assert_int_equal(store_commit(f->st), 0);
    assert_int_equal(store_submit_key_get(f->st, "alice", "k 1/x", 2000, &got), 0);
    assert_true(got.is_array);
    assert_int_equal(got.first_id, 20);
    assert_int_equal(got.tasks, 5);
    /* prune: bob's (1000) goes, alice's (3000) stays */
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_submit_key_prune(f->st, 2000, 100), 1);
    assert_int_equal(store_commit(f->st), 0);
    assert_int_equal(store_submit_key_get(f->st, "bob", "k 1/x", 0, &got), -ENOENT);
    assert_int_equal(store_submit_key_get(f->st, "alice", "k 1/x", 0, &got), 0);
}

static int list_lc_run(void *arg, const struct store_lc_run *r)
{
    char *out = arg;
    size_t n = strlen(out);
    snprintf(out + n, 256 - n, "%lld:%s/%s:%s:%lld:%s;", (long long)r->id, r->rule, r->project,
             r->state, (long long)r->files, r->result ? r->result : "");
    return 0;
}

/* Lifecycle runs (schema 17): put inserts then updates by id (its result kept), the list
 * is newest first, and the unfinished ones alone when asked. */
static void lifecycle_runs_round_trip(void **state)
{
    struct fx *f = *state;
    struct store_lc_run r = {.id = 1,
                             .rule = "cool",
                             .project = "ml",
                             .pool = "hot",
                             .to_pool = "cold",
                             .action = "move",
                             .node = "a",
                             .state = "running",
                             .requested_by = "alice",
                             .created_ms = 5};
    assert_int_equal(store_lc_run_put(f->st, &r), 0);
    r.id = 2;
    assert_int_equal(store_lc_run_put(f->st, &r), 0);
    r.id = 1;
    r.finished_ms = 9;
    r.files = 3;
    snprintf(r.state, sizeof(r.state), "done");
    r.result = "{\"list\":[]}";
    assert_int_equal(store_lc_run_put(f->st, &r), 0);
    reopen(f);
    char got[256] = "";
    assert_int_equal(store_lc_run_list(f->st, 0, false, list_lc_run, got), 0);
    assert_string_equal(got, "2:cool/ml:running:0:;1:cool/ml:done:3:{\"list\":[]};");
    got[0] = '\0';
    assert_int_equal(store_lc_run_list(f->st, 0, true, list_lc_run, got), 0);
    assert_string_equal(got, "2:cool/ml:running:0:;");
    got[0] = '\0';
    assert_int_equal(store_lc_run_list(f->st, 1, false, list_lc_run, got), 0);
    assert_string_equal(got, "2:cool/ml:running:0:;");
}

static int sum_area(void *arg, const char *project, const char *pool, double byte_ms)
{
    char *out = arg;
    size_t n = strlen(out);
    snprintf(out + n, 256 - n, "%s/%s=%.0f;", project, pool, byte_ms);
    return 0;
}

/* Storage usage (schema 18): a step function per area, each sample held until the next
 * (the last until the window's end), the one before the window counted from its start. */
static void storage_usage_integrated(void **state)
{
    struct fx *f = *state;
    assert_int_equal(store_storage_sample_add(f->st, 0, "ml", "hot", 1000), 0);
    assert_int_equal(store_storage_sample_add(f->st, 0, "bio", "hot", 7), 0);
    assert_int_equal(store_storage_sample_add(f->st, 10, "ml", "hot", 3000), 0);
    assert_int_equal(store_storage_sample_add(f->st, 10, "bio", "hot", 7), 0);
    assert_int_equal(store_storage_sample_add(f->st, 10, "ml", "cold", 5), 0);
    assert_int_equal(store_storage_sample_add(f->st, 30, "ml", "hot", 0), 0);
    char got[256] = "";
    /* [0, 20): ml/hot 1000*10 + 3000*10; bio 7*20; ml/cold 5*10 */
    assert_int_equal(store_storage_byte_ms(f->st, 0, 20, sum_area, got), 0);
    assert_string_equal(got, "bio/hot=140;ml/cold=50;ml/hot=40000;");
    /* [5, 40): the sample at 0 counts from 5; ml/hot 1000*5 + 3000*20 + 0*10 */
    got[0] = '\0';
    assert_int_equal(store_storage_byte_ms(f->st, 5, 40, sum_area, got), 0);
    assert_string_equal(got, "bio/hot=245;ml/cold=150;ml/hot=65000;");
    /* a window before any sample: nothing */
    got[0] = '\0';
    assert_int_equal(store_storage_byte_ms(f->st, -50, -10, sum_area, got), 0);
    assert_string_equal(got, "");
}

static int sum_only(void *arg, const char *project, const char *pool, double byte_ms)
{
    double *sums = arg; /* ml/hot, bio/hot, ml/cold */
    int i = strcmp(project, "bio") == 0 ? 1 : strcmp(pool, "cold") == 0 ? 2 : 0;
    sums[i] += byte_ms;
    return 0;
}

/* Rolling samples up (docs/reports.md): hourly-like samples at odd times over five
 * "days" of 1000 ms become one per area and day; every window on day boundaries
 * integrates to the same byte-ms before and after (the means are whole bytes here),
 * an area whose usage did not change gets no row for that day, the samples after the
 * cut stay as they were, and a second roll-up finds nothing to do. */
static void storage_samples_rolled_up(void **state)
{
    struct fx *f = *state;
    static const struct {
        int64_t at, ml, bio;
    } s[] = {{130, 1000, 100},  {380, 3000, 100},  {630, 2000, 100},  {880, 0, 100},
             {1130, 4000, 100}, {1380, 4000, 100}, {2130, 6000, 900}, {2630, 100, 900},
             {3130, 8000, 900}, {4130, 5, 900},    {4630, 6, 900},    {5130, 7, 900}};
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
        assert_int_equal(store_storage_sample_add(f->st, s[i].at, "ml", "hot", s[i].ml), 0);
        assert_int_equal(store_storage_sample_add(f->st, s[i].at, "bio", "hot", s[i].bio), 0);
    }
    assert_int_equal(store_storage_sample_add(f->st, 400, "ml", "cold", 40), 0);
    static const int64_t win[][2] = {{0, 1000}, {1000, 3000}, {0, 4000}, {2000, 6000}, {0, 9000}};
    double before[5][3] = {{0}}, after[5][3] = {{0}};
    for (int w = 0; w < 5; w++)
        assert_int_equal(store_storage_byte_ms(f->st, win[w][0], win[w][1], sum_only, before[w]),
                         0);
    struct store_rollup ru;
    /* at most two steps a call: [0, 2000), then [2000, 4000); 4130 onwards is kept */
    assert_int_equal(store_storage_samples_rollup(f->st, 4500, 1000, 2, &ru), 0);
    assert_int_equal(ru.from_ms, 0);
    assert_int_equal(ru.until_ms, 2000);
    assert_true(ru.more);
    assert_true(ru.removed > 0);
    assert_int_equal(store_storage_samples_rollup(f->st, 4500, 1000, 2, &ru), 0);
    assert_int_equal(ru.from_ms, 2000);
    assert_int_equal(ru.until_ms, 4000);
    assert_false(ru.more);
    assert_int_equal(store_storage_samples_rollup(f->st, 4500, 1000, 2, &ru), 0);
    assert_int_equal(ru.removed, 0);
    assert_int_equal(ru.until_ms, 0); /* nothing left to roll */
    reopen(f);
    for (int w = 0; w < 5; w++) {
        assert_int_equal(store_storage_byte_ms(f->st, win[w][0], win[w][1], sum_only, after[w]), 0);
        for (int a = 0; a < 3; a++)
            if (before[w][a] != after[w][a])
                fail_msg("window [%lld, %lld) area %d: %.0f before, %.0f after",
                         (long long)win[w][0], (long long)win[w][1], a, before[w][a], after[w][a]);
    }
}

static int list_archive(void *arg, const struct store_log_archive *a)
{
    char *out = arg;
    size_t n = strlen(out);
    snprintf(out + n, 256 - n, "%llu.%d.%d;", (unsigned long long)a->job, a->run, a->stream);
    return 0;
}

/* Archived logs (schema 22): a pointer per (job, run, stream), put again replaces it,
 * kept across a reopen; a stream never archived is -ENOENT. */
static void log_archives_round_trip(void **state)
{
    struct fx *f = *state;
    struct store_log_archive a = {.job = 7,
                                  .run = 2,
                                  .stream = 1,
                                  .pool = "arch",
                                  .path = "docket-logs/0/7.2.stderr.gz",
                                  .bytes = 100,
                                  .stored_bytes = 40,
                                  .sha256 = "ab",
                                  .archived_ms = 9};
    assert_int_equal(store_log_archive_put(f->st, &a), 0);
    a.stored_bytes = 41;
    assert_int_equal(store_log_archive_put(f->st, &a), 0);
    reopen(f);
    struct store_log_archive got;
    assert_int_equal(store_log_archive_get(f->st, 7, 2, 1, &got), 0);
    assert_string_equal(got.pool, "arch");
    assert_string_equal(got.path, "docket-logs/0/7.2.stderr.gz");
    assert_int_equal(got.bytes, 100);
    assert_int_equal(got.stored_bytes, 41);
    assert_string_equal(got.sha256, "ab");
    assert_int_equal(got.archived_ms, 9);
    assert_int_equal(store_log_archive_get(f->st, 7, 2, 0, &got), -ENOENT);
    assert_int_equal(store_log_archive_get(f->st, 7, 1, 1, &got), -ENOENT);
    /* the job's list, by run and stream; another job's stays out */
    a.stream = 0;
    assert_int_equal(store_log_archive_put(f->st, &a), 0);
    a.job = 8;
    assert_int_equal(store_log_archive_put(f->st, &a), 0);
    char list[256] = "";
    assert_int_equal(store_log_archive_list(f->st, 7, list_archive, list), 0);
    assert_string_equal(list, "7.2.0;7.2.1;");
}

/* Secrets: put replaces (project, name), get returns the exact bytes, list gives names
 * in order without values, delete says when there was nothing, a malformed row opens as
 * nothing (-EBADMSG). */
static void secrets_round_trip(void **state)
{
    struct fx *f = *state;
    unsigned char sealed[20] = {0, 1, 2, 3, 0, 5};
    struct store_secret s = {.project = "vision",
                             .name = "B_KEY",
                             .sealed = sealed,
                             .sealed_len = sizeof(sealed),
                             .set_by = "alice",
                             .set_ms = 7};
    memset(s.nonce, 0xab, sizeof(s.nonce));
    assert_int_equal(store_secret_put(f->st, &s), 0);
    snprintf(s.name, sizeof(s.name), "A_KEY");
    assert_int_equal(store_secret_put(f->st, &s), 0);
    sealed[0] = 9; /* replace B_KEY, now for one user (schema 14) */
    snprintf(s.name, sizeof(s.name), "B_KEY");
    snprintf(s.allow, sizeof(s.allow), "[\"user:bob\"]");
    s.set_ms = 8;
    assert_int_equal(store_secret_put(f->st, &s), 0);
    reopen(f);
    struct store_secret got;
    assert_int_equal(store_secret_get(f->st, "vision", "B_KEY", &got), 0);
    assert_int_equal(got.sealed_len, sizeof(sealed));
    assert_memory_equal(got.sealed, sealed, sizeof(sealed));
    assert_memory_equal(got.nonce, s.nonce, sizeof(s.nonce));
    assert_string_equal(got.set_by, "alice");
    assert_int_equal(got.set_ms, 8);
    assert_string_equal(got.allow, "[\"user:bob\"]");
    store_secret_release(&got);
    assert_int_equal(store_secret_get(f->st, "vision", "A_KEY", &got), 0);
    assert_string_equal(got.allow, ""); /* none: the project's leads only */
    store_secret_release(&got);
    assert_int_equal(store_secret_get(f->st, "speech", "B_KEY", &got), -ENOENT);
    char names[128] = "";
    assert_int_equal(store_secret_list(f->st, "vision", count_secret, names), 0);
    assert_string_equal(names, "A_KEY,B_KEY,");
    assert_int_equal(store_secret_delete(f->st, "vision", "A_KEY"), 0);
    assert_int_equal(store_secret_delete(f->st, "vision", "A_KEY"), -ENOENT);
    /* a nonce of the wrong size (a row changed by hand) is refused, not read past */
    raw_sql(f,
            fx_pg(f) ? "UPDATE secrets SET nonce = '\\x0102'::bytea WHERE name = 'B_KEY'"
                     : "UPDATE secrets SET nonce = x'0102' WHERE name = 'B_KEY'",
            NULL, 0);
    assert_int_equal(store_secret_get(f->st, "vision", "B_KEY", &got), -EBADMSG);
}

/* store_open_readonly (docket-sim --from-db): reads what a live writer committed, writes
 * nothing, refuses another schema version and a file that is not there, and never creates
 * one. */
static void opens_read_only(void **state)
{
    struct fx *f = *state;
    struct store_node n;
    char err[256], missing[160], *doc = NULL;
    struct store *ro;

    memset(&n, 0, sizeof(n));
    snprintf(n.name, sizeof(n.name), "gpu01");
    snprintf(n.state, sizeof(n.state), "UP");
    n.gpus = 8;
    n.labels = "{}";
    n.info = "{}";
    assert_int_equal(store_node_put(f->st, &n), 0);
    assert_int_equal(store_policy_put(f->st, "{\"settings\":{}}"), 0);
    /* the writer stays open, as docketd does */
    ro = store_open_readonly(f->path, err, sizeof(err));
    assert_non_null(ro);
    assert_int_equal(store_policy_get(ro, &doc), 0);
    assert_string_equal(doc, "{\"settings\":{}}");
    free(doc);
    assert_int_equal(store_node_get(ro, "gpu01", &n), 0);
    assert_int_equal(n.gpus, 8);
    store_node_release(&n);
    assert_int_equal(store_policy_put(ro, "{}"), -EIO); /* a write fails */
    assert_int_equal(store_counter_set(ro, "x", 1), -EIO);
    store_close(ro);
    /* the writer's data is unchanged */
    assert_int_equal(store_policy_get(f->st, &doc), 0);
    assert_string_equal(doc, "{\"settings\":{}}");
    free(doc);
    if (!fx_pg(f)) { /* a file that is not there is refused, not created */
        snprintf(missing, sizeof(missing), "%s/none.db", f->dir);
        assert_null(store_open_readonly(missing, err, sizeof(err)));
        assert_non_null(strstr(err, "read-only"));
        assert_int_equal(access(missing, F_OK), -1);
    }
    /* another schema version is refused with what to do */
    set_schema_version(f, 3);
    assert_null(store_open_readonly(f->path, err, sizeof(err)));
    assert_non_null(strstr(err, "schema version 3"));
    assert_non_null(strstr(err, "start docketd once on it"));
    set_schema_version(f, SCHEMA_LATEST);
}

/* ------------------------------------------------------------------------------------ */
/* Reports, alert history and silences (schema 10)                                      */

/* A job of `gpus` x `nnodes` on node `node`: one run [start, end) (end 0: open), ended in
 * `state` for `cause`. */
static void run_job(struct fx *f, uint64_t id, const char *project, const char *tier, int gpus,
                    int nnodes, const char *node, int64_t submit, int64_t start, int64_t end,
                    const char *state, const char *cause)
{
    struct store_job j = make_job(id, project, end ? SCHED_COMPLETED : SCHED_RUNNING);
    struct store_run r = {.job = id, .run = store_run_last(f->st, id) + 1, .start_ms = start};
    snprintf(j.tier, sizeof j.tier, "%s", tier);
    j.has_core = true;
    j.gpus = gpus;
    j.cpus = 2;
    j.nnodes = nnodes;
    j.submit_ms = submit;
    j.end_ms = end && strcmp(state, "PENDING") != 0 ? end : 0;
    if (r.run == 1)
        assert_int_equal(store_job_insert(f->st, &j), 0);
    snprintf(r.nodes, sizeof r.nodes, ",%s,", node);
    assert_int_equal(store_run_add(f->st, &r), 0);
    if (end)
        assert_int_equal(store_run_end(f->st, id, end, state, cause), 0);
}

struct usage_sum {
    int64_t gpu_ms, cpu_ms, runs, preempt, preempt_gpu_ms;
    char keys[256];
};

static int usage_sum_cb(void *arg, const struct store_report_row *r)
{
    struct usage_sum *u = arg;
    u->gpu_ms += r->gpu_ms;
    u->cpu_ms += r->cpu_ms;
    u->runs += r->runs;
    u->preempt += r->preemptions;
    u->preempt_gpu_ms += r->preempt_gpu_ms;
    snprintf(u->keys + strlen(u->keys), sizeof u->keys - strlen(u->keys), "%s/%s=%lld;", r->key,
             r->gpu_type, (long long)r->gpu_ms);
    return 0;
}

struct idle_sum {
    int64_t ms;
    char keys[128];
};

static int idle_sum_cb(void *arg, const char *key, int64_t idle_gpu_ms)
{
    struct idle_sum *u = arg;
    u->ms += idle_gpu_ms;
    snprintf(u->keys + strlen(u->keys), sizeof u->keys - strlen(u->keys), "%s=%lld;", key,
             (long long)idle_gpu_ms);
    return 0;
}

/* Idle GPU time: a job's idle node time x its GPUs per node, in the share of its sampled
 * span inside the window; a busy job adds nothing. */
static void report_idle_from_summaries(void **state)
{
    struct fx *f = *state;
    struct store_node n = {.name = "gpu01",
                           .state = "UP",
                           .gpu_type = "H100",
                           .gpus = 8,
                           .labels = "{}",
                           .info = "{}"};
    assert_int_equal(store_node_put(f->st, &n), 0);
    run_job(f, 1, "vision", "high", 4, 1, "gpu01", 0, 500, 0, "", "");
    run_job(f, 2, "nlp", "low", 2, 1, "gpu01", 0, 500, 0, "", "");
    for (int64_t t = 1000; t <= 5000; t += 1000) {
        for (uint64_t job = 1; job <= 2; job++) {
            struct store_usage_point p = {.job = job,
                                          .run = 1,
                                          .node = "gpu01",
                                          .time_ms = t,
                                          .cpu_ms = -1,
                                          .mem_bytes = -1,
                                          .mem_peak_bytes = -1,
                                          .io_read_bytes = -1,
                                          .io_write_bytes = -1,
                                          .gpu_util = job == 1 ? 2 : 50,
                                          .gpu_mem_mb = -1,
                                          .gpu_power_mw = -1,
                                          .gpu_temp_c = -1,
                                          .gpu_errors = -1};
            assert_int_equal(store_usage_add(f->st, &p, "declared", 5, NULL), 0);
        }
    }
    struct idle_sum u = {0};
    /* job 1: idle 4000 ms (the spans between its samples) x 4 GPUs, all inside */
    assert_int_equal(store_report_idle(f->st, STORE_BY_PROJECT, 0, 10000, idle_sum_cb, &u), 0);
    assert_string_equal(u.keys, "vision=16000;");
    /* half of its span [1000, 5000] inside [3000, 10000) */
    memset(&u, 0, sizeof u);
    assert_int_equal(store_report_idle(f->st, STORE_BY_GPU_TYPE, 3000, 10000, idle_sum_cb, &u), 0);
    assert_string_equal(u.keys, "H100=8000;");
    /* a window after its last sample: nothing */
    memset(&u, 0, sizeof u);
    assert_int_equal(store_report_idle(f->st, STORE_BY_PROJECT, 6000, 10000, idle_sum_cb, &u), 0);
    assert_int_equal(u.ms, 0);
}

/* GPU time is each run's part inside the window, in device-milliseconds, exactly. */
static void report_usage_clips_runs(void **state)
{
    struct fx *f = *state;
    struct store_node n = {.name = "gpu01",
                           .state = "UP",
                           .gpu_type = "H100",
                           .gpus = 8,
                           .labels = "{}",
                           .info = "{}"};
    assert_int_equal(store_node_put(f->st, &n), 0);
    run_job(f, 1, "vision", "high", 4, 1, "gpu01", 0, 1000, 11000, "COMPLETED", "");
    run_job(f, 2, "vision", "high", 2, 2, "gpu01", 0, 5000, 0, "", ""); /* still open */
    run_job(f, 3, "nlp", "low", 1, 1, "gpu01", 0, 500, 3000, "PENDING", "preempted");
    run_job(f, 3, "nlp", "low", 1, 1, "gpu01", 0, 4000, 6000, "FAILED", "");
    run_job(f, 4, "nlp", "low", 8, 1, "gpu01", 0, 20000, 30000, "COMPLETED", ""); /* after */
    struct usage_sum u = {0};
    assert_int_equal(store_report_usage(f->st, STORE_BY_PROJECT, 2000, 12000, usage_sum_cb, &u), 0);
    /* job 1: 4 x 9000; job 2: 4 x 7000 (open, to until); job 3: 1 x 1000 + 1 x 2000 */
    assert_int_equal(u.gpu_ms, 36000 + 28000 + 3000);
    assert_int_equal(u.cpu_ms, 2 * 9000 + 4 * 7000 + 2 * 1000 + 2 * 2000);
    assert_int_equal(u.runs, 4);
    assert_int_equal(u.preempt, 1);
    assert_int_equal(u.preempt_gpu_ms, 1000);
    assert_string_equal(u.keys, "nlp/H100=3000;vision/H100=64000;");
    memset(&u, 0, sizeof u);
    assert_int_equal(store_report_usage(f->st, STORE_BY_TIER, 0, 100000, usage_sum_cb, &u), 0);
    assert_int_equal(u.gpu_ms, 40000 + 4 * 95000 + 2500 + 2000 + 80000);
}

struct waits {
    char text[256];
};

static int waits_cb(void *arg, const char *key, int64_t w)
{
    struct waits *x = arg;
    snprintf(x->text + strlen(x->text), sizeof x->text - strlen(x->text), "%s:%lld;", key,
             (long long)w);
    return 0;
}

static int outcomes_cb(void *arg, const char *key, const char *what, int64_t n)
{
    struct waits *x = arg;
    snprintf(x->text + strlen(x->text), sizeof x->text - strlen(x->text), "%s:%s=%lld;", key, what,
             (long long)n);
    return 0;
}

/* Waits count from the submission, or from the end of the run before; outcomes are the
 * jobs that ended inside the window. */
static void report_waits_and_outcomes(void **state)
{
    struct fx *f = *state;
    run_job(f, 1, "vision", "high", 1, 1, "gpu01", 100, 1000, 2000, "COMPLETED", "");
    run_job(f, 2, "nlp", "low", 1, 1, "gpu01", 0, 500, 3000, "PENDING", "preempted");
    run_job(f, 2, "nlp", "low", 1, 1, "gpu01", 0, 7000, 9000, "FAILED", "");
    struct store_job j;
    assert_int_equal(store_job_get(f->st, 2, &j), 0);
    j.state = SCHED_FAILED;
    assert_int_equal(store_job_update(f->st, &j), 0);
    store_job_release(&j);
    struct waits w = {""};
    assert_int_equal(store_report_waits(f->st, STORE_BY_PROJECT, 0, 10000, waits_cb, &w), 0);
    assert_string_equal(w.text, "nlp:500;nlp:4000;vision:900;");
    memset(&w, 0, sizeof w);
    assert_int_equal(store_report_outcomes(f->st, STORE_BY_TIER, 0, 10000, outcomes_cb, &w), 0);
    assert_string_equal(w.text, "high:COMPLETED=1;low:FAILED=1;");
}

static int history_cb(void *arg, const struct store_alert *a)
{
    struct waits *x = arg;
    snprintf(x->text + strlen(x->text), sizeof x->text - strlen(x->text), "%lld:%s:%s:%lld;",
             (long long)a->id, a->rule, a->key, (long long)a->resolved_ms);
    return 0;
}

static int silences_cb(void *arg, const struct store_silence *s)
{
    struct waits *x = arg;
    snprintf(x->text + strlen(x->text), sizeof x->text - strlen(x->text), "%s:%s:%s;", s->rule,
             s->key, s->reason);
    return 0;
}

/* History: open rows, resolve, list newest first, bounded by age and by rows. */
static void alert_history_and_silences(void **state)
{
    struct fx *f = *state;
    int64_t id[4];
    for (int i = 0; i < 4; i++) {
        struct store_alert a = {.fired_ms = 100 * (i + 1)};
        snprintf(a.rule, sizeof a.rule, "r%d", i);
        snprintf(a.key, sizeof a.key, "k");
        assert_int_equal(store_alert_fire(f->st, &a, &id[i]), 0);
    }
    assert_int_equal(store_alert_resolve(f->st, id[0], 1000), 0);
    assert_int_equal(store_alert_resolve(f->st, id[1], 5000), 0);
    struct waits w = {""};
    assert_int_equal(store_alert_list(f->st, true, 0, 10, history_cb, &w), 0);
    assert_string_equal(w.text, "4:r3:k:0;3:r2:k:0;");
    memset(&w, 0, sizeof w);
    assert_int_equal(store_alert_list(f->st, false, 3, 10, history_cb, &w), 0);
    assert_string_equal(w.text, "2:r1:k:5000;1:r0:k:1000;");
    /* resolved before 2000 goes; open rows stay whatever their age */
    assert_int_equal(store_alert_prune(f->st, 2000, 100), 0);
    memset(&w, 0, sizeof w);
    assert_int_equal(store_alert_list(f->st, false, 0, 10, history_cb, &w), 0);
    assert_string_equal(w.text, "4:r3:k:0;3:r2:k:0;2:r1:k:5000;");
    /* past max rows the oldest resolved go */
    assert_int_equal(store_alert_prune(f->st, 0, 2), 0);
    memset(&w, 0, sizeof w);
    assert_int_equal(store_alert_list(f->st, false, 0, 10, history_cb, &w), 0);
    assert_string_equal(w.text, "4:r3:k:0;3:r2:k:0;");

    struct store_silence s = {.until_ms = 500};
    int64_t sid, sid2;
    snprintf(s.rule, sizeof s.rule, "node-down");
    snprintf(s.reason, sizeof s.reason, "maintenance");
    assert_int_equal(store_silence_add(f->st, &s, &sid), 0);
    s.until_ms = 5000;
    snprintf(s.key, sizeof s.key, "gpu01");
    assert_int_equal(store_silence_add(f->st, &s, &sid2), 0);
    memset(&w, 0, sizeof w);
    assert_int_equal(store_silence_list(f->st, 1000, silences_cb, &w), 0); /* first ended */
    assert_string_equal(w.text, "node-down:gpu01:maintenance;");
    assert_int_equal(store_silence_delete(f->st, sid), -ENOENT);
    assert_int_equal(store_silence_delete(f->st, sid2), 0);
}

/* Big arrays (docs/controller.md "Big submissions"): an array written in slices: its rows
 * in the database under a marker, which lists respect and a discard or a rollback undoes
 * whole, leaving every other row alone. */
static int count_cb(void *arg, const struct store_job *j)
{
    (void)j;
    (*(int *)arg)++;
    return 0;
}

static int listed(struct fx *f)
{
    int n = 0;
    struct store_job_filter flt = {.limit = 100};
    assert_int_equal(store_job_list(f->st, &flt, count_cb, &n), 0);
    return n;
}

static char *count_of(struct fx *f, const char *sql, char *buf, size_t len)
{
    raw_sql(f, sql, buf, len);
    return buf;
}

/* "1,2,3": column `col` of every row of `table`, in ascending order, in each engine's SQL. */
static char *ids_of(struct fx *f, const char *col, const char *table, char *buf, size_t len)
{
    char sql[160];
    if (fx_pg(f))
        snprintf(sql, sizeof(sql), "SELECT string_agg(%s::text, ',' ORDER BY %s) FROM %s", col, col,
                 table);
    else
        snprintf(sql, sizeof(sql), "SELECT group_concat(%s) FROM (SELECT %s FROM %s ORDER BY %s)",
                 col, col, table, col);
    raw_sql(f, sql, buf, len);
    return buf;
}

/* Tasks first..first+n-1 of array `first` (spec stored once), each with a submit event. */
static void put_array(struct fx *f, uint64_t first, int n)
{
    assert_int_equal(store_spec_put(f->st, first, "{\"gpus\":1}", "{\"gpus\":1}"), 0);
    for (int k = 0; k < n; k++) {
        struct store_job j = make_job(first + (uint64_t)k, "vision", 0);
        j.array_id = first;
        j.spec_id = first;
        assert_int_equal(store_job_insert(f->st, &j), 0);
        struct store_event e = {first + (uint64_t)k, 1, "submit", "", "PENDING", "", "", "", 0};
        assert_int_equal(store_event_add(f->st, &e), 0);
    }
}

/* What store_set_job_write_hook reports: the id of every row of jobs, job_specs and
 * arrays_writing a statement writes (insert, update, delete, discard), rolled back or
 * not, and nothing for other tables (a job's events, holds). */
struct written_ids {
    char got[256];
};

static void note_written(void *arg, uint64_t id)
{
    struct written_ids *w = arg;
    char one[24];
    snprintf(one, sizeof(one), "%llu,", (unsigned long long)id);
    strncat(w->got, one, sizeof(w->got) - 1 - strlen(w->got));
}

static void expect_written(struct written_ids *w, const char *want)
{
    assert_string_equal(w->got, want);
    w->got[0] = '\0';
}

static void job_write_hook_reports_every_job_row(void **state)
{
    struct fx *f = *state;
    struct written_ids w = {""};
    store_set_job_write_hook(f->st, note_written, &w);
    struct store_job j = make_job(7, "p", 0);
    assert_int_equal(store_job_insert(f->st, &j), 0);
    expect_written(&w, "7,");
    j.state = 5;
    assert_int_equal(store_job_update(f->st, &j), 0);
    expect_written(&w, "7,");
    struct store_event e = {7, 1, "submit", "", "PENDING", "", "", "", 0};
    assert_int_equal(store_event_add(f->st, &e), 0);
    assert_int_equal(store_hold_put(f->st, 7, "alice", "owner"), 0);
    expect_written(&w, ""); /* other tables: nothing */
    /* an array: its marker, its spec, its tasks, then the marker cleared */
    assert_int_equal(store_array_writing_put(f->st, 11, 2, 1000), 0);
    expect_written(&w, "11,");
    put_array(f, 11, 2);
    expect_written(&w, "11,11,12,"); /* the spec, then the tasks */
    assert_int_equal(store_array_writing_clear(f->st, 11), 0);
    expect_written(&w, "11,");
    /* a discarded array reports each row it deletes */
    assert_int_equal(store_array_writing_put(f->st, 20, 2, 2000), 0);
    put_array(f, 20, 2);
    expect_written(&w, "20,20,20,21,");
    assert_int_equal(store_array_discard(f->st, 20), 0);
    assert_non_null(strstr(w.got, "21,"));
    assert_non_null(strstr(w.got, "20,"));
    w.got[0] = '\0';
    /* a write in a transaction that rolls back was still reported */
    assert_int_equal(store_begin(f->st), 0);
    struct store_job k = make_job(30, "p", 0);
    assert_int_equal(store_job_insert(f->st, &k), 0);
    assert_int_equal(store_rollback(f->st), 0);
    expect_written(&w, "30,");
    /* removed: nothing more */
    store_set_job_write_hook(f->st, NULL, NULL);
    k.id = 31;
    assert_int_equal(store_job_insert(f->st, &k), 0);
    expect_written(&w, "");
}

static void array_marker_and_discard(void **state)
{
    struct fx *f = *state;
    char got[64];
    uint64_t ids[4];
    size_t n = 9;
    struct store_job own = make_job(5, "vision", 0);
    struct store_event e5 = {5, 1, "submit", "", "PENDING", "", "", "", 0};
    assert_int_equal(store_job_insert(f->st, &own), 0);
    assert_int_equal(store_event_add(f->st, &e5), 0);
    assert_int_equal(store_arrays_writing(f->st, ids, 4, &n), 0);
    assert_int_equal(n, 0);
    /* the marker first, as the first slice writes it, then two of its three tasks */
    assert_int_equal(store_array_writing_put(f->st, 11, 3, 1000), 0);
    put_array(f, 11, 2);
    assert_int_equal(store_arrays_writing(f->st, ids, 4, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 11);
    assert_int_equal(listed(f), 1); /* an array being written is not listed yet */
    /* the last slice clears it: the array is there */
    struct store_job j = make_job(13, "vision", 0);
    j.array_id = 11;
    j.spec_id = 11;
    assert_int_equal(store_job_insert(f->st, &j), 0);
    assert_int_equal(store_array_writing_clear(f->st, 11), 0);
    assert_int_equal(listed(f), 4);
    assert_int_equal(store_array_writing_clear(f->st, 11), -ENOENT);
    assert_non_null(strstr(store_errmsg(f->st), "not being written"));
    /* a second array fails half-way: discarded whole, the rest untouched */
    assert_int_equal(store_array_writing_put(f->st, 20, 5, 2000), 0);
    assert_int_equal(store_array_writing_put(f->st, 20, 5, 2000), -EIO); /* one marker */
    put_array(f, 20, 3);
    assert_int_equal(store_hold_put(f->st, 21, "alice", "owner"), 0);
    assert_int_equal(listed(f), 4);
    assert_int_equal(store_array_discard(f->st, 20), 0);
    assert_string_equal(count_of(f, "SELECT count(*) FROM jobs WHERE array_id = 20", got, 64), "0");
    assert_string_equal(count_of(f, "SELECT count(*) FROM job_events WHERE job >= 20", got, 64),
                        "0");
    assert_string_equal(count_of(f, "SELECT count(*) FROM job_specs WHERE id = 20", got, 64), "0");
    assert_string_equal(count_of(f, "SELECT count(*) FROM job_holds", got, 64), "0");
    assert_string_equal(count_of(f, "SELECT count(*) FROM arrays_writing", got, 64), "0");
    /* what is not the array's stays: job 5, array 11, their events and spec */
    assert_string_equal(count_of(f, "SELECT count(*) FROM jobs", got, 64), "4");
    assert_string_equal(count_of(f, "SELECT count(*) FROM job_events", got, 64), "3");
    assert_string_equal(count_of(f, "SELECT count(*) FROM job_specs", got, 64), "1");
}

/* What a dependency on a whole array reads of it: its tasks, those ended, those of them
 * that did not complete, and whether it is still being written. */
static void array_tally_counts_tasks(void **state)
{
    struct fx *f = *state;
    struct store_array_tally t;
    assert_int_equal(store_array_tally(f->st, 11, &t), 0);
    assert_int_equal(t.tasks, 0); /* no such array */
    assert_int_equal(store_array_writing_put(f->st, 11, 4, 1000), 0);
    put_array(f, 11, 4);
    assert_int_equal(store_array_tally(f->st, 11, &t), 0);
    assert_int_equal(t.tasks, 4);
    assert_int_equal(t.ended, 0);
    assert_true(t.writing);
    assert_int_equal(store_array_writing_clear(f->st, 11), 0);
    const int states[] = {SCHED_COMPLETED, SCHED_FAILED, SCHED_RUNNING};
    for (int i = 0; i < 3; i++) {
        struct store_job j;
        assert_int_equal(store_job_get(f->st, 11 + (uint64_t)i, &j), 0);
        j.state = states[i];
        assert_int_equal(store_job_update(f->st, &j), 0);
        store_job_release(&j);
    }
    assert_int_equal(store_array_tally(f->st, 11, &t), 0);
    assert_int_equal(t.tasks, 4);
    assert_int_equal(t.ended, 2);
    assert_int_equal(t.failed, 1);
    assert_false(t.writing);
}

/* docketd's checkpoints (store_set_external_checkpoint, docs/controller.md "Checkpoints"):
 * no COMMIT on the main connection copies the WAL back (it only grows, past SQLite's
 * 1,000-page threshold), and store_ckpt_run on a connection of its own does: the next
 * commit reuses the WAL from its start, and a TRUNCATE empties the file. */
static void checkpoints_off_the_writer(void **state)
{
    struct fx *f = *state;
    char err[256], wal[160];
    struct stat sb;
    struct store_ckpt_result r;
    snprintf(wal, sizeof(wal), "%s-wal", f->path);
    assert_int_equal(store_wal_autocheckpoint(f->st), 1000); /* SQLite's default */
    assert_int_equal(store_set_external_checkpoint(f->st), 0);
    assert_int_equal(store_wal_autocheckpoint(f->st), 0);
    /* 200 jobs of a 40 KB script (~10 pages each), 10 a commit */
    size_t n = 40000;
    char *spec = malloc(n + 32);
    assert_non_null(spec);
    int off = snprintf(spec, n + 32, "{\"script\":\"");
    memset(spec + off, 'x', n);
    snprintf(spec + off + n, 32, "\"}");
    int last = 0;
    for (uint64_t id = 100; id < 300; id += 10) {
        assert_int_equal(store_begin(f->st), 0);
        for (uint64_t i = id; i < id + 10; i++) {
            struct store_job j = make_job(i, "vision", 0);
            j.spec = spec;
            assert_int_equal(store_job_insert(f->st, &j), 0);
        }
        assert_int_equal(store_commit(f->st), 0);
        /* an automatic checkpoint would reset the WAL after 1,000 pages */
        assert_true(store_wal_frames(f->st) > last);
        last = store_wal_frames(f->st);
    }
    free(spec);
    assert_true(last > 1500);
    struct store_ckpt *k = store_ckpt_open(store_path(f->st), err, sizeof(err));
    assert_non_null(k);
    assert_int_equal(store_ckpt_run(k, STORE_CKPT_PASSIVE, 0, &r), 0);
    assert_int_equal(r.log_frames, last);
    assert_int_equal(r.copied_frames, last);
    /* all copied, no reader behind: the next commit writes the WAL from its first frame */
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_counter_set(f->st, "next_job_id", 300), 0);
    assert_int_equal(store_commit(f->st), 0);
    assert_true(store_wal_frames(f->st) < 10);
    assert_int_equal(stat(wal, &sb), 0);
    assert_true(sb.st_size > 1500 * 4096); /* reused, not shrunk */
    assert_int_equal(store_ckpt_run(k, STORE_CKPT_TRUNCATE, 100, &r), 0);
    assert_int_equal(stat(wal, &sb), 0);
    assert_int_equal(sb.st_size, 0);
    store_ckpt_close(k);
    reopen(f);
    assert_int_equal(store_job_count(f->st), 200);
}

/* A failed array's cleanup in steps (store_array_discard_step, one loop turn each in
 * docketd): the lowest tasks first with their events and holds, the spec and the marker
 * only with the last step, so a restart between two steps rolls back what is left. */
static void array_discarded_in_steps(void **state)
{
    struct fx *f = *state;
    char got[64];
    size_t deleted = 9, rolled = 9;
    bool done = true;
    struct store_job own = make_job(5, "vision", 0);
    assert_int_equal(store_job_insert(f->st, &own), 0);
    assert_int_equal(store_array_writing_put(f->st, 10, 5, 1000), 0);
    put_array(f, 10, 5);
    assert_int_equal(store_hold_put(f->st, 11, "alice", "owner"), 0);
    assert_int_equal(store_hold_put(f->st, 14, "alice", "owner"), 0);
    assert_int_equal(store_array_discard_step(f->st, 10, 2, &deleted, &done), 0);
    assert_int_equal(deleted, 2);
    assert_false(done);
    assert_string_equal(ids_of(f, "id", "jobs", got, 64), "5,12,13,14");
    assert_string_equal(ids_of(f, "job", "job_events", got, 64), "12,13,14");
    assert_string_equal(ids_of(f, "job", "job_holds", got, 64), "14");
    assert_string_equal(count_of(f, "SELECT count(*) FROM job_specs", got, 64), "1");
    assert_string_equal(count_of(f, "SELECT count(*) FROM arrays_writing", got, 64), "1");
    assert_int_equal(store_array_discard_step(f->st, 10, 2, &deleted, &done), 0);
    assert_int_equal(deleted, 2);
    assert_false(done);
    assert_int_equal(store_array_discard_step(f->st, 10, 2, &deleted, &done), 0);
    assert_int_equal(deleted, 1);
    assert_true(done);
    assert_string_equal(ids_of(f, "id", "jobs", got, 64), "5");
    assert_string_equal(count_of(f, "SELECT count(*) FROM job_events", got, 64), "0");
    assert_string_equal(count_of(f, "SELECT count(*) FROM job_holds", got, 64), "0");
    assert_string_equal(count_of(f, "SELECT count(*) FROM job_specs", got, 64), "0");
    assert_string_equal(count_of(f, "SELECT count(*) FROM arrays_writing", got, 64), "0");
    /* steps that end on an exact multiple: the last one finds no task and ends it */
    assert_int_equal(store_array_writing_put(f->st, 20, 4, 1000), 0);
    put_array(f, 20, 4);
    assert_int_equal(store_array_discard_step(f->st, 20, 2, &deleted, &done), 0);
    assert_int_equal(store_array_discard_step(f->st, 20, 2, &deleted, &done), 0);
    assert_int_equal(deleted, 2);
    assert_false(done);
    assert_string_equal(count_of(f, "SELECT count(*) FROM arrays_writing", got, 64), "1");
    assert_int_equal(store_array_discard_step(f->st, 20, 2, &deleted, &done), 0);
    assert_int_equal(deleted, 0);
    assert_true(done);
    assert_string_equal(count_of(f, "SELECT count(*) FROM arrays_writing", got, 64), "0");
    /* docketd stops between two steps: the marker is still there, the start rolls back */
    assert_int_equal(store_array_writing_put(f->st, 30, 6, 1000), 0);
    put_array(f, 30, 6);
    assert_int_equal(store_array_discard_step(f->st, 30, 4, &deleted, &done), 0);
    assert_int_equal(deleted, 4);
    reopen(f);
    assert_int_equal(store_arrays_rollback(f->st, &rolled), 0);
    assert_int_equal(rolled, 1);
    assert_string_equal(ids_of(f, "id", "jobs", got, 64), "5");
    assert_string_equal(count_of(f, "SELECT count(*) FROM job_specs", got, 64), "0");
    assert_string_equal(count_of(f, "SELECT count(*) FROM arrays_writing", got, 64), "0");
}

static void arrays_rolled_back_at_start(void **state)
{
    struct fx *f = *state;
    char got[64];
    size_t rolled = 9;
    /* array 1 is whole; 100 and 200 were being written when docketd stopped */
    put_array(f, 1, 3);
    assert_int_equal(store_array_writing_put(f->st, 100, 10, 1000), 0);
    put_array(f, 100, 4);
    assert_int_equal(store_array_writing_put(f->st, 200, 10, 1000), 0);
    put_array(f, 200, 1);
    assert_int_equal(store_counter_set(f->st, "next_job_id", 210), 0);
    reopen(f);
    assert_int_equal(store_arrays_rollback(f->st, &rolled), 0);
    assert_int_equal(rolled, 2);
    assert_string_equal(ids_of(f, "id", "jobs", got, 64), "1,2,3");
    assert_string_equal(count_of(f, "SELECT count(*) FROM job_events", got, 64), "3");
    assert_string_equal(ids_of(f, "id", "job_specs", got, 64), "1");
    assert_string_equal(count_of(f, "SELECT count(*) FROM arrays_writing", got, 64), "0");
    /* the ids the arrays reserved stay used */
    int64_t next = 0;
    assert_int_equal(store_counter_get(f->st, "next_job_id", &next), 0);
    assert_int_equal(next, 210);
    assert_false(store_in_tx(f->st)); /* committed */
    assert_int_equal(store_arrays_rollback(f->st, &rolled), 0);
    assert_int_equal(rolled, 0);
}

/* --import-sqlite (store_import_sqlite): a SQLite database written through the store is
 * copied whole into the PostgreSQL one: jobs, events (their ids go on after the copied
 * ones), sealed secrets byte for byte, the audit chain (still whole), counters. Into one
 * that holds state it is refused; on SQLite there is nothing to import into. */
static void import_from_sqlite(void **state)
{
    struct fx *f = *state;
    char dir[] = "/tmp/store-import.XXXXXX", path[64], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/docket.db", dir);
    struct store *src = store_open(path, err, sizeof(err));
    assert_non_null(src);
    struct store_job j = make_job(3, "vision", SCHED_RUNNING);
    assert_int_equal(store_job_insert(src, &j), 0);
    struct store_event e = {3, 10, "submit", "", "PENDING", "", "", "", 0};
    assert_int_equal(store_event_add(src, &e), 0);
    assert_int_equal(store_event_add(src, &e), 0);
    assert_int_equal(store_counter_set(src, "next_job_id", 4), 0);
    unsigned char sealed[5] = {0, 0xff, 0, 'x', 0};
    struct store_secret s = {.project = "vision",
                             .name = "K",
                             .sealed = sealed,
                             .sealed_len = sizeof(sealed),
                             .set_by = "alice",
                             .set_ms = 7};
    memset(s.nonce, 0, sizeof(s.nonce));
    assert_int_equal(store_secret_put(src, &s), 0);
    struct store_audit a = {0, 10, "alice", "job.submit", "job:3", NULL, "{}", ""};
    assert_int_equal(store_audit_add(src, &a), 0);
    assert_int_equal(store_audit_add(src, &a), 0);
    store_close(src);

    struct store_import_stats stats;
    if (!fx_pg(f)) {
        assert_int_equal(store_import_sqlite(f->st, path, &stats, err, sizeof(err)), -EINVAL);
    } else {
        assert_int_equal(store_import_sqlite(f->st, path, &stats, err, sizeof(err)), 0);
        /* services: 13, storage_areas: 16, lifecycle_runs: 17, storage_usage: 18,
         * submit_keys: 21, log_archives: 22 */
        assert_int_equal(stats.tables, 26);
        struct store_job out;
        assert_int_equal(store_job_get(f->st, 3, &out), 0);
        assert_int_equal(out.state, SCHED_RUNNING);
        assert_string_equal(out.spec, "{\"command\":[\"true\"]}");
        store_job_release(&out);
        int64_t next = 0;
        assert_int_equal(store_counter_get(f->st, "next_job_id", &next), 0);
        assert_int_equal(next, 4);
        struct store_secret got;
        assert_int_equal(store_secret_get(f->st, "vision", "K", &got), 0);
        assert_int_equal(got.sealed_len, sizeof(sealed));
        assert_memory_equal(got.sealed, sealed, sizeof(sealed));
        store_secret_release(&got);
        struct store_audit_check v;
        assert_int_equal(store_audit_verify(f->st, NULL, &v), 0);
        assert_int_equal(v.checked, 2);
        assert_int_equal(v.first_bad, 0);
        assert_int_equal(store_event_add(f->st, &e), 0); /* a new id, after the copied two */
        char ids[64];
        assert_string_equal(ids_of(f, "id", "job_events", ids, sizeof(ids)), "1,2,3");
        /* a second import would merge: refused, nothing changed */
        assert_int_equal(store_import_sqlite(f->st, path, &stats, err, sizeof(err)), -EEXIST);
        assert_non_null(strstr(err, "holds state already"));
        assert_string_equal(ids_of(f, "id", "job_events", ids, sizeof(ids)), "1,2,3");
    }
    unlink(path);
    snprintf(err, sizeof(err), "%s-wal", path);
    unlink(err);
    snprintf(err, sizeof(err), "%s-shm", path);
    unlink(err);
    rmdir(dir);
}

/* A PostgreSQL URI's password is never in a message (the log, docketd's stderr). */
/* Services (schema 13): put inserts then replaces, get reads back, list by name, delete. */
static int count_services(void *arg, const struct store_service *sv)
{
    json_t *names = arg;
    json_array_append_new(names, json_string(sv->name));
    return 0;
}

static void services_round_trip(void **state)
{
    struct fx *f = *state;
    struct store_service sv = {.name = "web",
                               .project = "p",
                               .user = "ann",
                               .spec = "{\"name\":\"web\"}",
                               .status = "{}",
                               .created_ms = 5,
                               .updated_ms = 6};
    struct store_service got;
    assert_int_equal(store_service_get(f->st, "web", &got), -ENOENT);
    assert_int_equal(store_service_put(f->st, &sv), 0);
    sv.status = "{\"next_slot\":2}";
    sv.updated_ms = 9;
    sv.created_ms = 7; /* a replace keeps the creation time */
    assert_int_equal(store_service_put(f->st, &sv), 0);
    str_copy(sv.name, sizeof(sv.name), "api");
    assert_int_equal(store_service_put(f->st, &sv), 0);
    /* the endpoint's port (schema 19): kept, and one service's alone */
    sv.endpoint_port = 30001;
    assert_int_equal(store_service_put(f->st, &sv), 0);
    str_copy(sv.name, sizeof(sv.name), "web");
    assert_true(store_service_put(f->st, &sv) < 0);
    assert_int_equal(store_service_get(f->st, "api", &got), 0);
    assert_int_equal(got.endpoint_port, 30001);
    store_service_release(&got);
    assert_int_equal(store_service_get(f->st, "web", &got), 0);
    assert_int_equal(got.endpoint_port, 0);
    assert_string_equal(got.status, "{\"next_slot\":2}");
    assert_string_equal(got.user, "ann");
    assert_int_equal(got.created_ms, 5);
    assert_int_equal(got.updated_ms, 9);
    store_service_release(&got);
    json_t *names = json_array();
    assert_int_equal(store_service_list(f->st, count_services, names), 0);
    assert_int_equal(json_array_size(names), 2);
    assert_string_equal(json_string_value(json_array_get(names, 0)), "api");
    json_decref(names);
    assert_int_equal(store_service_delete(f->st, "web"), 0);
    assert_int_equal(store_service_delete(f->st, "web"), -ENOENT);
    reopen(f);
    assert_int_equal(store_service_get(f->st, "api", &got), 0);
    store_service_release(&got);
}

static void password_never_in_messages(void **state)
{
    (void)state;
    char err[512];
    assert_null(
        store_open("postgresql://docket:pa55word@/docket?host=/nonexistent/dir", err, sizeof(err)));
    assert_non_null(strstr(err, "PostgreSQL"));
    assert_null(strstr(err, "pa55word"));
    assert_null(
        store_open_readonly("postgres://u:pa55word@/x?host=/nonexistent/dir", err, sizeof(err)));
    assert_null(strstr(err, "pa55word"));
    assert_null(store_open("postgresql:///d?host=/nonexistent/dir&password=pa55word&a=b", err,
                           sizeof(err)));
    assert_null(strstr(err, "pa55word"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(migrates_from_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(refuses_newer_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(counters, setup, teardown),
        cmocka_unit_test_setup_teardown(audit_hash_chain, setup, teardown),
        cmocka_unit_test_setup_teardown(audit_anchor, setup, teardown),
        cmocka_unit_test_setup_teardown(members_holds_and_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(token_list_and_revoke, setup, teardown),
        cmocka_unit_test_setup_teardown(token_revoke_takes_descendants, setup, teardown),
        cmocka_unit_test_setup_teardown(default_projects, setup, teardown),
        cmocka_unit_test_setup_teardown(job_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(job_update, setup, teardown),
        cmocka_unit_test_setup_teardown(job_respec, setup, teardown),
        cmocka_unit_test_setup_teardown(array_spec_stored_once, setup, teardown),
        cmocka_unit_test_setup_teardown(job_list_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(job_list_kept_statements, setup, teardown),
        cmocka_unit_test_setup_teardown(events_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(nodes_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(projects_and_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(services_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(secrets_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(storage_areas_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(lifecycle_runs_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(storage_usage_integrated, setup, teardown),
        cmocka_unit_test_setup_teardown(log_archives_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(storage_samples_rolled_up, setup, teardown),
        cmocka_unit_test_setup_teardown(audit_append_only, setup, teardown),
        cmocka_unit_test_setup_teardown(audit_verify_in_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(group_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(external_sync, setup, teardown),
        cmocka_unit_test_setup_teardown(states_and_kinds_stored_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(migrates_schema2_database, setup, teardown),
        cmocka_unit_test_setup_teardown(migrates_schema3_database, setup, teardown),
        cmocka_unit_test_setup_teardown(migrates_schema8_database, setup, teardown),
        cmocka_unit_test_setup_teardown(migration_refuses_an_unknown_state_number, setup, teardown),
        cmocka_unit_test_setup_teardown(leadership, setup, teardown),
        cmocka_unit_test_setup_teardown(runs_and_live_credentials, setup, teardown),
        cmocka_unit_test_setup_teardown(opens_read_only, setup, teardown),
        cmocka_unit_test_setup_teardown(report_usage_clips_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(report_idle_from_summaries, setup, teardown),
        cmocka_unit_test_setup_teardown(report_waits_and_outcomes, setup, teardown),
        cmocka_unit_test_setup_teardown(alert_history_and_silences, setup, teardown),
        cmocka_unit_test_setup_teardown(array_tally_counts_tasks, setup, teardown),
        cmocka_unit_test_setup_teardown(array_marker_and_discard, setup, teardown),
        cmocka_unit_test_setup_teardown(submit_keys_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(job_write_hook_reports_every_job_row, setup, teardown),
        cmocka_unit_test_setup_teardown(array_discarded_in_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(arrays_rolled_back_at_start, setup, teardown),
        cmocka_unit_test_setup_teardown(checkpoints_off_the_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(import_from_sqlite, setup, teardown),
        cmocka_unit_test_setup_teardown(read_cache_follows_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_blind_write_ends_the_transaction, setup, teardown),
        cmocka_unit_test(password_never_in_messages),
    };
    /* On PostgreSQL (with-pg.sh), the tests of what only SQLite has are left out: its WAL,
     * its column types, and the migrations of databases written before PostgreSQL was an
     * engine (a PostgreSQL database starts at schema 11 whole). */
    static void (*const sqlite_only[])(void **) = {
        external_sync,
        states_and_kinds_stored_by_name,
        migrates_schema2_database,
        migration_refuses_an_unknown_state_number,
        migrates_schema3_database,
        migrates_schema8_database,
        checkpoints_off_the_writer,
    };
    struct CMUnitTest pg[sizeof(tests) / sizeof(tests[0])];
    size_t npg = 0;
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        bool keep = true;
        for (size_t k = 0; k < sizeof(sqlite_only) / sizeof(sqlite_only[0]); k++)
            keep = keep && tests[i].test_func != sqlite_only[k];
        if (keep)
            pg[npg++] = tests[i];
    }
    const char *dsn = getenv("DOCKET_TEST_PG_DSN");
    if (dsn && dsn[0])
        return _cmocka_run_group_tests("test_store_pg", pg, npg, NULL, NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
