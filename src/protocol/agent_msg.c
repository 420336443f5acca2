/*
 * agent_msg.c - parse and build the agent API's JSON (docs/api.md "Agent endpoints"):
 * start/signal/kill commands, register, heartbeat, events and log chunks. Every field from
 * outside is checked for type and range and unknown fields are refused by name.
 */
#define _POSIX_C_SOURCE 200809L
#include "protocol/agent_msg.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/container.h"
#include "protocol/proto.h"
#include "util/base64.h"
#include "util/str.h"

static int bad(struct proto_error *err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Bad input: status 400, -EINVAL. */
static int bad(struct proto_error *err, const char *field, const char *fmt, ...)
{
    char msg[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return proto_errorf(err, 400, NULL, field, "%s", msg);
}

/* Out of memory: status 500, -ENOMEM. */
static int oom(struct proto_error *err)
{
    proto_errorf(err, 500, NULL, NULL, "out of memory");
    return -ENOMEM;
}

static bool in_list(const char *key, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(key, *list) == 0)
            return true;
    return false;
}

static int check_fields(const json_t *obj, const char *const *allowed, const char *prefix,
                        struct proto_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (!in_list(key, allowed)) {
            char f[128];
            snprintf(f, sizeof f, "%s%s", prefix, key);
            return bad(err, f, "unknown field '%s'", f);
        }
    }
    return 0;
}

/* Optional string copied into buf; NULL/absent leaves "". */
static int get_str(const json_t *obj, const char *key, const char *prefix, char *buf, size_t len,
                   bool required, struct proto_error *err)
{
    json_t *v = json_object_get(obj, key);
    char f[128];
    snprintf(f, sizeof f, "%s%s", prefix, key);
    if (!v || json_is_null(v)) {
        buf[0] = '\0';
        return required ? bad(err, f, "missing field '%s'", f) : 0;
    }
    if (!json_is_string(v))
        return bad(err, f, "'%s' must be a string", f);
    const char *s = json_string_value(v);
    if (strlen(s) >= len || strlen(s) != json_string_length(v))
        return bad(err, f, "'%s' is too long or holds a NUL byte", f);
    memcpy(buf, s, strlen(s) + 1);
    return 0;
}

static int get_int(const json_t *obj, const char *key, const char *prefix, int64_t min, int64_t max,
                   int64_t *out, bool required, struct proto_error *err)
{
    json_t *v = json_object_get(obj, key);
    char f[128];
    snprintf(f, sizeof f, "%s%s", prefix, key);
    if (!v || json_is_null(v))
        return required ? bad(err, f, "missing field '%s'", f) : 0;
    if (!json_is_integer(v))
        return bad(err, f, "'%s' must be an integer", f);
    json_int_t x = json_integer_value(v);
    if (x < min || x > max)
        return bad(err, f, "'%s' is out of range (%lld..%lld)", f, (long long)min, (long long)max);
    *out = x;
    return 0;
}

/* An optional string duplicated (NULL when absent or null). */
static int get_dup(const json_t *obj, const char *key, size_t max, char **out,
                   struct proto_error *err)
{
    json_t *v = json_object_get(obj, key);
    char f[128];
    snprintf(f, sizeof f, "job.%s", key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return bad(err, f, "'%s' must be a string", f);
    if (json_string_length(v) > max || strlen(json_string_value(v)) != json_string_length(v))
        return bad(err, f, "'%s' is too long or holds a NUL byte", f);
    *out = strdup(json_string_value(v));
    return *out ? 0 : -ENOMEM;
}

static void free_vec(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

void agent_job_init(struct agent_job *j)
{
    memset(j, 0, sizeof *j);
    j->grace_ms = 0;
    j->slurm.signal_before = -1;
}

void agent_job_release(struct agent_job *j)
{
    free_vec(j->argv);
    free_vec(j->env);
    for (char **p = j->secret_env; p && *p; p++) /* wiped, not just freed */
        memset(*p, 0, strlen(*p));
    free_vec(j->secret_env);
    free_vec(j->nodelist);
    free(j->script);
    free(j->workdir);
    free(j->output);
    free(j->error);
    free(j->slurm.submit_dir);
    free_vec(j->slurm.step_hosts);
    free_vec(j->slurm.args);
    free_vec(j->modules);
    free(j->setup);
    free(j->prepare);
    if (j->net)
        net_job_release(j->net);
    free(j->net);
    proto_probe_release(&j->liveness);
    proto_probe_release(&j->readiness);
    free(j->container.image);
    free_vec(j->container.mounts);
    free(j->container.workdir);
    agent_job_init(j);
}

static bool env_key_ok(const char *k)
{
    if (!*k || (*k >= '0' && *k <= '9'))
        return false;
    for (; *k; k++)
        if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') ||
              *k == '_'))
            return false;
    return true;
}

static int parse_argv(const json_t *v, struct agent_job *j, struct proto_error *err)
{
    if (!json_is_array(v))
        return bad(err, "job.command", "'job.command' must be an array of strings");
    size_t n = json_array_size(v);
    if (n == 0 || n > AGENT_MAX_ARGS)
        return bad(err, "job.command", "'job.command' must hold 1..%d strings", AGENT_MAX_ARGS);
    j->argv = calloc(n + 1, sizeof *j->argv);
    if (!j->argv)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(v, i);
        char f[64];
        snprintf(f, sizeof f, "job.command[%zu]", i);
        if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a))
            return bad(err, f, "'%s' must be a string without NUL bytes", f);
        if (!(j->argv[i] = strdup(json_string_value(a))))
            return -ENOMEM;
        j->argc++;
    }
    return 0;
}

/* An object of strings into a "KEY=VALUE" vector (env and secret_env). */
static int parse_kv(const json_t *v, const char *field, char ***out, int *count,
                    struct proto_error *err)
{
    size_t n = v && !json_is_null(v) ? json_object_size(v) : 0;
    if (v && !json_is_null(v) && !json_is_object(v))
        return bad(err, field, "'%s' must be an object of strings", field);
    if (n > AGENT_MAX_ENV)
        return bad(err, field, "'%s' has more than %d variables", field, AGENT_MAX_ENV);
    char **vec = *out = calloc(n + 1, sizeof *vec);
    if (!vec)
        return -ENOMEM;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val) {
        char f[160];
        snprintf(f, sizeof f, "%s.%.100s", field, key);
        if (!env_key_ok(key) && !proto_exported_function_name(key))
            return bad(err, f, "bad variable name '%.100s'", key);
        if (!json_is_string(val) || strlen(json_string_value(val)) != json_string_length(val))
            return bad(err, f, "'%s' must be a string without NUL bytes", f);
        size_t len = strlen(key) + 1 + json_string_length(val) + 1;
        char *kv = malloc(len);
        if (!kv)
            return -ENOMEM;
        snprintf(kv, len, "%s=%s", key, json_string_value(val));
        vec[(*count)++] = kv;
    }
    return 0;
}

static int parse_env(const json_t *v, struct agent_job *j, struct proto_error *err)
{
    return parse_kv(v, "job.env", &j->env, &j->nenv, err);
}

int agent_job_parse_secret_env(const json_t *v, struct agent_job *j, struct proto_error *err)
{
    for (char **p = j->secret_env; p && *p; p++)
        memset(*p, 0, strlen(*p));
    free_vec(j->secret_env);
    j->secret_env = NULL;
    j->nsecret = 0;
    if (!v || json_is_null(v))
        return 0;
    return parse_kv(v, "job.secret_env", &j->secret_env, &j->nsecret, err);
}

static int parse_gpus(const json_t *v, struct agent_job *j, struct proto_error *err)
{
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v) || json_array_size(v) > AGENT_MAX_GPUS)
        return bad(err, "job.gpus", "'job.gpus' must be an array of at most %d indices",
                   AGENT_MAX_GPUS);
    uint64_t seen = 0;
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *g = json_array_get(v, i);
        char f[32];
        snprintf(f, sizeof f, "job.gpus[%zu]", i);
        if (!json_is_integer(g) || json_integer_value(g) < 0 ||
            json_integer_value(g) >= AGENT_MAX_GPUS)
            return bad(err, f, "'%s' must be a GPU index 0..%d", f, AGENT_MAX_GPUS - 1);
        int idx = (int)json_integer_value(g);
        if (seen & (1ULL << idx))
            return bad(err, f, "GPU %d is listed twice", idx);
        seen |= 1ULL << idx;
        j->gpus[j->ngpus++] = idx;
    }
    return 0;
}

static bool node_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= 256)
        return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '-' || *s == '_' || *s == ':'))
            return false;
    return true;
}

static int parse_nodelist(const json_t *v, struct agent_job *j, struct proto_error *err)
{
    size_t n = v && !json_is_null(v) ? json_array_size(v) : 0;
    if (v && !json_is_null(v) && !json_is_array(v))
        return bad(err, "job.nodelist", "'job.nodelist' must be an array of node names");
    if (n > AGENT_MAX_NODES)
        return bad(err, "job.nodelist", "'job.nodelist' has more than %d nodes", AGENT_MAX_NODES);
    j->nodelist = calloc(n + 1, sizeof *j->nodelist);
    if (!j->nodelist)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(v, i);
        char f[40];
        snprintf(f, sizeof f, "job.nodelist[%zu]", i);
        if (!json_is_string(a) || !node_name_ok(json_string_value(a)))
            return bad(err, f, "'%s' must be a node name", f);
        if (!(j->nodelist[i] = strdup(json_string_value(a))))
            return -ENOMEM;
        j->nnodes++;
    }
    return 0;
}

static bool user_name_ok(const char *s)
{
    if (!*s)
        return true;
    if (*s == '-')
        return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '-' || *s == '_' || *s == '$'))
            return false;
    return true;
}

/* "tty": {"idle_ms": N}, an interactive session (docs/interactive.md) */
static int parse_tty(const json_t *v, struct agent_job *j, struct proto_error *err)
{
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return bad(err, "job.tty", "'job.tty' must be an object");
    static const char *const known[] = {"idle_ms", NULL};
    int rc = check_fields(v, known, "job.tty.", err);
    if (rc == 0)
        rc = get_int(v, "idle_ms", "job.tty.", 1000, INT64_MAX / 2, &j->tty_idle_ms, true, err);
    return rc;
}

