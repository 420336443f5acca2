/*
 * srun.c - `srun` inside a Slurm-style docket job (docs/slurm.md): a step's tasks across
 * the job's nodes, each with SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID, its share of its
 * node's GPUs (--gpus-per-task) and CPUs; the output passed through (or labelled with -l),
 * the exit status of the worst task. The job's agent put this program on the job's PATH
 * under the name srun. Tasks of the batch node are its children; on the other nodes the
 * agent runs `srun --docket-step-host` (the step host) in the job, which srun finds where
 * its node registered it (step_host_addr) and reaches over a TLS link keyed by the job's
 * key (steplink.h, DOCKET_STEP_KEY), and which starts the tasks there, sending their
 * output and exit status back. The step host is srunhost.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/slurm.h"
#include "cli/srun.h"
#include "util/parse.h"
#include "util/str.h"

enum {
    SR_NTASKS = 1,
    SR_NODES,
    SR_PER_NODE,
    SR_CPUS,
    SR_GPUS_PER_TASK,
    SR_LABEL,
    SR_EXPORT,
    SR_KILL_BAD,
    SR_IGNORED,      /* takes a value, changes nothing here */
    SR_IGNORED_FLAG, /* no value, changes nothing here */
    SR_HELP,
    MAX_TASKS = SRUN_MAX_TASKS,
};

static const struct opt_def srun_opts[] = {
    {SR_NTASKS, 'n', "ntasks", OPT_VALUE},
    {SR_NODES, 'N', "nodes", OPT_VALUE},
    {SR_PER_NODE, 0, "ntasks-per-node", OPT_VALUE},
    {SR_CPUS, 'c', "cpus-per-task", OPT_VALUE},
    {SR_GPUS_PER_TASK, 0, "gpus-per-task", OPT_VALUE},
    {SR_LABEL, 'l', "label", OPT_NONE},
    {SR_EXPORT, 0, "export", OPT_VALUE},
    {SR_KILL_BAD, 'K', "kill-on-bad-exit", OPT_NONE},
    {SR_IGNORED, 0, "cpu-bind", OPT_VALUE},
    {SR_IGNORED, 0, "mpi", OPT_VALUE},
    {SR_IGNORED, 'J', "job-name", OPT_VALUE},
    {SR_IGNORED, 0, "gpu-bind", OPT_VALUE},
    {SR_IGNORED, 0, "mem-bind", OPT_VALUE},
    {SR_IGNORED, 0, "distribution", OPT_VALUE},
    {SR_IGNORED, 0, "hint", OPT_VALUE},
    {SR_IGNORED, 0, "mem", OPT_VALUE},
    {SR_IGNORED, 0, "jobid", OPT_VALUE},
    {SR_IGNORED, 'o', "output", OPT_VALUE},
    {SR_IGNORED, 'e', "error", OPT_VALUE},
    {SR_IGNORED_FLAG, 'u', "unbuffered", OPT_NONE},
    {SR_IGNORED_FLAG, 0, "overlap", OPT_NONE},
    {SR_IGNORED_FLAG, 0, "exact", OPT_NONE},
    {SR_IGNORED_FLAG, 0, "exclusive", OPT_NONE},
    {SR_IGNORED_FLAG, 'v', "verbose", OPT_NONE},
    {SR_IGNORED_FLAG, 'Q', "quiet", OPT_NONE},
    {SR_HELP, 'h', "help", OPT_NONE},
    {0, 0, NULL, OPT_NONE},
};

const char cmd_srun_usage[] =
    "usage: srun [OPTIONS] COMMAND [ARGS...]   (inside a Slurm-style docket job)\n"
    "       srun --pty [OPTIONS] COMMAND       (an interactive session: docs/interactive.md)\n"
    "\n"
    "Start the step's tasks on this node, as Slurm's srun does on the allocation.\n"
    "  -n, --ntasks N            tasks (default: the job's tasks on this node)\n"
    "  -N, --nodes N             nodes of the step (default: the job's)\n"
    "      --ntasks-per-node N   tasks on each node\n"
    "  -c, --cpus-per-task N     CPUs of each task (SLURM_CPUS_PER_TASK)\n"
    "      --gpus-per-task N     each task gets its own N of the job's GPUs\n"
    "  -l, --label               prefix each output line with the task's rank\n"
    "      --export ALL|NONE|VAR[=VALUE],...   the tasks' environment\n"
    "  -K, --kill-on-bad-exit    end the other tasks when one fails\n"
    "      --pty                 COMMAND on a terminal: outside a job, a new interactive\n"
    "                            session (as salloc); inside one, on its first node\n"
    "--cpu-bind, --mpi, --gpu-bind, -u and others are accepted and change nothing.\n"
    "Other nodes are reached over TLS keyed by the job's DOCKET_STEP_KEY; a node whose step\n"
    "host does not register within DOCKET_STEP_WAIT seconds (120) fails the step.\n";

