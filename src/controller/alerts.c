/*
 * alerts.c - docketd's graded alerts (docs/alerts.md): every `alerts.interval` the rules
 * of the policy look at the core, the node records, the controller's disk and cycle time
 * and the recent failures; alert_eval.c decides what fires and resolves; each change is
 * written to the history (store) and handed to its routes: the log at once, webhooks
 * through one delivery thread (libcurl), so the event loop never waits on a receiver.
 *
 * What it promises: one firing instance per rule and key; a resolve for every fire that
 * was delivered; a silenced change recorded but not delivered; each notification tried
 * `attempts` times with exponential backoff up to `max_backoff`, then dropped with a log
 * line; the queue of undelivered notifications bounded (ALERT_QUEUE_MAX, oldest dropped).
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "controller/alert_eval.h"
#include "controller/alerts.h"
#include "controller/network.h"
#include "controller/reports.h"
#include "controller/storage.h"
#include "controller/ctl.h"
#include "controller/http.h"
#include "controller/live.h"
#include "controller/loop.h"
#include "util/clock.h"
#include "util/etag.h"
#include "util/parse.h"
#include "util/str.h"
#include "util/xalloc.h"

enum { ALERT_QUEUE_MAX = 1000, ALERT_RECENT_MAX = 512, ALERT_LIST_MAX = 1000 };

/* A failure seen by a hook (job_failed, reclaim_failed): the event rules' input. */
struct recent {
    enum proto_alert_kind kind;
    char key[ALERT_KEY_MAX];
    char summary[ALERT_SUMMARY_MAX];
    int64_t at_ms;
};

/* A running job whose current idle stretch its class's idle rule flagged (usage.c): the
 * gpu_idle rules' input, kept while the job runs and its samples say it is still idle. */
struct idle_job {
    uint64_t job;
    int64_t since_ms; /* the stretch's first idle sample */
    int below;        /* the class's threshold, % */
};

/* One webhook notification waiting for (another) try. */
struct hook_item {
    char url[PROTO_URL_MAX];
    char secret[PROTO_HOOK_SECRET_MAX + 1];
    char *body; /* owned */
    char what[160];
    int attempt, attempts;
    int64_t backoff_ms, max_backoff_ms, timeout_ms;
    int64_t due_mono_ms;
    struct hook_item *next;
};

struct ctl_alerts {
    struct proto_alerts cfg;
    struct proto_prices prices;
    struct alert_eval *eval;
    struct alert_silence *sil;
    int nsil;
    struct recent recent[ALERT_RECENT_MAX];
    size_t nrecent, recent_head; /* a ring: the oldest goes when full */
    struct idle_job *idle;       /* flagged idle jobs, unordered */
    size_t nidle, capidle;
    struct event *timer;
    int64_t last_prune_ms;
    uint64_t shown; /* what GET /v1/alerts shows, hashed (shown_hash): changed, a notice */
    /* the delivery thread; everything below mu is shared with it */
    pthread_t thread;
    bool thread_on;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct hook_item *queue;
    size_t queued;
    bool stop;
};

static struct ctl_alerts *alerts_of(struct ctl *c)
{
    if (!c->alerts) {
        c->alerts = xcalloc(1, sizeof(*c->alerts));
        proto_alerts_defaults(&c->alerts->cfg);
        c->alerts->eval = xnonnull(alert_eval_create(), "alerts");
        pthread_mutex_init(&c->alerts->mu, NULL);
        /* the delivery thread waits until a CLOCK_MONOTONIC time: the condition must use
         * that clock (the default, CLOCK_REALTIME, read it as 1970 and never waited) */
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&c->alerts->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    return c->alerts;
}

void ctl_alerts_take(struct ctl *c, const struct proto_policy *pp)
{
    struct ctl_alerts *a = alerts_of(c);
    if (pp->alerts)
        a->cfg = *pp->alerts;
    if (pp->prices)
        a->prices = *pp->prices;
    if (pp->alerts && a->timer) {
        struct timeval tv = {(time_t)(a->cfg.interval_ms / 1000),
                             (suseconds_t)(a->cfg.interval_ms % 1000 * 1000)};
        event_add(a->timer, &tv);
    }
}

void ctl_ops_json(struct ctl *c, json_t *doc, const struct proto_policy *pp, bool redact)
{
    struct ctl_alerts *a = alerts_of(c);
    const struct proto_alerts *al = pp && pp->alerts ? pp->alerts : &a->cfg;
    const struct proto_prices *pr = pp && pp->prices ? pp->prices : &a->prices;
    json_object_set_new(doc, "alerts", proto_alerts_json(al, redact));
    json_object_set_new(doc, "prices", proto_prices_json(pr));
    ctl_storage_json(c, doc, pp);
    ctl_net_json(c, doc, pp);
}

const struct proto_prices *ctl_prices(struct ctl *c)
{
    return &alerts_of(c)->prices;
}

/* ------------------------------------------------------------------------------------ */
/* Delivery (the thread)                                                                 */

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    return size * n;
}

