/*
 * table.c - the one comparison table every docket-sim report prints (see table.h).
 */
#include "sim/table.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/parse.h"
#include "util/str.h"

static const char *const kind_names[] = {"duration", "count", "real", "percent", "hours", "index"};

const char *sim_cell_kind_name(enum sim_cell_kind k)
{
    return (unsigned)k < sizeof(kind_names) / sizeof(kind_names[0]) ? kind_names[k] : "real";
}

int sim_cell_kind_parse(const char *s, enum sim_cell_kind *out)
{
    for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++) {
        if (strcmp(s, kind_names[i]) == 0) {
            *out = (enum sim_cell_kind)i;
            return 0;
        }
    }
    return -EINVAL;
}

void sim_cell_format(double v, enum sim_cell_kind kind, bool raw, char *buf, size_t len)
{
    if (isnan(v)) {
        snprintf(buf, len, "n/a");
        return;
    }
    switch (kind) {
    case SIM_CELL_DURATION:
        if (raw) {
            snprintf(buf, len, "%.1f", v);
        } else if (v < 0 && len > 1) { /* a change (compare): "-1h30m" */
            buf[0] = '-';
            format_duration((int64_t)llround(-v * 1000.0), buf + 1, len - 1);
        } else {
            format_duration((int64_t)llround(v * 1000.0), buf, len);
        }
        break;
    case SIM_CELL_COUNT:
        snprintf(buf, len, "%.0f", v);
        break;
    case SIM_CELL_PERCENT:
        snprintf(buf, len, raw ? "%.4f" : "%.1f%%", raw ? v : 100 * v);
        break;
    case SIM_CELL_HOURS:
        snprintf(buf, len, raw ? "%.3f" : "%.1f", v);
        break;
    case SIM_CELL_INDEX:
        snprintf(buf, len, "%.3f", v);
        break;
    default:
        snprintf(buf, len, "%.2f", v);
        break;
    }
}

int sim_table_add(struct sim_table *t, const struct sim_table_row *row)
{
    if (t->nrows == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        struct sim_table_row *nr = realloc(t->rows, nc * sizeof(*nr));

        if (!nr)
            return -ENOMEM;
        t->rows = nr;
        t->cap = nc;
    }
    t->rows[t->nrows++] = *row;
    return 0;
}

void sim_table_release(struct sim_table *t)
{
    free(t->rows);
    memset(t, 0, sizeof(*t));
}

/* ---------------------------------------------------------------------------------- */
/* Building                                                                            */

/* Which statistic of a group a row shows. */
enum gmetric {
    GM_JOBS,
    GM_WAIT_MEAN,
    GM_WAIT_P50,
    GM_WAIT_P95,
    GM_WAIT_MAX,
    GM_DELAY_MEAN,
    GM_DELAY_P95,
    GM_DELAY_MAX,
    GM_BSLD,
    GM_STARVED,
    GM_COMPLETED,
    GM_FAILED,
    GM_TIMEOUTS,
    GM_UNFINISHED,
    GM_LOST_PREEMPT,
    GM_LOST_TIMEOUT,
    GM_COUNT
};

static const struct {
    const char *metric, *key;
    enum sim_cell_kind kind;
    int better;
    bool headline;
} gm[GM_COUNT] = {
    {"jobs", "jobs", SIM_CELL_COUNT, 0, false},
    {"wait mean", "wait_mean_s", SIM_CELL_DURATION, -1, true},
    {"wait p50", "wait_p50_s", SIM_CELL_DURATION, -1, false},
    {"wait p95", "wait_p95_s", SIM_CELL_DURATION, -1, true},
    {"wait max", "wait_max_s", SIM_CELL_DURATION, -1, false},
    {"total delay mean", "delay_mean_s", SIM_CELL_DURATION, -1, false},
    {"total delay p95", "delay_p95_s", SIM_CELL_DURATION, -1, false},
    {"total delay max", "delay_max_s", SIM_CELL_DURATION, -1, false},
    {"bounded slowdown", "bsld_mean", SIM_CELL_REAL2, -1, true},
    {"past starvation bound", "starved", SIM_CELL_COUNT, -1, false},
    {"completed", "completed", SIM_CELL_COUNT, +1, false},
    {"failed", "failed", SIM_CELL_COUNT, 0, false},
    {"timeouts", "timeouts", SIM_CELL_COUNT, -1, false},
    {"unfinished", "unfinished", SIM_CELL_COUNT, -1, false},
    {"GPU-h lost to preemption", "lost_preempt_gpu_h", SIM_CELL_HOURS, -1, false},
    {"GPU-h lost to time limits", "lost_timeout_gpu_h", SIM_CELL_HOURS, -1, false},
};

