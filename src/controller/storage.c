/*
 * storage.c - project storage in docketd (storage.h, docs/storage.md).
 *
 * State: the policy's section; the areas, as stored (loaded at first use, changed by the
 * endpoints, each write to the store first); per node, the configuration last sent and
 * the report last received. The agents do the file system work; this file decides what
 * they are told and what their reports mean: an area whose usage reaches its quota holds
 * its project's pending jobs (StorageQuota, in the core), and lets them go once it is
 * back under it. Holds live in memory: after a restart they come back with the first
 * reports.
 */
#include "controller/storage.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/logarch.h"
#include "controller/loop.h"
#include "protocol/storage.h"
#include "util/clock.h"
#include "util/dbuf.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/str.h"
#include "util/xalloc.h"

struct area {
    struct store_storage_area rec;
    int64_t used_bytes; /* the largest any node reports; -1 unknown */
};

struct node_state {
    char node[64];
    int64_t gen;  /* of the configuration below */
    char *config; /* what it was told, without the gen (compact JSON) */
    bool has_report;
    int64_t report_ms;
    struct storage_report rep;
};

struct ctl_storage {
    struct storage_policy policy;
    struct area *areas;
    size_t nareas;
    bool loaded;
    struct node_state *nodes;
    size_t nnodes;
    int64_t next_gen;
    json_t *held;           /* project -> why, as the core holds it */
    int64_t next_sample_ms; /* when the areas' usage is next written to the store */
    int64_t next_rollup_ms; /* when samples past storage.sample_keep are next rolled up */
};

static int area_load(void *arg, const struct store_storage_area *a)
{
    struct ctl_storage *s = arg;
    s->areas = xrealloc(s->areas, (s->nareas + 1) * sizeof(*s->areas));
    s->areas[s->nareas++] = (struct area){*a, -1};
    return 0;
}

static struct ctl_storage *storage_of(struct ctl *c)
{
    if (!c->storage) {
        c->storage = xnonnull(calloc(1, sizeof(*c->storage)), "storage");
        storage_policy_defaults(&c->storage->policy);
        c->storage->next_gen = clock_now_ms(); /* never a gen an agent holds from before */
        c->storage->held = json_object();
    }
    struct ctl_storage *s = c->storage;
    if (!s->loaded && c->store) {
        if (store_storage_area_list(c->store, area_load, s) < 0)
            log_error("store_failed", "what=storage_areas error=\"%s\"", store_errmsg(c->store));
        else
            s->loaded = true;
    }
    return s;
}

void ctl_storage_free(struct ctl *c)
{
    struct ctl_storage *s = c->storage;
    if (!s)
        return;
    for (size_t i = 0; i < s->nnodes; i++) {
        free(s->nodes[i].config);
        storage_report_release(&s->nodes[i].rep);
    }
    free(s->nodes);
    free(s->areas);
    json_decref(s->held);
    free(s);
    c->storage = NULL;
}

void ctl_storage_take(struct ctl *c, const struct proto_policy *pp)
{
    if (!pp->storage)
        return;
    struct ctl_storage *s = storage_of(c);
    s->policy = *pp->storage;
    /* the next sample and roll-up under the new intervals, not an old hour away */
    s->next_sample_ms = 0;
    s->next_rollup_ms = 0;
}

void ctl_storage_json(struct ctl *c, json_t *doc, const struct proto_policy *pp)
{
    const struct storage_policy *p = pp && pp->storage ? pp->storage : &storage_of(c)->policy;
    json_object_set_new(doc, "storage", storage_policy_json(p));
}

/* ---- sizes in sentences ---------------------------------------------------------------- */

static void human(int64_t bytes, char *out, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, len, "%lld B", (long long)bytes);
    else
        snprintf(out, len, "%.1f %s", v, units[u]);
}

/* ---- which node has which pool ----------------------------------------------------------- */

