/*
 * config.c - cluster description, policy document and mapping rules for docket-sim
 * (see config.h; formats in docs/sim.md). YAML goes through util/yamljson.h, then every
 * field is checked here by name: unknown keys, wrong types and out-of-range values are
 * errors naming the field, never ignored.
 */
#include "sim/config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/proto.h"
#include "util/parse.h"
#include "util/str.h"
#include "util/yamljson.h"

static int cerr(char *err, size_t len, const char *file, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int cerr(char *err, size_t len, const char *file, const char *field, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(err, len, "%s: %s: %s", file, field, msg);
    return -EINVAL;
}

/* Context for field errors: the file and the path of the object being read. */
struct jctx {
    const char *file;
    char path[96];
    char *err;
    size_t errlen;
};

static int jfail(struct jctx *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int jfail(struct jctx *c, const char *key, const char *fmt, ...)
{
    char field[160], msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (c->path[0] && key)
        snprintf(field, sizeof(field), "%s.%s", c->path, key);
    else
        snprintf(field, sizeof(field), "%s", key ? key : c->path);
    return cerr(c->err, c->errlen, c->file, field, "%s", msg);
}

/* Every key of `obj` must be in the NULL-terminated list. */
static int only_keys(struct jctx *c, json_t *obj, const char *const *keys)
{
    const char *k;
    json_t *v;

    json_object_foreach(obj, k, v) {
        int i = 0;

        while (keys[i] && strcmp(keys[i], k) != 0)
            i++;
        if (!keys[i])
            return jfail(c, k, "unknown key");
    }
    return 0;
}

static int get_int(struct jctx *c, json_t *obj, const char *key, int64_t min, int64_t max,
                   int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    int64_t x;

    if (!v)
        return 0;
    if (json_is_integer(v))
        x = json_integer_value(v);
    else if (!json_is_string(v) || parse_int64(json_string_value(v), min, max, &x) < 0)
        return jfail(c, key, "expected an integer");
    if (x < min || x > max)
        return jfail(c, key, "%lld out of range %lld..%lld", (long long)x, (long long)min,
                     (long long)max);
    *out = x;
    return 0;
}

static int get_i32(struct jctx *c, json_t *obj, const char *key, int min, int max, int *out)
{
    int64_t v = *out;

    if (get_int(c, obj, key, min, max, &v) < 0)
        return -EINVAL;
    *out = (int)v;
    return 0;
}

static int get_double(struct jctx *c, json_t *obj, const char *key, double min, double max,
                      double *out)
{
    json_t *v = json_object_get(obj, key);

    if (!v)
        return 0;
    if (!json_is_number(v))
        return jfail(c, key, "expected a number");
    if (!(json_number_value(v) >= min && json_number_value(v) <= max))
        return jfail(c, key, "%g out of range %g..%g", json_number_value(v), min, max);
    *out = json_number_value(v);
    return 0;
}

static int get_bool(struct jctx *c, json_t *obj, const char *key, bool *out)
{
    json_t *v = json_object_get(obj, key);

    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return jfail(c, key, "expected true or false");
    *out = json_is_true(v);
    return 0;
}

static int get_str(struct jctx *c, json_t *obj, const char *key, char *dst, size_t len)
{
    json_t *v = json_object_get(obj, key);

    if (!v)
        return 0;
    if (!json_is_string(v))
        return jfail(c, key, "expected a string");
    if (str_copy(dst, len, json_string_value(v)) < 0)
        return jfail(c, key, "longer than %zu characters", len - 1);
    return 0;
}

static int get_name(struct jctx *c, json_t *obj, const char *key, char *dst, size_t len)
{
    if (get_str(c, obj, key, dst, len) < 0)
        return -EINVAL;
    if (json_object_get(obj, key) && dst[0] && !str_is_name(dst))
        return jfail(c, key, "'%s' is not a name ([A-Za-z0-9._-], starting alphanumeric)", dst);
    return 0;
}

/* A duration: KEY as "90s"/"4h"/seconds, or KEY_ms as integer milliseconds. */
static int get_duration(struct jctx *c, json_t *obj, const char *key, int64_t *out)
{
    char kms[80];
    json_t *v = json_object_get(obj, key);
    int64_t ms;

    snprintf(kms, sizeof(kms), "%s_ms", key);
    if (json_object_get(obj, kms))
        return get_int(c, obj, kms, 0, INT64_MAX / 4, out);
    if (!v)
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= 0 &&
        json_integer_value(v) <= INT64_MAX / 4000)
        ms = json_integer_value(v) * 1000;
    else if (!json_is_string(v) || parse_duration_ms(json_string_value(v), &ms) < 0)
        return jfail(c, key, "expected a duration such as 90s, 15m, 4h, 7d");
    *out = ms;
    return 0;
}

static int get_size(struct jctx *c, json_t *obj, const char *key, int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    int64_t mb;

    if (!v)
        return 0;
    if (json_is_integer(v) && json_integer_value(v) >= 0)
        mb = json_integer_value(v);
    else if (!json_is_string(v) || parse_size_mb(json_string_value(v), &mb) < 0)
        return jfail(c, key, "expected a size such as 512M, 256G");
    *out = mb;
    return 0;
}

static json_t *load_yaml(const char *path, char *err, size_t errlen)
{
    char msg[256];
    json_t *doc = yaml_file_to_json(path, msg, sizeof(msg));

    if (!doc) {
        if (strstr(msg, path))
            snprintf(err, errlen, "%s", msg);
        else
            snprintf(err, errlen, "%s: %s", path, msg);
        return NULL;
    }
    if (!json_is_object(doc)) {
        snprintf(err, errlen, "%s: expected a mapping at the top level", path);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* ---------------------------------------------------------------------------------- */
/* Cluster                                                                            */

static int labels_from_json(struct jctx *c, json_t *obj, struct sched_label *labels, int *nlabels)
{
    const char *k;
    json_t *v;

    if (!json_is_object(obj))
        return jfail(c, "labels", "expected a mapping of key: value");
    json_object_foreach(obj, k, v) {
        if (*nlabels == SCHED_MAX_LABELS)
            return jfail(c, "labels", "more than %d labels", SCHED_MAX_LABELS);
        if (!str_is_name(k))
            return jfail(c, "labels", "'%s' is not a label key", k);
        if (!json_is_string(v) && !json_is_integer(v))
            return jfail(c, "labels", "value of '%s' must be a string", k);
        (void)str_copy(labels[*nlabels].key, SCHED_NAME_MAX, k);
        if (json_is_string(v)) {
            if (str_copy(labels[*nlabels].value, SCHED_NAME_MAX, json_string_value(v)) < 0)
                return jfail(c, "labels", "value of '%s' too long", k);
        } else {
            snprintf(labels[*nlabels].value, SCHED_NAME_MAX, "%lld",
                     (long long)json_integer_value(v));
        }
        (*nlabels)++;
    }
    return 0;
}

static int group_from_json(struct jctx *c, json_t *g, struct sim_node_group *out)
{
    static const char *const keys[] = {
        "name", "count", "gpus", "gpu_type", "gpu_mem", "cpus", "mem", "labels", NULL,
    };
    int64_t count = -1;

    memset(out, 0, sizeof(*out));
    out->cpus = 64;
    if (!json_is_object(g))
        return jfail(c, NULL, "expected a mapping");
    if (only_keys(c, g, keys) < 0 || get_name(c, g, "name", out->prefix, sizeof(out->prefix)) < 0 ||
        get_int(c, g, "count", 0, 1000000, &count) < 0 ||
        get_i32(c, g, "gpus", 0, SCHED_MAX_NODE_GPUS, &out->gpus) < 0 ||
        get_str(c, g, "gpu_type", out->gpu_type, sizeof(out->gpu_type)) < 0 ||
        get_size(c, g, "gpu_mem", &out->gpu_mem_mb) < 0 ||
        get_i32(c, g, "cpus", 1, 1000000, &out->cpus) < 0 ||
        get_size(c, g, "mem", &out->mem_mb) < 0)
        return -EINVAL;
    if (!out->prefix[0])
        return jfail(c, "name", "missing (the node name prefix)");
    if (strlen(out->prefix) > SCHED_NAME_MAX - 10)
        return jfail(c, "name", "prefix longer than %d characters", SCHED_NAME_MAX - 10);
    if (count < 0)
        return jfail(c, "count", "missing");
    out->count = (int)count;
    if (out->gpus > 0 && !out->gpu_type[0])
        return jfail(c, "gpu_type", "missing (required when gpus > 0)");
    if (out->gpu_type[0] && !str_is_name(out->gpu_type))
        return jfail(c, "gpu_type", "'%s' is not a name", out->gpu_type);
    if (json_object_get(g, "labels") &&
        labels_from_json(c, json_object_get(g, "labels"), out->labels, &out->nlabels) < 0)
        return -EINVAL;
    return 0;
}

int sim_cluster_from_json(json_t *doc, const char *name, struct sim_cluster *out, char *err,
                          size_t errlen)
{
    static const char *const keys[] = {"name", "description", "node_groups", NULL};
    struct jctx c = {.file = name, .err = err, .errlen = errlen};
    json_t *groups = json_object_get(doc, "node_groups");
    size_t i;
    json_t *g;

    memset(out, 0, sizeof(*out));
    if (!json_is_object(doc))
        return cerr(err, errlen, name, "(top)", "expected a mapping");
    if (only_keys(&c, doc, keys) < 0)
        return -EINVAL;
    if (!json_is_array(groups) || json_array_size(groups) == 0)
        return cerr(err, errlen, name, "node_groups", "expected a non-empty list");
    out->groups = calloc(json_array_size(groups), sizeof(*out->groups));
    if (!out->groups)
        return cerr(err, errlen, name, "node_groups", "out of memory");
    json_array_foreach(groups, i, g) {
        snprintf(c.path, sizeof(c.path), "node_groups[%zu]", i);
        if (group_from_json(&c, g, &out->groups[i]) < 0) {
            sim_cluster_release(out);
            return -EINVAL;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(out->groups[j].prefix, out->groups[i].prefix) == 0) {
                jfail(&c, "name", "prefix '%s' used twice", out->groups[i].prefix);
                sim_cluster_release(out);
                return -EINVAL;
            }
        }
        out->ngroups++;
    }
    if (sim_cluster_nodes(out) == 0) {
        sim_cluster_release(out);
        return cerr(err, errlen, name, "node_groups", "no nodes (every count is 0)");
    }
    return 0;
}

int sim_cluster_load(const char *path, struct sim_cluster *out, char *err, size_t errlen)
{
    json_t *doc = load_yaml(path, err, errlen);
    int rc;

    memset(out, 0, sizeof(*out));
    if (!doc)
        return -EINVAL;
    rc = sim_cluster_from_json(doc, path, out, err, errlen);
    json_decref(doc);
    return rc;
}

void sim_cluster_release(struct sim_cluster *c)
{
    free(c->groups);
    c->groups = NULL;
    c->ngroups = 0;
}

int sim_cluster_copy(struct sim_cluster *dst, const struct sim_cluster *src)
{
    memset(dst, 0, sizeof(*dst));
    if (src->ngroups == 0)
        return 0;
    dst->groups = malloc((size_t)src->ngroups * sizeof(*dst->groups));
    if (!dst->groups)
        return -ENOMEM;
    memcpy(dst->groups, src->groups, (size_t)src->ngroups * sizeof(*dst->groups));
    dst->ngroups = src->ngroups;
    return 0;
}

void sim_cluster_scale(struct sim_cluster *c, double scale)
{
    for (int i = 0; i < c->ngroups; i++) {
        long n = lround(c->groups[i].count * scale);

        if (n < 1 && c->groups[i].count > 0)
            n = 1;
        c->groups[i].count = (int)n;
    }
}

long sim_cluster_nodes(const struct sim_cluster *c)
{
    long n = 0;

    for (int i = 0; i < c->ngroups; i++)
        n += c->groups[i].count;
    return n;
}

static bool group_has_label(const struct sim_node_group *g, const char *key, const char *value)
{
    for (int i = 0; i < g->nlabels; i++)
        if (strcmp(g->labels[i].key, key) == 0 && strcmp(g->labels[i].value, value) == 0)
            return true;
    return false;
}

long sim_cluster_gpus(const struct sim_cluster *c, const char *key, const char *value)
{
    long n = 0;

    for (int i = 0; i < c->ngroups; i++)
        if (!key || group_has_label(&c->groups[i], key, value))
            n += (long)c->groups[i].count * c->groups[i].gpus;
    return n;
}

int sim_cluster_max_node_gpus(const struct sim_cluster *c)
{
    int m = 0;

    for (int i = 0; i < c->ngroups; i++)
        if (c->groups[i].count > 0 && c->groups[i].gpus > m)
            m = c->groups[i].gpus;
    return m;
}

void sim_cluster_node(const struct sim_cluster *c, long i, struct sched_node_spec *out)
{
    const struct sim_node_group *g = NULL;
    long k = i;

    for (int j = 0; j < c->ngroups; j++) {
        if (k < c->groups[j].count) {
            g = &c->groups[j];
            break;
        }
        k -= c->groups[j].count;
    }
    memset(out, 0, sizeof(*out));
    if (!g)
        return;
    {
        char name[SCHED_NAME_MAX + 32]; /* prefixes are at most SCHED_NAME_MAX - 10 long */

        snprintf(name, sizeof(name), "%s-%04ld", g->prefix, g->name_offset + k + 1);
        (void)str_copy(out->name, sizeof(out->name), name);
    }
    memcpy(out->gpu_type, g->gpu_type, sizeof(out->gpu_type));
    out->gpus = g->gpus;
    out->gpu_mem_mb = g->gpu_mem_mb;
    out->cpus = g->cpus;
    out->mem_mb = g->mem_mb;
    memcpy(out->labels, g->labels, sizeof(out->labels));
    out->nlabels = g->nlabels;
    out->state = SCHED_NODE_UP;
}

/* ---------------------------------------------------------------------------------- */
/* Mapping                                                                            */

void sim_mapping_defaults(struct sim_mapping *m)
{
    memset(m, 0, sizeof(*m));
    m->time_limit_factor = 2.0;
    m->limit_source = SIM_LIMIT_RUNTIME;
    m->min_time_limit_ms = 60000;
    m->cpu_unit_cores = 0;
    m->fractional = SIM_FRAC_ROUND_UP;
    m->over_cap = SIM_CAP_RUN;
    m->guarantee_from_partition = true;
    m->on_signal = SIM_SIGNAL_AUTO;
    (void)str_copy(m->dflt.match, sizeof(m->dflt.match), "*");
    m->dflt.checkpoint_ms = -1;
}

void sim_mapping_release(struct sim_mapping *m)
{
    free(m->rules);
    m->rules = NULL;
    m->nrules = 0;
}

static int rule_from_json(struct jctx *c, json_t *o, struct sim_rule *r, bool is_default)
{
    static const char *const keys[] = {
        "match",
        "user",
        "project",
        "tier",
        "class",
        "gpu_type",
        "time_limit_factor",
        "checkpoint_interval",
        "checkpoint_interval_ms",
        NULL,
    };

    if (!json_is_object(o))
        return jfail(c, NULL, "expected a mapping");
    if (only_keys(c, o, keys) < 0 || get_str(c, o, "match", r->match, sizeof(r->match)) < 0 ||
        get_str(c, o, "user", r->user, sizeof(r->user)) < 0 ||
        get_name(c, o, "project", r->project, sizeof(r->project)) < 0 ||
        get_name(c, o, "tier", r->tier, sizeof(r->tier)) < 0 ||
        get_name(c, o, "class", r->class_name, sizeof(r->class_name)) < 0 ||
        get_str(c, o, "gpu_type", r->gpu_type, sizeof(r->gpu_type)) < 0 ||
        get_double(c, o, "time_limit_factor", 0.01, 1000, &r->time_limit_factor) < 0 ||
        get_duration(c, o, "checkpoint_interval", &r->checkpoint_ms) < 0)
        return -EINVAL;
    if (!is_default && !r->match[0])
        return jfail(c, "match", "missing (a trace project, 'prefix*' or '*')");
    return 0;
}

static int mapping_knobs(struct jctx *c, json_t *obj, struct sim_mapping *m)
{
    char src[32] = "", sig[32] = "", frac[32] = "", cap[32] = "";

    if (get_double(c, obj, "time_limit_factor", 0.01, 1000, &m->time_limit_factor) < 0 ||
        get_str(c, obj, "time_limit", src, sizeof(src)) < 0 ||
        get_str(c, obj, "fractional", frac, sizeof(frac)) < 0 ||
        get_str(c, obj, "over_cap", cap, sizeof(cap)) < 0 ||
        get_duration(c, obj, "min_time_limit", &m->min_time_limit_ms) < 0 ||
        get_i32(c, obj, "cpu_unit_cores", 0, 100000, &m->cpu_unit_cores) < 0 ||
        get_name(c, obj, "partition_label", m->partition_label, sizeof(m->partition_label)) < 0 ||
        get_bool(c, obj, "pool", &m->pool) < 0 ||
        get_bool(c, obj, "guarantee_from_partition", &m->guarantee_from_partition) < 0 ||
        get_duration(c, obj, "checkpoint_interval", &m->checkpoint_ms) < 0 ||
        get_str(c, obj, "on_signal", sig, sizeof(sig)) < 0 ||
        get_bool(c, obj, "honor_mem", &m->honor_mem) < 0)
        return -EINVAL;
    if (src[0] && strcmp(src, "runtime") == 0)
        m->limit_source = SIM_LIMIT_RUNTIME;
    else if (src[0] && strcmp(src, "requested") == 0)
        m->limit_source = SIM_LIMIT_REQUESTED;
    else if (src[0] && strcmp(src, "class") == 0)
        m->limit_source = SIM_LIMIT_CLASS;
    else if (src[0])
        return jfail(c, "time_limit", "'%s' is not runtime, requested or class", src);
    if (sig[0] && strcmp(sig, "auto") == 0)
        m->on_signal = SIM_SIGNAL_AUTO;
    else if (sig[0] && strcmp(sig, "exit") == 0)
        m->on_signal = SIM_SIGNAL_EXIT;
    else if (sig[0] && strcmp(sig, "grace") == 0)
        m->on_signal = SIM_SIGNAL_GRACE;
    else if (sig[0])
        return jfail(c, "on_signal", "'%s' is not auto, exit or grace", sig);
    if (frac[0] && sim_fractional_parse(frac, &m->fractional) < 0)
        return jfail(c, "fractional", "'%s' is not round-up, round-down or skip", frac);
    if (cap[0] && sim_over_cap_parse(cap, &m->over_cap) < 0)
        return jfail(c, "over_cap", "'%s' is not run, kill or skip", cap);
    return 0;
}

int sim_fractional_parse(const char *s, enum sim_fractional *out)
{
    if (strcmp(s, "round-up") == 0)
        *out = SIM_FRAC_ROUND_UP;
    else if (strcmp(s, "round-down") == 0)
        *out = SIM_FRAC_ROUND_DOWN;
    else if (strcmp(s, "skip") == 0)
        *out = SIM_FRAC_SKIP;
    else
        return -EINVAL;
    return 0;
}

int sim_over_cap_parse(const char *s, enum sim_over_cap *out)
{
    if (strcmp(s, "run") == 0)
        *out = SIM_CAP_RUN;
    else if (strcmp(s, "kill") == 0)
        *out = SIM_CAP_KILL;
    else if (strcmp(s, "skip") == 0)
        *out = SIM_CAP_SKIP;
    else
        return -EINVAL;
    return 0;
}

int sim_mapping_from_json(json_t *obj, const char *name, struct sim_mapping *m, char *err,
                          size_t errlen)
{
    static const char *const keys[] = {
        "time_limit_factor",
        "time_limit",
        "fractional",
        "over_cap",
        "min_time_limit",
        "min_time_limit_ms",
        "cpu_unit_cores",
        "partition_label",
        "pool",
        "guarantee_from_partition",
        "checkpoint_interval",
        "checkpoint_interval_ms",
        "on_signal",
        "honor_mem",
        "default",
        "rules",
        NULL,
    };
    struct jctx c = {.file = name, .path = "mapping", .err = err, .errlen = errlen};
    json_t *rules = json_object_get(obj, "rules");
    struct sim_rule *nr;
    size_t i;
    json_t *r;

    if (!json_is_object(obj))
        return cerr(err, errlen, name, "mapping", "expected a mapping");
    if (only_keys(&c, obj, keys) < 0 || mapping_knobs(&c, obj, m) < 0)
        return -EINVAL;
    if (json_object_get(obj, "default")) {
        snprintf(c.path, sizeof(c.path), "mapping.default");
        if (rule_from_json(&c, json_object_get(obj, "default"), &m->dflt, true) < 0)
            return -EINVAL;
        (void)str_copy(m->dflt.match, sizeof(m->dflt.match), "*");
    }
    if (!rules)
        return 0;
    if (!json_is_array(rules))
        return cerr(err, errlen, name, "mapping.rules", "expected a list");
    nr = realloc(m->rules, (m->nrules + json_array_size(rules) + 1) * sizeof(*nr));
    if (!nr)
        return cerr(err, errlen, name, "mapping.rules", "out of memory");
    m->rules = nr;
    json_array_foreach(rules, i, r) {
        struct sim_rule *dst = &m->rules[m->nrules];

        memset(dst, 0, sizeof(*dst));
        dst->checkpoint_ms = -1;
        snprintf(c.path, sizeof(c.path), "mapping.rules[%zu]", i);
        if (rule_from_json(&c, r, dst, false) < 0)
            return -EINVAL;
        m->nrules++;
    }
    return 0;
}

int sim_mapping_load(const char *path, struct sim_mapping *m, char *err, size_t errlen)
{
    json_t *doc = load_yaml(path, err, errlen);
    json_t *obj;
    int rc;

    if (!doc)
        return -EINVAL;
    obj = json_object_get(doc, "mapping");
    if (obj && json_object_size(doc) != 1)
        rc = cerr(err, errlen, path, "(top)", "expected only a 'mapping' section");
    else
        rc = sim_mapping_from_json(obj ? obj : doc, path, m, err, errlen);
    json_decref(doc);
    return rc;
}

static bool glob_match(const char *pat, const char *s)
{
    size_t n = strlen(pat);

    if (n == 0 || strcmp(pat, "*") == 0)
        return true;
    if (pat[n - 1] == '*')
        return strncmp(pat, s, n - 1) == 0;
    return strcmp(pat, s) == 0;
}

const struct sim_rule *sim_mapping_find(const struct sim_mapping *m, const char *project,
                                        const char *user)
{
    for (int i = 0; i < m->nrules; i++)
        if (glob_match(m->rules[i].match, project) && glob_match(m->rules[i].user, user))
            return &m->rules[i];
    return &m->dflt;
}

/* ---------------------------------------------------------------------------------- */
/* Policy                                                                             */

void sim_policy_defaults(struct sim_policy *p, const char *name)
{
    memset(p, 0, sizeof(*p));
    sched_policy_defaults(&p->policy);
    (void)str_copy(p->name, sizeof(p->name), name);
}

void sim_policy_release(struct sim_policy *p)
{
    free(p->projects);
    p->projects = NULL;
    p->nprojects = 0;
    json_decref(p->mapping);
    p->mapping = NULL;
    p->has_mapping = false;
}

int sim_policy_copy(struct sim_policy *dst, const struct sim_policy *src)
{
    *dst = *src;
    dst->projects = NULL;
    dst->mapping = NULL;
    if (src->nprojects) {
        dst->projects = malloc((size_t)src->nprojects * sizeof(*dst->projects));
        if (!dst->projects)
            return -ENOMEM;
        memcpy(dst->projects, src->projects, (size_t)src->nprojects * sizeof(*dst->projects));
    }
    if (src->mapping)
        dst->mapping = json_incref(src->mapping);
    return 0;
}

const struct sched_project_spec *sim_policy_project(const struct sim_policy *p, const char *name)
{
    for (int i = 0; i < p->nprojects; i++)
        if (strcmp(p->projects[i].name, name) == 0)
            return &p->projects[i];
    return NULL;
}

/* Did the document set any multifactor weight itself (settings.mf_*)? */
static bool settings_has_mf(json_t *doc)
{
    json_t *st = json_object_get(doc, "settings");
    const char *k;
    json_t *v;

    if (!json_is_object(st))
        return false;
    json_object_foreach(st, k, v) {
        if (strncmp(k, "mf_", 3) == 0)
            return true;
    }
    return false;
}

/* The policy document is read by src/protocol's reader, the one `docket apply` and
 * docketd use (proto_policy_parse: tiers and classes replace the lists, classes start from
 * the default of the same name, settings override knobs, projects are listed), so a file
 * means the same in the simulator as on the cluster. Only `mapping:` is the simulator's
 * own; it is taken out before. */
int sim_policy_from_json(json_t *doc, const char *name, struct sim_policy *out, char *err,
                         size_t errlen)
{
    const char *base = strrchr(name, '/');
    struct proto_policy pp;
    struct proto_error pe;

    sim_policy_defaults(out, base ? base + 1 : name);
    if (!json_is_object(doc))
        return cerr(err, errlen, name, "(top)", "expected a mapping");
    json_t *copy = json_copy(doc); /* shallow: the mapping section is shared */
    if (!copy)
        return cerr(err, errlen, name, "(top)", "out of memory");
    json_t *mapping = json_object_get(copy, "mapping");
    if (mapping) {
        out->has_mapping = true;
        out->mapping = json_incref(mapping);
        json_object_del(copy, "mapping");
    }
    int rc = proto_policy_parse(copy, &out->policy, &pp, &pe);
    json_decref(copy);
    if (rc < 0) {
        sim_policy_release(out);
        if (pe.field[0] && !strstr(pe.message, pe.field))
            return cerr(err, errlen, name, pe.field, "%s", pe.message);
        snprintf(err, errlen, "%s: %s", name, pe.message);
        return -EINVAL;
    }
    out->policy = pp.policy;
    out->mf_set = settings_has_mf(doc);
    if (pp.nprojects) {
        out->projects = calloc(pp.nprojects, sizeof(*out->projects));
        if (!out->projects) {
            proto_policy_release(&pp);
            sim_policy_release(out);
            return cerr(err, errlen, name, "projects", "out of memory");
        }
        memcpy(out->projects, pp.projects, pp.nprojects * sizeof(*out->projects));
        out->nprojects = (int)pp.nprojects;
    }
    proto_policy_release(&pp);
    return 0;
}

int sim_policy_load(const char *path, struct sim_policy *out, char *err, size_t errlen)
{
    json_t *doc = load_yaml(path, err, errlen);
    int rc;

    if (!doc) {
        sim_policy_defaults(out, path);
        return -EINVAL;
    }
    rc = sim_policy_from_json(doc, path, out, err, errlen);
    json_decref(doc);
    return rc;
}

/* What every baseline shares: a site running FIFO, EASY, SJF or multifactor runs one
 * queue per partition (a blocked job holds back its own partition only), never preempts,
 * has no starvation guard (FIFO stays FIFO) and no tier-reserved zone. Starvation is still
 * reported against the policy's bounds, so every run is measured on the same yardstick. */
static void baseline_common(struct sim_policy *p)
{
    struct sched_policy *sp = &p->policy;

    if (!p->report_bounds) {
        for (int t = 0; t < sp->ntiers; t++)
            p->report_starve_ms[t] = sp->tiers[t].starve_after_ms;
        p->report_bounds = true;
    }
    for (int t = 0; t < sp->ntiers; t++)
        sp->tiers[t].starve_after_ms = 0;
    sp->preemption = false;
    sp->reserved_label_key[0] = '\0';
    sp->reserved_label_value[0] = '\0';
    p->per_partition = true;
    p->sjf = false;
}

int sim_policy_baseline(struct sim_policy *p, const char *baseline)
{
    struct sched_policy *sp = &p->policy;

    if (strcmp(baseline, "tiered") == 0) {
        sp->ordering = SCHED_ORDER_TIERED;
    } else if (strcmp(baseline, "fifo") == 0) {
        baseline_common(p);
        sp->ordering = SCHED_ORDER_FIFO;
        sp->backfill = false;
    } else if (strcmp(baseline, "easy") == 0 || strcmp(baseline, "sjf") == 0) {
        baseline_common(p);
        sp->ordering = SCHED_ORDER_FIFO;
        sp->backfill = true;
        sp->backfill_depth = 1;
        p->sjf = baseline[0] == 's';
    } else if (strcmp(baseline, "multifactor") == 0) {
        baseline_common(p);
        sp->ordering = SCHED_ORDER_MULTIFACTOR;
        sp->backfill = true;
        if (!p->mf_set) {
            /* Slurm's documented example weights: fair-share dominates, then QOS (our tier)
             * and age; age saturates after 7 days (PriorityMaxAge). */
            sp->mf_age_weight = SIM_MF_AGE_WEIGHT;
            sp->mf_fairshare_weight = SIM_MF_FAIRSHARE_WEIGHT;
            sp->mf_tier_weight = SIM_MF_TIER_WEIGHT;
            sp->mf_age_max_ms = SIM_MF_AGE_MAX_MS;
        }
    } else {
        return -EINVAL;
    }
    (void)str_copy(p->name, sizeof(p->name), baseline);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Topology                                                                           */

int sim_topology_load(const char *path, struct sim_switch **out, int *n, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char line[512];
    int lineno = 0, cap = 0;

    *out = NULL;
    *n = 0;
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        char name[SCHED_NAME_MAX], extra[2];
        long count;
        int got;

        lineno++;
        line[strcspn(line, "#\n")] = '\0';
        got = sscanf(line, "%63s %ld %1s", name, &count, extra);
        if (got <= 0)
            continue; /* blank or a comment */
        if (got != 2 || count < 1 || count > 1000000 || !str_is_name(name)) {
            snprintf(err, errlen, "%s:%d: want `SWITCH NODES` (a name and a count)", path, lineno);
            goto fail;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            struct sim_switch *p = realloc(*out, (size_t)cap * sizeof(**out));
            if (!p) {
                snprintf(err, errlen, "out of memory");
                goto fail;
            }
            *out = p;
        }
        (void)str_copy((*out)[*n].name, sizeof((*out)[*n].name), name);
        (*out)[(*n)++].nodes = count;
    }
    fclose(f);
    if (*n == 0) {
        snprintf(err, errlen, "%s: no switch", path);
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
fail:
    fclose(f);
    free(*out);
    *out = NULL;
    *n = 0;
    return -1;
}

int sim_topology_uniform(const struct sim_cluster *c, long per_switch, struct sim_switch **out,
                         int *n)
{
    long nodes = sim_cluster_nodes(c);
    long count = per_switch > 0 ? (nodes + per_switch - 1) / per_switch : 0;

    *n = 0;
    *out = calloc(count ? (size_t)count : 1, sizeof(**out));
    if (!*out)
        return -ENOMEM;
    for (long i = 0; i < count; i++) {
        snprintf((*out)[i].name, sizeof((*out)[i].name), "sw-%04ld", i + 1);
        (*out)[i].nodes = per_switch;
    }
    *n = (int)count;
    return 0;
}

/* Append part of group g (its nodes from..from+count) to the new list, labelled. */
static int cut_append(struct sim_node_group **list, int *n, const struct sim_node_group *g,
                      long from, long count, const char *sw)
{
    struct sim_node_group *p = realloc(*list, (size_t)(*n + 1) * sizeof(**list));

    if (!p)
        return -ENOMEM;
    *list = p;
    p[*n] = *g;
    p[*n].count = (int)count;
    p[*n].name_offset = g->name_offset + from;
    if (sw && p[*n].nlabels < SCHED_MAX_LABELS) {
        struct sched_label *l = &p[*n].labels[p[*n].nlabels++];
        snprintf(l->key, sizeof(l->key), "switch");
        (void)str_copy(l->value, sizeof(l->value), sw);
    }
    (*n)++;
    return 0;
}

int sim_cluster_set_switches(struct sim_cluster *c, const struct sim_switch *sw, int n, char *err,
                             size_t errlen)
{
    struct sim_node_group *list = NULL;
    int nlist = 0, s = 0;
    long left = n ? sw[0].nodes : 0; /* nodes still to place under switch s */

    for (int i = 0; i < c->ngroups; i++) {
        const struct sim_node_group *g = &c->groups[i];
        if (g->nlabels >= SCHED_MAX_LABELS) {
            snprintf(err, errlen, "node group %s has %d labels: no room for `switch`", g->prefix,
                     g->nlabels);
            free(list);
            return -1;
        }
        for (long from = 0; from < g->count;) {
            long take = s < n && left < g->count - from ? left : g->count - from;
            if (cut_append(&list, &nlist, g, from, take, s < n ? sw[s].name : NULL) < 0) {
                snprintf(err, errlen, "out of memory");
                free(list);
                return -1;
            }
            from += take;
            if (s < n && (left -= take) == 0 && ++s < n)
                left = sw[s].nodes;
        }
    }
    free(c->groups);
    c->groups = list;
    c->ngroups = nlist;
    return 0;
}
