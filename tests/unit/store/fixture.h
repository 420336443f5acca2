/* fixture.h - the store unit tests' fixture: a fresh database in a temporary directory
 * per test (setup), removed with its WAL files after it (teardown); reopen closes and
 * opens it again (what survives a restart). Include once per test program. */
#ifndef DOCKET_TESTS_STORE_FIXTURE_H
#define DOCKET_TESTS_STORE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "store/store.h"

struct fx {
    char dir[64];
    char path[128];
    struct store *st;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char err[256];
    if (!f)
        return -1;
    snprintf(f->dir, sizeof(f->dir), "/tmp/store-test.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof(f->path), "%s/docket.db", f->dir);
    f->st = store_open(f->path, err, sizeof(err));
    if (!f->st) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    char p[160];
    store_close(f->st);
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s%s", f->path, suffix[i]);
        unlink(p);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

#endif
