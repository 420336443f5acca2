/*
 * test_trace.c - the CSV and SWF trace readers: good rows parse to the exact values, every
 * bad row is reported with its line and column and the reader goes on after it.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sim/trace.h"

#define HEADER "job_id,submit_s,runtime_s,gpus,cpus,mem_mb,nodes,project,user,status\n"

struct rd {
    FILE *f;
    struct trace_reader *r;
    struct trace_error err;
};

static void rd_open(struct rd *x, const char *text, enum trace_format fmt)
{
    x->f = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(x->f);
    memset(&x->err, 0, sizeof(x->err));
    x->r = trace_open_stream(x->f, "t.csv", fmt, &x->err);
}

static void rd_close(struct rd *x)
{
    trace_close(x->r);
    fclose(x->f);
}

static void csv_good_rows(void **state)
{
    struct rd x;
    struct trace_row row;

    (void)state;
    rd_open(&x,
            HEADER "a-1,0,3600,8,,,,vc1,,\n"
                   "b-2,5,10,0,80,93750,2,g1,u1,completed\r\n"
                   "\n"
                   "\"c,3\",5,0,1,,,,vc1,bob,failed\n",
            TRACE_CSV);
    assert_non_null(x.r);
    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_string_equal(row.id, "a-1");
    assert_int_equal(row.submit_s, 0);
    assert_int_equal(row.runtime_s, 3600);
    assert_int_equal(row.gpus, 8);
    assert_int_equal(row.cpus, 0);
    assert_int_equal(row.req_time_s, -1);
    assert_string_equal(row.project, "vc1");
    assert_string_equal(row.user, "");
    assert_int_equal(row.status, TRACE_ST_UNKNOWN);
    assert_int_equal(row.line, 2);

    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_int_equal(row.cpus, 80);
    assert_int_equal(row.mem_mb, 93750);
    assert_int_equal(row.nodes, 2);
    assert_string_equal(row.user, "u1");
    assert_int_equal(row.status, TRACE_ST_COMPLETED);

    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_string_equal(row.id, "c,3");
    assert_int_equal(row.status, TRACE_ST_FAILED);
    assert_int_equal(row.line, 5); /* the blank line 4 is not a row */
    assert_int_equal(trace_next(x.r, &row, &x.err), 0);
    rd_close(&x);
}

static void csv_columns_any_order(void **state)
{
    struct rd x;
    struct trace_row row;

    (void)state;
    rd_open(&x,
            "status,user,project,nodes,mem_mb,cpus,gpus,runtime_s,submit_s,job_id\n"
            "completed,u,p,,,,2,30,7,j\n",
            TRACE_CSV);
    assert_non_null(x.r);
    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_string_equal(row.id, "j");
    assert_int_equal(row.submit_s, 7);
    assert_int_equal(row.runtime_s, 30);
    assert_int_equal(row.gpus, 2);
    rd_close(&x);
}

/* One bad row: the expected line, column and a fragment of the message. */
static void expect_bad(const char *rows, long line, const char *column, const char *frag)
{
    char text[2048];
    struct rd x;
    struct trace_row row;
    int rc;

    snprintf(text, sizeof(text), HEADER "ok-1,0,5,1,,,,p,,\n%s", rows);
    rd_open(&x, text, TRACE_CSV);
    assert_non_null(x.r);
    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    rc = trace_next(x.r, &row, &x.err);
    if (rc != -EINVAL) {
        rd_close(&x);
        fail_msg("row '%s': expected -EINVAL, got %d", rows, rc);
    }
    assert_int_equal(x.err.line, line);
    assert_string_equal(x.err.column, column);
    if (!strstr(x.err.message, frag))
        fail_msg("message '%s' lacks '%s'", x.err.message, frag);
    rd_close(&x);
}

