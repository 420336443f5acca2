/*
 * probe.c - a service replica's port and probes on this node (docs/services.md, "Ports
 * and probes"; agent_int.h): the port of the --service-ports range a replica gets ($PORT,
 * reported with its start), and the liveness and readiness probes of its start command,
 * each run in a short-lived child every period and reported to docketd when its verdict
 * changes. The agent holds no policy: it runs what the spec gives and reports; docketd
 * decides what a failure means (a restart, no traffic).
 *
 * One run is one child: an http probe GETs the path on 127.0.0.1:PORT (a status 200-399
 * passes), a tcp probe connects, an exec probe runs its command as the job's user with
 * the job's environment. The child writes why it failed on a pipe and exits 0 or 1; it
 * has alarm(timeout) and the agent kills it a little after the timeout all the same.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

struct ag_probe {
    struct ag_probe *next; /* the agent's list (a->probes) */
    struct agent *a;
    uint64_t job;
    int run;
    const char *name; /* "liveness" or "readiness" */
    struct proto_probe p;
    int port; /* where http and tcp probes go */
    char user[AGENT_NAME_MAX];
    char **env; /* exec: the job's environment, NULL-terminated */
    struct event *timer;
    pid_t pid;        /* the run in flight, 0: none */
    int fd;           /* its pipe's read end */
    int64_t deadline; /* monotonic: killed past it */
    int fails;        /* failures in a row */
    int verdict;      /* last reported: -1 none, 0 failed, 1 ok */
};

/* ------------------------------------------------------------------------------------ */
/* Ports                                                                                 */

static bool port_held(const struct agent *a, int port)
{
    for (const struct ajob *j = a->jobs; j; j = j->next)
        if (!j->exited && j->port == port)
            return true;
    return false;
}

/* A port nobody listens on now (a bind of 0.0.0.0 succeeds). */
static bool port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    bool ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return ok;
}

int ag_port_take(struct agent *a)
{
    int lo = a->cfg.service_port_lo, hi = a->cfg.service_port_hi;
    if (lo <= 0)
        return 0;
    /* from the one after the last given: a port just freed is not handed out again at
       once (a client of the old replica may still hold it in its table) */
    int n = hi - lo + 1;
    for (int i = 0; i < n; i++) {
        int port = lo + (a->port_next - lo + i + n) % n;
        if (!port_held(a, port) && port_free(port)) {
            a->port_next = port + 1 > hi ? lo : port + 1;
            return port;
        }
    }
    return -EADDRINUSE;
}

/* ------------------------------------------------------------------------------------ */
/* One run, in a child                                                                   */

static void say(int fd, const char *what, const char *arg)
{
    char buf[256];
    int n = snprintf(buf, sizeof buf, "%s%s", what, arg);
    if (n > 0 && write(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1) < 0)
        _exit(1);
}

static int connect_local(int port, int out)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        say(out, "connect: ", strerror(errno));
        _exit(1);
    }
    return fd;
}

static void __attribute__((noreturn)) run_http(const struct ag_probe *pr, int out)
{
    int fd = connect_local(pr->p.port ? pr->p.port : pr->port, out);
    char req[PROTO_PROBE_PATH_MAX + 96], resp[64] = "";
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", pr->p.path);
    if (n < 0 || write(fd, req, (size_t)n) != n) {
        say(out, "send: ", strerror(errno));
        _exit(1);
    }
    size_t got = 0;
    ssize_t r;
    while (got < sizeof resp - 1 && (r = read(fd, resp + got, sizeof resp - 1 - got)) > 0)
        got += (size_t)r;
    resp[got] = '\0';
    int status = 0;
    if (sscanf(resp, "HTTP/%*d.%*d %d", &status) != 1) {
        say(out, got ? "no HTTP status line" : "no answer", "");
        _exit(1);
    }
    if (status < 200 || status > 399) {
        char *eol = strpbrk(resp, "\r\n");
        if (eol)
            *eol = '\0';
        say(out, "answered ", resp);
        _exit(1);
    }
    _exit(0);
}

static void __attribute__((noreturn)) run_exec(const struct ag_probe *pr, int out)
{
    if (geteuid() == 0 && pr->user[0]) { /* never as root for a user's job */
        struct passwd *pw = getpwnam(pr->user);
        if (!pw || initgroups(pw->pw_name, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
            setuid(pw->pw_uid) < 0) {
            say(out, "cannot become user ", pr->user);
            _exit(1);
        }
    }
    if (chdir("/") < 0)
        _exit(1);
    char *argv[PROTO_PROBE_ARGV_MAX + 1];
    size_t n = json_array_size(pr->p.command);
    for (size_t i = 0; i < n && i < PROTO_PROBE_ARGV_MAX; i++)
        argv[i] = (char *)json_string_value(json_array_get(pr->p.command, i));
    argv[n < PROTO_PROBE_ARGV_MAX ? n : PROTO_PROBE_ARGV_MAX] = NULL;
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
    }
    execvpe(argv[0], argv, pr->env);
    say(out, "cannot run ", argv[0]);
    _exit(1);
}

static void __attribute__((noreturn)) run_child(const struct ag_probe *pr, int out)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGALRM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    alarm((unsigned)((pr->p.timeout_ms + 999) / 1000));
    if (pr->p.kind == PROTO_PROBE_HTTP)
        run_http(pr, out);
    if (pr->p.kind == PROTO_PROBE_TCP) {
        (void)connect_local(pr->p.port ? pr->p.port : pr->port, out);
        _exit(0);
    }
    run_exec(pr, out);
}

/* ------------------------------------------------------------------------------------ */
/* The agent's side                                                                      */

