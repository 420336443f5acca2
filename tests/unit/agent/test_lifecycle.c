/* test_lifecycle.c - unit tests of the agent's lifecycle work (agent/lifecycle.h,
 * lc_execute) on a temporary directory holding two pools: a dry run lists and touches
 * nothing; a move copies byte for byte, keeps mode and times and removes the source; a
 * copy that fails its check leaves the source; a symlink in the source is not followed
 * and one where a target directory goes is not written through; a copy left by a run cut
 * short lets the source go, another file of that name does not; a delete with a marker
 * takes only the marked tree; a tree deeper than LC_MAX_DEPTH is walked without harm. */
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
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/lifecycle.h"
#include "agent/supervisor.h"

#define DAY ((int64_t)86400 * 1000)

static char dir[64];
static char hot[128], cold[128];

static void mkdirs(const char *path)
{
    char p[512];
    snprintf(p, sizeof(p), "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

/* A file under the hot area of `bytes` bytes, last used `days` ago. */
static void file(const char *rel, int bytes, int days)
{
    char p[512], d[512];
    snprintf(p, sizeof(p), "%s/%s", hot, rel);
    snprintf(d, sizeof(d), "%s", p);
    *strrchr(d, '/') = '\0';
    mkdirs(d);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    for (int i = 0; i < bytes; i++)
        fputc('a' + i % 26, f);
    fclose(f);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= (time_t)days * 86400;
    t[1] = t[0];
    assert_int_equal(utimensat(AT_FDCWD, p, t, AT_SYMLINK_NOFOLLOW), 0);
}

static bool exists(const char *base, const char *rel)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", base, rel);
    return lstat(p, &st) == 0;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/docket-lc-test.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(hot, sizeof(hot), "%s/hot/projects/ml", dir);
    snprintf(cold, sizeof(cold), "%s/cold/projects/ml", dir);
    mkdirs(hot);
    mkdirs(cold);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    lc_test_corrupt(NULL);
    return sup_remove_tree(dir);
}

static struct lifecycle_run run(enum lifecycle_action a, bool dry)
{
    struct lifecycle_run r = {.id = 1, .action = a, .after_ms = 30 * DAY, .dry_run = dry};
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    r.now_ms = (int64_t)now.tv_sec * 1000;
    strcpy(r.rule, "t");
    strcpy(r.project, "ml");
    snprintf(r.from, sizeof(r.from), "%s/hot", dir);
    if (a == LC_MOVE)
        snprintf(r.to, sizeof(r.to), "%s/cold", dir);
    return r;
}

static void dry_run_then_move(void **state)
{
    (void)state;
    file("old/a.bin", 5000, 40);
    file("new.bin", 10, 1);
    struct lifecycle_run r = run(LC_MOVE, true);
    struct lifecycle_result res;
    lc_execute(&r, &res);
    assert_true(res.ok);
    assert_int_equal(res.files, 1);
    assert_int_equal(res.bytes, 5000);
    assert_string_equal(res.list[0].path, "old/a.bin");
    assert_true(exists(hot, "old/a.bin"));
    assert_false(exists(cold, "old"));
    assert_int_equal(res.dirs_removed, 0);
    assert_true(exists(hot, "old"));
    lifecycle_result_release(&res);

    r.dry_run = false;
    lc_execute(&r, &res);
    assert_true(res.ok);
    assert_int_equal(res.files, 1);
    assert_false(exists(hot, "old/a.bin"));
    assert_true(exists(hot, "new.bin"));
    /* the directory the move emptied went with it; the area stays */
    assert_false(exists(hot, "old"));
    assert_int_equal(res.dirs_removed, 1);
    char p[512];
    struct stat st;
    snprintf(p, sizeof(p), "%s/old/a.bin", cold);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_size, 5000);
    assert_true(r.now_ms / 1000 - st.st_mtim.tv_sec >= 39 * 86400); /* its times kept */
    lifecycle_result_release(&res);
}

static void failed_check_keeps_source(void **state)
{
    (void)state;
    file("corrupt.bin", 3000, 40);
    lc_test_corrupt("corrupt.bin");
    struct lifecycle_run r = run(LC_MOVE, false);
    struct lifecycle_result res;
    lc_execute(&r, &res);
    assert_false(res.ok);
    assert_int_equal(res.failed, 1);
    assert_non_null(strstr(res.list[0].error, "failed its check"));
    assert_true(exists(hot, "corrupt.bin"));
    assert_false(exists(cold, "corrupt.bin"));
    assert_false(exists(cold, ".docket-lc.1.tmp"));
    lifecycle_result_release(&res);
}

