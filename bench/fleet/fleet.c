/*
 * fleet.c - a fleet of simulated node agents against a real docketd (issue 11, "the loop
 * stays responsive at fleet scale"). One process, one libevent loop, N agents that speak
 * the agent protocol of docs/api.md as docket-node does: each registers with the join
 * token under its own name and gets its own credential, then long-polls
 * POST /v1/agent/heartbeat on its own connection (acknowledging commands, listing the
 * jobs it runs), starts what a `start` command sends, and reports it `started` and, after
 * --job-ms, `exited` (code 0) through POST /v1/agent/events. Those posts (and the
 * registrations) share a small pool of connections, as they are short; the long polls are
 * what a real fleet holds open at docketd, one a node. Nothing is executed.
 *
 * A probe GETs /healthz (or --probe-path, with --probe-token as its bearer token) every
 * --probe-ms on a connection of its own and keeps each round trip (a 200 only). With --agents 0 the
 * process is the probe alone (run.sh runs it so, apart from the fleet, whose own loop would
 * otherwise delay the probe's replies). Every second the fleet writes its counters as JSON to
 * --status (atomically); SIGUSR1 sets a mark: the probe's samples, the starts and the agents heard
 * from are then counted again from zero (bench/fleet/run.sh marks before each phase it measures);
 * SIGUSR2 writes the status at once (the end of a phase).
 *
 *   fleet --host 127.0.0.1 --port P --join-token dkj_... --agents N [--gpus 8]
 *         [--wait-ms 25000] [--job-ms 0] [--pool 32] [--probe-ms 10]
 *         [--probe-path /healthz] [--probe-token T] --status FILE
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct run {
    int64_t job, run;
};

struct agent {
    struct fleet *f;
    int index;
    char name[32];
    char cred[128];
    struct evhttp_connection *hb; /* its long poll's own connection */
    int64_t ack;
    struct run *jobs; /* what it runs now */
    size_t njobs, cap;
    struct event *retry;
    int backoff_ms;
    bool registered, heard_since_mark, down_seen;
    bool failed; /* the last heartbeat failed: the next asks for an answer at once */
};

struct fleet {
    struct event_base *base;
    const char *host, *join, *status, *probe_path, *probe_token;
    int port, nagents, gpus, wait_ms, job_ms, npool, probe_ms, next_pool;
    struct agent *agents;
    struct evhttp_connection **pool, *probe;
    struct event *probe_ev, *tick_ev, *usr1_ev, *usr2_ev, *term_ev;
    /* counters (totals; *_mark since the last SIGUSR1) */
    int64_t registered, starts, finished, hb_errors, post_errors, reg_errors, not_up;
    int64_t starts_mark, heard_mark;
    double mark_t, first_start_t, last_start_t, all_heard_t;
    double *samples; /* /healthz round trips since the mark, ms */
    size_t nsamples, samples_cap;
    double probe_t0;
    bool probing;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *xmalloc_or_die(void *p)
{
    if (!p) {
        fprintf(stderr, "fleet: out of memory\n");
        exit(1);
    }
    return p;
}

static struct evhttp_connection *conn_new(struct fleet *f)
{
    struct evhttp_connection *c =
        evhttp_connection_base_new(f->base, NULL, f->host, (ev_uint16_t)f->port);
    xmalloc_or_die(c);
    evhttp_connection_set_timeout(c, f->wait_ms / 1000 + 30);
    return c;
}

/* POST `body` (stolen JSON) to path on conn, with the agent's credential when it has one. */
static void post(struct fleet *f, struct evhttp_connection *conn, const char *path,
                 const char *cred, json_t *body, void (*cb)(struct evhttp_request *, void *),
                 void *arg)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    struct evhttp_request *req = xmalloc_or_die(evhttp_request_new(cb, arg));
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    char auth[160];
    evhttp_add_header(h, "Host", f->host);
    evhttp_add_header(h, "Content-Type", "application/json");
    if (cred && cred[0]) {
        snprintf(auth, sizeof(auth), "Bearer %s", cred);
        evhttp_add_header(h, "Authorization", auth);
    }
    evbuffer_add(evhttp_request_get_output_buffer(req), text, strlen(text));
    free(text);
    if (evhttp_make_request(conn, req, EVHTTP_REQ_POST, path) < 0)
        cb(NULL, arg);
}