static void csv_bad_rows(void **state)
{
    (void)state;
    expect_bad("x,abc,5,1,,,,p,,\n", 3, "submit_s", "not a non-negative integer");
    expect_bad("x,1,-5,1,,,,p,,\n", 3, "runtime_s", "not a non-negative integer");
    expect_bad("x,1,5,1.5x,,,,p,,\n", 3, "gpus", "'1.5x'");
    expect_bad("x,1,5,.5,,,,p,,\n", 3, "gpus", "not a non-negative number");
    expect_bad("x,1,5,1.,,,,p,,\n", 3, "gpus", "not a non-negative number");
    expect_bad("x,1,5,-0.5,,,,p,,\n", 3, "gpus", "not a non-negative number");
    expect_bad("x,1,5,1e3,,,,p,,\n", 3, "gpus", "not a non-negative number");
    expect_bad("x,1,5,1,0.5.5,,,p,,\n", 3, "cpus", "not a non-negative number");
    expect_bad("x,1,5,999999999,,,,p,,\n", 3, "gpus", "out of range");
    expect_bad("x,1,5,1,abc,,,p,,\n", 3, "cpus", "abc");
    expect_bad("x,1,5,1,,12M,,p,,\n", 3, "mem_mb", "12M");
    expect_bad("x,1,5,1,,,two,p,,\n", 3, "nodes", "two");
    expect_bad(",1,5,1,,,,p,,\n", 3, "job_id", "empty");
    expect_bad("x,,5,1,,,,p,,\n", 3, "submit_s", "empty");
    expect_bad("x,1,5,1,,,,p,,done\n", 3, "status", "unknown status 'done'");
    expect_bad("x,1,5,1,,,,p\n", 3, "", "8 fields, expected 10");
    expect_bad("x,1,5,1,,,,p,,,extra\n", 3, "", "11 fields");
    expect_bad("\"x,1,5,1,,,,p,,\n", 3, "", "unterminated");
    expect_bad("x,1,5,1,,,,0123456789012345678901234567890123456789012345678901234567890123,,\n", 3,
               "project", "longer than 63");
}

/* Fractional GPU/CPU counts and rows without a runtime are not bad: they come back as
 * they are and the simulator applies its documented rules (and counts them). */
static void csv_fractional_and_never_ran(void **state)
{
    struct rd x;
    struct trace_row row;

    (void)state;
    rd_open(&x, HEADER "a,0,5,0.5,,,,p,,\nb,1,,1,,,,p,,cancelled\nc,2,7,0,2.25,,,p,,\n", TRACE_CSV);
    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_true(row.gpus == 0.5);
    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_int_equal(row.runtime_s, -1);
    assert_int_equal(row.status, TRACE_ST_CANCELLED);
    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_true(row.gpus == 0);
    assert_true(row.cpus == 2.25);
    assert_int_equal(row.runtime_s, 7);
    assert_int_equal(trace_next(x.r, &row, &x.err), 0);
    rd_close(&x);
}

static void csv_goes_on_after_bad_row(void **state)
{
    struct rd x;
    struct trace_row row;
    char msg[512];

    (void)state;
    rd_open(&x, HEADER "a,0,5,1,,,,p,,\nb,1,zz,1,,,,p,,\nc,2,5,1,,,,p,,\n", TRACE_CSV);
    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_int_equal(trace_next(x.r, &row, &x.err), -EINVAL);
    trace_error_format(&x.err, msg, sizeof(msg));
    assert_string_equal(msg, "t.csv:3: column 'runtime_s': not a non-negative integer: 'zz'");
    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_string_equal(row.id, "c");
    assert_int_equal(row.line, 4);
    assert_int_equal(trace_next(x.r, &row, &x.err), 0);
    rd_close(&x);
}

static void csv_unsorted_row(void **state)
{
    struct rd x;
    struct trace_row row;

    (void)state;
    rd_open(&x, HEADER "a,10,5,1,,,,p,,\nb,10,5,1,,,,p,,\nc,9,5,1,,,,p,,\n", TRACE_CSV);
    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_int_equal(trace_next(x.r, &row, &x.err), 1); /* equal times are sorted */
    assert_int_equal(trace_next(x.r, &row, &x.err), -EINVAL);
    assert_int_equal(x.err.line, 4);
    assert_string_equal(x.err.column, "submit_s");
    assert_non_null(strstr(x.err.message, "before the previous row's 10"));
    rd_close(&x);
}

