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
#include <sched.h>
#include <sys/file.h>
#include <time.h>
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

const char cmd_srun_usage[] =
    "usage: srun [OPTIONS] COMMAND [ARGS...]   (inside a Slurm-style docket job)\n"
    "       srun --pty [OPTIONS] COMMAND       (an interactive session: docs/interactive.md)\n"
    "\n"
    "Start the step's tasks on the job's nodes, as Slurm's srun does on the allocation.\n"
    "  -n, --ntasks N            tasks (default: the job's, on the job's nodes)\n"
    "  -N, --nodes N             nodes of the step (default: the job's, or as -n needs)\n"
    "      --ntasks-per-node N   tasks on each node\n"
    "  -w, --nodelist LIST       these nodes of the job; -x, --exclude LIST: not these\n"
    "  -r, --relative N          start at the job's node N\n"
    "  -m, --distribution block|cyclic   ranks in blocks (default) or round robin\n"
    "  -c, --cpus-per-task N     CPUs of each task (SLURM_CPUS_PER_TASK)\n"
    "      --gpus-per-task N     each task gets its own N of the job's GPUs\n"
    "      --cpu-bind TYPE       none, rank, cores, threads, map_cpu:L, mask_cpu:L [verbose]\n"
    "      --exclusive           CPUs of the step's own: waits while other such steps hold them\n"
    "  -o, --output PATTERN      tasks' stdout to files (%t task, %n node, %N host, %j job)\n"
    "  -e, --error PATTERN       tasks' stderr to files (default: with -o's)\n"
    "  -l, --label               prefix each output line with the task's rank\n"
    "      --export ALL|NONE|[ALL,]VAR[=VALUE],...   the tasks' environment\n"
    "  -K, --kill-on-bad-exit    end the other tasks when one fails\n"
    "  -W, --wait S              end the other tasks S seconds after the first ends\n"
    "  -D, --chdir DIR           the tasks' working directory\n"
    "      --container-image REF each task in a container of the image (oci-layout:/PATH[:TAG],\n"
    "                            docker://NAME), run by its node's docket-node as the job's user\n"
    "      --container-mounts SRC:DST[:ro],...  from the job's workdir or project storage\n"
    "      --container-workdir DIR   the tasks' directory in the container\n"
    "      --container-env NAME,...  the task's values win over the image's (PATH)\n"
    "      --pty                 COMMAND on a terminal: outside a job, a new interactive\n"
    "                            session (as salloc); inside one, on its first node\n"
    "Every other option of Slurm's srun is known: those that only tune a step (--mpi, --hint,\n"
    "--mem, --gres ...) are ignored with one warning line, and those docket cannot honour\n"
    "(--het-group, --multi-prog ...) refused with the reason (docs/slurm.md).\n"
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

int srun_rank(const struct step *st, int local)
{
    return st->cyclic ? local * st->nodes + st->node : st->first + local;
}

static int srun_parse(struct cli *c, int argc, char **argv, struct step *st)
{
    struct srun_env env = {
        .job_nodes = env_int("SLURM_NNODES", 1),
        .job_ntasks = env_int("SLURM_NTASKS", 0),
        .ntasks_per_node = env_int("SLURM_NTASKS_PER_NODE", 0),
        .cpus_per_task = env_int("SLURM_CPUS_PER_TASK", 1),
        .gpus_per_task = env_int("SLURM_GPUS_PER_TASK", 0),
        .nodelist = getenv("SLURM_JOB_NODELIST"),
        .job_id = getenv("SLURM_JOB_ID"),
    };
    struct srun_parse p = {.st = st};
    char err[512];
    int rc = srun_parse_args(argc, argv, &env, &p, err, sizeof(err));
    if (rc < 0)
        return cli_usage_error(c, "%s", err);
    if (rc == 1) {
        fputs(p.info == 1 ? c->usage : "slurm 23.11.0 (docket " DOCKET_VERSION ")\n", c->out);
        return -1;
    }
    if (p.ignored[0])
        fprintf(stderr, "srun: warning: ignored here, they only tune a step: %s\n", p.ignored);
    if (p.warning[0])
        fprintf(stderr, "srun: Warning: %s\n", p.warning);
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

/* Whether NAME (n bytes) is one of --export's list. */
static bool export_names(const char *list, const char *name, size_t n)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",="), all = strcspn(p, ",");
        if (len == n && !strncmp(p, name, n))
            return true;
        p += all + (p[all] == ',');
    }
    return false;
}

