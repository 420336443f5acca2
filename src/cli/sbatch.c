/*
 * sbatch.c - sbatch's options read into a job submission (spec.h): Slurm's values (times,
 * --gres, partitions through the partition map), every sbatch option as sbatch reads it
 * (the table below: read, ignored with a warning, refused with the reason, or left to the
 * submitting verb), and, once all are read, per-task requests turned into per-node ones
 * with the "slurm" object written. The mapping is the table in docs/cli.md and
 * docs/slurm.md; keep them in step.
 */
#define _POSIX_C_SOURCE 200809L
#include "cli/spec.h"
#include "cli/spec_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/parse.h"
#include "util/str.h"

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

static int lookup_in(char **cur, const char *partition, const char **field, char *name,
                     size_t namelen)
{
    for (char *p = spec_next_field(cur, ","); p; p = spec_next_field(cur, ",")) {
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

int spec_partition_lookup(const char *map, const char *partition, const char **field, char *name,
                          size_t namelen)
{
    if (!map || !map[0])
        return -ENOENT;
    char *buf = strdup(map); /* any length: a site's map may name hundreds of partitions */
    char *cur = buf;
    int rc = buf ? lookup_in(&cur, partition, field, name, namelen) : -ENOMEM;
    free(buf);
    return rc;
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
        return spec_fail(err, errlen, "--gres", "bad value", v);
    for (char *p = spec_next_field(&cur, ","); p; p = spec_next_field(&cur, ",")) {
        char type[64];
        int count = 1;

        if (strncmp(p, "gpu", 3) || (p[3] && p[3] != ':')) {
            warnf(env, "#SBATCH --gres=%s: only gpu resources are understood; '%.60s' ignored", v,
                  p);
            continue;
        }
        if (p[3] == ':' && slurm_gpu_count(p + 4, type, sizeof(type), &count) < 0)
            return spec_fail(err, errlen, "--gres", "want gpu:N or gpu:TYPE:N, not", p);
        if (p[3] != ':')
            type[0] = '\0';
        if (count > MAX_GPUS_PER_NODE)
            return spec_fail(err, errlen, "--gres", "too many GPUs per node in", p);
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
        return spec_fail(err, errlen, flag, "want N or TYPE:N, not", v);
    if (per_node && count > MAX_GPUS_PER_NODE)
        return spec_fail(err, errlen, flag, "too many GPUs per node in", v);
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
        return spec_fail(err, errlen, "--nodes", "bad node count", v);
    dash = strchr(buf, '-');
    if (dash) {
        *dash = '\0';
        warnf(env, "#SBATCH --nodes=%s: docket places gang jobs on an exact count; using %s", v,
              buf);
    }
    return spec_set_int(spec, "nodes", "--nodes", buf, 1, MAX_NODES, err, errlen);
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
    bool partition = !strcmp(opt, "partition");
    if (partition) { /* the site's partition (docketd: its nodes, times, tier, class) */
        if (!str_is_name(v))
            return spec_fail(err, errlen, "--partition", "wants one partition's name", v);
        json_object_set_new(spec, "partition", json_string(v));
    }
    if (rc < 0 && !partition) {
        warnf(env,
              "#SBATCH --%s=%s has no mapping; ignored (map it with "
              "DOCKET_PARTITION_MAP=\"%s=TIER\" or partition.%s=TIER in "
              "~/.config/docket/config)",
              opt, v, v, v);
        return 0;
    }
    if (rc == 0) /* the user's own map overrides the partition's tier or class */
        json_object_set_new(spec, field, json_string(name));
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* sbatch's options, as sbatch reads them                                               */

/* What docket does with an sbatch option:
 *   SB_DO      read into the job (the table in docs/slurm.md)
 *   SB_IGNORE  nothing changes for resources or timing: accepted with a warning
 *   SB_REFUSE  it would change resources, placement or timing in a way docket cannot
 *              honour: an error with the reason (never a job that differs silently)
 *   SB_CLI     a flag of the sbatch command itself (--parsable, --wrap, --test-only ...):
 *              kept under "__cli" for the verb that submits (spec_take_cli) */
enum sb_kind { SB_DO, SB_IGNORE, SB_REFUSE, SB_CLI };
enum sb_arg { SB_NONE, SB_REQ, SB_OPT };

struct sbatch_opt {
    const char *name;
    char short_name;
    unsigned char arg, kind;
    const char *why; /* SB_REFUSE: what to do instead */
};

#define PLACE "docket places jobs itself; restrict nodes with #DOCKET --select KEY=VALUE"
#define NOHW  "docket allocates GPUs, CPUs and memory per node, not sockets, cores or threads"

/* Every long option sbatch knows (Slurm's option table, for the sbatch command), so that
 * a prefix is unique or ambiguous exactly as it is for sbatch's getopt_long. */
static const struct sbatch_opt sbatch_opts[] = {
    {"account", 'A', SB_REQ, SB_DO, NULL},
    {"acctg-freq", 0, SB_REQ, SB_IGNORE, NULL},
    {"array", 'a', SB_REQ, SB_DO, NULL},
    {"autocomplete", 0, SB_REQ, SB_REFUSE, "not a job option"},
    {"batch", 0, SB_REQ, SB_REFUSE, PLACE},
    {"bb", 0, SB_REQ, SB_REFUSE, "docket has no burst buffers"},
    {"bbf", 0, SB_REQ, SB_REFUSE, "docket has no burst buffers"},
    {"begin", 'b', SB_REQ, SB_DO, NULL},
    {"chdir", 'D', SB_REQ, SB_DO, NULL},
    {"cluster", 0, SB_REQ, SB_REFUSE, "docket schedules one cluster"},
    {"cluster-constraint", 0, SB_REQ, SB_REFUSE, "docket schedules one cluster"},
    {"clusters", 'M', SB_REQ, SB_REFUSE, "docket schedules one cluster"},
    {"comment", 0, SB_REQ, SB_IGNORE, NULL},
    {"consolidate-segments", 0, SB_NONE, SB_IGNORE, NULL},
    {"constraint", 'C', SB_REQ, SB_DO, NULL},
    {"container", 0, SB_REQ, SB_REFUSE,
     "docket runs OCI images, not bundles: give the image with --container-image"},
    {"container-env", 0, SB_REQ, SB_DO, NULL},
    {"container-id", 0, SB_REQ, SB_REFUSE, "give the image with --container-image"},
    {"container-image", 0, SB_REQ, SB_DO, NULL},
    {"container-mounts", 0, SB_REQ, SB_DO, NULL},
    {"container-workdir", 0, SB_REQ, SB_DO, NULL},
    {"context", 0, SB_REQ, SB_IGNORE, NULL},
    {"contiguous", 0, SB_NONE, SB_REFUSE, PLACE},
    {"core-spec", 'S', SB_REQ, SB_REFUSE, NOHW},
    {"cores-per-socket", 0, SB_REQ, SB_REFUSE, NOHW},
    {"cpu-freq", 0, SB_REQ, SB_IGNORE, NULL},
    {"cpus-per-gpu", 0, SB_REQ, SB_DO, NULL},
    {"cpus-per-task", 'c', SB_REQ, SB_DO, NULL},
    {"deadline", 0, SB_REQ, SB_REFUSE, "docket has no deadlines; use --time"},
    {"delay-boot", 0, SB_REQ, SB_REFUSE, "docket does not reboot nodes"},
    {"dependency", 'd', SB_REQ, SB_DO, NULL},
    {"distribution", 'm', SB_REQ, SB_IGNORE, NULL},
    {"error", 'e', SB_REQ, SB_DO, NULL},
    {"exclude", 'x', SB_REQ, SB_REFUSE, PLACE},
    {"exclusive", 0, SB_OPT, SB_DO, NULL},
    {"export", 0, SB_REQ, SB_DO, NULL},
    {"export-file", 0, SB_REQ, SB_REFUSE, "write the variables with --export or #DOCKET --env"},
    {"external", 0, SB_NONE, SB_REFUSE, "not a job option"},
    {"extra", 0, SB_REQ, SB_IGNORE, NULL},
    {"extra-node-info", 'B', SB_REQ, SB_REFUSE, NOHW},
    {"get-user-env", 0, SB_OPT, SB_IGNORE, NULL},
    {"gid", 0, SB_REQ, SB_REFUSE, "jobs run as the submitting user"},
    {"gpu-bind", 0, SB_REQ, SB_IGNORE, NULL},
    {"gpu-freq", 0, SB_REQ, SB_IGNORE, NULL},
    {"gpus", 'G', SB_REQ, SB_DO, NULL},
    {"gpus-per-node", 0, SB_REQ, SB_DO, NULL},
    {"gpus-per-socket", 0, SB_REQ, SB_REFUSE, NOHW},
    {"gpus-per-task", 0, SB_REQ, SB_DO, NULL},
    {"gres", 0, SB_REQ, SB_DO, NULL},
    {"gres-flags", 0, SB_REQ, SB_IGNORE, NULL},
    {"help", 'h', SB_NONE, SB_CLI, NULL},
    {"hint", 0, SB_REQ, SB_IGNORE, NULL},
    {"hold", 'H', SB_NONE, SB_DO, NULL},
    {"ignore-pbs", 0, SB_NONE, SB_IGNORE, NULL},
    {"input", 'i', SB_REQ, SB_REFUSE, "a docket job's standard input is /dev/null"},
    {"job-name", 'J', SB_REQ, SB_DO, NULL},
    {"kill-on-invalid-dep", 0, SB_REQ, SB_IGNORE, NULL},
    {"licenses", 'L', SB_REQ, SB_REFUSE, "docket has no licenses"},
    {"mail-type", 0, SB_REQ, SB_IGNORE, NULL},
    {"mail-user", 0, SB_REQ, SB_IGNORE, NULL},
    {"mcs-label", 0, SB_REQ, SB_IGNORE, NULL},
    {"mem", 0, SB_REQ, SB_DO, NULL},
    {"mem-bind", 0, SB_REQ, SB_IGNORE, NULL},
    {"mem-per-cpu", 0, SB_REQ, SB_DO, NULL},
    {"mem-per-gpu", 0, SB_REQ, SB_DO, NULL},
    {"mem-update", 0, SB_REQ, SB_IGNORE, NULL},
    {"mincpus", 0, SB_REQ, SB_DO, NULL},
    {"network", 0, SB_REQ, SB_IGNORE, NULL},
    {"nice", 0, SB_OPT, SB_IGNORE, NULL},
    {"no-kill", 'k', SB_OPT, SB_IGNORE, NULL},
    {"no-requeue", 0, SB_NONE, SB_DO, NULL},
    {"nodefile", 'F', SB_REQ, SB_REFUSE, PLACE},
    {"nodelist", 'w', SB_REQ, SB_REFUSE, PLACE},
    {"nodes", 'N', SB_REQ, SB_DO, NULL},
    {"ntasks", 'n', SB_REQ, SB_DO, NULL},
    {"ntasks-per-core", 0, SB_REQ, SB_IGNORE, NULL},
    {"ntasks-per-gpu", 0, SB_REQ, SB_DO, NULL},
    {"ntasks-per-node", 0, SB_REQ, SB_DO, NULL},
    {"ntasks-per-socket", 0, SB_REQ, SB_IGNORE, NULL},
    {"ntasks-per-tres", 0, SB_REQ, SB_REFUSE, "write --ntasks-per-gpu"},
    {"oom-kill-step", 0, SB_OPT, SB_IGNORE, NULL},
    {"open-mode", 0, SB_REQ, SB_IGNORE, NULL},
    {"output", 'o', SB_REQ, SB_DO, NULL},
    {"overcommit", 'O', SB_NONE, SB_IGNORE, NULL},
    {"oversubscribe", 's', SB_NONE, SB_IGNORE, NULL},
    {"parsable", 0, SB_NONE, SB_CLI, NULL},
    {"partition", 'p', SB_REQ, SB_DO, NULL},
    {"prefer", 0, SB_REQ, SB_IGNORE, NULL},
    {"priority", 0, SB_REQ, SB_REFUSE, "priority comes from the project's tier"},
    {"profile", 0, SB_REQ, SB_IGNORE, NULL},
    {"propagate", 0, SB_OPT, SB_IGNORE, NULL},
    {"qos", 'q', SB_REQ, SB_DO, NULL},
    {"quiet", 'Q', SB_NONE, SB_CLI, NULL},
    {"reboot", 0, SB_NONE, SB_REFUSE, "docket does not reboot nodes"},
    {"requeue", 0, SB_OPT, SB_DO, NULL},
    {"reservation", 0, SB_REQ, SB_REFUSE, "docket has no reservations"},
    {"resources", 0, SB_REQ, SB_REFUSE, "not a job option"},
    {"resv-ports", 0, SB_OPT, SB_IGNORE, NULL},
    {"runtime", 0, SB_REQ, SB_REFUSE, "not a job option"},
    {"segment", 0, SB_REQ, SB_REFUSE, PLACE},
    {"signal", 0, SB_REQ, SB_DO, NULL},
    {"sockets-per-node", 0, SB_REQ, SB_REFUSE, NOHW},
    {"spread-job", 0, SB_NONE, SB_IGNORE, NULL},
    {"spread-segments", 0, SB_NONE, SB_IGNORE, NULL},
    {"stepmgr", 0, SB_NONE, SB_IGNORE, NULL},
    {"switches", 0, SB_REQ, SB_DO, NULL},
    {"tasks-per-node", 0, SB_REQ, SB_DO, NULL},
    {"test-only", 0, SB_NONE, SB_CLI, NULL},
    {"thread-spec", 0, SB_REQ, SB_REFUSE, NOHW},
    {"threads-per-core", 0, SB_REQ, SB_REFUSE, NOHW},
    {"time", 't', SB_REQ, SB_DO, NULL},
    {"time-min", 0, SB_REQ, SB_IGNORE, NULL},
    {"tmp", 0, SB_REQ, SB_REFUSE, "docket does not allocate local disk"},
    {"tres-bind", 0, SB_REQ, SB_IGNORE, NULL},
    {"tres-per-task", 0, SB_REQ, SB_REFUSE, "write --cpus-per-task and --gpus-per-task"},
    {"uid", 0, SB_REQ, SB_REFUSE, "jobs run as the submitting user"},
    {"usage", 0, SB_NONE, SB_CLI, NULL},
    {"use-min-nodes", 0, SB_NONE, SB_IGNORE, NULL},
    {"verbose", 'v', SB_NONE, SB_CLI, NULL},
    {"version", 'V', SB_NONE, SB_CLI, NULL},
    {"wait", 'W', SB_NONE, SB_CLI, NULL},
    {"wait-all-nodes", 0, SB_REQ, SB_IGNORE, NULL},
    {"wckey", 0, SB_REQ, SB_IGNORE, NULL},
    {"wrap", 0, SB_REQ, SB_CLI, NULL},
    {NULL, 0, 0, 0, NULL},
};

#undef PLACE
#undef NOHW

static const struct sbatch_opt *sbatch_short(char c)
{
    for (const struct sbatch_opt *o = sbatch_opts; o->name; o++)
        if (o->short_name == c)
            return o;
    return NULL;
}

/* As getopt_long: an exact name, else the only one that starts with `name`. NULL with err
 * when there is none or more than one. */
static const struct sbatch_opt *sbatch_long(const char *name, size_t n, char *err, size_t errlen)
{
    const struct sbatch_opt *found = NULL;
    char list[256] = "";
    int count = 0;

    for (const struct sbatch_opt *o = sbatch_opts; o->name; o++)
        if (strlen(o->name) == n && !strncmp(o->name, name, n))
            return o;
    for (const struct sbatch_opt *o = sbatch_opts; o->name; o++) {
        if (strncmp(o->name, name, n))
            continue;
        found = o;
        count++;
        size_t l = strlen(list);
        snprintf(list + l, sizeof(list) - l, "%s--%s", l ? ", " : "", o->name);
    }
    if (count == 1)
        return found;
    if (count == 0)
        snprintf(err, errlen, "unrecognized option '--%.*s' (sbatch has no such option)",
                 (int)(n > 60 ? 60 : n), name);
    else
        snprintf(err, errlen, "option '--%.*s' is ambiguous (%s)", (int)(n > 60 ? 60 : n), name,
                 list);
    return NULL;
}

static json_t *hidden(json_t *spec, const char *key)
{
    return spec_sub_object(spec, key);
}

static void hidden_int(json_t *spec, const char *key, int64_t v)
{
    json_object_set_new(hidden(spec, "__slurm"), key, json_integer(v));
}

static int slurm_count(json_t *spec, const char *key, const char *flag, const char *v, int min,
                       int max, char *err, size_t errlen)
{
    int n;

    if (parse_int(v, min, max, &n) < 0) {
        snprintf(err, errlen, "%s: want an integer from %d to %d, not '%.100s'", flag, min, max, v);
        return -EINVAL;
    }
    hidden_int(spec, key, n);
    return 0;
}

/* Slurm sizes: a bare number is MiB; K, M, G, T suffixes. */
static int slurm_size(json_t *spec, const char *key, const char *flag, const char *v, char *err,
                      size_t errlen)
{
    int64_t mb;

    if (parse_size_mb(v, &mb) < 0 || mb < 0)
        return spec_fail(err, errlen, flag, "bad size (e.g. 4000, 4G)", v);
    hidden_int(spec, key, mb);
    return 0;
}

/* --mem=SIZE; 0 asks for all of each node's memory (resolved at submission). */
static int sbatch_mem(json_t *spec, const char *v, char *err, size_t errlen)
{
    int rc = slurm_size(spec, "mem", "--mem", v, err, errlen);

    if (rc == 0 && json_integer_value(json_object_get(hidden(spec, "__slurm"), "mem")) == 0) {
        json_object_del(hidden(spec, "__slurm"), "mem");
        json_object_set_new(hidden(spec, "__cli"), "whole_mem", json_true());
        json_object_del(spec, "mem");
        return 0;
    }
    if (rc == 0)
        json_object_del(json_object_get(spec, "__cli"), "whole_mem");
    return rc;
}

/* --exclusive, --exclusive=exclusive: whole nodes. =user, =mcs, =topo only keep other
 * users' jobs away, which docket does not do: refused. */
static int sbatch_exclusive(json_t *spec, const char *v, char *err, size_t errlen)
{
    if (v && strcmp(v, "exclusive"))
        return spec_fail(err, errlen, "--exclusive",
                         "only whole nodes (plain --exclusive) are supported, not", v);
    json_object_set_new(hidden(spec, "__cli"), "whole_node", json_true());
    return 0;
}

/* sbatch's time: time_str2mins (seconds rounded up to whole minutes); 0, -1, INFINITE
 * and UNLIMITED ask for no limit. */
static int sbatch_time(json_t *spec, const char *v, const struct spec_env *env, char *err,
                       size_t errlen)
{
    int64_t ms;
    int rc = strcmp(v, "-1") ? spec_slurm_time_ms(v, &ms) : -ERANGE;

    if (rc == 0 && ms == 0)
        rc = -ERANGE;
    if (rc == -ERANGE) {
        warnf(env, "#SBATCH --time=%s: docket has no unlimited jobs; the class's limit applies", v);
        json_object_del(spec, "time_limit");
        return 0;
    }
    if (rc < 0)
        return spec_fail(err, errlen, "--time",
                         "bad time (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS)", v);
    json_object_set_new(spec, "time_limit", json_integer((ms / 1000 + 59) / 60 * 60));
    return 0;
}

/* --switches=N[@max-time]: the gang on at most N switches, waiting at most max-time (Slurm's
 * time format) for them; the API's "switches": "N@<seconds>s" (docs/scheduling.md §3). */
static int sbatch_switches(json_t *spec, const char *v, char *err, size_t errlen)
{
    char count[16], out[64];
    const char *at = strchr(v, '@');
    size_t n = at ? (size_t)(at - v) : strlen(v);
    char *end;

    if (n == 0 || n >= sizeof(count))
        return spec_fail(err, errlen, "--switches", "bad count (N or N@max-time)", v);
    memcpy(count, v, n);
    count[n] = '\0';
    long c = strtol(count, &end, 10);
    if (*end || c < 1 || c > MAX_NODES)
        return spec_fail(err, errlen, "--switches", "bad count (N or N@max-time)", v);
    if (!at) {
        json_object_set_new(spec, "switches", json_integer(c));
        return 0;
    }
    int64_t ms;
    if (spec_slurm_time_ms(at + 1, &ms) < 0)
        return spec_fail(err, errlen, "--switches",
                         "bad max-time (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS)", v);
    snprintf(out, sizeof(out), "%ld@%llds", c, (long long)(ms / 1000));
    json_object_set_new(spec, "switches", json_string(out));
    return 0;
}

/* --signal=[{R|B}:]SIG[@TIME]: SIG is sent TIME seconds (default 60) before the time
 * limit; with B: to the batch shell only. */
static int sbatch_signal(json_t *spec, const char *v, char *err, size_t errlen)
{
    char buf[64];
    const char *name = v;
    bool batch = false;
    char *at;
    int sig, before = 60;

    if (!strncmp(name, "B:", 2) || !strncmp(name, "R:", 2) || !strncmp(name, "BR:", 3) ||
        !strncmp(name, "RB:", 3)) {
        batch = strchr("BR", name[0]) && (name[0] == 'B' || name[1] == 'B');
        name = strchr(name, ':') + 1;
    }
    if (str_copy(buf, sizeof(buf), name) < 0)
        return spec_fail(err, errlen, "--signal", "bad signal", v);
    at = strchr(buf, '@');
    if (at)
        *at++ = '\0';
    if (parse_signal(buf, &sig) < 0 || sig == 9 || sig == 19)
        return spec_fail(err, errlen, "--signal", "unknown or uncatchable signal in", v);
    if (at && parse_int(at, 0, 65535, &before) < 0)
        return spec_fail(err, errlen, "--signal", "want seconds from 0 to 65535 after @ in", v);
    /* not the job's "signal": the limit and preemption send SIGTERM, as Slurm does */
    json_object_set_new(spec, "checkpoint", json_true());
    hidden_int(spec, "signal", sig);
    hidden_int(spec, "signal_before", before);
    json_object_set_new(hidden(spec, "__slurm"), "signal_batch", json_boolean(batch));
    return 0;
}

/* --begin=now+N[seconds|minutes|hours|days|weeks]; absolute dates are refused. */
static int sbatch_begin(json_t *spec, const char *v, char *err, size_t errlen)
{
    static const struct {
        const char *unit;
        int64_t secs;
    } units[] = {{"", 1},          {"s", 1},         {"sec", 1},      {"secs", 1},
                 {"seconds", 1},   {"m", 60},        {"min", 60},     {"mins", 60},
                 {"minutes", 60},  {"h", 3600},      {"hour", 3600},  {"hours", 3600},
                 {"d", 86400},     {"day", 86400},   {"days", 86400}, {"w", 604800},
                 {"week", 604800}, {"weeks", 604800}};
    const char *p;
    int64_t n = 0;
    char out[32];

    if (!strcasecmp(v, "now")) {
        json_object_del(spec, "begin");
        return 0;
    }
    if (strncasecmp(v, "now+", 4))
        return spec_fail(err, errlen, "--begin",
                         "docket reads only now+N[seconds|minutes|hours|days|weeks], not", v);
    for (p = v + 4; *p >= '0' && *p <= '9' && n < 100000000; p++)
        n = n * 10 + (*p - '0');
    if (p == v + 4 || n >= 100000000)
        return spec_fail(err, errlen, "--begin", "bad delay in", v);
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (!strcasecmp(p, units[i].unit)) {
            snprintf(out, sizeof(out), "%llds", (long long)(n * units[i].secs));
            json_object_set_new(spec, "begin", json_string(out));
            return 0;
        }
    return spec_fail(err, errlen, "--begin", "unknown unit in", v);
}

/* --export=ALL|NONE|[ALL,]VAR[=VALUE],...: which of the submitter's variables the job
 * gets (sbatch's default is ALL: collected by the submitting verb). */
static int sbatch_export(json_t *spec, const char *v, char *err, size_t errlen)
{
    char buf[4096], why[400];
    char *cur = buf;
    bool all = false;

    if (str_copy(buf, sizeof(buf), v) < 0 || !buf[0])
        return spec_fail(err, errlen, "--export", "bad value", v);
    for (char *p = spec_next_field(&cur, ","); p; p = spec_next_field(&cur, ",")) {
        if (!strcmp(p, "ALL")) {
            all = true;
        } else if (!strcmp(p, "NONE") || !strcmp(p, "NIL")) {
            all = false;
        } else if (spec_set_env(spec, p, why, sizeof(why)) < 0) {
            snprintf(err, errlen, "--export: %s", strncmp(why, "--env: ", 7) ? why : why + 7);
            return -EINVAL;
        }
    }
    json_object_set_new(hidden(spec, "__cli"), "export_all", json_boolean(all));
    return 0;
}

/* -A, --account: the project. Some sites name an account with the hardware it is billed
 * on, "six@a100" (IDRIS's Jean Zay): the project is the part before '@', with a warning
 * (docket bills GPUs by type through its policy, not through the account's name). */
static int sbatch_account(json_t *spec, const char *v, const struct spec_env *env, char *err,
                          size_t errlen)
{
    const char *at = strchr(v, '@');
    char name[64];

    if (!at || at == v || (size_t)(at - v) >= sizeof(name) || !at[1])
        return spec_set_name(spec, "project", "--account", v, err, errlen);
    memcpy(name, v, (size_t)(at - v));
    name[at - v] = '\0';
    if (!str_is_name(name) || !str_is_name(at + 1))
        return spec_fail(err, errlen, "--account", "bad account name", v);
    warnf(env,
          "#SBATCH --account=%s: the project is '%s' ('@%s' names a billing partition, "
          "which docket does not use)",
          v, name, at + 1);
    json_object_set_new(spec, "project", json_string(name));
    return 0;
}

/* The options that are read into the job. */
static int sbatch_do(json_t *spec, const char *name, const char *v, const struct spec_env *env,
                     char *err, size_t errlen)
{
    char flag[80];

    snprintf(flag, sizeof(flag), "--%s", name);
    if (!strcmp(name, "job-name"))
        return spec_set_text(spec, "name", flag, v, err, errlen);
    if (!strcmp(name, "account"))
        return sbatch_account(spec, v, env, err, errlen);
    if (!strcmp(name, "gres"))
        return sbatch_gres(spec, v, env, err, errlen);
    if (!strcmp(name, "gpus"))
        return sbatch_gpus(spec, v, false, flag, err, errlen);
    if (!strcmp(name, "gpus-per-node"))
        return sbatch_gpus(spec, v, true, flag, err, errlen);
    if (!strcmp(name, "cpus-per-task"))
        return slurm_count(spec, "cpus_per_task", flag, v, 1, 100000, err, errlen);
    if (!strcmp(name, "ntasks"))
        return slurm_count(spec, "ntasks", flag, v, 1, 100000, err, errlen);
    if (!strcmp(name, "ntasks-per-node") || !strcmp(name, "tasks-per-node"))
        return slurm_count(spec, "ntasks_per_node", flag, v, 1, 100000, err, errlen);
    if (!strcmp(name, "gpus-per-task"))
        return slurm_count(spec, "gpus_per_task", flag, v, 1, MAX_GPUS_PER_NODE, err, errlen);
    if (!strcmp(name, "ntasks-per-gpu"))
        return slurm_count(spec, "ntasks_per_gpu", flag, v, 1, 100000, err, errlen);
    if (!strcmp(name, "cpus-per-gpu"))
        return slurm_count(spec, "cpus_per_gpu", flag, v, 1, 100000, err, errlen);
    if (!strcmp(name, "mincpus"))
        return slurm_count(spec, "mincpus", flag, v, 1, 100000, err, errlen);
    if (!strcmp(name, "mem"))
        return sbatch_mem(spec, v, err, errlen);
    if (!strcmp(name, "mem-per-cpu"))
        return slurm_size(spec, "mem_per_cpu", flag, v, err, errlen);
    if (!strcmp(name, "mem-per-gpu"))
        return slurm_size(spec, "mem_per_gpu", flag, v, err, errlen);
    if (!strcmp(name, "exclusive"))
        return sbatch_exclusive(spec, v, err, errlen);
    if (!strcmp(name, "time"))
        return sbatch_time(spec, v, env, err, errlen);
    if (!strcmp(name, "nodes"))
        return sbatch_nodes(spec, v, env, err, errlen);
    if (!strcmp(name, "output") || !strcmp(name, "error"))
        return spec_set_text(spec, name, flag, v, err, errlen);
    if (!strcmp(name, "array"))
        return spec_set_array(spec, v, flag, err, errlen);
    if (!strcmp(name, "dependency"))
        return spec_set_dependency(spec, v, flag, err, errlen);
    if (!strcmp(name, "constraint")) { /* the grammar is read by docketd (core/constraint.c) */
        json_object_set_new(spec, "constraint", json_string(v));
        return 0;
    }
    if (!strcmp(name, "partition") || !strcmp(name, "qos"))
        return sbatch_partition(spec, name, v, env, err, errlen);
    if (!strcmp(name, "chdir"))
        return spec_set_text(spec, "workdir", flag, v, err, errlen);
    if (!strcmp(name, "begin"))
        return sbatch_begin(spec, v, err, errlen);
    if (!strcmp(name, "switches"))
        return sbatch_switches(spec, v, err, errlen);
    if (!strcmp(name, "export"))
        return sbatch_export(spec, v, err, errlen);
    if (!strcmp(name, "signal"))
        return sbatch_signal(spec, v, err, errlen);
    /* Pyxis's options (docs/slurm.md): the job runs in the image */
    if (!strcmp(name, "container-image"))
        return spec_set_container(spec, SO_IMAGE, flag, v, err, errlen);
    if (!strcmp(name, "container-mounts"))
        return spec_set_container(spec, SO_MOUNTS, flag, v, err, errlen);
    if (!strcmp(name, "container-workdir"))
        return spec_set_container(spec, SO_CONTAINER_WORKDIR, flag, v, err, errlen);
    if (!strcmp(name, "container-env"))
        return spec_set_container(spec, SO_CONTAINER_ENV, flag, v, err, errlen);
    if (!strcmp(name, "hold")) {
        json_object_set_new(spec, "hold", json_true());
        return 0;
    }
    if (!strcmp(name, "no-requeue")) {
        json_object_set_new(spec, "requeue", json_false());
        return 0;
    }
    /* requeue */
    json_object_set_new(spec, "requeue", json_true());
    return 0;
}

static int sbatch_one(json_t *spec, const struct sbatch_opt *o, const char *v,
                      const struct spec_env *env, char *err, size_t errlen)
{
    switch (o->kind) {
    case SB_DO:
        return sbatch_do(spec, o->name, v, env, err, errlen);
    case SB_CLI:
        json_object_set_new(hidden(spec, "__cli"), o->name, json_string(v ? v : ""));
        return 0;
    case SB_REFUSE:
        snprintf(err, errlen, "--%s is not supported: %s", o->name, o->why);
        return -EINVAL;
    default:
        warnf(env, "#SBATCH --%s%s%s changes nothing in docket; ignored", o->name, v ? "=" : "",
              v ? v : "");
        return 0;
    }
}

int spec_apply_sbatch(json_t *spec, const char *name, const char *v, const struct spec_env *env,
                      char *err, size_t errlen)
{
    const struct sbatch_opt *o = sbatch_long(name, strlen(name), err, errlen);

    if (!o)
        return -EINVAL;
    if (o->arg == SB_REQ && !v)
        return spec_fail(err, errlen, o->name, "needs a value", "");
    return sbatch_one(spec, o, v, env, err, errlen);
}

/* One long option w[*i] ("--name", "--name=value", "--name value"). */
static int sbatch_long_word(json_t *spec, char **w, int n, int *i, const struct spec_env *env,
                            char *err, size_t errlen)
{
    const char *word = w[*i] + 2, *eq = strchr(word, '=');
    size_t len = eq ? (size_t)(eq - word) : strlen(word);
    const struct sbatch_opt *o = sbatch_long(word, len, err, errlen);
    const char *v = eq ? eq + 1 : NULL;

    if (!o)
        return -EINVAL;
    if (o->arg == SB_NONE && v) {
        snprintf(err, errlen, "option '--%s' doesn't allow an argument", o->name);
        return -EINVAL;
    }
    if (o->arg == SB_REQ && !v) {
        if (*i + 1 >= n) {
            snprintf(err, errlen, "option '--%s' requires an argument", o->name);
            return -EINVAL;
        }
        v = w[++*i];
    }
    return sbatch_one(spec, o, v, env, err, errlen);
}

/* A cluster of short options w[*i] ("-H", "-N2", "-N 2", "-Hv"). */
static int sbatch_short_word(json_t *spec, char **w, int n, int *i, const struct spec_env *env,
                             char *err, size_t errlen)
{
    const char *word = w[*i];

    for (const char *p = word + 1; *p; p++) {
        const struct sbatch_opt *o = sbatch_short(*p);
        const char *v = NULL;
        int rc;

        if (!o) {
            snprintf(err, errlen, "invalid option -- '%c' (sbatch has no such option)", *p);
            return -EINVAL;
        }
        if (o->arg != SB_NONE && p[1]) {
            v = p + 1;
        } else if (o->arg == SB_REQ) {
            if (*i + 1 >= n) {
                snprintf(err, errlen, "option requires an argument -- '%c'", *p);
                return -EINVAL;
            }
            v = w[++*i];
        }
        rc = sbatch_one(spec, o, v, env, err, errlen);
        if (rc || v)
            return rc;
    }
    return 0;
}

int spec_sbatch_args(json_t *spec, char **w, int n, const struct spec_env *env, int *stop,
                     char *err, size_t errlen)
{
    int i;

    for (i = 0; i < n; i++) {
        int rc;

        if (!strcmp(w[i], "--")) {
            i++;
            break;
        }
        if (!strncmp(w[i], "--", 2))
            rc = sbatch_long_word(spec, w, n, &i, env, err, errlen);
        else if (w[i][0] == '-' && w[i][1])
            rc = sbatch_short_word(spec, w, n, &i, env, err, errlen);
        else
            break;
        if (rc)
            return rc;
    }
    *stop = i;
    return 0;
}

/* One #SBATCH line's words: every word must be an option (sbatch: "Invalid directive"). */
int spec_sbatch_words(json_t *spec, char **w, int n, const struct spec_env *env, char *err,
                      size_t errlen)
{
    int stop = 0;
    int rc = spec_sbatch_args(spec, w, n, env, &stop, err, errlen);

    if (rc == 0 && stop < n) {
        snprintf(err, errlen, "invalid directive '%.60s' (not an option)", w[stop]);
        return -EINVAL;
    }
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Per-task requests into per-node ones                                                  */

static int64_t slurm_get(const json_t *sl, const char *key)
{
    return json_integer_value(json_object_get(sl, key)); /* 0 when absent */
}

/* Total GPUs (-G) spread evenly over the nodes. */
static int spread_gpus(json_t *spec, char *err, size_t errlen)
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

/* Tasks per node: --ntasks-per-node, else --ntasks over the nodes, else per GPU. */
static int tasks_per_node(const json_t *sl, int64_t nodes, int64_t gpn, int64_t *tpn, char *err,
                          size_t errlen)
{
    int64_t ntasks = slurm_get(sl, "ntasks"), per_gpu = slurm_get(sl, "ntasks_per_gpu");

    *tpn = slurm_get(sl, "ntasks_per_node");
    if (ntasks && ntasks < nodes) {
        snprintf(err, errlen, "--ntasks=%lld is fewer than the %lld nodes asked for",
                 (long long)ntasks, (long long)nodes);
        return -EINVAL;
    }
    if (*tpn && ntasks && ntasks > *tpn * nodes) {
        snprintf(err, errlen, "--ntasks=%lld does not fit in %lld nodes of --ntasks-per-node=%lld",
                 (long long)ntasks, (long long)nodes, (long long)*tpn);
        return -EINVAL;
    }
    if (!*tpn && ntasks)
        *tpn = (ntasks + nodes - 1) / nodes;
    if (!*tpn && per_gpu) {
        if (!gpn) {
            snprintf(err, errlen, "--ntasks-per-gpu needs GPUs (--gpus-per-node, --gres)");
            return -EINVAL;
        }
        *tpn = gpn * per_gpu;
    }
    if (!*tpn)
        *tpn = 1;
    return 0;
}

/* Memory per node from --mem, --mem-per-cpu or --mem-per-gpu (only one, as sbatch). */
static int node_mem(json_t *spec, const json_t *sl, int64_t cpus, int64_t gpn, char *err,
                    size_t errlen)
{
    bool whole = json_is_true(json_object_get(json_object_get(spec, "__cli"), "whole_mem"));
    const char *which[3] = {"mem", "mem_per_cpu", "mem_per_gpu"};
    int given = whole;
    int64_t mb;

    for (int i = 0; i < 3; i++)
        given += json_object_get(sl, which[i]) != NULL;
    if (given > 1) {
        snprintf(err, errlen, "--mem, --mem-per-cpu and --mem-per-gpu are mutually exclusive");
        return -EINVAL;
    }
    if (json_object_get(sl, "mem_per_gpu") && !gpn) {
        snprintf(err, errlen, "--mem-per-gpu needs GPUs (--gpus-per-node, --gres)");
        return -EINVAL;
    }
    mb = json_object_get(sl, "mem")           ? slurm_get(sl, "mem")
         : json_object_get(sl, "mem_per_cpu") ? slurm_get(sl, "mem_per_cpu") * cpus
         : json_object_get(sl, "mem_per_gpu") ? slurm_get(sl, "mem_per_gpu") * gpn
                                              : -1;
    if (mb > (int64_t)64 * 1024 * 1024) {
        snprintf(err, errlen, "memory per node %lld MiB is more than any node has", (long long)mb);
        return -EINVAL;
    }
    if (mb > 0)
        json_object_set_new(spec, "mem", json_integer(mb));
    return 0;
}

int spec_slurm_finish(json_t *spec, char *err, size_t errlen)
{
    json_t *sl = json_object_get(spec, "__slurm");
    int64_t nodes = json_integer_value(json_object_get(spec, "nodes")), gpn, tpn, cpt, cpus;
    json_t *block;

    if (!sl)
        sl = hidden(spec, "__slurm");
    if (nodes < 1)
        nodes = 1;
    if (spread_gpus(spec, err, errlen) < 0)
        return -EINVAL;
    gpn = json_integer_value(json_object_get(spec, "gpus"));
    if (tasks_per_node(sl, nodes, gpn, &tpn, err, errlen) < 0)
        return -EINVAL;
    if (slurm_get(sl, "gpus_per_task")) {
        if (json_object_get(spec, "gpus") && gpn != slurm_get(sl, "gpus_per_task") * tpn) {
            snprintf(err, errlen,
                     "--gpus-per-task=%lld x %lld tasks per node disagrees with %lld GPUs per "
                     "node",
                     (long long)slurm_get(sl, "gpus_per_task"), (long long)tpn, (long long)gpn);
            return -EINVAL;
        }
        gpn = slurm_get(sl, "gpus_per_task") * tpn;
        if (gpn > MAX_GPUS_PER_NODE) {
            snprintf(err, errlen, "--gpus-per-task: %lld GPUs per node is too many",
                     (long long)gpn);
            return -EINVAL;
        }
        json_object_set_new(spec, "gpus", json_integer(gpn));
    }
    cpt = slurm_get(sl, "cpus_per_task") ? slurm_get(sl, "cpus_per_task") : 1;
    cpus = tpn * cpt;
    if (slurm_get(sl, "cpus_per_gpu") * gpn > cpus)
        cpus = slurm_get(sl, "cpus_per_gpu") * gpn;
    if (slurm_get(sl, "mincpus") > cpus)
        cpus = slurm_get(sl, "mincpus");
    if (cpus > 100000) {
        snprintf(err, errlen, "%lld CPUs per node is too many", (long long)cpus);
        return -EINVAL;
    }
    if (cpus > 1 || json_object_get(sl, "cpus_per_task"))
        json_object_set_new(spec, "cpus", json_integer(cpus));
    if (node_mem(spec, sl,
                 json_object_get(spec, "cpus") ? json_integer_value(json_object_get(spec, "cpus"))
                                               : 1,
                 gpn, err, errlen) < 0)
        return -EINVAL;
    block = json_pack("{s:I,s:I,s:I,s:I}", "ntasks",
                      (json_int_t)(slurm_get(sl, "ntasks") ? slurm_get(sl, "ntasks") : tpn * nodes),
                      "ntasks_per_node", (json_int_t)tpn, "cpus_per_task", (json_int_t)cpt,
                      "gpus_per_task", (json_int_t)slurm_get(sl, "gpus_per_task"));
    if (json_object_get(sl, "signal_before")) {
        json_object_set_new(block, "signal", json_integer(slurm_get(sl, "signal")));
        json_object_set_new(block, "signal_before", json_integer(slurm_get(sl, "signal_before")));
        json_object_set(block, "signal_batch", json_object_get(sl, "signal_batch"));
    }
    json_object_set_new(spec, "slurm", block);
    json_object_del(spec, "__slurm");
    return 0;
}

json_t *spec_take_cli(json_t *spec)
{
    json_t *cli = json_object_get(spec, "__cli");

    if (!cli)
        return json_object();
    json_incref(cli);
    json_object_del(spec, "__cli");
    return cli;
}

int spec_finish(json_t *spec, char *err, size_t errlen)
{
    return spread_gpus(spec, err, errlen);
}