/* "service": {"port": BOOL, "liveness": PROBE, "readiness": PROBE}, a service's replica */
static int parse_service(const json_t *v, struct agent_job *j, struct proto_error *err)
{
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return bad(err, "job.service", "'job.service' must be an object");
    static const char *const known[] = {"port", "liveness", "readiness", NULL};
    int rc = check_fields(v, known, "job.service.", err);
    const json_t *port = json_object_get(v, "port"), *p;
    if (rc == 0 && port)
        rc = proto_get_bool(port, "job.service.port", &j->service_port, err);
    if (rc == 0 && (p = json_object_get(v, "liveness")))
        rc = proto_probe_parse(p, "job.service.liveness", &j->liveness, err);
    if (rc == 0 && (p = json_object_get(v, "readiness")))
        rc = proto_probe_parse(p, "job.service.readiness", &j->readiness, err);
    j->service = rc == 0;
    return rc;
}

static const char *const job_fields[] = {
    "id",       "name",        "project",    "tier",          "class",       "user",
    "command",  "script",      "workdir",    "output",        "error",       "env",
    "gpus",     "cpus",        "mem_mb",     "time_limit_ms", "signal",      "grace_ms",
    "nodelist", "node_rank",   "world_size", "master_addr",   "master_port", "array_index",
    "run",      "pids_max",    "secret_env", "array_id",      "slurm",       "lease_ms",
    "tty",      "environment", "network",    "service",       "container",   NULL};

static int parse_scalars(const json_t *o, struct agent_job *j, struct proto_error *err)
{
    int64_t x = 0;
    int rc;
    if ((rc = get_int(o, "id", "job.", 1, INT64_MAX, &x, true, err)) < 0)
        return rc;
    j->id = (uint64_t)x;
    if ((rc = get_str(o, "name", "job.", j->name, sizeof j->name, false, err)) < 0 ||
        (rc = get_str(o, "project", "job.", j->project, sizeof j->project, false, err)) < 0 ||
        (rc = get_str(o, "tier", "job.", j->tier, sizeof j->tier, false, err)) < 0 ||
        (rc = get_str(o, "class", "job.", j->class_name, sizeof j->class_name, false, err)) < 0 ||
        (rc = get_str(o, "user", "job.", j->user, sizeof j->user, false, err)) < 0 ||
        (rc = get_str(o, "master_addr", "job.", j->master_addr, sizeof j->master_addr, false,
                      err)) < 0)
        return rc;
    if (!user_name_ok(j->user))
        return bad(err, "job.user", "bad user name '%s'", j->user);
    struct {
        const char *k;
        int64_t min, max;
        int64_t *dst64;
        int *dst;
    } ints[] = {
        {"cpus", 0, AGENT_MAX_CPUS, NULL, &j->cpus},
        {"mem_mb", 0, (int64_t)64 << 20, &j->mem_mb, NULL},
        {"time_limit_ms", 0, (int64_t)400 * 86400 * 1000, &j->time_limit_ms, NULL},
        {"signal", 0, 64, NULL, &j->signal},
        {"grace_ms", 0, (int64_t)7 * 86400 * 1000, &j->grace_ms, NULL},
        {"node_rank", 0, AGENT_MAX_NODES - 1, NULL, &j->node_rank},
        {"world_size", 0, AGENT_MAX_NODES, NULL, &j->world_size},
        {"master_port", 0, 65535, NULL, &j->master_port},
        {"array_index", 0, 100000000, NULL, &j->array_index},
        {"run", 0, INT32_MAX, NULL, &j->run},
        {"pids_max", 0, (int64_t)1 << 32, &j->pids_max, NULL},
        {"lease_ms", 0, AGENT_LEASE_MAX_MS, &j->lease_ms, NULL},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        x = 0;
        if ((rc = get_int(o, ints[i].k, "job.", ints[i].min, ints[i].max, &x, false, err)) < 0)
            return rc;
        if (ints[i].dst64)
            *ints[i].dst64 = x;
        else
            *ints[i].dst = (int)x;
    }
    return 0;
}

/* job.slurm.args: the batch script's arguments, strings without NUL bytes. */
static int parse_script_args(const json_t *v, struct agent_job *j, struct proto_error *err)
{
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v) || json_array_size(v) > AGENT_MAX_ARGS)
        return bad(err, "job.slurm.args", "'job.slurm.args' must be an array of strings");
    j->slurm.args = calloc(json_array_size(v) + 1, sizeof(char *));
    if (!j->slurm.args)
        return -ENOMEM;
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *a = json_array_get(v, i);
        if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a))
            return bad(err, "job.slurm.args", "'job.slurm.args[%zu]' must be a string", i);
        if (!(j->slurm.args[i] = strdup(json_string_value(a))))
            return -ENOMEM;
    }
    return 0;
}

static int parse_slurm(const json_t *o, struct agent_job *j, struct proto_error *err)
{
    static const char *const fields[] = {"ntasks",
                                         "ntasks_per_node",
                                         "cpus_per_task",
                                         "gpus_per_task",
                                         "signal_before",
                                         "signal_batch",
                                         "submit_dir",
                                         "signal",
                                         "step_key",
                                         "step_hosts",
                                         "args",
                                         "partition",
                                         NULL};
    struct {
        const char *k;
        int64_t min, max;
        int *dst;
    } ints[] = {
        {"ntasks", 1, 100000, &j->slurm.ntasks},
        {"ntasks_per_node", 1, 100000, &j->slurm.ntasks_per_node},
        {"cpus_per_task", 1, 100000, &j->slurm.cpus_per_task},
        {"gpus_per_task", 0, AGENT_MAX_GPUS, &j->slurm.gpus_per_task},
        {"signal_before", 0, 65535, &j->slurm.signal_before},
        {"signal", 0, 64, &j->slurm.signal},
    };
    if (!o || json_is_null(o))
        return 0;
    if (!json_is_object(o))
        return bad(err, "job.slurm", "'job.slurm' must be an object");
    int rc = check_fields(o, fields, "job.slurm.", err);
    if (rc < 0)
        return rc;
    j->slurm.on = true;
    j->slurm.ntasks = j->slurm.ntasks_per_node = j->slurm.cpus_per_task = 1;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int64_t x = *ints[i].dst;
        if ((rc = get_int(o, ints[i].k, "job.slurm.", ints[i].min, ints[i].max, &x, false, err)) <
            0)
            return rc;
        *ints[i].dst = (int)x;
    }
    json_t *b = json_object_get(o, "signal_batch");
    if (b && !json_is_boolean(b))
        return bad(err, "job.slurm.signal_batch", "'job.slurm.signal_batch' must be a boolean");
    j->slurm.signal_batch = json_is_true(b);
    json_t *d = json_object_get(o, "submit_dir");
    if (d && (!json_is_string(d) || json_string_length(d) > 4096 ||
              strlen(json_string_value(d)) != json_string_length(d)))
        return bad(err, "job.slurm.submit_dir", "'job.slurm.submit_dir' must be a path");
    if (d && !(j->slurm.submit_dir = strdup(json_string_value(d))))
        return -ENOMEM;
    if ((rc = get_str(o, "step_key", "job.slurm.", j->slurm.step_key, sizeof j->slurm.step_key,
                      false, err)) < 0)
        return rc;
    if ((rc = get_str(o, "partition", "job.slurm.", j->slurm.partition, sizeof j->slurm.partition,
                      false, err)) < 0)
        return rc;
    if ((rc = parse_script_args(json_object_get(o, "args"), j, err)) < 0)
        return rc;
    json_t *h = json_object_get(o, "step_hosts");
    if (!h)
        return 0;
    if (!json_is_array(h) || json_array_size(h) > AGENT_MAX_NODES)
        return bad(err, "job.slurm.step_hosts", "'job.slurm.step_hosts' must be an array");
    j->slurm.step_hosts = calloc(json_array_size(h) + 1, sizeof(char *));
    if (!j->slurm.step_hosts)
        return -ENOMEM;
    for (size_t i = 0; i < json_array_size(h); i++) {
        json_t *x = json_array_get(h, i);
        if (!json_is_string(x) || json_string_length(x) > 300 ||
            strlen(json_string_value(x)) != json_string_length(x) ||
            strpbrk(json_string_value(x), ", \t\n"))
            return bad(err, "job.slurm.step_hosts",
                       "'job.slurm.step_hosts[%zu]' must be an address", i);
        if (!(j->slurm.step_hosts[i] = strdup(json_string_value(x))))
            return -ENOMEM;
        j->slurm.nstep_hosts++;
    }
    return 0;
}

/* A module name goes into a `module load` line of a shell script: one word of the
 * characters module names use (protocol/templates.c holds docketd to the same). */
static bool module_name_ok(const char *s)
{
    if (!*s || *s == '-' || strlen(s) > 128)
        return false;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              strchr("._+-/@", *s)))
            return false;
    return true;
}

/* NAME@VERSION: a directory's name under the agent's state directory, so only a name's
 * characters, one '@' and digits. */
static bool env_key_name_ok(const char *s)
{
    const char *at = strchr(s, '@');
    if (!at || at == s || *s == '.' || !at[1] || strspn(at + 1, "0123456789") != strlen(at + 1))
        return false;
    for (const char *p = s; p < at; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              strchr("._-", *p)))
            return false;
    return true;
}

/* "environment": {"modules": [NAME...], "setup": TEXT|null, "template": "NAME@VERSION",
 * "prepare": TEXT}, the job's template's (prepare needs template, its key on the node). */
