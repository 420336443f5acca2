/*
 * cgroup.c - a job's control groups on cgroup v2 or v1: create with limits, attach, signal
 * or kill every process atomically (cgroup.kill, or the freezer dance), usage, OOM, removal.
 * See cgroup.h and docs/agent.md ("Tracking and reclaim").
 */
#define _GNU_SOURCE
#include "agent/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/str.h"

static const char *const ctrl_names[CG_NCTRL] = {"memory", "cpu",     "cpuacct",
                                                 "pids",   "freezer", "devices"};

static int fail(char *err, size_t errlen, int rc, const char *what, const char *path)
{
    if (err && errlen)
        snprintf(err, errlen, "cannot %s '%s': %s", what, path, strerror(-rc));
    return rc;
}

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t n = strlen(text);
    ssize_t w = write(fd, text, n);
    int rc = (w == (ssize_t)n) ? 0 : (w < 0 ? -errno : -EIO);
    close(fd);
    return rc;
}

/* Read a small file into buf (NUL-terminated); returns length or negative errno. */
static ssize_t read_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t got = 0;
    while (got + 1 < len) {
        ssize_t r = read(fd, buf + got, len - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

static int join(char *out, size_t len, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la + 1 + lb + 1 > len)
        return -ENAMETOOLONG;
    memcpy(out, a, la);
    out[la] = '/';
    memcpy(out + la + 1, b, lb + 1);
    return 0;
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool v2_has_memory(const char *dir)
{
    char path[PATH_MAX], buf[512];
    if (join(path, sizeof path, dir, "cgroup.controllers") < 0 ||
        read_file(path, buf, sizeof buf) < 0)
        return false;
    for (char *p = buf; (p = strstr(p, "memory")) != NULL; p += 6) {
        bool start = p == buf || p[-1] == ' ';
        bool end = p[6] == '\0' || p[6] == ' ' || p[6] == '\n';
        if (start && end)
            return true;
    }
    return false;
}

const char *cg_mode_name(enum cg_mode m)
{
    return m == CG_V2 ? "v2" : m == CG_V1 ? "v1" : "none";
}

int cg_detect(const char *root, struct cg_layout *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!root)
        root = "/sys/fs/cgroup";
    if (str_copy(out->root, sizeof out->root, root) < 0)
        return fail(err, errlen, -ENAMETOOLONG, "use cgroup root", root);
    char path[PATH_MAX];
    const char *cands[2] = {root, NULL};
    char unified[PATH_MAX];
    if (join(unified, sizeof unified, root, "unified") == 0)
        cands[1] = unified;
    for (int i = 0; i < 2; i++) {
        if (cands[i] && v2_has_memory(cands[i])) {
            out->mode = CG_V2;
            str_copy(out->v2, sizeof out->v2, cands[i]);
            join(path, sizeof path, cands[i], "cgroup.kill");
            /* the root has no cgroup.kill; probe a child-level file name through the
             * kernel version instead: any non-root group has it from 5.14 on */
            struct stat st;
            out->v2_kill = stat(path, &st) == 0;
            if (!out->v2_kill) {
                char rel[256];
                if (read_file("/proc/sys/kernel/osrelease", rel, sizeof rel) > 0) {
                    int maj = 0, min = 0;
                    if (sscanf(rel, "%d.%d", &maj, &min) == 2)
                        out->v2_kill = maj > 5 || (maj == 5 && min >= 14);
                }
            }
            return 0;
        }
    }
    for (int c = 0; c < CG_DEVICES; c++) {
        char dir[PATH_MAX];
        if (join(dir, sizeof dir, root, ctrl_names[c]) < 0 ||
            join(path, sizeof path, dir, "cgroup.procs") < 0)
            return fail(err, errlen, -ENAMETOOLONG, "use cgroup root", root);
        if (!is_file(path)) {
            if (err && errlen)
                snprintf(err, errlen,
                         "no usable cgroup hierarchy under '%s' (no v2 memory controller, "
                         "no v1 '%s' controller)",
                         root, ctrl_names[c]);
            return -ENOENT;
        }
    }
    out->mode = CG_V1;
    char dev[PATH_MAX];
    out->v1_devices = join(dev, sizeof dev, root, "devices") == 0 &&
                      join(path, sizeof path, dev, "devices.deny") == 0 && is_file(path);
    out->v1_blkio = join(dev, sizeof dev, root, "blkio") == 0 &&
                    join(path, sizeof path, dev, "cgroup.procs") == 0 && is_file(path);
    return 0;
}

static int fill(struct cg_job *cg, const struct cg_layout *l, const char *rel)
{
    memset(cg, 0, sizeof *cg);
    cg->mode = l->mode;
    cg->v2_kill = l->v2_kill;
    if (l->mode == CG_V2) {
        cg->ndirs = 1;
        return snprintf(cg->dir[0], PATH_MAX, "%s/%s", l->v2, rel) >= PATH_MAX ? -ENAMETOOLONG : 0;
    }
    if (l->mode != CG_V1)
        return -EINVAL;
    cg->ndirs = l->v1_devices ? CG_NCTRL : CG_DEVICES;
    for (int c = 0; c < cg->ndirs; c++)
        if (snprintf(cg->dir[c], PATH_MAX, "%s/%s/%s", l->root, ctrl_names[c], rel) >= PATH_MAX)
            return -ENAMETOOLONG;
    if (l->v1_blkio && snprintf(cg->io, PATH_MAX, "%s/blkio/%s", l->root, rel) >= PATH_MAX)
        return -ENAMETOOLONG;
    return 0;
}

int cg_job_init(struct cg_job *cg, const struct cg_layout *l, const char *node, uint64_t id)
{
    char leaf[32];
    snprintf(leaf, sizeof leaf, "job_%llu", (unsigned long long)id);
    return cg_job_init_leaf(cg, l, node, leaf);
}

int cg_job_init_leaf(struct cg_job *cg, const struct cg_layout *l, const char *node,
                     const char *leaf)
{
    char rel[256];
    if (snprintf(rel, sizeof rel, "docket/%s/%s", node, leaf) >= (int)sizeof rel)
        return -ENAMETOOLONG;
    return fill(cg, l, rel);
}

int cg_job_rename(const struct cg_job *from, const struct cg_job *to, char *err, size_t errlen)
{
    if (from->mode != CG_V1 || to->mode != CG_V1)
        return fail(err, errlen, -EOPNOTSUPP, "rename cgroup", from->dir[0]);
    for (int i = 0; i < from->ndirs; i++)
        if (rename(from->dir[i], to->dir[i]) < 0)
            return fail(err, errlen, -errno, "rename cgroup", from->dir[i]);
    if (from->io[0] && to->io[0] && rename(from->io, to->io) < 0 && errno != ENOENT)
        return fail(err, errlen, -errno, "rename cgroup", from->io);
    return 0;
}

int cg_node_init(struct cg_job *cg, const struct cg_layout *l, const char *node)
{
    char rel[256];
    if (snprintf(rel, sizeof rel, "docket/%s", node) >= (int)sizeof rel)
        return -ENAMETOOLONG;
    return fill(cg, l, rel);
}

int64_t cg_node_pids_cap(int64_t pid_max, int64_t reserve)
{
    if (reserve <= 0 || pid_max <= 0)
        return 0;
    return reserve < pid_max ? pid_max - reserve : -1;
}

int64_t cg_pid_max(void)
{
    long long v = 0;
    FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
    if (!f)
        return 0;
    if (fscanf(f, "%lld", &v) != 1)
        v = 0;
    fclose(f);
    return v > 0 ? (int64_t)v : 0;
}

/* The directory used for process lists: v2 the group, v1 the freezer. */
static const char *track_dir(const struct cg_job *cg)
{
    return cg->mode == CG_V2 ? cg->dir[0] : cg->dir[CG_FREEZER];
}

/* mkdir -p; on v2 enable the controllers for the children of each parent made. */
static int mkdirs(const char *dir, const char *stop, bool v2)
{
    /* the parents exist after the node's first job: one mkdir is then enough */
    if (mkdir(dir, 0755) == 0 || errno == EEXIST)
        return 0;
    if (errno != ENOENT)
        return -errno;
    char tmp[PATH_MAX];
    if (str_copy(tmp, sizeof tmp, dir) < 0)
        return -ENAMETOOLONG;
    size_t skip = strlen(stop);
    for (char *p = tmp + skip + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (v2) {
        /* enable memory, cpu, pids for every level below the root, parents first */
        char sub[PATH_MAX];
        str_copy(tmp, sizeof tmp, stop);
        const char *rest = dir + skip;
        for (;;) {
            if (join(sub, sizeof sub, tmp, "cgroup.subtree_control") < 0)
                return -ENAMETOOLONG;
            write_file(sub, "+memory +cpu +pids"); /* best effort: some may be absent */
            const char *slash = strchr(rest + 1, '/');
            if (!slash)
                break;
            size_t used = strlen(tmp);
            size_t add = (size_t)(slash - rest);
            if (used + add + 1 > sizeof tmp)
                return -ENAMETOOLONG;
            memcpy(tmp + used, rest, add);
            tmp[used + add] = '\0';
            rest = slash;
        }
    }
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

int cg_job_set_limits(const struct cg_job *cg, int64_t mem_mb, int cpus, char *err, size_t errlen)
{
    char path[PATH_MAX], val[64];
    int rc;
    if (mem_mb > 0) {
        long long bytes = (long long)mem_mb * 1024 * 1024;
        snprintf(val, sizeof val, "%lld", bytes);
        if (cg->mode == CG_V2) {
            join(path, sizeof path, cg->dir[0], "memory.max");
            if ((rc = write_file(path, val)) < 0)
                return fail(err, errlen, rc, "write", path);
            join(path, sizeof path, cg->dir[0], "memory.swap.max");
            write_file(path, "0");
        } else {
            join(path, sizeof path, cg->dir[CG_MEMORY], "memory.limit_in_bytes");
            if ((rc = write_file(path, val)) < 0)
                return fail(err, errlen, rc, "write", path);
            join(path, sizeof path, cg->dir[CG_MEMORY], "memory.memsw.limit_in_bytes");
            if (is_file(path))
                write_file(path, val); /* no swapping past the limit */
        }
    }
    if (cpus > 0) {
        long long period = 100000, quota = period * cpus;
        if (cg->mode == CG_V2) {
            snprintf(val, sizeof val, "%lld %lld", quota, period);
            join(path, sizeof path, cg->dir[0], "cpu.max");
        } else {
            snprintf(val, sizeof val, "%lld", quota);
            join(path, sizeof path, cg->dir[CG_CPU], "cpu.cfs_quota_us");
        }
        if ((rc = write_file(path, val)) < 0)
            return fail(err, errlen, rc, "write", path);
    }
    return 0;
}

int cg_job_set_pids(const struct cg_job *cg, int64_t max, char *err, size_t errlen)
{
    if (max <= 0)
        return 0;
    char path[PATH_MAX], val[32];
    snprintf(val, sizeof val, "%lld", (long long)max);
    if (join(path, sizeof path, cg->dir[cg->mode == CG_V2 ? 0 : CG_PIDS], "pids.max") < 0)
        return fail(err, errlen, -ENAMETOOLONG, "write", cg->dir[0]);
    int rc = write_file(path, val);
    return rc < 0 ? fail(err, errlen, rc, "write", path) : 0;
}

static bool minor_in(int m, const int *set, int n)
{
    for (int i = 0; i < n; i++)
        if (set[i] == m)
            return true;
    return false;
}

/* The BPF_CGROUP_DEVICE program, written as instructions (no compiler needed at build
 * time). Its context is struct bpf_cgroup_dev_ctx {access_type, major, minor}; the low
 * 16 bits of access_type are the device type. Returns 1 (allow) for everything but a
 * character device 195:N whose N is neither the job's nor a control minor (>= 254). */
static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
    struct bpf_insn i;
    memset(&i, 0, sizeof i);
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    return i;
}

enum { DEV_PROG_MAX = 16 + AGENT_CG_MAX_ALLOW };

static int dev_prog(const int *allow, int nallow, struct bpf_insn *p)
{
    int n = 0, jumps[DEV_PROG_MAX], nj = 0;
    p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 0, 0); /* r2 = access_type */
    p[n++] = insn(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);  /* r2 &= 0xffff */
    jumps[nj++] = n;
    p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 0, BPF_DEVCG_DEV_CHAR);
    p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 4, 0); /* r2 = major */
    jumps[nj++] = n;
    p[n++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 0, CG_GPU_MAJOR);
    p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 8, 0); /* r2 = minor */
    jumps[nj++] = n;
    p[n++] = insn(BPF_JMP | BPF_JGE | BPF_K, BPF_REG_2, 0, 0, CG_GPU_CTL_MINOR_MIN);
    for (int i = 0; i < nallow; i++) {
        jumps[nj++] = n;
        p[n++] = insn(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_2, 0, 0, allow[i]);
    }
    p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0); /* deny */
    p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    int allow_at = n;
    p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1); /* allow */
    p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    for (int i = 0; i < nj; i++)
        p[jumps[i]].off = (int16_t)(allow_at - jumps[i] - 1);
    return n;
}

