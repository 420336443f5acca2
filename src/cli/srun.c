/*
 * srun.c - `srun` inside a Slurm-style docket job (docs/slurm.md): the step's tasks
 * started on this node, each with SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID, its share
 * of the job's GPUs (--gpus-per-task) and CPUs, output passed through (or labelled with
 * -l), the exit status of the worst task. The job's agent put this program on the
 * job's PATH under the name srun. A step over more than the batch node is refused: docket
 * does not start tasks on the other nodes of the allocation yet.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/slurm.h"
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
    MAX_TASKS = 1024,
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
    "\n"
    "Start the step's tasks on this node, as Slurm's srun does on the allocation.\n"
    "  -n, --ntasks N            tasks (default: the job's tasks on this node)\n"
    "  -N, --nodes N             nodes of the step (docket: 1, the batch node)\n"
    "      --ntasks-per-node N   tasks on each node\n"
    "  -c, --cpus-per-task N     CPUs of each task (SLURM_CPUS_PER_TASK)\n"
    "      --gpus-per-task N     each task gets its own N of the job's GPUs\n"
    "  -l, --label               prefix each output line with the task's rank\n"
    "      --export ALL|NONE|VAR[=VALUE],...   the tasks' environment\n"
    "  -K, --kill-on-bad-exit    end the other tasks when one fails\n"
    "--cpu-bind, --mpi, --gpu-bind, -u and others are accepted and change nothing.\n";

struct step {
    int ntasks, nodes, cpus, gpus_per_task;
    bool label, kill_bad, export_none;
    const char *export_list;
    char **argv;
    pid_t pids[MAX_TASKS];
    int out[MAX_TASKS][2]; /* -l: the pipes of each task's stdout and stderr */
};

static int env_int(const char *name, int dflt)
{
    int v;
    const char *s = getenv(name);
    return s && parse_int(s, 0, 1000000, &v) == 0 ? v : dflt;
}

static int srun_parse(struct cli *c, int argc, char **argv, struct step *st)
{
    struct opt_iter it;
    const char *v;
    char err[256];
    int id, n;

    st->ntasks = -1;
    st->nodes = -1;
    st->cpus = env_int("SLURM_CPUS_PER_TASK", 1);
    st->gpus_per_task = env_int("SLURM_GPUS_PER_TASK", 0);
    opt_iter_init(&it, argc, argv, 1);
    int per_node = -1;
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
    if (st->nodes < 0)
        st->nodes = st->ntasks > 0 || per_node > 0 ? 1 : env_int("SLURM_NNODES", 1);
    if (st->ntasks < 0)
        st->ntasks =
            per_node > 0 ? per_node * st->nodes : env_int("SLURM_NTASKS_PER_NODE", 1) * st->nodes;
    return 0;
}

/* The GPUs of task `local`: its own slice of the job's list when --gpus-per-task is set. */
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

