/*
 * supenv.c - what a job is launched with: its output paths resolved (%j, %x, %a, %%;
 * relative to the working directory) and its environment built (the user's, DOCKET_*,
 * the GPUs it was given). See supervisor.h and docs/agent.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/supervisor.h"
#include "util/clock.h"
#include "util/str.h"

/* One replacement symbol of an output path (Slurm's filename pattern): its text in tmp,
 * `pad` the zero-padding width for numbers (at most 10). Returns what to add. */
static const char *pattern_symbol(char c, int pad, const struct agent_job *j, const char *user,
                                  char *tmp, size_t len)
{
    unsigned long long n;
    const char *node = j->nnodes > j->node_rank ? j->nodelist[j->node_rank] : "";
    switch (c) {
    case 'j':
    case 'J': /* jobid.stepid, the step only for srun's steps: the batch output is the id */
        n = (unsigned long long)j->id;
        break;
    case 'A':
        n = (unsigned long long)(j->array_id ? j->array_id : j->id);
        break;
    case 'a':
        n = (unsigned long long)j->array_index;
        break;
    case 'b':
        n = (unsigned long long)j->array_index % 10;
        break;
    case 'n':
        n = (unsigned long long)j->node_rank;
        break;
    case 't':
    case 'r':
        n = 0;
        break;
    case 's':
        return "batch";
    case 'x':
        return j->name[0] ? j->name : "job";
    case 'u':
        return user && *user ? user : (j->user[0] ? j->user : "nobody");
    case 'N': /* the short host name */
        snprintf(tmp, len, "%.*s", (int)strcspn(node, "."), node);
        return tmp;
    case '%':
        return "%";
    default:
        snprintf(tmp, len, "%%%c", c);
        return tmp;
    }
    snprintf(tmp, len, "%0*llu", pad, n);
    return tmp;
}