/* --export (man srun): ALL (the default) keeps srun's environment; NONE keeps only the
 * SLURM_* variables (and docket's own, which srun's commands need); a list without ALL
 * is NONE plus the variables it names, with their current value or the one it gives. */
static void apply_export(const struct step *st)
{
    if (st->export_none) {
        for (char **e = environ; e && *e;) {
            size_t n = strcspn(*e, "=");
            if (strncmp(*e, "SLURM_", 6) && strncmp(*e, "DOCKET_", 7) &&
                !export_names(st->export_list, *e, n)) {
                char name[256];
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
}

/* The processes under pid (its children, theirs ...), from /proc: up to max. */
static int tree(pid_t pid, pid_t *out, int n, int max)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(path, "re");
    int child, first = n;
    while (f && n < max && fscanf(f, "%d", &child) == 1)
        out[n++] = child;
    if (f)
        fclose(f);
    for (int i = first, end = n; i < end && n < max; i++)
        n = tree(out[i], out, n, max);
    return n;
}

void srun_kill_tree(pid_t pid, int sig)
{
    /* the tasks stay in the job's process group (the agent's warnings reach them there
     * without cgroups too): what a task started is found under it, all of it before the
     * first signal, as a child whose parent died is no longer under it */
    pid_t all[4096];
    int n = tree(pid, all, 0, 4096);
    kill(pid, sig);
    for (int i = 0; i < n; i++)
        kill(all[i], sig);
}

static void task_names(struct srun_names *n, char *host, size_t hostlen)
{
    const char *h = getenv("SLURMD_NODENAME");
    if (!h && gethostname(host, hostlen) == 0) {
        host[hostlen - 1] = '\0';
        host[strcspn(host, ".")] = '\0';
        h = host;
    }
    *n = (struct srun_names){getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "0",
                             getenv("SLURM_STEP_ID") ? getenv("SLURM_STEP_ID") : "0",
                             getenv("SLURM_ARRAY_JOB_ID"),
                             getenv("SLURM_ARRAY_TASK_ID"),
                             h ? h : "localhost",
                             getenv("SLURM_JOB_USER") ? getenv("SLURM_JOB_USER") : getenv("USER"),
                             getenv("SLURM_JOB_NAME")};
}

/* The file of pattern `pat` for local task `local` (rank < 0: the step's, one for all),
 * under -D's directory when relative. 0 or -1. */
static int task_path(const struct step *st, const char *pat, int local, char *out, size_t len)
{
    struct srun_names n;
    char host[256], name[4096];
    task_names(&n, host, sizeof(host));
    /* SLURM_STEP_ID is "batch" in the script itself: a step's files say 0 */
    if (!strcmp(n.step_id, "batch"))
        n.step_id = "0";
    if (srun_pattern(pat, &n, local < 0 ? 0 : srun_rank(st, local),
                     st->node >= 0 ? st->job_node[st->node] : 0, name, sizeof(name)) < 0)
        return -1;
    if (name[0] == '/' || !st->chdir)
        return str_copy(out, len, name);
    return snprintf(out, len, "%s/%s", st->chdir, name) < (int)len ? 0 : -1;
}

void srun_truncate_outputs(const struct step *st, bool step_wide)
{
    const char *pats[2] = {
        st->output, st->error && (!st->output || strcmp(st->error, st->output)) ? st->error : NULL};
    for (int k = 0; k < 2; k++) {
        if (!pats[k] || !strcmp(pats[k], "none"))
            continue;
        bool per = srun_pattern_per_node(pats[k]);
        for (int i = 0; i < (per ? st->local_n : step_wide ? 1 : 0); i++) {
            char path[4096];
            int fd = task_path(st, pats[k], per ? i : -1, path, sizeof(path)) < 0
                         ? -1
                         : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
            if (fd >= 0)
                close(fd);
        }
    }
}

/* -o, -e in the task: its stdout, stderr into the files their patterns name (appended:
 * srun_truncate_outputs emptied them first, once). */
static void task_files(const struct step *st, int local)
{
    const char *pats[2] = {st->output, st->error ? st->error : st->output};
    for (int k = 0; k < 2; k++) {
        char path[4096];
        if (!pats[k])
            continue;
        if (!strcmp(pats[k], "none"))
            str_copy(path, sizeof(path), "/dev/null");
        else if (task_path(st, pats[k], local, path, sizeof(path)) < 0) {
            fprintf(stderr, "srun: error: -%c %s: a bad filename pattern\n", k ? 'e' : 'o',
                    pats[k]);
            _exit(1);
        }
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY, 0644);
        if (fd < 0 || dup2(fd, k + 1) < 0) {
            fprintf(stderr, "srun: error: %s: %s\n", path, strerror(errno));
            _exit(1);
        }
        close(fd);
    }
}

/* The CPUs this process may use, in order. */
static int allowed_cpus(int *cpus, int max)
{
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof(set), &set) < 0)
        return 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    return n;
}

