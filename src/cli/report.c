/*
 * report.c - `docket report usage|capacity` (docs/reports.md): docketd computes both from
 * its store (GET /v1/reports/usage, /v1/reports/capacity); this prints them as aligned
 * tables, CSV (--csv), the API's JSON (--json) or, for capacity, one self-contained HTML
 * page (--html: inline style, no script, nothing fetched).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "util/dbuf.h"
#include "util/parse.h"
#include "util/str.h"

const char cmd_report_usage[] =
    "usage: docket report usage [--since 30d | --month 2026-11 | --quarter 2026-Q4]\n"
    "                           [--by project|group|user|tier|class|gpu-type] [--csv|--json]\n"
    "       docket report capacity --month 2026-11 [--csv|--json|--html]\n"
    "\n"
    "usage: per project (user, tier, class, GPU type) over the window: GPU- and\n"
    "CPU-hours of the runs inside it (to the millisecond), jobs by outcome, queue wait\n"
    "p50/p95, preemptions and the GPU-hours of the runs they stopped, cost from the\n"
    "policy's prices; a calendar month or quarter (UTC) in place of --since; the CSV\n"
    "carries the period, currency and GPU rates on every row. A run still going counts\n"
    "to now. Viewers, operators and admins read every project; a project's lead reads\n"
    "their own projects (--by project). capacity: one month's utilisation by GPU type,\n"
    "queue peaks per tier and the share of waits past the tier's target, GPUs stranded\n"
    "now on nodes no waiting job fits, and the most repeated job specs.\n"
    "By project, usage also has each project's storage per pool: GB-months over the window\n"
    "(from docketd's samples of the areas' usage; 1 GB = 10^9 bytes, a month 30 days) and\n"
    "its usage now; the CSV adds them as a second section after a blank line.\n";

enum { RP_SINCE = 1, RP_BY, RP_MONTH, RP_CSV, RP_HTML, RP_QUARTER };

static const struct opt_def report_opts[] = {
    {RP_SINCE, 0, "since", OPT_VALUE},
    {RP_BY, 0, "by", OPT_VALUE},
    {RP_MONTH, 0, "month", OPT_VALUE},
    {RP_QUARTER, 0, "quarter", OPT_VALUE},
    {RP_CSV, 0, "csv", OPT_NONE},
    {RP_HTML, 0, "html", OPT_NONE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

static const char *const outcomes[] = {"COMPLETED", "FAILED",    "CANCELLED",
                                       "TIMEOUT",   "PREEMPTED", "NODE_FAIL"};

static double jreal(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

/* "12m" from a wait in ms, "-" for null. */
static void wait_text(const json_t *o, const char *k, char *b, size_t n)
{
    json_t *v = json_object_get(o, k);
    if (json_is_integer(v))
        fmt_duration(json_integer_value(v), b, n);
    else
        snprintf(b, n, "-");
}

static void cost_text(const json_t *r, const char *cur, char *b, size_t n)
{
    if (!jbool(r, "cost_complete"))
        snprintf(b, n, "?");
    else
        snprintf(b, n, "%.2f%s%s", jreal(r, "cost"), cur[0] ? " " : "", cur);
}

/* A CSV field: quoted when it holds a comma, quote or newline. */
static void csv_field(FILE *out, const char *s, bool last)
{
    if (strpbrk(s, ",\"\n")) {
        fputc('"', out);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', out);
            fputc(*s, out);
        }
        fputc('"', out);
    } else {
        fputs(s, out);
    }
    fputc(last ? '\n' : ',', out);
}

