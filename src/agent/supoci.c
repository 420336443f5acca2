/*
 * supoci.c - a job in a container through an existing OCI runtime (supoci.h): the image
 * from the node's cache, the bundle's config.json, the runtime's command line, and the
 * mount namespace crun needs on a hybrid cgroup host.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/imgcache.h"
#include "agent/pathopen.h"
#include "agent/sup_int.h"
#include "agent/supoci.h"
#include "protocol/container.h"
#include "util/str.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

struct sup_oci {
    struct img_use img;
    char runtime[PATH_MAX]; /* the runtime's executable */
    bool hybrid;            /* cgroup v1 with an empty v2 tree beside it: crun refuses that view */
    char dir[PATH_MAX];     /* JOBDIR/oci: the bundle */
    char pid_file[PATH_MAX + 8], log_file[PATH_MAX + 16], state[PATH_MAX + 8];
    char id[64];
    char log_opt[PATH_MAX + 32], root_opt[PATH_MAX + 16];
    char *argv[16];
};

bool sup_oci_wanted(const struct sup *s)
{
    if (!s->j->container.image)
        return false;
    /* a Slurm job's other nodes run srun's step host (the docket CLI of the node) or
     * only hold the allocation: neither is the job's own command */
    return !((s->j->slurm.on || s->j->tty_idle_ms > 0) && s->j->node_rank > 0);
}

/* ---- the job's user's view of the node -------------------------------------------------- */

/* Open path as the job's user (its fsuid, fsgid and groups), never through a symbolic
 * link unless `follow`: what a mount's source or an image layout may be, the user may
 * read. */
static int open_as_user(const struct sup *s, const char *path, int flags, bool follow)
{
    bool root = geteuid() == 0;
    gid_t saved[256];
    int nsaved = 0;
    if (root) {
        nsaved = getgroups((int)(sizeof saved / sizeof saved[0]), saved);
        if (nsaved < 0 || setgroups((size_t)s->ngroups, s->groups) < 0)
            return -EPERM;
        setfsgid(s->gid);
        setfsuid(s->uid);
        if ((uid_t)setfsuid((uid_t)-1) != s->uid) {
            setfsuid(0);
            setfsgid(0);
            setgroups((size_t)nsaved, saved);
            return -EPERM;
        }
    }
    int fd =
        follow ? open(path, flags | O_CLOEXEC) : path_open_nofollow(path, flags | O_CLOEXEC, 0);
    if (follow && fd < 0)
        fd = -errno;
    if (root) {
        setfsuid(0);
        setfsgid(0);
        if (setgroups((size_t)nsaved, saved) < 0)
            sup_log("cannot restore the supervisor's groups: %s", strerror(errno));
    }
    return fd;
}

/* ---- the image ---------------------------------------------------------------------------- */

static void say(int fd, const char *line)
{
    if (fd >= 0 && write(fd, line, strlen(line)) < 0)
        return; /* the job's stderr is full or gone: the node's log keeps it */
}

static void unpacking(void *arg, const char *ref)
{
    struct sup *s = arg;
    char line[PROTO_IMAGE_REF_MAX + 80];
    snprintf(line, sizeof line, "docket: preparing image %s on this node (once an image)\n", ref);
    say(s->err_fd, line);
    if (s->step_seq)
        return; /* a step's task: the job runs already, its events say nothing of it */
    snprintf(line, sizeof line, "image %s", ref);
    /* JOBDIR/preparing: the agent sees it and tells docketd (an event, and `explain`) */
    if (sup_write_atomic(s->dir, "preparing", line) < 0)
        sup_log("job %llu: cannot write %s/preparing", (unsigned long long)s->j->id, s->dir);
    sup_log("job %llu: preparing %s", (unsigned long long)s->j->id, line);
}

static void in_child(void *arg)
{
    struct sup *s = arg;
    char err[256];
    if (s->use_cg && cg_job_attach(&s->cg, 0, err, sizeof err) < 0)
        _exit(126);
}

static bool stopped(void *arg)
{
    return sup_stop_asked(arg);
}

