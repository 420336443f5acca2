/*
 * lifecycle.c - the readers and writers of lifecycle.h: the policy's lifecycle rules, a
 * run handed to an agent and the result it reports; and the pure decisions on them (is a
 * file due, when is a rule due). Each reader checks types, ranges and unknown fields and
 * names the JSON path of what it refuses.
 */
#include "protocol/lifecycle.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/proto.h"
#include "util/str.h"

#define LC_MAX_BYTES    ((int64_t)1 << 60)
#define LC_MAX_AFTER_MS ((int64_t)100 * 365 * 86400 * 1000)

static const char *const action_names[] = {"move", "delete"};

const char *lifecycle_action_name(enum lifecycle_action a)
{
    return (unsigned)a < 2 ? action_names[a] : "?";
}

/* ---- small typed readers ------------------------------------------------------------- */

static int get_count(const json_t *o, const char *key, const char *path, int64_t max, int64_t *out,
                     struct proto_error *err)
{
    char f[160];
    snprintf(f, sizeof(f), "%s.%s", path, key);
    *out = 0;
    json_t *v = json_object_get(o, key);
    return v ? proto_get_int(v, f, 0, max, out, err) : 0;
}

static int get_action(const json_t *o, const char *path, enum lifecycle_action *out,
                      struct proto_error *err)
{
    char f[160];
    snprintf(f, sizeof(f), "%s.action", path);
    const char *s = json_string_value(json_object_get(o, "action"));
    for (int i = 0; s && i < 2; i++)
        if (strcmp(s, action_names[i]) == 0) {
            *out = (enum lifecycle_action)i;
            return 0;
        }
    return proto_errorf(err, 400, NULL, f, "%s must be move or delete", f);
}

/* A path as storage.c takes a pool's: absolute, without "." or ".." components. */
static bool abs_path_ok(const char *p)
{
    if (p[0] != '/')
        return false;
    for (const char *s = p; (s = strstr(s, "/.")) != NULL; s++)
        if (s[2] == '/' || s[2] == '\0' || (s[2] == '.' && (s[3] == '/' || s[3] == '\0')))
            return false;
    return true;
}

/* ---- the policy's rules -------------------------------------------------------------- */

static int parse_rule_projects(const json_t *v, const char *path, struct lifecycle_rule *r,
                               struct proto_error *err)
{
    char f[160];
    snprintf(f, sizeof(f), "%s.projects", path);
    if (!v)
        return 0;
    if (!json_is_array(v) || json_array_size(v) > STORAGE_RULE_PROJECTS)
        return proto_errorf(err, 400, NULL, f, "%s must be a list of at most %d projects", f,
                            STORAGE_RULE_PROJECTS);
    for (size_t i = 0; i < json_array_size(v); i++) {
        char pf[180];
        snprintf(pf, sizeof(pf), "%s[%zu]", f, i);
        char name[PROTO_NAME_MAX];
        int rc = proto_get_name(json_array_get(v, i), pf, name, err);
        if (rc < 0)
            return rc;
        str_copy(r->projects[r->nprojects++], STORAGE_NAME_MAX, name);
    }
    return 0;
}

/* The rule's pools exist and fit its action: a move names another pool; a delete rule on
 * a pool that is not scratch must say which files (a marker or a glob), so no rule
 * empties a project's hot or cold area by a slip of the pen. */
static int check_rule_pools(const struct lifecycle_rule *r, const char *path,
                            const struct storage_policy *p, struct proto_error *err)
{
    const struct storage_pool *from = storage_pool_find(p, r->pool);
    char f[160];
    snprintf(f, sizeof(f), "%s.pool", path);
    if (!from)
        return proto_errorf(err, 400, NULL, f, "%s: unknown pool '%s'", f, r->pool);
    snprintf(f, sizeof(f), "%s.to", path);
    if (r->action == LC_MOVE) {
        if (!r->to[0])
            return proto_errorf(err, 400, NULL, f, "%s is required for a move", f);
        if (!storage_pool_find(p, r->to))
            return proto_errorf(err, 400, NULL, f, "%s: unknown pool '%s'", f, r->to);
        if (strcmp(r->to, r->pool) == 0)
            return proto_errorf(err, 400, NULL, f, "%s must be another pool than %s", f, r->pool);
        return 0;
    }
    if (r->to[0])
        return proto_errorf(err, 400, NULL, f, "%s: a delete rule moves nothing", f);
    if (from->cls != STORAGE_SCRATCH && !r->marker && !r->glob[0])
        return proto_errorf(err, 400, NULL, path,
                            "%s: a delete rule on %s pool %s needs marker: true or a glob "
                            "(only scratch pools are purged whole)",
                            path, storage_class_name(from->cls), r->pool);
    return 0;
}

