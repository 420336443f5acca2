/*
 * reports.c - GET /v1/reports/usage and /v1/reports/capacity (docs/reports.md): the
 * store's aggregates (store.h "Reports") put together with the policy's prices and tier
 * targets and, for fragmentation, the core's nodes and pending jobs as they are now.
 * GPU and CPU time stay integers (device-milliseconds) until the last division, so a
 * report agrees with the runs to the millisecond. A window is counted up to now at most:
 * a run still going counts to now, never to the window's end (a month's capacity once read
 * 498 % with running jobs counted to the end of the month).
 *
 * Who reads what: viewers, operators and admins every row; a project's lead the rows of the
 * projects they lead (by project), nobody else's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/alerts.h"
#include "controller/storage.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/reports.h"
#include "protocol/ops.h"
#include "util/clock.h"
#include "util/str.h"
#include "util/xalloc.h"

#define HOUR_MS 3600000.0

static const char *const outcomes[] = {"COMPLETED", "FAILED",    "CANCELLED",
                                       "TIMEOUT",   "PREEMPTED", "NODE_FAIL"};

/* The row of `key` in the object `rows`, made on first use. */
static json_t *row_of(json_t *rows, const char *key)
{
    json_t *o = json_object_get(rows, key);
    if (o)
        return o;
    json_t *jobs = json_object();
    for (size_t i = 0; i < sizeof outcomes / sizeof outcomes[0]; i++)
        json_object_set_new(jobs, outcomes[i], json_integer(0));
    o = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:f,s:b}", "key", key, "runs", 0, "gpu_ms", 0,
                  "cpu_ms", 0, "preemptions", 0, "preempt_gpu_ms", 0, "idle_gpu_ms", 0, "jobs",
                  jobs, "cost", 0.0, "cost_complete", 1);
    json_object_set_new(rows, key, o);
    return o;
}

static void add_int(json_t *o, const char *k, int64_t v)
{
    json_object_set_new(o, k, json_integer(json_integer_value(json_object_get(o, k)) + v));
}

struct usage_ctx {
    struct ctl *c;
    json_t *rows;
    /* waits of the current key, for its percentiles */
    char wkey[256];
    int64_t *w;
    size_t nw, capw;
};

static int usage_cb(void *arg, const struct store_report_row *r)
{
    struct usage_ctx *u = arg;
    json_t *o = row_of(u->rows, r->key);
    add_int(o, "runs", r->runs);
    add_int(o, "gpu_ms", r->gpu_ms);
    add_int(o, "cpu_ms", r->cpu_ms);
    add_int(o, "preemptions", r->preemptions);
    add_int(o, "preempt_gpu_ms", r->preempt_gpu_ms);
    double price = proto_price_of(ctl_prices(u->c), r->gpu_type);
    if (price < 0 && r->gpu_ms > 0)
        json_object_set_new(o, "cost_complete", json_false());
    else if (price > 0)
        json_object_set_new(o, "cost",
                            json_real(json_real_value(json_object_get(o, "cost")) +
                                      price * (double)r->gpu_ms / HOUR_MS));
    return 0;
}

static int idle_cb(void *arg, const char *key, int64_t idle_gpu_ms)
{
    struct usage_ctx *u = arg;
    add_int(row_of(u->rows, key), "idle_gpu_ms", idle_gpu_ms);
    return 0;
}

static int outcome_cb(void *arg, const char *key, const char *state, int64_t n)
{
    struct usage_ctx *u = arg;
    add_int(json_object_get(row_of(u->rows, key), "jobs"), state, n);
    return 0;
}

/* Nearest-rank percentile of sorted w[0..n). */
static int64_t pct(const int64_t *w, size_t n, double q)
{
    size_t k = (size_t)ceil(q * (double)n);
    return w[k ? k - 1 : 0];
}

static void waits_flush(struct usage_ctx *u)
{
    if (!u->nw)
        return;
    json_t *o = row_of(u->rows, u->wkey);
    json_object_set_new(o, "wait_p50_ms", json_integer(pct(u->w, u->nw, 0.5)));
    json_object_set_new(o, "wait_p95_ms", json_integer(pct(u->w, u->nw, 0.95)));
    json_object_set_new(o, "waits", json_integer((json_int_t)u->nw));
    u->nw = 0;
}

