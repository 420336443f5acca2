/*
 * metrics.c - /healthz and /metrics (Prometheus text exposition format): live jobs by
 * state, tier and project; GPUs by state and type; nodes by state; histograms of queue
 * wait and cycle time; submissions and HTTP replies by status code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ctl.h"
#include "util/clock.h"
#include "util/dbuf.h"

void ctl_hist_observe(struct ctl_hist *h, double v)
{
    for (int i = 0; i < h->nbounds; i++)
        if (v <= h->bounds[i]) {
            h->counts[i]++;
            break;
        }
    h->count++;
    h->sum += v;
}

void h_healthz(struct ctl_req *r)
{
    struct sched_totals t;
    /* open to anyone (load balancers, probes): without a credential only that it is up;
     * the counts of jobs and nodes are for callers with one */
    if (!r->id.user[0]) {
        ctl_reply_json(r->c, r->req, 200, json_pack("{s:s}", "status", "ok"));
        return;
    }
    sched_totals_get(r->c->sched, &t);
    json_t *jobs = json_object(), *nodes = json_object();
    for (int i = 0; i < SCHED_JOB_STATE_COUNT; i++)
        if (t.jobs_by_state[i])
            json_object_set_new(jobs, sched_job_state_name((enum sched_job_state)i),
                                json_integer((json_int_t)t.jobs_by_state[i]));
    for (int i = 0; i < SCHED_NODE_STATE_COUNT; i++)
        if (t.nodes_by_state[i])
            json_object_set_new(nodes, sched_node_state_name((enum sched_node_state)i),
                                json_integer((json_int_t)t.nodes_by_state[i]));
    ctl_reply_json(r->c, r->req, 200,
                   json_pack("{s:s,s:s,s:I,s:o,s:o}", "status", "ok", "version", DOCKET_VERSION,
                             "uptime_ms", (json_int_t)(clock_mono_ms() - r->c->start_mono_ms),
                             "jobs", jobs, "nodes", nodes));
}

static void hist_text(struct dbuf *b, const char *name, const char *help, const struct ctl_hist *h)
{
    uint64_t cum = 0;
    dbuf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int i = 0; i < h->nbounds; i++) {
        cum += h->counts[i];
        dbuf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i], (unsigned long long)cum);
    }
    dbuf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
                (unsigned long long)h->count, name, h->sum, name, (unsigned long long)h->count);
}

/* Label values are names (str_is_name), so they need no escaping. */
static void jobs_text(struct ctl *c, struct dbuf *b)
{
    json_t *counts = json_object();
    for (size_t i = 0; i < sched_job_count(c->sched); i++) {
        struct sched_job_view v;
        if (sched_job_at(c->sched, i, &v) < 0)
            continue;
        char key[256];
        snprintf(key, sizeof(key), "state=\"%s\",tier=\"%s\",project=\"%s\"",
                 sched_job_state_name(v.state), v.tier ? v.tier : "", v.project ? v.project : "");
        json_t *n = json_object_get(counts, key);
        json_object_set_new(counts, key, json_integer(n ? json_integer_value(n) + 1 : 1));
    }
    dbuf_puts(b, "# HELP docket_jobs live jobs by state, tier and project\n"
                 "# TYPE docket_jobs gauge\n");
    const char *k;
    json_t *v;
    json_object_foreach(counts, k, v)
        dbuf_printf(b, "docket_jobs{%s} %lld\n", k, (long long)json_integer_value(v));
    json_decref(counts);
}

static void nodes_text(struct ctl *c, struct dbuf *b)
{
    json_t *gpus = json_object();
    size_t by_state[SCHED_NODE_STATE_COUNT] = {0};
    for (size_t i = 0; i < sched_node_count(c->sched); i++) {
        struct sched_node_view v;
        if (sched_node_get(c->sched, (uint32_t)i, &v) < 0)
            continue;
        by_state[v.state]++;
        if (v.gpus == 0)
            continue;
        bool usable = v.state == SCHED_NODE_UP;
        const char *states[] = {"used", usable ? "free" : "unavailable"};
        int values[] = {v.gpus_used, v.gpus - v.gpus_used};
        for (int s = 0; s < 2; s++) {
            char key[160];
            snprintf(key, sizeof(key), "state=\"%s\",gpu_type=\"%s\"", states[s],
                     v.gpu_type ? v.gpu_type : "");
            json_t *n = json_object_get(gpus, key);
            json_object_set_new(gpus, key,
                                json_integer((n ? json_integer_value(n) : 0) + values[s]));
        }
    }
    dbuf_puts(b, "# HELP docket_gpus GPUs by state and type\n# TYPE docket_gpus gauge\n");
    const char *k;
    json_t *v;
    json_object_foreach(gpus, k, v)
        dbuf_printf(b, "docket_gpus{%s} %lld\n", k, (long long)json_integer_value(v));
    json_decref(gpus);
    dbuf_puts(b, "# HELP docket_nodes nodes by state\n# TYPE docket_nodes gauge\n");
    for (int i = 0; i < SCHED_NODE_STATE_COUNT; i++)
        dbuf_printf(b, "docket_nodes{state=\"%s\"} %zu\n",
                    sched_node_state_name((enum sched_node_state)i), by_state[i]);
}

void h_metrics(struct ctl_req *r)
{
    struct ctl *c = r->c;
    struct dbuf b;
    dbuf_init(&b, 64u << 20);
    jobs_text(c, &b);
    nodes_text(c, &b);
    hist_text(&b, "docket_queue_wait_seconds", "time from submission to start",
              &c->metrics.queue_wait);
    hist_text(&b, "docket_cycle_seconds", "duration of a scheduling cycle", &c->metrics.cycle);
    hist_text(&b, "docket_commit_seconds", "duration of a group commit (fsync included)",
              &c->metrics.commit);
    dbuf_printf(&b,
                "# HELP docket_submissions_total jobs submitted\n"
                "# TYPE docket_submissions_total counter\ndocket_submissions_total %llu\n",
                (unsigned long long)c->metrics.submissions);
    dbuf_printf(&b,
                "# HELP docket_connections open HTTP connections (both servers)\n"
                "# TYPE docket_connections gauge\ndocket_connections %zu\n"
                "# HELP docket_connections_max the cap (max_connections)\n"
                "# TYPE docket_connections_max gauge\ndocket_connections_max %lld\n"
                "# HELP docket_connections_refused_total connections answered 503 at the cap\n"
                "# TYPE docket_connections_refused_total counter\n"
                "docket_connections_refused_total %llu\n"
                "# HELP docket_accept_errors_total accept() failures that paused accepting\n"
                "# TYPE docket_accept_errors_total counter\ndocket_accept_errors_total %llu\n",
                ctl_conn_count(c), (long long)c->conn_cap,
                (unsigned long long)c->metrics.conn_refused,
                (unsigned long long)c->metrics.accept_errors);
    dbuf_puts(&b, "# HELP docket_http_requests_total HTTP replies by status code\n"
                  "# TYPE docket_http_requests_total counter\n");
    for (int i = 100; i < 600; i++)
        if (c->metrics.http_by_code[i])
            dbuf_printf(&b, "docket_http_requests_total{code=\"%d\"} %llu\n", i,
                        (unsigned long long)c->metrics.http_by_code[i]);
    if (b.failed)
        ctl_reply_errorf(c, r->req, 500, NULL, "metrics too large");
    else
        ctl_reply_raw(c, r->req, 200, "text/plain; version=0.0.4", b.data, b.len);
    dbuf_release(&b);
}
