/*
 * agent.c - docket-node's libevent loop: the controller link (register, heartbeat long
 * poll with seq/ack, events, log chunks; reconnect with backoff while jobs keep running),
 * the job table (supervisors launched, adopted after a restart, reaped), log tailing,
 * usage sampling and the periodic health check. See agent.h and docs/agent.md.
 */
#define _GNU_SOURCE
#include "agent/agent.h"

#include <dirent.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/cgroup.h"
#include "agent/supervisor.h"
#include "protocol/agent_msg.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

enum { LOG_CHUNK = 256 * 1024, MAX_BATCH = 2000 };

struct ajob {
    uint64_t id;
    int sup_pid;
    int64_t sup_start;
    bool ours;        /* the supervisor is our child (reaped by SIGCHLD) */
    bool exited;      /* final state read */
    bool exit_queued; /* its exited event is queued or sent */
    bool exit_acked;  /* the controller has it: the job stays for its output */
    struct sup_state st;
    /* Shipping stdout/stderr of this run. Local bytes come from the file the supervisor
     * opened (checked by inode) from st.out_start/err_start; they go to the controller
     * at base[s] + sent[s], base being the controller's end of the job's log when this
     * run started (asked with an empty chunk, kept in JOBDIR/log_base), so a requeued
     * run's output follows the earlier runs' instead of being taken for a repeat. */
    int64_t sent[2];          /* bytes of this run the controller has */
    int64_t base[2];          /* -1 = not known yet */
    int64_t log_hold_until;   /* the controller took nothing last time: wait */
    pid_t reclaim_pid;        /* a child reclaiming a dead supervisor's cgroup */
    int gpus[AGENT_MAX_GPUS]; /* held until the supervisor reports the reclaim */
    int ngpus;
    int64_t ended_mono;
    struct ajob *next;
};

/* Reported jobs whose directory is removed after a while (their logs serve a requeue). */
struct doneq {
    uint64_t id;
    int64_t at;
    struct doneq *next;
};

struct outev {
    json_t *ev;        /* one event object */
    uint64_t exit_job; /* exited events: the job to mark acked */
    struct outev *next;
};

struct agent {
    struct agent_config cfg;
    struct sup_config sup;
    struct cg_layout cg;
    struct event_base *base;
    struct event *sigchld, *sigterm, *sigint, *tick, *hb_retry, *post_kick, *spare_ev;
    char host[256];
    int port;
    struct evhttp_connection *hb_conn, *post_conn;
    char credential[256];
    bool registered, hb_inflight, post_inflight;
    int64_t wait_ms;
    int64_t ack;
    int ack_fd;
    int64_t backoff_ms, post_backoff_until;
    int post_failures, hb_failures;
    struct ajob *jobs; /* live jobs and ended ones not yet acknowledged */
    struct doneq *done_head, **done_tail;
    struct sup_spare spare; /* v1: the next job's supervisor, ready in its group */
    int64_t spare_next;     /* earliest time to make another after a failure */
    struct outev *out_head, **out_tail;
    size_t out_count;
    size_t dropped;          /* usage samples dropped while the queue was full */
    struct outev *sent;      /* events of the post in flight */
    int64_t node_timeout_ms; /* from the register reply; 0 = not known yet */
    int64_t hb_sent_mono;    /* when the request in flight went out */
    int64_t lease_deadline;  /* the fence deadline written last */
    int lease_fd;
    bool lease_expired_logged;
    uint64_t ship_after;         /* round robin of live logs: the job shipped last */
    struct logreq *log_inflight; /* the log chunk on its way (freed at the end if unanswered) */
    bool health_ok;
    char health_msg[256];
    bool reclaim_failed;
    char reclaim_msg[256];
    int health_pid, health_fd;
    int64_t health_next, health_started;
    char health_out[512];
    size_t health_len;
    int64_t usage_next, cleanup_next;
    bool stopping;
    int gpu_minor[INV_MAX_GPUS]; /* the device minor of each GPU (for the supervisors) */
};

/* ---------------------------------------------------------------------------------- */
/* Small files in the state directory                                                  */

static int write_small(const struct agent *a, const char *name, const char *text, mode_t mode)
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

/* The ack is rewritten in place at a fixed width (one small write, atomic for readers):
 * a rename over the old file would force a disk write on ext4 at every heartbeat. */
static void save_ack(struct agent *a)
{
    char buf[32], path[PATH_MAX + 8];
    int n = snprintf(buf, sizeof buf, "%020lld\n", (long long)a->ack);
    snprintf(path, sizeof path, "%s/ack", a->cfg.state_dir);
    if (a->ack_fd < 0)
        a->ack_fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (a->ack_fd < 0 || pwrite(a->ack_fd, buf, (size_t)n, 0) != n)
        log_error("ack_save_failed", "path=%s error=\"%s\"", path, strerror(errno));
}

/* ---------------------------------------------------------------------------------- */
/* Job table                                                                           */