static int parse_rule(const json_t *o, const char *path, const struct storage_policy *p,
                      struct lifecycle_rule *r, struct proto_error *err)
{
    static const char *const known[] = {"name",   "pool", "action", "to",       "after", "every",
                                        "marker", "glob", "rate",   "projects", NULL};
    char f[160];
    int rc;
    memset(r, 0, sizeof(*r));
    if (!json_is_object(o))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    if ((rc = proto_check_fields(o, path, known, err)) < 0 ||
        (rc = proto_member_text(o, "name", path, true, r->name, sizeof(r->name), err)) < 0 ||
        (rc = proto_member_text(o, "pool", path, true, r->pool, sizeof(r->pool), err)) < 0 ||
        (rc = get_action(o, path, &r->action, err)) < 0 ||
        (rc = proto_member_text(o, "to", path, false, r->to, sizeof(r->to), err)) < 0 ||
        (rc = proto_member_flag(o, "marker", path, &r->marker, err)) < 0 ||
        (rc = proto_member_text(o, "glob", path, false, r->glob, sizeof(r->glob), err)) < 0 ||
        (rc = parse_rule_projects(json_object_get(o, "projects"), path, r, err)) < 0)
        return rc;
    snprintf(f, sizeof(f), "%s.name", path);
    if (!str_is_name(r->name))
        return proto_errorf(err, 400, NULL, f, "%s must be a name (letters, digits, - _ .)", f);
    snprintf(f, sizeof(f), "%s.glob", path);
    if (strchr(r->glob, '/'))
        return proto_errorf(err, 400, NULL, f, "%s matches a file's name: it has no '/'", f);
    snprintf(f, sizeof(f), "%s.after", path);
    json_t *x = json_object_get(o, "after");
    if (!x)
        return proto_errorf(err, 400, NULL, f, "%s is required (\"30d\")", f);
    if ((rc = proto_get_duration(x, f, LC_MAX_AFTER_MS, &r->after_ms, err)) < 0)
        return rc;
    snprintf(f, sizeof(f), "%s.every", path);
    if ((x = json_object_get(o, "every"))) {
        if ((rc = proto_get_duration(x, f, LC_MAX_AFTER_MS, &r->every_ms, err)) < 0)
            return rc;
        if (r->every_ms < 1000)
            return proto_errorf(err, 400, NULL, f, "%s must be at least 1s", f);
    }
    snprintf(f, sizeof(f), "%s.rate", path);
    int64_t mb = 0;
    if ((x = json_object_get(o, "rate")) && (rc = proto_get_size_mb(x, f, &mb, err)) < 0)
        return rc;
    r->rate_bytes = mb * 1024 * 1024;
    return check_rule_pools(r, path, p, err);
}

int storage_rules_parse(const json_t *v, struct storage_policy *out, struct proto_error *err)
{
    if (!json_is_array(v) || json_array_size(v) > STORAGE_MAX_RULES)
        return proto_errorf(err, 400, NULL, "storage.lifecycle",
                            "storage.lifecycle must be a list of at most %d rules",
                            STORAGE_MAX_RULES);
    out->nrules = 0;
    for (size_t i = 0; i < json_array_size(v); i++) {
        char path[48];
        snprintf(path, sizeof(path), "storage.lifecycle[%zu]", i);
        struct lifecycle_rule *r = &out->rules[i];
        int rc = parse_rule(json_array_get(v, i), path, out, r, err);
        if (rc < 0)
            return rc;
        for (size_t k = 0; k < i; k++)
            if (strcmp(out->rules[k].name, r->name) == 0)
                return proto_errorf(err, 400, NULL, path, "duplicate rule '%s'", r->name);
        out->nrules = (int)i + 1;
    }
    return 0;
}

/* Whole seconds as a number (what a person wrote, mostly), else "Nms": read back exactly. */
static json_t *duration_json(int64_t ms)
{
    if (ms % 1000 == 0)
        return json_integer(ms / 1000);
    char text[32];
    snprintf(text, sizeof(text), "%lldms", (long long)ms);
    return json_string(text);
}

