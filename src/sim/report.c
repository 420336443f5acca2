/*
 * report.c - terminal, comparison, JSON and per-job CSV reports of docket-sim (see
 * report.h). The HTML report is in report_html.c.
 */
#include "sim/report.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "sim/table.h"
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
    fprintf(f, "%s%-14s %7s %7s %6s %7s %6s %9s %9s %9s %9s %9s %9s %8s %7s %8s%s\n", BOLD(c), what,
            "jobs", "done", "failed", "timeout", "unfin", "wait mean", "p50", "p95", "max",
            "delay p95", "max", "bsld", "starved", "lost GPUh", RESET(c));
}

static void group_row(FILE *f, const struct sim_group_stats *g)
{
    char a[32], b[32], d[32], e[32], h[32], k[32];

    fprintf(f, "%-14.14s %7ld %7ld %6ld %7ld %6ld %9s %9s %9s %9s %9s %9s %8.2f %7ld %8.1f\n",
            g->name, g->jobs, g->completed, g->failed, g->timeouts, g->unfinished,
            dur(g->wait_mean_s, h, sizeof(h)), dur(g->wait_p50_s, a, sizeof(a)),
            dur(g->wait_p95_s, b, sizeof(b)), dur(g->wait_max_s, e, sizeof(e)),
            dur(g->delay_p95_s, d, sizeof(d)), dur(g->delay_max_s, k, sizeof(k)), g->slowdown_mean,
            g->starved, g->lost_preempt_gpu_h + g->lost_timeout_gpu_h);
}

static const char *over_cap_words(const char *mode)
{
    if (mode && strcmp(mode, "kill") == 0)
        return "killed at the cap";
    if (mode && strcmp(mode, "skip") == 0)
        return "skipped";
    return "ran to the end";
}

void sim_report_rows(FILE *f, const struct sim_report_meta *m, const struct sim_result *r, bool c)
{
    const struct sim_row_counts *k = &r->rows;

    fprintf(f, "%strace rows%s %ld read, %ld bad (refused)", DIM(c), RESET(c),
            k->read + r->bad_rows, r->bad_rows);
    if (k->before_start)
        fprintf(f, ", %ld before --start-at (not replayed)", k->before_start);
    if (k->never_ran)
        fprintf(f, ", %ld never ran (skipped)", k->never_ran);
    if (k->frac_rounded)
        fprintf(f, ", %ld fractional (%s)", k->frac_rounded,
                m->fractional ? m->fractional : "round-up");
    if (k->frac_skipped)
        fprintf(f, ", %ld fractional (skipped)", k->frac_skipped);
    if (k->cpu_jobs)
        fprintf(f, ", %ld CPU-only (CPU jobs)", k->cpu_jobs);
    if (k->cpu_as_units)
        fprintf(f, ", %ld CPU-only (as GPU units: cpu_unit_cores)", k->cpu_as_units);
    if (k->no_request)
        fprintf(f, ", %ld without GPUs or CPUs (1 CPU)", k->no_request);
    if (k->limit_raised)
        fprintf(f, ", %ld time limit at or below the runtime (%s)", k->limit_raised,
                m->over_cap && strcmp(m->over_cap, "kill") == 0 ? "kept: killed"
                                                                : "raised past it");
    if (k->over_cap)
        fprintf(f, ", %ld runtime past the class max_limit (%s)", k->over_cap,
                over_cap_words(m->over_cap));
    fputc('\n', f);
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
            "%smakespan%s %.1f h  %sutilisation%s GPU %.1f%%, CPU %.1f%%  %spreemptions%s %ld "
            "(%.1f GPU-h lost)  %srequeues%s %ld  %stimeouts%s %ld  %squeues%s %d",
            DIM(c), RESET(c), s->makespan_h, DIM(c), RESET(c), 100 * s->utilisation,
            100 * s->cpu_utilisation, DIM(c), RESET(c), r->preemptions, s->lost_gpu_hours, DIM(c),
            RESET(c), r->requeues, DIM(c), RESET(c), r->timeouts, DIM(c), RESET(c), r->partitions);
    if (r->node_failures)
        fprintf(f, "  %snode failures%s %ld (%.1f GPU-h lost)", DIM(c), RESET(c), r->node_failures,
                s->lost_node_fail_gpu_hours);
    if (r->topology)
        fprintf(f,
                "\n%stopology%s %ld gang starts, %ld spanned more switches than needed "
                "(%ld extra switches)",
                DIM(c), RESET(c), r->gang_starts, r->gangs_spread, r->extra_switches);
    if (s->utilisation_arrivals >= 0 || s->cpu_utilisation_arrivals >= 0)
        fprintf(f,
                "\n%swhile jobs arrive%s (first to last submission, %.1f h) utilisation GPU "
                "%.1f%%, CPU %.1f%%",
                DIM(c), RESET(c), s->arrivals_h,
                100 * (s->utilisation_arrivals > 0 ? s->utilisation_arrivals : 0),
                100 * (s->cpu_utilisation_arrivals > 0 ? s->cpu_utilisation_arrivals : 0));
    fprintf(f, "\n%sJain fairness%s ", DIM(c), RESET(c));
    if (!isnan(s->jain_share))
        fprintf(f, "share/guarantee %.3f, ", s->jain_share);
    else
        fputs("share/guarantee n/a (no guarantees), ", f);
    if (!isnan(s->jain_slowdown))
        fprintf(f, "slowdown %.3f\n", s->jain_slowdown);
    else
        fputs("slowdown n/a (fewer than 2 projects ran)\n", f);
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
    sim_report_rows(f, meta, run->r, c);
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
    fprintf(f,
            "%swait: submission to first start; delay: end - submission - runtime (jobs that "
            "did all their work); bsld: mean bounded slowdown (10 s bound); lost: GPU-hours "
            "lost to preemption and time limits%s\n",
            DIM(c), RESET(c));
    return ferror(f) ? -EIO : 0;
}