static struct ajob *job_find(struct agent *a, uint64_t id)
{
    for (struct ajob *j = a->jobs; j; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

static struct ajob *job_add(struct agent *a, uint64_t id)
{
    struct ajob *j = xcalloc(1, sizeof *j);
    j->id = id;
    j->base[0] = j->base[1] = -1;
    j->next = a->jobs;
    a->jobs = j;
    return j;
}

static void job_remove(struct agent *a, struct ajob *dead)
{
    for (struct ajob **p = &a->jobs; *p; p = &(*p)->next)
        if (*p == dead) {
            *p = dead->next;
            free(dead);
            return;
        }
}

static void done_push(struct agent *a, uint64_t id)
{
    struct doneq *d = xcalloc(1, sizeof *d);
    d->id = id;
    d->at = clock_mono_ms();
    *a->done_tail = d;
    a->done_tail = &d->next;
}

static bool is_usage(const json_t *ev)
{
    const char *t = json_string_value(json_object_get(ev, "type"));
    return t && strcmp(t, "usage") == 0;
}

/* While the controller is away the queue must not grow without end: past the bound the
 * oldest usage sample goes (a later one says more); started/exited/reclaim events stay,
 * and there are only a few per job. */
static void queue_bound(struct agent *a)
{
    while (a->out_count >= a->cfg.max_queued_events) {
        struct outev **p = &a->out_head;
        while (*p && !is_usage((*p)->ev))
            p = &(*p)->next;
        if (!*p)
            return;
        struct outev *o = *p;
        *p = o->next;
        if (!*p)
            a->out_tail = p;
        json_decref(o->ev);
        free(o);
        a->out_count--;
        if (a->dropped++ % 1000 == 0)
            log_warn("usage_dropped",
                     "queued=%zu dropped=%zu reason=\"controller away, queue full\"", a->out_count,
                     a->dropped);
    }
}

static void queue_event(struct agent *a, json_t *ev, uint64_t exit_job)
{
    if (!ev)
        return;
    if (a->cfg.max_queued_events > 0)
        queue_bound(a);
    struct outev *o = xcalloc(1, sizeof *o);
    o->ev = ev;
    o->exit_job = exit_job;
    *a->out_tail = o;
    a->out_tail = &o->next;
    a->out_count++;
}

static void post_next(struct agent *a);

/* Requests are sent from a fresh loop iteration, never from inside another's callback
 * (the connection may still be closing then). */
static void kick_post(struct agent *a)
{
    struct timeval zero = {0, 0};
    evtimer_add(a->post_kick, &zero);
}

static void event_started(struct agent *a, struct ajob *j)
{
    struct agent_event e;
    memset(&e, 0, sizeof e);
    e.job = j->id;
    str_copy(e.type, sizeof e.type, "started");
    e.time_ms = clock_now_ms();
    e.pid = j->st.pid > 0 ? j->st.pid : j->sup_pid;
    queue_event(a, agent_event_to_json(&e), 0);
}

/* The mean utilisation of the job's own GPUs (NVML only; sampled once per round). */
static void gpu_util(struct agent *a, struct ajob *j, struct agent_usage *u)
{
    if (!a->cfg.inv.from_nvml || j->ngpus == 0)
        return;
    int sum = 0, n = 0;
    for (int i = 0; i < j->ngpus; i++)
        if (j->gpus[i] < a->cfg.inv.ngpus) {
            sum += a->cfg.inv.gpus[j->gpus[i]].util;
            n++;
        }
    u->gpu_util = n ? sum / n : 0;
}

/* Once its logs are all shipped, a finished job's exit goes out (exactly its facts). */
static void queue_exit(struct agent *a, struct ajob *j)
{
    struct agent_event e;
    memset(&e, 0, sizeof e);
    e.job = j->id;
    e.time_ms = j->st.end_ms ? j->st.end_ms : clock_now_ms();
    if (!j->st.reclaim_ok && j->st.exit_kind != AGENT_EXIT_LOST) {
        struct agent_event r = e;
        str_copy(r.type, sizeof r.type, "reclaim_failed");
        str_copy(r.message, sizeof r.message,
                 j->st.reclaim_msg[0] ? j->st.reclaim_msg : "reclaim failed");
        queue_event(a, agent_event_to_json(&r), 0);
    }
    str_copy(e.type, sizeof e.type, "exited");
    e.exit_kind = j->st.exit_kind;
    e.exit_code = j->st.exit_code;
    str_copy(e.message, sizeof e.message, j->st.message);
    e.has_usage = true;
    e.usage = j->st.usage;
    queue_event(a, agent_event_to_json(&e), j->id);
    j->exit_queued = true;
    log_info("job_exited", "job=%llu kind=%s code=%d message=\"%s\"", (unsigned long long)j->id,
             agent_exit_kind_name(e.exit_kind), e.exit_code, e.message);
}

/* The job's final state is known (j->st): hold the node's health to its reclaim. */
static void job_ended(struct agent *a, struct ajob *j)
{
    if (!j->st.reclaim_ok) {
        a->reclaim_failed = true;
        if (snprintf(a->reclaim_msg, sizeof a->reclaim_msg, "reclaim failed for job %llu: %s",
                     (unsigned long long)j->id, j->st.reclaim_msg) < 0)
            a->reclaim_msg[0] = '\0';
        log_error("reclaim_failed", "job=%llu message=\"%s\"", (unsigned long long)j->id,
                  j->st.reclaim_msg);
    }
    j->exited = true;
    j->ended_mono = clock_mono_ms();
}

/* In a child of ours: what the dead supervisor left (its cgroup, its scratch dir) is
 * reclaimed, and its final word written for it (final.json, "lost"), which the parent
 * reads when the child ends. Up to 5 s, so never on the event loop. */
static void __attribute__((noreturn)) reclaim_lost(struct agent *a, struct ajob *j, const char *dir)
{
    struct sup_state st = j->st;
    st.job = j->id;
    st.exit_kind = AGENT_EXIT_LOST;
    str_copy(st.state, sizeof st.state, "exited");
    str_copy(st.message, sizeof st.message, "supervisor died");
    st.reclaim_ok = true;
    st.reclaim_msg[0] = '\0';
    char msg[256] = "";
    struct cg_job cg;
    if (a->cg.mode != CG_NONE && cg_job_init(&cg, &a->cg, a->cfg.name, j->id) == 0 &&
        cg_job_reclaim(&cg, 5000, NULL, msg, sizeof msg) < 0) {
        st.reclaim_ok = false;
        str_copy(st.reclaim_msg, sizeof st.reclaim_msg, msg);
    }
    char scratch[PATH_MAX + 32];
    snprintf(scratch, sizeof scratch, "%s/job_%llu", a->cfg.scratch_root,
             (unsigned long long)j->id);
    int rc = a->cfg.keep_scratch ? 0 : sup_remove_tree(scratch);
    if (rc < 0 && st.reclaim_ok) {
        st.reclaim_ok = false;
        snprintf(st.reclaim_msg, sizeof st.reclaim_msg, "cannot remove scratch directory '%s': %s",
                 scratch, strerror(-rc));
    }
    st.end_ms = clock_now_ms();
    _exit(sup_state_write(dir, &st) == 0 ? 0 : 1);
}

static void job_finished(struct agent *a, struct ajob *j)
{
    if (j->exited || j->reclaim_pid > 0)
        return;
    char dir[PATH_MAX];
    sup_job_dir(&a->sup, j->id, dir, sizeof dir);
    struct sup_state st;
    if (sup_state_read(dir, &st) == 0 && strcmp(st.state, "exited") == 0) {
        j->st = st;
        job_ended(a, j);
        return;
    }
    /* the supervisor died without its final word: reclaim in a child, report lost */
    pid_t pid = fork();
    if (pid == 0)
        reclaim_lost(a, j, dir);
    if (pid > 0) {
        j->reclaim_pid = pid;
        log_info("reclaiming", "job=%llu child=%d reason=\"supervisor died\"",
                 (unsigned long long)j->id, (int)pid);
        return;
    }
    j->st.exit_kind = AGENT_EXIT_LOST;
    str_copy(j->st.message, sizeof j->st.message, "supervisor died");
    j->st.end_ms = clock_now_ms();
    j->st.reclaim_ok = false;
    snprintf(j->st.reclaim_msg, sizeof j->st.reclaim_msg, "cannot fork to reclaim: %s",
             strerror(errno));
    job_ended(a, j);
}

/* The reclaiming child `pid` ended: its final.json is the job's end. */
static bool reclaim_done(struct agent *a, pid_t pid, int status)
{
    for (struct ajob *j = a->jobs; j; j = j->next) {
        if (j->reclaim_pid != pid)
            continue;
        j->reclaim_pid = 0;
        char dir[PATH_MAX];
        sup_job_dir(&a->sup, j->id, dir, sizeof dir);
        struct sup_state st;
        if (sup_state_read(dir, &st) == 0 && strcmp(st.state, "exited") == 0) {
            j->st = st;
        } else {
            j->st.exit_kind = AGENT_EXIT_LOST;
            str_copy(j->st.message, sizeof j->st.message, "supervisor died");
            j->st.end_ms = clock_now_ms();
            j->st.reclaim_ok = false;
            snprintf(j->st.reclaim_msg, sizeof j->st.reclaim_msg,
                     "the reclaim did not finish (status %d)", status);
        }
        job_ended(a, j);
        return true;
    }
    return false;
}

/* ---------------------------------------------------------------------------------- */
/* HTTP                                                                                */

/* A POST request carrying `body` (consumed); the callback gets `cbarg`. */
static struct evhttp_request *new_request(struct agent *a,
                                          void (*cb)(struct evhttp_request *, void *), void *cbarg,
                                          json_t *body, bool auth)
{
    struct evhttp_request *req = evhttp_request_new(cb, cbarg);
    if (!req) { /* out of memory: the caller's send-failed path retries later */
        json_decref(body);
        return NULL;
    }
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Host", a->host);
    evhttp_add_header(h, "Content-Type", "application/json");
    if (auth && a->credential[0]) {
        char hdr[300];
        snprintf(hdr, sizeof hdr, "Bearer %s", a->credential);
        evhttp_add_header(h, "Authorization", hdr);
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (text) {
        evbuffer_add(evhttp_request_get_output_buffer(req), text, strlen(text));
        free(text);
    }
    return req;
}

/* The reply's JSON body, or NULL; *code gets the status (0 = no connection). */
static json_t *reply_json(struct evhttp_request *req, int *code)
{
    *code = req ? evhttp_request_get_response_code(req) : 0;
    if (!req || *code == 0)
        return NULL;
    struct evbuffer *b = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(b);
    json_error_t je;
    return json_loadb((const char *)evbuffer_pullup(b, (ssize_t)n), n, 0, &je);
}

static void schedule_hb(struct agent *a, int64_t delay_ms)
{
    struct timeval tv = {(time_t)(delay_ms / 1000), (suseconds_t)((delay_ms % 1000) * 1000)};
    evtimer_add(a->hb_retry, &tv);
}

static void backoff(struct agent *a, const char *why)
{
    if (++a->hb_failures == 1) {
        schedule_hb(a, 0); /* a kept-alive connection the peer closed: retry at once */
        return;
    }
    a->backoff_ms = a->backoff_ms ? a->backoff_ms * 2 : 100;
    if (a->backoff_ms > 5000)
        a->backoff_ms = 5000;
    log_warn("controller_unreachable", "reason=\"%s\" retry_ms=%lld", why,
             (long long)a->backoff_ms);
    schedule_hb(a, a->backoff_ms);
}

static void heartbeat(struct agent *a);

/* The controller answered a request sent at a->hb_sent_mono, so it has seen this node no
 * earlier than that: it counts the node lost node_timeout after its last sight of it at
 * the soonest. Supervisors stop their jobs `margin` before that (docs/agent.md
 * "Fencing"); the margin is the configured one, at most a third of node_timeout, and a
 * job's grace while fenced is half of it, so the job is gone before the controller can
 * give its resources to anyone. */
static int64_t fence_margin(const struct agent *a)
{
    int64_t m = a->cfg.fence_margin_ms, third = a->node_timeout_ms / 3;
    return m < third ? m : third;
}

static void renew_lease(struct agent *a)
{
    if (a->node_timeout_ms <= 0 || a->hb_sent_mono <= 0)
        return;
    int64_t m = fence_margin(a);
    int64_t deadline = a->hb_sent_mono + a->node_timeout_ms - m;
    if (deadline <= a->lease_deadline)
        return;
    int rc = sup_lease_write(a->cfg.state_dir, &a->lease_fd, deadline, m / 2);
    if (rc < 0) {
        log_error("lease_write_failed", "error=\"%s\"", strerror(-rc));
        return;
    }
    if (a->lease_expired_logged)
        log_info("lease_renewed", "node=%s", a->cfg.name);
    a->lease_deadline = deadline;
    a->lease_expired_logged = false;
}

static void register_cb(struct evhttp_request *req, void *arg)
{
    struct agent *a = arg;
    int code;
    json_t *body = reply_json(req, &code);
    a->hb_inflight = false;
    struct agent_register_reply r;
    struct agent_msg_error e = {"", ""};
    if (code == 200 || code == 201) {
        if (body && agent_register_reply_parse(body, &r, &e) == 0) {
            str_copy(a->credential, sizeof a->credential, r.credential);
            char buf[300];
            snprintf(buf, sizeof buf, "%s\n", r.credential);
            write_small(a, "credential", buf, 0600);
            a->wait_ms = r.heartbeat_wait_ms > 0 ? r.heartbeat_wait_ms : 25000;
            a->node_timeout_ms = r.node_timeout_ms;
            if (a->wait_ms >= a->node_timeout_ms - fence_margin(a))
                log_warn("fence_too_tight",
                         "heartbeat_wait_ms=%lld node_timeout_ms=%lld margin_ms=%lld "
                         "effect=\"a quiet long poll outlasts the lease: jobs would be fenced\"",
                         (long long)a->wait_ms, (long long)a->node_timeout_ms,
                         (long long)fence_margin(a));
            renew_lease(a);
            a->registered = true;
            a->backoff_ms = 0;
            a->hb_failures = 0;
            log_info("registered", "node=%s controller=%s", a->cfg.name, a->cfg.controller);
            json_decref(body);
            schedule_hb(a, 0);
            return;
        }
        log_error("bad_register_reply", "field=%s message=\"%s\"", e.field, e.message);
    } else if (code == 401 && a->credential[0] && a->cfg.join_token[0]) {
        log_warn("credential_refused", "node=%s action=\"register with the join token\"",
                 a->cfg.name);
        a->credential[0] = '\0';
    } else if (code != 0) {
        json_t *m = json_object_get(json_object_get(body, "error"), "message");
        log_error("register_refused", "status=%d message=\"%s\"", code,
                  json_is_string(m) ? json_string_value(m) : "");
    }
    json_decref(body);
    backoff(a, code ? "register refused" : "no connection");
}

static void do_register(struct agent *a)
{
    struct agent_node_info n;
    memset(&n, 0, sizeof n);
    const struct inventory *inv = &a->cfg.inv;
    str_copy(n.name, sizeof n.name, a->cfg.name);
    str_copy(n.gpu_type, sizeof n.gpu_type, inv->gpu_type);
    n.gpus = inv->ngpus;
    n.gpu_mem_mb = inv->ngpus ? inv->gpus[0].mem_mb : 0;
    char *uuids[INV_MAX_GPUS];
    for (int i = 0; i < inv->ngpus && inv->from_nvml; i++)
        uuids[n.ngpu_uuids++] = (char *)inv->gpus[i].uuid;
    n.gpu_uuids = uuids;
    n.cpus = inv->cpus;
    n.mem_mb = inv->mem_mb;
    n.labels = a->cfg.labels;
    str_copy(n.addr, sizeof n.addr, a->cfg.addr);
    /* with a credential, re-register as ourselves; the join token only when we have none */
    json_t *body =
        agent_register_body(&n, a->credential[0] ? NULL : a->cfg.join_token, DOCKET_AGENT_VERSION);
    struct evhttp_request *req = new_request(a, register_cb, a, body, true);
    a->hb_inflight = true;
    a->hb_sent_mono = clock_mono_ms();
    if (!req || evhttp_make_request(a->hb_conn, req, EVHTTP_REQ_POST, "/v1/agent/register") < 0) {
        a->hb_inflight = false;
        backoff(a, "cannot send register");
    }
}

/* A new spare supervisor, made from a fresh loop turn so the launch that used the last
 * one goes first. */
static void kick_spare(struct agent *a)
{
    if (!a->cfg.no_spare && a->cg.mode == CG_V1) {
        struct timeval tv = {0, 1000};
        evtimer_add(a->spare_ev, &tv);
    }
}

static void spare_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct agent *a = arg;
    char err[256];
    if (a->spare.pid > 0 || a->stopping || clock_mono_ms() < a->spare_next)
        return;
    if (sup_spare_start(&a->sup, &a->spare, err, sizeof err) < 0) {
        log_warn("spare_failed", "message=\"%s\"", err);
        a->spare_next = clock_mono_ms() + 1000;
    }
}

/* Never double-book a GPU: each index must exist here and belong to no live job (a job
 * whose reclaim has not finished still holds its GPUs). */
static int gpus_check(struct agent *a, const struct agent_job *spec, const struct ajob *self,
                      char *err, size_t errlen)
{
    for (int i = 0; i < spec->ngpus; i++) {
        int g = spec->gpus[i];
        if (g >= a->cfg.inv.ngpus) {
            snprintf(err, errlen, "GPU %d does not exist on node '%s' (%d GPUs)", g, a->cfg.name,
                     a->cfg.inv.ngpus);
            return -EINVAL;
        }
        for (struct ajob *o = a->jobs; o; o = o->next) {
            if (o == self || o->exited)
                continue;
            for (int k = 0; k < o->ngpus; k++)
                if (o->gpus[k] == g) {
                    snprintf(err, errlen, "GPU %d is still in use by job %llu", g,
                             (unsigned long long)o->id);
                    return -EBUSY;
                }
        }
    }
    return 0;
}

static void apply_start(struct agent *a, const struct agent_cmd *c)
{
    struct ajob *j = job_find(a, c->job_id);
    if ((j && !j->exited) || sup_start_seq(&a->sup, c->job_id) >= c->seq)
        return; /* running, or this very command already launched it: never twice */
    if (j)
        job_remove(a, j); /* an earlier run's report is out of the way: a requeue */
    struct agent_job spec;
    struct agent_msg_error e = {"", ""};
    j = job_add(a, c->job_id);
    if (agent_job_parse(c->job, &spec, &e) < 0) {
        log_error("bad_start_command", "job=%llu field=%s message=\"%s\"",
                  (unsigned long long)c->job_id, e.field, e.message);
        j->exited = true;
        j->st.reclaim_ok = true;
        j->st.exit_kind = AGENT_EXIT_LAUNCH_FAILED;
        if (snprintf(j->st.message, sizeof j->st.message, "bad start command: %s", e.message) < 0)
            j->st.message[0] = '\0';
        return;
    }
    char err[512] = "";
    if (gpus_check(a, &spec, j, err, sizeof err) < 0) {
        agent_job_release(&spec);
        log_error("launch_refused", "job=%llu message=\"%s\"", (unsigned long long)c->job_id, err);
        j->exited = true;
        j->st.reclaim_ok = true;
        j->st.exit_kind = AGENT_EXIT_LAUNCH_FAILED;
        str_copy(j->st.message, sizeof j->st.message, err);
        return;
    }
    memcpy(j->gpus, spec.gpus, sizeof j->gpus);
    j->ngpus = spec.ngpus;
    int rc = sup_spare_launch(&a->sup, &a->spare, &spec, c->seq, &j->sup_pid, err, sizeof err);
    if (rc == 0)
        kick_spare(a);
    else
        rc = sup_launch(&a->sup, &spec, c->seq, &j->sup_pid, err, sizeof err);
    agent_job_release(&spec);
    if (rc < 0) {
        log_error("launch_failed", "job=%llu message=\"%s\"", (unsigned long long)c->job_id, err);
        j->exited = true;
        j->st.reclaim_ok = true;
        j->st.exit_kind = AGENT_EXIT_LAUNCH_FAILED;
        str_copy(j->st.message, sizeof j->st.message, err);
        return;
    }
    j->ours = true;
    j->sup_start = sup_proc_starttime(j->sup_pid);
    str_copy(j->st.state, sizeof j->st.state, "starting");
    log_info("job_started", "job=%llu supervisor=%d", (unsigned long long)c->job_id, j->sup_pid);
    event_started(a, j);
}

static void apply_stop(struct agent *a, const struct agent_cmd *c)
{
    struct ajob *j = job_find(a, c->job_id);
    if (!j || j->exited)
        return; /* ended already: its exited event tells the controller */
    char cmd[64];
    if (c->type == AGENT_CMD_SIGNAL)
        snprintf(cmd, sizeof cmd, "signal %d %lld", c->signal, (long long)c->grace_ms);
    else
        snprintf(cmd, sizeof cmd, "kill");
    int rc = sup_command(&a->sup, j->id, j->sup_pid, j->sup_start, c->seq, cmd);
    if (rc == 0 && c->type == AGENT_CMD_SIGNAL)
        str_copy(j->st.state, sizeof j->st.state, "stopping");
    log_info("job_command", "job=%llu command=\"%s\" rc=%d", (unsigned long long)j->id, cmd, rc);
}

static void apply_commands(struct agent *a, const struct agent_heartbeat_reply *r)
{
    int64_t max = a->ack;
    for (size_t i = 0; i < r->ncmds; i++) {
        const struct agent_cmd *c = &r->cmds[i];
        if (c->seq <= a->ack)
            continue;
        if (c->type == AGENT_CMD_START)
            apply_start(a, c);
        else
            apply_stop(a, c);
        if (c->seq > max)
            max = c->seq;
    }
    if (max != a->ack) {
        a->ack = max;
        save_ack(a);
    }
    kick_post(a);
}

static void heartbeat_cb(struct evhttp_request *req, void *arg)
{
    struct agent *a = arg;
    int code;
    json_t *body = reply_json(req, &code);
    a->hb_inflight = false;
    if (a->stopping) {
        json_decref(body);
        return;
    }
    if (code == 200 && body) {
        struct agent_heartbeat_reply r;
        struct agent_msg_error e = {"", ""};
        if (agent_heartbeat_reply_parse(body, &r, &e) == 0) {
            renew_lease(a);
            a->backoff_ms = 0;
            a->hb_failures = 0;
            apply_commands(a, &r);
            agent_heartbeat_reply_release(&r);
            json_decref(body);
            schedule_hb(a, 0);
            return;
        }
        log_error("bad_heartbeat_reply", "field=%s message=\"%s\"", e.field, e.message);
    } else if (code == 401) {
        log_warn("credential_refused", "node=%s", a->cfg.name);
        a->registered = false;
        if (a->cfg.join_token[0])
            a->credential[0] = '\0';
    }
    json_decref(body);
    backoff(a, code ? "heartbeat refused" : "no connection");
}

static void heartbeat(struct agent *a)
{
    if (a->hb_inflight || a->stopping)
        return;
    if (!a->registered) {
        do_register(a);
        return;
    }
    size_t n = 0;
    for (struct ajob *j = a->jobs; j; j = j->next)
        n++;
    struct agent_job_status *js = xcalloc(n ? n : 1, sizeof *js);
    size_t k = 0;
    for (struct ajob *j = a->jobs; j; j = j->next) {
        if (j->exit_acked)
            continue; /* the controller has its end; only its output is left to ship */
        js[k].id = j->id;
        js[k].state =
            j->exited ? "exited" : (strcmp(j->st.state, "stopping") == 0 ? "stopping" : "running");
        js[k].pid = j->st.pid > 0 ? j->st.pid : j->sup_pid;
        k++;
    }
    bool ok = a->health_ok && !a->reclaim_failed;
    const char *msg = a->reclaim_failed ? a->reclaim_msg : a->health_msg;
    json_t *body = agent_heartbeat_body(a->cfg.name, a->ack, a->wait_ms, ok, msg, js, k);
    free(js);
    struct evhttp_request *req = new_request(a, heartbeat_cb, a, body, true);
    a->hb_inflight = true;
    evhttp_connection_set_timeout(a->hb_conn, (int)(a->wait_ms / 1000) + 15);
    a->hb_sent_mono = clock_mono_ms();
    if (!req || evhttp_make_request(a->hb_conn, req, EVHTTP_REQ_POST, "/v1/agent/heartbeat") < 0) {
        a->hb_inflight = false;
        backoff(a, "cannot send heartbeat");
    }
}

static void hb_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    heartbeat(arg);
}

/* ---------------------------------------------------------------------------------- */
/* Events and logs (one request at a time on the post connection)                      */

static void post_failed(struct agent *a, const char *why)
{
    /* put the batch back in front, in order */
    if (a->sent) {
        struct outev *last = a->sent;
        size_t n = 1;
        while (last->next) {
            last = last->next;
            n++;
        }
        last->next = a->out_head;
        if (!a->out_head)
            a->out_tail = &last->next;
        a->out_head = a->sent;
        a->out_count += n;
        a->sent = NULL;
    }
    /* a kept-alive connection the peer just closed fails once: retry at once, then slower */
    a->post_failures++;
    int64_t wait =
        a->post_failures == 1 ? 0 : (a->post_failures < 6 ? 100 << a->post_failures : 5000);
    a->post_backoff_until = clock_mono_ms() + wait;
    if (a->post_failures > 1)
        log_warn("post_failed", "reason=\"%s\" retry_ms=%lld", why, (long long)wait);
    kick_post(a);
}

static void events_cb(struct evhttp_request *req, void *arg)
{
    struct agent *a = arg;
    int code;
    json_t *body = reply_json(req, &code);
    json_decref(body);
    a->post_inflight = false;
    if (code != 200) {
        if (code == 401)
            a->registered = false;
        post_failed(a, code ? "events refused" : "no connection");
        return;
    }
    a->post_failures = 0;
    while (a->sent) {
        struct outev *o = a->sent;
        a->sent = o->next;
        if (o->exit_job) {
            /* acknowledged: once its output is out too, the job leaves the table (which
             * so stays as small as the node's running jobs; see retire) */
            struct ajob *j = job_find(a, o->exit_job);
            if (j && j->exited)
                j->exit_acked = true; /* retired once its output is all out */
        }
        json_decref(o->ev);
        free(o);
    }
    kick_post(a);
}

static void post_events(struct agent *a)
{
    json_t *arr = json_array();
    struct outev **cut = &a->out_head;
    size_t n = 0;
    while (*cut && n < MAX_BATCH) {
        json_array_append(arr, (*cut)->ev);
        cut = &(*cut)->next;
        n++;
    }
    a->sent = a->out_head;
    a->out_head = *cut;
    *cut = NULL;
    if (!a->out_head)
        a->out_tail = &a->out_head;
    a->out_count -= n;
    json_t *body = agent_events_body(a->cfg.name, arr);
    json_decref(arr);
    struct evhttp_request *req = new_request(a, events_cb, a, body, true);
    a->post_inflight = true;
    if (!req || evhttp_make_request(a->post_conn, req, EVHTTP_REQ_POST, "/v1/agent/events") < 0) {
        a->post_inflight = false;
        post_failed(a, "cannot send events");
    }
}

struct logreq {
    struct agent *a;
    uint64_t job;
    int stream;
    int64_t at; /* the controller offset the chunk was sent at */
    bool probe; /* an empty chunk asking where the log ends */
};

/* JOBDIR/log_base: the controller offsets of this run's first bytes, written once they
 * are known and before any byte goes at them, so a restarted agent goes on the same. */
static void save_base(struct agent *a, struct ajob *j)
{
    char dir[PATH_MAX], path[PATH_MAX + 32], tmp[PATH_MAX + 32], buf[64];
    sup_job_dir(&a->sup, j->id, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/log_base", dir);
    snprintf(tmp, sizeof tmp, "%s/.log_base.tmp", dir);
    int n = snprintf(buf, sizeof buf, "%lld %lld\n", (long long)j->base[0], (long long)j->base[1]);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, buf, (size_t)n) != n || rename(tmp, path) < 0)
        log_error("log_base_save_failed", "job=%llu error=\"%s\"", (unsigned long long)j->id,
                  strerror(errno));
    if (fd >= 0)
        close(fd);
}

