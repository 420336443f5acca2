/*
 * http.c - docketd's HTTP side: the TCP and Unix-socket servers (evhttp), identity
 * (SO_PEERCRED on the socket, bearer tokens over TCP), the one authorization function,
 * routing, body limits, and the replies that wait for the group commit (ctl.h).
 * The API itself is docs/api.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "controller/ctl.h"
#include "util/clock.h"
#include "util/str.h"
#include "util/xalloc.h"

static const char commit_failed_json[] =
    "{\"error\":{\"code\":\"internal\",\"message\":\"commit failed\"}}";
static const char oom_json[] = "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}";

/* ------------------------------------------------------------------------------------ */
/* Replies                                                                               */

static void send_now(struct ctl *c, struct evhttp_request *req, int status, const char *ctype,
                     const void *data, size_t len)
{
    struct evbuffer *buf = xnonnull(evbuffer_new(), "reply buffer");
    evbuffer_add(buf, data, len);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
    if (status >= 0 && status < 600)
        c->metrics.http_by_code[status]++;
    evhttp_send_reply(req, status, NULL, buf);
    evbuffer_free(buf);
}

static void reply_conn_closed(struct evhttp_connection *con, void *arg)
{
    struct ctl_reply *r = arg;
    r->req = NULL;
}

void ctl_reply_raw(struct ctl *c, struct evhttp_request *req, int status, const char *ctype,
                   const void *data, size_t len)
{
    if (c->diverged) { /* what this request wrote was rolled back (ctl_store_diverged) */
        send_now(c, req, 500, "application/json", commit_failed_json,
                 sizeof(commit_failed_json) - 1);
        return;
    }
    if (!store_in_tx(c->store)) {
        send_now(c, req, status, ctype, data, len);
        return;
    }
    struct ctl_reply *r = calloc(1, sizeof(*r));
    char *copy = malloc(len + 1);
    if (!r || !copy) {
        free(r);
        free(copy);
        log_error("out_of_memory", "where=reply");
        send_now(c, req, 500, "application/json", oom_json, sizeof(oom_json) - 1);
        return;
    }
    memcpy(copy, data, len);
    copy[len] = '\0';
    *r = (struct ctl_reply){req, 0, status, copy, len, ctype, NULL};
    /* the client may go away before the commit: libevent then frees the request */
    struct evhttp_connection *con = evhttp_request_get_connection(req);
    if (con)
        evhttp_connection_set_closecb(con, reply_conn_closed, r);
    if (c->replies_tail)
        c->replies_tail->next = r;
    else
        c->replies = r;
    c->replies_tail = r;
    ctl_commit_soon(c);
}

void ctl_reply_json(struct ctl *c, struct evhttp_request *req, int status, json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text) {
        ctl_reply_raw(c, req, 500, "application/json", oom_json, sizeof(oom_json) - 1);
        return;
    }
    ctl_reply_raw(c, req, status, "application/json", text, strlen(text));
    free(text);
}

void ctl_reply_error(struct ctl *c, struct evhttp_request *req, const struct proto_error *e)
{
    c->req_failed = true; /* the handler's savepoint is rolled back */
    ctl_reply_json(c, req, e->status ? e->status : 500, proto_error_json(e));
}

void ctl_reply_errorf(struct ctl *c, struct evhttp_request *req, int status, const char *field,
                      const char *fmt, ...)
{
    struct proto_error e;
    va_list ap;
    memset(&e, 0, sizeof(e));
    e.status = status;
    str_copy(e.code, sizeof(e.code), proto_status_code(status));
    str_copy(e.field, sizeof(e.field), field ? field : "");
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof(e.message), fmt, ap);
    va_end(ap);
    ctl_reply_error(c, req, &e);
}

static void send_reply(struct ctl *c, struct ctl_reply *r, int rc)
{
    struct evhttp_connection *con = r->req ? evhttp_request_get_connection(r->req) : NULL;
    if (con)
        evhttp_connection_set_closecb(con, NULL, NULL);
    if (r->req && rc < 0) /* (a request whose client left has req NULL) */
        send_now(c, r->req, 500, "application/json", commit_failed_json,
                 sizeof(commit_failed_json) - 1);
    else if (r->req)
        send_now(c, r->req, r->status, r->content_type, r->body, r->len);
    free(r->body);
    free(r);
}