/* One try: 0 when the receiver answered 2xx. */
static int post(const struct hook_item *h, char *err, size_t errlen)
{
    CURL *k = curl_easy_init();
    struct curl_slist *hd = NULL;
    long code = 0;
    if (!k) {
        snprintf(err, errlen, "curl init failed");
        return -ENOMEM;
    }
    hd = curl_slist_append(hd, "Content-Type: application/json");
    if (h->secret[0]) {
        unsigned char mac[32];
        unsigned int len = 0;
        char hdr[128] = "X-Docket-Signature: sha256=";
        HMAC(EVP_sha256(), h->secret, (int)strlen(h->secret), (const unsigned char *)h->body,
             strlen(h->body), mac, &len);
        for (unsigned int i = 0; i < len; i++)
            snprintf(hdr + strlen(hdr), 3, "%02x", mac[i]);
        hd = curl_slist_append(hd, hdr);
    }
    curl_easy_setopt(k, CURLOPT_URL, h->url);
    curl_easy_setopt(k, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(k, CURLOPT_POSTFIELDS, h->body);
    curl_easy_setopt(k, CURLOPT_TIMEOUT_MS, (long)h->timeout_ms);
    curl_easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(k, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(k, CURLOPT_WRITEFUNCTION, discard);
    CURLcode rc = curl_easy_perform(k);
    if (rc == CURLE_OK)
        curl_easy_getinfo(k, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK)
        snprintf(err, errlen, "%s", curl_easy_strerror(rc));
    else if (code < 200 || code > 299)
        snprintf(err, errlen, "receiver answered %ld", code);
    curl_slist_free_all(hd);
    curl_easy_cleanup(k);
    return rc == CURLE_OK && code >= 200 && code <= 299 ? 0 : -EIO;
}

/* The item due first, unlinked; NULL when none is due (*wait_ms: until the next). */
static struct hook_item *take_due(struct ctl_alerts *a, int64_t now, int64_t *wait_ms)
{
    struct hook_item **best = NULL;
    for (struct hook_item **p = &a->queue; *p; p = &(*p)->next)
        if (!best || (*p)->due_mono_ms < (*best)->due_mono_ms)
            best = p;
    *wait_ms = 1000;
    if (!best)
        return NULL;
    if ((*best)->due_mono_ms > now) {
        *wait_ms = (*best)->due_mono_ms - now;
        return NULL;
    }
    struct hook_item *h = *best;
    *best = h->next;
    a->queued--;
    return h;
}

static void *deliver_main(void *arg)
{
    struct ctl_alerts *a = arg;
    pthread_mutex_lock(&a->mu);
    while (!a->stop) {
        int64_t wait_ms;
        struct hook_item *h = take_due(a, clock_mono_ms(), &wait_ms);
        if (!h) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += wait_ms / 1000;
            ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&a->cv, &a->mu, &ts);
            continue;
        }
        pthread_mutex_unlock(&a->mu);
        char err[256] = "";
        int rc = post(h, err, sizeof err);
        h->attempt++;
        if (rc == 0 || h->attempt >= h->attempts) {
            if (rc == 0)
                log_info("alert_delivered", "%s attempt=%d", h->what, h->attempt);
            else
                log_error("alert_undelivered", "%s attempts=%d error=\"%s\"", h->what, h->attempt,
                          err);
            free(h->body);
            free(h);
            pthread_mutex_lock(&a->mu);
            continue;
        }
        int64_t d = alert_backoff_ms(h->attempt, h->backoff_ms, h->max_backoff_ms);
        log_warn("alert_retry", "%s attempt=%d retry_in_ms=%lld error=\"%s\"", h->what, h->attempt,
                 (long long)d, err);
        h->due_mono_ms = clock_mono_ms() + d;
        pthread_mutex_lock(&a->mu);
        h->next = a->queue;
        a->queue = h;
        a->queued++;
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

static void enqueue(struct ctl_alerts *a, struct hook_item *h)
{
    pthread_mutex_lock(&a->mu);
    if (a->queued >= ALERT_QUEUE_MAX) { /* drop the oldest: the last in the list */
        struct hook_item **p = &a->queue;
        while ((*p)->next)
            p = &(*p)->next;
        log_error("alert_dropped", "%s reason=queue_full", (*p)->what);
        free((*p)->body);
        free(*p);
        *p = NULL;
        a->queued--;
    }
    h->next = a->queue;
    a->queue = h;
    a->queued++;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static void send_hook(struct ctl_alerts *a, const struct proto_alert_route *r, json_t *body,
                      const char *what);

static void route(struct ctl_alerts *a, const struct alert_inst *inst, enum alert_change_kind what,
                  int64_t now)
{
    const char *status = what == ALERT_FIRED ? "firing" : "resolved";
    for (int i = 0; i < a->cfg.nroutes; i++) {
        const struct proto_alert_route *r = &a->cfg.routes[i];
        if (!(r->severities & (1u << inst->severity)))
            continue;
        if (r->log) {
            char q[ALERT_SUMMARY_MAX + 8];
            log_event(inst->severity == PROTO_SEV_INFO ? LOG_INFO : LOG_WARN, "alert",
                      "status=%s rule=%s key=%s severity=%s summary=%s", status, inst->rule,
                      inst->key, proto_severity_name(inst->severity),
                      log_quote(inst->summary, q, sizeof q));
            continue;
        }
        char what_[160];
        snprintf(what_, sizeof what_, "status=%s rule=%s key=%.60s route=%d", status, inst->rule,
                 inst->key, i);
        send_hook(a, r, alert_body(inst, what, r->shape, now), what_);
    }
}

/* Queue `body` (stolen) for webhook route r, tried as the delivery settings say. */
static void send_hook(struct ctl_alerts *a, const struct proto_alert_route *r, json_t *body,
                      const char *what)
{
    struct hook_item *h = xcalloc(1, sizeof(*h));
    h->body = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!h->body) {
        free(h);
        return;
    }
    str_copy(h->url, sizeof h->url, r->url);
    str_copy(h->secret, sizeof h->secret, r->secret);
    str_copy(h->what, sizeof h->what, what);
    h->attempts = a->cfg.attempts;
    h->backoff_ms = a->cfg.backoff_ms;
    h->max_backoff_ms = a->cfg.max_backoff_ms;
    h->timeout_ms = a->cfg.timeout_ms;
    h->due_mono_ms = clock_mono_ms();
    enqueue(a, h);
}

/* ------------------------------------------------------------------------------------ */
/* The monthly report                                                                    */

/* "2026-11": the calendar month (UTC) before the one `now` is in. */
static void last_month(int64_t now, char *out, size_t len, int64_t *stamp)
{
    time_t t = (time_t)(now / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    int y = tm.tm_year + 1900, m = tm.tm_mon; /* tm_mon is 0-based: this is last month */
    if (m == 0) {
        y--;
        m = 12;
    }
    snprintf(out, len, "%04d-%02d", y, m);
    *stamp = (int64_t)y * 100 + m;
}

/* A line for chat (the slack shape): the month's GPU-hours and cost, the top projects. */
static json_t *report_text(const json_t *rep, const char *month)
{
    char text[1024];
    double hours = 0, cost = 0;
    bool priced = true;
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(rep, "rows"), i, row) {
        hours += json_number_value(json_object_get(row, "gpu_hours"));
        priced = priced && json_is_true(json_object_get(row, "cost_complete"));
        cost += json_number_value(json_object_get(row, "cost"));
    }
    int n =
        snprintf(text, sizeof text, "Docket usage report %s (UTC): %.1f GPU-hours", month, hours);
    if (priced && n > 0 && (size_t)n < sizeof text)
        n += snprintf(text + n, sizeof text - (size_t)n, ", cost %.2f %s", cost,
                      json_string_value(json_object_get(rep, "currency")));
    json_array_foreach(json_object_get(rep, "rows"), i, row) {
        if (n < 0 || (size_t)n >= sizeof text - 80 || i >= 10)
            break;
        n += snprintf(text + n, sizeof text - (size_t)n, "%s %s %.1f h", i ? "," : ";",
                      json_string_value(json_object_get(row, "key")),
                      json_number_value(json_object_get(row, "gpu_hours")));
    }
    return json_pack("{s:s}", "text", text);
}

/* Once per calendar month, the month just closed goes to every route that asks for
 * reports: the usage report by project (GET /v1/reports/usage?month=). The month sent is
 * kept in the store, so a restart does not send it again (and a controller that was down
 * on the first sends it when it is back). */
static void monthly_report(struct ctl *c, int64_t now)
{
    struct ctl_alerts *a = c->alerts;
    bool wanted = false;
    for (int i = 0; i < a->cfg.nroutes; i++)
        wanted = wanted || a->cfg.routes[i].reports;
    char month[16];
    int64_t stamp, sent = 0;
    last_month(now, month, sizeof month, &stamp);
    if (!wanted)
        return;
    int rc = store_counter_get(c->store, "report_month_sent", &sent);
    if ((rc < 0 && rc != -ENOENT) || sent >= stamp) /* none sent yet: -ENOENT */
        return;
    json_t *rep = ctl_report_month(c, month, now);
    if (!rep) {
        log_error("report_failed", "month=%s error=\"%s\"", month, store_errmsg(c->store));
        return;
    }
    if (store_begin(c->store) < 0 || store_counter_set(c->store, "report_month_sent", stamp) < 0) {
        log_error("report_failed", "month=%s error=\"%s\"", month, store_errmsg(c->store));
        json_decref(rep);
        return;
    }
    ctl_commit_soon(c);
    for (int i = 0; i < a->cfg.nroutes; i++) {
        const struct proto_alert_route *r = &a->cfg.routes[i];
        char what[64];
        if (!r->reports)
            continue;
        snprintf(what, sizeof what, "report=%s route=%d", month, i);
        if (r->log) {
            json_t *t = report_text(rep, month);
            log_info("report", "month=%s text=\"%s\"", month,
                     json_string_value(json_object_get(t, "text")));
            json_decref(t);
            continue;
        }
        send_hook(a, r,
                  r->shape == PROTO_SHAPE_SLACK
                      ? report_text(rep, month)
                      : json_pack("{s:s,s:s,s:O,s:I}", "status", "report", "period", month,
                                  "report", rep, "time_ms", (json_int_t)now),
                  what);
    }
    log_info("report_sent", "month=%s", month);
    json_decref(rep);
}

/* ------------------------------------------------------------------------------------ */
/* Rounds                                                                                */

static void on_change(void *arg, enum alert_change_kind what, struct alert_inst *inst,
                      bool silenced, int64_t now)
{
    struct ctl *c = arg;
    struct ctl_alerts *a = c->alerts;
    int rc = store_begin(c->store);
    if (what == ALERT_FIRED) {
        struct store_alert row = {.fired_ms = now, .silenced = silenced};
        str_copy(row.rule, sizeof row.rule, inst->rule);
        str_copy(row.key, sizeof row.key, inst->key);
        str_copy(row.kind, sizeof row.kind, proto_alert_kind_name(inst->kind));
        str_copy(row.severity, sizeof row.severity, proto_severity_name(inst->severity));
        str_copy(row.summary, sizeof row.summary, inst->summary);
        if (rc == 0)
            rc = store_alert_fire(c->store, &row, &inst->history_id);
    } else if (rc == 0 && inst->history_id) {
        rc = store_alert_resolve(c->store, inst->history_id, now);
    }
    ctl_commit_soon(c);
    if (rc < 0) /* history is not the core's: a lost row is logged, docketd runs on */
        log_error("alert_history_failed", "rule=%s key=%s error=\"%s\"", inst->rule, inst->key,
                  store_errmsg(c->store));
    log_info(what == ALERT_FIRED ? "alert_fired" : "alert_resolved",
             "rule=%s key=%s severity=%s silenced=%d", inst->rule, inst->key,
             proto_severity_name(inst->severity), silenced);
    if (!silenced)
        route(a, inst, what, now);
}

static void observe(struct ctl_alerts *a, const struct proto_alert_rule *r, const char *key,
                    const char *summary, int64_t now)
{
    if (alert_eval_observe(a->eval, r, key, summary, now) < 0)
        log_error("alert_observe_failed", "rule=%s error=\"out of memory\"", r->name);
}

static void rule_nodes(struct ctl *c, const struct proto_alert_rule *r, int64_t now)
{
    for (size_t i = 0; i < c->nnodes; i++) {
        struct sched_node_view v;
        struct ctl_node *n = c->nodes[i];
        char s[ALERT_SUMMARY_MAX];
        if (!n || sched_node_get(c->sched, (uint32_t)i, &v) < 0)
            continue;
        if (r->kind == PROTO_AK_NODE_UNREACHABLE && v.state == SCHED_NODE_UNREACHABLE) {
            snprintf(s, sizeof s, "node %s is unreachable (%s)", n->name,
                     n->rec.reason[0] ? n->rec.reason : "missed heartbeats");
            observe(c->alerts, r, n->name, s, now);
        } else if (r->kind == PROTO_AK_NODE_UNHEALTHY && v.state == SCHED_NODE_UNHEALTHY) {
            snprintf(s, sizeof s, "node %s is unhealthy: %s", n->name,
                     n->rec.reason[0] ? n->rec.reason : "health check failed");
            observe(c->alerts, r, n->name, s, now);
        } else if (r->kind == PROTO_AK_VERSION_SKEW && v.state != SCHED_NODE_UNREACHABLE &&
                   v.state != SCHED_NODE_DOWN && n->rec.info) {
            json_t *info = json_loads(n->rec.info, 0, NULL);
            const char *ver = json_string_value(json_object_get(info, "agent_version"));
            if (ver && strcmp(ver, DOCKET_VERSION) != 0) {
                snprintf(s, sizeof s, "node %s runs agent %.32s, docketd is %s", n->name,
                         ver[0] ? ver : "(unknown)", DOCKET_VERSION);
                observe(c->alerts, r, n->name, s, now);
            }
            json_decref(info);
        }
    }
}

/* The oldest waiting job of each tier (pending for a reason of the cluster's, not the
 * job's own: held, dependencies and begin times do not count). */
struct tier_wait {
    const char *tier;
    int64_t oldest_submit;
    uint64_t job;
    int pending;
};

static int tier_waits(struct ctl *c, struct tier_wait *tw)
{
    int nt = 0;
    for (size_t slot = 0; slot < sched_job_slots(c->sched); slot++) {
        struct sched_job_view v;
        if (sched_job_at(c->sched, slot, &v) < 0 || v.state != SCHED_PENDING ||
            v.reason == SCHED_R_HELD || v.reason == SCHED_R_DEPENDENCY ||
            v.reason == SCHED_R_BEGIN_TIME)
            continue;
        int t = 0;
        while (t < nt && strcmp(tw[t].tier, v.tier) != 0)
            t++;
        if (t == nt) {
            if (nt == SCHED_MAX_TIERS)
                continue;
            tw[nt++] = (struct tier_wait){v.tier, v.submit_ms, v.id, 0};
        }
        tw[t].pending++;
        if (v.submit_ms < tw[t].oldest_submit) {
            tw[t].oldest_submit = v.submit_ms;
            tw[t].job = v.id;
        }
    }
    return nt;
}

static void rule_queue(struct ctl *c, const struct proto_alert_rule *r, const struct tier_wait *tw,
                       int nt, int64_t now)
{
    for (int t = 0; t < nt; t++) {
        int64_t wait = now - tw[t].oldest_submit;
        if ((r->tier[0] && strcmp(r->tier, tw[t].tier) != 0) || wait <= r->threshold_ms)
            continue;
        char s[ALERT_SUMMARY_MAX], w[32], th[32];
        format_duration(wait, w, sizeof w);
        format_duration(r->threshold_ms, th, sizeof th);
        snprintf(s, sizeof s, "tier %s: job %llu has waited %s (threshold %s); %d pending",
                 tw[t].tier, (unsigned long long)tw[t].job, w, th, tw[t].pending);
        observe(c->alerts, r, tw[t].tier, s, now);
    }
}

static void rule_projects(struct ctl *c, const struct proto_alert_rule *r, int64_t now)
{
    for (size_t i = 0; i < sched_project_count(c->sched); i++) {
        struct sched_project_view v;
        if (sched_project_get(c->sched, i, &v) < 0 || v.spec.guarantee_gpus < 0 ||
            v.gpus_in_use <= v.spec.guarantee_gpus)
            continue;
        char s[ALERT_SUMMARY_MAX];
        snprintf(s, sizeof s, "project %s uses %d GPUs, over its guarantee of %g", v.spec.name,
                 v.gpus_in_use, v.spec.guarantee_gpus);
        observe(c->alerts, r, v.spec.name, s, now);
    }
}

static void rule_controller(struct ctl *c, const struct proto_alert_rule *r, int64_t now)
{
    char s[ALERT_SUMMARY_MAX];
    if (r->kind == PROTO_AK_DISK_LOW) {
        struct statvfs fs;
        if (statvfs(c->cfg.state_dir, &fs) < 0 || fs.f_blocks == 0)
            return;
        double pct = 100.0 * (double)fs.f_bavail / (double)fs.f_blocks;
        if (pct >= r->threshold_pct)
            return;
        snprintf(s, sizeof s, "state dir %.120s has %.1f%% free (threshold %g%%)", c->cfg.state_dir,
                 pct, r->threshold_pct);
        observe(c->alerts, r, "state_dir", s, now);
    } else if (r->kind == PROTO_AK_CYCLE_TIME && c->last_cycle_us / 1000 > r->threshold_ms) {
        snprintf(s, sizeof s, "the last scheduling cycle took %lld ms (threshold %lld ms)",
                 (long long)(c->last_cycle_us / 1000), (long long)r->threshold_ms);
        observe(c->alerts, r, "cycle", s, now);
    }
}

static void rule_recent(struct ctl_alerts *a, const struct proto_alert_rule *r, int64_t now)
{
    for (size_t i = 0; i < a->nrecent; i++) {
        const struct recent *e = &a->recent[i];
        if (e->kind == r->kind && now - e->at_ms < r->for_ms)
            observe(a, r, e->key, e->summary, now);
    }
}

/* Forget the flagged jobs that no longer run (ended, requeued, stopping). */
static void idle_sweep(struct ctl *c)
{
    struct ctl_alerts *a = c->alerts;
    for (size_t i = 0; i < a->nidle;) {
        struct sched_job_view v;
        if (sched_job_get(c->sched, a->idle[i].job, &v) < 0 || v.state != SCHED_RUNNING)
            a->idle[i] = a->idle[--a->nidle];
        else
            i++;
    }
}

static void rule_idle(struct ctl *c, const struct proto_alert_rule *r, int64_t now)
{
    struct ctl_alerts *a = c->alerts;
    for (size_t i = 0; i < a->nidle; i++) {
        const struct idle_job *j = &a->idle[i];
        struct sched_job_view v;
        if (sched_job_get(c->sched, j->job, &v) < 0)
            continue;
        char key[32], s[ALERT_SUMMARY_MAX], d[32];
        snprintf(key, sizeof key, "job/%llu", (unsigned long long)j->job);
        format_duration(now - j->since_ms, d, sizeof d);
        snprintf(s, sizeof s, "job %llu of project %s (class %s): GPUs under %d%% for %s",
                 (unsigned long long)j->job, v.project, v.class_name, j->below, d);
        observe(a, r, key, s, now);
    }
}

/* storage_full: each pool and area at or above the rule's percentage (storage.c). */
struct storage_rule {
    struct ctl *c;
    const struct proto_alert_rule *r;
    int64_t now;
};

static void storage_level(void *arg, const char *key, double pct, const char *summary)
{
    struct storage_rule *sr = arg;
    if (pct < sr->r->threshold_pct)
        return;
    char s[ALERT_SUMMARY_MAX];
    snprintf(s, sizeof s, "%.200s (threshold %g%%)", summary, sr->r->threshold_pct);
    observe(sr->c->alerts, sr->r, key, s, sr->now);
}

static void rule_storage(struct ctl *c, const struct proto_alert_rule *r, int64_t now)
{
    struct storage_rule sr = {c, r, now};
    ctl_storage_each_fill(c, storage_level, &sr);
}

static void load_silences(struct ctl *c);

static bool silenced_now(const struct ctl_alerts *a, const char *rule, const char *key,
                         int64_t now);

/* What GET /v1/alerts shows of each instance, hashed (a walk of the instances, no
 * body): a new value moves the alerts topic on (live.c). */
static uint64_t shown_hash(const struct ctl_alerts *a, int64_t now)
{
    uint64_t h = ETAG_HASH_SEED;
    for (size_t i = 0; i < alert_eval_count(a->eval); i++) {
        const struct alert_inst *x = alert_eval_at(a->eval, i);
        char nums[96];
        snprintf(nums, sizeof(nums), "%lld %lld %lld %d", (long long)x->history_id,
                 (long long)x->since_ms, (long long)x->fired_ms,
                 silenced_now(a, x->rule, x->key, now));
        h = etag_hash(etag_hash(etag_hash(etag_hash(h, x->rule), x->key), x->summary), nums);
    }
    return h;
}

static void round_run(struct ctl *c, int64_t now)
{
    struct ctl_alerts *a = c->alerts;
    struct tier_wait tw[SCHED_MAX_TIERS];
    int nt = -1;
    alert_eval_begin(a->eval);
    idle_sweep(c);
    for (int i = 0; i < a->cfg.nrules; i++) {
        const struct proto_alert_rule *r = &a->cfg.rules[i];
        switch (r->kind) {
        case PROTO_AK_NODE_UNREACHABLE:
        case PROTO_AK_NODE_UNHEALTHY:
        case PROTO_AK_VERSION_SKEW:
            rule_nodes(c, r, now);
            break;
        case PROTO_AK_QUEUE_WAIT:
            if (nt < 0)
                nt = tier_waits(c, tw);
            rule_queue(c, r, tw, nt, now);
            break;
        case PROTO_AK_PROJECT_OVER_QUOTA:
            rule_projects(c, r, now);
            break;
        case PROTO_AK_DISK_LOW:
        case PROTO_AK_CYCLE_TIME:
            rule_controller(c, r, now);
            break;
        case PROTO_AK_GPU_IDLE:
            rule_idle(c, r, now);
            break;
        case PROTO_AK_STORAGE_FULL:
            rule_storage(c, r, now);
            break;
        default:
            rule_recent(a, r, now);
            break;
        }
    }
    alert_eval_end(a->eval, a->cfg.rules, a->cfg.nrules, a->sil, a->nsil, now, on_change, c);
    uint64_t shown = shown_hash(a, now);
    if (shown != a->shown)
        ctl_live_changed(c, CTL_TOPIC_ALERTS);
    a->shown = shown;
    monthly_report(c, now);
    if (now - a->last_prune_ms >= 60000) {
        a->last_prune_ms = now;
        if (store_begin(c->store) < 0 ||
            store_alert_prune(c->store, now - a->cfg.keep_ms, a->cfg.keep_rows) < 0)
            log_error("alert_prune_failed", "error=\"%s\"", store_errmsg(c->store));
        load_silences(c); /* drops the ended ones */
        ctl_commit_soon(c);
    }
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ctl *c = arg;
    round_run(c, clock_now_ms());
}

void ctl_alerts_round(struct ctl *c)
{
    round_run(c, clock_now_ms());
}

static void remember(struct ctl *c, enum proto_alert_kind kind, const char *key,
                     const char *summary)
{
    struct ctl_alerts *a = alerts_of(c);
    size_t i = a->nrecent < ALERT_RECENT_MAX ? a->nrecent++ : a->recent_head++ % ALERT_RECENT_MAX;
    a->recent[i].kind = kind;
    a->recent[i].at_ms = clock_now_ms();
    str_copy(a->recent[i].key, sizeof a->recent[i].key, key);
    str_copy(a->recent[i].summary, sizeof a->recent[i].summary, summary);
}

void ctl_alerts_job_failed(struct ctl *c, uint64_t job, const char *project, const char *state,
                           const char *node)
{
    char key[32], s[ALERT_SUMMARY_MAX];
    snprintf(key, sizeof key, "job/%llu", (unsigned long long)job);
    snprintf(s, sizeof s, "job %llu of project %s ended %s%s%s", (unsigned long long)job, project,
             state, node && node[0] ? " on " : "", node ? node : "");
    remember(c, PROTO_AK_JOB_FAILED, key, s);
}

json_t *ctl_alerts_firing_counts(struct ctl *c)
{
    struct ctl_alerts *a = alerts_of(c);
    json_t *counts = json_object();
    for (int i = 0; i < a->cfg.nrules; i++) {
        const struct proto_alert_rule *r = &a->cfg.rules[i];
        long long n = 0;
        for (size_t k = 0; k < alert_eval_count(a->eval); k++) {
            const struct alert_inst *x = alert_eval_at(a->eval, k);
            n += x->fired_ms && strcmp(x->rule, r->name) == 0;
        }
        char key[PROTO_NAME_MAX + 48];
        snprintf(key, sizeof key, "rule=\"%s\",severity=\"%s\"", r->name,
                 proto_severity_name(r->severity));
        json_object_set_new(counts, key, json_integer(n));
    }
    return counts;
}

void ctl_alerts_job_idle(struct ctl *c, uint64_t job, int64_t idle_since_ms, int64_t flagged_ms,
                         int below)
{
    struct ctl_alerts *a = alerts_of(c);
    size_t i = 0;
    while (i < a->nidle && a->idle[i].job != job)
        i++;
    if (!idle_since_ms || !flagged_ms) { /* busy again, or not flagged (yet) */
        if (i < a->nidle)
            a->idle[i] = a->idle[--a->nidle];
        return;
    }
    if (i == a->nidle) {
        if (a->nidle == a->capidle) {
            a->capidle = a->capidle ? 2 * a->capidle : 16;
            a->idle = xrealloc(a->idle, a->capidle * sizeof(*a->idle));
        }
        a->nidle++;
    }
    a->idle[i] = (struct idle_job){job, idle_since_ms, below};
}

void ctl_alerts_reclaim_failed(struct ctl *c, const char *node, uint64_t job, const char *msg)
{
    char s[ALERT_SUMMARY_MAX];
    snprintf(s, sizeof s, "node %s could not reclaim job %llu: %.160s", node,
             (unsigned long long)job, msg);
    remember(c, PROTO_AK_RECLAIM_FAILED, node, s);
}

/* ------------------------------------------------------------------------------------ */
/* Start, stop, silences                                                                 */

static int silence_cb(void *arg, const struct store_silence *s)
{
    struct ctl_alerts *a = arg;
    a->sil = xrealloc(a->sil, (size_t)(a->nsil + 1) * sizeof(*a->sil));
    struct alert_silence *x = &a->sil[a->nsil++];
    memset(x, 0, sizeof *x);
    x->id = s->id;
    x->until_ms = s->until_ms;
    str_copy(x->rule, sizeof x->rule, s->rule);
    str_copy(x->key, sizeof x->key, s->key);
    return 0;
}

static void load_silences(struct ctl *c)
{
    struct ctl_alerts *a = c->alerts;
    free(a->sil);
    a->sil = NULL;
    a->nsil = 0;
    if (store_begin(c->store) < 0 ||
        store_silence_list(c->store, clock_now_ms(), silence_cb, a) < 0)
        log_error("alert_silences_failed", "error=\"%s\"", store_errmsg(c->store));
    ctl_commit_soon(c);
}

static int open_cb(void *arg, const struct store_alert *r)
{
    struct ctl_alerts *a = arg;
    struct alert_inst i;
    memset(&i, 0, sizeof i);
    int sev = proto_severity_parse(r->severity), kind = proto_alert_kind_parse(r->kind);
    str_copy(i.rule, sizeof i.rule, r->rule);
    str_copy(i.key, sizeof i.key, r->key);
    str_copy(i.summary, sizeof i.summary, r->summary);
    i.severity = sev < 0 ? PROTO_SEV_INFO : (enum proto_severity)sev;
    i.kind = kind < 0 ? PROTO_AK_JOB_FAILED : (enum proto_alert_kind)kind;
    i.since_ms = i.fired_ms = r->fired_ms;
    i.history_id = r->id;
    i.silenced = r->silenced;
    return alert_eval_restore(a->eval, &i);
}

int ctl_alerts_start(struct ctl *c)
{
    struct ctl_alerts *a = alerts_of(c);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return -EIO;
    load_silences(c);
    /* alerts that fired before a restart fire on (no second notification) and resolve
     * when their condition is found clear */
    if (store_alert_list(c->store, true, 0, ALERT_LIST_MAX, open_cb, a) < 0)
        log_error("alert_history_failed", "error=\"%s\"", store_errmsg(c->store));
    if (pthread_create(&a->thread, NULL, deliver_main, a) != 0)
        return -EAGAIN;
    a->thread_on = true;
    a->timer = xnonnull(event_new(c->base, -1, EV_PERSIST, timer_cb, c), "alerts timer");
    struct timeval tv = {(time_t)(a->cfg.interval_ms / 1000),
                         (suseconds_t)(a->cfg.interval_ms % 1000 * 1000)};
    event_add(a->timer, &tv);
    return 0;
}

void ctl_alerts_stop(struct ctl *c)
{
    struct ctl_alerts *a = c->alerts;
    if (!a)
        return;
    if (a->thread_on) {
        pthread_mutex_lock(&a->mu);
        a->stop = true;
        pthread_cond_signal(&a->cv);
        pthread_mutex_unlock(&a->mu);
        pthread_join(a->thread, NULL);
        curl_global_cleanup();
    }
    if (a->queued)
        log_warn("alerts_not_delivered", "count=%zu", a->queued);
    while (a->queue) {
        struct hook_item *h = a->queue;
        a->queue = h->next;
        free(h->body);
        free(h);
    }
    if (a->timer)
        event_free(a->timer);
    alert_eval_destroy(a->eval);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a->sil);
    free(a->idle);
    free(a);
    c->alerts = NULL;
}

/* ------------------------------------------------------------------------------------ */
/* API (docs/api.md "Alerts")                                                            */

static bool silenced_now(const struct ctl_alerts *a, const char *rule, const char *key, int64_t now)
{
    for (int i = 0; i < a->nsil; i++)
        if (alert_silence_matches(&a->sil[i], rule, key, now))
            return true;
    return false;
}

static json_t *silence_json(const struct store_silence *s)
{
    return json_pack("{s:I,s:s,s:s,s:I,s:s,s:I,s:s}", "id", (json_int_t)s->id, "rule", s->rule,
                     "key", s->key, "until_ms", (json_int_t)s->until_ms, "created_by",
                     s->created_by, "created_ms", (json_int_t)s->created_ms, "reason", s->reason);
}

void h_alerts_list(struct ctl_req *r)
{
    struct ctl_alerts *a = alerts_of(r->c);
    int64_t now = clock_now_ms();
    json_t *arr = json_array();
    for (size_t i = 0; i < alert_eval_count(a->eval); i++) {
        const struct alert_inst *x = alert_eval_at(a->eval, i);
        json_array_append_new(
            arr, json_pack("{s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:b}", "id",
                           (json_int_t)x->history_id, "state", x->fired_ms ? "firing" : "pending",
                           "rule", x->rule, "key", x->key, "kind", proto_alert_kind_name(x->kind),
                           "severity", proto_severity_name(x->severity), "summary", x->summary,
                           "since_ms", (json_int_t)x->since_ms, "fired_ms", (json_int_t)x->fired_ms,
                           "silenced", silenced_now(a, x->rule, x->key, now)));
    }
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "alerts", arr));
}

