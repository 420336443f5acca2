/*
 * warmer.c - templates made warm on this node ahead of their jobs (warmer.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/envprep.h"
#include "agent/imgcache.h"
#include "agent/warmer.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

struct went {
    struct warm_order o; /* prepare owned */
    struct warm_state st;
    bool started;
    char digest[80]; /* the image's, once ready: its cache entry is looked at */
};

struct ag_warm {
    struct went *e;
    size_t n;
    pid_t pid;
    size_t current;
};

static struct went *find(struct ag_warm *w, const char *tmpl)
{
    for (size_t i = 0; w && i < w->n; i++)
        if (strcmp(w->e[i].o.tmpl, tmpl) == 0)
            return &w->e[i];
    return NULL;
}

/* The registry credentials of an order, wiped once its copy is done (or it is dropped). */
static void forget_auth(struct went *e)
{
    if (e->o.auth)
        explicit_bzero(e->o.auth, strlen(e->o.auth));
    free(e->o.auth);
    e->o.auth = NULL;
}

static void queue(struct went *e, const struct warm_order *o)
{
    free(e->o.prepare);
    forget_auth(e);
    e->o = *o;
    e->o.prepare = o->prepare ? xstrdup(o->prepare) : NULL;
    e->o.auth = o->auth ? xstrdup(o->auth) : NULL;
    memset(&e->st, 0, sizeof(e->st));
    str_copy(e->st.tmpl, sizeof(e->st.tmpl), o->tmpl);
    e->st.gen = o->gen;
    e->st.state = WARM_WARMING;
    e->started = false;
    e->digest[0] = '\0';
}

/* The first entry that is not queued or running (its state is docketd's already), or
 * NULL. */
static struct went *finished_slot(struct ag_warm *w)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->e[i].st.state != WARM_WARMING && !(w->pid > 0 && w->current == i))
            return &w->e[i];
    return NULL;
}

void ag_warm_take(struct agent *a, const struct warm_order *orders, size_t n)
{
    if (n && !a->warm)
        a->warm = xcalloc(1, sizeof(*a->warm));
    struct ag_warm *w = a->warm;
    for (size_t i = 0; i < n; i++) {
        struct went *e = find(w, orders[i].tmpl);
        bool running = e && w->pid > 0 && &w->e[w->current] == e;
        if (e && (running || orders[i].gen <= e->st.gen))
            continue; /* asked already; a newer request is taken once this one ends */
        if (!e && w->n >= WARM_MAX)
            e = finished_slot(w); /* full: a finished one makes room */
        if (!e && w->n >= WARM_MAX)
            continue;
        if (!e) {
            w->e = xrealloc(w->e, (w->n + 1) * sizeof(*w->e));
            e = &w->e[w->n++];
            memset(e, 0, sizeof(*e));
        }
        queue(e, &orders[i]);
        log_info("warm_queued", "template=%s gen=%lld", e->o.tmpl, (long long)e->o.gen);
    }
}

static void result_path(const struct agent *a, const char *tmpl, char *out, size_t len)
{
    snprintf(out, len, "%s/warm/%s.json", a->cfg.state_dir, tmpl);
}

/* STATE_DIR/warm/NAME@VERSION.auth: the order's registry credentials for skopeo's
 * --src-authfile, root's, mode 0600, made fresh. 0, or -1 with why. */
static int write_authfile(const char *state_dir, const struct warm_order *o, char *path, size_t len,
                          char *why, size_t wlen)
{
    snprintf(path, len, "%s/warm/%s.auth", state_dir, o->tmpl);
    unlink(path); /* one a killed warm left */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    size_t n = strlen(o->auth);
    if (fd < 0 || write(fd, o->auth, n) != (ssize_t)n || fsync(fd) < 0) {
        snprintf(why, wlen, "image %s: cannot write the registry's credentials: %s", o->image,
                 strerror(fd < 0 ? errno : EIO));
        if (fd >= 0)
            close(fd);
        unlink(path);
        return -1;
    }
    close(fd);
    return 0;
}

int ag_warm_do(const char *state_dir, int64_t image_cache_max, const struct warm_order *o,
               char *digest, size_t dlen, char *why, size_t wlen)
{
    char dir[PATH_MAX], images[PATH_MAX], err[PATH_MAX];
    digest[0] = why[0] = '\0';
    struct env_prep p = {
        .state_dir = state_dir, .key = o->tmpl, .script = o->prepare, .log_fd = -1};
    if (env_prepare(&p, dir, sizeof dir, err, sizeof err) < 0) {
        snprintf(why, wlen, "%s", err);
        return -1;
    }
    if (!o->image[0])
        return 0;
    snprintf(images, sizeof images, "%s/images", state_dir);
    struct img_cache cache = {images, image_cache_max};
    struct img_hooks hooks = {.log_fd = -1};
    struct img_use use;
    char authfile[PATH_MAX + 16];
    if (o->auth && write_authfile(state_dir, o, authfile, sizeof authfile, why, wlen) < 0)
        return -1;
    hooks.authfile = o->auth ? authfile : NULL;
    int rc = img_acquire(&cache, o->image, &hooks, &use, err, sizeof err);
    if (hooks.authfile)
        unlink(authfile); /* the copy is done: no credentials stay on the node */
    if (rc < 0) {
        snprintf(why, wlen, "image %s: %s", o->image, err);
        return -1;
    }
    str_copy(digest, dlen, use.digest);
    img_release(&use);
    return 0;
}

