/*
 * policy.c - the policy document of POST /v1/policy and docketd.yaml (docs/api.md
 * "Projects, tiers, classes, policy"): tiers, classes, settings and projects, parsed on
 * top of the current policy into the core's plain structs, validated whole. Also the
 * JSON forms of tiers, classes and the policy for the GET endpoints.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/agent_msg.h"
#include "protocol/ops.h"
#include "protocol/proto.h"
#include "protocol/network.h"
#include "protocol/site.h"
#include "protocol/storage.h"
#include "protocol/templates.h"
#include "util/parse.h"
#include "util/str.h"
#include "util/xalloc.h"
#include "util/yamljson.h"

#define DAY_MS ((int64_t)24 * 3600 * 1000)

static int get_dur(const json_t *o, const char *key, const char *path, int64_t *out,
                   struct proto_error *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    char f[160];
    snprintf(f, sizeof(f), "%s%s%s", path, path[0] ? "." : "", key);
    return proto_get_duration(v, f, PROTO_MAX_DURATION_MS, out, err);
}

static int get_i(const json_t *o, const char *key, const char *path, int64_t min, int64_t max,
                 int *out, struct proto_error *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    char f[160];
    int64_t n;
    snprintf(f, sizeof(f), "%s%s%s", path, path[0] ? "." : "", key);
    int rc = proto_get_int(v, f, min, max, &n, err);
    if (rc == 0)
        *out = (int)n;
    return rc;
}

static int get_b(const json_t *o, const char *key, const char *path, bool *out,
                 struct proto_error *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    char f[160];
    snprintf(f, sizeof(f), "%s%s%s", path, path[0] ? "." : "", key);
    return proto_get_bool(v, f, out, err);
}

static int get_d(const json_t *o, const char *key, const char *path, double min, double max,
                 double *out, struct proto_error *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    char f[160];
    snprintf(f, sizeof(f), "%s%s%s", path, path[0] ? "." : "", key);
    if (!json_is_number(v))
        return proto_errorf(err, 400, NULL, f, "%s must be a number", f);
    double d = json_number_value(v);
    if (!(d >= min && d <= max))
        return proto_errorf(err, 400, NULL, f, "%s must be between %g and %g", f, min, max);
    *out = d;
    return 0;
}

static int get_n(const json_t *o, const char *key, const char *path, char *out,
                 struct proto_error *err)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    char f[160];
    snprintf(f, sizeof(f), "%s%s%s", path, path[0] ? "." : "", key);
    return proto_get_name(v, f, out, err);
}

/* ------------------------------------------------------------------------------------ */

static int parse_tiers(const json_t *v, struct sched_policy *p, struct proto_error *err)
{
    static const char *const known[] = {"name", "starve_after", NULL};
    if (!json_is_array(v) || json_array_size(v) < SCHED_MIN_TIERS ||
        json_array_size(v) > SCHED_MAX_TIERS)
        return proto_errorf(err, 400, NULL, "tiers", "tiers must be a list of %d to %d tiers",
                            SCHED_MIN_TIERS, SCHED_MAX_TIERS);
    struct sched_tier_spec t[SCHED_MAX_TIERS];
    memset(t, 0, sizeof(t));
    size_t n = json_array_size(v);
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(v, i);
        char path[32];
        snprintf(path, sizeof(path), "tiers[%zu]", i);
        if (!json_is_object(o))
            return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
        int rc = proto_check_fields(o, path, known, err);
        if (rc < 0)
            return rc;
        if (!json_object_get(o, "name"))
            return proto_errorf(err, 400, NULL, path, "%s.name is required", path);
        if ((rc = get_n(o, "name", path, t[i].name, err)) < 0 ||
            (rc = get_dur(o, "starve_after", path, &t[i].starve_after_ms, err)) < 0)
            return rc;
        for (size_t k = 0; k < i; k++)
            if (strcmp(t[k].name, t[i].name) == 0)
                return proto_errorf(err, 400, NULL, path, "duplicate tier '%s'", t[i].name);
    }
    memcpy(p->tiers, t, sizeof(t));
    p->ntiers = (int)n;
    return 0;
}

static const char *const idle_actions[] = {"none", "alert", "requeue", "cancel"};

const char *proto_idle_action_name(enum proto_idle_action a)
{
    return a >= PROTO_IDLE_NONE && a <= PROTO_IDLE_CANCEL ? idle_actions[a] : "unset";
}

/* idle: {gpu_util_below: 5, for: 30m, action: alert|requeue|cancel}; null removes it. */
static int parse_idle(const json_t *v, const char *path, struct proto_idle_rule *r,
                      struct proto_error *err)
{
    static const char *const known[] = {"gpu_util_below", "for", "action", NULL};
    char p[160], f[192];
    snprintf(p, sizeof(p), "%s%sidle", path, path[0] ? "." : "");
    memset(r, 0, sizeof(*r));
    r->action = PROTO_IDLE_NONE;
    if (json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, p,
                            "%s must be an object such as {gpu_util_below: 5, "
                            "for: 30m, action: alert}",
                            p);
    int rc = proto_check_fields(v, p, known, err);
    if (rc < 0)
        return rc;
    snprintf(f, sizeof(f), "%s.%s", p, json_object_get(v, "for") ? "gpu_util_below" : "for");
    if (!json_object_get(v, "gpu_util_below") || !json_object_get(v, "for"))
        return proto_errorf(err, 400, NULL, f, "%s is required", f);
    if ((rc = get_i(v, "gpu_util_below", p, 1, 100, &r->gpu_util_below, err)) < 0 ||
        (rc = get_dur(v, "for", p, &r->for_ms, err)) < 0)
        return rc;
    snprintf(f, sizeof(f), "%s.for", p);
    if (r->for_ms < 1000)
        return proto_errorf(err, 400, NULL, f, "%s must be at least 1s", f);
    r->action = PROTO_IDLE_ALERT;
    json_t *a = json_object_get(v, "action");
    snprintf(f, sizeof(f), "%s.action", p);
    if (!a)
        return 0;
    for (int i = PROTO_IDLE_ALERT; i <= PROTO_IDLE_CANCEL; i++)
        if (json_is_string(a) && strcmp(json_string_value(a), idle_actions[i]) == 0) {
            r->action = (enum proto_idle_action)i;
            return 0;
        }
    return proto_errorf(err, 400, NULL, f, "%s must be alert, requeue or cancel", f);
}

