/*
 * supstep.c - `srun --container-image`'s tasks, in the supervisor of a Slurm-style job
 * that runs on the node's own system (docs/slurm.md "srun", docs/environments.md
 * "Containers"). The step's task is a process of the job's user, which cannot run the
 * OCI runtime nor read the node's image cache; this supervisor (root) does it for it:
 *
 *   SCRATCH/.slurm-bin/step.sock  listening (the job's user's, mode 0600), polled by the
 *                                 run loop; each connection is authenticated, then served
 *                                 by a child of ours, one per task (at most SUP_STEP_MAX)
 *   JOBDIR/oci-step-N/            that task's bundle (supoci.c), removed at its end (the
 *                                 job's end removes any left, and ends any server left)
 *
 * A peer is the job's own when it runs as the job's user, inside the job's cgroup (else,
 * without cgroups, in the job's session), and proves the job's step key. It sends one
 * byte carrying its standard input, output and error (SCM_RIGHTS), then one line of JSON
 * (src/cli/sruncontainer.c writes it, protocol/ocistep.c reads it): the image, the
 * mounts, the container's working directory, the task's argv, environment and working
 * directory. What it may ask is what
 * the job could have submitted: a mount's source lies under the job's working directory or
 * a storage area of its project (as docketd checks at submit), and is opened as the job's
 * user with no symbolic link on its way (supoci.c); an image layout its user may read.
 *
 * The child makes the image ready in the node's cache (imgcache.c, its unpack in the
 * job's cgroup), writes the bundle, and runs the runtime in the job's cgroup (and network)
 * with the task's descriptors. Lines back: "exit CODE" (128 + N for a signal), or
 * "fail CODE MESSAGE" when the step could not start; lines in: "signal N", for the
 * container's processes. The peer's end of the link ending kills the container.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/sup_int.h"
#include "agent/supoci.h"
#include "protocol/container.h"
#include "protocol/ocistep.h"
#include "util/clock.h"
#include "util/str.h"

enum { SUP_STEP_HELLO_MS = 10000 }; /* for the descriptors and the request */

/* SCRATCH/.slurm-bin/step.sock through /proc/self/fd (a scratch path may be longer than
 * sun_path holds). */
static int step_sock_addr(const char *scratch, struct sockaddr_un *sa, int *dfd)
{
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/.slurm-bin", scratch);
    *dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*dfd < 0)
        return -errno;
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    snprintf(sa->sun_path, sizeof sa->sun_path, "/proc/self/fd/%d/step.sock", *dfd);
    return 0;
}

bool sup_step_wanted(const struct sup *s)
{
    /* a container job's steps run in its one container, where the node's srun is not */
    return s->j->slurm.on && !s->j->container.image;
}

int sup_step_open(struct sup *s)
{
    struct sockaddr_un sa;
    int dfd;
    struct stat sb;
    if (!sup_step_wanted(s) || step_sock_addr(s->scratch, &sa, &dfd) < 0)
        return 0; /* no .slurm-bin: no srun on this node either */
    /* our own directory (the job owns the one above it): never one it put there */
    if (fstat(dfd, &sb) < 0 || sb.st_uid != geteuid()) {
        close(dfd);
        return 0;
    }
    unlinkat(dfd, "step.sock", 0);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int rc = fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 64) < 0
                 ? -errno
                 : 0;
    if (rc == 0 && geteuid() == 0 &&
        (fchownat(dfd, "step.sock", s->uid, s->gid, AT_SYMLINK_NOFOLLOW) < 0 ||
         fchmodat(dfd, "step.sock", 0600, 0) < 0))
        rc = -errno;
    close(dfd);
    if (rc < 0) {
        sup_log("job %llu: cannot serve container steps: %s", (unsigned long long)s->j->id,
                strerror(-rc));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    /* far above the standard descriptors the job's child sets up */
    s->step_lfd = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    close(fd);
    return s->step_lfd < 0 ? -errno : 0;
}

/* ---- the peer ---------------------------------------------------------------------------- */

/* Whether pid is one of the job's processes: in its cgroup, else in its session. */
static bool in_job(const struct sup *s, pid_t pid)
{
    if (!s->use_cg)
        return getsid(pid) == s->leader;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/cgroup.procs", s->st.cgroup);
    FILE *f = fopen(path, "re");
    int p;
    bool found = false;
    while (f && !found && fscanf(f, "%d", &p) == 1)
        found = p == pid;
    if (f)
        fclose(f);
    return found;
}

