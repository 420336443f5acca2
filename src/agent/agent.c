/*
 * agent.c - docket-node's libevent loop and its life cycle: set-up (state and scratch
 * directories, cgroups, the loop's events), the tick (supervisors watched, the periodic
 * health check, usage samples, cleanup of reported jobs), SIGCHLD, recovery after a
 * restart from the state directory, and tear-down. The job table is agent_jobs.c, the
 * controller link agent_http.c, log shipping logship.c (agent_int.h lists them).
 * See agent.h and docs/agent.md.
 */
#define _GNU_SOURCE
#include "agent/agent.h"

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/http.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/cgroup.h"
#include "agent/lifecycle.h"
#include "agent/warmer.h"
#include "agent/storage.h"
#include "agent/supnet.h"
#include "agent/supervisor.h"
#include "protocol/agent_msg.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

/* ---------------------------------------------------------------------------------- */
/* Small files in the state directory                                                  */

int ag_write_small(const struct agent *a, const char *name, const char *text, mode_t mode)
{
    char tmp[PATH_MAX + 64], dst[PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", a->cfg.state_dir, name);
    snprintf(dst, sizeof dst, "%s/%s", a->cfg.state_dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    size_t n = strlen(text);
    /* no fsync: what must survive is a kill -9 of the agent (the page cache does); a
     * power cut ends the node's jobs too */
    int rc = write(fd, text, n) == (ssize_t)n ? 0 : -EIO;
    close(fd);
    if (rc == 0 && rename(tmp, dst) < 0)
        rc = -errno;
    return rc;
}

static int read_small(const struct agent *a, const char *name, char *buf, size_t len)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", a->cfg.state_dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -EIO;
    buf[n] = '\0';
    str_trim(buf);
    char *s = str_trim(buf);
    if (s != buf)
        memmove(buf, s, strlen(s) + 1);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* Supervisors, usage, health, cleanup                                                 */

/* The controller's address and port as this node reaches it (from --controller's URL),
 * which a job under a network policy may reach (supnet.c); 0 when it does not resolve to
 * an IPv4 address. */
static void controller_addr(const char *url, uint32_t *addr, int *port)
{
    char host[256];
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    size_t n = strcspn(p, ":/");
    *addr = 0;
    *port = strncmp(url, "https", 5) == 0 ? 443 : 80;
    if (n == 0 || n >= sizeof host)
        return;
    memcpy(host, p, n);
    host[n] = '\0';
    if (p[n] == ':')
        *port = atoi(p + n + 1);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) == 0 && res)
        *addr = ntohl(((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr);
    if (res)
        freeaddrinfo(res);
}

static void sigchld_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct agent *a = arg;
    int status;
    pid_t p;
    while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
        if (p == a->health_pid) {
            char buf[256];
            ssize_t n;
            while ((n = read(a->health_fd, buf, sizeof buf)) > 0 &&
                   a->health_len < sizeof a->health_out - 1) {
                size_t take = (size_t)n < sizeof a->health_out - 1 - a->health_len
                                  ? (size_t)n
                                  : sizeof a->health_out - 1 - a->health_len;
                memcpy(a->health_out + a->health_len, buf, take);
                a->health_len += take;
            }
            a->health_out[a->health_len] = '\0';
            close(a->health_fd);
            a->health_pid = 0;
            bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
            char *nl = strchr(a->health_out, '\n');
            if (nl)
                *nl = '\0';
            if (ok != a->health_ok)
                log_info("health_changed", "ok=%s message=\"%s\"", ok ? "true" : "false",
                         a->health_out);
            a->health_ok = ok;
            if (ok)
                a->health_msg[0] = '\0';
            else if (a->health_out[0])
                str_copy(a->health_msg, sizeof a->health_msg, a->health_out);
            else
                snprintf(a->health_msg, sizeof a->health_msg, "health check failed (%s %d)",
                         WIFEXITED(status) ? "exit code" : "signal",
                         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            continue;
        }
        if (p == a->spare.pid) {
            /* died unused (it could not make its group): another one later */
            log_warn("spare_died", "pid=%d status=%d", (int)p, status);
            sup_spare_drop(&a->spare);
            a->spare_next = clock_mono_ms() + 1000;
            continue;
        }
        if (ag_reclaim_done(a, p, status) || ag_storage_reaped(a, p, status) ||
            ag_lifecycle_reaped(a, p, status) || ag_probe_reaped(a, p, status) ||
            ag_warm_reaped(a, p, status))
            continue;
        for (struct ajob *j = a->jobs; j; j = j->next)
            if (j->ours && j->sup_pid == p && !j->exited)
                ag_job_finished(a, j);
    }
    ag_retry_deferred(a); /* a job that ended may have freed a waiting start's GPUs */
    ag_post_next(a);
}

static void start_health(struct agent *a)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        int nul = open("/dev/null", O_RDONLY);
        dup2(nul, 0);
        dup2(p[1], 1);
        dup2(p[1], 2);
        close_range(3, ~0U, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execl(a->cfg.health_check, a->cfg.health_check, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return;
    }
    a->health_pid = pid;
    a->health_fd = p[0];
    a->health_len = 0;
    a->health_started = clock_mono_ms();
}

/* The job's GPUs into the sample (and the mean utilisation into the legacy usage):
 * measured through NVML, declared (a utilisation only when the operator declares one),
 * or none when the job has no GPU (docs/monitoring.md "Samples"). */
static void gpu_sample(struct agent *a, struct ajob *j, struct agent_sample *s,
                       struct agent_usage *u)
{
    const struct inventory *inv = &a->cfg.inv;
    int sum = 0, n = 0;
    str_copy(s->gpu_source, sizeof s->gpu_source,
             j->ngpus == 0    ? "none"
             : inv->from_nvml ? "nvml"
                              : "declared");
    for (int i = 0; i < j->ngpus && j->ngpus > 0; i++) {
        if (j->gpus[i] < 0 || j->gpus[i] >= inv->ngpus)
            continue;
        const struct inv_gpu *g = &inv->gpus[j->gpus[i]];
        if (!inv->from_nvml && g->util < 0)
            continue; /* declared and nothing declared: no GPU figures at all */
        struct agent_gpu_sample *o = &s->gpus[s->ngpus++];
        o->index = j->gpus[i];
        o->util = g->util;
        o->mem_used_mb = g->mem_used_mb;
        o->power_mw = g->power_mw;
        o->temp_c = g->temp_c;
        o->ecc_errors = g->ecc_errors;
        o->xid_errors = g->xid_errors;
        if (g->util >= 0) {
            sum += g->util;
            n++;
        }
    }
    u->gpu_util = n ? sum / n : 0;
}

static void sample_usage(struct agent *a)
{
    inventory_nvml_sample(&a->cfg.inv);                                  /* no-op without NVML */
    inventory_declared_util(&a->cfg.inv, a->cfg.declared_gpu_util_file); /* no-op with it */
    for (struct ajob *j = a->jobs; j; j = j->next) {
        if (j->exited || a->cg.mode == CG_NONE)
            continue;
        struct cg_job cg;
        struct cg_sample cs;
        if (cg_job_init(&cg, &a->cg, a->cfg.name, j->id) < 0 || cg_job_nprocs(&cg) <= 0 ||
            cg_job_sample(&cg, &cs) < 0)
            continue;
        struct agent_event e;
        memset(&e, 0, sizeof e);
        e.job = j->id;
        e.run = j->run;
        str_copy(e.type, sizeof e.type, "usage");
        e.time_ms = clock_now_ms();
        e.has_usage = e.has_sample = true;
        agent_sample_init(&e.sample);
        e.sample.interval_ms = a->cfg.usage_interval_ms;
        e.sample.cpu_ms = cs.cpu_ms;
        e.sample.mem_bytes = cs.mem_bytes;
        e.sample.mem_peak_bytes = cs.mem_peak_bytes;
        e.sample.io_read_bytes = cs.io_read_bytes;
        e.sample.io_write_bytes = cs.io_write_bytes;
        e.usage.cpu_ms = cs.cpu_ms < 0 ? 0 : cs.cpu_ms;
        e.usage.max_rss_mb = cs.mem_peak_bytes < 0 ? 0 : (cs.mem_peak_bytes + (1 << 20) - 1) >> 20;
        gpu_sample(a, j, &e.sample, &e.usage);
        if (j->net) /* a short nft child per job and sample: its counter, not a stream */
            e.sample.net_refused = sup_net_refused(j->id, a->cfg.nft);
        ag_queue_event(a, agent_event_to_json(&e), 0);
    }
}

/* Directories of reported jobs go ten minutes after the report, unless the job runs
 * here again (a requeue) meanwhile. */
static void cleanup_jobs(struct agent *a, int64_t now)
{
    while (a->done_head && now - a->done_head->at > 600000) {
        struct doneq *d = a->done_head;
        a->done_head = d->next;
        if (!a->done_head)
            a->done_tail = &a->done_head;
        char dir[PATH_MAX], path[PATH_MAX + 16];
        sup_job_dir(&a->sup, d->id, dir, sizeof dir);
        snprintf(path, sizeof path, "%s/reported", dir);
        if (!ag_job_find(a, d->id) && access(path, F_OK) == 0)
            sup_remove_tree(dir);
        free(d);
    }
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct agent *a = arg;
    int64_t now = clock_mono_ms();
    for (struct ajob *j = a->jobs; j; j = j->next) {
        if (j->exited)
            continue;
        /* adopted supervisors are not our children: watch them by pid and start time */
        if (!j->ours && !sup_alive(j->sup_pid, j->sup_start))
            ag_job_finished(a, j);
        else if (!j->st.out_path[0]) {
            /* once the supervisor has set the job up, its state names the log files */
            char dir[PATH_MAX];
            struct sup_state st;
            sup_job_dir(&a->sup, j->id, dir, sizeof dir);
            if (!j->prep_reported) /* set-up may be waiting on its template's prepare */
                ag_report_preparing(a, j, dir);
            if (sup_state_read(dir, &st) == 0 && strcmp(st.state, "exited") != 0)
                j->st = st;
            if (j->st.out_path[0] && j->prep_key[0]) /* set up: the prepare is behind it */
                ag_report_prepared(a, j);
        }
        if (j->st.step_port && !j->step_reported)
            ag_report_step_port(a, j);
    }
    ag_tty_tick(a);
    if (a->deferred) /* an adopted job may have ended, or a waiting start's time is up */
        ag_retry_deferred(a);
    if (a->cfg.health_check[0]) {
        if (a->health_pid && now - a->health_started > a->cfg.health_interval_ms) {
            kill(a->health_pid, SIGKILL); /* a check that hangs fails */
        } else if (!a->health_pid && now >= a->health_next) {
            start_health(a);
            a->health_next = now + a->cfg.health_interval_ms;
        }
    }
    if (a->lease_deadline && now > a->lease_deadline && !a->lease_expired_logged) {
        log_warn("controller_silent",
                 "node=%s reason=\"no contact with the controller for node_timeout - %lld ms: "
                 "each job is stopped when its own lease runs out\"",
                 a->cfg.name, (long long)ag_fence_margin(a));
        a->lease_expired_logged = true;
    }
    if (ag_rotate_due(a)) /* an idle node has nothing else to post: rotate now */
        ag_kick_post(a);
    ag_storage_tick(a, now);
    if (a->net_msg[0] && now >= a->net_next) { /* nftables installed since? */
        char why[256];
        if (sup_net_can_enforce(a->cfg.nft, why, sizeof why)) {
            log_info("network_enforceable", "node=%s", a->cfg.name);
            a->net_msg[0] = '\0';
        }
        a->net_next = now + a->cfg.health_interval_ms;
    }
    ag_lifecycle_tick(a);
    ag_warm_tick(a);
    if (now >= a->usage_next) {
        sample_usage(a);
        a->usage_next = now + a->cfg.usage_interval_ms;
    }
    if (a->spare.pid <= 0 && now >= a->spare_next)
        ag_kick_spare(a);
    if (now >= a->cleanup_next) {
        cleanup_jobs(a, now);
        a->cleanup_next = now + 60000;
    }
    ag_post_next(a);
}

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct agent *a = arg;
    log_info("agent_stopping", "node=%s jobs=\"left running under their supervisors\"",
             a->cfg.name);
    a->stopping = true;
    event_base_loopexit(a->base, NULL);
}

