/* test_pathopen.c - agent/pathopen.h on a tree in a temporary directory: a symbolic link
 * at any component of a path is refused with ELOOP (the last one, a directory on the way,
 * a magic link in /proc), by openat2 and by the descriptor walk alike; nothing is created
 * through a link; paths without links open as open(2) would. Needs no root. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#include "agent/pathopen.h"

static char root[64];

typedef int open_fn(const char *path, int flags, mode_t mode);

static void make_tree(void)
{
    char p[PATH_MAX];
    snprintf(root, sizeof root, "/tmp/docket-pathopen.XXXXXX");
    assert_non_null(mkdtemp(root));
    snprintf(p, sizeof p, "%s/real/sub", root);
    char q[PATH_MAX];
    snprintf(q, sizeof q, "%s/real", root);
    assert_int_equal(mkdir(q, 0755), 0);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/real/sub/out", root);
    int fd = open(p, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    close(fd);
    snprintf(p, sizeof p, "%s/link", root); /* a directory link: root/link -> real */
    assert_int_equal(symlink("real", p), 0);
    snprintf(p, sizeof p, "%s/real/sub/last", root); /* a link at the end */
    assert_int_equal(symlink("out", p), 0);
}

static void remove_tree(void)
{
    char cmd[PATH_MAX];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static int try_open(open_fn *fn, const char *rel, int flags)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    int fd = fn(p, flags, 0644);
    if (fd >= 0)
        close(fd);
    return fd >= 0 ? 0 : fd;
}

static void links_refused(open_fn *fn)
{
    make_tree();
    assert_int_equal(try_open(fn, "real/sub/out", O_RDONLY), 0);
    assert_int_equal(try_open(fn, "real//sub/../sub/out", O_RDONLY), 0);
    assert_int_equal(try_open(fn, "link/sub/out", O_RDONLY), -ELOOP);
    assert_int_equal(try_open(fn, "real/sub/last", O_RDONLY), -ELOOP);
    assert_int_equal(try_open(fn, "real/sub/nothere", O_RDONLY), -ENOENT);
    assert_int_equal(try_open(fn, "real/sub/out/x", O_RDONLY), -ENOTDIR);
    assert_int_equal(try_open(fn, "real/sub/", O_RDONLY | O_DIRECTORY), 0);
    /* nothing is made through a link */
    assert_int_equal(try_open(fn, "link/sub/new", O_WRONLY | O_CREAT), -ELOOP);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/real/sub/new", root);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(try_open(fn, "real/sub/new", O_WRONLY | O_CREAT), 0);
    assert_int_equal(access(p, F_OK), 0);
    remove_tree();
    /* a magic link: /proc/self is a link, and so is /proc/self/fd/N */
    assert_int_equal(fn("/proc/self/fd/0", O_RDONLY, 0), -ELOOP);
    /* a relative path starts at the current directory */
    char cwd[PATH_MAX];
    assert_non_null(getcwd(cwd, sizeof cwd));
    make_tree();
    assert_int_equal(chdir(root), 0);
    int fd = fn("real/sub/out", O_RDONLY, 0);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(fn("link/sub/out", O_RDONLY, 0), -ELOOP);
    assert_int_equal(chdir(cwd), 0);
    remove_tree();
}

static void openat2_or_walk_refuses_links(void **st)
{
    (void)st;
    links_refused(path_open_nofollow);
}

static void walk_refuses_links(void **st)
{
    (void)st;
    links_refused(path_open_nofollow_walk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(openat2_or_walk_refuses_links),
        cmocka_unit_test(walk_refuses_links),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
