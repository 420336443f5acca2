/*
 * lb.c - the services' HAProxy (lb.h, docs/services.md "The endpoint"): docketd runs
 * Debian's haproxy as its child with a configuration lbconf.c writes into
 * STATE_DIR/lb/haproxy.cfg, one frontend and one backend of server slots per service, and
 * drives the servers through the runtime API on the Unix socket STATE_DIR/lb/admin.sock
 * (`set server B/S addr A port P`, `set server B/S state ready|maint`). When services come
 * or go it starts a new haproxy with the new configuration and `-sf OLD`, which takes
 * over the listeners from the old one (its connections finish). A docketd that starts
 * and finds a haproxy of an earlier life (STATE_DIR/lb/haproxy.pid) takes over from it
 * the same way, so the endpoints stay up across a restart of docketd.
 */
#define _GNU_SOURCE
#include "controller/lb.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "controller/ctl.h"
#include "util/clock.h"
#include "util/dbuf.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

extern char **environ;

struct lb_backend {
    char name[64];
    int port;
    struct lb_slot had[LB_SLOTS]; /* what haproxy has now */
};

struct ctl_lb {
    pid_t pid;        /* the haproxy running, 0: none */
    bool ours;        /* it is our child (else one of an earlier docketd's) */
    pid_t old[8];     /* ones told to finish (-sf), reaped when they exit */
    int64_t retry_ms; /* monotonic: no new start before (after a failure) */
    struct lb_backend *be;
    int nbe;
    char host[256];
};

static struct ctl_lb *lb_of(struct ctl *c)
{
    if (!c->lb)
        c->lb = xcalloc(1, sizeof(*c->lb));
    return c->lb;
}

bool ctl_lb_on(const struct ctl *c)
{
    return c->cfg.lb_haproxy[0] != '\0';
}

const char *ctl_lb_host(const struct ctl *c)
{
    static char host[256];
    const char *b = c->cfg.lb_bind;
    if (strcmp(b, "0.0.0.0") != 0 && strcmp(b, "::") != 0 && strcmp(b, "*") != 0)
        return b;
    if (gethostname(host, sizeof(host) - 1) < 0)
        str_copy(host, sizeof(host), "localhost");
    return host;
}

static void lb_path(const struct ctl *c, char *out, size_t len, const char *file)
{
    snprintf(out, len, "%s/lb%s%s", c->cfg.state_dir, file[0] ? "/" : "", file);
}

/* Nobody listens on port (of lb_bind) now. */
static bool port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    bool ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

int ctl_lb_pick_port(struct ctl *c, const int *used, int nused)
{
    return lb_port_pick((int)c->cfg.lb_port_lo, (int)c->cfg.lb_port_hi, used, nused, port_free);
}

/* ------------------------------------------------------------------------------------ */
/* The process                                                                           */

static void reap(struct ctl_lb *lb)
{
    int status;
    for (size_t i = 0; i < sizeof(lb->old) / sizeof(lb->old[0]); i++)
        if (lb->old[i] > 0 && waitpid(lb->old[i], &status, WNOHANG) != 0)
            lb->old[i] = 0;
    if (lb->pid > 0 && lb->ours && waitpid(lb->pid, &status, WNOHANG) == lb->pid) {
        log_error("lb_exited", "pid=%d status=%d (see STATE_DIR/lb/haproxy.log)", (int)lb->pid,
                  status);
        lb->pid = 0;
        lb->nbe = 0; /* a new one starts with a new configuration */
    }
    if (lb->pid > 0 && !lb->ours && kill(lb->pid, 0) < 0)
        lb->pid = 0;
}

/* An earlier docketd's haproxy, from its pid file: taken over by the next start. */
static pid_t earlier_haproxy(const struct ctl *c)
{
    char path[CTL_PATH_MAX + 32], comm[64] = "";
    lb_path(c, path, sizeof(path), "haproxy.pid");
    FILE *f = fopen(path, "re");
    int pid = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%d", &pid) != 1)
        pid = 0;
    fclose(f);
    snprintf(path, sizeof(path), "/proc/%d/comm", pid);
    if (pid <= 0 || !(f = fopen(path, "re")))
        return 0;
    if (!fgets(comm, sizeof(comm), f))
        comm[0] = '\0';
    fclose(f);
    return strncmp(comm, "haproxy", 7) == 0 ? pid : 0;
}

