/*
 * templates.c - the `templates` section of the policy document and a job's reference to
 * a template (protocol/templates.h, docs/environments.md): parsed, validated whole and
 * normalised; written back as the same objects.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/container.h"
#include "protocol/templates.h"
#include "util/str.h"

/* A field's path: "templates[3].env". */
static void field_path(char *out, size_t len, size_t i, const char *key)
{
    snprintf(out, len, "templates[%zu]%s%s", i, key[0] ? "." : "", key);
}

static bool env_name_ok(const char *k)
{
    if (!k[0] || (k[0] >= '0' && k[0] <= '9') || strlen(k) >= 256)
        return false;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return false;
    return true;
}

/* A string without NUL bytes or control characters but tab and newline (allow_lines). */
static bool text_ok(const json_t *v, size_t max, bool allow_lines)
{
    if (!json_is_string(v))
        return false;
    size_t n = json_string_length(v);
    const unsigned char *s = (const unsigned char *)json_string_value(v);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((s[i] < 0x20 && !(allow_lines && (s[i] == '\n' || s[i] == '\t'))) || s[i] == 0x7f)
            return false;
    return true;
}

/* A module name goes into a `module load` line of a shell script: only the characters
 * module names use, so it can never be more than one word. */
static bool module_ok(const char *s)
{
    if (!s[0] || s[0] == '-' || strlen(s) > PROTO_TEMPLATE_MODULE_MAX)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              strchr("._+-/@", *p)))
            return false;
    return true;
}

/* "site", or "KIND:NAME" with KIND one of kinds[]. */
static bool scoped_name_ok(const char *s, const char *const *kinds, bool site_ok)
{
    if (site_ok && strcmp(s, "site") == 0)
        return true;
    const char *colon = strchr(s, ':');
    if (!colon)
        return false;
    for (const char *const *k = kinds; *k; k++)
        if (strlen(*k) == (size_t)(colon - s) && strncmp(s, *k, strlen(*k)) == 0)
            return str_is_name(colon + 1) && strlen(colon + 1) < PROTO_NAME_MAX;
    return false;
}

static int bad(struct proto_error *err, size_t i, const char *key, const char *what)
{
    char f[200];
    field_path(f, sizeof(f), i, key);
    return proto_errorf(err, 400, NULL, f, "%s %s", f, what);
}

static int parse_env(const json_t *v, size_t i, json_t *out, struct proto_error *err)
{
    if (!v) {
        json_object_set_new(out, "env", json_object());
        return 0;
    }
    if (!json_is_object(v) || json_object_size(v) > PROTO_TEMPLATE_MAX_ENV)
        return bad(err, i, "env", "must be an object of at most 256 variables");
    json_t *env = json_object();
    json_object_set_new(out, "env", env);
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)v, k, val) {
        char key[300];
        snprintf(key, sizeof(key), "env.%.256s", k);
        if (!env_name_ok(k))
            return bad(err, i, key, "is not a variable name");
        /* Docket's own variables describe the job to itself: a template cannot fake them */
        if (strncmp(k, "DOCKET_", 7) == 0)
            return bad(err, i, key, "is Docket's own (DOCKET_* is reserved)");
        if (!json_is_string(val) || json_string_length(val) > 65536 ||
            memchr(json_string_value(val), '\0', json_string_length(val)))
            return bad(err, i, key, "must be a string without NUL bytes (at most 64 KiB)");
        json_object_set_new(env, k, json_stringn(json_string_value(val), json_string_length(val)));
    }
    return 0;
}

