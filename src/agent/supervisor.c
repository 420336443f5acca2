/*
 * supervisor.c - one process per job, forked by the agent: own session, child subreaper,
 * cgroup made before the job's exec, privileges dropped in order (setgroups, setgid,
 * setuid, each checked), descriptors closed (close_range), local time limit and grace
 * timed from the moment of the signal (poll with the exact deadline, no sweep), the whole
 * cgroup signalled and killed, reclaim checked, state kept in the job directory.
 * See supervisor.h and docs/agent.md.
 */
#define _GNU_SOURCE
#include "agent/supervisor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <poll.h>
#include <sched.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/str.h"

/* ---------------------------------------------------------------------------------- */
/* Small helpers shared by both sides                                                  */

/* A message into err[len]; long paths are cut, which is what a message may do. */
static void errf(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void errf(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(err, len, fmt, ap) < 0 && len)
        err[0] = '\0';
    va_end(ap);
}

int sup_job_dir(const struct sup_config *c, uint64_t id, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/jobs/%llu", c->state_dir, (unsigned long long)id);
    return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

static int write_atomic(const char *dir, const char *name, const char *text)
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
static const char *const state_files[] = {"final.json", "running.json", "state.json"};

static const char *state_file(const char *state)
{
    if (strcmp(state, "exited") == 0)
        return state_files[0];
    if (strcmp(state, "running") == 0 || strcmp(state, "stopping") == 0)
        return state_files[1];
    return state_files[2];
}

int sup_state_write(const char *jobdir, const struct sup_state *st)
{
    json_t *o = json_pack(
        "{s:I, s:s, s:i, s:I, s:i, s:I, s:I, s:{s:s, s:i, s:s},"
        " s:{s:I, s:I, s:i}, s:b, s:s, s:s, s:s, s:s, s:[I, I, I], s:[I, I, I]}",
        "job", (json_int_t)st->job, "state", st->state, "sup_pid", st->sup_pid, "sup_start",
        (json_int_t)st->sup_start, "pid", st->pid, "start_ms", (json_int_t)st->start_ms, "end_ms",
        (json_int_t)st->end_ms, "exit", "kind", agent_exit_kind_name(st->exit_kind), "code",
        st->exit_code, "message", st->message, "usage", "cpu_ms", (json_int_t)st->usage.cpu_ms,
        "max_rss_mb", (json_int_t)st->usage.max_rss_mb, "gpu_util", st->usage.gpu_util,
        "reclaim_ok", st->reclaim_ok, "reclaim_msg", st->reclaim_msg, "out_path", st->out_path,
        "err_path", st->err_path, "cgroup", st->cgroup, "out_file", (json_int_t)st->out_dev,
        (json_int_t)st->out_ino, (json_int_t)st->out_start, "err_file", (json_int_t)st->err_dev,
        (json_int_t)st->err_ino, (json_int_t)st->err_start);
    if (!o)
        return -ENOMEM;
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!text)
        return -ENOMEM;
    int rc = write_atomic(jobdir, state_file(st->state), text);
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
        if (snprintf(path, sizeof path, "%s/%s", jobdir, state_files[i]) >= (int)sizeof path)
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
    if ((rc = write_atomic(dir, name, cmd)) < 0)
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

/* "DEADLINE GRACE DEADLINE GRACE\n" at a fixed width, rewritten in place by one pwrite:
 * a reader that catches a write half done sees two pairs that differ and tries again. */
enum { LEASE_LEN = 4 * 21 };

int sup_lease_write(const char *state_dir, int *fd, int64_t deadline_ms, int64_t grace_ms)
{
    char path[PATH_MAX + 8], buf[LEASE_LEN + 1];
    if (*fd < 0) {
        snprintf(path, sizeof path, "%s/lease", state_dir);
        *fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (*fd < 0)
            return -errno;
    }
    snprintf(buf, sizeof buf, "%020lld %020lld %020lld %020lld\n", (long long)deadline_ms,
             (long long)grace_ms, (long long)deadline_ms, (long long)grace_ms);
    ssize_t w = pwrite(*fd, buf, LEASE_LEN, 0);
    return w == LEASE_LEN ? 0 : (w < 0 ? -errno : -EIO);
}

int sup_lease_read(const char *state_dir, int64_t *deadline_ms, int64_t *grace_ms)
{
    char path[PATH_MAX + 8], buf[LEASE_LEN + 1];
    snprintf(path, sizeof path, "%s/lease", state_dir);
    *deadline_ms = *grace_ms = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    ssize_t n = pread(fd, buf, LEASE_LEN, 0);
    close(fd);
    if (n != LEASE_LEN)
        return -EAGAIN;
    buf[n] = '\0';
    long long d1, g1, d2, g2;
    if (sscanf(buf, "%lld %lld %lld %lld", &d1, &g1, &d2, &g2) != 4 || d1 != d2 || g1 != g2 ||
        d1 < 0 || g1 < 0)
        return -EAGAIN;
    *deadline_ms = d1;
    *grace_ms = g1;
    return 0;
}

/* Remove `name` under the directory `dfd`: a directory is opened with O_NOFOLLOW (a
 * symlink is unlinked itself), emptied through its own descriptor, then removed. */
static int rm_at(int dfd, const char *name, int depth)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        if (errno != ENOTDIR && errno != ELOOP)
            return -errno;
        return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
    }
    if (depth > 256) {
        close(fd);
        return -ELOOP;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return -e;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        int r = 0;
        if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN)
            r = rm_at(dirfd(d), e->d_name, depth + 1);
        else if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
            r = errno == EISDIR ? rm_at(dirfd(d), e->d_name, depth + 1) : -errno;
        if (r < 0 && rc == 0)
            rc = r;
    }
    closedir(d);
    if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && rc == 0)
        rc = -errno;
    return rc;
}

int sup_remove_tree(const char *path)
{
    return rm_at(AT_FDCWD, path, 0);
}

