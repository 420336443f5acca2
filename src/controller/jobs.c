/*
 * jobs.c - the job endpoints of docs/api.md: submit (arrays expanded into one job per
 * index), list with filters and paging, show, cancel/hold/release/requeue, events,
 * explain and forecast. The row in the store is the job's record; the core adds the
 * live parts (reason, effective tier) of jobs it still holds.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/authz.h"
#include "controller/conn.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/jobs.h"
#include "controller/rowcache.h"
#include "controller/idem.h"
#include "controller/lease.h"
#include "controller/logarch.h"
#include "controller/deps.h"
#include "controller/loop.h"
#include "controller/network.h"
#include "controller/storage.h"
#include "controller/stream.h"
#include "controller/site.h"
#include "controller/templates.h"
#include "protocol/templates.h"
#include "controller/turns.h"
#include "controller/usage.h"
#include "util/clock.h"
#include "util/dbuf.h"
#include "util/parse.h"
#include "util/str.h"
#include "util/xalloc.h"

/* ------------------------------------------------------------------------------------ */
/* JOB object                                                                            */

static json_t *json_or_null(const char *text)
{
    json_t *v = text ? json_loads(text, 0, NULL) : NULL;
    return v ? v : json_null();
}

static void copy_spec_fields(json_t *o, const json_t *spec, const json_t *want)
{
    static const char *const keys[] = {
        "gpus",     "gpu_type", "cpus",     "mem_mb",     "nodes",    "time_limit_ms", "command",
        "script",   "workdir",  "output",   "error",      "env",      "labels",        "selectors",
        "deps",     "signal",   "grace_ms", "checkpoint", "retries",  "idempotent",    "requeue",
        "begin_ms", "array",    "secrets",  "template",   "container"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(spec, keys[i]);
        if (!want || json_object_get(want, keys[i]))
            json_object_set(o, keys[i], v ? v : json_null());
    }
    /* the pools a job needs are in its spec only when it names some: absent otherwise, as
     * in the reply to its submission (which splices the stored spec as it is) */
    json_t *storage = json_object_get(spec, "storage");
    if (storage && (!want || json_object_get(want, "storage")))
        json_object_set(o, "storage", storage);
    /* so are Slurm's switches and their wait (docs/scheduling.md §3, "Topology") */
    static const char *const topo[] = {"switches", "switches_wait_ms"};
    for (size_t i = 0; i < sizeof(topo) / sizeof(topo[0]); i++) {
        json_t *v = json_object_get(spec, topo[i]);
        if (v && !want) /* a ?fields= projection does not name them */
            json_object_set(o, topo[i], v);
    }
    /* the image it runs in, its own or its template's (docs/environments.md) */
    json_t *image = json_object_get(json_object_get(spec, "container"), "image");
    if (!want || json_object_get(want, "image"))
        json_object_set(o, "image", json_is_string(image) ? image : json_null());
    static const char *const optional[] = {"constraint", "partition", "comment",
                                           "deps_any"}; /* likewise */
    for (size_t i = 0; i < sizeof(optional) / sizeof(optional[0]); i++) {
        json_t *v = json_object_get(spec, optional[i]);
        if (v && (!want || json_object_get(want, optional[i])))
            json_object_set(o, optional[i], v);
    }
}

void ctl_env_redact(json_t *env)
{
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v) {
        (void)v;
        json_object_set_new(env, k, json_string("<hidden>"));
    }
}

void ctl_job_redact_private(json_t *o)
{
    /* a script or command may carry a token, a password, a path that says too much */
    json_object_set_new(o, "command", json_null());
    json_object_set_new(o, "script", json_null());
    json_t *env = json_object_get(o, "env");
    if (json_is_object(env))
        ctl_env_redact(env); /* the names stay: they explain a job; values may be secrets */
    json_object_set_new(o, "hidden", json_true());
}

json_t *ctl_job_json_for(struct ctl_req *r, const struct store_job *j)
{
    struct ctl_target t;
    json_t *o = ctl_job_json(r->c, j);
    ctl_req_target(r, j->project, j->user, &t);
    if (!ctl_authz_sees_job_private(&r->id, &t))
        ctl_job_redact_private(o);
    return o;
}

json_t *ctl_job_json(struct ctl *c, const struct store_job *j)
{
    json_t *spec = json_or_null(j->spec);
    json_t *o = ctl_job_json_spec(c, j, spec);
    json_decref(spec);
    return o;
}

/* Is member k of a job row wanted (want: a set of names, NULL for all)? */
static bool wanted(const json_t *want, const char *k)
{
    return !want || json_object_get(want, k);
}

static void put(json_t *o, const json_t *want, const char *k, json_t *v)
{
    if (wanted(want, k))
        json_object_set_new(o, k, v);
    else
        json_decref(v);
}

/* A job row with the members `want` names (every one when NULL): each member is made only
 * when wanted, so a narrow list (?fields=) does not pay for the others. */
static json_t *job_json_members(struct ctl *c, const struct store_job *j, const json_t *spec,
                                const json_t *want)
{
    json_t *o = json_object();
    struct sched_job_view v;
    bool live = sched_job_get(c->sched, j->id, &v) == 0;
    put(o, want, "id", json_integer((json_int_t)j->id));
    put(o, want, "name", json_string(j->name));
    put(o, want, "project", json_string(j->project));
    put(o, want, "user", json_string(j->user));
    put(o, want, "tier", json_string(j->tier));
    put(o, want, "eff_tier", json_string(live && v.eff_tier ? v.eff_tier : j->tier));
    put(o, want, "class", json_string(j->class_name));
    put(o, want, "state",
        json_string(sched_job_state_name(live ? v.state : (enum sched_job_state)j->state)));
    put(o, want, "reason",
        json_string(live && v.reason != SCHED_R_NONE ? sched_reason_name(v.reason) : ""));
    put(o, want, "stop_cause",
        json_string(live && v.stop_cause != SCHED_STOP_NONE ? sched_stop_cause_name(v.stop_cause)
                                                            : j->stop_cause));
    put(o, want, "submit_ms", json_integer(j->submit_ms));
    put(o, want, "start_ms", json_integer(j->start_ms));
    put(o, want, "end_ms", json_integer(j->end_ms));
    copy_spec_fields(o, spec, want);
    put(o, want, "array_id", json_integer((json_int_t)j->array_id));
    put(o, want, "array_index", json_integer(j->array_index));
    put(o, want, "preempt_count", json_integer(j->preempt_count));
    put(o, want, "preemptor", json_integer((json_int_t)j->preemptor));
    if (wanted(want, "allocation")) {
        json_t *al = json_or_null(j->alloc);
        json_object_set_new(o, "allocation", json_is_null(al) ? json_array() : al);
        if (json_is_null(al))
            json_decref(al);
    }
    if (wanted(want, "exit"))
        json_object_set_new(o, "exit", json_or_null(j->exit));
    if (live && wanted(want, "network")) /* what it runs under now: jobs the core holds */
        json_object_set_new(o, "network", ctl_net_job_json(c, j->id, j->project, j->class_name));
    if (wanted(want, "usage")) {
        json_t *u = json_or_null(j->usage);
        json_object_set_new(o, "usage",
                            json_is_null(u) ? json_pack("{s:i,s:i,s:i}", "cpu_ms", 0, "max_rss_mb",
                                                        0, "gpu_util", 0)
                                            : u);
    }
    return o;
}

json_t *ctl_job_json_spec(struct ctl *c, const struct store_job *j, const json_t *spec)
{
    return job_json_members(c, j, spec, NULL);
}

/* ------------------------------------------------------------------------------------ */
/* Submit                                                                                */

static int sched_err_reply(struct ctl_req *r, const struct sched_error *se)
{
    int status = se->code == -ENOSPC || se->code == -EDQUOT ? 429 : 400;
    if (se->code == -ENOMEM || strcmp(se->field, "id") == 0)
        status = 500;
    ctl_reply_errorf(r->c, r->req, status, se->field[0] ? se->field : NULL, "%s", se->message);
    return -EINVAL;
}

/* May this job receive secret `s` (its allow list, authz.c)? 0, or -EPERM answered. */
static int secret_allowed(struct ctl_req *r, const struct proto_jobspec *ps,
                          const struct store_secret *s, const char *field)
{
    struct proto_error e;
    json_t *allow = s->allow[0] ? json_loads(s->allow, 0, NULL) : NULL;
    int rc = ctl_authz_secret_use(&r->id, &r->tgt, ps->class_name, s->name, allow, field, &e);
    json_decref(allow);
    if (rc < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return -EPERM;
    }
    return 0;
}

/* The secrets a job names exist in its project now (they are opened at each launch;
 * one removed meanwhile fails that launch), and are for this job: its user or class is
 * among those each names (authz.c). Names only: no value is read here. */
static int check_secret(struct ctl_req *r, const struct proto_jobspec *ps, const char *name,
                        const char *f)
{
    struct store_secret s;
    int rc = store_secret_get(r->c->store, ps->project, name, &s);
    if (rc == 0) {
        rc = secret_allowed(r, ps, &s, f);
        store_secret_release(&s);
        return rc;
    }
    if (rc == -ENOENT)
        ctl_reply_errorf(r->c, r->req, 400, f,
                         "project '%s' has no secret '%s': its lead or an admin sets it "
                         "(docket secret set %s %s)",
                         ps->project, name, ps->project, name);
    else
        ctl_reply_errorf(r->c, r->req, 500, f, "store: %s", store_errmsg(r->c->store));
    return -EINVAL;
}

static int check_secrets(struct ctl_req *r, const struct proto_jobspec *ps)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(ps->extra, "secrets"), i, v) {
        char f[32];
        snprintf(f, sizeof(f), "secrets[%zu]", i);
        if (check_secret(r, ps, json_string_value(v), f) < 0)
            return -EINVAL;
    }
    return 0;
}

/* The projects a user belongs to, counted; the name of the first. */
struct only_project {
    int n;
    char name[SCHED_NAME_MAX];
};

static int only_project_cb(void *arg, const char *project, const char *user, const char *role)
{
    struct only_project *op = arg;
    (void)user;
    (void)role;
    if (op->n++ == 0)
        str_copy(op->name, sizeof(op->name), project);
    return 0;
}