/* A list of strings each passing ok(); copied into out[key]. */
static int parse_list(const json_t *o, const char *key, size_t i, size_t max,
                      bool (*ok)(const char *), const char *what, json_t *out,
                      struct proto_error *err)
{
    const json_t *v = json_object_get(o, key);
    json_t *list = json_array();
    json_object_set_new(out, key, list);
    if (!v)
        return 0;
    if (!json_is_array(v) || json_array_size(v) > max) {
        char m[120];
        snprintf(m, sizeof(m), "must be a list of at most %zu %s", max, what);
        return bad(err, i, key, m);
    }
    size_t k;
    json_t *x;
    json_array_foreach(v, k, x) {
        char f[64];
        snprintf(f, sizeof(f), "%s[%zu]", key, k);
        if (!json_is_string(x) || strlen(json_string_value(x)) != json_string_length(x) ||
            !ok(json_string_value(x))) {
            char m[120];
            snprintf(m, sizeof(m), "is not a valid %s", what);
            return bad(err, i, f, m);
        }
        for (size_t p = 0; p < k; p++)
            if (json_equal(json_array_get(v, p), x))
                return bad(err, i, f, "is listed twice");
        json_array_append(list, x);
    }
    return 0;
}

static bool class_name_ok(const char *s)
{
    return str_is_name(s) && strlen(s) < PROTO_NAME_MAX;
}

static bool owner_ok(const char *s)
{
    static const char *const kinds[] = {"group", "project", NULL};
    return scoped_name_ok(s, kinds, true);
}

static bool default_for_ok(const char *s)
{
    static const char *const kinds[] = {"project", "class", NULL};
    return scoped_name_ok(s, kinds, true);
}

/* setup, description: optional text, null when absent. */
static int parse_text(const json_t *o, const char *key, size_t i, size_t max, json_t *out,
                      struct proto_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (v && !json_is_null(v) && !text_ok(v, max, true)) {
        char m[120];
        snprintf(m, sizeof(m), "must be text of 1 to %zu bytes without NUL or control bytes", max);
        return bad(err, i, key, m);
    }
    json_object_set_new(out, key, v && !json_is_null(v) ? json_copy((json_t *)v) : json_null());
    return 0;
}

/* image: a reference (protocol/container.h) or null; mounts: a list, [] when absent. */
static int parse_container(const json_t *o, size_t i, json_t *doc, struct proto_error *err)
{
    char f[64];
    const json_t *image = json_object_get(o, "image");
    field_path(f, sizeof(f), i, "image");
    if (image && !json_is_null(image)) {
        struct proto_image_ref ref;
        if (!json_is_string(image) || strlen(json_string_value(image)) != json_string_length(image))
            return bad(err, i, "image", "must be a string");
        int rc = proto_image_ref_parse(json_string_value(image), f, &ref, err);
        if (rc < 0)
            return rc;
    }
    json_object_set_new(doc, "image",
                        image && !json_is_null(image) ? json_copy((json_t *)image) : json_null());
    json_t *mounts = json_array();
    json_object_set_new(doc, "mounts", mounts);
    const json_t *m = json_object_get(o, "mounts");
    field_path(f, sizeof(f), i, "mounts");
    return m && !json_is_null(m) ? proto_mounts_parse(m, f, mounts, err) : 0;
}

