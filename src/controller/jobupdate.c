/*
 * jobupdate.c - PATCH /v1/jobs/ID (jobupdate.h): a submitted job's request changed, as
 * Slurm's `scontrol update JobId=N ...` changes it (docs/slurm.md, docs/api.md "Jobs").
 * A pending or held job changes its name, time limit, dependencies, partition, node
 * count, constraint or comment, checked as a submission is; a running one only lowers its
 * time limit. The store is written first, then the core told (sched_job_update,
 * sched_job_set_limit); a refusal from either answers the error and the request's
 * savepoint takes the write back, so nothing changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/authz.h"
#include "controller/http.h"
#include "controller/jobs.h"
#include "controller/deps.h"
#include "controller/jobupdate.h"
#include "controller/loop.h"
#include "controller/site.h"
#include "util/log.h"
#include "util/clock.h"
#include "util/str.h"

/* What the audit entry and the event name: the changed members, before and after. */
static json_t *fields_of(const json_t *spec, const json_t *patch)
{
    json_t *o = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)patch, k, v) {
        if (strcmp(k, "reason") == 0)
            continue;
        const char *stored = strcmp(k, "time_limit") == 0 ? "time_limit_ms" : k;
        json_t *was = json_object_get(spec, stored);
        json_object_set(o, stored, was ? was : json_null());
    }
    return o;
}

static int reason_of(struct ctl_req *r, const json_t *patch, char *reason, size_t len)
{
    json_t *v = json_object_get(patch, "reason");
    reason[0] = '\0';
    if (v && (!json_is_string(v) || json_string_length(v) > 1024)) {
        ctl_reply_errorf(r->c, r->req, 400, "reason",
                         "reason must be a string of at most 1024 bytes");
        return -EINVAL;
    }
    if (v)
        str_copy(reason, len, json_string_value(v));
    return 0;
}

/* A partition named anew: the old one's nodes go, the new one's come, and the new one
 * must admit the job's project (site.c), as at submission. */
static int move_partition(struct ctl_req *r, struct proto_jobspec *ps, const char *old)
{
    char want[sizeof(ps->partition)];
    struct proto_error e;
    if (strcmp(old, ps->partition) == 0)
        return 0;
    str_copy(want, sizeof(want), ps->partition);
    str_copy(ps->partition, sizeof(ps->partition), old);
    ctl_site_job_leave_partition(r->c, ps);
    str_copy(ps->partition, sizeof(ps->partition), want);
    if (ctl_site_job_spec(r->c, ps, &e) < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return -EINVAL;
    }
    return 0;
}

/* Slurm: "Only the Slurm administrator or root can increase job's TimeLimit." */
static int limit_allowed(struct ctl_req *r, int64_t was, int64_t now_ms)
{
    if (now_ms <= was || r->id.role == CTL_ROLE_ADMIN)
        return 0;
    ctl_reply_errorf(r->c, r->req, 403, "time_limit",
                     "only an admin raises a job's time limit (%lld to %lld minutes), as in "
                     "Slurm; a lower one is yours to set",
                     (long long)(was / 60000), (long long)(now_ms / 60000));
    return -EPERM;
}

/* The changes a pending job's request may take, checked as its submission was. */
static int patch_pending(struct ctl_req *r, const json_t *patch, struct proto_jobspec *ps,
                         const struct store_job *row)
{
    struct proto_error e;
    char old_part[sizeof(ps->partition)];
    int64_t old_limit = ps->time_limit_ms;
    int old_nodes = ps->nodes;
    str_copy(old_part, sizeof(old_part), ps->partition);
    memset(&e, 0, sizeof(e));
    if (proto_jobspec_patch(patch, clock_now_ms(), ps, &e) < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return -EINVAL;
    }
    const json_t *slurm = json_object_get(ps->extra, "slurm");
    if (ps->nodes != old_nodes && json_object_get(slurm, "ntasks")) {
        ctl_reply_errorf(r->c, r->req, 400, "nodes",
                         "job %llu's %lld tasks were laid out on %d nodes at submission: "
                         "cancel it and submit it again with -N %d",
                         (unsigned long long)row->id,
                         (long long)json_integer_value(json_object_get(slurm, "ntasks")), old_nodes,
                         ps->nodes);
        return -EINVAL;
    }
    if (ps->time_limit_ms <= 0) {
        ctl_reply_errorf(r->c, r->req, 400, "time_limit", "time_limit must be positive");
        return -EINVAL;
    }
    if (limit_allowed(r, old_limit, ps->time_limit_ms) < 0 || move_partition(r, ps, old_part) < 0 ||
        ctl_job_resolve_deps(r, ps) < 0)
        return -EINVAL;
    if (ctl_site_job_check(r->c, ps, &e) < 0) { /* the partition's max time */
        ctl_reply_error(r->c, r->req, &e);
        return -EINVAL;
    }
    return 0;
}

