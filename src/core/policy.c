/*
 * policy.c - the policy's defaults (DESIGN §2-§3), its validation, and the names of
 * the core's enumerations. The numbers here are the documented defaults of
 * docs/scheduling.md; every one of them can be changed at run time.
 */
#include "core/policy.h"
#include "core/containers.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SEC  1000LL
#define MIN  (60 * SEC)
#define HOUR (60 * MIN)
#define DAY  (24 * HOUR)
/* Every duration of a policy stays below ten years, so that sums of a time and a few
 * durations never overflow int64 milliseconds. */
#define MAX_DURATION (3650 * DAY)

static bool duration_ok(int64_t d)
{
    return d >= 0 && d <= MAX_DURATION;
}

int err_set(struct sched_error *err, int code, const char *field, const char *fmt, ...)
{
    if (err) {
        err->code = code;
        snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
    }
    return code;
}

static void name_set(char *dst, const char *src)
{
    snprintf(dst, SCHED_NAME_MAX, "%s", src);
}

static void class_set(struct sched_class_spec *c, const char *name, int64_t limit, bool preemptible,
                      int order, int64_t protect, int retries, bool restart, bool requeueable)
{
    memset(c, 0, sizeof(*c));
    name_set(c->name, name);
    c->default_limit_ms = limit;
    c->preemptible = preemptible;
    c->preempt_order = order;
    c->protect_after_ms = protect;
    c->max_grace_ms = 10 * MIN;
    c->max_retries = retries;
    c->restart_on_failure = restart;
    c->requeueable = requeueable;
}

void sched_policy_defaults(struct sched_policy *p)
{
    memset(p, 0, sizeof(*p));
    static const char *tiers[] = {"critical", "high", "normal", "low"};
    static const int64_t starve[] = {1 * HOUR, 4 * HOUR, 12 * HOUR, 24 * HOUR};
    for (int i = 0; i < 4; i++) {
        name_set(p->tiers[i].name, tiers[i]);
        p->tiers[i].starve_after_ms = starve[i];
    }
    p->ntiers = 4;
    class_set(&p->classes[0], "training", 7 * DAY, true, 2, 24 * HOUR, 0, false, true);
    class_set(&p->classes[1], "experiment", 4 * HOUR, true, 1, 0, 3, false, true);
    class_set(&p->classes[2], "exploration", 1 * HOUR, true, 0, 0, 3, false, true);
    class_set(&p->classes[3], "interactive", 8 * HOUR, false, 3, 0, 0, false, false);
    class_set(&p->classes[4], "service", 0, false, 4, 0, 0, true, true);
    p->nclasses = 5;
    name_set(p->default_class, "experiment");

    p->ordering = SCHED_ORDER_TIERED;
    p->backfill = true;
    p->preemption = true;
    p->fairshare_half_life_ms = 7 * DAY;
    p->fairshare_refresh_ms = 5 * MIN; /* as Slurm's PriorityCalcPeriod */
    p->default_gpu_weight = 1.0;
    p->cpu_weight = 1.0 / 16;
    p->mem_weight_per_gb = 0;
    p->mf_age_weight = 1000;
    p->mf_fairshare_weight = 10000;
    p->mf_tier_weight = 10000;
    p->mf_age_max_ms = 7 * DAY;
    name_set(p->reserved_label_key, "pool");
    name_set(p->reserved_label_value, "reserved");
    p->reserved_max_ratio = 0.2;
    name_set(p->reserved_min_tier, "high");
    p->min_runtime_ms = 10 * MIN;
    p->max_preemptions = 3;
    p->preempt_max_per_cycle = 256;
    /* docketd stores and launches each start (~0.15 ms) and answers its agent's heartbeat
     * and events next: 64 keep one loop turn near 20 ms (docs/controller.md) */
    p->max_starts_per_cycle = 64;
    p->default_max_queued = 50000;
    p->user_max_queued = 10000;
    p->default_signal = SIGTERM;
    p->default_grace_ms = 30 * SEC;
    p->cancel_grace_ms = 10 * SEC;
    p->backfill_depth = 16;
    p->reservation_refresh_ms = 5 * MIN; /* with the fair-share refresh */
    p->service_restart_delay_ms = 10 * SEC;
    p->retry_delay_ms = 10 * SEC;
}