int sim_report_compare(FILE *f, const struct sim_report_meta *meta,
                       const struct sim_run_report *runs, int n, bool c)
{
    struct sim_table t;
    char verdict[1024];
    int rc;

    if (sim_table_build(runs, n, &t) < 0)
        return -ENOMEM;
    fprintf(f, "%sdocket-sim: %d policies on the same trace%s\n", BOLD(c), n, RESET(c));
    meta_lines(f, meta, c);
    sim_report_rows(f, meta, runs[0].r, c);
    fprintf(f, "%sjobs%s %zu  %scluster%s %ld nodes, %ld GPUs, %ld CPUs\n", DIM(c), RESET(c),
            runs[0].r->njobs, DIM(c), RESET(c), runs[0].r->total_nodes, runs[0].r->total_gpus,
            runs[0].r->total_cpus);
    sim_table_verdict(&t, verdict, sizeof(verdict));
    fprintf(f, "%s%s%s\n\n", BOLD(c), verdict, RESET(c));
    rc = sim_table_text(f, &t, c);
    fprintf(f,
            "%swait: to first start; total delay: end - submission - runtime (requeues "
            "count); bold: best; n/a: not defined (no guarantees, no such tier)%s\n",
            DIM(c), RESET(c));
    sim_table_release(&t);
    return rc < 0 || ferror(f) ? -EIO : 0;
}