/* An OCI layout the job names must be one its user may read. */
static int check_layout(struct sup *s, char *err, size_t errlen)
{
    struct proto_image_ref r;
    struct proto_error pe;
    char index[PROTO_IMAGE_REF_MAX + 16];
    if (proto_image_ref_parse(s->j->container.image, "image", &r, &pe) < 0) {
        sup_errf(err, errlen, "%s", pe.message);
        return -EINVAL;
    }
    if (r.kind != PROTO_IMAGE_OCI_LAYOUT)
        return 0;
    snprintf(index, sizeof index, "%s/index.json", r.path);
    int fd = open_as_user(s, index, O_RDONLY | O_NONBLOCK, true);
    if (fd < 0) {
        sup_errf(err, errlen, "image %s: user '%s' cannot read '%s': %s", s->j->container.image,
                 s->user, index, strerror(-fd));
        return fd;
    }
    close(fd);
    return 0;
}

/* The registry's credentials the job was started with (its or its template's
 * registry_auth), or NULL. */
static const char *registry_auth(const struct sup *s)
{
    size_t n = strlen(AGENT_REGISTRY_AUTH_ENV);
    for (int i = 0; i < s->j->nsecret; i++)
        if (strncmp(s->j->secret_env[i], AGENT_REGISTRY_AUTH_ENV, n) == 0 &&
            s->j->secret_env[i][n] == '=')
            return s->j->secret_env[i] + n + 1;
    return NULL;
}

/* JOBDIR/registry-auth.json, the credentials for skopeo's --src-authfile: the
 * supervisor's (root's), mode 0600, made fresh (never a file or link found there), removed
 * as soon as the image is had. 0 and path, "" when the job has none, or -errno. */
static int write_authfile(struct sup *s, char *path, size_t len, char *err, size_t errlen)
{
    const char *auth = registry_auth(s);
    path[0] = '\0';
    if (!auth)
        return 0;
    snprintf(path, len, "%s/registry-auth.json", s->dir);
    unlink(path); /* one a crashed supervisor of this job left */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    size_t n = strlen(auth);
    if (fd < 0 || write(fd, auth, n) != (ssize_t)n || fsync(fd) < 0) {
        int e = fd < 0 ? errno : EIO;
        sup_errf(err, errlen, "image %s: cannot write the registry's credentials: %s",
                 s->j->container.image, strerror(e));
        if (fd >= 0)
            close(fd);
        unlink(path);
        path[0] = '\0';
        return -e;
    }
    close(fd);
    return 0;
}

