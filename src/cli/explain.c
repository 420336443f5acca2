/*
 * explain.c - `docket explain JOB`: why a job waits (reason, position, priority, what
 * blocks it, the nodes that could take it, its forecast start), or for a running job
 * whether and by whom it may be preempted (GET /v1/jobs/ID/explain).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <string.h>

#include "cli/cli.h"

const char cmd_explain_usage[] =
    "usage: docket explain JOB [--json]\n"
    "\n"
    "Why is this job waiting? Its reason and a sentence, its position in its tier and\n"
    "overall, the parts of its priority, the limit or the jobs ahead that block it,\n"
    "the nodes that could fit it and when it is expected to start. For a running job:\n"
    "whether it can be preempted, by which tiers, when it becomes protected, and\n"
    "when its GPUs were last busy (from its usage samples).\n";

static void kv(struct cli *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void kv(struct cli *c, const char *key, const char *fmt, ...)
{
    va_list ap;

    fprintf(c->out, "  %-10s ", key);
    va_start(ap, fmt);
    vfprintf(c->out, fmt, ap);
    va_end(ap);
    fputc('\n', c->out);
}

static void print_priority(struct cli *c, const json_t *p)
{
    const json_t *fs = json_object_get(p, "fairshare");
    char age[32];

    if (!json_is_object(p))
        return;
    fmt_duration(jint(p, "age_ms", -1), age, sizeof(age));
    kv(c, "priority",
       "tier %s (rank %lld)%s%s%s, fair-share %.2f used / %.0f guaranteed "
       "= share %.2f, waiting %s",
       jstr(p, "tier"), (long long)jint(p, "tier_rank", 0),
       strcmp(jstr(p, "tier"), jstr(p, "eff_tier")) ? ", boosted to " : "",
       strcmp(jstr(p, "tier"), jstr(p, "eff_tier")) ? jstr(p, "eff_tier") : "", "",
       json_number_value(json_object_get(fs, "usage")),
       json_number_value(json_object_get(fs, "guarantee")),
       json_number_value(json_object_get(fs, "share")), age);
}

static void print_ahead(struct cli *c, const json_t *ahead)
{
    static const char *const h[] = {"JOB", "PROJECT", "TIER", "GPUS", "NODES", "REASON"};
    struct table *t;
    size_t i;
    json_t *a;

    if (!json_array_size(ahead))
        return;
    if (!(t = table_create(h, 6)))
        return;
    json_array_foreach(ahead, i, a) {
        table_row(t);
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(a, "job", 0));
        table_cell(t, FMT_PLAIN, "%s", jstr(a, "project"));
        table_cell(t, FMT_PLAIN, "%s", jstr(a, "tier"));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(a, "gpus", 0));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(a, "nodes", 1));
        table_cell(t, FMT_PLAIN, "%s", jstr(a, "reason"));
    }
    fprintf(c->out, "\njobs ahead of it:\n");
    table_print(t, c->out, c->width, c->color);
    table_destroy(t);
}

static void print_nodes(struct cli *c, const json_t *e)
{
    static const char *const h[] = {"NODE", "STATE", "FREE GPUS", "FITS NOW", "FREE AT"};
    const json_t *nodes = json_object_get(e, "nodes");
    struct table *t;
    size_t i;
    json_t *n;

    if (json_object_get(e, "nodes_matching"))
        kv(c, "nodes", "%lld node(s) match its request", (long long)jint(e, "nodes_matching", 0));
    if (!json_array_size(nodes) || !(t = table_create(h, 5)))
        return;
    json_array_foreach(nodes, i, n) {
        char at[32];
        fmt_when(jint(n, "free_at_ms", 0), c->now_ms, at, sizeof(at));
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s%s", jstr(n, "name"),
                   jbool(n, "reserved") ? " (reserved)" : "");
        table_cell(t, fmt_state_color(jstr(n, "state")), "%s", jstr(n, "state"));
        table_cell(t, FMT_PLAIN, "%lld/%lld", (long long)jint(n, "gpus_free", 0),
                   (long long)jint(n, "gpus_total", 0));
        table_cell(t, jbool(n, "fits_now") ? FMT_GREEN : FMT_PLAIN, "%s",
                   jbool(n, "fits_now") ? "yes" : "no");
        table_cell(t, FMT_PLAIN, "%s", at);
    }
    fprintf(c->out, "\ncandidate nodes:\n");
    table_print(t, c->out, c->width, c->color);
    table_destroy(t);
}

static void print_running(struct cli *c, const json_t *r)
{
    char a[32], b[32], d[32];

    if (!json_is_object(r))
        return;
    fmt_when(jint(r, "protected_at_ms", 0), c->now_ms, a, sizeof(a));
    fmt_when(jint(r, "preemptible_from_ms", 0), c->now_ms, b, sizeof(b));
    fmt_when(jint(r, "expected_end_ms", 0), c->now_ms, d, sizeof(d));
    if (jbool(r, "preemptible"))
        kv(c, "preempt", "may be preempted by tier %s and above (from %s)",
           jstr(r, "preemptible_by")[0] ? jstr(r, "preemptible_by") : "higher", b);
    else
        kv(c, "preempt", "cannot be preempted%s%s", jstr(r, "why_not")[0] ? ": " : "",
           jstr(r, "why_not"));
    if (jint(r, "protected_at_ms", 0) > 0)
        kv(c, "protected", "from %s", a);
    kv(c, "preempted", "%lld time(s) so far", (long long)jint(r, "preempt_count", 0));
    kv(c, "ends", "%s (time limit)", d);
}

/* A running job on a node the controller does not hear from: how long its lease holds. */
static void print_lease(struct cli *c, const json_t *l)
{
    char silent[32], left[32];
    if (!json_is_object(l))
        return;
    fmt_duration(jint(l, "silent_ms", 0), silent, sizeof silent);
    fmt_duration(jint(l, "ends_ms", 0) - c->now_ms, left, sizeof left);
    kv(c, "lease", "node %s silent for %s: the job runs on there under its lease for %s more,",
       jstr(l, "node"), silent, left);
    kv(c, "", "then it is stopped there and requeued (or failed) unless the node is back");
}

