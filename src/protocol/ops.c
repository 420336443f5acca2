/*
 * ops.c - the `alerts` and `prices` sections of the policy document (ops.h;
 * docs/alerts.md, docs/reports.md): parsed whole into plain structs, every error naming
 * its field, and written back in the same shape.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "protocol/ops.h"
#include "util/str.h"

#define DAY_MS ((int64_t)24 * 3600 * 1000)

static const char *const sev_names[PROTO_SEV_COUNT] = {"critical", "major", "info", "warning"};
static const char *const kind_names[PROTO_AK_COUNT] = {
    "node_unreachable", "node_unhealthy",     "reclaim_failed", "job_failed",
    "queue_wait",       "project_over_quota", "disk_low",       "cycle_time",
    "version_skew",     "gpu_idle",           "storage_full"};

const char *proto_severity_name(enum proto_severity s)
{
    return s < PROTO_SEV_COUNT ? sev_names[s] : "?";
}

int proto_severity_parse(const char *s)
{
    for (int i = 0; i < PROTO_SEV_COUNT; i++)
        if (strcmp(s, sev_names[i]) == 0)
            return i;
    return -1;
}

const char *proto_alert_kind_name(enum proto_alert_kind k)
{
    return k < PROTO_AK_COUNT ? kind_names[k] : "?";
}

bool proto_alert_kind_is_event(enum proto_alert_kind k)
{
    return k == PROTO_AK_JOB_FAILED || k == PROTO_AK_RECLAIM_FAILED;
}

int proto_alert_kind_parse(const char *s)
{
    for (int i = 0; i < PROTO_AK_COUNT; i++)
        if (strcmp(s, kind_names[i]) == 0)
            return i;
    return -1;
}

void proto_alerts_defaults(struct proto_alerts *a)
{
    memset(a, 0, sizeof(*a));
    a->interval_ms = 10000;
    a->attempts = 5;
    a->backoff_ms = 1000;
    a->max_backoff_ms = 60000;
    a->timeout_ms = 10000;
    a->keep_ms = 30 * DAY_MS;
    a->keep_rows = 100000;
}

/* "PATH.KEY" into f. */
static const char *fld(char *f, size_t len, const char *path, const char *key)
{
    snprintf(f, len, "%s.%s", path, key);
    return f;
}

static int get_dur(const json_t *o, const char *key, const char *path, int64_t min, int64_t max,
                   int64_t *out, struct proto_error *err)
{
    json_t *v = json_object_get(o, key);
    char f[160];
    if (!v)
        return 0;
    int rc = proto_get_duration(v, fld(f, sizeof f, path, key), max, out, err);
    if (rc == 0 && *out < min)
        return proto_errorf(err, 400, NULL, f, "%s must be at least %lldms", f, (long long)min);
    return rc;
}

static int get_str(const json_t *o, const char *key, const char *path, char *out, size_t cap,
                   struct proto_error *err)
{
    json_t *v = json_object_get(o, key);
    char f[160];
    if (!v)
        return 0;
    fld(f, sizeof f, path, key);
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= cap)
        return proto_errorf(err, 400, NULL, f, "%s must be a string of 1 to %zu characters", f,
                            cap - 1);
    const char *s = json_string_value(v);
    for (const char *p = s; *p; p++)
        if (!isprint((unsigned char)*p))
            return proto_errorf(err, 400, NULL, f, "%s must be printable", f);
    str_copy(out, cap, s);
    return 0;
}

int proto_check_url(const char *url, const char *field, struct proto_error *err)
{
    const char *host = str_has_prefix(url, "http://")    ? url + 7
                       : str_has_prefix(url, "https://") ? url + 8
                                                         : NULL;
    if (!host)
        return proto_errorf(err, 400, NULL, field, "%s must start with http:// or https://", field);
    size_t hl = strcspn(host, "/?#");
    if (hl == 0 || host[0] == ':')
        return proto_errorf(err, 400, NULL, field, "%s names no host", field);
    if (memchr(host, '@', hl))
        return proto_errorf(err, 400, NULL, field,
                            "%s must not carry a user or password (use secret)", field);
    for (const char *p = url; *p; p++)
        if (!isgraph((unsigned char)*p))
            return proto_errorf(err, 400, NULL, field,
                                "%s must be printable, without spaces (percent-encode them)",
                                field);
    return 0;
}