/* ---------------------------------------------------------------------------------- */
/* Restart: find the jobs of an earlier life                                           */

static void recover(struct agent *a)
{
    char buf[64];
    if (read_small(a, "ack", buf, sizeof buf) == 0)
        a->ack = strtoll(buf, NULL, 10);
    char cred[256];
    if (read_small(a, "credential", cred, sizeof cred) == 0)
        str_copy(a->credential, sizeof a->credential, cred);
    char jobs[PATH_MAX + 8];
    snprintf(jobs, sizeof jobs, "%s/jobs", a->cfg.state_dir);
    DIR *d = opendir(jobs);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        unsigned long long id = strtoull(e->d_name, &end, 10);
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end || id == 0)
            continue;
        char dir[PATH_MAX + 300];
        snprintf(dir, sizeof dir, "%s/%s", jobs, e->d_name);
        ag_adopt(a, id, dir);
    }
    closedir(d);
}

/* ---------------------------------------------------------------------------------- */
/* Life cycle                                                                          */

/* One URL of --controller into controllers[i]; its scheme in *tls. */
static int parse_one_controller(struct agent *a, const char *url, int i, bool *tls, char *err,
                                size_t errlen)
{
    struct evhttp_uri *u = evhttp_uri_parse(url);
    const char *scheme = u ? evhttp_uri_get_scheme(u) : NULL;
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    if (!u || !scheme || (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) || !host ||
        !*host) {
        snprintf(err, errlen,
                 "bad controller URL '%s' (want https://HOST:PORT, or http:// on loopback)", url);
        if (u)
            evhttp_uri_free(u);
        return -EINVAL;
    }
    str_copy(a->controllers[i].host, sizeof a->controllers[i].host, host);
    a->controllers[i].port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : 8420;
    *tls = strcmp(scheme, "https") == 0;
    evhttp_uri_free(u);
    return 0;
}

