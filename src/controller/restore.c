/*
 * restore.c - docketd's start: reload the policy, projects, nodes and every live job
 * from the database into a fresh core, in id order (so a job's dependencies are live
 * before it). Running jobs take their allocation back (sched_job_restore_running);
 * agents reconcile them on their first heartbeat (agent.c). A job whose exit was
 * recorded but whose end was not yet applied is ended now.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/admin.h"
#include "controller/alerts.h"
#include "controller/network.h"
#include "controller/storage.h"
#include "controller/conn.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/deps.h"
#include "controller/loop.h"
#include "controller/restore.h"
#include "controller/site.h"
#include "controller/templates.h"
#include "controller/turns.h"
#include "util/clock.h"
#include "util/str.h"
#include "util/yamljson.h"
#include "util/xalloc.h"

static int load_policy(struct ctl *c, struct sched_policy *out, struct proto_policy *initial,
                       bool *has_initial, char *err, size_t errlen)
{
    struct sched_policy defaults;
    struct proto_error pe;
    char *doc = NULL;
    sched_policy_defaults(&defaults);
    *out = defaults;
    *has_initial = false;
    int rc = store_policy_get(c->store, &doc);
    if (rc == 0) {
        json_t *j = json_loads(doc, 0, NULL);
        free(doc);
        struct proto_policy pp;
        if (!j || proto_policy_parse(j, &defaults, &pp, &pe) < 0) {
            json_decref(j);
            snprintf(err, errlen, "stored policy is damaged: %s", j ? pe.message : "bad json");
            return -EINVAL;
        }
        json_decref(j);
        *out = pp.policy;
        ctl_class_nodes_take(c, &pp);
        ctl_alerts_take(c, &pp);
        ctl_templates_take(c, &pp);
        ctl_storage_take(c, &pp);
        ctl_net_take(c, &pp);
        ctl_site_take(c, &pp);
        proto_policy_release(&pp);
        return 0;
    }
    if (rc != -ENOENT) {
        snprintf(err, errlen, "read policy: %s", store_errmsg(c->store));
        return rc;
    }
    if (!c->cfg.policy_file[0])
        return 0;
    char yerr[256];
    json_t *j = yaml_file_to_json(c->cfg.policy_file, yerr, sizeof(yerr));
    if (!j) {
        snprintf(err, errlen, "policy '%s': %s", c->cfg.policy_file, yerr);
        return -EINVAL;
    }
    rc = proto_policy_parse(j, &defaults, initial, &pe);
    json_decref(j);
    if (rc < 0) {
        snprintf(err, errlen, "policy '%s': %s%s%s", c->cfg.policy_file, pe.field,
                 pe.field[0] ? ": " : "", pe.message);
        return rc;
    }
    *has_initial = true;
    *out = initial->policy;
    ctl_class_nodes_take(c, initial);
    ctl_alerts_take(c, initial);
    ctl_templates_take(c, initial);
    ctl_storage_take(c, initial);
    ctl_net_take(c, initial);
    ctl_site_take(c, initial);
    return 0;
}

struct project_load {
    struct ctl *c;
    int64_t now;
    int count;
    bool relaxed; /* first pass: no max_queued, so every stored job reloads */
    bool final;   /* second pass: the real limits, boosts already applied */
};