void ctl_replies_release(struct ctl *c, uint64_t gen, int rc)
{
    struct ctl_reply **pp = &c->replies, *last = NULL;
    if (rc == 0 && gen > c->synced_gen)
        c->synced_gen = gen;
    while (*pp) {
        struct ctl_reply *r = *pp;
        if (r->gen != 0 && r->gen <= gen) {
            *pp = r->next;
            send_reply(c, r, rc);
        } else {
            last = r;
            pp = &r->next;
        }
    }
    c->replies_tail = last;
}

/* The commit event: one transaction for everything this loop iteration wrote. Its
 * replies then wait for the WAL fsync (sync.c). A failed commit leaves the core ahead of
 * the disk: answer 500 to everyone who waited and stop, so a restart reloads the truth. */
static void commit_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ctl *c = arg;
    int64_t t0 = clock_mono_us();
    bool had_tx = store_in_tx(c->store);
    int rc = store_commit(c->store);
    if (had_tx)
        ctl_hist_observe(&c->metrics.commit, (double)(clock_mono_us() - t0) / 1e6);
    if (rc < 0) {
        log_error("commit_failed", "error=\"%s\"", store_errmsg(c->store));
        c->exit_code = 1;
        event_base_loopexit(c->base, NULL);
    }
    if (had_tx && rc == 0)
        c->commit_gen++;
    for (struct ctl_reply *r = c->replies; r; r = r->next)
        if (r->gen == 0)
            r->gen = rc < 0 ? UINT64_MAX : c->commit_gen;
    if (rc < 0)
        ctl_replies_release(c, UINT64_MAX, rc);
    else if (c->commit_gen <= c->synced_gen)
        ctl_replies_release(c, c->synced_gen, 0);
    else
        ctl_sync_request(c);
}

void ctl_commit_now(struct ctl *c)
{
    if (store_in_tx(c->store) || c->replies)
        commit_cb(-1, 0, c);
}

void ctl_commit_soon(struct ctl *c)
{
    if (!c->commit_ev)
        return; /* still starting: the caller commits itself */
    if (!event_pending(c->commit_ev, EV_TIMEOUT, NULL))
        event_active(c->commit_ev, EV_TIMEOUT, 0);
}

/* ------------------------------------------------------------------------------------ */
/* Identity and authorization                                                            */

int ctl_authorize(const struct ctl_ident *id, enum ctl_action act, const char *owner,
                  struct proto_error *err)
{
    if (act == CTL_AGENT)
        return id->node ? 0 : proto_errorf(err, 403, NULL, NULL, "only agents may call this");
    if (id->node)
        return proto_errorf(err, 403, NULL, NULL,
                            "a node credential may only call agent endpoints");
    if (id->admin)
        return 0;
    switch (act) {
    case CTL_READ:
    case CTL_SUBMIT:
        return 0;
    case CTL_JOB_CONTROL:
    case CTL_JOB_LOGS:
        if (owner && strcmp(owner, id->user) == 0)
            return 0;
        return proto_errorf(err, 403, NULL, NULL, "user '%s' does not own this job", id->user);
    default:
        return proto_errorf(err, 403, NULL, NULL, "user '%s' is not an admin", id->user);
    }
}

static int ident_unix(struct evhttp_request *req, struct ctl_ident *id)
{
    struct evhttp_connection *con = evhttp_request_get_connection(req);
    struct bufferevent *bev = con ? evhttp_connection_get_bufferevent(con) : NULL;
    int fd = bev ? bufferevent_getfd(bev) : -1;
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return -EACCES;
    struct passwd pw, *res = NULL;
    char buf[1024];
    if (getpwuid_r(cred.uid, &pw, buf, sizeof(buf), &res) == 0 && res)
        str_copy(id->user, sizeof(id->user), pw.pw_name);
    else
        snprintf(id->user, sizeof(id->user), "uid%u", (unsigned)cred.uid);
    id->admin = cred.uid == 0 || cred.uid == geteuid();
    str_copy(id->role, sizeof(id->role), id->admin ? "admin" : "member");
    return 0;
}

