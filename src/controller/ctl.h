/*
 * ctl.h - docketd's internals, shared by the files of src/controller/ (not a public API).
 *
 * One libevent loop owns everything below: the core model (struct sched), the store,
 * the HTTP servers, the per-node command queues and the replies that wait for the group
 * commit. Nothing here is thread-safe, by design (docs/architecture.md "One thread owns
 * the state").
 *
 * Request life: http.c authenticates and routes, opens a savepoint, calls the handler;
 * the handler writes the store, then changes the core (ctl_store_diverged below says why
 * and what happens when that order is impossible), and answers with ctl_reply*(); a reply
 * made while a transaction is open waits in the commit queue, and a zero-timeout event
 * commits once for the whole loop iteration before sending every reply that waited.
 */
#ifndef DOCKET_CONTROLLER_CTL_H
#define DOCKET_CONTROLLER_CTL_H

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/sched.h"
#include "protocol/agent_msg.h"
#include "protocol/proto.h"
#include "store/store.h"
#include "util/log.h"

/* Every function that writes to the store says so: its result must be looked at. */
#define CTL_WUR      __attribute__((warn_unused_result))
#define CTL_PATH_MAX 4096
/* Secrets (secrets.c): AES-256-GCM with a 96-bit nonce and a 128-bit tag. */
#define CTL_SECRET_KEY_LEN   32
#define CTL_SECRET_NONCE_LEN 12
#define CTL_SECRET_TAG_LEN   16
#define CTL_SECRET_MAX       65536 /* bytes of one value */
/* The web console (console.c): one-time login codes pending at once, how long one lives,
 * and how long the session token it is exchanged for lives. */
#define CTL_CONSOLE_CODES      16
#define CTL_CONSOLE_CODE_MS    60000
#define CTL_CONSOLE_SESSION_MS ((int64_t)12 * 3600 * 1000)

/* tls: auto = TLS unless the listener is on loopback (or with tls_cert: always). */
enum ctl_tls_mode { CTL_TLS_AUTO, CTL_TLS_ON, CTL_TLS_OFF };
/* Lists (stream.c, jobs.c): a page ends at `limit` rows or past CTL_LIST_PAGE_BYTES of
 * JSON, whichever comes first; it is sent in slices of at most CTL_LIST_SLICE_ROWS rows or
 * about CTL_LIST_SLICE_BYTES, one per loop turn. */
#define CTL_LIST_PAGE_BYTES  ((size_t)4 << 20)
#define CTL_LIST_SLICE_BYTES ((size_t)128 << 10)
#define CTL_LIST_SLICE_ROWS  256
/* Big arrays (jobs.c, docs/controller.md "Big submissions"): an array of more than
 * CTL_ARRAY_SLICE_TASKS tasks is written at most that many tasks (or about
 * CTL_ARRAY_SLICE_US of loop) a turn, and added to the core as many a turn. */
#define CTL_ARRAY_SLICE_TASKS 256
#define CTL_ARRAY_SLICE_US    8000
/* Agent events (agent.c): a batch is applied at most this many events a loop turn. */
#define CTL_AGENT_EVENTS_SLICE 64
/* Heartbeats (http.c): at most this many a loop turn (~0.04 ms each in the fleet bench);
 * the rest wait for the next turns, in order. */
#define CTL_HEARTBEATS_PER_TURN 128
/* GET /v1/audit/verify walks the chain this many rows a loop turn (admin.c) */
#define CTL_VERIFY_SLICE_ROWS 2048

struct ctl_config {
    char state_dir[CTL_PATH_MAX];
    char listen[256];               /* "HOST:PORT"; "" = no TCP listener */
    char socket_path[CTL_PATH_MAX]; /* "" = STATE_DIR/docketd.sock; "-" = none */
    char log_file[CTL_PATH_MAX];    /* "" = stderr */
    enum log_level log_level;
    enum log_format log_format;
    char policy_file[CTL_PATH_MAX]; /* initial policy, applied when the database has none */
    int64_t node_timeout_ms;
    int64_t heartbeat_wait_ms;
    int64_t cycle_delay_ms;    /* debounce after an event */
    int64_t cycle_interval_ms; /* slow timer for time-based rules */
    size_t max_body_bytes;
    int64_t log_max_bytes;          /* per job, all runs and streams: past it, a marker */
    int64_t node_credential_ttl_ms; /* node credentials expire; the agent rotates before */
    int64_t token_ttl_ms;           /* default lifetime of user tokens (the admin's too) */
    enum ctl_tls_mode tls;
    char tls_cert[CTL_PATH_MAX]; /* "" = self-signed, made in STATE_DIR at first start */
    char tls_key[CTL_PATH_MAX];
    char secrets_key[CTL_PATH_MAX]; /* "" = STATE_DIR/secrets.key (outside the database) */
    /* connections (conn.c): 0 = sized from the fd limit */
    int64_t max_connections;
    int64_t expected_nodes;  /* sizes the listen backlog and the fd warning */
    int64_t idle_timeout_ms; /* a connection silent this long is closed (not long polls) */
    /* submissions per user (jobs.c): a token bucket; rate 0 = no limit; admins exempt */
    int64_t submit_rate;  /* requests per second */
    int64_t submit_burst; /* bucket size */
    /* tasks one array submission may have. Past CTL_ARRAY_SLICE_TASKS an array is
     * written in slices, one per loop turn (docs/controller.md "Big submissions") */
    int64_t max_array_tasks;
    int64_t test_array_slice_delay_ms; /* DOCKETD_TEST_ARRAY_SLICE_DELAY_MS: tests only */
    bool rotate_secrets_key; /* --rotate-secrets-key: once, at this start (not a config key) */
};

