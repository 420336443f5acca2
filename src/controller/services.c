/*
 * services.c - services (services.h, docs/services.md): the /v1/services endpoints, the
 * services in memory (loaded from the database once, written back at each change), and
 * the loop that keeps each one's replicas at the desired count. A replica is a job of
 * class `service`: the core restarts it when it ends (as any service); this file holds
 * the restart for an exponential backoff, counts restarts for the crash-loop state, and
 * submits a new job when a replica's job is gone (cancelled, or failed for good).
 * It also rolls a service to a new spec one replica at a time (POST .../update: each new
 * replica ready before an old one leaves, rolled back past the deadline) and tells lb.c
 * which replicas take traffic. The rules themselves (backoff, window, states, the steps
 * of an update) are svcrules.c's.
 */
#include "controller/services.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/authz.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/jobs.h"
#include "controller/lb.h"
#include "controller/loop.h"
#include "controller/svcrules.h"
#include "protocol/proto.h"
#include "protocol/service.h"
#include "util/clock.h"
#include "util/dbuf.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

/* Replicas a service may have: its most, and one more while an update runs. */
#define SVC_MAX_REPS (PROTO_SERVICE_MAX_REPLICAS + 1)

/* The name docketd acts in for what it does to replicas (events, audit). */
#define SVC_ACTOR "docketd"

struct svc_rep {
    int slot;
    uint64_t job;               /* 0: none (to be submitted) */
    int restarts, streak;       /* all restarts; those in a row (the backoff's) */
    struct svc_restarts recent; /* for the crash-loop window */
    int64_t hold_until_ms;      /* held for its backoff until then; 0: not held */
    bool hold_unsaved;          /* held in the core, HELD not written yet */
    int64_t run_start_ms;       /* the start of its current run (0: not running) */
    /* where its current run listens (its node's address, the port the agent gave it;
     * port 0: none) and what its probes said last (docs/services.md "Probes") */
    char host[256];
    int port;
    bool probe_ready;       /* its readiness probe passed last (no probe: unused) */
    char last_failure[160]; /* the last probe failure reported, "" none */
    int64_t last_failure_ms;
    bool draining;          /* out of traffic, to be stopped (a rolling update's old replica) */
    int64_t drain_until_ms; /* ... at that time (its requests in flight finish first) */
    int version;            /* the service's version its job was submitted with */
    int64_t since_ms;       /* when that job was submitted (the update's deadline) */
};

/* How long a replica an update retires stays out of traffic before it is stopped. */
#define SVC_DRAIN_MS 1000

struct svc {
    struct svc *next;
    char name[64], project[64], user[64];
    struct proto_service spec;
    json_t *job; /* the replica's resolved job spec, stored form (proto_jobspec_to_json) */
    struct svc_rep reps[SVC_MAX_REPS];
    int nreps, next_slot;
    int64_t created_ms;
    int endpoint_port; /* its HAProxy frontend's (lb.c), 0: none */
    int version;       /* of spec and job: 1, one more at each update */
    /* the last update (docs/services.md "Rolling updates"): "" none, "updating",
     * "rolling-back", "done", "rolled-back"; what it says; the spec and job before it
     * (stored form), to roll back to */
    char update_state[16];
    char update_msg[300];
    json_t *prev_spec, *prev_job;
    long long probe_failures[2]; /* readiness, liveness failures reported since docketd's start */
};

struct ctl_services {
    struct svc *head;
    bool loaded;
};

/* ------------------------------------------------------------------------------------ */
/* In memory                                                                             */

static struct ctl_services *svcs(struct ctl *c)
{
    if (!c->services)
        c->services = xcalloc(1, sizeof(*c->services));
    return c->services;
}

static void svc_free(struct svc *s)
{
    if (!s)
        return;
    proto_service_release(&s->spec);
    json_decref(s->job);
    json_decref(s->prev_spec);
    json_decref(s->prev_job);
    free(s);
}