static void load_base(struct agent *a, struct ajob *j)
{
    char dir[PATH_MAX], path[PATH_MAX + 32], buf[64] = "";
    j->base[0] = j->base[1] = -1;
    sup_job_dir(&a->sup, j->id, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/log_base", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    long long b0, b1;
    if (n > 0 && (buf[n] = '\0', sscanf(buf, "%lld %lld", &b0, &b1) == 2)) {
        j->base[0] = b0;
        j->base[1] = b1;
    }
}

static void logs_cb(struct evhttp_request *req, void *arg)
{
    struct logreq *lr = arg;
    struct agent *a = lr->a;
    a->log_inflight = NULL;
    int code;
    json_t *body = reply_json(req, &code);
    a->post_inflight = false;
    int64_t off = 0;
    struct agent_msg_error e;
    struct ajob *j = job_find(a, lr->job);
    if (code == 200 && body && agent_logs_reply_parse(body, &off, &e) == 0) {
        if (j && lr->probe) {
            j->base[lr->stream] = off; /* this run starts where the log ends now */
            j->sent[lr->stream] = 0;
            save_base(a, j);
        } else if (j && j->base[lr->stream] >= 0) {
            /* the controller's end is where we go on from: past a repeat it already has
             * (after our restart), or back to a gap it is missing */
            int64_t sent = off - j->base[lr->stream];
            j->sent[lr->stream] = sent < 0 ? 0 : sent;
            if (off <= lr->at) /* no progress: do not spin, try again in a second */
                j->log_hold_until = clock_mono_ms() + 1000;
        }
        a->post_failures = 0;
        json_decref(body);
        free(lr);
        kick_post(a);
        return;
    }
    json_t *m = json_object_get(json_object_get(body, "error"), "message");
    const char *msg = json_is_string(m) ? json_string_value(m) : "";
    if (j && code == 409) {
        /* the controller has less of the log than this run's base says (it lost some):
         * ask again where it ends; some of this run may then be sent twice, none lost */
        log_warn("log_gap", "job=%llu stream=%d message=\"%s\"", (unsigned long long)j->id,
                 lr->stream, msg);
        j->base[lr->stream] = -1;
        j->sent[lr->stream] = 0;
        code = 200;
    } else if (j && code >= 400 && code < 500 && code != 401 && code != 408 && code != 429) {
        /* refused for good (the job is gone there, a bad chunk): this stream stops here,
         * rather than hold every other job's output behind it */
        log_error("log_refused", "job=%llu stream=%d status=%d message=\"%s\"",
                  (unsigned long long)j->id, lr->stream, code, msg);
        j->sent[lr->stream] = INT64_MAX / 2;
        code = 200;
    } else if (code == 401) {
        a->registered = false;
    }
    json_decref(body);
    free(lr);
    if (code == 200) {
        kick_post(a);
        return;
    }
    post_failed(a, code ? "logs refused" : "no connection");
}

static const char cut_marker[] = "\n[docket-node: output cut here, past this node's log limit]\n";

/* The job's output file, opened for reading the safe way: never through a symlink,
 * never waiting on a FIFO, and only while it is still the regular file the supervisor
 * opened for the job (same device and inode). A job that swaps its output path for
 * anything else (a link to a file it cannot read, a FIFO) gets nothing shipped from it. */
static int open_output(const struct ajob *j, int s, int64_t *size)
{
    const char *path = s ? j->st.err_path : j->st.out_path;
    int64_t dev = s ? j->st.err_dev : j->st.out_dev, ino = s ? j->st.err_ino : j->st.out_ino;
    if (!path[0] || ino == 0)
        return -ENOENT;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -errno;
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || (int64_t)sb.st_dev != dev ||
        (int64_t)sb.st_ino != ino) {
        close(fd);
        return -EPERM;
    }
    *size = (int64_t)sb.st_size;
    return fd;
}

