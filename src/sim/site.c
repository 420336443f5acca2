/*
 * site.c - docketd's database as a workload, a cluster and a policy (see site.h). It only
 * calls src/store's read functions on a read-only connection.
 */
#include "sim/site.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "util/str.h"

struct job_read {
    struct store *st;
    struct sim_site *s;
    int64_t until_ms;
    size_t cap;
    uint64_t last_id;
    int rc;
};

static enum trace_status status_of(int state)
{
    switch (state) {
    case SCHED_COMPLETED:
        return TRACE_ST_COMPLETED;
    case SCHED_TIMEOUT:
        return TRACE_ST_TIMEOUT;
    case SCHED_CANCELLED:
        return TRACE_ST_CANCELLED;
    case SCHED_PREEMPTED:
        return TRACE_ST_KILLED;
    default: /* FAILED, NODE_FAIL */
        return TRACE_ST_FAILED;
    }
}

static bool finished(int state)
{
    return state == SCHED_COMPLETED || state == SCHED_FAILED || state == SCHED_CANCELLED ||
           state == SCHED_TIMEOUT || state == SCHED_PREEMPTED || state == SCHED_NODE_FAIL;
}

static void row_of(const struct store_job *j, struct trace_row *r)
{
    int nodes = j->nnodes > 0 ? j->nnodes : 1;

    memset(r, 0, sizeof(*r));
    snprintf(r->id, sizeof(r->id), "%llu", (unsigned long long)j->id);
    r->submit_ms = j->submit_ms; /* made relative once all are read */
    /* the run that ended the job: a job cancelled in the queue never started */
    r->runtime_ms = j->start_ms > 0 && j->end_ms >= j->start_ms ? j->end_ms - j->start_ms : -1;
    r->runtime_s = r->runtime_ms < 0 ? -1 : r->runtime_ms / 1000;
    r->req_time_s = j->time_limit_ms > 0 ? (j->time_limit_ms + 999) / 1000 : -1;
    r->gpus = (double)j->gpus * nodes;
    r->cpus = (double)(j->cpus > 0 ? j->cpus : 1) * nodes;
    r->mem_mb = j->mem_mb * nodes;
    r->nodes = nodes;
    (void)str_copy(r->project, sizeof(r->project), j->project);
    (void)str_copy(r->user, sizeof(r->user), j->user);
    (void)str_copy(r->tier, sizeof(r->tier), j->tier);
    (void)str_copy(r->class_name, sizeof(r->class_name), j->class_name);
    r->status = status_of(j->state);
}

static int on_job(void *arg, const struct store_job *j)
{
    struct job_read *jr = arg;
    struct sim_site *s = jr->s;

    jr->last_id = j->id;
    if (jr->until_ms > 0 && j->submit_ms >= jr->until_ms)
        return 0;
    if (!finished(j->state)) {
        s->live++;
        return 0;
    }
    if (s->nrows == jr->cap) {
        size_t nc = jr->cap ? jr->cap * 2 : 1024;
        struct trace_row *nr = realloc(s->rows, nc * sizeof(*nr));

        if (!nr)
            return -ENOMEM;
        s->rows = nr;
        jr->cap = nc;
    }
    row_of(j, &s->rows[s->nrows]);
    s->rows[s->nrows].line = (long)s->nrows + 1;
    if (j->start_ms > 0) {
        int runs = store_run_last(jr->st, j->id);

        if (runs < 0)
            return runs;
        s->reruns += runs > 1;
    }
    s->nrows++;
    return 0;
}