void ctl_config_defaults(struct ctl_config *cfg);
/* Read docketd.yaml into cfg (fields present override). 0 or -errno with err filled. */
int ctl_config_load(struct ctl_config *cfg, const char *path, char *err, size_t errlen);
/* "auto", "on" or "off". 0 or -EINVAL. */
int ctl_tls_mode_parse(const char *s, enum ctl_tls_mode *out);

/* ------------------------------------------------------------------------------------ */
/* authz.c: roles and the one policy decision (docs/security.md "Roles")                 */

/* A user's global role (a token's role; the owner of docketd on the Unix socket is
 * admin). CTL_ROLE_NONE is a plain user, stored as "member": what it may do comes from its
 * project roles. Ordered: a higher role may do what a lower one may. */
enum ctl_role { CTL_ROLE_NONE, CTL_ROLE_VIEWER, CTL_ROLE_OPERATOR, CTL_ROLE_ADMIN };
/* A user's role in one project (the members table). */
enum ctl_prole { CTL_PROLE_NONE, CTL_PROLE_MEMBER, CTL_PROLE_LEAD };
/* The level a caller acts at on one job (holds remember it; a release needs as much). */
enum ctl_level {
    CTL_LEVEL_NONE,
    CTL_LEVEL_OWNER,
    CTL_LEVEL_LEAD,
    CTL_LEVEL_OPERATOR,
    CTL_LEVEL_ADMIN
};

/* What a route needs (http.c's route table; docs/api.md shows it per route). */
enum ctl_perm {
    CTL_P_PUBLIC,       /* no credential (the handler checks any it needs: join token) */
    CTL_P_READ,         /* any user */
    CTL_P_SUBMIT,       /* a member or lead of the target project, admins */
    CTL_P_JOB_PRIVATE,  /* the job's owner, its project's leads, admins (logs) */
    CTL_P_JOB_CONTROL,  /* the job's owner, its project's leads, operators, admins */
    CTL_P_PROJECT_LEAD, /* the target project's leads, admins */
    CTL_P_AUDIT,        /* viewers, operators, admins */
    CTL_P_OPERATOR,     /* operators, admins */
    CTL_P_ADMIN,        /* admins */
    CTL_P_TOKEN_OWNER,  /* the token's user, admins */
    CTL_P_SELF,         /* the user named in the path, admins */
    CTL_P_AGENT,        /* node credentials, and only they */
};

/* Who is calling. */
struct ctl_ident {
    char user[64];
    enum ctl_role role;
    bool node;         /* an agent with its node credential */
    bool node_pending; /* ... a rotated one not used yet (agent.c) */
    char node_name[64];
    char token_id[16]; /* the bearer token's id ("" over the socket) */
};

/* What a request acts on, resolved before the check: the project (a job's, a project
 * route's, a submission's), the owner (a job's, a token's, a submission's user) and the
 * caller's role in that project. NULL/NONE where the route has none. */
struct ctl_target {
    const char *project;
    const char *owner;
    enum ctl_prole prole;
};

/* The one decision: 0, or -EPERM-like (<0) with err filled (403 naming what is missing). */
int ctl_authz_check(const struct ctl_ident *id, enum ctl_perm p, const struct ctl_target *t,
                    struct proto_error *err);
/* The level `id` acts at on a job with target t. */
enum ctl_level ctl_authz_level(const struct ctl_ident *id, const struct ctl_target *t);
/* May `id` see a job's env (its owner, its project's leads, admins)? */
bool ctl_authz_sees_env(const struct ctl_ident *id, const struct ctl_target *t);
/* May `id` release a hold that `held_by` put at `held_at`? */
int ctl_authz_release(const struct ctl_ident *id, const struct ctl_target *t, const char *held_by,
                      enum ctl_level held_at, struct proto_error *err);
/* May `id` PATCH project t with `body`, giving `after`? Admins: anything; leads: the
 * per-user caps, within the project's limits, and the project's gpu_limit, within its
 * group's (`group_gpu_limit`: -1 when it has no group or the group no limit). */
int ctl_authz_project_patch(const struct ctl_ident *id, const struct ctl_target *t,
                            const json_t *body, const struct sched_project_spec *after,
                            int group_gpu_limit, struct proto_error *err);
/* "lead" or "member" -> out; 400 naming "role" otherwise. */
int ctl_authz_member_role(const char *role, enum ctl_prole *out, struct proto_error *err);
const char *ctl_role_name(enum ctl_role r);
int ctl_role_parse(const char *s, enum ctl_role *out);
const char *ctl_level_name(enum ctl_level l);
enum ctl_level ctl_level_parse(const char *s); /* unknown: CTL_LEVEL_ADMIN */
const char *ctl_perm_name(enum ctl_perm p);

/* A command queued for an agent, re-sent until acknowledged. */
struct ctl_cmd {
    int64_t seq;
    uint64_t job;
    json_t *json; /* the CMD object of docs/api.md, owned */
    struct ctl_cmd *next;
};

