/*
 * report_html.c - the self-contained HTML report of docket-sim (see report.h): summary
 * tables and inline SVG line charts drawn here (wait CDF per tier, GPU utilisation and
 * queue length over time). No script, no external style sheet or font: the file opens
 * offline and prints.
 */
#include "sim/report.h"
#include "util/str.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/table.h"
#include "util/parse.h"

enum { W = 760, H = 300, ML = 64, MR = 150, MT = 30, MB = 44, MAX_POINTS = 600, CDF_POINTS = 200 };

static const char *const palette[] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
};

struct line {
    const char *label;
    const double *x, *y;
    size_t n;
};

/* A "nice" axis maximum: 1, 2 or 5 times a power of ten, at least v. */
static double nice_max(double v)
{
    double p;

    if (v <= 0)
        return 1;
    p = pow(10, floor(log10(v)));
    if (v <= p)
        return p;
    if (v <= 2 * p)
        return 2 * p;
    if (v <= 5 * p)
        return 5 * p;
    return 10 * p;
}

struct axes {
    double x0, x1, y0, y1;
    bool logx;
    const char *xlabel, *ylabel;
    bool xdays; /* x is hours: label ticks in days when long */
    bool ypercent;
};

static double px(const struct axes *a, double x)
{
    double v = a->logx ? log10(x < 1 ? 1 : x) : x;
    double lo = a->logx ? log10(a->x0) : a->x0, hi = a->logx ? log10(a->x1) : a->x1;

    return ML + (hi > lo ? (v - lo) / (hi - lo) : 0) * (W - ML - MR);
}

static double py(const struct axes *a, double y)
{
    return H - MB - (a->y1 > a->y0 ? (y - a->y0) / (a->y1 - a->y0) : 0) * (H - MT - MB);
}

static void x_tick_label(const struct axes *a, double v, char *buf, size_t len)
{
    if (a->logx) {
        format_duration((int64_t)(v * 1000), buf, len);
    } else if (a->xdays && a->x1 > 72) {
        snprintf(buf, len, "%.0fd", v / 24);
    } else {
        snprintf(buf, len, "%.0fh", v);
    }
}

static void draw_axes(FILE *f, const struct axes *a)
{
    char buf[32];

    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"ax\"/>\n", ML, H - MB, W - MR,
            H - MB);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"ax\"/>\n", ML, MT, ML,
            H - MB);
    for (int i = 0; i <= 4; i++) {
        double v = a->y0 + (a->y1 - a->y0) * i / 4;

        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" class=\"grid\"/>", ML,
                py(a, v), W - MR, py(a, v));
        if (a->ypercent)
            fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"yt\">%.0f%%</text>\n", ML - 6,
                    py(a, v) + 4, v * 100);
        else
            fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"yt\">%g</text>\n", ML - 6, py(a, v) + 4,
                    v);
    }
    if (a->logx) {
        for (double v = 1; v <= a->x1 * 1.0001; v *= 10) {
            x_tick_label(a, v, buf, sizeof(buf));
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"xt\">%s</text>\n", px(a, v), H - MB + 16,
                    buf);
        }
    } else {
        /* round steps: 1, 2 or 5 x 10^k days (or hours on short runs) */
        double unit = a->xdays && a->x1 > 72 ? 24 : 1;
        double step = nice_max((a->x1 - a->x0) / unit / 6) * unit;

        for (double v = a->x0; v <= a->x1 * 1.0001 && step > 0; v += step) {
            x_tick_label(a, v, buf, sizeof(buf));
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"xt\">%s</text>\n", px(a, v), H - MB + 16,
                    buf);
        }
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"xl\">%s</text>\n", (ML + W - MR) / 2, H - 8,
            a->xlabel);
    fprintf(f, "<text x=\"14\" y=\"%d\" class=\"yl\" transform=\"rotate(-90 14 %d)\">%s</text>\n",
            (MT + H - MB) / 2, (MT + H - MB) / 2, a->ylabel);
}

static void chart(FILE *f, const char *title, const struct axes *a, const struct line *lines, int n)
{
    fprintf(f, "<figure><figcaption>");
    str_html_write(f, title);
    fprintf(f,
            "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" "
            "width=\"%d\" height=\"%d\" role=\"img\">\n",
            W, H, W, H);
    draw_axes(f, a);
    for (int i = 0; i < n; i++) {
        const char *col = palette[i % 8];

        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" points=\"", col);
        for (size_t k = 0; k < lines[i].n; k++)
            fprintf(f, "%.1f,%.1f ", px(a, lines[i].x[k]), py(a, lines[i].y[k]));
        fprintf(f,
                "\"/>\n<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"3\" fill=\"%s\"/>"
                "<text x=\"%d\" y=\"%d\" class=\"lg\">",
                W - MR + 10, MT + 6 + i * 18, col, W - MR + 26, MT + 10 + i * 18);
        str_html_write(f, lines[i].label);
        fputs("</text>\n", f);
    }
    fputs("</svg></figure>\n", f);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* CDF points of the waits (seconds) of one tier (tier < 0: all jobs). */
