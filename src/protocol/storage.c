/*
 * storage.c - the readers and writers of storage.h: the policy's `storage:` section, the
 * heartbeat reply's `storage` (docketd tells an agent its pools and areas) and the
 * heartbeat's `storage` (the agent's checks and usage). Each reader checks types, ranges
 * and unknown fields and names the JSON path of what it refuses.
 */
#include "protocol/storage.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/lifecycle.h"
#include "protocol/proto.h"
#include "util/parse.h"
#include "util/str.h"

#define STORAGE_MAX_BYTES ((int64_t)1 << 60) /* an exbibyte: more than any file system */

static const char *const class_names[] = {"hot", "cold", "archive", "scratch"};
static const char *const quota_names[] = {"accounting", "ext4-project"};

const char *storage_class_name(enum storage_class c)
{
    return (unsigned)c < 4 ? class_names[c] : "?";
}

const char *storage_quota_name(enum storage_quota q)
{
    return (unsigned)q < 2 ? quota_names[q] : "?";
}

static int name_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

void storage_policy_defaults(struct storage_policy *p)
{
    memset(p, 0, sizeof(*p));
    p->check_interval_ms = 60000;
    p->sample_interval_ms = 3600000;
    p->sample_keep_ms = (int64_t)30 * 86400000;
    p->sample_rollup_ms = 86400000;
    p->log_archive.after_ms = (int64_t)30 * 86400000;
    p->log_archive.every_ms = 3600000;
}

/* ---- small typed readers ------------------------------------------------------------- */

static int field_name(char *f, size_t n, const char *path, const char *key)
{
    snprintf(f, n, "%s.%s", path, key);
    return 0;
}

static int get_name(const json_t *o, const char *key, const char *path, bool required, char *out,
                    struct proto_error *err)
{
    char f[160];
    field_name(f, sizeof(f), path, key);
    json_t *v = json_object_get(o, key);
    if (!v)
        return required ? proto_errorf(err, 400, NULL, f, "%s is required", f) : 0;
    return proto_get_name(v, f, out, err);
}

static int get_bytes(const json_t *o, const char *key, const char *path, int64_t min, int64_t *out,
                     struct proto_error *err)
{
    char f[160];
    field_name(f, sizeof(f), path, key);
    json_t *v = json_object_get(o, key);
    if (!v)
        return proto_errorf(err, 400, NULL, f, "%s is required", f);
    if (!json_is_integer(v) || json_integer_value(v) < min ||
        json_integer_value(v) > STORAGE_MAX_BYTES)
        return proto_errorf(err, 400, NULL, f, "%s must be an integer from %lld", f,
                            (long long)min);
    *out = json_integer_value(v);
    return 0;
}

/* A pool's name: [a-z][a-z0-9_]{0,30}, so DOCKET_STORAGE_<NAME> is a variable name. */
static bool pool_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= STORAGE_POOL_NAME_MAX || !islower((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '_')
            return false;
    return true;
}

static int get_pool_name(const json_t *o, const char *key, const char *path, char *out,
                         struct proto_error *err)
{
    char f[160];
    field_name(f, sizeof(f), path, key);
    json_t *v = json_object_get(o, key);
    if (!v)
        return proto_errorf(err, 400, NULL, f, "%s is required", f);
    if (!json_is_string(v) || !pool_name_ok(json_string_value(v)))
        return proto_errorf(err, 400, NULL, f,
                            "%s must be a pool name: a lower-case letter, then up to 30 of "
                            "a-z 0-9 _",
                            f);
    str_copy(out, STORAGE_POOL_NAME_MAX, json_string_value(v));
    return 0;
}

/* An absolute path without "." or ".." components, "//" or a trailing '/'. */
static bool path_ok(const char *p)
{
    if (p[0] != '/' || p[1] == '\0')
        return false;
    const char *s = p;
    while (*s) {
        const char *e = strchr(s + 1, '/');
        size_t n = e ? (size_t)(e - s - 1) : strlen(s + 1);
        if (n == 0 || (n == 1 && s[1] == '.') || (n == 2 && s[1] == '.' && s[2] == '.'))
            return false;
        if (!e)
            break;
        s = e;
    }
    return true;
}