static struct evhttp_connection *pool_conn(struct fleet *f)
{
    f->next_pool = (f->next_pool + 1) % f->npool;
    return f->pool[f->next_pool];
}

/* The reply's body as JSON (NULL when it is not 2xx JSON). */
static json_t *reply_json(struct evhttp_request *req)
{
    if (!req || evhttp_request_get_response_code(req) / 100 != 2)
        return NULL;
    struct evbuffer *b = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(b);
    return json_loadb((const char *)evbuffer_pullup(b, (ev_ssize_t)n), n, 0, NULL);
}

static void heartbeat(struct agent *a);
static void do_register(struct agent *a);

static void retry_later(struct agent *a)
{
    a->backoff_ms = a->backoff_ms ? a->backoff_ms * 2 : 100; /* as docket-node does */
    if (a->backoff_ms > 5000)
        a->backoff_ms = 5000;
    int ms = a->backoff_ms / 2 + rand() % (a->backoff_ms / 2 + 1);
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(a->retry, &tv);
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
    struct agent *a = arg;
    (void)fd;
    (void)what;
    if (a->registered)
        heartbeat(a);
    else
        do_register(a);
}

/* ---- events ---------------------------------------------------------------------------- */

struct post_ctx {
    struct agent *a;
    json_t *events; /* kept to resend */
    int finished;   /* exited events in it */
};

static void send_events(struct post_ctx *p);

static void events_done(struct evhttp_request *req, void *arg)
{
    struct post_ctx *p = arg;
    struct fleet *f = p->a->f;
    int code = req ? evhttp_request_get_response_code(req) : 0;
    if (code == 200) {
        f->finished += p->finished;
        json_decref(p->events);
        free(p);
        return;
    }
    f->post_errors++;
    if (code == 0 || code >= 500 || code == 429)
        send_events(p); /* through another connection of the pool */
    else {
        fprintf(stderr, "fleet: %s: events refused (%d)\n", p->a->name, code);
        json_decref(p->events);
        free(p);
    }
}

static void send_events(struct post_ctx *p)
{
    json_t *body = json_pack("{s:s,s:O}", "node", p->a->name, "events", p->events);
    post(p->a->f, pool_conn(p->a->f), "/v1/agent/events", p->a->cred, body, events_done, p);
}

static void post_events(struct agent *a, json_t *events, int finished)
{
    struct post_ctx *p = xmalloc_or_die(calloc(1, sizeof(*p)));
    *p = (struct post_ctx){a, events, finished};
    send_events(p);
}

static void drop_job(struct agent *a, int64_t job)
{
    for (size_t i = 0; i < a->njobs; i++)
        if (a->jobs[i].job == job) {
            a->jobs[i] = a->jobs[--a->njobs];
            return;
        }
}

static json_t *exited(int64_t job, int64_t run, int code)
{
    return json_pack("{s:I,s:I,s:s,s:i,s:{s:s,s:i,s:s},s:{s:i,s:i,s:i}}", "job", (json_int_t)job,
                     "run", (json_int_t)run, "type", "exited", "time_ms", 0, "exit", "kind", "code",
                     "code", code, "message", "", "usage", "cpu_ms", 1, "max_rss_mb", 1, "gpu_util",
                     0);
}

struct finish {
    struct agent *a;
    struct run r;
    struct event *ev;
};

static void finish_cb(evutil_socket_t fd, short what, void *arg)
{
    struct finish *x = arg;
    (void)fd;
    (void)what;
    drop_job(x->a, x->r.job);
    post_events(x->a, json_pack("[o]", exited(x->r.job, x->r.run, 0)), 1);
    event_free(x->ev);
    free(x);
}