int sup_resolve_output(const char *spec, const char *jobdir, const char *default_name,
                       const char *workdir, const struct agent_job *j, char *out, size_t len)
{
    if (!spec || !*spec)
        return snprintf(out, len, "%s/%s", jobdir, default_name) >= (int)len ? -ENAMETOOLONG : 0;
    char buf[PATH_MAX];
    size_t o = 0;
    for (const char *p = spec; *p; p++) {
        char tmp[160];
        const char *add = tmp;
        if (*p == '%' && p[1]) {
            p++;
            if (*p == 'j')
                snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)j->id);
            else if (*p == 'a')
                snprintf(tmp, sizeof tmp, "%d", j->array_index);
            else if (*p == 'x')
                add = j->name[0] ? j->name : "job";
            else if (*p == '%')
                add = "%";
            else
                snprintf(tmp, sizeof tmp, "%%%c", *p);
        } else {
            tmp[0] = *p;
            tmp[1] = '\0';
        }
        size_t al = strlen(add);
        if (o + al + 1 > sizeof buf)
            return -ENAMETOOLONG;
        memcpy(buf + o, add, al);
        o += al;
    }
    buf[o] = '\0';
    int n = buf[0] == '/' ? snprintf(out, len, "%s", buf)
                          : snprintf(out, len, "%s/%s", workdir && *workdir ? workdir : "/", buf);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---------------------------------------------------------------------------------- */
/* Environment                                                                         */

struct envb {
    char **v;
    int n, cap;
};

static bool env_has(const struct envb *e, const char *key)
{
    size_t kl = strlen(key);
    for (int i = 0; i < e->n; i++)
        if (strncmp(e->v[i], key, kl) == 0 && e->v[i][kl] == '=')
            return true;
    return false;
}

/* Set key=value; `force` replaces a value the job gave (the DOCKET_* and GPU binding). */
static void env_set(struct envb *e, const char *key, const char *value, bool force)
{
    size_t kl = strlen(key), len = kl + strlen(value) + 2;
    char *kv = malloc(len);
    if (!kv)
        return;
    snprintf(kv, len, "%s=%s", key, value);
    for (int i = 0; i < e->n; i++)
        if (strncmp(e->v[i], key, kl) == 0 && e->v[i][kl] == '=') {
            if (force) {
                free(e->v[i]);
                e->v[i] = kv;
            } else {
                free(kv);
            }
            return;
        }
    if (e->n + 2 > e->cap) {
        int cap = e->cap ? e->cap * 2 : 64;
        char **nv = realloc(e->v, (size_t)cap * sizeof *nv);
        if (!nv) {
            free(kv);
            return;
        }
        e->v = nv;
        e->cap = cap;
    }
    e->v[e->n++] = kv;
    e->v[e->n] = NULL;
}

char **sup_build_env(const struct agent_job *j, const char *node, const char *user,
                     const char *home, const char *shell, const char *scratch)
{
    struct envb e = {NULL, 0, 0};
    for (int i = 0; i < j->nenv; i++) {
        char *eq = strchr(j->env[i], '=');
        if (!eq)
            continue;
        char key[256];
        size_t kl = (size_t)(eq - j->env[i]);
        if (kl >= sizeof key)
            continue;
        memcpy(key, j->env[i], kl);
        key[kl] = '\0';
        env_set(&e, key, eq + 1, true);
    }
    char num[32], gpus[AGENT_MAX_GPUS * 4 + 1] = "";
    size_t gl = 0;
    for (int i = 0; i < j->ngpus; i++)
        gl += (size_t)snprintf(gpus + gl, sizeof gpus - gl, "%s%d", i ? "," : "", j->gpus[i]);
    snprintf(num, sizeof num, "%llu", (unsigned long long)j->id);
    env_set(&e, "DOCKET_JOB_ID", num, true);
    env_set(&e, "DOCKET_JOB_NAME", j->name, true);
    env_set(&e, "DOCKET_PROJECT", j->project, true);
    env_set(&e, "DOCKET_TIER", j->tier, true);
    env_set(&e, "DOCKET_CLASS", j->class_name, true);
    env_set(&e, "DOCKET_NODE", node, true);
    env_set(&e, "DOCKET_GPUS", gpus, true);
    env_set(&e, "CUDA_VISIBLE_DEVICES", gpus, true);
    env_set(&e, "NVIDIA_VISIBLE_DEVICES", j->ngpus ? gpus : "void", true);
    snprintf(num, sizeof num, "%d", j->array_index);
    env_set(&e, "DOCKET_ARRAY_INDEX", num, true);
    struct envb nl = {NULL, 0, 0};
    size_t need = 1;
    for (int i = 0; i < j->nnodes; i++)
        need += strlen(j->nodelist[i]) + 1;
    char *list = malloc(need + strlen(node));
    if (list) {
        size_t o = 0;
        for (int i = 0; i < j->nnodes; i++)
            o += (size_t)snprintf(list + o, need - o, "%s%s", i ? "," : "", j->nodelist[i]);
        if (j->nnodes == 0)
            memcpy(list, node, strlen(node) + 1);
        env_set(&e, "DOCKET_NODELIST", list, true);
        free(list);
    }
    (void)nl;
    if (j->world_size > 1 || j->nnodes > 1) {
        env_set(&e, "MASTER_ADDR",
                j->master_addr[0] ? j->master_addr : (j->nnodes ? j->nodelist[0] : node), true);
        snprintf(num, sizeof num, "%d", j->master_port ? j->master_port : 29500);
        env_set(&e, "MASTER_PORT", num, true);
        snprintf(num, sizeof num, "%d", j->world_size ? j->world_size : j->nnodes);
        env_set(&e, "WORLD_SIZE", num, true);
        snprintf(num, sizeof num, "%d", j->node_rank);
        env_set(&e, "NODE_RANK", num, true);
    }
    if (scratch && *scratch) {
        env_set(&e, "DOCKET_SCRATCH", scratch, true);
        env_set(&e, "TMPDIR", scratch, false);
    }
    env_set(&e, "PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", false);
    if (home)
        env_set(&e, "HOME", home, false);
    if (user) {
        env_set(&e, "USER", user, false);
        env_set(&e, "LOGNAME", user, false);
    }
    if (shell)
        env_set(&e, "SHELL", shell, false);
    if (!e.v) {
        e.v = calloc(1, sizeof *e.v);
    }
    (void)env_has;
    return e.v;
}

void sup_env_free(char **env)
{
    for (char **p = env; p && *p; p++)
        free(*p);
    free(env);
}

/* ---------------------------------------------------------------------------------- */
/* The supervisor process                                                              */