static size_t wait_cdf(const struct sim_result *r, int tier, double *xs, double *ys, double *maxw)
{
    double *w = malloc((r->njobs + 1) * sizeof(double));
    size_t n = 0, k = 0;

    if (!w)
        return 0;
    for (size_t i = 0; i < r->njobs; i++) {
        const struct sim_job_rec *j = &r->jobs[i];

        if (j->first_start_ms >= 0 && j->end != SIM_END_REJECTED && (tier < 0 || j->tier == tier))
            w[n++] = (double)(j->first_start_ms - j->submit_ms) / 1000.0;
    }
    qsort(w, n, sizeof(double), cmp_double);
    for (int i = 0; n > 0 && i <= CDF_POINTS; i++) {
        size_t idx = (size_t)((double)(n - 1) * i / CDF_POINTS);

        xs[k] = w[idx] < 1 ? 1 : w[idx];
        ys[k] = (double)(idx + 1) / (double)n;
        if (xs[k] > *maxw)
            *maxw = xs[k];
        k++;
    }
    free(w);
    return k;
}

/* One chart per tier (and one for all jobs), every policy a line, all on the same axes
 * so the charts can be read against each other. */
static void cdf_charts(FILE *f, const struct sim_run_report *runs, int n)
{
    enum { NL = 8 };
    static double xs[NL][CDF_POINTS + 1], ys[NL][CDF_POINTS + 1];
    const struct sim_result *r0 = runs[0].r;
    struct line lines[NL];
    struct axes a = {.x0 = 1,
                     .y0 = 0,
                     .y1 = 1,
                     .logx = true,
                     .ypercent = true,
                     .xlabel = "wait to first start (log scale)",
                     .ylabel = "jobs started within"};
    char title[160];
    double maxw = 1;

    /* one pass for the shared x axis */
    for (int t = -1; t < r0->policy.ntiers; t++)
        for (int k = 0; k < n && k < NL; k++)
            (void)wait_cdf(runs[k].r, t, xs[0], ys[0], &maxw);
    a.x1 = pow(10, ceil(log10(maxw)));
    if (a.x1 < 10)
        a.x1 = 10;
    for (int t = -1; t < r0->policy.ntiers; t++) {
        int nl = 0;

        for (int k = 0; k < n && nl < NL; k++) {
            const struct sim_result *r = runs[k].r;
            int rt = -1;
            size_t m;

            for (int i = 0; t >= 0 && i < r->policy.ntiers; i++)
                if (strcmp(r->policy.tiers[i].name, r0->policy.tiers[t].name) == 0)
                    rt = i;
            if (t >= 0 && rt < 0)
                continue;
            m = wait_cdf(r, rt, xs[nl], ys[nl], &maxw);
            if (m == 0)
                continue;
            lines[nl] = (struct line){r->policy_name, xs[nl], ys[nl], m};
            nl++;
        }
        if (t < 0)
            snprintf(title, sizeof(title), "Wait CDF, all jobs");
        else
            snprintf(title, sizeof(title), "Wait CDF, tier %s", r0->policy.tiers[t].name);
        if (nl > 0)
            chart(f, title, &a, lines, nl);
    }
}

/* Downsample a time series to at most MAX_POINTS by averaging neighbours. */
enum series_kind { S_QUEUE, S_GPU, S_CPU };

static double series_value(const struct sim_result *r, enum series_kind kind, size_t j)
{
    const struct sim_series *s = &r->series;

    if (kind == S_GPU)
        return r->total_gpus > 0
                   ? s->busy_gpu_ms[j] / ((double)s->bucket_ms * (double)r->total_gpus)
                   : 0;
    if (kind == S_CPU)
        return r->total_cpus > 0
                   ? s->busy_cpu_ms[j] / ((double)s->bucket_ms * (double)r->total_cpus)
                   : 0;
    return s->pending_ms[j] / (double)s->bucket_ms;
}

static size_t series_points(const struct sim_result *r, enum series_kind kind, double *xs,
                            double *ys, double *ymax)
{
    const struct sim_series *s = &r->series;
    size_t step = (s->n + MAX_POINTS - 1) / MAX_POINTS, k = 0;

    if (step < 1)
        step = 1;
    for (size_t i = 0; i < s->n; i += step) {
        double sum = 0;
        size_t m = 0;

        for (size_t j = i; j < i + step && j < s->n; j++, m++)
            sum += series_value(r, kind, j);
        xs[k] = (double)(i * (size_t)s->bucket_ms) / 3.6e6;
        ys[k] = m ? sum / (double)m : 0;
        if (ys[k] > *ymax)
            *ymax = ys[k];
        k++;
    }
    return k;
}

