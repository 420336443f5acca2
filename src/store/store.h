/*
 * store.h - docketd's durable state, in SQLite (the default: a file) or in PostgreSQL (a
 * postgresql:// URI): every SQL statement of Docket lives in src/store/, one interface for
 * both (db.h is the statement layer under it). Schema and versioned migrations (applied at
 * open), prepared statements, and the transaction shape the controller's group commit
 * needs.
 *
 * PostgreSQL: every COMMIT is durable when it returns (synchronous_commit = on) until
 * store_set_external_sync; then COMMIT returns before the server's disk has it and
 * store_sync flushes the server's WAL on a connection of its own (pgsync.c). The
 * checkpoint calls refuse. A PostgreSQL database starts at schema 11 whole (schema_pg.c).
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
 * Errors: 0 or a negative errno (-ENOENT for a missing row, -EIO for a database error,
 * whose text is kept for store_errmsg). Strings in the structs below are owned by the
 * struct and freed by its _release function.
 */
#ifndef DOCKET_STORE_STORE_H
#define DOCKET_STORE_STORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_WUR __attribute__((warn_unused_result))

struct store;

/* Open (creating) the database at `path` and migrate it to the latest schema. `path` is a
 * SQLite file, or a postgresql:// (postgres://) URI in libpq's syntax. NULL with a message
 * in err on failure (a URI's password never in it). */
struct store *store_open(const char *path, char *err, size_t errlen);
/* Whether `path` names a PostgreSQL database (a postgresql:// or postgres:// URI). */
bool store_path_is_postgres(const char *path);
/* Whether `st` is on PostgreSQL. */
bool store_is_postgres(struct store *st);
/* Copy the SQLite database at `path` (migrated first, as docketd would) into `dst`, a
 * PostgreSQL store that holds no state yet (-EEXIST otherwise), in one transaction:
 * every table, every row. 0, or a negative errno with the reason in err. */
struct store_import_stats {
    int tables;
    int64_t rows;
};
int store_import_sqlite(struct store *dst, const char *path, struct store_import_stats *stats,
                        char *err, size_t errlen);
/* Open an existing database read-only (SQLite: SQLITE_OPEN_READONLY; PostgreSQL: a session
 * whose transactions are read-only): no migration, no write, safe
 * beside a live docketd (WAL readers do not block its writer). Only the read functions work;
 * a write returns -EIO. NULL with a message in err when the file is missing, is not a
 * docketd database, or has another schema version than this build's. */
struct store *store_open_readonly(const char *path, char *err, size_t errlen);
void store_close(struct store *st);
int store_schema_version(struct store *st);
/* The schema version this build writes (the number of migrations). */
int store_schema_latest(void);

/* Leadership (PostgreSQL only; leader.c, docs/operations.md "Active and standby"): one
 * docketd leads a database, the others wait as standbys. store_leader_try takes the
 * leader's lock if it is free and raises the fencing epoch (*leading true), or leaves
 * *leading false; from then on every commit of this store is refused (-ESTALE, and the
 * transaction rolled back) once another has taken over. store_leader_get reads who leads
 * (-ENOENT: nobody ever did); store_leader_check, each second, says whether this store
 * still leads (0) or was deposed (-ESTALE). On SQLite: -ENOTSUP. */
struct store_leader {
    int64_t epoch;
    char holder[128]; /* "HOST pid PID" */
    char url[256];    /* where it serves (its --advertise) */
    int64_t since_ms;
};
int store_leader_try(struct store *st, const char *holder, const char *url, int64_t now_ms,
                     bool *leading) STORE_WUR;
int store_leader_get(struct store *st, struct store_leader *out) STORE_WUR;
int store_leader_check(struct store *st) STORE_WUR;
const char *store_errmsg(struct store *st);

/* Pipelined group commit (docs/controller.md): switch to synchronous=NORMAL, so COMMIT
 * writes the WAL without waiting for the disk, and make the caller responsible for
 * calling store_sync() (fdatasync of the WAL) before it acknowledges anything. Together
 * they give FULL's durability while the next transaction is built during the sync. */
int store_set_external_sync(struct store *st) STORE_WUR;
/* fdatasync the WAL (PostgreSQL: flush the server's WAL). Safe to call from another
 * thread than the one using `st` (it only touches a file descriptor opened at store_open,
 * or PostgreSQL's connection of its own). 0 or -errno; store_sync_errmsg then says why. */
int store_sync(struct store *st) STORE_WUR;
/* On the thread using `st`, before asking for a sync: the commits made so far are the
 * ones it covers (PostgreSQL checks that they were made on the server it flushes). */
void store_sync_mark(struct store *st);
const char *store_sync_errmsg(struct store *st);

/* Checkpoints off the connection's thread (docs/controller.md "Checkpoints"). By default
 * SQLite copies the WAL back into the database inside the COMMIT that takes it past 1,000
 * pages (the automatic checkpoint: on docketd's loop, one COMMIT of 192 ms was seen).
 * store_set_external_checkpoint turns that off on `st` (wal_autocheckpoint = 0) and
 * counts the WAL's frames at each commit instead (store_wal_frames, readable from any
 * thread); the caller then runs store_ckpt_run on a connection of its own
 * (store_ckpt_open), from another thread. Durability is unchanged: a checkpoint syncs the
 * WAL before it copies and the database before the WAL may be reused. */
int store_set_external_checkpoint(struct store *st) STORE_WUR;
/* The connection's automatic checkpoint in pages (PRAGMA wal_autocheckpoint; 0: none),
 * or -EIO. */
int store_wal_autocheckpoint(struct store *st);
/* Frames in the WAL after the last commit of `st` (0 before the first one, or when the
 * external checkpoint is not set). Safe from any thread. */