/* A class's node fields; cn NULL (a class PATCH) refuses them. */
static int parse_class_node(const json_t *o, const char *path, struct proto_class_node *cn,
                            struct proto_error *err)
{
    char f[160];
    json_t *pm = json_object_get(o, "pids_max"), *dm = json_object_get(o, "default_mem");
    json_t *idle = json_object_get(o, "idle"), *lease = json_object_get(o, "lease");
    json_t *sidle = json_object_get(o, "session_idle");
    if (cn) {
        cn->pids_max = cn->default_mem_mb = cn->lease_ms = cn->session_idle_ms = -1;
        cn->idle.action = PROTO_IDLE_UNSET;
    }
    if (!cn && (pm || dm || idle || lease || sidle)) {
        snprintf(f, sizeof(f), "%s%s%s", path, path[0] ? "." : "",
                 pm      ? "pids_max"
                 : dm    ? "default_mem"
                 : lease ? "lease"
                 : sidle ? "session_idle"
                         : "idle");
        return proto_errorf(err, 400, NULL, f,
                            "%s is set with the policy document (docket apply), not here", f);
    }
    if (pm) {
        snprintf(f, sizeof(f), "%s%spids_max", path, path[0] ? "." : "");
        int rc = proto_get_int(pm, f, 0, (int64_t)1 << 32, &cn->pids_max, err);
        if (rc < 0)
            return rc;
    }
    if (dm) {
        snprintf(f, sizeof(f), "%s%sdefault_mem", path, path[0] ? "." : "");
        if (json_is_integer(dm) && json_integer_value(dm) >= 0 &&
            json_integer_value(dm) <= PROTO_MAX_MEM_MB)
            cn->default_mem_mb = json_integer_value(dm);
        else if (!json_is_string(dm) ||
                 parse_size_mb(json_string_value(dm), &cn->default_mem_mb) < 0 ||
                 cn->default_mem_mb > PROTO_MAX_MEM_MB)
            return proto_errorf(err, 400, NULL, f, "%s must be a size such as \"16G\"", f);
    }
    if (lease) {
        snprintf(f, sizeof(f), "%s%slease", path, path[0] ? "." : "");
        int rc = proto_get_duration(lease, f, AGENT_LEASE_MAX_MS, &cn->lease_ms, err);
        if (rc < 0)
            return rc;
    }
    if (sidle) {
        snprintf(f, sizeof(f), "%s%ssession_idle", path, path[0] ? "." : "");
        int rc =
            proto_get_duration(sidle, f, (int64_t)7 * 24 * 3600 * 1000, &cn->session_idle_ms, err);
        if (rc < 0)
            return rc;
        if (cn->session_idle_ms < 1000)
            return proto_errorf(err, 400, NULL, f, "%s must be at least 1s", f);
    }
    return idle ? parse_idle(idle, path, &cn->idle, err) : 0;
}

/* `topology: {level: switch, mode: best_effort|required}`: how the class's gangs are
 * placed over the nodes' topology labels (docs/scheduling.md §3, "Topology"); `mode: none`
 * (or `topology: null`) takes the rule away. */
static int parse_topology(const json_t *o, const char *path, struct sched_class_spec *c,
                          struct proto_error *err)
{
    static const char *const known[] = {"level", "mode", NULL};
    json_t *v = json_object_get(o, "topology");
    if (!v)
        return 0;
    char f[160];
    snprintf(f, sizeof(f), "%s%stopology", path, path[0] ? "." : "");
    if (json_is_null(v)) {
        c->topo_mode = SCHED_TOPO_NONE;
        c->topo_level[0] = '\0';
        return 0;
    }
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, f, "%s must be {level: switch, mode: required}", f);
    int rc = proto_check_fields(v, f, known, err);
    if (rc < 0)
        return rc;
    char level[SCHED_NAME_MAX] = "switch";
    if ((rc = get_n(v, "level", f, level, err)) < 0)
        return rc;
    json_t *m = json_object_get(v, "mode");
    const char *mode = json_is_string(m) ? json_string_value(m) : NULL;
    enum sched_topo_mode parsed = !m                                 ? SCHED_TOPO_BEST_EFFORT
                                  : !mode                            ? (enum sched_topo_mode) - 1
                                  : strcmp(mode, "required") == 0    ? SCHED_TOPO_REQUIRED
                                  : strcmp(mode, "best_effort") == 0 ? SCHED_TOPO_BEST_EFFORT
                                  : strcmp(mode, "none") == 0        ? SCHED_TOPO_NONE
                                                                     : (enum sched_topo_mode) - 1;
    if ((int)parsed < 0)
        return proto_errorf(err, 400, NULL, f, "%s.mode must be best_effort, required or none", f);
    c->topo_mode = parsed;
    str_copy(c->topo_level, sizeof(c->topo_level), parsed == SCHED_TOPO_NONE ? "" : level);
    return 0;
}

const char *proto_topo_mode_name(enum sched_topo_mode m)
{
    return m == SCHED_TOPO_REQUIRED      ? "required"
           : m == SCHED_TOPO_BEST_EFFORT ? "best_effort"
                                         : "none";
}

