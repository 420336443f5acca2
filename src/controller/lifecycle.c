/*
 * lifecycle.c - storage lifecycle runs in docketd (lifecycle.h, docs/storage.md
 * "Lifecycle rules").
 *
 * State: the unfinished runs (each as stored, the run as the agent gets it, and whether
 * its node's last heartbeat listed it), the next run id, and per rule the start of its
 * last real run (for `every`). Every change is written to the store first. A run is
 * handed out in the heartbeat reply until its agent lists it, and finished when the agent
 * reports it done, or failed when its node goes away.
 */
#include "controller/lifecycle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/loop.h"
#include "controller/storage.h"
#include "protocol/lifecycle.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

enum { LC_NODE_RUNS_MAX = 16, LC_HISTORY = 50 };

struct lc_run {
    struct store_lc_run rec; /* rec.result unused here (NULL) */
    struct lifecycle_run run;
    bool held; /* the node's last heartbeat listed it */
};

struct ctl_lifecycle {
    struct lc_run *runs;
    size_t n;
    int64_t next_id;
    json_t *last; /* rule -> created_ms of its last real run */
    bool loaded;
};

static int load_run(void *arg, const struct store_lc_run *r)
{
    struct ctl_lifecycle *l = arg;
    if (r->id >= l->next_id)
        l->next_id = r->id + 1;
    if (!r->dry_run && !json_object_get(l->last, r->rule))
        json_object_set_new(l->last, r->rule, json_integer(r->created_ms));
    return 0;
}

/* An unfinished run read back at start: its agent still holds it (it will list it) or
 * gets it again; the run the agent needs is rebuilt from the policy. */
static void restore_run(struct ctl *c, struct ctl_lifecycle *l, const struct store_lc_run *r);

static int load_unfinished(void *arg, const struct store_lc_run *r)
{
    struct ctl *c = arg;
    restore_run(c, c->lifecycle, r);
    return 0;
}

static struct ctl_lifecycle *lc_of(struct ctl *c)
{
    if (!c->lifecycle) {
        c->lifecycle = xnonnull(calloc(1, sizeof(*c->lifecycle)), "lifecycle");
        c->lifecycle->last = json_object();
        c->lifecycle->next_id = 1;
    }
    struct ctl_lifecycle *l = c->lifecycle;
    if (!l->loaded && c->store) {
        if (store_lc_run_list(c->store, 0, false, load_run, l) < 0 ||
            store_lc_run_list(c->store, 0, true, load_unfinished, c) < 0)
            log_error("store_failed", "what=lifecycle_runs error=\"%s\"", store_errmsg(c->store));
        l->loaded = true;
    }
    return l;
}

void ctl_lifecycle_free(struct ctl *c)
{
    struct ctl_lifecycle *l = c->lifecycle;
    if (!l)
        return;
    free(l->runs);
    json_decref(l->last);
    free(l);
    c->lifecycle = NULL;
}

/* ---- runs ------------------------------------------------------------------------------ */

/* The run as its agent gets it, from the rule and the pools' paths; false when the
 * policy no longer has them. */
static bool run_of_rule(struct ctl *c, const struct lifecycle_rule *rule, const char *project,
                        struct lifecycle_run *out)
{
    const struct storage_policy *p = ctl_storage_policy(c);
    const struct storage_pool *from = storage_pool_find(p, rule->pool);
    const struct storage_pool *to = rule->to[0] ? storage_pool_find(p, rule->to) : NULL;
    if (!from || (rule->action == LC_MOVE && !to))
        return false;
    memset(out, 0, sizeof(*out));
    str_copy(out->rule, sizeof(out->rule), rule->name);
    str_copy(out->project, sizeof(out->project), project);
    out->action = rule->action;
    str_copy(out->from, sizeof(out->from), from->path);
    if (to)
        str_copy(out->to, sizeof(out->to), to->path);
    out->after_ms = rule->after_ms;
    out->rate_bytes = rule->rate_bytes;
    out->marker = rule->marker;
    str_copy(out->glob, sizeof(out->glob), rule->glob);
    return true;
}

