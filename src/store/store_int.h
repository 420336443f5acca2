/*
 * store_int.h - what the files of src/store/ share (not a public API): the database handle
 * and the error helper, for the statements that live beside store.c (ops.c: alerts and
 * reports). Their statements are prepared per call: none is on a hot path.
 */
#ifndef DOCKET_STORE_STORE_INT_H
#define DOCKET_STORE_STORE_INT_H

#include <sqlite3.h>

#include "store/store.h"

/* A row's spec: its own, or its array's (schema 7). */
#define SPEC_OF(COL)                                                                               \
    "CASE WHEN spec_id = 0 THEN " COL " ELSE (SELECT s." COL " FROM job_specs s"                   \
    " WHERE s.id = jobs.spec_id) END"

sqlite3 *store_db(struct store *st);
/* Keep "what: sqlite's message" for store_errmsg; returns -EIO. */
int store_fail(struct store *st, const char *what);

#endif