int cg_job_set_devices(const struct cg_job *cg, const int *allow, int nallow, char *err,
                       size_t errlen)
{
    char path[PATH_MAX], rule[64];
    int rc;
    if (nallow < 0 || nallow > AGENT_CG_MAX_ALLOW)
        return fail(err, errlen, -EINVAL, "limit devices of", cg->dir[0]);
    if (cg->mode == CG_V1) {
        if (cg->ndirs <= CG_DEVICES)
            return fail(err, errlen, -EOPNOTSUPP, "isolate GPUs (no v1 devices controller) for",
                        cg->dir[0]);
        /* the job's group inherits "a *:* rwm" from docket/NODE: deny by default every
         * GPU minor that is not the job's, not only the node's declared ones (a node may
         * have more GPUs than it declares: issue 33 #11). A v1 deny of "c 195:*" cannot
         * be punched by an allow of one minor, so each minor gets its rule. */
        join(path, sizeof path, cg->dir[CG_DEVICES], "devices.deny");
        for (int m = 0; m < CG_GPU_CTL_MINOR_MIN; m++) {
            if (minor_in(m, allow, nallow))
                continue;
            snprintf(rule, sizeof rule, "c %d:%d rwm", CG_GPU_MAJOR, m);
            if ((rc = write_file(path, rule)) < 0)
                return fail(err, errlen, rc, "write", path);
        }
        return 0;
    }
    if (cg->mode != CG_V2)
        return -EINVAL;
    struct bpf_insn prog[DEV_PROG_MAX];
    int n = dev_prog(allow, nallow, prog);
    char log[4096] = "";
    LIBBPF_OPTS(bpf_prog_load_opts, opts, .log_buf = log, .log_size = sizeof log, .log_level = 0);
    int pfd = bpf_prog_load(BPF_PROG_TYPE_CGROUP_DEVICE, "docket_gpus", "Apache-2.0", prog,
                            (size_t)n, &opts);
    if (pfd < 0) {
        rc = pfd < 0 && errno ? -errno : -EINVAL;
        if (err && errlen)
            snprintf(err, errlen, "cannot load the GPU device program for '%s': %s%s%s", cg->dir[0],
                     strerror(-rc), log[0] ? ": " : "", log);
        return rc;
    }
    int gfd = open(cg->dir[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    rc = gfd < 0 ? -errno : 0;
    if (rc == 0 && bpf_prog_attach(pfd, gfd, BPF_CGROUP_DEVICE, 0) < 0)
        rc = -errno;
    if (gfd >= 0)
        close(gfd);
    close(pfd); /* the attachment holds the program until the group goes */
    return rc < 0 ? fail(err, errlen, rc, "attach the GPU device program to", cg->dir[0]) : 0;
}

/* mkdir -p of a group under docket/: the part above "docket/" is the hierarchy root,
 * which exists. -EINVAL for a directory that is not under docket/. */
static int make_group(const char *dir, bool v2)
{
    const char *d = strstr(dir, "/docket/");
    if (!d)
        return -EINVAL;
    char stop[PATH_MAX];
    size_t n = (size_t)(d - dir);
    memcpy(stop, dir, n);
    stop[n] = '\0';
    return mkdirs(dir, stop, v2);
}

int cg_node_set_pids(const struct cg_layout *l, const char *node, int64_t max, char *err,
                     size_t errlen)
{
    struct cg_job cg;
    int rc = cg_node_init(&cg, l, node);
    if (rc < 0)
        return fail(err, errlen, rc, "name the node's cgroup", node);
    const char *dir = cg.dir[cg.mode == CG_V2 ? 0 : CG_PIDS];
    if ((rc = make_group(dir, cg.mode == CG_V2)) < 0)
        return fail(err, errlen, rc, "create cgroup", dir);
    return cg_job_set_pids(&cg, max, err, errlen);
}

int cg_job_create(const struct cg_job *cg, int64_t mem_mb, int cpus, char *err, size_t errlen)
{
    for (int i = 0; i < cg->ndirs; i++) {
        int rc = make_group(cg->dir[i], cg->mode == CG_V2);
        if (rc == -EINVAL)
            return fail(err, errlen, rc, "use cgroup", cg->dir[i]);
        if (rc < 0) {
            fail(err, errlen, rc, "create cgroup", cg->dir[i]);
            cg_job_remove(cg);
            return rc;
        }
    }
    if (cg->io[0]) { /* counted only: a job runs without it */
        const char *d = strstr(cg->io, "/docket/");
        char stop[PATH_MAX];
        size_t n = d ? (size_t)(d - cg->io) : 0;
        memcpy(stop, cg->io, n);
        stop[n] = '\0';
        if (!d || mkdirs(cg->io, stop, false) < 0)
            log_debug("cgroup_io", "dir=\"%s\" reason=\"cannot create: IO is not counted\"",
                      cg->io);
    }
    int rc = cg_job_set_limits(cg, mem_mb, cpus, err, errlen);
    if (rc < 0)
        cg_job_remove(cg);
    return rc;
}

int cg_job_attach(const struct cg_job *cg, pid_t pid, char *err, size_t errlen)
{
    char path[PATH_MAX], val[32];
    snprintf(val, sizeof val, "%d", pid ? (int)pid : (int)getpid());
    for (int i = 0; i < cg->ndirs; i++) {
        if (join(path, sizeof path, cg->dir[i], "cgroup.procs") < 0)
            return -ENAMETOOLONG;
        int rc = write_file(path, val);
        if (rc < 0)
            return fail(err, errlen, rc, "write", path);
    }
    if (cg->io[0] && join(path, sizeof path, cg->io, "cgroup.procs") == 0)
        (void)write_file(path, val); /* counted only (cg_job_create) */
    return 0;
}

/* The pids of `dir` and of every group nested below it (a root job may make its own
 * sub-groups; their processes are the job's too). Counts all, stores up to max. */
static int collect_pids(const char *dir, pid_t *pids, int max, int *n, int depth)
{
    char path[PATH_MAX];
    if (join(path, sizeof path, dir, "cgroup.procs") < 0)
        return -ENAMETOOLONG;
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    long v;
    while (fscanf(f, "%ld", &v) == 1) {
        if (*n < max && pids)
            pids[*n] = (pid_t)v;
        (*n)++;
    }
    fclose(f);
    /* a cgroup directory's link count is 2 + its sub-groups: most jobs have none */
    struct stat st;
    if (depth >= 16 || stat(dir, &st) < 0 || st.st_nlink <= 2)
        return 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        if (join(path, sizeof path, dir, e->d_name) == 0)
            collect_pids(path, pids, max, n, depth + 1);
    }
    if (d)
        closedir(d);
    return 0;
}

int cg_job_pids(const struct cg_job *cg, pid_t *pids, int max)
{
    int n = 0;
    int rc = collect_pids(track_dir(cg), pids, max, &n, 0);
    return rc < 0 ? rc : n;
}

int cg_job_nprocs(const struct cg_job *cg)
{
    return cg_job_pids(cg, NULL, 0);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Waiting for a freeze: a freeze usually settles within microseconds, so the first
 * checks only yield the CPU; after that, 1 ms naps (about a second in all). */
static void settle(int i)
{
    if (i < 100)
        sched_yield();
    else
        sleep_ms(1);
}

int cg_job_freeze(const struct cg_job *cg, bool frozen)
{
    char path[PATH_MAX], buf[256];
    if (cg->mode == CG_V2) {
        join(path, sizeof path, cg->dir[0], "cgroup.freeze");
        int rc = write_file(path, frozen ? "1" : "0");
        if (rc < 0 || !frozen)
            return rc;
        join(path, sizeof path, cg->dir[0], "cgroup.events");
        for (int i = 0; i < 1100; i++) {
            if (read_file(path, buf, sizeof buf) > 0 && strstr(buf, "frozen 1"))
                return 0;
            settle(i);
        }
        return -ETIMEDOUT;
    }
    join(path, sizeof path, cg->dir[CG_FREEZER], "freezer.state");
    int rc = write_file(path, frozen ? "FROZEN" : "THAWED");
    if (rc < 0 || !frozen)
        return rc;
    for (int i = 0; i < 1100; i++) {
        if (read_file(path, buf, sizeof buf) > 0 && str_has_prefix(buf, "FROZEN"))
            return 0;
        settle(i);
        write_file(path, "FROZEN");
    }
    return -ETIMEDOUT;
}

bool cg_pid_runs(pid_t pid, const struct cg_exe *exe)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    return exe && stat(path, &st) == 0 && st.st_dev == exe->dev && st.st_ino == exe->ino;
}

static int signal_listed(const struct cg_job *cg, int sig, const struct cg_exe *skip)
{
    pid_t pids[4096];
    int n = cg_job_pids(cg, pids, 4096);
    if (n < 0)
        return n;
    int sent = 0;
    for (int i = 0; i < n && i < 4096; i++)
        if (pids[i] > 0 && (sig == SIGKILL || !cg_pid_runs(pids[i], skip)) &&
            kill(pids[i], sig) == 0)
            sent++;
    return sent;
}

int cg_job_signal(const struct cg_job *cg, int sig, const struct cg_exe *skip)
{
    if (sig == SIGKILL && cg->mode == CG_V2 && cg->v2_kill) {
        char path[PATH_MAX];
        join(path, sizeof path, cg->dir[0], "cgroup.kill");
        int n = cg_job_nprocs(cg);
        int rc = write_file(path, "1");
        if (rc == 0)
            return n < 0 ? 0 : n;
    }
    /* Frozen, nobody can fork between the read of cgroup.procs and the kills. A freeze
     * that does not settle (a task in uninterruptible sleep) still gets the signals. */
    int frc = cg_job_freeze(cg, true);
    int sent = signal_listed(cg, sig, skip);
    if (frc == 0 || frc == -ETIMEDOUT)
        cg_job_freeze(cg, false);
    return sent;
}

static int64_t read_num(const char *dir, const char *file)
{
    char path[PATH_MAX], buf[64];
    if (join(path, sizeof path, dir, file) < 0 || read_file(path, buf, sizeof buf) <= 0)
        return -1;
    return strtoll(buf, NULL, 10);
}

/* A "key value" line of a flat-keyed file (cpu.stat, memory.events, oom_control). */
static int64_t read_key(const char *dir, const char *file, const char *key)
{
    char path[PATH_MAX], buf[4096];
    if (join(path, sizeof path, dir, file) < 0 || read_file(path, buf, sizeof buf) <= 0)
        return -1;
    size_t kl = strlen(key);
    for (char *line = buf; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, key, kl) == 0 && line[kl] == ' ')
            return strtoll(line + kl + 1, NULL, 10);
    }
    return -1;
}