static bool node_has_pool(struct ctl *c, const char *node, const struct storage_pool *p)
{
    if (p->nnodes == 0)
        return true;
    struct ctl_node *n = ctl_node_by_name(c, node);
    json_t *labels = n && n->rec.labels ? json_loads(n->rec.labels, 0, NULL) : NULL;
    bool all = labels != NULL;
    for (int i = 0; all && i < p->nnodes; i++) {
        const char *v = json_string_value(json_object_get(labels, p->nodes[i].key));
        all = v && strcmp(v, p->nodes[i].value) == 0;
    }
    json_decref(labels);
    return all;
}

static struct node_state *node_state(struct ctl_storage *s, const char *node, bool create)
{
    for (size_t i = 0; i < s->nnodes; i++)
        if (strcmp(s->nodes[i].node, node) == 0)
            return &s->nodes[i];
    if (!create)
        return NULL;
    s->nodes = xrealloc(s->nodes, (s->nnodes + 1) * sizeof(*s->nodes));
    struct node_state *ns = &s->nodes[s->nnodes++];
    memset(ns, 0, sizeof(*ns));
    str_copy(ns->node, sizeof(ns->node), node);
    return ns;
}

/* ---- usage, quotas and the hold ------------------------------------------------------- */

static const struct storage_area_state *reported_area(const struct node_state *ns, const char *pool,
                                                      const char *project)
{
    for (size_t i = 0; ns->has_report && i < ns->rep.nareas; i++)
        if (strcmp(ns->rep.areas[i].pool, pool) == 0 &&
            strcmp(ns->rep.areas[i].project, project) == 0)
            return &ns->rep.areas[i];
    return NULL;
}

/* A shared file system is seen alike by every node that mounts it; a node-local pool is
 * counted at its fullest node (docs/storage.md "Usage"). */
static void usage_refresh(struct ctl_storage *s)
{
    for (size_t i = 0; i < s->nareas; i++) {
        struct area *a = &s->areas[i];
        a->used_bytes = -1;
        for (size_t k = 0; k < s->nnodes; k++) {
            const struct storage_area_state *st =
                reported_area(&s->nodes[k], a->rec.pool, a->rec.project);
            if (st && st->used_bytes > a->used_bytes)
                a->used_bytes = st->used_bytes;
        }
    }
}

/* Full: less than 1 % of the quota left (a file system quota stops writes a block short
 * of it, so exactly 100 % may never be reported). */
static bool area_full(const struct area *a)
{
    return a->rec.quota_bytes > 0 && a->used_bytes >= 0 &&
           a->used_bytes >= a->rec.quota_bytes - a->rec.quota_bytes / 100;
}

static void hold_project(struct ctl *c, const char *project, const char *why)
{
    struct ctl_storage *s = c->storage;
    const char *was = json_string_value(json_object_get(s->held, project));
    if ((was ? was : "")[0] == why[0] && strcmp(was ? was : "", why) == 0)
        return;
    struct sched_error se;
    if (sched_project_storage_hold(c->sched, project, why, &se) < 0)
        return; /* a project the core does not know has no jobs to hold */
    if (why[0]) {
        json_object_set_new(s->held, project, json_string(why));
        log_warn("storage_quota_hold", "project=%s why=\"%s\"", project, why);
    } else {
        json_object_del(s->held, project);
        log_info("storage_quota_release", "project=%s", project);
    }
    ctl_cycle_soon(c);
}

static void holds_refresh(struct ctl *c)
{
    struct ctl_storage *s = c->storage;
    json_t *want = json_object();
    for (size_t i = 0; i < s->nareas; i++) {
        const struct area *a = &s->areas[i];
        if (!area_full(a) || json_object_get(want, a->rec.project))
            continue;
        char used[32], quota[32], why[160];
        human(a->used_bytes, used, sizeof(used));
        human(a->rec.quota_bytes, quota, sizeof(quota));
        snprintf(why, sizeof(why), "pool %s: %s used of its %s quota", a->rec.pool, used, quota);
        json_object_set_new(want, a->rec.project, json_string(why));
    }
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(s->held, tmp, k, v) {
        char name[STORAGE_NAME_MAX]; /* the key goes with its entry */
        str_copy(name, sizeof(name), k);
        if (!json_object_get(want, name))
            hold_project(c, name, "");
    }
    json_object_foreach(want, k, v)
        hold_project(c, k, json_string_value(v));
    json_decref(want);
}

