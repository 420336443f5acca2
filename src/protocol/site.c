/*
 * site.c - the `gpu_aliases` and `partitions` sections of the policy document (site.h):
 * read, validated and normalised; looked up by name.
 */
#include "protocol/site.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/str.h"

int proto_gpu_aliases_parse(const json_t *v, json_t **out, struct proto_error *err)
{
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, "gpu_aliases",
                            "gpu_aliases must be an object of NAME: GPU_TYPE");
    if (json_object_size(v) > PROTO_MAX_GPU_ALIASES)
        return proto_errorf(err, 400, NULL, "gpu_aliases", "gpu_aliases: at most %d names",
                            PROTO_MAX_GPU_ALIASES);
    json_t *o = json_object();
    const char *k;
    json_t *t;
    json_object_foreach((json_t *)v, k, t) {
        char f[96], type[PROTO_NAME_MAX];
        snprintf(f, sizeof(f), "gpu_aliases.%.64s", k);
        if (!str_is_name(k) || strlen(k) >= PROTO_NAME_MAX) {
            json_decref(o);
            return proto_errorf(err, 400, NULL, f, "%s: invalid name", f);
        }
        if (proto_get_name(t, f, type, err) < 0) {
            json_decref(o);
            return -EINVAL;
        }
        if (proto_gpu_alias(o, k)) {
            json_decref(o);
            return proto_errorf(err, 400, NULL, f, "%s: named twice (names are read in any case)",
                                f);
        }
        json_object_set_new(o, k, json_string(type));
    }
    *out = o;
    return 0;
}

int proto_node_labels_parse(const json_t *v, json_t **out, struct proto_error *err)
{
    if (!json_is_object(v) || json_object_size(v) > PROTO_MAX_NODE_LABEL_NODES)
        return proto_errorf(err, 400, NULL, "node_labels",
                            "node_labels must be an object NODE: {LABEL: VALUE} of at most %d "
                            "nodes",
                            PROTO_MAX_NODE_LABEL_NODES);
    const char *node;
    json_t *labels;
    json_object_foreach((json_t *)v, node, labels) {
        char f[160];
        snprintf(f, sizeof(f), "node_labels.%.64s", node);
        if (!str_is_name(node) || !json_is_object(labels) ||
            json_object_size(labels) > SCHED_MAX_LABELS)
            return proto_errorf(err, 400, NULL, f, "%s: want a node's name and at most %d labels",
                                f, SCHED_MAX_LABELS);
        const char *k;
        json_t *val;
        json_object_foreach(labels, k, val) {
            if (!str_is_name(k) || !json_is_string(val) ||
                !str_is_label_value(k, json_string_value(val)))
                return proto_errorf(err, 400, NULL, f, "%s.%.64s: want a label name and value", f,
                                    k);
        }
    }
    *out = json_deep_copy(v);
    return 0;
}

const char *proto_gpu_alias(const json_t *aliases, const char *name)
{
    const char *k;
    json_t *t;
    json_object_foreach((json_t *)aliases, k, t) {
        if (strcasecmp(k, name) == 0)
            return json_string_value(t);
    }
    return NULL;
}

static int part_nodes(const json_t *v, const char *path, json_t *part, struct proto_error *err)
{
    char f[128];
    snprintf(f, sizeof(f), "%s.nodes", path);
    if (!v) {
        json_object_set_new(part, "nodes", json_object());
        return 0;
    }
    if (!json_is_object(v) || json_object_size(v) > PROTO_MAX_SELECTORS / 2)
        return proto_errorf(err, 400, NULL, f, "%s must be an object of at most %d labels", f,
                            PROTO_MAX_SELECTORS / 2);
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)v, k, val) {
        const char *s = json_string_value(val);
        if (!str_is_name(k) || !s || !str_is_name(s[0] == '!' ? s + 1 : s))
            return proto_errorf(err, 400, NULL, f,
                                "%s: want LABEL: VALUE or LABEL: \"!VALUE\" (names), not "
                                "'%.64s'",
                                f, k);
    }
    json_object_set(part, "nodes", (json_t *)v);
    return 0;
}

static int part_name_in(const json_t *v, const char *key, const char *path, json_t *part,
                        const struct sched_policy *p, struct proto_error *err)
{
    char f[128], name[PROTO_NAME_MAX] = "";
    snprintf(f, sizeof(f), "%s.%s", path, key);
    if (v && !json_is_null(v) && proto_get_name(v, f, name, err) < 0)
        return -EINVAL;
    bool tier = strcmp(key, "tier") == 0;
    bool found = !name[0];
    for (int i = 0; !found && i < (tier ? p->ntiers : p->nclasses); i++)
        found = strcmp(tier ? p->tiers[i].name : p->classes[i].name, name) == 0;
    if (!found)
        return proto_errorf(err, 400, NULL, f, "%s: the policy has no %s '%s'", f, key, name);
    json_object_set_new(part, key, name[0] ? json_string(name) : json_null());
    return 0;
}