int policy_tier_find(const struct sched_policy *p, const char *name)
{
    for (int i = 0; i < p->ntiers; i++)
        if (strcmp(p->tiers[i].name, name) == 0)
            return i;
    return -1;
}

int policy_class_find(const struct sched_policy *p, const char *name)
{
    for (int i = 0; i < p->nclasses; i++)
        if (strcmp(p->classes[i].name, name) == 0)
            return i;
    return -1;
}

double policy_gpu_weight(const struct sched_policy *p, const char *type)
{
    for (int i = 0; i < p->ngpu_weights; i++)
        if (strcmp(p->gpu_weights[i].gpu_type, type) == 0)
            return p->gpu_weights[i].weight;
    return p->default_gpu_weight;
}

static bool name_ok(const char *s)
{
    size_t n = bounded_len(s, SCHED_NAME_MAX);
    if (n == 0 || n >= SCHED_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.';
        if (!ok)
            return false;
    }
    return true;
}

static int validate_tiers(const struct sched_policy *p, struct sched_error *err)
{
    if (p->ntiers < SCHED_MIN_TIERS || p->ntiers > SCHED_MAX_TIERS)
        return err_set(err, -EINVAL, "tiers", "a policy needs %d to %d tiers, not %d",
                       SCHED_MIN_TIERS, SCHED_MAX_TIERS, p->ntiers);
    for (int i = 0; i < p->ntiers; i++) {
        if (!name_ok(p->tiers[i].name))
            return err_set(err, -EINVAL, "tiers", "tier %d has an invalid name", i);
        if (policy_tier_find(p, p->tiers[i].name) != i)
            return err_set(err, -EINVAL, "tiers", "tier '%s' appears twice", p->tiers[i].name);
        if (!duration_ok(p->tiers[i].starve_after_ms))
            return err_set(err, -EINVAL, "tiers.starve_after",
                           "tier '%s': starve_after must be within 0..3650 days", p->tiers[i].name);
    }
    return 0;
}

static int validate_classes(const struct sched_policy *p, struct sched_error *err)
{
    if (p->nclasses < 1 || p->nclasses > SCHED_MAX_CLASSES)
        return err_set(err, -EINVAL, "classes", "a policy needs 1 to %d classes",
                       SCHED_MAX_CLASSES);
    for (int i = 0; i < p->nclasses; i++) {
        const struct sched_class_spec *c = &p->classes[i];
        if (!name_ok(c->name))
            return err_set(err, -EINVAL, "classes", "class %d has an invalid name", i);
        if (policy_class_find(p, c->name) != i)
            return err_set(err, -EINVAL, "classes", "class '%s' appears twice", c->name);
        if (!duration_ok(c->default_limit_ms) || !duration_ok(c->max_limit_ms) ||
            !duration_ok(c->protect_after_ms) || c->max_grace_ms < 0 || c->max_grace_ms > DAY ||
            c->max_retries < 0 || c->max_retries > 100 || c->topo_mode < SCHED_TOPO_NONE ||
            c->topo_mode > SCHED_TOPO_REQUIRED ||
            bounded_len(c->topo_level, SCHED_NAME_MAX) >= SCHED_NAME_MAX)
            return err_set(err, -EINVAL, "classes", "class '%s' has a negative or absurd value",
                           c->name);
    }
    if (policy_class_find(p, p->default_class) < 0)
        return err_set(err, -EINVAL, "default_class", "unknown default class '%s'",
                       p->default_class);
    return 0;
}

static int groups_validate(const struct sched_policy *p, struct sched_error *err)
{
    if (p->ngroups < 0 || p->ngroups > SCHED_MAX_GROUPS)
        return err_set(err, -EINVAL, "groups", "at most %d groups", SCHED_MAX_GROUPS);
    for (int i = 0; i < p->ngroups; i++) {
        const struct sched_group_spec *g = &p->groups[i];
        if (!name_ok(g->name))
            return err_set(err, -EINVAL, "groups", "a group needs a name of 1-63 characters");
        for (int k = 0; k < i; k++)
            if (strcmp(p->groups[k].name, g->name) == 0)
                return err_set(err, -EINVAL, "groups", "duplicate group '%s'", g->name);
        if (!(g->guarantee_gpus >= -1) || g->guarantee_gpus > 1e7 ||
            (g->guarantee_gpus < 0 && g->guarantee_gpus != -1))
            return err_set(err, -EINVAL, "groups", "group '%s': guarantee must be -1 or 0..1e7",
                           g->name);
        if (g->gpu_limit < -1)
            return err_set(err, -EINVAL, "groups", "group '%s': gpu_limit must be -1 or >= 0",
                           g->name);
    }
    return 0;
}