static int parse_environment(const json_t *v, struct agent_job *j, struct proto_error *err)
{
    static const char *const fields[] = {"modules", "setup", "template", "prepare", NULL};
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return bad(err, "job.environment", "'job.environment' must be an object");
    int rc = check_fields(v, fields, "job.environment.", err);
    if (rc < 0 || (rc = get_dup(v, "setup", 64 * 1024, &j->setup, err)) < 0 ||
        (rc = get_dup(v, "prepare", 64 * 1024, &j->prepare, err)) < 0 ||
        (rc = get_str(v, "template", "job.environment.", j->env_key, sizeof j->env_key, false,
                      err)) < 0)
        return rc;
    if ((j->prepare || j->env_key[0]) && !env_key_name_ok(j->env_key))
        return bad(err, "job.environment.template",
                   "'job.environment.template' must be NAME@VERSION with a prepare script");
    const json_t *m = json_object_get(v, "modules");
    if (!m || json_is_null(m))
        return 0;
    if (!json_is_array(m) || json_array_size(m) > 64)
        return bad(err, "job.environment.modules",
                   "'job.environment.modules' must be a list of at most 64 names");
    j->modules = calloc(json_array_size(m) + 1, sizeof *j->modules);
    if (!j->modules)
        return -ENOMEM;
    for (size_t i = 0; i < json_array_size(m); i++) {
        const json_t *x = json_array_get(m, i);
        if (!json_is_string(x) || strlen(json_string_value(x)) != json_string_length(x) ||
            !module_name_ok(json_string_value(x)))
            return bad(err, "job.environment.modules",
                       "'job.environment.modules[%zu]' is not a module name", i);
        if (!(j->modules[i] = strdup(json_string_value(x))))
            return -ENOMEM;
        j->nmodules++;
    }
    return 0;
}

/* "network": the job's network boundary (protocol/network.h); absent or null = none. */
static int parse_network(const json_t *v, struct agent_job *j, struct proto_error *err)
{
    if (!v || json_is_null(v))
        return 0;
    if (!(j->net = calloc(1, sizeof *j->net)))
        return -ENOMEM;
    return net_job_parse(v, j->net, err);
}

/* "container": {"image": REF, "mounts": ["SRC:DST[:ro]"...], "workdir": PATH|null,
 * "registry_auth": NAME|absent (its value comes in secret_env)}, each
 * read by protocol/container.c. */
static int parse_container(const json_t *v, struct agent_job *j, struct proto_error *err)
{
    static const char *const fields[] = {"image", "mounts", "workdir", "registry_auth", NULL};
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return bad(err, "job.container", "'job.container' must be an object");
    struct proto_image_ref ref;
    int rc = check_fields(v, fields, "job.container.", err);
    const json_t *image = json_object_get(v, "image");
    if (rc < 0)
        return rc;
    if (!json_is_string(image) || strlen(json_string_value(image)) != json_string_length(image))
        return bad(err, "job.container.image", "'job.container.image' must be a string");
    const json_t *auth = json_object_get(v, "registry_auth"); /* its value is in secret_env */
    if (auth && !json_is_null(auth) &&
        (!json_is_string(auth) || !proto_secret_name_ok(json_string_value(auth))))
        return bad(err, "job.container.registry_auth",
                   "'job.container.registry_auth' must be a secret's name");
    if ((rc = proto_image_ref_parse(json_string_value(image), "job.container.image", &ref, err)) <
        0)
        return rc;
    const json_t *wd = json_object_get(v, "workdir");
    if (wd && !json_is_null(wd) &&
        (!json_is_string(wd) || !proto_container_path_ok(json_string_value(wd))))
        return bad(err, "job.container.workdir",
                   "'job.container.workdir' must be an absolute path");
    json_t *mounts = json_array();
    const json_t *m = json_object_get(v, "mounts");
    if (m && !json_is_null(m) &&
        (rc = proto_mounts_parse(m, "job.container.mounts", mounts, err)) < 0) {
        json_decref(mounts);
        return rc;
    }
    j->container.mounts = calloc(json_array_size(mounts) + 1, sizeof *j->container.mounts);
    j->container.image = strdup(json_string_value(image));
    if (wd && json_is_string(wd))
        j->container.workdir = strdup(json_string_value(wd));
    for (size_t i = 0; j->container.mounts && i < json_array_size(mounts); i++)
        if ((j->container.mounts[i] = strdup(json_string_value(json_array_get(mounts, i)))))
            j->container.nmounts++;
    size_t n = json_array_size(mounts);
    json_decref(mounts);
    if (!j->container.mounts || !j->container.image || (size_t)j->container.nmounts != n ||
        (wd && json_is_string(wd) && !j->container.workdir))
        return -ENOMEM;
    return 0;
}

int agent_job_parse(const json_t *o, struct agent_job *j, struct proto_error *err)
{
    agent_job_init(j);
    int rc;
    if (!json_is_object(o)) {
        rc = bad(err, "job", "'job' must be an object");
        goto out;
    }
    if ((rc = check_fields(o, job_fields, "job.", err)) < 0 || (rc = parse_scalars(o, j, err)) < 0)
        goto out;
    json_t *cmd = json_object_get(o, "command");
    if ((rc = get_dup(o, "script", 256 * 1024, &j->script, err)) < 0)
        goto out;
    bool has_cmd = cmd && !json_is_null(cmd);
    if (has_cmd == (j->script != NULL)) {
        rc = bad(err, "job.command", "exactly one of 'job.command' and 'job.script' is required");
        goto out;
    }
    if (has_cmd && (rc = parse_argv(cmd, j, err)) < 0)
        goto out;
    if ((rc = get_dup(o, "workdir", 4096, &j->workdir, err)) < 0 ||
        (rc = get_dup(o, "output", 4096, &j->output, err)) < 0 ||
        (rc = get_dup(o, "error", 4096, &j->error, err)) < 0 ||
        (rc = parse_env(json_object_get(o, "env"), j, err)) < 0 ||
        (rc = agent_job_parse_secret_env(json_object_get(o, "secret_env"), j, err)) < 0 ||
        (rc = parse_gpus(json_object_get(o, "gpus"), j, err)) < 0 ||
        (rc = parse_nodelist(json_object_get(o, "nodelist"), j, err)) < 0 ||
        (rc = parse_slurm(json_object_get(o, "slurm"), j, err)) < 0 ||
        (rc = parse_environment(json_object_get(o, "environment"), j, err)) < 0 ||
        (rc = parse_network(json_object_get(o, "network"), j, err)) < 0 ||
        (rc = parse_container(json_object_get(o, "container"), j, err)) < 0)
        goto out;
    int64_t aid = 0;
    if ((rc = get_int(o, "array_id", "job.", 0, INT64_MAX, &aid, false, err)) < 0 ||
        (rc = parse_tty(json_object_get(o, "tty"), j, err)) < 0 ||
        (rc = parse_service(json_object_get(o, "service"), j, err)) < 0)
        goto out;
    j->array_id = (uint64_t)aid;
    if (j->world_size > 0 && j->node_rank >= j->world_size) {
        rc = bad(err, "job.node_rank", "'job.node_rank' %d is not below 'job.world_size' %d",
                 j->node_rank, j->world_size);
        goto out;
    }
    return 0;
out:
    if (rc == -ENOMEM)
        oom(err);
    agent_job_release(j);
    return rc;
}

