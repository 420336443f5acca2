/*
 * agent_msg.h - the JSON shapes of the agent API (docs/api.md "Agent endpoints"), shared by
 * docketd and docket-node: the register body and reply, the heartbeat body and its reply
 * of commands (start / signal / kill), the events and log-chunk bodies.
 *
 * Parsers validate everything (types, ranges, unknown fields) and fill a struct
 * agent_msg_error naming the JSON path of the bad input ("job.gpus[2]", "commands[0].seq").
 * They return 0 or a negative errno (-EINVAL for bad input, -ENOMEM). Builders return a
 * new jansson reference (NULL only when out of memory).
 *
 * This header depends on jansson and libc only, so the agent links it without the core.
 */
#ifndef DOCKET_PROTOCOL_AGENT_MSG_H
#define DOCKET_PROTOCOL_AGENT_MSG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_MSG_WUR __attribute__((warn_unused_result))

/* The fencing margin of docs/agent.md "Fencing", one definition for both sides: a node
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

enum {
    AGENT_NAME_MAX = 64,
    AGENT_MAX_GPUS = 64,
    AGENT_MAX_NODES = 512,
    AGENT_MAX_ARGS = 4096,
    AGENT_MAX_ENV = 1024,
    AGENT_MAX_COMMANDS = 4096,
    AGENT_MAX_CPUS = 4096,
};

struct agent_msg_error {
    char field[128];   /* JSON path of the bad input, "" when none */
    char message[256]; /* lowercase, names the subject */
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
    int run;           /* the job's run number (1, 2, ...: one per start), 0 = not given */
    int64_t pids_max;  /* the class's pids.max, 0 = the node's default (--job-pids-max) */
    uint64_t array_id; /* the array's first job, 0 = not an array element */
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
        char **step_hosts; /* "ADDR:PORT" of each node by rank, NULL-terminated, or NULL */
        int nstep_hosts;
    } slurm;
};

/* The secret_env of a start command: parse into j (replacing any), or build it back as
 * an object (a new reference) to hand to a supervisor. */
int agent_job_parse_secret_env(const json_t *v, struct agent_job *j,
                               struct agent_msg_error *err) AGENT_MSG_WUR;
json_t *agent_job_secret_env_json(const struct agent_job *j);

void agent_job_init(struct agent_job *j);
void agent_job_release(struct agent_job *j);
/* Validate and fill from the "job" object of a start command. On error `j` is released. */
int agent_job_parse(const json_t *obj, struct agent_job *j,
                    struct agent_msg_error *err) AGENT_MSG_WUR;
/* The same object back (the agent stores it in its state directory). */
json_t *agent_job_to_json(const struct agent_job *j);

enum agent_cmd_type { AGENT_CMD_START, AGENT_CMD_SIGNAL, AGENT_CMD_KILL };

struct agent_cmd {
    int64_t seq;
    enum agent_cmd_type type;
    uint64_t job_id;
    int signal;       /* SIGNAL */
    int64_t grace_ms; /* SIGNAL */
    json_t *job;      /* START: the job object (own reference) */
};

struct agent_heartbeat_reply {
    struct agent_cmd *cmds; /* owned */
    size_t ncmds;
    char node_state[32];
};

/* {"commands": [CMD...], "node_state": "UP"}: a malformed command fails the whole reply;
 * the start job objects are only checked to be objects (agent_job_parse does the rest,
 * so one bad job is reported against that job, not the whole reply). */
int agent_heartbeat_reply_parse(const json_t *body, struct agent_heartbeat_reply *out,
                                struct agent_msg_error *err) AGENT_MSG_WUR;
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
};
json_t *agent_register_body(const struct agent_node_info *n, const char *join_token,
                            const char *version);

struct agent_register_reply {
    char credential[256];
    char node[AGENT_NAME_MAX];
    int64_t heartbeat_wait_ms, node_timeout_ms;
    int64_t credential_expires_ms; /* wall clock ms; 0 = never (or not said) */
};
/* The rotate reply (POST /v1/agent/rotate) has the same shape, credential and expiry; its
 * body is {"node": NAME}. */
json_t *agent_rotate_body(const char *node);
int agent_register_reply_parse(const json_t *body, struct agent_register_reply *out,
                               struct agent_msg_error *err) AGENT_MSG_WUR;

/* Heartbeat body. */
struct agent_job_status {
    uint64_t id;
    const char *state; /* "starting", "running", "stopping", "exited" */
    int pid;
};
json_t *agent_heartbeat_body(const char *node, int64_t ack, int64_t wait_ms, bool health_ok,
                             const char *health_msg, const struct agent_job_status *jobs,
                             size_t njobs);

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
    int gpu_util;
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
                       struct agent_msg_error *err) AGENT_MSG_WUR;

struct agent_event {
    uint64_t job;
    int run;       /* the run the event is about (the start command's job.run), 0 = not given */
    char type[16]; /* started, exited, usage, reclaim_failed */
    int64_t time_ms;
    int pid;                        /* started */
    enum agent_exit_kind exit_kind; /* exited */
    int exit_code;                  /* exited: code or signal number */
    char message[256];              /* exited, reclaim_failed */
    bool has_usage;
    struct agent_usage usage;
    bool has_sample; /* usage events: the sample (agent_sample_parse) */
    struct agent_sample sample;
};
json_t *agent_event_to_json(const struct agent_event *e);
/* One event object back (the controller's side); validates type-specific fields. */
int agent_event_parse(const json_t *obj, struct agent_event *out,
                      struct agent_msg_error *err) AGENT_MSG_WUR;
/* {"node": NODE, "events": [..]}: steals nothing; `events` is an array reference borrowed. */
json_t *agent_events_body(const char *node, json_t *events);

/* Log chunk: {"node", "job", "run", "stream", "offset", "data": BASE64, "final"}: bytes of
 * one stream of one run of a job, at `offset` in that run's stream; `final` says that the
 * run's output of that stream ends with this chunk (the job has ended and every byte
 * before is shipped), so readers may stop (X-Docket-Eof). run 0 is left out (the
 * controller then takes the job's latest run). */
json_t *agent_logs_body(const char *node, uint64_t job, int run, const char *stream, int64_t offset,
                        const void *data, size_t len, bool final);
struct agent_log_chunk {
    char node[AGENT_NAME_MAX];
    uint64_t job;
    int run;    /* 0 = not given */
    int stream; /* 0 stdout, 1 stderr */
    int64_t offset;
    unsigned char *data; /* decoded, owned (free with agent_log_chunk_release) */
    size_t len;
    bool final;
};
/* The controller's side of the same body; data decoded. On error nothing is owned. */
int agent_logs_parse(const json_t *body, struct agent_log_chunk *out,
                     struct agent_msg_error *err) AGENT_MSG_WUR;
void agent_log_chunk_release(struct agent_log_chunk *c);
/* {"offset": N} */
int agent_logs_reply_parse(const json_t *body, int64_t *offset,
                           struct agent_msg_error *err) AGENT_MSG_WUR;

#endif