static struct svc *svc_find(struct ctl *c, const char *name)
{
    for (struct svc *s = svcs(c)->head; s; s = s->next)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

static struct svc_rep *rep_of_job(struct ctl *c, uint64_t job, struct svc **owner)
{
    if (!c->services || job == 0)
        return NULL;
    for (struct svc *s = c->services->head; s; s = s->next)
        for (int i = 0; i < s->nreps; i++)
            if (s->reps[i].job == job) {
                *owner = s;
                return &s->reps[i];
            }
    return NULL;
}

void ctl_services_free(struct ctl *c)
{
    if (!c->services)
        return;
    for (struct svc *s = c->services->head, *n; s; s = n) {
        n = s->next;
        svc_free(s);
    }
    free(c->services);
    c->services = NULL;
}

/* ------------------------------------------------------------------------------------ */
/* Stored form: the spec, and the status {"job", "next_slot", "replicas": [...]}         */

static json_t *rep_status_head(const struct svc_rep *r)
{
    json_t *recent = json_array();
    for (int i = 0; i < r->recent.n; i++)
        json_array_append_new(recent, json_integer(r->recent.at_ms[i]));
    return json_pack("{s:i,s:I,s:i,s:i,s:o,s:I,s:s,s:i,s:b,s:s,s:I}", "slot", r->slot, "job",
                     (json_int_t)r->job, "restarts", r->restarts, "streak", r->streak, "recent",
                     recent, "hold_until_ms", (json_int_t)r->hold_until_ms, "host", r->host, "port",
                     r->port, "ready", r->probe_ready, "last_failure", r->last_failure,
                     "last_failure_ms", (json_int_t)r->last_failure_ms);
}

/* The rest of a replica's stored form (json_pack takes so many at once). */
static json_t *rep_status_more(const struct svc_rep *r)
{
    json_t *o = rep_status_head(r);
    if (o) {
        json_object_set_new(o, "draining", json_boolean(r->draining));
        json_object_set_new(o, "drain_until_ms", json_integer(r->drain_until_ms));
        json_object_set_new(o, "version", json_integer(r->version));
        json_object_set_new(o, "since_ms", json_integer(r->since_ms));
    }
    return o;
}

static json_t *svc_status(const struct svc *s)
{
    json_t *reps = json_array();
    for (int i = 0; i < s->nreps; i++)
        json_array_append_new(reps, rep_status_more(&s->reps[i]));
    json_t *o = json_pack("{s:O,s:i,s:o,s:i}", "job", s->job, "next_slot", s->next_slot, "replicas",
                          reps, "version", s->version);
    if (o && s->update_state[0])
        json_object_set_new(o, "update",
                            json_pack("{s:s,s:s,s:O?,s:O?}", "state", s->update_state, "message",
                                      s->update_msg, "prev_spec", s->prev_spec, "prev_job",
                                      s->prev_job));
    return o;
}

/* Write the service's row (inside the caller's transaction). */
static int svc_save(struct ctl *c, const struct svc *s, int64_t now)
{
    json_t *spec = proto_service_to_json(&s->spec), *status = svc_status(s);
    char *spec_text = spec ? json_dumps(spec, JSON_COMPACT) : NULL;
    char *status_text = status ? json_dumps(status, JSON_COMPACT) : NULL;
    json_decref(spec);
    json_decref(status);
    int rc = -ENOMEM;
    if (spec_text && status_text) {
        struct store_service row = {.spec = spec_text,
                                    .status = status_text,
                                    .created_ms = s->created_ms,
                                    .updated_ms = now,
                                    .endpoint_port = s->endpoint_port};
        str_copy(row.name, sizeof(row.name), s->name);
        str_copy(row.project, sizeof(row.project), s->project);
        str_copy(row.user, sizeof(row.user), s->user);
        rc = store_service_put(c->store, &row);
    }
    free(spec_text);
    free(status_text);
    return rc;
}

/* The same outside a request: its own transaction, committed with the loop's. */
static void svc_save_now(struct ctl *c, const struct svc *s, int64_t now)
{
    if (store_begin(c->store) < 0 || svc_save(c, s, now) < 0)
        log_error("service_save_failed", "service=%s error=\"%s\"", s->name,
                  store_errmsg(c->store));
    ctl_commit_soon(c);
}

static void rep_load(struct svc_rep *r, const json_t *o)
{
    memset(r, 0, sizeof(*r));
    r->slot = (int)json_integer_value(json_object_get(o, "slot"));
    r->job = (uint64_t)json_integer_value(json_object_get(o, "job"));
    r->restarts = (int)json_integer_value(json_object_get(o, "restarts"));
    r->streak = (int)json_integer_value(json_object_get(o, "streak"));
    r->hold_until_ms = json_integer_value(json_object_get(o, "hold_until_ms"));
    const char *host = json_string_value(json_object_get(o, "host"));
    str_copy(r->host, sizeof(r->host), host ? host : "");
    r->port = (int)json_integer_value(json_object_get(o, "port"));
    r->probe_ready = json_is_true(json_object_get(o, "ready"));
    const char *why = json_string_value(json_object_get(o, "last_failure"));
    str_copy(r->last_failure, sizeof(r->last_failure), why ? why : "");
    r->last_failure_ms = json_integer_value(json_object_get(o, "last_failure_ms"));
    r->draining = json_is_true(json_object_get(o, "draining"));
    r->drain_until_ms = json_integer_value(json_object_get(o, "drain_until_ms"));
    r->version = (int)json_integer_value(json_object_get(o, "version"));
    r->since_ms = json_integer_value(json_object_get(o, "since_ms"));
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(o, "recent"), i, t) {
        if (r->recent.n < SVC_RECENT_MAX)
            r->recent.at_ms[r->recent.n++] = json_integer_value(t);
    }
}

static int load_cb(void *arg, const struct store_service *row)
{
    struct ctl *c = arg;
    struct proto_error e = {.message = "its status is not a JSON object with a job"};
    struct svc *s = xcalloc(1, sizeof(*s));
    json_t *status = json_loads(row->status ? row->status : "", 0, NULL);
    if (proto_service_parse_text(row->spec ? row->spec : "", row->spec ? strlen(row->spec) : 0,
                                 clock_now_ms(), &s->spec, &e) < 0 ||
        !json_is_object(json_object_get(status, "job"))) {
        /* left as it is in the database, for an operator to look at; the others load */
        log_error("service_unreadable", "service=%s error=\"%s\"", row->name, e.message);
        json_decref(status);
        svc_free(s);
        return 0;
    }
    str_copy(s->name, sizeof(s->name), row->name);
    str_copy(s->project, sizeof(s->project), row->project);
    str_copy(s->user, sizeof(s->user), row->user);
    s->created_ms = row->created_ms;
    s->endpoint_port = row->endpoint_port;
    s->job = json_incref(json_object_get(status, "job"));
    s->next_slot = (int)json_integer_value(json_object_get(status, "next_slot"));
    s->version = (int)json_integer_value(json_object_get(status, "version"));
    if (s->version < 1)
        s->version = 1; /* a service stored before updates: its first version */
    const json_t *u = json_object_get(status, "update");
    if (json_is_object(u)) {
        const char *st = json_string_value(json_object_get(u, "state"));
        const char *msg = json_string_value(json_object_get(u, "message"));
        str_copy(s->update_state, sizeof(s->update_state), st ? st : "");
        str_copy(s->update_msg, sizeof(s->update_msg), msg ? msg : "");
        s->prev_spec = json_incref(json_object_get(u, "prev_spec"));
        s->prev_job = json_incref(json_object_get(u, "prev_job"));
    }
    size_t i;
    const json_t *o;
    json_array_foreach(json_object_get(status, "replicas"), i, o) {
        if (s->nreps < SVC_MAX_REPS) {
            rep_load(&s->reps[s->nreps], o);
            if (s->reps[s->nreps].version < 1)
                s->reps[s->nreps].version = s->version;
            s->nreps++;
        }
    }
    json_decref(status);
    s->next = svcs(c)->head;
    svcs(c)->head = s;
    return 0;
}