static json_t *vec_json(char **v, bool env)
{
    json_t *out = env ? json_object() : json_array();
    for (char **p = v; p && *p; p++) {
        if (env) {
            char *eq = strchr(*p, '=');
            if (!eq)
                continue;
            char key[256];
            size_t kl = (size_t)(eq - *p) < sizeof key - 1 ? (size_t)(eq - *p) : sizeof key - 1;
            memcpy(key, *p, kl);
            key[kl] = '\0';
            json_object_set_new(out, key, json_string(eq + 1));
        } else {
            json_array_append_new(out, json_string(*p));
        }
    }
    return out;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static void slurm_to_json(const struct agent_job *j, json_t *o)
{
    if (!o)
        return;
    if (j->array_id)
        json_object_set_new(o, "array_id", json_integer((json_int_t)j->array_id));
    if (!j->slurm.on)
        return;
    json_t *s =
        json_pack("{s:i,s:i,s:i,s:i,s:b}", "ntasks", j->slurm.ntasks, "ntasks_per_node",
                  j->slurm.ntasks_per_node, "cpus_per_task", j->slurm.cpus_per_task,
                  "gpus_per_task", j->slurm.gpus_per_task, "signal_batch", j->slurm.signal_batch);
    if (s && j->slurm.signal_before >= 0) {
        json_object_set_new(s, "signal_before", json_integer(j->slurm.signal_before));
        json_object_set_new(s, "signal", json_integer(j->slurm.signal));
    }
    if (s && j->slurm.submit_dir)
        json_object_set_new(s, "submit_dir", json_string(j->slurm.submit_dir));
    if (s && j->slurm.step_key[0])
        json_object_set_new(s, "step_key", json_string(j->slurm.step_key));
    if (s && j->slurm.step_hosts)
        json_object_set_new(s, "step_hosts", vec_json(j->slurm.step_hosts, false));
    if (s && j->slurm.args)
        json_object_set_new(s, "args", vec_json(j->slurm.args, false));
    if (s && j->slurm.partition[0])
        json_object_set_new(s, "partition", json_string(j->slurm.partition));
    json_object_set_new(o, "slurm", s);
}

json_t *agent_job_secret_env_json(const struct agent_job *j)
{
    return vec_json(j->secret_env, true);
}

/* Everything but secret_env: this is what the agent writes to disk (job.json). */
json_t *agent_job_to_json(const struct agent_job *j)
{
    json_t *gpus = json_array();
    for (int i = 0; i < j->ngpus; i++)
        json_array_append_new(gpus, json_integer(j->gpus[i]));
    json_t *o = json_pack(
        "{s:I, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:I,"
        " s:I, s:i, s:I, s:o, s:i, s:i, s:s, s:i, s:i, s:i, s:I, s:I}",
        "id", (json_int_t)j->id, "name", j->name, "project", j->project, "tier", j->tier, "class",
        j->class_name, "user", j->user, "command", j->argv ? vec_json(j->argv, false) : json_null(),
        "script", str_or_null(j->script), "workdir", str_or_null(j->workdir), "output",
        str_or_null(j->output), "error", str_or_null(j->error), "env", vec_json(j->env, true),
        "gpus", gpus, "cpus", j->cpus, "mem_mb", (json_int_t)j->mem_mb, "time_limit_ms",
        (json_int_t)j->time_limit_ms, "signal", j->signal, "grace_ms", (json_int_t)j->grace_ms,
        "nodelist", vec_json(j->nodelist, false), "node_rank", j->node_rank, "world_size",
        j->world_size, "master_addr", j->master_addr, "master_port", j->master_port, "array_index",
        j->array_index, "run", j->run, "pids_max", (json_int_t)j->pids_max, "lease_ms",
        (json_int_t)j->lease_ms);
    slurm_to_json(j, o);
    if (o && j->tty_idle_ms > 0)
        json_object_set_new(o, "tty", json_pack("{s:I}", "idle_ms", (json_int_t)j->tty_idle_ms));
    if (o && (j->modules || j->setup || j->prepare)) {
        json_t *e = json_pack("{s:o,s:o}", "modules", vec_json(j->modules, false), "setup",
                              str_or_null(j->setup));
        if (e && j->prepare) {
            json_object_set_new(e, "template", json_string(j->env_key));
            json_object_set_new(e, "prepare", json_string(j->prepare));
        }
        json_object_set_new(o, "environment", e);
    }
    if (o && j->net)
        json_object_set_new(o, "network", net_job_json(j->net));
    if (o && j->service) {
        json_t *sv = json_pack("{s:b}", "port", j->service_port), *p;
        if (sv && (p = proto_probe_to_json(&j->liveness)))
            json_object_set_new(sv, "liveness", p);
        if (sv && (p = proto_probe_to_json(&j->readiness)))
            json_object_set_new(sv, "readiness", p);
        json_object_set_new(o, "service", sv);
    }
    if (o && j->container.image)
        json_object_set_new(o, "container",
                            json_pack("{s:s,s:o,s:o}", "image", j->container.image, "mounts",
                                      vec_json(j->container.mounts, false), "workdir",
                                      str_or_null(j->container.workdir)));
    return o;
}

/* ---------------------------------------------------------------------------------- */
/* Commands                                                                            */

static const char *const start_fields[] = {"seq", "type", "job", NULL};
static const char *const signal_fields[] = {"seq", "type", "job", "signal", "grace_ms", NULL};
static const char *const step_host_fields[] = {"seq", "type", "job", "rank", "addr", NULL};
static const char *const notify_fields[] = {"seq", "type", "job", "signal", "to", NULL};
static const char *const limit_fields[] = {"seq", "type", "job", "time_limit_ms", NULL};
static const char *const notify_names[] = {"all", "batch", "steps"};

/* A notify command's signal and whom it is for. */
static int parse_notify(const json_t *o, const char *p, struct agent_cmd *c,
                        struct proto_error *err)
{
    int64_t x = 0;
    char to[16] = "all", f[80];
    int rc;
    if ((rc = get_int(o, "signal", p, 1, 64, &x, true, err)) < 0 ||
        (rc = get_str(o, "to", p, to, sizeof to, false, err)) < 0)
        return rc;
    c->signal = (int)x;
    for (c->notify_to = 0; c->notify_to < 3; c->notify_to++)
        if (!strcmp(to, notify_names[c->notify_to]))
            return 0;
    snprintf(f, sizeof f, "%sto", p);
    return bad(err, f, "'%s' must be all, batch or steps", f);
}

/* A step_host command's rank and "HOST:PORT" (no separators a file line could split). */
static int parse_step_host(const json_t *o, const char *p, struct agent_cmd *c,
                           struct proto_error *err)
{
    int64_t rank = 0;
    int rc;
    if ((rc = get_int(o, "rank", p, 1, AGENT_MAX_NODES - 1, &rank, true, err)) < 0 ||
        (rc = get_str(o, "addr", p, c->addr, sizeof c->addr, true, err)) < 0)
        return rc;
    c->rank = (int)rank;
    const char *colon = strrchr(c->addr, ':');
    char f[80];
    snprintf(f, sizeof f, "%saddr", p);
    if (!colon || colon == c->addr || strpbrk(c->addr, ", \t\n\r") ||
        strspn(colon + 1, "0123456789") != strlen(colon + 1) || !colon[1] || atoi(colon + 1) < 1 ||
        atoi(colon + 1) > 65535 || strlen(colon + 1) > 5)
        return bad(err, f, "'%s' must be HOST:PORT", f);
    return 0;
}

static int parse_cmd(const json_t *o, size_t i, struct agent_cmd *c, struct proto_error *err)
{
    char p[48];
    snprintf(p, sizeof p, "commands[%zu].", i);
    if (!json_is_object(o)) {
        char f[40];
        snprintf(f, sizeof f, "commands[%zu]", i);
        return bad(err, f, "'%s' must be an object", f);
    }
    char type[16];
    int64_t x = 0;
    int rc;
    if ((rc = get_int(o, "seq", p, 1, INT64_MAX, &c->seq, true, err)) < 0 ||
        (rc = get_str(o, "type", p, type, sizeof type, true, err)) < 0)
        return rc;
    char f[80];
    snprintf(f, sizeof f, "%sjob", p);
    if (strcmp(type, "start") == 0) {
        c->type = AGENT_CMD_START;
        if ((rc = check_fields(o, start_fields, p, err)) < 0)
            return rc;
        json_t *job = json_object_get(o, "job");
        if (!json_is_object(job))
            return bad(err, f, "'%s' must be an object", f);
        json_t *id = json_object_get(job, "id");
        if (!json_is_integer(id) || json_integer_value(id) < 1)
            return bad(err, f, "'%s.id' must be a positive integer", f);
        c->job_id = (uint64_t)json_integer_value(id);
        c->job = json_incref(job);
        return 0;
    }
    if (strcmp(type, "signal") == 0)
        c->type = AGENT_CMD_SIGNAL;
    else if (strcmp(type, "kill") == 0)
        c->type = AGENT_CMD_KILL;
    else if (strcmp(type, "step_host") == 0)
        c->type = AGENT_CMD_STEP_HOST;
    else if (strcmp(type, "notify") == 0)
        c->type = AGENT_CMD_NOTIFY;
    else if (strcmp(type, "limit") == 0)
        c->type = AGENT_CMD_LIMIT;
    else
        return bad(err, f, "unknown command type '%s'", type);
    const char *const *fields = c->type == AGENT_CMD_SIGNAL      ? signal_fields
                                : c->type == AGENT_CMD_STEP_HOST ? step_host_fields
                                : c->type == AGENT_CMD_NOTIFY    ? notify_fields
                                : c->type == AGENT_CMD_LIMIT     ? limit_fields
                                                                 : start_fields;
    if ((rc = check_fields(o, fields, p, err)) < 0 ||
        (rc = get_int(o, "job", p, 1, INT64_MAX, &x, true, err)) < 0)
        return rc;
    c->job_id = (uint64_t)x;
    if (c->type == AGENT_CMD_STEP_HOST)
        return parse_step_host(o, p, c, err);
    if (c->type == AGENT_CMD_NOTIFY)
        return parse_notify(o, p, c, err);
    if (c->type == AGENT_CMD_LIMIT)
        return get_int(o, "time_limit_ms", p, 1, (int64_t)366 * 86400 * 1000, &c->time_limit_ms,
                       true, err);
    if (c->type == AGENT_CMD_SIGNAL) {
        x = 15;
        if ((rc = get_int(o, "signal", p, 1, 64, &x, true, err)) < 0)
            return rc;
        c->signal = (int)x;
        if ((rc = get_int(o, "grace_ms", p, 0, (int64_t)7 * 86400 * 1000, &c->grace_ms, false,
                          err)) < 0)
            return rc;
    }
    return 0;
}

void agent_heartbeat_reply_release(struct agent_heartbeat_reply *r)
{
    for (size_t i = 0; i < r->ncmds; i++)
        json_decref(r->cmds[i].job);
    free(r->cmds);
    if (r->storage)
        storage_config_release(r->storage);
    free(r->storage);
    free(r->lifecycle);
    warm_orders_free(r->warm, r->nwarm);
    memset(r, 0, sizeof *r);
}

int agent_heartbeat_reply_parse(const json_t *body, struct agent_heartbeat_reply *out,
                                struct proto_error *err)
{
    static const char *const fields[] = {"commands",  "node_state", "storage",
                                         "lifecycle", "warm",       NULL};
    memset(out, 0, sizeof *out);
    if (!json_is_object(body))
        return bad(err, "", "heartbeat reply must be an object");
    int rc = check_fields(body, fields, "", err);
    if (rc < 0 || (rc = get_str(body, "node_state", "", out->node_state, sizeof out->node_state,
                                false, err)) < 0)
        return rc;
    json_t *st = json_object_get(body, "storage");
    if (st) {
        out->storage = calloc(1, sizeof *out->storage);
        if (!out->storage)
            return oom(err);
        if ((rc = storage_config_parse(st, out->storage, err)) < 0) {
            agent_heartbeat_reply_release(out);
            return rc;
        }
    }
    json_t *lc = json_object_get(body, "lifecycle");
    if (lc && (rc = lifecycle_runs_parse(lc, &out->lifecycle, &out->nlifecycle, err)) < 0) {
        agent_heartbeat_reply_release(out);
        return rc;
    }
    json_t *warm = json_object_get(body, "warm");
    if (warm && (rc = warm_orders_parse(warm, &out->warm, &out->nwarm, err)) < 0) {
        agent_heartbeat_reply_release(out);
        return rc;
    }
    json_t *cmds = json_object_get(body, "commands");
    if (!cmds || json_is_null(cmds))
        return 0;
    if (!json_is_array(cmds) || json_array_size(cmds) > AGENT_MAX_COMMANDS) {
        agent_heartbeat_reply_release(out); /* the storage, lifecycle and warm parts read */
        return bad(err, "commands", "'commands' must be an array of at most %d commands",
                   AGENT_MAX_COMMANDS);
    }
    size_t n = json_array_size(cmds);
    out->cmds = calloc(n ? n : 1, sizeof *out->cmds);
    if (!out->cmds) {
        agent_heartbeat_reply_release(out);
        return oom(err);
    }
    for (size_t i = 0; i < n; i++) {
        if ((rc = parse_cmd(json_array_get(cmds, i), i, &out->cmds[i], err)) < 0) {
            json_decref(out->cmds[i].job);
            agent_heartbeat_reply_release(out);
            return rc;
        }
        out->ncmds++;
    }
    return 0;
}

json_t *agent_cmd_to_json(const struct agent_cmd *c)
{
    switch (c->type) {
    case AGENT_CMD_START:
        return json_pack("{s:I, s:s, s:O}", "seq", (json_int_t)c->seq, "type", "start", "job",
                         c->job);
    case AGENT_CMD_SIGNAL:
        return json_pack("{s:I, s:s, s:I, s:i, s:I}", "seq", (json_int_t)c->seq, "type", "signal",
                         "job", (json_int_t)c->job_id, "signal", c->signal, "grace_ms",
                         (json_int_t)c->grace_ms);
    case AGENT_CMD_KILL:
        return json_pack("{s:I, s:s, s:I}", "seq", (json_int_t)c->seq, "type", "kill", "job",
                         (json_int_t)c->job_id);
    case AGENT_CMD_STEP_HOST:
        return json_pack("{s:I, s:s, s:I, s:i, s:s}", "seq", (json_int_t)c->seq, "type",
                         "step_host", "job", (json_int_t)c->job_id, "rank", c->rank, "addr",
                         c->addr);
    case AGENT_CMD_NOTIFY:
        return json_pack("{s:I, s:s, s:I, s:i, s:s}", "seq", (json_int_t)c->seq, "type", "notify",
                         "job", (json_int_t)c->job_id, "signal", c->signal, "to",
                         notify_names[c->notify_to]);
    case AGENT_CMD_LIMIT:
        return json_pack("{s:I, s:s, s:I, s:I}", "seq", (json_int_t)c->seq, "type", "limit", "job",
                         (json_int_t)c->job_id, "time_limit_ms", (json_int_t)c->time_limit_ms);
    }
    return NULL;
}

/* ---------------------------------------------------------------------------------- */
/* Register, heartbeat                                                                 */

json_t *agent_register_body(const struct agent_node_info *n, const char *join_token,
                            const char *version)
{
    json_t *uuids = json_array();
    for (int i = 0; i < n->ngpu_uuids; i++)
        json_array_append_new(uuids, json_string(n->gpu_uuids[i]));
    json_t *labels = n->labels ? json_incref(n->labels) : json_object();
    json_t *node = json_pack("{s:s, s:s, s:i, s:I, s:o, s:i, s:I, s:o, s:s}", "name", n->name,
                             "gpu_type", n->gpu_type, "gpus", n->gpus, "gpu_mem_mb",
                             (json_int_t)n->gpu_mem_mb, "gpu_uuids", uuids, "cpus", n->cpus,
                             "mem_mb", (json_int_t)n->mem_mb, "labels", labels, "addr", n->addr);
    if (node && n->job_net[0])
        json_object_set_new(node, "job_net", json_string(n->job_net));
    json_t *body = json_pack("{s:o, s:s}", "node", node, "agent_version", version);
    if (body && join_token && *join_token)
        json_object_set_new(body, "join_token", json_string(join_token));
    return body;
}

int agent_register_reply_parse(const json_t *body, struct agent_register_reply *out,
                               struct proto_error *err)
{
    static const char *const fields[] = {
        "credential", "node", "heartbeat_wait_ms", "node_timeout_ms", "credential_expires_ms",
        NULL};
    memset(out, 0, sizeof *out);
    if (!json_is_object(body))
        return bad(err, "", "register reply must be an object");
    int rc;
    out->heartbeat_wait_ms = 25000;
    out->node_timeout_ms = 60000;
    if ((rc = check_fields(body, fields, "", err)) < 0 ||
        (rc = get_str(body, "credential", "", out->credential, sizeof out->credential, true, err)) <
            0 ||
        (rc = get_str(body, "node", "", out->node, sizeof out->node, false, err)) < 0 ||
        (rc = get_int(body, "heartbeat_wait_ms", "", 0, 3600000, &out->heartbeat_wait_ms, false,
                      err)) < 0 ||
        (rc = get_int(body, "node_timeout_ms", "", 0, 86400000, &out->node_timeout_ms, false,
                      err)) < 0 ||
        (rc = get_int(body, "credential_expires_ms", "", 0, INT64_MAX, &out->credential_expires_ms,
                      false, err)) < 0)
        return rc;
    if (!out->credential[0])
        return bad(err, "credential", "'credential' is empty");
    return 0;
}

json_t *agent_rotate_body(const char *node)
{
    return json_pack("{s:s}", "node", node);
}

json_t *agent_heartbeat_body(const char *node, int64_t ack, int64_t wait_ms, bool health_ok,
                             const char *health_msg, const struct agent_job_status *jobs,
                             size_t njobs)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < njobs; i++)
        json_array_append_new(arr, json_pack("{s:I, s:s, s:i}", "id", (json_int_t)jobs[i].id,
                                             "state", jobs[i].state, "pid", jobs[i].pid));
    return json_pack("{s:s, s:I, s:I, s:{s:b, s:s}, s:o}", "node", node, "ack", (json_int_t)ack,
                     "wait_ms", (json_int_t)wait_ms, "health", "ok", health_ok, "message",
                     health_msg ? health_msg : "", "jobs", arr);
}

