/*
 * cgroup.h - one job's control group, on cgroup v2 or v1, so the agent tracks and kills a
 * job by its cgroup and never by parent/child links (DESIGN §9, docs/agent.md).
 *
 * Layout: docket's groups live directly under the root of each hierarchy, whatever the
 * agent's own cgroup is: v2 ROOT/docket/NODE/job_ID; v1 ROOT/CTRL/docket/NODE/job_ID for
 * CTRL in memory, cpu, cpuacct, pids, freezer. ROOT is /sys/fs/cgroup unless --cgroup-root.
 *
 * Killing: v2 writes cgroup.kill when the kernel has it, else freezes, kills every pid of
 * cgroup.procs and thaws; v1 does the same dance with the freezer controller. Signals other
 * than SIGKILL are delivered the same way (frozen, every pid, thawed) so a fork during the
 * delivery cannot escape it. Removal waits for an empty cgroup.procs.
 *
 * Errors: functions return 0 or a negative errno; `err` (when given) receives a message
 * naming the file ("cannot write '/sys/fs/cgroup/...': Permission denied").
 */
#ifndef DOCKET_AGENT_CGROUP_H
#define DOCKET_AGENT_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum cg_mode { CG_NONE = 0, CG_V1, CG_V2 };

/* v1 controllers; devices is last and optional (v1 jobs get device rules only where it
 * is mounted: ndirs is then CG_NCTRL, else CG_NCTRL - 1). */
enum cg_ctrl { CG_MEMORY, CG_CPU, CG_CPUACCT, CG_PIDS, CG_FREEZER, CG_DEVICES, CG_NCTRL };

/* NVIDIA's character major: /dev/nvidiaN is 195:N, nvidiactl 195:255, nvidia-modeset
 * 195:254 (the last two are shared by every job and stay allowed). */
enum { CG_GPU_MAJOR = 195, CG_GPU_CTL_MINOR_MIN = 254, AGENT_CG_MAX_ALLOW = 64 };

struct cg_layout {
    enum cg_mode mode;
    char root[PATH_MAX]; /* mount root: /sys/fs/cgroup */
    char v2[PATH_MAX];   /* v2: the unified mount that has controllers */
    bool v2_kill;        /* v2: cgroup.kill exists */
    bool v1_devices;     /* v1: the devices controller is mounted */
    bool v1_blkio;       /* v1: the blkio controller is mounted (IO bytes of samples) */
};

struct cg_job {
    enum cg_mode mode;
    bool v2_kill;
    int ndirs;                    /* v2: 1; v1: CG_NCTRL */
    char dir[CG_NCTRL][PATH_MAX]; /* v2 uses dir[0] for everything */
    /* v1: the job's blkio group ("" when blkio is not mounted). Only counted: made and
     * joined on a best-effort basis, so a job runs where blkio is unusable. */
    char io[PATH_MAX];
};

/* Find which hierarchy to use under `root` (NULL = /sys/fs/cgroup): v2 when ROOT (or
 * ROOT/unified) lists the memory controller in cgroup.controllers, else v1 when
 * ROOT/{memory,cpu,cpuacct,pids,freezer} are mounted. -ENOENT when neither. */
int cg_detect(const char *root, struct cg_layout *out, char *err, size_t errlen);
const char *cg_mode_name(enum cg_mode m);

/* Fill the paths of job `id` of node `node` (no I/O). -ENAMETOOLONG when too long. */
int cg_job_init(struct cg_job *cg, const struct cg_layout *l, const char *node, uint64_t id);
/* The same for any leaf name under docket/NODE ("spare_42"). */
int cg_job_init_leaf(struct cg_job *cg, const struct cg_layout *l, const char *node,
                     const char *leaf);
/* Rename every directory of `from` to `to` (same parent; v1 only, -EOPNOTSUPP on v2). */
int cg_job_rename(const struct cg_job *from, const struct cg_job *to, char *err, size_t errlen);
/* Memory (MiB, > 0) and CPU (count, > 0) limits of an existing group. */
int cg_job_set_limits(const struct cg_job *cg, int64_t mem_mb, int cpus, char *err, size_t errlen);
/* The most processes (and threads) the job may have: pids.max (max > 0; 0 = no limit). */
int cg_job_set_pids(const struct cg_job *cg, int64_t max, char *err, size_t errlen);
/* GPU isolation: of NVIDIA's device nodes (major 195) the job may open only the minors in
 * `allow` (and the shared control nodes, minors 254 and 255), deny by default: every
 * other minor below 254 is refused, declared on this node or not. v1: a deny rule in the
 * job's devices group for each such minor; v2: a BPF_CGROUP_DEVICE program attached to
 * the job's group that refuses every other 195:N (loaded with libbpf). -EOPNOTSUPP on v1
 * without the devices controller. */
