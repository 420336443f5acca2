/*
 * suptty.c - an interactive session's terminal, in the job's supervisor
 * (docs/interactive.md). The job runs on a PTY whose slave is its controlling terminal;
 * the supervisor holds the master and serves it on JOBDIR/tty.sock to the agent, which
 * joins that socket to docketd's upgraded connection. Frames (protocol/ttyframe.h) come
 * from the person's CLI as they were sent: keystrokes go to the master (so Ctrl-C is the
 * line discipline's to turn into SIGINT for the foreground group), a window size becomes
 * TIOCSWINSZ (and the kernel's SIGWINCH), a signal goes to the foreground group. The
 * PTY's output goes to the attached client and into a ring of the last SUP_TTY_RING
 * bytes, replayed to a client that attaches later (docket attach).
 *
 * The command is launched only once the first client has attached (its HELLO gives the
 * window size), so nothing it prints is lost and `docket shell -- true` still sees its
 * exit. No input and no output for the session's idle time brings a warning, then, after
 * a tenth of that time more, the end (SIGHUP, as a terminal hang-up would).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/sup_int.h"
#include "protocol/ttyframe.h"
#include "util/clock.h"
#include "util/str.h"

enum {
    SUP_TTY_RING = 64 * 1024,
    SUP_TTY_OUT = 256 * 1024,
    SUP_TTY_IN = TTY_FRAME_HEAD + TTY_FRAME_MAX
};

struct sup_tty {
    int master, slave;
    int lfd;    /* JOBDIR/tty.sock, listening */
    int cfd;    /* the attached client (the agent's relay), or -1 */
    bool hello; /* the client said HELLO: it takes output */
    uint8_t in[SUP_TTY_IN];
    size_t inlen;
    uint8_t *out; /* to the client, not yet written */
    size_t outlen;
    uint8_t ring[SUP_TTY_RING];
    size_t ring_start, ring_len;
    int64_t idle_ms, last_mono;
    bool warned;
    bool hup; /* the PTY has no writer left (EIO): not polled any more */
    char workdir[PATH_MAX];
};

/* ------------------------------------------------------------------------------------ */
/* Output to the client                                                                  */

static void client_drop(struct sup_tty *t)
{
    if (t->cfd >= 0)
        close(t->cfd);
    t->cfd = -1;
    t->hello = false;
    t->inlen = t->outlen = 0;
}

static void client_queue(struct sup_tty *t, int type, const void *p, size_t n)
{
    if (t->cfd < 0 || !t->hello)
        return;
    while (n > 0 || type != TTY_DATA) {
        size_t part = n > TTY_FRAME_MAX ? TTY_FRAME_MAX : n;
        size_t w = tty_frame_put(t->out + t->outlen, SUP_TTY_OUT - t->outlen, type, p, part);
        if (w == 0) { /* a client that reads nothing: it goes, and may attach again */
            sup_log("tty: client too slow, dropped");
            client_drop(t);
            return;
        }
        t->outlen += w;
        p = (const uint8_t *)p + part;
        n -= part;
        if (type != TTY_DATA)
            break;
    }
}

