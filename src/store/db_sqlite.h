/*
 * db_sqlite.h - what only the SQLite engine has (db_sqlite.c), for the store's SQLite-only
 * parts (store_sqlite.c: the WAL, its hooks and checkpoints; not a public API).
 */
#ifndef DOCKET_STORE_DB_SQLITE_H
#define DOCKET_STORE_DB_SQLITE_H

#include <sqlite3.h>

#include "store/db.h"

/* The SQLite connection under `db` (an engine of DB_SQLITE only). */
sqlite3 *db_sqlite_handle(struct db *db);

#endif