/* "2026-11-01T00:00:00Z" from ms. */
static void utc_text(int64_t ms, char *b, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(b, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The period, currency and rates every CSV row carries (a finance sheet reads rows). */
static void period_fields(const json_t *rep, char *out, size_t n)
{
    char since[32], until[32];
    struct dbuf rates;
    utc_text(jint(rep, "since_ms", 0), since, sizeof since);
    utc_text(jint(rep, "until_ms", 0), until, sizeof until);
    dbuf_init(&rates, 0);
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(rep, "gpu_rates"), k, v) {
        dbuf_printf(&rates, "%s%s=%g", rates.len ? ";" : "", k, json_number_value(v));
    }
    snprintf(out, n, "%s,%s,%s,%s,%s", jstr(rep, "period")[0] ? jstr(rep, "period") : "-", since,
             until, jstr(rep, "currency"), rates.data);
    dbuf_release(&rates);
}

static void storage_csv(struct cli *c, const json_t *rep);

static void usage_csv(struct cli *c, const json_t *rep)
{
    size_t i;
    json_t *r;
    char period[1024];
    period_fields(rep, period, sizeof period);
    fprintf(c->out,
            "period,since_utc,until_utc,currency,gpu_rates,%s,gpu_hours,gpu_seconds,cpu_hours,"
            "runs,completed,failed,cancelled,timeout,preempted,node_fail,wait_p50_s,wait_p95_s,"
            "preemptions,preempt_gpu_hours,idle_gpu_hours,cost\n",
            jstr(rep, "by"));
    json_array_foreach(json_object_get(rep, "rows"), i, r) {
        json_t *jobs = json_object_get(r, "jobs");
        fprintf(c->out, "%s,", period);
        csv_field(c->out, jstr(r, "key"), false);
        fprintf(c->out, "%.6f,%.3f,%.6f,%lld", jreal(r, "gpu_hours"),
                (double)jint(r, "gpu_ms", 0) / 1000.0, jreal(r, "cpu_hours"),
                (long long)jint(r, "runs", 0));
        for (size_t k = 0; k < sizeof outcomes / sizeof outcomes[0]; k++)
            fprintf(c->out, ",%lld", (long long)jint(jobs, outcomes[k], 0));
        json_t *p50 = json_object_get(r, "wait_p50_ms"), *p95 = json_object_get(r, "wait_p95_ms");
        if (json_is_integer(p50))
            fprintf(c->out, ",%.3f,%.3f", (double)json_integer_value(p50) / 1000.0,
                    (double)json_integer_value(p95) / 1000.0);
        else
            fprintf(c->out, ",,");
        fprintf(c->out, ",%lld,%.6f,%.6f", (long long)jint(r, "preemptions", 0),
                jreal(r, "preempt_gpu_hours"), jreal(r, "idle_gpu_hours"));
        if (jbool(r, "cost_complete"))
            fprintf(c->out, ",%.2f\n", jreal(r, "cost"));
        else
            fprintf(c->out, ",\n");
    }
    storage_csv(c, rep);
}

/* "storage: PROJECT  POOL N GB-months (now USED of QUOTA), ...": each area's usage
 * integrated over the window (docs/reports.md), and at the time of the report, one line
 * per project. */
static void storage_lines(struct cli *c, const json_t *rep)
{
    const char *project, *pool;
    json_t *pools, *a;
    json_object_foreach(json_object_get(rep, "storage"), project, pools) {
        fprintf(c->out, "storage: %s", project);
        json_object_foreach(pools, pool, a) {
            int64_t used = jint(a, "used_bytes", -1), quota = jint(a, "quota_bytes", 0);
            fprintf(c->out, "  %s %.4f GB-months", pool, jreal(a, "gb_months"));
            if (used < 0)
                fprintf(c->out, " (now not reported)");
            else
                fprintf(c->out, " (now %.2f GiB", (double)used / (1 << 30));
            if (used >= 0 && quota > 0)
                fprintf(c->out, " of %.2f GiB", (double)quota / (1 << 30));
            if (used >= 0)
                fputc(')', c->out);
        }
        fputc('\n', c->out);
    }
}

/* The CSV's second section, after a blank line: one row per project and pool. */
static void storage_csv(struct cli *c, const json_t *rep)
{
    const char *project, *pool;
    json_t *pools, *a;
    if (json_object_size(json_object_get(rep, "storage")) == 0)
        return;
    fprintf(c->out, "\nproject,pool,gb_months,used_bytes_now,quota_bytes\n");
    json_object_foreach(json_object_get(rep, "storage"), project, pools)
        json_object_foreach(pools, pool, a) {
            csv_field(c->out, project, false);
            csv_field(c->out, pool, false);
            fprintf(c->out, "%.6f,", jreal(a, "gb_months"));
            if (jint(a, "used_bytes", -1) >= 0)
                fprintf(c->out, "%lld", (long long)jint(a, "used_bytes", -1));
            fprintf(c->out, ",%lld\n", (long long)jint(a, "quota_bytes", 0));
        }
}

static void usage_table(struct cli *c, const json_t *rep)
{
    const char *h[] = {"KEY",         "GPU-H",         "CPU-H",      "RUNS",
                       "DONE",        "FAILED",        "CANCELLED",  "TIMEOUT",
                       "PREEMPTED",   "NODE_FAIL",     "WAIT-P50",   "WAIT-P95",
                       "PREEMPTIONS", "PREEMPT-GPU-H", "IDLE-GPU-H", "COST"};
    char by[32];
    snprintf(by, sizeof by, "%s", jstr(rep, "by"));
    for (char *p = by; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    h[0] = by;
    struct table *t = table_create(h, 16);
    for (int k = 1; k < 16; k++)
        table_set_flags(t, k, TABLE_RIGHT);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(rep, "rows"), i, r) {
        char p50[32], p95[32], cost[48];
        json_t *jobs = json_object_get(r, "jobs");
        wait_text(r, "wait_p50_ms", p50, sizeof p50);
        wait_text(r, "wait_p95_ms", p95, sizeof p95);
        cost_text(r, jstr(rep, "currency"), cost, sizeof cost);
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", jstr(r, "key")[0] ? jstr(r, "key") : "-");
        table_cell(t, FMT_PLAIN, "%.2f", jreal(r, "gpu_hours"));
        table_cell(t, FMT_PLAIN, "%.2f", jreal(r, "cpu_hours"));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(r, "runs", 0));
        for (size_t k = 0; k < sizeof outcomes / sizeof outcomes[0]; k++)
            table_cell(t, FMT_PLAIN, "%lld", (long long)jint(jobs, outcomes[k], 0));
        table_cell(t, FMT_PLAIN, "%s", p50);
        table_cell(t, FMT_PLAIN, "%s", p95);
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(r, "preemptions", 0));
        table_cell(t, FMT_PLAIN, "%.2f", jreal(r, "preempt_gpu_hours"));
        table_cell(t, FMT_PLAIN, "%.2f", jreal(r, "idle_gpu_hours"));
        table_cell(t, FMT_PLAIN, "%s", cost);
    }
    if (table_rows(t)) {
        table_print(t, c->out, c->width, c->color);
    } else {
        fprintf(c->out, "no runs in this window\n");
    }
    table_destroy(t);
    storage_lines(c, rep);
}

