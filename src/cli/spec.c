/*
 * spec.c - build the body of POST /v1/jobs from submit flags and script directives
 * (spec.h). The #SBATCH mapping implemented here is the table in docs/cli.md; keep both
 * in step.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli/spec.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/parse.h"
#include "util/str.h"

enum {
    MAX_GPUS_PER_NODE = 64,
    MAX_NODES = 512,
    MAX_WORDS = 64,
    MAX_LINE = 4096,
    MAX_TEXT = 1024,
    MAX_ARRAY = 100000
};

const struct opt_def spec_submit_opts[] = {
    {SO_PROJECT, 'p', "project", OPT_VALUE},
    {SO_TIER, 't', "tier", OPT_VALUE},
    {SO_CLASS, 0, "class", OPT_VALUE},
    {SO_GPUS, 'g', "gpus", OPT_VALUE},
    {SO_GPU_TYPE, 0, "gpu-type", OPT_VALUE},
    {SO_CPUS, 'c', "cpus", OPT_VALUE},
    {SO_MEM, 'm', "mem", OPT_VALUE},
    {SO_NODES, 'N', "nodes", OPT_VALUE},
    {SO_TIME, 0, "time", OPT_VALUE},
    {SO_NAME, 0, "name", OPT_VALUE},
    {SO_ENV, 0, "env", OPT_VALUE},
    {SO_SECRET, 0, "secret", OPT_VALUE},
    {SO_AFTER, 0, "after", OPT_VALUE},
    {SO_DEPENDENCY, 0, "dependency", OPT_VALUE},
    {SO_ARRAY, 0, "array", OPT_VALUE},
    {SO_SIGNAL, 0, "signal", OPT_VALUE},
    {SO_RETRIES, 0, "retries", OPT_VALUE},
    {SO_LABEL, 0, "label", OPT_VALUE},
    {SO_SELECT, 0, "select", OPT_VALUE},
    {SO_WORKDIR, 0, "workdir", OPT_VALUE},
    {SO_OUTPUT, 0, "output", OPT_VALUE},
    {SO_ERROR, 0, "error", OPT_VALUE},
    {SO_HOLD, 0, "hold", OPT_NONE},
    {SO_BEGIN, 0, "begin", OPT_VALUE},
    {SO_IDEMPOTENT, 0, "idempotent", OPT_NONE},
    {SO_NO_REQUEUE, 0, "no-requeue", OPT_NONE},
    {SO_CHECKPOINT, 0, "checkpoint", OPT_NONE},
    {SO_JSON, 0, "json", OPT_NONE},
    {SO_HELP, 'h', "help", OPT_NONE},
    {SO_PARSABLE, 0, "parsable", OPT_NONE},
    {SO_DRY_RUN, 0, "dry-run", OPT_NONE},
    {0, 0, NULL, OPT_NONE},
};

/* ------------------------------------------------------------------------------------ */
/* Small setters                                                                        */

static json_t *sub_object(json_t *spec, const char *key)
{
    json_t *o = json_object_get(spec, key);

    if (!json_is_object(o)) {
        o = json_object();
        json_object_set_new(spec, key, o);
    }
    return o;
}

/* "FLAG: WHAT 'VALUE' (HINT)" where WHAT may end with a " (hint)" of its own. */
static int fail(char *err, size_t errlen, const char *flag, const char *what, const char *v)
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

static int set_name(json_t *spec, const char *key, const char *flag, const char *v, char *err,
                    size_t errlen)
{
    if (!str_is_name(v))
        return fail(err, errlen, flag, "bad name (1-63 of A-Z a-z 0-9 . _ -)", v);
    json_object_set_new(spec, key, json_string(v));
    return 0;
}

static int set_text(json_t *spec, const char *key, const char *flag, const char *v, char *err,
                    size_t errlen)
{
    if (!is_text(v))
        return fail(err, errlen, flag, "bad value", v);
    json_object_set_new(spec, key, json_string(v));
    return 0;
}

