/*
 * alert_eval.c - fire, dedupe, resolve and silence alert instances (alert_eval.h,
 * docs/alerts.md). Pure: no I/O, no clock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/alert_eval.h"
#include "util/str.h"

struct alert_eval {
    struct alert_inst *v; /* firing ones in firing order first, then pending */
    size_t n, cap;
};

struct alert_eval *alert_eval_create(void)
{
    return calloc(1, sizeof(struct alert_eval));
}

void alert_eval_destroy(struct alert_eval *e)
{
    if (!e)
        return;
    free(e->v);
    free(e);
}

void alert_eval_begin(struct alert_eval *e)
{
    for (size_t i = 0; i < e->n; i++)
        e->v[i].seen = false;
}

static struct alert_inst *find(struct alert_eval *e, const char *rule, const char *key)
{
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->v[i].rule, rule) == 0 && strcmp(e->v[i].key, key) == 0)
            return &e->v[i];
    return NULL;
}

static struct alert_inst *add(struct alert_eval *e)
{
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 16;
        struct alert_inst *v = realloc(e->v, cap * sizeof(*v));
        if (!v)
            return NULL;
        e->v = v;
        e->cap = cap;
    }
    struct alert_inst *a = &e->v[e->n++];
    memset(a, 0, sizeof(*a));
    return a;
}

int alert_eval_observe(struct alert_eval *e, const struct proto_alert_rule *rule, const char *key,
                       const char *summary, int64_t now_ms)
{
    char k[ALERT_KEY_MAX];
    str_copy(k, sizeof k, key);
    struct alert_inst *a = find(e, rule->name, k);
    if (!a) {
        if (!(a = add(e)))
            return -ENOMEM;
        str_copy(a->rule, sizeof a->rule, rule->name);
        str_copy(a->key, sizeof a->key, k);
        a->since_ms = now_ms;
    }
    a->severity = rule->severity;
    a->kind = rule->kind;
    str_copy(a->summary, sizeof a->summary, summary);
    a->seen = true;
    return 0;
}

int alert_eval_restore(struct alert_eval *e, const struct alert_inst *inst)
{
    if (find(e, inst->rule, inst->key))
        return 0;
    struct alert_inst *a = add(e);
    if (!a)
        return -ENOMEM;
    *a = *inst;
    a->seen = false;
    return 0;
}

bool alert_silence_matches(const struct alert_silence *s, const char *rule, const char *key,
                           int64_t now_ms)
{
    return s->until_ms > now_ms && strcmp(s->rule, rule) == 0 &&
           (s->key[0] == '\0' || strcmp(s->key, key) == 0);
}

static bool silenced(const struct alert_silence *s, int n, const struct alert_inst *a, int64_t now)
{
    for (int i = 0; i < n; i++)
        if (alert_silence_matches(&s[i], a->rule, a->key, now))
            return true;
    return false;
}

static const struct proto_alert_rule *rule_of(const struct proto_alert_rule *rules, int n,
                                              const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(rules[i].name, name) == 0)
            return &rules[i];
    return NULL;
}

/* Keep firing instances first, in firing order (stable: insertion sort on a nearly sorted
 * array). */
static void reorder(struct alert_eval *e)
{
    for (size_t i = 1; i < e->n; i++) {
        struct alert_inst x = e->v[i];
        size_t j = i;
        int64_t xk = x.fired_ms ? x.fired_ms : INT64_MAX;
        while (j > 0) {
            int64_t pk = e->v[j - 1].fired_ms ? e->v[j - 1].fired_ms : INT64_MAX;
            if (pk <= xk)
                break;
            e->v[j] = e->v[j - 1];
            j--;
        }
        e->v[j] = x;
    }
}

void alert_eval_end(struct alert_eval *e, const struct proto_alert_rule *rules, int nrules,
                    const struct alert_silence *silences, int nsilences, int64_t now_ms,
                    alert_change_cb cb, void *arg)
{
    size_t w = 0;
    for (size_t i = 0; i < e->n; i++) {
        struct alert_inst *a = &e->v[i];
        const struct proto_alert_rule *r = rule_of(rules, nrules, a->rule);
        bool holds = a->seen && r;
        if (!holds) {
            if (a->fired_ms)
                cb(arg, ALERT_RESOLVED, a, a->silenced || silenced(silences, nsilences, a, now_ms),
                   now_ms);
            continue; /* forgotten */
        }
        /* an event rule's `for` is how long it stays firing (the caller observes it that
         * long): it fires at once */
        int64_t hold = proto_alert_kind_is_event(r->kind) ? 0 : r->for_ms;
        if (!a->fired_ms && now_ms - a->since_ms >= hold) {
            a->fired_ms = now_ms;
            a->silenced = silenced(silences, nsilences, a, now_ms);
            cb(arg, ALERT_FIRED, a, a->silenced, now_ms);
        }
        if (w != i)
            e->v[w] = *a;
        w++;
    }
    e->n = w;
    reorder(e);
}

size_t alert_eval_count(const struct alert_eval *e)
{
    return e->n;
}

const struct alert_inst *alert_eval_at(const struct alert_eval *e, size_t i)
{
    return i < e->n ? &e->v[i] : NULL;
}

int64_t alert_backoff_ms(int attempt, int64_t backoff_ms, int64_t max_backoff_ms)
{
    if (attempt <= 0)
        return 0;
    int64_t d = backoff_ms;
    for (int i = 1; i < attempt && d < max_backoff_ms; i++)
        d *= 2;
    return d < max_backoff_ms ? d : max_backoff_ms;
}

json_t *alert_body(const struct alert_inst *a, enum alert_change_kind what,
                   enum proto_route_shape shape, int64_t now_ms)
{
    const char *status = what == ALERT_FIRED ? "firing" : "resolved";
    const char *sev = proto_severity_name(a->severity);
    if (shape == PROTO_SHAPE_SLACK) {
        char text[ALERT_SUMMARY_MAX + 200];
        snprintf(text, sizeof text, "[%s] %s %s (%s): %s", sev,
                 what == ALERT_FIRED ? "FIRING" : "RESOLVED", a->rule, a->key, a->summary);
        return json_pack("{s:s}", "text", text);
    }
    return json_pack("{s:s,s:{s:I,s:s,s:s,s:s,s:s,s:s,s:I,s:I},s:I}", "status", status, "alert",
                     "id", (json_int_t)a->history_id, "rule", a->rule, "key", a->key, "kind",
                     proto_alert_kind_name(a->kind), "severity", sev, "summary", a->summary,
                     "fired_ms", (json_int_t)a->fired_ms, "resolved_ms",
                     (json_int_t)(what == ALERT_RESOLVED ? now_ms : 0), "time_ms",
                     (json_int_t)now_ms);
}