static int parse_class_fields(const json_t *o, const char *path, struct sched_class_spec *c,
                              struct proto_class_node *cn, struct proto_error *err)
{
    static const char *const known[] = {"name",
                                        "default_limit",
                                        "max_limit",
                                        "preemptible",
                                        "preempt_order",
                                        "protect_after",
                                        "max_grace",
                                        "max_retries",
                                        "restart_on_failure",
                                        "requeueable",
                                        "pids_max",
                                        "default_mem",
                                        "idle",
                                        "lease",
                                        "session_idle",
                                        "topology",
                                        NULL};
    int rc;
    if ((rc = proto_check_fields(o, path, known, err)) < 0 ||
        (rc = parse_class_node(o, path, cn, err)) < 0 ||
        (rc = get_dur(o, "default_limit", path, &c->default_limit_ms, err)) < 0 ||
        (rc = get_dur(o, "max_limit", path, &c->max_limit_ms, err)) < 0 ||
        (rc = get_b(o, "preemptible", path, &c->preemptible, err)) < 0 ||
        (rc = get_i(o, "preempt_order", path, 0, 100, &c->preempt_order, err)) < 0 ||
        (rc = get_dur(o, "protect_after", path, &c->protect_after_ms, err)) < 0 ||
        (rc = get_dur(o, "max_grace", path, &c->max_grace_ms, err)) < 0 ||
        (rc = get_i(o, "max_retries", path, 0, PROTO_MAX_RETRIES, &c->max_retries, err)) < 0 ||
        (rc = get_b(o, "restart_on_failure", path, &c->restart_on_failure, err)) < 0 ||
        (rc = get_b(o, "requeueable", path, &c->requeueable, err)) < 0 ||
        (rc = parse_topology(o, path, c, err)) < 0)
        return rc;
    if (c->max_limit_ms && c->default_limit_ms > c->max_limit_ms) {
        char f[160];
        snprintf(f, sizeof(f), "%s%sdefault_limit", path, path[0] ? "." : "");
        return proto_errorf(err, 400, NULL, f, "default_limit is above max_limit");
    }
    /* stopping a job for idleness is a preemption: only where the class allows one */
    if (cn && cn->idle.action >= PROTO_IDLE_REQUEUE && !c->preemptible) {
        char f[160];
        snprintf(f, sizeof(f), "%s%sidle.action", path, path[0] ? "." : "");
        return proto_errorf(err, 400, NULL, f,
                            "%s %s needs a preemptible class (class '%s' is not): use alert", f,
                            proto_idle_action_name(cn->idle.action), c->name);
    }
    return 0;
}

static int parse_classes(const json_t *v, struct sched_policy *p, struct proto_class_node *cn,
                         struct proto_error *err)
{
    if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > SCHED_MAX_CLASSES)
        return proto_errorf(err, 400, NULL, "classes", "classes must be a list of 1 to %d classes",
                            SCHED_MAX_CLASSES);
    struct sched_class_spec c[SCHED_MAX_CLASSES];
    memset(c, 0, sizeof(c));
    size_t n = json_array_size(v);
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(v, i);
        char path[32];
        snprintf(path, sizeof(path), "classes[%zu]", i);
        if (!json_is_object(o))
            return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
        char name[PROTO_NAME_MAX] = "";
        int rc;
        if (!json_object_get(o, "name"))
            return proto_errorf(err, 400, NULL, path, "%s.name is required", path);
        if ((rc = get_n(o, "name", path, name, err)) < 0)
            return rc;
        /* start from the class of that name in the base policy, if any */
        for (int k = 0; k < p->nclasses; k++)
            if (strcmp(p->classes[k].name, name) == 0)
                c[i] = p->classes[k];
        str_copy(c[i].name, sizeof(c[i].name), name);
        if ((rc = parse_class_fields(o, path, &c[i], &cn[i], err)) < 0)
            return rc;
        for (size_t k = 0; k < i; k++)
            if (strcmp(c[k].name, c[i].name) == 0)
                return proto_errorf(err, 400, NULL, path, "duplicate class '%s'", name);
    }
    memcpy(p->classes, c, sizeof(c));
    p->nclasses = (int)n;
    return 0;
}

static int parse_gpu_weights(const json_t *v, struct sched_policy *p, struct proto_error *err)
{
    if (!json_is_object(v) || json_object_size(v) > SCHED_MAX_GPU_TYPES)
        return proto_errorf(err, 400, NULL, "settings.gpu_weights",
                            "settings.gpu_weights must be an object of at most %d numbers",
                            SCHED_MAX_GPU_TYPES);
    const char *k;
    json_t *w;
    int n = 0;
    json_object_foreach((json_t *)v, k, w) {
        char f[160];
        snprintf(f, sizeof(f), "settings.gpu_weights.%.64s", k);
        if (!str_is_name(k))
            return proto_errorf(err, 400, NULL, f, "invalid gpu type '%.64s'", k);
        if (!json_is_number(w) || json_number_value(w) < 0 || json_number_value(w) > 1000)
            return proto_errorf(err, 400, NULL, f, "%s must be a number between 0 and 1000", f);
        str_copy(p->gpu_weights[n].gpu_type, SCHED_NAME_MAX, k);
        p->gpu_weights[n].weight = json_number_value(w);
        n++;
    }
    p->ngpu_weights = n;
    return 0;
}

static int parse_ordering(const json_t *v, struct sched_policy *p, struct proto_error *err)
{
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    if (strcmp(s, "tiered") == 0)
        p->ordering = SCHED_ORDER_TIERED;
    else if (strcmp(s, "fifo") == 0)
        p->ordering = SCHED_ORDER_FIFO;
    else if (strcmp(s, "multifactor") == 0)
        p->ordering = SCHED_ORDER_MULTIFACTOR;
    else
        return proto_errorf(err, 400, NULL, "settings.ordering",
                            "settings.ordering must be \"tiered\", \"fifo\" or \"multifactor\"");
    return 0;
}

