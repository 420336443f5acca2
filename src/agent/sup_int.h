/*
 * sup_int.h - what the pieces of the per-job supervisor share (private to src/agent):
 * the supervisor process's state (struct sup) and its helpers.
 *   supervisor.c  the supervisor process: forked (or a spare), the run loop (commands,
 *                 time limit, grace, fencing lease), the end (reclaim, final state)
 *   suplaunch.c   the job's set-up and launch: user, outputs, scratch, cgroup, the child
 *                 that drops privileges and execs the job
 *   supstate.c    the job directory's files (state, commands, lease), liveness by pid
 *                 and start time, tree removal
 *   supenv.c      the job's environment and output paths
 *   supcap.c      the job's default output files kept to the node's log limit
 *   suptty.c      an interactive session's PTY, served on JOBDIR/tty.sock
 *   supoci.c      a job in a container: its image (imgcache.c), bundle and OCI runtime
 *   supstep.c     srun --container-image's tasks of a bare Slurm-style job, run in their
 *                 image for them on SCRATCH/.slurm-bin/step.sock
 * See supervisor.h and docs/agent.md.
 */
#ifndef DOCKET_AGENT_SUP_INT_H
#define DOCKET_AGENT_SUP_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/cgroup.h"
#include "agent/supervisor.h"
#include "protocol/agent_msg.h"

/* srun --container-image's tasks served at once by a job's supervisor (supstep.c) */
enum { SUP_STEP_MAX = 64 };

struct sup {
    const struct sup_config *c;
    const struct agent_job *j;
    char dir[PATH_MAX];
    char scratch[PATH_MAX];
    struct cg_job cg;
    bool use_cg;
    const struct cg_job *spare_cg; /* a spare's group, with us already in it */
    int cg_fd;                     /* v2: the job's group, for clone3(CLONE_INTO_CGROUP) */
    bool born_inside;              /* the child was created in the group: no move */
    bool inside;                   /* we are in the job's group (spare path) until the spawn */
    struct sup_state st;
    uid_t uid;
    gid_t gid;
    gid_t groups[256]; /* the user's groups, looked up before the fork */
    int ngroups;
    char user[AGENT_NAME_MAX];
    char home[PATH_MAX], shell[PATH_MAX];
    int out_fd, err_fd;    /* default logs opened by the supervisor, or -1 */
    int step_fd;           /* rank > 0 of a Slurm-style job: the step host's socket, or -1 */
    bool own_out, own_err; /* the output file is the agent's (its state directory) */
    bool cut[2];           /* stdout, stderr: past the log limit, marker written */
    bool punch_failed;     /* the filesystem gives no holes back (said once) */
    int64_t cap_at;        /* monotonic ms of the next look at the outputs' size, 0 = none */
    pid_t leader;
    bool leader_done;
    int leader_status;
    bool stopping, timed_out, killed;
    int64_t kill_at;    /* monotonic ms, 0 = none */
    int64_t limit_at;   /* monotonic ms, 0 = none */
    int64_t started_at; /* monotonic ms of the launch: the limit counts from here */
    int64_t warn_at;    /* monotonic ms of a Slurm job's --signal before the limit, 0 = none */
    int stop_signal;
    int64_t lease_at; /* monotonic ms of the next look at the lease, 0 = none */
    bool fenced;
    int sfd;             /* the signalfd of the run loop */
    int net_fd;          /* the job's network namespace (supnet.h), entered by the child; -1 */
    bool net_made;       /* its namespace, veth and rules exist: removed at the end */
    struct sup_tty *tty; /* an interactive session's terminal (suptty.c), or NULL */
    struct sup_oci *oci; /* a container job's image and runtime (supoci.c), or NULL */
    struct cg_exe runtime_file;    /* the OCI runtime's program, when runtime_known: the */
    bool runtime_known;            /* job's signals pass over it (cg_job_signal says why) */
    int step_lfd;                  /* srun --container-image's socket (supstep.c), or -1 */
    pid_t step_pids[SUP_STEP_MAX]; /* its tasks' servers (children of ours), 0 = a free slot */
    int step_seq;                  /* in such a server: its task's number (its bundle), else 0 */
    bool keep_path; /* in such a server: --container-env=PATH, the task's PATH wins */
};

/* supstep.c: srun --container-image in a job that runs bare (docs/slurm.md "srun"). */
/* Whether the job serves container steps (a Slurm-style job without an image). */
bool sup_step_wanted(const struct sup *s);
/* SCRATCH/.slurm-bin/step.sock, listening: s->step_lfd. 0 (none when the job has no
 * srun here), or -errno (logged; the job runs without it). */