/* In the task's child: its environment, then exec. */
static void __attribute__((noreturn)) task_exec(const struct step *st, int local)
{
    char gpus[512];
    int node = env_int("SLURM_NODEID", 0);

    if (st->export_none) { /* only SLURM_* (and what the list names) */
        for (char **e = environ; e && *e;) {
            if (strncmp(*e, "SLURM_", 6)) {
                char name[256];
                size_t n = strcspn(*e, "=");
                snprintf(name, sizeof(name), "%.*s", (int)n, *e);
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
    task_gpus(st, local, gpus, sizeof(gpus));
    if (st->gpus_per_task && gpus[0]) {
        setenv("CUDA_VISIBLE_DEVICES", gpus, 1);
        setenv_int("SLURM_GPUS_ON_NODE", st->gpus_per_task);
    }
    setenv_int("SLURM_PROCID", (long)node * st->ntasks + local);
    setenv_int("SLURM_LOCALID", local);
    setenv_int("SLURM_NODEID", node);
    setenv_int("SLURM_NTASKS", st->ntasks);
    setenv_int("SLURM_NPROCS", st->ntasks);
    setenv_int("SLURM_STEP_NUM_TASKS", st->ntasks);
    setenv_int("SLURM_STEP_NUM_NODES", 1);
    setenv_int("SLURM_STEP_TASKS_PER_NODE", st->ntasks);
    setenv_int("SLURM_CPUS_PER_TASK", st->cpus);
    setenv_int("SLURM_TASK_PID", getpid());
    setenv("SLURM_STEP_ID", "0", 1);
    setenv("SLURM_STEPID", "0", 1);
    if (getenv("SLURMD_NODENAME"))
        setenv("SLURM_STEP_NODELIST", getenv("SLURMD_NODENAME"), 1);
    execvp(st->argv[0], st->argv);
    fprintf(stderr, "srun: error: %s: %s\n", st->argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
}

static void copy_labelled(int fd, int rank, FILE *to, char *pending, size_t *plen, size_t cap)
{
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf));

    for (ssize_t i = 0; i < n; i++) {
        if (*plen < cap - 1)
            pending[(*plen)++] = buf[i];
        if (buf[i] == '\n' || *plen >= cap - 1) {
            fprintf(to, "%d: %.*s", rank, (int)*plen, pending);
            *plen = 0;
        }
    }
    fflush(to);
}

/* -l: read every task's output and write it line by line with "RANK: " in front. */
static void label_loop(struct step *st, int ntasks)
{
    struct pollfd pfd[2 * MAX_TASKS];
    static char pending[2 * MAX_TASKS][512];
    static size_t plen[2 * MAX_TASKS];
    int open = 2 * ntasks;

    for (int i = 0; i < ntasks; i++)
        for (int k = 0; k < 2; k++)
            pfd[2 * i + k] = (struct pollfd){st->out[i][k], POLLIN, 0};
    while (open > 0) {
        if (poll(pfd, (nfds_t)(2 * ntasks), -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2 * ntasks; i++) {
            if (pfd[i].fd < 0 || !pfd[i].revents)
                continue;
            int rank = env_int("SLURM_NODEID", 0) * ntasks + i / 2;
            if (pfd[i].revents & POLLIN) {
                copy_labelled(pfd[i].fd, rank, i % 2 ? stderr : stdout, pending[i], &plen[i],
                              sizeof(pending[i]));
                continue;
            }
            if (plen[i])
                fprintf(i % 2 ? stderr : stdout, "%d: %.*s\n", rank, (int)plen[i], pending[i]);
            close(pfd[i].fd);
            pfd[i].fd = -1;
            open--;
        }
    }
}

static volatile sig_atomic_t forward_sig;

static void on_signal(int sig)
{
    forward_sig = sig;
}

/* Wait for every task; the status is the worst one's (128 + N for a signal). */
static int wait_tasks(struct step *st, int ntasks)
{
    int worst = 0, left = ntasks;

    while (left > 0) {
        int status;
        pid_t p = waitpid(-1, &status, 0);
        if (p < 0 && errno == EINTR) {
            for (int i = 0; forward_sig && i < ntasks; i++)
                if (st->pids[i] > 0)
                    kill(st->pids[i], forward_sig);
            forward_sig = 0;
            continue;
        }
        if (p < 0)
            break;
        for (int i = 0; i < ntasks; i++) {
            if (st->pids[i] != p)
                continue;
            int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            if (code) {
                fprintf(stderr, "srun: error: task %d: %s %d\n", i,
                        WIFEXITED(status) ? "Exited with exit code" : "Killed by signal",
                        WIFEXITED(status) ? code : WTERMSIG(status));
                if (st->kill_bad)
                    for (int k = 0; k < ntasks; k++)
                        if (st->pids[k] > 0 && k != i)
                            kill(st->pids[k], SIGKILL);
            }
            if (code > worst)
                worst = code;
            st->pids[i] = 0;
            left--;
        }
    }
    return worst;
}

int cmd_srun(struct cli *c, int argc, char **argv)
{
    static struct step st;
    int rc;

    memset(&st, 0, sizeof(st));
    if (!getenv("SLURM_JOB_ID"))
        return cli_fail(c, "docket's srun runs only inside a Slurm-style job "
                           "(a script with #SBATCH lines); outside one use `docket submit`");
    rc = srun_parse(c, argc, argv, &st);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    if (st.nodes > 1 || st.ntasks > MAX_TASKS)
        return cli_fail(c,
                        "this step asks for %d nodes: docket starts srun's tasks on "
                        "the batch node only (docs/slurm.md); write -N 1",
                        st.nodes);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    /* the tasks share the job's cgroup and get the job's signals themselves; srun must
     * outlive them to report their status, and passes on what is sent to it alone */
    int sigs[] = {SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGHUP, SIGALRM, SIGCONT, SIGQUIT};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
    fflush(NULL);
    for (int i = 0; i < st.ntasks; i++) {
        int po[2] = {-1, -1}, pe[2] = {-1, -1};
        if (st.label && (pipe(po) < 0 || pipe(pe) < 0))
            return cli_fail(c, "cannot make pipes: %s", strerror(errno));
        st.pids[i] = fork();
        if (st.pids[i] == 0) {
            for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++)
                signal(sigs[k], SIG_DFL);
            if (st.label) {
                dup2(po[1], 1);
                dup2(pe[1], 2);
                close(po[0]);
                close(pe[0]);
                close(po[1]);
                close(pe[1]);
            }
            task_exec(&st, i);
        }
        if (st.pids[i] < 0)
            return cli_fail(c, "cannot start task %d: %s", i, strerror(errno));
        if (st.label) {
            close(po[1]);
            close(pe[1]);
            st.out[i][0] = po[0];
            st.out[i][1] = pe[0];
        }
    }
    if (st.label)
        label_loop(&st, st.ntasks);
    return wait_tasks(&st, st.ntasks);
}