static int wait_cb(void *arg, const char *key, int64_t wait_ms)
{
    struct usage_ctx *u = arg;
    if (u->nw && strcmp(u->wkey, key) != 0)
        waits_flush(u);
    str_copy(u->wkey, sizeof u->wkey, key);
    if (u->nw == u->capw) {
        u->capw = u->capw ? 2 * u->capw : 256;
        u->w = xrealloc(u->w, u->capw * sizeof(*u->w));
    }
    u->w[u->nw++] = wait_ms;
    return 0;
}

static int month_window(const char *m, int64_t *since, int64_t *until);

/* "2026-Q4" -> [its first day, the next quarter's) in UTC ms. */
static int quarter_window(const char *q, int64_t *since, int64_t *until)
{
    int y, n;
    char tail;
    if (!q || strlen(q) != 7 || sscanf(q, "%4d-Q%1d%c", &y, &n, &tail) != 2 || y < 1970 ||
        y > 9999 || n < 1 || n > 4)
        return -1;
    struct tm a = {.tm_year = y - 1900, .tm_mon = (n - 1) * 3, .tm_mday = 1};
    struct tm b = {.tm_year = (n == 4 ? y + 1 : y) - 1900, .tm_mon = (n % 4) * 3, .tm_mday = 1};
    *since = (int64_t)timegm(&a) * 1000;
    *until = (int64_t)timegm(&b) * 1000;
    return 0;
}

/* A calendar period (month=YYYY-MM or quarter=YYYY-Qn) in place of since/until: 1 when
 * one was given (its name in period), 0 when none, -1 after answering 400. */
static int calendar(struct ctl_req *r, int64_t *since, int64_t *until, char *period, size_t len)
{
    const char *m = ctl_query(r, "month"), *q = ctl_query(r, "quarter");
    if (m && q) {
        ctl_reply_errorf(r->c, r->req, 400, "quarter", "give month or quarter, not both");
        return -1;
    }
    if (m && month_window(m, since, until) < 0) {
        ctl_reply_errorf(r->c, r->req, 400, "month", "month must be YYYY-MM (2026-11)");
        return -1;
    }
    if (q && quarter_window(q, since, until) < 0) {
        ctl_reply_errorf(r->c, r->req, 400, "quarter", "quarter must be YYYY-Qn (2026-Q4)");
        return -1;
    }
    if (m || q)
        str_copy(period, len, m ? m : q);
    return m || q ? 1 : 0;
}

/* since_ms/until_ms of the query, or defaults; 0 or -1 after answering 400. */
static int window(struct ctl_req *r, int64_t now, int64_t *since, int64_t *until)
{
    const char *keys[] = {"since_ms", "until_ms"};
    int64_t *out[] = {since, until};
    *since = now - (int64_t)30 * 86400000;
    *until = now;
    for (int i = 0; i < 2; i++) {
        const char *v = ctl_query(r, keys[i]);
        char *end;
        if (!v)
            continue;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (errno || end == v || *end || n < 0) {
            ctl_reply_errorf(r->c, r->req, 400, keys[i], "%s must be milliseconds since 1970",
                             keys[i]);
            return -1;
        }
        *out[i] = n;
    }
    if (*until <= *since) {
        ctl_reply_errorf(r->c, r->req, 400, "until_ms", "until_ms must be after since_ms");
        return -1;
    }
    return 0;
}

static json_t *rows_array(json_t *rows)
{
    json_t *arr = json_array(), *o;
    const char *k;
    json_object_foreach(rows, k, o) {
        int64_t g = json_integer_value(json_object_get(o, "gpu_ms"));
        json_object_set_new(o, "gpu_hours", json_real((double)g / HOUR_MS));
        json_object_set_new(
            o, "cpu_hours",
            json_real((double)json_integer_value(json_object_get(o, "cpu_ms")) / HOUR_MS));
        json_object_set_new(
            o, "preempt_gpu_hours",
            json_real((double)json_integer_value(json_object_get(o, "preempt_gpu_ms")) / HOUR_MS));
        json_object_set_new(
            o, "idle_gpu_hours",
            json_real((double)json_integer_value(json_object_get(o, "idle_gpu_ms")) / HOUR_MS));
        if (!json_object_get(o, "wait_p50_ms")) {
            json_object_set_new(o, "wait_p50_ms", json_null());
            json_object_set_new(o, "wait_p95_ms", json_null());
        }
        json_array_append(arr, o);
    }
    return arr;
}

