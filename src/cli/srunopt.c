/*
 * srunopt.c - srun's command line as Slurm's srun reads it (srun.h, srun_parse_args):
 * every long option of `man srun` is known, so a prefix is unique or ambiguous exactly as
 * for srun's getopt_long; those that change a step are honoured, those that only tune it
 * are gathered into one warning line, and those docket cannot honour are refused with the
 * reason. Then the step's nodes (-N, -w, -x, -r) and tasks (-n, --ntasks-per-node, the
 * job's own counts) are settled as srun settles them inside an allocation. Pure: the job
 * comes in struct srun_env, nothing is read from the environment (tests/fuzz/cli).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/slurm.h"
#include "cli/srun.h"
#include "protocol/container.h"
#include "util/parse.h"
#include "util/str.h"

enum sr_arg { ARG_NONE, ARG_REQ, ARG_OPT };
enum sr_kind {
    K_DO,     /* honoured: the switch in apply() */
    K_TUNE,   /* changes only how well a step runs: named in the one warning line */
    K_QUIET,  /* what docket's srun does anyway: accepted silently */
    K_REFUSE, /* cannot be honoured: refused with `why` */
};

/* The options srun_parse_args acts on (K_DO); 0 for the others. */
enum sr_id {
    O_NONE,
    O_NTASKS,
    O_NODES,
    O_PER_NODE,
    O_CPUS,
    O_GPUS_PER_TASK,
    O_LABEL,
    O_EXPORT,
    O_KILL_BAD,
    O_WAIT,
    O_NODELIST,
    O_EXCLUDE,
    O_RELATIVE,
    O_EXCLUSIVE,
    O_OUTPUT,
    O_ERROR,
    O_CPU_BIND,
    O_DISTRIBUTION,
    O_JOBID,
    O_CHDIR,
    O_IMAGE,
    O_MOUNTS,
    O_CONTAINER_WORKDIR,
    O_CONTAINER_ENV,
    O_HELP,
    O_VERSION,
};

struct sr_opt {
    const char *name;
    char short_name;
    unsigned char arg, kind, id;
    const char *why; /* K_REFUSE: why, and what to do instead */
};

#define NOHW   "docket allocates GPUs, CPUs and memory per node, not sockets, cores or threads"
#define NOJOB  "srun runs a step of the job it is in; this is a job option (put it in sbatch)"
#define NOHOOK "run it at the start of the step's command instead"
#define NOPYXIS                                                                                    \
    "each task runs in a fresh container of --container-image (no named or saved "                 \
    "containers, no entrypoint)"

