/*
 * admin.c - the cluster endpoints of docs/api.md: nodes (list, show, drain, resume,
 * labels), projects (list, show, create, patch, boost, pause, resume), tiers, classes,
 * the policy document, audit, tokens and join tokens. Every change is audited in the
 * transaction that makes it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/admin.h"
#include "controller/alerts.h"
#include "controller/network.h"
#include "controller/storage.h"
#include "controller/authz.h"
#include "controller/config.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/lease.h"
#include "controller/loop.h"
#include "controller/restore.h"
#include "controller/stream.h"
#include "controller/site.h"
#include "controller/templates.h"
#include "protocol/templates.h"
#include "controller/usage.h"
#include "util/clock.h"
#include "util/parse.h"
#include "util/str.h"
#include "util/xalloc.h"

int ctl_random_token(const char *prefix, char *out, size_t len)
{
    unsigned char raw[32];
    static const char hex[] = "0123456789abcdef";
    size_t p = strlen(prefix);
    if (len < p + 65 || RAND_bytes(raw, sizeof(raw)) != 1)
        return -EIO;
    memcpy(out, prefix, p);
    for (size_t i = 0; i < sizeof(raw); i++) {
        out[p + 2 * i] = hex[raw[i] >> 4];
        out[p + 2 * i + 1] = hex[raw[i] & 15];
    }
    out[p + 64] = '\0';
    return 0;
}

static json_t *parse_or_null(const char *text)
{
    json_t *v = text ? json_loads(text, 0, NULL) : NULL;
    return v ? v : json_null();
}

static void store_fail(struct ctl_req *r)
{
    ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
}

/* ------------------------------------------------------------------------------------ */
/* Nodes                                                                                 */

static json_t *node_json(struct ctl *c, uint32_t idx, json_t *jobs)
{
    struct sched_node_view v;
    struct ctl_node *n = ctl_node_at(c, idx);
    if (!n || sched_node_get(c->sched, idx, &v) < 0)
        return NULL;
    json_t *info = parse_or_null(n->rec.info);
    json_t *ver = json_object_get(info, "agent_version");
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(n->name));
    json_object_set_new(o, "state", json_string(sched_node_state_name(v.state)));
    json_object_set_new(o, "reason", json_string(n->rec.reason));
    json_object_set_new(o, "gpu_type", json_string(v.gpu_type ? v.gpu_type : ""));
    json_object_set_new(o, "gpus", json_integer(v.gpus));
    json_object_set_new(o, "gpus_used", json_integer(v.gpus_used));
    json_object_set_new(o, "gpu_mem_mb", json_integer(v.gpu_mem_mb));
    json_object_set_new(o, "cpus", json_integer(v.cpus));
    json_object_set_new(o, "cpus_used", json_integer(v.cpus_used));
    json_object_set_new(o, "mem_mb", json_integer(v.mem_mb));
    json_object_set_new(o, "mem_used_mb", json_integer(v.mem_used_mb));
    json_object_set_new(o, "labels", parse_or_null(n->rec.labels));
    json_object_set_new(o, "reserved", json_boolean(v.reserved));
    json_object_set_new(o, "last_heartbeat_ms", json_integer(n->rec.last_heartbeat_ms));
    json_object_set_new(o, "leases_end_ms", json_integer(ctl_leases_next_end_ms(c, n)));
    json_object_set_new(o, "agent_version",
                        json_string(json_is_string(ver) ? json_string_value(ver) : ""));
    json_t *addr = json_object_get(info, "addr");
    json_object_set_new(o, "addr",
                        json_string(json_is_string(addr) ? json_string_value(addr) : ""));
    json_object_set_new(o, "jobs", jobs ? jobs : json_array());
    json_object_set_new(o, "gpu_usage", ctl_usage_node_json(n));
    json_decref(info);
    return o;
}

/* Job ids of the nodes of index lo .. hi-1 (by[i - lo]), from one pass over the live
 * jobs. */
static json_t **jobs_by_node(struct ctl *c, size_t lo, size_t hi)
{
    json_t **by = calloc(hi > lo ? hi - lo : 1, sizeof(*by));
    if (!by)
        return NULL;
    for (size_t i = lo; i < hi; i++)
        by[i - lo] = json_array();
    for (size_t i = 0; i < sched_job_slots(c->sched); i++) { /* slots, not the count */
        struct sched_job_view v;
        if (sched_job_at(c->sched, i, &v) < 0)
            continue;
        for (int k = 0; k < v.nallocs; k++)
            if (v.allocs[k].node >= lo && v.allocs[k].node < hi)
                json_array_append_new(by[v.allocs[k].node - lo], json_integer((json_int_t)v.id));
    }
    return by;
}

/* The node list (ctl_list, stream.c) in the core's order; a node's cursor is its index
 * + 1 (0: the start). Each slice takes its nodes' jobs from one pass over the live jobs. */
static int nodes_fetch(struct ctl_list *l, void *arg, int64_t after, int max_rows)
{
    struct ctl *c = arg;
    size_t nn = sched_node_count(c->sched), lo = (size_t)after;
    size_t hi = lo + (size_t)max_rows < nn ? lo + (size_t)max_rows : nn;
    if (lo >= nn)
        return 0;
    json_t **by = jobs_by_node(c, lo, hi);
    if (!by)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = lo; i < hi; i++) {
        json_t *o = rc == 0 ? node_json(c, (uint32_t)i, by[i - lo]) : NULL;
        if (o)
            rc = ctl_list_row_json(l, o, (int64_t)i + 1);
        else
            json_decref(by[i - lo]);
    }
    free(by);
    return rc == 0 && hi < nn ? CTL_LIST_MORE : rc;
}

/* GET /v1/nodes: paged like every list (limit default and most 10000) */
void h_nodes_list(struct ctl_req *r)
{
    int64_t limit = 10000, after;
    size_t max_bytes;
    if (ctl_list_params(r, &limit, &after, &max_bytes) < 0)
        return;
    ctl_list_start(r->c, r->req, "nodes", limit, after, max_bytes, nodes_fetch, NULL, r->c);
}

static int node_arg(struct ctl_req *r)
{
    int idx = sched_node_find(r->c->sched, r->arg[0]);
    if (idx < 0 || !ctl_node_at(r->c, (uint32_t)idx))
        ctl_reply_errorf(r->c, r->req, 404, NULL, "no such node '%.64s'", r->arg[0]);
    return idx < 0 || !ctl_node_at(r->c, (uint32_t)idx) ? -ENOENT : idx;
}

void h_node_show(struct ctl_req *r)
{
    int idx = node_arg(r);
    if (idx < 0)
        return;
    json_t **by = jobs_by_node(r->c, (size_t)idx, (size_t)idx + 1);
    json_t *jobs = by ? by[0] : NULL;
    free(by);
    ctl_reply_json(r->c, r->req, 200,
                   json_pack("{s:o}", "node", node_json(r->c, (uint32_t)idx, jobs)));
}

static int reason_body(struct ctl_req *r, char *reason, size_t len)
{
    static const char *const known[] = {"reason", NULL};
    struct proto_error e;
    reason[0] = '\0';
    json_t *b = ctl_body_json(r, true);
    if (!b)
        return -EINVAL;
    json_t *v = json_object_get(b, "reason");
    int rc = proto_check_fields(b, "", known, &e);
    if (rc == 0 && v && (!json_is_string(v) || json_string_length(v) >= len))
        rc = proto_errorf(&e, 400, NULL, "reason", "reason must be a string of at most %zu bytes",
                          len - 1);
    if (rc == 0 && v)
        str_copy(reason, len, json_string_value(v));
    json_decref(b);
    if (rc < 0)
        ctl_reply_error(r->c, r->req, &e);
    return rc;
}