static json_t *rule_json(const struct lifecycle_rule *r)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:o}", "name", r->name, "pool", r->pool, "action",
                          lifecycle_action_name(r->action), "after", duration_json(r->after_ms));
    if (r->to[0])
        json_object_set_new(o, "to", json_string(r->to));
    if (r->every_ms)
        json_object_set_new(o, "every", duration_json(r->every_ms));
    if (r->marker)
        json_object_set_new(o, "marker", json_true());
    if (r->glob[0])
        json_object_set_new(o, "glob", json_string(r->glob));
    if (r->rate_bytes)
        json_object_set_new(o, "rate", json_integer(r->rate_bytes / (1024 * 1024)));
    if (r->nprojects) {
        json_t *ps = json_array();
        for (int i = 0; i < r->nprojects; i++)
            json_array_append_new(ps, json_string(r->projects[i]));
        json_object_set_new(o, "projects", ps);
    }
    return o;
}

json_t *storage_rules_json(const struct storage_policy *p)
{
    json_t *a = json_array();
    for (int i = 0; i < p->nrules; i++)
        json_array_append_new(a, rule_json(&p->rules[i]));
    return a;
}

const struct lifecycle_rule *lifecycle_rule_find(const struct storage_policy *p, const char *name)
{
    for (int i = 0; i < p->nrules; i++)
        if (strcmp(p->rules[i].name, name) == 0)
            return &p->rules[i];
    return NULL;
}

/* ---- a run --------------------------------------------------------------------------- */

json_t *lifecycle_run_json(const struct lifecycle_run *r)
{
    json_t *o = json_pack("{s:I,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:b,s:b}", "id", (json_int_t)r->id,
                          "rule", r->rule, "project", r->project, "action",
                          lifecycle_action_name(r->action), "from", r->from, "after_ms",
                          (json_int_t)r->after_ms, "now_ms", (json_int_t)r->now_ms, "rate_bytes",
                          (json_int_t)r->rate_bytes, "marker", r->marker, "dry_run", r->dry_run);
    if (r->to[0])
        json_object_set_new(o, "to", json_string(r->to));
    if (r->glob[0])
        json_object_set_new(o, "glob", json_string(r->glob));
    return o;
}

int lifecycle_run_parse(const json_t *v, const char *path, struct lifecycle_run *out,
                        struct proto_error *err)
{
    static const char *const known[] = {"id",      "rule",     "project", "action",     "from",
                                        "to",      "after_ms", "now_ms",  "rate_bytes", "marker",
                                        "dry_run", "glob",     NULL};
    char f[160];
    int rc;
    memset(out, 0, sizeof(*out));
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    snprintf(f, sizeof(f), "%s.id", path);
    if ((rc = proto_check_fields(v, path, known, err)) < 0 ||
        (rc = proto_get_int(json_object_get(v, "id"), f, 1, INT64_MAX, &out->id, err)) < 0 ||
        (rc = proto_member_text(v, "rule", path, true, out->rule, sizeof(out->rule), err)) < 0 ||
        (rc = proto_member_text(v, "project", path, true, out->project, sizeof(out->project),
                                err)) < 0 ||
        (rc = get_action(v, path, &out->action, err)) < 0 ||
        (rc = proto_member_text(v, "from", path, true, out->from, sizeof(out->from), err)) < 0 ||
        (rc = proto_member_text(v, "to", path, out->action == LC_MOVE, out->to, sizeof(out->to),
                                err)) < 0 ||
        (rc = get_count(v, "after_ms", path, LC_MAX_AFTER_MS, &out->after_ms, err)) < 0 ||
        (rc = get_count(v, "now_ms", path, INT64_MAX, &out->now_ms, err)) < 0 ||
        (rc = get_count(v, "rate_bytes", path, LC_MAX_BYTES, &out->rate_bytes, err)) < 0 ||
        (rc = proto_member_flag(v, "marker", path, &out->marker, err)) < 0 ||
        (rc = proto_member_flag(v, "dry_run", path, &out->dry_run, err)) < 0 ||
        (rc = proto_member_text(v, "glob", path, false, out->glob, sizeof(out->glob), err)) < 0)
        return rc;
    /* the agent walks these as root: no name that climbs out of its pool */
    snprintf(f, sizeof(f), "%s.project", path);
    if (!str_is_name(out->project) || strcmp(out->project, ".") == 0 ||
        strcmp(out->project, "..") == 0)
        return proto_errorf(err, 400, NULL, f, "%s must be a project's name", f);
    if (!abs_path_ok(out->from) || (out->to[0] && !abs_path_ok(out->to)))
        return proto_errorf(err, 400, NULL, path, "%s: pool paths must be absolute, no '..'", path);
    return 0;
}

/* ---- a result ------------------------------------------------------------------------ */