/* Every long option of srun (Slurm 23.11's table), sorted. */
static const struct sr_opt sr_opts[] = {
    {"accel-bind", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"account", 'A', ARG_REQ, K_QUIET, 0, NULL},
    {"acctg-freq", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"bb", 0, ARG_REQ, K_REFUSE, 0, "docket has no burst buffers"},
    {"bbf", 0, ARG_REQ, K_REFUSE, 0, "docket has no burst buffers"},
    {"bcast", 0, ARG_OPT, K_TUNE, 0, NULL},
    {"bcast-exclude", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"begin", 'b', ARG_REQ, K_REFUSE, 0, NOJOB},
    {"chdir", 'D', ARG_REQ, K_DO, O_CHDIR, NULL},
    {"cluster-constraint", 0, ARG_REQ, K_REFUSE, 0, "docket schedules one cluster"},
    {"clusters", 'M', ARG_REQ, K_REFUSE, 0, "docket schedules one cluster"},
    {"comment", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"compress", 0, ARG_OPT, K_TUNE, 0, NULL},
    {"constraint", 'C', ARG_REQ, K_TUNE, 0, NULL},
    {"container", 0, ARG_REQ, K_REFUSE, 0,
     "docket runs OCI images, not bundles: give the image with --container-image"},
    /* Pyxis's (a SPANK plugin's) options; each task gets a fresh container of the image */
    {"container-entrypoint", 0, ARG_NONE, K_REFUSE, 0, NOPYXIS},
    {"container-env", 0, ARG_REQ, K_DO, O_CONTAINER_ENV, NULL},
    {"container-id", 0, ARG_REQ, K_REFUSE, 0, "give the image with --container-image"},
    {"container-image", 0, ARG_REQ, K_DO, O_IMAGE, NULL},
    {"container-mount-home", 0, ARG_NONE, K_REFUSE, 0,
     "mount the home directory with --container-mounts"},
    {"container-mounts", 0, ARG_REQ, K_DO, O_MOUNTS, NULL},
    {"container-name", 0, ARG_REQ, K_REFUSE, 0, NOPYXIS},
    {"container-readonly", 0, ARG_NONE, K_QUIET, 0, NULL},
    {"container-remap-root", 0, ARG_NONE, K_REFUSE, 0, "tasks run as the job's user"},
    {"container-save", 0, ARG_REQ, K_REFUSE, 0, NOPYXIS},
    {"container-workdir", 0, ARG_REQ, K_DO, O_CONTAINER_WORKDIR, NULL},
    {"container-writable", 0, ARG_NONE, K_REFUSE, 0,
     "a node's unpacked image is shared by its jobs: read-only; write to a mount"},
    {"contiguous", 0, ARG_NONE, K_TUNE, 0, NULL},
    {"core-spec", 'S', ARG_REQ, K_REFUSE, 0, NOHW},
    {"cores-per-socket", 0, ARG_REQ, K_REFUSE, 0, NOHW},
    {"cpu-bind", 0, ARG_REQ, K_DO, O_CPU_BIND, NULL},
    {"cpu-freq", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"cpu_bind", 0, ARG_REQ, K_DO, O_CPU_BIND, NULL},
    {"cpus-per-gpu", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"cpus-per-task", 'c', ARG_REQ, K_DO, O_CPUS, NULL},
    {"deadline", 0, ARG_REQ, K_REFUSE, 0, NOJOB},
    {"debugger-test", 0, ARG_NONE, K_REFUSE, 0, "not a step option"},
    {"delay-boot", 0, ARG_REQ, K_REFUSE, 0, NOJOB},
    {"dependency", 'd', ARG_REQ, K_REFUSE, 0, NOJOB},
    {"disable-status", 'X', ARG_NONE, K_QUIET, 0, NULL},
    {"distribution", 'm', ARG_REQ, K_DO, O_DISTRIBUTION, NULL},
    {"epilog", 0, ARG_REQ, K_REFUSE, 0, NOHOOK},
    {"error", 'e', ARG_REQ, K_DO, O_ERROR, NULL},
    {"exact", 0, ARG_NONE, K_QUIET, 0, NULL},
    {"exclude", 'x', ARG_REQ, K_DO, O_EXCLUDE, NULL},
    {"exclusive", 0, ARG_OPT, K_DO, O_EXCLUSIVE, NULL},
    {"export", 0, ARG_REQ, K_DO, O_EXPORT, NULL},
    {"export-file", 0, ARG_REQ, K_REFUSE, 0, "write the variables with --export"},
    {"external-launcher", 0, ARG_NONE, K_REFUSE, 0, "not a step option"},
    {"extra-node-info", 'B', ARG_REQ, K_REFUSE, 0, NOHW},
    {"gid", 0, ARG_REQ, K_REFUSE, 0, "steps run as the job's user"},
    {"gpu-bind", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"gpu-freq", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"gpus", 'G', ARG_REQ, K_TUNE, 0, NULL},
    {"gpus-per-node", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"gpus-per-socket", 0, ARG_REQ, K_REFUSE, 0, NOHW},
    {"gpus-per-task", 0, ARG_REQ, K_DO, O_GPUS_PER_TASK, NULL},
    {"gres", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"gres-flags", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"help", 'h', ARG_NONE, K_DO, O_HELP, NULL},
    {"het-group", 0, ARG_REQ, K_REFUSE, 0,
     "docket jobs are not heterogeneous: a job has one component, so start one srun per "
     "command (in the background with &, then wait)"},
    {"hint", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"hold", 'H', ARG_NONE, K_REFUSE, 0, NOJOB},
    {"immediate", 'I', ARG_OPT, K_QUIET, 0, NULL},
    {"input", 'i', ARG_REQ, K_REFUSE, 0, "a step's standard input is srun's own: redirect it"},
    {"job-name", 'J', ARG_REQ, K_QUIET, 0, NULL},
    {"jobid", 0, ARG_REQ, K_DO, O_JOBID, NULL},
    {"kill-on-bad-exit", 'K', ARG_OPT, K_DO, O_KILL_BAD, NULL},
    {"label", 'l', ARG_NONE, K_DO, O_LABEL, NULL},
    {"licenses", 'L', ARG_REQ, K_REFUSE, 0, "docket has no licenses"},
    {"mail-type", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"mail-user", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"mcs-label", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"mem", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"mem-bind", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"mem-per-cpu", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"mem-per-gpu", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"mem_bind", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"mincpus", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"mpi", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"multi-prog", 0, ARG_NONE, K_REFUSE, 0,
     "run one command that picks its program by $SLURM_PROCID instead"},
    {"network", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"nice", 0, ARG_OPT, K_TUNE, 0, NULL},
    {"no-allocate", 'Z', ARG_NONE, K_REFUSE, 0, "steps run inside their job's allocation"},
    {"no-container-entrypoint", 0, ARG_NONE, K_QUIET, 0, NULL},
    {"no-container-mount-home", 0, ARG_NONE, K_QUIET, 0, NULL},
    {"no-container-remap-root", 0, ARG_NONE, K_QUIET, 0, NULL},
    {"no-kill", 'k', ARG_OPT, K_TUNE, 0, NULL},
    {"nodefile", 'F', ARG_REQ, K_REFUSE, 0, "name the job's nodes with -w NODE,..."},
    {"nodelist", 'w', ARG_REQ, K_DO, O_NODELIST, NULL},
    {"nodes", 'N', ARG_REQ, K_DO, O_NODES, NULL},
    {"ntasks", 'n', ARG_REQ, K_DO, O_NTASKS, NULL},
    {"ntasks-per-core", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"ntasks-per-gpu", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"ntasks-per-node", 0, ARG_REQ, K_DO, O_PER_NODE, NULL},
    {"ntasks-per-socket", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"ntasks-per-tres", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"open-mode", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"output", 'o', ARG_REQ, K_DO, O_OUTPUT, NULL},
    {"overcommit", 'O', ARG_NONE, K_TUNE, 0, NULL},
    {"overlap", 0, ARG_NONE, K_QUIET, 0, NULL},
    {"oversubscribe", 's', ARG_NONE, K_TUNE, 0, NULL},
    {"partition", 'p', ARG_REQ, K_QUIET, 0, NULL},
    {"power", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"prefer", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"preserve-env", 'E', ARG_NONE, K_QUIET, 0, NULL},
    {"priority", 0, ARG_REQ, K_REFUSE, 0, NOJOB},
    {"profile", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"prolog", 0, ARG_REQ, K_REFUSE, 0, NOHOOK},
    {"propagate", 0, ARG_OPT, K_TUNE, 0, NULL},
    {"pty", 0, ARG_NONE, K_QUIET, 0, NULL}, /* taken before: cmd_srun */
    {"qos", 'q', ARG_REQ, K_QUIET, 0, NULL},
    {"quiet", 'Q', ARG_NONE, K_QUIET, 0, NULL},
    {"quit-on-interrupt", 0, ARG_NONE, K_QUIET, 0, NULL},
    {"reboot", 0, ARG_NONE, K_REFUSE, 0, "docket does not reboot nodes"},
    {"relative", 'r', ARG_REQ, K_DO, O_RELATIVE, NULL},
    {"reservation", 0, ARG_REQ, K_REFUSE, 0, "docket has no reservations"},
    {"resv-ports", 0, ARG_OPT, K_TUNE, 0, NULL},
    {"segment", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"send-libs", 0, ARG_OPT, K_TUNE, 0, NULL},
    {"signal", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"slurmd-debug", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"sockets-per-node", 0, ARG_REQ, K_REFUSE, 0, NOHW},
    {"spread-job", 0, ARG_NONE, K_TUNE, 0, NULL},
    {"stepmgr", 0, ARG_NONE, K_TUNE, 0, NULL},
    {"switches", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"task-epilog", 0, ARG_REQ, K_REFUSE, 0, NOHOOK},
    {"task-prolog", 0, ARG_REQ, K_REFUSE, 0, NOHOOK},
    {"tasks-per-node", 0, ARG_REQ, K_DO, O_PER_NODE, NULL},
    {"test-only", 0, ARG_NONE, K_REFUSE, 0, "not a step option"},
    {"thread-spec", 0, ARG_REQ, K_REFUSE, 0, NOHW},
    {"threads-per-core", 0, ARG_REQ, K_REFUSE, 0, NOHW},
    {"time", 't', ARG_REQ, K_TUNE, 0, NULL},
    {"time-min", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"tmp", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"tres-bind", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"tres-per-task", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"uid", 0, ARG_REQ, K_REFUSE, 0, "steps run as the job's user"},
    {"unbuffered", 'u', ARG_NONE, K_QUIET, 0, NULL},
    {"usage", 0, ARG_NONE, K_DO, O_HELP, NULL},
    {"use-min-nodes", 0, ARG_NONE, K_TUNE, 0, NULL},
    {"verbose", 'v', ARG_NONE, K_QUIET, 0, NULL},
    {"version", 'V', ARG_NONE, K_DO, O_VERSION, NULL},
    {"wait", 'W', ARG_REQ, K_DO, O_WAIT, NULL},
    {"wckey", 0, ARG_REQ, K_TUNE, 0, NULL},
    {"x11", 0, ARG_OPT, K_REFUSE, 0, "docket forwards no X11; use docket shell"},
    {NULL, 0, 0, 0, 0, NULL},
};

