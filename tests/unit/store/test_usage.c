/* test_usage.c - unit tests of the usage samples in store/store.h (schema 9): the fold
 * (counters across runs, idle stretches, unknown figures), minute averages, the series,
 * and retention: raw rows go after an hour, minutes after 7 days, pruned in bounded
 * slices, the summary stays. Each test works on a fresh database in a temporary dir. */
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

#include "store/store.h"
#include "util/str.h"

#include "fixture.h"

static struct store_usage_point pt(uint64_t job, int run, const char *node, int64_t t, int64_t cpu,
                                   int util)
{
    struct store_usage_point p;
    memset(&p, 0, sizeof(p));
    p.job = job;
    p.run = run;
    str_copy(p.node, sizeof(p.node), node);
    p.time_ms = t;
    p.cpu_ms = cpu;
    p.mem_bytes = 1000 + t / 1000;
    p.mem_peak_bytes = 5000;
    p.io_read_bytes = cpu * 2;
    p.io_write_bytes = cpu * 3;
    p.gpu_util = util;
    p.gpu_mem_mb = util >= 0 ? 100 : -1;
    p.gpu_power_mw = util >= 0 ? 50000 : -1;
    p.gpu_temp_c = -1;
    p.gpu_errors = -1;
    return p;
}

static void add(struct fx *f, struct store_usage_point p, struct store_usage_summary *s)
{
    assert_int_equal(store_usage_add(f->st, &p, p.gpu_util >= 0 ? "declared" : "none", 5, s), 0);
}

/* counters are cumulative per run: the summary adds deltas, and a new run counts anew */
static void fold_counts_across_runs(void **state)
{
    struct fx *f = *state;
    struct store_usage_summary s;
    add(f, pt(7, 1, "n1", 10000, 1000, -1), &s);
    add(f, pt(7, 1, "n1", 20000, 4000, -1), &s);
    assert_int_equal(s.cpu_ms, 4000);
    add(f, pt(7, 2, "n1", 30000, 500, -1), &s); /* requeued: the counter restarts */
    assert_int_equal(s.cpu_ms, 4500);
    assert_int_equal(s.io_write_bytes, 4500 * 3);
    add(f, pt(7, 2, "n2", 30000, 700, -1), &s); /* another node of the same job */
    assert_int_equal(s.cpu_ms, 5200);
    add(f, pt(7, 2, "n2", 40000, 200, -1), &s); /* went down within a run: from zero */
    assert_int_equal(s.cpu_ms, 5400);
    assert_int_equal(s.samples, 5);
    assert_int_equal(s.first_ms, 10000);
    assert_int_equal(s.last_ms, 40000);
    assert_int_equal(s.mem_peak_bytes, 5000);
    assert_int_equal(s.gpu_samples, 0); /* no GPU figures: no GPU mean, no idleness */
    assert_int_equal(s.idle_since_ms, 0);
    assert_string_equal(s.gpu_source, "none");
    struct store_usage_summary g;
    assert_int_equal(store_usage_summary_get(f->st, 7, &g), 0);
    assert_int_equal(g.cpu_ms, 5400);
    assert_int_equal(store_usage_summary_get(f->st, 8, &g), -ENOENT);
}

/* idle: the stretch starts at the first sample under the threshold, a busy sample ends
 * it (and the flag); idle time is the span between a node's samples */
static void fold_idle_stretch(void **state)
{
    struct fx *f = *state;
    struct store_usage_summary s;
    add(f, pt(3, 1, "n1", 0, 0, 90), &s);
    assert_int_equal(s.last_busy_ms, 0 + 0); /* busy at time 0 */
    assert_int_equal(s.idle_since_ms, 0);
    add(f, pt(3, 1, "n1", 10000, 10, 2), &s);
    assert_int_equal(s.idle_since_ms, 10000);
    add(f, pt(3, 1, "n1", 20000, 20, 0), &s);
    assert_int_equal(s.idle_since_ms, 10000);
    assert_int_equal(s.gpu_idle_ms, 20000);
    assert_int_equal(store_usage_flag(f->st, 3, 25000), 0);
    add(f, pt(3, 1, "n1", 30000, 30, 4), &s);
    assert_int_equal(s.idle_flagged_ms, 25000); /* still the same stretch */
    add(f, pt(3, 1, "n1", 40000, 40, 5), &s);   /* at the threshold is busy */
    assert_int_equal(s.idle_since_ms, 0);
    assert_int_equal(s.idle_flagged_ms, 0);
    assert_int_equal(s.last_busy_ms, 40000);
    assert_int_equal(s.gpu_util_sum, 90 + 2 + 0 + 4 + 5);
    assert_int_equal(s.gpu_samples, 5);
    add(f, pt(3, 1, "n1", 50000, 50, 1), &s);
    add(f, pt(3, 2, "n1", 60000, 5, 1), &s); /* a new run: a stretch of its own */
    assert_int_equal(s.idle_since_ms, 60000);
}

