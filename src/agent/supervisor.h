/*
 * supervisor.h - the per-job supervisor: a process forked by the agent, in its own session,
 * a child subreaper, that creates the job's cgroup, launches the job in it (as its owner
 * when the agent is root), enforces the local time limit and the grace of a signal with a
 * timer, reclaims (no process survives, cgroup removed) and records everything in the
 * job's directory STATE_DIR/jobs/ID, so it outlives the agent (kill -9 included) and a new
 * agent finds it again. See docs/agent.md.
 *
 * Files of a job directory:
 *   job.json    {"start_seq": SEQ, "job": JOB}: the start command's job and the seq of the
 *               command that launched this run (so it is never launched twice); written
 *               by the agent before the fork
 *   state.json  the supervisor's state once the job is set up ("starting": pids, log paths,
 *               cgroup); running.json when signalled ("stopping"); final.json at the end
 *               ("exited"), each made by a rename that replaces no file
 *   ctl.SEQ     commands from the agent ("signal 15 30000", "kill"), then SIGUSR1
 *   stdout, stderr  the default log files (appended across runs of a requeued job)
 *   tty.sock    an interactive session's terminal, served to the agent (suptty.c)
 *   supervisor.log  the supervisor's own messages (only when it has any)
 *
 * Errors: 0 or negative errno; `err` gets a message naming the subject.
 */
#ifndef DOCKET_AGENT_SUPERVISOR_H
#define DOCKET_AGENT_SUPERVISOR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/cgroup.h"
#include "protocol/agent_msg.h"

struct sup_config {
    const char *state_dir;      /* the agent's state directory (exists) */
    const char *scratch_root;   /* per-job scratch dirs go under it (exists) */
    const char *session_root;   /* interactive sessions' working dirs: ROOT/PROJECT/USER */
    const char *slurm_cli;      /* the docket CLI, linked as srun & co for Slurm-style jobs */
    const char *node;           /* this node's name */
    const struct cg_layout *cg; /* mode CG_NONE = no cgroups (tests without root only) */
    bool allow_root_jobs;       /* else a job whose user resolves to uid 0 is refused */
    bool keep_scratch;
    int64_t limit_slack_ms;  /* the local time limit trails the controller's by this */
    int64_t pids_max;        /* pids.max of every job (0 = no limit) */
    int64_t default_mem_mb;  /* memory limit of a job that names none (0 = none) */
    int64_t log_limit_bytes; /* default output files kept to this a run (0 = no cap) */
    int node_gpus;           /* GPUs of the node */
    const int *gpu_minor;    /* gpu_minor[i]: /dev/nvidiaN's N of GPU i (NULL: N = i) */
    int job_oom_score_adj;   /* the job's oom_score_adj (> 0: it dies before us) */
    /* job network boundaries (supnet.h, docs/network.md): the nft program ("" = none)
     * and the controller's address and port as this node reaches it */
    const char *nft;
    uint32_t ctl_addr;
    int ctl_port;
    /* containers (docs/environments.md "Containers"): the OCI runtime (crun, runc or a
     * path; NULL = crun), the cap on STATE_DIR/images (0 = none), where the GPUs' device
     * nodes are (NULL = /dev) */
    const char *oci_runtime;
    int64_t image_cache_max_bytes;
    const char *gpu_dev_dir;
};

struct sup_state {
    uint64_t job;
    char state[16]; /* "starting", "running", "exited" */
    int sup_pid;
    int64_t sup_start; /* /proc starttime of the supervisor (pid reuse guard) */
    int pid;           /* the job's leader */
    int64_t start_ms, end_ms;
    enum agent_exit_kind exit_kind;
    int exit_code;
    char message[256];
    struct agent_usage usage;
    bool reclaim_ok;
    char reclaim_msg[256];
    /* the job's scratch could not be removed and was moved out of every job's reach
     * instead (sup_scratch_remove): what and where, for the job's events; the node stays
     * in service. "" when it went as it should. */
    char quarantined[256];
    char out_path[PATH_MAX], err_path[PATH_MAX];
    char cgroup[PATH_MAX]; /* the tracking group (for usage sampling) */
    /* the files the supervisor opened for the job's stdout/stderr: the agent ships only
     * from a regular file that is still this inode, from the size it had at this run's
     * start (so a requeued run's bytes are its own) */
    int64_t out_dev, out_ino, out_start, err_dev, err_ino, err_start;
    /* a Slurm-style job's rank > 0: the port the kernel gave the step host's socket
     * (opened here, handed to srun --docket-step-host), which the agent reports; 0 none */
    int step_port;
};

/* A connection to job `id`'s terminal, JOBDIR/tty.sock (suptty.c), or -errno. */
int sup_tty_connect(const char *jobdir);

/* Path of job `id`'s directory. */
int sup_job_dir(const struct sup_config *c, uint64_t id, char *out, size_t len);
/* Create the job directory, write job.json, fork the supervisor. On return
 * the supervisor runs on its own; *sup_pid is its pid. The caller must not have SIGCHLD
 * ignored only if it wants to reap it; the supervisor never needs its parent again. */
int sup_launch(const struct sup_config *c, const struct agent_job *j, int64_t seq, int *sup_pid,
               char *err, size_t errlen);