static int cmp_rows(const void *a, const void *b)
{
    const struct trace_row *x = a, *y = b;

    if (x->submit_ms != y->submit_ms)
        return x->submit_ms < y->submit_ms ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static int read_jobs(struct store *st, int64_t since_ms, int64_t until_ms, struct sim_site *s)
{
    struct job_read jr = {.st = st, .s = s, .until_ms = until_ms};

    for (;;) {
        struct store_job_filter f = {
            .since_ms = since_ms, .after = jr.last_id, .limit = 1000, .skip_spec = true};
        uint64_t last = jr.last_id;
        int rc = store_job_list(st, &f, on_job, &jr);

        if (rc < 0)
            return rc;
        if (jr.last_id == last)
            break; /* no more rows */
    }
    if (s->nrows)
        qsort(s->rows, s->nrows, sizeof(*s->rows), cmp_rows);
    s->t0_ms = s->nrows ? s->rows[0].submit_ms : 0;
    for (size_t i = 0; i < s->nrows; i++) {
        s->rows[i].submit_ms -= s->t0_ms;
        s->rows[i].submit_s = s->rows[i].submit_ms / 1000;
    }
    return 0;
}

/* A node's labels: the stored JSON object of strings. */
static int node_labels(const char *text, struct sim_node_group *g)
{
    json_t *o = text && text[0] ? json_loads(text, 0, NULL) : json_object();
    const char *k;
    json_t *v;

    if (!json_is_object(o)) {
        json_decref(o);
        return -EINVAL;
    }
    json_object_foreach(o, k, v) {
        if (g->nlabels == SCHED_MAX_LABELS || !json_is_string(v))
            break;
        (void)str_copy(g->labels[g->nlabels].key, SCHED_NAME_MAX, k);
        (void)str_copy(g->labels[g->nlabels].value, SCHED_NAME_MAX, json_string_value(v));
        g->nlabels++;
    }
    json_decref(o);
    return 0;
}

static int on_node(void *arg, const struct store_node *n)
{
    struct sim_cluster *c = arg;
    struct sim_node_group *ng = realloc(c->groups, (size_t)(c->ngroups + 1) * sizeof(*ng));
    struct sim_node_group *g;

    if (!ng)
        return -ENOMEM;
    c->groups = ng;
    g = &c->groups[c->ngroups];
    memset(g, 0, sizeof(*g));
    (void)str_copy(g->prefix, sizeof(g->prefix), n->name);
    g->count = 1;
    g->gpus = n->gpus;
    (void)str_copy(g->gpu_type, sizeof(g->gpu_type), n->gpu_type[0] ? n->gpu_type : "gpu");
    g->gpu_mem_mb = n->gpu_mem_mb;
    g->cpus = n->cpus;
    g->mem_mb = n->mem_mb;
    if (node_labels(n->labels, g) < 0)
        return -EINVAL;
    c->ngroups++;
    return 0;
}

static int on_project(void *arg, const char *name, const char *doc)
{
    json_t *arr = arg, *d = json_loads(doc, 0, NULL), *spec = json_object_get(d, "spec");

    if (!json_is_object(spec)) {
        json_decref(d);
        return -EINVAL;
    }
    json_array_append(arr, spec);
    json_decref(d);
    (void)name;
    return 0;
}

static int read_policy(struct store *st, struct sim_site *s)
{
    char *text = NULL;
    int rc = store_policy_get(st, &text);
    json_t *projects = json_array();

    if (rc == 0)
        s->policy = json_loads(text, 0, NULL);
    else if (rc == -ENOENT)
        s->policy = json_object();
    free(text);
    if (!json_is_object(s->policy)) {
        json_decref(projects);
        return rc == -ENOENT || rc == 0 ? -EINVAL : rc;
    }
    rc = store_project_list(st, on_project, projects);
    json_object_set_new(s->policy, "projects", projects);
    return rc;
}

int sim_site_load(const char *path, int64_t since_ms, int64_t until_ms, struct sim_site *out,
                  char *err, size_t errlen)
{
    struct store *st;
    int rc;

    memset(out, 0, sizeof(*out));
    st = store_open_readonly(path, err, errlen);
    if (!st)
        return -EINVAL;
    rc = read_jobs(st, since_ms, until_ms, out);
    if (rc == 0)
        rc = store_node_list(st, on_node, &out->cluster);
    if (rc == 0)
        rc = read_policy(st, out);
    if (rc < 0) {
        snprintf(err, errlen, "'%s': %s", path,
                 rc == -ENOMEM   ? "out of memory"
                 : rc == -EINVAL ? "a damaged node, project or policy document"
                                 : store_errmsg(st));
        sim_site_release(out);
    }
    store_close(st);
    return rc < 0 ? -EINVAL : 0;
}

void sim_site_release(struct sim_site *s)
{
    free(s->rows);
    sim_cluster_release(&s->cluster);
    json_decref(s->policy);
    memset(s, 0, sizeof(*s));
}

static bool has_tier(const struct sched_policy *p, const char *t)
{
    for (int i = 0; i < p->ntiers; i++)
        if (strcmp(p->tiers[i].name, t) == 0)
            return true;
    return false;
}

int sim_policy_add_projects(struct sim_policy *p, const struct sim_policy *site, FILE *note)
{
    const struct sched_policy *sp = &p->policy;

    for (int i = 0; i < site->nprojects; i++) {
        struct sched_project_spec *np, ps = site->projects[i];

        if (sim_policy_project(p, ps.name))
            continue;
        if (!has_tier(sp, ps.tier)) {
            const char *t = has_tier(sp, "normal") ? "normal" : sp->tiers[sp->ntiers - 1].name;

            fprintf(note, "docket-sim: project '%s': tier '%s' is not in %s: replayed in '%s'\n",
                    ps.name, ps.tier, p->name, t);
            (void)str_copy(ps.tier, sizeof(ps.tier), t);
        }
        np = realloc(p->projects, (size_t)(p->nprojects + 1) * sizeof(*np));
        if (!np)
            return -ENOMEM;
        p->projects = np;
        p->projects[p->nprojects++] = ps;
    }
    return 0;
}
