/*
 * ctl.h - docketd's shared state: struct ctl and the per-node records it holds, shared by
 * the files of src/controller/ (not a public API). What each file does with it is
 * declared in that file's own header (jobs.h for jobs.c, loop.h for loop.c ...).
 *
 * One libevent loop owns everything below: the core model (struct sched), the store,
 * the HTTP servers, the per-node command queues and the replies that wait for the group
 * commit. Nothing here is thread-safe, by design (docs/architecture.md "One thread owns
 * the state").
 *
 * Request life: http.c authenticates and routes, opens a savepoint, calls the handler;
 * the handler writes the store, then changes the core (ctl_store_diverged in loop.h says
 * why and what happens when that order is impossible), and answers with ctl_reply*();
 * a reply made while a transaction is open waits in the commit queue, and a zero-timeout
 * event commits once for the whole loop iteration before sending every reply that waited.
 */
#ifndef DOCKET_CONTROLLER_CTL_H
#define DOCKET_CONTROLLER_CTL_H

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "controller/anchor.h"
#include "controller/config.h"
#include "controller/console.h"
#include "controller/live.h"
#include "controller/metrics.h"
#include "controller/secrets.h"
#include "controller/turns.h"
#include "core/sched.h"
#include "protocol/agent_msg.h"
#include "protocol/proto.h"
#include "store/store.h"

/* Every function that writes to the store says so: its result must be looked at. */
#define CTL_WUR __attribute__((warn_unused_result))

/* A command queued for an agent, re-sent until acknowledged. */
struct ctl_cmd {
    int64_t seq;
    uint64_t job;
    json_t *json; /* the CMD object of docs/api.md, owned */
    struct ctl_cmd *next;
};

struct ctl_node {
    char name[64];
    struct store_node rec;  /* as stored (labels/info owned by rec) */
    int64_t last_hb_ms;     /* monotonic ms of the last heartbeat (0: none yet) */
    int64_t lease_check_ms; /* lease.c: monotonic ms of the next look at its jobs' leases */
    bool reconciled;        /* first heartbeat after a restart of either side seen */
    /* the jobs its last heartbeat listed (an agent keeps a finished job there until its
     * output is all shipped: logs.c waits for them); held_known: one heartbeat seen */
    uint64_t *held;
    size_t nheld;
    bool held_known;
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
    /* deps.c: the last array found ended whole (tasks, failed): how it ended no longer
       changes, and each task of a big array that waits on it asks again */
    uint64_t ended_array_id;
    int64_t ended_array_tasks, ended_array_failed;
    bool shutting_down;
    int state_lock;       /* STATE_DIR/docketd.lock, held while docketd runs (dbrestore.c) */
    bool standby;         /* leader.c: waiting to lead; every request answered 503 */
    char leader_url[256]; /* leader.c: where the leader serves, for a standby's answers */
    int listen_port;      /* http.c: the TCP port bound (0: none) */
    int exit_code;

    struct ctl_node **nodes; /* indexed by the core's node index */
    size_t nnodes, nodes_alloc;

    struct event *commit_ev; /* zero-timeout: commit then send queued replies */
    struct ctl_reply *replies, *replies_tail;
    uint64_t commit_gen; /* commits so far */
    uint64_t synced_gen; /* commits known to be on disk */
    /* the audit head (anchor.c): rows written in the open transaction, the commit that
     * holds some not published yet, and what was published last */
    bool audit_dirty;
    uint64_t audit_publish_gen;
    struct ctl_audit_head audit_pending; /* read at that commit */
    struct ctl_audit_head audit_head;
    struct ctl_written *written;   /* written.c: jobs written since synced_gen */
    struct ctl_rowcache *rowcache; /* rowcache.c: GET /v1/jobs rows as last sent (lazy) */
    struct ctl_sync *sync;         /* the fdatasync helper (sync.c) */
    struct event *cycle_ev;        /* debounced and periodic scheduling cycle */
    bool cycle_pending;
    int64_t last_cycle_us; /* cost of the last cycle (adaptive debounce) */
    int64_t cycle_at_ms;
    struct event *tick_ev; /* 1 s: node timeouts */
    struct event *sig_term, *sig_int, *sig_hup;

    struct ctl_log_waiter *log_waiters; /* logs.c */
    /* each class's node fields (pids_max, default_mem, idle, lease) by class name: the core does
     * not know them; the start command carries them (loop.c) */
    struct ctl_class_node {
        char name[SCHED_NAME_MAX];
        struct proto_class_node n;
    } class_nodes[SCHED_MAX_CLASSES];
    int nclass_nodes;
    json_t *boost_reasons; /* project name -> reason of its current boost */
    bool req_failed;       /* the running handler answered an error: roll back */
    bool diverged;         /* a write the core could not undo failed: stopping */
    struct ctl_metrics metrics;
    /* templates.c: the job environment templates of the policy */
    struct proto_templates *templates;
    json_t *gpu_aliases, *partitions; /* site.c: the Slurm site's sections of the policy */
    json_t *node_labels;              /* site.c: labels the policy gives nodes by name */
    struct ctl_alerts *alerts;        /* alerts.c */
    struct ctl_services *services;    /* services.c */
    struct ctl_lb *lb;                /* lb.c: the services' HAProxy */
    struct ctl_storage *storage;      /* storage.c */
    struct ctl_lifecycle *lifecycle;  /* lifecycle.c */
    struct ctl_warm *warm;            /* warm.c: warm environment requests and states */
    struct ctl_logarch *logarch;      /* logarch.c */
    struct ctl_net *net;              /* network.c */
    struct ctl_conns *conns;          /* conn.c */
    struct ctl_stream *streams;       /* stream.c: replies being sent in slices */
    struct ctl_live live;             /* live.c: topic versions, change streams */
    struct ctl_tty_end *ttys;         /* tty.c: terminal streams parked, waiting or joined */
    struct ctl_backup *backup;        /* backup.c: the one backup being made or sent */
    struct ctl_array *arrays;         /* jobs.c: big arrays being written in slices */
    json_t *submit_buckets;           /* user -> [tokens, last mono ms] (jobs.c) */
    int64_t idem_pruned_ms;           /* the last prune of submission keys (idem.c) */
    json_t *cycle_specs;              /* spec_id -> parsed spec, for one cycle (loop.c) */
    json_t *step_hosts;    /* "JOB.RUN" -> {RANK: "HOST:PORT"}: srun's step hosts (agent.c) */
    int cycle_spec_parses; /* specs parsed by the cycle in progress (its debug line) */
    struct ctl_turn turn;  /* turns.c: the loop turn in progress */
    /* agent.c: event batches applied CTL_AGENT_EVENTS_SLICE events a turn, in order */
    struct ctl_ev_batch *ev_batches, *ev_batches_tail;
    struct event *ev_batch_ev;
    /* http.c: heartbeats past CTL_HEARTBEATS_PER_TURN in a turn, waiting for the next */
    struct ctl_hb_wait *hb_waiting, *hb_waiting_tail;
    struct event *hb_wait_ev;
    int64_t fd_limit, conn_cap;
    int64_t conn_reserve; /* of conn_cap, never held by unproven connections (conn.c) */
    int listen_backlog;
    /* console.c: the one-time login codes `docket console` asked for */
    struct ctl_console_code console_codes[CTL_CONSOLE_CODES];
};

#endif
