/* test_lifecycle.c - unit tests of protocol/lifecycle.h: the policy's lifecycle rules read
 * and refused field by field; a run and a result read back exactly from their writers;
 * the pure rules: when a file is due (atime or mtime, marker, glob), when a rule is due;
 * the policy's log_archive read and refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "protocol/lifecycle.h"

#define DAY ((int64_t)86400 * 1000)

static json_t *doc(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    if (!j)
        fail_msg("bad test json: %s", je.text);
    return j;
}

static const char *const pools =
    "\"pools\": [{\"name\": \"hot\", \"path\": \"/mnt/hot\"}, {\"name\": \"cold\", \"path\":"
    " \"/srv/cold\", \"class\": \"cold\"}, {\"name\": \"scr\", \"path\": \"/scr\", \"class\":"
    " \"scratch\"}]";

/* The storage section with these rules; rc of the parse, the error's message in msg. */
static int parse_rules(const char *rules, struct storage_policy *p, char *msg, size_t len)
{
    char text[2048];
    snprintf(text, sizeof(text), "{%s, \"lifecycle\": [%s]}", pools, rules);
    json_t *j = doc(text);
    struct proto_error e = {0};
    int rc = storage_policy_parse(j, p, &e);
    json_decref(j);
    snprintf(msg, len, "%s", e.message);
    return rc;
}

static void rules_read_and_written_back(void **state)
{
    (void)state;
    static struct storage_policy p, q;
    char msg[256];
    int rc = parse_rules("{\"name\": \"cool\", \"pool\": \"hot\", \"action\": \"move\", \"to\":"
                         " \"cold\", \"after\": \"30d\", \"every\": \"1d\", \"rate\": \"100M\","
                         " \"projects\": [\"ml\"]}, {\"name\": \"purge\", \"pool\": \"scr\","
                         " \"action\": \"delete\", \"after\": \"7d\"}, {\"name\": \"tmp\","
                         " \"pool\": \"hot\", \"action\": \"delete\", \"after\": 3600,"
                         " \"marker\": true, \"glob\": \"*.tmp\"}",
                         &p, msg, sizeof(msg));
    if (rc)
        fail_msg("%s", msg);
    assert_int_equal(p.nrules, 3);
    const struct lifecycle_rule *r = lifecycle_rule_find(&p, "cool");
    assert_non_null(r);
    assert_int_equal(r->action, LC_MOVE);
    assert_string_equal(r->to, "cold");
    assert_int_equal(r->after_ms, 30 * DAY);
    assert_int_equal(r->every_ms, DAY);
    assert_int_equal(r->rate_bytes, (int64_t)100 << 20);
    assert_int_equal(r->nprojects, 1);
    r = lifecycle_rule_find(&p, "tmp");
    assert_true(r->marker);
    assert_string_equal(r->glob, "*.tmp");
    assert_int_equal(r->after_ms, 3600 * 1000);
    assert_int_equal(lifecycle_rule_find(&p, "purge")->every_ms, 0);
    /* written back and read again: the same rules */
    json_t *back = storage_policy_json(&p);
    struct proto_error e = {0};
    assert_int_equal(storage_policy_parse(back, &q, &e), 0);
    json_decref(back);
    assert_int_equal(q.nrules, 3);
    assert_memory_equal(p.rules, q.rules, sizeof(p.rules[0]) * 3);
}