static bool send_chunk(struct agent *a, struct ajob *j, int s, int64_t at, const void *buf,
                       size_t len, bool probe)
{
    json_t *body = agent_logs_body(a->cfg.name, j->id, s ? "stderr" : "stdout", at, buf, len);
    struct logreq *lr = xcalloc(1, sizeof *lr);
    *lr = (struct logreq){a, j->id, s, at, probe};
    struct evhttp_request *req = new_request(a, logs_cb, lr, body, true);
    a->post_inflight = true;
    a->log_inflight = lr;
    if (!req || evhttp_make_request(a->post_conn, req, EVHTTP_REQ_POST, "/v1/agent/logs") < 0) {
        a->post_inflight = false;
        a->log_inflight = NULL;
        free(lr);
        post_failed(a, "cannot send logs");
        return false;
    }
    return true;
}

/* Ship one increment of one log, if any is pending; true when a request went out. */
static bool ship_log(struct agent *a, struct ajob *j)
{
    if (j->log_hold_until && clock_mono_ms() < j->log_hold_until)
        return false;
    for (int s = 0; s < 2; s++) {
        if (s == 1 && strcmp(j->st.err_path, j->st.out_path) == 0)
            continue;
        int64_t size = 0, start = s ? j->st.err_start : j->st.out_start;
        int fd = open_output(j, s, &size);
        if (fd < 0)
            continue;
        int64_t limit = a->cfg.log_limit_bytes, sent = j->sent[s];
        bool more = size - start > sent;
        if (!more || sent > limit) {
            close(fd);
            continue; /* nothing new, or cut already (the marker went) */
        }
        if (j->base[s] < 0) {
            close(fd);
            return send_chunk(a, j, s, 0, "", 0, true);
        }
        if (sent == limit) {
            close(fd);
            log_warn("log_cut", "job=%llu stream=%s limit=%lld", (unsigned long long)j->id,
                     s ? "stderr" : "stdout", (long long)limit);
            return send_chunk(a, j, s, j->base[s] + sent, cut_marker, sizeof cut_marker - 1, false);
        }
        int64_t want = size - start - sent;
        if (want > LOG_CHUNK)
            want = LOG_CHUNK;
        if (want > limit - sent)
            want = limit - sent;
        char *buf = xmalloc((size_t)want);
        ssize_t got = pread(fd, buf, (size_t)want, start + sent);
        close(fd);
        if (got <= 0) {
            free(buf);
            continue;
        }
        bool ok = send_chunk(a, j, s, j->base[s] + sent, buf, (size_t)got, false);
        free(buf);
        return ok;
    }
    return false;
}