/* A starting job whose node builds its template's environment first (supwarm.c). */
static void print_environment(struct cli *c, const json_t *env)
{
    if (!json_is_object(env))
        return;
    if (strncmp(jstr(env, "preparing"), "image ", 6) == 0) { /* supoci.c: an unpack */
        kv(c, "environment", "preparing %s on %s: the first job of this image there unpacks it,",
           jstr(env, "preparing"), jstr(env, "node"));
        kv(c, "", "later ones reuse it");
        return;
    }
    kv(c, "environment", "preparing %s on %s: the first job of this version there builds it,",
       jstr(env, "preparing"), jstr(env, "node"));
    kv(c, "", "later ones reuse it");
}

/* A running job's usage: when its GPUs were last busy, or that nothing says so. */
static void print_usage(struct cli *c, const json_t *u)
{
    char a[32], b[32];
    const json_t *rule = json_object_get(u, "idle_rule");
    int below = (int)jint(u, "gpu_util_below", 5);
    if (!json_is_object(u))
        return;
    if (jint(u, "samples", 0) == 0) {
        kv(c, "busy", "no usage samples yet");
        return;
    }
    if (jint(u, "gpu_samples", 0) == 0) {
        kv(c, "busy", "no GPU utilisation in its samples (%s)",
           !strcmp(jstr(u, "gpu_source"), "declared") ? "declared GPUs report none" : "no GPUs");
        return;
    }
    fmt_when(jint(u, "last_busy_ms", 0), c->now_ms, a, sizeof(a));
    if (jint(u, "last_busy_ms", 0) > 0)
        kv(c, "busy", "GPUs last busy (%d%% or more) %s", below, a);
    else
        kv(c, "busy", "GPUs never at %d%% or more in its samples", below);
    if (jint(u, "idle_since_ms", 0) > 0) {
        fmt_when(jint(u, "idle_since_ms", 0), c->now_ms, a, sizeof(a));
        kv(c, "idle", "under %d%% since %s%s", below, a,
           jint(u, "idle_flagged_ms", 0) > 0 ? " (flagged by its class's idle rule)" : "");
    }
    if (json_is_object(rule)) {
        fmt_duration(jint(rule, "for_ms", 0), b, sizeof(b));
        kv(c, "idle rule", "under %d%% for %s: %s", below, b, jstr(rule, "action"));
    }
}

/* The network boundary it runs (or will run) under, and its addresses while it holds them
 * (docs/network.md). */
