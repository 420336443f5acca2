/*
 * agent_msg.h - the JSON shapes of the agent API (docs/api.md "Agent endpoints"), shared by
 * docketd and docket-node: the register body and reply, the heartbeat body and its reply
 * of commands (start / signal / kill), the events and log-chunk bodies.
 *
 * Parsers validate everything (types, ranges, unknown fields) and fill a struct proto_error
 * (protocol/error.h) naming the JSON path of the bad input ("job.gpus[2]",
 * "commands[0].seq", "events[1].exit.kind"). They return 0 or a negative errno (-EINVAL for
 * bad input, status 400; -ENOMEM, status 500). Builders return a new jansson reference
 * (NULL only when out of memory). The readers of the bodies an agent posts (register,
 * heartbeat, events, rotate, log chunks) are docketd's only readers of them.
 *
 * This header depends on jansson and libc only, so the agent links it without the core.
 */
#ifndef DOCKET_PROTOCOL_AGENT_MSG_H
#define DOCKET_PROTOCOL_AGENT_MSG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/error.h"
#include "protocol/network.h"
#include "protocol/lifecycle.h"
#include "protocol/service.h"
#include "protocol/storage.h"
#include "protocol/warm.h"

#define AGENT_REGISTRY_AUTH_ENV "DOCKET_REGISTRY_AUTH"

/* The fencing margin of docs/agent.md "Fencing and leases", one definition for both sides: a node
 * cut off stops its jobs at node_timeout - margin after the controller last answered it,
 * and the controller requeues them no sooner than node_timeout + margin after it last
 * heard the node. margin = min(configured, node_timeout / 3); the agent's configured
 * margin is --fence-margin, the controller's the default. */
enum { AGENT_FENCE_MARGIN_DEFAULT_MS = 10000 };
static inline int64_t agent_fence_margin_ms(int64_t node_timeout_ms, int64_t configured_ms)
{
    int64_t third = node_timeout_ms / 3;
    return configured_ms < third ? configured_ms : third;
}

/* A job's lease (docs/agent.md "Fencing and leases"), one definition for both sides: the job's own
 * lease_ms (its class's, granted at its start) but never shorter than the node timeout.
 * The agent fences the job `margin` before it runs out, counted from the last answered
 * request; the controller declares it lost no sooner than `margin` after it, counted from
 * the last request it heard. */
#define AGENT_LEASE_MAX_MS ((int64_t)7 * 86400 * 1000)
static inline int64_t agent_lease_ms(int64_t job_lease_ms, int64_t node_timeout_ms)
{
    return job_lease_ms > node_timeout_ms ? job_lease_ms : node_timeout_ms;
}

enum {
    AGENT_NAME_MAX = 64,
    AGENT_MAX_GPUS = 64,
    AGENT_MAX_NODES = 512,
    AGENT_MAX_ARGS = 4096,
    AGENT_MAX_ENV = 1024,
    AGENT_MAX_COMMANDS = 4096,
    AGENT_MAX_CPUS = 4096,
    AGENT_MAX_EVENTS = 10000,      /* events in one POST /v1/agent/events */
    AGENT_MAX_HB_JOBS = 100000,    /* jobs in one heartbeat */
    AGENT_MESSAGE_MAX = 1024,      /* an event's message, an exit's message (bytes) */
    AGENT_HEALTH_MSG_MAX = 255,    /* a heartbeat's health.message (bytes) */
    AGENT_WAIT_DEFAULT_MS = 25000, /* a heartbeat's long poll when it says none */
    AGENT_WAIT_MAX_MS = 600000,
};

