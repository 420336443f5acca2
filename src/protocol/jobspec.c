/*
 * jobspec.c - the submit body of POST /v1/jobs (docs/api.md "Jobs"): parse, validate
 * every field (naming its JSON path on error), normalise to the stored form and load it
 * back. One handler per field in a table, so an unknown field is simply one that has
 * no handler.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/container.h"
#include "protocol/proto.h"
#include "protocol/storage.h"
#include "protocol/templates.h"
#include "util/parse.h"
#include "util/str.h"

typedef int (*field_fn)(const json_t *v, int64_t now, struct proto_jobspec *j,
                        struct proto_error *err);

static int copy_text(const json_t *v, const char *field, size_t max, bool allow_null, json_t *extra,
                     struct proto_error *err)
{
    if (allow_null && json_is_null(v)) {
        json_object_set_new(extra, field, json_null());
        return 0;
    }
    if (!json_is_string(v))
        return proto_errorf(err, 400, NULL, field, "%s must be a string", field);
    size_t n = json_string_length(v);
    if (n == 0 || n > max)
        return proto_errorf(err, 400, NULL, field, "%s must be 1 to %zu bytes", field, max);
    if (memchr(json_string_value(v), '\0', n))
        return proto_errorf(err, 400, NULL, field, "%s contains a NUL byte", field);
    json_object_set_new(extra, field, json_stringn(json_string_value(v), n));
    return 0;
}

static int f_name(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    if (!json_is_string(v))
        return proto_errorf(e, 400, NULL, "name", "name must be a string");
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n >= PROTO_JOB_NAME_MAX)
        return proto_errorf(e, 400, NULL, "name", "name must be 1 to %d bytes",
                            PROTO_JOB_NAME_MAX - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return proto_errorf(e, 400, NULL, "name", "name contains a control character");
    str_copy(j->name, sizeof(j->name), s);
    return 0;
}

static int f_project(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return proto_get_name(v, "project", j->project, e);
}

static int f_user(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return proto_get_name(v, "user", j->user, e);
}

static int f_tier(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return proto_get_name(v, "tier", j->tier, e);
}

static int f_class(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return proto_get_name(v, "class", j->class_name, e);
}

static int f_gpu_type(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return proto_get_name(v, "gpu_type", j->gpu_type, e);
}

static int f_command(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    if (json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return proto_errorf(e, 400, NULL, "command", "command must be an array of strings");
    size_t n = json_array_size(v);
    if (n == 0 || n > PROTO_MAX_ARGS)
        return proto_errorf(e, 400, NULL, "command", "command must have 1 to %d arguments",
                            PROTO_MAX_ARGS);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(v, i);
        char f[32];
        snprintf(f, sizeof(f), "command[%zu]", i);
        if (!json_is_string(a) || memchr(json_string_value(a), '\0', json_string_length(a))) {
            json_decref(arr);
            return proto_errorf(e, 400, NULL, f, "%s must be a string without NUL bytes", f);
        }
        if (i == 0 && json_string_length(a) == 0) {
            json_decref(arr);
            return proto_errorf(e, 400, NULL, f, "%s: empty program name", f);
        }
        json_array_append_new(arr, json_stringn(json_string_value(a), json_string_length(a)));
    }
    json_object_set_new(j->extra, "command", arr);
    return 0;
}

static int f_script(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    if (json_is_null(v))
        return 0;
    return copy_text(v, "script", PROTO_SCRIPT_MAX, false, j->extra, e);
}

/* A ".." component would let a path leave the directory it names (issue 11): refused in
 * the paths a job gives, whatever the agent would make of them. */
static int path_field(const json_t *v, const char *f, struct proto_jobspec *j,
                      struct proto_error *e)
{
    const char *s = json_string_value(v);
    for (const char *p = s; p && *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return proto_errorf(e, 400, NULL, f, "%s must not contain a '..' component", f);
        p += n + (p[n] == '/');
    }
    return copy_text(v, f, PROTO_PATH_MAX, true, j->extra, e);
}

static int f_workdir(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    if (json_is_string(v) && json_string_value(v)[0] != '/')
        return proto_errorf(e, 400, NULL, "workdir", "workdir must be an absolute path");
    return path_field(v, "workdir", j, e);
}

static int f_output(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return path_field(v, "output", j, e);
}

static int f_error(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return path_field(v, "error", j, e);
}

static int int_field(const json_t *v, const char *field, int min, int max, int *out,
                     struct proto_error *e)
{
    int64_t n;
    int rc = proto_get_int(v, field, min, max, &n, e);
    if (rc == 0)
        *out = (int)n;
    return rc;
}

static int f_gpus(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return int_field(v, "gpus", 0, PROTO_MAX_GPUS, &j->gpus, e);
}

static int f_cpus(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return int_field(v, "cpus", 1, PROTO_MAX_CPUS, &j->cpus, e);
}

static int f_nodes(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return int_field(v, "nodes", 1, PROTO_MAX_NODES, &j->nodes, e);
}

static int f_retries(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return int_field(v, "retries", 0, PROTO_MAX_RETRIES, &j->retries, e);
}