static void rules_refused(void **state)
{
    (void)state;
    static struct storage_policy p;
    static const struct {
        const char *rule, *says;
    } bad[] = {
        {"{\"name\": \"a\", \"pool\": \"nope\", \"action\": \"delete\", \"after\": \"1d\"}",
         "unknown pool 'nope'"},
        {"{\"name\": \"a\", \"pool\": \"hot\", \"action\": \"move\", \"after\": \"1d\"}",
         "required for a move"},
        {"{\"name\": \"a\", \"pool\": \"hot\", \"action\": \"move\", \"to\": \"hot\", \"after\":"
         " \"1d\"}",
         "another pool"},
        {"{\"name\": \"a\", \"pool\": \"hot\", \"action\": \"delete\", \"after\": \"1d\"}",
         "needs marker: true or a glob"},
        {"{\"name\": \"a\", \"pool\": \"scr\", \"action\": \"delete\", \"to\": \"hot\", \"after\":"
         " \"1d\"}",
         "moves nothing"},
        {"{\"name\": \"a\", \"pool\": \"scr\", \"action\": \"purge\", \"after\": \"1d\"}",
         "move or delete"},
        {"{\"name\": \"a\", \"pool\": \"scr\", \"action\": \"delete\"}", "after is required"},
        {"{\"name\": \"a\", \"pool\": \"scr\", \"action\": \"delete\", \"after\": \"1d\","
         " \"every\": \"0\"}",
         "at least 1s"},
        {"{\"name\": \"a\", \"pool\": \"scr\", \"action\": \"delete\", \"after\": \"1d\","
         " \"glob\": \"a/b\"}",
         "no '/'"},
        {"{\"name\": \"a\", \"pool\": \"scr\", \"action\": \"delete\", \"after\": \"1d\","
         " \"colour\": 1}",
         "colour"},
        {"{\"name\": \"a\", \"pool\": \"scr\", \"action\": \"delete\", \"after\": \"1d\"},"
         " {\"name\": \"a\", \"pool\": \"scr\", \"action\": \"delete\", \"after\": \"2d\"}",
         "duplicate rule"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char msg[256];
        assert_int_not_equal(parse_rules(bad[i].rule, &p, msg, sizeof(msg)), 0);
        if (!strstr(msg, bad[i].says))
            fail_msg("rule %zu: '%s' does not say '%s'", i, msg, bad[i].says);
    }
}

static void run_and_result_round_trip(void **state)
{
    (void)state;
    struct lifecycle_run r = {.id = 7,
                              .action = LC_MOVE,
                              .after_ms = 30 * DAY,
                              .now_ms = 1000 * DAY,
                              .rate_bytes = 1 << 20,
                              .marker = true,
                              .dry_run = true};
    strcpy(r.rule, "cool");
    strcpy(r.project, "ml");
    strcpy(r.from, "/mnt/hot");
    strcpy(r.to, "/srv/cold");
    strcpy(r.glob, "*.bin");
    json_t *j = lifecycle_run_json(&r);
    struct lifecycle_run back;
    struct proto_error e = {0};
    assert_int_equal(lifecycle_run_parse(j, "run", &back, &e), 0);
    assert_memory_equal(&r, &back, sizeof(r));
    /* a project that climbs out of the pool is refused */
    json_object_set_new(j, "project", json_string(".."));
    assert_int_not_equal(lifecycle_run_parse(j, "run", &back, &e), 0);
    json_object_set_new(j, "project", json_string("ml"));
    json_object_set_new(j, "from", json_string("/mnt/../etc"));
    assert_int_not_equal(lifecycle_run_parse(j, "run", &back, &e), 0);
    json_decref(j);

    struct lifecycle_result res = {.id = 7,
                                   .done = true,
                                   .files = 2,
                                   .bytes = 300,
                                   .freed_bytes = 8192,
                                   .failed = 1,
                                   .in_use = 1,
                                   .dirs_removed = 3};
    strcpy(res.age_basis, "mtime");
    strcpy(res.message, "1 files in use were left");
    lifecycle_result_list(&res, "a/b.bin", 100, 86400 * 40, NULL);
    lifecycle_result_list(&res, "c.bin", 200, 86400 * 41, "in use (open): left in place");
    j = lifecycle_result_json(&res);
    struct lifecycle_result rb;
    assert_int_equal(lifecycle_result_parse(j, "r", &rb, &e), 0);
    assert_true(rb.done);
    assert_int_equal(rb.files, 2);
    assert_int_equal(rb.in_use, 1);
    assert_int_equal(rb.dirs_removed, 3);
    assert_int_equal(rb.nlist, 2);
    assert_string_equal(rb.list[1].error, "in use (open): left in place");
    assert_string_equal(rb.age_basis, "mtime");
    json_decref(j);
    lifecycle_result_release(&rb);
    /* past LC_LIST_MAX files are counted, not listed */
    for (int i = 0; i < LC_LIST_MAX; i++)
        lifecycle_result_list(&res, "x", 1, 1, NULL);
    assert_int_equal(res.nlist, LC_LIST_MAX);
    assert_int_equal(res.unlisted, 2);
    lifecycle_result_release(&res);
}

static void file_due_by_atime_mtime_marker_glob(void **state)
{
    (void)state;
    struct lifecycle_run r = {.after_ms = 30 * DAY, .now_ms = 100 * DAY};
    struct lifecycle_file f = {.name = "a.bin", .atime_ms = 60 * DAY, .mtime_ms = 60 * DAY};
    assert_true(lifecycle_file_due(&r, &f)); /* 40 days unused */
    f.atime_ms = 90 * DAY;                   /* read 10 days ago */
    assert_false(lifecycle_file_due(&r, &f));
    f.noatime = true; /* the file system keeps no access times: its change counts */
    assert_true(lifecycle_file_due(&r, &f));
    assert_int_equal(lifecycle_last_use_ms(&f), 60 * DAY);
    f.noatime = false;
    f.atime_ms = 10 * DAY; /* an access time before the change: the change counts */
    f.mtime_ms = 80 * DAY;
    assert_false(lifecycle_file_due(&r, &f));
    f.mtime_ms = 70 * DAY; /* exactly 30 days: due */
    assert_true(lifecycle_file_due(&r, &f));
    r.marker = true;
    assert_false(lifecycle_file_due(&r, &f));
    f.marked = true;
    assert_true(lifecycle_file_due(&r, &f));
    f.name = LC_MARKER; /* the marker itself stays */
    assert_false(lifecycle_file_due(&r, &f));
    strcpy(r.glob, "*.ckpt");
    f.name = "model.ckpt";
    assert_true(lifecycle_file_due(&r, &f));
    f.name = "model.pt";
    assert_false(lifecycle_file_due(&r, &f));
    f.name = ".hidden.ckpt"; /* a glob does not match a leading dot unless it says so */
    assert_false(lifecycle_file_due(&r, &f));
}

static void rule_due_and_cover(void **state)
{
    (void)state;
    struct lifecycle_rule rule = {.every_ms = DAY};
    assert_int_equal(lifecycle_next_due_ms(&rule, 0, 5 * DAY), 5 * DAY); /* never ran: now */
    assert_int_equal(lifecycle_next_due_ms(&rule, 3 * DAY, 5 * DAY), 4 * DAY);
    assert_int_equal(lifecycle_next_due_ms(&rule, 5 * DAY, 5 * DAY), 6 * DAY);
    rule.every_ms = 0; /* only when asked */
    assert_int_equal(lifecycle_next_due_ms(&rule, 0, 5 * DAY), -1);
    assert_true(lifecycle_rule_covers(&rule, "anyone"));
    strcpy(rule.projects[0], "ml");
    rule.nprojects = 1;
    assert_true(lifecycle_rule_covers(&rule, "ml"));
    assert_false(lifecycle_rule_covers(&rule, "bio"));
}

/* storage.log_archive: read, written back, and refused field by field */
static int parse_archive(const char *la, struct storage_policy *p, char *msg, size_t len)
{
    char text[2048];
    snprintf(text, sizeof(text), "{%s, \"log_archive\": %s}", pools, la);
    json_t *j = doc(text);
    struct proto_error e = {0};
    int rc = storage_policy_parse(j, p, &e);
    json_decref(j);
    snprintf(msg, len, "%s", e.field);
    return rc;
}

static void log_archive_read_written_back_refused(void **state)
{
    (void)state;
    static struct storage_policy p, q;
    char msg[256];
    assert_int_equal(parse_archive("{\"pool\": \"cold\"}", &p, msg, sizeof(msg)), 0);
    assert_string_equal(p.log_archive.pool, "cold");
    assert_int_equal(p.log_archive.after_ms, 30 * DAY);
    assert_int_equal(p.log_archive.every_ms, 3600 * 1000);
    assert_int_equal(parse_archive("{\"pool\": \"cold\", \"after\": \"2d\", \"every\": 5}", &p, msg,
                                   sizeof(msg)),
                     0);
    assert_int_equal(p.log_archive.after_ms, 2 * DAY);
    assert_int_equal(p.log_archive.every_ms, 5000);
    json_t *back = storage_policy_json(&p);
    struct proto_error e = {0};
    assert_int_equal(storage_policy_parse(back, &q, &e), 0);
    json_decref(back);
    assert_memory_equal(&p.log_archive, &q.log_archive, sizeof(p.log_archive));
    /* none: never, and nothing written back */
    assert_int_equal(parse_rules("", &q, msg, sizeof(msg)), 0);
    assert_string_equal(q.log_archive.pool, "");
    back = storage_policy_json(&q);
    assert_null(json_object_get(back, "log_archive"));
    json_decref(back);
    static const struct {
        const char *la, *field;
    } bad[] = {
        {"{\"pool\": \"tape\"}", "storage.log_archive.pool"},
        {"{\"after\": \"1d\"}", "storage.log_archive.pool"},
        {"{\"pool\": \"cold\", \"every\": \"0s\"}", "storage.log_archive.every"},
        {"{\"pool\": \"cold\", \"after\": \"soon\"}", "storage.log_archive.after"},
        {"{\"pool\": \"cold\", \"path\": \"/x\"}", "storage.log_archive.path"},
        {"\"cold\"", "storage.log_archive"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse_archive(bad[i].la, &p, msg, sizeof(msg)) == 0)
            fail_msg("accepted %s", bad[i].la);
        if (strcmp(msg, bad[i].field) != 0)
            fail_msg("%s: field '%s', want '%s'", bad[i].la, msg, bad[i].field);
    }
}

/* storage.sample_keep and sample_rollup: defaults, read, written back, bounds */
static void sample_rollup_read_and_refused(void **state)
{
    (void)state;
    static struct storage_policy p, q;
    struct proto_error e = {0};
    json_t *j = doc("{\"sample_keep\": \"7d\", \"sample_rollup\": \"6h\"}");
    assert_int_equal(storage_policy_parse(j, &p, &e), 0);
    json_decref(j);
    assert_int_equal(p.sample_keep_ms, 7 * DAY);
    assert_int_equal(p.sample_rollup_ms, DAY / 4);
    json_t *back = storage_policy_json(&p);
    assert_int_equal(storage_policy_parse(back, &q, &e), 0);
    json_decref(back);
    assert_int_equal(q.sample_keep_ms, 7 * DAY);
    assert_int_equal(q.sample_rollup_ms, DAY / 4);
    storage_policy_defaults(&q);
    assert_int_equal(q.sample_keep_ms, 30 * DAY);
    assert_int_equal(q.sample_rollup_ms, DAY);
    static const char *const bad[][2] = {
        {"{\"sample_keep\": \"0s\"}", "storage.sample_keep"},
        {"{\"sample_rollup\": \"32d\"}", "storage.sample_rollup"},
        {"{\"sample_rollup\": \"soon\"}", "storage.sample_rollup"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        j = doc(bad[i][0]);
        e = (struct proto_error){0};
        if (storage_policy_parse(j, &p, &e) == 0)
            fail_msg("accepted %s", bad[i][0]);
        json_decref(j);
        assert_string_equal(e.field, bad[i][1]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rules_read_and_written_back),
        cmocka_unit_test(rules_refused),
        cmocka_unit_test(run_and_result_round_trip),
        cmocka_unit_test(file_due_by_atime_mtime_marker_glob),
        cmocka_unit_test(rule_due_and_cover),
        cmocka_unit_test(log_archive_read_written_back_refused),
        cmocka_unit_test(sample_rollup_read_and_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