static void node_set(struct ctl_req *r, enum sched_node_state to, const char *action)
{
    char reason[256];
    struct sched_error se;
    struct sched_node_view v;
    int idx = node_arg(r);
    if (idx < 0 || reason_body(r, reason, sizeof(reason)) < 0)
        return;
    struct ctl_node *n = ctl_node_at(r->c, (uint32_t)idx);
    if (sched_node_get(r->c->sched, (uint32_t)idx, &v) < 0)
        return;
    enum sched_node_state from = v.state;
    if (to == SCHED_NODE_UP && from == SCHED_NODE_UNREACHABLE) {
        ctl_reply_errorf(r->c, r->req, 409, NULL,
                         "node '%s' is unreachable: it comes back with its agent", n->name);
        return;
    }
    /* down ends the node's jobs at once, with no word to its agent: only for a node that
     * is silent (its operator knows the machine is off), never a live one */
    if (to == SCHED_NODE_DOWN && from != SCHED_NODE_UNREACHABLE && from != SCHED_NODE_DOWN) {
        ctl_reply_errorf(r->c, r->req, 409, NULL,
                         "node '%s' is %s, not unreachable: drain it instead (down declares a "
                         "silent node's jobs lost before their leases end)",
                         n->name, sched_node_state_name(from));
        return;
    }
    /* saved first; a change the core refuses rolls the request's writes back */
    json_t *b = json_pack("{s:s}", "state", sched_node_state_name(from));
    json_t *a = json_pack("{s:s}", "state", sched_node_state_name(to));
    int rc = ctl_node_put(r->c, n, sched_node_state_name(to), reason, n->rec.labels);
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, action, n->name, b, a, reason);
    json_decref(b);
    json_decref(a);
    if (rc < 0) {
        store_fail(r);
        return;
    }
    if (from != to && sched_node_set_state(r->c->sched, n->name, to, clock_now_ms(), &se) < 0) {
        ctl_reply_errorf(r->c, r->req, 409, NULL, "%s", se.message);
        return;
    }
    if (to == SCHED_NODE_DOWN) { /* its jobs run elsewhere: nothing queued may reach it */
        ctl_node_drop_commands(n);
        n->reconciled = false;
    }
    /* the core may have moved on at once (DRAINING -> DRAINED): store what it holds */
    str_copy(n->rec.reason, sizeof(n->rec.reason), reason);
    if (ctl_node_save(r->c, n) < 0)
        ctl_store_diverged(r->c, "node_state", 0);
    ctl_cycle_now(r->c);
    ctl_reply_json(r->c, r->req, 200,
                   json_pack("{s:o}", "node", node_json(r->c, (uint32_t)idx, NULL)));
}

void h_node_drain(struct ctl_req *r)
{
    node_set(r, SCHED_NODE_DRAINING, "node.drain");
}

void h_node_down(struct ctl_req *r)
{
    node_set(r, SCHED_NODE_DOWN, "node.down");
}

void h_node_resume(struct ctl_req *r)
{
    node_set(r, SCHED_NODE_UP, "node.resume");
}

void h_node_labels(struct ctl_req *r)
{
    static const char *const known[] = {"labels", NULL};
    struct proto_error e;
    struct sched_error se;
    int idx = node_arg(r);
    if (idx < 0)
        return;
    struct ctl_node *n = ctl_node_at(r->c, (uint32_t)idx);
    json_t *b = ctl_body_json(r, false);
    if (!b)
        return;
    json_t *l = json_object_get(b, "labels");
    int rc = proto_check_fields(b, "", known, &e);
    if (rc == 0 && !json_is_object(l))
        rc = proto_errorf(&e, 400, NULL, "labels", "labels must be an object");
    json_t *before = parse_or_null(n->rec.labels);
    json_t *after = json_is_object(before) ? json_deep_copy(before) : json_object();
    const char *k;
    json_t *v;
    if (rc == 0) {
        json_object_foreach(l, k, v) {
            char f[96];
            snprintf(f, sizeof(f), "labels.%.64s", k);
            if (!str_is_name(k)) {
                rc = proto_errorf(&e, 400, NULL, f, "invalid label name '%.64s'", k);
                break;
            }
            if (json_is_null(v)) {
                json_object_del(after, k);
            } else if (json_is_string(v) && str_is_label_value(k, json_string_value(v))) {
                json_object_set(after, k, v);
            } else {
                rc = proto_errorf(&e, 400, NULL, f, "%s must be a label value or null", f);
                break;
            }
        }
    }
    struct sched_label labels[SCHED_MAX_LABELS];
    if (rc == 0 && json_object_size(after) > SCHED_MAX_LABELS)
        rc =
            proto_errorf(&e, 400, NULL, "labels", "a node has at most %d labels", SCHED_MAX_LABELS);
    int nl = rc == 0 ? ctl_labels_from_json(after, labels, SCHED_MAX_LABELS) : 0;
    /* saved first; labels the core refuses roll the request's writes back */
    char *text = rc == 0 ? json_dumps(after, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    struct sched_node_view nv;
    if (rc == 0 &&
        (!text || sched_node_get(r->c->sched, (uint32_t)idx, &nv) < 0 ||
         ctl_node_put(r->c, n, sched_node_state_name(nv.state), n->rec.reason, text) < 0 ||
         ctl_audit(r->c, r->id.user, "node.labels", n->name, before, after, NULL) < 0))
        rc = proto_errorf(&e, 500, NULL, NULL, "store: %s", store_errmsg(r->c->store));
    if (rc == 0 && sched_node_set_labels(r->c->sched, n->name, labels, nl, &se) < 0)
        rc = proto_errorf(&e, 400, NULL, "labels", "%s", se.message);
    if (rc < 0) {
        free(text);
        ctl_reply_error(r->c, r->req, &e);
    } else {
        free(n->rec.labels);
        n->rec.labels = text;
        ctl_cycle_soon(r->c);
        ctl_reply_json(r->c, r->req, 200,
                       json_pack("{s:o}", "node", node_json(r->c, (uint32_t)idx, NULL)));
    }
    json_decref(before);
    json_decref(after);
    json_decref(b);
}

/* ------------------------------------------------------------------------------------ */
/* Projects                                                                              */

static json_t *project_spec_json(const struct sched_project_spec *p)
{
    return json_pack("{s:s,s:s,s:s,s:f,s:i,s:i,s:i,s:i,s:i,s:b}", "name", p->name, "group",
                     p->group, "tier", p->tier, "guarantee_gpus", p->guarantee_gpus, "gpu_limit",
                     p->gpu_limit, "max_running", p->max_running, "max_queued", p->max_queued,
                     "user_max_running", p->user_max_running, "user_gpu_limit", p->user_gpu_limit,
                     "paused", p->paused);
}

static int project_view(struct ctl *c, const char *name, struct sched_project_view *v)
{
    int i = sched_project_find(c->sched, name);
    return i < 0 ? -ENOENT : sched_project_get(c->sched, (size_t)i, v);
}

json_t *ctl_project_json(struct ctl *c, const struct sched_project_view *v)
{
    json_t *o = project_spec_json(&v->spec);
    json_object_set_new(o, "eff_tier", json_string(v->eff_tier ? v->eff_tier : v->spec.tier));
    if (v->boost_levels > 0) {
        json_t *why = c->boost_reasons ? json_object_get(c->boost_reasons, v->spec.name) : NULL;
        json_object_set_new(o, "boost",
                            json_pack("{s:i,s:I,s:s}", "levels", v->boost_levels, "until_ms",
                                      (json_int_t)v->boost_until_ms, "reason",
                                      json_is_string(why) ? json_string_value(why) : ""));
    } else {
        json_object_set_new(o, "boost", json_null());
    }
    json_object_set_new(o, "usage",
                        json_pack("{s:i,s:i,s:i,s:f,s:f}", "gpus_in_use", v->gpus_in_use, "running",
                                  v->running, "queued", v->queued, "fairshare_usage", v->usage,
                                  "share", v->share));
    return o;
}

/* Write a project's document: its spec and boost, as they will be in the core (so it can
 * be written before the core changes). reason NULL: the boost's remembered reason. */
static int project_put(struct ctl *c, const struct sched_project_spec *spec, int boost_levels,
                       int64_t boost_until_ms, const char *reason)
{
    json_t *why = c->boost_reasons ? json_object_get(c->boost_reasons, spec->name) : NULL;
    if (!reason)
        reason = json_is_string(why) ? json_string_value(why) : "";
    json_t *doc = json_pack("{s:o}", "spec", project_spec_json(spec));
    if (boost_levels > 0)
        json_object_set_new(doc, "boost",
                            json_pack("{s:i,s:I,s:s}", "levels", boost_levels, "until_ms",
                                      (json_int_t)boost_until_ms, "reason", reason));
    char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(doc);
    int rc = text ? store_begin(c->store) : -ENOMEM;
    if (rc == 0)
        rc = store_project_put(c->store, spec->name, text);
    free(text);
    ctl_commit_soon(c);
    return rc;
}

int ctl_project_save(struct ctl *c, const char *name, const char *boost_reason)
{
    struct sched_project_view v;
    if (project_view(c, name, &v) < 0)
        return -ENOENT;
    if (boost_reason)
        ctl_project_boost_reason(c, name, boost_reason);
    return project_put(c, &v.spec, v.boost_levels, v.boost_until_ms, NULL);
}

void ctl_project_boost_reason(struct ctl *c, const char *name, const char *reason)
{
    if (!c->boost_reasons)
        c->boost_reasons = json_object();
    json_object_set_new(c->boost_reasons, name, json_string(reason));
}

/* A group's bounds (-1: none) and what its projects use together. */
static json_t *group_json(const struct sched_group_view *g)
{
    return json_pack("{s:s,s:f,s:i,s:{s:i,s:i,s:i,s:f}}", "name", g->spec.name, "guarantee_gpus",
                     g->spec.guarantee_gpus, "gpu_limit", g->spec.gpu_limit, "usage", "gpus_in_use",
                     g->gpus_in_use, "running", g->running, "projects", g->projects, "share",
                     g->share);
}

void h_projects_list(struct ctl_req *r)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < sched_project_count(r->c->sched); i++) {
        struct sched_project_view v;
        if (sched_project_get(r->c->sched, i, &v) == 0)
            json_array_append_new(arr, ctl_project_json(r->c, &v));
    }
    json_t *groups = json_array();
    for (size_t i = 0; i < sched_group_count(r->c->sched); i++) {
        struct sched_group_view g;
        if (sched_group_get(r->c->sched, i, &g) == 0)
            json_array_append_new(groups, group_json(&g));
    }
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o,s:o}", "projects", arr, "groups", groups));
}