static int restore_project(void *arg, const char *name, const char *doc)
{
    struct project_load *pl = arg;
    struct sched_project_spec p;
    struct proto_error pe;
    struct sched_error se;
    json_t *j = json_loads(doc, 0, NULL);
    sched_project_spec_init(&p);
    str_copy(p.name, sizeof(p.name), name);
    int rc = j ? proto_project_parse(json_object_get(j, "spec"), "", false, &p, &pe) : -EINVAL;
    if (rc == 0 && pl->relaxed)
        p.max_queued = -1; /* a limit lowered after jobs were queued must not drop them */
    if (rc < 0 || sched_project_upsert(pl->c->sched, &p, &se) < 0) {
        log_error("restore_project_failed", "project=%s", name);
        json_decref(j);
        return 0;
    }
    json_t *b = json_object_get(j, "boost");
    if (!pl->final && json_is_object(b)) {
        json_int_t levels = json_integer_value(json_object_get(b, "levels"));
        json_int_t until = json_integer_value(json_object_get(b, "until_ms"));
        const char *why = json_string_value(json_object_get(b, "reason"));
        if (levels > 0 && until > pl->now &&
            sched_project_boost(pl->c->sched, name, (int)levels, until, pl->now, &se) < 0)
            log_warn("restore_boost_failed", "project=%s error=\"%s\"", name, se.message);
        else if (why)
            ctl_project_boost_reason(pl->c, name, why);
    }
    json_decref(j);
    pl->count++;
    return 0;
}

static int add_node_slot(struct ctl *c, uint32_t index, struct ctl_node *n)
{
    if (index >= c->nodes_alloc) {
        size_t na = c->nodes_alloc ? c->nodes_alloc * 2 : 16;
        while (na <= index)
            na *= 2;
        struct ctl_node **nn = realloc(c->nodes, na * sizeof(*nn));
        if (!nn)
            return -ENOMEM;
        memset(nn + c->nodes_alloc, 0, (na - c->nodes_alloc) * sizeof(*nn));
        c->nodes = nn;
        c->nodes_alloc = na;
    }
    c->nodes[index] = n;
    if (index >= c->nnodes)
        c->nnodes = index + 1;
    return 0;
}

static void park_timeout(evutil_socket_t fd, short what, void *arg);

/* Create (or return) the controller's record of node `name`, which the core knows. */
struct ctl_node *ctl_node_attach(struct ctl *c, const char *name)
{
    int idx = sched_node_find(c->sched, name);
    if (idx < 0)
        return NULL;
    struct ctl_node *n = ctl_node_at(c, (uint32_t)idx);
    if (n)
        return n;
    n = calloc(1, sizeof(*n));
    if (!n || add_node_slot(c, (uint32_t)idx, n) < 0) {
        free(n);
        return NULL;
    }
    n->c = c;
    str_copy(n->name, sizeof(n->name), name);
    str_copy(n->rec.name, sizeof(n->rec.name), name);
    n->last_hb_ms = clock_mono_ms();
    n->lease_check_ms = n->last_hb_ms; /* restored UNREACHABLE: its leases from now */
    n->park_timer = xnonnull(evtimer_new(c->base, park_timeout, n), "heartbeat timer");
    return n;
}

/* The long poll of a parked heartbeat ran out: answer with no commands. */
static void park_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct ctl_node *n = arg;
    if (!n->parked)
        return;
    int64_t t0 = ctl_turn_enter(n->c);
    struct evhttp_request *req = n->parked;
    n->parked = NULL;
    struct evhttp_connection *con = evhttp_request_get_connection(req);
    if (con)
        ctl_conn_watch(n->c, con, NULL, NULL);
    const char *st = "UP";
    int i = sched_node_find(n->c->sched, n->name);
    struct sched_node_view v;
    if (i >= 0 && sched_node_get(n->c->sched, (uint32_t)i, &v) == 0)
        st = sched_node_state_name(v.state);
    ctl_reply_json(n->c, req, 200, json_pack("{s:[],s:s}", "commands", "node_state", st));
    ctl_turn_leave(n->c, CTL_TURN_TIMER, t0);
}

int ctl_labels_from_json(const json_t *o, struct sched_label *out, int max)
{
    const char *k;
    json_t *v;
    int n = 0;
    json_object_foreach((json_t *)o, k, v) {
        if (n >= max || !json_is_string(v))
            continue;
        str_copy(out[n].key, sizeof(out[n].key), k);
        str_copy(out[n].value, sizeof(out[n].value), json_string_value(v));
        n++;
    }
    return n;
}

