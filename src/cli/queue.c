/*
 * queue.c - `docket queue` (alias `q`): the active jobs of GET /v1/jobs as a table, with
 * the reason each pending one waits. Also the listing code `docket history` shares
 * (jobs.h): the query with its filters and cursors, and the options. The table and
 * --json read the replies' text in one pass (jtext.h), not a tree: 10,000 rows are
 * common (docs/cli.md "Listing many jobs").
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jobs.h"
#include "cli/jtext.h"
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

/* GET /v1/jobs with q's filters into path; false when they do not fit */
static bool jobs_path(const struct jobs_query *q, struct dbuf *path)
{
    dbuf_init(path, 8192);
    dbuf_puts(path, "/v1/jobs");
    add_param(path, "state", q->state);
    add_param(path, "project", q->project);
    add_param(path, "user", q->user);
    add_param(path, "tier", q->tier);
    add_param(path, "class", q->class_name);
    add_param(path, "node", q->node);
    add_param(path, "name", q->name);
    add_param(path, "template", q->template_ref);
    add_param(path, "order", q->desc ? "desc" : NULL);
    add_param(path, "fields", q->fields);
    return !path->failed;
}

int jobs_fetch(struct cli *c, const struct jobs_query *q, json_t **jobs)
{
    struct dbuf path;
    int rc;

    json_t *list = NULL;
    rc = !jobs_path(q, &path) ? cli_usage_error(c, "filters too long")
                              : cli_get_pages(c, path.data, "jobs", q->limit, &list);
    dbuf_release(&path);
    *jobs = list ? json_incref(json_object_get(list, "jobs")) : NULL;
    json_decref(list);
    return rc;
}

/* "8", "2x8 H100", "-": the GPUs of a job asking for g on each of n nodes */
static void gpus_text(int64_t g, int64_t n, const char *type, char *buf, size_t len)
{
    if (g <= 0)
        snprintf(buf, len, "-");
    else if (n > 1)
        snprintf(buf, len, "%lldx%lld%s%s", (long long)n, (long long)g, type[0] ? " " : "", type);
    else
        snprintf(buf, len, "%lld%s%s", (long long)g, type[0] ? " " : "", type);
}