static int set_int(json_t *spec, const char *key, const char *flag, const char *v, int min, int max,
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
static char *next_field(char **cursor, const char *seps)
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
static int set_env(json_t *spec, const char *v, char *err, size_t errlen)
{
    const char *eq = strchr(v, '=');
    size_t n = eq ? (size_t)(eq - v) : strlen(v);
    char name[256];
    const char *value;

    if (!is_env_name(v, n))
        return fail(err, errlen, "--env", "bad variable name in", v);
    memcpy(name, v, n);
    name[n] = '\0';
    value = eq ? eq + 1 : getenv(name);
    if (!value) {
        snprintf(err, errlen, "--env: '%s' is not set here; write --env %s=VALUE", name, name);
        return -EINVAL;
    }
    if (strlen(value) > 65536)
        return fail(err, errlen, "--env", "value too long for", name);
    json_object_set_new(sub_object(spec, "env"), name, json_string(value));
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
        return fail(err, errlen, "--secret", "bad secret name (a variable name)", v);
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
            return fail(err, errlen, flag, "too long", v);
        v = plain;
        negate = true;
    }
    if (parse_label(v, k, sizeof(k), val, sizeof(val)) < 0 || !str_is_name(k))
        return fail(err, errlen, flag,
                    selector ? "want key=value or key!=value, not" : "want key=value, not", v);
    if (negate) {
        char neg[66];
        snprintf(neg, sizeof(neg), "!%s", val);
        json_object_set_new(sub_object(spec, key), k, json_string(neg));
    } else {
        json_object_set_new(sub_object(spec, key), k, json_string(val));
    }
    return 0;
}