int store_wal_frames(const struct store *st);
/* Which jobs a write touched (docs/controller.md "Reads that leave at once"): fn(arg, id)
 * is called on the thread of `st`, inside the statement, for every row of `jobs` (id: the
 * job's), `job_specs` (id: the spec's, which is its array's id) and `arrays_writing` (the
 * array's id) that any statement on `st` inserts, updates or deletes (SQLite:
 * sqlite3_update_hook; PostgreSQL, which has no such hook: the store's write functions
 * call it for the rows they write), whether its transaction commits or not. fn must not
 * use `st`.
 * NULL removes it. SQLite skips the hook for a DELETE without WHERE (its truncate
 * optimisation) and for rows a REPLACE deletes on a conflict: src/store/ has neither on
 * these tables (their only unique key is the id). */
void store_set_job_write_hook(struct store *st, void (*fn)(void *arg, uint64_t id), void *arg);
/* The database file's path (for store_ckpt_open); PostgreSQL: its URI, without password. */
const char *store_path(struct store *st);

struct store_ckpt; /* a connection that only checkpoints; one thread uses it, no other */
enum store_ckpt_mode {
    STORE_CKPT_PASSIVE,  /* copy what no reader still needs; never waits, never blocks */
    STORE_CKPT_TRUNCATE, /* then reset the WAL to 0 bytes: takes the write lock, waits up
                            to busy_ms for it (the writer's next BEGIN waits meanwhile) */
};
struct store_ckpt_result {
    int log_frames;    /* frames in the WAL when it ran (-1 if unknown) */
    int copied_frames; /* of them, in the database now */
};
struct store_ckpt *store_ckpt_open(const char *path, char *err, size_t errlen);
/* 0; -EBUSY when TRUNCATE could not take the lock in busy_ms (it copied what it could,
 * as PASSIVE), or when another checkpoint runs; -EIO (store_ckpt_errmsg). */
int store_ckpt_run(struct store_ckpt *k, enum store_ckpt_mode mode, int busy_ms,
                   struct store_ckpt_result *out) STORE_WUR;
const char *store_ckpt_errmsg(struct store_ckpt *k);
void store_ckpt_close(struct store_ckpt *k);

/* The checkpoint thread (ckpt.c; docs/controller.md "Checkpoints"): a thread with a
 * store_ckpt of its own that decides when to checkpoint the WAL of the database at `path`
 * (whose writer has store_set_external_checkpoint on). Every `frames` new frames after a
 * sync, a PASSIVE checkpoint; once the WAL holds `truncate_frames`, a TRUNCATE, but only
 * after `quiet_ms` without a commit (it looks again every `quiet_ms` of real time until
 * then), or at once past `force_frames`, waiting up to `force_busy_ms` for the writer's
 * lock. `now_ms` (NULL: clock_mono_ms) is the clock of "quiet": tests give their own. */
struct store_ckpt_policy {
    int frames, truncate_frames, force_frames, force_busy_ms, quiet_ms;
    int64_t (*now_ms)(void *arg);
    void *now_arg;
};
struct store_ckpt_stats {
    uint64_t passive, truncated, truncate_busy, failed; /* runs of each */
    int max_frames;                                     /* the largest WAL a run saw */
};
struct store_ckpt_thread;
/* docketd's: 1,000 frames; 16,384 (64 MiB of 4 KiB pages); 65,536 (256 MiB), 200 ms;
 * 500 ms. */
void store_ckpt_policy_default(struct store_ckpt_policy *p);
/* Start the thread (pol NULL: the defaults) once its connection is open; NULL with a
 * message in err when it cannot start or open it. */
struct store_ckpt_thread *store_ckpt_thread_create(const char *path,
                                                   const struct store_ckpt_policy *pol, char *err,
                                                   size_t errlen);
/* The writer committed (any thread; the time by the policy's clock). */
void store_ckpt_thread_commit(struct store_ckpt_thread *k);
/* A sync of the WAL is done and it holds `frames` frames (one thread, the syncing one):
 * wakes the thread every `frames` new frames, counted again once the WAL starts over. */
void store_ckpt_thread_synced(struct store_ckpt_thread *k, int frames);
void store_ckpt_thread_stats(struct store_ckpt_thread *k, struct store_ckpt_stats *out);
/* Stop and join it (NULL: nothing); its counts into out (may be NULL). */
void store_ckpt_thread_destroy(struct store_ckpt_thread *k, struct store_ckpt_stats *out);

/* Backups (docs/operations.md "Back up and restore the state"): backup.c on SQLite,
 * pgdump.c on PostgreSQL. */
struct store_backup_info {
    int schema;    /* the copy's schema version */
    int64_t bytes; /* its size */
};
/* Write one consistent snapshot of the database at `db_path` (store_path of an open store)
 * to `dest`, which must not exist (it is created 0600), on a read-only connection of its
 * own (VACUUM INTO: one read transaction, which docketd's writer never waits for), then
 * check the copy as store_backup_verify does. Any thread; `cancel` (may be NULL), once set
 * by another thread, stops it with -ECANCELED. dest is removed on every failure. 0, or a
 * negative errno with err saying why. */
int store_backup_write(const char *db_path, const char *dest, const atomic_bool *cancel,
                       struct store_backup_info *out, char *err, size_t errlen) STORE_WUR;
/* The same for a database kept in PostgreSQL (pgdump.c): pg_dump's custom format, one
 * consistent snapshot of the live database, checked with pg_restore --list. */
int store_pg_backup_write(const char *uri, const char *dest, const atomic_bool *cancel,
                          struct store_backup_info *out, char *err, size_t errlen) STORE_WUR;