/* The group of project `name` in the policy into out ("" for none). */
static void group_of(struct ctl *c, const char *name, char *out, size_t len)
{
    struct sched_project_view v;
    int i = sched_project_find(c->sched, name);
    str_copy(out, len,
             i >= 0 && sched_project_get(c->sched, (size_t)i, &v) == 0 ? v.spec.group : "");
}

/* Project rows folded into their groups: sums; the waits' percentiles cannot be summed
 * and are left out. */
static json_t *fold_groups(struct ctl *c, json_t *rows)
{
    json_t *groups = json_object(), *o;
    const char *k;
    static const char *const sums[] = {"runs",        "gpu_ms",         "cpu_ms",
                                       "preemptions", "preempt_gpu_ms", "idle_gpu_ms"};
    json_object_foreach(rows, k, o) {
        char name[SCHED_NAME_MAX];
        group_of(c, k, name, sizeof name);
        json_t *g = row_of(groups, name);
        for (size_t i = 0; i < sizeof sums / sizeof sums[0]; i++)
            add_int(g, sums[i], json_integer_value(json_object_get(o, sums[i])));
        for (size_t i = 0; i < sizeof outcomes / sizeof outcomes[0]; i++)
            add_int(json_object_get(g, "jobs"), outcomes[i],
                    json_integer_value(json_object_get(json_object_get(o, "jobs"), outcomes[i])));
        json_object_set_new(g, "cost",
                            json_real(json_real_value(json_object_get(g, "cost")) +
                                      json_real_value(json_object_get(o, "cost"))));
        if (!json_is_true(json_object_get(o, "cost_complete")))
            json_object_set_new(g, "cost_complete", json_false());
    }
    json_decref(rows);
    return groups;
}

/* Rows a lead may read: those of the projects they lead. */
static json_t *only_led(json_t *rows, json_t *led)
{
    json_t *keep = json_object(), *o;
    const char *k;
    json_object_foreach(rows, k, o) {
        if (json_object_get(led, k))
            json_object_set(keep, k, o);
    }
    json_decref(rows);
    return keep;
}

/* The projects the caller leads ({name: true}), NULL for a reader of every row (viewer,
 * operator, admin); answers 403 and gives NULL with *refused when they may read none. */
static json_t *reader_scope(struct ctl_req *r, bool *refused)
{
    *refused = false;
    enum ctl_role role = r->id.role;
    if (role == CTL_ROLE_ADMIN || role == CTL_ROLE_OPERATOR || role == CTL_ROLE_VIEWER)
        return NULL;
    struct ctl_target t;
    ctl_req_target(r, "", NULL, &t); /* loads the caller's roles once */
    json_t *led = json_object(), *v;
    const char *k;
    json_object_foreach(r->my_projects, k, v) {
        if (strcmp(json_string_value(v), "lead") == 0)
            json_object_set_new(led, k, json_true());
    }
    if (json_object_size(led) == 0) {
        json_decref(led);
        *refused = true;
        ctl_reply_errorf(r->c, r->req, 403, NULL,
                         "user '%s' may not read usage reports: viewers, operators and admins "
                         "read every project's, a project's leads their own",
                         r->id.user);
    }
    return led;
}

/* The policy's GPU prices as {TYPE: price per GPU-hour} (the CLI writes them on each CSV row). */
static json_t *rates_json(const struct proto_prices *p)
{
    json_t *o = json_object();
    for (int i = 0; i < p->n; i++)
        json_object_set_new(o, p->gpu_type[i], json_real(p->per_gpu_hour[i]));
    return o;
}

/* GB-months of each area over the window, from the usage samples (store.h), into the
 * report's `storage` ({PROJECT: {POOL: {...}}}): an area gone since still counts for the
 * time it had data. GB = 10^9 bytes, a month = 30 days. */