struct sup {
    const struct sup_config *c;
    const struct agent_job *j;
    char dir[PATH_MAX];
    char scratch[PATH_MAX];
    struct cg_job cg;
    bool use_cg;
    const struct cg_job *spare_cg; /* a spare's group, with us already in it */
    int cg_fd;                     /* v2: the job's group, for clone3(CLONE_INTO_CGROUP) */
    bool born_inside;              /* the child was created in the group: no move */
    bool inside;                   /* we are in the job's group (spare path) until the spawn */
    struct sup_state st;
    uid_t uid;
    gid_t gid;
    gid_t groups[256]; /* the user's groups, looked up before the fork */
    int ngroups;
    char user[AGENT_NAME_MAX];
    char home[PATH_MAX], shell[PATH_MAX];
    int out_fd, err_fd; /* default logs opened by the supervisor, or -1 */
    pid_t leader;
    bool leader_done;
    int leader_status;
    bool stopping, timed_out, killed;
    int64_t kill_at;  /* monotonic ms, 0 = none */
    int64_t limit_at; /* monotonic ms, 0 = none */
    int stop_signal;
    int64_t lease_at; /* monotonic ms of the next look at the lease, 0 = none */
    bool fenced;
};

static void slog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The supervisor's own messages go to JOBDIR/supervisor.log, opened at the first one
 * (most jobs have nothing to say, and a file less per job counts at 500 jobs/s). */
static char slog_path[PATH_MAX + 32];
static int slog_fd = -1;

static void slog(const char *fmt, ...)
{
    if (slog_fd < 0 && slog_path[0])
        slog_fd = open(slog_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (slog_fd < 0)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t w = write(slog_fd, buf, (size_t)n);
    (void)w;
}

static void save(struct sup *s)
{
    int rc = sup_state_write(s->dir, &s->st);
    if (rc < 0)
        slog("cannot write state of job %llu: %s", (unsigned long long)s->j->id, strerror(-rc));
}

static void reap_all(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

static int resolve_user(struct sup *s, char *err, size_t errlen)
{
    bool root = geteuid() == 0;
    const char *name = s->j->user;
    struct passwd pw, *res = NULL;
    char buf[4096];
    if (!root || !*name) {
        int e = getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res);
        s->uid = geteuid();
        s->gid = getegid();
        if (e == 0 && res) {
            str_copy(s->user, sizeof s->user, pw.pw_name);
            str_copy(s->home, sizeof s->home, pw.pw_dir);
            str_copy(s->shell, sizeof s->shell, pw.pw_shell);
            s->ngroups = (int)(sizeof s->groups / sizeof s->groups[0]);
            if (getgrouplist(pw.pw_name, pw.pw_gid, s->groups, &s->ngroups) < 0)
                s->ngroups = 0;
        }
        if (root && !s->c->allow_root_jobs) {
            errf(err, errlen,
                 "job has no user and the agent runs as root (--allow-root-jobs not set)");
            return -EPERM;
        }
        if (!root && *name && (!res || strcmp(name, pw.pw_name) != 0)) {
            errf(err, errlen, "cannot run as user '%s': the agent is not root", name);
            return -EPERM;
        }
        return 0;
    }
    int e = getpwnam_r(name, &pw, buf, sizeof buf, &res);
    if (e != 0 || !res) {
        errf(err, errlen, "unknown user '%s'", name);
        return -ENOENT;
    }
    if (pw.pw_uid == 0 && !s->c->allow_root_jobs) {
        errf(err, errlen, "refusing to run a job as root user '%s' (--allow-root-jobs not set)",
             name);
        return -EPERM;
    }
    s->uid = pw.pw_uid;
    s->gid = pw.pw_gid;
    s->ngroups = (int)(sizeof s->groups / sizeof s->groups[0]);
    if (getgrouplist(pw.pw_name, pw.pw_gid, s->groups, &s->ngroups) < 0) {
        errf(err, errlen, "user '%s' is in too many groups", name);
        return -E2BIG;
    }
    str_copy(s->user, sizeof s->user, pw.pw_name);
    str_copy(s->home, sizeof s->home, pw.pw_dir);
    str_copy(s->shell, sizeof s->shell, pw.pw_shell);
    return 0;
}

/* Check a freshly opened output: a regular file only (not a FIFO, a device, a socket),
 * made blocking again, its identity and size recorded for the agent's shipping. */
static int output_checked(int fd, const char *path, int64_t *dev, int64_t *ino, int64_t *start,
                          char *err, size_t errlen)
{
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        errf(err, errlen, "output '%s' is not a regular file", path);
        close(fd);
        return -EINVAL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        errf(err, errlen, "cannot use output '%s': %s", path, strerror(errno));
        close(fd);
        return -EIO;
    }
    *dev = (int64_t)sb.st_dev;
    *ino = (int64_t)sb.st_ino;
    *start = (int64_t)sb.st_size;
    return fd;
}

/* A default log, STATE_DIR/jobs/ID/stdout|stderr: made by us in our own directory,
 * handed to the user. */
static int open_default_log(struct sup *s, const char *path, int64_t *dev, int64_t *ino,
                            int64_t *start, char *err, size_t errlen)
{
    int fd = open(
        path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0640);
    if (fd < 0) {
        int e = errno;
        errf(err, errlen, "cannot open '%s': %s", path, strerror(e));
        return -e;
    }
    if (geteuid() == 0 && fchown(fd, s->uid, s->gid) < 0) {
        int e = errno;
        errf(err, errlen, "cannot give '%s' to the job's user: %s", path, strerror(e));
        close(fd);
        return -e;
    }
    return output_checked(fd, path, dev, ino, start, err, errlen);
}

/* An output path the job gave: opened here, as the job's user (fsuid, fsgid and the
 * user's groups, so the kernel checks the user's rights and not ours), never through a
 * symlink at its end, never waiting (a FIFO without a reader fails at once instead of
 * hanging the launch), and only when it is a regular file. The job gets this descriptor
 * and the agent reads this inode, never whatever the path names later. */
static int open_user_output(struct sup *s, const char *path, int64_t *dev, int64_t *ino,
                            int64_t *start, char *err, size_t errlen)
{
    bool root = geteuid() == 0;
    gid_t saved[256];
    int nsaved = 0;
    if (root) {
        nsaved = getgroups((int)(sizeof saved / sizeof saved[0]), saved);
        if (nsaved < 0 || setgroups((size_t)s->ngroups, s->groups) < 0) {
            errf(err, errlen, "cannot take the groups of user '%s': %s", s->user, strerror(errno));
            return -EPERM;
        }
        setfsgid(s->gid);
        setfsuid(s->uid);
        if ((uid_t)setfsuid((uid_t)-1) != s->uid || (gid_t)setfsgid((gid_t)-1) != s->gid) {
            setfsuid(0);
            setfsgid(0);
            setgroups((size_t)nsaved, saved);
            errf(err, errlen, "cannot act as user '%s' to open '%s'", s->user, path);
            return -EPERM;
        }
    }
    int fd = open(
        path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644);
    int e = errno;
    if (root) {
        setfsuid(0);
        setfsgid(0);
        if (setgroups((size_t)nsaved, saved) < 0)
            slog("cannot restore the supervisor's groups: %s", strerror(errno));
    }
    if (fd < 0) {
        const char *why = e == ELOOP   ? "it is a symbolic link"
                          : e == ENXIO ? "it is a FIFO or socket"
                                       : strerror(e);
        errf(err, errlen, "cannot open output '%s' as user '%s': %s", path, s->user, why);
        return -e;
    }
    return output_checked(fd, path, dev, ino, start, err, errlen);
}