/* o must be an object of the `known` fields only. */
static int obj_fields(const json_t *o, const char *path, const char *const *known,
                      struct proto_error *err)
{
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    return proto_check_fields(o, path, known, err);
}

static int parse_threshold(const json_t *o, const char *path, struct proto_alert_rule *r,
                           struct proto_error *err)
{
    json_t *v = json_object_get(o, "threshold");
    char f[160];
    fld(f, sizeof f, path, "threshold");
    bool wants = r->kind == PROTO_AK_QUEUE_WAIT || r->kind == PROTO_AK_CYCLE_TIME ||
                 r->kind == PROTO_AK_DISK_LOW || r->kind == PROTO_AK_STORAGE_FULL;
    if (!wants && v)
        return proto_errorf(err, 400, NULL, f, "%s: a %s rule takes no threshold", f,
                            kind_names[r->kind]);
    if (!wants)
        return 0;
    if (!v)
        return proto_errorf(err, 400, NULL, f, "%s is required for a %s rule", f,
                            kind_names[r->kind]);
    if (r->kind == PROTO_AK_DISK_LOW) {
        double d = json_number_value(v);
        if (!json_is_number(v) || !(d > 0 && d < 100))
            return proto_errorf(err, 400, NULL, f,
                                "%s must be a percentage of free space "
                                "between 0 and 100",
                                f);
        r->threshold_pct = d;
        return 0;
    }
    if (r->kind == PROTO_AK_STORAGE_FULL) {
        double d = json_number_value(v);
        if (!json_is_number(v) || !(d > 0 && d <= 100))
            return proto_errorf(err, 400, NULL, f,
                                "%s must be a percentage of used space above 0, at most 100", f);
        r->threshold_pct = d;
        return 0;
    }
    int rc = proto_get_duration(v, f, 365 * DAY_MS, &r->threshold_ms, err);
    if (rc == 0 && r->threshold_ms <= 0)
        return proto_errorf(err, 400, NULL, f, "%s must be more than 0", f);
    return rc;
}

static int parse_rule(const json_t *o, const char *path, struct proto_alert_rule *r,
                      struct proto_error *err)
{
    static const char *const known[] = {"name",      "kind", "severity", "for",
                                        "threshold", "tier", NULL};
    char f[160];
    int rc;
    memset(r, 0, sizeof(*r));
    if ((rc = obj_fields(o, path, known, err)) < 0)
        return rc;
    const char *req[] = {"name", "kind", "severity"};
    for (int i = 0; i < 3; i++)
        if (!json_object_get(o, req[i]))
            return proto_errorf(err, 400, NULL, fld(f, sizeof f, path, req[i]), "%s is required",
                                f);
    if ((rc = proto_get_name(json_object_get(o, "name"), fld(f, sizeof f, path, "name"), r->name,
                             err)) < 0)
        return rc;
    const char *k = json_string_value(json_object_get(o, "kind"));
    int kind = k ? proto_alert_kind_parse(k) : -1;
    if (kind < 0)
        return proto_errorf(err, 400, NULL, fld(f, sizeof f, path, "kind"),
                            "%s must be one of node_unreachable, node_unhealthy, reclaim_failed,"
                            " job_failed, queue_wait, project_over_quota, disk_low, cycle_time,"
                            " version_skew, gpu_idle, storage_full",
                            f);
    r->kind = (enum proto_alert_kind)kind;
    const char *s = json_string_value(json_object_get(o, "severity"));
    int sev = s ? proto_severity_parse(s) : -1;
    if (sev < 0)
        return proto_errorf(err, 400, NULL, fld(f, sizeof f, path, "severity"),
                            "%s must be critical, major, warning or info", f);
    r->severity = (enum proto_severity)sev;
    /* events stay firing an hour by default; conditions fire at once */
    r->for_ms = proto_alert_kind_is_event(r->kind) ? 3600000 : 0;
    if ((rc = get_dur(o, "for", path, 0, 30 * DAY_MS, &r->for_ms, err)) < 0 ||
        (rc = parse_threshold(o, path, r, err)) < 0)
        return rc;
    json_t *t = json_object_get(o, "tier");
    if (t && r->kind != PROTO_AK_QUEUE_WAIT)
        return proto_errorf(err, 400, NULL, fld(f, sizeof f, path, "tier"),
                            "%s: only a queue_wait rule takes a tier", f);
    if (t && (rc = proto_get_name(t, fld(f, sizeof f, path, "tier"), r->tier, err)) < 0)
        return rc;
    return 0;
}