static int env_int(const char *name, int dflt)
{
    int v;
    const char *s = getenv(name);
    return s && parse_int(s, 0, 1000000, &v) == 0 ? v : dflt;
}

void srun_share(int ntasks, int nodes, int i, int *first, int *count)
{
    int base = ntasks / nodes, extra = ntasks % nodes;
    *count = base + (i < extra);
    *first = i * base + (i < extra ? i : extra);
}

static int srun_parse(struct cli *c, int argc, char **argv, struct step *st)
{
    struct opt_iter it;
    const char *v;
    char err[256];
    int id, n, per_node = -1;

    st->ntasks = -1;
    st->nodes = -1;
    st->cpus = env_int("SLURM_CPUS_PER_TASK", 1);
    st->gpus_per_task = env_int("SLURM_GPUS_PER_TASK", 0);
    opt_iter_init(&it, argc, argv, 1);
    while ((id = opt_next(&it, srun_opts, &v, err, sizeof(err))) != OPT_DONE) {
        if (id == OPT_ERROR)
            return cli_usage_error(c, "%s", err);
        if (id == OPT_POSITIONAL) {
            it.index--;
            break;
        }
        if (id == SR_HELP) {
            fputs(c->usage, c->out);
            return -1;
        }
        if ((id == SR_NTASKS || id == SR_NODES || id == SR_PER_NODE || id == SR_CPUS ||
             id == SR_GPUS_PER_TASK) &&
            parse_int(v, id == SR_GPUS_PER_TASK ? 0 : 1, MAX_TASKS, &n) < 0)
            return cli_usage_error(c, "%s: want a number, not '%s'", opt_name(srun_opts, id), v);
        switch (id) {
        case SR_NTASKS:
            st->ntasks = n;
            break;
        case SR_NODES:
            st->nodes = n;
            break;
        case SR_PER_NODE:
            per_node = n;
            break;
        case SR_CPUS:
            st->cpus = n;
            break;
        case SR_GPUS_PER_TASK:
            st->gpus_per_task = n;
            break;
        case SR_LABEL:
            st->label = true;
            break;
        case SR_KILL_BAD:
            st->kill_bad = true;
            break;
        case SR_EXPORT:
            st->export_none = !strncmp(v, "NONE", 4) || !strncmp(v, "NIL", 3);
            st->export_list = v;
            break;
        default:
            break;
        }
    }
    if (it.index >= argc)
        return cli_usage_error(c, "no command to run (srun [OPTIONS] COMMAND [ARGS...])");
    st->argv = argv + it.index;
    int job_nodes = env_int("SLURM_NNODES", 1);
    if (st->nodes < 0) /* Slurm: as many nodes as the tasks need, at most the job's */
        st->nodes = st->ntasks > 0 && per_node < 0
                        ? (st->ntasks < job_nodes ? st->ntasks : job_nodes)
                        : job_nodes;
    if (st->ntasks < 0)
        st->ntasks = (per_node > 0 ? per_node : env_int("SLURM_NTASKS_PER_NODE", 1)) * st->nodes;
    if (st->nodes > job_nodes)
        return cli_usage_error(c, "-N %d: the job has %d node(s)", st->nodes, job_nodes);
    if (st->ntasks < st->nodes)
        return cli_usage_error(c, "-n %d is fewer than the %d nodes of the step", st->ntasks,
                               st->nodes);
    return 0;
}