#undef NOHW
#undef NOJOB
#undef NOHOOK
#undef NOPYXIS

static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

static const struct sr_opt *by_short(char c)
{
    for (const struct sr_opt *o = sr_opts; o->name; o++)
        if (o->short_name == c)
            return o;
    return NULL;
}

/* As getopt_long: an exact name, else the only one that starts with it. */
static const struct sr_opt *by_long(const char *name, size_t n, char *err, size_t errlen)
{
    const struct sr_opt *found = NULL;
    int count = 0;
    for (const struct sr_opt *o = sr_opts; o->name; o++) {
        if (strncmp(o->name, name, n))
            continue;
        if (strlen(o->name) == n)
            return o;
        found = o;
        count++;
    }
    if (count == 1)
        return found;
    fail(err, errlen, "%s option '--%.*s'", count ? "ambiguous" : "unrecognized",
         (int)(n > 60 ? 60 : n), name);
    return NULL;
}

/* The tuning options met, for the one warning line. */
static void note_tuning(struct srun_parse *p, const struct sr_opt *o, const char *v)
{
    size_t l = strlen(p->ignored);
    if (l + strlen(o->name) + 8 >= sizeof(p->ignored))
        return;
    snprintf(p->ignored + l, sizeof(p->ignored) - l, "%s--%s%s%.40s", l ? ", " : "", o->name,
             v ? "=" : "", v ? v : "");
}

