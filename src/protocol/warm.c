/*
 * warm.c - the readers and writers of warm.h: the orders docketd hands a node to make a
 * template warm, and the states the node reports back. Each reader checks types, ranges
 * and unknown fields and names the JSON path of what it refuses.
 */
#define _GNU_SOURCE
#include "protocol/warm.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/proto.h"
#include "util/str.h"

static const char *const state_names[] = {"warming", "ready", "failed", "evicted"};

const char *warm_state_name(enum warm_state_kind k)
{
    return (unsigned)k < 4 ? state_names[k] : "?";
}

int warm_state_kind_parse(const char *s, enum warm_state_kind *out)
{
    for (int i = 0; s && i < 4; i++)
        if (strcmp(s, state_names[i]) == 0) {
            *out = (enum warm_state_kind)i;
            return 0;
        }
    return -1;
}

json_t *warm_order_json(const struct warm_order *o)
{
    return json_pack("{s:s,s:I,s:s?,s:s?,s:s?}", "template", o->tmpl, "gen", (json_int_t)o->gen,
                     "image", o->image[0] ? o->image : NULL, "prepare", o->prepare, "registry_auth",
                     o->auth);
}

json_t *warm_state_json(const struct warm_state *s)
{
    json_t *j = json_pack("{s:s,s:I,s:s}", "template", s->tmpl, "gen", (json_int_t)s->gen, "state",
                          warm_state_name(s->state));
    if (j && s->reason[0])
        json_object_set_new(j, "reason", json_string(s->reason));
    return j;
}

/* "NAME@VERSION", a version given. */
static int get_ref(const json_t *o, const char *path, char *out, struct proto_error *err)
{
    char f[48], name[PROTO_NAME_MAX];
    int version = 0;
    snprintf(f, sizeof(f), "%s.template", path);
    const char *s = json_string_value(json_object_get(o, "template"));
    if (!s)
        return proto_errorf(err, 400, NULL, f, "%s must be NAME@VERSION", f);
    int rc = proto_template_ref_parse(s, f, name, &version, err);
    if (rc < 0)
        return rc;
    if (version == 0)
        return proto_errorf(err, 400, NULL, f, "%s must name a version", f);
    snprintf(out, PROTO_TEMPLATE_REF_MAX, "%s@%d", name, version);
    return 0;
}

static int get_gen(const json_t *o, const char *path, int64_t *gen, struct proto_error *err)
{
    char f[48];
    snprintf(f, sizeof(f), "%s.gen", path);
    const json_t *v = json_object_get(o, "gen");
    return v ? proto_get_int(v, f, 0, INT64_MAX, gen, err) : (*gen = 0, 0);
}

/* A string without NUL bytes of at most max-1 bytes, or absent/null (*out NULL). */
static int get_opt_text(const json_t *o, const char *key, const char *path, size_t max,
                        const char **out, struct proto_error *err)
{
    const json_t *v = json_object_get(o, key);
    char f[48];
    snprintf(f, sizeof(f), "%s.%s", path, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v) || json_string_length(v) >= max ||
        strlen(json_string_value(v)) != json_string_length(v))
        return proto_errorf(err, 400, NULL, f, "%s must be a string of less than %zu bytes", f,
                            max);
    *out = json_string_value(v);
    return 0;
}

static int order_parse(const json_t *o, const char *path, struct warm_order *out,
                       struct proto_error *err)
{
    static const char *const known[] = {"template", "gen",           "image",
                                        "prepare",  "registry_auth", NULL};
    const char *image, *prepare, *auth;
    memset(out, 0, sizeof(*out));
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    int rc = proto_check_fields(o, path, known, err);
    if (rc == 0)
        rc = get_ref(o, path, out->tmpl, err);
    if (rc == 0)
        rc = get_gen(o, path, &out->gen, err);
    if (rc == 0)
        rc = get_opt_text(o, "image", path, PROTO_IMAGE_REF_MAX, &image, err);
    if (rc == 0)
        rc = get_opt_text(o, "prepare", path, PROTO_TEMPLATE_SETUP_MAX + 1, &prepare, err);
    if (rc == 0)
        rc = get_opt_text(o, "registry_auth", path, WARM_AUTH_MAX, &auth, err);
    if (rc < 0)
        return rc;
    if (image) {
        struct proto_image_ref r;
        char f[48];
        snprintf(f, sizeof(f), "%s.image", path);
        if ((rc = proto_image_ref_parse(image, f, &r, err)) < 0)
            return rc;
        str_copy(out->image, sizeof(out->image), image);
    }
    if ((prepare && !(out->prepare = strdup(prepare))) || (auth && !(out->auth = strdup(auth))))
        return proto_errorf(err, 500, NULL, path, "out of memory");
    return 0;
}

static int state_parse(const json_t *o, const char *path, struct warm_state *out,
                       struct proto_error *err)
{
    static const char *const known[] = {"template", "gen", "state", "reason", NULL};
    const char *reason;
    memset(out, 0, sizeof(*out));
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    int rc = proto_check_fields(o, path, known, err);
    if (rc == 0)
        rc = get_ref(o, path, out->tmpl, err);
    if (rc == 0)
        rc = get_gen(o, path, &out->gen, err);
    if (rc == 0)
        rc = get_opt_text(o, "reason", path, WARM_REASON_MAX, &reason, err);
    if (rc < 0)
        return rc;
    if (warm_state_kind_parse(json_string_value(json_object_get(o, "state")), &out->state) < 0) {
        char f[48];
        snprintf(f, sizeof(f), "%s.state", path);
        return proto_errorf(err, 400, NULL, f, "%s must be warming, ready, failed or evicted", f);
    }
    if (reason)
        str_copy(out->reason, sizeof(out->reason), reason);
    return 0;
}

void warm_orders_free(struct warm_order *o, size_t n)
{
    for (size_t i = 0; o && i < n; i++) {
        free(o[i].prepare);
        if (o[i].auth) /* credentials do not linger in freed memory */
            explicit_bzero(o[i].auth, strlen(o[i].auth));
        free(o[i].auth);
    }
    free(o);
}

static int order_elem(const json_t *v, const char *path, void *elem, struct proto_error *err)
{
    return order_parse(v, path, elem, err);
}

static void orders_release(void *list, size_t n)
{
    warm_orders_free(list, n);
}

int warm_orders_parse(const json_t *v, struct warm_order **out, size_t *n, struct proto_error *err)
{
    void *list;
    int rc = proto_list_parse(v, "warm", "orders", WARM_MAX, sizeof(**out), order_elem,
                              orders_release, &list, n, err);
    *out = list;
    return rc;
}

static int state_elem(const json_t *v, const char *path, void *elem, struct proto_error *err)
{
    return state_parse(v, path, elem, err);
}

int warm_states_parse(const json_t *v, struct warm_state **out, size_t *n, struct proto_error *err)
{
    void *list;
    int rc = proto_list_parse(v, "warm", "states", WARM_MAX, sizeof(**out), state_elem, NULL, &list,
                              n, err);
    *out = list;
    return rc;
}

bool warm_selector_match(const char *selector, const char *node, const json_t *labels)
{
    char buf[1024];
    bool named = false, name_ok = false;
    if (!selector || !*selector)
        return true;
    str_copy(buf, sizeof buf, selector);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (eq) {
            *eq = '\0';
            const char *v = json_string_value(json_object_get(labels, t));
            if (!v || strcmp(v, eq + 1) != 0)
                return false;
        } else {
            named = true;
            name_ok = name_ok || fnmatch(t, node, 0) == 0;
        }
    }
    return !named || name_ok;
}
