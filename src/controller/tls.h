/*
 * tls.h - what tls.c owns: HTTPS on the TCP listener, its certificate and its reload.
 */
#ifndef DOCKET_CONTROLLER_TLS_H
#define DOCKET_CONTROLLER_TLS_H

#include <stdbool.h>
#include <stddef.h>

struct bufferevent;
struct ctl;
struct event_base;
struct evhttp;

/* ctl_tls_start (before anything else starts) decides from the configuration and the
 * listen host (plain only on loopback), loads or makes the certificate, logs its
 * fingerprint; 0 or -errno with err filled. ctl_tls_attach makes a server speak TLS. */
int ctl_tls_start(struct ctl *c, char *err, size_t errlen);
void ctl_tls_attach(struct ctl *c, struct evhttp *h);
/* SIGHUP: the certificate and key read again from their files (a renewed or replaced
 * pair); new connections use them, open ones keep the old. 0, or -errno with err filled
 * and the old pair still served. */
int ctl_tls_reload(struct ctl *c, char *err, size_t errlen);
/* A TLS connection's bufferevent (for conn.c's bevcb), and whether bev is one. */
struct bufferevent *ctl_tls_bev_new(struct ctl *c, struct event_base *base);
bool ctl_tls_bev_is_tls(struct bufferevent *bev);
void ctl_tls_stop(struct ctl *c);

#endif
