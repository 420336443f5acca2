/*
 * storage.c - the agent's storage work (storage.h, docs/storage.md): pool checks, project
 * areas, quotas and usage, in a child process; and the agent's side of it (the
 * configuration docketd sent, the child's life, its report in the heartbeat and in the
 * node's health).
 *
 * The child walks paths that users may write in. Every directory it makes or fixes is
 * reached from the pool's descriptor one component at a time with O_NOFOLLOW, and
 * `projects/` must be root's and writable by nobody else, so no link a user plants
 * turns a chown or chmod of root's onto another file.
 */
#define _GNU_SOURCE
#include "agent/storage.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/quota.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

#ifndef PRJQUOTA
#define PRJQUOTA 2
#endif

/* ---- pieces ---------------------------------------------------------------------------- */

const char *stor_fstype_name(long magic)
{
    static const struct {
        long magic;
        const char *name;
    } known[] = {
        {0xEF53, "ext4"},        {0x58465342, "xfs"},   {0x6969, "nfs"},
        {0x01021994, "tmpfs"},   {0x9123683E, "btrfs"}, {0x0BD00BD0, "lustre"},
        {0x47504653, "gpfs"},    {0x00C36400, "ceph"},  {0x2FC12FC1, "zfs"},
        {0x794c7630, "overlay"}, {0xFF534D42, "cifs"},  {0x65735546, "fuse"},
        {0x5346414F, "afs"},     {0x013111A8, "ibrix"}, {0x19830326, "beegfs"},
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (known[i].magic == magic)
            return known[i].name;
    return NULL;
}

int stor_is_mount_point(const char *path)
{
    struct stat self, up;
    char parent[STORAGE_PATH_MAX + 4];
    snprintf(parent, sizeof(parent), "%s/..", path);
    if (lstat(path, &self) < 0 || stat(parent, &up) < 0)
        return -errno;
    /* another device than its parent's, or the root of one mounted over itself (a bind
     * mount of a directory onto itself keeps the device: the inode says it) */
    return self.st_dev != up.st_dev || self.st_ino == up.st_ino;
}

/* nftw has no argument: one scan at a time in the child. */
static int64_t scan_total;
static struct seen {
    dev_t dev;
    ino_t ino;
} * scan_seen;
static size_t scan_nseen, scan_capseen;

static int scan_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)path;
    (void)flag;
    (void)f;
    if (st->st_nlink > 1 && !S_ISDIR(st->st_mode)) { /* a hard link counts once */
        for (size_t i = 0; i < scan_nseen; i++)
            if (scan_seen[i].dev == st->st_dev && scan_seen[i].ino == st->st_ino)
                return 0;
        if (scan_nseen == scan_capseen) {
            scan_capseen = scan_capseen ? scan_capseen * 2 : 64;
            scan_seen = xrealloc(scan_seen, scan_capseen * sizeof(*scan_seen));
        }
        scan_seen[scan_nseen++] = (struct seen){st->st_dev, st->st_ino};
    }
    scan_total += (int64_t)st->st_blocks * 512;
    return 0;
}

int64_t stor_scan_bytes(const char *dir)
{
    scan_total = 0;
    scan_nseen = 0;
    /* FTW_PHYS: no symlink followed; FTW_MOUNT: a file system mounted inside is not ours */
    int rc = nftw(dir, scan_one, 64, FTW_PHYS | FTW_MOUNT);
    return rc < 0 ? -errno : scan_total;
}

static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- pools ------------------------------------------------------------------------------ */

/* Write, sync and remove a small file at the pool's root: the pool takes writes, and how
 * long they take. A full pool (ENOSPC, EDQUOT) still answers: it is reported full, not
 * broken (the storage_full alert is about that). */
