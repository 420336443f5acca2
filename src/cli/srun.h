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

enum { SRUN_MAX_TASKS = 1024, SRUN_MAX_NODES = 64 };
enum { FR_OUT = 1, FR_ERR, FR_EXIT, FR_FAIL, FR_SIGNAL };

struct step {
    int ntasks, nodes, cpus, gpus_per_task; /* the whole step */
    bool label, kill_bad, export_none;
    const char *export_list;
    char **argv;
    int node;           /* this node's index in the step (0: the batch node) */
    int first, local_n; /* this node's tasks: ranks first .. first + local_n - 1 */
    pid_t pids[SRUN_MAX_TASKS];
};

/* This node's share of a step: node i of n gets ntasks / n tasks, the first ntasks % n
 * one more (Slurm's block distribution). */
void srun_share(int ntasks, int nodes, int i, int *first, int *count);

/* In a task's child: its Slurm variables and GPUs, then exec (never returns). */
void srun_task_exec(const struct step *st, int local) __attribute__((noreturn));

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