int sup_step_open(struct sup *s);
/* Connections waiting on the socket: each authenticated, then served by a child. */
void sup_step_accept(struct sup *s);
/* A child that ended was one of those servers: its slot is free. */
void sup_step_reaped(struct sup *s, pid_t pid);
/* The job ended: no new task (those running end with the job's cgroup). */
void sup_step_close(struct sup *s);
/* After the job's processes are gone and its children collected: a server still there
 * is killed, and every task's bundle removed. */
void sup_step_end(struct sup *s);

/* suptty.c: an interactive session (job.tty_idle_ms > 0). prepare opens the PTY, the
 * socket and the working directory; await waits for the first client before the launch;
 * child runs in the job's child; the run loop polls its descriptors (at most
 * SUP_TTY_POLLFDS) and asks idle whether the session is to end; end sends the exit. */
enum { SUP_TTY_POLLFDS = 3 };
struct pollfd;
int sup_tty_prepare(struct sup *s, char *err, size_t errlen);
int sup_tty_await(struct sup *s, int sfd, char *err, size_t errlen);
const char *sup_tty_workdir(const struct sup *s);
int sup_tty_child(struct sup *s);
void sup_tty_spawned(struct sup *s);
int sup_tty_pollfds(struct sup *s, struct pollfd *p);
void sup_tty_polled(struct sup *s, const struct pollfd *p, int n);
int64_t sup_tty_next_ms(const struct sup *s, int64_t now);
bool sup_tty_idle(struct sup *s, int64_t now);
void sup_tty_launch_failed(struct sup *s, const char *why);
void sup_tty_end(struct sup *s);

/* supervisor.c */
/* A message into err[len]; long paths are cut, which is what a message may do. */
void sup_errf(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A line in the job's supervisor.log (opened at the first one). */
void sup_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Write s->st to the job directory (a failure is logged). */
void sup_save(struct sup *s);
/* Reap every child that has ended. */
void sup_reap_all(void);

/* supwarm.c */
/* The job's template's prepare script built on this node (once per NAME@VERSION, reused
 * after): its directory into dir ("" when the job has none). 0, or an error for the
 * job's launch (the prepare's log then on the job's stderr). */
int sup_warm_environment(struct sup *s, char *dir, size_t dirlen, char *err, size_t errlen);
/* Whether the agent asked the job to stop (a ctl.* file naming kill or signal) before it
 * runs: a long preparation stops for it. */
bool sup_stop_asked(const struct sup *s);

/* suplaunch.c */
/* Set the job up and start it; s->leader is its pid. 0, or -errno with `err`. */
int sup_launch_job(struct sup *s, char *err, size_t errlen);
/* In a child about to exec a job's or a step's process: every signal's disposition back to
 * the default and none blocked, as a fresh process expects. */
void sup_child_signals_default(void);
/* Leave the job's group (spare path), so the group's signals never reach us. */
void sup_leave_group(struct sup *s);
/* The descriptor number the step host finds its listening socket at (DOCKET_STEP_FD). */
enum { SUP_STEP_FD = 3 };
/* Rank 0 of a Slurm-style job: record where rank `rank`'s step host listens, for srun
 * (SCRATCH/.slurm-bin/step-host.RANK, root's, replaced whole). 0 or -errno. */
int sup_step_host_write(struct sup *s, int rank, const char *hostport);

/* supcap.c */
enum { SUP_CAP_CHECK_MS = 1000 };
/* Keep the default output files to the log limit (marker, holes); sets s->cap_at. */
void sup_cap_outputs(struct sup *s);
/* supstate.c */
/* The state files of a job directory, most advanced first (see supstate.c). */
extern const char *const sup_state_files[3];
/* Write DIR/NAME by a rename of a fresh, synced file (see supstate.c). */
int sup_write_atomic(const char *dir, const char *name, const char *text);

/* Wait for a child that leads its own process group (supwarm.c): checked every tick_ms,
 * the whole group killed once stopped(arg) says so; its exit status, 128 + the signal
 * that ended it, or -errno. The supervisor's SIGCHLD and SIGUSR1 are blocked: waited for
 * here, so a command that comes meanwhile is read when the job launches. */
int sup_wait_group(pid_t pid, long tick_ms, bool (*stopped)(void *), void *arg);

#endif