static void services_load(struct ctl *c)
{
    struct ctl_services *all = svcs(c);
    if (all->loaded)
        return;
    if (store_service_list(c->store, load_cb, c) < 0) {
        log_error("services_load_failed", "error=\"%s\"", store_errmsg(c->store));
        return; /* tried again next second */
    }
    all->loaded = true;
    /* a replica whose HELD was not written before a restart is pending again: hold it
       again if its backoff is not over (the tick releases the others) */
    for (struct svc *s = all->head; s; s = s->next)
        for (int i = 0; i < s->nreps; i++)
            if (s->reps[i].hold_until_ms && s->reps[i].job) {
                struct sched_job_view v;
                struct sched_error se;
                if (sched_job_get(c->sched, s->reps[i].job, &v) == 0 && v.state == SCHED_PENDING &&
                    sched_job_hold(c->sched, s->reps[i].job, clock_now_ms(), &se) == 0) {
                    if (store_begin(c->store) == 0)
                        (void)ctl_job_write_held(c, s->reps[i].job, SVC_ACTOR,
                                                 "service backoff (after a restart)");
                    ctl_commit_soon(c);
                }
            }
}

/* ------------------------------------------------------------------------------------ */
/* Replicas                                                                              */

/* Its run is over: no address, no readiness until the next one says. */
static void rep_forget_run(struct svc_rep *r)
{
    r->host[0] = '\0';
    r->port = 0;
    r->probe_ready = false;
}

/* Submit the job of replica r (a fresh one), in the service owner's name. */
static int rep_submit(struct ctl *c, struct svc *s, struct svc_rep *r, int64_t now)
{
    struct proto_jobspec ps;
    struct proto_error e;
    char err[256] = "", val[32];
    if (proto_jobspec_load(s->job, &ps, &e) < 0) {
        log_error("service_submit_failed", "service=%s slot=%d error=\"%s\"", s->name, r->slot,
                  e.message);
        return -EINVAL;
    }
    /* who it is, so a replica can tell (its logs, its port file) */
    /* a copy: ps.extra shares the service's own objects, and what the submission does
       to its env (redaction for the audit trail) must not reach the next replica's */
    json_t *env = json_object_get(ps.extra, "env");
    env = json_is_object(env) ? json_deep_copy(env) : json_object();
    json_object_set_new(ps.extra, "env", env);
    json_object_set_new(env, "DOCKET_SERVICE", json_string(s->name));
    snprintf(val, sizeof(val), "%d", r->slot);
    json_object_set_new(env, "DOCKET_REPLICA", json_string(val));
    uint64_t id = 0;
    int rc = store_begin(c->store);
    if (rc == 0)
        rc = ctl_job_submit_resolved(c, s->user, &ps, now, &id, err, sizeof(err));
    proto_jobspec_release(&ps);
    ctl_commit_soon(c);
    if (rc < 0) {
        log_warn("service_submit_failed", "service=%s slot=%d error=\"%s\"", s->name, r->slot, err);
        return rc;
    }
    r->job = id;
    r->run_start_ms = 0;
    r->version = s->version;
    r->since_ms = now;
    rep_forget_run(r);
    char detail[160];
    snprintf(detail, sizeof(detail), "replica %d of service %s, version %d", r->slot, s->name,
             s->version);
    if (ctl_job_event(c, id, "service", "", "PENDING", "", SVC_ACTOR, detail) < 0)
        log_error("service_event_failed", "job=%llu", (unsigned long long)id);
    log_info("service_replica_submitted", "service=%s slot=%d job=%llu", s->name, r->slot,
             (unsigned long long)id);
    return 0;
}

/* Cancel a replica's job (scale down, removal); the cycle writes what follows. */
static void rep_cancel(struct ctl *c, struct svc_rep *r, int64_t now)
{
    struct sched_error se;
    if (r->job && sched_job_cancel(c->sched, r->job, now, &se) == 0)
        ctl_cycle_soon(c);
    r->job = 0;
}

/* One replica at one tick: note its run's start, end its backoff when due, replace its
 * job when the core no longer holds it. True when its stored state changed. */
static bool rep_tick(struct ctl *c, struct svc *s, struct svc_rep *r, int64_t now)
{
    struct sched_job_view v;
    bool live = r->job && sched_job_get(c->sched, r->job, &v) == 0;
    bool changed = false;
    if (live && v.state == SCHED_RUNNING && v.start_ms > 0)
        r->run_start_ms = v.start_ms;
    if (r->hold_until_ms && now >= r->hold_until_ms) {
        if (live && v.state == SCHED_HELD && !r->hold_unsaved) {
            if (store_begin(c->store) == 0)
                (void)ctl_job_release_as(c, r->job, SVC_ACTOR, "service backoff over");
            ctl_commit_soon(c);
        }
        if (!r->hold_unsaved) {
            r->hold_until_ms = 0;
            changed = true;
        }
    }
    if (r->job && !live) { /* cancelled by someone, or failed for good: a new one */
        log_info("service_replica_gone", "service=%s slot=%d job=%llu", s->name, r->slot,
                 (unsigned long long)r->job);
        r->job = 0;
        r->restarts++;
        svc_restarts_add(&r->recent, now, s->spec.crash_loop_window_ms);
        changed = true;
    }
    if (!r->job && !r->hold_until_ms && !r->draining && rep_submit(c, s, r, now) == 0)
        changed = true;
    return changed;
}

/* A new replica slot at the end (its job submitted by rep_tick). */
static void rep_add(struct svc *s)
{
    struct svc_rep *r = &s->reps[s->nreps++];
    memset(r, 0, sizeof(*r));
    r->slot = s->next_slot++;
    r->version = s->version;
}

/* A replica's job event, best effort (the service's own log says it too). */
static void rep_event(struct ctl *c, const struct svc_rep *r, const char *reason,
                      const char *detail)
{
    if (r->job && ctl_job_event(c, r->job, "service", "", "", "", reason, detail) < 0)
        log_error("service_event_failed", "job=%llu", (unsigned long long)r->job);
}

/* The replicas that are leaving and whose drain is over: stopped, and gone from s. */
static bool svc_drop_drained(struct ctl *c, struct svc *s, int64_t now)
{
    bool changed = false;
    for (int i = 0; i < s->nreps;) {
        if (!s->reps[i].draining || now < s->reps[i].drain_until_ms) {
            i++;
            continue;
        }
        rep_cancel(c, &s->reps[i], now);
        memmove(&s->reps[i], &s->reps[i + 1], sizeof(s->reps[0]) * (size_t)(s->nreps - i - 1));
        s->nreps--;
        changed = true;
    }
    return changed;
}

static bool rep_in_traffic(struct ctl *c, const struct svc *s, const struct svc_rep *r);
static void svc_lb_sync(struct ctl *c);