static int write_file(const char *path, const char *text)
{
    char tmp[CTL_PATH_MAX + 40];
    snprintf(tmp, sizeof(tmp), "%s.new", path);
    FILE *f = fopen(tmp, "we");
    if (!f)
        return -errno;
    bool ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) < 0) {
        unlink(tmp);
        return -EIO;
    }
    return 0;
}

/* Wait (a second at most: only when services come or go) for the new haproxy's socket. */
static bool admin_up(const char *sock)
{
    for (int i = 0; i < 100; i++) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        str_copy(sa.sun_path, sizeof(sa.sun_path), sock);
        bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
        if (fd >= 0)
            close(fd);
        if (ok)
            return true;
        usleep(10000);
    }
    return false;
}

/* A new haproxy with the configuration of svcs, the one before told to finish. */
static int start(struct ctl *c, const struct ctl_lb_service *svcs, int n)
{
    struct ctl_lb *lb = lb_of(c);
    char dir[CTL_PATH_MAX + 8], cfg[CTL_PATH_MAX + 32], sock[CTL_PATH_MAX + 32],
        logf[CTL_PATH_MAX + 32], pidf[CTL_PATH_MAX + 32];
    lb_path(c, dir, sizeof(dir), "");
    lb_path(c, cfg, sizeof(cfg), "haproxy.cfg");
    lb_path(c, sock, sizeof(sock), "admin.sock");
    lb_path(c, logf, sizeof(logf), "haproxy.log");
    lb_path(c, pidf, sizeof(pidf), "haproxy.pid");
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    struct lb_frontend *fe = xcalloc((size_t)n + 1, sizeof(*fe));
    for (int i = 0; i < n; i++)
        fe[i] = (struct lb_frontend){svcs[i].name, svcs[i].port};
    struct dbuf text;
    dbuf_init(&text, 16 << 20);
    lb_config_text(&text, fe, n, c->cfg.lb_bind, sock);
    free(fe);
    int rc = write_file(cfg, text.data);
    dbuf_release(&text);
    if (rc < 0)
        return rc;
    pid_t old = lb->pid > 0 ? lb->pid : earlier_haproxy(c);
    char oldpid[16];
    snprintf(oldpid, sizeof(oldpid), "%d", (int)old);
    char *argv[] = {c->cfg.lb_haproxy, "-db", "-f", cfg, old > 0 ? "-sf" : NULL, oldpid, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, logf, O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    unlink(sock); /* the new one's socket, not the old one's, answers from here on */
    pid_t pid;
    rc = -posix_spawn(&pid, c->cfg.lb_haproxy, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc < 0)
        return rc;
    if (old > 0 && lb->ours)
        for (size_t i = 0; i < sizeof(lb->old) / sizeof(lb->old[0]); i++)
            if (lb->old[i] <= 0) {
                lb->old[i] = old;
                break;
            }
    lb->pid = pid;
    lb->ours = true;
    char pidtext[16];
    snprintf(pidtext, sizeof(pidtext), "%d\n", (int)pid);
    (void)write_file(pidf, pidtext);
    if (!admin_up(sock))
        log_warn("lb_slow", "pid=%d: its admin socket is not up yet", (int)pid);
    free(lb->be);
    lb->be = xcalloc((size_t)n + 1, sizeof(*lb->be));
    lb->nbe = n;
    for (int i = 0; i < n; i++) {
        str_copy(lb->be[i].name, sizeof(lb->be[i].name), svcs[i].name);
        lb->be[i].port = svcs[i].port;
    }
    log_info("lb_started", "pid=%d services=%d took_over=%d", (int)pid, n, (int)old);
    return 0;
}

/* The configuration of the one running covers exactly these services and ports. */
static bool same_services(const struct ctl_lb *lb, const struct ctl_lb_service *svcs, int n)
{
    if (lb->pid <= 0 || lb->nbe != n)
        return false;
    for (int i = 0; i < n; i++)
        if (strcmp(lb->be[i].name, svcs[i].name) != 0 || lb->be[i].port != svcs[i].port)
            return false;
    return true;
}

/* ------------------------------------------------------------------------------------ */
/* The runtime API                                                                       */

/* Send the commands (one a line) on the admin socket, each answered before the next. */
static int admin_send(const struct ctl *c, const char *cmds)
{
    char sock[CTL_PATH_MAX + 32];
    lb_path(c, sock, sizeof(sock), "admin.sock");
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    str_copy(sa.sun_path, sizeof(sa.sun_path), sock);
    struct timeval tv = {.tv_sec = 1};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return -e;
    }
    /* one line of commands separated by ';': haproxy runs them in order and closes */
    struct dbuf line;
    dbuf_init(&line, 1 << 20);
    for (const char *p = cmds; *p; p++)
        dbuf_printf(&line, "%c", *p == '\n' ? (p[1] ? ';' : '\n') : *p);
    size_t off = 0;
    int rc = 0;
    while (off < line.len) {
        ssize_t w = send(fd, line.data + off, line.len - off, MSG_NOSIGNAL);
        if (w <= 0) {
            rc = -EIO;
            break;
        }
        off += (size_t)w;
    }
    dbuf_release(&line);
    char answer[512];
    ssize_t r;
    while (rc == 0 && (r = read(fd, answer, sizeof(answer) - 1)) > 0) {
        answer[r] = '\0';
        if (strstr(answer, "No such") || strstr(answer, "Require") || strstr(answer, "nvalid"))
            log_warn("lb_command_refused", "answer=\"%.200s\"", answer);
    }
    close(fd);
    return rc;
}