/* GET path and print the report with `how`, or its JSON with --json. Exit status. */
typedef void report_printer(struct cli *c, const json_t *rep);
static int print_report(struct cli *c, const char *path, report_printer *how)
{
    json_t *rep = NULL;
    int rc = cli_call(c, "GET", path, NULL, &rep);
    if (rc)
        return rc;
    if (c->json)
        cli_print_json(c, rep);
    else
        how(c, rep);
    json_decref(rep);
    return EXIT_OK;
}

/* ?month= or ?quarter= (docketd checks the value and names the field), else the window. */
static int usage(struct cli *c, const char *since, const char *by, const char *month,
                 const char *quarter, bool csv)
{
    int64_t ms = (int64_t)30 * 86400000;
    char path[200], esc[64], when[96];
    if ((since != NULL) + (month != NULL) + (quarter != NULL) > 1)
        return cli_usage_error(c, "one of --since, --month and --quarter");
    if (since && (parse_duration_ms(since, &ms) < 0 || ms <= 0))
        return cli_usage_error(c, "--since: how far back, e.g. 30d, not '%.40s'", since);
    static const char *const bys[] = {"project", "group", "user", "tier", "class", "gpu-type"};
    size_t k = 0;
    while (by && k < sizeof bys / sizeof bys[0] && strcmp(by, bys[k]) != 0)
        k++;
    if (k == sizeof bys / sizeof bys[0] || client_escape(by ? by : "project", esc, sizeof esc) < 0)
        return cli_usage_error(
            c, "--by: project, group, user, tier, class or gpu-type, not '%.40s'", by);
    const char *cal = month ? month : quarter;
    char calesc[32];
    if (cal && client_escape(cal, calesc, sizeof calesc) < 0)
        return cli_usage_error(c, "--%s: want %s", month ? "month" : "quarter",
                               month ? "YYYY-MM" : "YYYY-Qn");
    if (cal)
        snprintf(when, sizeof when, "%s=%s", month ? "month" : "quarter", calesc);
    else
        snprintf(when, sizeof when, "since_ms=%lld&until_ms=%lld", (long long)(c->now_ms - ms),
                 (long long)c->now_ms);
    snprintf(path, sizeof path, "/v1/reports/usage?by=%s&%s", esc, when);
    return print_report(c, path, csv ? usage_csv : usage_table);
}

