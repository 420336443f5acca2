/* test_backup.c - unit tests of store/backup.c: a snapshot of a database with a
 * transaction open shows only what was committed, is 0600 and whole on its own; a
 * destination that exists is refused and kept; a stop request removes the copy; and
 * store_backup_verify refuses a truncated file, zeroed pages, garbage, another program's SQLite
 * file and a schema newer than this build's. */
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
#include <cmocka.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"

#include "fixture.h"

static void copy_path(const struct fx *f, char *out, size_t len)
{
    snprintf(out, len, "%s/copy.db", f->dir);
}

static void remove_copy(const char *p)
{
    char s[200];
    unlink(p);
    snprintf(s, sizeof(s), "%s-wal", p);
    unlink(s);
    snprintf(s, sizeof(s), "%s-shm", p);
    unlink(s);
}

static void exec_sql(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void snapshot_shows_only_committed(void **state)
{
    struct fx *f = *state;
    char copy[160], side[200], err[256];
    struct store_backup_info info = {0};
    struct stat sb;
    int64_t v = 0;
    copy_path(f, copy, sizeof(copy));
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_counter_set(f->st, "next_job_id", 41), 0);
    assert_int_equal(store_commit(f->st), 0);
    /* the writer is in the middle of its next transaction while the copy is made */
    assert_int_equal(store_begin(f->st), 0);
    assert_int_equal(store_counter_set(f->st, "next_job_id", 99), 0);
    assert_int_equal(store_backup_write(store_path(f->st), copy, NULL, &info, err, sizeof(err)), 0);
    assert_int_equal(store_commit(f->st), 0); /* and commits after it */
    assert_int_equal(info.schema, store_schema_version(f->st));
    assert_int_equal(stat(copy, &sb), 0);
    assert_int_equal(info.bytes, (int64_t)sb.st_size);
    assert_int_equal(sb.st_mode & 0777, 0600);
    snprintf(side, sizeof(side), "%s-wal", copy);
    assert_int_equal(access(side, F_OK), -1); /* one self-contained file */
    struct store *c = store_open(copy, err, sizeof(err));
    assert_non_null(c);
    assert_int_equal(store_counter_get(c, "next_job_id", &v), 0);
    assert_int_equal(v, 41);
    store_close(c);
    remove_copy(copy);
}

static void existing_destination_refused(void **state)
{
    struct fx *f = *state;
    char copy[160], err[256], buf[8] = "";
    struct store_backup_info info;
    copy_path(f, copy, sizeof(copy));
    int fd = open(copy, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "mine", 4), 4);
    close(fd);
    assert_int_equal(store_backup_write(store_path(f->st), copy, NULL, &info, err, sizeof(err)),
                     -EEXIST);
    assert_non_null(strstr(err, copy));
    fd = open(copy, O_RDONLY);
    assert_int_equal(read(fd, buf, sizeof(buf) - 1), 4);
    close(fd);
    assert_string_equal(buf, "mine"); /* not touched, not removed */
    remove_copy(copy);
}

static void stop_request_removes_copy(void **state)
{
    struct fx *f = *state;
    char copy[160], err[256];
    struct store_backup_info info;
    atomic_bool cancel = true;
    copy_path(f, copy, sizeof(copy));
    assert_int_equal(store_backup_write(store_path(f->st), copy, &cancel, &info, err, sizeof(err)),
                     -ECANCELED);
    assert_int_equal(access(copy, F_OK), -1);
}

static void verify_refuses_damaged_and_foreign(void **state)
{
    struct fx *f = *state;
    char copy[160], err[256];
    struct store_backup_info info;
    struct stat sb;
    copy_path(f, copy, sizeof(copy));
    /* enough pages that half the file cuts tables in two */
    assert_int_equal(store_begin(f->st), 0);
    for (int i = 0; i < 2000; i++) {
        char name[32];
        snprintf(name, sizeof(name), "c%d", i);
        assert_int_equal(store_counter_set(f->st, name, i), 0);
    }
    assert_int_equal(store_commit(f->st), 0);
    assert_int_equal(store_backup_write(store_path(f->st), copy, NULL, &info, err, sizeof(err)), 0);
    assert_int_equal(store_backup_verify(copy, &info, err, sizeof(err)), 0);
    assert_int_equal(stat(copy, &sb), 0);
    assert_int_equal(truncate(copy, sb.st_size / 2), 0);
    assert_int_equal(store_backup_verify(copy, &info, err, sizeof(err)), -EINVAL);
    remove_copy(copy);

    /* pages zeroed in the middle (the length is right, what is inside is not) */
    static const char zeros[8 * 4096];
    assert_int_equal(store_backup_write(store_path(f->st), copy, NULL, &info, err, sizeof(err)), 0);
    int fd = open(copy, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, zeros, sizeof(zeros), 2 * 4096), (ssize_t)sizeof(zeros));
    close(fd);
    assert_int_equal(store_backup_verify(copy, &info, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "damaged"));
    remove_copy(copy);

    fd = open(copy, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    for (int i = 0; i < 512; i++)
        assert_int_equal(write(fd, "not a database\n", 15), 15);
    close(fd);
    assert_int_equal(store_backup_verify(copy, &info, err, sizeof(err)), -EINVAL);
    remove_copy(copy);

    exec_sql(copy, "CREATE TABLE t(x); PRAGMA user_version = 3");
    assert_int_equal(store_backup_verify(copy, &info, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "not a docketd database"));
    remove_copy(copy);

    assert_int_equal(store_backup_verify(copy, &info, err, sizeof(err)), -ENOENT);
}

static void verify_refuses_newer_schema(void **state)
{
    struct fx *f = *state;
    char copy[160], err[256];
    struct store_backup_info info;
    copy_path(f, copy, sizeof(copy));
    assert_int_equal(store_backup_write(store_path(f->st), copy, NULL, &info, err, sizeof(err)), 0);
    exec_sql(copy, "PRAGMA user_version = 9999");
    assert_int_equal(store_backup_verify(copy, &info, err, sizeof(err)), -EPROTO);
    assert_non_null(strstr(err, "newer"));
    remove_copy(copy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(snapshot_shows_only_committed, setup, teardown),
        cmocka_unit_test_setup_teardown(existing_destination_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(stop_request_removes_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(verify_refuses_damaged_and_foreign, setup, teardown),
        cmocka_unit_test_setup_teardown(verify_refuses_newer_schema, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
