/*
 * usage.c - per-job usage in docketd (docs/monitoring.md): the samples agents post in
 * their usage events are stored downsampled (store.h "Usage samples"), each node's
 * latest GPU figures are kept in memory for `docket top` and /metrics, the class's idle
 * rule is applied to the job's summary, GET /v1/jobs/ID/usage serves summary and
 * series, and the loop prunes old samples in bounded slices.
 *
 * Idle rule: a running job whose GPUs all stay under the class's gpu_util_below for its
 * `for` is flagged once per idle stretch: a job event "idle" and a log line, and the
 * alerts engine is told (ctl_alerts_job_idle: its gpu_idle rules fire while the job stays
 * flagged and running, for every action); with action requeue or cancel (preemptible classes only,
 * checked by the policy reader) it is also stopped through the core, as `docket requeue` / `docket
 * cancel` would, with an audit row by "docketd". The times are the controller's clock at receipt,
 * never the node's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller/alerts.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/loop.h"
#include "controller/network.h"
#include "controller/usage.h"
#include "protocol/agent_msg.h"
#include "util/clock.h"
#include "util/parse.h"
#include "util/str.h"

enum {
    USAGE_PRUNE_SLICE = 500,  /* rows per table per tick: bounded work on the loop */
    USAGE_SERIES_MAX = 10080, /* 7 days of minutes */
    USAGE_RAW_MAX = 3600,     /* an hour of 1 s samples */
};

static json_t *known(int64_t v)
{
    return v >= 0 ? json_integer(v) : json_null();
}

/* The node's latest figures of the job's GPUs (for top and /metrics). */
static void node_gpus_take(struct ctl_node *n, uint64_t job, int64_t now,
                           const struct agent_sample *s)
{
    str_copy(n->gpu_source, sizeof(n->gpu_source), s->gpu_source);
    for (int i = 0; i < s->ngpus; i++) {
        int k = s->gpus[i].index;
        if (k < 0 || k >= AGENT_MAX_GPUS)
            continue;
        n->gpu_last[k].g = s->gpus[i];
        n->gpu_last[k].job = job;
        n->gpu_last[k].time_ms = now;
    }
}

/* The sample folded into one point: mean utilisation of the GPUs that report one, memory
 * and power summed, the hottest temperature, errors summed. */
static void point_of(const struct agent_sample *s, struct store_usage_point *p)
{
    int64_t util = 0, nutil = 0;
    p->cpu_ms = s->cpu_ms;
    p->mem_bytes = s->mem_bytes;
    p->mem_peak_bytes = s->mem_peak_bytes;
    p->io_read_bytes = s->io_read_bytes;
    p->io_write_bytes = s->io_write_bytes;
    p->gpu_mem_mb = p->gpu_power_mw = p->gpu_errors = -1;
    p->gpu_temp_c = -1;
    for (int i = 0; i < s->ngpus; i++) {
        const struct agent_gpu_sample *g = &s->gpus[i];
        if (g->util >= 0) {
            util += g->util;
            nutil++;
        }
        if (g->mem_used_mb >= 0)
            p->gpu_mem_mb = (p->gpu_mem_mb < 0 ? 0 : p->gpu_mem_mb) + g->mem_used_mb;
        if (g->power_mw >= 0)
            p->gpu_power_mw = (p->gpu_power_mw < 0 ? 0 : p->gpu_power_mw) + g->power_mw;
        if (g->temp_c > p->gpu_temp_c)
            p->gpu_temp_c = g->temp_c;
        int64_t e =
            (g->ecc_errors > 0 ? g->ecc_errors : 0) + (g->xid_errors > 0 ? g->xid_errors : 0);
        if (g->ecc_errors >= 0 || g->xid_errors >= 0)
            p->gpu_errors = (p->gpu_errors < 0 ? 0 : p->gpu_errors) + e;
    }
    p->gpu_util = nutil ? (int)(util / nutil) : -1;
}