int cg_job_usage(const struct cg_job *cg, int64_t *cpu_ms, int64_t *peak_mb)
{
    int64_t cpu = -1, peak = -1;
    if (cg->mode == CG_V2) {
        int64_t us = read_key(cg->dir[0], "cpu.stat", "usage_usec");
        cpu = us >= 0 ? us / 1000 : -1;
        peak = read_num(cg->dir[0], "memory.peak");
    } else {
        int64_t ns = read_num(cg->dir[CG_CPUACCT], "cpuacct.usage");
        cpu = ns >= 0 ? ns / 1000000 : -1;
        peak = read_num(cg->dir[CG_MEMORY], "memory.max_usage_in_bytes");
    }
    *cpu_ms = cpu < 0 ? 0 : cpu;
    *peak_mb = peak < 0 ? 0 : (peak + (1 << 20) - 1) / (1 << 20);
    return 0;
}

/* Sum the bytes of `rkey`/`wkey` over every device line of an IO stats file: v2 io.stat
 * ("8:0 rbytes=1 wbytes=2 ...") when `eq`, v1 blkio ("8:0 Read 1", "8:0 Write 2"). */
static int io_sum(const char *dir, const char *file, bool eq, int64_t *rd, int64_t *wr)
{
    char path[PATH_MAX], buf[16384];
    if (join(path, sizeof path, dir, file) < 0 || read_file(path, buf, sizeof buf) < 0)
        return -ENOENT;
    *rd = *wr = 0;
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *dev = line, *rest = strchr(line, ' ');
        if (!rest || !strchr(dev, ':') || strchr(dev, ':') > rest)
            continue; /* "Total N" */
        if (eq) {
            const char *r = strstr(rest, " rbytes="), *w = strstr(rest, " wbytes=");
            *rd += r ? strtoll(r + 8, NULL, 10) : 0;
            *wr += w ? strtoll(w + 8, NULL, 10) : 0;
        } else if (strncmp(rest, " Read ", 6) == 0) {
            *rd += strtoll(rest + 6, NULL, 10);
        } else if (strncmp(rest, " Write ", 7) == 0) {
            *wr += strtoll(rest + 7, NULL, 10);
        }
    }
    return 0;
}

