/*
 * suplaunch.c - a job's set-up and launch, in its supervisor: the user resolved (root
 * refused unless allowed), the default logs and the user's output files opened safely,
 * the script and the scratch directory, the cgroup made before the job's exec, and the
 * child that drops privileges in order (setgroups, setgid, setuid, each checked), closes
 * descriptors (close_range) and execs the job, born inside its group where the kernel
 * allows. See sup_int.h, supervisor.h and docs/agent.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/pathopen.h"
#include "agent/sup_int.h"
#include "agent/supnet.h"
#include "agent/supoci.h"
#include "util/dbuf.h"
#include "util/str.h"

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
            sup_errf(err, errlen,
                     "job has no user and the agent runs as root (--allow-root-jobs not set)");
            return -EPERM;
        }
        if (!root && *name && (!res || strcmp(name, pw.pw_name) != 0)) {
            sup_errf(err, errlen, "cannot run as user '%s': the agent is not root", name);
            return -EPERM;
        }
        return 0;
    }
    int e = getpwnam_r(name, &pw, buf, sizeof buf, &res);
    if (e != 0 || !res) {
        sup_errf(err, errlen, "unknown user '%s'", name);
        return -ENOENT;
    }
    if (pw.pw_uid == 0 && !s->c->allow_root_jobs) {
        sup_errf(err, errlen, "refusing to run a job as root user '%s' (--allow-root-jobs not set)",
                 name);
        return -EPERM;
    }
    s->uid = pw.pw_uid;
    s->gid = pw.pw_gid;
    s->ngroups = (int)(sizeof s->groups / sizeof s->groups[0]);
    if (getgrouplist(pw.pw_name, pw.pw_gid, s->groups, &s->ngroups) < 0) {
        sup_errf(err, errlen, "user '%s' is in too many groups", name);
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
        sup_errf(err, errlen, "output '%s' is not a regular file", path);
        close(fd);
        return -EINVAL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        sup_errf(err, errlen, "cannot use output '%s': %s", path, strerror(errno));
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
        sup_errf(err, errlen, "cannot open '%s': %s", path, strerror(e));
        return -e;
    }
    if (geteuid() == 0 && fchown(fd, s->uid, s->gid) < 0) {
        int e = errno;
        sup_errf(err, errlen, "cannot give '%s' to the job's user: %s", path, strerror(e));
        close(fd);
        return -e;
    }
    return output_checked(fd, path, dev, ino, start, err, errlen);
}

/* An output path the job gave: opened here, as the job's user (fsuid, fsgid and the
 * user's groups, so the kernel checks the user's rights and not ours), never through a
 * symlink at any component (path_open_nofollow: a directory on the way swapped for a
 * link is refused too), never waiting (a FIFO without a reader fails at once instead of
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
            sup_errf(err, errlen, "cannot take the groups of user '%s': %s", s->user,
                     strerror(errno));
            return -EPERM;
        }
        setfsgid(s->gid);
        setfsuid(s->uid);
        if ((uid_t)setfsuid((uid_t)-1) != s->uid || (gid_t)setfsgid((gid_t)-1) != s->gid) {
            setfsuid(0);
            setfsgid(0);
            setgroups((size_t)nsaved, saved);
            sup_errf(err, errlen, "cannot act as user '%s' to open '%s'", s->user, path);
            return -EPERM;
        }
    }
    int fd = path_open_nofollow(
        path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0644);
    int e = fd < 0 ? -fd : 0;
    if (root) {
        setfsuid(0);
        setfsgid(0);
        if (setgroups((size_t)nsaved, saved) < 0)
            sup_log("cannot restore the supervisor's groups: %s", strerror(errno));
    }
    if (fd < 0) {
        const char *why = e == ELOOP   ? "it, or a directory on its way, is a symbolic link"
                          : e == ENXIO ? "it is a FIFO or socket"
                                       : strerror(e);
        sup_errf(err, errlen, "cannot open output '%s' as user '%s': %s", path, s->user, why);
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
static bool has_environment(const struct agent_job *j)
{
    return j->nmodules > 0 || j->setup;
}

void sup_child_signals_default(void)
{
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

static void __attribute__((noreturn)) child_exec(struct sup *s, int pfd, char **env, char **argv)
{
    char what[PATH_MAX + 64];
    sup_child_signals_default();
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
    /* the job's own network (supnet.c): entered while root; the job then holds no
     * CAP_NET_ADMIN there, so it can neither change its links nor lift its cap */
    if (s->net_fd >= 0 && setns(s->net_fd, CLONE_NEWNET) < 0)
        child_fail(pfd, "cannot enter the job's network namespace", errno);
    if (geteuid() == 0 && !s->oci) { /* a container's runtime does it, from its config */
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
    if (sup_tty_workdir(s))
        wd = sup_tty_workdir(s);
    if (!s->oci && chdir(wd) < 0) {
        snprintf(what, sizeof what, "cannot enter working directory '%s'", wd);
        child_fail(pfd, what, errno);
    }
    int out = s->out_fd, errfd = s->err_fd; /* opened by the supervisor (prepare) */
    if (s->tty) {
        if (sup_tty_child(s) < 0)
            child_fail(pfd, "cannot make the session's terminal the job's", errno);
    } else {
        int in = open("/dev/null", O_RDONLY);
        if (in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
            child_fail(pfd, "cannot set up standard descriptors", errno);
    }
    /* the step host's socket goes to SUP_STEP_FD (the status pipe moves out of its way) */
    int first_closed = 3;
    if (s->step_fd >= 0) {
        if (pfd == SUP_STEP_FD && (pfd = fcntl(pfd, F_DUPFD_CLOEXEC, SUP_STEP_FD + 1)) < 0)
            _exit(127);
        if (dup2(s->step_fd, SUP_STEP_FD) < 0)
            child_fail(pfd, "cannot hand the step host its socket", errno);
        first_closed = SUP_STEP_FD + 1;
    }
    /* the status pipe is close-on-exec; every other inherited descriptor goes now */
    if (pfd > first_closed)
        close_range((unsigned)first_closed, (unsigned)pfd - 1, 0);
    close_range((unsigned)pfd + 1, ~0U, 0);
    if (s->oci) {
        int rc = sup_oci_exec(s);
        child_fail(pfd, "cannot run the OCI runtime", -rc);
    }
    execvpe(argv[0], argv, env);
    snprintf(what, sizeof what, "cannot execute '%s'", argv[0]);
    child_fail(pfd, what, errno);
}

/* The job's command line: its argv or its script; on another node of a Slurm-style job
 * srun's step host or a holder; behind the template's environment script when it has
 * one. Made before the spawn (the child allocates nothing). */
struct job_cmd {
    char **argv;
    char script[PATH_MAX + 64], step_host[PATH_MAX + 32], env_path[PATH_MAX + 32];
    char *host_argv[3];
    char **sh;      /* a script's: its shell, the script, its arguments (malloc'd), or NULL */
    char **wrapped; /* malloc'd, or NULL */
};

static int job_cmd_make(struct sup *s, struct job_cmd *c)
{
    /* a Slurm-style job's batch script runs on the first node only; the others run srun's
     * step host (srun.c), or without the CLI only hold the allocation (ignoring the
     * --signal warnings meant for the steps), until the job ends */
    static char *hold_argv[] = {
        "/bin/sh", "-c", "trap '' USR1 USR2 HUP INT; while :; do sleep 86400 & wait $!; done",
        NULL};
    c->wrapped = NULL;
    c->sh = NULL;
    c->argv = s->j->argv;
    snprintf(c->step_host, sizeof c->step_host, "%s/.slurm-bin/srun", s->scratch);
    c->host_argv[0] = c->step_host;
    c->host_argv[1] = "--docket-step-host";
    c->host_argv[2] = NULL;
    bool other_node = (s->j->slurm.on || s->j->tty_idle_ms > 0) && s->j->node_rank > 0;
    if (other_node)
        c->argv = s->step_fd >= 0 ? c->host_argv : hold_argv;
    if (!c->argv) {
        snprintf(c->script, sizeof c->script, "%s/.docket_script", s->scratch);
        bool shebang = strncmp(s->j->script, "#!", 2) == 0;
        int nargs = 0;
        while (s->j->slurm.args && s->j->slurm.args[nargs])
            nargs++;
        if (!(c->sh = calloc((size_t)nargs + 3, sizeof *c->sh)))
            return -ENOMEM;
        int k = 0;
        if (!shebang)
            c->sh[k++] = "/bin/sh";
        c->sh[k++] = c->script;
        for (int i = 0; i < nargs; i++) /* sbatch job.sh ARG...: the script's $1 ... */
            c->sh[k++] = s->j->slurm.args[i];
        c->sh[k] = NULL;
        c->argv = c->sh;
    }
    /* a template's modules and setup run first, in a shell that then execs the job */
    if (!has_environment(s->j) || other_node)
        return 0;
    int argc = 0;
    while (c->argv[argc])
        argc++;
    if (!(c->wrapped = calloc((size_t)argc + 3, sizeof *c->wrapped)))
        return -ENOMEM;
    snprintf(c->env_path, sizeof c->env_path, "%s/.docket_env", s->scratch);
    c->wrapped[0] = "/bin/sh";
    c->wrapped[1] = c->env_path;
    memcpy(c->wrapped + 2, c->argv, sizeof(char *) * ((size_t)argc + 1));
    c->argv = c->wrapped;
    return 0;
}

/* A file of the scratch directory, new (anything already there is refused, never
 * opened: a FIFO, a link another job of the user raced in), the job's user's. */
static int write_scratch_file(struct sup *s, const char *name, const char *text, char *err,
                              size_t errlen)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", s->scratch, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0700);
    if (fd < 0) {
        sup_errf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        return -errno;
    }
    size_t n = strlen(text);
    ssize_t w = write(fd, text, n);
    int rc = w == (ssize_t)n ? 0 : -EIO;
    if (rc == 0 && geteuid() == 0 && fchown(fd, s->uid, s->gid) < 0)
        rc = -errno;
    close(fd);
    if (rc < 0)
        sup_errf(err, errlen, "cannot write '%s': %s", path, strerror(-rc));
    return rc;
}