/* Output of this run not shipped yet (bytes below the limit, or the cut marker). */
static bool logs_pending(const struct agent *a, const struct ajob *j)
{
    for (int s = 0; s < 2; s++) {
        if (s == 1 && strcmp(j->st.err_path, j->st.out_path) == 0)
            continue;
        int64_t size = 0, start = s ? j->st.err_start : j->st.out_start;
        int fd = open_output(j, s, &size);
        if (fd < 0)
            continue;
        close(fd);
        if (size - start > j->sent[s] && j->sent[s] <= a->cfg.log_limit_bytes)
            return true;
    }
    return false;
}

/* A job the controller is done with (exit acknowledged, output shipped): its directory
 * is marked and queued for removal, and it leaves the table (unlinked by the caller). */
static void retire(struct agent *a, struct ajob *j)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    sup_job_dir(&a->sup, j->id, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/reported", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    done_push(a, j->id);
    free(j);
}

/* A finished job's exit waits for its own last output this long at most; then it goes,
 * and the rest of the output follows it. */
enum { EXIT_LOG_WAIT_MS = 2000 };

/* Next thing for the controller. Events first, always: a job's start or end is never
 * behind anyone's output. Then the last output of finished jobs (whose exit goes once
 * it is shipped, or after EXIT_LOG_WAIT_MS), then live output, one chunk per job in
 * turn. */