int cg_job_sample(const struct cg_job *cg, struct cg_sample *out)
{
    int64_t cpu;
    out->io_read_bytes = out->io_write_bytes = -1;
    if (cg->mode == CG_V2) {
        int64_t us = read_key(cg->dir[0], "cpu.stat", "usage_usec");
        cpu = us >= 0 ? us / 1000 : -1;
        out->mem_bytes = read_num(cg->dir[0], "memory.current");
        out->mem_peak_bytes = read_num(cg->dir[0], "memory.peak");
        if (io_sum(cg->dir[0], "io.stat", true, &out->io_read_bytes, &out->io_write_bytes) < 0)
            out->io_read_bytes = out->io_write_bytes = -1;
    } else {
        int64_t ns = read_num(cg->dir[CG_CPUACCT], "cpuacct.usage");
        cpu = ns >= 0 ? ns / 1000000 : -1;
        out->mem_bytes = read_num(cg->dir[CG_MEMORY], "memory.usage_in_bytes");
        out->mem_peak_bytes = read_num(cg->dir[CG_MEMORY], "memory.max_usage_in_bytes");
        if (cg->io[0] && io_sum(cg->io, "blkio.throttle.io_service_bytes", false,
                                &out->io_read_bytes, &out->io_write_bytes) < 0)
            out->io_read_bytes = out->io_write_bytes = -1;
    }
    out->cpu_ms = cpu;
    return cpu < 0 && out->mem_bytes < 0 ? -ENOENT : 0;
}