static void reply(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(int fd, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    if (send(fd, line, (size_t)n, MSG_NOSIGNAL) < 0)
        return; /* the task is gone: nobody to tell */
}

/* Wait for fd to be readable until deadline (monotonic ms). */
static bool readable(int fd, int64_t deadline)
{
    int64_t left = deadline - clock_mono_ms();
    struct pollfd p = {fd, POLLIN, 0};
    return left > 0 && poll(&p, 1, (int)left) == 1;
}

/* The byte that carries the task's three descriptors. 0, or -1. */
static int take_fds(int cfd, int fds[3], int64_t deadline)
{
    char byte;
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * 3)];
    } u;
    struct iovec iov = {&byte, 1};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    if (!readable(cfd, deadline) || recvmsg(cfd, &m, MSG_CMSG_CLOEXEC) != 1)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) /* none came */
        return -1;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    memcpy(fds, CMSG_DATA(c), sizeof(int) * (n < 3 ? n : 3));
    if (n == 3 && !(m.msg_flags & MSG_CTRUNC))
        return 0;
    for (size_t i = 0; i < n && i < 3; i++)
        close(fds[i]);
    return -1;
}

/* The request line, NUL-terminated (malloc'd), its length in *len; or NULL. */
static char *take_line(int cfd, int64_t deadline, size_t *out)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    while (buf && readable(cfd, deadline)) {
        if (len + 1 >= cap) {
            char *more = cap < PROTO_OCI_STEP_MAX ? realloc(buf, cap * 2) : NULL;
            if (!more)
                break;
            buf = more;
            cap *= 2;
        }
        /* looked at, then taken up to the line's end only: what follows is the task's */
        ssize_t r = recv(cfd, buf + len, cap - 1 - len, MSG_PEEK);
        if (r <= 0)
            break;
        char *nl = memchr(buf + len, '\n', (size_t)r);
        size_t take = nl ? (size_t)(nl - (buf + len)) + 1 : (size_t)r;
        if (recv(cfd, buf + len, take, 0) != (ssize_t)take)
            break;
        len += take;
        if (nl) {
            buf[len - 1] = '\0';
            *out = len - 1;
            return buf;
        }
    }
    free(buf);
    return NULL;
}

/* ---- what the task may ask ----------------------------------------------------------------- */

static bool path_under(const char *path, const char *dir)
{
    size_t n = dir ? strlen(dir) : 0;
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return n > 0 && dir[0] == '/' && strncmp(path, dir, n) == 0 &&
           (path[n] == '\0' || path[n] == '/' || n == 1);
}

/* The job's working directory or a storage area of its project on this node (its
 * DOCKET_STORAGE_* and DOCKET_PROJECT_DIR): where a job's own mounts may come from. */
static bool in_job_reach(const struct sup *s, const char *path)
{
    if (s->j->workdir && path_under(path, s->j->workdir))
        return true;
    for (int i = 0; i < s->j->nenv; i++) {
        const char *e = s->j->env[i];
        if ((strncmp(e, "DOCKET_STORAGE_", 15) == 0 ||
             strncmp(e, "DOCKET_PROJECT_DIR=", 19) == 0) &&
            path_under(path, strchr(e, '=') + 1))
            return true;
    }
    return false;
}

/* The request's policy: the job's key, and mounts from the job's reach only (docketd's
 * rule for a job's own mounts); the job's container fields set from it in *j. 0, or -1
 * with a message for the task. */
static int check_request(struct sup *s, const struct proto_oci_step *req, struct agent_job *j,
                         char *err, size_t errlen)
{
    size_t want = strlen(s->j->slurm.step_key);
    /* the key compared in full whatever its first difference (no timing to learn from) */
    unsigned diff = !req->key || !want || strlen(req->key) != want;
    for (size_t i = 0; !diff && i < want; i++)
        diff |= (unsigned)(req->key[i] ^ s->j->slurm.step_key[i]);
    if (diff) {
        sup_errf(err, errlen, "refused: not this job's step key");
        return -1;
    }
    for (int i = 0; i < req->nmounts; i++) {
        struct proto_mount m;
        struct proto_error pe;
        if (proto_mount_parse(req->mounts[i], "--container-mounts", &m, &pe) < 0 ||
            !in_job_reach(s, m.src)) {
            sup_errf(err, errlen,
                     "--container-mounts: source '%.200s' is neither under the job's workdir "
                     "nor in a storage area of its project",
                     m.src);
            return -1;
        }
    }
    j->container.image = (char *)req->image;
    j->container.mounts = (char **)req->mounts;
    j->container.nmounts = req->nmounts;
    /* the task's own directory when the container has it at the same path, else the job's */
    const char *workdir = req->workdir;
    if (!workdir && req->cwd && (in_job_reach(s, req->cwd) || path_under(req->cwd, s->scratch)) &&
        proto_container_path_ok(req->cwd))
        workdir = req->cwd;
    j->container.workdir = (char *)workdir;
    s->keep_path = req->keep_path;
    return 0;
}