static void restore_run(struct ctl *c, struct ctl_lifecycle *l, const struct store_lc_run *r)
{
    const struct lifecycle_rule *rule = lifecycle_rule_find(ctl_storage_policy(c), r->rule);
    struct lc_run x;
    memset(&x, 0, sizeof(x));
    x.rec = *r;
    x.rec.result = NULL;
    if (!rule || !run_of_rule(c, rule, r->project, &x.run)) {
        x.run.id = 0; /* failed at the next tick: its rule is gone */
    } else {
        x.run.id = r->id;
        x.run.dry_run = r->dry_run;
        x.run.now_ms = r->created_ms;
    }
    l->runs = xrealloc(l->runs, (l->n + 1) * sizeof(*l->runs));
    l->runs[l->n++] = x;
}

static int node_runs(const struct ctl_lifecycle *l, const char *node)
{
    int n = 0;
    for (size_t i = 0; i < l->n; i++)
        n += strcmp(l->runs[i].rec.node, node) == 0;
    return n;
}

static bool node_alive(struct ctl *c, size_t i)
{
    struct sched_node_view v;
    return c->nodes[i] && sched_node_get(c->sched, (uint32_t)i, &v) == 0 &&
           v.state != SCHED_NODE_DOWN && v.state != SCHED_NODE_UNREACHABLE;
}

/* A new run of `rule` on `project`'s area, stored and handed to `n` at its next
 * heartbeat (woken now). 0 or -errno. */
static int run_create(struct ctl *c, const struct lifecycle_rule *rule, const char *project,
                      struct ctl_node *n, bool dry_run, const char *by, json_t *created)
{
    struct ctl_lifecycle *l = c->lifecycle;
    struct lc_run x;
    memset(&x, 0, sizeof(x));
    if (!run_of_rule(c, rule, project, &x.run))
        return -ENOENT;
    int64_t now = clock_now_ms();
    x.run.id = l->next_id;
    x.run.now_ms = now;
    x.run.dry_run = dry_run;
    struct store_lc_run *r = &x.rec;
    r->id = x.run.id;
    str_copy(r->rule, sizeof(r->rule), rule->name);
    str_copy(r->project, sizeof(r->project), project);
    str_copy(r->pool, sizeof(r->pool), rule->pool);
    str_copy(r->to_pool, sizeof(r->to_pool), rule->to);
    str_copy(r->action, sizeof(r->action), lifecycle_action_name(rule->action));
    r->dry_run = dry_run;
    str_copy(r->node, sizeof(r->node), n->name);
    str_copy(r->state, sizeof(r->state), "running");
    str_copy(r->requested_by, sizeof(r->requested_by), by);
    r->created_ms = now;
    if (store_lc_run_put(c->store, r) < 0)
        return -EIO;
    l->next_id++;
    if (!dry_run)
        json_object_set_new(l->last, rule->name, json_integer(now));
    l->runs = xrealloc(l->runs, (l->n + 1) * sizeof(*l->runs));
    l->runs[l->n++] = x;
    if (created)
        json_array_append_new(created, json_integer(r->id));
    log_info("lifecycle_run_created", "id=%lld rule=%s project=%s node=%s dry_run=%s by=%s",
             (long long)r->id, r->rule, project, n->name, dry_run ? "true" : "false", by);
    ctl_node_wake(c, n);
    return 0;
}

/* {age_basis, list, unlisted, dirs_removed} of a result, as text for the store. */
static char *result_text(const struct lifecycle_result *res)
{
    json_t *j = lifecycle_result_json(res);
    json_t *keep = json_object();
    const char *keys[] = {"age_basis", "list", "unlisted", "dirs_removed"};
    for (int i = 0; i < 4; i++)
        if (json_object_get(j, keys[i]))
            json_object_set(keep, keys[i], json_object_get(j, keys[i]));
    char *text = json_dumps(keep, JSON_COMPACT);
    json_decref(keep);
    json_decref(j);
    return text;
}

