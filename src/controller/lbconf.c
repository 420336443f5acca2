/*
 * lbconf.c - the pure parts of the services' load balancer (lbconf.h): HAProxy's
 * configuration, the server slots of each backend, the runtime API commands between two
 * states of a backend, and the pick of an endpoint's port.
 */
#include "controller/lbconf.h"

#include <stdio.h>
#include <string.h>

#include "util/str.h"

void lb_backend_name(char *out, size_t len, const char *name)
{
    snprintf(out, len, "svc_%s", name);
}

void lb_config_text(struct dbuf *out, const struct lb_frontend *fe, int n, const char *bind,
                    const char *admin_socket)
{
    /* retries and redispatch: a request that finds a replica gone (killed, refused) is
       tried again on another before the client hears of it */
    dbuf_printf(out,
                "# written by docketd (docs/services.md \"The endpoint\"); do not edit\n"
                "global\n"
                "    stats socket %s mode 600 level admin\n"
                "    maxconn 4096\n"
                "defaults\n"
                "    mode http\n"
                "    timeout connect 2s\n"
                "    timeout client 60s\n"
                "    timeout server 60s\n"
                "    timeout queue 10s\n"
                "    retries 3\n"
                "    option redispatch 1\n"
                "    retry-on conn-failure empty-response response-timeout 502 503\n",
                admin_socket);
    for (int i = 0; i < n; i++) {
        char be[96];
        lb_backend_name(be, sizeof(be), fe[i].name);
        dbuf_printf(out,
                    "frontend %s\n"
                    "    bind %s:%d\n"
                    "    default_backend %s\n"
                    "backend %s\n"
                    "    balance roundrobin\n"
                    "    server-template r 1-%d 127.0.0.1:1 disabled\n",
                    be, bind, fe[i].port, be, be, LB_SLOTS);
    }
}

static int slot_of(const struct lb_slot now[LB_SLOTS], const struct lb_want *w)
{
    for (int i = 0; i < LB_SLOTS; i++)
        if (now[i].job == w->job && now[i].port == w->port && strcmp(now[i].host, w->host) == 0)
            return i;
    return -1;
}

void lb_assign(const struct lb_slot now[LB_SLOTS], const struct lb_want *want, int nwant,
               struct lb_slot next[LB_SLOTS])
{
    memset(next, 0, sizeof(struct lb_slot) * LB_SLOTS);
    bool placed[LB_SLOTS * 2] = {false};
    /* first those that stay where they are */
    for (int w = 0; w < nwant && w < LB_SLOTS * 2; w++) {
        if (!want[w].job || want[w].port <= 0 || !want[w].host)
            continue;
        int i = slot_of(now, &want[w]);
        if (i >= 0) {
            next[i] = now[i];
            next[i].ready = want[w].ready;
            placed[w] = true;
        }
    }
    /* then the new ones, each in the lowest free slot */
    for (int w = 0; w < nwant && w < LB_SLOTS * 2; w++) {
        if (placed[w] || !want[w].job || want[w].port <= 0 || !want[w].host)
            continue;
        for (int i = 0; i < LB_SLOTS; i++)
            if (!next[i].job) {
                next[i].job = want[w].job;
                str_copy(next[i].host, sizeof(next[i].host), want[w].host);
                next[i].port = want[w].port;
                next[i].ready = want[w].ready;
                break;
            }
    }
}

int lb_commands(struct dbuf *out, const char *backend, const struct lb_slot had[LB_SLOTS],
                const struct lb_slot want[LB_SLOTS])
{
    int n = 0;
    for (int i = 0; i < LB_SLOTS; i++) {
        const struct lb_slot *h = &had[i], *w = &want[i];
        bool was_in = h->job && h->ready, is_in = w->job && w->ready;
        bool moved =
            w->job && (h->job != w->job || h->port != w->port || strcmp(h->host, w->host) != 0);
        if (was_in && (!is_in || moved)) {
            dbuf_printf(out, "set server %s/r%d state maint\n", backend, i + 1);
            n++;
        }
        if (moved) {
            dbuf_printf(out, "set server %s/r%d addr %s port %d\n", backend, i + 1, w->host,
                        w->port);
            n++;
        }
        if (is_in && (!was_in || moved)) {
            dbuf_printf(out, "set server %s/r%d state ready\n", backend, i + 1);
            n++;
        }
    }
    return n;
}

int lb_port_pick(int lo, int hi, const int *used, int nused, bool (*free_cb)(int port))
{
    for (int p = lo; p > 0 && p <= hi; p++) {
        bool taken = false;
        for (int i = 0; i < nused && !taken; i++)
            taken = used[i] == p;
        if (!taken && (!free_cb || free_cb(p)))
            return p;
    }
    return 0;
}