static int add_dep(json_t *deps, const char *type, const char *id, const char *flag, char *err,
                   size_t errlen)
{
    int64_t n;

    if (parse_int64(id, 1, INT64_MAX, &n) < 0)
        return fail(err, errlen, flag, "bad job id", id);
    if (json_array_size(deps) >= 16) {
        snprintf(err, errlen, "%s: at most 16 dependencies", flag);
        return -EINVAL;
    }
    json_array_append_new(deps, json_pack("{s:s,s:I}", "type", type, "job", (json_int_t)n));
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
        return fail(err, errlen, flag, "too long", "");
    if (!buf[0])
        return fail(err, errlen, flag, "bad job id", v);
    for (char *p = next_field(&cur, seps); p && !rc; p = next_field(&cur, seps))
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
static int set_dependency(json_t *spec, const char *v, const char *flag, char *err, size_t errlen)
{
    char buf[512];
    char *cur = buf;
    json_t *deps;
    int rc = 0;

    if (strchr(v, '?'))
        return fail(err, errlen, flag, "'?' (any of) is not supported in", v);
    if (str_copy(buf, sizeof(buf), v) < 0 || !buf[0])
        return fail(err, errlen, flag, "bad dependency", v);
    deps = json_array();
    for (char *p = next_field(&cur, ","); p && !rc; p = next_field(&cur, ",")) {
        char *colon = strchr(p, ':');

        if (!colon) {
            rc = fail(err, errlen, flag, "want TYPE:JOB[:JOB...], not", p);
            break;
        }
        *colon = '\0';
        if (strcmp(p, "afterok") && strcmp(p, "afterany") && strcmp(p, "afternotok")) {
            snprintf(err, errlen,
                     "%s: dependency type '%.40s' is not supported "
                     "(afterok, afterany, afternotok)",
                     flag, p);
            rc = -EINVAL;
            break;
        }
        rc = add_deps(deps, p, colon + 1, ":", flag, err, errlen);
    }
    if (rc == 0)
        json_object_set(spec, "deps", deps);
    json_decref(deps);
    return rc;
}

static int set_array(json_t *spec, const char *v, const char *flag, char *err, size_t errlen)
{
    int32_t *idx = malloc(sizeof(*idx) * MAX_ARRAY);
    size_t count = 0;
    int limit = 0, rc;

    if (!idx)
        return -ENOMEM;
    rc = parse_array_spec(v, idx, MAX_ARRAY, &count, &limit);
    free(idx);
    if (rc < 0 || count == 0)
        return fail(err, errlen, flag, "want a range like 0-99%8 or 1,3,5-9, not", v);
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
        return fail(err, errlen, flag, "bad signal", v);
    at = strchr(buf, '@');
    if (at)
        *at++ = '\0';
    if (parse_signal(buf, &sig) < 0)
        return fail(err, errlen, flag, "unknown signal in", v);
    if (at && parse_duration_ms(at, &grace) < 0)
        return fail(err, errlen, flag, "bad grace time (after @) in", v);
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
        return fail(err, errlen, flag, "bad time limit (e.g. 4h, 90m, 1-12:00:00)", v);
    json_object_set_new(spec, "time_limit", json_integer((ms + 999) / 1000));
    return 0;
}

static int set_mem(json_t *spec, const char *v, const char *flag, char *err, size_t errlen)
{
    int64_t mb;

    if (parse_size_mb(v, &mb) < 0 || mb <= 0)
        return fail(err, errlen, flag, "bad size (e.g. 512M, 32G)", v);
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
        return fail(err, errlen, flag, "bad GPU count (e.g. 8 or 8xH100-80GB)", v);
    if (type[0] && !str_is_name(type))
        return fail(err, errlen, flag, "bad GPU type in", v);
    json_object_set_new(spec, "gpus", json_integer(count));
    if (type[0])
        json_object_set_new(spec, "gpu_type", json_string(type));
    return 0;
}

int spec_apply(json_t *spec, int id, const char *v, char *err, size_t errlen)
{
    const char *flag = opt_name(spec_submit_opts, id);
    char name[80];

    str_copy(name, sizeof(name), flag);
    flag = name;
    switch (id) {
    case SO_PROJECT:
        return set_name(spec, "project", flag, v, err, errlen);
    case SO_TIER:
        return set_name(spec, "tier", flag, v, err, errlen);
    case SO_CLASS:
        return set_name(spec, "class", flag, v, err, errlen);
    case SO_GPU_TYPE:
        return set_name(spec, "gpu_type", flag, v, err, errlen);
    case SO_GPUS:
        return set_gpus(spec, v, flag, err, errlen);
    case SO_CPUS:
        return set_int(spec, "cpus", flag, v, 1, 100000, err, errlen);
    case SO_MEM:
        return set_mem(spec, v, flag, err, errlen);
    case SO_NODES:
        return set_int(spec, "nodes", flag, v, 1, MAX_NODES, err, errlen);
    case SO_TIME: {
        int rc = set_time(spec, v, false, flag, err, errlen);
        return rc == -ERANGE ? fail(err, errlen, flag, "docket needs a finite limit, not", v) : rc;
    }
    case SO_NAME:
        return set_text(spec, "name", flag, v, err, errlen);
    case SO_ENV:
        return set_env(spec, v, err, errlen);
    case SO_SECRET:
        return add_secret(spec, v, err, errlen);
    case SO_AFTER:
        return set_after(spec, v, flag, err, errlen);
    case SO_DEPENDENCY:
        return set_dependency(spec, v, flag, err, errlen);
    case SO_ARRAY:
        return set_array(spec, v, flag, err, errlen);
    case SO_SIGNAL:
        return set_signal(spec, v, flag, err, errlen);
    case SO_RETRIES:
        return set_int(spec, "retries", flag, v, 0, 100, err, errlen);
    case SO_LABEL:
        return set_label(spec, "labels", flag, v, err, errlen);
    case SO_SELECT:
        return set_label(spec, "selectors", flag, v, err, errlen);
    case SO_WORKDIR:
        return set_text(spec, "workdir", flag, v, err, errlen);
    case SO_OUTPUT:
        return set_text(spec, "output", flag, v, err, errlen);
    case SO_ERROR:
        return set_text(spec, "error", flag, v, err, errlen);
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
            return fail(err, errlen, flag, "bad delay (e.g. 10m, 2h)", v);
        json_object_set_new(spec, "begin", json_string(v));
        return 0;
    }
    default:
        snprintf(err, errlen, "%s is not a job option", flag);
        return -EINVAL;
    }
}