int policy_validate(const struct sched_policy *p, struct sched_error *err)
{
    int rc = validate_tiers(p, err);
    if (rc == 0)
        rc = validate_classes(p, err);
    if (rc)
        return rc;
    if (p->ordering < SCHED_ORDER_TIERED || p->ordering > SCHED_ORDER_MULTIFACTOR)
        return err_set(err, -EINVAL, "ordering", "unknown ordering %d", (int)p->ordering);
    if (p->fairshare_half_life_ms <= 0 || !duration_ok(p->fairshare_half_life_ms))
        return err_set(err, -EINVAL, "fairshare_half_life",
                       "half-life must be within 1 ms..3650 days");
    if (p->fairshare_refresh_ms <= 0 || !duration_ok(p->fairshare_refresh_ms))
        return err_set(err, -EINVAL, "fairshare_refresh",
                       "refresh period must be within 1 ms..3650 days");
    const struct {
        const char *field;
        int64_t v;
    } durations[] = {{"mf_age_max", p->mf_age_max_ms},
                     {"min_runtime", p->min_runtime_ms},
                     {"default_grace", p->default_grace_ms},
                     {"cancel_grace", p->cancel_grace_ms},
                     {"reservation_refresh", p->reservation_refresh_ms},
                     {"service_restart_delay", p->service_restart_delay_ms},
                     {"retry_delay", p->retry_delay_ms}};
    for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++)
        if (!duration_ok(durations[i].v))
            return err_set(err, -EINVAL, durations[i].field, "%s must be within 0..3650 days",
                           durations[i].field);
    if (p->default_grace_ms > DAY || p->cancel_grace_ms > DAY)
        return err_set(err, -EINVAL, p->default_grace_ms > DAY ? "default_grace" : "cancel_grace",
                       "a grace period is at most one day");
    if (p->reserved_max_ratio < 0 || p->reserved_max_ratio > 1)
        return err_set(err, -EINVAL, "reserved_max_ratio", "ratio must be within 0..1");
    if (policy_tier_find(p, p->reserved_min_tier) < 0)
        return err_set(err, -EINVAL, "reserved_min_tier", "unknown tier '%s'",
                       p->reserved_min_tier);
    if (p->min_runtime_ms < 0 || p->max_preemptions < 0 || p->default_grace_ms < 0 ||
        p->cancel_grace_ms < 0)
        return err_set(err, -EINVAL, "settings", "preemption settings must not be negative");
    if (p->default_signal < 1 || p->default_signal > 64)
        return err_set(err, -EINVAL, "default_signal", "signal %d out of range", p->default_signal);
    if (p->backfill_depth < 0 || p->backfill_depth > 10000)
        return err_set(err, -EINVAL, "backfill_depth", "backfill_depth must be within 0..10000");
    if (p->preempt_max_per_cycle < 1)
        return err_set(err, -EINVAL, "preempt_max_per_cycle", "must be at least 1");
    if (p->max_starts_per_cycle < 0 || p->max_starts_per_cycle > 1000000)
        return err_set(err, -EINVAL, "max_starts_per_cycle",
                       "must be 0 (no cap) or at most 1,000,000");
    if (p->default_max_queued < 0 || p->default_max_queued > 10000000 || p->user_max_queued < 0 ||
        p->user_max_queued > 10000000)
        return err_set(err, -EINVAL, "max_queued",
                       "max_queued and user_max_queued must be 0 (no cap)..10,000,000");
    if (p->cpu_weight < 0 || p->mem_weight_per_gb < 0 || p->default_gpu_weight < 0)
        return err_set(err, -EINVAL, "weights", "billing weights must not be negative");
    if (p->ngpu_weights < 0 || p->ngpu_weights > SCHED_MAX_GPU_TYPES)
        return err_set(err, -EINVAL, "gpu_weights", "too many GPU weights");
    for (int i = 0; i < p->ngpu_weights; i++)
        if (p->gpu_weights[i].weight < 0 || !name_ok(p->gpu_weights[i].gpu_type))
            return err_set(err, -EINVAL, "gpu_weights", "bad weight for GPU type '%s'",
                           p->gpu_weights[i].gpu_type);
    return groups_validate(p, err);
}