/* Whether the file at path is a pg_dump archive (custom format). */
bool store_backup_is_pg_dump(const char *path);
/* Restore a pg_dump archive into the PostgreSQL database at uri, in one transaction, while
 * no docketd leads it (the leader's lock held meanwhile: -EBUSY when one does); what the
 * database held before goes to `aside` first (a pg_dump archive). 0, or -errno with err. */
int store_pg_restore(const char *uri, const char *file, const char *aside, char *err,
                     size_t errlen) STORE_WUR;
/* Check a copy of a database before docketd runs on it: it opens (read-write: the copy
 * must be nobody else's; it becomes one self-contained file, rollback journal), passes
 * PRAGMA integrity_check, is a docketd database, and its schema is not newer than this
 * build's. 0; -EPROTO for a newer schema; -EINVAL (damaged, not a docketd database) or
 * -errno, with err saying why. */
int store_backup_verify(const char *path, struct store_backup_info *out, char *err,
                        size_t errlen) STORE_WUR;

/* Transactions (see above). store_begin is a no-op inside a transaction. */
int store_begin(struct store *st) STORE_WUR;
bool store_in_tx(const struct store *st);
/* The write clock: every write statement stepped moves it on (a rollback counts as
 * writing every table). Whether any of `tables` (names, NULL-terminated) was written
 * since `clock`: what changed in a commit, for docketd's change notices (live.c). */
uint64_t store_write_clock(const struct store *st);
bool store_written_since(struct store *st, const char *const *tables, uint64_t clock);
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
    uint64_t spec_id; /* not 0: the spec is stored once under this id (store_spec_put),
                       * shared by an array's tasks; spec is then not written (schema 7) */
    /* The scheduling fields of the spec again, in columns (schema 2), so a restart rebuilds
     * the core without parsing JSON. has_core is false for rows written before. */
    bool has_core;
    int gpus, cpus, nnodes, signal, retries, array_limit, flags; /* flags: STORE_JF_* */
    int64_t mem_mb, time_limit_ms, begin_ms, grace_ms;
    char gpu_type[64];
    char deps[4096];      /* "afterok:12,afternotok:13" ('?' between them: any of) */
    char selectors[1280]; /* "zone=a,pool!=reserved" */
    char *alloc;          /* allocation JSON or NULL */
    char *exit;           /* exit JSON or NULL */
    char *usage;          /* usage JSON or NULL */
    /* the environment template, "NAME@VERSION" or "" (schema 15) */
    char template_ref[96];
    /* the image of its container, a reference as given, or "" (schema 20) */
    char image[1024];
};

enum {
    STORE_JF_CHECKPOINT = 1 << 0,
    STORE_JF_IDEMPOTENT = 1 << 1,
    STORE_JF_REQUEUE = 1 << 2,
    STORE_JF_HOLD = 1 << 3,
    STORE_JF_SWITCHES = 1 << 4 /* its spec has Slurm's switches: a restart reads the spec */
};

void store_job_release(struct store_job *j);
int store_job_insert(struct store *st, const struct store_job *j) STORE_WUR;
/* Store a spec shared by several rows (an array's): its text and the same without
 * "script" and "env" (what lists show). Rows name it by spec_id. */
int store_spec_put(struct store *st, uint64_t id, const char *spec, const char *lean) STORE_WUR;
/* Big arrays (docs/controller.md "Big submissions"): an array whose rows are written
 * across several transactions carries a marker from its first slice's transaction to its
 * last one's. put: the marker (tasks: how many it will have); clear: deleted (-ENOENT when
 * none); discard: every row of the array (its tasks, their events and holds, its spec)
 * and its marker deleted, in the caller's transaction; discard_step: the same in steps,
 * one transaction each if the caller likes: the next at most `max` tasks (lowest ids
 * first, with their events and holds; how many into *deleted), and once none is left
 * the spec and the marker, *done then true (the marker goes last, so a restart between
 * two steps rolls the rest back); writing: the ids of the arrays
 * marked (at most max into ids, the count into *n); rollback (at start, its own
 * transaction): every marked array discarded, how many into *rolled. */
int store_array_writing_put(struct store *st, uint64_t array_id, int64_t tasks,
                            int64_t now_ms) STORE_WUR;
int store_array_writing_clear(struct store *st, uint64_t array_id) STORE_WUR;
int store_array_discard(struct store *st, uint64_t array_id) STORE_WUR;
int store_array_discard_step(struct store *st, uint64_t array_id, size_t max, size_t *deleted,
                             bool *done) STORE_WUR;
int store_arrays_writing(struct store *st, uint64_t *ids, size_t max, size_t *n) STORE_WUR;
int store_arrays_rollback(struct store *st, size_t *rolled) STORE_WUR;
/* An array's tasks as the database holds them: how many in all, how many ended, and how
 * many of those did not complete. What a dependency on the whole array (Slurm's
 * afterok:ARRAY_ID) reads of an array the scheduler no longer, or not yet, holds, and
 * whether its rows are still being written (then not all there). All zero for no such
 * array. */
struct store_array_tally {
    int64_t tasks, ended, failed;
    bool writing;
};
int store_array_tally(struct store *st, uint64_t array_id, struct store_array_tally *out) STORE_WUR;
/* Rewrite the mutable columns (state .. usage) of job j->id. */
int store_job_update(struct store *st, const struct store_job *j) STORE_WUR;
/* Rewrite the request of job j->id (scontrol update): its name, tier, class, spec (its own
 * from now on: spec_id as given, 0 for an array's task) and the core's columns. */
int store_job_respec(struct store *st, const struct store_job *j) STORE_WUR;
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
    bool lean;      /* spec without its "script" and "env" members (lists) */
    /* "NAME@VERSION": jobs of that template version; "NAME": of each version; NULL = any */
    const char *template_ref;
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
    int64_t id; /* the row's (lists page by it); ignored by store_event_add */
};
int store_event_add(struct store *st, const struct store_event *e) STORE_WUR;
typedef int (*store_event_cb)(void *arg, const struct store_event *e);
/* A job's events past the event id `after` (0: all), at most `limit` (< 1: no limit), in
 * order; a non-zero return from cb stops (and is returned). */
