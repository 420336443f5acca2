/*
 * ops.h - the operator's sections of the policy document (docs/alerts.md, docs/reports.md):
 * `alerts` (rules, routes, delivery, retention) and `prices` (cost per GPU-hour per GPU
 * type). Read by proto_policy_parse with the rest of the document, validated whole, every
 * error naming its field ("alerts.rules[2].severity"); written back by proto_ops_json.
 *
 * Nothing here holds state or does I/O. Webhook URLs and secrets are credentials (a Slack
 * URL is one): proto_ops_json(redact=true) hides them for every reader but the store.
 */
#ifndef DOCKET_PROTOCOL_OPS_H
#define DOCKET_PROTOCOL_OPS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "protocol/proto.h"

enum {
    PROTO_MAX_ALERT_RULES = 64,
    PROTO_MAX_ALERT_ROUTES = 16,
    PROTO_MAX_PRICES = 32,
    PROTO_URL_MAX = 512,
    PROTO_HOOK_SECRET_MAX = 128,
};

/* warning came last (storage's 80 % level, docs/storage.md): the values stay as they were */
enum proto_severity {
    PROTO_SEV_CRITICAL,
    PROTO_SEV_MAJOR,
    PROTO_SEV_INFO,
    PROTO_SEV_WARNING,
    PROTO_SEV_COUNT
};

/* What a rule watches (docs/alerts.md "Rules"). State kinds hold while their condition
 * does; event kinds (job_failed, reclaim_failed) hold for `for` after the event. */
enum proto_alert_kind {
    PROTO_AK_NODE_UNREACHABLE,
    PROTO_AK_NODE_UNHEALTHY,
    PROTO_AK_RECLAIM_FAILED,
    PROTO_AK_JOB_FAILED,
    PROTO_AK_QUEUE_WAIT,
    PROTO_AK_PROJECT_OVER_QUOTA,
    PROTO_AK_DISK_LOW,
    PROTO_AK_CYCLE_TIME,
    PROTO_AK_VERSION_SKEW,
    PROTO_AK_GPU_IDLE,     /* a running job flagged by its class's idle rule (docs/monitoring.md) */
    PROTO_AK_STORAGE_FULL, /* a storage pool or project area used past threshold_pct */
    PROTO_AK_COUNT
};

struct proto_alert_rule {
    char name[PROTO_NAME_MAX];
    enum proto_alert_kind kind;
    enum proto_severity severity;
    int64_t for_ms;            /* state kinds: held this long before firing; events: kept firing */
    int64_t threshold_ms;      /* queue_wait, cycle_time */
    double threshold_pct;      /* disk_low: fires below this % free; storage_full: at or
                                * above this % used */
    char tier[PROTO_NAME_MAX]; /* queue_wait: only this tier ("" = each tier) */
};

enum proto_route_shape { PROTO_SHAPE_GENERIC, PROTO_SHAPE_SLACK };

struct proto_alert_route {
    unsigned severities; /* bit per enum proto_severity */
    bool log;            /* to docketd's log (else a webhook) */
    char url[PROTO_URL_MAX];
    enum proto_route_shape shape;
    char secret[PROTO_HOOK_SECRET_MAX + 1]; /* "" = unsigned */
    bool reports; /* also receives the monthly usage report (docs/reports.md) */
};

struct proto_alerts {
    struct proto_alert_rule rules[PROTO_MAX_ALERT_RULES];
    int nrules;
    struct proto_alert_route routes[PROTO_MAX_ALERT_ROUTES];
    int nroutes;
    int64_t interval_ms; /* evaluation period */
    int attempts;        /* delivery tries of one notification */
    int64_t backoff_ms;  /* first retry delay; doubles up to max_backoff_ms */
    int64_t max_backoff_ms;
    int64_t timeout_ms; /* one HTTP try */
    int64_t keep_ms;    /* history: resolved alerts older than this go */
    int64_t keep_rows;  /* history: at most this many rows */
};

struct proto_prices {
    char gpu_type[PROTO_MAX_PRICES][PROTO_NAME_MAX];
    double per_gpu_hour[PROTO_MAX_PRICES];
    int n;
    char currency[8]; /* "EUR"; "" = none named */
};

/* Defaults: no rules, no routes, 10 s interval, 5 attempts from 1 s up to 60 s, 10 s
 * per try, 30 d / 100,000 rows of history. */
void proto_alerts_defaults(struct proto_alerts *a);
/* Parse the `alerts` object (replaces `out` whole) / the `prices` object. */
int proto_alerts_parse(const json_t *v, struct proto_alerts *out,
                       struct proto_error *err) PROTO_WUR;
int proto_prices_parse(const json_t *v, struct proto_prices *out,
                       struct proto_error *err) PROTO_WUR;
/* Their documents (new references), read back exactly by the parsers unless redact. */
json_t *proto_alerts_json(const struct proto_alerts *a, bool redact);
json_t *proto_prices_json(const struct proto_prices *p);
/* Price per GPU-hour of a type; -1 when the policy names none. */
double proto_price_of(const struct proto_prices *p, const char *gpu_type);

const char *proto_severity_name(enum proto_severity s);
int proto_severity_parse(const char *s); /* enum value or -1 */
const char *proto_alert_kind_name(enum proto_alert_kind k);
/* job_failed and reclaim_failed: rules on events, not on conditions that hold. */
bool proto_alert_kind_is_event(enum proto_alert_kind k);
int proto_alert_kind_parse(const char *s); /* enum value or -1 */
/* A webhook URL: http(s)://host[:port][/path], printable, no credentials in it. */
int proto_check_url(const char *url, const char *field, struct proto_error *err) PROTO_WUR;

#endif