static void print_network(struct cli *c, const json_t *n)
{
    if (!json_is_object(n) || !jstr(n, "policy")[0])
        return;
    const json_t *addrs = json_object_get(n, "addrs");
    char list[256] = "";
    size_t i, off = 0;
    json_t *a;
    json_array_foreach(addrs, i, a) {
        int w = snprintf(list + off, sizeof(list) - off, "%s%s", i ? ", " : "; address ",
                         json_string_value(a) ? json_string_value(a) : "?");
        if (w < 0 || (size_t)w >= sizeof(list) - off)
            break;
        off += (size_t)w;
    }
    char refused[48] = "";
    if (json_object_get(n, "refused"))
        snprintf(refused, sizeof(refused), "; %lld packets refused",
                 (long long)jint(n, "refused", 0));
    kv(c, "network", "%s%s%s", jstr(n, "policy"), list, refused);
}

static void print_explain(struct cli *c, const json_t *e)
{
    const json_t *pos = json_object_get(e, "position");
    const json_t *lim = json_object_get(e, "limit");
    const json_t *wait = json_object_get(e, "waiting_on");
    const char *reason = jstr(e, "reason");
    char when[32];

    fprintf(c->out, "job %lld is %s%s%s\n", (long long)jint(e, "job", 0), jstr(e, "state"),
            reason[0] ? ": " : "", reason);
    if (jstr(e, "sentence")[0])
        fprintf(c->out, "  %s\n", jstr(e, "sentence"));
    if (json_is_object(pos))
        kv(c, "position", "%lld of %lld overall, %lld of %lld in its tier",
           (long long)jint(pos, "overall", 0), (long long)jint(pos, "of", 0),
           (long long)jint(pos, "in_tier", 0), (long long)jint(pos, "tier_total", 0));
    print_priority(c, json_object_get(e, "priority"));
    if (json_is_object(lim))
        kv(c, "limit", "%s: %lld in use of %lld, this job asks %lld", jstr(lim, "name"),
           (long long)jint(lim, "in_use", 0), (long long)jint(lim, "value", 0),
           (long long)jint(lim, "request", 0));
    if (json_array_size(wait)) {
        size_t i;
        json_t *w;
        fprintf(c->out, "  %-10s jobs", "waits on");
        json_array_foreach(wait, i, w)
            fprintf(c->out, "%s %lld", i ? "," : "", (long long)json_integer_value(w));
        fputc('\n', c->out);
    }
    if (json_object_get(e, "forecast_start_ms")) {
        int64_t at = jint(e, "forecast_start_ms", 0);
        fmt_when(at, c->now_ms, when, sizeof(when));
        if (!strcmp(reason, "QuotaLimit") || !strcmp(reason, "JobLimit"))
            kv(c, "forecast", "as soon as the limit allows (resources: %s)",
               at > c->now_ms + 5000 ? when : "free now");
        else if (at > c->now_ms)
            kv(c, "forecast", "starts %s", when);
        else if (!strcmp(reason, "Dependency") || !strcmp(reason, "Held"))
            kv(c, "forecast", "unknown until its %s",
               reason[0] == 'D' ? "dependencies end" : "release");
        else
            kv(c, "forecast", at > 0 ? "starts now or at the next cycle" : "unknown");
        if (jbool(e, "reservation"))
            kv(c, "", "resources are reserved for it (lower jobs may only backfill around it)");
    }
    if (jbool(e, "starving")) {
        kv(c, "starving", "yes: pending past its tier's starve_after, it holds a reservation");
    } else if (jint(e, "starve_at_ms", 0) > 0) {
        fmt_when(jint(e, "starve_at_ms", 0), c->now_ms, when, sizeof(when));
        kv(c, "starving", "not yet; the starvation guard reserves for it %s", when);
    }
    print_running(c, json_object_get(e, "running"));
    print_network(c, json_object_get(e, "network"));
    print_lease(c, json_object_get(e, "lease"));
    print_environment(c, json_object_get(e, "environment"));
    print_usage(c, json_object_get(e, "usage"));
    print_nodes(c, e);
    print_ahead(c, json_object_get(e, "ahead"));
}

int cmd_explain(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    json_t *reply = NULL;
    char path[128];
    int64_t id;
    int rc = cli_parse_args(c, argc, argv, NULL, 1, &a);

    if (rc != CLI_CONTINUE)
        return rc;
    if (a.npos != 1)
        return cli_usage_error(c, "which job? (docket explain JOB)");
    if ((rc = cli_job_id(c, a.pos[0], &id)))
        return rc;
    snprintf(path, sizeof(path), "/v1/jobs/%lld/explain", (long long)id);
    if ((rc = cli_call(c, "GET", path, NULL, &reply)))
        return rc;
    if (c->json)
        cli_print_json(c, reply);
    else
        print_explain(c, json_object_get(reply, "explain"));
    json_decref(reply);
    return EXIT_OK;
}