static int get_enum(const json_t *o, const char *key, const char *path, const char *const *names,
                    int n, int *out, struct proto_error *err)
{
    char f[160];
    field_name(f, sizeof(f), path, key);
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    int i = name_index(json_string_value(v), names, n);
    if (i < 0) {
        char list[128] = "";
        size_t used = 0;
        for (int k = 0; k < n && used < sizeof(list); k++)
            used +=
                (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", k ? ", " : "", names[k]);
        return proto_errorf(err, 400, NULL, f, "%s must be one of %s", f, list);
    }
    *out = i;
    return 0;
}

/* ---- the policy's section ------------------------------------------------------------ */

static int parse_labels(const json_t *v, const char *path, struct storage_pool *p,
                        struct proto_error *err)
{
    char f[160];
    field_name(f, sizeof(f), path, "nodes");
    if (!v)
        return 0;
    if (!json_is_object(v) || json_object_size(v) > STORAGE_MAX_POOL_LABELS)
        return proto_errorf(err, 400, NULL, f, "%s must be a map of at most %d node labels", f,
                            STORAGE_MAX_POOL_LABELS);
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)v, k, val) {
        char kf[240];
        snprintf(kf, sizeof(kf), "%s.%s", f, k);
        struct storage_label *l = &p->nodes[p->nnodes];
        if (!str_is_name(k) || strlen(k) >= STORAGE_NAME_MAX)
            return proto_errorf(err, 400, NULL, f, "%s: '%.64s' is not a label name", f, k);
        int rc = proto_get_name(val, kf, l->value, err);
        if (rc < 0)
            return rc;
        str_copy(l->key, sizeof(l->key), k);
        p->nnodes++;
    }
    return 0;
}

static int parse_pool(const json_t *o, const char *path, struct storage_pool *p,
                      struct proto_error *err)
{
    static const char *const known[] = {"name",  "path",   "class", "quota", "nodes",
                                        "mount", "fstype", "local", NULL};
    int rc, cls = STORAGE_HOT, quota = STORAGE_QUOTA_ACCOUNTING;
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    if ((rc = proto_check_fields(o, path, known, err)) < 0)
        return rc;
    memset(p, 0, sizeof(*p));
    if ((rc = get_pool_name(o, "name", path, p->name, err)) < 0 ||
        (rc = proto_member_text(o, "path", path, true, p->path, sizeof(p->path), err)) < 0 ||
        (rc = get_enum(o, "class", path, class_names, 4, &cls, err)) < 0 ||
        (rc = get_enum(o, "quota", path, quota_names, 2, &quota, err)) < 0 ||
        (rc = proto_member_flag(o, "mount", path, &p->mount, err)) < 0 ||
        (rc = proto_member_flag(o, "local", path, &p->local, err)) < 0 ||
        (rc = proto_member_text(o, "fstype", path, false, p->fstype, sizeof(p->fstype), err)) < 0 ||
        (rc = parse_labels(json_object_get(o, "nodes"), path, p, err)) < 0)
        return rc;
    if (!path_ok(p->path)) {
        char f[160];
        field_name(f, sizeof(f), path, "path");
        return proto_errorf(err, 400, NULL, f,
                            "%s must be an absolute path without '.', '..', '//' or a "
                            "trailing '/'",
                            f);
    }
    p->cls = (enum storage_class)cls;
    p->quota = (enum storage_quota)quota;
    return 0;
}

static int parse_pools(const json_t *v, struct storage_policy *out, struct proto_error *err)
{
    if (!json_is_array(v) || json_array_size(v) > STORAGE_MAX_POOLS)
        return proto_errorf(err, 400, NULL, "storage.pools",
                            "storage.pools must be a list of at most %d pools", STORAGE_MAX_POOLS);
    for (size_t i = 0; i < json_array_size(v); i++) {
        char path[40];
        snprintf(path, sizeof(path), "storage.pools[%zu]", i);
        struct storage_pool *p = &out->pools[i];
        int rc = parse_pool(json_array_get(v, i), path, p, err);
        if (rc < 0)
            return rc;
        for (size_t k = 0; k < i; k++) {
            if (strcmp(out->pools[k].name, p->name) == 0)
                return proto_errorf(err, 400, NULL, path, "duplicate pool '%s'", p->name);
            if (strcmp(out->pools[k].path, p->path) == 0)
                return proto_errorf(err, 400, NULL, path, "pools '%s' and '%s' share a path",
                                    out->pools[k].name, p->name);
        }
        out->npools = (int)i + 1;
    }
    return 0;
}

