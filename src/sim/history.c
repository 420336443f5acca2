/*
 * history.c - saved runs and `docket-sim compare A B` (see history.h, docs/sim.md).
 */
#define _GNU_SOURCE
#include "sim/history.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "util/str.h"

int sim_history_save(const char *dir, const char *label, const struct sim_report_meta *meta,
                     const struct sim_run_report *runs, int n, char *path, size_t pathlen,
                     char *err, size_t errlen)
{
    char stamp[32], safe[64];
    time_t now = time(NULL);
    struct tm tm;
    FILE *f;
    int rc;
    size_t i;

    if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "--save: cannot create '%s': %s", dir, strerror(errno));
        return -errno;
    }
    /* the label goes into a file name: keep it to letters, digits and - _ . */
    for (i = 0; label[i] && i + 1 < sizeof(safe); i++) {
        char ch = label[i];

        safe[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                          (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.'
                      ? ch
                      : '_';
    }
    safe[i] = '\0';
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
    snprintf(path, pathlen, "%s/%s-%s.json", dir, stamp, safe[0] ? safe : "run");
    f = fopen(path, "wx");
    if (!f) {
        snprintf(err, errlen, "--save: cannot create '%s': %s", path, strerror(errno));
        return -EIO;
    }
    rc = sim_report_json(f, meta, runs, n);
    if (fclose(f) != 0 || rc < 0) {
        snprintf(err, errlen, "--save: writing '%s' failed", path);
        return -EIO;
    }
    return 0;
}

static int bad(char *err, size_t errlen, const char *path, const char *what)
{
    snprintf(err, errlen, "%s: %s (compare reads the JSON of docket-sim --json FILE or --save DIR)",
             path, what);
    return -EINVAL;
}

static int row_from_json(json_t *o, struct sim_table *t, struct sim_table_row *row)
{
    json_t *vals = json_object_get(o, "values"), *v;
    const char *group = json_string_value(json_object_get(o, "group"));
    const char *metric = json_string_value(json_object_get(o, "metric"));
    const char *key = json_string_value(json_object_get(o, "key"));
    const char *kind = json_string_value(json_object_get(o, "kind"));
    json_t *better = json_object_get(o, "better");
    size_t i;

    memset(row, 0, sizeof(*row));
    if (!group || !metric || !key || !kind || !json_is_integer(better) || !json_is_array(vals) ||
        json_array_size(vals) != (size_t)t->nruns || sim_cell_kind_parse(kind, &row->kind) < 0)
        return -EINVAL;
    (void)str_copy(row->group, sizeof(row->group), group);
    (void)str_copy(row->metric, sizeof(row->metric), metric);
    (void)str_copy(row->key, sizeof(row->key), key);
    row->better = json_integer_value(better) < 0 ? -1 : json_integer_value(better) > 0 ? 1 : 0;
    json_array_foreach(vals, i, v) {
        if (json_is_null(v))
            row->v[i] = NAN;
        else if (json_is_number(v))
            row->v[i] = json_number_value(v);
        else
            return -EINVAL;
    }
    return 0;
}

int sim_history_load(const char *path, struct sim_table *t, char *inputs, size_t inputslen,
                     char *err, size_t errlen)
{
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je), *cmp, *names, *rows, *in, *x;
    const char *trace;
    size_t i;
    int rc = 0;

    memset(t, 0, sizeof(*t));
    if (!doc) {
        snprintf(err, errlen, "%s: %s", path, je.text);
        return -EINVAL;
    }
    cmp = json_object_get(doc, "comparison");
    names = json_object_get(cmp, "policies");
    rows = json_object_get(cmp, "rows");
    if (!json_is_array(names) || !json_is_array(rows) || json_array_size(names) == 0 ||
        json_array_size(names) > SIM_TABLE_MAX_RUNS) {
        json_decref(doc);
        return bad(err, errlen, path, "no comparison section");
    }
    json_array_foreach(names, i, x) {
        if (!json_is_string(x)) {
            json_decref(doc);
            return bad(err, errlen, path, "comparison.policies: not a list of names");
        }
        (void)str_copy(t->runs[i], sizeof(t->runs[i]), json_string_value(x));
    }
    t->nruns = (int)json_array_size(names);
    json_array_foreach(rows, i, x) {
        struct sim_table_row row;

        if (row_from_json(x, t, &row) < 0) {
            snprintf(err, errlen, "%s: comparison.rows[%zu]: not a table row", path, i);
            rc = -EINVAL;
            break;
        }
        if (sim_table_add(t, &row) < 0) {
            snprintf(err, errlen, "%s: out of memory", path);
            rc = -ENOMEM;
            break;
        }
    }
    in = json_object_get(doc, "input");
    trace = json_string_value(json_object_get(in, "trace"));
    snprintf(inputs, inputslen, "trace %s, arrival scale %g, cluster scale %g, limit %lld",
             trace ? trace : "?", json_number_value(json_object_get(in, "arrival_scale")),
             json_number_value(json_object_get(in, "cluster_scale")),
             (long long)json_integer_value(json_object_get(in, "limit")));
    json_decref(doc);
    if (rc < 0)
        sim_table_release(t);
    return rc;
}