int sim_report_table_csv(FILE *f, const struct sim_run_report *runs, int n)
{
    struct sim_table t;
    int rc;

    if (sim_table_build(runs, n, &t) < 0)
        return -ENOMEM;
    rc = sim_table_csv(f, &t);
    sim_table_release(&t);
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* JSON                                                                                */

static json_t *num(double v)
{
    /* three decimals keep the file readable and the bytes stable; undefined is null */
    if (!isfinite(v))
        return json_null();
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

/* Total delay and lost work of a group, added to group_json's object. */
static void group_json_more(json_t *o, const struct sim_group_stats *g)
{
    json_object_set_new(o, "delay_s",
                        json_pack("{s:I, s:o, s:o, s:o, s:o}", "jobs", (json_int_t)g->delayed_jobs,
                                  "p50", num(g->delay_p50_s), "p95", num(g->delay_p95_s), "max",
                                  num(g->delay_max_s), "mean", num(g->delay_mean_s)));
    json_object_set_new(o, "lost_preempt_gpu_hours", num(g->lost_preempt_gpu_h));
    json_object_set_new(o, "lost_timeout_gpu_hours", num(g->lost_timeout_gpu_h));
}

static json_t *group_full(const struct sim_group_stats *g)
{
    json_t *o = group_json(g);

    group_json_more(o, g);
    return o;
}

static json_t *rows_json(const struct sim_result *r)
{
    const struct sim_row_counts *k = &r->rows;

    return json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "read",
        (json_int_t)(k->read + r->bad_rows), "bad", (json_int_t)r->bad_rows, "before_start",
        (json_int_t)k->before_start, "never_ran", (json_int_t)k->never_ran, "fractional_rounded",
        (json_int_t)k->frac_rounded, "fractional_skipped", (json_int_t)k->frac_skipped, "cpu_jobs",
        (json_int_t)k->cpu_jobs, "cpu_as_gpu_units", (json_int_t)k->cpu_as_units, "no_request",
        (json_int_t)k->no_request, "limit_raised", (json_int_t)k->limit_raised, "over_cap",
        (json_int_t)k->over_cap, "over_cap_skipped", (json_int_t)k->over_cap_skipped);
}

static json_t *series_json(const struct sim_result *r)
{
    json_t *util = json_array(), *queue = json_array(), *cpu = json_array();
    const struct sim_series *s = &r->series;

    for (size_t i = 0; i < s->n; i++) {
        json_array_append_new(
            util, num(r->total_gpus > 0
                          ? s->busy_gpu_ms[i] / ((double)s->bucket_ms * (double)r->total_gpus)
                          : 0));
        json_array_append_new(queue, num(s->pending_ms[i] / (double)s->bucket_ms));
        json_array_append_new(
            cpu, num(r->total_cpus > 0
                         ? s->busy_cpu_ms[i] / ((double)s->bucket_ms * (double)r->total_cpus)
                         : 0));
    }
    return json_pack("{s:I, s:o, s:o, s:o}", "bucket_ms", (json_int_t)s->bucket_ms,
                     "gpu_utilisation", util, "cpu_utilisation", cpu, "queue_length", queue);
}

static json_t *run_json(const struct sim_run_report *run)
{
    const struct sim_result *r = run->r;
    const struct sim_summary *s = run->s;
    json_t *tiers = json_array(), *projects = json_array();

    for (int t = 0; t < s->ntiers; t++) {
        json_t *g = group_full(&s->tiers[t]);

        json_object_set_new(g, "starve_after_ms", json_integer(r->policy.tiers[t].starve_after_ms));
        json_object_set_new(g, "starvation_bound_ms", json_integer(r->starve_bound_ms[t]));
        json_array_append_new(tiers, g);
    }
    for (int p = 0; p < s->nprojects; p++)
        json_array_append_new(projects, group_full(&s->projects[p]));
    json_t *o;

    o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:I, s:I, s:I, s:o, s:I, "
                  "s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                  "policy", r->policy_name, "jobs", (json_int_t)r->njobs, "bad_rows",
                  (json_int_t)r->bad_rows, "rejected", (json_int_t)r->rejected, "unfinished",
                  (json_int_t)r->unfinished, "gpus", (json_int_t)r->total_gpus, "makespan_h",
                  num(s->makespan_h), "gpu_utilisation", num(s->utilisation), "lost_gpu_hours",
                  num(s->lost_gpu_hours), "preemptions", (json_int_t)r->preemptions, "requeues",
                  (json_int_t)r->requeues, "timeouts", (json_int_t)r->timeouts,
                  "node_fail_lost_gpu_hours", num(s->lost_node_fail_gpu_hours), "node_failures",
                  (json_int_t)r->node_failures, "jain_share", num(s->jain_share), "jain_slowdown",
                  num(s->jain_slowdown), "all", group_full(&s->all), "tiers", tiers, "projects",
                  projects, "series", series_json(r), "cycles",
                  json_integer((json_int_t)r->cycles));
    if (!o)
        return NULL;
    json_object_set_new(o, "cpus", json_integer((json_int_t)r->total_cpus));
    json_object_set_new(o, "topology",
                        r->topology
                            ? json_pack("{s:I,s:I,s:I}", "gang_starts", (json_int_t)r->gang_starts,
                                        "gangs_spread", (json_int_t)r->gangs_spread,
                                        "extra_switches", (json_int_t)r->extra_switches)
                            : json_null());
    json_object_set_new(o, "cpu_utilisation", num(s->cpu_utilisation));
    json_object_set_new(o, "gpu_utilisation_arrivals",
                        s->utilisation_arrivals >= 0 ? num(s->utilisation_arrivals) : json_null());
    json_object_set_new(o, "cpu_utilisation_arrivals",
                        s->cpu_utilisation_arrivals >= 0 ? num(s->cpu_utilisation_arrivals)
                                                         : json_null());
    json_object_set_new(o, "queues", json_integer(r->partitions));
    json_object_set_new(o, "rows", rows_json(r));
    return o;
}