/* groups: {PROJECT: GROUP}, a group being a name or a gid (an integer or its text). */
static int parse_groups(const json_t *v, struct storage_policy *out, struct proto_error *err)
{
    if (!json_is_object(v) || json_object_size(v) > STORAGE_MAX_GROUPS)
        return proto_errorf(err, 400, NULL, "storage.groups",
                            "storage.groups must be a map of at most %d projects to groups",
                            STORAGE_MAX_GROUPS);
    const char *k;
    json_t *g;
    json_object_foreach((json_t *)v, k, g) {
        char f[120];
        snprintf(f, sizeof(f), "storage.groups.%.64s", k);
        if (!str_is_name(k) || strlen(k) >= STORAGE_NAME_MAX)
            return proto_errorf(err, 400, NULL, "storage.groups", "'%.64s' is not a project name",
                                k);
        char *dst = out->groups[out->ngroups].group;
        if (json_is_integer(g)) {
            if (json_integer_value(g) < 1 || json_integer_value(g) > 0x7fffffff)
                return proto_errorf(err, 400, NULL, f, "%s: a gid is 1 to 2147483647", f);
            snprintf(dst, STORAGE_NAME_MAX, "%lld", (long long)json_integer_value(g));
        } else {
            int rc = proto_get_name(g, f, dst, err);
            if (rc < 0)
                return rc;
            if (strcmp(dst, "0") == 0 || strcmp(dst, "root") == 0)
                return proto_errorf(err, 400, NULL, f, "%s: a project's area is never root's", f);
        }
        str_copy(out->groups[out->ngroups].project, STORAGE_NAME_MAX, k);
        out->ngroups++;
    }
    return 0;
}

/* `log_archive: {pool, after, every}`: the pool must be one of the section's. */
static int parse_log_archive(const json_t *v, struct storage_policy *out, struct proto_error *err)
{
    static const char *const known[] = {"pool", "after", "every", NULL};
    const char *path = "storage.log_archive";
    int rc;
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    if ((rc = proto_check_fields(v, path, known, err)) < 0 ||
        (rc = get_pool_name(v, "pool", path, out->log_archive.pool, err)) < 0)
        return rc;
    if (!storage_pool_find(out, out->log_archive.pool))
        return proto_errorf(err, 400, NULL, "storage.log_archive.pool",
                            "storage.log_archive.pool '%s' is not one of storage.pools",
                            out->log_archive.pool);
    json_t *x;
    if ((x = json_object_get(v, "after")) &&
        (rc = proto_get_duration(x, "storage.log_archive.after", (int64_t)3650 * 86400000,
                                 &out->log_archive.after_ms, err)) < 0)
        return rc;
    if ((x = json_object_get(v, "every"))) {
        if ((rc = proto_get_duration(x, "storage.log_archive.every", 86400000,
                                     &out->log_archive.every_ms, err)) < 0)
            return rc;
        if (out->log_archive.every_ms < 1000)
            return proto_errorf(err, 400, NULL, "storage.log_archive.every",
                                "storage.log_archive.every must be at least 1s");
    }
    return 0;
}

/* sample_keep and sample_rollup: durations of at least 1 s (a rollup of at most 31 d). */
static int parse_sample_keep(const json_t *v, struct storage_policy *out, struct proto_error *err)
{
    static const char *const keys[] = {"sample_keep", "sample_rollup"};
    static const int64_t max[] = {(int64_t)3650 * 86400000, (int64_t)31 * 86400000};
    int64_t *dst[] = {&out->sample_keep_ms, &out->sample_rollup_ms};
    for (int i = 0; i < 2; i++) {
        char f[64];
        snprintf(f, sizeof(f), "storage.%s", keys[i]);
        json_t *x = json_object_get(v, keys[i]);
        int rc;
        if (!x)
            continue;
        if ((rc = proto_get_duration(x, f, max[i], dst[i], err)) < 0)
            return rc;
        if (*dst[i] < 1000)
            return proto_errorf(err, 400, NULL, f, "%s must be at least 1s", f);
    }
    return 0;
}