/* Fill the defaults that depend on the cluster: owner, project, tier, class, limit. */
static int resolve_spec(struct ctl_req *r, struct proto_jobspec *ps)
{
    struct ctl *c = r->c;
    struct proto_error e;
    if (!ps->user[0])
        str_copy(ps->user, sizeof(ps->user), r->id.user);
    if (!ps->project[0]) {
        /* the user's default project (Slurm's default account), else the only one */
        int drc = store_default_project_get(c->store, ps->user, ps->project, sizeof(ps->project));
        if (drc < 0 && drc != -ENOENT) {
            ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
            return -EIO;
        }
        if (drc == -ENOENT) {
            /* a user in exactly one project needs nothing (nor does anyone on a
               one-project cluster) */
            struct only_project op = {0};
            int mrc = store_member_list(c->store, NULL, ps->user, only_project_cb, &op);
            struct sched_project_view pv;
            if (mrc < 0) {
                ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
                return -EIO;
            }
            if (op.n == 1)
                str_copy(ps->project, sizeof(ps->project), op.name);
            else if (sched_project_count(c->sched) == 1 && sched_project_get(c->sched, 0, &pv) == 0)
                str_copy(ps->project, sizeof(ps->project), pv.spec.name);
        }
        if (!ps->project[0]) {
            ctl_reply_errorf(
                c, r->req, 400, "project",
                "project is required: name one (--project, #SBATCH --account), or "
                "have an admin or a project lead set your default (docket projects default %s "
                "PROJECT)",
                ps->user);
            return -EINVAL;
        }
    }
    int pi = sched_project_find(c->sched, ps->project);
    struct sched_project_view pv;
    if (pi < 0 || sched_project_get(c->sched, (size_t)pi, &pv) < 0) {
        ctl_reply_errorf(c, r->req, 400, "project", "unknown project '%s'", ps->project);
        return -EINVAL;
    }
    /* the route's check (authz.c): a member of this project, submitting as itself */
    if (ctl_req_authorize(r, ps->project, ps->user) < 0)
        return -EPERM;
    /* paused: nothing new is admitted (jobs queued before wait with AdmissionPaused) */
    if (pv.spec.paused) {
        ctl_reply_errorf(c, r->req, 409, "project", "project '%s' is paused: it admits no new jobs",
                         ps->project);
        return -EBUSY;
    }
    struct proto_error se;
    if (ctl_site_job_spec(c, ps, &se) < 0) { /* GPU names, the partition (site.c) */
        ctl_reply_error(c, r->req, &se);
        return -EINVAL;
    }
    if (!ps->tier[0])
        str_copy(ps->tier, sizeof(ps->tier), pv.spec.tier);
    if (ctl_storage_job_spec(c, ps, &se) < 0) { /* its pools' node labels as selectors */
        ctl_reply_error(c, r->req, &se);
        return -EINVAL;
    }
    const struct sched_policy *pol = sched_get_policy(c->sched);
    if (!ps->class_name[0])
        str_copy(ps->class_name, sizeof(ps->class_name), pol->default_class);
    if (check_secrets(r, ps) < 0) /* after the class: a secret may be for a class */
        return -EINVAL;
    /* what the job will get, written down: the class's default limit, the policy's
     * signal and grace (capped by the class) */
    if (ps->signal == 0)
        ps->signal = pol->default_signal;
    for (int i = 0; i < pol->nclasses; i++) {
        const struct sched_class_spec *cl = &pol->classes[i];
        if (strcmp(cl->name, ps->class_name) != 0)
            continue;
        if (ps->time_limit_ms == 0)
            ps->time_limit_ms = cl->default_limit_ms;
        if (ps->grace_ms < 0)
            ps->grace_ms = pol->default_grace_ms;
        if (cl->max_grace_ms > 0 && ps->grace_ms > cl->max_grace_ms)
            ps->grace_ms = cl->max_grace_ms;
    }
    if (ctl_site_job_check(c, ps, &e) < 0) {
        ctl_reply_error(c, r->req, &e);
        return -EINVAL;
    }
    /* the environment, resolved now: the job keeps this version whatever changes after */
    if (ctl_template_resolve(c, ps, pv.spec.group, &e) < 0) {
        ctl_reply_error(c, r->req, &e);
        return -EINVAL;
    }
    /* the registry's credentials (the job's or its template's) are a secret like the
     * others: the job must be one that may receive it */
    const char *auth = json_string_value(
        json_object_get(json_object_get(ps->extra, "container"), "registry_auth"));
    if (auth && check_secret(r, ps, auth, "registry_auth") < 0)
        return -EINVAL;
    return 0;
}

/* A dependency on a whole array (Slurm's afterok:ARRAY_ID): 0 to keep it (the array is
 * live, or ended as it can never meet it), 2 to drop it (met), 1 when it was met under
 * '?' (the job has no dependencies left), -1 after answering an error. */
static int resolve_array_dep(struct ctl_req *r, struct proto_jobspec *ps, const struct proto_dep *d,
                             const char *f)
{
    switch (ctl_array_dep_state(r->c, d->job, ctl_dep_kind(d->type))) {
    case CTL_ARRAY_LIVE:
    case CTL_ARRAY_NEVER: /* kept: the job waits as DependencyNeverSatisfied */
        return 0;
    case CTL_ARRAY_MET:
        if (!ps->deps_any)
            return 2;
        ps->ndeps = 0;
        ps->deps_any = false;
        return 1;
    case CTL_ARRAY_NONE:
        ctl_reply_errorf(r->c, r->req, 400, f, "no such array %llu", (unsigned long long)d->job);
        return -1;
    case CTL_ARRAY_WRITING:
        ctl_reply_errorf(r->c, r->req, 409, f,
                         "array %llu is still being submitted: depend on it once its "
                         "submission has answered",
                         (unsigned long long)d->job);
        return -1;
    case CTL_ARRAY_ERROR:
    default:
        ctl_reply_errorf(r->c, r->req, 500, f, "store: cannot read array %llu",
                         (unsigned long long)d->job);
        return -1;
    }
}

/* Dependencies on jobs that already ended are settled here (the core only knows live
 * jobs): satisfied ones are dropped; impossible ones are kept, and the job stays pending
 * as Slurm's DependencyNeverSatisfied until it is cancelled. */
int ctl_job_resolve_deps(struct ctl_req *r, struct proto_jobspec *ps)
{
    int out = 0;
    for (int i = 0; i < ps->ndeps; i++) {
        struct proto_dep *d = &ps->deps[i];
        struct sched_job_view v;
        char f[32];
        snprintf(f, sizeof(f), "deps[%d].job", i);
        if (d->array) {
            int rc = resolve_array_dep(r, ps, d, f);
            if (rc < 0)
                return rc;
            if (rc == 1) /* met, and with '?' that is all it takes */
                return 0;
            if (rc == 0)
                ps->deps[out++] = *d;
            continue;
        }
        if (sched_job_get(r->c->sched, d->job, &v) == 0) {
            ps->deps[out++] = *d;
            continue;
        }
        struct store_job row;
        if (store_job_get(r->c->store, d->job, &row) < 0) {
            ctl_reply_errorf(r->c, r->req, 400, f, "no such job %llu", (unsigned long long)d->job);
            return -EINVAL;
        }
        if (!sched_job_state_terminal(row.state)) {
            /* it ended in the core, and the cycle that writes how has not run yet: run
             * it, then read the row again (else afterok on a job that just completed
             * read as never satisfiable) */
            store_job_release(&row);
            ctl_cycle_now(r->c);
            if (store_job_get(r->c->store, d->job, &row) < 0) {
                ctl_reply_errorf(r->c, r->req, 400, f, "no such job %llu",
                                 (unsigned long long)d->job);
                return -EINVAL;
            }
        }
        bool ok = row.state == SCHED_COMPLETED;
        store_job_release(&row);
        bool met = strcmp(d->type, "afterany") == 0 || strcmp(d->type, "after") == 0 ||
                   (strcmp(d->type, "afterok") == 0) == ok;
        if (met && ps->deps_any) { /* Slurm's '?': one met is all it takes */
            ps->ndeps = 0;
            ps->deps_any = false;
            return 0;
        }
        if (!met) /* kept: the job waits as DependencyNeverSatisfied (ctl_deps_settle) */
            ps->deps[out++] = *d;
    }
    ps->ndeps = out;
    return 0;
}

/* The scheduling fields in the row's columns (what a restart reads back). */
void ctl_job_fill_core(struct store_job *row, const struct proto_jobspec *ps, int array_limit)
{
    struct dbuf b;
    row->has_core = true;
    row->gpus = ps->gpus;
    row->cpus = ps->cpus;
    row->nnodes = ps->nodes;
    row->signal = ps->signal;
    row->retries = ps->retries;
    row->array_limit = array_limit;
    row->flags = (ps->checkpoint ? STORE_JF_CHECKPOINT : 0) |
                 (ps->idempotent ? STORE_JF_IDEMPOTENT : 0) | (ps->requeue ? STORE_JF_REQUEUE : 0) |
                 (ps->hold ? STORE_JF_HOLD : 0) | (ps->switches ? STORE_JF_SWITCHES : 0);
    row->mem_mb = ps->mem_mb;
    row->time_limit_ms = ps->time_limit_ms;
    row->begin_ms = ps->begin_ms;
    row->grace_ms = ps->grace_ms;
    str_copy(row->gpu_type, sizeof(row->gpu_type), ps->gpu_type);
    dbuf_init(&b, sizeof(row->deps) - 1);
    for (int i = 0; i < ps->ndeps; i++)
        dbuf_printf(&b, "%s%s:%llu%s", i ? (ps->deps_any ? "?" : ",") : "", ps->deps[i].type,
                    (unsigned long long)ps->deps[i].job, ps->deps[i].array ? "_*" : "");
    str_copy(row->deps, sizeof(row->deps), b.data);
    dbuf_release(&b);
    dbuf_init(&b, sizeof(row->selectors) - 1);
    /* the feature constraint first, under a key no label has ('@'), so a restart
       restores it from the column (restore.c parse_core_lists); it has no ',' or '=' */
    if (ps->constraint[0])
        dbuf_printf(&b, "@constraint=%s", ps->constraint);
    for (int i = 0; i < ps->nselectors; i++)
        dbuf_printf(&b, "%s%s%s=%s", i || ps->constraint[0] ? "," : "", ps->selectors[i].key,
                    ps->selectors[i].negate ? "!" : "", ps->selectors[i].value);
    str_copy(row->selectors, sizeof(row->selectors), b.data);
    dbuf_release(&b);
}

static int insert_job(struct ctl *c, const struct proto_jobspec *ps, const char *spec_text,
                      uint64_t id, uint64_t array_id, int index, int limit, int64_t now,
                      struct store_job *out)
{
    struct store_job row;
    memset(&row, 0, sizeof(row));
    ctl_job_fill_core(&row, ps, limit);
    row.id = id;
    row.array_id = array_id;
    row.array_index = index;
    str_copy(row.name, sizeof(row.name), ps->name);
    str_copy(row.project, sizeof(row.project), ps->project);
    str_copy(row.user, sizeof(row.user), ps->user);
    str_copy(row.tier, sizeof(row.tier), ps->tier);
    str_copy(row.class_name, sizeof(row.class_name), ps->class_name);
    const json_t *tpl = json_object_get(ps->extra, "template");
    str_copy(row.template_ref, sizeof(row.template_ref),
             json_is_string(tpl) ? json_string_value(tpl) : "");
    const json_t *image = json_object_get(json_object_get(ps->extra, "container"), "image");
    str_copy(row.image, sizeof(row.image), json_is_string(image) ? json_string_value(image) : "");
    row.state = ps->hold ? SCHED_HELD : SCHED_PENDING;
    row.submit_ms = now;
    row.spec = (char *)spec_text;
    row.spec_id = array_id; /* an array's tasks share the spec stored once */
    int rc = store_job_insert(c->store, &row);
    if (rc == 0) {
        struct store_event ev = {id, now, "submit", "", sched_job_state_name(row.state),
                                 "", "",  "",       0};
        rc = store_event_add(c->store, &ev);
    }
    row.spec = NULL;
    *out = row;
    return rc;
}

static size_t arrays_unqueued(struct ctl *c, const char *project, const char *user);

/* The queue caps (sched_queue_room; docs/security.md "Queue flood"): n jobs (an array's
 * tasks each) with the tasks of arrays still being written, all or nothing, before
 * anything is written. Admins are exempt from the per-user cap, as from the rate limit,
 * not from a project's. 0, or -EDQUOT after answering 429 naming the cap. */
static int check_queue_room(struct ctl_req *r, const struct proto_jobspec *ps, size_t n)
{
    struct sched_error se;
    memset(&se, 0, sizeof(se));
    size_t np = n + arrays_unqueued(r->c, ps->project, NULL);
    size_t nu = n + arrays_unqueued(r->c, NULL, ps->user);
    if (sched_queue_room(r->c->sched, ps->project, ps->user, np, nu, r->id.role == CTL_ROLE_ADMIN,
                         &se) == 0)
        return 0;
    ctl_reply_errorf(r->c, r->req, 429, se.field, "%s", se.message);
    return -EDQUOT;
}

