/*
 * agent.c - the agent endpoints of docs/api.md: register (join token -> node
 * credential), the heartbeat long poll that carries commands (re-sent until acked) and
 * reconciles jobs after a restart of either side, and job events (started, exited,
 * usage, reclaim_failed). Every body is read by its reader in protocol/agent_msg.h and
 * validated whole before anything changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/admin.h"
#include "controller/agent.h"
#include "controller/alerts.h"
#include "controller/lifecycle.h"
#include "controller/warm.h"
#include "controller/storage.h"
#include "controller/conn.h"
#include "controller/ctl.h"
#include "controller/live.h"
#include "controller/http.h"
#include "controller/logs.h"
#include "controller/loop.h"
#include "controller/restore.h"
#include "controller/services.h"
#include "controller/site.h"
#include "controller/turns.h"
#include "controller/usage.h"
#include "util/clock.h"
#include "util/str.h"

/* ------------------------------------------------------------------------------------ */
/* Register                                                                              */

/* May the caller register reg->name? With its node's credential, or with a join token
 * for a name no live credential holds. */
static int check_join(struct ctl_req *r, const struct agent_registration *reg,
                      struct proto_error *e)
{
    const char *node = reg->name;
    if (!reg->join_token) {
        if (!r->id.node)
            return proto_errorf(e, 401, NULL, "join_token",
                                "a join token or the node's credential is required");
        if (!node || strcmp(node, r->id.node_name) != 0)
            return proto_errorf(e, 403, NULL, "node.name", "this credential belongs to node '%s'",
                                r->id.node_name);
        return 0;
    }
    char hash[65];
    struct store_token t;
    store_token_hash(reg->join_token, hash);
    if (store_token_get(r->c->store, hash, &t) < 0 || t.kind != STORE_TOKEN_JOIN ||
        (t.expires_ms && t.expires_ms < clock_now_ms()))
        return proto_errorf(e, 401, NULL, "join_token", "invalid or expired join token");
    /* A join token names no node: it may only bring a NEW name in. A name whose
     * credential is still live belongs to the node holding it (else anyone with a join
     * token could take a live node over, its jobs and their start commands included);
     * an admin releases it first with `docket nodes replace NAME`. */
    if (!node)
        return 0; /* agent_register_node_parse names the missing field */
    int live = store_token_live(r->c->store, STORE_TOKEN_NODE, node, clock_now_ms());
    if (live < 0)
        return proto_errorf(e, 500, NULL, NULL, "store: %s", store_errmsg(r->c->store));
    if (live)
        return proto_errorf(e, 409, NULL, "node.name",
                            "node '%s' is registered and its credential is live: a join token "
                            "only registers a new name (to give the name to a new machine, "
                            "an admin runs 'docket nodes replace %s' first)",
                            node, node);
    return 0;
}

/* A new node credential, valid node_credential_ttl. At registration it replaces every
 * credential of the node (role "node"). At a rotation it is "pending": the old one keeps
 * working until the agent first uses the new one (a heartbeat), which then revokes the
 * old (so a rotate reply lost on the way never locks the node out); a rotation asked
 * again replaces a pending one nobody used. */
static int issue_credential(struct ctl *c, const char *node, bool rotation, char *cred, size_t len,
                            int64_t *expires)
{
    struct store_token t;
    memset(&t, 0, sizeof(t));
    int rc = ctl_random_token("dkn_", cred, len);
    if (rc < 0)
        return rc;
    store_token_hash(cred, t.hash);
    t.kind = STORE_TOKEN_NODE;
    str_copy(t.user, sizeof(t.user), node);
    str_copy(t.role, sizeof(t.role), rotation ? "pending" : "node");
    t.created_ms = clock_now_ms();
    t.expires_ms =
        c->cfg.node_credential_ttl_ms > 0 ? t.created_ms + c->cfg.node_credential_ttl_ms : 0;
    *expires = t.expires_ms;
    rc = rotation ? store_token_delete_role(c->store, STORE_TOKEN_NODE, node, "pending")
                  : store_token_delete_user(c->store, STORE_TOKEN_NODE, node);
    if (rc < 0)
        return rc;
    return store_token_put(c->store, &t);
}

/* The core's spec of a registering node (register_node sets its state and labels). */
static void reg_spec(const struct agent_registration *reg, struct sched_node_spec *spec)
{
    memset(spec, 0, sizeof(*spec));
    str_copy(spec->name, sizeof(spec->name), reg->node_name);
    str_copy(spec->gpu_type, sizeof(spec->gpu_type), reg->gpu_type);
    spec->gpus = reg->gpus;
    spec->gpu_mem_mb = reg->gpu_mem_mb;
    spec->cpus = reg->cpus;
    spec->mem_mb = reg->mem_mb;
    spec->state = SCHED_NODE_UP;
}

/* What only the node's record keeps of it, as text: addr and gpu_uuids as they came,
 * agent_version. NULL when out of memory. */