static double gvalue(const struct sim_group_stats *g, enum gmetric m)
{
    bool any = g->started > 0;

    switch (m) {
    case GM_JOBS:
        return (double)g->jobs;
    case GM_WAIT_MEAN:
        return any ? g->wait_mean_s : NAN;
    case GM_WAIT_P50:
        return any ? g->wait_p50_s : NAN;
    case GM_WAIT_P95:
        return any ? g->wait_p95_s : NAN;
    case GM_WAIT_MAX:
        return any ? g->wait_max_s : NAN;
    case GM_DELAY_MEAN:
        return g->delayed_jobs ? g->delay_mean_s : NAN;
    case GM_DELAY_P95:
        return g->delayed_jobs ? g->delay_p95_s : NAN;
    case GM_DELAY_MAX:
        return g->delayed_jobs ? g->delay_max_s : NAN;
    case GM_BSLD:
        return any ? g->slowdown_mean : NAN;
    case GM_STARVED:
        return (double)g->starved;
    case GM_COMPLETED:
        return (double)g->completed;
    case GM_FAILED:
        return (double)g->failed;
    case GM_TIMEOUTS:
        return (double)g->timeouts;
    case GM_UNFINISHED:
        return (double)g->unfinished;
    case GM_LOST_PREEMPT:
        return g->lost_preempt_gpu_h;
    case GM_LOST_TIMEOUT:
        return g->lost_timeout_gpu_h;
    default:
        return NAN;
    }
}

/* The group of run k named `tier` (NULL: all jobs), or NULL when its policy lacks it. */
static const struct sim_group_stats *group_of(const struct sim_run_report *run, const char *tier,
                                              int *tier_index)
{
    const struct sim_summary *s = run->s;

    *tier_index = -1;
    if (!tier)
        return &s->all;
    for (int t = 0; t < s->ntiers; t++) {
        if (strcmp(s->tiers[t].name, tier) == 0) {
            *tier_index = t;
            return &s->tiers[t];
        }
    }
    return NULL;
}

/* Does any run bound the starvation of this tier (any tier for "all")? */
static bool has_bound(const struct sim_run_report *runs, int n, const char *tier)
{
    for (int k = 0; k < n; k++) {
        const struct sim_result *r = runs[k].r;

        for (int t = 0; t < r->policy.ntiers; t++)
            if ((!tier || strcmp(r->policy.tiers[t].name, tier) == 0) && r->starve_bound_ms[t] > 0)
                return true;
    }
    return false;
}

