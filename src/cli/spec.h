/*
 * spec.h - a job submission built from `docket submit` flags and from the directives of
 * a batch script (#DOCKET lines with docket's flags, #SBATCH lines with Slurm's), as the
 * JSON body of POST /v1/jobs (docs/api.md). The mapping is documented in docs/cli.md.
 *
 * Every value is checked here with the util parsers before anything is sent, and an error
 * names the flag and, for scripts, the line: "line 4: --gres: bad GPU count 'gpu:x'".
 * #SBATCH lines (and the `docket sbatch` command line) are read as sbatch reads them
 * (docs/slurm.md): every sbatch option is known, long names may be shortened to a unique
 * prefix, an unknown option or a stray word is an error, an option docket cannot honour
 * is refused with the reason, and only one that changes neither resources nor timing
 * (--mail-type ...) is accepted with a warning through spec_env.warn. A job read from
 * sbatch options carries a "slurm" object (tasks, signal timing) for the agent.
 */
#ifndef DOCKET_CLI_SPEC_H
#define DOCKET_CLI_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/opt.h"

/* The most jobs one job may depend on (the API's PROTO_MAX_DEPS; an array's tasks count
 * each). */
#define SPEC_MAX_DEPS 128

enum submit_opt {
    SO_PROJECT = 1,
    SO_TIER,
    SO_CLASS,
    SO_GPUS,
    SO_GPU_TYPE,
    SO_CPUS,
    SO_MEM,
    SO_NODES,
    SO_TIME,
    SO_NAME,
    SO_ENV,
    SO_SECRET,
    SO_AFTER,
    SO_DEPENDENCY,
    SO_ARRAY,
    SO_SIGNAL,
    SO_RETRIES,
    SO_SWITCHES,
    SO_LABEL,
    SO_SELECT,
    SO_CONSTRAINT,
    SO_WORKDIR,
    SO_OUTPUT,
    SO_ERROR,
    SO_HOLD,
    SO_BEGIN,
    SO_IDEMPOTENT,
    SO_NO_REQUEUE,
    SO_CHECKPOINT,
    SO_TEMPLATE,
    SO_STORAGE,
    SO_IMAGE,
    SO_MOUNTS,
    SO_CONTAINER_WORKDIR,
    SO_CONTAINER_ENV,
    SO_REGISTRY_AUTH,
    SO_TIER_OR_TIME, /* -t: a Slurm time when it reads as one (sbatch's -t), else a tier */
    /* not part of the job: flags of the verb itself */
    SO_JSON,
    SO_HELP,
    SO_PARSABLE,
    SO_DRY_RUN,
    SO_WRAP,
};

/* The flags of `docket submit` (and of #DOCKET lines, which take the job flags only). */
extern const struct opt_def spec_submit_opts[];

struct spec_env {
    const char *partition_map; /* "gpu=normal,debug=class:exploration"; may be NULL */
    void (*warn)(void *arg, const char *msg);
    void *warn_arg;
    bool raw; /* leave sbatch's values unfinished (the caller adds its own and calls
               * spec_slurm_finish) */
};

/* Apply one docket submit flag (id from spec_submit_opts) to spec. 0, or -EINVAL with
 * err naming the flag and the value. On error spec may hold earlier flags only. */
int spec_apply(json_t *spec, int id, const char *value, char *err, size_t errlen);

/* Read the directives of a script: the comment lines after the optional "#!" line up to
 * the first command (as sbatch does). #DOCKET lines take docket's flags, #SBATCH lines
 * Slurm's. 0, or -EINVAL with err "line N: ..." and nothing is kept. */
int spec_parse_script(json_t *spec, const char *text, size_t len, const struct spec_env *env,
                      char *err, size_t errlen);

/* Apply one sbatch option (long name or a unique prefix, without dashes, e.g. "gres";
 * value or NULL). Exposed for tests. */
int spec_apply_sbatch(json_t *spec, const char *name, const char *value, const struct spec_env *env,
                      char *err, size_t errlen);

/* sbatch's command line: options up to the first word that is not one (getopt_long with
 * "+"), whose index is put in *stop ("--" is skipped). 0 or -EINVAL with err. */
int spec_sbatch_args(json_t *spec, char **words, int n, const struct spec_env *env, int *stop,
                     char *err, size_t errlen);

/* Once all sbatch options are read: per-task requests (--ntasks-per-node, -c,
 * --gpus-per-task, --mem-per-cpu ...) become per-node ones and the "slurm" object is
 * written. spec_parse_script calls it for a script with #SBATCH lines. 0 or -EINVAL. */
int spec_slurm_finish(json_t *spec, char *err, size_t errlen);

/* What the submitting verb must do itself, taken out of the spec (a new reference, an
 * empty object when none): "whole_node" (--exclusive), "whole_mem" (--mem=0),
 * "export_all" (--export), and sbatch's own flags by name ("parsable", "wrap", ...). */
json_t *spec_take_cli(json_t *spec);

/* Slurm time formats: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS";
 * 0 or -EINVAL. "UNLIMITED"/"infinite" give -ERANGE (the caller warns). */
int spec_slurm_time_ms(const char *s, int64_t *out_ms);

/* Look `partition` up in a map "a=x,b=class:y,c=tier:z". Sets *field to "tier" or
 * "class" and copies the name. 0, -ENOENT when absent, -EINVAL when the map is bad.
 * A value without prefix is a class when it names one of the default classes
 * (training, experiment, exploration, interactive, service), else a tier. */
int spec_partition_lookup(const char *map, const char *partition, const char **field, char *name,
                          size_t namelen);

/* Command-line flags override script lines: copy every member of `over` into `base`;
 * env, labels, selectors and the unfinished sbatch values are merged key by key. */
void spec_merge(json_t *base, const json_t *over);

/* Last checks once everything is applied (e.g. total GPUs that must divide by nodes). */
int spec_finish(json_t *spec, char *err, size_t errlen);

#endif