/* ------------------------------------------------------------------------------------ */
/* Slurm                                                                                */

/* Up to `max` non-negative integers separated by `sep`; returns how many, -EINVAL. */
static int split_ints(const char *s, char sep, int64_t *out, int max)
{
    int n = 0;

    while (n < max) {
        int64_t v = 0;
        const char *start = s;

        while (*s >= '0' && *s <= '9') {
            if (v > INT64_MAX / 1000)
                return -EINVAL;
            v = v * 10 + (*s++ - '0');
        }
        if (s == start)
            return -EINVAL;
        out[n++] = v;
        if (!*s)
            return n;
        if (*s != sep)
            return -EINVAL;
        s++;
    }
    return -EINVAL;
}

int spec_slurm_time_ms(const char *s, int64_t *out_ms)
{
    int64_t days = 0, f[3], secs;
    const char *dash = strchr(s, '-');
    int n;

    if (!strcasecmp(s, "UNLIMITED") || !strcasecmp(s, "infinite"))
        return -ERANGE;
    if (dash) {
        int64_t d[1];
        char buf[32];
        size_t dl = (size_t)(dash - s);
        if (dl == 0 || dl >= sizeof(buf))
            return -EINVAL;
        memcpy(buf, s, dl);
        buf[dl] = '\0';
        if (split_ints(buf, ':', d, 1) != 1 || d[0] > 100000)
            return -EINVAL;
        days = d[0];
        s = dash + 1;
    }
    n = split_ints(s, ':', f, 3);
    if (n < 0)
        return -EINVAL;
    for (int i = 0; i < n; i++)
        if (f[i] > 1000000)
            return -EINVAL;
    if (dash) /* D-HH, D-HH:MM, D-HH:MM:SS */
        secs = f[0] * 3600 + (n > 1 ? f[1] * 60 : 0) + (n > 2 ? f[2] : 0);
    else if (n == 1) /* MM */
        secs = f[0] * 60;
    else if (n == 2) /* MM:SS */
        secs = f[0] * 60 + f[1];
    else /* HH:MM:SS */
        secs = f[0] * 3600 + f[1] * 60 + f[2];
    *out_ms = (days * 86400 + secs) * 1000;
    return 0;
}

static bool is_default_class(const char *name)
{
    static const char *const classes[] = {"training", "experiment", "exploration", "interactive",
                                          "service"};

    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
        if (!strcmp(name, classes[i]))
            return true;
    return false;
}

int spec_partition_lookup(const char *map, const char *partition, const char **field, char *name,
                          size_t namelen)
{
    char buf[1024];
    char *cur = buf;

    if (!map || !map[0])
        return -ENOENT;
    if (str_copy(buf, sizeof(buf), map) < 0)
        return -EINVAL;
    for (char *p = next_field(&cur, ","); p; p = next_field(&cur, ",")) {
        char *eq = strchr(p, '=');
        char *val;

        p = str_trim(p);
        if (!eq)
            return -EINVAL;
        *eq = '\0';
        val = str_trim(eq + 1);
        p = str_trim(p);
        if (strcmp(p, partition))
            continue;
        if (!strncmp(val, "tier:", 5)) {
            *field = "tier";
            val += 5;
        } else if (!strncmp(val, "class:", 6)) {
            *field = "class";
            val += 6;
        } else {
            *field = is_default_class(val) ? "class" : "tier";
        }
        if (!str_is_name(val))
            return -EINVAL;
        return str_copy(name, namelen, val) < 0 ? -EINVAL : 0;
    }
    return -ENOENT;
}

