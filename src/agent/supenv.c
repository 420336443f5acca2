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

#include "agent/supervisor.h"
#include "util/str.h"

int sup_resolve_output(const char *spec, const char *jobdir, const char *default_name,
                       const char *workdir, const struct agent_job *j, char *out, size_t len)
{
    if (!spec || !*spec)
        return snprintf(out, len, "%s/%s", jobdir, default_name) >= (int)len ? -ENAMETOOLONG : 0;
    char buf[PATH_MAX];
    size_t o = 0;
    for (const char *p = spec; *p; p++) {
        char tmp[160];
        const char *add = tmp;
        if (*p == '%' && p[1]) {
            p++;
            if (*p == 'j')
                snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)j->id);
            else if (*p == 'a')
                snprintf(tmp, sizeof tmp, "%d", j->array_index);
            else if (*p == 'x')
                add = j->name[0] ? j->name : "job";
            else if (*p == '%')
                add = "%";
            else
                snprintf(tmp, sizeof tmp, "%%%c", *p);
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

char **sup_build_env(const struct agent_job *j, const char *node, const char *user,
                     const char *home, const char *shell, const char *scratch)
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
        free(list);
    }
    (void)nl;
    if (j->world_size > 1 || j->nnodes > 1) {
        env_set(&e, "MASTER_ADDR",
                j->master_addr[0] ? j->master_addr : (j->nnodes ? j->nodelist[0] : node), true);
        snprintf(num, sizeof num, "%d", j->master_port ? j->master_port : 29500);
        env_set(&e, "MASTER_PORT", num, true);
        snprintf(num, sizeof num, "%d", j->world_size ? j->world_size : j->nnodes);
        env_set(&e, "WORLD_SIZE", num, true);
        snprintf(num, sizeof num, "%d", j->node_rank);
        env_set(&e, "NODE_RANK", num, true);
    }
    if (scratch && *scratch) {
        env_set(&e, "DOCKET_SCRATCH", scratch, true);
        env_set(&e, "TMPDIR", scratch, false);
    }
    env_set(&e, "PATH", "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", false);
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