/* Report a failure of the job's child to the supervisor and end the child. */
static void __attribute__((noreturn)) child_fail(int fd, const char *what, int e)
{
    char msg[512];
    int n = snprintf(msg, sizeof msg, "%s: %s", what, strerror(e));
    if (n > 0) {
        ssize_t w = write(fd, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
        (void)w;
    }
    _exit(127);
}

/* Runs in the job's child: from here on only this process and its exec matter. */
static void __attribute__((noreturn)) child_exec(struct sup *s, int pfd, char **env)
{
    char what[PATH_MAX + 64];
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setsid();
    char cgerr[256];
    if (s->use_cg && !s->inside && !s->born_inside &&
        cg_job_attach(&s->cg, 0, cgerr, sizeof cgerr) < 0) {
        ssize_t w = write(pfd, cgerr, strlen(cgerr));
        (void)w;
        _exit(127);
    }
    if (geteuid() == 0 && s->c->job_oom_score_adj != 0) {
        /* we inherit the agent's -1000; the job goes first when memory runs out (set while
         * still root, so the job cannot lower it again) */
        char adj[16];
        int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        int n = snprintf(adj, sizeof adj, "%d", s->c->job_oom_score_adj);
        if (fd < 0 || write(fd, adj, (size_t)n) != n)
            child_fail(pfd, "cannot set the job's oom_score_adj", errno);
        close(fd);
    }
    if (geteuid() == 0) {
        /* the order matters: groups, then gid, then uid; each checked */
        if (setgroups((size_t)s->ngroups, s->groups) < 0)
            child_fail(pfd, "setgroups", errno);
        if (setgid(s->gid) < 0)
            child_fail(pfd, "setgid", errno);
        if (setuid(s->uid) < 0)
            child_fail(pfd, "setuid", errno);
        if (s->uid != 0 && (setuid(0) == 0 || geteuid() == 0))
            child_fail(pfd, "privileges still held after setuid", EPERM);
    }
    const char *wd = s->j->workdir && *s->j->workdir ? s->j->workdir : (s->home[0] ? s->home : "/");
    if (chdir(wd) < 0) {
        snprintf(what, sizeof what, "cannot enter working directory '%s'", wd);
        child_fail(pfd, what, errno);
    }
    int out = s->out_fd, errfd = s->err_fd; /* opened by the supervisor (prepare) */
    int in = open("/dev/null", O_RDONLY);
    if (in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
        child_fail(pfd, "cannot set up standard descriptors", errno);
    /* the status pipe is close-on-exec; every other inherited descriptor goes now */
    if (pfd > 3)
        close_range(3, (unsigned)pfd - 1, 0);
    close_range((unsigned)pfd + 1, ~0U, 0);
    char *sh_argv[3];
    char **argv = s->j->argv;
    if (!argv) {
        snprintf(what, sizeof what, "%s/.docket_script", s->scratch);
        bool shebang = strncmp(s->j->script, "#!", 2) == 0;
        sh_argv[0] = shebang ? what : "/bin/sh";
        sh_argv[1] = shebang ? NULL : what;
        sh_argv[2] = NULL;
        argv = sh_argv;
    }
    execvpe(argv[0], argv, env);
    snprintf(what, sizeof what, "cannot execute '%s'", argv[0]);
    child_fail(pfd, what, errno);
}

static int write_script(struct sup *s, char *err, size_t errlen)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/.docket_script", s->scratch);
    /* a fresh directory: anything already there (a FIFO, a link another job of the user
     * raced in) is refused, never opened */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0700);
    if (fd < 0) {
        errf(err, errlen, "cannot write script '%s': %s", path, strerror(errno));
        return -errno;
    }
    size_t n = strlen(s->j->script);
    ssize_t w = write(fd, s->j->script, n);
    int rc = w == (ssize_t)n ? 0 : -EIO;
    if (rc == 0 && geteuid() == 0 && fchown(fd, s->uid, s->gid) < 0)
        rc = -errno;
    close(fd);
    if (rc < 0)
        errf(err, errlen, "cannot write script '%s': %s", path, strerror(-rc));
    return rc;
}

static int make_scratch(struct sup *s, char *err, size_t errlen)
{
    snprintf(s->scratch, sizeof s->scratch, "%s/job_%llu", s->c->scratch_root,
             (unsigned long long)s->j->id);
    sup_remove_tree(s->scratch); /* left over from an earlier run of this job */
    if (mkdir(s->scratch, 0700) < 0 || (geteuid() == 0 && chown(s->scratch, s->uid, s->gid) < 0)) {
        errf(err, errlen, "cannot create scratch directory '%s': %s", s->scratch, strerror(errno));
        return -errno;
    }
    return s->j->script ? write_script(s, err, errlen) : 0;
}

/* What the job may use beyond memory and CPU: a number of processes, and of the node's
 * GPUs only its own (the device nodes of the others cannot be opened). */
static int isolate(struct sup *s, char *err, size_t errlen)
{
    int rc = cg_job_set_pids(&s->cg, s->c->pids_max, err, errlen);
    if (rc < 0 || s->c->node_gpus <= 0)
        return rc;
    int node[AGENT_MAX_GPUS], mine[AGENT_MAX_GPUS];
    int n = s->c->node_gpus < AGENT_MAX_GPUS ? s->c->node_gpus : AGENT_MAX_GPUS;
    for (int i = 0; i < n; i++)
        node[i] = s->c->gpu_minor ? s->c->gpu_minor[i] : i;
    for (int i = 0; i < s->j->ngpus; i++) {
        int g = s->j->gpus[i]; /* the agent checked it exists (gpus_check) */
        mine[i] = g >= 0 && g < n ? node[g] : g;
    }
    return cg_job_set_devices(&s->cg, mine, s->j->ngpus, node, n, err, errlen);
}