#define GB_MONTH_BYTE_MS (1e9 * 30.0 * 86400.0 * 1000.0)

static int gb_months_cb(void *arg, const char *project, const char *pool, double byte_ms)
{
    json_t *storage = arg;
    json_t *p = json_object_get(storage, project);
    if (!p)
        json_object_set_new(storage, project, p = json_object());
    json_t *a = json_object_get(p, pool);
    if (!a)
        json_object_set_new(
            p, pool,
            a = json_pack("{s:I,s:I}", "used_bytes", (json_int_t)-1, "quota_bytes", (json_int_t)0));
    json_object_set_new(a, "gb_months", json_real(byte_ms / GB_MONTH_BYTE_MS));
    return 0;
}

static int storage_gb_months(struct ctl *c, json_t *storage, int64_t since, int64_t until)
{
    const char *project, *pool;
    json_t *pools, *a;
    json_object_foreach(storage, project, pools)
        json_object_foreach(pools, pool, a)
            json_object_set_new(a, "gb_months", json_real(0));
    return store_storage_byte_ms(c->store, since, until, gb_months_cb, storage);
}

/* The usage report over [since, until) (counted up to now at most), by `by` (groups: by
 * project folded into groups), limited to the projects `led` names when not NULL; NULL
 * when the store fails. */
static json_t *usage_report(struct ctl *c, int by, bool groups, const char *byname, int64_t since,
                            int64_t until, int64_t now, const char *period, json_t *led)
{
    int64_t counted = until < now ? until : now; /* a run still going counts to now */
    if (counted <= since)
        counted = since;
    struct usage_ctx u = {.c = c, .rows = json_object()};
    enum store_report_by b = (enum store_report_by)by;
    int rc = store_report_usage(c->store, b, since, counted, usage_cb, &u);
    if (rc == 0)
        rc = store_report_outcomes(c->store, b, since, counted, outcome_cb, &u);
    if (rc == 0)
        rc = store_report_waits(c->store, b, since, counted, wait_cb, &u);
    if (rc == 0)
        rc = store_report_idle(c->store, b, since, counted, idle_cb, &u);
    waits_flush(&u);
    free(u.w);
    if (rc < 0) {
        json_decref(u.rows);
        return NULL;
    }
    /* each project's storage by pool: GB-months over the window, and its usage now */
    json_t *storage = by == STORE_BY_PROJECT && !groups ? ctl_storage_usage_json(c) : NULL;
    if (storage && storage_gb_months(c, storage, since, counted) < 0) {
        json_decref(storage);
        json_decref(u.rows);
        return NULL;
    }
    if (led) {
        u.rows = only_led(u.rows, led);
        storage = storage ? only_led(storage, led) : NULL;
    }
    if (groups)
        u.rows = fold_groups(c, u.rows);
    const struct proto_prices *p = ctl_prices(c);
    json_t *o =
        json_pack("{s:s,s:I,s:I,s:I,s:o,s:s,s:o,s:o}", "by", byname, "since_ms", (json_int_t)since,
                  "until_ms", (json_int_t)until, "counted_until_ms", (json_int_t)counted, "period",
                  period[0] ? json_string(period) : json_null(), "currency", p->currency,
                  "gpu_rates", rates_json(p), "rows", rows_array(u.rows));
    json_decref(u.rows);
    if (storage)
        json_object_set_new(o, "storage", storage);
    return o;
}

void h_report_usage(struct ctl_req *r)
{
    int64_t now = clock_now_ms(), since, until;
    const char *byname = ctl_query(r, "by");
    bool groups = byname && strcmp(byname, "group") == 0, refused;
    int by = store_report_by_parse(groups || !byname ? "project" : byname);
    char period[16] = "";
    if (by < 0) {
        ctl_reply_errorf(r->c, r->req, 400, "by",
                         "by must be project, group, user, tier, class or gpu-type");
        return;
    }
    int cal = calendar(r, &since, &until, period, sizeof period);
    if (cal < 0 || (cal == 0 && window(r, now, &since, &until) < 0))
        return;
    json_t *led = reader_scope(r, &refused);
    if (refused)
        return;
    if (led && (by != STORE_BY_PROJECT || groups)) {
        json_decref(led);
        ctl_reply_errorf(r->c, r->req, 403, "by",
                         "a lead reads the report of their own projects by project only");
        return;
    }
    json_t *o =
        usage_report(r->c, by, groups, byname ? byname : "project", since, until, now, period, led);
    json_decref(led);
    if (!o)
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
    else
        ctl_reply_json(r->c, r->req, 200, o);
}

