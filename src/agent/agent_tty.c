/*
 * agent_tty.c - the node's end of interactive sessions' terminals (docs/interactive.md).
 * For every running job with a terminal the agent keeps one connection to docketd asking
 * `GET /v1/agent/jobs/ID/tty` with `Upgrade: docket-tty` (node credential, the same TLS
 * and pin as every request); docketd parks it until a person attaches and then answers
 * 101. From then on the agent copies bytes between that connection and the supervisor's
 * JOBDIR/tty.sock, both ways, without reading the frames. When either side ends, both are
 * closed and, while the job runs, a fresh connection is parked for the next attach.
 * The agent holds no session state: the PTY, its recent output and the idle rule are
 * the supervisor's (suptty.c), so an agent restart only drops the person's connection.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "util/clock.h"
#include "util/log.h"

enum {
    TTY_HEAD_MAX = 16384,
    TTY_REOFFER_MS = 50, /* after a session's connection ended */
    TTY_BACKOFF_MAX_MS = 5000,
    TTY_SUP_TRIES = 1000, /* the supervisor's socket, TTY_SUP_RETRY_MS apart */
    TTY_SUP_RETRY_MS = 10,
    TTY_HIGH_WATER = 256 * 1024,
    TTY_PARKED_MIN_MS = 1000 /* a parked request closed sooner than this is a failure */
};

struct ag_tty {
    struct agent *a;
    uint64_t job;
    struct bufferevent *ctl; /* to docketd: parked, then upgraded */
    struct bufferevent *sup; /* to the supervisor's socket, once upgraded */
    bool upgraded, closing;
    int sup_tries;
    int64_t backoff_ms;
    int64_t offered_ms;  /* monotonic: when the parked request went out */
    struct event *timer; /* the next offer, or the supervisor's socket again */
    struct ag_tty *next;
};

static void offer(struct ag_tty *t);

static void drop_bevs(struct ag_tty *t)
{
    if (t->ctl)
        bufferevent_free(t->ctl);
    if (t->sup)
        bufferevent_free(t->sup);
    t->ctl = t->sup = NULL;
    t->upgraded = t->closing = false;
    t->sup_tries = 0;
}

/* The link ends; a new one is offered after `delay_ms` (the tick drops it if the job is
 * gone by then). */
static void link_end(struct ag_tty *t, int64_t delay_ms)
{
    drop_bevs(t);
    struct timeval tv = {(time_t)(delay_ms / 1000), (suseconds_t)((delay_ms % 1000) * 1000)};
    evtimer_add(t->timer, &tv);
}

static void link_failed(struct ag_tty *t, const char *why)
{
    log_warn("tty_offer_failed", "job=%llu reason=\"%s\" retry_ms=%lld", (unsigned long long)t->job,
             why, (long long)t->backoff_ms);
    int64_t delay = t->backoff_ms;
    t->backoff_ms = t->backoff_ms * 2 > TTY_BACKOFF_MAX_MS ? TTY_BACKOFF_MAX_MS : t->backoff_ms * 2;
    link_end(t, delay);
}

static void relay(struct bufferevent *from, struct bufferevent *to)
{
    struct evbuffer *out = bufferevent_get_output(to);
    evbuffer_add_buffer(out, bufferevent_get_input(from));
    if (evbuffer_get_length(out) > TTY_HIGH_WATER)
        bufferevent_disable(from, EV_READ);
}

static void sup_read(struct bufferevent *bev, void *arg)
{
    struct ag_tty *t = arg;
    relay(bev, t->ctl);
}

static void sup_write(struct bufferevent *bev, void *arg)
{
    struct ag_tty *t = arg;
    bufferevent_enable(t->ctl, EV_READ);
}

/* docketd took all we had for it: a closing link ends; a held-back supervisor reads. */
static void ctl_write(struct bufferevent *bev, void *arg)
{
    struct ag_tty *t = arg;
    if (t->closing)
        link_end(t, TTY_REOFFER_MS);
    else if (t->sup)
        bufferevent_enable(t->sup, EV_READ);
}

/* The supervisor closed the session (the command ended): what it said goes out first. */
static void sup_event(struct bufferevent *bev, short what, void *arg)
{
    struct ag_tty *t = arg;
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        return;
    relay(t->sup, t->ctl);
    bufferevent_free(t->sup);
    t->sup = NULL;
    if (evbuffer_get_length(bufferevent_get_output(t->ctl)) == 0) {
        link_end(t, TTY_REOFFER_MS);
    } else {
        t->closing = true;
        bufferevent_disable(t->ctl, EV_READ);
    }
}