static int project_arg(struct ctl_req *r, struct sched_project_view *v)
{
    if (project_view(r->c, r->arg[0], v) < 0) {
        ctl_reply_errorf(r->c, r->req, 404, NULL, "no such project '%.64s'", r->arg[0]);
        return -ENOENT;
    }
    return 0;
}

void h_project_show(struct ctl_req *r)
{
    struct sched_project_view v;
    if (project_arg(r, &v) == 0)
        ctl_reply_json(r->c, r->req, 200,
                       json_pack("{s:o}", "project", ctl_project_json(r->c, &v)));
}

/* Save p and its audit entry, then upsert it into the core (a refusal there rolls the
 * request's writes back), answer with the project. */
static void project_commit(struct ctl_req *r, const struct sched_project_spec *p,
                           const char *action, json_t *before, int status, const char *reason)
{
    struct sched_error se;
    struct sched_project_view v;
    bool known = project_view(r->c, p->name, &v) == 0;
    json_t *after = project_spec_json(p);
    int rc = project_put(r->c, p, known ? v.boost_levels : 0, known ? v.boost_until_ms : 0, NULL);
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, action, p->name, before, after, reason);
    json_decref(after);
    if (rc < 0) {
        store_fail(r);
        return;
    }
    if (sched_project_upsert(r->c->sched, p, &se) < 0) {
        ctl_reply_errorf(r->c, r->req, 400, se.field[0] ? se.field : NULL, "%s", se.message);
        return;
    }
    ctl_cycle_soon(r->c);
    if (project_view(r->c, p->name, &v) == 0)
        ctl_reply_json(r->c, r->req, status,
                       json_pack("{s:o}", "project", ctl_project_json(r->c, &v)));
}

void h_project_create(struct ctl_req *r)
{
    struct sched_project_spec p;
    struct sched_project_view v;
    struct proto_error e;
    json_t *b = ctl_body_json(r, false);
    if (!b)
        return;
    sched_project_spec_init(&p);
    if (proto_project_parse(b, "", false, &p, &e) < 0)
        ctl_reply_error(r->c, r->req, &e);
    else if (project_view(r->c, p.name, &v) == 0)
        ctl_reply_errorf(r->c, r->req, 409, "name", "project '%s' already exists", p.name);
    else
        project_commit(r, &p, "project.create", NULL, 201, NULL);
    json_decref(b);
}

/* The gpu_limit of the group named `name` (-1: none, or no such group). */
static int group_gpu_limit(struct ctl *c, const char *name)
{
    struct sched_group_view g;
    int i = name[0] ? sched_group_find(c->sched, name) : -ENOENT;
    if (i < 0 || sched_group_get(c->sched, (size_t)i, &g) < 0)
        return -1;
    return g.spec.gpu_limit;
}

void h_project_patch(struct ctl_req *r)
{
    struct sched_project_view v;
    struct proto_error e;
    if (project_arg(r, &v) < 0)
        return;
    json_t *b = ctl_body_json(r, false);
    if (!b)
        return;
    struct sched_project_spec p = v.spec;
    if (proto_project_parse(b, "", true, &p, &e) < 0 ||
        ctl_authz_project_patch(&r->id, &r->tgt, b, &p, group_gpu_limit(r->c, v.spec.group), &e) <
            0) {
        ctl_reply_error(r->c, r->req, &e);
    } else {
        json_t *before = project_spec_json(&v.spec);
        project_commit(r, &p, "project.update", before, 200, NULL);
        json_decref(before);
    }
    json_decref(b);
}

static void project_pause(struct ctl_req *r, bool paused)
{
    struct sched_project_view v;
    char reason[256];
    if (project_arg(r, &v) < 0 || reason_body(r, reason, sizeof(reason)) < 0)
        return;
    struct sched_project_spec p = v.spec;
    p.paused = paused;
    json_t *before = project_spec_json(&v.spec);
    project_commit(r, &p, paused ? "project.pause" : "project.resume", before, 200, reason);
    json_decref(before);
}

/* ------------------------------------------------------------------------------------ */
/* Default projects (Slurm's default account): the project of a user's jobs that name    */
/* none (jobs.c resolve_spec).                                                           */

static void default_reply(struct ctl_req *r, int status, const char *user, const char *project)
{
    ctl_reply_json(r->c, r->req, status,
                   json_pack("{s:s,s:o}", "user", user, "default_project",
                             project && *project ? json_string(project) : json_null()));
}

void h_user_default_get(struct ctl_req *r)
{
    char project[64] = ""; /* the user or an admin: the route's check (CTL_P_SELF) */
    int rc = store_default_project_get(r->c->store, r->arg[0], project, sizeof(project));
    if (rc < 0 && rc != -ENOENT) {
        store_fail(r);
        return;
    }
    default_reply(r, 200, r->arg[0], project);
}

/* May the caller make `name` ("" clears) r->arg[0]'s default project? The route let in
 * only that user and admins; authz.c asks that it be a project of the user's. 0, or
 * -EPERM after answering 403. */
static int default_set_allowed(struct ctl_req *r, const char *name)
{
    char role[16];
    struct proto_error e;
    struct ctl_target t = {name[0] ? name : NULL, r->arg[0], CTL_PROLE_NONE};
    bool member =
        name[0] && store_member_get(r->c->store, name, r->arg[0], role, sizeof(role)) == 0;
    if (ctl_authz_default_project(&r->id, &t, member, &e) == 0)
        return 0;
    ctl_reply_error(r->c, r->req, &e);
    return -EPERM;
}

