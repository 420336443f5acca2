/*
 * srun.h - what srun (srun.c, on the batch node) and its step host (srunhost.c, on the
 * other nodes of a Slurm-style job) share: a step's shape, the launch of one task with
 * its Slurm variables, and the frames of their TCP link (docs/slurm.md "srun").
 *
 * The link (steplink.h): TLS 1.3 keyed by the job's step key, so both ends prove the key
 * before anything else is sent. In it srun sends one line of JSON (the command, the
 * environment, this node's tasks), then frames; the host answers with frames only. A frame is a
 * 9-byte header, type (1 byte), task rank and length (4 bytes each, network order), then the bytes:
 * FR_OUT / FR_ERR output of a task, FR_EXIT its status (4 bytes), FR_FAIL a message (the step could
 * not start there), FR_SIGNAL a signal for the tasks (srun -> host, 4 bytes).
 */
#ifndef DOCKET_CLI_SRUN_H
#define DOCKET_CLI_SRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <sys/types.h>

#include "cli/steplink.h"

enum { SRUN_MAX_TASKS = 1024, SRUN_MAX_NODES = 64, SRUN_NAME_MAX = 256 };
enum { FR_OUT = 1, FR_ERR, FR_EXIT, FR_FAIL, FR_SIGNAL };

struct step {
    int ntasks, nodes, cpus, gpus_per_task; /* the whole step */
    bool label, kill_bad, export_none;
    bool cyclic;    /* -m cyclic: rank r on step node r % nodes (else blocks) */
    bool exclusive; /* --exclusive: CPUs of their own, not shared with other such steps */
    int wait_s;     /* --wait: the others end this long after the first task (0: never) */
    const char *export_list;
    const char *output, *error; /* -o, -e filename patterns; NULL: through srun */
    const char *cpu_bind;       /* --cpu-bind, checked (srunopt.c) */
    const char *chdir;          /* -D */
    /* --container-image (Pyxis's): each task runs in the image, started by its node's
     * supervisor (sruncontainer.c); the mounts as given (SRC:DST[:ro],...), the
     * container's working directory, the variables whose value the task's env keeps */
    const char *image, *mounts, *container_workdir, *container_env;
    const int *cpu_slots; /* --exclusive: task i's CPUs are slots i*cpus.. (srun.c) */
    char **argv;
    int job_node[SRUN_MAX_NODES]; /* step node k is the job's node job_node[k] */
    int node;           /* this node's index in the step; -1: the batch node is not in it */
    int first, local_n; /* this node's tasks: local_n of them, first's rank the lowest */
    pid_t pids[SRUN_MAX_TASKS];
};

/* This node's share of a step: node i of n gets ntasks / n tasks, the first ntasks % n
 * one more (Slurm's block distribution: ranks first ..; cyclic: srun_rank). */
void srun_share(int ntasks, int nodes, int i, int *first, int *count);
/* The rank of this node's local task `local` (block or cyclic). */
int srun_rank(const struct step *st, int local);

/* srun's command line (srunopt.c). The job as its environment describes it: */
struct srun_env {
    int job_nodes;       /* SLURM_NNODES */
    int job_ntasks;      /* SLURM_NTASKS, 0 when unset */
    int ntasks_per_node; /* SLURM_NTASKS_PER_NODE, 0 when unset */
    int cpus_per_task, gpus_per_task;
    const char *nodelist; /* SLURM_JOB_NODELIST */
    const char *job_id;   /* SLURM_JOB_ID */
};
struct srun_parse {
    struct step *st; /* filled: the options, nodes, job_node, ntasks, node, argv */
    const struct srun_env *env;
    int ntasks, nodes, per_node, relative; /* -n, -N, --ntasks-per-node, -r; -1 unset */
    const char *nodelist, *exclude;        /* -w, -x */
    int info;                              /* 1: --help, 2: --version */
    char ignored[512]; /* the tuning options met ("--mpi=pmix, --hint=..."): one warning */
    char warning[160]; /* srun's own warning, when it changed the node count */
};
/* 0 (the step settled), 1 (--help or --version: p->info), -1 with err. */
int srun_parse_args(int argc, char **argv, const struct srun_env *env, struct srun_parse *p,
                    char *err, size_t errlen);

/* -o, -e filename patterns (man srun, "filename pattern"): %j %J %s %A %a %t %n %N %u %x %%,
 * a number after % zero-pads, a backslash turns them off. 0, or -1 (unknown, too long). */
struct srun_names {
    const char *job_id, *step_id, *array_job_id, *array_task_id, *host, *user, *job_name;
};
int srun_pattern(const char *pat, const struct srun_names *n, int rank, int node, char *out,
                 size_t len);
/* Whether a pattern names a file per node or per task (%t, %n, %N). */
bool srun_pattern_per_node(const char *pat);

/* Empty the -o/-e files of this node's tasks, once, before any starts: the files per
 * task or node (%t, %n, %N), and with step_wide (srun on the batch node, before the other
 * nodes start) the step's single file. */
void srun_truncate_outputs(const struct step *st, bool step_wide);

/* sig to pid and every process under it (/proc's children lists, read first). */
void srun_kill_tree(pid_t pid, int sig);

/* In a task's child: its files (-o, -e), directory (-D), CPUs (--cpu-bind, --exclusive),
 * Slurm variables and GPUs, then exec (never returns). */
void srun_task_exec(const struct step *st, int local) __attribute__((noreturn));

/* In a task's child, srun_task_exec's end for a --container-image step: the task handed
 * to its node's supervisor (SCRATCH/.slurm-bin/step.sock) with its descriptors, env and
 * argv; signals passed on, its container's exit status made ours. Never returns. */
void srun_container_exec(const struct step *st) __attribute__((noreturn));

/* A step host's request (the JSON line srun sends): fills *st (argv allocated, its
 * strings borrowed from req) after checking every field's type and range. 0, or -1:
 * refused, nothing allocated. The key and the environment are the caller's. */
int srun_request_read(const json_t *req, struct step *st);

/* Frames: 0 or -1 (the link broke). */
int srun_frame_send(struct step_link *l, int type, uint32_t task, const void *data, uint32_t len);
/* Read one whole frame into buf (up to cap bytes); 0 at EOF, 1 with a frame, -1. */
int srun_frame_read(struct step_link *l, int *type, uint32_t *task, char *buf, uint32_t cap,
                    uint32_t *len);

/* The step host: `srun --docket-step-host` on a node other than the batch node. */
int srun_step_host(void);

#endif