static int probe(const struct storage_pool *p, const char *node, struct storage_pool_state *st)
{
    char path[STORAGE_PATH_MAX + 128];
    static char block[4096];
    snprintf(path, sizeof(path), "%s/.docket-probe.%s.%d", p->path, node, (int)getpid());
    int64_t t0 = mono_us();
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int err = 0;
    if (fd < 0)
        err = errno;
    else {
        if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block) || fsync(fd) < 0)
            err = errno ? errno : EIO;
        close(fd);
        unlink(path);
    }
    st->latency_us = mono_us() - t0;
    if (err == ENOSPC || err == EDQUOT) {
        snprintf(st->message, sizeof(st->message), "%s is full", p->path);
        return 0;
    }
    if (err) {
        snprintf(st->message, sizeof(st->message), "cannot write a probe in %s: %s", p->path,
                 strerror(err));
        return -err;
    }
    return 0;
}

static void check_pool(const struct storage_pool *p, const char *node,
                       struct storage_pool_state *st)
{
    struct stat sb;
    struct statfs fs;
    memset(st, 0, sizeof(*st));
    str_copy(st->name, sizeof(st->name), p->name);
    st->latency_us = st->size_bytes = st->used_bytes = -1;
    if (stat(p->path, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
        snprintf(st->message, sizeof(st->message), "%s %s", p->path,
                 errno == ENOENT ? "does not exist" : "is not a directory");
        return;
    }
    if (p->mount && stor_is_mount_point(p->path) != 1) {
        snprintf(st->message, sizeof(st->message), "%s is not a mount point", p->path);
        return;
    }
    if (statfs(p->path, &fs) == 0) {
        const char *name = stor_fstype_name((long)fs.f_type);
        if (name)
            str_copy(st->fstype, sizeof(st->fstype), name);
        else
            snprintf(st->fstype, sizeof(st->fstype), "0x%lx", (unsigned long)fs.f_type);
        /* as df counts: the size users have, used plus available, so a pool whose users
         * can write no more is 100 % full whatever root keeps back */
        st->used_bytes = (int64_t)(fs.f_blocks - fs.f_bfree) * (int64_t)fs.f_frsize;
        st->size_bytes = st->used_bytes + (int64_t)fs.f_bavail * (int64_t)fs.f_frsize;
    }
    if (p->fstype[0] && strcmp(p->fstype, st->fstype) != 0) {
        snprintf(st->message, sizeof(st->message), "%s is %s, expected %s", p->path,
                 st->fstype[0] ? st->fstype : "of an unknown type", p->fstype);
        return;
    }
    if (probe(p, node, st) < 0)
        return;
    st->ok = true;
}

/* ---- areas ------------------------------------------------------------------------------ */

static int group_gid(const char *group, gid_t *gid)
{
    char *end;
    errno = 0;
    unsigned long n = strtoul(group, &end, 10);
    if (group[0] && *end == '\0' && errno == 0 && n > 0 && n < 0x7fffffff) {
        *gid = (gid_t)n;
        return 0;
    }
    struct group *g = getgrnam(group);
    if (!g || g->gr_gid == 0)
        return -ENOENT;
    *gid = g->gr_gid;
    return 0;
}

/* dirfd/name as a directory we may own: made when absent, opened without following a
 * link; -errno. */
static int open_dir_at(int dirfd, const char *name, mode_t mode)
{
    if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST)
        return -errno;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

static int quotactl_on(int fd, int cmd, unsigned id, struct dqblk *q)
{
#ifdef SYS_quotactl_fd
    return syscall(SYS_quotactl_fd, fd, QCMD(cmd, PRJQUOTA), id, q) < 0 ? -errno : 0;
#else
    (void)fd;
    (void)cmd;
    (void)id;
    (void)q;
    return -ENOSYS;
#endif
}

/* Tag the area with project id `id` and inheritance, so everything made under it counts
 * against the id; files there from before are tagged once (the first time). */
static int tag_tree(const char *dir, unsigned id);

static int set_project_id(int fd, const char *dir, unsigned id)
{
    struct fsxattr fa;
    if (ioctl(fd, FS_IOC_FSGETXATTR, &fa) < 0)
        return -errno;
    bool retag = fa.fsx_projid != id;
    if (fa.fsx_projid == id && (fa.fsx_xflags & FS_XFLAG_PROJINHERIT))
        return 0;
    fa.fsx_projid = id;
    fa.fsx_xflags |= FS_XFLAG_PROJINHERIT;
    if (ioctl(fd, FS_IOC_FSSETXATTR, &fa) < 0)
        return -errno;
    return retag ? tag_tree(dir, id) : 0;
}

static unsigned tag_id;
static int tag_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)f;
    if (flag == FTW_SL || !(S_ISREG(st->st_mode) || S_ISDIR(st->st_mode)))
        return 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct fsxattr fa;
    if (ioctl(fd, FS_IOC_FSGETXATTR, &fa) == 0 && fa.fsx_projid != tag_id) {
        fa.fsx_projid = tag_id;
        if (S_ISDIR(st->st_mode))
            fa.fsx_xflags |= FS_XFLAG_PROJINHERIT;
        (void)ioctl(fd, FS_IOC_FSSETXATTR, &fa);
    }
    close(fd);
    return 0;
}