static char *reg_info(const struct agent_registration *reg)
{
    json_t *info = json_object();
    if (!info)
        return NULL;
    if (reg->addr)
        json_object_set(info, "addr", reg->addr);
    if (reg->gpu_uuids)
        json_object_set(info, "gpu_uuids", reg->gpu_uuids);
    if (reg->job_net)
        json_object_set(info, "job_net", reg->job_net);
    json_object_set_new(info, "agent_version",
                        json_string(reg->agent_version ? reg->agent_version : ""));
    char *text = json_dumps(info, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(info);
    return text;
}

/* Register a node: its record, its new credential and the audit entry are written first,
 * then the core takes the node (a refusal there rolls the request's writes back). A
 * re-registration keeps an admin's state (drained, down), the labels set through the API
 * and the command sequence. The credential goes to cred. */
static struct ctl_node *register_node(struct ctl_req *r, const struct agent_registration *reg,
                                      char *cred, size_t credlen, int64_t *expires,
                                      struct proto_error *e)
{
    struct ctl *c = r->c;
    struct sched_node_spec spec;
    reg_spec(reg, &spec);
    struct ctl_node *old = ctl_node_by_name(c, spec.name);
    struct sched_node_view v;
    struct sched_error se;
    struct store_node rec;
    memset(&rec, 0, sizeof(rec));
    json_t *labels = NULL;
    if (old) {
        int idx = sched_node_find(c->sched, spec.name);
        if (idx >= 0 && sched_node_get(c->sched, (uint32_t)idx, &v) == 0 &&
            (v.state == SCHED_NODE_DRAINING || v.state == SCHED_NODE_DRAINED ||
             v.state == SCHED_NODE_DOWN))
            spec.state = v.state;
        labels = json_loads(old->rec.labels ? old->rec.labels : "{}", 0, NULL);
        rec = old->rec;
    } else {
        labels = reg->labels ? json_deep_copy(reg->labels) : json_object();
        ctl_site_node_labels_merge(c, spec.name, labels); /* the policy's, over the agent's */
        str_copy(rec.name, sizeof(rec.name), spec.name);
    }
    spec.nlabels = ctl_labels_from_json(labels, spec.labels, SCHED_MAX_LABELS);
    str_copy(rec.state, sizeof(rec.state), sched_node_state_name(spec.state));
    rec.labels = json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS);
    rec.info = reg_info(reg);
    json_decref(labels);
    str_copy(rec.gpu_type, sizeof(rec.gpu_type), spec.gpu_type);
    rec.gpus = spec.gpus;
    rec.gpu_mem_mb = spec.gpu_mem_mb;
    rec.cpus = spec.cpus;
    rec.mem_mb = spec.mem_mb;
    rec.last_heartbeat_ms = clock_now_ms();
    char actor[80];
    snprintf(actor, sizeof(actor), "node:%s", rec.name);
    json_t *after = json_pack("{s:s,s:s,s:i,s:i,s:I}", "name", rec.name, "gpu_type", rec.gpu_type,
                              "gpus", rec.gpus, "cpus", rec.cpus, "mem_mb", (json_int_t)rec.mem_mb);
    int rc = rec.labels && rec.info ? store_begin(c->store) : -ENOMEM;
    if (rc == 0)
        rc = store_node_put(c->store, &rec);
    if (rc == 0)
        rc = issue_credential(c, rec.name, false, cred, credlen, expires);
    if (rc == 0)
        rc = ctl_audit(c, actor, "node.register", rec.name, NULL, after, NULL);
    json_decref(after);
    ctl_commit_soon(c);
    if (rc < 0) {
        proto_errorf(e, 500, NULL, NULL, "store: %s", store_errmsg(c->store));
        goto fail;
    }
    if (sched_node_upsert(c->sched, &spec, clock_now_ms(), &se) < 0) {
        proto_errorf(e, 400, NULL, se.field[0] ? se.field : "node", "%s", se.message);
        goto fail;
    }
    struct ctl_node *n = ctl_node_attach(c, spec.name);
    if (!n) { /* the core has the node, the store must not: stop (restart reloads) */
        ctl_store_diverged(c, "node_register", 0);
        proto_errorf(e, 500, NULL, NULL, "out of memory");
        goto fail;
    }
    free(n->rec.labels); /* (an old record's strings; rec has its own) */
    free(n->rec.info);
    n->rec = rec;
    n->last_hb_ms = clock_mono_ms();
    n->reconciled = false;
    return n;
fail:
    free(rec.labels);
    free(rec.info);
    return NULL;
}

/* The body's own fields, then the caller's right to the name, then the node: a caller
 * without that right hears 401/403 before any word on its node. */
void h_agent_register(struct ctl_req *r)
{
    struct proto_error e;
    struct agent_registration reg;
    json_t *body = ctl_body_json(r, false);
    if (!body)
        return;
    int rc = agent_register_parse(body, &reg, &e);
    if (rc == 0)
        rc = check_join(r, &reg, &e);
    if (rc == 0)
        rc = agent_register_node_parse(body, &reg, &e);
    struct ctl_node *n = NULL;
    char cred[96];
    int64_t expires = 0;
    if (rc == 0 && !(n = register_node(r, &reg, cred, sizeof(cred), &expires, &e)))
        rc = -EINVAL;
    if (rc < 0) {
        json_decref(body);
        ctl_reply_error(r->c, r->req, &e);
        return;
    }
    log_info("node_registered", "node=%s gpus=%d gpu_type=%s cpus=%d", n->name, n->rec.gpus,
             n->rec.gpu_type[0] ? n->rec.gpu_type : "-", n->rec.cpus);
    ctl_cycle_soon(r->c);
    ctl_reply_json(r->c, r->req, 200,
                   json_pack("{s:s,s:s,s:I,s:I,s:I}", "credential", cred, "node", n->name,
                             "heartbeat_wait_ms", (json_int_t)r->c->cfg.heartbeat_wait_ms,
                             "node_timeout_ms", (json_int_t)r->c->cfg.node_timeout_ms,
                             "credential_expires_ms", (json_int_t)expires));
    json_decref(body);
}

/* POST /v1/nodes/NAME/replace (admin): revoke the node's credential so that the next
 * registration with a join token may take the name (a new machine, a wiped state dir).
 * The revoked agent hears 401 from then on; its parked heartbeat is answered so at once,
 * so it receives no command more. Audited. The node's jobs are not touched here: a new
 * agent under the name reconciles them at its first heartbeat (those it does not run end
 * as lost), and if none comes, the node times out as any silent node does. */