static int ident_bearer(struct ctl *c, struct evhttp_request *req, struct ctl_ident *id)
{
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return -EACCES;
    const char *tok = h + 7;
    while (*tok == ' ')
        tok++;
    if (strlen(tok) < 8 || strlen(tok) > 256)
        return -EACCES;
    struct store_token t;
    char hash[65];
    store_token_hash(tok, hash);
    if (store_token_get(c->store, hash, &t) < 0)
        return -EACCES;
    if (t.expires_ms && t.expires_ms < clock_now_ms())
        return -EACCES;
    if (t.kind == STORE_TOKEN_NODE) {
        id->node = true;
        str_copy(id->node_name, sizeof(id->node_name), t.user);
        str_copy(id->user, sizeof(id->user), t.user);
        str_copy(id->role, sizeof(id->role), "node");
        return 0;
    }
    if (t.kind != STORE_TOKEN_USER)
        return -EACCES;
    str_copy(id->user, sizeof(id->user), t.user);
    str_copy(id->role, sizeof(id->role), t.role);
    id->admin = strcmp(t.role, "admin") == 0;
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Routing                                                                               */

enum {
    M_GET = EVHTTP_REQ_GET,
    M_POST = EVHTTP_REQ_POST,
    M_PATCH = EVHTTP_REQ_PATCH,
    M_DELETE = EVHTTP_REQ_DELETE
};

enum route_auth { A_PUBLIC, A_USER, A_ADMIN, A_AGENT, A_NONE_HANDLER };

static const struct route {
    int method;
    const char *pattern;
    void (*fn)(struct ctl_req *r);
    enum route_auth auth;
} routes[] = {
    {M_POST, "/v1/jobs", h_jobs_submit, A_USER},
    {M_GET, "/v1/jobs", h_jobs_list, A_USER},
    {M_GET, "/v1/jobs/:", h_job_show, A_USER},
    {M_POST, "/v1/jobs/:/:", h_job_action, A_USER},
    {M_GET, "/v1/jobs/:/events", h_job_events, A_USER},
    {M_GET, "/v1/jobs/:/explain", h_job_explain, A_USER},
    {M_GET, "/v1/jobs/:/logs", h_job_logs, A_USER},
    {M_GET, "/v1/forecast", h_forecast, A_USER},
    {M_GET, "/v1/nodes", h_nodes_list, A_USER},
    {M_GET, "/v1/nodes/:", h_node_show, A_USER},
    {M_POST, "/v1/nodes/:/drain", h_node_drain, A_ADMIN},
    {M_POST, "/v1/nodes/:/resume", h_node_resume, A_ADMIN},
    {M_POST, "/v1/nodes/:/labels", h_node_labels, A_ADMIN},
    {M_GET, "/v1/projects", h_projects_list, A_USER},
    {M_POST, "/v1/projects", h_project_create, A_ADMIN},
    {M_GET, "/v1/projects/:", h_project_show, A_USER},
    {M_PATCH, "/v1/projects/:", h_project_patch, A_ADMIN},
    {M_POST, "/v1/projects/:/boost", h_project_boost, A_ADMIN},
    {M_DELETE, "/v1/projects/:/boost", h_project_unboost, A_ADMIN},
    {M_POST, "/v1/projects/:/pause", h_project_pause, A_ADMIN},
    {M_POST, "/v1/projects/:/resume", h_project_resume, A_ADMIN},
    {M_GET, "/v1/users/:/default_project", h_user_default_get, A_USER},
    {M_POST, "/v1/users/:/default_project", h_user_default_set, A_ADMIN},
    {M_GET, "/v1/tiers", h_tiers, A_USER},
    {M_GET, "/v1/classes", h_classes, A_USER},
    {M_PATCH, "/v1/classes/:", h_class_patch, A_ADMIN},
    {M_GET, "/v1/policy", h_policy_get, A_USER},
    {M_POST, "/v1/policy", h_policy_apply, A_ADMIN},
    {M_GET, "/v1/audit", h_audit, A_ADMIN},
    {M_POST, "/v1/tokens", h_tokens, A_ADMIN},
    {M_POST, "/v1/join-tokens", h_join_tokens, A_ADMIN},
    {M_POST, "/v1/agent/register", h_agent_register, A_NONE_HANDLER},
    {M_POST, "/v1/agent/heartbeat", h_agent_heartbeat, A_AGENT},
    {M_POST, "/v1/agent/events", h_agent_events, A_AGENT},
    {M_POST, "/v1/agent/logs", h_agent_logs, A_AGENT},
    {M_GET, "/healthz", h_healthz, A_PUBLIC},
    {M_GET, "/metrics", h_metrics, A_PUBLIC},
};

/* Match "/v1/jobs/:/events" against a path; ':' captures one segment. Routes without
 * captures are tried first; "/v1/jobs/:/:" (POST actions) and "/v1/jobs/:/events" (GET)
 * both match GET /v1/jobs/1/events, and the method decides. */
static bool match(const char *pat, const char *path, struct ctl_req *r)
{
    int ncap = 0;
    while (*pat && *path) {
        if (*pat == ':') {
            const char *end = strchr(path, '/');
            size_t n = end ? (size_t)(end - path) : strlen(path);
            if (n == 0 || n >= sizeof(r->argbuf[0]) || ncap >= 4)
                return false;
            memcpy(r->argbuf[ncap], path, n);
            r->argbuf[ncap][n] = '\0';
            r->arg[ncap] = r->argbuf[ncap];
            ncap++;
            pat++;
            path += n;
            continue;
        }
        if (*pat != *path)
            return false;
        pat++;
        path++;
    }
    return *pat == '\0' && *path == '\0';
}

static const struct route *find_route(const char *path, int method, struct ctl_req *r,
                                      bool *path_known)
{
    *path_known = false;
    /* fixed segments beat captures: try routes without ':' first, then the others */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
            bool has_cap = strchr(routes[i].pattern, ':') != NULL;
            if (has_cap != (pass == 1))
                continue;
            /* "/v1/jobs/:/:" is the action route: only for POST */
            if (!match(routes[i].pattern, path, r))
                continue;
            *path_known = true;
            if (routes[i].method == method)
                return &routes[i];
        }
    return NULL;
}

