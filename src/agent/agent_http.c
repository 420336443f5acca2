/*
 * agent_http.c - the agent's link to docketd: register (join token or credential),
 * the heartbeat long poll with seq/ack and the commands it brings, reconnect with
 * backoff while jobs keep running, the fencing lease renewed at each contact, and the
 * post connection (one request at a time): queued events first, then the jobs' output
 * (logship.c). See agent_int.h, docs/agent.md and docs/api.md "Agent endpoints".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/lifecycle.h"
#include "agent/warmer.h"
#include "agent/storage.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/str.h"
#include "util/xalloc.h"

enum { MAX_BATCH = 2000 };

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

void ag_queue_event(struct agent *a, json_t *ev, uint64_t exit_job)
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

/* Requests are sent from a fresh loop iteration, never from inside another's callback
 * (the connection may still be closing then). */
void ag_kick_post(struct agent *a)
{
    struct timeval zero = {0, 0};
    evtimer_add(a->post_kick, &zero);
}

/* A POST request carrying `body` (consumed); the callback gets `cbarg`. */
struct evhttp_request *ag_new_request(struct agent *a, void (*cb)(struct evhttp_request *, void *),
                                      void *cbarg, json_t *body, bool auth)
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
json_t *ag_reply_json(struct evhttp_request *req, int *code)
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

/* The next controller of --controller's list (a standby answers 503; a dead leader not
 * at all): the connections move to it when next used (ag_conn). */
static void next_controller(struct agent *a)
{
    if (a->ncontrollers < 2)
        return;
    a->cur_controller = (a->cur_controller + 1) % a->ncontrollers;
    const struct ag_controller *k = &a->controllers[a->cur_controller];
    str_copy(a->host, sizeof a->host, k->host);
    a->port = k->port;
    log_info("controller_next", "host=%s port=%d", a->host, a->port);
}

