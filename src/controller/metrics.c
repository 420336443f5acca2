/*
 * metrics.c - /healthz and /metrics (Prometheus text exposition format 0.0.4): live jobs
 * by state, tier and project; GPUs by state (busy, idle, reserved, draining, down) and
 * type; nodes by state; per-node gauges; each GPU's latest usage sample; histograms of
 * queue wait per tier and of cycle time; submissions, connections and HTTP replies.
 * The names and their meaning are listed in docs/monitoring.md "Metrics".
 */
#include <errno.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/alerts.h"
#include "controller/network.h"
#include "controller/storage.h"
#include "controller/conn.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/metrics.h"
#include "controller/services.h"
#include "controller/stream.h"
#include "controller/usage.h"
#include "util/clock.h"
#include "util/dbuf.h"
#include "util/str.h"
#include "util/xalloc.h"

#define METRICS_SLICE_NODES 1000 /* nodes of one family a slice (a slice a loop turn) */

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

void ctl_metrics_queue_wait(struct ctl *c, const char *tier, double seconds)
{
    struct ctl_metrics *m = &c->metrics;
    int k = 0;
    while (k < m->nwait_tiers && strcmp(m->wait_by_tier[k].tier, tier) != 0)
        k++;
    if (k == m->nwait_tiers) {
        if (k == (int)(sizeof(m->wait_by_tier) / sizeof(m->wait_by_tier[0])))
            k--; /* more tier names than tiers ever were (renames): the last slot takes them */
        else
            m->nwait_tiers++;
        str_copy(m->wait_by_tier[k].tier, sizeof(m->wait_by_tier[k].tier), tier);
        m->wait_by_tier[k].h =
            (struct ctl_hist){m->queue_wait.bounds, m->queue_wait.nbounds, {0}, 0, 0};
    }
    ctl_hist_observe(&m->wait_by_tier[k].h, seconds);
    ctl_hist_observe(&m->queue_wait, seconds);
}