int storage_policy_parse(const json_t *v, struct storage_policy *out, struct proto_error *err)
{
    static const char *const known[] = {
        "pools",           "check_interval", "group_prefix", "groups",        "lifecycle",
        "sample_interval", "log_archive",    "sample_keep",  "sample_rollup", NULL};
    storage_policy_defaults(out);
    int rc;
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, "storage", "storage must be an object");
    if ((rc = proto_check_fields(v, "storage", known, err)) < 0)
        return rc;
    json_t *x;
    if ((x = json_object_get(v, "pools")) && (rc = parse_pools(x, out, err)) < 0)
        return rc;
    if ((x = json_object_get(v, "check_interval"))) {
        if ((rc = proto_get_duration(x, "storage.check_interval", 86400000, &out->check_interval_ms,
                                     err)) < 0)
            return rc;
        if (out->check_interval_ms < 1000)
            return proto_errorf(err, 400, NULL, "storage.check_interval",
                                "storage.check_interval must be at least 1s");
    }
    if ((x = json_object_get(v, "group_prefix"))) {
        const char *s = json_string_value(x);
        if (!s || strlen(s) >= sizeof(out->group_prefix) || (s[0] && !str_is_name(s)))
            return proto_errorf(err, 400, NULL, "storage.group_prefix",
                                "storage.group_prefix must be a name of at most %zu characters",
                                sizeof(out->group_prefix) - 1);
        str_copy(out->group_prefix, sizeof(out->group_prefix), s);
    }
    if ((x = json_object_get(v, "groups")) && (rc = parse_groups(x, out, err)) < 0)
        return rc;
    if ((x = json_object_get(v, "sample_interval"))) {
        if ((rc = proto_get_duration(x, "storage.sample_interval", 86400000,
                                     &out->sample_interval_ms, err)) < 0)
            return rc;
        if (out->sample_interval_ms < 1000)
            return proto_errorf(err, 400, NULL, "storage.sample_interval",
                                "storage.sample_interval must be at least 1s");
    }
    if ((rc = parse_sample_keep(v, out, err)) < 0)
        return rc;
    if ((x = json_object_get(v, "lifecycle")) && (rc = storage_rules_parse(x, out, err)) < 0)
        return rc;
    if ((x = json_object_get(v, "log_archive")) && (rc = parse_log_archive(x, out, err)) < 0)
        return rc;
    return 0;
}

static json_t *pool_json(const struct storage_pool *p)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:b}", "name", p->name, "path", p->path, "class",
                          storage_class_name(p->cls), "quota", storage_quota_name(p->quota),
                          "mount", p->mount);
    if (p->local)
        json_object_set_new(o, "local", json_true());
    if (p->fstype[0])
        json_object_set_new(o, "fstype", json_string(p->fstype));
    json_t *nodes = json_object();
    for (int i = 0; i < p->nnodes; i++)
        json_object_set_new(nodes, p->nodes[i].key, json_string(p->nodes[i].value));
    json_object_set_new(o, "nodes", nodes);
    return o;
}

json_t *storage_policy_json(const struct storage_policy *p)
{
    json_t *pools = json_array(), *groups = json_object();
    for (int i = 0; i < p->npools; i++)
        json_array_append_new(pools, pool_json(&p->pools[i]));
    for (int i = 0; i < p->ngroups; i++)
        json_object_set_new(groups, p->groups[i].project, json_string(p->groups[i].group));
    json_t *o = json_pack("{s:o,s:I,s:s,s:o}", "pools", pools, "check_interval",
                          (json_int_t)(p->check_interval_ms / 1000), "group_prefix",
                          p->group_prefix, "groups", groups);
    json_object_set_new(o, "sample_interval", json_integer(p->sample_interval_ms / 1000));
    json_object_set_new(o, "sample_keep", json_integer(p->sample_keep_ms / 1000));
    json_object_set_new(o, "sample_rollup", json_integer(p->sample_rollup_ms / 1000));
    json_object_set_new(o, "lifecycle", storage_rules_json(p));
    if (p->log_archive.pool[0])
        json_object_set_new(o, "log_archive",
                            json_pack("{s:s,s:I,s:I}", "pool", p->log_archive.pool, "after",
                                      (json_int_t)(p->log_archive.after_ms / 1000), "every",
                                      (json_int_t)(p->log_archive.every_ms / 1000)));
    return o;
}

const struct storage_pool *storage_pool_find(const struct storage_policy *p, const char *name)
{
    for (int i = 0; i < p->npools; i++)
        if (strcmp(p->pools[i].name, name) == 0)
            return &p->pools[i];
    return NULL;
}