static void post_next(struct agent *a)
{
    if (a->post_inflight || !a->registered || clock_mono_ms() < a->post_backoff_until)
        return;
    if (a->out_head) {
        post_events(a);
        return;
    }
    int64_t now = clock_mono_ms();
    bool queued = false;
    for (struct ajob *j = a->jobs; j; j = j->next) {
        if (!j->exited || j->exit_queued)
            continue;
        if (now - j->ended_mono < EXIT_LOG_WAIT_MS && ship_log(a, j))
            return;
        queue_exit(a, j);
        queued = true;
    }
    if (queued) {
        post_events(a);
        return;
    }
    /* jobs whose exit the controller has and whose output is all out leave the table */
    for (struct ajob **p = &a->jobs; *p;) {
        struct ajob *j = *p;
        if (j->exit_acked && !logs_pending(a, j)) {
            *p = j->next;
            retire(a, j);
        } else {
            p = &j->next;
        }
    }
    /* round robin: start after the job shipped last */
    struct ajob *first = a->jobs;
    for (struct ajob *j = a->jobs; j; j = j->next)
        if (j->id == a->ship_after) {
            first = j->next ? j->next : a->jobs;
            break;
        }
    struct ajob *j = first;
    do {
        if (j && ship_log(a, j)) {
            a->ship_after = j->id;
            return;
        }
        j = j && j->next ? j->next : a->jobs;
    } while (j && j != first);
}