/* Take replica r out of traffic now and stop it after SVC_DRAIN_MS (0: at once). */
static void rep_retire(struct ctl *c, struct svc *s, struct svc_rep *r, int64_t now,
                       int64_t drain_ms, const char *why)
{
    char detail[200];
    r->draining = true;
    r->drain_until_ms = now + drain_ms;
    snprintf(detail, sizeof(detail), "replica %d of service %s, version %d: %s", r->slot, s->name,
             r->version, why);
    rep_event(c, r, "leaving", detail);
    log_info("service_replica_leaving", "service=%s slot=%d job=%llu version=%d why=\"%s\"",
             s->name, r->slot, (unsigned long long)r->job, r->version, why);
}

/* The update ends (done, or rolled back): what it says, for `docket services show`. */
static void update_end(struct svc *s, const char *state, const char *msg)
{
    str_copy(s->update_state, sizeof(s->update_state), state);
    str_copy(s->update_msg, sizeof(s->update_msg), msg);
    log_info("service_update_end", "service=%s state=%s version=%d message=\"%s\"", s->name, state,
             s->version, msg);
}

/* Back to the spec before the update: its replicas are the current ones again, the new
 * ones that are not ready leave at once, those that are are rolled over as old ones. */
static void update_rollback(struct ctl *c, struct svc *s, const struct svc_rep *late, int64_t now)
{
    struct proto_service prev;
    struct proto_error e;
    int bad = s->version;
    char why[300];
    snprintf(why, sizeof(why),
             "replica %d (job %llu) of version %d was not ready within %llds%s%s; rolled back "
             "to version %d",
             late->slot, (unsigned long long)late->job, bad,
             (long long)(s->spec.update_deadline_ms / 1000), late->last_failure[0] ? ": " : "",
             late->last_failure, bad - 1);
    if (!s->prev_spec || !s->prev_job || proto_service_parse(s->prev_spec, now, &prev, &e) < 0) {
        update_end(s, "rolled-back", "the spec before the update is unreadable: left as it is");
        return;
    }
    proto_service_release(&s->spec);
    s->spec = prev;
    json_decref(s->job);
    s->job = s->prev_job;
    s->prev_job = NULL;
    json_decref(s->prev_spec);
    s->prev_spec = NULL;
    s->version = bad - 1;
    for (int i = 0; i < s->nreps; i++) {
        struct svc_rep *r = &s->reps[i];
        if (r->version == bad && !r->draining && !rep_in_traffic(c, s, r))
            rep_retire(c, s, r, now, 0, "not ready: rolled back");
    }
    str_copy(s->update_state, sizeof(s->update_state), "rolling-back");
    str_copy(s->update_msg, sizeof(s->update_msg), why);
    log_warn("service_update_rollback", "service=%s message=\"%s\"", s->name, why);
}

/* One step of the update in progress (svc_roll_next). True when s changed. */
static bool svc_roll(struct ctl *c, struct svc *s, int64_t now)
{
    struct svc_roll_rep rr[SVC_MAX_REPS];
    for (int i = 0; i < s->nreps; i++)
        rr[i] = (struct svc_roll_rep){s->reps[i].version, rep_in_traffic(c, s, &s->reps[i]),
                                      s->reps[i].draining, s->reps[i].since_ms};
    struct svc_roll_step st =
        svc_roll_next(rr, s->nreps, s->spec.replicas, s->version, now, s->spec.update_deadline_ms);
    char why[64];
    switch (st.action) {
    case SVC_ROLL_WAIT:
        return false;
    case SVC_ROLL_ADD:
        if (s->nreps >= SVC_MAX_REPS)
            return false;
        rep_add(s);
        return true;
    case SVC_ROLL_RETIRE:
        snprintf(why, sizeof(why), "replaced by version %d", s->version);
        rep_retire(c, s, &s->reps[st.index], now, SVC_DRAIN_MS, why);
        svc_lb_sync(c); /* out of traffic before it is stopped */
        return true;
    case SVC_ROLL_ROLLBACK:
        if (strcmp(s->update_state, "updating") == 0) {
            update_rollback(c, s, &s->reps[st.index], now);
            svc_lb_sync(c);
            return true;
        }
        /* the old version itself is not ready in time: nothing older to go back to */
        update_end(s, "rolled-back", s->update_msg);
        return true;
    case SVC_ROLL_DONE:
        if (strcmp(s->update_state, "rolling-back") == 0) {
            update_end(s, "rolled-back", s->update_msg);
        } else {
            snprintf(why, sizeof(why), "every replica runs version %d", s->version);
            update_end(s, "done", why);
        }
        json_decref(s->prev_spec);
        json_decref(s->prev_job);
        s->prev_spec = s->prev_job = NULL;
        return true;
    }
    return false;
}

static bool svc_updating(const struct svc *s)
{
    return strcmp(s->update_state, "updating") == 0 || strcmp(s->update_state, "rolling-back") == 0;
}

/* Bring s to its desired count (new slots submitted, the highest slots cancelled), or
 * its update one step on; the replicas that left stopped. */
static bool svc_reconcile(struct ctl *c, struct svc *s, int64_t now)
{
    bool changed = svc_drop_drained(c, s, now);
    if (svc_updating(s)) {
        changed |= svc_roll(c, s, now);
    } else {
        while (s->nreps > s->spec.replicas) {
            rep_cancel(c, &s->reps[--s->nreps], now);
            changed = true;
        }
        while (s->nreps < s->spec.replicas) {
            rep_add(s);
            changed = true;
        }
    }
    for (int i = 0; i < s->nreps; i++)
        changed |= rep_tick(c, s, &s->reps[i], now);
    return changed;
}

/* ------------------------------------------------------------------------------------ */
/* The endpoint (lb.c)                                                                   */

/* Whether replica r takes traffic: its job runs and its readiness probe (if any) passed. */
static bool rep_in_traffic(struct ctl *c, const struct svc *s, const struct svc_rep *r)
{
    struct sched_job_view v;
    return r->job && r->port > 0 && r->host[0] && sched_job_get(c->sched, r->job, &v) == 0 &&
           v.state == SCHED_RUNNING &&
           (s->spec.readiness.kind == PROTO_PROBE_NONE || r->probe_ready);
}

