/*
 * conn.c - docketd's connections (docs/controller.md "Connections and limits"): the file
 * descriptor limit, the listeners and their backlog, a cap on concurrent connections, the
 * back-off when accept() runs out of descriptors, and the one close callback of every
 * connection (ctl_conn_watch).
 *
 * evhttp (libevent 2.1) has no hook at accept time, so connections are counted where it
 * creates their bufferevent (evhttp_set_bevcb) and looked at a moment later, in the same
 * loop iteration, once evhttp has made the connection object: libevent 2.1's
 * evhttp_start_read_ sets that object as the bufferevent's callback argument, which is how
 * the connection is found from its bufferevent. A connection past the cap is answered a
 * 503 JSON error and closed there, before it can hold a descriptor for long.
 *
 * A request must arrive whole within request_timeout (docs/controller.md "Connections and
 * limits"): each counted connection has a deadline, armed when it opens and again by the
 * first byte of each later request (a callback on its input buffer), and disarmed when
 * its request reaches the router (ctl_conn_request_begins) until the reply is done. The
 * idle timeout alone was reset by every byte: one header byte every 20 s held a
 * connection for ever, and enough of them locked everyone out at the cap.
 *
 * The deadline alone still let a client that reopens what is closed hold the cap: so
 * every connection is counted in the connection budget (budget.c; docs/security.md "The
 * connection budget") as unproven until a request with a valid identity arrives on it
 * (ctl_conn_proven), and a new connection that finds no room closes the oldest unproven
 * one instead of being refused: only proven connections are never made to give way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <netdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "controller/budget.h"
#include "controller/conn.h"
#include "controller/ctl.h"
#include "controller/tls.h"
#include "util/clock.h"
#include "util/xalloc.h"

#define ACCEPT_BACKOFF_MS 100
#define LOG_EVERY_MS      10000

struct conn {
    struct ctl *c;
    int fd;
    struct evhttp_connection *evcon;
    void (*cb)(struct evhttp_connection *, void *);
    void *arg;
    struct event *deadline;               /* request_timeout, while a request arrives */
    struct evbuffer_cb_entry *input_seen; /* arms it on a later request's first byte */
    bool busy;                            /* a request reached the router, its reply is not done */
    bool tls;
    struct budget_key peer;
    struct budget_slot slot; /* in the connection budget */
};

struct ctl_conns {
    struct conn **by_fd; /* indexed by the connection's descriptor */
    size_t nby_fd;
    struct conn_budget budget;  /* connections open (both servers), the unproven ones */
    struct bufferevent **fresh; /* created this iteration, not looked at yet */
    size_t nfresh, fresh_alloc;
    struct event *fresh_ev, *backoff_ev;
    struct evconnlistener *lev[2];
    /* rate-limited log lines: when each last went out and how many were left out since */
    int64_t refuse_log_ms, accept_log_ms, deadline_log_ms, shed_log_ms;
    uint64_t refused_quiet, accept_quiet, deadline_quiet, shed_quiet;
};

static const char refuse_reply[] = "HTTP/1.1 503 Service Unavailable\r\n"
                                   "Content-Type: application/json\r\n"
                                   "Retry-After: 1\r\n"
                                   "Connection: close\r\n"
                                   "Content-Length: 90\r\n\r\n"
                                   "{\"error\":{\"code\":\"unavailable\",\"message\":\"docketd is "
                                   "at its connection limit, try again\"}}";

/* ------------------------------------------------------------------------------------ */
/* Limits                                                                                */