static int parse_one(const json_t *o, size_t i, struct proto_template *t, struct proto_error *err)
{
    static const char *const known[] = {"name",    "version",       "owner",       "description",
                                        "env",     "modules",       "setup",       "mounts",
                                        "classes", "image",         "default_for", "prepare",
                                        "warm_on", "registry_auth", NULL};
    char path[48];
    field_path(path, sizeof(path), i, "");
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    int rc = proto_check_fields(o, path, known, err);
    if (rc < 0)
        return rc;
    char f[64];
    field_path(f, sizeof(f), i, "name");
    if (!json_object_get(o, "name"))
        return proto_errorf(err, 400, NULL, f, "%s is required", f);
    if ((rc = proto_get_name(json_object_get(o, "name"), f, t->name, err)) < 0)
        return rc;
    int64_t version = 1;
    field_path(f, sizeof(f), i, "version");
    const json_t *v = json_object_get(o, "version");
    if (v && (rc = proto_get_int(v, f, 1, PROTO_TEMPLATE_VERSION_MAX, &version, err)) < 0)
        return rc;
    t->version = (int)version;
    const json_t *owner = json_object_get(o, "owner");
    if (owner && (!json_is_string(owner) || !owner_ok(json_string_value(owner))))
        return bad(err, i, "owner", "must be \"site\", \"group:NAME\" or \"project:NAME\"");
    json_t *doc = json_object();
    t->doc = doc;
    json_object_set_new(doc, "name", json_string(t->name));
    json_object_set_new(doc, "version", json_integer(t->version));
    json_object_set_new(doc, "owner", json_string(owner ? json_string_value(owner) : "site"));
    if ((rc = parse_text(o, "description", i, 1024, doc, err)) < 0 ||
        (rc = parse_env(json_object_get(o, "env"), i, doc, err)) < 0 ||
        (rc = parse_list(o, "modules", i, PROTO_TEMPLATE_MAX_MODULES, module_ok, "module name", doc,
                         err)) < 0 ||
        (rc = parse_text(o, "setup", i, PROTO_TEMPLATE_SETUP_MAX, doc, err)) < 0 ||
        (rc = parse_text(o, "prepare", i, PROTO_TEMPLATE_SETUP_MAX, doc, err)) < 0 ||
        (rc = parse_list(o, "classes", i, SCHED_MAX_CLASSES, class_name_ok, "class name", doc,
                         err)) < 0 ||
        (rc = parse_list(o, "default_for", i, PROTO_TEMPLATE_MAX_DEFAULTS, default_for_ok,
                         "default (\"site\", \"project:NAME\" or \"class:NAME\")", doc, err)) < 0 ||
        (rc = parse_container(o, i, doc, err)) < 0 ||
        (rc = parse_text(o, "warm_on", i, 1000, doc, err)) < 0 ||
        (rc = parse_text(o, "registry_auth", i, PROTO_SECRET_NAME_MAX + 1, doc, err)) < 0)
        return rc;
    /* registry_auth: a secret of the job's project, for a docker:// image's registry */
    const char *auth = json_string_value(json_object_get(doc, "registry_auth"));
    if (auth && !proto_secret_name_ok(auth))
        return bad(err, i, "registry_auth", "must name a secret (a variable name)");
    /* warm_on: the nodes docketd keeps it warm on (controller/warm.h), a selector */
    const char *sel = json_string_value(json_object_get(doc, "warm_on"));
    if (sel &&
        (strstr(sel, ",,") || sel[0] == ',' || sel[strlen(sel) - 1] == ',' || strpbrk(sel, " \t")))
        return bad(err, i, "warm_on", "must be a selector: NODE,... and KEY=VALUE,... terms");
    return 0;
}

/* The first target of a's default_for also in b's (its index in *at), or NULL. */
static const char *shared_default(const json_t *a, const json_t *b, size_t *at)
{
    size_t i, k;
    json_t *x, *y;
    json_array_foreach(json_object_get(a, "default_for"), i, x) {
        json_array_foreach(json_object_get(b, "default_for"), k, y) {
            if (json_equal(x, y)) {
                *at = i;
                return json_string_value(x);
            }
        }
    }
    return NULL;
}

/* Two entries may share a name (versions side by side) but not a version; a default
 * target belongs to one template name. */
static int check_unique(const struct proto_templates *ts, size_t i, struct proto_error *err)
{
    const struct proto_template *t = &ts->t[i];
    for (size_t k = 0; k < i; k++) {
        const struct proto_template *o = &ts->t[k];
        bool same = strcmp(o->name, t->name) == 0;
        if (same && o->version == t->version)
            return bad(err, i, "version", "repeats an earlier entry's name and version");
        size_t at;
        const char *target = same ? NULL : shared_default(t->doc, o->doc, &at);
        if (target) {
            char f[64], m[200];
            snprintf(f, sizeof(f), "default_for[%zu]", at);
            snprintf(m, sizeof(m), "'%s' is already the default of template '%s'", target, o->name);
            return bad(err, i, f, m);
        }
    }
    return 0;
}

int proto_templates_parse(const json_t *v, struct proto_templates *out, struct proto_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!json_is_array(v) || json_array_size(v) > PROTO_MAX_TEMPLATES)
        return proto_errorf(err, 400, NULL, "templates",
                            "templates must be a list of at most %d templates",
                            PROTO_MAX_TEMPLATES);
    size_t n = json_array_size(v);
    out->t = calloc(n ? n : 1, sizeof(*out->t));
    if (!out->t)
        return proto_errorf(err, 500, NULL, "templates", "out of memory");
    for (size_t i = 0; i < n; i++) {
        out->n = i + 1; /* so a release frees what this entry made */
        int rc = parse_one(json_array_get(v, i), i, &out->t[i], err);
        if (rc == 0)
            rc = check_unique(out, i, err);
        if (rc < 0) {
            proto_templates_release(out);
            return rc;
        }
    }
    return 0;
}

