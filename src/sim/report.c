/*
 * report.c - terminal, comparison, JSON and per-job CSV reports of docket-sim (see
 * report.h). The HTML report is in report_html.c.
 */
#include "sim/report.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "util/parse.h"

#define BOLD(c)  ((c) ? "\033[1m" : "")
#define DIM(c)   ((c) ? "\033[2m" : "")
#define RESET(c) ((c) ? "\033[0m" : "")

/* Seconds as a short duration ("1h30m"). */
static const char *dur(double s, char *buf, size_t len)
{
    format_duration((int64_t)llround(s * 1000.0), buf, len);
    return buf;
}

static void group_header(FILE *f, const char *what, bool c)
{
    fprintf(f, "%s%-14s %7s %7s %7s %7s %9s %9s %9s %9s %8s %7s%s\n", BOLD(c), what, "jobs", "done",
            "timeout", "unfin", "wait p50", "p95", "p99", "max", "bsld", "starved", RESET(c));
}

static void group_row(FILE *f, const struct sim_group_stats *g)
{
    char a[32], b[32], d[32], e[32];

    fprintf(f, "%-14.14s %7ld %7ld %7ld %7ld %9s %9s %9s %9s %8.2f %7ld\n", g->name, g->jobs,
            g->completed, g->timeouts, g->unfinished, dur(g->wait_p50_s, a, sizeof(a)),
            dur(g->wait_p95_s, b, sizeof(b)), dur(g->wait_p99_s, d, sizeof(d)),
            dur(g->wait_max_s, e, sizeof(e)), g->slowdown_mean, g->starved);
}

static void share_table(FILE *f, const struct sim_summary *s, bool c)
{
    fprintf(f, "%s%-14s %10s %10s %9s %9s %6s %9s%s\n", BOLD(c), "project", "guarantee",
            "GPU-hours", "share", "guar.sh", "ratio", "preempted", RESET(c));
    for (int i = 0; i < s->nprojects; i++) {
        const struct sim_group_stats *g = &s->projects[i];

        fprintf(f, "%-14.14s %10.1f %10.0f %8.1f%% %8.1f%% ", g->name, g->guarantee_gpus,
                g->gpu_hours, 100 * g->used_share, 100 * g->guarantee_share);
        if (g->guarantee_share > 0)
            fprintf(f, "%6.2f", g->used_share / g->guarantee_share);
        else
            fprintf(f, "%6s", "-");
        fprintf(f, " %9ld\n", g->preempted_jobs);
    }
}

static void meta_lines(FILE *f, const struct sim_report_meta *m, bool c)
{
    fprintf(f, "%strace%s %s  %scluster%s %s  %sarrival-scale%s %g  %scluster-scale%s %g%s%s\n",
            DIM(c), RESET(c), m->trace, DIM(c), RESET(c), m->cluster, DIM(c), RESET(c),
            m->arrival_scale, DIM(c), RESET(c), m->cluster_scale, m->pool ? "  pooled" : "",
            m->node_failure_rate > 0 ? "  node failures" : "");
}

static void totals(FILE *f, const struct sim_result *r, const struct sim_summary *s, bool c)
{
    fprintf(f,
            "%sjobs%s %zu (rejected %ld, bad rows %ld, unfinished %ld)  "
            "%scluster%s %ld nodes, %ld GPUs\n",
            DIM(c), RESET(c), r->njobs, r->rejected, r->bad_rows, r->unfinished, DIM(c), RESET(c),
            r->total_nodes, r->total_gpus);
    fprintf(f,
            "%smakespan%s %.1f h  %sGPU utilisation%s %.1f%%  %spreemptions%s %ld "
            "(%.1f GPU-h lost)  %srequeues%s %ld  %stimeouts%s %ld",
            DIM(c), RESET(c), s->makespan_h, DIM(c), RESET(c), 100 * s->utilisation, DIM(c),
            RESET(c), r->preemptions, s->lost_gpu_hours, DIM(c), RESET(c), r->requeues, DIM(c),
            RESET(c), r->timeouts);
    if (r->node_failures)
        fprintf(f, "  %snode failures%s %ld (%.1f GPU-h lost)", DIM(c), RESET(c), r->node_failures,
                s->lost_node_fail_gpu_hours);
    fprintf(f, "\n%sJain fairness%s ", DIM(c), RESET(c));
    if (s->all.guarantee_gpus > 0)
        fprintf(f, "share/guarantee %.3f, ", s->jain_share);
    else
        fputs("share/guarantee - (no guarantees), ", f);
    fprintf(f, "slowdown %.3f\n", s->jain_slowdown);
}