/* ---------------------------------------------------------------------------------- */
/* Supervisors, usage, health, cleanup                                                 */

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
        if (reclaim_done(a, p, status))
            continue;
        for (struct ajob *j = a->jobs; j; j = j->next)
            if (j->ours && j->sup_pid == p && !j->exited)
                job_finished(a, j);
    }
    post_next(a);
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

static void sample_usage(struct agent *a)
{
    inventory_nvml_sample(&a->cfg.inv); /* no-op without NVML */
    for (struct ajob *j = a->jobs; j; j = j->next) {
        if (j->exited || a->cg.mode == CG_NONE)
            continue;
        struct cg_job cg;
        if (cg_job_init(&cg, &a->cg, a->cfg.name, j->id) < 0 || cg_job_nprocs(&cg) <= 0)
            continue;
        struct agent_event e;
        memset(&e, 0, sizeof e);
        e.job = j->id;
        str_copy(e.type, sizeof e.type, "usage");
        e.time_ms = clock_now_ms();
        e.has_usage = true;
        cg_job_usage(&cg, &e.usage.cpu_ms, &e.usage.max_rss_mb);
        gpu_util(a, j, &e.usage);
        queue_event(a, agent_event_to_json(&e), 0);
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
        if (!job_find(a, d->id) && access(path, F_OK) == 0)
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
            job_finished(a, j);
        else if (!j->st.out_path[0]) {
            /* once the supervisor has set the job up, its state names the log files */
            char dir[PATH_MAX];
            struct sup_state st;
            sup_job_dir(&a->sup, j->id, dir, sizeof dir);
            if (sup_state_read(dir, &st) == 0 && strcmp(st.state, "exited") != 0)
                j->st = st;
        }
    }
    if (a->cfg.health_check[0]) {
        if (a->health_pid && now - a->health_started > a->cfg.health_interval_ms) {
            kill(a->health_pid, SIGKILL); /* a check that hangs fails */
        } else if (!a->health_pid && now >= a->health_next) {
            start_health(a);
            a->health_next = now + a->cfg.health_interval_ms;
        }
    }
    if (a->lease_deadline && now > a->lease_deadline && !a->lease_expired_logged) {
        log_warn("fenced",
                 "node=%s reason=\"no contact with the controller for node_timeout - %lld ms: "
                 "supervisors stop their jobs\"",
                 a->cfg.name, (long long)fence_margin(a));
        a->lease_expired_logged = true;
    }
    if (now >= a->usage_next) {
        sample_usage(a);
        a->usage_next = now + a->cfg.usage_interval_ms;
    }
    if (a->spare.pid <= 0 && now >= a->spare_next)
        kick_spare(a);
    if (now >= a->cleanup_next) {
        cleanup_jobs(a, now);
        a->cleanup_next = now + 60000;
    }
    post_next(a);
}