static void start_job(struct agent *a, const json_t *job)
{
    struct fleet *f = a->f;
    struct run r = {json_integer_value(json_object_get(job, "id")),
                    json_integer_value(json_object_get(job, "run"))};
    for (size_t i = 0; i < a->njobs; i++)
        if (a->jobs[i].job == r.job)
            return; /* a command sent again */
    if (a->njobs == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 4;
        a->jobs = xmalloc_or_die(realloc(a->jobs, a->cap * sizeof(*a->jobs)));
    }
    a->jobs[a->njobs++] = r;
    double t = now_s();
    if (f->starts_mark++ == 0)
        f->first_start_t = t;
    f->last_start_t = t;
    f->starts++;
    json_t *started = json_pack("{s:I,s:I,s:s,s:i,s:i}", "job", (json_int_t)r.job, "run",
                                (json_int_t)r.run, "type", "started", "time_ms", 0, "pid", 4242);
    if (f->job_ms <= 0) {
        drop_job(a, r.job);
        post_events(a, json_pack("[o,o]", started, exited(r.job, r.run, 0)), 1);
        return;
    }
    post_events(a, json_pack("[o]", started), 0);
    struct finish *x = xmalloc_or_die(calloc(1, sizeof(*x)));
    x->a = a;
    x->r = r;
    x->ev = xmalloc_or_die(evtimer_new(f->base, finish_cb, x));
    struct timeval tv = {f->job_ms / 1000, (f->job_ms % 1000) * 1000};
    evtimer_add(x->ev, &tv);
}

/* ---- heartbeat -------------------------------------------------------------------------- */

static void take_commands(struct agent *a, const json_t *cmds)
{
    size_t i;
    json_t *cmd;
    json_t *killed = json_array();
    json_array_foreach(cmds, i, cmd) {
        int64_t seq = json_integer_value(json_object_get(cmd, "seq"));
        const char *type = json_string_value(json_object_get(cmd, "type"));
        if (seq <= a->ack || !type)
            continue;
        a->ack = seq;
        if (strcmp(type, "start") == 0) {
            start_job(a, json_object_get(cmd, "job"));
        } else if (strcmp(type, "kill") == 0) {
            int64_t job = json_integer_value(json_object_get(cmd, "job"));
            for (size_t k = 0; k < a->njobs; k++)
                if (a->jobs[k].job == job)
                    json_array_append_new(killed, exited(job, a->jobs[k].run, 137));
            drop_job(a, job);
        }
    }
    if (json_array_size(killed) > 0)
        post_events(a, killed, (int)json_array_size(killed));
    else
        json_decref(killed);
}

static void heard(struct agent *a)
{
    struct fleet *f = a->f;
    a->backoff_ms = 0;
    if (a->heard_since_mark)
        return;
    a->heard_since_mark = true;
    if (++f->heard_mark == f->registered)
        f->all_heard_t = now_s();
}

static void hb_done(struct evhttp_request *req, void *arg)
{
    struct agent *a = arg;
    json_t *reply = reply_json(req);
    if (!reply) {
        a->f->hb_errors++;
        a->failed = true;
        retry_later(a);
        return;
    }
    heard(a);
    const char *st = json_string_value(json_object_get(reply, "node_state"));
    if (st && strcmp(st, "UP") != 0 && strcmp(st, "DRAINING") != 0 && !a->down_seen) {
        a->down_seen = true; /* the controller declared this live agent down */
        a->f->not_up++;
        fprintf(stderr, "fleet: %s: node_state %s\n", a->name, st);
    }
    take_commands(a, json_object_get(reply, "commands"));
    json_decref(reply);
    heartbeat(a);
}

static void heartbeat(struct agent *a)
{
    json_t *jobs = json_array();
    for (size_t i = 0; i < a->njobs; i++)
        json_array_append_new(jobs, json_pack("{s:I,s:s,s:i}", "id", (json_int_t)a->jobs[i].job,
                                              "state", "running", "pid", 4242));
    /* after a failure, wait_ms 0: the answer tells the run that this agent is back */
    json_t *body = json_pack("{s:s,s:I,s:i,s:{s:b,s:s},s:o}", "node", a->name, "ack",
                             (json_int_t)a->ack, "wait_ms", a->failed ? 0 : a->f->wait_ms, "health",
                             "ok", 1, "message", "", "jobs", jobs);
    a->failed = false;
    post(a->f, a->hb, "/v1/agent/heartbeat", a->cred, body, hb_done, a);
}

/* ---- registration ---------------------------------------------------------------------- */