/* A 60-character ASCII strip of a series, each slot the mean of its buckets scaled to
 * [0, max]: the terminal's view of utilisation and queue length over time. */
static void strip(FILE *f, const struct sim_result *r, bool util, bool c)
{
    static const char ramp[] = " .:-=+*#%@";
    const struct sim_series *s = &r->series;
    enum { SLOTS = 60 };
    double v[SLOTS] = {0}, max = 0;
    size_t per = (s->n + SLOTS - 1) / SLOTS, nslots;
    char slot_len[32];

    if (s->n == 0)
        return;
    if (per < 1)
        per = 1;
    nslots = (s->n + per - 1) / per;
    for (size_t k = 0; k < nslots; k++) {
        size_t m = 0;

        for (size_t i = k * per; i < (k + 1) * per && i < s->n; i++, m++)
            v[k] += util ? s->busy_gpu_ms[i] /
                               ((double)s->bucket_ms * (double)(r->total_gpus ? r->total_gpus : 1))
                         : s->pending_ms[i] / (double)s->bucket_ms;
        v[k] = m ? v[k] / (double)m : 0;
        if (v[k] > max)
            max = v[k];
    }
    if (util)
        max = 1;
    fprintf(f, "%s%-16s%s |", DIM(c), util ? "GPUs busy" : "pending jobs", RESET(c));
    for (size_t k = 0; k < nslots; k++)
        fputc(ramp[max > 0 ? (int)lround(v[k] / max * 9) : 0], f);
    format_duration((int64_t)per * s->bucket_ms, slot_len, sizeof(slot_len));
    if (util)
        fprintf(f, "| 0-100 %%, one mark per %s\n", slot_len);
    else
        fprintf(f, "| 0-%.0f, one mark per %s\n", max, slot_len);
}

int sim_report_text(FILE *f, const struct sim_report_meta *meta, const struct sim_run_report *run,
                    bool c)
{
    const struct sim_summary *s = run->s;

    fprintf(f, "%sdocket-sim: policy %s%s\n", BOLD(c), run->r->policy_name, RESET(c));
    meta_lines(f, meta, c);
    totals(f, run->r, s, c);
    strip(f, run->r, true, c);
    strip(f, run->r, false, c);
    fputc('\n', f);
    group_header(f, "tier", c);
    for (int t = 0; t < s->ntiers; t++)
        if (s->tiers[t].jobs > 0 || s->tiers[t].rejected > 0)
            group_row(f, &s->tiers[t]);
    group_row(f, &s->all);
    fputc('\n', f);
    group_header(f, "project", c);
    for (int p = 0; p < s->nprojects; p++)
        group_row(f, &s->projects[p]);
    fputc('\n', f);
    share_table(f, s, c);
    fputs(c ? "\033[2mwait: submission to first start; bsld: mean bounded slowdown "
              "(10 s bound)\033[0m\n"
            : "wait: submission to first start; bsld: mean bounded slowdown (10 s bound)\n",
          f);
    return ferror(f) ? -EIO : 0;
}

/* One metric row of the comparison: label, then one cell per run. */
static void cmp_row(FILE *f, const char *label, const struct sim_run_report *runs, int n, int which,
                    const char *tier)
{
    fprintf(f, "%-26s", label);
    for (int i = 0; i < n; i++) {
        const struct sim_summary *s = runs[i].s;
        const struct sim_group_stats *g = &s->all;
        char buf[32];

        for (int t = 0; tier && t < s->ntiers; t++)
            if (strcmp(s->tiers[t].name, tier) == 0)
                g = &s->tiers[t];
        switch (which) {
        case 0:
            fprintf(f, " %18s", dur(g->wait_p50_s, buf, sizeof(buf)));
            break;
        case 1:
            fprintf(f, " %18s", dur(g->wait_p95_s, buf, sizeof(buf)));
            break;
        case 2:
            fprintf(f, " %18s", dur(g->wait_p99_s, buf, sizeof(buf)));
            break;
        case 3:
            fprintf(f, " %18.2f", g->slowdown_mean);
            break;
        case 4:
            fprintf(f, " %17.1f%%", 100 * s->utilisation);
            break;
        case 5:
            fprintf(f, " %18ld", runs[i].r->preemptions);
            break;
        case 6:
            fprintf(f, " %18.1f", s->lost_gpu_hours);
            break;
        case 7:
            fprintf(f, " %18.3f", s->jain_share);
            break;
        case 8:
            fprintf(f, " %18.3f", s->jain_slowdown);
            break;
        case 9:
            fprintf(f, " %18ld", g->starved);
            break;
        case 10:
            fprintf(f, " %18.1f", s->makespan_h);
            break;
        case 11:
            fprintf(f, " %18ld", g->completed);
            break;
        default:
            break;
        }
    }
    fputc('\n', f);
}