/* {"project": NAME} sets it (the project must exist), {"project": null} clears it. */
void h_user_default_set(struct ctl_req *r)
{
    static const char *const known[] = {"project", NULL};
    struct proto_error e;
    struct sched_project_view v;
    char before[64] = "", name[64] = "";
    json_t *b = ctl_body_json(r, false);
    if (!b)
        return;
    json_t *p = json_object_get(b, "project");
    if (!str_is_name(r->arg[0])) {
        ctl_reply_errorf(r->c, r->req, 400, NULL, "bad user name '%.64s'", r->arg[0]);
    } else if (proto_check_fields(b, "", known, &e) < 0) {
        ctl_reply_error(r->c, r->req, &e);
    } else if (!p || (!json_is_null(p) && proto_get_name(p, "project", name, &e) < 0)) {
        if (!p)
            ctl_reply_errorf(r->c, r->req, 400, "project",
                             "project is required (a name, or null to clear)");
        else
            ctl_reply_error(r->c, r->req, &e);
    } else if (name[0] && project_view(r->c, name, &v) < 0) {
        ctl_reply_errorf(r->c, r->req, 404, "project", "no such project '%s'", name);
    } else if (default_set_allowed(r, name) < 0) {
        /* answered */
    } else {
        int rc = store_default_project_get(r->c->store, r->arg[0], before, sizeof(before));
        json_t *old = rc == 0 ? json_string(before) : json_null();
        json_t *now = name[0] ? json_string(name) : json_null();
        rc = rc == -ENOENT ? 0 : rc;
        if (rc == 0)
            rc = store_begin(r->c->store);
        if (rc == 0)
            rc = store_default_project_set(r->c->store, r->arg[0], name[0] ? name : NULL);
        if (rc == 0)
            rc = ctl_audit(r->c, r->id.user, "user.default_project", r->arg[0], old, now, NULL);
        json_decref(old);
        json_decref(now);
        ctl_commit_soon(r->c);
        if (rc < 0)
            store_fail(r);
        else
            default_reply(r, 200, r->arg[0], name);
    }
    json_decref(b);
}

void h_project_pause(struct ctl_req *r)
{
    project_pause(r, true);
}

void h_project_resume(struct ctl_req *r)
{
    project_pause(r, false);
}

static void boost_apply(struct ctl_req *r, int levels, int64_t until, const char *reason)
{
    struct sched_error se;
    struct sched_project_view v;
    if (project_arg(r, &v) < 0)
        return;
    json_t *before =
        json_pack("{s:i,s:I}", "levels", v.boost_levels, "until_ms", (json_int_t)v.boost_until_ms);
    json_t *after = json_pack("{s:i,s:I}", "levels", levels, "until_ms", (json_int_t)until);
    /* saved first; a boost the core refuses rolls the request's writes back */
    int rc = project_put(r->c, &v.spec, levels, until, reason);
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, levels ? "project.boost" : "project.unboost", v.spec.name,
                       before, after, reason);
    json_decref(before);
    json_decref(after);
    if (rc < 0) {
        store_fail(r);
        return;
    }
    if (sched_project_boost(r->c->sched, v.spec.name, levels, until, clock_now_ms(), &se) < 0) {
        ctl_reply_errorf(r->c, r->req, 400, se.field[0] ? se.field : "levels", "%s", se.message);
        return;
    }
    ctl_project_boost_reason(r->c, v.spec.name, reason);
    ctl_cycle_soon(r->c);
    if (project_view(r->c, v.spec.name, &v) == 0)
        ctl_reply_json(r->c, r->req, 200,
                       json_pack("{s:o}", "project", ctl_project_json(r->c, &v)));
}

void h_project_boost(struct ctl_req *r)
{
    static const char *const known[] = {"levels", "duration", "reason", NULL};
    struct proto_error e;
    int64_t levels = 1, dur = 0;
    json_t *b = ctl_body_json(r, false);
    if (!b)
        return;
    int ntiers = sched_get_policy(r->c->sched)->ntiers;
    json_t *lv = json_object_get(b, "levels"), *d = json_object_get(b, "duration");
    json_t *why = json_object_get(b, "reason");
    int rc = proto_check_fields(b, "", known, &e);
    if (rc == 0 && lv)
        rc = proto_get_int(lv, "levels", 1, ntiers - 1, &levels, &e);
    if (rc == 0 && !d)
        rc = proto_errorf(&e, 400, NULL, "duration", "duration is required");
    if (rc == 0)
        rc = proto_get_duration(d, "duration", PROTO_MAX_DURATION_MS, &dur, &e);
    if (rc == 0 && dur <= 0)
        rc = proto_errorf(&e, 400, NULL, "duration", "duration must be positive");
    if (rc == 0 && (!why || !json_is_string(why) || json_string_length(why) == 0 ||
                    json_string_length(why) > 1024))
        rc = proto_errorf(&e, 400, NULL, "reason", "a boost needs a reason (a string)");
    if (rc < 0)
        ctl_reply_error(r->c, r->req, &e);
    else
        boost_apply(r, (int)levels, clock_now_ms() + dur, json_string_value(why));
    json_decref(b);
}

void h_project_unboost(struct ctl_req *r)
{
    boost_apply(r, 0, 0, "");
}

/* ------------------------------------------------------------------------------------ */
/* Tiers, classes, policy                                                                */

void h_tiers(struct ctl_req *r)
{
    const struct sched_policy *p = sched_get_policy(r->c->sched);
    json_t *arr = json_array();
    for (int i = 0; i < p->ntiers; i++)
        json_array_append_new(arr, proto_tier_json(p, i));
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "tiers", arr));
}

void h_classes(struct ctl_req *r)
{
    const struct sched_policy *p = sched_get_policy(r->c->sched);
    json_t *arr = json_array();
    for (int i = 0; i < p->nclasses; i++)
        json_array_append_new(arr, proto_class_json(&p->classes[i]));
    ctl_class_nodes_json(r->c, arr, p, NULL);
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "classes", arr));
}

/* The policy document of `p`, with the classes' node fields (pp: a document being applied,
 * NULL: the current ones). */
static json_t *policy_doc(struct ctl *c, const struct sched_policy *p,
                          const struct proto_policy *pp)
{
    json_t *doc = proto_policy_to_json(p);
    ctl_class_nodes_json(c, json_object_get(doc, "classes"), p, pp);
    ctl_ops_json(c, doc, pp, false);
    ctl_templates_json(c, doc, pp);
    ctl_site_json(c, doc, pp);
    return doc;
}

/* The same for readers (GET /v1/policy, the audit trail): webhook credentials hidden. */
static json_t *policy_doc_shown(struct ctl *c, const struct sched_policy *p,
                                const struct proto_policy *pp)
{
    json_t *doc = policy_doc(c, p, pp);
    ctl_ops_json(c, doc, pp, true);
    return doc;
}

/* Write the policy document `p` (before the core takes it). */
static int policy_put(struct ctl *c, const struct sched_policy *p, const struct proto_policy *pp)
{
    json_t *doc = policy_doc(c, p, pp);
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(doc);
    int rc = text ? store_begin(c->store) : -ENOMEM;
    if (rc == 0)
        rc = store_policy_put(c->store, text);
    free(text);
    ctl_commit_soon(c);
    return rc;
}

int ctl_policy_save(struct ctl *c)
{
    return policy_put(c, sched_get_policy(c->sched), NULL);
}

void h_class_patch(struct ctl_req *r)
{
    struct sched_policy p = *sched_get_policy(r->c->sched);
    struct proto_error e;
    struct sched_error se;
    int i;
    for (i = 0; i < p.nclasses; i++)
        if (strcmp(p.classes[i].name, r->arg[0]) == 0)
            break;
    if (i == p.nclasses) {
        ctl_reply_errorf(r->c, r->req, 404, NULL, "no such class '%.64s'", r->arg[0]);
        return;
    }
    json_t *b = ctl_body_json(r, false);
    if (!b)
        return;
    json_t *before = proto_class_json(&p.classes[i]);
    json_t *after = NULL;
    if (proto_class_patch(b, &p.classes[i], &e) < 0) {
        ctl_reply_error(r->c, r->req, &e);
    } else if (sched_policy_check(r->c->sched, &p, &se) < 0) {
        ctl_reply_errorf(r->c, r->req, 400, se.field[0] ? se.field : NULL, "%s", se.message);
    } else if (policy_put(r->c, &p, NULL) < 0 ||
               ctl_audit(r->c, r->id.user, "class.update", p.classes[i].name, before,
                         (after = proto_class_json(&p.classes[i])), NULL) < 0) {
        store_fail(r);
    } else if (sched_set_policy(r->c->sched, &p, &se) < 0) { /* checked above: memory */
        ctl_reply_errorf(r->c, r->req, 500, se.field[0] ? se.field : NULL, "%s", se.message);
    } else {
        ctl_cycle_soon(r->c);
        ctl_reply_json(r->c, r->req, 200, json_pack("{s:O}", "class", after));
    }
    json_decref(after);
    json_decref(before);
    json_decref(b);
}