static int acquire_image(struct sup *s, char *err, size_t errlen)
{
    char dir[PATH_MAX + 8], authfile[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/images", s->c->state_dir);
    struct img_cache cache = {dir, s->c->image_cache_max_bytes};
    struct img_hooks hooks = {unpacking, in_child, stopped, s, s->err_fd, NULL};
    char why[PATH_MAX];
    authfile[0] = '\0';
    int rc = check_layout(s, err, errlen);
    if (rc == 0)
        rc = write_authfile(s, authfile, sizeof authfile, err, errlen);
    hooks.authfile = authfile[0] ? authfile : NULL;
    if (rc == 0 && (rc = img_acquire(&cache, s->j->container.image, &hooks, &s->oci->img, why,
                                     sizeof why)) < 0)
        sup_errf(err, errlen, "image %s: %s", s->j->container.image, why);
    if (hooks.authfile)
        unlink(authfile);         /* the copy is done: no credentials stay on the node */
    if (rc < 0 && !s->step_seq) { /* a step's task says it itself (srun: error: ...) */
        char line[PATH_MAX + 32];
        snprintf(line, sizeof line, "docket: %s\n", err);
        say(s->err_fd, line);
    }
    return rc;
}

/* ---- the runtime ------------------------------------------------------------------------- */

/* The runtime's executable: a path as given, else a name on the agent's PATH. */
static int find_runtime(const char *name, char *out, size_t len)
{
    if (strchr(name, '/'))
        return access(name, X_OK) == 0 ? (str_copy(out, len, name), 0) : -errno;
    const char *path = getenv("PATH");
    char buf[4096];
    str_copy(buf, sizeof buf,
             path && *path ? path : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
    for (char *d = buf, *colon; d; d = colon ? colon + 1 : NULL) {
        colon = strchr(d, ':');
        if (colon)
            *colon = '\0';
        if (snprintf(out, len, "%s/%s", *d ? d : ".", name) < (int)len && access(out, X_OK) == 0)
            return 0;
    }
    return -ENOENT;
}

/* cgroup v1 with a v2 tree mounted at /sys/fs/cgroup/unified (systemd's hybrid layout). */
static bool hybrid_cgroups(void)
{
    struct statfs root, unified;
    return statfs("/sys/fs/cgroup", &root) == 0 && root.f_type != CGROUP2_SUPER_MAGIC &&
           statfs("/sys/fs/cgroup/unified", &unified) == 0 && unified.f_type == CGROUP2_SUPER_MAGIC;
}

static void runtime_argv(struct sup_oci *o)
{
    int n = 0;
    o->argv[n++] = o->runtime;
    o->argv[n++] = o->root_opt;
    /* the container stays in the job's cgroup, where the supervisor put us */
    o->argv[n++] = "--cgroup-manager=disabled";
    snprintf(o->log_opt, sizeof o->log_opt, "--log=file:%s", o->log_file);
    o->argv[n++] = o->log_opt;
    o->argv[n++] = "run";
    o->argv[n++] = "--pid-file";
    o->argv[n++] = o->pid_file;
    o->argv[n++] = "--bundle";
    o->argv[n++] = o->dir;
    o->argv[n++] = o->id;
    o->argv[n] = NULL;
}

/* ---- config.json ------------------------------------------------------------------------- */

static void add_mount(json_t *mounts, const char *dst, const char *type, const char *src,
                      const char *opts)
{
    json_t *m = json_pack("{s:s,s:s,s:s}", "destination", dst, "type", type, "source", src);
    json_t *o = json_array();
    char buf[256];
    str_copy(buf, sizeof buf, opts);
    for (char *t = buf, *comma; t && *t; t = comma ? comma + 1 : NULL) {
        comma = strchr(t, ',');
        if (comma)
            *comma = '\0';
        json_array_append_new(o, json_string(t));
    }
    json_object_set_new(m, "options", o);
    json_array_append_new(mounts, m);
}

static void add_bind(json_t *mounts, const char *src, const char *dst, bool ro)
{
    add_mount(mounts, dst, "bind", src, ro ? "rbind,nosuid,nodev,ro" : "rbind,nosuid,nodev");
}

/* The runtime's own file systems: a fresh /dev (no node's device but the job's GPUs),
 * /proc, a read-only /sys, a private /tmp and /dev/shm. */
static void base_mounts(json_t *m)
{
    add_mount(m, "/proc", "proc", "proc", "nosuid,noexec,nodev");
    add_mount(m, "/dev", "tmpfs", "tmpfs", "nosuid,strictatime,mode=755,size=65536k");
    add_mount(m, "/dev/pts", "devpts", "devpts",
              "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620");
    add_mount(m, "/dev/shm", "tmpfs", "shm", "nosuid,noexec,nodev,mode=1777");
    add_mount(m, "/dev/mqueue", "mqueue", "mqueue", "nosuid,noexec,nodev");
    add_mount(m, "/sys", "sysfs", "sysfs", "nosuid,noexec,nodev,ro");
    add_mount(m, "/tmp", "tmpfs", "tmpfs", "nosuid,nodev,mode=1777");
    static const char *const etc[] = {"/etc/hosts", "/etc/resolv.conf"};
    for (size_t i = 0; i < sizeof etc / sizeof etc[0]; i++)
        if (access(etc[i], R_OK) == 0)
            add_bind(m, etc[i], etc[i], true);
}

/* A device node of the node at dst (a GPU's, or the driver's), when the node has it. */
static void add_device(json_t *m, const char *src, const char *dst)
{
    if (access(src, F_OK) == 0)
        add_mount(m, dst, "bind", src, "bind,nosuid");
}

/* The job's GPUs' device nodes (and the driver's shared ones), from the node's device
 * directory; no other GPU's node exists in the container. */
static void gpu_mounts(const struct sup *s, json_t *m)
{
    const char *dev = s->c->gpu_dev_dir && *s->c->gpu_dev_dir ? s->c->gpu_dev_dir : "/dev";
    char src[PATH_MAX], dst[64];
    if (s->j->ngpus == 0)
        return;
    for (int i = 0; i < s->j->ngpus; i++) {
        int g = s->j->gpus[i];
        int minor = s->c->gpu_minor && g >= 0 && g < s->c->node_gpus ? s->c->gpu_minor[g] : g;
        snprintf(src, sizeof src, "%s/nvidia%d", dev, minor);
        snprintf(dst, sizeof dst, "/dev/nvidia%d", minor);
        add_device(m, src, dst);
    }
    static const char *const shared[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools",
                                         "nvidia-modeset"};
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++) {
        snprintf(src, sizeof src, "%s/%s", dev, shared[i]);
        snprintf(dst, sizeof dst, "/dev/%s", shared[i]);
        add_device(m, src, dst);
    }
}

static const char *env_get(char *const *env, const char *key)
{
    size_t n = strlen(key);
    for (; env && *env; env++)
        if (strncmp(*env, key, n) == 0 && (*env)[n] == '=')
            return *env + n + 1;
    return NULL;
}

/* A directory of the node at the same path in the container, when it exists: the
 * job's working directory, scratch and project storage. */
static void same_path(json_t *m, const char *path)
{
    struct stat sb;
    if (path && path[0] == '/' && strcmp(path, "/") != 0 && stat(path, &sb) == 0 &&
        S_ISDIR(sb.st_mode))
        add_bind(m, path, path, false);
}

/* The job's own mounts and its template's: each source opened as the job's user first
 * (no symbolic link on its way, the user may reach it). */
static int job_mounts(struct sup *s, json_t *m, char *err, size_t errlen)
{
    for (int i = 0; i < s->j->container.nmounts; i++) {
        struct proto_mount pm;
        struct proto_error pe;
        if (proto_mount_parse(s->j->container.mounts[i], "mount", &pm, &pe) < 0) {
            sup_errf(err, errlen, "%s", pe.message);
            return -EINVAL;
        }
        int fd = open_as_user(s, pm.src, O_PATH, false);
        struct stat sb;
        /* O_PATH opens a link itself rather than fail on it: refused here */
        if (fd >= 0 && (fstat(fd, &sb) < 0 || S_ISLNK(sb.st_mode))) {
            close(fd);
            fd = -ELOOP;
        }
        if (fd < 0) {
            sup_errf(err, errlen, "mount %s: user '%s' cannot reach '%s': %s",
                     s->j->container.mounts[i], s->user, pm.src,
                     fd == -ELOOP ? "a symbolic link is on its way" : strerror(-fd));
            return fd;
        }
        close(fd);
        add_bind(m, pm.src, pm.dst, pm.ro);
    }
    return 0;
}

/* The job's env, with the image's variables (its PATH, and any the job does not set). */
static json_t *container_env(const struct sup *s, char *const *env)
{
    json_t *out = json_array();
    char path[PATH_MAX], line[8192];
    snprintf(path, sizeof path, "%s/../.env", s->oci->img.rootfs);
    FILE *f = fopen(path, "re");
    bool own_path = s->keep_path || env_get(s->j->env, "PATH") != NULL;
    const char *image_path = NULL;
    char image_path_buf[8192];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *eq = strchr(line, '=');
        if (!eq || eq == line)
            continue;
        *eq = '\0';
        if (strcmp(line, "PATH") == 0) {
            str_copy(image_path_buf, sizeof image_path_buf, eq + 1);
            image_path = image_path_buf;
        } else if (!env_get(env, line)) {
            *eq = '=';
            json_array_append_new(out, json_string(line));
        }
    }
    if (f)
        fclose(f);
    for (char *const *e = env; e && *e; e++) {
        if (strncmp(*e, "PATH=", 5) == 0 && image_path && !own_path) {
            /* Slurm's commands stay first when the job has them (SCRATCH/.slurm-bin) */
            const char *slurm = strstr(*e, "/.slurm-bin:");
            char kv[8192 + PATH_MAX];
            if (slurm)
                snprintf(kv, sizeof kv, "%.*s%s", (int)(slurm + 12 - *e), *e, image_path);
            else
                snprintf(kv, sizeof kv, "PATH=%s", image_path);
            json_array_append_new(out, json_string(kv));
            continue;
        }
        json_array_append_new(out, json_string(*e));
    }
    return out;
}