struct ctl_node {
    char name[64];
    struct store_node rec; /* as stored (labels/info owned by rec) */
    int64_t last_hb_ms;    /* monotonic ms of the last heartbeat (0: none yet) */
    bool reconciled;       /* first heartbeat after a restart of either side seen */
    struct ctl_cmd *cmds, *cmds_tail;
    struct evhttp_request *parked; /* a heartbeat waiting for commands */
    int ev_batches;                /* its event batches being applied in slices (agent.c) */
    struct event *park_timer;
    struct ctl *c;
    /* usage.c: each GPU's latest sample (time_ms 0: none yet) and where they come from */
    struct ctl_gpu_last {
        int64_t time_ms; /* the controller's clock */
        uint64_t job;
        struct agent_gpu_sample g;
    } gpu_last[AGENT_MAX_GPUS];
    char gpu_source[16];
};

struct ctl_reply {
    struct evhttp_request *req;
    uint64_t gen; /* the commit it waits for; 0 = not committed yet */
    int status;
    char *body;
    size_t len;
    const char *content_type;
    struct ctl_reply *next;
};

struct ctl_log_waiter;

/* A job the cycle started whose start command could not be made (a secret would not
 * open): failed as if its agent had reported launch_failed, once the cycle's decisions
 * are applied (the core must not change while they are read). */
struct ctl_launch_fail {
    uint64_t job;
    char message[512];
    struct ctl_launch_fail *next;
};

struct ctl_hist {
    const double *bounds;
    int nbounds;
    uint64_t counts[16];
    uint64_t count;
    double sum;
};

/* turns.c: the kinds of docketd's callbacks a loop turn is made of */
enum ctl_turn_kind {
    CTL_TURN_HEARTBEAT, /* POST /v1/agent/heartbeat */
    CTL_TURN_EVENTS,    /* POST /v1/agent/events */
    CTL_TURN_REQUEST,   /* every other request */
    CTL_TURN_CYCLE,     /* a scheduling cycle (the timer's) */
    CTL_TURN_COMMIT,    /* the group commit */
    CTL_TURN_SYNCED,    /* a WAL sync ended: its replies sent */
    CTL_TURN_ARRAY,     /* a slice of a big array (jobs.c) */
    CTL_TURN_STREAM,    /* a slice of a list (stream.c) */
    CTL_TURN_TIMER,     /* ticks, heartbeat park timeouts, log follow timers */
    CTL_TURN_DEFERRED,  /* heartbeats past CTL_HEARTBEATS_PER_TURN: queued, then run */
    CTL_TURN_NKINDS
};

struct ctl_turn {
    int64_t key_us, start_us, last_end_us, gap_before_us; /* wall clock, us */
    int64_t log_us; /* DOCKETD_TURN_LOG_MS: log turns at least this long; -1: never */
    int depth;
    int n[CTL_TURN_NKINDS];
    int64_t us[CTL_TURN_NKINDS];
    int starts, replies, parked;
    int64_t core_us;     /* of the cycle's time: sched_cycle itself */
    int agent_events;    /* agent events applied */
    int array_discarded; /* tasks of failed arrays deleted (jobs.c) */
    int heartbeats;      /* heartbeats handled (http.c: at most CTL_HEARTBEATS_PER_TURN) */
};

struct ctl_metrics {
    uint64_t submissions;
    uint64_t http_by_code[600];
    struct ctl_hist queue_wait; /* the shape of every tier's (bounds) */
    struct ctl_tier_hist {      /* queue wait per tier, by the job's tier at its start */
        char tier[SCHED_NAME_MAX];
        struct ctl_hist h;
    } wait_by_tier[SCHED_MAX_TIERS + 1];
    int nwait_tiers;
    struct ctl_hist cycle;
    struct ctl_hist commit; /* group commit: one fsync per loop iteration */
    struct ctl_hist turn;   /* one turn of the loop, its callbacks of ours (turns.c) */
    uint64_t conn_refused;  /* connections answered 503 past max_connections */
    uint64_t accept_errors; /* accept() failures (EMFILE...) that paused accepting */
};

struct ctl {
    struct ctl_config cfg;
    struct event_base *base;
    struct evhttp *http_tcp, *http_unix;
    void *tls_ctx;            /* SSL_CTX of the TCP listener; NULL = plain (loopback) */
    char tls_fingerprint[80]; /* its public-key pin, "sha256:..." (util/fingerprint.h) */
    unsigned char secret_key[CTL_SECRET_KEY_LEN]; /* from the secrets key file */
    bool secret_key_loaded;
    struct ctl_launch_fail *launch_fails; /* jobs whose start could not be made (loop.c) */
    struct store *store;
    struct sched *sched;
    int64_t start_mono_ms;
    uint64_t next_job_id;
    bool shutting_down;
    int exit_code;

    struct ctl_node **nodes; /* indexed by the core's node index */
    size_t nnodes, nodes_alloc;

    struct event *commit_ev; /* zero-timeout: commit then send queued replies */
    struct ctl_reply *replies, *replies_tail;
    uint64_t commit_gen;         /* commits so far */
    uint64_t synced_gen;         /* commits known to be on disk */
    struct ctl_written *written; /* written.c: jobs written since synced_gen */
    struct ctl_sync *sync;       /* the fdatasync helper (sync.c) */
    struct event *cycle_ev;      /* debounced and periodic scheduling cycle */
    bool cycle_pending;
    int64_t last_cycle_us; /* cost of the last cycle (adaptive debounce) */
    int64_t cycle_at_ms;
    struct event *tick_ev; /* 1 s: node timeouts */
    struct event *sig_term, *sig_int, *sig_hup;