/* ---------------------------------------------------------------------------------- */
/* Register, heartbeat and rotate bodies: docketd's side                               */

_Static_assert((int)AGENT_NAME_MAX == (int)PROTO_NAME_MAX, "a node's name is a protocol name");

int agent_body_node(const json_t *body, const char **node, struct proto_error *err)
{
    json_t *nn = json_object_get(body, "node");
    *node = NULL;
    if (!json_is_string(nn))
        return bad(err, "node", "node must be a string");
    *node = json_string_value(nn);
    return 0;
}

int agent_rotate_parse(const json_t *body, struct proto_error *err)
{
    static const char *const known[] = {"node", NULL};
    if (!json_is_object(body))
        return bad(err, "", "the body must be a JSON object");
    return proto_check_fields(body, "", known, err);
}

int agent_register_parse(const json_t *body, struct agent_registration *out,
                         struct proto_error *err)
{
    static const char *const known[] = {"join_token", "node", "agent_version", NULL};
    memset(out, 0, sizeof *out);
    if (!json_is_object(body))
        return bad(err, "", "the body must be a JSON object");
    int rc = proto_check_fields(body, "", known, err);
    if (rc < 0)
        return rc;
    json_t *ver = json_object_get(body, "agent_version"), *jt = json_object_get(body, "join_token");
    if (ver && (!json_is_string(ver) || json_string_length(ver) > 64))
        return bad(err, "agent_version", "agent_version must be a short string");
    if (jt && (!json_is_string(jt) || json_string_length(jt) > 256))
        return bad(err, "join_token", "join_token must be a string");
    out->agent_version = json_string_value(ver);
    out->join_token = json_string_value(jt);
    out->name = json_string_value(json_object_get(json_object_get(body, "node"), "name"));
    return 0;
}

static int parse_labels(const json_t *v, const char *field, struct proto_error *err)
{
    if (!json_is_object(v) || json_object_size(v) > SCHED_MAX_LABELS)
        return bad(err, field, "%s must be an object of at most %d strings", field,
                   SCHED_MAX_LABELS);
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)v, k, val) {
        char f[160];
        snprintf(f, sizeof f, "%s.%.64s", field, k);
        if (!str_is_name(k))
            return bad(err, f, "invalid label name '%.64s'", k);
        if (!json_is_string(val) || !str_is_label_value(k, json_string_value(val)))
            return bad(err, f, "%s must be a label value (a name)", f);
    }
    return 0;
}

/* gpu_uuids and addr: kept as sent, so only their shape is checked. */
static int parse_node_ids(const json_t *o, struct agent_registration *out, struct proto_error *err)
{
    json_t *uu = json_object_get(o, "gpu_uuids"), *addr = json_object_get(o, "addr");
    if (uu && (!json_is_array(uu) || json_array_size(uu) > SCHED_MAX_NODE_GPUS))
        return bad(err, "node.gpu_uuids", "node.gpu_uuids must be a list of strings");
    for (size_t i = 0; uu && i < json_array_size(uu); i++)
        if (!json_is_string(json_array_get(uu, i)) ||
            json_string_length(json_array_get(uu, i)) > 128)
            return bad(err, "node.gpu_uuids", "node.gpu_uuids[%zu] must be a string", i);
    if (addr && (!json_is_string(addr) || json_string_length(addr) > 255))
        return bad(err, "node.addr", "node.addr must be a string");
    json_t *jn = json_object_get(o, "job_net");
    uint32_t net;
    int prefix;
    if (jn && (!json_is_string(jn) || !net_cidr_parse(json_string_value(jn), &net, &prefix) ||
               prefix < 16 || prefix > 29))
        return bad(err, "node.job_net", "node.job_net must be a CIDR from /16 to /29");
    out->gpu_uuids = uu;
    out->addr = addr;
    out->job_net = jn;
    return 0;
}

/* name, gpu_type, gpus, gpu_mem_mb, cpus, mem_mb: the node's size. */
static int parse_node_size(const json_t *o, struct agent_registration *out, struct proto_error *err)
{
    int64_t v = 0;
    int rc;
    json_t *x;
    if ((rc = proto_get_name(json_object_get(o, "name"), "node.name", out->node_name, err)) < 0)
        return rc;
    x = json_object_get(o, "gpu_type");
    if (x && !(json_is_string(x) && json_string_length(x) == 0) &&
        (rc = proto_get_name(x, "node.gpu_type", out->gpu_type, err)) < 0)
        return rc;
    if ((x = json_object_get(o, "gpus")) &&
        (rc = proto_get_int(x, "node.gpus", 0, SCHED_MAX_NODE_GPUS, &v, err)) < 0)
        return rc;
    out->gpus = (int)v;
    if (out->gpus > 0 && !out->gpu_type[0])
        return bad(err, "node.gpu_type", "a node with GPUs needs a gpu_type");
    if ((x = json_object_get(o, "gpu_mem_mb")) &&
        (rc = proto_get_int(x, "node.gpu_mem_mb", 0, PROTO_MAX_MEM_MB, &out->gpu_mem_mb, err)) < 0)
        return rc;
    if ((rc = proto_get_int(json_object_get(o, "cpus"), "node.cpus", 1, PROTO_MAX_CPUS, &v, err)) <
        0)
        return rc;
    out->cpus = (int)v;
    return proto_get_int(json_object_get(o, "mem_mb"), "node.mem_mb", 1, PROTO_MAX_MEM_MB,
                         &out->mem_mb, err);
}