void h_healthz(struct ctl_req *r)
{
    struct sched_totals t;
    /* open to anyone (load balancers, probes): without a credential only that it is up;
     * the counts of jobs and nodes are for callers with one */
    if (!r->id.user[0]) {
        ctl_reply_json_now(r->c, r->req, 200, json_pack("{s:s}", "status", "ok"));
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
    ctl_reply_json_now(r->c, r->req, 200,
                       json_pack("{s:s,s:s,s:I,s:o,s:o}", "status", "ok", "version", DOCKET_VERSION,
                                 "uptime_ms", (json_int_t)(clock_mono_ms() - r->c->start_mono_ms),
                                 "jobs", jobs, "nodes", nodes));
}

/* One histogram series: cumulative _bucket lines, +Inf, _sum, _count. `labels` is ""
 * or `k="v",` (with its trailing comma). */
static void hist_series(struct dbuf *b, const char *name, const char *labels,
                        const struct ctl_hist *h)
{
    uint64_t cum = 0;
    size_t ll = strlen(labels);
    for (int i = 0; i < h->nbounds; i++) {
        cum += h->counts[i];
        dbuf_printf(b, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels, h->bounds[i],
                    (unsigned long long)cum);
    }
    dbuf_printf(b, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels, (unsigned long long)h->count);
    /* _sum and _count carry the labels without the trailing comma */
    dbuf_printf(b, "%s_sum%s%.*s%s %.6f\n%s_count%s%.*s%s %llu\n", name, ll ? "{" : "",
                (int)(ll ? ll - 1 : 0), labels, ll ? "}" : "", h->sum, name, ll ? "{" : "",
                (int)(ll ? ll - 1 : 0), labels, ll ? "}" : "", (unsigned long long)h->count);
}

static void help(struct dbuf *b, const char *name, const char *type, const char *text)
{
    dbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* Label values are names (str_is_name), so they need no escaping. Counted into a JSON
 * object keyed by the label text, printed in its order. */
static void count_add(json_t *counts, const char *key, json_int_t n)
{
    json_t *v = json_object_get(counts, key);
    json_object_set_new(counts, key, json_integer((v ? json_integer_value(v) : 0) + n));
}

static void counts_text(struct dbuf *b, const char *name, json_t *counts)
{
    const char *k;
    json_t *v;
    json_object_foreach(counts, k, v)
        dbuf_printf(b, "%s{%s} %lld\n", name, k, (long long)json_integer_value(v));
    json_decref(counts);
}

static void jobs_text(struct ctl *c, struct dbuf *b)
{
    json_t *counts = json_object();
    /* every slot: live jobs sit after the holes ended ones leave (not 0..count-1) */
    for (size_t i = 0; i < sched_job_slots(c->sched); i++) {
        struct sched_job_view v;
        if (sched_job_at(c->sched, i, &v) < 0)
            continue;
        char key[256];
        snprintf(key, sizeof(key), "state=\"%s\",tier=\"%s\",project=\"%s\"",
                 sched_job_state_name(v.state), v.tier ? v.tier : "", v.project ? v.project : "");
        count_add(counts, key, 1);
    }
    help(b, "docket_jobs", "gauge", "live jobs by state, tier and project");
    counts_text(b, "docket_jobs", counts);
}

static void alerts_text(struct ctl *c, struct dbuf *b)
{
    help(b, "docket_alerts_firing", "gauge",
         "alert instances firing per rule of the policy (silenced ones too; docs/alerts.md)");
    counts_text(b, "docket_alerts_firing", ctl_alerts_firing_counts(c));
}

/* GPUs of a node by state: busy (allocated), and the free ones as idle (UP), reserved
 * (UP, in the reserved zone), draining (DRAINING, DRAINED) or down (DOWN, UNREACHABLE,
 * UNHEALTHY: all its GPUs). The states add up to the node's GPUs. */
static void gpu_states(const struct sched_node_view *v, int out[5])
{
    int free_gpus = v->gpus - v->gpus_used;
    memset(out, 0, 5 * sizeof(int));
    switch (v->state) {
    case SCHED_NODE_UP:
        out[0] = v->gpus_used;
        out[v->reserved ? 2 : 1] = free_gpus;
        break;
    case SCHED_NODE_DRAINING:
    case SCHED_NODE_DRAINED:
        out[0] = v->gpus_used;
        out[3] = free_gpus;
        break;
    default:
        out[4] = v->gpus;
        break;
    }
}

static const char *const gpu_state_names[5] = {"busy", "idle", "reserved", "draining", "down"};

static void node_gauge(struct dbuf *b, const char *name, const char *node, long long v)
{
    dbuf_printf(b, "%s{node=\"%s\"} %lld\n", name, node, v);
}

/* GPUs by state and type, nodes by state: one pass over the nodes. */
static void nodes_text(struct ctl *c, struct dbuf *b)
{
    json_t *gpus = json_object();
    size_t by_state[SCHED_NODE_STATE_COUNT] = {0};
    size_t nn = sched_node_count(c->sched);
    for (size_t i = 0; i < nn; i++) {
        struct sched_node_view v;
        if (sched_node_get(c->sched, (uint32_t)i, &v) < 0)
            continue;
        by_state[v.state]++;
        int st[5];
        gpu_states(&v, st);
        for (int s = 0; s < 5 && v.gpus > 0; s++) {
            char key[160];
            snprintf(key, sizeof(key), "state=\"%s\",gpu_type=\"%s\"", gpu_state_names[s],
                     v.gpu_type ? v.gpu_type : "");
            count_add(gpus, key, st[s]);
        }
    }
    help(b, "docket_gpus", "gauge",
         "GPUs by state (busy, idle, reserved, draining, down) and type");
    counts_text(b, "docket_gpus", gpus);
    help(b, "docket_nodes", "gauge", "nodes by state");
    for (int i = 0; i < SCHED_NODE_STATE_COUNT; i++)
        dbuf_printf(b, "docket_nodes{state=\"%s\"} %zu\n",
                    sched_node_state_name((enum sched_node_state)i), by_state[i]);
}

/* The per-node gauges, one family after the other. */
static const struct {
    const char *name, *text;
} node_families[] = {
    {"docket_node_gpus", "GPUs of each node"},
    {"docket_node_gpus_busy", "GPUs of each node allocated to jobs"},
    {"docket_node_jobs", "live jobs placed on each node"},
    {"docket_node_cpus", "CPUs of each node"},
    {"docket_node_cpus_busy", "CPUs of each node allocated to jobs"},
    {"docket_node_memory_bytes", "memory of each node"},
    {"docket_node_memory_busy_bytes", "memory of each node allocated to jobs"},
    {"docket_node_up", "1 when the node takes work (state UP), else 0"},
};
enum { NODE_FAMILIES = sizeof(node_families) / sizeof(node_families[0]) };

static long long node_value(const struct sched_node_view *v, size_t family)
{
    long long val[NODE_FAMILIES] = {v->gpus,
                                    v->gpus_used,
                                    v->njobs,
                                    v->cpus,
                                    v->cpus_used,
                                    (long long)v->mem_mb << 20,
                                    (long long)v->mem_used_mb << 20,
                                    v->state == SCHED_NODE_UP};
    return val[family];
}

/* Each GPU's latest usage sample (usage.c), while it is fresh: one family after the other. */
static const struct {
    const char *name, *text;
} gpu_families[] = {
    {"docket_gpu_utilization_percent", "latest utilisation sample of each GPU"},
    {"docket_gpu_memory_used_bytes", "latest memory used of each GPU"},
    {"docket_gpu_power_watts", "latest power draw of each GPU"},
    {"docket_gpu_temperature_celsius", "latest temperature of each GPU"},
    {"docket_gpu_ecc_errors", "volatile uncorrected ECC errors of each GPU"},
    {"docket_gpu_xid_errors", "XID errors of each GPU seen by its agent"},
};
enum { GPU_FAMILIES = sizeof(gpu_families) / sizeof(gpu_families[0]) };

/* The lines of one GPU family for node n (none without a fresh sample). */
static void gpu_usage_lines(const struct ctl_node *n, size_t family, int64_t now, struct dbuf *b)
{
    for (int x = 0; x < AGENT_MAX_GPUS; x++) {
        const struct ctl_gpu_last *l = &n->gpu_last[x];
        if (!l->time_ms || now - l->time_ms > CTL_GPU_SAMPLE_FRESH_MS)
            continue;
        double val[GPU_FAMILIES] = {l->g.util,
                                    (double)l->g.mem_used_mb * 1048576.0,
                                    (double)l->g.power_mw / 1000.0,
                                    l->g.temp_c,
                                    (double)l->g.ecc_errors,
                                    (double)l->g.xid_errors};
        if (val[family] < 0)
            continue; /* unknown: no sample, not zero */
        dbuf_printf(b, "%s{node=\"%s\",gpu=\"%d\",source=\"%s\"} %g\n", gpu_families[family].name,
                    n->name, x, n->gpu_source, val[family]);
    }
}

static void histograms_text(struct ctl *c, struct dbuf *b)
{
    const struct ctl_metrics *m = &c->metrics;
    help(b, "docket_queue_wait_seconds", "histogram",
         "time from submission to start, by the job's tier");
    for (int i = 0; i < m->nwait_tiers; i++) {
        char labels[96];
        snprintf(labels, sizeof(labels), "tier=\"%s\",", m->wait_by_tier[i].tier);
        hist_series(b, "docket_queue_wait_seconds", labels, &m->wait_by_tier[i].h);
    }
    help(b, "docket_cycle_seconds", "histogram", "duration of a scheduling cycle");
    hist_series(b, "docket_cycle_seconds", "", &m->cycle);
    help(b, "docket_loop_turn_seconds", "histogram",
         "one turn of docketd's loop: from the poll's return to the end of its last callback");
    hist_series(b, "docket_loop_turn_seconds", "", &m->turn);
    help(b, "docket_commit_seconds", "histogram",
         "duration of a group COMMIT on the loop (its WAL sync follows on a thread)");
    hist_series(b, "docket_commit_seconds", "", &m->commit);
}

static void counters_text(struct ctl *c, struct dbuf *b)
{
    dbuf_printf(b,
                "# HELP docket_submissions_total jobs submitted\n"
                "# TYPE docket_submissions_total counter\ndocket_submissions_total %llu\n",
                (unsigned long long)c->metrics.submissions);
    dbuf_printf(b,
                "# HELP docket_connections open HTTP connections (both servers)\n"
                "# TYPE docket_connections gauge\ndocket_connections %zu\n"
                "# HELP docket_connections_max the cap (max_connections)\n"
                "# TYPE docket_connections_max gauge\ndocket_connections_max %lld\n"
                "# HELP docket_connections_refused_total connections answered 503 at the cap\n"
                "# TYPE docket_connections_refused_total counter\n"
                "docket_connections_refused_total %llu\n"
                "# HELP docket_connections_timed_out_total connections closed because a request "
                "did not arrive whole within request_timeout\n"
                "# TYPE docket_connections_timed_out_total counter\n"
                "docket_connections_timed_out_total %llu\n"
                "# HELP docket_connections_unproven open connections that have not sent a "
                "request with a valid identity yet\n"
                "# TYPE docket_connections_unproven gauge\ndocket_connections_unproven %zu\n"
                "# HELP docket_connections_reserved slots of the cap only proven connections "
                "may hold (reserved_connections)\n"
                "# TYPE docket_connections_reserved gauge\ndocket_connections_reserved %lld\n"
                "# HELP docket_connections_shed_total unproven connections closed to make room "
                "for a new one\n"
                "# TYPE docket_connections_shed_total counter\n"
                "docket_connections_shed_total %llu\n"
                "# HELP docket_accept_errors_total accept() failures that paused accepting\n"
                "# TYPE docket_accept_errors_total counter\ndocket_accept_errors_total %llu\n",
                ctl_conn_count(c), (long long)c->conn_cap,
                (unsigned long long)c->metrics.conn_refused,
                (unsigned long long)c->metrics.conn_timed_out, ctl_conn_unproven(c),
                (long long)c->conn_reserve, (unsigned long long)c->metrics.conn_shed,
                (unsigned long long)c->metrics.accept_errors);
    /* the audit head published last (anchor.c): a hash is hex, it needs no escaping */
    help(b, "docket_audit_head_id", "gauge", "the last audit entry published (on disk)");
    dbuf_printf(b, "docket_audit_head_id %lld\n", (long long)c->audit_head.id);
    help(b, "docket_audit_head_info", "gauge",
         "the audit head's hash and where the chain begins (value 1; keep it elsewhere)");
    if (c->audit_head.hash[0])
        dbuf_printf(b, "docket_audit_head_info{hash=\"%s\",chain_from=\"%lld\"} 1\n",
                    c->audit_head.hash, (long long)c->audit_head.chain_from);
    help(b, "docket_http_requests_total", "counter", "HTTP replies by status code");
    for (int i = 100; i < 600; i++)
        if (c->metrics.http_by_code[i])
            dbuf_printf(b, "docket_http_requests_total{code=\"%d\"} %llu\n", i,
                        (unsigned long long)c->metrics.http_by_code[i]);
}

/* /metrics is sent in slices (stream.c): first the counts, histograms and counters, made
 * at once; then the per-node and per-GPU families, each family whole and in order (the
 * text format wants a family's samples together), a slice of at most `slice` nodes a loop
 * turn. With 10,000 nodes the per-node families are 80,000 lines: built in one turn they
 * held the loop 115-122 ms (bench/RESULTS.md). A node's values in two families may be a few
 * turns apart; the nodes are those at the start (one added later waits for the next
 * scrape, one removed is left out). */
struct metrics_walk {
    struct ctl *c;
    int phase;     /* 0: the head, 1: per-node families, 2: per-GPU families */
    size_t family; /* within the phase */
    size_t next;   /* the next node of the family */
    size_t nodes;  /* sched nodes at the start */
    size_t slice;  /* nodes a slice */
};

static void metrics_head(struct ctl *c, struct dbuf *b)
{
    jobs_text(c, b);
    nodes_text(c, b);
    histograms_text(c, b);
    counters_text(c, b);
    alerts_text(c, b);
    ctl_metrics_quota_text(c, b, clock_now_ms());
    ctl_services_metrics(c, b);
    ctl_storage_metrics(c, b);
    ctl_net_metrics(c, b);
}

/* The next nodes of the current family into b; true when the family is done. */
static bool metrics_slice(struct metrics_walk *w, struct dbuf *b)
{
    struct ctl *c = w->c;
    bool per_node = w->phase == 1;
    const char *name = per_node ? node_families[w->family].name : gpu_families[w->family].name;
    if (w->next == 0)
        help(b, name, "gauge",
             per_node ? node_families[w->family].text : gpu_families[w->family].text);
    size_t end = per_node ? w->nodes : c->nnodes, stop = w->next + w->slice;
    int64_t now = clock_now_ms();
    for (; w->next < end && w->next < stop; w->next++) {
        if (!per_node) {
            if (c->nodes[w->next])
                gpu_usage_lines(c->nodes[w->next], w->family, now, b);
            continue;
        }
        struct sched_node_view v;
        if (sched_node_get(c->sched, (uint32_t)w->next, &v) == 0)
            node_gauge(b, name, v.name, node_value(&v, w->family));
    }
    return w->next >= end;
}

static int metrics_fill(void *arg, struct evbuffer *out, bool *done)
{
    struct metrics_walk *w = arg;
    struct dbuf b;
    dbuf_init(&b, 64u << 20);
    if (w->phase == 0) {
        metrics_head(w->c, &b);
        w->phase = 1;
    } else if (metrics_slice(w, &b)) {
        w->next = 0;
        w->family++;
        if (w->family == (w->phase == 1 ? (size_t)NODE_FAMILIES : (size_t)GPU_FAMILIES)) {
            w->family = 0;
            w->phase++;
        }
    }
    int rc = b.failed ? -ENOSPC : 0;
    if (rc == 0)
        evbuffer_add(out, b.data, b.len);
    dbuf_release(&b);
    *done = w->phase == 3;
    return rc;
}

void h_metrics(struct ctl_req *r)
{
    struct ctl *c = r->c;
    struct metrics_walk *w = xnonnull(calloc(1, sizeof(*w)), "metrics");
    w->c = c;
    w->nodes = sched_node_count(c->sched);
    const char *slice = getenv("DOCKETD_TEST_METRICS_SLICE"); /* tests: slices of a few */
    w->slice = slice && atoi(slice) > 0 ? (size_t)atoi(slice) : METRICS_SLICE_NODES;
    ctl_stream_start(c, r->req, "text/plain; version=0.0.4", metrics_fill, free, w);
}