struct hist_ctx {
    json_t *arr;
    int64_t last;
};

static int hist_cb(void *arg, const struct store_alert *x)
{
    struct hist_ctx *h = arg;
    json_array_append_new(
        h->arr, json_pack("{s:I,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:b}", "id", (json_int_t)x->id, "rule",
                          x->rule, "key", x->key, "kind", x->kind, "severity", x->severity,
                          "summary", x->summary, "fired_ms", (json_int_t)x->fired_ms, "resolved_ms",
                          (json_int_t)x->resolved_ms, "silenced", x->silenced));
    h->last = x->id;
    return 0;
}

/* An optional integer query parameter in [min, max]; 0 or -1 after answering 400. */
static int query_int(struct ctl_req *r, const char *key, int64_t min, int64_t max, int64_t *out)
{
    const char *v = ctl_query(r, key);
    char *end;
    if (!v)
        return 0;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end || n < min || n > max) {
        ctl_reply_errorf(r->c, r->req, 400, key, "%s must be an integer from %lld to %lld", key,
                         (long long)min, (long long)max);
        return -1;
    }
    *out = n;
    return 0;
}

void h_alerts_history(struct ctl_req *r)
{
    int64_t limit = 100, before = 0;
    if (query_int(r, "limit", 1, ALERT_LIST_MAX, &limit) < 0 ||
        query_int(r, "before", 1, INT64_MAX, &before) < 0)
        return;
    struct hist_ctx h = {json_array(), 0};
    if (store_alert_list(r->c->store, false, before, (int)limit, hist_cb, &h) < 0) {
        json_decref(h.arr);
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return;
    }
    json_t *o = json_pack("{s:o}", "alerts", h.arr);
    if ((int64_t)json_array_size(h.arr) == limit)
        json_object_set_new(o, "next", json_integer((json_int_t)h.last));
    ctl_reply_json(r->c, r->req, 200, o);
}