/* A port for each service that has none yet (a load balancer configured); true when one
 * was given (its row to be written). */
static bool svc_give_endpoint(struct ctl *c, struct svc *s)
{
    if (s->endpoint_port > 0 || !ctl_lb_on(c))
        return false;
    int used[256], n = 0;
    for (struct svc *o = c->services->head; o && n < 256; o = o->next)
        if (o->endpoint_port > 0)
            used[n++] = o->endpoint_port;
    s->endpoint_port = ctl_lb_pick_port(c, used, n);
    if (!s->endpoint_port)
        log_error("service_no_endpoint", "service=%s (no port of --lb-ports is free)", s->name);
    return s->endpoint_port > 0;
}

/* HAProxy brought to the services as they are now. */
static void svc_lb_sync(struct ctl *c)
{
    if (!ctl_lb_on(c) || !c->services || !c->services->loaded)
        return;
    int n = 0;
    for (struct svc *s = c->services->head; s; s = s->next)
        n += s->endpoint_port > 0;
    struct ctl_lb_service *list = xcalloc((size_t)n + 1, sizeof(*list));
    int i = 0;
    /* by name, so the configuration's order does not depend on creation order */
    for (struct svc *s = c->services->head; s; s = s->next) {
        if (s->endpoint_port <= 0)
            continue;
        int at = i++;
        while (at > 0 && strcmp(list[at - 1].name, s->name) > 0) {
            list[at] = list[at - 1];
            at--;
        }
        struct ctl_lb_service *l = &list[at];
        memset(l, 0, sizeof(*l));
        l->name = s->name;
        l->port = s->endpoint_port;
        for (int k = 0; k < s->nreps && l->nwant < LB_SLOTS; k++) {
            const struct svc_rep *r = &s->reps[k];
            if (!r->job || r->port <= 0)
                continue;
            l->want[l->nwant++] =
                (struct lb_want){r->job, r->host, r->port, rep_in_traffic(c, s, r) && !r->draining};
        }
    }
    ctl_lb_sync(c, list, n);
    free(list);
}

void ctl_services_tick(struct ctl *c)
{
    if (c->standby || c->shutting_down)
        return;
    services_load(c);
    if (!c->services->loaded)
        return;
    int64_t now = clock_now_ms();
    for (struct svc *s = c->services->head; s; s = s->next) {
        bool changed = svc_reconcile(c, s, now);
        changed = svc_give_endpoint(c, s) || changed; /* both run, whatever the first says */
        if (changed)
            svc_save_now(c, s, now);
    }
    svc_lb_sync(c);
}

void ctl_services_run_ended(struct ctl *c, uint64_t job, int64_t now)
{
    struct svc *s;
    struct svc_rep *r = rep_of_job(c, job, &s);
    struct sched_job_view v;
    struct sched_error se;
    if (!r)
        return;
    int64_t up = r->run_start_ms ? now - r->run_start_ms : 0;
    r->run_start_ms = 0;
    rep_forget_run(r);
    r->restarts++;
    r->streak = svc_next_streak(r->streak, up, s->spec.backoff_max_ms);
    svc_restarts_add(&r->recent, now, s->spec.crash_loop_window_ms);
    int64_t backoff = svc_backoff_ms(s->spec.backoff_ms, s->spec.backoff_max_ms, r->streak);
    /* held in the core now, before any cycle could start it again; written HELD once its
       requeue is written (ctl_services_job_written) */
    if (backoff > 0 && sched_job_get(c->sched, job, &v) == 0 && v.state == SCHED_PENDING &&
        sched_job_hold(c->sched, job, now, &se) == 0) {
        r->hold_until_ms = now + backoff;
        r->hold_unsaved = true;
    }
    log_info("service_replica_restart", "service=%s slot=%d job=%llu restarts=%d backoff_ms=%lld",
             s->name, r->slot, (unsigned long long)job, r->restarts, (long long)backoff);
    svc_save_now(c, s, now);
    svc_lb_sync(c); /* out of traffic now, not at the next tick */
}

void ctl_services_job_written(struct ctl *c, uint64_t job)
{
    struct svc *s;
    struct svc_rep *r = rep_of_job(c, job, &s);
    struct sched_job_view v;
    if (!r || !r->hold_unsaved || sched_job_get(c->sched, job, &v) < 0 || v.state != SCHED_HELD)
        return;
    char why[128];
    snprintf(why, sizeof(why), "service %s: restart %d, backoff until %lld", s->name, r->restarts,
             (long long)r->hold_until_ms);
    r->hold_unsaved = false;
    (void)ctl_job_write_held(c, job, SVC_ACTOR, why);
}

/* ------------------------------------------------------------------------------------ */
/* Ports and probes (docs/services.md "Ports and probes")                                */

void ctl_services_start_cmd(struct ctl *c, uint64_t job, json_t *cmd_job)
{
    struct svc *s;
    struct svc_rep *r = rep_of_job(c, job, &s);
    if (!r)
        return;
    json_t *sv = json_pack("{s:b}", "port", true), *p;
    if (sv && (p = proto_probe_to_json(&s->spec.liveness)))
        json_object_set_new(sv, "liveness", p);
    if (sv && (p = proto_probe_to_json(&s->spec.readiness)))
        json_object_set_new(sv, "readiness", p);
    if (sv)
        json_object_set_new(cmd_job, "service", sv);
}

void ctl_services_started(struct ctl *c, uint64_t job, const char *host, int port)
{
    struct svc *s;
    struct svc_rep *r = rep_of_job(c, job, &s);
    if (!r)
        return;
    rep_forget_run(r);
    str_copy(r->host, sizeof(r->host), host ? host : "");
    r->port = port;
    svc_save_now(c, s, clock_now_ms());
    svc_lb_sync(c);
}