void ctl_storage_report(struct ctl *c, const char *node, const struct storage_report *rep)
{
    struct ctl_storage *s = storage_of(c);
    struct node_state *ns = node_state(s, node, rep != NULL);
    if (!rep || !ns)
        return;
    storage_report_release(&ns->rep);
    ns->rep = *rep;
    ns->rep.areas = xmalloc((rep->nareas ? rep->nareas : 1) * sizeof(*rep->areas));
    memcpy(ns->rep.areas, rep->areas, rep->nareas * sizeof(*rep->areas));
    ns->has_report = true;
    ns->report_ms = clock_now_ms();
    for (int i = 0; i < rep->npools; i++)
        if (!rep->pools[i].ok)
            log_debug("storage_pool_failing", "node=%s pool=%s message=\"%s\"", node,
                      rep->pools[i].name, rep->pools[i].message);
    usage_refresh(s);
    holds_refresh(c);
}

/* ---- what an agent is told ---------------------------------------------------------------- */

static json_t *node_config(struct ctl *c, const char *node)
{
    struct ctl_storage *s = c->storage;
    struct storage_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.interval_ms = s->policy.check_interval_ms;
    cfg.areas = xcalloc(s->nareas ? s->nareas : 1, sizeof(*cfg.areas));
    for (int i = 0; i < s->policy.npools; i++)
        if (node_has_pool(c, node, &s->policy.pools[i]))
            cfg.pools[cfg.npools++] = s->policy.pools[i];
    for (size_t i = 0; i < s->nareas; i++) {
        const struct store_storage_area *a = &s->areas[i].rec;
        bool here = false;
        for (int k = 0; k < cfg.npools; k++)
            here = here || strcmp(cfg.pools[k].name, a->pool) == 0;
        if (!here)
            continue;
        struct storage_area *o = &cfg.areas[cfg.nareas++];
        str_copy(o->pool, sizeof(o->pool), a->pool);
        str_copy(o->project, sizeof(o->project), a->project);
        storage_project_group(&s->policy, a->project, o->group, sizeof(o->group));
        o->quota_bytes = a->quota_bytes;
    }
    json_t *j = storage_config_json(&cfg);
    storage_config_release(&cfg);
    return j;
}

void ctl_storage_reply(struct ctl *c, struct ctl_node *n, json_t *reply)
{
    struct ctl_storage *s = storage_of(c);
    if (s->policy.npools == 0 && !node_state(s, n->name, false))
        return; /* nothing to keep, and nothing was ever said */
    struct node_state *ns = node_state(s, n->name, true);
    json_t *cfg = node_config(c, n->name);
    json_object_del(cfg, "gen");
    char *text = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
    if (!ns->config || !text || strcmp(ns->config, text) != 0) {
        free(ns->config);
        ns->config = text;
        ns->gen = ++s->next_gen;
        text = NULL;
    }
    free(text);
    int64_t has = ns->has_report ? ns->rep.gen : 0;
    if (has != ns->gen) {
        json_object_set_new(cfg, "gen", json_integer((json_int_t)ns->gen));
        json_object_set(reply, "storage", cfg);
    }
    json_decref(cfg);
}

/* ---- jobs ----------------------------------------------------------------------------------- */