int agent_register_node_parse(const json_t *body, struct agent_registration *out,
                              struct proto_error *err)
{
    static const char *const known[] = {"name",      "gpu_type", "gpus",   "gpu_mem_mb",
                                        "gpu_uuids", "cpus",     "mem_mb", "labels",
                                        "addr",      "job_net",  NULL};
    const json_t *o = json_object_get(body, "node");
    int rc;
    out->node_name[0] = out->gpu_type[0] = '\0'; /* the node's part only: the head stays */
    out->gpus = out->cpus = 0;
    out->gpu_mem_mb = out->mem_mb = 0;
    out->labels = out->gpu_uuids = out->addr = out->job_net = NULL;
    if (!json_is_object(o))
        return bad(err, "node", "node must be an object");
    if ((rc = proto_check_fields(o, "node", known, err)) < 0 ||
        (rc = parse_node_size(o, out, err)) < 0)
        return rc;
    json_t *labels = json_object_get(o, "labels");
    if (labels && (rc = parse_labels(labels, "node.labels", err)) < 0)
        return rc;
    out->labels = labels;
    return parse_node_ids(o, out, err);
}

/* One entry of a heartbeat's jobs: id (required) and state are read, pid is not. */
static int parse_hb_job(const json_t *j, size_t i, struct agent_job_status *out,
                        struct proto_error *err)
{
    static const char *const known[] = {"id", "state", "pid", NULL};
    char path[32], f[48];
    int64_t x;
    int rc;
    snprintf(path, sizeof path, "jobs[%zu]", i);
    if (!json_is_object(j))
        return bad(err, path, "%s must be an object", path);
    if ((rc = proto_check_fields(j, path, known, err)) < 0)
        return rc;
    snprintf(f, sizeof f, "%s.id", path);
    if ((rc = proto_get_int(json_object_get(j, "id"), f, 1, INT64_MAX, &x, err)) < 0)
        return rc;
    json_t *st = json_object_get(j, "state");
    if (st && !json_is_string(st)) {
        snprintf(f, sizeof f, "%s.state", path);
        return bad(err, f, "%s must be a string", f);
    }
    out->id = (uint64_t)x;
    out->state = json_string_value(st);
    out->pid = 0;
    return 0;
}

static int parse_hb_jobs(const json_t *jobs, struct agent_heartbeat *h, struct proto_error *err)
{
    if (!jobs)
        return 0;
    if (!json_is_array(jobs) || json_array_size(jobs) > AGENT_MAX_HB_JOBS)
        return bad(err, "jobs", "jobs must be an array");
    size_t n = json_array_size(jobs);
    h->jobs = calloc(n ? n : 1, sizeof *h->jobs);
    if (!h->jobs)
        return oom(err);
    for (size_t i = 0; i < n; i++) {
        int rc = parse_hb_job(json_array_get(jobs, i), i, &h->jobs[i], err);
        if (rc < 0)
            return rc;
        h->njobs++;
    }
    return 0;
}

static int parse_hb_health(const json_t *v, struct agent_heartbeat *h, struct proto_error *err)
{
    static const char *const known[] = {"ok", "message", NULL};
    int rc;
    if (!json_is_object(v))
        return bad(err, "health", "health must be an object");
    if ((rc = proto_check_fields(v, "health", known, err)) < 0)
        return rc;
    json_t *ok = json_object_get(v, "ok"), *msg = json_object_get(v, "message");
    if (ok && (rc = proto_get_bool(ok, "health.ok", &h->health_ok, err)) < 0)
        return rc;
    if (msg && (!json_is_string(msg) || json_string_length(msg) > AGENT_HEALTH_MSG_MAX))
        return bad(err, "health.message", "health.message must be a short string");
    if (msg)
        snprintf(h->health_msg, sizeof h->health_msg, "%s", json_string_value(msg));
    return 0;
}

void agent_heartbeat_release(struct agent_heartbeat *h)
{
    free(h->jobs);
    h->jobs = NULL;
    h->njobs = 0;
    if (h->storage)
        storage_report_release(h->storage);
    free(h->storage);
    h->storage = NULL;
    lifecycle_results_free(h->lifecycle, h->nlifecycle);
    h->lifecycle = NULL;
    h->nlifecycle = 0;
    free(h->warm);
    h->warm = NULL;
    h->nwarm = 0;
}

int agent_heartbeat_parse(const json_t *body, struct agent_heartbeat *h, struct proto_error *err)
{
    static const char *const known[] = {"node",    "ack",       "wait_ms", "health", "jobs",
                                        "storage", "lifecycle", "warm",    NULL};
    int rc;
    json_t *v;
    memset(h, 0, sizeof *h);
    h->health_ok = true;
    h->wait_ms = AGENT_WAIT_DEFAULT_MS;
    if (!json_is_object(body))
        return bad(err, "", "the body must be a JSON object");
    if ((rc = proto_check_fields(body, "", known, err)) < 0)
        return rc;
    if ((v = json_object_get(body, "ack")) &&
        (rc = proto_get_int(v, "ack", 0, INT64_MAX, &h->ack, err)) < 0)
        return rc;
    if ((v = json_object_get(body, "wait_ms")) &&
        (rc = proto_get_int(v, "wait_ms", 0, AGENT_WAIT_MAX_MS, &h->wait_ms, err)) < 0)
        return rc;
    if ((v = json_object_get(body, "health")) && (rc = parse_hb_health(v, h, err)) < 0)
        return rc;
    if ((v = json_object_get(body, "storage"))) {
        if (!(h->storage = calloc(1, sizeof *h->storage)))
            return oom(err);
        if ((rc = storage_report_parse(v, h->storage, err)) < 0) {
            agent_heartbeat_release(h);
            return rc;
        }
    }
    if ((v = json_object_get(body, "lifecycle")) &&
        (rc = lifecycle_results_parse(v, &h->lifecycle, &h->nlifecycle, err)) < 0) {
        agent_heartbeat_release(h);
        return rc;
    }
    if ((v = json_object_get(body, "warm")) &&
        (rc = warm_states_parse(v, &h->warm, &h->nwarm, err)) < 0) {
        agent_heartbeat_release(h);
        return rc;
    }
    if ((rc = parse_hb_jobs(json_object_get(body, "jobs"), h, err)) < 0)
        agent_heartbeat_release(h);
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* Events                                                                              */

static const char *const kind_names[] = {"code", "signal", "oom", "launch_failed", "lost"};

const char *agent_exit_kind_name(enum agent_exit_kind k)
{
    return (unsigned)k < 5 ? kind_names[k] : "lost";
}

int agent_exit_kind_parse(const char *s, enum agent_exit_kind *out)
{
    for (int i = 0; i < 5; i++)
        if (strcmp(s, kind_names[i]) == 0) {
            *out = (enum agent_exit_kind)i;
            return 0;
        }
    return -EINVAL;
}

static json_t *usage_json(const struct agent_usage *u)
{
    return json_pack("{s:I, s:I, s:I}", "cpu_ms", (json_int_t)u->cpu_ms, "max_rss_mb",
                     (json_int_t)u->max_rss_mb, "gpu_util", (json_int_t)u->gpu_util);
}

/* ---------------------------------------------------------------------------------- */
/* Usage samples (docs/monitoring.md "Samples")                                        */

static const char *const gpu_sources[] = {"nvml", "declared", "none", NULL};

void agent_sample_init(struct agent_sample *s)
{
    memset(s, 0, sizeof *s);
    s->interval_ms = s->cpu_ms = s->mem_bytes = s->mem_peak_bytes = -1;
    s->io_read_bytes = s->io_write_bytes = s->net_refused = -1;
    memcpy(s->gpu_source, "none", 5);
}

static void set_known(json_t *o, const char *key, int64_t v)
{
    if (v >= 0)
        json_object_set_new(o, key, json_integer(v));
}

json_t *agent_sample_to_json(const struct agent_sample *s)
{
    json_t *o = json_object(), *gpus = json_array();
    if (!o || !gpus) {
        json_decref(o);
        json_decref(gpus);
        return NULL;
    }
    set_known(o, "interval_ms", s->interval_ms);
    set_known(o, "cpu_ms", s->cpu_ms);
    set_known(o, "mem_bytes", s->mem_bytes);
    set_known(o, "mem_peak_bytes", s->mem_peak_bytes);
    set_known(o, "io_read_bytes", s->io_read_bytes);
    set_known(o, "io_write_bytes", s->io_write_bytes);
    set_known(o, "net_refused", s->net_refused);
    json_object_set_new(o, "gpu_source", json_string(s->gpu_source));
    for (int i = 0; i < s->ngpus; i++) {
        const struct agent_gpu_sample *g = &s->gpus[i];
        json_t *go = json_pack("{s:i}", "index", g->index);
        if (!go)
            continue;
        set_known(go, "util", g->util);
        set_known(go, "mem_used_mb", g->mem_used_mb);
        set_known(go, "power_mw", g->power_mw);
        set_known(go, "temp_c", g->temp_c);
        set_known(go, "ecc_errors", g->ecc_errors);
        set_known(go, "xid_errors", g->xid_errors);
        json_array_append_new(gpus, go);
    }
    json_object_set_new(o, "gpus", gpus);
    return o;
}

static int parse_gpu_sample(const json_t *g, size_t i, struct agent_gpu_sample *out,
                            struct proto_error *err)
{
    static const char *const fields[] = {"index",  "util",       "mem_used_mb", "power_mw",
                                         "temp_c", "ecc_errors", "xid_errors",  NULL};
    char p[48];
    snprintf(p, sizeof p, "sample.gpus[%zu].", i);
    if (!json_is_object(g)) {
        p[strlen(p) - 1] = '\0';
        return bad(err, p, "'%s' must be an object", p);
    }
    int64_t idx = -1, util = -1, temp = -1;
    out->mem_used_mb = out->power_mw = out->ecc_errors = out->xid_errors = -1;
    int rc;
    if ((rc = check_fields(g, fields, p, err)) < 0 ||
        (rc = get_int(g, "index", p, 0, AGENT_MAX_GPUS - 1, &idx, true, err)) < 0 ||
        (rc = get_int(g, "util", p, 0, 100, &util, false, err)) < 0 ||
        (rc = get_int(g, "mem_used_mb", p, 0, (int64_t)1 << 30, &out->mem_used_mb, false, err)) <
            0 ||
        (rc = get_int(g, "power_mw", p, 0, 100000000, &out->power_mw, false, err)) < 0 ||
        (rc = get_int(g, "temp_c", p, 0, 200, &temp, false, err)) < 0 ||
        (rc = get_int(g, "ecc_errors", p, 0, AGENT_SAMPLE_MAX_ERRORS, &out->ecc_errors, false,
                      err)) < 0 ||
        (rc = get_int(g, "xid_errors", p, 0, AGENT_SAMPLE_MAX_ERRORS, &out->xid_errors, false,
                      err)) < 0)
        return rc;
    out->index = (int)idx;
    out->util = (int)util;
    out->temp_c = (int)temp;
    return 0;
}

int agent_sample_parse(const json_t *o, struct agent_sample *out, struct proto_error *err)
{
    static const char *const fields[] = {
        "interval_ms",    "cpu_ms",     "mem_bytes", "mem_peak_bytes", "io_read_bytes",
        "io_write_bytes", "gpu_source", "gpus",      "net_refused",    NULL};
    const int64_t big = INT64_MAX / 4; /* counters: room to add them up */
    agent_sample_init(out);
    if (!json_is_object(o))
        return bad(err, "sample", "'sample' must be an object");
    int rc;
    if ((rc = check_fields(o, fields, "sample.", err)) < 0 ||
        (rc = get_int(o, "interval_ms", "sample.", 1, 86400000, &out->interval_ms, false, err)) <
            0 ||
        (rc = get_int(o, "cpu_ms", "sample.", 0, big, &out->cpu_ms, false, err)) < 0 ||
        (rc = get_int(o, "mem_bytes", "sample.", 0, big, &out->mem_bytes, false, err)) < 0 ||
        (rc = get_int(o, "mem_peak_bytes", "sample.", 0, big, &out->mem_peak_bytes, false, err)) <
            0 ||
        (rc = get_int(o, "io_read_bytes", "sample.", 0, big, &out->io_read_bytes, false, err)) <
            0 ||
        (rc = get_int(o, "io_write_bytes", "sample.", 0, big, &out->io_write_bytes, false, err)) <
            0 ||
        (rc = get_int(o, "net_refused", "sample.", 0, big, &out->net_refused, false, err)) < 0 ||
        (rc = get_str(o, "gpu_source", "sample.", out->gpu_source, sizeof out->gpu_source, true,
                      err)) < 0)
        return rc;
    if (!in_list(out->gpu_source, gpu_sources))
        return bad(err, "sample.gpu_source", "'sample.gpu_source' must be nvml, declared or none");
    json_t *gpus = json_object_get(o, "gpus");
    if (!gpus || json_is_null(gpus))
        return 0;
    if (!json_is_array(gpus) || json_array_size(gpus) > AGENT_MAX_GPUS)
        return bad(err, "sample.gpus", "'sample.gpus' must be an array of at most %d GPUs",
                   AGENT_MAX_GPUS);
    if (json_array_size(gpus) && strcmp(out->gpu_source, "none") == 0)
        return bad(err, "sample.gpus", "'sample.gpus' must be empty when gpu_source is none");
    uint64_t seen = 0;
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        struct agent_gpu_sample *g = &out->gpus[out->ngpus];
        if ((rc = parse_gpu_sample(json_array_get(gpus, i), i, g, err)) < 0)
            return rc;
        if (seen & (1ULL << g->index)) {
            char f[48];
            snprintf(f, sizeof f, "sample.gpus[%zu].index", i);
            return bad(err, f, "GPU %d is listed twice", g->index);
        }
        seen |= 1ULL << g->index;
        out->ngpus++;
    }
    return 0;
}