/* SCRATCH/.docket_env: the template's environment (docs/environments.md) as a script the
 * job's /bin/sh runs before exec'ing the job: the module command found where the site's
 * environment modules put it, each module loaded, the setup (SCRATCH/.docket_env.setup)
 * sourced so what it exports reaches the job. A failing step ends the job, exit 97, its
 * message on the job's stderr; the node is not concerned. */
static int write_environment(struct sup *s, char *err, size_t errlen)
{
    struct dbuf b;
    dbuf_init(&b, (size_t)1 << 20);
    dbuf_puts(&b, "# the job's environment template, written by docket-node\n"
                  "if ! command -v module >/dev/null 2>&1; then\n"
                  "    for f in /etc/profile.d/lmod.sh /etc/profile.d/modules.sh"
                  " /usr/share/lmod/lmod/init/profile /usr/share/modules/init/sh; do\n"
                  "        if [ -r \"$f\" ]; then . \"$f\"; break; fi\n"
                  "    done\n"
                  "fi\n");
    /* the names are one word of [A-Za-z0-9._+-/@] (agent_msg.c): quoting is enough */
    for (int i = 0; i < s->j->nmodules; i++)
        dbuf_printf(&b,
                    "module load '%s' || { echo \"docket: template $DOCKET_TEMPLATE: module load"
                    " %s failed\" >&2; exit 97; }\n",
                    s->j->modules[i], s->j->modules[i]);
    if (s->j->setup)
        dbuf_puts(&b, ". \"$0.setup\" || { rc=$?; echo \"docket: template $DOCKET_TEMPLATE:"
                      " setup failed (exit $rc)\" >&2; exit 97; }\n");
    dbuf_puts(&b, "exec \"$@\"\n");
    int rc = b.failed ? -ENOMEM : write_scratch_file(s, ".docket_env", b.data, err, errlen);
    dbuf_release(&b);
    if (rc == 0 && s->j->setup)
        rc = write_scratch_file(s, ".docket_env.setup", s->j->setup, err, errlen);
    return rc;
}