static void reg_done(struct evhttp_request *req, void *arg)
{
    struct agent *a = arg;
    json_t *reply = reply_json(req);
    const char *cred = json_string_value(json_object_get(reply, "credential"));
    if (!cred) {
        a->f->reg_errors++;
        json_decref(reply);
        retry_later(a);
        return;
    }
    snprintf(a->cred, sizeof(a->cred), "%s", cred);
    json_decref(reply);
    a->registered = true;
    a->f->registered++;
    heard(a);
    heartbeat(a);
}

static void do_register(struct agent *a)
{
    struct fleet *f = a->f;
    json_t *body =
        json_pack("{s:s,s:{s:s,s:s,s:i,s:i,s:i,s:i,s:{s:s}},s:s}", "join_token", f->join, "node",
                  "name", a->name, "gpu_type", "H100", "gpus", f->gpus, "gpu_mem_mb", 81920, "cpus",
                  64, "mem_mb", 512000, "labels", "fleet", "sim", "agent_version", DOCKET_VERSION);
    post(f, pool_conn(f), "/v1/agent/register", NULL, body, reg_done, a);
}

/* ---- probe, status, signals ------------------------------------------------------------- */

static void probe_done(struct evhttp_request *req, void *arg)
{
    struct fleet *f = arg;
    f->probing = false;
    if (!req || evhttp_request_get_response_code(req) != 200)
        return;
    if (f->nsamples == f->samples_cap) {
        f->samples_cap = f->samples_cap ? f->samples_cap * 2 : 4096;
        f->samples = xmalloc_or_die(realloc(f->samples, f->samples_cap * sizeof(double)));
    }
    f->samples[f->nsamples++] = (now_s() - f->probe_t0) * 1000.0;
}

static void probe_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fleet *f = arg;
    (void)fd;
    (void)what;
    if (f->probing)
        return; /* the last one is still out: its time is the sample */
    struct evhttp_request *req = xmalloc_or_die(evhttp_request_new(probe_done, f));
    evhttp_add_header(evhttp_request_get_output_headers(req), "Host", f->host);
    if (f->probe_token) {
        char auth[300];
        snprintf(auth, sizeof(auth), "Bearer %s", f->probe_token);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Authorization", auth);
    }
    f->probing = true;
    f->probe_t0 = now_s();
    if (evhttp_make_request(f->probe, req, EVHTTP_REQ_GET, f->probe_path) < 0)
        f->probing = false;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double pct(const double *v, size_t n, double p)
{
    return n ? v[(size_t)(p * (double)(n - 1))] : 0.0;
}

static void write_status(struct fleet *f)
{
    double *s = xmalloc_or_die(malloc((f->nsamples + 1) * sizeof(double)));
    memcpy(s, f->samples, f->nsamples * sizeof(double));
    qsort(s, f->nsamples, sizeof(double), cmp_double);
    double span = f->last_start_t - f->first_start_t;
    json_t *o =
        json_pack("{s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:{s:I,s:f,s:f,s:f}}", "agents",
                  f->nagents, "registered", (json_int_t)f->registered, "starts",
                  (json_int_t)f->starts, "finished", (json_int_t)f->finished, "hb_errors",
                  (json_int_t)f->hb_errors, "post_errors", (json_int_t)f->post_errors, "reg_errors",
                  (json_int_t)f->reg_errors, "not_up", (json_int_t)f->not_up, "starts_mark",
                  (json_int_t)f->starts_mark, "heard_mark", (json_int_t)f->heard_mark,
                  "starts_per_s_mark", span > 0 ? (double)f->starts_mark / span : 0.0,
                  "all_heard_s_mark", f->all_heard_t > 0 ? f->all_heard_t - f->mark_t : -1.0,
                  "healthz_ms_mark", "n", (json_int_t)f->nsamples, "p50", pct(s, f->nsamples, 0.5),
                  "p99", pct(s, f->nsamples, 0.99), "max", f->nsamples ? s[f->nsamples - 1] : 0.0);
    free(s);
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", f->status);
    if (json_dump_file(o, tmp, JSON_COMPACT) == 0 && rename(tmp, f->status) < 0)
        perror("fleet: status");
    json_decref(o);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    write_status(arg);
}