void storage_project_group(const struct storage_policy *p, const char *project, char *out,
                           size_t len)
{
    for (int i = 0; i < p->ngroups; i++)
        if (strcmp(p->groups[i].project, project) == 0) {
            str_copy(out, len, p->groups[i].group);
            return;
        }
    snprintf(out, len, "%s%s", p->group_prefix, project);
}

void storage_pool_env_name(const char *pool, char *out, size_t len)
{
    int n = snprintf(out, len, "DOCKET_STORAGE_%s", pool);
    for (int i = 15; i < n && (size_t)i < len; i++)
        out[i] = (char)toupper((unsigned char)out[i]);
}

void storage_area_path(const struct storage_pool *pool, const char *project, char *out, size_t len)
{
    snprintf(out, len, "%s/projects/%s", pool->path, project);
}

int storage_job_pools_check(const json_t *v, struct proto_error *err)
{
    if (!json_is_array(v) || json_array_size(v) > STORAGE_MAX_JOB_POOLS)
        return proto_errorf(err, 400, NULL, "storage",
                            "storage must be a list of at most %d pool names",
                            STORAGE_MAX_JOB_POOLS);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const char *s = json_string_value(json_array_get(v, i));
        char f[32];
        snprintf(f, sizeof(f), "storage[%zu]", i);
        if (!s || !pool_name_ok(s))
            return proto_errorf(err, 400, NULL, f, "%s must be a pool name", f);
        for (size_t k = 0; k < i; k++)
            if (strcmp(json_string_value(json_array_get(v, k)), s) == 0)
                return proto_errorf(err, 400, NULL, f, "%s: '%s' is named twice", f, s);
    }
    return 0;
}

/* ---- docketd -> agent ---------------------------------------------------------------- */

json_t *storage_config_json(const struct storage_config *c)
{
    json_t *pools = json_array(), *areas = json_array();
    for (int i = 0; i < c->npools; i++) {
        json_t *p = pool_json(&c->pools[i]);
        json_object_del(p, "nodes"); /* the controller's business */
        json_array_append_new(pools, p);
    }
    for (size_t i = 0; i < c->nareas; i++) {
        const struct storage_area *a = &c->areas[i];
        json_array_append_new(areas, json_pack("{s:s,s:s,s:s,s:I}", "pool", a->pool, "project",
                                               a->project, "group", a->group, "quota_bytes",
                                               (json_int_t)a->quota_bytes));
    }
    return json_pack("{s:I,s:I,s:o,s:o}", "gen", (json_int_t)c->gen, "interval_ms",
                     (json_int_t)c->interval_ms, "pools", pools, "areas", areas);
}

static bool pool_known(const struct storage_pool *pools, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(pools[i].name, name) == 0)
            return true;
    return false;
}

static int parse_area(const json_t *o, const char *path, const struct storage_config *c,
                      struct storage_area *a, struct proto_error *err)
{
    static const char *const known[] = {"pool", "project", "group", "quota_bytes", NULL};
    int rc;
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    if ((rc = proto_check_fields(o, path, known, err)) < 0 ||
        (rc = get_pool_name(o, "pool", path, a->pool, err)) < 0 ||
        (rc = get_name(o, "project", path, true, a->project, err)) < 0 ||
        (rc = get_name(o, "group", path, true, a->group, err)) < 0 ||
        (rc = get_bytes(o, "quota_bytes", path, 0, &a->quota_bytes, err)) < 0)
        return rc;
    if (!pool_known(c->pools, c->npools, a->pool))
        return proto_errorf(err, 400, NULL, path, "%s: unknown pool '%s'", path, a->pool);
    return 0;
}

