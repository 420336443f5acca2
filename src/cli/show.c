/*
 * show.c - `docket show JOB`: one job's spec, state and allocation, its usage (summary
 * and sparklines) and its events (GET /v1/jobs/ID, /v1/jobs/ID/usage, /v1/jobs/ID/events).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/jobs.h"
#include "util/dbuf.h"
#include "util/parse.h"
#include "util/str.h"

const char cmd_show_usage[] =
    "usage: docket show JOB [--json]\n"
    "\n"
    "A job's details: spec, state, where it runs, how it ended, its usage (CPU,\n"
    "memory, IO and GPUs, with sparklines of the latest samples), and every state\n"
    "change since submission with its time, node and reason. --json adds \"usage\".\n";

/* One "key value" line; the value on one line whatever it holds (a command's argument
 * with a newline cannot forge a line of its own; its escapes are gone already: cli.c
 * made the reply terminal-safe). */
static void line(struct cli *c, const char *key, const char *value)
{
    if (!value || !value[0])
        return;
    char *safe = fmt_safe(value, false);
    fprintf(c->out, "  %-11s %s\n", key, safe ? safe : "?");
    free(safe);
}

static void argv_text(const json_t *job, struct dbuf *b)
{
    const json_t *cmd = json_object_get(job, "command");
    const char *script = json_string_value(json_object_get(job, "script"));
    size_t i;
    json_t *a;

    if (json_is_true(json_object_get(job, "hidden"))) {
        dbuf_printf(b, "(hidden: its owner, its project's leads and admins see it)");
    } else if (json_is_array(cmd)) {
        json_array_foreach(cmd, i, a) {
            const char *s = json_string_value(a);
            bool quote = !s || strpbrk(s, " \t'\"$") || !s[0];
            dbuf_printf(b, "%s%s%s%s", i ? " " : "", quote ? "'" : "", s ? s : "",
                        quote ? "'" : "");
        }
    } else if (script) {
        const char *nl = strchr(script, '\n');
        dbuf_printf(b, "script (%zu bytes): %.*s%s", strlen(script),
                    (int)(nl ? nl - script : (long)strlen(script)), script, nl ? " ..." : "");
    }
}

static void print_alloc(struct cli *c, const json_t *job)
{
    const json_t *alloc = json_object_get(job, "allocation");
    size_t i, k;
    json_t *a, *g;

    json_array_foreach(alloc, i, a) {
        struct dbuf b;
        char mem[32];
        dbuf_init(&b, 4096);
        dbuf_printf(&b, "%s", jstr(a, "node"));
        if (json_array_size(json_object_get(a, "gpus"))) {
            dbuf_puts(&b, " GPUs ");
            json_array_foreach(json_object_get(a, "gpus"), k, g)
                dbuf_printf(&b, "%s%lld", k ? "," : "", (long long)json_integer_value(g));
        }
        fmt_size(jint(a, "mem_mb", 0), mem, sizeof(mem));
        dbuf_printf(&b, ", %lld CPUs, %s", (long long)jint(a, "cpus", 0), mem);
        line(c, i ? "" : "on", b.data);
        dbuf_release(&b);
    }
}

static void print_exit(struct cli *c, const json_t *job)
{
    const json_t *e = json_object_get(job, "exit");
    const char *kind = jstr(e, "kind");
    char buf[160];

    if (!json_is_object(e) || !kind[0])
        return;
    if (!strcmp(kind, "code"))
        snprintf(buf, sizeof(buf), "exit code %lld", (long long)jint(e, "code", 0));
    else if (!strcmp(kind, "signal"))
        snprintf(buf, sizeof(buf), "killed by %s", signal_name((int)jint(e, "code", 0)));
    else
        snprintf(buf, sizeof(buf), "%s", kind);
    line(c, json_object_get(job, "end_ms") && jint(job, "end_ms", 0) == 0 ? "last exit" : "exit",
         buf);
}

