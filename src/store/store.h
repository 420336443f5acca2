/*
 * store.h - docketd's durable state in SQLite: every SQL statement of Docket lives in
 * src/store/. Schema and versioned migrations (applied at open), prepared statements,
 * and the transaction shape the controller's group commit needs.
 *
 * Durability: WAL with synchronous=FULL by default, so a committed transaction survives a
 * power loss, not only a crash of the process: docketd acknowledges a submission only once
 * it is on disk. docketd itself switches to store_set_external_sync(): COMMIT writes the
 * WAL (synchronous=NORMAL) and a helper thread fdatasyncs it (store_sync) before the
 * replies leave, which is FULL's guarantee without the loop waiting for the disk.
 *
 * Transactions: the controller opens one transaction per loop iteration
 * (store_begin, idempotent), wraps each request in a savepoint (store_savepoint /
 * store_release / store_rollback_to) so a request that fails half-way changes nothing,
 * and commits once from a zero-timeout event (store_commit) before sending the replies
 * that waited.
 *
 * Enumerations are stored by name (job and node states, stop causes, events, token kinds),
 * never by their number, so reordering an enum changes no stored row; a row with a name
 * this docketd does not know reads as -EIO naming the row.
 *
 * Errors: 0 or a negative errno (-ENOENT for a missing row, -EIO for an SQLite error,
 * whose text is kept for store_errmsg). Strings in the structs below are owned by the
 * struct and freed by its _release function.
 */
#ifndef DOCKET_STORE_STORE_H
#define DOCKET_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_WUR __attribute__((warn_unused_result))

struct store;

/* Open (creating) the database at `path` and migrate it to the latest schema. NULL with
 * a message in err on failure. */
struct store *store_open(const char *path, char *err, size_t errlen);
void store_close(struct store *st);
int store_schema_version(struct store *st);
const char *store_errmsg(struct store *st);

/* Pipelined group commit (docs/controller.md): switch to synchronous=NORMAL, so COMMIT
 * writes the WAL without waiting for the disk, and make the caller responsible for
 * calling store_sync() (fdatasync of the WAL) before it acknowledges anything. Together
 * they give FULL's durability while the next transaction is built during the sync. */
int store_set_external_sync(struct store *st) STORE_WUR;
/* fdatasync the WAL. Safe to call from another thread than the one using `st` (it only
 * touches a file descriptor opened at store_open). 0 or -errno. */
int store_sync(struct store *st) STORE_WUR;

/* Transactions (see above). store_begin is a no-op inside a transaction. */
int store_begin(struct store *st) STORE_WUR;
bool store_in_tx(const struct store *st);
int store_commit(struct store *st) STORE_WUR;
int store_rollback(struct store *st);
int store_savepoint(struct store *st) STORE_WUR;
int store_release(struct store *st) STORE_WUR;
int store_rollback_to(struct store *st);

/* Named counters ("next_job_id"). get: -ENOENT when never set. */
int store_counter_get(struct store *st, const char *name, int64_t *out) STORE_WUR;
int store_counter_set(struct store *st, const char *name, int64_t v) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Jobs                                                                                  */

struct store_job {
    uint64_t id;
    uint64_t array_id;
    int array_index;
    char name[128];
    char project[64], user[64], tier[64], class_name[64];
    int state; /* enum sched_job_state; stored by its name (schema 3) */
    char stop_cause[32];
    int64_t submit_ms, start_ms, end_ms;
    int preempt_count;
    uint64_t preemptor;
    char nodes[1024]; /* ",gpu01,gpu02," while allocated (for filters), or "" */
    char *spec;       /* normalised spec JSON (protocol/proto.h), owned */
    /* The scheduling fields of the spec again, in columns (schema 2), so a restart rebuilds
     * the core without parsing JSON. has_core is false for rows written before. */
    bool has_core;
    int gpus, cpus, nnodes, signal, retries, array_limit, flags; /* flags: STORE_JF_* */
    int64_t mem_mb, time_limit_ms, begin_ms, grace_ms;
    char gpu_type[64];
    char deps[512];       /* "afterok:12,afternotok:13" */
    char selectors[1280]; /* "zone=a,pool!=reserved" */
    char *alloc;          /* allocation JSON or NULL */
    char *exit;           /* exit JSON or NULL */
    char *usage;          /* usage JSON or NULL */
};

enum {
    STORE_JF_CHECKPOINT = 1 << 0,
    STORE_JF_IDEMPOTENT = 1 << 1,
    STORE_JF_REQUEUE = 1 << 2,
    STORE_JF_HOLD = 1 << 3
};

void store_job_release(struct store_job *j);
int store_job_insert(struct store *st, const struct store_job *j) STORE_WUR;
/* Rewrite the mutable columns (state .. usage) of job j->id. */
int store_job_update(struct store *st, const struct store_job *j) STORE_WUR;
int store_job_get(struct store *st, uint64_t id, struct store_job *out) STORE_WUR;