int store_event_list(struct store *st, uint64_t job, int64_t after, int limit, store_event_cb cb,
                     void *arg) STORE_WUR;

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

/* A token's public id: the first 12 hex digits of its hash (shown by `docket token list`,
 * used to revoke it; it reveals nothing of the token). */
#define STORE_TOKEN_ID_LEN 12

struct store_token {
    char hash[65];                   /* hex SHA-256 of the token text */
    char id[STORE_TOKEN_ID_LEN + 1]; /* filled when read */
    enum store_token_kind kind;
    char user[64]; /* USER: the user; NODE: the node name; JOIN: who made it */
    char role[16]; /* USER: the global role: admin, operator, viewer or member (none) */
    int64_t created_ms, expires_ms; /* expires 0 = never (node credentials only) */
    int64_t revoked_ms;             /* 0 = not revoked (schema 5) */
    char parent[65]; /* a derived token (a console session): its parent's hash, else "" */
};
/* Hex SHA-256 of `token` into out[65]. */
void store_token_hash(const char *token, char out[65]);
int store_token_put(struct store *st, const struct store_token *t) STORE_WUR;
int store_token_get(struct store *st, const char *hash, struct store_token *out) STORE_WUR;
/* Tokens of `user` (NULL: everyone's) whose id is `id` (NULL: any), oldest first; a
 * non-zero return from cb stops and is returned. */
typedef int (*store_token_cb)(void *arg, const struct store_token *t);
int store_token_list(struct store *st, const char *user, const char *id, store_token_cb cb,
                     void *arg) STORE_WUR;
/* Mark the token revoked at now_ms, and every token derived from it however deep (their
 * parent chains lead to it): the number of those derived ones revoked with it, or
 * -ENOENT when no such token or already revoked. */
int store_token_revoke(struct store *st, const char *hash, int64_t now_ms) STORE_WUR;
/* Remove every token of `kind` for `user` (a node's old credentials on re-register). */
int store_token_delete_user(struct store *st, enum store_token_kind kind,
                            const char *user) STORE_WUR;

/* 1 when `user` has a token of `kind` that has not expired at now_ms, 0 when none, or
 * -errno (a node name with a live credential is taken: docs/agent.md "Node identity"). */
int store_token_live(struct store *st, enum store_token_kind kind, const char *user,
                     int64_t now_ms) STORE_WUR;

/* Remove the tokens of `kind` for `user` that have `role`; and give those with role `from`
 * the role `to` (a node credential's rotation: the "pending" one becomes the "node" one). */
int store_token_delete_role(struct store *st, enum store_token_kind kind, const char *user,
                            const char *role) STORE_WUR;
int store_token_set_role(struct store *st, enum store_token_kind kind, const char *user,
                         const char *from, const char *to) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Runs: one row per start of a job (logs per run, and which node may post for it).      */

struct store_run {
    uint64_t job;
    int run;          /* 1, 2, ... in start order */
    char nodes[1024]; /* ",gpu01,gpu02,": the allocation, rank 0 first */
    int64_t start_ms;
    int final_mask;   /* streams whose output the agent said is complete: 1 stdout, 2 stderr */
    int64_t lease_ms; /* the lease the run was started under (0: the node timeout's) */
};
int store_run_add(struct store *st, const struct store_run *r) STORE_WUR;
/* -ENOENT when the job has no such run. */
int store_run_get(struct store *st, uint64_t job, int run, struct store_run *out) STORE_WUR;
/* The number of the job's latest run (0: never started), or -errno. */
int store_run_last(struct store *st, uint64_t job) STORE_WUR;
/* OR `mask` into the run's final_mask. */
int store_run_set_final(struct store *st, uint64_t job, int run, int mask) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Audit: append-only and hash-chained (schema 5): each row stores the SHA-256 of its
 * canonical content and of the previous row's hash, so a row changed, inserted or removed
 * by hand in the database breaks the chain at that row (docs/security.md "Audit").     */

struct store_audit {
    int64_t id; /* ignored by store_audit_add, which numbers rows itself */
    int64_t time_ms;
    const char *actor, *action, *target, *before, *after, *reason; /* before/after: JSON or NULL */
};
int store_audit_add(struct store *st, const struct store_audit *a) STORE_WUR;

struct store_audit_check {
    int64_t checked;   /* rows whose hash matched */
    int64_t unchained; /* rows written before the chain began (schema < 5) */
    int64_t first_bad; /* id of the first row that breaks the chain; 0 = none */
    int64_t last_id;   /* last good row */
    char head[65];     /* hash of the last good row ("" if none) */
    char why[160];     /* what is wrong with first_bad */
    bool head_found;   /* `want_head` is the hash of a good row */
    /* where a walk in steps is (store_audit_verify_step): the last row read, and the hash
     * the next row must name as its previous */
    int64_t cursor;
    char expect[65];
    /* an anchor (set after store_audit_verify_begin; docs/security.md "Audit"): row
     * anchor_id must be there with hash anchor_hash, and no row from anchor_from on may be
     * without a hash, so a trail cut short, blanked or re-chained from an earlier row
     * fails (first_bad, why) */
    int64_t anchor_id, anchor_from;
    char anchor_hash[65];
    bool anchor_seen;
};
/* The hash of audit row id ("" when it has none), 1 when the row is there, 0 when not,
 * -EIO. */