static void print_job(struct cli *c, const json_t *j)
{
    const char *st = jstr(j, "state");
    char gpus[100], mem[32], lim[32], sub[32], start[32], end[32], buf[1024];
    struct dbuf b;

    char *name = fmt_safe(jstr(j, "name"), false);
    fprintf(c->out, "job %lld  %s  %s%s%s\n", (long long)jint(j, "id", 0), name ? name : "?",
            c->color ? fmt_color_on(fmt_state_color(st)) : "", st, c->color ? fmt_color_off() : "");
    free(name);
    snprintf(buf, sizeof(buf), "%s (user %s)", jstr(j, "project"), jstr(j, "user"));
    line(c, "project", buf);
    if (jstr(j, "eff_tier")[0] && strcmp(jstr(j, "tier"), jstr(j, "eff_tier")))
        snprintf(buf, sizeof(buf), "%s (boosted to %s), class %s", jstr(j, "tier"),
                 jstr(j, "eff_tier"), jstr(j, "class"));
    else
        snprintf(buf, sizeof(buf), "%s, class %s", jstr(j, "tier"), jstr(j, "class"));
    line(c, "tier", buf);
    if (jstr(j, "template")[0])
        line(c, "template", jstr(j, "template")); /* the exact version it runs with */
    if (jstr(j, "image")[0])
        line(c, "image", jstr(j, "image"));                 /* its container's */
    const json_t *arch = json_object_get(j, "log_archive"); /* docs/storage.md "Job logs" */
    if (json_array_size(arch) > 0) {
        snprintf(buf, sizeof(buf), "archived to pool %s (%zu stream%s; docket logs reads them)",
                 jstr(json_array_get(arch, 0), "pool"), json_array_size(arch),
                 json_array_size(arch) == 1 ? "" : "s");
        line(c, "logs", buf);
    }
    jobs_gpus(j, gpus, sizeof(gpus));
    fmt_size(jint(j, "mem_mb", 0), mem, sizeof(mem));
    snprintf(buf, sizeof(buf), "GPUs %s per node, %lld node(s), %lld CPUs, mem %s", gpus,
             (long long)jint(j, "nodes", 1), (long long)jint(j, "cpus", 1), mem);
    line(c, "resources", buf);
    const json_t *net = json_object_get(j, "network");
    if (json_is_object(net) && jstr(net, "policy")[0])
        line(c, "network", jstr(net, "policy"));
    fmt_duration(jint(j, "time_limit_ms", -1), lim, sizeof(lim));
    fmt_when(jint(j, "submit_ms", 0), c->now_ms, sub, sizeof(sub));
    fmt_when(jint(j, "start_ms", 0), c->now_ms, start, sizeof(start));
    fmt_when(jint(j, "end_ms", 0), c->now_ms, end, sizeof(end));
    snprintf(buf, sizeof(buf), "limit %s, submitted %s, started %s, ended %s", lim, sub, start,
             end);
    line(c, "time", buf);
    dbuf_init(&b, 1 << 16);
    argv_text(j, &b);
    line(c, "command", b.data);
    dbuf_release(&b);
    line(c, "workdir", jstr(j, "workdir"));
    line(c, "output", jstr(j, "output"));
    line(c, "error", jstr(j, "error"));
    line(c, "reason", jstr(j, "reason"));
    line(c, "stop cause", jstr(j, "stop_cause"));
    if (jint(j, "preempt_count", 0) > 0) {
        snprintf(buf, sizeof(buf), "%lld time(s), last by job %lld",
                 (long long)jint(j, "preempt_count", 0), (long long)jint(j, "preemptor", 0));
        line(c, "preempted", buf);
    }
    if (jint(j, "array_id", 0) > 0) {
        snprintf(buf, sizeof(buf), "%lld index %lld", (long long)jint(j, "array_id", 0),
                 (long long)jint(j, "array_index", 0));
        line(c, "array", buf);
    }
    print_alloc(c, j);
    print_exit(c, j);
}

static void print_events(struct cli *c, const json_t *events)
{
    static const char *const h[] = {"WHEN", "EVENT", "STATE", "NODE", "REASON"};
    struct table *t = table_create(h, 5);
    size_t i;
    json_t *e;

    if (!t)
        return;
    table_set_flags(t, 4, TABLE_FLEX);
    json_array_foreach(events, i, e) {
        char when[32];
        fmt_when(jint(e, "time_ms", 0), c->now_ms, when, sizeof(when));
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", when);
        table_cell(t, FMT_PLAIN, "%s", jstr(e, "type"));
        if (jstr(e, "from")[0])
            table_cell(t, fmt_state_color(jstr(e, "to")), "%s→%s", jstr(e, "from"), jstr(e, "to"));
        else
            table_cell(t, fmt_state_color(jstr(e, "to")), "%s", jstr(e, "to"));
        table_cell(t, FMT_PLAIN, "%s", jstr(e, "node"));
        if (str_has_prefix(jstr(e, "detail"), jstr(e, "reason")))
            table_cell(t, FMT_PLAIN, "%s", jstr(e, "detail"));
        else
            table_cell(t, FMT_PLAIN, "%s%s%s", jstr(e, "reason"),
                       jstr(e, "detail")[0] && jstr(e, "reason")[0] ? ": " : "", jstr(e, "detail"));
    }
    if (table_rows(t)) {
        fprintf(c->out, "\nevents:\n");
        table_print(t, c->out, c->width, c->color);
    }
    table_destroy(t);
}

static void bytes_text(int64_t n, char *buf, size_t len)
{
    static const char units[] = "BKMGTP";
    double v = (double)n;
    int u = 0;
    if (n < 0) {
        snprintf(buf, len, "-");
        return;
    }
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, u ? "%.1f%c" : "%.0f%c", v, units[u]);
}

