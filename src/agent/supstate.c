/*
 * supstate.c - the files of a job directory that the agent and the supervisor share:
 * state.json / running.json / final.json (one per phase), the seq of the last launch,
 * the ctl.SEQ commands and the pidfd wake-up, the node's fencing lease; liveness of a
 * supervisor by pid and start time; the removal of a tree that never follows a symlink,
 * and the quarantine of a job's scratch that cannot be removed. See supervisor.h and
 * docs/agent.md.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/sup_int.h"
#include "util/str.h"

int sup_job_dir(const struct sup_config *c, uint64_t id, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/jobs/%llu", c->state_dir, (unsigned long long)id);
    return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

int sup_write_atomic(const char *dir, const char *name, const char *text)
{
    char tmp[PATH_MAX], dst[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s/.%s.tmp.%d", dir, name, (int)getpid()) >= (int)sizeof tmp ||
        snprintf(dst, sizeof dst, "%s/%s", dir, name) >= (int)sizeof dst)
        return -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  0600); /* job.json holds the job's environment */
    if (fd < 0)
        return -errno;
    size_t n = strlen(text);
    ssize_t w = write(fd, text, n);
    int rc = w == (ssize_t)n ? 0 : (w < 0 ? -errno : -EIO);
    /* the data reaches the disk before the name does: a crash leaves the old file or the
       new one, never an empty one under the new name */
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    close(fd);
    if (rc == 0 && rename(tmp, dst) < 0)
        rc = -errno;
    if (rc == 0) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) { /* the rename itself made durable */
            (void)fsync(dfd);
            close(dfd);
        }
    }
    if (rc < 0)
        unlink(tmp);
    return rc;
}

int64_t sup_proc_starttime(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -EIO;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parens */
    if (!p)
        return -EIO;
    /* after ") " come fields 3..: state is field 3, starttime is field 22 */
    int field = 2;
    for (p++; *p; p++)
        if (*p == ' ' && ++field == 22)
            return strtoll(p + 1, NULL, 10);
    return -EIO;
}

bool sup_alive(int pid, int64_t starttime)
{
    if (pid <= 0)
        return false;
    int64_t st = sup_proc_starttime(pid);
    if (st < 0 || (starttime > 0 && st != starttime))
        return false;
    /* a zombie is not alive */
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* One file per phase, each made by a rename that replaces nothing: on ext4 a rename over
 * an existing file forces the new data to disk (auto_da_alloc), which would cost every
 * job a synchronous write. Readers take the most advanced file present. */
const char *const sup_state_files[3] = {"final.json", "running.json", "state.json"};

static const char *state_file(const char *state)
{
    if (strcmp(state, "exited") == 0)
        return sup_state_files[0];
    if (strcmp(state, "running") == 0 || strcmp(state, "stopping") == 0)
        return sup_state_files[1];
    return sup_state_files[2];
}

int sup_state_write(const char *jobdir, const struct sup_state *st)
{
    json_t *o = json_pack(
        "{s:I, s:s, s:i, s:I, s:i, s:I, s:I, s:{s:s, s:i, s:s},"
        " s:{s:I, s:I, s:i}, s:b, s:s, s:s, s:s, s:s, s:[I, I, I], s:[I, I, I], s:i, s:s}",
        "job", (json_int_t)st->job, "state", st->state, "sup_pid", st->sup_pid, "sup_start",
        (json_int_t)st->sup_start, "pid", st->pid, "start_ms", (json_int_t)st->start_ms, "end_ms",
        (json_int_t)st->end_ms, "exit", "kind", agent_exit_kind_name(st->exit_kind), "code",
        st->exit_code, "message", st->message, "usage", "cpu_ms", (json_int_t)st->usage.cpu_ms,
        "max_rss_mb", (json_int_t)st->usage.max_rss_mb, "gpu_util", st->usage.gpu_util,
        "reclaim_ok", st->reclaim_ok, "reclaim_msg", st->reclaim_msg, "out_path", st->out_path,
        "err_path", st->err_path, "cgroup", st->cgroup, "out_file", (json_int_t)st->out_dev,
        (json_int_t)st->out_ino, (json_int_t)st->out_start, "err_file", (json_int_t)st->err_dev,
        (json_int_t)st->err_ino, (json_int_t)st->err_start, "step_port", st->step_port,
        "quarantined", st->quarantined);
    if (!o)
        return -ENOMEM;
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!text)
        return -ENOMEM;
    int rc = sup_write_atomic(jobdir, state_file(st->state), text);
    free(text);
    return rc;
}