int sim_report_compare(FILE *f, const struct sim_report_meta *meta,
                       const struct sim_run_report *runs, int n, bool c)
{
    static const char *const names[] = {"wait p50", "wait p95", "wait p99", "mean bsld"};
    const struct sim_summary *s0 = runs[0].s;
    char label[96];

    fprintf(f, "%sdocket-sim: %d policies on the same trace%s\n", BOLD(c), n, RESET(c));
    meta_lines(f, meta, c);
    fprintf(f, "%sjobs%s %zu  %scluster%s %ld nodes, %ld GPUs\n\n", DIM(c), RESET(c),
            runs[0].r->njobs, DIM(c), RESET(c), runs[0].r->total_nodes, runs[0].r->total_gpus);
    fprintf(f, "%s%-26s", BOLD(c), "metric");
    for (int i = 0; i < n; i++)
        fprintf(f, " %18.18s", runs[i].r->policy_name);
    fprintf(f, "%s\n", RESET(c));
    for (int k = 0; k < 4; k++)
        cmp_row(f, names[k], runs, n, k, NULL);
    for (int t = 0; t < s0->ntiers; t++) {
        if (s0->tiers[t].jobs == 0)
            continue;
        for (int k = 0; k < 4; k++) {
            snprintf(label, sizeof(label), "%s: %s", s0->tiers[t].name, names[k]);
            if (k != 0 && k != 1 && k != 3)
                continue;
            cmp_row(f, label, runs, n, k, s0->tiers[t].name);
        }
        snprintf(label, sizeof(label), "%s: starved", s0->tiers[t].name);
        if (s0->tiers[t].jobs > 0 && runs[0].r->policy.tiers[t].starve_after_ms > 0)
            cmp_row(f, label, runs, n, 9, s0->tiers[t].name);
    }
    cmp_row(f, "completed", runs, n, 11, NULL);
    cmp_row(f, "GPU utilisation", runs, n, 4, NULL);
    cmp_row(f, "makespan (h)", runs, n, 10, NULL);
    cmp_row(f, "preemptions", runs, n, 5, NULL);
    cmp_row(f, "GPU-h lost to preemption", runs, n, 6, NULL);
    cmp_row(f, "Jain (share/guarantee)", runs, n, 7, NULL);
    cmp_row(f, "Jain (slowdown)", runs, n, 8, NULL);
    return ferror(f) ? -EIO : 0;
}

/* ---------------------------------------------------------------------------------- */
/* JSON                                                                                */

static json_t *num(double v)
{
    /* three decimals keep the file readable and the bytes stable */
    return json_real(round(v * 1000.0) / 1000.0);
}

static json_t *group_json(const struct sim_group_stats *g)
{
    return json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:{s:o, s:o, s:o, s:o, "
        "s:o}, s:{s:o, s:o}, s:o, s:o, s:o, s:o}",
        "name", g->name, "jobs", (json_int_t)g->jobs, "started", (json_int_t)g->started,
        "completed", (json_int_t)g->completed, "timeouts", (json_int_t)g->timeouts, "failed",
        (json_int_t)g->failed, "unfinished", (json_int_t)g->unfinished, "rejected",
        (json_int_t)g->rejected, "preempted_jobs", (json_int_t)g->preempted_jobs, "starved",
        (json_int_t)g->starved, "wait_s", "p50", num(g->wait_p50_s), "p95", num(g->wait_p95_s),
        "p99", num(g->wait_p99_s), "max", num(g->wait_max_s), "mean", num(g->wait_mean_s),
        "bounded_slowdown", "mean", num(g->slowdown_mean), "p95", num(g->slowdown_p95), "gpu_hours",
        num(g->gpu_hours), "guarantee_gpus", num(g->guarantee_gpus), "used_share",
        num(g->used_share), "guarantee_share", num(g->guarantee_share));
}

static json_t *series_json(const struct sim_result *r)
{
    json_t *util = json_array(), *queue = json_array();
    const struct sim_series *s = &r->series;

    for (size_t i = 0; i < s->n; i++) {
        json_array_append_new(
            util, num(r->total_gpus > 0
                          ? s->busy_gpu_ms[i] / ((double)s->bucket_ms * (double)r->total_gpus)
                          : 0));
        json_array_append_new(queue, num(s->pending_ms[i] / (double)s->bucket_ms));
    }
    return json_pack("{s:I, s:o, s:o}", "bucket_ms", (json_int_t)s->bucket_ms, "gpu_utilisation",
                     util, "queue_length", queue);
}

