/*
 * agent_tls.c - how docket-node trusts docketd (docs/agent.md "TLS"): an https://
 * controller is checked against the pinned fingerprint of its public key (handed over
 * with the join token), else against a CA file (--controller-ca) or the system's CAs,
 * with the host name or address checked too. A controller that fails the check gets
 * nothing: not the join token, not the credential; the log says why each time.
 * Plain http:// is accepted only for a loopback controller.
 *
 * When evhttp reconnects it hands the new socket to the same bufferevent, whose SSL
 * object still holds the ended session (libevent 2.1 does not SSL_clear it). An SSL
 * object is meant for one session, so a TLS connection whose socket is gone is replaced
 * by a fresh one before the next request (ag_conn): each connection, its own handshake
 * and its own certificate check. Requests are only sent from timers, never from inside
 * the connection's own callbacks, so replacing it there is safe.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent_int.h"
#include "protocol/tlspin.h"
#include "util/host.h"
#include "util/log.h"
#include "util/xalloc.h"

static int verify_controller(X509_STORE_CTX *x, void *arg)
{
    struct agent *a = arg;
    if (a->tls_pinned) {
        unsigned char got[FPR_LEN];
        char want_s[FPR_TEXTLEN], got_s[FPR_TEXTLEN] = "none";
        X509 *leaf = X509_STORE_CTX_get0_cert(x);
        int rc = proto_tls_pin(leaf, got);
        if (rc == 0 && memcmp(got, a->tls_pin, FPR_LEN) == 0)
            return 1;
        if (rc == 0)
            fpr_format(got, got_s, sizeof got_s);
        fpr_format(a->tls_pin, want_s, sizeof want_s);
        log_error("controller_fingerprint_mismatch",
                  "controller=%s pinned=%s presented=%s action=\"refusing to connect; compare "
                  "--controller-fingerprint with the fingerprint docketd logs at start "
                  "(tls_ready) and prints with each join token\"",
                  a->cfg.controller, want_s, got_s);
        X509_STORE_CTX_set_error(x, X509_V_ERR_APPLICATION_VERIFICATION);
        return 0;
    }
    if (X509_verify_cert(x) > 0)
        return 1;
    log_error("controller_certificate_refused",
              "controller=%s error=\"%s\" action=\"refusing to connect; give the CA with "
              "--controller-ca or pin the key with --controller-fingerprint\"",
              a->cfg.controller, X509_verify_cert_error_string(X509_STORE_CTX_get_error(x)));
    return 0;
}

int ag_tls_init(struct agent *a, char *err, size_t errlen)
{
    const struct agent_config *cfg = &a->cfg;
    if (!a->tls) {
        if (!host_is_loopback(a->host)) {
            snprintf(err, errlen,
                     "refusing http:// to '%s', which is not this machine: the join token "
                     "and the node's credential would cross the network in clear; use "
                     "https:// with --controller-fingerprint or --controller-ca",
                     a->host);
            return -EPERM;
        }
        return 0;
    }
    if (cfg->controller_fingerprint[0] && fpr_parse(cfg->controller_fingerprint, a->tls_pin) < 0) {
        snprintf(err, errlen, "bad controller fingerprint '%s' (want sha256:<64 hex digits>)",
                 cfg->controller_fingerprint);
        return -EINVAL;
    }
    a->tls_pinned = cfg->controller_fingerprint[0] != '\0';
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    int ok = ctx && SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1;
    if (ok && !a->tls_pinned)
        ok = cfg->controller_ca[0]
                 ? SSL_CTX_load_verify_locations(ctx, cfg->controller_ca, NULL) == 1
                 : SSL_CTX_set_default_verify_paths(ctx) == 1;
    if (!ok) {
        char detail[256];
        ERR_error_string_n(ERR_get_error(), detail, sizeof detail);
        snprintf(err, errlen, "cannot set up TLS%s%s: %s",
                 cfg->controller_ca[0] ? " with the CA file " : "", cfg->controller_ca, detail);
        SSL_CTX_free(ctx);
        return -EINVAL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_cert_verify_callback(ctx, verify_controller, a);
    a->tls_ctx = ctx;
    log_info("controller_tls", "controller=%s trust=%s", cfg->controller,
             a->tls_pinned           ? "pinned fingerprint"
             : cfg->controller_ca[0] ? cfg->controller_ca
                                     : "system CAs");
    return 0;
}

/* A bufferevent for a fresh connection to the controller, not connected yet: TLS when
 * https:// (its certificate checked as every connection's), or NULL when out of memory. */
struct bufferevent *ag_controller_bev(struct agent *a)
{
    if (!a->tls)
        return bufferevent_socket_new(a->base, -1, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    SSL *ssl = SSL_new(a->tls_ctx);
    if (!ssl)
        return NULL;
    struct in6_addr ip;
    bool is_ip = inet_pton(AF_INET, a->host, &ip) == 1 || inet_pton(AF_INET6, a->host, &ip) == 1;
    /* the name (or address) the certificate must carry when checked against a CA */
    int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), a->host)
                   : SSL_set1_host(ssl, a->host) && SSL_set_tlsext_host_name(ssl, a->host);
    struct bufferevent *bev =
        ok ? bufferevent_openssl_socket_new(a->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                            BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS)
           : NULL;
    if (!bev)
        SSL_free(ssl);
    return bev;
}

/* A fresh connection to the controller (TLS when https://), or NULL when out of memory. */
static struct evhttp_connection *conn_new(struct agent *a)
{
    if (!a->tls)
        return evhttp_connection_base_new(a->base, NULL, a->host, (unsigned short)a->port);
    struct bufferevent *bev = ag_controller_bev(a);
    if (!bev)
        return NULL;
    struct evhttp_connection *c = evhttp_connection_base_bufferevent_new(
        a->base, NULL, bev, a->host, (unsigned short)a->port);
    if (!c)
        bufferevent_free(bev);
    return c;
}

static void free_conn_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    evhttp_connection_free(arg);
}

struct evhttp_connection *ag_conn(struct agent *a, struct evhttp_connection **slot, int timeout_s)
{
    struct evhttp_connection *c = *slot;
    char *peer = NULL;
    ev_uint16_t port = 0;
    if (c)
        evhttp_connection_get_peer(c, &peer, &port);
    if (c && (!peer || strcmp(peer, a->host) != 0 || port != a->port)) {
        /* the controller changed (next_controller): a new connection; the old one is freed
         * after this turn, never inside a callback of its own */
        const struct timeval zero = {0, 0};
        if (event_base_once(a->base, -1, EV_TIMEOUT, free_conn_later, c, &zero) < 0)
            evhttp_connection_free(c);
        c = *slot = NULL;
    }
    if (c && a->tls && bufferevent_getfd(evhttp_connection_get_bufferevent(c)) < 0) {
        evhttp_connection_free(c); /* idle, its socket gone: no session to resume */
        c = *slot = NULL;
    }
    if (!c && (c = *slot = conn_new(a)) != NULL && timeout_s > 0)
        evhttp_connection_set_timeout(c, timeout_s);
    return c;
}

void ag_tls_free(struct agent *a)
{
    SSL_CTX_free(a->tls_ctx);
    a->tls_ctx = NULL;
}