int storage_config_parse(const json_t *v, struct storage_config *out, struct proto_error *err)
{
    static const char *const known[] = {"gen", "interval_ms", "pools", "areas", NULL};
    memset(out, 0, sizeof(*out));
    int rc;
    int64_t n;
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, "storage", "storage must be an object");
    if ((rc = proto_check_fields(v, "storage", known, err)) < 0 ||
        (rc = proto_get_int(json_object_get(v, "gen"), "storage.gen", 1, INT64_MAX, &out->gen,
                            err)) < 0 ||
        (rc = proto_get_int(json_object_get(v, "interval_ms"), "storage.interval_ms", 1000,
                            86400000, &out->interval_ms, err)) < 0)
        return rc;
    json_t *pools = json_object_get(v, "pools"), *areas = json_object_get(v, "areas");
    if (!json_is_array(pools) || json_array_size(pools) > STORAGE_MAX_POOLS)
        return proto_errorf(err, 400, NULL, "storage.pools",
                            "storage.pools must be a list of at most %d pools", STORAGE_MAX_POOLS);
    for (size_t i = 0; i < json_array_size(pools); i++) {
        char path[40];
        snprintf(path, sizeof(path), "storage.pools[%zu]", i);
        if ((rc = parse_pool(json_array_get(pools, i), path, &out->pools[i], err)) < 0)
            return rc;
        if (pool_known(out->pools, (int)i, out->pools[i].name))
            return proto_errorf(err, 400, NULL, path, "duplicate pool '%s'", out->pools[i].name);
        out->npools = (int)i + 1;
    }
    if (!json_is_array(areas) || json_array_size(areas) > STORAGE_MAX_AREAS)
        return proto_errorf(err, 400, NULL, "storage.areas",
                            "storage.areas must be a list of at most %d areas", STORAGE_MAX_AREAS);
    n = (int64_t)json_array_size(areas);
    out->areas = calloc(n ? (size_t)n : 1, sizeof(*out->areas));
    if (!out->areas)
        return proto_errorf(err, 500, NULL, "storage.areas", "out of memory");
    for (size_t i = 0; i < (size_t)n; i++) {
        char path[48];
        snprintf(path, sizeof(path), "storage.areas[%zu]", i);
        if ((rc = parse_area(json_array_get(areas, i), path, out, &out->areas[i], err)) < 0) {
            storage_config_release(out);
            return rc;
        }
        out->nareas = i + 1;
    }
    return 0;
}

void storage_config_release(struct storage_config *c)
{
    free(c->areas);
    c->areas = NULL;
    c->nareas = 0;
}

/* ---- agent -> docketd ---------------------------------------------------------------- */

static void set_known(json_t *o, const char *key, int64_t v)
{
    if (v >= 0)
        json_object_set_new(o, key, json_integer((json_int_t)v));
}

json_t *storage_report_json(const struct storage_report *r)
{
    json_t *pools = json_array(), *areas = json_array();
    for (int i = 0; i < r->npools; i++) {
        const struct storage_pool_state *p = &r->pools[i];
        json_t *o = json_pack("{s:s,s:b}", "name", p->name, "ok", p->ok);
        if (p->message[0])
            json_object_set_new(o, "message", json_string(p->message));
        if (p->fstype[0])
            json_object_set_new(o, "fstype", json_string(p->fstype));
        set_known(o, "latency_us", p->latency_us);
        set_known(o, "size_bytes", p->size_bytes);
        set_known(o, "used_bytes", p->used_bytes);
        json_array_append_new(pools, o);
    }
    for (size_t i = 0; i < r->nareas; i++) {
        const struct storage_area_state *a = &r->areas[i];
        json_t *o = json_pack("{s:s,s:s,s:b,s:s,s:I}", "pool", a->pool, "project", a->project, "ok",
                              a->ok, "enforced", storage_quota_name(a->enforced), "quota_bytes",
                              (json_int_t)a->quota_bytes);
        if (a->message[0])
            json_object_set_new(o, "message", json_string(a->message));
        set_known(o, "used_bytes", a->used_bytes);
        json_array_append_new(areas, o);
    }
    return json_pack("{s:I,s:o,s:o}", "gen", (json_int_t)r->gen, "pools", pools, "areas", areas);
}

static int get_opt_count(const json_t *o, const char *key, const char *path, int64_t *out,
                         struct proto_error *err)
{
    *out = -1;
    return json_object_get(o, key) ? get_bytes(o, key, path, 0, out, err) : 0;
}

static int get_message(const json_t *o, const char *path, char *out, struct proto_error *err)
{
    json_t *m = json_object_get(o, "message");
    char f[160];
    field_name(f, sizeof(f), path, "message");
    if (!m)
        return 0;
    if (!json_is_string(m) || json_string_length(m) > STORAGE_MSG_MAX)
        return proto_errorf(err, 400, NULL, f, "%s must be a string of at most %d bytes", f,
                            STORAGE_MSG_MAX);
    str_copy(out, STORAGE_MSG_MAX + 1, json_string_value(m));
    return 0;
}

