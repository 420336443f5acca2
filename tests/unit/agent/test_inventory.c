/*
 * test_inventory.c - host inventory from /proc, declared GPUs, the GPU type names made
 * from NVML names, and the NVML dlopen path against a stand-in library (fake_nvml.c).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "agent/inventory.h"

static void test_meminfo(void **st)
{
    (void)st;
    assert_int_equal(inventory_parse_meminfo("MemTotal:       16314192 kB\nMemFree: 1 kB\n"),
                     15931);
    assert_int_equal(inventory_parse_meminfo("MemFree: 1 kB\n"), -EINVAL);
    assert_int_equal(inventory_parse_meminfo("MemTotal: lots kB\n"), -EINVAL);
    assert_int_equal(inventory_parse_meminfo("MemTotal: 100 MB\n"), -EINVAL);
}

static void test_host(void **st)
{
    (void)st;
    struct inventory inv;
    memset(&inv, 0, sizeof inv);
    char err[256];
    assert_int_equal(inventory_host(&inv, NULL, err, sizeof err), 0);
    assert_true(inv.cpus >= 1);
    assert_true(inv.mem_mb > 64);
    assert_int_equal(inventory_host(&inv, "/nonexistent/meminfo", err, sizeof err), -ENOENT);
    assert_non_null(strstr(err, "cannot read '/nonexistent/meminfo'"));
}

static void test_declare(void **st)
{
    (void)st;
    struct inventory inv;
    memset(&inv, 0, sizeof inv);
    char err[256];
    assert_int_equal(inventory_declare(&inv, "8xH100-80GB", err, sizeof err), 0);
    assert_int_equal(inv.ngpus, 8);
    assert_string_equal(inv.gpu_type, "H100-80GB");
    assert_int_equal(inv.gpus[7].index, 7);
    assert_int_equal(inv.gpus[7].minor, 7);
    assert_int_equal(inv.gpus[0].mem_mb, 80 * 1024);
    assert_false(inv.from_nvml);
    assert_int_equal(inventory_declare(&inv, "2xA100:40G", err, sizeof err), 0);
    assert_int_equal(inv.gpus[1].mem_mb, 40 * 1024);
    assert_true(inventory_declare(&inv, "eightxH100", err, sizeof err) < 0);
    assert_non_null(strstr(err, "bad GPU declaration 'eightxH100'"));
    assert_true(inventory_declare(&inv, "65xH100", err, sizeof err) < 0);
    assert_int_equal(inventory_declare(&inv, "0", err, sizeof err), 0);
    assert_int_equal(inv.ngpus, 0);
}

/* declared GPUs measure nothing; a declared utilisation file sets util only */
static void test_declared_util(void **st)
{
    (void)st;
    struct inventory inv;
    char err[256], path[] = "/tmp/declutil.XXXXXX";
    memset(&inv, 0, sizeof inv);
    assert_int_equal(inventory_declare(&inv, "2xH100-80GB", err, sizeof err), 0);
    assert_int_equal(inv.gpus[1].util, -1);
    assert_int_equal(inv.gpus[1].power_mw, -1);
    assert_int_equal(inventory_declared_util(&inv, ""), -1);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, " 42\n", 4), 4);
    close(fd);
    assert_int_equal(inventory_declared_util(&inv, path), 42);
    assert_int_equal(inv.gpus[0].util, 42);
    assert_int_equal(inv.gpus[1].util, 42);
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, "101", 3), 3); /* out of range: nothing declared */
    close(fd);
    assert_int_equal(inventory_declared_util(&inv, path), -1);
    assert_int_equal(inv.gpus[0].util, -1);
    unlink(path);
}

static void test_type_names(void **st)
{
    (void)st;
    char t[64];
    inventory_type_from_name("NVIDIA H100 80GB HBM3", 81559, t, sizeof t);
    assert_string_equal(t, "H100-80GB");
    inventory_type_from_name("NVIDIA A100-SXM4-40GB", 40960, t, sizeof t);
    assert_string_equal(t, "A100-40GB");
    inventory_type_from_name("Tesla V100-PCIE-16GB", 16160, t, sizeof t);
    assert_string_equal(t, "V100-16GB");
    inventory_type_from_name("NVIDIA H200", 143771, t, sizeof t);
    assert_string_equal(t, "H200-141GB");
    inventory_type_from_name("NVIDIA", 0, t, sizeof t);
    assert_string_equal(t, "GPU");
}

static void test_nvml_absent(void **st)
{
    (void)st;
    struct inventory inv;
    memset(&inv, 0, sizeof inv);
    char err[256];
    assert_int_equal(inventory_nvml(&inv, "/nonexistent/libnvidia-ml.so.1", err, sizeof err),
                     -ENOENT);
    assert_non_null(strstr(err, "cannot load '/nonexistent/libnvidia-ml.so.1'"));
    assert_int_equal(inv.ngpus, 0);
    /* a library without NVML's entry points is refused too */
    assert_int_equal(inventory_nvml(&inv, "libm.so.6", err, sizeof err), -ENOENT);
    assert_non_null(strstr(err, "lacks the NVML entry points"));
}

static void test_nvml_fake(void **st)
{
    (void)st;
    struct inventory inv;
    memset(&inv, 0, sizeof inv);
    char err[256] = "";
    int rc = inventory_nvml(&inv, FAKE_NVML, err, sizeof err);
    if (rc)
        print_error("%s\n", err);
    assert_int_equal(rc, 0);
    assert_true(inv.from_nvml);
    assert_int_equal(inv.ngpus, 2);
    assert_string_equal(inv.gpu_type, "H100-80GB");
    assert_string_equal(inv.gpus[1].uuid, "GPU-00000000-0000-0000-0000-000000000001");
    /* the device minor comes from NVML, not from the index */
    assert_int_equal(inv.gpus[0].minor, 1);
    assert_int_equal(inv.gpus[1].minor, 0);
    assert_int_equal(inv.gpus[0].mem_mb, 81559);
    assert_int_equal(inv.gpus[1].mem_used_mb, 1024);
    assert_int_equal(inv.gpus[1].util, 75);
    assert_int_equal(inventory_nvml_sample(&inv), 0);
    assert_int_equal(inv.gpus[0].util, 5);
    /* usage samples: power, temperature, ECC (unknown where unsupported), XID events */
    assert_int_equal(inv.gpus[1].power_mw, 350000);
    assert_int_equal(inv.gpus[0].temp_c, 34);
    assert_int_equal(inv.gpus[1].ecc_errors, 4);
    assert_int_equal(inv.gpus[0].ecc_errors, -1);
    assert_int_equal(inv.gpus[1].xid_errors, 2);
    assert_int_equal(inv.gpus[0].xid_errors, 0);
    assert_int_equal(inventory_declared_util(&inv, "/nonexistent"), -1);
    assert_int_equal(inv.gpus[1].util, 75); /* measured GPUs are not declared */
    inventory_release(&inv);
    assert_null(inv.nvml);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meminfo),       cmocka_unit_test(test_host),
        cmocka_unit_test(test_declare),       cmocka_unit_test(test_type_names),
        cmocka_unit_test(test_nvml_absent),   cmocka_unit_test(test_nvml_fake),
        cmocka_unit_test(test_declared_util),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