/* Everything before the fork of the job: user, cgroup, scratch, logs. */
static int prepare(struct sup *s, char *err, size_t errlen)
{
    int rc;
    if ((rc = resolve_user(s, err, errlen)) < 0)
        return rc;
    const char *wd = s->j->workdir && *s->j->workdir ? s->j->workdir : (s->home[0] ? s->home : "/");
    if ((rc = sup_resolve_output(s->j->output, s->dir, "stdout", wd, s->j, s->st.out_path,
                                 sizeof s->st.out_path)) < 0 ||
        (rc = sup_resolve_output(s->j->error, s->dir, "stderr", wd, s->j, s->st.err_path,
                                 sizeof s->st.err_path)) < 0) {
        errf(err, errlen, "output path too long");
        return rc;
    }
    struct sup_state *st = &s->st;
    bool own_out = !s->j->output || !*s->j->output, own_err = !s->j->error || !*s->j->error;
    s->out_fd = own_out ? open_default_log(s, st->out_path, &st->out_dev, &st->out_ino,
                                           &st->out_start, err, errlen)
                        : open_user_output(s, st->out_path, &st->out_dev, &st->out_ino,
                                           &st->out_start, err, errlen);
    if (s->out_fd < 0)
        return s->out_fd;
    if (!own_err && strcmp(st->err_path, st->out_path) == 0) {
        s->err_fd = s->out_fd; /* one file for both: one descriptor, one inode */
        st->err_dev = st->out_dev;
        st->err_ino = st->out_ino;
        st->err_start = st->out_start;
    } else {
        s->err_fd = own_err ? open_default_log(s, st->err_path, &st->err_dev, &st->err_ino,
                                               &st->err_start, err, errlen)
                            : open_user_output(s, st->err_path, &st->err_dev, &st->err_ino,
                                               &st->err_start, err, errlen);
        if (s->err_fd < 0)
            return s->err_fd;
    }
    if (s->c->cg && s->c->cg->mode != CG_NONE) {
        int64_t mem_mb = s->j->mem_mb > 0 ? s->j->mem_mb : s->c->default_mem_mb;
        if ((rc = cg_job_init(&s->cg, s->c->cg, s->c->node, s->j->id)) < 0) {
            errf(err, errlen, "cgroup path too long");
            return rc;
        }
        /* a group left by an earlier run would mix up usage and OOM counts */
        cg_job_reclaim(&s->cg, 1000, reap_all, NULL, 0);
        if (s->spare_cg) {
            /* we sit in the spare's group already: it becomes the job's, and the job,
             * spawned from here, starts in it without a move (see sup_spare_start) */
            s->use_cg = true;
            if ((rc = cg_job_rename(s->spare_cg, &s->cg, err, errlen)) < 0) {
                s->cg = *s->spare_cg; /* leave_group() empties and removes the spare's */
                return rc;
            }
            rc = cg_job_set_limits(&s->cg, mem_mb, s->j->cpus, err, errlen);
        } else {
            rc = cg_job_create(&s->cg, mem_mb, s->j->cpus, err, errlen);
        }
        s->use_cg = true;
        if (rc == 0)
            rc = isolate(s, err, errlen);
        if (rc < 0)
            return rc;
        if (s->cg.mode == CG_V2)
            s->cg_fd = open(s->cg.dir[0], O_PATH | O_DIRECTORY | O_CLOEXEC);
        str_copy(s->st.cgroup, sizeof s->st.cgroup,
                 s->cg.mode == CG_V2 ? s->cg.dir[0] : s->cg.dir[CG_FREEZER]);
    }
    return make_scratch(s, err, errlen);
}

/* Spare path: once the job runs in the group, we move out of it (to the node's group),
 * so that signals and kills of the job's group never reach us. Slow (an RCU grace period
 * on v1) but the job is already running. */
static void leave_group(struct sup *s)
{
    if (!s->inside)
        return;
    struct cg_job node;
    char err[256];
    if (cg_node_init(&node, s->c->cg, s->c->node) < 0 ||
        cg_job_attach(&node, 0, err, sizeof err) < 0)
        slog("job %llu: cannot leave the job's cgroup: %s", (unsigned long long)s->j->id, err);
    s->inside = false;
}

#if defined(__SANITIZE_ADDRESS__)
#define SUP_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SUP_SANITIZED 1
#endif
#endif

struct child_args {
    struct sup *s;
    int p[2];
    char **env;
};

static int child_main(void *arg)
{
    struct child_args *ca = arg;
    close(ca->p[0]);
    child_exec(ca->s, ca->p[1], ca->env);
}

/* The job's process. Outside sanitizer builds it shares our memory until its exec
 * (clone with CLONE_VM | CLONE_VFORK, as posix_spawn does): no page tables are copied,
 * which is most of a launch's cost. The child calls nothing that allocates (the groups
 * were looked up before) and we are single-threaded. ASan cannot follow a child on a
 * foreign stack, so sanitized builds use fork. */
/* The kernel's struct clone_args (stable ABI, declared here to keep glibc's and the
 * kernel's CLONE_* macros apart). */
struct sup_clone_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
    uint64_t set_tid, set_tid_size, cgroup;
};
#define SUP_CLONE_INTO_CGROUP 0x200000000ULL

/* cgroup v2: create the child directly inside the job's group (Linux >= 5.7), so no move
 * (and no wait for the cgroup rwsem) is on the launch path. Fork semantics. 0 = not
 * possible here (the caller spawns the ordinary way). */
static pid_t spawn_into_group(struct sup *s, struct child_args *ca)
{
    if (s->cg_fd < 0)
        return 0;
    struct sup_clone_args a;
    memset(&a, 0, sizeof a);
    a.flags = SUP_CLONE_INTO_CGROUP;
    a.exit_signal = SIGCHLD;
    a.cgroup = (uint64_t)s->cg_fd;
    s->born_inside = true;
    long pid = syscall(SYS_clone3, &a, sizeof a);
    if (pid == 0)
        child_main(ca);
    if (pid > 0)
        return (pid_t)pid;
    s->born_inside = false;
    return 0;
}

static pid_t spawn_child(struct sup *s, int p[2], char **env)
{
    struct child_args ca = {s, {p[0], p[1]}, env};
    pid_t into = spawn_into_group(s, &ca);
    if (into > 0)
        return into;
#ifdef SUP_SANITIZED
    pid_t pid = fork();
    if (pid == 0)
        child_main(&ca);
    return pid;
#else
    /* the child's stack: static, so no mmap per job; the parent waits (CLONE_VFORK) */
    static char stack[128 * 1024] __attribute__((aligned(64)));
    return clone(child_main, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &ca);
#endif
}