static int idle_stop(struct ctl *c, uint64_t id, const struct proto_idle_rule *rule,
                     const char *why)
{
    struct sched_error se;
    int64_t now = clock_now_ms();
    const char *act = rule->action == PROTO_IDLE_CANCEL ? "cancel" : "requeue";
    char action[32], target[32];
    snprintf(action, sizeof(action), "job.%s", act);
    snprintf(target, sizeof(target), "job:%llu", (unsigned long long)id);
    json_t *before = json_pack("{s:s}", "state", "RUNNING");
    json_t *after = json_pack("{s:s}", "state", "STOPPING");
    int rc = ctl_audit(c, "docketd", action, target, before, after, why);
    json_decref(before);
    json_decref(after);
    if (rc < 0)
        return rc;
    /* store first (the audit row), then the core; the cycle persists the stop */
    rc = rule->action == PROTO_IDLE_CANCEL ? sched_job_cancel(c->sched, id, now, &se)
                                           : sched_job_requeue(c->sched, id, now, &se);
    if (rc < 0)
        log_warn("idle_action_refused", "job=%llu action=%s reason=\"%s\"", (unsigned long long)id,
                 act, se.message);
    ctl_cycle_soon(c);
    return 0;
}

/* Flag the job when its idle stretch reached the rule's time (once per stretch). */
static int idle_check(struct ctl *c, uint64_t id, const struct sched_job_view *v,
                      const struct proto_idle_rule *rule, struct store_usage_summary *s,
                      int64_t now)
{
    if (rule->action <= PROTO_IDLE_NONE || v->state != SCHED_RUNNING || !s->idle_since_ms ||
        s->idle_flagged_ms || now - s->idle_since_ms < rule->for_ms)
        return 0;
    char why[160];
    snprintf(why, sizeof(why), "GPUs under %d%% for %llds (since the first idle sample)",
             rule->gpu_util_below, (long long)((now - s->idle_since_ms) / 1000));
    int rc = store_usage_flag(c->store, id, now);
    s->idle_flagged_ms = now;
    if (rc == 0)
        rc = ctl_job_event(c, id, "idle", "", "", "", proto_idle_action_name(rule->action), why);
    if (rc < 0)
        return rc;
    log_warn("job_idle", "job=%llu project=%s class=%s action=%s idle_since_ms=%lld",
             (unsigned long long)id, v->project, v->class_name,
             proto_idle_action_name(rule->action), (long long)s->idle_since_ms);
    if (rule->action == PROTO_IDLE_REQUEUE || rule->action == PROTO_IDLE_CANCEL)
        return idle_stop(c, id, rule, why);
    return 0;
}

int ctl_usage_apply(struct ctl *c, struct ctl_node *n, uint64_t id, int run,
                    const struct agent_sample *s)
{
    struct sched_job_view v;
    if (sched_job_get(c->sched, id, &v) < 0)
        return 0; /* a gone job: a stale repeat */
    int64_t now = clock_now_ms();
    struct proto_idle_rule rule = ctl_class_node(c, v.class_name).idle;
    struct store_usage_point p;
    struct store_usage_summary sum;
    memset(&p, 0, sizeof(p));
    p.job = id;
    p.run = run;
    str_copy(p.node, sizeof(p.node), n->name);
    p.time_ms = now;
    point_of(s, &p);
    int below = rule.action > PROTO_IDLE_NONE ? rule.gpu_util_below : PROTO_IDLE_DEFAULT_BELOW;
    int rc = store_usage_add(c->store, &p, s->gpu_source, below, &sum);
    if (rc < 0)
        return rc;
    node_gpus_take(n, id, now, s);
    if (s->net_refused >= 0)
        ctl_net_refused(c, id, n->name, s->net_refused);
    rc = idle_check(c, id, &v, &rule, &sum, now);
    /* the gpu_idle alert rules see the job while its stretch stays flagged */
    ctl_alerts_job_idle(c, id, sum.idle_since_ms,
                        rule.action > PROTO_IDLE_NONE ? sum.idle_flagged_ms : 0,
                        rule.gpu_util_below);
    return rc;
}

