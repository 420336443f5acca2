/*
 * spec.c - build the body of POST /v1/jobs from `docket submit` flags (spec.h): the flag
 * table, each flag's value checked and set (spec_apply), and the merge of command-line
 * flags over a script's (spec_merge). The setters are shared with sbatch.c (spec_int.h).
 * A script's directives are read by script.c, sbatch's options by sbatch.c.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli/spec.h"
#include "cli/spec_int.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/parse.h"
#include "util/str.h"

const struct opt_def spec_submit_opts[] = {
    {SO_PROJECT, 'p', "project", OPT_VALUE},
    {SO_PROJECT, 'A', "account", OPT_VALUE},
    {SO_TIER, 0, "tier", OPT_VALUE},
    {SO_TIER_OR_TIME, 't', NULL, OPT_VALUE},
    {SO_CLASS, 0, "class", OPT_VALUE},
    {SO_GPUS, 'g', "gpus", OPT_VALUE},
    {SO_GPU_TYPE, 0, "gpu-type", OPT_VALUE},
    {SO_CPUS, 'c', "cpus", OPT_VALUE},
    {SO_MEM, 'm', "mem", OPT_VALUE},
    {SO_NODES, 'N', "nodes", OPT_VALUE},
    {SO_TIME, 0, "time", OPT_VALUE},
    {SO_NAME, 'J', "name", OPT_VALUE},
    {SO_NAME, 0, "job-name", OPT_VALUE},
    {SO_ENV, 0, "env", OPT_VALUE},
    {SO_SECRET, 0, "secret", OPT_VALUE},
    {SO_STORAGE, 0, "storage", OPT_VALUE},
    {SO_AFTER, 0, "after", OPT_VALUE},
    {SO_DEPENDENCY, 0, "dependency", OPT_VALUE},
    {SO_ARRAY, 0, "array", OPT_VALUE},
    {SO_SIGNAL, 0, "signal", OPT_VALUE},
    {SO_RETRIES, 0, "retries", OPT_VALUE},
    {SO_SWITCHES, 0, "switches", OPT_VALUE},
    {SO_LABEL, 0, "label", OPT_VALUE},
    {SO_SELECT, 0, "select", OPT_VALUE},
    {SO_CONSTRAINT, 'C', "constraint", OPT_VALUE},
    {SO_WORKDIR, 0, "workdir", OPT_VALUE},
    {SO_OUTPUT, 'o', "output", OPT_VALUE},
    {SO_ERROR, 'e', "error", OPT_VALUE},
    {SO_HOLD, 0, "hold", OPT_NONE},
    {SO_BEGIN, 0, "begin", OPT_VALUE},
    {SO_IDEMPOTENT, 0, "idempotent", OPT_NONE},
    {SO_NO_REQUEUE, 0, "no-requeue", OPT_NONE},
    {SO_CHECKPOINT, 0, "checkpoint", OPT_NONE},
    {SO_TEMPLATE, 0, "template", OPT_VALUE},
    {SO_IMAGE, 0, "image", OPT_VALUE},
    {SO_IMAGE, 0, "container-image", OPT_VALUE},
    {SO_MOUNTS, 0, "mount", OPT_VALUE},
    {SO_MOUNTS, 0, "container-mounts", OPT_VALUE},
    {SO_CONTAINER_WORKDIR, 0, "container-workdir", OPT_VALUE},
    {SO_REGISTRY_AUTH, 0, "registry-auth", OPT_VALUE},
    {SO_CONTAINER_ENV, 0, "container-env", OPT_VALUE},
    {SO_JSON, 0, "json", OPT_NONE},
    {SO_HELP, 'h', "help", OPT_NONE},
    {SO_PARSABLE, 0, "parsable", OPT_NONE},
    {SO_DRY_RUN, 0, "dry-run", OPT_NONE},
    {SO_WRAP, 0, "wrap", OPT_VALUE},
    {0, 0, NULL, OPT_NONE},
};

/* ------------------------------------------------------------------------------------ */
/* Small setters                                                                        */