json_t *lifecycle_result_json(const struct lifecycle_result *r)
{
    json_t *o =
        json_pack("{s:I,s:s}", "id", (json_int_t)r->id, "state", r->done ? "done" : "running");
    if (!r->done)
        return o;
    json_object_set_new(o, "ok", json_boolean(r->ok));
    if (r->message[0])
        json_object_set_new(o, "message", json_string(r->message));
    if (r->age_basis[0])
        json_object_set_new(o, "age_basis", json_string(r->age_basis));
    json_t *list = json_array();
    for (size_t i = 0; i < r->nlist; i++) {
        const struct lifecycle_entry *e = &r->list[i];
        json_t *x = json_pack("{s:s,s:I,s:I}", "path", e->path, "bytes", (json_int_t)e->bytes,
                              "age_s", (json_int_t)e->age_s);
        if (e->error[0])
            json_object_set_new(x, "error", json_string(e->error));
        json_array_append_new(list, x);
    }
    json_t *counts = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "files", (json_int_t)r->files, "bytes",
                               (json_int_t)r->bytes, "freed_bytes", (json_int_t)r->freed_bytes,
                               "failed", (json_int_t)r->failed, "in_use", (json_int_t)r->in_use,
                               "unlisted", (json_int_t)r->unlisted);
    json_object_update(o, counts);
    json_decref(counts);
    if (r->dirs_removed)
        json_object_set_new(o, "dirs_removed", json_integer(r->dirs_removed));
    json_object_set_new(o, "list", list);
    return o;
}

static int parse_entry(const json_t *v, const char *path, struct lifecycle_entry *e,
                       struct proto_error *err)
{
    static const char *const known[] = {"path", "bytes", "age_s", "error", NULL};
    int rc;
    memset(e, 0, sizeof(*e));
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    if ((rc = proto_check_fields(v, path, known, err)) < 0 ||
        (rc = proto_member_text(v, "path", path, true, e->path, sizeof(e->path), err)) < 0 ||
        (rc = get_count(v, "bytes", path, LC_MAX_BYTES, &e->bytes, err)) < 0 ||
        (rc = get_count(v, "age_s", path, INT64_MAX / 1000, &e->age_s, err)) < 0 ||
        (rc = proto_member_text(v, "error", path, false, e->error, sizeof(e->error), err)) < 0)
        return rc;
    return 0;
}

static int parse_counts(const json_t *v, const char *path, struct lifecycle_result *r,
                        struct proto_error *err)
{
    int rc;
    if ((rc = get_count(v, "files", path, LC_MAX_BYTES, &r->files, err)) < 0 ||
        (rc = get_count(v, "bytes", path, LC_MAX_BYTES, &r->bytes, err)) < 0 ||
        (rc = get_count(v, "freed_bytes", path, LC_MAX_BYTES, &r->freed_bytes, err)) < 0 ||
        (rc = get_count(v, "failed", path, LC_MAX_BYTES, &r->failed, err)) < 0 ||
        (rc = get_count(v, "in_use", path, LC_MAX_BYTES, &r->in_use, err)) < 0 ||
        (rc = get_count(v, "unlisted", path, LC_MAX_BYTES, &r->unlisted, err)) < 0 ||
        (rc = get_count(v, "dirs_removed", path, LC_MAX_BYTES, &r->dirs_removed, err)) < 0)
        return rc;
    return 0;
}

int lifecycle_result_parse(const json_t *v, const char *path, struct lifecycle_result *out,
                           struct proto_error *err)
{
    static const char *const known[] = {"id",       "state", "ok",           "message", "age_basis",
                                        "files",    "bytes", "freed_bytes",  "failed",  "in_use",
                                        "unlisted", "list",  "dirs_removed", NULL};
    char f[160];
    int rc;
    memset(out, 0, sizeof(*out));
    if (!json_is_object(v))
        return proto_errorf(err, 400, NULL, path, "%s must be an object", path);
    snprintf(f, sizeof(f), "%s.id", path);
    if ((rc = proto_check_fields(v, path, known, err)) < 0 ||
        (rc = proto_get_int(json_object_get(v, "id"), f, 1, INT64_MAX, &out->id, err)) < 0)
        return rc;
    const char *state = json_string_value(json_object_get(v, "state"));
    snprintf(f, sizeof(f), "%s.state", path);
    if (!state || (strcmp(state, "done") != 0 && strcmp(state, "running") != 0))
        return proto_errorf(err, 400, NULL, f, "%s must be running or done", f);
    out->done = strcmp(state, "done") == 0;
    if ((rc = proto_member_flag(v, "ok", path, &out->ok, err)) < 0 ||
        (rc = proto_member_text(v, "message", path, false, out->message, sizeof(out->message),
                                err)) < 0 ||
        (rc = proto_member_text(v, "age_basis", path, false, out->age_basis, sizeof(out->age_basis),
                                err)) < 0 ||
        (rc = parse_counts(v, path, out, err)) < 0)
        return rc;
    json_t *list = json_object_get(v, "list");
    snprintf(f, sizeof(f), "%s.list", path);
    if (!list)
        return 0;
    if (!json_is_array(list) || json_array_size(list) > LC_LIST_MAX)
        return proto_errorf(err, 400, NULL, f, "%s must be a list of at most %d files", f,
                            LC_LIST_MAX);
    out->list = calloc(json_array_size(list) + 1, sizeof(*out->list));
    if (!out->list)
        return proto_errorf(err, 500, NULL, f, "out of memory");
    for (size_t i = 0; i < json_array_size(list); i++) {
        char ef[180];
        snprintf(ef, sizeof(ef), "%s[%zu]", f, i);
        if ((rc = parse_entry(json_array_get(list, i), ef, &out->list[i], err)) < 0) {
            lifecycle_result_release(out);
            return rc;
        }
        out->nlist = i + 1;
    }
    return 0;
}