void ctl_usage_prune(struct ctl *c)
{
    if (store_begin(c->store) < 0)
        return;
    int n = store_usage_prune(c->store, clock_now_ms(), USAGE_PRUNE_SLICE);
    if (n < 0)
        log_warn("usage_prune_failed", "error=\"%s\"", store_errmsg(c->store));
    ctl_commit_soon(c);
}

json_t *ctl_usage_node_json(const struct ctl_node *n)
{
    json_t *gpus = json_array();
    int64_t now = clock_now_ms();
    for (int k = 0; k < AGENT_MAX_GPUS; k++) {
        const struct ctl_gpu_last *l = &n->gpu_last[k];
        if (!l->time_ms || now - l->time_ms > CTL_GPU_SAMPLE_FRESH_MS)
            continue;
        json_t *o = json_pack("{s:i,s:I,s:I}", "index", k, "job", (json_int_t)l->job, "time_ms",
                              (json_int_t)l->time_ms);
        json_object_set_new(o, "util", known(l->g.util));
        json_object_set_new(o, "mem_used_mb", known(l->g.mem_used_mb));
        json_object_set_new(o, "power_w",
                            l->g.power_mw >= 0 ? json_real((double)l->g.power_mw / 1000.0)
                                               : json_null());
        json_object_set_new(o, "temp_c", known(l->g.temp_c));
        json_object_set_new(o, "ecc_errors", known(l->g.ecc_errors));
        json_object_set_new(o, "xid_errors", known(l->g.xid_errors));
        json_array_append_new(gpus, o);
    }
    return json_pack("{s:s,s:o}", "source", n->gpu_source[0] ? n->gpu_source : "none", "gpus",
                     gpus);
}

/* ------------------------------------------------------------------------------------ */
/* GET /v1/jobs/ID/usage                                                                 */

json_t *ctl_usage_summary_json(const struct store_usage_summary *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "samples", json_integer(s->samples));
    json_object_set_new(o, "gpu_source", json_string(s->gpu_source[0] ? s->gpu_source : "none"));
    json_object_set_new(o, "first_ms", s->samples ? json_integer(s->first_ms) : json_null());
    json_object_set_new(o, "last_ms", s->samples ? json_integer(s->last_ms) : json_null());
    json_object_set_new(o, "cpu_seconds", json_real((double)s->cpu_ms / 1000.0));
    json_object_set_new(o, "mem_peak_bytes", json_integer(s->mem_peak_bytes));
    json_object_set_new(o, "io_read_bytes", json_integer(s->io_read_bytes));
    json_object_set_new(o, "io_write_bytes", json_integer(s->io_write_bytes));
    json_object_set_new(o, "gpu_util_mean",
                        s->gpu_samples ? json_real((double)s->gpu_util_sum / (double)s->gpu_samples)
                                       : json_null());
    json_object_set_new(o, "gpu_idle_seconds", json_real((double)s->gpu_idle_ms / 1000.0));
    json_object_set_new(o, "last_busy_ms",
                        s->last_busy_ms ? json_integer(s->last_busy_ms) : json_null());
    json_object_set_new(o, "idle_since_ms",
                        s->idle_since_ms ? json_integer(s->idle_since_ms) : json_null());
    json_object_set_new(o, "idle_flagged_ms",
                        s->idle_flagged_ms ? json_integer(s->idle_flagged_ms) : json_null());
    json_object_set_new(o, "gpu_errors", json_integer(s->gpu_errors));
    return o;
}

static int row_cb(void *arg, const struct store_usage_row *r)
{
    json_t *o = json_pack("{s:I,s:I}", "time_ms", (json_int_t)r->time_ms, "samples",
                          (json_int_t)r->samples);
    json_object_set_new(o, "cpu_cores", r->cpu_cores >= 0 ? json_real(r->cpu_cores) : json_null());
    json_object_set_new(o, "mem_bytes", known(r->mem_bytes));
    json_object_set_new(o, "mem_peak_bytes", known(r->mem_peak_bytes));
    json_object_set_new(o, "io_read_bytes", known(r->io_read_bytes));
    json_object_set_new(o, "io_write_bytes", known(r->io_write_bytes));
    json_object_set_new(o, "gpu_util", known(r->gpu_util));
    json_object_set_new(o, "gpu_mem_mb", known(r->gpu_mem_mb));
    json_object_set_new(o, "gpu_power_w",
                        r->gpu_power_mw >= 0 ? json_real((double)r->gpu_power_mw / 1000.0)
                                             : json_null());
    if (r->node[0])
        json_object_set_new(o, "node", json_string(r->node));
    json_array_append_new(arg, o);
    return 0;
}