json_t *ctl_report_month(struct ctl *c, const char *month, int64_t now)
{
    int64_t since, until;
    if (month_window(month, &since, &until) < 0)
        return NULL;
    return usage_report(c, STORE_BY_PROJECT, false, "project", since, until, now, month, NULL);
}

/* ------------------------------------------------------------------------------------ */
/* Capacity                                                                              */

/* "2026-11" -> [first day, first day of the next month) in UTC ms. */
static int month_window(const char *m, int64_t *since, int64_t *until)
{
    int y, mo;
    char tail;
    if (!m || sscanf(m, "%4d-%2d%c", &y, &mo, &tail) != 2 || y < 1970 || y > 9999 || mo < 1 ||
        mo > 12 || strlen(m) != 7)
        return -1;
    struct tm a = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = 1};
    struct tm b = {.tm_year = (mo == 12 ? y + 1 : y) - 1900, .tm_mon = mo % 12, .tm_mday = 1};
    *since = (int64_t)timegm(&a) * 1000;
    *until = (int64_t)timegm(&b) * 1000;
    return 0;
}

struct cap_tier {
    char tier[SCHED_NAME_MAX];
    int64_t target_ms;
    int64_t demand, late; /* GPU-weighted waits begun in the month, and those past target */
    int64_t waits, late_waits;
};

struct cap_ctx {
    int64_t since, until, now;
    struct cap_tier t[SCHED_MAX_TIERS];
    int nt;
    struct sweep {
        int64_t at;
        int tier;
        int d;
        int64_t gpus;
    } * ev;
    size_t nev, capev;
    json_t *types, *repeats;
    bool hide_commands; /* the caller may not read other users' commands (authz.c) */
};

static int tier_index(struct cap_ctx *k, const char *tier)
{
    for (int i = 0; i < k->nt; i++)
        if (strcmp(k->t[i].tier, tier) == 0)
            return i;
    if (k->nt == SCHED_MAX_TIERS)
        return -1;
    str_copy(k->t[k->nt].tier, sizeof k->t[0].tier, tier);
    return k->nt++;
}

static void push(struct cap_ctx *k, int64_t at, int tier, int d, int64_t gpus)
{
    if (k->nev == k->capev) {
        k->capev = k->capev ? 2 * k->capev : 1024;
        k->ev = xrealloc(k->ev, k->capev * sizeof(*k->ev));
    }
    k->ev[k->nev++] = (struct sweep){at, tier, d, gpus};
}

static int interval_cb(void *arg, const char *tier, int64_t gpus, int64_t b, int64_t e)
{
    struct cap_ctx *k = arg;
    int t = tier_index(k, tier);
    if (t < 0)
        return 0;
    push(k, b > k->since ? b : k->since, t, 1, gpus);
    push(k, e < k->until ? e : k->until, t, -1, gpus);
    if (b >= k->since) {
        int64_t weight = gpus > 0 ? gpus : 1;
        k->t[t].demand += weight;
        k->t[t].waits++;
        if (k->t[t].target_ms > 0 && e - b > k->t[t].target_ms) {
            k->t[t].late += weight;
            k->t[t].late_waits++;
        }
    }
    return 0;
}

static int sweep_cmp(const void *a, const void *b)
{
    const struct sweep *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->d - y->d; /* ends before starts at the same instant */
}