static void backoff(struct agent *a, const char *why)
{
    if (a->hb_failures >= 1)
        next_controller(a); /* the first retry goes to the same one, at once */
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

/* The controller answered a request sent at a->hb_sent_mono, so it has seen this node no
 * earlier than that: it counts the node lost node_timeout after its last sight of it at
 * the soonest. Supervisors stop their jobs `margin` before that (docs/agent.md
 * "Fencing and leases"); the margin is the configured one, at most a third of node_timeout, and a
 * job's grace while fenced is half of it, so the job is gone before the controller can
 * give its resources to anyone. */
int64_t ag_fence_margin(const struct agent *a)
{
    return agent_fence_margin_ms(a->node_timeout_ms, a->cfg.fence_margin_ms);
}

static void renew_lease(struct agent *a)
{
    if (a->node_timeout_ms <= 0 || a->hb_sent_mono <= 0)
        return;
    int64_t m = ag_fence_margin(a);
    int64_t deadline = a->hb_sent_mono + a->node_timeout_ms - m;
    if (deadline <= a->lease_deadline)
        return;
    struct sup_lease l = {deadline, m / 2, a->hb_sent_mono, m};
    int rc = sup_lease_write(a->cfg.state_dir, &a->lease_fd, &l);
    if (rc < 0) {
        log_error("lease_write_failed", "error=\"%s\"", strerror(-rc));
        return;
    }
    if (a->lease_expired_logged)
        log_info("lease_renewed", "node=%s", a->cfg.name);
    a->lease_deadline = deadline;
    a->lease_expired_logged = false;
}

/* A reply renews the lease to (poll sent) + lease, and the next reply of a quiet node comes
 * a whole wait later: the lease must outlast two waits, with room for a slow reply. So the
 * long poll asks for at most a third of the lease (node_timeout - margin); docketd cuts
 * its own wait the same way (docs/agent.md "Fencing and leases"). */
static void wait_fit_lease(struct agent *a)
{
    int64_t cap = (a->node_timeout_ms - ag_fence_margin(a)) / 3;
    if (a->node_timeout_ms <= 0 || a->wait_ms <= cap)
        return;
    log_warn("heartbeat_wait_capped",
             "heartbeat_wait_ms=%lld cap_ms=%lld node_timeout_ms=%lld margin_ms=%lld "
             "effect=\"long polls ask for a third of the fencing lease\"",
             (long long)a->wait_ms, (long long)cap, (long long)a->node_timeout_ms,
             (long long)ag_fence_margin(a));
    a->wait_ms = cap;
}

static void register_cb(struct evhttp_request *req, void *arg)
{
    struct agent *a = arg;
    int code;
    json_t *body = ag_reply_json(req, &code);
    a->hb_inflight = false;
    struct agent_register_reply r;
    struct proto_error e = {0};
    if (code == 200 || code == 201) {
        if (body && agent_register_reply_parse(body, &r, &e) == 0) {
            str_copy(a->credential, sizeof a->credential, r.credential);
            char buf[300];
            snprintf(buf, sizeof buf, "%s\n", r.credential);
            ag_write_small(a, "credential", buf, 0600);
            a->cred_issued_ms = clock_now_ms();
            a->cred_expires_ms = r.credential_expires_ms;
            a->wait_ms = r.heartbeat_wait_ms > 0 ? r.heartbeat_wait_ms : 15000;
            a->node_timeout_ms = r.node_timeout_ms;
            wait_fit_lease(a);
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
    str_copy(n.job_net, sizeof n.job_net, a->cfg.job_net);
    /* with a credential, re-register as ourselves; the join token only when we have none */
    json_t *body =
        agent_register_body(&n, a->credential[0] ? NULL : a->cfg.join_token, DOCKET_VERSION);
    struct evhttp_request *req = ag_new_request(a, register_cb, a, body, true);
    struct evhttp_connection *conn = ag_conn(a, &a->hb_conn, 0);
    a->hb_inflight = true;
    a->hb_sent_mono = clock_mono_ms();
    if (!req || !conn ||
        evhttp_make_request(conn, req, EVHTTP_REQ_POST, "/v1/agent/register") < 0) {
        a->hb_inflight = false;
        backoff(a, "cannot send register");
    }
}

static void apply_commands(struct agent *a, const struct agent_heartbeat_reply *r)
{
    int64_t max = a->ack;
    for (size_t i = 0; i < r->ncmds; i++) {
        const struct agent_cmd *c = &r->cmds[i];
        if (c->seq <= a->ack)
            continue;
        if (c->type == AGENT_CMD_START)
            ag_apply_start(a, c);
        else if (c->type == AGENT_CMD_STEP_HOST)
            ag_apply_step_host(a, c);
        else if (c->type == AGENT_CMD_NOTIFY)
            ag_apply_notify(a, c);
        else if (c->type == AGENT_CMD_LIMIT)
            ag_apply_limit(a, c);
        else
            ag_apply_stop(a, c);
        if (c->seq > max)
            max = c->seq;
    }
    if (max != a->ack) {
        a->ack = max;
        save_ack(a);
    }
    ag_kick_post(a);
}

static void heartbeat_cb(struct evhttp_request *req, void *arg)
{
    struct agent *a = arg;
    int code;
    json_t *body = ag_reply_json(req, &code);
    a->hb_inflight = false;
    if (a->stopping) {
        json_decref(body);
        return;
    }
    if (code == 200 && body) {
        struct agent_heartbeat_reply r;
        struct proto_error e = {0};
        if (agent_heartbeat_reply_parse(body, &r, &e) == 0) {
            renew_lease(a);
            a->backoff_ms = 0;
            a->hb_failures = 0;
            apply_commands(a, &r);
            if (r.storage)
                ag_storage_config(a, r.storage);
            ag_lifecycle_acked(a); /* docketd has the results this heartbeat carried */
            ag_lifecycle_take(a, r.lifecycle, r.nlifecycle);
            ag_lifecycle_tick(a);
            ag_warm_take(a, r.warm, r.nwarm);
            ag_warm_tick(a);
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

void ag_heartbeat(struct agent *a)
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
    for (struct deferred_start *d = a->deferred; d; d = d->next)
        n++;
    struct agent_job_status *js = xcalloc(n ? n : 1, sizeof *js);
    size_t k = 0;
    for (struct deferred_start *d = a->deferred; d; d = d->next) {
        js[k].id = d->cmd.job_id; /* known here, waiting for its GPUs: never lost */
        js[k].state = "starting";
        k++;
    }
    for (struct ajob *j = a->jobs; j; j = j->next) {
        if (j->exit_acked)
            continue; /* the controller has its end; only its output is left to ship */
        js[k].id = j->id;
        js[k].state =
            j->exited ? "exited" : (strcmp(j->st.state, "stopping") == 0 ? "stopping" : "running");
        js[k].pid = j->st.pid > 0 ? j->st.pid : j->sup_pid;
        k++;
    }
    char stor_msg[256];
    bool stor_ok = ag_storage_healthy(a, stor_msg, sizeof stor_msg);
    bool ok = a->health_ok && !a->reclaim_failed && stor_ok && !a->net_msg[0];
    const char *msg = a->reclaim_failed ? a->reclaim_msg
                      : !stor_ok        ? stor_msg
                      : a->net_msg[0]   ? a->net_msg
                                        : a->health_msg;
    json_t *body = agent_heartbeat_body(a->cfg.name, a->ack,
                                        ag_warm_wait_ms(a, ag_lifecycle_wait_ms(a, a->wait_ms)), ok,
                                        msg, js, k);
    free(js);
    json_t *stor = ag_storage_report_json(a);
    if (body && stor)
        json_object_set_new(body, "storage", stor);
    else
        json_decref(stor);
    json_t *lc = ag_lifecycle_report_json(a);
    if (body && lc)
        json_object_set_new(body, "lifecycle", lc);
    else
        json_decref(lc);
    json_t *warm = ag_warm_report_json(a);
    if (body && warm)
        json_object_set_new(body, "warm", warm);
    else
        json_decref(warm);
    struct evhttp_request *req = ag_new_request(a, heartbeat_cb, a, body, true);
    struct evhttp_connection *conn = ag_conn(a, &a->hb_conn, 0);
    a->hb_inflight = true;
    if (conn)
        evhttp_connection_set_timeout(conn, (int)(a->wait_ms / 1000) + 15);
    a->hb_sent_mono = clock_mono_ms();
    if (!req || !conn ||
        evhttp_make_request(conn, req, EVHTTP_REQ_POST, "/v1/agent/heartbeat") < 0) {
        a->hb_inflight = false;
        backoff(a, "cannot send heartbeat");
    }
}

void ag_hb_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ag_heartbeat(arg);
}

void ag_post_failed(struct agent *a, const char *why)
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
    ag_kick_post(a);
}

/* Remove the i-th event of the batch in flight; false when there is no such one. */
static bool drop_sent(struct agent *a, size_t i)
{
    struct outev **p = &a->sent;
    for (size_t k = 0; *p && k < i; k++)
        p = &(*p)->next;
    if (!*p)
        return false;
    struct outev *o = *p;
    *p = o->next;
    if (o->exit_job) { /* an exit it will never take: the job's end is known here anyway */
        struct ajob *j = ag_job_find(a, o->exit_job);
        if (j && j->exited)
            j->exit_acked = true;
    }
    json_decref(o->ev);
    free(o);
    return true;
}

static void events_cb(struct evhttp_request *req, void *arg)
{
    struct agent *a = arg;
    int code;
    json_t *body = ag_reply_json(req, &code);
    a->post_inflight = false;
    size_t bad = 0;
    const char *field = json_string_value(json_object_get(json_object_get(body, "error"), "field"));
    if (code == 403 && field && sscanf(field, "events[%zu]", &bad) == 1 && drop_sent(a, bad)) {
        /* one event for a job the controller does not place here (the batch was refused
         * whole, nothing applied): that one goes, the others are sent again at once */
        json_t *m = json_object_get(json_object_get(body, "error"), "message");
        log_error("event_refused", "index=%zu message=\"%s\"", bad,
                  json_is_string(m) ? json_string_value(m) : "");
        json_decref(body);
        a->post_failures = 0;
        ag_post_failed(a, "an event was refused");
        a->post_backoff_until = 0;
        return;
    }
    if (code == 403 || code == 404 || code == 409) {
        /* refused for good (a job the controller does not place here): sending the batch
         * again would block every later event behind it; it is dropped, and logged */
        json_t *m = json_object_get(json_object_get(body, "error"), "message");
        log_error("events_refused", "status=%d message=\"%s\"", code,
                  json_is_string(m) ? json_string_value(m) : "");
        code = 200;
    }
    json_decref(body);
    if (code != 200) {
        if (code == 401)
            a->registered = false;
        ag_post_failed(a, code ? "events refused" : "no connection");
        return;
    }
    a->post_failures = 0;
    while (a->sent) {
        struct outev *o = a->sent;
        a->sent = o->next;
        if (o->exit_job) {
            /* acknowledged: once its output is out too, the job leaves the table (which
             * so stays as small as the node's running jobs; see retire) */
            struct ajob *j = ag_job_find(a, o->exit_job);
            if (j && j->exited)
                j->exit_acked = true; /* retired once its output is all out */
        }
        json_decref(o->ev);
        free(o);
    }
    ag_kick_post(a);
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
    struct evhttp_request *req = ag_new_request(a, events_cb, a, body, true);
    struct evhttp_connection *conn = ag_conn(a, &a->post_conn, 30);
    a->post_inflight = true;
    if (!req || !conn || evhttp_make_request(conn, req, EVHTTP_REQ_POST, "/v1/agent/events") < 0) {
        a->post_inflight = false;
        ag_post_failed(a, "cannot send events");
    }
}

/* The node credential expires (credential_expires_ms of the register or rotate reply):
 * a new one is asked for once two thirds of its life are gone, on the post connection,
 * before any event. The controller keeps the old one working until the new one is first
 * used (the next heartbeat), so a reply lost on the way costs nothing. */
bool ag_rotate_due(const struct agent *a)
{
    if (!a->registered || a->cred_expires_ms <= 0 || clock_mono_ms() < a->rotate_retry)
        return false;
    int64_t life = a->cred_expires_ms - a->cred_issued_ms;
    return clock_now_ms() >= a->cred_issued_ms + life - life / 3;
}

static void rotate_cb(struct evhttp_request *req, void *arg)
{
    struct agent *a = arg;
    int code;
    json_t *body = ag_reply_json(req, &code);
    a->post_inflight = false;
    struct agent_register_reply r;
    struct proto_error e = {0};
    if (code == 200 && body && agent_register_reply_parse(body, &r, &e) == 0) {
        char buf[300];
        snprintf(buf, sizeof buf, "%s\n", r.credential);
        /* on disk first: a restart goes on with the new one (the old works until it is used) */
        if (ag_write_small(a, "credential", buf, 0600) == 0) {
            str_copy(a->credential, sizeof a->credential, r.credential);
            a->cred_issued_ms = clock_now_ms();
            a->cred_expires_ms = r.credential_expires_ms;
            log_info("credential_rotated", "node=%s expires_ms=%lld", a->cfg.name,
                     (long long)r.credential_expires_ms);
        } else {
            a->rotate_retry = clock_mono_ms() + 5000;
        }
    } else {
        log_warn("credential_rotate_failed", "status=%d field=%s message=\"%s\"", code, e.field,
                 e.message);
        a->rotate_retry = clock_mono_ms() + 5000;
        if (code == 401)
            a->registered = false;
    }
    json_decref(body);
    ag_kick_post(a);
}

static void rotate(struct agent *a)
{
    struct evhttp_request *req =
        ag_new_request(a, rotate_cb, a, agent_rotate_body(a->cfg.name), true);
    a->post_inflight = true;
    if (!req || evhttp_make_request(a->post_conn, req, EVHTTP_REQ_POST, "/v1/agent/rotate") < 0) {
        a->post_inflight = false;
        a->rotate_retry = clock_mono_ms() + 5000;
    }
}

/* A finished job's exit waits for its own last output this long at most; then it goes,
 * and the rest of the output follows it. */
enum { EXIT_LOG_WAIT_MS = 2000 };

/* Next thing for the controller. Events first, always: a job's start or end is never
 * behind anyone's output. Then the last output of finished jobs (whose exit goes once
 * it is shipped, or after EXIT_LOG_WAIT_MS), then live output, one chunk per job in
 * turn. */
void ag_post_next(struct agent *a)
{
    if (a->post_inflight || !a->registered || clock_mono_ms() < a->post_backoff_until)
        return;
    if (ag_rotate_due(a)) {
        rotate(a);
        return;
    }
    if (a->out_head) {
        post_events(a);
        return;
    }
    int64_t now = clock_mono_ms();
    bool queued = false;
    for (struct ajob *j = a->jobs; j; j = j->next) {
        if (!j->exited || j->exit_queued)
            continue;
        if (now - j->ended_mono < EXIT_LOG_WAIT_MS && ag_ship_log(a, j))
            return;
        ag_queue_exit(a, j);
        queued = true;
    }
    if (queued) {
        post_events(a);
        return;
    }
    /* jobs whose exit the controller has and whose output is all out leave the table */
    for (struct ajob **p = &a->jobs; *p;) {
        struct ajob *j = *p;
        if (j->exit_acked && !ag_logs_pending(a, j)) {
            *p = j->next;
            ag_retire(a, j);
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
        if (j && ag_ship_log(a, j)) {
            a->ship_after = j->id;
            return;
        }
        j = j && j->next ? j->next : a->jobs;
    } while (j && j != first);
}

void ag_post_kick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ag_post_next(arg);
}