/* --controller: one URL, or a list URL1,URL2 of the controllers of an active/standby pair
 * (docs/operations.md "Active and standby"), all of one scheme and trusted alike. */
static int parse_controller(struct agent *a, char *err, size_t errlen)
{
    char url[512];
    const char *p = a->cfg.controller;
    a->ncontrollers = 0;
    do {
        size_t n = strcspn(p, ",");
        bool tls = false;
        if (a->ncontrollers == AG_MAX_CONTROLLERS || n >= sizeof url) {
            snprintf(err, errlen, "--controller: at most %d URLs", AG_MAX_CONTROLLERS);
            return -EINVAL;
        }
        memcpy(url, p, n);
        url[n] = '\0';
        int rc = parse_one_controller(a, url, a->ncontrollers, &tls, err, errlen);
        if (rc < 0)
            return rc;
        if (a->ncontrollers > 0 && tls != a->tls) {
            snprintf(err, errlen, "--controller: every URL https://, or every one http://");
            return -EINVAL;
        }
        a->tls = tls;
        a->ncontrollers++;
        p += n;
    } while (*p++ == ',');
    str_copy(a->host, sizeof a->host, a->controllers[0].host);
    a->port = a->controllers[0].port;
    return 0;
}

struct agent *agent_create(const struct agent_config *cfg, char *err, size_t errlen)
{
    struct agent *a = xcalloc(1, sizeof *a);
    a->cfg = *cfg;
    a->out_tail = &a->out_head;
    a->done_tail = &a->done_head;
    a->spare.fd = -1;
    a->ack_fd = -1;
    a->lease_fd = -1;
    a->health_ok = true;
    a->wait_ms = 15000;
    if (parse_controller(a, err, errlen) < 0 || ag_tls_init(a, err, errlen) < 0)
        goto fail;
    if (mkdir(cfg->state_dir, 0711) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create state directory '%s': %s", cfg->state_dir,
                 strerror(errno));
        goto fail;
    }
    if (!a->cfg.scratch_root[0])
        if (snprintf(a->cfg.scratch_root, sizeof a->cfg.scratch_root, "%s/scratch",
                     cfg->state_dir) >= (int)sizeof a->cfg.scratch_root) {
            snprintf(err, errlen, "state directory path too long");
            goto fail;
        }
    if (mkdir(a->cfg.scratch_root, 0711) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create scratch root '%s': %s", a->cfg.scratch_root,
                 strerror(errno));
        goto fail;
    }
    if (!a->cfg.session_root[0] &&
        snprintf(a->cfg.session_root, sizeof a->cfg.session_root, "%s/sessions", cfg->state_dir) >=
            (int)sizeof a->cfg.session_root) {
        snprintf(err, errlen, "state directory path too long");
        goto fail;
    }
    /* load the NSS modules once here, so a supervisor (a fork of us) finds them loaded
     * instead of mapping them again for every job */
    struct passwd pw, *pwres = NULL;
    char pwbuf[4096];
    gid_t groups[64];
    int ngroups = 64;
    if (getpwuid_r(0, &pw, pwbuf, sizeof pwbuf, &pwres) == 0 && pwres)
        getgrouplist(pw.pw_name, pw.pw_gid, groups, &ngroups);
    a->cg.mode = CG_NONE;
    if (!cfg->no_cgroups &&
        cg_detect(cfg->cgroup_root[0] ? cfg->cgroup_root : NULL, &a->cg, err, errlen) < 0)
        goto fail;
    a->sup = (struct sup_config){.state_dir = a->cfg.state_dir,
                                 .scratch_root = a->cfg.scratch_root,
                                 .session_root = a->cfg.session_root,
                                 .slurm_cli = a->cfg.slurm_cli,
                                 .node = a->cfg.name,
                                 .cg = &a->cg,
                                 .allow_root_jobs = cfg->allow_root_jobs,
                                 .keep_scratch = cfg->keep_scratch,
                                 .limit_slack_ms = cfg->limit_slack_ms,
                                 .pids_max = cfg->pids_max,
                                 .default_mem_mb = cfg->job_mem_default_mb,
                                 .log_limit_bytes = cfg->log_limit_bytes,
                                 .node_gpus = cfg->inv.ngpus,
                                 .gpu_minor = a->gpu_minor,
                                 .job_oom_score_adj = 500,
                                 .nft = a->cfg.nft,
                                 .oci_runtime = a->cfg.oci_runtime,
                                 .image_cache_max_bytes = cfg->image_cache_max_bytes,
                                 .gpu_dev_dir = a->cfg.gpu_dev_dir};
    controller_addr(a->cfg.controller, &a->sup.ctl_addr, &a->sup.ctl_port);
    for (int i = 0; i < cfg->inv.ngpus && i < INV_MAX_GPUS; i++)
        a->gpu_minor[i] = cfg->inv.gpus[i].minor;
    if (geteuid() == 0) {
        /* the agent and its supervisors (forks of it) are the last the OOM killer picks;
         * jobs set their own, positive, before their exec. Lowering it takes
         * CAP_SYS_RESOURCE, which a container may withhold: then said, not fatal. */
        int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "-1000", 5) != 5)
            log_warn("oom_score_adj_not_set",
                     "error=\"%s\" effect=\"the agent and supervisors keep the "
                     "oom_score_adj they were started with\"",
                     strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    a->base = event_base_new();
    if (!a->base) {
        snprintf(err, errlen, "cannot create the event loop");
        goto fail;
    }
    ag_conn(a, &a->hb_conn, 0);
    ag_conn(a, &a->post_conn, 30);
    a->sigchld = evsignal_new(a->base, SIGCHLD, sigchld_cb, a);
    a->sigterm = evsignal_new(a->base, SIGTERM, stop_cb, a);
    a->sigint = evsignal_new(a->base, SIGINT, stop_cb, a);
    a->tick = event_new(a->base, -1, EV_PERSIST, tick_cb, a);
    a->hb_retry = evtimer_new(a->base, ag_hb_retry_cb, a);
    a->post_kick = evtimer_new(a->base, ag_post_kick_cb, a);
    a->spare_ev = evtimer_new(a->base, ag_spare_cb, a);
    if (!a->hb_conn || !a->post_conn || !a->sigchld || !a->sigterm || !a->sigint || !a->tick ||
        !a->hb_retry || !a->post_kick || !a->spare_ev) {
        snprintf(err, errlen, "out of memory setting up the event loop");
        goto fail; /* the agent is starting: exiting frees the rest */
    }
    struct timeval tv = {0, (suseconds_t)(cfg->log_interval_ms > 0 ? cfg->log_interval_ms : 100) *
                                1000};
    if (tv.tv_usec >= 1000000) {
        tv.tv_sec = tv.tv_usec / 1000000;
        tv.tv_usec %= 1000000;
    }
    event_add(a->sigchld, NULL);
    event_add(a->sigterm, NULL);
    event_add(a->sigint, NULL);
    event_add(a->tick, &tv);
    signal(SIGPIPE, SIG_IGN);
    return a;
fail:
    free(a);
    return NULL;
}