int ctl_services_probe(struct ctl *c, struct ctl_node *n, uint64_t job, const char *probe, bool ok,
                       const char *message)
{
    struct svc *s;
    struct svc_rep *r = rep_of_job(c, job, &s);
    if (!r)
        return 0;
    int64_t now = clock_now_ms();
    bool liveness = strcmp(probe, "liveness") == 0;
    char detail[200];
    snprintf(detail, sizeof(detail), "replica %d of service %s: %s %s", r->slot, s->name, probe,
             ok ? "passes" : "failed");
    if (!ok) {
        snprintf(r->last_failure, sizeof(r->last_failure), "%s: %s", probe, message);
        r->last_failure_ms = now;
    }
    if (!liveness)
        r->probe_ready = ok;
    log_info("service_probe", "service=%s slot=%d job=%llu probe=%s ok=%s message=\"%s\"", s->name,
             r->slot, (unsigned long long)job, probe, ok ? "true" : "false", message);
    s->probe_failures[liveness] += !ok;
    svc_save_now(c, s, now);
    svc_lb_sync(c);
    /* a replica that fails its liveness probe is restarted: its process killed, so the
       core requeues it as any service whose run ended (and the backoff holds it) */
    if (liveness && !ok) {
        json_t *kill = json_pack("{s:s,s:I}", "type", "kill", "job", (json_int_t)job);
        if (kill && ctl_node_command(c, n, job, kill) < 0)
            log_error("service_kill_failed", "service=%s job=%llu", s->name,
                      (unsigned long long)job);
    }
    return ctl_job_event(c, job, "probe", "", "", n->name, detail, message);
}

/* ------------------------------------------------------------------------------------ */
/* The SERVICE object of the API                                                         */

static json_t *rep_json(struct ctl *c, const struct svc *s, const struct svc_rep *r, int64_t now,
                        bool *ready, bool *looping)
{
    struct sched_job_view v;
    const char *st =
        r->job && sched_job_get(c->sched, r->job, &v) == 0 ? sched_job_state_name(v.state) : "";
    *looping = svc_crash_looping(&r->recent, now, s->spec.crash_loop_window_ms,
                                 s->spec.crash_loop_restarts);
    bool backoff = r->hold_until_ms > now;
    bool probed = s->spec.readiness.kind == PROTO_PROBE_NONE || r->probe_ready;
    const char *state = r->draining ? "leaving" : svc_replica_state(st, backoff, *looping, probed);
    *ready = strcmp(state, "ready") == 0;
    json_t *o = json_pack("{s:i,s:I,s:s,s:s,s:i,s:b,s:i}", "slot", r->slot, "job",
                          (json_int_t)r->job, "state", state, "job_state", st, "restarts",
                          r->restarts, "crash_loop", *looping, "version", r->version);
    if (backoff)
        json_object_set_new(o, "backoff_until_ms", json_integer(r->hold_until_ms));
    if (r->port > 0) {
        char addr[300];
        snprintf(addr, sizeof(addr), "%s:%d", r->host, r->port);
        json_object_set_new(o, "addr", json_string(addr));
    }
    if (r->last_failure[0]) {
        json_object_set_new(o, "last_probe_failure", json_string(r->last_failure));
        json_object_set_new(o, "last_probe_failure_ms", json_integer(r->last_failure_ms));
    }
    return o;
}

/* The service as caller r may see it: the replica's job spec keeps its command, script and
 * env values for the service's owner, its project's leads and admins only (issue 33 item
 * 6, as a job's own view). */
static json_t *svc_json(struct ctl_req *r, const struct svc *s)
{
    struct ctl *c = r->c;
    struct ctl_target t;
    ctl_req_target(r, s->project, s->user, &t);
    bool sees = ctl_authz_sees_job_private(&r->id, &t);
    int64_t now = clock_now_ms();
    int ready = 0, looping = 0, restarts = 0;
    json_t *reps = json_array();
    for (int i = 0; i < s->nreps; i++) {
        bool rd, lp;
        json_array_append_new(reps, rep_json(c, s, &s->reps[i], now, &rd, &lp));
        ready += rd;
        looping += lp;
        restarts += s->reps[i].restarts;
    }
    json_t *spec = proto_service_to_json(&s->spec);
    if (spec) { /* the replica's spec as resolved (owner, project, defaults) */
        json_t *job = json_deep_copy(s->job);
        if (job && !sees)
            ctl_job_redact_private(job);
        json_object_set_new(spec, "job", job ? job : json_null());
    }
    json_t *endpoint = json_null();
    if (s->endpoint_port > 0) {
        char ep[300];
        snprintf(ep, sizeof(ep), "%s:%d", ctl_lb_host(c), s->endpoint_port);
        endpoint = json_string(ep);
    }
    json_t *update = json_null();
    if (s->update_state[0])
        update = json_pack("{s:s,s:s,s:i}", "state", s->update_state, "message", s->update_msg,
                           "version", s->version);
    return json_pack("{s:s,s:s,s:s,s:s,s:i,s:i,s:i,s:I,s:o,s:o,s:o,s:i,s:o}", "name", s->name,
                     "project", s->project, "user", s->user, "state",
                     svc_service_state(s->spec.replicas, ready, looping,
                                       svc_updating(s) ? s->update_state : NULL),
                     "replicas", s->spec.replicas, "ready", ready, "restarts", restarts,
                     "created_ms", (json_int_t)s->created_ms, "instances", reps, "spec",
                     spec ? spec : json_null(), "endpoint", endpoint, "version", s->version,
                     "update", update);
}

/* ------------------------------------------------------------------------------------ */
/* Endpoints                                                                             */

static bool loaded_or_503(struct ctl_req *r)
{
    services_load(r->c);
    if (r->c->services->loaded)
        return true;
    ctl_reply_errorf(r->c, r->req, 503, NULL, "services not loaded yet: store: %s",
                     store_errmsg(r->c->store));
    return false;
}

void h_services_list(struct ctl_req *r)
{
    if (!loaded_or_503(r))
        return;
    json_t *arr = json_array();
    for (struct svc *s = r->c->services->head; s; s = s->next)
        json_array_append_new(arr, svc_json(r, s));
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "services", arr));
}

static struct svc *svc_arg(struct ctl_req *r)
{
    if (!loaded_or_503(r))
        return NULL;
    struct svc *s = svc_find(r->c, r->arg[0]);
    if (!s)
        ctl_reply_errorf(r->c, r->req, 404, NULL, "no such service '%.64s'", r->arg[0]);
    return s;
}

void h_service_show(struct ctl_req *r)
{
    struct svc *s = svc_arg(r);
    if (s)
        ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "service", svc_json(r, s)));
}