static const struct sim_table_row *find_row(const struct sim_table *t, const char *group,
                                            const char *key)
{
    for (size_t i = 0; i < t->nrows; i++)
        if (strcmp(t->rows[i].group, group) == 0 && strcmp(t->rows[i].key, key) == 0)
            return &t->rows[i];
    return NULL;
}

static int find_run(const struct sim_table *t, const char *name)
{
    for (int k = 0; k < t->nruns; k++)
        if (strcmp(t->runs[k], name) == 0)
            return k;
    return -1;
}

/* Columns of the merged table: A's runs, B's runs, then changes (B - A) of pairs. */
static int merge(const struct sim_table *a, const struct sim_table *b, struct sim_table *m)
{
    int pa[SIM_TABLE_MAX_RUNS], pb[SIM_TABLE_MAX_RUNS], np = 0;

    memset(m, 0, sizeof(*m));
    for (int k = 0; k < a->nruns; k++) {
        int j = find_run(b, a->runs[k]);

        if (j >= 0) {
            pa[np] = k;
            pb[np++] = j;
        }
    }
    if (np == 0) {
        pa[0] = pb[0] = 0;
        np = 1;
    }
    if (a->nruns + b->nruns + np > SIM_TABLE_MAX_RUNS)
        return -ENOSPC;
    for (int k = 0; k < a->nruns; k++)
        snprintf(m->runs[m->nruns++], sizeof(m->runs[0]), "A %s", a->runs[k]);
    for (int k = 0; k < b->nruns; k++)
        snprintf(m->runs[m->nruns++], sizeof(m->runs[0]), "B %s", b->runs[k]);
    for (int p = 0; p < np; p++)
        snprintf(m->runs[m->nruns++], sizeof(m->runs[0]), "change %s",
                 strcmp(a->runs[pa[p]], b->runs[pb[p]]) == 0 ? a->runs[pa[p]] : "B-A");
    for (size_t i = 0; i < a->nrows; i++) {
        const struct sim_table_row *ra = &a->rows[i];
        const struct sim_table_row *rb = find_row(b, ra->group, ra->key);
        struct sim_table_row row = *ra;
        int c = 0;

        row.better = 0; /* across runs of different inputs no column is "best" */
        for (int k = 0; k < a->nruns; k++)
            row.v[c++] = ra->v[k];
        for (int k = 0; k < b->nruns; k++)
            row.v[c++] = rb ? rb->v[k] : NAN;
        for (int p = 0; p < np; p++)
            row.v[c++] = rb ? rb->v[pb[p]] - ra->v[pa[p]] : NAN;
        if (sim_table_add(m, &row) < 0)
            return -ENOMEM;
    }
    return 0;
}

int sim_history_compare(FILE *f, const char *a_path, const char *b_path, bool color, char *err,
                        size_t errlen)
{
    struct sim_table a, b, m;
    char ia[512], ib[512];
    int rc;

    if (sim_history_load(a_path, &a, ia, sizeof(ia), err, errlen) < 0)
        return -EINVAL;
    if (sim_history_load(b_path, &b, ib, sizeof(ib), err, errlen) < 0) {
        sim_table_release(&a);
        return -EINVAL;
    }
    rc = merge(&a, &b, &m);
    if (rc < 0) {
        snprintf(err, errlen, "compare: %s", rc == -ENOSPC ? "too many policies" : "out of memory");
    } else {
        fprintf(f, "%sA%s %s: %s\n%sB%s %s: %s\n", color ? "\033[1m" : "", color ? "\033[0m" : "",
                a_path, ia, color ? "\033[1m" : "", color ? "\033[0m" : "", b_path, ib);
        if (strcmp(ia, ib) != 0)
            fputs("note: the inputs differ; the change mixes policy and workload\n", f);
        fputc('\n', f);
        rc = sim_table_text(f, &m, color);
        fputs("change: B - A (for waits and delays, negative is better)\n", f);
    }
    sim_table_release(&m);
    sim_table_release(&a);
    sim_table_release(&b);
    return rc;
}