/* Slurm's --switches=N[@max-time]: `"switches": 1` or `"switches": "1@30m"`. */
static int f_switches(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    if (!json_is_string(v))
        return int_field(v, "switches", 1, PROTO_MAX_NODES, &j->switches, e);
    const char *s = json_string_value(v);
    const char *at = strchr(s, '@');
    char count[16];
    size_t n = at ? (size_t)(at - s) : strlen(s);
    if (n == 0 || n >= sizeof(count) || strspn(s, "0123456789") != n)
        return proto_errorf(e, 400, NULL, "switches",
                            "switches must be N or \"N@max-time\" (such as \"1@30m\")");
    memcpy(count, s, n);
    count[n] = '\0';
    json_t *c = json_integer(strtoll(count, NULL, 10));
    int rc = int_field(c, "switches", 1, PROTO_MAX_NODES, &j->switches, e);
    json_decref(c);
    if (rc < 0 || !at)
        return rc;
    json_t *w = json_string(at + 1);
    rc = proto_get_duration(w, "switches", PROTO_MAX_DURATION_MS, &j->switches_wait_ms, e);
    json_decref(w);
    return rc;
}

static int f_mem(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return proto_get_size_mb(v, "mem", &j->mem_mb, e);
}

static int f_time_limit(const json_t *v, int64_t now, struct proto_jobspec *j,
                        struct proto_error *e)
{
    return proto_get_duration(v, "time_limit", PROTO_MAX_DURATION_MS, &j->time_limit_ms, e);
}

static int f_grace(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return proto_get_duration(v, "grace", (int64_t)24 * 3600 * 1000, &j->grace_ms, e);
}

static int f_begin(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    if (json_is_integer(v)) {
        json_int_t t = json_integer_value(v);
        /* an absolute time in ms; anything before 2001 is surely a mistake */
        if (t < 1000000000000LL || t > now + PROTO_MAX_DURATION_MS)
            return proto_errorf(
                e, 400, NULL, "begin",
                "begin must be a duration string or a time in ms since the epoch within a year");
        j->begin_ms = t;
        return 0;
    }
    int64_t d;
    int rc = proto_get_duration(v, "begin", PROTO_MAX_DURATION_MS, &d, e);
    if (rc == 0)
        j->begin_ms = d > 0 ? now + d : 0;
    return rc;
}

static int f_signal(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    int sig;
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        if (n < 1 || n > 64)
            return proto_errorf(e, 400, NULL, "signal", "signal must be between 1 and 64");
        sig = (int)n;
    } else if (json_is_string(v)) {
        if (parse_signal(json_string_value(v), &sig) < 0)
            return proto_errorf(e, 400, NULL, "signal", "unknown signal '%.32s'",
                                json_string_value(v));
    } else {
        return proto_errorf(e, 400, NULL, "signal", "signal must be a name or a number");
    }
    if (sig == 9 || sig == 19)
        return proto_errorf(e, 400, NULL, "signal",
                            "signal %d cannot be caught: use a catchable checkpoint signal", sig);
    j->signal = sig;
    return 0;
}

static int f_checkpoint(const json_t *v, int64_t now, struct proto_jobspec *j,
                        struct proto_error *e)
{
    return proto_get_bool(v, "checkpoint", &j->checkpoint, e);
}

static int f_idempotent(const json_t *v, int64_t now, struct proto_jobspec *j,
                        struct proto_error *e)
{
    return proto_get_bool(v, "idempotent", &j->idempotent, e);
}

static int f_requeue(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return proto_get_bool(v, "requeue", &j->requeue, e);
}

static int f_hold(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return proto_get_bool(v, "hold", &j->hold, e);
}

/* "tty": the job runs on a terminal of its own and waits for a person to attach
 * (docket shell, docs/interactive.md); kept only when true. */
static int f_tty(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    bool on = false;
    int rc = proto_get_bool(v, "tty", &on, e);
    if (rc == 0 && on)
        json_object_set_new(j->extra, "tty", json_true());
    return rc;
}

static bool env_name_ok(const char *k)
{
    if (!k[0] || (k[0] >= '0' && k[0] <= '9'))
        return false;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return false;
    return true;
}

/* A map of strings (env, labels) copied into extra[field]. */
static int string_map(const json_t *v, const char *field, size_t max_entries, bool env,
                      json_t *extra, struct proto_error *e)
{
    if (!json_is_object(v))
        return proto_errorf(e, 400, NULL, field, "%s must be an object of strings", field);
    if (json_object_size(v) > max_entries)
        return proto_errorf(e, 400, NULL, field, "%s has more than %zu entries", field,
                            max_entries);
    json_t *out = json_object();
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)v, k, val) {
        char f[160];
        snprintf(f, sizeof(f), "%s.%.128s", field, k);
        bool key_ok = env ? (env_name_ok(k) || proto_exported_function_name(k)) && strlen(k) < 256
                          : str_is_name(k);
        if (!key_ok) {
            json_decref(out);
            return proto_errorf(e, 400, NULL, f, "%s: invalid %s name '%.64s'", f,
                                env ? "variable" : "label", k);
        }
        if (!json_is_string(val) || memchr(json_string_value(val), '\0', json_string_length(val)) ||
            json_string_length(val) > (env ? 65536u : 256u)) {
            json_decref(out);
            return proto_errorf(e, 400, NULL, f, "%s must be a string without NUL bytes%s", f,
                                env ? " (at most 64 KiB)" : " (at most 256 bytes)");
        }
        json_object_set_new(out, k, json_stringn(json_string_value(val), json_string_length(val)));
    }
    json_object_set_new(extra, field, out);
    return 0;
}