static int parse_settings(const json_t *s, struct sched_policy *p, struct proto_error *err)
{
    static const char *const known[] = {"fairshare_half_life",
                                        "fairshare_refresh",
                                        "min_runtime",
                                        "max_preemptions",
                                        "reserved_max_ratio",
                                        "reserved_min_tier",
                                        "reserved_label",
                                        "backfill_depth",
                                        "gpu_weights",
                                        "default_gpu_weight",
                                        "cpu_weight",
                                        "mem_weight_per_gb",
                                        "default_class",
                                        "ordering",
                                        "backfill",
                                        "preemption",
                                        "preempt_max_per_cycle",
                                        "max_starts_per_cycle",
                                        "max_queued",
                                        "user_max_queued",
                                        "default_signal",
                                        "default_grace",
                                        "cancel_grace",
                                        "reservation_refresh",
                                        "service_restart_delay",
                                        "retry_delay",
                                        "mf_age_weight",
                                        "mf_fairshare_weight",
                                        "mf_tier_weight",
                                        "mf_age_max",
                                        NULL};
    const char *P = "settings";
    int rc;
    if (!json_is_object(s))
        return proto_errorf(err, 400, NULL, P, "settings must be an object");
    if ((rc = proto_check_fields(s, P, known, err)) < 0 ||
        (rc = get_dur(s, "fairshare_half_life", P, &p->fairshare_half_life_ms, err)) < 0 ||
        (rc = get_dur(s, "fairshare_refresh", P, &p->fairshare_refresh_ms, err)) < 0 ||
        (rc = get_dur(s, "min_runtime", P, &p->min_runtime_ms, err)) < 0 ||
        (rc = get_i(s, "max_preemptions", P, 0, 1000, &p->max_preemptions, err)) < 0 ||
        (rc = get_d(s, "reserved_max_ratio", P, 0, 1, &p->reserved_max_ratio, err)) < 0 ||
        (rc = get_n(s, "reserved_min_tier", P, p->reserved_min_tier, err)) < 0 ||
        (rc = get_i(s, "backfill_depth", P, 0, 100000, &p->backfill_depth, err)) < 0 ||
        (rc = get_d(s, "default_gpu_weight", P, 0, 1000, &p->default_gpu_weight, err)) < 0 ||
        (rc = get_d(s, "cpu_weight", P, 0, 1000, &p->cpu_weight, err)) < 0 ||
        (rc = get_d(s, "mem_weight_per_gb", P, 0, 1000, &p->mem_weight_per_gb, err)) < 0 ||
        (rc = get_n(s, "default_class", P, p->default_class, err)) < 0 ||
        (rc = get_b(s, "backfill", P, &p->backfill, err)) < 0 ||
        (rc = get_b(s, "preemption", P, &p->preemption, err)) < 0 ||
        (rc = get_i(s, "max_starts_per_cycle", P, 0, 1000000, &p->max_starts_per_cycle, err)) < 0 ||
        (rc = get_i(s, "max_queued", P, 0, 10000000, &p->default_max_queued, err)) < 0 ||
        (rc = get_i(s, "user_max_queued", P, 0, 10000000, &p->user_max_queued, err)) < 0 ||
        (rc = get_i(s, "preempt_max_per_cycle", P, 0, 100000, &p->preempt_max_per_cycle, err)) <
            0 ||
        (rc = get_dur(s, "default_grace", P, &p->default_grace_ms, err)) < 0 ||
        (rc = get_dur(s, "cancel_grace", P, &p->cancel_grace_ms, err)) < 0 ||
        (rc = get_dur(s, "reservation_refresh", P, &p->reservation_refresh_ms, err)) < 0 ||
        (rc = get_dur(s, "service_restart_delay", P, &p->service_restart_delay_ms, err)) < 0 ||
        (rc = get_dur(s, "retry_delay", P, &p->retry_delay_ms, err)) < 0 ||
        (rc = get_d(s, "mf_age_weight", P, 0, 1e9, &p->mf_age_weight, err)) < 0 ||
        (rc = get_d(s, "mf_fairshare_weight", P, 0, 1e9, &p->mf_fairshare_weight, err)) < 0 ||
        (rc = get_d(s, "mf_tier_weight", P, 0, 1e9, &p->mf_tier_weight, err)) < 0 ||
        (rc = get_dur(s, "mf_age_max", P, &p->mf_age_max_ms, err)) < 0)
        return rc;
    json_t *v;
    if ((v = json_object_get(s, "gpu_weights")) && (rc = parse_gpu_weights(v, p, err)) < 0)
        return rc;
    if ((v = json_object_get(s, "ordering")) && (rc = parse_ordering(v, p, err)) < 0)
        return rc;
    if ((v = json_object_get(s, "default_signal"))) {
        int sig;
        if (!json_is_string(v) || parse_signal(json_string_value(v), &sig) < 0)
            return proto_errorf(err, 400, NULL, "settings.default_signal",
                                "settings.default_signal must be a signal name");
        p->default_signal = sig;
    }
    if ((v = json_object_get(s, "reserved_label"))) {
        char k[SCHED_NAME_MAX], val[SCHED_NAME_MAX];
        if (!json_is_string(v) ||
            parse_label(json_string_value(v), k, sizeof(k), val, sizeof(val)) < 0)
            return proto_errorf(err, 400, NULL, "settings.reserved_label",
                                "settings.reserved_label must be \"key=value\"");
        str_copy(p->reserved_label_key, sizeof(p->reserved_label_key), k);
        str_copy(p->reserved_label_value, sizeof(p->reserved_label_value), val);
    }
    return 0;
}