int store_audit_row_hash(struct store *st, int64_t id, char hash[65]) STORE_WUR;
/* Where the trail stands: its last row's id and hash ("" before the chain, id 0 when
 * empty) and the first row with a hash (0: none yet; looked up only when *chain_from is
 * 0 on entry, else kept: it does not move). 0 or -EIO. */
int store_audit_head(struct store *st, int64_t *last_id, char last_hash[65],
                     int64_t *chain_from) STORE_WUR;
/* Walk the whole trail and recompute the chain. want_head (may be NULL): a head recorded
 * earlier, which must still be in the chain (a trail cut off at its end is otherwise a
 * valid, shorter chain). 0 (look at v->first_bad, v->head_found) or -EIO. */
int store_audit_verify(struct store *st, const char *want_head,
                       struct store_audit_check *v) STORE_WUR;
/* The same walk in steps, so that a long trail does not hold the caller (docketd's loop)
 * for its whole length: store_audit_verify_begin fills v for the first row, then each
 * store_audit_verify_step checks at most max_rows rows past v->cursor. 1 when rows are
 * left (call again; rows appended meanwhile are walked too), 0 when the walk has ended
 * (at the last row or the first bad one), -EIO. */
void store_audit_verify_begin(struct store_audit_check *v);
int store_audit_verify_step(struct store *st, const char *want_head, struct store_audit_check *v,
                            int max_rows) STORE_WUR;

struct store_audit_filter {
    const char *actor, *action, *target;
    int64_t since_ms;
    int64_t after; /* id cursor */
    int limit;
};
typedef int (*store_audit_cb)(void *arg, const struct store_audit *a);
int store_audit_list(struct store *st, const struct store_audit_filter *f, store_audit_cb cb,
                     void *arg) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Project membership (schema 5): role "lead" or "member" of a user in a project.        */

int store_member_put(struct store *st, const char *project, const char *user,
                     const char *role) STORE_WUR;
/* The role into role[len]; -ENOENT when the user is not a member. */
int store_member_get(struct store *st, const char *project, const char *user, char *role,
                     size_t len) STORE_WUR;
/* -ENOENT when there was no such member. */
int store_member_delete(struct store *st, const char *project, const char *user) STORE_WUR;
typedef int (*store_member_cb)(void *arg, const char *project, const char *user, const char *role);
/* Members of `project` (NULL: all) that are `user` (NULL: any), by project then user. */
int store_member_list(struct store *st, const char *project, const char *user, store_member_cb cb,
                      void *arg) STORE_WUR;

/* A job's project and owner without reading its spec. -ENOENT when no such job. */
int store_job_owner(struct store *st, uint64_t id, char *project, size_t plen, char *user,
                    size_t ulen) STORE_WUR;

/* Who holds a job and at what level ("owner", "lead", "operator", "admin"); no row means
 * no hold above the owner's. */
int store_hold_put(struct store *st, uint64_t job, const char *user, const char *level) STORE_WUR;
int store_hold_get(struct store *st, uint64_t job, char *user, size_t ulen, char *level,
                   size_t llen) STORE_WUR;
int store_hold_delete(struct store *st, uint64_t job) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Secrets: per project, sealed by docketd (the store never sees a value or the key).    */

struct store_secret {
    char project[64];
    char name[130];
    unsigned char nonce[12]; /* AES-GCM nonce, fresh for each value */
    unsigned char *sealed;   /* ciphertext then the 16-byte tag; owned (get only) */
    size_t sealed_len;
    char set_by[64];
    int64_t set_ms;
    /* who may receive it (schema 14): a JSON array of "members", "user:NAME" and
     * "class:NAME", checked when a job names it (authz.c); "" is the project's leads only */
    char allow[2048];
};
/* Insert or replace (project, name). */
int store_secret_put(struct store *st, const struct store_secret *s) STORE_WUR;
/* 0, -ENOENT when absent, -EBADMSG when the row is malformed, -EIO. Release after. */
int store_secret_get(struct store *st, const char *project, const char *name,
                     struct store_secret *out) STORE_WUR;
void store_secret_release(struct store_secret *s);
/* 0, -ENOENT when absent, -EIO. */
int store_secret_delete(struct store *st, const char *project, const char *name) STORE_WUR;
/* The project's secrets (project NULL: every project's) by project and name, without
 * their sealed values (sealed is NULL). A non-zero return of cb stops and is returned. */
typedef int (*store_secret_cb)(void *arg, const struct store_secret *s);
int store_secret_list(struct store *st, const char *project, store_secret_cb cb,
                      void *arg) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Services (schema 13, src/store/services.c; docs/services.md): the spec a user gave and  */
/* the state the controller keeps of its replicas, both JSON texts docketd reads.         */

struct store_service {
    char name[64], project[64], user[64];
    char *spec, *status; /* owned by the struct in a get; borrowed in a put */
    int64_t created_ms, updated_ms;
    int endpoint_port; /* its load balancer frontend's port, 0 = none (unique when set) */
};
/* Insert or replace the row of `name`. */
int store_service_put(struct store *st, const struct store_service *sv) STORE_WUR;
/* 0, -ENOENT when absent, -EIO. 0 or -ENOENT both leave out released-safe. */
int store_service_get(struct store *st, const char *name, struct store_service *out) STORE_WUR;
void store_service_release(struct store_service *sv);
/* 0, -ENOENT when absent, -EIO. */
int store_service_delete(struct store *st, const char *name) STORE_WUR;
/* Every service by name (spec and status borrowed for the call). A non-zero return of cb
 * stops and is returned. */