json_t *ctl_body_json(struct ctl_req *r, bool allow_empty)
{
    if (!r->body || r->body_len == 0) {
        if (allow_empty)
            return json_object();
        ctl_reply_errorf(r->c, r->req, 400, NULL, "a JSON body is required");
        return NULL;
    }
    json_error_t je;
    json_t *v = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        ctl_reply_errorf(r->c, r->req, 400, NULL, "malformed json: %s (line %d, column %d)",
                         je.text, je.line, je.column);
        return NULL;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        ctl_reply_errorf(r->c, r->req, 400, NULL, "the body must be a JSON object");
        return NULL;
    }
    return v;
}

const char *ctl_query(struct ctl_req *r, const char *key)
{
    return r->query ? evhttp_find_header(r->query, key) : NULL;
}

static int authenticate(struct ctl *c, struct evhttp_request *req, bool is_unix,
                        struct ctl_ident *id)
{
    memset(id, 0, sizeof(*id));
    /* a bearer token wins over the socket identity (an agent on the same host) */
    if (evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization"))
        return ident_bearer(c, req, id);
    return is_unix ? ident_unix(req, id) : -EACCES;
}

static int check_route_auth(struct ctl_req *r, enum route_auth a, int auth_rc)
{
    struct proto_error e;
    if (a == A_PUBLIC || a == A_NONE_HANDLER)
        return 0;
    if (auth_rc < 0) {
        ctl_reply_errorf(r->c, r->req, 401, NULL, "missing or invalid credentials");
        return -EACCES;
    }
    enum ctl_action act = a == A_ADMIN ? CTL_ADMIN : a == A_AGENT ? CTL_AGENT : CTL_READ;
    if (ctl_authorize(&r->id, act, NULL, &e) < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return -EPERM;
    }
    return 0;
}

static int read_body(struct ctl_req *r, char **owned)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
    size_t n = evbuffer_get_length(in);
    *owned = NULL;
    if (n > r->c->cfg.max_body_bytes) {
        ctl_reply_errorf(r->c, r->req, 413, NULL,
                         "request body of %zu bytes is over the limit of %zu", n,
                         r->c->cfg.max_body_bytes);
        return -E2BIG;
    }
    if (n == 0)
        return 0;
    char *b = malloc(n + 1);
    if (!b)
        return -ENOMEM;
    evbuffer_copyout(in, b, n);
    b[n] = '\0';
    r->body = b;
    r->body_len = n;
    *owned = b;
    return 0;
}

