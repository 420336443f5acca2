/*
 * sweep.c - the grid of docket-sim --sweep and its table (see sweep.h; docs/sim.md
 * "Sweeps").
 */
#include "sim/sweep.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/parse.h"
#include "util/str.h"

static const char *const axis_names[SIM_SWEEP_KINDS] = {
    [SIM_SWEEP_ARRIVAL] = "arrival-scale",
    [SIM_SWEEP_CLUSTER] = "cluster-scale",
    [SIM_SWEEP_CHECKPOINT] = "checkpoint",
};

/* One value of an axis: a scale in (0, 1e6], or a checkpoint interval ("none" = 0). */
static int parse_value(enum sim_sweep_kind kind, const char *s, double *out)
{
    if (kind == SIM_SWEEP_CHECKPOINT) {
        int64_t ms;

        if (strcmp(s, "none") == 0 || strcmp(s, "0") == 0) {
            *out = 0;
            return 0;
        }
        if (parse_duration_ms(s, &ms) < 0 || ms <= 0)
            return -EINVAL;
        *out = (double)ms;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || errno != 0 || !isfinite(v) || v < 1e-6 || v > 1e6)
        return -EINVAL;
    *out = v;
    return 0;
}

static const char *const value_words[SIM_SWEEP_KINDS] = {
    [SIM_SWEEP_ARRIVAL] = "a number in 1e-06..1e+06",
    [SIM_SWEEP_CLUSTER] = "a number in 1e-06..1e+06",
    [SIM_SWEEP_CHECKPOINT] = "none or a duration (30m, 1h)",
};

static int add_values(struct sim_sweep_axis *ax, char *list, char *err, size_t errlen)
{
    const char *name = axis_names[ax->kind];
    char *next;

    for (char *tok = list; tok; tok = next) {
        double v;

        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';

        if (ax->n == SIM_SWEEP_MAX_VALUES) {
            snprintf(err, errlen, "--sweep %s: at most %d values", name, SIM_SWEEP_MAX_VALUES);
            return -EINVAL;
        }
        if (parse_value(ax->kind, tok, &v) < 0 || strlen(tok) >= sizeof(ax->text[0])) {
            snprintf(err, errlen, "--sweep %s: '%.40s' is not %s", name, tok,
                     value_words[ax->kind]);
            return -EINVAL;
        }
        for (int i = 0; i < ax->n; i++) {
            if (ax->v[i] == v) {
                snprintf(err, errlen, "--sweep %s: '%s' is given twice", name, tok);
                return -EINVAL;
            }
        }
        ax->v[ax->n] = v;
        (void)str_copy(ax->text[ax->n], sizeof(ax->text[0]), tok);
        ax->n++;
    }
    if (ax->n == 0) {
        snprintf(err, errlen, "--sweep %s: no values (e.g. %s=%s)", name, name,
                 ax->kind == SIM_SWEEP_CHECKPOINT ? "none,1h" : "0.5,1");
        return -EINVAL;
    }
    return 0;
}

int sim_sweep_parse(struct sim_sweep *sw, const char *arg, char *err, size_t errlen)
{
    char buf[512];
    char *eq;
    int kind = -1;

    if (strlen(arg) >= sizeof(buf) || !(eq = strchr(arg, '='))) {
        snprintf(err, errlen,
                 "--sweep: '%.60s' is not NAME=V1,V2,... (NAME: arrival-scale, cluster-scale "
                 "or checkpoint)",
                 arg);
        return -EINVAL;
    }
    memcpy(buf, arg, strlen(arg) + 1);
    buf[eq - arg] = '\0';
    for (int k = 0; k < SIM_SWEEP_KINDS; k++)
        if (strcmp(buf, axis_names[k]) == 0)
            kind = k;
    if (kind < 0) {
        snprintf(err, errlen, "--sweep: '%.40s' is not arrival-scale, cluster-scale or checkpoint",
                 buf);
        return -EINVAL;
    }
    for (int a = 0; a < sw->naxes; a++) {
        if ((int)sw->axes[a].kind == kind) {
            snprintf(err, errlen, "--sweep %s: given twice (list every value in one --sweep)", buf);
            return -EINVAL;
        }
    }
    struct sim_sweep_axis ax = {.kind = (enum sim_sweep_kind)kind};
    if (add_values(&ax, buf + (eq - arg) + 1, err, errlen) < 0)
        return -EINVAL;
    if (sim_sweep_count(sw) * ax.n > SIM_SWEEP_MAX_POINTS) {
        snprintf(err, errlen, "--sweep: the grid would have %d points (at most %d)",
                 sim_sweep_count(sw) * ax.n, SIM_SWEEP_MAX_POINTS);
        return -EINVAL;
    }
    sw->axes[sw->naxes++] = ax;
    return 0;
}

