/*
 * store_int.h - what the files of src/store/ share (not a public API): the connection,
 * the error text, a cache of prepared statements for usage.c (a hot path), and the spec
 * helper for the statements of ops.c (alerts and reports, prepared per call).
 */
#ifndef DOCKET_STORE_STORE_INT_H
#define DOCKET_STORE_STORE_INT_H

#include <sqlite3.h>

#include "store/store.h"

enum { STORE_USAGE_NSTMT = 12 };

/* A row's spec: its own, or its array's (schema 7). */
#define SPEC_OF(COL)                                                                               \
    "CASE WHEN spec_id = 0 THEN " COL " ELSE (SELECT s." COL " FROM job_specs s"                   \
    " WHERE s.id = jobs.spec_id) END"

sqlite3 *store_db(struct store *st);
/* Keep "what: sqlite's message" for store_errmsg; always -EIO. */
int store_fail(struct store *st, const char *what);
/* Keep `msg` for store_errmsg (an error of ours, not SQLite's). */
void store_set_errmsg(struct store *st, const char *msg);
/* A statement prepared for one call (0, or -EIO with the error set), and stepped once for
   a statement that returns nothing, then finalized (0, or -EIO naming `what`): the SQL
   run now and then, outside store.c's prepared-once set. */
int store_prepare(struct store *st, const char *sql, sqlite3_stmt **s);
int store_step_finalize(struct store *st, sqlite3_stmt *s, const char *what);
/* usage.c's statement `i` (0..STORE_USAGE_NSTMT-1), prepared on first use from `sql`
 * and kept until store_close; NULL after store_fail. */
sqlite3_stmt *store_usage_stmt(struct store *st, int i, const char *sql);

#endif