int proto_project_parse(const json_t *obj, const char *path, bool patch,
                        struct sched_project_spec *p, struct proto_error *err)
{
    static const char *const known[] = {
        "name",           "group",       "tier",       "guarantee_gpus",
        "gpu_limit",      "max_running", "max_queued", "user_max_running",
        "user_gpu_limit", "paused",      NULL};
    int rc;
    if (!json_is_object(obj))
        return proto_errorf(err, 400, NULL, path[0] ? path : NULL, "%s must be an object",
                            path[0] ? path : "the project");
    if ((rc = proto_check_fields(obj, path, known, err)) < 0)
        return rc;
    json_t *name = json_object_get(obj, "name");
    char f[160];
    snprintf(f, sizeof(f), "%s%sname", path, path[0] ? "." : "");
    if (patch) {
        if (name && (!json_is_string(name) || strcmp(json_string_value(name), p->name) != 0))
            return proto_errorf(err, 400, NULL, f, "a project cannot be renamed");
    } else {
        if (!name)
            return proto_errorf(err, 400, NULL, f, "%s is required", f);
        if ((rc = get_n(obj, "name", path, p->name, err)) < 0)
            return rc;
    }
    json_t *g = json_object_get(obj, "group");
    if (g && json_is_string(g) && json_string_length(g) == 0)
        p->group[0] = '\0'; /* no group */
    else if ((rc = get_n(obj, "group", path, p->group, err)) < 0)
        return rc;
    if ((rc = get_n(obj, "tier", path, p->tier, err)) < 0 ||
        (rc = get_d(obj, "guarantee_gpus", path, 0, 1e6, &p->guarantee_gpus, err)) < 0 ||
        (rc = get_i(obj, "gpu_limit", path, -1, 1000000, &p->gpu_limit, err)) < 0 ||
        (rc = get_i(obj, "max_running", path, -1, 10000000, &p->max_running, err)) < 0 ||
        (rc = get_i(obj, "max_queued", path, -1, 10000000, &p->max_queued, err)) < 0 ||
        (rc = get_i(obj, "user_max_running", path, -1, 10000000, &p->user_max_running, err)) < 0 ||
        (rc = get_i(obj, "user_gpu_limit", path, -1, 1000000, &p->user_gpu_limit, err)) < 0 ||
        (rc = get_b(obj, "paused", path, &p->paused, err)) < 0)
        return rc;
    return 0;
}

/* groups: [{name, guarantee_gpus, gpu_limit}]; the list replaces the base's. Bounds
 * default to -1 (none). */
static int parse_groups(const json_t *v, struct sched_policy *p, struct proto_error *err)
{
    static const char *const known[] = {"name", "guarantee_gpus", "gpu_limit", NULL};
    if (!json_is_array(v) || json_array_size(v) > SCHED_MAX_GROUPS)
        return proto_errorf(err, 400, NULL, "groups", "groups must be a list of at most %d groups",
                            SCHED_MAX_GROUPS);
    p->ngroups = 0;
    for (size_t i = 0; i < json_array_size(v); i++) {
        char path[32];
        snprintf(path, sizeof(path), "groups[%zu]", i);
        const json_t *o = json_array_get(v, i);
        int rc;
        if (!json_is_object(o))
            return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
        if ((rc = proto_check_fields(o, path, known, err)) < 0)
            return rc;
        struct sched_group_spec *g = &p->groups[i];
        memset(g, 0, sizeof(*g));
        g->guarantee_gpus = -1;
        g->gpu_limit = -1;
        char f[48];
        snprintf(f, sizeof(f), "%s.name", path);
        if (!json_object_get(o, "name"))
            return proto_errorf(err, 400, NULL, f, "%s is required", f);
        if ((rc = get_n(o, "name", path, g->name, err)) < 0 ||
            (rc = get_d(o, "guarantee_gpus", path, -1, 1e6, &g->guarantee_gpus, err)) < 0 ||
            (rc = get_i(o, "gpu_limit", path, -1, 1000000, &g->gpu_limit, err)) < 0)
            return rc;
        if (g->guarantee_gpus < 0 && g->guarantee_gpus != -1) {
            snprintf(f, sizeof(f), "%s.guarantee_gpus", path);
            return proto_errorf(err, 400, NULL, f, "%s must be -1 (none) or >= 0", f);
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(p->groups[k].name, g->name) == 0)
                return proto_errorf(err, 400, NULL, path, "duplicate group '%s'", g->name);
        p->ngroups = (int)i + 1;
    }
    return 0;
}

static bool tier_known(const struct sched_policy *p, const char *t)
{
    for (int i = 0; i < p->ntiers; i++)
        if (strcmp(p->tiers[i].name, t) == 0)
            return true;
    return false;
}

/* One of a project's user lists (`members`, `leads`, `default_for`) into out->members
 * (roles) or out->defaults. A default needs the user listed in the project too. */
static int project_users(const json_t *o, const char *key, const char *path, const char *project,
                         struct proto_policy *out, struct proto_error *err)
{
    const json_t *list = json_object_get(o, key);
    char f[160];
    snprintf(f, sizeof(f), "%s.%s", path, key);
    if (!list)
        return 0;
    if (!json_is_array(list))
        return proto_errorf(err, 400, NULL, f, "%s must be a list of user names", f);
    if (!out->members) {
        out->members = json_array();
        out->defaults = json_object();
    }
    size_t i;
    json_t *u;
    json_array_foreach(list, i, u) {
        char user[PROTO_NAME_MAX];
        if (proto_get_name(u, f, user, err) < 0)
            return -EINVAL;
        if (json_array_size(out->members) >= PROTO_MAX_POLICY_MEMBERS)
            return proto_errorf(err, 400, NULL, f, "at most %d memberships in one document",
                                PROTO_MAX_POLICY_MEMBERS);
        if (strcmp(key, "default_for") != 0) {
            const char *role = strcmp(key, "leads") == 0 ? "lead" : "member";
            json_array_append_new(out->members, json_pack("{s:s,s:s,s:s}", "project", project,
                                                          "user", user, "role", role));
            continue;
        }
        const char *other = json_string_value(json_object_get(out->defaults, user));
        if (other)
            return proto_errorf(err, 400, NULL, f, "%s: '%s' already defaults to project '%s'", f,
                                user, other);
        bool listed = false;
        size_t k;
        json_t *m;
        json_array_foreach(out->members, k, m) {
            listed =
                listed || (!strcmp(json_string_value(json_object_get(m, "project")), project) &&
                           !strcmp(json_string_value(json_object_get(m, "user")), user));
        }
        if (!listed)
            return proto_errorf(err, 400, NULL, f,
                                "%s: '%s' must be among the project's members or leads", f, user);
        json_object_set_new(out->defaults, user, json_string(project));
    }
    return 0;
}

