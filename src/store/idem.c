/*
 * idem.c - the idempotency keys of submissions in the database (store.h "Idempotency
 * keys"): one row per user and key, naming what the submission made and the hash of the
 * body it came with, written in the submission's own transaction so the key exists
 * exactly when its jobs do; and their pruning after the window. Statements prepared per
 * call: only submissions that carry a key pay for them.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "store/store_int.h"
#include "util/str.h"

int store_submit_key_put(struct store *st, const struct store_submit_key *k, int64_t since_ms)
{
    struct db_stmt *s = NULL;
    /* a conflict changes nothing, then the count says so: a key already held is the
     * caller's 409 or replay, never a failed statement that spoils the request's
     * transaction; one past its window (not pruned yet) is taken over */
    if (store_prepare(
            st,
            "INSERT INTO submit_keys(user_name, idem_key, body_sha, first_id, is_array,"
            " tasks, created_ms) VALUES (?1,?2,?3,?4,?5,?6,?7)"
            " ON CONFLICT(user_name, idem_key) DO UPDATE SET body_sha = excluded.body_sha,"
            " first_id = excluded.first_id, is_array = excluded.is_array,"
            " tasks = excluded.tasks, created_ms = excluded.created_ms"
            " WHERE submit_keys.created_ms < ?8",
            &s) < 0)
        return -EIO;
    store_bind_text(s, 1, k->user);
    store_bind_text(s, 2, k->key);
    store_bind_text(s, 3, k->body_sha);
    db_bind_int64(s, 4, (int64_t)k->first_id);
    db_bind_int64(s, 5, k->is_array ? 1 : 0);
    db_bind_int64(s, 6, k->tasks);
    db_bind_int64(s, 7, k->created_ms);
    db_bind_int64(s, 8, since_ms);
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "put submit key");
    if (rc == 0 && db_changes(store_db(st)) == 0)
        rc = -EEXIST;
    db_finalize(s);
    return rc;
}

int store_submit_key_get(struct store *st, const char *user, const char *key, int64_t since_ms,
                         struct store_submit_key *out)
{
    struct db_stmt *s = NULL;
    if (store_prepare(st,
                      "SELECT body_sha, first_id, is_array, tasks, created_ms FROM submit_keys"
                      " WHERE user_name = ?1 AND idem_key = ?2 AND created_ms >= ?3",
                      &s) < 0)
        return -EIO;
    store_bind_text(s, 1, user);
    store_bind_text(s, 2, key);
    db_bind_int64(s, 3, since_ms);
    int step = db_step(s);
    if (step == DB_ROW) {
        memset(out, 0, sizeof(*out));
        str_copy(out->user, sizeof(out->user), user);
        str_copy(out->key, sizeof(out->key), key);
        store_col_copy(s, 0, out->body_sha, sizeof(out->body_sha));
        out->first_id = (uint64_t)db_column_int64(s, 1);
        out->is_array = db_column_int64(s, 2) != 0;
        out->tasks = db_column_int64(s, 3);
        out->created_ms = db_column_int64(s, 4);
    }
    int rc = step == DB_ROW ? 0 : step == DB_DONE ? -ENOENT : store_fail(st, "get submit key");
    db_finalize(s);
    return rc;
}

int store_submit_key_prune(struct store *st, int64_t before_ms, int limit)
{
    struct db_stmt *s = NULL;
    if (store_prepare(st,
                      "DELETE FROM submit_keys WHERE (user_name, idem_key) IN (SELECT user_name,"
                      " idem_key FROM submit_keys WHERE created_ms < ?1 LIMIT ?2)",
                      &s) < 0)
        return -EIO;
    db_bind_int64(s, 1, before_ms);
    db_bind_int64(s, 2, limit);
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "prune submit keys");
    if (rc == 0)
        rc = db_changes(store_db(st));
    db_finalize(s);
    return rc;
}
