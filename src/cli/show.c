/*
 * show.c - `docket show JOB`: one job's spec, state and allocation, then its events
 * (GET /v1/jobs/ID and /v1/jobs/ID/events).
 */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "cli/jobs.h"
#include "util/dbuf.h"
#include "util/parse.h"
#include "util/str.h"

const char cmd_show_usage[] =
    "usage: docket show JOB [--json]\n"
    "\n"
    "A job's details: spec, state, where it runs, how it ended, and every state\n"
    "change since submission with its time, node and reason.\n";

static void line(struct cli *c, const char *key, const char *value)
{
    if (value && value[0])
        fprintf(c->out, "  %-11s %s\n", key, value);
}

static void argv_text(const json_t *job, struct dbuf *b)
{
    const json_t *cmd = json_object_get(job, "command");
    const char *script = json_string_value(json_object_get(job, "script"));
    size_t i;
    json_t *a;

    if (json_is_array(cmd)) {
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

    fprintf(c->out, "job %lld  %s  %s%s%s\n", (long long)jint(j, "id", 0), jstr(j, "name"),
            c->color ? fmt_color_on(fmt_state_color(st)) : "", st, c->color ? fmt_color_off() : "");
    snprintf(buf, sizeof(buf), "%s (user %s)", jstr(j, "project"), jstr(j, "user"));
    line(c, "project", buf);
    if (jstr(j, "eff_tier")[0] && strcmp(jstr(j, "tier"), jstr(j, "eff_tier")))
        snprintf(buf, sizeof(buf), "%s (boosted to %s), class %s", jstr(j, "tier"),
                 jstr(j, "eff_tier"), jstr(j, "class"));
    else
        snprintf(buf, sizeof(buf), "%s, class %s", jstr(j, "tier"), jstr(j, "class"));
    line(c, "tier", buf);
    jobs_gpus(j, gpus, sizeof(gpus));
    fmt_size(jint(j, "mem_mb", 0), mem, sizeof(mem));
    snprintf(buf, sizeof(buf), "GPUs %s per node, %lld node(s), %lld CPUs, mem %s", gpus,
             (long long)jint(j, "nodes", 1), (long long)jint(j, "cpus", 1), mem);
    line(c, "resources", buf);
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

int cmd_show(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    json_t *job = NULL, *ev = NULL;
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
    if (rc == 0 && c->json) {
        json_t *o = json_pack("{s:O?,s:O?}", "job", json_object_get(job, "job"), "events",
                              json_object_get(ev, "events"));
        cli_print_json(c, o);
        json_decref(o);
    } else if (rc == 0) {
        print_job(c, json_object_get(job, "job"));
        print_events(c, json_object_get(ev, "events"));
    }
    json_decref(job);
    json_decref(ev);
    return rc;
}