void h_policy_get(struct ctl_req *r)
{
    json_t *doc = policy_doc_shown(r->c, sched_get_policy(r->c->sched), NULL);
    json_t *projects = json_array();
    for (size_t i = 0; i < sched_project_count(r->c->sched); i++) {
        struct sched_project_view v;
        if (sched_project_get(r->c->sched, i, &v) == 0)
            json_array_append_new(projects, project_spec_json(&v.spec));
    }
    json_object_set_new(doc, "projects", projects);
    ctl_reply_json(r->c, r->req, 200, doc);
}

/* Try the whole document on a scratch core first, so the real one changes all or
 * nothing. */
static int policy_trial(const struct proto_policy *pp, struct sched_error *se)
{
    struct sched *t = sched_create(&pp->policy, se);
    if (!t)
        return -EINVAL;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < pp->nprojects; i++) {
        rc = sched_project_upsert(t, &pp->projects[i], se);
        if (rc < 0) {
            char f[128];
            snprintf(f, sizeof(f), "projects[%zu].%.60s", i, se->field);
            str_copy(se->field, sizeof(se->field), f);
        }
    }
    sched_destroy(t);
    return rc;
}

/* The document's memberships and default projects, in the apply's transaction: one apply
 * for a site's thousands of users (they are added or their role set; none is removed). */
static int policy_members_put(struct ctl *c, const struct proto_policy *pp)
{
    size_t i;
    json_t *m;
    int rc = 0;
    json_array_foreach(pp->members, i, m) {
        if (rc == 0)
            rc = store_member_put(c->store, json_string_value(json_object_get(m, "project")),
                                  json_string_value(json_object_get(m, "user")),
                                  json_string_value(json_object_get(m, "role")));
    }
    const char *user;
    json_t *project;
    json_object_foreach(pp->defaults, user, project) {
        if (rc == 0)
            rc = store_default_project_set(c->store, user, json_string_value(project));
    }
    return rc;
}

/* Every project the memberships name must exist once the document is applied. */
static int policy_members_check(struct ctl *c, const struct proto_policy *pp, struct proto_error *e)
{
    size_t i;
    json_t *m;
    json_array_foreach(pp->members, i, m) {
        const char *name = json_string_value(json_object_get(m, "project"));
        bool in_doc = false;
        for (size_t k = 0; k < pp->nprojects && !in_doc; k++)
            in_doc = strcmp(pp->projects[k].name, name) == 0;
        if (!in_doc && sched_project_find(c->sched, name) < 0)
            return proto_errorf(e, 400, NULL, "projects", "unknown project '%s'", name);
    }
    return 0;
}

static bool is_yaml(const char *ct)
{
    return ct && (str_has_prefix(ct, "application/yaml") || str_has_prefix(ct, "text/yaml") ||
                  str_has_prefix(ct, "application/x-yaml") || str_has_prefix(ct, "text/x-yaml"));
}

void h_policy_apply(struct ctl_req *r)
{
    struct proto_policy pp;
    struct proto_error e;
    struct sched_error se;
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(r->req), "Content-Type");
    bool yaml = is_yaml(ct);
    if (ct && !yaml && !str_has_prefix(ct, "application/json")) {
        ctl_reply_errorf(r->c, r->req, 415, NULL,
                         "policy must be application/json or application/yaml, not '%.64s'", ct);
        return;
    }
    const char *dry = ctl_query(r, "dry_run");
    bool dry_run = dry && (strcmp(dry, "1") == 0 || strcmp(dry, "true") == 0);
    if (proto_policy_parse_text(r->body ? r->body : "", r->body_len, yaml,
                                sched_get_policy(r->c->sched), &pp, &e) < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return;
    }
    if (ctl_templates_check(r->c, &pp, &e) < 0 || policy_members_check(r->c, &pp, &e) < 0 ||
        ctl_site_node_labels_check(r->c, &pp, &e) < 0) {
        ctl_reply_error(r->c, r->req, &e);
        proto_policy_release(&pp);
        return;
    }
    if (policy_trial(&pp, &se) < 0) {
        ctl_reply_errorf(r->c, r->req, 400, se.field[0] ? se.field : NULL, "%s", se.message);
        proto_policy_release(&pp);
        return;
    }
    json_t *applied =
        json_pack("{s:i,s:i,s:i}", "tiers", pp.has_tiers ? pp.policy.ntiers : 0, "classes",
                  pp.has_classes ? pp.policy.nclasses : 0, "projects", (int)pp.nprojects);
    if (pp.templates) /* only then: a reply without the section reads as before */
        json_object_set_new(applied, "templates", json_integer((json_int_t)pp.templates->n));
    if (pp.members) { /* likewise */
        json_object_set_new(applied, "members",
                            json_integer((json_int_t)json_array_size(pp.members)));
        json_object_set_new(applied, "defaults",
                            json_integer((json_int_t)json_object_size(pp.defaults)));
    }
    if (dry_run) {
        ctl_reply_json(r->c, r->req, 200, json_pack("{s:o,s:b}", "applied", applied, "dry_run", 1));
        proto_policy_release(&pp);
        return;
    }
    /* the live core may still refuse what the empty trial accepted (a tier or class in use
     * removed): asked first, it changes nothing then */
    if (sched_policy_check(r->c->sched, &pp.policy, &se) < 0) {
        ctl_reply_errorf(r->c, r->req, 409, se.field[0] ? se.field : NULL, "%s", se.message);
        json_decref(applied);
        proto_policy_release(&pp);
        return;
    }
    /* saved first (policy, projects, audit), applied once every write succeeded: a failed
     * write answers 500 with the core untouched and the request's writes rolled back */
    json_t *before = policy_doc_shown(r->c, sched_get_policy(r->c->sched), NULL);
    json_t *after = policy_doc_shown(r->c, &pp.policy, &pp);
    json_object_set_new(after, "projects_applied", json_integer((json_int_t)pp.nprojects));
    int rc = policy_put(r->c, &pp.policy, &pp);
    for (size_t i = 0; rc == 0 && i < pp.nprojects; i++) {
        struct sched_project_view v;
        bool known = project_view(r->c, pp.projects[i].name, &v) == 0;
        rc = project_put(r->c, &pp.projects[i], known ? v.boost_levels : 0,
                         known ? v.boost_until_ms : 0, NULL);
    }
    if (rc == 0)
        rc = policy_members_put(r->c, &pp);
    if (rc == 0)
        rc = ctl_site_node_labels_write(r->c, &pp);
    if (pp.members) /* the audit names how many, not each */
        json_object_set_new(after, "members_applied",
                            json_integer((json_int_t)json_array_size(pp.members)));
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, "policy.apply", "policy", before, after, NULL);
    if (rc == 0)
        rc = ctl_templates_audit(r->c, r->id.user, &pp);
    json_decref(after);
    json_decref(before);
    if (rc < 0) {
        store_fail(r);
        json_decref(applied);
        proto_policy_release(&pp);
        return;
    }
    rc = sched_set_policy(r->c->sched, &pp.policy, &se);
    for (size_t i = 0; rc == 0 && i < pp.nprojects; i++)
        rc = sched_project_upsert(r->c->sched, &pp.projects[i], &se);
    if (rc < 0) { /* cannot happen after the check and the trial, short of memory */
        ctl_store_diverged(r->c, "policy_apply", 0);
        ctl_reply_errorf(r->c, r->req, 500, se.field[0] ? se.field : NULL, "%s", se.message);
    } else {
        ctl_class_nodes_take(r->c, &pp);
        ctl_alerts_take(r->c, &pp);
        ctl_templates_take(r->c, &pp);
        ctl_storage_take(r->c, &pp);
        ctl_net_take(r->c, &pp);
        ctl_site_take(r->c, &pp);
        ctl_site_node_labels_take(r->c, &pp);
        ctl_cycle_soon(r->c);
        ctl_reply_json(r->c, r->req, 200, json_pack("{s:O}", "applied", applied));
    }
    json_decref(applied);
    proto_policy_release(&pp);
}

/* ------------------------------------------------------------------------------------ */
/* Audit, tokens                                                                         */

/* The audit trail in flight (ctl_list, stream.c): its filter, with the strings it owns. */
struct audit_list {
    struct ctl *c;
    struct store_audit_filter f;
    char *strs[3];
    struct ctl_list *l; /* during a fetch */
};