void jobs_gpus(const json_t *job, char *buf, size_t len)
{
    gpus_text(jint(job, "gpus", 0), jint(job, "nodes", 1), jstr(job, "gpu_type"), buf, len);
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

/* ------------------------------------------------------------------------------------ */
/* The queue's table: rows of the members it shows, read from the reply's text in one
 * pass (issue 40) or from a tree (docket top), sorted and printed by the same code.     */

enum {
    QS_NAME,
    QS_PROJECT,
    QS_USER,
    QS_TIER,
    QS_EFF_TIER,
    QS_CLASS,
    QS_STATE,
    QS_REASON,
    QS_GPU_TYPE,
    QS_WHERE,
    QS_N
};

struct qrow {
    int64_t id, gpus, nodes, submit_ms, start_ms, time_limit_ms;
    size_t s[QS_N]; /* offsets in the pool (0: "") */
};

struct qrows {
    struct qrow *v;
    size_t n, alloc;
    struct dbuf pool;            /* every string, NUL-terminated, terminal-safe */
    struct dbuf key, val, where; /* a member's name and value, the allocation's nodes */
};

static void qrows_init(struct qrows *r)
{
    memset(r, 0, sizeof(*r));
    dbuf_init(&r->pool, 0);
    dbuf_init(&r->key, 0);
    dbuf_init(&r->val, 0);
    dbuf_init(&r->where, 0);
    dbuf_append(&r->pool, "", 1); /* offset 0 */
}

static void qrows_release(struct qrows *r)
{
    free(r->v);
    dbuf_release(&r->pool);
    dbuf_release(&r->key);
    dbuf_release(&r->val);
    dbuf_release(&r->where);
}

static const char *qs(const struct qrows *r, const struct qrow *q, int k)
{
    return r->pool.data + q->s[k];
}

/* A new row, every member as a job without it reads (jstr "", jint's defaults) */
static struct qrow *qrows_add(struct qrows *r)
{
    if (r->n == r->alloc) {
        size_t a = r->alloc ? r->alloc * 2 : 1024;
        struct qrow *v = realloc(r->v, a * sizeof(*v));
        if (!v)
            return NULL;
        r->v = v;
        r->alloc = a;
    }
    struct qrow *q = &r->v[r->n++];
    memset(q, 0, sizeof(*q));
    q->nodes = 1;
    return q;
}

/* s into the pool, as safe for a terminal as safe_tree makes a reply's strings */
static size_t pool_put(struct qrows *r, const char *s)
{
    if (!s[0])
        return 0;
    size_t off = r->pool.len;
    if (fmt_is_plain(s, true)) {
        dbuf_append(&r->pool, s, strlen(s) + 1);
    } else {
        char *safe = fmt_safe(s, true);
        dbuf_append(&r->pool, safe ? safe : "", safe ? strlen(safe) + 1 : 1);
        free(safe);
    }
    return off;
}

/* A row from a job of a tree (its strings already terminal-safe) */
static int qrow_from_json(struct qrows *r, const json_t *j)
{
    static const char *const names[QS_N - 1] = {"name",  "project", "user",   "tier",    "eff_tier",
                                                "class", "state",   "reason", "gpu_type"};
    char where[1024];
    struct qrow *q = qrows_add(r);
    if (!q)
        return -ENOMEM;
    q->id = jint(j, "id", 0);
    q->gpus = jint(j, "gpus", 0);
    q->nodes = jint(j, "nodes", 1);
    q->submit_ms = jint(j, "submit_ms", 0);
    q->start_ms = jint(j, "start_ms", 0);
    q->time_limit_ms = jint(j, "time_limit_ms", 0);
    for (int k = 0; k < QS_N - 1; k++) {
        size_t off = r->pool.len;
        const char *v = jstr(j, names[k]);
        q->s[k] = v[0] ? off : 0;
        if (v[0])
            dbuf_append(&r->pool, v, strlen(v) + 1);
    }
    jobs_nodelist(j, where, sizeof(where));
    q->s[QS_WHERE] = where[0] ? r->pool.len : 0;
    if (where[0])
        dbuf_append(&r->pool, where, strlen(where) + 1);
    return r->pool.failed ? -ENOMEM : 0;
}

/* The members of a row the table reads: where each goes (an int64_t of qrow, or a QS_) */
static const struct {
    const char *name;
    int str;    /* QS_ index, or -1 */
    size_t num; /* offset of the int64_t in struct qrow, when str < 0 */
} qmembers[] = {
    {"id", -1, offsetof(struct qrow, id)},
    {"name", QS_NAME, 0},
    {"project", QS_PROJECT, 0},
    {"user", QS_USER, 0},
    {"tier", QS_TIER, 0},
    {"eff_tier", QS_EFF_TIER, 0},
    {"class", QS_CLASS, 0},
    {"state", QS_STATE, 0},
    {"reason", QS_REASON, 0},
    {"gpus", -1, offsetof(struct qrow, gpus)},
    {"gpu_type", QS_GPU_TYPE, 0},
    {"nodes", -1, offsetof(struct qrow, nodes)},
    {"submit_ms", -1, offsetof(struct qrow, submit_ms)},
    {"start_ms", -1, offsetof(struct qrow, start_ms)},
    {"time_limit_ms", -1, offsetof(struct qrow, time_limit_ms)},
};

/* "allocation": [{"node": ...}, ...] into r->where as jobs_nodelist joins it */
static int scan_allocation(struct qrows *r, struct jscan *s)
{
    bool any = false;
    dbuf_reset(&r->where);
    if (!jscan_take(s, '['))
        return jscan_skip(s); /* not an array: no nodes */
    while (!jscan_take(s, ']')) {
        if (any && !jscan_take(s, ','))
            return -EPROTO;
        if (any)
            dbuf_append(&r->where, ",", 1);
        any = true;
        if (jscan_peek(s) != '{') {
            if (jscan_skip(s) < 0)
                return -EPROTO;
            continue;
        }
        jscan_take(s, '{');
        bool first = true;
        size_t at = r->where.len; /* the last "node" given wins, as in a tree */
        int rc;
        while ((rc = jscan_member(s, &first, &r->key)) == 1) {
            if (!strcmp(r->key.data, "node") && jscan_peek(s) == '"') {
                dbuf_reset(&r->val);
                if (jscan_string(s, &r->val) < 0)
                    return -EPROTO;
                char *safe = fmt_is_plain(r->val.data, true) ? NULL : fmt_safe(r->val.data, true);
                r->where.len = at;
                dbuf_puts(&r->where, safe ? safe : r->val.data);
                free(safe);
            } else if (jscan_skip(s) < 0) {
                return -EPROTO;
            }
        }
        if (rc < 0)
            return -EPROTO;
    }
    return 0;
}

/* One row of the reply's text (cli_each_item) */
static int qrow_from_text(void *arg, const char *text, size_t n)
{
    struct qrows *r = arg;
    struct jscan s;
    struct qrow *q = qrows_add(r);
    bool first = true, integer;
    int rc;

    if (!q) {
        r->pool.failed = true; /* (the caller tells) */
        return EXIT_FAIL;
    }
    size_t row = r->n - 1;
    jscan_init(&s, text, n);
    if (!jscan_take(&s, '{'))
        return 0; /* not an object: a row of nothing, as jstr and jint read one */
    while ((rc = jscan_member(&s, &first, &r->key)) == 1) {
        size_t m = 0;
        while (m < sizeof(qmembers) / sizeof(qmembers[0]) && strcmp(qmembers[m].name, r->key.data))
            m++;
        int c = jscan_peek(&s);
        if (m == sizeof(qmembers) / sizeof(qmembers[0])) {
            if (!strcmp(r->key.data, "allocation")) {
                if (scan_allocation(r, &s) < 0) {
                    r->pool.failed = true;
                    return EXIT_FAIL;
                }
                char where[1024]; /* cut as jobs_nodelist cuts it */
                snprintf(where, sizeof(where), "%s", r->where.data);
                q = &r->v[row];
                q->s[QS_WHERE] = where[0] ? r->pool.len : 0;
                if (where[0])
                    dbuf_append(&r->pool, where, strlen(where) + 1);
                continue;
            }
            rc = jscan_skip(&s);
        } else if (qmembers[m].str >= 0) {
            q = &r->v[row];
            if (c != '"') {
                q->s[qmembers[m].str] = 0; /* not a string: jstr's "" */
                rc = jscan_skip(&s);
            } else {
                dbuf_reset(&r->val);
                rc = jscan_string(&s, &r->val);
                q->s[qmembers[m].str] = rc == 0 ? pool_put(r, r->val.data) : 0;
            }
        } else {
            int64_t v;
            q = &r->v[row];
            int64_t *slot = (int64_t *)((char *)q + qmembers[m].num);
            if (c == '-' || (c >= '0' && c <= '9')) {
                rc = jscan_number(&s, &v, &integer);
                *slot = v;
            } else {
                *slot = !strcmp(qmembers[m].name, "nodes") ? 1 : 0; /* jint's default */
                rc = jscan_skip(&s);
            }
        }
        if (rc < 0)
            break;
    }
    if (rc < 0) /* (the page's syntax was checked: only memory can fail here) */
        r->pool.failed = true;
    return r->pool.failed ? EXIT_FAIL : 0;
}

static void tier_text(const char *t, const char *e, char *buf, size_t len)
{
    if (e[0] && strcmp(t, e))
        snprintf(buf, len, "%s→%s", t, e);
    else
        snprintf(buf, len, "%s", t);
}

/* Pending: how long it has waited; running: elapsed of its limit. */
static void time_text(struct cli *c, const char *st, int64_t start, int64_t limit, int64_t submit,
                      char *buf, size_t len)
{
    char a[32], b[32];

    if ((!strcmp(st, "RUNNING") || !strcmp(st, "STOPPING")) && start > 0) {
        fmt_duration(c->now_ms - start, a, sizeof(a));
        fmt_duration(limit, b, sizeof(b));
        snprintf(buf, len, "%s/%s", a, limit > 0 ? b : "∞");
    } else {
        fmt_when(submit, c->now_ms, buf, len);
    }
}

/* The table of rows r (in the order of `order`, or as given when NULL): the first `show`
 * shown, every one counted. */
static void print_rows(struct cli *c, const struct qrows *r, const size_t *order, long show)
{
    static const char *const h[] = {"ID",    "NAME",  "PROJECT", "USER", "TIER",
                                    "CLASS", "STATE", "GPUS",    "TIME", "NODES/REASON"};
    struct table *t = table_create(h, 10);
    int running = 0, pending = 0, held = 0;

    if (!t)
        return;
    table_set_flags(t, 0, TABLE_RIGHT);
    table_set_flags(t, 1, TABLE_FLEX);
    table_set_flags(t, 9, TABLE_FLEX);
    for (size_t i = 0; i < r->n; i++) {
        const struct qrow *q = &r->v[order ? order[i] : i];
        const char *st = qs(r, q, QS_STATE);
        char tier[140], gpus[100], tm[64], where[1024];

        running += !strcmp(st, "RUNNING") || !strcmp(st, "STARTING") || !strcmp(st, "STOPPING");
        pending += !strcmp(st, "PENDING");
        held += !strcmp(st, "HELD");
        if ((long)i >= show)
            continue; /* counted, not shown */
        tier_text(qs(r, q, QS_TIER), qs(r, q, QS_EFF_TIER), tier, sizeof(tier));
        gpus_text(q->gpus, q->nodes, qs(r, q, QS_GPU_TYPE), gpus, sizeof(gpus));
        time_text(c, st, q->start_ms, q->time_limit_ms, q->submit_ms, tm, sizeof(tm));
        snprintf(where, sizeof(where), "%s",
                 q->s[QS_WHERE] ? qs(r, q, QS_WHERE) : qs(r, q, QS_REASON));
        table_row(t);
        table_cell(t, FMT_PLAIN, "%lld", (long long)q->id);
        table_cell(t, FMT_PLAIN, "%s", qs(r, q, QS_NAME));
        table_cell(t, FMT_PLAIN, "%s", qs(r, q, QS_PROJECT));
        table_cell(t, FMT_PLAIN, "%s", qs(r, q, QS_USER));
        table_cell(t, FMT_PLAIN, "%s", tier);
        table_cell(t, FMT_PLAIN, "%s", qs(r, q, QS_CLASS));
        table_cell(t, fmt_state_color(st), "%s", st);
        table_cell(t, FMT_PLAIN, "%s", gpus);
        table_cell(t, FMT_PLAIN, "%s", tm);
        table_cell(t, FMT_PLAIN, "%s", where);
    }
    if (table_rows(t))
        table_print(t, c->out, c->width, c->color);
    fprintf(c->out, "%d running, %d pending, %d held\n", running, pending, held);
    if ((long)r->n > show)
        fprintf(c->out, "showing the first %ld of %zu (-n %zu shows all)\n", show, r->n, r->n);
    table_destroy(t);
}

void jobs_print_queue(struct cli *c, const json_t *jobs)
{
    jobs_print_queue_head(c, jobs, (long)json_array_size(jobs));
}

void jobs_print_queue_head(struct cli *c, const json_t *jobs, long show)
{
    struct qrows r;
    size_t i;
    json_t *j;

    qrows_init(&r);
    json_array_foreach(jobs, i, j) {
        if (qrow_from_json(&r, j) < 0)
            break;
    }
    print_rows(c, &r, NULL, show);
    qrows_release(&r);
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
    size_t at; /* the job's place in what was given */
    int group, rank;
    int64_t submit, id;
};

static int tier_rank(const json_t *tiers, const char *tier, const char *eff_tier)
{
    const char *t = eff_tier[0] ? eff_tier : tier;
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
        v[i].at = i;
        v[i].group = state_group(jstr(j, "state"));
        v[i].rank = v[i].group == 1 ? tier_rank(json_object_get(tiers, "tiers"), jstr(j, "tier"),
                                                jstr(j, "eff_tier"))
                                    : 0;
        v[i].submit = v[i].group == 1 ? jint(j, "submit_ms", 0) : 0;
        v[i].id = jint(j, "id", 0);
    }
    qsort(v, n, sizeof(*v), cmp_queue);
    out = json_array();
    for (i = 0; i < n; i++)
        json_array_append(out, json_array_get(jobs, v[i].at));
    free(v);
    json_decref(tiers);
    return out;
}