/* One sparkline row of the series' `key` (numbers; null is unknown). */
static void spark_row(struct cli *c, const json_t *series, const char *label, const char *key,
                      double max, bool utf8)
{
    enum { W = 48 };
    double v[W];
    char line_buf[W * 3 + 1];
    size_t n = json_array_size(series), from = n > W ? n - W : 0, k = 0;
    double top = max;
    for (size_t i = from; i < n; i++) {
        json_t *x = json_object_get(json_array_get(series, i), key);
        v[k] = json_is_number(x) ? json_number_value(x) : -1;
        if (max <= 0 && v[k] > top)
            top = v[k];
        k++;
    }
    fmt_spark(v, (int)k, top, utf8, line_buf, sizeof(line_buf));
    fprintf(c->out, "  %-11s %s\n", label, line_buf);
}

static void print_usage(struct cli *c, const json_t *u)
{
    const json_t *s = json_object_get(u, "summary"), *series = json_object_get(u, "series");
    char a[32], b[32], d[32];
    fprintf(c->out, "\nusage:\n");
    if (!json_is_object(s)) {
        fprintf(c->out, "  no samples yet (agents sample running jobs every few seconds)\n");
        return;
    }
    bool utf8 = fmt_use_utf8(STDOUT_FILENO);
    const char *src = jstr(s, "gpu_source");
    json_t *mean = json_object_get(s, "gpu_util_mean");
    fprintf(c->out, "  %-11s %.1f s\n", "cpu",
            json_number_value(json_object_get(s, "cpu_seconds")));
    bytes_text(jint(s, "mem_peak_bytes", -1), a, sizeof(a));
    fprintf(c->out, "  %-11s peak %s\n", "memory", a);
    bytes_text(jint(s, "io_read_bytes", -1), a, sizeof(a));
    bytes_text(jint(s, "io_write_bytes", -1), b, sizeof(b));
    fprintf(c->out, "  %-11s read %s, written %s\n", "io", a, b);
    if (json_is_number(mean)) {
        fmt_when(jint(s, "last_busy_ms", 0), c->now_ms, a, sizeof(a));
        fmt_duration((int64_t)(json_number_value(json_object_get(s, "gpu_idle_seconds")) * 1000), b,
                     sizeof(b));
        fmt_when(jint(s, "idle_since_ms", 0), c->now_ms, d, sizeof(d));
        fprintf(c->out, "  %-11s mean %.0f%% (%s), idle %s, last busy %s%s%s\n", "gpus",
                json_number_value(mean), src, b, a,
                jint(s, "idle_since_ms", 0) ? ", idle since " : "",
                jint(s, "idle_since_ms", 0) ? d : "");
    } else if (!strcmp(src, "declared")) {
        fprintf(c->out, "  %-11s declared GPUs: no utilisation reported\n", "gpus");
    }
    if (json_array_size(series) < 2)
        return;
    fprintf(c->out, "  %-11s last %zu %s samples\n", "series",
            json_array_size(series) < 48 ? json_array_size(series) : (size_t)48,
            jstr(u, "resolution"));
    spark_row(c, series, "cpu cores", "cpu_cores", 0, utf8);
    spark_row(c, series, "memory", "mem_bytes", 0, utf8);
    if (json_is_number(mean))
        spark_row(c, series, "gpu util", "gpu_util", 100, utf8);
}

int cmd_show(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    json_t *job = NULL, *ev = NULL, *use = NULL;
    char path[128];
    int64_t id;
    int rc = cli_parse_args(c, argc, argv, NULL, 1, &a);

    if (rc != CLI_CONTINUE)
        return rc;
    if (a.npos != 1)
        return cli_usage_error(c, "which job? (docket show JOB)");
    if ((rc = cli_job_id(c, a.pos[0], &id)))
        return rc;
    snprintf(path, sizeof(path), "/v1/jobs/%lld", (long long)id);
    if ((rc = cli_call(c, "GET", path, NULL, &job)))
        return rc;
    snprintf(path, sizeof(path), "/v1/jobs/%lld/events", (long long)id);
    rc = cli_get_pages(c, path, "events", 0, &ev);
    snprintf(path, sizeof(path), "/v1/jobs/%lld/usage", (long long)id);
    if (rc == 0)
        rc = cli_call(c, "GET", path, NULL, &use);
    if (rc == 0 && c->json) {
        json_t *o = json_pack("{s:O?,s:O?,s:O?}", "job", json_object_get(job, "job"), "events",
                              json_object_get(ev, "events"), "usage", use);
        cli_print_json(c, o);
        json_decref(o);
    } else if (rc == 0) {
        print_job(c, json_object_get(job, "job"));
        print_usage(c, use);
        print_events(c, json_object_get(ev, "events"));
    }
    json_decref(job);
    json_decref(ev);
    json_decref(use);
    return rc;
}