static int launch(struct sup *s, char *err, size_t errlen)
{
    int rc = prepare(s, err, errlen);
    if (rc < 0)
        return rc;
    /* who we are (for an agent that restarts), the log paths and the cgroup: the only
     * write before the end, unless the job is signalled */
    save(s);
    char **env = sup_build_env(s->j, s->c->node, s->user, s->home[0] ? s->home : NULL,
                               s->shell[0] ? s->shell : NULL, s->scratch);
    int p[2];
    if (!env || pipe2(p, O_CLOEXEC) < 0) {
        sup_env_free(env);
        errf(err, errlen, "cannot launch: %s", strerror(errno));
        return -errno;
    }
    pid_t pid = spawn_child(s, p, env);
    if (s->cg_fd >= 0) {
        close(s->cg_fd);
        s->cg_fd = -1;
    }
    leave_group(s);
    close(p[1]);
    sup_env_free(env);
    if (pid < 0) {
        close(p[0]);
        errf(err, errlen, "cannot fork: %s", strerror(errno));
        return -errno;
    }
    s->leader = pid;
    /* EOF means the exec succeeded (the pipe was close-on-exec); text is the failure */
    char msg[512];
    ssize_t n;
    while ((n = read(p[0], msg, sizeof msg - 1)) < 0 && errno == EINTR)
        ;
    close(p[0]);
    if (n > 0) {
        msg[n] = '\0';
        errf(err, errlen, "%s", msg);
        waitpid(pid, NULL, 0);
        s->leader_done = true;
        return -ECHILD;
    }
    return 0;
}

static void stop_job(struct sup *s, int sig, int64_t grace_ms, const char *why)
{
    if (s->leader_done)
        return;
    int64_t now = clock_mono_ms();
    int64_t at = now + grace_ms;
    if (s->stopping && s->kill_at && s->kill_at <= at) {
        slog("job %llu: %s, already stopping", (unsigned long long)s->j->id, why);
        return;
    }
    int n = s->use_cg ? cg_job_signal(&s->cg, sig) : (kill(-s->leader, sig) == 0 ? 1 : 0);
    slog("job %llu: %s: signal %d to %d processes, kill in %lld ms", (unsigned long long)s->j->id,
         why, sig, n, (long long)grace_ms);
    if (!s->stopping)
        str_copy(s->st.message, sizeof s->st.message, why);
    s->stopping = true;
    s->stop_signal = sig;
    s->kill_at = at;
    if (!strcmp(s->st.state, "running")) {
        str_copy(s->st.state, sizeof s->st.state, "stopping");
        save(s);
    }
}

static void kill_job(struct sup *s, const char *why)
{
    if (s->leader_done)
        return;
    int n = s->use_cg ? cg_job_signal(&s->cg, SIGKILL) : (kill(-s->leader, SIGKILL) == 0 ? 1 : 0);
    slog("job %llu: %s: SIGKILL to %d processes", (unsigned long long)s->j->id, why, n);
    if (!s->killed && !s->stopping)
        str_copy(s->st.message, sizeof s->st.message, why);
    s->killed = true;
    s->kill_at = 0;
}

static int ctl_cmp(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int ctl_filter(const struct dirent *d)
{
    return strncmp(d->d_name, "ctl.", 4) == 0;
}

static void read_ctl(struct sup *s)
{
    struct dirent **list = NULL;
    int n = scandir(s->dir, &list, ctl_filter, ctl_cmp);
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX + 300], buf[128] = "";
        snprintf(path, sizeof path, "%s/%s", s->dir, list[i]->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t r = read(fd, buf, sizeof buf - 1);
            buf[r > 0 ? r : 0] = '\0';
            close(fd);
        }
        unlink(path);
        free(list[i]);
        int sig = 0;
        long long grace = 0;
        if (sscanf(buf, "signal %d %lld", &sig, &grace) == 2 && sig > 0 && sig < NSIG &&
            grace >= 0) {
            char why[64];
            snprintf(why, sizeof why, "signalled %s", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
            stop_job(s, sig, grace, why);
        } else if (strncmp(buf, "kill", 4) == 0) {
            kill_job(s, "killed on request");
        } else {
            slog("job %llu: ignoring bad command '%s'", (unsigned long long)s->j->id, buf);
        }
    }
    free(list);
}

static void on_sigchld(struct sup *s)
{
    int status;
    pid_t p;
    while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
        if (p == s->leader) {
            s->leader_done = true;
            s->leader_status = status;
        }
    }
}

/* The fence: past the lease's deadline the controller may soon count this node as lost
 * and run the job elsewhere, so it is stopped (its signal, a grace the lease bounds, then
 * kill) before that can happen. A lease renewed in time only moves the next look. */
static void check_lease(struct sup *s, int64_t now)
{
    int64_t deadline = 0, grace = 0;
    int rc = sup_lease_read(s->c->state_dir, &deadline, &grace);
    if (rc == -EAGAIN) {
        s->lease_at = now + 10; /* caught a rewrite: look again in a moment */
        return;
    }
    if (rc < 0 || deadline == 0) {
        s->lease_at = 0; /* no lease (an agent that never reached a controller) */
        return;
    }
    if (deadline > now) {
        s->lease_at = deadline;
        return;
    }
    s->lease_at = 0;
    s->fenced = true;
    int64_t g = s->j->grace_ms < grace ? s->j->grace_ms : grace;
    slog("job %llu: fenced: no contact with the controller since the lease ran out %lld ms ago",
         (unsigned long long)s->j->id, (long long)(now - deadline));
    stop_job(s, s->j->signal ? s->j->signal : SIGTERM, g,
             "fenced: the node lost contact with the controller");
    str_copy(s->st.message, sizeof s->st.message,
             "fenced: the node lost contact with the controller");
}

static void run_loop(struct sup *s, int sfd)
{
    while (!s->leader_done) {
        int64_t now = clock_mono_ms();
        if (s->limit_at && now >= s->limit_at && !s->stopping) {
            s->timed_out = true;
            stop_job(s, s->j->signal ? s->j->signal : SIGTERM, s->j->grace_ms,
                     "time limit reached");
        }
        if (s->lease_at && now >= s->lease_at)
            check_lease(s, now);
        if (s->kill_at && now >= s->kill_at)
            kill_job(s, "grace ended");
        int64_t next = 86400000; /* the earliest of the deadlines set, in ms from now */
        int64_t at[3] = {s->limit_at && !s->stopping ? s->limit_at : 0, s->kill_at, s->lease_at};
        for (int i = 0; i < 3; i++)
            if (at[i] && at[i] - now < next)
                next = at[i] - now;
        struct pollfd pfd = {sfd, POLLIN, 0};
        int rc = poll(&pfd, 1, next < 0 ? 0 : (int)next);
        if (rc <= 0)
            continue;
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            if (si.ssi_signo == SIGCHLD)
                on_sigchld(s);
            else if (si.ssi_signo == SIGUSR1)
                read_ctl(s);
        }
        on_sigchld(s); /* coalesced SIGCHLDs */
    }
}