static int silence_list_cb(void *arg, const struct store_silence *s)
{
    json_array_append_new(arg, silence_json(s));
    return 0;
}

void h_silences_list(struct ctl_req *r)
{
    json_t *arr = json_array();
    if (store_silence_list(r->c->store, clock_now_ms(), silence_list_cb, arr) < 0) {
        json_decref(arr);
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return;
    }
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "silences", arr));
}

/* The body of POST /v1/alerts/silences: {rule, key?, for, reason}. */
static int silence_parse(struct ctl *c, const json_t *b, struct store_silence *s, int64_t now,
                         struct proto_error *e)
{
    static const char *const known[] = {"rule", "key", "for", "reason", NULL};
    struct ctl_alerts *a = alerts_of(c);
    int64_t dur = 0;
    int rc;
    if ((rc = proto_check_fields(b, "", known, e)) < 0 ||
        (rc = proto_get_name(json_object_get(b, "rule"), "rule", s->rule, e)) < 0)
        return rc;
    int i = 0;
    while (i < a->cfg.nrules && strcmp(a->cfg.rules[i].name, s->rule) != 0)
        i++;
    if (i == a->cfg.nrules)
        return proto_errorf(e, 400, NULL, "rule",
                            "no alert rule '%s' in the policy (docket alerts lists them)", s->rule);
    json_t *k = json_object_get(b, "key");
    if (k && (!json_is_string(k) || json_string_length(k) >= sizeof s->key))
        return proto_errorf(e, 400, NULL, "key", "key must be a string of at most %zu characters",
                            sizeof s->key - 1);
    str_copy(s->key, sizeof s->key, k ? json_string_value(k) : "");
    if (!json_object_get(b, "for"))
        return proto_errorf(e, 400, NULL, "for", "for is required (how long: 2h)");
    if ((rc = proto_get_duration(json_object_get(b, "for"), "for", (int64_t)90 * 86400000, &dur,
                                 e)) < 0)
        return rc;
    if (dur <= 0)
        return proto_errorf(e, 400, NULL, "for", "for must be more than 0");
    const char *why = json_string_value(json_object_get(b, "reason"));
    if (!why || !why[0] || strlen(why) >= sizeof s->reason)
        return proto_errorf(e, 400, NULL, "reason",
                            "reason is required (why silence it: at most %zu characters)",
                            sizeof s->reason - 1);
    str_copy(s->reason, sizeof s->reason, why);
    s->created_ms = now;
    s->until_ms = now + dur;
    return 0;
}