static int restore_node(void *arg, const struct store_node *rec)
{
    struct ctl *c = arg;
    struct sched_node_spec ns;
    struct sched_error se;
    memset(&ns, 0, sizeof(ns));
    str_copy(ns.name, sizeof(ns.name), rec->name);
    str_copy(ns.gpu_type, sizeof(ns.gpu_type), rec->gpu_type);
    ns.gpus = rec->gpus;
    ns.gpu_mem_mb = rec->gpu_mem_mb;
    ns.cpus = rec->cpus;
    ns.mem_mb = rec->mem_mb;
    json_t *labels = json_loads(rec->labels ? rec->labels : "{}", 0, NULL);
    ns.nlabels = ctl_labels_from_json(labels, ns.labels, SCHED_MAX_LABELS);
    json_decref(labels);
    int st = sched_node_state_parse(rec->state);
    ns.state = st < 0 ? SCHED_NODE_UP : (enum sched_node_state)st;
    if (sched_node_upsert(c->sched, &ns, clock_now_ms(), &se) < 0) {
        log_error("restore_node_failed", "node=%s error=\"%s\"", rec->name, se.message);
        return 0;
    }
    struct ctl_node *n = ctl_node_attach(c, rec->name);
    if (!n)
        return -ENOMEM;
    store_node_release(&n->rec);
    n->rec = *rec;
    n->rec.labels = rec->labels ? xstrdup(rec->labels) : NULL;
    n->rec.info = rec->info ? xstrdup(rec->info) : NULL;
    n->reconciled = false;
    return 0;
}

struct job_load {
    struct ctl *c;
    int64_t now;
    size_t pending, running, failed;
    uint64_t max_id;
};

static const char *node_name_of(const json_t *e)
{
    const char *s = json_string_value(json_object_get(e, "node"));
    return s ? s : "";
}

static int parse_allocs(struct ctl *c, const char *text, struct sched_alloc *out, int max)
{
    json_t *a = text ? json_loads(text, 0, NULL) : NULL;
    int n = 0;
    for (size_t i = 0; json_is_array(a) && i < json_array_size(a) && n < max; i++) {
        json_t *e = json_array_get(a, i);
        int idx = sched_node_find(c->sched, node_name_of(e));
        if (idx < 0)
            continue;
        struct sched_alloc *al = &out[n++];
        memset(al, 0, sizeof(*al));
        al->node = (uint32_t)idx;
        json_t *g = json_object_get(e, "gpus");
        for (size_t k = 0; k < json_array_size(g); k++) {
            json_int_t b = json_integer_value(json_array_get(g, k));
            if (b >= 0 && b < 64) {
                al->gpu_mask |= (uint64_t)1 << b;
                al->gpus++;
            }
        }
        al->cpus = (int)json_integer_value(json_object_get(e, "cpus"));
        al->mem_mb = json_integer_value(json_object_get(e, "mem_mb"));
    }
    json_decref(a);
    return n;
}

static int exit_from_json(const char *text, enum sched_exit_kind *kind, int *code)
{
    json_t *e = text ? json_loads(text, 0, NULL) : NULL;
    if (!e)
        return -ENOENT;
    const char *k = json_string_value(json_object_get(e, "kind"));
    *code = (int)json_integer_value(json_object_get(e, "code"));
    *kind = !k                                ? SCHED_EXIT_LOST
            : strcmp(k, "code") == 0          ? SCHED_EXIT_CODE
            : strcmp(k, "signal") == 0        ? SCHED_EXIT_SIGNAL
            : strcmp(k, "oom") == 0           ? SCHED_EXIT_OOM
            : strcmp(k, "launch_failed") == 0 ? SCHED_EXIT_LAUNCH_FAILED
                                              : SCHED_EXIT_LOST;
    json_decref(e);
    return 0;
}

/* "afterok:12,afterany:13_*" (or '?' between them: any of; "_*": the whole array 13) and
 * "@constraint=a100&ib,zone=a,pool!=x" from the row's
 * columns (jobs.c writes them). */