/* The job of a start command. Strings are owned (free with agent_job_release). */
struct agent_job {
    uint64_t id;
    char name[128];
    char project[AGENT_NAME_MAX], tier[AGENT_NAME_MAX], class_name[AGENT_NAME_MAX];
    char user[AGENT_NAME_MAX]; /* "" = run as the agent's user */
    char **argv;               /* NULL-terminated, or NULL when script is set */
    int argc;
    char *script;         /* or NULL */
    char *workdir;        /* NULL or "" = the user's home, else / */
    char *output, *error; /* NULL = STATE_DIR/jobs/ID/stdout|stderr */
    char **env;           /* "KEY=VALUE", NULL-terminated (never NULL) */
    int nenv;
    /* The job's secrets, "KEY=VALUE" like env (NULL when none). Held in memory only:
     * agent_job_to_json leaves them out, so no file of the agent ever holds them; the
     * supervisor gets them by fork or over its pipe (agent_job_secret_env_json). */
    char **secret_env;
    int nsecret;
    /* ... among them, under AGENT_REGISTRY_AUTH_ENV, the registry's credentials for a
     * docker:// image (the secret the job's or its template's registry_auth names): the
     * node writes them into an authfile for skopeo and keeps them out of the job's env */
    int gpus[AGENT_MAX_GPUS];
    int ngpus;
    int cpus;              /* 0 = no CPU quota */
    int64_t mem_mb;        /* 0 = no memory limit */
    int64_t time_limit_ms; /* 0 = none */
    int signal;            /* checkpoint signal, 0 = SIGTERM */
    int64_t grace_ms;
    char **nodelist; /* NULL-terminated (never NULL) */
    int nnodes;
    int node_rank, world_size;
    char master_addr[256];
    int master_port;
    int array_index;
    int run;          /* the job's run number (1, 2, ...: one per start), 0 = not given */
    int64_t pids_max; /* the class's pids.max, 0 = the node's default (--job-pids-max) */
    /* How long the job outlives silence of the controller: it is fenced lease_ms - margin
     * after the last answered request (never sooner than node_timeout - margin); 0 = the
     * node timeout's lease (docs/agent.md "Fencing and leases"). */
    int64_t lease_ms;
    uint64_t array_id; /* the array's first job, 0 = not an array element */
    /* An interactive session (docs/interactive.md): the job runs on a PTY and ends after
     * this long without input or output; 0 = an ordinary job. */
    int64_t tty_idle_ms;
    /* The job's environment template's `module load` names and setup script
     * (docs/environments.md), which the job's shell runs before its command; NULL when
     * none. modules is NULL-terminated. */
    char **modules;
    int nmodules;
    char *setup;
    /* The template's prepare script, built once per node under its NAME@VERSION (the
     * key) and reused by every later job of that version; NULL when none. */
    char env_key[80];
    char *prepare;
    /* The container the job runs in (docs/environments.md "Containers"): its image
     * reference (protocol/container.h), NULL for a job on the node's own system; its
     * mounts "SRC:DST[:ro]" (NULL-terminated, or NULL); the working directory inside it
     * (NULL: the job's workdir). */
    struct agent_container {
        char *image;
        char **mounts;
        int nmounts;
        char *workdir;
    } container;
    /* A job read from sbatch options (docs/slurm.md): the batch script runs on the
     * first node only, with Slurm's environment; srun starts the tasks. */
    struct agent_slurm {
        bool on;
        int ntasks, ntasks_per_node, cpus_per_task, gpus_per_task;
        int signal;        /* sent signal_before seconds before the limit (--signal) */
        int signal_before; /* -1 = none */
        bool signal_batch; /* to the batch shell only (--signal=B:...) */
        char *submit_dir;  /* or NULL */
        char step_key[80]; /* a job of several nodes: srun's key to the step hosts */
        char **step_hosts; /* each node's address by rank (its step host listens there on a
                            * port the kernel picks), NULL-terminated, or NULL */
        int nstep_hosts;
        char **args; /* the batch script's arguments (sbatch job.sh ARG...), or NULL */
        /* the partition it runs in (SLURM_JOB_PARTITION): the site's, or "docket" when it
         * has none (sinfo's name for every node); "" from a controller before: its tier */
        char partition[AGENT_NAME_MAX];
    } slurm;
    /* The job's network boundary (docs/network.md): a namespace of its own with this
     * address, peers and allow-list; NULL = the node's network. Owned. */
    struct net_job *net;
    /* A replica of a service (docs/services.md): "service": {"port": true, "liveness":
     * PROBE, "readiness": PROBE}. port: the agent gives it a port of its --service-ports
     * range ($PORT) and reports it in the started event; the probes (read by
     * proto_probe_parse, kind NONE when absent) the agent runs and reports, nothing more. */
    bool service;
    bool service_port;
    struct proto_probe liveness, readiness;
};

/* The secret_env of a start command: parse into j (replacing any), or build it back as
 * an object (a new reference) to hand to a supervisor. */
int agent_job_parse_secret_env(const json_t *v, struct agent_job *j,
                               struct proto_error *err) PROTO_WUR;
json_t *agent_job_secret_env_json(const struct agent_job *j);

void agent_job_init(struct agent_job *j);
void agent_job_release(struct agent_job *j);
/* Validate and fill from the "job" object of a start command. On error `j` is released. */
int agent_job_parse(const json_t *obj, struct agent_job *j, struct proto_error *err) PROTO_WUR;
/* The same object back (the agent stores it in its state directory). */
json_t *agent_job_to_json(const struct agent_job *j);