json_t *agent_event_to_json(const struct agent_event *e)
{
    json_t *o = json_pack("{s:I, s:s, s:I}", "job", (json_int_t)e->job, "type", e->type, "time_ms",
                          (json_int_t)e->time_ms);
    if (!o)
        return NULL;
    if (e->run > 0)
        json_object_set_new(o, "run", json_integer(e->run));
    if (strcmp(e->type, "started") == 0)
        json_object_set_new(o, "pid", json_integer(e->pid));
    if (strcmp(e->type, "step_host") == 0 || (strcmp(e->type, "started") == 0 && e->port > 0))
        json_object_set_new(o, "port", json_integer(e->port));
    if (strcmp(e->type, "probe") == 0)
        json_object_set_new(o, "probe",
                            json_pack("{s:s,s:b}", "name", e->probe, "ok", e->probe_ok));
    if (strcmp(e->type, "exited") == 0)
        json_object_set_new(o, "exit",
                            json_pack("{s:s, s:i, s:s}", "kind", agent_exit_kind_name(e->exit_kind),
                                      "code", e->exit_code, "message", e->message));
    if (strcmp(e->type, "reclaim_failed") == 0 || strcmp(e->type, "signalled") == 0 ||
        strcmp(e->type, "preparing") == 0 || strcmp(e->type, "prepared") == 0 ||
        strcmp(e->type, "probe") == 0)
        json_object_set_new(o, "message", json_string(e->message));
    if (e->has_usage)
        json_object_set_new(o, "usage", usage_json(&e->usage));
    if (e->has_sample)
        json_object_set_new(o, "sample", agent_sample_to_json(&e->sample));
    return o;
}

/* "path.key", or "key" alone when path is "". */
static const char *sub(char *buf, size_t len, const char *path, const char *key)
{
    snprintf(buf, len, "%s%s%s", path, path[0] ? "." : "", key);
    return buf;
}

/* The legacy usage object: each figure a count >= 0 (docketd keeps the object as sent). */
static int parse_usage(const json_t *u, const char *path, struct agent_usage *out,
                       struct proto_error *err)
{
    static const char *const known[] = {"cpu_ms", "max_rss_mb", "gpu_util", NULL};
    int64_t *dst[] = {&out->cpu_ms, &out->max_rss_mb, &out->gpu_util};
    int rc;
    memset(out, 0, sizeof *out);
    if (!json_is_object(u))
        return bad(err, path, "%s must be an object", path);
    if ((rc = proto_check_fields(u, path, known, err)) < 0)
        return rc;
    for (size_t i = 0; known[i]; i++) {
        json_t *v = json_object_get(u, known[i]);
        char f[160];
        if (v && (rc = proto_get_int(v, sub(f, sizeof f, path, known[i]), 0, INT64_MAX, dst[i],
                                     err)) < 0)
            return rc;
    }
    return 0;
}

/* A string of at most AGENT_MESSAGE_MAX bytes into buf[AGENT_MESSAGE_MAX + 1]. */
static int get_message(const json_t *v, const char *field, char *buf, struct proto_error *err)
{
    if (!json_is_string(v) || json_string_length(v) > AGENT_MESSAGE_MAX)
        return bad(err, field, "%s must be a string", field);
    snprintf(buf, AGENT_MESSAGE_MAX + 1, "%s", json_string_value(v));
    return 0;
}

static int parse_exit(const json_t *x, const char *path, struct agent_event *e,
                      struct proto_error *err)
{
    static const char *const known[] = {"kind", "code", "message", NULL};
    char f[160];
    int64_t code = 0;
    int rc;
    if (!json_is_object(x))
        return bad(err, path, "%s must be an object", path);
    if ((rc = proto_check_fields(x, path, known, err)) < 0)
        return rc;
    const char *k = json_string_value(json_object_get(x, "kind"));
    if (!k || agent_exit_kind_parse(k, &e->exit_kind) < 0)
        return bad(err, sub(f, sizeof f, path, "kind"),
                   "%s must be code, signal, oom, launch_failed or lost", f);
    json_t *c = json_object_get(x, "code"), *m = json_object_get(x, "message");
    if (c && (rc = proto_get_int(c, sub(f, sizeof f, path, "code"), -255, 255, &code, err)) < 0)
        return rc;
    char msg[AGENT_MESSAGE_MAX + 1] = "";
    if (m && (rc = get_message(m, sub(f, sizeof f, path, "message"), msg, err)) < 0)
        return rc;
    e->has_exit = true;
    e->exit_code = (int)code;
    e->exit_json = x;
    if (strcmp(e->type, "exited") == 0) /* the exit's message is the event's */
        memcpy(e->message, msg, sizeof msg);
    return 0;
}

/* A usage event's sample: agent_sample_parse's error, under the event's path. */
static int parse_event_sample(const json_t *v, const char *path, struct agent_event *e,
                              struct proto_error *err)
{
    struct proto_error se;
    char f[192];
    if (strcmp(e->type, "usage") != 0)
        return bad(err, sub(f, sizeof f, path, "sample"), "%s belongs to a usage event only", f);
    if (agent_sample_parse(v, &e->sample, &se) < 0) {
        if (!path[0])
            return bad(err, se.field, "%s", se.message);
        snprintf(f, sizeof f, "%s.%s", path, se.field);
        return bad(err, f, "%s: %s", path, se.message);
    }
    e->has_sample = true;
    return 0;
}

static bool event_type_ok(const char *t)
{
    /* preparing, prepared: sent only for a job whose start command had a prepare script,
     * which only a docketd that reads these events sends (protocol/templates.h) */
    static const char *const types[] = {"started",   "exited",    "usage",     "reclaim_failed",
                                        "signalled", "step_host", "preparing", "prepared",
                                        "probe",     NULL};
    return t && in_list(t, types);
}