/* A running job lowers its time limit; nothing else of it changes. */
static int patch_running(struct ctl_req *r, const json_t *patch, struct proto_jobspec *ps,
                         const struct store_job *row)
{
    struct proto_error e;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)patch, k, v) {
        if (strcmp(k, "time_limit") && strcmp(k, "reason")) {
            ctl_reply_errorf(r->c, r->req, 409, k,
                             "job %llu is %s: only its time limit changes now, and only down",
                             (unsigned long long)row->id, sched_job_state_name(row->state));
            return -EBUSY;
        }
    }
    int64_t was = ps->time_limit_ms;
    memset(&e, 0, sizeof(e));
    if (proto_jobspec_patch(patch, clock_now_ms(), ps, &e) < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return -EINVAL;
    }
    /* the reservations behind it counted on its end: a running job's limit only goes down,
       for everyone (Slurm lets an administrator raise it) */
    if (ps->time_limit_ms <= 0 || (was > 0 && ps->time_limit_ms > was)) {
        ctl_reply_errorf(r->c, r->req, 409, "time_limit",
                         "job %llu is %s: its time limit may only go down (from %lld minutes)",
                         (unsigned long long)row->id, sched_job_state_name(row->state),
                         (long long)(was / 60000));
        return -EBUSY;
    }
    return 0;
}

/* The row with the new request: its own spec text from now on. */
static int write_request(struct ctl *c, const struct store_job *row, const struct proto_jobspec *ps,
                         struct store_job *out)
{
    *out = *row;
    out->spec = out->alloc = out->exit = out->usage = NULL;
    ctl_job_fill_core(out, ps, row->array_limit);
    str_copy(out->name, sizeof(out->name), ps->name);
    str_copy(out->tier, sizeof(out->tier), ps->tier);
    str_copy(out->class_name, sizeof(out->class_name), ps->class_name);
    json_t *spec = proto_jobspec_to_json(ps);
    out->spec = spec ? json_dumps(spec, JSON_COMPACT) : NULL;
    json_decref(spec);
    out->spec_id = 0;
    if (!out->spec)
        return -ENOMEM;
    return store_job_respec(c->store, out);
}

/* The core takes the new request; a refusal answers the error (the savepoint then takes
 * the row back). Out of memory once the job had left the core: docketd stops. */
static int tell_core(struct ctl_req *r, const struct store_job *row, const struct proto_jobspec *ps)
{
    struct sched_error se;
    memset(&se, 0, sizeof(se));
    int rc;
    if (row->state == SCHED_PENDING || row->state == SCHED_HELD) {
        struct sched_job_spec sp;
        ctl_spec_to_sched(ps, row->id, row->submit_ms, row->array_id, row->array_limit, &sp);
        sp.preempt_count = row->preempt_count;
        ctl_deps_settle(r->c, &sp);
        rc = sched_job_update(r->c->sched, &sp, clock_now_ms(), &se);
    } else {
        rc = sched_job_set_limit(r->c->sched, row->id, ps->time_limit_ms, clock_now_ms(), &se);
    }
    if (rc == -ENOMEM) {
        ctl_store_diverged(r->c, "job_update", row->id);
        return rc;
    }
    if (rc < 0)
        ctl_reply_errorf(r->c, r->req, rc == -ENOENT ? 409 : 400, se.field[0] ? se.field : NULL,
                         "%s", se.message);
    return rc;
}

/* A running job's lowered limit to its nodes' agents ("limit" commands): each ends it
 * there at the new limit, and a Slurm job's --signal=SIG@T warning moves to T before it
 * (the supervisor times it; docs/slurm.md "scontrol update"). */
