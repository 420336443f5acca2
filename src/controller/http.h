/*
 * http.h - what http.c owns: the servers, authentication and routing of a request (struct
 * ctl_req), the replies and the group commit they wait for, and the small readers of a
 * request (its body, its query).
 */
#ifndef DOCKET_CONTROLLER_HTTP_H
#define DOCKET_CONTROLLER_HTTP_H

#include <event2/http.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "controller/authz.h"
#include "protocol/error.h"
#include "store/store.h"

struct ctl;

/* Heartbeats: at most this many a loop turn (~0.04 ms each in the fleet bench); the rest
 * wait for the next turns, in order. */
#define CTL_HEARTBEATS_PER_TURN 128

struct ctl_req {
    struct ctl *c;
    struct evhttp_request *req;
    enum evhttp_cmd_type method;
    struct ctl_ident id;
    const char *arg[4]; /* path captures (":id", ":name") */
    char argbuf[4][128];
    struct evkeyvalq *query; /* parsed query string */
    const char *body;        /* NUL-terminated copy, or NULL */
    size_t body_len;
    /* authorization (http.c): the route's permission, what it acted on, whether the check
     * ran (a route whose target is in the body is checked by its handler) */
    enum ctl_perm perm;
    struct ctl_target tgt;
    char tgt_project[64], tgt_owner[64];
    bool authorized;
    json_t *my_projects; /* the caller's project roles, loaded once ({project: role}) */
};

/* A reply waiting in the commit queue (struct ctl's replies). */
struct ctl_reply {
    struct evhttp_request *req;
    uint64_t gen; /* the commit it waits for; 0 = not committed yet */
    int status;
    char *body;
    size_t len;
    const char *content_type;
    struct ctl_reply *next;
};

/* Finish the authorization of a route whose target is in the body (submission): the
 * project and owner given, the route's permission is checked (ctl_authz_check). 0, or <0
 * after answering 403/500. */
int ctl_req_authorize(struct ctl_req *r, const char *project, const char *owner);
/* Fill t with project/owner and the caller's role in the project (cached per request). */
/* The role in `project` that `projects` ({project: role}, r->my_projects) gives. */
enum ctl_prole ctl_prole_in(const json_t *projects, const char *project);
void ctl_req_target(struct ctl_req *r, const char *project, const char *owner,
                    struct ctl_target *t);
/* Print the route table ("METHOD PATTERN PERMISSION" lines), for docs and tests. */
void ctl_routes_print(FILE *out);
int ctl_http_start(struct ctl *c, char *err, size_t errlen);
/* "HOST:PORT" or "[V6]:PORT" of the listen setting. 0 or -EINVAL. */
int ctl_split_host_port(const char *s, char *host, size_t hlen, int *port);
void ctl_http_stop(struct ctl *c);
/* Percent-decode one path segment in place; -1 when it decodes to a NUL or a '/', or does
 * not fit in cap (routing). */
int ctl_path_decode(char *seg, size_t cap);
/* Answer with JSON (steals `body`). Deferred until the commit and its WAL sync when a
 * transaction is open, or until the sync in flight when a commit is not on disk yet:
 * what a reply shows is never ahead of the disk (docs/controller.md "One loop"). */
void ctl_reply_json(struct ctl *c, struct evhttp_request *req, int status, json_t *body);
void ctl_reply_raw(struct ctl *c, struct evhttp_request *req, int status, const char *ctype,
                   const void *data, size_t len);
/* A reply that shows job j (its row, spec, and what the core derives from them) and
 * nothing else that is stored: sent at once when ctl_job_durable(j), else as
 * ctl_reply_json (docs/controller.md "Reads that leave at once"). Steals `body`. */
void ctl_reply_json_job(struct ctl *c, struct evhttp_request *req, int status, json_t *body,
                        const struct store_job *j);
/* Answer at once, before the turn's commit and sync: only for replies that read nothing a
 * crash could take back from the client's view, /healthz and /metrics (the process's own
 * counters and the core's gauges; docs/controller.md "Answered at once"). */
void ctl_reply_now(struct ctl *c, struct evhttp_request *req, int status, const char *ctype,
                   const void *data, size_t len);
void ctl_reply_json_now(struct ctl *c, struct evhttp_request *req, int status, json_t *body);
void ctl_reply_error(struct ctl *c, struct evhttp_request *req, const struct proto_error *e);
void ctl_reply_errorf(struct ctl *c, struct evhttp_request *req, int status, const char *field,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Ask for a commit at the end of this loop iteration. */
void ctl_commit_soon(struct ctl *c);
/* Commit and send the waiting replies now (shutdown). */
void ctl_commit_now(struct ctl *c);
/* Send the replies of commits up to `gen` (all as 500 when rc < 0). */
void ctl_replies_release(struct ctl *c, uint64_t gen, int rc);
/* Parse r->body as a JSON object (an empty body is {} when allow_empty). NULL after
 * replying 400. */
json_t *ctl_body_json(struct ctl_req *r, bool allow_empty);
const char *ctl_query(struct ctl_req *r, const char *key);

#endif
