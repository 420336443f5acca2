/* test_log.c - unit tests of util/log.h: text and JSON lines, the level filter,
 * reopening after rotation, quoting and one-event-one-line. Logs go to temp files. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/log.h"

struct fixture {
    char dir[64];
    char path[128];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    if (!f)
        return -1;
    snprintf(f->dir, sizeof(f->dir), "/tmp/docket-log-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof(f->path), "%s/docketd.log", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char rotated[160];

    log_close();
    snprintf(rotated, sizeof(rotated), "%s.1", f->path);
    unlink(f->path);
    unlink(rotated);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* The whole file as a string (caller frees). */
static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "r");
    char *buf = calloc(1, 1 << 16);
    size_t n;

    assert_non_null(fp);
    assert_non_null(buf);
    n = fread(buf, 1, (1 << 16) - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return buf;
}

static int count_lines(const char *s)
{
    int n = 0;

    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void text_line_shape(void **state)
{
    struct fixture *f = *state;
    char *out;

    assert_int_equal(log_open(f->path, LOG_INFO, LOG_TEXT), 0);
    log_info("job_started", "job=%d node=%s", 12, "gpu03");
    out = slurp(f->path);
    assert_int_equal(strncmp(out, "ts=20", 5), 0);
    assert_int_equal(out[13], 'T');
    assert_int_equal(out[26], 'Z');
    assert_non_null(strstr(out, "Z level=info event=job_started job=12 node=gpu03\n"));
    assert_int_equal(count_lines(out), 1);
    free(out);
}

static void text_without_fields(void **state)
{
    struct fixture *f = *state;
    char *out;

    assert_int_equal(log_open(f->path, LOG_INFO, LOG_TEXT), 0);
    log_warn("started", "%s", "");
    out = slurp(f->path);
    assert_non_null(strstr(out, " level=warn event=started\n"));
    free(out);
}

static void level_filter(void **state)
{
    struct fixture *f = *state;
    char *out;

    assert_int_equal(log_open(f->path, LOG_WARN, LOG_TEXT), 0);
    assert_false(log_enabled(LOG_INFO));
    assert_true(log_enabled(LOG_ERROR));
    log_debug("a", "x=%d", 1);
    log_info("b", "x=%d", 2);
    log_warn("c", "x=%d", 3);
    log_error("d", "x=%d", 4);
    out = slurp(f->path);
    assert_int_equal(count_lines(out), 2);
    assert_null(strstr(out, "event=a"));
    assert_null(strstr(out, "event=b"));
    assert_non_null(strstr(out, "level=warn event=c x=3"));
    assert_non_null(strstr(out, "level=error event=d x=4"));
    free(out);
}

static void newline_in_value_stays_one_line(void **state)
{
    struct fixture *f = *state;
    char *out;

    assert_int_equal(log_open(f->path, LOG_INFO, LOG_TEXT), 0);
    log_info("x", "msg=%s", "a\nlevel=error event=forged");
    out = slurp(f->path);
    assert_int_equal(count_lines(out), 1);
    assert_non_null(strstr(out, "msg=a\\nlevel=error"));
    free(out);
}

static void json_line_members(void **state)
{
    struct fixture *f = *state;
    json_error_t jerr;
    json_t *v;
    char *out;

    assert_int_equal(log_open(f->path, LOG_DEBUG, LOG_JSON), 0);
    log_info("job_started", "job=%d node=%s msg=\"%s\" flag", 12, "gpu03", "two words");
    out = slurp(f->path);
    assert_int_equal(count_lines(out), 1);
    v = json_loads(out, 0, &jerr);
    assert_non_null(v);
    assert_string_equal(json_string_value(json_object_get(v, "level")), "info");
    assert_string_equal(json_string_value(json_object_get(v, "event")), "job_started");
    assert_int_equal(json_integer_value(json_object_get(v, "job")), 12);
    assert_string_equal(json_string_value(json_object_get(v, "node")), "gpu03");
    assert_string_equal(json_string_value(json_object_get(v, "msg")), "two words");
    assert_true(json_is_string(json_object_get(v, "ts")));
    json_decref(v);
    free(out);
}

static void json_quoted_escapes_and_reserved_keys(void **state)
{
    struct fixture *f = *state;
    char q[64];
    json_t *v;
    char *out;

    assert_int_equal(log_open(f->path, LOG_DEBUG, LOG_JSON), 0);
    log_info("x", "event=forged msg=%s id=\"7\"", log_quote("say \"hi\"\nnow", q, sizeof(q)));
    out = slurp(f->path);
    assert_int_equal(count_lines(out), 1);
    v = json_loads(out, 0, NULL);
    assert_non_null(v);
    assert_string_equal(json_string_value(json_object_get(v, "event")), "x");
    assert_string_equal(json_string_value(json_object_get(v, "_event")), "forged");
    assert_string_equal(json_string_value(json_object_get(v, "msg")), "say \"hi\"\nnow");
    assert_string_equal(json_string_value(json_object_get(v, "id")), "7");
    json_decref(v);
    free(out);
}

static void json_invalid_utf8_still_valid_json(void **state)
{
    struct fixture *f = *state;
    json_t *v;
    char *out;

    assert_int_equal(log_open(f->path, LOG_DEBUG, LOG_JSON), 0);
    log_info("x", "name=%s", "a\xff\xfe");
    out = slurp(f->path);
    v = json_loads(out, 0, NULL);
    assert_non_null(v);
    assert_string_equal(json_string_value(json_object_get(v, "name")), "a??");
    json_decref(v);
    free(out);
}

static void long_line_truncated_marked(void **state)
{
    struct fixture *f = *state;
    char *big = malloc(40000);
    char *out;

    memset(big, 'x', 39999);
    big[39999] = '\0';
    assert_int_equal(log_open(f->path, LOG_INFO, LOG_TEXT), 0);
    log_info("big", "v=%s", big);
    out = slurp(f->path);
    assert_int_equal(count_lines(out), 1);
    assert_non_null(strstr(out, "_truncated=true\n"));
    free(out);
    free(big);
}

static void reopen_after_rotation(void **state)
{
    struct fixture *f = *state;
    char rotated[160], *a, *b;

    snprintf(rotated, sizeof(rotated), "%s.1", f->path);
    assert_int_equal(log_open(f->path, LOG_INFO, LOG_TEXT), 0);
    log_info("before", "n=%d", 1);
    assert_int_equal(rename(f->path, rotated), 0);
    assert_int_equal(log_reopen(), 0);
    log_info("after", "n=%d", 2);
    a = slurp(rotated);
    b = slurp(f->path);
    assert_non_null(strstr(a, "event=before"));
    assert_null(strstr(a, "event=after"));
    assert_non_null(strstr(b, "event=after"));
    free(a);
    free(b);
}

static void reopen_on_stderr_is_noop(void **state)
{
    assert_int_equal(log_open(NULL, LOG_INFO, LOG_TEXT), 0);
    assert_int_equal(log_reopen(), 0);
}

static void open_appends(void **state)
{
    struct fixture *f = *state;
    char *out;

    assert_int_equal(log_open(f->path, LOG_INFO, LOG_TEXT), 0);
    log_info("one", "%s", "");
    assert_int_equal(log_open(f->path, LOG_INFO, LOG_TEXT), 0);
    log_info("two", "%s", "");
    out = slurp(f->path);
    assert_int_equal(count_lines(out), 2);
    free(out);
}

static void open_bad_path(void **state)
{
    assert_int_equal(log_open("/nonexistent/dir/x.log", LOG_INFO, LOG_TEXT), -ENOENT);
    assert_int_equal(log_open(NULL, (enum log_level)9, LOG_TEXT), -EINVAL);
}

static void level_parse(void **state)
{
    enum log_level l = LOG_ERROR;

    assert_int_equal(log_level_parse("debug", &l), 0);
    assert_int_equal(l, LOG_DEBUG);
    assert_int_equal(log_level_parse("INFO", &l), 0);
    assert_int_equal(l, LOG_INFO);
    assert_int_equal(log_level_parse("warning", &l), 0);
    assert_int_equal(l, LOG_WARN);
    assert_int_equal(log_level_parse("error", &l), 0);
    assert_int_equal(l, LOG_ERROR);
    assert_int_equal(log_level_parse("verbose", &l), -EINVAL);
    assert_int_equal(log_level_parse("", &l), -EINVAL);
    assert_int_equal(l, LOG_ERROR);
}

static void quote_truncates_but_closes(void **state)
{
    char q[8];

    assert_string_equal(log_quote("abcdefghij", q, sizeof(q)), "\"abcde\"");
    assert_string_equal(log_quote("a\"b", q, sizeof(q)), "\"a\\\"b\"");
    assert_string_equal(log_quote("", q, sizeof(q)), "\"\"");
    assert_string_equal(log_quote("abc", q, 2), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(text_line_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(text_without_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(level_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(newline_in_value_stays_one_line, setup, teardown),
        cmocka_unit_test_setup_teardown(json_line_members, setup, teardown),
        cmocka_unit_test_setup_teardown(json_quoted_escapes_and_reserved_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(json_invalid_utf8_still_valid_json, setup, teardown),
        cmocka_unit_test_setup_teardown(long_line_truncated_marked, setup, teardown),
        cmocka_unit_test_setup_teardown(reopen_after_rotation, setup, teardown),
        cmocka_unit_test_setup_teardown(reopen_on_stderr_is_noop, setup, teardown),
        cmocka_unit_test_setup_teardown(open_appends, setup, teardown),
        cmocka_unit_test_setup_teardown(open_bad_path, setup, teardown),
        cmocka_unit_test(level_parse),
        cmocka_unit_test(quote_truncates_but_closes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
