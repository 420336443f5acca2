/*
 * supervisor.c - one process per job, forked by the agent: own session, child subreaper,
 * local time limit and grace timed from the moment of the signal (poll with the exact
 * deadline, no sweep), the fencing lease, the whole cgroup signalled and killed, reclaim
 * checked, the final state kept in the job directory; spares made in advance. The job's
 * set-up and launch are suplaunch.c; the job directory's files supstate.c; the job's
 * environment supenv.c (sup_int.h lists them). See supervisor.h and docs/agent.md.
 */
#define _GNU_SOURCE
#include "agent/supervisor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/sup_int.h"
#include "agent/supnet.h"
#include "agent/supoci.h"
#include "util/clock.h"
#include "util/dbuf.h"
#include "util/str.h"

void sup_errf(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(err, len, fmt, ap) < 0 && len)
        err[0] = '\0';
    va_end(ap);
}

/* The supervisor's own messages go to JOBDIR/supervisor.log, opened at the first one
 * (most jobs have nothing to say, and a file less per job counts at 500 jobs/s). */
static char slog_path[PATH_MAX + 32];
static int slog_fd = -1;

void sup_log(const char *fmt, ...)
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

void sup_save(struct sup *s)
{
    int rc = sup_state_write(s->dir, &s->st);
    if (rc < 0)
        sup_log("cannot write state of job %llu: %s", (unsigned long long)s->j->id, strerror(-rc));
}