/* The run ends: stored with its counts, audited when it was real, dropped from memory. */
static void run_finish(struct ctl *c, size_t i, const struct lifecycle_result *res, const char *why)
{
    struct ctl_lifecycle *l = c->lifecycle;
    struct store_lc_run r = l->runs[i].rec;
    r.finished_ms = clock_now_ms();
    if (res) {
        str_copy(r.state, sizeof(r.state), res->ok ? "done" : "failed");
        r.files = res->files;
        r.bytes = res->bytes;
        r.freed_bytes = res->freed_bytes;
        r.failed = res->failed;
        r.in_use = res->in_use;
        str_copy(r.message, sizeof(r.message), res->message);
        r.result = result_text(res);
    } else {
        str_copy(r.state, sizeof(r.state), "failed");
        str_copy(r.message, sizeof(r.message), why);
    }
    int rc = store_lc_run_put(c->store, &r);
    if (rc == 0 && !r.dry_run) {
        char target[128];
        snprintf(target, sizeof(target), "%s/%s", r.rule, r.project);
        json_t *after = json_pack("{s:I,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I}", "run",
                                  (json_int_t)r.id, "state", r.state, "action", r.action, "node",
                                  r.node, "pool", r.pool, "files", (json_int_t)r.files, "bytes",
                                  (json_int_t)r.bytes, "freed_bytes", (json_int_t)r.freed_bytes,
                                  "failed", (json_int_t)r.failed, "in_use", (json_int_t)r.in_use);
        if (r.to_pool[0])
            json_object_set_new(after, "to", json_string(r.to_pool));
        if (res && res->dirs_removed)
            json_object_set_new(after, "dirs_removed", json_integer(res->dirs_removed));
        rc = ctl_audit(c, r.requested_by, "storage.lifecycle_run", target, NULL, after,
                       r.message[0] ? r.message : NULL);
        json_decref(after);
    }
    if (rc < 0)
        log_error("store_failed", "what=lifecycle_run id=%lld error=\"%s\"", (long long)r.id,
                  store_errmsg(c->store));
    log_info("lifecycle_run_finished",
             "id=%lld rule=%s project=%s state=%s files=%lld bytes=%lld failed=%lld",
             (long long)r.id, r.rule, r.project, r.state, (long long)r.files, (long long)r.bytes,
             (long long)r.failed);
    free(r.result);
    l->runs[i] = l->runs[--l->n];
}

void ctl_lifecycle_report(struct ctl *c, const char *node, const struct lifecycle_result *res,
                          size_t n)
{
    struct ctl_lifecycle *l = lc_of(c);
    for (size_t i = 0; i < l->n;) {
        struct lc_run *x = &l->runs[i];
        const struct lifecycle_result *mine = NULL;
        if (strcmp(x->rec.node, node) != 0) {
            i++;
            continue;
        }
        for (size_t k = 0; k < n && !mine; k++)
            if (res[k].id == x->rec.id)
                mine = &res[k];
        x->held = mine != NULL;
        if (mine && mine->done) {
            run_finish(c, i, mine, NULL);
            continue;
        }
        i++;
    }
}

void ctl_lifecycle_reply(struct ctl *c, struct ctl_node *n, json_t *reply)
{
    struct ctl_lifecycle *l = lc_of(c);
    json_t *runs = NULL;
    for (size_t i = 0; i < l->n; i++) {
        const struct lc_run *x = &l->runs[i];
        if (x->held || x->run.id == 0 || strcmp(x->rec.node, n->name) != 0)
            continue;
        if (!runs)
            runs = json_array();
        json_array_append_new(runs, lifecycle_run_json(&x->run));
    }
    if (runs)
        json_object_set_new(reply, "lifecycle", runs);
}

/* ---- when rules are due ------------------------------------------------------------------ */