static int parse_severities(const json_t *v, const char *f, unsigned *out, struct proto_error *err)
{
    size_t i;
    json_t *s;
    *out = 0;
    if (json_is_string(v)) {
        int sev = proto_severity_parse(json_string_value(v));
        if (sev < 0)
            return proto_errorf(err, 400, NULL, f, "%s must be critical, major, warning or info",
                                f);
        *out = 1u << sev;
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) == 0)
        return proto_errorf(err, 400, NULL, f, "%s must be a severity or a list of them", f);
    json_array_foreach(v, i, s) {
        int sev = json_is_string(s) ? proto_severity_parse(json_string_value(s)) : -1;
        if (sev < 0)
            return proto_errorf(err, 400, NULL, f,
                                "%s[%zu] must be critical, major, warning or info", f, i);
        *out |= 1u << sev;
    }
    return 0;
}

static int parse_route(const json_t *o, const char *path, struct proto_alert_route *r,
                       struct proto_error *err)
{
    static const char *const known[] = {"severities", "webhook", "shape", "secret",
                                        "log",        "reports", NULL};
    char f[160];
    int rc;
    memset(r, 0, sizeof(*r));
    if ((rc = obj_fields(o, path, known, err)) < 0)
        return rc;
    json_t *sev = json_object_get(o, "severities");
    if (!sev)
        return proto_errorf(err, 400, NULL, fld(f, sizeof f, path, "severities"), "%s is required",
                            f);
    if ((rc = parse_severities(sev, fld(f, sizeof f, path, "severities"), &r->severities, err)) < 0)
        return rc;
    json_t *log = json_object_get(o, "log");
    if (log && (rc = proto_get_bool(log, fld(f, sizeof f, path, "log"), &r->log, err)) < 0)
        return rc;
    json_t *reports = json_object_get(o, "reports");
    if (reports &&
        (rc = proto_get_bool(reports, fld(f, sizeof f, path, "reports"), &r->reports, err)) < 0)
        return rc;
    bool hook = json_object_get(o, "webhook") != NULL;
    if (hook == r->log)
        return proto_errorf(err, 400, NULL, path, "%s needs either webhook or log: true", path);
    if (!hook)
        return json_object_get(o, "shape") || json_object_get(o, "secret")
                   ? proto_errorf(err, 400, NULL, path,
                                  "%s: shape and secret are for webhook routes", path)
                   : 0;
    if ((rc = get_str(o, "webhook", path, r->url, sizeof r->url, err)) < 0 ||
        (rc = proto_check_url(r->url, fld(f, sizeof f, path, "webhook"), err)) < 0)
        return rc;
    const char *shape = json_string_value(json_object_get(o, "shape"));
    if (json_object_get(o, "shape") &&
        (!shape || (strcmp(shape, "generic") != 0 && strcmp(shape, "slack") != 0)))
        return proto_errorf(err, 400, NULL, fld(f, sizeof f, path, "shape"),
                            "%s must be generic or slack", f);
    r->shape = shape && strcmp(shape, "slack") == 0 ? PROTO_SHAPE_SLACK : PROTO_SHAPE_GENERIC;
    if ((rc = get_str(o, "secret", path, r->secret, sizeof r->secret, err)) < 0)
        return rc;
    if (r->secret[0] && strlen(r->secret) < 16)
        return proto_errorf(err, 400, NULL, fld(f, sizeof f, path, "secret"),
                            "%s must be at least 16 characters", f);
    return 0;
}

static int parse_list(const json_t *v, const char *name, int max, void *out, size_t size, int *n,
                      int (*one)(const json_t *, const char *, void *, struct proto_error *),
                      struct proto_error *err)
{
    char f[64];
    snprintf(f, sizeof f, "alerts.%s", name);
    if (!json_is_array(v) || json_array_size(v) > (size_t)max)
        return proto_errorf(err, 400, NULL, f, "%s must be a list of at most %d", f, max);
    for (size_t i = 0; i < json_array_size(v); i++) {
        char path[64];
        snprintf(path, sizeof path, "%s[%zu]", f, i);
        int rc = one(json_array_get(v, i), path, (char *)out + i * size, err);
        if (rc < 0)
            return rc;
    }
    *n = (int)json_array_size(v);
    return 0;
}

static int rule_one(const json_t *o, const char *path, void *r, struct proto_error *err)
{
    return parse_rule(o, path, r, err);
}