/* The GPUs of task `local`: its own slice of the node's list with --gpus-per-task. */
static void task_gpus(const struct step *st, int local, char *out, size_t len)
{
    const char *all = getenv("CUDA_VISIBLE_DEVICES");
    char buf[512];
    char *save = NULL;
    int i = 0;
    size_t o = 0;

    out[0] = '\0';
    if (!all || !st->gpus_per_task || str_copy(buf, sizeof(buf), all) < 0) {
        if (all)
            str_copy(out, len, all);
        return;
    }
    for (char *g = strtok_r(buf, ",", &save); g; g = strtok_r(NULL, ",", &save), i++)
        if (i >= local * st->gpus_per_task && i < (local + 1) * st->gpus_per_task)
            o += (size_t)snprintf(out + o, o < len ? len - o : 0, "%s%s", o ? "," : "", g);
}

static void setenv_int(const char *name, long v)
{
    char num[32];
    snprintf(num, sizeof(num), "%ld", v);
    setenv(name, num, 1);
}

/* --export=NONE keeps only SLURM_*; a list adds VAR=VALUE entries. */
static void apply_export(const struct step *st)
{
    if (st->export_none) {
        for (char **e = environ; e && *e;) {
            if (strncmp(*e, "SLURM_", 6)) {
                char name[256];
                snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
                unsetenv(name);
            } else {
                e++;
            }
        }
    }
    if (st->export_list) {
        char buf[4096];
        char *save = NULL;
        str_copy(buf, sizeof(buf), st->export_list);
        for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(p, '=');
            if (eq) {
                *eq = '\0';
                setenv(p, eq + 1, 1);
            }
        }
    }
}