/* ------------------------------------------------------------------------------------ */
/* Capacity                                                                              */

static void pct_text(const json_t *o, const char *k, char *b, size_t n)
{
    json_t *v = json_object_get(o, k);
    if (json_is_number(v))
        snprintf(b, n, "%.1f%%", 100.0 * json_number_value(v));
    else
        snprintf(b, n, "-");
}

static void capacity_csv(struct cli *c, const json_t *rep)
{
    size_t i;
    json_t *o;
    fprintf(c->out, "gpu_type,gpus,used_gpu_hours,capacity_gpu_hours,utilisation\n");
    json_array_foreach(json_object_get(rep, "gpu_types"), i, o) {
        csv_field(c->out, jstr(o, "gpu_type"), false);
        fprintf(c->out, "%lld,%.6f,%.6f,%.6f\n", (long long)jint(o, "gpus", 0),
                jreal(o, "used_gpu_hours"), jreal(o, "capacity_gpu_hours"),
                jreal(o, "utilisation"));
    }
    fprintf(c->out, "\ntier,peak_pending_jobs,peak_pending_gpus,target_s,waits,late_waits,"
                    "unserved_share\n");
    json_array_foreach(json_object_get(rep, "tiers"), i, o) {
        csv_field(c->out, jstr(o, "tier"), false);
        fprintf(c->out, "%lld,%lld,%lld,%lld,%lld,", (long long)jint(o, "peak_pending_jobs", 0),
                (long long)jint(o, "peak_pending_gpus", 0),
                (long long)jint(o, "target_ms", 0) / 1000, (long long)jint(o, "waits", 0),
                (long long)jint(o, "late_waits", 0));
        if (json_is_number(json_object_get(o, "unserved_share")))
            fprintf(c->out, "%.6f", jreal(o, "unserved_share"));
        fputc('\n', c->out);
    }
    json_t *f = json_object_get(rep, "fragmentation");
    fprintf(c->out, "\nfree_gpus_now,stranded_gpus_now\n%lld,%lld\n",
            (long long)jint(f, "free_gpus", 0), (long long)jint(f, "stranded_gpus", 0));
    fprintf(c->out, "\nproject,command,jobs,gpu_hours\n");
    json_array_foreach(json_object_get(rep, "repeats"), i, o) {
        csv_field(c->out, jstr(o, "project"), false);
        csv_field(c->out, jstr(o, "command"), false);
        fprintf(c->out, "%lld,%.6f\n", (long long)jint(o, "jobs", 0), jreal(o, "gpu_hours"));
    }
}

