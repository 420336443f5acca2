/*
 * alerts.h - what alerts.c owns: graded alerts (docs/alerts.md), their silences and
 * deliveries, and the operator's sections of the policy (alerts, prices).
 */
#ifndef DOCKET_CONTROLLER_ALERTS_H
#define DOCKET_CONTROLLER_ALERTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct ctl;
struct ctl_alerts;
struct ctl_req;
struct proto_policy;
struct proto_prices;

/* ctl_alerts_take keeps a parsed policy's alerts and prices (those it has); ctl_ops_json
 * adds the current ones (or pp's) to a policy document, webhook URLs and secrets hidden
 * when redact. start (after restore): silences, alerts firing before the restart, the
 * delivery thread, the round timer. The hooks note failures for the event rules.
 * ctl_alerts_round runs one round now. ctl_alerts_job_idle (usage.c, at each sample) keeps
 * whether a job's current idle stretch is flagged (flagged_ms != 0, idle_since_ms != 0):
 * the input of the gpu_idle rules, which fire per such job while it runs and resolve when
 * it is busy again or ends. */
void ctl_alerts_take(struct ctl *c, const struct proto_policy *pp);
void ctl_ops_json(struct ctl *c, json_t *doc, const struct proto_policy *pp, bool redact);
const struct proto_prices *ctl_prices(struct ctl *c);
int ctl_alerts_start(struct ctl *c);
void ctl_alerts_stop(struct ctl *c);
void ctl_alerts_round(struct ctl *c);
void ctl_alerts_job_failed(struct ctl *c, uint64_t job, const char *project, const char *state,
                           const char *node);
void ctl_alerts_reclaim_failed(struct ctl *c, const char *node, uint64_t job, const char *msg);
void ctl_alerts_job_idle(struct ctl *c, uint64_t job, int64_t idle_since_ms, int64_t flagged_ms,
                         int below);
/* For /metrics: {"rule=\"R\",severity=\"S\"": instances firing (silenced ones too)} for
 * every rule of the policy (0 when none fires). A new reference. */
json_t *ctl_alerts_firing_counts(struct ctl *c);
void h_alerts_list(struct ctl_req *r);
void h_alerts_history(struct ctl_req *r);
void h_silences_list(struct ctl_req *r);
void h_silence_add(struct ctl_req *r);
void h_silence_delete(struct ctl_req *r);

#endif
