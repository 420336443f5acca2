/*
 * engine.c - discrete-event loop of docket-sim (see engine.h, docs/sim.md).
 *
 * The loop repeatedly takes the earliest of: the next trace row's submission, the next
 * queued event (a job finishing its runtime, a job exiting on a signal, a checkpoint, a
 * node failing or coming back) and the core's next wakeup; it applies everything due at
 * that time, then runs sched_cycle and carries out the decisions the way agents would:
 * START -> sched_job_running and an end event after the remaining work; SIGNAL -> the job
 * exits at once or lives out its grace until the core's KILL (on_signal); KILL and
 * ends -> sched_job_ended. The trace is streamed: only one row is held ahead.
 */
#include "sim/engine.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"
#include "util/str.h"

enum ev_kind { EV_END, EV_EXIT, EV_CKPT, EV_NODE_DOWN, EV_NODE_UP };

struct ev {
    int64_t t;
    uint64_t seq;
    uint32_t job; /* job index, or node index for node events */
    uint32_t gen;
    uint8_t kind;
};

struct heap {
    struct ev *v;
    size_t n, cap;
};

/* One scheduling core: the whole cluster, or one partition of it (baselines). */
struct core {
    struct sched *s;
    char part[SCHED_NAME_MAX]; /* the partition label's value ("" = nodes without it) */
    long live;                 /* its jobs submitted and not yet terminal */
    bool dirty;                /* something changed since its last cycle */
    int64_t wake;              /* its next wakeup, as last asked */
};

struct sim {
    const struct sim_options *opt;
    const struct sim_cluster *cluster;
    const struct sim_policy *pol;
    const struct sim_mapping *map;
    struct sched_policy core_policy; /* the policy given to the cores (caps lifted: over_cap) */
    struct core *cores;
    int ncores;
    uint16_t *node_core; /* core of each node of the expanded cluster */
    struct sim_result *r;
    struct heap h;
    uint64_t seq;
    size_t jobs_cap, ids_cap;
    int projects_cap;
    int max_node_gpus;
    int max_node_cpus; /* largest CPU count of a CPU-only node, else of any node */
    /* time series */
    int64_t last_t;
    long busy_gpus, busy_cpus;
    long running; /* runs in progress (GPU or not) */
    long pending;
    long live;  /* submitted, not yet terminal */
    bool dirty; /* something changed since the last cycle */
    int64_t last_cycle;
    int64_t wake; /* the core's next wakeup, as last asked */
    uint64_t rng;
    char *err;
    size_t errlen;
    int errors_shown;
    int64_t progress_at;
    int64_t wall_start;
    long *switch_nodes; /* nodes under each switch, largest first (topology) */
    int nswitches;
};

static const char *const end_names[] = {
    "unfinished", "completed", "failed",    "timeout",
    "preempted",  "node_fail", "cancelled", "rejected",
};

const char *sim_job_end_name(enum sim_job_end e)
{
    return (unsigned)e < sizeof(end_names) / sizeof(end_names[0]) ? end_names[e] : "?";
}

void sim_options_defaults(struct sim_options *o)
{
    memset(o, 0, sizeof(*o));
    o->format = TRACE_CSV;
    o->arrival_scale = 1.0;
    o->seed = 1;
    o->repair_ms = 4LL * 3600 * 1000;
    o->sample_ms = 3600LL * 1000;
    o->max_errors_shown = 10;
}

/* ---------------------------------------------------------------------------------- */
/* Event heap, ordered by (time, creation order)                                       */