static void post_kick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    post_next(arg);
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

static void adopt(struct agent *a, uint64_t id, const char *dir)
{
    struct sup_state st;
    char path[PATH_MAX + 400];
    snprintf(path, sizeof path, "%s/reported", dir);
    bool reported = access(path, F_OK) == 0;
    int rc = sup_state_read(dir, &st);
    if (rc < 0) {
        snprintf(path, sizeof path, "%s/job.json", dir);
        if (access(path, F_OK) != 0)
            return;
        memset(&st, 0, sizeof st); /* launched but the supervisor never wrote: lost */
    }
    if (rc == 0 && strcmp(st.state, "exited") == 0 && reported) {
        done_push(a, id); /* nothing left to do but remove it later */
        return;
    }
    struct ajob *j = job_add(a, id);
    j->st = st;
    load_base(a, j);
    snprintf(path, sizeof path, "%s/job.json", dir);
    json_error_t je;
    json_t *spec = json_load_file(path, 0, &je);
    json_t *gpus = json_object_get(json_object_get(spec, "job"), "gpus");
    for (size_t i = 0; i < json_array_size(gpus) && j->ngpus < AGENT_MAX_GPUS; i++)
        j->gpus[j->ngpus++] = (int)json_integer_value(json_array_get(gpus, i));
    json_decref(spec);
    j->sup_pid = st.sup_pid;
    j->sup_start = st.sup_start;
    if (strcmp(st.state, "exited") == 0) {
        j->exited = true;
        j->ended_mono = clock_mono_ms();
    } else if (!sup_alive(st.sup_pid, st.sup_start)) {
        job_finished(a, j);
        /* the supervisor may have finished between our two reads */
    }
    log_info("job_found", "job=%llu state=%s supervisor=%d reported=%s", (unsigned long long)id,
             j->exited ? "exited" : st.state, st.sup_pid, reported ? "yes" : "no");
}

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
        adopt(a, id, dir);
    }
    closedir(d);
}

/* Spare groups of an earlier life (a spare killed before it could clean up). */
static void sweep_spares(struct agent *a)
{
    struct cg_job node;
    if (a->cg.mode != CG_V1 || cg_node_init(&node, &a->cg, a->cfg.name) < 0)
        return;
    DIR *d = opendir(node.dir[CG_FREEZER]);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        struct cg_job sp;
        char msg[256] = "";
        if (strncmp(e->d_name, "spare_", 6) != 0 ||
            cg_job_init_leaf(&sp, &a->cg, a->cfg.name, e->d_name) < 0)
            continue;
        if (cg_job_reclaim(&sp, 2000, NULL, msg, sizeof msg) < 0)
            log_warn("stale_spare", "group=%s message=\"%s\"", e->d_name, msg);
    }
    if (d)
        closedir(d);
}

/* ---------------------------------------------------------------------------------- */
/* Life cycle                                                                          */

static int parse_controller(struct agent *a, char *err, size_t errlen)
{
    struct evhttp_uri *u = evhttp_uri_parse(a->cfg.controller);
    const char *scheme = u ? evhttp_uri_get_scheme(u) : NULL;
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    if (!u || !scheme || strcmp(scheme, "http") != 0 || !host || !*host) {
        snprintf(err, errlen, "bad controller URL '%s' (want http://HOST:PORT)", a->cfg.controller);
        if (u)
            evhttp_uri_free(u);
        return -EINVAL;
    }
    str_copy(a->host, sizeof a->host, host);
    a->port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : 8420;
    evhttp_uri_free(u);
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
    a->wait_ms = 25000;
    if (parse_controller(a, err, errlen) < 0)
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
                                 .node = a->cfg.name,
                                 .cg = &a->cg,
                                 .allow_root_jobs = cfg->allow_root_jobs,
                                 .keep_scratch = cfg->keep_scratch,
                                 .limit_slack_ms = cfg->limit_slack_ms,
                                 .pids_max = cfg->pids_max,
                                 .default_mem_mb = cfg->job_mem_default_mb,
                                 .node_gpus = cfg->inv.ngpus,
                                 .gpu_minor = a->gpu_minor,
                                 .job_oom_score_adj = 500};
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
    a->hb_conn = evhttp_connection_base_new(a->base, NULL, a->host, (unsigned short)a->port);
    a->post_conn = evhttp_connection_base_new(a->base, NULL, a->host, (unsigned short)a->port);
    a->sigchld = evsignal_new(a->base, SIGCHLD, sigchld_cb, a);
    a->sigterm = evsignal_new(a->base, SIGTERM, stop_cb, a);
    a->sigint = evsignal_new(a->base, SIGINT, stop_cb, a);
    a->tick = event_new(a->base, -1, EV_PERSIST, tick_cb, a);
    a->hb_retry = evtimer_new(a->base, hb_retry_cb, a);
    a->post_kick = evtimer_new(a->base, post_kick_cb, a);
    a->spare_ev = evtimer_new(a->base, spare_cb, a);
    if (!a->hb_conn || !a->post_conn || !a->sigchld || !a->sigterm || !a->sigint || !a->tick ||
        !a->hb_retry || !a->post_kick || !a->spare_ev) {
        snprintf(err, errlen, "out of memory setting up the event loop");
        goto fail; /* the agent is starting: exiting frees the rest */
    }
    evhttp_connection_set_timeout(a->post_conn, 30);
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

int agent_run(struct agent *a)
{
    log_info("agent_started",
             "node=%s controller=%s cgroups=%s gpus=%d gpu_type=%s cpus=%d mem_mb=%lld",
             a->cfg.name, a->cfg.controller, cg_mode_name(a->cg.mode), a->cfg.inv.ngpus,
             a->cfg.inv.gpu_type, a->cfg.inv.cpus, (long long)a->cfg.inv.mem_mb);
    recover(a);
    sweep_spares(a);
    kick_spare(a);
    sigchld_cb(-1, 0, a); /* nothing of ours yet, but keep the table consistent */
    heartbeat(a);
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
        job_remove(a, a->jobs);
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
    if (a->hb_conn)
        evhttp_connection_free(a->hb_conn);
    if (a->post_conn)
        evhttp_connection_free(a->post_conn);
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