static bool class_known(const struct sched_class_spec *classes, int nclasses, const char *name)
{
    for (int c = 0; c < nclasses; c++)
        if (strcmp(classes[c].name, name) == 0)
            return true;
    return false;
}

int proto_templates_check_classes(const struct proto_templates *ts,
                                  const struct sched_class_spec *classes, int nclasses,
                                  struct proto_error *err)
{
    for (size_t i = 0; i < ts->n; i++) {
        size_t k;
        json_t *x;
        char f[48], m[120];
        json_array_foreach(json_object_get(ts->t[i].doc, "classes"), k, x) {
            if (class_known(classes, nclasses, json_string_value(x)))
                continue;
            snprintf(f, sizeof(f), "classes[%zu]", k);
            snprintf(m, sizeof(m), "names unknown class '%s'", json_string_value(x));
            return bad(err, i, f, m);
        }
        json_array_foreach(json_object_get(ts->t[i].doc, "default_for"), k, x) {
            const char *d = json_string_value(x);
            if (strncmp(d, "class:", 6) != 0 || class_known(classes, nclasses, d + 6))
                continue;
            snprintf(f, sizeof(f), "default_for[%zu]", k);
            snprintf(m, sizeof(m), "names unknown class '%s'", d + 6);
            return bad(err, i, f, m);
        }
    }
    return 0;
}

void proto_templates_release(struct proto_templates *ts)
{
    for (size_t i = 0; ts->t && i < ts->n; i++)
        json_decref(ts->t[i].doc);
    free(ts->t);
    ts->t = NULL;
    ts->n = 0;
}

void proto_templates_copy(struct proto_templates *dst, const struct proto_templates *src)
{
    dst->n = 0;
    dst->t = calloc(src->n ? src->n : 1, sizeof(*dst->t));
    if (!dst->t)
        abort(); /* as xmalloc: docketd cannot go on without memory */
    for (size_t i = 0; i < src->n; i++) {
        dst->t[i] = src->t[i];
        dst->t[i].doc = json_deep_copy(src->t[i].doc);
    }
    dst->n = src->n;
}

json_t *proto_templates_json(const struct proto_templates *ts)
{
    json_t *list = json_array();
    for (size_t i = 0; i < ts->n; i++)
        json_array_append_new(list, json_deep_copy(ts->t[i].doc));
    return list;
}

int proto_template_ref_parse(const char *s, const char *field, char name[PROTO_NAME_MAX],
                             int *version, struct proto_error *err)
{
    const char *at = strchr(s, '@');
    size_t n = at ? (size_t)(at - s) : strlen(s);
    char buf[PROTO_NAME_MAX];
    *version = 0;
    if (n == 0 || n >= sizeof(buf))
        goto bad_ref;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (!str_is_name(buf))
        goto bad_ref;
    if (at) {
        char *end = NULL;
        errno = 0;
        long v = strtol(at + 1, &end, 10);
        if (at[1] < '1' || at[1] > '9' || errno || *end || v < 1 || v > PROTO_TEMPLATE_VERSION_MAX)
            goto bad_ref;
        *version = (int)v;
    }
    memcpy(name, buf, n + 1);
    return 0;
bad_ref:
    return proto_errorf(err, 400, NULL, field, "%s must be NAME or NAME@VERSION (e.g. torch@3)",
                        field);
}

const struct proto_template *proto_template_find(const struct proto_templates *ts, const char *name,
                                                 int version)
{
    const struct proto_template *best = NULL;
    for (size_t i = 0; i < ts->n; i++) {
        const struct proto_template *t = &ts->t[i];
        if (strcmp(t->name, name) != 0)
            continue;
        if (version ? t->version == version : !best || t->version > best->version)
            best = t;
    }
    return best;
}