static int audit_row(void *arg, const struct store_audit *a)
{
    struct audit_list *al = arg;
    return ctl_list_row_json(al->l,
                             json_pack("{s:I,s:I,s:s,s:s,s:s,s:o,s:o,s:s}", "id", (json_int_t)a->id,
                                       "time_ms", (json_int_t)a->time_ms, "actor", a->actor,
                                       "action", a->action, "target", a->target, "before",
                                       parse_or_null(a->before), "after", parse_or_null(a->after),
                                       "reason", a->reason),
                             a->id);
}

static int audit_fetch(struct ctl_list *l, void *arg, int64_t after, int max_rows)
{
    struct audit_list *al = arg;
    al->l = l;
    al->f.after = after;
    al->f.limit = max_rows;
    return store_audit_list(al->c->store, &al->f, audit_row, al);
}

static void audit_free(void *arg)
{
    struct audit_list *al = arg;
    for (int i = 0; i < 3; i++)
        free(al->strs[i]);
    free(al);
}

/* GET /v1/audit: paged like every list (docs/api.md "Lists") */
void h_audit(struct ctl_req *r)
{
    int64_t limit = 100, after;
    size_t max_bytes;
    struct audit_list *al;
    const char *since = ctl_query(r, "since_ms");
    int64_t since_ms = 0;
    if (since && parse_int64(since, 0, INT64_MAX, &since_ms) < 0) {
        ctl_reply_errorf(r->c, r->req, 400, "since_ms", "since_ms must be a non-negative integer");
        return;
    }
    if (ctl_list_params(r, &limit, &after, &max_bytes) < 0)
        return;
    al = xnonnull(calloc(1, sizeof(*al)), "audit list");
    al->c = r->c;
    al->f.since_ms = since_ms;
    const char *keys[] = {"actor", "action", "target"};
    const char **fs[] = {&al->f.actor, &al->f.action, &al->f.target};
    for (int i = 0; i < 3; i++) {
        const char *v = ctl_query(r, keys[i]);
        al->strs[i] = v ? xstrdup(v) : NULL;
        *fs[i] = al->strs[i];
    }
    ctl_list_start(r->c, r->req, "entries", limit, after, max_bytes, audit_fetch, audit_free, al);
}

static int parse_ttl(json_t *b, int64_t def, int64_t *out, struct proto_error *e)
{
    json_t *t = json_object_get(b, "ttl");
    *out = def;
    if (!t)
        return 0;
    int rc = proto_get_duration(t, "ttl", (int64_t)3660 * 24 * 3600 * 1000, out, e);
    if (rc == 0 && *out <= 0)
        rc = proto_errorf(e, 400, NULL, "ttl", "ttl must be positive");
    return rc;
}

void h_tokens(struct ctl_req *r)
{
    static const char *const known[] = {"user", "role", "ttl", NULL};
    struct proto_error e;
    struct store_token t;
    memset(&t, 0, sizeof(t));
    json_t *b = ctl_body_json(r, false);
    if (!b)
        return;
    int64_t ttl;
    int rc = proto_check_fields(b, "", known, &e);
    if (rc == 0)
        rc = proto_get_name(json_object_get(b, "user"), "user", t.user, &e);
    json_t *role = json_object_get(b, "role");
    const char *rs = role ? json_string_value(role) : "member";
    enum ctl_role gr;
    if (rc == 0 && rs && (strcmp(rs, "lead") == 0))
        rc = proto_errorf(&e, 400, NULL, "role",
                          "lead is a project role: docket projects members add PROJECT USER "
                          "--role lead");
    if (rc == 0 && ctl_role_parse(rs, &gr) < 0)
        rc = proto_errorf(&e, 400, NULL, "role",
                          "role must be \"member\", \"viewer\", \"operator\" or \"admin\"");
    if (rc == 0)
        rc = parse_ttl(b, r->c->cfg.token_ttl_ms, &ttl, &e);
    char tok[96];
    if (rc < 0) {
        ctl_reply_error(r->c, r->req, &e);
        json_decref(b);
        return;
    }
    str_copy(t.role, sizeof(t.role), rs);
    if (ctl_token_issue(r->c, r->id.user, &t, ttl, tok, sizeof(tok), &e) < 0)
        ctl_reply_error(r->c, r->req, &e);
    else
        ctl_reply_json(r->c, r->req, 201, ctl_token_json(tok, &t));
    json_decref(b);
}

json_t *ctl_token_json(const char *tok, const struct store_token *t)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:I}", "token", tok, "id", t->id, "user", t->user, "role",
                     t->role, "expires_ms", (json_int_t)t->expires_ms);
}

int ctl_token_issue(struct ctl *c, const char *actor, struct store_token *t, int64_t ttl_ms,
                    char *tok, size_t toklen, struct proto_error *e)
{
    if (ctl_random_token("dkt_", tok, toklen) < 0)
        return proto_errorf(e, 500, NULL, NULL, "no randomness");
    store_token_hash(tok, t->hash);
    memcpy(t->id, t->hash, STORE_TOKEN_ID_LEN);
    t->id[STORE_TOKEN_ID_LEN] = '\0';
    t->kind = STORE_TOKEN_USER;
    int64_t cap = t->expires_ms; /* a derived token's parent's expiry: never later */
    t->created_ms = clock_now_ms();
    t->expires_ms = t->created_ms + ttl_ms;
    if (cap && cap < t->expires_ms)
        t->expires_ms = cap;
    if (store_token_put(c->store, t) < 0)
        return proto_errorf(e, 500, NULL, NULL, "store: %s", store_errmsg(c->store));
    json_t *after = json_pack("{s:s,s:s,s:I,s:s}", "user", t->user, "role", t->role, "expires_ms",
                              (json_int_t)t->expires_ms, "id", t->id);
    if (t->parent[0]) /* the chain, in the trail: the id of the token it was made from */
        json_object_set_new(after, "parent", json_stringn(t->parent, STORE_TOKEN_ID_LEN));
    int rc = ctl_audit(c, actor, "token.issue", t->user, NULL, after, NULL);
    json_decref(after);
    if (rc < 0)
        return proto_errorf(e, 500, NULL, NULL, "store: %s", store_errmsg(c->store));
    return 0;
}

void h_join_tokens(struct ctl_req *r)
{
    static const char *const known[] = {"ttl", NULL};
    struct proto_error e;
    struct store_token t;
    int64_t ttl;
    memset(&t, 0, sizeof(t));
    json_t *b = ctl_body_json(r, true);
    if (!b)
        return;
    int rc = proto_check_fields(b, "", known, &e);
    if (rc == 0)
        rc = parse_ttl(b, (int64_t)3600 * 1000, &ttl, &e);
    char tok[96];
    if (rc == 0 && ctl_random_token("dkj_", tok, sizeof(tok)) < 0)
        rc = proto_errorf(&e, 500, NULL, NULL, "no randomness");
    if (rc < 0) {
        ctl_reply_error(r->c, r->req, &e);
        json_decref(b);
        return;
    }
    store_token_hash(tok, t.hash);
    t.kind = STORE_TOKEN_JOIN;
    str_copy(t.user, sizeof(t.user), r->id.user);
    str_copy(t.role, sizeof(t.role), "join");
    t.created_ms = clock_now_ms();
    t.expires_ms = t.created_ms + ttl;
    if (store_token_put(r->c->store, &t) < 0) {
        store_fail(r);
    } else {
        char id[STORE_TOKEN_ID_LEN + 1];
        memcpy(id, t.hash, STORE_TOKEN_ID_LEN);
        id[STORE_TOKEN_ID_LEN] = '\0';
        json_t *after = json_pack("{s:I,s:s}", "expires_ms", (json_int_t)t.expires_ms, "id", id);
        int rc2 = ctl_audit(r->c, r->id.user, "join_token.issue", "join-token", NULL, after, NULL);
        json_decref(after);
        if (rc2 < 0)
            store_fail(r);
        else {
            json_t *rep =
                json_pack("{s:s,s:I}", "join_token", tok, "expires_ms", (json_int_t)t.expires_ms);
            /* the agent pins the controller's key with it (docs/security.md) */
            if (r->c->tls_fingerprint[0])
                json_object_set_new(rep, "controller_fingerprint",
                                    json_string(r->c->tls_fingerprint));
            ctl_reply_json(r->c, r->req, 201, rep);
        }
    }
    json_decref(b);
}

/* ------------------------------------------------------------------------------------ */
/* Token list, revoke, admin rotation                                                    */