/* ?resolution=raw|minute (default: raw while the job's samples are all within the raw
 * keep, else minute), ?since=MS */
void h_job_usage(struct ctl_req *r)
{
    struct ctl *c = r->c;
    int64_t id, since = 0;
    struct store_usage_summary s;
    const char *res = ctl_query(r, "resolution"), *sn = ctl_query(r, "since");
    if (parse_int64(r->arg[0], 1, INT64_MAX, &id) < 0) {
        ctl_reply_errorf(c, r->req, 404, NULL, "no such job '%.32s'", r->arg[0]);
        return;
    }
    if (res && strcmp(res, "raw") != 0 && strcmp(res, "minute") != 0) {
        ctl_reply_errorf(c, r->req, 400, "resolution", "resolution must be raw or minute");
        return;
    }
    if (sn && parse_int64(sn, 0, INT64_MAX, &since) < 0) {
        ctl_reply_errorf(c, r->req, 400, "since", "since must be a time in ms since the epoch");
        return;
    }
    int rc = store_usage_summary_get(c->store, (uint64_t)id, &s);
    if (rc < 0 && rc != -ENOENT) {
        ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
        return;
    }
    bool raw = res ? strcmp(res, "raw") == 0
                   : rc == -ENOENT || clock_now_ms() - s.first_ms < STORE_USAGE_RAW_KEEP_MS;
    json_t *series = json_array();
    if (rc == 0 && store_usage_series(c->store, (uint64_t)id, raw, since,
                                      raw ? USAGE_RAW_MAX : USAGE_SERIES_MAX, row_cb, series) < 0) {
        json_decref(series);
        ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
        return;
    }
    ctl_reply_json(c, r->req, 200,
                   json_pack("{s:I,s:o,s:s,s:o}", "job", (json_int_t)id, "summary",
                             rc == 0 ? ctl_usage_summary_json(&s) : json_null(), "resolution",
                             raw ? "raw" : "minute", "series", series));
}

/* ------------------------------------------------------------------------------------ */
/* A project's GPU use over time                                                         */

void ctl_usage_spread(double *gpu_ms, int n, int64_t since, int64_t step, int64_t gpus,
                      int64_t start, int64_t end)
{
    int64_t until = since + (int64_t)n * step;
    int64_t s = start > since ? start : since, e = end < until ? end : until;
    for (int64_t i = (s - since) / step; e > s && i < n; i++) {
        int64_t bs = since + i * step, be = bs + step;
        if (bs >= e)
            break;
        gpu_ms[i] += (double)gpus * (double)((e < be ? e : be) - (s > bs ? s : bs));
    }
}

struct spread {
    double *gpu_ms;
    int n;
    int64_t since, step, now;
};

static int span_cb(void *arg, int64_t gpus, int64_t start_ms, int64_t end_ms)
{
    struct spread *sp = arg;
    ctl_usage_spread(sp->gpu_ms, sp->n, sp->since, sp->step, gpus, start_ms,
                     end_ms ? end_ms : sp->now);
    return 0;
}