static int parse_pool_state(const json_t *o, const char *path, struct storage_pool_state *p,
                            struct proto_error *err)
{
    static const char *const known[] = {"name",       "ok",         "message",    "fstype",
                                        "latency_us", "size_bytes", "used_bytes", NULL};
    int rc;
    memset(p, 0, sizeof(*p));
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    if ((rc = proto_check_fields(o, path, known, err)) < 0 ||
        (rc = get_pool_name(o, "name", path, p->name, err)) < 0 ||
        (rc = proto_member_flag(o, "ok", path, &p->ok, err)) < 0 ||
        (rc = get_message(o, path, p->message, err)) < 0 ||
        (rc = proto_member_text(o, "fstype", path, false, p->fstype, sizeof(p->fstype), err)) < 0 ||
        (rc = get_opt_count(o, "latency_us", path, &p->latency_us, err)) < 0 ||
        (rc = get_opt_count(o, "size_bytes", path, &p->size_bytes, err)) < 0 ||
        (rc = get_opt_count(o, "used_bytes", path, &p->used_bytes, err)) < 0)
        return rc;
    return 0;
}

static int parse_area_state(const json_t *o, const char *path, struct storage_area_state *a,
                            struct proto_error *err)
{
    static const char *const known[] = {"pool",     "project",    "ok",          "message",
                                        "enforced", "used_bytes", "quota_bytes", NULL};
    int rc, enforced = STORAGE_QUOTA_ACCOUNTING;
    memset(a, 0, sizeof(*a));
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    if ((rc = proto_check_fields(o, path, known, err)) < 0 ||
        (rc = get_pool_name(o, "pool", path, a->pool, err)) < 0 ||
        (rc = get_name(o, "project", path, true, a->project, err)) < 0 ||
        (rc = proto_member_flag(o, "ok", path, &a->ok, err)) < 0 ||
        (rc = get_message(o, path, a->message, err)) < 0 ||
        (rc = get_enum(o, "enforced", path, quota_names, 2, &enforced, err)) < 0 ||
        (rc = get_opt_count(o, "used_bytes", path, &a->used_bytes, err)) < 0 ||
        (rc = get_bytes(o, "quota_bytes", path, 0, &a->quota_bytes, err)) < 0)
        return rc;
    a->enforced = (enum storage_quota)enforced;
    return 0;
}

int storage_report_parse(const json_t *v, struct storage_report *out, struct proto_error *err)
{
    static const char *const known[] = {"gen", "pools", "areas", NULL};
    memset(out, 0, sizeof(*out));
    int rc;
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, "storage", "storage must be an object");
    if ((rc = proto_check_fields(v, "storage", known, err)) < 0 ||
        (rc = proto_get_int(json_object_get(v, "gen"), "storage.gen", 0, INT64_MAX, &out->gen,
                            err)) < 0)
        return rc;
    json_t *pools = json_object_get(v, "pools"), *areas = json_object_get(v, "areas");
    if (!json_is_array(pools) || json_array_size(pools) > STORAGE_MAX_POOLS)
        return proto_errorf(err, 400, NULL, "storage.pools",
                            "storage.pools must be a list of at most %d pools", STORAGE_MAX_POOLS);
    for (size_t i = 0; i < json_array_size(pools); i++) {
        char path[40];
        snprintf(path, sizeof(path), "storage.pools[%zu]", i);
        if ((rc = parse_pool_state(json_array_get(pools, i), path, &out->pools[i], err)) < 0)
            return rc;
        out->npools = (int)i + 1;
    }
    if (!json_is_array(areas) || json_array_size(areas) > STORAGE_MAX_AREAS)
        return proto_errorf(err, 400, NULL, "storage.areas",
                            "storage.areas must be a list of at most %d areas", STORAGE_MAX_AREAS);
    size_t n = json_array_size(areas);
    out->areas = calloc(n ? n : 1, sizeof(*out->areas));
    if (!out->areas)
        return proto_errorf(err, 500, NULL, "storage.areas", "out of memory");
    for (size_t i = 0; i < n; i++) {
        char path[48];
        snprintf(path, sizeof(path), "storage.areas[%zu]", i);
        if ((rc = parse_area_state(json_array_get(areas, i), path, &out->areas[i], err)) < 0) {
            storage_report_release(out);
            return rc;
        }
        out->nareas = i + 1;
    }
    return 0;
}

void storage_report_release(struct storage_report *r)
{
    free(r->areas);
    r->areas = NULL;
    r->nareas = 0;
}