/* The same order over rows: their indices in *order (NULL, the order given, when the
 * tiers cannot be read). 0 or -ENOMEM. */
static int rows_queue_order(struct cli *c, const struct qrows *r, size_t **order)
{
    struct qentry *v = calloc(r->n ? r->n : 1, sizeof(*v));
    json_t *tiers = NULL;

    *order = NULL;
    if (!v)
        return -ENOMEM;
    if (cli_call_quiet(c, "GET", "/v1/tiers", &tiers) != 0) {
        free(v);
        return 0;
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct qrow *q = &r->v[i];
        v[i].at = i;
        v[i].group = state_group(qs(r, q, QS_STATE));
        v[i].rank = v[i].group == 1 ? tier_rank(json_object_get(tiers, "tiers"), qs(r, q, QS_TIER),
                                                qs(r, q, QS_EFF_TIER))
                                    : 0;
        v[i].submit = v[i].group == 1 ? q->submit_ms : 0;
        v[i].id = q->id;
    }
    json_decref(tiers);
    qsort(v, r->n, sizeof(*v), cmp_queue);
    size_t *o = malloc((r->n ? r->n : 1) * sizeof(*o));
    if (o)
        for (size_t i = 0; i < r->n; i++)
            o[i] = v[i].at;
    free(v);
    *order = o;
    return o ? 0 : -ENOMEM;
}