void srun_task_exec(const struct step *st, int local)
{
    char gpus[512];

    apply_export(st);
    task_gpus(st, local, gpus, sizeof(gpus));
    if (st->gpus_per_task && gpus[0]) {
        setenv("CUDA_VISIBLE_DEVICES", gpus, 1);
        setenv_int("SLURM_GPUS_ON_NODE", st->gpus_per_task);
    }
    setenv_int("SLURM_PROCID", st->first + local);
    setenv_int("SLURM_LOCALID", local);
    setenv_int("SLURM_NODEID", st->node);
    setenv_int("SLURM_NTASKS", st->ntasks);
    setenv_int("SLURM_NPROCS", st->ntasks);
    setenv_int("SLURM_STEP_NUM_TASKS", st->ntasks);
    setenv_int("SLURM_STEP_NUM_NODES", st->nodes);
    setenv_int("SLURM_STEP_TASKS_PER_NODE", st->local_n);
    setenv_int("SLURM_CPUS_PER_TASK", st->cpus);
    setenv_int("SLURM_TASK_PID", getpid());
    setenv("SLURM_STEP_ID", "0", 1);
    setenv("SLURM_STEPID", "0", 1);
    execvp(st->argv[0], st->argv);
    fprintf(stderr, "srun: error: %s: %s\n", st->argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
}

/* ------------------------------------------------------------------------------------ */
/* Frames                                                                                */

static int read_all(struct step_link *l, void *p, size_t n)
{
    char *b = p;
    size_t got = 0;
    while (got < n) {
        ssize_t r = step_link_recv(l, b + got, n - got);
        if (r <= 0)
            return got == 0 && r == 0 ? 0 : -1;
        got += (size_t)r;
    }
    return 1;
}

int srun_frame_send(struct step_link *l, int type, uint32_t task, const void *data, uint32_t len)
{
    unsigned char h[9];
    uint32_t t = htonl(task), n = htonl(len);
    h[0] = (unsigned char)type;
    memcpy(h + 1, &t, 4);
    memcpy(h + 5, &n, 4);
    return step_link_send(l, h, 9) < 0 || (len && step_link_send(l, data, len) < 0) ? -1 : 0;
}

int srun_frame_read(struct step_link *link, int *type, uint32_t *task, char *buf, uint32_t cap,
                    uint32_t *len)
{
    unsigned char h[9];
    uint32_t t, l;
    int rc = read_all(link, h, 9);
    if (rc <= 0)
        return rc;
    memcpy(&t, h + 1, 4);
    memcpy(&l, h + 5, 4);
    *type = h[0];
    *task = ntohl(t);
    *len = ntohl(l);
    if (*len > cap)
        return -1;
    return *len == 0 || read_all(link, buf, *len) == 1 ? 1 : -1;
}

/* ------------------------------------------------------------------------------------ */
/* srun on the batch node                                                                */

static volatile sig_atomic_t forward_sig;

static void on_signal(int sig)
{
    forward_sig = sig;
}

/* Passed on to the tasks when srun gets them. The job's --signal warnings (USR1, USR2 ...)
 * reach every task from its node's agent already: srun only ignores those, so that a
 * task is never warned twice. */
static const int relayed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static const int ignored[] = {SIGUSR1, SIGUSR2, SIGALRM, SIGURG, SIGWINCH};

struct run {
    struct step st;
    struct step_link links[SRUN_MAX_NODES]; /* node i's link (i >= 1), fd -1 when closed */
    int unreported[SRUN_MAX_NODES];         /* node i's tasks whose exit has not come */
    int out[SRUN_MAX_TASKS][2];             /* -l: local tasks' stdout/stderr pipes, -1 closed */
    char pend[SRUN_MAX_TASKS][2][512];
    size_t plen[SRUN_MAX_TASKS][2];
    int worst;
};

static void note_exit(struct run *r, int rank, int code)
{
    if (code) {
        fprintf(stderr, "srun: error: task %d: %s %d\n", rank,
                code > 128 ? "Killed by signal" : "Exited with exit code",
                code > 128 ? code - 128 : code);
        if (r->st.kill_bad) {
            for (int k = 0; k < r->st.local_n; k++)
                if (r->st.pids[k] > 0)
                    kill(r->st.pids[k], SIGKILL);
            for (int i = 1; i < r->st.nodes; i++)
                if (r->links[i].fd >= 0)
                    srun_frame_send(&r->links[i], FR_SIGNAL, 0, &(uint32_t){htonl(SIGKILL)}, 4);
        }
    }
    if (code > r->worst)
        r->worst = code;
}

/* Output of task `rank`, line by line with "RANK: " under -l. */
static void emit(struct run *r, int rank, int stream, const char *data, size_t n, char *pend,
                 size_t *plen)
{
    FILE *to = stream ? stderr : stdout;
    if (!r->st.label) {
        fwrite(data, 1, n, to);
        fflush(to);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (*plen < 511)
            pend[(*plen)++] = data[i];
        if (data[i] == '\n' || *plen >= 511) {
            fprintf(to, "%d: %.*s", rank, (int)*plen, pend);
            *plen = 0;
        }
    }
    fflush(to);
}

/* A TCP connection to ADDR:PORT (the step host may still be starting: retried for 20 s),
 * or -1. */
static int dial(const char *hostport)
{
    char host[256], *colon;
    str_copy(host, sizeof(host), hostport);
    colon = strrchr(host, ':');
    if (!colon)
        return -1;
    *colon = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int fd = -1;
    for (int tries = 0; tries < 200 && fd < 0; tries++) {
        if (getaddrinfo(host, colon + 1, &hints, &ai) == 0) {
            fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
                close(fd);
                fd = -1;
            }
            freeaddrinfo(ai);
        }
        if (fd < 0)
            usleep(100000);
    }
    return fd;
}

/* Node i's request: the command, the environment, its tasks. */
static char *request_line(struct run *r, int i, json_t *env)
{
    int first, count;
    srun_share(r->st.ntasks, r->st.nodes, i, &first, &count);
    json_t *argv = json_array();
    for (char **a = r->st.argv; *a; a++)
        json_array_append_new(argv, json_string(*a));
    char cwd[4096] = "";
    if (!getcwd(cwd, sizeof(cwd)))
        cwd[0] = '\0';
    json_t *req = json_pack("{s:o,s:O,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:b,s:s,s:s,s:s}", "argv", argv,
                            "env", env, "node", i, "first", first, "count", count, "ntasks",
                            r->st.ntasks, "nodes", r->st.nodes, "cpus", r->st.cpus, "gpus_per_task",
                            r->st.gpus_per_task, "export_none", r->st.export_none, "export",
                            r->st.export_list ? r->st.export_list : "", "cwd", cwd, "scratch",
                            getenv("DOCKET_SCRATCH") ? getenv("DOCKET_SCRATCH") : "");
    char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    r->unreported[i] = count;
    return line;
}