static void report(struct ag_probe *pr, bool ok, const char *why)
{
    struct agent_event e;
    memset(&e, 0, sizeof e);
    e.job = pr->job;
    e.run = pr->run;
    str_copy(e.type, sizeof e.type, "probe");
    e.time_ms = clock_now_ms();
    str_copy(e.probe, sizeof e.probe, pr->name);
    e.probe_ok = ok;
    str_copy(e.message, sizeof e.message, why);
    pr->verdict = ok;
    log_info("probe", "job=%llu probe=%s ok=%s message=\"%s\"", (unsigned long long)pr->job,
             pr->name, ok ? "true" : "false", why);
    ag_queue_event(pr->a, agent_event_to_json(&e), 0);
    ag_kick_post(pr->a);
}

/* A run's verdict: a pass reports ok when the last word was not; failure_threshold
 * failures in a row report failed once. */
static void verdict(struct ag_probe *pr, bool ok, const char *why)
{
    pr->fails = ok ? 0 : pr->fails + 1;
    if (ok && pr->verdict != 1)
        report(pr, true, "");
    else if (!ok && pr->fails >= pr->p.failure_threshold && pr->verdict != 0)
        report(pr, false, why);
}

static void arm(struct ag_probe *pr, int64_t ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    evtimer_add(pr->timer, &tv);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct ag_probe *pr = arg;
    if (pr->pid > 0) { /* still running: past its time, it failed */
        if (clock_mono_ms() >= pr->deadline)
            kill(pr->pid, SIGKILL); /* its reap gives the verdict */
        arm(pr, 100);
        return;
    }
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        arm(pr, pr->p.period_ms);
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        run_child(pr, pipefd[1]);
    }
    close(pipefd[1]);
    if (pid < 0) {
        close(pipefd[0]);
        verdict(pr, false, "cannot fork");
        arm(pr, pr->p.period_ms);
        return;
    }
    (void)fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
    pr->pid = pid;
    pr->fd = pipefd[0];
    pr->deadline = clock_mono_ms() + pr->p.timeout_ms + 500;
    arm(pr, pr->p.timeout_ms + 600); /* the next run is armed at the reap */
}

bool ag_probe_reaped(struct agent *a, pid_t pid, int status)
{
    for (struct ag_probe *pr = a->probes; pr; pr = pr->next) {
        if (pr->pid != pid)
            continue;
        char why[200] = "";
        ssize_t n = read(pr->fd, why, sizeof why - 1);
        why[n > 0 ? n : 0] = '\0';
        close(pr->fd);
        pr->pid = 0;
        bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!ok && !why[0] && WIFSIGNALED(status))
            snprintf(why, sizeof why, "timed out after %lld ms", (long long)pr->p.timeout_ms);
        else if (!ok && !why[0])
            snprintf(why, sizeof why, "exit code %d", WEXITSTATUS(status));
        verdict(pr, ok, why);
        evtimer_del(pr->timer);
        arm(pr, pr->p.period_ms);
        return true;
    }
    return false;
}

static char **env_dup(char **env)
{
    size_t n = 0;
    while (env && env[n])
        n++;
    char **out = xcalloc(n + 2, sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = xstrdup(env[i]);
    return out;
}

static void probe_add(struct agent *a, struct ajob *j, const char *name,
                      const struct proto_probe *p, const char *user, char **env)
{
    if (p->kind == PROTO_PROBE_NONE)
        return;
    struct ag_probe *pr = xcalloc(1, sizeof *pr);
    pr->a = a;
    pr->job = j->id;
    pr->run = j->run;
    pr->name = name;
    pr->p = *p;
    pr->p.command = json_incref(p->command);
    pr->port = j->port;
    pr->verdict = -1;
    str_copy(pr->user, sizeof pr->user, user);
    pr->env = env_dup(env);
    pr->timer = evtimer_new(a->base, tick_cb, pr);
    if (!pr->timer) {
        log_error("probe_failed", "job=%llu message=\"no memory for its timer\"",
                  (unsigned long long)j->id);
        proto_probe_release(&pr->p);
        free(pr);
        return;
    }
    pr->next = a->probes;
    a->probes = pr;
    arm(pr, p->initial_delay_ms);
}

void ag_probes_start(struct agent *a, struct ajob *j, const struct agent_job *spec)
{
    probe_add(a, j, "liveness", &spec->liveness, spec->user, spec->env);
    probe_add(a, j, "readiness", &spec->readiness, spec->user, spec->env);
}

void ag_probes_adopt(struct agent *a, struct ajob *j, const json_t *job)
{
    struct agent_job spec;
    struct proto_error e;
    if (!json_is_object(json_object_get(job, "service")) || agent_job_parse(job, &spec, &e) < 0)
        return;
    for (int i = 0; i < spec.nenv; i++)
        if (strncmp(spec.env[i], "PORT=", 5) == 0)
            j->port = atoi(spec.env[i] + 5);
    ag_probes_start(a, j, &spec);
    agent_job_release(&spec);
}

void ag_probes_stop(struct agent *a, uint64_t job)
{
    for (struct ag_probe **p = &a->probes; *p;) {
        struct ag_probe *pr = *p;
        if (job && pr->job != job) {
            p = &pr->next;
            continue;
        }
        *p = pr->next;
        if (pr->pid > 0) { /* reaped by the SIGCHLD handler as a stranger */
            kill(pr->pid, SIGKILL);
            close(pr->fd);
        }
        event_free(pr->timer);
        for (char **e = pr->env; e && *e; e++)
            free(*e);
        free(pr->env);
        proto_probe_release(&pr->p);
        free(pr);
    }
}