static int parse_core_lists(const struct store_job *row, struct sched_job_spec *sp)
{
    const char *p = row->deps;
    sp->ndeps = 0;
    while (*p && sp->ndeps < SCHED_MAX_DEPS) {
        char kind[16];
        const char *colon = strchr(p, ':');
        if (!colon || (size_t)(colon - p) >= sizeof(kind))
            return -EINVAL;
        memcpy(kind, p, (size_t)(colon - p));
        kind[colon - p] = '\0';
        char *end;
        unsigned long long id = strtoull(colon + 1, &end, 10);
        struct sched_dep *d = &sp->deps[sp->ndeps++];
        d->kind = strcmp(kind, "afterany") == 0     ? SCHED_DEP_AFTERANY
                  : strcmp(kind, "afternotok") == 0 ? SCHED_DEP_AFTERNOTOK
                  : strcmp(kind, "after") == 0      ? SCHED_DEP_AFTER
                                                    : SCHED_DEP_AFTEROK;
        d->job_id = id;
        d->array = end[0] == '_' && end[1] == '*'; /* a whole array, as Slurm shows it */
        if (d->array)
            end += 2;
        if (*end == '?') /* Slurm's any-of, as jobs.c writes it */
            sp->deps_any = true;
        p = *end == ',' || *end == '?' ? end + 1 : end;
        if (*end && *end != ',' && *end != '?')
            return -EINVAL;
    }
    p = row->selectors;
    sp->nselectors = 0;
    while (*p && sp->nselectors < SCHED_MAX_LABELS) {
        const char *eq = strchr(p, '=');
        const char *comma = strchr(p, ',');
        size_t vlen = comma ? (size_t)(comma - eq - 1) : strlen(eq ? eq + 1 : "");
        if (!eq || (comma && comma < eq))
            return -EINVAL;
        if (eq - p == 11 && strncmp(p, "@constraint", 11) == 0) {
            if (vlen >= sizeof(sp->constraint))
                return -EINVAL;
            memcpy(sp->constraint, eq + 1, vlen);
            sp->constraint[vlen] = '\0';
            p = comma ? comma + 1 : eq + 1 + vlen;
            continue;
        }
        struct sched_selector *s = &sp->selectors[sp->nselectors++];
        size_t klen = (size_t)(eq - p);
        s->negate = klen > 0 && p[klen - 1] == '!';
        if (s->negate)
            klen--;
        if (klen >= sizeof(s->key) || vlen >= sizeof(s->value))
            return -EINVAL;
        memcpy(s->key, p, klen);
        s->key[klen] = '\0';
        memcpy(s->value, eq + 1, vlen);
        s->value[vlen] = '\0';
        p = comma ? comma + 1 : eq + 1 + vlen;
    }
    return 0;
}

/* Slurm's --switches lives in the stored spec only (few jobs ask for it: no column, a
 * flag says so); a restart lists the rows without their specs, so a row with the flag is
 * read again whole (store_job_get), as rows from before the core columns are. */
static int spec_switches(const char *text, struct sched_job_spec *sp)
{
    json_t *spec = text ? json_loads(text, 0, NULL) : NULL;
    int rc = spec ? proto_jobspec_switches(spec, &sp->switches, &sp->switches_wait_ms) : -EINVAL;
    json_decref(spec);
    return rc;
}

static int row_switches(struct ctl *c, const struct store_job *row, struct sched_job_spec *sp)
{
    if (!(row->flags & STORE_JF_SWITCHES))
        return 0;
    if (row->spec)
        return spec_switches(row->spec, sp);
    struct store_job full;
    int rc = store_job_get(c->store, row->id, &full);
    if (rc == 0) {
        rc = spec_switches(full.spec, sp);
        store_job_release(&full);
    }
    return rc;
}