/* Take tasks first .. first+n-1 back out of the core, without decisions (they were never
 * stored, so no event, state change or command may name them). */
static void withdraw_tasks(struct ctl *c, uint64_t first, size_t n)
{
    struct sched_error se;
    for (size_t k = 0; k < n; k++)
        if (sched_job_withdraw(c->sched, first + k, &se) < 0) {
            log_error("withdraw_failed", "job=%llu error=\"%s\"", (unsigned long long)(first + k),
                      se.message);
            ctl_store_diverged(c, "submit_withdraw", first + k);
        }
}

/* Submit every task into the core (which validates them against the cluster); on a
 * failure the ones already in are withdrawn so the core matches the rolled-back store. */
static int submit_tasks(struct ctl_req *r, struct proto_jobspec *ps, const int32_t *idx, size_t n,
                        int limit, int64_t now, uint64_t first)
{
    struct sched_job_spec sp;
    struct sched_error se;
    for (size_t i = 0; i < n; i++) {
        ctl_spec_to_sched(ps, first + i, now, idx ? first : 0, limit, &sp);
        ctl_deps_settle(r->c, &sp);
        if (sched_job_submit(r->c->sched, &sp, now, &se) < 0) {
            withdraw_tasks(r->c, first, i);
            return sched_err_reply(r, &se);
        }
    }
    return 0;
}

/* The audit entry of a submission: its spec, without its script and command and with the
 * values of env hidden (the trail is read by viewers and operators, who may not see
 * them). */
static int audit_submit(struct ctl *c, const char *actor, const char *target,
                        const struct proto_jobspec *ps)
{
    json_t *copy = proto_jobspec_to_json(ps);
    if (copy)
        ctl_job_redact_private(copy);
    int rc = copy ? ctl_audit(c, actor, "job.submit", target, NULL, copy, NULL) : -ENOMEM;
    json_decref(copy);
    return rc;
}

/* The JOB text of a job just submitted, without building it as JSON objects (the hot
 * path of submission): its live fields, then the members of the stored spec text spliced
 * in. That text is a compact JSON object written by proto_jobspec_to_json, whose keys are
 * the JOB's own spec fields (plus "hold"), so none repeats; the live fields are numbers
 * and names (str_is_name), which need no escaping. */
static void job_text(struct ctl *c, const struct store_job *row, const char *spec_text,
                     const char *tail, struct dbuf *out)
{
    struct sched_job_view v;
    bool live = sched_job_get(c->sched, row->id, &v) == 0;
    enum sched_job_state st = live ? v.state : (enum sched_job_state)row->state;
    dbuf_printf(out,
                "{\"id\":%llu,\"eff_tier\":\"%s\",\"state\":\"%s\",\"reason\":\"%s\","
                "\"stop_cause\":\"\",\"submit_ms\":%lld,\"start_ms\":0,\"end_ms\":0,"
                "\"array_id\":%llu,\"array_index\":%d,\"preempt_count\":0,"
                "\"preemptor\":0,\"allocation\":[],\"exit\":null,"
                "\"usage\":{\"cpu_ms\":0,\"max_rss_mb\":0,\"gpu_util\":0},",
                (unsigned long long)row->id, live && v.eff_tier ? v.eff_tier : row->tier,
                sched_job_state_name(st),
                live && v.reason != SCHED_R_NONE ? sched_reason_name(v.reason) : "",
                (long long)row->submit_ms, (unsigned long long)row->array_id, row->array_index);
    if (!tail[0]) {
        dbuf_puts(out, spec_text + 1); /* past the spec's '{', through its '}' */
        return;
    }
    size_t n = strlen(spec_text); /* past the spec's '{', up to its '}'; then the tail */
    dbuf_printf(out, "%.*s%s%s}", (int)(n - 2), spec_text + 1, n > 2 ? "," : "", tail);
}

/* What GET /v1/jobs/ID shows of a job besides the members job_text writes and the stored
 * spec has (the spec-derived members it lacks as null, the image, the network it runs
 * under): computed once for a submission's rows (they share spec, project and class) and
 * written after the spec, so the reply to a submission and a show of the job agree.
 * Without the brace: "\"k\":v,..." or "". NULL when out of memory. */
static char *reply_tail(struct ctl *c, const struct store_job *row, const char *spec_text)
{
    static const char *const written[] = {"id",         "eff_tier",    "state",         "reason",
                                          "stop_cause", "submit_ms",   "start_ms",      "end_ms",
                                          "array_id",   "array_index", "preempt_count", "preemptor",
                                          "allocation", "exit",        "usage",         "script",
                                          "env"};
    json_t *spec = json_loads(spec_text, 0, NULL);
    json_t *full = spec ? ctl_job_json_spec(c, row, spec) : NULL;
    json_t *tail = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(full, k, v) {
        bool skip = json_object_get(spec, k) != NULL;
        for (size_t i = 0; !skip && i < sizeof(written) / sizeof(written[0]); i++)
            skip = strcmp(k, written[i]) == 0;
        if (!skip)
            json_object_set(tail, k, v);
    }
    char *text = full ? json_dumps(tail, JSON_COMPACT) : NULL;
    json_decref(spec);
    json_decref(full);
    json_decref(tail);
    if (text) { /* "{...}" -> "..." */
        size_t n = strlen(text);
        memmove(text, text + 1, n - 2);
        text[n - 2] = '\0';
    }
    return text;
}

/* 201 with {"job": JOB} or {"array_id", "jobs": [JOB...]}, from what was just written
 * (an array's JOBs without script and env, as in lists). 0, or -E2BIG without replying. */
static int submit_reply(struct ctl_req *r, const struct store_job *rows, size_t n,
                        const char *spec_text, bool array)
{
    struct dbuf b;
    dbuf_init(&b, (size_t)256 << 20);
    if (array)
        dbuf_printf(&b, "{\"array_id\":%llu,\"jobs\":[", (unsigned long long)rows[0].id);
    else
        dbuf_puts(&b, "{\"job\":");
    char *tail = reply_tail(r->c, &rows[0], spec_text);
    for (size_t i = 0; tail && i < n && !b.failed; i++) {
        if (i)
            dbuf_puts(&b, ",");
        job_text(r->c, &rows[i], spec_text, tail, &b);
    }
    dbuf_puts(&b, array ? "]}" : "}");
    int rc = !tail ? -ENOMEM : b.failed ? -E2BIG : 0;
    free(tail);
    if (rc == 0)
        ctl_reply_raw(r->c, r->req, 201, "application/json", b.data, b.len);
    dbuf_release(&b);
    return rc;
}

/* The spec as stored, and for an array the same without script and env (lists, reply). */
static int spec_texts(const struct proto_jobspec *ps, bool array, char **text, char **lean)
{
    json_t *spec = proto_jobspec_to_json(ps);
    *text = spec ? json_dumps(spec, JSON_COMPACT) : NULL;
    *lean = NULL;
    if (spec && array) {
        json_object_del(spec, "script");
        json_object_del(spec, "env");
        *lean = json_dumps(spec, JSON_COMPACT);
    }
    json_decref(spec);
    return *text && (!array || *lean) ? 0 : -ENOMEM;
}

/* The submission rate limit (issue 11): a token bucket per user, `submit_rate` jobs a
 * second with bursts of `submit_burst`; a request takes a token, refused or not, and is
 * admitted while one is left. An array then takes one more per task (rate_charge): the
 * bucket may go below zero, so an array of any allowed size passes, and the user's next
 * submission waits until the refill has paid its tasks back (issue 33: counted as one
 * request, arrays queued a million jobs in 19 s). Admins are exempt (they are trusted, and
 * tools run as them). 0, or -EAGAIN after answering 429 with Retry-After. */
static int rate_limit(struct ctl_req *r)
{
    struct ctl *c = r->c;
    if (c->cfg.submit_rate <= 0 || r->id.role == CTL_ROLE_ADMIN)
        return 0;
    if (!c->submit_buckets)
        c->submit_buckets = json_object();
    int64_t now = clock_mono_ms();
    double burst = (double)c->cfg.submit_burst, rate = (double)c->cfg.submit_rate;
    json_t *b = json_object_get(c->submit_buckets, r->id.user);
    double tokens = b ? json_real_value(json_array_get(b, 0)) : burst;
    int64_t last = b ? json_integer_value(json_array_get(b, 1)) : now;
    tokens += (double)(now - last) * rate / 1000.0;
    if (tokens > burst)
        tokens = burst;
    bool ok = tokens >= 1.0;
    if (ok)
        tokens -= 1.0;
    json_object_set_new(c->submit_buckets, r->id.user, json_pack("[f,I]", tokens, (json_int_t)now));
    if (ok)
        return 0;
    /* (a debt of 10,000 tasks at 20/s is 500 s) */
    int64_t wait_s = (int64_t)((1.0 - tokens) / rate) + 1;
    char ra[24];
    snprintf(ra, sizeof(ra), "%lld", (long long)wait_s);
    evhttp_add_header(evhttp_request_get_output_headers(r->req), "Retry-After", ra);
    ctl_reply_errorf(c, r->req, 429, NULL,
                     "user '%s' submits faster than %lld jobs a second (bursts of %lld; an "
                     "array's tasks count each): retry in %lld s",
                     r->id.user, (long long)c->cfg.submit_rate, (long long)c->cfg.submit_burst,
                     (long long)wait_s);
    return -EAGAIN;
}

/* An admitted array's other tasks, taken from its user's bucket (it may go below zero). */
static void rate_charge(struct ctl_req *r, size_t tasks)
{
    struct ctl *c = r->c;
    json_t *b = c->submit_buckets ? json_object_get(c->submit_buckets, r->id.user) : NULL;
    if (c->cfg.submit_rate <= 0 || r->id.role == CTL_ROLE_ADMIN || !b || tasks == 0)
        return;
    json_array_set_new(b, 0, json_real(json_real_value(json_array_get(b, 0)) - (double)tasks));
}

/* ------------------------------------------------------------------------------------ */
/* Big arrays (docs/controller.md "Big submissions")                                     */

/* An array of more than CTL_ARRAY_SLICE_TASKS tasks is written in slices, one per loop
 * turn, each in its own transaction: the first (in the request's own turn) with the spec,
 * the counter and the marker (store_array_writing_put), the last with the marker cleared
 * and the audit row. Its tasks stay outside the core meanwhile, so none can start, and a
 * restart rolls a marked array back. Once the last slice is on disk the 201 starts, and
 * each later turn adds a slice of tasks to the core and sends their JOBs as one chunk.
 * When a slice fails, what the earlier ones wrote is deleted as many tasks a turn, the
 * marker last (ARRAY_DISCARD), and then the 500 leaves. */
enum array_phase { ARRAY_WRITE, ARRAY_SYNC, ARRAY_REPLY, ARRAY_DISCARD };

struct ctl_array {
    struct ctl *c;
    struct evhttp_request *req; /* NULL once the client left, or after the reply */
    bool started;               /* the 201's status line has left */
    bool closed;                /* ... and then the client left: req is to be ended */
    enum array_phase phase;
    struct event *ev;
    struct proto_jobspec ps;
    int32_t *idx;
    size_t n, written, added;
    size_t refused; /* tasks the core refused in ARRAY_REPLY (each ended FAILED) */
    int limit;
    int64_t now;
    uint64_t first, gen;
    char *text, *lean;
    char *tail; /* reply_tail of its tasks, made with the first slice of the reply */
    char actor[64];
    struct ctl_idem idem; /* written with the last slice ("" for none) */
    char why[256];        /* ARRAY_DISCARD: why the write failed, for the 500 */
    struct ctl_array *next;
};