/* A comparison table (table.h) as JSON: what `docket-sim compare` reads back. */
static json_t *table_to_json(const struct sim_table *t, bool with_verdict)
{
    json_t *rows = json_array(), *names = json_array();
    char verdict[1024];

    for (int k = 0; k < t->nruns; k++)
        json_array_append_new(names, json_string(t->runs[k]));
    for (size_t i = 0; i < t->nrows; i++) {
        const struct sim_table_row *row = &t->rows[i];
        json_t *vals = json_array();

        for (int k = 0; k < t->nruns; k++)
            json_array_append_new(vals, num(row->v[k]));
        json_array_append_new(rows, json_pack("{s:s, s:s, s:s, s:s, s:i, s:o}", "group", row->group,
                                              "metric", row->metric, "key", row->key, "kind",
                                              sim_cell_kind_name(row->kind), "better", row->better,
                                              "values", vals));
    }
    if (!with_verdict)
        return json_pack("{s:o, s:o}", "policies", names, "rows", rows);
    sim_table_verdict(t, verdict, sizeof(verdict));
    return json_pack("{s:s, s:o, s:o}", "verdict", verdict, "policies", names, "rows", rows);
}

static json_t *table_json(const struct sim_run_report *runs, int n)
{
    struct sim_table t;
    json_t *j;

    if (sim_table_build(runs, n, &t) < 0)
        return NULL;
    j = table_to_json(&t, true);
    sim_table_release(&t);
    return j;
}

static json_t *input_json(const struct sim_report_meta *m)
{
    return json_pack("{s:s, s:s, s:o, s:o, s:I, s:o, s:b, s:I, s:o, s:s, s:s}", "trace", m->trace,
                     "cluster", m->cluster, "arrival_scale", num(m->arrival_scale), "cluster_scale",
                     num(m->cluster_scale), "limit", (json_int_t)m->limit, "start_at_s",
                     num((double)m->start_at_ms / 1000.0), "pool", m->pool, "seed",
                     (json_int_t)m->seed, "node_failure_rate", num(m->node_failure_rate),
                     "fractional", m->fractional ? m->fractional : "round-up", "over_cap",
                     m->over_cap ? m->over_cap : "run");
}

static int dump(FILE *f, json_t *doc)
{
    int rc;

    if (!doc)
        return -ENOMEM;
    rc = json_dumpf(doc, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(doc);
    fputc('\n', f);
    return rc < 0 || ferror(f) ? -EIO : 0;
}

int sim_report_json(FILE *f, const struct sim_report_meta *m, const struct sim_run_report *runs,
                    int n)
{
    json_t *arr = json_array();

    for (int i = 0; i < n; i++)
        json_array_append_new(arr, run_json(&runs[i]));
    return dump(f, json_pack("{s:o, s:o, s:o}", "input", input_json(m), "comparison",
                             table_json(runs, n), "runs", arr));
}

int sim_report_sweep_json(FILE *f, const struct sim_report_meta *m, const char *const *points,
                          int npoints, const struct sim_table *sweep)
{
    json_t *labels = json_array();

    for (int i = 0; i < npoints; i++)
        json_array_append_new(labels, json_string(points[i]));
    return dump(f, json_pack("{s:o, s:{s:o, s:o}}", "input", input_json(m), "sweep", "points",
                             labels, "table", table_to_json(sweep, false)));
}

/* ---------------------------------------------------------------------------------- */
/* Per-job CSV                                                                         */

void sim_csv_field(FILE *f, const char *s)
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
          "time_limit_s,state,preemptions,lost_s,cpus,delay_s\n",
          f);
    for (int k = 0; k < n; k++) {
        const struct sim_result *r = runs[k].r;

        for (size_t i = 0; i < r->njobs; i++) {
            const struct sim_job_rec *j = &r->jobs[i];

            sim_csv_field(f, r->policy_name);
            fputc(',', f);
            sim_csv_field(f, sim_job_id(r, j));
            fputc(',', f);
            sim_csv_field(
                f, r->projects && j->end != SIM_END_REJECTED ? r->projects[j->project].name : "");
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
            fprintf(f, ",%.3f,%.3f,%s,%u,%.3f,%d,", (double)j->runtime_ms / 1000.0,
                    (double)j->limit_ms / 1000.0, sim_job_end_name((enum sim_job_end)j->end),
                    (unsigned)j->preempts, (double)j->lost_ms / 1000.0, j->cpus);
            if (j->end_ms >= 0 && j->saved_ms >= j->runtime_ms &&
                (j->end == SIM_END_COMPLETED || j->end == SIM_END_FAILED))
                fprintf(f, "%.3f", (double)(j->end_ms - j->submit_ms - j->runtime_ms) / 1000.0);
            fputc('\n', f);
        }
    }
    return ferror(f) ? -EIO : 0;
}
