/*
 * dbrestore.c - `docketd --restore FILE` and the lock that makes it safe
 * (docs/operations.md "Back up and restore the state").
 *
 * A restore must be impossible to get half right: FILE is copied first into the state
 * directory (docket.db.restoring, 0600: FILE itself is never opened for writing) and the
 * copy checked (store_backup_verify: integrity_check, a docketd database, a schema no
 * newer than this build's; an older one is migrated by the next start, as an upgrade
 * is). Only then is anything moved: the current database and its -wal and -shm go into
 * before-restore-YYYYMMDD-HHMMSS/ together (a database without its WAL is a different,
 * older database), and the copy is renamed into place, so the state directory holds
 * either the old database or the new one at every moment. All of it under the state
 * directory's lock, which a running docketd holds: a restore under a live docketd is
 * refused before anything is touched. Run as root on a state directory that is another
 * user's (the packages' `docket`), what it makes there is given to that user.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "controller/config.h"
#include "controller/dbrestore.h"
#include "store/store.h"

/* A file root made for docketd's state (the restore runs as root; docketd as `docket`):
 * owned as the state directory is, so docketd can open it. */
static void own_like_state_dir(const char *path, const char *state_dir)
{
    struct stat sb;
    if (geteuid() == 0 && stat(state_dir, &sb) == 0 && sb.st_uid != 0)
        (void)!lchown(path, sb.st_uid, sb.st_gid);
}

int ctl_state_lock(const char *state_dir, char *err, size_t errlen)
{
    char path[CTL_PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", state_dir, CTL_STATE_LOCK);
    /* read-only is enough for flock, and opens whoever made the file */
    int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open the lock '%s': %s", path, strerror(e));
        return -e;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            snprintf(err, errlen,
                     "a docketd is running on '%s' (it holds %s): stop it first "
                     "(systemctl stop docketd), then try again",
                     state_dir, path);
        else
            snprintf(err, errlen, "cannot lock '%s': %s", path, strerror(e));
        return e == EWOULDBLOCK ? -EWOULDBLOCK : -e;
    }
    own_like_state_dir(path, state_dir);
    return fd;
}

int ctl_state_lock_wait(const char *state_dir, int wait_ms, char *err, size_t errlen)
{
    int fd;
    for (int waited = 0;; waited += 50) {
        fd = ctl_state_lock(state_dir, err, errlen);
        if (fd != -EWOULDBLOCK || waited >= wait_ms)
            return fd;
        usleep(50000);
    }
}

/* Copy src into dst (created 0600, must not exist) and sync it. 0 or -errno. */
static int copy_file(const char *src, const char *dst, char *err, size_t errlen)
{
    char buf[1 << 16];
    int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
    if (in < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot read '%s': %s", src, strerror(-rc));
        return rc;
    }
    out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot create '%s': %s", dst, strerror(-rc));
        close(in);
        return rc;
    }
    for (;;) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -errno : 0;
            break;
        }
        for (ssize_t off = 0; off < n && rc == 0;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno != EINTR)
                rc = -errno;
            off += w > 0 ? w : 0;
        }
        if (rc < 0)
            break;
    }
    if (rc == 0 && fsync(out) < 0)
        rc = -errno;
    if (close(out) < 0 && rc == 0)
        rc = -errno;
    close(in);
    if (rc < 0) {
        snprintf(err, errlen, "cannot copy '%s' to '%s': %s", src, dst, strerror(-rc));
        (void)unlink(dst);
    }
    return rc;
}

static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

/* Move docket.db, -wal and -shm (those present) into a new before-restore-TS/ whose name
 * goes to aside ("" when there was nothing to move). 0 or -errno. */
static int move_aside(const char *state_dir, char *aside, size_t len)
{
    static const char *const sfx[] = {"", "-wal", "-shm"};
    char from[CTL_PATH_MAX + 32], to[CTL_PATH_MAX + 96], stamp[32];
    struct stat sb;
    bool any = false;
    aside[0] = '\0';
    for (size_t i = 0; i < 3; i++) {
        snprintf(from, sizeof(from), "%s/docket.db%s", state_dir, sfx[i]);
        any = any || lstat(from, &sb) == 0;
    }
    if (!any)
        return 0;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
    snprintf(aside, len, "%s/before-restore-%s", state_dir, stamp);
    if (mkdir(aside, 0700) < 0)
        return -errno;
    own_like_state_dir(aside, state_dir);
    for (size_t i = 0; i < 3; i++) {
        snprintf(from, sizeof(from), "%s/docket.db%s", state_dir, sfx[i]);
        snprintf(to, sizeof(to), "%s/docket.db%s", aside, sfx[i]);
        if (lstat(from, &sb) == 0 && rename(from, to) < 0)
            return -errno;
    }
    return sync_dir(aside);
}