static void join_sup(struct ag_tty *t)
{
    char dir[PATH_MAX];
    sup_job_dir(&t->a->sup, t->job, dir, sizeof dir);
    int fd = sup_tty_connect(dir);
    if (fd < 0) {
        /* a supervisor still setting the job up has no socket yet: a moment more */
        if (++t->sup_tries >= TTY_SUP_TRIES) {
            link_failed(t, "the supervisor does not serve the terminal");
            return;
        }
        struct timeval tv = {0, TTY_SUP_RETRY_MS * 1000};
        evtimer_add(t->timer, &tv);
        return;
    }
    t->sup =
        bufferevent_socket_new(t->a->base, fd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    if (!t->sup) {
        close(fd);
        link_failed(t, "out of memory");
        return;
    }
    bufferevent_setwatermark(t->sup, EV_WRITE, 0, 0);
    bufferevent_setcb(t->sup, sup_read, sup_write, sup_event, t);
    bufferevent_enable(t->sup, EV_READ | EV_WRITE);
    bufferevent_enable(t->ctl, EV_READ);
    relay(t->ctl, t->sup); /* what the person sent meanwhile */
}

/* Until the upgrade: docketd's answer to the parked request. */
static int read_head(struct ag_tty *t)
{
    struct evbuffer *in = bufferevent_get_input(t->ctl);
    struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (end.pos < 0)
        return evbuffer_get_length(in) > TTY_HEAD_MAX ? -EPROTO : 0;
    char line[128] = "";
    size_t n =
        evbuffer_get_length(in) < sizeof line - 1 ? evbuffer_get_length(in) : sizeof line - 1;
    evbuffer_copyout(in, line, n);
    line[strcspn(line, "\r\n")] = '\0';
    evbuffer_drain(in, (size_t)end.pos + 4);
    if (strncmp(line, "HTTP/1.1 101 ", 13) != 0) {
        link_failed(t, line);
        return -EPROTO;
    }
    t->upgraded = true;
    t->backoff_ms = TTY_REOFFER_MS;
    log_info("tty_attached", "job=%llu", (unsigned long long)t->job);
    bufferevent_disable(t->ctl, EV_READ); /* until the supervisor's socket is joined */
    join_sup(t);
    return 1;
}

static void ctl_read(struct bufferevent *bev, void *arg)
{
    struct ag_tty *t = arg;
    if (!t->upgraded) {
        int rc = read_head(t);
        if (rc == -EPROTO && t->ctl && !t->upgraded)
            link_failed(t, "docketd's answer has no end");
        return;
    }
    if (t->sup)
        relay(bev, t->sup);
}

static void ctl_event(struct bufferevent *bev, short what, void *arg)
{
    struct ag_tty *t = arg;
    if (what & BEV_EVENT_CONNECTED)
        return;
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
        return;
    if (t->upgraded) /* the person went: the session lives on for the next attach */
        link_end(t, TTY_REOFFER_MS);
    else if (!(what & BEV_EVENT_ERROR) && clock_mono_ms() - t->offered_ms > TTY_PARKED_MIN_MS)
        link_end(t, TTY_REOFFER_MS); /* a parked request docketd let go after its idle time */
    else
        link_failed(t, "docketd closed the connection");
}

static void offer(struct ag_tty *t)
{
    struct agent *a = t->a;
    drop_bevs(t);
    t->ctl = ag_controller_bev(a);
    if (!t->ctl) {
        link_failed(t, "out of memory");
        return;
    }
    bufferevent_setwatermark(t->ctl, EV_WRITE, 0, 0);
    bufferevent_setcb(t->ctl, ctl_read, ctl_write, ctl_event, t);
    evbuffer_add_printf(bufferevent_get_output(t->ctl),
                        "GET /v1/agent/jobs/%llu/tty HTTP/1.1\r\nHost: %s\r\n"
                        "Authorization: Bearer %s\r\nUpgrade: docket-tty\r\n"
                        "Connection: Upgrade\r\n\r\n",
                        (unsigned long long)t->job, a->host, a->credential);
    bufferevent_enable(t->ctl, EV_READ | EV_WRITE);
    t->offered_ms = clock_mono_ms();
    if (bufferevent_socket_connect_hostname(t->ctl, NULL, AF_UNSPEC, a->host, a->port) < 0)
        link_failed(t, "cannot connect");
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ag_tty *t = arg;
    if (t->upgraded && !t->sup)
        join_sup(t);
    else if (!t->ctl)
        offer(t);
}

static struct ag_tty *find(struct agent *a, uint64_t job)
{
    for (struct ag_tty *t = a->ttys; t; t = t->next)
        if (t->job == job)
            return t;
    return NULL;
}

static void tty_free(struct ag_tty *t)
{
    drop_bevs(t);
    event_free(t->timer);
    free(t);
}

void ag_tty_tick(struct agent *a)
{
    if (!a->registered)
        return;
    for (struct ajob *j = a->jobs; j; j = j->next) {
        if (!j->tty || j->exited || find(a, j->id))
            continue;
        struct ag_tty *t = calloc(1, sizeof *t);
        if (!t)
            return;
        t->a = a;
        t->job = j->id;
        t->backoff_ms = TTY_REOFFER_MS;
        t->timer = evtimer_new(a->base, timer_cb, t);
        if (!t->timer) {
            free(t);
            return;
        }
        t->next = a->ttys;
        a->ttys = t;
        offer(t);
    }
    /* a session whose job ended: its parked link goes (a joined one ends with the
     * supervisor's socket) */
    for (struct ag_tty **p = &a->ttys; *p;) {
        struct ag_tty *t = *p;
        struct ajob *j = ag_job_find(a, t->job);
        if ((!j || j->exited) && !t->upgraded) {
            *p = t->next;
            tty_free(t);
        } else {
            p = &t->next;
        }
    }
}

void ag_tty_free_all(struct agent *a)
{
    while (a->ttys) {
        struct ag_tty *t = a->ttys;
        a->ttys = t->next;
        tty_free(t);
    }
}
