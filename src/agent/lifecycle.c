/*
 * lifecycle.c - the agent's lifecycle runs (lifecycle.h, docs/storage.md "Lifecycle
 * rules"): the walk of a project's area, the verified and throttled copy, the deletes; and
 * the agent's side (runs queued, one child at a time, results in the heartbeat).
 *
 * The child runs as root in directories the project's members write in, so nothing here
 * takes a path twice: every directory is opened from its parent's descriptor with
 * O_NOFOLLOW, every file is stat'ed with AT_SYMLINK_NOFOLLOW, opened with O_NOFOLLOW and
 * checked to be the inode the walk saw, and unlinked from its directory's descriptor only
 * while it is still that inode. A link a member plants is never followed, on either pool.
 */
#define _GNU_SOURCE
#include "agent/lifecycle.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/pathopen.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

#define LC_CHUNK   (1 << 20)
#define LC_SHA_LEN 32

static char corrupt_name[NAME_MAX + 1];

void lc_test_corrupt(const char *name)
{
    str_copy(corrupt_name, sizeof(corrupt_name), name ? name : "");
}

/* ---- one walk ------------------------------------------------------------------------ */

struct frame {
    int fd;                  /* the source directory */
    DIR *d;                  /* its entries */
    int dst;                 /* the same directory in the target area; -1 until needed */
    bool marked;             /* it or a directory above it has the marker */
    size_t rel_len;          /* its path's length in walk.rel */
    char name[NAME_MAX + 1]; /* its name in its parent */
    struct stat st;          /* for the target directory's owner and mode */
    int64_t emptied;         /* entries this run moved or deleted from it */
};