/* STEP_HOST: to rank 0 of a Slurm-style job, where rank `rank`'s step host listens
 * ("HOST:PORT", the port its node reported in a step_host event; docs/slurm.md "srun").
 * NOTIFY: a signal for a running job that does not stop it (scancel --signal): to
 * `to` AGENT_NOTIFY_ALL its processes, _BATCH its leader (the batch shell), _STEPS every
 * process but the leader.
 * LIMIT: a running job's time limit went down (scontrol update TimeLimit=): the node ends
 * it at the new one, and a Slurm job's --signal warning moves to T before it. */
enum agent_cmd_type {
    AGENT_CMD_START,
    AGENT_CMD_SIGNAL,
    AGENT_CMD_KILL,
    AGENT_CMD_STEP_HOST,
    AGENT_CMD_NOTIFY,
    AGENT_CMD_LIMIT
};
enum agent_notify_to { AGENT_NOTIFY_ALL, AGENT_NOTIFY_BATCH, AGENT_NOTIFY_STEPS };

struct agent_cmd {
    int64_t seq;
    enum agent_cmd_type type;
    uint64_t job_id;
    int signal;            /* SIGNAL, NOTIFY */
    int notify_to;         /* NOTIFY: enum agent_notify_to */
    int64_t grace_ms;      /* SIGNAL */
    int64_t time_limit_ms; /* LIMIT: the new limit, from the job's start */
    json_t *job;           /* START: the job object (own reference) */
    int rank;              /* STEP_HOST */
    char addr[320];        /* STEP_HOST: "HOST:PORT" */
};

struct agent_heartbeat_reply {
    struct agent_cmd *cmds; /* owned */
    size_t ncmds;
    char node_state[32];
    struct storage_config *storage;  /* owned; NULL when the reply has none */
    struct lifecycle_run *lifecycle; /* owned; runs to start (protocol/lifecycle.h) */
    size_t nlifecycle;
    struct warm_order *warm; /* owned; templates to make warm (protocol/warm.h) */
    size_t nwarm;
};

/* {"commands": [CMD...], "node_state": "UP", "storage": {...}}: a malformed command (or
 * storage object, protocol/storage.h) fails the whole reply;
 * the start job objects are only checked to be objects (agent_job_parse does the rest,
 * so one bad job is reported against that job, not the whole reply). */
int agent_heartbeat_reply_parse(const json_t *body, struct agent_heartbeat_reply *out,
                                struct proto_error *err) PROTO_WUR;
void agent_heartbeat_reply_release(struct agent_heartbeat_reply *r);
/* Command builders (the controller's side of the same shapes). */
json_t *agent_cmd_to_json(const struct agent_cmd *c);

/* Register. */
struct agent_node_info {
    char name[AGENT_NAME_MAX];
    char gpu_type[AGENT_NAME_MAX];
    int gpus;
    int64_t gpu_mem_mb;
    char **gpu_uuids; /* ngpu_uuids entries, may be NULL */
    int ngpu_uuids;
    int cpus;
    int64_t mem_mb;
    json_t *labels; /* object of strings, borrowed; may be NULL */
    char addr[256];
    char job_net[32]; /* the node's job range (docs/network.md), "" = none */
};
json_t *agent_register_body(const struct agent_node_info *n, const char *join_token,
                            const char *version);

/* The register body as docketd reads it, in two steps: agent_register_parse reads the
 * body's own fields (and peeks at node.name), docketd checks the caller's right to the
 * name (join token or credential), and only then agent_register_node_parse reads the
 * node, so that a caller without that right hears 401/403 before any word on its node.
 * Strings and the parts docketd keeps as they came are borrowed from the body. */
struct agent_registration {
    const char *join_token;    /* NULL when absent (the caller's credential then) */
    const char *agent_version; /* NULL when absent */
    const char *name;          /* node.name when it is a string, else NULL (not checked) */
    /* agent_register_node_parse: */
    char node_name[AGENT_NAME_MAX];
    char gpu_type[AGENT_NAME_MAX]; /* "" = none (a node without GPUs) */
    int gpus, cpus;
    int64_t gpu_mem_mb, mem_mb;
    json_t *labels;    /* object of names (at most SCHED_MAX_LABELS), or NULL */
    json_t *gpu_uuids; /* array of strings, or NULL */
    json_t *addr;      /* string, or NULL */
    json_t *job_net;   /* the node's job range "10.200.1.0/24" (docs/network.md), or NULL */
};
int agent_register_parse(const json_t *body, struct agent_registration *out,
                         struct proto_error *err) PROTO_WUR;
int agent_register_node_parse(const json_t *body, struct agent_registration *out,
                              struct proto_error *err) PROTO_WUR;