static int count_arg(const char *flag, const char *v, int lo, int hi, int *out, char *err,
                     size_t len)
{
    if (parse_int(v, lo, hi, out) < 0)
        return fail(err, len, "--%s: want a number from %d to %d, not '%.60s'", flag, lo, hi, v);
    return 0;
}

/* -m block|cyclic[:...][,Pack|NoPack]: the node level is the first word. */
static int distribution(struct srun_parse *p, const char *v, char *err, size_t len)
{
    size_t n = strcspn(v, ":,");
    if ((n == 5 && !strncmp(v, "block", 5)) || (n == 1 && v[0] == '*')) {
        p->st->cyclic = false;
    } else if (n == 6 && !strncmp(v, "cyclic", 6)) {
        p->st->cyclic = true;
    } else if ((n >= 5 && !strncmp(v, "plane", 5)) || (n == 9 && !strncmp(v, "arbitrary", 9))) {
        p->st->cyclic = false;
        note_tuning(p, &(struct sr_opt){"distribution", 0, 0, 0, 0, NULL}, v);
    } else {
        return fail(err, len, "--distribution: unknown '%.60s' (block, cyclic, plane, arbitrary)",
                    v);
    }
    return 0;
}

/* --cpu-bind=[{quiet|verbose},]TYPE: none, rank, map_cpu:LIST, mask_cpu:LIST, and the
 * kinds of unit (cores, threads, sockets, ldoms, boards), which bind each task to its own
 * block of -c CPUs; checked here, applied in the task (srun_bind_cpus). */