static int f_env(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return string_map(v, "env", PROTO_MAX_ENV, true, j->extra, e);
}

bool proto_secret_name_ok(const char *name)
{
    return name && env_name_ok(name) && strlen(name) <= PROTO_SECRET_NAME_MAX;
}

/* "secrets": names of the project's secrets, each becoming the variable of its name. */
static int f_secrets(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    if (!json_is_array(v))
        return proto_errorf(e, 400, NULL, "secrets", "secrets must be an array of names");
    if (json_array_size(v) > PROTO_MAX_SECRETS)
        return proto_errorf(e, 400, NULL, "secrets", "secrets has more than %d names",
                            PROTO_MAX_SECRETS);
    json_t *out = json_array();
    size_t i, k;
    json_t *s, *t;
    json_array_foreach(v, i, s) {
        char f[32];
        snprintf(f, sizeof(f), "secrets[%zu]", i);
        const char *name = json_string_value(s);
        int rc = 0;
        if (!proto_secret_name_ok(name))
            rc = proto_errorf(e, 400, NULL, f,
                              "%s: a secret name is a variable name (letters, digits, '_')", f);
        json_array_foreach(out, k, t) {
            if (rc == 0 && strcmp(json_string_value(t), name) == 0)
                rc = proto_errorf(e, 400, NULL, f, "%s: '%s' is named twice", f, name);
        }
        if (rc < 0) {
            json_decref(out);
            return rc;
        }
        json_array_append_new(out, json_string(name));
    }
    json_object_set_new(j->extra, "secrets", out);
    return 0;
}

/* "storage": the pools the job needs (protocol/storage.h); docketd checks they exist and
 * places the job only on nodes that have them. */
static int f_storage(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    (void)now;
    int rc = storage_job_pools_check(v, e);
    if (rc == 0)
        json_object_set_new(j->extra, "storage", json_deep_copy(v));
    return rc;
}

static int f_labels(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return string_map(v, "labels", PROTO_MAX_LABELS, false, j->extra, e);
}

static int f_selectors(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    if (!json_is_object(v))
        return proto_errorf(e, 400, NULL, "selectors", "selectors must be an object of strings");
    if (json_object_size(v) > PROTO_MAX_SELECTORS)
        return proto_errorf(e, 400, NULL, "selectors", "selectors has more than %d entries",
                            PROTO_MAX_SELECTORS);
    const char *k;
    json_t *val;
    j->nselectors = 0;
    json_object_foreach((json_t *)v, k, val) {
        char f[160];
        snprintf(f, sizeof(f), "selectors.%.128s", k);
        if (!str_is_name(k))
            return proto_errorf(e, 400, NULL, f, "%s: invalid label name '%.64s'", f, k);
        if (!json_is_string(val))
            return proto_errorf(e, 400, NULL, f, "%s must be a string", f);
        const char *s = json_string_value(val);
        struct proto_selector *sel = &j->selectors[j->nselectors];
        sel->negate = s[0] == '!';
        if (sel->negate)
            s++;
        if (!str_is_name(s))
            return proto_errorf(e, 400, NULL, f, "%s: invalid label value '%.64s'", f, s);
        str_copy(sel->key, sizeof(sel->key), k);
        str_copy(sel->value, sizeof(sel->value), s);
        j->nselectors++;
    }
    return 0;
}

static int f_deps(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    static const char *const known[] = {"type", "job", "array", NULL};
    if (!json_is_array(v))
        return proto_errorf(e, 400, NULL, "deps", "deps must be an array");
    if (json_array_size(v) > PROTO_MAX_DEPS)
        return proto_errorf(e, 400, NULL, "deps", "deps has more than %d entries", PROTO_MAX_DEPS);
    j->ndeps = 0;
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *d = json_array_get(v, i);
        char path[32], f[48];
        snprintf(path, sizeof(path), "deps[%zu]", i);
        if (!json_is_object(d))
            return proto_errorf(e, 400, NULL, path, "%s must be an object", path);
        int rc = proto_check_fields(d, path, known, e);
        if (rc < 0)
            return rc;
        json_t *t = json_object_get(d, "type");
        snprintf(f, sizeof(f), "%s.type", path);
        const char *ts = json_is_string(t) ? json_string_value(t) : "";
        if (strcmp(ts, "afterok") != 0 && strcmp(ts, "afterany") != 0 &&
            strcmp(ts, "afternotok") != 0 && strcmp(ts, "after") != 0)
            return proto_errorf(e, 400, NULL, f,
                                "%s must be \"afterok\", \"afterany\", \"afternotok\" or "
                                "\"after\"",
                                f);
        snprintf(f, sizeof(f), "%s.job", path);
        int64_t id;
        json_t *jid = json_object_get(d, "job");
        if (!jid)
            return proto_errorf(e, 400, NULL, f, "%s is required", f);
        rc = proto_get_int(jid, f, 1, INT64_MAX, &id, e);
        if (rc < 0)
            return rc;
        json_t *arr = json_object_get(d, "array");
        snprintf(f, sizeof(f), "%s.array", path);
        if (arr && !json_is_boolean(arr))
            return proto_errorf(e, 400, NULL, f, "%s must be true or false", f);
        str_copy(j->deps[j->ndeps].type, sizeof(j->deps[0].type), ts);
        j->deps[j->ndeps].job = (uint64_t)id;
        j->deps[j->ndeps].array = json_is_true(arr);
        j->ndeps++;
    }
    return 0;
}