static void copy_json_str(json_t *o, const char *key, char *dst, size_t len)
{
    json_t *v = json_object_get(o, key);
    str_copy(dst, len, json_is_string(v) ? json_string_value(v) : "");
}

int sup_state_read(const char *jobdir, struct sup_state *st)
{
    char path[PATH_MAX];
    json_error_t je;
    json_t *o = NULL;
    int rc = -ENOENT;
    for (size_t i = 0; i < 3 && !o; i++) {
        if (snprintf(path, sizeof path, "%s/%s", jobdir, sup_state_files[i]) >= (int)sizeof path)
            return -ENAMETOOLONG;
        o = json_load_file(path, 0, &je);
        if (!o && access(path, F_OK) == 0)
            rc = -EINVAL;
    }
    if (!o)
        return rc;
    memset(st, 0, sizeof *st);
    json_t *ex = json_object_get(o, "exit"), *u = json_object_get(o, "usage");
    st->job = (uint64_t)json_integer_value(json_object_get(o, "job"));
    copy_json_str(o, "state", st->state, sizeof st->state);
    st->sup_pid = (int)json_integer_value(json_object_get(o, "sup_pid"));
    st->sup_start = json_integer_value(json_object_get(o, "sup_start"));
    st->pid = (int)json_integer_value(json_object_get(o, "pid"));
    st->start_ms = json_integer_value(json_object_get(o, "start_ms"));
    st->end_ms = json_integer_value(json_object_get(o, "end_ms"));
    json_t *kind = json_object_get(ex, "kind");
    if (!json_is_string(kind) || agent_exit_kind_parse(json_string_value(kind), &st->exit_kind) < 0)
        st->exit_kind = AGENT_EXIT_LOST;
    st->exit_code = (int)json_integer_value(json_object_get(ex, "code"));
    copy_json_str(ex, "message", st->message, sizeof st->message);
    st->usage.cpu_ms = json_integer_value(json_object_get(u, "cpu_ms"));
    st->usage.max_rss_mb = json_integer_value(json_object_get(u, "max_rss_mb"));
    st->usage.gpu_util = (int)json_integer_value(json_object_get(u, "gpu_util"));
    st->reclaim_ok = json_is_true(json_object_get(o, "reclaim_ok"));
    copy_json_str(o, "reclaim_msg", st->reclaim_msg, sizeof st->reclaim_msg);
    copy_json_str(o, "quarantined", st->quarantined, sizeof st->quarantined);
    copy_json_str(o, "out_path", st->out_path, sizeof st->out_path);
    copy_json_str(o, "err_path", st->err_path, sizeof st->err_path);
    copy_json_str(o, "cgroup", st->cgroup, sizeof st->cgroup);
    json_t *of = json_object_get(o, "out_file"), *ef = json_object_get(o, "err_file");
    st->out_dev = json_integer_value(json_array_get(of, 0));
    st->out_ino = json_integer_value(json_array_get(of, 1));
    st->out_start = json_integer_value(json_array_get(of, 2));
    st->err_dev = json_integer_value(json_array_get(ef, 0));
    st->err_ino = json_integer_value(json_array_get(ef, 1));
    st->err_start = json_integer_value(json_array_get(ef, 2));
    json_int_t port = json_integer_value(json_object_get(o, "step_port"));
    st->step_port = port > 0 && port < 65536 ? (int)port : 0;
    json_decref(o);
    return 0;
}

int64_t sup_start_seq(const struct sup_config *c, uint64_t id)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    if (sup_job_dir(c, id, dir, sizeof dir) < 0)
        return 0;
    snprintf(path, sizeof path, "%s/job.json", dir);
    json_error_t je;
    json_t *o = json_load_file(path, 0, &je);
    int64_t seq = json_integer_value(json_object_get(o, "start_seq"));
    json_decref(o);
    return seq;
}

int sup_command(const struct sup_config *c, uint64_t id, int sup_pid, int64_t sup_start,
                int64_t seq, const char *cmd)
{
    char dir[PATH_MAX], name[64];
    int rc = sup_job_dir(c, id, dir, sizeof dir);
    if (rc < 0)
        return rc;
    snprintf(name, sizeof name, "ctl.%020lld", (long long)seq);
    if ((rc = sup_write_atomic(dir, name, cmd)) < 0)
        return rc;
    if (sup_pid <= 0)
        return 0;
    /* the pidfd pins the process: checked by its start time once open, the signal
     * reaches that very process or none */
    int pfd = (int)syscall(SYS_pidfd_open, sup_pid, 0);
    if (pfd < 0)
        return -errno;
    if (sup_start > 0 && sup_proc_starttime(sup_pid) != sup_start)
        rc = -ESRCH;
    else if (syscall(SYS_pidfd_send_signal, pfd, SIGUSR1, NULL, 0) < 0)
        rc = -errno;
    close(pfd);
    return rc;
}

