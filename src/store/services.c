/*
 * services.c - services in the database (store.h "Services"): one row per service, its
 * spec and its replicas' state as JSON texts that only docketd's services.c reads.
 * Statements prepared per call: services change a few times a minute at most.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "store/store_int.h"
#include "util/str.h"

static struct db_stmt *prepare(struct store *st, const char *sql)
{
    struct db_stmt *s = NULL;
    return store_prepare(st, sql, &s) < 0 ? NULL : s;
}

int store_service_put(struct store *st, const struct store_service *sv)
{
    struct db_stmt *s =
        prepare(st, "INSERT INTO services(name, project, user_name, spec, status, created_ms,"
                    " updated_ms, endpoint_port) VALUES (?1,?2,?3,?4,?5,?6,?7,?8)"
                    " ON CONFLICT(name) DO UPDATE"
                    " SET project = excluded.project, user_name = excluded.user_name,"
                    " spec = excluded.spec, status = excluded.status,"
                    " updated_ms = excluded.updated_ms, endpoint_port = excluded.endpoint_port");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, sv->name);
    store_bind_text(s, 2, sv->project);
    store_bind_text(s, 3, sv->user);
    store_bind_text(s, 4, sv->spec);
    store_bind_text(s, 5, sv->status);
    db_bind_int64(s, 6, sv->created_ms);
    db_bind_int64(s, 7, sv->updated_ms);
    db_bind_int64(s, 8, sv->endpoint_port);
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "put service");
    db_finalize(s);
    return rc;
}

static const char service_cols[] =
    "SELECT name, project, user_name, spec, status, created_ms, updated_ms, endpoint_port"
    " FROM services";

/* The row's columns into out; spec and status borrowed from the statement. */
static void service_row(struct db_stmt *s, struct store_service *out)
{
    memset(out, 0, sizeof(*out));
    store_col_copy(s, 0, out->name, sizeof(out->name));
    store_col_copy(s, 1, out->project, sizeof(out->project));
    store_col_copy(s, 2, out->user, sizeof(out->user));
    out->spec = (char *)db_column_text(s, 3);
    out->status = (char *)db_column_text(s, 4);
    out->created_ms = db_column_int64(s, 5);
    out->updated_ms = db_column_int64(s, 6);
    out->endpoint_port = (int)db_column_int64(s, 7);
}

int store_service_get(struct store *st, const char *name, struct store_service *out)
{
    char sql[256];
    snprintf(sql, sizeof(sql), "%s WHERE name = ?1", service_cols);
    memset(out, 0, sizeof(*out));
    struct db_stmt *s = prepare(st, sql);
    if (!s)
        return -EIO;
    store_bind_text(s, 1, name);
    int step = db_step(s), rc = -ENOENT;
    if (step == DB_ROW) {
        service_row(s, out);
        out->spec = store_col_dup(s, 3);
        out->status = store_col_dup(s, 4);
        rc = 0;
    } else if (step != DB_DONE) {
        rc = store_fail(st, "get service");
    }
    db_finalize(s);
    return rc;
}

void store_service_release(struct store_service *sv)
{
    free(sv->spec);
    free(sv->status);
    sv->spec = sv->status = NULL;
}

int store_service_delete(struct store *st, const char *name)
{
    struct db_stmt *s = prepare(st, "DELETE FROM services WHERE name = ?1");
    if (!s)
        return -EIO;
    store_bind_text(s, 1, name);
    int rc = db_step(s) == DB_DONE ? 0 : store_fail(st, "delete service");
    if (rc == 0 && db_changes(store_db(st)) == 0)
        rc = -ENOENT;
    db_finalize(s);
    return rc;
}

int store_service_list(struct store *st, store_service_cb cb, void *arg)
{
    char sql[256];
    snprintf(sql, sizeof(sql), "%s ORDER BY name", service_cols);
    struct db_stmt *s = prepare(st, sql);
    if (!s)
        return -EIO;
    int step, rc = 0;
    while ((step = db_step(s)) == DB_ROW) {
        struct store_service sv;
        service_row(s, &sv);
        if ((rc = cb(arg, &sv)))
            break;
    }
    if (!rc && step != DB_DONE)
        rc = store_fail(st, "list services");
    db_finalize(s);
    return rc;
}
