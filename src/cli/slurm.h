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

#include "cli/cli.h"

/* Apply what spec_take_cli() returned to a spec that has a "slurm" object: 0, or an exit
 * status after a message. `dry_run` skips the call to the server (whole nodes are then
 * left as the request stands, with a warning). */
int slurm_prepare(struct cli *c, json_t *spec, const json_t *cli, bool dry_run);

/* The environment the job gets from the submitter (sbatch's --export=ALL): every variable
 * of `envp` not already in spec.env, except those that describe the submitting shell or
 * another job (SLURM_*, DOCKET_*, PWD, SHLVL, ...). Exposed for tests. */
void slurm_export_env(json_t *spec, char **envp);

cli_fn cmd_sbatch;
extern const char cmd_sbatch_usage[];

#endif
