/*
 * templates.c - the job environment templates (templates.h, docs/environments.md): kept
 * from the policy document, served, audited per template, and resolved for each job at
 * submit so the job carries the exact version it runs with, whatever changes after.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/http.h"
#include "controller/loop.h"
#include "controller/storage.h"
#include "controller/templates.h"
#include "controller/warm.h"
#include "protocol/container.h"
#include "protocol/templates.h"
#include "util/str.h"
#include "util/xalloc.h"

static struct proto_templates *current(struct ctl *c)
{
    if (!c->templates)
        c->templates = xcalloc(1, sizeof(*c->templates));
    return c->templates;
}

void ctl_templates_take(struct ctl *c, const struct proto_policy *pp)
{
    if (!pp->templates)
        return;
    struct proto_templates *ts = current(c);
    proto_templates_release(ts);
    proto_templates_copy(ts, pp->templates);
}

void ctl_templates_json(struct ctl *c, json_t *doc, const struct proto_policy *pp)
{
    const struct proto_templates *ts = pp && pp->templates ? pp->templates : current(c);
    json_object_set_new(doc, "templates", proto_templates_json(ts));
}

void ctl_templates_stop(struct ctl *c)
{
    if (!c->templates)
        return;
    proto_templates_release(c->templates);
    free(c->templates);
    c->templates = NULL;
}

/* What a job of NAME@VERSION runs with: its variables, modules, setup and what the nodes
 * prepared for it (a node keeps that under the name and version). Who may use it and whom
 * it serves by default may change under the same version. */
static bool same_environment(const json_t *a, const json_t *b)
{
    static const char *const keys[] = {"env", "modules", "setup", "prepare", "image", "mounts"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!json_equal(json_object_get(a, keys[i]), json_object_get(b, keys[i])))
            return false;
    return true;
}

int ctl_templates_check(struct ctl *c, const struct proto_policy *pp, struct proto_error *e)
{
    if (!pp->templates)
        return 0;
    const struct proto_templates *now = current(c);
    for (size_t i = 0; i < pp->templates->n; i++) {
        const struct proto_template *t = &pp->templates->t[i];
        const struct proto_template *old = proto_template_find(now, t->name, t->version);
        if (old && !same_environment(old->doc, t->doc)) {
            char f[48];
            snprintf(f, sizeof(f), "templates[%zu].version", i);
            /* jobs recorded NAME@VERSION: that must keep meaning one environment */
            return proto_errorf(e, 409, NULL, f,
                                "template '%s' version %d exists with other content: give the "
                                "change a new version (%d)",
                                t->name, t->version,
                                proto_template_find(now, t->name, 0)->version + 1);
        }
    }
    return 0;
}

/* Every version of `name` in ts, in its order: a new list. */
static json_t *versions_of(const struct proto_templates *ts, const char *name)
{
    json_t *list = json_array();
    for (size_t i = 0; i < ts->n; i++)
        if (strcmp(ts->t[i].name, name) == 0)
            json_array_append_new(list, json_deep_copy(ts->t[i].doc));
    return list;
}

/* template.create, .update or .delete for `name` when its versions differ. */
static int audit_name(struct ctl *c, const char *actor, const char *name,
                      const struct proto_templates *before, const struct proto_templates *after)
{
    json_t *b = versions_of(before, name), *a = versions_of(after, name);
    int rc = 0;
    if (!json_equal(b, a)) {
        const char *action = json_array_size(b) == 0   ? "template.create"
                             : json_array_size(a) == 0 ? "template.delete"
                                                       : "template.update";
        char target[PROTO_NAME_MAX + 16];
        snprintf(target, sizeof(target), "template:%s", name);
        rc = ctl_audit(c, actor, action, target, json_array_size(b) ? b : NULL,
                       json_array_size(a) ? a : NULL, NULL);
    }
    json_decref(b);
    json_decref(a);
    return rc;
}

/* Whether `name` comes earlier in ts than index i (each name is audited once). */
static bool seen_before(const struct proto_templates *ts, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (strcmp(ts->t[k].name, ts->t[i].name) == 0)
            return true;
    return false;
}

int ctl_templates_audit(struct ctl *c, const char *actor, const struct proto_policy *pp)
{
    if (!pp->templates)
        return 0;
    const struct proto_templates *before = current(c), *after = pp->templates;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < after->n; i++)
        if (!seen_before(after, i))
            rc = audit_name(c, actor, after->t[i].name, before, after);
    for (size_t i = 0; rc == 0 && i < before->n; i++)
        if (!seen_before(before, i) && !proto_template_find(after, before->t[i].name, 0))
            rc = audit_name(c, actor, before->t[i].name, before, after);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* At submit                                                                             */

static bool list_has(const json_t *list, const char *s)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) {
        if (strcmp(json_string_value(x), s) == 0)
            return true;
    }
    return false;
}