void h_node_replace(struct ctl_req *r)
{
    static const char *const known[] = {"reason", NULL};
    struct proto_error e;
    struct ctl_node *n = ctl_node_by_name(r->c, r->arg[0]);
    if (!n) {
        ctl_reply_errorf(r->c, r->req, 404, NULL, "no such node '%.64s'", r->arg[0]);
        return;
    }
    json_t *b = ctl_body_json(r, true);
    if (!b)
        return;
    json_t *reason = json_object_get(b, "reason");
    int rc = proto_check_fields(b, "", known, &e);
    if (rc == 0 && reason && (!json_is_string(reason) || json_string_length(reason) > 255))
        rc = proto_errorf(&e, 400, NULL, "reason", "reason must be a string of at most 255 bytes");
    if (rc < 0) {
        json_decref(b);
        ctl_reply_error(r->c, r->req, &e);
        return;
    }
    int live = store_token_live(r->c->store, STORE_TOKEN_NODE, n->name, clock_now_ms());
    rc = live < 0 ? live : store_token_delete_user(r->c->store, STORE_TOKEN_NODE, n->name);
    json_t *before = json_pack("{s:b}", "credential_live", live > 0);
    json_t *after = json_pack("{s:b}", "credential_live", 0);
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, "node.replace", n->name, before, after,
                       reason ? json_string_value(reason) : NULL);
    json_decref(before);
    json_decref(after);
    json_decref(b);
    if (rc < 0) {
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return;
    }
    if (n->parked) { /* the old agent's long poll: no command may reach it any more */
        struct evhttp_request *old = n->parked;
        struct evhttp_connection *con = evhttp_request_get_connection(old);
        n->parked = NULL;
        event_del(n->park_timer);
        if (con)
            ctl_conn_watch(r->c, con, NULL, NULL);
        ctl_reply_errorf(r->c, old, 401, NULL, "this node's credential was revoked");
    }
    log_warn("node_replace", "node=%s by=%s", n->name, r->id.user);
    ctl_reply_json(r->c, r->req, 200,
                   json_pack("{s:s,s:b}", "node", n->name, "credential_revoked", live > 0));
}

/* ------------------------------------------------------------------------------------ */
/* Heartbeat                                                                             */

/* The node a heartbeat, events or rotate body comes from: the caller's own. */
static struct ctl_node *agent_node(struct ctl_req *r, const json_t *body, struct proto_error *e)
{
    const char *name;
    if (agent_body_node(body, &name, e) < 0)
        return NULL;
    if (strcmp(name, r->id.node_name) != 0)
        return proto_errorf(e, 403, NULL, "node", "this credential belongs to node '%s'",
                            r->id.node_name),
               NULL;
    struct ctl_node *n = ctl_node_by_name(r->c, r->id.node_name);
    if (!n)
        proto_errorf(e, 401, NULL, "node", "unknown node '%s': register again", r->id.node_name);
    return n;
}

static bool agent_has_job(const struct agent_heartbeat *hb, uint64_t id)
{
    for (size_t i = 0; i < hb->njobs; i++)
        if (hb->jobs[i].id == id)
            return true;
    return false;
}

/* The jobs the agent still holds, as its heartbeat lists them (finished ones included,
 * until their output is all out): a log follower waits for those (logs.c). */
static void remember_held(struct ctl_node *n, const struct agent_heartbeat *hb)
{
    uint64_t *ids = NULL;
    if (hb->njobs && !(ids = malloc(hb->njobs * sizeof(*ids))))
        return; /* the older list stays: a follower waits on rather than be cut short */
    for (size_t i = 0; i < hb->njobs; i++)
        ids[i] = hb->jobs[i].id;
    free(n->held);
    n->held = ids;
    n->nheld = hb->njobs;
    n->held_known = true;
}

static bool start_pending(const struct ctl_node *n, uint64_t id, int64_t ack)
{
    for (const struct ctl_cmd *k = n->cmds; k; k = k->next)
        if (k->job == id && k->seq > ack)
            return true;
    return false;
}

static bool alloc_on(const struct sched_job_view *v, uint32_t node)
{
    for (int i = 0; i < v->nallocs; i++)
        if (v->allocs[i].node == node)
            return true;
    return false;
}

int ctl_job_record_exit(struct ctl *c, uint64_t id, const json_t *exit, const json_t *usage)
{
    struct store_job row;
    int rc = store_job_get(c->store, id, &row);
    if (rc < 0)
        return rc;
    free(row.exit);
    row.exit = json_dumps(exit, JSON_COMPACT);
    if (usage) {
        free(row.usage);
        row.usage = json_dumps(usage, JSON_COMPACT);
    }
    rc = row.exit ? store_begin(c->store) : -ENOMEM;
    if (rc == 0)
        rc = store_job_update(c->store, &row);
    if (rc < 0)
        log_error("store_failed", "what=exit job=%llu error=\"%s\"", (unsigned long long)id,
                  store_errmsg(c->store));
    store_job_release(&row);
    return rc;
}

/* First heartbeat after a restart of either side: jobs we believe run there but the
 * agent does not know end as lost; jobs it runs that we do not place there are killed. */