/* A project entry without its user lists, for proto_project_parse; the lists then. */
static int parse_project_entry(const json_t *o, const char *path, struct sched_project_spec *p,
                               struct proto_policy *out, struct proto_error *err)
{
    static const char *const lists[] = {"members", "leads", "default_for"};
    json_t *bare = json_is_object(o) ? json_copy((json_t *)o) : json_incref((json_t *)o);
    for (size_t i = 0; json_is_object(bare) && i < sizeof(lists) / sizeof(lists[0]); i++)
        json_object_del(bare, lists[i]);
    int rc = proto_project_parse(bare, path, false, p, err);
    json_decref(bare);
    for (size_t i = 0; rc == 0 && i < sizeof(lists) / sizeof(lists[0]); i++)
        rc = project_users(o, lists[i], path, p->name, out, err);
    return rc;
}

static int parse_projects(const json_t *v, struct proto_policy *out, struct proto_error *err)
{
    if (!json_is_array(v) || json_array_size(v) > PROTO_MAX_PROJECTS)
        return proto_errorf(err, 400, NULL, "projects",
                            "projects must be a list of at most %d projects", PROTO_MAX_PROJECTS);
    size_t n = json_array_size(v);
    out->projects = calloc(n ? n : 1, sizeof(*out->projects));
    if (!out->projects)
        return proto_errorf(err, 500, NULL, "projects", "out of memory");
    for (size_t i = 0; i < n; i++) {
        char path[32];
        snprintf(path, sizeof(path), "projects[%zu]", i);
        struct sched_project_spec *p = &out->projects[i];
        memset(p, 0, sizeof(*p));
        str_copy(p->tier, sizeof(p->tier), "normal");
        p->gpu_limit = p->max_running = p->max_queued = -1;
        p->user_max_running = p->user_gpu_limit = -1;
        int rc = parse_project_entry(json_array_get(v, i), path, p, out, err);
        if (rc < 0)
            return rc;
        out->nprojects = i + 1;
        if (!json_object_get(json_array_get(v, i), "tier") && !tier_known(&out->policy, p->tier))
            str_copy(p->tier, sizeof(p->tier), out->policy.tiers[out->policy.ntiers - 1].name);
        if (!tier_known(&out->policy, p->tier)) {
            char f[48];
            snprintf(f, sizeof(f), "%s.tier", path);
            return proto_errorf(err, 400, NULL, f, "unknown tier '%s'", p->tier);
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(out->projects[k].name, p->name) == 0)
                return proto_errorf(err, 400, NULL, path, "duplicate project '%s'", p->name);
    }
    return 0;
}

static int check_policy(const struct sched_policy *p, struct proto_error *err)
{
    if (p->reserved_min_tier[0] && !tier_known(p, p->reserved_min_tier))
        return proto_errorf(err, 400, NULL, "settings.reserved_min_tier", "unknown tier '%s'",
                            p->reserved_min_tier);
    bool found = false;
    for (int i = 0; i < p->nclasses; i++)
        if (strcmp(p->classes[i].name, p->default_class) == 0)
            found = true;
    if (!found)
        return proto_errorf(err, 400, NULL, "settings.default_class", "unknown class '%s'",
                            p->default_class);
    return 0;
}

/* The operator's sections (protocol/ops.h), each replacing the current one whole. */
static int parse_ops(const json_t *doc, struct proto_policy *out, struct proto_error *err)
{
    json_t *v;
    int rc;
    if ((v = json_object_get(doc, "alerts"))) {
        out->alerts = xmalloc(sizeof(*out->alerts));
        if ((rc = proto_alerts_parse(v, out->alerts, err)) < 0)
            return rc;
    }
    if ((v = json_object_get(doc, "prices"))) {
        out->prices = xmalloc(sizeof(*out->prices));
        if ((rc = proto_prices_parse(v, out->prices, err)) < 0)
            return rc;
    }
    if ((v = json_object_get(doc, "templates"))) {
        out->templates = xcalloc(1, sizeof(*out->templates));
        if ((rc = proto_templates_parse(v, out->templates, err)) < 0 ||
            (rc = proto_templates_check_classes(out->templates, out->policy.classes,
                                                out->policy.nclasses, err)) < 0)
            return rc;
    }
    if ((v = json_object_get(doc, "storage"))) {
        out->storage = xmalloc(sizeof(*out->storage));
        if ((rc = storage_policy_parse(v, out->storage, err)) < 0)
            return rc;
    }
    if ((v = json_object_get(doc, "network"))) {
        out->network = xmalloc(sizeof(*out->network));
        if ((rc = net_policy_parse(v, out->network, err)) < 0)
            return rc;
    }
    if ((v = json_object_get(doc, "gpu_aliases")) &&
        (rc = proto_gpu_aliases_parse(v, &out->gpu_aliases, err)) < 0)
        return rc;
    if ((v = json_object_get(doc, "partitions")) &&
        (rc = proto_partitions_parse(v, &out->policy, &out->partitions, err)) < 0)
        return rc;
    if ((v = json_object_get(doc, "node_labels")) &&
        (rc = proto_node_labels_parse(v, &out->node_labels, err)) < 0)
        return rc;
    return 0;
}