static int f_deps_any(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    if (!json_is_boolean(v))
        return proto_errorf(e, 400, NULL, "deps_any", "deps_any must be true or false");
    j->deps_any = json_is_true(v);
    return 0;
}

static int f_array(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    if (!json_is_string(v) || json_string_length(v) >= sizeof(j->array))
        return proto_errorf(e, 400, NULL, "array", "array must be a string like \"0-99%%8\"");
    int32_t *idx = NULL;
    size_t n;
    int limit;
    int rc = proto_array_expand(json_string_value(v), &idx, &n, &limit, e);
    free(idx);
    if (rc < 0)
        return rc;
    str_copy(j->array, sizeof(j->array), json_string_value(v));
    return 0;
}

/* "slurm.args": the batch script's arguments (sbatch job.sh ARG...): at most
 * PROTO_MAX_ARGS strings without NUL bytes, PROTO_PATH_MAX bytes each. */
static int slurm_args(const json_t *v, json_t *out, struct proto_error *e)
{
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v) || json_array_size(v) > PROTO_MAX_ARGS)
        return proto_errorf(e, 400, NULL, "slurm.args",
                            "slurm.args must be an array of at most %d strings", PROTO_MAX_ARGS);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *a = json_array_get(v, i);
        if (!json_is_string(a) || json_string_length(a) > PROTO_PATH_MAX ||
            strlen(json_string_value(a)) != json_string_length(a))
            return proto_errorf(e, 400, NULL, "slurm.args",
                                "slurm.args[%zu] must be a string of at most %d bytes", i,
                                PROTO_PATH_MAX);
    }
    if (json_array_size(v))
        json_object_set_new(out, "args", json_deep_copy(v));
    return 0;
}

/* "slurm": how a job read from sbatch options runs (docs/api.md): its tasks, the warning
 * signal's timing, the submission directory. Its presence makes the job Slurm-style:
 * the batch script runs on the first node only (docs/slurm.md). */
static int f_slurm(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    static const char *const known[] = {
        "ntasks",       "ntasks_per_node", "cpus_per_task", "gpus_per_task", "signal_before",
        "signal_batch", "submit_dir",      "signal",        "args",          NULL};
    static const struct {
        const char *key;
        int64_t min, max;
    } ints[] = {{"ntasks", 1, 100000},        {"ntasks_per_node", 1, 100000},
                {"cpus_per_task", 1, 100000}, {"gpus_per_task", 0, PROTO_MAX_GPUS},
                {"signal_before", 0, 65535},  {"signal", 1, 64}};
    if (json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return proto_errorf(e, 400, NULL, "slurm", "slurm must be an object");
    int rc = proto_check_fields(v, "slurm", known, e);
    if (rc < 0)
        return rc;
    json_t *out = json_object();
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        json_t *x = json_object_get(v, ints[i].key);
        char f[48];
        int64_t n;
        snprintf(f, sizeof(f), "slurm.%s", ints[i].key);
        if (!x)
            continue;
        if ((rc = proto_get_int(x, f, ints[i].min, ints[i].max, &n, e)) < 0) {
            json_decref(out);
            return rc;
        }
        json_object_set_new(out, ints[i].key, json_integer(n));
    }
    json_t *b = json_object_get(v, "signal_batch");
    if (b && !json_is_boolean(b)) {
        json_decref(out);
        return proto_errorf(e, 400, NULL, "slurm.signal_batch",
                            "slurm.signal_batch must be a boolean");
    }
    if (b)
        json_object_set(out, "signal_batch", b);
    json_t *d = json_object_get(v, "submit_dir");
    if (d && (!json_is_string(d) || json_string_value(d)[0] != '/' ||
              json_string_length(d) > PROTO_PATH_MAX ||
              memchr(json_string_value(d), '\0', json_string_length(d)))) {
        json_decref(out);
        return proto_errorf(e, 400, NULL, "slurm.submit_dir",
                            "slurm.submit_dir must be an absolute path of at most %d bytes",
                            PROTO_PATH_MAX);
    }
    if (d)
        json_object_set_new(out, "submit_dir",
                            json_stringn(json_string_value(d), json_string_length(d)));
    if ((rc = slurm_args(json_object_get(v, "args"), out, e)) < 0) {
        json_decref(out);
        return rc;
    }
    json_object_set_new(j->extra, "slurm", out);
    return 0;
}

/* "template": NAME or NAME@VERSION (docs/environments.md), kept as given; docketd
 * resolves it at submit and stores the exact version. */