static void reconcile(struct ctl *c, struct ctl_node *n, const struct agent_heartbeat *hb)
{
    uint32_t idx = (uint32_t)sched_node_find(c->sched, n->name);
    size_t cnt = sched_job_count(c->sched), slots = sched_job_slots(c->sched), nlost = 0;
    uint64_t *lost = calloc(cnt ? cnt : 1, sizeof(*lost));
    bool failed = false;
    if (!lost)
        return;
    for (size_t i = 0; i < slots && nlost < cnt; i++) { /* every slot: live jobs have holes */
        struct sched_job_view v;
        if (sched_job_at(c->sched, i, &v) < 0 || !alloc_on(&v, idx))
            continue;
        if (!agent_has_job(hb, v.id) && !start_pending(n, v.id, hb->ack))
            lost[nlost++] = v.id;
    }
    int64_t now = clock_now_ms();
    for (size_t i = 0; i < nlost; i++) {
        struct sched_error se;
        json_t *ex = json_pack("{s:s,s:i,s:s}", "kind", "lost", "code", 0, "message",
                               "unknown to the agent after a restart");
        int rc = ctl_job_record_exit(c, lost[i], ex, NULL);
        json_decref(ex);
        if (rc < 0) { /* left running in both: the next heartbeat reconciles again */
            failed = true;
            continue;
        }
        if (sched_job_ended(c->sched, lost[i], SCHED_EXIT_LOST, 0, now, &se) == 0) {
            log_warn("job_lost", "job=%llu node=%s", (unsigned long long)lost[i], n->name);
            ctl_services_run_ended(c, lost[i], now);
        }
    }
    free(lost);
    for (size_t i = 0; i < hb->njobs; i++) {
        uint64_t id = hb->jobs[i].id;
        const char *st = hb->jobs[i].state;
        struct sched_job_view v;
        if (st && strcmp(st, "exited") == 0)
            continue;
        if (sched_job_get(c->sched, id, &v) == 0 && alloc_on(&v, idx))
            continue;
        log_warn("job_stray", "job=%llu node=%s action=kill", (unsigned long long)id, n->name);
        ctl_node_command(c, n, id, json_pack("{s:s,s:I}", "type", "kill", "job", (json_int_t)id));
    }
    n->reconciled = !failed;
    ctl_cycle_soon(c);
}

static void node_health(struct ctl *c, struct ctl_node *n, const struct agent_heartbeat *hb)
{
    int idx = sched_node_find(c->sched, n->name);
    struct sched_node_view v;
    struct sched_error se;
    if (idx < 0 || sched_node_get(c->sched, (uint32_t)idx, &v) < 0)
        return;
    enum sched_node_state to = v.state;
    if (v.state == SCHED_NODE_UNREACHABLE)
        to = hb->health_ok ? SCHED_NODE_UP : SCHED_NODE_UNHEALTHY;
    else if (v.state == SCHED_NODE_UP && !hb->health_ok)
        to = SCHED_NODE_UNHEALTHY;
    else if (v.state == SCHED_NODE_UNHEALTHY && hb->health_ok)
        to = SCHED_NODE_UP;
    if (to == v.state)
        return;
    /* saved first; when that fails the core stays as it was and the next heartbeat tries
     * again */
    const char *reason = hb->health_ok ? "" : hb->health_msg;
    if (ctl_node_put(c, n, sched_node_state_name(to), reason, n->rec.labels) < 0) {
        log_error("store_failed", "what=node_health node=%s error=\"%s\"", n->name,
                  store_errmsg(c->store));
        return;
    }
    if (sched_node_set_state(c->sched, n->name, to, clock_now_ms(), &se) < 0)
        return;
    str_copy(n->rec.reason, sizeof(n->rec.reason), reason);
    if (ctl_node_save(c, n) < 0) /* what the core holds now, were it to have moved on */
        ctl_store_diverged(c, "node_health", 0);
    log_info("node_state", "node=%s from=%s to=%s", n->name, sched_node_state_name(v.state),
             sched_node_state_name(to));
    ctl_cycle_soon(c);
}

static void drop_acked(struct ctl_node *n, int64_t ack)
{
    while (n->cmds && n->cmds->seq <= ack) {
        struct ctl_cmd *k = n->cmds;
        n->cmds = k->next;
        json_decref(k->json);
        free(k);
    }
    if (!n->cmds)
        n->cmds_tail = NULL;
}

/* An agent that acknowledges a command number this controller never gave out remembers a
 * later database than this one: a restored backup, or a new database under agents that
 * kept their state. Its queued commands are numbered again above that ack (and the
 * sequence with them), else the agent would take each for one it has already applied
 * (docs/operations.md "Back up and restore"). A node can only move its own sequence;
 * an ack past INT64_MAX / 2 is no database's and is ignored (the sequence cannot wrap). */
static void renumber_behind(struct ctl *c, struct ctl_node *n, int64_t ack)
{
    if (ack <= n->rec.cmd_seq || ack > INT64_MAX / 2)
        return;
    log_warn("node_ack_ahead", "node=%s ack=%lld cmd_seq=%lld effect=\"commands renumbered\"",
             n->name, (long long)ack, (long long)n->rec.cmd_seq);
    n->rec.cmd_seq = ack;
    for (struct ctl_cmd *k = n->cmds; k; k = k->next) {
        k->seq = ++n->rec.cmd_seq;
        json_object_set_new(k->json, "seq", json_integer(k->seq));
    }
    if (ctl_node_save(c, n) < 0) /* the sequence must survive a restart */
        ctl_store_diverged(c, "node_renumber", 0);
}

static void parked_closed(struct evhttp_connection *con, void *arg)
{
    struct ctl_node *n = arg;
    n->parked = NULL;
    event_del(n->park_timer);
}

/* POST /v1/agent/rotate: a new credential for the calling node, before its own expires
 * (issue_credential says when the old one stops working). Audited. */