static int cpu_bind(struct srun_parse *p, const char *v, char *err, size_t len)
{
    static const char *const types[] = {
        "none",    "no",    "rank",   "map_cpu:", "mask_cpu:", "cores",     "threads",
        "sockets", "ldoms", "boards", "quiet",    "verbose",   "map_ldom:", "mask_ldom:"};
    char buf[512];
    char *save = NULL;
    if (str_copy(buf, sizeof(buf), v) < 0)
        return fail(err, len, "--cpu-bind: too long");
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        size_t k = 0;
        while (k < sizeof(types) / sizeof(types[0]) &&
               (types[k][strlen(types[k]) - 1] == ':' ? strncmp(w, types[k], strlen(types[k]))
                                                      : strcmp(w, types[k])))
            k++;
        if (k == sizeof(types) / sizeof(types[0]))
            return fail(err, len,
                        "--cpu-bind: unknown '%.60s' (none, rank, cores, map_cpu:LIST ...)", w);
        if (types[k][strlen(types[k]) - 1] == ':') /* the list runs to the end */
            break;
    }
    p->st->cpu_bind = v;
    return 0;
}

/* A boolean option's optional value ("-K", "--kill-on-bad-exit=0"). */
static int optional_bool(const char *v, bool *out)
{
    int n;
    if (!v) {
        *out = true;
        return 0;
    }
    if (parse_int(v, 0, 1, &n) < 0)
        return -1;
    *out = n == 1;
    return 0;
}

/* --container-image=REF: oci-layout:/PATH[:TAG] or docker://NAME (protocol/container.h). */
static int container_image(struct srun_parse *p, const char *v, char *err, size_t len)
{
    struct proto_image_ref r;
    struct proto_error pe;
    if (proto_image_ref_parse(v, "--container-image", &r, &pe) < 0)
        return fail(err, len, "%s", pe.message);
    p->st->image = v;
    return 0;
}

/* --container-mounts=SRC:DST[:ro],...: each read as a job's mount is; where a source may
 * come from is the node's to check (the job's workdir, its project's storage). */
static int container_mounts(struct srun_parse *p, const char *v, char *err, size_t len)
{
    json_t *text = json_string(v), *out = json_array();
    struct proto_error pe;
    int rc = text && out ? proto_mounts_parse(text, "--container-mounts", out, &pe) : -1;
    json_decref(text);
    json_decref(out);
    if (rc < 0)
        return fail(err, len, "%s", text ? pe.message : "out of memory");
    p->st->mounts = v;
    return 0;
}

static int apply(struct srun_parse *p, const struct sr_opt *o, const char *v, char *err, size_t len)
{
    struct step *st = p->st;
    switch ((enum sr_id)o->id) {
    case O_NTASKS:
        return count_arg(o->name, v, 1, SRUN_MAX_TASKS * SRUN_MAX_NODES, &p->ntasks, err, len);
    case O_NODES: /* N or N-M: the minimum, as in an allocation that already has them */
        return count_arg(o->name, strndupa(v, strcspn(v, "-")), 1, SRUN_MAX_NODES, &p->nodes, err,
                         len);
    case O_PER_NODE:
        return count_arg(o->name, v, 1, SRUN_MAX_TASKS, &p->per_node, err, len);
    case O_CPUS:
        return count_arg(o->name, v, 1, 1 << 16, &st->cpus, err, len);
    case O_GPUS_PER_TASK:
        return count_arg(o->name, strrchr(v, ':') ? strrchr(v, ':') + 1 : v, 0, 64,
                         &st->gpus_per_task, err, len);
    case O_RELATIVE:
        return count_arg(o->name, v, 0, SRUN_MAX_NODES - 1, &p->relative, err, len);
    case O_WAIT:
        return count_arg(o->name, v, 0, 1 << 24, &st->wait_s, err, len);
    case O_LABEL:
        st->label = true;
        return 0;
    case O_KILL_BAD:
        if (optional_bool(v, &st->kill_bad) < 0)
            return fail(err, len, "--kill-on-bad-exit: 0 or 1, not '%.60s'", v);
        return 0;
    case O_EXCLUSIVE: /* a step's own CPUs; =user, =mcs are the job's business */
        st->exclusive = !v || !strcmp(v, "exclusive");
        if (!st->exclusive)
            note_tuning(p, o, v);
        return 0;
    case O_EXPORT:
        st->export_list = v;
        st->export_none = strncmp(v, "ALL", 3) || (v[3] && v[3] != ',');
        return 0;
    case O_NODELIST:
        p->nodelist = v;
        return 0;
    case O_EXCLUDE:
        p->exclude = v;
        return 0;
    case O_OUTPUT:
        st->output = v;
        return 0;
    case O_ERROR:
        st->error = v;
        return 0;
    case O_CPU_BIND:
        return cpu_bind(p, v, err, len);
    case O_DISTRIBUTION:
        return distribution(p, v, err, len);
    case O_CHDIR:
        st->chdir = v;
        return 0;
    case O_JOBID: /* $SLURM_JOB_ID, or the step of another job: refused */
        if (p->env->job_id && strcmp(v, p->env->job_id) &&
            !(str_has_prefix(v, p->env->job_id) && v[strlen(p->env->job_id)] == '.'))
            return fail(err, len, "--jobid=%.40s: docket's srun runs steps of its own job (%s)", v,
                        p->env->job_id);
        return 0;
    case O_IMAGE:
        return container_image(p, v, err, len);
    case O_MOUNTS:
        return container_mounts(p, v, err, len);
    case O_CONTAINER_WORKDIR:
        if (!proto_container_path_ok(v))
            return fail(err, len, "--container-workdir: want an absolute path, not '%.60s'", v);
        st->container_workdir = v;
        return 0;
    case O_CONTAINER_ENV:
        st->container_env = v;
        return 0;
    case O_HELP:
    case O_VERSION:
        p->info = o->id == O_HELP ? 1 : 2;
        return 0;
    case O_NONE:
        break;
    }
    return 0;
}