static void dispatch(struct evhttp_request *req, struct ctl *c, bool is_unix)
{
    struct ctl_req r;
    struct evkeyvalq query;
    char *body = NULL;
    memset(&r, 0, sizeof(r));
    r.c = c;
    r.req = req;
    r.method = evhttp_request_get_command(req);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    const char *qs = uri ? evhttp_uri_get_query(uri) : NULL;
    memset(&query, 0, sizeof(query)); /* evhttp_parse_query_str initialises it */
    c->req_failed = false;
    if (c->shutting_down) {
        ctl_reply_errorf(c, req, 503, NULL, "docketd is shutting down");
        return;
    }
    if (!path || (qs && evhttp_parse_query_str(qs, &query) < 0)) {
        ctl_reply_errorf(c, req, 400, NULL, "malformed request uri");
        evhttp_clear_headers(&query);
        return;
    }
    r.query = &query;
    bool known;
    const struct route *rt = find_route(path, (int)r.method, &r, &known);
    int auth_rc = authenticate(c, req, is_unix, &r.id);
    if (!rt) {
        if (known)
            ctl_reply_errorf(c, req, 405, NULL, "method not allowed on '%s'", path);
        else
            ctl_reply_errorf(c, req, 404, NULL, "no such endpoint '%s'", path);
    } else if (check_route_auth(&r, rt->auth, auth_rc) == 0 && read_body(&r, &body) == 0) {
        bool writes = r.method != EVHTTP_REQ_GET;
        if (writes && store_savepoint(c->store) < 0) {
            ctl_reply_errorf(c, req, 500, NULL, "store: %s", store_errmsg(c->store));
        } else {
            rt->fn(&r);
            if (c->diverged)
                writes = false; /* rolled back whole (ctl_store_diverged) */
            if (writes && c->req_failed)
                store_rollback_to(c->store);
            else if (writes && store_release(c->store) < 0)
                log_error("savepoint_release_failed", "error=\"%s\"", store_errmsg(c->store));
            if (writes)
                ctl_commit_soon(c);
        }
    }
    free(body);
    evhttp_clear_headers(&query);
}

static void tcp_cb(struct evhttp_request *req, void *arg)
{
    dispatch(req, arg, false);
}

static void unix_cb(struct evhttp_request *req, void *arg)
{
    dispatch(req, arg, true);
}

/* ------------------------------------------------------------------------------------ */
/* Servers                                                                               */

static int write_port_file(struct ctl *c, int port)
{
    char path[CTL_PATH_MAX + 32], tmp[CTL_PATH_MAX + 48];
    snprintf(path, sizeof(path), "%s/docketd.port", c->cfg.state_dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -errno;
    fprintf(f, "%d\n", port);
    if (fclose(f) != 0 || rename(tmp, path) < 0)
        return -errno;
    return 0;
}

static int split_host_port(const char *s, char *host, size_t hlen, int *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s)
        return -EINVAL;
    size_t n = (size_t)(colon - s);
    if (n >= hlen)
        return -EINVAL;
    memcpy(host, s, n);
    host[n] = '\0';
    if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
        memmove(host, host + 1, n - 2);
        host[n - 2] = '\0';
    }
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || p < 0 || p > 65535)
        return -EINVAL;
    *port = (int)p;
    return 0;
}

