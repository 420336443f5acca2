/* test_storage.c - unit tests of the agent's storage work (agent/storage.h) on a temporary
 * directory: the file system type names, mount points, the usage scan (a hard link
 * counted once, a symlink not followed), and a whole check of a plain-directory pool: the
 * probe, the area made root's with the project's group and mode 2770, a planted symlink
 * refused, a missing pool and an unknown group reported. Root only where it chowns. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/storage.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/docket-stor-test.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, size_t bytes)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    char block[4096];
    memset(block, 'x', sizeof(block));
    for (size_t done = 0; done < bytes; done += sizeof(block))
        assert_int_equal(write(fd, block, sizeof(block)), sizeof(block));
    assert_int_equal(fsync(fd), 0);
    close(fd);
}

static void names_and_mount_points(void **state)
{
    (void)state;
    assert_string_equal(stor_fstype_name(0xEF53), "ext4");
    assert_string_equal(stor_fstype_name(0x6969), "nfs");
    assert_null(stor_fstype_name(0x1234));
    assert_int_equal(stor_is_mount_point("/"), 1);
    assert_int_equal(stor_is_mount_point("/proc"), 1);
    assert_int_equal(stor_is_mount_point(dir), 0);
    char none[128];
    snprintf(none, sizeof(none), "%s/none", dir);
    assert_int_equal(stor_is_mount_point(none), -ENOENT);
}

static void scan_counts_each_inode_once(void **state)
{
    (void)state;
    char a[128], b[128], l[128], sub[128];
    snprintf(a, sizeof(a), "%s/a", dir);
    snprintf(b, sizeof(b), "%s/b", dir);
    snprintf(l, sizeof(l), "%s/l", dir);
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    int64_t empty = stor_scan_bytes(dir);
    assert_true(empty >= 0);
    write_file(a, 64 * 1024);
    int64_t one = stor_scan_bytes(dir);
    assert_true(one - empty >= 64 * 1024);
    assert_int_equal(link(a, b), 0);         /* a hard link: the same blocks */
    assert_int_equal(symlink("/usr", l), 0); /* a link out: not followed */
    assert_int_equal(stor_scan_bytes(dir), one);
    assert_int_equal(mkdir(sub, 0755), 0);
    write_file(a, 128 * 1024); /* rewritten bigger */
    assert_true(stor_scan_bytes(dir) >= one + 64 * 1024);
    assert_true(stor_scan_bytes("/nonexistent-docket") < 0);
}

static void check_a_plain_pool(void **state)
{
    (void)state;
    struct storage_config c;
    memset(&c, 0, sizeof(c));
    c.gen = 3;
    c.interval_ms = 1000;
    c.npools = 2;
    snprintf(c.pools[0].name, sizeof(c.pools[0].name), "cold");
    snprintf(c.pools[0].path, sizeof(c.pools[0].path), "%s", dir);
    snprintf(c.pools[1].name, sizeof(c.pools[1].name), "gone");
    snprintf(c.pools[1].path, sizeof(c.pools[1].path), "%s/gone", dir);
    struct storage_area areas[3] = {
        {"cold", "ml", "4711", 1 << 20},
        {"cold", "bio", "no-such-group-docket", 0},
        {"gone", "ml", "4711", 0},
    };
    c.areas = areas;
    c.nareas = 3;
    struct storage_report r;
    stor_check(&c, "n1", &r);
    assert_int_equal(r.gen, 3);
    assert_int_equal(r.npools, 2);
    assert_true(r.pools[0].ok);
    assert_true(r.pools[0].latency_us >= 0);
    assert_true(r.pools[0].size_bytes > 0);
    assert_false(r.pools[1].ok);
    assert_non_null(strstr(r.pools[1].message, "does not exist"));
    assert_int_equal(r.nareas, 3);
    assert_false(r.areas[1].ok);
    assert_non_null(strstr(r.areas[1].message, "no group 'no-such-group-docket'"));
    assert_false(r.areas[2].ok); /* on a failing pool */
    char probe[128];
    snprintf(probe, sizeof(probe), "%s/.docket-probe.n1.%d", dir, (int)getpid());
    assert_int_equal(access(probe, F_OK), -1); /* the probe is gone */
    if (geteuid() != 0) {
        storage_report_release(&r);
        skip(); /* the area's owner needs root */
    }
    assert_true(r.areas[0].ok);
    assert_int_equal(r.areas[0].enforced, STORAGE_QUOTA_ACCOUNTING);
    char area[128];
    struct stat st;
    snprintf(area, sizeof(area), "%s/projects/ml", dir);
    assert_int_equal(stat(area, &st), 0);
    assert_int_equal(st.st_uid, 0);
    assert_int_equal(st.st_gid, 4711);
    assert_int_equal(st.st_mode & 07777, 02770);
    storage_report_release(&r);
    /* a projects/ others may write in (a user could plant links there) is refused */
    char projects[128];
    snprintf(projects, sizeof(projects), "%s/projects", dir);
    assert_int_equal(chmod(projects, 0777), 0);
    stor_check(&c, "n1", &r);
    assert_false(r.areas[0].ok);
    assert_non_null(strstr(r.areas[0].message, "refused"));
    storage_report_release(&r);
    /* an area replaced by a symlink is not followed */
    assert_int_equal(chmod(projects, 0755), 0);
    assert_int_equal(rename(area, probe), 0);
    assert_int_equal(symlink("/etc", area), 0);
    stor_check(&c, "n1", &r);
    assert_false(r.areas[0].ok);
    storage_report_release(&r);
    struct stat etc;
    assert_int_equal(stat("/etc", &etc), 0);
    assert_int_equal(etc.st_gid, 0); /* untouched */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(names_and_mount_points, setup, teardown),
        cmocka_unit_test_setup_teardown(scan_counts_each_inode_once, setup, teardown),
        cmocka_unit_test_setup_teardown(check_a_plain_pool, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
