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

static struct db_stmt *prepare(struct store *st, const char *sql)
{
    struct db_stmt *s = NULL;
    return store_prepare(st, sql, &s) < 0 ? NULL : s;
}

int store_secret_put(struct store *st, const struct store_secret *sec)
{
    struct db_stmt *s =
        prepare(st, "INSERT INTO secrets(project, name, nonce, sealed, set_by,"
                    " set_ms, allow) VALUES (?1,?2,?3,?4,?5,?6,?7) ON CONFLICT(project, name)"
                    " DO UPDATE SET nonce = excluded.nonce, sealed = excluded.sealed,"
                    " set_by = excluded.set_by, set_ms = excluded.set_ms,"
                    " allow = excluded.allow");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, sec->project);
    store_bind_text(s, 2, sec->name);
    db_bind_blob(s, 3, sec->nonce, sizeof(sec->nonce));
    db_bind_blob(s, 4, sec->sealed, sec->sealed_len);
    store_bind_text(s, 5, sec->set_by);
    db_bind_int64(s, 6, sec->set_ms);
    store_bind_text(s, 7, sec->allow);
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "put secret");
    db_finalize(s);
    return rc;
}

static void secret_row(struct db_stmt *s, struct store_secret *out)
{
    memset(out, 0, sizeof(*out));
    store_col_copy(s, 0, out->project, sizeof(out->project));
    store_col_copy(s, 1, out->name, sizeof(out->name));
    store_col_copy(s, 2, out->set_by, sizeof(out->set_by));
    out->set_ms = db_column_int64(s, 3);
    store_col_copy(s, 4, out->allow, sizeof(out->allow));
}

int store_secret_get(struct store *st, const char *project, const char *name,
                     struct store_secret *out)
{
    struct db_stmt *s = prepare(st, "SELECT project, name, set_by, set_ms, allow, nonce, sealed"
                                    " FROM secrets WHERE project = ?1 AND name = ?2");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, project);
    store_bind_text(s, 2, name);
    int step = db_step(s), rc = -ENOENT;
    if (step == DB_ROW) {
        secret_row(s, out);
        const void *nonce = db_column_blob(s, 5);
        int nlen = (int)db_column_bytes(s, 5);
        const void *sealed = db_column_blob(s, 6);
        int slen = (int)db_column_bytes(s, 6);
        rc = -EBADMSG; /* a row of the wrong shape opens as nothing */
        if (nonce && nlen == (int)sizeof(out->nonce) && sealed && slen > 0) {
            memcpy(out->nonce, nonce, sizeof(out->nonce));
            out->sealed = xmalloc((size_t)slen);
            memcpy(out->sealed, sealed, (size_t)slen);
            out->sealed_len = (size_t)slen;
            rc = 0;
        }
    } else if (step != DB_DONE) {
        rc = store_fail(st, "get secret");
    }
    db_finalize(s);
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
    struct db_stmt *s = prepare(st, "DELETE FROM secrets WHERE project = ?1 AND name = ?2");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, project);
    store_bind_text(s, 2, name);
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "delete secret");
    if (rc == 0 && db_changes(store_db(st)) == 0)
        rc = -ENOENT;
    db_finalize(s);
    return rc;
}

int store_secret_list(struct store *st, const char *project, store_secret_cb cb, void *arg)
{
    struct db_stmt *s = prepare(st, "SELECT project, name, set_by, set_ms, allow FROM secrets"
                                    " WHERE ?1 IS NULL OR project = ?1 ORDER BY project, name");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, project);
    int step, rc = 0;
    while ((step = db_step(s)) == DB_ROW) {
        struct store_secret sec;
        secret_row(s, &sec);
        if ((rc = cb(arg, &sec)))
            break;
    }
    if (!rc && step != DB_DONE)
        rc = store_fail(st, "list secrets");
    db_finalize(s);
    return rc;
}
