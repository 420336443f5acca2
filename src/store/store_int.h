/*
 * store_int.h - what store.c shares with the other files of src/store/ (not a public
 * API): the connection, the error text, and a cache of prepared statements per file.
 */
#ifndef DOCKET_STORE_STORE_INT_H
#define DOCKET_STORE_STORE_INT_H

#include <sqlite3.h>

#include "store/store.h"

enum { STORE_USAGE_NSTMT = 12 };

sqlite3 *store_db(struct store *st);
/* Keep "what: sqlite's message" for store_errmsg; always -EIO. */
int store_fail(struct store *st, const char *what);
/* usage.c's statement `i` (0..STORE_USAGE_NSTMT-1), prepared on first use from `sql`
 * and kept until store_close; NULL after store_fail. */
sqlite3_stmt *store_usage_stmt(struct store *st, int i, const char *sql);

#endif