static json_t *tiers_json(struct cap_ctx *k)
{
    int64_t cur[SCHED_MAX_TIERS] = {0}, curg[SCHED_MAX_TIERS] = {0};
    int64_t peak[SCHED_MAX_TIERS] = {0}, peakg[SCHED_MAX_TIERS] = {0}, at[SCHED_MAX_TIERS] = {0};
    if (k->nev)
        qsort(k->ev, k->nev, sizeof(*k->ev), sweep_cmp);
    for (size_t i = 0; i < k->nev; i++) {
        int t = k->ev[i].tier;
        cur[t] += k->ev[i].d;
        curg[t] += k->ev[i].d * k->ev[i].gpus;
        if (cur[t] > peak[t]) {
            peak[t] = cur[t];
            at[t] = k->ev[i].at;
        }
        if (curg[t] > peakg[t])
            peakg[t] = curg[t];
    }
    json_t *arr = json_array();
    for (int t = 0; t < k->nt; t++) {
        const struct cap_tier *x = &k->t[t];
        json_t *share = x->target_ms > 0 && x->demand > 0
                            ? json_real((double)x->late / (double)x->demand)
                            : json_null();
        json_array_append_new(
            arr, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "tier", x->tier,
                           "peak_pending_jobs", (json_int_t)peak[t], "peak_pending_gpus",
                           (json_int_t)peakg[t], "peak_at_ms", (json_int_t)at[t], "target_ms",
                           (json_int_t)x->target_ms, "waits", (json_int_t)x->waits, "late_waits",
                           (json_int_t)x->late_waits, "unserved_share", share));
    }
    return arr;
}

static int type_cb(void *arg, const struct store_report_row *r)
{
    struct cap_ctx *k = arg;
    json_t *o = json_object_get(k->types, r->key);
    if (!o) {
        o = json_pack("{s:s,s:I,s:I}", "gpu_type", r->key[0] ? r->key : "-", "gpus", 0, "gpu_ms",
                      0);
        json_object_set_new(k->types, r->key, o);
    }
    add_int(o, "gpu_ms", r->gpu_ms);
    return 0;
}

static int repeat_cb(void *arg, const char *project, const char *cmd, int64_t jobs, int64_t g)
{
    struct cap_ctx *k = arg;
    json_array_append_new(k->repeats,
                          json_pack("{s:s,s:s,s:I,s:f}", "project", project, "command",
                                    k->hide_commands ? "<hidden>" : cmd, "jobs", (json_int_t)jobs,
                                    "gpu_hours", (double)g / HOUR_MS));
    return 0;
}

/* GPU capacity per type (the nodes known now) and utilisation over the elapsed month. */
static json_t *types_json(struct ctl *c, struct cap_ctx *k)
{
    for (uint32_t i = 0; i < sched_node_count(c->sched); i++) {
        struct sched_node_view v;
        if (sched_node_get(c->sched, i, &v) < 0 || v.gpus == 0)
            continue;
        json_t *o = json_object_get(k->types, v.gpu_type);
        if (!o) {
            o = json_pack("{s:s,s:I,s:I}", "gpu_type", v.gpu_type, "gpus", 0, "gpu_ms", 0);
            json_object_set_new(k->types, v.gpu_type, o);
        }
        add_int(o, "gpus", v.gpus);
    }
    int64_t span = (k->until < k->now ? k->until : k->now) - k->since;
    json_t *arr = json_array(), *o;
    const char *key;
    json_object_foreach(k->types, key, o) {
        double used = (double)json_integer_value(json_object_get(o, "gpu_ms")) / HOUR_MS;
        double cap = span > 0 ? (double)json_integer_value(json_object_get(o, "gpus")) *
                                    (double)span / HOUR_MS
                              : 0;
        json_object_set_new(o, "used_gpu_hours", json_real(used));
        json_object_set_new(o, "capacity_gpu_hours", json_real(cap));
        json_object_set_new(o, "utilisation", cap > 0 ? json_real(used / cap) : json_null());
        json_array_append(arr, o);
    }
    return arr;
}

/* Fragmentation now: free GPUs on usable nodes that no waiting job's shape fits. */
struct shape {
    const char *type;
    int gpus, cpus;
    int64_t mem;
};