static int f_template(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    char name[PROTO_NAME_MAX];
    int version;
    if (!json_is_string(v) || json_string_length(v) >= PROTO_TEMPLATE_REF_MAX ||
        strlen(json_string_value(v)) != json_string_length(v))
        return proto_errorf(e, 400, NULL, "template",
                            "template must be a string NAME or NAME@VERSION");
    int rc = proto_template_ref_parse(json_string_value(v), "template", name, &version, e);
    if (rc == 0)
        json_object_set_new(j->extra, "template", json_string(json_string_value(v)));
    return rc;
}

/* "image": the container the job runs in (docs/environments.md "Containers"), kept as
 * given; docketd resolves it with the template's at submit into "container". */
static int f_image(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    struct proto_image_ref ref;
    if (json_is_null(v))
        return 0;
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return proto_errorf(e, 400, NULL, "image", "image must be a string");
    int rc = proto_image_ref_parse(json_string_value(v), "image", &ref, e);
    if (rc == 0)
        json_object_set_new(j->extra, "image", json_string(json_string_value(v)));
    return rc;
}

/* "registry_auth": the project secret holding the registry's credentials for a
 * docker:// image (a name only; its value goes to the node at the start, never stored). */
static int f_registry_auth(const json_t *v, int64_t now, struct proto_jobspec *j,
                           struct proto_error *e)
{
    if (json_is_null(v))
        return 0;
    if (!json_is_string(v) || !proto_secret_name_ok(json_string_value(v)))
        return proto_errorf(e, 400, NULL, "registry_auth",
                            "registry_auth must name a secret of the job's project (a variable "
                            "name)");
    json_object_set_new(j->extra, "registry_auth", json_string(json_string_value(v)));
    return 0;
}

/* "mounts": ["SRC:DST[:ro]", ...] into the job's container, normalised. */
static int f_mounts(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    json_t *out = json_array();
    int rc = proto_mounts_parse(v, "mounts", out, e);
    if (rc == 0)
        json_object_set_new(j->extra, "mounts", out);
    else
        json_decref(out);
    return rc;
}

/* "container_workdir": the working directory inside the container (Pyxis's
 * --container-workdir); the job's workdir otherwise. */
static int f_container_workdir(const json_t *v, int64_t now, struct proto_jobspec *j,
                               struct proto_error *e)
{
    if (json_is_null(v))
        return 0;
    if (!json_is_string(v) || !proto_container_path_ok(json_string_value(v)))
        return proto_errorf(e, 400, NULL, "container_workdir",
                            "container_workdir must be an absolute path without '..'");
    json_object_set_new(j->extra, "container_workdir", json_string(json_string_value(v)));
    return 0;
}

/* Slurm's --constraint: its characters here, its grammar in the core (core/constraint.c),
 * which refuses what it cannot read or place when the job is submitted. */
static int f_constraint(const json_t *v, int64_t now, struct proto_jobspec *j,
                        struct proto_error *e)
{
    if (!json_is_string(v))
        return proto_errorf(e, 400, NULL, "constraint", "constraint must be a string");
    const char *s = json_string_value(v);
    size_t len = strlen(s);
    if (len >= sizeof(j->constraint))
        return proto_errorf(e, 400, NULL, "constraint", "constraint is longer than %d characters",
                            (int)sizeof(j->constraint) - 1);
    size_t ok = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                          "_-.:+/&|()[]*");
    if (ok != len)
        return proto_errorf(e, 400, NULL, "constraint",
                            "constraint: '%c' at character %zu is not in Slurm's grammar "
                            "(features, &, |, [], (), *N)",
                            s[ok], ok + 1);
    str_copy(j->constraint, sizeof(j->constraint), s);
    return 0;
}

static int f_partition(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    return proto_get_name(v, "partition", j->partition, e);
}

/* Slurm's --comment (scontrol update Comment=): a note on the job, read by no one but
 * people; at most 1,023 bytes without control characters. */