/* What the queue's table reads of each job (GET /v1/jobs?fields=) */
static const char queue_fields[] = "id,name,project,user,tier,eff_tier,class,state,reason,gpus,"
                                   "gpu_type,nodes,submit_ms,start_ms,time_limit_ms,allocation";
enum { QUEUE_READ_MAX = 1000000 };

static const char all_states[] =
    "PENDING,HELD,STARTING,RUNNING,STOPPING,COMPLETED,FAILED,CANCELLED,TIMEOUT,PREEMPTED,"
    "NODE_FAIL";

/* `docket queue`'s table: the rows read from the replies' text as they come (no tree),
 * only the members the table shows asked for; sorted unless by_id. */
static int print_queue(struct cli *c, struct jobs_query *q, bool by_id, long show)
{
    struct dbuf path;
    struct qrows r;
    size_t *order = NULL;
    int rc;

    q->fields = queue_fields;
    qrows_init(&r);
    rc = !jobs_path(q, &path) ? cli_usage_error(c, "filters too long")
                              : cli_each_item(c, path.data, "jobs", q->limit, qrow_from_text, &r);
    dbuf_release(&path);
    if (r.pool.failed || (rc == 0 && !by_id && rows_queue_order(c, &r, &order) < 0))
        rc = cli_fail(c, "out of memory");
    if (rc == 0)
        print_rows(c, &r, order, show);
    free(order);
    qrows_release(&r);
    return rc;
}