static void csv_bad_header(void **state)
{
    struct rd x;

    (void)state;
    rd_open(&x, "job_id,submit_s\n", TRACE_CSV);
    assert_null(x.r);
    assert_int_equal(x.err.line, 1);
    assert_non_null(strstr(x.err.message, "header has 2 columns"));
    fclose(x.f);

    rd_open(&x, "job_id,submit_s,runtime_s,gpus,cpus,mem_mb,nodes,project,user,state\n", TRACE_CSV);
    assert_null(x.r);
    assert_string_equal(x.err.column, "state");
    assert_non_null(strstr(x.err.message, "unknown column"));
    fclose(x.f);

    rd_open(&x, "job_id,job_id,runtime_s,gpus,cpus,mem_mb,nodes,project,user,status\n", TRACE_CSV);
    assert_null(x.r);
    assert_non_null(strstr(x.err.message, "twice"));
    fclose(x.f);

    rd_open(&x, "", TRACE_CSV);
    assert_null(x.r);
    assert_non_null(strstr(x.err.message, "empty file"));
    fclose(x.f);
}

static const char swf[] =
    "; Version: 2.2\n"
    "; Computer: test\n"
    "    1     0   10   100   16  -1 -1   16   200  1024  1  3  7 -1 1 -1 -1 -1\n"
    "    2    60    0    -1   -1  -1 -1    8   100    -1  5  4  7 -1 1 -1 -1 -1\n"
    "    3   120    5    30    4 2.5 -1    4    60    -1  0  3 -1 -1 1 -1 -1 -1\n";

static void swf_good_rows(void **state)
{
    struct rd x;
    struct trace_row row;

    (void)state;
    rd_open(&x, swf, TRACE_SWF);
    assert_non_null(x.r);
    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_string_equal(row.id, "1");
    assert_int_equal(row.submit_s, 0);
    assert_int_equal(row.runtime_s, 100);
    assert_int_equal(row.cpus, 16);
    assert_int_equal(row.req_time_s, 200);
    assert_int_equal(row.mem_mb, 16); /* 1024 KB per processor x 16 */
    assert_string_equal(row.project, "g7");
    assert_string_equal(row.user, "u3");
    assert_int_equal(row.status, TRACE_ST_COMPLETED);
    assert_int_equal(row.line, 3);

    assert_int_equal(trace_next(x.r, &row, &x.err), 1); /* cancelled before it ran */
    assert_int_equal(row.runtime_s, -1);
    assert_int_equal(row.cpus, 8); /* requested, as none were allocated */
    assert_int_equal(row.status, TRACE_ST_CANCELLED);

    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_int_equal(row.submit_s, 120);
    assert_string_equal(row.project, "");
    assert_int_equal(row.status, TRACE_ST_FAILED);
    assert_int_equal(trace_next(x.r, &row, &x.err), 0);
    rd_close(&x);
}

static void swf_expect_bad(const char *line, const char *column, const char *frag)
{
    char text[1024];
    struct rd x;
    struct trace_row row;

    snprintf(text, sizeof(text), "; c\n%s\n", line);
    rd_open(&x, text, TRACE_SWF);
    assert_non_null(x.r);
    if (trace_next(x.r, &row, &x.err) != -EINVAL)
        fail_msg("swf line '%s' accepted", line);
    assert_int_equal(x.err.line, 2);
    assert_string_equal(x.err.column, column);
    if (!strstr(x.err.message, frag))
        fail_msg("message '%s' lacks '%s'", x.err.message, frag);
    rd_close(&x);
}