    struct ctl_log_waiter *log_waiters;
    /* each class's node fields (pids_max, default_mem) by class name: the core does not
     * know them; the start command carries them (loop.c) */
    struct ctl_class_node {
        char name[SCHED_NAME_MAX];
        struct proto_class_node n;
    } class_nodes[SCHED_MAX_CLASSES];
    int nclass_nodes;
    json_t *boost_reasons; /* project name -> reason of its current boost */
    bool req_failed;       /* the running handler answered an error: roll back */
    bool diverged;         /* a write the core could not undo failed: stopping */
    struct ctl_metrics metrics;
    struct ctl_alerts *alerts;  /* alerts.c */
    struct ctl_conns *conns;    /* conn.c */
    struct ctl_stream *streams; /* stream.c: replies being sent in slices */
    struct ctl_array *arrays;   /* jobs.c: big arrays being written in slices */
    json_t *submit_buckets;     /* user -> [tokens, last mono ms] (jobs.c) */
    json_t *cycle_specs;        /* spec_id -> parsed spec, for one cycle (loop.c) */
    int cycle_spec_parses;      /* specs parsed by the cycle in progress (its debug line) */
    struct ctl_turn turn;       /* turns.c: the loop turn in progress */
    /* agent.c: event batches applied CTL_AGENT_EVENTS_SLICE events a turn, in order */
    struct ctl_ev_batch *ev_batches, *ev_batches_tail;
    struct event *ev_batch_ev;
    /* http.c: heartbeats past CTL_HEARTBEATS_PER_TURN in a turn, waiting for the next */
    struct ctl_hb_wait *hb_waiting, *hb_waiting_tail;
    struct event *hb_wait_ev;
    int64_t fd_limit, conn_cap;
    int listen_backlog;
    /* console.c: the one-time login codes `docket console` asked for (their hashes, never
     * the codes); a used or expired slot has hash[0] == 0 */
    struct ctl_console_code {
        char hash[65];
        char user[64];
        enum ctl_role role;
        int64_t expires_ms;
    } console_codes[CTL_CONSOLE_CODES];
};

/* ------------------------------------------------------------------------------------ */
/* conn.c: descriptors, listeners, the connection cap, accept back-off                   */

struct evconnlistener;
/* Raise RLIMIT_NOFILE to its hard limit and size the connection cap and backlog from it
 * and cfg (before anything opens a descriptor). */
int ctl_conn_limits(struct ctl *c);
int ctl_conn_init(struct ctl *c);
/* Count h's connections (refusing past the cap) and set its idle timeout. */
void ctl_conn_server(struct ctl *c, struct evhttp *h);
/* The same, its connections speaking TLS (ctl_tls_attach: after ctl_conn_server). */
void ctl_conn_server_tls(struct ctl *c, struct evhttp *h);
/* Back off (instead of spinning) when lev's accept() fails. */
void ctl_conn_listener(struct ctl *c, struct evconnlistener *lev);
/* A listening TCP socket with the sized backlog, for evhttp_bind_listener. */
struct evconnlistener *ctl_conn_listen_tcp(struct ctl *c, const char *host, int port, char *err,
                                           size_t errlen);
/* The one close callback slot of a connection (replaces evhttp_connection_set_closecb,
 * which conn.c keeps for counting); cb NULL clears it. */
void ctl_conn_watch(struct ctl *c, struct evhttp_connection *evcon,
                    void (*cb)(struct evhttp_connection *, void *), void *arg);
size_t ctl_conn_count(const struct ctl *c);
/* The status of libevent's HTML error page when it is all `buf` holds, else 0 (conn.c
 * rewrites such a page into the JSON error). */
int ctl_html_error_status(struct evbuffer *buf);
/* Percent-decode one path segment in place; -1 when it decodes to a NUL or a '/', or does
 * not fit in cap (http.c, routing). */
int ctl_path_decode(char *seg, size_t cap);
void ctl_conn_stop(struct ctl *c);    /* before the servers are freed */
void ctl_conn_release(struct ctl *c); /* after */

/* ------------------------------------------------------------------------------------ */
/* http.c: servers, routing, replies, group commit                                       */

struct ctl_req {
    struct ctl *c;
    struct evhttp_request *req;
    enum evhttp_cmd_type method;
    struct ctl_ident id;
    const char *arg[4]; /* path captures (":id", ":name") */
    char argbuf[4][128];
    struct evkeyvalq *query; /* parsed query string */
    const char *body;        /* NUL-terminated copy, or NULL */
    size_t body_len;
    /* authorization (http.c): the route's permission, what it acted on, whether the check
     * ran (a route whose target is in the body is checked by its handler) */
    enum ctl_perm perm;
    struct ctl_target tgt;
    char tgt_project[64], tgt_owner[64];
    bool authorized;
    json_t *my_projects; /* the caller's project roles, loaded once ({project: role}) */
};

/* Finish the authorization of a route whose target is in the body (submission): the
 * project and owner given, the route's permission is checked (ctl_authz_check). 0, or <0
 * after answering 403/500. */
int ctl_req_authorize(struct ctl_req *r, const char *project, const char *owner);
/* Fill t with project/owner and the caller's role in the project (cached per request). */
void ctl_req_target(struct ctl_req *r, const char *project, const char *owner,
                    struct ctl_target *t);