static void finish(struct sup *s, bool launched)
{
    leave_group(s);
    if (s->spare_cg && !s->use_cg)
        cg_job_remove(s->spare_cg); /* failed before the spare's group became the job's */
    int64_t cpu = 0, peak = 0;
    bool oom = false;
    if (s->use_cg) {
        char msg[256] = "";
        if (cg_job_nprocs(&s->cg) > 0) {
            cg_job_signal(&s->cg, SIGKILL); /* the leader is gone: the rest goes too */
            reap_all();
        }
        cg_job_usage(&s->cg, &cpu, &peak);
        oom = cg_job_oom(&s->cg);
        s->st.reclaim_ok = cg_job_reclaim(&s->cg, 10000, reap_all, msg, sizeof msg) == 0;
        if (!s->st.reclaim_ok) {
            str_copy(s->st.reclaim_msg, sizeof s->st.reclaim_msg, msg);
            slog("job %llu: reclaim failed: %s", (unsigned long long)s->j->id, msg);
        }
    } else {
        struct rusage ru;
        if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
            cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000LL +
                  (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
            peak = ru.ru_maxrss / 1024;
        }
        if (s->leader > 0)
            kill(-s->leader, SIGKILL);
        s->st.reclaim_ok = true;
    }
    s->st.usage.cpu_ms = cpu;
    s->st.usage.max_rss_mb = peak;
    if (launched) {
        int st = s->leader_status;
        if (oom) {
            s->st.exit_kind = AGENT_EXIT_OOM;
            s->st.exit_code = WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st);
            str_copy(s->st.message, sizeof s->st.message, "memory limit exceeded");
        } else if (WIFSIGNALED(st)) {
            s->st.exit_kind = AGENT_EXIT_SIGNAL;
            s->st.exit_code = WTERMSIG(st);
        } else {
            s->st.exit_kind = AGENT_EXIT_CODE;
            s->st.exit_code = WEXITSTATUS(st);
        }
        /* a fenced job did not end, the node lost it: whatever its exit, the controller
         * must treat it as lost (requeued where allowed), never as completed */
        if (s->fenced)
            s->st.exit_kind = AGENT_EXIT_LOST;
    }
    /* processes leave cgroup.procs a moment before they become zombies: collect every
     * child (the subreaper's adopted orphans included) so none is left to init */
    for (int i = 0; i < 1000; i++) {
        pid_t p = waitpid(-1, NULL, WNOHANG);
        if (p < 0 && errno == ECHILD)
            break;
        if (p == 0) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    if (!s->c->keep_scratch && s->scratch[0]) {
        /* a scratch dir left behind is a reclaim failure like a group left behind: the
         * node stops taking jobs rather than give a user's files to the next job */
        int rc = sup_remove_tree(s->scratch);
        if (rc < 0) {
            slog("job %llu: cannot remove scratch directory '%s': %s", (unsigned long long)s->j->id,
                 s->scratch, strerror(-rc));
            if (s->st.reclaim_ok) {
                s->st.reclaim_ok = false;
                errf(s->st.reclaim_msg, sizeof s->st.reclaim_msg,
                     "cannot remove scratch directory '%s': %s", s->scratch, strerror(-rc));
            }
        }
    }
    s->st.end_ms = clock_now_ms();
    str_copy(s->st.state, sizeof s->st.state, "exited");
    save(s);
}

/* A supervisor's process: own session, subreaper, no descriptor of the agent's but
 * `keep` (moved to 3 when >= 0), the signals it handles blocked for its signalfd. */
static int become_supervisor(const char *name, int keep)
{
    setsid();
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    prctl(PR_SET_NAME, name);
    int nfd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nfd >= 0)
        dup2(nfd, 0), dup2(nfd, 1), dup2(nfd, 2);
    if (keep >= 0 && keep != 3) {
        dup3(keep, 3, O_CLOEXEC);
        keep = 3;
    }
    close_range(keep >= 0 ? 4 : 3, ~0U, 0);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &set, NULL);
    sigdelset(&set, SIGTERM);
    sigdelset(&set, SIGINT);
    sigdelset(&set, SIGHUP);
    sigdelset(&set, SIGPIPE);
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

static void __attribute__((noreturn))
supervise_job(const struct sup_config *c, const struct agent_job *j, const char *dir,
              const struct cg_job *spare_cg, int sfd)
{
    struct sup s;
    memset(&s, 0, sizeof s);
    s.c = c;
    s.j = j;
    s.out_fd = s.err_fd = s.cg_fd = -1;
    s.spare_cg = spare_cg;
    s.inside = spare_cg != NULL;
    str_copy(s.dir, sizeof s.dir, dir);
    /* our own messages go to supervisor.log (slog) */
    snprintf(slog_path, sizeof slog_path, "%s/supervisor.log", dir);
    slog_fd = -1;
    s.st.job = j->id;
    s.st.sup_pid = getpid();
    s.st.sup_start = sup_proc_starttime(getpid());
    str_copy(s.st.state, sizeof s.st.state, "starting");

    char err[512] = "";
    int rc = sfd < 0 ? -errno : launch(&s, err, sizeof err);
    if (rc < 0) {
        slog("job %llu: launch failed: %s", (unsigned long long)j->id, err);
        s.st.exit_kind = AGENT_EXIT_LAUNCH_FAILED;
        s.st.exit_code = 0;
        str_copy(s.st.message, sizeof s.st.message, err[0] ? err : strerror(-rc));
        finish(&s, false);
        _exit(0);
    }
    s.st.pid = s.leader;
    s.st.start_ms = clock_now_ms();
    str_copy(s.st.state, sizeof s.st.state, "running");
    if (j->time_limit_ms > 0)
        s.limit_at = clock_mono_ms() + j->time_limit_ms + c->limit_slack_ms;
    s.lease_at = clock_mono_ms(); /* a first look at the lease at once */
    read_ctl(&s);                 /* commands that came before the signalfd existed */
    run_loop(&s, sfd);
    finish(&s, true);
    _exit(0);
}

static void __attribute__((noreturn))
supervise(const struct sup_config *c, const struct agent_job *j, const char *dir)
{
    int sfd = become_supervisor("docket-sup", -1);
    supervise_job(c, j, dir, NULL, sfd);
}