/* --json: {"jobs": [rows]} as cli_print_json writes it, each row re-laid out from the
 * reply's text (jtext_indent) rather than parsed into a tree and written again. */
struct json_rows {
    struct cli *c;
    struct dbuf out;
    size_t n;
};

static int json_row(void *arg, const char *text, size_t n)
{
    struct json_rows *j = arg;

    dbuf_puts(&j->out, j->n++ ? ",\n    " : "\n    ");
    if (jtext_indent(text, n, 2, &j->out) == 0)
        return 0;
    /* not as jansson writes it compact (a real it would write otherwise, an escape it
     * would not use): jansson reads it and writes it, nested two levels deep */
    json_error_t jerr;
    json_t *row = json_loadb(text, n, JSON_DECODE_ANY, &jerr);
    char *made =
        row ? json_dumps(row, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY) : NULL;
    json_decref(row);
    if (!made)
        return cli_fail(j->c, "docketd sent a row that is not JSON");
    for (const char *p = made; *p; p++) {
        dbuf_append(&j->out, p, 1);
        if (*p == '\n')
            dbuf_puts(&j->out, "    ");
    }
    free(made);
    return 0;
}

static int print_json_rows(struct cli *c, const struct jobs_query *q)
{
    struct json_rows j = {.c = c};
    struct dbuf path;
    int rc;

    dbuf_init(&j.out, 0);
    dbuf_puts(&j.out, "{\n  \"jobs\": [");
    rc = !jobs_path(q, &path) ? cli_usage_error(c, "filters too long")
                              : cli_each_item(c, path.data, "jobs", q->limit, json_row, &j);
    dbuf_release(&path);
    dbuf_puts(&j.out, j.n ? "\n  ]\n}\n" : "]\n}\n");
    if (rc == 0 && j.out.failed)
        rc = cli_fail(c, "out of memory");
    if (rc == 0)
        fwrite(j.out.data, 1, j.out.len, c->out);
    dbuf_release(&j.out);
    return rc;
}

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
    if (whole_queue)
        q.limit = QUEUE_READ_MAX;
    if (c->json)
        return print_json_rows(c, &q);
    if (!history)
        return print_queue(c, &q, by_id, whole_queue ? show : q.limit);
    if ((rc = jobs_fetch(c, &q, &jobs)))
        return rc;
    jobs_print_history(c, jobs);
    json_decref(jobs);
    return EXIT_OK;
}

int cmd_queue(struct cli *c, int argc, char **argv)
{
    return jobs_list_main(c, argc, argv, false);
}