struct due_walk {
    struct ctl *c;
    const struct lifecycle_rule *rule;
    const char *only; /* a project, or NULL */
    bool dry_run;
    const char *by;
    json_t *created;
    int nodeless, failed;
    /* the nodes that may take the rule's runs, found once per walk, with their runs */
    struct ctl_node **nodes;
    int *busy;
    size_t nnodes;
    bool found;
};

/* The nodes alive with both of the rule's pools passing their checks, each with the runs
 * it has: found once per walk, so a rule over many areas costs nodes + areas. */
static void find_nodes(struct due_walk *w)
{
    struct ctl *c = w->c;
    w->found = true;
    w->nodes = xcalloc(c->nnodes + 1, sizeof(*w->nodes));
    w->busy = xcalloc(c->nnodes + 1, sizeof(*w->busy));
    for (size_t i = 0; i < c->nnodes; i++) {
        if (!node_alive(c, i))
            continue;
        struct ctl_node *n = c->nodes[i];
        if (!ctl_storage_node_ready(c, n->name, w->rule->pool) ||
            (w->rule->to[0] && !ctl_storage_node_ready(c, n->name, w->rule->to)))
            continue;
        w->busy[w->nnodes] = node_runs(c->lifecycle, n->name);
        w->nodes[w->nnodes++] = n;
    }
}

/* The node for a run: of those, the least busy (and never more than LC_NODE_RUNS_MAX
 * runs on one: an agent holds at most LC_MAX_RUNS); its count goes up. */
static struct ctl_node *pick_node(struct due_walk *w)
{
    if (!w->found)
        find_nodes(w);
    size_t best = w->nnodes;
    for (size_t i = 0; i < w->nnodes; i++)
        if (w->busy[i] < LC_NODE_RUNS_MAX && (best == w->nnodes || w->busy[i] < w->busy[best]))
            best = i;
    if (best == w->nnodes)
        return NULL;
    w->busy[best]++;
    return w->nodes[best];
}

static void walk_done(struct due_walk *w)
{
    free(w->nodes);
    free(w->busy);
}

/* A real run of the rule on the area under way (on `node`, or on any node when NULL). */
static bool rule_running(const struct ctl_lifecycle *l, const char *rule, const char *project,
                         const char *node)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->runs[i].rec.rule, rule) == 0 &&
            strcmp(l->runs[i].rec.project, project) == 0 && !l->runs[i].rec.dry_run &&
            (!node || strcmp(l->runs[i].rec.node, node) == 0))
            return true;
    return false;
}

/* A rule whose pool is local to each node: every node that has it holds files of its own,
 * so the area is walked on each of them. */
static bool rule_per_node(struct ctl *c, const struct lifecycle_rule *rule)
{
    const struct storage_pool *p = storage_pool_find(ctl_storage_policy(c), rule->pool);
    return p && p->local;
}

/* Each node that may take the rule's runs gets one on the area, unless it is busy with
 * LC_NODE_RUNS_MAX runs or with a real run of this rule on this area already. */
static void due_area_each_node(struct due_walk *w, const char *project)
{
    if (!w->found)
        find_nodes(w);
    if (w->nnodes == 0)
        w->nodeless++;
    for (size_t i = 0; i < w->nnodes; i++) {
        if (w->busy[i] >= LC_NODE_RUNS_MAX ||
            (!w->dry_run &&
             rule_running(w->c->lifecycle, w->rule->name, project, w->nodes[i]->name)))
            continue;
        w->busy[i]++;
        if (run_create(w->c, w->rule, project, w->nodes[i], w->dry_run, w->by, w->created) < 0)
            w->failed++;
    }
}

static void due_area(void *arg, const char *project, const char *pool, int64_t used)
{
    (void)used;
    struct due_walk *w = arg;
    if (strcmp(pool, w->rule->pool) != 0 || !lifecycle_rule_covers(w->rule, project) ||
        (w->only && strcmp(w->only, project) != 0))
        return;
    if (rule_per_node(w->c, w->rule)) {
        due_area_each_node(w, project);
        return;
    }
    if (!w->dry_run && rule_running(w->c->lifecycle, w->rule->name, project, NULL))
        return; /* one real run of a rule on an area at a time */
    struct ctl_node *n = pick_node(w);
    if (!n) {
        w->nodeless++;
        return;
    }
    if (run_create(w->c, w->rule, project, n, w->dry_run, w->by, w->created) < 0)
        w->failed++;
}