static void capacity_table(struct cli *c, const json_t *rep)
{
    static const char *const ht[] = {"GPU TYPE", "GPUS", "USED GPU-H", "CAPACITY GPU-H", "UTIL"};
    static const char *const hq[] = {"TIER",   "PEAK JOBS", "PEAK GPUS",   "PEAK AT",
                                     "TARGET", "WAITS",     "PAST TARGET", "UNSERVED"};
    static const char *const hr[] = {"PROJECT", "JOBS", "GPU-H", "COMMAND"};
    size_t i;
    json_t *o;
    struct table *t = table_create(ht, 5);
    for (int k = 1; k < 5; k++)
        table_set_flags(t, k, TABLE_RIGHT);
    fprintf(c->out, "Capacity %s\n\n", jstr(rep, "month"));
    json_array_foreach(json_object_get(rep, "gpu_types"), i, o) {
        char u[16];
        pct_text(o, "utilisation", u, sizeof u);
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", jstr(o, "gpu_type"));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(o, "gpus", 0));
        table_cell(t, FMT_PLAIN, "%.2f", jreal(o, "used_gpu_hours"));
        table_cell(t, FMT_PLAIN, "%.2f", jreal(o, "capacity_gpu_hours"));
        table_cell(t, FMT_PLAIN, "%s", u);
    }
    table_print(t, c->out, c->width, c->color);
    table_destroy(t);
    t = table_create(hq, 8);
    for (int k = 1; k < 8; k++)
        table_set_flags(t, k, TABLE_RIGHT);
    json_array_foreach(json_object_get(rep, "tiers"), i, o) {
        char at[32], target[32], u[16];
        fmt_when(jint(o, "peak_at_ms", 0), c->now_ms, at, sizeof at);
        fmt_duration(jint(o, "target_ms", 0) ? jint(o, "target_ms", 0) : -1, target, sizeof target);
        pct_text(o, "unserved_share", u, sizeof u);
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", jstr(o, "tier"));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(o, "peak_pending_jobs", 0));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(o, "peak_pending_gpus", 0));
        table_cell(t, FMT_PLAIN, "%s", at);
        table_cell(t, FMT_PLAIN, "%s", target);
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(o, "waits", 0));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(o, "late_waits", 0));
        table_cell(t, FMT_PLAIN, "%s", u);
    }
    fputc('\n', c->out);
    table_print(t, c->out, c->width, c->color);
    table_destroy(t);
    json_t *f = json_object_get(rep, "fragmentation");
    fprintf(c->out,
            "\nfragmentation now: %lld GPUs free, %lld of them on nodes no waiting job fits\n",
            (long long)jint(f, "free_gpus", 0), (long long)jint(f, "stranded_gpus", 0));
    t = table_create(hr, 4);
    table_set_flags(t, 1, TABLE_RIGHT);
    table_set_flags(t, 2, TABLE_RIGHT);
    table_set_flags(t, 3, TABLE_FLEX);
    json_array_foreach(json_object_get(rep, "repeats"), i, o) {
        table_row(t);
        table_cell(t, FMT_PLAIN, "%s", jstr(o, "project"));
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(o, "jobs", 0));
        table_cell(t, FMT_PLAIN, "%.2f", jreal(o, "gpu_hours"));
        table_cell(t, FMT_PLAIN, "%s", jstr(o, "command"));
    }
    fputc('\n', c->out);
    if (table_rows(t))
        table_print(t, c->out, c->width, c->color);
    else
        fprintf(c->out, "no repeated job specs this month\n");
    table_destroy(t);
}