int ctl_storage_job_spec(struct ctl *c, struct proto_jobspec *ps, struct proto_error *e)
{
    struct ctl_storage *s = storage_of(c);
    json_t *pools = json_object_get(ps->extra, "storage");
    size_t i;
    json_t *v;
    json_array_foreach(pools, i, v) {
        char f[32];
        snprintf(f, sizeof(f), "storage[%zu]", i);
        const struct storage_pool *p = storage_pool_find(&s->policy, json_string_value(v));
        if (!p)
            return proto_errorf(e, 400, NULL, f, "unknown storage pool '%s'", json_string_value(v));
        for (int k = 0; k < p->nnodes; k++) {
            bool have = false;
            for (int m = 0; m < ps->nselectors; m++)
                have = have || (strcmp(ps->selectors[m].key, p->nodes[k].key) == 0 &&
                                strcmp(ps->selectors[m].value, p->nodes[k].value) == 0 &&
                                !ps->selectors[m].negate);
            if (have)
                continue;
            if (ps->nselectors >= PROTO_MAX_SELECTORS)
                return proto_errorf(e, 400, NULL, "storage",
                                    "the pools' node labels and the job's selectors make more "
                                    "than %d selectors",
                                    PROTO_MAX_SELECTORS);
            struct proto_selector *sel = &ps->selectors[ps->nselectors++];
            memset(sel, 0, sizeof(*sel));
            str_copy(sel->key, sizeof(sel->key), p->nodes[k].key);
            str_copy(sel->value, sizeof(sel->value), p->nodes[k].value);
        }
    }
    return 0;
}

static const struct area *area_find(const struct ctl_storage *s, const char *project,
                                    const char *pool)
{
    for (size_t i = 0; i < s->nareas; i++)
        if (strcmp(s->areas[i].rec.project, project) == 0 &&
            strcmp(s->areas[i].rec.pool, pool) == 0)
            return &s->areas[i];
    return NULL;
}

bool ctl_storage_path_in_area(struct ctl *c, const char *project, const char *path)
{
    struct ctl_storage *s = storage_of(c);
    char dir[STORAGE_PATH_MAX + 80];
    for (int i = 0; i < s->policy.npools; i++) {
        const struct storage_pool *p = &s->policy.pools[i];
        if (!area_find(s, project, p->name))
            continue;
        storage_area_path(p, project, dir, sizeof(dir));
        size_t n = strlen(dir);
        if (strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/'))
            return true;
    }
    return false;
}

json_t *ctl_storage_job_env(struct ctl *c, const char *project, const json_t *spec,
                            const char *node, const json_t *env)
{
    struct ctl_storage *s = storage_of(c);
    json_t *out = json_is_object(env) ? json_copy((json_t *)env) : json_object();
    char dir[STORAGE_PATH_MAX + 80], name[64], first[STORAGE_PATH_MAX + 80] = "";
    for (int i = 0; i < s->policy.npools; i++) {
        const struct storage_pool *p = &s->policy.pools[i];
        if (!area_find(s, project, p->name) || !node_has_pool(c, node, p))
            continue;
        storage_area_path(p, project, dir, sizeof(dir));
        storage_pool_env_name(p->name, name, sizeof(name));
        json_object_set_new(out, name, json_string(dir));
        if (!first[0])
            str_copy(first, sizeof(first), dir);
    }
    /* the project's directory: on the first pool the job names that has its area */
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(spec, "storage"), i, v) {
        const struct storage_pool *p = storage_pool_find(&s->policy, json_string_value(v));
        if (p && area_find(s, project, p->name) && node_has_pool(c, node, p)) {
            storage_area_path(p, project, first, sizeof(first));
            break;
        }
    }
    if (first[0])
        json_object_set_new(out, "DOCKET_PROJECT_DIR", json_string(first));
    return out;
}

const struct storage_policy *ctl_storage_policy(struct ctl *c)
{
    return &storage_of(c)->policy;
}

bool ctl_storage_node_ready(struct ctl *c, const char *node, const char *pool)
{
    struct ctl_storage *s = storage_of(c);
    const struct storage_pool *p = storage_pool_find(&s->policy, pool);
    const struct node_state *ns = node_state(s, node, false);
    if (!p || !ns || !ns->has_report || !node_has_pool(c, node, p))
        return false;
    for (int i = 0; i < ns->rep.npools; i++)
        if (strcmp(ns->rep.pools[i].name, pool) == 0)
            return ns->rep.pools[i].ok;
    return false;
}