void h_agent_rotate(struct ctl_req *r)
{
    struct proto_error e;
    json_t *body = ctl_body_json(r, false);
    if (!body)
        return;
    struct ctl_node *n = agent_node(r, body, &e);
    int rc = n ? agent_rotate_parse(body, &e) : -EINVAL;
    json_decref(body);
    if (rc < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return;
    }
    char cred[96], actor[80];
    int64_t expires = 0;
    snprintf(actor, sizeof(actor), "node:%s", n->name);
    rc = issue_credential(r->c, n->name, true, cred, sizeof(cred), &expires);
    json_t *after = json_pack("{s:I}", "credential_expires_ms", (json_int_t)expires);
    if (rc == 0)
        rc = ctl_audit(r->c, actor, "node.credential_rotate", n->name, NULL, after, NULL);
    json_decref(after);
    if (rc < 0) {
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return;
    }
    log_info("node_credential_issued", "node=%s expires_ms=%lld", n->name, (long long)expires);
    ctl_reply_json(r->c, r->req, 200,
                   json_pack("{s:s,s:s,s:I}", "credential", cred, "node", n->name,
                             "credential_expires_ms", (json_int_t)expires));
}

/* The first use of a rotated ("pending") credential revokes the one it replaces. */
static int promote_credential(struct ctl_req *r, struct proto_error *e)
{
    if (!r->id.node_pending)
        return 0;
    int rc = store_token_delete_role(r->c->store, STORE_TOKEN_NODE, r->id.node_name, "node");
    if (rc == 0)
        rc =
            store_token_set_role(r->c->store, STORE_TOKEN_NODE, r->id.node_name, "pending", "node");
    if (rc < 0)
        return proto_errorf(e, 500, NULL, NULL, "store: %s", store_errmsg(r->c->store));
    log_info("node_credential_rotated", "node=%s", r->id.node_name);
    return 0;
}

void h_agent_heartbeat(struct ctl_req *r)
{
    struct proto_error e;
    struct agent_heartbeat hb;
    memset(&hb, 0, sizeof(hb));
    json_t *body = ctl_body_json(r, false);
    if (!body)
        return;
    struct ctl_node *n = agent_node(r, body, &e);
    if (!n || agent_heartbeat_parse(body, &hb, &e) < 0 || promote_credential(r, &e) < 0) {
        agent_heartbeat_release(&hb);
        ctl_reply_error(r->c, r->req, &e);
        json_decref(body);
        return;
    }
    n->last_hb_ms = clock_mono_ms();
    n->rec.last_heartbeat_ms = clock_now_ms();
    ctl_live_changed(r->c, CTL_TOPIC_NODES); /* its time and GPU samples */
    remember_held(n, &hb);
    renumber_behind(r->c, n, hb.ack);
    drop_acked(n, hb.ack);
    node_health(r->c, n, &hb);
    if (!n->reconciled)
        reconcile(r->c, n, &hb);
    ctl_storage_report(r->c, n->name, hb.storage);
    ctl_lifecycle_report(r->c, n->name, hb.lifecycle, hb.nlifecycle);
    ctl_warm_report(r->c, n, hb.warm, hb.nwarm);
    agent_heartbeat_release(&hb);
    json_decref(body);
    if (n->parked) { /* a newer poll replaces an older one */
        struct evhttp_request *old = n->parked;
        struct evhttp_connection *con = evhttp_request_get_connection(old);
        n->parked = NULL;
        event_del(n->park_timer);
        if (con)
            ctl_conn_watch(r->c, con, NULL, NULL);
        ctl_reply_json(r->c, old, 200, json_pack("{s:[],s:s}", "commands", "node_state", "UP"));
    }
    bool have = false;
    for (struct ctl_cmd *k = n->cmds; k; k = k->next)
        have = have || k->seq > hb.ack;
    /* a node that lacks its storage configuration hears it at once (controller/storage.h) */
    json_t *reply = json_object();
    ctl_storage_reply(r->c, n, reply);
    ctl_lifecycle_reply(r->c, n, reply);
    ctl_warm_reply(r->c, n, reply);
    have = have || json_object_size(reply) > 0;
    int64_t wait =
        hb.wait_ms < r->c->cfg.heartbeat_wait_ms ? hb.wait_ms : r->c->cfg.heartbeat_wait_ms;
    if (have || wait == 0 || r->c->shutting_down) {
        json_t *cmds = json_array();
        for (struct ctl_cmd *k = n->cmds; k; k = k->next)
            if (k->seq > hb.ack)
                json_array_append(cmds, k->json);
        int idx = sched_node_find(r->c->sched, n->name);
        struct sched_node_view v;
        const char *st = idx >= 0 && sched_node_get(r->c->sched, (uint32_t)idx, &v) == 0
                             ? sched_node_state_name(v.state)
                             : "UP";
        json_object_set_new(reply, "commands", cmds);
        json_object_set_new(reply, "node_state", json_string(st));
        ctl_reply_json(r->c, r->req, 200, reply);
        return;
    }
    json_decref(reply);
    n->parked = r->req;
    r->c->turn.parked++;
    struct evhttp_connection *con = evhttp_request_get_connection(r->req);
    if (con)
        ctl_conn_watch(r->c, con, parked_closed, n);
    struct timeval tv = {(time_t)(wait / 1000), (suseconds_t)((wait % 1000) * 1000)};
    event_add(n->park_timer, &tv);
}

/* ------------------------------------------------------------------------------------ */
/* Events                                                                                */

static enum sched_exit_kind exit_kind(enum agent_exit_kind k)
{
    switch (k) {
    case AGENT_EXIT_CODE:
        return SCHED_EXIT_CODE;
    case AGENT_EXIT_SIGNAL:
        return SCHED_EXIT_SIGNAL;
    case AGENT_EXIT_OOM:
        return SCHED_EXIT_OOM;
    case AGENT_EXIT_LAUNCH_FAILED:
        return SCHED_EXIT_LAUNCH_FAILED;
    case AGENT_EXIT_LOST:
        break;
    }
    return SCHED_EXIT_LOST;
}