/* The core's spec straight from the row's columns (schema 2 rows). */
static int row_to_sched(const struct store_job *row, struct sched_job_spec *sp)
{
    sched_job_spec_init(sp);
    sp->id = row->id;
    str_copy(sp->project, sizeof(sp->project), row->project);
    str_copy(sp->user, sizeof(sp->user), row->user);
    str_copy(sp->tier, sizeof(sp->tier), row->tier);
    str_copy(sp->class_name, sizeof(sp->class_name), row->class_name);
    str_copy(sp->gpu_type, sizeof(sp->gpu_type), row->gpu_type);
    sp->gpus_per_node = row->gpus;
    sp->cpus_per_node = row->cpus;
    sp->mem_mb_per_node = row->mem_mb;
    sp->nodes = row->nnodes;
    sp->time_limit_ms = row->time_limit_ms;
    sp->submit_ms = row->submit_ms;
    sp->begin_ms = row->begin_ms;
    sp->signal = row->signal;
    sp->grace_ms = row->grace_ms;
    sp->has_checkpoint_signal = row->flags & STORE_JF_CHECKPOINT;
    sp->idempotent = row->flags & STORE_JF_IDEMPOTENT;
    sp->no_requeue = !(row->flags & STORE_JF_REQUEUE);
    sp->retries = row->retries;
    sp->array_id = row->array_id;
    sp->array_limit = row->array_limit;
    if (strlen(row->template_ref) < sizeof(sp->env)) /* its environment: warm nodes first */
        str_copy(sp->env, sizeof(sp->env), row->template_ref);
    return parse_core_lists(row, sp);
}

/* Rows written before schema 2: through the stored spec JSON. */
static int spec_to_sched(const struct store_job *row, struct sched_job_spec *sp)
{
    struct proto_jobspec ps;
    struct proto_error pe;
    json_t *spec = json_loads(row->spec, 0, NULL);
    int rc = spec ? proto_jobspec_load(spec, &ps, &pe) : -EINVAL;
    json_decref(spec);
    if (rc < 0)
        return rc;
    int array_limit = 0;
    if (ps.array[0]) {
        int32_t *idx = NULL;
        size_t n;
        if (proto_array_expand(ps.array, &idx, &n, &array_limit, &pe) < 0)
            array_limit = 0;
        free(idx);
    }
    ctl_spec_to_sched(&ps, row->id, row->submit_ms, row->array_id, array_limit, sp);
    proto_jobspec_release(&ps);
    return 0;
}

/* A job the core cannot take back at all (its GPU type or every fitting node is gone):
 * end it in the store, with the reason, rather than leave a row the core does not hold. */
static void end_on_restore(struct ctl *c, const struct store_job *row, int64_t now, const char *why)
{
    struct store_job j;
    if (store_job_get(c->store, row->id, &j) < 0)
        return;
    bool ran = j.state != SCHED_PENDING && j.state != SCHED_HELD;
    const char *from = sched_job_state_name((enum sched_job_state)j.state);
    enum sched_job_state to = ran ? SCHED_NODE_FAIL : SCHED_FAILED;
    j.state = to;
    j.end_ms = now;
    if (ran) {
        json_t *x = json_pack("{s:s,s:i,s:s}", "kind", "lost", "code", 0, "message", why);
        free(j.exit);
        j.exit = json_dumps(x, JSON_COMPACT);
        json_decref(x);
    }
    char detail[128];
    snprintf(detail, sizeof(detail), "cannot be restored: %s", why);
    struct store_event e = {row->id, now,       "state", from, sched_job_state_name(to),
                            "",      "restore", detail,  0};
    if (store_begin(c->store) < 0 || store_job_update(c->store, &j) < 0 ||
        store_event_add(c->store, &e) < 0)
        log_error("store_failed", "what=restore_end job=%llu", (unsigned long long)row->id);
    log_warn("restore_ended", "job=%llu state=%s error=\"%s\"", (unsigned long long)row->id,
             sched_job_state_name(to), why);
    if (row->array_id) /* its array's waiters count it as ended */
        sched_array_task_gone(c->sched, row->array_id, false, now);
    store_job_release(&j);
}

