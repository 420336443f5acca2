/*
 * warm.c - warm environments in docketd (warm.h): the requests per node and template
 * version, the orders in the heartbeat replies, the states the nodes report, and the
 * versions ready on each node as the scheduler's core holds them (sched_node_set_warm).
 */
#include "controller/warm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/http.h"
#include "controller/loop.h"
#include "controller/secrets.h"
#include "controller/site.h"
#include "protocol/templates.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

enum {
    WARM_REQUESTS_MAX = 16384, /* node x template requests held at once */
    WARM_RESEND_MS = 30000,    /* an order the node did not report is handed again after */
};
#define WARM_GEN_MAX ((int64_t)1 << 52) /* request numbers: far from any overflow */

struct wreq {
    char node[64];
    char tmpl[PROTO_TEMPLATE_REF_MAX];
    int64_t gen;
    int64_t sent_ms; /* monotonic; 0 = not handed yet */
};

struct wseen {
    char node[64];
    struct warm_state st;
};

struct ctl_warm {
    struct wreq *req;
    size_t nreq;
    struct wseen *seen;
    size_t nseen;
    int64_t gen;
};

static struct ctl_warm *warm_of(struct ctl *c)
{
    if (!c->warm)
        c->warm = xcalloc(1, sizeof(*c->warm));
    return c->warm;
}

void ctl_warm_free(struct ctl *c)
{
    if (!c->warm)
        return;
    free(c->warm->req);
    free(c->warm->seen);
    free(c->warm);
    c->warm = NULL;
}

static const struct wseen *seen_find(const struct ctl_warm *w, const char *node, const char *tmpl)
{
    for (size_t i = 0; i < w->nseen; i++)
        if (strcmp(w->seen[i].node, node) == 0 && strcmp(w->seen[i].st.tmpl, tmpl) == 0)
            return &w->seen[i];
    return NULL;
}

static struct wreq *req_find(struct ctl_warm *w, const char *node, const char *tmpl)
{
    for (size_t i = 0; i < w->nreq; i++)
        if (strcmp(w->req[i].node, node) == 0 && strcmp(w->req[i].tmpl, tmpl) == 0)
            return &w->req[i];
    return NULL;
}

/* A new request (or a newer one for the same node and version): -ENOSPC when full. */
static int request(struct ctl_warm *w, const char *node, const char *tmpl)
{
    struct wreq *q = req_find(w, node, tmpl);
    if (!q) {
        if (w->nreq >= WARM_REQUESTS_MAX || w->gen >= WARM_GEN_MAX)
            return -ENOSPC;
        w->req = xrealloc(w->req, (w->nreq + 1) * sizeof(*w->req));
        q = &w->req[w->nreq++];
        memset(q, 0, sizeof(*q));
        str_copy(q->node, sizeof(q->node), node);
        str_copy(q->tmpl, sizeof(q->tmpl), tmpl);
    }
    q->gen = ++w->gen;
    q->sent_ms = 0;
    return 0;
}

/* Whether NAME@VERSION is in the policy now. */
static bool version_exists(struct ctl *c, const char *ref)
{
    char name[PROTO_NAME_MAX];
    int version;
    struct proto_error e;
    return c->templates && proto_template_ref_parse(ref, "template", name, &version, &e) == 0 &&
           proto_template_find(c->templates, name, version) != NULL;
}

/* The core's warm set of node n becomes keys[0..nk) (template versions ready there) when
 * it differs. A refusal is logged: placement then only loses a preference. */
static void core_warm_set(struct ctl *c, const struct ctl_node *n, const char *const *keys, int nk)
{
    int idx = sched_node_find(c->sched, n->name);
    struct sched_node_view v;
    if (idx < 0 || sched_node_get(c->sched, (uint32_t)idx, &v) < 0)
        return;
    bool same = v.nwarm == nk;
    for (int i = 0; same && i < nk; i++)
        same = sched_node_warm(c->sched, (uint32_t)idx, keys[i]);
    struct sched_error se;
    if (!same && sched_node_set_warm(c->sched, n->name, keys, nk, &se) < 0)
        log_warn("template_warm_core", "node=%s error=\"%s\"", n->name, se.message);
}

/* The versions a node reports ready, of those the policy has (a node's word cannot fill
 * the core's tables with names no job could ask for), into the core. */