static void swf_bad_rows(void **state)
{
    (void)state;
    swf_expect_bad("1 0 10 100 16 -1 -1 16 200 1024 1 3 7 -1 1 -1 -1", "", "17 fields");
    swf_expect_bad("1 0 10 100 16 -1 -1 16 200 1024 1 3 7 -1 1 -1 -1 -1 9", "", "19 fields");
    swf_expect_bad("1 x 10 100 16 -1 -1 16 200 1024 1 3 7 -1 1 -1 -1 -1", "submit_time", "'x'");
    swf_expect_bad("1 0 10 1.5.2 16 -1 -1 16 200 1024 1 3 7 -1 1 -1 -1 -1", "run_time", "'1.5.2'");
    swf_expect_bad("1 0 10 5 4.5 -1 -1 4 200 1024 1 3 7 -1 1 -1 -1 -1", "allocated_processors",
                   "not an integer");
    swf_expect_bad("1.5 0 10 5 4 -1 -1 4 200 1024 1 3 7 -1 1 -1 -1 -1", "job_number",
                   "not an integer");
    swf_expect_bad("1 0 10 5 4 -1 -1 4 200 1024 1 3 7 -1 1 -1 -1 -2", "think_time",
                   "not an integer >= -1");
    swf_expect_bad("1 0 10 5 -1 -1 -1 -1 200 1024 1 3 7 -1 1 -1 -1 -1", "allocated_processors",
                   "no processor count");
    swf_expect_bad("1 0 10 5 4 -1 -1 4 200 1024 9 3 7 -1 1 -1 -1 -1", "status", "unknown status 9");
    swf_expect_bad("1 -1 10 5 4 -1 -1 4 200 1024 1 3 7 -1 1 -1 -1 -1", "submit_time", "missing");
    swf_expect_bad("1 0 -2.5 5 4 -1 -1 4 200 1024 1 3 7 -1 1 -1 -1 -1", "wait_time", "'-2.5'");
}

/* SWF 2.2 allows floating point time fields; a run time of -1 is a job that never ran
 * (any status), returned with runtime_s -1 for the caller to count and skip. */
static void swf_decimal_times_and_never_ran(void **state)
{
    struct rd x;
    struct trace_row row;

    (void)state;
    rd_open(&x,
            "; c\n"
            "1 0.4 1.5 99.6 4 -1 -1 4 120.5 -1 1 3 7 -1 1 -1 -1 -1\n"
            "2 10 -1 -1 8 -1 -1 8 100 -1 0 3 7 -1 1 -1 -1 -1\n",
            TRACE_SWF);
    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_int_equal(row.runtime_s, 100);
    assert_int_equal(row.req_time_s, 121);
    assert_int_equal(trace_next(x.r, &row, &x.err), 1);
    assert_int_equal(row.runtime_s, -1);
    assert_int_equal(row.status, TRACE_ST_FAILED);
    assert_int_equal(row.submit_s, 10);
    assert_int_equal(trace_next(x.r, &row, &x.err), 0);
    rd_close(&x);
}

static void format_guess(void **state)
{
    enum trace_format f;

    (void)state;
    assert_int_equal(trace_format_guess("x/RICC-2010-2.swf"), TRACE_SWF);
    assert_int_equal(trace_format_guess("philly_vc.csv"), TRACE_CSV);
    assert_int_equal(trace_format_parse("swf", &f), 0);
    assert_int_equal(f, TRACE_SWF);
    assert_int_equal(trace_format_parse("json", &f), -EINVAL);
}

static void open_missing_file(void **state)
{
    struct trace_error err;

    (void)state;
    assert_null(trace_open("/nonexistent/trace.csv", TRACE_CSV, &err));
    assert_string_equal(err.file, "/nonexistent/trace.csv");
    assert_non_null(strstr(err.message, "cannot open"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(csv_good_rows),
        cmocka_unit_test(csv_columns_any_order),
        cmocka_unit_test(csv_bad_rows),
        cmocka_unit_test(csv_fractional_and_never_ran),
        cmocka_unit_test(csv_goes_on_after_bad_row),
        cmocka_unit_test(csv_unsorted_row),
        cmocka_unit_test(csv_bad_header),
        cmocka_unit_test(swf_good_rows),
        cmocka_unit_test(swf_bad_rows),
        cmocka_unit_test(swf_decimal_times_and_never_ran),
        cmocka_unit_test(format_guess),
        cmocka_unit_test(open_missing_file),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