void lifecycle_result_release(struct lifecycle_result *r)
{
    free(r->list);
    r->list = NULL;
    r->nlist = 0;
}

static int run_elem(const json_t *v, const char *path, void *elem, struct proto_error *err)
{
    return lifecycle_run_parse(v, path, elem, err);
}

int lifecycle_runs_parse(const json_t *v, struct lifecycle_run **out, size_t *n,
                         struct proto_error *err)
{
    void *list;
    int rc = proto_list_parse(v, "lifecycle", "runs", LC_MAX_RUNS, sizeof(**out), run_elem, NULL,
                              &list, n, err);
    *out = list;
    return rc;
}

static int result_elem(const json_t *v, const char *path, void *elem, struct proto_error *err)
{
    return lifecycle_result_parse(v, path, elem, err);
}

static void results_release(void *list, size_t n)
{
    lifecycle_results_free(list, n);
}

int lifecycle_results_parse(const json_t *v, struct lifecycle_result **out, size_t *n,
                            struct proto_error *err)
{
    void *list;
    int rc = proto_list_parse(v, "lifecycle", "runs", LC_MAX_RUNS, sizeof(**out), result_elem,
                              results_release, &list, n, err);
    *out = list;
    return rc;
}

void lifecycle_results_free(struct lifecycle_result *r, size_t n)
{
    for (size_t i = 0; r && i < n; i++)
        lifecycle_result_release(&r[i]);
    free(r);
}

void lifecycle_result_list(struct lifecycle_result *r, const char *path, int64_t bytes,
                           int64_t age_s, const char *error)
{
    if (r->nlist >= LC_LIST_MAX) {
        r->unlisted++;
        return;
    }
    struct lifecycle_entry *n = realloc(r->list, (r->nlist + 1) * sizeof(*r->list));
    if (!n) {
        r->unlisted++;
        return;
    }
    r->list = n;
    struct lifecycle_entry *e = &r->list[r->nlist++];
    memset(e, 0, sizeof(*e));
    str_copy(e->path, sizeof(e->path), path);
    e->bytes = bytes;
    e->age_s = age_s;
    str_copy(e->error, sizeof(e->error), error ? error : "");
}

/* ---- the pure rules ------------------------------------------------------------------ */

int64_t lifecycle_last_use_ms(const struct lifecycle_file *f)
{
    if (f->noatime)
        return f->mtime_ms;
    return f->atime_ms > f->mtime_ms ? f->atime_ms : f->mtime_ms;
}

bool lifecycle_file_due(const struct lifecycle_run *r, const struct lifecycle_file *f)
{
    if (strcmp(f->name, LC_MARKER) == 0)
        return false;
    if (r->marker && !f->marked)
        return false;
    if (r->glob[0] && fnmatch(r->glob, f->name, FNM_PERIOD) != 0)
        return false;
    return r->now_ms - lifecycle_last_use_ms(f) >= r->after_ms;
}

int64_t lifecycle_next_due_ms(const struct lifecycle_rule *rule, int64_t last_run_ms,
                              int64_t now_ms)
{
    if (rule->every_ms <= 0)
        return -1;
    if (last_run_ms <= 0)
        return now_ms;
    return last_run_ms + rule->every_ms;
}

bool lifecycle_rule_covers(const struct lifecycle_rule *rule, const char *project)
{
    if (rule->nprojects == 0)
        return true;
    for (int i = 0; i < rule->nprojects; i++)
        if (strcmp(rule->projects[i], project) == 0)
            return true;
    return false;
}
