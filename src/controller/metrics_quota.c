/*
 * metrics_quota.c - the /metrics families of quotas and queues (docs/monitoring.md
 * "Metrics"): per project and per group the GPUs in use, guaranteed and allowed; per tier
 * the pending jobs and how long the oldest has waited. What a chart of "GPU use by
 * project over time" and the rules "a project at its limit" or "jobs wait while GPUs
 * idle" need, read from the core as it is now (names are the policy's: no escaping).
 */
#include <stdio.h>
#include <string.h>

#include "controller/ctl.h"
#include "controller/metrics.h"
#include "util/dbuf.h"

static void family(struct dbuf *b, const char *name, const char *text)
{
    dbuf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, text, name);
}

static void projects_text(struct ctl *c, struct dbuf *b)
{
    static const char *const names[] = {"docket_project_gpus_used",
                                        "docket_project_gpus_guaranteed",
                                        "docket_project_gpu_limit", "docket_project_jobs_queued"};
    static const char *const texts[] = {
        "GPUs the project's running jobs hold", "GPUs the policy guarantees the project",
        "the project's hard cap on GPUs (absent: none)",
        "the project's pending and held jobs (its max_queued counts these)"};
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        family(b, names[f], texts[f]);
        for (size_t i = 0; i < sched_project_count(c->sched); i++) {
            struct sched_project_view v;
            if (sched_project_get(c->sched, i, &v) < 0)
                continue;
            double val = f == 0   ? v.gpus_in_use
                         : f == 1 ? v.spec.guarantee_gpus
                         : f == 2 ? v.spec.gpu_limit
                                  : v.queued;
            if (f == 2 && v.spec.gpu_limit < 0)
                continue;
            dbuf_printf(b, "%s{project=\"%s\",group=\"%s\"} %g\n", names[f], v.spec.name,
                        v.spec.group, val);
        }
    }
}

static void groups_text(struct ctl *c, struct dbuf *b)
{
    static const char *const names[] = {"docket_group_gpus_used", "docket_group_gpus_guaranteed",
                                        "docket_group_gpu_limit"};
    static const char *const texts[] = {"GPUs the group's projects' running jobs hold",
                                        "GPUs the policy guarantees the group (absent: none)",
                                        "the group's hard cap on GPUs (absent: none)"};
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        family(b, names[f], texts[f]);
        for (size_t i = 0; i < sched_group_count(c->sched); i++) {
            struct sched_group_view v;
            if (sched_group_get(c->sched, i, &v) < 0)
                continue;
            double val = f == 0 ? v.gpus_in_use : f == 1 ? v.spec.guarantee_gpus : v.spec.gpu_limit;
            if (f > 0 && val < 0)
                continue;
            dbuf_printf(b, "%s{group=\"%s\"} %g\n", names[f], v.spec.name, val);
        }
    }
}

/* Pending jobs per tier (held ones are not waiting for the scheduler) and the oldest. */
static void tiers_text(struct ctl *c, struct dbuf *b, int64_t now)
{
    const struct sched_policy *p = sched_get_policy(c->sched);
    long long n[SCHED_MAX_TIERS] = {0};
    int64_t oldest[SCHED_MAX_TIERS] = {0};
    for (size_t slot = 0; slot < sched_job_slots(c->sched); slot++) {
        struct sched_job_view v;
        if (sched_job_at(c->sched, slot, &v) < 0 || v.state != SCHED_PENDING || !v.tier)
            continue;
        for (int t = 0; t < p->ntiers; t++)
            if (strcmp(p->tiers[t].name, v.tier) == 0) {
                n[t]++;
                if (!oldest[t] || v.submit_ms < oldest[t])
                    oldest[t] = v.submit_ms;
                break;
            }
    }
    family(b, "docket_tier_jobs_pending", "pending jobs per tier (held jobs not counted)");
    for (int t = 0; t < p->ntiers; t++)
        dbuf_printf(b, "docket_tier_jobs_pending{tier=\"%s\"} %lld\n", p->tiers[t].name, n[t]);
    family(b, "docket_tier_oldest_wait_seconds",
           "how long the tier's oldest pending job has waited since it was submitted");
    for (int t = 0; t < p->ntiers; t++)
        dbuf_printf(b, "docket_tier_oldest_wait_seconds{tier=\"%s\"} %.3f\n", p->tiers[t].name,
                    oldest[t] && now > oldest[t] ? (double)(now - oldest[t]) / 1000.0 : 0.0);
}

void ctl_metrics_quota_text(struct ctl *c, struct dbuf *b, int64_t now)
{
    projects_text(c, b);
    groups_text(c, b);
    tiers_text(c, b, now);
}