static void time_chart(FILE *f, const struct sim_run_report *runs, int n, enum series_kind kind)
{
    enum { NL = 8 };
    static double xs[NL][MAX_POINTS + 1], ys[NL][MAX_POINTS + 1];
    static const char *const titles[] = {"Queue length over time (pending jobs)",
                                         "GPU utilisation over time", "CPU utilisation over time"};
    struct line lines[NL];
    struct axes a = {.x0 = 0,
                     .y0 = 0,
                     .xdays = true,
                     .xlabel = "simulated time",
                     .ylabel = kind == S_QUEUE ? "pending jobs" : "busy",
                     .ypercent = kind != S_QUEUE};
    double ymax = 0, xmax = 1;
    int nl = 0;

    for (int k = 0; k < n && nl < NL; k++) {
        size_t m = series_points(runs[k].r, kind, xs[nl], ys[nl], &ymax);

        if (m && xs[nl][m - 1] > xmax)
            xmax = xs[nl][m - 1];
        lines[nl] = (struct line){runs[k].r->policy_name, xs[nl], ys[nl], m};
        nl++;
    }
    a.x1 = xmax;
    a.y1 = kind != S_QUEUE ? 1 : nice_max(ymax);
    chart(f, titles[kind], &a, lines, nl);
}

/* Utilisation (of each dimension the trace used) and queue length, every policy a line. */
static void time_charts(FILE *f, const struct sim_run_report *runs, int n)
{
    const struct sim_result *r0 = runs[0].r;

    if (r0->total_gpus > 0)
        time_chart(f, runs, n, S_GPU);
    if (r0->total_gpus == 0 || r0->rows.cpu_jobs > 0)
        time_chart(f, runs, n, S_CPU);
    time_chart(f, runs, n, S_QUEUE);
}