/* Tasks of arrays in flight of `project` (or of `user`) not in the core yet (queue room
 * counts them). */
static size_t arrays_unqueued(struct ctl *c, const char *project, const char *user)
{
    size_t n = 0;
    for (struct ctl_array *a = c->arrays; a; a = a->next)
        if (a->phase != ARRAY_DISCARD && (!project || strcmp(a->ps.project, project) == 0) &&
            (!user || strcmp(a->ps.user, user) == 0))
            n += a->n - a->added;
    return n;
}

bool ctl_array_key_writing(struct ctl *c, const char *user, const char *key)
{
    for (struct ctl_array *a = c->arrays; a; a = a->next)
        if (a->idem.key[0] && strcmp(a->idem.key, key) == 0 && strcmp(a->actor, user) == 0)
            return true;
    return false;
}

static void array_free(struct ctl_array *a)
{
    struct ctl_array **pp = &a->c->arrays;
    while (*pp && *pp != a)
        pp = &(*pp)->next;
    if (*pp)
        *pp = a->next;
    if (a->ev)
        event_free(a->ev);
    proto_jobspec_release(&a->ps);
    free(a->idx);
    free(a->text);
    free(a->lean);
    free(a->tail);
    free(a);
}

static void array_client_left(struct evhttp_connection *con, void *arg)
{
    struct ctl_array *a = arg;
    (void)con;
    if (a->started)
        a->closed = true; /* the detached request is freed by evhttp_send_reply_end */
    else
        a->req = NULL; /* libevent frees an unanswered request with its connection */
}

/* Stop watching the client's connection (before the request is answered or ended). */
static void array_unwatch(struct ctl_array *a)
{
    struct evhttp_connection *con =
        a->req && !a->closed ? evhttp_request_get_connection(a->req) : NULL;
    if (con)
        ctl_conn_watch(a->c, con, NULL, NULL);
}

static void array_again(struct ctl_array *a, int64_t ms)
{
    /* a timer, not event_active: the loop polls its sockets before the next slice */
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    event_add(a->ev, &tv);
}

/* Write the next slice's task rows (and with the last, clear the marker and audit) in the
 * savepoint the caller opened: at most CTL_ARRAY_SLICE_TASKS tasks or about
 * CTL_ARRAY_SLICE_US from t0. 0 or -errno. */
static int array_write_slice(struct ctl_array *a, int64_t t0)
{
    struct ctl *c = a->c;
    size_t end = a->written + CTL_ARRAY_SLICE_TASKS;
    int rc = 0;
    if (end > a->n)
        end = a->n;
    while (rc == 0 && a->written < end) {
        struct store_job row;
        size_t i = a->written;
        rc = insert_job(c, &a->ps, a->text, a->first + i, a->first, a->idx[i], a->limit, a->now,
                        &row);
        if (rc == 0 && ++a->written % 32 == 0 && clock_mono_us() - t0 > CTL_ARRAY_SLICE_US)
            break;
    }
    if (rc == 0 && a->written == a->n) {
        char target[48];
        snprintf(target, sizeof(target), "array:%llu", (unsigned long long)a->first);
        rc = store_array_writing_clear(c->store, a->first);
        if (rc == 0)
            rc = ctl_idem_record(c, a->actor, &a->idem, a->first, true, a->n);
        if (rc == 0)
            rc = audit_submit(c, a->actor, target, &a->ps);
    }
    return rc;
}

/* A slice failed (its savepoint is rolled back): what earlier slices committed is deleted
 * from the next turn on, CTL_ARRAY_SLICE_TASKS tasks a turn, the marker last
 * (array_discard_turn), and then the client hears 500. Deleted in one turn, the 18,944
 * tasks written before a fault at task 19,000 held the loop 0.26-0.38 s (sanitizer build);
 * a step of 256 takes 5-14 ms. */
static void array_fail(struct ctl_array *a)
{
    struct ctl *c = a->c;
    str_copy(a->why, sizeof(a->why), store_errmsg(c->store));
    log_error("array_write_failed", "array=%llu written=%zu tasks=%zu error=\"%s\"",
              (unsigned long long)a->first, a->written, a->n, a->why);
    a->phase = ARRAY_DISCARD;
    array_again(a, c->cfg.test_array_slice_delay_ms);
}

/* One step of a failed array's cleanup in its own savepoint; once nothing of it is left,
 * the 500. If a step fails docketd stops, and its restart rolls the rest back by the
 * marker, which is still there. */
static void array_discard_turn(struct ctl_array *a)
{
    struct ctl *c = a->c;
    size_t deleted = 0;
    bool done = false;
    int rc = store_savepoint(c->store);
    if (rc == 0) {
        rc = store_array_discard_step(c->store, a->first, CTL_ARRAY_SLICE_TASKS, &deleted, &done);
        if (rc == 0)
            rc = store_release(c->store);
        else
            (void)store_rollback_to(c->store);
    }
    c->turn.array_discarded += (int)deleted;
    if (rc < 0)
        ctl_store_diverged(c, "array_discard", a->first);
    ctl_commit_soon(c);
    if (rc == 0 && !done) {
        array_again(a, c->cfg.test_array_slice_delay_ms);
        return;
    }
    log_info("array_discarded", "array=%llu", (unsigned long long)a->first);
    array_unwatch(a);
    if (a->req)
        ctl_reply_errorf(c, a->req, 500, NULL, "store: %s (nothing of array %llu was kept)", a->why,
                         (unsigned long long)a->first);
    a->req = NULL;
    array_free(a);
}

static void array_write_turn(struct ctl_array *a)
{
    struct ctl *c = a->c;
    int rc = store_savepoint(c->store);
    if (rc < 0) {
        array_fail(a);
        return;
    }
    rc = array_write_slice(a, clock_mono_us());
    if (rc == 0)
        rc = store_release(c->store);
    if (rc < 0) {
        (void)store_rollback_to(c->store);
        array_fail(a);
        return;
    }
    ctl_commit_soon(c);
    if (a->written == a->n)
        a->phase = ARRAY_SYNC;
    array_again(a, a->written == a->n ? 0 : c->cfg.test_array_slice_delay_ms);
}

/* The core refused a task the database holds already (the policy or the project changed
 * while the array was written): it ends FAILED, as a restart ends a job nothing can hold.
 * The first refusal of an array is logged, the count with its last slice (a removed class
 * refuses every task: one line each would be 100,000 lines for the largest array). */
static void array_task_refused(struct ctl_array *a, uint64_t id, const struct sched_error *se)
{
    struct ctl *c = a->c;
    struct store_job j;
    char detail[160];
    if (a->refused++ == 0)
        log_warn("array_task_refused", "job=%llu array=%llu field=%s error=\"%s\"",
                 (unsigned long long)id, (unsigned long long)a->first, se->field, se->message);
    snprintf(detail, sizeof(detail), "refused by the scheduler: %s", se->message);
    int rc = store_savepoint(c->store);
    if (rc == 0 && (rc = store_job_get(c->store, id, &j)) == 0) {
        const char *from = sched_job_state_name((enum sched_job_state)j.state);
        j.state = SCHED_FAILED;
        j.end_ms = clock_now_ms();
        rc = store_job_update(c->store, &j);
        store_job_release(&j);
        if (rc == 0)
            rc = ctl_job_event(c, id, "state", from, "FAILED", "", "submit", detail);
    }
    sched_array_task_gone(c->sched, a->first, false, clock_now_ms()); /* its waiters count it */
    if (rc == 0)
        rc = store_release(c->store);
    if (rc < 0)
        ctl_store_diverged(c, "array_task_refused", id);
    ctl_commit_soon(c);
}

/* One slice of the reply: the next tasks into the core, their JOBs as one chunk. */
static void array_reply_turn(struct ctl_array *a)
{
    struct ctl *c = a->c;
    struct dbuf b;
    dbuf_init(&b, (size_t)64 << 20);
    if (a->added == 0)
        dbuf_printf(&b, "{\"array_id\":%llu,\"jobs\":[", (unsigned long long)a->first);
    struct sched_error de;
    if (a->added == 0 && sched_array_declare(c->sched, a->first, (int)a->n, 0, 0, &de) < 0)
        log_error("array_declare_failed", "array=%llu error=\"%s\"", (unsigned long long)a->first,
                  de.message); /* stored whole: dependencies on it wait for every task */
    size_t end = a->added + CTL_ARRAY_SLICE_TASKS;
    if (end > a->n)
        end = a->n;
    for (; a->added < end; a->added++) {
        size_t i = a->added;
        struct sched_job_spec sp;
        struct sched_error se;
        struct store_job row;
        memset(&row, 0, sizeof(row));
        memset(&se, 0, sizeof(se));
        row.id = a->first + i;
        row.array_id = a->first;
        row.array_index = a->idx[i];
        row.submit_ms = a->now;
        row.state = a->ps.hold ? SCHED_HELD : SCHED_PENDING;
        str_copy(row.tier, sizeof(row.tier), a->ps.tier);
        ctl_spec_to_sched(&a->ps, row.id, a->now, a->first, a->limit, &sp);
        ctl_deps_settle(c, &sp);
        if (sched_job_submit(c->sched, &sp, a->now, &se) < 0) {
            array_task_refused(a, row.id, &se);
            row.state = SCHED_FAILED;
        }
        if (!a->tail) {
            str_copy(row.project, sizeof(row.project), a->ps.project);
            str_copy(row.class_name, sizeof(row.class_name), a->ps.class_name);
            a->tail = xnonnull(reply_tail(c, &row, a->lean), "array reply");
        }
        if (i)
            dbuf_puts(&b, ",");
        job_text(c, &row, a->lean, a->tail, &b);
    }
    bool done = a->added == a->n;
    if (done)
        dbuf_puts(&b, "]}");
    if (a->req && !a->closed && !b.failed) {
        struct evbuffer *out = xnonnull(evbuffer_new(), "array reply");
        evbuffer_add(out, b.data, b.len);
        evhttp_send_reply_chunk(a->req, out);
        evbuffer_free(out);
    } else if (b.failed) {
        log_error("array_reply_failed", "array=%llu error=\"reply slice too large\"",
                  (unsigned long long)a->first);
    }
    dbuf_release(&b);
    ctl_cycle_soon(c);
    if (!done) {
        array_again(a, 0);
        return;
    }
    c->metrics.submissions += a->n - a->refused; /* a refused task was never submitted */
    if (a->refused)
        log_warn("array_tasks_refused", "array=%llu refused=%zu tasks=%zu",
                 (unsigned long long)a->first, a->refused, a->n);
    if (a->req) {
        array_unwatch(a);
        evhttp_send_reply_end(a->req);
        a->req = NULL;
    }
    array_free(a);
}

/* Wait for the last slice's commit to reach the disk, then start the 201. */
static void array_sync_turn(struct ctl_array *a)
{
    struct ctl *c = a->c;
    if (store_in_tx(c->store)) { /* the last slice commits with this turn's writes */
        array_again(a, 1);
        return;
    }
    if (a->gen == 0)
        a->gen = c->commit_gen;
    if (c->synced_gen < a->gen) {
        array_again(a, 1);
        return;
    }
    a->phase = ARRAY_REPLY;
    if (a->req) {
        evhttp_add_header(evhttp_request_get_output_headers(a->req), "Content-Type",
                          "application/json");
        c->metrics.http_by_code[201]++;
        evhttp_send_reply_start(a->req, 201, "Created");
        a->started = true;
    }
    array_reply_turn(a);
}