static const char *const token_kind_text[] = {
    [STORE_TOKEN_USER] = "user", [STORE_TOKEN_NODE] = "node", [STORE_TOKEN_JOIN] = "join"};

struct token_list_ctx {
    json_t *arr;
    int64_t now;
    bool all;
};

static int token_list_cb(void *arg, const struct store_token *t)
{
    struct token_list_ctx *tc = arg;
    if (!tc->all && t->kind != STORE_TOKEN_USER)
        return 0;
    const char *state = t->revoked_ms                              ? "revoked"
                        : t->expires_ms && t->expires_ms < tc->now ? "expired"
                                                                   : "active";
    json_array_append_new(
        tc->arr, json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:s,s:s%}", "id", t->id, "kind",
                           token_kind_text[t->kind], "user", t->user, "role", t->role, "created_ms",
                           (json_int_t)t->created_ms, "expires_ms", (json_int_t)t->expires_ms,
                           "revoked_ms", (json_int_t)t->revoked_ms, "state", state, "parent",
                           t->parent, t->parent[0] ? (size_t)STORE_TOKEN_ID_LEN : (size_t)0));
    return 0;
}

/* GET /v1/tokens: the caller's own tokens; every token (node and join ones too) for an
 * admin, or those of ?user= . Never the token text: docketd has only hashes. */
void h_tokens_list(struct ctl_req *r)
{
    const char *user = ctl_query(r, "user");
    bool admin = r->id.role == CTL_ROLE_ADMIN;
    if (user && !admin && strcmp(user, r->id.user) != 0) {
        ctl_reply_errorf(r->c, r->req, 403, "user", "only admins may list the tokens of '%.64s'",
                         user);
        return;
    }
    struct token_list_ctx tc = {json_array(), clock_now_ms(), admin};
    if (store_token_list(r->c->store, admin ? user : r->id.user, NULL, token_list_cb, &tc) < 0) {
        json_decref(tc.arr);
        store_fail(r);
        return;
    }
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "tokens", tc.arr));
}

static int token_find_cb(void *arg, const struct store_token *t)
{
    *(struct store_token *)arg = *t;
    return 1;
}

/* DELETE /v1/tokens/ID: revoke (the route's check found it and allowed the caller). */
void h_token_revoke(struct ctl_req *r)
{
    struct store_token t;
    memset(&t, 0, sizeof(t));
    if (store_token_list(r->c->store, NULL, r->arg[0], token_find_cb, &t) <= 0) {
        ctl_reply_errorf(r->c, r->req, 404, NULL, "no such token '%.32s'", r->arg[0]);
        return;
    }
    if (t.revoked_ms) {
        ctl_reply_errorf(r->c, r->req, 409, NULL, "token %s is already revoked", t.id);
        return;
    }
    int64_t now = clock_now_ms();
    json_t *after = json_pack("{s:s,s:s,s:s,s:I}", "id", t.id, "kind", token_kind_text[t.kind],
                              "user", t.user, "revoked_ms", (json_int_t)now);
    int derived = store_token_revoke(r->c->store, t.hash, now), rc = derived < 0 ? derived : 0;
    /* the tokens derived from it die in the same transaction, and the trail says how many */
    json_object_set_new(after, "derived_revoked", json_integer(derived < 0 ? 0 : derived));
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, "token.revoke", t.user, NULL, after, NULL);
    json_decref(after);
    if (rc < 0) {
        store_fail(r);
        return;
    }
    ctl_reply_json(r->c, r->req, 200,
                   json_pack("{s:s,s:s,s:I,s:i}", "id", t.id, "user", t.user, "revoked_ms",
                             (json_int_t)now, "derived_revoked", derived));
}

int ctl_admin_token_write(struct ctl *c, const char *tok)
{
    char path[CTL_PATH_MAX + 32], tmp[CTL_PATH_MAX + 48];
    snprintf(path, sizeof(path), "%s/admin.token", c->cfg.state_dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    size_t n = strlen(tok);
    ssize_t w = write(fd, tok, n);
    ssize_t w2 = write(fd, "\n", 1);
    int rc = w == (ssize_t)n && w2 == 1 && fsync(fd) == 0 ? 0 : -EIO;
    if (close(fd) < 0 && rc == 0)
        rc = -EIO;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0)
        unlink(tmp);
    return rc;
}

struct revoke_ctx {
    struct ctl *c;
    int64_t now;
    int n;
    int rc;
};

static int revoke_admin_cb(void *arg, const struct store_token *t)
{
    struct revoke_ctx *rv = arg;
    if (t->kind != STORE_TOKEN_USER || strcmp(t->role, "admin") != 0 || t->revoked_ms)
        return 0;
    int derived = store_token_revoke(rv->c->store, t->hash, rv->now);
    rv->rc = derived == -ENOENT ? 0 : derived < 0 ? derived : 0; /* revoked with its parent */
    rv->n += derived < 0 ? 0 : 1 + derived;
    return rv->rc < 0 ? rv->rc : 0;
}

/* POST /v1/tokens/rotate-admin: a new token for the built-in "admin" account, printed
 * once and written to STATE_DIR/admin.token; every older admin token of that account
 * stops working in the same transaction. */
void h_token_rotate_admin(struct ctl_req *r)
{
    static const char *const known[] = {"ttl", NULL};
    struct proto_error e;
    struct store_token t;
    int64_t ttl;
    memset(&t, 0, sizeof(t));
    json_t *b = ctl_body_json(r, true);
    if (!b)
        return;
    int rc = proto_check_fields(b, "", known, &e);
    if (rc == 0)
        rc = parse_ttl(b, r->c->cfg.token_ttl_ms, &ttl, &e);
    json_decref(b);
    char tok[96];
    if (rc == 0 && ctl_random_token("dkt_", tok, sizeof(tok)) < 0)
        rc = proto_errorf(&e, 500, NULL, NULL, "no randomness");
    if (rc < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return;
    }
    struct revoke_ctx rv = {r->c, clock_now_ms(), 0, 0};
    rc = store_token_list(r->c->store, "admin", NULL, revoke_admin_cb, &rv);
    store_token_hash(tok, t.hash);
    memcpy(t.id, t.hash, STORE_TOKEN_ID_LEN);
    t.kind = STORE_TOKEN_USER;
    str_copy(t.user, sizeof(t.user), "admin");
    str_copy(t.role, sizeof(t.role), "admin");
    t.created_ms = rv.now;
    t.expires_ms = rv.now + ttl;
    json_t *after = json_pack("{s:s,s:I,s:i}", "id", t.id, "expires_ms", (json_int_t)t.expires_ms,
                              "revoked", rv.n);
    if (rc == 0 && rv.rc == 0)
        rc = store_token_put(r->c->store, &t);
    if (rc == 0 && rv.rc == 0)
        rc = ctl_audit(r->c, r->id.user, "token.rotate_admin", "admin", NULL, after, NULL);
    json_decref(after);
    if (rc < 0 || rv.rc < 0) {
        store_fail(r);
        return;
    }
    /* the file follows the database; if it cannot be written the rotation is undone */
    if ((rc = ctl_admin_token_write(r->c, tok)) < 0) {
        ctl_reply_errorf(r->c, r->req, 500, NULL, "cannot write admin.token: %s", strerror(-rc));
        return;
    }
    ctl_reply_json(r->c, r->req, 201,
                   json_pack("{s:s,s:s,s:s,s:I,s:i}", "token", tok, "id", t.id, "user", "admin",
                             "expires_ms", (json_int_t)t.expires_ms, "revoked", rv.n));
}

/* ------------------------------------------------------------------------------------ */
/* Audit verification                                                                    */

/* A verification in flight: the chain is walked CTL_VERIFY_SLICE_ROWS rows a loop turn
 * (stream.c), so a long trail never holds the loop; the answer is sent at the end. */
struct verify_walk {
    struct ctl *c;
    struct store_audit_check v;
    char want[65];
    const char *anchor_from; /* "request" or "file" */
};

/* The anchor a verify checks (docs/security.md "Audit"): the request's (head_id and
 * chain_from with head), else docketd's own anchor file. 0, or -EINVAL after replying. */
