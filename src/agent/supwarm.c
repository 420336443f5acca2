/*
 * supwarm.c - a template's prepare script, built once per node and template version
 * (docs/environments.md "Warm environments"): STATE_DIR/envs/NAME@VERSION holds what it
 * built, STATE_DIR/envs/NAME@VERSION.log its output, `.ready` inside says it finished.
 * The first job of a version on a node runs it, inside its own cgroup (its limits hold,
 * a cancel stops it) and as the agent's user (the script is the site's, from the policy
 * file, like a prolog); a job of the same version starting meanwhile waits on the lock
 * and then reuses it. A failed prepare is removed, and ends only the job that ran it,
 * with the log's end on its stderr. docket-node's own warm orders (warm.c) build the same
 * directory the same way, outside any job (env_prepare, envprep.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/envprep.h"
#include "agent/sup_int.h"

/* The last `max` bytes of the file at path, into the job's stderr. */
static void copy_tail(const char *path, int to, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || to < 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    off_t end = lseek(fd, 0, SEEK_END);
    lseek(fd, end > (off_t)max ? end - (off_t)max : 0, SEEK_SET);
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        if (write(to, buf, (size_t)n) != n)
            break;
    close(fd);
}

/* A line on the job's stderr (before the job runs): what happens to its environment. */
static void say(int fd, const char *line)
{
    if (fd >= 0 && write(fd, line, strlen(line)) < 0)
        return; /* the job's stderr is full or gone: the node's log keeps it */
}

/* Whether the agent asked this job to stop (a ctl.* command naming kill or signal, which
 * the supervisor reads only once the job is launched): a cancel must not wait for a long
 * prepare to end. */
bool sup_stop_asked(const struct sup *s)
{
    DIR *d = opendir(s->dir);
    struct dirent *e;
    bool stop = false;
    while (d && !stop && (e = readdir(d))) {
        char cmd[16] = "";
        if (strncmp(e->d_name, "ctl.", 4) != 0)
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        ssize_t n = fd >= 0 ? read(fd, cmd, sizeof cmd - 1) : -1;
        if (fd >= 0)
            close(fd);
        stop = n > 0 && (strncmp(cmd, "kill", 4) == 0 || strncmp(cmd, "signal", 6) == 0);
    }
    if (d)
        closedir(d);
    return stop;
}

/* sup_int.h */
int sup_wait_group(pid_t pid, long tick_ms, bool (*stopped)(void *), void *arg)
{
    /* SIGUSR1 (a command came) and SIGCHLD are blocked in the supervisor (its signalfd
     * takes them once the job runs): waited for here. A SIGUSR1 consumed here is no
     * loss: the supervisor reads every command file when the job is launched. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGCHLD);
    struct timespec tick = {tick_ms / 1000, (tick_ms % 1000) * 1000 * 1000};
    bool killed = false;
    for (;;) {
        int status;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (w < 0 && errno != EINTR)
            return -errno;
        sigtimedwait(&set, NULL, &tick);
        if (!killed && stopped && stopped(arg)) {
            kill(-pid, SIGKILL);
            killed = true;
        }
    }
}

/* Run the prepare script in dir, its output to log; its exit status (or -errno). */
static int run_prepare(const struct env_prep *p, const char *dir, const char *log)
{
    int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (out < 0)
        return -errno;
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        /* the supervisor's blocked signals are not the script's; its own process group,
         * so a stop reaches what it started */
        sigprocmask(SIG_SETMASK, &none, NULL);
        setsid();
        if (p->in_child)
            p->in_child(p->arg);
        int null = open("/dev/null", O_RDONLY);
        if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 || chdir(dir) < 0)
            _exit(126);
        char home[PATH_MAX + 8], envdir[PATH_MAX + 20], tpl[100];
        snprintf(home, sizeof home, "HOME=%s", dir);
        snprintf(envdir, sizeof envdir, "DOCKET_ENV_DIR=%s", dir);
        snprintf(tpl, sizeof tpl, "DOCKET_TEMPLATE=%s", p->key);
        char *env[] = {"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
                       home,
                       envdir,
                       tpl,
                       "LANG=C.UTF-8",
                       NULL};
        execle("/bin/sh", "sh", "-c", p->script, (char *)NULL, env);
        _exit(127);
    }
    close(out);
    return pid < 0 ? -errno : sup_wait_group(pid, 200, p->stopped, p->arg);
}