void ctl_storage_each_area(struct ctl *c, ctl_storage_area_fn fn, void *arg)
{
    struct ctl_storage *s = storage_of(c);
    for (size_t i = 0; i < s->nareas; i++)
        fn(arg, s->areas[i].rec.project, s->areas[i].rec.pool, s->areas[i].used_bytes);
}

/* Samples older than storage.sample_keep rolled up into one per area per
 * storage.sample_rollup, a few steps a turn (a long history catches up over some turns
 * without holding the loop), then again at the next sampling. */
enum { ROLLUP_STEPS_PER_TURN = 7 };

static void rollup_tick(struct ctl *c, struct ctl_storage *s, int64_t now)
{
    if (now < s->next_rollup_ms)
        return;
    struct store_rollup ru = {0};
    int rc = store_begin(c->store);
    if (rc == 0)
        rc = store_storage_samples_rollup(c->store, now - s->policy.sample_keep_ms,
                                          s->policy.sample_rollup_ms, ROLLUP_STEPS_PER_TURN, &ru);
    ctl_commit_soon(c);
    if (rc < 0)
        log_error("store_failed", "what=storage_rollup error=\"%s\"", store_errmsg(c->store));
    else if (ru.until_ms > ru.from_ms)
        log_info("storage_samples_rolled_up", "from_ms=%lld until_ms=%lld rows_fewer=%lld",
                 (long long)ru.from_ms, (long long)ru.until_ms, (long long)ru.removed);
    s->next_rollup_ms = rc == 0 && ru.more ? now : now + s->policy.sample_interval_ms;
}

void ctl_storage_tick(struct ctl *c)
{
    struct ctl_storage *s = storage_of(c);
    int64_t now = clock_now_ms();
    rollup_tick(c, s, now);
    if (now < s->next_sample_ms || s->nareas == 0)
        return;
    s->next_sample_ms = now + s->policy.sample_interval_ms;
    for (size_t i = 0; i < s->nareas; i++) {
        const struct area *a = &s->areas[i];
        if (a->used_bytes < 0)
            continue; /* no node has measured it yet: the last sample holds */
        if (store_storage_sample_add(c->store, now, a->rec.project, a->rec.pool, a->used_bytes) <
            0) {
            log_error("store_failed", "what=storage_usage error=\"%s\"", store_errmsg(c->store));
            return;
        }
    }
}

/* ---- pools' state -----------------------------------------------------------------------------
 */

struct pool_fill {
    int64_t size, used;
    int ok, failing;
    json_t *failures; /* [{node, message}] */
};

static void pool_fill(struct ctl_storage *s, const char *pool, struct pool_fill *f, bool list)
{
    memset(f, 0, sizeof(*f));
    f->size = f->used = -1;
    f->failures = list ? json_array() : NULL;
    for (size_t k = 0; k < s->nnodes; k++) {
        const struct node_state *ns = &s->nodes[k];
        for (int i = 0; ns->has_report && i < ns->rep.npools; i++) {
            const struct storage_pool_state *p = &ns->rep.pools[i];
            if (strcmp(p->name, pool) != 0)
                continue;
            if (!p->ok) {
                f->failing++;
                if (list)
                    json_array_append_new(f->failures, json_pack("{s:s,s:s}", "node", ns->node,
                                                                 "message", p->message));
                continue;
            }
            f->ok++;
            /* the fullest node's view */
            if (p->size_bytes > 0 && p->used_bytes >= 0 &&
                (f->size <= 0 || (double)p->used_bytes / (double)p->size_bytes >
                                     (double)f->used / (double)f->size)) {
                f->size = p->size_bytes;
                f->used = p->used_bytes;
            }
        }
    }
}

static double pct(int64_t used, int64_t total)
{
    return total > 0 && used >= 0 ? 100.0 * (double)used / (double)total : -1;
}