void h_silence_add(struct ctl_req *r)
{
    struct store_silence s;
    struct proto_error e;
    int64_t now = clock_now_ms();
    memset(&s, 0, sizeof s);
    json_t *b = ctl_body_json(r, false);
    if (!b)
        return;
    str_copy(s.created_by, sizeof s.created_by, r->id.user);
    if (silence_parse(r->c, b, &s, now, &e) < 0) {
        ctl_reply_error(r->c, r->req, &e);
        json_decref(b);
        return;
    }
    json_decref(b);
    char target[200];
    snprintf(target, sizeof target, "alert:%s%s%s", s.rule, s.key[0] ? ":" : "", s.key);
    json_t *after = NULL;
    int rc = store_begin(r->c->store);
    if (rc == 0)
        rc = store_silence_add(r->c->store, &s, &s.id);
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, "alert.silence", target, NULL, (after = silence_json(&s)),
                       s.reason);
    if (rc < 0) {
        json_decref(after);
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return;
    }
    silence_cb(r->c->alerts, &s);
    ctl_reply_json(r->c, r->req, 201, json_pack("{s:o}", "silence", after));
}

void h_silence_delete(struct ctl_req *r)
{
    char *end;
    errno = 0;
    long long id = strtoll(r->arg[0], &end, 10);
    if (errno || *end || id <= 0) {
        ctl_reply_errorf(r->c, r->req, 400, "id", "silence id must be a positive integer");
        return;
    }
    int rc = store_begin(r->c->store);
    if (rc == 0)
        rc = store_silence_delete(r->c->store, id);
    if (rc == -ENOENT) {
        ctl_reply_errorf(r->c, r->req, 404, NULL,
                         "no silence %lld (ended, or never made: docket alerts silences)", id);
        return;
    }
    char target[32];
    snprintf(target, sizeof target, "silence:%lld", id);
    if (rc == 0)
        rc = ctl_audit(r->c, r->id.user, "alert.unsilence", target, NULL, NULL, NULL);
    if (rc < 0) {
        ctl_reply_errorf(r->c, r->req, 500, NULL, "store: %s", store_errmsg(r->c->store));
        return;
    }
    struct ctl_alerts *a = r->c->alerts;
    for (int i = 0; i < a->nsil; i++)
        if (a->sil[i].id == id)
            a->sil[i] = a->sil[--a->nsil];
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:I}", "deleted", (json_int_t)id));
}