/* Why the job may not use t ("" when it may). */
static void refusal(const struct proto_template *t, const struct proto_jobspec *ps,
                    const char *group, char *why, size_t len)
{
    const char *owner = json_string_value(json_object_get(t->doc, "owner"));
    const json_t *classes = json_object_get(t->doc, "classes");
    why[0] = '\0';
    if (str_has_prefix(owner, "project:") && strcmp(owner + 8, ps->project) != 0)
        snprintf(why, len, "template '%s' belongs to project '%s', not to '%s'", t->name, owner + 8,
                 ps->project);
    else if (str_has_prefix(owner, "group:") && strcmp(owner + 6, group) != 0)
        snprintf(why, len, "template '%s' belongs to group '%s'; project '%s' is not in it",
                 t->name, owner + 6, ps->project);
    else if (json_array_size(classes) > 0 && !list_has(classes, ps->class_name))
        snprintf(why, len, "template '%s' is not for class '%s' (see docket templates show %s)",
                 t->name, ps->class_name, t->name);
}

/* The default the job gets: its project's, else its class's, else the site's, each only
 * where the job may use it. */
static const struct proto_template *default_for(const struct proto_templates *ts,
                                                const struct proto_jobspec *ps, const char *group)
{
    char targets[3][PROTO_NAME_MAX + 8];
    snprintf(targets[0], sizeof(targets[0]), "project:%s", ps->project);
    snprintf(targets[1], sizeof(targets[1]), "class:%s", ps->class_name);
    snprintf(targets[2], sizeof(targets[2]), "site");
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < ts->n; i++) {
            if (!list_has(json_object_get(ts->t[i].doc, "default_for"), targets[k]))
                continue;
            const struct proto_template *t = proto_template_find(ts, ts->t[i].name, 0);
            char why[200];
            refusal(t, ps, group, why, sizeof(why));
            if (!why[0])
                return t;
        }
    return NULL;
}

/* The template's variables under the job's own (the job's win), and DOCKET_TEMPLATE. */
static void merge_env(json_t *extra, const struct proto_template *t, const char *ref)
{
    json_t *env = json_deep_copy(json_object_get(t->doc, "env"));
    json_t *own = json_object_get(extra, "env");
    if (json_is_object(own))
        json_object_update(env, own);
    json_object_set_new(env, "DOCKET_TEMPLATE", json_string(ref));
    json_object_set_new(extra, "env", env);
}

/* Whether path is dir or lies under it. */
static bool path_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/' || n == 1);
}

/* A mount the job names comes from its working directory or its project's storage
 * areas; the template's (the site's policy) may come from anywhere. The node checks
 * again that the job's user may reach it (supoci.c). */
static int check_job_mounts(struct ctl *c, const struct proto_jobspec *ps, const json_t *mounts,
                            struct proto_error *e)
{
    const char *wd = json_string_value(json_object_get(ps->extra, "workdir"));
    size_t i;
    json_t *x;
    json_array_foreach(mounts, i, x) {
        struct proto_mount m;
        char f[32];
        snprintf(f, sizeof(f), "mounts[%zu]", i);
        if (proto_mount_parse(json_string_value(x), f, &m, e) < 0)
            return -EINVAL;
        if (!(wd && wd[0] == '/' && path_under(m.src, wd)) &&
            !ctl_storage_path_in_area(c, ps->project, m.src))
            return proto_errorf(e, 400, NULL, f,
                                "mount source '%.200s' is neither under the job's workdir nor in "
                                "a storage area of project '%s'",
                                m.src, ps->project);
    }
    return 0;
}

/* The secret holding the registry's credentials for image: the job's registry_auth, else
 * its template's. NULL when none; json_true() (not a name) when the job names one for an
 * image that comes from no registry (a refusal); a template's is simply not used then. */
static const json_t *registry_auth(const struct proto_jobspec *ps, const struct proto_template *t,
                                   const char *image)
{
    const json_t *own = json_object_get(ps->extra, "registry_auth");
    bool registry = image && str_has_prefix(image, "docker://");
    if (json_is_string(own))
        return registry ? own : json_true();
    const json_t *tpl = t ? json_object_get(t->doc, "registry_auth") : NULL;
    return registry && json_is_string(tpl) ? tpl : NULL;
}

/* "container": {"image", "mounts", "workdir", "registry_auth"}, what the node runs the job
 * in: the job's image else its template's, the template's mounts then the job's, the
 * secret holding the registry's credentials (its name). */
