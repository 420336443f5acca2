/*
 * slurm.h - what a Slurm user's submission needs beyond the job spec (docs/slurm.md):
 * the sbatch command line (`docket sbatch`, also run as `sbatch` through a link), and the
 * last steps of a Slurm-style submission that need the submitter's side: the exported
 * environment (--export, ALL by default as in sbatch), the submission directory, and whole
 * nodes (--exclusive) or all of a node's memory (--mem=0) read from GET /v1/nodes.
 */
#ifndef DOCKET_CLI_SLURM_H
#define DOCKET_CLI_SLURM_H

#include <jansson.h>
#include <stdio.h>

#include "cli/cli.h"

/* Apply what spec_take_cli() returned to a spec that has a "slurm" object: 0, or an exit
 * status after a message. `dry_run` skips the call to the server (whole nodes are then
 * left as the request stands, with a warning). */
int slurm_prepare(struct cli *c, json_t *spec, const json_t *cli, bool dry_run);

/* A spec's Slurm dependencies as the API takes them (ARRAY_ID as every task, ID_IDX,
 * singleton, after), for a job not yet submitted (self 0) or for job `self` (scontrol
 * update: singleton then reads its name, and never makes it wait on itself). Exit status
 * (after a message). */
int slurm_resolve_deps(struct cli *c, json_t *spec, int64_t self);

/* The environment the job gets from the submitter (sbatch's --export=ALL): every variable
 * of `envp` not already in spec.env, except those that describe the submitting shell or
 * another job (SLURM_*, DOCKET_*, PWD, SHLVL, ...). Exposed for tests. */
void slurm_export_env(json_t *spec, char **envp);

/* Print one host per line of a Slurm host list ("gpu[01-03,7],cpu1"). 0 or -EINVAL. */
int slurm_expand_hostlist(const char *list, FILE *out);

/* A time as sacct -S and sbatch --begin take it, in local time: HH:MM[:SS] (today),
 * YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY], MMDD[YY], today, midnight, noon, now, and
 * now[+|-]N[seconds|minutes|hours|days|weeks] (seconds when no unit). now_ms is the
 * caller's clock. 0 with *out_ms set, or -1. */
int slurm_time_parse(const char *s, int64_t now_ms, int64_t *out_ms);

/* Slurm job ids (slurmids.c). Parse ID, ID_IDX, ID_[LIST] (a trailing %N throttle, as
 * squeue prints it, left out): *id, and the index list ("" for the whole id). 0, -EINVAL. */
int slurm_jobid_parse(const char *s, int64_t *id, char *idx, size_t len);
/* Whether an index list ("1-3,5") holds index. */
bool slurm_index_in(const char *list, int64_t index);
/* Sorted indices as squeue folds them: "4-99,101"; "..." ends a list cut to len. */
void slurm_index_ranges(int64_t *idx, size_t n, char *out, size_t len);
/* Append to `ids` the docket ids a Slurm job id means: every task of an array for its
 * ARRAY_ID, the tasks named for ARRAY_ID_IDX or ARRAY_ID_[LIST] (active ones, or any with
 * active false), the job itself for a plain id. Exit status (after a message). */
int slurm_jobids_resolve(struct cli *c, const char *word, bool active, json_t *ids);

/* sbatch (slurm.c), srun (srun.c), scontrol, squeue, scancel, sinfo, sacct (slurmcmd.c). */
cli_fn cmd_sbatch, cmd_srun, cmd_scontrol, cmd_squeue, cmd_scancel, cmd_sinfo, cmd_sacct;
extern const char cmd_sbatch_usage[], cmd_srun_usage[], cmd_scontrol_usage[], cmd_squeue_usage[],
    cmd_scancel_usage[], cmd_sinfo_usage[], cmd_sacct_usage[];

#endif
