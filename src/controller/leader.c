/*
 * leader.c - active and standby on PostgreSQL (leader.h): the wait of a standby, its
 * answers, and the leader's look at its own lead each second.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/leader.h"
#include "controller/loop.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/str.h"

/* Where clients reach this docketd: --advertise, else its listen address. */
static void own_url(const struct ctl *c, char *out, size_t len)
{
    if (c->cfg.advertise[0])
        str_copy(out, len, c->cfg.advertise);
    else if (c->cfg.listen[0] && c->listen_port > 0) {
        char host[200] = "";
        int port = 0;
        if (ctl_split_host_port(c->cfg.listen, host, sizeof(host), &port) < 0)
            str_copy(host, sizeof(host), "localhost");
        snprintf(out, len, "%s://%s:%d", c->tls_ctx ? "https" : "http", host, c->listen_port);
    } else
        snprintf(out, len, "unix:%s", c->cfg.socket_path);
}

/* Remember who leads now, for the answers; logged when it changes. */
static void note_leader(struct ctl *c)
{
    struct store_leader l;
    if (store_leader_get(c->store, &l) < 0)
        return;
    if (strcmp(l.url, c->leader_url) != 0)
        log_info("standby", "leader=%s epoch=%lld holder=\"%s\"", l.url, (long long)l.epoch,
                 l.holder);
    str_copy(c->leader_url, sizeof(c->leader_url), l.url);
}

int ctl_leader_await(struct ctl *c)
{
    char host[64] = "", holder[128], url[256];
    gethostname(host, sizeof(host) - 1);
    snprintf(holder, sizeof(holder), "%s pid %d", host, (int)getpid());
    own_url(c, url, sizeof(url));
    for (;;) {
        bool leading = false;
        int rc = store_leader_try(c->store, holder, url, clock_now_ms(), &leading);
        if (rc < 0) {
            log_error("leader_failed", "error=\"%s\"", store_errmsg(c->store));
            return rc;
        }
        if (leading)
            break;
        note_leader(c);
        /* serve the standby's answers for a second, then try again */
        struct timeval one = {1, 0};
        event_base_loopexit(c->base, &one);
        event_base_dispatch(c->base);
        if (c->shutting_down)
            return -EINTR;
    }
    str_copy(c->leader_url, sizeof(c->leader_url), url);
    log_info("leading", "url=%s holder=\"%s\"", url, holder);
    return 0;
}

void ctl_leader_tick(struct ctl *c)
{
    if (c->standby || !store_is_postgres(c->store) || c->shutting_down)
        return;
    if (store_in_tx(c->store))
        return; /* looked at between two commits, not inside one */
    if (store_leader_check(c->store) == -ESTALE)
        ctl_store_diverged(c, "deposed", 0);
}

void ctl_standby_reply(struct ctl *c, struct evhttp_request *req)
{
    char msg[400];
    snprintf(msg, sizeof(msg), "this docketd is a standby; the leader is %s",
             c->leader_url[0] ? c->leader_url : "not known yet");
    json_t *o = json_pack("{s:{s:s,s:s,s:s},s:s}", "error", "code", "standby", "field", "",
                          "message", msg, "leader", c->leader_url);
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", "application/json");
    evhttp_add_header(h, "Retry-After", "1");
    if (c->leader_url[0])
        evhttp_add_header(h, "X-Docket-Leader", c->leader_url);
    struct evbuffer *b = evbuffer_new();
    if (b && text)
        evbuffer_add(b, text, strlen(text));
    evhttp_send_reply(req, 503, "Service Unavailable", b);
    if (b)
        evbuffer_free(b);
    free(text);
}
