/*
 * lifecycle.h - the shapes and the pure rules of storage lifecycle runs (docs/storage.md
 * "Lifecycle rules"), one reader each:
 *   - the `lifecycle` list of the policy's `storage:` section (struct lifecycle_rule, in
 *     protocol/storage.h);
 *   - a run, as docketd hands it to an agent in the heartbeat reply's `lifecycle`: one
 *     rule on one project's area, with everything the agent needs and no policy;
 *   - a run's state and result, as the agent reports it in the heartbeat's `lifecycle`.
 * And the pure decisions both sides share: whether a file is due under a run, and when a
 * rule is next due. Nothing here holds state or does I/O (the caller gives the clock).
 */
#ifndef DOCKET_PROTOCOL_LIFECYCLE_H
#define DOCKET_PROTOCOL_LIFECYCLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/error.h"
#include "protocol/storage.h"

enum {
    LC_PATH_MAX = 512,  /* a file's path in a result, relative to the area */
    LC_ERROR_MAX = 160, /* why one file failed */
    LC_LIST_MAX = 200,  /* files listed in one result (the rest only counted) */
    LC_MAX_RUNS = 64,   /* runs in one heartbeat or reply */
    LC_MARKER_MAX = 32, /* the marker file's name */
};

/* The file that marks a directory's tree as intermediate outputs. */
#define LC_MARKER ".docket-intermediate"

/* The policy's `lifecycle` list, checked against out's pools (parsed first). */
int storage_rules_parse(const json_t *v, struct storage_policy *out,
                        struct proto_error *err) PROTO_WUR;
json_t *storage_rules_json(const struct storage_policy *p);
const struct lifecycle_rule *lifecycle_rule_find(const struct storage_policy *p, const char *name);
const char *lifecycle_action_name(enum lifecycle_action a);

/* ---- docketd -> agent ---------------------------------------------------------------- */

struct lifecycle_run {
    int64_t id;
    char rule[STORAGE_RULE_NAME_MAX];
    char project[STORAGE_NAME_MAX];
    enum lifecycle_action action;
    char from[STORAGE_PATH_MAX]; /* the source pool's path (the area is FROM/projects/P) */
    char to[STORAGE_PATH_MAX];   /* MOVE: the target pool's path */
    int64_t after_ms, now_ms;    /* docketd's clock: the ages are counted to it */
    int64_t rate_bytes;          /* 0: no limit */
    bool marker, dry_run;
    char glob[STORAGE_GLOB_MAX];
};

json_t *lifecycle_run_json(const struct lifecycle_run *r);
int lifecycle_run_parse(const json_t *v, const char *path, struct lifecycle_run *out,
                        struct proto_error *err) PROTO_WUR;

/* ---- agent -> docketd ---------------------------------------------------------------- */

struct lifecycle_entry {
    char path[LC_PATH_MAX];   /* relative to the area */
    int64_t bytes, age_s;     /* its size; how long since its last use */
    char error[LC_ERROR_MAX]; /* "" when it was (or would be) moved or deleted */
};

/* A run the agent holds: running, or done with its counts. files/bytes: moved or deleted
 * (a dry run: would be); freed_bytes: the space given back on the source; failed: files
 * that could not be (the source stays); in_use: files left because something had them
 * open; dirs_removed: directories the run's moves and deletes left empty, removed. The list
 * has the first LC_LIST_MAX files (unlisted counts the rest). */
struct lifecycle_result {
    int64_t id;
    bool done, ok;
    char message[STORAGE_MSG_MAX + 1];
    char age_basis[16]; /* "atime", or "mtime" where the file system keeps no access times */
    int64_t files, bytes, freed_bytes, failed, in_use, unlisted, dirs_removed;
    struct lifecycle_entry *list; /* owned */
    size_t nlist;
};

json_t *lifecycle_result_json(const struct lifecycle_result *r);
int lifecycle_result_parse(const json_t *v, const char *path, struct lifecycle_result *out,
                           struct proto_error *err) PROTO_WUR;
void lifecycle_result_release(struct lifecycle_result *r);
/* The heartbeat reply's `lifecycle` (runs) and the heartbeat's (results): lists of at
 * most LC_MAX_RUNS; *out owned (free with free(), and results with
 * lifecycle_results_free). */
int lifecycle_runs_parse(const json_t *v, struct lifecycle_run **out, size_t *n,
                         struct proto_error *err) PROTO_WUR;
int lifecycle_results_parse(const json_t *v, struct lifecycle_result **out, size_t *n,
                            struct proto_error *err) PROTO_WUR;
void lifecycle_results_free(struct lifecycle_result *r, size_t n);
/* Append a file to r's list (counted in unlisted past LC_LIST_MAX). */
void lifecycle_result_list(struct lifecycle_result *r, const char *path, int64_t bytes,
                           int64_t age_s, const char *error);

/* ---- the pure rules ------------------------------------------------------------------ */

/* What the agent knows of one regular file. */
struct lifecycle_file {
    const char *name;           /* its name in its directory */
    int64_t atime_ms, mtime_ms; /* as stat gives them */
    bool noatime;               /* its file system keeps no access times */
    bool marked;                /* a directory above it (to the area) has the marker */
};

/* The file's last use: the later of its access and change, or its change alone where
 * access times are not kept (an atime that never moves would make every file look
 * unused). */
int64_t lifecycle_last_use_ms(const struct lifecycle_file *f);
/* True when the run moves or deletes the file: unused for at least after_ms at now_ms,
 * marked when the run asks for a marker, its name matching the glob when there is one.
 * The marker file itself is never due. */
bool lifecycle_file_due(const struct lifecycle_run *r, const struct lifecycle_file *f);
/* When a rule is next due: never (-1) without every_ms; at once (now) when it never ran;
 * else its last run plus every_ms. */
int64_t lifecycle_next_due_ms(const struct lifecycle_rule *rule, int64_t last_run_ms,
                              int64_t now_ms);
/* True when the rule covers the project's area (its projects, or every area). */
bool lifecycle_rule_covers(const struct lifecycle_rule *rule, const char *project);

#endif