/* Print the route table ("METHOD PATTERN PERMISSION" lines), for docs and tests. */
void ctl_routes_print(FILE *out);
int ctl_http_start(struct ctl *c, char *err, size_t errlen);
/* "HOST:PORT" or "[V6]:PORT" of the listen setting. 0 or -EINVAL. */
int ctl_split_host_port(const char *s, char *host, size_t hlen, int *port);
void ctl_http_stop(struct ctl *c);
/* Answer with JSON (steals `body`). Deferred until the commit and its WAL sync when a
 * transaction is open, or until the sync in flight when a commit is not on disk yet:
 * what a reply shows is never ahead of the disk (docs/controller.md "One loop"). */
void ctl_reply_json(struct ctl *c, struct evhttp_request *req, int status, json_t *body);
void ctl_reply_raw(struct ctl *c, struct evhttp_request *req, int status, const char *ctype,
                   const void *data, size_t len);
/* A reply that shows job j (its row, spec, and what the core derives from them) and
 * nothing else that is stored: sent at once when ctl_job_durable(j), else as
 * ctl_reply_json (docs/controller.md "Reads that leave at once"). Steals `body`. */
void ctl_reply_json_job(struct ctl *c, struct evhttp_request *req, int status, json_t *body,
                        const struct store_job *j);
/* Answer at once, before the turn's commit and sync: only for replies that read nothing a
 * crash could take back from the client's view, /healthz and /metrics (the process's own
 * counters and the core's gauges; docs/controller.md "Answered at once"). */
void ctl_reply_now(struct ctl *c, struct evhttp_request *req, int status, const char *ctype,
                   const void *data, size_t len);
