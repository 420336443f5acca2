/*
 * storage.c - project storage areas in the database (store.h "Storage areas"): which
 * project has a directory on which pool, with which quota. The pools are the policy's;
 * usage is the agents' and lives in docketd's memory. Statements prepared per call:
 * they are rare.
 */
#include <errno.h>
#include <string.h>

#include "store/store_int.h"

static struct db_stmt *prepare(struct store *st, const char *sql)
{
    struct db_stmt *s = NULL;
    return store_prepare(st, sql, &s) < 0 ? NULL : s;
}

int store_storage_area_put(struct store *st, const struct store_storage_area *a)
{
    struct db_stmt *s =
        prepare(st, "INSERT INTO storage_areas(project, pool, quota_bytes, created_by,"
                    " created_ms) VALUES (?1,?2,?3,?4,?5) ON CONFLICT(project, pool)"
                    " DO UPDATE SET quota_bytes = excluded.quota_bytes");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, a->project);
    store_bind_text(s, 2, a->pool);
    db_bind_int64(s, 3, a->quota_bytes);
    store_bind_text(s, 4, a->created_by);
    db_bind_int64(s, 5, a->created_ms);
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "put storage area");
    db_finalize(s);
    return rc;
}

int store_storage_area_delete(struct store *st, const char *project, const char *pool)
{
    struct db_stmt *s = prepare(st, "DELETE FROM storage_areas WHERE project = ?1 AND pool = ?2");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, project);
    store_bind_text(s, 2, pool);
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "delete storage area");
    if (rc == 0 && db_changes(store_db(st)) == 0)
        rc = -ENOENT;
    db_finalize(s);
    return rc;
}

int store_storage_area_list(struct store *st, store_storage_area_cb cb, void *arg)
{
    struct db_stmt *s = prepare(st, "SELECT project, pool, quota_bytes, created_by, created_ms"
                                    " FROM storage_areas ORDER BY project, pool");
    if (!s)
        return -EIO;
    int step, rc = 0;
    while ((step = db_step(s)) == DB_ROW) {
        struct store_storage_area a;
        memset(&a, 0, sizeof(a));
        store_col_copy(s, 0, a.project, sizeof(a.project));
        store_col_copy(s, 1, a.pool, sizeof(a.pool));
        a.quota_bytes = db_column_int64(s, 2);
        store_col_copy(s, 3, a.created_by, sizeof(a.created_by));
        a.created_ms = db_column_int64(s, 4);
        if ((rc = cb(arg, &a)))
            break;
    }
    if (!rc && step != DB_DONE)
        rc = store_fail(st, "list storage areas");
    db_finalize(s);
    return rc;
}