static int container_resolve(struct ctl *c, struct proto_jobspec *ps,
                             const struct proto_template *t, struct proto_error *e)
{
    const json_t *image = json_object_get(ps->extra, "image");
    const json_t *own = json_object_get(ps->extra, "mounts");
    if (!json_is_string(image) && t)
        image = json_object_get(t->doc, "image");
    if (!json_is_string(image)) {
        if (json_array_size(own) > 0 || json_object_get(ps->extra, "container_workdir") ||
            json_object_get(ps->extra, "registry_auth"))
            return proto_errorf(e, 400, NULL,
                                json_array_size(own)                          ? "mounts"
                                : json_object_get(ps->extra, "registry_auth") ? "registry_auth"
                                                                              : "container_workdir",
                                "mounts, container_workdir and registry_auth need an image "
                                "(image, or the template's)");
        return 0;
    }
    const json_t *auth = registry_auth(ps, t, json_string_value(image));
    if (auth && !json_is_string(auth))
        return proto_errorf(e, 400, NULL, "registry_auth",
                            "registry_auth is for a docker:// image; '%.200s' is read from "
                            "storage the nodes see",
                            json_string_value(image));
    if (check_job_mounts(c, ps, own, e) < 0)
        return -EINVAL;
    json_t *mounts = t ? json_deep_copy(json_object_get(t->doc, "mounts")) : json_array();
    if (!mounts)
        mounts = json_array();
    if (json_is_array(own))
        json_array_extend(mounts, (json_t *)own);
    if (json_array_size(mounts) > PROTO_MAX_MOUNTS) {
        json_decref(mounts);
        return proto_errorf(e, 400, NULL, "mounts",
                            "the template's mounts and the job's make more than %d",
                            PROTO_MAX_MOUNTS);
    }
    const json_t *cwd = json_object_get(ps->extra, "container_workdir");
    json_t *container = json_pack("{s:O,s:o,s:O}", "image", image, "mounts", mounts, "workdir",
                                  cwd ? cwd : json_null());
    if (auth) /* its name: the node gets its value at the start, for the copy only */
        json_object_set(container, "registry_auth", (json_t *)auth);
    json_object_set_new(ps->extra, "container", container);
    return 0;
}

int ctl_template_resolve(struct ctl *c, struct proto_jobspec *ps, const char *group,
                         struct proto_error *e)
{
    const struct proto_templates *ts = current(c);
    const json_t *named = json_object_get(ps->extra, "template");
    const struct proto_template *t;
    if (json_is_string(named)) {
        char name[PROTO_NAME_MAX];
        int version;
        if (proto_template_ref_parse(json_string_value(named), "template", name, &version, e) < 0)
            return -EINVAL;
        t = proto_template_find(ts, name, version);
        if (!t && version && proto_template_find(ts, name, 0))
            return proto_errorf(e, 400, NULL, "template",
                                "template '%s' has no version %d (the latest is %d)", name, version,
                                proto_template_find(ts, name, 0)->version);
        if (!t)
            return proto_errorf(e, 400, NULL, "template",
                                "unknown template '%s' (docket templates lists them)", name);
        char why[200];
        refusal(t, ps, group, why, sizeof(why));
        if (why[0])
            return proto_errorf(e, 400, NULL, "template", "%s", why);
    } else if (!(t = default_for(ts, ps, group))) {
        return container_resolve(c, ps, NULL, e);
    }
    char ref[PROTO_TEMPLATE_REF_MAX];
    snprintf(ref, sizeof(ref), "%s@%d", t->name, t->version);
    json_object_set_new(ps->extra, "template", json_string(ref));
    merge_env(ps->extra, t, ref);
    const json_t *modules = json_object_get(t->doc, "modules");
    const json_t *setup = json_object_get(t->doc, "setup");
    const json_t *prepare = json_object_get(t->doc, "prepare");
    json_t *environment = json_pack("{s:O,s:O}", "modules", modules, "setup", setup);
    if (json_is_string(prepare)) { /* built once per node under this name and version */
        json_object_set_new(environment, "template", json_string(ref));
        json_object_set(environment, "prepare", (json_t *)prepare);
    }
    if (json_array_size(modules) > 0 || json_is_string(setup) || json_is_string(prepare))
        json_object_set_new(ps->extra, "environment", environment);
    else
        json_decref(environment);
    return container_resolve(c, ps, t, e);
}

/* ------------------------------------------------------------------------------------ */
/* GET /v1/templates, /v1/templates/NAME                                                 */

void h_templates_list(struct ctl_req *r)
{
    ctl_reply_json(r->c, r->req, 200,
                   json_pack("{s:o}", "templates", proto_templates_json(current(r->c))));
}

/* NAME or NAME@VERSION: that template (its latest version), with every version's number. */
void h_template_show(struct ctl_req *r)
{
    const struct proto_templates *ts = current(r->c);
    char name[PROTO_NAME_MAX];
    int version;
    struct proto_error e;
    if (proto_template_ref_parse(r->arg[0], "name", name, &version, &e) < 0) {
        ctl_reply_error(r->c, r->req, &e);
        return;
    }
    const struct proto_template *t = proto_template_find(ts, name, version);
    if (!t) {
        ctl_reply_errorf(r->c, r->req, 404, NULL, "no such template '%.80s'", r->arg[0]);
        return;
    }
    json_t *versions = json_array();
    for (size_t i = 0; i < ts->n; i++)
        if (strcmp(ts->t[i].name, name) == 0)
            json_array_append_new(versions, json_integer(ts->t[i].version));
    json_t *o = json_deep_copy(t->doc);
    json_object_set_new(o, "versions", versions);
    json_object_set_new(o, "warm", ctl_warm_json(r->c, name));
    ctl_reply_json(r->c, r->req, 200, json_pack("{s:o}", "template", o));
}