struct walk {
    const struct lifecycle_run *r;
    struct lifecycle_result *out;
    dev_t dev;
    bool noatime, stop;
    bool leases;  /* the source's file system gives write leases (not NFS) */
    int dst_area; /* a move's target area, -1 otherwise */
    struct frame stack[LC_MAX_DEPTH + 1];
    int depth;
    char rel[LC_PATH_MAX * 2];
    int64_t deep, copied, t0_ns;
    char stop_why[STORAGE_MSG_MAX + 1];
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sleep until the bytes copied so far fit the run's rate. */
static void throttle(struct walk *w, int64_t more)
{
    w->copied += more;
    if (w->r->rate_bytes <= 0)
        return;
    double want = (double)w->copied / (double)w->r->rate_bytes * 1e9;
    int64_t ahead = (int64_t)want - (mono_ns() - w->t0_ns);
    if (ahead <= 0)
        return;
    struct timespec ts = {(time_t)(ahead / 1000000000), (long)(ahead % 1000000000)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void note(struct walk *w, const char *rel, const struct stat *st, int64_t age_s,
                 const char *error)
{
    lifecycle_result_list(w->out, rel, (int64_t)st->st_size, age_s, error);
}

/* A file that could not be done: "WHAT: strerror(err)" in its entry. */
static void failed(struct walk *w, const char *rel, const struct stat *st, int64_t age_s,
                   const char *what, int err)
{
    char why[LC_ERROR_MAX];
    snprintf(why, sizeof(why), "%s: %s", what, strerror(err));
    w->out->failed++;
    note(w, rel, st, age_s, why);
}

static void done_one(struct walk *w, const char *rel, const struct stat *st, int64_t age_s)
{
    if (!w->r->dry_run)
        w->stack[w->depth - 1].emptied++;
    w->out->files++;
    w->out->bytes += (int64_t)st->st_size;
    w->out->freed_bytes += (int64_t)st->st_blocks * 512;
    note(w, rel, st, age_s, NULL);
}

/* ---- leases: is anyone else holding the file open ------------------------------------- */

/* A write lease is granted only while no other descriptor has the file open, and breaks
 * when one opens it: the file is not in use while we hold it. *have: false where the file
 * system gives no leases (the change checks alone then). false: the file is in use. NFS
 * answers EAGAIN to every write lease without a delegation, as if the file were open: it
 * is not asked (w->leases), the change checks alone guard its files. */
static bool lease_take(const struct walk *w, int fd, bool *have)
{
    *have = w->leases && fcntl(fd, F_SETLEASE, F_WRLCK) == 0;
    return *have || !w->leases || (errno != EAGAIN && errno != EBUSY);
}

static bool lease_intact(int fd, bool have)
{
    return !have || fcntl(fd, F_GETLEASE) == F_WRLCK;
}

static void lease_drop(int fd, bool have)
{
    if (have)
        (void)fcntl(fd, F_SETLEASE, F_UNLCK);
}

/* The file is what the walk saw, unchanged. */
static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* ---- the copy ------------------------------------------------------------------------ */

/* The target directory of stack level `lvl`, made (owned and moded as the source's) and
 * opened from its parent without following a link; -errno. */
static int dst_dir(struct walk *w, int lvl)
{
    struct frame *f = &w->stack[lvl];
    if (f->dst >= 0)
        return f->dst;
    int parent = dst_dir(w, lvl - 1); /* level 0 is the target area, always open */
    if (parent < 0)
        return parent;
    bool made = mkdirat(parent, f->name, 0700) == 0;
    if (!made && errno != EEXIST)
        return -errno;
    int fd = openat(parent, f->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (made &&
        (fchown(fd, f->st.st_uid, f->st.st_gid) < 0 || fchmod(fd, f->st.st_mode & 07777) < 0)) {
        int e = errno;
        close(fd);
        return -e;
    }
    f->dst = fd;
    return fd;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Read src from its start, hashing it (SHA-256 into md, its size into *size), and when
 * dst >= 0 write it there and fsync: -ENOSPC/-EDQUOT when the target is full, -EBUSY when
 * something opened a leased source meanwhile, else -errno. A walk (w) paces the reads. */
static int hash_stream(struct walk *w, int src, int dst, bool lease, const char *name,
                       unsigned char *md, int64_t *size)
{
    unsigned char *buf = xmalloc(LC_CHUNK);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int rc = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 ? 0 : -ENOMEM;
    off_t at = 0;
    while (rc == 0) {
        ssize_t k = pread(src, buf, LC_CHUNK, at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            rc = -errno;
        if (k <= 0)
            break;
        EVP_DigestUpdate(ctx, buf, (size_t)k);
        if (dst >= 0 && corrupt_name[0] && strcmp(name, corrupt_name) == 0 && at == 0)
            buf[0] ^= 0x5a; /* the test's fault: the copy differs from what was read */
        if (dst >= 0)
            rc = write_all(dst, buf, (size_t)k);
        at += k;
        if (rc == 0 && !lease_intact(src, lease))
            rc = -EBUSY;
        if (rc == 0 && w)
            throttle(w, k);
    }
    if (rc == 0 && dst >= 0 && fsync(dst) < 0)
        rc = -errno;
    unsigned len = 0;
    if (rc == 0 && EVP_DigestFinal_ex(ctx, md, &len) != 1)
        rc = -EIO;
    /* the check after a copy reads it back from the disk, not from the page cache */
    if (rc == 0 && dst >= 0)
        (void)posix_fadvise(dst, 0, 0, POSIX_FADV_DONTNEED);
    *size = at;
    EVP_MD_CTX_free(ctx);
    free(buf);
    return rc;
}

/* SHA-256 of what fd holds from its start; its size in *size. */
static int digest_fd(int fd, unsigned char *md, int64_t *size)
{
    return hash_stream(NULL, fd, -1, false, NULL, md, size);
}

/* The copy under its temporary name, read back: same size, same SHA-256. */
static bool copy_verified(int dstdir, const char *tmp, const unsigned char *md, int64_t size)
{
    unsigned char back[EVP_MAX_MD_SIZE];
    int64_t n = -1;
    int fd = openat(dstdir, tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    int rc = digest_fd(fd, back, &n);
    close(fd);
    return rc == 0 && n == size && memcmp(back, md, LC_SHA_LEN) == 0;
}

/* Give the copy the source's owner, mode and times (its access time too, so it ages on
 * the target from the same day). */
static int copy_attrs(int dstdir, const char *tmp, const struct stat *st)
{
    int fd = openat(dstdir, tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct timespec t[2] = {st->st_atim, st->st_mtim};
    int rc = fchown(fd, st->st_uid, st->st_gid) < 0 || fchmod(fd, st->st_mode & 07777) < 0 ||
                     futimens(fd, t) < 0
                 ? -errno
                 : 0;
    close(fd);
    return rc;
}

static bool target_full(int err)
{
    return err == ENOSPC || err == EDQUOT;
}

/* The target already has a file of that name. A copy this node left when a run was cut
 * short between its rename and its unlink has the source's size and SHA-256: the source
 * may go. Anything else is the project's own file, and the source stays. */
static bool left_copy(int dst, const char *name, int src, const struct stat *st)
{
    struct stat t;
    unsigned char a[EVP_MAX_MD_SIZE], b[EVP_MAX_MD_SIZE];
    int64_t na = -1, nb = -2;
    if (fstatat(dst, name, &t, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(t.st_mode) ||
        t.st_size != st->st_size)
        return false;
    int fd = openat(dst, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool same = digest_fd(fd, a, &na) == 0 && digest_fd(src, b, &nb) == 0 && na == nb &&
                memcmp(a, b, LC_SHA_LEN) == 0;
    close(fd);
    return same;
}

/* Copy src to dst/name: under a temporary name, checked, given the source's attributes,
 * renamed into place. 0, or <0 with the file's failure noted (the source stays). */
static int copy_step(struct walk *w, int src, int dst, const char *name, const struct stat *st,
                     bool lease, int64_t age_s)
{
    char tmp[64];
    unsigned char md[EVP_MAX_MD_SIZE];
    struct stat now;
    int64_t copied = 0;
    snprintf(tmp, sizeof(tmp), ".docket-lc.%lld.tmp", (long long)w->r->id);
    (void)unlinkat(dst, tmp, 0); /* left by a run cut short */
    int out = openat(dst, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600), rc;
    if (out < 0) {
        rc = -errno;
    } else {
        rc = hash_stream(w, src, out, lease, name, md, &copied);
        close(out);
    }
    if (rc == 0 && (fstat(src, &now) < 0 || !same_file(st, &now)))
        rc = -ESTALE;
    if (rc == 0 && !copy_verified(dst, tmp, md, (int64_t)st->st_size))
        rc = -EBADMSG;
    if (rc == 0)
        rc = copy_attrs(dst, tmp, st);
    if (rc == 0 && renameat2(dst, tmp, dst, name, RENAME_NOREPLACE) < 0)
        rc = -errno;
    if (rc == 0)
        return 0;
    if (out >= 0)
        (void)unlinkat(dst, tmp, 0);
    if (rc == -EBUSY || rc == -ESTALE) {
        w->out->in_use++;
        note(w, w->rel, st, age_s, "changed or opened during the move: left in place");
    } else if (rc == -EBADMSG) {
        failed(w, w->rel, st, age_s, "the copy failed its check", EBADMSG);
    } else if (target_full(-rc)) {
        failed(w, w->rel, st, age_s, "the target is full", -rc);
        w->stop = true;
        snprintf(w->stop_why, sizeof(w->stop_why), "the target pool is full: stopped at %s",
                 w->rel);
    } else {
        failed(w, w->rel, st, age_s, "copy failed", -rc);
    }
    return rc;
}

/* Move one file: copy, check, rename into place, then remove the source, each step only
 * when the one before went right; the source stays on any failure. */
static void move_file(struct walk *w, struct frame *f, const char *name, const struct stat *st,
                      int64_t age_s)
{
    struct stat now;
    bool lease = false;
    int dst = dst_dir(w, w->depth - 1);
    if (dst < 0) {
        failed(w, w->rel, st, age_s, "cannot open its directory on the target", -dst);
        return;
    }
    bool exists = fstatat(dst, name, &now, AT_SYMLINK_NOFOLLOW) == 0;
    int src = openat(f->fd, name, O_RDONLY | O_NOFOLLOW | O_NOATIME | O_NONBLOCK | O_CLOEXEC);
    if (src < 0 || fstat(src, &now) < 0 || !same_file(st, &now)) {
        failed(w, w->rel, st, age_s, "changed or went away", src < 0 ? errno : ESTALE);
        goto out;
    }
    if (!lease_take(w, src, &lease)) {
        w->out->in_use++;
        note(w, w->rel, st, age_s, "in use (open): left in place");
        goto out;
    }
    if (exists && !left_copy(dst, name, src, st)) {
        failed(w, w->rel, st, age_s, "a different file of that name is on the target", EEXIST);
        goto out;
    }
    if (!exists && copy_step(w, src, dst, name, st, lease, age_s) < 0)
        goto out;
    /* in place on the target: the source goes, if it is still the file that was copied and
     * nobody opened it meanwhile; else the copy made now goes */
    struct stat there;
    if (!lease_intact(src, lease) || fstatat(f->fd, name, &there, AT_SYMLINK_NOFOLLOW) < 0 ||
        !same_file(st, &there) || unlinkat(f->fd, name, 0) < 0) {
        if (!exists)
            (void)unlinkat(dst, name, 0);
        w->out->in_use++;
        note(w, w->rel, st, age_s, "changed or opened during the move: left in place");
        goto out;
    }
    done_one(w, w->rel, st, age_s);
out:
    if (src >= 0) {
        lease_drop(src, lease);
        close(src);
    }
}

static void delete_file(struct walk *w, struct frame *f, const char *name, const struct stat *st,
                        int64_t age_s)
{
    bool lease = false;
    struct stat now;
    int src = openat(f->fd, name, O_RDONLY | O_NOFOLLOW | O_NOATIME | O_NONBLOCK | O_CLOEXEC);
    if (src < 0 || fstat(src, &now) < 0 || !same_file(st, &now)) {
        failed(w, w->rel, st, age_s, "changed or went away", src < 0 ? errno : ESTALE);
    } else if (!lease_take(w, src, &lease)) {
        w->out->in_use++;
        note(w, w->rel, st, age_s, "in use (open): left in place");
    } else if (fstatat(f->fd, name, &now, AT_SYMLINK_NOFOLLOW) < 0 || !same_file(st, &now)) {
        failed(w, w->rel, st, age_s, "changed during the run", ESTALE);
    } else if (unlinkat(f->fd, name, 0) < 0) {
        failed(w, w->rel, st, age_s, "cannot delete", errno);
    } else {
        done_one(w, w->rel, st, age_s);
    }
    if (src >= 0) {
        lease_drop(src, lease);
        close(src);
    }
}

/* A regular file the walk found: due under the run, and if so listed, moved or deleted. */
static void consider(struct walk *w, struct frame *f, const char *name, const struct stat *st)
{
    struct lifecycle_file lf = {
        .name = name,
        .atime_ms = (int64_t)st->st_atim.tv_sec * 1000 + st->st_atim.tv_nsec / 1000000,
        .mtime_ms = (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000,
        .noatime = w->noatime,
        .marked = f->marked,
    };
    if (!lifecycle_file_due(w->r, &lf))
        return;
    int64_t age_s = (w->r->now_ms - lifecycle_last_use_ms(&lf)) / 1000;
    if (st->st_nlink > 1) {
        note(w, w->rel, st, age_s, "hard-linked elsewhere: left in place");
        w->out->failed++;
        return;
    }
    if (w->r->dry_run)
        done_one(w, w->rel, st, age_s);
    else if (w->r->action == LC_MOVE)
        move_file(w, f, name, st, age_s);
    else
        delete_file(w, f, name, st, age_s);
}

static bool has_marker(int dirfd)
{
    struct stat st;
    return fstatat(dirfd, LC_MARKER, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/* Push the directory open as fd (taken) under the name `name`. */
static int push(struct walk *w, int fd, const char *name, const struct stat *st)
{
    int dupfd = dup(fd);
    DIR *d = dupfd >= 0 ? fdopendir(dupfd) : NULL;
    if (!d) {
        if (dupfd >= 0)
            close(dupfd);
        close(fd);
        return -1;
    }
    struct frame *f = &w->stack[w->depth];
    bool above = w->depth > 0 && w->stack[w->depth - 1].marked;
    memset(f, 0, sizeof(*f));
    f->fd = fd;
    f->d = d;
    f->dst = w->depth == 0 ? w->dst_area : -1;
    f->marked = above || has_marker(fd);
    f->st = *st;
    str_copy(f->name, sizeof(f->name), name);
    f->rel_len = strlen(w->rel);
    w->depth++;
    return 0;
}

/* A directory below the area's root from which this run moved or deleted something goes
 * when that left it empty: rmdir by name from the parent's descriptor, which removes only
 * an empty directory and never follows a link (a link put in its place is ENOTDIR). A
 * directory that was empty before, or that holds the marker, stays. */
static void pop(struct walk *w)
{
    struct frame *f = &w->stack[--w->depth];
    closedir(f->d);
    close(f->fd);
    if (f->dst >= 0 && w->depth > 0)
        close(f->dst);
    w->rel[f->rel_len] = '\0';
    if (w->depth == 0 || f->emptied == 0 || w->r->dry_run)
        return;
    struct frame *parent = &w->stack[w->depth - 1];
    if (unlinkat(parent->fd, f->name, AT_REMOVEDIR) == 0) {
        parent->emptied++;
        w->out->dirs_removed++;
    }
}

/* w->rel = the path of `name` in the directory on top of the stack; false when too long. */
static bool rel_set(struct walk *w, const char *name)
{
    struct frame *f = &w->stack[w->depth - 1];
    int n = snprintf(w->rel + f->rel_len, sizeof(w->rel) - f->rel_len, "%s%s",
                     f->rel_len ? "/" : "", name);
    return n > 0 && (size_t)n + f->rel_len < LC_PATH_MAX;
}

static void walk_entry(struct walk *w, const char *name)
{
    struct frame *f = &w->stack[w->depth - 1];
    struct stat st;
    if (fstatat(f->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != w->dev)
        return; /* gone, or another file system mounted inside: not ours */
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
        return; /* links, sockets, devices: never followed, never moved */
    if (!rel_set(w, name)) {
        w->deep++;
        return;
    }
    if (S_ISREG(st.st_mode)) {
        consider(w, f, name, &st);
        return;
    }
    if (w->depth > LC_MAX_DEPTH) {
        w->deep++;
        return;
    }
    int fd = openat(f->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat now;
    if (fd < 0)
        return;
    if (fstat(fd, &now) < 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
        close(fd);
        return;
    }
    push(w, fd, name, &now);
}

static void walk_area(struct walk *w, int area, const struct stat *st)
{
    if (push(w, area, "", st) < 0)
        return;
    while (w->depth > 0 && !w->stop) {
        struct frame *f = &w->stack[w->depth - 1];
        w->rel[f->rel_len] = '\0';
        struct dirent *e = readdir(f->d);
        if (!e) {
            pop(w);
            continue;
        }
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            walk_entry(w, e->d_name);
    }
    while (w->depth > 0)
        pop(w);
}

static int open_area(const char *pool, const char *project)
{
    char path[STORAGE_PATH_MAX + 80];
    snprintf(path, sizeof(path), "%s/projects/%s", pool, project);
    return path_open_nofollow(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
}

static void summary(struct walk *w)
{
    struct lifecycle_result *o = w->out;
    size_t n = 0;
    char *m = o->message;
    size_t cap = sizeof(o->message);
    if (w->stop)
        n += (size_t)snprintf(m + n, cap - n, "%s", w->stop_why);
    if (w->deep && n < cap)
        n += (size_t)snprintf(m + n, cap - n,
                              "%s%lld entries deeper than %d levels or with "
                              "too long a path were left",
                              n ? "; " : "", (long long)w->deep, LC_MAX_DEPTH);
    if (o->failed && n < cap)
        n += (size_t)snprintf(m + n, cap - n, "%s%lld files failed and were left", n ? "; " : "",
                              (long long)o->failed);
    if (o->in_use && n < cap)
        snprintf(m + n, cap - n, "%s%lld files in use were left", n ? "; " : "",
                 (long long)o->in_use);
    o->ok = !w->stop && o->failed == 0;
}

void lc_execute(const struct lifecycle_run *r, struct lifecycle_result *out)
{
    memset(out, 0, sizeof(*out));
    out->id = r->id;
    out->done = true;
    int area = open_area(r->from, r->project), dst = -1;
    struct stat st;
    struct statvfs vfs;
    struct statfs fs;
    if (area < 0 || fstat(area, &st) < 0) {
        snprintf(out->message, sizeof(out->message), "cannot open %s/projects/%s: %s", r->from,
                 r->project, strerror(area < 0 ? -area : errno));
        if (area >= 0)
            close(area);
        return;
    }
    if (r->action == LC_MOVE && (dst = open_area(r->to, r->project)) < 0) {
        snprintf(out->message, sizeof(out->message),
                 "project %s has no area on the target (%s/projects/%s: %s)", r->project, r->to,
                 r->project, strerror(-dst));
        close(area);
        return;
    }
    struct walk *w = xcalloc(1, sizeof(*w));
    w->r = r;
    w->out = out;
    w->dev = st.st_dev;
    w->noatime = fstatvfs(area, &vfs) == 0 && (vfs.f_flag & ST_NOATIME);
    w->leases = fstatfs(area, &fs) != 0 || fs.f_type != NFS_SUPER_MAGIC;
    w->dst_area = r->dry_run ? -1 : dst;
    w->t0_ns = mono_ns();
    str_copy(out->age_basis, sizeof(out->age_basis), w->noatime ? "mtime" : "atime");
    walk_area(w, area, &st);
    summary(w);
    if (dst >= 0)
        close(dst);
    free(w);
}

/* ---- the agent's side ------------------------------------------------------------------ */

struct held {
    struct lifecycle_run run;
    struct lifecycle_result res;
    bool started, sent;
};

struct ag_lifecycle {
    struct held *runs;
    size_t n;
    pid_t pid;
    int64_t current; /* the run the child carries out */
};

static struct ag_lifecycle *lc_of(struct agent *a)
{
    if (!a->lc)
        a->lc = xcalloc(1, sizeof(*a->lc));
    return a->lc;
}

static struct held *held_find(struct ag_lifecycle *l, int64_t id)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->runs[i].run.id == id)
            return &l->runs[i];
    return NULL;
}

void ag_lifecycle_take(struct agent *a, const struct lifecycle_run *runs, size_t n)
{
    struct ag_lifecycle *l = lc_of(a);
    for (size_t i = 0; i < n; i++) {
        if (held_find(l, runs[i].id) || l->n >= LC_MAX_RUNS)
            continue;
        l->runs = xrealloc(l->runs, (l->n + 1) * sizeof(*l->runs));
        struct held *h = &l->runs[l->n++];
        memset(h, 0, sizeof(*h));
        h->run = runs[i];
        h->res.id = runs[i].id;
        log_info("lifecycle_run_queued", "id=%lld rule=%s project=%s dry_run=%s",
                 (long long)runs[i].id, runs[i].rule, runs[i].project,
                 runs[i].dry_run ? "true" : "false");
    }
}

static void result_path(const struct agent *a, int64_t id, char *out, size_t len)
{
    snprintf(out, len, "%s/lifecycle-%lld.json", a->cfg.state_dir, (long long)id);
}

/* The child: one run at a time on this node (a lock in the state directory, so a child
 * left by an agent that restarted finishes before the same run starts again). A result
 * already there is that earlier child's, which no agent read: it is the run's (a second
 * walk would find the files gone and count nothing). */
static void run_child(struct agent *a, const struct lifecycle_run *r)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGIO, SIG_IGN); /* a lease being broken is seen by F_GETLEASE, not a signal */
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    snprintf(path, sizeof(path), "%s/lifecycle.lock", a->cfg.state_dir);
    int lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock >= 0)
        (void)flock(lock, LOCK_EX);
    result_path(a, r->id, path, sizeof(path));
    if (access(path, F_OK) == 0)
        _exit(0);
    lc_test_corrupt(getenv("DOCKET_NODE_TEST_LC_CORRUPT"));
    struct lifecycle_result res;
    lc_execute(r, &res);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    json_t *j = lifecycle_result_json(&res);
    int ok = j && json_dump_file(j, tmp, JSON_COMPACT) == 0 && rename(tmp, path) == 0;
    _exit(ok ? 0 : 1);
}

void ag_lifecycle_tick(struct agent *a)
{
    struct ag_lifecycle *l = a->lc;
    if (!l || l->pid > 0)
        return;
    for (size_t i = 0; i < l->n; i++) {
        struct held *h = &l->runs[i];
        if (h->started)
            continue;
        pid_t pid = fork();
        if (pid == 0)
            run_child(a, &h->run);
        if (pid < 0) {
            log_warn("lifecycle_fork", "error=\"%s\"", strerror(errno));
            return;
        }
        h->started = true;
        l->pid = pid;
        l->current = h->run.id;
        log_info("lifecycle_run_started", "id=%lld pid=%d", (long long)h->run.id, (int)pid);
        return;
    }
}

static void read_result(struct agent *a, struct held *h, int status)
{
    char path[PATH_MAX];
    json_error_t je;
    struct proto_error e;
    result_path(a, h->run.id, path, sizeof(path));
    json_t *j = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? json_load_file(path, 0, &je) : NULL;
    struct lifecycle_result r;
    if (j && lifecycle_result_parse(j, "result", &r, &e) == 0) {
        lifecycle_result_release(&h->res);
        h->res = r;
    } else {
        memset(&h->res, 0, sizeof(h->res));
        h->res.id = h->run.id;
        snprintf(h->res.message, sizeof(h->res.message), "the run's process ended (status %d)",
                 status);
    }
    json_decref(j);
    unlink(path);
    h->res.done = true;
    log_info("lifecycle_run_done", "id=%lld ok=%s files=%lld bytes=%lld failed=%lld",
             (long long)h->run.id, h->res.ok ? "true" : "false", (long long)h->res.files,
             (long long)h->res.bytes, (long long)h->res.failed);
}

bool ag_lifecycle_reaped(struct agent *a, pid_t pid, int status)
{
    struct ag_lifecycle *l = a->lc;
    if (!l || pid <= 0 || pid != l->pid)
        return false;
    l->pid = 0;
    struct held *h = held_find(l, l->current);
    if (h)
        read_result(a, h, status);
    ag_lifecycle_tick(a);
    return true;
}

void *ag_lifecycle_report_json(struct agent *a)
{
    struct ag_lifecycle *l = a->lc;
    if (!l || l->n == 0)
        return NULL;
    json_t *list = json_array();
    for (size_t i = 0; i < l->n; i++) {
        json_array_append_new(list, lifecycle_result_json(&l->runs[i].res));
        l->runs[i].sent = l->runs[i].res.done;
    }
    return list;
}

void ag_lifecycle_acked(struct agent *a)
{
    struct ag_lifecycle *l = a->lc;
    for (size_t i = 0; l && i < l->n;) {
        if (l->runs[i].sent && l->runs[i].res.done) {
            lifecycle_result_release(&l->runs[i].res);
            l->runs[i] = l->runs[--l->n];
        } else {
            i++;
        }
    }
}

int64_t ag_lifecycle_wait_ms(const struct agent *a, int64_t wait_ms)
{
    /* a run under way reports its end at the next heartbeat: keep the poll short */
    const struct ag_lifecycle *l = a->lc;
    return l && l->n > 0 && wait_ms > 5000 ? 5000 : wait_ms;
}

void ag_lifecycle_free(struct agent *a)
{
    struct ag_lifecycle *l = a->lc;
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        lifecycle_result_release(&l->runs[i].res);
    free(l->runs);
    free(l);
    a->lc = NULL;
}
