/*
 * http.c - docketd's HTTP side: the TCP and Unix-socket servers (evhttp), identity
 * (SO_PEERCRED on the socket, bearer tokens over TCP), the one authorization function,
 * routing, body limits, and the replies that wait for the group commit (ctl.h, http.h).
 * The API itself is docs/api.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
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

#include "controller/admin.h"
#include "controller/agent.h"
#include "controller/alerts.h"
#include "controller/anchor.h"
#include "controller/lifecycle.h"
#include "controller/storage.h"
#include "controller/authz.h"
#include "controller/backup.h"
#include "controller/config.h"
#include "controller/conn.h"
#include "controller/console.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/leader.h"
#include "controller/live.h"
#include "controller/jobs.h"
#include "controller/jobupdate.h"
#include "controller/logs.h"
#include "controller/metrics.h"
#include "controller/reports.h"
#include "controller/secrets.h"
#include "controller/services.h"
#include "controller/stream.h"
#include "controller/tty.h"
#include "controller/sync.h"
#include "controller/site.h"
#include "controller/templates.h"
#include "controller/warm.h"
#include "controller/tls.h"
#include "controller/turns.h"
#include "controller/usage.h"
#include "controller/written.h"
#include "util/clock.h"
#include "util/parse.h"
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
    if (status != 200) /* a list's tag (live.c) names its rows, never an error */
        evhttp_remove_header(evhttp_request_get_output_headers(req), "ETag");
    if (status >= 0 && status < 600)
        c->metrics.http_by_code[status]++;
    evhttp_send_reply(req, status, NULL, buf);
    evbuffer_free(buf);
    c->turn.replies++;
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
    /* outside a transaction, a reply may still read what a commit wrote before its sync
     * ended: it waits for that sync, as that commit's own replies do */
    bool unsynced = c->commit_gen > c->synced_gen;
    if (!store_in_tx(c->store) && !unsynced) {
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
    /* in a transaction: gen 0, set by its commit; else the commit already made */
    uint64_t gen = store_in_tx(c->store) ? 0 : c->commit_gen;
    *r = (struct ctl_reply){req, gen, status, copy, len, ctype, NULL};
    /* the client may go away before the commit: libevent then frees the request */
    struct evhttp_connection *con = evhttp_request_get_connection(req);
    if (con)
        ctl_conn_watch(c, con, reply_conn_closed, r);
    if (c->replies_tail)
        c->replies_tail->next = r;
    else
        c->replies = r;
    c->replies_tail = r;
    if (gen == 0)
        ctl_commit_soon(c);
    /* else the sync in flight, or the one that follows it (sync.c), releases it */
}

void ctl_reply_now(struct ctl *c, struct evhttp_request *req, int status, const char *ctype,
                   const void *data, size_t len)
{
    if (c->diverged) {
        send_now(c, req, 500, "application/json", commit_failed_json,
                 sizeof(commit_failed_json) - 1);
        return;
    }
    send_now(c, req, status, ctype, data, len);
}

void ctl_reply_json_now(struct ctl *c, struct evhttp_request *req, int status, json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text) {
        ctl_reply_now(c, req, 500, "application/json", oom_json, sizeof(oom_json) - 1);
        return;
    }
    ctl_reply_now(c, req, status, "application/json", text, strlen(text));
    free(text);
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

/* The one reply of stored state that may leave before the turn's commit and sync: what
 * it shows of the store is job j alone, and nothing j's row, spec or array marker hold is
 * ahead of the disk (written.c has the invariant). The core's view of j (state, reason,
 * effective tier) is never ahead of j's row: every change of it is written to the row in
 * the same callback ("Core and database together"), which marks the row. */