/* The child: the work, its result written for the agent; one at a time. */
static void run_child(struct agent *a, const struct warm_order *o)
{
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigaddset(&block, SIGUSR1);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    /* the tools' waits take SIGCHLD with sigtimedwait (imgcache.c, supwarm.c) */
    sigprocmask(SIG_SETMASK, &block, NULL);
    char path[PATH_MAX], tmp[PATH_MAX + 8], digest[80], why[WARM_REASON_MAX];
    int rc = ag_warm_do(a->cfg.state_dir, a->sup.image_cache_max_bytes, o, digest, sizeof digest,
                        why, sizeof why);
    result_path(a, o->tmpl, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    json_t *j = json_pack("{s:s,s:s,s:s}", "state", rc == 0 ? "ready" : "failed", "digest", digest,
                          "reason", why);
    int ok = j && json_dump_file(j, tmp, JSON_COMPACT) == 0 && rename(tmp, path) == 0;
    _exit(ok ? 0 : 1);
}

void ag_warm_tick(struct agent *a)
{
    struct ag_warm *w = a->warm;
    if (!w || w->pid > 0)
        return;
    for (size_t i = 0; i < w->n; i++) {
        struct went *e = &w->e[i];
        if (e->started || e->st.state != WARM_WARMING)
            continue;
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/warm", a->cfg.state_dir);
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
            log_warn("warm_dir", "path=%s error=\"%s\"", dir, strerror(errno));
        pid_t pid = fork();
        if (pid == 0)
            run_child(a, &e->o);
        if (pid < 0) {
            log_warn("warm_fork", "error=\"%s\"", strerror(errno));
            return;
        }
        e->started = true;
        w->pid = pid;
        w->current = i;
        log_info("warm_started", "template=%s pid=%d", e->o.tmpl, (int)pid);
        return;
    }
}

static void read_result(struct agent *a, struct went *e, int status)
{
    char path[PATH_MAX];
    json_error_t je;
    result_path(a, e->o.tmpl, path, sizeof path);
    json_t *j = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? json_load_file(path, 0, &je) : NULL;
    const char *state = json_string_value(json_object_get(j, "state"));
    const char *reason = json_string_value(json_object_get(j, "reason"));
    const char *digest = json_string_value(json_object_get(j, "digest"));
    if (state && strcmp(state, "ready") == 0) {
        e->st.state = WARM_READY;
        str_copy(e->digest, sizeof e->digest, digest ? digest : "");
    } else {
        e->st.state = WARM_FAILED;
        if (reason && *reason)
            str_copy(e->st.reason, sizeof e->st.reason, reason);
        else
            snprintf(e->st.reason, sizeof e->st.reason, "the warming process ended (status %d)",
                     status);
        /* one line: it is shown in a table */
        for (char *p = e->st.reason; *p; p++)
            if (*p == '\n' || *p == '\t')
                *p = ' ';
    }
    json_decref(j);
    unlink(path);
    log_info("warm_done", "template=%s state=%s", e->o.tmpl, warm_state_name(e->st.state));
}

bool ag_warm_reaped(struct agent *a, pid_t pid, int status)
{
    struct ag_warm *w = a->warm;
    if (!w || pid <= 0 || pid != w->pid)
        return false;
    w->pid = 0;
    read_result(a, &w->e[w->current], status);
    forget_auth(&w->e[w->current]); /* a new order brings them again */
    ag_warm_tick(a);
    return true;
}

/* A ready template whose image the cache evicted, or whose built directory is gone, is
 * not warm any more: said so, with why. */
static void check_still_warm(struct agent *a, struct went *e)
{
    char path[PATH_MAX + 96];
    if (e->st.state != WARM_READY)
        return;
    if (e->digest[0]) {
        snprintf(path, sizeof path, "%s/images/sha256-%s/.ready", a->cfg.state_dir, e->digest + 7);
        if (access(path, F_OK) < 0) {
            e->st.state = WARM_EVICTED;
            snprintf(e->st.reason, sizeof e->st.reason,
                     "image %s was evicted from the node's image cache (--image-cache-max)",
                     e->o.image);
        }
    }
    if (e->st.state == WARM_READY && e->o.prepare) {
        snprintf(path, sizeof path, "%s/envs/%s/.ready", a->cfg.state_dir, e->o.tmpl);
        if (access(path, F_OK) < 0) {
            e->st.state = WARM_EVICTED;
            snprintf(e->st.reason, sizeof e->st.reason,
                     "its prepared environment was removed from the node");
        }
    }
    if (e->st.state == WARM_EVICTED)
        log_info("warm_evicted", "template=%s reason=\"%s\"", e->o.tmpl, e->st.reason);
}

void *ag_warm_report_json(struct agent *a)
{
    struct ag_warm *w = a->warm;
    if (!w || w->n == 0)
        return NULL;
    json_t *list = json_array();
    for (size_t i = 0; i < w->n; i++) {
        check_still_warm(a, &w->e[i]);
        json_array_append_new(list, warm_state_json(&w->e[i].st));
    }
    return list;
}

int64_t ag_warm_wait_ms(const struct agent *a, int64_t wait_ms)
{
    const struct ag_warm *w = a->warm;
    for (size_t i = 0; w && i < w->n; i++)
        if (w->e[i].st.state == WARM_WARMING)
            return wait_ms < 1000 ? wait_ms : 1000;
    return wait_ms;
}

void ag_warm_free(struct agent *a)
{
    struct ag_warm *w = a->warm;
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++) {
        free(w->e[i].o.prepare);
        forget_auth(&w->e[i]);
    }
    free(w->e);
    free(w);
    a->warm = NULL;
}