static int requeue_on_restore(struct ctl *c, const struct store_job *row, struct sched_job_spec *sp,
                              int64_t now, struct sched_error *se)
{
    log_warn("restore_requeued", "job=%llu error=\"%s\"", (unsigned long long)row->id, se->message);
    int rc = sched_job_submit(c->sched, sp, now, se);
    if (rc < 0)
        return rc;
    struct store_job j;
    if (store_job_get(c->store, row->id, &j) < 0)
        return 0;
    const char *from = sched_job_state_name((enum sched_job_state)j.state);
    j.state = SCHED_PENDING;
    free(j.alloc);
    j.alloc = NULL;
    j.nodes[0] = '\0';
    j.start_ms = 0;
    if (store_begin(c->store) == 0 && store_job_update(c->store, &j) == 0) {
        struct store_event e = {
            row->id,   now, "state",     from,
            "PENDING", "",  "node_fail", "its allocation could not be restored; requeued",
            0};
        if (store_event_add(c->store, &e) < 0)
            log_error("store_failed", "what=restore_event job=%llu", (unsigned long long)row->id);
    }
    store_job_release(&j);
    return 0;
}

static int restore_job(void *arg, const struct store_job *row)
{
    struct job_load *jl = arg;
    struct ctl *c = jl->c;
    struct sched_job_spec sp;
    struct sched_error se;
    memset(&se, 0, sizeof(se));
    if (row->id > jl->max_id)
        jl->max_id = row->id;
    int rc;
    if (row->has_core) {
        rc = row_to_sched(row, &sp);
        if (rc == 0)
            rc = row_switches(c, row, &sp);
    } else {
        struct store_job full;
        rc = store_job_get(c->store, row->id, &full);
        if (rc == 0) {
            rc = spec_to_sched(&full, &sp);
            store_job_release(&full);
        }
    }
    /* the arrays it belongs to or waits for as a whole: their tasks in all, those ended */
    if (row->array_id)
        (void)ctl_array_declare(c, row->array_id);
    for (int i = 0; rc == 0 && i < sp.ndeps; i++)
        if (sp.deps[i].array)
            (void)ctl_array_declare(c, sp.deps[i].job_id);
    if (rc < 0) {
        log_error("restore_job_failed", "job=%llu error=\"damaged spec\"",
                  (unsigned long long)row->id);
        if (row->array_id) /* it never comes back: its array's waiters count it failed */
            sched_array_task_gone(c->sched, row->array_id, false, jl->now);
        jl->failed++;
        return 0;
    }
    sp.preempt_count = row->preempt_count;
    sp.hold = row->state == SCHED_HELD;
    if (row->state == SCHED_PENDING || row->state == SCHED_HELD) {
        ctl_deps_settle(c, &sp); /* DependencyNeverSatisfied survives a restart */
        rc = sched_job_submit(c->sched, &sp, jl->now, &se);
        jl->pending++;
    } else {
        struct sched_alloc allocs[64];
        int na = parse_allocs(c, row->alloc, allocs, 64);
        rc = sched_job_restore_running(c->sched, &sp, allocs, na,
                                       row->start_ms ? row->start_ms : jl->now,
                                       (enum sched_job_state)row->state, &se);
        if (rc < 0) /* its allocation no longer fits (a node gone or shrunk): requeue it */
            rc = requeue_on_restore(c, row, &sp, jl->now, &se);
        enum sched_exit_kind kind;
        int code;
        if (rc == 0 && exit_from_json(row->exit, &kind, &code) == 0)
            rc = sched_job_ended(c->sched, row->id, kind, code, jl->now, &se);
        jl->running++;
    }
    if (rc < 0) {
        log_error("restore_job_failed", "job=%llu field=%s error=\"%s\"",
                  (unsigned long long)row->id, se.field, se.message);
        end_on_restore(c, row, jl->now, se.message);
        jl->failed++;
    }
    return 0;
}