static int route_one(const json_t *o, const char *path, void *r, struct proto_error *err)
{
    return parse_route(o, path, r, err);
}

static int parse_delivery(const json_t *o, struct proto_alerts *a, struct proto_error *err)
{
    static const char *const known[] = {"attempts", "backoff", "max_backoff", "timeout", NULL};
    const char *p = "alerts.delivery";
    int rc;
    int64_t n;
    if ((rc = obj_fields(o, p, known, err)) < 0)
        return rc;
    json_t *v = json_object_get(o, "attempts");
    if (v && (rc = proto_get_int(v, "alerts.delivery.attempts", 1, 20, &n, err)) < 0)
        return rc;
    if (v)
        a->attempts = (int)n;
    if ((rc = get_dur(o, "backoff", p, 100, 3600000, &a->backoff_ms, err)) < 0 ||
        (rc = get_dur(o, "max_backoff", p, 100, DAY_MS, &a->max_backoff_ms, err)) < 0 ||
        (rc = get_dur(o, "timeout", p, 100, 120000, &a->timeout_ms, err)) < 0)
        return rc;
    if (a->max_backoff_ms < a->backoff_ms)
        return proto_errorf(err, 400, NULL, "alerts.delivery.max_backoff",
                            "alerts.delivery.max_backoff must be at least backoff");
    return 0;
}

static int parse_history(const json_t *o, struct proto_alerts *a, struct proto_error *err)
{
    static const char *const known[] = {"keep", "max_rows", NULL};
    const char *p = "alerts.history";
    int rc;
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, p, "%s must be an object", p);
    if ((rc = proto_check_fields(o, p, known, err)) < 0 ||
        (rc = get_dur(o, "keep", p, 60000, 3650 * DAY_MS, &a->keep_ms, err)) < 0)
        return rc;
    json_t *v = json_object_get(o, "max_rows");
    return v ? proto_get_int(v, "alerts.history.max_rows", 10, 10000000, &a->keep_rows, err) : 0;
}

int proto_alerts_parse(const json_t *v, struct proto_alerts *out, struct proto_error *err)
{
    static const char *const known[] = {"rules", "routes", "interval", "delivery", "history", NULL};
    struct proto_alerts a;
    json_t *x;
    int rc;
    proto_alerts_defaults(&a);
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, "alerts", "alerts must be an object");
    if ((rc = proto_check_fields(v, "alerts", known, err)) < 0)
        return rc;
    if ((x = json_object_get(v, "rules")) &&
        (rc = parse_list(x, "rules", PROTO_MAX_ALERT_RULES, a.rules, sizeof a.rules[0], &a.nrules,
                         rule_one, err)) < 0)
        return rc;
    for (int i = 0; i < a.nrules; i++)
        for (int k = 0; k < i; k++)
            if (strcmp(a.rules[k].name, a.rules[i].name) == 0) {
                char f[64];
                snprintf(f, sizeof f, "alerts.rules[%d].name", i);
                return proto_errorf(err, 400, NULL, f, "duplicate rule '%s'", a.rules[i].name);
            }
    if ((x = json_object_get(v, "routes")) &&
        (rc = parse_list(x, "routes", PROTO_MAX_ALERT_ROUTES, a.routes, sizeof a.routes[0],
                         &a.nroutes, route_one, err)) < 0)
        return rc;
    if ((rc = get_dur(v, "interval", "alerts", 1000, 3600000, &a.interval_ms, err)) < 0)
        return rc;
    if ((x = json_object_get(v, "delivery")) && (rc = parse_delivery(x, &a, err)) < 0)
        return rc;
    if ((x = json_object_get(v, "history")) && (rc = parse_history(x, &a, err)) < 0)
        return rc;
    *out = a;
    return 0;
}