static void sync_backend(struct ctl *c, struct lb_backend *be, const struct ctl_lb_service *s)
{
    struct lb_slot next[LB_SLOTS];
    char name[96];
    lb_assign(be->had, s->want, s->nwant, next);
    lb_backend_name(name, sizeof(name), be->name);
    struct dbuf cmds;
    dbuf_init(&cmds, 1 << 20);
    if (lb_commands(&cmds, name, be->had, next) > 0) {
        int rc = admin_send(c, cmds.data);
        if (rc == 0)
            memcpy(be->had, next, sizeof(next));
        else
            log_warn("lb_sync_failed", "backend=%s error=\"%s\"", name, strerror(-rc));
    }
    dbuf_release(&cmds);
}

void ctl_lb_sync(struct ctl *c, const struct ctl_lb_service *svcs, int n)
{
    if (!ctl_lb_on(c) || c->standby)
        return;
    struct ctl_lb *lb = lb_of(c);
    reap(lb);
    if (!same_services(lb, svcs, n)) {
        if (clock_mono_ms() < lb->retry_ms)
            return;
        int rc = start(c, svcs, n);
        if (rc < 0) {
            log_error("lb_start_failed", "haproxy=%s error=\"%s\"", c->cfg.lb_haproxy,
                      strerror(-rc));
            lb->retry_ms = clock_mono_ms() + 5000;
            return;
        }
    }
    for (int i = 0; i < n; i++)
        sync_backend(c, &lb->be[i], &svcs[i]);
}

void ctl_lb_free(struct ctl *c)
{
    struct ctl_lb *lb = c->lb;
    if (!lb)
        return;
    if (lb->pid > 0 && lb->ours) { /* a docketd that stops takes its endpoints along */
        kill(lb->pid, SIGTERM);
        (void)waitpid(lb->pid, NULL, 0);
        char pidf[CTL_PATH_MAX + 32];
        lb_path(c, pidf, sizeof(pidf), "haproxy.pid");
        unlink(pidf);
    }
    free(lb->be);
    free(lb);
    c->lb = NULL;
}