static int restore_jobs(struct ctl *c, char *err, size_t errlen)
{
    struct job_load jl = {c, clock_now_ms(), 0, 0, 0, 0};
    struct store_job_filter f;
    memset(&f, 0, sizeof(f));
    for (int s = 0; s < SCHED_JOB_STATE_COUNT; s++)
        if (!sched_job_state_terminal((enum sched_job_state)s))
            f.state_mask |= 1u << s;
    f.limit = 2000000000;
    f.skip_spec = true; /* the core columns suffice; old rows are re-read one by one */
    int rc = store_job_list(c->store, &f, restore_job, &jl);
    if (rc < 0) {
        snprintf(err, errlen, "read jobs: %s", store_errmsg(c->store));
        return rc;
    }
    int64_t next = 0;
    if (store_counter_get(c->store, "next_job_id", &next) < 0)
        next = 1;
    c->next_job_id = (uint64_t)next > jl.max_id ? (uint64_t)next : jl.max_id + 1;
    log_info("restored", "pending=%zu running=%zu failed=%zu next_job_id=%llu", jl.pending,
             jl.running, jl.failed, (unsigned long long)c->next_job_id);
    return 0;
}

/* First start: the initial policy document's projects, or one "default" project so a
 * fresh controller accepts jobs at once. */
static int seed(struct ctl *c, struct proto_policy *initial, bool has_initial)
{
    struct sched_error se;
    int rc = ctl_policy_save(c);
    size_t n = has_initial ? initial->nprojects : 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (sched_project_upsert(c->sched, &initial->projects[i], &se) < 0) {
            log_error("seed_project_failed", "project=%s error=\"%s\"", initial->projects[i].name,
                      se.message);
            return -EINVAL;
        }
        rc = ctl_project_save(c, initial->projects[i].name, NULL);
    }
    if (rc == 0 && n == 0) {
        struct sched_project_spec p;
        sched_project_spec_init(&p);
        str_copy(p.name, sizeof(p.name), "default");
        if (sched_project_upsert(c->sched, &p, &se) < 0)
            return -EINVAL;
        rc = ctl_project_save(c, "default", NULL);
    }
    return rc;
}

int ctl_restore(struct ctl *c, char *err, size_t errlen)
{
    struct sched_policy pol;
    struct proto_policy initial;
    struct sched_error se;
    bool has_initial;
    memset(&initial, 0, sizeof(initial));
    int rc = load_policy(c, &pol, &initial, &has_initial, err, errlen);
    if (rc < 0)
        return rc;
    c->sched = sched_create(&pol, &se);
    if (!c->sched) {
        snprintf(err, errlen, "policy: %s%s%s", se.field, se.field[0] ? ": " : "", se.message);
        proto_policy_release(&initial);
        return -EINVAL;
    }
    struct project_load pl = {c, clock_now_ms(), 0, true, false};
    rc = store_project_list(c->store, restore_project, &pl);
    if (rc == 0 && pl.count == 0) {
        rc = store_begin(c->store);
        if (rc == 0)
            rc = seed(c, &initial, has_initial);
        if (rc == 0)
            rc = store_commit(c->store);
    }
    proto_policy_release(&initial);
    if (rc < 0) {
        snprintf(err, errlen, "projects: %s", store_errmsg(c->store));
        return rc;
    }
    if ((rc = store_node_list(c->store, restore_node, c)) < 0) {
        snprintf(err, errlen, "nodes: %s", store_errmsg(c->store));
        return rc;
    }
    if ((rc = restore_jobs(c, err, errlen)) < 0)
        return rc;
    if ((rc = store_commit(c->store)) < 0) { /* requeues decided while restoring */
        snprintf(err, errlen, "commit: %s", store_errmsg(c->store));
        return rc;
    }
    struct project_load real = {c, clock_now_ms(), 0, false, true};
    if ((rc = store_project_list(c->store, restore_project, &real)) < 0)
        snprintf(err, errlen, "projects: %s", store_errmsg(c->store));
    return rc;
}