void ctl_storage_each_fill(struct ctl *c, ctl_storage_fill_cb cb, void *arg)
{
    struct ctl_storage *s = storage_of(c);
    char summary[256], used[32], total[32], key[128];
    for (int i = 0; i < s->policy.npools; i++) {
        struct pool_fill f;
        pool_fill(s, s->policy.pools[i].name, &f, false);
        if (f.size <= 0)
            continue;
        human(f.used, used, sizeof(used));
        human(f.size, total, sizeof(total));
        double p = pct(f.used, f.size);
        snprintf(summary, sizeof(summary), "storage pool %s is %.1f%% full (%s of %s)",
                 s->policy.pools[i].name, p, used, total);
        cb(arg, s->policy.pools[i].name, p, summary);
    }
    for (size_t i = 0; i < s->nareas; i++) {
        const struct area *a = &s->areas[i];
        if (a->rec.quota_bytes <= 0 || a->used_bytes < 0)
            continue;
        human(a->used_bytes, used, sizeof(used));
        human(a->rec.quota_bytes, total, sizeof(total));
        double p = pct(a->used_bytes, a->rec.quota_bytes);
        snprintf(summary, sizeof(summary),
                 "project %s uses %.1f%% of its quota on pool %s (%s of %s)", a->rec.project, p,
                 a->rec.pool, used, total);
        snprintf(key, sizeof(key), "%s/%s", a->rec.pool, a->rec.project);
        cb(arg, key, p, summary);
    }
    /* a log archive pool that refused a copy for lack of room is full, whatever the
     * agents measured (logarch.c) */
    if (ctl_logarch_full(c, key, sizeof(key), summary, sizeof(summary)))
        cb(arg, key, 100.0, summary);
}

void ctl_storage_metrics(struct ctl *c, struct dbuf *b)
{
    struct ctl_storage *s = storage_of(c);
    static const char *const fams[][2] = {
        {"docket_storage_pool_size_bytes", "size of each pool's file system (its fullest node)"},
        {"docket_storage_pool_used_bytes", "bytes used on each pool's file system"},
        {"docket_storage_pool_nodes_failing", "nodes whose check of the pool fails"},
    };
    for (int f = 0; f < 3; f++) {
        dbuf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", fams[f][0], fams[f][1], fams[f][0]);
        for (int i = 0; i < s->policy.npools; i++) {
            struct pool_fill pf;
            pool_fill(s, s->policy.pools[i].name, &pf, false);
            long long v = f == 0 ? pf.size : f == 1 ? pf.used : pf.failing;
            if (v >= 0)
                dbuf_printf(b, "%s{pool=\"%s\"} %lld\n", fams[f][0], s->policy.pools[i].name, v);
        }
    }
    dbuf_printf(b, "# HELP docket_storage_area_used_bytes bytes a project's area uses on a pool\n"
                   "# TYPE docket_storage_area_used_bytes gauge\n");
    for (size_t i = 0; i < s->nareas; i++)
        if (s->areas[i].used_bytes >= 0)
            dbuf_printf(b, "docket_storage_area_used_bytes{project=\"%s\",pool=\"%s\"} %lld\n",
                        s->areas[i].rec.project, s->areas[i].rec.pool,
                        (long long)s->areas[i].used_bytes);
    dbuf_printf(b, "# HELP docket_storage_area_quota_bytes a project's quota on a pool (0: none)\n"
                   "# TYPE docket_storage_area_quota_bytes gauge\n");
    for (size_t i = 0; i < s->nareas; i++)
        dbuf_printf(b, "docket_storage_area_quota_bytes{project=\"%s\",pool=\"%s\"} %lld\n",
                    s->areas[i].rec.project, s->areas[i].rec.pool,
                    (long long)s->areas[i].rec.quota_bytes);
}

json_t *ctl_storage_usage_json(struct ctl *c)
{
    struct ctl_storage *s = storage_of(c);
    json_t *o = json_object();
    for (size_t i = 0; i < s->nareas; i++) {
        const struct area *a = &s->areas[i];
        json_t *p = json_object_get(o, a->rec.project);
        if (!p)
            json_object_set_new(o, a->rec.project, p = json_object());
        json_object_set_new(p, a->rec.pool,
                            json_pack("{s:I,s:I}", "used_bytes", (json_int_t)a->used_bytes,
                                      "quota_bytes", (json_int_t)a->rec.quota_bytes));
    }
    return o;
}