static int part_time(const json_t *v, const char *key, const char *path, json_t *part, int64_t *ms,
                     struct proto_error *err)
{
    char f[128];
    snprintf(f, sizeof(f), "%s.%s", path, key);
    *ms = 0;
    if (v && !json_is_null(v) && proto_get_duration(v, f, 366LL * 24 * 3600 * 1000, ms, err) < 0)
        return -EINVAL;
    json_object_set_new(part, key, json_integer(*ms / 1000)); /* seconds; 0 = none */
    return 0;
}

static int part_projects(const json_t *v, const char *path, json_t *part, struct proto_error *err)
{
    char f[128];
    snprintf(f, sizeof(f), "%s.projects", path);
    if (!v || json_is_null(v)) {
        json_object_set_new(part, "projects", json_null()); /* every project */
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) > PROTO_MAX_PARTITION_PROJECTS)
        return proto_errorf(err, 400, NULL, f, "%s must be a list of at most %d projects", f,
                            PROTO_MAX_PARTITION_PROJECTS);
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        char name[PROTO_NAME_MAX];
        if (proto_get_name(x, f, name, err) < 0)
            return -EINVAL;
    }
    json_object_set(part, "projects", (json_t *)v);
    return 0;
}

static int parse_partition(const json_t *o, const char *path, const struct sched_policy *p,
                           json_t *part, struct proto_error *err)
{
    static const char *const known[] = {"name",  "nodes",    "default_time", "max_time", "tier",
                                        "class", "projects", "default",      NULL};
    char f[128], name[PROTO_NAME_MAX];
    int64_t def_ms, max_ms;
    bool is_default = false;
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    snprintf(f, sizeof(f), "%s.name", path);
    if (proto_check_fields(o, path, known, err) < 0 ||
        proto_get_name(json_object_get(o, "name"), f, name, err) < 0)
        return -EINVAL;
    json_object_set_new(part, "name", json_string(name));
    if (part_nodes(json_object_get(o, "nodes"), path, part, err) < 0 ||
        part_time(json_object_get(o, "default_time"), "default_time", path, part, &def_ms, err) <
            0 ||
        part_time(json_object_get(o, "max_time"), "max_time", path, part, &max_ms, err) < 0 ||
        part_name_in(json_object_get(o, "tier"), "tier", path, part, p, err) < 0 ||
        part_name_in(json_object_get(o, "class"), "class", path, part, p, err) < 0 ||
        part_projects(json_object_get(o, "projects"), path, part, err) < 0)
        return -EINVAL;
    if (max_ms > 0 && def_ms > max_ms)
        return proto_errorf(err, 400, NULL, path, "%s: default_time is above max_time", path);
    snprintf(f, sizeof(f), "%s.default", path);
    json_t *d = json_object_get(o, "default");
    if (d && proto_get_bool(d, f, &is_default, err) < 0)
        return -EINVAL;
    json_object_set_new(part, "default", json_boolean(is_default));
    return 0;
}

int proto_partitions_parse(const json_t *v, const struct sched_policy *p, json_t **out,
                           struct proto_error *err)
{
    if (!json_is_array(v) || json_array_size(v) > PROTO_MAX_PARTITIONS)
        return proto_errorf(err, 400, NULL, "partitions",
                            "partitions must be a list of at most %d partitions",
                            PROTO_MAX_PARTITIONS);
    json_t *list = json_array();
    size_t i;
    json_t *o;
    int defaults = 0;
    json_array_foreach(v, i, o) {
        char path[32];
        snprintf(path, sizeof(path), "partitions[%zu]", i);
        json_t *part = json_object();
        if (parse_partition(o, path, p, part, err) < 0) {
            json_decref(part);
            json_decref(list);
            return -EINVAL;
        }
        if (proto_partition_find(list, json_string_value(json_object_get(part, "name")))) {
            proto_errorf(err, 400, NULL, path, "%s: partition '%s' is named twice", path,
                         json_string_value(json_object_get(part, "name")));
            json_decref(part);
            json_decref(list);
            return -EINVAL;
        }
        defaults += json_is_true(json_object_get(part, "default"));
        json_array_append_new(list, part);
        if (defaults > 1) {
            json_decref(list);
            return proto_errorf(err, 400, NULL, path, "%s: a second default partition", path);
        }
    }
    *out = list;
    return 0;
}

const json_t *proto_partition_find(const json_t *partitions, const char *name)
{
    size_t i;
    json_t *part;
    json_array_foreach((json_t *)partitions, i, part) {
        if (name ? strcmp(json_string_value(json_object_get(part, "name")), name) == 0
                 : json_is_true(json_object_get(part, "default")))
            return part;
    }
    return NULL;
}

bool proto_partition_allows(const json_t *part, const char *project)
{
    const json_t *list = json_object_get(part, "projects");
    if (!json_is_array(list))
        return true;
    size_t i;
    json_t *x;
    json_array_foreach((json_t *)list, i, x) {
        if (strcmp(json_string_value(x), project) == 0)
            return true;
    }
    return false;
}
