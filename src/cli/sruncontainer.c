/*
 * sruncontainer.c - a task of `srun --container-image` (srun.h, srun_container_exec): the
 * task's process, set up as any task (files, env, CPUs), hands itself to its node's
 * supervisor, which runs it in the image as the job's user inside the job's cgroup
 * (src/agent/supstep.c; docs/slurm.md "srun"). This process stays the task for srun:
 * it passes on the signals srun (or the job's user) sends it, and ends with the
 * container's exit status, so -K, --wait, -l, -o/-e and the exit codes work as for a
 * bare task. Its link to the supervisor: SCRATCH/.slurm-bin/step.sock, one byte carrying
 * its standard descriptors, one line of JSON, then lines (supstep.c has the protocol).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/srun.h"
#include "util/str.h"

/* The signals a task passes on to its container: srun's relayed ones, and what the
 * job's user sends it. The node's own (a cancel, the time limit, --signal) reach the
 * container's processes in the job's cgroup already, so those from root are not. */
static const int passed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};

static void __attribute__((noreturn)) task_fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void task_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("srun: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    _exit(code);
}

/* Connected to SCRATCH/.slurm-bin/step.sock (through /proc/self/fd: a scratch path may be
 * longer than sun_path holds), or -1. */
static int dial_supervisor(void)
{
    const char *scratch = getenv("DOCKET_SCRATCH");
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/.slurm-bin", scratch ? scratch : ".");
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/step.sock", dfd);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        fd = -1;
    }
    close(dfd);
    return fd;
}

static json_t *word_list(const char *text, const char *sep)
{
    json_t *a = json_array();
    char *copy = strdup(text ? text : ""), *save = NULL;
    for (char *w = copy ? strtok_r(copy, sep, &save) : NULL; w; w = strtok_r(NULL, sep, &save))
        json_array_append_new(a, json_string(w));
    free(copy);
    return a;
}

/* The request: the job's key, the image, mounts, working directories, argv and env. */
static char *request(const struct step *st)
{
    json_t *argv = json_array(), *env = json_array();
    for (char **a = st->argv; *a; a++)
        json_array_append_new(argv, json_string(*a));
    for (char **e = environ; e && *e; e++)
        if (strchr(*e, '=') && **e != '=')
            json_array_append_new(env, json_string(*e));
    char cwd[4096] = "";
    if (!getcwd(cwd, sizeof(cwd)))
        cwd[0] = '\0';
    const char *key = getenv("DOCKET_STEP_KEY");
    json_t *req =
        json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:s}", "key", key ? key : "", "image", st->image,
                  "mounts", word_list(st->mounts, ","), "keep_env",
                  word_list(st->container_env, ","), "argv", argv, "env", env, "cwd", cwd);
    if (req && st->container_workdir)
        json_object_set_new(req, "workdir", json_string(st->container_workdir));
    char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    return line;
}

/* One byte that carries our standard input, output and error. */
static int send_fds(int fd)
{
    int fds[3] = {0, 1, 2};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(fds))];
    } u;
    memset(&u, 0, sizeof(u));
    char byte = 'S';
    struct iovec iov = {&byte, 1};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(fds));
    memcpy(CMSG_DATA(c), fds, sizeof(fds));
    return sendmsg(fd, &m, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A line from the supervisor: "exit CODE" ends us with it, "fail CODE MESSAGE" too,
 * after the message. */
static void answer(char *line)
{
    int code, at = 0;
    if (sscanf(line, "exit %d", &code) == 1)
        _exit(code & 0xff);
    if (sscanf(line, "fail %d %n", &code, &at) == 1 && at > 0)
        task_fail(code & 0xff, "container step: %s", line + at);
}

/* The supervisor refuses a peer that is not the job's at once, and closes: its line is
 * still there to read when our request could not be sent (answer() ends us with it). */
static void refused_early(int fd)
{
    char in[1200];
    struct pollfd p = {fd, POLLIN, 0};
    ssize_t r = poll(&p, 1, 1000) == 1 ? recv(fd, in, sizeof(in) - 1, MSG_DONTWAIT) : -1;
    if (r <= 0)
        return;
    in[r] = '\0';
    in[strcspn(in, "\n")] = '\0';
    answer(in);
}

void srun_container_exec(const struct step *st)
{
    int fd = dial_supervisor();
    if (fd < 0)
        task_fail(1,
                  "--container-image: this node's docket-node runs no container steps for "
                  "this job (%s)",
                  errno == ENOENT ? "none listens: an older docket-node, or the job runs in "
                                    "a container itself"
                                  : strerror(errno));
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof(passed) / sizeof(passed[0]); i++)
        sigaddset(&set, passed[i]);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    char *line = request(st);
    if (sfd < 0 || !line || send_fds(fd) < 0 || send_all(fd, line, strlen(line)) < 0 ||
        send_all(fd, "\n", 1) < 0) {
        int e = errno;
        refused_early(fd); /* a refusal sent before our request was read: say it */
        task_fail(1, "--container-image: cannot reach this node's docket-node: %s", strerror(e));
    }
    free(line);
    /* our descriptors are the container's now: ours would only keep a pipe open */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
    }
    char in[2048];
    size_t inlen = 0;
    pid_t parent = getppid();
    for (;;) {
        struct pollfd p[2] = {{fd, POLLIN, 0}, {sfd, POLLIN, 0}};
        if (poll(p, 2, -1) < 0)
            continue;
        struct signalfd_siginfo si;
        if ((p[1].revents & POLLIN) && read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) &&
            (si.ssi_uid != 0 || (pid_t)si.ssi_pid == parent)) {
            char msg[32];
            int n = snprintf(msg, sizeof(msg), "signal %u\n", si.ssi_signo);
            send_all(fd, msg, (size_t)n);
        }
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        ssize_t r = recv(fd, in + inlen, sizeof(in) - 1 - inlen, 0);
        if (r <= 0) {
            in[inlen] = '\0';
            if (inlen)
                answer(in);
            task_fail(1, "--container-image: this node's docket-node ended the task's link "
                         "without its exit status");
        }
        inlen += (size_t)r;
        in[inlen] = '\0';
        char *nl = strchr(in, '\n');
        if (nl) {
            *nl = '\0';
            answer(in);
            inlen = 0; /* a line we do not know: passed over */
        }
        if (inlen >= sizeof(in) - 1)
            inlen = 0;
    }
}