static void links_not_followed(void **state)
{
    (void)state;
    char out[256], p[512];
    snprintf(out, sizeof(out), "%s/outside", dir);
    mkdirs(out);
    snprintf(p, sizeof(p), "%s/old.bin", out);
    FILE *f = fopen(p, "w");
    fputs("secret", f);
    fclose(f);
    struct timespec t[2] = {{0, 0}, {0, 0}}; /* 1970: very old */
    utimensat(AT_FDCWD, p, t, 0);
    snprintf(p, sizeof(p), "%s/evil", hot);
    assert_int_equal(symlink(out, p), 0);
    file("sub/c.bin", 10, 40);
    snprintf(p, sizeof(p), "%s/sub", cold);
    assert_int_equal(symlink(out, p), 0); /* where the target directory goes */
    struct lifecycle_run r = run(LC_MOVE, false);
    struct lifecycle_result res;
    lc_execute(&r, &res);
    assert_int_equal(res.files, 0);
    assert_int_equal(res.failed, 1);
    assert_string_equal(res.list[0].path, "sub/c.bin");
    assert_true(exists(out, "old.bin"));
    assert_false(exists(out, "c.bin"));
    assert_true(exists(hot, "sub/c.bin"));
    lifecycle_result_release(&res);
}

/* A copy left on the target by a run cut short (same bytes): the source goes; a different
 * file of that name: both stay. */
static void copy_left_by_a_cut_run(void **state)
{
    (void)state;
    char p[512], q[512];
    file("same.bin", 4000, 40);
    file("other.bin", 4000, 40);
    snprintf(p, sizeof(p), "cp %s/same.bin %s/same.bin", hot, cold);
    assert_int_equal(system(p), 0);
    file("same.bin", 4000, 40); /* the same bytes, old again after cp read them */
    snprintf(q, sizeof(q), "%s/other.bin", cold);
    FILE *f = fopen(q, "w");
    fputs("the project's own", f);
    fclose(f);
    struct lifecycle_run r = run(LC_MOVE, false);
    struct lifecycle_result res;
    lc_execute(&r, &res);
    assert_int_equal(res.files, 1);
    assert_int_equal(res.failed, 1);
    assert_false(exists(hot, "same.bin"));
    assert_true(exists(cold, "same.bin"));
    assert_true(exists(hot, "other.bin"));
    for (size_t i = 0; i < res.nlist; i++)
        if (strcmp(res.list[i].path, "other.bin") == 0)
            assert_non_null(strstr(res.list[i].error, "different file"));
    lifecycle_result_release(&res);
}

static void delete_marked_only(void **state)
{
    (void)state;
    file("run1/" LC_MARKER, 0, 40);
    file("run1/deep/x.ckpt", 100, 40);
    file("run2/x.ckpt", 100, 40);
    struct lifecycle_run r = run(LC_DELETE, false);
    r.marker = true;
    struct lifecycle_result res;
    lc_execute(&r, &res);
    assert_true(res.ok);
    assert_int_equal(res.files, 1);
    assert_string_equal(res.list[0].path, "run1/deep/x.ckpt");
    assert_false(exists(hot, "run1/deep/x.ckpt"));
    assert_true(exists(hot, "run1/" LC_MARKER));
    assert_true(exists(hot, "run2/x.ckpt"));
    /* deep, emptied, went; run1 keeps its marker and stays */
    assert_false(exists(hot, "run1/deep"));
    assert_int_equal(res.dirs_removed, 1);
    lifecycle_result_release(&res);
}

static void deep_tree_walked_safely(void **state)
{
    (void)state;
    char rel[4096] = "";
    size_t n = 0;
    for (int i = 0; i < LC_MAX_DEPTH + 20; i++)
        n += (size_t)snprintf(rel + n, sizeof(rel) - n, "d/");
    snprintf(rel + n, sizeof(rel) - n, "f.bin");
    char p[8192];
    snprintf(p, sizeof(p), "%s/%s", hot, rel);
    *strrchr(p, '/') = '\0';
    mkdirs(p);
    file("shallow.bin", 10, 40);
    struct lifecycle_run r = run(LC_DELETE, true);
    struct lifecycle_result res;
    lc_execute(&r, &res);
    assert_int_equal(res.files, 1); /* the shallow file; the deep ones are counted as left */
    assert_non_null(strstr(res.message, "deeper than"));
    lifecycle_result_release(&res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(dry_run_then_move, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_check_keeps_source, setup, teardown),
        cmocka_unit_test_setup_teardown(links_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(copy_left_by_a_cut_run, setup, teardown),
        cmocka_unit_test_setup_teardown(delete_marked_only, setup, teardown),
        cmocka_unit_test_setup_teardown(deep_tree_walked_safely, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