int ctl_restore_file(const char *state_dir, const char *file)
{
    char err[1024], tmp[CTL_PATH_MAX + 32], db[CTL_PATH_MAX + 32], aside[CTL_PATH_MAX + 64];
    struct store_backup_info info = {0};
    if (mkdir(state_dir, 0700) < 0 && errno != EEXIST) {
        fprintf(stderr, "docketd --restore: cannot create '%s': %s\n", state_dir, strerror(errno));
        return 1;
    }
    int lock = ctl_state_lock(state_dir, err, sizeof(err));
    if (lock < 0) {
        fprintf(stderr, "docketd --restore: %s; nothing was changed\n", err);
        return 1;
    }
    snprintf(tmp, sizeof(tmp), "%s/docket.db.restoring", state_dir);
    snprintf(db, sizeof(db), "%s/docket.db", state_dir);
    (void)unlink(tmp); /* a restore that stopped half-way: under the lock, nobody's */
    int rc = copy_file(file, tmp, err, sizeof(err));
    if (rc == 0 && (rc = store_backup_verify(tmp, &info, err, sizeof(err))) < 0) {
        (void)unlink(tmp);
        fprintf(stderr,
                "docketd --restore: '%s' is not a backup docketd can run on (checked"
                " as its copy %s)\n",
                file, err);
        close(lock);
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "docketd --restore: %s; nothing was changed\n", err);
        close(lock);
        return 1;
    }
    if ((rc = move_aside(state_dir, aside, sizeof(aside))) < 0) {
        fprintf(stderr,
                "docketd --restore: cannot move the current database aside into '%s': %s;"
                " the backup is checked and waits in '%s': fix this and run the restore"
                " again\n",
                aside, strerror(-rc), tmp);
        close(lock);
        return 1;
    }
    own_like_state_dir(tmp, state_dir);
    if (rename(tmp, db) < 0 || chmod(db, 0600) < 0 || sync_dir(state_dir) < 0) {
        fprintf(stderr, "docketd --restore: cannot install '%s' as '%s': %s\n", tmp, db,
                strerror(errno));
        close(lock);
        return 1;
    }
    close(lock);
    printf("restored %s into %s (schema %d, %lld bytes)\n", file, db, info.schema,
           (long long)info.bytes);
    if (aside[0])
        printf("the previous database is in %s/\n", aside);
    if (info.schema < store_schema_latest())
        printf("its schema (%d) is older than this docketd's (%d): the next start migrates it\n",
               info.schema, store_schema_latest());
    printf("next: start docketd (systemctl start docketd); it needs the secrets key of the "
           "docketd that made the backup (STATE_DIR/secrets.key) to read the projects' "
           "secrets\n");
    return 0;
}

int ctl_restore_pg(const char *state_dir, const char *uri, const char *file)
{
    char err[1024], aside[CTL_PATH_MAX + 64], stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
    if (mkdir(state_dir, 0700) < 0 && errno != EEXIST) {
        fprintf(stderr, "docketd --restore: cannot create '%s': %s\n", state_dir, strerror(errno));
        return 1;
    }
    snprintf(aside, sizeof(aside), "%s/before-restore-%s.pgdump", state_dir, stamp);
    int rc = store_pg_restore(uri, file, aside, err, sizeof(err));
    if (rc < 0) {
        bool moved = access(aside, F_OK) == 0;
        fprintf(stderr, "docketd --restore: %s; %s\n", err,
                moved ? "the database was not changed (pg_restore runs in one transaction)"
                      : "nothing was changed");
        return 1;
    }
    printf("restored %s into the PostgreSQL database\n", file);
    if (access(aside, F_OK) == 0) { /* an empty database (a new one) had nothing to keep */
        own_like_state_dir(aside, state_dir);
        printf("what it held before is in %s (restore it the same way)\n", aside);
    } else
        printf("the database held no docketd state before: nothing was set aside\n");
    printf("next: start docketd; it migrates an older schema, refuses a newer one, and needs "
           "the secrets key of the docketd that made the backup (STATE_DIR/secrets.key) to "
           "read the projects' secrets\n");
    return 0;
}