static void array_turn_body(struct ctl_array *a);

static void array_turn(evutil_socket_t fd, short what, void *arg)
{
    struct ctl_array *a = arg;
    struct ctl *c = a->c;
    (void)fd;
    (void)what;
    int64_t t0 = ctl_turn_enter(c);
    array_turn_body(a); /* (may free a) */
    ctl_turn_leave(c, CTL_TURN_ARRAY, t0);
}

static void array_turn_body(struct ctl_array *a)
{
    if (a->closed && a->req) { /* the client left during the reply: the rest goes nowhere */
        evhttp_send_reply_end(a->req);
        a->req = NULL;
    }
    if (a->phase == ARRAY_WRITE)
        array_write_turn(a);
    else if (a->phase == ARRAY_DISCARD)
        array_discard_turn(a);
    else if (a->phase == ARRAY_SYNC)
        array_sync_turn(a);
    else
        array_reply_turn(a);
}

void ctl_arrays_stop_all(struct ctl *c)
{
    while (c->arrays) {
        struct ctl_array *a = c->arrays;
        array_unwatch(a);
        if (a->req && a->started)
            evhttp_send_reply_end(a->req);         /* cut short; every row is on disk already */
        else if (a->req && a->phase == ARRAY_SYNC) /* whole, the marker gone: it stays */
            ctl_reply_errorf(c, a->req, 503, NULL,
                             "docketd is shutting down: array %llu (jobs %llu-%llu) was stored "
                             "whole and will run, but its reply is lost: do not submit it "
                             "again (GET /v1/jobs?array_id=%llu lists it)",
                             (unsigned long long)a->first, (unsigned long long)a->first,
                             (unsigned long long)(a->first + a->n - 1),
                             (unsigned long long)a->first);
        else if (a->req)
            ctl_reply_errorf(c, a->req, 503, NULL,
                             "docketd is shutting down: array %llu was not stored",
                             (unsigned long long)a->first);
        a->req = NULL;
        array_free(a);
    }
}

/* The first slice, in the request's savepoint: the spec, the marker, the counter past
 * every id the array reserves, the first rows. Then the next turns take over. 0, or -1
 * after answering (nothing is kept: the request's savepoint rolls back). */
static int array_begin(struct ctl_req *r, struct proto_jobspec *ps, int32_t **idx, size_t n,
                       int limit, int64_t now, const struct ctl_idem *idem)
{
    struct ctl *c = r->c;
    struct sched_job_spec sp;
    struct sched_error se;
    uint64_t first = c->next_job_id;
    memset(&se, 0, sizeof(se));
    ctl_spec_to_sched(ps, first, now, first, limit, &sp);
    ctl_deps_settle(c, &sp);
    if (sched_job_validate(c->sched, &sp, &se) < 0)
        return sched_err_reply(r, &se);
    struct ctl_array *a = xnonnull(calloc(1, sizeof(*a)), "array");
    *a = (struct ctl_array){
        .c = c, .req = r->req, .n = n, .limit = limit, .now = now, .first = first};
    int rc = spec_texts(ps, true, &a->text, &a->lean);
    if (rc == 0)
        rc = store_spec_put(c->store, first, a->text, a->lean);
    if (rc == 0)
        rc = store_array_writing_put(c->store, first, (int64_t)n, now);
    if (rc == 0)
        rc = store_counter_set(c->store, "next_job_id", (int64_t)(first + n));
    a->ps = *ps;
    a->idx = *idx;
    str_copy(a->actor, sizeof(a->actor), r->id.user);
    a->idem = *idem;
    if (rc == 0)
        rc = array_write_slice(a, clock_mono_us());
    if (rc < 0) {
        ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
        a->ps.extra = NULL; /* still the caller's */
        a->idx = NULL;
        array_free(a);
        return -1;
    }
    ps->extra = NULL; /* the array owns them now */
    *idx = NULL;
    c->next_job_id = first + n; /* reserved: a second array takes the ids after */
    a->ev = xnonnull(event_new(c->base, -1, 0, array_turn, a), "array event");
    a->next = c->arrays;
    c->arrays = a;
    struct evhttp_connection *con = evhttp_request_get_connection(r->req);
    if (con)
        ctl_conn_watch(c, con, array_client_left, a);
    log_info("array_writing", "array=%llu tasks=%zu user=%s", (unsigned long long)first, n,
             r->id.user);
    if (a->written == a->n) /* (a slice as big as the array: only with a bigger slice) */
        a->phase = ARRAY_SYNC;
    array_again(a, c->cfg.test_array_slice_delay_ms);
    return 0;
}

void h_jobs_submit(struct ctl_req *r)
{
    struct ctl *c = r->c;
    struct proto_jobspec ps;
    struct proto_error e;
    int64_t now = clock_now_ms();
    struct ctl_idem idem;
    /* a repeat is answered before the rate limit: it writes nothing */
    if (ctl_idem_begin(r, &idem) != 0 || rate_limit(r) < 0)
        return;
    if (proto_jobspec_parse_text(r->body ? r->body : "", r->body_len, now, &ps, &e) < 0) {
        ctl_reply_error(c, r->req, &e);
        return;
    }
    int32_t *idx = NULL;
    size_t n = 1;
    int limit = 0;
    if (resolve_spec(r, &ps) < 0 || ctl_job_resolve_deps(r, &ps) < 0)
        goto out;
    if (ps.array[0] && proto_array_expand(ps.array, &idx, &n, &limit, &e) < 0) {
        ctl_reply_error(c, r->req, &e);
        goto out;
    }
    if ((int64_t)n > c->cfg.max_array_tasks) {
        ctl_reply_errorf(c, r->req, 400, "array",
                         "array of %zu tasks is over this cluster's max_array_tasks (%lld): "
                         "submit it in parts of at most %lld tasks",
                         n, (long long)c->cfg.max_array_tasks, (long long)c->cfg.max_array_tasks);
        goto out;
    }
    if (check_queue_room(r, &ps, n) < 0)
        goto out;
    rate_charge(r, n - 1);                  /* the first took its token in rate_limit */
    if (idx && n > CTL_ARRAY_SLICE_TASKS) { /* written across loop turns */
        (void)array_begin(r, &ps, &idx, n, limit, now, &idem);
        goto out;
    }
    uint64_t first = c->next_job_id;
    if (submit_tasks(r, &ps, idx, n, limit, now, first) < 0)
        goto out;
    char *text, *lean;
    struct store_job *rows = calloc(n, sizeof(*rows));
    int rc = spec_texts(&ps, idx != NULL, &text, &lean);
    if (rc == 0 && !rows)
        rc = -ENOMEM;
    /* an array's spec once, not once per task (schema 7) */
    if (rc == 0 && idx)
        rc = store_spec_put(c->store, first, text, lean);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = insert_job(c, &ps, text, first + i, idx ? first : 0, idx ? idx[i] : 0, limit, now,
                        &rows[i]);
    }
    if (rc == 0)
        rc = store_counter_set(c->store, "next_job_id", (int64_t)(first + n));
    if (rc == 0) /* with the jobs, in their transaction: both or neither */
        rc = ctl_idem_record(c, r->id.user, &idem, first, idx != NULL, n);
    char target[48];
    snprintf(target, sizeof(target), idx ? "array:%llu" : "job:%llu", (unsigned long long)first);
    if (rc == 0)
        rc = audit_submit(c, r->id.user, target, &ps);
    /* the reply is made before the jobs count as submitted: one that cannot be made
     * fails the request like a failed write (issue 11: it left 10,000 ghosts in the core) */
    if (rc == 0 && submit_reply(r, rows, n, idx ? lean : text, idx != NULL) < 0) {
        ctl_reply_errorf(c, r->req, 500, NULL, "reply too large");
        withdraw_tasks(c, first, n);
    } else if (rc < 0) { /* the request's writes are rolled back: the core forgets the jobs */
        ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
        withdraw_tasks(c, first, n);
    } else {
        c->next_job_id = first + n;
        c->metrics.submissions += n;
        ctl_cycle_soon(c);
    }
    free(rows);
    free(text);
    free(lean);
out:
    free(idx);
    proto_jobspec_release(&ps);
}

/* ------------------------------------------------------------------------------------ */
/* List, show                                                                            */

static int parse_one_state(const char *t, uint32_t *mask)
{
    if (strcmp(t, "active") == 0 || strcmp(t, "terminal") == 0) {
        bool want_term = strcmp(t, "terminal") == 0;
        for (int i = 0; i < SCHED_JOB_STATE_COUNT; i++)
            if (sched_job_state_terminal((enum sched_job_state)i) == want_term)
                *mask |= 1u << i;
        return 0;
    }
    char up[32];
    size_t k = 0;
    for (; t[k] && k < sizeof(up) - 1; k++)
        up[k] = (char)(t[k] >= 'a' && t[k] <= 'z' ? t[k] - 32 : t[k]);
    up[k] = '\0';
    int st = sched_job_state_parse(up);
    if (st < 0)
        return -EINVAL;
    *mask |= 1u << st;
    return 0;
}

/* "PENDING,RUNNING", "active", "terminal", "all" -> a state mask (0 = all). */
static int parse_states(const char *s, uint32_t *mask)
{
    *mask = 0;
    if (strcmp(s, "all") == 0)
        return 0;
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        char tok[32];
        if (n == 0 || n >= sizeof(tok))
            return -EINVAL;
        memcpy(tok, s, n);
        tok[n] = '\0';
        if (parse_one_state(tok, mask) < 0)
            return -EINVAL;
        s += n + (comma ? 1 : 0);
    }
    return *mask ? 0 : -EINVAL;
}

/* A job list in flight (ctl_list, stream.c): its filter, with the strings it owns, and
 * who asked (what each row shows depends on it: ctl_authz_sees_job_private). */
struct job_list {
    struct ctl *c;
    struct store_job_filter f;
    char *strs[7];
    struct ctl_list *l; /* during a fetch */
    struct ctl_ident id;
    json_t *projects; /* the caller's project roles (owned) */
    json_t *fields;   /* ?fields=: the members each row keeps, or NULL for all (owned) */
    char *fields_q;   /* ?fields= as given, or NULL (owned): part of each row's cache key */
    struct dbuf key;  /* the row cache's key of the row being listed (rowcache.c) */
};

/* The members of a job row (ctl_job_json_spec) that ?fields= may name. Those marked
 * `spec` come from the spec stored at submission; the others from the row's columns and
 * the core, so a list that names none of the first skips reading the spec at all. */
static const struct {
    const char *name;
    bool spec;
} job_fields[] = {{"id", false},
                  {"name", false},
                  {"project", false},
                  {"user", false},
                  {"tier", false},
                  {"eff_tier", false},
                  {"class", false},
                  {"state", false},
                  {"reason", false},
                  {"stop_cause", false},
                  {"submit_ms", false},
                  {"start_ms", false},
                  {"end_ms", false},
                  {"gpus", false},
                  {"gpu_type", false},
                  {"cpus", false},
                  {"mem_mb", false},
                  {"nodes", false},
                  {"time_limit_ms", false},
                  {"command", true},
                  {"workdir", true},
                  {"output", true},
                  {"error", true},
                  {"labels", true},
                  {"selectors", true},
                  {"deps", true},
                  {"signal", true},
                  {"grace_ms", true},
                  {"checkpoint", true},
                  {"retries", true},
                  {"idempotent", true},
                  {"requeue", true},
                  {"begin_ms", true},
                  {"array", true},
                  {"secrets", true},
                  {"template", true},
                  {"storage", true},
                  {"constraint", true},
                  {"partition", true},
                  {"array_id", false},
                  {"array_index", false},
                  {"preempt_count", false},
                  {"preemptor", false},
                  {"allocation", false},
                  {"exit", false},
                  {"usage", false},
                  {"network", false},
                  {"container", true},
                  {"image", true},
                  {"hidden", false}};