static void core_warm_report(struct ctl *c, const struct ctl_node *n, const struct warm_state *st,
                             size_t ns)
{
    const char *keys[WARM_MAX];
    int nk = 0;
    for (size_t i = 0; i < ns && nk < WARM_MAX; i++)
        if (st[i].state == WARM_READY && version_exists(c, st[i].tmpl))
            keys[nk++] = st[i].tmpl;
    core_warm_set(c, n, keys, nk);
}

void ctl_warm_node_lost(struct ctl *c, struct ctl_node *n)
{
    core_warm_set(c, n, NULL, 0);
}

void ctl_warm_report(struct ctl *c, struct ctl_node *n, const struct warm_state *st, size_t ns)
{
    struct ctl_warm *w = warm_of(c);
    size_t k = 0;
    for (size_t i = 0; i < ns; i++) { /* state changes are logged */
        const struct wseen *old = seen_find(w, n->name, st[i].tmpl);
        if (!old || old->st.state != st[i].state)
            log_info("template_warm_state", "node=%s template=%s state=%s", n->name, st[i].tmpl,
                     warm_state_name(st[i].state));
        /* a request this docketd never made (it restarted since) is taken back from the
         * node's word, so a node that forgets it later (its agent restarted) hears it
         * again; request numbers go on above every one a node holds. Only for a version
         * the policy has, and numbers a node could have had: a node's word cannot fill
         * the table or run the numbers out. */
        if (st[i].gen > WARM_GEN_MAX || !version_exists(c, st[i].tmpl))
            continue;
        if (w->gen < st[i].gen)
            w->gen = st[i].gen;
        if (!req_find(w, n->name, st[i].tmpl) && w->nreq < WARM_REQUESTS_MAX) {
            w->req = xrealloc(w->req, (w->nreq + 1) * sizeof(*w->req));
            struct wreq *q = &w->req[w->nreq++];
            memset(q, 0, sizeof(*q));
            str_copy(q->node, sizeof(q->node), n->name);
            str_copy(q->tmpl, sizeof(q->tmpl), st[i].tmpl);
            q->gen = st[i].gen;
            q->sent_ms = clock_mono_ms();
        }
    }
    for (size_t i = 0; i < w->nseen; i++) /* the node's list replaces what it said before */
        if (strcmp(w->seen[i].node, n->name) != 0)
            w->seen[k++] = w->seen[i];
    w->seen = xrealloc(w->seen, (k + ns + 1) * sizeof(*w->seen));
    for (size_t i = 0; i < ns; i++) {
        str_copy(w->seen[k].node, sizeof(w->seen[k].node), n->name);
        w->seen[k++].st = st[i];
    }
    w->nseen = k;
    core_warm_report(c, n, st, ns);
}

/* The node's labels, the policy's for it merged in: a new object. */
static json_t *node_labels(struct ctl *c, const struct ctl_node *n)
{
    json_t *labels = n->rec.labels ? json_loads(n->rec.labels, 0, NULL) : NULL;
    if (!json_is_object(labels)) {
        json_decref(labels);
        labels = json_object();
    }
    ctl_site_node_labels_merge(c, n->name, labels);
    return labels;
}

/* The templates whose latest version asks to be warm on nodes like n: requested. */
static void keep_warm(struct ctl *c, struct ctl_warm *w, struct ctl_node *n)
{
    const struct proto_templates *ts = c->templates;
    json_t *labels = NULL;
    for (size_t i = 0; ts && i < ts->n; i++) {
        const char *sel = json_string_value(json_object_get(ts->t[i].doc, "warm_on"));
        if (!sel || proto_template_find(ts, ts->t[i].name, 0) != &ts->t[i])
            continue;
        char ref[PROTO_TEMPLATE_REF_MAX];
        snprintf(ref, sizeof ref, "%s@%d", ts->t[i].name, ts->t[i].version);
        if (req_find(w, n->name, ref))
            continue; /* asked once: an eviction is reported, not undone behind the cache */
        if (!labels)
            labels = node_labels(c, n);
        if (warm_selector_match(sel, n->name, labels) && request(w, n->name, ref) == 0)
            log_info("template_keep_warm", "node=%s template=%s", n->name, ref);
    }
    json_decref(labels);
}