int sup_resolve_output(const char *spec, const char *jobdir, const char *default_name,
                       const char *workdir, const struct agent_job *j, const char *user, char *out,
                       size_t len)
{
    if (!spec || !*spec)
        return snprintf(out, len, "%s/%s", jobdir, default_name) >= (int)len ? -ENAMETOOLONG : 0;
    char buf[PATH_MAX];
    size_t o = 0;
    /* Slurm: a backslash in the pattern turns the symbols off (and is dropped) */
    bool literal = strchr(spec, '\\') != NULL;
    for (const char *p = spec; *p; p++) {
        char tmp[160];
        const char *add = tmp;
        if (literal && *p == '\\')
            continue;
        if (!literal && *p == '%' && p[1]) {
            int pad = 0;
            while (p[1] >= '0' && p[1] <= '9') {
                pad = pad * 10 + (p[1] - '0');
                if (pad > 10)
                    pad = 10;
                p++;
            }
            if (!p[1])
                break;
            p++;
            add = pattern_symbol(*p, pad, j, user, tmp, sizeof tmp);
        } else {
            tmp[0] = *p;
            tmp[1] = '\0';
        }
        size_t al = strlen(add);
        if (o + al + 1 > sizeof buf)
            return -ENAMETOOLONG;
        memcpy(buf + o, add, al);
        o += al;
    }
    buf[o] = '\0';
    int n = buf[0] == '/' ? snprintf(out, len, "%s", buf)
                          : snprintf(out, len, "%s/%s", workdir && *workdir ? workdir : "/", buf);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

struct envb {
    char **v;
    int n, cap;
};

static bool env_has(const struct envb *e, const char *key)
{
    size_t kl = strlen(key);
    for (int i = 0; i < e->n; i++)
        if (strncmp(e->v[i], key, kl) == 0 && e->v[i][kl] == '=')
            return true;
    return false;
}

/* Set key=value; `force` replaces a value the job gave (the DOCKET_* and GPU binding). */
static void env_set(struct envb *e, const char *key, const char *value, bool force)
{
    size_t kl = strlen(key), len = kl + strlen(value) + 2;
    char *kv = malloc(len);
    if (!kv)
        return;
    snprintf(kv, len, "%s=%s", key, value);
    for (int i = 0; i < e->n; i++)
        if (strncmp(e->v[i], key, kl) == 0 && e->v[i][kl] == '=') {
            if (force) {
                free(e->v[i]);
                e->v[i] = kv;
            } else {
                free(kv);
            }
            return;
        }
    if (e->n + 2 > e->cap) {
        int cap = e->cap ? e->cap * 2 : 64;
        char **nv = realloc(e->v, (size_t)cap * sizeof *nv);
        if (!nv) {
            free(kv);
            return;
        }
        e->v = nv;
        e->cap = cap;
    }
    e->v[e->n++] = kv;
    e->v[e->n] = NULL;
}

static void env_int(struct envb *e, const char *key, long long v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", v);
    env_set(e, key, num, true);
}

/* SLURM_TASKS_PER_NODE in Slurm's compact form: "N(xK)" runs, comma-separated. */
static void tasks_per_node(int ntasks, int per_node, int nnodes, char *out, size_t len)
{
    int base = nnodes > 0 ? ntasks / nnodes : ntasks, extra = nnodes > 0 ? ntasks % nnodes : 0;
    if (ntasks < nnodes || ntasks > per_node * nnodes) /* counts given per node */
        base = per_node, extra = 0;
    size_t o = 0;
    out[0] = '\0';
    for (int run = 0; run < 2; run++) {
        int count = run ? nnodes - extra : extra, value = run ? base : base + 1;
        if (count <= 0 || o >= len)
            continue;
        o += (size_t)snprintf(out + o, len - o, count > 1 ? "%s%d(x%d)" : "%s%d", o ? "," : "",
                              value, count);
    }
}

/* Slurm's environment of a batch step (docs/slurm.md): what sbatch and slurmd set, from
 * the allocation docket made. The batch script is task 0 on node 0. */
static void slurm_env(struct envb *e, const struct agent_job *j, const char *node, const char *user)
{
    char buf[64], gpus[AGENT_MAX_GPUS * 4 + 1] = "";
    size_t gl = 0;
    int nnodes = j->nnodes ? j->nnodes : 1;
    for (int i = 0; i < j->ngpus; i++)
        gl += (size_t)snprintf(gpus + gl, sizeof gpus - gl, "%s%d", i ? "," : "", j->gpus[i]);
    env_int(e, "SLURM_JOB_ID", (long long)j->id);
    env_int(e, "SLURM_JOBID", (long long)j->id);
    env_set(e, "SLURM_JOB_NAME", j->name, true);
    env_set(e, "SLURM_JOB_ACCOUNT", j->project, true);
    env_set(e, "SLURM_JOB_PARTITION", j->slurm.partition[0] ? j->slurm.partition : j->tier, true);
    env_set(e, "SLURM_JOB_QOS", j->class_name, true);
    env_set(e, "SLURM_JOB_USER", user ? user : j->user, true);
    env_set(e, "SLURM_CLUSTER_NAME", "docket", true);
    env_set(e, "SLURMD_NODENAME", node, true);
    env_set(e, "SLURM_TOPOLOGY_ADDR", node, true);
    env_int(e, "SLURM_NNODES", nnodes);
    env_int(e, "SLURM_JOB_NUM_NODES", nnodes);
    env_int(e, "SLURM_NODEID", j->node_rank);
    env_int(e, "SLURM_NTASKS", j->slurm.ntasks);
    env_int(e, "SLURM_NPROCS", j->slurm.ntasks);
    env_int(e, "SLURM_NTASKS_PER_NODE", j->slurm.ntasks_per_node);
    /* "4(x2)": 4 on each of 2 nodes, Slurm's compact form; "4" on one node; tasks that do
     * not divide go in blocks, the first nodes one more: -N2 -n3 is "2,1" */
    int cpus = j->cpus > 0 ? j->cpus : 1;
    tasks_per_node(j->slurm.ntasks, j->slurm.ntasks_per_node, nnodes, buf, sizeof buf);
    env_set(e, "SLURM_TASKS_PER_NODE", buf, true);
    env_int(e, "SLURM_CPUS_PER_TASK", j->slurm.cpus_per_task);
    env_int(e, "SLURM_CPUS_ON_NODE", cpus);
    snprintf(buf, sizeof buf, nnodes > 1 ? "%d(x%d)" : "%d", cpus, nnodes);
    env_set(e, "SLURM_JOB_CPUS_PER_NODE", buf, true);
    if (j->mem_mb > 0)
        env_int(e, "SLURM_MEM_PER_NODE", (long long)j->mem_mb);
    env_int(e, "SLURM_GPUS_ON_NODE", j->ngpus);
    if (j->ngpus) /* read for a tensor-parallel size (vLLM) */
        env_int(e, "SLURM_GPUS_PER_NODE", j->ngpus);
    if (j->ngpus) {
        env_set(e, "SLURM_JOB_GPUS", gpus, true);
        env_set(e, "GPU_DEVICE_ORDINAL", gpus, true);
    }
    if (j->slurm.gpus_per_task)
        env_int(e, "SLURM_GPUS_PER_TASK", j->slurm.gpus_per_task);
    env_int(e, "SLURM_PROCID", 0);
    env_int(e, "SLURM_LOCALID", 0);
    env_set(e, "SLURM_STEP_ID", "batch", true);
    if (j->array_id) {
        env_int(e, "SLURM_ARRAY_JOB_ID", (long long)j->array_id);
        env_int(e, "SLURM_ARRAY_TASK_ID", j->array_index);
    }
    if (j->slurm.submit_dir)
        env_set(e, "SLURM_SUBMIT_DIR", j->slurm.submit_dir, true);
    /* man sbatch: "If the job has been restarted due to system failure or has been
     * explicitly requeued, this will be sent to the number of times the job has been
     * restarted": the runs before this one (a requeue, a preemption) */
    if (j->run > 1)
        env_int(e, "SLURM_RESTART_COUNT", j->run - 1);
    /* for srun and its step hosts: the job's key to the step links (srun.h); where the
     * step hosts listen comes later, once each has its port (step-host.N in .slurm-bin) */
    if (j->slurm.step_key[0] && j->slurm.nstep_hosts == nnodes)
        env_set(e, "DOCKET_STEP_KEY", j->slurm.step_key, true);
    env_set(e, "SLURM_SUBMIT_HOST", node, false);
    int64_t now = clock_now_ms() / 1000;
    env_int(e, "SLURM_JOB_START_TIME", (long long)now);
    if (j->time_limit_ms > 0)
        env_int(e, "SLURM_JOB_END_TIME", (long long)(now + j->time_limit_ms / 1000));
}

/* SCRATCH/.slurm-bin (suplaunch.c) first on the PATH, when it was made. */
static void slurm_path(struct envb *e, const char *scratch)
{
    char dir[PATH_MAX];
    struct stat sb;
    if (snprintf(dir, sizeof dir, "%s/.slurm-bin", scratch) >= (int)sizeof dir ||
        stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
        return;
    for (int i = 0; i < e->n; i++)
        if (!strncmp(e->v[i], "PATH=", 5)) {
            size_t len = strlen(dir) + strlen(e->v[i]) + 2;
            char *kv = malloc(len);
            if (!kv)
                return;
            snprintf(kv, len, "PATH=%s:%s", dir, e->v[i] + 5);
            free(e->v[i]);
            e->v[i] = kv;
            return;
        }
}

char **sup_build_env(const struct agent_job *j, const char *node, const char *user,
                     const char *home, const char *shell, const char *scratch, const char *env_dir)
{
    struct envb e = {NULL, 0, 0};
    /* the job's env, then its secrets (a secret wins over a plain variable of its name),
     * then Docket's own variables, which neither may change */
    for (int pass = 0; pass < 2; pass++) {
        char *const *vec = pass ? j->secret_env : j->env;
        for (int i = 0; i < (pass ? j->nsecret : j->nenv); i++) {
            char *eq = strchr(vec[i], '=');
            if (!eq)
                continue;
            char key[256];
            size_t kl = (size_t)(eq - vec[i]);
            if (kl >= sizeof key)
                continue;
            memcpy(key, vec[i], kl);
            key[kl] = '\0';
            if (pass && strcmp(key, AGENT_REGISTRY_AUTH_ENV) == 0)
                continue; /* the registry's credentials are skopeo's (supoci.c), not the job's */
            env_set(&e, key, eq + 1, true);
        }
    }
    char num[32], gpus[AGENT_MAX_GPUS * 4 + 1] = "";
    size_t gl = 0;
    for (int i = 0; i < j->ngpus; i++)
        gl += (size_t)snprintf(gpus + gl, sizeof gpus - gl, "%s%d", i ? "," : "", j->gpus[i]);
    snprintf(num, sizeof num, "%llu", (unsigned long long)j->id);
    env_set(&e, "DOCKET_JOB_ID", num, true);
    env_set(&e, "DOCKET_JOB_NAME", j->name, true);
    env_set(&e, "DOCKET_PROJECT", j->project, true);
    env_set(&e, "DOCKET_TIER", j->tier, true);
    env_set(&e, "DOCKET_CLASS", j->class_name, true);
    env_set(&e, "DOCKET_NODE", node, true);
    env_set(&e, "DOCKET_GPUS", gpus, true);
    env_set(&e, "CUDA_VISIBLE_DEVICES", gpus, true);
    env_set(&e, "NVIDIA_VISIBLE_DEVICES", j->ngpus ? gpus : "void", true);
    snprintf(num, sizeof num, "%d", j->array_index);
    env_set(&e, "DOCKET_ARRAY_INDEX", num, true);
    struct envb nl = {NULL, 0, 0};
    size_t need = 1;
    for (int i = 0; i < j->nnodes; i++)
        need += strlen(j->nodelist[i]) + 1;
    char *list = malloc(need + strlen(node));
    if (list) {
        size_t o = 0;
        for (int i = 0; i < j->nnodes; i++)
            o += (size_t)snprintf(list + o, need - o, "%s%s", i ? "," : "", j->nodelist[i]);
        if (j->nnodes == 0)
            memcpy(list, node, strlen(node) + 1);
        env_set(&e, "DOCKET_NODELIST", list, true);
        if (j->slurm.on) { /* a comma list is a valid Slurm hostlist */
            env_set(&e, "SLURM_JOB_NODELIST", list, true);
            env_set(&e, "SLURM_NODELIST", list, true);
        }
        free(list);
    }
    (void)nl;
    /* Docket's own launch variables are for native gang jobs: a Slurm-style job gets only
     * Slurm's (open_clip reads WORLD_SIZE before SLURM_NTASKS; docs/slurm.md) */
    if ((j->world_size > 1 || j->nnodes > 1) && !j->slurm.on) {
        env_set(&e, "MASTER_ADDR",
                j->master_addr[0] ? j->master_addr : (j->nnodes ? j->nodelist[0] : node), true);
        snprintf(num, sizeof num, "%d", j->master_port ? j->master_port : 29500);
        env_set(&e, "MASTER_PORT", num, true);
        snprintf(num, sizeof num, "%d", j->world_size ? j->world_size : j->nnodes);
        env_set(&e, "WORLD_SIZE", num, true);
        snprintf(num, sizeof num, "%d", j->node_rank);
        env_set(&e, "NODE_RANK", num, true);
    }
    if (j->slurm.on)
        slurm_env(&e, j, node, user);
    if (env_dir && *env_dir) /* the template's prepared environment (supwarm.c) */
        env_set(&e, "DOCKET_ENV_DIR", env_dir, true);
    if (scratch && *scratch) {
        env_set(&e, "DOCKET_SCRATCH", scratch, true);
        env_set(&e, "TMPDIR", scratch, false);
    }
    env_set(&e, "PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", false);
    if (j->slurm.on && scratch && *scratch)
        slurm_path(&e, scratch);
    if (home)
        env_set(&e, "HOME", home, false);
    if (user) {
        env_set(&e, "USER", user, false);
        env_set(&e, "LOGNAME", user, false);
    }
    if (shell)
        env_set(&e, "SHELL", shell, false);
    if (!e.v) {
        e.v = calloc(1, sizeof *e.v);
    }
    (void)env_has;
    return e.v;
}

void sup_env_free(char **env)
{
    for (char **p = env; p && *p; p++)
        free(*p);
    free(env);
}