/* The events below write the store first and tell the core only once the writes
 * succeeded; 0 or -errno (a failed write: the core has not changed). */
static int ev_started(struct ctl *c, struct ctl_node *n, uint64_t id, int port)
{
    struct sched_error se;
    struct sched_job_view v;
    if (sched_job_get(c->sched, id, &v) < 0 || v.state != SCHED_STARTING)
        return 0;
    struct store_job row;
    int rc = store_job_get(c->store, id, &row);
    if (rc < 0)
        return rc;
    row.state = SCHED_RUNNING;
    row.start_ms = clock_now_ms();
    rc = store_begin(c->store);
    if (rc == 0)
        rc = store_job_update(c->store, &row);
    /* the run's GPU time counts from here too, so reports agree with the job's start */
    if (rc == 0)
        rc = store_run_started(c->store, id, row.start_ms);
    store_job_release(&row);
    if (rc == 0)
        rc = ctl_job_event(c, id, "running", "STARTING", "RUNNING", n->name, "",
                           "started by the agent");
    if (rc < 0)
        return rc;
    if (sched_job_running(c->sched, id, clock_now_ms(), &se) < 0) /* checked above */
        ctl_store_diverged(c, "job_running", id);
    log_info("job_running", "job=%llu node=%s", (unsigned long long)id, n->name);
    ctl_services_started(c, id, ctl_node_addr(c, (uint32_t)sched_node_find(c->sched, n->name)),
                         port);
    return 0;
}

/* A job of several nodes ends when the first of them reports its exit (the batch node of
 * a Slurm-style job, whose other nodes only hold the allocation): what still runs on the
 * others is killed, so no process outlives its job there. */
static void kill_other_nodes(struct ctl *c, struct ctl_node *n, uint64_t id, const uint32_t *nodes,
                             int nnodes)
{
    for (int i = 0; i < nnodes; i++) {
        struct ctl_node *o = ctl_node_at(c, nodes[i]);
        if (o && o != n)
            ctl_node_command(c, o, id,
                             json_pack("{s:s,s:I}", "type", "kill", "job", (json_int_t)id));
    }
}