/* job, run, type, time_ms, pid: the fields of every event. */
static int parse_event_head(const json_t *o, const char *path, struct agent_event *e,
                            struct proto_error *err)
{
    char f[160];
    int64_t x = 0;
    int rc;
    json_t *v;
    if ((rc = proto_get_int(json_object_get(o, "job"), sub(f, sizeof f, path, "job"), 1, INT64_MAX,
                            &x, err)) < 0)
        return rc;
    e->job = (uint64_t)x;
    x = 0;
    if ((v = json_object_get(o, "run")) &&
        (rc = proto_get_int(v, sub(f, sizeof f, path, "run"), 1, INT32_MAX, &x, err)) < 0)
        return rc;
    e->run = (int)x;
    const char *t = json_string_value(json_object_get(o, "type"));
    if (!event_type_ok(t))
        return bad(err, sub(f, sizeof f, path, "type"),
                   "%s must be started, signalled, exited, usage, reclaim_failed, step_host,"
                   " preparing, prepared or probe",
                   f);
    str_copy(e->type, sizeof e->type, t);
    if ((v = json_object_get(o, "time_ms")) &&
        (rc = proto_get_int(v, sub(f, sizeof f, path, "time_ms"), 0, INT64_MAX, &e->time_ms, err)) <
            0)
        return rc;
    x = 0;
    if ((v = json_object_get(o, "pid")) &&
        (rc = proto_get_int(v, sub(f, sizeof f, path, "pid"), 0, INT32_MAX, &x, err)) < 0)
        return rc;
    e->pid = (int)x;
    return 0;
}

/* A probe event's {"name": "liveness" | "readiness", "ok": BOOL}: there, and only there. */
static int parse_event_probe(const json_t *v, const char *path, struct agent_event *e,
                             struct proto_error *err)
{
    static const char *const known[] = {"name", "ok", NULL};
    static const char *const names[] = {"liveness", "readiness", NULL};
    char f[160], g[200];
    sub(f, sizeof f, path, "probe");
    if ((v != NULL) != (strcmp(e->type, "probe") == 0))
        return bad(err, f, "%s belongs to a probe event, always", f);
    if (!v)
        return 0;
    if (!json_is_object(v))
        return bad(err, f, "%s must be an object", f);
    int rc = proto_check_fields(v, f, known, err);
    const char *name = json_string_value(json_object_get(v, "name"));
    snprintf(g, sizeof g, "%s.name", f);
    if (rc == 0 && (!name || !in_list(name, names)))
        return bad(err, g, "%s must be liveness or readiness", g);
    snprintf(g, sizeof g, "%s.ok", f);
    if (rc == 0)
        rc = proto_get_bool(json_object_get(v, "ok"), g, &e->probe_ok, err);
    if (rc == 0)
        str_copy(e->probe, sizeof e->probe, name);
    return rc;
}

int agent_event_parse(const json_t *o, const char *path, struct agent_event *e,
                      struct proto_error *err)
{
    static const char *const known[] = {"job",   "run",     "type",   "time_ms", "pid",   "exit",
                                        "usage", "message", "sample", "port",    "probe", NULL};
    char f[160];
    int rc;
    json_t *v;
    memset(e, 0, sizeof *e);
    if (!json_is_object(o))
        return bad(err, path, "%s must be an object", path[0] ? path : "an event");
    if ((rc = proto_check_fields(o, path, known, err)) < 0 ||
        (rc = parse_event_head(o, path, e, err)) < 0)
        return rc;
    v = json_object_get(o, "exit");
    if (!v && strcmp(e->type, "exited") == 0)
        return bad(err, sub(f, sizeof f, path, "exit"), "%s is required for an exited event", f);
    if (v && (rc = parse_exit(v, sub(f, sizeof f, path, "exit"), e, err)) < 0)
        return rc;
    if ((v = json_object_get(o, "usage"))) {
        if ((rc = parse_usage(v, sub(f, sizeof f, path, "usage"), &e->usage, err)) < 0)
            return rc;
        e->has_usage = true;
        e->usage_json = v;
    }
    if ((v = json_object_get(o, "sample")) && (rc = parse_event_sample(v, path, e, err)) < 0)
        return rc;
    char msg[AGENT_MESSAGE_MAX + 1] = "";
    if ((v = json_object_get(o, "message")) &&
        (rc = get_message(v, sub(f, sizeof f, path, "message"), msg, err)) < 0)
        return rc;
    if (strcmp(e->type, "exited") != 0)
        memcpy(e->message, msg, sizeof msg);
    /* a step host's port: on that event, and there always; a replica's: on its start */
    v = json_object_get(o, "port");
    bool step = strcmp(e->type, "step_host") == 0;
    if ((v != NULL) != step && !(v && strcmp(e->type, "started") == 0))
        return bad(err, sub(f, sizeof f, path, "port"),
                   "%s belongs to a step_host event, always, or a started one", f);
    int64_t port = 0;
    if (v && (rc = proto_get_int(v, f, 1, 65535, &port, err)) < 0)
        return rc;
    e->port = (int)port;
    return parse_event_probe(json_object_get(o, "probe"), path, e, err);
}

json_t *agent_events_body(const char *node, json_t *events)
{
    return json_pack("{s:s, s:O}", "node", node, "events", events);
}

int agent_events_parse(const json_t *body, const json_t **events, struct proto_error *err)
{
    static const char *const known[] = {"node", "events", NULL};
    struct agent_event scratch;
    *events = NULL;
    if (!json_is_object(body))
        return bad(err, "", "the body must be a JSON object");
    int rc = proto_check_fields(body, "", known, err);
    json_t *evs = json_object_get(body, "events");
    if (rc == 0 && (!json_is_array(evs) || json_array_size(evs) > AGENT_MAX_EVENTS))
        rc = bad(err, "events", "events must be an array of at most %d", AGENT_MAX_EVENTS);
    for (size_t i = 0; rc == 0 && i < json_array_size(evs); i++) {
        char path[32];
        snprintf(path, sizeof path, "events[%zu]", i);
        rc = agent_event_parse(json_array_get(evs, i), path, &scratch, err);
    }
    if (rc == 0)
        *events = evs;
    return rc;
}

void agent_event_job_run(const json_t *event, uint64_t *job, int *run)
{
    *job = (uint64_t)json_integer_value(json_object_get(event, "job"));
    *run = (int)json_integer_value(json_object_get(event, "run"));
}

/* ---------------------------------------------------------------------------------- */
/* Logs (their data is base64: util/base64.h)                                         */

json_t *agent_logs_body(const char *node, uint64_t job, int run, const char *stream, int64_t offset,
                        const void *data, size_t len, bool final, bool cut)
{
    char *enc = b64_encode(data, len);
    if (!enc)
        return NULL;
    json_t *o = json_pack("{s:s, s:I, s:s, s:I, s:s}", "node", node, "job", (json_int_t)job,
                          "stream", stream, "offset", (json_int_t)offset, "data", enc);
    free(enc);
    if (o && run > 0)
        json_object_set_new(o, "run", json_integer(run));
    if (o && final)
        json_object_set_new(o, "final", json_true());
    if (o && cut)
        json_object_set_new(o, "cut", json_true());
    return o;
}

int agent_logs_parse(const json_t *b, struct agent_log_chunk *out, struct proto_error *err)
{
    static const char *const fields[] = {"node", "job",   "run", "stream", "offset",
                                         "data", "final", "cut", NULL};
    char stream[16];
    int64_t x = 0;
    int rc;
    memset(out, 0, sizeof *out);
    if (!json_is_object(b))
        return bad(err, "", "the body must be an object");
    if ((rc = check_fields(b, fields, "", err)) < 0 ||
        (rc = get_str(b, "node", "", out->node, sizeof out->node, true, err)) < 0 ||
        (rc = get_int(b, "job", "", 1, INT64_MAX, &x, true, err)) < 0)
        return rc;
    out->job = (uint64_t)x;
    x = 0;
    if ((rc = get_int(b, "run", "", 1, INT32_MAX, &x, false, err)) < 0 ||
        (rc = get_int(b, "offset", "", 0, INT64_MAX, &out->offset, true, err)) < 0 ||
        (rc = get_str(b, "stream", "", stream, sizeof stream, true, err)) < 0)
        return rc;
    out->run = (int)x;
    if (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0)
        return bad(err, "stream", "'stream' must be stdout or stderr");
    out->stream = strcmp(stream, "stderr") == 0;
    json_t *f = json_object_get(b, "final");
    if (f && !json_is_boolean(f))
        return bad(err, "final", "'final' must be true or false");
    out->final = f && json_is_true(f);
    json_t *cut = json_object_get(b, "cut");
    if (cut && !json_is_boolean(cut))
        return bad(err, "cut", "'cut' must be true or false");
    out->cut = cut && json_is_true(cut);
    json_t *d = json_object_get(b, "data");
    if (!json_is_string(d))
        return bad(err, "data", "'data' must be a base64 string");
    size_t max = B64_DECODED_MAX(json_string_length(d));
    if (out->offset > INT64_MAX - (int64_t)max)
        return bad(err, "offset", "'offset' is out of range");
    out->data = malloc(max + 1);
    if (!out->data)
        return oom(err);
    int64_t n = b64_decode(json_string_value(d), json_string_length(d), out->data, max);
    if (n < 0) {
        free(out->data);
        out->data = NULL;
        return bad(err, "data", "'data' is not valid base64");
    }
    out->len = (size_t)n;
    return 0;
}

void agent_log_chunk_release(struct agent_log_chunk *c)
{
    free(c->data);
    c->data = NULL;
}

int agent_logs_reply_parse(const json_t *body, int64_t *offset, struct proto_error *err)
{
    static const char *const fields[] = {"offset", NULL};
    if (!json_is_object(body))
        return bad(err, "", "logs reply must be an object");
    int rc = check_fields(body, fields, "", err);
    return rc < 0 ? rc : get_int(body, "offset", "", 0, INT64_MAX, offset, true, err);
}