/* "DEADLINE GRACE DEADLINE GRACE\n" at a fixed width, then "CONTACT MARGIN DEADLINE CONTACT
 * MARGIN DEADLINE\n", rewritten in place by one pwrite: a reader that catches a write half
 * done sees copies that differ and tries again. The first line alone is what agents wrote
 * before leases, and what their supervisors, still running after an upgrade, read. */
enum { NUM_W = 21, LEASE_LINE1 = 4 * NUM_W, LEASE_LEN = LEASE_LINE1 + 6 * NUM_W };

int sup_lease_write(const char *state_dir, int *fd, const struct sup_lease *l)
{
    char path[PATH_MAX + 8], buf[LEASE_LEN + 1];
    if (*fd < 0) {
        snprintf(path, sizeof path, "%s/lease", state_dir);
        *fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (*fd < 0)
            return -errno;
    }
    long long d = l->deadline_ms, g = l->grace_ms, t = l->contact_ms, m = l->margin_ms;
    snprintf(buf, sizeof buf,
             "%020lld %020lld %020lld %020lld\n%020lld %020lld %020lld %020lld %020lld %020lld\n",
             d, g, d, g, t, m, d, t, m, d);
    ssize_t w = pwrite(*fd, buf, LEASE_LEN, 0);
    return w == LEASE_LEN ? 0 : (w < 0 ? -errno : -EIO);
}

int sup_lease_read(const char *state_dir, struct sup_lease *l)
{
    char path[PATH_MAX + 8], buf[LEASE_LEN + 1];
    snprintf(path, sizeof path, "%s/lease", state_dir);
    memset(l, 0, sizeof *l);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    ssize_t n = pread(fd, buf, LEASE_LEN, 0);
    close(fd);
    if (n != LEASE_LINE1 && n != LEASE_LEN)
        return -EAGAIN;
    buf[n] = '\0';
    long long d1, g1, d2, g2, t1 = 0, m1 = 0, e1 = 0, t2 = 0, m2 = 0, e2 = 0;
    if (sscanf(buf, "%lld %lld %lld %lld", &d1, &g1, &d2, &g2) != 4 || d1 != d2 || g1 != g2 ||
        d1 < 0 || g1 < 0)
        return -EAGAIN;
    if (n == LEASE_LEN && (sscanf(buf + LEASE_LINE1, "%lld %lld %lld %lld %lld %lld", &t1, &m1, &e1,
                                  &t2, &m2, &e2) != 6 ||
                           t1 != t2 || m1 != m2 || e1 != d1 || e2 != d1 || t1 < 0 || m1 < 0))
        return -EAGAIN;
    l->deadline_ms = d1;
    l->grace_ms = g1;
    l->contact_ms = t1;
    l->margin_ms = m1;
    return 0;
}

int64_t sup_lease_deadline(const struct sup_lease *l, int64_t job_lease_ms)
{
    if (job_lease_ms <= 0 || l->contact_ms <= 0)
        return l->deadline_ms;
    int64_t own = l->contact_ms + job_lease_ms - l->margin_ms;
    return own > l->deadline_ms ? own : l->deadline_ms;
}

/* How deep the removal walks before it lifts a directory to the top of the tree: the
 * walk's recursion and open descriptors stay below this however deep a job nested its
 * directories (a job's `mkdir d && cd d` 300 times once made the cleanup give up, and a
 * failed cleanup takes the node out of service). */
#define RM_LIFT_DEPTH 64

struct rm_walk {
    int top;         /* the tree's top directory, where deep directories are lifted to */
    unsigned next;   /* the number in the next lifted directory's name */
    unsigned lifted; /* directories lifted in this pass */
};

static int rm_at(struct rm_walk *w, int dfd, const char *name, int depth);

/* Move `name` (under `dfd`) to the top of the tree under a new name (never over an
 * existing one), to be removed by the next pass from there. */