/* "id,state,gpus" -> a set of member names, every one known (-EINVAL naming it otherwise);
 * *spec says whether one of them needs the stored spec. */
static int parse_fields(const char *s, json_t **out, bool *spec, char *bad, size_t badlen)
{
    json_t *set = json_object();
    *spec = false;
    while (*s) {
        size_t n = strcspn(s, ",");
        size_t i = 0;
        while (i < sizeof(job_fields) / sizeof(job_fields[0]) &&
               (strlen(job_fields[i].name) != n || strncmp(job_fields[i].name, s, n)))
            i++;
        if (i == sizeof(job_fields) / sizeof(job_fields[0])) {
            snprintf(bad, badlen, "%.*s", (int)(n < 64 ? n : 64), s);
            json_decref(set);
            return -EINVAL;
        }
        json_object_set_new(set, job_fields[i].name, json_true());
        *spec = *spec || job_fields[i].spec;
        s += n + (s[n] == ',');
    }
    *out = set;
    return 0;
}

/* The scheduling members of a spec, from the row's columns (schema 2): what a list that
 * skipped the spec shows for them. */
static json_t *spec_from_columns(const struct store_job *j)
{
    return json_pack("{s:i,s:s,s:i,s:I,s:i,s:I}", "gpus", j->gpus, "gpu_type", j->gpu_type, "cpus",
                     j->cpus, "mem_mb", (json_int_t)j->mem_mb, "nodes", j->nnodes, "time_limit_ms",
                     (json_int_t)j->time_limit_ms);
}

static json_t *list_row_json(struct job_list *jl, const struct store_job *j)
{
    json_t *spec, *o;
    if (jl->f.skip_spec && !j->has_core) { /* a row older than the columns: read it whole */
        struct store_job whole;
        if (store_job_get(jl->c->store, j->id, &whole) < 0)
            return NULL;
        spec = json_or_null(whole.spec);
        o = job_json_members(jl->c, &whole, spec, jl->fields);
        store_job_release(&whole);
    } else {
        spec = jl->f.skip_spec ? spec_from_columns(j) : json_or_null(j->spec);
        o = job_json_members(jl->c, j, spec, jl->fields);
    }
    json_decref(spec);
    return o;
}

static void key_bytes(struct dbuf *k, const void *p, size_t n)
{
    dbuf_append(k, &n, sizeof(n)); /* length first: no two inputs read alike */
    dbuf_append(k, p, n);
}

static void key_str(struct dbuf *k, const char *s)
{
    key_bytes(k, s ? s : "", s ? strlen(s) + 1 : 0); /* (NULL and "" differ) */
}

static void key_int(struct dbuf *k, int64_t v)
{
    dbuf_append(k, &v, sizeof(v));
}

/* The row cache's key of job j's row (rowcache.c): every input list_row reads to make it,
 * in a fixed order. What is not here must not change a row: job_json_members reads the
 * row's columns and texts, the core's view of the job and, for a live job, its network;
 * list_row the caller's view (sees_private) and ?fields=. false when the row is not to
 * be cached (a row older than the core columns is read whole again). */
static bool row_key(struct job_list *jl, const struct store_job *j, bool sees_private)
{
    struct dbuf *k = &jl->key;
    dbuf_reset(k);
    if (jl->f.skip_spec && !j->has_core)
        return false;
    key_int(k, sees_private);
    key_str(k, jl->fields_q);
    key_int(k, (int64_t)j->id);
    key_int(k, (int64_t)j->array_id);
    key_int(k, j->array_index);
    key_str(k, j->name);
    key_str(k, j->project);
    key_str(k, j->user);
    key_str(k, j->tier);
    key_str(k, j->class_name);
    key_int(k, j->state);
    key_str(k, j->stop_cause);
    key_int(k, j->submit_ms);
    key_int(k, j->start_ms);
    key_int(k, j->end_ms);
    key_int(k, j->preempt_count);
    key_int(k, (int64_t)j->preemptor);
    key_str(k, jl->f.skip_spec ? NULL : j->spec);
    key_int(k, j->gpus); /* the columns a list without the spec shows */
    key_str(k, j->gpu_type);
    key_int(k, j->cpus);
    key_int(k, j->mem_mb);
    key_int(k, j->nnodes);
    key_int(k, j->time_limit_ms);
    key_str(k, j->alloc);
    key_str(k, j->exit);
    key_str(k, j->usage);
    struct sched_job_view v;
    bool live = sched_job_get(jl->c->sched, j->id, &v) == 0;
    key_int(k, live);
    if (live) {
        key_str(k, v.eff_tier);
        key_int(k, v.state);
        key_int(k, v.reason);
        key_int(k, v.stop_cause);
        if (wanted(jl->fields, "network")) /* (its inputs, no JSON made: issue 40) */
            ctl_net_job_key(jl->c, j->id, j->project, j->class_name, k);
    }
    return !k->failed;
}

static int list_row(void *arg, const struct store_job *j)
{
    struct job_list *jl = arg;
    struct ctl_target t = {j->project, j->user, ctl_prole_in(jl->projects, j->project)};
    bool sees_private = ctl_authz_sees_job_private(&jl->id, &t);
    bool keyed = row_key(jl, j, sees_private);
    size_t n;
    const char *text =
        keyed ? ctl_rowcache_get(jl->c->rowcache, j->id, jl->key.data, jl->key.len, &n) : NULL;
    if (text)
        return ctl_list_row(jl->l, text, n, (int64_t)j->id);
    json_t *o = list_row_json(jl, j);
    if (!o)
        return -EIO;
    if (!sees_private)
        ctl_job_redact_private(o);
    /* lists leave the two big members out: GET /v1/jobs/ID has them */
    json_object_del(o, "script");
    json_object_del(o, "env");
    if (jl->fields) { /* what redaction added and was not asked for */
        if (!json_object_get(jl->fields, "hidden"))
            json_object_del(o, "hidden");
        if (!json_object_get(jl->fields, "command"))
            json_object_del(o, "command");
    }
    char *made = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!made)
        return -ENOMEM;
    n = strlen(made);
    if (keyed)
        ctl_rowcache_put(jl->c->rowcache, j->id, jl->key.data, jl->key.len, made, n);
    int rc = ctl_list_row(jl->l, made, n, (int64_t)j->id);
    free(made);
    return rc;
}

static int list_fetch(struct ctl_list *l, void *arg, int64_t after, int max_rows)
{
    struct job_list *jl = arg;
    jl->l = l;
    jl->f.limit = max_rows;
    jl->f.after = (uint64_t)after;
    return store_job_list(jl->c->store, &jl->f, list_row, jl);
}

static void list_free(void *arg)
{
    struct job_list *jl = arg;
    for (size_t i = 0; i < sizeof(jl->strs) / sizeof(jl->strs[0]); i++)
        free(jl->strs[i]);
    json_decref(jl->projects);
    json_decref(jl->fields);
    free(jl->fields_q);
    dbuf_release(&jl->key);
    free(jl);
}

static int query_u64(struct ctl_req *r, const char *key, int64_t min, int64_t max, int64_t *out)
{
    const char *v = ctl_query(r, key);
    if (!v)
        return 0;
    if (parse_int64(v, min, max, out) < 0) {
        ctl_reply_errorf(r->c, r->req, 400, key, "%s must be an integer between %lld and %lld", key,
                         (long long)min, (long long)max);
        return -EINVAL;
    }
    return 0;
}

void h_jobs_list(struct ctl_req *r)
{
    struct store_job_filter f;
    memset(&f, 0, sizeof(f));
    const char *st = ctl_query(r, "state");
    if (parse_states(st ? st : "active", &f.state_mask) < 0) {
        ctl_reply_errorf(r->c, r->req, 400, "state", "unknown state in '%.64s'", st);
        return;
    }
    f.project = ctl_query(r, "project");
    f.user = ctl_query(r, "user");
    f.tier = ctl_query(r, "tier");
    f.class_name = ctl_query(r, "class");
    f.node = ctl_query(r, "node");
    f.name = ctl_query(r, "name");
    f.template_ref = ctl_query(r, "template");
    char tname[PROTO_NAME_MAX];
    int tversion;
    struct proto_error te;
    if (f.template_ref &&
        proto_template_ref_parse(f.template_ref, "template", tname, &tversion, &te) < 0) {
        ctl_reply_error(r->c, r->req, &te);
        return;
    }
    int64_t limit = 100, after = 0, array_id = 0, since = 0;
    size_t max_bytes;
    if (ctl_list_params(r, &limit, &after, &max_bytes) < 0 ||
        query_u64(r, "array_id", 0, INT64_MAX, &array_id) < 0 ||
        query_u64(r, "since_ms", 0, INT64_MAX, &since) < 0)
        return;
    const char *order = ctl_query(r, "order");
    if (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
        ctl_reply_errorf(r->c, r->req, 400, "order", "order must be asc or desc");
        return;
    }
    f.desc = order && strcmp(order, "desc") == 0;
    f.array_id = (uint64_t)array_id;
    f.since_ms = since;
    f.lean = true;
    json_t *fields = NULL;
    const char *fq = ctl_query(r, "fields");
    bool need_spec = true;
    char bad[72];
    if (fq && parse_fields(fq, &fields, &need_spec, bad, sizeof(bad)) < 0) {
        ctl_reply_errorf(r->c, r->req, 400, "fields", "unknown field '%s' in fields", bad);
        return;
    }
    f.skip_spec = !need_spec;
    struct job_list *jl = calloc(1, sizeof(*jl));
    if (!jl) {
        json_decref(fields);
        ctl_reply_errorf(r->c, r->req, 500, NULL, "out of memory");
        return;
    }
    jl->fields = fields;
    jl->fields_q = fq ? xstrdup(fq) : NULL;
    dbuf_init(&jl->key, 0);
    /* the query strings die with the request's query: the list keeps copies */
    const char **fs[7] = {&f.project, &f.user, &f.tier,        &f.class_name,
                          &f.node,    &f.name, &f.template_ref};
    for (int i = 0; i < 7; i++)
        if (*fs[i]) {
            jl->strs[i] = xstrdup(*fs[i]);
            *fs[i] = jl->strs[i];
        }
    if (!r->c->rowcache)
        r->c->rowcache = ctl_rowcache_create(CTL_ROWCACHE_BYTES);
    jl->c = r->c;
    jl->f = f;
    jl->id = r->id;
    struct ctl_target t;
    ctl_req_target(r, "", NULL, &t); /* loads the caller's projects into r->my_projects */
    jl->projects = r->my_projects ? json_deep_copy(r->my_projects) : json_object();
    ctl_list_start(r->c, r->req, "jobs", limit, after, max_bytes, list_fetch, list_free, jl);
}

/* A task of an array whose rows are still being written: not there yet. */
static bool being_written(struct ctl *c, uint64_t id)
{
    for (struct ctl_array *a = c->arrays; a; a = a->next)
        if (a->phase != ARRAY_REPLY && id >= a->first && id < a->first + a->n)
            return true;
    return false;
}

/* Load the job named by arg[0] or answer 404. */
int ctl_job_arg(struct ctl_req *r, struct store_job *row)
{
    int64_t id;
    if (parse_int64(r->arg[0], 1, INT64_MAX, &id) < 0 || being_written(r->c, (uint64_t)id) ||
        store_job_get(r->c->store, (uint64_t)id, row) < 0) {
        ctl_reply_errorf(r->c, r->req, 404, NULL, "no such job '%.32s'", r->arg[0]);
        return -ENOENT;
    }
    return 0;
}