int cg_job_set_devices(const struct cg_job *cg, const int *allow, int nallow, char *err,
                       size_t errlen);
/* The node-wide process reserve (issue 33 #11: pid_max 32,768 against 8,192 a job): all
 * jobs together, in docket/NODE, get at most pid_max - reserve processes and threads, so
 * the agent, its supervisors' launches and the system keep room whatever the jobs fork.
 * 0 when reserve is 0 (no node-wide limit) or pid_max unknown (<= 0); -1 when the reserve
 * leaves nothing (reserve >= pid_max). Pure. */
int64_t cg_node_pids_cap(int64_t pid_max, int64_t reserve);
/* /proc/sys/kernel/pid_max, or 0 when it cannot be read. */
int64_t cg_pid_max(void);
/* Make the node's parent group docket/NODE (pids controller) and set its pids.max. */
int cg_node_set_pids(const struct cg_layout *l, const char *node, int64_t max, char *err,
                     size_t errlen);
/* Fill the paths of the node's parent group docket/NODE (for sweeping and tests). */
int cg_node_init(struct cg_job *cg, const struct cg_layout *l, const char *node);

/* Create the job's groups (parents included) and set limits: mem_mb > 0 caps memory
 * (and memory+swap on v1 where available), cpus > 0 sets a CPU quota of that many CPUs.
 * Pids are accounted. On error the groups made are removed again. */
int cg_job_create(const struct cg_job *cg, int64_t mem_mb, int cpus, char *err, size_t errlen);
/* Move process `pid` (0 = the caller) into the job's groups. */
int cg_job_attach(const struct cg_job *cg, pid_t pid, char *err, size_t errlen);
/* Number of processes in the job (the freezer group on v1, and every group a root job
 * nested below it), or negative errno. */
int cg_job_nprocs(const struct cg_job *cg);
/* A program file, by device and inode (struct stat's st_dev, st_ino). */
struct cg_exe {
    dev_t dev;
    ino_t ino;
};
/* Deliver `sig` to every process in the job (frozen meanwhile), but, unless it is SIGKILL,
 * those running the program `skip` names (NULL: none): an OCI runtime passes each signal
 * it gets on to its container's first process, which gets the signal itself here. Returns
 * how many got it, or a negative errno. SIGKILL uses cgroup.kill on v2 when present. */
int cg_job_signal(const struct cg_job *cg, int sig, const struct cg_exe *skip);
/* Whether process `pid` runs the program `exe` names. */
bool cg_pid_runs(pid_t pid, const struct cg_exe *exe);
/* Freeze or thaw (waits up to 1 s for the freeze to settle). */
int cg_job_freeze(const struct cg_job *cg, bool frozen);
/* CPU time in ms and peak memory in MiB (0 when unknown). */
int cg_job_usage(const struct cg_job *cg, int64_t *cpu_ms, int64_t *peak_mb);
/* A usage sample of the job's group (docs/monitoring.md "Samples"); -1 where unknown:
 * v2 cpu.stat usage_usec, memory.current, memory.peak, io.stat rbytes/wbytes summed
 * over devices; v1 cpuacct.usage, memory.usage_in_bytes, memory.max_usage_in_bytes,
 * blkio.throttle.io_service_bytes Read/Write summed over devices (the job's io group).
 * Returns 0, or -ENOENT when the group has no counters at all. */
struct cg_sample {
    int64_t cpu_ms, mem_bytes, mem_peak_bytes, io_read_bytes, io_write_bytes;
};
int cg_job_sample(const struct cg_job *cg, struct cg_sample *out);
/* True when the kernel OOM killer killed something in the job. */
bool cg_job_oom(const struct cg_job *cg);
/* Remove the groups, nested ones first. -EBUSY while processes remain. Missing groups
 * are fine. */
int cg_job_remove(const struct cg_job *cg);
/* SIGKILL everything, wait up to `wait_ms` for cgroup.procs to empty (calling `reap`
 * between checks when not NULL, so a subreaper can collect its zombies), then remove.
 * -EBUSY with a message when processes are left. */
int cg_job_reclaim(const struct cg_job *cg, int wait_ms, void (*reap)(void), char *err,
                   size_t errlen);
/* Every pid in the job, up to max; returns the count (or negative errno). */
int cg_job_pids(const struct cg_job *cg, pid_t *pids, int max);

#endif