/* The replica's job spec, resolved as the caller's submission would be (and the caller
 * checked as its submitter). 0, or -errno having answered. */
static int resolve_job(struct ctl_req *r, struct proto_service *sp, json_t **out)
{
    struct proto_jobspec ps;
    struct proto_error e;
    if (proto_jobspec_parse(sp->job, clock_now_ms(), &ps, &e) < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return -EINVAL;
    }
    int rc = 0;
    if (sp->project[0] && ps.project[0] && strcmp(sp->project, ps.project) != 0) {
        ctl_reply_errorf(r->c, r->req, 400, "job.project",
                         "the job's project '%s' is not the service's '%s'", ps.project,
                         sp->project);
        rc = -EINVAL;
    }
    if (rc == 0) {
        if (sp->project[0])
            str_copy(ps.project, sizeof(ps.project), sp->project);
        str_copy(ps.class_name, sizeof(ps.class_name), "service");
        if (!ps.name[0] || strcmp(ps.name, "job") == 0)
            str_copy(ps.name, sizeof(ps.name), sp->name);
        rc = ctl_jobspec_resolve(r, &ps);
    }
    if (rc == 0) {
        str_copy(sp->project, sizeof(sp->project), ps.project);
        *out = proto_jobspec_to_json(&ps);
        if (!*out) {
            ctl_reply_errorf(r->c, r->req, 500, NULL, "out of memory");
            rc = -ENOMEM;
        }
    }
    proto_jobspec_release(&ps);
    return rc;
}

void h_services_create(struct ctl_req *r)
{
    struct ctl *c = r->c;
    struct proto_error e;
    struct proto_service sp;
    int64_t now = clock_now_ms();
    if (proto_service_parse_text(r->body ? r->body : "", r->body_len, now, &sp, &e) < 0) {
        ctl_reply_error(c, r->req, &e);
        return;
    }
    json_t *job = NULL;
    if (!loaded_or_503(r) || resolve_job(r, &sp, &job) < 0) {
        proto_service_release(&sp);
        return;
    }
    if (svc_find(c, sp.name)) {
        ctl_reply_errorf(c, r->req, 409, "name", "service '%s' exists already", sp.name);
        proto_service_release(&sp);
        json_decref(job);
        return;
    }
    struct svc *s = xcalloc(1, sizeof(*s));
    s->spec = sp;
    s->job = job;
    s->created_ms = now;
    s->version = 1;
    str_copy(s->name, sizeof(s->name), sp.name);
    str_copy(s->project, sizeof(s->project), sp.project);
    str_copy(s->user, sizeof(s->user), json_string_value(json_object_get(job, "user")));
    if (!s->user[0])
        str_copy(s->user, sizeof(s->user), r->id.user);
    (void)svc_give_endpoint(c, s);
    char target[96];
    snprintf(target, sizeof(target), "service:%s", s->name);
    json_t *after = proto_service_to_json(&s->spec);
    int rc = svc_save(c, s, now);
    if (rc == 0)
        rc = ctl_audit(c, r->id.user, "service.create", target, NULL, after, NULL);
    json_decref(after);
    if (rc < 0) {
        ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
        svc_free(s);
        return;
    }
    s->next = c->services->head;
    c->services->head = s;
    if (svc_reconcile(c, s, now) && svc_save(c, s, now) < 0)
        log_error("service_save_failed", "service=%s error=\"%s\"", s->name,
                  store_errmsg(c->store));
    svc_lb_sync(c);
    ctl_reply_json(c, r->req, 201, json_pack("{s:o}", "service", svc_json(r, s)));
}

/* The service of the path, its caller checked as for the jobs of its owner. */
static struct svc *svc_for_control(struct ctl_req *r)
{
    struct svc *s = svc_arg(r);
    if (s && ctl_req_authorize(r, s->project, s->user) < 0)
        return NULL;
    return s;
}

void h_service_scale(struct ctl_req *r)
{
    static const char *const known[] = {"replicas", NULL};
    struct ctl *c = r->c;
    struct proto_error e;
    json_t *body = r->body ? json_loads(r->body, JSON_REJECT_DUPLICATES, NULL) : NULL;
    int64_t n = 0;
    if (!json_is_object(body) || proto_check_fields(body, "", known, &e) < 0 ||
        proto_get_int(json_object_get(body, "replicas"), "replicas", 0, PROTO_SERVICE_MAX_REPLICAS,
                      &n, &e) < 0) {
        if (!json_is_object(body))
            proto_errorf(&e, 400, NULL, NULL, "the body must be {\"replicas\": N}");
        json_decref(body);
        ctl_reply_error(c, r->req, &e);
        return;
    }
    json_decref(body);
    struct svc *s = svc_for_control(r);
    if (!s)
        return;
    int64_t now = clock_now_ms();
    int before = s->spec.replicas;
    char target[96], why[64];
    snprintf(target, sizeof(target), "service:%s", s->name);
    snprintf(why, sizeof(why), "replicas %d -> %d", before, (int)n);
    s->spec.replicas = (int)n;
    int rc = svc_save(c, s, now);
    if (rc == 0)
        rc = ctl_audit(c, r->id.user, "service.scale", target, NULL, NULL, why);
    if (rc < 0) {
        s->spec.replicas = before;
        ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
        return;
    }
    if (svc_reconcile(c, s, now) && svc_save(c, s, now) < 0)
        log_error("service_save_failed", "service=%s error=\"%s\"", s->name,
                  store_errmsg(c->store));
    ctl_reply_json(c, r->req, 200, json_pack("{s:o}", "service", svc_json(r, s)));
}

/* POST /v1/services/NAME/update: the service rolled to the spec of the body (docs/services.md
 * "Rolling updates"). The body is a whole spec, read as at creation; its name, when given,
 * is the service's; its job is resolved as the caller's submission. */