void ctl_reply_json_job(struct ctl *c, struct evhttp_request *req, int status, json_t *body,
                        const struct store_job *j)
{
    if (!ctl_job_durable(c, j)) {
        ctl_reply_json(c, req, status, body);
        return;
    }
    ctl_reply_json_now(c, req, status, body);
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
        ctl_conn_watch(c, con, NULL, NULL);
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
    if (rc == 0 && gen > c->synced_gen) {
        c->synced_gen = gen;
        ctl_written_synced(c, gen);
    }
    if (rc == 0)
        ctl_anchor_synced(c, c->synced_gen);
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
    if (had_tx && rc == 0) {
        c->commit_gen++; /* the generation written.c gave this transaction's writes */
        ctl_anchor_committed(c, c->commit_gen);
        ctl_live_committed(c);
    } else if (rc < 0) {
        c->audit_dirty = false;
    }
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

static void commit_ev_cb(evutil_socket_t fd, short what, void *arg)
{
    int64_t t0 = ctl_turn_enter(arg);
    commit_cb(fd, what, arg);
    ctl_turn_leave(arg, CTL_TURN_COMMIT, t0);
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
/* Identity                                                                              */

static int ident_unix(struct ctl *c, struct evhttp_request *req, struct ctl_ident *id)
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
    bool named = getpwuid_r(cred.uid, &pw, buf, sizeof(buf), &res) == 0 && res;
    /* by uid: root, docketd's own and the configured admin uids administer it; a login
     * name never makes an admin (authz.c) */
    ctl_authz_socket_ident((unsigned)cred.uid, named ? pw.pw_name : NULL, (unsigned)geteuid(),
                           c->cfg.admin_uids, c->cfg.n_admin_uids, id);
    return 0;
}

/* Does a derived token's chain hold a dead ancestor (revoked, expired or gone)? A revoke
 * revokes the descendants in its transaction too; this walk is the check that holds
 * whatever wrote the rows. A chain deeper than CTL_TOKEN_CHAIN_MAX counts as dead. */
static bool chain_dead(struct ctl *c, const struct store_token *t, char *why, size_t wlen)
{
    struct store_token a = *t;
    int64_t now = clock_now_ms();
    for (int depth = 0; a.parent[0]; depth++) {
        char parent[65];
        str_copy(parent, sizeof(parent), a.parent);
        bool gone = depth >= CTL_TOKEN_CHAIN_MAX || store_token_get(c->store, parent, &a) < 0;
        if (gone || a.revoked_ms || (a.expires_ms && a.expires_ms < now)) {
            snprintf(why, wlen,
                     "token %s was derived from token %.12s, which was %s: it ends with it "
                     "(log in again: docket console)",
                     t->id, parent,
                     gone           ? "removed"
                     : a.revoked_ms ? "revoked"
                                    : "expired");
            return true;
        }
    }
    return false;
}

/* 0, or -EACCES with why[] saying what to do (the 401's message). */
static int ident_bearer(struct ctl *c, struct evhttp_request *req, struct ctl_ident *id, char *why,
                        size_t wlen)
{
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    snprintf(why, wlen,
             "missing or invalid credentials: send 'Authorization: Bearer TOKEN' "
             "(DOCKET_TOKEN; an admin makes one with docket token create)");
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
    if (t.revoked_ms) {
        snprintf(why, wlen,
                 "token %s was revoked: ask an admin for a new one "
                 "(docket token create --user %s)",
                 t.id, t.user);
        return -EACCES;
    }
    if (t.expires_ms && t.expires_ms < clock_now_ms()) {
        snprintf(why, wlen,
                 "token %s expired: ask an admin for a new one "
                 "(docket token create --user %s)",
                 t.id, t.user);
        return -EACCES;
    }
    if (t.parent[0] && chain_dead(c, &t, why, wlen))
        return -EACCES;
    str_copy(id->token_id, sizeof(id->token_id), t.id);
    str_copy(id->token_hash, sizeof(id->token_hash), t.hash);
    if (t.kind == STORE_TOKEN_NODE) {
        id->node = true;
        str_copy(id->node_name, sizeof(id->node_name), t.user);
        str_copy(id->user, sizeof(id->user), t.user);
        /* "node", or "pending": a rotated credential not used yet (agent.c) */
        id->node_pending = strcmp(t.role, "pending") == 0;
        return 0;
    }
    if (t.kind != STORE_TOKEN_USER || ctl_role_parse(t.role, &id->role) < 0)
        return -EACCES; /* a join token is no credential; an unknown role has no power */
    str_copy(id->user, sizeof(id->user), t.user);
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Routing                                                                               */

enum {
    M_GET = EVHTTP_REQ_GET,
    M_POST = EVHTTP_REQ_POST,
    M_PATCH = EVHTTP_REQ_PATCH,
    M_DELETE = EVHTTP_REQ_DELETE,
    M_PUT = EVHTTP_REQ_PUT
};

/* What a route acts on, for the check: nothing, the job or project or token named by
 * the first path capture, or a project named in the body (the handler calls
 * ctl_req_authorize once it has read it). */
enum route_target { T_NONE, T_JOB, T_PROJECT, T_TOKEN, T_USER, T_BODY };

/* THE table: every route, its handler and the permission it needs (authz.c decides).
 * tests/system/roles.bats tries every line as every role (a route missing from its
 * matrix fails it), and docs/api.md is checked against `docketd --routes`. */
static const struct route {
    int method;
    const char *pattern;
    void (*fn)(struct ctl_req *r);
    enum ctl_perm perm;
    enum route_target target;
} routes[] = {
    {M_POST, "/v1/jobs", h_jobs_submit, CTL_P_SUBMIT, T_BODY},
    {M_GET, "/v1/jobs", h_jobs_list, CTL_P_READ, T_NONE},
    {M_GET, "/v1/jobs/:", h_job_show, CTL_P_READ, T_JOB},
    /* scontrol update (jobupdate.c): the owner, its project's leads, admins */
    {M_PATCH, "/v1/jobs/:", h_job_update, CTL_P_JOB_PRIVATE, T_JOB},
    {M_POST, "/v1/jobs/:/:", h_job_action, CTL_P_JOB_CONTROL, T_JOB},
    {M_GET, "/v1/jobs/:/events", h_job_events, CTL_P_READ, T_JOB},
    {M_GET, "/v1/jobs/:/explain", h_job_explain, CTL_P_READ, T_JOB},
    {M_GET, "/v1/jobs/:/logs", h_job_logs, CTL_P_JOB_PRIVATE, T_JOB},
    {M_GET, "/v1/jobs/:/usage", h_job_usage, CTL_P_READ, T_JOB},
    /* an interactive session's terminal (tty.c): the owner alone, checked there */
    {M_GET, "/v1/jobs/:/tty", h_job_tty, CTL_P_JOB_PRIVATE, T_JOB},
    {M_GET, "/v1/forecast", h_forecast, CTL_P_READ, T_NONE},
    {M_GET, "/v1/nodes", h_nodes_list, CTL_P_READ, T_NONE},
    {M_GET, "/v1/nodes/:", h_node_show, CTL_P_READ, T_NONE},
    {M_POST, "/v1/nodes/:/drain", h_node_drain, CTL_P_OPERATOR, T_NONE},
    {M_POST, "/v1/nodes/:/resume", h_node_resume, CTL_P_OPERATOR, T_NONE},
    {M_POST, "/v1/nodes/:/down", h_node_down, CTL_P_ADMIN, T_NONE},
    {M_POST, "/v1/nodes/:/labels", h_node_labels, CTL_P_OPERATOR, T_NONE},
    {M_POST, "/v1/nodes/:/replace", h_node_replace, CTL_P_ADMIN, T_NONE},
    {M_GET, "/v1/projects", h_projects_list, CTL_P_READ, T_NONE},
    {M_POST, "/v1/projects", h_project_create, CTL_P_ADMIN, T_NONE},
    {M_GET, "/v1/projects/:", h_project_show, CTL_P_READ, T_PROJECT},
    {M_PATCH, "/v1/projects/:", h_project_patch, CTL_P_PROJECT_LEAD, T_PROJECT},
    {M_POST, "/v1/projects/:/boost", h_project_boost, CTL_P_OPERATOR, T_PROJECT},
    {M_DELETE, "/v1/projects/:/boost", h_project_unboost, CTL_P_OPERATOR, T_PROJECT},
    {M_POST, "/v1/projects/:/pause", h_project_pause, CTL_P_ADMIN, T_PROJECT},
    {M_POST, "/v1/projects/:/resume", h_project_resume, CTL_P_ADMIN, T_PROJECT},
    {M_GET, "/v1/projects/:/usage", h_project_usage, CTL_P_READ, T_PROJECT},
    {M_GET, "/v1/projects/:/members", h_members_list, CTL_P_READ, T_PROJECT},
    {M_POST, "/v1/projects/:/members", h_member_add, CTL_P_PROJECT_LEAD, T_PROJECT},
    {M_DELETE, "/v1/projects/:/members/:", h_member_remove, CTL_P_PROJECT_LEAD, T_PROJECT},
    /* secrets: a lead of that project or an admin (DESIGN §2); values never leave docketd
     * but in a start command, so even they only set, list names and remove */
    {M_GET, "/v1/projects/:/secrets", h_secrets_list, CTL_P_PROJECT_LEAD, T_PROJECT},
    {M_PUT, "/v1/projects/:/secrets/:", h_secret_put, CTL_P_PROJECT_LEAD, T_PROJECT},
    {M_DELETE, "/v1/projects/:/secrets/:", h_secret_delete, CTL_P_PROJECT_LEAD, T_PROJECT},
    /* a user's default project (Slurm's default account): the user or an admin reads and
     * sets it, never a lead (issue 33: a lead pointed another project's member's jobs at
     * its own); a user only to a project of its own (h_user_default_set asks authz.c) */
    {M_GET, "/v1/users/:/default_project", h_user_default_get, CTL_P_SELF, T_USER},
    {M_POST, "/v1/users/:/default_project", h_user_default_set, CTL_P_SELF, T_USER},
    /* services (services.c): anyone reads them; a member creates one in its project (the
     * handler checks the body's project); its owner, a lead, an operator or an admin
     * scales or removes it (the handler checks the service's project and owner) */
    {M_GET, "/v1/services", h_services_list, CTL_P_READ, T_NONE},
    {M_POST, "/v1/services", h_services_create, CTL_P_SUBMIT, T_BODY},
    {M_GET, "/v1/services/:", h_service_show, CTL_P_READ, T_NONE},
    {M_POST, "/v1/services/:/scale", h_service_scale, CTL_P_JOB_CONTROL, T_BODY},
    {M_POST, "/v1/services/:/update", h_service_update, CTL_P_JOB_CONTROL, T_BODY},
    {M_DELETE, "/v1/services/:", h_service_delete, CTL_P_JOB_CONTROL, T_BODY},
    /* project storage (docs/storage.md): anyone reads pools and usage; an admin gives a
     * project an area on a pool, with its quota, or forgets it */
    {M_GET, "/v1/storage", h_storage_list, CTL_P_READ, T_NONE},
    {M_PUT, "/v1/projects/:/storage/:", h_storage_area_put, CTL_P_ADMIN, T_PROJECT},
    {M_DELETE, "/v1/projects/:/storage/:", h_storage_area_delete, CTL_P_ADMIN, T_PROJECT},
    /* lifecycle runs (docs/storage.md "Lifecycle rules"): anyone reads the rules and the
     * history; only an admin starts a run, dry or real */
    {M_GET, "/v1/storage/lifecycle", h_lifecycle_list, CTL_P_READ, T_NONE},
    {M_POST, "/v1/storage/lifecycle", h_lifecycle_start, CTL_P_ADMIN, T_NONE},
    {M_GET, "/v1/storage/lifecycle/runs/:", h_lifecycle_run_get, CTL_P_READ, T_NONE},
    {M_GET, "/v1/tiers", h_tiers, CTL_P_READ, T_NONE},
    {M_GET, "/v1/classes", h_classes, CTL_P_READ, T_NONE},
    {M_PATCH, "/v1/classes/:", h_class_patch, CTL_P_ADMIN, T_NONE},
    {M_GET, "/v1/templates", h_templates_list, CTL_P_READ, T_NONE},
    {M_GET, "/v1/partitions", h_partitions, CTL_P_READ, T_NONE},
    {M_GET, "/v1/templates/:", h_template_show, CTL_P_READ, T_NONE},
    /* warm a template on nodes (warm.c): admins, the leads of the project owning it */
    {M_POST, "/v1/templates/:/warm", h_template_warm, CTL_P_PROJECT_LEAD, T_BODY},
    {M_GET, "/v1/policy", h_policy_get, CTL_P_READ, T_NONE},
    {M_POST, "/v1/policy", h_policy_apply, CTL_P_ADMIN, T_NONE},
    {M_GET, "/v1/audit", h_audit, CTL_P_AUDIT, T_NONE},
    {M_GET, "/v1/audit/verify", h_audit_verify, CTL_P_AUDIT, T_NONE},
    {M_POST, "/v1/tokens", h_tokens, CTL_P_ADMIN, T_NONE},
    {M_GET, "/v1/tokens", h_tokens_list, CTL_P_READ, T_NONE},
    {M_DELETE, "/v1/tokens/:", h_token_revoke, CTL_P_TOKEN_OWNER, T_TOKEN},
    {M_POST, "/v1/tokens/rotate-admin", h_token_rotate_admin, CTL_P_ADMIN, T_NONE},
    {M_POST, "/v1/join-tokens", h_join_tokens, CTL_P_OPERATOR, T_NONE},
    {M_POST, "/v1/agent/register", h_agent_register, CTL_P_PUBLIC, T_NONE},
    {M_POST, "/v1/agent/heartbeat", h_agent_heartbeat, CTL_P_AGENT, T_NONE},
    {M_POST, "/v1/agent/events", h_agent_events, CTL_P_AGENT, T_NONE},
    {M_POST, "/v1/agent/logs", h_agent_logs, CTL_P_AGENT, T_NONE},
    {M_POST, "/v1/agent/rotate", h_agent_rotate, CTL_P_AGENT, T_NONE},
    {M_GET, "/v1/agent/jobs/:/tty", h_agent_tty, CTL_P_AGENT, T_NONE},
    /* alerts: anyone may read what fires (as anyone may read jobs and nodes); operators
     * silence; reports carry every project's usage and cost: the audit readers */
    {M_GET, "/v1/alerts", h_alerts_list, CTL_P_READ, T_NONE},
    {M_GET, "/v1/changes", h_changes, CTL_P_READ, T_NONE},
    {M_GET, "/v1/alerts/history", h_alerts_history, CTL_P_READ, T_NONE},
    {M_GET, "/v1/alerts/silences", h_silences_list, CTL_P_READ, T_NONE},
    {M_POST, "/v1/alerts/silences", h_silence_add, CTL_P_OPERATOR, T_NONE},
    {M_DELETE, "/v1/alerts/silences/:", h_silence_delete, CTL_P_OPERATOR, T_NONE},
    {M_GET, "/v1/reports/usage", h_report_usage, CTL_P_READ, T_NONE}, /* leads: reports.c */
    {M_GET, "/v1/reports/capacity", h_report_capacity, CTL_P_AUDIT, T_NONE},
    /* a copy of the whole database: token hashes, sealed secrets, the audit trail */
    {M_GET, "/v1/admin/backup", h_admin_backup, CTL_P_ADMIN, T_NONE},
    {M_GET, "/healthz", h_healthz, CTL_P_PUBLIC, T_NONE},
    {M_GET, "/metrics", h_metrics, CTL_P_READ, T_NONE},
    /* the web console (console.c): its page and files carry no data, so they are public;
     * the page logs in with a token, or exchanges the one-time code of `docket console` */
    {M_GET, "/", h_console_page, CTL_P_PUBLIC, T_NONE},
    {M_GET, "/console/:", h_console_asset, CTL_P_PUBLIC, T_NONE},
    {M_POST, "/v1/console/codes", h_console_code, CTL_P_READ, T_NONE},
    {M_POST, "/v1/console/session", h_console_session, CTL_P_PUBLIC, T_NONE},
    {M_GET, "/v1/whoami", h_whoami, CTL_P_READ, T_NONE},
};

void ctl_routes_print(FILE *out)
{
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const struct route *rt = &routes[i];
        const char *m = rt->method == M_GET     ? "GET"
                        : rt->method == M_POST  ? "POST"
                        : rt->method == M_PATCH ? "PATCH"
                        : rt->method == M_PUT   ? "PUT"
                                                : "DELETE";
        fprintf(out, "%s %s %s\n", m, rt->pattern, ctl_perm_name(rt->perm));
    }
}

/* A path segment as the client meant it ("%31%32" is "12"): percent-decoded in place.
 * A segment that decodes to a NUL byte or a '/' names nothing. */
int ctl_path_decode(char *seg, size_t cap)
{
    if (!strchr(seg, '%'))
        return 0;
    size_t n = 0;
    char *d = evhttp_uridecode(seg, 0, &n);
    int rc = d && n < cap && memchr(d, '\0', n) == NULL && memchr(d, '/', n) == NULL ? 0 : -1;
    if (rc == 0)
        memcpy(seg, d, n + 1);
    free(d);
    return rc;
}

/* The lists the console polls and the topics each shows (live.c): a GET of one is
 * answered 304 while its topic is unchanged. */
static const struct {
    void (*fn)(struct ctl_req *r);
    unsigned topics;
} polled[] = {
    {h_jobs_list, CTL_TOPIC_JOBS},
    {h_nodes_list, CTL_TOPIC_NODES},
    {h_projects_list, CTL_TOPIC_PROJECTS},
    {h_alerts_list, CTL_TOPIC_ALERTS},
};

static unsigned polled_topics(const struct route *rt)
{
    for (size_t i = 0; i < sizeof(polled) / sizeof(polled[0]); i++)
        if (rt->method == M_GET && rt->fn == polled[i].fn)
            return polled[i].topics;
    return 0;
}

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
            if (ctl_path_decode(r->argbuf[ncap], sizeof(r->argbuf[ncap])) < 0)
                return false;
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
                        struct ctl_ident *id, char *why, size_t wlen)
{
    memset(id, 0, sizeof(*id));
    /* a bearer token wins over the socket identity (an agent on the same host) */
    if (evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization") || !is_unix)
        return ident_bearer(c, req, id, why, wlen);
    return ident_unix(c, req, id);
}

static int member_cb(void *arg, const char *project, const char *user, const char *role)
{
    (void)user;
    json_object_set_new(arg, project, json_string(role));
    return 0;
}

void ctl_req_target(struct ctl_req *r, const char *project, const char *owner, struct ctl_target *t)
{
    memset(t, 0, sizeof(*t));
    t->project = project;
    t->owner = owner;
    if (!project || r->id.node || !r->id.user[0])
        return;
    if (!r->my_projects) { /* one query per request, however many jobs it shows */
        r->my_projects = json_object();
        if (store_member_list(r->c->store, NULL, r->id.user, member_cb, r->my_projects) < 0)
            log_error("store_failed", "what=members error=\"%s\"", store_errmsg(r->c->store));
    }
    t->prole = ctl_prole_in(r->my_projects, project);
}

enum ctl_prole ctl_prole_in(const json_t *projects, const char *project)
{
    const char *role = project ? json_string_value(json_object_get(projects, project)) : NULL;
    return !role ? CTL_PROLE_NONE : strcmp(role, "lead") == 0 ? CTL_PROLE_LEAD : CTL_PROLE_MEMBER;
}

static int authorize_target(struct ctl_req *r, const char *project, const char *owner)
{
    struct proto_error e;
    if (project)
        str_copy(r->tgt_project, sizeof(r->tgt_project), project);
    if (owner)
        str_copy(r->tgt_owner, sizeof(r->tgt_owner), owner);
    ctl_req_target(r, project ? r->tgt_project : NULL, owner ? r->tgt_owner : NULL, &r->tgt);
    r->authorized = true;
    if (ctl_authz_check(&r->id, r->perm, &r->tgt, &e) < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return -EPERM;
    }
    return 0;
}

int ctl_req_authorize(struct ctl_req *r, const char *project, const char *owner)
{
    return authorize_target(r, project, owner);
}

/* A node credential's "user" is its node's name, no person: only admins revoke it. */
static int token_owner_cb(void *arg, const struct store_token *t)
{
    str_copy(arg, 64, t->kind == STORE_TOKEN_NODE ? "" : t->user);
    return 1;
}

/* Resolve what the route acts on (404 when it does not exist) and check the caller's
 * permission on it. T_BODY routes are checked by their handler (ctl_req_authorize). */
static int check_route(struct ctl_req *r, const struct route *rt, int auth_rc, const char *why)
{
    char project[64] = "", owner[64] = "";
    r->perm = rt->perm;
    if (rt->perm == CTL_P_PUBLIC) {
        r->authorized = true;
        return 0;
    }
    if (auth_rc < 0) {
        ctl_reply_errorf(r->c, r->req, 401, NULL, "%s", why);
        return -EACCES;
    }
    int64_t id;
    switch (rt->target) {
    case T_BODY:
        if (r->id.node) /* nothing in a body makes a node credential a user */
            return authorize_target(r, NULL, NULL);
        return 0;
    case T_JOB:
        if (parse_int64(r->arg[0], 1, INT64_MAX, &id) < 0 ||
            store_job_owner(r->c->store, (uint64_t)id, project, sizeof(project), owner,
                            sizeof(owner)) < 0) {
            ctl_reply_errorf(r->c, r->req, 404, NULL, "no such job '%.32s'", r->arg[0]);
            return -ENOENT;
        }
        return authorize_target(r, project, owner);
    case T_PROJECT:
        return authorize_target(r, r->arg[0], NULL);
    case T_TOKEN:
        if (store_token_list(r->c->store, NULL, r->arg[0], token_owner_cb, owner) <= 0) {
            ctl_reply_errorf(r->c, r->req, 404, NULL, "no such token '%.32s'", r->arg[0]);
            return -ENOENT;
        }
        return authorize_target(r, NULL, owner);
    case T_USER: /* the user named in the path */
        return authorize_target(r, NULL, r->arg[0]);
    default:
        return authorize_target(r, NULL, NULL);
    }
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
    ctl_conn_request_begins(c, req);
    if (c->shutting_down) {
        ctl_reply_errorf(c, req, 503, NULL, "docketd is shutting down");
        return;
    }
    if (c->standby) {
        ctl_standby_reply(c, req);
        return;
    }
    if (!path || (qs && evhttp_parse_query_str(qs, &query) < 0)) {
        ctl_reply_errorf(c, req, 400, NULL, "malformed request uri");
        evhttp_clear_headers(&query);
        return;
    }
    r.query = &query;
    bool known;
    char why[256];
    const struct route *rt = find_route(path, (int)r.method, &r, &known);
    int auth_rc = authenticate(c, req, is_unix, &r.id, why, sizeof(why));
    if (auth_rc == 0) /* a token, a node credential or a socket peer: no slowloris */
        ctl_conn_proven(c, req);
    if (!rt) {
        if (known)
            ctl_reply_errorf(c, req, 405, NULL, "method not allowed on '%s'", path);
        else
            ctl_reply_errorf(c, req, 404, NULL, "no such endpoint '%s'", path);
    } else if (check_route(&r, rt, auth_rc, why) == 0 && read_body(&r, &body) == 0) {
        bool writes = r.method != EVHTTP_REQ_GET;
        if (writes && store_savepoint(c->store) < 0) {
            ctl_reply_errorf(c, req, 500, NULL, "store: %s", store_errmsg(c->store));
        } else if (!(polled_topics(rt) && ctl_live_not_modified(&r, polled_topics(rt)))) {
            rt->fn(&r);
            /* a handler whose target is in the body must have asked authz.c before doing
             * anything; one that did not is a bug, and its work is not kept */
            if (!r.authorized && !c->req_failed) {
                log_error("authz_not_checked", "route=\"%s\"", rt->pattern);
                c->req_failed = true;
            }
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
    json_decref(r.my_projects);
    evhttp_clear_headers(&query);
}

static enum ctl_turn_kind request_kind(struct evhttp_request *req)
{
    const char *uri = evhttp_request_get_uri(req);
    if (uri && strcmp(uri, "/v1/agent/heartbeat") == 0)
        return CTL_TURN_HEARTBEAT;
    if (uri && strcmp(uri, "/v1/agent/events") == 0)
        return CTL_TURN_EVENTS;
    return CTL_TURN_REQUEST;
}

/* ------------------------------------------------------------------------------------ */
/* Heartbeats, at most CTL_HEARTBEATS_PER_TURN a loop turn                               */

/* Each heartbeat is a request of its own, and every one whose bytes are in when the loop
 * polls runs in that turn: 300 in one turn of 36 ms in the sanitizer build, up to 800
 * (34 ms, release) in a fleet of 10,000 agents. Past CTL_HEARTBEATS_PER_TURN in a turn, a
 * heartbeat waits for a later turn (a zero timer, so the loop polls its sockets in
 * between) in the order it came; while any waits, a new one queues behind it. Its
 * connection is watched meanwhile: a client that leaves takes its request with it. */
struct ctl_hb_wait {
    struct evhttp_request *req; /* NULL once the client left */
    bool is_unix;
    struct ctl_hb_wait *next;
};

static void heartbeat(struct ctl *c, struct evhttp_request *req, bool is_unix)
{
    dispatch(req, c, is_unix);
    c->turn.heartbeats++;
}

static void hb_wait_left(struct evhttp_connection *con, void *arg)
{
    struct ctl_hb_wait *w = arg;
    (void)con;
    w->req = NULL; /* libevent frees an unanswered request with its connection */
}

/* Take w off the queue, its connection no longer watched; its request (NULL: gone). */
static struct evhttp_request *hb_unqueue(struct ctl *c, struct ctl_hb_wait *w)
{
    struct evhttp_request *req = w->req;
    c->hb_waiting = w->next;
    if (!c->hb_waiting)
        c->hb_waiting_tail = NULL;
    struct evhttp_connection *con = req ? evhttp_request_get_connection(req) : NULL;
    if (con)
        ctl_conn_watch(c, con, NULL, NULL);
    return req;
}

static void hb_wait_turn(evutil_socket_t fd, short what, void *arg)
{
    struct ctl *c = arg;
    (void)fd;
    (void)what;
    int64_t t0 = ctl_turn_enter(c);
    while (c->hb_waiting && c->turn.heartbeats < CTL_HEARTBEATS_PER_TURN) {
        struct ctl_hb_wait *w = c->hb_waiting;
        bool is_unix = w->is_unix;
        struct evhttp_request *req = hb_unqueue(c, w);
        free(w);
        if (req)
            heartbeat(c, req, is_unix);
    }
    if (c->hb_waiting) {
        struct timeval zero = {0, 0};
        event_add(c->hb_wait_ev, &zero);
    }
    ctl_turn_leave(c, CTL_TURN_DEFERRED, t0);
}

/* A heartbeat that waits for a later turn has arrived whole: with a valid credential its
 * connection is proven now, not when it is dispatched, so the connection budget never
 * closes it meanwhile to make room (conn.c). Dispatch authenticates it again. */
static void hb_prove(struct ctl *c, struct evhttp_request *req, bool is_unix)
{
    struct ctl_ident id;
    char why[256];
    if (authenticate(c, req, is_unix, &id, why, sizeof(why)) == 0)
        ctl_conn_proven(c, req);
}

/* Queue req behind the heartbeats waiting. 0, or -ENOMEM (nothing queued). */
static int hb_defer(struct ctl *c, struct evhttp_request *req, bool is_unix)
{
    if (!c->hb_wait_ev && !(c->hb_wait_ev = evtimer_new(c->base, hb_wait_turn, c)))
        return -ENOMEM;
    struct ctl_hb_wait *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    *w = (struct ctl_hb_wait){req, is_unix, NULL};
    hb_prove(c, req, is_unix);
    struct evhttp_connection *con = evhttp_request_get_connection(req);
    if (con)
        ctl_conn_watch(c, con, hb_wait_left, w);
    if (c->hb_waiting_tail)
        c->hb_waiting_tail->next = w;
    else
        c->hb_waiting = w;
    c->hb_waiting_tail = w;
    if (!event_pending(c->hb_wait_ev, EV_TIMEOUT, NULL)) {
        struct timeval zero = {0, 0};
        event_add(c->hb_wait_ev, &zero);
    }
    return 0;
}

/* At shutdown: the heartbeats still waiting are answered 503 (the agent polls again). */
static void hb_stop_all(struct ctl *c)
{
    while (c->hb_waiting) {
        struct ctl_hb_wait *w = c->hb_waiting;
        struct evhttp_request *req = hb_unqueue(c, w);
        free(w);
        if (req)
            ctl_reply_errorf(c, req, 503, NULL, "docketd is shutting down");
    }
    if (c->hb_wait_ev)
        event_free(c->hb_wait_ev);
    c->hb_wait_ev = NULL;
}

static void request_cb(struct ctl *c, struct evhttp_request *req, bool is_unix)
{
    int64_t t0 = ctl_turn_enter(c);
    enum ctl_turn_kind k = request_kind(req);
    if (k != CTL_TURN_HEARTBEAT)
        dispatch(req, c, is_unix);
    else if (!c->hb_waiting && c->turn.heartbeats < CTL_HEARTBEATS_PER_TURN)
        heartbeat(c, req, is_unix);
    else if (hb_defer(c, req, is_unix) == 0)
        k = CTL_TURN_DEFERRED;
    else
        heartbeat(c, req, is_unix); /* out of memory to wait: now, as before */
    ctl_turn_leave(c, k, t0);
}

static void tcp_cb(struct evhttp_request *req, void *arg)
{
    request_cb(arg, req, false);
}

static void unix_cb(struct evhttp_request *req, void *arg)
{
    request_cb(arg, req, true);
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

int ctl_split_host_port(const char *s, char *host, size_t hlen, int *port)
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
    ctl_conn_server(c, h);
    /* every method reaches the router, which answers 405 in JSON (libevent's own answer to
     * a method it was told to refuse is an HTML 501 page) */
    evhttp_set_allowed_methods(h, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PATCH |
                                      EVHTTP_REQ_DELETE | EVHTTP_REQ_PUT | EVHTTP_REQ_HEAD |
                                      EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT);
    evhttp_set_gencb(h, cb, c);
    return h;
}

static int start_tcp(struct ctl *c, char *err, size_t errlen)
{
    char host[256];
    int port;
    if (ctl_split_host_port(c->cfg.listen, host, sizeof(host), &port) < 0) {
        snprintf(err, errlen, "invalid listen address '%s' (HOST:PORT)", c->cfg.listen);
        return -EINVAL;
    }
    c->http_tcp = new_http(c, tcp_cb);
    ctl_tls_attach(c, c->http_tcp); /* ctl_tls_start decided at start (main.c) */
    struct evconnlistener *lev = ctl_conn_listen_tcp(c, host, port, err, errlen);
    if (!lev)
        return -EADDRINUSE;
    struct evhttp_bound_socket *bs = evhttp_bind_listener(c->http_tcp, lev);
    if (!bs) {
        evconnlistener_free(lev);
        snprintf(err, errlen, "cannot serve '%s'", c->cfg.listen);
        return -EIO;
    }
    ctl_conn_listener(c, lev);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = evhttp_bound_socket_get_fd(bs);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    c->listen_port = port;
    int rc = write_port_file(c, port);
    if (rc < 0) {
        snprintf(err, errlen, "cannot write the port file: %s", strerror(-rc));
        return rc;
    }
    log_info("listening", "addr=%s port=%d tls=%s", host, port, c->tls_ctx ? "on" : "off");
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
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, c->listen_backlog) < 0) {
        snprintf(err, errlen, "cannot listen on '%s': %s", c->cfg.socket_path, strerror(errno));
        close(fd);
        return -EADDRINUSE;
    }
    chmod(c->cfg.socket_path, 0666); /* everyone may connect; SO_PEERCRED says who */
    c->http_unix = new_http(c, unix_cb);
    struct evhttp_bound_socket *bs = evhttp_accept_socket_with_handle(c->http_unix, fd);
    if (!bs) {
        snprintf(err, errlen, "cannot serve '%s'", c->cfg.socket_path);
        close(fd);
        return -EIO;
    }
    ctl_conn_listener(c, evhttp_bound_socket_get_listener(bs));
    log_info("listening", "socket=%s", c->cfg.socket_path);
    return 0;
}

int ctl_http_start(struct ctl *c, char *err, size_t errlen)
{
    int rc;
    c->commit_ev = xnonnull(event_new(c->base, -1, 0, commit_ev_cb, c), "commit event");
    if ((rc = ctl_conn_init(c)) < 0) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    /* commits run after the handlers of this iteration (lower priority number = first) */
    if (c->cfg.listen[0] && (rc = start_tcp(c, err, errlen)) < 0)
        return rc;
    if (strcmp(c->cfg.socket_path, "-") != 0 && (rc = start_unix(c, err, errlen)) < 0)
        return rc;
    return 0;
}

void ctl_http_stop(struct ctl *c)
{
    ctl_arrays_stop_all(c);
    ctl_agent_events_stop_all(c);
    hb_stop_all(c);
    ctl_stream_stop_all(c);
    ctl_live_stop(c);
    ctl_tty_stop_all(c);
    ctl_conn_stop(c);
    if (c->http_tcp)
        evhttp_free(c->http_tcp);
    if (c->http_unix) {
        evhttp_free(c->http_unix);
        unlink(c->cfg.socket_path);
    }
    c->http_tcp = c->http_unix = NULL;
    ctl_tls_stop(c);
    ctl_conn_release(c);
    if (c->commit_ev)
        event_free(c->commit_ev);
    c->commit_ev = NULL;
}