int proto_prices_parse(const json_t *v, struct proto_prices *out, struct proto_error *err)
{
    struct proto_prices p;
    const char *k;
    json_t *x;
    memset(&p, 0, sizeof p);
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, "prices", "prices must be an object");
    json_object_foreach((json_t *)v, k, x) {
        char f[128];
        snprintf(f, sizeof f, "prices.%.64s", k);
        if (strcmp(k, "currency") == 0) {
            const char *c = json_string_value(x);
            if (!c || strlen(c) < 1 || strlen(c) > 7 || !str_is_name(c))
                return proto_errorf(err, 400, NULL, f, "%s must be a short name (EUR)", f);
            str_copy(p.currency, sizeof p.currency, c);
            continue;
        }
        if (p.n == PROTO_MAX_PRICES)
            return proto_errorf(err, 400, NULL, "prices", "prices: at most %d GPU types",
                                PROTO_MAX_PRICES);
        if (!str_is_name(k) || strlen(k) >= PROTO_NAME_MAX)
            return proto_errorf(err, 400, NULL, f, "%s: invalid GPU type name", f);
        double d = json_number_value(x);
        if (!json_is_number(x) || !(d >= 0 && d <= 1e6))
            return proto_errorf(err, 400, NULL, f,
                                "%s must be a price per GPU-hour between 0 and 1000000", f);
        str_copy(p.gpu_type[p.n], PROTO_NAME_MAX, k);
        p.per_gpu_hour[p.n++] = d;
    }
    *out = p;
    return 0;
}

double proto_price_of(const struct proto_prices *p, const char *gpu_type)
{
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->gpu_type[i], gpu_type) == 0)
            return p->per_gpu_hour[i];
    return -1;
}

/* ------------------------------------------------------------------------------------ */

static json_t *dur(int64_t ms)
{
    char b[32];
    if (ms % 1000 == 0)
        snprintf(b, sizeof b, "%llds", (long long)(ms / 1000));
    else
        snprintf(b, sizeof b, "%lldms", (long long)ms);
    return json_string(b);
}

static json_t *rule_json(const struct proto_alert_rule *r)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:o}", "name", r->name, "kind", kind_names[r->kind],
                          "severity", sev_names[r->severity], "for", dur(r->for_ms));
    if (r->kind == PROTO_AK_DISK_LOW || r->kind == PROTO_AK_STORAGE_FULL)
        json_object_set_new(o, "threshold", json_real(r->threshold_pct));
    else if (r->threshold_ms)
        json_object_set_new(o, "threshold", dur(r->threshold_ms));
    if (r->tier[0])
        json_object_set_new(o, "tier", json_string(r->tier));
    return o;
}

/* "https://hooks.example.com/…": the host stays, the path (often the credential) goes. */
static json_t *url_redacted(const char *url)
{
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    size_t n = (size_t)(host - url) + strcspn(host, "/?#");
    char b[PROTO_URL_MAX + 8];
    snprintf(b, sizeof b, "%.*s/<hidden>", (int)n, url);
    return json_string(b);
}

static json_t *route_json(const struct proto_alert_route *r, bool redact)
{
    json_t *sev = json_array();
    for (int s = 0; s < PROTO_SEV_COUNT; s++)
        if (r->severities & (1u << s))
            json_array_append_new(sev, json_string(sev_names[s]));
    json_t *o = json_pack("{s:o}", "severities", sev);
    if (r->reports)
        json_object_set_new(o, "reports", json_true());
    if (r->log) {
        json_object_set_new(o, "log", json_true());
        return o;
    }
    json_object_set_new(o, "webhook", redact ? url_redacted(r->url) : json_string(r->url));
    json_object_set_new(o, "shape",
                        json_string(r->shape == PROTO_SHAPE_SLACK ? "slack" : "generic"));
    if (r->secret[0])
        json_object_set_new(o, "secret", json_string(redact ? "<hidden>" : r->secret));
    return o;
}

json_t *proto_alerts_json(const struct proto_alerts *a, bool redact)
{
    json_t *rules = json_array(), *routes = json_array();
    for (int i = 0; i < a->nrules; i++)
        json_array_append_new(rules, rule_json(&a->rules[i]));
    for (int i = 0; i < a->nroutes; i++)
        json_array_append_new(routes, route_json(&a->routes[i], redact));
    return json_pack("{s:o,s:o,s:o,s:{s:i,s:o,s:o,s:o},s:{s:o,s:I}}", "rules", rules, "routes",
                     routes, "interval", dur(a->interval_ms), "delivery", "attempts", a->attempts,
                     "backoff", dur(a->backoff_ms), "max_backoff", dur(a->max_backoff_ms),
                     "timeout", dur(a->timeout_ms), "history", "keep", dur(a->keep_ms), "max_rows",
                     (json_int_t)a->keep_rows);
}

json_t *proto_prices_json(const struct proto_prices *p)
{
    json_t *o = json_object();
    for (int i = 0; i < p->n; i++)
        json_object_set_new(o, p->gpu_type[i], json_real(p->per_gpu_hour[i]));
    if (p->currency[0])
        json_object_set_new(o, "currency", json_string(p->currency));
    return o;
}