/* A project's template's registry credentials (the value of its project's secret that
 * registry_auth names), as a JSON string, for the order only; NULL when it names none, or
 * is not a project's (a site's or group's template has no project to take a secret from:
 * the node's own skopeo configuration serves it), or the secret cannot be opened (logged:
 * the node's copy then fails with the registry's word). */
static json_t *order_auth(struct ctl *c, const struct proto_template *t)
{
    const char *owner = json_string_value(json_object_get(t->doc, "owner"));
    const json_t *name = json_object_get(t->doc, "registry_auth");
    if (!json_is_string(name) || !str_has_prefix(owner, "project:"))
        return NULL;
    char why[256];
    json_t *names = json_pack("[O]", name);
    json_t *env = ctl_secret_env(c, owner + 8, names, why, sizeof why);
    json_decref(names);
    json_t *v = env ? json_incref(json_object_get(env, json_string_value(name))) : NULL;
    json_decref(env);
    if (!env)
        log_warn("template_warm_auth", "template=%s error=\"%s\"", t->name, why);
    return v;
}

/* The order for request q, NULL when its template version is gone from the policy. */
static json_t *order_json(struct ctl *c, const struct wreq *q)
{
    char name[PROTO_NAME_MAX];
    int version;
    struct proto_error e;
    if (!c->templates || proto_template_ref_parse(q->tmpl, "template", name, &version, &e) < 0)
        return NULL;
    const struct proto_template *t = proto_template_find(c->templates, name, version);
    if (!t)
        return NULL;
    struct warm_order o = {.gen = q->gen};
    str_copy(o.tmpl, sizeof o.tmpl, q->tmpl);
    const char *image = json_string_value(json_object_get(t->doc, "image"));
    if (image)
        str_copy(o.image, sizeof o.image, image);
    o.prepare = (char *)json_string_value(json_object_get(t->doc, "prepare"));
    json_t *auth = image && str_has_prefix(image, "docker://") ? order_auth(c, t) : NULL;
    o.auth = (char *)json_string_value(auth);
    json_t *order = warm_order_json(&o);
    json_decref(auth);
    return order;
}

void ctl_warm_reply(struct ctl *c, struct ctl_node *n, json_t *reply)
{
    struct ctl_warm *w = warm_of(c);
    int64_t now = clock_mono_ms();
    keep_warm(c, w, n);
    json_t *orders = json_array();
    size_t k = 0;
    for (size_t i = 0; i < w->nreq; i++) {
        struct wreq *q = &w->req[i];
        const struct wseen *s = seen_find(w, q->node, q->tmpl);
        bool due = strcmp(q->node, n->name) == 0 && !(s && s->st.gen >= q->gen) &&
                   !(q->sent_ms && now - q->sent_ms < WARM_RESEND_MS) &&
                   json_array_size(orders) < WARM_MAX;
        json_t *o = due ? order_json(c, q) : NULL;
        if (due && !o)
            continue; /* its version left the policy: the request goes with it */
        if (o) {
            json_array_append_new(orders, o);
            q->sent_ms = now;
        }
        w->req[k++] = *q;
    }
    w->nreq = k;
    if (json_array_size(orders) > 0)
        json_object_set_new(reply, "warm", orders);
    else
        json_decref(orders);
}

json_t *ctl_warm_json(struct ctl *c, const char *name)
{
    struct ctl_warm *w = warm_of(c);
    json_t *list = json_array();
    size_t len = strlen(name);
    for (size_t i = 0; i < w->nseen; i++) {
        const struct warm_state *st = &w->seen[i].st;
        if (strncmp(st->tmpl, name, len) != 0 || st->tmpl[len] != '@')
            continue;
        json_t *o = warm_state_json(st);
        json_object_del(o, "gen");
        json_object_set_new(o, "node", json_string(w->seen[i].node));
        json_array_append_new(list, o);
    }
    for (size_t i = 0; i < w->nreq; i++) { /* asked, not reported by the node yet */
        const struct wreq *q = &w->req[i];
        if (strncmp(q->tmpl, name, len) != 0 || q->tmpl[len] != '@' ||
            seen_find(w, q->node, q->tmpl))
            continue;
        json_array_append_new(list, json_pack("{s:s,s:s,s:s}", "node", q->node, "template", q->tmpl,
                                              "state", "requested"));
    }
    return list;
}

/* ------------------------------------------------------------------------------------ */
/* POST /v1/templates/NAME/warm                                                          */