static int verify_anchor(struct ctl_req *r, struct verify_walk *w)
{
    const char *id = ctl_query(r, "head_id"), *from = ctl_query(r, "chain_from");
    int64_t n, f;
    if (id || from) {
        if (!w->want[0] || !id || !from || parse_int64(id, 1, INT64_MAX, &n) < 0 ||
            parse_int64(from, 1, n, &f) < 0) {
            ctl_reply_errorf(r->c, r->req, 400, "head_id",
                             "an anchor is head, head_id and chain_from (1 .. head_id) together");
            return -EINVAL;
        }
        w->v.anchor_id = n;
        w->v.anchor_from = f;
        str_copy(w->v.anchor_hash, sizeof(w->v.anchor_hash), w->want);
        w->anchor_from = "request";
        return 0;
    }
    struct audit_anchor a;
    char why[CTL_PATH_MAX + 160];
    int rc = ctl_anchor_read(r->c, &a, why, sizeof(why));
    if (rc < 0) {
        ctl_reply_errorf(r->c, r->req, 500, "audit_anchor", "%s", why);
        return -EINVAL;
    }
    if (rc == 1) {
        w->v.anchor_id = a.id;
        w->v.anchor_from = a.chain_from;
        str_copy(w->v.anchor_hash, sizeof(w->v.anchor_hash), a.hash);
        w->anchor_from = "file";
    }
    return 0;
}

static int verify_fill(void *arg, struct evbuffer *out, bool *done)
{
    struct verify_walk *w = arg;
    const char *want = w->want[0] ? w->want : NULL;
    int rc = store_audit_verify_step(w->c->store, want, &w->v, CTL_VERIFY_SLICE_ROWS);
    if (rc != 0)
        return rc < 0 ? -EIO : 0; /* a store error cuts the reply short (logged) */
    const struct store_audit_check *v = &w->v;
    bool ok = v->first_bad == 0 && (!want || v->head_found);
    json_t *o = json_pack("{s:b,s:I,s:I,s:s}", "ok", ok, "checked", (json_int_t)v->checked,
                          "unchained", (json_int_t)v->unchained, "head", v->head);
    if (want)
        json_object_set_new(o, "head_found", json_boolean(v->head_found));
    if (v->anchor_id)
        json_object_set_new(o, "anchor",
                            json_pack("{s:I,s:s,s:I,s:s}", "id", (json_int_t)v->anchor_id, "hash",
                                      v->anchor_hash, "chain_from", (json_int_t)v->anchor_from,
                                      "from", w->anchor_from));
    if (v->first_bad)
        json_object_set_new(o, "first_bad",
                            json_pack("{s:I,s:s}", "id", (json_int_t)v->first_bad, "why", v->why));
    else
        json_object_set_new(o, "first_bad", json_null());
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!text)
        return -ENOMEM;
    evbuffer_add(out, text, strlen(text));
    free(text);
    *done = true;
    return 0;
}

/* GET /v1/audit/verify[?head=HEX]: recompute the chain; with head, a head recorded
 * earlier must still be in it (what was cut off the end is otherwise not seen). */
void h_audit_verify(struct ctl_req *r)
{
    const char *want = ctl_query(r, "head");
    if (want && (strlen(want) != 64 || strspn(want, "0123456789abcdef") != 64)) {
        ctl_reply_errorf(r->c, r->req, 400, "head", "head must be 64 lowercase hex digits");
        return;
    }
    struct verify_walk *w = xnonnull(calloc(1, sizeof(*w)), "audit verify");
    w->c = r->c;
    str_copy(w->want, sizeof(w->want), want ? want : "");
    store_audit_verify_begin(&w->v);
    if (verify_anchor(r, w) < 0) {
        free(w);
        return;
    }
    ctl_stream_start(r->c, r->req, "application/json", verify_fill, free, w);
}

/* ------------------------------------------------------------------------------------ */
/* Project membership                                                                    */

static int members_cb(void *arg, const char *project, const char *user, const char *role)
{
    (void)project;
    json_array_append_new(arg, json_pack("{s:s,s:s}", "user", user, "role", role));
    return 0;
}

void h_members_list(struct ctl_req *r)
{
    struct sched_project_view v;
    if (project_arg(r, &v) < 0)
        return;
    json_t *arr = json_array();
    if (store_member_list(r->c->store, v.spec.name, NULL, members_cb, arr) < 0) {
        json_decref(arr);
        store_fail(r);
        return;
    }
    ctl_reply_json(r->c, r->req, 200,
                   json_pack("{s:s,s:o}", "project", v.spec.name, "members", arr));
}

/* The first project other than `here` that `user` is a member of, into arg ("" none). */
static int elsewhere_cb(void *arg, const char *project, const char *user, const char *role)
{
    (void)user;
    (void)role;
    char *out = arg;
    if (!out[0] && strcmp(project, out + 64) != 0)
        str_copy(out, 64, project);
    return 0;
}

/* May the caller add `user` to `project` (authz.c: a lead, only a user of no other
 * project)? 0, or -EPERM after answering. */
static int member_add_allowed(struct ctl_req *r, const char *project, const char *user,
                              bool member_here)
{
    char other[128] = ""; /* [0..63] the answer, [64..] the project asked about */
    struct proto_error e;
    str_copy(other + 64, 64, project);
    if (store_member_list(r->c->store, NULL, user, elsewhere_cb, other) < 0) {
        store_fail(r);
        return -EIO;
    }
    if (ctl_authz_member_add(&r->id, &r->tgt, user, member_here, other[0] ? other : NULL, &e) == 0)
        return 0;
    ctl_reply_error(r->c, r->req, &e);
    return -EPERM;
}

void h_member_add(struct ctl_req *r)
{
    static const char *const known[] = {"user", "role", NULL};
    struct sched_project_view v;
    struct proto_error e;
    char user[64], before[16] = "";
    enum ctl_prole pr;
    if (project_arg(r, &v) < 0)
        return;
    json_t *b = ctl_body_json(r, false);
    if (!b)
        return;
    json_t *role = json_object_get(b, "role");
    int rc = proto_check_fields(b, "", known, &e);
    if (rc == 0)
        rc = proto_get_name(json_object_get(b, "user"), "user", user, &e);
    if (rc == 0)
        rc = ctl_authz_member_role(role ? json_string_value(role) : "member", &pr, &e);
    if (rc < 0) {
        ctl_reply_error(r->c, r->req, &e);
        json_decref(b);
        return;
    }
    const char *rs = pr == CTL_PROLE_LEAD ? "lead" : "member";
    int got = store_member_get(r->c->store, v.spec.name, user, before, sizeof(before));
    if (got != 0 && got != -ENOENT) {
        json_decref(b);
        store_fail(r);
        return;
    }
    if (member_add_allowed(r, v.spec.name, user, got == 0) < 0) {
        json_decref(b);
        return;
    }
    json_t *bj = got == 0 ? json_pack("{s:s,s:s}", "user", user, "role", before) : NULL;
    json_t *aj = json_pack("{s:s,s:s}", "user", user, "role", rs);
    rc = got < 0 && got != -ENOENT ? got : store_member_put(r->c->store, v.spec.name, user, rs);
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, "member.add", v.spec.name, bj, aj, NULL);
    json_decref(bj);
    json_decref(aj);
    json_decref(b);
    if (rc < 0) {
        store_fail(r);
        return;
    }
    ctl_reply_json(r->c, r->req, got == 0 ? 200 : 201,
                   json_pack("{s:s,s:s,s:s}", "project", v.spec.name, "user", user, "role", rs));
}

void h_member_remove(struct ctl_req *r)
{
    struct sched_project_view v;
    char role[16];
    if (project_arg(r, &v) < 0)
        return;
    int rc = store_member_get(r->c->store, v.spec.name, r->arg[1], role, sizeof(role));
    if (rc == -ENOENT) {
        ctl_reply_errorf(r->c, r->req, 404, NULL, "'%.64s' is not a member of project '%s'",
                         r->arg[1], v.spec.name);
        return;
    }
    json_t *bj = json_pack("{s:s,s:s}", "user", r->arg[1], "role", role);
    if (rc == 0)
        rc = store_member_delete(r->c->store, v.spec.name, r->arg[1]);
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, "member.remove", v.spec.name, bj, NULL, NULL);
    json_decref(bj);
    if (rc < 0) {
        store_fail(r);
        return;
    }
    ctl_reply_json(
        r->c, r->req, 200,
        json_pack("{s:s,s:s,s:s}", "project", v.spec.name, "user", r->arg[1], "removed", role));
}