/* ?days=N (1..90, default 30) &step=day|hour (default day; hour for 14 days at most) */
void h_project_usage(struct ctl_req *r)
{
    struct ctl *c = r->c;
    int idx = sched_project_find(c->sched, r->arg[0]);
    struct sched_project_view v;
    if (idx < 0 || sched_project_get(c->sched, (size_t)idx, &v) < 0) {
        ctl_reply_errorf(c, r->req, 404, NULL, "no such project '%.64s'", r->arg[0]);
        return;
    }
    int64_t days = 30;
    const char *dq = ctl_query(r, "days"), *sq = ctl_query(r, "step");
    if (dq && parse_int64(dq, 1, 90, &days) < 0) {
        ctl_reply_errorf(c, r->req, 400, "days", "days must be an integer from 1 to 90");
        return;
    }
    bool hourly = sq && strcmp(sq, "hour") == 0;
    if (sq && !hourly && strcmp(sq, "day") != 0) {
        ctl_reply_errorf(c, r->req, 400, "step", "step must be day or hour");
        return;
    }
    if (hourly && days > 14) {
        ctl_reply_errorf(c, r->req, 400, "step", "step=hour covers 14 days at most");
        return;
    }
    int64_t step = hourly ? 3600000 : 86400000, now = clock_now_ms();
    int n = (int)(days * 86400000 / step);
    /* whole steps in UTC, the last one the step now in progress */
    int64_t since = (now / step + 1) * step - (int64_t)n * step;
    double *gpu_ms = calloc((size_t)n, sizeof(*gpu_ms));
    struct spread sp = {gpu_ms, n, since, step, now};
    if (!gpu_ms ||
        store_project_runs(c->store, v.spec.name, since, since + n * step, span_cb, &sp) < 0) {
        free(gpu_ms);
        ctl_reply_errorf(c, r->req, 500, NULL, "store: %s", store_errmsg(c->store));
        return;
    }
    json_t *t = json_array(), *used = json_array();
    for (int i = 0; i < n; i++) {
        int64_t bs = since + i * step, span = (bs + step < now ? bs + step : now) - bs;
        json_array_append_new(t, json_integer(bs));
        json_array_append_new(used, json_real(span > 0 ? gpu_ms[i] / (double)span : 0));
    }
    free(gpu_ms);
    ctl_reply_json(c, r->req, 200,
                   json_pack("{s:s,s:I,s:I,s:I,s:i,s:i,s:f,s:o,s:o}", "project", v.spec.name,
                             "since_ms", (json_int_t)since, "until_ms", (json_int_t)now, "step_ms",
                             (json_int_t)step, "gpus_in_use", v.gpus_in_use, "gpu_limit",
                             v.spec.gpu_limit, "guarantee_gpus", v.spec.guarantee_gpus, "t", t,
                             "gpus", used));
}

/* ------------------------------------------------------------------------------------ */
/* What explain says of a running job                                                    */

json_t *ctl_usage_explain(struct ctl *c, uint64_t id, const char *class_name)
{
    struct store_usage_summary s;
    struct proto_idle_rule rule = ctl_class_node(c, class_name).idle;
    int below = rule.action > PROTO_IDLE_NONE ? rule.gpu_util_below : PROTO_IDLE_DEFAULT_BELOW;
    json_t *o = json_pack("{s:i}", "gpu_util_below", below);
    if (rule.action > PROTO_IDLE_NONE)
        json_object_set_new(o, "idle_rule",
                            json_pack("{s:I,s:s}", "for_ms", (json_int_t)rule.for_ms, "action",
                                      proto_idle_action_name(rule.action)));
    if (store_usage_summary_get(c->store, id, &s) < 0 || s.samples == 0) {
        json_object_set_new(o, "samples", json_integer(0));
        return o;
    }
    json_object_set_new(o, "samples", json_integer(s.samples));
    json_object_set_new(o, "gpu_source", json_string(s.gpu_source));
    json_object_set_new(o, "gpu_samples", json_integer(s.gpu_samples));
    json_object_set_new(o, "last_busy_ms",
                        s.last_busy_ms ? json_integer(s.last_busy_ms) : json_null());
    json_object_set_new(o, "idle_since_ms",
                        s.idle_since_ms ? json_integer(s.idle_since_ms) : json_null());
    json_object_set_new(o, "idle_flagged_ms",
                        s.idle_flagged_ms ? json_integer(s.idle_flagged_ms) : json_null());
    json_object_set_new(o, "last_sample_ms", json_integer(s.last_ms));
    return o;
}