static void tell_nodes_limit(struct ctl *c, uint64_t id, int64_t limit_ms)
{
    struct sched_job_view v;
    if (sched_job_get(c->sched, id, &v) < 0)
        return; /* it ended already: nothing to move */
    for (int i = 0; i < v.nallocs; i++) {
        struct ctl_node *n = ctl_node_at(c, v.allocs[i].node);
        if (n && ctl_node_command(c, n, id,
                                  json_pack("{s:s,s:I,s:I}", "type", "limit", "job", (json_int_t)id,
                                            "time_limit_ms", (json_int_t)limit_ms)) < 0)
            log_warn("limit_command_failed", "job=%llu node=%s", (unsigned long long)id,
                     sched_node_name(c->sched, v.allocs[i].node));
    }
}

/* The event and the audit entry, each naming what changed from what. */
static int record(struct ctl_req *r, const struct store_job *row, const json_t *before,
                  const json_t *after, const char *reason)
{
    char target[32], detail[128];
    const char *state = sched_job_state_name(row->state);
    size_t n = (size_t)snprintf(detail, sizeof(detail), "changed:");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)after, k, v) {
        int w = snprintf(detail + n, sizeof(detail) - n, " %s", k);
        if (w < 0 || (size_t)w >= sizeof(detail) - n)
            break;
        n += (size_t)w;
    }
    snprintf(target, sizeof(target), "job:%llu", (unsigned long long)row->id);
    int rc = ctl_job_event(r->c, row->id, "update", state, state, "", r->id.user, detail);
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, "job.update", target, before, after, reason);
    return rc;
}

static void update(struct ctl_req *r, const struct store_job *row, const json_t *patch,
                   const char *reason)
{
    struct proto_jobspec ps;
    struct proto_error e;
    struct store_job now_row;
    json_t *stored = row->spec ? json_loads(row->spec, 0, NULL) : NULL;
    memset(&e, 0, sizeof(e));
    if (!stored || proto_jobspec_load(stored, &ps, &e) < 0) {
        json_decref(stored);
        ctl_reply_errorf(r->c, r->req, 500, NULL, "job %llu: its stored spec cannot be read",
                         (unsigned long long)row->id);
        return;
    }
    bool waiting = row->state == SCHED_PENDING || row->state == SCHED_HELD;
    json_t *before = fields_of(stored, patch);
    int rc = waiting ? patch_pending(r, patch, &ps, row) : patch_running(r, patch, &ps, row);
    memset(&now_row, 0, sizeof(now_row));
    if (rc == 0 && (rc = write_request(r->c, row, &ps, &now_row)) < 0)
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
    if (rc == 0)
        rc = tell_core(r, row, &ps);
    if (rc == 0) {
        json_t *spec = json_loads(now_row.spec, 0, NULL);
        json_t *after = fields_of(spec, patch);
        if (record(r, row, before, after, reason) < 0) {
            ctl_store_diverged(r->c, "job_update_record", row->id); /* the core changed */
        } else {
            if (!waiting)
                tell_nodes_limit(r->c, row->id, ps.time_limit_ms);
            ctl_cycle_now(r->c); /* apply what the change decided before answering */
            ctl_reply_json(r->c, r->req, 200,
                           json_pack("{s:o}", "job", ctl_job_json_for(r, &now_row)));
        }
        json_decref(after);
        json_decref(spec);
    }
    store_job_release(&now_row);
    json_decref(before);
    json_decref(stored);
    proto_jobspec_release(&ps);
}

void h_job_update(struct ctl_req *r)
{
    struct store_job row;
    char reason[1100];
    if (ctl_job_arg(r, &row) < 0)
        return;
    json_t *patch = ctl_body_json(r, false);
    if (patch && !json_is_object(patch)) {
        ctl_reply_errorf(r->c, r->req, 400, NULL, "the change must be a JSON object");
    } else if (patch && reason_of(r, patch, reason, sizeof(reason)) == 0) {
        if (sched_job_state_terminal((enum sched_job_state)row.state))
            ctl_reply_errorf(r->c, r->req, 409, NULL, "job %llu is already %s",
                             (unsigned long long)row.id, sched_job_state_name(row.state));
        else if (row.state == SCHED_STOPPING)
            ctl_reply_errorf(r->c, r->req, 409, NULL, "job %llu is stopping",
                             (unsigned long long)row.id);
        else
            update(r, &row, patch, reason);
    }
    json_decref(patch);
    store_job_release(&row);
}