/* The node-wide process limit (docket/NODE's pids.max: pid_max minus the reserve), set
 * before any job runs. Where it cannot be written the agent says so and goes on. */
static void node_pids_reserve(struct agent *a)
{
    char err[512];
    if (a->cg.mode == CG_NONE || a->cfg.node_pids_max <= 0)
        return;
    if (cg_node_set_pids(&a->cg, a->cfg.name, a->cfg.node_pids_max, err, sizeof err) < 0)
        log_warn("node_pids_max_not_set", "max=%lld message=\"%s\"",
                 (long long)a->cfg.node_pids_max, err);
    else
        log_info("node_pids_max", "max=%lld pid_max=%lld", (long long)a->cfg.node_pids_max,
                 (long long)cg_pid_max());
}

int agent_run(struct agent *a)
{
    log_info("agent_started",
             "node=%s controller=%s cgroups=%s gpus=%d gpu_type=%s cpus=%d mem_mb=%lld",
             a->cfg.name, a->cfg.controller, cg_mode_name(a->cg.mode), a->cfg.inv.ngpus,
             a->cfg.inv.gpu_type, a->cfg.inv.cpus, (long long)a->cfg.inv.mem_mb);
    node_pids_reserve(a);
    recover(a);
    ag_sweep_spares(a);
    ag_kick_spare(a);
    sigchld_cb(-1, 0, a); /* nothing of ours yet, but keep the table consistent */
    ag_heartbeat(a);
    int rc = event_base_dispatch(a->base) < 0 ? -EIO : 0;
    /* the spare removes its group when its pipe closes: let it, before the node's group */
    int spare = a->spare.pid;
    sup_spare_drop(&a->spare);
    for (int i = 0; spare > 0 && i < 200 && waitpid(spare, NULL, WNOHANG) == 0; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    /* the node's parent group goes too when no job is left in it (plain rmdir: a job's
     * group, even an empty one being set up, is never touched) */
    struct cg_job node;
    if (a->cg.mode != CG_NONE && cg_node_init(&node, &a->cg, a->cfg.name) == 0)
        for (int i = 0; i < node.ndirs; i++)
            rmdir(node.dir[i]);
    return rc;
}

void agent_destroy(struct agent *a)
{
    if (!a)
        return;
    sup_spare_drop(&a->spare); /* it removes its group and exits */
    while (a->jobs)
        ag_job_remove(a, a->jobs);
    ag_deferred_free(a);
    ag_storage_free(a);
    ag_lifecycle_free(a);
    ag_warm_free(a);
    while (a->done_head) {
        struct doneq *d = a->done_head;
        a->done_head = d->next;
        free(d);
    }
    for (struct outev *lists[2] = {a->out_head, a->sent}, **l = lists; l < lists + 2; l++)
        while (*l) {
            struct outev *o = *l;
            *l = o->next;
            json_decref(o->ev);
            free(o);
        }
    if (a->ack_fd >= 0)
        close(a->ack_fd);
    if (a->lease_fd >= 0)
        close(a->lease_fd);
    ag_tty_free_all(a);
    if (a->hb_conn)
        evhttp_connection_free(a->hb_conn);
    if (a->post_conn)
        evhttp_connection_free(a->post_conn);
    ag_tls_free(a);
    free(a->log_inflight); /* a chunk the connection's end left unanswered */
    struct event *evs[] = {a->sigchld,  a->sigterm,   a->sigint,  a->tick,
                           a->hb_retry, a->post_kick, a->spare_ev};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i])
            event_free(evs[i]);
    if (a->base)
        event_base_free(a->base);
    inventory_release(&a->cfg.inv);
    free(a);
}