static int one(struct srun_parse *p, const struct sr_opt *o, const char *v, char *err, size_t len)
{
    if (o->kind == K_REFUSE)
        return fail(err, len, "--%s is not supported: %s", o->name, o->why);
    if (o->kind == K_TUNE)
        note_tuning(p, o, v);
    if (o->kind != K_DO)
        return 0;
    return apply(p, o, v, err, len);
}

/* One word of argv at *i (its value may be the next): 0, 1 when the command starts here,
 * -1 with err. */
static int word(struct srun_parse *p, int argc, char **argv, int *i, char *err, size_t len)
{
    const char *w = argv[*i];
    if (w[0] != '-' || !w[1])
        return 1;
    if (!strcmp(w, "--")) {
        (*i)++;
        return 1;
    }
    if (w[1] == '-') {
        const char *name = w + 2, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        const struct sr_opt *o = by_long(name, n, err, len);
        if (!o)
            return -1;
        const char *v = eq ? eq + 1 : NULL;
        if (o->arg == ARG_NONE && v)
            return fail(err, len, "option '--%s' takes no value", o->name);
        if (o->arg == ARG_REQ && !v) {
            if (*i + 1 >= argc)
                return fail(err, len, "option '--%s' needs a value", o->name);
            v = argv[++*i];
        }
        return one(p, o, v, err, len);
    }
    for (const char *c = w + 1; *c; c++) {
        const struct sr_opt *o = by_short(*c);
        if (!o)
            return fail(err, len, "invalid option -- '%c'", *c);
        if (o->arg == ARG_NONE) {
            if (one(p, o, NULL, err, len) < 0)
                return -1;
            continue;
        }
        const char *v = c[1] ? c + 1 : NULL;
        if (o->arg == ARG_REQ && !v) {
            if (*i + 1 >= argc)
                return fail(err, len, "option '-%c' needs a value", *c);
            v = argv[++*i];
        }
        return one(p, o, v, err, len);
    }
    return 0;
}

/* The job's node names, in order (SLURM_JOB_NODELIST, a Slurm host list). */
static int job_nodes(const char *list, char names[][SRUN_NAME_MAX], int max)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return -1;
    int rc = list ? slurm_expand_hostlist(list, f) : 0;
    fclose(f);
    int n = 0;
    char *save = NULL;
    for (char *w = rc == 0 && text ? strtok_r(text, "\n", &save) : NULL; w && n < max;
         w = strtok_r(NULL, "\n", &save))
        if (str_copy(names[n], SRUN_NAME_MAX, w) == 0)
            n++;
    free(text);
    return rc == 0 ? n : -1;
}