static int tag_tree(const char *dir, unsigned id)
{
    tag_id = id;
    return nftw(dir, tag_one, 64, FTW_PHYS | FTW_MOUNT) < 0 ? -errno : 0;
}

/* The file system's quota: project id gid, hard limit quota_bytes; usage from it. */
static int fs_quota(int fd, const char *dir, gid_t gid, int64_t quota, int64_t *used)
{
    int rc = set_project_id(fd, dir, (unsigned)gid);
    if (rc < 0)
        return rc;
    struct dqblk q;
    memset(&q, 0, sizeof(q));
    q.dqb_bhardlimit = quota > 0 ? (uint64_t)(quota + 1023) / 1024 : 0; /* 1 KiB blocks */
    q.dqb_valid = QIF_BLIMITS;
    if ((rc = quotactl_on(fd, Q_SETQUOTA, (unsigned)gid, &q)) < 0)
        return rc;
    memset(&q, 0, sizeof(q));
    if ((rc = quotactl_on(fd, Q_GETQUOTA, (unsigned)gid, &q)) < 0)
        return rc;
    *used = (int64_t)q.dqb_curspace;
    return 0;
}

static void keep_area(const struct storage_pool *p, const struct storage_area *a,
                      struct storage_area_state *st)
{
    char dir[STORAGE_PATH_MAX + 80];
    gid_t gid;
    struct stat sb;
    int pfd = -1, projfd = -1, fd = -1, rc;
    storage_area_path(p, a->project, dir, sizeof(dir));
    if (group_gid(a->group, &gid) < 0) {
        snprintf(st->message, sizeof(st->message), "no group '%s' on this node", a->group);
        return;
    }
    if ((pfd = open(p->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
        (projfd = open_dir_at(pfd, "projects", 0755)) < 0) {
        snprintf(st->message, sizeof(st->message), "cannot open %s/projects: %s", p->path,
                 strerror(projfd < -1 ? -projfd : errno));
        goto out;
    }
    if (fstat(projfd, &sb) < 0 || sb.st_uid != 0 || (sb.st_mode & 0022)) {
        snprintf(st->message, sizeof(st->message),
                 "%s/projects is not root's or others may write in it: refused", p->path);
        goto out;
    }
    if ((fd = open_dir_at(projfd, a->project, 02770)) < 0) {
        snprintf(st->message, sizeof(st->message), "cannot make %s: %s", dir, strerror(-fd));
        goto out;
    }
    /* root's, the project's group, 2770: the group's members and nobody else (setgid:
     * what they make there stays the project's) */
    if (fchown(fd, 0, gid) < 0 || fchmod(fd, 02770) < 0) {
        snprintf(st->message, sizeof(st->message), "cannot set the owner of %s: %s", dir,
                 strerror(errno));
        goto out;
    }
    st->ok = true;
    st->enforced = STORAGE_QUOTA_ACCOUNTING;
    if (p->quota == STORAGE_QUOTA_EXT4_PROJECT) {
        rc = fs_quota(fd, dir, gid, a->quota_bytes, &st->used_bytes);
        if (rc == 0) {
            st->enforced = STORAGE_QUOTA_EXT4_PROJECT;
            goto out;
        }
        snprintf(st->message, sizeof(st->message),
                 "no project quota on %s (%s): usage accounted by a scan", p->path, strerror(-rc));
    }
    st->used_bytes = stor_scan_bytes(dir);
    if (st->used_bytes < 0) {
        snprintf(st->message, sizeof(st->message), "cannot measure %s: %s", dir,
                 strerror((int)-st->used_bytes));
        st->used_bytes = -1;
    }
out:
    if (fd >= 0)
        close(fd);
    if (projfd >= 0)
        close(projfd);
    if (pfd >= 0)
        close(pfd);
}

void stor_check(const struct storage_config *cfg, const char *node, struct storage_report *out)
{
    memset(out, 0, sizeof(*out));
    out->gen = cfg->gen;
    out->areas = xcalloc(cfg->nareas ? cfg->nareas : 1, sizeof(*out->areas));
    for (int i = 0; i < cfg->npools; i++)
        check_pool(&cfg->pools[i], node, &out->pools[out->npools++]);
    for (size_t i = 0; i < cfg->nareas; i++) {
        const struct storage_area *a = &cfg->areas[i];
        struct storage_area_state *st = &out->areas[out->nareas++];
        str_copy(st->pool, sizeof(st->pool), a->pool);
        str_copy(st->project, sizeof(st->project), a->project);
        st->quota_bytes = a->quota_bytes;
        st->used_bytes = -1;
        for (int k = 0; k < cfg->npools; k++)
            if (strcmp(cfg->pools[k].name, a->pool) == 0 && out->pools[k].ok)
                keep_area(&cfg->pools[k], a, st);
        if (!st->ok && !st->message[0])
            snprintf(st->message, sizeof(st->message), "pool %s fails its check", a->pool);
    }
}

/* ---- the agent's side ----------------------------------------------------------------- */

static void report_path(const struct agent *a, char *out, size_t len)
{
    snprintf(out, len, "%s/storage.json", a->cfg.state_dir);
}

void ag_storage_config(struct agent *a, struct storage_config *cfg)
{
    storage_config_release(&a->stor_cfg);
    a->stor_cfg = *cfg;
    cfg->areas = NULL;
    cfg->nareas = 0;
    a->stor_have_cfg = true;
    a->stor_next = 0; /* check at once */
    log_info("storage_config", "gen=%lld pools=%d areas=%zu", (long long)a->stor_cfg.gen,
             a->stor_cfg.npools, a->stor_cfg.nareas);
}

static void start_check(struct agent *a, int64_t now)
{
    char path[PATH_MAX];
    report_path(a, path, sizeof(path));
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        struct storage_report rep;
        stor_check(&a->stor_cfg, a->cfg.name, &rep);
        json_t *j = storage_report_json(&rep);
        char tmp[PATH_MAX + 8];
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        int rc = j && json_dump_file(j, tmp, JSON_COMPACT) == 0 && rename(tmp, path) == 0;
        _exit(rc ? 0 : 1);
    }
    if (pid < 0) {
        log_warn("storage_check_fork", "error=\"%s\"", strerror(errno));
        return;
    }
    a->stor_pid = pid;
    a->stor_started = now;
    a->stor_checked_gen = a->stor_cfg.gen;
}

/* A check past this is stuck on a file system that does not answer: it is killed and
 * every pool reported failing (a process in D state may outlive the kill: it is reaped
 * whenever it returns). */
static int64_t check_limit(const struct agent *a)
{
    return a->stor_cfg.interval_ms > 60000 ? a->stor_cfg.interval_ms : 60000;
}

static void mark_hung(struct agent *a, int64_t secs)
{
    struct storage_report *r = &a->stor_rep;
    storage_report_release(r);
    memset(r, 0, sizeof(*r));
    r->gen = a->stor_cfg.gen;
    for (int i = 0; i < a->stor_cfg.npools; i++) {
        struct storage_pool_state *p = &r->pools[r->npools++];
        str_copy(p->name, sizeof(p->name), a->stor_cfg.pools[i].name);
        p->latency_us = p->size_bytes = p->used_bytes = -1;
        snprintf(p->message, sizeof(p->message), "the check of %s did not finish in %llds",
                 a->stor_cfg.pools[i].path, (long long)secs);
    }
    a->stor_has_rep = true;
}

void ag_storage_tick(struct agent *a, int64_t now)
{
    if (!a->stor_have_cfg)
        return;
    if (a->stor_pid > 0) {
        if (now - a->stor_started > check_limit(a) && !a->stor_hung) {
            kill(a->stor_pid, SIGKILL);
            a->stor_hung = true;
            mark_hung(a, check_limit(a) / 1000);
            log_warn("storage_check_hung", "pid=%d", (int)a->stor_pid);
        }
        return;
    }
    if (now >= a->stor_next) {
        start_check(a, now);
        a->stor_next = now + a->stor_cfg.interval_ms;
    }
}

static void read_report(struct agent *a)
{
    char path[PATH_MAX];
    json_error_t je;
    struct proto_error e;
    struct storage_report r;
    report_path(a, path, sizeof(path));
    json_t *j = json_load_file(path, 0, &je);
    if (!j || storage_report_parse(j, &r, &e) < 0) {
        log_warn("storage_report_unreadable", "path=%s", path);
        json_decref(j);
        return;
    }
    json_decref(j);
    for (int i = 0; i < r.npools; i++) {
        const struct storage_pool_state *p = &r.pools[i];
        bool was = true;
        for (int k = 0; a->stor_has_rep && k < a->stor_rep.npools; k++)
            if (strcmp(a->stor_rep.pools[k].name, p->name) == 0)
                was = a->stor_rep.pools[k].ok;
        if (was != p->ok)
            log_info("storage_pool_changed", "pool=%s ok=%s message=\"%s\"", p->name,
                     p->ok ? "true" : "false", p->message);
    }
    storage_report_release(&a->stor_rep);
    a->stor_rep = r;
    a->stor_has_rep = true;
}

bool ag_storage_reaped(struct agent *a, pid_t pid, int status)
{
    if (pid != a->stor_pid || pid <= 0)
        return false;
    a->stor_pid = 0;
    if (a->stor_hung) {
        a->stor_hung = false;
        return true;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        read_report(a);
    else
        log_warn("storage_check_failed", "status=%d", status);
    if (a->stor_checked_gen != a->stor_cfg.gen)
        a->stor_next = 0; /* a new configuration came during the check */
    return true;
}

void *ag_storage_report_json(struct agent *a)
{
    if (!a->stor_have_cfg)
        return NULL;
    struct storage_report empty;
    memset(&empty, 0, sizeof(empty));
    const struct storage_report *r = a->stor_has_rep ? &a->stor_rep : &empty;
    json_t *j = storage_report_json(r);
    /* the configuration held, so docketd does not send it again while a check runs */
    json_object_set_new(j, "gen", json_integer((json_int_t)a->stor_cfg.gen));
    return j;
}

bool ag_storage_healthy(struct agent *a, char *msg, size_t len)
{
    for (int i = 0; a->stor_has_rep && i < a->stor_rep.npools; i++) {
        const struct storage_pool_state *p = &a->stor_rep.pools[i];
        bool current = false; /* a pool docketd no longer names does not count */
        for (int k = 0; k < a->stor_cfg.npools; k++)
            current = current || strcmp(a->stor_cfg.pools[k].name, p->name) == 0;
        if (current && !p->ok) {
            snprintf(msg, len, "storage pool %s: %s", p->name, p->message);
            return false;
        }
    }
    return true;
}

void ag_storage_free(struct agent *a)
{
    storage_config_release(&a->stor_cfg);
    storage_report_release(&a->stor_rep);
}