/* Who may: admins; a lead of the project that owns the template. A site's or a group's
 * template fills every node's cache that matches, which is the site's to decide. */
static int authorize(struct ctl_req *r, const struct proto_template *t)
{
    const char *owner = json_string_value(json_object_get(t->doc, "owner"));
    return ctl_req_authorize(r, str_has_prefix(owner, "project:") ? owner + 8 : NULL, NULL);
}

/* The selector given: a string of at most 1000 bytes, or absent (every node). */
static int selector_of(const json_t *body, const char **out, struct proto_error *e)
{
    static const char *const known[] = {"nodes", NULL};
    const json_t *v = json_object_get(body, "nodes");
    *out = NULL;
    int rc = proto_check_fields(body, "", known, e);
    if (rc < 0 || !v || json_is_null(v))
        return rc;
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 1000)
        return proto_errorf(e, 400, NULL, "nodes",
                            "nodes must be a selector: NODE,..., KEY=VALUE,... (at most 1000 "
                            "bytes)");
    *out = json_string_value(v);
    return 0;
}

void h_template_warm(struct ctl_req *r)
{
    struct proto_error e;
    char name[PROTO_NAME_MAX];
    int version;
    json_t *body = ctl_body_json(r, true);
    if (!body)
        return;
    const struct proto_template *t = NULL;
    const char *sel = NULL;
    /* templates are every user's to read: what is wrong with the request is said to anyone */
    if (proto_template_ref_parse(r->arg[0], "name", name, &version, &e) < 0 ||
        selector_of(body, &sel, &e) < 0) {
        r->authorized = true;
        ctl_reply_error(r->c, r->req, &e);
        json_decref(body);
        return;
    }
    if (r->c->templates)
        t = proto_template_find(r->c->templates, name, version);
    if (!t) {
        r->authorized = true;
        ctl_reply_errorf(r->c, r->req, 404, NULL, "no such template '%.80s'", r->arg[0]);
        json_decref(body);
        return;
    }
    if (authorize(r, t) < 0) {
        json_decref(body);
        return;
    }
    if (!json_is_string(json_object_get(t->doc, "image")) &&
        !json_is_string(json_object_get(t->doc, "prepare"))) {
        ctl_reply_errorf(r->c, r->req, 400, NULL,
                         "template '%s' version %d has no image and no prepare script: there "
                         "is nothing to warm",
                         t->name, t->version);
        json_decref(body);
        return;
    }
    char ref[PROTO_TEMPLATE_REF_MAX];
    snprintf(ref, sizeof ref, "%s@%d", t->name, t->version);
    struct ctl_warm *w = warm_of(r->c);
    json_t *nodes = json_array();
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < r->c->nnodes; i++) {
        struct ctl_node *n = r->c->nodes[i];
        if (!n)
            continue;
        json_t *labels = node_labels(r->c, n);
        if (warm_selector_match(sel, n->name, labels) && (rc = request(w, n->name, ref)) == 0)
            json_array_append_new(nodes, json_string(n->name));
        json_decref(labels);
    }
    if (rc < 0) {
        json_decref(body);
        json_decref(nodes);
        ctl_reply_errorf(r->c, r->req, 503, NULL, "too many warm requests held (%d)",
                         WARM_REQUESTS_MAX);
        return;
    }
    char target[PROTO_NAME_MAX + 16];
    snprintf(target, sizeof target, "template:%s", t->name);
    json_t *after = json_pack("{s:s,s:s?,s:O}", "template", ref, "selector", sel, "nodes", nodes);
    json_decref(body); /* sel was in it */
    if (ctl_audit(r->c, r->id.user, "template.warm", target, NULL, after, NULL) < 0) {
        json_decref(after);
        json_decref(nodes);
        ctl_reply_errorf(r->c, r->req, 500, NULL, "cannot record the audit entry");
        return;
    }
    json_decref(after);
    for (size_t i = 0; i < json_array_size(nodes); i++) { /* parked heartbeats hear it now */
        struct ctl_node *n = ctl_node_by_name(r->c, json_string_value(json_array_get(nodes, i)));
        if (n)
            ctl_node_wake(r->c, n);
    }
    log_info("template_warm", "template=%s nodes=%zu user=%s", ref, json_array_size(nodes),
             r->id.user);
    ctl_reply_json(r->c, r->req, 202, json_pack("{s:s,s:o}", "template", ref, "nodes", nodes));
}
