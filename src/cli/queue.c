/*
 * queue.c - `docket queue` (alias `q`): the active jobs of GET /v1/jobs as a table, with
 * the reason each pending one waits. Also the listing code `docket history` shares
 * (jobs.h): the query with its filters and cursors, and the options.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jobs.h"
#include "util/dbuf.h"
#include "util/parse.h"

const char cmd_queue_usage[] =
    "usage: docket queue [FILTERS] [--json]     (alias: docket q)\n"
    "\n"
    "Pending and running jobs, with why each pending one waits. Running jobs come\n"
    "first, then pending ones by tier (highest first) and submission, held ones last;\n"
    "fair-share also orders jobs within a tier: docket explain JOB gives the exact\n"
    "position. --json lists jobs by id.\n"
    "\n"
    "  -p, --project NAME   -u, --user NAME   -t, --tier NAME   --class NAME\n"
    "      --state LIST     states (PENDING,RUNNING,...), active or terminal\n"
    "      --node NAME      jobs on that node\n"
    "      --name NAME      jobs with that name\n"
    "      --template NAME[@VERSION]  jobs run with that template (every version)\n"
    "  -a, --all            finished jobs too\n"
    "  -n, --limit N        show at most N jobs (default 1000); the counts under the\n"
    "                       table cover every job that matches\n"
    "      --by-id          list by job id\n";

enum {
    Q_PROJECT = 1,
    Q_USER,
    Q_TIER,
    Q_CLASS,
    Q_STATE,
    Q_NODE,
    Q_NAME,
    Q_ALL,
    Q_LIMIT,
    Q_BY_ID,
    Q_TEMPLATE
};

static const struct opt_def queue_opts[] = {
    {Q_PROJECT, 'p', "project", OPT_VALUE},
    {Q_USER, 'u', "user", OPT_VALUE},
    {Q_TIER, 't', "tier", OPT_VALUE},
    {Q_CLASS, 0, "class", OPT_VALUE},
    {Q_STATE, 0, "state", OPT_VALUE},
    {Q_NODE, 0, "node", OPT_VALUE},
    {Q_NAME, 0, "name", OPT_VALUE},
    {Q_TEMPLATE, 0, "template", OPT_VALUE},
    {Q_ALL, 'a', "all", OPT_NONE},
    {Q_LIMIT, 'n', "limit", OPT_VALUE},
    {Q_BY_ID, 0, "by-id", OPT_NONE},
    CLI_COMMON_OPTS,
    {0, 0, NULL, OPT_NONE},
};

static void add_param(struct dbuf *b, const char *key, const char *value)
{
    char esc[512];

    if (!value || client_escape(value, esc, sizeof(esc)) < 0)
        return;
    dbuf_printf(b, "%c%s=%s", strchr(b->data, '?') ? '&' : '?', key, esc);
}

int jobs_fetch(struct cli *c, const struct jobs_query *q, json_t **jobs)
{
    struct dbuf path;
    int rc;

    dbuf_init(&path, 8192);
    dbuf_puts(&path, "/v1/jobs");
    add_param(&path, "state", q->state);
    add_param(&path, "project", q->project);
    add_param(&path, "user", q->user);
    add_param(&path, "tier", q->tier);
    add_param(&path, "class", q->class_name);
    add_param(&path, "node", q->node);
    add_param(&path, "name", q->name);
    add_param(&path, "template", q->template_ref);
    add_param(&path, "order", q->desc ? "desc" : NULL);
    add_param(&path, "fields", q->fields);
    json_t *list = NULL;
    rc = path.failed ? cli_usage_error(c, "filters too long")
                     : cli_get_pages(c, path.data, "jobs", q->limit, &list);
    dbuf_release(&path);
    *jobs = list ? json_incref(json_object_get(list, "jobs")) : NULL;
    json_decref(list);
    return rc;
}

void jobs_gpus(const json_t *job, char *buf, size_t len)
{
    int64_t g = jint(job, "gpus", 0), n = jint(job, "nodes", 1);
    const char *type = jstr(job, "gpu_type");

    if (g <= 0)
        snprintf(buf, len, "-");
    else if (n > 1)
        snprintf(buf, len, "%lldx%lld%s%s", (long long)n, (long long)g, type[0] ? " " : "", type);
    else
        snprintf(buf, len, "%lld%s%s", (long long)g, type[0] ? " " : "", type);
}

void jobs_nodelist(const json_t *job, char *buf, size_t len)
{
    const json_t *alloc = json_object_get(job, "allocation");
    size_t i, o = 0;
    json_t *a;

    buf[0] = '\0';
    json_array_foreach(alloc, i, a) {
        int n = snprintf(buf + o, len - o, "%s%s", i ? "," : "", jstr(a, "node"));
        if (n < 0 || (size_t)n >= len - o)
            break;
        o += (size_t)n;
    }
}

static void tier_text(const json_t *job, char *buf, size_t len)
{
    const char *t = jstr(job, "tier"), *e = jstr(job, "eff_tier");

    if (e[0] && strcmp(t, e))
        snprintf(buf, len, "%s→%s", t, e);
    else
        snprintf(buf, len, "%s", t);
}

/* Pending: how long it has waited; running: elapsed of its limit. */
static void time_text(struct cli *c, const json_t *job, char *buf, size_t len)
{
    const char *st = jstr(job, "state");
    int64_t start = jint(job, "start_ms", 0), limit = jint(job, "time_limit_ms", 0);
    char a[32], b[32];

    if ((!strcmp(st, "RUNNING") || !strcmp(st, "STOPPING")) && start > 0) {
        fmt_duration(c->now_ms - start, a, sizeof(a));
        fmt_duration(limit, b, sizeof(b));
        snprintf(buf, len, "%s/%s", a, limit > 0 ? b : "∞");
    } else {
        fmt_when(jint(job, "submit_ms", 0), c->now_ms, buf, len);
    }
}