void sup_reap_all(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

/* The processes a signal to the whole job passes over (cg_job_signal): its runtime's. */
static const struct cg_exe *runtime_skip(const struct sup *s)
{
    return s->runtime_known ? &s->runtime_file : NULL;
}

static void stop_job(struct sup *s, int sig, int64_t grace_ms, const char *why)
{
    if (s->leader_done)
        return;
    int64_t now = clock_mono_ms();
    int64_t at = now + grace_ms;
    if (s->stopping && s->kill_at && s->kill_at <= at) {
        sup_log("job %llu: %s, already stopping", (unsigned long long)s->j->id, why);
        return;
    }
    int n = s->use_cg ? cg_job_signal(&s->cg, sig, runtime_skip(s))
                      : (kill(-s->leader, sig) == 0 ? 1 : 0);
    sup_log("job %llu: %s: signal %d to %d processes, kill in %lld ms",
            (unsigned long long)s->j->id, why, sig, n, (long long)grace_ms);
    if (!s->stopping)
        str_copy(s->st.message, sizeof s->st.message, why);
    s->stopping = true;
    s->stop_signal = sig;
    s->kill_at = at;
    if (!strcmp(s->st.state, "running")) {
        str_copy(s->st.state, sizeof s->st.state, "stopping");
        sup_save(s);
    }
}

static void kill_job(struct sup *s, const char *why)
{
    if (s->leader_done)
        return;
    int n =
        s->use_cg ? cg_job_signal(&s->cg, SIGKILL, NULL) : (kill(-s->leader, SIGKILL) == 0 ? 1 : 0);
    sup_log("job %llu: %s: SIGKILL to %d processes", (unsigned long long)s->j->id, why, n);
    if (!s->killed && !s->stopping)
        str_copy(s->st.message, sizeof s->st.message, why);
    s->killed = true;
    s->kill_at = 0;
}

static int signal_steps(struct sup *s, int sig);

/* scancel --signal (agent_msg.h, AGENT_NOTIFY_*): 0 every process of the job, 1 the
 * batch shell (the leader), 2 every process but the leader; the job goes on. */
static void notify_job(struct sup *s, int sig, int to)
{
    if (s->leader_done)
        return;
    int n = to == 1     ? (kill(s->leader, sig) == 0 ? 1 : 0)
            : to == 2   ? signal_steps(s, sig)
            : s->use_cg ? cg_job_signal(&s->cg, sig, runtime_skip(s))
                        : (kill(-s->leader, sig) == 0 ? 1 : 0);
    sup_log("job %llu: signal %d on request to %s (%d processes)", (unsigned long long)s->j->id,
            sig,
            to == 1   ? "the batch shell"
            : to == 2 ? "the steps"
                      : "the job",
            n);
}

static int ctl_cmp(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int ctl_filter(const struct dirent *d)
{
    return strncmp(d->d_name, "ctl.", 4) == 0;
}

/* The time limit, `limit_ms` from the launch: the node ends the job then (after the slack),
 * and a Slurm job's --signal=SIG@T warning comes T before it. A limit lowered later
 * (scontrol update, the "limit" command) moves the warning too, unless it was sent. */
static void set_limit(struct sup *s, int64_t limit_ms, bool first)
{
    s->limit_at = s->started_at + limit_ms + s->c->limit_slack_ms;
    if (!s->j->slurm.on || s->j->slurm.signal_before < 0 || (!first && s->warn_at == 0))
        return;
    int64_t before = (int64_t)s->j->slurm.signal_before * 1000;
    s->warn_at = s->started_at + (limit_ms > before ? limit_ms - before : 0);
    if (s->warn_at == 0)
        s->warn_at = 1;
}

static void read_ctl(struct sup *s)
{
    struct dirent **list = NULL;
    int n = scandir(s->dir, &list, ctl_filter, ctl_cmp);
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX + 300], buf[384] = "", hostport[300];
        snprintf(path, sizeof path, "%s/%s", s->dir, list[i]->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t r = read(fd, buf, sizeof buf - 1);
            buf[r > 0 ? r : 0] = '\0';
            close(fd);
        }
        unlink(path);
        free(list[i]);
        int sig = 0, rank = 0;
        long long grace = 0;
        if (sscanf(buf, "step_host %d %299s", &rank, hostport) == 2 && rank > 0) {
            int rc = sup_step_host_write(s, rank, hostport);
            if (rc < 0)
                sup_log("job %llu: cannot record step host %d: %s", (unsigned long long)s->j->id,
                        rank, strerror(-rc));
        } else if (sscanf(buf, "signal %d %lld", &sig, &grace) == 2 && sig > 0 && sig < NSIG &&
                   grace >= 0) {
            char why[64];
            snprintf(why, sizeof why, "signalled %s", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
            stop_job(s, sig, grace, why);
        } else if (sscanf(buf, "notify %d %d", &sig, &rank) == 2 && sig > 0 && sig < NSIG &&
                   rank >= 0 && rank <= 2) {
            notify_job(s, sig, rank);
        } else if (sscanf(buf, "limit %lld", &grace) == 1 && grace > 0) {
            if (!s->stopping) {
                set_limit(s, grace, false);
                sup_log("job %llu: time limit now %lld s", (unsigned long long)s->j->id,
                        grace / 1000);
            }
        } else if (strncmp(buf, "kill", 4) == 0) {
            kill_job(s, "killed on request");
        } else {
            sup_log("job %llu: ignoring bad command '%s'", (unsigned long long)s->j->id, buf);
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
        } else {
            sup_step_reaped(s, p);
        }
    }
}

/* The fence: past its lease the controller may soon count the job as lost and run it
 * elsewhere, so it is stopped (its signal, a grace the lease bounds, then kill) before
 * that can happen. The job's lease runs from the agent's last contact with the
 * controller (docs/agent.md "Fencing and leases"); a lease renewed in time only moves the next
 * look. */
static void check_lease(struct sup *s, int64_t now)
{
    struct sup_lease l;
    int rc = sup_lease_read(s->c->state_dir, &l);
    if (rc == -EAGAIN) {
        s->lease_at = now + 10; /* caught a rewrite: look again in a moment */
        return;
    }
    if (rc < 0 || l.deadline_ms == 0) {
        s->lease_at = 0; /* no lease (an agent that never reached a controller) */
        return;
    }
    int64_t deadline = sup_lease_deadline(&l, s->j->lease_ms);
    if (deadline > now) {
        s->lease_at = deadline;
        return;
    }
    s->lease_at = 0;
    s->fenced = true;
    int64_t g = s->j->grace_ms < l.grace_ms ? s->j->grace_ms : l.grace_ms;
    sup_log("job %llu: fenced: no contact with the controller since the lease ran out %lld ms ago",
            (unsigned long long)s->j->id, (long long)(now - deadline));
    stop_job(s, s->j->signal ? s->j->signal : SIGTERM, g,
             "fenced: the node lost contact with the controller");
    str_copy(s->st.message, sizeof s->st.message,
             "fenced: the node lost contact with the controller");
}

/* Every process of the job but its leader (the batch shell): Slurm's --signal without
 * B: reaches the steps, not the script. Without a cgroup: the leader's process group. */
static int signal_steps(struct sup *s, int sig)
{
    if (!s->use_cg)
        return kill(-s->leader, sig) == 0 ? 1 : 0;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/cgroup.procs", s->st.cgroup);
    FILE *f = fopen(path, "re");
    int n = 0, pid;
    if (!f)
        return 0;
    while (fscanf(f, "%d", &pid) == 1)
        if (pid != s->leader && !cg_pid_runs(pid, runtime_skip(s)) && kill(pid, sig) == 0)
            n++;
    fclose(f);
    return n;
}

/* A Slurm job's --signal=[B:]SIG@T, T seconds before the limit; the limit itself then
 * sends SIGTERM as Slurm's does. */
static void warn_job(struct sup *s)
{
    int sig = s->j->slurm.signal ? s->j->slurm.signal : SIGUSR1;
    int n = s->j->slurm.signal_batch ? (kill(s->leader, sig) == 0 ? 1 : 0) : signal_steps(s, sig);
    sup_log("job %llu: signal %d to %s (%d processes), %d s before the limit",
            (unsigned long long)s->j->id, sig,
            s->j->slurm.signal_batch ? "the batch shell" : "the steps", n,
            s->j->slurm.signal_before);
    s->warn_at = 0;
}

static int limit_signal(const struct sup *s)
{
    if (s->j->slurm.on && s->j->slurm.signal_before >= 0)
        return SIGTERM;
    return s->j->signal ? s->j->signal : SIGTERM;
}

static void run_loop(struct sup *s, int sfd)
{
    while (!s->leader_done) {
        int64_t now = clock_mono_ms();
        if (s->warn_at && now >= s->warn_at && !s->stopping)
            warn_job(s);
        if (s->limit_at && now >= s->limit_at && !s->stopping) {
            s->timed_out = true;
            stop_job(s, limit_signal(s), s->j->grace_ms, "time limit reached");
        }
        if (s->lease_at && now >= s->lease_at)
            check_lease(s, now);
        if (s->kill_at && now >= s->kill_at)
            kill_job(s, "grace ended");
        if (s->cap_at && now >= s->cap_at)
            sup_cap_outputs(s);
        if (s->tty && sup_tty_idle(s, now) && !s->stopping)
            stop_job(s, SIGHUP, s->j->grace_ms, "interactive session idle");
        int64_t next = 86400000; /* the earliest of the deadlines set, in ms from now */
        int64_t at[5] = {s->limit_at && !s->stopping ? s->limit_at : 0, s->kill_at, s->lease_at,
                         s->warn_at && !s->stopping ? s->warn_at : 0, s->cap_at};
        for (int i = 0; i < 5; i++)
            if (at[i] && at[i] - now < next)
                next = at[i] - now;
        if (s->tty && sup_tty_next_ms(s, now) < next)
            next = sup_tty_next_ms(s, now);
        struct pollfd pfd[2 + SUP_TTY_POLLFDS] = {{sfd, POLLIN, 0}, {s->step_lfd, POLLIN, 0}};
        int ntty = sup_tty_pollfds(s, pfd + 2);
        int rc = poll(pfd, 2 + (nfds_t)ntty, next < 0 ? 0 : (int)next);
        if (rc > 0 && ntty)
            sup_tty_polled(s, pfd + 2, ntty);
        if (rc > 0 && pfd[1].revents) /* srun --container-image's tasks (supstep.c) */
            sup_step_accept(s);
        if (rc <= 0 || !pfd[0].revents)
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
    sup_step_close(s);
    sup_leave_group(s);
    if (s->spare_cg && !s->use_cg)
        cg_job_remove(s->spare_cg); /* failed before the spare's group became the job's */
    int64_t cpu = 0, peak = 0;
    bool oom = false;
    if (s->use_cg) {
        char msg[256] = "";
        if (cg_job_nprocs(&s->cg) > 0) {
            cg_job_signal(&s->cg, SIGKILL, NULL); /* the leader is gone: the rest goes too */
            sup_reap_all();
        }
        cg_job_usage(&s->cg, &cpu, &peak);
        oom = cg_job_oom(&s->cg);
        s->st.reclaim_ok = cg_job_reclaim(&s->cg, 10000, sup_reap_all, msg, sizeof msg) == 0;
        if (!s->st.reclaim_ok) {
            str_copy(s->st.reclaim_msg, sizeof s->st.reclaim_msg, msg);
            sup_log("job %llu: reclaim failed: %s", (unsigned long long)s->j->id, msg);
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
    if (launched)
        sup_cap_outputs(s); /* the last word: nothing writes any more */
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
        sup_oci_exit(s); /* a container's runtime that failed before the job ran */
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
    sup_step_end(s); /* srun --container-image's servers and bundles (supstep.c) */
    if (s->net_made) {
        /* rules left behind would hold the next job at this address to this one's */
        char msg[256] = "";
        if (s->net_fd >= 0)
            close(s->net_fd);
        s->net_fd = -1;
        if (sup_net_remove(s->c->node, s->j->id, s->c->nft, msg, sizeof msg) < 0) {
            sup_log("job %llu: cannot remove its network: %s", (unsigned long long)s->j->id, msg);
            if (s->st.reclaim_ok) {
                s->st.reclaim_ok = false;
                sup_errf(s->st.reclaim_msg, sizeof s->st.reclaim_msg,
                         "cannot remove the job's network: %s", msg);
            }
        }
    }
    if (!s->c->keep_scratch && s->scratch[0]) {
        /* a scratch dir left behind is a reclaim failure like a group left behind: the
         * node stops taking jobs rather than give a user's files to the next job */
        char msg[sizeof s->st.reclaim_msg];
        int rc = sup_scratch_remove(s->c->scratch_root, s->scratch, s->j->id, msg, sizeof msg);
        if (rc != 0)
            sup_log("job %llu: %s", (unsigned long long)s->j->id, msg);
        if (rc > 0) /* out of every job's reach: reported, and the node stays in service */
            str_copy(s->st.quarantined, sizeof s->st.quarantined, msg);
        if (rc < 0 && s->st.reclaim_ok) {
            s->st.reclaim_ok = false;
            str_copy(s->st.reclaim_msg, sizeof s->st.reclaim_msg, msg);
        }
    }
    s->st.end_ms = clock_now_ms();
    str_copy(s->st.state, sizeof s->st.state, "exited");
    sup_save(s);
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
    s.out_fd = s.err_fd = s.cg_fd = s.step_fd = s.net_fd = s.step_lfd = -1;
    s.spare_cg = spare_cg;
    s.inside = spare_cg != NULL;
    s.sfd = sfd;
    str_copy(s.dir, sizeof s.dir, dir);
    /* our own messages go to supervisor.log (sup_log) */
    snprintf(slog_path, sizeof slog_path, "%s/supervisor.log", dir);
    slog_fd = -1;
    s.st.job = j->id;
    s.st.sup_pid = getpid();
    s.st.sup_start = sup_proc_starttime(getpid());
    str_copy(s.st.state, sizeof s.st.state, "starting");
    s.runtime_known = sup_oci_runtime_file(c, &s.runtime_file) == 0;

    char err[512] = "";
    int rc = sfd < 0 ? -errno : sup_launch_job(&s, err, sizeof err);
    if (rc < 0) {
        sup_log("job %llu: launch failed: %s", (unsigned long long)j->id, err);
        s.st.exit_kind = AGENT_EXIT_LAUNCH_FAILED;
        s.st.exit_code = 0;
        str_copy(s.st.message, sizeof s.st.message, err[0] ? err : strerror(-rc));
        sup_tty_launch_failed(&s, s.st.message);
        finish(&s, false);
        _exit(0);
    }
    s.st.pid = s.leader;
    s.st.start_ms = clock_now_ms();
    s.started_at = clock_mono_ms();
    str_copy(s.st.state, sizeof s.st.state, "running");
    if (j->time_limit_ms > 0)
        set_limit(&s, j->time_limit_ms, true);
    s.lease_at = clock_mono_ms(); /* a first look at the lease at once */
    s.cap_at = c->log_limit_bytes > 0 ? clock_mono_ms() + SUP_CAP_CHECK_MS : 0;
    read_ctl(&s); /* commands that came before the signalfd existed */
    run_loop(&s, sfd);
    sup_tty_end(&s);
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
        sup_errf(err, errlen, "cannot create '%s': %s", jobs, strerror(errno));
        return -errno;
    }
    if (sup_job_dir(c, j->id, dir, dirlen) < 0 || (mkdir(dir, 0711) < 0 && errno != EEXIST)) {
        sup_errf(err, errlen, "cannot create job directory for job %llu: %s",
                 (unsigned long long)j->id, strerror(errno));
        return -errno;
    }
    char path[PATH_MAX + 300];
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, sup_state_files[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/reported", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/log_base", dir); /* left by an agent before runs */
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
    int rc = text ? sup_write_atomic(dir, "job.json", text) : -ENOMEM;
    free(text);
    if (rc < 0)
        sup_errf(err, errlen, "cannot write job files in '%s': %s", dir, strerror(-rc));
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
    /* "ID\n", then the job's secrets as one JSON object (or nothing), then EOF: the
     * secrets come this way because job.json, on disk, never holds them */
    struct dbuf in;
    dbuf_init(&in, 8u << 20);
    char chunk[4096];
    for (;;) {
        ssize_t n = read(3, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || dbuf_append(&in, chunk, (size_t)n) < 0)
            break;
    }
    size_t got = in.failed ? 0 : in.len;
    const char *buf = got ? in.data : "";
    char *end;
    unsigned long long id = strtoull(buf, &end, 10);
    char dir[PATH_MAX], path[PATH_MAX + 16];
    struct agent_job j;
    struct proto_error me = {0};
    json_error_t je;
    json_t *o = NULL;
    if (got && *end == '\n' && id > 0 && sup_job_dir(c, id, dir, sizeof dir) == 0) {
        snprintf(path, sizeof path, "%s/job.json", dir);
        o = json_load_file(path, 0, &je);
    }
    json_t *secrets = o && end[1] ? json_loads(end + 1, 0, &je) : NULL;
    int parsed = o ? agent_job_parse(json_object_get(o, "job"), &j, &me) : -EINVAL;
    if (parsed == 0 && secrets && agent_job_parse_secret_env(secrets, &j, &me) < 0) {
        agent_job_release(&j);
        parsed = -EINVAL;
    }
    if (in.data)
        memset(in.data, 0, in.len);
    dbuf_release(&in);
    json_decref(secrets);
    if (!o || parsed < 0) {
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
        sup_errf(err, errlen, "spares need cgroup v1 (v2 renames no groups)");
        return -EOPNOTSUPP;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        sup_errf(err, errlen, "cannot make a pipe: %s", strerror(errno));
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
        sup_errf(err, errlen, "cannot fork a spare supervisor: %s", strerror(e));
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
    struct dbuf out;
    dbuf_init(&out, 8u << 20);
    dbuf_append(&out, line, (size_t)n);
    if (j->nsecret > 0) { /* over the pipe, never through a file */
        json_t *s = agent_job_secret_env_json(j);
        char *text = s ? json_dumps(s, JSON_COMPACT) : NULL;
        json_decref(s);
        if (text)
            dbuf_puts(&out, text);
        if (text)
            memset(text, 0, strlen(text));
        free(text);
    }
    bool ok = !out.failed;
    size_t off = 0;
    int e = EPIPE;
    while (ok && off < out.len) { /* the spare reads as we write: the pipe may fill */
        ssize_t w = write(sp->fd, out.data + off, out.len - off);
        if (w > 0)
            off += (size_t)w;
        else if (!(w < 0 && errno == EINTR)) {
            e = w < 0 ? errno : EPIPE;
            ok = false;
        }
    }
    if (out.data)
        memset(out.data, 0, out.len);
    dbuf_release(&out);
    close(sp->fd);
    sp->fd = -1;
    if (!ok) {
        sup_errf(err, errlen, "spare supervisor %d is gone: %s", sp->pid, strerror(e));
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
        sup_errf(err, errlen, "cannot fork supervisor: %s", strerror(e));
        return -e;
    }
    *sup_pid = pid;
    return 0;
}