static bool ev_less(const struct ev *a, const struct ev *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int heap_push(struct sim *m, int64_t t, enum ev_kind kind, uint32_t job, uint32_t gen)
{
    struct heap *h = &m->h;
    size_t i;

    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 1024;
        struct ev *nv = realloc(h->v, nc * sizeof(*nv));

        if (!nv)
            return -ENOMEM;
        h->v = nv;
        h->cap = nc;
    }
    i = h->n++;
    h->v[i] = (struct ev){.t = t, .seq = m->seq++, .job = job, .gen = gen, .kind = (uint8_t)kind};
    while (i > 0 && ev_less(&h->v[i], &h->v[(i - 1) / 2])) {
        struct ev tmp = h->v[i];

        h->v[i] = h->v[(i - 1) / 2];
        h->v[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
    return 0;
}

static struct ev heap_pop(struct heap *h)
{
    struct ev top = h->v[0];
    size_t i = 0;

    h->v[0] = h->v[--h->n];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        struct ev tmp;

        if (l < h->n && ev_less(&h->v[l], &h->v[m]))
            m = l;
        if (r < h->n && ev_less(&h->v[r], &h->v[m]))
            m = r;
        if (m == i)
            break;
        tmp = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = tmp;
        i = m;
    }
    return top;
}

/* ---------------------------------------------------------------------------------- */
/* Accounting                                                                          */

static int series_grow(struct sim_series *s, size_t n)
{
    size_t nc = s->n ? s->n : 64;
    double *a, *b;

    if (n <= s->n)
        return 0;
    while (nc < n)
        nc *= 2;
    double *c;

    a = realloc(s->busy_gpu_ms, nc * sizeof(*a));
    if (!a)
        return -ENOMEM;
    s->busy_gpu_ms = a;
    b = realloc(s->pending_ms, nc * sizeof(*b));
    if (!b)
        return -ENOMEM;
    s->pending_ms = b;
    c = realloc(s->busy_cpu_ms, nc * sizeof(*c));
    if (!c)
        return -ENOMEM;
    s->busy_cpu_ms = c;
    memset(a + s->n, 0, (nc - s->n) * sizeof(*a));
    memset(b + s->n, 0, (nc - s->n) * sizeof(*b));
    memset(c + s->n, 0, (nc - s->n) * sizeof(*c));
    s->n = nc;
    return 0;
}

/* Integrate busy GPUs and pending jobs from last_t to t. */
static int advance(struct sim *m, int64_t t)
{
    struct sim_series *s = &m->r->series;
    int64_t a = m->last_t;

    if (t <= a)
        return 0;
    if (series_grow(s, (size_t)(t / s->bucket_ms) + 1) < 0)
        return -ENOMEM;
    while (a < t) {
        size_t b = (size_t)(a / s->bucket_ms);
        int64_t e = (int64_t)(b + 1) * s->bucket_ms;

        if (e > t)
            e = t;
        s->busy_gpu_ms[b] += (double)m->busy_gpus * (double)(e - a);
        s->pending_ms[b] += (double)m->pending * (double)(e - a);
        s->busy_cpu_ms[b] += (double)m->busy_cpus * (double)(e - a);
        a = e;
    }
    m->r->busy_gpu_ms_total += (int64_t)m->busy_gpus * (t - m->last_t);
    m->r->busy_cpu_ms_total += (int64_t)m->busy_cpus * (t - m->last_t);
    m->last_t = t;
    return 0;
}

static void report_error(struct sim *m, const char *what)
{
    if (m->errors_shown < m->opt->max_errors_shown)
        fprintf(stderr, "docket-sim: %s\n", what);
    else if (m->errors_shown == m->opt->max_errors_shown && m->opt->max_errors_shown > 0)
        fprintf(stderr, "docket-sim: (further errors not shown; see the counts in the report)\n");
    m->errors_shown++;
}

/* ---------------------------------------------------------------------------------- */
/* Projects                                                                            */

static const char *default_tier(const struct sim *m)
{
    const struct sched_policy *p = &m->pol->policy;

    for (int i = 0; i < p->ntiers; i++)
        if (strcmp(p->tiers[i].name, "normal") == 0)
            return p->tiers[i].name;
    return p->tiers[p->ntiers / 2].name;
}

static int tier_index(const struct sim *m, const char *tier)
{
    const struct sched_policy *p = &m->pol->policy;

    for (int i = 0; i < p->ntiers; i++)
        if (strcmp(p->tiers[i].name, tier) == 0)
            return i;
    return -1;
}

static int project_add(struct sim *m, const struct sched_project_spec *ps)
{
    struct sim_result *r = m->r;
    struct sched_error e = {0};

    if (r->nprojects == 65535) {
        snprintf(m->err, m->errlen, "more than 65535 projects");
        return -ENOSPC;
    }
    if (r->nprojects == m->projects_cap) {
        int nc = m->projects_cap ? m->projects_cap * 2 : 64;
        struct sim_project_stat *np = realloc(r->projects, (size_t)nc * sizeof(*np));

        if (!np)
            return -ENOMEM;
        r->projects = np;
        m->projects_cap = nc;
    }
    for (int c = 0; c < m->ncores; c++) {
        if (sched_project_upsert(m->cores[c].s, ps, &e) < 0) {
            snprintf(m->err, m->errlen, "project '%s': %s", ps->name, e.message);
            return -EINVAL;
        }
    }
    memset(&r->projects[r->nprojects], 0, sizeof(r->projects[0]));
    (void)str_copy(r->projects[r->nprojects].name, SCHED_NAME_MAX, ps->name);
    r->projects[r->nprojects].guarantee_gpus = ps->guarantee_gpus;
    return r->nprojects++;
}

static int project_find(const struct sim *m, const char *name)
{
    for (int i = m->r->nprojects - 1; i >= 0; i--)
        if (strcmp(m->r->projects[i].name, name) == 0)
            return i;
    return -1;
}

/* The index of Docket project `name` (created on first use when the policy does not list
 * it: highest tier allowed, guarantee from its partition when the mapping says so). */
static int project_get(struct sim *m, const char *name, const char *trace_project)
{
    struct sched_project_spec ps;
    int i = project_find(m, name);

    if (i >= 0)
        return i;
    sched_project_spec_init(&ps);
    (void)str_copy(ps.name, sizeof(ps.name), name);
    (void)str_copy(ps.tier, sizeof(ps.tier), m->pol->policy.tiers[0].name);
    if (m->map->guarantee_from_partition && m->map->partition_label[0]) {
        long g = sim_cluster_gpus(m->cluster, m->map->partition_label, name);

        if (g == 0)
            g = sim_cluster_gpus(m->cluster, m->map->partition_label, trace_project);
        ps.guarantee_gpus = (double)g;
    }
    return project_add(m, &ps);
}

/* ---------------------------------------------------------------------------------- */
/* Submissions                                                                         */

static const struct sched_class_spec *find_class(const struct sched_policy *p, const char *n)
{
    for (int i = 0; i < p->nclasses; i++)
        if (strcmp(p->classes[i].name, n) == 0)
            return &p->classes[i];
    return NULL;
}

/* Fractional requests: a whole number is kept; a fraction is rounded up, rounded down (at
 * least 1) or refused (-1), as the mapping's `fractional` says; *frac notes it. */
static long round_request(const struct sim *m, double v, bool *frac)
{
    double f = floor(v);

    if (v == f)
        return (long)v;
    *frac = true;
    switch (m->map->fractional) {
    case SIM_FRAC_ROUND_DOWN:
        return f < 1 ? 1 : (long)f;
    case SIM_FRAC_SKIP:
        return -1;
    default:
        return (long)ceil(v);
    }
}

/* The time limit given to the core for a row, or -1 to skip the row (over_cap: skip).
 * A trace job runs its recorded runtime unless over_cap is kill: limits at or below it
 * are raised past it, and a runtime beyond the class's max_limit runs to the end (the
 * cap is lifted in the cores' policy). Every such row is counted. */
static int64_t time_limit(struct sim *m, const struct trace_row *row, const struct sim_rule *rule,
                          const char *cls)
{
    const struct sched_class_spec *c = find_class(&m->pol->policy, cls);
    double f = rule->time_limit_factor > 0 ? rule->time_limit_factor : m->map->time_limit_factor;
    int64_t runtime = row->runtime_ms, cap = c ? c->max_limit_ms : 0, lim;
    bool over = cap > 0 && runtime >= cap, kill = m->map->over_cap == SIM_CAP_KILL;

    if (over) {
        m->r->rows.over_cap++;
        if (m->map->over_cap == SIM_CAP_SKIP) {
            m->r->rows.over_cap_skipped++;
            return -1;
        }
        if (kill)
            return cap;
    }
    if (m->map->limit_source == SIM_LIMIT_CLASS) {
        lim = c ? c->default_limit_ms : 0;
        if (lim == 0 || lim > runtime)
            return 0; /* the class default, which the job fits */
    } else {
        if (m->map->limit_source == SIM_LIMIT_REQUESTED && row->req_time_s > 0)
            lim = row->req_time_s * 1000;
        else
            lim = (int64_t)ceil((double)runtime * f);
        lim = (lim + 999) / 1000 * 1000;
        if (lim < m->map->min_time_limit_ms)
            lim = m->map->min_time_limit_ms;
        if (!over && cap > 0 && lim > cap)
            lim = cap; /* a site clamps the request to the cap; the job still fits */
    }
    if (lim <= runtime) {
        if (!over)
            m->r->rows.limit_raised++;
        if (!kill)
            lim = (runtime / 1000 + 1) * 1000; /* the next whole second past the runtime */
    }
    return lim;
}

/* `total` units on as few nodes as possible (at most `maxper` a node; `given` nodes when
 * the trace says), the same count on each node (the core's jobs are uniform). When no
 * node count up to twice the minimum divides the total evenly (a prime number of units,
 * say), the per-node count is rounded up: the job gets a few more units than it asked
 * for, as schedulers that allocate whole nodes do. */
static void spread(long total, int maxper, int given, int *nodes, int *per)
{
    long n, n0;

    if (maxper < 1)
        maxper = 1;
    n0 = given > 0 ? given : (total + maxper - 1) / maxper;
    if (n0 > total)
        n0 = total;
    if (n0 < 1)
        n0 = 1;
    for (n = n0; n <= 2 * n0 && n <= total; n++) {
        if (total % n == 0) {
            *nodes = (int)n;
            *per = (int)(total / n);
            return;
        }
    }
    *nodes = (int)n0;
    *per = (int)((total + n0 - 1) / n0);
}

struct shape {
    int nodes, gpus_per_node, cpus_per_node; /* cpus_per_node 0: the core's default (1) */
};

/* What a row asks for, after the fractional and CPU-only rules (each counted): a GPU job,
 * or a CPU job with CPU as its own dimension. -1 when the row is skipped. */
static int row_shape(struct sim *m, const struct trace_row *row, struct shape *out)
{
    struct sim_row_counts *rc = &m->r->rows;
    bool frac = false;
    long g = round_request(m, row->gpus, &frac), c = round_request(m, row->cpus, &frac);

    memset(out, 0, sizeof(*out));
    if (g < 0 || c < 0) {
        rc->frac_skipped++;
        return -1;
    }
    if (frac)
        rc->frac_rounded++;
    if (g == 0 && c > 0 && m->map->cpu_unit_cores > 0 && m->max_node_gpus > 0) {
        g = (c + m->map->cpu_unit_cores - 1) / m->map->cpu_unit_cores;
        rc->cpu_as_units++;
    }
    if (g > 0) {
        spread(g, m->max_node_gpus, row->nodes, &out->nodes, &out->gpus_per_node);
        return 0;
    }
    if (c == 0) {
        c = 1;
        rc->no_request++;
    } else {
        rc->cpu_jobs++;
    }
    spread(c, m->max_node_cpus, row->nodes, &out->nodes, &out->cpus_per_node);
    return 0;
}
static int rec_alloc(struct sim *m, const char *id)
{
    struct sim_result *r = m->r;
    size_t idlen = strlen(id) + 1;

    if (r->njobs == m->jobs_cap) {
        size_t nc = m->jobs_cap ? m->jobs_cap * 2 : 4096;
        struct sim_job_rec *nj = realloc(r->jobs, nc * sizeof(*nj));

        if (!nj)
            return -ENOMEM;
        r->jobs = nj;
        m->jobs_cap = nc;
    }
    if (r->ids_len + idlen > m->ids_cap) {
        size_t nc = m->ids_cap ? m->ids_cap * 2 : 65536;
        char *ni;

        while (nc < r->ids_len + idlen)
            nc *= 2;
        if (nc > UINT32_MAX)
            return -ENOSPC;
        ni = realloc(r->ids, nc);
        if (!ni)
            return -ENOMEM;
        r->ids = ni;
        m->ids_cap = nc;
    }
    memset(&r->jobs[r->njobs], 0, sizeof(r->jobs[0]));
    r->jobs[r->njobs].id_off = (uint32_t)r->ids_len;
    memcpy(r->ids + r->ids_len, id, idlen);
    r->ids_len += idlen;
    return 0;
}

/* The class of a row: its rule's; else the class it ran with on the site (a history
 * replay), when the policy has it; else the mapping's default; else the policy's. */
static const char *row_class(const struct sim *m, const struct trace_row *row,
                             const struct sim_rule *rule)
{
    if (rule->class_name[0])
        return rule->class_name;
    if (row->class_name[0] && find_class(&m->pol->policy, row->class_name))
        return row->class_name;
    return m->map->dflt.class_name[0] ? m->map->dflt.class_name : m->pol->policy.default_class;
}

static void fill_spec(const struct sim *m, const struct trace_row *row, const struct sim_rule *rule,
                      const char *project, const char *tier, const struct shape *sh,
                      struct sched_job_spec *spec)
{
    sched_job_spec_init(spec);
    spec->id = m->r->njobs + 1;
    (void)str_copy(spec->project, sizeof(spec->project), project);
    if (row->user[0] && str_is_name(row->user))
        (void)str_copy(spec->user, sizeof(spec->user), row->user);
    else
        (void)str_copy(spec->user, sizeof(spec->user), "trace");
    (void)str_copy(spec->tier, sizeof(spec->tier), tier);
    (void)str_copy(spec->class_name, sizeof(spec->class_name), row_class(m, row, rule));
    (void)str_copy(spec->gpu_type, sizeof(spec->gpu_type),
                   rule->gpu_type[0] ? rule->gpu_type : m->map->dflt.gpu_type);
    spec->nodes = sh->nodes;
    spec->gpus_per_node = sh->gpus_per_node;
    if (sh->cpus_per_node > 0)
        spec->cpus_per_node = sh->cpus_per_node;
    if (m->map->honor_mem && row->mem_mb > 0)
        spec->mem_mb_per_node = (row->mem_mb + sh->nodes - 1) / sh->nodes;
    if (m->map->partition_label[0] && !m->map->pool && row->project[0]) {
        (void)str_copy(spec->selectors[0].key, SCHED_NAME_MAX, m->map->partition_label);
        (void)str_copy(spec->selectors[0].value, SCHED_NAME_MAX, row->project);
        spec->nselectors = 1;
    }
}

static int resolve_names(struct sim *m, const struct trace_row *row, const struct sim_rule *rule,
                         char *project, char *tier)
{
    const char *p = rule->project[0]                                   ? rule->project
                    : m->map->dflt.project[0] && rule == &m->map->dflt ? m->map->dflt.project
                    : row->project[0]                                  ? row->project
                                                                       : "default";
    const struct sched_project_spec *ps;

    if (!str_is_name(p))
        return -EINVAL;
    (void)str_copy(project, SCHED_NAME_MAX, p);
    ps = sim_policy_project(m->pol, p);
    if (rule->tier[0])
        (void)str_copy(tier, SCHED_NAME_MAX, rule->tier);
    else if (row->tier[0] && tier_index(m, row->tier) >= 0)
        (void)str_copy(tier, SCHED_NAME_MAX, row->tier); /* as it ran on the site */
    else if (m->map->dflt.tier[0])
        (void)str_copy(tier, SCHED_NAME_MAX, m->map->dflt.tier);
    else if (ps)
        (void)str_copy(tier, SCHED_NAME_MAX, ps->tier);
    else
        (void)str_copy(tier, SCHED_NAME_MAX, default_tier(m));
    return 0;
}

/* A row that never ran: no runtime, still pending, or cancelled before it did anything. */
static bool never_ran(const struct trace_row *row)
{
    return row->runtime_s < 0 || row->status == TRACE_ST_PENDING ||
           (row->status == TRACE_ST_CANCELLED && row->runtime_s == 0);
}

/* The core that holds a row's job: its partition's (the trace project is the value of the
 * partition label), else the core of the nodes without the label, else the first. A job
 * of a project no partition has keeps its selector and is refused there, as in one core. */
static int core_for(const struct sim *m, const struct trace_row *row)
{
    if (m->ncores == 1)
        return 0;
    for (int c = 0; c < m->ncores; c++)
        if (row->project[0] && strcmp(m->cores[c].part, row->project) == 0)
            return c;
    for (int c = 0; c < m->ncores; c++)
        if (m->cores[c].part[0] == '\0')
            return c;
    return 0;
}

/* The queue key the core orders by under FIFO: the submission time, or for sjf the time
 * limit (then the submission order, which the core's id tie-break keeps). */
static int64_t queue_key(const struct sim *m, const struct sched_job_spec *spec, int64_t now)
{
    const struct sched_class_spec *c;

    if (!m->pol->sjf)
        return now;
    if (spec->time_limit_ms > 0)
        return spec->time_limit_ms;
    c = find_class(&m->pol->policy, spec->class_name);
    return c && c->default_limit_ms > 0 ? c->default_limit_ms : INT64_MAX / 4;
}

static int submit_row(struct sim *m, const struct trace_row *row, int64_t now)
{
    const struct sim_rule *rule = sim_mapping_find(m->map, row->project, row->user);
    char project[SCHED_NAME_MAX], tier[SCHED_NAME_MAX], msg[400];
    struct sched_job_spec spec;
    struct sched_error e = {0};
    struct sim_job_rec *j;
    struct shape sh;
    int64_t limit;
    int pi, ti, core;

    m->r->rows.read++;
    if (never_ran(row)) {
        m->r->rows.never_ran++;
        return 0;
    }
    if (row_shape(m, row, &sh) < 0)
        return 0;
    limit = time_limit(m, row, rule, row_class(m, row, rule));
    if (limit < 0)
        return 0;
    if (rec_alloc(m, row->id) < 0) {
        snprintf(m->err, m->errlen, "out of memory at trace row %ld", row->line);
        return -ENOMEM;
    }
    j = &m->r->jobs[m->r->njobs];
    j->submit_ms = now;
    j->runtime_ms = row->runtime_ms;
    j->first_start_ms = j->start_ms = j->end_ms = -1;
    j->failed_in_trace = row->status == TRACE_ST_FAILED;
    if (resolve_names(m, row, rule, project, tier) < 0) {
        snprintf(msg, sizeof(msg),
                 "%s:%ld: project '%s' is not a valid Docket name "
                 "(map it with a rule)",
                 m->opt->trace_path, row->line, row->project);
        report_error(m, msg);
        j->end = SIM_END_REJECTED;
        m->r->rejected++;
        m->r->njobs++;
        return 0;
    }
    pi = project_get(m, project, row->project);
    if (pi < 0)
        return pi;
    ti = tier_index(m, tier);
    core = core_for(m, row);
    fill_spec(m, row, rule, project, tier, &sh, &spec);
    spec.time_limit_ms = limit;
    spec.submit_ms = queue_key(m, &spec, now);
    j->project = (uint16_t)pi;
    j->tier = (uint8_t)(ti < 0 ? 0 : ti);
    j->core = (uint16_t)core;
    j->gpus = spec.gpus_per_node * spec.nodes;
    j->cpus = spec.cpus_per_node * spec.nodes;
    j->limit_ms = spec.time_limit_ms;
    j->ckpt_ms = rule->checkpoint_ms >= 0          ? rule->checkpoint_ms
                 : m->map->dflt.checkpoint_ms >= 0 ? m->map->dflt.checkpoint_ms
                                                   : m->map->checkpoint_ms;
    spec.has_checkpoint_signal = j->ckpt_ms > 0;
    m->r->njobs++;
    if (sched_job_submit(m->cores[core].s, &spec, now, &e) < 0) {
        snprintf(msg, sizeof(msg), "%s:%ld: job '%s' rejected by the scheduler: %s%s%s",
                 m->opt->trace_path, row->line, row->id, e.field[0] ? e.field : "",
                 e.field[0] ? ": " : "", e.message);
        report_error(m, msg);
        j->end = SIM_END_REJECTED;
        m->r->rejected++;
        return 0;
    }
    m->pending++;
    m->live++;
    m->cores[core].live++;
    m->cores[core].dirty = m->dirty = true;
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Job lifecycle                                                                       */

static struct sim_job_rec *job_of(struct sim *m, uint64_t id)
{
    if (id == 0 || id > m->r->njobs)
        return NULL;
    return &m->r->jobs[id - 1];
}

static struct sched *core_of(const struct sim *m, const struct sim_job_rec *j)
{
    return m->cores[j->core].s;
}

static void touch(struct sim *m, const struct sim_job_rec *j)
{
    m->cores[j->core].dirty = m->dirty = true;
}

/* Stop the accounting of a run that ended at `now`. `natural`: it did all its work. */
static void run_stopped(struct sim *m, struct sim_job_rec *j, int64_t now, bool natural)
{
    int64_t ran = now - j->start_ms;

    if (!j->running)
        return;
    j->running = false;
    j->gen++;
    m->running--;
    m->busy_gpus -= j->gpus;
    m->busy_cpus -= j->cpus;
    m->r->projects[j->project].gpu_ms += (int64_t)j->gpus * ran;
    if (natural) {
        j->saved_ms = j->runtime_ms;
    } else {
        int64_t kept = j->saved_ms - j->run_saved_ms;
        int64_t lost = ran - kept;

        if (lost < 0)
            lost = 0;
        j->lost_ms += lost;
        if (j->stop_cause == SCHED_STOP_PREEMPT) {
            j->lost_preempt_ms += lost;
            m->r->lost_gpu_ms += (double)j->gpus * (double)lost;
        } else if (j->stop_cause == SCHED_STOP_NODE_FAIL || j->stop_cause == SCHED_STOP_NONE)
            m->r->lost_node_fail_gpu_ms += (double)j->gpus * (double)lost;
    }
}

static bool core_running(const struct sim *m, const struct sim_job_rec *j, uint64_t id)
{
    struct sched_job_view v;

    if (sched_job_get(core_of(m, j), id, &v) < 0)
        return false;
    return v.state == SCHED_STARTING || v.state == SCHED_RUNNING || v.state == SCHED_STOPPING;
}

/* The job's processes are gone: tell the core. */
static void job_exit(struct sim *m, uint64_t id, enum sched_exit_kind how, int code, int64_t now,
                     bool natural)
{
    struct sim_job_rec *j = job_of(m, id);
    struct sched_error e = {0};
    char msg[400];

    if (!j || !j->running || !core_running(m, j, id))
        return;
    run_stopped(m, j, now, natural);
    if (sched_job_ended(core_of(m, j), id, how, code, now, &e) < 0) {
        snprintf(msg, sizeof(msg), "core refused the end of job %llu: %s", (unsigned long long)id,
                 e.message);
        report_error(m, msg);
    }
    touch(m, j);
}

/* The node's switch (its label), or NULL. */
static const char *node_switch(struct sched *s, uint32_t node)
{
    struct sched_node_view v;

    if (sched_node_get(s, node, &v) < 0)
        return NULL;
    for (int i = 0; i < v.nlabels; i++)
        if (strcmp(v.labels[i].key, "switch") == 0)
            return v.labels[i].value;
    return NULL;
}

/* A gang's start on a topology: the switches it spans against the fewest whose nodes
 * could hold it (the largest first), whatever they run now. */
static void count_gang_switches(struct sim *m, struct sched *s, const struct sched_decision *d)
{
    const char *seen[SCHED_MAX_JOB_NODES];
    int spanned = 0, needed = 0;
    long covered = 0;

    if (!m->nswitches || d->nallocs < 2)
        return;
    for (int i = 0; i < d->nallocs && i < SCHED_MAX_JOB_NODES; i++) {
        const char *sw = node_switch(s, d->allocs[i].node);
        bool again = false;
        for (int k = 0; k < spanned && !again; k++)
            again = sw && seen[k] && strcmp(seen[k], sw) == 0;
        if (!again)
            seen[spanned++] = sw;
    }
    while (needed < m->nswitches && covered < d->nallocs)
        covered += m->switch_nodes[needed++];
    m->r->gang_starts++;
    if (spanned > needed) {
        m->r->gangs_spread++;
        m->r->extra_switches += spanned - needed;
    }
}

static int cmp_long_desc(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The switches' sizes from the cluster's `switch` labels, largest first. */
static int switches_measure(struct sim *m)
{
    char(*names)[SCHED_NAME_MAX] = calloc((size_t)m->cluster->ngroups + 1, sizeof(*names));
    m->switch_nodes = calloc((size_t)m->cluster->ngroups + 1, sizeof(*m->switch_nodes));
    if (!names || !m->switch_nodes) {
        free(names);
        return -ENOMEM;
    }
    for (int i = 0; i < m->cluster->ngroups; i++) {
        const struct sim_node_group *g = &m->cluster->groups[i];
        for (int l = 0; l < g->nlabels; l++) {
            if (strcmp(g->labels[l].key, "switch"))
                continue;
            int k = 0;
            while (k < m->nswitches && strcmp(names[k], g->labels[l].value))
                k++;
            if (k == m->nswitches)
                memcpy(names[m->nswitches++], g->labels[l].value, SCHED_NAME_MAX);
            m->switch_nodes[k] += g->count;
        }
    }
    free(names);
    qsort(m->switch_nodes, (size_t)m->nswitches, sizeof(long), cmp_long_desc);
    m->r->topology = m->nswitches > 0;
    return 0;
}

static int on_start(struct sim *m, const struct sched_decision *d, int64_t now)
{
    struct sim_job_rec *j = job_of(m, d->job_id);
    struct sched_error e = {0};
    int64_t remaining;

    if (!j)
        return 0;
    count_gang_switches(m, core_of(m, j), d);
    if (sched_job_running(core_of(m, j), d->job_id, now, &e) < 0) {
        snprintf(m->err, m->errlen, "core refused the launch of job %llu: %s",
                 (unsigned long long)d->job_id, e.message);
        return -EINVAL;
    }
    j->running = true;
    j->gen++;
    j->stop_cause = SCHED_STOP_NONE;
    j->start_ms = now;
    j->run_saved_ms = j->saved_ms;
    if (j->first_start_ms < 0)
        j->first_start_ms = now;
    m->pending--;
    m->running++;
    m->busy_gpus += j->gpus;
    m->busy_cpus += j->cpus;
    remaining = j->runtime_ms - j->saved_ms;
    if (remaining < 0)
        remaining = 0;
    if (heap_push(m, now + remaining, EV_END, (uint32_t)(d->job_id - 1), j->gen) < 0)
        return -ENOMEM;
    if (j->ckpt_ms > 0 && j->ckpt_ms < remaining &&
        heap_push(m, now + j->ckpt_ms, EV_CKPT, (uint32_t)(d->job_id - 1), j->gen) < 0)
        return -ENOMEM;
    return 0;
}

static int on_signal(struct sim *m, const struct sched_decision *d, int64_t now)
{
    struct sim_job_rec *j = job_of(m, d->job_id);

    if (!j || !j->running)
        return 0;
    j->stop_cause = (uint8_t)d->cause;
    if (m->map->on_signal == SIM_SIGNAL_EXIT ||
        (m->map->on_signal == SIM_SIGNAL_AUTO && j->ckpt_ms > 0))
        return heap_push(m, now, EV_EXIT, (uint32_t)(d->job_id - 1), j->gen);
    return 0; /* lives out its grace; the core sends KILL */
}

static void on_state(struct sim *m, const struct sched_decision *d, int64_t now)
{
    struct sim_job_rec *j = job_of(m, d->job_id);
    bool was_live = d->from != SCHED_PENDING && d->from != SCHED_HELD;

    if (!j)
        return;
    if (j->running && (d->to == SCHED_PENDING || sched_job_state_terminal(d->to))) {
        if (d->cause == SCHED_STOP_NODE_FAIL)
            j->stop_cause = SCHED_STOP_NODE_FAIL;
        run_stopped(m, j, now, false); /* the core ended it itself (node failure) */
    }
    if (d->to == SCHED_PENDING && was_live) {
        m->pending++;
        m->r->requeues++;
        if (d->cause == SCHED_STOP_PREEMPT) {
            j->preempts++;
            m->r->preemptions++;
        }
    } else if (sched_job_state_terminal(d->to)) {
        if (d->from == SCHED_PENDING || d->from == SCHED_HELD)
            m->pending--;
        j->end_ms = now;
        m->live--;
        m->cores[j->core].live--;
        switch (d->to) {
        case SCHED_COMPLETED:
            j->end = SIM_END_COMPLETED;
            break;
        case SCHED_FAILED:
            j->end = SIM_END_FAILED;
            break;
        case SCHED_TIMEOUT:
            j->end = SIM_END_TIMEOUT;
            m->r->timeouts++;
            break;
        case SCHED_PREEMPTED:
            j->end = SIM_END_PREEMPTED;
            j->preempts++;
            m->r->preemptions++;
            break;
        case SCHED_NODE_FAIL:
            j->end = SIM_END_NODE_FAIL;
            break;
        default:
            j->end = SIM_END_CANCELLED;
            break;
        }
    }
}

static int apply_decisions(struct sim *m, const struct sched_decision *d, size_t n, int64_t now)
{
    for (size_t i = 0; i < n; i++) {
        int rc = 0;

        switch (d[i].kind) {
        case SCHED_D_START:
            rc = on_start(m, &d[i], now);
            break;
        case SCHED_D_SIGNAL:
            rc = on_signal(m, &d[i], now);
            break;
        case SCHED_D_KILL:
            job_exit(m, d[i].job_id, SCHED_EXIT_SIGNAL, SIGKILL, now, false);
            break;
        case SCHED_D_STATE:
            on_state(m, &d[i], now);
            break;
        case SCHED_D_NODE_STATE:
            break;
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Node failures (seeded)                                                              */

static uint64_t rng_next(struct sim *m)
{
    uint64_t z = (m->rng += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double rng_unit(struct sim *m)
{
    return ((double)(rng_next(m) >> 11) + 0.5) / 9007199254740992.0;
}

static int schedule_failure(struct sim *m, int64_t now)
{
    double per_ms = m->opt->node_failure_rate * (double)m->r->total_nodes / 86400000.0;
    int64_t dt;

    if (per_ms <= 0)
        return 0;
    dt = (int64_t)ceil(-log(rng_unit(m)) / per_ms);
    return heap_push(m, now + (dt < 1 ? 1 : dt), EV_NODE_DOWN,
                     (uint32_t)(rng_next(m) % (uint64_t)m->r->total_nodes), 0);
}

/* e->job is the node's index in the expanded cluster; its core holds it by name. */
static int node_event(struct sim *m, const struct ev *e, int64_t now)
{
    struct sched_node_view v;
    struct sched_node_spec ns;
    struct sched_error err = {0};
    bool down = e->kind == EV_NODE_DOWN;
    struct core *c = &m->cores[m->node_core[e->job]];
    int idx;

    sim_cluster_node(m->cluster, e->job, &ns);
    idx = sched_node_find(c->s, ns.name);
    if (idx < 0 || sched_node_get(c->s, (uint32_t)idx, &v) < 0)
        return 0;
    if (down && v.state == SCHED_NODE_UP) {
        if (sched_node_set_state(c->s, v.name, SCHED_NODE_DOWN, now, &err) < 0)
            return 0;
        m->r->node_failures++;
        if (heap_push(m, now + m->opt->repair_ms, EV_NODE_UP, e->job, 0) < 0)
            return -ENOMEM;
    } else if (!down) {
        if (sched_node_set_state(c->s, v.name, SCHED_NODE_UP, now, &err) < 0)
            return 0;
    }
    c->dirty = m->dirty = true;
    return down ? schedule_failure(m, now) : 0;
}

static int fire(struct sim *m, const struct ev *e, int64_t now)
{
    struct sim_job_rec *j;
    struct sched_error err = {0};

    if (e->kind == EV_NODE_DOWN || e->kind == EV_NODE_UP)
        return node_event(m, e, now);
    j = &m->r->jobs[e->job];
    if (e->gen != j->gen || !j->running)
        return 0; /* stale: that run already ended */
    switch (e->kind) {
    case EV_END:
        job_exit(m, (uint64_t)e->job + 1, SCHED_EXIT_CODE, j->failed_in_trace ? 1 : 0, now, true);
        break;
    case EV_EXIT:
        /* A job that declared a checkpoint saves and exits 0; others die of the signal. */
        if (j->ckpt_ms > 0)
            job_exit(m, (uint64_t)e->job + 1, SCHED_EXIT_CODE, 0, now, false);
        else
            job_exit(m, (uint64_t)e->job + 1, SCHED_EXIT_SIGNAL, SIGTERM, now, false);
        break;
    case EV_CKPT:
        if (sched_job_checkpointed(core_of(m, j), (uint64_t)e->job + 1, now, &err) == 0)
            j->saved_ms = j->run_saved_ms + (now - j->start_ms);
        if (now + j->ckpt_ms < j->start_ms + (j->runtime_ms - j->run_saved_ms))
            return heap_push(m, now + j->ckpt_ms, EV_CKPT, e->job, j->gen);
        break;
    default:
        break;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Setup and the loop                                                                  */

/* The value of the partition label on node spec `ns` ("" without it). */
static const char *node_part(const struct sim *m, const struct sched_node_spec *ns)
{
    for (int i = 0; i < ns->nlabels; i++)
        if (strcmp(ns->labels[i].key, m->map->partition_label) == 0)
            return ns->labels[i].value;
    return "";
}

/* Baselines run one core per partition (a value of the mapping's partition_label), as a
 * site runs one queue per partition; everything else runs one core for the cluster, as
 * docketd does. Nodes are added to their partition's core in cluster order. */
static int make_cores(struct sim *m)
{
    bool split = m->pol->per_partition && m->map->partition_label[0] && !m->map->pool;
    long n = m->r->total_nodes;
    struct sched_node_spec ns;

    m->cores = calloc((size_t)(n > 0 ? n : 1), sizeof(*m->cores));
    m->node_core = calloc((size_t)(n > 0 ? n : 1), sizeof(*m->node_core));
    if (!m->cores || !m->node_core)
        return -ENOMEM;
    m->ncores = 1; /* one core, node_core all 0, unless split */
    for (long i = 0; split && i < n; i++) {
        const char *part;
        int c = 0;

        sim_cluster_node(m->cluster, i, &ns);
        part = node_part(m, &ns);
        if (i == 0) {
            (void)str_copy(m->cores[0].part, SCHED_NAME_MAX, part);
            continue;
        }
        while (c < m->ncores && strcmp(m->cores[c].part, part) != 0)
            c++;
        if (c == m->ncores) {
            if (m->ncores == 65535)
                return -ENOSPC;
            (void)str_copy(m->cores[m->ncores++].part, SCHED_NAME_MAX, part);
        }
        m->node_core[i] = (uint16_t)c;
    }
    return 0;
}

static int add_nodes(struct sim *m)
{
    struct sched_node_spec ns;
    struct sched_error e = {0};

    for (long i = 0; i < m->r->total_nodes; i++) {
        sim_cluster_node(m->cluster, i, &ns);
        if (ns.gpus == 0 && ns.cpus > m->max_node_cpus)
            m->max_node_cpus = ns.cpus;
        if (sched_node_upsert(m->cores[m->node_core[i]].s, &ns, 0, &e) < 0) {
            snprintf(m->err, m->errlen, "node '%s': %s%s%s", ns.name, e.field,
                     e.field[0] ? ": " : "", e.message);
            return -EINVAL;
        }
    }
    /* no CPU-only node: CPU jobs are sized by the largest node's CPUs */
    for (long i = 0; m->max_node_cpus == 0 && i < m->r->total_nodes; i++) {
        sim_cluster_node(m->cluster, i, &ns);
        if (ns.cpus > m->max_node_cpus)
            m->max_node_cpus = ns.cpus;
    }
    return 0;
}

/* The policy the cores run: the run's own, with class caps lifted when trace jobs run
 * their recorded runtime (over_cap: run); the engine applies the caps itself. */
static void core_policy(struct sim *m)
{
    m->core_policy = m->pol->policy;
    if (m->map->over_cap != SIM_CAP_RUN)
        return;
    for (int i = 0; i < m->core_policy.nclasses; i++)
        m->core_policy.classes[i].max_limit_ms = 0;
}

static int setup(struct sim *m)
{
    struct sched_error e = {0};
    struct sim_result *r = m->r;

    (void)str_copy(r->policy_name, sizeof(r->policy_name), m->pol->name);
    r->policy = m->pol->policy;
    for (int t = 0; t < r->policy.ntiers; t++)
        r->starve_bound_ms[t] = m->pol->report_bounds ? m->pol->report_starve_ms[t]
                                                      : r->policy.tiers[t].starve_after_ms;
    r->total_nodes = sim_cluster_nodes(m->cluster);
    r->total_gpus = sim_cluster_gpus(m->cluster, NULL, NULL);
    r->series.bucket_ms = m->opt->sample_ms > 0 ? m->opt->sample_ms : 3600000;
    m->max_node_gpus = sim_cluster_max_node_gpus(m->cluster);
    m->rng = m->opt->seed;
    if (switches_measure(m) < 0 || make_cores(m) < 0) {
        snprintf(m->err, m->errlen, "out of memory");
        return -ENOMEM;
    }
    r->partitions = m->ncores;
    core_policy(m);
    for (int c = 0; c < m->ncores; c++) {
        m->cores[c].s = sched_create(&m->core_policy, &e);
        if (!m->cores[c].s) {
            snprintf(m->err, m->errlen, "policy '%s' refused by the scheduler: %s%s%s",
                     m->pol->name, e.field, e.field[0] ? ": " : "", e.message);
            return -EINVAL;
        }
    }
    for (long i = 0; i < r->total_nodes; i++) {
        struct sched_node_spec ns;

        sim_cluster_node(m->cluster, i, &ns);
        r->total_cpus += ns.cpus;
    }
    if (add_nodes(m) < 0)
        return -EINVAL;
    for (int i = 0; i < m->pol->nprojects; i++)
        if (project_add(m, &m->pol->projects[i]) < 0)
            return -EINVAL;
    return schedule_failure(m, 0);
}
static void progress(struct sim *m, int64_t now, bool last)
{
    int64_t wall = clock_mono_ms();
    double secs = (double)(wall - m->wall_start) / 1000.0;

    if (!m->opt->progress || (!last && wall - m->progress_at < 250))
        return;
    m->progress_at = wall;
    fprintf(stderr,
            "\r\033[Ksim %s: day %.1f, %zu jobs read, %ld done, %ld pending, "
            "%ld running, %.0f jobs/s%s",
            m->pol->name, (double)now / 86400000.0, m->r->njobs, (long)m->r->njobs - m->live,
            m->pending, m->running, secs > 0 ? (double)m->r->njobs / secs : 0.0, last ? "\n" : "");
    fflush(stderr);
}

struct reader_state {
    struct trace_reader *tr;
    struct trace_row row;
    bool have; /* row holds the next submission */
    bool eof;
    long read;
};

static int read_ahead(struct sim *m, struct reader_state *rs)
{
    struct trace_error te;
    char msg[512];

    while (!rs->have && !rs->eof) {
        int rc;

        if (m->opt->limit > 0 && rs->read >= m->opt->limit) {
            rs->eof = true;
            break;
        }
        rc = trace_next(rs->tr, &rs->row, &te);
        if (rc == 1 && rs->row.submit_ms < m->opt->start_at_ms) {
            m->r->rows.before_start++; /* --limit counts from --start-at */
        } else if (rc == 1) {
            rs->have = true;
            rs->read++;
        } else if (rc == 0) {
            rs->eof = true;
        } else {
            trace_error_format(&te, msg, sizeof(msg));
            if (rc == -EIO || !m->opt->skip_bad_rows) {
                snprintf(m->err, m->errlen, "%s%s", msg,
                         rc == -EIO ? "" : " (use --skip-bad-rows to report and go on)");
                return -EINVAL;
            }
            report_error(m, msg);
            m->r->bad_rows++;
        }
    }
    return 0;
}

/* The replay's clock starts at --start-at (0 by default). */
static int64_t row_time(const struct sim *m, const struct trace_row *row)
{
    return (int64_t)llround((double)(row->submit_ms - m->opt->start_at_ms) * m->opt->arrival_scale);
}

/* Apply everything due up to `now`, each at its own time: submissions, then events. */
static int apply_due(struct sim *m, struct reader_state *rs, int64_t now)
{
    for (;;) {
        int64_t tr = rs->have ? row_time(m, &rs->row) : INT64_MAX;
        int64_t te = m->h.n > 0 ? m->h.v[0].t : INT64_MAX;

        if (tr <= now && tr <= te) {
            if (advance(m, tr) < 0)
                return -ENOMEM;
            rs->have = false;
            size_t before = m->r->njobs;
            if (submit_row(m, &rs->row, tr) < 0)
                return -EINVAL;
            if (m->r->njobs > before) { /* busy so far: advance() integrated up to tr */
                m->r->arrivals_end_ms = tr;
                m->r->busy_gpu_ms_arrivals = m->r->busy_gpu_ms_total;
                m->r->busy_cpu_ms_arrivals = m->r->busy_cpu_ms_total;
            }
            if (read_ahead(m, rs) < 0)
                return -EINVAL;
        } else if (te <= now) {
            struct ev e = heap_pop(&m->h);

            if (advance(m, e.t) < 0 || fire(m, &e, e.t) < 0)
                return -ENOMEM;
        } else {
            return 0;
        }
    }
}

/* Cycle every core that has something to do now: a change since its last cycle, or its
 * wakeup due. A core's decisions concern its own jobs only. */
static int cycle(struct sim *m, int64_t now)
{
    bool any = false;

    for (int c = 0; c < m->ncores; c++) {
        struct core *k = &m->cores[c];
        struct sched_cycle_stats st;
        size_t n = 0;
        const struct sched_decision *d;

        if (!k->dirty && now < k->wake)
            continue;
        d = sched_cycle(k->s, now, SCHED_CYCLE_INCREMENTAL, &n, &st);
        m->r->cycles++;
        k->dirty = false;
        if (apply_decisions(m, d, n, now) < 0)
            return -EINVAL;
    }
    for (int c = 0; c < m->ncores; c++)
        any = any || m->cores[c].dirty;
    m->dirty = any;
    m->last_cycle = now;
    return 0;
}

/* The next time anything happens; INT64_MAX when nothing will. */
static int64_t next_time(struct sim *m, const struct reader_state *rs, int64_t now)
{
    int64_t t = INT64_MAX;

    if (rs->have)
        t = row_time(m, &rs->row);
    /* node failures alone do not keep an idle simulation going */
    if (m->h.n > 0 && (m->live > 0 || rs->have) && m->h.v[0].t < t)
        t = m->h.v[0].t;
    if (m->dirty)
        t = now;
    m->wake = INT64_MAX;
    for (int c = 0; c < m->ncores; c++) {
        struct core *k = &m->cores[c];

        k->wake = INT64_MAX;
        if (k->live > 0 && !k->dirty) {
            int64_t w = sched_next_wakeup(k->s, now);

            k->wake = w <= now ? now + 1 : w;
        }
        if (k->wake < m->wake)
            m->wake = k->wake;
    }
    if (m->wake < t)
        t = m->wake;
    if (t != INT64_MAX && m->opt->cycle_interval_ms > 0 &&
        t < m->last_cycle + m->opt->cycle_interval_ms)
        t = m->last_cycle + m->opt->cycle_interval_ms;
    return t < now ? now : t;
}

/* Nothing runs, nothing arrives: if one forced full cycle of every core starts nothing,
 * the remaining jobs can never run (e.g. quota they can never fit) and the run stops. */
static bool stuck(struct sim *m, const struct reader_state *rs, int64_t now)
{
    bool idle = true;

    if (rs->have || m->running > 0 || m->live == 0)
        return false;
    for (size_t i = 0; i < m->h.n; i++)
        if (m->h.v[i].kind != EV_NODE_DOWN)
            return false; /* a job event, or a node coming back */
    for (int c = 0; c < m->ncores; c++) {
        struct sched_cycle_stats st;
        size_t n = 0;
        const struct sched_decision *d =
            sched_cycle(m->cores[c].s, now, SCHED_CYCLE_REFRESH, &n, &st);

        m->r->cycles++;
        if (apply_decisions(m, d, n, now) < 0)
            return true;
        idle = idle && st.running == 0 && n == 0 && st.started == 0;
    }
    return idle;
}

static int loop(struct sim *m, struct reader_state *rs)
{
    int64_t now = 0;
    long idle_cycles = 0;

    if (read_ahead(m, rs) < 0)
        return -EINVAL;
    for (;;) {
        int64_t t = next_time(m, rs, now);

        if (t == INT64_MAX)
            break;
        if (apply_due(m, rs, t) < 0 || advance(m, t) < 0)
            return -EINVAL;
        now = t;
        /* checkpoints alone change nothing the cycle looks at: no cycle for them */
        if (!m->dirty && now < m->wake)
            continue;
        if (cycle(m, now) < 0)
            return -EINVAL;
        /* A long stretch with nothing running and nothing arriving: check for jobs that
         * can never start, which would otherwise keep the clock ticking forever. */
        idle_cycles = (m->running == 0 && !rs->have) ? idle_cycles + 1 : 0;
        if (idle_cycles > 1000 && stuck(m, rs, now))
            break;
        if ((m->r->cycles & 1023) == 0)
            progress(m, now, false);
    }
    m->r->end_ms = now;
    return 0;
}

static void finish(struct sim *m)
{
    struct sim_result *r = m->r;

    for (size_t i = 0; i < r->njobs; i++) {
        struct sim_job_rec *j = &r->jobs[i];

        if (j->running)
            run_stopped(m, j, r->end_ms, false);
        if (j->end == SIM_END_NONE)
            r->unfinished++;
    }
    r->series.n = r->end_ms / r->series.bucket_ms + 1;
    if (series_grow(&r->series, r->series.n) < 0)
        r->series.n = 0;
}

struct sim_result *sim_run(const struct sim_options *opt, const struct sim_cluster *cluster,
                           const struct sim_policy *policy, const struct sim_mapping *map,
                           char *err, size_t errlen)
{
    struct sim m = {
        .opt = opt, .cluster = cluster, .pol = policy, .map = map, .err = err, .errlen = errlen};
    struct reader_state rs = {0};
    struct trace_error te;
    char msg[512];
    int rc;

    m.r = calloc(1, sizeof(*m.r));
    if (!m.r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    m.wall_start = clock_mono_ms();
    if (opt->rows)
        rs.tr = trace_open_rows(opt->rows, opt->nrows, opt->trace_path);
    else
        rs.tr = trace_open(opt->trace_path, opt->format, &te);
    if (!rs.tr && opt->rows) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    } else if (!rs.tr) {
        trace_error_format(&te, msg, sizeof(msg));
        snprintf(err, errlen, "%s", msg);
        rc = -EINVAL;
    } else {
        rc = setup(&m);
        if (rc == 0)
            rc = loop(&m, &rs);
    }
    trace_close(rs.tr);
    if (rc == 0)
        finish(&m);
    progress(&m, m.r->end_ms, true);
    for (int c = 0; m.cores && c < m.ncores; c++)
        sched_destroy(m.cores[c].s);
    free(m.cores);
    free(m.node_core);
    free(m.switch_nodes);
    free(m.h.v);
    if (rc < 0) {
        sim_result_destroy(m.r);
        return NULL;
    }
    return m.r;
}

void sim_result_destroy(struct sim_result *r)
{
    if (!r)
        return;
    free(r->jobs);
    free(r->ids);
    free(r->projects);
    free(r->series.busy_gpu_ms);
    free(r->series.pending_ms);
    free(r->series.busy_cpu_ms);
    free(r);
}