/* ---- names */

static const char *const job_state_names[] = {"PENDING",  "HELD",      "STARTING", "RUNNING",
                                              "STOPPING", "COMPLETED", "FAILED",   "CANCELLED",
                                              "TIMEOUT",  "PREEMPTED", "NODE_FAIL"};
static const char *const node_state_names[] = {"UP",   "DRAINING",    "DRAINED",
                                               "DOWN", "UNREACHABLE", "UNHEALTHY"};
static const char *const reason_names[] = {"",
                                           "Priority",
                                           "Resources",
                                           "QuotaLimit",
                                           "JobLimit",
                                           "Dependency",
                                           "Held",
                                           "ReservedZone",
                                           "GpuType",
                                           "NodeSelector",
                                           "BeginTime",
                                           "AdmissionPaused",
                                           "Reservation",
                                           "Preempting",
                                           "StorageQuota",
                                           "DependencyNeverSatisfied"};
static const char *const stop_names[] = {"",          "timeout", "preempted",
                                         "cancelled", "requeue", "node_fail"};

const char *sched_job_state_name(enum sched_job_state s)
{
    return (unsigned)s < SCHED_JOB_STATE_COUNT ? job_state_names[s] : "?";
}

const char *sched_node_state_name(enum sched_node_state s)
{
    return (unsigned)s < SCHED_NODE_STATE_COUNT ? node_state_names[s] : "?";
}

const char *sched_reason_name(enum sched_reason r)
{
    return (unsigned)r < SCHED_REASON_COUNT ? reason_names[r] : "?";
}

const char *sched_stop_cause_name(enum sched_stop_cause c)
{
    return (unsigned)c <= SCHED_STOP_NODE_FAIL ? stop_names[c] : "?";
}

bool sched_job_state_terminal(enum sched_job_state s)
{
    return s >= SCHED_COMPLETED && s < SCHED_JOB_STATE_COUNT;
}

int sched_job_state_parse(const char *name)
{
    for (int i = 0; i < SCHED_JOB_STATE_COUNT; i++)
        if (strcmp(job_state_names[i], name) == 0)
            return i;
    return -1;
}

int sched_node_state_parse(const char *name)
{
    for (int i = 0; i < SCHED_NODE_STATE_COUNT; i++)
        if (strcmp(node_state_names[i], name) == 0)
            return i;
    return -1;
}

/* ---- what changed (sched_set_policy) */

/* sizeof(struct sched_policy) on the 64-bit targets Docket builds for, when each field's
   part was last declared below */
#define POLICY_SIZE_KNOWN 14832

/* A new field in struct sched_policy must be given its part in policy_diff below: this
   fails the build until the size is updated with it. */
_Static_assert(sizeof(struct sched_policy) == POLICY_SIZE_KNOWN,
               "struct sched_policy changed: declare the new field's part in policy_diff");

static bool tiers_same(const struct sched_policy *a, const struct sched_policy *b)
{
    if (a->ntiers != b->ntiers)
        return false;
    for (int i = 0; i < a->ntiers; i++)
        if (strcmp(a->tiers[i].name, b->tiers[i].name) ||
            a->tiers[i].starve_after_ms != b->tiers[i].starve_after_ms)
            return false;
    return true;
}

static bool class_same(const struct sched_class_spec *a, const struct sched_class_spec *b)
{
    return !strcmp(a->name, b->name) && a->default_limit_ms == b->default_limit_ms &&
           a->max_limit_ms == b->max_limit_ms && a->preemptible == b->preemptible &&
           a->preempt_order == b->preempt_order && a->protect_after_ms == b->protect_after_ms &&
           a->max_grace_ms == b->max_grace_ms && a->max_retries == b->max_retries &&
           a->restart_on_failure == b->restart_on_failure && a->requeueable == b->requeueable &&
           a->topo_mode == b->topo_mode && !strcmp(a->topo_level, b->topo_level);
}