static int f_comment(const json_t *v, int64_t now, struct proto_jobspec *j, struct proto_error *e)
{
    if (!json_is_string(v) || json_string_length(v) > 1023)
        return proto_errorf(e, 400, NULL, "comment",
                            "comment must be a string of at most 1023 bytes");
    const char *s = json_string_value(v);
    for (size_t i = 0; i < json_string_length(v); i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return proto_errorf(e, 400, NULL, "comment", "comment contains a control character");
    json_object_set(j->extra, "comment", (json_t *)v);
    return 0;
}

static const struct {
    const char *name;
    field_fn fn;
} fields[] = {
    {"name", f_name},
    {"project", f_project},
    {"user", f_user},
    {"tier", f_tier},
    {"class", f_class},
    {"command", f_command},
    {"script", f_script},
    {"gpus", f_gpus},
    {"gpu_type", f_gpu_type},
    {"cpus", f_cpus},
    {"mem", f_mem},
    {"nodes", f_nodes},
    {"time_limit", f_time_limit},
    {"workdir", f_workdir},
    {"output", f_output},
    {"error", f_error},
    {"env", f_env},
    {"secrets", f_secrets},
    {"labels", f_labels},
    {"selectors", f_selectors},
    {"constraint", f_constraint},
    {"partition", f_partition},
    {"deps", f_deps},
    {"deps_any", f_deps_any},
    {"array", f_array},
    {"signal", f_signal},
    {"grace", f_grace},
    {"checkpoint", f_checkpoint},
    {"retries", f_retries},
    {"switches", f_switches},
    {"idempotent", f_idempotent},
    {"requeue", f_requeue},
    {"hold", f_hold},
    {"begin", f_begin},
    {"slurm", f_slurm},
    {"tty", f_tty},
    {"template", f_template},
    {"storage", f_storage},
    {"image", f_image},
    {"mounts", f_mounts},
    {"container_workdir", f_container_workdir},
    {"comment", f_comment},
    {"registry_auth", f_registry_auth},
};

void proto_jobspec_init(struct proto_jobspec *j)
{
    memset(j, 0, sizeof(*j));
    j->cpus = 1;
    j->nodes = 1;
    j->grace_ms = -1;
    j->requeue = true;
    j->extra = json_object();
}

void proto_jobspec_release(struct proto_jobspec *j)
{
    json_decref(j->extra);
    j->extra = NULL;
}

static void fill_extra_defaults(json_t *x)
{
    static const char *const keys[] = {"command", "script", "workdir",
                                       "output",  "error",  "template"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!json_object_get(x, keys[i]))
            json_object_set_new(x, keys[i], json_null());
    if (!json_object_get(x, "env"))
        json_object_set_new(x, "env", json_object());
    if (!json_object_get(x, "labels"))
        json_object_set_new(x, "labels", json_object());
    if (!json_object_get(x, "secrets"))
        json_object_set_new(x, "secrets", json_array());
}

int proto_jobspec_parse(const json_t *body, int64_t now_ms, struct proto_jobspec *out,
                        struct proto_error *err)
{
    proto_jobspec_init(out);
    if (!json_is_object(body)) {
        proto_jobspec_release(out);
        return proto_errorf(err, 400, NULL, NULL, "the job spec must be a JSON object");
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v) {
        field_fn fn = NULL;
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
            if (strcmp(fields[i].name, key) == 0)
                fn = fields[i].fn;
        int rc = fn ? fn(v, now_ms, out, err)
                    : proto_errorf(err, 400, NULL, key, "unknown field '%.64s'", key);
        if (rc < 0) {
            proto_jobspec_release(out);
            return rc;
        }
    }
    bool has_cmd = json_object_get(out->extra, "command") != NULL;
    bool has_script = json_object_get(out->extra, "script") != NULL;
    if (has_cmd == has_script) {
        proto_jobspec_release(out);
        return proto_errorf(err, 400, NULL, has_cmd ? "script" : "command",
                            "exactly one of command or script is required");
    }
    if (out->gpus == 0 && out->gpu_type[0]) {
        proto_jobspec_release(out);
        return proto_errorf(err, 400, NULL, "gpu_type", "gpu_type given without gpus");
    }
    if (!out->name[0])
        str_copy(out->name, sizeof(out->name), "job");
    fill_extra_defaults(out->extra);
    return 0;
}

int proto_jobspec_parse_text(const char *text, size_t len, int64_t now_ms,
                             struct proto_jobspec *out, struct proto_error *err)
{
    json_error_t je;
    proto_jobspec_init(out);
    json_t *body = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!body) {
        proto_jobspec_release(out);
        return proto_errorf(err, 400, NULL, NULL, "malformed json: %s (line %d)", je.text, je.line);
    }
    proto_jobspec_release(out);
    int rc = proto_jobspec_parse(body, now_ms, out, err);
    json_decref(body);
    return rc;
}