static int add_group(struct sim_table *t, const struct sim_run_report *runs, int n,
                     const char *tier)
{
    struct sim_table_row row;

    for (int m = 0; m < GM_COUNT; m++) {
        if (m == GM_STARVED && !has_bound(runs, n, tier))
            continue; /* no bound to be past */
        memset(&row, 0, sizeof(row));
        if (tier)
            snprintf(row.group, sizeof(row.group), "tier %s", tier);
        else
            snprintf(row.group, sizeof(row.group), "all");
        (void)str_copy(row.metric, sizeof(row.metric), gm[m].metric);
        (void)str_copy(row.key, sizeof(row.key), gm[m].key);
        row.kind = gm[m].kind;
        row.better = gm[m].better;
        /* the verdict looks at p95 per tier, and the mean and slowdown of all jobs */
        row.headline = gm[m].headline && (tier ? m == GM_WAIT_P95 : m != GM_WAIT_P95);
        for (int k = 0; k < n; k++) {
            int ti;
            const struct sim_group_stats *g = group_of(&runs[k], tier, &ti);

            row.v[k] = g ? gvalue(g, (enum gmetric)m) : NAN;
        }
        if (sim_table_add(t, &row) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Cluster-wide rows: utilisation, makespan, preemptions, fairness, what the rows became. */
static int add_cluster(struct sim_table *t, const struct sim_run_report *runs, int n)
{
    static const struct {
        const char *metric, *key;
        enum sim_cell_kind kind;
        int better;
    } cm[] = {
        {"GPU utilisation", "gpu_utilisation", SIM_CELL_PERCENT, +1},
        {"CPU utilisation", "cpu_utilisation", SIM_CELL_PERCENT, +1},
        {"GPU util. while arriving", "gpu_utilisation_arrivals", SIM_CELL_PERCENT, +1},
        {"CPU util. while arriving", "cpu_utilisation_arrivals", SIM_CELL_PERCENT, +1},
        {"makespan (h)", "makespan_h", SIM_CELL_HOURS, -1},
        {"preemptions", "preemptions", SIM_CELL_COUNT, -1},
        {"requeues", "requeues", SIM_CELL_COUNT, 0},
        {"Jain share/guarantee", "jain_share", SIM_CELL_INDEX, +1},
        {"Jain slowdown", "jain_slowdown", SIM_CELL_INDEX, +1},
        {"queues (partitions)", "queues", SIM_CELL_COUNT, 0},
        {"rejected by the core", "rejected", SIM_CELL_COUNT, 0},
        /* with a topology (docs/sim.md "Topology") */
        {"gangs over extra switches", "gangs_spread", SIM_CELL_COUNT, -1},
    };
    bool gpus = false, cpus = false, topo = false;

    for (int k = 0; k < n; k++) {
        gpus = gpus || runs[k].r->total_gpus > 0;
        cpus = cpus || runs[k].r->total_gpus == 0 || runs[k].r->rows.cpu_jobs > 0;
        topo = topo || runs[k].r->topology;
    }
    for (size_t m = 0; m < sizeof(cm) / sizeof(cm[0]); m++) {
        struct sim_table_row row;

        if (((m == 0 || m == 2) && !gpus) || ((m == 1 || m == 3) && !cpus) || (m == 11 && !topo))
            continue;
        memset(&row, 0, sizeof(row));
        snprintf(row.group, sizeof(row.group), "cluster");
        (void)str_copy(row.metric, sizeof(row.metric), cm[m].metric);
        (void)str_copy(row.key, sizeof(row.key), cm[m].key);
        row.kind = cm[m].kind;
        row.better = cm[m].better;
        row.headline = m <= 1;
        for (int k = 0; k < n; k++) {
            const struct sim_result *r = runs[k].r;
            const struct sim_summary *s = runs[k].s;
            const double v[] = {
                s->utilisation,
                s->cpu_utilisation,
                s->utilisation_arrivals >= 0 ? s->utilisation_arrivals : NAN,
                s->cpu_utilisation_arrivals >= 0 ? s->cpu_utilisation_arrivals : NAN,
                s->makespan_h,
                (double)r->preemptions,
                (double)r->requeues,
                s->jain_share,
                s->jain_slowdown,
                (double)r->partitions,
                (double)r->rejected,
                r->topology ? (double)r->gangs_spread : NAN,
            };

            row.v[k] = v[m];
        }
        if (sim_table_add(t, &row) < 0)
            return -ENOMEM;
    }
    return 0;
}

int sim_table_build(const struct sim_run_report *runs, int n, struct sim_table *t)
{
    const struct sim_summary *s0 = runs[0].s;

    memset(t, 0, sizeof(*t));
    if (n > SIM_TABLE_MAX_RUNS)
        n = SIM_TABLE_MAX_RUNS;
    t->nruns = n;
    for (int k = 0; k < n; k++)
        (void)str_copy(t->runs[k], sizeof(t->runs[k]), runs[k].r->policy_name);
    if (add_group(t, runs, n, NULL) < 0)
        goto oom;
    for (int i = 0; i < s0->ntiers; i++) {
        if (s0->tiers[i].jobs == 0 && s0->tiers[i].rejected == 0)
            continue;
        if (add_group(t, runs, n, s0->tiers[i].name) < 0)
            goto oom;
    }
    if (add_cluster(t, runs, n) < 0)
        goto oom;
    return 0;
oom:
    sim_table_release(t);
    return -ENOMEM;
}

/* ---------------------------------------------------------------------------------- */
/* Reading the table                                                                   */

/* Values within SIM_TABLE_TIE (relative) of each other are a tie: 14.5 % against 14.4 %
 * utilisation, or 1h9m against 1h9m30s, is no win to report. */
#define SIM_TABLE_TIE 0.01

int sim_table_best(const struct sim_table *t, const struct sim_table_row *row)
{
    int best = -1;

    if (row->better == 0)
        return -1;
    for (int k = 0; k < t->nruns; k++) {
        double v = row->v[k];

        if (!isnan(v) && (best < 0 || (row->better < 0 ? v < row->v[best] : v > row->v[best])))
            best = k;
    }
    if (best < 0)
        return -1;
    for (int k = 0; k < t->nruns; k++) {
        double v = row->v[k], b = row->v[best];

        if (k != best && !isnan(v) && fabs(v - b) <= SIM_TABLE_TIE * fabs(b))
            return -1; /* a tie (equal values included) */
    }
    return best;
}

void sim_table_verdict(const struct sim_table *t, char *buf, size_t len)
{
    size_t off = 0;
    bool any_policy = false;

    buf[0] = '\0';
    if (t->nruns < 2) {
        snprintf(buf, len, "One policy: nothing to compare.");
        return;
    }
    for (int k = 0; k < t->nruns; k++) {
        bool first = true;

        for (size_t i = 0; i < t->nrows; i++) {
            const struct sim_table_row *row = &t->rows[i];
            int w;

            if (!row->headline || sim_table_best(t, row) != k || off + 1 >= len)
                continue;
            bool sub = strcmp(row->group, "all") != 0 && strcmp(row->group, "cluster") != 0;

            if (first)
                w = snprintf(buf + off, off < len ? len - off : 0, "%s%s is best on %s%s%s",
                             any_policy ? "; " : "", t->runs[k], row->metric, sub ? " of " : "",
                             sub ? row->group : "");
            else
                w = snprintf(buf + off, off < len ? len - off : 0, ", %s%s%s", row->metric,
                             sub ? " of " : "", sub ? row->group : "");
            off += w > 0 ? (size_t)w : 0;
            first = false;
            any_policy = true;
        }
    }
    if (!any_policy)
        snprintf(buf, len, "No policy is best on any headline metric (ties).");
    else if (off + 2 < len)
        strcat(buf, ".");
}

/* Columns on a terminal: UTF-8 continuation bytes take none. */
static int text_width(const char *s)
{
    int w = 0;

    for (; *s; s++)
        w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static void pad_right(FILE *f, const char *s, int w)
{
    fputs(s, f);
    for (int n = text_width(s); n < w; n++)
        fputc(' ', f);
}

int sim_table_text(FILE *f, const struct sim_table *t, bool c)
{
    const char *bold = c ? "\033[1m" : "", *dim = c ? "\033[2m" : "", *reset = c ? "\033[0m" : "";
    const char *prev = "";
    int w = 12, gw = 12; /* every column as wide as the longest policy name; groups too */

    for (int k = 0; k < t->nruns; k++)
        if ((int)strlen(t->runs[k]) > w)
            w = (int)strlen(t->runs[k]);
    for (size_t i = 0; i < t->nrows; i++)
        if (text_width(t->rows[i].group) > gw)
            gw = text_width(t->rows[i].group);
    fputs(bold, f);
    pad_right(f, "group", gw);
    fprintf(f, " %-26s", "metric");
    for (int k = 0; k < t->nruns; k++)
        fprintf(f, " %*s", w, t->runs[k]);
    fprintf(f, "%s\n", reset);
    for (size_t i = 0; i < t->nrows; i++) {
        const struct sim_table_row *row = &t->rows[i];
        int best = sim_table_best(t, row);

        fputs(dim, f);
        pad_right(f, strcmp(prev, row->group) ? row->group : "", gw);
        fprintf(f, "%s %-26s", reset, row->metric);
        prev = row->group;
        for (int k = 0; k < t->nruns; k++) {
            char cell[32];

            sim_cell_format(row->v[k], row->kind, false, cell, sizeof(cell));
            fprintf(f, " %s%*s%s", k == best ? bold : "", w, cell, k == best ? reset : "");
        }
        fputc('\n', f);
    }
    return ferror(f) ? -EIO : 0;
}

int sim_table_csv(FILE *f, const struct sim_table *t)
{
    fputs("group,metric,key", f);
    for (int k = 0; k < t->nruns; k++) {
        fputc(',', f);
        sim_csv_field(f, t->runs[k]);
    }
    fputc('\n', f);
    for (size_t i = 0; i < t->nrows; i++) {
        const struct sim_table_row *row = &t->rows[i];

        sim_csv_field(f, row->group);
        fprintf(f, ",%s,%s", row->metric, row->key);
        for (int k = 0; k < t->nruns; k++) {
            char cell[32];

            sim_cell_format(row->v[k], row->kind, true, cell, sizeof(cell));
            fprintf(f, ",%s", cell);
        }
        fputc('\n', f);
    }
    return ferror(f) ? -EIO : 0;
}