/* One entry of a map_cpu: or mask_cpu: list (the task's, cycling), into set. */
static bool bind_list_entry(const char *list, int local, bool mask, cpu_set_t *set)
{
    char buf[512];
    char *save = NULL, *w;
    int count = 0, i = 0;
    str_copy(buf, sizeof(buf), list);
    for (char *p = buf; *p; p++)
        count += *p == ',';
    count++;
    for (w = strtok_r(buf, ",", &save); w && i < local % count; w = strtok_r(NULL, ",", &save))
        i++;
    if (!w)
        return false;
    unsigned long long v = strtoull(w, NULL, mask || !strncmp(w, "0x", 2) ? 16 : 10);
    if (!mask) {
        if (v >= CPU_SETSIZE)
            return false;
        CPU_SET((int)v, set);
        return true;
    }
    for (int c = 0; c < 64; c++)
        if (v >> c & 1)
            CPU_SET(c, set);
    return CPU_COUNT(set) > 0;
}

/* --cpu-bind in the task, and --exclusive's CPUs (slots of the allowed CPUs): the set,
 * SLURM_CPU_BIND*, and with verbose the line Slurm prints. */
static void bind_cpus(const struct step *st, int local)
{
    const char *b = st->cpu_bind;
    int cpus[CPU_SETSIZE];
    int n = allowed_cpus(cpus, CPU_SETSIZE);
    bool verbose = b && strstr(b, "verbose");
    const char *type = b ? b : "";
    cpu_set_t set;
    CPU_ZERO(&set);
    if (!strncmp(type, "verbose,", 8) || !strncmp(type, "quiet,", 6))
        type = strchr(type, ',') + 1;
    if (b) {
        setenv("SLURM_CPU_BIND", b, 1);
        setenv("SLURM_CPU_BIND_VERBOSE", verbose ? "verbose" : "quiet", 1);
        setenv("SLURM_CPU_BIND_TYPE", strndupa(type, strcspn(type, ":,")), 1);
        setenv("SLURM_CPU_BIND_LIST", strchr(type, ':') ? strchr(type, ':') + 1 : "", 1);
    }
    if (n <= 0)
        return;
    if (st->cpu_slots) { /* --exclusive: this task's slots */
        for (int k = 0; k < st->cpus; k++)
            CPU_SET(cpus[st->cpu_slots[local * st->cpus + k] % n], &set);
    } else if (!b || !strncmp(type, "none", 4) || !strncmp(type, "no", 2) || strstr(type, "ldom")) {
        return;
    } else if (!strncmp(type, "map_cpu:", 8) || !strncmp(type, "mask_cpu:", 9)) {
        if (!bind_list_entry(strchr(type, ':') + 1, local, type[1] == 'a' && type[2] == 's', &set))
            return;
    } else if (!strncmp(type, "rank", 4)) {
        CPU_SET(cpus[local % n], &set);
    } else { /* cores, threads, sockets ...: each task its own block of -c CPUs */
        for (int k = 0; k < st->cpus; k++)
            CPU_SET(cpus[(local * st->cpus + k) % n], &set);
    }
    if (sched_setaffinity(0, sizeof(set), &set) < 0) {
        fprintf(stderr, "srun: warning: --cpu-bind: task %d left unbound: %s\n",
                srun_rank(st, local), strerror(errno));
        return;
    }
    if (verbose) {
        unsigned long long m = 0;
        for (int c = 0; c < 64; c++)
            m |= CPU_ISSET(c, &set) ? 1ULL << c : 0;
        fprintf(stderr, "cpu-bind=MASK - %s, task %2d %2d [%d]: mask 0x%llx set\n",
                getenv("SLURMD_NODENAME") ? getenv("SLURMD_NODENAME") : "?", srun_rank(st, local),
                local, (int)getpid(), m);
    }
}