void ctl_lifecycle_tick(struct ctl *c)
{
    struct ctl_lifecycle *l = lc_of(c);
    const struct storage_policy *p = ctl_storage_policy(c);
    int64_t now = clock_now_ms();
    for (size_t i = 0; i < l->n;) {
        int idx = sched_node_find(c->sched, l->runs[i].rec.node);
        if (l->runs[i].run.id == 0) {
            run_finish(c, i, NULL, "its rule or pools left the policy");
        } else if (idx < 0 || !node_alive(c, (size_t)idx)) {
            char why[160];
            snprintf(why, sizeof(why), "node %s went away during the run", l->runs[i].rec.node);
            run_finish(c, i, NULL, why);
        } else {
            i++;
        }
    }
    for (int i = 0; i < p->nrules; i++) {
        const struct lifecycle_rule *rule = &p->rules[i];
        json_t *last = json_object_get(l->last, rule->name);
        int64_t due = lifecycle_next_due_ms(rule, last ? json_integer_value(last) : 0, now);
        if (due < 0 || due > now)
            continue;
        char by[64];
        snprintf(by, sizeof(by), "docketd (every %llds)", (long long)(rule->every_ms / 1000));
        struct due_walk w = {.c = c, .rule = rule, .by = by};
        ctl_storage_each_area(c, due_area, &w);
        walk_done(&w);
        /* counted as run even when no node could take it: tried again at the next `every` */
        json_object_set_new(l->last, rule->name, json_integer(now));
        if (w.nodeless)
            log_warn("lifecycle_no_node", "rule=%s areas=%d", rule->name, w.nodeless);
    }
}

/* ---- endpoints ------------------------------------------------------------------------------ */

static json_t *run_json(const struct store_lc_run *r, bool with_files)
{
    json_t *o = json_pack(
        "{s:I,s:s,s:s,s:s,s:s,s:s,s:b,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s}", "id",
        (json_int_t)r->id, "rule", r->rule, "project", r->project, "pool", r->pool, "to",
        r->to_pool, "action", r->action, "dry_run", r->dry_run, "node", r->node, "state", r->state,
        "requested_by", r->requested_by, "created_ms", (json_int_t)r->created_ms, "finished_ms",
        (json_int_t)r->finished_ms, "files", (json_int_t)r->files, "bytes", (json_int_t)r->bytes,
        "freed_bytes", (json_int_t)r->freed_bytes, "failed", (json_int_t)r->failed, "in_use",
        (json_int_t)r->in_use, "message", r->message);
    json_t *res = r->result && r->result[0] ? json_loads(r->result, 0, NULL) : NULL;
    if (res) {
        json_object_set(o, "age_basis", json_object_get(res, "age_basis"));
        json_object_set_new(o, "dirs_removed",
                            json_integer(json_integer_value(json_object_get(res, "dirs_removed"))));
        if (with_files) {
            json_object_set(o, "list", json_object_get(res, "list"));
            json_object_set(o, "unlisted", json_object_get(res, "unlisted"));
        }
        json_decref(res);
    }
    return o;
}

/* POST /v1/storage/lifecycle {"dry_run": bool, "target": POOL|PROJECT, "rule": NAME}: a
 * run of each matching rule on each matching area, now (a target that names a pool is
 * the pool, else a project). 202 {runs: [ids]}. */