int proto_array_expand(const char *expr, int32_t **indices, size_t *count, int *limit,
                       struct proto_error *err)
{
    enum { PARSE_MAX = PROTO_MAX_ARRAY + 1 }; /* one past: "at most" names the bound */
    int32_t *idx = malloc(sizeof(int32_t) * PARSE_MAX);
    if (!idx)
        return proto_errorf(err, 500, NULL, "array", "out of memory");
    size_t n = 0;
    int lim = 0;
    if (parse_array_spec(expr, idx, PARSE_MAX, &n, &lim) < 0 || n == 0) {
        free(idx);
        return proto_errorf(err, 400, NULL, "array",
                            "invalid array '%.40s' (e.g. \"0-99\", \"0-99%%8\", \"1,3,5-9\")",
                            expr);
    }
    if (n > PROTO_MAX_ARRAY) {
        free(idx);
        return proto_errorf(err, 400, NULL, "array", "array has %zu tasks, at most %d", n,
                            PROTO_MAX_ARRAY);
    }
    *indices = idx;
    *count = n;
    *limit = lim;
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* The stored form                                                                       */

json_t *proto_jobspec_to_json(const struct proto_jobspec *j)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(j->name));
    json_object_set_new(o, "project", json_string(j->project));
    json_object_set_new(o, "user", json_string(j->user));
    json_object_set_new(o, "tier", json_string(j->tier));
    json_object_set_new(o, "class", json_string(j->class_name));
    json_object_set_new(o, "gpu_type", json_string(j->gpu_type));
    json_object_set_new(o, "gpus", json_integer(j->gpus));
    json_object_set_new(o, "cpus", json_integer(j->cpus));
    json_object_set_new(o, "nodes", json_integer(j->nodes));
    json_object_set_new(o, "mem_mb", json_integer(j->mem_mb));
    json_object_set_new(o, "time_limit_ms", json_integer(j->time_limit_ms));
    json_object_set_new(o, "begin_ms", json_integer(j->begin_ms));
    json_object_set_new(o, "signal", json_integer(j->signal));
    json_object_set_new(o, "grace_ms", json_integer(j->grace_ms));
    json_object_set_new(o, "checkpoint", json_boolean(j->checkpoint));
    json_object_set_new(o, "idempotent", json_boolean(j->idempotent));
    json_object_set_new(o, "requeue", json_boolean(j->requeue));
    json_object_set_new(o, "hold", json_boolean(j->hold));
    json_object_set_new(o, "retries", json_integer(j->retries));
    json_object_set_new(o, "array", json_string(j->array));
    if (j->switches) { /* only when asked: older stored specs read the same */
        json_object_set_new(o, "switches", json_integer(j->switches));
        json_object_set_new(o, "switches_wait_ms", json_integer(j->switches_wait_ms));
    }
    json_t *deps = json_array();
    for (int i = 0; i < j->ndeps; i++) {
        json_t *d =
            json_pack("{s:s,s:I}", "type", j->deps[i].type, "job", (json_int_t)j->deps[i].job);
        if (j->deps[i].array) /* only when set: older stored specs read the same */
            json_object_set_new(d, "array", json_true());
        json_array_append_new(deps, d);
    }
    json_object_set_new(o, "deps", deps);
    if (j->deps_any) /* only when asked: older stored specs read the same */
        json_object_set_new(o, "deps_any", json_true());
    json_t *sel = json_object();
    for (int i = 0; i < j->nselectors; i++) {
        char val[PROTO_NAME_MAX + 2];
        snprintf(val, sizeof(val), "%s%s", j->selectors[i].negate ? "!" : "",
                 j->selectors[i].value);
        json_object_set_new(sel, j->selectors[i].key, json_string(val));
    }
    json_object_set_new(o, "selectors", sel);
    if (j->constraint[0])
        json_object_set_new(o, "constraint", json_string(j->constraint));
    if (j->partition[0])
        json_object_set_new(o, "partition", json_string(j->partition));
    json_object_update(o, j->extra);
    return o;
}

static int load_name(const json_t *o, const char *k, char *out, size_t len, struct proto_error *err)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_string(v) || str_copy(out, len, json_string_value(v)) < 0)
        return proto_errorf(err, 500, NULL, k, "stored spec: bad %s", k);
    return 0;
}

static int load_int(const json_t *o, const char *k, int64_t *out, struct proto_error *err)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v))
        return proto_errorf(err, 500, NULL, k, "stored spec: bad %s", k);
    *out = json_integer_value(v);
    return 0;
}

int proto_jobspec_switches(const json_t *s, int *switches, int64_t *wait_ms)
{
    json_t *n = json_object_get(s, "switches"), *w = json_object_get(s, "switches_wait_ms");
    *switches = 0;
    *wait_ms = 0;
    if (!n)
        return 0;
    if (!json_is_integer(n) || json_integer_value(n) < 1 ||
        json_integer_value(n) > PROTO_MAX_NODES || (w && !json_is_integer(w)) ||
        (w && (json_integer_value(w) < 0 || json_integer_value(w) > PROTO_MAX_DURATION_MS)))
        return -EINVAL;
    *switches = (int)json_integer_value(n);
    *wait_ms = w ? json_integer_value(w) : 0;
    return 0;
}

/* The stored spec's optional switches (written only when a job asked for them). */
static int load_switches(const json_t *s, struct proto_jobspec *j, struct proto_error *err)
{
    if (proto_jobspec_switches(s, &j->switches, &j->switches_wait_ms) < 0)
        return proto_errorf(err, 500, NULL, "switches", "stored spec: bad switches");
    return 0;
}

static int load_scalars(const json_t *s, struct proto_jobspec *j, struct proto_error *err)
{
    int64_t gpus = 0, cpus = 0, nodes = 0, sig = 0, retries = 0;
    int rc = 0;
    rc |= load_name(s, "name", j->name, sizeof(j->name), err);
    rc |= load_name(s, "project", j->project, sizeof(j->project), err);
    rc |= load_name(s, "user", j->user, sizeof(j->user), err);
    rc |= load_name(s, "tier", j->tier, sizeof(j->tier), err);
    rc |= load_name(s, "class", j->class_name, sizeof(j->class_name), err);
    rc |= load_name(s, "gpu_type", j->gpu_type, sizeof(j->gpu_type), err);
    rc |= load_name(s, "array", j->array, sizeof(j->array), err);
    rc |= load_int(s, "gpus", &gpus, err);
    rc |= load_int(s, "cpus", &cpus, err);
    rc |= load_int(s, "nodes", &nodes, err);
    rc |= load_int(s, "mem_mb", &j->mem_mb, err);
    rc |= load_int(s, "time_limit_ms", &j->time_limit_ms, err);
    rc |= load_int(s, "begin_ms", &j->begin_ms, err);
    rc |= load_int(s, "signal", &sig, err);
    rc |= load_int(s, "grace_ms", &j->grace_ms, err);
    rc |= load_int(s, "retries", &retries, err);
    if (rc)
        return -EINVAL;
    if (gpus < 0 || gpus > PROTO_MAX_GPUS || cpus < 1 || cpus > PROTO_MAX_CPUS || nodes < 1 ||
        nodes > PROTO_MAX_NODES || sig < 0 || sig > 64 || retries < 0 ||
        retries > PROTO_MAX_RETRIES)
        return proto_errorf(err, 500, NULL, NULL, "stored spec: value out of range");
    j->gpus = (int)gpus;
    j->cpus = (int)cpus;
    j->nodes = (int)nodes;
    j->signal = (int)sig;
    j->retries = (int)retries;
    j->checkpoint = json_is_true(json_object_get(s, "checkpoint"));
    j->idempotent = json_is_true(json_object_get(s, "idempotent"));
    j->requeue = json_is_true(json_object_get(s, "requeue"));
    j->hold = json_is_true(json_object_get(s, "hold"));
    j->deps_any = json_is_true(json_object_get(s, "deps_any"));
    return load_switches(s, j, err);
}