/* ---- endpoints ------------------------------------------------------------------------------ */

static json_t *area_json(const struct ctl_storage *s, const struct area *a)
{
    char path[STORAGE_PATH_MAX + 80] = "", group[STORAGE_NAME_MAX];
    const struct storage_pool *p = storage_pool_find(&s->policy, a->rec.pool);
    if (p)
        storage_area_path(p, a->rec.project, path, sizeof(path));
    storage_project_group(&s->policy, a->rec.project, group, sizeof(group));
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:b,s:s,s:I}", "project", a->rec.project,
                          "pool", a->rec.pool, "path", path, "group", group, "quota_bytes",
                          (json_int_t)a->rec.quota_bytes, "used_bytes", (json_int_t)a->used_bytes,
                          "held", json_object_get(s->held, a->rec.project) != NULL, "created_by",
                          a->rec.created_by, "created_ms", (json_int_t)a->rec.created_ms);
    double p100 = pct(a->used_bytes, a->rec.quota_bytes);
    if (p100 >= 0)
        json_object_set_new(o, "percent", json_real(p100));
    return o;
}

void h_storage_list(struct ctl_req *r)
{
    struct ctl_storage *s = storage_of(r->c);
    json_t *pools = json_array(), *areas = json_array();
    for (int i = 0; i < s->policy.npools; i++) {
        const struct storage_pool *p = &s->policy.pools[i];
        struct pool_fill f;
        pool_fill(s, p->name, &f, true);
        json_t *o = storage_policy_json(&(struct storage_policy){.pools = {*p}, .npools = 1});
        json_t *po = json_incref(json_array_get(json_object_get(o, "pools"), 0));
        json_decref(o);
        json_object_set_new(po, "size_bytes", json_integer((json_int_t)f.size));
        json_object_set_new(po, "used_bytes", json_integer((json_int_t)f.used));
        if (pct(f.used, f.size) >= 0)
            json_object_set_new(po, "percent", json_real(pct(f.used, f.size)));
        json_object_set_new(po, "nodes_ok", json_integer(f.ok));
        json_object_set_new(po, "nodes_failing", f.failures);
        json_array_append_new(pools, po);
    }
    for (size_t i = 0; i < s->nareas; i++)
        json_array_append_new(areas, area_json(s, &s->areas[i]));
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o,s:o}", "pools", pools, "areas", areas));
}

static int area_args(struct ctl_req *r, const struct storage_pool **pool)
{
    struct ctl_storage *s = storage_of(r->c);
    if (sched_project_find(r->c->sched, r->arg[0]) < 0) {
        ctl_reply_errorf(r->c, r->req, 404, NULL, "unknown project '%s'", r->arg[0]);
        return -ENOENT;
    }
    if (!(*pool = storage_pool_find(&s->policy, r->arg[1]))) {
        ctl_reply_errorf(r->c, r->req, 404, NULL, "unknown storage pool '%s'", r->arg[1]);
        return -ENOENT;
    }
    return 0;
}

/* {"quota": "10G"} or {"quota": BYTES}; 0 or "0" for none. */
static int quota_of(struct ctl_req *r, const json_t *b, int64_t *out)
{
    json_t *q = json_object_get(b, "quota");
    int64_t mb = 0;
    if (json_is_integer(q) && json_integer_value(q) >= 0) {
        *out = json_integer_value(q);
        return 0;
    }
    if (json_is_string(q) && parse_size_mb(json_string_value(q), &mb) == 0 &&
        mb <= ((int64_t)1 << 40)) {
        *out = mb * 1024 * 1024;
        return 0;
    }
    ctl_reply_errorf(r->c, r->req, 400, "quota",
                     "quota must be a size (\"500G\", \"10T\") or a count of bytes, 0 for none");
    return -EINVAL;
}