static void usr1_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fleet *f = arg;
    (void)fd;
    (void)what;
    f->nsamples = 0;
    f->starts_mark = 0;
    f->heard_mark = 0;
    f->first_start_t = f->last_start_t = f->all_heard_t = 0;
    f->mark_t = now_s();
    for (int i = 0; i < f->nagents; i++)
        f->agents[i].heard_since_mark = false;
    write_status(f);
}

static void term_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fleet *f = arg;
    (void)fd;
    (void)what;
    write_status(f);
    event_base_loopexit(f->base, NULL);
}

/* ---- main ------------------------------------------------------------------------------- */

static int parse_args(struct fleet *f, int argc, char **argv)
{
    *f = (struct fleet){.host = "127.0.0.1",
                        .gpus = 8,
                        .wait_ms = 25000,
                        .npool = 32,
                        .probe_ms = 10,
                        .probe_path = "/healthz"};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--host") == 0)
            f->host = v;
        else if (strcmp(k, "--port") == 0)
            f->port = atoi(v);
        else if (strcmp(k, "--join-token") == 0)
            f->join = v;
        else if (strcmp(k, "--agents") == 0)
            f->nagents = atoi(v);
        else if (strcmp(k, "--gpus") == 0)
            f->gpus = atoi(v);
        else if (strcmp(k, "--wait-ms") == 0)
            f->wait_ms = atoi(v);
        else if (strcmp(k, "--job-ms") == 0)
            f->job_ms = atoi(v);
        else if (strcmp(k, "--pool") == 0)
            f->npool = atoi(v);
        else if (strcmp(k, "--probe-ms") == 0)
            f->probe_ms = atoi(v);
        else if (strcmp(k, "--probe-path") == 0)
            f->probe_path = v;
        else if (strcmp(k, "--probe-token") == 0)
            f->probe_token = v;
        else if (strcmp(k, "--status") == 0)
            f->status = v;
        else {
            fprintf(stderr, "fleet: unknown option '%s'\n", k);
            return -1;
        }
    }
    if (!f->port || (!f->join && f->nagents > 0) || f->nagents < 0 || !f->status || f->npool <= 0) {
        fprintf(stderr, "usage: fleet --port P --join-token T --agents N --status FILE "
                        "[--host H] [--gpus 8] [--wait-ms 25000] [--job-ms 0] [--pool 32] "
                        "[--probe-ms 10] [--probe-path /healthz] [--probe-token T]\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct fleet f;
    if (parse_args(&f, argc, argv) < 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    srand(1);
    f.base = xmalloc_or_die(event_base_new());
    f.pool = xmalloc_or_die(calloc((size_t)f.npool, sizeof(*f.pool)));
    for (int i = 0; i < f.npool; i++)
        f.pool[i] = conn_new(&f);
    f.probe = conn_new(&f);
    f.agents = xmalloc_or_die(calloc((size_t)f.nagents + 1, sizeof(*f.agents)));
    for (int i = 0; i < f.nagents; i++) {
        struct agent *a = &f.agents[i];
        a->f = &f;
        a->index = i;
        snprintf(a->name, sizeof(a->name), "sim%05d", i);
        a->hb = conn_new(&f);
        a->retry = xmalloc_or_die(evtimer_new(f.base, retry_cb, a));
        do_register(a);
    }
    struct timeval probe_tv = {f.probe_ms / 1000, (f.probe_ms % 1000) * 1000};
    struct timeval sec = {1, 0};
    f.probe_ev = event_new(f.base, -1, EV_PERSIST, probe_cb, &f);
    f.tick_ev = event_new(f.base, -1, EV_PERSIST, tick_cb, &f);
    f.usr1_ev = evsignal_new(f.base, SIGUSR1, usr1_cb, &f);
    f.usr2_ev = evsignal_new(f.base, SIGUSR2, tick_cb, &f);
    f.term_ev = evsignal_new(f.base, SIGTERM, term_cb, &f);
    if (f.probe_ms > 0)
        event_add(f.probe_ev, &probe_tv);
    event_add(f.tick_ev, &sec);
    event_add(f.usr1_ev, NULL);
    event_add(f.usr2_ev, NULL);
    event_add(f.term_ev, NULL);
    f.mark_t = now_s();
    event_base_dispatch(f.base);
    return 0;
}