/* Where node i's step host listens: its supervisor opened a socket on a port the kernel
 * chose, its agent told docketd, and docketd had this node's supervisor write it here
 * (docs/slurm.md "srun"). Waited for DOCKET_STEP_WAIT seconds (default 120: a rank's
 * start may wait for its GPUs). 0, or -1 after a message. */
static int step_host_addr(int i, char *out, size_t len)
{
    const char *scratch = getenv("DOCKET_SCRATCH");
    int wait_s = env_int("DOCKET_STEP_WAIT", 120);
    char path[4200];
    snprintf(path, sizeof(path), "%s/.slurm-bin/step-host.%d", scratch ? scratch : ".", i);
    for (int tries = 0; tries <= wait_s * 10; tries++) {
        FILE *f = fopen(path, "re");
        char line[320] = "";
        bool got = f && fgets(line, sizeof(line), f);
        if (f)
            fclose(f);
        line[strcspn(line, "\n")] = '\0';
        if (got && strchr(line, ':') && str_copy(out, len, line) == 0)
            return 0;
        usleep(100000);
    }
    fprintf(stderr,
            "srun: error: node %d: its step host never registered in %d s (the rank did not "
            "start, or its node cannot reach docketd)\n",
            i, wait_s);
    return -1;
}

/* Reach node i's step host, prove the job's key and check that the host holds it too
 * (steplink.h), and only then send the request. 0, or -1 after a message. */
static int connect_host(struct run *r, int i, json_t *env)
{
    char err[512], hostport[320];
    if (step_host_addr(i, hostport, sizeof(hostport)) < 0)
        return -1;
    int fd = dial(hostport);
    if (fd < 0) {
        fprintf(stderr, "srun: error: cannot reach the step host of node %d at %s\n", i, hostport);
        return -1;
    }
    if (step_link_connect(&r->links[i], fd, getenv("DOCKET_STEP_KEY"), err, sizeof(err)) < 0) {
        fprintf(stderr, "srun: error: node %d (%s): %s: nothing was sent\n", i, hostport, err);
        return -1;
    }
    char *line = request_line(r, i, env);
    int rc = line ? step_link_send(&r->links[i], line, strlen(line)) : -1;
    if (rc == 0)
        rc = step_link_send(&r->links[i], "\n", 1);
    free(line);
    if (rc < 0) {
        fprintf(stderr, "srun: error: node %d: the link to its step host broke\n", i);
        step_link_close(&r->links[i]);
        return -1;
    }
    return 0;
}

static json_t *env_json(void)
{
    json_t *o = json_object();
    for (char **e = environ; e && *e; e++) {
        size_t n = strcspn(*e, "=");
        char name[256];
        if (!(*e)[n] || n >= sizeof(name))
            continue;
        snprintf(name, sizeof(name), "%.*s", (int)n, *e);
        json_object_set_new(o, name, json_string(*e + n + 1));
    }
    return o;
}

static int start_local(struct cli *c, struct run *r)
{
    for (int i = 0; i < r->st.local_n; i++) {
        int po[2] = {-1, -1}, pe[2] = {-1, -1};
        r->out[i][0] = r->out[i][1] = -1;
        if (r->st.label && (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0))
            return cli_fail(c, "cannot make pipes: %s", strerror(errno));
        r->st.pids[i] = fork();
        if (r->st.pids[i] == 0) {
            for (size_t k = 0; k < sizeof(relayed) / sizeof(relayed[0]); k++)
                signal(relayed[k], SIG_DFL);
            for (size_t k = 0; k < sizeof(ignored) / sizeof(ignored[0]); k++)
                signal(ignored[k], SIG_DFL);
            signal(SIGPIPE, SIG_DFL);
            if (r->st.label && (dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0))
                _exit(126);
            srun_task_exec(&r->st, i);
        }
        if (r->st.pids[i] < 0)
            return cli_fail(c, "cannot start task %d: %s", i, strerror(errno));
        if (r->st.label) {
            close(po[1]);
            close(pe[1]);
            r->out[i][0] = po[0];
            r->out[i][1] = pe[0];
        }
    }
    return 0;
}