int ctl_conn_limits(struct ctl *c)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return -errno;
    if (rl.rlim_cur < rl.rlim_max) { /* the soft limit is a default, not a decision */
        rlim_t want = rl.rlim_max == RLIM_INFINITY ? (rlim_t)1 << 20 : rl.rlim_max;
        struct rlimit nl = {want, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &nl) == 0)
            rl.rlim_cur = want;
    }
    c->fd_limit = rl.rlim_cur == RLIM_INFINITY ? (int64_t)1 << 20 : (int64_t)rl.rlim_cur;
    /* descriptors kept for the store, the log, job logs and the loop itself */
    int64_t reserve = c->fd_limit / 16 > 64 ? c->fd_limit / 16 : 64;
    int64_t room = c->fd_limit - reserve > 16 ? c->fd_limit - reserve : 16;
    c->conn_cap = c->cfg.max_connections > 0 ? c->cfg.max_connections : room;
    if (c->conn_cap > room) {
        log_warn("max_connections_lowered", "configured=%lld fd_limit=%lld cap=%lld",
                 (long long)c->conn_cap, (long long)c->fd_limit, (long long)room);
        c->conn_cap = room;
    }
    /* an agent holds up to two connections (its long poll and a post) */
    if (c->cfg.expected_nodes * 2 + 16 > c->conn_cap)
        log_warn("fd_limit_low",
                 "expected_nodes=%lld fd_limit=%lld max_connections=%lld "
                 "hint=\"raise LimitNOFILE (ulimit -n) for docketd\"",
                 (long long)c->cfg.expected_nodes, (long long)c->fd_limit, (long long)c->conn_cap);
    /* the reserve: room for every agent's two connections and a few people, from an eighth
     * to half of the cap (a setting wins, kept below the cap) */
    int64_t want = c->cfg.expected_nodes * 2 + 16;
    int64_t lo = c->conn_cap / 8, hi = c->conn_cap / 2;
    c->conn_reserve = c->cfg.reserved_connections > 0 ? c->cfg.reserved_connections
                      : want < lo                     ? lo
                      : want > hi                     ? hi
                                                      : want;
    if (c->conn_reserve >= c->conn_cap)
        c->conn_reserve = c->conn_cap - 1;
    int64_t backlog = c->cfg.expected_nodes * 2;
    c->listen_backlog = (int)(backlog < 128 ? 128 : backlog > 65535 ? 65535 : backlog);
    log_info("limits",
             "fd_limit=%lld max_connections=%lld reserved_connections=%lld "
             "max_unproven_per_peer=%lld backlog=%d idle_timeout_ms=%lld",
             (long long)c->fd_limit, (long long)c->conn_cap, (long long)c->conn_reserve,
             (long long)c->cfg.max_unproven_per_peer, c->listen_backlog,
             (long long)c->cfg.idle_timeout_ms);
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Counting                                                                              */

/* At most one line per LOG_EVERY_MS for a noisy event; how many were left out is said. */
static bool log_due(int64_t *last_ms, uint64_t *quiet, uint64_t *left_out)
{
    int64_t now = clock_mono_ms();
    if (*last_ms && now - *last_ms < LOG_EVERY_MS) {
        (*quiet)++;
        return false;
    }
    *last_ms = now;
    *left_out = *quiet;
    *quiet = 0;
    return true;
}

/* A connection's record, once its connection is gone or forgotten (its buffers may be
 * gone already: only the timer, which is ours, is freed with it). */
static void conn_free(struct ctl_conns *cs, struct conn *k)
{
    budget_remove(&cs->budget, &k->slot);
    if (k->deadline)
        event_free(k->deadline);
    free(k);
}

/* The close callback of every counted connection: its watcher, then the count. */
static void conn_closed(struct evhttp_connection *evcon, void *arg)
{
    struct conn *k = arg;
    struct ctl_conns *cs = k->c->conns;
    if (k->cb)
        k->cb(evcon, k->arg);
    if ((size_t)k->fd < cs->nby_fd && cs->by_fd[k->fd] == k)
        cs->by_fd[k->fd] = NULL;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    if (k->input_seen && bev)
        evbuffer_remove_cb_entry(bufferevent_get_input(bev), k->input_seen);
    conn_free(cs, k);
}

static int conn_fd(struct evhttp_connection *evcon)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    return bev ? (int)bufferevent_getfd(bev) : -1;
}