int proto_policy_parse(const json_t *doc, const struct sched_policy *base, struct proto_policy *out,
                       struct proto_error *err)
{
    static const char *const known[] = {
        "tiers",     "classes", "settings", "projects",    "groups",     "alerts",      "prices",
        "templates", "storage", "network",  "gpu_aliases", "partitions", "node_labels", NULL};
    memset(out, 0, sizeof(*out));
    out->policy = *base;
    int rc;
    if (!json_is_object(doc))
        return proto_errorf(err, 400, NULL, NULL, "the policy document must be an object");
    if ((rc = proto_check_fields(doc, "", known, err)) < 0)
        goto fail;
    json_t *v;
    if ((v = json_object_get(doc, "tiers"))) {
        out->has_tiers = true;
        if ((rc = parse_tiers(v, &out->policy, err)) < 0)
            goto fail;
    }
    if ((v = json_object_get(doc, "classes"))) {
        out->has_classes = true;
        if ((rc = parse_classes(v, &out->policy, out->class_node, err)) < 0)
            goto fail;
    }
    if ((v = json_object_get(doc, "settings"))) {
        out->has_settings = true;
        if ((rc = parse_settings(v, &out->policy, err)) < 0)
            goto fail;
    }
    if ((v = json_object_get(doc, "groups")) && (rc = parse_groups(v, &out->policy, err)) < 0)
        goto fail;
    if ((rc = check_policy(&out->policy, err)) < 0 || (rc = parse_ops(doc, out, err)) < 0)
        goto fail;
    if ((v = json_object_get(doc, "projects")) && (rc = parse_projects(v, out, err)) < 0)
        goto fail;
    return 0;
fail:
    proto_policy_release(out);
    return rc;
}

int proto_policy_parse_text(const char *text, size_t len, bool yaml,
                            const struct sched_policy *base, struct proto_policy *out,
                            struct proto_error *err)
{
    json_t *doc;
    memset(out, 0, sizeof(*out));
    if (yaml) {
        char msg[200] = "";
        doc = yaml_to_json(text, len, msg, sizeof(msg));
        if (!doc)
            return proto_errorf(err, 400, NULL, NULL, "malformed yaml: %s", msg);
    } else {
        json_error_t je;
        doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        if (!doc)
            return proto_errorf(err, 400, NULL, NULL, "malformed json: %s (line %d)", je.text,
                                je.line);
    }
    int rc = proto_policy_parse(doc, base, out, err);
    json_decref(doc);
    return rc;
}

void proto_policy_release(struct proto_policy *p)
{
    free(p->alerts);
    free(p->prices);
    free(p->storage);
    free(p->network);
    p->network = NULL;
    p->alerts = NULL;
    p->prices = NULL;
    p->storage = NULL;
    if (p->templates)
        proto_templates_release(p->templates);
    free(p->templates);
    p->templates = NULL;
    json_decref(p->gpu_aliases);
    json_decref(p->partitions);
    json_decref(p->members);
    json_decref(p->defaults);
    json_decref(p->node_labels);
    p->gpu_aliases = p->partitions = p->members = p->defaults = p->node_labels = NULL;
    free(p->projects);
    p->projects = NULL;
    p->nprojects = 0;
}

/* ------------------------------------------------------------------------------------ */
/* Output                                                                                */

/* Durations go out as strings the parser reads back exactly ("90s", "250ms"). */
static json_t *dur(int64_t ms)
{
    char b[32];
    if (ms % 1000 == 0)
        snprintf(b, sizeof(b), "%llds", (long long)(ms / 1000));
    else
        snprintf(b, sizeof(b), "%lldms", (long long)ms);
    return json_string(b);
}

json_t *proto_tier_json(const struct sched_policy *p, int i)
{
    return json_pack("{s:s,s:i,s:I}", "name", p->tiers[i].name, "rank", i, "starve_after_ms",
                     (json_int_t)p->tiers[i].starve_after_ms);
}

static json_t *topology_json(const struct sched_class_spec *c)
{
    return json_pack("{s:s,s:s}", "level", c->topo_level[0] ? c->topo_level : "switch", "mode",
                     proto_topo_mode_name(c->topo_mode));
}

json_t *proto_class_json(const struct sched_class_spec *c)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(c->name));
    json_object_set_new(o, "default_limit_ms", json_integer(c->default_limit_ms));
    json_object_set_new(o, "max_limit_ms", json_integer(c->max_limit_ms));
    json_object_set_new(o, "preemptible", json_boolean(c->preemptible));
    json_object_set_new(o, "preempt_order", json_integer(c->preempt_order));
    json_object_set_new(o, "protect_after_ms", json_integer(c->protect_after_ms));
    json_object_set_new(o, "max_grace_ms", json_integer(c->max_grace_ms));
    json_object_set_new(o, "max_retries", json_integer(c->max_retries));
    json_object_set_new(o, "restart_on_failure", json_boolean(c->restart_on_failure));
    json_object_set_new(o, "requeueable", json_boolean(c->requeueable));
    if (c->topo_mode != SCHED_TOPO_NONE)
        json_object_set_new(o, "topology", topology_json(c));
    return o;
}

void proto_class_node_json(json_t *classes, const struct sched_policy *p,
                           const struct proto_class_node *cn)
{
    for (int i = 0; i < p->nclasses && i < (int)json_array_size(classes); i++) {
        json_t *o = json_array_get(classes, i);
        if (cn[i].pids_max > 0)
            json_object_set_new(o, "pids_max", json_integer(cn[i].pids_max));
        if (cn[i].default_mem_mb > 0) {
            char b[32];
            if (cn[i].default_mem_mb % 1024 == 0)
                snprintf(b, sizeof(b), "%lldG", (long long)(cn[i].default_mem_mb / 1024));
            else
                snprintf(b, sizeof(b), "%lldM", (long long)cn[i].default_mem_mb);
            json_object_set_new(o, "default_mem", json_string(b));
        }
        if (cn[i].lease_ms >= 0)
            json_object_set_new(o, "lease", dur(cn[i].lease_ms));
        if (cn[i].session_idle_ms > 0)
            json_object_set_new(o, "session_idle", dur(cn[i].session_idle_ms));
        if (cn[i].idle.action > PROTO_IDLE_NONE)
            json_object_set_new(o, "idle",
                                json_pack("{s:i,s:o,s:s}", "gpu_util_below",
                                          cn[i].idle.gpu_util_below, "for", dur(cn[i].idle.for_ms),
                                          "action", proto_idle_action_name(cn[i].idle.action)));
    }
}