static int ev_exited(struct ctl *c, struct ctl_node *n, const struct agent_event *ev)
{
    struct sched_error se;
    struct sched_job_view v;
    uint32_t nodes[64];
    int nnodes = 0;
    uint64_t id = ev->job;
    const char *kind = agent_exit_kind_name(ev->exit_kind);
    int code = ev->exit_code;
    int rc = ctl_job_record_exit(c, id, ev->exit_json, ev->usage_json);
    if (rc < 0)
        return rc;
    if (sched_job_get(c->sched, id, &v) == 0)
        for (int i = 0; i < v.nallocs && nnodes < 64; i++)
            nodes[nnodes++] = v.allocs[i].node;
    if (sched_job_ended(c->sched, id, exit_kind(ev->exit_kind), code, clock_now_ms(), &se) < 0)
        return 0;
    ctl_services_run_ended(c, id, clock_now_ms()); /* a replica's restart and backoff */
    if (nnodes > 1)
        kill_other_nodes(c, n, id, nodes, nnodes);
    log_info("job_exited", "job=%llu node=%s kind=%s code=%d", (unsigned long long)id, n->name,
             kind, code);
    ctl_cycle_soon(c);
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* srun's step hosts (docs/slurm.md "srun"): the node of rank i > 0 of a Slurm-style job
 * reports the port the kernel gave its step host; the node of rank 0 is told where each
 * listens (its supervisor writes it for srun), now, and all again when rank 0 starts (a
 * start there may wait for its GPUs and miss the first word). Kept in memory per run: a
 * controller restart in between leaves srun waiting in vain, and failing loudly. */

static int rank_of(const struct sched_job_view *v, uint32_t idx)
{
    for (int i = 0; i < v->nallocs; i++)
        if (v->allocs[i].node == idx)
            return i;
    return -1;
}

static json_t *step_hosts_of(struct ctl *c, uint64_t id, int run, bool make)
{
    char key[48];
    snprintf(key, sizeof key, "%llu.%d", (unsigned long long)id, run);
    if (!c->step_hosts)
        c->step_hosts = json_object();
    json_t *o = json_object_get(c->step_hosts, key);
    if (!o && make && (o = json_object()))
        json_object_set_new(c->step_hosts, key, o);
    return o;
}

static void step_hosts_drop(struct ctl *c, uint64_t id, int run)
{
    char key[48];
    snprintf(key, sizeof key, "%llu.%d", (unsigned long long)id, run);
    if (c->step_hosts)
        json_object_del(c->step_hosts, key);
}

static void tell_rank0(struct ctl *c, const struct sched_job_view *v, uint64_t id, int rank,
                       const char *addr)
{
    struct ctl_node *first = ctl_node_at(c, v->allocs[0].node);
    if (first)
        ctl_node_command(c, first, id,
                         json_pack("{s:s,s:I,s:i,s:s}", "type", "step_host", "job", (json_int_t)id,
                                   "rank", rank, "addr", addr));
}

static int ev_step_host(struct ctl *c, struct ctl_node *n, const struct agent_event *ev,
                        const struct sched_job_view *v, uint32_t idx, int run)
{
    int rank = rank_of(v, idx);
    json_t *hosts = rank > 0 ? step_hosts_of(c, ev->job, run, true) : NULL;
    if (!hosts)
        return 0; /* rank 0 runs no step host */
    char addr[320], name[16], detail[400];
    snprintf(addr, sizeof addr, "%s:%d", ctl_node_addr(c, idx), ev->port);
    snprintf(name, sizeof name, "%d", rank);
    json_object_set_new(hosts, name, json_string(addr));
    tell_rank0(c, v, ev->job, rank, addr);
    snprintf(detail, sizeof detail, "srun's step host of rank %d listens on %s", rank, addr);
    return ctl_job_event(c, ev->job, "step_host", "", "", n->name, "", detail);
}

/* Rank 0 has started: every step host known so far, again. */
static void step_hosts_resend(struct ctl *c, const struct sched_job_view *v, uint64_t id, int run)
{
    json_t *hosts = step_hosts_of(c, id, run, false), *addr;
    const char *rank;
    json_object_foreach(hosts, rank, addr)
        tell_rank0(c, v, id, atoi(rank), json_string_value(addr));
}

/* A node posts events only for the runs placed on it (issue 11 #5): checked for the whole
 * batch before anything is applied, so a hostile node's batch changes nothing. */
static int check_placement(struct ctl *c, struct ctl_node *n, const json_t *evs,
                           struct proto_error *e)
{
    for (size_t i = 0; i < json_array_size(evs); i++) {
        uint64_t id;
        int run;
        char f[48];
        struct store_run rr;
        agent_event_job_run(json_array_get(evs, i), &id, &run);
        snprintf(f, sizeof(f), "events[%zu].job", i);
        int rc = ctl_run_for_node(c, n->name, id, run, false, f, &rr, e);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The rest of an event (not started, not exited) on a job live on this node. */
static int ev_other(struct ctl *c, struct ctl_node *n, const struct agent_event *ev, int last)
{
    const char *t = ev->type;
    uint64_t id = ev->job;
    int rc = 0;
    if (strcmp(t, "usage") == 0 && ev->usage_json) {
        struct store_job row;
        if ((rc = store_job_get(c->store, id, &row)) == 0) {
            free(row.usage);
            row.usage = json_dumps(ev->usage_json, JSON_COMPACT);
            rc = store_begin(c->store);
            if (rc == 0)
                rc = store_job_update(c->store, &row);
            store_job_release(&row);
        }
    } else if (strcmp(t, "preparing") == 0) { /* the node builds the job's template first */
        rc = ctl_job_event(c, id, t, "", "", n->name,
                           strncmp(ev->message, "image ", 6) == 0 ? "preparing image"
                                                                  : "preparing environment",
                           ev->message);
    } else if (strcmp(t, "prepared") == 0) {
        rc = ctl_job_event(c, id, t, "", "", n->name, "environment ready", ev->message);
    } else if (strcmp(t, "probe") == 0) { /* a service replica's (services.c) */
        rc = ctl_services_probe(c, n, id, ev->probe, ev->probe_ok, ev->message);
    } else if (strcmp(t, "reclaim_failed") == 0 || strcmp(t, "signalled") == 0) {
        rc = ctl_job_event(c, id, t, "", "", n->name, "", ev->message);
        if (strcmp(t, "reclaim_failed") == 0) {
            log_warn("reclaim_failed", "job=%llu node=%s", (unsigned long long)id, n->name);
            ctl_alerts_reclaim_failed(c, n->name, id, ev->message);
        }
    }
    if (rc == 0 && ev->has_sample)
        rc = ctl_usage_apply(c, n, id, last, &ev->sample);
    return rc;
}

static int apply_event(struct ctl *c, struct ctl_node *n, const json_t *evj)
{
    struct agent_event ev;
    if (agent_event_parse(evj, "", &ev, NULL) < 0)
        return 0; /* read whole before (agent_events_parse): cannot happen */
    uint64_t id = ev.job;
    int run = ev.run;
    struct sched_job_view v;
    uint32_t idx = (uint32_t)sched_node_find(c->sched, n->name);
    /* events for jobs not live on this node, or of an earlier run of a job live here
     * again, are stale repeats: ignored (idempotent) */
    if (sched_job_get(c->sched, id, &v) < 0 || !alloc_on(&v, idx))
        return 0;
    int last = store_run_last(c->store, id);
    if (last < 0)
        return last;
    if (run > 0 && run != last)
        return 0;
    if (strcmp(ev.type, "step_host") == 0)
        return ev_step_host(c, n, &ev, &v, idx, last);
    if (strcmp(ev.type, "started") == 0 && v.nallocs > 1 && rank_of(&v, idx) == 0)
        step_hosts_resend(c, &v, id, last);
    if (strcmp(ev.type, "started") == 0)
        return ev_started(c, n, id, ev.port);
    if (strcmp(ev.type, "exited") == 0) {
        step_hosts_drop(c, id, last);
        return ev_exited(c, n, &ev);
    }
    return ev_other(c, n, &ev, last);
}

/* Apply events [from, to) of evs. Each event in its own savepoint, store first then
 * core: when a write fails, that event's writes are rolled back, the events before it
 * stand (in the store and the core alike), and the agent hears 500 and sends them all
 * again: the ones already applied are then stale repeats, ignored. */
static int apply_events(struct ctl *c, struct ctl_node *n, const json_t *evs, size_t from,
                        size_t to)
{
    int rc = 0;
    for (size_t i = from; rc == 0 && i < to; i++) {
        if ((rc = store_savepoint(c->store)) < 0)
            break;
        rc = apply_event(c, n, json_array_get(evs, i));
        if (rc < 0)
            store_rollback_to(c->store);
        else if (store_release(c->store) < 0)
            ctl_store_diverged(c, "agent_events", 0);
    }
    c->turn.agent_events += (int)(to - from);
    if (store_begin(c->store) == 0)
        ctl_commit_soon(c);
    return rc;
}

static void events_reply(struct ctl *c, struct evhttp_request *req, int rc)
{
    if (rc < 0) { /* not ctl_reply_error: what the events before wrote must stay */
        struct proto_error pe;
        proto_errorf(&pe, 500, NULL, NULL, "store: %s", store_errmsg(c->store));
        ctl_reply_json(c, req, 500, proto_error_json(&pe));
        return;
    }
    ctl_reply_json(c, req, 200, json_pack("{s:b}", "ok", 1));
}

/* A batch of more than CTL_AGENT_EVENTS_SLICE events (an agent back after an outage
 * sends up to 2,000 at once) is applied that many events a loop turn, so it never holds
 * the loop for long (issue 11: "any request within 50 ms"); its reply, as any, leaves
 * once every event is applied and committed. A node's batches are applied in the order
 * they came: one that arrives while an earlier one of the same node is still being
 * applied waits behind it whole. */
struct ctl_ev_batch {
    struct ctl *c;
    struct ctl_node *n;
    struct evhttp_request *req; /* NULL once the client left */
    json_t *body;               /* owned */
    const json_t *evs;          /* the batch: body's events (agent_events_parse) */
    size_t next;                /* the next event to apply */
    struct ctl_ev_batch *after;
};

static void batch_client_left(struct evhttp_connection *con, void *arg)
{
    struct ctl_ev_batch *b = arg;
    (void)con;
    b->req = NULL; /* its events are applied all the same: the agent's resend repeats them */
}

static void batch_free(struct ctl_ev_batch *b, int rc, bool answer)
{
    struct ctl *c = b->c;
    if (b->req) {
        struct evhttp_connection *con = evhttp_request_get_connection(b->req);
        if (con)
            ctl_conn_watch(c, con, NULL, NULL);
        if (answer)
            events_reply(c, b->req, rc);
        else
            ctl_reply_errorf(c, b->req, 503, NULL, "docketd is shutting down");
    }
    b->n->ev_batches--;
    json_decref(b->body);
    free(b);
}

static void events_turn(evutil_socket_t fd, short what, void *arg)
{
    struct ctl *c = arg;
    (void)fd;
    (void)what;
    int64_t t0 = ctl_turn_enter(c);
    struct ctl_ev_batch *b = c->ev_batches;
    if (b) {
        const json_t *evs = b->evs;
        size_t n = json_array_size(evs);
        size_t to = n - b->next > CTL_AGENT_EVENTS_SLICE ? b->next + CTL_AGENT_EVENTS_SLICE : n;
        int rc = c->diverged ? -EIO : apply_events(c, b->n, evs, b->next, to);
        b->next = to;
        if (rc < 0 || to == n) {
            c->ev_batches = b->after;
            if (!c->ev_batches)
                c->ev_batches_tail = NULL;
            batch_free(b, rc, true);
        }
    }
    if (c->ev_batches) {
        /* a timer, not event_active: the loop polls its sockets before the next slice */
        struct timeval zero = {0, 0};
        event_add(c->ev_batch_ev, &zero);
    }
    ctl_turn_leave(c, CTL_TURN_EVENTS, t0);
}

/* Queue the rest of r's batch, from event `next` on. 0, or -ENOMEM (nothing queued). */
static int batch_defer(struct ctl_req *r, struct ctl_node *n, json_t *body, const json_t *evs,
                       size_t next)
{
    struct ctl *c = r->c;
    if (!c->ev_batch_ev && !(c->ev_batch_ev = evtimer_new(c->base, events_turn, c)))
        return -ENOMEM;
    struct ctl_ev_batch *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    *b = (struct ctl_ev_batch){c, n, r->req, json_incref(body), evs, next, NULL};
    struct evhttp_connection *con = evhttp_request_get_connection(r->req);
    if (con)
        ctl_conn_watch(c, con, batch_client_left, b);
    n->ev_batches++;
    if (c->ev_batches_tail)
        c->ev_batches_tail->after = b;
    else
        c->ev_batches = b;
    c->ev_batches_tail = b;
    if (!event_pending(c->ev_batch_ev, EV_TIMEOUT, NULL)) {
        struct timeval zero = {0, 0};
        event_add(c->ev_batch_ev, &zero);
    }
    return 0;
}

void ctl_agent_events_stop_all(struct ctl *c)
{
    while (c->ev_batches) {
        struct ctl_ev_batch *b = c->ev_batches;
        c->ev_batches = b->after;
        batch_free(b, 0, false);
    }
    c->ev_batches_tail = NULL;
    if (c->ev_batch_ev)
        event_free(c->ev_batch_ev);
    c->ev_batch_ev = NULL;
}

void h_agent_events(struct ctl_req *r)
{
    struct proto_error e;
    json_t *body = ctl_body_json(r, false);
    if (!body)
        return;
    const json_t *evs = NULL;
    struct ctl_node *n = agent_node(r, body, &e);
    int rc = n ? agent_events_parse(body, &evs, &e) : -EINVAL;
    if (rc == 0)
        rc = check_placement(r->c, n, evs, &e);
    if (rc < 0) {
        ctl_reply_error(r->c, r->req, &e);
        json_decref(body);
        return;
    }
    n->last_hb_ms = clock_mono_ms();
    size_t total = json_array_size(evs), now = 0;
    if (n->ev_batches == 0) /* else behind this node's earlier batch, whole */
        now = total > CTL_AGENT_EVENTS_SLICE ? CTL_AGENT_EVENTS_SLICE : total;
    rc = apply_events(r->c, n, evs, 0, now);
    if (rc == 0 && now < total && batch_defer(r, n, body, evs, now) == 0) {
        json_decref(body); /* the batch holds its own reference */
        return;            /* answered once its last slice is applied (events_turn) */
    }
    if (rc == 0 && now < total) /* out of memory to defer: the rest now, as before */
        rc = apply_events(r->c, n, evs, now, total);
    json_decref(body);
    events_reply(r->c, r->req, rc);
}