static json_t *string_list(char *const *v)
{
    json_t *a = json_array();
    for (; v && *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

static json_t *process_json(struct sup *s, char *const *argv, char *const *env)
{
    json_t *gids = json_array();
    for (int i = 0; i < s->ngroups; i++)
        if ((gid_t)s->groups[i] != s->gid)
            json_array_append_new(gids, json_integer(s->groups[i]));
    const char *wd = s->j->container.workdir           ? s->j->container.workdir
                     : s->j->workdir && *s->j->workdir ? s->j->workdir
                     : s->home[0]                      ? s->home
                                                       : "/";
    json_t *none = json_array();
    return json_pack("{s:b,s:{s:I,s:I,s:o},s:o,s:o,s:s,s:{s:O,s:O,s:O,s:O,s:O},s:b}", "terminal",
                     false, "user", "uid", (json_int_t)s->uid, "gid", (json_int_t)s->gid,
                     "additionalGids", gids, "args", string_list(argv), "env",
                     container_env(s, env), "cwd", wd, "capabilities", "bounding", none,
                     "effective", none, "inheritable", none, "permitted", none, "ambient", none,
                     "noNewPrivileges", true);
}

static json_t *linux_json(void)
{
    json_t *l = json_pack("{s:[{s:s},{s:s},{s:s}],s:[s,s,s,s,s,s,s,s,s,s],s:[s,s,s,s,s]}",
                          "namespaces", "type", "mount", "type", "ipc", "type", "uts",
                          "maskedPaths", "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                          "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                          "/proc/sched_debug", "/sys/firmware", "/proc/scsi", "readonlyPaths",
                          "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger");
    return l;
}

static int write_config(struct sup *s, char *const *argv, char *const *env, char *err,
                        size_t errlen)
{
    json_t *mounts = json_array();
    base_mounts(mounts);
    gpu_mounts(s, mounts);
    /* the working directory as the job's user reaches it on the node: a bind mount would
     * otherwise skip the directories above it that the user may not pass */
    const char *wd = s->j->workdir && *s->j->workdir ? s->j->workdir : s->home;
    int fd = wd[0] == '/' ? open_as_user(s, wd, O_PATH | O_DIRECTORY, true) : -ENOENT;
    if (fd < 0 && s->j->workdir && *s->j->workdir) {
        json_decref(mounts);
        sup_errf(err, errlen, "cannot enter working directory '%s' as user '%s': %s", wd, s->user,
                 fd == -ELOOP ? "a symbolic link is on its way" : strerror(-fd));
        return fd;
    }
    if (fd >= 0) {
        close(fd);
        same_path(mounts, wd);
    }
    same_path(mounts, s->scratch);
    for (char *const *e = env; e && *e; e++) /* the project's storage areas on this node */
        if (strncmp(*e, "DOCKET_STORAGE_", 15) == 0 || strncmp(*e, "DOCKET_PROJECT_DIR=", 19) == 0)
            same_path(mounts, strchr(*e, '=') + 1);
    int rc = job_mounts(s, mounts, err, errlen);
    if (rc < 0) {
        json_decref(mounts);
        return rc;
    }
    json_t *cfg =
        json_pack("{s:s,s:o,s:{s:s,s:b},s:s,s:o,s:o}", "ociVersion", "1.0.2", "process",
                  process_json(s, argv, env), "root", "path", s->oci->img.rootfs, "readonly", true,
                  "hostname", s->c->node, "mounts", mounts, "linux", linux_json());
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/config.json", s->oci->dir);
    rc = cfg && json_dump_file(cfg, path, JSON_COMPACT) == 0 ? 0 : -EIO;
    json_decref(cfg);
    if (rc < 0)
        sup_errf(err, errlen, "cannot write '%s'", path);
    return rc;
}

static const char *runtime_name(const struct sup_config *c)
{
    return c->oci_runtime && *c->oci_runtime ? c->oci_runtime : "crun";
}

int sup_oci_runtime_file(const struct sup_config *c, struct cg_exe *out)
{
    char path[PATH_MAX];
    struct stat st;
    if (find_runtime(runtime_name(c), path, sizeof path) < 0 || stat(path, &st) < 0)
        return -ENOENT;
    *out = (struct cg_exe){.dev = st.st_dev, .ino = st.st_ino};
    return 0;
}

int sup_oci_image(struct sup *s, char *err, size_t errlen)
{
    struct sup_oci *o = calloc(1, sizeof *o);
    if (!o)
        return -ENOMEM;
    o->img.fd = -1;
    s->oci = o;
    const char *name = runtime_name(s->c);
    if (find_runtime(name, o->runtime, sizeof o->runtime) < 0) {
        sup_errf(err, errlen, "the OCI runtime '%s' is not installed on this node", name);
        return -ENOENT;
    }
    o->hybrid = hybrid_cgroups();
    if (s->step_seq) /* srun --container-image's task (supstep.c): a bundle of its own */
        snprintf(o->dir, sizeof o->dir, "%s/oci-step-%d", s->dir, s->step_seq);
    else
        snprintf(o->dir, sizeof o->dir, "%s/oci", s->dir);
    snprintf(o->pid_file, sizeof o->pid_file, "%s/pid", o->dir);
    snprintf(o->log_file, sizeof o->log_file, "%s/runtime.log", o->dir);
    snprintf(o->state, sizeof o->state, "%s/state", o->dir);
    snprintf(o->root_opt, sizeof o->root_opt, "--root=%s", o->state);
    /* one name per run: a killed runtime's state is the old directory's, removed here */
    snprintf(o->id, sizeof o->id, "docket-%llu-%d-%d", (unsigned long long)s->j->id, s->j->run,
             s->step_seq);
    sup_remove_tree(o->dir);
    if (mkdir(o->dir, 0700) < 0 || mkdir(o->state, 0700) < 0) {
        sup_errf(err, errlen, "cannot make '%s': %s", o->dir, strerror(errno));
        return -errno;
    }
    runtime_argv(o);
    return acquire_image(s, err, errlen);
}

int sup_oci_bundle(struct sup *s, char *const *argv, char *const *env, char *err, size_t errlen)
{
    return write_config(s, argv, env, err, errlen);
}

int sup_oci_exec(struct sup *s)
{
    struct sup_oci *o = s->oci;
    if (o->hybrid) {
        /* crun refuses a v1 host with an empty v2 tree beside it; in a mount namespace
         * of our own that tree is gone, the node's is untouched */
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
            umount2("/sys/fs/cgroup/unified", MNT_DETACH) < 0)
            return -errno;
    }
    /* the job's signals come to every process of its cgroup (the supervisor's way) but
     * the runtime's: crun and runc block every signal and pass on what they get, ignored
     * or not (a blocked signal is never discarded), so the supervisor passes over this
     * program (cg_job_signal). Ignored here all the same: the container's process gets
     * default dispositions from the runtime, and a signal that comes before the runtime
     * blocks them does not end it half-way */
    for (int sig = 1; sig < 32; sig++)
        if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD)
            signal(sig, SIG_IGN);
    char *env[] = {"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", NULL};
    execve(o->runtime, o->argv, env);
    return -errno;
}