void h_service_update(struct ctl_req *r)
{
    struct ctl *c = r->c;
    struct proto_error e;
    struct proto_service sp;
    int64_t now = clock_now_ms();
    json_t *body = r->body ? json_loads(r->body, JSON_REJECT_DUPLICATES, NULL) : NULL;
    if (json_is_object(body) && !json_object_get(body, "name"))
        json_object_set_new(body, "name", json_string(r->arg[0]));
    int rc = json_is_object(body)
                 ? proto_service_parse(body, now, &sp, &e)
                 : proto_errorf(&e, 400, NULL, NULL, "the body must be a service spec (an object)");
    json_decref(body);
    if (rc < 0) {
        ctl_reply_error(c, r->req, &e);
        return;
    }
    struct svc *s = svc_for_control(r);
    json_t *job = NULL;
    if (!s || (!sp.project[0] && (str_copy(sp.project, sizeof(sp.project), s->project), false)) ||
        resolve_job(r, &sp, &job) < 0) {
        proto_service_release(&sp);
        return;
    }
    const char *refuse = strcmp(sp.name, s->name) != 0         ? "name"
                         : strcmp(sp.project, s->project) != 0 ? "project"
                         : svc_updating(s)                     ? ""
                                                               : NULL;
    if (refuse) {
        ctl_reply_errorf(c, r->req, refuse[0] ? 400 : 409, refuse[0] ? refuse : NULL,
                         refuse[0] ? "an update keeps the service's %s" : "%san update is running",
                         refuse);
        proto_service_release(&sp);
        json_decref(job);
        return;
    }
    json_t *before = proto_service_to_json(&s->spec), *after = proto_service_to_json(&sp);
    char target[96], why[64];
    snprintf(target, sizeof(target), "service:%s", s->name);
    snprintf(why, sizeof(why), "version %d -> %d", s->version, s->version + 1);
    json_decref(s->prev_spec);
    json_decref(s->prev_job);
    s->prev_spec = before;
    s->prev_job = s->job;
    s->job = job;
    proto_service_release(&s->spec);
    s->spec = sp;
    s->version++;
    str_copy(s->update_state, sizeof(s->update_state), "updating");
    s->update_msg[0] = '\0';
    rc = svc_save(c, s, now);
    if (rc == 0)
        rc = ctl_audit(c, r->id.user, "service.update", target, NULL, after, why);
    json_decref(after);
    if (rc < 0) { /* the row is as it was: so is the service, at docketd's next start */
        ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
        return;
    }
    log_info("service_update", "service=%s version=%d", s->name, s->version);
    if (svc_reconcile(c, s, now) && svc_save(c, s, now) < 0)
        log_error("service_save_failed", "service=%s error=\"%s\"", s->name,
                  store_errmsg(c->store));
    svc_lb_sync(c);
    ctl_reply_json(c, r->req, 200, json_pack("{s:o}", "service", svc_json(r, s)));
}

void h_service_delete(struct ctl_req *r)
{
    struct ctl *c = r->c;
    struct svc *s = svc_for_control(r);
    if (!s)
        return;
    char target[96];
    snprintf(target, sizeof(target), "service:%s", s->name);
    int rc = store_service_delete(c->store, s->name);
    if (rc == 0)
        rc = ctl_audit(c, r->id.user, "service.delete", target, NULL, NULL, NULL);
    if (rc < 0) {
        ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
        return;
    }
    int64_t now = clock_now_ms();
    for (int i = 0; i < s->nreps; i++)
        rep_cancel(c, &s->reps[i], now);
    for (struct svc **p = &c->services->head; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    ctl_reply_json(c, r->req, 200, json_pack("{s:s}", "deleted", s->name));
    svc_free(s);
    svc_lb_sync(c);
}

/* ------------------------------------------------------------------------------------ */
/* /metrics                                                                              */

static void metric_family(struct dbuf *b, const char *name, const char *type, const char *help)
{
    dbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The probes' families: failures reported (since docketd's start), replicas ready by their
 * readiness probe or not. */
static void svc_probe_metrics(struct ctl *c, struct dbuf *b)
{
    static const char *const probe[2] = {"readiness", "liveness"};
    metric_family(b, "docket_service_probe_failures_total", "counter",
                  "probe failures the agents reported (failure_threshold in a row), by probe");
    for (struct svc *s = c->services ? c->services->head : NULL; s; s = s->next)
        for (int p = 0; p < 2; p++)
            dbuf_printf(b,
                        "docket_service_probe_failures_total{service=\"%s\",project=\"%s\",probe="
                        "\"%s\"} %lld\n",
                        s->name, s->project, probe[p], s->probe_failures[p == 1]);
    metric_family(b, "docket_service_replicas_not_ready", "gauge",
                  "replicas running but failing their readiness probe (out of traffic)");
    for (struct svc *s = c->services ? c->services->head : NULL; s; s = s->next) {
        int n = 0;
        for (int i = 0; i < s->nreps; i++) {
            struct sched_job_view v;
            n += s->spec.readiness.kind != PROTO_PROBE_NONE && !s->reps[i].probe_ready &&
                 s->reps[i].job && sched_job_get(c->sched, s->reps[i].job, &v) == 0 &&
                 v.state == SCHED_RUNNING;
        }
        dbuf_printf(b, "docket_service_replicas_not_ready{service=\"%s\",project=\"%s\"} %d\n",
                    s->name, s->project, n);
    }
}

void ctl_services_metrics(struct ctl *c, struct dbuf *b)
{
    static const struct {
        const char *name, *type, *help;
    } fam[] = {
        {"docket_service_replicas", "gauge", "replicas a service wants"},
        {"docket_service_replicas_ready", "gauge", "of them, ready (docs/services.md)"},
        {"docket_service_replicas_crash_looping", "gauge", "of them, in a crash loop"},
        {"docket_service_restarts_total", "counter", "restarts and replacements of its replicas"},
    };
    svc_probe_metrics(c, b);
    int64_t now = clock_now_ms();
    for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
        metric_family(b, fam[f].name, fam[f].type, fam[f].help);
        for (struct svc *s = c->services ? c->services->head : NULL; s; s = s->next) {
            long long v[4] = {s->spec.replicas, 0, 0, 0};
            for (int i = 0; i < s->nreps; i++) {
                bool ready, looping;
                json_decref(rep_json(c, s, &s->reps[i], now, &ready, &looping));
                v[1] += ready;
                v[2] += looping;
                v[3] += s->reps[i].restarts;
            }
            /* names (str_is_name): no escaping needed */
            dbuf_printf(b, "%s{service=\"%s\",project=\"%s\"} %lld\n", fam[f].name, s->name,
                        s->project, v[f]);
        }
    }
}