static int write_script(struct sup *s, char *err, size_t errlen)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/.docket_script", s->scratch);
    /* a fresh directory: anything already there (a FIFO, a link another job of the user
     * raced in) is refused, never opened */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0700);
    if (fd < 0) {
        sup_errf(err, errlen, "cannot write script '%s': %s", path, strerror(errno));
        return -errno;
    }
    size_t n = strlen(s->j->script);
    ssize_t w = write(fd, s->j->script, n);
    int rc = w == (ssize_t)n ? 0 : -EIO;
    if (rc == 0 && geteuid() == 0 && fchown(fd, s->uid, s->gid) < 0)
        rc = -errno;
    close(fd);
    if (rc < 0)
        sup_errf(err, errlen, "cannot write script '%s': %s", path, strerror(-rc));
    return rc;
}

/* SCRATCH/.slurm-bin: Slurm's commands as links to the docket CLI, first on the PATH of a
 * Slurm-style job (supenv.c), so its srun, scontrol, squeue ... work and never shadow a
 * real Slurm outside it. A failure only leaves the commands out (logged). */
static void slurm_bin(struct sup *s)
{
    static const char *const names[] = {"srun",     "sbatch", "squeue", "scancel",
                                        "scontrol", "sinfo",  "sacct"};
    char dir[PATH_MAX + 16], link[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/.slurm-bin", s->scratch);
    if (mkdir(dir, 0755) < 0) {
        sup_log("job %llu: cannot make %s: %s", (unsigned long long)s->j->id, dir, strerror(errno));
        return;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(link, sizeof link, "%s/%s", dir, names[i]);
        if (symlink(s->c->slurm_cli, link) < 0)
            sup_log("job %llu: cannot link %s: %s", (unsigned long long)s->j->id, link,
                    strerror(errno));
    }
}

static int make_scratch(struct sup *s, char *err, size_t errlen)
{
    snprintf(s->scratch, sizeof s->scratch, "%s/job_%llu", s->c->scratch_root,
             (unsigned long long)s->j->id);
    sup_remove_tree(s->scratch); /* left over from an earlier run of this job */
    if (mkdir(s->scratch, 0700) < 0 || (geteuid() == 0 && chown(s->scratch, s->uid, s->gid) < 0)) {
        sup_errf(err, errlen, "cannot create scratch directory '%s': %s", s->scratch,
                 strerror(errno));
        return -errno;
    }
    if (s->j->slurm.on && s->c->slurm_cli && *s->c->slurm_cli)
        slurm_bin(s);
    int rc = s->j->script ? write_script(s, err, errlen) : 0;
    if (rc == 0 && has_environment(s->j))
        rc = write_environment(s, err, errlen);
    return rc;
}

/* What the job may use beyond memory and CPU: a number of processes, and of the node's
 * GPUs only its own (the device nodes of the others cannot be opened, declared or not).
 * A node that declares no GPU denies them all where that costs nothing (v1's devices
 * controller); on v2 it loads no device program. */
static int isolate(struct sup *s, char *err, size_t errlen)
{
    /* the class's pids.max from the start command, else the node's default */
    int64_t pids_max = s->j->pids_max > 0 ? s->j->pids_max : s->c->pids_max;
    int rc = cg_job_set_pids(&s->cg, pids_max, err, errlen);
    if (rc < 0)
        return rc;
    if (s->c->node_gpus <= 0)
        return s->cg.mode == CG_V1 && s->cg.ndirs > CG_DEVICES
                   ? cg_job_set_devices(&s->cg, NULL, 0, err, errlen)
                   : 0;
    int node[AGENT_MAX_GPUS], mine[AGENT_MAX_GPUS];
    int n = s->c->node_gpus < AGENT_MAX_GPUS ? s->c->node_gpus : AGENT_MAX_GPUS;
    for (int i = 0; i < n; i++)
        node[i] = s->c->gpu_minor ? s->c->gpu_minor[i] : i;
    for (int i = 0; i < s->j->ngpus; i++) {
        int g = s->j->gpus[i]; /* the agent checked it exists (gpus_check) */
        mine[i] = g >= 0 && g < n ? node[g] : g;
    }
    return cg_job_set_devices(&s->cg, mine, s->j->ngpus, err, errlen);
}

/* The job's network boundary (supnet.c), when its start command gives one: made before
 * anything of the job runs, its namespace held open for the child to enter. */
static int make_network(struct sup *s, char *err, size_t errlen)
{
    if (!s->j->net)
        return 0;
    struct sup_net_node node = {s->c->nft ? s->c->nft : "", s->c->ctl_addr, s->c->ctl_port};
    char ifname[32], ns[160], path[200];
    s->net_made = true; /* whatever part was made goes at the end */
    int rc = sup_net_setup(s->c->node, s->j->id, s->j->net, &node, err, errlen);
    if (rc < 0)
        return rc;
    sup_net_names(s->c->node, s->j->id, ifname, sizeof ifname, ns, sizeof ns);
    snprintf(path, sizeof path, "/run/netns/%s", ns);
    if ((s->net_fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        sup_errf(err, errlen, "cannot open the job's network namespace '%s': %s", path,
                 strerror(errno));
        return -errno;
    }
    return 0;
}

/* Everything before the fork of the job: user, cgroup, scratch, logs. */
static int prepare(struct sup *s, char *err, size_t errlen)
{
    int rc;
    if ((rc = resolve_user(s, err, errlen)) < 0)
        return rc;
    const char *wd = s->j->workdir && *s->j->workdir ? s->j->workdir : (s->home[0] ? s->home : "/");
    if ((rc = sup_resolve_output(s->j->output, s->dir, "stdout", wd, s->j, s->user, s->st.out_path,
                                 sizeof s->st.out_path)) < 0 ||
        (rc = sup_resolve_output(s->j->error, s->dir, "stderr", wd, s->j, s->user, s->st.err_path,
                                 sizeof s->st.err_path)) < 0) {
        sup_errf(err, errlen, "output path too long");
        return rc;
    }
    struct sup_state *st = &s->st;
    bool own_out = !s->j->output || !*s->j->output, own_err = !s->j->error || !*s->j->error;
    s->own_out = own_out;
    s->own_err = own_err;
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
            sup_errf(err, errlen, "cgroup path too long");
            return rc;
        }
        /* a group left by an earlier run would mix up usage and OOM counts */
        cg_job_reclaim(&s->cg, 1000, sup_reap_all, NULL, 0);
        if (s->spare_cg) {
            /* we sit in the spare's group already: it becomes the job's, and the job,
             * spawned from here, starts in it without a move (see sup_spare_start) */
            s->use_cg = true;
            if ((rc = cg_job_rename(s->spare_cg, &s->cg, err, errlen)) < 0) {
                s->cg = *s->spare_cg; /* sup_leave_group() empties and removes the spare's */
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
    if ((rc = make_network(s, err, errlen)) < 0)
        return rc;
    return make_scratch(s, err, errlen);
}

/* A Slurm-style job's rank > 0 runs srun's step host when the CLI is there (else it only
 * holds the allocation). */
static bool runs_step_host(const struct sup *s)
{
    char path[PATH_MAX + 32];
    if (!s->j->slurm.on || s->j->node_rank <= 0 || !s->j->slurm.step_key[0] ||
        s->j->slurm.nstep_hosts <= s->j->node_rank)
        return false;
    snprintf(path, sizeof path, "%s/.slurm-bin/srun", s->scratch);
    return access(path, X_OK) == 0;
}

/* A listening socket on a port the kernel picks, so no other process can hold the port
 * first (issue 33: a job of another user bound the old fixed port and read srun's key
 * and environment). On this node's address the controller gave (step_hosts[rank]); on
 * every address of its family only when that one is not this host's (NAT). */
static int bind_step_socket(const char *addr, int *port, char *why, size_t whylen)
{
    struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(addr, "0", &hints, &ai), fd = -1;
    if (rc != 0) {
        snprintf(why, whylen, "cannot resolve '%s': %s", addr, gai_strerror(rc));
        return -1;
    }
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    rc = fd < 0 ? -1 : bind(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc < 0 && fd >= 0 && errno == EADDRNOTAVAIL) {
        struct sockaddr_storage any;
        memset(&any, 0, sizeof any);
        any.ss_family = (sa_family_t)ai->ai_family;
        sup_log("step host: %s is not an address of this host: listening on all of them", addr);
        rc = bind(fd, (struct sockaddr *)&any, ai->ai_addrlen);
    }
    freeaddrinfo(ai);
    struct sockaddr_storage me;
    socklen_t ml = sizeof me;
    if (fd < 0 || rc < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)&me, &ml) < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(me.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&me)->sin6_port
                                           : ((struct sockaddr_in *)&me)->sin_port);
    /* far above the standard descriptors and the status pipe the child moves around */
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    close(fd);
    return high;
}

static int open_step_socket(struct sup *s, char *err, size_t errlen)
{
    char why[256];
    if (!runs_step_host(s))
        return 0;
    const char *addr = s->j->slurm.step_hosts[s->j->node_rank];
    s->step_fd = bind_step_socket(addr, &s->st.step_port, why, sizeof why);
    if (s->step_fd < 0) {
        s->st.step_port = 0;
        sup_errf(err, errlen, "cannot listen for srun's steps on %s: %s", addr, why);
        return -EADDRNOTAVAIL;
    }
    return 0;
}

int sup_step_host_write(struct sup *s, int rank, const char *hostport)
{
    char dir[PATH_MAX + 16], tmp[64], name[64], line[320];
    struct stat sb;
    snprintf(dir, sizeof dir, "%s/.slurm-bin", s->scratch);
    snprintf(tmp, sizeof tmp, ".step-host.%d.tmp", rank);
    snprintf(name, sizeof name, "step-host.%d", rank);
    int n = snprintf(line, sizeof line, "%s\n", hostport);
    /* our own directory (the job owns the one above it): never one it put there */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    if (fstat(dfd, &sb) < 0 || sb.st_uid != geteuid()) {
        close(dfd);
        return -EPERM;
    }
    unlinkat(dfd, tmp, 0);
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    int rc = fd < 0 ? -errno : 0;
    if (rc == 0 && write(fd, line, (size_t)n) != n)
        rc = -EIO;
    if (fd >= 0)
        close(fd);
    if (rc == 0 && renameat(dfd, tmp, dfd, name) < 0)
        rc = -errno;
    close(dfd);
    return rc;
}

/* Spare path: once the job runs in the group, we move out of it (to the node's group),
 * so that signals and kills of the job's group never reach us. Slow (an RCU grace period
 * on v1) but the job is already running. */
void sup_leave_group(struct sup *s)
{
    if (!s->inside)
        return;
    struct cg_job node;
    char err[256];
    if (cg_node_init(&node, s->c->cg, s->c->node) < 0 ||
        cg_job_attach(&node, 0, err, sizeof err) < 0)
        sup_log("job %llu: cannot leave the job's cgroup: %s", (unsigned long long)s->j->id, err);
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
    char **argv;
};

static int child_main(void *arg)
{
    struct child_args *ca = arg;
    close(ca->p[0]);
    child_exec(ca->s, ca->p[1], ca->env, ca->argv);
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

static pid_t spawn_child(struct sup *s, int p[2], char **env, char **argv)
{
    struct child_args ca = {s, {p[0], p[1]}, env, argv};
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

int sup_launch_job(struct sup *s, char *err, size_t errlen)
{
    char env_dir[PATH_MAX];
    int rc = prepare(s, err, errlen);
    if (rc == 0)
        rc = open_step_socket(s, err, errlen);
    if (rc == 0)
        sup_step_open(s); /* srun --container-image's tasks: without it, they fail alone */
    if (rc == 0)
        rc = sup_warm_environment(s, env_dir, sizeof env_dir, err, errlen);
    if (rc == 0 && sup_oci_wanted(s)) /* its image, made ready and held while it runs */
        rc = sup_oci_image(s, err, errlen);
    /* an interactive session's terminal is its first node's (docs/interactive.md) */
    if (rc == 0 && s->j->tty_idle_ms > 0 && s->j->node_rank == 0 &&
        (rc = sup_tty_prepare(s, err, errlen)) == 0)
        rc = sup_tty_await(s, s->sfd, err, errlen);
    if (rc < 0)
        return rc;
    /* who we are (for an agent that restarts), the log paths and the cgroup: the only
     * write before the end, unless the job is signalled */
    sup_save(s);
    char **env = sup_build_env(s->j, s->c->node, s->user, s->home[0] ? s->home : NULL,
                               s->shell[0] ? s->shell : NULL, s->scratch, env_dir);
    struct job_cmd cmd = {.sh = NULL, .wrapped = NULL};
    if (!env || job_cmd_make(s, &cmd) < 0) {
        free(cmd.sh);
        sup_env_free(env);
        sup_errf(err, errlen, "cannot launch: out of memory");
        return -ENOMEM;
    }
    /* a job with an image: its bundle, run by the OCI runtime (supoci.c) */
    if (s->oci && (rc = sup_oci_bundle(s, cmd.argv, env, err, errlen)) < 0) {
        free(cmd.wrapped);
        free(cmd.sh);
        sup_env_free(env);
        return rc;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        free(cmd.wrapped);
        free(cmd.sh);
        sup_env_free(env);
        sup_errf(err, errlen, "cannot launch: %s", strerror(errno));
        return -errno;
    }
    pid_t pid = spawn_child(s, p, env, cmd.argv);
    free(cmd.wrapped);
    free(cmd.sh);
    if (s->tty)
        sup_tty_spawned(s);
    if (s->step_fd >= 0) { /* the step host's now */
        close(s->step_fd);
        s->step_fd = -1;
    }
    if (s->cg_fd >= 0) {
        close(s->cg_fd);
        s->cg_fd = -1;
    }
    if (s->net_fd >= 0 && s->step_lfd < 0) { /* kept for the container steps' runtime */
        close(s->net_fd);
        s->net_fd = -1;
    }
    sup_leave_group(s);
    close(p[1]);
    sup_env_free(env);
    if (pid < 0) {
        close(p[0]);
        sup_errf(err, errlen, "cannot fork: %s", strerror(errno));
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
        sup_errf(err, errlen, "%s", msg);
        waitpid(pid, NULL, 0);
        s->leader_done = true;
        return -ECHILD;
    }
    return 0;
}