/* The runtime's last error line (its log), for the job's exit message. */
static void runtime_error(const struct sup_oci *o, const char *who, char *out, size_t len)
{
    char line[1024] = "";
    FILE *f = fopen(o->log_file, "re");
    while (f && fgets(line, sizeof line, f))
        ;
    if (f)
        fclose(f);
    line[strcspn(line, "\n")] = '\0';
    snprintf(out, len, "the OCI runtime failed before the %s ran: %s", who, line);
}

void sup_oci_exit(struct sup *s)
{
    struct sup_oci *o = s->oci;
    if (!o)
        return;
    int st = s->leader_status;
    if (s->st.exit_kind == AGENT_EXIT_CODE && s->st.exit_code != 0 &&
        access(o->pid_file, F_OK) < 0) {
        s->st.exit_kind = AGENT_EXIT_LAUNCH_FAILED;
        runtime_error(o, s->step_seq ? "task" : "job", s->st.message, sizeof s->st.message);
    } else if (s->st.exit_kind == AGENT_EXIT_CODE && WIFEXITED(st) && WEXITSTATUS(st) > 128 &&
               WEXITSTATUS(st) < 128 + 32) {
        /* the runtime says "killed by N" the shell's way */
        s->st.exit_kind = AGENT_EXIT_SIGNAL;
        s->st.exit_code = WEXITSTATUS(st) - 128;
    }
    img_release(&o->img);
}

void sup_oci_done(struct sup *s)
{
    if (!s->oci)
        return;
    img_release(&s->oci->img);
    if (s->step_seq && s->oci->dir[0])
        sup_remove_tree(s->oci->dir);
}