/* The counted record of evcon, or NULL. */
static struct conn *conn_of(struct ctl *c, struct evhttp_connection *evcon)
{
    struct ctl_conns *cs = c->conns;
    int fd = evcon ? conn_fd(evcon) : -1;
    struct conn *k = cs && fd >= 0 && (size_t)fd < cs->nby_fd ? cs->by_fd[fd] : NULL;
    return k && k->evcon == evcon ? k : NULL;
}

/* ------------------------------------------------------------------------------------ */
/* The request deadline                                                                  */

static void deadline_arm(struct conn *k)
{
    int64_t ms = k->c->cfg.request_timeout_ms;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    event_add(k->deadline, &tv);
}

/* request_timeout passed and the request is still not whole: the connection goes. */
static void deadline_passed(evutil_socket_t unused, short what, void *arg)
{
    struct conn *k = arg;
    struct ctl *c = k->c;
    struct ctl_conns *cs = c->conns;
    uint64_t left_out;
    if (k->busy)
        return;
    c->metrics.conn_timed_out++;
    if (log_due(&cs->deadline_log_ms, &cs->deadline_quiet, &left_out))
        log_warn("request_timed_out", "fd=%d request_timeout_ms=%lld left_out=%llu", k->fd,
                 (long long)c->cfg.request_timeout_ms, (unsigned long long)left_out);
    evhttp_connection_free(k->evcon); /* conn_closed frees k */
}

/* Bytes came in: the first of a request (none is being answered) starts its deadline. */
static void input_seen(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    struct conn *k = arg;
    if (info->n_added > 0 && !k->busy && !evtimer_pending(k->deadline, NULL))
        deadline_arm(k);
}

/* The reply to a request is done: the next request's first byte arms the deadline (one
 * already in, pipelined, arms it now). */
static void request_done(struct evhttp_request *req, void *arg)
{
    struct conn *k = conn_of(arg, evhttp_request_get_connection(req));
    if (!k)
        return;
    k->busy = false;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(k->evcon);
    if (bev && evbuffer_get_length(bufferevent_get_input(bev)) > 0)
        deadline_arm(k);
}

void ctl_conn_request_begins(struct ctl *c, struct evhttp_request *req)
{
    struct conn *k = conn_of(c, evhttp_request_get_connection(req));
    if (!k)
        return;
    k->busy = true;
    event_del(k->deadline);
    evhttp_request_set_on_complete_cb(req, request_done, c);
}

void ctl_conn_watch(struct ctl *c, struct evhttp_connection *evcon,
                    void (*cb)(struct evhttp_connection *, void *), void *arg)
{
    struct conn *k = conn_of(c, evcon);
    if (k) {
        k->cb = cb;
        k->arg = arg;
    } else { /* not counted (cannot happen once started): libevent's own slot */
        evhttp_connection_set_closecb(evcon, cb, arg);
    }
}