json_t *spec_sub_object(json_t *spec, const char *key)
{
    json_t *o = json_object_get(spec, key);

    if (!json_is_object(o)) {
        o = json_object();
        json_object_set_new(spec, key, o);
    }
    return o;
}

/* "FLAG: WHAT 'VALUE' (HINT)" where WHAT may end with a " (hint)" of its own. */
int spec_fail(char *err, size_t errlen, const char *flag, const char *what, const char *v)
{
    const char *hint = strstr(what, " (");
    int n = hint ? (int)(hint - what) : (int)strlen(what);

    snprintf(err, errlen, "%s: %.*s '%.200s'%s", flag, n, what, v ? v : "", hint ? hint : "");
    return -EINVAL;
}

/* Printable text without control characters, at most MAX_TEXT bytes. */
static bool is_text(const char *s)
{
    size_t n = 0;

    for (; *s; s++, n++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return n > 0 && n <= MAX_TEXT;
}

int spec_set_name(json_t *spec, const char *key, const char *flag, const char *v, char *err,
                  size_t errlen)
{
    if (!str_is_name(v))
        return spec_fail(err, errlen, flag, "bad name (1-63 of A-Z a-z 0-9 . _ -)", v);
    json_object_set_new(spec, key, json_string(v));
    return 0;
}

int spec_set_text(json_t *spec, const char *key, const char *flag, const char *v, char *err,
                  size_t errlen)
{
    if (!is_text(v))
        return spec_fail(err, errlen, flag, "bad value", v);
    json_object_set_new(spec, key, json_string(v));
    return 0;
}

int spec_set_int(json_t *spec, const char *key, const char *flag, const char *v, int min, int max,
                 char *err, size_t errlen)
{
    int n;

    if (parse_int(v, min, max, &n) < 0) {
        snprintf(err, errlen, "%s: want an integer from %d to %d, not '%.100s'", flag, min, max, v);
        return -EINVAL;
    }
    json_object_set_new(spec, key, json_integer(n));
    return 0;
}

/* Cut the next field off *cursor at any of `seps` (as strsep); NULL when none are left.
 * Empty fields are skipped. */
char *spec_next_field(char **cursor, const char *seps)
{
    char *p = *cursor, *start;

    if (!p)
        return NULL;
    while (*p && strchr(seps, *p))
        p++;
    if (!*p) {
        *cursor = NULL;
        return NULL;
    }
    start = p;
    while (*p && !strchr(seps, *p))
        p++;
    if (*p)
        *p++ = '\0';
    *cursor = p;
    return start;
}

/* ------------------------------------------------------------------------------------ */
/* Values with structure                                                                */

static bool is_env_name(const char *s, size_t n)
{
    if (n == 0 || n > 255 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9')))
            return false;
    }
    return true;
}

/* "K=V", or "K" alone to pass this shell's value of K. */
int spec_set_env(json_t *spec, const char *v, char *err, size_t errlen)
{
    const char *eq = strchr(v, '=');
    size_t n = eq ? (size_t)(eq - v) : strlen(v);
    char name[256];
    const char *value;

    if (!is_env_name(v, n))
        return spec_fail(err, errlen, "--env", "bad variable name in", v);
    memcpy(name, v, n);
    name[n] = '\0';
    value = eq ? eq + 1 : getenv(name);
    if (!value) {
        snprintf(err, errlen, "--env: '%s' is not set here; write --env %s=VALUE", name, name);
        return -EINVAL;
    }
    if (strlen(value) > 65536)
        return spec_fail(err, errlen, "--env", "value too long for", name);
    json_object_set_new(spec_sub_object(spec, "env"), name, json_string(value));
    return 0;
}

/* "--secret NAME": the project's secret NAME becomes the variable NAME (its value is
 * docketd's to give, at launch; it never passes through here). */
static int add_secret(json_t *spec, const char *v, char *err, size_t errlen)
{
    json_t *arr = json_object_get(spec, "secrets");
    size_t i;
    json_t *s;

    if (!is_env_name(v, strlen(v)) || strlen(v) > 128)
        return spec_fail(err, errlen, "--secret", "bad secret name (a variable name)", v);
    if (!json_is_array(arr)) {
        arr = json_array();
        json_object_set_new(spec, "secrets", arr);
    }
    json_array_foreach(arr, i, s) {
        if (!strcmp(json_string_value(s), v))
            return 0;
    }
    json_array_append_new(arr, json_string(v));
    return 0;
}

/* "--storage hot,cold": the pools the job needs (docs/storage.md); repeatable. docketd
 * checks the names against its pools. */
static int add_storage(json_t *spec, const char *v, char *err, size_t errlen)
{
    json_t *arr = json_object_get(spec, "storage"), *names = json_array();
    char buf[256];
    size_t i;
    json_t *name;
    if (strlen(v) >= sizeof(buf) || !v[0]) {
        json_decref(names);
        return spec_fail(err, errlen, "--storage", "bad pool list", v);
    }
    str_copy(buf, sizeof(buf), v);
    /* every name is checked before the spec changes: a refused list adds nothing */
    for (char *save = NULL, *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (!str_is_name(p)) {
            json_decref(names);
            return spec_fail(err, errlen, "--storage", "bad pool name", p);
        }
        json_array_append_new(names, json_string(p));
    }
    if (!json_array_size(names)) {
        json_decref(names);
        return spec_fail(err, errlen, "--storage", "bad pool list", v);
    }
    if (!json_is_array(arr)) {
        arr = json_array();
        json_object_set_new(spec, "storage", arr);
    }
    json_array_foreach(names, i, name) {
        bool have = false;
        size_t j;
        json_t *s;
        json_array_foreach(arr, j, s)
            have = have || json_equal(s, name);
        if (!have)
            json_array_append(arr, name);
    }
    json_decref(names);
    return 0;
}

/* "k=v" for labels and selectors; selectors also take "k!=v" (or "k=!v"): the node's
 * label must differ, sent as "!v" (docs/api.md). */
static int set_label(json_t *spec, const char *key, const char *flag, const char *v, char *err,
                     size_t errlen)
{
    bool selector = !strcmp(key, "selectors"), negate = false;
    const char *ne = strstr(v, "!=");
    char k[64], val[64], plain[200];

    if (selector && (ne || strstr(v, "=!"))) {
        const char *cut = ne ? ne : strstr(v, "=!");
        if (snprintf(plain, sizeof(plain), "%.*s=%s", (int)(cut - v), v, cut + 2) >=
            (int)sizeof(plain))
            return spec_fail(err, errlen, flag, "too long", v);
        v = plain;
        negate = true;
    }
    if (parse_label(v, k, sizeof(k), val, sizeof(val)) < 0 || !str_is_name(k))
        return spec_fail(err, errlen, flag,
                         selector ? "want key=value or key!=value, not" : "want key=value, not", v);
    if (negate) {
        char neg[66];
        snprintf(neg, sizeof(neg), "!%s", val);
        json_object_set_new(spec_sub_object(spec, key), k, json_string(neg));
    } else {
        json_object_set_new(spec_sub_object(spec, key), k, json_string(val));
    }
    return 0;
}

/* One job of a dependency: an id, or Slurm's ARRAY_ID_INDEX (one task of an array, kept
 * as "array_index" until the submitting verb finds the task's id: slurm.c). */
static int add_dep(json_t *deps, const char *type, const char *id, const char *flag, char *err,
                   size_t errlen)
{
    int64_t n, idx = -1;
    char num[32];
    size_t len = strcspn(id, "_");

    if (len >= sizeof(num))
        return spec_fail(err, errlen, flag, "bad job id", id);
    memcpy(num, id, len);
    num[len] = '\0';
    if (parse_int64(num, 1, INT64_MAX, &n) < 0 ||
        (id[len] && parse_int64(id + len + 1, 0, INT32_MAX, &idx) < 0))
        return spec_fail(err, errlen, flag, "bad job id", id);
    if (json_array_size(deps) >= SPEC_MAX_DEPS) {
        snprintf(err, errlen, "%s: at most %d dependencies", flag, SPEC_MAX_DEPS);
        return -EINVAL;
    }
    json_t *d = json_pack("{s:s,s:I}", "type", type, "job", (json_int_t)n);
    if (idx >= 0)
        json_object_set_new(d, "array_index", json_integer(idx));
    json_array_append_new(deps, d);
    return 0;
}

/* Split `v` on any of `seps` and add each piece to `deps`. */
static int add_deps(json_t *deps, const char *type, const char *v, const char *seps,
                    const char *flag, char *err, size_t errlen)
{
    char buf[512];
    char *cur = buf;
    int rc = 0;

    if (str_copy(buf, sizeof(buf), v) < 0)
        return spec_fail(err, errlen, flag, "too long", "");
    if (!buf[0])
        return spec_fail(err, errlen, flag, "bad job id", v);
    for (char *p = spec_next_field(&cur, seps); p && !rc; p = spec_next_field(&cur, seps))
        rc = add_dep(deps, type, p, flag, err, errlen);
    return rc;
}

/* --after JOB[:JOB...]: added to the spec's deps only when every id is good. */
static int set_after(json_t *spec, const char *v, const char *flag, char *err, size_t errlen)
{
    json_t *deps = json_deep_copy(json_object_get(spec, "deps"));
    int rc;

    if (!json_is_array(deps)) {
        json_decref(deps);
        deps = json_array();
    }
    if (!strncmp(v, "afterok:", 8))
        v += 8;
    rc = add_deps(deps, "afterok", v, ":,", flag, err, errlen);
    if (rc == 0)
        json_object_set(spec, "deps", deps);
    json_decref(deps);
    return rc;
}

/* Slurm syntax: "afterok:1:2,afterany:3"; replaces the spec's deps when all is good. */
int spec_set_dependency(json_t *spec, const char *v, const char *flag, char *err, size_t errlen)
{
    char buf[512];
    char *cur = buf;
    json_t *deps;
    int rc = 0;

    /* ',' all of them, '?' any one of them; sbatch takes one separator or the other */
    const char *sep = strchr(v, '?') ? "?" : ",";
    if (strchr(v, '?') && strchr(v, ','))
        return spec_fail(err, errlen, flag,
                         "',' (all of) and '?' (any of) cannot be mixed, as in sbatch:", v);
    if (str_copy(buf, sizeof(buf), v) < 0 || !buf[0])
        return spec_fail(err, errlen, flag, "bad dependency", v);
    deps = json_array();
    for (char *p = spec_next_field(&cur, sep); p && !rc; p = spec_next_field(&cur, sep)) {
        char *colon = strchr(p, ':');

        if (!strcmp(p, "singleton")) { /* the verb finds the jobs of this name: slurm.c */
            json_array_append_new(deps, json_pack("{s:s}", "type", "singleton"));
            continue;
        }
        if (!colon) {
            rc = spec_fail(err, errlen, flag, "want TYPE:JOB[:JOB...], not", p);
            break;
        }
        *colon = '\0';
        if (strcmp(p, "afterok") && strcmp(p, "afterany") && strcmp(p, "afternotok") &&
            strcmp(p, "after")) {
            snprintf(err, errlen,
                     "%s: dependency type '%.40s' is not supported "
                     "(after, afterok, afterany, afternotok, singleton)",
                     flag, p);
            rc = -EINVAL;
            break;
        }
        rc = add_deps(deps, p, colon + 1, ":", flag, err, errlen);
    }
    if (rc == 0) {
        json_object_set(spec, "deps", deps);
        if (*sep == '?')
            json_object_set_new(spec, "deps_any", json_true());
        else
            json_object_del(spec, "deps_any");
    }
    json_decref(deps);
    return rc;
}

int spec_set_array(json_t *spec, const char *v, const char *flag, char *err, size_t errlen)
{
    int32_t *idx = malloc(sizeof(*idx) * MAX_ARRAY);
    size_t count = 0;
    int limit = 0, rc;

    if (!idx)
        return -ENOMEM;
    rc = parse_array_spec(v, idx, MAX_ARRAY, &count, &limit);
    free(idx);
    if (rc < 0 || count == 0)
        return spec_fail(err, errlen, flag, "want a range like 0-99%8 or 1,3,5-9, not", v);
    json_object_set_new(spec, "array", json_string(v));
    return 0;
}

/* "USR1", "USR1@120s", Slurm's "B:USR1@120" (the B: prefix is dropped: docket always
 * signals the job's whole process tree). */
static int set_signal(json_t *spec, const char *v, const char *flag, char *err, size_t errlen)
{
    char buf[64];
    char *at;
    const char *name = v;
    int sig;
    int64_t grace;

    if (!strncmp(name, "B:", 2) || !strncmp(name, "R:", 2))
        name += 2;
    if (str_copy(buf, sizeof(buf), name) < 0)
        return spec_fail(err, errlen, flag, "bad signal", v);
    at = strchr(buf, '@');
    if (at)
        *at++ = '\0';
    if (parse_signal(buf, &sig) < 0)
        return spec_fail(err, errlen, flag, "unknown signal in", v);
    if (at && parse_duration_ms(at, &grace) < 0)
        return spec_fail(err, errlen, flag, "bad grace time (after @) in", v);
    json_object_set_new(spec, "signal", json_string(buf));
    json_object_set_new(spec, "checkpoint", json_true());
    if (at)
        json_object_set_new(spec, "grace", json_string(at));
    return 0;
}

/* Docket durations ("4h", "1h30m", bare seconds) or Slurm's ("30", "1-12:00:00").
 * A bare integer is seconds for docket flags but minutes for Slurm. */
static int set_time(json_t *spec, const char *v, bool slurm, const char *flag, char *err,
                    size_t errlen)
{
    int64_t ms;
    int rc;

    if (slurm || strchr(v, ':') || strchr(v, '-'))
        rc = spec_slurm_time_ms(v, &ms);
    else
        rc = -EINVAL;
    if (rc == -EINVAL && !slurm)
        rc = parse_duration_ms(v, &ms);
    if (rc == -EINVAL && slurm && parse_duration_ms(v, &ms) == 0 && !strchr(v, ':'))
        rc = 0; /* "4h" written on an #SBATCH line: accept what is unambiguous */
    if (rc == -ERANGE)
        return rc;
    if (rc < 0 || ms <= 0)
        return spec_fail(err, errlen, flag, "bad time limit (e.g. 4h, 90m, 1-12:00:00)", v);
    /* Slurm's limits are whole minutes (time_str2mins rounds up) */
    json_object_set_new(spec, "time_limit",
                        json_integer(slurm ? (ms / 1000 + 59) / 60 * 60 : (ms + 999) / 1000));
    return 0;
}

static int set_mem(json_t *spec, const char *v, const char *flag, char *err, size_t errlen)
{
    int64_t mb;

    if (parse_size_mb(v, &mb) < 0 || mb <= 0)
        return spec_fail(err, errlen, flag, "bad size (e.g. 512M, 32G)", v);
    json_object_set_new(spec, "mem", json_integer(mb));
    return 0;
}

/* "8", "8xH100-80GB" (docket) */
static int set_gpus(json_t *spec, const char *v, const char *flag, char *err, size_t errlen)
{
    int count;
    char type[64];
    int64_t mem = 0;

    if (parse_gpu_decl(v, &count, type, sizeof(type), &mem) < 0 || count < 0 ||
        count > MAX_GPUS_PER_NODE)
        return spec_fail(err, errlen, flag, "bad GPU count (e.g. 8 or 8xH100-80GB)", v);
    if (type[0] && !str_is_name(type))
        return spec_fail(err, errlen, flag, "bad GPU type in", v);
    json_object_set_new(spec, "gpus", json_integer(count));
    if (type[0])
        json_object_set_new(spec, "gpu_type", json_string(type));
    return 0;
}

/* NAME or NAME@VERSION: an environment template (docs/environments.md); docketd says
 * whether it exists and may be used. */
static int set_template(json_t *spec, const char *v, const char *flag, char *err, size_t errlen)
{
    char name[80];
    const char *at = strchr(v, '@');
    size_t n = at ? (size_t)(at - v) : strlen(v);
    bool version_ok = !at || (at[1] >= '1' && at[1] <= '9' && strlen(at + 1) <= 7 &&
                              strspn(at + 1, "0123456789") == strlen(at + 1));

    if (n >= sizeof(name) || !version_ok)
        return spec_fail(err, errlen, flag, "bad template (NAME or NAME@VERSION)", v);
    memcpy(name, v, n);
    name[n] = '\0';
    if (!str_is_name(name))
        return spec_fail(err, errlen, flag, "bad template (NAME or NAME@VERSION)", v);
    json_object_set_new(spec, "template", json_string(v));
    return 0;
}

static int container_value(json_t *spec, int id, const char *flag, const char *v, char *err,
                           size_t errlen);

/* A list value (--container-mounts a,b; --container-env A,B) is applied to a copy of the
 * spec, which replaces the spec's members only when every item was good: a refused value
 * changes nothing (the flag fuzzer's invariant). */
int spec_set_container(json_t *spec, int id, const char *flag, const char *v, char *err,
                       size_t errlen)
{
    json_t *copy = json_deep_copy(spec);
    int rc = copy ? container_value(copy, id, flag, v, err, errlen) : -ENOMEM;
    if (rc == 0)
        json_object_update(spec, copy);
    json_decref(copy);
    return rc;
}

static int container_value(json_t *spec, int id, const char *flag, const char *v, char *err,
                           size_t errlen)
{
    char buf[4096];
    if (!v[0] || str_copy(buf, sizeof(buf), v) < 0)
        return spec_fail(err, errlen, flag, "bad value", v);
    switch (id) {
    case SO_IMAGE:
        if (strncmp(v, "oci-layout:/", 12) != 0 && strncmp(v, "docker://", 9) != 0)
            return spec_fail(err, errlen, flag,
                             "bad image (oci-layout:/PATH[:TAG] or docker://NAME[:TAG])", v);
        json_object_set_new(spec, "image", json_string(v));
        return 0;
    case SO_CONTAINER_WORKDIR:
        if (v[0] != '/')
            return spec_fail(err, errlen, flag, "bad directory (an absolute path)", v);
        json_object_set_new(spec, "container_workdir", json_string(v));
        return 0;
    case SO_MOUNTS: {
        json_t *arr = json_object_get(spec, "mounts");
        if (!json_is_array(arr)) {
            arr = json_array();
            json_object_set_new(spec, "mounts", arr);
        }
        for (char *t = buf, *comma; t; t = comma ? comma + 1 : NULL) {
            if ((comma = strchr(t, ',')))
                *comma = '\0';
            if (t[0] != '/')
                return spec_fail(err, errlen, flag, "bad mount (SRC:DST[:ro])", t);
            json_array_append_new(arr, json_string(t));
        }
        return 0;
    }
    default: /* SO_CONTAINER_ENV: Pyxis passes these of the submitting shell */
        for (char *t = buf, *comma; t; t = comma ? comma + 1 : NULL) {
            if ((comma = strchr(t, ',')))
                *comma = '\0';
            int rc = spec_set_env(spec, t, err, errlen);
            if (rc < 0)
                return rc;
        }
        return 0;
    }
}

int spec_apply(json_t *spec, int id, const char *v, char *err, size_t errlen)
{
    const char *flag = opt_name(spec_submit_opts, id);
    char name[80];

    str_copy(name, sizeof(name), flag);
    flag = name;
    switch (id) {
    case SO_PROJECT:
        return spec_set_name(spec, "project", flag, v, err, errlen);
    case SO_TIER:
        return spec_set_name(spec, "tier", flag, v, err, errlen);
    case SO_TIER_OR_TIME:
        if (v[0] && strspn(v, "0123456789:-") == strlen(v)) {
            int rc = set_time(spec, v, true, "-t", err, errlen);
            return rc == -ERANGE
                       ? spec_fail(err, errlen, "-t", "docket needs a finite limit, not", v)
                       : rc;
        }
        return spec_set_name(spec, "tier", "-t", v, err, errlen);
    case SO_CLASS:
        return spec_set_name(spec, "class", flag, v, err, errlen);
    case SO_TEMPLATE:
        return set_template(spec, v, flag, err, errlen);
    case SO_REGISTRY_AUTH: /* a secret's name; docketd checks it is one the job may have */
        json_object_set_new(spec, "registry_auth", json_string(v));
        return 0;
    case SO_IMAGE:
    case SO_MOUNTS:
    case SO_CONTAINER_WORKDIR:
    case SO_CONTAINER_ENV:
        return spec_set_container(spec, id, flag, v, err, errlen);
    case SO_GPU_TYPE:
        return spec_set_name(spec, "gpu_type", flag, v, err, errlen);
    case SO_GPUS:
        return set_gpus(spec, v, flag, err, errlen);
    case SO_CPUS:
        return spec_set_int(spec, "cpus", flag, v, 1, 100000, err, errlen);
    case SO_MEM:
        return set_mem(spec, v, flag, err, errlen);
    case SO_NODES:
        return spec_set_int(spec, "nodes", flag, v, 1, MAX_NODES, err, errlen);
    case SO_TIME: {
        int rc = set_time(spec, v, false, flag, err, errlen);
        return rc == -ERANGE ? spec_fail(err, errlen, flag, "docket needs a finite limit, not", v)
                             : rc;
    }
    case SO_NAME:
        return spec_set_text(spec, "name", flag, v, err, errlen);
    case SO_ENV:
        return spec_set_env(spec, v, err, errlen);
    case SO_SECRET:
        return add_secret(spec, v, err, errlen);
    case SO_STORAGE:
        return add_storage(spec, v, err, errlen);
    case SO_AFTER:
        return set_after(spec, v, flag, err, errlen);
    case SO_DEPENDENCY:
        return spec_set_dependency(spec, v, flag, err, errlen);
    case SO_ARRAY:
        return spec_set_array(spec, v, flag, err, errlen);
    case SO_SIGNAL:
        return set_signal(spec, v, flag, err, errlen);
    case SO_RETRIES:
        return spec_set_int(spec, "retries", flag, v, 0, 100, err, errlen);
    case SO_SWITCHES: /* N, or N@TIME as the API reads it (its errors name the field) */
        if (strchr(v, '@'))
            json_object_set_new(spec, "switches", json_string(v));
        else
            return spec_set_int(spec, "switches", flag, v, 1, MAX_NODES, err, errlen);
        return 0;
    case SO_LABEL:
        return set_label(spec, "labels", flag, v, err, errlen);
    case SO_SELECT:
        return set_label(spec, "selectors", flag, v, err, errlen);
    case SO_CONSTRAINT:
        json_object_set_new(spec, "constraint", json_string(v));
        return 0;
    case SO_WORKDIR:
        return spec_set_text(spec, "workdir", flag, v, err, errlen);
    case SO_OUTPUT:
        return spec_set_text(spec, "output", flag, v, err, errlen);
    case SO_ERROR:
        return spec_set_text(spec, "error", flag, v, err, errlen);
    case SO_HOLD:
        json_object_set_new(spec, "hold", json_true());
        return 0;
    case SO_IDEMPOTENT:
        json_object_set_new(spec, "idempotent", json_true());
        return 0;
    case SO_NO_REQUEUE:
        json_object_set_new(spec, "requeue", json_false());
        return 0;
    case SO_CHECKPOINT:
        json_object_set_new(spec, "checkpoint", json_true());
        return 0;
    case SO_BEGIN: {
        int64_t ms;
        if (parse_duration_ms(v, &ms) < 0)
            return spec_fail(err, errlen, flag, "bad delay (e.g. 10m, 2h)", v);
        json_object_set_new(spec, "begin", json_string(v));
        return 0;
    }
    default:
        snprintf(err, errlen, "%s is not a job option", flag);
        return -EINVAL;
    }
}

void spec_merge(json_t *base, const json_t *over)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)over, key, v) {
        json_t *b = json_object_get(base, key);
        if ((!strcmp(key, "env") || !strcmp(key, "labels") || !strcmp(key, "selectors") ||
             !strcmp(key, "__slurm") || !strcmp(key, "__cli")) &&
            json_is_object(b) && json_is_object(v))
            json_object_update(b, v);
        else
            json_object_set(base, key, v);
    }
}