struct agent_register_reply {
    char credential[256];
    char node[AGENT_NAME_MAX];
    int64_t heartbeat_wait_ms, node_timeout_ms;
    int64_t credential_expires_ms; /* wall clock ms; 0 = never (or not said) */
};
/* The rotate reply (POST /v1/agent/rotate) has the same shape, credential and expiry; its
 * body is {"node": NAME}. */
json_t *agent_rotate_body(const char *node);
/* The rotate body as docketd reads it: nothing but "node" (read by agent_body_node). */
int agent_rotate_parse(const json_t *body, struct proto_error *err) PROTO_WUR;
int agent_register_reply_parse(const json_t *body, struct agent_register_reply *out,
                               struct proto_error *err) PROTO_WUR;

/* Heartbeat body. */
struct agent_job_status {
    uint64_t id;
    const char *state; /* "starting", "running", "stopping", "exited" */
    int pid;
};
json_t *agent_heartbeat_body(const char *node, int64_t ack, int64_t wait_ms, bool health_ok,
                             const char *health_msg, const struct agent_job_status *jobs,
                             size_t njobs);

/* The "node" of a heartbeat, events or rotate body, borrowed: docketd reads it before the
 * rest, so that a body sent under another node's name is refused as such first. */
int agent_body_node(const json_t *body, const char **node, struct proto_error *err) PROTO_WUR;

/* The heartbeat body as docketd reads it ("node" is agent_body_node's). */
struct agent_heartbeat {
    int64_t ack;     /* 0 when absent */
    int64_t wait_ms; /* AGENT_WAIT_DEFAULT_MS when absent */
    bool health_ok;  /* true when absent */
    char health_msg[AGENT_HEALTH_MSG_MAX + 1];
    struct agent_job_status *jobs; /* owned; state borrowed from the body, NULL when absent;
                                    * pid is not read (0): docketd has no use for it */
    size_t njobs;
    struct storage_report *storage;     /* owned; NULL when the heartbeat has none */
    struct lifecycle_result *lifecycle; /* owned; the lifecycle runs the agent holds */
    size_t nlifecycle;
    struct warm_state *warm; /* owned; the templates the node was asked to warm */
    size_t nwarm;
};
int agent_heartbeat_parse(const json_t *body, struct agent_heartbeat *out,
                          struct proto_error *err) PROTO_WUR;
void agent_heartbeat_release(struct agent_heartbeat *h);

/* Events. */
enum agent_exit_kind {
    AGENT_EXIT_CODE,
    AGENT_EXIT_SIGNAL,
    AGENT_EXIT_OOM,
    AGENT_EXIT_LAUNCH_FAILED,
    AGENT_EXIT_LOST
};
const char *agent_exit_kind_name(enum agent_exit_kind k);
int agent_exit_kind_parse(const char *s, enum agent_exit_kind *out);

struct agent_usage {
    int64_t cpu_ms, max_rss_mb;
    int64_t gpu_util; /* the agent sends 0..100; docketd takes any count >= 0 */
};

/* A usage sample of one job on one node (docs/monitoring.md "Samples"): the job's cgroup
 * counters and, per GPU of the job, what the node can say about it. Counters (cpu_ms,
 * io_*) are cumulative over the run; mem_bytes is the current charge, mem_peak_bytes
 * the run's peak (0 when the kernel does not keep one). A field not known is -1.
 * gpu_source says where GPU figures come from: "nvml" (measured), "declared" (the
 * node's GPUs are declared, not measured: only a utilisation the operator declared
 * with --declared-gpu-util-file, or nothing), "none" (the job has no GPU). */
enum { AGENT_SAMPLE_MAX_ERRORS = 1000000000 };
struct agent_gpu_sample {
    int index;           /* the node's GPU index */
    int util;            /* percent 0..100, -1 unknown */
    int64_t mem_used_mb; /* -1 unknown */
    int64_t power_mw;    /* -1 unknown */
    int temp_c;          /* -1 unknown */
    int64_t ecc_errors;  /* volatile uncorrected ECC errors, -1 unknown */
    int64_t xid_errors;  /* XID error events seen by the agent, -1 unknown */
};
struct agent_sample {
    int64_t interval_ms;
    int64_t cpu_ms, mem_bytes, mem_peak_bytes, io_read_bytes, io_write_bytes;
    int64_t net_refused; /* packets the job's network rules refused so far (network.md) */
    char gpu_source[16]; /* "nvml", "declared", "none" */
    int ngpus;
    struct agent_gpu_sample gpus[AGENT_MAX_GPUS];
};
/* Every field -1 (unknown), gpu_source "none", no GPUs. */
void agent_sample_init(struct agent_sample *s);
/* The "sample" object of a usage event (fields that are -1 are left out). */
json_t *agent_sample_to_json(const struct agent_sample *s);
/* The reader of that object: types, ranges, unknown fields (named "sample.gpus[1].util"),
 * GPU indices distinct, gpu_source one of the three, no GPU figures when "none". */