struct store_job_filter {
    uint32_t state_mask;                                          /* bit per state; 0 = all */
    const char *project, *user, *tier, *class_name, *node, *name; /* NULL = any */
    uint64_t array_id;                                            /* 0 = any */
    int64_t since_ms;                                             /* submit_ms >= since; 0 = any */
    uint64_t after; /* id cursor: > after (asc) or < after (desc); 0 = start */
    int limit;
    bool desc;
    bool skip_spec; /* leave spec NULL (a restart reads the core columns) */
};

/* Calls cb for each row in id order; a non-zero return from cb stops (and is returned).
 * The row passed is released after cb returns. */
typedef int (*store_job_cb)(void *arg, const struct store_job *j);
int store_job_list(struct store *st, const struct store_job_filter *f, store_job_cb cb,
                   void *arg) STORE_WUR;
int64_t store_job_count(struct store *st);

/* ------------------------------------------------------------------------------------ */
/* Job events                                                                            */

struct store_event {
    uint64_t job;
    int64_t time_ms;
    const char *type, *from, *to, *node, *reason, *detail; /* borrowed; "" allowed */
};
int store_event_add(struct store *st, const struct store_event *e) STORE_WUR;
typedef int (*store_event_cb)(void *arg, const struct store_event *e);
int store_event_list(struct store *st, uint64_t job, store_event_cb cb, void *arg) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Nodes                                                                                 */

struct store_node {
    char name[64];
    char state[32]; /* sched_node_state_name */
    char reason[256];
    char gpu_type[64];
    int gpus, cpus;
    int64_t gpu_mem_mb, mem_mb;
    char *labels; /* JSON object text, owned */
    char *info;   /* JSON: addr, agent_version, gpu_uuids; owned */
    int64_t last_heartbeat_ms;
    int64_t cmd_seq; /* last command seq sent to this node */
};
void store_node_release(struct store_node *n);
int store_node_put(struct store *st, const struct store_node *n) STORE_WUR;
int store_node_get(struct store *st, const char *name, struct store_node *out) STORE_WUR;
typedef int (*store_node_cb)(void *arg, const struct store_node *n);
int store_node_list(struct store *st, store_node_cb cb, void *arg) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Projects and policy: stored as JSON documents keyed by name.                         */

int store_project_put(struct store *st, const char *name, const char *json) STORE_WUR;
/* A user's default project (used when a submission names none): 0 with the name,
 * -ENOENT when none is set, -EIO. */
int store_default_project_get(struct store *st, const char *user, char *project,
                              size_t len) STORE_WUR;
/* Set it, or clear it when project is NULL. 0 or -EIO. */
int store_default_project_set(struct store *st, const char *user, const char *project) STORE_WUR;
typedef int (*store_doc_cb)(void *arg, const char *name, const char *json);
int store_project_list(struct store *st, store_doc_cb cb, void *arg) STORE_WUR;
/* The policy document; *json is malloc'd (caller frees); -ENOENT when none stored. */
int store_policy_put(struct store *st, const char *json) STORE_WUR;
int store_policy_get(struct store *st, char **json) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Tokens: only SHA-256 hashes are stored.                                               */

enum store_token_kind { STORE_TOKEN_USER, STORE_TOKEN_NODE, STORE_TOKEN_JOIN };

struct store_token {
    char hash[65]; /* hex SHA-256 of the token text */
    enum store_token_kind kind;
    char user[64]; /* USER: the user; NODE: the node name */
    char role[16];
    int64_t created_ms, expires_ms; /* 0 = never expires */
};
/* Hex SHA-256 of `token` into out[65]. */
void store_token_hash(const char *token, char out[65]);
int store_token_put(struct store *st, const struct store_token *t) STORE_WUR;
int store_token_get(struct store *st, const char *hash, struct store_token *out) STORE_WUR;
/* Remove every token of `kind` for `user` (a node's old credentials on re-register). */
int store_token_delete_user(struct store *st, enum store_token_kind kind,
                            const char *user) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Audit: append-only.                                                                   */

struct store_audit {
    int64_t id;
    int64_t time_ms;
    const char *actor, *action, *target, *before, *after, *reason; /* before/after: JSON or NULL */
};
int store_audit_add(struct store *st, const struct store_audit *a) STORE_WUR;

struct store_audit_filter {
    const char *actor, *action, *target;
    int64_t since_ms;
    int64_t after; /* id cursor */
    int limit;
};
typedef int (*store_audit_cb)(void *arg, const struct store_audit *a);
int store_audit_list(struct store *st, const struct store_audit_filter *f, store_audit_cb cb,
                     void *arg) STORE_WUR;

#endif