void jobs_print_queue(struct cli *c, const json_t *jobs)
{
    jobs_print_queue_head(c, jobs, (long)json_array_size(jobs));
}

void jobs_print_queue_head(struct cli *c, const json_t *jobs, long show)
{
    static const char *const h[] = {"ID",    "NAME",  "PROJECT", "USER", "TIER",
                                    "CLASS", "STATE", "GPUS",    "TIME", "NODES/REASON"};
    struct table *t = table_create(h, 10);
    int running = 0, pending = 0, held = 0;
    size_t i;
    json_t *j;

    if (!t)
        return;
    table_set_flags(t, 0, TABLE_RIGHT);
    table_set_flags(t, 1, TABLE_FLEX);
    table_set_flags(t, 9, TABLE_FLEX);
    json_array_foreach(jobs, i, j) {
        const char *st = jstr(j, "state");
        char tier[140], gpus[100], tm[64], where[1024];

        tier_text(j, tier, sizeof(tier));
        jobs_gpus(j, gpus, sizeof(gpus));
        time_text(c, j, tm, sizeof(tm));
        jobs_nodelist(j, where, sizeof(where));
        if (!where[0])
            snprintf(where, sizeof(where), "%s", jstr(j, "reason"));
        running += !strcmp(st, "RUNNING") || !strcmp(st, "STARTING") || !strcmp(st, "STOPPING");
        pending += !strcmp(st, "PENDING");
        held += !strcmp(st, "HELD");
        if ((long)i >= show)
            continue; /* counted, not shown */
        table_row(t);
        table_cell(t, FMT_PLAIN, "%lld", (long long)jint(j, "id", 0));
        table_cell(t, FMT_PLAIN, "%s", jstr(j, "name"));
        table_cell(t, FMT_PLAIN, "%s", jstr(j, "project"));
        table_cell(t, FMT_PLAIN, "%s", jstr(j, "user"));
        table_cell(t, FMT_PLAIN, "%s", tier);
        table_cell(t, FMT_PLAIN, "%s", jstr(j, "class"));
        table_cell(t, fmt_state_color(st), "%s", st);
        table_cell(t, FMT_PLAIN, "%s", gpus);
        table_cell(t, FMT_PLAIN, "%s", tm);
        table_cell(t, FMT_PLAIN, "%s", where);
    }
    if (table_rows(t))
        table_print(t, c->out, c->width, c->color);
    fprintf(c->out, "%d running, %d pending, %d held\n", running, pending, held);
    if ((long)json_array_size(jobs) > show)
        fprintf(c->out, "showing the first %ld of %zu (-n %zu shows all)\n", show,
                json_array_size(jobs), json_array_size(jobs));
    table_destroy(t);
}

/* Queue order for people: running (and starting, stopping) by id, then pending by tier
 * rank and submission, then held, then finished ones. */
static int state_group(const char *st)
{
    if (!strcmp(st, "RUNNING") || !strcmp(st, "STARTING") || !strcmp(st, "STOPPING"))
        return 0;
    if (!strcmp(st, "PENDING"))
        return 1;
    if (!strcmp(st, "HELD"))
        return 2;
    return 3;
}

struct qentry {
    json_t *job;
    int group, rank;
    int64_t submit, id;
};

static int tier_rank(const json_t *tiers, const json_t *job)
{
    const char *t = jstr(job, "eff_tier")[0] ? jstr(job, "eff_tier") : jstr(job, "tier");
    size_t i;
    json_t *x;

    json_array_foreach(tiers, i, x)
        if (!strcmp(jstr(x, "name"), t))
            return (int)i;
    return 1000;
}

