/*
 * srunhost.c - srun's step host (srun.h): on each node of a Slurm-style job but the
 * first, the agent runs `srun --docket-step-host` in the job (its cgroup, its user, its
 * GPUs) instead of the batch script. It accepts on the socket its supervisor opened on a
 * port the kernel chose (descriptor 3); each connection whose peer proves the job's key
 * (DOCKET_STEP_KEY) in a TLS-PSK handshake (steplink.h) is one step, and any other is
 * refused and logged: its tasks for this node are started here with srun's environment, but with
 * this node's own GPUs, node id and scratch, and their output and exit statuses go back as frames.
 * A closed link kills the step's tasks. The host ends with the job (the controller kills it when
 * the batch script ends).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/srun.h"
#include "util/parse.h"
#include "util/str.h"

enum {
    MAX_REQUEST = 4 << 20,
    MAX_STEPS = 64,      /* steps at once, once their peers proved the key */
    MAX_HANDSHAKES = 16, /* connections not yet proven: past it the oldest goes */
    REQUEST_TIMEOUT_S = 10,
    STEP_HOST_FD = 3,
};

/* What belongs to this node and must not come from the batch node's environment. */
static const char *const node_local[] = {"CUDA_VISIBLE_DEVICES",
                                         "NVIDIA_VISIBLE_DEVICES",
                                         "GPU_DEVICE_ORDINAL",
                                         "SLURM_JOB_GPUS",
                                         "SLURM_GPUS_ON_NODE",
                                         "SLURM_CPUS_ON_NODE",
                                         "SLURMD_NODENAME",
                                         "SLURM_NODEID",
                                         "SLURM_TOPOLOGY_ADDR",
                                         "DOCKET_NODE",
                                         "DOCKET_GPUS",
                                         "DOCKET_SCRATCH",
                                         "TMPDIR",
                                         "NODE_RANK",
                                         "HOSTNAME",
                                         "DOCKET_STEP_KEY"};

/* The listening socket the node's supervisor opened for us on a port the kernel chose
 * and handed over as descriptor STEP_HOST_FD; the agent has told the batch node's srun
 * where it is through the controller (docs/slurm.md "srun"). -1 when there is none. */
static int inherited_socket(void)
{
    int on = 0;
    socklen_t len = sizeof(on);
    if (getsockopt(STEP_HOST_FD, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) < 0 || !on)
        return -1;
    fcntl(STEP_HOST_FD, F_SETFD, FD_CLOEXEC); /* never the tasks' */
    return STEP_HOST_FD;
}

