/*
 * conn.h - what conn.c owns: descriptors, listeners, the connection cap, accept back-off,
 * the connection budget (budget.c keeps its books), each connection's close callback, and
 * libevent's error pages rewritten as JSON.
 */
#ifndef DOCKET_CONTROLLER_CONN_H
#define DOCKET_CONTROLLER_CONN_H

#include <stddef.h>

struct ctl;
struct evbuffer;
struct evconnlistener;
struct evhttp;
struct evhttp_connection;
struct evhttp_request;

/* Raise RLIMIT_NOFILE to its hard limit and size the connection cap and backlog from it
 * and cfg (before anything opens a descriptor). */
int ctl_conn_limits(struct ctl *c);
int ctl_conn_init(struct ctl *c);
/* Count h's connections (refusing past the cap) and set its idle timeout. */
void ctl_conn_server(struct ctl *c, struct evhttp *h);
/* The same, its connections speaking TLS (ctl_tls_attach: after ctl_conn_server). */
void ctl_conn_server_tls(struct ctl *c, struct evhttp *h);
/* Back off (instead of spinning) when lev's accept() fails. */
void ctl_conn_listener(struct ctl *c, struct evconnlistener *lev);
/* A listening TCP socket with the sized backlog, for evhttp_bind_listener. */
struct evconnlistener *ctl_conn_listen_tcp(struct ctl *c, const char *host, int port, char *err,
                                           size_t errlen);
/* The one close callback slot of a connection (replaces evhttp_connection_set_closecb,
 * which conn.c keeps for counting); cb NULL clears it. */
void ctl_conn_watch(struct ctl *c, struct evhttp_connection *evcon,
                    void (*cb)(struct evhttp_connection *, void *), void *arg);
size_t ctl_conn_count(const struct ctl *c);
/* Connections with no request of a valid identity yet (the connection budget's). */
size_t ctl_conn_unproven(const struct ctl *c);
/* req carried a valid identity (a token, a node credential, a Unix socket peer): its
 * connection no longer counts as unproven, and is never closed to make room. */
void ctl_conn_proven(struct ctl *c, struct evhttp_request *req);
/* A request reached the router: its connection's request deadline stops until the reply
 * is done (a parked long poll or a stream is not cut by it). */
void ctl_conn_request_begins(struct ctl *c, struct evhttp_request *req);
/* The status of libevent's HTML error page when it is all `buf` holds, else 0 (conn.c
 * rewrites such a page into the JSON error). */
int ctl_html_error_status(struct evbuffer *buf);
void ctl_conn_stop(struct ctl *c);    /* before the servers are freed */
void ctl_conn_release(struct ctl *c); /* after */

#endif