void h_job_show(struct ctl_req *r)
{
    struct store_job row;
    if (ctl_job_arg(r, &row) < 0)
        return;
    /* at once when nothing of the job is ahead of the disk (docs/controller.md "Reads
     * that leave at once") */
    json_t *job = ctl_job_json_for(r, &row);
    json_t *archived = ctl_logarch_job_json(r->c, row.id); /* where its logs went */
    if (archived)
        json_object_set_new(job, "log_archive", archived);
    ctl_reply_json_job(r->c, r->req, 200, json_pack("{s:o}", "job", job), &row);
    store_job_release(&row);
}

/* ------------------------------------------------------------------------------------ */
/* Actions                                                                               */

static int action_reason(struct ctl_req *r, char *reason, size_t len)
{
    static const char *const known[] = {"reason", NULL};
    struct proto_error e;
    reason[0] = '\0';
    json_t *b = ctl_body_json(r, true);
    if (!b)
        return -EINVAL;
    int rc = proto_check_fields(b, "", known, &e);
    json_t *v = json_object_get(b, "reason");
    if (rc == 0 && v && (!json_is_string(v) || json_string_length(v) > 1024))
        rc = proto_errorf(&e, 400, NULL, "reason", "reason must be a string of at most 1024 bytes");
    if (rc == 0 && v)
        str_copy(reason, len, json_string_value(v));
    json_decref(b);
    if (rc < 0)
        ctl_reply_error(r->c, r->req, &e);
    return rc;
}

static int persist_state(struct ctl *c, uint64_t id, enum sched_job_state to)
{
    struct store_job row;
    int rc = store_job_get(c->store, id, &row);
    if (rc < 0)
        return rc;
    row.state = to;
    rc = store_job_update(c->store, &row);
    store_job_release(&row);
    return rc;
}

static int do_action(struct ctl_req *r, const char *act, uint64_t id, const char *reason)
{
    struct ctl *c = r->c;
    struct sched_error se;
    int64_t now = clock_now_ms();
    int rc;
    memset(&se, 0, sizeof(se));
    if (strcmp(act, "cancel") == 0)
        rc = sched_job_cancel(c->sched, id, now, &se);
    else if (strcmp(act, "hold") == 0)
        rc = sched_job_hold(c->sched, id, now, &se);
    else if (strcmp(act, "release") == 0)
        rc = sched_job_release(c->sched, id, now, &se);
    else
        rc = sched_job_requeue(c->sched, id, now, &se);
    if (rc < 0) {
        ctl_reply_errorf(c, r->req, 409, NULL, "cannot %s job %llu: %s", act,
                         (unsigned long long)id, se.message);
        return rc;
    }
    if (strcmp(act, "hold") == 0 || strcmp(act, "release") == 0) {
        enum sched_job_state to = act[0] == 'h' ? SCHED_HELD : SCHED_PENDING;
        rc = persist_state(c, id, to);
        /* who held it and at what level: a release needs as much (ctl_authz_release) */
        if (rc == 0 && act[0] == 'h')
            rc = store_hold_put(c->store, id, r->id.user,
                                ctl_level_name(ctl_authz_level(&r->id, &r->tgt)));
        else if (rc == 0)
            rc = store_hold_delete(c->store, id);
        if (rc == 0)
            rc = ctl_job_event(c, id, act, act[0] == 'h' ? "PENDING" : "HELD",
                               sched_job_state_name(to), "", r->id.user, reason);
        if (rc < 0) { /* the core changed already: stop rather than disagree */
            ctl_store_diverged(c, "job_action", id);
            ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
            return rc;
        }
    }
    ctl_cycle_now(c); /* apply what the action decided before answering */
    return 0;
}

/* A hold put by a lead, operator or admin is lifted only at that level or above. */
static int release_allowed(struct ctl_req *r, uint64_t id)
{
    char by[64], level[16];
    struct proto_error e;
    int rc = store_hold_get(r->c->store, id, by, sizeof(by), level, sizeof(level));
    if (rc == -ENOENT)
        return 0;
    if (rc < 0) {
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return rc;
    }
    rc = ctl_authz_release(&r->id, &r->tgt, by, ctl_level_parse(level), &e);
    if (rc < 0)
        ctl_reply_error(r->c, r->req, &e);
    return rc;
}

/* The body of POST /v1/jobs/ID/signal: the signal (1..64), whom it is for, a reason. */
static int signal_body(struct ctl_req *r, int *sig, char *to, size_t tolen, char *reason,
                       size_t len)
{
    static const char *const known[] = {"signal", "to", "reason", NULL};
    struct proto_error e;
    int64_t n = 0;
    memset(&e, 0, sizeof(e));
    json_t *b = ctl_body_json(r, false);
    if (!b)
        return -EINVAL;
    int rc = proto_check_fields(b, "", known, &e);
    json_t *t = json_object_get(b, "to"), *why = json_object_get(b, "reason");
    if (rc == 0)
        rc = proto_get_int(json_object_get(b, "signal"), "signal", 1, 64, &n, &e);
    if (rc == 0 && t &&
        (!json_is_string(t) ||
         (strcmp(json_string_value(t), "all") && strcmp(json_string_value(t), "batch") &&
          strcmp(json_string_value(t), "steps"))))
        rc = proto_errorf(&e, 400, NULL, "to", "to must be all, batch or steps");
    if (rc == 0 && why && (!json_is_string(why) || json_string_length(why) > 1024))
        rc = proto_errorf(&e, 400, NULL, "reason", "reason must be a string of at most 1024 bytes");
    if (rc == 0) {
        *sig = (int)n;
        str_copy(to, tolen, t ? json_string_value(t) : "all");
        str_copy(reason, len, why ? json_string_value(why) : "");
    }
    json_decref(b);
    if (rc < 0)
        ctl_reply_error(r->c, r->req, &e);
    return rc;
}

/* POST /v1/jobs/ID/signal (scancel --signal): a signal for a running job that does not
 * stop it, to each of its nodes' agents (the batch shell's node alone for "batch"). */
static void job_signal(struct ctl_req *r, const struct store_job *row)
{
    struct ctl *c = r->c;
    struct sched_job_view v;
    char to[16], reason[1100], target[32];
    int sig = 0; /* set by signal_body; -O3 cannot see it is */
    if (signal_body(r, &sig, to, sizeof(to), reason, sizeof(reason)) < 0)
        return;
    if (sched_job_get(c->sched, row->id, &v) < 0 || v.state != SCHED_RUNNING) {
        ctl_reply_errorf(c, r->req, 409, NULL, "job %llu is %s: only a running job takes a signal",
                         (unsigned long long)row->id, sched_job_state_name(row->state));
        return;
    }
    snprintf(target, sizeof(target), "job:%llu", (unsigned long long)row->id);
    json_t *what = json_pack("{s:i,s:s}", "signal", sig, "to", to);
    if (ctl_audit(c, r->id.user, "job.signal", target, NULL, what, reason) < 0) {
        json_decref(what);
        ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
        return;
    }
    json_decref(what);
    for (int i = 0; i < v.nallocs && (i == 0 || strcmp(to, "batch")); i++) {
        struct ctl_node *n = ctl_node_at(c, v.allocs[i].node);
        if (n)
            ctl_node_command(c, n, row->id,
                             json_pack("{s:s,s:I,s:i,s:s}", "type", "notify", "job",
                                       (json_int_t)row->id, "signal", sig, "to", to));
    }
    ctl_reply_json(c, r->req, 200, json_pack("{s:o}", "job", ctl_job_json_for(r, row)));
}

void h_job_action(struct ctl_req *r)
{
    const char *act = r->arg[1];
    struct store_job row;
    char reason[1100];
    if (strcmp(act, "cancel") && strcmp(act, "hold") && strcmp(act, "release") &&
        strcmp(act, "requeue") && strcmp(act, "signal")) {
        ctl_reply_errorf(r->c, r->req, 404, NULL, "no such job action '%.32s'", act);
        return;
    }
    if (ctl_job_arg(r, &row) < 0)
        return;
    if (strcmp(act, "signal") == 0) {
        job_signal(r, &row);
        store_job_release(&row);
        return;
    }
    if (strcmp(act, "release") == 0 && release_allowed(r, row.id) < 0) {
        store_job_release(&row);
        return;
    }
    if (action_reason(r, reason, sizeof(reason)) < 0) {
        store_job_release(&row);
        return;
    }
    json_t *before = ctl_job_json(r->c, &row);
    if (sched_job_state_terminal((enum sched_job_state)row.state)) {
        ctl_reply_errorf(r->c, r->req, 409, NULL, "job %llu is already %s",
                         (unsigned long long)row.id, sched_job_state_name(row.state));
    } else if (do_action(r, act, row.id, reason) == 0) {
        struct store_job now_row;
        if (store_job_get(r->c->store, row.id, &now_row) == 0) {
            json_t *after = ctl_job_json_for(r, &now_row);
            char target[32], action[32];
            snprintf(target, sizeof(target), "job:%llu", (unsigned long long)row.id);
            snprintf(action, sizeof(action), "job.%s", act);
            json_t *b = json_pack("{s:O}", "state", json_object_get(before, "state"));
            json_t *a = json_pack("{s:O}", "state", json_object_get(after, "state"));
            int rc = ctl_audit(r->c, r->id.user, action, target, b, a, reason);
            json_decref(b);
            json_decref(a);
            if (rc < 0) {
                ctl_store_diverged(r->c, "job_action_audit", row.id);
                json_decref(after);
                ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
            } else {
                ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "job", after));
            }
            store_job_release(&now_row);
        }
    }
    json_decref(before);
    store_job_release(&row);
}

/* ------------------------------------------------------------------------------------ */
/* Events, explain, forecast                                                             */

/* A job's events in flight (ctl_list, stream.c). */
struct event_list {
    struct ctl *c;
    uint64_t job;
    struct ctl_list *l; /* during a fetch */
};

static int event_row(void *arg, const struct store_event *e)
{
    struct event_list *el = arg;
    return ctl_list_row_json(el->l,
                             json_pack("{s:I,s:s,s:s,s:s,s:s,s:s,s:s}", "time_ms",
                                       (json_int_t)e->time_ms, "type", e->type, "from", e->from,
                                       "to", e->to, "node", e->node, "reason", e->reason, "detail",
                                       e->detail),
                             e->id);
}

static int event_fetch(struct ctl_list *l, void *arg, int64_t after, int max_rows)
{
    struct event_list *el = arg;
    el->l = l;
    return store_event_list(el->c->store, el->job, after, max_rows, event_row, el);
}

/* GET /v1/jobs/ID/events: paged like every list (limit default 1000) */
void h_job_events(struct ctl_req *r)
{
    struct store_job row;
    int64_t limit = 1000, after;
    size_t max_bytes;
    if (ctl_job_arg(r, &row) < 0)
        return;
    uint64_t job = row.id;
    store_job_release(&row);
    if (ctl_list_params(r, &limit, &after, &max_bytes) < 0)
        return;
    struct event_list *el = xnonnull(calloc(1, sizeof(*el)), "event list");
    el->c = r->c;
    el->job = job;
    ctl_list_start(r->c, r->req, "events", limit, after, max_bytes, event_fetch, free, el);
}