/* The request line: at most MAX_REQUEST bytes up to '\n'. */
static json_t *read_request(struct step_link *l)
{
    char *buf = malloc(MAX_REQUEST + 1);
    size_t n = 0;
    json_t *req = NULL;
    struct timeval tv = {REQUEST_TIMEOUT_S, 0}, none = {0, 0};

    if (!buf)
        return NULL;
    /* a connection that says nothing is dropped, not waited for */
    setsockopt(l->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    while (n < MAX_REQUEST) {
        ssize_t r = step_link_recv(l, buf + n, 1);
        if (r <= 0)
            break;
        if (buf[n] == '\n') {
            req = json_loadb(buf, n, 0, NULL);
            break;
        }
        n++;
    }
    free(buf);
    setsockopt(l->fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
    return req;
}

static bool int_in(const json_t *req, const char *name, int lo, int hi, int *out)
{
    const json_t *v = json_object_get(req, name);
    if (!v) {
        *out = 0;
        return lo <= 0 && 0 <= hi;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return false;
    *out = (int)json_integer_value(v);
    return true;
}

/* An optional string field: absent, or text of at most 4 KiB without NUL. */
static bool opt_string(const json_t *req, const char *name, const char **out)
{
    const json_t *v = json_object_get(req, name);
    *out = NULL;
    if (!v)
        return true;
    if (!json_is_string(v) || json_string_length(v) > 4096 || json_string_length(v) == 0 ||
        strlen(json_string_value(v)) != json_string_length(v))
        return false;
    *out = json_string_value(v);
    return true;
}

int srun_request_read(const json_t *req, struct step *st)
{
    const json_t *argv = json_object_get(req, "argv");
    const json_t *env = json_object_get(req, "env"), *ex = json_object_get(req, "export");
    memset(st, 0, sizeof(*st));
    if (!json_is_object(req) || !json_is_array(argv) || !json_array_size(argv) ||
        json_array_size(argv) > 4096 || (env && !json_is_object(env)) ||
        (ex && !json_is_string(ex)))
        return -1;
    if (!int_in(req, "node", 0, SRUN_MAX_NODES - 1, &st->node) ||
        !int_in(req, "nodes", 1, SRUN_MAX_NODES, &st->nodes) || st->node >= st->nodes ||
        !int_in(req, "ntasks", 1, SRUN_MAX_TASKS * SRUN_MAX_NODES, &st->ntasks) ||
        !int_in(req, "count", 1, SRUN_MAX_TASKS, &st->local_n) ||
        !int_in(req, "first", 0, st->ntasks - 1, &st->first) ||
        st->first + st->local_n > st->ntasks || !int_in(req, "cpus", 0, 1 << 20, &st->cpus) ||
        !int_in(req, "gpus_per_task", 0, 64, &st->gpus_per_task))
        return -1;
    for (size_t i = 0; i < json_array_size(argv); i++)
        if (!json_is_string(json_array_get(argv, i)))
            return -1;
    if (!int_in(req, "job_node", 0, SRUN_MAX_NODES - 1, &st->job_node[st->node]) ||
        !opt_string(req, "output", &st->output) || !opt_string(req, "error", &st->error) ||
        !opt_string(req, "cpu_bind", &st->cpu_bind) || !opt_string(req, "image", &st->image) ||
        !opt_string(req, "mounts", &st->mounts) ||
        !opt_string(req, "container_workdir", &st->container_workdir) ||
        !opt_string(req, "container_env", &st->container_env))
        return -1;
    st->cyclic = json_is_true(json_object_get(req, "cyclic"));
    st->export_none = json_is_true(json_object_get(req, "export_none"));
    st->export_list = ex && *json_string_value(ex) ? json_string_value(ex) : NULL;
    st->argv = calloc(json_array_size(argv) + 1, sizeof(char *));
    if (!st->argv)
        return -1;
    for (size_t i = 0; i < json_array_size(argv); i++)
        st->argv[i] = (char *)json_string_value(json_array_get(argv, i));
    return 0;
}

/* srun's environment, with this node's own values kept and the batch node's scratch
 * directory in PATH replaced by this node's. */
static void take_env(const json_t *env, const char *their_scratch)
{
    const char *keep[sizeof(node_local) / sizeof(node_local[0])];
    char *saved[sizeof(node_local) / sizeof(node_local[0])];
    const char *mine = getenv("DOCKET_SCRATCH");
    char *my_scratch = mine ? strdup(mine) : NULL;
    const char *key;
    json_t *v;

    for (size_t i = 0; i < sizeof(node_local) / sizeof(node_local[0]); i++) {
        keep[i] = getenv(node_local[i]);
        saved[i] = keep[i] ? strdup(keep[i]) : NULL;
    }
    clearenv();
    json_object_foreach((json_t *)env, key, v)
        if (json_is_string(v))
            setenv(key, json_string_value(v), 1);
    for (size_t i = 0; i < sizeof(node_local) / sizeof(node_local[0]); i++) {
        if (saved[i])
            setenv(node_local[i], saved[i], 1);
        else
            unsetenv(node_local[i]);
        free(saved[i]);
    }
    const char *path = getenv("PATH");
    size_t tl = their_scratch ? strlen(their_scratch) : 0;
    if (path && my_scratch && tl && !strncmp(path, their_scratch, tl)) {
        char *np = NULL;
        if (asprintf(&np, "%s%s", my_scratch, path + tl) > 0)
            setenv("PATH", np, 1);
        free(np);
    }
    free(my_scratch);
}

static void fail_step(struct step_link *l, const char *msg)
{
    srun_frame_send(l, FR_FAIL, 0, msg, (uint32_t)strlen(msg));
}

/* Who connected, for the log line of a refusal. */
static void peer_name(int fd, char *out, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char host[64] = "?", port[16] = "?";
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
        getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(out, len, "%s:%s", host, port);
}

/* One step, in a child of the host: the handshake (the peer proves the job's key, we
 * prove ours, before a byte of the request), then the tasks started, relayed, reported. */
static int run_step(int fd, int note_fd)
{
    static struct step st;
    static int out[SRUN_MAX_TASKS][2];
    struct step_link link, *l = &link;
    char err[512], who_name[96];

    peer_name(fd, who_name, sizeof(who_name));
    if (step_link_accept(l, fd, getenv("DOCKET_STEP_KEY"), err, sizeof(err)) < 0) {
        fprintf(stderr, "srun step host: refused a connection from %s: %s\n", who_name, err);
        return 1;
    }
    pid_t me = getpid(); /* proven: no longer one of the handshakes a flood may push out */
    if (write(note_fd, &me, sizeof(me)) != (ssize_t)sizeof(me))
        fprintf(stderr, "srun step host: cannot tell the host a step began: %s\n", strerror(errno));
    close(note_fd);
    json_t *req = read_request(l);
    if (!req || srun_request_read(req, &st) < 0) {
        fail_step(l, "refused: bad request");
        return 1;
    }
    take_env(json_object_get(req, "env"), json_string_value(json_object_get(req, "scratch")));
    const char *cwd = json_string_value(json_object_get(req, "cwd"));
    if (cwd && *cwd && chdir(cwd) < 0) {
        char msg[600];
        snprintf(msg, sizeof(msg), "cannot enter '%.500s' here: %s", cwd, strerror(errno));
        fail_step(l, msg);
        return 1;
    }
    srun_truncate_outputs(&st, false);
    for (int i = 0; i < st.local_n; i++) {
        int po[2], pe[2];
        if (pipe(po) < 0 || pipe(pe) < 0) {
            fail_step(l, "cannot make pipes");
            return 1;
        }
        st.pids[i] = fork();
        if (st.pids[i] == 0) {
            signal(SIGUSR1, SIG_DFL);
            signal(SIGUSR2, SIG_DFL);
            signal(SIGHUP, SIG_DFL);
            signal(SIGINT, SIG_DFL);
            signal(SIGPIPE, SIG_DFL);
            close(l->fd);
            if (dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
                _exit(126);
            close(po[0]);
            close(pe[0]);
            close(po[1]);
            close(pe[1]);
            srun_task_exec(&st, i);
        }
        close(po[1]);
        close(pe[1]);
        out[i][0] = po[0];
        out[i][1] = pe[0];
    }
    struct pollfd p[2 * SRUN_MAX_TASKS + 1];
    int who[2 * SRUN_MAX_TASKS + 1], open = 2 * st.local_n, exited = 0;
    while (exited < st.local_n) {
        int n = 0;
        p[n] = (struct pollfd){l->fd, POLLIN, 0};
        who[n++] = -1;
        for (int t = 0; t < st.local_n; t++)
            for (int k = 0; k < 2; k++)
                if (out[t][k] >= 0) {
                    who[n] = 2 * t + k;
                    p[n++] = (struct pollfd){out[t][k], POLLIN, 0};
                }
        /* what TLS has decrypted already is not seen by poll */
        if (open > 0 && poll(p, (nfds_t)n, step_link_pending(l) ? 0 : -1) < 0 && errno != EINTR)
            break;
        if (step_link_pending(l))
            p[0].revents |= POLLIN;
        for (int k = 0; open > 0 && k < n; k++) {
            if (!p[k].revents)
                continue;
            if (who[k] < 0) { /* a signal from srun, or srun is gone: the tasks go too */
                char buf[16];
                int type;
                uint32_t task, len, sig;
                int rc = srun_frame_read(l, &type, &task, buf, sizeof(buf), &len);
                if (rc == 1 && type == FR_SIGNAL && len == 4) {
                    memcpy(&sig, buf, 4);
                    sig = ntohl(sig);
                } else {
                    sig = SIGKILL;
                }
                for (int t = 0; t < st.local_n; t++)
                    if (st.pids[t] > 0 && sig > 0 && sig < 65)
                        srun_kill_tree(st.pids[t], (int)sig); /* and what it started */
                continue;
            }
            int t = who[k] / 2, s = who[k] % 2;
            char buf[16384];
            ssize_t got = read(p[k].fd, buf, sizeof(buf));
            if (got > 0) {
                srun_frame_send(l, s ? FR_ERR : FR_OUT, (uint32_t)srun_rank(&st, t), buf,
                                (uint32_t)got);
            } else {
                close(out[t][s]);
                out[t][s] = -1;
                open--;
            }
        }
        if (open == 0) { /* every pipe closed: collect the statuses */
            int status;
            pid_t pid = waitpid(-1, &status, 0);
            if (pid < 0 && errno != EINTR)
                break;
            for (int t = 0; pid > 0 && t < st.local_n; t++)
                if (st.pids[t] == pid) {
                    uint32_t code = htonl((uint32_t)(WIFEXITED(status) ? WEXITSTATUS(status)
                                                                       : 128 + WTERMSIG(status)));
                    srun_frame_send(l, FR_EXIT, (uint32_t)srun_rank(&st, t), &code, 4);
                    st.pids[t] = 0;
                    exited++;
                }
        }
    }
    step_link_close(l);
    return 0;
}

/* The host's children, oldest first: steps whose peer proved the key, and handshakes
 * still under way. Idle connections (a local process may open any number) can hold at
 * most MAX_HANDSHAKES children, each for the handshake's timeout at most, and a new
 * connection pushes out the oldest of them: a flood costs its sender a fork each and
 * never keeps srun's own connection, which proves the key within milliseconds, from
 * being served. */
static struct kid {
    pid_t pid;
    bool proven;
} kids[MAX_STEPS + MAX_HANDSHAKES];
static int nkids;

static void kid_remove(int i)
{
    memmove(&kids[i], &kids[i + 1], (size_t)(nkids - i - 1) * sizeof(kids[0]));
    nkids--;
}

/* Reap the children that ended, and mark those whose handshake succeeded (note_fd). */
static void kids_update(int note_fd)
{
    pid_t p;
    while ((p = waitpid(-1, NULL, WNOHANG)) > 0)
        for (int i = 0; i < nkids; i++)
            if (kids[i].pid == p) {
                kid_remove(i);
                break;
            }
    while (read(note_fd, &p, sizeof(p)) == (ssize_t)sizeof(p))
        for (int i = 0; i < nkids; i++)
            if (kids[i].pid == p)
                kids[i].proven = true;
}

/* Room for one more connection: false when the steps are all taken; the oldest
 * handshake ended when the handshakes are. */
static bool kids_room(void)
{
    int proven = 0, oldest = -1, pending = 0;
    for (int i = 0; i < nkids; i++) {
        if (kids[i].proven) {
            proven++;
        } else {
            pending++;
            if (oldest < 0)
                oldest = i;
        }
    }
    if (proven >= MAX_STEPS)
        return false;
    if (pending >= MAX_HANDSHAKES) {
        kill(kids[oldest].pid, SIGKILL); /* reaped later, unknown then */
        kid_remove(oldest);
    }
    return true;
}

int srun_step_host(void)
{
    int lfd = inherited_socket();

    /* the warnings meant for the steps (--signal without B:) must not end the host */
    signal(SIGUSR1, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);
    if (lfd < 0 || !getenv("DOCKET_STEP_KEY")) {
        /* the rank ends, and with it the job, with the reason in its exit */
        fprintf(stderr,
                "srun step host: no listening socket or key from the agent (descriptor "
                "%d, DOCKET_STEP_KEY): srun cannot reach this node\n",
                STEP_HOST_FD);
        return 1;
    }
    int note[2];
    if (pipe2(note, O_CLOEXEC | O_NONBLOCK) < 0) {
        fprintf(stderr, "srun step host: cannot make a pipe: %s\n", strerror(errno));
        return 1;
    }
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        kids_update(note[0]);
        if (fd < 0)
            continue;
        if (!kids_room()) {
            close(fd);
            continue;
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(lfd);
            close(note[0]);
            _exit(run_step(fd, note[1]));
        }
        if (pid > 0)
            kids[nkids++] = (struct kid){pid, false};
        close(fd);
    }
}