static void refuse(struct ctl *c, struct evhttp_connection *evcon, int fd, bool tls)
{
    struct ctl_conns *cs = c->conns;
    uint64_t left_out;
    /* best effort: a fresh socket's send buffer takes this small reply at once. A TLS
     * connection has not made its handshake yet: plain bytes would only garble it, so it
     * is just closed (the client sees the connection end, and retries) */
    if (!tls && send(fd, refuse_reply, sizeof(refuse_reply) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
        (void)0;
    evhttp_connection_free(evcon);
    c->metrics.conn_refused++;
    if (log_due(&cs->refuse_log_ms, &cs->refused_quiet, &left_out))
        log_warn("connection_refused", "open=%zu max_connections=%lld left_out=%llu",
                 cs->budget.open, (long long)c->conn_cap, (unsigned long long)left_out);
}

static int count(struct ctl *c, struct evhttp_connection *evcon, int fd,
                 const struct budget_key *peer, bool tls)
{
    struct ctl_conns *cs = c->conns;
    if ((size_t)fd >= cs->nby_fd) {
        size_t n = cs->nby_fd ? cs->nby_fd : 256;
        while (n <= (size_t)fd)
            n *= 2;
        struct conn **t = realloc(cs->by_fd, n * sizeof(*t));
        if (!t)
            return -ENOMEM;
        memset(t + cs->nby_fd, 0, (n - cs->nby_fd) * sizeof(*t));
        cs->by_fd = t;
        cs->nby_fd = n;
    }
    struct conn *k = calloc(1, sizeof(*k));
    if (!k)
        return -ENOMEM;
    *k = (struct conn){.c = c, .fd = fd, .evcon = evcon, .tls = tls, .peer = *peer};
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    k->deadline = evtimer_new(c->base, deadline_passed, k);
    k->input_seen =
        k->deadline && bev ? evbuffer_add_cb(bufferevent_get_input(bev), input_seen, k) : NULL;
    if (!k->input_seen) {
        conn_free(cs, k);
        return -ENOMEM;
    }
    if (cs->by_fd[fd]) /* a close we never heard of: the descriptor was reused */
        conn_free(cs, cs->by_fd[fd]);
    if (budget_add(&cs->budget, peer, &k->slot) < 0) {
        evbuffer_remove_cb_entry(bufferevent_get_input(bev), k->input_seen);
        cs->by_fd[fd] = NULL;
        conn_free(cs, k);
        return -ENOMEM;
    }
    cs->by_fd[fd] = k;
    evhttp_connection_set_closecb(evcon, conn_closed, k);
    deadline_arm(k); /* the first request (a TLS handshake before it) */
    return 0;
}

/* Who is at the other end of fd: its address, or on the Unix socket its uid. */
static struct budget_key peer_of(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    memset(&ss, 0, sizeof(ss));
    if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0 && ss.ss_family == AF_UNIX) {
        struct ucred cred;
        socklen_t cl = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0)
            return budget_key_uid(cred.uid);
    }
    return budget_key_addr((struct sockaddr *)&ss, len);
}

static struct conn *conn_of_slot(struct budget_slot *s)
{
    return (struct conn *)(void *)((char *)s - offsetof(struct conn, slot));
}

/* Close an unproven connection to make room for a new one (budget.c says which and why).
 * One waiting for its request is told 503, as a refused one is; one whose reply is under
 * way just closes (bytes of ours would garble it). */