/* Mark the job's nodes that a host list (-w, -x) names; -1 naming one that is not. */
static int mark(const char *list, char names[][SRUN_NAME_MAX], int n, bool *marked, int *count,
                const char *flag, char *err, size_t len)
{
    char want[SRUN_MAX_NODES][SRUN_NAME_MAX];
    if (strchr(list, '/'))
        return fail(err, len, "%s %.60s: a file of host names is not read; name the nodes", flag,
                    list);
    int m = job_nodes(list, want, SRUN_MAX_NODES);
    if (m <= 0)
        return fail(err, len, "%s: bad host list '%.60s'", flag, list);
    for (int k = 0; k < m; k++) {
        int i = 0;
        while (i < n && strcmp(names[i], want[k]))
            i++;
        if (i == n)
            return fail(err, len, "%s %.60s: %s is not a node of this job", flag, list, want[k]);
        if (!marked[i])
            (*count)++;
        marked[i] = true;
    }
    return 0;
}

/* The step's nodes: -w's, then (for -N beyond them) the job's others in order, starting at
 * -r's and leaving out -x's; without -w and -N as many as the tasks need (srun warns, as
 * here, when -N asks for more nodes than tasks). */
static int place(struct srun_parse *p, char *err, size_t len)
{
    struct step *st = p->st;
    char names[SRUN_MAX_NODES][SRUN_NAME_MAX];
    bool want[SRUN_MAX_NODES] = {false}, skip[SRUN_MAX_NODES] = {false};
    int n = p->env->nodelist ? job_nodes(p->env->nodelist, names, SRUN_MAX_NODES) : 0;
    int nwant = 0, nskip = 0;
    if (n <= 0) /* no list: node i is the job's node i */
        n = p->env->job_nodes;
    if (n > SRUN_MAX_NODES)
        return fail(err, len, "at most %d nodes in a step", SRUN_MAX_NODES);
    if (p->nodelist && mark(p->nodelist, names, n, want, &nwant, "-w", err, len) < 0)
        return -1;
    if (p->exclude && mark(p->exclude, names, n, skip, &nskip, "-x", err, len) < 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (want[i] && skip[i])
            return fail(err, len, "%s is both in -w and -x", names[i]);
    if (p->relative >= n)
        return fail(err, len, "-r %d: the job has %d node(s)", p->relative, n);
    int avail = 0;
    for (int i = p->relative; i < n; i++)
        avail += !skip[i];
    if (p->nodes > avail)
        return fail(err, len, "-N %d: the job has %d node(s) to give this step", p->nodes, avail);
    if (p->nodelist && p->nodes > 0 && p->nodes < nwant)
        return fail(err, len, "-w names %d nodes, more than -N %d", nwant, p->nodes);
    int nodes = p->nodes > 0 ? p->nodes : p->nodelist ? nwant : avail;
    bool chosen_n = p->nodes > 0 || p->nodelist || p->exclude || p->relative;
    if (p->nodes < 0 && !p->nodelist && p->ntasks > 0 && p->per_node < 0 && p->ntasks < nodes)
        nodes = p->ntasks;
    if (p->ntasks > 0 && p->ntasks < nodes) {
        snprintf(p->warning, sizeof(p->warning),
                 "can't run %d processes on %d nodes, setting nnodes to %d", p->ntasks, nodes,
                 p->ntasks);
        nodes = p->ntasks;
    }
    st->nodes = 0;
    for (int i = 0; i < n && st->nodes < nodes; i++) /* -w's first, in the job's order */
        if (want[i])
            st->job_node[st->nodes++] = i;
    for (int i = p->relative; i < n && st->nodes < nodes; i++)
        if (!want[i] && !skip[i])
            st->job_node[st->nodes++] = i;
    if (st->nodes < nodes)
        return fail(err, len, "the job has no %d node(s) to give this step", nodes);
    /* the tasks: --ntasks-per-node, -n, else the job's own count on the job's nodes */
    if (p->ntasks > 0)
        st->ntasks = p->ntasks;
    else if (p->per_node > 0)
        st->ntasks = p->per_node * st->nodes;
    else if (!chosen_n && p->env->job_ntasks > 0)
        st->ntasks = p->env->job_ntasks;
    else
        st->ntasks = (p->env->ntasks_per_node > 0 ? p->env->ntasks_per_node : 1) * st->nodes;
    if (st->ntasks > SRUN_MAX_TASKS * st->nodes)
        return fail(err, len, "at most %d tasks per node", SRUN_MAX_TASKS);
    st->node = -1;
    for (int k = 0; k < st->nodes; k++)
        if (st->job_node[k] == 0)
            st->node = k;
    return 0;
}

int srun_parse_args(int argc, char **argv, const struct srun_env *env, struct srun_parse *p,
                    char *err, size_t errlen)
{
    struct step *st = p->st;
    int i = 1;
    p->env = env;
    p->ntasks = p->nodes = p->per_node = -1;
    p->relative = 0;
    p->nodelist = p->exclude = NULL;
    p->info = 0;
    p->ignored[0] = p->warning[0] = '\0';
    st->cpus = env->cpus_per_task > 0 ? env->cpus_per_task : 1;
    st->gpus_per_task = env->gpus_per_task;
    for (; i < argc; i++) {
        int rc = word(p, argc, argv, &i, err, errlen);
        if (rc < 0)
            return -1;
        if (rc == 1)
            break;
    }
    if (p->info)
        return 1;
    if (i >= argc)
        return fail(err, errlen, "no command to run (srun [OPTIONS] COMMAND [ARGS...])");
    if (!st->image && (st->mounts || st->container_workdir || st->container_env))
        return fail(err, errlen,
                    "--container-mounts, --container-workdir and --container-env need "
                    "--container-image");
    st->argv = argv + i;
    return place(p, err, errlen);
}

/* ------------------------------------------------------------------------------------ */
/* Filename patterns of -o, -e                                                           */

bool srun_pattern_per_node(const char *pat)
{
    if (strchr(pat, '\\'))
        return false;
    for (const char *c = strchr(pat, '%'); c; c = strchr(c + 1, '%')) {
        const char *k = c + 1;
        while (*k >= '0' && *k <= '9')
            k++;
        if (*k == 't' || *k == 'n' || *k == 'N')
            return true;
        if (*k == '%')
            c = k;
    }
    return false;
}

int srun_pattern(const char *pat, const struct srun_names *n, int rank, int node, char *out,
                 size_t len)
{
    size_t o = 0;
    bool plain = strchr(pat, '\\') != NULL; /* a backslash turns the patterns off */
    for (const char *c = pat; *c; c++) {
        char num[64];
        const char *add = NULL;
        int width = 0;
        if (*c == '\\')
            continue;
        if (*c != '%' || plain) {
            if (o + 1 >= len)
                return -1;
            out[o++] = *c;
            continue;
        }
        while (c[1] >= '0' && c[1] <= '9' && width < 100)
            width = width * 10 + (*++c - '0');
        if (width > 10)
            width = 10;
        switch (*++c) {
        case '%':
            add = "%";
            break;
        case 'j':
            add = n->job_id;
            break;
        case 'J':
            snprintf(num, sizeof(num), "%s.%s", n->job_id, n->step_id);
            add = num;
            break;
        case 's':
            add = n->step_id;
            break;
        case 'A':
            add = n->array_job_id && *n->array_job_id ? n->array_job_id : n->job_id;
            break;
        case 'a':
            add = n->array_task_id && *n->array_task_id ? n->array_task_id : "4294967294";
            break;
        case 't':
            snprintf(num, sizeof(num), "%d", rank);
            add = num;
            break;
        case 'n':
            snprintf(num, sizeof(num), "%d", node);
            add = num;
            break;
        case 'N':
            add = n->host;
            break;
        case 'u':
            add = n->user;
            break;
        case 'x':
            add = n->job_name;
            break;
        default:
            return -1; /* srun: an unknown pattern; '\0' too */
        }
        add = add ? add : "";
        bool numeric = add[0] >= '0' && add[0] <= '9';
        int pad = numeric && (int)strlen(add) < width ? width - (int)strlen(add) : 0;
        int w = snprintf(out + o, o < len ? len - o : 0, "%.*s%s", pad, "0000000000", add);
        if (w < 0 || o + (size_t)w >= len)
            return -1;
        o += (size_t)w;
    }
    if (o >= len)
        return -1;
    out[o] = '\0';
    return o ? 0 : -1;
}