static int collect(void *arg, const struct store_usage_row *r)
{
    struct store_usage_row *rows = arg;
    int i = 0;
    while (rows[i].samples)
        i++;
    rows[i] = *r;
    return 0;
}

/* a minute's row holds sums and counts: its averages are exact */
static void minutes_average(void **state)
{
    struct fx *f = *state;
    int64_t base = 600000;      /* a minute boundary */
    for (int i = 0; i < 6; i++) /* 10 s apart, 1 CPU second per second */
        add(f, pt(5, 1, "n1", base + i * 10000, i * 10000, i * 10), NULL);
    add(f, pt(5, 1, "n1", base + 60000, 60000, 100), NULL);
    struct store_usage_row rows[8];
    memset(rows, 0, sizeof(rows));
    assert_int_equal(store_usage_series(f->st, 5, false, 0, 100, collect, rows), 0);
    assert_int_equal(rows[0].time_ms, base);
    assert_int_equal(rows[0].samples, 6);
    assert_int_equal(rows[0].gpu_util, (0 + 10 + 20 + 30 + 40 + 50) / 6);
    assert_int_equal(rows[0].gpu_power_mw, 50000);
    assert_true(rows[0].cpu_cores > 0.99 && rows[0].cpu_cores < 1.01);
    assert_int_equal(rows[1].time_ms, base + 60000);
    assert_int_equal(rows[1].samples, 1);
    assert_int_equal(rows[2].samples, 0);
    /* raw: one row per sample, the rate from the node's previous one */
    memset(rows, 0, sizeof(rows));
    assert_int_equal(store_usage_series(f->st, 5, true, base + 35000, 100, collect, rows), 0);
    assert_int_equal(rows[0].time_ms, base + 40000);
    assert_true(rows[0].cpu_cores < 0); /* no earlier row in the window */
    assert_true(rows[1].cpu_cores > 0.99 && rows[1].cpu_cores < 1.01);
    assert_string_equal(rows[1].node, "n1");
    assert_int_equal(rows[2].gpu_util, 100);
    assert_int_equal(rows[3].samples, 0);
}

/* raw rows live an hour, minutes 7 days, the summary forever; prune works in slices */
static void retention_is_bounded(void **state)
{
    struct fx *f = *state;
    int64_t t0 = 1000000000;
    for (int i = 0; i < 30; i++) /* 30 samples, 1 minute apart */
        add(f, pt(9, 1, "n1", t0 + i * 60000, i * 1000, -1), NULL);
    int64_t raw, mins, sums;
    assert_int_equal(store_usage_counts(f->st, &raw, &mins, &sums), 0);
    assert_int_equal(raw, 30);
    assert_int_equal(mins, 30);
    int64_t now = t0 + 29 * 60000 + STORE_USAGE_RAW_KEEP_MS - 10 * 60000 + 1;
    assert_int_equal(store_usage_prune(f->st, now, 7), 7); /* a slice of 7 */
    assert_int_equal(store_usage_prune(f->st, now, 7), 7);
    assert_int_equal(store_usage_prune(f->st, now, 7), 6); /* 20 older than the hour */
    assert_int_equal(store_usage_prune(f->st, now, 7), 0);
    assert_int_equal(store_usage_counts(f->st, &raw, &mins, &sums), 0);
    assert_int_equal(raw, 10);
    assert_int_equal(mins, 30);
    now = t0 + 29 * 60000 + STORE_USAGE_MINUTE_KEEP_MS + 1;
    int n, total = 0;
    while ((n = store_usage_prune(f->st, now, 8)) > 0)
        total += n;
    assert_int_equal(n, 0);
    assert_int_equal(total, 40);
    assert_int_equal(store_usage_counts(f->st, &raw, &mins, &sums), 0);
    assert_int_equal(raw + mins, 0);
    assert_int_equal(sums, 1);
    struct store_usage_summary s;
    assert_int_equal(store_usage_summary_get(f->st, 9, &s), 0);
    assert_int_equal(s.cpu_ms, 29000);
    assert_int_equal(s.samples, 30);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(fold_counts_across_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(fold_idle_stretch, setup, teardown),
        cmocka_unit_test_setup_teardown(minutes_average, setup, teardown),
        cmocka_unit_test_setup_teardown(retention_is_bounded, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
