/*
 * db_pg.c - the statement layer on PostgreSQL (db.h): not built yet.
 */
#include <stdio.h>

#include "store/db.h"

struct db *db_pg_open(const char *uri, bool readonly, char *err, size_t errlen)
{
    (void)uri;
    (void)readonly;
    snprintf(err, errlen, "PostgreSQL is not supported by this build");
    return NULL;
}