/* The job directory of a new run: made, cleared of an earlier run's state and commands
 * (the logs stay, appended), job.json written. */
static int prepare_job_dir(const struct sup_config *c, const struct agent_job *j, int64_t seq,
                           char *dir, size_t dirlen, char *err, size_t errlen)
{
    char jobs[PATH_MAX];
    snprintf(jobs, sizeof jobs, "%s/jobs", c->state_dir);
    if (mkdir(jobs, 0711) < 0 && errno != EEXIST) {
        errf(err, errlen, "cannot create '%s': %s", jobs, strerror(errno));
        return -errno;
    }
    if (sup_job_dir(c, j->id, dir, dirlen) < 0 || (mkdir(dir, 0711) < 0 && errno != EEXIST)) {
        errf(err, errlen, "cannot create job directory for job %llu: %s", (unsigned long long)j->id,
             strerror(errno));
        return -errno;
    }
    char path[PATH_MAX + 300];
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, state_files[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/reported", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/log_base", dir); /* a new run starts its own output */
    unlink(path);
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL)
        if (strncmp(de->d_name, "ctl.", 4) == 0 || strncmp(de->d_name, ".ctl.", 5) == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    json_t *o = json_pack("{s:I, s:o}", "start_seq", (json_int_t)seq, "job", agent_job_to_json(j));
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    int rc = text ? write_atomic(dir, "job.json", text) : -ENOMEM;
    free(text);
    if (rc < 0)
        errf(err, errlen, "cannot write job files in '%s': %s", dir, strerror(-rc));
    return rc;
}

/* Fork with SIGUSR1 and SIGCHLD blocked in the child until its signalfd takes over. */
static pid_t fork_blocked(void)
{
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, &old);
    pid_t pid = fork();
    if (pid != 0) {
        int e = errno;
        sigprocmask(SIG_SETMASK, &old, NULL);
        errno = e;
    }
    return pid;
}

/* ---------------------------------------------------------------------------------- */
/* Spares: a supervisor made in advance, already inside a group of its own             */

/* The spare waits for a job id on fd 3; EOF means it is not needed (the agent left). */
static void __attribute__((noreturn)) spare_main(const struct sup_config *c, int rfd)
{
    int sfd = become_supervisor("docket-spare", rfd);
    char leaf[32], err[256] = "";
    snprintf(leaf, sizeof leaf, "spare_%d", (int)getpid());
    struct cg_job sp, node;
    if (cg_job_init_leaf(&sp, c->cg, c->node, leaf) < 0 ||
        cg_node_init(&node, c->cg, c->node) < 0 || cg_job_create(&sp, 0, 0, err, sizeof err) < 0)
        _exit(1);
    /* the slow move (an RCU grace period on v1) happens now, before any job */
    if (cg_job_attach(&sp, 0, err, sizeof err) < 0) {
        cg_job_remove(&sp);
        _exit(1);
    }
    char buf[64] = "";
    size_t got = 0;
    while (got < sizeof buf - 1) {
        ssize_t n = read(3, buf + got, sizeof buf - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        if (memchr(buf, '\n', got))
            break;
    }
    buf[got] = '\0';
    char *end;
    unsigned long long id = strtoull(buf, &end, 10);
    char dir[PATH_MAX], path[PATH_MAX + 16];
    struct agent_job j;
    struct agent_msg_error me;
    json_error_t je;
    json_t *o = NULL;
    if (got && *end == '\n' && id > 0 && sup_job_dir(c, id, dir, sizeof dir) == 0) {
        snprintf(path, sizeof path, "%s/job.json", dir);
        o = json_load_file(path, 0, &je);
    }
    if (!o || agent_job_parse(json_object_get(o, "job"), &j, &me) < 0) {
        /* not needed, or nothing usable: out of the group, remove it, go */
        json_decref(o);
        cg_job_attach(&node, 0, NULL, 0);
        cg_job_remove(&sp);
        _exit(o ? 1 : 0);
    }
    json_decref(o);
    close(3);
    supervise_job(c, &j, dir, &sp, sfd);
}

int sup_spare_start(const struct sup_config *c, struct sup_spare *sp, char *err, size_t errlen)
{
    sp->pid = 0;
    sp->fd = -1;
    if (!c->cg || c->cg->mode != CG_V1) {
        errf(err, errlen, "spares need cgroup v1 (v2 renames no groups)");
        return -EOPNOTSUPP;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        errf(err, errlen, "cannot make a pipe: %s", strerror(errno));
        return -errno;
    }
    pid_t pid = fork_blocked();
    if (pid == 0) {
        close(p[1]);
        spare_main(c, p[0]);
    }
    int e = errno;
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        errf(err, errlen, "cannot fork a spare supervisor: %s", strerror(e));
        return -e;
    }
    sp->pid = pid;
    sp->fd = p[1];
    return 0;
}

int sup_spare_launch(const struct sup_config *c, struct sup_spare *sp, const struct agent_job *j,
                     int64_t seq, int *sup_pid, char *err, size_t errlen)
{
    if (sp->pid <= 0 || sp->fd < 0)
        return -ENOENT;
    char dir[PATH_MAX];
    int rc = prepare_job_dir(c, j, seq, dir, sizeof dir, err, errlen);
    if (rc < 0)
        return rc;
    char line[32];
    int n = snprintf(line, sizeof line, "%llu\n", (unsigned long long)j->id);
    ssize_t w = write(sp->fd, line, (size_t)n);
    int e = errno;
    close(sp->fd);
    sp->fd = -1;
    if (w != n) {
        errf(err, errlen, "spare supervisor %d is gone: %s", sp->pid, strerror(w < 0 ? e : EPIPE));
        sp->pid = 0;
        return -EPIPE;
    }
    *sup_pid = sp->pid;
    sp->pid = 0;
    return 0;
}

void sup_spare_drop(struct sup_spare *sp)
{
    if (sp->fd >= 0)
        close(sp->fd);
    sp->fd = -1;
    sp->pid = 0;
}

int sup_launch(const struct sup_config *c, const struct agent_job *j, int64_t seq, int *sup_pid,
               char *err, size_t errlen)
{
    char dir[PATH_MAX];
    int rc = prepare_job_dir(c, j, seq, dir, sizeof dir, err, errlen);
    if (rc < 0)
        return rc;
    pid_t pid = fork_blocked();
    if (pid == 0)
        supervise(c, j, dir);
    if (pid < 0) {
        int e = errno;
        errf(err, errlen, "cannot fork supervisor: %s", strerror(e));
        return -e;
    }
    *sup_pid = pid;
    return 0;
}