/* Build dir under the lock held by the caller; 0, or an error with the log on log_fd. */
static int build(const struct env_prep *p, const char *dir, char *err, size_t errlen)
{
    char log[PATH_MAX + 8], ready[PATH_MAX + 8];
    snprintf(log, sizeof log, "%s.log", dir);
    snprintf(ready, sizeof ready, "%s/.ready", dir);
    sup_remove_tree(dir); /* a build cut short (the node rebooted) starts over */
    if (mkdir(dir, 0755) < 0) {
        sup_errf(err, errlen, "environment %s: cannot make '%s': %s", p->key, dir, strerror(errno));
        return -errno;
    }
    if (p->building)
        p->building(p->arg);
    int rc = run_prepare(p, dir, log);
    int fd = rc == 0 ? open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) : -1;
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    copy_tail(log, p->log_fd, 8192);
    char line[256];
    snprintf(line, sizeof line, "docket: template %s: prepare failed (exit %d)\n", p->key, rc);
    say(p->log_fd, line);
    sup_remove_tree(dir);
    sup_errf(err, errlen, "environment %s: prepare failed (exit %d); its log is %s", p->key, rc,
             p->log_fd >= 0 ? "the job's stderr" : log);
    return -EIO;
}

int env_prepare(const struct env_prep *p, char *dir, size_t dirlen, char *err, size_t errlen)
{
    char envs[PATH_MAX], lock[PATH_MAX + 8], ready[PATH_MAX + 8];
    dir[0] = '\0';
    if (!p->script)
        return 0;
    snprintf(envs, sizeof envs, "%s/envs", p->state_dir);
    if (mkdir(envs, 0755) < 0 && errno != EEXIST) {
        sup_errf(err, errlen, "cannot make '%s': %s", envs, strerror(errno));
        return -errno;
    }
    snprintf(dir, dirlen, "%s/%s", envs, p->key);
    snprintf(ready, sizeof ready, "%s/.ready", dir);
    if (access(ready, F_OK) == 0)
        return 0; /* warm: the common case, no lock taken */
    snprintf(lock, sizeof lock, "%s.lock", dir);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        sup_errf(err, errlen, "cannot open '%s': %s", lock, strerror(errno));
        return -errno;
    }
    /* a job or a warm order of the same version preparing it now: wait for it, then use
     * what it built */
    while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
        ;
    int rc = access(ready, F_OK) == 0 ? 0 : build(p, dir, err, errlen);
    close(fd);
    return rc;
}

/* ---- for a job: the supervisor's hooks ------------------------------------------------ */

static void job_building(void *arg)
{
    struct sup *s = arg;
    char line[256];
    snprintf(line, sizeof line, "docket: preparing environment %s on this node (once a version)\n",
             s->j->env_key);
    say(s->err_fd, line);
    /* JOBDIR/preparing: the agent sees it and tells docketd (an event, and `explain`) */
    if (sup_write_atomic(s->dir, "preparing", s->j->env_key) < 0)
        sup_log("job %llu: cannot write %s/preparing", (unsigned long long)s->j->id, s->dir);
    sup_log("job %llu: preparing environment %s", (unsigned long long)s->j->id, s->j->env_key);
}

static void job_in_child(void *arg)
{
    struct sup *s = arg;
    char err[256];
    if (s->use_cg && cg_job_attach(&s->cg, 0, err, sizeof err) < 0)
        _exit(126);
}

static bool job_stopped(void *arg)
{
    struct sup *s = arg;
    if (!sup_stop_asked(s))
        return false;
    sup_log("job %llu: stopped while preparing %s", (unsigned long long)s->j->id, s->j->env_key);
    return true;
}

int sup_warm_environment(struct sup *s, char *dir, size_t dirlen, char *err, size_t errlen)
{
    struct env_prep p = {.state_dir = s->c->state_dir,
                         .key = s->j->env_key,
                         .script = s->j->prepare,
                         .log_fd = s->err_fd,
                         .building = job_building,
                         .in_child = job_in_child,
                         .stopped = job_stopped,
                         .arg = s};
    return env_prepare(&p, dir, dirlen, err, errlen);
}
