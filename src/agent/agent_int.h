/*
 * agent_int.h - what the pieces of docket-node's agent share (private to src/agent): the
 * agent's state (struct agent), its job table entries (struct ajob), the event queue, and
 * the functions each piece offers the others:
 *   agent.c       the loop's life cycle: set-up, signals, the tick (health check, usage
 *                 samples, supervisors watched), restart recovery, tear-down
 *   agent_jobs.c  the job table: launching supervisors (spares included), applying stop
 *                 commands, reclaiming after a dead supervisor, adopting jobs after a
 *                 restart, retiring reported jobs
 *   agent_http.c  the controller link: register, heartbeat long poll and its commands,
 *                 the event queue and its posts, the fencing lease renewed at each contact
 *   logship.c     shipping the jobs' stdout/stderr increments to the controller
 *   agent_tty.c   interactive sessions' terminals joined to docketd
 *   storage.c     the pools and project areas docketd names: checks, quotas, usage
 *   lifecycle.c   the lifecycle runs docketd hands the node: moves and deletes in a child
 *   probe.c       service replicas: their ports ($PORT) and their probes, run and reported
 * See agent.h and docs/agent.md.
 */
#ifndef DOCKET_AGENT_AGENT_INT_H
#define DOCKET_AGENT_AGENT_INT_H

#include <event2/util.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/agent.h"
#include "agent/cgroup.h"
#include "agent/supervisor.h"
#include "protocol/agent_msg.h"
#include "util/fingerprint.h"

struct evhttp_request;
struct bufferevent;
struct ag_tty;
struct ag_lifecycle;
struct ag_warm;

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
     * under the run's number (the start command's job.run) at offset sent[s] of that
     * run, so a requeued run's output is its own, never taken for a repeat of an
     * earlier run's. Once the job has ended and all is out, a chunk marked final tells
     * the controller the run's stream is complete. */
    int run;                  /* the controller's run number, 0 = not known */
    int64_t sent[2];          /* bytes of this run the controller has */
    bool final_sent[2];       /* the controller has the stream's final chunk */
    int64_t log_hold_until;   /* the controller took nothing last time: wait */
    pid_t reclaim_pid;        /* a child reclaiming a dead supervisor's cgroup */
    int gpus[AGENT_MAX_GPUS]; /* held until the supervisor reports the reclaim */
    int ngpus;
    int64_t ended_mono;
    bool stop_sent;     /* a stop (signal or kill) reached its supervisor */
    bool tty;           /* an interactive session: its terminal is offered (agent_tty.c) */
    bool net;           /* it runs under network rules: its refusals are sampled (supnet.h) */
    bool step_reported; /* its step host's port went to docketd */
    bool prep_reported; /* its template's prepare (supwarm.c) went to docketd */
    char prep_key[AGENT_MESSAGE_MAX + 1]; /* NAME@VERSION or "image REF": "prepared" once set up */
    int port;                             /* a service replica's port (probe.c), 0: none */
    struct ajob *next;
};

/* A start command whose GPUs are still held by a job told to stop: when the first node of
 * a job of several nodes ends, the controller frees the whole allocation and kills the
 * other ranks, and may give their GPUs out before those ranks are reclaimed here. The
 * start waits (AG_START_DEFER_MS at most) for the holder's reclaim rather than fail. */
struct deferred_start {
    struct agent_cmd cmd; /* own reference to cmd.job */
    int64_t deadline;     /* monotonic: launch or fail by then */
    struct deferred_start *next;
};
#define AG_START_DEFER_MS 30000

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

enum { AG_MAX_CONTROLLERS = 8 };

struct agent {
    struct agent_config cfg;
    struct sup_config sup;
    struct cg_layout cg;
    struct event_base *base;
    struct event *sigchld, *sigterm, *sigint, *tick, *hb_retry, *post_kick, *spare_ev;
    char host[256]; /* the controller in use: one of `controllers` */
    int port;
    /* --controller URL1,URL2 (an active/standby pair): tried in turn after failures */
    struct ag_controller {
        char host[256];
        int port;
    } controllers[AG_MAX_CONTROLLERS];
    int ncontrollers, cur_controller;
    struct evhttp_connection *hb_conn, *post_conn; /* made by ag_conn (agent_tls.c) */
    bool tls;                                      /* https:// controller */
    void *tls_ctx;                                 /* its SSL_CTX */
    bool tls_pinned;
    unsigned char tls_pin[FPR_LEN];
    char credential[256];
    int64_t cred_issued_ms, cred_expires_ms; /* wall clock; expires 0 = never */
    int64_t rotate_retry;                    /* monotonic: no rotation before (a failed one) */
    bool registered, hb_inflight, post_inflight;
    int64_t wait_ms;
    int64_t ack;
    int ack_fd;
    int64_t backoff_ms, post_backoff_until;
    int post_failures, hb_failures;
    struct ajob *jobs;               /* live jobs and ended ones not yet acknowledged */
    struct ag_tty *ttys;             /* agent_tty.c: the sessions' links to docketd */
    struct deferred_start *deferred; /* starts waiting for their GPUs, in order */
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
    /* a start command's network rules could not be enforced here (no nft, not root):
     * UNHEALTHY with this reason until a re-check at net_next finds them enforceable */
    char net_msg[256];
    int64_t net_next;
    int health_pid, health_fd;
    int64_t health_next, health_started;
    char health_out[512];
    size_t health_len;
    int64_t usage_next, cleanup_next;
    bool stopping;
    int gpu_minor[INV_MAX_GPUS]; /* the device minor of each GPU (for the supervisors) */
    /* storage.c: the pools and areas docketd named, the check in a child, its report */
    struct storage_config stor_cfg;
    bool stor_have_cfg, stor_has_rep, stor_hung;
    struct storage_report stor_rep;
    pid_t stor_pid;
    int64_t stor_started, stor_next, stor_checked_gen;
    struct ag_lifecycle *lc; /* lifecycle.c: the lifecycle runs docketd handed this node */
    struct ag_warm *warm;    /* warmer.c: the templates docketd asked this node to warm */
    struct ag_probe *probes; /* probe.c: the replicas' probes */
    int port_next;           /* probe.c: where the next port search starts */
};