/* ---- the container ------------------------------------------------------------------------ */

/* pid and every process under it (its tasks' children lists, read first), signalled. */
static int tree(pid_t pid, pid_t *out, int n, int max)
{
    char path[64];
    if (n >= max)
        return n;
    out[n++] = pid;
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(path, "re");
    int child;
    while (f && fscanf(f, "%d", &child) == 1)
        n = tree(child, out, n, max);
    if (f)
        fclose(f);
    return n;
}

/* The container's processes get sig, and for SIGKILL the runtime (pid) too: any other
 * signal the runtime would pass on to the container's first process a second time
 * (sup_oci_exec says why ignoring it does not stop that). */
static void kill_tree(pid_t pid, int sig)
{
    pid_t all[4096];
    int n = tree(pid, all, 0, 4096);
    for (int i = sig == SIGKILL ? 0 : 1; i < n; i++)
        kill(all[i], sig);
}

/* The runtime's process: in the job's cgroup and network, with the task's descriptors. */
static void __attribute__((noreturn)) runtime_child(struct sup *s, const int fds[3])
{
    sup_child_signals_default();
    char err[256];
    if (s->use_cg && cg_job_attach(&s->cg, 0, err, sizeof err) < 0)
        _exit(125);
    if (s->c->job_oom_score_adj != 0) {
        char adj[16];
        int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        int n = snprintf(adj, sizeof adj, "%d", s->c->job_oom_score_adj);
        if (fd < 0 || write(fd, adj, (size_t)n) != n)
            _exit(125);
        close(fd);
    }
    if (s->net_fd >= 0 && setns(s->net_fd, CLONE_NEWNET) < 0)
        _exit(125);
    for (int i = 0; i < 3; i++)
        if (dup2(fds[i], i) < 0)
            _exit(125);
    close_range(3, ~0U, 0);
    sup_oci_exec(s);
    _exit(125);
}

/* Runs the container until it ends or the task goes; its wait status, or -1 when the
 * task went first (the container killed). */