static void capacity_html(struct cli *c, const json_t *rep)
{
    FILE *out = c->out;
    size_t i;
    json_t *o;
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Docket capacity ", out);
    str_html_write(out, jstr(rep, "month"));
    fputs("</title><style>body{font:14px sans-serif;margin:2em;color:#222}"
          "table{border-collapse:collapse;margin:1em 0}td,th{padding:4px 10px;"
          "border-bottom:1px solid #ddd;text-align:right}td:first-child,th:first-child"
          "{text-align:left}.bar{background:#4a7;height:10px}.bw{background:#eee;width:200px}"
          "code{font-size:12px}</style></head><body>\n<h1>Capacity ",
          out);
    str_html_write(out, jstr(rep, "month"));
    fputs("</h1>\n<h2>Utilisation by GPU type</h2>\n<table><tr><th>GPU type</th><th>GPUs</th>"
          "<th>used GPU-h</th><th>capacity GPU-h</th><th>utilisation</th><th></th></tr>\n",
          out);
    json_array_foreach(json_object_get(rep, "gpu_types"), i, o) {
        double u = jreal(o, "utilisation");
        fputs("<tr><td>", out);
        str_html_write(out, jstr(o, "gpu_type"));
        fprintf(out,
                "</td><td>%lld</td><td>%.2f</td><td>%.2f</td><td>%.1f%%</td><td><div "
                "class=\"bw\"><div class=\"bar\" style=\"width:%d%%\"></div></div></td></tr>\n",
                (long long)jint(o, "gpus", 0), jreal(o, "used_gpu_hours"),
                jreal(o, "capacity_gpu_hours"), 100 * u, (int)(u > 1 ? 100 : 100 * u));
    }
    fputs("</table>\n<h2>Queue per tier</h2>\n<table><tr><th>tier</th><th>peak jobs</th>"
          "<th>peak GPUs</th><th>target</th><th>waits</th><th>past target</th>"
          "<th>unserved share</th></tr>\n",
          out);
    json_array_foreach(json_object_get(rep, "tiers"), i, o) {
        char target[32], u[16];
        fmt_duration(jint(o, "target_ms", 0) ? jint(o, "target_ms", 0) : -1, target, sizeof target);
        pct_text(o, "unserved_share", u, sizeof u);
        fputs("<tr><td>", out);
        str_html_write(out, jstr(o, "tier"));
        fprintf(out,
                "</td><td>%lld</td><td>%lld</td><td>%s</td><td>%lld</td><td>%lld</td>"
                "<td>%s</td></tr>\n",
                (long long)jint(o, "peak_pending_jobs", 0),
                (long long)jint(o, "peak_pending_gpus", 0), target, (long long)jint(o, "waits", 0),
                (long long)jint(o, "late_waits", 0), u);
    }
    json_t *f = json_object_get(rep, "fragmentation");
    fprintf(out,
            "</table>\n<h2>Fragmentation (now)</h2>\n<p>%lld GPUs free, %lld of them on "
            "nodes that no waiting job fits.</p>\n<h2>Repeated job specs</h2>\n<table><tr>"
            "<th>project</th><th>jobs</th><th>GPU-h</th><th>command</th></tr>\n",
            (long long)jint(f, "free_gpus", 0), (long long)jint(f, "stranded_gpus", 0));
    json_array_foreach(json_object_get(rep, "repeats"), i, o) {
        fputs("<tr><td>", out);
        str_html_write(out, jstr(o, "project"));
        fprintf(out, "</td><td>%lld</td><td>%.2f</td><td><code>", (long long)jint(o, "jobs", 0),
                jreal(o, "gpu_hours"));
        str_html_write(out, jstr(o, "command"));
        fputs("</code></td></tr>\n", out);
    }
    fputs("</table>\n</body></html>\n", out);
}

static int capacity(struct cli *c, const char *month, bool csv, bool html)
{
    char path[96], esc[32];
    if (!month)
        return cli_usage_error(c, "--month: which month, e.g. --month 2026-11");
    if (client_escape(month, esc, sizeof esc) < 0)
        return cli_usage_error(c, "--month: want YYYY-MM");
    snprintf(path, sizeof path, "/v1/reports/capacity?month=%s", esc);
    return print_report(c, path, csv ? capacity_csv : html ? capacity_html : capacity_table);
}

int cmd_report(struct cli *c, int argc, char **argv)
{
    struct cli_args a;
    const char *since = NULL, *by = NULL, *month = NULL, *quarter = NULL;
    bool csv = false, html = false;
    int rc = cli_parse_args(c, argc, argv, report_opts, 1, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 0; i < a.nopts; i++) {
        switch (a.ids[i]) {
        case RP_SINCE:
            since = a.vals[i];
            break;
        case RP_BY:
            by = a.vals[i];
            break;
        case RP_MONTH:
            month = a.vals[i];
            break;
        case RP_QUARTER:
            quarter = a.vals[i];
            break;
        case RP_CSV:
            csv = true;
            break;
        case RP_HTML:
            html = true;
            break;
        }
    }
    if (csv + html + c->json > 1)
        return cli_usage_error(c, "one of --csv, --html and --json");
    const char *sub = a.npos ? a.pos[0] : "";
    if (!strcmp(sub, "usage")) {
        if (html)
            return cli_usage_error(c, "--html is for `docket report capacity`");
        return usage(c, since, by, month, quarter, csv);
    }
    if (!strcmp(sub, "capacity")) {
        if (since || by || quarter)
            return cli_usage_error(c, "--since, --quarter and --by are for `docket report usage`");
        return capacity(c, month, csv, html);
    }
    return cli_usage_error(c, "usage or capacity? (docket report usage --since 30d)");
}