/* agent.c: write STATE_DIR/NAME (a rename of a fresh file). 0 or -errno. */
int ag_write_small(const struct agent *a, const char *name, const char *text, mode_t mode);

/* agent_jobs.c: the job table, launches, reclaims, adoption */
struct ajob *ag_job_find(struct agent *a, uint64_t id);
void ag_job_remove(struct agent *a, struct ajob *dead);
void ag_queue_exit(struct agent *a, struct ajob *j);
void ag_job_finished(struct agent *a, struct ajob *j);
bool ag_reclaim_done(struct agent *a, pid_t pid, int status);
void ag_kick_spare(struct agent *a);
void ag_spare_cb(evutil_socket_t fd, short what, void *arg);
void ag_apply_start(struct agent *a, const struct agent_cmd *c);
void ag_apply_stop(struct agent *a, const struct agent_cmd *c);
/* Rank 0 of a Slurm-style job: where a rank's step host listens, passed to the job's
 * supervisor (which writes it for srun); dropped when the job does not run here (yet):
 * docketd sends them all again when rank 0 starts. */
void ag_apply_step_host(struct agent *a, const struct agent_cmd *c);
void ag_apply_notify(struct agent *a, const struct agent_cmd *c); /* scancel --signal */
void ag_apply_limit(struct agent *a, const struct agent_cmd *c);  /* a lowered limit */
/* A rank > 0 whose supervisor opened the step host's socket: its port, to docketd. */
void ag_report_step_port(struct agent *a, struct ajob *j);
/* The job's supervisor is building its template's environment (JOBDIR/preparing names
 * NAME@VERSION): a "preparing" event, once; "prepared" once its set-up is done. */
void ag_report_preparing(struct agent *a, struct ajob *j, const char *dir);
void ag_report_prepared(struct agent *a, struct ajob *j);
/* Launch (or fail) the deferred starts whose GPUs are free or whose time is up. */
void ag_retry_deferred(struct agent *a);
bool ag_is_deferred(const struct agent *a, uint64_t id);
void ag_deferred_free(struct agent *a);
void ag_retire(struct agent *a, struct ajob *j);
void ag_adopt(struct agent *a, uint64_t id, const char *dir);
void ag_sweep_spares(struct agent *a);

/* agent_http.c: the controller link and the event queue */
void ag_queue_event(struct agent *a, json_t *ev, uint64_t exit_job);
void ag_kick_post(struct agent *a);
struct evhttp_request *ag_new_request(struct agent *a, void (*cb)(struct evhttp_request *, void *),
                                      void *cbarg, json_t *body, bool auth);
json_t *ag_reply_json(struct evhttp_request *req, int *code);
int64_t ag_fence_margin(const struct agent *a);
void ag_heartbeat(struct agent *a);
void ag_hb_retry_cb(evutil_socket_t fd, short what, void *arg);
void ag_post_failed(struct agent *a, const char *why);
void ag_post_next(struct agent *a);
void ag_post_kick_cb(evutil_socket_t fd, short what, void *arg);
bool ag_rotate_due(const struct agent *a);

/* agent_tls.c: trust in the controller and the connections to it. ag_tls_init checks the
 * URL's scheme against the host (plain http:// only to loopback) and sets up TLS: 0 or
 * -errno with err filled. ag_conn returns the connection of `slot` to send a request on,
 * making it (again, for TLS, once its socket is gone): NULL when out of memory. */
int ag_tls_init(struct agent *a, char *err, size_t errlen);
struct evhttp_connection *ag_conn(struct agent *a, struct evhttp_connection **slot, int timeout_s);
/* A bufferevent to the controller, TLS when https://, not connected yet (agent_tls.c). */
struct bufferevent *ag_controller_bev(struct agent *a);
/* agent_tty.c: every running session's terminal offered to docketd (each tick and at a
 * session's start); all links closed (tear-down). */
void ag_tty_tick(struct agent *a);
void ag_tty_free_all(struct agent *a);
void ag_tls_free(struct agent *a);

/* probe.c: a port of --service-ports for a replica (0: no range configured; -EADDRINUSE:
 * none free); its probes started from its start command's, or from its job.json after a
 * restart of the agent (ag_probes_adopt); stopped when the job ends (job 0: all); a child
 * of theirs reaped (true when pid was one). */
int ag_port_take(struct agent *a);
void ag_probes_start(struct agent *a, struct ajob *j, const struct agent_job *spec);
void ag_probes_adopt(struct agent *a, struct ajob *j, const json_t *job);
void ag_probes_stop(struct agent *a, uint64_t job);
bool ag_probe_reaped(struct agent *a, pid_t pid, int status);

/* logship.c: the jobs' output on its way to the controller */
bool ag_ship_log(struct agent *a, struct ajob *j);
bool ag_logs_pending(const struct agent *a, const struct ajob *j);

#endif