/* The comparison table: every policy a column, every metric a row, best in bold. */
static void compare_table(FILE *f, const struct sim_table *t)
{
    const char *prev = "";

    fputs("<table class=\"cmp\"><tr><th>group</th><th>metric</th>", f);
    for (int k = 0; k < t->nruns; k++) {
        fputs("<th>", f);
        str_html_write(f, t->runs[k]);
        fputs("</th>", f);
    }
    fputs("</tr>\n", f);
    for (size_t i = 0; i < t->nrows; i++) {
        const struct sim_table_row *row = &t->rows[i];
        int best = sim_table_best(t, row);

        fputs(strcmp(prev, row->group) ? "<tr class=\"grp\"><td>" : "<tr><td>", f);
        if (strcmp(prev, row->group))
            str_html_write(f, row->group);
        prev = row->group;
        fputs("</td><td>", f);
        str_html_write(f, row->metric);
        fputs("</td>", f);
        for (int k = 0; k < t->nruns; k++) {
            char cell[32];

            sim_cell_format(row->v[k], row->kind, false, cell, sizeof(cell));
            fprintf(f, k == best ? "<td class=\"best\">%s</td>" : "<td>%s</td>", cell);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void run_section(FILE *f, const struct sim_run_report *run)
{
    const struct sim_result *r = run->r;
    const struct sim_summary *s = run->s;

    fputs("<h2>Policy ", f);
    str_html_write(f, r->policy_name);
    fprintf(f,
            "</h2>\n<p class=\"kpi\"><b>%.1f%%</b> GPU, <b>%.1f%%</b> CPU utilisation · "
            "<b>%ld</b> preemptions (%.1f GPU-h lost) · <b>%ld</b> timeouts · %ld rejected · "
            "%ld unfinished · makespan %.1f h · %d queue%s</p>\n",
            100 * s->utilisation, 100 * s->cpu_utilisation, r->preemptions, s->lost_gpu_hours,
            r->timeouts, r->rejected, r->unfinished, s->makespan_h, r->partitions,
            r->partitions == 1 ? "" : "s");
    fputs("<table><tr><th>project</th><th>guarantee GPUs</th><th>GPU-hours</th>"
          "<th>share</th><th>guarantee share</th><th>ratio</th><th>wait p95</th></tr>\n",
          f);
    for (int i = 0; i < s->nprojects; i++) {
        const struct sim_group_stats *g = &s->projects[i];
        char b[32];

        format_duration((int64_t)(g->wait_p95_s * 1000), b, sizeof(b));
        fputs("<tr><td>", f);
        str_html_write(f, g->name);
        fprintf(f, "</td><td>%.1f</td><td>%.0f</td><td>%.1f%%</td><td>%.1f%%</td><td>",
                g->guarantee_gpus, g->gpu_hours, 100 * g->used_share, 100 * g->guarantee_share);
        if (g->guarantee_share > 0)
            fprintf(f, "%.2f", g->used_share / g->guarantee_share);
        else
            fputs("–", f);
        fprintf(f, "</td><td>%s</td></tr>\n", b);
    }
    fputs("</table>\n", f);
}

static const char css[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1000px;color:#222}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse;margin:10px 0;font-variant-numeric:tabular-nums}"
    "th,td{padding:3px 9px;border-bottom:1px solid #eee;text-align:right}"
    "th:first-child,td:first-child{text-align:left}th{background:#f6f6f6}"
    "table.cmp td:nth-child(2),table.cmp th:nth-child(2){text-align:left}"
    "tr.tot td{font-weight:600}figure{margin:18px 0}figcaption{font-weight:600}"
    "td.best{font-weight:700;background:#eef6ee}tr.grp td{border-top:2px solid #ccc}"
    ".verdict{font-size:16px;background:#f4f7fb;padding:10px 14px;border-left:4px solid #1f77b4}"
    ".ax{stroke:#444}.grid{stroke:#e5e5e5}.xt{font-size:11px;text-anchor:middle;fill:#555}"
    ".yt{font-size:11px;text-anchor:end;fill:#555}.xl,.yl{font-size:12px;text-anchor:middle;"
    "fill:#333}.lg{font-size:12px;fill:#333}.kpi{color:#333}.meta{color:#666}";

/* The page's head, title and the trace and cluster it ran on (left open after the cluster). */
static void page_head(FILE *f, const struct sim_report_meta *m)
{
    fprintf(f,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>docket-sim report</title><style>%s</style></head><body>\n",
            css);
    fputs("<h1>docket-sim report</h1>\n<p class=\"meta\">trace <code>", f);
    str_html_write(f, m->trace);
    fputs("</code> · cluster <code>", f);
    str_html_write(f, m->cluster);
}

int sim_report_sweep_html(FILE *f, const struct sim_report_meta *m, const struct sim_table *sweep,
                          int points)
{
    page_head(f, m);
    fprintf(f,
            "</code> · %d points · seed %llu</p>\n<h2>Sweep: every point against every "
            "policy</h2>\n<p>Each group is one point of the grid (the values it changes) "
            "and one group of jobs. Bold: the best policy of a row at that point. A policy "
            "breaks where its waits, jobs past the starvation bound or unfinished jobs climb "
            "as the load rises or the cluster shrinks.</p>\n",
            points, m->seed);
    compare_table(f, sweep);
    fputs("<p class=\"meta\">Wait: submission to first start. Bounded slowdown: (end − "
          "submission) / max(runtime, 10 s). Definitions: docs/sim.md.</p>\n</body></html>\n",
          f);
    return ferror(f) ? -EIO : 0;
}

int sim_report_html(FILE *f, const struct sim_report_meta *m, const struct sim_run_report *runs,
                    int n)
{
    struct sim_table t;
    char verdict[1024];

    page_head(f, m);
    fprintf(f,
            "</code> (%ld nodes, %ld GPUs, %ld CPUs) · %zu jobs · arrival scale %g · cluster "
            "scale %g%s · seed %llu</p>\n<p class=\"meta\">",
            runs[0].r->total_nodes, runs[0].r->total_gpus, runs[0].r->total_cpus, runs[0].r->njobs,
            m->arrival_scale, m->cluster_scale, m->pool ? " · pooled" : "", m->seed);
    sim_report_rows(f, m, runs[0].r, false);
    fputs("</p>\n", f);
    if (sim_table_build(runs, n, &t) < 0)
        return -ENOMEM;
    sim_table_verdict(&t, verdict, sizeof(verdict));
    fputs("<p class=\"verdict\">", f);
    str_html_write(f, verdict);
    fputs("</p>\n<h2>Every policy against every metric</h2>\n", f);
    compare_table(f, &t);
    sim_table_release(&t);
    fputs("<h2>Over time</h2>\n", f);
    time_charts(f, runs, n);
    fputs("<h2>Waits per tier</h2>\n", f);
    cdf_charts(f, runs, n);
    for (int k = 0; k < n; k++)
        run_section(f, &runs[k]);
    fputs("<p class=\"meta\">Wait: submission to first start. Total delay: end − submission − "
          "runtime, over the jobs that did all their work (requeues and lost work count). "
          "Bounded slowdown: (end − submission) / max(runtime, 10 s). Jain share: over "
          "projects with a guarantee, of used share ÷ guaranteed share (n/a without "
          "guarantees). Bold: the best value of a row. Definitions: docs/sim.md.</p>\n"
          "</body></html>\n",
          f);
    return ferror(f) ? -EIO : 0;
}