static void warnf(const struct spec_env *env, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warnf(const struct spec_env *env, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (!env || !env->warn)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    env->warn(env->warn_arg, msg);
}

/* "N" or "TYPE:N" (Slurm --gpus / --gpus-per-node). */
static int slurm_gpu_count(const char *v, char *type, size_t tlen, int *count)
{
    const char *colon = strrchr(v, ':');

    type[0] = '\0';
    if (colon) {
        size_t n = (size_t)(colon - v);
        if (n == 0 || n >= tlen)
            return -EINVAL;
        memcpy(type, v, n);
        type[n] = '\0';
        if (!strncmp(type, "gpu:", 4))
            memmove(type, type + 4, strlen(type + 4) + 1);
        if (!strcmp(type, "gpu"))
            type[0] = '\0';
        if (type[0] && !str_is_name(type))
            return -EINVAL;
        v = colon + 1;
    }
    return parse_int(v, 0, 100000, count);
}

/* --gres=gpu:2, gpu:a100:2, gpu, and lists "gpu:2,shard:1" (non-GPU entries warn). */
static int sbatch_gres(json_t *spec, const char *v, const struct spec_env *env, char *err,
                       size_t errlen)
{
    char buf[256];
    char *cur = buf;

    if (str_copy(buf, sizeof(buf), v) < 0 || !buf[0])
        return fail(err, errlen, "--gres", "bad value", v);
    for (char *p = next_field(&cur, ","); p; p = next_field(&cur, ",")) {
        char type[64];
        int count = 1;

        if (strncmp(p, "gpu", 3) || (p[3] && p[3] != ':')) {
            warnf(env, "#SBATCH --gres=%s: only gpu resources are understood; '%.60s' ignored", v,
                  p);
            continue;
        }
        if (p[3] == ':' && slurm_gpu_count(p + 4, type, sizeof(type), &count) < 0)
            return fail(err, errlen, "--gres", "want gpu:N or gpu:TYPE:N, not", p);
        if (p[3] != ':')
            type[0] = '\0';
        if (count > MAX_GPUS_PER_NODE)
            return fail(err, errlen, "--gres", "too many GPUs per node in", p);
        json_object_set_new(spec, "gpus", json_integer(count));
        if (type[0])
            json_object_set_new(spec, "gpu_type", json_string(type));
    }
    return 0;
}

static int sbatch_gpus(json_t *spec, const char *v, bool per_node, const char *flag, char *err,
                       size_t errlen)
{
    char type[64];
    int count;

    if (slurm_gpu_count(v, type, sizeof(type), &count) < 0)
        return fail(err, errlen, flag, "want N or TYPE:N, not", v);
    if (per_node && count > MAX_GPUS_PER_NODE)
        return fail(err, errlen, flag, "too many GPUs per node in", v);
    json_object_set_new(spec, per_node ? "gpus" : "__gpus_total", json_integer(count));
    if (type[0])
        json_object_set_new(spec, "gpu_type", json_string(type));
    return 0;
}

static int sbatch_nodes(json_t *spec, const char *v, const struct spec_env *env, char *err,
                        size_t errlen)
{
    char buf[32];
    char *dash;

    if (str_copy(buf, sizeof(buf), v) < 0)
        return fail(err, errlen, "--nodes", "bad node count", v);
    dash = strchr(buf, '-');
    if (dash) {
        *dash = '\0';
        warnf(env, "#SBATCH --nodes=%s: docket places gang jobs on an exact count; using %s", v,
              buf);
    }
    return set_int(spec, "nodes", "--nodes", buf, 1, MAX_NODES, err, errlen);
}

static int sbatch_partition(json_t *spec, const char *opt, const char *v,
                            const struct spec_env *env, char *err, size_t errlen)
{
    const char *field;
    char name[64];
    int rc = spec_partition_lookup(env ? env->partition_map : NULL, v, &field, name, sizeof(name));

    if (rc == -EINVAL) {
        snprintf(err, errlen,
                 "--%s: the partition map is malformed (want "
                 "NAME=TIER,NAME=class:CLASS)",
                 opt);
        return rc;
    }
    if (rc < 0) {
        warnf(env,
              "#SBATCH --%s=%s has no mapping; ignored (map it with "
              "DOCKET_PARTITION_MAP=\"%s=TIER\" or partition.%s=TIER in "
              "~/.config/docket/config)",
              opt, v, v, v);
        return 0;
    }
    json_object_set_new(spec, field, json_string(name));
    return 0;
}

struct sbatch_opt {
    const char *name;
    char short_name;
    bool value;
};

static const struct sbatch_opt sbatch_opts[] = {
    {"job-name", 'J', true},      {"gres", 0, true},
    {"gpus", 'G', true},          {"gpus-per-node", 0, true},
    {"cpus-per-task", 'c', true}, {"mem", 0, true},
    {"time", 't', true},          {"nodes", 'N', true},
    {"output", 'o', true},        {"error", 'e', true},
    {"array", 'a', true},         {"dependency", 'd', true},
    {"partition", 'p', true},     {"qos", 'q', true},
    {"account", 'A', true},       {"chdir", 'D', true},
    {"hold", 'H', false},         {"requeue", 0, false},
    {"no-requeue", 0, false},     {"signal", 0, true},
    {"export", 0, true},          {"ntasks", 'n', true},
    {"ntasks-per-node", 0, true}, {NULL, 0, false},
};

static const struct sbatch_opt *sbatch_find(const char *name, char short_name)
{
    for (const struct sbatch_opt *o = sbatch_opts; o->name; o++)
        if ((name && !strcmp(o->name, name)) || (short_name && o->short_name == short_name))
            return o;
    return NULL;
}

/* What has no docket equivalent but is harmless when it asks for the default. */
static int sbatch_soft(const char *name, const char *v, const struct spec_env *env)
{
    if (!strcmp(name, "export")) {
        if (strcmp(v, "ALL"))
            warnf(env, "#SBATCH --export=%s: docket passes only --env variables; ignored", v);
    } else if (strcmp(v, "1")) {
        warnf(env,
              "#SBATCH --%s=%s: docket runs one task per node; use --cpus-per-task "
              "for CPUs; ignored",
              name, v);
    }
    return 0;
}

int spec_apply_sbatch(json_t *spec, const char *name, const char *v, const struct spec_env *env,
                      char *err, size_t errlen)
{
    const struct sbatch_opt *o = sbatch_find(name, 0);
    char flag[80];

    snprintf(flag, sizeof(flag), "--%s", name);
    if (!o) {
        warnf(env, "#SBATCH --%s is not understood by docket; ignored", name);
        return 0;
    }
    if (o->value && !v)
        return fail(err, errlen, flag, "needs a value", "");
    if (!strcmp(name, "job-name"))
        return set_text(spec, "name", flag, v, err, errlen);
    if (!strcmp(name, "gres"))
        return sbatch_gres(spec, v, env, err, errlen);
    if (!strcmp(name, "gpus"))
        return sbatch_gpus(spec, v, false, flag, err, errlen);
    if (!strcmp(name, "gpus-per-node"))
        return sbatch_gpus(spec, v, true, flag, err, errlen);
    if (!strcmp(name, "cpus-per-task"))
        return set_int(spec, "cpus", flag, v, 1, 100000, err, errlen);
    if (!strcmp(name, "mem"))
        return set_mem(spec, v, flag, err, errlen);
    if (!strcmp(name, "time")) {
        int rc = set_time(spec, v, true, flag, err, errlen);
        if (rc == -ERANGE) {
            warnf(env, "#SBATCH --time=%s: no unlimited jobs; the class's limit applies", v);
            rc = 0;
        }
        return rc;
    }
    if (!strcmp(name, "nodes"))
        return sbatch_nodes(spec, v, env, err, errlen);
    if (!strcmp(name, "output"))
        return set_text(spec, "output", flag, v, err, errlen);
    if (!strcmp(name, "error"))
        return set_text(spec, "error", flag, v, err, errlen);
    if (!strcmp(name, "array"))
        return set_array(spec, v, flag, err, errlen);
    if (!strcmp(name, "dependency"))
        return set_dependency(spec, v, flag, err, errlen);
    if (!strcmp(name, "partition") || !strcmp(name, "qos"))
        return sbatch_partition(spec, name, v, env, err, errlen);
    if (!strcmp(name, "account"))
        return set_name(spec, "project", flag, v, err, errlen);
    if (!strcmp(name, "chdir"))
        return set_text(spec, "workdir", flag, v, err, errlen);
    if (!strcmp(name, "hold")) {
        json_object_set_new(spec, "hold", json_true());
        return 0;
    }
    if (!strcmp(name, "requeue")) {
        json_object_set_new(spec, "requeue", json_true());
        return 0;
    }
    if (!strcmp(name, "no-requeue")) {
        json_object_set_new(spec, "requeue", json_false());
        return 0;
    }
    if (!strcmp(name, "signal"))
        return set_signal(spec, v, flag, err, errlen);
    return sbatch_soft(name, v, env);
}

/* One #SBATCH line's words: "--x=v", "--x v", "-X v", "-Xv". */
static int sbatch_words(json_t *spec, char **w, int n, const struct spec_env *env, char *err,
                        size_t errlen)
{
    for (int i = 0; i < n; i++) {
        char name[64];
        const char *v = NULL;
        const struct sbatch_opt *o;
        int rc;

        if (!strncmp(w[i], "--", 2) && w[i][2]) {
            const char *eq = strchr(w[i], '=');
            size_t len = eq ? (size_t)(eq - w[i] - 2) : strlen(w[i] + 2);
            if (len >= sizeof(name))
                len = sizeof(name) - 1;
            memcpy(name, w[i] + 2, len);
            name[len] = '\0';
            v = eq ? eq + 1 : NULL;
            o = sbatch_find(name, 0);
            if (!v && ((o && o->value) || (!o && i + 1 < n && w[i + 1][0] != '-')))
                v = i + 1 < n ? w[++i] : NULL;
        } else if (w[i][0] == '-' && w[i][1] && w[i][1] != '-') {
            o = sbatch_find(NULL, w[i][1]);
            if (!o) {
                warnf(env, "#SBATCH -%c is not understood by docket; ignored", w[i][1]);
                if (!w[i][2] && i + 1 < n && w[i + 1][0] != '-')
                    i++;
                continue;
            }
            str_copy(name, sizeof(name), o->name);
            if (o->value)
                v = w[i][2] ? w[i] + 2 : (i + 1 < n ? w[++i] : NULL);
        } else {
            warnf(env, "#SBATCH: unexpected word '%.60s'; ignored", w[i]);
            continue;
        }
        rc = spec_apply_sbatch(spec, name, v, env, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

static int docket_words(json_t *spec, char **w, int n, char *err, size_t errlen)
{
    struct opt_iter it;
    const char *v;
    int id;

    opt_iter_init(&it, n, w, 0);
    while ((id = opt_next(&it, spec_submit_opts, &v, err, errlen)) != OPT_DONE) {
        if (id == OPT_ERROR)
            return -EINVAL;
        if (id == OPT_POSITIONAL) {
            snprintf(err, errlen, "unexpected word '%.60s'", v);
            return -EINVAL;
        }
        if (id >= SO_JSON) {
            snprintf(err, errlen, "%s is not a job option", opt_name(spec_submit_opts, id));
            return -EINVAL;
        }
        if (spec_apply(spec, id, v, err, errlen))
            return -EINVAL;
    }
    if (it.index < n) {
        snprintf(err, errlen, "unexpected '--'");
        return -EINVAL;
    }
    return 0;
}

struct line_env {
    struct spec_env env;
    const struct spec_env *outer;
    int line;
};

static void line_warn(void *arg, const char *msg)
{
    struct line_env *le = arg;
    char buf[600];

    snprintf(buf, sizeof(buf), "line %d: %s", le->line, msg);
    le->outer->warn(le->outer->warn_arg, buf);
}

/* One directive line (NUL-terminated). */
static int directive(json_t *spec, const char *line, struct line_env *le, char *err, size_t errlen)
{
    char buf[MAX_LINE + 1];
    char *w[MAX_WORDS];
    bool sbatch = !strncmp(line, "#SBATCH", 7);
    const char *rest = line + 7;
    int n;

    if (*rest && *rest != ' ' && *rest != '\t')
        return 0; /* "#SBATCHX", "#DOCKETS": an ordinary comment */
    n = opt_split_words(rest, buf, sizeof(buf), w, MAX_WORDS);
    if (n < 0) {
        snprintf(err, errlen, n == -EINVAL ? "unterminated quote" : "too many words");
        return -EINVAL;
    }
    if (sbatch)
        return sbatch_words(spec, w, n, le->outer && le->outer->warn ? &le->env : le->outer, err,
                            errlen);
    return docket_words(spec, w, n, err, errlen);
}

int spec_parse_script(json_t *spec, const char *text, size_t len, const struct spec_env *env,
                      char *err, size_t errlen)
{
    struct line_env le = {.outer = env, .line = 0};
    json_t *tmp = json_object();
    size_t pos = 0;
    char msg[400];

    le.env.partition_map = env ? env->partition_map : NULL;
    le.env.warn = line_warn;
    le.env.warn_arg = &le;
    while (pos < len) {
        const char *start = text + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - start) : len - pos;
        char line[MAX_LINE + 1];
        const char *p;

        pos += n + 1;
        le.line++;
        if (n > MAX_LINE) {
            if (memchr(start, '\0', n) == NULL && start[0] != '#')
                break; /* a long command line: directives are over */
            snprintf(err, errlen, "line %d: longer than %d bytes", le.line, MAX_LINE);
            goto fail;
        }
        memcpy(line, start, n);
        line[n] = '\0';
        if (strlen(line) != n) {
            snprintf(err, errlen, "line %d: contains a NUL byte", le.line);
            goto fail;
        }
        p = line;
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (le.line == 1 && !strncmp(p, "#!", 2))
            continue;
        if (!*p)
            continue;
        if (*p != '#')
            break;
        if (strncmp(p, "#SBATCH", 7) && strncmp(p, "#DOCKET", 7))
            continue;
        if (directive(tmp, p, &le, msg, sizeof(msg)) < 0) {
            snprintf(err, errlen, "line %d: %s", le.line, msg);
            goto fail;
        }
    }
    spec_merge(spec, tmp);
    json_decref(tmp);
    return 0;
fail:
    json_decref(tmp);
    return -EINVAL;
}

void spec_merge(json_t *base, const json_t *over)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)over, key, v) {
        json_t *b = json_object_get(base, key);
        if ((!strcmp(key, "env") || !strcmp(key, "labels") || !strcmp(key, "selectors")) &&
            json_is_object(b) && json_is_object(v))
            json_object_update(b, v);
        else
            json_object_set(base, key, v);
    }
}

int spec_finish(json_t *spec, char *err, size_t errlen)
{
    json_t *total = json_object_get(spec, "__gpus_total");
    int64_t nodes = json_integer_value(json_object_get(spec, "nodes"));
    int64_t t;

    if (!total)
        return 0;
    t = json_integer_value(total);
    if (nodes < 1)
        nodes = 1;
    if (!json_object_get(spec, "gpus")) {
        if (t % nodes || t / nodes > MAX_GPUS_PER_NODE) {
            snprintf(err, errlen,
                     "--gpus=%lld does not spread evenly over %lld nodes; use "
                     "--gpus-per-node",
                     (long long)t, (long long)nodes);
            return -EINVAL;
        }
        json_object_set_new(spec, "gpus", json_integer(t / nodes));
    }
    json_object_del(spec, "__gpus_total");
    return 0;
}