static int cmp_queue(const void *a, const void *b)
{
    const struct qentry *x = a, *y = b;

    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

json_t *jobs_queue_order(struct cli *c, json_t *jobs)
{
    size_t n = json_array_size(jobs), i;
    struct qentry *v = calloc(n ? n : 1, sizeof(*v));
    json_t *tiers = NULL, *out;

    if (!v || cli_call_quiet(c, "GET", "/v1/tiers", &tiers) != 0) {
        free(v);
        return json_incref(jobs);
    }
    for (i = 0; i < n; i++) {
        json_t *j = json_array_get(jobs, i);
        v[i].job = j;
        v[i].group = state_group(jstr(j, "state"));
        v[i].rank = v[i].group == 1 ? tier_rank(json_object_get(tiers, "tiers"), j) : 0;
        v[i].submit = v[i].group == 1 ? jint(j, "submit_ms", 0) : 0;
        v[i].id = jint(j, "id", 0);
    }
    qsort(v, n, sizeof(*v), cmp_queue);
    out = json_array();
    for (i = 0; i < n; i++)
        json_array_append(out, v[i].job);
    free(v);
    json_decref(tiers);
    return out;
}

/* What the queue's table reads of each job (GET /v1/jobs?fields=) */
static const char queue_fields[] = "id,name,project,user,tier,eff_tier,class,state,reason,gpus,"
                                   "gpu_type,nodes,submit_ms,start_ms,time_limit_ms,allocation";
enum { QUEUE_READ_MAX = 1000000 };

static const char all_states[] =
    "PENDING,HELD,STARTING,RUNNING,STOPPING,COMPLETED,FAILED,CANCELLED,TIMEOUT,PREEMPTED,"
    "NODE_FAIL";

int jobs_list_main(struct cli *c, int argc, char **argv, bool history)
{
    struct jobs_query q = {
        .limit = history ? 50 : 1000, .desc = history, .state = history ? "terminal" : "active"};
    struct opt_iter it;
    const char *v;
    char err[256];
    json_t *jobs;
    bool by_id = false;
    int id, rc;

    opt_iter_init(&it, argc, argv, 1);
    while ((id = opt_next(&it, queue_opts, &v, err, sizeof(err))) != OPT_DONE) {
        switch (id) {
        case Q_PROJECT:
            q.project = v;
            break;
        case Q_USER:
            q.user = v;
            break;
        case Q_TIER:
            q.tier = v;
            break;
        case Q_CLASS:
            q.class_name = v;
            break;
        case Q_STATE:
            q.state = v;
            break;
        case Q_NODE:
            q.node = v;
            break;
        case Q_NAME:
            q.name = v;
            break;
        case Q_TEMPLATE:
            q.template_ref = v;
            break;
        case Q_ALL:
            q.state = all_states;
            break;
        case Q_BY_ID:
            by_id = true;
            break;
        case Q_LIMIT: {
            int n;
            if (parse_int(v, 1, 100000, &n) < 0)
                return cli_usage_error(c,
                                       "--limit: want a number from 1 to 100000, not "
                                       "'%.40s'",
                                       v);
            q.limit = n;
            break;
        }
        case OPT_POSITIONAL:
            return cli_usage_error(c, "unexpected argument '%.60s'", v);
        default:
            if ((rc = cli_common(c, id, err)) != CLI_CONTINUE)
                return rc;
        }
    }
    /* The table reads every active job (only the members it shows): its counts are the
     * queue's, not a page's, and its head is the queue's head, not the lowest ids. */
    long show = q.limit;
    bool whole_queue = !c->json && !history && q.state != all_states;
    if (whole_queue) {
        q.fields = queue_fields;
        q.limit = QUEUE_READ_MAX;
    }
    if ((rc = jobs_fetch(c, &q, &jobs)))
        return rc;
    if (c->json) {
        json_t *o = json_pack("{s:O}", "jobs", jobs);
        cli_print_json(c, o);
        json_decref(o);
    } else if (history) {
        jobs_print_history(c, jobs);
    } else if (by_id) {
        jobs_print_queue_head(c, jobs, whole_queue ? show : (long)json_array_size(jobs));
    } else {
        json_t *sorted = jobs_queue_order(c, jobs);
        jobs_print_queue_head(c, sorted, show);
        json_decref(sorted);
    }
    json_decref(jobs);
    return EXIT_OK;
}

int cmd_queue(struct cli *c, int argc, char **argv)
{
    return jobs_list_main(c, argc, argv, false);
}