void h_lifecycle_start(struct ctl_req *r)
{
    lc_of(r->c); /* loaded first: a rule's run already under way is not started twice */
    static const char *const known[] = {"dry_run", "target", "rule", NULL};
    struct proto_error e;
    json_t *b = ctl_body_json(r, true);
    if (!b)
        return;
    if (proto_check_fields(b, "", known, &e) < 0) {
        json_decref(b);
        ctl_reply_error(r->c, r->req, &e);
        return;
    }
    const struct storage_policy *p = ctl_storage_policy(r->c);
    const char *target = json_string_value(json_object_get(b, "target"));
    const char *rname = json_string_value(json_object_get(b, "rule"));
    bool dry = json_is_true(json_object_get(b, "dry_run"));
    bool is_pool = target && storage_pool_find(p, target) != NULL;
    json_t *created = json_array();
    int matched = 0, nodeless = 0, failed = 0;
    for (int i = 0; i < p->nrules; i++) {
        const struct lifecycle_rule *rule = &p->rules[i];
        if ((rname && strcmp(rname, rule->name) != 0) ||
            (is_pool && strcmp(target, rule->pool) != 0))
            continue;
        matched++;
        struct due_walk w = {.c = r->c,
                             .rule = rule,
                             .only = target && !is_pool ? target : NULL,
                             .dry_run = dry,
                             .by = r->id.user,
                             .created = created};
        ctl_storage_each_area(r->c, due_area, &w);
        walk_done(&w);
        nodeless += w.nodeless;
        failed += w.failed;
    }
    json_decref(b);
    if (failed) {
        json_decref(created);
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return;
    }
    if (json_array_size(created) == 0) {
        json_decref(created);
        if (!matched)
            ctl_reply_errorf(r->c, r->req, 404, "target", "no lifecycle rule matches%s%s",
                             target ? " " : "", target ? target : "");
        else if (nodeless)
            ctl_reply_errorf(r->c, r->req, 409, NULL,
                             "no node has the rule's pools mounted and passing their checks");
        else
            ctl_reply_errorf(r->c, r->req, 404, "target",
                             "no project area is covered by the matching rules (or a run of "
                             "each is already under way)");
        return;
    }
    ctl_reply_json(r->c, r->req, 202, json_pack("{s:o,s:i}", "runs", created, "no_node", nodeless));
}

static int history_one(void *arg, const struct store_lc_run *r)
{
    json_array_append_new(arg, run_json(r, false));
    return 0;
}

/* GET /v1/storage/lifecycle: each rule with its last real run and next due time, and the
 * last runs. */
void h_lifecycle_list(struct ctl_req *r)
{
    struct ctl_lifecycle *l = lc_of(r->c);
    const struct storage_policy *p = ctl_storage_policy(r->c);
    json_t *rules = storage_rules_json(p), *runs = json_array();
    int64_t now = clock_now_ms();
    for (int i = 0; i < p->nrules; i++) {
        json_t *last = json_object_get(l->last, p->rules[i].name);
        int64_t lv = last ? json_integer_value(last) : 0;
        json_t *o = json_array_get(rules, (size_t)i);
        json_object_set_new(o, "last_run_ms", json_integer(lv));
        json_object_set_new(o, "next_due_ms",
                            json_integer(lifecycle_next_due_ms(&p->rules[i], lv, now)));
    }
    if (store_lc_run_list(r->c->store, LC_HISTORY, false, history_one, runs) < 0) {
        json_decref(rules);
        json_decref(runs);
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return;
    }
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o,s:o}", "rules", rules, "runs", runs));
}

struct find_run {
    int64_t id;
    json_t *found;
};

static int find_one(void *arg, const struct store_lc_run *r)
{
    struct find_run *f = arg;
    if (r->id != f->id)
        return r->id < f->id ? 1 : 0; /* newest first: past it, it is not there */
    f->found = run_json(r, true);
    return 1;
}

void h_lifecycle_run_get(struct ctl_req *r)
{
    struct find_run f = {.id = strtoll(r->arg[0], NULL, 10)};
    if (f.id <= 0 || store_lc_run_list(r->c->store, 0, false, find_one, &f) < 0 || !f.found) {
        ctl_reply_errorf(r->c, r->req, 404, NULL, "no lifecycle run %s", r->arg[0]);
        return;
    }
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "run", f.found));
}
