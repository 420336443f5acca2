/*
 * alert_eval.h - the pure part of docketd's alerts (docs/alerts.md): which alert
 * instances fire, stay, resolve or are silenced, given what the rules observed at `now`;
 * the retry schedule of a delivery; the JSON bodies a webhook receives. No I/O, no clock
 * (time is an argument), no globals: tests/unit/controller/test_alerts.c drives it alone.
 *
 * An instance is one (rule, key) pair: "node-down" + "gpu03". A round is
 * alert_eval_begin, then alert_eval_observe for every condition that holds now, then
 * alert_eval_end, which reports each change through a callback:
 *  - a condition seen for the first time starts pending; once it has held the rule's
 *    `for_ms` (event rules: at once; their `for_ms` is how long the caller keeps
 *    observing the event) it FIRES (once: observing it again changes nothing, that is the dedupe);
 *  - a firing instance not observed in a round RESOLVES and is forgotten; a pending one
 *    is forgotten silently;
 *  - a change of an instance that a silence matches (same rule, and same key or the
 *    silence names none, until its end) is reported with silenced = true: it is kept in
 *    history but not delivered. A silence that ends does not replay what it hid.
 */
#ifndef DOCKET_CONTROLLER_ALERT_EVAL_H
#define DOCKET_CONTROLLER_ALERT_EVAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "protocol/ops.h"

enum { ALERT_KEY_MAX = 128, ALERT_SUMMARY_MAX = 256 };

struct alert_inst {
    char rule[PROTO_NAME_MAX];
    char key[ALERT_KEY_MAX];
    char summary[ALERT_SUMMARY_MAX];
    enum proto_severity severity;
    enum proto_alert_kind kind;
    int64_t since_ms;   /* condition first seen */
    int64_t fired_ms;   /* 0 while pending */
    int64_t history_id; /* the caller's row for it (set by the caller after FIRED) */
    bool silenced;      /* a silence matched it when it fired */
    bool seen;          /* observed in the current round */
};

struct alert_silence {
    int64_t id;
    char rule[PROTO_NAME_MAX];
    char key[ALERT_KEY_MAX]; /* "" = every key of the rule */
    int64_t until_ms;
};

enum alert_change_kind { ALERT_FIRED, ALERT_RESOLVED };

/* The instance is borrowed for the call only; the callback may set inst->history_id. */
typedef void (*alert_change_cb)(void *arg, enum alert_change_kind what, struct alert_inst *inst,
                                bool silenced, int64_t now_ms);

struct alert_eval;

struct alert_eval *alert_eval_create(void);
void alert_eval_destroy(struct alert_eval *e);
void alert_eval_begin(struct alert_eval *e);
/* The condition of `rule` holds for `key` now (summary: one human line). Rules and keys
 * too long are cut. 0 or -ENOMEM. */
int alert_eval_observe(struct alert_eval *e, const struct proto_alert_rule *rule, const char *key,
                       const char *summary, int64_t now_ms);
/* Close the round (see above). rules: the current rules (an instance of a rule no longer
 * there resolves); silences: those in force or not (their end is checked against now). */
void alert_eval_end(struct alert_eval *e, const struct proto_alert_rule *rules, int nrules,
                    const struct alert_silence *silences, int nsilences, int64_t now_ms,
                    alert_change_cb cb, void *arg);
/* Take back an instance that was firing before a restart (its history row open). */
int alert_eval_restore(struct alert_eval *e, const struct alert_inst *inst);
/* The instances (firing first, in firing order, then pending). Borrowed until the next
 * call that changes e. */
size_t alert_eval_count(const struct alert_eval *e);
const struct alert_inst *alert_eval_at(const struct alert_eval *e, size_t i);

/* Does silence s (not ended at now) match rule/key? */
bool alert_silence_matches(const struct alert_silence *s, const char *rule, const char *key,
                           int64_t now_ms);

/* The delay before try `attempt` (1 = the first retry): backoff * 2^(attempt-1), at most
 * max_backoff; 0 for attempt 0 (the first try). */
int64_t alert_backoff_ms(int attempt, int64_t backoff_ms, int64_t max_backoff_ms);

/* The body of one notification: generic {"status","alert":{...},"time_ms"} or Slack
 * {"text"} (docs/alerts.md "Shapes"). A new reference. */
json_t *alert_body(const struct alert_inst *inst, enum alert_change_kind what,
                   enum proto_route_shape shape, int64_t now_ms);

#endif
