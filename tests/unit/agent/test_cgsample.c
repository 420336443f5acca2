/* test_cgsample.c - the cgroup sample readers of agent/cgroup.h (cg_job_sample) on files
 * in a temporary directory laid out like a v1 hierarchy (memory, cpuacct, blkio) and a
 * v2 one (cpu.stat, memory.current, memory.peak, io.stat): counters read and summed over
 * devices, what is missing reads -1 (unknown), never 0. Needs no root. */
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
#include <sys/stat.h>
#include <unistd.h>

#include "agent/cgroup.h"

static char root[64];

static void put(const char *dir, const char *file, const char *text)
{
    char cmd[PATH_MAX * 2], path[PATH_MAX * 2];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/cgsample.XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void v1_layout(struct cg_layout *l, bool blkio)
{
    memset(l, 0, sizeof(*l));
    l->mode = CG_V1;
    snprintf(l->root, sizeof(l->root), "%s", root);
    l->v1_blkio = blkio;
}

static void v1_reads_cpuacct_memory_and_blkio(void **state)
{
    (void)state;
    struct cg_layout l;
    struct cg_job cg;
    struct cg_sample s;
    char d[PATH_MAX];
    v1_layout(&l, true);
    assert_int_equal(cg_job_init(&cg, &l, "n1", 42), 0);
    snprintf(d, sizeof(d), "%s/cpuacct/docket/n1/job_42", root);
    put(d, "cpuacct.usage", "2500000000\n"); /* ns */
    snprintf(d, sizeof(d), "%s/memory/docket/n1/job_42", root);
    put(d, "memory.usage_in_bytes", "1048576\n");
    put(d, "memory.max_usage_in_bytes", "4194304\n");
    snprintf(d, sizeof(d), "%s/blkio/docket/n1/job_42", root);
    put(d, "blkio.throttle.io_service_bytes",
        "8:0 Read 1000\n8:0 Write 200\n8:0 Sync 1200\n8:0 Async 0\n8:0 Total 1200\n"
        "8:16 Read 24\n8:16 Write 6\n8:16 Total 30\nTotal 1230\n");
    assert_int_equal(cg_job_sample(&cg, &s), 0);
    assert_int_equal(s.cpu_ms, 2500);
    assert_int_equal(s.mem_bytes, 1048576);
    assert_int_equal(s.mem_peak_bytes, 4194304);
    assert_int_equal(s.io_read_bytes, 1024);
    assert_int_equal(s.io_write_bytes, 206);
}

static void v1_without_blkio_says_io_unknown(void **state)
{
    (void)state;
    struct cg_layout l;
    struct cg_job cg;
    struct cg_sample s;
    char d[PATH_MAX];
    v1_layout(&l, false);
    assert_int_equal(cg_job_init(&cg, &l, "n1", 7), 0);
    assert_string_equal(cg.io, "");
    snprintf(d, sizeof(d), "%s/cpuacct/docket/n1/job_7", root);
    put(d, "cpuacct.usage", "1000000\n");
    assert_int_equal(cg_job_sample(&cg, &s), 0);
    assert_int_equal(s.cpu_ms, 1);
    assert_int_equal(s.mem_bytes, -1); /* no memory files: unknown */
    assert_int_equal(s.mem_peak_bytes, -1);
    assert_int_equal(s.io_read_bytes, -1);
    assert_int_equal(s.io_write_bytes, -1);
}

static void v2_reads_cpu_stat_memory_and_io_stat(void **state)
{
    (void)state;
    struct cg_layout l;
    struct cg_job cg;
    struct cg_sample s;
    char d[PATH_MAX];
    memset(&l, 0, sizeof(l));
    l.mode = CG_V2;
    snprintf(l.root, sizeof(l.root), "%s", root);
    snprintf(l.v2, sizeof(l.v2), "%s", root);
    assert_int_equal(cg_job_init(&cg, &l, "n2", 9), 0);
    snprintf(d, sizeof(d), "%s/docket/n2/job_9", root);
    put(d, "cpu.stat", "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n");
    put(d, "memory.current", "2097152\n");
    put(d, "memory.peak", "8388608\n");
    put(d, "io.stat",
        "259:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n"
        "8:0 rbytes=100 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n");
    assert_int_equal(cg_job_sample(&cg, &s), 0);
    assert_int_equal(s.cpu_ms, 1234);
    assert_int_equal(s.mem_bytes, 2097152);
    assert_int_equal(s.mem_peak_bytes, 8388608);
    assert_int_equal(s.io_read_bytes, 4196);
    assert_int_equal(s.io_write_bytes, 8192);
    /* an older kernel: no memory.peak, an empty io.stat (no IO yet) */
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/memory.peak", d);
    unlink(path);
    put(d, "io.stat", "");
    assert_int_equal(cg_job_sample(&cg, &s), 0);
    assert_int_equal(s.mem_peak_bytes, -1);
    assert_int_equal(s.io_read_bytes, 0);
    assert_int_equal(s.io_write_bytes, 0);
}

static void a_missing_group_is_enoent(void **state)
{
    (void)state;
    struct cg_layout l;
    struct cg_job cg;
    struct cg_sample s;
    v1_layout(&l, true);
    assert_int_equal(cg_job_init(&cg, &l, "n1", 99), 0);
    assert_int_equal(cg_job_sample(&cg, &s), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(v1_reads_cpuacct_memory_and_blkio, setup, teardown),
        cmocka_unit_test_setup_teardown(v1_without_blkio_says_io_unknown, setup, teardown),
        cmocka_unit_test_setup_teardown(v2_reads_cpu_stat_memory_and_io_stat, setup, teardown),
        cmocka_unit_test_setup_teardown(a_missing_group_is_enoent, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
