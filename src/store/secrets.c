/*
 * secrets.c - secrets in SQLite (store.h "Secrets"): a project's named values, sealed by
 * docketd (nonce and sealed bytes: the store never sees a value or the key). Statements
 * prepared per call: they are rare.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "util/xalloc.h"

static sqlite3_stmt *prepare(struct store *st, const char *sql)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL) != SQLITE_OK) {
        store_fail(st, "prepare");
        return NULL;
    }
    return s;
}

int store_secret_put(struct store *st, const struct store_secret *sec)
{
    sqlite3_stmt *s = prepare(st, "INSERT INTO secrets(project, name, nonce, sealed, set_by,"
                                  " set_ms) VALUES (?1,?2,?3,?4,?5,?6) ON CONFLICT(project, name)"
                                  " DO UPDATE SET nonce = excluded.nonce, sealed = excluded.sealed,"
                                  " set_by = excluded.set_by, set_ms = excluded.set_ms");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, sec->project);
    store_bind_text(s, 2, sec->name);
    sqlite3_bind_blob(s, 3, sec->nonce, (int)sizeof(sec->nonce), SQLITE_STATIC);
    sqlite3_bind_blob(s, 4, sec->sealed, (int)sec->sealed_len, SQLITE_STATIC);
    store_bind_text(s, 5, sec->set_by);
    sqlite3_bind_int64(s, 6, sec->set_ms);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_fail(st, "put secret");
    sqlite3_finalize(s);
    return rc;
}

static void secret_row(sqlite3_stmt *s, struct store_secret *out)
{
    memset(out, 0, sizeof(*out));
    store_col_copy(s, 0, out->project, sizeof(out->project));
    store_col_copy(s, 1, out->name, sizeof(out->name));
    store_col_copy(s, 2, out->set_by, sizeof(out->set_by));
    out->set_ms = sqlite3_column_int64(s, 3);
}

int store_secret_get(struct store *st, const char *project, const char *name,
                     struct store_secret *out)
{
    sqlite3_stmt *s = prepare(st, "SELECT project, name, set_by, set_ms, nonce, sealed"
                                  " FROM secrets WHERE project = ?1 AND name = ?2");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, project);
    store_bind_text(s, 2, name);
    int step = sqlite3_step(s), rc = -ENOENT;
    if (step == SQLITE_ROW) {
        secret_row(s, out);
        const void *nonce = sqlite3_column_blob(s, 4);
        int nlen = sqlite3_column_bytes(s, 4);
        const void *sealed = sqlite3_column_blob(s, 5);
        int slen = sqlite3_column_bytes(s, 5);
        rc = -EBADMSG; /* a row of the wrong shape opens as nothing */
        if (nonce && nlen == (int)sizeof(out->nonce) && sealed && slen > 0) {
            memcpy(out->nonce, nonce, sizeof(out->nonce));
            out->sealed = xmalloc((size_t)slen);
            memcpy(out->sealed, sealed, (size_t)slen);
            out->sealed_len = (size_t)slen;
            rc = 0;
        }
    } else if (step != SQLITE_DONE) {
        rc = store_fail(st, "get secret");
    }
    sqlite3_finalize(s);
    return rc;
}

void store_secret_release(struct store_secret *s)
{
    free(s->sealed);
    s->sealed = NULL;
    s->sealed_len = 0;
}

int store_secret_delete(struct store *st, const char *project, const char *name)
{
    sqlite3_stmt *s = prepare(st, "DELETE FROM secrets WHERE project = ?1 AND name = ?2");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, project);
    store_bind_text(s, 2, name);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : store_fail(st, "delete secret");
    if (rc == 0 && sqlite3_changes(store_db(st)) == 0)
        rc = -ENOENT;
    sqlite3_finalize(s);
    return rc;
}

int store_secret_list(struct store *st, const char *project, store_secret_cb cb, void *arg)
{
    sqlite3_stmt *s = prepare(st, "SELECT project, name, set_by, set_ms FROM secrets"
                                  " WHERE ?1 IS NULL OR project = ?1 ORDER BY project, name");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, project);
    int step, rc = 0;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_secret sec;
        secret_row(s, &sec);
        if ((rc = cb(arg, &sec)))
            break;
    }
    if (!rc && step != SQLITE_DONE)
        rc = store_fail(st, "list secrets");
    sqlite3_finalize(s);
    return rc;
}