bool cg_job_oom(const struct cg_job *cg)
{
    if (cg->mode == CG_V2)
        return read_key(cg->dir[0], "memory.events", "oom_kill") > 0;
    int64_t k = read_key(cg->dir[CG_MEMORY], "memory.oom_control", "oom_kill");
    if (k >= 0)
        return k > 0;
    /* old kernels: hitting the limit is the best evidence there is */
    return read_num(cg->dir[CG_MEMORY], "memory.failcnt") > 0;
}

/* rmdir of `dir`, after the groups nested below it (deepest first) when it has any. */
static int remove_tree(const char *dir, int depth)
{
    if (rmdir(dir) == 0 || errno == ENOENT)
        return 0;
    if (errno != EBUSY && errno != ENOTEMPTY)
        return -errno;
    DIR *d = depth < 16 ? opendir(dir) : NULL;
    struct dirent *e;
    char path[PATH_MAX];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_type == DT_DIR && e->d_name[0] != '.' &&
            join(path, sizeof path, dir, e->d_name) == 0)
            remove_tree(path, depth + 1);
    }
    if (d)
        closedir(d);
    return rmdir(dir) < 0 && errno != ENOENT ? -errno : 0;
}

int cg_job_remove(const struct cg_job *cg)
{
    int rc = 0;
    if (cg->io[0])
        (void)remove_tree(cg->io, 0); /* counted only: never keeps the job's groups */
    for (int i = cg->ndirs - 1; i >= 0; i--) {
        int r = remove_tree(cg->dir[i], 0);
        if (r < 0 && rc == 0)
            rc = r;
    }
    return rc;
}

int cg_job_reclaim(const struct cg_job *cg, int wait_ms, void (*reap)(void), char *err,
                   size_t errlen)
{
    int waited = 0, step = 1;
    for (;;) {
        int n = cg_job_nprocs(cg);
        if (n == -ENOENT || n == 0)
            break;
        if (n > 0)
            cg_job_signal(cg, SIGKILL, NULL);
        if (reap)
            reap();
        if (waited >= wait_ms) {
            if (err && errlen)
                snprintf(err, errlen, "%d processes left in cgroup '%s' after %d ms", n,
                         track_dir(cg), waited);
            return -EBUSY;
        }
        sleep_ms(step);
        waited += step;
        if (step < 50)
            step *= 2;
    }
    /* an empty group may still refuse rmdir for a moment while the kernel lets go */
    for (int i = 0; i < 100; i++) {
        int rc = cg_job_remove(cg);
        if (rc == 0)
            return 0;
        if (rc != -EBUSY)
            return fail(err, errlen, rc, "remove cgroup", track_dir(cg));
        if (reap)
            reap();
        sleep_ms(5);
    }
    return fail(err, errlen, -EBUSY, "remove cgroup", track_dir(cg));
}