static struct evhttp *new_http(struct ctl *c, void (*cb)(struct evhttp_request *, void *))
{
    struct evhttp *h = evhttp_new(c->base);
    if (!h)
        return NULL;
    /* Past 4x the limit libevent refuses the body itself (413 without JSON); up to it we
     * read it and answer the JSON 413 of docs/api.md. */
    evhttp_set_max_body_size(h, (ev_ssize_t)(c->cfg.max_body_bytes * 4 + 65536));
    evhttp_set_max_headers_size(h, 64 * 1024);
    evhttp_set_timeout(h, 120);
    evhttp_set_allowed_methods(h, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PATCH |
                                      EVHTTP_REQ_DELETE | EVHTTP_REQ_PUT | EVHTTP_REQ_HEAD);
    evhttp_set_gencb(h, cb, c);
    return h;
}

static int start_tcp(struct ctl *c, char *err, size_t errlen)
{
    char host[256];
    int port;
    if (split_host_port(c->cfg.listen, host, sizeof(host), &port) < 0) {
        snprintf(err, errlen, "invalid listen address '%s' (HOST:PORT)", c->cfg.listen);
        return -EINVAL;
    }
    c->http_tcp = new_http(c, tcp_cb);
    struct evhttp_bound_socket *bs =
        evhttp_bind_socket_with_handle(c->http_tcp, host, (ev_uint16_t)port);
    if (!bs) {
        snprintf(err, errlen, "cannot listen on '%s': %s", c->cfg.listen, strerror(errno));
        return -EADDRINUSE;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = evhttp_bound_socket_get_fd(bs);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    int rc = write_port_file(c, port);
    if (rc < 0) {
        snprintf(err, errlen, "cannot write the port file: %s", strerror(-rc));
        return rc;
    }
    log_info("listening", "addr=%s port=%d", host, port);
    return 0;
}

static int start_unix(struct ctl *c, char *err, size_t errlen)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (str_copy(sa.sun_path, sizeof(sa.sun_path), c->cfg.socket_path) < 0) {
        snprintf(err, errlen, "socket path '%s' is too long", c->cfg.socket_path);
        return -ENAMETOOLONG;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    unlink(c->cfg.socket_path);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
        snprintf(err, errlen, "cannot listen on '%s': %s", c->cfg.socket_path, strerror(errno));
        close(fd);
        return -EADDRINUSE;
    }
    chmod(c->cfg.socket_path, 0666); /* everyone may connect; SO_PEERCRED says who */
    c->http_unix = new_http(c, unix_cb);
    if (evhttp_accept_socket(c->http_unix, fd) < 0) {
        snprintf(err, errlen, "cannot serve '%s'", c->cfg.socket_path);
        close(fd);
        return -EIO;
    }
    log_info("listening", "socket=%s", c->cfg.socket_path);
    return 0;
}

int ctl_http_start(struct ctl *c, char *err, size_t errlen)
{
    int rc;
    c->commit_ev = xnonnull(event_new(c->base, -1, 0, commit_cb, c), "commit event");
    /* commits run after the handlers of this iteration (lower priority number = first) */
    if (c->cfg.listen[0] && (rc = start_tcp(c, err, errlen)) < 0)
        return rc;
    if (strcmp(c->cfg.socket_path, "-") != 0 && (rc = start_unix(c, err, errlen)) < 0)
        return rc;
    return 0;
}

void ctl_http_stop(struct ctl *c)
{
    if (c->http_tcp)
        evhttp_free(c->http_tcp);
    if (c->http_unix) {
        evhttp_free(c->http_unix);
        unlink(c->cfg.socket_path);
    }
    c->http_tcp = c->http_unix = NULL;
    if (c->commit_ev)
        event_free(c->commit_ev);
    c->commit_ev = NULL;
}