typedef int (*store_service_cb)(void *arg, const struct store_service *sv);
int store_service_list(struct store *st, store_service_cb cb, void *arg) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Idempotency keys of submissions (schema 21, src/store/idem.c; docs/api.md "Retrying a
 * submission")                                                                          */

/* What one key made: the job (or the array, by its first id and tasks) and the SHA-256 of
 * the request body it came with, as 64 lowercase hex. */
struct store_submit_key {
    char user[64];
    char key[132]; /* 1-128 printable characters (the controller checks) */
    char body_sha[65];
    uint64_t first_id;
    bool is_array;
    int64_t tasks;
    int64_t created_ms;
};
/* Write the key in the caller's transaction, with the jobs it made: -EEXIST when the user
 * holds it already, made at or after `since_ms` (nothing written; an older one is
 * replaced), -EIO. */
int store_submit_key_put(struct store *st, const struct store_submit_key *k,
                         int64_t since_ms) STORE_WUR;
/* The user's key into *out: 0, -ENOENT when absent (or older than `since_ms`: pruned
 * soon, and no longer held), -EIO. */
int store_submit_key_get(struct store *st, const char *user, const char *key, int64_t since_ms,
                         struct store_submit_key *out) STORE_WUR;
/* Delete at most `limit` keys made before `before_ms`: how many, or -EIO. */
int store_submit_key_prune(struct store *st, int64_t before_ms, int limit) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Storage areas (schema 16, src/store/storage.c; docs/storage.md)                      */

struct store_storage_area {
    char project[64];
    char pool[64];
    int64_t quota_bytes; /* 0 = none */
    char created_by[64];
    int64_t created_ms;
};
/* Insert or replace (project, pool): a new quota keeps the first creator and time. */
int store_storage_area_put(struct store *st, const struct store_storage_area *a) STORE_WUR;
/* 0, -ENOENT when absent, -EIO. */
int store_storage_area_delete(struct store *st, const char *project, const char *pool) STORE_WUR;
/* Every area by project and pool. A non-zero return of cb stops and is returned. */
typedef int (*store_storage_area_cb)(void *arg, const struct store_storage_area *a);
int store_storage_area_list(struct store *st, store_storage_area_cb cb, void *arg) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Storage lifecycle runs (schema 17, src/store/storage.c; docs/storage.md)             */

struct store_lc_run {
    int64_t id;
    char rule[32], project[64], pool[32], to_pool[32], action[8];
    bool dry_run;
    char node[64];
    char state[12]; /* pending, running, done, failed */
    char requested_by[64];
    int64_t created_ms, finished_ms; /* finished 0 while it runs */
    int64_t files, bytes, freed_bytes, failed, in_use;
    char message[256];
    char *result; /* JSON text ({"age_basis", "list", "unlisted"}), owned; may be NULL */
};
/* Insert or replace by id. */
int store_lc_run_put(struct store *st, const struct store_lc_run *r) STORE_WUR;
/* Runs newest first, at most `limit` (0: all); only the unfinished ones when asked. The
 * record is borrowed for the call. A non-zero return of cb stops and is returned. */
typedef int (*store_lc_run_cb)(void *arg, const struct store_lc_run *r);
int store_lc_run_list(struct store *st, int64_t limit, bool unfinished, store_lc_run_cb cb,
                      void *arg) STORE_WUR;

/* Storage usage over time (schema 18, src/store/storage.c; docs/reports.md): one sample
 * per area per docketd's storage.sample_interval. */
int store_storage_sample_add(struct store *st, int64_t sample_ms, const char *project,
                             const char *pool, int64_t used_bytes) STORE_WUR;
/* Each area's usage integrated over [since, until): byte-milliseconds, each sample held
 * until the next sample of its area (the last until `until`); the sample before `since`
 * counts from `since`. By project and pool. */
typedef int (*store_storage_use_cb)(void *arg, const char *project, const char *pool,
                                    double byte_ms);
int store_storage_byte_ms(struct store *st, int64_t since, int64_t until, store_storage_use_cb cb,
                          void *arg) STORE_WUR;
/* Roll up the samples before `before_ms` (cut down to a multiple of step_ms): from the
 * first step that has a sample off its start, at most max_steps steps, each area's
 * samples of a step become one at the step's start holding their time-weighted mean
 * (written only where the value changes), and the value that held at the span's end is
 * kept there. byte_ms over a window whose ends are multiples of step_ms is the same
 * before and after (to a byte's rounding per step). *out: the span rolled, the rows
 * fewer, whether more is left. */
struct store_rollup {
    int64_t from_ms, until_ms, removed;
    bool more;
};
int store_storage_samples_rollup(struct store *st, int64_t before_ms, int64_t step_ms,
                                 int max_steps, struct store_rollup *out) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Archived job logs (schema 22, src/store/storage.c; docs/storage.md "Job logs")       */

/* One stream (0 stdout, 1 stderr) of one run of a job, moved to a pool: `path` is under
 * the pool's directory, `bytes` the log's size, `stored_bytes` the file's (compressed),
 * sha256 the hex digest of the log's bytes. */
struct store_log_archive {
    uint64_t job;
    int run, stream;
    char pool[32];
    char path[128];
    int64_t bytes, stored_bytes;
    char sha256[65];
    int64_t archived_ms;
};
int store_log_archive_put(struct store *st, const struct store_log_archive *a) STORE_WUR;
/* 0 with *out filled, -ENOENT when that stream is not archived, -EIO. */
int store_log_archive_get(struct store *st, uint64_t job, int run, int stream,
                          struct store_log_archive *out) STORE_WUR;
/* The job's archived streams by run and stream; a non-zero return of cb stops and is
 * returned. */
typedef int (*store_log_archive_cb)(void *arg, const struct store_log_archive *a);
int store_log_archive_list(struct store *st, uint64_t job, store_log_archive_cb cb,
                           void *arg) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Usage samples (schema 9, src/store/usage.c; docs/monitoring.md "Storage")             */
/*
 * Three tables, each bounded: usage_raw keeps every sample (per job and node) for
 * STORE_USAGE_RAW_KEEP_MS, usage_minute one row per job and minute (sums and counts, so
 * averages are exact) for STORE_USAGE_MINUTE_KEEP_MS, usage_summary one row per job
 * forever. store_usage_prune deletes what is past its keep in bounded slices.
 * Every figure that is unknown is -1 in the structs (NULL in the tables).
 */
enum {
    STORE_USAGE_RAW_KEEP_MS = 3600 * 1000,
    STORE_USAGE_GAP_MAX_MS = 20 * 60 * 1000, /* a longer silence counts as no time */
};
#define STORE_USAGE_MINUTE_KEEP_MS ((int64_t)7 * 86400 * 1000)

/* One sample as docketd keeps it: the job's cgroup counters on one node (cumulative over
 * the run: cpu_ms, io_*) and the job's GPUs there folded (util the mean over the GPUs
 * that report one, memory and power summed, temperature the hottest, errors summed). */
struct store_usage_point {
    uint64_t job;
    int run;
    char node[64];
    int64_t time_ms; /* the controller's clock at receipt */
    int64_t cpu_ms, mem_bytes, mem_peak_bytes, io_read_bytes, io_write_bytes;
    int gpu_util; /* -1: no GPU figure (no GPU, or declared GPUs with none declared) */
    int64_t gpu_mem_mb, gpu_power_mw;
    int gpu_temp_c;
    int64_t gpu_errors; /* ECC + XID */
};

/* A job's summary, kept forever. Means are sums over counts. */
struct store_usage_summary {
    uint64_t job;
    int run;             /* the run of the last sample */
    char gpu_source[16]; /* of the last sample: nvml, declared, none */
    int64_t samples, first_ms, last_ms;
    int64_t cpu_ms; /* all runs, all nodes */
    int64_t mem_peak_bytes, io_read_bytes, io_write_bytes;
    int64_t gpu_util_sum, gpu_samples; /* samples that had a GPU utilisation */
    int64_t gpu_idle_ms;               /* time the GPUs spent below the idle threshold */
    int64_t last_busy_ms;              /* last sample at or above it (0: never) */
    int64_t idle_since_ms;             /* first sample of the current idle stretch (0: busy) */
    int64_t idle_flagged_ms;           /* the idle rule flagged this run (0: not) */
    int64_t gpu_errors;                /* the highest count seen (counters, not deltas) */
};

/* One point of a series: a raw sample, or a minute's averages (rates per second). */
struct store_usage_row {
    int64_t time_ms; /* sample time, or the minute's start */
    int64_t samples;
    double cpu_cores;                      /* CPU seconds per second over the point, -1 unknown */
    int64_t mem_bytes;                     /* mean */
    int64_t mem_peak_bytes;                /* highest */
    int64_t io_read_bytes, io_write_bytes; /* in the point */
    int gpu_util;                          /* mean, -1 none */
    int64_t gpu_mem_mb, gpu_power_mw;      /* mean, -1 none */
    char node[64];                         /* raw: the node; minute: "" (all nodes) */
};

/* Pure: fold point p into summary s (prev: the last earlier point of the same job and
 * node, or NULL). A counter that went down (a new run) counts from zero. idle_below: GPU
 * utilisation under it is idle (0: nothing is idle). Deltas of p go to *d (cpu_ms,
 * io_*: what p adds; time_ms: the span it covers). A summary for another run clears the
 * idle stretch and the flag. */
void store_usage_fold(struct store_usage_summary *s, const struct store_usage_point *prev,
                      const struct store_usage_point *p, const char *gpu_source, int idle_below,
                      struct store_usage_point *d);
/* Store one point: raw row, its minute, the job's summary (folded as above; the new
 * summary into *out when not NULL). */
int store_usage_add(struct store *st, const struct store_usage_point *p, const char *gpu_source,
                    int idle_below, struct store_usage_summary *out) STORE_WUR;
/* 0 or -ENOENT (no sample yet) or -EIO. */
int store_usage_summary_get(struct store *st, uint64_t job,
                            struct store_usage_summary *out) STORE_WUR;
/* Record that the idle rule flagged the job's current stretch. */
int store_usage_flag(struct store *st, uint64_t job, int64_t flagged_ms) STORE_WUR;
/* The job's points since since_ms in time order: raw samples when `raw`, else minutes;
 * at most `limit` (the latest ones). cb's non-zero return stops and is returned. */
typedef int (*store_usage_cb)(void *arg, const struct store_usage_row *r);
int store_usage_series(struct store *st, uint64_t job, bool raw, int64_t since_ms, int limit,
                       store_usage_cb cb, void *arg) STORE_WUR;
/* Delete raw rows older than now - STORE_USAGE_RAW_KEEP_MS and minutes older than now -
 * STORE_USAGE_MINUTE_KEEP_MS, at most `limit` rows of each: the count deleted (call again
 * while it is > 0), or -EIO. */
int store_usage_prune(struct store *st, int64_t now_ms, int limit) STORE_WUR;
/* Rows in each table (for tests and the benchmark). */
int store_usage_counts(struct store *st, int64_t *raw, int64_t *minutes,
                       int64_t *summaries) STORE_WUR;
/* Run ends (schema 10; ops.c): the latest run of `job` still open ends at end_ms, the job
 * then in `state` ("PENDING" when requeued), for `cause` (a stop cause name or ""). */
int store_run_end(struct store *st, uint64_t job, int64_t end_ms, const char *state,
                  const char *cause) STORE_WUR;
/* The agent confirmed the latest run of `job` started at start_ms (the job's start_ms):
 * the run counts from there (before, its start was the placement decision). */
int store_run_started(struct store *st, uint64_t job, int64_t start_ms) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Alerts (schema 10; ops.c; docs/alerts.md): one history row per firing of an alert
 * instance (resolved_ms 0 while it fires), and the silences.                            */

struct store_alert {
    int64_t id;
    char rule[64], key[128], kind[32], severity[16], summary[256];
    int64_t fired_ms, resolved_ms;
    bool silenced;
};
/* Insert a firing; *id gets its row id. */
int store_alert_fire(struct store *st, const struct store_alert *a, int64_t *id) STORE_WUR;
int store_alert_resolve(struct store *st, int64_t id, int64_t resolved_ms) STORE_WUR;
/* Newest first: open ones only (open_only), or all with id < before (0: from the newest),
 * at most limit rows. A non-zero return of cb stops and is returned. */
typedef int (*store_alert_cb)(void *arg, const struct store_alert *a);
int store_alert_list(struct store *st, bool open_only, int64_t before, int limit, store_alert_cb cb,
                     void *arg) STORE_WUR;
/* Bounded retention: drop resolved rows resolved before `older_ms`, then the oldest
 * resolved rows past `keep_rows` in all. */
int store_alert_prune(struct store *st, int64_t older_ms, int64_t keep_rows) STORE_WUR;

struct store_silence {
    int64_t id;
    char rule[64], key[128];
    int64_t until_ms, created_ms;
    char created_by[64], reason[256];
};
int store_silence_add(struct store *st, const struct store_silence *s, int64_t *id) STORE_WUR;
/* 0, -ENOENT when no such silence, -EIO. */
int store_silence_delete(struct store *st, int64_t id) STORE_WUR;
/* Silences still in force at now_ms (until_ms > now), oldest first; ended ones are
 * removed first. */
typedef int (*store_silence_cb)(void *arg, const struct store_silence *s);
int store_silence_list(struct store *st, int64_t now_ms, store_silence_cb cb, void *arg) STORE_WUR;

/* ------------------------------------------------------------------------------------ */
/* Reports (ops.c; docs/reports.md): aggregates over [since, until) read from the runs,
 * jobs and events. Times of runs are clipped to the window; a run still open counts up
 * to `until`. GPU and CPU time are exact integers (ms x devices).                       */

enum store_report_by {
    STORE_BY_PROJECT,
    STORE_BY_USER,
    STORE_BY_TIER,
    STORE_BY_CLASS,
    STORE_BY_GPU_TYPE,
    STORE_BY_COUNT
};
/* "project", "user", "tier", "class", "gpu-type" -> enum value, or -1. */
int store_report_by_parse(const char *s);

struct store_report_row {
    const char *key, *gpu_type; /* borrowed for the callback */
    int64_t runs;
    int64_t gpu_ms, cpu_ms; /* device-milliseconds inside the window */
    int64_t preemptions;    /* runs ended by preemption inside the window */
    int64_t preempt_gpu_ms; /* GPU time of those runs (work lost unless checkpointed) */
};
typedef int (*store_report_cb)(void *arg, const struct store_report_row *r);
/* One row per (key, GPU type of the run's first node). */
int store_report_usage(struct store *st, enum store_report_by by, int64_t since, int64_t until,
                       store_report_cb cb, void *arg) STORE_WUR;
/* Jobs that ended in the window: (key, final state, count). */
typedef int (*store_count_cb)(void *arg, const char *key, const char *what, int64_t n);
int store_report_outcomes(struct store *st, enum store_report_by by, int64_t since, int64_t until,
                          store_count_cb cb, void *arg) STORE_WUR;
/* Queue waits of the runs that started in the window (from submit, or from the end of
 * the run before), ordered by key then wait: (key, wait_ms). */
typedef int (*store_wait_cb)(void *arg, const char *key, int64_t wait_ms);
int store_report_waits(struct store *st, enum store_report_by by, int64_t since, int64_t until,
                       store_wait_cb cb, void *arg) STORE_WUR;
/* Idle GPU time from the usage summaries (schema 9; docs/reports.md "Idle GPU-hours"):
 * per key (the job's, or the GPU type of the run of its last sample), each job's
 * gpu_idle_ms (node time under the idle threshold) x its GPUs per node, in the share of
 * its sampled span [first_ms, last_ms] that lies inside the window: (key, idle_gpu_ms). */
typedef int (*store_idle_cb)(void *arg, const char *key, int64_t idle_gpu_ms);
int store_report_idle(struct store *st, enum store_report_by by, int64_t since, int64_t until,
                      store_idle_cb cb, void *arg) STORE_WUR;
/* Waiting intervals that overlap the window (a run's wait, or the wait still open or cut
 * by the job's end), by start: (tier, GPUs asked, begin, end). `now` ends open ones. */
typedef int (*store_interval_cb)(void *arg, const char *tier, int64_t gpus, int64_t begin,
                                 int64_t end);
int store_report_wait_intervals(struct store *st, int64_t since, int64_t until, int64_t now,
                                store_interval_cb cb, void *arg) STORE_WUR;
/* The runs of project's jobs that hold GPUs and overlap [since, until), by start:
 * (GPUs held: per node x nodes, start, end; end 0 while running). The project page's
 * chart of GPU use over time (controller/usage.c). */
typedef int (*store_span_cb)(void *arg, int64_t gpus, int64_t start_ms, int64_t end_ms);
int store_project_runs(struct store *st, const char *project, int64_t since, int64_t until,
                       store_span_cb cb, void *arg) STORE_WUR;
/* Repeated job specs: jobs submitted in the window with the same project and command (or
 * the first 200 characters of their script), seen at least twice, most frequent first. */
typedef int (*store_spec_cb)(void *arg, const char *project, const char *command, int64_t jobs,
                             int64_t gpu_ms);
int store_report_repeats(struct store *st, int64_t since, int64_t until, int limit,
                         store_spec_cb cb, void *arg) STORE_WUR;

#endif