/* PUT /v1/projects/:/storage/: {quota}: the project's area on the pool, made or its quota
 * changed; the agents create or fix the directory at their next heartbeat. Audited. */
void h_storage_area_put(struct ctl_req *r)
{
    struct ctl_storage *s = storage_of(r->c);
    const struct storage_pool *pool;
    if (area_args(r, &pool) < 0)
        return;
    json_t *b = ctl_body_json(r, false);
    static const char *const known[] = {"quota", NULL};
    struct proto_error e;
    int64_t quota = 0;
    if (!b)
        return;
    if (proto_check_fields(b, "", known, &e) < 0) {
        json_decref(b);
        ctl_reply_error(r->c, r->req, &e);
        return;
    }
    int rc = quota_of(r, b, &quota);
    json_decref(b);
    if (rc < 0)
        return;
    struct area *old = (struct area *)area_find(s, r->arg[0], r->arg[1]);
    struct store_storage_area a;
    memset(&a, 0, sizeof(a));
    str_copy(a.project, sizeof(a.project), r->arg[0]);
    str_copy(a.pool, sizeof(a.pool), r->arg[1]);
    a.quota_bytes = quota;
    str_copy(a.created_by, sizeof(a.created_by), old ? old->rec.created_by : r->id.user);
    a.created_ms = old ? old->rec.created_ms : clock_now_ms();
    char target[160];
    snprintf(target, sizeof(target), "%s/%s", a.project, a.pool);
    json_t *before =
        old ? json_pack("{s:I}", "quota_bytes", (json_int_t)old->rec.quota_bytes) : NULL;
    json_t *after = json_pack("{s:I}", "quota_bytes", (json_int_t)quota);
    rc = store_storage_area_put(r->c->store, &a);
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, "storage.area_set", target, before, after,
                       old ? "quota changed" : "created");
    json_decref(before);
    json_decref(after);
    if (rc < 0) {
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return;
    }
    if (old) {
        old->rec.quota_bytes = quota;
    } else {
        area_load(s, &a);
        old = &s->areas[s->nareas - 1];
    }
    holds_refresh(r->c);
    log_info("storage_area_set", "project=%s pool=%s quota_bytes=%lld by=%s", a.project, a.pool,
             (long long)quota, r->id.user);
    ctl_reply_json(r->c, r->req, old->rec.created_ms == a.created_ms && before ? 200 : 201,
                   json_pack("{s:o}", "area", area_json(s, old)));
}

/* DELETE /v1/projects/:/storage/:: the area forgotten (its directory and data stay on the
 * pool: removing data is the operator's act). Audited. */
void h_storage_area_delete(struct ctl_req *r)
{
    struct ctl_storage *s = storage_of(r->c);
    const struct storage_pool *pool;
    if (area_args(r, &pool) < 0)
        return;
    char target[160];
    snprintf(target, sizeof(target), "%s/%s", r->arg[0], r->arg[1]);
    int rc = store_storage_area_delete(r->c->store, r->arg[0], r->arg[1]);
    if (rc == -ENOENT) {
        ctl_reply_errorf(r->c, r->req, 404, NULL, "project %s has no area on pool %s", r->arg[0],
                         r->arg[1]);
        return;
    }
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, "storage.area_delete", target, NULL, NULL, NULL);
    if (rc < 0) {
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return;
    }
    for (size_t i = 0; i < s->nareas; i++)
        if (strcmp(s->areas[i].rec.project, r->arg[0]) == 0 &&
            strcmp(s->areas[i].rec.pool, r->arg[1]) == 0) {
            s->areas[i] = s->areas[--s->nareas];
            break;
        }
    holds_refresh(r->c);
    log_info("storage_area_deleted", "project=%s pool=%s by=%s", r->arg[0], r->arg[1], r->id.user);
    ctl_reply_json(r->c, r->req, 200,
                   json_pack("{s:s,s:s}", "deleted", target, "note",
                             "the directory and its data stay on the pool"));
}