int agent_sample_parse(const json_t *o, struct agent_sample *out,
                       struct proto_error *err) PROTO_WUR;

struct agent_event {
    uint64_t job;
    int run;       /* the run the event is about (the start command's job.run), 0 = not given */
    char type[16]; /* started, signalled, exited, usage, reclaim_failed, step_host, preparing,
                    * prepared, probe */
    int64_t time_ms;
    int pid;  /* started (read on any event, 0 when absent) */
    int port; /* step_host: the port the kernel gave a Slurm-style job's step host here;
               * started: the port a service replica got ($PORT), 0 = none */
    /* probe: which probe ("liveness", "readiness") and its verdict: ok, or failed
     * failure_threshold times in a row (message: the last failure) */
    char probe[16];
    bool probe_ok;
    bool has_exit;                  /* always on an exited event */
    enum agent_exit_kind exit_kind; /* the exit's */
    int exit_code;                  /* the exit's: code or signal number */
    /* exited: the exit's message; reclaim_failed, signalled: the event's; preparing,
     * prepared: the template's NAME@VERSION ("" when none) */
    char message[AGENT_MESSAGE_MAX + 1];
    bool has_usage;
    struct agent_usage usage;
    bool has_sample; /* usage events: the sample (agent_sample_parse) */
    struct agent_sample sample;
    /* The event's exit and usage objects as sent (NULL when absent), borrowed from the
     * object read: docketd keeps them as they came, once read. Builders ignore them. */
    const json_t *exit_json, *usage_json;
};
json_t *agent_event_to_json(const struct agent_event *e);
/* One event object (docketd's side): every field checked on any type, type-specific
 * rules (an exited event has an exit, only a usage event a sample). `path` names the
 * event in errors ("events[3]" gives "events[3].exit.kind"); "" names fields alone. */
int agent_event_parse(const json_t *obj, const char *path, struct agent_event *out,
                      struct proto_error *err) PROTO_WUR;
/* {"node": NODE, "events": [..]}: steals nothing; `events` is an array reference borrowed. */
json_t *agent_events_body(const char *node, json_t *events);
/* That body as docketd reads it ("node" is agent_body_node's): at most AGENT_MAX_EVENTS
 * events, each read by agent_event_parse as "events[i]". *events is the array, borrowed.
 * None is kept (a batch may hold AGENT_MAX_EVENTS): the caller reads each again with
 * agent_event_parse when it needs it, which then cannot fail. */
int agent_events_parse(const json_t *body, const json_t **events,
                       struct proto_error *err) PROTO_WUR;
/* The job and run (0 = not given) of an event of a batch agent_events_parse took, without
 * reading the rest of it again. */
void agent_event_job_run(const json_t *event, uint64_t *job, int *run);

/* Log chunk: {"node", "job", "run", "stream", "offset", "data": BASE64, "final", "cut"}:
 * bytes of one stream of one run of a job, at `offset` in that run's stream; `final` says
 * that the run's output of that stream ends with this chunk (the job has ended and every
 * byte before is shipped), so readers may stop (X-Docket-Eof); `cut` that the chunk is
 * the agent's cut marker (its --log-limit reached: the job's events say so). run 0 is
 * left out (the controller then takes the job's latest run), and false flags too. */
json_t *agent_logs_body(const char *node, uint64_t job, int run, const char *stream, int64_t offset,
                        const void *data, size_t len, bool final, bool cut);
struct agent_log_chunk {
    char node[AGENT_NAME_MAX];
    uint64_t job;
    int run;    /* 0 = not given */
    int stream; /* 0 stdout, 1 stderr */
    int64_t offset;
    unsigned char *data; /* decoded, owned (free with agent_log_chunk_release) */
    size_t len;
    bool final;
    bool cut; /* the chunk is the agent's cut marker: its --log-limit was reached */
};
/* The controller's side of the same body; data decoded. On error nothing is owned. */
int agent_logs_parse(const json_t *body, struct agent_log_chunk *out,
                     struct proto_error *err) PROTO_WUR;
void agent_log_chunk_release(struct agent_log_chunk *c);
/* {"offset": N} */
int agent_logs_reply_parse(const json_t *body, int64_t *offset, struct proto_error *err) PROTO_WUR;

#endif