static int rm_lift(struct rm_walk *w, int dfd, const char *name)
{
    char to[32];
    for (int tries = 0; tries < 1000; tries++) {
        snprintf(to, sizeof to, ".docket-rm-%u", w->next++);
        if (renameat2(dfd, name, w->top, to, RENAME_NOREPLACE) == 0) {
            w->lifted++;
            return 0;
        }
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

/* Empty the directory open as `fd` (its own descriptor stays the caller's): every entry
 * unlinked, every subdirectory removed by rm_at. 0 or the first -errno; the rest is still
 * removed. */
static int rm_children(struct rm_walk *w, int fd, int depth)
{
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        int e = errno;
        if (dup_fd >= 0)
            close(dup_fd);
        return -e;
    }
    rewinddir(d); /* the duplicate shares the offset, at the end after an earlier pass */
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        int r = 0;
        if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN)
            r = rm_at(w, fd, e->d_name, depth + 1);
        else if (unlinkat(fd, e->d_name, 0) < 0 && errno != ENOENT)
            r = errno == EISDIR ? rm_at(w, fd, e->d_name, depth + 1) : -errno;
        if (r < 0 && rc == 0)
            rc = r;
    }
    closedir(d);
    return rc;
}

/* Remove `name` under the directory `dfd`: a directory is opened with O_NOFOLLOW (a
 * symlink is unlinked itself), emptied through its own descriptor, then removed; one
 * deeper than RM_LIFT_DEPTH is lifted to the top instead. */
static int rm_at(struct rm_walk *w, int dfd, const char *name, int depth)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        if (errno == EACCES) /* unreadable: removable still when empty */
            return unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -EACCES : 0;
        if (errno != ENOTDIR && errno != ELOOP)
            return -errno;
        return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
    }
    if (depth >= RM_LIFT_DEPTH) {
        close(fd);
        return rm_lift(w, dfd, name);
    }
    int rc = rm_children(w, fd, depth);
    close(fd);
    if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && rc == 0)
        rc = -errno;
    return rc;
}

int sup_remove_tree(const char *path)
{
    int top = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (top < 0) {
        if (errno == ENOENT)
            return 0;
        if (errno != ENOTDIR && errno != ELOOP)
            return -errno;
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
    }
    /* pass after pass until nothing was lifted: each pass removes what it can reach and
     * lifts what lies deeper, so a tree of any depth is gone in depth / RM_LIFT_DEPTH
     * passes; the last pass's errors are what could not be removed */
    struct rm_walk w = {.top = top};
    int rc;
    do {
        w.lifted = 0;
        rc = rm_children(&w, top, 0);
    } while (w.lifted > 0);
    close(top);
    if (rmdir(path) < 0 && errno != ENOENT && rc == 0)
        rc = -errno;
    return rc;
}

/* Where scratch that cannot be removed goes, under the scratch root. */
#define QUARANTINE_DIR ".docket-quarantine"

/* ROOT/.docket-quarantine, made if need be: a directory (never a link) of this process's
 * owner with mode 0700, so nothing moved into it is in reach of a job's user. Its
 * descriptor or -errno. */
static int quarantine_open(const char *root)
{
    int rfd = open(root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rfd < 0)
        return -errno;
    if (mkdirat(rfd, QUARANTINE_DIR, 0700) < 0 && errno != EEXIST) {
        int e = errno;
        close(rfd);
        return -e;
    }
    int qfd = openat(rfd, QUARANTINE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(rfd);
    if (qfd < 0)
        return -e;
    struct stat sb;
    int rc = fstat(qfd, &sb) < 0      ? -errno
             : sb.st_uid != geteuid() ? -EPERM /* not made by us: not trusted */
             : fchmod(qfd, 0700) < 0  ? -errno
                                      : 0;
    if (rc < 0) {
        close(qfd);
        return rc;
    }
    return qfd;
}

int sup_scratch_remove(const char *root, const char *path, uint64_t job, char *msg, size_t len)
{
    int rc = sup_remove_tree(path);
    if (rc == 0)
        return 0;
    int qfd = quarantine_open(root);
    char name[64];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(name, sizeof name, "job_%llu.%lld", (unsigned long long)job,
             (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
    int moved = qfd < 0 ? qfd : renameat(AT_FDCWD, path, qfd, name) == 0 ? 0 : -errno;
    if (qfd >= 0)
        close(qfd);
    if (moved < 0) {
        snprintf(msg, len, "cannot remove scratch directory '%s': %s (nor quarantine it: %s)", path,
                 strerror(-rc), strerror(-moved));
        return moved;
    }
    snprintf(msg, len,
             "scratch directory '%s' could not be removed (%s): quarantined as "
             "%s/" QUARANTINE_DIR "/%s",
             path, strerror(-rc), root, name);
    return 1;
}