static void relay_signal(struct run *r)
{
    int sig = forward_sig;
    uint32_t n = htonl((uint32_t)sig);
    forward_sig = 0;
    for (int k = 0; k < r->st.local_n; k++)
        if (r->st.pids[k] > 0)
            kill(r->st.pids[k], sig);
    for (int i = 1; i < r->st.nodes; i++)
        if (r->links[i].fd >= 0)
            srun_frame_send(&r->links[i], FR_SIGNAL, 0, &n, 4);
}

/* One frame from node i's host. */
static void from_host(struct run *r, int i)
{
    static char buf[65536];
    int type;
    uint32_t task, len;
    int rc = srun_frame_read(&r->links[i], &type, &task, buf, sizeof(buf), &len);
    if (rc <= 0) {
        /* a rank that never reported is a failed step, never a quiet success */
        if (r->unreported[i] > 0) {
            fprintf(stderr,
                    "srun: error: node %d: the link to its step host ended before %d "
                    "task(s) reported an exit\n",
                    i, r->unreported[i]);
            if (r->worst < 1)
                r->worst = 1;
        }
        step_link_close(&r->links[i]);
        return;
    }
    if ((type == FR_OUT || type == FR_ERR) && task < SRUN_MAX_TASKS) {
        static char pend[2][SRUN_MAX_TASKS][512];
        static size_t plen[2][SRUN_MAX_TASKS];
        int s = type == FR_ERR;
        emit(r, (int)task, s, buf, len, pend[s][task], &plen[s][task]);
    } else if (type == FR_EXIT && len == 4) {
        uint32_t code;
        memcpy(&code, buf, 4);
        r->unreported[i]--;
        note_exit(r, (int)task, (int)ntohl(code));
    } else if (type == FR_FAIL) {
        fprintf(stderr, "srun: error: node %d: %.*s\n", i, (int)len, buf);
        r->unreported[i] = 0; /* said why already */
        if (r->worst < 1)
            r->worst = 1;
    }
}

/* Until every link and every -l pipe is closed. */
static void event_loop(struct run *r)
{
    struct pollfd p[SRUN_MAX_NODES + 2 * SRUN_MAX_TASKS];
    int who[SRUN_MAX_NODES + 2 * SRUN_MAX_TASKS];
    for (;;) {
        int n = 0;
        bool pending = false;
        for (int i = 1; i < r->st.nodes; i++)
            if (r->links[i].fd >= 0) {
                who[n] = -1 - i;
                pending = pending || step_link_pending(&r->links[i]);
                p[n++] = (struct pollfd){r->links[i].fd, POLLIN, 0};
            }
        for (int t = 0; r->st.label && t < r->st.local_n; t++)
            for (int k = 0; k < 2; k++)
                if (r->out[t][k] >= 0) {
                    who[n] = 2 * t + k;
                    p[n++] = (struct pollfd){r->out[t][k], POLLIN, 0};
                }
        if (n == 0)
            return;
        /* frames TLS has decrypted already are not seen by poll: taken first */
        if (poll(p, (nfds_t)n, pending ? 0 : -1) < 0) {
            if (errno == EINTR && forward_sig)
                relay_signal(r);
            continue;
        }
        for (int k = 0; k < n; k++) {
            if (who[k] < 0 && step_link_pending(&r->links[-1 - who[k]]))
                p[k].revents |= POLLIN;
            if (!p[k].revents)
                continue;
            if (who[k] < 0) {
                from_host(r, -1 - who[k]);
                continue;
            }
            int t = who[k] / 2, s = who[k] % 2;
            char buf[4096];
            ssize_t got = read(p[k].fd, buf, sizeof(buf));
            if (got > 0) {
                emit(r, r->st.first + t, s, buf, (size_t)got, r->pend[t][s], &r->plen[t][s]);
            } else {
                if (r->plen[t][s])
                    emit(r, r->st.first + t, s, "\n", 1, r->pend[t][s], &r->plen[t][s]);
                close(r->out[t][s]);
                r->out[t][s] = -1;
            }
        }
    }
}