int sim_sweep_count(const struct sim_sweep *sw)
{
    int n = 1;

    for (int a = 0; a < sw->naxes; a++)
        n *= sw->axes[a].n;
    return n;
}

void sim_sweep_point(const struct sim_sweep *sw, int i, struct sim_sweep_point *out)
{
    size_t len = 0;
    int rest = i;

    out->arrival_scale = out->cluster_scale = -1;
    out->checkpoint_ms = -1;
    out->label[0] = '\0';
    /* the last axis varies fastest: index digits from the right */
    int idx[SIM_SWEEP_KINDS] = {0};
    for (int a = sw->naxes - 1; a >= 0; a--) {
        idx[a] = rest % sw->axes[a].n;
        rest /= sw->axes[a].n;
    }
    for (int a = 0; a < sw->naxes; a++) {
        const struct sim_sweep_axis *ax = &sw->axes[a];
        double v = ax->v[idx[a]];

        if (ax->kind == SIM_SWEEP_ARRIVAL)
            out->arrival_scale = v;
        else if (ax->kind == SIM_SWEEP_CLUSTER)
            out->cluster_scale = v;
        else
            out->checkpoint_ms = (int64_t)v;
        if (len < sizeof(out->label))
            len += (size_t)snprintf(out->label + len, sizeof(out->label) - len, "%s%s=%s",
                                    a ? " " : "", axis_names[ax->kind], ax->text[idx[a]]);
    }
}

/* The rows a sweep keeps of each point's comparison table, by group kind and key. */
static bool kept(const struct sim_table_row *row)
{
    static const char *const all[] = {"wait_mean_s", "wait_p95_s", "bsld_mean", "starved",
                                      "unfinished"};
    static const char *const tier[] = {"wait_p95_s", "starved"};
    static const char *const cluster[] = {"gpu_utilisation", "cpu_utilisation", "preemptions"};
    const char *const *keys = strcmp(row->group, "all") == 0         ? all
                              : strncmp(row->group, "tier ", 5) == 0 ? tier
                                                                     : cluster;
    size_t n = keys == all ? 5 : keys == tier ? 2 : 3;

    for (size_t i = 0; i < n; i++)
        if (strcmp(row->key, keys[i]) == 0)
            return true;
    return false;
}

int sim_sweep_add(struct sim_table *acc, const char *label, const struct sim_run_report *runs,
                  int n)
{
    struct sim_table t;

    if (sim_table_build(runs, n, &t) < 0)
        return -ENOMEM;
    if (acc->nruns == 0) {
        acc->nruns = t.nruns;
        memcpy(acc->runs, t.runs, sizeof(acc->runs));
    }
    for (size_t i = 0; i < t.nrows; i++) {
        struct sim_table_row row = t.rows[i];
        char group[256];

        if (!kept(&row))
            continue;
        snprintf(group, sizeof(group), "%s · %s", label, t.rows[i].group);
        (void)str_copy(row.group, sizeof(row.group), group);
        row.headline = false;
        if (sim_table_add(acc, &row) < 0) {
            sim_table_release(&t);
            return -ENOMEM;
        }
    }
    sim_table_release(&t);
    return 0;
}