static json_t *fragmentation_json(struct ctl *c, int64_t now)
{
    enum { MAX_SHAPES = 4096 };
    struct shape *sh = xcalloc(MAX_SHAPES, sizeof(*sh));
    size_t ns = 0;
    for (size_t slot = 0; slot < sched_job_slots(c->sched) && ns < MAX_SHAPES; slot++) {
        struct sched_job_view v;
        if (sched_job_at(c->sched, slot, &v) < 0 || v.state != SCHED_PENDING ||
            v.reason == SCHED_R_HELD || v.reason == SCHED_R_DEPENDENCY ||
            v.reason == SCHED_R_BEGIN_TIME || v.gpus_per_node == 0)
            continue;
        struct shape s = {v.gpu_type ? v.gpu_type : "", v.gpus_per_node, v.cpus_per_node,
                          v.mem_mb_per_node};
        size_t i = 0;
        while (i < ns && !(sh[i].gpus == s.gpus && sh[i].cpus == s.cpus && sh[i].mem == s.mem &&
                           strcmp(sh[i].type, s.type) == 0))
            i++;
        if (i == ns)
            sh[ns++] = s;
    }
    int64_t free_total = 0, stranded = 0;
    json_t *nodes = json_array();
    for (uint32_t i = 0; i < sched_node_count(c->sched); i++) {
        struct sched_node_view v;
        if (sched_node_get(c->sched, i, &v) < 0 || v.state != SCHED_NODE_UP)
            continue;
        int free_g = v.gpus - v.gpus_used;
        if (free_g <= 0)
            continue;
        free_total += free_g;
        bool fits = false;
        for (size_t j = 0; j < ns && !fits; j++)
            fits = sh[j].gpus <= free_g && sh[j].cpus <= v.cpus - v.cpus_used &&
                   (sh[j].mem == 0 || sh[j].mem <= v.mem_mb - v.mem_used_mb) &&
                   (!sh[j].type[0] || strcmp(sh[j].type, v.gpu_type) == 0);
        if (!fits && ns > 0) {
            stranded += free_g;
            json_array_append_new(nodes,
                                  json_pack("{s:s,s:i}", "node", v.name, "free_gpus", free_g));
        }
    }
    free(sh);
    return json_pack("{s:I,s:I,s:I,s:I,s:o}", "at_ms", (json_int_t)now, "free_gpus",
                     (json_int_t)free_total, "stranded_gpus", (json_int_t)stranded,
                     "waiting_shapes", (json_int_t)ns, "nodes", nodes);
}

void h_report_capacity(struct ctl_req *r)
{
    struct cap_ctx k = {.now = clock_now_ms()};
    struct ctl_target all = {NULL, NULL, CTL_PROLE_NONE}; /* every project's jobs */
    k.hide_commands = !ctl_authz_sees_job_private(&r->id, &all);
    const char *m = ctl_query(r, "month");
    if (month_window(m, &k.since, &k.until) < 0) {
        ctl_reply_errorf(r->c, r->req, 400, "month", "month must be YYYY-MM (2026-11)");
        return;
    }
    const struct sched_policy *p = sched_get_policy(r->c->sched);
    for (int i = 0; i < p->ntiers; i++) {
        str_copy(k.t[i].tier, sizeof k.t[i].tier, p->tiers[i].name);
        k.t[i].target_ms = p->tiers[i].starve_after_ms;
    }
    k.nt = p->ntiers;
    k.types = json_object();
    k.repeats = json_array();
    int64_t counted = k.until < k.now ? k.until : k.now; /* running jobs count to now */
    if (counted < k.since)
        counted = k.since;
    int rc = store_report_wait_intervals(r->c->store, k.since, k.until, k.now, interval_cb, &k);
    if (rc == 0 && counted > k.since)
        rc = store_report_usage(r->c->store, STORE_BY_GPU_TYPE, k.since, counted, type_cb, &k);
    if (rc == 0)
        rc = store_report_repeats(r->c->store, k.since, k.until, 10, repeat_cb, &k);
    if (rc < 0) {
        free(k.ev);
        json_decref(k.types);
        json_decref(k.repeats);
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return;
    }
    json_t *o = json_pack("{s:s,s:I,s:I,s:o,s:o,s:o,s:o}", "month", m, "since_ms",
                          (json_int_t)k.since, "until_ms", (json_int_t)k.until, "gpu_types",
                          types_json(r->c, &k), "tiers", tiers_json(&k), "fragmentation",
                          fragmentation_json(r->c, k.now), "repeats", k.repeats);
    free(k.ev);
    json_decref(k.types);
    ctl_reply_json(r->c, r->req, 200, o);
}