static void shed(struct ctl *c, struct conn *k, enum budget_verdict why)
{
    struct ctl_conns *cs = c->conns;
    uint64_t left_out;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(k->evcon);
    if (!k->tls && !k->busy && bev && evbuffer_get_length(bufferevent_get_output(bev)) == 0 &&
        send(k->fd, refuse_reply, sizeof(refuse_reply) - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
        (void)0;
    c->metrics.conn_shed++;
    if (log_due(&cs->shed_log_ms, &cs->shed_quiet, &left_out)) {
        char peer[64];
        budget_key_str(&k->peer, peer, sizeof(peer));
        log_warn("connection_shed",
                 "peer=%s reason=%s open=%zu unproven=%zu max_connections=%lld "
                 "reserved_connections=%lld left_out=%llu",
                 peer, budget_verdict_name(why), cs->budget.open, cs->budget.unproven,
                 (long long)c->conn_cap, (long long)c->conn_reserve, (unsigned long long)left_out);
    }
    evhttp_connection_free(k->evcon); /* conn_closed frees k */
}

/* A new connection: counted once the budget has room for it, which unproven connections
 * make by giving way (at most one per reason); refused only when proven ones fill it. */
static void admit(struct ctl *c, struct evhttp_connection *evcon, int fd, bool tls)
{
    struct ctl_conns *cs = c->conns;
    struct budget_key peer = peer_of(fd);
    for (int tries = 0; tries < 4; tries++) {
        struct budget_slot *victim;
        enum budget_verdict v = budget_victim(&cs->budget, &peer, &victim);
        if (v == BUDGET_ADMIT) {
            if (count(c, evcon, fd, &peer, tls) < 0)
                break;
            return;
        }
        if (v == BUDGET_REFUSE || v == BUDGET_REFUSE_FRESH)
            break;
        size_t open = cs->budget.open;
        shed(c, conn_of_slot(victim), v);
        if (cs->budget.open == open) /* its close was not heard: forget it, not loop */
            budget_remove(&cs->budget, victim);
    }
    refuse(c, evcon, fd, tls);
}

void ctl_conn_proven(struct ctl *c, struct evhttp_request *req)
{
    struct conn *k = conn_of(c, evhttp_request_get_connection(req));
    if (k)
        budget_prove(&c->conns->budget, &k->slot);
}

/* The connections evhttp made this iteration: count them, or refuse those past the cap. */
static void fresh_cb(evutil_socket_t unused, short what, void *arg)
{
    struct ctl *c = arg;
    struct ctl_conns *cs = c->conns;
    budget_next_turn(&cs->budget);
    for (size_t i = 0; i < cs->nfresh; i++) {
        struct bufferevent *bev = cs->fresh[i];
        void *cbarg = NULL;
        bufferevent_getcb(bev, NULL, NULL, NULL, &cbarg);
        struct evhttp_connection *evcon = cbarg;
        int fd = (int)bufferevent_getfd(bev);
        /* NULL: evhttp freed it already (it failed to set the connection up) */
        if (evcon && fd >= 0 && evhttp_connection_get_bufferevent(evcon) == bev)
            admit(c, evcon, fd, ctl_tls_bev_is_tls(bev));
        bufferevent_decref(bev);
    }
    cs->nfresh = 0;
}

/* ------------------------------------------------------------------------------------ */
/* libevent's own error pages                                                            */

/* A few requests are refused by libevent 2.1 itself, before docketd sees them (a body
 * over evhttp's size limit, headers over 64 KiB, a request line or header it cannot
 * parse), with a short HTML page; 2.1 has no hook for them (2.2's evhttp_set_errorcb).
 * That page is rewritten into the API's JSON error as it enters the connection's output
 * buffer, which docketd owns (bev_cb): evhttp adds the status line, the headers, then the
 * whole body last. It is recognised only when it is all the buffer holds, and by its
 * header block saying text/html, which no route of docketd answers (a job's log is
 * text/plain), so no reply of ours can be taken for one. */
static const char html_tail[] = "</BODY></HTML>\n";

static bool html_error_page(struct evbuffer *buf, size_t len, int *status)
{
    char head[1024];
    size_t tl = sizeof(html_tail) - 1;
    if (len < tl + 16)
        return false;
    struct evbuffer_ptr p;
    char tail[sizeof(html_tail)];
    if (evbuffer_ptr_set(buf, &p, len - tl, EVBUFFER_PTR_SET) < 0 ||
        evbuffer_copyout_from(buf, &p, tail, tl) != (ev_ssize_t)tl || memcmp(tail, html_tail, tl))
        return false;
    ev_ssize_t n = evbuffer_copyout(buf, head, sizeof(head) - 1);
    if (n < 16)
        return false;
    head[n] = '\0';
    char *end = strstr(head, "\r\n\r\n");
    if (strncmp(head, "HTTP/1.", 7) != 0 || !end || strncmp(end + 4, "<HTML>", 6) != 0)
        return false;
    *end = '\0';
    if (!strstr(head, "\r\nContent-Type: text/html"))
        return false;
    *status = (int)strtol(head + 9, NULL, 10);
    return *status >= 400 && *status < 600;
}

int ctl_html_error_status(struct evbuffer *buf)
{
    int status;
    return html_error_page(buf, evbuffer_get_length(buf), &status) ? status : 0;
}

static void html_rewrite(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    int status;
    size_t len = evbuffer_get_length(buf);
    if (info->n_added == 0 || !html_error_page(buf, len, &status))
        return;
    const char *msg = status == 413   ? "request headers or body too large"
                      : status == 400 ? "malformed HTTP request"
                                      : "request refused by the HTTP layer";
    char body[256], resp[512];
    int bn = snprintf(body, sizeof(body),
                      "{\"error\":{\"code\":\"%s\",\"message\":\"%s (the connection is "
                      "closed)\"}}",
                      proto_status_code(status), msg);
    int rn = snprintf(resp, sizeof(resp),
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\n"
                      "Content-Length: %d\r\n\r\n%s",
                      status,
                      status == 413   ? "Payload Too Large"
                      : status == 400 ? "Bad Request"
                                      : "Error",
                      bn, body);
    /* (this callback sees the replacement too: it is no HTML page, so it stops there) */
    evbuffer_drain(buf, len);
    evbuffer_add(buf, resp, (size_t)rn);
}

/* A connection's bufferevent, made for evhttp (its bevcb): plain, or TLS on a server
 * ctl_tls_attach gave TLS (tls.c makes that one); both are counted alike. */
static struct bufferevent *bev_make(struct ctl *c, struct event_base *base, bool tls)
{
    struct ctl_conns *cs = c->conns;
    if (cs->nfresh == cs->fresh_alloc) {
        size_t n = cs->fresh_alloc ? cs->fresh_alloc * 2 : 64;
        struct bufferevent **t = realloc(cs->fresh, n * sizeof(*t));
        if (!t)
            return NULL; /* evhttp makes its own; it goes uncounted */
        cs->fresh = t;
        cs->fresh_alloc = n;
    }
    struct bufferevent *bev =
        tls ? ctl_tls_bev_new(c, base) : bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!bev)
        return NULL;
    bufferevent_incref(bev); /* still ours to look at if evhttp frees it meanwhile */
    evbuffer_add_cb(bufferevent_get_output(bev), html_rewrite, NULL);
    cs->fresh[cs->nfresh++] = bev;
    event_active(cs->fresh_ev, EV_TIMEOUT, 0);
    return bev;
}

static struct bufferevent *bev_cb(struct event_base *base, void *arg)
{
    return bev_make(arg, base, false);
}

static struct bufferevent *bev_cb_tls(struct event_base *base, void *arg)
{
    return bev_make(arg, base, true);
}

/* ------------------------------------------------------------------------------------ */
/* Accept back-off                                                                       */

static void backoff_done(evutil_socket_t unused, short what, void *arg)
{
    struct ctl_conns *cs = ((struct ctl *)arg)->conns;
    for (int i = 0; i < 2; i++)
        if (cs->lev[i])
            evconnlistener_enable(cs->lev[i]);
}

/* The listeners' callback argument is evhttp's (evhttp_bind_listener sets it), so the
 * error callback cannot be handed the controller: the one docketd of the process is
 * remembered here instead (set by ctl_conn_init, cleared by ctl_conn_release). */
static struct ctl *listener_owner;

/* accept() failed with something other than EAGAIN (EMFILE, ENFILE, ENOBUFS): the
 * listening socket stays readable, so retrying at once would spin. Stop accepting for a
 * moment (connections wait in the backlog) and say so, rarely. */
static void accept_error(struct evconnlistener *lev, void *unused)
{
    struct ctl *c = listener_owner;
    int err = EVUTIL_SOCKET_ERROR();
    uint64_t left_out;
    evconnlistener_disable(lev);
    if (!c || !c->conns)
        return;
    struct ctl_conns *cs = c->conns;
    for (int i = 0; i < 2; i++)
        if (cs->lev[i])
            evconnlistener_disable(cs->lev[i]);
    struct timeval tv = {0, ACCEPT_BACKOFF_MS * 1000};
    event_add(cs->backoff_ev, &tv);
    c->metrics.accept_errors++;
    if (log_due(&cs->accept_log_ms, &cs->accept_quiet, &left_out))
        log_warn("accept_failed", "error=\"%s\" open=%zu backoff_ms=%d left_out=%llu",
                 strerror(err), cs->budget.open, ACCEPT_BACKOFF_MS, (unsigned long long)left_out);
}

/* ------------------------------------------------------------------------------------ */
/* Servers                                                                               */

int ctl_conn_init(struct ctl *c)
{
    struct ctl_conns *cs = calloc(1, sizeof(*cs));
    if (!cs)
        return -ENOMEM;
    if (budget_init(&cs->budget, (size_t)c->conn_cap, (size_t)c->conn_reserve,
                    (size_t)c->cfg.max_unproven_per_peer) < 0) {
        free(cs);
        return -ENOMEM;
    }
    c->conns = cs;
    listener_owner = c;
    cs->fresh_ev = xnonnull(event_new(c->base, -1, 0, fresh_cb, c), "connection event");
    cs->backoff_ev = xnonnull(evtimer_new(c->base, backoff_done, c), "accept timer");
    return 0;
}

void ctl_conn_server(struct ctl *c, struct evhttp *h)
{
    evhttp_set_bevcb(h, bev_cb, c);
    /* idle keep-alive connections and slow senders; a parked long poll is not reading,
     * so this never cuts one (its own timer answers it) */
    struct timeval tv = {(time_t)(c->cfg.idle_timeout_ms / 1000),
                         (suseconds_t)((c->cfg.idle_timeout_ms % 1000) * 1000)};
    evhttp_set_timeout_tv(h, &tv);
}

void ctl_conn_server_tls(struct ctl *c, struct evhttp *h)
{
    evhttp_set_bevcb(h, bev_cb_tls, c);
}

void ctl_conn_listener(struct ctl *c, struct evconnlistener *lev)
{
    struct ctl_conns *cs = c->conns;
    evconnlistener_set_error_cb(lev, accept_error);
    cs->lev[cs->lev[0] ? 1 : 0] = lev;
}

struct evconnlistener *ctl_conn_listen_tcp(struct ctl *c, const char *host, int port, char *err,
                                           size_t errlen)
{
    struct addrinfo hints, *ai = NULL;
    char ports[16];
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(ports, sizeof(ports), "%d", port);
    int rc = getaddrinfo(host[0] ? host : NULL, ports, &hints, &ai);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(rc));
        return NULL;
    }
    /* the callback is evhttp's (evhttp_bind_listener sets it and enables the listener) */
    struct evconnlistener *lev = evconnlistener_new_bind(
        c->base, NULL, c, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
        c->listen_backlog, ai->ai_addr, (int)ai->ai_addrlen);
    if (!lev)
        snprintf(err, errlen, "cannot listen on '%s:%d': %s", host, port, strerror(errno));
    freeaddrinfo(ai);
    return lev;
}

size_t ctl_conn_count(const struct ctl *c)
{
    return c->conns ? c->conns->budget.open : 0;
}

size_t ctl_conn_unproven(const struct ctl *c)
{
    return c->conns ? c->conns->budget.unproven : 0;
}

void ctl_conn_stop(struct ctl *c)
{
    struct ctl_conns *cs = c->conns;
    if (!cs)
        return;
    fresh_cb(-1, 0, c);
    event_free(cs->fresh_ev);
    event_free(cs->backoff_ev);
    free(cs->fresh);
    cs->fresh = NULL;
}

/* After the servers are freed (every connection closed through conn_closed). */
void ctl_conn_release(struct ctl *c)
{
    struct ctl_conns *cs = c->conns;
    if (!cs)
        return;
    for (size_t i = 0; i < cs->nby_fd; i++)
        if (cs->by_fd[i])
            conn_free(cs, cs->by_fd[i]);
    free(cs->by_fd);
    budget_free(&cs->budget);
    free(cs);
    c->conns = NULL;
    listener_owner = NULL;
}