static void client_flush(struct sup_tty *t)
{
    while (t->cfd >= 0 && t->outlen > 0) {
        ssize_t w = send(t->cfd, t->out, t->outlen, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (w <= 0) {
            client_drop(t);
            return;
        }
        memmove(t->out, t->out + w, t->outlen - (size_t)w);
        t->outlen -= (size_t)w;
    }
}

static void notice(struct sup_tty *t, const char *text)
{
    client_queue(t, TTY_NOTICE, text, strlen(text));
    client_flush(t);
}

/* ------------------------------------------------------------------------------------ */
/* The ring of recent output                                                             */

static void ring_add(struct sup_tty *t, const uint8_t *p, size_t n)
{
    if (n >= SUP_TTY_RING) {
        p += n - SUP_TTY_RING;
        n = SUP_TTY_RING;
    }
    for (size_t i = 0; i < n; i++) {
        size_t at = (t->ring_start + t->ring_len) % SUP_TTY_RING;
        t->ring[at] = p[i];
        if (t->ring_len < SUP_TTY_RING)
            t->ring_len++;
        else
            t->ring_start = (t->ring_start + 1) % SUP_TTY_RING;
    }
}

static void ring_replay(struct sup_tty *t)
{
    size_t first = SUP_TTY_RING - t->ring_start;
    if (first > t->ring_len)
        first = t->ring_len;
    client_queue(t, TTY_DATA, t->ring + t->ring_start, first);
    client_queue(t, TTY_DATA, t->ring, t->ring_len - first);
}

/* ------------------------------------------------------------------------------------ */
/* Set-up                                                                                */

/* JOBDIR/tty.sock through /proc/self/fd (a state directory's path may be longer than
 * sun_path holds). */
static int sock_addr(const char *dir, struct sockaddr_un *sa, int *dfd)
{
    *dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (*dfd < 0)
        return -errno;
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    snprintf(sa->sun_path, sizeof sa->sun_path, "/proc/self/fd/%d/tty.sock", *dfd);
    return 0;
}

int sup_tty_connect(const char *jobdir)
{
    struct sockaddr_un sa;
    int dfd, rc = sock_addr(jobdir, &sa, &dfd);
    if (rc < 0)
        return rc;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    rc = fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ? -errno : fd;
    if (rc < 0 && fd >= 0)
        close(fd);
    close(dfd);
    return rc;
}

static int listen_sock(struct sup *s)
{
    struct sockaddr_un sa;
    int dfd, rc = sock_addr(s->dir, &sa, &dfd);
    if (rc < 0)
        return rc;
    unlinkat(dfd, "tty.sock", 0);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    /* the socket is the agent's alone (0600, made so: no moment when it is open wider),
     * in the agent's job directory: no job, of this user or another, connects to it */
    mode_t old = umask(0177);
    rc = fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ? -errno : 0;
    umask(old);
    if (rc < 0 || listen(fd, 4) < 0) {
        rc = rc < 0 ? rc : -errno;
        if (fd >= 0)
            close(fd);
        close(dfd);
        return rc;
    }
    close(dfd);
    return fd;
}

/* The session's working directory, kept across sessions: SESSION_ROOT/PROJECT/USER
 * (docs/interactive.md "Working directory"), made as root one component at a time, never
 * through a link; the last one the user's, 0700. */
static int make_workdir(struct sup *s, char *err, size_t errlen)
{
    const char *root = s->c->session_root;
    const char *parts[] = {s->j->project, s->user};
    int dfd = open(root, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0 && errno == ENOENT && mkdir(root, 0755) == 0)
        dfd = open(root, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        sup_errf(err, errlen, "cannot open session root '%s': %s", root, strerror(errno));
        return -errno;
    }
    for (int i = 0; i < 2; i++) {
        if (!parts[i][0] || strchr(parts[i], '/') || parts[i][0] == '.') {
            close(dfd);
            sup_errf(err, errlen, "cannot make a session directory for '%s'", parts[i]);
            return -EINVAL;
        }
        if (mkdirat(dfd, parts[i], i == 0 ? 0755 : 0700) < 0 && errno != EEXIST) {
            int e = errno;
            close(dfd);
            sup_errf(err, errlen, "cannot make session directory '%s/%s': %s", root, parts[i],
                     strerror(e));
            return -e;
        }
        int next = openat(dfd, parts[i], O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(dfd);
        if (next < 0) {
            sup_errf(err, errlen, "cannot open session directory '%s/%s': %s", root, parts[i],
                     strerror(errno));
            return -errno;
        }
        dfd = next;
    }
    int rc = geteuid() == 0 && fchown(dfd, s->uid, s->gid) < 0 ? -errno : 0;
    close(dfd);
    if (rc < 0) {
        sup_errf(err, errlen, "cannot give the session directory to '%s': %s", s->user,
                 strerror(-rc));
        return rc;
    }
    snprintf(s->tty->workdir, sizeof s->tty->workdir, "%s/%s/%s", root, s->j->project, s->user);
    return 0;
}

int sup_tty_prepare(struct sup *s, char *err, size_t errlen)
{
    struct sup_tty *t = calloc(1, sizeof *t);
    uint8_t *out = malloc(SUP_TTY_OUT);
    if (!t || !out) {
        free(t);
        free(out);
        sup_errf(err, errlen, "cannot set up the terminal: out of memory");
        return -ENOMEM;
    }
    t->out = out;
    t->master = t->slave = t->lfd = t->cfd = -1;
    t->idle_ms = s->j->tty_idle_ms;
    s->tty = t;
    if (openpty(&t->master, &t->slave, NULL, NULL, NULL) < 0) {
        sup_errf(err, errlen, "cannot open a terminal: %s", strerror(errno));
        return -errno;
    }
    fcntl(t->master, F_SETFD, FD_CLOEXEC);
    fcntl(t->master, F_SETFL, O_NONBLOCK);
    fcntl(t->slave, F_SETFD, FD_CLOEXEC);
    if (geteuid() == 0 && fchown(t->slave, s->uid, -1) < 0) {
        sup_errf(err, errlen, "cannot give the terminal to '%s': %s", s->user, strerror(errno));
        return -errno;
    }
    if ((t->lfd = listen_sock(s)) < 0) {
        sup_errf(err, errlen, "cannot serve the terminal on '%s/tty.sock': %s", s->dir,
                 strerror(-t->lfd));
        return t->lfd;
    }
    if (!(s->j->workdir && *s->j->workdir))
        return make_workdir(s, err, errlen);
    return 0;
}

const char *sup_tty_workdir(const struct sup *s)
{
    return s->tty && s->tty->workdir[0] ? s->tty->workdir : NULL;
}

/* In the job's child, after setsid: the slave becomes the controlling terminal and the
 * standard descriptors. */
int sup_tty_child(struct sup *s)
{
    int fd = s->tty->slave;
    if (ioctl(fd, TIOCSCTTY, 0) < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
        return -1;
    return 0;
}

static void take_frames(struct sup_tty *t, int64_t now, bool until_hello);

void sup_tty_spawned(struct sup *s)
{
    close(s->tty->slave);
    s->tty->slave = -1;
    take_frames(s->tty, clock_mono_ms(), false); /* typed while the command started */
}

/* ------------------------------------------------------------------------------------ */
/* The running session                                                                   */

static void take_client(struct sup_tty *t)
{
    int fd = accept4(t->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    /* the agent only (our uid): the socket's mode says so, its peer's credentials too */
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != geteuid()) {
        sup_log("tty: a connection from uid %d refused", len == sizeof cred ? (int)cred.uid : -1);
        close(fd);
        return;
    }
    client_drop(t); /* a new client (a reattach) takes over */
    t->cfd = fd;
}

static void set_window(struct sup_tty *t, unsigned rows, unsigned cols)
{
    struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
    ioctl(t->master, TIOCSWINSZ, &ws);
}

static void write_master(struct sup_tty *t, const uint8_t *p, size_t n)
{
    /* a blocking write: the master is non-blocking, so a full input queue (a program
     * that reads nothing) drops the keystrokes rather than stall the supervisor */
    while (n > 0) {
        ssize_t w = write(t->master, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void on_frame(struct sup_tty *t, const struct tty_frame *f)
{
    switch (f->type) {
    case TTY_HELLO:
        set_window(t, f->rows, f->cols);
        t->hello = true;
        ring_replay(t);
        break;
    case TTY_WINDOW:
        set_window(t, f->rows, f->cols);
        break;
    case TTY_DATA:
        if (t->hello)
            write_master(t, f->payload, f->len);
        break;
    case TTY_SIGNAL: {
        pid_t pg = tcgetpgrp(t->master);
        if (pg > 0)
            kill(-pg, f->signal);
        break;
    }
    default: /* NOTICE and EXIT go the other way: a client sending them is confused */
        client_drop(t);
    }
}

/* The frames read so far; before the launch (`until_hello`) only up to the HELLO: what
 * was typed after it waits for the command to exist. */
static void take_frames(struct sup_tty *t, int64_t now, bool until_hello)
{
    size_t at = 0;
    while (t->cfd >= 0 && !(until_hello && t->hello)) {
        struct tty_frame f;
        int n = tty_frame_parse(t->in + at, t->inlen - at, &f);
        if (n < 0) {
            sup_log("tty: bad frame from the client, dropped");
            client_drop(t);
            return;
        }
        if (n == 0)
            break;
        if (f.type == TTY_DATA) {
            t->last_mono = now;
            t->warned = false;
        }
        on_frame(t, &f);
        at += (size_t)n;
    }
    if (t->cfd < 0)
        return;
    memmove(t->in, t->in + at, t->inlen - at);
    t->inlen -= at;
}

static void read_client(struct sup_tty *t, int64_t now, bool until_hello)
{
    ssize_t r = recv(t->cfd, t->in + t->inlen, sizeof t->in - t->inlen, MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (r <= 0) {
        client_drop(t);
        return;
    }
    t->inlen += (size_t)r;
    take_frames(t, now, until_hello);
}

/* The PTY's output: into the ring, and to the client. false once it has none to give. */
static bool read_master(struct sup_tty *t, int64_t now)
{
    uint8_t buf[TTY_FRAME_MAX];
    ssize_t r = read(t->master, buf, sizeof buf);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return true;
    if (r <= 0) /* EIO: every slave descriptor is closed */
        return false;
    t->last_mono = now;
    t->warned = false;
    ring_add(t, buf, (size_t)r);
    client_queue(t, TTY_DATA, buf, (size_t)r);
    return true;
}

int sup_tty_pollfds(struct sup *s, struct pollfd *p)
{
    struct sup_tty *t = s->tty;
    int n = 0;
    if (!t)
        return 0;
    p[n++] = (struct pollfd){t->lfd, POLLIN, 0};
    /* a client with output pending is written before the PTY is read again */
    p[n++] = (struct pollfd){t->outlen > SUP_TTY_OUT / 2 || t->hup ? -1 : t->master, POLLIN, 0};
    if (t->cfd >= 0)
        p[n++] = (struct pollfd){t->cfd, (short)(POLLIN | (t->outlen ? POLLOUT : 0)), 0};
    return n;
}

void sup_tty_polled(struct sup *s, const struct pollfd *p, int n)
{
    struct sup_tty *t = s->tty;
    int64_t now = clock_mono_ms();
    if (!t)
        return;
    if (n > 0 && p[0].revents)
        take_client(t);
    if (n > 1 && p[1].revents && !read_master(t, now))
        t->hup = true;
    if (n > 2 && p[2].fd == t->cfd && (p[2].revents & (POLLIN | POLLHUP | POLLERR)))
        read_client(t, now, false);
    client_flush(t);
}

int64_t sup_tty_next_ms(const struct sup *s, int64_t now)
{
    const struct sup_tty *t = s->tty;
    if (!t || !t->idle_ms || !t->last_mono)
        return 86400000;
    int64_t at = t->last_mono + (t->warned ? t->idle_ms + t->idle_ms / 10 : t->idle_ms);
    return at > now ? at - now : 0;
}

/* The idle rule: true when the session is to end now. */
bool sup_tty_idle(struct sup *s, int64_t now)
{
    struct sup_tty *t = s->tty;
    if (!t || !t->idle_ms || !t->last_mono || now < t->last_mono + t->idle_ms)
        return false;
    char msg[160];
    if (!t->warned) {
        t->warned = true;
        snprintf(msg, sizeof msg,
                 "docket: this session has been idle for %llds; it ends in %llds unless "
                 "something is typed",
                 (long long)(t->idle_ms / 1000), (long long)((t->idle_ms / 10 + 999) / 1000));
        notice(t, msg);
        sup_log("job %llu: idle session warned", (unsigned long long)s->j->id);
        return false;
    }
    if (now < t->last_mono + t->idle_ms + t->idle_ms / 10)
        return false;
    notice(t, "docket: the session was idle too long and ends now");
    t->last_mono = 0; /* said once */
    return true;
}

/* Before the launch: wait for the first client's HELLO (its window size is the PTY's
 * from the start). -ETIMEDOUT after the idle time with nobody, -ECANCELED when the agent
 * brings a command (a cancel) meanwhile. */
int sup_tty_await(struct sup *s, int sfd, char *err, size_t errlen)
{
    struct sup_tty *t = s->tty;
    int64_t deadline = clock_mono_ms() + t->idle_ms;
    while (!t->hello) {
        int64_t now = clock_mono_ms();
        if (now >= deadline) {
            sup_errf(err, errlen, "nobody attached to the session's terminal within %llds",
                     (long long)(t->idle_ms / 1000));
            return -ETIMEDOUT;
        }
        struct pollfd p[3] = {{sfd, POLLIN, 0}, {t->lfd, POLLIN, 0}, {t->cfd, POLLIN, 0}};
        if (poll(p, 3, (int)(deadline - now)) <= 0)
            continue;
        if (p[0].revents) {
            struct signalfd_siginfo si;
            bool cmd = false;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                cmd |= si.ssi_signo == SIGUSR1;
            if (cmd) {
                sup_errf(err, errlen, "stopped before a terminal attached");
                return -ECANCELED;
            }
        }
        if (p[1].revents)
            take_client(t);
        if (t->cfd >= 0 && p[2].fd == t->cfd && p[2].revents)
            read_client(t, now, true);
        client_flush(t);
    }
    t->last_mono = clock_mono_ms();
    return 0;
}

/* The launch failed with a client attached: it is told why, and the session ends as a
 * command not found would (127). */
void sup_tty_launch_failed(struct sup *s, const char *why)
{
    struct sup_tty *t = s->tty;
    if (!t)
        return;
    char msg[600];
    snprintf(msg, sizeof msg, "docket: the session could not start: %s", why);
    client_queue(t, TTY_NOTICE, msg, strlen(msg));
    s->leader_status = 127 << 8;
    sup_tty_end(s);
}

/* The end of a session: the command's last output and its exit go to the client whole.
 * The PTY is read and the client written in turn until the PTY has nothing more (no
 * writer left, or quiet for a moment: the tty layer hands over a writer's last bytes a
 * little after it exits), the queue never past half full so nothing is cut; then the
 * queue is flushed. Each step goes on while it makes progress (a slow terminal three hops
 * away on a loaded machine is still a terminal), and gives up after END_STALL_MS without
 * any, or END_CAP_MS in all: a process left behind that keeps writing, or a client that
 * stopped reading, holds the job's end no longer than that. */
enum { END_CAP_MS = 30000, END_STALL_MS = 10000, END_QUIET_MS = 50 };

struct end_clock {
    int64_t cap, stall;
};

static bool end_clock_running(const struct end_clock *k)
{
    int64_t now = clock_mono_ms();
    return now < k->cap && now < k->stall;
}

/* Flush what the client takes; any taken renews the stall deadline. */
static void end_flush(struct sup_tty *t, struct end_clock *k)
{
    size_t before = t->outlen;
    client_flush(t);
    if (t->outlen < before)
        k->stall = clock_mono_ms() + END_STALL_MS;
}

static void drain_master(struct sup_tty *t, struct end_clock *k)
{
    uint8_t buf[TTY_FRAME_MAX];
    for (bool open = true; open && end_clock_running(k);) {
        bool room = t->outlen < SUP_TTY_OUT / 2;
        if (room) {
            ssize_t r = read(t->master, buf, sizeof buf);
            if (r > 0) {
                ring_add(t, buf, (size_t)r);
                client_queue(t, TTY_DATA, buf, (size_t)r);
                k->stall = clock_mono_ms() + END_STALL_MS;
                continue;
            }
            if (r == 0 || (errno != EAGAIN && errno != EINTR))
                break; /* EIO: every slave descriptor is closed */
        }
        struct pollfd p[2] = {{room ? t->master : -1, POLLIN, 0},
                              {t->cfd, (short)(t->outlen ? POLLOUT : 0), 0}};
        if (poll(p, 2, END_QUIET_MS) == 0 && room)
            open = false; /* quiet: the command's output is all read */
        end_flush(t, k);
    }
}

/* The command has ended: its last output and its exit go to the client (a moment is
 * given for them to leave), then the terminal closes. */
void sup_tty_end(struct sup *s)
{
    struct sup_tty *t = s->tty;
    if (!t)
        return;
    int64_t now = clock_mono_ms();
    struct end_clock k = {now + END_CAP_MS, now + END_STALL_MS};
    drain_master(t, &k);
    int st = s->leader_status;
    uint8_t frame[8];
    size_t n = WIFSIGNALED(st)
                   ? tty_frame_put_exit(frame, sizeof frame, TTY_EXIT_SIGNAL, WTERMSIG(st))
                   : tty_frame_put_exit(frame, sizeof frame, TTY_EXIT_CODE, WEXITSTATUS(st));
    if (t->cfd >= 0 && t->hello && t->outlen + n <= SUP_TTY_OUT) {
        memcpy(t->out + t->outlen, frame, n);
        t->outlen += n;
    }
    now = clock_mono_ms();
    k = (struct end_clock){now + END_CAP_MS, now + END_STALL_MS};
    while (t->cfd >= 0 && t->outlen > 0 && end_clock_running(&k)) {
        struct pollfd p = {t->cfd, POLLOUT, 0};
        poll(&p, 1, 100);
        end_flush(t, &k);
    }
    if (t->cfd >= 0)
        shutdown(t->cfd, SHUT_WR);
    client_drop(t);
    close(t->master);
    close(t->lfd);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/tty.sock", s->dir);
    unlink(path);
    free(t->out);
    free(t);
    s->tty = NULL;
}