static bool classes_same(const struct sched_policy *a, const struct sched_policy *b)
{
    if (a->nclasses != b->nclasses || strcmp(a->default_class, b->default_class))
        return false;
    for (int i = 0; i < a->nclasses; i++)
        if (!class_same(&a->classes[i], &b->classes[i]))
            return false;
    return true;
}

static bool order_same(const struct sched_policy *a, const struct sched_policy *b)
{
    if (a->ordering != b->ordering || a->fairshare_half_life_ms != b->fairshare_half_life_ms ||
        a->ngpu_weights != b->ngpu_weights || a->default_gpu_weight != b->default_gpu_weight ||
        a->cpu_weight != b->cpu_weight || a->mem_weight_per_gb != b->mem_weight_per_gb ||
        a->mf_age_weight != b->mf_age_weight || a->mf_fairshare_weight != b->mf_fairshare_weight ||
        a->mf_tier_weight != b->mf_tier_weight || a->mf_age_max_ms != b->mf_age_max_ms)
        return false;
    for (int i = 0; i < a->ngpu_weights; i++)
        if (strcmp(a->gpu_weights[i].gpu_type, b->gpu_weights[i].gpu_type) ||
            a->gpu_weights[i].weight != b->gpu_weights[i].weight)
            return false;
    return true;
}

static bool zone_same(const struct sched_policy *a, const struct sched_policy *b)
{
    return !strcmp(a->reserved_label_key, b->reserved_label_key) &&
           !strcmp(a->reserved_label_value, b->reserved_label_value) &&
           a->reserved_max_ratio == b->reserved_max_ratio &&
           !strcmp(a->reserved_min_tier, b->reserved_min_tier);
}

static bool groups_same(const struct sched_policy *a, const struct sched_policy *b)
{
    if (a->ngroups != b->ngroups)
        return false;
    for (int i = 0; i < a->ngroups; i++)
        if (strcmp(a->groups[i].name, b->groups[i].name) ||
            a->groups[i].guarantee_gpus != b->groups[i].guarantee_gpus ||
            a->groups[i].gpu_limit != b->groups[i].gpu_limit)
            return false;
    return true;
}

static bool knobs_same(const struct sched_policy *a, const struct sched_policy *b)
{
    return a->fairshare_refresh_ms == b->fairshare_refresh_ms &&
           a->preempt_max_per_cycle == b->preempt_max_per_cycle &&
           a->max_starts_per_cycle == b->max_starts_per_cycle &&
           a->default_max_queued == b->default_max_queued &&
           a->user_max_queued == b->user_max_queued && a->default_signal == b->default_signal &&
           a->default_grace_ms == b->default_grace_ms && a->cancel_grace_ms == b->cancel_grace_ms &&
           a->reservation_refresh_ms == b->reservation_refresh_ms &&
           a->service_restart_delay_ms == b->service_restart_delay_ms &&
           a->retry_delay_ms == b->retry_delay_ms;
}

unsigned policy_diff(const struct sched_policy *a, const struct sched_policy *b)
{
    unsigned d = 0;
    d |= tiers_same(a, b) ? 0 : POLICY_TIERS;
    d |= classes_same(a, b) ? 0 : POLICY_CLASSES;
    d |= order_same(a, b) ? 0 : POLICY_ORDER;
    d |= zone_same(a, b) ? 0 : POLICY_ZONE;
    d |= a->preemption == b->preemption && a->min_runtime_ms == b->min_runtime_ms &&
                 a->max_preemptions == b->max_preemptions
             ? 0
             : POLICY_GUARDS;
    d |= a->backfill == b->backfill && a->backfill_depth == b->backfill_depth ? 0 : POLICY_BACKFILL;
    d |= groups_same(a, b) ? 0 : POLICY_GROUPS;
    d |= knobs_same(a, b) ? 0 : POLICY_KNOBS;
    return d;
}
