/*
 * agent.h - docket-node's event loop: registers with the controller, long-polls for
 * commands (start/signal/kill, applied idempotently by seq), launches supervisors, reports
 * events and ships log increments, runs the health check, and finds its jobs again after
 * a restart from the state directory. See docs/agent.md and docs/api.md "Agent endpoints".
 *
 * Ownership: agent_create copies the config; agent_destroy frees everything (running
 * jobs keep running under their supervisors). Errors: NULL / negative errno with `err`.
 */
#ifndef DOCKET_AGENT_AGENT_H
#define DOCKET_AGENT_AGENT_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/inventory.h"

struct agent_config {
    char controller[512];             /* http://HOST:PORT (loopback only) or https://HOST:PORT */
    char controller_fingerprint[128]; /* pinned public key of docketd, "sha256:<hex>" */
    char controller_ca[PATH_MAX];     /* else: CA file to check docketd's certificate */
    char join_token[256];
    char name[64];
    char addr[256];     /* advertised address (MASTER_ADDR for gangs) */
    char job_net[32];   /* the range jobs' own addresses come from ("" = none; network.md) */
    char nft[PATH_MAX]; /* the nft program that enforces jobs' network rules */
    char state_dir[PATH_MAX];
    char scratch_root[PATH_MAX]; /* "" = STATE_DIR/scratch */
    char session_root[PATH_MAX]; /* "" = STATE_DIR/sessions (docs/interactive.md) */
    char slurm_cli[PATH_MAX];    /* the docket CLI for Slurm-style jobs' srun & co, "" = none */
    char cgroup_root[PATH_MAX];  /* "" = /sys/fs/cgroup */
    bool no_cgroups;             /* run without cgroups (non-root development only) */
    bool no_spare;               /* v1: launch without a spare supervisor made in advance */
    bool allow_root_jobs;
    bool keep_scratch;
    char health_check[PATH_MAX]; /* "" = none */
    int64_t health_interval_ms;
    int64_t usage_interval_ms;
    char declared_gpu_util_file[PATH_MAX]; /* declared GPUs' utilisation, "" = none */
    int64_t log_interval_ms;
    int64_t limit_slack_ms;
    int64_t fence_margin_ms;    /* jobs stop at node_timeout - this without the controller */
    int64_t log_limit_bytes;    /* per job, stream and run: the rest is cut with a marker */
    int64_t pids_max;           /* pids.max of every job (0 = none) */
    int64_t node_pids_max;      /* pids.max of all jobs together, docket/NODE (0 = none) */
    int64_t job_mem_default_mb; /* memory limit of a job that names none (0 = none) */
    int service_port_lo, service_port_hi; /* --service-ports LO-HI: replicas' $PORT, 0 = none */
    size_t max_queued_events;      /* while the controller is away: usage samples dropped past it */
    char oci_runtime[PATH_MAX];    /* containers' OCI runtime: crun or its path ("" = crun) */
    int64_t image_cache_max_bytes; /* the cap on STATE_DIR/images (0 = none) */
    char gpu_dev_dir[PATH_MAX];    /* where the GPUs' device nodes are ("" = /dev) */
    json_t *labels;                /* object of strings (owned by the config user) */
    struct inventory inv;
};

struct agent;

struct agent *agent_create(const struct agent_config *cfg, char *err, size_t errlen);
/* Run the loop until SIGTERM/SIGINT. Returns 0, or negative errno on a fatal error. */
int agent_run(struct agent *a);
void agent_destroy(struct agent *a);

#endif