/* Spares (cgroup v1): a supervisor forked in advance that has already moved itself into
 * a group of its own (docket/NODE/spare_PID), which is slow on v1 (an RCU grace period,
 * 8-17 ms on a loaded machine). When a job comes, the group is renamed job_ID and the job
 * is spawned inside it: no move on the launch's path. The spare waits on a pipe; closing
 * it (sup_spare_drop, or the agent's death) makes it remove its group and exit. */
struct sup_spare {
    int pid; /* 0 = none */
    int fd;  /* the pipe's write end, -1 = none */
};
int sup_spare_start(const struct sup_config *c, struct sup_spare *sp, char *err, size_t errlen);
/* Like sup_launch, through the spare (which is used up: sp is emptied). -ENOENT without
 * one, -EPIPE when it died meanwhile (the caller then uses sup_launch). */
int sup_spare_launch(const struct sup_config *c, struct sup_spare *sp, const struct agent_job *j,
                     int64_t seq, int *sup_pid, char *err, size_t errlen);
void sup_spare_drop(struct sup_spare *sp);

/* The seq recorded by the last launch of job `id`, or 0 when none. */
int64_t sup_start_seq(const struct sup_config *c, uint64_t id);
/* Queue a command for a running supervisor and wake it: "signal SIG GRACE_MS", "kill", or
 * "step_host RANK ADDR:PORT" (rank 0 of a Slurm-style job: where rank RANK's step host
 * listens, written for srun as SCRATCH/.slurm-bin/step-host.RANK).
 * The wake-up goes through a pidfd opened on `sup_pid` and checked against the start
 * time `sup_start` (when > 0): a reused pid is never signalled (-ESRCH). */
int sup_command(const struct sup_config *c, uint64_t id, int sup_pid, int64_t sup_start,
                int64_t seq, const char *cmd);

/* The fencing lease, STATE_DIR/lease (docs/agent.md "Fencing and leases"), rewritten
 * in place by the agent at each contact with the controller; `*fd` caches the open file
 * (-1 at first). Times are CLOCK_MONOTONIC ms. */
struct sup_lease {
    int64_t deadline_ms; /* contact + node_timeout - margin: the node's own lease */
    int64_t grace_ms;    /* the longest grace a fenced job gets (margin / 2) */
    int64_t contact_ms;  /* the send time of the last request the controller answered */
    int64_t margin_ms;   /* the fencing margin */
};
int sup_lease_write(const char *state_dir, int *fd, const struct sup_lease *l);
/* 0 and all zero when there is no lease file; -EAGAIN on a torn read. A file written
 * before leases had contact_ms (an older agent) reads with contact_ms 0. */
int sup_lease_read(const char *state_dir, struct sup_lease *l);
/* When a job whose lease is `job_lease_ms` (0: the node timeout's) is fenced: its lease
 * past the last contact less the margin, never before the node's own deadline. */
int64_t sup_lease_deadline(const struct sup_lease *l, int64_t job_lease_ms);
/* Read / write state.json of a job directory. */
int sup_state_read(const char *jobdir, struct sup_state *st);
int sup_state_write(const char *jobdir, const struct sup_state *st);
/* True when `pid` is alive and is the process started at `starttime`. */
bool sup_alive(int pid, int64_t starttime);
/* /proc/PID/stat starttime, or -errno. */
int64_t sup_proc_starttime(int pid);
/* Resolve an output path: NULL -> JOBDIR/default_name; relative -> under workdir; Slurm's
 * filename pattern: %j and %J job id, %A the array's id (the job's outside an array), %a
 * array index, %b index modulo 10, %x name, %u user, %N short node name, %n node rank,
 * %s "batch", %t and %r 0, %% a percent sign; a number after % zero-pads (at most 10); a
 * backslash anywhere turns the symbols off. */
int sup_resolve_output(const char *spec, const char *jobdir, const char *default_name,
                       const char *workdir, const struct agent_job *j, const char *user, char *out,
                       size_t len);
/* Build the job's environment (NULL-terminated, malloc'd strings; free with
 * sup_env_free). `home`, `user`, `shell` from the passwd entry; `scratch` the dir;
 * `env_dir` its template's prepared environment (DOCKET_ENV_DIR), NULL or "" for none. */
char **sup_build_env(const struct agent_job *j, const char *node, const char *user,
                     const char *home, const char *shell, const char *scratch, const char *env_dir);
void sup_env_free(char **env);
/* rm -rf of a directory tree of any depth: every directory opened relative to its parent
 * with O_NOFOLLOW, so a symlink swapped in meanwhile is removed, never followed; at most
 * 64 levels open at once (deeper ones are moved up and removed from there). 0 or the
 * first -errno (the rest is still removed). */
int sup_remove_tree(const char *path);
/* Remove a job's scratch directory `path` (under `root`); what cannot be removed (a mount
 * the job left, a file system error) is moved whole to ROOT/.docket-quarantine/job_ID.MS,
 * a directory of root's with mode 0700, so no later job reaches it and the node stays in
 * service (issue 33 #2). 0 when removed; 1 when quarantined; < 0 when neither (the node's
 * reclaim failed). `msg` says what happened in the last two cases. */
int sup_scratch_remove(const char *root, const char *path, uint64_t job, char *msg, size_t len);

#endif