int proto_class_patch(const json_t *body, struct sched_class_spec *c, struct proto_error *err)
{
    if (!json_is_object(body))
        return proto_errorf(err, 400, NULL, NULL, "the body must be a JSON object");
    json_t *name = json_object_get(body, "name");
    if (name && (!json_is_string(name) || strcmp(json_string_value(name), c->name) != 0))
        return proto_errorf(err, 400, NULL, "name", "a class cannot be renamed");
    struct sched_class_spec tmp = *c;
    int rc = parse_class_fields(body, "", &tmp, NULL, err);
    if (rc == 0)
        *c = tmp;
    return rc;
}

static const char *ordering_name(enum sched_ordering o)
{
    return o == SCHED_ORDER_FIFO ? "fifo" : o == SCHED_ORDER_MULTIFACTOR ? "multifactor" : "tiered";
}

static json_t *settings_json(const struct sched_policy *p)
{
    json_t *s = json_object();
    json_object_set_new(s, "fairshare_half_life", dur(p->fairshare_half_life_ms));
    json_object_set_new(s, "fairshare_refresh", dur(p->fairshare_refresh_ms));
    json_object_set_new(s, "min_runtime", dur(p->min_runtime_ms));
    json_object_set_new(s, "max_preemptions", json_integer(p->max_preemptions));
    json_object_set_new(s, "reserved_max_ratio", json_real(p->reserved_max_ratio));
    if (p->reserved_min_tier[0])
        json_object_set_new(s, "reserved_min_tier", json_string(p->reserved_min_tier));
    if (p->reserved_label_key[0]) {
        char b[2 * SCHED_NAME_MAX + 2];
        snprintf(b, sizeof(b), "%s=%s", p->reserved_label_key, p->reserved_label_value);
        json_object_set_new(s, "reserved_label", json_string(b));
    }
    json_object_set_new(s, "backfill_depth", json_integer(p->backfill_depth));
    json_t *w = json_object();
    for (int i = 0; i < p->ngpu_weights; i++)
        json_object_set_new(w, p->gpu_weights[i].gpu_type, json_real(p->gpu_weights[i].weight));
    json_object_set_new(s, "gpu_weights", w);
    json_object_set_new(s, "default_gpu_weight", json_real(p->default_gpu_weight));
    json_object_set_new(s, "cpu_weight", json_real(p->cpu_weight));
    json_object_set_new(s, "mem_weight_per_gb", json_real(p->mem_weight_per_gb));
    json_object_set_new(s, "default_class", json_string(p->default_class));
    json_object_set_new(s, "ordering", json_string(ordering_name(p->ordering)));
    json_object_set_new(s, "backfill", json_boolean(p->backfill));
    json_object_set_new(s, "preemption", json_boolean(p->preemption));
    json_object_set_new(s, "preempt_max_per_cycle", json_integer(p->preempt_max_per_cycle));
    json_object_set_new(s, "max_starts_per_cycle", json_integer(p->max_starts_per_cycle));
    json_object_set_new(s, "max_queued", json_integer(p->default_max_queued));
    json_object_set_new(s, "user_max_queued", json_integer(p->user_max_queued));
    if (p->default_signal > 0)
        json_object_set_new(s, "default_signal", json_string(signal_name(p->default_signal)));
    json_object_set_new(s, "default_grace", dur(p->default_grace_ms));
    json_object_set_new(s, "cancel_grace", dur(p->cancel_grace_ms));
    json_object_set_new(s, "reservation_refresh", dur(p->reservation_refresh_ms));
    json_object_set_new(s, "service_restart_delay", dur(p->service_restart_delay_ms));
    json_object_set_new(s, "retry_delay", dur(p->retry_delay_ms));
    json_object_set_new(s, "mf_age_weight", json_real(p->mf_age_weight));
    json_object_set_new(s, "mf_fairshare_weight", json_real(p->mf_fairshare_weight));
    json_object_set_new(s, "mf_tier_weight", json_real(p->mf_tier_weight));
    json_object_set_new(s, "mf_age_max", dur(p->mf_age_max_ms));
    return s;
}

json_t *proto_policy_to_json(const struct sched_policy *p)
{
    json_t *tiers = json_array();
    for (int i = 0; i < p->ntiers; i++)
        json_array_append_new(tiers, json_pack("{s:s,s:o}", "name", p->tiers[i].name,
                                               "starve_after", dur(p->tiers[i].starve_after_ms)));
    json_t *classes = json_array();
    for (int i = 0; i < p->nclasses; i++) {
        const struct sched_class_spec *c = &p->classes[i];
        json_t *co =
            json_pack("{s:s,s:o,s:o,s:b,s:i,s:o,s:o,s:i,s:b,s:b}", "name", c->name, "default_limit",
                      dur(c->default_limit_ms), "max_limit", dur(c->max_limit_ms), "preemptible",
                      c->preemptible, "preempt_order", c->preempt_order, "protect_after",
                      dur(c->protect_after_ms), "max_grace", dur(c->max_grace_ms), "max_retries",
                      c->max_retries, "restart_on_failure", c->restart_on_failure, "requeueable",
                      c->requeueable);
        if (c->topo_mode != SCHED_TOPO_NONE)
            json_object_set_new(co, "topology", topology_json(c));
        json_array_append_new(classes, co);
    }
    json_t *groups = json_array();
    for (int i = 0; i < p->ngroups; i++)
        json_array_append_new(groups, json_pack("{s:s,s:f,s:i}", "name", p->groups[i].name,
                                                "guarantee_gpus", p->groups[i].guarantee_gpus,
                                                "gpu_limit", p->groups[i].gpu_limit));
    return json_pack("{s:o,s:o,s:o,s:o}", "tiers", tiers, "classes", classes, "settings",
                     settings_json(p), "groups", groups);
}