void ctl_reply_json_now(struct ctl *c, struct evhttp_request *req, int status, json_t *body);
void ctl_reply_error(struct ctl *c, struct evhttp_request *req, const struct proto_error *e);
void ctl_reply_errorf(struct ctl *c, struct evhttp_request *req, int status, const char *field,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Ask for a commit at the end of this loop iteration. */
void ctl_commit_soon(struct ctl *c);
/* Commit and send the waiting replies now (shutdown). */
void ctl_commit_now(struct ctl *c);
/* Send the replies of commits up to `gen` (all as 500 when rc < 0). */
void ctl_replies_release(struct ctl *c, uint64_t gen, int rc);

/* written.c: the jobs written since the disk last caught up (the invariant is at the top
 * of written.c). start: track every write of c->store from now on (before the first
 * write that matters: until then no job is durable); stop: forget. synced: every commit
 * up to `synced` is on disk. ctl_job_durable: nothing job j's row, spec or array marker hold is
 * ahead of the disk (false when tracking is off or docketd diverged). */
void ctl_written_start(struct ctl *c);
void ctl_written_stop(struct ctl *c);
void ctl_written_synced(struct ctl *c, uint64_t synced);
bool ctl_job_durable(const struct ctl *c, const struct store_job *j);

/* tls.c: HTTPS on the TCP listener. ctl_tls_start (before anything else starts) decides
 * from the configuration and the listen host (plain only on loopback), loads or makes the
 * certificate, logs its fingerprint; 0 or -errno with err filled. ctl_tls_attach makes a server
 * speak TLS. */
int ctl_tls_start(struct ctl *c, char *err, size_t errlen);
void ctl_tls_attach(struct ctl *c, struct evhttp *h);
/* SIGHUP: the certificate and key read again from their files (a renewed or replaced
 * pair); new connections use them, open ones keep the old. 0, or -errno with err filled
 * and the old pair still served. */
int ctl_tls_reload(struct ctl *c, char *err, size_t errlen);
/* A TLS connection's bufferevent (for conn.c's bevcb), and whether bev is one. */
struct bufferevent *ctl_tls_bev_new(struct ctl *c, struct event_base *base);
bool ctl_tls_bev_is_tls(struct bufferevent *bev);
void ctl_tls_stop(struct ctl *c);

/* secrets.c: per-project secrets, sealed with AES-256-GCM (docs/security.md).
 * ctl_secrets_start loads (or at first start makes) the key file, refusing one others
 * may read: 0 or -errno with err filled. seal writes len + CTL_SECRET_TAG_LEN bytes to
 * out with a fresh nonce; open returns the plain length, or -EBADMSG when the tag does
 * not match (altered value, other key, other project or name). ctl_secret_env opens the
 * secrets a job names ({NAME: value}), or NULL with err saying which one failed and
 * why. */
int ctl_secrets_start(struct ctl *c, char *err, size_t errlen);
/* Key rotation (with the store open, before serving). ctl_secrets_rotate: a new key in
 * KEY.new, every secret re-sealed with it and the rotation audited in one durable
 * transaction, then KEY.new renamed over KEY; on a failure the old key stays and nothing
 * changed. ctl_secrets_recover (every start): a KEY.new left by a rotation that stopped
 * half-way is finished when the database already holds the secrets under it, else
 * removed. 0 or -errno with err filled. */
int ctl_secrets_rotate(struct ctl *c, char *err, size_t errlen);
int ctl_secrets_recover(struct ctl *c, char *err, size_t errlen);
void ctl_secrets_stop(struct ctl *c);
int ctl_secret_seal(const unsigned char key[CTL_SECRET_KEY_LEN], const char *project,
                    const char *name, const void *value, size_t len,
                    unsigned char nonce[CTL_SECRET_NONCE_LEN], unsigned char *out);
int ctl_secret_open(const unsigned char key[CTL_SECRET_KEY_LEN], const char *project,
                    const char *name, const unsigned char nonce[CTL_SECRET_NONCE_LEN],
                    const unsigned char *sealed, size_t sealed_len, unsigned char *out);
json_t *ctl_secret_env(struct ctl *c, const char *project, const json_t *names, char *err,
                       size_t errlen);
/* stream.c: a long reply (status 200, of content_type) sent in slices, one per loop turn,
 * each made when the client has taken the previous one. fill appends the next slice to out
 * and sets *done with the last; a negative return cuts the reply short. free_fn(arg) at
 * the end (also when the client leaves). */
struct ctl_stream;
typedef int (*ctl_stream_fill)(void *arg, struct evbuffer *out, bool *done);
typedef void (*ctl_stream_free)(void *arg);
void ctl_stream_start(struct ctl *c, struct evhttp_request *req, const char *content_type,
                      ctl_stream_fill fill, ctl_stream_free free_fn, void *arg);
void ctl_stream_stop_all(struct ctl *c);
/* jobs.c: at shutdown, the big arrays still being written are dropped (their marker stays:
 * the next start rolls them back) and their clients answered 503. */
void ctl_arrays_stop_all(struct ctl *c);
/* agent.c: answer 503 to the event batches still being applied (their applied events are
 * committed; the agent sends the batch again and those repeat, ignored). */
void ctl_agent_events_stop_all(struct ctl *c);
/* A paged list on top of a stream (stream.c; docs/api.md "Lists"): {"KEY": [rows],
 * "next": "CURSOR"} with at most `limit` rows and `max_bytes` of JSON (a page always has
 * its first row, however long), "next" only when the page was cut. Rows are read by
 * fetch(l, arg, after, max_rows) one slice a loop turn: it reads at most max_rows rows
 * past the cursor `after` (0: the start) and hands each to ctl_list_row (text) or
 * ctl_list_row_json (stolen), stopping when they return 1 (the slice or the page is
 * full) and returning that 1, or 0 at the end of what it read (more may follow when it
 * handed max_rows rows), CTL_LIST_MORE when it skipped rows and more may follow, or < 0 on
 * an error. One cursor per row, an int64 the rows are ordered by. free_fn(arg) at the end. */
#define CTL_LIST_MORE 2
struct ctl_list;
typedef int (*ctl_list_fetch)(struct ctl_list *l, void *arg, int64_t after, int max_rows);
int ctl_list_row(struct ctl_list *l, const char *text, size_t n, int64_t cursor);
int ctl_list_row_json(struct ctl_list *l, json_t *row, int64_t cursor);
/* The paging parameters of r's query: limit (1..10000; *limit holds the default), after,
 * max_bytes (1 KiB .. CTL_LIST_PAGE_BYTES). 0, or -EINVAL after answering 400. */
int ctl_list_params(struct ctl_req *r, int64_t *limit, int64_t *after, size_t *max_bytes);
void ctl_list_start(struct ctl *c, struct evhttp_request *req, const char *key, int64_t limit,
                    int64_t after, size_t max_bytes, ctl_list_fetch fetch, ctl_stream_free free_fn,
                    void *arg);

/* sync.c: the WAL fdatasync helper thread of the pipelined group commit. */
struct ctl_sync;
int ctl_sync_start(struct ctl *c);
void ctl_sync_request(struct ctl *c);
void ctl_sync_stop(struct ctl *c);
/* Parse r->body as a JSON object (an empty body is {} when allow_empty). NULL after
 * replying 400. */
json_t *ctl_body_json(struct ctl_req *r, bool allow_empty);
const char *ctl_query(struct ctl_req *r, const char *key);

/* ------------------------------------------------------------------------------------ */
/* loop.c: the scheduling loop, decisions, restore                                        */

void ctl_cycle_soon(struct ctl *c);
/* Run one cycle now and apply its decisions (used when a reply needs the result). */
void ctl_cycle_now(struct ctl *c);
int ctl_restore(struct ctl *c, char *err, size_t errlen);
int ctl_loop_start(struct ctl *c);
void ctl_loop_stop(struct ctl *c);
/* Persist a job event. */
int ctl_job_event(struct ctl *c, uint64_t job, const char *type, const char *from, const char *to,
                  const char *node, const char *reason, const char *detail) CTL_WUR;
/* Same with before/after already as JSON text (or NULL). */
int ctl_audit_text(struct ctl *c, const char *actor, const char *action, const char *target,
                   const char *before, const char *after, const char *reason) CTL_WUR;
/* Record an audit entry (before/after may be NULL; not stolen). */
int ctl_audit(struct ctl *c, const char *actor, const char *action, const char *target,
              const json_t *before, const json_t *after, const char *reason) CTL_WUR;
/* The rule (docs/controller.md "Core and database together"): a handler writes the store
 * first and changes the core only once the writes succeeded, or undoes its core change
 * when a write fails. Where neither is possible (a decision of the scheduling cycle, which
 * the core already made) a failed write calls this: it logs what was lost and stops
 * docketd (exit 1), as a failed commit does, so a restart reloads the core from the
 * database instead of running on with the two disagreeing. */
void ctl_store_diverged(struct ctl *c, const char *what, uint64_t job);
struct ctl_node *ctl_node_by_name(struct ctl *c, const char *name);
struct ctl_node *ctl_node_at(struct ctl *c, uint32_t index);
/* Create (or return) the controller's record of a node the core already knows. */
struct ctl_node *ctl_node_attach(struct ctl *c, const char *name);
/* Fill core labels from a JSON object of strings; returns how many. */
int ctl_labels_from_json(const json_t *o, struct sched_label *out, int max);
/* Persist the node record (rec) of n, its state taken from the core. */
int ctl_node_save(struct ctl *c, struct ctl_node *n) CTL_WUR;
/* Persist n's record as it will be once the core takes `state`, `reason` and `labels`
 * (JSON text), before the core is changed; n itself is not modified. */
int ctl_node_put(struct ctl *c, const struct ctl_node *n, const char *state, const char *reason,
                 const char *labels) CTL_WUR;
/* Forget every command queued for a node (it was declared unreachable). */
void ctl_node_drop_commands(struct ctl_node *n);
/* Queue a command for a node and wake its parked heartbeat. Steals `cmd`. */
int ctl_node_command(struct ctl *c, struct ctl_node *n, uint64_t job, json_t *cmd);
/* Convert a protocol spec into the core's (id, submit time and owner given). */
void ctl_spec_to_sched(const struct proto_jobspec *p, uint64_t id, int64_t submit_ms,
                       uint64_t array_id, int array_limit, struct sched_job_spec *out);

/* ------------------------------------------------------------------------------------ */
/* Handlers (jobs.c, agent.c, admin.c, logs.c)                                            */

void h_jobs_submit(struct ctl_req *r);
void h_jobs_list(struct ctl_req *r);
void h_job_show(struct ctl_req *r);
void h_job_action(struct ctl_req *r); /* cancel|hold|release|requeue in arg[1] */
void h_job_events(struct ctl_req *r);
void h_job_explain(struct ctl_req *r);
void h_job_logs(struct ctl_req *r);
void h_forecast(struct ctl_req *r);

void h_agent_register(struct ctl_req *r);
void h_agent_heartbeat(struct ctl_req *r);
void h_agent_events(struct ctl_req *r);
void h_agent_logs(struct ctl_req *r);
void h_node_replace(struct ctl_req *r); /* agent.c: node identity */
void h_agent_rotate(struct ctl_req *r);

void h_nodes_list(struct ctl_req *r);
void h_node_show(struct ctl_req *r);
void h_node_drain(struct ctl_req *r);
void h_node_resume(struct ctl_req *r);
void h_node_labels(struct ctl_req *r);
void h_projects_list(struct ctl_req *r);
void h_project_show(struct ctl_req *r);
void h_project_create(struct ctl_req *r);
void h_project_patch(struct ctl_req *r);
void h_project_boost(struct ctl_req *r);
void h_project_unboost(struct ctl_req *r);
void h_project_pause(struct ctl_req *r);
void h_user_default_get(struct ctl_req *r);
void h_user_default_set(struct ctl_req *r);
void h_project_resume(struct ctl_req *r);
void h_tiers(struct ctl_req *r);
void h_classes(struct ctl_req *r);
void h_class_patch(struct ctl_req *r);
void h_policy_get(struct ctl_req *r);
void h_policy_apply(struct ctl_req *r);
void h_audit(struct ctl_req *r);
void h_audit_verify(struct ctl_req *r);
void h_tokens(struct ctl_req *r);
void h_tokens_list(struct ctl_req *r);
void h_token_revoke(struct ctl_req *r);
void h_token_rotate_admin(struct ctl_req *r);
void h_members_list(struct ctl_req *r);
void h_member_add(struct ctl_req *r);
void h_member_remove(struct ctl_req *r);
void h_join_tokens(struct ctl_req *r);
void h_secrets_list(struct ctl_req *r);
void h_secret_put(struct ctl_req *r);
void h_secret_delete(struct ctl_req *r);
void h_healthz(struct ctl_req *r);
void h_metrics(struct ctl_req *r);
/* console.c: the web console's page and assets (public, no data), the one-time login of
 * `docket console` and the caller's identity (docs/console.md) */
void h_console_page(struct ctl_req *r);
void h_console_asset(struct ctl_req *r);
void h_console_code(struct ctl_req *r);
void h_console_session(struct ctl_req *r);
void h_whoami(struct ctl_req *r);

/* usage.c: usage samples (docs/monitoring.md). ctl_usage_apply stores one sample of a
 * job's usage event (read by agent_event_parse) and applies the class's idle rule: 0 or -errno
 * from the store. ctl_usage_prune deletes old samples, a bounded slice per call (the 1 s
 * tick). ctl_usage_explain: what explain says of a running job's usage (a new object).
 * ctl_usage_summary_json: the summary object of the API. */
int ctl_usage_apply(struct ctl *c, struct ctl_node *n, uint64_t id, int run,
                    const struct agent_sample *s) CTL_WUR;
void ctl_usage_prune(struct ctl *c);
json_t *ctl_usage_explain(struct ctl *c, uint64_t id, const char *class_name);
json_t *ctl_usage_summary_json(const struct store_usage_summary *s);
/* A node's latest GPU samples ({source, gpus: [...]}, fresh ones only) for GET /v1/nodes. */
enum { CTL_GPU_SAMPLE_FRESH_MS = 5 * 60 * 1000 };
json_t *ctl_usage_node_json(const struct ctl_node *n);
void h_job_usage(struct ctl_req *r);

/* jobs.c helpers shared with others */
json_t *ctl_job_json(struct ctl *c, const struct store_job *j);
/* The same with the job's spec already parsed (borrowed). */
json_t *ctl_job_json_spec(struct ctl *c, const struct store_job *j, const json_t *spec);
/* The JOB object as the caller of r may see it: env values hidden unless it is the
 * owner, a lead of the job's project or an admin (ctl_authz_sees_env). */
json_t *ctl_job_json_for(struct ctl_req *r, const struct store_job *j);
/* Replace every value of the object `env` (in place) by "<hidden>". */
void ctl_env_redact(json_t *env);
/* Write STATE_DIR/admin.token (0600, atomically) with `tok`. 0 or -errno. */
int ctl_admin_token_write(struct ctl *c, const char *tok);
/* Save a project's stored document (spec + boost) from the core. */
int ctl_project_save(struct ctl *c, const char *name, const char *boost_reason) CTL_WUR;
json_t *ctl_project_json(struct ctl *c, const struct sched_project_view *v);
/* Remember the reason of a project's boost (restart). */
void ctl_project_boost_reason(struct ctl *c, const char *name, const char *reason);
/* Persist the current policy document. */
int ctl_policy_save(struct ctl *c) CTL_WUR;
/* Issue a user token for t->user with t->role (both filled by the caller) that lives
 * ttl_ms: stored (its hash), audited as `actor`'s token.issue; the token text into tok.
 * 0, or -1 with e filled. */
int ctl_token_issue(struct ctl *c, const char *actor, struct store_token *t, int64_t ttl_ms,
                    char *tok, size_t toklen, struct proto_error *e) CTL_WUR;
/* The reply to a new token: {"token", "id", "user", "role", "expires_ms"}. */
json_t *ctl_token_json(const char *tok, const struct store_token *t);
/* Random token "PREFIX" + 64 hex chars into out (>= 80 bytes). */
int ctl_random_token(const char *prefix, char *out, size_t len);
void ctl_hist_observe(struct ctl_hist *h, double v);
/* turns.c: time a callback of ours (enter returns its start, leave adds it to the turn
 * it ran in by kind); see turns.c for what a turn is. */
void ctl_turns_init(struct ctl *c);
int64_t ctl_turn_enter(struct ctl *c);
void ctl_turn_leave(struct ctl *c, enum ctl_turn_kind kind, int64_t t0);
/* A job of `tier` started after waiting `seconds` (metrics.c). */
void ctl_metrics_queue_wait(struct ctl *c, const char *tier, double seconds);
void ctl_logs_job_ended(struct ctl *c, uint64_t job);
/* loop.c: the classes' node fields. Take a parsed policy's (a class that does not give a
 * field keeps its earlier value); a class's (zeros when none); and the same added to the
 * classes list of a policy document about to be saved or shown (pp: the document being
 * applied, or NULL for the current). */
void ctl_class_nodes_take(struct ctl *c, const struct proto_policy *pp);
struct proto_class_node ctl_class_node(const struct ctl *c, const char *name);
void ctl_class_nodes_json(const struct ctl *c, json_t *classes, const struct sched_policy *p,
                          const struct proto_policy *pp);
/* The run `run` of job `job` (0: its latest), if node `node` may post events or output for
 * it (the run was placed there; for output, on its rank 0): 0 with *out filled, or
 * -EPERM/-ENOENT/-EIO with e filled (403 / 404 / 500), `field` named. */
int ctl_run_for_node(struct ctl *c, const char *node, uint64_t job, int run, bool output,
                     const char *field, struct store_run *out, struct proto_error *e);
void ctl_logs_stop(struct ctl *c);

/* ------------------------------------------------------------------------------------ */
/* alerts.c: graded alerts (docs/alerts.md). ctl_alerts_take keeps a parsed policy's
 * alerts and prices (those it has); ctl_ops_json adds the current ones (or pp's) to a
 * policy document, webhook URLs and secrets hidden when redact. start (after restore):
 * silences, alerts firing before the restart, the delivery thread, the round timer.
 * The hooks note failures for the event rules. ctl_alerts_round runs one round now.
 * ctl_alerts_job_idle (usage.c, at each sample) keeps whether a job's current idle stretch
 * is flagged (flagged_ms != 0, idle_since_ms != 0): the input of the gpu_idle rules,
 * which fire per such job while it runs and resolve when it is busy again or ends. */
struct ctl_alerts;
void ctl_alerts_take(struct ctl *c, const struct proto_policy *pp);
void ctl_ops_json(struct ctl *c, json_t *doc, const struct proto_policy *pp, bool redact);
const struct proto_prices *ctl_prices(struct ctl *c);
int ctl_alerts_start(struct ctl *c);
void ctl_alerts_stop(struct ctl *c);
void ctl_alerts_round(struct ctl *c);
void ctl_alerts_job_failed(struct ctl *c, uint64_t job, const char *project, const char *state,
                           const char *node);
void ctl_alerts_reclaim_failed(struct ctl *c, const char *node, uint64_t job, const char *msg);
void ctl_alerts_job_idle(struct ctl *c, uint64_t job, int64_t idle_since_ms, int64_t flagged_ms,
                         int below);
/* For /metrics: {"rule=\"R\",severity=\"S\"": instances firing (silenced ones too)} for
 * every rule of the policy (0 when none fires). A new reference. */
json_t *ctl_alerts_firing_counts(struct ctl *c);
void h_alerts_list(struct ctl_req *r);
void h_alerts_history(struct ctl_req *r);
void h_silences_list(struct ctl_req *r);
void h_silence_add(struct ctl_req *r);
void h_silence_delete(struct ctl_req *r);
/* reports.c (docs/reports.md) */
void h_report_usage(struct ctl_req *r);
void h_report_capacity(struct ctl_req *r);

#endif