static json_t *explain_pending(const struct sched_explain *x)
{
    json_t *o = json_object();
    json_object_set_new(o, "position",
                        json_pack("{s:I,s:I,s:I,s:I}", "overall", (json_int_t)x->position, "of",
                                  (json_int_t)x->pending_total, "in_tier",
                                  (json_int_t)x->tier_position, "tier_total",
                                  (json_int_t)x->tier_total));
    if (x->reason == SCHED_R_QUOTA_LIMIT || x->reason == SCHED_R_JOB_LIMIT)
        json_object_set_new(o, "limit",
                            json_pack("{s:s,s:I,s:I,s:I}", "name", x->limit_name, "value",
                                      (json_int_t)x->limit_value, "in_use",
                                      (json_int_t)x->limit_in_use, "request",
                                      (json_int_t)x->limit_request));
    json_t *ahead = json_array();
    for (int i = 0; i < x->nahead; i++)
        json_array_append_new(ahead, json_pack("{s:I,s:s,s:s,s:i,s:i,s:s}", "job",
                                               (json_int_t)x->ahead[i].id, "project",
                                               x->ahead[i].project, "tier", x->ahead[i].tier,
                                               "gpus", x->ahead[i].gpus, "nodes", x->ahead[i].nodes,
                                               "reason", sched_reason_name(x->ahead[i].reason)));
    json_object_set_new(o, "ahead", ahead);
    json_t *nodes = json_array();
    for (int i = 0; i < x->nnodes; i++) {
        const struct sched_explain_node *n = &x->nodes[i];
        json_array_append_new(
            nodes, json_pack("{s:s,s:s,s:i,s:i,s:b,s:b,s:I}", "name", n->name, "state",
                             sched_node_state_name(n->state), "gpus_free", n->gpus_free,
                             "gpus_total", n->gpus_total, "fits_now", n->fits_now, "reserved",
                             n->reserved, "free_at_ms", (json_int_t)n->free_at_ms));
    }
    json_object_set_new(o, "nodes", nodes);
    json_object_set_new(o, "nodes_matching", json_integer(x->nodes_matching));
    if (x->topo_mode != SCHED_TOPO_NONE) /* a gang placed by switch (docs/scheduling.md §3) */
        json_object_set_new(o, "topology",
                            json_pack("{s:s,s:s,s:s,s:i}", "level", x->topo_level, "mode",
                                      proto_topo_mode_name(x->topo_mode), "best_domain",
                                      x->topo_best_domain, "best_free", x->topo_best_free));
    json_object_set_new(o, "forecast_start_ms", json_integer(x->forecast_start_ms));
    json_object_set_new(o, "reservation", json_boolean(x->has_reservation));
    json_object_set_new(o, "starving", json_boolean(x->starving));
    json_object_set_new(o, "starve_at_ms", json_integer(x->starve_at_ms));
    json_t *w = json_array();
    for (int i = 0; i < x->nvictims; i++)
        json_array_append_new(w, json_integer((json_int_t)x->waiting_on_victims[i]));
    json_object_set_new(o, "waiting_on", w);
    return o;
}

static json_t *explain_json(const struct sched_explain *x)
{
    json_t *o = json_object();
    json_object_set_new(o, "job", json_integer((json_int_t)x->id));
    json_object_set_new(o, "state", json_string(sched_job_state_name(x->state)));
    json_object_set_new(o, "reason", json_string(x->reason ? sched_reason_name(x->reason) : ""));
    json_object_set_new(o, "sentence", json_string(x->sentence));
    json_object_set_new(o, "priority",
                        json_pack("{s:s,s:s,s:i,s:i,s:{s:f,s:f,s:f},s:I,s:I,s:f}", "tier", x->tier,
                                  "eff_tier", x->eff_tier, "tier_rank", x->tier_rank, "boost",
                                  x->boost_levels, "fairshare", "usage", x->fairshare_usage,
                                  "guarantee", x->fairshare_guarantee, "share", x->fairshare_share,
                                  "submit_ms", (json_int_t)x->submit_ms, "age_ms",
                                  (json_int_t)x->age_ms, "multifactor", x->mf_priority));
    return o;
}

/* A running job on a silent node: when its lease there runs out (lease.c), or NULL. */
static json_t *explain_lease(struct ctl *c, uint64_t id)
{
    struct sched_job_view v;
    if (sched_job_get(c->sched, id, &v) < 0)
        return NULL;
    for (int k = 0; k < v.nallocs; k++) {
        struct ctl_node *n = ctl_node_at(c, v.allocs[k].node);
        int64_t end = n ? ctl_lease_end_ms(c, n, id) : 0;
        if (end > 0)
            return json_pack("{s:s,s:I,s:I}", "node", n->name, "silent_ms",
                             (json_int_t)(clock_mono_ms() - n->last_hb_ms), "ends_ms",
                             (json_int_t)end);
    }
    return NULL;
}

/* Whether a job waits on its node building its template's environment: a "preparing"
 * event after its run's start, and no "prepared" since. (The agent says the job started
 * when its supervisor did, before the set-up the prepare is part of.) */
struct preparing {
    char env[96], node[64];
};

static int preparing_row(void *arg, const struct store_event *e)
{
    struct preparing *p = arg;
    if (strcmp(e->type, "start") == 0 || strcmp(e->type, "prepared") == 0) {
        p->env[0] = '\0';
    } else if (strcmp(e->type, "preparing") == 0) {
        str_copy(p->env, sizeof(p->env), e->detail);
        str_copy(p->node, sizeof(p->node), e->node);
    }
    return 0;
}

static json_t *explain_preparing(struct ctl *c, uint64_t id)
{
    struct preparing p = {"", ""};
    if (store_event_list(c->store, id, 0, 0, preparing_row, &p) < 0 || !p.env[0])
        return NULL;
    return json_pack("{s:s,s:s}", "preparing", p.env, "node", p.node);
}

void h_job_explain(struct ctl_req *r)
{
    struct store_job row;
    struct sched_explain *x;
    if (ctl_job_arg(r, &row) < 0)
        return;
    x = calloc(1, sizeof(*x));
    if (!x || sched_explain(r->c->sched, row.id, clock_now_ms(), x) < 0) {
        char sentence[128];
        snprintf(sentence, sizeof(sentence), "job %llu has ended: %s", (unsigned long long)row.id,
                 sched_job_state_name(row.state));
        ctl_reply_json(r->c, r->req, 200,
                       json_pack("{s:{s:I,s:s,s:s,s:s}}", "explain", "job", (json_int_t)row.id,
                                 "state", sched_job_state_name(row.state), "reason", "", "sentence",
                                 sentence));
        free(x);
        store_job_release(&row);
        return;
    }
    json_t *o = explain_json(x);
    json_object_set_new(o, "network", ctl_net_job_json(r->c, row.id, row.project, row.class_name));
    if (x->state == SCHED_PENDING || x->state == SCHED_HELD) {
        json_t *p = explain_pending(x);
        json_object_update(o, p);
        json_decref(p);
    } else if (x->state == SCHED_RUNNING || x->state == SCHED_STARTING ||
               x->state == SCHED_STOPPING) {
        json_object_set_new(
            o, "running",
            json_pack("{s:b,s:s,s:s,s:I,s:I,s:I,s:i}", "preemptible", x->preemptible,
                      "preemptible_by", x->preemptible_by, "why_not", x->not_preemptible_why,
                      "protected_at_ms", (json_int_t)x->protected_at_ms, "preemptible_from_ms",
                      (json_int_t)x->preemptible_from_ms, "expected_end_ms",
                      (json_int_t)x->expected_end_ms, "preempt_count", x->preempt_count));
        json_object_set_new(o, "usage", ctl_usage_explain(r->c, row.id, row.class_name));
        json_t *lease = explain_lease(r->c, row.id);
        if (lease)
            json_object_set_new(o, "lease", lease);
        json_t *env = x->state != SCHED_STOPPING ? explain_preparing(r->c, row.id) : NULL;
        if (env)
            json_object_set_new(o, "environment", env);
    }
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "explain", o));
    free(x);
    store_job_release(&row);
}

void h_forecast(struct ctl_req *r)
{
    int64_t limit = 50;
    if (query_u64(r, "limit", 1, SCHED_FORECAST_MAX, &limit) < 0)
        return;
    struct sched_release *rel = calloc((size_t)limit, sizeof(*rel));
    if (!rel) {
        ctl_reply_errorf(r->c, r->req, 500, NULL, "out of memory");
        return;
    }
    size_t n = sched_forecast(r->c->sched, clock_now_ms(), rel, (size_t)limit);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const struct sched_release *x = &rel[i];
        json_array_append_new(arr, json_pack("{s:I,s:I,s:s,s:i,s:s,s:I,s:s,s:s,s:b}", "at_ms",
                                             (json_int_t)x->at_ms, "job", (json_int_t)x->job_id,
                                             "node", x->node, "gpus", x->gpus, "gpu_type",
                                             x->gpu_type, "next_job", (json_int_t)x->next_job,
                                             "next_project", x->next_project, "next_tier",
                                             x->next_tier, "by_reservation", x->by_reservation));
    }
    free(rel);
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "releases", arr));
}

/* ------------------------------------------------------------------------------------ */
/* Submissions made by docketd itself (services.c's replicas)                           */

int ctl_jobspec_resolve(struct ctl_req *r, struct proto_jobspec *ps)
{
    return resolve_spec(r, ps);
}

int ctl_job_submit_resolved(struct ctl *c, const char *actor, struct proto_jobspec *ps, int64_t now,
                            uint64_t *id, char *err, size_t errlen)
{
    struct sched_job_spec sp;
    struct sched_error se;
    uint64_t first = c->next_job_id;
    ctl_spec_to_sched(ps, first, now, 0, 0, &sp);
    ctl_deps_settle(c, &sp);
    if (sched_job_submit(c->sched, &sp, now, &se) < 0) {
        snprintf(err, errlen, "%s", se.message);
        return se.code < 0 ? se.code : -EINVAL;
    }
    char *text = NULL, *lean = NULL;
    struct store_job row;
    char target[48];
    snprintf(target, sizeof(target), "job:%llu", (unsigned long long)first);
    int rc = spec_texts(ps, false, &text, &lean);
    if (rc == 0)
        rc = insert_job(c, ps, text, first, 0, 0, 0, now, &row);
    if (rc == 0)
        rc = store_counter_set(c->store, "next_job_id", (int64_t)(first + 1));
    if (rc == 0)
        rc = audit_submit(c, actor, target, ps);
    free(text);
    free(lean);
    if (rc < 0) { /* never stored: the core forgets it */
        snprintf(err, errlen, "store: %s", store_errmsg(c->store));
        withdraw_tasks(c, first, 1);
        return rc;
    }
    c->next_job_id = first + 1;
    c->metrics.submissions++;
    ctl_cycle_soon(c);
    *id = first;
    return 0;
}

int ctl_job_write_held(struct ctl *c, uint64_t id, const char *actor, const char *reason)
{
    int rc = persist_state(c, id, SCHED_HELD);
    if (rc == 0)
        rc = ctl_job_event(c, id, "hold", "PENDING", "HELD", "", actor, reason);
    if (rc < 0)
        ctl_store_diverged(c, "job_hold", id);
    return rc;
}

int ctl_job_release_as(struct ctl *c, uint64_t id, const char *actor, const char *reason)
{
    struct sched_error se;
    int rc = sched_job_release(c->sched, id, clock_now_ms(), &se);
    if (rc < 0)
        return rc;
    rc = persist_state(c, id, SCHED_PENDING);
    if (rc == 0)
        rc = ctl_job_event(c, id, "release", "HELD", "PENDING", "", actor, reason);
    if (rc < 0)
        ctl_store_diverged(c, "job_release", id);
    ctl_cycle_soon(c);
    return rc;
}