static int run_container(struct sup *s, int cfd, const int fds[3], int sfd)
{
    pid_t pid = fork();
    if (pid == 0)
        runtime_child(s, fds);
    if (pid < 0)
        return -1;
    char in[256];
    size_t inlen = 0;
    for (;;) {
        struct pollfd p[2] = {{cfd, POLLIN, 0}, {sfd, POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        int status;
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
            ;
        if (waitpid(pid, &status, WNOHANG) == pid)
            return status;
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t r = recv(cfd, in + inlen, sizeof in - 1 - inlen, 0);
        if (r <= 0)
            break; /* the task is gone (srun -K, a kill): so is its container */
        inlen += (size_t)r;
        in[inlen] = '\0';
        char *nl;
        int sig;
        while ((nl = strchr(in, '\n')) != NULL) {
            *nl = '\0';
            if (sscanf(in, "signal %d", &sig) == 1 && sig > 0 && sig < NSIG)
                kill_tree(pid, sig);
            inlen -= (size_t)(nl + 1 - in);
            memmove(in, nl + 1, inlen + 1);
        }
        if (inlen >= sizeof in - 1)
            break; /* not a line of ours */
    }
    kill_tree(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

/* A task's request, served in a child of the supervisor (root); never returns. */
static void __attribute__((noreturn)) serve(struct sup *s, int cfd, int seq)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != s->st.sup_pid) /* the supervisor went before the line above */
        _exit(1);
    prctl(PR_SET_NAME, "docket-step");
    close(s->step_lfd);
    s->step_lfd = -1;
    if (s->sfd >= 0)
        close(s->sfd);
    /* SIGCHLD (blocked, as in the supervisor) comes through a signalfd of our own */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    int fds[3];
    int64_t deadline = clock_mono_ms() + SUP_STEP_HELLO_MS;
    if (sfd < 0 || take_fds(cfd, fds, deadline) < 0)
        _exit(1);
    size_t len = 0;
    char *line = take_line(cfd, deadline, &len);
    struct proto_oci_step req;
    struct proto_error pe = {0};
    struct agent_job j = *s->j;
    char err[1024] = "";
    int rc = line ? proto_oci_step_parse(line, len, &req, &pe) : -EINVAL;
    free(line);
    if (rc < 0)
        sup_errf(err, sizeof err, "refused: %s", pe.message[0] ? pe.message : "bad request");
    else if ((rc = check_request(s, &req, &j, err, sizeof err)) < 0)
        proto_oci_step_release(&req);
    if (rc < 0) {
        reply(cfd, "fail 1 %s", err);
        sup_log("job %llu: container step refused: %s", (unsigned long long)s->j->id, err);
        _exit(1);
    }
    s->j = &j;
    s->step_seq = seq;
    s->err_fd = fds[2]; /* an unpack's words and a failing step's output: the task's stderr */
    char *const *argv = (char *const *)req.argv, *const *env = (char *const *)req.env;
    rc = sup_oci_image(s, err, sizeof err);
    if (rc == 0)
        rc = sup_oci_bundle(s, argv, env, err, sizeof err);
    if (rc < 0) {
        reply(cfd, "fail 1 %s", err[0] ? err : strerror(-rc));
        sup_log("job %llu: container step %d: %s", (unsigned long long)s->j->id, seq, err);
        sup_oci_done(s);
        _exit(1);
    }
    sup_log("job %llu: container step %d: %s in %s", (unsigned long long)s->j->id, seq, argv[0],
            j.container.image);
    int st = run_container(s, cfd, fds, sfd);
    if (st == -1) {
        sup_oci_done(s);
        _exit(1);
    }
    s->leader_status = st;
    s->st.exit_kind = WIFSIGNALED(st) ? AGENT_EXIT_SIGNAL : AGENT_EXIT_CODE;
    s->st.exit_code = WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st);
    s->st.message[0] = '\0';
    sup_oci_exit(s); /* the runtime's failure before the task ran; 128 + N as signal N */
    if (s->st.exit_kind == AGENT_EXIT_LAUNCH_FAILED)
        reply(cfd, "fail 127 %s", s->st.message); /* as a bare task's exec that fails */
    else
        reply(cfd, "exit %d",
              s->st.exit_kind == AGENT_EXIT_SIGNAL ? 128 + s->st.exit_code : s->st.exit_code);
    sup_oci_done(s);
    _exit(0);
}

void sup_step_accept(struct sup *s)
{
    static int seq;
    int cfd;
    while ((cfd = accept4(s->step_lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
        struct ucred cred;
        socklen_t len = sizeof cred;
        bool ok = getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
                  cred.uid == s->uid && in_job(s, cred.pid);
        int slot = -1;
        for (int i = 0; ok && i < SUP_STEP_MAX && slot < 0; i++)
            if (s->step_pids[i] <= 0)
                slot = i;
        if (!ok || slot < 0) {
            reply(cfd, "fail 1 %s",
                  ok ? "too many container tasks at once on this node"
                     : "refused: not a process of this job");
            sup_log("job %llu: container step refused (pid %d, uid %d): %s",
                    (unsigned long long)s->j->id, ok ? 0 : (int)cred.pid, ok ? 0 : (int)cred.uid,
                    ok ? "too many" : "not the job's");
            close(cfd);
            continue;
        }
        pid_t pid = fork();
        if (pid == 0)
            serve(s, cfd, ++seq);
        if (pid > 0)
            s->step_pids[slot] = pid;
        ++seq;
        close(cfd);
    }
}

void sup_step_reaped(struct sup *s, pid_t pid)
{
    for (int i = 0; i < SUP_STEP_MAX; i++)
        if (s->step_pids[i] == pid)
            s->step_pids[i] = 0;
}

void sup_step_close(struct sup *s)
{
    if (s->step_lfd >= 0)
        close(s->step_lfd);
    s->step_lfd = -1;
}

void sup_step_end(struct sup *s)
{
    int status;
    for (int i = 0; i < SUP_STEP_MAX; i++) {
        /* still a child of ours (not reaped, so not a pid reused): it had its time */
        if (s->step_pids[i] > 0 && waitpid(s->step_pids[i], &status, WNOHANG) == 0) {
            kill(s->step_pids[i], SIGKILL);
            waitpid(s->step_pids[i], &status, 0);
        }
        s->step_pids[i] = 0;
    }
    /* the bundles of tasks whose server did not see its end (this run's or a crash's) */
    DIR *d = opendir(s->dir);
    struct dirent *de;
    char path[PATH_MAX + 300];
    while (d && (de = readdir(d)) != NULL)
        if (strncmp(de->d_name, "oci-step-", 9) == 0) {
            snprintf(path, sizeof path, "%s/%s", s->dir, de->d_name);
            sup_remove_tree(path);
        }
    if (d)
        closedir(d);
}