static void wait_local(struct run *r)
{
    int left = r->st.local_n;
    while (left > 0) {
        int status;
        pid_t p = waitpid(-1, &status, 0);
        if (p < 0 && errno == EINTR) {
            if (forward_sig)
                relay_signal(r);
            continue;
        }
        if (p < 0)
            return;
        for (int i = 0; i < r->st.local_n; i++)
            if (r->st.pids[i] == p) {
                r->st.pids[i] = 0;
                left--;
                note_exit(r, r->st.first + i,
                          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
            }
    }
}

/* srun --pty (docs/interactive.md): outside an allocation, an interactive session with
 * these options (salloc's way); inside one, COMMAND on this terminal when this is the
 * allocation's first node, where the session's shell runs. */
static int srun_pty(struct cli *c, int argc, char **argv, int at)
{
    char **words = calloc((size_t)argc + 1, sizeof *words);
    int n = 0;
    if (!words)
        return cli_fail(c, "out of memory");
    for (int i = 0; i < argc; i++)
        if (i != at)
            words[n++] = argv[i];
    int rc;
    if (!getenv("SLURM_JOB_ID")) {
        rc = shell_slurm(c, words + 1, n - 1);
        free(words);
        return rc;
    }
    struct step st;
    memset(&st, 0, sizeof st);
    rc = srun_parse(c, n, words, &st);
    if (rc) {
        free(words);
        return rc < 0 ? EXIT_OK : rc;
    }
    const char *node = getenv("DOCKET_NODE"), *list = getenv("DOCKET_NODELIST");
    size_t first = list ? strcspn(list, ",") : 0;
    if (!node || !list || strlen(node) != first || strncmp(node, list, first) != 0) {
        free(words);
        return cli_fail(c,
                        "srun --pty runs on the allocation's first node (%.*s), and this "
                        "is %s: run it from the session's shell",
                        (int)first, list ? list : "?", node ? node : "?");
    }
    fflush(NULL);
    execvp(st.argv[0], st.argv);
    rc = cli_fail(c, "cannot run '%s': %s", st.argv[0], strerror(errno));
    free(words);
    return rc == EXIT_FAIL ? 127 : rc;
}

int cmd_srun(struct cli *c, int argc, char **argv)
{
    static struct run r;
    int rc;

    if (argc == 2 && !strcmp(argv[1], "--docket-step-host"))
        return srun_step_host();
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--pty"))
            return srun_pty(c, argc, argv, i);
    memset(&r, 0, sizeof(r));
    if (!getenv("SLURM_JOB_ID"))
        return cli_fail(c, "docket's srun runs only inside a Slurm-style job "
                           "(a script with #SBATCH lines); outside one use `docket submit`");
    rc = srun_parse(c, argc, argv, &r.st);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    if (r.st.nodes > SRUN_MAX_NODES || r.st.ntasks > MAX_TASKS * r.st.nodes)
        return cli_usage_error(c, "at most %d nodes and %d tasks per node", SRUN_MAX_NODES,
                               MAX_TASKS);
    if (r.st.nodes > 1 && !getenv("DOCKET_STEP_KEY"))
        return cli_fail(c, "this job's other nodes cannot be reached (no step key: the "
                           "agents need the docket CLI, docket-node --slurm-cli)");
    srun_share(r.st.ntasks, r.st.nodes, 0, &r.st.first, &r.st.local_n);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    /* the tasks share the job's cgroup and get its signals themselves; srun outlives them
     * to report their status, and passes on what is sent to it alone */
    for (size_t i = 0; i < sizeof(relayed) / sizeof(relayed[0]); i++)
        sigaction(relayed[i], &sa, NULL);
    for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
        signal(ignored[i], SIG_IGN);
    fflush(NULL);
    signal(SIGPIPE, SIG_IGN); /* a link that breaks is an error, not our death */
    json_t *env = r.st.nodes > 1 ? env_json() : NULL;
    for (int i = 0; i < SRUN_MAX_NODES; i++)
        r.links[i].fd = -1;
    for (int i = 1; i < r.st.nodes && !r.worst; i++)
        if (connect_host(&r, i, env) < 0)
            r.worst = 1;
    json_decref(env);
    if (r.worst) { /* all or nothing: the hosts reached end their tasks when we go */
        for (int i = 1; i < r.st.nodes; i++)
            step_link_close(&r.links[i]);
        return 1;
    }
    if ((rc = start_local(c, &r)) != 0)
        r.worst = rc;
    event_loop(&r);
    wait_local(&r);
    return r.worst;
}