int proto_jobspec_load(const json_t *stored, struct proto_jobspec *out, struct proto_error *err)
{
    proto_jobspec_init(out);
    if (!json_is_object(stored) || load_scalars(stored, out, err) < 0) {
        proto_jobspec_release(out);
        return proto_errorf(err, 500, NULL, NULL, "stored spec is damaged");
    }
    int rc = 0;
    json_t *deps = json_object_get(stored, "deps");
    json_t *sel = json_object_get(stored, "selectors");
    if (deps && (rc = f_deps(deps, 0, out, err)) < 0)
        goto fail;
    if (sel && (rc = f_selectors(sel, 0, out, err)) < 0)
        goto fail;
    json_t *constraint = json_object_get(stored, "constraint");
    if (constraint && (rc = f_constraint(constraint, 0, out, err)) < 0)
        goto fail;
    json_t *partition = json_object_get(stored, "partition");
    if (partition && (rc = f_partition(partition, 0, out, err)) < 0)
        goto fail;
    static const char *const keys[] = {"command", "script", "workdir", "output",
                                       "error",   "env",    "labels"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(stored, keys[i]);
        json_object_set(out->extra, keys[i], v ? v : json_null());
    }
    json_t *sec = json_object_get(stored, "secrets"); /* absent in specs stored before */
    json_object_set_new(out->extra, "secrets", json_is_array(sec) ? json_copy(sec) : json_array());
    json_t *slurm = json_object_get(stored, "slurm");
    if (json_is_object(slurm))
        json_object_set(out->extra, "slurm", slurm);
    json_t *comment = json_object_get(stored, "comment");
    if (json_is_string(comment))
        json_object_set(out->extra, "comment", comment);
    if (json_is_true(json_object_get(stored, "tty")))
        json_object_set_new(out->extra, "tty", json_true());
    /* the template resolved at submit and what it gave (absent in specs stored before) */
    json_t *tpl = json_object_get(stored, "template");
    json_t *envt = json_object_get(stored, "environment");
    json_object_set_new(out->extra, "template", json_is_string(tpl) ? json_copy(tpl) : json_null());
    if (json_is_object(envt))
        json_object_set(out->extra, "environment", envt);
    json_t *storage = json_object_get(stored, "storage");
    if (json_is_array(storage))
        json_object_set(out->extra, "storage", storage);
    /* the container as given and as resolved at submit (absent in specs stored before) */
    static const char *const container[] = {"image", "mounts", "container_workdir", "container",
                                            "registry_auth"};
    for (size_t i = 0; i < sizeof(container) / sizeof(container[0]); i++) {
        json_t *v = json_object_get(stored, container[i]);
        if (v && !json_is_null(v))
            json_object_set(out->extra, container[i], v);
    }
    return 0;
fail:
    proto_jobspec_release(out);
    return rc;
}

static bool field_known(const char *key)
{
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        if (strcmp(fields[i].name, key) == 0)
            return true;
    return false;
}

int proto_jobspec_patch(const json_t *patch, int64_t now_ms, struct proto_jobspec *j,
                        struct proto_error *err)
{
    static const char *const changeable[] = {"name",       "time_limit", "deps",
                                             "deps_any",   "partition",  "nodes",
                                             "constraint", "comment",    NULL};
    if (!json_is_object(patch))
        return proto_errorf(err, 400, NULL, NULL, "the change must be a JSON object");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)patch, key, v) {
        if (strcmp(key, "reason") == 0) /* the caller's: why, for the audit trail */
            continue;
        bool ok = false;
        for (size_t i = 0; changeable[i] && !ok; i++)
            ok = strcmp(changeable[i], key) == 0;
        field_fn fn = NULL;
        for (size_t i = 0; ok && i < sizeof(fields) / sizeof(fields[0]); i++)
            if (strcmp(fields[i].name, key) == 0)
                fn = fields[i].fn;
        int rc = fn ? fn(v, now_ms, j, err)
                    : proto_errorf(err, 400, NULL, key,
                                   "'%.64s' %s: a submitted job changes only its name, "
                                   "time_limit, deps, deps_any, partition, nodes, constraint "
                                   "and comment",
                                   key, field_known(key) ? "cannot change" : "is no field");
        if (rc < 0)
            return rc;
    }
    return 0;
}