static json_t *run_json(const struct sim_run_report *run)
{
    const struct sim_result *r = run->r;
    const struct sim_summary *s = run->s;
    json_t *tiers = json_array(), *projects = json_array();

    for (int t = 0; t < s->ntiers; t++) {
        json_t *g = group_json(&s->tiers[t]);

        json_object_set_new(g, "starve_after_ms", json_integer(r->policy.tiers[t].starve_after_ms));
        json_array_append_new(tiers, g);
    }
    for (int p = 0; p < s->nprojects; p++)
        json_array_append_new(projects, group_json(&s->projects[p]));
    return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:I, s:I, s:I, s:o, s:I, "
                     "s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                     "policy", r->policy_name, "jobs", (json_int_t)r->njobs, "bad_rows",
                     (json_int_t)r->bad_rows, "rejected", (json_int_t)r->rejected, "unfinished",
                     (json_int_t)r->unfinished, "gpus", (json_int_t)r->total_gpus, "makespan_h",
                     num(s->makespan_h), "gpu_utilisation", num(s->utilisation), "lost_gpu_hours",
                     num(s->lost_gpu_hours), "preemptions", (json_int_t)r->preemptions, "requeues",
                     (json_int_t)r->requeues, "timeouts", (json_int_t)r->timeouts,
                     "node_fail_lost_gpu_hours", num(s->lost_node_fail_gpu_hours), "node_failures",
                     (json_int_t)r->node_failures, "jain_share", num(s->jain_share),
                     "jain_slowdown", num(s->jain_slowdown), "all", group_json(&s->all), "tiers",
                     tiers, "projects", projects, "series", series_json(r), "cycles",
                     json_integer((json_int_t)r->cycles));
}

int sim_report_json(FILE *f, const struct sim_report_meta *m, const struct sim_run_report *runs,
                    int n)
{
    json_t *arr = json_array();
    json_t *doc;
    int rc;

    for (int i = 0; i < n; i++)
        json_array_append_new(arr, run_json(&runs[i]));
    doc =
        json_pack("{s:{s:s, s:s, s:o, s:o, s:I, s:b, s:I, s:o}, s:o}", "input", "trace", m->trace,
                  "cluster", m->cluster, "arrival_scale", num(m->arrival_scale), "cluster_scale",
                  num(m->cluster_scale), "limit", (json_int_t)m->limit, "pool", m->pool, "seed",
                  (json_int_t)m->seed, "node_failure_rate", num(m->node_failure_rate), "runs", arr);
    if (!doc)
        return -ENOMEM;
    rc = json_dumpf(doc, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(doc);
    fputc('\n', f);
    return rc < 0 || ferror(f) ? -EIO : 0;
}

/* ---------------------------------------------------------------------------------- */
/* Per-job CSV                                                                         */

static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int sim_report_jobs_csv(FILE *f, const struct sim_run_report *runs, int n)
{
    fputs("policy,job_id,project,tier,gpus,submit_s,first_start_s,end_s,wait_s,runtime_s,"
          "time_limit_s,state,preemptions,lost_s\n",
          f);
    for (int k = 0; k < n; k++) {
        const struct sim_result *r = runs[k].r;

        for (size_t i = 0; i < r->njobs; i++) {
            const struct sim_job_rec *j = &r->jobs[i];

            csv_field(f, r->policy_name);
            fputc(',', f);
            csv_field(f, sim_job_id(r, j));
            fputc(',', f);
            csv_field(f, r->projects && j->end != SIM_END_REJECTED ? r->projects[j->project].name
                                                                   : "");
            fprintf(f, ",%s,%d,%.3f,", r->policy.tiers[j->tier].name, j->gpus,
                    (double)j->submit_ms / 1000.0);
            if (j->first_start_ms >= 0)
                fprintf(f, "%.3f", (double)j->first_start_ms / 1000.0);
            fputc(',', f);
            if (j->end_ms >= 0)
                fprintf(f, "%.3f", (double)j->end_ms / 1000.0);
            fputc(',', f);
            if (j->first_start_ms >= 0)
                fprintf(f, "%.3f", (double)(j->first_start_ms - j->submit_ms) / 1000.0);
            fprintf(f, ",%.3f,%.3f,%s,%u,%.3f\n", (double)j->runtime_ms / 1000.0,
                    (double)j->limit_ms / 1000.0, sim_job_end_name((enum sim_job_end)j->end),
                    (unsigned)j->preempts, (double)j->lost_ms / 1000.0);
        }
    }
    return ferror(f) ? -EIO : 0;
}