void srun_task_exec(const struct step *st, int local)
{
    char gpus[512];

    task_files(st, local);
    if (st->chdir && chdir(st->chdir) < 0) {
        fprintf(stderr, "srun: error: chdir %s: %s\n", st->chdir, strerror(errno));
        _exit(1);
    }
    bind_cpus(st, local);
    apply_export(st);
    task_gpus(st, local, gpus, sizeof(gpus));
    if (st->gpus_per_task && gpus[0]) {
        setenv("CUDA_VISIBLE_DEVICES", gpus, 1);
        setenv_int("SLURM_GPUS_ON_NODE", st->gpus_per_task);
    }
    setenv_int("SLURM_PROCID", srun_rank(st, local));
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
    if (st->image)
        srun_container_exec(st);
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
    struct step_link links[SRUN_MAX_NODES]; /* step node k's link (not ours), fd -1 closed */
    int unreported[SRUN_MAX_NODES];         /* step node k's tasks whose exit has not come */
    int out[SRUN_MAX_TASKS][2];             /* -l: local tasks' stdout/stderr pipes, -1 closed */
    char pend[SRUN_MAX_TASKS][2][512];
    size_t plen[SRUN_MAX_TASKS][2];
    int running;               /* local tasks not yet reaped */
    int64_t first_exit;        /* monotonic ms of the first task's end (--wait), 0 before */
    bool ended;                /* the others were ended (-K, --wait): said once */
    int slots[SRUN_MAX_TASKS]; /* --exclusive: the CPU slots this step holds */
    int worst;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool remote(const struct run *r, int k)
{
    return k != r->st.node && r->links[k].fd >= 0;
}

/* Every task of the step, here and on the other nodes, gets sig. */
static void signal_all(struct run *r, int sig)
{
    uint32_t n = htonl((uint32_t)sig);
    for (int k = 0; k < r->st.local_n; k++)
        if (r->st.pids[k] > 0)
            srun_kill_tree(r->st.pids[k], sig); /* the task and what it started */
    for (int k = 0; k < r->st.nodes; k++)
        if (remote(r, k))
            srun_frame_send(&r->links[k], FR_SIGNAL, 0, &n, 4);
}

static void note_exit(struct run *r, int rank, int code)
{
    if (!r->first_exit)
        r->first_exit = mono_ms();
    if (code) {
        fprintf(stderr, "srun: error: task %d: %s %d\n", rank,
                code > 128 ? "Killed by signal" : "Exited with exit code",
                code > 128 ? code - 128 : code);
        if (r->st.kill_bad && !r->ended) { /* -K: the step ends with its first failure */
            r->ended = true;
            fprintf(stderr, "srun: error: task %d failed: terminating the step (-K)\n", rank);
            signal_all(r, SIGKILL);
        }
    }
    if (code > r->worst)
        r->worst = code;
}

/* --wait=S: S seconds after the first task ended, the others end (man srun -W). */
static void check_wait(struct run *r)
{
    if (r->st.wait_s <= 0 || !r->first_exit || r->ended ||
        mono_ms() - r->first_exit < (int64_t)r->st.wait_s * 1000)
        return;
    r->ended = true;
    fprintf(stderr, "srun: error: first task exited %ds ago: terminating the step (--wait)\n",
            r->st.wait_s);
    signal_all(r, SIGKILL);
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

/* Step node k's request: the command, the environment, its tasks. */
static char *request_line(struct run *r, int k, json_t *env)
{
    int first, count;
    srun_share(r->st.ntasks, r->st.nodes, k, &first, &count);
    json_t *argv = json_array();
    for (char **a = r->st.argv; *a; a++)
        json_array_append_new(argv, json_string(*a));
    char cwd[4096] = "";
    if (!getcwd(cwd, sizeof(cwd)))
        cwd[0] = '\0';
    json_t *req = json_pack("{s:o,s:O,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:b,s:s,s:s,s:s,s:i,s:b}", "argv",
                            argv, "env", env, "node", k, "first", first, "count", count, "ntasks",
                            r->st.ntasks, "nodes", r->st.nodes, "cpus", r->st.cpus, "gpus_per_task",
                            r->st.gpus_per_task, "export_none", r->st.export_none, "export",
                            r->st.export_list ? r->st.export_list : "", "cwd",
                            r->st.chdir ? r->st.chdir : cwd, "scratch",
                            getenv("DOCKET_SCRATCH") ? getenv("DOCKET_SCRATCH") : "", "job_node",
                            r->st.job_node[k], "cyclic", r->st.cyclic);
    const char *strs[][2] = {{"output", r->st.output},
                             {"error", r->st.error},
                             {"cpu_bind", r->st.cpu_bind},
                             {"image", r->st.image},
                             {"mounts", r->st.mounts},
                             {"container_workdir", r->st.container_workdir},
                             {"container_env", r->st.container_env}};
    for (size_t i = 0; req && i < sizeof(strs) / sizeof(strs[0]); i++)
        if (strs[i][1])
            json_object_set_new(req, strs[i][0], json_string(strs[i][1]));
    char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    r->unreported[k] = count;
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

/* Reach step node k's host (the job's node job_node[k]), prove the job's key and check
 * that the host holds it too (steplink.h), and only then send the request. 0, or -1
 * after a message. */
static int connect_host(struct run *r, int k, json_t *env)
{
    char err[512], hostport[320];
    int i = r->st.job_node[k];
    if (step_host_addr(i, hostport, sizeof(hostport)) < 0)
        return -1;
    int fd = dial(hostport);
    if (fd < 0) {
        fprintf(stderr, "srun: error: cannot reach the step host of node %d at %s\n", i, hostport);
        return -1;
    }
    if (step_link_connect(&r->links[k], fd, getenv("DOCKET_STEP_KEY"), err, sizeof(err)) < 0) {
        fprintf(stderr, "srun: error: node %d (%s): %s: nothing was sent\n", i, hostport, err);
        return -1;
    }
    char *line = request_line(r, k, env);
    int rc = line ? step_link_send(&r->links[k], line, strlen(line)) : -1;
    if (rc == 0)
        rc = step_link_send(&r->links[k], "\n", 1);
    free(line);
    if (rc < 0) {
        fprintf(stderr, "srun: error: node %d: the link to its step host broke\n", i);
        step_link_close(&r->links[k]);
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

/* --exclusive: the CPU slots of this node's tasks (lock files in the job's scratch, one
 * per CPU of the job on this node), waited for while other exclusive steps hold them, as
 * Slurm's srun waits ("step creation temporarily disabled"). The locks go with srun. */
static int take_cpus(struct cli *c, struct run *r)
{
    int total = env_int("SLURM_CPUS_ON_NODE", 1), need = r->st.local_n * r->st.cpus;
    const char *dir = getenv("DOCKET_SCRATCH") ? getenv("DOCKET_SCRATCH") : getenv("TMPDIR");
    bool said = false;
    if (need > total)
        return cli_fail(c,
                        "--exclusive: %d task(s) of %d CPU(s) need more than the %d CPU(s) "
                        "of the job on this node",
                        r->st.local_n, r->st.cpus, total);
    for (;;) {
        int fds[SRUN_MAX_TASKS], got = 0;
        for (int cpu = 0; cpu < total && got < need && got < SRUN_MAX_TASKS; cpu++) {
            char path[4200];
            snprintf(path, sizeof(path), "%s/.srun-cpu.%d", dir ? dir : "/tmp", cpu);
            int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
            if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
                fds[got] = fd;
                r->slots[got++] = cpu;
            } else if (fd >= 0) {
                close(fd);
            }
        }
        if (got >= need) {
            r->st.cpu_slots = r->slots;
            if (said)
                fprintf(stderr, "srun: Step created for StepId=%s.0\n", getenv("SLURM_JOB_ID"));
            return 0; /* the descriptors stay open, and locked, until srun ends */
        }
        while (got > 0)
            close(fds[--got]);
        if (!said)
            fprintf(stderr,
                    "srun: Job %s step creation temporarily disabled, retrying "
                    "(Requested nodes are busy)\n",
                    getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "?");
        said = true;
        usleep(200000);
    }
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
        r->running++;
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
    forward_sig = 0;
    signal_all(r, sig);
}

/* One frame from step node k's host. */
static void from_host(struct run *r, int k)
{
    static char buf[65536];
    int type;
    uint32_t task, len;
    int rc = srun_frame_read(&r->links[k], &type, &task, buf, sizeof(buf), &len);
    int i = r->st.job_node[k];
    if (rc <= 0) {
        /* a rank that never reported is a failed step, never a quiet success */
        if (r->unreported[k] > 0) {
            fprintf(stderr,
                    "srun: error: node %d: the link to its step host ended before %d "
                    "task(s) reported an exit\n",
                    i, r->unreported[k]);
            if (r->worst < 1)
                r->worst = 1;
        }
        step_link_close(&r->links[k]);
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
        r->unreported[k]--;
        note_exit(r, (int)task, (int)ntohl(code));
    } else if (type == FR_FAIL) {
        fprintf(stderr, "srun: error: node %d: %.*s\n", i, (int)len, buf);
        r->unreported[k] = 0; /* said why already */
        if (r->worst < 1)
            r->worst = 1;
    }
}

/* The local tasks that ended (without waiting). */
static void reap_local(struct run *r)
{
    int status;
    pid_t p;
    while (r->running > 0 && (p = waitpid(-1, &status, WNOHANG)) > 0)
        for (int i = 0; i < r->st.local_n; i++)
            if (r->st.pids[i] == p) {
                r->st.pids[i] = 0;
                r->running--;
                note_exit(r, srun_rank(&r->st, i),
                          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
            }
}

/* A -l pipe of local task t (stream s) is readable. */
static void from_pipe(struct run *r, int t, int s)
{
    char buf[4096];
    int rank = srun_rank(&r->st, t);
    ssize_t got = read(r->out[t][s], buf, sizeof(buf));
    if (got > 0) {
        emit(r, rank, s, buf, (size_t)got, r->pend[t][s], &r->plen[t][s]);
        return;
    }
    if (r->plen[t][s])
        emit(r, rank, s, "\n", 1, r->pend[t][s], &r->plen[t][s]);
    close(r->out[t][s]);
    r->out[t][s] = -1;
}

/* Until every link and -l pipe is closed and every local task reaped. Local tasks are
 * reaped as they end (a short poll), so that -K and --wait act on them at once. */
static void event_loop(struct run *r)
{
    struct pollfd p[SRUN_MAX_NODES + 2 * SRUN_MAX_TASKS];
    int who[SRUN_MAX_NODES + 2 * SRUN_MAX_TASKS];
    for (;;) {
        int n = 0;
        bool pending = false;
        reap_local(r);
        check_wait(r);
        for (int k = 0; k < r->st.nodes; k++)
            if (remote(r, k)) {
                who[n] = -1 - k;
                pending = pending || step_link_pending(&r->links[k]);
                p[n++] = (struct pollfd){r->links[k].fd, POLLIN, 0};
            }
        for (int t = 0; r->st.label && t < r->st.local_n; t++)
            for (int s = 0; s < 2; s++)
                if (r->out[t][s] >= 0) {
                    who[n] = 2 * t + s;
                    p[n++] = (struct pollfd){r->out[t][s], POLLIN, 0};
                }
        if (n == 0 && r->running == 0)
            return;
        /* frames TLS has decrypted already are not seen by poll: taken first */
        if (poll(p, (nfds_t)n, pending ? 0 : 100) < 0) {
            if (errno == EINTR && forward_sig)
                relay_signal(r);
            continue;
        }
        for (int k = 0; k < n; k++) {
            if (who[k] < 0 && step_link_pending(&r->links[-1 - who[k]]))
                p[k].revents |= POLLIN;
            if (!p[k].revents)
                continue;
            if (who[k] < 0)
                from_host(r, -1 - who[k]);
            else
                from_pipe(r, who[k] / 2, who[k] % 2);
        }
        if (forward_sig)
            relay_signal(r);
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
    bool others = r.st.nodes > 1 || r.st.node < 0;
    if (others && !getenv("DOCKET_STEP_KEY"))
        return cli_fail(c, "this job's other nodes cannot be reached (no step key: the "
                           "agents need the docket CLI, docket-node --slurm-cli)");
    if (r.st.node >= 0)
        srun_share(r.st.ntasks, r.st.nodes, r.st.node, &r.st.first, &r.st.local_n);
    if (r.st.exclusive && r.st.local_n > 0 && (rc = take_cpus(c, &r)) != 0)
        return rc;
    srun_truncate_outputs(&r.st, true);
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
    json_t *env = others ? env_json() : NULL;
    for (int i = 0; i < SRUN_MAX_NODES; i++)
        r.links[i].fd = -1;
    for (int k = 0; k < r.st.nodes && !r.worst; k++)
        if (k != r.st.node && connect_host(&r, k, env) < 0)
            r.worst = 1;
    json_decref(env);
    if (r.worst) { /* all or nothing: the hosts reached end their tasks when we go */
        for (int k = 0; k < r.st.nodes; k++)
            if (k != r.st.node)
                step_link_close(&r.links[k]);
        return 1;
    }
    if ((rc = start_local(c, &r)) != 0)
        r.worst = rc;
    event_loop(&r);
    return r.worst;
}
